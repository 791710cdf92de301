"""Kueue's quota arithmetic on a cohort tree, ported from `pkg/cache/scheduler/resource_node.go`
(Kueue v0.19): one `QuotaNode` per Cohort and ClusterQueue, each with its own quotas per
(flavor, resource), the quota of its subtree, and the usage that counts against it.

- `local_quota`: what a node keeps for its own subtree (subtree quota - lendingLimit; nothing
  without a lending limit);
- `subtree_quota`: a ClusterQueue's nominal; a Cohort's own nominal plus what each child stores
  in it (the child's subtree quota minus its local quota, `accumulateFromChild`);
- `usage`: a ClusterQueue's usage; a Cohort's is the sum of its children's usage beyond their
  local quota (`addUsage` carries the overflow up the path);
- `available`: unused local quota plus what the parent has available, capped at each level by
  what the node stores in its parent minus what it uses there plus its borrowing limit;
- `potential_available`: the same with no usage anywhere (the most a node can ever get).

A borrowing limit of None is Kueue's nil: no cap. gpuplane renders quotas with no Unlimited
amounts, so the port needs none of Kueue's saturating `Amount`. The tree is the one model of
Kueue's numbers for `plan`, `fit`, the workload templates and the cluster README: the same
functions answer "most ever" and "free now".
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

FlavorResource = tuple[str, str]
"""(flavor, resource), Kueue's `resources.FlavorResource`."""

ZERO = Decimal(0)

NodeKind = Literal["Cohort", "ClusterQueue"]

_STAMPS = itertools.count(1)
"""Every change of a node's usage takes the next: a stamp is never given to two usages."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Kueue's `ResourceQuota` of one resource on one flavor: nominal, borrowing limit and
    lending limit (None: not set)."""

    nominal: Decimal
    borrowing: Decimal | None = None
    lending: Decimal | None = None

    @property
    def lendable(self) -> Decimal:
        """What the cohort may borrow from it: the lending limit, or all of nominal when unset."""
        return self.nominal if self.lending is None else self.lending

    @property
    def guaranteed(self) -> Decimal:
        """What Kueue never lends out: nominal minus the lending limit (nothing when unset)."""
        return Decimal(0) if self.lending is None else self.nominal - self.lending


