"""GPUs only in pods the cluster's queue admits: Kueue's, or Volcano's.

Design: docs/security.md#gpus-only-through-the-queue-who-may-start-a-gpu-pod
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from renderer.layers.security.policy_parts import (
    POD,
    VOLCANO_JOB,
    WorkloadKind,
    all_containers,
    any_kind,
    cel_list,
    cel_string,
    controlled_by,
    every_pod_spec,
    kueue_kinds,
    platform_account_variable,
    pod_owner_kinds,
    pod_specs_variable,
    policy_pair,
    resource_rules,
    suspendable_kinds,
    suspended,
    team_namespaces,
    validating_policy,
    workload_controller,
)
from renderer.model.capacity import pool_offers
from renderer.model.queue_plans import cluster_queue_name
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest

ADMISSION_GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue's pod webhook adds to the pods it manages."""

GPU_PREFIXES = ("nvidia.com/",)
VOLCANO_SCHEDULER = "volcano"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"

QUEUE_POLICY = "gpuplane-gpu-queue"
SUSPEND_POLICY = "gpuplane-queue-suspend"

PODGROUP = WorkloadKind("scheduling.volcano.sh", "podgroups", "PodGroup", "[]")
"""Volcano's gang: the queue Volcano schedules a pod in is its PodGroup's `spec.queue`."""


def gpu_resources(view: ClusterView) -> list[str]:
    """The extended resources the cluster's pools advertise (DRA pools: claims, not names)."""
    return sorted(
        {
            offer.resource
            for pool in view.pools
            for offer in pool_offers(pool)
            if offer.device_class is None
        }
    )


def gpu_variable(view: ClusterView) -> dict[str, str]:
    """The `gpu` variable: some pod spec of the object asks for a GPU."""
    key = " || ".join(
        [f"k.startsWith({cel_string(p)})" for p in GPU_PREFIXES]
        + [f"k in {cel_list(gpu_resources(view))}"]
    )
    asks = (
        "has(c.resources) && ("
        f"(has(c.resources.limits) && c.resources.limits.exists(k, {key})) || "
        f"(has(c.resources.requests) && c.resources.requests.exists(k, {key})))"
    )
    containers = all_containers("s", f"!({asks})")
    claims = "(has(s.resourceClaims) && size(s.resourceClaims) > 0)"
    return {
        "name": "gpu",
        "expression": f"!{every_pod_spec(f'{containers} && !{claims}')}",
    }


def _gated(obj: str) -> str:
    return (
        f"(has({obj}.spec.schedulingGates) && "
        f"{obj}.spec.schedulingGates.exists(g, g.name == '{ADMISSION_GATE}'))"
    )


def render(view: ClusterView) -> Iterator[Manifest]:
    namespaces = team_namespaces(view)
    if view.cluster.scheduler == "volcano":
        yield from _volcano(view, namespaces)
    else:
        yield from _kueue(view, namespaces)


def _names(kinds: Iterable[WorkloadKind]) -> str:
    """`Job, JobSet or RayJob`: the kinds' names for a message."""
    names = [k.kind for k in kinds]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _kueue(view: ClusterView, namespaces: list[str]) -> Iterator[Manifest]:
    source = view.cluster.origin.location
    owners = pod_owner_kinds(view.cluster)
    jobs = suspendable_kinds(view.cluster)
    gated = [k for k in kueue_kinds(view.cluster) if k.suspend is None and k is not POD]
    submit = ""
    if jobs:
        submit = f", or submit a {_names(jobs)} and let its controller create the pods once "
        submit += "Kueue admits it"
    through = f" (the pods of a {_names(gated)} are gated by Kueue too)" if gated else ""
    pods = validating_policy(
        QUEUE_POLICY,
        resource_rules([POD]),
        [
            {
                "expression": "request.operation != 'CREATE' || !variables.gpu || "
                f"{_gated('object')} || ({workload_controller(view)} && "
                f"{controlled_by(owners)})",
                "message": "a pod that uses GPUs must be admitted by Kueue: create it without "
                "ownerReferences of your own, so Kueue gates it (label "
                f"kueue.x-k8s.io/queue-name, or none for the namespace's default LocalQueue)"
                f"{submit}{through}",
                "reason": "Forbidden",
            },
            {
                "expression": "request.operation != 'UPDATE' || !variables.gpu || "
                f"!{_gated('oldObject')} || {_gated('object')} || variables.platformAccount",
                "message": f"only Kueue removes the {ADMISSION_GATE} scheduling gate from a pod "
                "that uses GPUs: wait for the pod's Workload to be admitted (kubectl get "
                "workloads)",
                "reason": "Forbidden",
            },
        ],
        variables=[
            pod_specs_variable([POD]),
            gpu_variable(view),
            platform_account_variable(view),
        ],
    )
    yield from policy_pair(pods, namespaces, source)
    if not jobs:
        return
    elsewhere = sorted({k.suspend for k in jobs if k.suspend not in (None, "spec.suspend")})
    fields = "; ".join(
        f"{', '.join(k.kind for k in jobs if k.suspend == path)}: {path}: false"
        for path in elsewhere
        if path is not None
    )
    suspend_policy = validating_policy(
        SUSPEND_POLICY,
        resource_rules(jobs),
        [
            {
                "expression": "variables.platformAccount || request.operation != 'CREATE' || "
                + suspended("object", jobs),
                "message": "Kueue did not take this job in: it must be created suspended, which "
                "Kueue's webhook does for jobs of a namespace with a default LocalQueue. Remove "
                f"spec.suspend: false{f' ({fields})' if fields else ''} and any "
                "ownerReferences you set, and keep kueue.x-k8s.io/queue-name to a LocalQueue of "
                "this namespace",
                "reason": "Forbidden",
            },
            {
                "expression": "variables.platformAccount || request.operation != 'UPDATE' || "
                f"!{suspended('oldObject', jobs)} || {suspended('object', jobs)}",
                "message": "only Kueue unsuspends a job: leave spec.suspend (or the field its "
                "kind keeps the flag in) as it is and wait for the job's Workload to be "
                "admitted (kubectl get workloads)",
                "reason": "Forbidden",
            },
        ],
        variables=[platform_account_variable(view)],
        match_conditions=[{"name": "a-kind-kueue-suspends", "expression": any_kind(jobs)}],
    )
    yield from policy_pair(suspend_policy, namespaces, source)


