"""Evaluate a rendered admission policy's CEL as the API server would, with cel-python.

The API server's order (KEP-3488): every matchCondition must be true, or the policy is
skipped; variables are evaluated in order and read as `variables.<name>`; each validation that
is not true (false, or an error: the policies fail closed) denies with its message (its
`messageExpression`'s value where it has one).
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


def _message(validation: Mapping[str, Any], activation: Mapping[str, Any]) -> str:
    """A denial as the API server words it: a validation's `messageExpression`, evaluated with
    the same variables as the validation (Kubernetes' `Validation.messageExpression`); where it
    fails, or gives a blank string or one with a line break, the API server falls back to
    `message`, and so does this."""
    fallback = str(validation.get("message", validation["expression"]))
    if "messageExpression" not in validation:
        return fallback
    value = _value(compile_expression(validation["messageExpression"]), activation)
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        return fallback
    return str(value)


def evaluate(
    policy: Mapping[str, Any],
    obj: Mapping[str, Any] | None,
    *,
    old: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
    username: str = "oidc:alice@example.com",
    namespace: Mapping[str, Any] | None = None,
) -> list[str]:
    """The messages of the validations that deny this request (empty: admitted), in the
    policy's order. `request.namespace` is the namespace's name, as the API server passes it."""
    spec = policy["spec"]
    request: dict[str, Any] = {
        "operation": operation,
        "userInfo": {"username": username, "groups": []},
    }
    if namespace is not None:
        request["namespace"] = namespace["metadata"]["name"]
    activation: dict[str, Any] = {
        "object": json_to_cel(_plain(obj)),
        "oldObject": json_to_cel(_plain(old)),
        "request": json_to_cel(request),
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
            denied.append(_message(validation, activation))
    return denied


SUSPEND_FIELD: dict[tuple[str, str], tuple[str, ...]] = {
    ("batch/v1", "Job"): ("spec", "suspend"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): ("spec", "suspend"),
    ("ray.io/v1", "RayJob"): ("spec", "suspend"),
    ("ray.io/v1", "RayCluster"): ("spec", "suspend"),
    ("ray.io/v1", "RayService"): ("spec", "rayClusterConfig", "suspend"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): ("spec", "suspend"),
    ("workload.codeflare.dev/v1beta2", "AppWrapper"): ("spec", "suspend"),
    ("kubeflow.org/v2beta1", "MPIJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "PyTorchJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "TFJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "XGBoostJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "PaddleJob"): ("spec", "runPolicy", "suspend"),
    ("kubeflow.org/v1", "JAXJob"): ("spec", "runPolicy", "suspend"),
}
"""The job kinds a gpuplane cluster's Kueue v0.19.2 suspends, at the GroupVersionKind of each
integration (`gvk` in pkg/controller/jobs/*/*_controller.go) and the field its `Suspend()` sets
(`Job.Suspend`: spec.suspend; `KubeflowJob.Suspend` and `MPIJob.Suspend`:
spec.runPolicy.suspend; `RayService.Suspend`: spec.rayClusterConfig.suspend, Go's
`Spec.RayClusterSpec`). Spark is off on gpuplane clusters."""

GATED_PARENTS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("apps/v1", "Deployment"): (("spec", "template"),),
    ("apps/v1", "StatefulSet"): (("spec", "template"),),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
}
"""The serving kinds whose webhooks (deployment_webhook.go, statefulset_webhook.go,
leaderworkerset_webhook.go Default) annotate their pod templates
`kueue.x-k8s.io/pod-suspending-parent`, so the pod webhook gates every pod made from them; the
Deployment's and the LWS's copy the queue and priority labels onto the templates too."""

SUSPENDING_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"

KUBEFLOW_JOBS = {"JAXJob", "MPIJob", "PaddleJob", "PyTorchJob", "TFJob", "XGBoostJob"}
"""Kueue v0.19's Kubeflow integrations (pkg/controller/jobs/kubeflow/jobs/*, and mpijob): their
webhook suspends them by `spec.runPolicy.suspend` (kubeflow/common's RunPolicy)."""


def _managed_owner(ref: Mapping[str, Any]) -> bool:
    """The ownerReference is a kind Kueue manages, at its exact apiVersion
    (`ownerReferenceMatchingGVK`), the pod integration's and the serving kinds' included."""
    key = (ref.get("apiVersion"), ref.get("kind"))
    return key in SUSPEND_FIELD or key in GATED_PARENTS or key == ("v1", "Pod")


def kueue_webhook(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What Kueue's mutating webhooks make of an object created in a managed namespace with a
    `default` LocalQueue: the queue-name label defaulted, a pod gated (one from a template a
    serving kind's webhook annotated always; another unless its controller ownerReference is a
    kind Kueue manages: `FindAncestorJobManagedByKueue`), a job suspended (unless owned
    likewise), a serving kind's pod templates annotated."""
    result = copy.deepcopy(dict(obj))
    meta = result.setdefault("metadata", {})
    key = (result.get("apiVersion"), result.get("kind"))
    if key == ("v1", "Pod") and SUSPENDING_PARENT in meta.get("annotations", {}):
        _gate(result)
        return result
    owners = [r for r in meta.get("ownerReferences", []) if r.get("controller")]
    if any(_managed_owner(r) for r in owners):
        return result
    labels = meta.setdefault("labels", {})
    labels.setdefault(QUEUE_LABEL, "default")
    if key == ("v1", "Pod"):
        labels["kueue.x-k8s.io/managed"] = "true"
        _gate(result)
    elif key in SUSPEND_FIELD:
        *path, last = SUSPEND_FIELD[key]
        parent: dict[str, Any] = result
        for field in path:
            parent = parent.setdefault(field, {})
        parent[last] = True
    elif key in GATED_PARENTS:
        for template_path in GATED_PARENTS[key]:
            template: Any = result
            for field in template_path:
                template = template.get(field) if isinstance(template, dict) else None
            if not isinstance(template, dict):
                continue
            template_meta = template.setdefault("metadata", {})
            template_meta.setdefault("annotations", {})[SUSPENDING_PARENT] = key[1].lower()
            if key[1] != "StatefulSet":  # its pod reconciler labels each pod instead
                for label in (QUEUE_LABEL, PRIORITY_LABEL):
                    if label in labels:
                        template_meta.setdefault("labels", {})[label] = labels[label]
    return result


def _gate(pod: dict[str, Any]) -> None:
    gates = pod.setdefault("spec", {}).setdefault("schedulingGates", [])
    if not any(g["name"] == ADMISSION_GATE for g in gates):
        gates.append({"name": ADMISSION_GATE})
