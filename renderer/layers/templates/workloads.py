"""Team workload templates: starting points a team copies, so no one writes a pod spec from scratch.

The guide's step 5 asks for "a clean Job template with labels, resource requests, storage mounts
and log export". For every team namespace, and every pool the namespace may use
(`renderer.model.capacity.usable_quotas`) where its ClusterQueue can be admitted at all, this writes
non-applied files `rendered/<cluster>/templates/<namespace>/<kind>-<pool>.yaml`:

- training, batch and notebooks namespaces: a `batch/v1` Job (one pod, one GPU unit);
- training and batch namespaces: a JobSet (leader and workers, admitted by Kueue as one gang) on
  pools that hand out whole GPUs, and a RayJob (a head without GPUs, a GPU worker group);
- inference namespaces: a vLLM-style `apps/v1` Deployment (an OpenAI-compatible server);
- with a shared storage class: `persistentvolumeclaim-shared-data.yaml`, the shared volume the
  templates mount, for the team to create once.

Each carries the team's labels, the Kueue queue and priority labels, requests in the resource
name the pool advertises (a MIG profile, `nvidia.com/gpu.shared`, a DRA claim; the multi-pod
ones also the pool's RDMA devices, `fabric.rdma`), scratch and shared storage mounts,
restricted Pod Security settings and the log-export contract; sizes are chosen so that
`gpuplane fit` admits every template on an idle cluster. They are `Values`: no kustomization
or Argo CD Application lists them, because applying one would start work. On a Volcano cluster
the Job and the Deployment are rendered for Volcano (no Kueue labels); its gang job is the
`volcano-job-defaults` ConfigMap of `renderer.layers.queueing.volcano`. See docs/workload-templates.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from renderer.layers.gpu.dra import NODE_SUFFIX
from renderer.layers.gpu.dra import REQUEST as DRA_REQUEST
from renderer.layers.queueing.kueue import DEFAULT_LOCAL_QUEUE, duration_seconds
from renderer.layers.queueing.volcano import DEFAULTS_CONFIGMAP
from renderer.layers.queueing.volcano import SCHEDULER_NAME as VOLCANO_SCHEDULER
from renderer.layers.tenancy import DEFAULT_CONTAINER
from renderer.model import quantity
from renderer.model.admission import (
    ClusterQueuePlan,
    cluster_queues,
    cohort_of,
    node_share,
    potential_available,
)
from renderer.model.capacity import (
    Offer,
    how_to_request,
    maximum_holding,
    rdma_requests,
    usable_quotas,
)
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL, gpu_memory_utilization
from renderer.model.nodes import PREFIX, tolerations
from renderer.model.platform import Cluster, Namespace, Pool, Team
from renderer.model.view import ClusterView
from renderer.output.manifest import MANAGED_BY, Values, labels

LAYER = "templates"
FOLDER = "templates"

PLACEHOLDER_TAG = "replace-me"
"""The tag of every template image: a valid reference that no registry has, so a template
submitted unchanged fails to pull instead of running someone's real image."""
PLACEHOLDER_REGISTRY = "registry.example.invalid/"
"""The image prefix for a team that declares no allowed images (`.invalid` never resolves)."""

SCRATCH_SIZE = "100Gi"
SHARED_CLAIM = "shared-data"
SHARED_SIZE = Decimal(2**40)  # 1Ti, or half the team's storage quota when that is smaller
SCRATCH_PATH = "/scratch"
SHARED_PATH = "/data"
SHM_PATH = "/dev/shm"

RUN_AS = 1000
"""A non-root user and group: restricted Pod Security requires runAsNonRoot, and an image built
to run as root starts only when the pod names another user."""

JOB_GRACE_SECONDS = 120
"""Time a preempted or evicted training pod gets between SIGTERM and SIGKILL to checkpoint."""
MASTER_PORT = 29500
VLLM_PORT = 8000

TEMPLATE_LABEL = f"{PREFIX}template"
LOG_EXPORT = f"{PREFIX}log-export"
NOTE = f"{PREFIX}template-note"
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"

