"""Properties of `gpuplane simulate` that hold for every trace: more nominal quota never makes a
StrictFIFO team wait longer (each job's start is monotone in the quota: see the argument
below), and no flavor ever holds more than its cohort tree's quota, nor a pool more GPUs
than it has."""

from __future__ import annotations

from decimal import Decimal
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.commands.simulate import simulate_rows
from renderer.commands.simulate.engine import Job, simulate
from renderer.commands.simulate.report import SimReport
from renderer.findings.diagnostics import Location
from renderer.inputs.trace import Trace, TraceRow
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.conftest import REPO
from tests.test_simulate import GPU, cq, world

jobs_strategy = st.lists(
    st.tuples(
        st.integers(1, 4),  # GPUs
        st.integers(0, 50),  # submitted at
        st.integers(1, 30),  # runs for
    ),
    min_size=1,
    max_size=25,
)


def jobs_of(specs: list[tuple[int, int, int]], queue: str = "a") -> list[Job]:
    return [
        Job(i, queue, f"j{i}", queue, 0, s * 1000, d * 1000, 1, {GPU: Decimal(g)})
        for i, (g, s, d) in enumerate(specs)
    ]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(jobs_strategy, st.integers(4, 8), st.integers(1, 6))
def test_more_nominal_never_lengthens_a_strict_fifo_teams_waits(
    specs: list[tuple[int, int, int]], nominal: int, more: int
) -> None:
    # One ClusterQueue, StrictFIFO, one priority: jobs start in submission order. With more
    # quota, by induction each job starts no later: at its old start every earlier job runs
    # only if it ran then before (it started no later, so it ends no later), and there is more
    # quota, so it fits at that instant, or at the event before it.
    jobs = jobs_of(sorted(specs, key=lambda s: s[1]))
    small = simulate(world(cq("a", nominal, strategy="StrictFIFO")), jobs)
    large = simulate(world(cq("a", nominal + more, strategy="StrictFIFO")), jobs)
    for before, after in zip(small.outcomes, large.outcomes, strict=True):
        assert after.waits[0] <= before.waits[0], before.job.key


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    jobs_strategy,
    jobs_strategy,
    st.lists(st.sampled_from([0, 10, 1000]), min_size=25, max_size=25),
)
def test_no_flavor_holds_more_than_its_cohorts_quota(
    a: list[tuple[int, int, int]], b: list[tuple[int, int, int]], priorities: list[int]
) -> None:
    jobs = [
        Job(i, j.namespace, j.name, j.cluster_queue, priorities[i % 25], j.submit, j.duration,
            j.pods, j.per_pod)
        for i, j in enumerate([*jobs_of(a, "a"), *[
            Job(0, "b", f"k{i}", "b", 0, s * 1000, d * 1000, 1, {GPU: Decimal(g)})
            for i, (g, s, d) in enumerate(b)
        ]])
    ]  # fmt: skip
    queues = (
        cq("a", 4, "c", lending=2, within="LowerPriority", reclaim="Any"),
        cq("b", 5, "c", within="LowerPriority", reclaim="LowerPriority"),
    )
    run = simulate(world(*queues), jobs)
    assert all(s.usage.get(("gpu", GPU), Decimal(0)) <= 9 for s in run.samples)
    assert all(o.completed_at is not None for o in run.outcomes)  # every job fits alone


@cache
def example() -> Platform:
    loaded = load_platform(REPO)
    return loaded.platform


ROW = st.fixed_dictionaries(
    {
        "submit_s": st.integers(0, 7200),
        "namespace": st.sampled_from(["llm-train", "vision-train", "recsys-train", "llm-serve"]),
        "pods": st.integers(1, 4),
        "gpus_per_pod": st.sampled_from([1, 2, 4, 8]),
        "cpu_per_pod": st.sampled_from(["4", "8"]),
        "memory_per_pod": st.sampled_from(["32Gi", "64Gi"]),
        "duration_s": st.integers(60, 7200),
        "priority": st.sampled_from(["", "prod-production", "prod-preemptible"]),
    }
)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.lists(ROW, min_size=1, max_size=40))
def test_no_pool_of_the_example_is_ever_above_its_gpus(rows: list[dict[str, object]]) -> None:
    trace = Trace(
        "trace.csv",
        tuple(
            TraceRow({**r, "name": f"w{i}"}, Location("trace.csv", i + 2, 1), {})
            for i, r in enumerate(rows)
        ),
    )
    report = simulate_rows(example(), trace)
    assert isinstance(report, SimReport)
    for pool in report.pools:
        assert pool.peak_gpus <= pool.gpus, pool.name
        assert 0 <= pool.utilisation <= 1
    assert sum(t.workloads for t in report.teams) == len(rows)
