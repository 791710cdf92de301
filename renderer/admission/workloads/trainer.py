"""Kubeflow's kinds as Kueue v0.19.2 reads them: the training operator's v1 jobs and the MPI
Operator's MPIJob (`pkg/controller/jobs/kubeflow/kubeflowjob` `PodSets`, `pkg/controller/jobs/
mpijob` `PodSets`), and Kubeflow Trainer v2's TrainJob, whose pod sets are those of the JobSet
the Trainer builds from its runtime (`pkg/controller/jobs/trainjob` `podSets`: the child JobSet's
`PodSets`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from renderer.admission.workloads.podsets import (
    EMPTY_RESOURCES,
    BadField,
    Container,
    FieldPath,
    PodSet,
    Requirement,
    Toleration,
    read_affinity,
    read_count,
    read_field,
    read_pod_set,
    read_resources,
    read_strings,
    read_tolerations,
)

_Read = tuple[list[PodSet], dict[str, Any]]

KUBEFLOW_REPLICAS: Mapping[str, tuple[str, tuple[str, ...]]] = MappingProxyType(
    {
        "PyTorchJob": ("pytorchReplicaSpecs", ("Master", "Worker")),
        "TFJob": ("tfReplicaSpecs", ("Chief", "Master", "PS", "Worker", "Evaluator")),
        "XGBoostJob": ("xgbReplicaSpecs", ("Master", "Worker")),
        "PaddleJob": ("paddleReplicaSpecs", ("Master", "Worker")),
        "JAXJob": ("jaxReplicaSpecs", ("Worker",)),
        "MXJob": (
            "mxReplicaSpecs",
            ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
        ),
        "MPIJob": ("mpiReplicaSpecs", ("Launcher", "Worker")),
    }
)
"""Kubeflow training jobs: the replica-spec field and Kueue's `OrderedReplicaTypes` (each
kind's `JobControl.OrderedReplicaTypes`; the MPIJob's `orderedReplicaTypes`)."""


def kubeflow(kind: str) -> Any:
    """A reader for one Kubeflow kind: one pod set per replica type present, in Kueue's order,
    named by the type in lower case (`kueue.NewPodSetReference`), `replicas` pods (default 1:
    `podsCount`, `ptr.Deref(Replicas, 1)`)."""
    field, ordered = KUBEFLOW_REPLICAS[kind]

    def read(data: Any) -> _Read:
        specs = read_field(data, ("spec", field), dict, required=True)
        pod_sets = []
        for replica_type in ordered:
            if specs.get(replica_type) is None:
                continue
            here = ("spec", field, replica_type)
            read_field(data, here, dict, required=True)
            count = read_count(data, (*here, "replicas"), 1)
            pod_sets.append(read_pod_set(data, (*here, "template"), replica_type.lower(), count))
        unknown = sorted(set(specs) - set(ordered))
        notes = []
        if unknown:
            notes.append(
                f"replica types {', '.join(unknown)} are not among {kind}'s ({', '.join(ordered)}); "
                "Kueue does not count them"
            )
        if not pod_sets:
            raise BadField(("spec", field), f"spec.{field} holds none of {', '.join(ordered)}")
        return pod_sets, {"notes": tuple(notes)}

    return read


# --- TrainJob ----------------------------------------------------------------------------------

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
"""Trainer's `constants.LabelTrainJobAncestor` on a runtime's replicated Job."""
TRAINER_STEP = "trainer"
INITIALIZER_STEPS = ("dataset-initializer", "model-initializer")
NODE = "node"
"""Trainer's `constants.Node`: the trainer container's (and the MPI node job's) name."""

_NAMED_LISTS = frozenset({"replicatedJobs", "containers", "initContainers", "volumes", "env"})
"""Lists a strategic merge patch merges item by item on `name` (JobSet's `replicatedJobs`,
the pod spec's containers and volumes); every other list is replaced whole."""


def strategic_merge(base: Any, patch: Any, key: str = "") -> Any:
    """A strategic merge patch of the fields a TrainJob's runtime patch may carry: mappings
    merge (null deletes), name-keyed lists merge by name, other lists and scalars replace."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for name, value in patch.items():
            if value is None:
                merged.pop(name, None)
            elif name in merged:
                merged[name] = strategic_merge(merged[name], value, str(name))
            else:
                merged[name] = value
        return merged
    if key in _NAMED_LISTS and isinstance(base, list) and isinstance(patch, list):
        merged_list = list(base)
        names = [item.get("name") if isinstance(item, dict) else None for item in merged_list]
        for item in patch:
            name = item.get("name") if isinstance(item, dict) else None
            if name is not None and name in names:
                at = names.index(name)
                merged_list[at] = strategic_merge(merged_list[at], item)
            else:
                merged_list.append(item)
                names.append(name)
        return merged_list
    return patch


def _runtime(data: Any, others: Sequence[Any]) -> tuple[str, str, Any | None]:
    kind = read_field(data, ("spec", "runtimeRef", "kind"), str) or "ClusterTrainingRuntime"
    name = read_field(data, ("spec", "runtimeRef", "name"), str) or "?"
    for other in others:
        if (
            isinstance(other, dict)
            and other.get("kind") == kind
            and str(other.get("apiVersion", "")).startswith("trainer.kubeflow.org/")
            and isinstance(other.get("metadata"), dict)
            and other["metadata"].get("name") == name
        ):
            return kind, name, other
    return kind, name, None


def trainjob(data: Any, others: Sequence[Any] = ()) -> _Read:
    """A Kubeflow Trainer v2 TrainJob. Kueue admits the JobSet the Trainer builds from the
    runtime (v2.3.0 `pkg/runtime/core/trainingruntime.go` `newRuntimeInfo` and the JobSet
    plugin's `Build`), so with the runtime in the file every replicatedJob is a pod set:
    `runtimePatches` strategic-merged into the runtime's JobSet template (`mergeRuntimePatches`),
    the trainer step (`trainjob-ancestor-step: trainer`) at 1 replica and `numNodes` pods
    (the TrainJob's, else the runtime's `mlPolicy.numNodes`, default 1; an MPI runtime's `node`
    job one fewer with `runLauncherAsNode`), its `node` container's resources merged with
    `resourcesPerNode`; initializer steps at 1 replica; every job's parallelism = completions =
    that count (`SyncParallelCount`), so Kueue counts replicas x count pods per job. Without
    the runtime (a built-in ClusterTrainingRuntime), the trainer's `node` job only."""
    read_field(data, ("spec", "trainer"), dict)
    kind, name, runtime = _runtime(data, others)
    if runtime is None:
        pod_sets, notes = _trainer_node_only(data)
        notes.append(
            f"{kind} {name} is not in the file: fit counts the trainer's `node` job only, not "
            "the runtime's other jobs (its initializers)"
        )
        return pod_sets, {"notes": tuple(notes)}
    return _from_runtime(data, runtime, kind, name)


def _from_runtime(data: Any, runtime: Any, kind: str, name: str) -> _Read:
    jobset_spec = copy.deepcopy(
        read_field(runtime, ("spec", "template", "spec"), dict, required=True)
    )
    for p, _ in enumerate(read_field(data, ("spec", "runtimePatches"), list) or []):
        patch = read_field(
            data, ("spec", "runtimePatches", p, "trainingRuntimeSpec", "template", "spec"), dict
        )
        if patch is not None:
            jobset_spec = strategic_merge(jobset_spec, patch)
    ml_policy = read_field(runtime, ("spec", "mlPolicy"), dict)
    mpi = ml_policy.get("mpi") if isinstance(ml_policy, dict) else None
    launcher_as_node = isinstance(mpi, dict) and mpi.get("runLauncherAsNode") is True
    num_nodes = read_field(data, ("spec", "trainer", "numNodes"), int)
    per_node = ("spec", "trainer", "resourcesPerNode")
    merged = {"spec": jobset_spec}
    jobs = read_field(merged, ("spec", "replicatedJobs"), list, required=True)
    pod_sets: list[PodSet] = []
    for index, _ in enumerate(jobs):
        here = ("spec", "replicatedJobs", index)
        job_name = read_field(merged, (*here, "name"), str, required=True)
        ancestor = read_strings(merged, (*here, "template", "metadata", "labels")).get(ANCESTOR)
        replicas = read_count(merged, (*here, "replicas"), 1)
        count = read_count(merged, (*here, "template", "spec", "parallelism"), 1)
        if ancestor in (TRAINER_STEP, *INITIALIZER_STEPS):
            replicas = 1
        if ancestor == TRAINER_STEP and ml_policy is not None:
            count = read_count(runtime, ("spec", "mlPolicy", "numNodes"), 1)
        if num_nodes is not None:
            if mpi is not None and job_name == NODE:
                count = max(num_nodes - 1, 1) if launcher_as_node else num_nodes
            elif mpi is None and ancestor == TRAINER_STEP:
                count = num_nodes
        trainer = ancestor == TRAINER_STEP and ml_policy is not None
        if read_field(data, per_node, dict) is not None and (
            trainer or (launcher_as_node and job_name == NODE)
        ):
            _merge_resources(
                merged, (*here, "template", "spec", "template", "spec"), data, per_node
            )
        template = (*here, "template", "spec", "template")
        pod_set = read_pod_set(merged, template, job_name.lower(), replicas * count)
        pod_sets.append(pod_set)
    if not pod_sets:
        raise BadField(("spec", "runtimeRef"), f"{kind} {name} has no replicatedJobs")
    return pod_sets, {
        "notes": (
            f"pod sets are the replicatedJobs of {kind} {name} from the file, as the Trainer "
            "builds its JobSet",
        )
    }


def _merge_resources(merged: Any, pod_spec: FieldPath, data: Any, per_node: FieldPath) -> None:
    """`MergeResourceRequirements`: the `node` container's resources, patched with the
    TrainJob's `resourcesPerNode` (requests and limits merged resource by resource)."""
    containers = read_field(merged, (*pod_spec, "containers"), list) or []
    override = read_field(data, per_node, dict) or {}
    for c, container in enumerate(containers):
        if isinstance(container, dict) and container.get("name") == NODE:
            base = (
                container.get("resources") if isinstance(container.get("resources"), dict) else {}
            )
            containers[c] = {**container, "resources": strategic_merge(base, override)}
            return


def _trainer_node_only(data: Any) -> tuple[list[PodSet], list[str]]:
    """The trainer's `node` job alone: `numNodes` pods of `resourcesPerNode`."""
    trainer = ("spec", "trainer")
    notes = []
    count = read_field(data, (*trainer, "numNodes"), int)
    if count is None:
        count = 1
        notes.append("spec.trainer.numNodes is not set: the runtime decides; fit assumes 1 node")
    container = Container(
        name=NODE,
        role="container",
        requests=MappingProxyType(read_resources(data, (*trainer, "resourcesPerNode", "requests"))),
        limits=MappingProxyType(read_resources(data, (*trainer, "resourcesPerNode", "limits"))),
    )
    selector: dict[str, str] = {}
    tolerations: list[Toleration] = []
    affinity: list[tuple[Requirement, ...]] = []
    annotations: dict[str, str] = {}
    for spec in trainjob_node_specs(data):
        selector.update(read_strings(data, (*spec, "nodeSelector")))
        tolerations.extend(read_tolerations(data, spec))
        affinity.extend(read_affinity(data, spec))
        if spec[-1] == "spec":
            annotations.update(read_strings(data, (*spec[:-1], "metadata", "annotations")))
    pod_set = PodSet(
        name=NODE,
        count=count,
        min_count=None,
        containers=(container,),
        overhead=EMPTY_RESOURCES,
        node_selector=MappingProxyType(selector),
        affinity=tuple(affinity),
        tolerations=tuple(tolerations),
        priority_class_name=None,
        resource_claims=(),
        path=trainer,
        annotations=MappingProxyType(annotations),
    )
    return [pod_set], notes


def trainjob_node_specs(data: Any) -> list[FieldPath]:
    """Pod spec patches aimed at the `node` job: `runtimePatches` (Trainer v2.1+) and the older
    `podSpecOverrides` / `podTemplateOverrides` lists with `targetJobs`."""
    found: list[FieldPath] = []
    patches = read_field(data, ("spec", "runtimePatches"), list) or []
    for p, _ in enumerate(patches):
        jobs_path = (
            "spec",
            "runtimePatches",
            p,
            "trainingRuntimeSpec",
            "template",
            "spec",
            "replicatedJobs",
        )
        for j, job in enumerate(read_field(data, jobs_path, list) or []):
            if isinstance(job, dict) and job.get("name") == NODE:
                found.append((*jobs_path, j, "template", "spec", "template", "spec"))
    for field in ("podSpecOverrides", "podTemplateOverrides"):
        for o, item in enumerate(read_field(data, ("spec", field), list) or []):
            if not isinstance(item, dict):
                continue
            targets = item.get("targetJobs") or []
            if any(isinstance(t, dict) and t.get("name") == NODE for t in targets):
                base = ("spec", field, o)
                found.append((*base, "spec") if field == "podTemplateOverrides" else base)
    return found
