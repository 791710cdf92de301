"""`gpuplane cost` as text for people, Markdown for a pull request or job summary, and JSON for
tools (`report_json`'s shape is documented in docs/cost.md and versioned by `schemaVersion`).

Names come from the platform's files (the readers refuse any other), the window from the
command line; both go through `inert` in text, `renderer.output.markdown_escape` in Markdown, and the
JSON writer's escapes in JSON.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from renderer.commands.cost.model import TERM_WORDS, TERMS, CostReport, TeamCost
from renderer.commands.cost.usage import MONEY_TERMS
from renderer.findings.diagnostics import inert
from renderer.output import markdown_escape

FORMULA: Final = (
    "effective cost = (compute + network + storage + support + idle + failed runs + operations)"
    " / accepted units"
)


def money(value: float) -> str:
    """An amount with two decimals and thousands separated; below 0.01 two significant
    digits, so a cost per request does not read as 0.00."""
    if value == 0:
        return "0.00"
    if abs(value) < 0.01:
        return f"{value:.2g}"
    return f"{value:,.2f}"


def hours(value: float) -> str:
    return f"{value:,.2f}"


def percent(part: float | None) -> str:
    return "-" if part is None else f"{part * 100:.1f}%"


def per_unit(team: TeamCost, currency: str) -> str:
    """`USD 0.42 per 1,000 requests served`, or `no accepted units`."""
    value = team.per_unit
    if value is None:
        return "no accepted units"
    return f"{currency} {money(value)} {team.unit_words()}"


def title(report: CostReport) -> str:
    window = f"window {report.window}" if report.window else "window not stated"
    ending = f", ending {report.ending}" if report.ending else ""
    return f"Effective cost in {report.currency}, {window}{ending}"


def shared_sentence(report: CostReport) -> str | None:
    given = [(t, v) for t, v in report.platform_wide.items() if v]
    if not given:
        return None
    amounts = ", ".join(f"{TERM_WORDS[t]} {money(v)}" for t, v in given)
    return (
        f"The platform-wide row (team *: {amounts}) is shared among teams by their share of "
        "allocated GPU-hours."
    )


def _tables(report: CostReport) -> list[tuple[str, list[str], list[list[str]]]]:
    c = report.currency
    teams = [
        [
            t.team,
            money(t.total),
            per_unit(t, c),
            percent(t.share("idle")),
            percent(t.share("failed_runs")),
            TERM_WORDS[t.dominant] if t.dominant else "nothing",
        ]
        for t in report.teams
    ]
    terms = [[t.team, *(money(t.terms[x]) for x in TERMS), money(t.total)] for t in report.teams]
    pools = [
        [
            p.pool,
            p.cluster,
            money(p.rate),
            hours(p.hours("allocated")),
            hours(p.hours("used")),
            hours(p.hours("failed")),
            money(p.money("compute")),
            money(p.money("idle")),
            money(p.money("failed_runs")),
        ]
        for p in report.pools
    ]
    lines = [
        [
            line.team,
            line.pool,
            hours(line.allocated),
            hours(line.used),
            hours(line.failed),
            money(line.compute),
            money(line.idle),
            money(line.failed_runs),
        ]
        for t in report.teams
        for line in t.lines
    ]
    gpu_h = ["allocated GPU-h", "used GPU-h", "failed GPU-h"]
    return [
        (
            "Per team",
            ["team", f"total {c}", "cost per accepted unit", "idle", "failed runs", "dominated by"],
            teams,
        ),
        (f"Terms per team ({c})", ["team", *(TERM_WORDS[x] for x in TERMS), "total"], terms),
        (
            f"Per pool ({c})",
            ["pool", "cluster", f"{c}/GPU-hour", *gpu_h, "compute", "idle", "failed runs"],
            pools,
        ),
        (
            f"Per team and pool ({c})",
            ["team", "pool", *gpu_h, "compute", "idle", "failed runs"],
            lines,
        ),
    ]


_NOTE: Final = (
    "Idle and failed-run shares are parts of the team's GPU cost (compute + idle + failed runs)."
)


def report_text(report: CostReport) -> str:
    out = [inert(title(report)), FORMULA, ""]
    for heading, header, rows in _tables(report):
        out.append(heading)
        out.extend(_aligned(header, rows))
        if heading == "Per team":
            out.append(_NOTE)
            if sentence := shared_sentence(report):
                out.append(sentence)
        out.append("")
    return "\n".join(inert(line) for line in out)


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ["  (none)"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = [i > 0 and all(_FIGURE.fullmatch(r[i]) for r in rows) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return (
            "  "
            + "  ".join(
                cell.rjust(w) if right[i] else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()
        )

    return [line(header), *(line(r) for r in rows)]


def report_markdown(report: CostReport) -> str:
    out = [f"## {markdown_escape.text(title(report))}", "", markdown_escape.text(FORMULA), ""]
    for heading, header, rows in _tables(report):
        out.append(f"### {markdown_escape.text(heading)}")
        out.append("")
        out.append("| " + " | ".join(markdown_escape.cell(h) for h in header) + " |")
        out.append("|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|")
        out.extend("| " + " | ".join(_md(c) for c in row) + " |" for row in rows)
        out.append("")
        if heading == "Per team":
            out.extend([markdown_escape.text(_NOTE), ""])
            if sentence := shared_sentence(report):
                out.extend([markdown_escape.text(sentence), ""])
    return "\n".join(out)


_FIGURE: Final = re.compile(r"[0-9][0-9.,]*%?|-")


def _md(cell: str) -> str:
    """A figure as written (a number starting a cell is no list item inside a table), any other
    text escaped."""
    return cell if _FIGURE.fullmatch(cell) else markdown_escape.cell(cell)


def _n(value: float) -> float:
    return round(value, 6) + 0.0


def report_json(report: CostReport) -> dict[str, Any]:
    """The documented shape (docs/cost.md): money in `currency`, GPU-hours as hours, shares as
    fractions 0..1, null where a figure does not exist (no units, no GPU cost)."""
    return {
        "currency": report.currency,
        "window": report.window,
        "ending": report.ending,
        "formula": FORMULA,
        "platformWide": {
            "terms": {t: _n(v) for t, v in report.platform_wide.items()},
            "sharedBy": "allocated GPU-hours",
        },
        "teams": [
            {
                "team": t.team,
                "costCenter": t.cost_center,
                "unit": {"kind": t.unit, "per": t.per, "accepted": t.units},
                "total": _n(t.total),
                "costPerUnit": None if t.per_unit is None else _n(t.per_unit),
                "idleShare": None if t.share("idle") is None else _n(t.share("idle") or 0),
                "failedRunShare": (
                    None if t.share("failed_runs") is None else _n(t.share("failed_runs") or 0)
                ),
                "dominant": t.dominant,
                "terms": {x: _n(t.terms[x]) for x in TERMS},
                "sharedPart": {x: _n(t.shared[x]) for x in MONEY_TERMS},
                "allocatedGpuHours": _n(t.allocated),
            }
            for t in report.teams
        ],
        "pools": [
            {
                "pool": p.pool,
                "cluster": p.cluster,
                "gpuHour": p.rate,
                "allocatedGpuHours": _n(p.hours("allocated")),
                "usedGpuHours": _n(p.hours("used")),
                "failedGpuHours": _n(p.hours("failed")),
                "compute": _n(p.money("compute")),
                "idle": _n(p.money("idle")),
                "failed_runs": _n(p.money("failed_runs")),
            }
            for p in report.pools
        ],
        "teamPools": [
            {
                "team": line.team,
                "pool": line.pool,
                "gpuHour": line.rate,
                "allocatedGpuHours": _n(line.allocated),
                "usedGpuHours": _n(line.used),
                "failedGpuHours": _n(line.failed),
                "compute": _n(line.compute),
                "idle": _n(line.idle),
                "failed_runs": _n(line.failed_runs),
            }
            for t in report.teams
            for line in t.lines
        ],
    }
