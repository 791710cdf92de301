"""A job file as Kueue sees it: a neutral `Workload` of pod sets, whatever the job's kind.

Kueue turns every job it manages into a Workload: one pod set per kind of pod (a Job has `main`,
a JobSet one per replicated job, a RayJob `head`, one per worker group and `submitter`), each
with a pod count and a pod template. This module does the same offline, from the job's YAML, so
`gpuplane fit` can run Kueue's flavor assignment against the rendered queues. Pod set names and
counts follow Kueue's job integrations (`pkg/controller/jobs/*` in kubernetes-sigs/kueue).

Nothing here knows about teams, pools or queues, and nothing here raises on bad input:
`workload_from` returns a `Workload`, or an `Unreadable` that says why not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from types import MappingProxyType
from typing import Any

from renderer.model import quantity
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL
from renderer.model.platform import Taint

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"

FieldPath = tuple[str | int, ...]
Resources = Mapping[str, Decimal]

_EMPTY: Resources = MappingProxyType({})


# --- the neutral shape -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' rule: an empty key with Exists tolerates everything; an empty effect
        matches every effect; Exists ignores the value."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `matchExpressions` entry of a required node affinity term."""

    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "In":
            return value is not None and value in self.values
        if self.operator == "NotIn":
            return value is None or value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        if self.operator in ("Gt", "Lt") and value is not None and len(self.values) == 1:
            try:
                have, want = int(value), int(self.values[0])
            except ValueError:
                return False
            return have > want if self.operator == "Gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class Container:
    """What one container asks for; `role` is container, init (runs before) or sidecar (an
    init container with restartPolicy Always, which runs beside the containers)."""

    name: str
    role: str
    requests: Resources
    limits: Resources


@dataclass(frozen=True, slots=True)
class PodSet:
    """A group of identical pods, as a Kueue Workload lists them."""

    name: str
    count: int
    min_count: int | None
    containers: tuple[Container, ...]
    overhead: Resources
    node_selector: Mapping[str, str]
    affinity: tuple[tuple[Requirement, ...], ...]
    """Required node affinity: the pod fits a node matching any term (all of a term's entries)."""
    tolerations: tuple[Toleration, ...]
    priority_class_name: str | None
    resource_claims: tuple[str, ...]
    path: FieldPath
    """Where the pod template is in the file, for messages that point at it."""

    def requests(
        self,
        default_requests: Resources = _EMPTY,
        default_limits: Resources = _EMPTY,
    ) -> dict[str, Decimal]:
        """One pod's requests as Kueue counts them.

        Kueue's order (`workload.AdjustResources`): a namespace's LimitRange defaults fill in
        missing limits and requests first, then limits stand in for requests still missing.
        Then Kubernetes' pod rule: the containers add up, sidecars run beside them, and each
        init container needs its own request plus the sidecars started before it; the pod needs
        the larger of the two, plus the pod overhead.
        """
        running: dict[str, Decimal] = {}
        sidecars: dict[str, Decimal] = {}
        init_peak: dict[str, Decimal] = {}
        for container in self.containers:
            limits = {**default_limits, **container.limits}
            asked = {**default_requests, **container.requests}
            effective = {**limits, **asked}
            if container.role == "container":
                _add(running, effective)
            elif container.role == "sidecar":
                _add(sidecars, effective)
            else:
                for name, value in effective.items():
                    need = value + sidecars.get(name, Decimal(0))
                    init_peak[name] = max(init_peak.get(name, Decimal(0)), need)
        _add(running, sidecars)
        pod = {
            n: max(running.get(n, Decimal(0)), init_peak.get(n, Decimal(0)))
            for n in {*running, *init_peak}
        }
        _add(pod, self.overhead)
        return {n: v for n, v in sorted(pod.items()) if v != 0}

    def limit_without_request(self) -> tuple[tuple[str, str], ...]:
        """(container, resource) pairs with a limit but no request: where a LimitRange's default
        request, not the limit, is what Kueue counts."""
        return tuple(
            (c.name, r) for c in self.containers for r in sorted(c.limits) if r not in c.requests
        )

    def over_limit(self) -> tuple[tuple[str, str], ...]:
        """(container, resource) pairs whose request exceeds its limit (the API server refuses)."""
        return tuple(
            (c.name, r)
            for c in self.containers
            for r, v in sorted(c.requests.items())
            if r in c.limits and v > c.limits[r]
        )


