"""The ValidatingAdmissionPolicies gpuplane renders for a cluster, evaluated on a create request
as the API server evaluates them, from the rendered objects (`Request.cluster`), so the policy
and `fit` cannot drift apart. `validate_gate` is the chain's `Step.POLICIES`; `mutate_gate`
(renderer/admission/apiserver/mutating.py) its MutatingAdmissionPolicies.

Design: docs/admission-policies.md#validatingadmissionpolicies-as-the-api-server-evaluates-them
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from renderer.admission.apiserver import fixes
from renderer.admission.apiserver.celeval import Activation, error_message, match_conditions
from renderer.admission.apiserver.decisions import BindingResult, Decision, PolicyResult, name_of
from renderer.admission.apiserver.gate import Outcome, Refusal, Request, Step
from renderer.admission.apiserver.matching import (
    Match,
    TableMapper,
    binding_matches,
    definition_matches,
)
from renderer.admission.apiserver.mutating import mutate_gate
from renderer.admission.apiserver.request import Prepared, converted, prepare

__all__ = [
    "BindingResult",
    "Decision",
    "evaluate_bindings",
    "evaluate_policy",
    "gate",
    "mutate_gate",
    "refused_by",
    "validate_gate",
]

GROUP = "admissionregistration.k8s.io"
MAX_MESSAGE_BYTES = 5 * 1024
"""`celconfig.MaxEvaluatedMessageExpressionSizeBytes`."""


def _name(obj: Mapping[str, Any]) -> str:
    return name_of(obj)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def fails_closed(policy: Mapping[str, Any]) -> bool:
    """failurePolicy, defaulted to Fail (`SetDefaults_ValidatingAdmissionPolicySpec`)."""
    return bool(_spec(policy).get("failurePolicy", "Fail") != "Ignore")


def _message(validation: Mapping[str, Any], activation: Activation) -> str:
    """The denial's message (`validator.go`: messageExpression, message, the expression)."""
    message = ""
    expression = validation.get("messageExpression")
    if isinstance(expression, str):
        result = activation.run(expression)
        if result.state == "value" and isinstance(result.value, str):
            message = result.value.strip()
            if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                message = ""
    if not message and str(validation.get("message", "")).strip():
        message = str(validation["message"]).strip()
    if not message:
        message = f"failed expression: {str(validation.get('expression', '')).strip()}"
    return message


def evaluate_policy(
    policy: Mapping[str, Any], base: Mapping[str, Any], params: Any = None
) -> PolicyResult:
    """One policy's validations on one request (`validator.Validate`). `base` holds `object`,
    `oldObject`, `request` and `namespaceObject` as CEL reads them."""
    spec = _spec(policy)
    name = _name(policy)
    fail = fails_closed(policy)
    activation = Activation({**base, "params": params})
    state, detail = match_conditions(spec, activation)
    if state == "skip":
        return PolicyResult(activation=activation)
    if state == "unsupported":
        return PolicyResult(notes=(f"{_what(name)} was not evaluated: {detail}",))
    if state == "error":
        failed = (Decision(-1, "error", detail, "Invalid"),) if fail else ()
        return PolicyResult(failed, activation=activation)
    activation.define(_list(spec.get("variables")))
    decisions: list[Decision] = []
    notes: list[str] = []
    for index, validation in enumerate(_list(spec.get("validations"))):
        expression = str(validation.get("expression", ""))
        why = activation.unsupported_in(expression)
        result = activation.run(expression)
        if why or result.state == "unsupported":
            notes.append(
                f"{_what(name)}: validation {index} was not evaluated: {why or result.error}"
            )
        elif result.state == "error":
            if fail:
                message = error_message(expression, result.error)
                decisions.append(Decision(index, "error", message, "Invalid"))
        elif not result.true:
            reason = str(validation.get("reason") or "Invalid")
            decisions.append(Decision(index, "deny", _message(validation, activation), reason))
    if spec.get("auditAnnotations"):
        notes.append(f"{_what(name)}: its auditAnnotations were not evaluated")
    return PolicyResult(tuple(decisions), tuple(notes), activation)


def _what(policy: str) -> str:
    return f"ValidatingAdmissionPolicy '{policy}'"


def _base(prepared: Prepared, match: Match) -> tuple[dict[str, Any], str]:
    """The CEL variables for a policy that matched the request at `match`'s resource."""
    obj, note = converted(prepared, match.kind or prepared.attributes.kind)
    request = copy.deepcopy(prepared.request)
    if match.kind and match.resource:
        group, version, kind = match.kind
        request["kind"] = {"group": group, "version": version, "kind": kind}
        group, version, plural = match.resource
        request["resource"] = {"group": group, "version": version, "resource": plural}
    base = {
        "object": obj,
        "oldObject": None,
        "request": request,
        "namespaceObject": prepared.namespace_object,
    }
    return base, note


