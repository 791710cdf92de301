"""`gpuplane diff`: what the change from a base revision to the working tree means."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.completion import GIT_REFS
from renderer.cli.loading import (
    open_render_index,
    output_validator,
    root_of,
    worker_stops_reported,
)
from renderer.cli.options import CRDS, STRICT_SCHEMAS, format_option
from renderer.cli.reporters import (
    Findings,
    emit,
    findings_format,
    json_form,
    progress,
    show_answer,
)

if TYPE_CHECKING:
    from renderer.commands.diff.findings import DiffReport
    from renderer.inputs.trace import Trace


@dataclass(frozen=True)
class DiffOptions:
    base_ref: str | None
    fmt: str
    crds: tuple[Path, ...]
    strict_schemas: bool
    max_chars: int
    no_index: bool
    trace: Path | None = None


@click.command()
@click.option(
    "--base",
    "base_ref",
    metavar="REF",
    shell_complete=GIT_REFS,
    help="The git revision to compare the working tree with (a branch, tag or commit). "
    "Default: the merge base of HEAD and the upstream default branch (origin/HEAD, else "
    "origin/main, origin/master, main, master), as a pull request's diff; the report names it.",
)
@format_option(
    "markdown",
    "json",
    "text",
    default="markdown",
    help="Markdown for a sticky pull-request comment, JSON for tools, or text for people.",
)
@CRDS
@STRICT_SCHEMAS
@click.option(
    "--max-chars",
    type=click.IntRange(min=1000),
    default=60000,
    show_default=True,
    help="Truncate the Markdown to this many characters (GitHub's comment limit is 65,536).",
)
@click.option(
    "--no-index",
    is_flag=True,
    help="Read no render index (what `gpuplane render` recorded of each cluster): render every "
    "cluster, one the same on both revisions once. The report is the same; see "
    "docs/performance.md.",
)
@click.option(
    "--trace",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Replay this workload trace (as `gpuplane simulate`) on both revisions and add the "
    "\"Simulated waits\" per team; a team's p90 wait growing past gpuplane.yaml's "
    "simulate.p90WaitGrowth is high risk.",
)
@click.pass_context
def diff(ctx: click.Context, /, **options: Any) -> None:
    """What the change from REF to the working tree means, by cluster and team, marked by risk.
    Without --base, REF is where the branch left the upstream default branch (its merge base).

    Exit 0 when the working tree is valid, whatever the change; 1 when it has findings (printed
    as `validate` prints them) or --trace has; 2 for a bad REF.
    """
    from renderer.commands.diff.json_form import diff_json
    from renderer.commands.diff.markdown import diff_markdown
    from renderer.commands.diff.text import diff_text

    asked = DiffOptions(**options)
    forms: dict[str, Callable[[DiffReport], str]] = {
        "json": json_form(diff_json, ensure_ascii=False),
        "text": diff_text,
        "markdown": lambda report: diff_markdown(report, max_chars=asked.max_chars),
    }
    trace = _trace(ctx, asked)
    result = _diff(ctx, asked, trace)
    if not result.head_valid:
        head = Findings(list(result.head_diagnostics), result.head_files)
        emit(head, findings_format(asked.fmt))
        ctx.exit(1)
    if result.waits is not None and result.waits.problems:
        emit(Findings(list(result.waits.problems), 1), findings_format(asked.fmt))
        ctx.exit(1)
    show_answer(result, asked.fmt, forms)
    ctx.exit(0)


def _trace(ctx: click.Context, asked: DiffOptions) -> Trace | None:
    """--trace, read before anything is rendered: a trace with findings ends here (exit 1)."""
    from renderer.inputs.trace import read_trace

    if asked.trace is None:
        return None
    root = root_of(ctx)
    try:
        shown = asked.trace.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        shown = str(asked.trace)
    trace = read_trace(asked.trace, shown)
    if trace.findings:
        emit(Findings(list(trace.findings), 1), findings_format(asked.fmt))
        ctx.exit(1)
    return trace


def _diff(ctx: click.Context, asked: DiffOptions, trace: Trace | None = None) -> DiffReport:
    """Both revisions rendered and compared; the base checked out into a folder that goes when
    this returns. A bad REF is a usage error."""
    from renderer.commands.diff.checkout import BaseCheckout, BaseRefError
    from renderer.commands.diff.platforms import DiffBase, diff_platforms
    from renderer.commands.render import default_jobs
    from renderer.commands.render_context import RenderContext
    from renderer.inputs.changes import changed_lines

    root = root_of(ctx)
    label, ref = _base(root, asked.base_ref)
    validator = output_validator(asked.crds, strict_schemas=asked.strict_schemas)
    with tempfile.TemporaryDirectory(prefix="gpuplane-diff-") as tmp:
        try:
            base = BaseCheckout(root, ref, Path(tmp))  # its files written in a thread
        except BaseRefError as err:
            raise click.UsageError(str(err)) from err
        try:
            index = open_render_index(
                root, asked.crds, strict_schemas=asked.strict_schemas, no_index=asked.no_index
            )
            with (
                progress("loading the working tree", plain=ctx.find_root().obj["no_color"]) as step,
                worker_stops_reported(),
            ):
                return diff_platforms(
                    DiffBase(Path(tmp), label, base.commit, base.wait),
                    root,
                    RenderContext(
                        validator,
                        changed=changed_lines(root, base=ref),
                        index=index if index.path is not None else None,
                        jobs=default_jobs(),
                    ),
                    on_cluster=lambda side, name: step(f"rendering {side}: cluster {name}"),
                    trace=trace,
                )
        except BaseRefError as err:
            raise click.UsageError(str(err)) from err
        finally:
            base.join()  # before the folder goes


def _base(root: Path, asked: str | None) -> tuple[str, str]:
    """(how the report names the base, the ref git reads): --base as given, else the merge base
    with the upstream default branch (`default_base`); none is a usage error (exit 2)."""
    from renderer.commands.diff.checkout import BaseRefError, default_base

    if asked is not None:
        return asked, asked
    try:
        return default_base(root)
    except BaseRefError as err:
        raise click.UsageError(str(err)) from err
