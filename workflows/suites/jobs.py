"""The batch/v1 Job of each step and the run's workspace claim, as data the Workflow submits to
the suite's Jobs namespace (`gpuplane-acceptance-jobs`, where no team has any right), through the
platform's LocalQueue there: per-pool values reach the containers as arguments and environment
variables.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from renderer.model import quantity
from renderer.model.capacity import rdma_requests
from renderer.model.names import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    SUITE_COST_CENTER,
    WINDOW_TAINT_KEY,
    gpu_memory_utilization,
)
from renderer.model.nodes import node_labels, tolerations
from renderer.model.queue_plans import node_share
from renderer.model.topology import PREFERRED as PREFERRED_TOPOLOGY
from renderer.model.topology import topology_aware as pool_topology_aware
from renderer.model.topology import widest_level
from workflows.suites.placement import Target
from workflows.suites.program import (
    Probe,
    Shape,
    Step,
    acceptance_steps,
    benchmark_steps,
    dns_label,
    headless_service,
    input_ref,
)
from workflows.suites.scripts import RUNNER
from workflows.suites.settings import (
    GPUS_LABEL,
    IMAGE_NAMESPACE_LABEL,
    INTERRUPT_WAIT_SECONDS,
    JOB_NAME_LABEL,
    JOB_TTL_SECONDS,
    MASTER_PORT,
    OBJECT_STORE_SECRET,
    POOL_LABEL,
    PROBE_COPY,
    PROBE_PACKAGE,
    PRODUCTION_PROBES,
    RESULTS_DIR,
    RUN,
    RUN_LABEL,
    SERVED_MODEL,
    SERVER_PORT,
    STEP_LABEL,
    WORKSPACE,
    WORKSPACE_SIZE,
)


def _command(target: Target, probe: Probe, shape: Shape) -> list[str]:
    nproc = shape.per_pod if target.pool.sharing == "full-gpu" else 1
    args = [probe.probe, "--cluster", target.cluster.name, "--pool", target.name, *probe.options]
    if not probe.distributed or shape.pods * nproc == 1:
        return ["python3", "-m", "workflows.probes", *args]
    if shape.pods == 1:
        launch = ["torchrun", "--standalone", f"--nproc-per-node={nproc}"]
    else:
        launch = [
            "torchrun",
            f"--nnodes={shape.pods}",
            f"--nproc-per-node={nproc}",
            "--node-rank=$(JOB_COMPLETION_INDEX)",
            "--master-addr=$(MASTER_ADDR)",
            f"--master-port={MASTER_PORT}",
        ]
    return [*launch, "-m", "workflows.probes", *args]


def in_production_image(step: Step) -> bool:
    """Whether the step's probe container runs the pool's production image: every probe it
    runs is a torch probe (PRODUCTION_PROBES) and no server shares its pod."""
    probes = (*step.probes, *step.after)
    return bool(probes) and not step.server and all(p.probe in PRODUCTION_PROBES for p in probes)


def _preflight(commands: list[list[str]]) -> list[str]:
    """The command that checks the production image before the step's probes run: a GPU (the
    pool's) and NCCL are expected, torchrun too where one of the step's `commands` launches a
    probe with it (a distributed probe of one rank runs without)."""
    command = ["python3", "-m", "workflows.probes", "preflight", "--expect-gpu"]
    if any(c[0] == "torchrun" for c in commands):
        command.append("--torchrun")
    return command


def _probe_package() -> dict[str, Any]:
    """The init container that copies the probe package from the suite image into the pod's
    PROBE_COPY volume, where the production image's Python imports it (nothing rebuilt)."""
    return {
        "name": "probe-package",
        "image": input_ref("image"),
        "command": ["cp", "-R", f"{PROBE_PACKAGE}/workflows", f"{PROBE_COPY}/"],
        "securityContext": _secure_container(),
        "volumeMounts": [{"name": "probe-package", "mountPath": PROBE_COPY}],
    }


