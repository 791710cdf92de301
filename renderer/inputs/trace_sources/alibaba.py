"""Alibaba's GPU cluster trace v2023 (`openb_pod_list_*.csv` of alibaba/clusterdata's
`cluster-trace-gpu-v2023`) as `gpuplane simulate` workloads (docs/simulate.md#alibaba).

One row is one pod, replayed as one workload of one pod. The columns, as the upstream README
describes them: `cpu_milli` (milli-CPU requested), `memory_mib` (MiB requested), `num_gpu`
(GPUs requested, 0 to 8), `gpu_milli` (the share of one GPU a GPU-sharing pod asks, in milli,
for `num_gpu == 1`), `gpu_spec`, `qos` (LS, BE, Burstable, Guaranteed), `pod_phase`,
`creation_time`, `deletion_time`, `scheduled_time` (seconds from the trace's start).

- `submit_s` = `creation_time`; `duration_s` = `deletion_time - scheduled_time` (how long the
  pod held its resources in Alibaba's cluster). A pod with no `scheduled_time` never ran
  there: it has no run time and is not replayed (a `trace-source-skipped` warning).
- `gpus_per_pod` = `num_gpu`, except a sharing pod (`num_gpu` 1, `gpu_milli` below 1000): it
  asks one whole GPU, as Kueue counts `nvidia.com/gpu` in whole devices.
- `cpu_per_pod` = `cpu_milli` m, `memory_per_pod` = `memory_mib` Mi.
- `priority`: a `BE` (best-effort) pod gets its queue's lowest WorkloadPriorityClass, every
  other its team's own priority.
- The pods (no user column exists) are spread over the teams by `assign`, in name order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from renderer.findings.diagnostics import Diagnostic, Location, Severity
from renderer.inputs.bounded import read_bounded_text
from renderer.inputs.csv_cells import split_cells
from renderer.inputs.trace import TRACE_LIMIT, TraceRow
from renderer.inputs.trace_sources.common import (
    Mapped,
    Target,
    assign,
    bad_cell,
    checked,
    duplicates,
    kept_and_tally,
    no_targets,
    skipped,
)

COLUMNS: Final = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
WHOLE: Final = 1000
BEST_EFFORT: Final = "BE"
NUMBERS: Final = (
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
HINT: Final = "the upstream README's columns: docs/simulate.md#alibaba"


@dataclass(frozen=True, slots=True)
class _Pod:
    """One row's cells by column, with where each is."""

    line: int
    cells: dict[str, tuple[str, Location]]

    def at(self, column: str) -> Location:
        return self.cells[column][1]

    def text(self, column: str) -> str:
        return self.cells[column][0]


def read_alibaba(
    path: Path, display: str, weighted: tuple[Target, ...], limit: int | None = None
) -> Mapped:
    """The pod list at `path` mapped onto the `weighted` targets (`trace_sources.targets`)."""
    text = read_bounded_text(path, display, TRACE_LIMIT)
    if isinstance(text, Diagnostic):
        return Mapped("alibaba-gpu-2023", display, findings=(text,))
    pods, findings = _pods(text.split("\n"), display)
    if not weighted:
        findings.append(no_targets(display))
    if not weighted or any(f.rule == "trace-header" for f in findings):
        return Mapped("alibaba-gpu-2023", display, findings=tuple(findings), source_rows=len(pods))
    chosen = assign((p.text("name") for p in pods), weighted)
    rows: list[TraceRow] = []
    identities: list[str] = []  # each row's pod as written (a row's name is lower case)
    warnings: list[Diagnostic] = []
    rounded = 0
    for pod in pods:
        found = _row(pod, chosen[pod.text("name")], display)
        if isinstance(found, list):
            for problem in found:
                (warnings if problem.severity == Severity.WARNING else findings).append(problem)
            continue
        rows.append(found)
        identities.append(pod.text("name"))
        rounded += _shares(pod)
    findings.extend(duplicates(rows))
    kept, mapping = kept_and_tally(rows, identities, chosen, limit)
    return Mapped(
        "alibaba-gpu-2023",
        display,
        rows=tuple(kept),
        targets=weighted,
        mapping=mapping,
        skipped=tuple(warnings),
        findings=tuple(findings),
        source_rows=len(pods),
        rounded=rounded,
        limit=limit,
    )


