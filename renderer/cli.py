"""The `gpuplane` command: the only module that prints or chooses an exit code.

Exit codes: 0 fine (warnings allowed), 1 findings or stale output, 2 usage error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from renderer import report
from renderer.diagnostics import Diagnostic, closest, has_errors
from renderer.output_validation import CrdLoadError, OutputValidator
from renderer.pipeline import load_platform, render_platform
from renderer.rules import all_rules, explain
from renderer.writer import OUTPUT_DIR, build_tree, compare, write_tree

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(report.REPORTERS)),
    default="text",
    show_default=True,
    help="How findings are printed: for people, for tools, or as GitHub annotations.",
)


def _root(ctx: click.Context) -> Path:
    root: Path = ctx.obj["root"]
    return root


def _emit(
    diagnostics: Sequence[Diagnostic], files: int, fmt: str, extra: dict[str, object] | None = None
) -> None:
    if fmt == "json":
        body = json.loads(report.as_json(diagnostics, files))
        body.update(extra or {})
        click.echo(json.dumps(body, indent=2))
        return
    output = report.REPORTERS[fmt](diagnostics, files)
    if output:
        click.echo(output)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-C",
    "directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="Run as if started in this repository folder (like git -C).",
)
@click.version_option(package_name="gpuplane")
@click.pass_context
def main(ctx: click.Context, directory: Path) -> None:
    """gpuplane: validate and render a shared Kubernetes GPU platform from its YAML files."""
    ctx.obj = {"root": directory.resolve()}


@main.command()
@FORMAT
@click.pass_context
def validate(ctx: click.Context, fmt: str) -> None:
    """Load, schema-check and policy-check every input file; write nothing."""
    loaded = load_platform(_root(ctx))
    _emit(loaded.diagnostics, loaded.files, fmt)
    if fmt == "text" and not loaded.diagnostics:
        click.echo(f"ok: {loaded.files} input files, no findings")
    ctx.exit(1 if has_errors(loaded.diagnostics) else 0)


def _crd_sources(crds: tuple[Path, ...]) -> list[Path]:
    if crds:
        return list(crds)
    env = os.environ.get("GPUPLANE_CRDS", "")
    return [Path(p) for p in env.split(os.pathsep) if p]


@main.command()
@click.option("--check", is_flag=True, help="Write nothing; exit 1 listing files that are stale.")
@click.option(
    "--crds",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="CRD schemas for custom kinds: a folder, or a file as `kubectl get crd -o yaml` prints "
    "(repeatable; default $GPUPLANE_CRDS, separated by ':').",
)
@FORMAT
@click.pass_context
def render(ctx: click.Context, check: bool, crds: tuple[Path, ...], fmt: str) -> None:
    """Validate, render every cluster, validate the output, and write rendered/."""
    root = _root(ctx)
    try:
        validator = OutputValidator(_crd_sources(crds))
    except CrdLoadError as err:
        raise click.UsageError(str(err)) from err
    result = render_platform(root, validator)
    if has_errors(result.diagnostics):
        _emit(result.diagnostics, result.files, fmt)
        ctx.exit(1)
    files = build_tree(result.manifests, result.readmes, result.values)
    target = root / OUTPUT_DIR
    objects = sum(len(m) for m in result.manifests.values())
    if check:
        stale = compare(target, files)
        listing = (
            [{"file": f"{OUTPUT_DIR}/{p}", "state": "missing"} for p in stale.missing]
            + [{"file": f"{OUTPUT_DIR}/{p}", "state": "extra"} for p in stale.extra]
            + [{"file": f"{OUTPUT_DIR}/{p}", "state": "changed"} for p in stale.changed]
        )
        if fmt == "json":
            _emit(result.diagnostics, result.files, fmt, {"stale": listing})
        else:
            _emit(result.diagnostics, result.files, fmt)
            for item in listing:
                if fmt == "github":
                    click.echo(
                        f"::error file={item['file']},title=stale-output::{item['file']} is {item['state']}; run `make render` and commit the result"
                    )
                else:
                    click.echo(f"stale: {item['file']} ({item['state']})")
            if listing:
                click.echo(
                    f"{OUTPUT_DIR}/ is stale: {len(listing)} files differ; run `gpuplane render` and commit",
                    err=True,
                )
            else:
                click.echo(f"{OUTPUT_DIR}/ is current: {objects} objects in {len(files)} files")
        ctx.exit(1 if listing else 0)
    changes = write_tree(target, files)
    _emit(result.diagnostics, result.files, fmt, {"written": len(files)} if fmt == "json" else None)
    if fmt != "json":
        changed = len(changes.missing) + len(changes.extra) + len(changes.changed)
        click.echo(
            f"rendered {objects} objects for {len(result.manifests)} cluster(s) into {OUTPUT_DIR}/ "
            f"({changed} files added, changed or removed)"
        )
    ctx.exit(0)


@main.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="A table for people, Markdown for a pull-request comment, or JSON for tools.",
)
@click.option("--cluster", "clusters", multiple=True, help="Only these clusters (repeatable).")
@click.pass_context
def plan(ctx: click.Context, fmt: str, clusters: tuple[str, ...]) -> None:
    """Capacity and quota per pool and per team: guaranteed, nominal, lendable, maximum."""
    from renderer.plan import build_plan, plan_json, plan_markdown, plan_tables

    loaded = load_platform(_root(ctx))
    if has_errors(loaded.diagnostics):
        _emit(loaded.diagnostics, loaded.files, "text" if fmt == "markdown" else fmt)
        ctx.exit(1)
    unknown = sorted(set(clusters) - set(loaded.platform.clusters))
    if unknown:
        raise click.UsageError(f"unknown cluster(s): {', '.join(unknown)}")
    report = build_plan(loaded.platform, clusters or None)
    if fmt == "json":
        click.echo(json.dumps(plan_json(report), indent=2))
    elif fmt == "markdown":
        click.echo(plan_markdown(report), nl=False)
    else:
        console = Console(width=200, soft_wrap=False)
        for renderable in plan_tables(report):
            console.print(renderable)


@main.command()
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--namespace",
    help="The namespace the job would be created in (default: its metadata.namespace).",
)
@click.option("--cluster", help="The cluster, when the namespace exists on more than one.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.pass_context
def fit(
    ctx: click.Context, job: Path, namespace: str | None, cluster: str | None, fmt: str
) -> None:
    """Would Kueue admit this job, where, and if not, why? Exit 1 if it never can be."""
    from renderer.fit import check_fit, fit_json, fit_text

    loaded = load_platform(_root(ctx))
    if has_errors(loaded.diagnostics):
        _emit(loaded.diagnostics, loaded.files, fmt)
        ctx.exit(1)
    result = check_fit(loaded.platform, job, namespace=namespace, cluster=cluster)
    if fmt == "json":
        click.echo(json.dumps(fit_json(result), indent=2))
    else:
        click.echo(fit_text(result), nl=False)
    ctx.exit(0 if result.admissible else 1)


@main.command(name="explain")
@click.argument("rule_id", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every rule id with its summary.")
@click.pass_context
def explain_rule(ctx: click.Context, rule_id: str | None, list_all: bool) -> None:
    """Print why a rule exists and how to satisfy it."""
    if list_all or rule_id is None:
        table = Table("rule", "stage", "what it checks", box=None, pad_edge=False)
        for doc in all_rules():
            table.add_row(doc.id, doc.stage, doc.summary)
        Console(width=120, soft_wrap=True).print(table)
        ctx.exit(0)
    found = explain(rule_id)
    if found is None:
        known = [r.id for r in all_rules()]
        close = closest(rule_id, known)
        hint = f" Did you mean '{close}'?" if close else " Run `gpuplane explain --list`."
        raise click.UsageError(f"unknown rule '{rule_id}'.{hint}")
    click.echo(f"{found.id} ({found.stage})\n\n{found.text}")


def run() -> None:  # pragma: no cover - console entry for `python -m renderer`
    main(prog_name="gpuplane")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
