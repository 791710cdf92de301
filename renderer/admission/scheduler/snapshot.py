"""Kueue's own objects, as its scheduler's snapshot holds them: ResourceFlavors, ClusterQueues,
Cohorts, WorkloadPriorityClasses and the Workloads that hold quota, read from Kueue v1beta2 API
objects given as dicts (what `render` writes, what `kubectl get -o json` prints), immutable, with
the defaults Kueue's CRDs and webhooks give a field left out, and the quota tree built from them
(`renderer.model.quota_tree`, the port of pkg/cache/scheduler/resource_node.go).

Design: docs/fit.md#kueues-objects-as-its-schedulers-snapshot-holds-them
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Literal, cast

from renderer.model import quantity
from renderer.model.quota_tree import FlavorResource, Limits, QuotaNode, settle

ZERO = Decimal(0)
PreemptionPolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"]
BorrowPolicy = Literal["Never", "LowerPriority"]
FungibilityPolicy = Literal["MayStopSearch", "TryNextFlavor"]
QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]
PREEMPTION_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")
BORROW_POLICIES = ("Never", "LowerPriority")
FUNGIBILITY_POLICIES = ("MayStopSearch", "TryNextFlavor")
QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
KUEUE_API = ("kueue.x-k8s.io/v1beta2",)


class ObjectError(ValueError):
    """A field of a Kueue object that cannot be read; the message starts with its path."""


# --- the objects ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """`ResourceQuota`: one resource of one flavor."""

    name: str
    nominal: Decimal = ZERO
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None

    @property
    def limits(self) -> Limits:
        return Limits(self.nominal, self.borrowing_limit, self.lending_limit)


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    """`FlavorQuotas`: a flavor of a resource group and its quotas, in the object's order."""

    name: str
    resources: tuple[ResourceQuota, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """`ResourceGroup`: the resources it covers and its flavors, in the order Kueue tries them."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True, slots=True)
class BorrowWithinCohort:
    policy: BorrowPolicy = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Preemption:
    """`ClusterQueuePreemption`, defaults applied."""

    within_cluster_queue: PreemptionPolicy = "Never"
    reclaim_within_cohort: PreemptionPolicy = "Never"
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: FungibilityPolicy = "MayStopSearch"
    when_can_preempt: FungibilityPolicy = "TryNextFlavor"
    preference: str | None = None


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None


def _quotas(groups: Sequence[ResourceGroup]) -> dict[FlavorResource, Limits]:
    return {
        (flavor.name, quota.name): quota.limits
        for group in groups
        for flavor in group.flavors
        for quota in flavor.resources
    }


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    preemption: Preemption = Preemption()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    fair_weight: Decimal = Decimal(1)
    queueing_strategy: QueueingStrategy = "BestEffortFIFO"
    admission_scope: str | None = None
    """`admissionScope.admissionMode`; None when the field is absent."""
    stop_policy: str = "None"

    @property
    def quotas(self) -> dict[FlavorResource, Limits]:
        return _quotas(self.resource_groups)

    def group_of(self, resource: str) -> ResourceGroup | None:
        return next((g for g in self.resource_groups if resource in g.covered), None)


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: Decimal = Decimal(1)

    @property
    def quotas(self) -> dict[FlavorResource, Limits]:
        return _quotas(self.resource_groups)


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass:
    name: str
    value: int
    description: str = ""


@dataclass(frozen=True, slots=True)
class PodSetUsage:
    """A `PodSetAssignment`: pods, the flavor of each resource, and the total it holds."""

    name: str
    count: int
    flavors: Mapping[str, str]
    usage: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    """A Workload that holds quota in `cluster_queue`."""

    name: str
    namespace: str
    cluster_queue: str
    priority: int = 0
    pod_sets: tuple[PodSetUsage, ...] = ()
    uid: str = ""
    created: str = ""
    """metadata.creationTimestamp (RFC 3339), "" when absent (Go's zero time)."""
    reserved_at: str = ""
    """The QuotaReserved condition's lastTransitionTime (RFC 3339), "" when absent."""
    evicted: bool = False
    """Its `Evicted` condition is True (`workloadevict.IsEvicted`): already being preempted."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def usage(self) -> dict[FlavorResource, Decimal]:
        """What it holds per (flavor, resource): a resource no flavor is assigned to counts
        against no quota."""
        out: dict[FlavorResource, Decimal] = {}
        for ps in self.pod_sets:
            for resource, value in ps.usage.items():
                flavor = ps.flavors.get(resource)
                if flavor is not None:
                    out[(flavor, resource)] = out.get((flavor, resource), ZERO) + value
        return out


# --- the snapshot --------------------------------------------------------------------------------


@dataclass(frozen=True)
class KueueSnapshot:
    """What Kueue's scheduler sees: its objects by name, the Workloads holding quota."""

    flavors: Mapping[str, ResourceFlavor] = field(default_factory=dict)
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    cohorts: Mapping[str, Cohort] = field(default_factory=dict)
    priority_classes: Mapping[str, WorkloadPriorityClass] = field(default_factory=dict)
    workloads: tuple[AdmittedWorkload, ...] = ()
    problems: tuple[str, ...] = ()
    reservations: Mapping[str, Mapping[FlavorResource, Decimal]] = field(default_factory=dict)
    """A ClusterQueue's `status.flavorsReservation`, where a reader counts it instead of the
    sum of its Workloads (`fit --usage` given the ClusterQueue but not all its Workloads)."""

    def workloads_of(self, cluster_queue: str) -> list[AdmittedWorkload]:
        return [w for w in self.workloads if w.cluster_queue == cluster_queue]

    def tree(self, *, with_usage: bool = True) -> QuotaTree:
        """A fresh quota tree (every call: the caller may change its usage)."""
        tree = build_tree(
            self.cluster_queues.values(),
            self.cohorts.values(),
            [w for w in self.workloads if w.cluster_queue not in self.reservations]
            if with_usage
            else (),
        )
        for name, reserved in sorted(self.reservations.items()) if with_usage else ():
            node = tree.cluster_queue(name)
            if node is None:
                continue
            for fr, value in reserved.items():
                node.add_usage(fr, value)
        return tree


class QuotaTree(dict[str, QuotaNode]):
    """The tree's nodes by name (ClusterQueues and Cohorts share Kueue's name space only by
    kind: a Cohort and a ClusterQueue of one name are keyed `Cohort/<name>` for the Cohort)."""

    def cluster_queue(self, name: str) -> QuotaNode | None:
        node = self.get(name)
        return node if node is not None and node.kind == "ClusterQueue" else None

    def cohort(self, name: str) -> QuotaNode | None:
        node = self.get(_cohort_key(self, name))
        return node if node is not None and node.kind == "Cohort" else None

    def roots(self) -> list[QuotaNode]:
        return [n for n in self.values() if n.parent is None]


def _cohort_key(nodes: Mapping[str, QuotaNode], name: str) -> str:
    found = nodes.get(name)
    return name if found is None or found.kind == "Cohort" else f"Cohort/{name}"


def cycle_members(cohorts: Mapping[str, Cohort]) -> set[str]:
    """The Cohorts that are on, or under, a cycle of `parentName`s (`hierarchy.HasCycle`)."""
    bad: set[str] = set()
    for start in cohorts:
        seen: list[str] = []
        name: str | None = start
        while name is not None and name not in seen:
            seen.append(name)
            cohort = cohorts.get(name)
            name = cohort.parent if cohort is not None else None
        if name is not None:
            bad.add(start)
    return bad


def build_tree(
    cluster_queues: Iterable[ClusterQueue],
    cohorts: Iterable[Cohort],
    workloads: Iterable[AdmittedWorkload] = (),
) -> QuotaTree:
    """Kueue's cohort forest with every subtree quota settled and the Workloads' usage added
    (`Cache.Snapshot`): implicit Cohorts for names no object defines, cycles left out, a
    Workload of a ClusterQueue not in the tree ignored."""
    given = {c.name: c for c in cohorts}
    broken = cycle_members(given)
    nodes = QuotaTree()
    cohort_nodes: dict[str, QuotaNode] = {}

    def cohort_node(name: str) -> QuotaNode:
        found = cohort_nodes.get(name)
        if found is not None:
            return found
        cohort = given.get(name)
        node = QuotaNode(name, "Cohort", cohort.quotas if cohort is not None else {})
        cohort_nodes[name] = node
        if cohort is not None and cohort.parent is not None:
            cohort_node(cohort.parent).adopt(node)
        return node

    for name in sorted(given):
        if name not in broken:
            cohort_node(name)
    queues = sorted(cluster_queues, key=lambda q: q.name)
    for cq in queues:
        if cq.cohort is not None and cq.cohort in broken:
            continue
        node = QuotaNode(cq.name, "ClusterQueue", cq.quotas)
        nodes[cq.name] = node
        if cq.cohort is not None:
            cohort_node(cq.cohort).adopt(node)
    for name, node in sorted(cohort_nodes.items()):
        nodes[_cohort_key(nodes, name)] = node
    for root in [n for n in nodes.values() if n.parent is None]:
        if root.kind == "Cohort":
            settle(root)
        else:
            root.usage = {}
            root.subtree = {fr: q.nominal for fr, q in root.quotas.items()}
    for wl in workloads:
        target = nodes.cluster_queue(wl.cluster_queue)
        if target is None:
            continue
        for fr, value in wl.usage.items():
            target.add_usage(fr, value)
    return nodes


# --- reading -------------------------------------------------------------------------------------


def read_objects(objects: Iterable[Mapping[str, Any]]) -> KueueSnapshot:
    """The Kueue objects among `objects` (others are passed over); never raises: an object that
    cannot be read is left out and named in `problems`; the first of two of one name counts."""
    flavors: dict[str, ResourceFlavor] = {}
    queues: dict[str, ClusterQueue] = {}
    cohorts: dict[str, Cohort] = {}
    classes: dict[str, WorkloadPriorityClass] = {}
    workloads: dict[str, AdmittedWorkload] = {}
    problems: list[str] = []
    readers: dict[str, tuple[Any, dict[str, Any]]] = {
        "ResourceFlavor": (resource_flavor, flavors),
        "ClusterQueue": (cluster_queue, queues),
        "Cohort": (cohort, cohorts),
        "WorkloadPriorityClass": (priority_class, classes),
        "Workload": (admitted_workload, workloads),
    }
    for i, obj in enumerate(objects):
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("kind")
        if not isinstance(kind, str) or kind not in readers:
            continue
        if obj.get("apiVersion", KUEUE_API[0]) not in KUEUE_API:
            continue
        read, into = readers[kind]
        try:
            found = read(obj)
        except ObjectError as error:
            problems.append(f"{kind} #{i}: {error}")
            continue
        if found is None:
            continue
        key = found.key if isinstance(found, AdmittedWorkload) else found.name
        into.setdefault(key, found)
    return KueueSnapshot(
        flavors=flavors,
        cluster_queues=queues,
        cohorts=cohorts,
        priority_classes=classes,
        workloads=tuple(workloads.values()),
        problems=tuple(problems),
    )


def resource_flavor(obj: Mapping[str, Any]) -> ResourceFlavor:
    spec = _map(obj.get("spec"), "spec")
    labels = _map(spec.get("nodeLabels"), "spec.nodeLabels")
    taints = tuple(
        Taint(
            _str(t.get("key"), f"spec.nodeTaints[{i}].key"),
            _str(t.get("value"), f"spec.nodeTaints[{i}].value", ""),
            _str(t.get("effect"), f"spec.nodeTaints[{i}].effect"),
        )
        for i, t in _maps(spec.get("nodeTaints"), "spec.nodeTaints")
    )
    tolerations = tuple(
        Toleration(
            _str(t.get("key"), f"spec.tolerations[{i}].key", ""),
            _str(t.get("operator"), f"spec.tolerations[{i}].operator", "Equal"),
            _str(t.get("value"), f"spec.tolerations[{i}].value", ""),
            _str(t.get("effect"), f"spec.tolerations[{i}].effect", ""),
        )
        for i, t in _maps(spec.get("tolerations"), "spec.tolerations")
    )
    topology = spec.get("topologyName")
    return ResourceFlavor(
        name=_name(obj),
        node_labels=MappingProxyType(
            {_str(k, "spec.nodeLabels"): _str(v, f"spec.nodeLabels.{k}") for k, v in labels.items()}
        ),
        node_taints=taints,
        tolerations=tolerations,
        topology_name=None if topology is None else _str(topology, "spec.topologyName"),
    )


def cluster_queue(obj: Mapping[str, Any]) -> ClusterQueue:
    spec = _map(obj.get("spec"), "spec")
    cohort_name = spec.get("cohortName")
    scope = _map(spec.get("admissionScope"), "spec.admissionScope")
    return ClusterQueue(
        name=_name(obj),
        cohort=_str(cohort_name, "spec.cohortName") or None if cohort_name is not None else None,
        resource_groups=resource_groups(spec.get("resourceGroups"), "spec.resourceGroups"),
        preemption=preemption(spec.get("preemption"), "spec.preemption"),
        flavor_fungibility=flavor_fungibility(
            spec.get("flavorFungibility"), "spec.flavorFungibility"
        ),
        fair_weight=fair_weight(spec.get("fairSharing"), "spec.fairSharing"),
        queueing_strategy=cast(
            QueueingStrategy,
            _choice(
                spec.get("queueingStrategy"),
                "spec.queueingStrategy",
                QUEUEING_STRATEGIES,
                "BestEffortFIFO",
            ),
        ),
        admission_scope=(
            _str(scope.get("admissionMode"), "spec.admissionScope.admissionMode")
            if "admissionScope" in spec
            else None
        ),
        stop_policy=_str(spec.get("stopPolicy"), "spec.stopPolicy", "None"),
    )


def cohort(obj: Mapping[str, Any]) -> Cohort:
    spec = _map(obj.get("spec"), "spec")
    parent = spec.get("parentName")
    return Cohort(
        name=_name(obj),
        parent=(_str(parent, "spec.parentName") or None) if parent is not None else None,
        resource_groups=resource_groups(spec.get("resourceGroups"), "spec.resourceGroups"),
        fair_weight=fair_weight(spec.get("fairSharing"), "spec.fairSharing"),
    )


def priority_class(obj: Mapping[str, Any]) -> WorkloadPriorityClass:
    return WorkloadPriorityClass(
        name=_name(obj),
        value=_int(obj.get("value"), "value"),
        description=_str(obj.get("description"), "description", ""),
    )


def admitted_workload(obj: Mapping[str, Any]) -> AdmittedWorkload | None:
    """The Workload if it holds quota (`HasQuotaReservation`, not finished), else None."""
    meta = _map(obj.get("metadata"), "metadata")
    spec = _map(obj.get("spec"), "spec")
    status = _map(obj.get("status"), "status")
    conditions = {
        _str(c.get("type"), f"status.conditions[{i}].type"): c
        for i, c in _maps(status.get("conditions"), "status.conditions")
    }
    reserved = conditions.get("QuotaReserved", {})
    finished = conditions.get("Finished", {})
    evicted = conditions.get("Evicted", {})
    admission = status.get("admission")
    if admission is None or reserved.get("status") != "True" or finished.get("status") == "True":
        return None
    admission = _map(admission, "status.admission")
    counts = {
        _str(ps.get("name"), f"spec.podSets[{i}].name", "main"): _int(
            ps.get("count", 1), f"spec.podSets[{i}].count"
        )
        for i, ps in _maps(spec.get("podSets"), "spec.podSets")
    }
    pod_sets = []
    for i, psa in _maps(admission.get("podSetAssignments"), "status.admission.podSetAssignments"):
        at = f"status.admission.podSetAssignments[{i}]"
        name = _str(psa.get("name"), f"{at}.name", "main")
        flavors = _map(psa.get("flavors"), f"{at}.flavors")
        used = _map(psa.get("resourceUsage"), f"{at}.resourceUsage")
        pod_sets.append(
            PodSetUsage(
                name=name,
                count=_int(psa.get("count", counts.get(name, 1)), f"{at}.count"),
                flavors=MappingProxyType(
                    {str(r): _str(f, f"{at}.flavors.{r}") for r, f in flavors.items()}
                ),
                usage=MappingProxyType(
                    {str(r): _quantity(v, f"{at}.resourceUsage.{r}") for r, v in used.items()}
                ),
            )
        )
    return AdmittedWorkload(
        name=_name(obj),
        namespace=_str(meta.get("namespace"), "metadata.namespace", ""),
        cluster_queue=_str(admission.get("clusterQueue"), "status.admission.clusterQueue"),
        priority=_int(spec.get("priority", 0), "spec.priority"),
        pod_sets=tuple(pod_sets),
        uid=_str(meta.get("uid"), "metadata.uid", ""),
        created=_str(meta.get("creationTimestamp"), "metadata.creationTimestamp", ""),
        reserved_at=_str(
            reserved.get("lastTransitionTime"), "QuotaReserved.lastTransitionTime", ""
        ),
        evicted=evicted.get("status") == "True",
    )


def resource_groups(value: Any, where: str) -> tuple[ResourceGroup, ...]:
    groups = []
    for g, group in _maps(value, where):
        at = f"{where}[{g}]"
        covered = tuple(
            _str(r, f"{at}.coveredResources[{i}]")
            for i, r in enumerate(_list(group.get("coveredResources"), f"{at}.coveredResources"))
        )
        flavors = []
        for f, flavor in _maps(group.get("flavors"), f"{at}.flavors"):
            fat = f"{at}.flavors[{f}]"
            flavors.append(
                FlavorQuotas(
                    _str(flavor.get("name"), f"{fat}.name"),
                    tuple(
                        _resource_quota(r, f"{fat}.resources[{i}]")
                        for i, r in _maps(flavor.get("resources"), f"{fat}.resources")
                    ),
                )
            )
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups)


def _resource_quota(res: Mapping[str, Any], at: str) -> ResourceQuota:
    borrowing, lending = res.get("borrowingLimit"), res.get("lendingLimit")
    return ResourceQuota(
        _str(res.get("name"), f"{at}.name"),
        _quantity(res.get("nominalQuota", 0), f"{at}.nominalQuota"),
        None if borrowing is None else _quantity(borrowing, f"{at}.borrowingLimit"),
        None if lending is None else _quantity(lending, f"{at}.lendingLimit"),
    )


def preemption(value: Any, where: str) -> Preemption:
    spec = _map(value, where)
    borrow = _map(spec.get("borrowWithinCohort"), f"{where}.borrowWithinCohort")
    threshold = borrow.get("maxPriorityThreshold")
    return Preemption(
        within_cluster_queue=cast(
            PreemptionPolicy,
            _choice(
                spec.get("withinClusterQueue"),
                f"{where}.withinClusterQueue",
                PREEMPTION_POLICIES,
                "Never",
            ),
        ),
        reclaim_within_cohort=cast(
            PreemptionPolicy,
            _choice(
                spec.get("reclaimWithinCohort"),
                f"{where}.reclaimWithinCohort",
                PREEMPTION_POLICIES,
                "Never",
            ),
        ),
        borrow_within_cohort=BorrowWithinCohort(
            cast(
                BorrowPolicy,
                _choice(
                    borrow.get("policy"),
                    f"{where}.borrowWithinCohort.policy",
                    BORROW_POLICIES,
                    "Never",
                ),
            ),
            None
            if threshold is None
            else _int(threshold, f"{where}.borrowWithinCohort.maxPriorityThreshold"),
        ),
    )


def flavor_fungibility(value: Any, where: str) -> FlavorFungibility:
    spec = _map(value, where)
    preference = spec.get("preference")
    return FlavorFungibility(
        cast(
            FungibilityPolicy,
            _choice(
                spec.get("whenCanBorrow"),
                f"{where}.whenCanBorrow",
                FUNGIBILITY_POLICIES,
                "MayStopSearch",
            ),
        ),
        cast(
            FungibilityPolicy,
            _choice(
                spec.get("whenCanPreempt"),
                f"{where}.whenCanPreempt",
                FUNGIBILITY_POLICIES,
                "TryNextFlavor",
            ),
        ),
        None if preference is None else _str(preference, f"{where}.preference"),
    )


def fair_weight(value: Any, where: str) -> Decimal:
    spec = _map(value, where)
    weight = spec.get("weight")
    return Decimal(1) if weight is None else _quantity(weight, f"{where}.weight")


# --- typed access --------------------------------------------------------------------------------


def _name(obj: Mapping[str, Any]) -> str:
    return _str(_map(obj.get("metadata"), "metadata").get("name"), "metadata.name")


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ObjectError(f"{where}: expected an object")
    return value


def _list(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise ObjectError(f"{where}: expected a list")
    return value


def _maps(value: Any, where: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for i, item in enumerate(_list(value, where)):
        yield i, _map(item, f"{where}[{i}]")


def _str(value: Any, where: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise ObjectError(f"{where}: expected a string")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise ObjectError(f"{where}: expected an int32")
    return value


def _choice(value: Any, where: str, allowed: Sequence[str], default: str) -> str:
    if value is None:
        return default
    if value not in allowed:
        raise ObjectError(f"{where}: expected one of {', '.join(allowed)}")
    return str(value)


def _quantity(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ObjectError(f"{where}: expected a quantity")
    try:
        return quantity.parse(value)
    except ValueError:
        raise ObjectError(f"{where}: not a Kubernetes quantity") from None


__all__ = [
    "AdmittedWorkload",
    "BorrowWithinCohort",
    "ClusterQueue",
    "Cohort",
    "FlavorFungibility",
    "FlavorQuotas",
    "KueueSnapshot",
    "ObjectError",
    "PodSetUsage",
    "Preemption",
    "QuotaTree",
    "ResourceFlavor",
    "ResourceGroup",
    "ResourceQuota",
    "WorkloadPriorityClass",
    "build_tree",
    "read_objects",
]