@dataclass(frozen=True, slots=True)
class Workload:
    """A job as Kueue's Workload would describe it.

    `replicas` counts identical Workloads the object creates: a Deployment's pods and a
    LeaderWorkerSet's groups are each admitted on their own, so the pod sets describe one of
    them; everywhere else it is 1 and the pod sets are the whole job (admitted as one gang).
    """

    api_version: str
    kind: str
    name: str
    namespace: str | None
    queue_name: str | None
    priority_class: str | None
    pod_sets: tuple[PodSet, ...]
    replicas: int = 1
    replica_unit: str = "workload"
    notes: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Why a document is not a workload fit can check.

    `workload` is False for objects that are no workload at all (a ClusterQueue, a ConfigMap):
    skipped, not wrong. True means a workload kind whose file is broken or that fit cannot model.
    """

    kind: str
    reason: str
    workload: bool
    path: FieldPath = ()


# --- reading -----------------------------------------------------------------------------------


class _Bad(Exception):
    def __init__(self, path: FieldPath, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _where(path: FieldPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _get(
    data: Any, path: FieldPath, kind: type | tuple[type, ...], *, required: bool = False
) -> Any:
    """The value at `path` below `data` (a path relative to the document), type-checked."""
    node = data
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            break
    if node is None:
        if required:
            raise _Bad(path, f"{_where(path)} is missing")
        return None
    if isinstance(node, bool) and kind is not bool and bool not in _as_tuple(kind):
        raise _Bad(path, f"{_where(path)} must be {_type_name(kind)}, not a boolean")
    if not isinstance(node, kind):
        raise _Bad(path, f"{_where(path)} must be {_type_name(kind)}")
    return node


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        int: "an integer",
        bool: "a boolean",
    }
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))


def _count(data: Any, path: FieldPath, default: int) -> int:
    value = _get(data, path, int)
    if value is None:
        return default
    if value < 0:
        raise _Bad(path, f"{_where(path)} must not be negative")
    return int(value)


def _strings(data: Any, path: FieldPath) -> dict[str, str]:
    mapping = _get(data, path, dict) or {}
    return {str(k): str(v) for k, v in mapping.items() if v is not None}


def _resources(data: Any, path: FieldPath) -> dict[str, Decimal]:
    mapping = _get(data, path, dict) or {}
    result: dict[str, Decimal] = {}
    for name, value in mapping.items():
        if value is None or isinstance(value, bool | dict | list):
            raise _Bad((*path, name), f"{_where((*path, name))} must be a quantity")
        try:
            result[str(name)] = quantity.parse(value)
        except ValueError as err:
            raise _Bad((*path, name), f"{_where((*path, name))}: {err}") from None
    return result


def _containers(data: Any, spec: FieldPath) -> tuple[Container, ...]:
    result: list[Container] = []
    for field, role in (("initContainers", "init"), ("containers", "container")):
        items = _get(data, (*spec, field), list) or []
        for index, _ in enumerate(items):
            here = (*spec, field, index)
            _get(data, here, dict, required=True)
            name = _get(data, (*here, "name"), str) or f"{field}[{index}]"
            restart = _get(data, (*here, "restartPolicy"), str)
            result.append(
                Container(
                    name=name,
                    role="sidecar" if role == "init" and restart == "Always" else role,
                    requests=MappingProxyType(_resources(data, (*here, "resources", "requests"))),
                    limits=MappingProxyType(_resources(data, (*here, "resources", "limits"))),
                )
            )
    if not any(c.role == "container" for c in result):
        raise _Bad(
            (*spec, "containers"), f"{_where((*spec, 'containers'))}: the pod has no containers"
        )
    return tuple(result)


def _tolerations(data: Any, spec: FieldPath) -> tuple[Toleration, ...]:
    items = _get(data, (*spec, "tolerations"), list) or []
    result = []
    for index, _ in enumerate(items):
        here = (*spec, "tolerations", index)
        _get(data, here, dict, required=True)
        operator = _get(data, (*here, "operator"), str) or "Equal"
        result.append(
            Toleration(
                key=_get(data, (*here, "key"), str) or "",
                operator=operator,
                value=str(_get(data, (*here, "value"), (str, int, float)) or ""),
                effect=_get(data, (*here, "effect"), str) or "",
            )
        )
    return tuple(result)


def _affinity(data: Any, spec: FieldPath) -> tuple[tuple[Requirement, ...], ...]:
    terms_path = (
        *spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    terms = _get(data, terms_path, list) or []
    result = []
    for t, _ in enumerate(terms):
        expressions = _get(data, (*terms_path, t, "matchExpressions"), list) or []
        term = []
        for e, _ in enumerate(expressions):
            here = (*terms_path, t, "matchExpressions", e)
            values = _get(data, (*here, "values"), list) or []
            term.append(
                Requirement(
                    key=_get(data, (*here, "key"), str, required=True),
                    operator=_get(data, (*here, "operator"), str, required=True),
                    values=tuple(str(v) for v in values),
                )
            )
        result.append(tuple(term))
    return tuple(result)


def _pod_set(
    data: Any,
    template: FieldPath,
    name: str,
    count: int,
    *,
    min_count: int | None = None,
    extra: Iterable[Container] = (),
) -> PodSet:
    """A pod set from a PodTemplateSpec at `template` (its `spec` holds the pod)."""
    _get(data, template, dict, required=True)
    spec = (*template, "spec")
    _get(data, spec, dict, required=True)
    claims = _get(data, (*spec, "resourceClaims"), list) or []
    return PodSet(
        name=name,
        count=count,
        min_count=min_count,
        containers=(*_containers(data, spec), *extra),
        overhead=MappingProxyType(_resources(data, (*spec, "overhead"))),
        node_selector=MappingProxyType(_strings(data, (*spec, "nodeSelector"))),
        affinity=_affinity(data, spec),
        tolerations=_tolerations(data, spec),
        priority_class_name=_get(data, (*spec, "priorityClassName"), str),
        resource_claims=tuple(
            str(c.get("name", "")) for c in claims if isinstance(c, dict) and c.get("name")
        ),
        path=template,
    )


def _job_pods(data: Any, job_spec: FieldPath) -> int:
    """Kueue's `podsCount` of a Job spec: parallelism (default 1), at most completions."""
    parallelism = _count(data, (*job_spec, "parallelism"), 1)
    completions = _get(data, (*job_spec, "completions"), int)
    return min(parallelism, completions) if completions is not None else parallelism