def _host_resources(target: Target, per_pod: int) -> dict[str, str]:
    """CPU and memory for one pod: half of what its GPU share of a node holds (whole cores and
    GiB), so a pod that fits the queue's GPU quota fits its CPU and memory quota too. Nothing
    when the pool does not declare its hosts (the namespace's LimitRange defaults apply)."""
    pool = target.pool
    if pool.host_cpus is None or pool.host_memory is None:
        return {}
    share = node_share(pool, target.offer, Decimal(per_pod)) / 2
    cpus = max(Decimal(1), (Decimal(pool.host_cpus) * share).to_integral_value(ROUND_FLOOR))
    gib = quantity.parse(pool.host_memory) * share / Decimal(2**30)
    memory = max(Decimal(1), gib.to_integral_value(ROUND_FLOOR))
    return {"cpu": str(cpus), "memory": f"{memory}Gi"}


def run_labels(target: Target, step: str) -> dict[str, str]:
    return {RUN_LABEL: RUN, POOL_LABEL: target.name, STEP_LABEL: step}


def step_labels(target: Target, step: str) -> dict[str, str]:
    """A step's Jobs and pods: the run's labels and the image namespace, so that the pool's run
    and a namespace's run of the same Workflow never read or delete each other's pods."""
    return {**run_labels(target, step), IMAGE_NAMESPACE_LABEL: input_ref("image-namespace")}


def result_labels(target: Target) -> dict[str, str]:
    """The labels every result carries (and the results ConfigMap): the pool's node labels (GPU,
    topology, fabric), its storage class, the queue path (the platform's queue in the pool's
    cohort) and the cost rate."""
    pool = target.pool
    found = {k: v for k, v in node_labels(pool).items() if k.startswith("gpuplane.dev/")}
    found.update(
        {
            "gpuplane.dev/cluster": target.cluster.name,
            "gpuplane.dev/cost-center": SUITE_COST_CENTER,
            "gpuplane.dev/namespace": target.namespace,
            "gpuplane.dev/queue": target.queue.name,
            "gpuplane.dev/cluster-queue": target.cluster_queue,
            "gpuplane.dev/local-queue": target.local_queue,
            "gpuplane.dev/resource": target.offer.resource.replace("/", "_"),
            "gpuplane.dev/gpu-hour": _decimal_text(pool.gpu_hour),
            "gpuplane.dev/currency": pool.currency,
        }
    )
    if target.priority_class is not None:
        found["gpuplane.dev/priority-class"] = target.priority_class
    if target.cluster.shared_class:
        found["gpuplane.dev/storage-class"] = target.cluster.shared_class
    return found


def _decimal_text(value: float) -> str:
    return format(Decimal(str(value)).normalize(), "f")


def _probe_env(target: Target, step: Step) -> list[dict[str, Any]]:
    """The probes' own labels (`GPUPLANE_LABELS`, the node, the pod, the image), the runner's
    state folder, and for multi-pod Jobs rank 0's address."""
    labels = {
        **result_labels(target),
        "gpuplane.dev/step": step.name,
        GPUS_LABEL: str(step.gpus),
    }
    env: list[dict[str, Any]] = [
        {"name": "STATE", "value": f"{WORKSPACE}/{step.name}" if step.workspace else RESULTS_DIR},
        {"name": "GPUPLANE_LABELS", "value": ",".join(f"{k}={v}" for k, v in labels.items())},
        {"name": "GPUPLANE_IMAGE", "value": input_ref("image")},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {
            "name": "JOB_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}},
        },
    ]
    if step.shape.pods > 1:
        env.append({"name": "MASTER_ADDR", "value": f"$(JOB_NAME)-0.{headless_service(target)}"})
    if step.after:
        env.append({"name": "INTERRUPT_WAIT_SECONDS", "value": str(INTERRUPT_WAIT_SECONDS)})
    return env


