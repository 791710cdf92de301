"""A workload trace for `gpuplane simulate` (docs/simulate.md): CSV under a header, or JSON
Lines, each row checked against `schemas/trace.schema.json` with every problem a finding at the
line and column of the offending cell.

The reader knows nothing of the platform: whether a namespace is a team's, a priority class or
a pool exists, is the simulator's to say (`trace-unknown-name`, documented here with the rest).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jsonschema import ValidationError

from renderer.findings.diagnostics import Diagnostic, Location
from renderer.findings.rules import document_rule
from renderer.inputs.bounded import TextLimit, read_bounded_text
from renderer.inputs.csv_cells import split_cells
from renderer.inputs.schema import schema_for

MAX_TRACE_BYTES: Final = 256 * 1024 * 1024
TRACE_LIMIT: Final = TextLimit(
    "trace-unreadable", MAX_TRACE_BYTES, "split the trace by time, and simulate each part"
)
"""A trace of a million workloads is about 80 MiB of CSV; a file over 256 MiB is refused before
it is read."""

MAX_ROWS: Final = 2_000_000
SCHEMA_KIND: Final = "Trace"
STAGE: Final = "inputs"

COLUMNS: Final = (
    "submit_s",
    "namespace",
    "name",
    "pods",
    "gpus_per_pod",
    "cpu_per_pod",
    "memory_per_pod",
    "duration_s",
    "priority",
    "pool",
    "gpu_resource",
)
REQUIRED: Final = COLUMNS[:8]
NUMERIC: Final = frozenset({"submit_s", "pods", "gpus_per_pod", "duration_s"})
"""The columns a CSV cell of which is read as a JSON number (the schema then judges it)."""
_NUMBER: Final = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One workload as the file gives it, typed as the schema says, and where each cell is."""

    values: Mapping[str, Any]
    at: Location
    cells: Mapping[str, Location]

    def where(self, column: str) -> Location:
        return self.cells.get(column, self.at)


@dataclass(frozen=True, slots=True)
class Trace:
    file: str
    rows: tuple[TraceRow, ...] = ()
    findings: tuple[Diagnostic, ...] = ()


def read_trace(path: Path, display: str | None = None) -> Trace:
    """The trace at `path`: JSON Lines when the name ends in `.jsonl` or `.ndjson`, or the first
    line that is neither blank nor a `#` comment starts with `{`; CSV otherwise."""
    shown = display or str(path)
    text = read_bounded_text(path, shown, TRACE_LIMIT)
    if isinstance(text, Diagnostic):
        return Trace(shown, findings=(text,))
    lines = text.split("\n")
    first = next((ln.strip() for ln in lines if ln.strip() and not _comment(ln)), "")
    as_json = path.suffix.lower() in (".jsonl", ".ndjson") or first.startswith("{")
    rows, findings = (_json_rows if as_json else _csv_rows)(lines, shown)
    findings.extend(_duplicates(rows))
    return Trace(shown, tuple(rows), tuple(findings))


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _numbered(lines: list[str]) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        if line.strip() and not _comment(line):
            yield number, line


def _csv_rows(lines: list[str], file: str) -> tuple[list[TraceRow], list[Diagnostic]]:
    rows: list[TraceRow] = []
    findings: list[Diagnostic] = []
    header: list[tuple[str, int]] | None = None
    for number, line in _numbered(lines):
        cells = split_cells(line)
        if isinstance(cells, tuple):
            findings.append(Diagnostic("trace-row", cells[0], Location(file, number, cells[1])))
            if header is None:
                break
            continue
        if header is None:
            header = cells
            problems = _header_problems(header, file, number)
            findings.extend(problems)
            if problems:
                break
            continue
        if len(rows) >= MAX_ROWS:
            findings.append(
                Diagnostic(
                    "trace-unreadable", f"more than {MAX_ROWS:,} rows", Location(file, number, 1)
                )
            )
            break
        if len(cells) != len(header):
            findings.append(
                Diagnostic(
                    "trace-row",
                    f"{len(cells)} cells, the header has {len(header)}",
                    Location(file, number, cells[-1][1] if len(cells) > len(header) else 1),
                    hint="one cell per header column; leave an optional cell empty, not out",
                )
            )
            continue
        values: dict[str, Any] = {}
        places: dict[str, Location] = {}
        for (column, _), (value, col) in zip(header, cells, strict=True):
            places[column] = Location(file, number, col)
            if value == "":
                continue
            values[column] = _cell(column, value)
        row = TraceRow(values, Location(file, number, 1), places)
        problems = list(_schema_problems(row))
        findings.extend(problems)
        if not problems:
            rows.append(row)
    if header is None and not findings:
        findings.append(
            Diagnostic(
                "trace-header",
                "no header line",
                Location(file, 1, 1),
                hint=f"the first line names the columns: {','.join(REQUIRED)}",
            )
        )
    return rows, findings


