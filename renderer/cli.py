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

# every module that documents rules is imported here, so `explain` and SARIF know them all
import renderer.commands.acceptance.judge
import renderer.commands.acceptance.load  # noqa: F401
from renderer import report
from renderer.commands.new import KINDS, MARK, ScaffoldError, scaffold, write_scaffold
from renderer.findings.diagnostics import Diagnostic, Location, closest, has_errors
from renderer.findings.rules import all_rules, document_rule, explain
from renderer.layers.gitops.codeowners import CODEOWNERS_PATH, codeowners
from renderer.output.crds import CrdLoadError
from renderer.output.validation import OutputValidator
from renderer.output.writer import (
    OUTPUT_DIR,
    build_tree,
    compare,
    write_file_atomically,
    write_tree,
)
from renderer.pipeline import load_platform, render_platform

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
    "(repeatable; default $GPUPLANE_CRDS, separated by ':').",
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
@CRDS
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
    owners = codeowners(result.platform)
    target = root / OUTPUT_DIR
    objects = sum(len(m) for m in result.manifests.values())
    if check:
        stale = compare(target, files)
        listing = (
            [{"file": f"{OUTPUT_DIR}/{p}", "state": "missing"} for p in stale.missing]
            + [{"file": f"{OUTPUT_DIR}/{p}", "state": "extra"} for p in stale.extra]
            + [{"file": f"{OUTPUT_DIR}/{p}", "state": "changed"} for p in stale.changed]
            + _stale_codeowners(root, owners)
        )
        if fmt == "json":
            _emit(result.diagnostics, result.files, fmt, {"stale": listing})
        elif fmt in ("sarif", "junit"):  # one document: stale files are findings in it
            stale_findings = [
                Diagnostic(
                    "stale-output",
                    f"{item['file']} is {item['state']}; run `gpuplane render` and commit the result",
                    Location(item["file"]),
                )
                for item in listing
            ]
            _emit([*result.diagnostics, *stale_findings], result.files, fmt)
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
                    f"stale: {len(listing)} generated files differ; run `gpuplane render` and commit",
                    err=True,
                )
            else:
                click.echo(f"{OUTPUT_DIR}/ is current: {objects} objects in {len(files)} files")
        ctx.exit(1 if listing else 0)
    changes = write_tree(target, files)
    # after the tree: a failed render leaves CODEOWNERS as it was too
    wrote_owners = owners is not None and write_file_atomically(
        root / CODEOWNERS_PATH, owners.encode("utf-8")
    )
    _emit(result.diagnostics, result.files, fmt, {"written": len(files)} if fmt == "json" else None)
    if fmt in ("text", "github"):
        changed = len(changes.missing) + len(changes.extra) + len(changes.changed)
        click.echo(
            f"rendered {objects} objects for {len(result.manifests)} cluster(s) into {OUTPUT_DIR}/ "
            f"({changed} files added, changed or removed)"
            + (f"; wrote {CODEOWNERS_PATH}" if wrote_owners else "")
        )
    ctx.exit(0)


document_rule(
    "stale-output",
    "output",
    """A generated file differs from what the inputs render.

`rendered/` and `.github/CODEOWNERS` are committed output, and `gpuplane render --check` (what CI
runs) renders the inputs again and compares: a file is missing, extra or changed when an input
was edited without rendering, the output was edited by hand, or another gpuplane version rendered
it. Run `gpuplane render` (or `make render`) and commit the result.""",
)


def _stale_codeowners(root: Path, owners: str | None) -> list[dict[str, str]]:
    """`.github/CODEOWNERS` as `render --check` lists it: missing or changed, like a rendered
    file. Without repository settings gpuplane generates none and leaves any there alone."""
    if owners is None:
        return []
    path = root / CODEOWNERS_PATH
    if not path.is_file():
        return [{"file": CODEOWNERS_PATH, "state": "missing"}]
    if path.read_bytes() != owners.encode("utf-8"):
        return [{"file": CODEOWNERS_PATH, "state": "changed"}]
    return []


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
    from renderer.commands.plan import build_plan, plan_json, plan_markdown, plan_tables

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
    from renderer.commands.fit.load import check_fit
    from renderer.commands.fit.text import fit_json, fit_text

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


