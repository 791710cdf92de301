"""`gpuplane fit`: the command's face (options, printing, exit code); the answer is
`renderer.admission`'s (docs/fit.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.completion import CLUSTERS, NAMESPACES
from renderer.cli.loading import load_inputs
from renderer.cli.options import TEXT_OR_JSON
from renderer.cli.reporters import Findings, emit, json_form, show_answer
from renderer.findings.diagnostics import closest, has_errors, inert

if TYPE_CHECKING:
    from renderer.admission.answer.result import FileFit


@dataclass(frozen=True)
class FitOptions:
    job: Path
    namespace: str | None
    cluster: str | None
    usage_files: tuple[Path, ...]
    fmt: str


@click.command()
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--namespace",
    shell_complete=NAMESPACES,
    help="The namespace the job would be created in (default: its metadata.namespace).",
)
@click.option(
    "--cluster",
    shell_complete=CLUSTERS,
    help="The cluster, when the namespace exists on more than one.",
)
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
def fit(ctx: click.Context, /, **options: Any) -> None:
    """Would Kueue admit each workload of this file, where, and if not, why? Exit 1 unless
    every one can be."""
    from renderer.admission.answer.text import file_json, file_text
    from renderer.admission.scheduler.kueue_usage import read_snapshot
    from renderer.commands.fit import check_file

    asked = FitOptions(**options)
    cluster = asked.cluster
    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(Findings(loaded.diagnostics, loaded.files), asked.fmt)
        ctx.exit(1)
    if cluster is not None and cluster not in loaded.platform.clusters:
        known = sorted(loaded.platform.clusters)  # a mistyped option of the gate: exit 2, as plan
        close = closest(cluster, known)
        hint = f" Did you mean '{close}'?" if close else f" Clusters: {', '.join(known) or 'none'}."
        raise click.UsageError(inert(f"unknown cluster '{cluster}'.{hint}"))
    usage = read_snapshot(asked.usage_files) if asked.usage_files else None
    answer = check_file(
        loaded.platform, asked.job, namespace=asked.namespace, cluster=cluster, usage=usage
    )
    forms: dict[str, Callable[[FileFit], str]] = {
        "json": json_form(file_json, loaded.diagnostics),
        "text": file_text,
    }
    show_answer(answer, asked.fmt, forms)
    ctx.exit(0 if answer.admissible else 1)  # every workload of the file
