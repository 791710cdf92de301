"""`gpuplane fit`: the command's face (options, printing, exit code); the answer is
`renderer.admission`'s (docs/fit.md)."""

from __future__ import annotations

from pathlib import Path

import click

from renderer import report
from renderer.cli_support import TEXT_OR_JSON, emit, load_inputs
from renderer.findings.diagnostics import closest, has_errors, inert


@click.command()
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--namespace",
    help="The namespace the job would be created in (default: its metadata.namespace).",
)
@click.option("--cluster", help="The cluster, when the namespace exists on more than one.")
@click.option(
    "--usage",
    "usage_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The cluster's usage now: the JSON of `kubectl get workloads,clusterqueues -A -o json` "
    "or of Kueue's visibility API (pendingworkloads); repeat to combine. Without it fit assumes "
    "an empty cluster.",
)
@TEXT_OR_JSON
@click.pass_context
def fit(
    ctx: click.Context,
    job: Path,
    namespace: str | None,
    cluster: str | None,
    usage_files: tuple[Path, ...],
    fmt: str,
) -> None:
    """Would Kueue admit each workload of this file, where, and if not, why? Exit 1 unless
    every one can be."""
    from renderer.admission.answer.text import file_json, file_text
    from renderer.admission.scheduler.usage import read_snapshot
    from renderer.commands.fit import check_file

    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(loaded.diagnostics, loaded.files, fmt)
        ctx.exit(1)
    if cluster is not None and cluster not in loaded.platform.clusters:
        known = sorted(loaded.platform.clusters)  # a mistyped option of the gate: exit 2, as plan
        close = closest(cluster, known)
        hint = f" Did you mean '{close}'?" if close else f" Clusters: {', '.join(known) or 'none'}."
        raise click.UsageError(inert(f"unknown cluster '{cluster}'.{hint}"))
    usage = read_snapshot(usage_files) if usage_files else None
    answer = check_file(loaded.platform, job, namespace=namespace, cluster=cluster, usage=usage)
    if fmt == "json":
        click.echo(report.json_text(file_json(answer)))
    else:
        click.echo(file_text(answer), nl=False)
    ctx.exit(0 if answer.admissible else 1)  # every workload of the file