def _secure_container() -> dict[str, Any]:
    """What the `restricted` Pod Security level asks of every container."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def communicates(step: Step) -> bool:
    """Whether the step's pods talk NCCL across the fabric: a Job of several pods, or a
    distributed probe (torchrun); such pods get the pool's RDMA devices (docs/rdma.md)."""
    return step.shape.pods > 1 or any(p.distributed for p in (*step.probes, *step.after))


def rdma_resources(target: Target, step: Step) -> dict[str, int]:
    """The pool's RDMA resource for one pod of a communicating step, in the pod's share of a
    node (rounded up, at least 1); nothing on a pool without `fabric.rdma` or for a step that
    does not communicate."""
    if not communicates(step):
        return {}
    share = node_share(target.pool, target.offer, Decimal(step.shape.per_pod))
    return rdma_requests(target.pool, share)


def _gpu_resources(
    target: Target, shape: Shape, rdma: Mapping[str, int] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One pod's GPU container resources (with its RDMA devices, requests equal to limits, as
    extended resources must be), and the pod's resourceClaims on a DRA pool."""
    host = _host_resources(target, shape.per_pod)
    requests: dict[str, Any] = dict(host)
    limits: dict[str, Any] = {k: v for k, v in host.items() if k == "memory"}
    pod: dict[str, Any] = {}
    resources: dict[str, Any] = {}
    if target.dra:
        claim = target.name if shape.per_pod == 1 else f"{target.name}-node"
        pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim}]
        resources["claims"] = [{"name": "gpu"}]
    else:
        requests[target.offer.resource] = shape.per_pod
        limits[target.offer.resource] = shape.per_pod
    requests.update(rdma or {})
    limits.update(rdma or {})
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources, pod


def _server(
    target: Target, mounts: list[dict[str, Any]], resources: dict[str, Any]
) -> dict[str, Any]:
    """The inference server, a native sidecar (an init container that keeps running, stopped
    when the probe is done): it starts first and loads the weights an earlier Job staged, while
    the probe waits for it to answer (SERVER_START_SECONDS). It has no probes of its own, so the
    pod is Ready for Kueue at once. On a time-shared GPU it takes only its replica's share of the
    memory, like the team's template."""
    return {
        "name": "server",
        "image": input_ref("server-image"),
        "restartPolicy": "Always",
        "args": [
            "--model",
            f"{WORKSPACE}/data/model",
            "--served-model-name",
            SERVED_MODEL,
            "--port",
            str(SERVER_PORT),
            "--gpu-memory-utilization",
            gpu_memory_utilization(target.pool),
        ],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": resources,
        "securityContext": _secure_container(),
        "volumeMounts": mounts,
    }


def topology_aware(target: Target) -> bool:
    """Whether Kueue places the pool's pods itself (its flavor names a Topology): it then writes
    each pod's node into a nodeSelector, packing pods smaller than a node together, so a
    required anti-affinity would leave all but one Pending until waitForPodsReady evicts the Job,
    again and again. There the suite leaves placement to Kueue (docs/acceptance-suites.md). A
    pool whose only level is the node has no Topology (`renderer.model.topology`)."""
    return target.cluster.scheduler == "kueue" and pool_topology_aware(target.pool)


