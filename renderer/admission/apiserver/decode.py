"""Step.DECODE: the API server decodes the request body into the built-in kind's Go type, strictly.

k8s.io/apiserver `pkg/endpoints/handlers/create.go` (v0.30 to v0.36) decodes the body with
`fieldValidation=Strict`, which kubectl sends by default since 1.27 (`--validate=strict`). A
body that does not decode is answered `BadRequest` with `transformDecodeError`'s words
(`pkg/endpoints/handlers/rest.go`):

    <Kind> in version "<version>" cannot be handled as a <Kind>: <decoding error>

where the decoding error is, first, one that stops decoding (a quantity that does not parse, an
IntOrString that is neither), else the first type mismatch (`json: cannot unmarshal array into
Go struct field NodeAffinity.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
of type v1.NodeSelector`), else the strict errors (`strict decoding error: unknown field
"spec.x", unknown field "spec.y"`: apimachinery `runtime.strictDecodingError`, the fields in
the order the decoder met them). `gojson` does the decoding; the schemas are kubernetes-validate's
OpenAPI definitions of the cluster's release, with the Go names `gonames` adds.

Custom resources are decoded by apiextensions-apiserver against their CRD's structural schema:
gpuplane has no CRD schema offline (they are given with `--crds`, the fixture `../shared/crds`
is for tests only), so this step skips them with a note. Built-in kinds the cluster does not
serve are the discovery step's (it hands on the object at a served version when it can).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from renderer.admission.apiserver.builtin_api import BuiltinApi, builtin_api
from renderer.admission.apiserver.gate import Outcome, Refusal, Request, Step
from renderer.admission.apiserver.gojson import Decoded, DecodeError, Walker, key_text
from renderer.admission.apiserver.metadata import go_quote

SOURCE = "API server (decoding)"


def decode(obj: Mapping[str, Any], api: BuiltinApi) -> Decoded | None:
    """How the API server decodes `obj`; None when it is no kind `api` serves."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group, _, version = api_version.rpartition("/")
    definition = api.definition_of(group, version, kind)
    if definition is None or not api.served(group, version, kind):
        return None
    walker = Walker(api.definitions)
    return walker.decode(obj, walker.definition_shape(definition))


def gate(request: Request) -> Outcome:
    """The decoding step for one object."""
    obj = request.obj
    api = builtin_api(request.cluster.kubernetes_version)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api is None or not isinstance(api_version, str) or not isinstance(kind, str):
        return Outcome(Step.DECODE, "skipped", notes=("no built-in schema to decode it with",))
    group = api_version.rpartition("/")[0]
    if group not in api.groups():
        return Outcome(
            Step.DECODE,
            "skipped",
            notes=(
                f"{kind} is a custom resource: apiextensions-apiserver decodes it against its "
                "CRD's schema, which gpuplane does not have offline",
            ),
        )
    decoded = decode(obj, api)
    if decoded is None:
        return Outcome(
            Step.DECODE,
            "skipped",
            notes=(f"Kubernetes {api.minor} does not serve {kind} {api_version}",),
        )
    version = api_version.rpartition("/")[2]
    head = f"{kind} in version {go_quote(version)} cannot be handled as a {kind}: "
    if decoded.error is not None:
        refusal = Refusal(SOURCE, head + decoded.error.message, type_fix(decoded.error))
        return Outcome(Step.DECODE, "refused", (refusal,))
    if decoded.unknown:
        refusal = Refusal(SOURCE, head + decoded.strict_message, unknown_fix(decoded.unknown))
        dropped = without(obj, decoded.unknown_steps)
        changes = tuple(f"drops unknown field {path}" for path in decoded.unknown)
        return Outcome(Step.DECODE, "refused", (refusal,), changes=changes, obj=dropped)
    return Outcome(Step.DECODE, "passed")


_SHAPE_WORDS = {
    "struct": "a mapping (a {go})",
    "map": "a mapping",
    "slice": "a list",
    "string": "a string",
    "bytes": "a base64 string",
    "int32": "a whole number",
    "int64": "a whole number",
    "float64": "a number",
    "bool": "true or false",
    "quantity": "a quantity such as 500m, 2 or 16Gi",
    "intorstring": "a whole number or a string",
    "time": "an RFC 3339 time string",
}
_FOUND_WORDS = {"array": "a list", "object": "a mapping", "number": "a number", "bool": "a boolean"}


def type_fix(error: DecodeError) -> str:
    """What to change for a value of the wrong type, in the file's words."""
    where = error.path or "the object"
    shape = _SHAPE_WORDS.get(error.shape, "{go}").format(go=error.expected)
    if error.shape == "string" and error.expected != "string":
        shape = f"a string ({error.expected})"
    found = _FOUND_WORDS.get(error.found, f"a {error.found}")
    return f"write {where} as {shape}, not {found}"


def unknown_fix(paths: Sequence[str]) -> str:
    return (
        "remove or correct "
        + ", ".join(paths)
        + ": the API has no such field (field names are case-sensitive)"
    )


def without(obj: Mapping[str, Any], paths: Sequence[Sequence[str | int]]) -> dict[str, Any]:
    """`obj` without the fields at `paths` (keys and indices), as the API server keeps the
    object when unknown fields are ignored: what the chain goes on with."""
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    for steps in paths:
        _drop(result, steps)
    return result


def _drop(node: Any, steps: Sequence[str | int]) -> None:
    for step in steps[:-1]:
        if isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict):
            key = _key(node, step)
            if key is None:
                return
            node = node[key]
        else:
            return
    last = steps[-1] if steps else None
    if isinstance(node, dict) and isinstance(last, str):
        key = _key(node, last)
        if key is not None:
            del node[key]


def _key(node: dict[Any, Any], name: str) -> Any:
    """The key of `node` kubectl writes as `name` (YAML keys may be numbers or booleans)."""
    for key in node:
        if key_text(key) == name:
            return key
    return None


__all__ = ["decode", "gate", "type_fix", "unknown_fix", "without"]
