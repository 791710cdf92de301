"""Kueue's fair sharing: dominant resource shares and fair-sharing preemption, on the quota tree
of Kueue's own objects (Kueue v0.19.2).

- `dominant_resource_share` is `dominantResourceShare` (pkg/cache/scheduler/fair_sharing.go): for
  a node with a parent, per resource, what it uses beyond its subtree quota on every flavor (plus
  a request), over what its parent could ever lend of that resource on all flavors
  (`calculateLendable`: the parent's `potentialAvailable` summed per resource), times 1000; the
  largest ratio, its resource (ties by name), and the node's fair weight (`parseFairWeight`: 1
  when unset). `compare` is `CompareDRS`: a node with weight 0 that borrows ranks above all
  others; otherwise the ratio over the weight.
- `fair_preemptions` is `Preemptor.fairPreemptions` (pkg/scheduler/preemption/preemption.go)
  with the `fairsharing` package: candidates from the preemptor's ClusterQueue and every
  borrowing ClusterQueue of its tree (`findCandidates`); the target ClusterQueues in
  `TargetClusterQueueOrdering` (ordering.go: from the root, the child with the highest share
  among those that borrow and hold candidates); rule S2-a `LessThanOrEqualToFinalShare` then
  S2-b `LessThanInitialShare` on the shares of the two nodes just below their least common
  ancestor (least_common_ancestor.go, strategy.go, target.go). `FairSharingPreemptWithinNominal`
  (beta, on by default): while the preemptor's ClusterQueue stays within its nominal quota on
  the contested resources, any candidate may be taken.

Amounts enter a ratio as Kueue counts them (`resources.ResourceValue`: cpu in millicores, every
other resource in whole units, rounded up), so the floats are Kueue's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, Decimal

from renderer.admission.scheduler.preemptor import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    ZERO,
    Incoming,
    Strategy,
    Target,
    Working,
    fill_back,
    nominal,
    ordering,
    restore,
    satisfies,
    uses,
    workload_fits,
)
from renderer.admission.scheduler.snapshot import AdmittedWorkload
from renderer.model.quota_tree import FlavorResource, QuotaNode, put_back, stamps


@dataclass(frozen=True, slots=True)
class DRS:
    """`DRS`: a node's dominant resource share."""

    weight: float
    ratio: float
    resource: str = ""
    borrowing: bool = False

    @property
    def zero(self) -> bool:
        return self.ratio == 0

    def weighted(self) -> float:
        """`PreciseWeightedShare`."""
        if self.zero:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and not self.zero


NEGATIVE = DRS(1.0, -1.0)
"""`NegativeDRS`: below every share."""


def _cmp(a: float, b: float) -> int:
    return (a > b) - (a < b)


def compare(a: DRS, b: DRS) -> int:
    """`CompareDRS`: lower is preferred for admission, higher for preemption."""
    if a.weight != 0 and b.weight != 0:  # neither borrows at weight 0: the weighted shares
        x, y = a.ratio / a.weight, b.ratio / b.weight
        return (x > y) - (x < y)
    if a.zero_weight_borrows() and b.zero_weight_borrows():
        return _cmp(a.ratio, b.ratio)
    if a.zero_weight_borrows():
        return 1
    if b.zero_weight_borrows():
        return -1
    return _cmp(a.weighted(), b.weighted())


def kueue_units(resource: str, value: Decimal) -> int:
    """`resources.ResourceValue`: cpu in millicores, the rest in units, rounded up."""
    scaled = value * 1000 if resource == "cpu" else value
    return int(scaled.to_integral_value(rounding=ROUND_CEILING))


def lendable(node: QuotaNode) -> dict[str, Decimal]:
    """`calculateLendable`: per resource, `node`'s potential available on every flavor the
    root knows."""
    out: dict[str, Decimal] = {}
    for fr in node.root().subtree:
        out[fr[1]] = out.get(fr[1], ZERO) + node.potential_available(fr)
    return out


def dominant_resource_share(
    node: QuotaNode,
    weight: float,
    request: Mapping[FlavorResource, Decimal] | None = None,
    can_lend: Mapping[str, Decimal] | None = None,
) -> DRS:
    """`dominantResourceShare`; `can_lend`: the parent's `lendable`, where the caller keeps it
    (it depends on the tree's quotas only, never on its usage)."""
    if node.parent is None:
        return DRS(weight, 0.0)
    borrowed: dict[str, Decimal] = {}
    asked = request or {}
    usage = node.usage
    for fr, quota in node.subtree.items():
        over = asked.get(fr, ZERO) + usage.get(fr, ZERO) - quota
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], ZERO) + over
    if not borrowed:
        return DRS(weight, 0.0)
    if can_lend is None:
        can_lend = lendable(node.parent)
    ratio, dominant = 0.0, ""
    for resource, amount in borrowed.items():
        most = can_lend.get(resource, ZERO)
        if most > 0:
            r = float(kueue_units(resource, amount)) * 1000.0 / float(kueue_units(resource, most))
            if r > ratio or (r == ratio and resource < dominant):
                ratio, dominant = r, resource
    return DRS(weight, ratio, dominant, True)


