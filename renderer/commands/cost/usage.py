"""What a usage export says, and the documented CSV form of it (docs/cost.md).

A usage file comes from a spreadsheet or a billing export, so it is read defensively: bounded
in size, every cell checked, every problem a finding at its line and column.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from renderer.commands.cost.rules import MAX_ROWS, MAX_USAGE_BYTES
from renderer.findings.diagnostics import Diagnostic, Location
from renderer.inputs.bounded import TextLimit, read_bounded_text
from renderer.inputs.csv_cells import split_cells

GPU_TERMS: Final = ("allocated_gpu_hours", "used_gpu_hours", "failed_gpu_hours")
"""The GPU-hour figures of one team on one pool: the export query's `term` label values too."""
MONEY_TERMS: Final = ("network", "storage", "support", "operations")
"""The guide's terms that are money amounts per team, in the pools' currency."""
TEAM_TERMS: Final = ("accepted_units", *MONEY_TERMS)
COLUMNS: Final = ("team", "pool", *GPU_TERMS, *TEAM_TERMS)
"""Every column the CSV may have; `team` is required, the others may be left out."""
PLATFORM_WIDE: Final = "*"
"""The team of the platform-wide row: its money is shared among teams by allocated GPU-hours."""

_NUMBER: Final = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class GpuHours:
    """One team's GPU-hours on one pool: allocated A, used U (busy, runs that did not fail),
    failed F (allocation held by runs that failed)."""

    team: str
    pool: str
    allocated: float
    used: float
    failed: float
    at: Location
    where: str = ""
    """How a finding names the figures besides their place: `row` or `series 3 {…}`."""
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class TeamTerms:
    """One team's terms other than GPU-hours; `accepted_units` None when not given."""

    team: str
    at: Location
    accepted_units: float | None = None
    network: float = 0.0
    storage: float = 0.0
    support: float = 0.0
    operations: float = 0.0


@dataclass(frozen=True, slots=True)
class Usage:
    """What one or more usage files say, with the findings that stopped parts of them."""

    hours: tuple[GpuHours, ...] = ()
    terms: tuple[TeamTerms, ...] = ()
    findings: tuple[Diagnostic, ...] = ()
    ending: str | None = None
    """When the window ends, where the export says (a JSON sample's timestamp, RFC 3339)."""
    sources: tuple[str, ...] = field(default=())


def finding(rule: str, message: str, at: Location, hint: str | None = None) -> Diagnostic:
    return Diagnostic(rule, message, at, hint=hint)


USAGE_LIMIT: Final = TextLimit(
    "cost-unreadable",
    MAX_USAGE_BYTES,
    "export one window of one platform: a usage export is a few kilobytes",
)


def read_text(path: Path, display: str) -> str | Diagnostic:
    """The usage export as text, or why it cannot be read (`read_bounded_text`)."""
    return read_bounded_text(path, display, USAGE_LIMIT)


def number(text: str, what: str, at: Location) -> float | Diagnostic:
    """A cell or sample value as a finite, non-negative float, or a `cost-number` finding."""
    if not _NUMBER.fullmatch(text):
        shown = text if len(text) <= 40 else text[:39] + "…"
        return finding(
            "cost-number",
            f"{what} {shown!r} is not a number",
            at,
            "a plain decimal number such as 12.5, without currency sign or thousands separator",
        )
    value = float(text)
    if not math.isfinite(value):
        return finding("cost-number", f"{what} {text!r} is too large to be a figure", at)
    if value < 0:
        return finding("cost-number", f"{what} is negative ({text})", at)
    return value + 0.0  # no negative zero


# --- the CSV form -----------------------------------------------------------------------------


def read_csv(path: Path, display: str | None = None) -> Usage:
    """A usage CSV: GPU-hours rows (with a pool) and team rows (without), or the findings."""
    display = display or str(path)
    text = read_text(path, display)
    if isinstance(text, Diagnostic):
        return Usage(findings=(text,), sources=(display,))
    findings: list[Diagnostic] = []
    hours: list[GpuHours] = []
    terms: list[TeamTerms] = []
    header: list[tuple[str, int]] | None = None
    rows = 0
    for number_, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        rows += 1
        if rows > MAX_ROWS + 1:
            findings.append(
                finding(
                    "cost-unreadable",
                    f"more than {MAX_ROWS:,} rows",
                    Location(display, number_, 1),
                )
            )
            break
        cells = split_cells(line)
        if isinstance(cells, tuple):
            findings.append(finding("cost-csv-row", cells[0], Location(display, number_, cells[1])))
            if header is None:
                break
            continue
        if header is None:
            problems = _header_problems(cells, display, number_)
            findings.extend(problems)
            if problems:
                break
            header = cells
            continue
        row = _row(header, cells, display, number_)
        if isinstance(row, list):
            findings.extend(row)
        elif isinstance(row, GpuHours):
            hours.append(row)
        else:
            terms.append(row)
    if header is None and not findings:
        findings.append(finding("cost-empty", "no header and no rows", Location(display, 1, 1)))
    return Usage(tuple(hours), tuple(terms), tuple(findings), sources=(display,))