@main.command()
@click.option(
    "--base",
    "base_ref",
    required=True,
    metavar="REF",
    help="The git revision to compare the working tree with (a branch, tag or commit).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json", "text"]),
    default="markdown",
    show_default=True,
    help="Markdown for a sticky pull-request comment, JSON for tools, or text for people.",
)
@CRDS
@click.option(
    "--max-chars",
    type=click.IntRange(min=1000),
    default=60000,
    show_default=True,
    help="Truncate the Markdown to this many characters (GitHub's comment limit is 65,536).",
)
@click.pass_context
def diff(
    ctx: click.Context, base_ref: str, fmt: str, crds: tuple[Path, ...], max_chars: int
) -> None:
    """What the change from REF to the working tree means, by cluster and team, marked by risk.

    Exit 0 when the working tree is valid, whatever the change; 1 when it has findings (printed
    as `validate` prints them); 2 for a bad REF.
    """
    import tempfile

    from renderer.commands.diff.checkout import BaseRefError, checkout_base
    from renderer.commands.diff.json_form import diff_json
    from renderer.commands.diff.markdown import diff_markdown
    from renderer.commands.diff.platforms import diff_platforms
    from renderer.commands.diff.text import diff_text

    root = _root(ctx)
    try:
        validator = OutputValidator(_crd_sources(crds))
    except CrdLoadError as err:
        raise click.UsageError(str(err)) from err
    with tempfile.TemporaryDirectory(prefix="gpuplane-diff-") as tmp:
        try:
            commit = checkout_base(root, base_ref, Path(tmp))
        except BaseRefError as err:
            raise click.UsageError(str(err)) from err
        result = diff_platforms(Path(tmp), root, validator, base_ref=base_ref, base_commit=commit)
    if not result.head_valid:
        _emit(list(result.head_diagnostics), result.head_files, "json" if fmt == "json" else "text")
        ctx.exit(1)
    if fmt == "json":
        click.echo(json.dumps(diff_json(result), indent=2, ensure_ascii=False))
    elif fmt == "text":
        click.echo(diff_text(result), nl=False)
    else:
        click.echo(diff_markdown(result, max_chars=max_chars), nl=False)
    ctx.exit(0)


@main.group()
def acceptance() -> None:
    """Acceptance results of the probes, judged against each pool's thresholds."""


@acceptance.command(name="report")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="A table for people, Markdown for a pull-request comment or job summary, JSON for tools.",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    help="A pool that must be reported even without results (repeatable): its thresholds are "
    "then missing.",
)
@click.pass_context
def acceptance_report(
    ctx: click.Context, results: tuple[Path, ...], fmt: str, pools: tuple[str, ...]
) -> None:
    """Pass or fail of RESULTS (probe JSON files, or folders of them) against each pool's
    thresholds. Exit 0 when all pass, 1 on a failure, a missing result or an unreadable file."""
    from renderer.commands.acceptance.forms import report_json, report_markdown, report_text
    from renderer.commands.acceptance.judge import build_report
    from renderer.commands.acceptance.load import load_results

    loaded = load_platform(_root(ctx))
    if has_errors(loaded.diagnostics):
        _emit(loaded.diagnostics, loaded.files, "json" if fmt == "json" else "text")
        ctx.exit(1)
    unknown = sorted(set(pools) - set(loaded.platform.pools))
    if unknown:
        close = closest(unknown[0], loaded.platform.pools)
        hint = f" Did you mean '{close}'?" if close else ""
        raise click.UsageError(f"unknown pool(s): {', '.join(unknown)}.{hint}")
    found, findings = load_results(results)
    if not found and not findings:
        raise click.UsageError("no result files: the folders given hold no *.json")
    accepted = build_report(loaded.platform, found, findings, pools)
    render = {"json": report_json, "markdown": report_markdown, "text": report_text}[fmt]
    click.echo(render(accepted), nl=False)
    ctx.exit(0 if accepted.passed else 1)


@main.command(name="new")
@click.argument("kind", type=click.Choice(sorted(KINDS)))
@click.argument("name")
@click.pass_context
def new_file(ctx: click.Context, kind: str, name: str) -> None:
    """Write a commented starting file for a new team, pool, queue or cluster, and say what to
    fill in. An existing file is never overwritten."""
    root = _root(ctx)
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
