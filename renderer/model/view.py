"""One cluster's slice of the platform: what every layer and command of that cluster reads."""

from __future__ import annotations

from dataclasses import dataclass

from renderer.model.platform import Cluster, Namespace, Platform, Pool, Queue, Team


@dataclass(frozen=True, slots=True)
class Tenant:
    """A team as one cluster sees it: the team and its namespaces on that cluster."""

    team: Team
    namespaces: tuple[Namespace, ...]


@dataclass(frozen=True, slots=True)
class ClusterView:
    """Everything one cluster's manifests depend on, in name order (so output is deterministic)."""

    cluster: Cluster
    platform: Platform
    pools: tuple[Pool, ...]
    queues: tuple[Queue, ...]
    tenants: tuple[Tenant, ...]

    @classmethod
    def of(cls, platform: Platform, cluster: Cluster) -> ClusterView:
        name = cluster.name
        tenants = []
        for team_name in sorted(platform.teams):
            team = platform.teams[team_name]
            namespaces = tuple(
                sorted((ns for ns in team.namespaces if ns.cluster == name), key=lambda n: n.name)
            )
            if namespaces:
                tenants.append(Tenant(team, namespaces))
        return cls(
            cluster=cluster,
            platform=platform,
            pools=tuple(
                platform.pools[p]
                for p in sorted(platform.pools)
                if platform.pools[p].cluster == name
            ),
            queues=tuple(
                platform.queues[q]
                for q in sorted(platform.queues)
                if platform.queues[q].cluster == name
            ),
            tenants=tuple(tenants),
        )

    def queue_of(self, team: Team) -> Queue | None:
        return self.platform.queues.get(team.queue)
