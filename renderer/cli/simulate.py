"""`gpuplane simulate`: the command's face (options, printing, exit code); the answer is
`renderer.commands.simulate`'s (docs/simulate.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.loading import load_inputs
from renderer.cli.options import TABLES_MARKDOWN_OR_JSON
from renderer.cli.reporters import Findings, emit, findings_format, json_form, show_answer
from renderer.findings.diagnostics import has_errors

if TYPE_CHECKING:
    from renderer.commands.simulate.report import SimReport


@dataclass(frozen=True)
class SimulateOptions:
    trace: Path
    fmt: str


@click.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@TABLES_MARKDOWN_OR_JSON
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


def _display(ctx: click.Context, path: Path) -> str:
    """The trace as findings name it: relative to the repository's root where it is inside."""
    root: Path = ctx.obj["root"]
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
