"""The pods Kubeflow Trainer v2.3.0 makes of a TrainJob and its runtime, for the tests.

Written from Trainer's source at v2.3.0, independently of gpuplane's `fit` reader:

- `pkg/runtime/core/trainingruntime.go` `newRuntimeInfo`: the runtime's JobSet template with
  each `runtimePatches` entry's `trainingRuntimeSpec.template.spec` strategic-merged in
  (`mergeRuntimePatches`, JobSetSpec's patch strategy: maps merge, `replicatedJobs`,
  `containers`, `volumes`, `env`, `volumeMounts` and `ports` merge by `name` (ports by
  `containerPort`), other lists are replaced); the JobSet's labels are the template's and the
  patches' `template.metadata.labels`; the trainer step (label
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer`) runs `numNodes` pods (the TrainJob's,
  else the runtime's `mlPolicy.numNodes`), its `node` container's resources merged with the
  TrainJob's `resourcesPerNode` (`MergeResourceRequirements`: key by key);
- `pkg/runtime/framework/plugins/torch/torch.go` `EnforceMLPolicy`: the `node` container gets
  the TrainJob's env, then `PET_NNODES`, `PET_NPROC_PER_NODE`, `PET_NODE_RANK` (the Job's
  completion index), `PET_MASTER_ADDR` (`<trainjob>-node-0-0.<trainjob>`) and
  `PET_MASTER_PORT` (29500), and container port 29500;
- `pkg/runtime/framework/plugins/jobset/builder.go` `Trainer`: the TrainJob's image, command
  and args replace the `node` container's.

Then the Job controller makes each pod from its Job's pod template, labelled and owned by the
Job (what Kueue and the admission policies see).
"""

from __future__ import annotations

import copy
from typing import Any

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
MASTER_PORT = 29500

_BY_NAME = frozenset({"replicatedJobs", "containers", "volumes", "env", "volumeMounts"})


def merge(base: Any, patch: Any, key: str = "") -> Any:
    """A strategic merge patch of the fields a TrainJob's runtime patch carries."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for name, value in patch.items():
            out[name] = merge(out[name], value, name) if name in out else copy.deepcopy(value)
        return out
    if key in _BY_NAME and isinstance(base, list) and isinstance(patch, list):
        out_list = [copy.deepcopy(item) for item in base]
        for item in patch:
            at = [i for i, old in enumerate(out_list) if old.get("name") == item.get("name")]
            if at:
                out_list[at[0]] = merge(out_list[at[0]], item)
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    return copy.deepcopy(patch)


def _upsert(items: list[dict[str, Any]], new: dict[str, Any], key: str = "name") -> None:
    for i, old in enumerate(items):
        if old.get(key) == new.get(key):
            items[i] = new
            return
    items.append(new)


def jobset(runtime: dict[str, Any], trainjob: dict[str, Any]) -> dict[str, Any]:
    """The JobSet Trainer builds (its spec, name and labels)."""
    spec = copy.deepcopy(runtime["spec"]["template"]["spec"])
    labels = dict(runtime["spec"]["template"].get("metadata", {}).get("labels", {}))
    for patch in trainjob["spec"].get("runtimePatches", []):
        template = patch.get("trainingRuntimeSpec", {}).get("template", {})
        labels.update(template.get("metadata", {}).get("labels", {}))
        if "spec" in template:
            spec = merge(spec, template["spec"])
    name = trainjob["metadata"]["name"]
    trainer = trainjob["spec"].get("trainer", {})
    for job in spec["replicatedJobs"]:
        job_labels = job["template"].get("metadata", {}).get("labels", {})
        if job_labels.get(ANCESTOR) != "trainer":
            continue
        count = trainer.get("numNodes", runtime["spec"]["mlPolicy"].get("numNodes", 1))
        job["replicas"] = 1
        job["template"]["spec"]["parallelism"] = job["template"]["spec"]["completions"] = count
        pod = job["template"]["spec"]["template"]["spec"]
        (node,) = [c for c in pod["containers"] if c["name"] == "node"]
        for field in ("image", "command", "args"):
            if field in trainer:
                node[field] = trainer[field]
        env = node.setdefault("env", [])
        for var in trainer.get("env", []):
            _upsert(env, var)
        per_node = trainer.get("resourcesPerNode", {})
        resources = node.setdefault("resources", {})
        for part in ("requests", "limits"):
            if part in per_node:
                resources[part] = {**resources.get(part, {}), **per_node[part]}
        procs = trainer.get("numProcPerNode", "auto")
        for var in (
            {"name": "PET_NNODES", "value": str(count)},
            {"name": "PET_NPROC_PER_NODE", "value": str(procs)},
            {
                "name": "PET_NODE_RANK",
                "valueFrom": {
                    "fieldRef": {
                        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                    }
                },
            },
            {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"},
            {"name": "PET_MASTER_PORT", "value": str(MASTER_PORT)},
        ):
            _upsert(env, var)
        _upsert(node.setdefault("ports", []), {"containerPort": MASTER_PORT}, "containerPort")
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": trainjob["metadata"]["namespace"],
            "labels": labels,
        },
        "spec": spec,
    }


def pods(runtime: dict[str, Any], trainjob: dict[str, Any]) -> list[tuple[str, int, Any]]:
    """(replicated Job, pods, pod template) of every Job of the TrainJob's JobSet."""
    built = jobset(runtime, trainjob)
    out = []
    for job in built["spec"]["replicatedJobs"]:
        template = job["template"]["spec"]
        count = template.get("parallelism", 1) * job.get("replicas", 1)
        out.append((job["name"], count, template["template"]))
    return out


def pod_of(template: dict[str, Any], namespace: str, job: str) -> dict[str, Any]:
    """A pod the Job controller creates from a Job's pod template."""
    meta = copy.deepcopy(template.get("metadata", {}))
    meta["name"] = f"{job}-0-abcde"
    meta["namespace"] = namespace
    meta.setdefault("labels", {})["batch.kubernetes.io/job-name"] = job
    meta["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job,
            "uid": "00000000-0000-0000-0000-000000000001",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(template["spec"]),
    }
