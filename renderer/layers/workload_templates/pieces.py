"""The pieces every workload template is built from: the pool as one namespace can use it
(`Target`), labels and the note, the image, resources, storage, env and the restricted pod. What all
templates carry (a label, a mount, a security setting) changes here, once for every kind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
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
from renderer.model.capacity import Offer, rdma_requests
from renderer.model.names import DEFAULT_FINISHED_JOBS, PRIORITY_LABEL, QUEUE_LABEL
from renderer.model.nodes import PREFIX, tolerations
from renderer.model.platform import Cluster, Endpoint, Namespace, Pool, Team
from renderer.model.queue_plans import ClusterQueuePlan, node_share
from renderer.model.topology import PREFERRED as PREFERRED_TOPOLOGY
from renderer.model.topology import widest_level
from renderer.output.manifest import MANAGED_BY, labels

PLACEHOLDER_TAG = "replace-me"
"""The tag of every template image: a valid reference that no registry has, so a template
submitted unchanged fails to pull instead of running someone's real image."""
PLACEHOLDER_REGISTRY = "registry.example.invalid/"
"""The image prefix for a team that declares no allowed images (`.invalid` never resolves)."""

SCRATCH_SIZE = "100Gi"
SHARED_CLAIM = "shared-data"
SCRATCH_PATH = "/scratch"
SHARED_PATH = "/data"
SHM_PATH = "/dev/shm"

RUN_AS = 1000
"""A non-root user and group: restricted Pod Security requires runAsNonRoot, and an image built
to run as root starts only when the pod names another user."""

JOB_GRACE_SECONDS = 120
"""Time a preempted or evicted training pod gets between SIGTERM and SIGKILL to checkpoint."""

TEMPLATE_LABEL = f"{PREFIX}template"
LOG_EXPORT = f"{PREFIX}log-export"
NOTE = f"{PREFIX}template-note"
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
VOLCANO_QUEUE = "scheduling.volcano.sh/queue-name"

LABEL_VALUE_MAX = 63
"""A label value's limit, and a Job's name's (the Job controller labels its pods with it)."""
JOBSET_NAME_MAX = LABEL_VALUE_MAX - len("-workers-0-0")
"""A JobSet's pods are named `<jobset>-<replicated job>-<job index>-<pod index>`, and the pod's
host name must be a DNS label."""
TRAINJOB_NAME_MAX = LABEL_VALUE_MAX - len("-node-0-0")
"""A TrainJob's JobSet has its name, and its pods are `<trainjob>-node-0-<pod index>`."""
RAYJOB_NAME_MAX = 47
"""KubeRay refuses longer RayJob names: the RayCluster and Services it creates add suffixes."""

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
    endpoint: Endpoint | None = None
    """The endpoint the template serves (a Deployment named after it); None: a pool's."""

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
        """`<kind>-<pool>`, or an endpoint's `<kind>-<endpoint>` (its file name, as a rendered
        object's is `<kind>-<name>`)."""
        owner = self.endpoint.name if self.endpoint is not None else self.pool.name
        return f"{kind.lower()}-{owner}"

    def name(self, prefix: str, limit: int = LABEL_VALUE_MAX) -> str:
        """`<prefix>-<pool>`, shortened with a digest when a long pool name would break a limit;
        an endpoint's template is named after the endpoint."""
        if self.endpoint is not None:
            return self.endpoint.name
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


# --- shared pieces --------------------------------------------------------------------------------


def finished_ttl(team: Team | None) -> int:
    """The team's `retention.finishedJobs` in seconds, or the platform's default (also for no
    team): the security layer's admission policies refuse a team's Job, JobSet or RayJob
    without a TTL or with a longer one."""
    retention = team.retention.get("finishedJobs") if team is not None else None
    return duration_seconds(str(retention or DEFAULT_FINISHED_JOBS))


def common_labels(target: Target) -> dict[str, str]:
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
    return {**common_labels(target), TEMPLATE_LABEL: short(target.chart(kind), LABEL_VALUE_MAX)}


def queue_labels(target: Target) -> dict[str, str]:
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


