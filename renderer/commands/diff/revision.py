"""One side of the diff, rendered once: its model, its rendered tree and whether it validates.

Every comparison reads the same two revisions, so rendering them is done here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from renderer.commands.diff.findings import Side
from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.platform import Platform
from renderer.output.manifest import Manifest, Values
from renderer.output.validation import OutputValidator
from renderer.output.writer import build_tree
from renderer.pipeline import Loaded, Rendered, SharedOutcomes, render_platform


@dataclass(frozen=True, slots=True)
class Revision:
    platform: Platform
    tree: dict[str, bytes]
    model_ok: bool
    """policy passed (or the revision is empty), so `plan` can be built from it."""
    side: Side
    diagnostics: tuple[Diagnostic, ...]
    files: int
    manifests: Mapping[str, tuple[Manifest, ...]] = field(default_factory=dict)
    """Each cluster's rendered objects (for the transition rules against the base)."""
    taken: frozenset[str] = frozenset()
    """Clusters taken from the render index without their objects, in neither `tree` nor
    `manifests`: the change does not reach them, they render the same on both sides, and no
    transition rule finds anything in them (`diff_platforms`)."""


Trees = dict[int, tuple[tuple[object, ...], dict[str, bytes]]]
"""Each cluster's files, by the `id` of its outcome's objects, with the objects they were made
of (the same objects make the same files)."""


@dataclass(frozen=True, slots=True)
class BothSides:
    """What the two sides of one diff share: `shared`, the clusters the other side rendered,
    by key; `trees`, each cluster's files laid out; `taken`, the clusters whose outcomes `shared`
    holds from the render index, without objects (`Revision.taken`)."""

    shared: SharedOutcomes | None = None
    trees: Trees | None = None
    taken: frozenset[str] = frozenset()


def render(
    root: Path,
    validator: OutputValidator,
    label: str,
    commit: str | None,
    *,
    on_cluster: Callable[[str], None] | None = None,
    loaded: Loaded | None = None,
    sides: BothSides | None = None,
) -> Revision:
    """Render one side; `on_cluster` is told each cluster before it is rendered (the CLI's
    progress display). `loaded`: `root` already loaded, with the change's lines where this is
    the head (`load_platform`). `sides`: what it shares with the other side."""
    sides = sides if sides is not None else BothSides()
    rendered = render_platform(
        root, validator, on_cluster=on_cluster, shared=sides.shared, loaded=loaded
    )
    return revision_of(rendered, label, commit, trees=sides.trees, taken=sides.taken)


def revision_of(
    rendered: Rendered,
    label: str,
    commit: str | None,
    *,
    trees: Trees | None = None,
    taken: frozenset[str] = frozenset(),
    untreed: frozenset[str] = frozenset(),
    files_of: Mapping[str, dict[str, bytes]] | None = None,
) -> Revision:
    """One side from its render: `trees` and `taken` as `BothSides` holds them; `files_of`, the files of clusters
    laid out elsewhere (a worker); `untreed`, clusters whose files are the same on both sides,
    left out of `tree` on both (`diff_platforms`)."""
    taken = taken & rendered.manifests.keys()
    empty = rendered.files == 0
    diagnostics = tuple(d for d in rendered.diagnostics if not (empty and d.rule == "no-inputs"))
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    model_ok = empty or bool(rendered.manifests) or errors == 0
    tree: dict[str, bytes] = {}
    names = {*rendered.manifests, *rendered.readmes, *rendered.values} - taken - untreed
    for name in sorted(names):
        if files_of is not None and name in files_of:
            tree.update(files_of[name])
            continue
        manifests = rendered.manifests.get(name, ())
        values = rendered.values.get(name, ())
        readme = rendered.readmes.get(name)
        made_of = (manifests, values, readme)
        known = trees.get(id(manifests)) if trees is not None and manifests else None
        if known is not None and all(a is b for a, b in zip(known[0], made_of, strict=True)):
            files = known[1]
        else:
            files = cluster_files(name, manifests, values, readme)
            if trees is not None and manifests:
                trees[id(manifests)] = (made_of, files)
        tree.update(files)
    tree = dict(sorted(tree.items()))
    return Revision(
        platform=rendered.platform,
        tree=tree,
        model_ok=model_ok,
        side=Side(label, commit, errors == 0, errors, len(diagnostics) - errors),
        diagnostics=diagnostics,
        files=rendered.files,
        manifests={n: m for n, m in rendered.manifests.items() if n not in taken},
        taken=frozenset(taken),
    )


def cluster_files(
    name: str, manifests: tuple[Manifest, ...], values: tuple[Values, ...], readme: str | None
) -> dict[str, bytes]:
    """The files of one cluster's folder of `rendered/`."""
    return build_tree(
        {name: manifests}, {name: readme} if readme is not None else {}, {name: values}
    )