LABEL_VALUE_MAX = 63
"""A label value's limit, and a Job's name's (the Job controller labels its pods with it)."""
JOBSET_NAME_MAX = LABEL_VALUE_MAX - len("-workers-0-0")
"""A JobSet's pods are named `<jobset>-<replicated job>-<job index>-<pod index>`, and the pod's
host name must be a DNS label."""
RAYJOB_NAME_MAX = 47
"""KubeRay refuses longer RayJob names: the RayCluster and Services it creates add suffixes."""

GANG_PURPOSES = frozenset({"training", "batch"})
"""Purposes whose namespaces get the distributed templates (JobSet, RayJob)."""

POD_SECURITY: Mapping[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "fsGroup": RUN_AS,
    "fsGroupChangePolicy": "OnRootMismatch",
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
"""What the `restricted` Pod Security level asks of every pod and container: the templates
start in any team namespace, including the inference and batch ones that enforce it."""


@dataclass(frozen=True, slots=True)
class Target:
    """One pool as one namespace can use it: the resource a template requests there, and the
    most of it the namespace's ClusterQueue can ever be admitted (Kueue's PotentialAvailable,
    capped by the pool's size and by what the namespace ResourceQuota allows)."""

    cluster: Cluster
    team: Team
    namespace: Namespace
    plan: ClusterQueuePlan
    pool: Pool
    offer: Offer
    most: int
    others: tuple[str, ...]
    """Other resources this namespace may request on the pool (other MIG profiles)."""

    @property
    def kueue(self) -> bool:
        return self.cluster.scheduler != "volcano"

    @property
    def whole_gpus(self) -> bool:
        """One unit is one whole GPU: several may go to one pod, and a pod may take a node."""
        return self.pool.sharing == "full-gpu"

    @property
    def dra(self) -> bool:
        return self.offer.device_class is not None

    def chart(self, kind: str) -> str:
        return f"{kind.lower()}-{self.pool.name}"

    def name(self, prefix: str, limit: int = LABEL_VALUE_MAX) -> str:
        """`<prefix>-<pool>`, shortened with a digest when a long pool name would break a limit."""
        return short(f"{prefix}-{self.pool.name}", limit)

    def units_per_pod(self, pods: int) -> int:
        """GPU units for each of `pods` pods: a whole node when the quota allows, else a power
        of two that fits; one unit on shared pools (a MIG slice or time-shared replica is one
        process's device) and on DRA pools without a node-sized claim template."""
        if not self.whole_gpus:
            return 1
        share = max(1, self.most // pods)
        if share >= self.offer.per_node:
            return self.offer.per_node
        if self.dra:
            return 1
        units = 1
        while units * 2 <= share:
            units *= 2
        return units


def short(text: str, limit: int) -> str:
    """`text`, or its first characters and a digest of all of it when it is longer than `limit`."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{text[: limit - len(digest) - 1].rstrip('-')}-{digest}"


def render(view: ClusterView) -> Iterator[Values]:
    """The templates of every team namespace on one cluster."""
    plans = cluster_queues(view)
    by_namespace = {ns.name: plan for plan in plans for ns in plan.namespaces}
    for tenant in view.tenants:
        for ns in tenant.namespaces:
            plan = by_namespace.get(ns.name)
            if plan is None:
                continue
            targets = _targets(view, plans, plan, tenant.team, ns)
            if not targets:
                continue
            if view.cluster.shared_class is not None:
                claim = _shared_claim(targets[0])
                yield _values(targets[0], f"persistentvolumeclaim-{SHARED_CLAIM}", claim)
            for target in targets:
                yield from _templates(target)


def _targets(
    view: ClusterView,
    plans: tuple[ClusterQueuePlan, ...],
    plan: ClusterQueuePlan,
    team: Team,
    ns: Namespace,
) -> list[Target]:
    """Per pool the namespace may use, the offer with the most room (first in the team file on
    a tie); pools where the ClusterQueue can never be admitted one unit are left out."""
    cohort = cohort_of(plans, plan)
    flavors = {f.pool.name for f in plan.flavors}
    by_pool: dict[str, list[tuple[Pool, Offer, int]]] = {}
    holding: dict[str, int] = {}  # what the namespace ResourceQuota allows, per resource
    usable = list(usable_quotas(view.platform, team, ns))
    for _, quota, offer in usable:
        holding[offer.resource] = holding.get(offer.resource, 0) + maximum_holding(offer, quota)
    for pool, _, offer in usable:
        if pool.name not in flavors or pool.cluster != view.cluster.name:
            continue
        most = int(potential_available(plan, cohort, pool.name, offer.resource))
        most = min(most, offer.maximum, holding[offer.resource])
        entries = by_pool.setdefault(pool.name, [])
        if all(o.resource != offer.resource for _, o, _ in entries):
            entries.append((pool, offer, most))
    targets = []
    for name in sorted(by_pool):
        entries = by_pool[name]
        pool, offer, most = max(entries, key=lambda e: e[2])  # max keeps the first on a tie
        if most < 1:
            continue
        others = tuple(how_to_request(o) for _, o, _ in entries if o is not offer)
        targets.append(Target(view.cluster, team, ns, plan, pool, offer, most, others))
    return targets


def _templates(target: Target) -> Iterator[Values]:
    purpose = target.namespace.purpose
    if purpose == "inference":
        yield _values(target, target.chart("Deployment"), _deployment(target))
        return
    yield _values(target, target.chart("Job"), _job(target))
    if purpose not in GANG_PURPOSES or not target.kueue:
        return  # Volcano's gang job is the volcano-job-defaults ConfigMap
    if target.whole_gpus and target.most >= 2:
        yield _values(target, target.chart("JobSet"), _jobset(target))
    yield _values(target, target.chart("RayJob"), _rayjob(target))


def _values(target: Target, chart: str, body: dict[str, Any]) -> Values:
    return Values(
        layer=LAYER,
        chart=chart,
        body=_tree(body),
        source=target.namespace.origin.location,
        folder=f"{FOLDER}/{target.namespace.name}",
    )


def _tree(body: Any) -> Any:
    """A copy that shares no dict or list between two places, so the YAML has no anchors."""
    if isinstance(body, dict):
        return {key: _tree(value) for key, value in body.items()}
    if isinstance(body, list):
        return [_tree(value) for value in body]
    return body


# --- shared pieces --------------------------------------------------------------------------------


def _common_labels(target: Target) -> dict[str, str]:
    """The team's labels, without gpuplane's managed-by: a team's copy is the team's object."""
    found = labels(
        team=target.team.name,
        cost_center=target.team.cost_center,
        purpose=target.namespace.purpose,
        pool=target.pool.name,
    )
    return {k: v for k, v in found.items() if k not in MANAGED_BY}


def _pod_labels(target: Target, kind: str) -> dict[str, str]:
    """What a log collector and the cost reports key on (docs/workload-templates.md)."""
    return {**_common_labels(target), TEMPLATE_LABEL: short(target.chart(kind), LABEL_VALUE_MAX)}


def _queue_labels(target: Target) -> dict[str, str]:
    """Kueue's queue (the namespace's `default` LocalQueue) and the team's priority class."""
    if not target.kueue:
        return {}
    result = {QUEUE_LABEL: DEFAULT_LOCAL_QUEUE}
    priority = _priority(target)
    if priority is not None:
        result[PRIORITY_LABEL] = priority
    return result


def _priority(target: Target) -> str | None:
    """`<queue>-<priority>`: the team's priority, else the queue's default."""
    queue = target.plan.queue
    chosen = queue.priority(target.team.priority) if target.team.priority else None
    chosen = chosen or queue.default_priority
    return f"{queue.name}-{chosen.name}" if chosen is not None else None


def _metadata(target: Target, kind: str, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": target.namespace.name,
        "labels": {**_pod_labels(target, kind), **_queue_labels(target)},
    }
    meta["annotations"] = {NOTE: _note(target, kind)}
    return meta


def _note(target: Target, kind: str) -> str:
    parts = [
        f"A starting point rendered by gpuplane for {target.namespace.name} on pool "
        f"{target.pool.name} (docs/workload-templates.md): set the image tag, the command and its paths; "
        "the queue, priority, pool, resources and storage are this namespace's."
    ]
    if target.cluster.shared_class is not None:
        parts.append(
            f"It mounts PersistentVolumeClaim {SHARED_CLAIM} at {SHARED_PATH}: create it once "
            f"from persistentvolumeclaim-{SHARED_CLAIM}.yaml in this folder."
        )
    if target.others:
        parts.append(
            f"Pool {target.pool.name} also gives this namespace {', '.join(target.others)}."
        )
    if not target.kueue and kind == "Job":
        parts.append(f"For a gang of pods use the Volcano Job in ConfigMap {DEFAULTS_CONFIGMAP}.")
    return " ".join(parts)


def _pod_annotations(container: str) -> dict[str, str]:
    """The log-export contract: the collector ships stdout and stderr, and `kubectl logs`
    picks the main container."""
    return {LOG_EXPORT: "stdout", DEFAULT_CONTAINER_ANNOTATION: container}


def _image(team: Team, name: str) -> str:
    """The team's first allowed image prefix, a repository name, and the placeholder tag."""
    prefix = team.images[0] if team.images else f"{PLACEHOLDER_REGISTRY}{team.name}/"
    if not prefix.endswith("/"):
        prefix += "/"
    return f"{prefix}{name}:{PLACEHOLDER_TAG}"


def _defaults(team: Team) -> tuple[Decimal, Decimal]:
    """The team's container defaults (the LimitRange's), as cores and bytes."""
    merged = {**DEFAULT_CONTAINER, **team.defaults}
    return quantity.parse(merged["cpu"]), quantity.parse(merged["memory"])


def _host(cpu: Decimal, memory: Decimal) -> tuple[dict[str, Any], dict[str, Any]]:
    """Requests and limits for CPU and memory: memory limited to its request (no overcommit of
    the node's memory), CPU not limited (a limit only throttles data loading)."""
    return (
        {"cpu": quantity.cpu(cpu), "memory": quantity.memory(memory)},
        {"memory": quantity.memory(memory)},
    )


def _gpu_resources(
    target: Target, units: int, distributed: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A container's `resources` for `units` of the pool's offer and the pod's resourceClaims:
    the extended resource in requests and limits, or on a DRA pool a claim from the pool's
    ResourceClaimTemplate (`<pool>-node` for a whole node). A pod of a `distributed` (multi-pod)
    job also gets the pool's RDMA devices, its share of a node's rounded up (docs/rdma.md)."""
    cpu, memory = _defaults(target.team)
    requests, limits = _host(cpu * units, memory * units)
    rdma = (
        rdma_requests(target.pool, node_share(target.pool, target.offer, Decimal(units)))
        if distributed
        else {}
    )
    if not target.dra:
        requests[target.offer.resource] = units
        limits[target.offer.resource] = units
        requests.update(rdma)
        limits.update(rdma)
        return {"requests": requests, "limits": limits}, []
    requests.update(rdma)
    limits.update(rdma)
    name = target.pool.name
    if units > 1:
        name += NODE_SUFFIX
    claims = [{"name": DRA_REQUEST, "resourceClaimTemplateName": name}]
    resources = {"requests": requests, "limits": limits, "claims": [{"name": DRA_REQUEST}]}
    return resources, claims


def _memory_of(resources: Mapping[str, Any]) -> Decimal:
    return quantity.parse(resources["requests"]["memory"])


def _volumes(
    target: Target, shm: Decimal, read_only_data: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Scratch (a per-pod volume on the scratch class, or an emptyDir), the shared volume when
    the cluster has a shared class, and a memory-backed /dev/shm for NCCL and data loaders."""
    cluster = target.cluster
    if cluster.scratch_class is not None:
        scratch: dict[str, Any] = {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "metadata": {"labels": _common_labels(target)},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": cluster.scratch_class,
                        "resources": {"requests": {"storage": SCRATCH_SIZE}},
                    },
                }
            },
        }
    else:
        scratch = {"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_SIZE}}
    volumes = [scratch]
    mounts: list[dict[str, Any]] = [{"name": "scratch", "mountPath": SCRATCH_PATH}]
    if cluster.shared_class is not None:
        claim: dict[str, Any] = {"claimName": SHARED_CLAIM}
        mount: dict[str, Any] = {"name": "shared", "mountPath": SHARED_PATH}
        if read_only_data:
            claim["readOnly"] = True
            mount["readOnly"] = True
        volumes.append({"name": "shared", "persistentVolumeClaim": claim})
        mounts.append(mount)
    volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": _half(shm)}})
    mounts.append({"name": "dshm", "mountPath": SHM_PATH})
    return volumes, mounts


def _half(memory: Decimal) -> str:
    """Half the container's memory for /dev/shm: a memory-backed volume counts against it."""
    return quantity.memory(memory / 2)


def _env(target: Target) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": "HOME", "value": SCRATCH_PATH}]
    if target.cluster.shared_class is not None:
        env.append({"name": "DATA_DIR", "value": SHARED_PATH})
    if target.cluster.object_store is not None:
        env.append({"name": "OBJECT_STORE", "value": target.cluster.object_store})
    return env


def _container(
    name: str,
    image: str,
    resources: dict[str, Any],
    mounts: list[dict[str, Any]],
    env: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, **extra}
    container["env"] = env
    container["resources"] = resources
    container["volumeMounts"] = mounts
    container["securityContext"] = dict(CONTAINER_SECURITY)
    # logs go to stdout and stderr; a failed pod's last lines also land in its status
    container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    return container


def _pod_spec(
    target: Target,
    containers: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    restart: str | None = "Never",
) -> dict[str, Any]:
    """The pod: pinned to the pool by its node label (Kueue adds the flavor's node labels and
    tolerations on admission; Volcano does not, so its pods carry the tolerations)."""
    spec: dict[str, Any] = {}
    if restart is not None:
        spec["restartPolicy"] = restart
    if not target.kueue:
        spec["schedulerName"] = VOLCANO_SCHEDULER
        priority = _priority(target)
        if priority is not None:
            spec["priorityClassName"] = priority
    spec["automountServiceAccountToken"] = False
    spec["nodeSelector"] = {f"{PREFIX}pool": target.pool.name}
    pool_tolerations = tolerations(target.pool)
    if not target.kueue and pool_tolerations:
        spec["tolerations"] = pool_tolerations
    if restart == "Never":
        spec["terminationGracePeriodSeconds"] = JOB_GRACE_SECONDS
    spec["securityContext"] = dict(POD_SECURITY)
    spec["containers"] = containers
    spec["volumes"] = volumes
    if claims:
        spec["resourceClaims"] = claims
    return spec


def _pod_template(
    target: Target, kind: str, container: str, spec: dict[str, Any], **labels: str
) -> dict[str, Any]:
    annotations = _pod_annotations(container)
    if not target.kueue:
        annotations[VOLCANO_QUEUE] = target.plan.name
    return {
        "metadata": {"labels": {**_pod_labels(target, kind), **labels}, "annotations": annotations},
        "spec": spec,
    }


def _ttl(team: Team) -> int | None:
    finished = team.retention.get("finishedJobs")
    return duration_seconds(finished) if finished else None


# --- the templates --------------------------------------------------------------------------------


def _job(target: Target) -> dict[str, Any]:
    """One pod with one GPU unit: the guide's clean Job."""
    resources, claims = _gpu_resources(target, 1)
    volumes, mounts = _volumes(target, _memory_of(resources))
    container = _container(
        "main",
        _image(target.team, "train"),
        resources,
        mounts,
        _env(target),
        command=["python", "/app/train.py"],
    )
    spec: dict[str, Any] = {}
    if target.kueue:
        spec["suspend"] = True  # Kueue starts it on admission; an accidental apply only queues
    spec.update(
        {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 3,
            # preemption and node drains are not the job's fault: they do not use up retries
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "Ignore",
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    }
                ]
            },
        }
    )
    ttl = _ttl(target.team)
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    spec["template"] = _pod_template(
        target, "Job", "main", _pod_spec(target, [container], volumes, claims)
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(target, "Job", target.name("job")),
        "spec": spec,
    }


