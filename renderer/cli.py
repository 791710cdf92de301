"""The `gpuplane` command: the only module that prints or chooses an exit code.

Exit codes: 0 fine (warnings allowed), 1 findings or stale output, 2 usage error.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import click

# Only what every command needs is imported here: each command imports the rest of the engine
# itself, so `--help`, `new`, `explain` and `validate` start without the layers, Hera, rich or
# the output schemas (tests/test_cli_face.py). `load_every_rule` reaches every rule's module.
from renderer import report
from renderer.cli_cost import cost
from renderer.cli_diagram import diagram
from renderer.cli_fit import fit
from renderer.cli_support import (
    CRDS,
    FORMAT,
    STRICT_SCHEMAS,
    TEXT_OR_JSON,
    emit,
    load_every_rule,
    load_inputs,
    open_render_index,
    output_validator,
    root_of,
    wants_colour,
    worker_stops_reported,
)
from renderer.findings.diagnostics import Diagnostic, Location, closest, has_errors
from renderer.findings.rules import all_rules, document_rule, explain

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
    main(prog_name="gpuplane")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-C",
    "directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="Run as if started in this repository folder (like git -C).",
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
def main(ctx: click.Context, directory: Path, color: bool | None) -> None:
    """gpuplane: validate and render a shared Kubernetes GPU platform from its YAML files."""
    ctx.obj = {
        "root": directory.resolve(),
        "color": report.wants_color(color, os.environ, sys.stdout.isatty()),
        "no_color": color is False,  # --no-color also keeps the progress spinner plain
    }


main.add_command(fit)
main.add_command(diagram)
main.add_command(cost)


@main.command()
@FORMAT
@click.option("--base", metavar="REF", help="Place shared findings on what changed since REF.")
@click.option(
    "--allow-recreate",
    is_flag=True,
    help="With --base: report a change the API server keeps immutable "
    "(output-immutable-field) as a warning, not an error: the objects will be recreated.",
)
@click.pass_context
def validate(ctx: click.Context, fmt: str, base: str | None, allow_recreate: bool) -> None:
    """Load, schema-check and policy-check every input file; write nothing.

    With --base, also render in memory and refuse a change the API server would refuse as an
    update of what is committed in rendered/ at REF (immutable fields, docs/cel.md)."""
    loaded = load_inputs(ctx, base)
    if base is not None and not has_errors(loaded.diagnostics):
        from renderer.commands.transition_checks import check_transitions
        from renderer.findings.diagnostics import sort_diagnostics
        from renderer.output.transitions import committed_tree

        root = root_of(ctx)
        previous = committed_tree(root, base)
        if previous:
            found = check_transitions(root, loaded.platform, output_validator((), False), previous)
            if allow_recreate:
                found = _recreate_allowed(found)
            loaded = replace(loaded, diagnostics=sort_diagnostics([*loaded.diagnostics, *found]))
    emit(loaded.diagnostics, loaded.files, fmt)
    if fmt == "text" and not loaded.diagnostics:
        click.echo(f"ok: {loaded.files} input files, no findings")
    ctx.exit(1 if has_errors(loaded.diagnostics) else 0)


def _recreate_allowed(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """`--allow-recreate`: an immutable-field update is a warning, the rest stays."""
    from renderer.findings.diagnostics import Severity

    return [
        replace(d, severity=Severity.WARNING) if d.rule == "output-immutable-field" else d
        for d in diagnostics
    ]


@main.command()
@click.option("--check", is_flag=True, help="Write nothing; exit 1 listing files that are stale.")
@click.option(
    "--allow-recreate",
    is_flag=True,
    help="Write even when a change edits a field the API server keeps immutable "
    "(output-immutable-field becomes a warning): those objects must be deleted and recreated.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=0,
    show_default="one per CPU",
    help="Render and check this many clusters at once, each in a worker process (1: one after "
    "the other, in this process). The output is the same bytes either way.",
)
@click.option(
    "--no-index",
    is_flag=True,
    help="Render every cluster again, neither reading nor updating the render index (what each "
    "cluster rendered last time, kept in $GPUPLANE_CACHE_DIR or ~/.cache/gpuplane; see "
    "docs/performance.md).",
)
@CRDS
@STRICT_SCHEMAS
@FORMAT
@click.pass_context
def render(
    ctx: click.Context,
    check: bool,
    allow_recreate: bool,
    jobs: int,
    no_index: bool,
    crds: tuple[Path, ...],
    strict_schemas: bool,
    fmt: str,
) -> None:
    """Validate, render every cluster, validate the output, and write rendered/."""
    from renderer.output.writer import OUTPUT_DIR, TreeListing, write_file_atomically, write_tree

    root = root_of(ctx)
    target = root / OUTPUT_DIR
    on_disk = TreeListing(target)  # in a child process, while this one imports and loads

    from renderer.commands.render import default_jobs, render_tree, restat
    from renderer.inputs.changes import changed_lines
    from renderer.layers.gitops.codeowners import CODEOWNERS_PATH, codeowners
    from renderer.output.transitions import committed_tree

    validator = output_validator(crds, strict_schemas)
    index = open_render_index(root, crds, strict_schemas, no_index)
    with (
        report.progress("loading the inputs", plain=ctx.find_root().obj["no_color"]) as step,
        worker_stops_reported(),
    ):
        result = render_tree(
            root,
            validator,
            target,
            changed=changed_lines(root),
            previous=committed_tree(root, listing=on_disk),
            keep_files=not check,
            jobs=jobs or default_jobs(),
            on_cluster=lambda name: step(f"rendered and checked cluster {name}"),
            index=index,
            listing=on_disk,
        )
    diagnostics = result.diagnostics
    if allow_recreate:
        diagnostics = _recreate_allowed(diagnostics)
    if has_errors(diagnostics) or result.staleness is None:
        emit(diagnostics, result.inputs, fmt)
        ctx.exit(1)
    owners = codeowners(result.platform)
    objects = result.objects
    if check:
        stale = result.staleness
        listing = (
            [{"file": f"{OUTPUT_DIR}/{p}", "state": "missing"} for p in stale.missing]
            + [{"file": f"{OUTPUT_DIR}/{p}", "state": "extra"} for p in stale.extra]
            + [{"file": f"{OUTPUT_DIR}/{p}", "state": "changed"} for p in stale.changed]
            + _stale_codeowners(root, owners)
        )
        if fmt == "json":
            emit(diagnostics, result.inputs, fmt, {"stale": listing})
        elif fmt in ("sarif", "junit"):  # one document: stale files are findings in it
            stale_findings = [
                Diagnostic(
                    "stale-output",
                    f"{item['file']} is {item['state']}; run `gpuplane render` and commit the result",
                    Location(item["file"]),
                )
                for item in listing
            ]
            emit([*diagnostics, *stale_findings], result.inputs, fmt)
        else:
            emit(diagnostics, result.inputs, fmt)
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
                click.echo(
                    f"{OUTPUT_DIR}/ is current: {objects} objects in {result.file_count} files"
                )
        index.save()
        ctx.exit(1 if listing else 0)
    assert result.files is not None, "rendered with keep_files"
    changes = write_tree(target, result.files, result.staleness)
    if not changes.clean:
        restat(index, target)
    index.save()
    # after the tree: a failed render leaves CODEOWNERS as it was too
    wrote_owners = owners is not None and write_file_atomically(
        root / CODEOWNERS_PATH, owners.encode("utf-8")
    )
    emit(
        diagnostics,
        result.inputs,
        fmt,
        {"written": result.file_count} if fmt == "json" else None,
    )
    if fmt in ("text", "github"):
        changed = len(changes.missing) + len(changes.extra) + len(changes.changed)
        click.echo(
            f"rendered {objects} objects for {result.clusters} cluster(s) into {OUTPUT_DIR}/ "
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
it.

To satisfy it: run `gpuplane render` (or `make render`) with the gpuplane version CI uses, and
commit `rendered/` and `.github/CODEOWNERS` together with the input change. Change the inputs,
never the rendered files: a hand edit is undone by the next render.""",
)