def _header_problems(cells: list[tuple[str, int]], display: str, line: int) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    seen: set[str] = set()
    for name, col in cells:
        at = Location(display, line, col)
        if name not in COLUMNS:
            shown = name if len(name) <= 40 else name[:39] + "…"
            problems.append(
                finding(
                    "cost-csv-header",
                    f"unknown column {shown!r}",
                    at,
                    f"the columns are: {', '.join(COLUMNS)}",
                )
            )
        elif name in seen:
            problems.append(finding("cost-csv-header", f"column {name!r} appears twice", at))
        seen.add(name)
    if not problems and "team" not in seen:
        problems.append(
            finding(
                "cost-csv-header", "the header has no 'team' column", Location(display, line, 1)
            )
        )
    return problems


def _row(
    header: list[tuple[str, int]], cells: list[tuple[str, int]], display: str, line: int
) -> GpuHours | TeamTerms | list[Diagnostic]:
    if len(cells) != len(header):
        col = cells[len(header)][1] if len(cells) > len(header) else cells[-1][1]
        return [
            finding(
                "cost-csv-row",
                f"{len(cells)} cells where the header has {len(header)} columns",
                Location(display, line, col),
            )
        ]
    row = _Cells(
        {name: (value, col) for (name, _), (value, col) in zip(header, cells, strict=True)},
        display,
        line,
    )
    team, team_col = row.by_name["team"]
    if not team:
        return [finding("cost-csv-row", "no team", row.at(team_col))]
    figures, problems = _figures(row)
    if row.by_name.get("pool", ("", 1))[0]:
        return _gpu_hours(row, figures, problems)
    return _team_terms(row, figures, problems)


@dataclass(frozen=True, slots=True)
class _Cells:
    """One CSV row's cells by column name, (value, column), with where the row is."""

    by_name: dict[str, tuple[str, int]]
    display: str
    line: int

    def at(self, col: int = 1) -> Location:
        return Location(self.display, self.line, col)

    def has(self, name: str) -> bool:
        """Whether the row has column `name` and a value in it."""
        return bool(self.by_name.get(name, ("",))[0])


def _figures(row: _Cells) -> tuple[dict[str, float], list[Diagnostic]]:
    """The row's numbers by column, and a finding for each cell that is not one."""
    problems: list[Diagnostic] = []
    figures: dict[str, float] = {}
    for name, (value, col) in row.by_name.items():
        if name in ("team", "pool") or not value:
            continue
        got = number(value, name, row.at(col))
        if isinstance(got, Diagnostic):
            problems.append(got)
        else:
            figures[name] = got
    return figures, problems


def _gpu_hours(
    row: _Cells, figures: dict[str, float], problems: list[Diagnostic]
) -> GpuHours | list[Diagnostic]:
    """A row with a pool: one team's GPU-hours on it, and nothing else."""
    team, team_col = row.by_name["team"]
    misplaced = [n for n in TEAM_TERMS if row.has(n)]
    missing = [n for n in GPU_TERMS[:2] if not row.has(n)]
    if team == PLATFORM_WIDE:
        problems.append(
            finding(
                "cost-csv-row",
                "team '*' is the platform-wide row: it holds money terms, not GPU-hours",
                row.at(team_col),
                "give GPU-hours on each team's own rows",
            )
        )
    if misplaced:
        problems.append(
            finding(
                "cost-csv-row",
                f"a row with a pool gives GPU-hours only, not {', '.join(misplaced)}",
                row.at(row.by_name[misplaced[0]][1]),
                "put the team's other terms on a row without a pool",
            )
        )
    if missing:
        problems.append(
            finding("cost-csv-row", f"a row with a pool needs {' and '.join(missing)}", row.at())
        )
    if problems:
        return problems
    return GpuHours(
        team,
        row.by_name["pool"][0],
        figures["allocated_gpu_hours"],
        figures["used_gpu_hours"],
        figures.get("failed_gpu_hours", 0.0),
        row.at(),
        "row",
    )


def _team_terms(
    row: _Cells, figures: dict[str, float], problems: list[Diagnostic]
) -> TeamTerms | list[Diagnostic]:
    """A row without a pool: one team's terms other than GPU-hours, or the platform's."""
    team = row.by_name["team"][0]
    misplaced = [n for n in GPU_TERMS if row.has(n)]
    if misplaced:
        problems.append(
            finding(
                "cost-csv-row",
                f"{', '.join(misplaced)} without a pool",
                row.at(row.by_name[misplaced[0]][1]),
                "name the pool the GPU-hours were spent on",
            )
        )
    if team == PLATFORM_WIDE and row.has("accepted_units"):
        problems.append(
            finding(
                "cost-csv-row",
                "the platform-wide row (team '*') has no accepted units",
                row.at(row.by_name["accepted_units"][1]),
                "give accepted units on each team's own row",
            )
        )
    if problems:
        return problems
    return TeamTerms(
        team,
        row.at(),
        figures.get("accepted_units"),
        *(figures.get(n, 0.0) for n in MONEY_TERMS),
    )
