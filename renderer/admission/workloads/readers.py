"""Kueue's job integrations, offline: one reader per kind turns the job's YAML into the pod
sets and counts Kueue's Workload would hold (`pkg/controller/jobs/*` in kubernetes-sigs/kueue)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_CEILING, Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.workloads import appwrapper as readers_appwrapper
from renderer.admission.workloads import ray as readers_ray
from renderer.admission.workloads import trainer as readers_trainer
from renderer.admission.workloads.podsets import (
    EMPTY_RESOURCES,
    BadField,
    Container,
    FieldPath,
    PodSet,
    Unreadable,
    Workload,
    job_pod_count,
    path_text,
    read_affinity,
    read_count,
    read_field,
    read_pod_set,
    read_strings,
    read_tolerations,
)
from renderer.model import quantity
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"


# --- kinds -------------------------------------------------------------------------------------

_Reader = Callable[[Any], tuple[list[PodSet], dict[str, Any]]]
"""A kind's reader: its pod sets, and Workload fields beyond the common ones."""


def _job(
    data: Any, spec: FieldPath = ("spec",), annotations: FieldPath = ("metadata", "annotations")
) -> tuple[list[PodSet], dict[str, Any]]:
    read_field(data, spec, dict, required=True)
    count = job_pod_count(data, spec)
    minimum = read_strings(data, annotations).get(MIN_PARALLELISM)
    min_count = None
    if minimum is not None:
        try:
            min_count = max(1, min(int(minimum), count))
        except ValueError:
            raise BadField(
                (*annotations, MIN_PARALLELISM), f"{MIN_PARALLELISM} must be an integer"
            ) from None
    return [read_pod_set(data, (*spec, "template"), "main", count, min_count=min_count)], {}


def _cronjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    pod_sets, _ = _job(
        data, ("spec", "jobTemplate", "spec"), ("spec", "jobTemplate", "metadata", "annotations")
    )
    return pod_sets, {
        "labels": read_strings(data, ("spec", "jobTemplate", "metadata", "labels")),
        "notes": ("each run of the CronJob is a Job of its own; fit checks one run",),
    }


