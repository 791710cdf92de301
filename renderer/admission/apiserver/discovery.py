"""Step.DISCOVERY: kubectl maps the object's kind at its apiVersion to a REST resource before it
sends anything; a version the cluster does not serve never reaches the API server.

Design: docs/fit.md#the-discovery-step-kubectls-rest-mapping
"""

from __future__ import annotations

import difflib
import json
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from renderer.admission.apiserver.builtin_api import (
    MIN_MINOR,
    BuiltinApi,
    builtin_api,
    kube_version_key,
)
from renderer.admission.apiserver.decode import type_fix
from renderer.admission.apiserver.gate import Outcome, Refusal, Request, Step
from renderer.admission.apiserver.gojson import Walker
from renderer.admission.apiserver.metadata import go_quote

STDIN = "STDIN"
"""The source kubectl names for `-f -` (cli-runtime `pkg/resource/visitor.go` `constSTDINstr`)."""

SOURCE = "kubectl"

_METADATA_ONLY = "resource.metadataOnlyObject"
_METADATA_ONLY_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
    },
}
"""cli-runtime `metadataOnlyObject`: `metav1.TypeMeta` inline and `metav1.ObjectMeta` as
`metadata`, in package `resource`."""


@dataclass(frozen=True)
class OperatorCrds:
    """The versions one operator release's CRD serves for a kind."""

    versions: tuple[str, ...]
    """Served versions, the storage version first."""
    operator: str
    """`KubeRay v1.7.0`: the release they are read from."""
    source: str
    """The CRD file at that tag."""


def _crds(versions: tuple[str, ...], operator: str, source: str) -> OperatorCrds:
    return OperatorCrds(versions, operator, source)


_KUBERAY = "ray-project/kuberay v1.7.0 ray-operator/config/crd/bases/ray.io_{}s.yaml"
_TRAINING_OPERATOR = "kubeflow/training-operator v1.9.0 manifests/base/crds/kubeflow.org_{}s.yaml"
_KUEUE = "kubernetes-sigs/kueue v0.19.2 config/components/crd/bases/kueue.x-k8s.io_{}s.yaml"

