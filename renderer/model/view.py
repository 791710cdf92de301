"""One cluster's slice of the platform: what every layer and command of that cluster reads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar

from renderer.model.platform import Cluster, Endpoint, Namespace, Platform, Pool, Queue, Team

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Tenant:
    """A team as one cluster sees it: the team and its namespaces on that cluster."""

    team: Team
    namespaces: tuple[Namespace, ...]


@dataclass(frozen=True, slots=True)
class Served:
    """One endpoint with what it is served from: its team, namespace and (if declared) pool."""

    team: Team
    namespace: Namespace
    endpoint: Endpoint
    pool: Pool | None

    @property
    def name(self) -> str:
        return self.endpoint.name


def served(platform: Platform) -> Iterator[Served]:
    """Every endpoint of the platform, by team, namespace and declaration order."""
    for team_name in sorted(platform.teams):
        team = platform.teams[team_name]
        for ns in team.namespaces:
            for endpoint in ns.endpoints:
                yield Served(team, ns, endpoint, platform.pools.get(endpoint.pool))


@dataclass(frozen=True, slots=True)
class ClusterView:
    """Everything one cluster's manifests depend on, in name order (so output is deterministic)."""

    cluster: Cluster
    platform: Platform
    pools: tuple[Pool, ...]
    queues: tuple[Queue, ...]
    tenants: tuple[Tenant, ...]
    derived: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """What is computed from the view alone, once for every layer that asks (the cluster's
    ClusterQueues: `admission.cluster_queues`); the view is frozen, so it stays true."""

    @classmethod
    def of(cls, platform: Platform, cluster: Cluster) -> ClusterView:
        """The cluster's view of its slice of the platform (`cluster_slice`): a layer reading
        `view.platform` sees nothing the cluster does not depend on."""
        return cls.over(cluster_slice(platform, cluster.name), cluster)

    @classmethod
    def over(cls, platform: Platform, cluster: Cluster) -> ClusterView:
        """The cluster's pools, queues and tenants in `platform`, with `platform` behind them
        (whole: the tests compare a slice's view with it)."""
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

    def endpoints(self) -> tuple[Served, ...]:
        """The endpoints of this cluster's namespaces, by namespace then declaration order."""
        return tuple(
            Served(tenant.team, ns, endpoint, self.platform.pools.get(endpoint.pool))
            for tenant in self.tenants
            for ns in tenant.namespaces
            for endpoint in ns.endpoints
        )


def cluster_slice(platform: Platform, name: str) -> Platform:
    """The part of the platform that cluster `name` is rendered from: the cluster; its pools
    and queues; every team with a namespace, a queue or a quota there; the queues those teams
    submit to and the pools those queues and quotas name (on whatever cluster); the clusters
    all of these are on; the repository settings; and of the input files, only those that
    declare one of these (their documents, their changed lines).

    Every layer renders from this slice and nothing else, so a cluster's output is a function
    of `slice_files` alone: the render index (`renderer.commands.render`) re-renders a cluster
    only when one of those files changed. Taking more than a layer reads is safe (a cluster
    is re-rendered more often than it must); taking less would not be, and
    tests/test_render_index.py checks on the example and a generated platform that a cluster's
    objects are the same from its slice as from the whole platform."""
    pools = {p for p, pool in platform.pools.items() if pool.cluster == name}
    queues = {q for q, queue in platform.queues.items() if queue.cluster == name}
    teams = {
        t
        for t, team in platform.teams.items()
        if team.queue in queues
        or any(ns.cluster == name for ns in team.namespaces)
        or any(quota.pool in pools for quota in team.gpus)
    }
    for team in teams:
        queue = platform.teams[team].queue
        if queue in platform.queues:
            queues.add(queue)
        pools.update(q.pool for q in platform.teams[team].gpus if q.pool in platform.pools)
    for queue in queues:
        pools.update(p for p in platform.queues[queue].pools if p in platform.pools)
    clusters = {name}
    clusters.update(platform.pools[p].cluster for p in pools)
    clusters.update(platform.queues[q].cluster for q in queues)
    clusters.update(ns.cluster for t in teams for ns in platform.teams[t].namespaces)
    kept = Platform(
        clusters=_only(platform.clusters, clusters),
        pools=_only(platform.pools, pools),
        teams=_only(platform.teams, teams),
        queues=_only(platform.queues, queues),
        broken=platform.broken,
        repository=platform.repository,
    )
    files = set(slice_files(kept))
    return replace(
        kept,
        changed=MappingProxyType({f: v for f, v in platform.changed.items() if f in files}),
        documents=MappingProxyType({f: v for f, v in platform.documents.items() if f in files}),
    )


TEAM_FOLDER = "teams"
"""The input folder of team files (`inputs.schema`'s folder for kind Team)."""


def is_team_file(file: str) -> bool:
    """Whether the input file `file` (as `Origin.file` names it) is a team file."""
    return file.partition("/")[0] == TEAM_FOLDER


def team_slice(platform: Platform, files: frozenset[str]) -> Platform:
    """The platform with, of the team files, only `files` (their teams, their documents, their
    changed lines) and everything else: what a policy rule of scope `team` finds in those
    files is found from this slice (`renderer.policy.rule.Scope`)."""

    def kept(file: str) -> bool:
        return not is_team_file(file) or file in files

    return replace(
        platform,
        teams=MappingProxyType({n: t for n, t in platform.teams.items() if t.origin.file in files}),
        changed=MappingProxyType({f: v for f, v in platform.changed.items() if kept(f)}),
        documents=MappingProxyType({f: v for f, v in platform.documents.items() if kept(f)}),
    )


def slice_files(platform: Platform) -> list[str]:
    """The input files that declare what `platform` holds, sorted."""
    files = {
        item.origin.file
        for kind in (platform.clusters, platform.pools, platform.teams, platform.queues)
        for item in kind.values()
    }
    if platform.repository is not None:
        files.add(platform.repository.origin.file)
    return sorted(files)


def _only(items: Mapping[str, T], names: set[str]) -> Mapping[str, T]:
    """The named items, in the order the platform holds them."""
    return MappingProxyType({n: item for n, item in items.items() if n in names})