def _stale_codeowners(root: Path, owners: str | None) -> list[dict[str, str]]:
    """`.github/CODEOWNERS` as `render --check` lists it: missing or changed, like a rendered
    file. Without repository settings gpuplane generates none and leaves any there alone."""
    from renderer.layers.gitops.codeowners import CODEOWNERS_PATH

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
@click.option(
    "--team",
    "teams",
    multiple=True,
    metavar="NAME",
    help="Only what this team can get, and where: its quota per pool, what it can borrow, and "
    "the namespaces and ClusterQueues it submits through (repeatable).",
)
@click.option(
    "--pool",
    "pools",
    multiple=True,
    metavar="NAME",
    help="Only this pool: who holds quota on it, and what is free and lendable (repeatable; "
    "with --team, that team on that pool).",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Print every table at its full width, one line per row, whatever the terminal's width.",
)
@click.pass_context
def plan(
    ctx: click.Context,
    fmt: str,
    clusters: tuple[str, ...],
    teams: tuple[str, ...],
    pools: tuple[str, ...],
    wide: bool,
) -> None:
    """Capacity and quota per pool and per team: guaranteed, nominal, lendable, what can be
    borrowed, the maximum, and the ClusterQueues teams submit to. Text tables fit the terminal
    (100 columns when stdout is not one) unless --wide."""
    import shutil

    from rich.console import Console

    from renderer.commands.plan import build_plan, plan_json, unknown_names
    from renderer.commands.plan_forms import plan_markdown, plan_tables
    from renderer.report import json_text

    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(loaded.diagnostics, loaded.files, "text" if fmt == "markdown" else fmt)
        ctx.exit(1)
    problem = unknown_names(loaded.platform, clusters, teams, pools)
    if problem is not None:
        raise click.UsageError(problem)
    report = build_plan(loaded.platform, clusters or None, teams, pools)
    if fmt == "json":
        click.echo(json_text(plan_json(report)))
    elif fmt == "markdown":
        click.echo(plan_markdown(report), nl=False)
    else:
        colour = wants_colour()
        # a terminal's own width (or $COLUMNS); a pipe, a file or a CI log gets 100 columns
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 100
        console = Console(
            width=10**6 if wide else width,
            soft_wrap=wide,
            force_terminal=colour or None,
            color_system="auto" if colour else None,
        )
        for renderable in plan_tables(report, None if wide else width):
            console.print(renderable)


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
@STRICT_SCHEMAS
@click.option(
    "--max-chars",
    type=click.IntRange(min=1000),
    default=60000,
    show_default=True,
    help="Truncate the Markdown to this many characters (GitHub's comment limit is 65,536).",
)
@click.option(
    "--no-index",
    is_flag=True,
    help="Read no render index (what `gpuplane render` recorded of each cluster): render every "
    "cluster, one the same on both revisions once. The report is the same; see "
    "docs/performance.md.",
)
@click.pass_context
def diff(
    ctx: click.Context,
    base_ref: str,
    fmt: str,
    crds: tuple[Path, ...],
    strict_schemas: bool,
    max_chars: int,
    no_index: bool,
) -> None:
    """What the change from REF to the working tree means, by cluster and team, marked by risk.

    Exit 0 when the working tree is valid, whatever the change; 1 when it has findings (printed
    as `validate` prints them); 2 for a bad REF.
    """
    import tempfile

    from renderer.commands.diff.checkout import BaseCheckout, BaseRefError
    from renderer.commands.diff.json_form import diff_json
    from renderer.commands.diff.markdown import diff_markdown
    from renderer.commands.diff.platforms import diff_platforms
    from renderer.commands.diff.text import diff_text
    from renderer.commands.render import default_jobs
    from renderer.inputs.changes import changed_lines

    root = root_of(ctx)
    validator = output_validator(crds, strict_schemas)
    with tempfile.TemporaryDirectory(prefix="gpuplane-diff-") as tmp:
        try:
            base = BaseCheckout(root, base_ref, Path(tmp))  # its files written in a thread
        except BaseRefError as err:
            raise click.UsageError(str(err)) from err
        try:
            index = open_render_index(root, crds, strict_schemas, no_index)
            with (
                report.progress(
                    "loading the working tree", plain=ctx.find_root().obj["no_color"]
                ) as step,
                worker_stops_reported(),
            ):
                result = diff_platforms(
                    Path(tmp),
                    root,
                    validator,
                    base_ref=base_ref,
                    base_commit=base.commit,
                    base_ready=base.wait,
                    head_changed=changed_lines(root, base=base_ref),
                    on_cluster=lambda side, name: step(f"rendering {side}: cluster {name}"),
                    index=index if index.path is not None else None,
                    jobs=default_jobs(),
                )
        except BaseRefError as err:
            raise click.UsageError(str(err)) from err
        finally:
            base.join()  # before the folder goes
    if not result.head_valid:
        emit(list(result.head_diagnostics), result.head_files, "json" if fmt == "json" else "text")
        ctx.exit(1)
    if fmt == "json":
        click.echo(report.json_text(diff_json(result), ensure_ascii=False))
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
    thresholds. Exit 0 when all pass, 1 on a failure, a missing result or an unreadable file,
    3 when nothing failed but some result was measured on the CPU or on a device not shown to be
    the pool's accelerator (not comparable: the pool is not accepted, and no hardware failed)."""
    from renderer.commands.acceptance.forms import report_json, report_markdown, report_text
    from renderer.commands.acceptance.judge import build_report
    from renderer.commands.acceptance.load import load_results
    from renderer.commands.acceptance.results import Status

    loaded = load_inputs(ctx)
    if has_errors(loaded.diagnostics):
        emit(loaded.diagnostics, loaded.files, "json" if fmt == "json" else "text")
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
    ctx.exit({Status.PASSED: 0, Status.FAILED: 1, Status.NOT_COMPARABLE: 3}[accepted.status])


