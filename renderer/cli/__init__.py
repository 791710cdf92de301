"""The `gpuplane` command: the only package that prints or chooses an exit code.

One module per command: each parses its options into a small frozen dataclass, asks one function
of `renderer.commands` for the answer, prints it (findings through the reporter `--format` picks,
`reporters.REPORTERS`) and chooses the exit code. Shared options are in `options`, loading in
`loading`. Exit codes: 0 fine (warnings allowed), 1 findings or stale output, 2 usage error.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
from pathlib import Path

import click

# Only what every command needs is imported here: each command imports the rest of the engine
# itself, so `--help`, `new`, `explain` and `validate` start without the layers, Hera, rich or
# the output schemas (tests/test_cli_face.py).
from renderer.cli.acceptance import acceptance
from renderer.cli.completion import completion
from renderer.cli.cost import cost
from renderer.cli.diagram import diagram
from renderer.cli.diff import diff
from renderer.cli.explain import explain_rule
from renderer.cli.fit import fit
from renderer.cli.help import help_command
from renderer.cli.loading import repository_root
from renderer.cli.new import new_file
from renderer.cli.plan import plan
from renderer.cli.render import render
from renderer.cli.reporters import wants_color
from renderer.cli.schemas import schemas
from renderer.cli.simulate import simulate
from renderer.cli.validate import validate

GC_THRESHOLDS = (50_000, 20, 100)
"""A render allocates millions of small dicts, lists and strings that form no cycles and live
until the run ends; with Python's default first threshold (700) the collector scans them again
and again, about a quarter of a large `render --check` (make bench). Cycles are still collected,
less often; peak memory did not change in the benchmark."""


def tune_garbage_collection() -> None:
    """Leave the modules imported so far out of every collection, and collect less often. For
    the program only (`run`): a process that calls `main` itself keeps its own settings."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run() -> None:
    """The `gpuplane` program (and `python -m renderer`)."""
    tune_garbage_collection()
    try:
        main(prog_name="gpuplane")
    except SystemExit as end:
        leave(end.code)
    leave(0)  # pragma: no cover - click's standalone mode always exits


def leave(code: object) -> None:
    """End the program with `code` as `SystemExit` would (None is 0; a text is printed to
    stderr, and is 1), after the exit handlers (workers, `weakref.finalize`) and with its
    output flushed, but without the interpreter's teardown: freeing every object of a large
    render one by one took 50-70 ms of a 1.5 s check (docs/performance.md). Under a profiler
    or a tracer (cProfile, coverage), which write what they found at the interpreter's exit,
    it exits as `SystemExit` would."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(status & 0xFF)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-C",
    "directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Run as if started in this repository folder (like git -C). Without it, gpuplane "
    "works on the repository the current folder lies in, as git does: the nearest folder at or "
    "above it that holds gpuplane.yaml or clusters/, pools/, teams/ or queues/.",
)
@click.option(
    "--color/--no-color",
    "color",
    default=None,
    help="Colour the findings of text output. Default: only when stdout is a terminal and "
    "NO_COLOR is unset; --color or --no-color wins over both.",
)
@click.version_option(package_name="gpuplane")
@click.pass_context
def main(ctx: click.Context, directory: Path | None, *, color: bool | None) -> None:
    """gpuplane: validate and render a shared Kubernetes GPU platform from its YAML files."""
    here = Path.cwd()
    # -C names the repository itself, as scripts and CI pass it; without it, the repository
    # the current folder lies in, found as git finds its own
    root = directory.resolve() if directory is not None else repository_root(here)
    ctx.obj = {
        "root": root,
        # text findings name files as the user reaches them from where they stand (as git
        # status does); with -C, relative to the repository, as before
        "shown_from": os.path.relpath(root, here) if directory is None else ".",
        "color": wants_color(os.environ, flag=color, is_terminal=sys.stdout.isatty()),
        "no_color": color is False,  # --no-color also keeps the progress spinner plain
    }


for command in (
    fit,
    diagram,
    cost,
    validate,
    render,
    plan,
    diff,
    simulate,
    acceptance,
    schemas,
    new_file,
    explain_rule,
    completion,
    help_command,
):
    main.add_command(command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
