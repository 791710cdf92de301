"""`gpuplane diagram`: the command's face (options, printing, exit code); the picture is
`renderer.commands.diagram`'s (docs/diagram.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from renderer.cli.completion import CLUSTERS
from renderer.cli.loading import load_inputs
from renderer.cli.options import format_option
from renderer.cli.reporters import Findings, emit
from renderer.findings.diagnostics import has_errors


@dataclass(frozen=True)
class DiagramOptions:
    cluster: str | None
    fmt: str
    output: Path | None


@click.command()
@click.option(
    "--cluster",
    shell_complete=CLUSTERS,
    help="Only this cluster. Without it: every cluster, one section (SVG) or subgraph "
    "(Mermaid) each.",
)
@format_option(
    "svg",
    "mermaid",
    default="svg",
    help="An SVG picture, or a Mermaid flowchart for a ```mermaid block in Markdown.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the picture to this file (atomically) instead of stdout.",
)
@click.pass_context
def diagram(ctx: click.Context, /, **options: Any) -> None:
    """Draw the declared platform in the guide's six layers: control plane, queue layer,
    platform add-ons, GPU worker pools, workloads per team, network and data path."""
    from renderer.commands.diagram import build, unknown_cluster
    from renderer.output.writer import write_file_atomically

    asked = DiagramOptions(**options)
    output = asked.output
    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), "text")
        ctx.exit(1)
    problem = unknown_cluster(loaded.platform, asked.cluster)
    if problem is not None:
        raise click.UsageError(problem)
    picture = build(loaded.platform, asked.cluster, asked.fmt)
    if output is None:
        click.echo(picture.text, nl=False)
        return
    try:
        write_file_atomically(output, picture.text.encode("utf-8"))
    except OSError as error:
        raise click.ClickException(f"cannot write {output}: {error.strerror}") from None
