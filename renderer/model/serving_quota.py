"""What an endpoint holds of its team's GPU quota at its maximum: read by the policy
(`endpoint-quota`), `gpuplane plan` and `gpuplane fit`. docs/serving-autoscaling.md.

An endpoint's Deployment runs at most `replicas.max` replicas (its autoscaler's ceiling), and a
rolling update adds one more while it replaces them (maxSurge 1, maxUnavailable 0: the
rollouts' strategy), each replica holding `gpus` units of the pool (slices on a time-shared
pool, instances of the endpoint's profile on a MIG pool). Kueue admits each replica's pod as
a Workload of its own (the deployment integration hands the pods to the pod integration), so
the endpoint at its maximum is `(max + 1) x gpus` units of the team's ClusterQueue on that
pool, held all at once.

Only the nominal quota counts: what a team borrows from its cohort is the lender's, and Kueue
reclaims it (preempting the borrower's pods) as soon as the lender needs it back. A replica
preempted there would be recreated and wait, so an endpoint sized on borrowed quota loses
replicas exactly when its cohort is busy, which is when its traffic tends to peak.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from renderer.model.capacity import Offer, maximum_holding, usable_quotas
from renderer.model.platform import Endpoint, GpuQuota, Namespace, Platform, Pool, Team
from renderer.model.view import served

SURGE = 1
"""The replicas a rolling update adds above the current count (the Deployment's maxSurge)."""


@dataclass(frozen=True, slots=True)
class EndpointQuota:
    """One endpoint with the quota entry it draws on and what it holds at its maximum."""

    team: Team
    namespace: Namespace
    endpoint: Endpoint
    pool: Pool
    quota: GpuQuota
    offer: Offer

    @property
    def at_max(self) -> int:
        """Units held at `replicas.max` during a rolling update: (max + surge) x gpus."""
        return (self.endpoint.max_replicas + SURGE) * self.endpoint.gpus

    @property
    def key(self) -> tuple[str, str, str]:
        """What endpoints sum over: the team, the pool and the resource (a MIG profile's own)."""
        return (self.team.name, self.pool.name, self.offer.resource)


def endpoint_quota(
    platform: Platform, team: Team, namespace: Namespace, endpoint: Endpoint
) -> EndpointQuota | None:
    """The team's quota entry the endpoint's replicas count against: on its pool (on a MIG
    pool, the entry of its profile), one the namespace may use; None where there is none."""
    for pool, quota, offer in usable_quotas(platform, team, namespace):
        if pool.name != endpoint.pool:
            continue
        if pool.sharing == "mig" and quota.profile != endpoint.profile:
            continue
        return EndpointQuota(team, namespace, endpoint, pool, quota, offer)
    return None


def endpoint_quotas(platform: Platform) -> Iterator[EndpointQuota]:
    """Every endpoint that has a quota entry to draw on, by team, namespace and declaration."""
    for s in served(platform):
        found = endpoint_quota(platform, s.team, s.namespace, s.endpoint)
        if found is not None:
            yield found


def namespace_cap(platform: Platform, team: Team, namespace: Namespace, resource: str) -> int:
    """The namespace ResourceQuota's cap on `resource`: what each usable quota entry of that
    resource can ever hold, summed (the tenancy layer's `requests.<resource>`)."""
    return sum(
        maximum_holding(offer, quota)
        for _, quota, offer in usable_quotas(platform, team, namespace)
        if offer.resource == resource
    )


def largest_max(endpoint: Endpoint, room: int) -> int:
    """The largest `replicas.max` whose (max + surge) x gpus fits in `room` units."""
    return room // endpoint.gpus - SURGE
