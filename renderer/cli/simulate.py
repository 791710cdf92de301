"""`gpuplane simulate`: the command's face (options, printing, exit code); the answer is
`renderer.commands.simulate`'s (docs/simulate.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from renderer.cli.completion import GIT_REFS
from renderer.cli.loading import load_inputs, root_of
from renderer.cli.options import TABLES_MARKDOWN_OR_JSON
from renderer.cli.reporters import Findings, emit, findings_format, json_form, show_answer
from renderer.findings.diagnostics import Diagnostic, has_errors, inert

if TYPE_CHECKING:
    from renderer.commands.simulate.compare import Comparison
    from renderer.commands.simulate.report import SimReport
    from renderer.inputs.trace_sources.common import SourceKind
    from renderer.model.platform import Platform
    from renderer.pipeline import Loaded


TRACE_SOURCES = ("alibaba-gpu-2023", "philly-vc")
"""`--from`'s public traces (`renderer.inputs.trace_sources.common.SOURCES`, not imported here so
that `--help` stays fast)."""


@dataclass(frozen=True)
class SimulateOptions:
    trace: Path
    fmt: str
    base_ref: str | None = None
    chart_file: Path | None = None
    source: str = "trace"
    limit: int | None = None


@click.command()
@click.argument("trace", type=click.Path(exists=True, path_type=Path))
@TABLES_MARKDOWN_OR_JSON
@click.option(
    "--base",
    "base_ref",
    metavar="REF",
    shell_complete=GIT_REFS,
    help="Also replay the trace on the platform as it is at this git revision (read as `diff` "
    "reads its base) and report the change per team and pool, base -> working tree.",
)
@click.option(
    "--chart",
    "chart_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw each team's p90 wait over simulated time, as FILE.svg.",
)
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
    per pool. With --base REF, the change from the platform at REF to the working tree. Exit 0
    on a report, 1 on findings in the inputs or the trace (or a base that does not validate),
    2 for a bad REF."""
    from renderer.commands.simulate import simulate_trace
    from renderer.commands.simulate.forms import report_json, report_markdown, report_text

    asked = SimulateOptions(**options)
    _refuse_what_does_not_go_together(asked)
    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), findings_format(asked.fmt))
        ctx.exit(1)
    if asked.base_ref is not None:
        _compare(ctx, asked, loaded)
    if asked.source != "trace":
        _simulate_source(ctx, asked, loaded.diagnostics, loaded.platform)
    answer = simulate_trace(loaded.platform, asked.trace, _display(ctx, asked.trace))
    if isinstance(answer, list):
        emit(Findings(answer, 1), findings_format(asked.fmt))
        ctx.exit(1)
    forms: dict[str, Callable[[SimReport], str]] = {
        "json": json_form(report_json, loaded.diagnostics),
        "markdown": _with_chart(report_markdown, asked.chart_file),
        "text": report_text,
    }
    _draw(asked.chart_file, answer)
    show_answer(answer, asked.fmt, forms)
    ctx.exit(0)


def _refuse_what_does_not_go_together(asked: SimulateOptions) -> None:
    """A usage error (exit 2) for options that cannot be answered together, before loading."""
    if asked.chart_file is not None and asked.chart_file.suffix.lower() != ".svg":
        raise click.UsageError(inert(f"--chart {asked.chart_file}: the chart is an .svg file"))
    if asked.chart_file is not None and asked.base_ref is not None:
        raise click.UsageError("--chart draws one revision's waits: leave out --base")
    if asked.source != "trace" and asked.base_ref is not None:
        raise click.UsageError(f"--from {asked.source} replays on one revision: leave out --base")
    if asked.source == "trace" and asked.trace.is_dir():
        raise click.UsageError(inert(f"{asked.trace} is a folder: a trace is one file"))
    if asked.source == "trace" and asked.limit is not None:
        raise click.UsageError("--limit goes with --from")


def _compare(ctx: click.Context, asked: SimulateOptions, loaded: Loaded) -> None:
    """`--base REF`: the trace on the platform at REF and on the working tree, compared."""
    import tempfile

    from renderer.commands.diff.checkout import BaseRefError
    from renderer.commands.simulate.compare import base_invalid, compare_trace, load_base
    from renderer.commands.simulate.compare_forms import (
        comparison_json,
        comparison_markdown,
        comparison_text,
    )
    from renderer.inputs.trace import read_trace

    assert asked.base_ref is not None
    trace = read_trace(asked.trace, _display(ctx, asked.trace))
    if trace.findings:
        emit(Findings(list(trace.findings), 1), findings_format(asked.fmt))
        ctx.exit(1)
    with tempfile.TemporaryDirectory(prefix="gpuplane-simulate-") as tmp:
        try:
            commit, base = load_base(root_of(ctx), asked.base_ref, Path(tmp))
        except BaseRefError as err:
            raise click.UsageError(str(err)) from err
    if has_errors(base.diagnostics):
        emit(Findings([base_invalid(base, asked.base_ref, commit)], 1), findings_format(asked.fmt))
        ctx.exit(1)
    answer = compare_trace(base.platform, loaded.platform, trace, (asked.base_ref, commit))
    if isinstance(answer, list):
        emit(Findings(answer, 1), findings_format(asked.fmt))
        ctx.exit(1)
    forms: dict[str, Callable[[Comparison], str]] = {
        "json": json_form(comparison_json, loaded.diagnostics),
        "markdown": comparison_markdown,
        "text": comparison_text,
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
        "markdown": lambda a: (
            _with_chart(report_markdown, asked.chart_file)(a.report)
            + "\n"
            + mapping_markdown(a.mapped)
        ),
        "text": lambda a: report_text(a.report) + "\n" + mapping_text(a.mapped),
    }
    _draw(asked.chart_file, answer.report)
    show_answer(answer, asked.fmt, forms)
    ctx.exit(0)


def _draw(chart: Path | None, report: SimReport) -> None:
    """`--chart FILE.svg`: the waits' chart, written atomically."""
    if chart is None:
        return
    from renderer.commands.simulate.chart import svg
    from renderer.output.writer import write_file_atomically

    write_file_atomically(chart, svg(report))


def _display(ctx: click.Context, path: Path) -> str:
    """The trace as findings name it: relative to the repository's root where it is inside."""
    root: Path = ctx.obj["root"]
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _with_chart(form: Callable[[SimReport], str], chart: Path | None) -> Callable[[SimReport], str]:
    """The Markdown form, with the chart's image under its title where `--chart` drew one."""
    if chart is None:
        return form
    from renderer.commands.simulate.chart import with_chart

    return lambda report: with_chart(form(report), str(chart))
