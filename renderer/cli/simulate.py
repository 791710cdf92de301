"""`gpuplane simulate`: the command's face (options, printing, exit code); the answer is
`renderer.commands.simulate`'s (docs/simulate.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from renderer.cli.loading import load_inputs
from renderer.cli.options import TABLES_MARKDOWN_OR_JSON
from renderer.cli.reporters import Findings, emit, findings_format, json_form, show_answer
from renderer.findings.diagnostics import Diagnostic, has_errors

if TYPE_CHECKING:
    from renderer.commands.simulate.report import SimReport
    from renderer.inputs.trace_sources.common import SourceKind
    from renderer.model.platform import Platform


TRACE_SOURCES = ("alibaba-gpu-2023", "philly-vc")
"""`--from`'s public traces (`renderer.inputs.trace_sources.common.SOURCES`, not imported here so
that `--help` stays fast)."""


@dataclass(frozen=True)
class SimulateOptions:
    trace: Path
    fmt: str
    source: str = "trace"
    limit: int | None = None


@click.command()
@click.argument("trace", type=click.Path(exists=True, path_type=Path))
@TABLES_MARKDOWN_OR_JSON
@click.option(
    "--from",
    "source",
    type=click.Choice(["trace", *TRACE_SOURCES]),
    default="trace",
    show_default=True,
    help="What TRACE is: gpuplane's trace, Alibaba's GPU trace v2023 pod list, or Gavel's "
    "Philly virtual-cluster traces (a .trace file or their folder), mapped onto the teams "
    "(docs/simulate.md#traces-from-public-clusters).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="With --from: replay only the N earliest submitted workloads of the source.",
)
@click.pass_context
def simulate(ctx: click.Context, /, **options: Any) -> None:
    """Replay a workload TRACE (CSV or JSON Lines) against the platform's queues with Kueue's
    admission, on a simulated clock: waits, completions and preemptions per team, utilisation
    per pool. Exit 0 on a report, 1 on findings in the inputs or the trace."""
    from renderer.commands.simulate import simulate_trace
    from renderer.commands.simulate.forms import report_json, report_markdown, report_text

    asked = SimulateOptions(**options)
    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), findings_format(asked.fmt))
        ctx.exit(1)
    if asked.source != "trace":
        _simulate_source(ctx, asked, loaded.diagnostics, loaded.platform)
    answer = simulate_trace(loaded.platform, asked.trace, _display(ctx, asked.trace))
    if isinstance(answer, list):
        emit(Findings(answer, 1), findings_format(asked.fmt))
        ctx.exit(1)
    forms: dict[str, Callable[[SimReport], str]] = {
        "json": json_form(report_json, loaded.diagnostics),
        "markdown": report_markdown,
        "text": report_text,
    }
    show_answer(answer, asked.fmt, forms)
    ctx.exit(0)


def _simulate_source(
    ctx: click.Context, asked: SimulateOptions, found: Sequence[Diagnostic], platform: Platform
) -> None:
    """`--from SOURCE`: the mapped trace's report with its mapping, then the exit code."""
    from renderer.commands.simulate.forms import report_json, report_markdown, report_text
    from renderer.commands.simulate.sources import (
        SourceAnswer,
        mapping_json,
        mapping_markdown,
        mapping_text,
        simulate_source,
    )

    kind = cast("SourceKind", asked.source)
    display = _display(ctx, asked.trace)
    answer = simulate_source(platform, kind, asked.trace, display, asked.limit)
    if isinstance(answer, list):
        emit(Findings(answer, 1), findings_format(asked.fmt))
        ctx.exit(1)
    forms: dict[str, Callable[[SourceAnswer], str]] = {
        "json": json_form(
            lambda a: {**report_json(a.report), "mapping": mapping_json(a.mapped)},
            lambda a: [*found, *a.mapped.skipped],
        ),
        "markdown": lambda a: report_markdown(a.report) + "\n" + mapping_markdown(a.mapped),
        "text": lambda a: report_text(a.report) + "\n" + mapping_text(a.mapped),
    }
    show_answer(answer, asked.fmt, forms)
    ctx.exit(0)


def _display(ctx: click.Context, path: Path) -> str:
    """The trace as findings name it: relative to the repository's root where it is inside."""
    root: Path = ctx.obj["root"]
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
