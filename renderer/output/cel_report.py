"""What the CRDs' CEL rules found, as findings: a broken rule (`output-cel`), an update the API
server refuses (`output-immutable-field`), and the rules gpuplane cannot evaluate
(`output-cel-unchecked`, once per CRD). See docs/cel.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from renderer.findings.diagnostics import Diagnostic, Location, Severity
from renderer.findings.rules import document_rule
from renderer.output.cel import CelViolation, UncheckedRule
from renderer.output.manifest import Manifest
from renderer.output.transitions import RENDERED, CommittedTree
from renderer.output.validation import Checked

document_rule(
    "output-cel",
    "output",
    """A rendered custom object breaks one of its CRD's `x-kubernetes-validations` rules.

The API server evaluates the CEL rules of a CRD's schema on every object it admits, after filling
in the schema's defaults, and refuses the object when one fails: Argo CD's sync would fail on it.
gpuplane evaluates the same rules, on the defaulted object, and quotes the error the API server
would give (`spec: Invalid value: "object": <the rule's message>`).

To satisfy it: change the input the finding points at so that the rendered field the message
names meets the rule (e.g. a pool's `topology.levels` must end at `kubernetes.io/hostname` for a
Kueue Topology). If the input is right and the object still fails, it is a gpuplane bug: report
it with the message.""",
)
document_rule(
    "output-immutable-field",
    "output",
    """A change edits a field the object's CRD keeps immutable, so the API server refuses the update.

Transition rules (`self == oldSelf`, and others that name `oldSelf`) compare an object with the
one it replaces: a Kueue ResourceFlavor's `nodeLabels`, `tolerations` and `topologyName` once it
has a topology, a Topology's `levels`, a LocalQueue's `clusterQueue`, a JobSet's `network`...
gpuplane compares each rendered object with the one committed in `rendered/` (at HEAD for
`render`, at REF for `validate --base REF` and `diff --base REF`): the merge would leave Argo CD
failing to sync the object.

To satisfy it: give the object a new name, so that a new object is created and the old one
pruned (rename the input the name comes from: the pool, queue, team or template), or delete
and recreate it: with Argo CD, the sync options `Force=true,Replace=true` on the object
(`argocd.argoproj.io/sync-options` annotation), or delete it by hand before the sync;
`Replace=true` alone is still an update the API server refuses. Or keep the field as it was.

Kueue holds some objects with its finalizer `kueue.x-k8s.io/resource-in-use` while others use
them, so deleting them hangs: a ResourceFlavor while any ClusterQueue lists it, an
AdmissionCheck while any ClusterQueue lists it, a Topology while any ResourceFlavor names it.
For a flavor, rename the pool, or take the pool out of every queue's `pools:` (and the teams'
quotas), render and sync, delete the flavor, then add the pool back; the hint says which.""",
)
document_rule(
    "output-cel-unchecked",
    "output",
    """Some `x-kubernetes-validations` rules of a CRD could not be evaluated.

gpuplane evaluates CEL with cel-python and the Kubernetes extensions it implements (strings,
lists, quantities); a rule that needs more (CEL optionals, `format.*`, `url`, `ip`, `cidr`,
`optionalOldSelf`) is not evaluated, and instead of passing it silently gpuplane lists it, once
per CRD, with why. The API server still evaluates it. So is a transition rule whose old object
sits in a committed file of `rendered/` that cannot be read: the warning names the file.

To satisfy it: nothing in the inputs: check the listed rules by hand for the objects of that
kind (`kubectl apply --dry-run=server` against a cluster runs them), or report the rule so that
gpuplane learns the function it uses.""",
)

HINT = (
    "the API server refuses this update: give the object a new name (rename the input its name "
    "comes from) so Argo CD creates it anew and prunes the old one, or delete and recreate it "
    "(Argo CD sync options `Force=true,Replace=true`, or a manual delete before the sync); "
    "`Replace=true` alone is still a refused update"
)
"""The way out for an object nothing holds on the cluster once it is deleted."""

IN_USE = "kueue.x-k8s.io/resource-in-use"
"""Kueue's finalizer on objects it keeps while others use them (`ResourceInUseFinalizerName`)."""

_HELD: dict[tuple[str, str], str] = {
    (
        "kueue.x-k8s.io",
        "ResourceFlavor",
    ): (
        "the API server refuses this update, and deleting the ResourceFlavor to recreate it hangs: "
        f"Kueue's finalizer `{IN_USE}` keeps a deleted flavor while any ClusterQueue lists it "
        "(Kueue v0.19.2, `ResourceFlavorReconciler.Reconcile`), and the rendered ClusterQueues "
        "still list it by this name, so `Force=true,Replace=true` never gets past the delete. "
        "Either give it a new name (rename the pool: a new flavor is created, and the old one goes "
        "once no ClusterQueue lists it), or take it out of every ClusterQueue first: remove the "
        "pool from the queues' `pools:` (and the teams' quotas on it), render and sync; then make "
        "this change (`render --allow-recreate`) and delete the flavor before its sync "
        "(`kubectl delete resourceflavor {name}`: Argo CD creates it anew); then add the pool back "
        "and sync again"
    ),
    (
        "kueue.x-k8s.io",
        "AdmissionCheck",
    ): (
        "the API server refuses this update, and deleting the AdmissionCheck to recreate it hangs: "
        f"Kueue's finalizer `{IN_USE}` keeps a deleted AdmissionCheck while any ClusterQueue lists "
        "it (Kueue v0.19.2, `AdmissionCheckReconciler.Reconcile`). Either give it a new name, or "
        "take it out of every ClusterQueue's `admissionChecks` first, sync, delete it, then add it "
        "back and sync again"
    ),
    (
        "kueue.x-k8s.io",
        "Topology",
    ): (
        "the API server refuses this update, and deleting the Topology to recreate it hangs: "
        f"Kueue's finalizer `{IN_USE}` keeps a deleted Topology while any ResourceFlavor names it "
        "in `topologyName` (Kueue v0.19.2, `topologyReconciler.Reconcile`). Give it a new name "
        "(gpuplane names a Topology by its levels, so new levels make a new one), or delete the "
        "flavors that name it first"
    ),
}
"""Objects Kueue holds with its finalizer while others use them
(`pkg/controller/core/resourceflavor_controller.go`, `admissioncheck_controller.go`,
`pkg/controller/tas/topology_controller.go`; a ClusterQueue is held too, until no workload holds
quota in it, but its CRD has no transition rule): for them "delete and
recreate" does not work as it does for other objects, and the hint says what does."""


