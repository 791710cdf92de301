"""The simulator's parking by group (`engine._Memo.group`): after a cycle that only parked, a
new head of the same ClusterQueue, shape, priority and (where a policy compares it) creation
time as one parked since the running Workloads last changed parks without a nomination of its
own. Counted on a case worked by hand, and checked against the slow path."""

from __future__ import annotations

import pytest

from renderer.commands.simulate import engine
from renderer.commands.simulate.engine import World, simulate
from tests.test_simulate import cq, job, waits, world
from tests.test_simulate_fast import same
from tests.test_simulate_reuse import counting


def test_a_head_of_a_parked_group_parks_without_a_nomination(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ClusterQueue a holds 5 GPUs, no Cohort, and preempts within itself only a lower
    # priority or an equal one created later (LowerOrNewerEqualPriority: the creation time is
    # part of a group). Every job has priority 0.
    # t=0    big (4 GPUs, 100 s) admitted, then s (1 GPU, 3 s) in the next cycle: 2.
    # t=1    p1, p2 (2 GPUs, 10 s): p1 at usage 5, Preempt, but big and s are older: no
    #        target, parked (1). The next cycle's new head p2 is of p1's group (created at
    #        1 s too) and nothing changed: parked without a nomination.
    # t=2    p3 (2 GPUs, 10 s): nominated, no target, parked (1).
    # t=3    s ends; p1, p2, p3 requeued. p1 at usage 4: Preempt, no target, parked (1); p2
    #        parks by its group; p3, created later, is another group: nominated (1), parked.
    # t=100  big ends, all three requeued: p1 admitted (1), p2 admitted (1), p3 at usage 4:
    #        p1 and p2 are older, no target, parked (1).
    # t=110  p1 and p2 end: p3 admitted (1), waited 108 s.
    # Fast: 2 + 1 + 1 + 2 + 3 + 1 = 10 nominations (12 without the groups; 9 were the creation
    # time left out of a group).
    nominations = counting(monkeypatch, engine.Simulator, "nominate")
    queue = World(world(cq("a", 5, within="LowerOrNewerEqualPriority")).snapshot)
    jobs = [job(0, "a", 4, 0, 100), job(1, "a", 1, 0, 3)]
    jobs += [job(2, "a", 2, 1, 10), job(3, "a", 2, 1, 10), job(4, "a", 2, 2, 10)]
    fast = simulate(queue, jobs)
    assert len(nominations) == 10
    assert waits(fast) == {
        "a/j0": [0],
        "a/j1": [0],
        "a/j2": [99],
        "a/j3": [99],
        "a/j4": [108],
    }
    # p3's last nomination (t=100, usage 4 of 5, asks 2): Kueue's Preempt message
    assert fast.outcomes[4].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor gpu, 1 more needed"
    )
    same(fast, simulate(queue, jobs, fast=False))


@pytest.mark.parametrize("waiting", [6, 40])
def test_a_requeue_moves_a_parked_group_without_walking_its_members(
    monkeypatch: pytest.MonkeyPatch, waiting: int
) -> None:
    # ClusterQueue a holds 4 GPUs, no Cohort, no preemption (NoFit when full). Priority 0.
    # t=0    big (3 GPUs, 100 s) and x (1 GPU, 50 s) admitted: usage 4.
    # t=1    `waiting` jobs of 2 GPUs, 10 s (one group: a, 2 GPUs, priority 0). The first is
    #        nominated, NoFit, parked by its cycle (1 park); the rest park as one run.
    # t=50   x ends (usage 3): all requeued at once; the first nominated, NoFit (needs 2, 1
    #        free), parked (1 park); the rest as one run.
    # t=100  big ends: two admitted (one per cycle, usage 4), the third NoFit, parked (1 park),
    #        the rest one run; every 10 s after, two end and the next two are admitted, the
    #        one after them parked (1 park) and the rest one run.
    # A parking by a cycle (`Simulator.park`) happens once per requeue, whatever `waiting`;
    # a workload is queued (`_Queue.add`) once, when submitted: a requeue moves the group.
    parks = counting(monkeypatch, engine.Simulator, "park")
    adds = counting(monkeypatch, engine._Queue, "add")
    queue = World(world(cq("a", 4)).snapshot)
    jobs = [job(0, "a", 3, 0, 100), job(1, "a", 1, 0, 50)]
    jobs += [job(2 + i, "a", 2, 1, 10) for i in range(waiting)]
    fast = simulate(queue, jobs)
    requeues_with_a_park = 2 + (waiting - 2 + 1) // 2  # t=1, t=50, then t=100, 110, ...
    assert len(parks) == requeues_with_a_park
    assert len(adds) == len(jobs)
    assert waits(fast)["a/j0"] == [0] and waits(fast)["a/j1"] == [0]
    for i in range(waiting):  # admitted two by two from t=100, every 10 s
        assert waits(fast)[f"a/j{2 + i}"] == [99 + 10 * (i // 2)]
    # the last one's last parking: two of 2 GPUs just admitted, usage 4 of 4, asks 2
    assert fast.outcomes[-1].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor gpu, 2 more needed"
    )
    same(fast, simulate(queue, jobs, fast=False))
