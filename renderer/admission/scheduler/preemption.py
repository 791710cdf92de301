"""Admission against the cluster's current usage (`fit --usage`): what a ClusterQueue can be
admitted now, what the cohort lends now, and whom Kueue's preemptor would evict.

The numbers are Kueue's, on the cohort tree gpuplane renders (the Queue's Cohort without quota
of its own, a Cohort per team holding the team's quota under it, the team's ClusterQueues under
that), computed by `renderer.model.quota_tree`, a port of pkg/cache/scheduler/resource_node.go:

- a node's `localQuota` is its subtree quota - lendingLimit (nothing when no lending limit is
  set): quota only its subtree may use; the rest is stored in its parent;
- a Cohort's quota is its own plus what its children store there, its usage the sum of
  their usage beyond their local quota (`accumulateFromChild`);
- `available` (what `ClusterQueueSnapshot.Available` returns, floored at 0) is the unused
  local quota plus what the parent has available, capped at each level by what the node
  stores in its parent, minus what it uses there, plus its borrowing limit;
- `PotentialAvailable` is the same with no usage at all: fit's empty-cluster maximum.

A pod set fits a flavor now when its request, with the pod sets before it, is within
`Available`; otherwise Kueue says `insufficient unused quota for <resource> in flavor <flavor>,
<n> more needed` (`FlavorAssigner.fitsResourceQuota`, pkg/scheduler/flavorassigner/
flavorassigner.go) and, with flavor fungibility's default `whenCanPreempt: TryNextFlavor`,
tries the next flavor before it preempts.

Preemption follows pkg/scheduler/preemption: the candidates are the Workloads of the job's own
ClusterQueue that its `withinClusterQueue` policy allows, and those its `reclaimWithinCohort`
policy allows (`common.SatisfiesPreemptionPolicy`) in the subtrees beside the job's path that
are over their quota on a contested flavor and resource (`collectCandidatesForHierarchicalReclaim`:
hierarchical reclaim while the job fits within the quota of the subtree reached so far, else by
priority; with fair sharing, `Preemptor.findCandidates`: every borrowing ClusterQueue), ordered by
`common.CandidatesOrdering` (other ClusterQueues first, then lower priority, then the most
recently admitted). Classical preemption (`classicalPreemptions`, `classical/
candidate_generator.go`, `hierarchical_preemption.go`) removes them in that order until the
job fits, then puts back those it did not need (`fillBackWorkloads`); with fair sharing
(`fairPreemptions`) a candidate of another ClusterQueue may be taken unconditionally only while
the job's ClusterQueue stays within its nominal quota (`FairSharingPreemptWithinNominal`, on by
default); beyond that Kueue compares dominant resource shares, which fit does not compute, and
says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from renderer.admission.answer.result import amount
from renderer.admission.scheduler import fairsharing, preemptor
from renderer.admission.scheduler.preemptor import DEFAULT_STRATEGIES, Incoming, Strategy, Target
from renderer.admission.scheduler.snapshot import KueueSnapshot
from renderer.admission.scheduler.usage import (
    CandidateNow,
    FlavorResource,
    Holder,
    Pending,
    ResourceNow,
    Snapshot,
    UsageReport,
)
from renderer.layers.queueing import kueue
from renderer.model.admission import ClusterQueuePlan, Cohort, limits_of
from renderer.model.quota_tree import Limits, QuotaNode

ZERO = Decimal(0)
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
"""Kueue's preemption reasons (apis/kueue/v1beta2/workload_types.go)."""

_HIERARCHICAL = "hierarchical"
_WITHOUT_BORROWING = "without-borrowing"
_WHILE_BORROWING = "while-borrowing"
_WITHIN = "within"


@dataclass(frozen=True, slots=True)
class _Candidate:
    holder: Holder
    variant: str
    reason: str
    lca: str | None = None
    """The Cohort whose subtree the candidate was found in (`candidateElem.lca`); None for
    the job's own ClusterQueue."""


@dataclass(frozen=True, slots=True)
class Preemption:
    """Kueue's preemptor for one job: whom it may evict, whom it would, and whether enough."""

    needs: tuple[FlavorResource, ...]
    candidates: tuple[_Candidate, ...]
    targets: tuple[str, ...]
    frees_enough: bool
    says: tuple[str, ...]