def _pod(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    notes = []
    group = read_strings(data, ("metadata", "labels")).get(POD_GROUP_LABEL)
    if group:
        total = read_strings(data, ("metadata", "annotations")).get(POD_GROUP_COUNT, "?")
        notes.append(
            f"this pod belongs to pod group {group} ({total} pods in all); Kueue admits the group "
            "as one Workload, fit checks this pod only"
        )
    return [read_pod_set(data, (), "main", 1, from_pod=True)], {"notes": tuple(notes)}


def _pod_template(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return [read_pod_set(data, ("template",), "main", 1, from_pod=True)], {}


def _deployment(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    replicas = read_count(data, ("spec", "replicas"), 1)
    return [read_pod_set(data, ("spec", "template"), "main", 1, from_pod=True)], {
        "replicas": replicas,
        "replica_unit": "pod",
        "notes": ("Kueue admits each pod of a Deployment as a Workload of its own",),
    }


def _statefulset(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    replicas = read_count(data, ("spec", "replicas"), 1)
    return [read_pod_set(data, ("spec", "template"), "main", replicas)], {
        "notes": ("Kueue admits the pods of a StatefulSet together, as one pod group",),
    }


def _jobset(data: Any, spec: FieldPath = ("spec",)) -> tuple[list[PodSet], dict[str, Any]]:
    jobs = read_field(data, (*spec, "replicatedJobs"), list, required=True)
    pod_sets = []
    for index, _ in enumerate(jobs):
        here = (*spec, "replicatedJobs", index)
        name = read_field(data, (*here, "name"), str, required=True)
        replicas = read_count(data, (*here, "replicas"), 1)
        job_spec = (*here, "template", "spec")
        read_field(data, job_spec, dict, required=True)
        count = replicas * job_pod_count(data, job_spec)
        pod_sets.append(read_pod_set(data, (*job_spec, "template"), name.lower(), count))
    if not pod_sets:
        raise BadField((*spec, "replicatedJobs"), "the JobSet has no replicatedJobs")
    return pod_sets, {}


_kubeflow = readers_trainer.kubeflow
_raycluster = readers_ray.raycluster
_rayservice = readers_ray.rayservice
_rayjob = readers_ray.rayjob
KUBEFLOW_REPLICAS = readers_trainer.KUBEFLOW_REPLICAS


def _leaderworkerset(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """Kueue's `leaderworkerset.podSets`: with a `leaderTemplate`, a `leader` pod set of 1 and
    a `worker` pod set of size - 1; without one, a single `main` pod set of `size` pods from the
    worker template. Each group (`replicas` of them) is a Workload of its own."""
    replicas = read_count(data, ("spec", "replicas"), 1)
    lwt = ("spec", "leaderWorkerTemplate")
    size = read_count(data, (*lwt, "size"), 1)
    worker = (*lwt, "workerTemplate")
    if read_field(data, (*lwt, "leaderTemplate"), dict) is not None:
        pod_sets = [
            read_pod_set(data, (*lwt, "leaderTemplate"), "leader", 1),
            read_pod_set(data, worker, "worker", max(size - 1, 0)),
        ]
    else:
        pod_sets = [read_pod_set(data, worker, "main", size)]
    return pod_sets, {
        "replicas": replicas,
        "replica_unit": "group",
        "notes": ("Kueue admits each leader-worker group as a Workload of its own",),
    }


def _sandbox(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return [read_pod_set(data, ("spec", "podTemplate"), "main", 1)], {}


def _java_memory(text: Any, path: FieldPath) -> Decimal:
    """Spark's JVM notation: 512m, 2g, 1t (binary units), or bytes."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
    raw = str(text).strip().lower().removesuffix("b")
    try:
        if raw and raw[-1] in units:
            return Decimal(raw[:-1]) * units[raw[-1]]
        return Decimal(raw)
    except ArithmeticError:
        raise BadField(path, f"{path_text(path)}: not a JVM memory size: {text!r}") from None


def _spark(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """SparkApplication: a driver and `executor.instances` executors, sized the way the Spark
    operator builds their pods (cores, memory plus overhead, an optional GPU)."""
    factor_text = read_field(data, ("spec", "memoryOverheadFactor"), (str, int, float))
    language = read_field(data, ("spec", "type"), str) or "Scala"
    default_factor = Decimal("0.1") if language in ("Java", "Scala") else Decimal("0.4")
    factor = Decimal(str(factor_text)) if factor_text is not None else default_factor
    pod_sets = []
    for role in ("driver", "executor"):
        here = ("spec", role)
        read_field(data, here, dict, required=True)
        cores = read_field(data, (*here, "coreRequest"), (str, int, float))
        if cores is None:
            cores = read_field(data, (*here, "cores"), (int, float)) or 1
        requests: dict[str, Decimal] = {"cpu": quantity.parse(cores)}
        limits: dict[str, Decimal] = {}
        if (core_limit := read_field(data, (*here, "coreLimit"), (str, int, float))) is not None:
            limits["cpu"] = quantity.parse(core_limit)
        memory = _java_memory(
            read_field(data, (*here, "memory"), (str, int)) or "1g", (*here, "memory")
        )
        overhead_text = read_field(data, (*here, "memoryOverhead"), (str, int))
        if overhead_text is not None:
            overhead = _java_memory(overhead_text, (*here, "memoryOverhead"))
        else:
            overhead = max((memory * factor).to_integral_value(ROUND_CEILING), Decimal(384 * 2**20))
        requests["memory"] = memory + overhead
        limits["memory"] = memory + overhead
        gpu = read_field(data, (*here, "gpu"), dict)
        if gpu and gpu.get("name"):
            requests[str(gpu["name"])] = limits[str(gpu["name"])] = Decimal(
                int(gpu.get("quantity", 1))
            )
        count = 1 if role == "driver" else read_count(data, (*here, "instances"), 1)
        container = Container(
            f"spark-{role}", "container", MappingProxyType(requests), MappingProxyType(limits)
        )
        pod_sets.append(
            PodSet(
                name=role,
                count=count,
                min_count=None,
                containers=(container,),
                overhead=EMPTY_RESOURCES,
                node_selector=MappingProxyType(read_strings(data, (*here, "nodeSelector"))),
                affinity=read_affinity(data, here),
                tolerations=read_tolerations(data, here),
                priority_class_name=None,
                resource_claims=(),
                path=here,
            )
        )
    return pod_sets, {
        "notes": (
            "Spark pod sizes follow the Spark operator's rules for cores, memory and memory overhead",
        )
    }


READERS: Mapping[tuple[str, str], _Reader] = MappingProxyType(
    {
        ("batch", "Job"): _job,
        ("batch", "CronJob"): _cronjob,
        ("", "Pod"): _pod,
        ("", "PodTemplate"): _pod_template,
        ("apps", "Deployment"): _deployment,
        ("apps", "ReplicaSet"): _deployment,
        ("apps", "StatefulSet"): _statefulset,
        ("jobset.x-k8s.io", "JobSet"): _jobset,
        ("ray.io", "RayJob"): _rayjob,
        ("ray.io", "RayCluster"): _raycluster,
        ("ray.io", "RayService"): _rayservice,
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leaderworkerset,
        ("workload.codeflare.dev", "AppWrapper"): readers_appwrapper.appwrapper,
        ("sparkoperator.k8s.io", "SparkApplication"): _spark,
        ("agents.x-k8s.io", "Sandbox"): _sandbox,
        **{("kubeflow.org", kind): _kubeflow(kind) for kind in KUBEFLOW_REPLICAS},
    }
)
"""Every kind fit reads, by API group and kind."""

POD_BY_POD: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("argoproj.io", "Workflow"): "its steps",
        ("tekton.dev", "PipelineRun"): "its tasks",
        ("tekton.dev", "TaskRun"): "its steps",
    }
)
"""Workload kinds Kueue admits pod by pod (its pod integration): no pod sets to read up front."""

_FileReader = Callable[[Any, Sequence[Any]], tuple[list[PodSet], dict[str, Any]]]
"""A reader that also reads the file's other documents (a TrainJob's TrainingRuntime)."""

FILE_READERS: Mapping[tuple[str, str], _FileReader] = MappingProxyType(
    {("trainer.kubeflow.org", "TrainJob"): readers_trainer.trainjob}
)
"""Kinds whose pod sets depend on other objects of the file; used instead of READERS' entry."""

NO_INTEGRATION: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        ("serving.kserve.io", "InferenceService"): "Deployment's pods",
        ("serving.kserve.io", "LLMInferenceService"): "Deployments' pods",
        ("serving.knative.dev", "Service"): "Revisions' Deployments' pods",
        ("batch.volcano.sh", "Job"): "pods",
        ("batch.volcano.sh", "CronJob"): "Jobs' pods",
    }
)
"""Workload kinds Kueue v0.19.2 has no integration for (`pkg/controller/jobs/*`) and whose pods
fit cannot read up front: another controller builds them. What Kueue queues instead, one by one
(its deployment or pod integration): the value."""

VOLCANO_GROUP = "batch.volcano.sh"

SUPPORTED_KINDS = tuple(sorted({kind for _, kind in (*READERS, *FILE_READERS)}))


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def is_workload(api_version: str, kind: str) -> bool:
    """Whether objects of this apiVersion and kind make pods fit could be asked about: a kind
    fit reads, one Kueue admits pod by pod, one it cannot see into, or a kind fit reads under
    another API group (a mistake worth an answer, not silence)."""
    key = (_group(api_version), kind)
    known = (*READERS, *FILE_READERS, *POD_BY_POD, *NO_INTEGRATION)
    return key in known or kind in SUPPORTED_KINDS


def workload_from(document: Any, others: Sequence[Any] = ()) -> Workload | Unreadable:
    """The Workload a document describes, or why it does not describe one fit can check.

    `others` are the file's other documents, as `kubectl apply -f` would create them beside it
    (a TrainJob's TrainingRuntime); FILE_READERS' readers get them."""
    if not isinstance(document, dict):
        return Unreadable("", "the document is not a Kubernetes object (a mapping)", False)
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return Unreadable(
            str(kind or ""),
            "the document has no apiVersion and kind: not a Kubernetes object",
            False,
        )
    key = (_group(api_version), kind)
    shown = f"{api_version} {kind}"
    if key in POD_BY_POD:
        return Unreadable(
            shown,
            f"Kueue admits the pods of a {kind} one at a time as they start ({POD_BY_POD[key]}); "
            "fit checks a pod: put the pod template of one step in a Pod or PodTemplate file",
            True,
        )
    if key in NO_INTEGRATION:
        return Unreadable(
            shown,
            f"fit cannot see the pods {shown} creates; Kueue has no integration for it (its "
            f"{NO_INTEGRATION[key]} are queued one by one)",
            True,
        )
    file_reader = FILE_READERS.get(key)
    reader = READERS.get(key)
    if file_reader is not None:
        reader = _with_others(file_reader, others)
    if reader is None:
        known = kind in SUPPORTED_KINDS
        why = (
            f"{kind} is read from its usual API group, not {api_version}"
            if known
            else f"{shown} is not a workload: fit checks {', '.join(SUPPORTED_KINDS)}"
        )
        return Unreadable(shown, why, known)
    try:
        name = _metadata_name(document)
        pod_sets, extra = reader(document)
        labels = read_strings(document, ("metadata", "labels"))
        annotations = read_strings(document, ("metadata", "annotations"))
        namespace = read_field(document, ("metadata", "namespace"), str)
        template_labels = _template_labels(document, pod_sets)
    except BadField as bad:
        return Unreadable(shown, bad.message, True, bad.path)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as err:
        return Unreadable(shown, f"cannot read the {kind}: {err}", True)
    extra_labels: Mapping[str, str] = extra.get("labels", {})
    return Workload(
        api_version=api_version,
        kind=kind,
        name=name,
        namespace=namespace or None,
        queue_name=_first(QUEUE_LABEL, labels, extra_labels, annotations, template_labels),
        # Kueue reads the priority label of the object it makes the Workload of
        # (`jobframework.WorkloadPriorityClassName`), and the priority policy the object's own:
        # a label only on a pod template counts only where the template is the object's pods
        priority_class=_first(
            PRIORITY_LABEL,
            labels,
            extra_labels,
            template_labels if key in TEMPLATE_IS_THE_POD else {},
        ),
        pod_sets=tuple(pod_sets),
        replicas=int(extra.get("replicas", 1)),
        replica_unit=str(extra.get("replica_unit", "workload")),
        notes=tuple(extra.get("notes", ())),
        refused=extra.get("refused"),
        refused_by=extra.get("refused_by"),
        refused_why=tuple(extra.get("refused_why", ())),
        claim_templates=_claim_templates(others, namespace or None),
    )


CLAIM_TEMPLATE = ("resource.k8s.io", "ResourceClaimTemplate")


def _claim_templates(others: Sequence[Any], namespace: str | None) -> Mapping[str, Any]:
    """The file's ResourceClaimTemplates in the job's namespace (either may leave it to
    `--namespace`: kubectl refuses an object of another one), by name; the first of a name, as
    the API server refuses a second."""
    found: dict[str, Any] = {}
    for other in others:
        if not isinstance(other, dict) or other.get("kind") != CLAIM_TEMPLATE[1]:
            continue
        if _group(str(other.get("apiVersion") or "")) != CLAIM_TEMPLATE[0]:
            continue
        metadata = other.get("metadata")
        if not isinstance(metadata, dict):
            continue
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            continue
        own = metadata.get("namespace") or None
        if own is None or namespace is None or own == namespace:
            found.setdefault(name, other)
    return MappingProxyType(found)


def _with_others(reader: _FileReader, others: Sequence[Any]) -> _Reader:
    def read(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
        return reader(data, others)

    return read


def _metadata_name(document: Any) -> str:
    metadata = read_field(document, ("metadata",), dict) or {}
    name = metadata.get("name") or metadata.get("generateName")
    if name is None:
        return "(unnamed)"
    if not isinstance(name, str):
        raise BadField(("metadata", "name"), "metadata.name must be a string")
    return name


TEMPLATE_IS_THE_POD = frozenset({("", "PodTemplate"), ("agents.x-k8s.io", "Sandbox")})
"""Kinds whose pod template's labels are the labels of the pod Kueue admits as the Workload."""


def _template_labels(document: Any, pod_sets: list[PodSet]) -> dict[str, str]:
    """Labels of the first pod template: where Sandboxes and pod templates carry the queue."""
    for ps in pod_sets:
        if ps.path and ps.path[-1] in ("template", "podTemplate"):
            return read_strings(document, (*ps.path, "metadata", "labels"))
    return {}


def _first(key: str, *mappings: Mapping[str, str]) -> str | None:
    for mapping in mappings:
        if mapping.get(key):
            return mapping[key]
    return None
