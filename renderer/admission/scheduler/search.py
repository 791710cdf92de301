"""The one search the scheduler repeats: the largest count that still fits.

Kueue's partial admission searches the pod counts a Workload may shrink to with `sort.Search`
(`pkg/scheduler/flavorassigner/podset_reducer.go` `PodSetReducer.Search`), and fit asks the same
question of a Deployment's or LeaderWorkerSet's replicas (how many of the identical Workloads
are admitted at once). Whether a count fits is monotone in both: fewer pods never need more
quota, so a binary search finds the largest."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def largest(low: int, high: int, attempt: Callable[[int], T | None]) -> tuple[int, T] | None:
    """The largest `n` in `[low, high]` whose `attempt(n)` is not None, with that result; None
    when no `n` in the range fits. `attempt` must be monotone: if `n` fits, every smaller one
    does."""
    found: tuple[int, T] | None = None
    while low <= high:
        middle = (low + high) // 2
        result = attempt(middle)
        if result is None:
            high = middle - 1
        else:
            found, low = (middle, result), middle + 1
    return found
