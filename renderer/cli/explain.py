"""`gpuplane explain`: why a rule exists and how to satisfy it."""

from __future__ import annotations

import click

from renderer.cli.completion import RULES
from renderer.cli.loading import load_every_rule
from renderer.findings.diagnostics import closest
from renderer.findings.rules import all_rules, explain


@click.command(name="explain")
@click.argument("rule_id", required=False, shell_complete=RULES)
@click.option("--list", "list_all", is_flag=True, help="List every rule id with its summary.")
@click.pass_context
def explain_rule(ctx: click.Context, rule_id: str | None, *, list_all: bool) -> None:
    """Print why a rule exists and how to satisfy it."""
    from renderer.commands.explain import explain_text
    from renderer.findings.rules import listing

    load_every_rule()
    if list_all or rule_id is None:
        click.echo("\n".join(listing(width=100)))  # whole summaries, wrapped to 100 columns
        ctx.exit(0)
    found = explain(rule_id)
    if found is None:
        known = [r.id for r in all_rules()]
        close = closest(rule_id, known)
        hint = f" Did you mean '{close}'?" if close else " Run `gpuplane explain --list`."
        raise click.UsageError(f"unknown rule '{rule_id}'.{hint}")
    click.echo(explain_text(found))
