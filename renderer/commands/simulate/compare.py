"""Base against head: one trace replayed on two revisions of the platform, compared per team
and pool (`gpuplane simulate TRACE --base REF`, and the "Simulated waits" of `gpuplane diff
--trace TRACE`; docs/simulate.md#base-against-head).

The base revision is read as `diff` reads it (`renderer.commands.diff.checkout`); each side is
simulated by `simulate_rows`, the one simulator. A trace row whose namespace is a team
namespace on one side only is replayed on that side alone: its team is *absent* on the other
(a removed team's jobs are not submitted there, a new team's were not before), and the
comparison lists those namespaces. A row no side knows is `trace-unknown-name`, as in
`simulate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from renderer.commands.diff.checkout import checkout_base
from renderer.commands.simulate import simulate_rows
from renderer.commands.simulate.report import PoolReport, SimReport, TeamReport
from renderer.commands.simulate.setup import clusters, namespaces
from renderer.findings.diagnostics import Diagnostic, Location, Severity, sort_diagnostics
from renderer.findings.rules import document_rule
from renderer.inputs.trace import Trace
from renderer.model.platform import Platform, WaitGrowth
from renderer.pipeline import Loaded, load_platform

BASE_INVALID = "simulate-base-invalid"


@dataclass(frozen=True, slots=True)
class TeamSides:
    """A team's answer on each side; None where the team has no workload of the trace there
    (absent)."""

    name: str
    base: TeamReport | None
    head: TeamReport | None


@dataclass(frozen=True, slots=True)
class PoolSides:
    name: str
    cluster: str
    base: PoolReport | None
    head: PoolReport | None


@dataclass(frozen=True, slots=True)
class Comparison:
    trace: str
    workloads: int
    base_label: str
    base_commit: str | None
    teams: tuple[TeamSides, ...]
    pools: tuple[PoolSides, ...]
    only_base: tuple[str, ...] = ()
    """Namespaces of the trace that are team namespaces at the base only: their rows are
    replayed on the base alone."""
    only_head: tuple[str, ...] = ()
    """... in the head only."""


@dataclass(frozen=True, slots=True)
class WaitDelta:
    """Head minus base: waits in seconds, counts in workloads (admissions for `admissions`)."""

    p50: float
    p90: float
    p99: float
    max: float
    completed: int
    never: int
    preempted: int
    preempting: int

    @property
    def zero(self) -> bool:
        return not any(getattr(self, name) for name in self.__slots__)


def delta(team: TeamSides) -> WaitDelta | None:
    """The team's change from base to head; None when it is absent on a side."""
    before, after = team.base, team.head
    if before is None or after is None:
        return None
    return WaitDelta(
        p50=after.wait.p50 - before.wait.p50,
        p90=after.wait.p90 - before.wait.p90,
        p99=after.wait.p99 - before.wait.p99,
        max=after.wait.max - before.wait.max,
        completed=after.completed - before.completed,
        never=after.never - before.never,
        preempted=after.preempted - before.preempted,
        preempting=after.preempting - before.preempting,
    )


def over_bound(team: TeamSides, bound: WaitGrowth) -> bool:
    """Whether the change makes the team's p90 wait grow past the platform's bound: by more
    than `bound.seconds` and by more than `bound.ratio` times the base's p90; or leaves
    workloads never admitted that the base admitted (their wait has no end, and a p90 over
    the admitted ones does not see them)."""
    change = delta(team)
    if change is None or team.base is None:
        return False
    grew = change.p90 > bound.seconds and change.p90 > bound.ratio * team.base.wait.p90
    return grew or change.never > 0


def load_base(repo_root: Path, ref: str, into: Path) -> tuple[str, Loaded]:
    """The platform as it is at REF, read into `into` with `diff`'s checkout and loaded as
    `validate` loads it: (the commit REF names, what loading found). Raises
    `BaseRefError` for a bad REF or a folder outside git."""
    commit = checkout_base(repo_root, ref, into)
    return commit, load_platform(into)


