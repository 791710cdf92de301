"""The guide's effective cost, from a usage export and the pools' rates.

`effective cost = (compute + network + storage + support + idle + failed_runs + operations) /
accepted_workload_units`, per team. On each pool, at its rate r (`spec.cost.gpuHour`), a team's
allocated A, used U and failed F GPU-hours give compute = U·r, idle = (A - U - F)·r and failed
runs = F·r, so the three add up to what the allocation cost (A·r). Network, storage, support and
operations are the team's own amounts, plus its share of the platform-wide row (team `*`) by
its share of all allocated GPU-hours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from renderer.commands.cost.usage import MONEY_TERMS, PLATFORM_WIDE, GpuHours, TeamTerms, Usage
from renderer.findings.diagnostics import Diagnostic, Location, closest
from renderer.model.choices import AcceptedUnit
from renderer.model.metrics import ACCEPTED_UNITS
from renderer.model.platform import Platform

TERMS: Final = ("compute", "network", "storage", "support", "idle", "failed_runs", "operations")
"""The guide's seven terms, in its order (which also breaks ties for what dominates)."""
TERM_WORDS: Final = MappingProxyType({t: t.replace("_", " ") for t in TERMS})

UNITS_PLURAL: Final[Mapping[AcceptedUnit, str]] = MappingProxyType(
    {
        "completed-training-runs": "completed training runs",
        "accepted-model-outputs": "accepted model outputs",
        "requests-served": "requests served",
    }
)
"""`ACCEPTED_UNITS` when there are several (the keys are the same; tests/test_cost.py checks)."""


@dataclass(frozen=True, slots=True)
class PoolLine:
    """One team's GPU-hours on one pool, priced."""

    team: str
    pool: str
    rate: float
    allocated: float
    used: float
    failed: float

    @property
    def compute(self) -> float:
        return self.used * self.rate

    @property
    def idle(self) -> float:
        return (self.allocated - self.used - self.failed) * self.rate

    @property
    def failed_runs(self) -> float:
        return self.failed * self.rate

    @property
    def gpu_cost(self) -> float:
        return self.allocated * self.rate


@dataclass(frozen=True, slots=True)
class TeamCost:
    team: str
    cost_center: str
    unit: AcceptedUnit
    per: int
    units: float | None
    """Accepted units in the window; None when the export gives none."""
    lines: tuple[PoolLine, ...]
    terms: Mapping[str, float]
    """Each of `TERMS`, the shared part of the platform-wide row included."""
    shared: Mapping[str, float]
    """The part of each money term that is this team's share of the platform-wide row."""

    @property
    def total(self) -> float:
        return sum(self.terms[t] for t in TERMS)

    @property
    def gpu_cost(self) -> float:
        return self.terms["compute"] + self.terms["idle"] + self.terms["failed_runs"]

    @property
    def allocated(self) -> float:
        return sum(line.allocated for line in self.lines)

    @property
    def per_unit(self) -> float | None:
        """The effective cost of `per` accepted units; None without units (never a division
        by zero)."""
        if not self.units:
            return None
        return self.total / (self.units / self.per)

    def share(self, term: str) -> float | None:
        """`term` as a part of the team's GPU cost (compute + idle + failed runs)."""
        return self.terms[term] / self.gpu_cost if self.gpu_cost > 0 else None

    @property
    def dominant(self) -> str | None:
        """The largest term (the first in the formula's order on a tie); None at no cost."""
        if self.total <= 0:
            return None
        return max(TERMS, key=lambda t: (self.terms[t], -TERMS.index(t)))

    def unit_words(self) -> str:
        """`per 1,000 requests served`, `per completed training run`."""
        if self.per == 1:
            return f"per {ACCEPTED_UNITS[self.unit]}"
        return f"per {self.per:,} {UNITS_PLURAL[self.unit]}"


@dataclass(frozen=True, slots=True)
class PoolCost:
    pool: str
    cluster: str
    rate: float
    lines: tuple[PoolLine, ...]

    def hours(self, what: str) -> float:
        return float(sum(getattr(line, what) for line in self.lines))

    def money(self, term: str) -> float:
        return float(sum(getattr(line, term) for line in self.lines))


@dataclass(frozen=True, slots=True)
class CostReport:
    currency: str
    window: str | None
    ending: str | None
    teams: tuple[TeamCost, ...]
    pools: tuple[PoolCost, ...]
    platform_wide: Mapping[str, float]
    """The platform-wide row's money terms (zero when there is none)."""