DISTRIBUTED_COMMAND = (
    'NODE_RANK="${NODE_RANK:-$((JOB_COMPLETION_INDEX + 1))}"; '
    'exec torchrun --nnodes="$NNODES" --nproc-per-node="$GPUS_PER_POD" '
    '--node-rank="$NODE_RANK" --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" '
    "/app/train.py"
)
"""torchrun on every pod: the leader is rank 0, worker pod i of the indexed workers Job is
rank i + 1, and all meet at the leader's stable JobSet host name."""


def _jobset(target: Target) -> dict[str, Any]:
    """A leader and workers Job, a pod each per node share, admitted by Kueue as one Workload
    (all pods or none) and restarted as a whole when a pod fails."""
    pods = 2
    units = target.units_per_pod(pods)
    workers = pods - 1
    image = _image(target.team, "train")

    def replicated(role: str, count: int, rank: str | None) -> dict[str, Any]:
        resources, claims = _gpu_resources(target, units, distributed=True)
        volumes, mounts = _volumes(target, _memory_of(resources))
        env = [
            *_env(target),
            {"name": "NNODES", "value": str(pods)},
            {"name": "GPUS_PER_POD", "value": str(units)},
            {
                "name": "JOBSET_NAME",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOBSET_NAME_LABEL}']"}},
            },
            {"name": "MASTER_ADDR", "value": "$(JOBSET_NAME)-leader-0-0.$(JOBSET_NAME)"},
            {"name": "MASTER_PORT", "value": str(MASTER_PORT)},
        ]
        if rank is not None:
            env.append({"name": "NODE_RANK", "value": rank})
        container = _container(
            "trainer",
            image,
            resources,
            mounts,
            env,
            command=["/bin/sh", "-c", DISTRIBUTED_COMMAND],
            ports=[{"name": "rendezvous", "containerPort": MASTER_PORT}],
        )
        template = _pod_template(
            target, "JobSet", "trainer", _pod_spec(target, [container], volumes, claims)
        )
        if target.pool.topology_levels:
            # pack the gang into the pool's widest topology domain when it fits; never required
            template["metadata"]["annotations"][PREFERRED_TOPOLOGY] = target.pool.topology_levels[0]
        return {
            "name": role,
            "replicas": 1,
            "template": {
                "spec": {
                    "parallelism": count,
                    "completions": count,
                    "completionMode": "Indexed",
                    "backoffLimit": 0,  # a failed pod fails its Job; the JobSet restarts all
                    "template": template,
                }
            },
        }

    spec: dict[str, Any] = {
        "suspend": True,
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {"maxRestarts": 3, "restartStrategy": "Recreate"},
        "replicatedJobs": [replicated("leader", 1, "0"), replicated("workers", workers, None)],
    }
    ttl = _ttl(target.team)
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _metadata(target, "JobSet", target.name("dist", JOBSET_NAME_MAX)),
        "spec": spec,
    }