def metadata(target: Target, kind: str, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": target.namespace.name,
        "labels": {**_pod_labels(target, kind), **queue_labels(target)},
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
    if target.endpoint is not None:
        parts.append(
            f"It runs endpoint {target.endpoint.name}, whose Service, route, "
            "PodDisruptionBudget, autoscaler and PodMonitor the platform renders "
            "(docs/serving-rollouts.md): keep its name, labels and ports; once applied the "
            "autoscaler owns spec.replicas, so a tool that re-applies this file must leave it out."
        )
    if target.others:
        parts.append(
            f"Pool {target.pool.name} also gives this namespace {', '.join(target.others)}."
        )
    if kind == "TrainJob":
        parts.append(
            "It runs on ClusterTrainingRuntime torch-distributed, which the platform installs: "
            "set spec.trainer.image and command; numNodes pods of resourcesPerNode each must fit "
            "the namespace's quota (gpuplane fit)."
        )
    if not target.kueue and kind == "Job":
        parts.append(f"For a gang of pods use the Volcano Job in ConfigMap {DEFAULTS_CONFIGMAP}.")
    return " ".join(parts)


def _pod_annotations(container: str) -> dict[str, str]:
    """The log-export contract: the collector ships stdout and stderr, and `kubectl logs`
    picks the main container."""
    return {LOG_EXPORT: "stdout", DEFAULT_CONTAINER_ANNOTATION: container}


def image_ref(team: Team, name: str) -> str:
    """The team's first allowed image prefix, a repository name, and the placeholder tag."""
    prefix = team.images[0] if team.images else f"{PLACEHOLDER_REGISTRY}{team.name}/"
    if not prefix.endswith("/"):
        prefix += "/"
    return f"{prefix}{name}:{PLACEHOLDER_TAG}"


def defaults(team: Team) -> tuple[Decimal, Decimal]:
    """The team's container defaults (the LimitRange's), as cores and bytes."""
    merged = {**DEFAULT_CONTAINER, **team.defaults}
    return quantity.parse(merged["cpu"]), quantity.parse(merged["memory"])


def host(cpu: Decimal, memory: Decimal) -> tuple[dict[str, Any], dict[str, Any]]:
    """Requests and limits for CPU and memory: memory limited to its request (no overcommit of
    the node's memory), CPU not limited (a limit only throttles data loading)."""
    return (
        {"cpu": quantity.cpu(cpu), "memory": quantity.memory(memory)},
        {"memory": quantity.memory(memory)},
    )


def gpu_resources(
    target: Target, units: int, *, distributed: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A container's `resources` for `units` of the pool's offer and the pod's resourceClaims:
    the extended resource in requests and limits, or on a DRA pool a claim from the pool's
    ResourceClaimTemplate (`<pool>-node` for a whole node). A pod of a `distributed` (multi-pod)
    job also gets the pool's RDMA devices, its share of a node's rounded up (docs/rdma.md)."""
    cpu, memory = defaults(target.team)
    requests, limits = host(cpu * units, memory * units)
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


def memory_of(resources: Mapping[str, Any]) -> Decimal:
    return quantity.parse(resources["requests"]["memory"])


def volumes_and_mounts(
    target: Target, shm: Decimal, *, read_only_data: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Scratch (a per-pod volume on the scratch class, or an emptyDir), the shared volume when
    the cluster has a shared class, and a memory-backed /dev/shm for NCCL and data loaders."""
    cluster = target.cluster
    if cluster.scratch_class is not None:
        scratch: dict[str, Any] = {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "metadata": {"labels": common_labels(target)},
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


def container_env(target: Target) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": "HOME", "value": SCRATCH_PATH}]
    if target.cluster.shared_class is not None:
        env.append({"name": "DATA_DIR", "value": SHARED_PATH})
    if target.cluster.object_store is not None:
        env.append({"name": "OBJECT_STORE", "value": target.cluster.object_store})
    return env


def container_spec(
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


def pod_spec(
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


def pod_template(
    target: Target, kind: str, container: str, spec: dict[str, Any], **labels: str
) -> dict[str, Any]:
    """A pod template of the target. On a topology-aware pool under Kueue it asks for the
    pool's widest domain, never requiring it (`podset-preferred-topology`): Kueue gives a TAS
    flavor only to a pod set that asks for TAS where the ClusterQueue also has flavors without
    a Topology ("supports only TopologyAwareScheduling", `checkPodSetAndFlavorMatchForTAS`), and
    packs a gang into one block or rack when it fits."""
    annotations = _pod_annotations(container)
    if not target.kueue:
        annotations[VOLCANO_QUEUE] = target.plan.name
    elif (level := widest_level(target.pool)) is not None:
        annotations[PREFERRED_TOPOLOGY] = level
    return {
        "metadata": {"labels": {**_pod_labels(target, kind), **labels}, "annotations": annotations},
        "spec": spec,
    }