def build(platform: Platform, usage: Usage, window: str | None) -> CostReport | list[Diagnostic]:
    """The report, or every finding that stops it (the readers' first)."""
    findings = list(usage.findings)
    hours = _known_hours(platform, usage.hours, findings)
    terms = _known_terms(platform, usage.terms, findings)
    if not usage.hours and not usage.terms and not findings:
        where = usage.sources[0] if usage.sources else "usage"
        findings.append(
            Diagnostic("cost-empty", "no GPU-hours and no team terms", Location(where, 1, 1))
        )
    currency = _currency(platform, hours, findings)
    platform_wide = {t: 0.0 for t in MONEY_TERMS}
    own: dict[str, TeamTerms] = {}
    for row in terms:
        if row.team == PLATFORM_WIDE:
            platform_wide = {t: getattr(row, t) for t in MONEY_TERMS}
        else:
            own[row.team] = row
    allocated_total = sum(h.allocated for h in hours)
    if allocated_total <= 0 and any(platform_wide.values()):
        at = next(r.at for r in terms if r.team == PLATFORM_WIDE)
        findings.append(
            Diagnostic("cost-unshared", "no team allocated a GPU-hour: nothing to share by", at)
        )
    if findings or currency is None:
        return findings
    teams = sorted({h.team for h in hours} | set(own))
    lines = [
        PoolLine(h.team, h.pool, platform.pools[h.pool].gpu_hour, h.allocated, h.used, h.failed)
        for h in sorted(hours, key=lambda h: (h.team, h.pool))
    ]
    costs = []
    for name in teams:
        team = platform.teams[name]
        mine = tuple(line for line in lines if line.team == name)
        allocated = sum(line.allocated for line in mine)
        part = allocated / allocated_total if allocated_total > 0 else 0.0
        shared = {t: platform_wide[t] * part for t in MONEY_TERMS}
        given = own.get(name)
        figures = {
            "compute": sum(line.compute for line in mine),
            "idle": sum(line.idle for line in mine),
            "failed_runs": sum(line.failed_runs for line in mine),
        }
        for t in MONEY_TERMS:
            figures[t] = (getattr(given, t) if given else 0.0) + shared[t]
        costs.append(
            TeamCost(
                name,
                team.cost_center,
                team.accepted_unit,
                team.accepted_per,
                given.accepted_units if given else None,
                mine,
                MappingProxyType(figures),
                MappingProxyType(shared),
            )
        )
    pools = tuple(
        PoolCost(
            name,
            platform.pools[name].cluster,
            platform.pools[name].gpu_hour,
            tuple(line for line in lines if line.pool == name),
        )
        for name in sorted({line.pool for line in lines})
    )
    return CostReport(
        currency,
        window,
        usage.ending,
        tuple(costs),
        pools,
        MappingProxyType(platform_wide),
    )


def _unknown(
    kind: str, name: str, known: Mapping[str, object], what: str, at: Location
) -> Diagnostic:
    close = closest(name, known)
    hint = f"did you mean '{close}'?" if close else f"declare it in {kind}s/"
    shown = name if len(name) <= 60 else name[:59] + "…"
    return Diagnostic(
        "cost-unknown-name", f"{what}: the platform declares no {kind} {shown!r}", at, hint=hint
    )


def _known_hours(
    platform: Platform, rows: tuple[GpuHours, ...], findings: list[Diagnostic]
) -> list[GpuHours]:
    kept: list[GpuHours] = []
    first: dict[tuple[str, str], Location] = {}
    for row in rows:
        problems = []
        if row.team not in platform.teams:
            problems.append(_unknown("team", row.team, platform.teams, row.where, row.at))
        pool = platform.pools.get(row.pool)
        if pool is None:
            problems.append(_unknown("pool", row.pool, platform.pools, row.where, row.at))
        elif row.cluster is not None and row.cluster != pool.cluster:
            problems.append(
                Diagnostic(
                    "cost-wrong-cluster",
                    f"{row.where}: pool {row.pool!r} is on cluster {pool.cluster!r}, "
                    f"the series says {row.cluster[:60]!r}",
                    row.at,
                    notes=((f"pool {row.pool!r} is declared here", pool.origin.location),),
                )
            )
        key = (row.team, row.pool)
        if key in first and not problems:
            problems.append(
                Diagnostic(
                    "cost-duplicate",
                    f"a second GPU-hours row for team {row.team!r} on pool {row.pool!r}",
                    row.at,
                    notes=(("the first", first[key]),),
                )
            )
        first.setdefault(key, row.at)
        if not problems and row.used + row.failed > row.allocated * (1 + 1e-9):
            problems.append(
                Diagnostic(
                    "cost-hours",
                    f"{row.where}: team {row.team!r} on pool {row.pool!r}: used {row.used:g} + "
                    f"failed {row.failed:g} GPU-hours exceed the {row.allocated:g} allocated",
                    row.at,
                    hint="export the three figures from the same window and recording rules",
                )
            )
        findings.extend(problems)
        if not problems:
            kept.append(row)
    return kept


def _known_terms(
    platform: Platform, rows: tuple[TeamTerms, ...], findings: list[Diagnostic]
) -> list[TeamTerms]:
    kept: list[TeamTerms] = []
    first: dict[str, Location] = {}
    for row in rows:
        if row.team in first:
            findings.append(
                Diagnostic(
                    "cost-duplicate",
                    f"a second row of terms for team {row.team!r}",
                    row.at,
                    notes=(("the first", first[row.team]),),
                )
            )
            continue
        first[row.team] = row.at
        if row.team != PLATFORM_WIDE and row.team not in platform.teams:
            findings.append(_unknown("team", row.team, platform.teams, "row", row.at))
            continue
        kept.append(row)
    return kept


def _currency(platform: Platform, hours: list[GpuHours], findings: list[Diagnostic]) -> str | None:
    """The one currency of the pools the usage involves (of every pool when it names none)."""
    names = sorted({h.pool for h in hours}) or sorted(platform.pools)
    by_currency: dict[str, str] = {}
    for name in names:
        by_currency.setdefault(platform.pools[name].currency, name)
    if len(by_currency) == 1:
        return next(iter(by_currency))
    if not by_currency:
        return None
    (c1, p1), (c2, p2) = list(by_currency.items())[:2]
    findings.append(
        Diagnostic(
            "cost-mixed-currency",
            f"pool {p1!r} is priced in {c1} and pool {p2!r} in {c2}: the terms cannot be added",
            platform.pools[p2].origin.at("spec", "cost", "currency"),
            notes=((f"pool {p1!r}", platform.pools[p1].origin.at("spec", "cost", "currency")),),
            hint="one currency per usage export",
        )
    )
    return None
