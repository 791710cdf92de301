"""Kueue's job integrations, offline: one reader per kind turns the job's YAML into the pod
sets and counts Kueue's Workload would hold (`pkg/controller/jobs/*` in kubernetes-sigs/kueue)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_CEILING, Decimal
from types import MappingProxyType
from typing import Any

from renderer.commands.fit.podsets import (
    EMPTY_RESOURCES,
    BadField,
    Container,
    FieldPath,
    PodSet,
    Requirement,
    Toleration,
    Unreadable,
    Workload,
    job_pod_count,
    path_text,
    read_affinity,
    read_count,
    read_field,
    read_pod_set,
    read_resources,
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
    return [read_pod_set(data, (), "main", 1)], {"notes": tuple(notes)}


def _pod_template(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return [read_pod_set(data, ("template",), "main", 1)], {}


def _deployment(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    replicas = read_count(data, ("spec", "replicas"), 1)
    return [read_pod_set(data, ("spec", "template"), "main", 1)], {
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
        pod_sets.append(read_pod_set(data, (*job_spec, "template"), name, count))
    if not pod_sets:
        raise BadField((*spec, "replicatedJobs"), "the JobSet has no replicatedJobs")
    return pod_sets, {}


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
"""Kubeflow training jobs: the replica-spec field and Kueue's `OrderedReplicaTypes`."""