RAY_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001))
SUBMITTER_CPU = Decimal("0.5")
SUBMITTER_MEMORY = Decimal(2**30)


def _rayjob(target: Target) -> dict[str, Any]:
    """A Ray cluster for one job: a head without GPUs, a worker group with the pool's GPUs, and a
    submitter pod (K8sJobMode) that reaches the head inside the namespace; Kueue admits the
    three as one Workload and KubeRay deletes the cluster when the job ends."""
    image = _image(target.team, "ray")
    pods = 2 if target.most >= 2 else 1
    units = target.units_per_pod(pods)
    cpu, memory = _defaults(target.team)

    head_requests, head_limits = _host(cpu, memory)
    head_resources = {"requests": head_requests, "limits": head_limits}
    volumes, mounts = _volumes(target, memory)
    head = _container(
        "ray-head",
        image,
        head_resources,
        mounts,
        _env(target),
        ports=[{"name": name, "containerPort": port} for name, port in RAY_PORTS],
    )
    resources, claims = _gpu_resources(target, units, distributed=pods > 1)
    worker_volumes, worker_mounts = _volumes(target, _memory_of(resources))
    worker = _container("ray-worker", image, resources, worker_mounts, _env(target))
    submit_requests, submit_limits = _host(SUBMITTER_CPU, SUBMITTER_MEMORY)
    submitter = {
        "name": "ray-job-submitter",
        "image": image,
        # no command: KubeRay runs `ray job submit` with the entrypoint below
        "resources": {"requests": submit_requests, "limits": submit_limits},
        "securityContext": dict(CONTAINER_SECURITY),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    spec: dict[str, Any] = {
        "suspend": True,
        "entrypoint": "python /app/main.py",
        "submissionMode": "K8sJobMode",
        "shutdownAfterJobFinishes": True,  # Kueue requires it: the cluster goes with the job
    }
    ttl = _ttl(target.team)
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    spec["rayClusterSpec"] = {
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
            "template": _pod_template(
                target, "RayJob", "ray-head", _pod_spec(target, [head], volumes, [], None)
            ),
        },
        "workerGroupSpecs": [
            {
                "groupName": "gpu",
                "replicas": pods,
                "minReplicas": pods,
                "maxReplicas": pods,
                # stated, not detected: Ray only counts nvidia.com/gpu limits by itself
                "rayStartParams": {"num-gpus": str(units)},
                "template": _pod_template(
                    target,
                    "RayJob",
                    "ray-worker",
                    _pod_spec(target, [worker], worker_volumes, claims, None),
                ),
            }
        ],
    }
    submitter_spec = _pod_spec(target, [submitter], [], [])
    del submitter_spec["volumes"]
    spec["submitterPodTemplate"] = _pod_template(
        target, "RayJob", "ray-job-submitter", submitter_spec
    )
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": _metadata(target, "RayJob", target.name("ray", RAYJOB_NAME_MAX)),
        "spec": spec,
    }