NEW_KINDS = ("cluster", "pool", "queue", "team")
"""What `gpuplane new` writes: `renderer.commands.new.KINDS`, spelt out so that `--help` need not
import the scaffolder (tests/test_cli_face.py checks that the two agree)."""


@main.group()
def schemas() -> None:
    """The operators' CRDs that custom kinds are checked against: import, pull, list.

    They are kept per operator release in .gpuplane/schemas/ (commit it, so that CI checks the
    same schemas); each cluster's objects are checked against the release its file pins.
    """


def _pins_for_import(
    ctx: click.Context, release: str | None, cluster: str | None
) -> dict[str, str | None]:
    """The releases the clusters pin, for CRDs imported without --release."""
    from renderer.commands.schemas import pinned_releases
    from renderer.pipeline import load_platform

    loaded = load_platform(root_of(ctx))
    if cluster is not None and cluster not in loaded.platform.clusters:
        known = sorted(loaded.platform.clusters)
        close = closest(cluster, known)
        hint = f" Did you mean '{close}'?" if close else f" Clusters: {', '.join(known) or 'none'}."
        raise click.UsageError(f"unknown cluster '{cluster}'.{hint}")
    if release is None and has_errors(loaded.diagnostics):
        raise click.UsageError(
            "the input files have errors, so the releases the clusters pin are unknown: fix them "
            "(`gpuplane validate`) or pass --release VERSION"
        )
    return pinned_releases(loaded.platform, cluster)


