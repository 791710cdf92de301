"""How teams' GPU quotas become admission queues: the one mapping that the queue layer renders
(Kueue ClusterQueues, Volcano queues) and that `plan` and `fit` explain.

One ClusterQueue per team and namespace purpose (`<team>-<purpose>`), so the training/inference
separation is enforced by Kueue itself: a namespace's `default` LocalQueue points at the queue of
its purpose, and that queue only lists the flavors (pools) that serve the purpose. A team's quota
on a pool lives in the queue of the pool's primary purpose that the team has (training for
training pools, inference for inference pools, notebooks for notebook pools); queues of the
pool's other purposes list the pool with no nominal quota and borrow up to the team's maximum
there. CPU and memory are covered too, in proportion to the share of a node the GPUs represent,
because Kueue refuses workloads that request resources a ClusterQueue does not cover.
See docs/admission-model.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from renderer.model import catalog, quantity
from renderer.model.capacity import (
    PURPOSE_ORDER,
    Offer,
    maximum_holding,
    pool_offers,
    quota_offer,
    serves,
)
from renderer.model.platform import GpuQuota, Namespace, Pool, Queue, Team
from renderer.model.view import ClusterView

CPU = "cpu"
MEMORY = "memory"


@dataclass(frozen=True, slots=True)
class Amount:
    """Kueue's three numbers for one resource on one flavor; None means "no limit"."""

    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


@dataclass(frozen=True, slots=True)
class FlavorPlan:
    """One pool as a flavor of one ClusterQueue: its amounts per resource name.

    `quotas` are the team entries the GPU amounts come from; empty when the queue may only
    borrow on this pool (the team's quota lives in the queue of the pool's primary purpose).
    """

    pool: Pool
    resources: Mapping[str, Amount]
    quotas: tuple[GpuQuota, ...]

    @property
    def borrow_only(self) -> bool:
        return not self.quotas

    def maximum(self, resource: str) -> int:
        """The most of a GPU resource this flavor can ever give the queue: nominal plus the
        borrowing limit, or the pool's whole size when borrowing is unlimited (Kueue's None)."""
        amount = self.resources[resource]
        largest = max(
            (o.maximum for o in pool_offers(self.pool) if o.resource == resource), default=0
        )
        if amount.borrowing_limit is None:
            return max(largest, int(amount.nominal))
        return min(largest, int(amount.nominal + amount.borrowing_limit))


@dataclass(frozen=True, slots=True)
class ClusterQueuePlan:
    name: str
    team: Team
    purpose: str
    queue: Queue
    namespaces: tuple[Namespace, ...]
    flavors: tuple[FlavorPlan, ...]

    @property
    def gpu_resources(self) -> tuple[str, ...]:
        names = {r for f in self.flavors for r in f.resources if r not in (CPU, MEMORY)}
        return tuple(sorted(names))

    @property
    def covered_resources(self) -> tuple[str, ...]:
        """cpu and memory first (when any flavor has them), then the GPU resource names."""
        base = [r for r in (CPU, MEMORY) if any(r in f.resources for f in self.flavors)]
        return (*base, *self.gpu_resources)


def cluster_queue_name(team: str, purpose: str) -> str:
    return f"{team}-{purpose}"


def primary_purpose(pool: Pool, served: list[str]) -> str | None:
    """The purpose whose queue holds a team's quota on this pool, among the purposes of the
    team's namespaces that the pool serves (with mixing, possibly none of the pool's own)."""
    preferred = [p for p in PURPOSE_ORDER[pool.workload] if p in served]
    candidates = preferred or sorted(served)
    return candidates[0] if candidates else None


def node_share(pool: Pool, offer: Offer, count: Decimal) -> Decimal:
    """The fraction of one node that `count` units of `offer` represent (MIG by compute slices)."""
    accelerator = catalog.accelerator(pool.accelerator)
    if offer.profile is not None and accelerator is not None:
        used = sum(
            n * accelerator.mig_profiles[p].compute_slices
            for p, n in pool.mig_layout.items()
            if p in accelerator.mig_profiles
        )
        slices = accelerator.mig_profiles[offer.profile].compute_slices
        return count * slices / (used * pool.gpus_per_node) if used else Decimal(0)
    return count / offer.per_node if offer.per_node else Decimal(0)


