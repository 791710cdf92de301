"""`gpuplane diff --trace TRACE`: the trace replayed on both revisions (`gpuplane simulate
--base`'s comparison), each team whose waits change a finding rated against the platform's
bound on p90 wait growth (`spec.simulate.p90WaitGrowth` of the base's gpuplane.yaml;
docs/diff.md#simulated-waits).

- **high**: the team's p90 wait grows by more than the bound's `seconds` and more than its
  `ratio` times the base's p90, or workloads the base admitted are never admitted;
- **medium**: a wait percentile grows within the bound, fewer complete, or more are preempted;
- **low**: waits only shrink (or other figures move the better way).
"""

from __future__ import annotations

from renderer.commands.diff.findings import Finding, Risk, SimulatedWaits
from renderer.commands.diff.revision import Revision
from renderer.commands.simulate.compare import (
    TeamSides,
    WaitDelta,
    compare_trace,
    delta,
    over_bound,
)
from renderer.commands.simulate.compare_forms import signed_duration
from renderer.commands.simulate.forms import duration
from renderer.inputs.trace import Trace
from renderer.model.platform import WaitGrowth

CODE = "simulated-wait"


def bound_of(base: Revision) -> WaitGrowth:
    """The base's bound: a change cannot loosen the bound it is judged by (a change to it is
    reported as `repository-changed`)."""
    repository = base.platform.repository
    return repository.wait_growth if repository is not None else WaitGrowth()


def bound_text(bound: WaitGrowth) -> str:
    return f"more than {duration(bound.seconds)} and more than {bound.ratio:.0%} of the base's p90"


def simulated_waits(
    base: Revision, head: Revision, trace: Trace
) -> tuple[list[Finding], SimulatedWaits]:
    """The findings and the section of `--trace`."""
    bound = bound_of(base)
    if not base.side.valid:
        note = "not simulated: the base does not validate, so it has no platform to replay on"
        return [], SimulatedWaits(bound, None, note)
    label = (base.side.label, base.side.commit)
    answer = compare_trace(base.platform, head.platform, trace, label)
    if isinstance(answer, list):
        return [], SimulatedWaits(bound, None, problems=tuple(answer))
    found = [f for team in answer.teams if (f := _finding(team, bound)) is not None]
    return found, SimulatedWaits(bound, answer)


def risk_of(team: TeamSides, change: WaitDelta, bound: WaitGrowth) -> Risk:
    if over_bound(team, bound):
        return Risk.HIGH
    waits_grew = any(getattr(change, n) > 0 for n in ("p50", "p90", "p99", "max"))
    if waits_grew or change.completed < 0 or change.preempted > 0:
        return Risk.MEDIUM
    return Risk.LOW


def _finding(team: TeamSides, bound: WaitGrowth) -> Finding | None:
    change = delta(team)
    if change is None or team.base is None or team.head is None or change.zero:
        return None
    risk = risk_of(team, change, bound)
    before, after = team.base, team.head
    summary = (
        f"p90 wait {duration(before.wait.p90)} → {duration(after.wait.p90)} "
        f"({signed_duration(change.p90)})"
    )
    if risk is Risk.HIGH:
        summary += f": over the platform's bound ({bound_text(bound)})"
        if change.never > 0:
            summary += f"; {change.never} more never admitted"
    details = [
        f"{name} wait {duration(getattr(before.wait, name))} → "
        f"{duration(getattr(after.wait, name))} ({signed_duration(getattr(change, name))})"
        for name in ("p50", "p99", "max")
        if getattr(change, name)
    ]
    for label, name in (("completed", "completed"), ("never admitted", "never"),
                        ("preempted", "preempted")):  # fmt: skip
        if getattr(change, name):
            details.append(f"{label} {getattr(before, name)} → {getattr(after, name)}")
    details += [f"never admitted ({n}): {message}" for message, n in after.reasons]
    return Finding(risk, CODE, None, team.name, team.name, summary, tuple(details))