def job_manifest(target: Target, step: Step) -> dict[str, Any]:
    """The batch/v1 Job of one step, as the Workflow submits it to the suite's Jobs namespace
    (Argo fills in the `{{…}}` parameters; the workspace claim is
    `{{inputs.parameters.workspace}}`). It names its LocalQueue explicitly: Kueue's LocalQueue
    defaulting only fills in `default`, which that namespace does not have. It is deleted a day
    after it finished (`ttlSecondsAfterFinished`), whatever the Workflow's clean-up did."""
    pool = target.pool
    shape = step.shape
    pod_labels = step_labels(target, step.name)
    queue_labels, pod_spec, pod_annotations = _scheduling(target)
    labels = {
        **pod_labels,
        "gpuplane.dev/cost-center": SUITE_COST_CENTER,
        "gpuplane.dev/pool": pool.name,
        **queue_labels,
    }
    mounts, volumes = _volumes(step)
    resources, claims = _gpu_resources(target, shape, rdma_resources(target, step))
    pod_spec.update(claims)
    if step.server:
        pod_spec["initContainers"] = [_server(target, copy.deepcopy(mounts), resources)]
    if in_production_image(step):
        pod_spec.setdefault("initContainers", []).append(_probe_package())
        mounts.append({"name": "probe-package", "mountPath": PROBE_COPY, "readOnly": True})
        volumes.append({"name": "probe-package", "emptyDir": {}})
    container = _probe_container(target, step, mounts, {} if step.server else resources)
    pod_spec.update(
        {
            "nodeSelector": {"gpuplane.dev/pool": pool.name},
            "tolerations": [*tolerations(pool), *window_tolerations(target)],
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "fsGroup": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
        }
    )
    if not pod_spec["tolerations"]:
        del pod_spec["tolerations"]
    pod_spec.update(_spread(target, step, pod_labels))
    if volumes:
        pod_spec["volumes"] = volumes
    template_meta: dict[str, Any] = {"labels": pod_labels}
    if pod_annotations:
        template_meta["annotations"] = pod_annotations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": dns_label(f"{pool.name}-{step.name}", 57) + "-",
            "namespace": target.namespace,
            "labels": labels,
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": shape.pods,
            "parallelism": shape.pods,
            "backoffLimit": 1 if step.after else 0,
            "activeDeadlineSeconds": target.deadline_seconds,
            "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def window_tolerations(target: Target) -> list[dict[str, Any]]:
    """In the window run, the toleration of the taint its `reserve` step put on the pool's
    nodes: that key, this run's uid, NoSchedule only (so the node-loss taint, another key,
    still keeps the replacement pod off the node it took away)."""
    if not target.reserved:
        return []
    return [{"key": WINDOW_TAINT_KEY, "operator": "Equal", "value": RUN, "effect": "NoSchedule"}]


def _scheduling(target: Target) -> tuple[dict[str, str], dict[str, Any], dict[str, str]]:
    """What hands the Job to the cluster's scheduler: the Job's labels (Kueue), the start of
    the pod spec, and the pods' annotations."""
    pool = target.pool
    labels: dict[str, str] = {}
    pod_annotations: dict[str, str] = {}
    pod_spec: dict[str, Any] = {"restartPolicy": "Never"}
    if target.cluster.scheduler == "volcano":
        pod_spec["schedulerName"] = "volcano"
        pod_annotations["scheduling.volcano.sh/queue-name"] = target.cluster_queue
        if target.priority_class is not None:
            pod_spec["priorityClassName"] = target.priority_class
    else:
        labels[QUEUE_LABEL] = target.local_queue
        if target.priority_class is not None:
            labels[PRIORITY_LABEL] = target.priority_class
        level = widest_level(pool)
        if level is not None:
            # the suite's ClusterQueue mixes TAS and other flavors: Kueue gives a TAS flavor
            # only to a pod set that asks for TAS (checkPodSetAndFlavorMatchForTAS)
            pod_annotations[PREFERRED_TOPOLOGY] = level
    return labels, pod_spec, pod_annotations


