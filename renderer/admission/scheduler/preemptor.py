"""Kueue's preemptor on Kueue's own objects: `Preemptor.GetTargets` (pkg/scheduler/preemption/
preemption.go, Kueue v0.19.2) run on a `KueueSnapshot` (renderer.admission.scheduler.snapshot),
its quota tree and its admitted Workloads.

- Candidates (`classical.NewCandidateIterator`, classical/candidate_generator.go and
  hierarchical_preemption.go): the Workloads of the preemptor's ClusterQueue its
  `withinClusterQueue` policy allows; then, up the preemptor's path, the Workloads of the
  ClusterQueues beside it that are over their quota on a contested flavor and resource, which
  its `reclaimWithinCohort` allows (`collectCandidatesForHierarchicalReclaim`): with a
  hierarchical advantage while the job fits within the quota of the subtree reached so far,
  else by priority, where `borrowWithinCohort` and its `maxPriorityThreshold` decide whether the
  preemptor may still borrow (`classifyPreemptionVariant`). Each list is ordered by
  `common.CandidatesOrdering` (Workloads already evicted first, other ClusterQueues first, lower
  priority first, the most recently admitted first, then by UID); the evicted of every list
  come before the rest (`splitEvicted`).
- Classical preemption (`classicalPreemptions`): one or two passes (with and without
  borrowing), removing candidates that are still valid (`candidateIsValid`) until the job fits
  (`workloadFits`), then putting back, newest choice last, those not needed
  (`fillBackWorkloads`).
- Fair sharing (`fairPreemptions`): renderer.admission.scheduler.fairsharing.

A Workload's priority is its `spec.priority`; Kueue's priority-boost annotation
(`priority.EffectivePriority`) and Admission Fair Sharing's LocalQueue usage are not modelled.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

from renderer.admission.scheduler.snapshot import (
    AdmittedWorkload,
    ClusterQueue,
    KueueSnapshot,
    QuotaTree,
)
from renderer.model.quota_tree import FlavorResource, QuotaNode

ZERO = Decimal(0)
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
"""Kueue's preemption reasons (apis/kueue/v1beta2/workload_types.go)."""

Variant = Literal["within", "hierarchical", "without-borrowing", "while-borrowing"]
REASONS: Mapping[Variant, str] = {
    "within": IN_CLUSTER_QUEUE,
    "hierarchical": IN_COHORT_RECLAMATION,
    "without-borrowing": IN_COHORT_RECLAMATION,
    "while-borrowing": IN_COHORT_RECLAIM_WHILE_BORROWING,
}
"""`preemptionVariant.PreemptionReason`."""

Strategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
DEFAULT_STRATEGIES: tuple[Strategy, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
"""`parseStrategies` with no `preemptionStrategies` configured."""

ZERO_TIME = datetime.min.replace(tzinfo=UTC)


def parse_time(text: str, default: datetime = ZERO_TIME) -> datetime:
    """An RFC 3339 time; `default` when empty or unreadable."""
    if not text:
        return default
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return default


@dataclass(frozen=True, slots=True)
class Incoming:
    """The workload to admit and its flavor assignment, as the preemptor sees them: its
    ClusterQueue, priority and creation time, what it asks per (flavor, resource)
    (`Assignment.TotalRequestsFor`) and which of those need preemption
    (`flavorResourcesNeedPreemption`: the resources whose flavor's mode is Preempt)."""

    cluster_queue: str
    usage: Mapping[FlavorResource, Decimal]
    needs: frozenset[FlavorResource]
    priority: int = 0
    created: str = ""
    name: str = ""
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class Target:
    """A Workload Kueue would evict, and why."""

    workload: AdmittedWorkload
    reason: str


@dataclass(frozen=True, slots=True)
class Candidate:
    workload: AdmittedWorkload
    variant: Variant
    lca: QuotaNode | None = None
    """The Cohort whose subtree the candidate was found in; None in the preemptor's own queue."""


def satisfies(policy: str, incoming: Incoming, candidate: AdmittedWorkload) -> bool:
    """`common.SatisfiesPreemptionPolicy` (SchedulerTimestampPreemptionBuffer off, its default):
    LowerOrNewerEqualPriority also allows an equal priority created after the preemptor."""
    lower = incoming.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        newer = incoming.priority == candidate.priority and parse_time(
            incoming.created
        ) < parse_time(candidate.created)
        return lower or newer
    return policy == "Any"


def uses(workload: AdmittedWorkload, needs: Iterable[FlavorResource]) -> bool:
    """`classical.WorkloadUsesResources`: a pod set has one of `needs`' resources on its
    flavor."""
    for ps in workload.pod_sets:
        flavors = ps.flavors
        for flavor, resource in needs:
            if flavors.get(resource) == flavor:
                return True
    return False


def ordering(cluster_queue: str, now: datetime) -> functools.partial[tuple[object, ...]]:
    """`common.CandidatesOrdering` as a sort key."""
    return functools.partial(_order_key, cluster_queue, now)


def _order_key(cluster_queue: str, now: datetime, w: AdmittedWorkload) -> tuple[object, ...]:
    reserved = parse_time(w.reserved_at, now)
    return (
        not w.evicted,
        w.cluster_queue == cluster_queue,
        w.priority,
        -reserved.timestamp(),
        w.uid,
    )


@dataclass
class Working:
    """The preemptor's working copy: the tree with usage, its ClusterQueues, their Workloads."""

    snapshot: KueueSnapshot
    tree: QuotaTree = field(init=False)
    static: dict[str, Any] = field(init=False)
    """Answers that depend on the tree's quotas only (fair weights, what a Cohort can lend),
    kept while the usage changes."""

    def __post_init__(self) -> None:
        self.tree = self.snapshot.tree()
        self.static = {}

    def node(self, cluster_queue: str) -> QuotaNode | None:
        return self.tree.cluster_queue(cluster_queue)

    def queue(self, name: str) -> ClusterQueue:
        return self.snapshot.cluster_queues[name]

    def workloads(self, cluster_queue: str) -> list[AdmittedWorkload]:
        return self.snapshot.workloads_of(cluster_queue)

    def remove(self, workload: AdmittedWorkload) -> None:
        node = self.node(workload.cluster_queue)
        if node is not None:
            for fr, value in workload.usage.items():
                node.remove_usage(fr, value)

    def add(self, workload: AdmittedWorkload) -> None:
        node = self.node(workload.cluster_queue)
        if node is not None:
            for fr, value in workload.usage.items():
                node.add_usage(fr, value)


def available(node: QuotaNode, fr: FlavorResource) -> Decimal:
    """`ClusterQueueSnapshot.Available`: floored at 0."""
    return max(ZERO, node.available(fr))


def nominal(node: QuotaNode, fr: FlavorResource) -> Decimal:
    quota = node.quotas.get(fr)
    return quota.nominal if quota is not None else ZERO


def workload_fits(
    node: QuotaNode, usage: Mapping[FlavorResource, Decimal], *, borrow: bool
) -> bool:
    """`workloadFits` (no TAS)."""
    for fr, value in usage.items():
        if not borrow and nominal(node, fr) < node.usage.get(fr, ZERO) + value:
            return False
        if value > available(node, fr):
            return False
    return True


def within_nominal(node: QuotaNode, needs: Iterable[FlavorResource]) -> bool:
    """`IsWithinNominalInResources`."""
    return all(node.subtree.get(fr, ZERO) >= node.usage.get(fr, ZERO) for fr in needs)


# --- classical ----------------------------------------------------------------------------------


def borrowing_forbidden(cq: ClusterQueue) -> tuple[bool, int | None]:
    """`IsBorrowingWithinCohortForbidden`."""
    borrow = cq.preemption.borrow_within_cohort
    if borrow.policy == "Never":
        return True, None
    return False, borrow.max_priority_threshold


def classify(
    cq: ClusterQueue, incoming: Incoming, w: AdmittedWorkload, *, advantage: bool
) -> Variant | None:
    """`classifyPreemptionVariant`; None for `Never`."""
    if not uses(w, incoming.needs):
        return None
    own = w.cluster_queue == cq.name
    policy = cq.preemption.within_cluster_queue if own else cq.preemption.reclaim_within_cohort
    if not satisfies(policy, incoming, w):
        return None
    if own:
        return "within"
    if advantage:
        return "hierarchical"
    forbidden, threshold = borrowing_forbidden(cq)
    if forbidden:
        return "without-borrowing"
    above = w.priority >= incoming.priority or (threshold is not None and w.priority > threshold)
    return "without-borrowing" if above else "while-borrowing"


def _from_queue(
    working: Working, queue: str, lca: QuotaNode | None, incoming: Incoming, *, advantage: bool
) -> list[Candidate]:
    """`getCandidatesFromCQ`."""
    cq = working.queue(incoming.cluster_queue)
    found = []
    for w in working.workloads(queue):
        variant = classify(cq, incoming, w, advantage=advantage)
        if variant is not None:
            found.append(Candidate(w, variant, lca))
    return found


def _in_subtree(
    working: Working,
    current: QuotaNode,
    lca: QuotaNode,
    skip: QuotaNode | None,
    how: tuple[Incoming, bool],
    found: list[Candidate],
) -> None:
    """`collectCandidatesInSubtree`: subtrees within their quota are passed over whole."""
    incoming, advantage = how
    for child in current.cohorts():
        if child is skip or within_nominal(child, incoming.needs):
            continue
        _in_subtree(working, child, lca, skip, how, found)
    for child in current.cluster_queues():
        if child.name == incoming.cluster_queue or within_nominal(child, incoming.needs):
            continue
        found.extend(_from_queue(working, child.name, lca, incoming, advantage=advantage))


def reclaim_candidates(
    working: Working, incoming: Incoming
) -> tuple[list[Candidate], list[Candidate]]:
    """`collectCandidatesForHierarchicalReclaim`: (hierarchy candidates, priority candidates)."""
    node = working.node(incoming.cluster_queue)
    cq = working.queue(incoming.cluster_queue)
    hierarchy: list[Candidate] = []
    by_priority: list[Candidate] = []
    if node is None or node.parent is None or cq.preemption.reclaim_within_cohort == "Never":
        return hierarchy, by_priority
    advantage, remaining = node.fits_in_quota(incoming.usage)
    previous: QuotaNode | None = None
    for subtree in node.path_to_root():
        target = hierarchy if advantage else by_priority
        _in_subtree(working, subtree, subtree, previous, (incoming, advantage), target)
        fits, remaining = subtree.fits_in_quota(remaining)
        advantage = advantage or fits
        previous = subtree
    return hierarchy, by_priority


class CandidateIterator:
    """`classical.candidateIterator`."""

    def __init__(self, working: Working, incoming: Incoming, now: datetime) -> None:
        self.working = working
        self.incoming = incoming
        cq = working.queue(incoming.cluster_queue)
        same = (
            _from_queue(working, cq.name, None, incoming, advantage=False)
            if cq.preemption.within_cluster_queue != "Never"
            else []
        )
        hierarchy, by_priority = reclaim_candidates(working, incoming)
        key = ordering(cq.name, now)
        lists = [sorted(c, key=lambda x: key(x.workload)) for c in (hierarchy, by_priority, same)]
        evicted = [[c for c in one if c.workload.evicted] for one in lists]
        rest = [[c for c in one if not c.workload.evicted] for one in lists]
        self.candidates: list[Candidate] = [c for one in (*evicted, *rest) for c in one]
        self.none_from_others = not hierarchy and not by_priority
        self.none_hierarchical = not hierarchy

    def valid(self, c: Candidate, *, borrow: bool) -> bool:
        """`candidateIsValid`: a candidate of another ClusterQueue stays one while its
        ClusterQueue, and every Cohort up to where it was found, is over its quota."""
        if c.workload.cluster_queue == self.incoming.cluster_queue:
            return True
        if borrow and c.variant == "without-borrowing":
            return False
        node = self.working.node(c.workload.cluster_queue)
        if node is None or within_nominal(node, self.incoming.needs):
            return False
        for above in node.path_to_root():
            if above is c.lca:
                break
            if within_nominal(above, self.incoming.needs):
                return False
        return True


def fill_back(
    working: Working, node: QuotaNode, incoming: Incoming, targets: list[Target], *, borrow: bool
) -> list[Target]:
    """`fillBackWorkloads`: in reverse order, put back each target the job does not need (Go's
    O(1) deletion moves the last target into the freed place, which this keeps)."""
    for i in range(len(targets) - 2, -1, -1):
        working.add(targets[i].workload)
        if workload_fits(node, incoming.usage, borrow=borrow):
            targets[i] = targets[-1]
            targets.pop()
        else:
            working.remove(targets[i].workload)
    return targets


def restore(working: Working, targets: Sequence[Target]) -> None:
    for t in targets:
        working.add(t.workload)


def under_nominal(node: QuotaNode, needs: Iterable[FlavorResource]) -> bool:
    """`queueUnderNominalInResourcesNeedingPreemption`: usage strictly below nominal."""
    return all(nominal(node, fr) > node.usage.get(fr, ZERO) for fr in needs)


def classical(working: Working, incoming: Incoming, now: datetime) -> list[Target]:
    """`Preemptor.classicalPreemptions`."""
    node = working.node(incoming.cluster_queue)
    if node is None:
        return []
    cq = working.queue(incoming.cluster_queue)
    iterator = CandidateIterator(working, incoming, now)
    forbidden, _ = borrowing_forbidden(cq)
    if iterator.none_from_others or (forbidden and not under_nominal(node, incoming.needs)):
        attempts = [True]
    elif forbidden and iterator.none_hierarchical:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        targets: list[Target] = []
        for c in iterator.candidates:
            if not iterator.valid(c, borrow=borrow):
                continue
            working.remove(c.workload)
            targets.append(Target(c.workload, REASONS[c.variant]))
            if workload_fits(node, incoming.usage, borrow=borrow):
                targets = fill_back(working, node, incoming, targets, borrow=borrow)
                restore(working, targets)
                return targets
        restore(working, targets)
    return []


__all__ = [
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_FAIR_SHARING",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "Candidate",
    "Incoming",
    "Target",
    "Working",
    "classical",
    "satisfies",
]
