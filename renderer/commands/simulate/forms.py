"""The forms of `gpuplane simulate`'s answer: text tables, Markdown, and the JSON fields inside
the one envelope (docs/simulate.md#the-answer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from renderer.commands.simulate.report import SimReport
from renderer.findings.diagnostics import inert
from renderer.output import markdown_escape

TEAM_HEADER = ("team", "workloads", "p50 wait", "p90 wait", "p99 wait", "max wait",
               "completed", "never", "preempted", "preempting")  # fmt: skip
POOL_HEADER = ("pool", "cluster", "GPUs", "utilisation", "used GPU-h", "borrowed GPU-h",
               "idle GPU-h", "peak GPUs")  # fmt: skip
COHORT_HEADER = ("cohort", "cluster", "mean share", "deviation")

Table = tuple[str, Sequence[str], list[list[str]]]
"""A heading, the column headers and the rows of cells, each a string."""


def duration(seconds: float) -> str:
    """`0s`, `45s`, `12m30s`, `3h05m`: what a person reads in a wait."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:g}s" if seconds < 1 else f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _hours(value: float) -> str:
    return f"{value:,.1f}"


def tables(report: SimReport) -> list[Table]:
    teams = [
        [t.name, str(t.workloads), duration(t.wait.p50), duration(t.wait.p90),
         duration(t.wait.p99), duration(t.wait.max), str(t.completed), str(t.never),
         str(t.preempted), str(t.preempting)]
        for t in report.teams
    ]  # fmt: skip
    pools = [
        [p.name, p.cluster, f"{p.gpus:g}", f"{p.utilisation:.1%}", _hours(p.used_gpu_hours),
         _hours(p.borrowed_gpu_hours), _hours(p.idle_gpu_hours), f"{p.peak_gpus:g}"]
        for p in report.pools
    ]  # fmt: skip
    cohorts = [[c.name, c.cluster, f"{c.share:.1f}", f"{c.deviation:+.1f}"] for c in report.cohorts]
    return [
        ("Per team", TEAM_HEADER, teams),
        ("Per pool", POOL_HEADER, pools),
        ("Per cohort (DominantResourceShare, per mille)", COHORT_HEADER, cohorts),
    ]


def title(report: SimReport) -> str:
    return (
        f"simulate {report.trace}: {report.workloads} workloads over "
        f"{duration(report.span_s)} of simulated time"
    )


def never_lines(report: SimReport) -> list[str]:
    return [
        f"{t.name}: {count} never admitted: {message}"
        for t in report.teams
        for message, count in t.reasons
    ]


def text_tables(heading_tables: Sequence[Table]) -> list[str]:
    """Each table under its heading, the first column left-aligned and the others right-aligned,
    a blank line after each."""
    out = []
    for heading, header, rows in heading_tables:
        out.append(heading)
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                  for i, h in enumerate(header)]  # fmt: skip
        for line in (list(header), *rows):
            cells = [
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            ]
            out.append(inert("  ".join(cells).rstrip()))
        out.append("")
    return out


def markdown_tables(
    heading_tables: Sequence[Table], level: str = "###", left: int = 1
) -> list[str]:
    """Each table under a heading of `level`, its first `left` columns left-aligned and the
    others right-aligned, a blank line after each."""
    out = []
    for heading, header, rows in heading_tables:
        out.extend([f"{level} {markdown_escape.text(heading)}", ""])
        out.append("| " + " | ".join(markdown_escape.cell(h) for h in header) + " |")
        out.append("|" + "|".join("---" if i < left else "--:" for i in range(len(header))) + "|")
        out.extend("| " + " | ".join(markdown_escape.cell(c) for c in row) + " |" for row in rows)
        out.append("")
    return out


def report_text(report: SimReport) -> str:
    out = [inert(title(report)), ""]
    out += text_tables(tables(report))
    reasons = never_lines(report)
    if reasons:
        out.append("Never admitted (Kueue's message)")
        out.extend(inert(f"  {line}") for line in reasons)
        out.append("")
    return "\n".join(out)


def report_markdown(report: SimReport) -> str:
    out = [f"## {markdown_escape.text(title(report))}", ""]
    out += markdown_tables(tables(report), left=2)
    reasons = never_lines(report)
    if reasons:
        out.extend(["### Never admitted (Kueue's message)", ""])
        out.extend(f"- {markdown_escape.text(line)}" for line in reasons)
        out.append("")
    return "\n".join(out)


def _n(value: float) -> float:
    return round(value, 6) + 0.0


def report_json(report: SimReport) -> dict[str, Any]:
    """The documented shape (docs/simulate.md): seconds for waits, fractions 0..1 for
    utilisation, hours for GPU-hours."""
    return {
        "trace": report.trace,
        "workloads": report.workloads,
        "spanSeconds": _n(report.span_s),
        "teams": [
            {
                "name": t.name,
                "workloads": t.workloads,
                "wait": {
                    "p50": _n(t.wait.p50),
                    "p90": _n(t.wait.p90),
                    "p99": _n(t.wait.p99),
                    "max": _n(t.wait.max),
                },
                "admissions": t.wait.admissions,
                "completed": t.completed,
                "never": t.never,
                "neverReasons": [{"message": m, "workloads": n} for m, n in t.reasons],
                "preempted": t.preempted,
                "preempting": t.preempting,
            }
            for t in report.teams
        ],
        "pools": [
            {
                "name": p.name,
                "cluster": p.cluster,
                "gpus": _n(p.gpus),
                "utilisation": _n(p.utilisation),
                "usedGpuHours": _n(p.used_gpu_hours),
                "borrowedGpuHours": _n(p.borrowed_gpu_hours),
                "idleGpuHours": _n(p.idle_gpu_hours),
                "peakGpus": _n(p.peak_gpus),
            }
            for p in report.pools
        ],
        "cohorts": [
            {
                "name": c.name,
                "cluster": c.cluster,
                "share": _n(c.share),
                "deviation": _n(c.deviation),
            }
            for c in report.cohorts
        ],
    }
