"""Gavel's per-virtual-cluster jobs of Microsoft's Philly trace (`scheduler/traces/msr/seed=0/
<vc>.trace` of stanford-futuredata/gavel) as `gpuplane simulate` workloads
(docs/simulate.md#philly).

A `.trace` file is one virtual cluster (its name is the VC's hash): no header, seven
tab-separated fields a line, as Gavel's `parse_trace` (scheduler/utils.py at ace90a38) reads
them: `job_type`, `command`, `num_steps_arg`, `needs_data_dir`, `total_steps`, `arrival_time`
(seconds from the file's first job), `scale_factor` (GPUs the job asks).

- `submit_s` = `arrival_time`; every file starts at 0, so several VCs replayed together all
  start at 0.
- GPUs = `scale_factor`, as pods of whole nodes: up to 8 GPUs one pod; above 8, pods of the
  largest of 8, 4, 2, 1 GPUs that divides it (16 = 2 x 8, 12 = 3 x 4, 20 = 5 x 4).
- `duration_s` = `total_steps` / the job's throughput, steps per second, running alone on
  `scale_factor` V100s: Gavel's `simulation_throughputs.json`, `v100`,
  `('<job_type>', <scale_factor>)`, `null` (Gavel's Philly runs used a cluster of V100s only).
  A job whose key is not in the file (scale factors 7, 12, 16, 20, 24, 32, 64) has no run time
  and is not replayed (a `trace-source-skipped` warning).
- CPU and memory: none asked (the trace gives none); Kueue's quota is then GPUs alone.
- The virtual clusters are spread over the teams by `assign`, in hash order; a job is named
  `<vc>-<line>`.
"""

from __future__ import annotations

import json
import os
import posixpath
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from renderer.findings.diagnostics import Diagnostic, Location, Severity
from renderer.inputs.bounded import TextLimit, read_bounded_text
from renderer.inputs.trace import TRACE_LIMIT, TraceRow
from renderer.inputs.trace_sources.common import (
    Mapped,
    Target,
    assign,
    bad_cell,
    checked,
    kept_and_tally,
    no_targets,
    skipped,
)

FIELDS: Final = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time",
    "scale_factor",
)
THROUGHPUTS: Final = "simulation_throughputs.json"
WORKER: Final = "v100"
SUFFIX: Final = ".trace"
NODE_SHAPES: Final = (8, 4, 2, 1)
HINT: Final = "Gavel's 7-field trace format: docs/simulate.md#philly"
THROUGHPUT_LIMIT: Final = TextLimit(
    "trace-unreadable", 64 * 1024 * 1024, "pass Gavel's simulation_throughputs.json"
)

Throughputs = dict[tuple[str, int], float]