class Shares:
    """The fair weights of the tree's nodes, and their shares. The weights and what each
    parent can lend depend on the tree's quotas only: they are kept on the working copy
    (`Working.static`) for as long as it lives, while its usage changes."""

    def __init__(self, working: Working) -> None:
        static = working.static
        weights = static.get("weights")
        if weights is None:
            weights = static["weights"] = fair_weights(working)
        self.weights: dict[int, float] = weights
        self.can_lend: dict[int, dict[str, Decimal]] = static.setdefault("lendable", {})
        self.known: dict[int, tuple[int, DRS]] = static.setdefault("shares", {})
        """Each node's share at its usage's change count (`QuotaNode.changes`)."""

    def of(self, node: QuotaNode) -> DRS:
        known = self.known.get(id(node))
        if known is not None and known[0] == node.changes:
            return known[1]
        share = self.compute(node)
        self.known[id(node)] = (node.changes, share)
        return share

    def compute(
        self, node: QuotaNode, request: Mapping[FlavorResource, Decimal] | None = None
    ) -> DRS:
        """The node's share, with `request` added to its usage (not kept)."""
        parent = node.parent
        can_lend = None
        if parent is not None:
            can_lend = self.can_lend.get(id(parent))
            if can_lend is None:
                can_lend = self.can_lend[id(parent)] = lendable(parent)
        weight = self.weights.get(id(node), 1.0)
        return dominant_resource_share(node, weight, request, can_lend)


def fair_weights(working: Working) -> dict[int, float]:
    """Each node's fair weight (`parseFairWeight`: 1 when unset), by the node's id."""
    snapshot = working.snapshot
    out: dict[int, float] = {}
    for node in working.tree.values():
        if node.kind == "ClusterQueue":
            weight = snapshot.cluster_queues[node.name].fair_weight
        else:
            cohort = snapshot.cohorts.get(node.name)
            weight = cohort.fair_weight if cohort is not None else Decimal(1)
        out[id(node)] = float(weight)
    return out


# --- TargetClusterQueueOrdering -------------------------------------------------------------------


class TargetQueue:
    """`TargetClusterQueue`."""

    def __init__(self, order: QueueOrdering, node: QuotaNode) -> None:
        self.order = order
        self.node = node

    @property
    def in_cluster_queue(self) -> bool:
        return self.node is self.order.preemptor

    def pop(self) -> AdmittedWorkload:
        return self.order.targets[self.node.name].pop(0)

    def has_workload(self) -> bool:
        return self.order.has_workload(self.node)

    def almost_lcas(self) -> tuple[QuotaNode, QuotaNode]:
        """`getAlmostLCAs`: the nodes just below the least common ancestor, on the preemptor's
        side and on the target's."""
        lca = next(a for a in self.node.path_to_root() if id(a) in self.order.ancestors)
        return _almost(self.order.preemptor, lca), _almost(self.node, lca)

    def shares(self) -> tuple[DRS, DRS]:
        """`ComputeShares`: (preemptor new share, target old share)."""
        mine, theirs = self.almost_lcas()
        return self.order.shares.of(mine), self.order.shares.of(theirs)

    def share_after_removal(self, workload: AdmittedWorkload) -> DRS:
        """`ComputeTargetShareAfterRemoval`: the share of the target's side with the workload's
        usage removed, the tree left as it is. What the removal takes from that node is what
        `QuotaNode.remove_usage` would carry up to it (`released`), and the share is the node's
        with that taken off its usage, as a negative request."""
        side = self.almost_lcas()[1]
        node = self.order.working.node(workload.cluster_queue)
        if node is None:
            return self.order.shares.of(side)
        taken = {fr: -value for fr, value in released(node, side, workload.usage).items()}
        return self.order.shares.compute(side, taken)


def released(
    node: QuotaNode, upto: QuotaNode, usage: Mapping[FlavorResource, Decimal]
) -> dict[FlavorResource, Decimal]:
    """Per (flavor, resource), how much `upto` (`node` or a node above it) would use less once
    `usage` is removed from `node` (`QuotaNode.remove_usage`, without changing the tree):
    each node gives back in its parent what it stored there, at most what it is given back."""
    out: dict[FlavorResource, Decimal] = {}
    for fr, value in usage.items():
        at = node
        while at is not upto:
            stored = at.usage.get(fr, ZERO) - at.local_quota(fr)
            if stored <= 0 or at.parent is None:
                value = ZERO
                break
            value = min(value, stored)
            at = at.parent
        if value:
            out[fr] = value
    return out


