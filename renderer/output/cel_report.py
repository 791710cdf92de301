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
`Replace=true` alone is still an update the API server refuses. Or keep the field as it was.""",
)
document_rule(
    "output-cel-unchecked",
    "output",
    """Some `x-kubernetes-validations` rules of a CRD could not be evaluated.

gpuplane evaluates CEL with cel-python and the Kubernetes extensions it implements (strings,
lists, quantities); a rule that needs more (CEL optionals, `format.*`, `url`, `ip`, `cidr`,
`optionalOldSelf`) is not evaluated, and instead of passing it silently gpuplane lists it, once
per CRD, with why. The API server still evaluates it.

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
            hint=HINT,
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


@dataclass(slots=True)
class UncheckedRules:
    """The unevaluable rules of each CRD the render used, and where its first object came from."""

    by_crd: dict[str, tuple[str, tuple[UncheckedRule, ...], Location]] = field(default_factory=dict)

    def add(self, manifest: Manifest, checked: Checked) -> None:
        if checked.crd is not None and checked.cel_unchecked and checked.crd not in self.by_crd:
            self.by_crd[checked.crd] = (manifest.kind, checked.cel_unchecked, manifest.source)

    def diagnostics(self) -> Iterator[Diagnostic]:
        for crd, (kind, rules, where) in sorted(self.by_crd.items()):
            yield Diagnostic(
                "output-cel-unchecked",
                f"{_count(rules)} of CRD {crd} ({kind}) not evaluated: "
                + "; ".join(f"`{r.rule}` at {r.path}: {r.why}" for r in _unique(rules)),
                where,
                severity=Severity.WARNING,
            )


def _count(rules: Sequence[UncheckedRule]) -> str:
    return f"{len(rules)} x-kubernetes-validations rule" + ("" if len(rules) == 1 else "s")


def _unique(rules: Iterable[UncheckedRule]) -> list[UncheckedRule]:
    seen: dict[tuple[str, str], UncheckedRule] = {}
    for rule in rules:
        seen.setdefault((rule.rule, rule.why), rule)
    return list(seen.values())
