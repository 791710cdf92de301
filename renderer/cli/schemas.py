"""`gpuplane schemas`: the operators' CRDs that custom kinds are checked against."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from renderer.cli.completion import CLUSTERS
from renderer.cli.loading import root_of
from renderer.cli.options import TEXT_OR_JSON
from renderer.cli.reporters import json_form, show_answer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from renderer.commands.schemas import ReleaseRow

    Listing = tuple[Sequence[ReleaseRow], Sequence[tuple[str, str, str]]]
    """`schemas list`'s answer: the store's releases, and the pinned releases it lacks."""


@dataclass(frozen=True)
class ImportOptions:
    sources: tuple[str, ...]
    release: str | None
    operator: str | None
    cluster: str | None


@dataclass(frozen=True)
class PullOptions:
    kube_context: str | None
    cluster: str | None
    release: str | None
    everything: bool


@click.group()
def schemas() -> None:
    """The operators' CRDs that custom kinds are checked against: import, pull, list.

    They are kept per operator release in .gpuplane/schemas/ (commit it, so that CI checks the
    same schemas); each cluster's objects are checked against the release its file pins.
    """


@schemas.command(name="import")
@click.argument("sources", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option(
    "--release", help="The release they are, as cluster files pin it (default: the pinned one)."
)
@click.option(
    "--operator", help="File them under this operator (default: from each CRD's API group)."
)
@click.option(
    "--cluster", shell_complete=CLUSTERS, help="Take the releases from this cluster's pins."
)
@click.pass_context
def schemas_import(ctx: click.Context, /, **options: Any) -> None:
    """Import CRDs (release files, or `kubectl get crd -o yaml` output; - reads stdin)."""
    from renderer.commands.schemas import (
        Input,
        SchemaImportError,
        import_crds,
        import_text,
        pins_for_import,
        read_inputs,
    )

    asked = ImportOptions(**options)
    root = root_of(ctx)
    try:
        pins = pins_for_import(root, asked.release, asked.cluster)
        inputs: list[Input] = []
        for source in asked.sources:
            if source == "-":
                inputs.append(Input("stdin", sys.stdin.buffer.read()))
            else:
                inputs.extend(read_inputs([Path(source)]))
        imported = import_crds(root, inputs, pins, release=asked.release, operator=asked.operator)
    except SchemaImportError as err:
        raise click.UsageError(str(err)) from err
    click.echo(import_text(imported), nl=False)


@schemas.command(name="pull")
@click.option("--context", "kube_context", help="The kubectl context of the cluster to read.")
@click.option(
    "--cluster",
    shell_complete=CLUSTERS,
    help="The cluster file it is, whose pins name the releases.",
)
@click.option("--release", help="The release they are (default: the pinned one).")
@click.option(
    "--all", "everything", is_flag=True, help="Also CRDs of operators gpuplane renders nothing for."
)
@click.pass_context
def schemas_pull(ctx: click.Context, /, **options: Any) -> None:
    """Import the CRDs of a running cluster, through `kubectl get crd -o yaml`."""
    from renderer.commands.schemas import (
        SchemaImportError,
        import_crds,
        import_text,
        kubectl_crds,
        pins_for_import,
    )

    asked = PullOptions(**options)
    root = root_of(ctx)
    try:
        pins = pins_for_import(root, asked.release, asked.cluster)
        pulled = kubectl_crds(asked.kube_context)
        imported = import_crds(
            root, [pulled], pins, release=asked.release, known_only=not asked.everything
        )
    except SchemaImportError as err:
        raise click.UsageError(str(err)) from err
    click.echo(import_text(imported), nl=False)


@schemas.command(name="list")
@TEXT_OR_JSON
@click.pass_context
def schemas_list(ctx: click.Context, fmt: str) -> None:
    """What the schema store holds, per operator release, and which pinned releases it lacks."""
    from renderer.commands.schemas import (
        SchemaImportError,
        list_json,
        list_text,
        missing_pins,
        store_rows,
    )
    from renderer.pipeline import load_platform

    root = root_of(ctx)
    loaded = load_platform(root)
    try:
        rows = store_rows(root, loaded.platform)
    except SchemaImportError as err:
        raise click.UsageError(str(err)) from err
    missing = missing_pins(root, loaded.platform)
    forms: dict[str, Callable[[Listing], str]] = {
        "json": json_form(lambda listing: list_json(*listing), loaded.diagnostics),
        "text": lambda listing: list_text(*listing),
    }
    show_answer((rows, missing), fmt, forms)