# --- kinds -------------------------------------------------------------------------------------

_Reader = Callable[[Any], tuple[list[PodSet], dict[str, Any]]]
"""A kind's reader: its pod sets, and Workload fields beyond the common ones."""


def _job(
    data: Any, spec: FieldPath = ("spec",), annotations: FieldPath = ("metadata", "annotations")
) -> tuple[list[PodSet], dict[str, Any]]:
    _get(data, spec, dict, required=True)
    count = _job_pods(data, spec)
    minimum = _strings(data, annotations).get(MIN_PARALLELISM)
    min_count = None
    if minimum is not None:
        try:
            min_count = max(1, min(int(minimum), count))
        except ValueError:
            raise _Bad(
                (*annotations, MIN_PARALLELISM), f"{MIN_PARALLELISM} must be an integer"
            ) from None
    return [_pod_set(data, (*spec, "template"), "main", count, min_count=min_count)], {}


def _cronjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    pod_sets, _ = _job(
        data, ("spec", "jobTemplate", "spec"), ("spec", "jobTemplate", "metadata", "annotations")
    )
    return pod_sets, {
        "labels": _strings(data, ("spec", "jobTemplate", "metadata", "labels")),
        "notes": ("each run of the CronJob is a Job of its own; fit checks one run",),
    }


