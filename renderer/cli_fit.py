"""`gpuplane fit`: the command's face (options, printing, exit code); the answer is
`renderer.commands.fit`'s (docs/fit.md)."""

from __future__ import annotations

from pathlib import Path

import click

from renderer import report
from renderer.cli_support import TEXT_OR_JSON, emit, load_inputs
from renderer.findings.diagnostics import has_errors


@click.command()
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--namespace",
    help="The namespace the job would be created in (default: its metadata.namespace).",
)
@click.option("--cluster", help="The cluster, when the namespace exists on more than one.")
@TEXT_OR_JSON
@click.pass_context
def fit(
    ctx: click.Context, job: Path, namespace: str | None, cluster: str | None, fmt: str
) -> None:
    """Would Kueue admit this job, where, and if not, why? Exit 1 if it never can be."""
    from renderer.commands.fit.load import check_fit
    from renderer.commands.fit.text import fit_json, fit_text

    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(loaded.diagnostics, loaded.files, fmt)
        ctx.exit(1)
    result = check_fit(loaded.platform, job, namespace=namespace, cluster=cluster)
    if fmt == "json":
        click.echo(report.json_text(fit_json(result)))
    else:
        click.echo(fit_text(result), nl=False)
    ctx.exit(0 if result.admissible else 1)
