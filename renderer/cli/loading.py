"""How a `gpuplane` command gets what it works on: the repository's root, the platform loaded
from it, the output validator and the render index for its options, and every rule documented.
A worker process that dies is reported here too (`worker_stops_reported`): the command's one line.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from renderer.commands.render_index import RenderIndex
    from renderer.output.validation import OutputValidator
    from renderer.pipeline import Loaded


ROOT_MARKERS = ("clusters", "pools", "teams", "queues")
"""The input folders: a folder holding one of them is a gpuplane repository without
gpuplane.yaml (a new one)."""
REPOSITORY_FILE = "gpuplane.yaml"


def repository_root(start: Path) -> Path:
    """The repository `start` lies in, found as git finds its own from any subfolder: the
    nearest folder at or above `start` that holds gpuplane.yaml or an input folder (a new
    repository may have no gpuplane.yaml yet); else `start` itself (no repository: `no-inputs`
    says so). The walk stops at a git work tree's top (a folder holding `.git`), so it never
    leaves the repository for one around it. No git needed."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / REPOSITORY_FILE).is_file() or any(
            (folder / name).is_dir() for name in ROOT_MARKERS
        ):
            return folder
        if (folder / ".git").exists():
            break
    return start


def root_of(ctx: click.Context) -> Path:
    root: Path = ctx.obj["root"]
    return root


def load_inputs(
    ctx: click.Context, base: str | None = None, *, capacity_gate: bool = False
) -> Loaded:
    """The platform, knowing from git which input lines the change being checked touches (since
    `base` when given), so a finding several files share lands on the changed entry;
    `capacity_gate`: and each pool's size at that base, so the capacity gate (rule
    capacity-evidence) can tell which pools the change grows."""
    from renderer.inputs.changes import base_problem, base_sizes, changed_lines
    from renderer.pipeline import load_platform

    root = root_of(ctx)
    if base is not None and (problem := base_problem(root, base)):
        raise click.UsageError(problem)  # asked for by name: not quietly ignored
    sizes = base_sizes(root, base) if capacity_gate else None
    return load_platform(root, changed=changed_lines(root, base), base_sizes=sizes)


def load_every_rule() -> None:
    """Import every module that documents rules. The registry imports none of them, and each
    command imports only what it uses, so `explain` and the SARIF log call this to know them all
    (tests/test_architecture.py and tests/test_cli_face.py check that it reaches every one)."""
    import renderer.commands.acceptance.judge
    import renderer.commands.acceptance.load
    import renderer.commands.cost.rules
    import renderer.commands.simulate.compare
    import renderer.commands.stale
    import renderer.inputs.trace
    import renderer.inputs.trace_sources.common
    import renderer.pipeline  # noqa: F401


def crds_from_environment() -> list[Path]:
    return [Path(p) for p in os.environ.get("GPUPLANE_CRDS", "").split(os.pathsep) if p]


def output_validator(crds: tuple[Path, ...], *, strict_schemas: bool) -> OutputValidator:
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
    root: Path, crds: tuple[Path, ...], *, strict_schemas: bool, no_index: bool
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