@dataclass(eq=False, slots=True)
class QuotaNode:
    """One Cohort or ClusterQueue of a cohort tree (`resourceNode` with its place in the tree)."""

    name: str
    kind: NodeKind
    quotas: Mapping[FlavorResource, Limits]
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    subtree: dict[FlavorResource, Decimal] = field(default_factory=dict)
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    changes: int = 0
    """A stamp of `usage`, new at every change by `add_usage` and `remove_usage` (never one
    an earlier usage had, but where `put_back` sets the one the same usage had): an answer
    computed from this node's usage holds while the stamp is the same."""

    def adopt(self, child: QuotaNode) -> QuotaNode:
        child.parent = self
        self.children.append(child)
        return child

    def path_to_root(self) -> Iterator[QuotaNode]:
        """`PathParentToRoot`: the parent, its parent, ... up to the root."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def cohorts(self) -> list[QuotaNode]:
        return [c for c in self.children if c.kind == "Cohort"]

    def cluster_queues(self) -> list[QuotaNode]:
        return [c for c in self.children if c.kind == "ClusterQueue"]

    def walk(self) -> Iterator[QuotaNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    # --- resource_node.go -------------------------------------------------------------------

    def local_quota(self, fr: FlavorResource) -> Decimal:
        quota = self.quotas.get(fr)
        if quota is None or quota.lending is None:
            return ZERO
        return max(ZERO, self.subtree.get(fr, ZERO) - quota.lending)

    def local_available(self, fr: FlavorResource) -> Decimal:
        return max(ZERO, self.local_quota(fr) - self.usage.get(fr, ZERO))

    def available(self, fr: FlavorResource) -> Decimal:
        """`available`: what this node can be given now, through its whole path."""
        if self.parent is None:
            return self.subtree.get(fr, ZERO) - self.usage.get(fr, ZERO)
        from_parent = self.parent.available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing is not None:
            local = self.local_quota(fr)
            stored = self.subtree.get(fr, ZERO) - local
            used_there = max(ZERO, self.usage.get(fr, ZERO) - local)
            from_parent = min(stored - used_there + quota.borrowing, from_parent)
        return self.local_available(fr) + from_parent

    def potential_available(self, fr: FlavorResource) -> Decimal:
        """`potentialAvailable`: the most this node could get with nothing used anywhere."""
        if self.parent is None:
            return self.subtree.get(fr, ZERO)
        most = self.local_quota(fr) + self.parent.potential_available(fr)
        quota = self.quotas.get(fr)
        if quota is not None and quota.borrowing is not None:
            most = min(self.subtree.get(fr, ZERO) + quota.borrowing, most)
        return most

    def add_usage(self, fr: FlavorResource, value: Decimal) -> None:
        """`addUsage`: the part beyond the local quota left is used in the parent too (up the
        path in one loop)."""
        node: QuotaNode | None = self
        while node is not None:
            used = node.usage.get(fr, ZERO)
            local_free = max(ZERO, node.local_quota(fr) - used)
            node.usage[fr] = used + value
            node.changes = next(_STAMPS)
            if value <= local_free:
                return
            value -= local_free
            node = node.parent

    def remove_usage(self, fr: FlavorResource, value: Decimal) -> None:
        """`removeUsage`: what was stored in the parent is given back there first (up the
        path in one loop)."""
        node: QuotaNode | None = self
        while node is not None:
            used = node.usage.get(fr, ZERO)
            stored_in_parent = used - node.local_quota(fr)
            node.usage[fr] = used - value
            node.changes = next(_STAMPS)
            if stored_in_parent <= 0:
                return
            value = min(value, stored_in_parent)
            node = node.parent

    def borrowing_with(self, fr: FlavorResource, value: Decimal) -> bool:
        """`BorrowingWith`: `value` more would take the node past its subtree quota."""
        return self.subtree.get(fr, ZERO) < self.usage.get(fr, ZERO) + value

    def within_nominal(self, frs: set[FlavorResource] | frozenset[FlavorResource]) -> bool:
        """`IsWithinNominalInResources`."""
        return all(self.subtree.get(fr, ZERO) >= self.usage.get(fr, ZERO) for fr in frs)

    def fits_in_quota(
        self, requests: Mapping[FlavorResource, Decimal]
    ) -> tuple[bool, dict[FlavorResource, Decimal]]:
        """`QuantitiesFitInQuota`: whether `requests` fit this node's subtree quota, and what
        of them is left once its local quota is used."""
        fits = True
        remaining: dict[FlavorResource, Decimal] = {}
        for fr, value in requests.items():
            if self.subtree.get(fr, ZERO) < self.usage.get(fr, ZERO) + value:
                fits = False
            remaining[fr] = max(ZERO, value - self.local_available(fr))
        return fits, remaining

    def height(self) -> int:
        """`getNodeHeight` of a Cohort: 1 with any child, one more per level of Cohorts."""
        height = min(len(self.children), 1)
        for child in self.cohorts():
            height = max(height, child.height() + 1)
        return height


def stamps(nodes: Iterable[QuotaNode]) -> list[tuple[QuotaNode, int]]:
    """Each node's stamp now, for `put_back`."""
    return [(node, node.changes) for node in nodes]


def put_back(stamped: Iterable[tuple[QuotaNode, int]]) -> None:
    """The stamps of `stamps`, where every usage changed since was undone (each amount
    removed added again, or the reverse): the usage is the same as then, and so are the
    answers kept for that stamp."""
    for node, stamp in stamped:
        node.changes = stamp


def settle(root: QuotaNode) -> None:
    """`updateCohortResourceNode` from the root down: every subtree quota, usage reset."""
    root.usage = {}
    root.subtree = {fr: q.nominal for fr, q in root.quotas.items()}
    for child in root.children:
        if child.kind == "Cohort":
            settle(child)
        else:
            child.usage = {}
            child.subtree = {fr: q.nominal for fr, q in child.quotas.items()}
        for fr, quota in child.subtree.items():
            root.subtree[fr] = root.subtree.get(fr, ZERO) + quota - child.local_quota(fr)
