"""A job as Kueue sees it: a neutral `Workload` of pod sets, whatever the job's kind, and the
pod-spec reading every kind shares. `BadField` says where a field is wrong; the readers turn it into
an `Unreadable`, so nothing raises past them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
        default_requests: Resources = EMPTY_RESOURCES,
        default_limits: Resources = EMPTY_RESOURCES,
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
    return result


def _containers(data: Any, spec: FieldPath) -> tuple[Container, ...]:
    result: list[Container] = []
    for field, role in (("initContainers", "init"), ("containers", "container")):
        items = read_field(data, (*spec, field), list) or []
        for index, _ in enumerate(items):
            here = (*spec, field, index)
            read_field(data, here, dict, required=True)
            name = read_field(data, (*here, "name"), str) or f"{field}[{index}]"
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


def read_pod_set(
    data: Any,
    template: FieldPath,
    name: str,
    count: int,
    *,
    min_count: int | None = None,
    extra: Iterable[Container] = (),
) -> PodSet:
    """A pod set from a PodTemplateSpec at `template` (its `spec` holds the pod)."""
    read_field(data, template, dict, required=True)
    spec = (*template, "spec")
    read_field(data, spec, dict, required=True)
    claims = read_field(data, (*spec, "resourceClaims"), list) or []
    return PodSet(
        name=name,
        count=count,
        min_count=min_count,
        containers=(*_containers(data, spec), *extra),
        overhead=MappingProxyType(read_resources(data, (*spec, "overhead"))),
        node_selector=MappingProxyType(read_strings(data, (*spec, "nodeSelector"))),
        affinity=read_affinity(data, spec),
        tolerations=read_tolerations(data, spec),
        priority_class_name=read_field(data, (*spec, "priorityClassName"), str),
        resource_claims=tuple(
            str(c.get("name", "")) for c in claims if isinstance(c, dict) and c.get("name")
        ),
        path=template,
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
