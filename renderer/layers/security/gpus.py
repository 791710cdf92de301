"""GPUs only in pods the cluster's queue admits: Kueue's, or Volcano's.

A pod "uses a GPU" when any of its containers requests or limits an extended resource of the
cluster's pools (`nvidia.com/gpu`, `nvidia.com/mig-*`, the shared replica names; every
`nvidia.com/` name, to be safe) or when the pod has DRA `resourceClaims` (on this platform the
only DRA devices are GPUs). The namespace ResourceQuota caps what a team can hold; this policy
makes the queue, with its fair sharing, borrowing and preemption, the only way in.

Kueue (v0.19), what an admitted pod really carries and what a team could fake:

- Kueue's pod webhook (mutating, `mpod.kb.io`) gates every pod it manages with the scheduling
  gate `kueue.x-k8s.io/admission`; the scheduler ignores a gated pod, and Kueue's controller
  removes the gate once the pod's Workload is admitted. In team namespaces it manages every pod:
  the manager config's `managedJobsNamespaceSelector` selects them, and LocalQueue defaulting
  gives a pod without `kueue.x-k8s.io/queue-name` the namespace's `default` LocalQueue.
- It skips a pod whose controller ownerReference is a job kind it integrates, with that
  integration enabled (a Job, a RayCluster, a PyTorchJob, ...): the parent is what it
  suspends. ownerReferences are written by the client, so a pod created with a made-up
  `ownerReferences: [{kind: Job, controller: true}]` is not gated, and the queue-name label
  proves nothing either (anyone sets it). Neither is trusted from a team.
- A job of a kind Kueue suspends (`admission.suspendable_kinds`: Job, JobSet, RayJob,
  RayCluster, RayService, TrainJob, AppWrapper, the Kubeflow jobs) is created suspended by
  Kueue's job webhook (`jobframework.ApplyDefaultForSuspend`: `spec.suspend`, a Kubeflow
  job's `spec.runPolicy.suspend`, a RayService's `spec.rayClusterConfig.suspend`), and
  Kueue's controller lets it go on admission. Kueue's own reconciler suspends again a job that
  runs unadmitted, but only after its pods have started.
- Its pod webhook (v0.19.2 `pkg/controller/jobs/pod/pod_webhook.go`, Default) also leaves
  ungated a pod whose ancestor job Kueue already manages (`FindAncestorJobManagedByKueue`,
  matching each ownerReference by its exact apiVersion and kind): the pods the KubeRay
  operator creates for a RayCluster (a RayJob's or a RayService's included), those the
  training operator creates for a v1 PyTorchJob, TFJob, XGBoostJob, PaddleJob or JAXJob, the
  MPI Operator's workers of a v2beta1 MPIJob, the pods an AppWrapper wraps, the Job
  controller's for a Job (a JobSet's, a TrainJob's, a RayJob's submitter, an MPIJob's
  launcher). The parent was suspended until Kueue admitted it; its pods are not.
- Deployments, StatefulSets and LeaderWorkerSets are not suspended: their webhooks annotate
  the pod templates `kueue.x-k8s.io/pod-suspending-parent`, and the pod webhook gates every
  pod so annotated (an LWS's as a group), whoever creates it.

The sound check, then, looks at who acts, which a client cannot fake (`request.userInfo`):

1. A GPU pod is created gated by `kueue.x-k8s.io/admission` (a pod someone gates by hand is
   harmless: it cannot be scheduled until the gate goes), or by a workload controller
   (`admission.workload_controller`: Kubernetes' controller manager, in either credential mode,
   or a service account outside the team namespaces and Argo CD's) for a parent Kueue admits
   by suspending it: the pod's controller ownerReference is one of `admission.pod_owner_kinds`
   (the kinds above whose integration the cluster's Kueue enables,
   `renderer.model.integrations.enabled_frameworks`, at the API version Kueue's is for).
   gpuplane does not know where KubeRay or the training operator run (they are no add-ons),
   so it trusts the controller, not a namespace; the ownerReference is only believed from a
   controller, which sets it to the parent it acts for.
2. Only a platform service account (outside every team namespace and not Argo CD's, which
   syncs the teams' own Applications: Kueue's controller) may remove that gate from a GPU pod.
3. Every kind Kueue suspends (`admission.suspendable_kinds`, every pod owner among them) must
   be created suspended when a team creates it (as Kueue's webhook leaves it), and only a
   platform service account (Kueue's controller, or the JobSet, KubeRay, MPI or trainer
   controller for the jobs it owns) may unsuspend it. Otherwise a Job or PyTorchJob created
   unsuspended with a made-up owner (Kueue's webhooks skip a job whose owner they think is
   managed) would have its controller start GPU pods that check 1 lets through. A kind whose
   integration is off is not held to it: Kueue never suspends it, and its pods are gated one
   by one.

Who else creates pods from what a team wrote, and why none of it opens check 1:

- Argo Workflows' controller creates a Workflow's pods in the Workflow's namespace, from the
  Workflow's templates. Team roles grant no `argoproj.io` kind, but a team's Application can
  sync a Workflow (its AppProject blacklists only the guardrails and Argo CD's kinds). Its pods
  are owned by the Workflow, which Kueue does not manage, so Kueue's pod webhook gates them
  like any pod; and Argo Workflows' service accounts are excluded from the exemption
  (`admission.workload_controller`), so no template (`podSpecPatch`, pod metadata) can make
  one that passes ungated.
- CronJob to Job: the CronJob controller creates Jobs, which Kueue's job webhook suspends
  (a CronJob is no parent Kueue manages); the Job controller starts their pods once admitted.
- MXJobs, training-operator v1 MPIJobs, and any kind whose integration a cluster turns off:
  their owners are no Kueue-managed job; their pods are gated like a lone pod's.

Limits: an AppWrapper that wraps a Deployment: the ReplicaSet's pods are left ungated by
Kueue (their ancestor AppWrapper is managed) but their controller is a ReplicaSet, which this
policy cannot trace to the AppWrapper, so they are refused; wrap the pods, a Job or a Kubeflow
job instead. A SparkApplication's executors are created by its driver, as a team service
account, and refused likewise (Spark is off by default). A kind a parent creates its pods
through (a JobSet's Jobs, a RayService's RayCluster) must have its own integration enabled,
as it is by default.

Volcano: a GPU pod must be scheduled by Volcano (`schedulerName: volcano`: the default
scheduler knows nothing of Volcano's queues), and every queue a team object names must be its
namespace's own (`<team>-<purpose>`, written into the policy from the rendered names, the one
the tenancy layer also writes on the namespace): a pod's `scheduling.volcano.sh/queue-name`
annotation, a Volcano Job's `spec.queue` and a PodGroup's `spec.queue`. Volcano schedules pods
only as members of a PodGroup and takes the queue from the group, so the PodGroup check is the
floor: it holds whoever creates the group (Volcano's job and pod-group controllers, or an
operator such as KubeRay or the training operator, which copy a queue the team chose onto the
group). Volcano's pod-group controller creates a group for a lone pod with the pod's queue
annotation or none; the PodGroup CRD then defaults `spec.queue` to `default`, before Volcano's
webhook could default it from the namespace, so such a group is refused unless the pod names
its namespace's queue. Nobody is exempt from the pod check either: Volcano's job controller
gives a Job's pods the Job's group (whose queue was checked), and a queue annotation in a
Deployment's template reaches its pods through the ReplicaSet controller, a platform account.
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
