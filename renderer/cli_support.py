"""What every `gpuplane` command shares: its common options, how it loads the platform and how
it prints findings. Part of the face (only the face prints); `cli.py` and the command modules
beside it (`cli_fit.py`) import it, so no command module needs `cli.py` itself.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from renderer import report
from renderer.findings.diagnostics import Diagnostic

if TYPE_CHECKING:
    from renderer.commands.render_index import RenderIndex
    from renderer.output.validation import OutputValidator
    from renderer.pipeline import Loaded

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(report.REPORTERS)),
    default="text",
    show_default=True,
    help="How findings are printed: for people (text), for tools (json), as GitHub annotations, "
    "as SARIF for code scanning, or as a JUnit XML report.",
)


CRDS = click.option(
    "--crds",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="CRD schemas for custom kinds: a folder, or a file as `kubectl get crd -o yaml` prints "
    "(repeatable; looked up before $GPUPLANE_CRDS, separated by ':', gpuplane.yaml's "
    "`schemas:` and the schema store).",
)

TEXT_OR_JSON = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Text for people, or JSON for tools.",
)

STRICT_SCHEMAS = click.option(
    "--strict-schemas",
    is_flag=True,
    help="Make a custom kind with no schema to check it an error, not a warning (for CI).",
)


def root_of(ctx: click.Context) -> Path:
    root: Path = ctx.obj["root"]
    return root


def load_inputs(ctx: click.Context, base: str | None = None) -> Loaded:
    """The platform, knowing from git which input lines the change being checked touches (since
    `base` when given), so a finding several files share lands on the changed entry."""
    from renderer.inputs.changes import base_problem, changed_lines
    from renderer.pipeline import load_platform

    root = root_of(ctx)
    if base is not None and (problem := base_problem(root, base)):
        raise click.UsageError(problem)  # asked for by name: not quietly ignored
    return load_platform(root, changed=changed_lines(root, base))


def emit(
    diagnostics: Sequence[Diagnostic], files: int, fmt: str, extra: dict[str, object] | None = None
) -> None:
    if fmt == "json":
        body = json.loads(report.as_json(diagnostics, files))
        body.update(extra or {})
        click.echo(report.json_text(body))
        return
    if fmt == "sarif":
        load_every_rule()  # the log's driver lists every rule, not only the imported ones
    colour = fmt == "text" and wants_colour()
    output = (
        report.text(diagnostics, files, color=True)
        if colour
        else report.REPORTERS[fmt](diagnostics, files)
    )
    if output:
        click.echo(output, color=colour)


def load_every_rule() -> None:
    """Import every module that documents rules. The registry imports none of them, and each
    command imports only what it uses, so `explain` and the SARIF log call this to know them all
    (tests/test_architecture.py and tests/test_cli_face.py check that it reaches every one)."""
    import renderer.commands.acceptance.judge
    import renderer.commands.acceptance.load
    import renderer.commands.cost.rules
    import renderer.pipeline  # noqa: F401


def wants_colour() -> bool:
    """What `main` decided about colour (`report.wants_color`), for the command running now."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return bool(obj and obj.get("color"))


def crds_from_environment() -> list[Path]:
    return [Path(p) for p in os.environ.get("GPUPLANE_CRDS", "").split(os.pathsep) if p]


def output_validator(crds: tuple[Path, ...], strict_schemas: bool) -> OutputValidator:
    """The output validator for --crds, then $GPUPLANE_CRDS; a CRD source that cannot be read
    is a usage error."""
    from renderer.output.crds import CrdLoadError
    from renderer.output.validation import OutputValidator

    try:
        return OutputValidator(
            list(crds),
            fallback_sources=crds_from_environment(),
            strict_schemas=strict_schemas,
        )
    except CrdLoadError as err:
        raise click.UsageError(str(err)) from err


def open_render_index(
    root: Path, crds: tuple[Path, ...], strict_schemas: bool, no_index: bool
) -> RenderIndex:
    """The repository's render index for these CRDs and options (`--no-index`: none)."""
    from renderer.commands.render_index import RenderIndex

    if no_index:
        return RenderIndex.disabled()
    return RenderIndex.open(
        root, crds, strict_schemas=strict_schemas, fallback=crds_from_environment()
    )


@contextlib.contextmanager
def worker_stops_reported() -> Iterator[None]:
    """A worker process that died (killed for memory, say) ends the command with one line that
    says which and how (exit 1), not with a traceback, and never with a wait that does not end."""
    from renderer.commands.workers import WorkerStopped

    try:
        yield
    except WorkerStopped as err:
        raise click.ClickException(str(err)) from err
