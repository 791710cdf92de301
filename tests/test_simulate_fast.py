"""The simulator's fast path (`engine._Memo`: an answer reused while the usage, the running
Workloads and the instant are unchanged; a sample or a share computed once per change) against
the slow path that asks the engine every decision afresh: on random traces both give every job
the same waits, evictions, completion and Kueue message, and the same usage over time.

Traces are random over small Kueue setups written as Kueue objects (tests/test_simulate.py's
helpers): a Cohort of three ClusterQueues with lending limits, reclaim and in-queue preemption
by priority, StrictFIFO and BestEffortFIFO, with and without fair sharing; and the example
platform's own queues with a seeded synthetic trace (bench/trace.py)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.trace import trace_lines
from renderer.commands.simulate import engine
from renderer.commands.simulate.engine import Job, Run, World, simulate
from renderer.commands.simulate.setup import clusters, job_of, namespaces
from renderer.inputs.trace import read_trace
from renderer.pipeline import load_platform
from tests.conftest import REPO
from tests.test_simulate import GPU, cq, world

QUEUES = ("a", "b", "c")


def same(fast: Run, slow: Run) -> None:
    for f, s in zip(fast.outcomes, slow.outcomes, strict=True):
        got = (f.waits, f.preempted, f.preempting, f.completed_at, f.message, f.reason)
        want = (s.waits, s.preempted, s.preempting, s.completed_at, s.message, s.reason)
        assert got == want, f.job.key
    assert fast.end == slow.end
    assert fast.peak == slow.peak
    # the slow path samples at every instant, the fast one where the usage changed: the same
    # usage over time, each usage held as long
    assert (fast.held, fast.last, fast.since) == (slow.held, slow.last, slow.since)
    assert fast.shares.keys() == slow.shares.keys()
    for name, share in fast.shares.items():
        assert share == pytest.approx(slow.shares[name])


def setup(strategy: str, fair: bool, evict_ms: int = engine.EVICT_MS) -> World:
    queues = [
        cq("a", 4, "co", strategy=strategy, within="LowerPriority", reclaim="Any", lending=2),
        cq("b", 4, "co", strategy=strategy, within="LowerOrNewerEqualPriority", reclaim="Any"),
        cq("c", 2, "co", strategy=strategy, reclaim="LowerPriority"),
    ]
    plain = world(*queues)
    return World(plain.snapshot, fair_sharing=fair, evict_ms=evict_ms)


jobs_strategy = st.lists(
    st.tuples(
        st.sampled_from(QUEUES),
        st.integers(1, 6),  # GPUs: some more than a queue may ever hold
        st.integers(0, 40),  # submitted at
        st.integers(1, 30),  # runs for
        st.sampled_from((0, 0, 10, 100)),  # priority
    ),
    min_size=1,
    max_size=30,
)


def jobs_of(specs: list[tuple[str, int, int, int, int]]) -> list[Job]:
    return [
        Job(i, q, f"j{i}", q, p, s * 1000, d * 1000, 1, {GPU: Decimal(g)})
        for i, (q, g, s, d, p) in enumerate(specs)
    ]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    jobs_strategy,
    st.sampled_from(("BestEffortFIFO", "StrictFIFO")),
    st.booleans(),
    # an eviction's time, within a job's or longer. Not 1 ms: with fair sharing a preemption
    # loop (Kueue#13662) then turns every millisecond until the jobs beside it end, tens of
    # thousands of cycles, minutes for one example (found in a lone clone's `make test`)
    st.sampled_from((1000, engine.EVICT_MS)),
)
def test_fast_and_slow_paths_agree_on_random_traces(
    specs: list[tuple[str, int, int, int, int]], strategy: str, fair: bool, evict_ms: int
) -> None:
    jobs = jobs_of(specs)
    cohort = setup(strategy, fair, evict_ms)
    same(simulate(cohort, jobs), simulate(cohort, jobs, fast=False))


def test_fast_and_slow_paths_agree_on_the_example_platform(tmp_path: Path) -> None:
    # The example's fair-sharing queues, two clusters, bench/trace.py's seeded synthetic
    # trace, 100 jobs at its default rate: queues form, teams borrow and preempt.
    platform = load_platform(REPO).platform
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(trace_lines(100, 1)) + "\n", encoding="utf-8")
    trace = read_trace(path)
    assert not trace.findings
    setups = clusters(platform)
    places = namespaces(setups)
    jobs: dict[str, list[Job]] = {}
    for index, row in enumerate(trace.rows):
        found = job_of(row, index, platform, setups, places)
        assert not isinstance(found, list)
        jobs.setdefault(found[0], []).append(found[1])
    assert len(jobs) == 2
    evictions = 0
    for name, cluster_jobs in sorted(jobs.items()):
        world_ = setups[name].world
        fast = simulate(world_, cluster_jobs)
        same(fast, simulate(world_, cluster_jobs, fast=False))
        evictions += sum(o.preempted for o in fast.outcomes)
    assert evictions > 0  # the preemptor's paths were taken


def test_the_fast_path_reuses_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Not a timing: the memo is used at all. ClusterQueue a holds 4 GPUs, no preemption.
    # t=0   big (4 GPUs, 10 s) admitted: 1 assignment.
    # t=1   j1, j2, j3 (2 GPUs, 1 s each) queued; j1 is nominated (1 assignment), Preempt
    #       with no target, parked; j2 and j3 in the next cycles, at the same usage and
    #       instant: the memo answers both.
    # t=10  big ends, all three requeued: j1 admitted (1), then j2 at the new usage (1), then
    #       j3 parked again: the usage (4 GPUs) and shape of j1's nomination at t=1, kept per
    #       usage of the ClusterQueue's path, so no assignment.
    # t=11  j1 and j2 end: j3 admitted, at j1's usage and shape at t=10: none.
    # 4 assignments, where the slow path makes 8.
    calls = []
    real = engine.FlavorAssigner

    def counted(*args: object) -> object:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "FlavorAssigner", counted)
    cohort = World(world(cq("a", 4)).snapshot)
    jobs = [Job(0, "a", "big", "a", 0, 0, 10_000, 1, {GPU: Decimal(4)})] + [
        Job(i, "a", f"j{i}", "a", 0, 1000, 1000, 1, {GPU: Decimal(2)}) for i in range(1, 4)
    ]
    fast = simulate(cohort, jobs)
    assert len(calls) == 4
    calls.clear()
    slow = simulate(cohort, jobs, fast=False)
    assert len(calls) == 8
    assert [o.waits for o in fast.outcomes] == [[0], [9000], [9000], [10_000]]
    same(fast, slow)