@dataclass
class _Collected:
    results: list[BindingResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _bindings_of(cluster_objects: Sequence[Mapping[str, Any]], policy: str) -> list[Any]:
    found = [b for b in cluster_objects if _spec(b).get("policyName") == policy]
    return sorted(found, key=_name)


def _configure_error(policy: Mapping[str, Any], error: str) -> PolicyResult:
    if not fails_closed(policy):
        return PolicyResult()
    return PolicyResult((Decision(-1, "error", f"failed to configure binding: {error}", ""),))


def _evaluate_binding(
    policy: Mapping[str, Any], binding: Mapping[str, Any], prepared: Prepared, match: Match
) -> BindingResult | str:
    """One binding's result, or a note why fit does not evaluate it."""
    spec = _spec(binding)
    actions = tuple(str(a) for a in spec.get("validationActions") or [])
    base, note = _base(prepared, match)
    if _spec(policy).get("paramKind") is not None and spec.get("paramRef") is not None:
        return (
            f"{_what(_name(policy))} with binding '{_name(binding)}' was not evaluated: it reads "
            "parameters (paramRef), and gpuplane renders no parameter objects"
        )
    result = evaluate_policy(policy, base)
    if note:
        result = PolicyResult(result.decisions, (*result.notes, note), result.activation)
    return BindingResult(policy, binding, result, actions, base["object"])


def evaluate_bindings(
    request: Request, prepared: Prepared
) -> tuple[list[BindingResult], list[str]]:
    """Every binding of every rendered ValidatingAdmissionPolicy that matches the request,
    by policy name then binding name, with its policy's decisions; and the notes."""
    cluster = request.cluster
    mapper = TableMapper()
    bindings = cluster.of_kind("ValidatingAdmissionPolicyBinding", GROUP)
    collected = _Collected(notes=list(prepared.notes))
    for policy in sorted(cluster.of_kind("ValidatingAdmissionPolicy", GROUP), key=_name):
        match = definition_matches(policy, prepared.attributes, mapper)
        if not match.matches:
            continue  # dispatcher.go drops the definition's matching error
        for binding in _bindings_of(bindings, _name(policy)):
            found = binding_matches(binding, prepared.attributes, mapper)
            if found.error:
                result = _configure_error(policy, found.error)
                actions = tuple(_spec(binding).get("validationActions") or [])
                collected.results.append(
                    BindingResult(policy, binding, result, actions, prepared.obj)
                )
                continue
            if not found.matches:
                continue
            evaluated = _evaluate_binding(policy, binding, prepared, match)
            if isinstance(evaluated, str):
                collected.notes.append(evaluated)
            else:
                collected.results.append(evaluated)
                collected.notes.extend(evaluated.result.notes)
    return collected.results, collected.notes


def _recheck(result: BindingResult) -> fixes.Recheck:
    """The validations of `result`'s policy that still deny the object once changed."""

    def recheck(obj: Mapping[str, Any]) -> set[int]:
        activation = result.result.activation
        if activation is None:
            return {-1}
        base = {**activation.base, "object": obj}
        return {d.index for d in evaluate_policy(result.policy, base).decisions}

    return recheck


def denial_message(prepared: Prepared, result: BindingResult, decision: Decision) -> str:
    """What the API server returns when this decision is the one it reports."""
    return prepared.forbidden(
        f"ValidatingAdmissionPolicy '{result.policy_name}' with binding "
        f"'{result.binding_name}' denied request: {decision.message}"
    )


def warning(result: BindingResult, decision: Decision) -> str:
    """A `Warn` action's warning, as the API server returns it (kubectl prints `Warning: `
    before it)."""
    return (
        f"Validation failed for ValidatingAdmissionPolicy '{result.policy_name}' with binding "
        f"'{result.binding_name}': {decision.message}"
    )


def validate_gate(request: Request) -> Outcome:
    """`Step.POLICIES`: every rendered ValidatingAdmissionPolicy bound to the request.

    One `Refusal` per binding whose `Deny` action meets a denying validation, `source`
    `ValidatingAdmissionPolicy '<name>'`, `message` the API server's text; `Warn` decisions are
    notes. Where a refusal's fix is mechanical (a label the namespace holds, a TTL or other
    bounded field set to the policy's maximum, a flag the policy requires), `obj` is the object
    with it applied and `changes` says what the chain assumed."""
    prepared = prepare(request, "validating")
    if isinstance(prepared, str):
        return Outcome(Step.POLICIES, "passed", notes=(prepared,))
    results, notes = evaluate_bindings(request, prepared)
    refusals: list[Refusal] = []
    applied: list[fixes.Fix] = []
    for result in results:
        denied = result.result.decisions
        if not denied:
            continue
        if "Warn" in result.actions:
            notes.extend(warning(result, decision) for decision in denied)
        if "Deny" not in result.actions:
            continue
        found = fixes.for_binding(result, prepared, _recheck(result))
        applied.extend(f for f in found if f.mechanical)
        refusals.append(
            Refusal(
                source=_what(result.policy_name),
                message=denial_message(prepared, result, denied[0]),
                fix="; ".join(dict.fromkeys(f.text for f in found)),
            )
        )
    if not refusals:
        return Outcome(Step.POLICIES, "passed", notes=tuple(dict.fromkeys(notes)))
    fixed = fixes.apply(request.obj, applied)
    return Outcome(
        Step.POLICIES,
        "refused",
        refusals=tuple(refusals),
        changes=tuple(dict.fromkeys(f.text for f in applied)),
        obj=fixed if applied else None,
        notes=tuple(dict.fromkeys(notes)),
    )


def refused_by(outcomes: Sequence[Outcome], policy: str) -> bool:
    """Whether the chain's admission-policies step refused the object with the
    ValidatingAdmissionPolicy `policy` (a `Refusal` of `validate_gate` names it as source)."""
    return any(
        o.step is Step.POLICIES and any(r.source == _what(policy) for r in o.refusals)
        for o in outcomes
    )


def gate(request: Request) -> Outcome:
    """The chain's `Step.POLICIES` gate: `validate_gate`."""
    return validate_gate(request)
