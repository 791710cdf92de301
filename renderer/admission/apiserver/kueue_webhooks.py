"""Kueue v0.19.2's webhooks: the defaulting (mutating) ones, as the mutating step runs them after
the MutatingAdmissionPolicies (`MutatingAdmissionWebhook` comes after `MutatingAdmissionPolicy`
in kube-apiserver's plugin order), and the validating ones (`validate`), after the
ValidatingAdmissionPolicies.

What they do to an object created in a namespace Kueue manages (`jobframework/defaults.go`,
`pkg/controller/jobs/*/*_webhook.go` `Default`):
- `ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector`: no `kueue.x-k8s.io/queue-name`
  label, a LocalQueue named `default` in the namespace, the namespace matching the
  Configuration's `managedJobsNamespaceSelector`, and no owner Kueue manages: the label is set
  to `default`;
- `ApplyDefaultForSuspend` (`WorkloadShouldBeSuspended`): a job of an enabled integration with a
  queue name (or `manageJobsWithoutQueueName` in a managed namespace), not owned by a job Kueue
  manages, is suspended through the integration's own field (`Job.Suspend`: `spec.suspend`;
  the Kubeflow jobs' `spec.runPolicy.suspend`; RayService `spec.rayClusterConfig.suspend`);
- the pod integration gates a managed pod (`kueue.x-k8s.io/admission` scheduling gate,
  `kueue.x-k8s.io/managed: "true"`), and the Deployment, StatefulSet and LeaderWorkerSet
  webhooks mark their pod templates `kueue.x-k8s.io/pod-suspending-parent` (copying the queue
  and priority labels onto them, except the StatefulSet's, whose reconciler labels the pods).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from renderer.admission.apiserver.gate import Outcome, Refusal, Request, Step, api_group
from renderer.admission.apiserver.matching import parse_selector
from renderer.model.integrations import KUEUE_INTEGRATIONS
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL

MANAGED_LABEL = "kueue.x-k8s.io/managed"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
SUSPENDING_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
DEFAULT_LOCAL_QUEUE = "default"

SUSPEND_FIELD: Mapping[str, tuple[str, ...]] = {
    "Job": ("spec", "suspend"),
    "JobSet": ("spec", "suspend"),
    "RayJob": ("spec", "suspend"),
    "RayCluster": ("spec", "suspend"),
    "RayService": ("spec", "rayClusterConfig", "suspend"),
    "TrainJob": ("spec", "suspend"),
    "AppWrapper": ("spec", "suspend"),
    "MPIJob": ("spec", "runPolicy", "suspend"),
    "PyTorchJob": ("spec", "runPolicy", "suspend"),
    "TFJob": ("spec", "runPolicy", "suspend"),
    "XGBoostJob": ("spec", "runPolicy", "suspend"),
    "PaddleJob": ("spec", "runPolicy", "suspend"),
    "JAXJob": ("spec", "runPolicy", "suspend"),
    "SparkApplication": ("spec", "suspend"),
}
"""The field each integration's `Suspend()` sets, by kind (the kind's group is checked against
the enabled integration)."""

GATED_PARENTS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "Deployment": (("spec", "template"),),
    "StatefulSet": (("spec", "template"),),
    "LeaderWorkerSet": (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
}


def _integration(obj: Mapping[str, Any], frameworks: set[str]) -> str | None:
    group, version = api_group(str(obj.get("apiVersion", ""))), str(obj.get("apiVersion", ""))
    version = version.rpartition("/")[2]
    for known in KUEUE_INTEGRATIONS:
        if (known.group, known.kind) != (group, obj.get("kind")):
            continue
        if known.versions and version not in known.versions:
            continue
        return known.framework if known.framework in frameworks else None
    return None


def _owned_by_a_managed_kind(obj: Mapping[str, Any]) -> bool:
    """`IsOwnerManagedByKueueForObject`: a controller ownerReference of a kind Kueue manages."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    for ref in refs if isinstance(refs, list) else ():
        if not isinstance(ref, Mapping) or not ref.get("controller"):
            continue
        kind = ref.get("kind")
        if kind in SUSPEND_FIELD or kind in GATED_PARENTS or kind == "Pod":
            return True
    return False


