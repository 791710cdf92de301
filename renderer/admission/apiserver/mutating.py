"""The MutatingAdmissionPolicies gpuplane renders for a cluster (Kubernetes 1.36+, where
`renderer.model.security.priority_enforcement` is `mutating`), applied to a create request as
the API server applies them: the mutating half of `Step.MUTATE`.

From Kubernetes v1.36:
- the order of mutating admission (pkg/kubeapiserver/options/plugins.go `AllOrderedPlugins`):
  the in-tree mutating plugins (LimitRanger, ...), then `MutatingAdmissionPolicy`, then
  `MutatingAdmissionWebhook` (Kueue's defaulting webhooks). `mutate_gate` takes the other two
  as hooks, `before` and `after`, so the chain runs them in that order around the policies;
- k8s.io/apiserver `pkg/admission/plugin/policy/generic/policy_dispatcher.go` `Dispatch`:
  each policy whose `matchConstraints` match, each of its bindings that match; a configuration
  error (a policy or binding that cannot be matched, `failed to configure policy: ...`) and
  each failed mutation are `PolicyError`s, dropped under failurePolicy Ignore; under Fail the
  request is refused with the first one's text alone: `policy '<p>' with binding '<b>' denied
  request: <error>` (`PolicyError.Error`; the dispatcher blanks the Forbidden message first);
- `.../mutating/dispatcher.go` `dispatchInvocations`: a policy's `matchConditions` (a failure
  is a PolicyError of reason Invalid; one false skips it), then its mutations in order, each
  on the object as the previous left it; a policy with `reinvocationPolicy: IfNeeded` runs
  once more if a later policy or plugin changed the object after it
  (`reinvocationcontext.go`);
- `.../mutating/patch/smd.go`: ApplyConfiguration (applyconfig.py); `.../patch/json_patch.go`:
  JSONPatch, which gpuplane renders none of and fit does not apply (a note says so).
Like the API server (the policy source groups bindings in a Go map), fit has no defined order
between policies: it takes them by name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from renderer.admission.apiserver import applyconfig
from renderer.admission.apiserver.celeval import Activation, error_message, match_conditions
from renderer.admission.apiserver.decisions import name_of
from renderer.admission.apiserver.gate import Outcome, Refusal, Request, Step
from renderer.admission.apiserver.matching import (
    Match,
    TableMapper,
    binding_matches,
    definition_matches,
)
from renderer.admission.apiserver.metadata import go_quote
from renderer.admission.apiserver.request import Prepared, admitted, converted, prepare

GROUP = "admissionregistration.k8s.io"

Noun = Literal["label", "annotation"]

Hook = Callable[[Request], Outcome]
"""Another mutating step of the chain (Kueue's defaulting webhooks, LimitRanger): it reads the
request with the object as it stands and returns its Outcome (`obj` the object it hands on)."""


@dataclass(frozen=True)
class _Invocation:
    policy: Mapping[str, Any]
    binding: Mapping[str, Any]
    match: Match


@dataclass
class _State:
    """The object as mutating admission goes, and what it did."""

    obj: dict[str, Any]
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    """The PolicyErrors under failurePolicy Fail, in order: (the policy, as a Refusal's source,
    the error's text `policy '<p>' with binding '<b>' denied request: <error>`)."""


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _what(policy: Mapping[str, Any]) -> str:
    return f"MutatingAdmissionPolicy '{name_of(policy)}'"


def _fails_closed(policy: Mapping[str, Any]) -> bool:
    return bool(_spec(policy).get("failurePolicy", "Fail") != "Ignore")


def _policy_error(state: _State, invocation: _Invocation, error: str) -> None:
    if _fails_closed(invocation.policy):
        text = (
            f"policy '{name_of(invocation.policy)}' with binding "
            f"'{name_of(invocation.binding)}' denied request: {error}"
        )
        state.errors.append((_what(invocation.policy), text))


def invocations(request: Request, prepared: Prepared, state: _State) -> list[_Invocation]:
    """Every (policy, binding) pair that matches the request, by policy then binding name."""
    mapper = TableMapper()
    bindings = request.cluster.of_kind("MutatingAdmissionPolicyBinding", GROUP)
    found = []
    for policy in sorted(request.cluster.of_kind("MutatingAdmissionPolicy", GROUP), key=name_of):
        match = definition_matches(policy, prepared.attributes, mapper)
        if match.error:
            if _fails_closed(policy):
                text = f"failed to configure policy: {match.error}"
                state.errors.append(
                    (_what(policy), f"policy {go_quote(name_of(policy))} denied request: {text}")
                )
            continue
        if not match.matches:
            continue
        mine = [b for b in bindings if _spec(b).get("policyName") == name_of(policy)]
        for binding in sorted(mine, key=name_of):
            bound = binding_matches(binding, prepared.attributes, mapper)
            invocation = _Invocation(policy, binding, match)
            if bound.error:
                _policy_error(state, invocation, f"failed to configure binding: {bound.error}")
            elif bound.matches:
                found.append(invocation)
    return found


def _base(prepared: Prepared, invocation: _Invocation, obj: Mapping[str, Any]) -> dict[str, Any]:
    request = dict(prepared.request)
    if invocation.match.kind and invocation.match.resource:
        group, version, kind = invocation.match.kind
        request["kind"] = {"group": group, "version": version, "kind": kind}
    return {
        "object": obj,
        "oldObject": None,
        "request": request,
        "namespaceObject": prepared.namespace_object,
        "params": None,
    }


def _cel_object(
    request: Request, prepared: Prepared, invocation: _Invocation, obj: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    """`object` for the policy's CEL: `obj` as admission receives it, at the version the
    policy matched (and a note where fit cannot convert it)."""
    received = admitted(request, obj, prepared.resource, "mutating")
    kind = invocation.match.kind or prepared.attributes.kind
    return converted(dataclasses.replace(prepared, obj=received), kind)


def _mutate_once(
    state: _State, request: Request, prepared: Prepared, invocation: _Invocation
) -> bool:
    """Run one invocation's mutations on `state.obj`; whether it changed the object."""
    policy = invocation.policy
    what = _what(policy)
    if _spec(policy).get("paramKind") is not None and _spec(invocation.binding).get("paramRef"):
        state.notes.append(f"fit did not apply {what}: it reads parameters (paramRef)")
        return False
    obj, note = _cel_object(request, prepared, invocation, state.obj)
    if note:
        state.notes.append(note)
    activation = Activation(_base(prepared, invocation, obj))
    verdict, detail = match_conditions(_spec(policy), activation)
    if verdict == "skip":
        return False
    if verdict == "unsupported":
        state.notes.append(f"fit did not apply {what}: {detail}")
        return False
    if verdict == "error":
        _policy_error(state, invocation, detail)
        return False
    activation.define(_spec(policy).get("variables") or [])
    changed = False
    for mutation in _spec(policy).get("mutations") or []:
        activation.base["object"] = _cel_object(request, prepared, invocation, state.obj)[0]
        changed = _mutation(state, invocation, activation, mutation) or changed
    return changed


def _mutation(
    state: _State, invocation: _Invocation, activation: Activation, mutation: Any
) -> bool:
    what = _what(invocation.policy)
    if not isinstance(mutation, Mapping) or mutation.get("patchType") != "ApplyConfiguration":
        kind = mutation.get("patchType") if isinstance(mutation, Mapping) else None
        state.notes.append(f"fit did not apply {what}: it is a {kind} mutation")
        return False
    config = mutation.get("applyConfiguration")
    expression = str(config.get("expression", "")) if isinstance(config, Mapping) else ""
    try:
        translated = applyconfig.translate(expression)
    except applyconfig.Unsupported as why:
        state.notes.append(f"fit did not apply {what}: {why}")
        return False
    unknown = activation.unsupported_in(translated)
    result = activation.run(translated)
    if unknown or result.state == "unsupported":
        state.notes.append(f"fit did not apply {what}: {unknown or result.error}")
        return False
    if result.state == "error":
        _policy_error(state, invocation, error_message(expression, result.error))
        return False
    try:
        merged, changes = applyconfig.merge(state.obj, result.value)
    except applyconfig.Unsupported as why_not:
        state.notes.append(f"fit did not apply {what}: {why_not}")
        return False
    state.obj = merged
    for part, key, value in changes:
        noun: Noun = "label" if part == "labels" else "annotation"
        state.changes.append(change(name_of(invocation.policy), noun, key, value))
    return bool(changes)


def change(policy: str, noun: Noun, key: str, value: str) -> str:
    """The words of a `changes` entry for a label or annotation a policy set."""
    return f"MutatingAdmissionPolicy '{policy}' sets {noun} {key}: {value}"


_CHANGE = re.compile(r"MutatingAdmissionPolicy '([^']*)' sets (label|annotation) (\S+): ")


def label_set_by(outcomes: Sequence[Outcome], key: str) -> str | None:
    """The MutatingAdmissionPolicy (by name) that set label `key` in the chain's mutate step,
    as its `changes` say (`change`); the last one where a reinvocation set it again. None
    where no policy set it (the object's own label, or none)."""
    found = None
    for outcome in outcomes:
        if outcome.step is not Step.MUTATE:
            continue
        for text in outcome.changes:
            match = _CHANGE.match(text)
            if match is not None and match.group(2, 3) == ("label", key):
                found = match.group(1)
    return found


def _hook(state: _State, request: Request, hook: Hook) -> bool:
    outcome = hook(dataclasses.replace(request, obj=state.obj))
    state.changes.extend(outcome.changes)
    state.notes.extend(outcome.notes)
    state.refusals.extend(outcome.refusals)
    if outcome.obj is not None and outcome.obj != state.obj:
        state.obj = dict(outcome.obj)
        return True
    return False


def _reinvocable(invocation: _Invocation) -> bool:
    return _spec(invocation.policy).get("reinvocationPolicy") == "IfNeeded"


def mutate_gate(
    request: Request, *, before: Sequence[Hook] = (), after: Sequence[Hook] = ()
) -> Outcome:
    """`Step.MUTATE`'s policies: the rendered MutatingAdmissionPolicies, between the chain's
    `before` (in-tree plugins) and `after` (Kueue's defaulting webhooks) hooks. `changes`
    lists each label or field set, `obj` is the mutated object; a policy that fails under
    failurePolicy Fail refuses with the API server's text."""
    state = _State(obj=dict(request.obj))
    for hook in before:
        _hook(state, request, hook)
    prepared = prepare(dataclasses.replace(request, obj=state.obj), "mutating")
    found: list[_Invocation] = []
    if isinstance(prepared, str):
        if request.cluster.of_kind("MutatingAdmissionPolicy", GROUP):
            state.notes.append(prepared)
    else:
        state.notes.extend(prepared.notes)
        found = invocations(request, prepared, state)
    last_change = -1
    invoked_at: dict[int, int] = {}
    step = 0
    for number, invocation in enumerate(found):
        step += 1
        invoked_at[number] = step
        if not isinstance(prepared, str) and _mutate_once(state, request, prepared, invocation):
            last_change = step
    for hook in after:
        step += 1
        if _hook(state, request, hook):
            last_change = step
    _reinvoke(state, request, found, invoked_at, last_change)
    return _outcome(request, state)


def _reinvoke(
    state: _State,
    request: Request,
    found: Sequence[_Invocation],
    invoked_at: Mapping[int, int],
    last_change: int,
) -> None:
    """`reinvocationPolicy: IfNeeded`: run once more each such policy the object changed
    after (by a later policy or a webhook)."""
    again = [
        invocation
        for number, invocation in enumerate(found)
        if _reinvocable(invocation) and last_change > invoked_at.get(number, 0)
    ]
    if not again:
        return
    prepared = prepare(dataclasses.replace(request, obj=state.obj), "mutating")
    if isinstance(prepared, str):
        return
    for invocation in again:
        _mutate_once(state, request, prepared, invocation)


def _outcome(request: Request, state: _State) -> Outcome:
    refusals = list(state.refusals)
    if state.errors:
        source, message = state.errors[0]
        refusals.append(
            Refusal(
                source=source,
                message=message,
                fix="the policy fails on this object and its failurePolicy refuses it: give the "
                "object the fields the policy reads, or ask the platform team",
            )
        )
    notes = tuple(dict.fromkeys(state.notes))
    changes = tuple(dict.fromkeys(state.changes))
    changed = state.obj != dict(request.obj)
    if refusals:
        return Outcome(
            Step.MUTATE, "refused", tuple(refusals), changes, state.obj if changed else None, notes
        )
    if changed:
        return Outcome(Step.MUTATE, "mutated", changes=changes, obj=state.obj, notes=notes)
    return Outcome(Step.MUTATE, "passed", notes=notes)
