"""`gpuplane simulate TRACE`: replay a workload trace against the platform's queues with Kueue's
admission engine, on a simulated clock (docs/simulate.md).

`simulate_trace` reads the trace, resolves each workload to its cluster's ClusterQueue and
priority (`setup`), runs each cluster's `engine.Simulator`, and sums the outcomes (`report`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from renderer.commands.simulate.engine import Job, Outcome, simulate
from renderer.commands.simulate.report import (
    CohortReport,
    PoolReport,
    SimReport,
    cohort_reports,
    pool_reports,
    team_report,
)
from renderer.commands.simulate.setup import clusters, job_of, namespaces
from renderer.findings.diagnostics import Diagnostic, sort_diagnostics
from renderer.inputs.trace import Trace, read_trace
from renderer.model.platform import Platform


def simulate_trace(
    platform: Platform, path: Path, display: str | None = None
) -> SimReport | list[Diagnostic]:
    """The report of the trace at `path`, or every problem of the trace."""
    trace = read_trace(path, display)
    if trace.findings:
        return sort_diagnostics(list(trace.findings))
    return simulate_rows(platform, trace)


def simulate_rows(platform: Platform, trace: Trace) -> SimReport | list[Diagnostic]:
    setups = clusters(platform)
    places = namespaces(setups)
    problems: list[Diagnostic] = []
    jobs: dict[str, list[Job]] = defaultdict(list)
    for index, row in enumerate(trace.rows):
        found = job_of(row, index, platform, setups, places)
        if isinstance(found, list):
            problems.extend(found)
        else:
            jobs[found[0]].append(found[1])
    if problems:
        return sort_diagnostics(problems)
    by_team: dict[str, list[Outcome]] = defaultdict(list)
    pools: list[PoolReport] = []
    cohorts: list[CohortReport] = []
    runs = {name: simulate(setups[name].world, jobs[name]) for name in sorted(jobs)}
    span = max((run.end for run in runs.values()), default=0)
    teams_of = {plan.name: plan.team.name for setup in setups.values() for plan in setup.plans}
    for name, run in runs.items():
        for outcome in run.outcomes:
            by_team[teams_of[outcome.job.cluster_queue]].append(outcome)
        pools.extend(pool_reports(setups[name], run, span))
        cohorts.extend(cohort_reports(setups[name], run))
    return SimReport(
        trace=trace.file,
        workloads=len(trace.rows),
        span_s=span / 1000,
        teams=tuple(team_report(t, by_team[t]) for t in sorted(by_team)),
        pools=tuple(pools),
        cohorts=tuple(cohorts),
    )


__all__ = ["SimReport", "simulate_rows", "simulate_trace"]
