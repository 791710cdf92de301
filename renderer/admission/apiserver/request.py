"""A create request as the admission policies see it: its resource, its object as admission
receives it, `request` and `namespaceObject` as CEL reads them, and how the API server names it
in an error.

From k8s.io/apiserver (Kubernetes v1.36):
- `pkg/endpoints/handlers/create.go`: the object's `metadata.namespace` is the request's
  (`rest.EnsureObjectNamespaceMatchesRequestNamespace`) before any admission;
- mutating admission runs in the handler, before the name is generated; validating admission
  runs in the registry's `Store.create` after `objectMeta.SetName(GenerateName(...))`
  (`pkg/registry/generic/registry/store.go`), and `rest.AdmissionToValidateObjectFunc` hands
  it that generated name: `<generateName>` plus five random characters
  (`names.SimpleNameGenerator`, `utilrand.String(5)`, the prefix cut to 58 characters). fit
  writes the five as `?????` (`GENERATED`): the one part of the message it cannot know;
- `pkg/admission/errors.go` `extractResourceName`: the name in an error is the request's name,
  else the object's name, else its generateName, else `Unknown`; apimachinery
  `pkg/api/errors` `NewForbidden`: `<resource>.<group> "<name>" is forbidden: <error>` (the core
  group without the dot: `schema.GroupResource.String()`; `%q` quoting);
- `pkg/admission/plugin/cel/condition.go` `CreateAdmissionRequest` (the `request` variable)
  and `CreateNamespaceObject` (`namespaceObject`: the namespace's metadata, spec and status,
  no apiVersion or kind). Kubernetes labels every namespace `kubernetes.io/metadata.name:
  <name>` (`SetDefaults_Namespace`, pkg/apis/core/v1/defaults.go) and creates it with the
  `kubernetes` finalizer, phase Active; gpuplane's rendered Namespace gets the same here.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from renderer.admission.apiserver.gate import Request
from renderer.admission.apiserver.matching import Attributes
from renderer.admission.apiserver.metadata import go_quote
from renderer.admission.apiserver.resources import Resource, resource_of, split_api_version

GENERATED = "?????"
"""The five random characters the API server appends to a `generateName`."""
_MAX_GENERATED_PREFIX = 58
"""`maxGeneratedNameLength` (63 - 5): a longer generateName is cut to this."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

Phase = Literal["mutating", "validating"]


@dataclass(frozen=True)
class Prepared:
    """One request, ready for the policies of one phase of admission."""

    resource: Resource
    attributes: Attributes
    obj: dict[str, Any]
    """The object as admission receives it (namespace set; named, when validating)."""
    name: str
    """The name the API server's errors give it."""
    namespace_object: dict[str, Any] | None
    request: dict[str, Any]
    notes: tuple[str, ...] = ()

    def forbidden(self, error: str) -> str:
        """`NewForbidden(resource, name, error)`'s message."""
        where = self.resource.group_resource
        if not self.name:
            return f"{where} is forbidden: {error}"
        return f"{where} {go_quote(self.name)} is forbidden: {error}"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def object_name(obj: Mapping[str, Any], phase: Phase) -> str:
    """The name admission sees: the object's own; for a generateName-only object, none while
    mutating and the generated one while validating."""
    meta = _meta(obj)
    name = meta.get("name")
    if isinstance(name, str) and name:
        return name
    prefix = meta.get("generateName")
    if phase == "validating" and isinstance(prefix, str) and prefix:
        return prefix[:_MAX_GENERATED_PREFIX] + GENERATED
    return ""


def error_name(obj: Mapping[str, Any], phase: Phase) -> str:
    """`extractResourceName`: the request's name, else the object's, else its generateName."""
    name = object_name(obj, phase)
    if name:
        return name
    prefix = _meta(obj).get("generateName")
    return prefix if isinstance(prefix, str) and prefix else "Unknown"