def _cell(column: str, value: str) -> Any:
    if column in NUMERIC and _NUMBER.fullmatch(value):
        number = float(value)
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return value


def _header_problems(header: list[tuple[str, int]], file: str, line: int) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    seen: set[str] = set()
    for name, col in header:
        at = Location(file, line, col)
        if name not in COLUMNS:
            found.append(
                Diagnostic(
                    "trace-header",
                    f"unknown column {name!r}",
                    at,
                    hint=f"the columns are {', '.join(COLUMNS)}",
                )
            )
        elif name in seen:
            found.append(Diagnostic("trace-header", f"column {name!r} appears twice", at))
        seen.add(name)
    missing = [c for c in REQUIRED if c not in seen]
    if missing:
        found.append(
            Diagnostic(
                "trace-header",
                f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                Location(file, line, 1),
                hint=f"the header names at least {','.join(REQUIRED)}",
            )
        )
    return found


def _json_rows(lines: list[str], file: str) -> tuple[list[TraceRow], list[Diagnostic]]:
    rows: list[TraceRow] = []
    findings: list[Diagnostic] = []
    for number, line in _numbered(lines):
        if len(rows) >= MAX_ROWS:
            findings.append(
                Diagnostic(
                    "trace-unreadable", f"more than {MAX_ROWS:,} rows", Location(file, number, 1)
                )
            )
            break
        try:
            data = json.loads(line, parse_constant=_no_constant)
        except ValueError as err:
            col = getattr(err, "colno", 1)
            message = getattr(err, "msg", str(err))
            findings.append(
                Diagnostic("trace-row", f"not JSON: {message}", Location(file, number, col))
            )
            continue
        start = len(line) - len(line.lstrip()) + 1
        if not isinstance(data, dict):
            findings.append(
                Diagnostic(
                    "trace-row",
                    "a line of a JSON Lines trace is one JSON object",
                    Location(file, number, start),
                )
            )
            continue
        places = {key: Location(file, number, _key_column(line, key, start)) for key in data}
        row = TraceRow(data, Location(file, number, start), places)
        problems = list(_schema_problems(row))
        findings.extend(problems)
        if not problems:
            rows.append(row)
    return rows, findings


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _key_column(line: str, key: str, default: int) -> int:
    """The column of the value of `key` on its line (where the key is written plainly)."""
    found = re.search(re.escape(json.dumps(key)) + r"\s*:\s*", line)
    return found.end() + 1 if found else default


def _schema_problems(row: TraceRow) -> Iterator[Diagnostic]:
    schema = schema_for(SCHEMA_KIND)
    values = row.values
    if schema.valid(values):
        return
    errors = sorted(schema.validator.iter_errors(values), key=lambda e: list(map(str, e.path)))
    for error in errors:
        yield _finding(row, error)


def _finding(row: TraceRow, error: ValidationError) -> Diagnostic:
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else "?"
        return Diagnostic(
            "trace-field",
            f"no {missing}",
            row.where(missing),
            hint=f"every workload gives {', '.join(REQUIRED)}",
        )
    if error.validator == "additionalProperties":
        extra = sorted(set(row.values) - set(COLUMNS))
        return Diagnostic(
            "trace-field",
            f"unknown field {', '.join(map(repr, extra))}",
            row.where(extra[0]) if extra else row.at,
            hint=f"the fields are {', '.join(COLUMNS)}",
        )
    column = str(error.path[0]) if error.path else ""
    value = error.instance
    shown = (
        repr(value) if not isinstance(value, str) or len(value) <= 40 else repr(value[:39] + "…")
    )
    description = _description(column)
    return Diagnostic(
        "trace-field",
        f"{column} {shown}: {_short(error)}",
        row.where(column),
        hint=description,
    )