OPERATOR_CRDS: Mapping[tuple[str, str], OperatorCrds] = {
    ("jobset.x-k8s.io", "JobSet"): _crds(
        ("v1alpha2",),
        "JobSet v0.12.0",
        "kubernetes-sigs/jobset v0.12.0 config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
    ),
    **{
        ("trainer.kubeflow.org", kind): _crds(
            ("v1alpha1",),
            "Kubeflow Trainer v2.3.0",
            f"kubeflow/trainer v2.3.0 manifests/base/crds/trainer.kubeflow.org_{kind.lower()}s.yaml",
        )
        for kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
    },
    **{
        ("ray.io", kind): _crds(("v1", "v1alpha1"), "KubeRay v1.7.0", _KUBERAY.format(kind.lower()))
        for kind in ("RayCluster", "RayJob", "RayService")
    },
    ("ray.io", "RayCronJob"): _crds(("v1",), "KubeRay v1.7.0", _KUBERAY.format("raycronjob")),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _crds(
        ("v1",),
        "LeaderWorkerSet v0.10.0",
        "kubernetes-sigs/lws v0.10.0 "
        "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    ),
    ("workload.codeflare.dev", "AppWrapper"): _crds(
        ("v1beta2",),
        "AppWrapper v1.2.1",
        "project-codeflare/appwrapper v1.2.1 "
        "config/crd/bases/workload.codeflare.dev_appwrappers.yaml",
    ),
    ("batch.volcano.sh", "Job"): _crds(
        ("v1alpha1",),
        "Volcano v1.15.1",
        "volcano-sh/volcano v1.15.1 config/crd/volcano/bases/batch.volcano.sh_jobs.yaml",
    ),
    **{
        ("kubeflow.org", kind): _crds(
            ("v1",), "Kubeflow training-operator v1.9.0", _TRAINING_OPERATOR.format(kind.lower())
        )
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
    },
    ("kubeflow.org", "MPIJob"): _crds(
        ("v2beta1", "v1"),
        "MPI Operator v0.8.0 (v2beta1, the MPIJob Kueue's kubeflow.org/mpijob integration "
        "manages) or Kubeflow training-operator v1.9.0 (v1): a cluster installs one of the two",
        "kubeflow/mpi-operator v0.8.0 manifests/base/kubeflow.org_mpijobs.yaml; "
        + _TRAINING_OPERATOR.format("mpijob"),
    ),
    **{
        ("kueue.x-k8s.io", kind): _crds(
            ("v1beta2", "v1beta1"), "Kueue v0.19.2", _KUEUE.format(kind.lower())
        )
        for kind in ("LocalQueue", "Workload", "ClusterQueue", "ResourceFlavor", "Cohort")
    },
}
"""(group, kind) -> the versions the operator's CRD serves, per release (`served: true` in the
CRD file at the tag; ../shared/crds/SOURCES.md lists the same files for the tests)."""


def gate(request: Request, *, source: str | None = None) -> Outcome:
    """The discovery step for one object; `source` is the file as given to `kubectl -f`
    (`request.source` unless given)."""
    source = request.source if source is None else source
    obj = request.obj
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        return Outcome(
            Step.DISCOVERY, "skipped", notes=("the object names no apiVersion and kind",)
        )
    api = builtin_api(request.cluster.kubernetes_version)
    if api is None:
        return Outcome(
            Step.DISCOVERY,
            "skipped",
            notes=(
                f"Kubernetes {request.cluster.kubernetes_version}: gpuplane knows the served "
                f"API versions of {MIN_MINOR} and later only",
            ),
        )
    if api_version.count("/") > 1:
        return Outcome(Step.DISCOVERY, "refused", (_missing_kind(obj, source),))
    metadata = _metadata_refusal(obj, api, source)
    if metadata is not None:
        return Outcome(Step.DISCOVERY, "refused", (metadata,))
    group, _, version = api_version.rpartition("/")
    if group in api.groups():
        return _builtin(request, api, group, version, kind, source)
    return _custom(obj, group, version, kind, source)


def no_match_message(obj: Mapping[str, Any], source: str) -> str:
    """kubectl's words when no REST mapping serves the object's kind at its version."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    name = name if isinstance(name, str) else ""
    namespace = namespace if isinstance(namespace, str) else ""
    return (
        f"resource mapping not found for name: {go_quote(name)} namespace: "
        f"{go_quote(namespace)} from {go_quote(source)}: no matches for kind "
        f"{go_quote(str(obj.get('kind')))} in version {go_quote(str(obj.get('apiVersion')))}\n"
        "ensure CRDs are installed first"
    )


def _missing_kind(obj: Mapping[str, Any], source: str) -> Refusal:
    """kubectl's answer to an apiVersion `ParseGroupVersion` refuses (`unexpected GroupVersion
    string`), which leaves the object no kind. The object is quoted as the JSON kubectl decoded:
    from YAML, `sigs.k8s.io/yaml.YAMLToJSON`'s (Go's `json.Marshal` of a map: keys sorted,
    `<`, `>`, `&` escaped); a JSON file's own bytes may be spaced otherwise."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char in "<>&\u2028\u2029":
        data = data.replace(char, f"\\u{ord(char):04x}")
    message = f"unable to decode {go_quote(source)}: Object 'Kind' is missing in '{data}'"
    fix = (
        f"write apiVersion as <group>/<version> with one '/' (it is {obj.get('apiVersion')}): "
        "kubectl reads no apiVersion and kind from it"
    )
    return Refusal(SOURCE, message, fix)


def _metadata_refusal(obj: Mapping[str, Any], api: BuiltinApi, source: str) -> Refusal | None:
    """kubectl's `metadataValidatingDecoder`: the document's apiVersion, kind and metadata
    decoded (not strictly) into a struct of `metav1.TypeMeta` inline and
    `metav1.ObjectMeta` as `metadata` (`metadataOnlyObject`)."""
    if "metadata" not in obj:
        return None
    walker = Walker(_with_metadata_only(api.minor), strict=False)
    decoded = walker.decode({"metadata": obj["metadata"]}, walker.definition_shape(_METADATA_ONLY))
    if decoded.error is None:
        return None
    fix = type_fix(decoded.error)
    if decoded.error.steps[:2] in (("metadata", "labels"), ("metadata", "annotations")):
        fix += " (quote numbers and booleans: label and annotation values are strings)"
    return Refusal(SOURCE, f"unable to decode {go_quote(source)}: {decoded.error.message}", fix)


@cache
def _with_metadata_only(minor: str) -> Mapping[str, Mapping[str, Any]]:
    """The release's definitions and kubectl's `metadataOnlyObject`."""
    api = builtin_api(minor)
    definitions = dict(api.definitions) if api is not None else {}
    return ChainMap({_METADATA_ONLY: _METADATA_ONLY_SCHEMA}, definitions)


def _builtin(
    request: Request, api: BuiltinApi, group: str, version: str, kind: str, source: str
) -> Outcome:
    if api.served(group, version, kind):
        return Outcome(Step.DISCOVERY, "passed")
    message = no_match_message(request.obj, source)
    target = _served_instead(api, group, kind)
    if target is None:
        return Outcome(
            Step.DISCOVERY, "refused", (_not_served(api, group, version, kind, message),)
        )
    new_version = f"{target[0]}/{target[1]}" if target[0] else target[1]
    old = str(request.obj.get("apiVersion"))
    if (group, version, kind) in api.kinds:
        why = f"{old} is a prerelease version it does not serve by default"
    else:
        why = (
            f"it serves no {old}: see the deprecation guide, "
            "https://kubernetes.io/docs/reference/using-api/deprecation-guide/"
        )
    fix = f"use apiVersion: {new_version}, which Kubernetes {api.minor} serves for {kind} ({why})"
    changed = {**request.obj, "apiVersion": new_version}
    problem = _decode_problem(api, changed, target[0], target[1], kind)
    refusal = Refusal(SOURCE, message, fix if problem is None else f"{fix}; then {problem}")
    if problem is not None:
        return Outcome(Step.DISCOVERY, "refused", (refusal,))
    return Outcome(
        Step.DISCOVERY,
        "refused",
        (refusal,),
        changes=(f"apiVersion: {new_version} (was {old})",),
        obj=changed,
    )


def _served_instead(api: BuiltinApi, group: str, kind: str) -> tuple[str, str] | None:
    """The group and version to use instead: the kind's preferred served version in its own
    group, else in the one other group serving it (extensions Deployment -> apps)."""
    versions = api.served_versions(group, kind)
    if versions:
        return group, versions[0]
    groups = api.groups_serving(kind)
    if len(groups) == 1:
        return groups[0], api.served_versions(groups[0], kind)[0]
    return None


def _not_served(api: BuiltinApi, group: str, version: str, kind: str, message: str) -> Refusal:
    """No version of the kind is served: a prerelease API off by default, or a kind misspelt."""
    gv = f"{group}/{version}" if group else version
    off_by_default = (
        "beta and alpha APIs are off by default: the platform team must turn {} on in the API "
        "server (--runtime-config), or run the cluster on a Kubernetes version that serves it"
    )
    if (group, version, kind) in api.kinds:
        fix = f"Kubernetes {api.minor} does not serve {gv} by default; " + off_by_default.format(gv)
        return Refusal(SOURCE, message, fix)
    others = sorted((v for g, v, k in api.kinds if g == group and k == kind), key=kube_version_key)
    if others:
        at = f"{group}/{others[0]}"
        fix = (
            f"Kubernetes {api.minor} has {kind} only at "
            f"{', '.join(f'{group}/{v}' for v in others)}, which it does not serve by default; "
            + off_by_default.format(at)
        )
        return Refusal(SOURCE, message, fix)
    close = difflib.get_close_matches(kind, api.kinds_of(group, version), n=1)
    if close:
        return Refusal(SOURCE, message, f"did you mean kind: {close[0]}?")
    return Refusal(SOURCE, message, f"{gv} has no kind {kind} in Kubernetes {api.minor}")


def _decode_problem(
    api: BuiltinApi, obj: Mapping[str, Any], group: str, version: str, kind: str
) -> str | None:
    """Why the object cannot be handed on at the served version, in words, or None when it
    decodes there as written."""
    definition = api.definition_of(group, version, kind)
    if definition is None:
        return "check its fields against that version"
    walker = Walker(api.definitions)
    decoded = walker.decode(obj, walker.definition_shape(definition))
    if decoded.error is not None:
        return f"change {decoded.error.path or 'the object'}, which that version reads otherwise"
    if decoded.unknown:
        return "rename or drop " + ", ".join(decoded.unknown) + ", unknown to that version"
    return None


def _custom(obj: Mapping[str, Any], group: str, version: str, kind: str, source: str) -> Outcome:
    crds = OPERATOR_CRDS.get((group, kind))
    if crds is None:
        note = (
            f"{kind} {obj.get('apiVersion')} is no built-in kind and gpuplane does not know its "
            "CRD: if the cluster has none serving it, kubectl answers: "
            + no_match_message(obj, source).replace("\n", " ")
        )
        return Outcome(Step.DISCOVERY, "passed", notes=(note,))
    if version in crds.versions:
        return Outcome(Step.DISCOVERY, "passed")
    fix = (
        f"use apiVersion: {group}/{crds.versions[0]}: the {kind} CRD of {crds.operator} serves "
        f"{', '.join(crds.versions)} ({crds.source}); check the fields against that version"
    )
    return Outcome(
        Step.DISCOVERY, "refused", (Refusal(SOURCE, no_match_message(obj, source), fix),)
    )


__all__ = ["OPERATOR_CRDS", "STDIN", "OperatorCrds", "gate", "no_match_message"]
