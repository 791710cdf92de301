"""The simulator's fast path reuses an answer only where its inputs are the same (docs/simulate.md,
"Speed"): a flavor assignment per usage of the ClusterQueue's path, a preemption search per state
of the cohort tree (across changes of the running Workloads that come back to it), and after a
cycle that only parked heads, only the new heads nominated. Each case is worked by hand: which
nominations and searches the engine makes, on the fast path and on the slow one (`fast=False`,
every decision afresh), and the waits both give. Not timings: counts of calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from renderer.admission.scheduler import preemptor
from renderer.commands.simulate import engine
from renderer.commands.simulate.engine import World, simulate
from tests.test_simulate import cq, job, waits, world
from tests.test_simulate_fast import same


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Counts the calls of `owner.name` (a function or method), which still runs."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_search_is_kept_for_a_state_the_tree_comes_back_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ClusterQueue a holds 4 GPUs and preempts lower priorities only; every job has priority 0.
    # t=0    big (3 GPUs, 100 s) admitted: 1 assignment (usage 0).
    # t=1    p (2 GPUs) at usage 3: 1 assignment, Preempt (within nominal); the search finds no
    #        lower priority: no target, parked.
    # t=2    q (1 GPU, 1 s) at usage 3: 1 assignment, Fit, admitted.
    # t=3    q ends, p requeued: the usage (3) and the running Workloads (big alone, admitted
    #        at 0, not evicted) are those of t=1, though two changes came between: the
    #        assignment and the search are both kept; parked again.
    # t=100  big ends, p at usage 0: 1 assignment, Fit, admitted (waited 99 s).
    # Fast: 4 assignments, 1 search; slow: 5 and 2.
    assignments = counting(monkeypatch, engine, "FlavorAssigner")
    searches = counting(monkeypatch, preemptor, "classical")
    queue = World(world(cq("a", 4, within="LowerPriority")).snapshot)
    jobs = [job(0, "a", 3, 0, 100), job(1, "a", 2, 1, 5), job(2, "a", 1, 2, 1)]
    fast = simulate(queue, jobs)
    assert (len(assignments), len(searches)) == (4, 1)
    assert waits(fast) == {"a/j0": [0], "a/j1": [99], "a/j2": [0]}
    assignments.clear()
    searches.clear()
    slow = simulate(queue, jobs, fast=False)
    assert (len(assignments), len(searches)) == (5, 2)
    same(fast, slow)


def test_after_a_cycle_that_only_parked_only_the_new_heads_are_nominated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two ClusterQueues, no Cohort: a (4 GPUs, BestEffortFIFO, preempts lower priorities
    # only) and b (2 GPUs, StrictFIFO), every job at priority 0.
    # t=0    big (a, 4 GPUs, 100 s) admitted: 1 nomination; the next cycle has no head.
    # t=1    p1, p2, p3 (a, 2 GPUs, 10 s) and h (b, 4 GPUs: more than b ever holds).
    #        Cycle 1 nominates p1 (Preempt, no lower priority to preempt: parked) and h
    #        (NoFit: stays, blocks b). It only parked, so the next cycles differ only in a's
    #        new head: p2, then p3, each parked, then a has none. p2 and p3 are of p1's group
    #        (a, 2 GPUs, priority 0) and nothing changed since p1 was parked: they park
    #        without a nomination: 2 nominations. The slow path nominates h again in each
    #        cycle: 2 + 2 + 2 + 1.
    # t=100  big ends, the three requeued: p1 admitted (with h: 2), p2 admitted (2), p3 at
    #        usage 4 parked (2), then the fast path's cycle after it has no new head of a;
    #        the slow path's nominates h (1).
    # t=110  p1 and p2 end, p3 requeued: admitted (with h: 2), then h alone (1).
    # t=120  p3 ends: h alone (1).
    # Fast: 1 + 2 + 6 + 3 + 1 = 13 nominations; slow: 1 + 7 + 7 + 3 + 1 = 19.
    nominations = counting(monkeypatch, engine.Simulator, "nominate")
    queues = World(
        world(cq("a", 4, within="LowerPriority"), cq("b", 2, strategy="StrictFIFO")).snapshot
    )
    jobs = [job(0, "a", 4, 0, 100)]
    jobs += [job(i, "a", 2, 1, 10) for i in (1, 2, 3)]
    jobs += [job(4, "b", 4, 1, 10)]
    fast = simulate(queues, jobs)
    assert len(nominations) == 13
    assert waits(fast) == {"a/j0": [0], "a/j1": [99], "a/j2": [99], "a/j3": [109], "b/j4": []}
    assert fast.outcomes[4].message == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
        "flavor gpu, previously considered podsets requests (0) + current podset request (4) > "
        "maximum capacity (2)"
    )
    nominations.clear()
    slow = simulate(queues, jobs, fast=False)
    assert len(nominations) == 19
    same(fast, slow)