def _short(error: ValidationError) -> str:
    kind = error.validator
    if kind == "type":
        wanted = error.validator_value
        names = wanted if isinstance(wanted, list) else [wanted]
        return f"expected {' or '.join(map(str, names))}"
    if kind == "minimum":
        return f"below {error.validator_value}"
    if kind == "maximum":
        return f"above {error.validator_value}"
    if kind == "pattern":
        return "not in the expected form"
    if kind == "maxLength":
        return f"longer than {error.validator_value} characters"
    return str(error.message)


def _description(column: str) -> str | None:
    props = schema_for(SCHEMA_KIND).raw.get("properties", {})
    found = props.get(column, {}).get("description")
    return str(found) if found else None


def _duplicates(rows: list[TraceRow]) -> Iterator[Diagnostic]:
    first: dict[tuple[str, str], Location] = {}
    for row in rows:
        key = (str(row.values["namespace"]), str(row.values["name"]))
        if key in first:
            yield Diagnostic(
                "trace-duplicate",
                f"workload {key[0]}/{key[1]} is given twice",
                row.where("name"),
                notes=(("first given here", first[key]),),
                hint="name each workload of a namespace once (add a suffix to repeated runs)",
            )
        else:
            first[key] = row.where("name")


for _rule, _doc in {
    "trace-unreadable": f"""A trace for `gpuplane simulate` cannot be read.

It is not a regular file, cannot be opened, is larger than {MAX_TRACE_BYTES // (1024 * 1024)} MiB,
holds more than {MAX_ROWS:,} workloads, or is not UTF-8 text.

To satisfy it: pass a CSV or JSON Lines trace as docs/simulate.md describes, saved as UTF-8
(`iconv -t UTF-8`); split a larger one by `submit_s`.""",
    "trace-header": """The header of a CSV trace names an unknown, repeated or missing column.

The first line that is neither blank nor a `#` comment is the header. A misspelt column would
otherwise be dropped, and every workload simulated without it.

To satisfy it: name the columns as `schemas/trace.schema.json` does, each once: `submit_s`,
`namespace`, `name`, `pods`, `gpus_per_pod`, `cpu_per_pod`, `memory_per_pod`, `duration_s`, and
optionally `priority`, `pool`, `gpu_resource`.""",
    "trace-row": """A row of a trace cannot be read as one workload.

A CSV row has one cell per header column (an optional cell is left empty, not out) and closes
every quote; a JSON Lines row is one JSON object on its line.

To satisfy it: give each workload one line with every column of the header, as docs/simulate.md
shows: `0,llm-train,pretrain,2,8,32,256Gi,3600,` leaves the last cell (`priority`) empty.""",
    "trace-field": """A field of a trace row is missing or out of its schema.

Every workload gives when it is submitted (`submit_s`, seconds), its `namespace` and `name`, its
`pods` (all admitted together), each pod's `gpus_per_pod`, `cpu_per_pod` and `memory_per_pod`
(Kubernetes quantities), and how long it runs (`duration_s`).

To satisfy it: write the field as `schemas/trace.schema.json` describes it (the finding's hint
quotes the field's description): whole numbers for `pods` and `gpus_per_pod`, quantities such
as `500m` and `64Gi`, names in lower case.""",
    "trace-duplicate": """A trace gives the same workload twice.

A workload is its namespace and name, as a Kueue Workload is; a second of one name would be
refused by the API server.

To satisfy it: give each workload of a `namespace` its own `name`, for example with a suffix
per run (`train-1`, `train-2`).""",
    "trace-unknown-name": """A trace names a namespace, priority class, pool or GPU resource the
platform does not have.

The simulation replays each workload in its namespace's ClusterQueue, at the value of its
WorkloadPriorityClass, on the flavors its pool selects: a name that does not exist would be
refused on the cluster.

To satisfy it: use a team namespace on a Kueue cluster (`teams/<team>.yaml` `namespaces`), a
WorkloadPriorityClass `<queue>-<priority>` of the queues of that cluster (or leave `priority`
empty for the team's own), a pool of the team's ClusterQueue, and a GPU resource one of its
pools offers.""",
}.items():
    document_rule(_rule, STAGE, _doc)


__all__ = ["COLUMNS", "REQUIRED", "Trace", "TraceRow", "read_trace"]