def base_invalid(loaded: Loaded, ref: str, commit: str) -> Diagnostic:
    """The one finding for a base that does not validate: simulate needs both platforms."""
    errors = [d for d in sort_diagnostics(list(loaded.diagnostics)) if d.severity is Severity.ERROR]
    first = errors[0] if errors else None
    where = first.at if first is not None else Location(ref)
    said = f"; first: {first.at}: error[{first.rule}] {first.message}" if first else ""
    return Diagnostic(
        BASE_INVALID,
        f"the base {ref} ({commit[:12]}) does not validate: {len(errors)} error(s){said}",
        Location(f"{ref}:{where.file}", where.line, where.col),
        hint=f"compare with a base that validates, or see its errors with `git checkout {ref}` "
        "and `gpuplane validate`",
    )


def compare_trace(
    base: Platform, head: Platform, trace: Trace, label: tuple[str, str | None]
) -> Comparison | list[Diagnostic]:
    """The trace replayed on both platforms, per team and pool; `label` is the base's (ref,
    commit). Every problem of a row on either side otherwise."""
    known = {
        side: frozenset(namespaces(clusters(p))) for side, p in (("base", base), ("head", head))
    }
    only = {
        side: frozenset(known[side] - known[other])
        for side, other in (("base", "head"), ("head", "base"))
    }
    runs: dict[str, SimReport] = {}
    problems: dict[str, list[Diagnostic]] = {}
    for side, platform in (("base", base), ("head", head)):
        other = "head" if side == "base" else "base"
        rows = tuple(r for r in trace.rows if str(r.values["namespace"]) not in only[other])
        answer = simulate_rows(platform, replace(trace, rows=rows))
        if isinstance(answer, list):
            problems[side] = answer
        else:
            runs[side] = answer
    if problems:
        return _problems(problems, label[0])
    used = {str(r.values["namespace"]) for r in trace.rows}
    return Comparison(
        trace=trace.file,
        workloads=len(trace.rows),
        base_label=label[0],
        base_commit=label[1],
        teams=_teams(runs["base"], runs["head"]),
        pools=_pools(runs["base"], runs["head"]),
        only_base=tuple(sorted(only["base"] & used)),
        only_head=tuple(sorted(only["head"] & used)),
    )


def _problems(problems: Mapping[str, list[Diagnostic]], ref: str) -> list[Diagnostic]:
    """Every problem once: one that both sides have as it is, one of a single side saying
    which."""
    keys = {side: {_key(d) for d in found} for side, found in problems.items()}
    out: list[Diagnostic] = []
    for side, found in problems.items():
        other = keys.get("head" if side == "base" else "base")
        where = f"at the base {ref}" if side == "base" else "in the working tree"
        for d in found:
            if other is not None and _key(d) in other:
                out.append(d)
            else:
                out.append(replace(d, message=f"{d.message} ({where} only)"))
    return sort_diagnostics(out)


def _key(found: Diagnostic) -> tuple[str, Location, str]:
    return found.rule, found.at, found.message


def _teams(base: SimReport, head: SimReport) -> tuple[TeamSides, ...]:
    before = {t.name: t for t in base.teams}
    after = {t.name: t for t in head.teams}
    return tuple(
        TeamSides(name, before.get(name), after.get(name)) for name in sorted({*before, *after})
    )


def _pools(base: SimReport, head: SimReport) -> tuple[PoolSides, ...]:
    before: Mapping[tuple[str, str], PoolReport] = {(p.cluster, p.name): p for p in base.pools}
    after: Mapping[tuple[str, str], PoolReport] = {(p.cluster, p.name): p for p in head.pools}
    return tuple(
        PoolSides(name, cluster, before.get((cluster, name)), after.get((cluster, name)))
        for cluster, name in sorted({*before, *after})
    )


document_rule(
    BASE_INVALID,
    "inputs",
    """The base revision of `gpuplane simulate --base REF` does not validate.

The trace is replayed on the platform at REF and on the working tree, each as `render` would
render it; a base with errors has no platform to replay it on, so nothing is compared.

To satisfy it: name a base that validates in `--base` (a commit before the breakage, or the
merge base with the main branch), or fix the base's files there; `git checkout REF` and
`gpuplane validate` list its errors, and the finding quotes the first.""",
)
