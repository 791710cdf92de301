"""What a simulation answers: per team its waits, completions, workloads never admitted (with
Kueue's reason) and preemptions; per pool its utilisation, borrowed and idle GPU-hours; per
Cohort its fair share (docs/simulate.md#the-answer)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from renderer.commands.simulate.engine import Outcome, Run
from renderer.commands.simulate.setup import ClusterSetup, gpu_resources

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True, slots=True)
class Waits:
    """Seconds from queued to admitted, one sample per admission (Kueue's
    `admission_wait_time_seconds`), nearest-rank percentiles; all 0 with no admission."""

    p50: float
    p90: float
    p99: float
    max: float
    admissions: int


@dataclass(frozen=True, slots=True)
class TeamReport:
    name: str
    workloads: int
    wait: Waits
    completed: int
    never: int
    reasons: tuple[tuple[str, int], ...]
    """Kueue's message for the workloads never admitted, with how many got it, most first."""
    preempted: int
    preempting: int
    samples: tuple[tuple[int, int], ...] = ()
    """Per admission, (when it was admitted, how long it waited), in milliseconds, by admission
    time: what the chart draws (`chart.py`); no text, Markdown or JSON field shows it."""


@dataclass(frozen=True, slots=True)
class PoolReport:
    name: str
    cluster: str
    gpus: float
    """Physical GPUs at the pool's largest size."""
    utilisation: float
    used_gpu_hours: float
    borrowed_gpu_hours: float
    idle_gpu_hours: float
    peak_gpus: float


@dataclass(frozen=True, slots=True)
class CohortReport:
    name: str
    cluster: str
    share: float
    """Time-weighted mean of its DominantResourceShare (Kueue's per-mille ratio over its fair
    weight)."""
    deviation: float
    """`share` minus the mean share of the Cohorts beside it (same parent)."""


@dataclass(frozen=True, slots=True)
class SimReport:
    trace: str
    workloads: int
    span_s: float
    teams: tuple[TeamReport, ...]
    pools: tuple[PoolReport, ...]
    cohorts: tuple[CohortReport, ...]


def percentile(values: Sequence[int], p: int) -> int:
    """Nearest rank: the smallest value with at least p% of the values at or below it."""
    if not values:
        return 0
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]


def waits(samples: Sequence[int]) -> Waits:
    ordered = sorted(samples)
    p50, p90, p99 = (percentile(ordered, p) / 1000 for p in PERCENTILES)
    return Waits(p50, p90, p99, (ordered[-1] if ordered else 0) / 1000, len(ordered))


def team_report(name: str, outcomes: Sequence[Outcome]) -> TeamReport:
    never = [o for o in outcomes if o.completed_at is None]
    reasons = Counter(o.message or "never reached the head of its queue" for o in never)
    return TeamReport(
        name=name,
        workloads=len(outcomes),
        wait=waits([w for o in outcomes for w in o.waits]),
        completed=len(outcomes) - len(never),
        never=len(never),
        reasons=tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        preempted=sum(o.preempted for o in outcomes),
        preempting=sum(o.preempting for o in outcomes),
        samples=tuple(sorted(s for o in outcomes for s in zip(o.admitted, o.waits, strict=True))),
    )


def pool_reports(setup: ClusterSetup, run: Run, span: int) -> list[PoolReport]:
    """Per pool of the cluster: GPU-seconds used and borrowed over [0, span), in physical
    GPUs, from the usage at each change."""
    out = []
    held = [*run.held, *(() if run.last is None else ((run.last, span - run.since),))]
    for pool, offered in sorted(setup.capacity.items()):
        shares = gpu_resources(offered)
        gpus = sum(
            (Fraction(n) * shares[r] for r, (n, _) in offered.items() if r in shares), Fraction(0)
        )
        used = borrowed = Fraction(0)
        for sample, length in held:
            used += _gpus(sample.usage, pool, shares) * length
            borrowed += _gpus(sample.borrowed, pool, shares) * length
        peak = _gpus(run.peak, pool, shares)
        hours = Fraction(1, 3_600_000)
        total = gpus * span
        out.append(
            PoolReport(
                name=pool,
                cluster=setup.name,
                gpus=float(gpus),
                utilisation=float(used / total) if total else 0.0,
                used_gpu_hours=float(used * hours),
                borrowed_gpu_hours=float(borrowed * hours),
                idle_gpu_hours=float(max(Fraction(0), total - used) * hours),
                peak_gpus=float(peak),
            )
        )
    return out


def _gpus(
    usage: Mapping[tuple[str, str], Decimal], pool: str, shares: Mapping[str, Fraction]
) -> Fraction:
    return sum(
        (Fraction(v) * shares[r] for (f, r), v in usage.items() if f == pool and r in shares),
        Fraction(0),
    )


def cohort_reports(setup: ClusterSetup, run: Run) -> list[CohortReport]:
    snapshot = setup.world.snapshot
    parents = {name: c.parent for name, c in snapshot.cohorts.items()}
    out = []
    for name, share in sorted(run.shares.items()):
        siblings = [
            run.shares[n] for n, p in parents.items() if p == parents.get(name) and n in run.shares
        ]
        mean = sum(siblings) / len(siblings) if siblings else share
        out.append(CohortReport(name, setup.name, round(share, 3), round(share - mean, 3)))
    return out
