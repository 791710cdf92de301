"""`gpuplane render`: render every cluster into rendered/, or (`--check`) say what is stale."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.loading import (
    open_render_index,
    output_validator,
    root_of,
    worker_stops_reported,
)
from renderer.cli.options import CRDS, FINDINGS_FORMAT, STRICT_SCHEMAS, UNCHECKED
from renderer.cli.reporters import Findings, emit, progress

if TYPE_CHECKING:
    from renderer.output.coverage import UncheckedView


@dataclass(frozen=True)
class RenderOptions:
    check: bool
    allow_recreate: bool
    jobs: int
    no_index: bool
    crds: tuple[Path, ...]
    strict_schemas: bool
    unchecked: UncheckedView
    fmt: str


@click.command()
@click.option("--check", is_flag=True, help="Write nothing; exit 1 listing files that are stale.")
@click.option(
    "--allow-recreate",
    is_flag=True,
    help="Write even when a change edits a field the API server keeps immutable "
    "(output-immutable-field becomes a warning): those objects must be deleted and recreated.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=0,
    show_default="one per CPU",
    help="Render and check this many clusters at once, each in a worker process (1: one after "
    "the other, in this process). The output is the same bytes either way.",
)
@click.option(
    "--no-index",
    is_flag=True,
    help="Render every cluster again, neither reading nor updating the render index (what each "
    "cluster rendered last time, kept in $GPUPLANE_CACHE_DIR or ~/.cache/gpuplane; see "
    "docs/performance.md).",
)
@CRDS
@STRICT_SCHEMAS
@UNCHECKED
@FINDINGS_FORMAT
@click.pass_context
def render(ctx: click.Context, /, **options: Any) -> None:
    """Validate, render every cluster, validate the output, and write rendered/."""
    from renderer.output.writer import OUTPUT_DIR, TreeListing

    asked = RenderOptions(**options)
    root = root_of(ctx)
    on_disk = TreeListing(root / OUTPUT_DIR)  # in a child process, while this one imports and loads

    from renderer.commands.write_or_check import RenderRequest, write_or_check

    request = RenderRequest(asked.check, asked.allow_recreate, asked.jobs)
    validator = output_validator(asked.crds, strict_schemas=asked.strict_schemas)
    index = open_render_index(
        root, asked.crds, strict_schemas=asked.strict_schemas, no_index=asked.no_index
    )
    with (
        progress("loading the inputs", plain=ctx.find_root().obj["no_color"]) as step,
        worker_stops_reported(),
    ):
        done = write_or_check(
            root,
            request,
            validator=validator,
            index=index,
            listing=on_disk,
            on_cluster=lambda name: step(f"rendered and checked cluster {name}"),
        )
    from renderer.output.coverage import unchecked_shown

    diagnostics = done.diagnostics
    if asked.fmt == "text":
        diagnostics = unchecked_shown(diagnostics, asked.unchecked)
    findings = Findings(
        diagnostics, done.inputs, stale=done.stale, written=done.written, said=done.said
    )
    emit(findings, asked.fmt)
    ctx.exit(1 if done.failed or done.stale else 0)
