"""Changes the API server refuses as updates: a rendered object that edits a field its CRD keeps
immutable (transition rules, `oldSelf`) against the object committed at the base revision.

Argo CD applies what is committed, so the base's object is the one in `rendered/` at the base
commit; when the base commit has no `rendered/` (or the base is no commit), the base's own render
stands in for it. Every such change is high risk: the sync fails until the object is renamed or
deleted and recreated (docs/cel.md, docs/diff.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from renderer.commands.diff.findings import Finding, Risk
from renderer.commands.diff.revision import Revision
from renderer.commands.transition_checks import transition_changes
from renderer.output.cel_report import UncheckedRules, recreate_hint
from renderer.output.transitions import CommittedTree
from renderer.output.validation import OutputValidator


def immutable_fields(
    head_root: Path,
    head: Revision,
    validator: OutputValidator,
    previous: CommittedTree,
) -> Iterator[Finding]:
    """High-risk `immutable-field` findings; medium-risk `transition-unchecked` ones for the
    transition rules gpuplane could not evaluate (a rule it cannot evaluate, a committed file it
    cannot read): the reviewer checks those by hand. `previous`: `rendered/` at the base
    commit, or the base's own render when that commit has none."""
    rules = UncheckedRules(only_transition=True)
    for cluster, manifest, found in transition_changes(
        head_root, head.platform, validator, previous, head.manifests, rules
    ):
        if found.rule == "output-immutable-field":
            yield Finding(
                Risk.HIGH,
                "immutable-field",
                cluster,
                None,
                f"{manifest.kind} {manifest.name}",
                found.message,
                (f"from {manifest.source.file}", recreate_hint(manifest)),
            )
        else:
            yield Finding(
                Risk.MEDIUM,
                "transition-unchecked",
                cluster,
                None,
                f"{manifest.kind} {manifest.name}",
                found.message,
                (f"from {manifest.source.file}",),
            )
    for crd, found in zip(sorted(rules.by_crd), rules.diagnostics(), strict=True):
        yield Finding(
            Risk.MEDIUM,
            "transition-unchecked",
            None,
            None,
            f"CRD {crd}",
            found.message,
            (f"first from {found.at.file}",),
        )
