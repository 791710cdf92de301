"""A job as Kueue sees it: a neutral `Workload` of pod sets, whatever the job's kind, and the
pod-spec reading every kind shares. `BadField` says where a field is wrong; the readers turn it into
an `Unreadable`, so nothing raises past them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.model import quantity
from renderer.model.platform import Taint

FieldPath = tuple[str | int, ...]
Resources = Mapping[str, Decimal]

EMPTY_RESOURCES: Resources = MappingProxyType({})


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
class ResourceClaim:
    """One entry of the pod's `spec.resourceClaims` (a `PodResourceClaim`): a device claim made
    for each pod from a ResourceClaimTemplate, or a standalone ResourceClaim the pods share."""

    name: str
    index: int
    """Its position in `spec.resourceClaims`: Kueue's messages name the entry by it."""
    template: str | None = None
    """`resourceClaimTemplateName`."""
    claim: str | None = None
    """`resourceClaimName`."""


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
    resource_claims: tuple[ResourceClaim, ...]
    path: FieldPath
    """Where the pod template is in the file, for messages that point at it."""
    annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """The pod template's annotations: Kueue reads a pod set's topology request from them
    (`jobframework.NewPodSetTopologyRequest`, the `kueue.x-k8s.io/podset-*-topology` keys)."""

    pod_requests: Resources = field(default_factory=lambda: EMPTY_RESOURCES)
    """Pod-level `spec.resources.requests` (PodLevelResources, Kubernetes 1.32+)."""
    pod_limits: Resources = field(default_factory=lambda: EMPTY_RESOURCES)
    """Pod-level `spec.resources.limits`."""
    pod_resources: bool = False
    """Whether the pod spec has a `resources` field at all (Kueue's `pod.Resources != nil`)."""
    scheduler_name: str | None = None
    """The pod spec's `schedulerName` (None: the API server's default, `default-scheduler`).
    Kueue does not read it; the scheduler it names must exist for the pods to start."""
    from_pod: bool = False
    """Kueue builds this pod set from a Pod the API server created (the `pod` integration: a
    Pod, a Deployment's or ReplicaSet's pods), not from a template: the API server's Pod
    defaulting (`SetDefaults_Pod`: a container's limits stand in for its missing requests) and
    its LimitRanger have run before Kueue sees it."""

    def adjusted(
        self,
        default_requests: Resources = EMPTY_RESOURCES,
        default_limits: Resources = EMPTY_RESOURCES,
    ) -> tuple[Container, ...]:
        """The containers as Kueue's Workload holds them after `workload.AdjustResources`
        (`pkg/workload/resources.go`): `handlePodLimitRange` merges the namespace LimitRange's
        `default` into missing limits and its `defaultRequest` into missing requests first,
        then `handleLimitsToRequests` (`UseLimitsAsMissingRequestsInPod`) copies limits into
        requests still missing. A pod from the API server (`from_pod`) had its limits copied
        into missing requests first (`SetDefaults_Pod`), then the LimitRanger's defaults."""
        result = []
        for c in self.containers:
            limits = dict(c.limits)
            requests = dict(c.requests)
            if self.from_pod:
                requests = {**limits, **requests}
            limits = {**default_limits, **limits}
            requests = {**default_requests, **requests}
            requests = {**limits, **requests}
            result.append(
                Container(c.name, c.role, MappingProxyType(requests), MappingProxyType(limits))
            )
        return tuple(result)

    def pod_level(self) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
        """Pod-level requests and limits after `UseLimitsAsMissingRequestsInPod` (pod limits
        stand in for missing pod requests). The namespace LimitRange of gpuplane has no `Pod`
        item, so `handlePodLimitRange` adds nothing here."""
        limits = dict(self.pod_limits)
        return {**limits, **self.pod_requests}, limits

    def requests(
        self,
        default_requests: Resources = EMPTY_RESOURCES,
        default_limits: Resources = EMPTY_RESOURCES,
    ) -> dict[str, Decimal]:
        """One pod's requests as Kueue counts them: `resourcehelpers.PodRequests` of
        k8s.io/component-helpers (called by Kueue's `workload.totalRequestsFromPodSets` and
        `resources.NewRequestsFromPodSpec`) on the adjusted pod (`adjusted`).

        `AggregateContainerRequests`: the containers add up; a sidecar (an init container with
        restartPolicy Always) adds to them and to every init container after it; each init
        container needs its own request plus the sidecars started before it; the pod needs the
        larger of the two. Then pod-level requests (`spec.resources.requests`), where set,
        replace that sum for the resources pod-level resources support (cpu, memory,
        hugepages-*: `IsSupportedPodLevelResource`); then the pod overhead is added.
        """
        running: dict[str, Decimal] = {}
        sidecars: dict[str, Decimal] = {}
        init_peak: dict[str, Decimal] = {}
        for container in self.adjusted(default_requests, default_limits):
            effective = container.requests
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
        pod_requests, _ = self.pod_level()
        if any(pod_level_resource(n) for n in pod_requests):
            for name, value in pod_requests.items():
                if pod_level_resource(name):
                    pod[name] = value
        _add(pod, self.overhead)
        return {n: v for n, v in sorted(pod.items()) if v != 0}

    def limit_without_request(self) -> tuple[tuple[str, str], ...]:
        """(container, resource) pairs with a limit but no request in the template: where a
        LimitRange's default request, not the limit, is what Kueue counts. None for a pod
        from the API server, whose limits became its requests before the LimitRanger ran."""
        if self.from_pod:
            return ()
        return tuple(
            (c.name, r) for c in self.containers for r in sorted(c.limits) if r not in c.requests
        )

    def over_limit(
        self,
        default_requests: Resources = EMPTY_RESOURCES,
        default_limits: Resources = EMPTY_RESOURCES,
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Where a request exceeds its limit once Kueue has adjusted the pod: (the field below
        the pod spec, the resources, sorted), in `workload.ValidateResources`' order (init
        containers, containers, then pod-level resources)."""
        found: list[tuple[str, tuple[str, ...]]] = []
        index = {"initContainers": 0, "containers": 0}
        for c in self.adjusted(default_requests, default_limits):
            kind = "containers" if c.role == "container" else "initContainers"
            i = index[kind]
            index[kind] += 1
            over = tuple(
                sorted(r for r, v in c.requests.items() if r in c.limits and v > c.limits[r])
            )
            if over:
                found.append((f"{kind}[{i}]", over))
        found.sort(key=lambda item: not item[0].startswith("initContainers"))
        if self.pod_resources:
            requests, limits = self.pod_level()
            over = tuple(sorted(r for r, v in requests.items() if r in limits and v > limits[r]))
            if over:
                found.append(("resources", over))
        return tuple(found)


REQUESTS_EXCEED_LIMITS = "requests must not exceed its limits"
"""Kueue's `workload.RequestsMustNotExceedLimitMessage`."""
RESOURCES_VALIDATION_FAILED = "resources validation failed"
"""Kueue's `workload.ErrInvalidWLResources`."""


