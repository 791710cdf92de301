"""Admission against the cluster's current usage (`fit --usage`): what a ClusterQueue can be
admitted now, what the cohort lends now, and whom Kueue's preemptor would evict, all decided on
Kueue's own objects.

Design: docs/fit.md#admission-against-current-usage-and-whom-kueue-preempts
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.answer.result import amount
from renderer.admission.apiserver.gate import RenderedCluster, kueue_configuration
from renderer.admission.scheduler import fairsharing, preemptor
from renderer.admission.scheduler.kueue_usage import (
    CandidateNow,
    FlavorResource,
    Holder,
    Pending,
    QueueState,
    ResourceNow,
    Snapshot,
    UsageReport,
)
from renderer.admission.scheduler.preemptor import (
    DEFAULT_STRATEGIES,
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    REASONS,
    Incoming,
    Strategy,
    Target,
)
from renderer.admission.scheduler.snapshot import (
    AdmittedWorkload,
    ClusterQueue,
    FlavorQuotas,
    KueueSnapshot,
    PodSetUsage,
    ResourceGroup,
    ResourceQuota,
    read_objects,
)
from renderer.model.queue_plans import ClusterQueuePlan
from renderer.model.quota_tree import Limits, QuotaNode

ZERO = Decimal(0)


# --- Kueue's preemptor on Kueue's objects ------------------------------------------------------


def get_targets(
    snapshot: KueueSnapshot,
    incoming: Incoming,
    *,
    fair_sharing: bool = False,
    strategies: Sequence[Strategy] = DEFAULT_STRATEGIES,
    now: datetime | None = None,
) -> list[Target]:
    """`Preemptor.GetTargets`: whom Kueue evicts so that `incoming` fits (classical preemption,
    or fair sharing's when Kueue's Configuration has `fairSharing`); [] when evicting the
    candidates it may take would not free enough."""
    if incoming.cluster_queue not in snapshot.cluster_queues:
        return []
    working = preemptor.Working(snapshot)
    clock = now or datetime.now(UTC)
    if fair_sharing:
        return fairsharing.fair_preemptions(
            working, incoming, strategies or DEFAULT_STRATEGIES, clock
        )
    return preemptor.classical(working, incoming, clock)


def candidates(
    snapshot: KueueSnapshot, incoming: Incoming, *, fair_sharing: bool, now: datetime
) -> list[tuple[AdmittedWorkload, str]]:
    """The Workloads Kueue's preemptor considers, in the order it tries them, with the reason it
    would give: `candidateIterator`'s (classical), or `findCandidates` ordered by
    `CandidatesOrdering` (fair sharing: the shares decide which are taken)."""
    if incoming.cluster_queue not in snapshot.cluster_queues:
        return []
    working = preemptor.Working(snapshot)
    if fair_sharing:
        found = fairsharing.find_candidates(working, incoming)
        found.sort(key=preemptor.ordering(incoming.cluster_queue, now))
        own = incoming.cluster_queue
        return [
            (w, IN_CLUSTER_QUEUE if w.cluster_queue == own else IN_COHORT_FAIR_SHARING)
            for w in found
        ]
    iterator = preemptor.CandidateIterator(working, incoming, now)
    return [(c.workload, REASONS[c.variant]) for c in iterator.candidates]


def fair_sharing_strategies(values: Mapping[str, Mapping[str, Any]]) -> tuple[Strategy, ...]:
    """The `fairSharing.preemptionStrategies` of the Kueue Configuration gpuplane renders into
    the chart's values (`managerConfig.controllerManagerConfigYaml`); Kueue's default pair when
    it sets none (`parseStrategies`)."""
    fair = kueue_configuration(values).get("fairSharing")
    listed = fair.get("preemptionStrategies") if isinstance(fair, dict) else None
    if not isinstance(listed, list) or not listed:
        return DEFAULT_STRATEGIES
    return tuple(s for s in listed if s in DEFAULT_STRATEGIES) or DEFAULT_STRATEGIES


def admitted(holder: Holder) -> AdmittedWorkload:
    """A Workload of the usage snapshot as the scheduler's cache holds it: what it holds per
    flavor (one assignment per flavor: the snapshot keeps totals, not pod sets)."""
    per_flavor: dict[str, dict[str, Decimal]] = {}
    for (flavor, resource), value in holder.usage.items():
        per_flavor.setdefault(flavor, {})[resource] = value
    pod_sets = tuple(
        PodSetUsage(
            flavor, 1, MappingProxyType(dict.fromkeys(used, flavor)), MappingProxyType(used)
        )
        for flavor, used in sorted(per_flavor.items())
    )
    return AdmittedWorkload(
        holder.name,
        holder.namespace,
        holder.cluster_queue,
        holder.priority,
        pod_sets,
        uid=holder.uid,
        reserved_at=holder.reserved_at,
    )


def foreign_queue(state: QueueState) -> ClusterQueue:
    """A ClusterQueue the usage snapshot shows and gpuplane does not render: its cohort and
    quotas (the snapshot keeps no preemption policy: Kueue's defaults, Never)."""
    flavors: dict[str, list[ResourceQuota]] = {}
    for (flavor, resource), limits in sorted(state.quotas.items()):
        flavors.setdefault(flavor, []).append(
            ResourceQuota(resource, limits.nominal, limits.borrowing, limits.lending)
        )
    groups = tuple(
        ResourceGroup(tuple(q.name for q in quotas), (FlavorQuotas(flavor, tuple(quotas)),))
        for flavor, quotas in flavors.items()
    )
    return ClusterQueue(state.name, state.cohort, groups)


def kueue_snapshot(
    rendered: RenderedCluster,
    usage: Snapshot,
    reservations: Mapping[str, Mapping[FlavorResource, Decimal]],
) -> KueueSnapshot:
    """The scheduler's snapshot of the cluster: gpuplane's rendered Kueue objects, the usage
    snapshot's ClusterQueues gpuplane does not render, its Workloads holding quota in any of
    them, and the reservations counted instead of Workloads."""
    objects = read_objects(rendered.objects)
    queues = dict(objects.cluster_queues)
    for name, state in sorted(usage.queues.items()):
        queues.setdefault(name, foreign_queue(state))
    return KueueSnapshot(
        flavors=objects.flavors,
        cluster_queues=queues,
        cohorts=objects.cohorts,
        priority_classes=objects.priority_classes,
        workloads=tuple(admitted(h) for h in usage.holders if h.cluster_queue in queues),
        problems=objects.problems,
        reservations=reservations,
    )


# --- fit's view of the job's cohort ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Considered:
    """A Workload Kueue's preemptor considers for the job, and the reason it would give."""

    workload: AdmittedWorkload
    reason: str


@dataclass(frozen=True, slots=True)
class Preemption:
    """Kueue's preemptor for one job: whom it may evict, whom it would, and whether enough."""

    needs: tuple[FlavorResource, ...]
    candidates: tuple[Considered, ...]
    targets: tuple[str, ...]
    """`namespace/name` of each Workload it would evict."""
    frees_enough: bool
    says: tuple[str, ...]
    reasons: Mapping[str, str] = field(default_factory=dict)
    """The reason of each target, where it differs from its candidate's."""


def lowest_subtree_that_fits(
    node: QuotaNode, fr: FlavorResource, value: Decimal
) -> tuple[bool, bool]:
    """`classical.FindHeightOfLowestSubtreeThatFits`, as two answers: whether `value` makes the
    ClusterQueue borrow, and whether some Cohort on its path still holds it within its own
    subtree quota (`mayReclaimInHierarchy`: Kueue may then reclaim there)."""
    if not node.borrowing_with(fr, value) or node.parent is None:
        return False, node.parent is not None
    remaining = value - node.local_available(fr)
    for tracking in node.path_to_root():
        if not tracking.borrowing_with(fr, remaining):
            return True, tracking.parent is not None
        remaining -= tracking.local_available(fr)
    return True, False


class CohortNow:
    """The job's cohort as the snapshot shows it: usage per ClusterQueue, Kueue's `Available`,
    and the preemptor's choice, on the cluster's Kueue objects."""

    def __init__(
        self,
        snapshot: Snapshot,
        plan: ClusterQueuePlan,
        rendered: RenderedCluster,
        *,
        fair_sharing: bool,
        elsewhere: Mapping[str, str],
    ) -> None:
        """`rendered`: the cluster's objects as gpuplane renders them; `elsewhere`: the
        ClusterQueues gpuplane renders on other clusters, by cluster."""
        self.snapshot = snapshot
        self.plan = plan
        self.fair_sharing = fair_sharing
        self.strategies = fair_sharing_strategies(rendered.values)
        self.now = datetime.now(UTC)
        rendered_queues = read_objects(rendered.of_kind("ClusterQueue")).cluster_queues
        self.notes: list[str] = []
        self.used: dict[str, dict[FlavorResource, Decimal]] = {}
        self.source: dict[str, str] = {}
        self.holders: dict[str, list[Holder]] = {}
        reservations = self._reservations(snapshot)
        self.kueue = kueue_snapshot(rendered, snapshot, reservations)
        self.tree = self.kueue.tree()
        node = self.tree.cluster_queue(plan.name)
        members = (
            {n.name for n in node.root().walk() if n.kind == "ClusterQueue"} if node else set()
        )
        self.members = sorted(members)
        for name in self.members:
            self.holders[name] = [h for h in snapshot.holders if h.cluster_queue == name]
            self.source.setdefault(name, "Workloads" if self.holders[name] else "none")
            if name not in rendered_queues:
                self.notes.append(
                    f"ClusterQueue {name} of cohort {plan.queue.name} is not rendered by "
                    "gpuplane: fit takes its quota from the snapshot"
                )
        self._note_ignored(snapshot, members, elsewhere)
        for name in self.members:  # what the report counts: the reservation, else the Workloads
            reserved = self.kueue.reservations.get(name)
            self.used[name] = (
                dict(reserved)
                if reserved is not None
                else _sum(h.usage for h in self.holders[name])
            )
        if not snapshot.queues and not snapshot.holders:
            self.notes.append(
                "the snapshot holds no ClusterQueue and no Workload holding quota: fit counts no "
                "usage (the visibility API lists pending workloads only)"
            )

    def _reservations(self, snapshot: Snapshot) -> dict[str, dict[FlavorResource, Decimal]]:
        """The ClusterQueues whose status.flavorsReservation fit counts, noting where it differs
        from the sum of the snapshot's Workloads."""
        found: dict[str, dict[FlavorResource, Decimal]] = {}
        for name, state in sorted(snapshot.queues.items()):
            if state.reservation is None:
                continue
            found[name] = dict(state.reservation)
            self.source[name] = "status.flavorsReservation"
            mine = [h for h in snapshot.holders if h.cluster_queue == name]
            summed = _sum(h.usage for h in mine)
            if mine and summed != {k: v for k, v in state.reservation.items() if v}:
                self.notes.append(
                    f"ClusterQueue {name}'s status.flavorsReservation differs from the sum "
                    "of its Workloads in the snapshot: fit counts the ClusterQueue's status"
                )
        return found

    def _note_ignored(
        self, snapshot: Snapshot, members: set[str], elsewhere: Mapping[str, str]
    ) -> None:
        ignored: dict[str, int] = {}
        for h in snapshot.holders:
            if h.cluster_queue in members:
                continue
            if h.cluster_queue in elsewhere:
                key = f"{h.cluster_queue} (cluster {elsewhere[h.cluster_queue]})"
            elif h.cluster_queue not in self.kueue.cluster_queues:
                key = f"{h.cluster_queue} (not rendered by gpuplane)"
            else:
                continue
            ignored[key] = ignored.get(key, 0) + 1
        for queue, count in sorted(ignored.items()):
            self.notes.append(
                f"{count} Workload(s) of ClusterQueue {queue} ignored: not in cohort "
                f"{self.plan.queue.name}"
            )

    # --- Kueue's numbers ----------------------------------------------------------------------

    def limits(self, member: str, fr: FlavorResource) -> Limits:
        node = self.tree.cluster_queue(member)
        found = node.quotas.get(fr) if node is not None else None
        return found if found is not None else Limits(ZERO, None, None)

    def usage(self, member: str, fr: FlavorResource) -> Decimal:
        return self.used.get(member, {}).get(fr, ZERO)

    def node(self, member: str | None = None) -> QuotaNode:
        found = self.tree.cluster_queue(member or self.plan.name)
        assert found is not None, "the job's ClusterQueue is rendered for its cluster"
        return found

    def team_node(self) -> QuotaNode:
        """The job's team Cohort: what the team holds and uses all together."""
        found = self.tree.cohort(self.plan.cohort.name)
        return found if found is not None else self.node()

    def team_from_cohort(self, fr: FlavorResource) -> Decimal:
        """What the Queue's Cohort can give the team now beyond the team's own unused local
        quota, within the team's borrowing limit."""
        team = self.team_node()
        return team.available(fr) - team.local_available(fr)

    def available(self, flavor: str, resource: str) -> Decimal:
        """`ClusterQueueSnapshot.Available` of the job's ClusterQueue."""
        return max(ZERO, self.node().available((flavor, resource)))

    def team_usage(self, flavor: str, resource: str) -> Decimal:
        """What all the team's ClusterQueues use of the resource now (its Cohort's usage)."""
        return self.team_node().usage.get((flavor, resource), ZERO)

    def team_nominal(self, fr: FlavorResource) -> Decimal:
        quota = self.team_node().quotas.get(fr)
        return quota.nominal if quota is not None else ZERO

    # --- the preemptor ------------------------------------------------------------------------

    def preempt(
        self, totals: Mapping[FlavorResource, Decimal], needs: set[FlavorResource], priority: int
    ) -> Preemption:
        """Whom Kueue would evict so that the job's `totals` fit, on the flavors and resources
        that need it (`needs`)."""
        ordered_needs = tuple(sorted(needs))
        gate = self._no_preemption(totals, ordered_needs)
        if gate is not None:
            return Preemption(ordered_needs, (), (), False, (gate,))
        incoming = Incoming(
            cluster_queue=self.plan.name,
            usage=dict(totals),
            needs=frozenset(needs),
            priority=priority,
            created=self.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        considered = tuple(
            Considered(w, reason)
            for w, reason in candidates(
                self.kueue, incoming, fair_sharing=self.fair_sharing, now=self.now
            )
        )
        targets = get_targets(
            self.kueue,
            incoming,
            fair_sharing=self.fair_sharing,
            strategies=self.strategies,
            now=self.now,
        )
        keys = tuple(t.workload.key for t in targets)
        reasons = {t.workload.key: t.reason for t in targets}
        says: list[str] = []
        if not considered:
            says.append(self._nobody(priority))
        elif targets:
            says.append(
                f"Kueue's preemptor would evict {', '.join(keys)}; the job is admitted once they "
                "stop"
            )
        elif self.fair_sharing:
            says.append(
                f"fair sharing evicts none of them: after admitting the job, ClusterQueue "
                f"{self.plan.name}'s side of the cohort would not hold a lower dominant resource "
                "share than theirs (rules LessThanOrEqualToFinalShare, LessThanInitialShare), "
                "or evicting them all would not free enough"
            )
        else:
            says.append(
                "evicting every candidate would not free enough: the job waits for quota held "
                "by workloads it may not preempt"
            )
        return Preemption(ordered_needs, considered, keys, bool(targets), tuple(says), reasons)

    def _no_preemption(
        self, totals: Mapping[FlavorResource, Decimal], needs: Sequence[FlavorResource]
    ) -> str | None:
        """Kueue's flavor assigner does not ask for preemption where the job would borrow beyond
        every subtree on its path and the ClusterQueue may not preempt while borrowing
        (`flavorassigner` `canPreemptWhileBorrowing`, `FindHeightOfLowestSubtreeThatFits`)."""
        cq = self.kueue.cluster_queues[self.plan.name]
        borrow = cq.preemption.borrow_within_cohort.policy
        reclaim = cq.preemption.reclaim_within_cohort
        can_while_borrowing = borrow != "Never" or (self.fair_sharing and reclaim != "Never")
        gate = [
            fr
            for fr in needs
            if not (
                self.limits(self.plan.name, fr).nominal >= totals[fr]
                or lowest_subtree_that_fits(self.node(), fr, totals[fr])[1]
                or can_while_borrowing
            )
        ]
        if not gate:
            return None
        return (
            f"Kueue does not try to preempt: the job would borrow {gate[0][1]} on "
            f"{gate[0][0]} beyond team {self.plan.team.name}'s quota and ClusterQueue "
            f"{self.plan.name} may not preempt while borrowing (no borrowWithinCohort); it "
            "waits for quota to free up"
        )

    def _nobody(self, priority: int) -> str:
        cq = self.kueue.cluster_queues[self.plan.name]
        within = cq.preemption.within_cluster_queue
        reclaim = cq.preemption.reclaim_within_cohort
        if within == "Never":
            return f"no candidate: ClusterQueue {cq.name} never preempts within itself"
        lower = any(h.priority < priority for h in self.holders.get(cq.name, []))
        own = (
            f"no Workload of {cq.name} below priority {priority} uses the contested quota"
            if not lower
            else f"no Workload of {cq.name} below priority {priority} holds the contested flavor"
        )
        cohort = (
            "and reclaimWithinCohort is Never"
            if reclaim == "Never"
            else "and no other ClusterQueue of the cohort borrows it"
        )
        return f"no candidate: {own}, {cohort}"

    # --- the report ---------------------------------------------------------------------------

    def report(
        self,
        requested: Mapping[FlavorResource, Decimal],
        preemption: Preemption | None,
        pending: Sequence[Pending],
    ) -> UsageReport:
        cq = self.plan.name
        resources = tuple(
            ResourceNow(
                flavor=fr[0],
                resource=fr[1],
                requested=amount(fr[1], v),
                nominal=amount(fr[1], self.team_nominal(fr)),
                used=amount(fr[1], self.team_usage(*fr)),
                cohort_available=amount(fr[1], max(ZERO, self.team_from_cohort(fr))),
                available=amount(fr[1], self.available(*fr)),
            )
            for fr, v in requested.items()
        )
        candidates: tuple[CandidateNow, ...] = ()
        says: tuple[str, ...] = ()
        frees: bool | None = None
        if preemption is not None:
            frees = preemption.frees_enough
            says = preemption.says
            candidates = tuple(
                CandidateNow(
                    c.workload.name,
                    c.workload.namespace,
                    c.workload.cluster_queue,
                    c.workload.priority,
                    {
                        f"{r} on {f}": amount(r, v)
                        for (f, r), v in sorted(c.workload.usage.items())
                        if (f, r) in preemption.needs
                    },
                    preemption.reasons.get(c.workload.key, c.reason),
                    c.workload.key in preemption.targets,
                )
                for c in preemption.candidates
            )
        notes = [*self.notes]
        if self.snapshot.skipped:
            shown = "; ".join(self.snapshot.skipped[:5])
            more = (
                f" and {len(self.snapshot.skipped) - 5} more"
                if len(self.snapshot.skipped) > 5
                else ""
            )
            notes.append(f"skipped: {shown}{more}")
        return UsageReport(
            source=self.snapshot.source,
            cluster_queue=cq,
            usage_from=self.source.get(cq, "none"),
            workloads=len(self.holders.get(cq, [])),
            resources=resources,
            candidates=candidates,
            frees_enough=frees,
            preemption=says,
            queued_ahead=tuple(pending),
            notes=tuple(notes),
        )


def _sum(usages: Iterable[Mapping[FlavorResource, Decimal]]) -> dict[FlavorResource, Decimal]:
    out: dict[FlavorResource, Decimal] = {}
    for usage in usages:
        for fr, v in usage.items():
            if v:
                out[fr] = out.get(fr, ZERO) + v
    return out


def pending_ahead(snapshot: Snapshot, plan: ClusterQueuePlan, priority: int) -> tuple[Pending, ...]:
    """The pending workloads of the job's ClusterQueue that Kueue's queue orders before it:
    higher or equal priority (equal ones are older), as the ClusterQueue's heap orders by
    priority, then creation time (`queue.Ordering`). The visibility API names no
    ClusterQueue: the namespace finds it (each team namespace has one LocalQueue)."""
    namespaces = {ns.name for ns in plan.namespaces}
    return tuple(
        sorted(
            (p for p in snapshot.pending if p.namespace in namespaces and p.priority >= priority),
            key=lambda p: (p.position, p.namespace, p.name),
        )
    )


__all__ = [
    "CohortNow",
    "Considered",
    "Preemption",
    "candidates",
    "get_targets",
    "kueue_snapshot",
    "pending_ahead",
]