def _volumes(step: Step) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The probe's volume mounts and the pod's volumes: the workspace claim, and shared memory
    for a distributed probe with more than one rank."""
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if step.workspace:
        mounts.append({"name": "workspace", "mountPath": WORKSPACE})
        volumes.append(
            {"name": "workspace", "persistentVolumeClaim": {"claimName": input_ref("workspace")}}
        )
    if any(p.distributed for p in step.probes) and step.shape.pods * step.shape.per_pod > 1:
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
    return mounts, volumes


def _probe_container(
    target: Target, step: Step, mounts: list[dict[str, Any]], resources: dict[str, Any]
) -> dict[str, Any]:
    """The container that runs the step's probes (`resources`: none when the server holds the
    GPUs)."""
    shape = step.shape
    plan: dict[str, Any] = {
        "run": [[p.key, _command(target, p, shape), p.writes] for p in step.probes]
    }
    if step.after:
        plan["after"] = [[p.key, _command(target, p, shape), p.writes] for p in step.after]
    image = input_ref("image")
    env = _probe_env(target, step)
    if in_production_image(step):
        # the production image's own Python, the probe package from the init container's copy
        image = input_ref("production-image")
        plan["preflight"] = _preflight([c for _, c, _ in plan["run"] + plan.get("after", [])])
        for variable in env:
            if variable["name"] == "GPUPLANE_IMAGE":
                variable["value"] = image
        env.append({"name": "PYTHONPATH", "value": PROBE_COPY})
    container: dict[str, Any] = {
        "name": "probe",
        "image": image,
        "command": ["python3", "-c", RUNNER],
        "args": [json.dumps(plan)],
        "env": env,
        # credentials and endpoint of the object store, where the namespace provides them
        "envFrom": [{"secretRef": {"name": OBJECT_STORE_SECRET, "optional": True}}],
    }
    if resources:
        container["resources"] = resources
    container["securityContext"] = _secure_container()
    if mounts:
        container["volumeMounts"] = mounts
    if step.after:
        container["readinessProbe"] = {
            "exec": {"command": ["test", "-e", f"{WORKSPACE}/{step.name}/interrupt-me.json"]},
            "periodSeconds": 10,
        }
    return container


def _spread(target: Target, step: Step, pod_labels: Mapping[str, str]) -> dict[str, Any]:
    """A multi-pod step's subdomain (its headless Service), and one pod per node where its
    devices are smaller than a node and Kueue does not place the pods itself."""
    shape = step.shape
    if shape.pods <= 1:
        return {}
    spread: dict[str, Any] = {"subdomain": headless_service(target)}
    smaller = shape.per_pod < target.offer.per_node
    if (smaller or step.one_per_node) and not topology_aware(target):
        # devices smaller than a node, or a step that must cover nodes: one pod per node
        spread["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": dict(pod_labels)},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    return spread


def workspace_manifest(target: Target) -> dict[str, Any]:
    """The run's PersistentVolumeClaim in the suite's Jobs namespace: the cluster's shared file system
    (ReadWriteMany) when it declares one, else the default class. Only single-pod Jobs mount it."""
    cluster = target.cluster
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany" if cluster.shared_class else "ReadWriteOnce"],
        "resources": {"requests": {"storage": WORKSPACE_SIZE}},
    }
    if cluster.shared_class:
        spec["storageClassName"] = cluster.shared_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "generateName": dns_label(f"{target.name}-workspace", 57) + "-",
            "namespace": target.namespace,
            "labels": {
                **run_labels(target, "workspace"),
                "gpuplane.dev/cost-center": SUITE_COST_CENTER,
            },
        },
        "spec": spec,
    }


def demand(target: Target) -> dict[str, Decimal]:
    """The most one Job of the pool's suites asks of each resource Kueue counts (the pool's GPU
    resource, cpu and memory; not the RDMA devices it leaves out of quota): the platform
    ClusterQueue's borrowing limits on the pool. Steps of a suite never overlap."""
    found: dict[str, Decimal] = {}
    for step in (*acceptance_steps(target), *benchmark_steps(target)):
        pods = Decimal(step.shape.pods)
        asked = {target.offer.resource: pods * step.shape.per_pod}
        for name, text in _host_resources(target, step.shape.per_pod).items():
            asked[name] = pods * quantity.parse(text)
        for name, amount in asked.items():
            found[name] = max(found.get(name, Decimal(0)), amount)
    return found