def namespace_object(request: Request) -> tuple[dict[str, Any], str]:
    """`namespaceObject` for the request's namespace, and a note where gpuplane renders no
    such namespace (then it has only its name label, as `kubectl create namespace` gives it)."""
    rendered = request.namespace_object
    note = ""
    if rendered is None:
        rendered = {"metadata": {"name": request.namespace}}
        note = (
            f"namespace {request.namespace} is not one gpuplane renders on cluster "
            f"{request.cluster.name}: the policies see it with no labels but "
            f"{NAMESPACE_NAME_LABEL}"
        )
    meta = plain(_meta(rendered))
    meta.pop("namespace", None)
    labels = dict(meta.get("labels") or {})
    labels[NAMESPACE_NAME_LABEL] = request.namespace
    meta["labels"] = labels
    spec = plain(rendered.get("spec")) or {"finalizers": ["kubernetes"]}
    status = plain(rendered.get("status")) or {"phase": "Active"}
    return {"metadata": meta, "spec": spec, "status": status}, note


def _gv(group: str, version: str, name: str, key: str) -> dict[str, str]:
    return {"group": group, "version": version, key: name}


def request_variable(
    request: Request, resource: Resource, version: str, name: str
) -> dict[str, Any]:
    """`CreateAdmissionRequest` as CEL reads it (fields Go's JSON omits when empty left out)."""
    group = resource.group
    user: dict[str, Any] = {"username": request.user.username}
    if request.user.groups:
        user["groups"] = list(request.user.groups)
    value: dict[str, Any] = {
        "uid": "",
        "kind": _gv(group, version, resource.kind, "kind"),
        "resource": _gv(group, version, resource.plural, "resource"),
        "requestKind": _gv(group, version, resource.kind, "kind"),
        "requestResource": _gv(group, version, resource.plural, "resource"),
        "operation": request.operation,
        "userInfo": user,
        "dryRun": False,
        "options": {
            "kind": "CreateOptions" if request.operation == "CREATE" else "UpdateOptions",
            "apiVersion": "meta.k8s.io/v1",
        },
    }
    if name:
        value["name"] = name
    if resource.namespaced and request.namespace:
        value["namespace"] = request.namespace
    return value


def plain(value: Any) -> Any:
    """`value` as JSON gives it, which is how the API server hands an object to CEL: a YAML
    timestamp as its RFC 3339 text, a key as a string, anything else JSON has no word for as
    its text."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def admitted(
    request: Request, obj: Mapping[str, Any], resource: Resource, phase: Phase
) -> dict[str, Any]:
    """`obj` as admission receives it: plain JSON, in the request's namespace, named as the
    phase sees it."""
    result = plain(obj)
    meta = result.get("metadata")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    if resource.namespaced:
        meta["namespace"] = request.namespace
    name = object_name(obj, phase)
    if name:
        meta["name"] = name
    result["metadata"] = meta
    return dict(result)


def prepare(request: Request, phase: Phase) -> Prepared | str:
    """The request ready for the policies, or why fit cannot match it to any (a kind missing
    from the REST mapping table)."""
    obj = request.obj
    api_version = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    resource = resource_of(api_version, kind)
    if resource is None:
        return (
            f"fit does not know the resource of {api_version} {kind}, so it cannot tell which "
            "admission policies apply to it: they were not evaluated"
        )
    group, version = split_api_version(api_version)
    received = admitted(request, obj, resource, phase)
    name = object_name(obj, phase)
    namespace, note = namespace_object(request)
    attributes = Attributes(
        resource=(group, version, resource.plural),
        subresource="",
        kind=(group, version, kind),
        namespace=request.namespace if resource.namespaced else "",
        name=name,
        operation=request.operation,
        obj=received,
        namespace_labels=namespace["metadata"]["labels"],
    )
    return Prepared(
        resource=resource,
        attributes=attributes,
        obj=received,
        name=error_name(obj, phase),
        namespace_object=namespace if resource.namespaced else None,
        request=request_variable(request, resource, version, name),
        notes=(note,) if note else (),
    )


def converted(prepared: Prepared, kind: tuple[str, str, str]) -> tuple[dict[str, Any], str]:
    """The object at the version a policy matched it at (matchPolicy Equivalent), and a note
    where the API server's conversion is one fit does not model."""
    group, version, _ = kind
    api_version = f"{group}/{version}" if group else version
    if api_version == prepared.obj.get("apiVersion"):
        return prepared.obj, ""
    if prepared.resource.conversion == "none":
        return {**prepared.obj, "apiVersion": api_version}, ""
    return prepared.obj, (
        f"the policy matches {prepared.resource.kind} at {api_version}: the API server "
        "converts the object to that version first, and fit evaluates it as written"
    )
