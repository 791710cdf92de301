"""One side of the diff, rendered once: its model, its rendered tree and whether it validates.

Every comparison reads the same two revisions, so rendering them is done here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from renderer.commands.diff.findings import Side
from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.platform import Changes, Platform
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.output.writer import build_tree
from renderer.pipeline import render_platform


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


def render(
    root: Path,
    validator: OutputValidator,
    label: str,
    commit: str | None,
    *,
    changed: Changes | None = None,
    on_cluster: Callable[[str], None] | None = None,
) -> Revision:
    """Render one side; `changed` is what the change touches (files and their changed lines),
    for where its findings land; `on_cluster` is told each cluster before it is rendered (the
    CLI's progress display)."""
    rendered = render_platform(root, validator, changed=changed, on_cluster=on_cluster)
    empty = rendered.files == 0
    diagnostics = tuple(d for d in rendered.diagnostics if not (empty and d.rule == "no-inputs"))
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    model_ok = empty or bool(rendered.manifests) or errors == 0
    tree = build_tree(rendered.manifests, rendered.readmes, rendered.values)
    return Revision(
        platform=rendered.platform,
        tree=tree,
        model_ok=model_ok,
        side=Side(label, commit, errors == 0, errors, len(diagnostics) - errors),
        diagnostics=diagnostics,
        files=rendered.files,
        manifests=rendered.manifests,
    )