def trace_files(path: Path) -> list[Path]:
    """The VC traces `path` names: itself, or the `*.trace` files of a folder, by name."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.name.endswith(SUFFIX))
    return [path]


def throughputs_beside(path: Path) -> Path | None:
    """Gavel's throughputs file: in the trace's folder or the one above it (Gavel keeps the
    traces in `scheduler/traces/msr/seed=0/`; the shared copy puts it beside `seed0/`)."""
    folder = path if path.is_dir() else path.parent
    for place in (folder, folder.parent):
        if (place / THROUGHPUTS).is_file():
            return place / THROUGHPUTS
    return None


def read_throughputs(path: Path, display: str) -> Throughputs | Diagnostic:
    """`v100` `null` throughputs by (job_type, scale_factor)."""
    text = read_bounded_text(path, display, THROUGHPUT_LIMIT)
    if isinstance(text, Diagnostic):
        return text
    try:
        data = json.loads(text)
        found: Throughputs = {}
        for key, entry in data[WORKER].items():
            job_type, scale = key.strip("()").rsplit(",", 1)
            found[(job_type.strip().strip("'\""), int(scale))] = float(entry["null"])
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        return Diagnostic(
            "trace-unreadable",
            f"not Gavel's throughputs ({WORKER}: {{('<job_type>', <GPUs>): {{null: steps/s}}}}): "
            f"{err}",
            Location(display, 1, 1),
            hint="pass the traces beside Gavel's simulation_throughputs.json",
        )
    return found


def read_philly(
    path: Path, display: str, weighted: tuple[Target, ...], limit: int | None = None
) -> Mapped:
    """The VC trace(s) at `path` mapped onto the `weighted` targets."""
    files = trace_files(path)
    where = Location(display, 1, 1)
    table_path = throughputs_beside(path)
    findings: list[Diagnostic] = []
    if not files:
        findings.append(Diagnostic("trace-unreadable", f"no *{SUFFIX} file in the folder", where))
    if table_path is None:
        findings.append(
            Diagnostic(
                "trace-unreadable",
                f"no {THROUGHPUTS} beside the trace or in the folder above it",
                where,
                hint="Gavel's steps become seconds with its measured throughputs: put "
                "scheduler/simulation_throughputs.json beside the traces' folder",
            )
        )
    if not weighted:
        findings.append(no_targets(display))
    if findings:
        return Mapped("philly-vc", display, findings=tuple(findings))
    assert table_path is not None
    table = read_throughputs(table_path, _shown(display, path, table_path))
    if isinstance(table, Diagnostic):
        return Mapped("philly-vc", display, findings=(table,))
    chosen = assign((p.name.removesuffix(SUFFIX) for p in files), weighted)
    rows: list[TraceRow] = []
    vcs: list[str] = []
    warnings: list[Diagnostic] = []
    count = 0
    for file in files:
        vc = file.name.removesuffix(SUFFIX)
        shown = _shown(display, path, file)
        got = _vc_rows(file, shown, chosen[vc], table)
        count += got.source_rows
        findings.extend(got.findings)
        warnings.extend(got.skipped)
        rows.extend(got.rows)
        vcs.extend([vc] * len(got.rows))
    kept, mapping = kept_and_tally(rows, vcs, chosen, limit)
    return Mapped(
        "philly-vc",
        display,
        rows=tuple(kept),
        targets=weighted,
        mapping=mapping,
        skipped=tuple(warnings),
        findings=tuple(findings),
        source_rows=count,
        limit=limit,
    )


def _shown(display: str, path: Path, file: Path) -> str:
    """`file` as findings name it: relative to where `display` names `path`."""
    if file == path:
        return display
    folder = path if path.is_dir() else path.parent
    shown = display if path.is_dir() else posixpath.dirname(display)
    return posixpath.normpath(posixpath.join(shown, os.path.relpath(file, folder)))


def _vc_rows(file: Path, display: str, target: Target, table: Throughputs) -> Mapped:
    text = read_bounded_text(file, display, TRACE_LIMIT)
    if isinstance(text, Diagnostic):
        return Mapped("philly-vc", display, findings=(text,))
    vc = file.name.removesuffix(SUFFIX).lower()
    rows: list[TraceRow] = []
    problems: list[Diagnostic] = []
    count = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        count += 1
        found = _job(line, Location(display, number, 1), vc, target, table)
        if isinstance(found, list):
            problems.extend(found)
        else:
            rows.append(found)
    return Mapped(
        "philly-vc",
        display,
        rows=tuple(rows),
        skipped=tuple(p for p in problems if p.severity == Severity.WARNING),
        findings=tuple(p for p in problems if p.severity != Severity.WARNING),
        source_rows=count,
    )


def _fields(line: str, at: Location) -> dict[str, tuple[str, Location]] | list[Diagnostic]:
    parts = line.split("\t")
    if len(parts) != len(FIELDS):
        return [bad_cell(f"{len(parts)} tab-separated fields, expected 7", at, HINT)]
    out: dict[str, tuple[str, Location]] = {}
    col = 1
    for name, value in zip(FIELDS, parts, strict=True):
        out[name] = (value, Location(at.file, at.line, col))
        col += len(value) + 1
    return out


def _number(cells: dict[str, tuple[str, Location]], name: str) -> Decimal | Diagnostic:
    text, at = cells[name]
    try:
        value = Decimal(text.strip())
    except ArithmeticError:
        value = Decimal(-1)
    if not value.is_finite() or value < 0:
        return bad_cell(f"{name} {text!r}: expected a number ≥ 0", at, HINT)
    return value


def _job(
    line: str, at: Location, vc: str, target: Target, table: Throughputs
) -> TraceRow | list[Diagnostic]:
    cells = _fields(line, at)
    if isinstance(cells, list):
        return cells
    numbers = {n: _number(cells, n) for n in ("total_steps", "arrival_time", "scale_factor")}
    problems = [n for n in numbers.values() if isinstance(n, Diagnostic)]
    steps, arrival, scale = (numbers[n] for n in ("total_steps", "arrival_time", "scale_factor"))
    if not isinstance(scale, Diagnostic) and (scale != scale.to_integral_value() or scale < 1):
        problems.append(
            bad_cell(
                f"scale_factor {scale}: expected whole GPUs ≥ 1", cells["scale_factor"][1], HINT
            )
        )
    if problems:
        return problems
    assert isinstance(steps, Decimal) and isinstance(arrival, Decimal)
    assert isinstance(scale, Decimal)
    job_type = cells["job_type"][0]
    gpus = int(scale)
    rate = table.get((job_type, gpus), 0.0)
    if rate <= 0:
        return [
            skipped(
                f"no {WORKER} throughput for ({job_type!r}, {gpus}) in {THROUGHPUTS}: "
                "its steps cannot become seconds",
                cells["scale_factor"][1],
            )
        ]
    pods, per_pod = _shape(gpus)
    values: dict[str, Any] = {
        "submit_s": _plain(arrival),
        "namespace": target.namespace,
        "name": f"{vc}-{at.line}",
        "pods": pods,
        "gpus_per_pod": per_pod,
        "cpu_per_pod": "0",
        "memory_per_pod": "0",
        "duration_s": _plain(round(steps / Decimal(repr(rate)), 3)),
        "priority": "",
    }
    places = {
        "submit_s": cells["arrival_time"][1],
        "pods": cells["scale_factor"][1],
        "gpus_per_pod": cells["scale_factor"][1],
        "duration_s": cells["total_steps"][1],
    }
    found = checked(values, at, places)
    return [found] if isinstance(found, Diagnostic) else found


def _shape(gpus: int) -> tuple[int, int]:
    """(pods, GPUs per pod): one pod up to 8 GPUs, else pods of the largest node shape that
    divides the job."""
    if gpus <= NODE_SHAPES[0]:
        return 1, gpus
    size = next(s for s in NODE_SHAPES if gpus % s == 0)
    return gpus // size, size


def _plain(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)
