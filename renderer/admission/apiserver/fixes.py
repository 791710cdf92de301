"""What to change so a ValidatingAdmissionPolicy admits the object, read from the policy itself.

A fix is mechanical where the policy's CEL says the one value that passes, in a form this
module knows, and setting that value makes the validation pass when it is evaluated again
(`for_binding` checks it; a candidate that does not pass is not offered):
- a label equal to the namespace's (`object.metadata.labels['K'] ==
  namespaceObject.metadata.labels['K']`): `add label K: <the namespace's value>`;
- a field read through a variable `has(object.P) ? object.P : <default>` and bounded by
  `variables.X <= variables.L` (or `<= <number>`): `set P: <the bound>`, the most the policy
  allows (gpuplane's TTL policies: spec.ttlSecondsAfterFinished, a team's retention);
- a flag the validation requires (`has(object.P) && object.P`): `set P: true`.
Any other denial's fix is the policy's own message, which gpuplane writes to say what to do;
a validation that failed to evaluate says so.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from renderer.admission.apiserver.decisions import BindingResult, Decision
from renderer.admission.apiserver.request import Prepared


@dataclass(frozen=True)
class Fix:
    text: str
    path: tuple[str, ...] = ()
    value: Any = None
    mechanical: bool = False


Recheck = Callable[[Mapping[str, Any]], set[int]]
"""The indexes of the validations that still deny once the object is changed."""

_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_LABEL_FROM_NAMESPACE = re.compile(
    r"object\.metadata\.labels\[(?P<q>['\"])(?P<key>[^'\"]+)(?P=q)\]\s*==\s*"
    r"namespaceObject\.metadata\.labels\[(?P<q2>['\"])(?P=key)(?P=q2)\]"
)
_FIELD_VARIABLE = re.compile(rf"has\(object\.(?P<path>{_PATH})\)\s*\?\s*object\.(?P=path)\s*:")
_REQUIRED_FLAG = re.compile(rf"has\(object\.(?P<path>{_PATH})\)\s*&&\s*object\.(?P=path)(?![\w.])")


def _get(obj: Any, path: Iterable[str]) -> Any:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def set_path(obj: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any] | None:
    """A copy of `obj` with `path` set to `value`, or None where a field on the way is not an
    object."""
    result = copy.deepcopy(dict(obj))
    node: dict[str, Any] = result
    for part in path[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            return None
        node = child
    node[path[-1]] = value
    return result


def _label_fixes(expression: str, obj: Mapping[str, Any], namespace: Any) -> list[Fix]:
    labels = _get(namespace, ("metadata", "labels")) or {}
    found = []
    for match in _LABEL_FROM_NAMESPACE.finditer(expression):
        key = match["key"]
        if key not in labels:
            continue
        value = labels[key]
        old = _get(obj, ("metadata", "labels", key))
        text = (
            f"add label {key}: {value}" if old is None else f"set label {key}: {value} (not {old})"
        )
        found.append(Fix(text, ("metadata", "labels", key), value, True))
    return found


def _bounded_fixes(
    expression: str, spec: Mapping[str, Any], variables: Mapping[str, Any], obj: Any
) -> list[Fix]:
    found = []
    for variable in spec.get("variables") or []:
        if not isinstance(variable, Mapping):
            continue
        match = _FIELD_VARIABLE.match(str(variable.get("expression", "")).strip())
        if not match:
            continue
        name = re.escape(str(variable.get("name", "")))
        bound = re.search(rf"variables\.{name}\s*<=\s*(?:variables\.(\w+)|(\d+))\b", expression)
        if not bound:
            continue
        value = variables.get(bound[1]) if bound[1] else int(bound[2])
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        path = tuple(match["path"].split("."))
        old = _get(obj, path)
        shown = f"set {match['path']}: {value} (the most the policy allows"
        shown += ")" if old is None else f"; it is {old})"
        found.append(Fix(shown, path, value, True))
    return found


def _flag_fixes(expression: str, obj: Any) -> list[Fix]:
    found = []
    for match in _REQUIRED_FLAG.finditer(expression):
        path = tuple(match["path"].split("."))
        if _get(obj, path) is not True:
            found.append(Fix(f"set {match['path']}: true", path, True, True))
    return found


def candidates(result: BindingResult, decision: Decision, prepared: Prepared) -> list[Fix]:
    """The mechanical fixes the denying validation's CEL suggests, not yet checked."""
    spec = result.policy.get("spec") or {}
    validations = spec.get("validations") or []
    if decision.index < 0 or decision.index >= len(validations):
        return []
    expression = str(validations[decision.index].get("expression", ""))
    activation = result.result.activation
    variables = activation.variables if activation is not None else {}
    obj = result.obj
    return [
        *_label_fixes(expression, obj, prepared.namespace_object),
        *_bounded_fixes(expression, spec, variables, obj),
        *_flag_fixes(expression, obj),
    ]


def advice(decision: Decision) -> Fix:
    """A denial's fix in the policy's own words; a failed evaluation's, said plainly."""
    if decision.evaluation == "deny":
        return Fix(decision.message)
    error = decision.message.rpartition("resulted in error: ")[2]
    return Fix(
        f"the policy could not be evaluated on this object ({error}) and its failurePolicy "
        "refuses it: give the object the fields the policy reads, or ask the platform team"
    )


def for_binding(result: BindingResult, prepared: Prepared, recheck: Recheck) -> list[Fix]:
    """A fix for each validation of the binding that denies: the first of its mechanical
    fixes that alone makes it pass, else its advice."""
    found: list[Fix] = []
    for decision in result.result.decisions:
        for fix in candidates(result, decision, prepared):
            changed = set_path(result.obj, fix.path, fix.value)
            if changed is not None and decision.index not in recheck(changed):
                found.append(fix)
                break
        else:
            found.append(advice(decision))
    return found


def apply(obj: Mapping[str, Any], applied: Iterable[Fix]) -> dict[str, Any]:
    """`obj` with every mechanical fix applied (the chain goes on with it)."""
    result: dict[str, Any] = copy.deepcopy(dict(obj))
    for fix in applied:
        changed = set_path(result, fix.path, fix.value)
        if changed is not None:
            result = changed
    return result
