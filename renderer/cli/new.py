"""`gpuplane new`: a commented starting file for a new team, pool, queue or cluster."""

from __future__ import annotations

import click

from renderer.cli.loading import root_of

NEW_KINDS = ("cluster", "pool", "queue", "team")
"""What `gpuplane new` writes: `renderer.commands.new.KINDS`, spelt out so that `--help` need not
import the scaffolder (tests/test_cli_face.py checks that the two agree)."""


@click.command(name="new")
@click.argument("kind", type=click.Choice(NEW_KINDS))
@click.argument("name")
@click.pass_context
def new_file(ctx: click.Context, kind: str, name: str) -> None:
    """Write a commented starting file for a new team, pool, queue or cluster, and say what to
    fill in. An existing file is never overwritten."""
    from renderer.commands.new import MARK, ScaffoldError, scaffold, write_scaffold

    root = root_of(ctx)
    try:
        made = scaffold(kind, name, root)
        write_scaffold(root, made)
    except ScaffoldError as err:
        raise click.UsageError(str(err)) from err
    click.echo(f"wrote {made.path}; fill in the {len(made.blanks)} empty values marked {MARK}:")
    for blank in made.blanks:
        click.echo(f"  {made.path}:{blank.line}: {blank.field}: {blank.what}")
    click.echo(
        "then run `gpuplane validate`: it reports each value still empty, and every other problem"
    )