def satisfies(policy: str, preemptor: int, candidate: int) -> bool:
    """`common.SatisfiesPreemptionPolicy` for a job submitted now: it is newer than every
    admitted Workload, so `LowerOrNewerEqualPriority` allows only lower priorities."""
    if policy in ("LowerPriority", "LowerOrNewerEqualPriority"):
        return preemptor > candidate
    return policy == "Any"


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


def get_targets(
    snapshot: KueueSnapshot,
    incoming: Incoming,
    fair_sharing: bool = False,
    strategies: Sequence[Strategy] = DEFAULT_STRATEGIES,
    now: datetime | None = None,
) -> list[Target]:
    """`Preemptor.GetTargets` on Kueue's objects: whom Kueue evicts so that `incoming` fits
    (classical preemption, or fair sharing's when Kueue's Configuration enables it); [] when
    evicting the candidates it may take would not free enough."""
    if incoming.cluster_queue not in snapshot.cluster_queues:
        return []
    working = preemptor.Working(snapshot)
    clock = now or datetime.now(UTC)
    if fair_sharing:
        return fairsharing.fair_preemptions(
            working, incoming, strategies or DEFAULT_STRATEGIES, clock
        )
    return preemptor.classical(working, incoming, clock)


class CohortNow:
    """The job's cohort as the snapshot shows it: usage per ClusterQueue, Kueue's `Available`,
    and the preemptor's choice."""

    def __init__(
        self,
        snapshot: Snapshot,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        fair_sharing: bool,
        elsewhere: Mapping[str, str],
    ) -> None:
        """`elsewhere`: the ClusterQueues gpuplane renders on other clusters, by cluster."""
        self.snapshot = snapshot
        self.plan = plan
        self.fair_sharing = fair_sharing
        self.policy = kueue.preemption(plan.queue, fair_sharing)
        self.plans = {p.name: p for p in cohort}
        cohort_name = plan.queue.name
        cohort_names = {cohort_name, *(p.cohort.name for p in cohort)}
        self.foreign = {
            q.name: q
            for q in snapshot.queues.values()
            if q.cohort in cohort_names and q.name not in self.plans
        }
        members = [*self.plans, *sorted(self.foreign)]
        self.holders: dict[str, list[Holder]] = {m: [] for m in members}
        self.notes: list[str] = []
        ignored: dict[str, int] = {}
        for h in snapshot.holders:
            if h.cluster_queue in self.holders:
                self.holders[h.cluster_queue].append(h)
            elif h.cluster_queue in elsewhere:
                ignored[f"{h.cluster_queue} (cluster {elsewhere[h.cluster_queue]})"] = (
                    ignored.get(f"{h.cluster_queue} (cluster {elsewhere[h.cluster_queue]})", 0) + 1
                )
            elif h.cluster_queue not in snapshot.queues:
                ignored[f"{h.cluster_queue} (not rendered by gpuplane)"] = (
                    ignored.get(f"{h.cluster_queue} (not rendered by gpuplane)", 0) + 1
                )
        for queue, count in sorted(ignored.items()):
            self.notes.append(
                f"{count} Workload(s) of ClusterQueue {queue} ignored: not in cohort {cohort_name}"
            )
        for name in sorted(self.foreign):
            self.notes.append(
                f"ClusterQueue {name} of cohort {cohort_name} is not rendered by gpuplane: fit "
                "takes its quota from the snapshot"
            )
        self.used: dict[str, dict[FlavorResource, Decimal]] = {}
        self.source: dict[str, str] = {}
        for member in members:
            state = snapshot.queues.get(member)
            if state is not None and state.reservation is not None:
                self.used[member] = dict(state.reservation)
                self.source[member] = "status.flavorsReservation"
                summed = _sum(h.usage for h in self.holders[member])
                if self.holders[member] and summed != {
                    k: v for k, v in state.reservation.items() if v
                }:
                    self.notes.append(
                        f"ClusterQueue {member}'s status.flavorsReservation differs from the sum "
                        "of its Workloads in the snapshot: fit counts the ClusterQueue's status"
                    )
            else:
                self.used[member] = _sum(h.usage for h in self.holders[member])
                self.source[member] = "Workloads" if self.holders[member] else "none"
        foreign = {name: (q.cohort or cohort_name, q.quotas) for name, q in self.foreign.items()}
        self.tree = Cohort(cohort).build(foreign)
        for member, used in self.used.items():
            for fr, value in used.items():
                self.tree[member].add_usage(fr, value)
        if not snapshot.queues and not snapshot.holders:
            self.notes.append(
                "the snapshot holds no ClusterQueue and no Workload holding quota: fit counts no "
                "usage (the visibility API lists pending workloads only)"
            )

    # --- Kueue's numbers ----------------------------------------------------------------------

    def limits(self, member: str, fr: FlavorResource) -> Limits:
        plan = self.plans.get(member)
        if plan is not None:
            return limits_of(plan, fr[0], fr[1])
        found = self.foreign[member].quotas.get(fr)
        return found if found is not None else Limits(ZERO, None, None)

    def usage(self, member: str, fr: FlavorResource) -> Decimal:
        return self.used.get(member, {}).get(fr, ZERO)

    def node(self, member: str | None = None) -> QuotaNode:
        return self.tree[member or self.plan.name]

    def team_node(self) -> QuotaNode:
        """The job's team Cohort: what the team holds and uses all together."""
        return self.tree[self.plan.cohort.name]

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

    # --- the preemptor ------------------------------------------------------------------------

    def preempt(
        self, totals: Mapping[FlavorResource, Decimal], needs: set[FlavorResource], priority: int
    ) -> Preemption:
        """Whom Kueue would evict so that the job's `totals` fit, on the flavors and resources
        that need it (`needs`)."""
        ordered_needs = tuple(sorted(needs))
        cq = self.plan.name
        within = str(self.policy["withinClusterQueue"])
        reclaim = str(self.policy["reclaimWithinCohort"])
        borrow = self.policy.get("borrowWithinCohort", {}).get("policy")
        can_while_borrowing = (borrow not in (None, "Never")) or (
            self.fair_sharing and reclaim != "Never"
        )
        gate = [
            fr
            for fr in ordered_needs
            if not (
                self.limits(cq, fr).nominal >= totals[fr]
                or lowest_subtree_that_fits(self.node(), fr, totals[fr])[1]
                or can_while_borrowing
            )
        ]
        if gate:
            return Preemption(
                ordered_needs, (), (), False,
                (
                    f"Kueue does not try to preempt: the job would borrow {gate[0][1]} on "
                    f"{gate[0][0]} beyond team {self.plan.team.name}'s quota and ClusterQueue "
                    f"{cq} may not preempt while borrowing (no borrowWithinCohort); it waits for "
                    "quota to free up",
                ),
            )  # fmt: skip
        same: list[_Candidate] = []
        if within != "Never":
            same = [
                _Candidate(h, _WITHIN, IN_CLUSTER_QUEUE)
                for h in self.holders.get(cq, [])
                if satisfies(within, priority, h.priority) and _uses(h, needs)
            ]
        if self.fair_sharing:
            hierarchy: list[_Candidate] = []
            by_priority = self._fair_candidates(needs, priority, borrow)
        else:
            hierarchy, by_priority = self._reclaim_candidates(totals, needs, priority, borrow)
        others = [*hierarchy, *by_priority]
        says: list[str] = []
        if self.fair_sharing:
            targets, fits = self._fair(totals, needs, sorted(same + others, key=self._order), says)
        else:
            targets, fits = self._classical(totals, needs, same, hierarchy, by_priority, borrow)
        candidates = tuple(sorted(same + others, key=self._order))
        if not candidates:
            says.append(self._nobody(within, reclaim, priority))
        elif fits:
            names = ", ".join(targets)
            says.append(
                f"Kueue's preemptor would evict {names}; the job is admitted once they stop"
            )
        elif not says:
            says.append(
                "evicting every candidate would not free enough: the job waits for quota held "
                "by workloads it may not preempt"
            )
        return Preemption(ordered_needs, candidates, tuple(targets), fits, tuple(says))

    def _reclaim_candidates(
        self,
        totals: Mapping[FlavorResource, Decimal],
        needs: set[FlavorResource],
        priority: int,
        borrow: object,
    ) -> tuple[list[_Candidate], list[_Candidate]]:
        """`collectCandidatesForHierarchicalReclaim`: up the job's path, the Workloads of the
        subtrees beside it that are over their quota, as hierarchical reclaim while the job
        fits within the quota of the subtree so far, else by priority."""
        node = self.node()
        reclaim = str(self.policy["reclaimWithinCohort"])
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if node.parent is None or reclaim == "Never":
            return hierarchy, by_priority
        advantage, remaining = node.fits_in_quota(totals)
        previous: QuotaNode | None = None
        for subtree in node.path_to_root():
            found = hierarchy if advantage else by_priority
            self._collect(subtree, subtree, previous, (advantage, needs, priority, borrow), found)
            fits, remaining = subtree.fits_in_quota(remaining)
            advantage = advantage or fits
            previous = subtree
        return hierarchy, by_priority

    def _fair_candidates(
        self, needs: set[FlavorResource], priority: int, borrow: object
    ) -> list[_Candidate]:
        """`Preemptor.findCandidates` (fair sharing): the Workloads of every other ClusterQueue
        of the tree that borrows any contested resource (`cqIsBorrowing`)."""
        reclaim = str(self.policy["reclaimWithinCohort"])
        node = self.node()
        if node.parent is None or reclaim == "Never":
            return []
        root = node.root()
        found = []
        for other in root.walk():
            if other.kind != "ClusterQueue" or other is node:
                continue
            if not any(other.borrowing_with(fr, ZERO) for fr in needs):
                continue
            for h in self.holders.get(other.name, []):
                if satisfies(reclaim, priority, h.priority) and _uses(h, needs):
                    found.append(self._classify(h, False, borrow, priority, root.name))
        return found

    def _collect(
        self,
        current: QuotaNode,
        lca: QuotaNode,
        skip: QuotaNode | None,
        how: tuple[bool, set[FlavorResource], int, object],
        found: list[_Candidate],
    ) -> None:
        """`collectCandidatesInSubtree`: Cohorts within their quota are passed over whole."""
        advantage, needs, priority, borrow = how
        reclaim = str(self.policy["reclaimWithinCohort"])
        for child in current.cohorts():
            if child is skip or child.within_nominal(frozenset(needs)):
                continue
            self._collect(child, lca, skip, how, found)
        for child in current.cluster_queues():
            if child.name == self.plan.name or child.within_nominal(frozenset(needs)):
                continue
            for h in self.holders.get(child.name, []):
                if satisfies(reclaim, priority, h.priority) and _uses(h, needs):
                    found.append(self._classify(h, advantage, borrow, priority, lca.name))

    def _classify(
        self, h: Holder, advantage: bool, borrow: object, priority: int, lca: str
    ) -> _Candidate:
        """`classical.classifyPreemptionVariant` for a Workload of another ClusterQueue."""
        if self.fair_sharing:
            return _Candidate(h, _HIERARCHICAL, IN_COHORT_FAIR_SHARING, lca)
        if advantage:
            return _Candidate(h, _HIERARCHICAL, IN_COHORT_RECLAMATION, lca)
        if borrow in (None, "Never") or h.priority >= priority:
            return _Candidate(h, _WITHOUT_BORROWING, IN_COHORT_RECLAMATION, lca)
        return _Candidate(h, _WHILE_BORROWING, IN_COHORT_RECLAIM_WHILE_BORROWING, lca)

    def _order(self, c: _Candidate) -> tuple[bool, int, str, str]:
        """`common.CandidatesOrdering`: other ClusterQueues first, lower priority first, the
        most recently admitted first (a missing time counts as now), then by UID."""
        since = c.holder.reserved_at or "9999"
        inverted = "".join(chr(0x10FFFF - ord(ch)) for ch in since)
        return (c.holder.cluster_queue == self.plan.name, c.holder.priority, inverted, c.holder.uid)

    def _fits(self, totals: Mapping[FlavorResource, Decimal], allow_borrowing: bool) -> bool:
        """`preemption.workloadFits`."""
        for fr, v in totals.items():
            if (
                not allow_borrowing
                and self.usage(self.plan.name, fr) + v > self.limits(self.plan.name, fr).nominal
            ):
                return False
            if v > self.available(*fr):
                return False
        return True

    def _remove(self, h: Holder, sign: int = -1) -> None:
        used = self.used.setdefault(h.cluster_queue, {})
        node = self.tree.get(h.cluster_queue)
        for fr, v in h.usage.items():
            used[fr] = used.get(fr, ZERO) + sign * v
            if node is None:
                continue
            if sign < 0:
                node.remove_usage(fr, v)
            else:
                node.add_usage(fr, v)

    def _greedy(
        self,
        totals: Mapping[FlavorResource, Decimal],
        needs: set[FlavorResource],
        ordered: Sequence[_Candidate],
        allow: bool,
        valid: object,
    ) -> tuple[list[_Candidate], bool]:
        taken: list[_Candidate] = []
        fits = False
        for c in ordered:
            if callable(valid) and not valid(c):
                continue
            self._remove(c.holder)
            taken.append(c)
            if self._fits(totals, allow):
                fits = True
                break
        if fits:  # fillBackWorkloads: put back, newest choice last, what is not needed
            for c in list(reversed(taken[:-1])):
                self._remove(c.holder, +1)
                if self._fits(totals, allow):
                    taken.remove(c)
                else:
                    self._remove(c.holder)
        for c in taken:
            self._remove(c.holder, +1)
        return taken, fits

    def _classical(
        self,
        totals: Mapping[FlavorResource, Decimal],
        needs: set[FlavorResource],
        same: list[_Candidate],
        hierarchy: list[_Candidate],
        by_priority: list[_Candidate],
        borrow: object,
    ) -> tuple[list[str], bool]:
        """`Preemptor.classicalPreemptions`."""
        ordered = [
            *sorted(hierarchy, key=self._order),
            *sorted(by_priority, key=self._order),
            *sorted(same, key=self._order),
        ]
        forbidden = borrow in (None, "Never")
        under_nominal = all(
            self.limits(self.plan.name, fr).nominal > self.usage(self.plan.name, fr) for fr in needs
        )
        if not (hierarchy or by_priority) or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for allow in attempts:

            def valid(c: _Candidate, allow: bool = allow) -> bool:
                return self._valid(c, allow, needs)

            taken, fits = self._greedy(totals, needs, ordered, allow, valid)
            if fits:
                return [c.holder.key for c in taken], True
        return [], False

    def _valid(self, c: _Candidate, allow: bool, needs: set[FlavorResource]) -> bool:
        """`candidateIterator.candidateIsValid`: a candidate of another ClusterQueue stays one
        while its ClusterQueue, and every Cohort between it and where it was found, is over
        its quota."""
        if c.holder.cluster_queue == self.plan.name:
            return True
        if allow and c.variant == _WITHOUT_BORROWING:
            return False
        node = self.tree.get(c.holder.cluster_queue)
        if node is None or node.within_nominal(frozenset(needs)):
            return False
        for above in node.path_to_root():
            if above.name == c.lca:
                break
            if above.within_nominal(frozenset(needs)):
                return False
        return True

    def _fair(
        self,
        totals: Mapping[FlavorResource, Decimal],
        needs: set[FlavorResource],
        ordered: Sequence[_Candidate],
        says: list[str],
    ) -> tuple[list[str], bool]:
        """`Preemptor.fairPreemptions`, as far as it does not depend on shares."""
        cq = self.plan.name
        within_nominal = all(
            self.usage(cq, fr) + totals.get(fr, ZERO) <= self.limits(cq, fr).nominal for fr in needs
        )
        shared = [c for c in ordered if c.holder.cluster_queue != cq]

        def valid(c: _Candidate) -> bool:
            return c.holder.cluster_queue == cq or within_nominal

        taken, fits = self._greedy(totals, needs, ordered, True, valid)
        if shared and not within_nominal:
            says.append(
                f"ClusterQueue {cq} would borrow (its quota is team {self.plan.team.name}'s, in "
                f"Cohort {self.plan.cohort.name}): whether Kueue may evict workloads of other "
                f"ClusterQueues of cohort {self.plan.queue.name} is decided by fair sharing's "
                "dominant resource shares (LessThanOrEqualToFinalShare, LessThanInitialShare), "
                "which fit does not compute; it counts only its own ClusterQueue's"
            )
        return ([c.holder.key for c in taken], fits)

    def _nobody(self, within: str, reclaim: str, priority: int) -> str:
        cq = self.plan.name
        lower = any(h.priority < priority for h in self.holders.get(cq, []))
        if within == "Never":
            return f"no candidate: ClusterQueue {cq} never preempts within itself"
        own = (
            f"no Workload of {cq} below priority {priority} uses the contested quota"
            if not lower
            else f"no Workload of {cq} below priority {priority} holds the contested flavor"
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
                nominal=amount(fr[1], limits_of(self.plan.cohort, *fr).nominal),
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
                    c.holder.name,
                    c.holder.namespace,
                    c.holder.cluster_queue,
                    c.holder.priority,
                    {
                        f"{r} on {f}": amount(r, v)
                        for (f, r), v in sorted(c.holder.usage.items())
                        if (f, r) in preemption.needs
                    },
                    c.reason,
                    c.holder.key in preemption.targets,
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


def _uses(h: Holder, needs: set[FlavorResource]) -> bool:
    """`classical.WorkloadUsesResources`."""
    return any(fr in needs for fr in h.usage)


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


__all__ = ["CohortNow", "Preemption", "pending_ahead", "satisfies"]