def recreate_hint(manifest: Manifest) -> str:
    """The way out of a refused update of `manifest`'s object (docs/cel.md)."""
    group = str(manifest.body.get("apiVersion", "")).rpartition("/")[0]
    held = _HELD.get((group, manifest.kind))
    return HINT if held is None else held.replace("{name}", manifest.name)


def describe(cluster: str, manifest: Manifest) -> str:
    return f"rendered {manifest.kind} '{manifest.name}' ({cluster}/{manifest.path})"


def violation_diagnostic(
    cluster: str, manifest: Manifest, crd: str | None, violation: CelViolation, origin: str
) -> Diagnostic:
    """One broken rule of one rendered object, on the input file that produced it."""
    if violation.transition:
        return Diagnostic(
            "output-immutable-field",
            f"{describe(cluster, manifest)} changes the object committed in rendered/ "
            f"({origin}) in a way CRD {crd} forbids: {violation.message}",
            manifest.source,
            hint=recreate_hint(manifest),
        )
    return Diagnostic(
        "output-cel",
        f"{describe(cluster, manifest)} breaks a rule of CRD {crd}: {violation.message}",
        manifest.source,
    )


def cel_diagnostics(
    cluster: str, manifest: Manifest, checked: Checked, origin: str
) -> list[Diagnostic]:
    return [violation_diagnostic(cluster, manifest, checked.crd, v, origin) for v in checked.cel]


def unreadable_diagnostics(
    cluster: str, manifest: Manifest, checked: Checked, previous: CommittedTree
) -> list[Diagnostic]:
    """A warning for each committed file that could hold the object a rendered one replaces but
    cannot be read: its CRD's transition rules were not evaluated against it."""
    return [
        Diagnostic(
            "output-cel-unchecked",
            f"the transition rules of CRD {checked.crd} were not evaluated for "
            f"{describe(cluster, manifest)}: the committed {RENDERED}/{path} ({previous.origin}) "
            f"that may hold the object it replaces cannot be read: {why}",
            manifest.source,
            severity=Severity.WARNING,
            hint="Argo CD cannot apply that file either, so the cluster keeps the object it last "
            "synced: check this update against it by hand (`kubectl apply --dry-run=server`)",
        )
        for path, why in previous.unreadable(cluster, manifest)
    ]


@dataclass(slots=True)
class _CrdRules:
    kind: str
    where: Location
    rules: dict[tuple[str, str], UncheckedRule] = field(default_factory=dict)


@dataclass(slots=True)
class UncheckedRules:
    """The unevaluable rules of each CRD the render used, every object's (each rule once per
    place in the schema), reported on the input of the first object that had one."""

    by_crd: dict[str, _CrdRules] = field(default_factory=dict)
    only_transition: bool = False
    """Keep only transition rules (`validate --base`, `diff`: the rest is `render`'s)."""

    def add(self, manifest: Manifest, checked: Checked) -> None:
        if checked.crd is None:
            return
        for rule in checked.cel_unchecked:
            if self.only_transition and not rule.transition:
                continue
            entry = self.by_crd.get(checked.crd)
            if entry is None:
                entry = self.by_crd[checked.crd] = _CrdRules(manifest.kind, manifest.source)
            entry.rules.setdefault((rule.path, rule.rule), rule)

    def merge(self, later: UncheckedRules) -> None:
        """Add what `later` collected, as if its objects had come after these."""
        for crd, theirs in later.by_crd.items():
            if self.only_transition:
                rules = [r for r in theirs.rules.values() if r.transition]
            else:
                rules = list(theirs.rules.values())
            if not rules:
                continue
            entry = self.by_crd.get(crd)
            if entry is None:
                entry = self.by_crd[crd] = _CrdRules(theirs.kind, theirs.where)
            for rule in rules:
                entry.rules.setdefault((rule.path, rule.rule), rule)

    def diagnostics(self) -> Iterator[Diagnostic]:
        for crd, entry in sorted(self.by_crd.items()):
            rules = list(entry.rules.values())
            yield Diagnostic(
                "output-cel-unchecked",
                f"{_count(rules)} of CRD {crd} ({entry.kind}) not evaluated: "
                + "; ".join(f"`{r.rule}` at {r.path}: {r.why}" for r in _unique(rules)),
                entry.where,
                severity=Severity.WARNING,
            )


def _count(rules: Sequence[UncheckedRule]) -> str:
    return f"{len(rules)} x-kubernetes-validations rule" + ("" if len(rules) == 1 else "s")


def _unique(rules: Iterable[UncheckedRule]) -> list[UncheckedRule]:
    seen: dict[tuple[str, str], UncheckedRule] = {}
    for rule in rules:
        seen.setdefault((rule.rule, rule.why), rule)
    return list(seen.values())
