"""`gpuplane simulate`'s engine on small Kueue setups, every wait worked out by hand from Kueue's
rules (docs/simulate.md): the ClusterQueues and Cohorts are written as Kueue objects, read by
the same snapshot reader fit uses, so each case says in Kueue's own terms what it sets up.

Times in the jobs are seconds; the engine counts milliseconds."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from renderer.admission.scheduler.snapshot import read_objects
from renderer.commands.simulate.engine import Job, Run, World, simulate

GPU = "nvidia.com/gpu"
FLAVOR = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"name": "gpu"},
    "spec": {},
}


def cq(name: str, gpus: int, cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    """A ClusterQueue of one flavor `gpu` covering nvidia.com/gpu; `lending`, `strategy`,
    `within` and `reclaim` set those fields."""
    quota: dict[str, Any] = {"name": GPU, "nominalQuota": gpus}
    if "lending" in spec:
        quota["lendingLimit"] = spec["lending"]
    body: dict[str, Any] = {
        "queueingStrategy": spec.get("strategy", "BestEffortFIFO"),
        "preemption": {
            "withinClusterQueue": spec.get("within", "Never"),
            "reclaimWithinCohort": spec.get("reclaim", "Never"),
        },
        "resourceGroups": [
            {"coveredResources": [GPU], "flavors": [{"name": "gpu", "resources": [quota]}]}
        ],
    }
    if cohort is not None:
        body["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": body,
    }


def world(*queues: dict[str, Any]) -> World:
    snapshot = read_objects([FLAVOR, *queues])
    assert not snapshot.problems
    return World(snapshot)


def job(index: int, queue: str, gpus: int, submit: int, duration: int, priority: int = 0) -> Job:
    return Job(
        index=index,
        namespace=queue,
        name=f"j{index}",
        cluster_queue=queue,
        priority=priority,
        submit=submit * 1000,
        duration=duration * 1000,
        pods=1,
        per_pod={GPU: Decimal(gpus)},
    )


def waits(run: Run) -> dict[str, list[float]]:
    return {o.job.key: [w / 1000 for w in o.waits] for o in run.outcomes}


def test_two_queues_of_a_cohort_borrow_and_wait_for_the_borrowed_quota() -> None:
    # Cohort c holds a's 4 and b's 4 (no lending limits: all of it lendable), no preemption.
    # t=0  a/j0 asks 6: a's 4 plus 2 of b's, free in the cohort -> admitted, waits 0.
    # t=1  b/j1 asks 4: the cohort has 8 - 6 = 2 free; Kueue may not reclaim (Never), so no
    #      target frees it -> inadmissible, parked (BestEffortFIFO).
    # t=2  b/j2 asks 2: 2 free -> admitted at once, waits 0; it ends at t=7, which requeues
    #      j1, still 2 short.
    # t=10 a/j0 ends: 6 free -> b/j1 admitted, waits 10 - 1 = 9 s.
    run = simulate(
        world(cq("a", 4, "c"), cq("b", 4, "c")),
        [job(0, "a", 6, 0, 10), job(1, "b", 4, 1, 10), job(2, "b", 2, 2, 5)],
    )
    assert waits(run) == {"a/j0": [0], "b/j1": [9], "b/j2": [0]}
    assert [o.completed_at for o in run.outcomes] == [10_000, 20_000, 7_000]
    assert run.peak == {("gpu", GPU): Decimal(8)}
    # b/j1 waited on quota: at t=7 it needed 4 with 2 free, in Kueue's words
    assert run.outcomes[1].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        "in flavor gpu, 2 more needed"
    )


def test_a_lending_limit_keeps_quota_home_and_caps_what_others_borrow() -> None:
    # a: nominal 4, lendingLimit 1 (3 guaranteed to a); b: nominal 4. The cohort's quota is
    # b's 4 plus the 1 a lends: b can hold 5 at most (potentialAvailable).
    # t=0  b/j0 asks 6 > 5: NoFit ExceedsMaxQuota for ever -> never admitted.
    # t=0  b/j1 asks 5: admitted (borrowing a's lent 1), waits 0, ends at t=10.
    # t=1  a/j2 asks 4: a keeps 3 of its own (local quota); the lent 1 is in use by b ->
    #      3 < 4, and a may not reclaim -> parked until b/j1 ends at t=10: waits 9 s.
    run = simulate(
        world(cq("a", 4, "c", lending=1), cq("b", 4, "c")),
        [job(0, "b", 6, 0, 10), job(1, "b", 5, 0, 10), job(2, "a", 4, 1, 10)],
    )
    assert waits(run) == {"b/j0": [], "b/j1": [0], "a/j2": [9]}
    never = run.outcomes[0]
    assert never.completed_at is None
    assert never.reason == "ExceedsMaxQuota"
    assert "current podset request (6) > maximum capacity (5)" in never.message


def test_a_higher_priority_preempts_within_its_cluster_queue() -> None:
    # a: nominal 4, withinClusterQueue LowerPriority, no cohort.
    # t=0  low (priority 10) takes the 4 GPUs, for 100 s.
    # t=5  high (priority 1000) asks 4: Preempt mode; the preemptor evicts low (lower
    #      priority, same ClusterQueue). Kueue does not admit high in that cycle
    #      (scheduler.go processEntry: Preempt mode issues the preemptions and returns); low
    #      holds its quota until its pods have ended (jobframework's reconciler unsets
    #      QuotaReserved once the stopped job is inactive): 30 s here (EVICT_MS).
    # t=35 low's quota released, low requeued (its wait starts again now); high, the sticky
    #      head of a, admitted: waits 35 - 5 = 30 s. low cannot preempt high -> parked.
    # t=45 high ends -> low admitted again, waits 45 - 35 = 10 s; it runs 100 s from the
    #      start, ending at t=145.
    run = simulate(
        world(cq("a", 4, within="LowerPriority")),
        [job(0, "a", 4, 0, 100, priority=10), job(1, "a", 4, 5, 10, priority=1000)],
    )
    low, high = run.outcomes
    assert waits(run) == {"a/j0": [0, 10], "a/j1": [30]}
    assert (low.preempted, low.preempting, high.preempted, high.preempting) == (1, 0, 0, 1)
    assert (low.completed_at, high.completed_at) == (145_000, 45_000)


def test_reclaim_within_cohort_takes_back_lent_quota() -> None:
    # a and b: nominal 4 each in cohort c; b may reclaim (reclaimWithinCohort Any).
    # t=0  a/j0 asks 8: borrows all of b's 4 -> admitted, waits 0.
    # t=1  b/j1 asks 4, within b's nominal: a is over its nominal, so its Workload is a
    #      reclaim candidate -> a/j0 evicted; its quota is held until its pods end (30 s).
    # t=31 a/j0 released and requeued. Both heads are nominated against 8 free; b/j1 (no
    #      borrowing) goes first in the cycle and is admitted, waits 30 s; a/j0 no longer
    #      fits (4 < 8), and in the next cycle, with no preemption allowed, is parked.
    # t=41 b/j1 ends -> a/j0 admitted again, waits 41 - 31 = 10 s; ends at t=51.
    run = simulate(
        world(cq("a", 4, "c"), cq("b", 4, "c", reclaim="Any")),
        [job(0, "a", 8, 0, 10), job(1, "b", 4, 1, 10)],
    )
    assert waits(run) == {"a/j0": [0, 10], "b/j1": [30]}
    assert [o.preempted for o in run.outcomes] == [1, 0]
    assert [o.completed_at for o in run.outcomes] == [51_000, 41_000]


def strict_or_best_effort(strategy: str) -> Run:
    # a: nominal 4, alone.
    # t=0  j0 takes 2 for 10 s (ends t=10).
    # t=1  j1 asks 4: 2 free -> it does not fit.
    # t=2  j2 asks 1 (2 free) for 10 s.
    return simulate(
        world(cq("a", 4, strategy=strategy)),
        [job(0, "a", 2, 0, 10), job(1, "a", 4, 1, 10), job(2, "a", 1, 2, 10)],
    )


def test_strict_fifo_head_blocks_the_queue() -> None:
    # StrictFIFO: j1 stays the head and blocks j2, though 2 GPUs are free.
    # t=10 j0 ends: j1 admitted (waits 9 s); j2 needs 1 of 0 free.
    # t=20 j1 ends: j2 admitted, waits 20 - 2 = 18 s.
    assert waits(strict_or_best_effort("StrictFIFO")) == {
        "a/j0": [0],
        "a/j1": [9],
        "a/j2": [18],
    }


def test_best_effort_fifo_lets_a_smaller_workload_pass_the_head() -> None:
    # BestEffortFIFO: j1 is parked, so j2 is admitted at t=2 (waits 0) and ends at t=12.
    # t=10 j0 ends: 3 free < 4; t=12 j2 ends: j1 admitted, waits 12 - 1 = 11 s.
    assert waits(strict_or_best_effort("BestEffortFIFO")) == {
        "a/j0": [0],
        "a/j1": [11],
        "a/j2": [0],
    }


def test_a_gang_is_admitted_whole_or_not_at_all() -> None:
    # 3 pods of 2 GPUs on a nominal of 4: 6 > 4 ever -> never, not 2 of its 3 pods.
    gang = Job(0, "a", "gang", "a", 0, 0, 1000, 3, {GPU: Decimal(2)})
    run = simulate(world(cq("a", 4)), [gang])
    assert run.outcomes[0].waits == []
    assert run.peak == {}
    assert "current podset request (6) > maximum capacity (4)" in run.outcomes[0].message
