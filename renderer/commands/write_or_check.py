"""`render`: render every cluster, then write rendered/ (and `.github/CODEOWNERS`), or, with
`--check`, write nothing and list each generated file that is not what the inputs render."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from renderer.commands.render import RenderedTree, default_jobs, render_tree, restat
from renderer.commands.render_context import RenderContext
from renderer.commands.render_index import RenderIndex
from renderer.commands.stale import StaleFile, stale_codeowners, stale_files
from renderer.commands.transition_checks import recreate_allowed
from renderer.findings.diagnostics import Diagnostic, has_errors
from renderer.inputs.changes import changed_lines
from renderer.layers.gitops.codeowners import CODEOWNERS_PATH, codeowners
from renderer.output.transitions import committed_tree
from renderer.output.validation import OutputValidator
from renderer.output.writer import OUTPUT_DIR, TreeListing, write_file_atomically, write_tree


@dataclass(frozen=True)
class RenderRequest:
    """What `render` was asked for: `check` writes nothing; `allow_recreate` makes a change of
    an immutable field a warning; `jobs` worker processes (0: one per CPU)."""

    check: bool
    allow_recreate: bool
    jobs: int


@dataclass(frozen=True)
class RenderDone:
    """What `render` found and did. `failed`: findings with errors, or nothing rendered, and
    nothing written. `stale` (with --check) lists the files that are not current; `written` (on
    a write) is how many files rendered/ holds; `said` is the line for people."""

    diagnostics: Sequence[Diagnostic]
    inputs: int
    failed: bool = False
    stale: Sequence[StaleFile] | None = None
    written: int | None = None
    said: str | None = None


def write_or_check(
    root: Path,
    request: RenderRequest,
    *,
    validator: OutputValidator,
    index: RenderIndex,
    listing: TreeListing,
    on_cluster: Callable[[str], None],
) -> RenderDone:
    """Render the repository at `root` into its rendered/ (`listing` is that folder listed,
    started before the inputs were loaded), or check it is current; the index is saved unless
    the render failed."""
    target = root / OUTPUT_DIR
    result = render_tree(
        root,
        target,
        RenderContext(
            validator,
            changed=changed_lines(root),
            previous=committed_tree(root, listing=listing),
            keep_files=not request.check,
            jobs=request.jobs or default_jobs(),
            on_cluster=on_cluster,
            index=index,
            listing=listing,
        ),
    )
    diagnostics = result.diagnostics
    if request.allow_recreate:
        diagnostics = recreate_allowed(diagnostics)
    if has_errors(diagnostics) or result.staleness is None:
        return RenderDone(diagnostics, result.inputs, failed=True)
    owners = codeowners(result.platform)
    if request.check:
        stale = stale_files(OUTPUT_DIR, result.staleness, stale_codeowners(root, owners))
        index.save()
        current = f"{OUTPUT_DIR}/ is current: {result.objects} objects in {result.file_count} files"
        return RenderDone(diagnostics, result.inputs, stale=stale, said=None if stale else current)
    return _write(root, result, diagnostics, index, owners)


def _write(
    root: Path,
    result: RenderedTree,
    diagnostics: Sequence[Diagnostic],
    index: RenderIndex,
    owners: str | None,
) -> RenderDone:
    """Write rendered/, then `.github/CODEOWNERS`: a failed render leaves CODEOWNERS as it was
    too."""
    target = root / OUTPUT_DIR
    assert result.files is not None and result.staleness is not None, "rendered with keep_files"
    changes = write_tree(target, result.files, result.staleness)
    if not changes.clean:
        restat(index, target)
    index.save()
    wrote_owners = owners is not None and write_file_atomically(
        root / CODEOWNERS_PATH, owners.encode("utf-8")
    )
    changed = len(changes.missing) + len(changes.extra) + len(changes.changed)
    said = (
        f"rendered {result.objects} objects for {result.clusters} cluster(s) into {OUTPUT_DIR}/ "
        f"({changed} files added, changed or removed)"
        + (f"; wrote {CODEOWNERS_PATH}" if wrote_owners else "")
    )
    return RenderDone(diagnostics, result.inputs, written=result.file_count, said=said)
