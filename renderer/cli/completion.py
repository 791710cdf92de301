"""`gpuplane completion`: the Tab-completion script for a shell."""

from __future__ import annotations

import click

SHELLS = ("bash", "zsh", "fish")


@click.command(short_help="Print the Tab-completion script for bash, zsh or fish.")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the Tab-completion script for SHELL (commands, options and their choices).

    \b
    Load it in every new shell:
      bash  add  eval "$(gpuplane completion bash)"  to ~/.bashrc
      zsh   add  eval "$(gpuplane completion zsh)"  to ~/.zshrc, after compinit
      fish  gpuplane completion fish > ~/.config/fish/completions/gpuplane.fish
    """
    from click.shell_completion import get_completion_class

    script = get_completion_class(shell)
    if script is None:  # pragma: no cover - click knows every shell in SHELLS
        raise click.UsageError(f"click has no completion for {shell}")
    # the variable click's own main() reads when the shell asks `gpuplane` for completions; the
    # root command is `gpuplane` itself (renderer.cli.main)
    main = ctx.find_root().command
    click.echo(script(main, {}, "gpuplane", "_GPUPLANE_COMPLETE").source().rstrip("\n"))
