"""`gpuplane acceptance report`: the probes' results judged against each pool's thresholds."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.completion import POOLS
from renderer.cli.loading import load_inputs, root_of
from renderer.cli.options import format_option
from renderer.cli.reporters import Findings, emit, findings_format, json_form, show_answer
from renderer.findings.diagnostics import closest, has_errors

if TYPE_CHECKING:
    from renderer.commands.acceptance.results import AcceptanceReport, Result
    from renderer.findings.diagnostics import Diagnostic
    from renderer.model.platform import Platform


@dataclass(frozen=True)
class AcceptanceOptions:
    results: tuple[Path, ...]
    fmt: str
    pools: tuple[str, ...]


@dataclass(frozen=True)
class Loaded:
    """The platform and the result files, read for `report` and `record` alike."""

    platform: Platform
    found: tuple[Result, ...]
    findings: tuple[Diagnostic, ...]


def _judged(
    ctx: click.Context, results: tuple[Path, ...], pools: tuple[str, ...], form: str
) -> Loaded:
    """The inputs and the results (exit 1 on an input error, a usage error on an unknown pool
    or no result file)."""
    from renderer.commands.acceptance.load import load_results

    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), form)
        ctx.exit(1)
    unknown = sorted(set(pools) - set(loaded.platform.pools))
    if unknown:
        close = closest(unknown[0], loaded.platform.pools)
        hint = f" Did you mean '{close}'?" if close else ""
        raise click.UsageError(f"unknown pool(s): {', '.join(unknown)}.{hint}")
    found, findings = load_results(results)
    if not found and not findings:
        raise click.UsageError("no result files: the folders given hold no *.json")
    return Loaded(loaded.platform, found, findings)


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
    shell_complete=POOLS,
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
    from renderer.commands.acceptance.results import Status

    asked = AcceptanceOptions(**options)
    loaded = _judged(ctx, asked.results, asked.pools, findings_format(asked.fmt))
    accepted = build_report(loaded.platform, loaded.found, loaded.findings, asked.pools)
    forms: dict[str, Callable[[AcceptanceReport], str]] = {
        "json": json_form(report_json, lambda report: report.findings, ensure_ascii=False),
        "markdown": report_markdown,
        "text": report_text,
    }
    show_answer(accepted, asked.fmt, forms)
    ctx.exit({Status.PASSED: 0, Status.FAILED: 1, Status.NOT_COMPARABLE: 3}[accepted.status])


@dataclass(frozen=True)
class RecordOptions:
    results: tuple[Path, ...]
    out: Path | None
    pools: tuple[str, ...]
    run: str | None
    configmap: Path | None
    namespace: str
    image_namespace: str
    exit_zero: bool


@acceptance.command(name="record")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="The repository root to write acceptance/<cluster>/<pool>.yaml under "
    "(default: the repository's, -C).",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    shell_complete=POOLS,
    help="A pool that must be recorded even without results (repeatable): its thresholds are "
    "then missing, and its evidence fails.",
)
@click.option("--run", help="The Workflow (name or uid) that produced the results.")
@click.option(
    "--configmap",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the evidence as ConfigMap acceptance-evidence-<pool> (JSON; a v1 List for "
    "several pools) to this file, for the suite's report step to apply.",
)
@click.option(
    "--namespace",
    default="gpuplane-acceptance",
    show_default=True,
    help="The ConfigMap's namespace (with --configmap).",
)
@click.option(
    "--image-namespace",
    default="",
    metavar="NAMESPACE",
    help="The results came from a run in this team namespace's own production image: the "
    "ConfigMap is acceptance-evidence-<pool>-<namespace>, apart from the pool's (with "
    "--configmap; empty: the pool's own run).",
)
@click.option(
    "--exit-zero",
    is_flag=True,
    help="Exit 0 whenever the evidence was written, whatever its verdict (the suite records a "
    "failing run too, then judges it).",
)
@click.pass_context
def acceptance_record(ctx: click.Context, /, **options: Any) -> None:
    """Judge RESULTS exactly as `acceptance report` does and write one evidence file per pool,
    acceptance/<cluster>/<pool>.yaml (schemas/evidence.schema.json; docs/acceptance-evidence.md).
    Exit 0 when every pool passes on its own accelerator, 1 on a failure, a missing result or a
    result file that could not be counted (then nothing is written), 2 on a usage error, 3 when
    nothing failed but a result was not shown to be measured on the pool's accelerator. The
    clock is SOURCE_DATE_EPOCH when set, else now."""
    import os

    from renderer.commands.acceptance.evidence import (
        configmaps,
        evidence_documents,
        evidence_problems,
        evidence_text,
        recorded_at,
        write_evidence,
    )
    from renderer.commands.acceptance.judge import build_report
    from renderer.output.writer import write_file_atomically

    asked = RecordOptions(**options)
    loaded = _judged(ctx, asked.results, asked.pools, "text")
    found = loaded.found
    report = build_report(loaded.platform, found, loaded.findings, asked.pools)
    if report.findings:
        emit(Findings(report.findings, report.files), "text")
        click.echo("nothing recorded: every result file must be counted", err=True)
        ctx.exit(1)
    documents = evidence_documents(
        loaded.platform, report, found, now=recorded_at(os.environ), run=asked.run
    )
    problems = [f"{p}: {m}" for p, d in documents.items() for m in evidence_problems(d)]
    if problems:  # a defect of this command, never of the results
        raise click.ClickException("evidence does not match its schema: " + "; ".join(problems))
    root = asked.out if asked.out is not None else root_of(ctx)
    write_evidence(root, {p: evidence_text(d) for p, d in documents.items()})
    if asked.configmap is not None:
        body = configmaps(documents.values(), asked.namespace, asked.image_namespace)
        text = json.dumps(body, sort_keys=True, ensure_ascii=False) + "\n"
        write_file_atomically(asked.configmap, text.encode("utf-8"))
    for path, document in sorted(documents.items()):
        click.echo(f"{document['spec']['verdict']}: {root / path}")
    verdicts = {d["spec"]["verdict"] for d in documents.values()}
    code = 1 if "fail" in verdicts else 3 if "not-comparable" in verdicts else 0
    ctx.exit(0 if asked.exit_zero else code)
