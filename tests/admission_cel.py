"""Evaluate a rendered admission policy's CEL as the API server would, with cel-python.

The API server's order (KEP-3488): every matchCondition must be true, or the policy is
skipped; variables are evaluated in order and read as `variables.<name>`; each validation that
is not true (false, or an error: the policies fail closed) denies with its message.
`object`, `oldObject`, `request` and `namespaceObject` are what the API server passes.
Kueue's mutating webhook runs before any validating admission, so `kueue_webhook` applies what
Kueue v0.19's pod and job webhooks do to an object of a Kueue-managed namespace.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

ADMISSION_GATE = "kueue.x-k8s.io/admission"
"""Kueue's scheduling gate (pkg/controller/jobs/pod: `gate(&pod)` in the webhook's Default)."""

_ENV = celpy.Environment()


def compile_expression(expression: str) -> Any:
    return _ENV.program(_ENV.compile(expression))


def _value(program: Any, activation: Mapping[str, Any]) -> Any:
    try:
        return program.evaluate(dict(activation))
    except CELEvalError as err:
        return err


def _plain(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else dict(value)


def evaluate(
    policy: Mapping[str, Any],
    obj: Mapping[str, Any] | None,
    *,
    old: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
    username: str = "oidc:alice@example.com",
    namespace: Mapping[str, Any] | None = None,
) -> list[str]:
    """The messages of the validations that deny this request (empty: admitted)."""
    spec = policy["spec"]
    activation: dict[str, Any] = {
        "object": json_to_cel(_plain(obj)),
        "oldObject": json_to_cel(_plain(old)),
        "request": json_to_cel(
            {"operation": operation, "userInfo": {"username": username, "groups": []}}
        ),
        "namespaceObject": json_to_cel(_plain(namespace)),
    }
    for condition in spec.get("matchConditions", []):
        result = _value(compile_expression(condition["expression"]), activation)
        if isinstance(result, CELEvalError):  # failurePolicy: Fail
            return [f"matchCondition {condition['name']} failed: {result}"]
        if not bool(result):
            return []
    variables: dict[celtypes.StringType, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = celtypes.MapType(variables)
        value = _value(compile_expression(variable["expression"]), activation)
        variables[celtypes.StringType(variable["name"])] = value
    activation["variables"] = celtypes.MapType(variables)
    denied = []
    for validation in spec["validations"]:
        result = _value(compile_expression(validation["expression"]), activation)
        if isinstance(result, CELEvalError) or not bool(result):
            denied.append(str(validation.get("message", validation["expression"])))
    return denied


def kueue_webhook(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What Kueue's mutating webhooks make of an object created in a managed namespace with a
    `default` LocalQueue: the queue-name label defaulted, a pod gated (unless its controller
    ownerReference is a kind Kueue integrates), a job suspended (unless owned likewise)."""
    result = copy.deepcopy(dict(obj))
    meta = result.setdefault("metadata", {})
    owners = [r for r in meta.get("ownerReferences", []) if r.get("controller")]
    integrated = {"Job", "JobSet", "RayCluster", "RayJob", "TrainJob", "Deployment", "StatefulSet"}
    if any(r["kind"] in integrated | KUBEFLOW_JOBS for r in owners):
        return result
    meta.setdefault("labels", {}).setdefault("kueue.x-k8s.io/queue-name", "default")
    if result["kind"] == "Pod":
        meta["labels"]["kueue.x-k8s.io/managed"] = "true"
        gates = result["spec"].setdefault("schedulingGates", [])
        if not any(g["name"] == ADMISSION_GATE for g in gates):
            gates.append({"name": ADMISSION_GATE})
    elif result["kind"] in {"Job", "JobSet", "RayCluster", "RayJob", "TrainJob"}:
        result["spec"]["suspend"] = True
    elif result["kind"] in KUBEFLOW_JOBS and result["apiVersion"].startswith("kubeflow.org/"):
        result["spec"].setdefault("runPolicy", {})["suspend"] = True
    return result


KUBEFLOW_JOBS = {"JAXJob", "MPIJob", "PaddleJob", "PyTorchJob", "TFJob", "XGBoostJob"}
"""Kueue v0.19's Kubeflow integrations (pkg/controller/jobs/kubeflow/jobs/*, and mpijob): their
webhook suspends them by `spec.runPolicy.suspend` (kubeflow/common's RunPolicy)."""