def hook(request: Request) -> Outcome:
    """Kueue's defaulting webhooks on `request.obj`."""
    config = request.cluster.kueue_configuration
    frameworks = set(((config.get("integrations") or {}).get("frameworks")) or ())
    framework = _integration(request.obj, frameworks)
    if framework is None:
        return Outcome(Step.MUTATE, "passed")
    obj: dict[str, Any] = copy.deepcopy(dict(request.obj))
    labels = _child(_child(obj, "metadata"), "labels")
    if labels is None:
        # metadata or its labels are no mapping: decoding refused the object, no webhook sees it
        return Outcome(Step.MUTATE, "passed")
    changes: list[str] = []
    namespace = request.namespace_object or {}
    ns_labels = (namespace.get("metadata") or {}).get("labels") or {}
    selector = parse_selector(config.get("managedJobsNamespaceSelector"))
    managed_namespace = not isinstance(selector, str) and selector.matches(ns_labels)
    has_default = (
        request.cluster.named("LocalQueue", DEFAULT_LOCAL_QUEUE, request.namespace) is not None
    )
    owned = _owned_by_a_managed_kind(obj)
    if QUEUE_LABEL not in labels and has_default and managed_namespace and not owned:
        labels[QUEUE_LABEL] = DEFAULT_LOCAL_QUEUE
        changes.append(f"Kueue's webhook sets label {QUEUE_LABEL}: {DEFAULT_LOCAL_QUEUE}")
    queued = QUEUE_LABEL in labels or (
        bool(config.get("manageJobsWithoutQueueName")) and managed_namespace
    )
    if queued and not owned:
        changes.extend(_suspend_or_gate(obj, labels))
    if not changes:
        return Outcome(Step.MUTATE, "passed")
    return Outcome(Step.MUTATE, "mutated", changes=tuple(changes), obj=obj)


def _child(parent: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """`parent[key]`, a mapping, made where absent or null (as Go decodes a nil map or struct
    pointer); None where `parent` is None or the field is of another type (decoding refused
    such an object, so the webhook leaves it alone)."""
    if parent is None:
        return None
    if parent.get(key) is None:
        parent[key] = {}
    child = parent[key]
    return child if isinstance(child, dict) else None


def _suspend_or_gate(obj: dict[str, Any], labels: dict[str, Any]) -> list[str]:
    kind = str(obj.get("kind"))
    if kind == "Pod":
        spec = _child(obj, "spec")
        if spec is not None and spec.get("schedulingGates") is None:
            spec["schedulingGates"] = []
        gates = spec.get("schedulingGates") if spec is not None else None
        if not isinstance(gates, list):
            return []
        labels[MANAGED_LABEL] = "true"
        if not any(isinstance(g, Mapping) and g.get("name") == ADMISSION_GATE for g in gates):
            gates.append({"name": ADMISSION_GATE})
        return [f"Kueue's webhook gates the pod ({ADMISSION_GATE})"]
    if kind in SUSPEND_FIELD:
        *path, last = SUSPEND_FIELD[kind]
        parent: dict[str, Any] | None = obj
        for key in path:
            parent = _child(parent, key)
        if parent is None or parent.get(last) is True:
            return []
        parent[last] = True
        return [f"Kueue's webhook suspends it ({'.'.join(SUSPEND_FIELD[kind])}: true)"]
    changes = []
    for template_path in GATED_PARENTS.get(kind, ()):
        template: Any = obj
        for key in template_path:
            template = template.get(key) if isinstance(template, dict) else None
        meta = _child(template, "metadata") if isinstance(template, dict) else None
        annotations = _child(meta, "annotations")
        if meta is None or annotations is None:
            continue
        annotations[SUSPENDING_PARENT] = kind.lower()
        copied = {k: labels[k] for k in (QUEUE_LABEL, PRIORITY_LABEL) if k in labels}
        pod_labels = _child(meta, "labels") if copied and kind != "StatefulSet" else None
        if pod_labels is not None:
            pod_labels.update(copied)
        changes.append(f"Kueue's webhook marks {'.'.join(template_path)} {SUSPENDING_PARENT}")
    return changes


def validate(request: Request) -> Outcome:
    """Kueue's validating webhooks (and AppWrapper's, which Kueue's integration relies on) on
    the object as mutating admission left it, which every validating step sees: the create
    refusals the workload readers find (`pkg/controller/jobs/<kind>/*_webhook.go`
    `ValidateCreate`, AppWrapper's `validateAppWrapperCreate`), in the API server's words
    (`admission webhook "<name>" denied the request: ...`). Where the object as the earlier
    steps changed it passes, that is the object handed on."""
    from renderer.admission.workloads import readers
    from renderer.admission.workloads.appwrapper import REFUSED_BY as APPWRAPPER
    from renderer.admission.workloads.podsets import Unreadable

    seen = request.admitted if request.admitted is not None else request.obj
    parsed = readers.workload_from(dict(seen))
    if isinstance(parsed, Unreadable) or parsed.refused is None:
        return Outcome(Step.KUEUE_WEBHOOK, "passed")
    if parsed.refused_by not in (None, APPWRAPPER):
        return Outcome(Step.KUEUE_WEBHOOK, "passed")  # not a webhook: the Kueue step says it
    source = "Kueue's validating webhook" if parsed.refused_by is None else parsed.refused_by
    now = readers.workload_from(dict(request.obj))
    fixed = not isinstance(now, Unreadable) and now.refused is None
    fix = (
        "what the earlier steps' fixes change already satisfies it"
        if fixed
        else "change the object as the webhook's message says"
    )
    refusal = Refusal(source, parsed.refused, fix)
    return Outcome(Step.KUEUE_WEBHOOK, "refused", (refusal,))
