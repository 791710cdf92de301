"""The report as plain text for people at a terminal (`gpuplane diff --format text`).

No tables: one line per finding, so it changes apart from the Markdown. Every line goes through
`inert_lines`: a value quoted from an input file cannot move the cursor or be read by the CI
runner as a workflow command.
"""

from __future__ import annotations

from renderer.commands.diff.findings import RISKS, DiffReport, SimulatedWaits, plural
from renderer.commands.diff.waits import bound_text
from renderer.commands.simulate.compare_forms import absent_lines, tables
from renderer.commands.simulate.forms import text_tables
from renderer.findings.diagnostics import inert_lines


def diff_text(report: DiffReport) -> str:
    """For people at a terminal: one line per finding, grouped by cluster and team."""
    if not report.findings:
        return (
            inert_lines(
                f"no changes: the {report.head.label} renders the same platform as {report.base.label}"
            )
            + "\n"
            + _waits(report.waits)
        )
    high, medium, low = (report.count(r) for r in RISKS)
    commit = f" ({report.base.commit[:12]})" if report.base.commit else ""
    lines = [
        f"{report.head.label} against {report.base.label}{commit}: "
        f"{high} high, {medium} medium, {low} low"
    ]
    if not report.base.valid:
        lines.append(
            f"note: the base does not validate ({plural(report.base.errors, 'error')}); "
            "rendered objects not compared"
        )
    current: tuple[str | None, str | None, bool] | None = None
    for f in report.findings:
        group = (f.cluster, f.team, f.code == "objects")
        if group != current:
            current = group
            where = f.cluster or "platform-wide"
            if f.team:
                where += f" / team {f.team}"
            elif f.code == "objects":
                where += " / rendered objects"
            lines += ["", where]
        at = f" ({f.at})" if f.at else ""
        lines.append(f"  {f.risk.value.upper():<6} {f.title}: {' '.join(f.summary.split())}{at}")
        if f.objects is not None:
            lines += [f"           deleted {p}" for p in f.objects.deleted]
        lines += [f"           {' '.join(d.split())}" for d in f.details]
    return inert_lines("\n".join(lines)) + "\n" + _waits(report.waits)


def _waits(waits: SimulatedWaits | None) -> str:
    """`--trace`: the teams' waits and the pools' use, base → head."""
    if waits is None:
        return ""
    comparison = waits.comparison
    if comparison is None:
        return inert_lines(f"\nSimulated waits: {waits.note or 'not simulated'}") + "\n"
    lines = [
        "",
        f"Simulated waits: {comparison.trace} ({plural(comparison.workloads, 'workload')}); "
        f"high where a team's p90 grows by {bound_text(waits.bound)}",
        "",
        *text_tables(tables(comparison)),
        *absent_lines(comparison),
    ]
    return inert_lines("\n".join(lines).rstrip("\n")) + "\n"
