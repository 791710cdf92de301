"""The batch and training templates: a queued Job, a JobSet gang for distributed training, a
Kubeflow TrainJob on the platform's `torch-distributed` runtime, and a RayJob. They change with
the Job, JobSet, Trainer and KubeRay APIs and with how training starts (torchrun, Ray), not with
serving.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from renderer.layers.workload_templates import runtimes
from renderer.layers.workload_templates.pieces import (
    CONTAINER_SECURITY,
    JOBSET_NAME_MAX,
    RAYJOB_NAME_MAX,
    TRAINJOB_NAME_MAX,
    Target,
    common_labels,
    container_env,
    container_spec,
    defaults,
    finished_ttl,
    gpu_resources,
    host,
    image_ref,
    memory_of,
    metadata,
    pod_spec,
    pod_template,
    volumes_and_mounts,
)
from renderer.model.nodes import PREFIX

MASTER_PORT = 29500
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def job(target: Target) -> dict[str, Any]:
    """One pod with one GPU unit: the guide's clean Job."""
    resources, claims = gpu_resources(target, 1)
    volumes, mounts = volumes_and_mounts(target, memory_of(resources))
    container = container_spec(
        "main",
        image_ref(target.team, "train"),
        resources,
        mounts,
        container_env(target),
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
    spec["ttlSecondsAfterFinished"] = finished_ttl(target.team)
    spec["template"] = pod_template(
        target, "Job", "main", pod_spec(target, [container], volumes, claims)
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(target, "Job", target.name("job")),
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


def jobset(target: Target) -> dict[str, Any]:
    """A leader and workers Job, a pod each per node share, admitted by Kueue as one Workload
    (all pods or none) and restarted as a whole when a pod fails."""
    pods = 2
    units = target.units_per_pod(pods)
    workers = pods - 1
    image = image_ref(target.team, "train")

    def replicated(role: str, count: int, rank: str | None) -> dict[str, Any]:
        resources, claims = gpu_resources(target, units, distributed=True)
        volumes, mounts = volumes_and_mounts(target, memory_of(resources))
        env = [
            *container_env(target),
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
        container = container_spec(
            "trainer",
            image,
            resources,
            mounts,
            env,
            command=["/bin/sh", "-c", DISTRIBUTED_COMMAND],
            ports=[{"name": "rendezvous", "containerPort": MASTER_PORT}],
        )
        template = pod_template(
            target, "JobSet", "trainer", pod_spec(target, [container], volumes, claims)
        )
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
    spec["ttlSecondsAfterFinished"] = finished_ttl(target.team)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": metadata(target, "JobSet", target.name("dist", JOBSET_NAME_MAX)),
        "spec": spec,
    }


PATCH_MANAGER = "gpuplane.dev/workload-template"
"""The TrainJob's own runtime patch (`spec.runtimePatches` is a map keyed by `manager`, which
Trainer requires to be a domain-prefixed path); Kueue adds its own, `kueue.x-k8s.io/manager`,
with the flavor's node labels and tolerations on admission."""


def trainjob(target: Target) -> dict[str, Any]:
    """A TrainJob on the platform's `torch-distributed` runtime: `numNodes` pods of the pool's
    GPUs, sized as the JobSet's, admitted by Kueue as one Workload (the JobSet Trainer builds,
    `trainjob_controller.go` `podSets`). What a TrainJob cannot say itself (the pod's labels,
    annotations, pool and volumes) goes into its runtime patch; the restricted pod, the gang
    restart and the TTL are the runtime's."""
    pods = 2
    units = target.units_per_pod(pods)
    resources, claims = gpu_resources(target, units, distributed=True)
    assert not claims  # DRA pools get no TrainJob: a runtime patch cannot add resourceClaims
    volumes, mounts = volumes_and_mounts(target, memory_of(resources))
    node = runtimes.NODE
    pod_patch = {
        "nodeSelector": {f"{PREFIX}pool": target.pool.name},
        "volumes": volumes,
        "containers": [{"name": node, "volumeMounts": mounts}],
    }
    pod = pod_template(target, "TrainJob", node, pod_patch)
    patch = {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": common_labels(target)},
                "spec": {
                    "replicatedJobs": [{"name": node, "template": {"spec": {"template": pod}}}]
                },
            }
        },
    }
    spec: dict[str, Any] = {
        "suspend": True,
        "runtimeRef": {
            "apiGroup": runtimes.API_GROUP,
            "kind": runtimes.RUNTIME_KIND,
            "name": runtimes.TORCH_RUNTIME,
        },
        "trainer": {
            "image": image_ref(target.team, "train"),
            # torchrun takes its nodes, rank and rendezvous from the PET_* variables Trainer sets
            "command": ["torchrun", "/app/train.py"],
            "env": container_env(target),
            "numNodes": pods,
            "numProcPerNode": units,
            "resourcesPerNode": resources,
        },
        "runtimePatches": [patch],
    }
    return {
        "apiVersion": runtimes.API_VERSION,
        "kind": "TrainJob",
        "metadata": metadata(target, "TrainJob", target.name("train", TRAINJOB_NAME_MAX)),
        "spec": spec,
    }


RAY_PORTS = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001))
SUBMITTER_CPU = Decimal("0.5")
SUBMITTER_MEMORY = Decimal(2**30)


def rayjob(target: Target) -> dict[str, Any]:
    """A Ray cluster for one job: a head without GPUs, a worker group with the pool's GPUs, and a
    submitter pod (K8sJobMode) that reaches the head inside the namespace; Kueue admits the
    three as one Workload and KubeRay deletes the cluster when the job ends."""
    image = image_ref(target.team, "ray")
    pods = 2 if target.most >= 2 else 1
    units = target.units_per_pod(pods)
    cpu, memory = defaults(target.team)

    head_requests, head_limits = host(cpu, memory)
    head_resources = {"requests": head_requests, "limits": head_limits}
    volumes, mounts = volumes_and_mounts(target, memory)
    head = container_spec(
        "ray-head",
        image,
        head_resources,
        mounts,
        container_env(target),
        ports=[{"name": name, "containerPort": port} for name, port in RAY_PORTS],
    )
    resources, claims = gpu_resources(target, units, distributed=pods > 1)
    worker_volumes, worker_mounts = volumes_and_mounts(target, memory_of(resources))
    worker = container_spec("ray-worker", image, resources, worker_mounts, container_env(target))
    submit_requests, submit_limits = host(SUBMITTER_CPU, SUBMITTER_MEMORY)
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
    spec["ttlSecondsAfterFinished"] = finished_ttl(target.team)
    spec["rayClusterSpec"] = {
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0", "num-gpus": "0"},
            "template": pod_template(
                target, "RayJob", "ray-head", pod_spec(target, [head], volumes, [], None)
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
                "template": pod_template(
                    target,
                    "RayJob",
                    "ray-worker",
                    pod_spec(target, [worker], worker_volumes, claims, None),
                ),
            }
        ],
    }
    submitter_spec = pod_spec(target, [submitter], [], [])
    del submitter_spec["volumes"]
    spec["submitterPodTemplate"] = pod_template(
        target, "RayJob", "ray-job-submitter", submitter_spec
    )
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": metadata(target, "RayJob", target.name("ray", RAYJOB_NAME_MAX)),
        "spec": spec,
    }