def _deployment(target: Target) -> dict[str, Any]:
    """An OpenAI-compatible vLLM server on one GPU unit of the inference pool, ready when its
    /health answers; each pod is admitted by Kueue (pod integration) like a one-pod job."""
    name = target.name("vllm")
    resources, claims = _gpu_resources(target, 1)
    volumes, mounts = _volumes(target, _memory_of(resources), read_only_data=True)
    shared = target.cluster.shared_class is not None
    model = f"{SHARED_PATH}/models/{PLACEHOLDER_TAG}" if shared else PLACEHOLDER_TAG
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10}
    container = _container(
        "vllm",
        _image(target.team, "vllm-openai"),
        resources,
        mounts,
        [*_env(target), {"name": "HF_HOME", "value": f"{SCRATCH_PATH}/huggingface"}],
        command=["vllm", "serve"],
        args=[
            model,
            f"--served-model-name={PLACEHOLDER_TAG}",
            "--host=0.0.0.0",
            f"--port={VLLM_PORT}",
            "--tensor-parallel-size=1",
            f"--gpu-memory-utilization={gpu_memory_utilization(target.pool)}",
        ],
        ports=[{"name": "http", "containerPort": VLLM_PORT}],
        # loading a model takes minutes: startup allows 10, then liveness takes over
        startupProbe={**probe, "failureThreshold": 60},
        readinessProbe={**probe, "failureThreshold": 3},
        livenessProbe={**probe, "failureThreshold": 6},
    )
    selector = {"app.kubernetes.io/name": name}
    template = _pod_template(
        target,
        "Deployment",
        "vllm",
        _pod_spec(target, [container], volumes, claims, None),
        **selector,
        **_queue_labels(target),
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(target, "Deployment", name),
        "spec": {"replicas": 1, "selector": {"matchLabels": selector}, "template": template},
    }


def _shared_claim(target: Target) -> dict[str, Any]:
    """The shared volume the templates mount, on the cluster's shared class: 1Ti, or half the
    team's storage quota when that is smaller. Created once per namespace by the team."""
    size = SHARED_SIZE
    storage = target.team.resources.get("storage")
    if storage is not None:
        size = min(size, quantity.parse(storage) / 2)
    meta: dict[str, Any] = {
        "name": SHARED_CLAIM,
        "namespace": target.namespace.name,
        "labels": _common_labels(target),
    }
    del meta["labels"][f"{PREFIX}pool"]
    meta["annotations"] = {
        NOTE: "The shared volume of this namespace's workload templates (datasets, models, "
        f"checkpoints), mounted at {SHARED_PATH}; create it once, before the first job "
        "(docs/workload-templates.md)."
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": target.cluster.shared_class,
            "resources": {"requests": {"storage": quantity.memory(size)}},
        },
    }