def _kubeflow(kind: str) -> _Reader:
    field, ordered = KUBEFLOW_REPLICAS[kind]

    def read(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
        specs = read_field(data, ("spec", field), dict, required=True)
        pod_sets = []
        for replica_type in ordered:
            if replica_type not in specs:
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


def _trainjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """A Kubeflow Trainer v2 TrainJob: the runtime's `node` job, numNodes pods of
    resourcesPerNode each. The runtime itself (its initializer jobs, its defaults) lives in the
    cluster, so fit sees only what the TrainJob overrides."""
    trainer = ("spec", "trainer")
    read_field(data, trainer, dict)
    notes = []
    count = read_field(data, (*trainer, "numNodes"), int)
    if count is None:
        count = 1
        notes.append("spec.trainer.numNodes is not set: the runtime decides; fit assumes 1 node")
    runtime = read_field(data, ("spec", "runtimeRef", "name"), str)
    notes.append(
        f"pods come from runtime {runtime or '?'}: fit counts the trainer's `node` job only, not "
        "the runtime's initializer jobs"
    )
    container = Container(
        name="node",
        role="container",
        requests=MappingProxyType(read_resources(data, (*trainer, "resourcesPerNode", "requests"))),
        limits=MappingProxyType(read_resources(data, (*trainer, "resourcesPerNode", "limits"))),
    )
    selector: dict[str, str] = {}
    tolerations: list[Toleration] = []
    affinity: list[tuple[Requirement, ...]] = []
    for spec in _trainjob_node_specs(data):
        selector.update(read_strings(data, (*spec, "nodeSelector")))
        tolerations.extend(read_tolerations(data, spec))
        affinity.extend(read_affinity(data, spec))
    pod_set = PodSet(
        name="node",
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
    )
    return [pod_set], {"notes": tuple(notes)}


def _trainjob_node_specs(data: Any) -> list[FieldPath]:
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
            if isinstance(job, dict) and job.get("name") == "node":
                found.append((*jobs_path, j, "template", "spec", "template", "spec"))
    for field in ("podSpecOverrides", "podTemplateOverrides"):
        for o, item in enumerate(read_field(data, ("spec", field), list) or []):
            if not isinstance(item, dict):
                continue
            targets = item.get("targetJobs") or []
            if any(isinstance(t, dict) and t.get("name") == "node" for t in targets):
                base = ("spec", field, o)
                found.append((*base, "spec") if field == "podTemplateOverrides" else base)
    return found


RAY_AUTOSCALER = MappingProxyType({"cpu": Decimal("0.5"), "memory": quantity.parse("512Mi")})
"""KubeRay's autoscaler sidecar in the head pod, when in-tree autoscaling is on."""

RAY_SUBMITTER_REQUESTS = MappingProxyType(
    {"cpu": Decimal("0.5"), "memory": quantity.parse("200Mi")}
)
RAY_SUBMITTER_LIMITS = MappingProxyType({"cpu": Decimal(1), "memory": quantity.parse("1Gi")})
"""The default submitter pod of a RayJob in K8sJobMode (Kueue's `getSubmitterTemplate`)."""


def _ray_cluster(data: Any, spec: FieldPath) -> list[PodSet]:
    read_field(data, spec, dict, required=True)
    extra: list[Container] = []
    if read_field(data, (*spec, "enableInTreeAutoscaling"), bool):
        own = read_resources(data, (*spec, "autoscalerOptions", "resources", "requests"))
        limits = read_resources(data, (*spec, "autoscalerOptions", "resources", "limits"))
        extra.append(
            Container(
                "autoscaler",
                "container",
                MappingProxyType(own or ({} if limits else dict(RAY_AUTOSCALER))),
                MappingProxyType(limits or dict(RAY_AUTOSCALER)),
            )
        )
    pod_sets = [read_pod_set(data, (*spec, "headGroupSpec", "template"), "head", 1, extra=extra)]
    groups = read_field(data, (*spec, "workerGroupSpecs"), list) or []
    for index, _ in enumerate(groups):
        here = (*spec, "workerGroupSpecs", index)
        name = read_field(data, (*here, "groupName"), str, required=True)
        count = read_count(data, (*here, "replicas"), 1)
        hosts = read_count(data, (*here, "numOfHosts"), 1)
        pod_sets.append(
            read_pod_set(data, (*here, "template"), name.lower(), count * max(hosts, 1))
        )
    return pod_sets


def _raycluster(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return _ray_cluster(data, ("spec",)), {}


def _rayservice(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return _ray_cluster(data, ("spec", "rayClusterConfig")), {}


def _rayjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    if read_field(data, ("spec", "clusterSelector"), dict):
        raise _NotManaged(
            "the RayJob runs on an existing RayCluster (spec.clusterSelector); Kueue does not "
            "manage it, the RayCluster was admitted on its own"
        )
    pod_sets = _ray_cluster(data, ("spec", "rayClusterSpec"))
    mode = read_field(data, ("spec", "submissionMode"), str) or "K8sJobMode"
    if mode == "K8sJobMode":
        template = ("spec", "submitterPodTemplate")
        if read_field(data, template, dict) is not None:
            pod_sets.append(read_pod_set(data, template, "submitter", 1))
        else:
            submitter = Container(
                "ray-job-submitter", "container", RAY_SUBMITTER_REQUESTS, RAY_SUBMITTER_LIMITS
            )
            pod_sets.append(
                PodSet(
                    name="submitter",
                    count=1,
                    min_count=None,
                    containers=(submitter,),
                    overhead=EMPTY_RESOURCES,
                    node_selector=MappingProxyType({}),
                    affinity=(),
                    tolerations=(),
                    priority_class_name=None,
                    resource_claims=(),
                    path=("spec",),
                )
            )
    return pod_sets, {}


def _leaderworkerset(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    replicas = read_count(data, ("spec", "replicas"), 1)
    lwt = ("spec", "leaderWorkerTemplate")
    size = max(read_count(data, (*lwt, "size"), 1), 1)
    worker = (*lwt, "workerTemplate")
    leader = (
        (*lwt, "leaderTemplate") if read_field(data, (*lwt, "leaderTemplate"), dict) else worker
    )
    pod_sets = [read_pod_set(data, leader, "leader", 1)]
    if size > 1:
        pod_sets.append(read_pod_set(data, worker, "worker", size - 1))
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


def _appwrapper(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """An AppWrapper admits all its components together: each component's pod sets, each
    repeated as often as that component creates Workloads."""
    components = read_field(data, ("spec", "components"), list, required=True)
    pod_sets: list[PodSet] = []
    notes: list[str] = []
    for index, _ in enumerate(components):
        here = ("spec", "components", index, "template")
        template = read_field(data, here, dict, required=True)
        inner = workload_from(template)
        if isinstance(inner, Unreadable):
            if inner.workload:
                raise BadField((*here, *inner.path), f"component {index}: {inner.reason}")
            notes.append(f"component {index} ({inner.kind}) creates no pods; not counted")
            continue
        for ps in inner.pod_sets:
            pod_sets.append(
                PodSet(
                    name=f"{index}-{ps.name}",
                    count=ps.count * inner.replicas,
                    min_count=None,
                    containers=ps.containers,
                    overhead=ps.overhead,
                    node_selector=ps.node_selector,
                    affinity=ps.affinity,
                    tolerations=ps.tolerations,
                    priority_class_name=ps.priority_class_name,
                    resource_claims=ps.resource_claims,
                    path=(*here, *ps.path),
                )
            )
    if not pod_sets:
        raise BadField(("spec", "components"), "the AppWrapper has no component that creates pods")
    return pod_sets, {"notes": tuple(notes)}


class _NotManaged(Exception):
    pass


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
        ("trainer.kubeflow.org", "TrainJob"): _trainjob,
        ("ray.io", "RayJob"): _rayjob,
        ("ray.io", "RayCluster"): _raycluster,
        ("ray.io", "RayService"): _rayservice,
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leaderworkerset,
        ("workload.codeflare.dev", "AppWrapper"): _appwrapper,
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

SUPPORTED_KINDS = tuple(sorted({kind for _, kind in READERS}))


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def workload_from(document: Any, others: Sequence[Any] = ()) -> Workload | Unreadable:
    """The Workload a document describes, or why it does not describe one fit can check.

    `others` are the file's other documents, as `kubectl apply -f` would create them beside it
    (a TrainJob's TrainingRuntime)."""
    del others  # no reader needs them yet
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
    reader = READERS.get(key)
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
    except BadField as bad:
        return Unreadable(shown, bad.message, True, bad.path)
    except _NotManaged as skip:
        return Unreadable(shown, str(skip), False)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as err:
        return Unreadable(shown, f"cannot read the {kind}: {err}", True)
    template_labels = _template_labels(document, pod_sets)
    extra_labels: Mapping[str, str] = extra.get("labels", {})
    return Workload(
        api_version=api_version,
        kind=kind,
        name=name,
        namespace=namespace or None,
        queue_name=_first(QUEUE_LABEL, labels, extra_labels, annotations, template_labels),
        priority_class=_first(PRIORITY_LABEL, labels, extra_labels, template_labels),
        pod_sets=tuple(pod_sets),
        replicas=int(extra.get("replicas", 1)),
        replica_unit=str(extra.get("replica_unit", "workload")),
        notes=tuple(extra.get("notes", ())),
    )


def _metadata_name(document: Any) -> str:
    metadata = read_field(document, ("metadata",), dict) or {}
    name = metadata.get("name") or metadata.get("generateName")
    if name is None:
        return "(unnamed)"
    if not isinstance(name, str):
        raise BadField(("metadata", "name"), "metadata.name must be a string")
    return name


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
