"""`gpuplane validate`: load, schema-check and policy-check every input file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from renderer.cli.completion import GIT_REFS
from renderer.cli.loading import load_inputs, output_validator, root_of
from renderer.cli.options import FINDINGS_FORMAT
from renderer.cli.reporters import Findings, emit
from renderer.findings.diagnostics import has_errors


@dataclass(frozen=True)
class ValidateOptions:
    fmt: str
    base: str | None
    allow_recreate: bool


@click.command()
@FINDINGS_FORMAT
@click.option(
    "--base",
    metavar="REF",
    shell_complete=GIT_REFS,
    help="Place shared findings on what changed since REF.",
)
@click.option(
    "--allow-recreate",
    is_flag=True,
    help="With --base: report a change the API server keeps immutable "
    "(output-immutable-field) as a warning, not an error: the objects will be recreated.",
)
@click.pass_context
def validate(ctx: click.Context, /, **options: Any) -> None:
    """Load, schema-check and policy-check every input file; write nothing.

    With --base, also render in memory and refuse a change the API server would refuse as an
    update of what is committed in rendered/ at REF (immutable fields, docs/cel.md)."""
    from renderer.commands.validate import with_transitions

    asked = ValidateOptions(**options)
    loaded = with_transitions(
        root_of(ctx),
        load_inputs(ctx, asked.base, capacity_gate=True),
        asked.base,
        allow_recreate=asked.allow_recreate,
        validator=lambda: output_validator((), strict_schemas=False),
    )
    all_clear = f"ok: {loaded.files} input files, no findings"
    emit(Findings(loaded.diagnostics, loaded.files, all_clear=all_clear), asked.fmt)
    ctx.exit(1 if has_errors(loaded.diagnostics) else 0)