def _pod(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    notes = []
    group = _strings(data, ("metadata", "labels")).get(POD_GROUP_LABEL)
    if group:
        total = _strings(data, ("metadata", "annotations")).get(POD_GROUP_COUNT, "?")
        notes.append(
            f"this pod belongs to pod group {group} ({total} pods in all); Kueue admits the group "
            "as one Workload, fit checks this pod only"
        )
    return [_pod_set(data, (), "main", 1)], {"notes": tuple(notes)}


def _pod_template(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return [_pod_set(data, ("template",), "main", 1)], {}


def _deployment(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    replicas = _count(data, ("spec", "replicas"), 1)
    return [_pod_set(data, ("spec", "template"), "main", 1)], {
        "replicas": replicas,
        "replica_unit": "pod",
        "notes": ("Kueue admits each pod of a Deployment as a Workload of its own",),
    }


def _statefulset(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    replicas = _count(data, ("spec", "replicas"), 1)
    return [_pod_set(data, ("spec", "template"), "main", replicas)], {
        "notes": ("Kueue admits the pods of a StatefulSet together, as one pod group",),
    }


def _jobset(data: Any, spec: FieldPath = ("spec",)) -> tuple[list[PodSet], dict[str, Any]]:
    jobs = _get(data, (*spec, "replicatedJobs"), list, required=True)
    pod_sets = []
    for index, _ in enumerate(jobs):
        here = (*spec, "replicatedJobs", index)
        name = _get(data, (*here, "name"), str, required=True)
        replicas = _count(data, (*here, "replicas"), 1)
        job_spec = (*here, "template", "spec")
        _get(data, job_spec, dict, required=True)
        count = replicas * _job_pods(data, job_spec)
        pod_sets.append(_pod_set(data, (*job_spec, "template"), name, count))
    if not pod_sets:
        raise _Bad((*spec, "replicatedJobs"), "the JobSet has no replicatedJobs")
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
        specs = _get(data, ("spec", field), dict, required=True)
        pod_sets = []
        for replica_type in ordered:
            if replica_type not in specs:
                continue
            here = ("spec", field, replica_type)
            _get(data, here, dict, required=True)
            count = _count(data, (*here, "replicas"), 1)
            pod_sets.append(_pod_set(data, (*here, "template"), replica_type.lower(), count))
        unknown = sorted(set(specs) - set(ordered))
        notes = []
        if unknown:
            notes.append(
                f"replica types {', '.join(unknown)} are not among {kind}'s ({', '.join(ordered)}); "
                "Kueue does not count them"
            )
        if not pod_sets:
            raise _Bad(("spec", field), f"spec.{field} holds none of {', '.join(ordered)}")
        return pod_sets, {"notes": tuple(notes)}

    return read


def _trainjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """A Kubeflow Trainer v2 TrainJob: the runtime's `node` job, numNodes pods of
    resourcesPerNode each. The runtime itself (its initializer jobs, its defaults) lives in the
    cluster, so fit sees only what the TrainJob overrides."""
    trainer = ("spec", "trainer")
    _get(data, trainer, dict)
    notes = []
    count = _get(data, (*trainer, "numNodes"), int)
    if count is None:
        count = 1
        notes.append("spec.trainer.numNodes is not set: the runtime decides; fit assumes 1 node")
    runtime = _get(data, ("spec", "runtimeRef", "name"), str)
    notes.append(
        f"pods come from runtime {runtime or '?'}: fit counts the trainer's `node` job only, not "
        "the runtime's initializer jobs"
    )
    container = Container(
        name="node",
        role="container",
        requests=MappingProxyType(_resources(data, (*trainer, "resourcesPerNode", "requests"))),
        limits=MappingProxyType(_resources(data, (*trainer, "resourcesPerNode", "limits"))),
    )
    selector: dict[str, str] = {}
    tolerations: list[Toleration] = []
    affinity: list[tuple[Requirement, ...]] = []
    for spec in _trainjob_node_specs(data):
        selector.update(_strings(data, (*spec, "nodeSelector")))
        tolerations.extend(_tolerations(data, spec))
        affinity.extend(_affinity(data, spec))
    pod_set = PodSet(
        name="node",
        count=count,
        min_count=None,
        containers=(container,),
        overhead=_EMPTY,
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
    patches = _get(data, ("spec", "runtimePatches"), list) or []
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
        for j, job in enumerate(_get(data, jobs_path, list) or []):
            if isinstance(job, dict) and job.get("name") == "node":
                found.append((*jobs_path, j, "template", "spec", "template", "spec"))
    for field in ("podSpecOverrides", "podTemplateOverrides"):
        for o, item in enumerate(_get(data, ("spec", field), list) or []):
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
    _get(data, spec, dict, required=True)
    extra: list[Container] = []
    if _get(data, (*spec, "enableInTreeAutoscaling"), bool):
        own = _resources(data, (*spec, "autoscalerOptions", "resources", "requests"))
        limits = _resources(data, (*spec, "autoscalerOptions", "resources", "limits"))
        extra.append(
            Container(
                "autoscaler",
                "container",
                MappingProxyType(own or ({} if limits else dict(RAY_AUTOSCALER))),
                MappingProxyType(limits or dict(RAY_AUTOSCALER)),
            )
        )
    pod_sets = [_pod_set(data, (*spec, "headGroupSpec", "template"), "head", 1, extra=extra)]
    groups = _get(data, (*spec, "workerGroupSpecs"), list) or []
    for index, _ in enumerate(groups):
        here = (*spec, "workerGroupSpecs", index)
        name = _get(data, (*here, "groupName"), str, required=True)
        count = _count(data, (*here, "replicas"), 1)
        hosts = _count(data, (*here, "numOfHosts"), 1)
        pod_sets.append(_pod_set(data, (*here, "template"), name.lower(), count * max(hosts, 1)))
    return pod_sets


def _raycluster(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return _ray_cluster(data, ("spec",)), {}


def _rayservice(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return _ray_cluster(data, ("spec", "rayClusterConfig")), {}


def _rayjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    if _get(data, ("spec", "clusterSelector"), dict):
        raise _NotManaged(
            "the RayJob runs on an existing RayCluster (spec.clusterSelector); Kueue does not "
            "manage it, the RayCluster was admitted on its own"
        )
    pod_sets = _ray_cluster(data, ("spec", "rayClusterSpec"))
    mode = _get(data, ("spec", "submissionMode"), str) or "K8sJobMode"
    if mode == "K8sJobMode":
        template = ("spec", "submitterPodTemplate")
        if _get(data, template, dict) is not None:
            pod_sets.append(_pod_set(data, template, "submitter", 1))
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
                    overhead=_EMPTY,
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
    replicas = _count(data, ("spec", "replicas"), 1)
    lwt = ("spec", "leaderWorkerTemplate")
    size = max(_count(data, (*lwt, "size"), 1), 1)
    worker = (*lwt, "workerTemplate")
    leader = (*lwt, "leaderTemplate") if _get(data, (*lwt, "leaderTemplate"), dict) else worker
    pod_sets = [_pod_set(data, leader, "leader", 1)]
    if size > 1:
        pod_sets.append(_pod_set(data, worker, "worker", size - 1))
    return pod_sets, {
        "replicas": replicas,
        "replica_unit": "group",
        "notes": ("Kueue admits each leader-worker group as a Workload of its own",),
    }


def _sandbox(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    return [_pod_set(data, ("spec", "podTemplate"), "main", 1)], {}


def _java_memory(text: Any, path: FieldPath) -> Decimal:
    """Spark's JVM notation: 512m, 2g, 1t (binary units), or bytes."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
    raw = str(text).strip().lower().removesuffix("b")
    try:
        if raw and raw[-1] in units:
            return Decimal(raw[:-1]) * units[raw[-1]]
        return Decimal(raw)
    except ArithmeticError:
        raise _Bad(path, f"{_where(path)}: not a JVM memory size: {text!r}") from None


def _spark(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """SparkApplication: a driver and `executor.instances` executors, sized the way the Spark
    operator builds their pods (cores, memory plus overhead, an optional GPU)."""
    factor_text = _get(data, ("spec", "memoryOverheadFactor"), (str, int, float))
    language = _get(data, ("spec", "type"), str) or "Scala"
    default_factor = Decimal("0.1") if language in ("Java", "Scala") else Decimal("0.4")
    factor = Decimal(str(factor_text)) if factor_text is not None else default_factor
    pod_sets = []
    for role in ("driver", "executor"):
        here = ("spec", role)
        _get(data, here, dict, required=True)
        cores = _get(data, (*here, "coreRequest"), (str, int, float))
        if cores is None:
            cores = _get(data, (*here, "cores"), (int, float)) or 1
        requests: dict[str, Decimal] = {"cpu": quantity.parse(cores)}
        limits: dict[str, Decimal] = {}
        if (core_limit := _get(data, (*here, "coreLimit"), (str, int, float))) is not None:
            limits["cpu"] = quantity.parse(core_limit)
        memory = _java_memory(_get(data, (*here, "memory"), (str, int)) or "1g", (*here, "memory"))
        overhead_text = _get(data, (*here, "memoryOverhead"), (str, int))
        if overhead_text is not None:
            overhead = _java_memory(overhead_text, (*here, "memoryOverhead"))
        else:
            overhead = max((memory * factor).to_integral_value(ROUND_CEILING), Decimal(384 * 2**20))
        requests["memory"] = memory + overhead
        limits["memory"] = memory + overhead
        gpu = _get(data, (*here, "gpu"), dict)
        if gpu and gpu.get("name"):
            requests[str(gpu["name"])] = limits[str(gpu["name"])] = Decimal(
                int(gpu.get("quantity", 1))
            )
        count = 1 if role == "driver" else _count(data, (*here, "instances"), 1)
        container = Container(
            f"spark-{role}", "container", MappingProxyType(requests), MappingProxyType(limits)
        )
        pod_sets.append(
            PodSet(
                name=role,
                count=count,
                min_count=None,
                containers=(container,),
                overhead=_EMPTY,
                node_selector=MappingProxyType(_strings(data, (*here, "nodeSelector"))),
                affinity=_affinity(data, here),
                tolerations=_tolerations(data, here),
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
    components = _get(data, ("spec", "components"), list, required=True)
    pod_sets: list[PodSet] = []
    notes: list[str] = []
    for index, _ in enumerate(components):
        here = ("spec", "components", index, "template")
        template = _get(data, here, dict, required=True)
        inner = workload_from(template)
        if isinstance(inner, Unreadable):
            if inner.workload:
                raise _Bad((*here, *inner.path), f"component {index}: {inner.reason}")
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
        raise _Bad(("spec", "components"), "the AppWrapper has no component that creates pods")
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


def workload_from(document: Any) -> Workload | Unreadable:
    """The Workload a document describes, or why it does not describe one fit can check."""
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
        labels = _strings(document, ("metadata", "labels"))
        annotations = _strings(document, ("metadata", "annotations"))
        namespace = _get(document, ("metadata", "namespace"), str)
    except _Bad as bad:
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
    metadata = _get(document, ("metadata",), dict) or {}
    name = metadata.get("name") or metadata.get("generateName")
    if name is None:
        return "(unnamed)"
    if not isinstance(name, str):
        raise _Bad(("metadata", "name"), "metadata.name must be a string")
    return name


def _template_labels(document: Any, pod_sets: list[PodSet]) -> dict[str, str]:
    """Labels of the first pod template: where Sandboxes and pod templates carry the queue."""
    for ps in pod_sets:
        if ps.path and ps.path[-1] in ("template", "podTemplate"):
            return _strings(document, (*ps.path, "metadata", "labels"))
    return {}


def _first(key: str, *mappings: Mapping[str, str]) -> str | None:
    for mapping in mappings:
        if mapping.get(key):
            return mapping[key]
    return None


def _add(into: dict[str, Decimal], more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, Decimal(0)) + value


def drop_excluded(requests: Mapping[str, Decimal], prefixes: Iterable[str]) -> dict[str, Decimal]:
    """A pod's requests without the resources Kueue's `resources.excludeResourcePrefixes`
    excludes: Kueue drops every resource whose name starts with one of the prefixes before it
    counts a pod set against quota (`dropExcludedResources`, `pkg/workload`)."""
    found = tuple(prefixes)
    return {r: v for r, v in requests.items() if not r.startswith(found)}


def scaled(requests: Mapping[str, Decimal], count: int) -> dict[str, Decimal]:
    """Requests of `count` pods."""
    return {name: value * count for name, value in requests.items()}