def namespace_queues(view: ClusterView) -> dict[str, str]:
    """Each team namespace's Volcano queue (`<team>-<purpose>`, the queueing layer's child queue
    and the tenancy layer's namespace annotation), by namespace name."""
    return {
        ns.name: cluster_queue_name(tenant.team.name, ns.purpose)
        for tenant in view.tenants
        for ns in tenant.namespaces
    }


def _queue_variable(view: ClusterView) -> dict[str, str]:
    """`queue`: the request's namespace's own Volcano queue, from the rendered names, not from
    the namespace's annotation (a relabelled namespace keeps its queue)."""
    entries = ", ".join(
        f"{cel_string(ns)}: {cel_string(queue)}"
        for ns, queue in sorted(namespace_queues(view).items())
    )
    return {"name": "queue", "expression": f"{{{entries}}}[namespaceObject.metadata.name]"}


def _volcano(view: ClusterView, namespaces: list[str]) -> Iterator[Manifest]:
    queue = "variables.queue"
    pod_queue = f"object.metadata.annotations['{VOLCANO_QUEUE_ANNOTATION}']"
    is_pod = POD.condition
    policy = validating_policy(
        QUEUE_POLICY,
        resource_rules([POD, VOLCANO_JOB, PODGROUP]),
        [
            {
                "expression": f"!({is_pod}) || !variables.gpu || "
                f"(has(object.spec.schedulerName) && object.spec.schedulerName == "
                f"'{VOLCANO_SCHEDULER}')",
                "message": "a pod that uses GPUs must be scheduled by Volcano, which holds the "
                f"team's queue: set spec.schedulerName: {VOLCANO_SCHEDULER}",
                "reason": "Forbidden",
            },
            {
                "expression": f"!({is_pod}) || "
                f"!(has(object.metadata.annotations) && '{VOLCANO_QUEUE_ANNOTATION}' in "
                f"object.metadata.annotations) || {pod_queue} == {queue}",
                "messageExpression": "'a pod may only name its namespace queue: set "
                f"the {VOLCANO_QUEUE_ANNOTATION} annotation to ' + {queue} + ' (or leave it "
                "out)'",
                "message": "a pod may only name its namespace's Volcano queue: set the "
                f"{VOLCANO_QUEUE_ANNOTATION} annotation to the namespace's (or leave it out)",
                "reason": "Forbidden",
            },
            {
                "expression": f"!({VOLCANO_JOB.condition}) || "
                f"(has(object.spec.queue) && object.spec.queue == {queue})",
                "messageExpression": "'a Volcano Job must run in the queue of its namespace: set "
                f"spec.queue: ' + {queue}",
                "message": "a Volcano Job must run in the queue of its namespace: set "
                f"spec.queue to the namespace's {VOLCANO_QUEUE_ANNOTATION} annotation",
                "reason": "Forbidden",
            },
            {
                "expression": f"!({PODGROUP.condition}) || "
                f"(has(object.spec.queue) && object.spec.queue == {queue})",
                "messageExpression": "'a PodGroup in a team namespace must use the namespace queue "
                f"' + {queue} + ': set it as spec.queue of the Volcano Job, or as the "
                f"{VOLCANO_QUEUE_ANNOTATION} annotation of the pods (or queue option of the "
                "operator job) that make the group'",
                "message": "a PodGroup in a team namespace must use the namespace's Volcano "
                "queue: set spec.queue of the Volcano Job, or the "
                f"{VOLCANO_QUEUE_ANNOTATION} annotation of the pods, to the namespace's",
                "reason": "Forbidden",
            },
        ],
        variables=[
            pod_specs_variable([POD]),
            gpu_variable(view),
            _queue_variable(view),
        ],
    )
    yield from policy_pair(policy, namespaces, view.cluster.origin.location)
