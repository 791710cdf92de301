"""One object per identity: two rendered objects the API server would take for the same one.

The API server knows an object by its API group, kind, namespace and name, not by the file it
came from. Two layers that render objects with one identity (a team namespace named like the
suites' namespace: a Namespace from the tenancy layer and one from the workflows layer) write two
files, so a path check misses them, and Argo CD applies both in turn: the later one silently
replaces the earlier, labels, RBAC and all. Each clash is reported on the source of the object
applied later, the one that tries to take the identity, noting where the first came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.findings.diagnostics import Diagnostic
from renderer.findings.rules import document_rule
from renderer.output.manifest import Manifest

RULE = "output-identity-clash"

CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "StorageClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "Cohort"),
        ("kueue.x-k8s.io", "Topology"),
        ("kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("kueue.x-k8s.io", "AdmissionCheck"),
        ("scheduling.volcano.sh", "Queue"),
        ("nvidia.com", "ClusterPolicy"),
        ("nvidia.com", "NVIDIADriver"),
        ("external-secrets.io", "ClusterSecretStore"),
        ("external-secrets.io", "ClusterExternalSecret"),
        ("argoproj.io", "ClusterWorkflowTemplate"),
    }
)
"""(API group, kind) of the cluster-scoped kinds gpuplane renders or could: their identity has
no namespace, whatever `metadata.namespace` says (the API server ignores it)."""


@dataclass(frozen=True, slots=True, order=True)
class Identity:
    """How the API server names an object: group ("" for the core group), kind, namespace
    (None for a cluster-scoped kind) and name."""

    group: str
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        api = self.group or "core"
        where = f"{self.namespace}/" if self.namespace is not None else ""
        return f"{self.kind} '{where}{self.name}' ({api})"


def identity(body: Mapping[str, Any]) -> Identity:
    """The identity of a rendered object: the group is `apiVersion` before its `/` (none for
    `v1`, the core group)."""
    api_version = str(body.get("apiVersion", ""))
    group = api_version.rpartition("/")[0]
    kind = str(body["kind"])
    meta = body["metadata"]
    namespace = meta.get("namespace")
    scoped = None if (group, kind) in CLUSTER_SCOPED or namespace is None else str(namespace)
    return Identity(group, kind, scoped, str(meta["name"]))


def identity_clashes(manifests: Iterable[Manifest], where: str) -> list[Diagnostic]:
    """Every object, in apply order, whose identity an earlier object of `manifests` (all
    applied to one cluster, `where`) already has; objects written to the same file are left to
    `output-conflict`."""
    return _clashes(((where, m) for m in manifests), where, across_only=False)


def clashes_across(
    rendered: Mapping[str, Sequence[Manifest]], layer: str, where: str
) -> list[Diagnostic]:
    """The `layer` objects of every cluster (in cluster name order) that one cluster, `where`,
    receives from all of them, e.g. Argo CD's Applications and AppProjects, which land in Argo
    CD's namespace whichever cluster they deploy. Only clashes between two clusters' objects:
    one cluster's own are `identity_clashes`'."""
    placed = ((name, m) for name in sorted(rendered) for m in rendered[name] if m.layer == layer)
    return _clashes(placed, where, across_only=True)


def _clashes(
    placed: Iterable[tuple[str, Manifest]], where: str, *, across_only: bool
) -> list[Diagnostic]:
    seen: dict[Identity, tuple[str, Manifest]] = {}
    problems: list[Diagnostic] = []
    for cluster, manifest in placed:
        key = identity(manifest.body)
        first_cluster, first = seen.setdefault(key, (cluster, manifest))
        if first is manifest or (first_cluster == cluster and first.path == manifest.path):
            continue
        if across_only and first_cluster == cluster:
            continue
        problems.append(
            Diagnostic(
                RULE,
                f"rendered {key} on {where} is already rendered from {first.source.file} "
                f"({first_cluster}/{first.path}); this one ({cluster}/{manifest.path}) would "
                "replace it",
                manifest.source,
                notes=(("the object it would replace comes from here", first.source),),
                hint="rename the input this object's name is built from, so that the names differ",
            )
        )
    return problems


document_rule(
    RULE,
    "output",
    """Two rendered objects have the same identity: API group, kind, namespace and name.

The API server knows an object by its identity, not by the file it came from: two layers
rendering one identity (a team Namespace named like the acceptance suites' one, two clusters'
Argo CD AppProjects `team-a-b-c` from team `a` on cluster `b-c` and team `a-b` on cluster `c`)
write two files, and Argo CD applies both in turn, so the later silently replaces the earlier
(its labels, its RBAC, its spec). The finding is on the input of the object applied later, the
one that tries to take the identity; its note points at where the first came from. Checked
on each cluster, and across clusters for the Argo CD objects that all land in Argo CD's
namespace.

To satisfy it: rename the input the finding points at so that the names built from it differ:
a team namespace (`spec.namespaces[].name` in the team file), a team (`metadata.name`, and the
file's name), a cluster, a pool, a queue or a priority, e.g. team `a-b` to `ab`.""",
)
