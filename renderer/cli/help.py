"""`gpuplane help [COMMAND...]`: what `gpuplane [COMMAND...] --help` prints (as git, cargo and
kubectl have it)."""

from __future__ import annotations

import click


@click.command("help", short_help="Show the help of gpuplane or of one of its commands.")
@click.argument("command", nargs=-1)
@click.pass_context
def help_command(ctx: click.Context, command: tuple[str, ...]) -> None:
    """Show the help of gpuplane, or of COMMAND (`gpuplane help acceptance report`): the same
    text as `gpuplane COMMAND --help`. An unknown command is a usage error (exit 2)."""
    root = ctx.find_root()
    group: click.Command = root.command
    shown = root
    for name in command:
        if not isinstance(group, click.Group):
            raise click.UsageError(f"'{shown.command_path}' has no subcommands", ctx)
        sub = group.get_command(shown, name)
        if sub is None:
            raise click.UsageError(f"No such command '{name}'.", ctx)
        shown = click.Context(sub, info_name=name, parent=shown)
        group = sub
    click.echo(shown.get_help(), color=ctx.color)
