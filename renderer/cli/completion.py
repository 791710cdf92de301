"""`gpuplane completion`: the Tab-completion script for a shell, and what Tab offers for the
values of each command (`shell_complete=` of their options): the repository's team, pool,
cluster, queue and namespace names, rule ids, git refs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import click
from click.shell_completion import CompletionItem

Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]

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


# --- what Tab offers for a command's values ---------------------------------------------------
# click calls these with the context parsed so far (`main`'s callback has not run: ctx.obj is
# not set) and the word being typed. They read only file names and, for namespaces, the team
# files themselves, never the whole platform, and never raise: a broken repository, a file
# that does not parse, no git, all complete to nothing rather than print a traceback into the
# user's shell.

INPUT_SUFFIXES = (".yaml", ".yml")


def _root(ctx: click.Context) -> Path:
    from renderer.cli.loading import repository_root

    directory = ctx.find_root().params.get("directory")
    return repository_root(Path(directory) if directory else Path.cwd())


def _matching(names: Iterable[str], incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in sorted(set(names)) if n.startswith(incomplete)]


def _guarded(find: Callable[[click.Context], Iterable[str]]) -> Completer:
    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        try:
            return _matching(find(ctx), incomplete)
        except Exception:  # completion must never print a traceback
            return []

    return complete


def _stems(folder: str) -> Callable[[click.Context], list[str]]:
    def find(ctx: click.Context) -> list[str]:
        here = _root(ctx) / folder
        return [p.stem for p in here.iterdir() if p.suffix in INPUT_SUFFIXES and p.is_file()]

    return find


def _namespaces(ctx: click.Context) -> list[str]:
    """The namespaces the team files declare (`spec.namespaces[].name`), file by file: a file
    that does not parse is left out."""
    from ruamel.yaml import YAML

    names = []
    for path in (_root(ctx) / "teams").iterdir():
        if path.suffix not in INPUT_SUFFIXES:
            continue
        try:
            data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
            names += [str(n["name"]) for n in data["spec"]["namespaces"] if isinstance(n, dict)]
        except Exception:  # one broken file completes nothing of its own
            continue
    return names


def _rule_ids(ctx: click.Context) -> list[str]:
    from renderer.cli.loading import load_every_rule
    from renderer.findings.rules import all_rules

    load_every_rule()
    return [rule.id for rule in all_rules()]


def _git_refs(ctx: click.Context) -> list[str]:
    """Branches, remote branches and tags, as `git checkout <Tab>` offers them, and HEAD."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return []
    done = subprocess.run(
        [
            git,
            "-C",
            str(_root(ctx)),
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads",
            "refs/remotes",
            "refs/tags",
        ],
        capture_output=True,
        text=True,
        timeout=5,
        check=False,
    )
    return ["HEAD", *done.stdout.split()] if done.returncode == 0 else []


TEAMS = _guarded(_stems("teams"))
POOLS = _guarded(_stems("pools"))
CLUSTERS = _guarded(_stems("clusters"))
QUEUES = _guarded(_stems("queues"))
NAMESPACES = _guarded(_namespaces)
RULES = _guarded(_rule_ids)
GIT_REFS = _guarded(_git_refs)
