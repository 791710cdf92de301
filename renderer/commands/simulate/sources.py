"""`gpuplane simulate --from SOURCE FILE`: a public cluster trace mapped onto the platform's
teams (`renderer.inputs.trace_sources`) and replayed as any trace is; the answer is the
simulation's report and the mapping a reviewer checks it by (docs/simulate.md#traces-from-
public-clusters)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from renderer.commands.simulate import simulate_rows
from renderer.commands.simulate.report import SimReport
from renderer.findings.diagnostics import Diagnostic, sort_diagnostics
from renderer.inputs.trace import Trace
from renderer.inputs.trace_sources.alibaba import read_alibaba
from renderer.inputs.trace_sources.common import Mapped, SourceKind, targets
from renderer.inputs.trace_sources.philly import read_philly
from renderer.model.platform import Platform
from renderer.model.words import plural
from renderer.output import markdown_escape

RULE = (
    "each source identity, in sorted order, to a team's training namespace by smooth weighted "
    "round-robin, weight = the team's nominal nvidia.com/gpu quota on the pools its training "
    "ClusterQueue draws on"
)
IDENTITY = {"alibaba-gpu-2023": "pod", "philly-vc": "virtual cluster"}
SHOWN = 12
"""Identities named per namespace in text and Markdown (all of them in JSON)."""


@dataclass(frozen=True)
class SourceAnswer:
    report: SimReport
    mapped: Mapped


def simulate_source(
    platform: Platform, kind: SourceKind, path: Path, display: str, limit: int | None = None
) -> SourceAnswer | list[Diagnostic]:
    """The report of the public trace at `path`, or every problem of its rows."""
    weighted = targets(platform)
    reader = read_alibaba if kind == "alibaba-gpu-2023" else read_philly
    mapped = reader(path, display, weighted, limit)
    if mapped.findings:
        return sort_diagnostics(list(mapped.findings))
    answer = simulate_rows(platform, Trace(display, mapped.rows))
    if isinstance(answer, list):
        return answer
    return SourceAnswer(answer, mapped)


def summary_lines(mapped: Mapped) -> list[str]:
    """What was read, replayed and left out, the rule, and each namespace's identities."""
    who = IDENTITY[mapped.source]
    limited = f" (the first {mapped.limit} submitted)" if mapped.limit is not None else ""
    out = [
        f"{mapped.source}: {plural(mapped.source_rows, 'row')} read, {len(mapped.rows)} "
        f"replayed{limited}, "
        f"{len(mapped.skipped)} not replayed (trace-source-skipped warnings)",
        f"rule: {RULE}",
    ]
    if mapped.rounded:
        out.append(f"{plural(mapped.rounded, 'GPU-sharing pod')} rounded up to one whole GPU each")
    reasons = Counter(_reason(d.message) for d in mapped.skipped)
    out.extend(f"not replayed: {n} x {reason}" for reason, n in sorted(reasons.items()))
    for target in mapped.targets:
        mine = [a for a in mapped.mapping if a.namespace == target.namespace]
        names = ", ".join(a.source for a in mine[:SHOWN])
        more = f", … ({len(mine) - SHOWN} more)" if len(mine) > SHOWN else ""
        out.append(
            f"{target.namespace} (team {target.team}, weight {target.weight}): "
            f"{plural(len(mine), who)}, {plural(sum(a.workloads for a in mine), 'workload')}, "
            f"{plural(sum(a.gpus for a in mine), 'GPU')}: {names or '-'}{more}"
        )
    return out


def _reason(message: str) -> str:
    """A skipped row's message less what names the row (its pod or its job type)."""
    if message.startswith("pod "):
        return "pod never scheduled (no scheduled_time)"
    if message.startswith("no "):
        gpus = message.split("', ", 1)[-1].split(")", 1)[0]
        return f"job of {gpus} GPUs with no measured throughput"
    return message


def mapping_text(mapped: Mapped) -> str:
    return "\n".join(["Mapping", *(f"  {line}" for line in summary_lines(mapped)), ""])


def mapping_markdown(mapped: Mapped) -> str:
    lines = [markdown_escape.text(line) for line in summary_lines(mapped)]
    return "\n".join(["### Mapping", "", *(f"- {line}" for line in lines), ""])


def mapping_json(mapped: Mapped) -> dict[str, Any]:
    return {
        "source": mapped.source,
        "file": mapped.file,
        "rows": mapped.source_rows,
        "replayed": len(mapped.rows),
        "skipped": len(mapped.skipped),
        "roundedToWholeGpu": mapped.rounded,
        "limit": mapped.limit,
        "rule": RULE,
        "targets": [
            {"namespace": t.namespace, "cluster": t.cluster, "team": t.team, "weight": t.weight}
            for t in mapped.targets
        ],
        "mapping": [
            {"source": a.source, "namespace": a.namespace, "workloads": a.workloads, "gpus": a.gpus}
            for a in mapped.mapping
        ],
    }


__all__ = ["SourceAnswer", "mapping_json", "mapping_markdown", "mapping_text", "simulate_source"]
