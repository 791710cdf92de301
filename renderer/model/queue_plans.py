"""How teams' GPU quotas become admission queues: the one mapping that the queue layer renders
(Kueue Cohorts and ClusterQueues, Volcano queues) and that `plan` and `fit` explain.

A Cohort per team (`<team>`, its parent the Cohort of the team's Queue) holds the team's whole
quota on each pool: nominal, borrowing and lending limits, so they hold across all the team's
ClusterQueues in what Kueue enforces. Beneath it, one ClusterQueue per namespace purpose
(`<team>-<purpose>`) with no quota of its own, so the training/inference separation is enforced
by Kueue itself: a namespace's `default` LocalQueue points at the queue of its purpose, and that
queue only lists the flavors (pools) that serve the purpose; what it may use there is the team's.
CPU and memory are covered too, in proportion to the share of a node the GPUs represent, because
Kueue refuses workloads that request resources a ClusterQueue does not cover.
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
    quota_offer,
    serves,
)
from renderer.model.choices import Purpose
from renderer.model.platform import GpuQuota, Namespace, Pool, Queue, Team
from renderer.model.quota_tree import Limits, QuotaNode, settle
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
    """One pool as a flavor of one team Cohort or ClusterQueue: its amounts per resource name.

    `quotas` are the team entries the GPU amounts come from. A ClusterQueue's amounts are all
    nominal 0 with no limit (it uses the team Cohort's quota); its `quotas` are the team's
    entries where the queue is of the pool's primary purpose, and empty where it is not
    (`borrow_only`: Kueue tries such flavors after the others).
    """

    pool: Pool
    resources: Mapping[str, Amount]
    quotas: tuple[GpuQuota, ...]

    @property
    def borrow_only(self) -> bool:
        return not self.quotas


@dataclass(frozen=True, slots=True)
class TeamCohortPlan:
    """The team's Cohort in its Queue's Cohort: the team's quota on every pool its purposes
    reach, which every ClusterQueue of the team draws on."""

    name: str
    team: Team
    queue: Queue
    flavors: tuple[FlavorPlan, ...]


@dataclass(frozen=True, slots=True)
class ClusterQueuePlan:
    name: str
    team: Team
    purpose: Purpose
    queue: Queue
    namespaces: tuple[Namespace, ...]
    flavors: tuple[FlavorPlan, ...]
    cohort: TeamCohortPlan

    @property
    def gpu_resources(self) -> tuple[str, ...]:
        names = {r for f in self.flavors for r in f.resources if r not in (CPU, MEMORY)}
        return tuple(sorted(names))

    @property
    def covered_resources(self) -> tuple[str, ...]:
        """cpu and memory first (when any flavor has them), then the GPU resource names."""
        return covered_of(self.flavors)


def cluster_queue_name(team: str, purpose: str) -> str:
    return f"{team}-{purpose}"


def team_cohort_name(team: str) -> str:
    """The team's Cohort: its name alone (Cohorts are cluster-scoped, as are the Queue Cohorts
    it sits under; rule `cohort-name-taken` keeps a Queue from taking a team's name)."""
    return team


def primary_purpose(pool: Pool, served: list[Purpose]) -> Purpose | None:
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


def _flavor(pool: Pool, entries: list[tuple[GpuQuota, Offer]]) -> FlavorPlan:
    """The team's amounts on one pool: its entries' three numbers, and CPU and memory in
    proportion to the node share they stand for."""
    resources: dict[str, Amount] = {}
    shares: list[Decimal] = [Decimal(0), Decimal(0), Decimal(0)]
    unlimited_borrowing = False
    any_lending = False
    for quota, offer in entries:
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
    return FlavorPlan(pool, resources, tuple(q for q, _ in entries))


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
        by_purpose: dict[Purpose, tuple[Namespace, ...]] = {}
        for ns in tenant.namespaces:
            by_purpose[ns.purpose] = (*by_purpose.get(ns.purpose, ()), ns)
        team_flavors: list[FlavorPlan] = []
        primaries: dict[str, Purpose | None] = {}
        for pool in view.pools:
            served = [p for p, ns in by_purpose.items() if serves(pool, ns[0], queue)]
            entries = [
                (q, offer)
                for q in team.gpus
                if q.pool == pool.name and (offer := quota_offer(pool, q)) is not None
            ]
            if pool.name not in queue.pools or not served or not entries:
                continue
            team_flavors.append(_flavor(pool, entries))
            primaries[pool.name] = primary_purpose(pool, served)
        cohort = TeamCohortPlan(team_cohort_name(team.name), team, queue, tuple(team_flavors))
        for purpose in sorted(by_purpose):
            namespaces = by_purpose[purpose]
            flavors = tuple(
                _drawing(held, primary=primaries[held.pool.name] == purpose)
                for held in team_flavors
                if serves(held.pool, namespaces[0], queue)
            )
            plans.append(
                ClusterQueuePlan(
                    name=cluster_queue_name(team.name, purpose),
                    team=team,
                    purpose=purpose,
                    queue=queue,
                    namespaces=namespaces,
                    flavors=flavors,
                    cohort=cohort,
                )
            )
    return tuple(plans)


def _drawing(held: FlavorPlan, *, primary: bool) -> FlavorPlan:
    """A ClusterQueue's flavor: every resource the team Cohort holds on the pool, with no
    quota of its own and no limit, so that it may use all of the team's and no more."""
    none = Amount(Decimal(0))
    return FlavorPlan(
        held.pool, dict.fromkeys(held.resources, none), held.quotas if primary else ()
    )


def team_cohorts(plans: Sequence[ClusterQueuePlan]) -> tuple[TeamCohortPlan, ...]:
    """The team Cohorts of these ClusterQueues, each once, in the plans' order."""
    seen: dict[str, TeamCohortPlan] = {}
    for plan in plans:
        seen.setdefault(plan.cohort.name, plan.cohort)
    return tuple(seen.values())


def amount_text(resource: str, value: Decimal) -> str | int:
    """A quantity as Kueue and the API server print it: integers for counts, cpu and memory units."""
    if resource == CPU:
        return quantity.cpu(value)
    if resource == MEMORY:
        return quantity.memory(value)
    return int(value)


def limits_of(plan: ClusterQueuePlan | TeamCohortPlan, pool: str, resource: str) -> Limits:
    """A queue's (or team Cohort's) limits on one pool and resource. Where a flavor has no
    amount for a covered resource, the queue layer writes nominal 0 and borrowing limit 0:
    nothing of it, and nothing to borrow."""
    found = next((f for f in plan.flavors if f.pool.name == pool), None)
    amount = found.resources.get(resource) if found is not None else None
    if amount is None:
        return Limits(Decimal(0), Decimal(0), None)
    return Limits(amount.nominal, amount.borrowing_limit, amount.lending_limit)


def _quotas(plan: ClusterQueuePlan | TeamCohortPlan, covered: Sequence[str]) -> dict[Fr, Limits]:
    """A node's quotas as the queue layer renders them: every covered resource of every flavor."""
    return {
        (flavor.pool.name, resource): limits_of(plan, flavor.pool.name, resource)
        for flavor in plan.flavors
        for resource in covered
    }


def covered_of(flavors: Sequence[FlavorPlan]) -> tuple[str, ...]:
    """cpu and memory first (when any flavor has them), then the GPU resource names."""
    gpus = sorted({r for f in flavors for r in f.resources if r not in (CPU, MEMORY)})
    base = [r for r in (CPU, MEMORY) if any(r in f.resources for f in flavors)]
    return (*base, *gpus)


Fr = tuple[str, str]


class Cohort(tuple[ClusterQueuePlan, ...]):
    """The ClusterQueues of one cohort (one gpuplane queue), and Kueue's cohort tree of them:
    the Queue's Cohort at the root, a Cohort per team beneath it, the team's ClusterQueues
    beneath that (`renderer.model.quota_tree`). Built once per cohort: every ClusterQueue's
    PotentialAvailable reads it."""

    def tree(self) -> dict[str, QuotaNode]:
        """The tree's nodes by name, settled, with no usage: the root under its Queue's name."""
        found: dict[str, QuotaNode] | None = self.__dict__.get("_tree")
        if found is None:
            found = self.__dict__["_tree"] = self.build()
        return found

    def build(
        self, foreign: Mapping[str, tuple[str, Mapping[Fr, Limits]]] = {}
    ) -> dict[str, QuotaNode]:
        """A fresh tree (usage can be added to it). `foreign`: ClusterQueues gpuplane does not
        render, by name: the Cohort they name and their quotas; one naming a Cohort not in the
        tree hangs under the root."""
        if not self:
            return {}
        queue = self[0].queue.name
        root = QuotaNode(queue, "Cohort", {})
        nodes = {queue: root}
        for team in team_cohorts(self):
            covered = covered_of(team.flavors)
            nodes[team.name] = root.adopt(QuotaNode(team.name, "Cohort", _quotas(team, covered)))
        for plan in self:
            node = QuotaNode(plan.name, "ClusterQueue", _quotas(plan, plan.covered_resources))
            nodes[plan.name] = nodes[plan.cohort.name].adopt(node)
        for name, (parent, quotas) in sorted(foreign.items()):
            nodes[name] = nodes.get(parent, root).adopt(QuotaNode(name, "ClusterQueue", quotas))
        settle(root)
        return nodes

    def lendable(self, pool: str, resource: str) -> Decimal:
        """What the teams of the cohort lend to it of `resource` on `pool`, all together: the
        root's quota."""
        root = self.tree().get(self[0].queue.name) if self else None
        return root.subtree.get((pool, resource), Decimal(0)) if root is not None else Decimal(0)

    def lenders(
        self, plan: ClusterQueuePlan, pool: str, resource: str
    ) -> list[tuple[str, Decimal]]:
        """The other teams' Cohorts that lend `resource` on `pool` to the cohort, and how much."""
        nodes = self.tree()
        found = []
        for team in team_cohorts(self):
            if team.name == plan.cohort.name:
                continue
            node = nodes[team.name]
            fr = (pool, resource)
            lent = node.subtree.get(fr, Decimal(0)) - node.local_quota(fr)
            if lent > 0:
                found.append((team.name, lent))
        return found


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
    (`potentialAvailable` through the cohort tree): the team's quota there, plus what the
    other teams lend, capped by the team's borrowing limit. A `Cohort` builds its tree once;
    any other sequence is built again on each call."""
    tree = (cohort if isinstance(cohort, Cohort) else Cohort(cohort)).tree()
    node = tree.get(plan.name)
    if node is None:
        return Decimal(0)
    return node.potential_available((pool, resource))