def _floor(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(ROUND_FLOOR) * step


def _host_amounts(
    pool: Pool, shares: tuple[Decimal, Decimal | None, Decimal | None]
) -> dict[str, Amount]:
    """CPU and memory in proportion to node shares (nominal, borrowing, lending), rounded down
    to whole cores and GiB so a reviewer reads round numbers and the node is never overcommitted."""
    if pool.host_cpus is None or pool.host_memory is None:
        return {}
    cpus = Decimal(pool.host_cpus)
    memory = quantity.parse(pool.host_memory)
    gibibyte = Decimal(2**30)
    core = Decimal(1)

    def scaled(total: Decimal, share: Decimal | None, step: Decimal) -> Decimal | None:
        return None if share is None else _floor(total * share, step)

    nominal, borrowing, lending = shares
    return {
        CPU: Amount(
            scaled(cpus, nominal, core) or Decimal(0),
            scaled(cpus, borrowing, core),
            scaled(cpus, lending, core),
        ),
        MEMORY: Amount(
            scaled(memory, nominal, gibibyte) or Decimal(0),
            scaled(memory, borrowing, gibibyte),
            scaled(memory, lending, gibibyte),
        ),
    }


def _flavor(pool: Pool, entries: list[tuple[GpuQuota, Offer]], borrow_only: bool) -> FlavorPlan:
    resources: dict[str, Amount] = {}
    shares: list[Decimal] = [Decimal(0), Decimal(0), Decimal(0)]
    unlimited_borrowing = False
    any_lending = False
    for quota, offer in entries:
        if borrow_only:
            nominal = Decimal(0)
            borrowing: Decimal | None = Decimal(maximum_holding(offer, quota))
            lending: Decimal | None = None
        else:
            nominal = Decimal(quota.nominal)
            borrowing = None if quota.borrowing_limit is None else Decimal(quota.borrowing_limit)
            lending = None if quota.lending_limit is None else Decimal(quota.lending_limit)
        resources[offer.resource] = Amount(nominal, borrowing, lending)
        shares[0] += node_share(pool, offer, nominal)
        if borrowing is None:
            unlimited_borrowing = True
        else:
            shares[1] += node_share(pool, offer, borrowing)
        if lending is not None:
            any_lending = True
            shares[2] += node_share(pool, offer, lending)
    host = _host_amounts(
        pool,
        (shares[0], None if unlimited_borrowing else shares[1], shares[2] if any_lending else None),
    )
    resources.update(host)
    return FlavorPlan(pool, resources, () if borrow_only else tuple(q for q, _ in entries))


def cluster_queues(view: ClusterView) -> tuple[ClusterQueuePlan, ...]:
    """Every ClusterQueue of one cluster, by team then purpose (computed once per view: most
    layers ask)."""
    found = view.derived.get("cluster_queues")
    if found is None:
        found = view.derived["cluster_queues"] = _cluster_queues(view)
    plans: tuple[ClusterQueuePlan, ...] = found
    return plans


def _cluster_queues(view: ClusterView) -> tuple[ClusterQueuePlan, ...]:
    plans: list[ClusterQueuePlan] = []
    for tenant in view.tenants:
        team = tenant.team
        queue = view.queue_of(team)
        if queue is None or queue.cluster != view.cluster.name:
            continue
        by_purpose: dict[str, tuple[Namespace, ...]] = {}
        for ns in tenant.namespaces:
            by_purpose[ns.purpose] = (*by_purpose.get(ns.purpose, ()), ns)
        for purpose in sorted(by_purpose):
            namespaces = by_purpose[purpose]
            flavors = []
            for pool in view.pools:
                if pool.name not in queue.pools or not serves(pool, namespaces[0], queue):
                    continue
                served = [p for p, ns in by_purpose.items() if serves(pool, ns[0], queue)]
                entries = [
                    (q, offer)
                    for q in team.gpus
                    if q.pool == pool.name and (offer := quota_offer(pool, q)) is not None
                ]
                if not entries:
                    continue
                primary = primary_purpose(pool, served)
                flavors.append(_flavor(pool, entries, borrow_only=primary != purpose))
            plans.append(
                ClusterQueuePlan(
                    name=cluster_queue_name(team.name, purpose),
                    team=team,
                    purpose=purpose,
                    queue=queue,
                    namespaces=namespaces,
                    flavors=tuple(flavors),
                )
            )
    return tuple(plans)


def amount_text(resource: str, value: Decimal) -> str | int:
    """A quantity as Kueue and the API server print it: integers for counts, cpu and memory units."""
    if resource == CPU:
        return quantity.cpu(value)
    if resource == MEMORY:
        return quantity.memory(value)
    return int(value)


@dataclass(frozen=True, slots=True)
class Limits:
    """A ClusterQueue's quota of one resource on one flavor, as Kueue reads it."""

    nominal: Decimal
    borrowing: Decimal | None
    lending: Decimal | None

    @property
    def lendable(self) -> Decimal:
        """What the cohort may borrow from it: the lending limit, or all of nominal when unset."""
        return self.nominal if self.lending is None else self.lending

    @property
    def guaranteed(self) -> Decimal:
        """What Kueue never lends out: nominal minus the lending limit (nothing when unset)."""
        return Decimal(0) if self.lending is None else self.nominal - self.lending


def limits_of(plan: ClusterQueuePlan, pool: str, resource: str) -> Limits:
    """A queue's limits on one pool and resource. Where a flavor has no amount for a covered
    resource, the queue layer writes nominal 0 and borrowing limit 0: nothing of it, and
    nothing to borrow."""
    found = next((f for f in plan.flavors if f.pool.name == pool), None)
    amount = found.resources.get(resource) if found is not None else None
    if amount is None:
        return Limits(Decimal(0), Decimal(0), None)
    return Limits(amount.nominal, amount.borrowing_limit, amount.lending_limit)


class Cohort(tuple[ClusterQueuePlan, ...]):
    """The ClusterQueues of one cohort (one gpuplane queue), with what they lend of each pool
    and resource summed once. Every ClusterQueue's PotentialAvailable needs that sum; summing
    it again per ClusterQueue made the template, suite and plan steps grow with the square of
    the team count."""

    def lendable(self, pool: str, resource: str) -> Decimal:
        """What the cohort's ClusterQueues may lend of `resource` on `pool`, all together."""
        sums: dict[tuple[str, str], Decimal] = self.__dict__.setdefault("_lendable", {})
        key = (pool, resource)
        if key not in sums:
            sums[key] = sum((limits_of(p, pool, resource).lendable for p in self), Decimal(0))
        return sums[key]


def cohorts(plans: Sequence[ClusterQueuePlan]) -> dict[str, Cohort]:
    """Every cohort of a cluster by its queue's name, in one pass over the ClusterQueues."""
    grouped: dict[str, list[ClusterQueuePlan]] = {}
    for plan in plans:
        grouped.setdefault(plan.queue.name, []).append(plan)
    return {name: Cohort(members) for name, members in grouped.items()}


def cohort_of(plans: Sequence[ClusterQueuePlan], plan: ClusterQueuePlan) -> Cohort:
    """The ClusterQueues that share `plan`'s cohort (its own included). For one plan only: a
    step that asks for every plan's cohort builds `cohorts(plans)` once."""
    return Cohort(p for p in plans if p.queue.name == plan.queue.name)


def potential_available(
    plan: ClusterQueuePlan, cohort: Sequence[ClusterQueuePlan], pool: str, resource: str
) -> Decimal:
    """The most a ClusterQueue can ever be admitted on one flavor, as Kueue computes it
    (PotentialAvailable): what it never lends, plus everything the cohort may lend (its own
    lendable part included), capped by nominal + borrowing limit. Lower than nominal +
    borrowing limit whenever the other teams lend less than that. A `Cohort` sums what it
    lends once; any other sequence is summed on each call."""
    own = limits_of(plan, pool, resource)
    if isinstance(cohort, Cohort):
        lent = cohort.lendable(pool, resource)
    else:
        lent = sum((limits_of(p, pool, resource).lendable for p in cohort), Decimal(0))
    available = own.guaranteed + lent
    if own.borrowing is not None:
        available = min(own.nominal + own.borrowing, available)
    return available