def _almost(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    found = node
    for ancestor in node.path_to_root():
        if ancestor is lca:
            return found
        found = ancestor
    return found


class QueueOrdering:
    """`TargetClusterQueueOrdering`: from the root down, the child with the highest share among
    those that borrow and have candidates; Cohorts win ties with ClusterQueues."""

    def __init__(
        self,
        working: Working,
        preemptor: QuotaNode,
        candidates: Sequence[AdmittedWorkload],
        now: datetime,
    ) -> None:
        self.working = working
        self.preemptor = preemptor
        self.shares = Shares(working)
        self.ancestors = {id(a) for a in preemptor.path_to_root()}
        self.targets: dict[str, list[AdmittedWorkload]] = {}
        for c in candidates:
            self.targets.setdefault(c.cluster_queue, []).append(c)
        self.pruned: set[int] = set()
        self.key = ordering(preemptor.name, now)

    def has_workload(self, node: QuotaNode) -> bool:
        return bool(self.targets.get(node.name))

    def children(self, cohort: QuotaNode) -> tuple[list[QuotaNode], list[QuotaNode]]:
        """The Cohort's ClusterQueues and its Cohorts, each by name (the tree's shape: kept
        on the working copy, `Working.static`)."""
        kept: dict[int, tuple[list[QuotaNode], list[QuotaNode]]]
        kept = self.working.static.setdefault("children", {})
        found = kept.get(id(cohort))
        if found is None:
            found = kept[id(cohort)] = (
                sorted(cohort.cluster_queues(), key=lambda n: n.name),
                sorted(cohort.cohorts(), key=lambda n: n.name),
            )
        return found

    def drop(self, target: TargetQueue) -> None:
        self.pruned.add(id(target.node))

    def __iter__(self) -> Iterator[TargetQueue]:
        if self.preemptor.parent is None:
            target = TargetQueue(self, self.preemptor)
            while id(self.preemptor) not in self.pruned and target.has_workload():
                yield target
            return
        root = self.preemptor.parent.root()
        while id(root) not in self.pruned:
            found = self.next_target(root)
            if found is not None:
                yield found

    def next_target(self, cohort: QuotaNode) -> TargetQueue | None:
        best_cq: QuotaNode | None = None
        best_cq_drs = NEGATIVE
        cluster_queues, cohorts = self.children(cohort)
        for cq in cluster_queues:
            if id(cq) in self.pruned:
                continue
            drs = self.shares.of(cq)
            if (not drs.borrowing and cq is not self.preemptor) or not self.has_workload(cq):
                self.pruned.add(id(cq))
            elif compare(drs, best_cq_drs) == 0 and best_cq is not None:
                mine = self.key(self.targets[cq.name][0])
                theirs = self.key(self.targets[best_cq.name][0])
                if mine < theirs:
                    best_cq = cq
            elif compare(drs, best_cq_drs) == 1:
                best_cq, best_cq_drs = cq, drs
        best_cohort: QuotaNode | None = None
        best_cohort_drs = NEGATIVE
        for child in cohorts:
            if id(child) in self.pruned:
                continue
            drs = self.shares.of(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned.add(id(child))
            elif compare(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and compare(best_cohort_drs, best_cq_drs) >= 0:
            return self.next_target(best_cohort)
        assert best_cq is not None
        return TargetQueue(self, best_cq)


# --- the strategies -------------------------------------------------------------------------------


def passes(strategy: Strategy, preemptor_new: DRS, target_old: DRS, target_new: DRS) -> bool:
    """Rule S2-a `LessThanOrEqualToFinalShare`, rule S2-b `LessThanInitialShare`."""
    if strategy == "LessThanOrEqualToFinalShare":
        return compare(preemptor_new, target_new) <= 0
    return compare(preemptor_new, target_old) < 0


def find_candidates(working: Working, incoming: Incoming) -> list[AdmittedWorkload]:
    """`Preemptor.findCandidates`."""
    cq = working.queue(incoming.cluster_queue)
    node = working.node(incoming.cluster_queue)
    found: list[AdmittedWorkload] = []
    policy = cq.preemption.within_cluster_queue
    if policy != "Never":
        found += [
            w
            for w in working.workloads(cq.name)
            if satisfies(policy, incoming, w) and uses(w, incoming.needs)
        ]
    reclaim = cq.preemption.reclaim_within_cohort
    if node is None or node.parent is None or reclaim == "Never":
        return found
    root = node.parent.root()
    walks: dict[int, tuple[QuotaNode, ...]] = working.static.setdefault("walks", {})
    nodes = walks.get(id(root))
    if nodes is None:  # the tree's shape, kept on the working copy
        nodes = walks[id(root)] = tuple(root.walk())
    for other in nodes:
        if other.kind != "ClusterQueue" or other is node:
            continue
        if other.parent is None or not any(
            nominal(other, fr) < other.usage.get(fr, ZERO) for fr in incoming.needs
        ):
            continue
        found += [
            w
            for w in working.workloads(other.name)
            if satisfies(reclaim, incoming, w) and uses(w, incoming.needs)
        ]
    return found


@dataclass
class _Run:
    working: Working
    node: QuotaNode
    incoming: Incoming
    now: datetime

    def fits(self) -> bool:
        """`workloadFitsForFairSharing`: without the incoming usage simulated."""
        stamped = stamps((self.node, *self.node.path_to_root()))
        for fr, value in self.incoming.usage.items():
            self.node.remove_usage(fr, value)
        try:
            return workload_fits(self.node, self.incoming.usage, borrow=True)
        finally:
            for fr, value in self.incoming.usage.items():
                self.node.add_usage(fr, value)
            put_back(stamped)

    def take(self, workload: AdmittedWorkload, reason: str, targets: list[Target]) -> bool:
        self.working.remove(workload)
        targets.append(Target(workload, reason))
        return self.fits()


def run_first(
    run: _Run, candidates: Sequence[AdmittedWorkload], strategy: Strategy
) -> tuple[bool, list[Target], list[AdmittedWorkload]]:
    """`runFirstFsStrategy`: (fits, targets, the candidates left for rule S2-b)."""
    order = QueueOrdering(run.working, run.node, candidates, run.now)
    targets: list[Target] = []
    retry: list[AdmittedWorkload] = []
    within = all(nominal(run.node, fr) >= run.node.usage.get(fr, ZERO) for fr in run.incoming.needs)
    for target in order:
        if target.in_cluster_queue or within:
            reason = IN_CLUSTER_QUEUE if target.in_cluster_queue else IN_COHORT_RECLAMATION
            if run.take(target.pop(), reason, targets):
                return True, targets, []
            continue
        mine, theirs = target.shares()
        if math.isinf(mine.weighted()) and not math.isinf(theirs.weighted()):
            while target.has_workload():  # fsStrategyUnsatisfiable
                retry.append(target.pop())
            continue
        while target.has_workload():
            workload = target.pop()
            if passes(strategy, mine, theirs, target.share_after_removal(workload)):
                if run.take(workload, IN_COHORT_FAIR_SHARING, targets):
                    return True, targets, []
                break
            retry.append(workload)
    return False, targets, retry


def run_second(
    run: _Run, retry: Sequence[AdmittedWorkload], targets: list[Target]
) -> tuple[bool, list[Target]]:
    """`runSecondFsStrategy`: rule S2-b, at most one Workload per ClusterQueue."""
    order = QueueOrdering(run.working, run.node, retry, run.now)
    for target in order:
        mine, theirs = target.shares()
        workload = target.pop()
        passed = passes("LessThanInitialShare", mine, theirs, theirs)
        if passed and run.take(workload, IN_COHORT_FAIR_SHARING, targets):
            return True, targets
        order.drop(target)
    return False, targets


def fair_preemptions(
    working: Working,
    incoming: Incoming,
    strategies: Sequence[Strategy],
    now: datetime,
    found: Sequence[AdmittedWorkload] | None = None,
) -> list[Target]:
    """`Preemptor.fairPreemptions`; `found`: `find_candidates`' answer, where the caller has
    it."""
    node = working.node(incoming.cluster_queue)
    candidates = find_candidates(working, incoming) if found is None else list(found)
    if node is None or not candidates:
        return []
    candidates.sort(key=ordering(incoming.cluster_queue, now))
    stamped = stamps(working.tree.values())  # every change below is undone before returning
    for fr, value in incoming.usage.items():  # DRS values include the incoming workload
        node.add_usage(fr, value)
    run = _Run(working, node, incoming, now)
    fits, targets, retry = run_first(run, candidates, strategies[0])
    if not fits and len(strategies) > 1:
        fits, targets = run_second(run, retry, targets)
    for fr, value in incoming.usage.items():
        node.remove_usage(fr, value)
    if not fits:
        restore(working, targets)
        put_back(stamped)
        return []
    targets = fill_back(working, node, incoming, targets, borrow=True)
    restore(working, targets)
    put_back(stamped)
    return targets


__all__ = ["DRS", "compare", "dominant_resource_share", "fair_preemptions"]
