"""`gpuplane acceptance report`: the probes' results judged against each pool's thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from renderer.cli.loading import load_inputs
from renderer.cli.options import format_option
from renderer.cli.reporters import Findings, emit, findings_format, show_answer
from renderer.findings.diagnostics import closest, has_errors


@dataclass(frozen=True)
class AcceptanceOptions:
    results: tuple[Path, ...]
    fmt: str
    pools: tuple[str, ...]


@click.group()
def acceptance() -> None:
    """Acceptance results of the probes, judged against each pool's thresholds."""


@acceptance.command(name="report")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@format_option(
    "text",
    "markdown",
    "json",
    default="text",
    help="A table for people, Markdown for a pull-request comment or job summary, JSON for tools.",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    help="A pool that must be reported even without results (repeatable): its thresholds are "
    "then missing.",
)
@click.pass_context
def acceptance_report(ctx: click.Context, /, **options: Any) -> None:
    """Pass or fail of RESULTS (probe JSON files, or folders of them) against each pool's
    thresholds. Exit 0 when all pass, 1 on a failure, a missing result or an unreadable file,
    3 when nothing failed but some result was measured on the CPU or on a device not shown to be
    the pool's accelerator (not comparable: the pool is not accepted, and no hardware failed)."""
    from renderer.commands.acceptance.forms import report_json, report_markdown, report_text
    from renderer.commands.acceptance.judge import build_report
    from renderer.commands.acceptance.load import load_results
    from renderer.commands.acceptance.results import Status

    asked = AcceptanceOptions(**options)
    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), findings_format(asked.fmt))
        ctx.exit(1)
    unknown = sorted(set(asked.pools) - set(loaded.platform.pools))
    if unknown:
        close = closest(unknown[0], loaded.platform.pools)
        hint = f" Did you mean '{close}'?" if close else ""
        raise click.UsageError(f"unknown pool(s): {', '.join(unknown)}.{hint}")
    found, findings = load_results(asked.results)
    if not found and not findings:
        raise click.UsageError("no result files: the folders given hold no *.json")
    accepted = build_report(loaded.platform, found, findings, asked.pools)
    show_answer(
        accepted, asked.fmt, {"json": report_json, "markdown": report_markdown, "text": report_text}
    )
    ctx.exit({Status.PASSED: 0, Status.FAILED: 1, Status.NOT_COMPARABLE: 3}[accepted.status])
