"""`gpuplane plan`: capacity and quota per pool and per team."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.completion import CLUSTERS, POOLS, TEAMS
from renderer.cli.loading import load_inputs
from renderer.cli.options import format_option
from renderer.cli.reporters import (
    Findings,
    emit,
    findings_format,
    json_form,
    show_answer,
    wants_colour,
)
from renderer.findings.diagnostics import has_errors

if TYPE_CHECKING:
    from renderer.commands.plan import PlanReport


@dataclass(frozen=True)
class PlanOptions:
    fmt: str
    clusters: tuple[str, ...]
    teams: tuple[str, ...]
    pools: tuple[str, ...]
    wide: bool


@click.command()
@format_option(
    "text",
    "markdown",
    "json",
    default="text",
    help="A table for people, Markdown for a pull-request comment, or JSON for tools.",
)
@click.option(
    "--cluster",
    "clusters",
    multiple=True,
    shell_complete=CLUSTERS,
    help="Only these clusters (repeatable).",
)
@click.option(
    "--team",
    "teams",
    multiple=True,
    shell_complete=TEAMS,
    metavar="NAME",
    help="Only what this team can get, and where: its quota per pool, what it can borrow, and "
    "the namespaces and ClusterQueues it submits through (repeatable).",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    shell_complete=POOLS,
    metavar="NAME",
    help="Only this pool: who holds quota on it, and what is free and lendable (repeatable; "
    "with --team, that team on that pool).",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Print every table at its full width, one line per row, whatever the terminal's width.",
)
@click.pass_context
def plan(ctx: click.Context, /, **options: Any) -> None:
    """Capacity and quota per pool and per team: guaranteed, nominal, lendable, what can be
    borrowed, the maximum, and the ClusterQueues teams submit to. Text tables fit the terminal
    (100 columns when stdout is not one) unless --wide."""
    from renderer.commands.plan import build_plan, plan_json, unknown_names
    from renderer.commands.plan_forms import plan_markdown

    asked = PlanOptions(**options)
    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), findings_format(asked.fmt))
        ctx.exit(1)
    problem = unknown_names(loaded.platform, asked.clusters, asked.teams, asked.pools)
    if problem is not None:
        raise click.UsageError(problem)
    report = build_plan(loaded.platform, asked.clusters or None, asked.teams, asked.pools)
    if asked.fmt == "text":  # rich's tables, as wide as the terminal: printed, not returned
        _print_tables(report, wide=asked.wide)
        return
    show_answer(
        report,
        asked.fmt,
        {"json": json_form(plan_json, loaded.diagnostics), "markdown": plan_markdown},
    )


def _print_tables(report: PlanReport, *, wide: bool) -> None:
    """The plan's tables, through rich, as wide as `table_width` says; `wide`: every table at
    its full width."""
    import shutil

    from rich.console import Console

    from renderer.commands.plan_forms import plan_tables

    colour = wants_colour()
    width = table_width(
        os.environ, shutil.get_terminal_size().columns, is_terminal=sys.stdout.isatty()
    )
    console = Console(
        width=10**6 if wide else width,
        soft_wrap=wide,
        force_terminal=colour or None,
        color_system="auto" if colour else None,
    )
    for renderable in plan_tables(report, None if wide else width):
        console.print(renderable)


PIPE_WIDTH = 100
"""The width of tables written to a pipe, a file or a CI log when $COLUMNS does not say."""


def table_width(environ: Mapping[str, str], terminal: int, *, is_terminal: bool) -> int:
    """How wide text tables are: $COLUMNS when it is a number (as `ls`, `git` and rich read it,
    also in a pipe), else the terminal's width, else 100 columns. Never under 40."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), 40)
    return max(terminal, 40) if is_terminal else PIPE_WIDTH
