"""The fast path's key for a fair-sharing preemption search (`Simulator.fair_key`, docs/simulate.md
"Speed"): what the search reads, the tree's usage, the request, and its candidates in their order
each as its ClusterQueue and usage, so a search at a state that differs only in which Workloads
run, not in what the search reads of them, is not run again. Worked by hand (counts of searches,
not timings), and fast against slow (`fast=False`) on random traces over a two-level Cohort tree
with fair sharing on."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.admission.scheduler import fairsharing
from renderer.admission.scheduler.snapshot import read_objects
from renderer.commands.simulate import engine
from renderer.commands.simulate.engine import Job, World, simulate
from tests.test_simulate import FLAVOR, GPU, cq, job, waits, world
from tests.test_simulate_fast import same
from tests.test_simulate_reuse import counting


def test_a_search_is_kept_for_other_workloads_of_the_same_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cohort co of a (4 GPUs, reclaims Any) and b (4 GPUs), fair sharing on, every weight 1:
    # co can lend 8 GPUs, a share is GPUs borrowed * 1000 / 8.
    # t=0   b1 (b, 6 GPUs, 10 s, priority 10) admitted: b borrows 2.
    # t=1   a1 (a, 7 GPUs, priority 0): 2 free, Preempt. Search 1: candidate b1 (b is over
    #       its nominal). a's share with a1 is 375 (3 borrowed), b's 250; S2-a: 375 <= b's
    #       share without b1 (0)? no; S2-b: 375 < 250? no. No target: a1 parked.
    # t=10  b1 ends (a1 requeued), b2 (b, 6 GPUs, 10 s, priority 10) submitted. Both fit at
    #       the cycle's start, both borrow: b2 first (higher priority), admitted; a1 fits no
    #       more and stays the head. Next cycle: a1 Preempt, search 2: the tree's usage is
    #       that of search 1 (b 6), and its one candidate b2 is of b with 6 GPUs as b1 was:
    #       the fast path reads search 1's answer (no target), though b2 is not b1 (another
    #       uid, admission time). a1 parked.
    # t=20  b2 ends: a1 admitted (waited 19 s).
    # Fast: 1 search; slow: 2.
    searches = counting(monkeypatch, fairsharing, "fair_preemptions")
    cohort = World(
        world(cq("a", 4, "co", reclaim="Any"), cq("b", 4, "co")).snapshot, fair_sharing=True
    )
    jobs = [job(0, "b", 6, 0, 10, 10), job(1, "a", 7, 1, 100), job(2, "b", 6, 10, 10, 10)]
    fast = simulate(cohort, jobs)
    assert len(searches) == 1
    assert waits(fast) == {"b/j0": [0], "a/j1": [19], "b/j2": [0]}
    searches.clear()
    slow = simulate(cohort, jobs, fast=False)
    assert len(searches) == 2
    same(fast, slow)


def test_a_search_is_kept_whatever_runs_beside_its_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cohort co of a (4 GPUs, reclaims Any), b (4) and c (2), fair sharing on, every weight 1:
    # co can lend 10 GPUs, a share is GPUs borrowed * 1000 / 10.
    # t=0   c1 (c, 2 GPUs, 10 s, priority 0) and b1 (b, 6 GPUs, 10 s, priority 10) admitted.
    # t=1   a1 (a, 7 GPUs, priority 0): 2 free, Preempt. Search 1: candidate b1 (b over its
    #       nominal; c is within its own, no candidate). a's share with a1 is 300, b's 200;
    #       S2-a: 300 <= 0? no; S2-b: 300 < 200? no. No target: a1 parked.
    # t=10  b1 and c1 end (a1 requeued); b2 (b, 6 GPUs, priority 10) and c2 (c, 2 GPUs,
    #       priority 5) submitted, 10 s each. All three fit at the cycle's start: c2 first (no
    #       borrowing), then b2 (higher priority than a1), both admitted; a1 fits no more and
    #       stays. Next cycle: a1 Preempt, search 2: the usage is search 1's, its one candidate
    #       b2 is of b with 6 GPUs as b1 was, but c2 is not c1 (another priority): the state of
    #       the tree differs, what the search reads does not (c2 is no candidate): search 1's
    #       answer, no target. a1 parked.
    # t=20  b2 and c2 end: a1 admitted (waited 19 s).
    # Fast: 1 search; slow: 2.
    searches = counting(monkeypatch, fairsharing, "fair_preemptions")
    queues = (cq("a", 4, "co", reclaim="Any"), cq("b", 4, "co"), cq("c", 2, "co"))
    cohort = World(world(*queues).snapshot, fair_sharing=True)
    jobs = [
        job(0, "c", 2, 0, 10),
        job(1, "b", 6, 0, 10, 10),
        job(2, "a", 7, 1, 100),
        job(3, "b", 6, 10, 10, 10),
        job(4, "c", 2, 10, 10, 5),
    ]
    fast = simulate(cohort, jobs)
    assert len(searches) == 1
    assert waits(fast) == {"c/j0": [0], "b/j1": [0], "a/j2": [19], "b/j3": [0], "c/j4": [0]}
    searches.clear()
    slow = simulate(cohort, jobs, fast=False)
    assert len(searches) == 2
    same(fast, slow)


def cohort(name: str, parent: str | None = None, gpus: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["parentName"] = parent
    if gpus:
        quota = {"name": GPU, "nominalQuota": gpus}
        spec["resourceGroups"] = [
            {"coveredResources": [GPU], "flavors": [{"name": "gpu", "resources": [quota]}]}
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": spec,
    }


def tree(evict_ms: int) -> World:
    """Root Cohort top (2 GPUs of its own) over Cohorts left (a, b) and right (c, d)."""
    objects = [
        FLAVOR,
        cohort("top", gpus=2),
        cohort("left", "top"),
        cohort("right", "top"),
        cq("a", 4, "left", within="LowerPriority", reclaim="Any", lending=2),
        cq("b", 3, "left", within="LowerPriority", reclaim="LowerPriority"),
        cq("c", 4, "right", reclaim="Any"),
        cq("d", 2, "right", within="LowerPriority", reclaim="Any"),
    ]
    snapshot = read_objects(objects)
    assert not snapshot.problems
    return World(snapshot, fair_sharing=True, evict_ms=evict_ms)


jobs_strategy = st.lists(
    st.tuples(
        st.sampled_from(("a", "b", "c", "d")),
        st.integers(1, 5),  # GPUs
        st.integers(0, 30),  # submitted at
        st.integers(1, 20),  # runs for
        st.sampled_from((0, 0, 10, 100)),  # priority
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(jobs_strategy, st.sampled_from((1000, engine.EVICT_MS)))
def test_fast_and_slow_paths_agree_with_fair_sharing_on_a_tree(
    specs: list[tuple[str, int, int, int, int]], evict_ms: int
) -> None:
    jobs = [
        Job(i, q, f"j{i}", q, p, s * 1000, d * 1000, 1, {GPU: Decimal(g)})
        for i, (q, g, s, d, p) in enumerate(specs)
    ]
    world_ = tree(evict_ms)
    same(simulate(world_, jobs), simulate(world_, jobs, fast=False))
