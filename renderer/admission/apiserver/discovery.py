"""Step.DISCOVERY: kubectl maps the object's kind at its apiVersion to a REST resource before it
sends anything; a kind or version the cluster does not serve never reaches the API server.
Built-in kinds are served by the cluster's Kubernetes release, custom kinds by the add-ons its
file declares (`renderer.model.operators`, the same table the policy and the gitops layer read).

Design: docs/fit.md#the-discovery-step-kubectls-rest-mapping
"""

from __future__ import annotations

import difflib
import json
from collections import ChainMap
from collections.abc import Mapping
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
from renderer.model.operators import (
    OPTIONAL_ADDONS,
    Operator,
    served_versions,
    servers,
    serving,
)

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
    return _custom(request, group, version, kind, source)


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


def _custom(request: Request, group: str, version: str, kind: str, source: str) -> Outcome:
    """A custom kind is served where an add-on the cluster declares defines it
    (`renderer.model.operators`, the kinds each release's CRDs serve) at the object's version;
    kubectl finds no REST mapping for it otherwise (apimachinery `meta.NoKindMatchError`)."""
    obj = request.obj
    known = servers(group, kind)
    if not known:
        note = (
            f"cannot tell whether the cluster serves {kind} {obj.get('apiVersion')}: it is no "
            "built-in kind, no add-on gpuplane knows serves it, and gpuplane does not know its "
            "CRD; if the cluster has none serving it, kubectl answers: "
            + no_match_message(obj, source).replace("\n", " ")
        )
        return Outcome(Step.DISCOVERY, "passed", notes=(note,))
    addons = request.cluster.addons
    declared = [o for o in known if addons is None or o.addon in addons]
    if any(version in served_versions(o, group, kind) for o in declared):
        return Outcome(Step.DISCOVERY, "passed")
    message = no_match_message(obj, source)
    if declared:
        fix = _other_version(declared[0], group, version, kind)
        return Outcome(Step.DISCOVERY, "refused", (Refusal(SOURCE, message, fix),))
    operator = serving(group, kind, version)
    assert operator is not None  # `known` is not empty
    fix, addon = _undeclared(request.cluster.name, operator, group, version, kind)
    assumed = (
        (f"cluster {request.cluster.name} declares `{addon}: {{version: {operator.release}}}`",)
        if addon is not None
        else ()
    )
    refusal = Refusal(SOURCE, message, fix)
    return Outcome(Step.DISCOVERY, "refused", (refusal,), assumed, addon=addon)


def _preferred(operator: Operator, group: str, kind: str) -> str:
    """The version to write: the one the API server prefers of those the release serves."""
    return sorted(served_versions(operator, group, kind), key=kube_version_key)[0]


def _other_version(operator: Operator, group: str, version: str, kind: str) -> str:
    """The fix where an add-on the cluster declares serves the kind, at other versions."""
    versions = ", ".join(f"{group}/{v}" for v in served_versions(operator, group, kind))
    fix = (
        f"use apiVersion: {group}/{_preferred(operator, group, kind)}: {operator.title} "
        f"{operator.release}, which the cluster runs, serves {kind} as {versions}; check the "
        "fields against that version"
    )
    other = serving(group, kind, version)
    if other is not None and other is not operator:
        fix += (
            f" ({other.title} serves {group}/{version}, and defines the same CRD: a cluster "
            "runs one of the two)"
        )
    return fix


def _undeclared(
    cluster: str, operator: Operator, group: str, version: str, kind: str
) -> tuple[str, str | None]:
    """The fix where no add-on the cluster declares serves the kind, and the add-on the chain
    goes on as if declared (None for a platform add-on: a cluster runs Kueue or Volcano)."""
    versions = ", ".join(f"{group}/{v}" for v in served_versions(operator, group, kind))
    serves = f"{operator.title} serves {kind} ({versions})"
    if operator.addon not in OPTIONAL_ADDONS:
        return (
            f"cluster {cluster} does not run {operator.title}, and {kind} is served by no "
            f"add-on it declares: {serves}; submit it to a cluster that runs "
            f"{operator.title}",
            None,
        )
    fix = (
        f"{kind} is served by no add-on cluster {cluster} declares: {serves}. Ask the platform "
        f"team to declare `{operator.addon}: {{version: {operator.release}}}` under spec.addons "
        f"of the cluster's file (`{operator.addon}: {{enabled: false}}` where it already runs "
        "there)"
    )
    if version not in served_versions(operator, group, kind):
        fix += f", and use apiVersion: {group}/{_preferred(operator, group, kind)}"
    return fix, operator.addon


__all__ = ["STDIN", "gate", "no_match_message"]