def _pods(lines: list[str], file: str) -> tuple[list[_Pod], list[Diagnostic]]:
    pods: list[_Pod] = []
    findings: list[Diagnostic] = []
    header: list[str] | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        cells = split_cells(line)
        if isinstance(cells, tuple):
            findings.append(bad_cell(cells[0], Location(file, number, cells[1]), HINT))
            continue
        if header is None:
            header = [c for c, _ in cells]
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                findings.append(
                    Diagnostic(
                        "trace-header",
                        f"not an Alibaba pod list: no column {', '.join(missing)}",
                        Location(file, number, 1),
                        hint=f"the header of openb_pod_list_*.csv: {','.join(COLUMNS)}",
                    )
                )
                break
            continue
        if len(cells) != len(header):
            findings.append(
                bad_cell(
                    f"{len(cells)} cells, the header has {len(header)}",
                    Location(file, number, 1),
                    HINT,
                )
            )
            continue
        by_column = {
            name: (value, Location(file, number, col))
            for name, (value, col) in zip(header, cells, strict=True)
        }
        pods.append(_Pod(number, by_column))
    if header is None:
        findings.append(
            Diagnostic(
                "trace-header",
                "no header line",
                Location(file, 1, 1),
                hint=f"the header of openb_pod_list_*.csv: {','.join(COLUMNS)}",
            )
        )
    return pods, findings


def _shares(pod: _Pod) -> int:
    """1 where the pod shares a GPU (its fraction rounded up to a whole one)."""
    milli = pod.text("gpu_milli")
    return int(pod.text("num_gpu") == "1" and milli.isdigit() and 0 < int(milli) < WHOLE)


def _number(pod: _Pod, column: str, problems: list[Diagnostic]) -> int | None:
    text = pod.text(column)
    if text.isascii() and text.isdigit():
        return int(text)
    shown = repr(text) if text else "empty"
    problems.append(
        bad_cell(f"{column} {shown}: expected a whole number ≥ 0", pod.at(column), HINT)
    )
    return None


def _checks(pod: _Pod) -> tuple[dict[str, int], list[Diagnostic]]:
    """The pod's numbers, and every problem of its cells."""
    problems: list[Diagnostic] = []
    numbers: dict[str, int] = {}
    for column in NUMBERS:
        if column == "scheduled_time" and not pod.text(column):
            continue
        found = _number(pod, column, problems)
        if found is not None:
            numbers[column] = found
    if problems:
        return numbers, problems
    gpus, milli = numbers["num_gpu"], numbers["gpu_milli"]
    if milli > WHOLE or (gpus > 1 and milli != WHOLE) or (gpus == 0 and milli != 0):
        problems.append(
            bad_cell(
                f"gpu_milli {milli} with num_gpu {gpus}: the README gives a share of one GPU "
                "only for num_gpu 1 (1000 for more GPUs, 0 for none)",
                pod.at("gpu_milli"),
                HINT,
            )
        )
    elif gpus == 1 and milli == 0:
        problems.append(bad_cell("num_gpu 1 with gpu_milli 0", pod.at("gpu_milli"), HINT))
    scheduled = numbers.get("scheduled_time")
    if scheduled is not None and numbers["deletion_time"] < scheduled:
        problems.append(
            bad_cell(
                f"deletion_time {numbers['deletion_time']} is before scheduled_time {scheduled}",
                pod.at("deletion_time"),
                HINT,
            )
        )
    return numbers, problems


def _row(pod: _Pod, target: Target, file: str) -> TraceRow | list[Diagnostic]:
    """The pod as a trace row; else every problem of its cells, or the warning that it cannot
    be replayed."""
    numbers, problems = _checks(pod)
    if problems:
        return problems
    if "scheduled_time" not in numbers:
        return [
            skipped(
                f"pod {pod.text('name')} ({pod.text('pod_phase') or 'no phase'}) was never "
                "scheduled: no scheduled_time, so no run time to replay",
                pod.at("scheduled_time"),
            )
        ]
    values = {
        "submit_s": numbers["creation_time"],
        "namespace": target.namespace,
        "name": pod.text("name").lower(),
        "pods": 1,
        "gpus_per_pod": numbers["num_gpu"],
        "cpu_per_pod": f"{numbers['cpu_milli']}m",
        "memory_per_pod": f"{numbers['memory_mib']}Mi",
        "duration_s": numbers["deletion_time"] - numbers["scheduled_time"],
        "priority": target.low_priority if pod.text("qos") == BEST_EFFORT else "",
    }
    cells = {
        "submit_s": pod.at("creation_time"),
        "namespace": pod.at("name"),
        "name": pod.at("name"),
        "pods": Location(file, pod.line, 1),
        "gpus_per_pod": pod.at("num_gpu"),
        "cpu_per_pod": pod.at("cpu_milli"),
        "memory_per_pod": pod.at("memory_mib"),
        "duration_s": pod.at("deletion_time"),
        "priority": pod.at("qos"),
    }
    found = checked(values, Location(file, pod.line, 1), cells)
    return [found] if isinstance(found, Diagnostic) else found