@schemas.command(name="import")
@click.argument("sources", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option(
    "--release", help="The release they are, as cluster files pin it (default: the pinned one)."
)
@click.option(
    "--operator", help="File them under this operator (default: from each CRD's API group)."
)
@click.option("--cluster", help="Take the releases from this cluster's pins.")
@click.pass_context
def schemas_import(
    ctx: click.Context,
    sources: tuple[str, ...],
    release: str | None,
    operator: str | None,
    cluster: str | None,
) -> None:
    """Import CRDs (release files, or `kubectl get crd -o yaml` output; - reads stdin)."""
    from renderer.commands.schemas import (
        Input,
        SchemaImportError,
        import_crds,
        import_text,
        read_inputs,
    )

    pins = _pins_for_import(ctx, release, cluster)
    try:
        inputs: list[Input] = []
        for source in sources:
            if source == "-":
                inputs.append(Input("stdin", sys.stdin.buffer.read()))
            else:
                inputs.extend(read_inputs([Path(source)]))
        imported = import_crds(root_of(ctx), inputs, pins, release=release, operator=operator)
    except SchemaImportError as err:
        raise click.UsageError(str(err)) from err
    click.echo(import_text(imported), nl=False)


@schemas.command(name="pull")
@click.option("--context", "kube_context", help="The kubectl context of the cluster to read.")
@click.option("--cluster", help="The cluster file it is, whose pins name the releases.")
@click.option("--release", help="The release they are (default: the pinned one).")
@click.option(
    "--all", "everything", is_flag=True, help="Also CRDs of operators gpuplane renders nothing for."
)
@click.pass_context
def schemas_pull(
    ctx: click.Context,
    kube_context: str | None,
    cluster: str | None,
    release: str | None,
    everything: bool,
) -> None:
    """Import the CRDs of a running cluster, through `kubectl get crd -o yaml`."""
    from renderer.commands.schemas import (
        SchemaImportError,
        import_crds,
        import_text,
        kubectl_crds,
    )

    pins = _pins_for_import(ctx, release, cluster)
    try:
        pulled = kubectl_crds(kube_context)
        imported = import_crds(
            root_of(ctx), [pulled], pins, release=release, known_only=not everything
        )
    except SchemaImportError as err:
        raise click.UsageError(str(err)) from err
    click.echo(import_text(imported), nl=False)


@schemas.command(name="list")
@TEXT_OR_JSON
@click.pass_context
def schemas_list(ctx: click.Context, fmt: str) -> None:
    """What the schema store holds, per operator release, and which pinned releases it lacks."""
    from renderer.commands.schemas import (
        SchemaImportError,
        list_json,
        list_text,
        missing_pins,
        store_rows,
    )
    from renderer.pipeline import load_platform

    root = root_of(ctx)
    loaded = load_platform(root)
    try:
        rows = store_rows(root, loaded.platform)
    except SchemaImportError as err:
        raise click.UsageError(str(err)) from err
    missing = missing_pins(root, loaded.platform)
    if fmt == "json":
        click.echo(json.dumps(list_json(rows, missing), indent=2))
    else:
        click.echo(list_text(rows, missing), nl=False)


@main.command(name="new")
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


@main.command(name="explain")
@click.argument("rule_id", required=False)
@click.option("--list", "list_all", is_flag=True, help="List every rule id with its summary.")
@click.pass_context
def explain_rule(ctx: click.Context, rule_id: str | None, list_all: bool) -> None:
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


SHELLS = ("bash", "zsh", "fish")


@main.command(short_help="Print the Tab-completion script for bash, zsh or fish.")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
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
    # the variable click's own main() reads when the shell asks `gpuplane` for completions
    click.echo(script(main, {}, "gpuplane", "_GPUPLANE_COMPLETE").source().rstrip("\n"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
