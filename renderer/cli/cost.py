"""`gpuplane cost`: the command's face (options, printing, exit code); the answer is
`renderer.commands.cost`'s (docs/cost.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.loading import load_inputs
from renderer.cli.options import TABLES_MARKDOWN_OR_JSON
from renderer.cli.reporters import Findings, emit, findings_format, json_form, show_answer
from renderer.findings.diagnostics import has_errors, inert

if TYPE_CHECKING:
    from renderer.commands.cost.model import CostReport

CHART_SUFFIXES = (".svg", ".png")


@dataclass(frozen=True)
class CostOptions:
    usage: Path | None
    terms: Path | None
    query_window: str | None
    window: str | None
    fmt: str
    chart_file: Path | None


@click.command()
@click.argument(
    "usage", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--terms",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A CSV of team rows (accepted units, network, storage, support, operations) for a "
    "USAGE that gives GPU-hours only, such as the Prometheus export.",
)
@click.option(
    "--query",
    "query_window",
    metavar="WINDOW",
    help="Print the PromQL whose /api/v1/query result over WINDOW (30d, 1w, ...) is a USAGE "
    "file, and exit.",
)
@click.option(
    "--window",
    metavar="TEXT",
    help="The period the usage covers, for the report's and the chart's title (e.g. 30d).",
)
@TABLES_MARKDOWN_OR_JSON
@click.option(
    "--chart",
    "chart_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw cost per accepted unit and its terms, as FILE.svg or FILE.png.",
)
@click.pass_context
def cost(ctx: click.Context, /, **options: Any) -> None:
    """Effective cost per team, pool and accepted unit of a USAGE export (the Prometheus API's
    JSON of the `--query` export, or the CSV of docs/cost.md), at the pools' rates. Exit 0 on
    a report, 1 on findings (nothing written then), 2 on a usage error."""
    from renderer.commands.cost.query import export_query, window_problem

    asked = CostOptions(**options)
    usage, terms, query_window = asked.usage, asked.terms, asked.query_window
    window, fmt, chart_file = asked.window, asked.fmt, asked.chart_file
    if window is not None:  # an argument in no UTF-8 arrives with surrogates: shown as `?`
        window = window.encode("utf-8", "replace").decode("utf-8")

    if query_window is not None:
        if usage is not None or terms is not None or chart_file is not None:
            raise click.UsageError("--query prints the export query: it reads no usage")
        if problem := window_problem(query_window):
            raise click.UsageError(inert(problem))
        click.echo(export_query(query_window))
        ctx.exit(0)
    if usage is None:
        raise click.UsageError("give a USAGE file, or --query WINDOW for the export query")
    if chart_file is not None and chart_file.suffix.lower() not in CHART_SUFFIXES:
        raise click.UsageError(inert(f"--chart {chart_file}: the chart is an .svg or a .png file"))

    from renderer.commands.cost.chart import png, svg
    from renderer.commands.cost.forms import report_json, report_markdown, report_text
    from renderer.commands.cost.load import read_usage
    from renderer.commands.cost.model import build
    from renderer.findings.diagnostics import sort_diagnostics
    from renderer.output.writer import write_file_atomically

    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), findings_format(fmt))
        ctx.exit(1)
    found = read_usage(usage, terms)
    answer = build(loaded.platform, found, window)
    if isinstance(answer, list):
        problems = Findings(sort_diagnostics(answer), len(found.sources))
        emit(problems, findings_format(fmt))
        ctx.exit(1)
    if chart_file is not None:
        drawn = png(answer) if chart_file.suffix.lower() == ".png" else svg(answer)
        write_file_atomically(chart_file, drawn)
    forms: dict[str, Callable[[CostReport], str]] = {
        "json": json_form(report_json, loaded.diagnostics),
        "markdown": report_markdown,
        "text": report_text,
    }
    show_answer(answer, fmt, forms)
    ctx.exit(0)