def resources_validation_message(
    pod_sets: Sequence[PodSet],
    default_requests: Resources = EMPTY_RESOURCES,
    default_limits: Resources = EMPTY_RESOURCES,
) -> str | None:
    """The message Kueue sets on a Workload whose adjusted requests exceed their limits, as
    `workload.ValidateAdmissibility` words it (reason `Misconfigured`, the Workload stays
    inadmissible): `resources validation failed: ` and the field errors of
    `ValidateResources`, aggregated as apimachinery's `errors.NewAggregate` prints them (one
    error alone, several in brackets joined by ", "). None when every request is within its
    limit."""
    errors: list[str] = []
    for p, ps in enumerate(pod_sets):
        for where, names in ps.over_limit(default_requests, default_limits):
            listed = ",".join(f'"{n}"' for n in names)
            errors.append(
                f"spec.podSets[{p}].template.spec.{where}: Invalid value: [{listed}]: "
                f"{REQUESTS_EXCEED_LIMITS}"
            )
    if not errors:
        return None
    unique = list(dict.fromkeys(errors))
    joined = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f"{RESOURCES_VALIDATION_FAILED}: {joined}"


def pod_level_resource(name: str) -> bool:
    """`resourcehelpers.IsSupportedPodLevelResource`: cpu, memory and hugepages-*."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


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
    refused: str | None = None
    """The API server's answer where Kueue's validating webhook for the kind denies the object
    on create (`pkg/controller/jobs/<kind>/*_webhook.go` `ValidateCreate`): the object is never
    created, so no Workload exists. With `refused_by`, the message of whoever else stops it."""
    refused_by: str | None = None
    """Who stops the object, where it is not Kueue's validating webhook (`KubeRay` for a RayJob
    Kueue suspends but never admits); None: Kueue's webhook."""
    refused_why: tuple[str, ...] = ()
    """Plain-words reasons for `refused_by`'s answer, and the way out."""
    claim_templates: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The ResourceClaimTemplates of the file in the job's namespace, by name: their documents,
    as `kubectl apply -f` creates them beside the job (Kueue reads a pod set's templates)."""
    priority_set_by: str | None = None
    """The MutatingAdmissionPolicy (by name) that set `priority_class`'s label on create (the
    admission chain's mutate step); None where the label, if any, is the job file's own."""
    priority_refused: bool = False
    """The admission chain's admission-policies step refused the object with the security
    layer's priority policy (no label below Kubernetes 1.36, or a class of another queue):
    Kueue's answer goes on as if the label named the team's own class."""

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


class BadField(Exception):
    def __init__(self, path: FieldPath, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def path_text(path: FieldPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def read_field(
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
            raise BadField(path, f"{path_text(path)} is missing")
        return None
    if isinstance(node, bool) and kind is not bool and bool not in _as_tuple(kind):
        raise BadField(path, f"{path_text(path)} must be {_type_name(kind)}, not a boolean")
    if not isinstance(node, kind):
        raise BadField(path, f"{path_text(path)} must be {_type_name(kind)}")
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


def read_count(data: Any, path: FieldPath, default: int) -> int:
    value = read_field(data, path, int)
    if value is None:
        return default
    if value < 0:
        raise BadField(path, f"{path_text(path)} must not be negative")
    return int(value)


def read_strings(data: Any, path: FieldPath) -> dict[str, str]:
    mapping = read_field(data, path, dict) or {}
    return {str(k): str(v) for k, v in mapping.items() if v is not None}


def read_resources(data: Any, path: FieldPath) -> dict[str, Decimal]:
    mapping = read_field(data, path, dict) or {}
    result: dict[str, Decimal] = {}
    for name, value in mapping.items():
        if value is None or isinstance(value, bool | dict | list):
            raise BadField((*path, name), f"{path_text((*path, name))} must be a quantity")
        try:
            result[str(name)] = quantity.parse(value)
        except ValueError as err:
            raise BadField((*path, name), f"{path_text((*path, name))}: {err}") from None
        if result[str(name)] < 0:  # ValidateNonnegativeQuantity: the API server refuses it
            raise BadField(
                (*path, name),
                f"{path_text((*path, name))}: must be greater than or equal to 0",
            )
    return result


def _containers(data: Any, spec: FieldPath) -> tuple[Container, ...]:
    result: list[Container] = []
    for key, role in (("initContainers", "init"), ("containers", "container")):
        items = read_field(data, (*spec, key), list) or []
        for index, _ in enumerate(items):
            here = (*spec, key, index)
            read_field(data, here, dict, required=True)
            name = read_field(data, (*here, "name"), str) or f"{key}[{index}]"
            restart = read_field(data, (*here, "restartPolicy"), str)
            result.append(
                Container(
                    name=name,
                    role="sidecar" if role == "init" and restart == "Always" else role,
                    requests=MappingProxyType(
                        read_resources(data, (*here, "resources", "requests"))
                    ),
                    limits=MappingProxyType(read_resources(data, (*here, "resources", "limits"))),
                )
            )
    if not any(c.role == "container" for c in result):
        raise BadField(
            (*spec, "containers"), f"{path_text((*spec, 'containers'))}: the pod has no containers"
        )
    return tuple(result)


def read_tolerations(data: Any, spec: FieldPath) -> tuple[Toleration, ...]:
    items = read_field(data, (*spec, "tolerations"), list) or []
    result = []
    for index, _ in enumerate(items):
        here = (*spec, "tolerations", index)
        read_field(data, here, dict, required=True)
        operator = read_field(data, (*here, "operator"), str) or "Equal"
        result.append(
            Toleration(
                key=read_field(data, (*here, "key"), str) or "",
                operator=operator,
                value=str(read_field(data, (*here, "value"), (str, int, float)) or ""),
                effect=read_field(data, (*here, "effect"), str) or "",
            )
        )
    return tuple(result)


def read_affinity(data: Any, spec: FieldPath) -> tuple[tuple[Requirement, ...], ...]:
    terms_path = (
        *spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    terms = read_field(data, terms_path, list) or []
    result = []
    for t, _ in enumerate(terms):
        expressions = read_field(data, (*terms_path, t, "matchExpressions"), list) or []
        term = []
        for e, _ in enumerate(expressions):
            here = (*terms_path, t, "matchExpressions", e)
            values = read_field(data, (*here, "values"), list) or []
            term.append(
                Requirement(
                    key=read_field(data, (*here, "key"), str, required=True),
                    operator=read_field(data, (*here, "operator"), str, required=True),
                    values=tuple(str(v) for v in values),
                )
            )
        result.append(tuple(term))
    return tuple(result)


def read_claims(data: Any, spec: FieldPath) -> tuple[ResourceClaim, ...]:
    """The pod's `spec.resourceClaims`, each with what it names."""
    items = read_field(data, (*spec, "resourceClaims"), list) or []
    result = []
    for index, _ in enumerate(items):
        here = (*spec, "resourceClaims", index)
        read_field(data, here, dict, required=True)
        result.append(
            ResourceClaim(
                name=read_field(data, (*here, "name"), str) or "",
                index=index,
                template=read_field(data, (*here, "resourceClaimTemplateName"), str),
                claim=read_field(data, (*here, "resourceClaimName"), str),
            )
        )
    return tuple(result)


def read_pod_set(
    data: Any,
    template: FieldPath,
    name: str,
    count: int,
    *,
    min_count: int | None = None,
    extra: Iterable[Container] = (),
    from_pod: bool = False,
) -> PodSet:
    """A pod set from a PodTemplateSpec at `template` (its `spec` holds the pod); `extra`
    containers are appended to its containers (what an operator injects into the pod)."""
    read_field(data, template, dict, required=True)
    spec = (*template, "spec")
    read_field(data, spec, dict, required=True)
    return PodSet(
        name=name,
        count=count,
        min_count=min_count,
        containers=(*_containers(data, spec), *extra),
        pod_requests=MappingProxyType(read_resources(data, (*spec, "resources", "requests"))),
        pod_limits=MappingProxyType(read_resources(data, (*spec, "resources", "limits"))),
        pod_resources=read_field(data, (*spec, "resources"), dict) is not None,
        from_pod=from_pod,
        scheduler_name=read_field(data, (*spec, "schedulerName"), str) or None,
        overhead=MappingProxyType(read_resources(data, (*spec, "overhead"))),
        node_selector=MappingProxyType(read_strings(data, (*spec, "nodeSelector"))),
        affinity=read_affinity(data, spec),
        tolerations=read_tolerations(data, spec),
        priority_class_name=read_field(data, (*spec, "priorityClassName"), str),
        resource_claims=read_claims(data, spec),
        path=template,
        annotations=MappingProxyType(read_strings(data, (*template, "metadata", "annotations"))),
    )


def job_pod_count(data: Any, job_spec: FieldPath) -> int:
    """Kueue's `podsCount` of a Job spec: parallelism (default 1), at most completions."""
    parallelism = read_count(data, (*job_spec, "parallelism"), 1)
    completions = read_field(data, (*job_spec, "completions"), int)
    return min(parallelism, completions) if completions is not None else parallelism


# --- requests --------------------------------------------------------------------------------


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
