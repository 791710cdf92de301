"""The updates the API server would refuse: each custom object whose CRD's transition rules
(`oldSelf`, immutable fields) refuse the change from the object committed in a tree. What
`validate --base` and `diff` add to a render's findings; `render` checks the same rules against
HEAD's tree as it validates each object (`pipeline.check_cluster`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from renderer.findings.diagnostics import Diagnostic, Severity, sort_diagnostics
from renderer.model import platform as model
from renderer.model.view import ClusterView
from renderer.output.cel_report import UncheckedRules, cel_diagnostics, unreadable_diagnostics
from renderer.output.crds import CrdLoadError
from renderer.output.kubernetes_schemas import (
    UnsupportedKubernetesVersion,
    is_builtin_group,
    schema_dir_for,
)
from renderer.output.manifest import Manifest
from renderer.output.transitions import CommittedTree
from renderer.output.validation import OutputValidator
from renderer.pipeline import old_of, render_cluster, repository_schemas, schema_pins


def check_transitions(
    root: Path, platform: model.Platform, validator: OutputValidator, previous: CommittedTree
) -> list[Diagnostic]:
    """The updates the API server would refuse (`output-immutable-field`): every cluster
    rendered in memory and each custom object compared with the one committed in `previous`;
    and, as warnings, the transition rules that could not be evaluated. What `validate --base
    REF` adds; schema and other CEL problems are `render`'s to report."""
    rules = UncheckedRules(only_transition=True)
    found = [d for _, _, d in transition_changes(root, platform, validator, previous, rules=rules)]
    return sort_diagnostics([*found, *rules.diagnostics()])


def supported_kubernetes_version(version: str) -> bool:
    """Whether gpuplane has the built-in schemas of this Kubernetes version."""
    try:
        schema_dir_for(version)
    except UnsupportedKubernetesVersion:
        return False
    return True


def transition_changes(
    root: Path,
    platform: model.Platform,
    validator: OutputValidator,
    previous: CommittedTree,
    manifests: Mapping[str, Sequence[Manifest]] | None = None,
    rules: UncheckedRules | None = None,
) -> list[tuple[str, Manifest, Diagnostic]]:
    """(cluster, object, finding) for every rendered object whose CRD's transition rules refuse
    the change from the object committed in `previous`, or could not be evaluated against it
    (a committed file that cannot be read: a warning `output-cel-unchecked`); `manifests`: each
    cluster's objects when already rendered (`diff`), else every cluster is rendered here.
    `rules` collects the transition rules gpuplane could not evaluate."""
    try:
        validator = validator.for_repository(root, repository_schemas(root, platform.repository)[0])
    except CrdLoadError:
        return []  # render reports it
    if not validator.has_custom_schemas():
        return []  # no CRD, no rule: nothing to render for
    found: list[tuple[str, Manifest, Diagnostic]] = []
    for name in sorted(platform.clusters):
        cluster = platform.clusters[name]
        if manifests is not None:
            objects = list(manifests.get(name, ()))
        else:
            view = ClusterView.of(platform, cluster)
            objects = [o for o in render_cluster(view) if isinstance(o, Manifest)]
        pin_of = schema_pins(cluster)
        # on a version gpuplane has no schemas for, `check` stops at the first committed object
        supported = supported_kubernetes_version(cluster.kubernetes_version)
        kinds: dict[tuple[str, object], bool] = {}  # what reads_old_self says of each kind here
        for manifest in objects:
            api_version = manifest.body["apiVersion"]
            group = api_version.rpartition("/")[0]
            if is_builtin_group(group):
                continue
            reads = kinds.get((api_version, manifest.body.get("kind")))
            if reads is None:
                try:
                    reads = not supported or validator.reads_old_self(manifest.body, pin_of)
                except CrdLoadError:
                    # as before the shortcut: an object with nothing committed never reaches
                    # the broken CRD, and a committed one meets it in `check`, which stops here
                    reads = True
                kinds[(api_version, manifest.body.get("kind"))] = reads
            # a CRD without transition rules: nothing to read, nothing to report
            if not reads or not previous.could_hold(name, manifest):
                continue
            try:
                checked = validator.check(
                    manifest.body,
                    cluster.kubernetes_version,
                    pin_of,
                    old_of(previous, name, manifest),
                )
            except (CrdLoadError, UnsupportedKubernetesVersion):
                return found  # render reports both
            found.extend(
                (name, manifest, d)
                for d in cel_diagnostics(name, manifest, checked, previous.origin)
                if d.rule == "output-immutable-field"
            )
            found.extend(
                (name, manifest, d)
                for d in unreadable_diagnostics(name, manifest, checked, previous)
            )
            if rules is not None:
                rules.add(manifest, checked)
    return found


def recreate_allowed(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """`--allow-recreate`: an immutable-field update is a warning, the rest stays."""
    return [
        replace(d, severity=Severity.WARNING) if d.rule == "output-immutable-field" else d
        for d in diagnostics
    ]
