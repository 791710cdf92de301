"""What Kueue's test builders make, as the API objects' YAML: the meaning that
`tools/port_kueue_flavorassigner.py` gives the Go trees `tools/golit.py` reads.

Each builder below does what its namesake in Kueue v0.19.2 does
(`pkg/util/testing/v1beta2/wrappers.go`, `pkg/util/testing/core.go`,
`pkg/util/testingjobs/node/wrappers.go`), field by field, and no more: a builder method the
tables do not use raises, so a new upstream case cannot be transcribed wrongly in silence.
"""

from __future__ import annotations

import copy
from typing import Any

from tools.golit import Binary, Call, Composite, Index, Lit, Name, Select, Unary

MI = 1 << 20
GI = 1 << 30

CONSTANTS: dict[str, Any] = {
    "corev1.ResourceCPU": "cpu",
    "corev1.ResourceMemory": "memory",
    "corev1.ResourcePods": "pods",
    "corev1.LabelHostname": "kubernetes.io/hostname",
    "corev1.TaintEffectNoSchedule": "NoSchedule",
    "corev1.TaintEffectNoExecute": "NoExecute",
    "corev1.TolerationOpEqual": "Equal",
    "corev1.TolerationOpExists": "Exists",
    "corev1.NodeSelectorOpIn": "In",
    "corev1.NodeSelectorOpNotIn": "NotIn",
    "corev1.NodeSelectorOpExists": "Exists",
    "kueue.DefaultPodSetName": "main",
    "kueue.TryNextFlavor": "TryNextFlavor",
    "kueue.MayStopSearch": "MayStopSearch",
    "kueue.PreemptionPolicyLowerPriority": "LowerPriority",
    "kueue.PreemptionPolicyLowerOrNewerEqualPriority": "LowerOrNewerEqualPriority",
    "kueue.PreemptionPolicyNever": "Never",
    "kueue.PreemptionPolicyAny": "Any",
    "kueue.BorrowWithinCohortPolicyLowerPriority": "LowerPriority",
    "kueue.BorrowWithinCohortPolicyNever": "Never",
    "kueue.PreemptionOverBorrowing": "PreemptionOverBorrowing",
    "kueue.BorrowingOverPreemption": "BorrowingOverPreemption",
    "preemptioncommon.Preempt": "Preempt",
    "preemptioncommon.Reclaim": "Reclaim",
    "preemptioncommon.NoCandidates": "NoCandidates",
    "utiltesting.Mi": MI,
    "utiltesting.Gi": GI,
    "Fit": "Fit",
    "NoFit": "NoFit",
    "Preempt": "Preempt",
    "true": True,
    "false": False,
    "nil": None,
    "fit": "fit",
    "noFit": "noFit",
    "preempt": "preempt",
    "reclaim": "reclaim",
    "noPreemptionCandidates": "noPreemptionCandidates",
    "ErrNoTASFlavorAssigned": "ErrNoTASFlavorAssigned",
    "ErrNoTASCacheInformation": "ErrNoTASCacheInformation",
}


class Unknown(Exception):
    """Something the tables use that the port does not know: transcribe it by hand."""


class Builder:
    """A Kueue wrapper: `obj` is the object it builds; `.Obj()` returns it."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def Obj(self) -> dict[str, Any]:
        return self.obj

    def call(self, method: str, args: list[Any]) -> Any:
        found = getattr(self, method, None)
        if found is None:
            raise Unknown(f"{type(self).__name__}.{method}")
        return found(*args)


class PodSet(Builder):
    def __init__(self, name: str, count: int) -> None:
        super().__init__(
            {
                "name": name,
                "count": count,
                "template": {
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {}}}]}
                },
            }
        )

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.obj["template"]["spec"]
        return spec

    def Request(self, resource: str, quantity: str) -> PodSet:
        self.spec["containers"][0]["resources"]["requests"][resource] = quantity
        return self

    def Toleration(self, toleration: dict[str, Any]) -> PodSet:
        self.spec.setdefault("tolerations", []).append(toleration)
        return self

    def NodeSelector(self, labels: dict[str, str]) -> PodSet:
        self.spec["nodeSelector"] = labels
        return self

    def Containers(self, *containers: dict[str, Any]) -> PodSet:
        self.spec["containers"] = list(containers)
        return self

    def RequiredDuringSchedulingIgnoredDuringExecution(self, terms: list[dict[str, Any]]) -> PodSet:
        affinity = self.spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        required.setdefault("nodeSelectorTerms", []).extend(terms)
        return self

    def RequiredTopologyRequest(self, level: str) -> PodSet:
        self.obj.setdefault("topologyRequest", {})["required"] = level
        return self

    def PreferredTopologyRequest(self, level: str) -> PodSet:
        self.obj.setdefault("topologyRequest", {})["preferred"] = level
        return self

    def PodSetGroup(self, name: str) -> PodSet:
        self.obj.setdefault("topologyRequest", {})["podSetGroupName"] = name
        return self


class FlavorQuotas(Builder):
    def __init__(self, name: str) -> None:
        super().__init__({"name": name, "resources": []})

    def Resource(self, name: str, *quantities: str) -> FlavorQuotas:
        wrapper = self.ResourceQuotaWrapper(name)
        if quantities:
            wrapper.NominalQuota(quantities[0])
        if len(quantities) > 1 and quantities[1]:
            wrapper.BorrowingLimit(quantities[1])
        if len(quantities) > 2 and quantities[2]:
            wrapper.LendingLimit(quantities[2])
        return wrapper.Append()

    def ResourceQuotaWrapper(self, name: str) -> ResourceQuota:
        return ResourceQuota(self, name)


class ResourceQuota(Builder):
    def __init__(self, parent: FlavorQuotas, name: str) -> None:
        # a Go resource.Quantity's zero value: nominalQuota 0 unless set
        super().__init__({"name": name, "nominalQuota": "0"})
        self.parent = parent

    def NominalQuota(self, quantity: str) -> ResourceQuota:
        self.obj["nominalQuota"] = quantity
        return self

    def BorrowingLimit(self, quantity: str) -> ResourceQuota:
        self.obj["borrowingLimit"] = quantity
        return self

    def LendingLimit(self, quantity: str) -> ResourceQuota:
        self.obj["lendingLimit"] = quantity
        return self

    def Append(self) -> FlavorQuotas:
        self.parent.obj["resources"].append(self.obj)
        return self.parent


def _resource_group(flavors: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """`ResourceGroup(flavors...)` of wrappers.go: the covered resources are the first
    flavor's, in its order (the wrapper panics unless every flavor lists the same)."""
    covered = [entry["name"] for entry in flavors[0]["resources"]] if flavors else []
    return {"coveredResources": covered, "flavors": list(flavors)}


class ClusterQueue(Builder):
    def __init__(self, name: str) -> None:
        # MakeClusterQueue's defaults; `namespaceSelector: {}` and BestEffortFIFO are kept out:
        # flavor assignment does not read them
        super().__init__(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "flavorFungibility": {
                        "whenCanBorrow": "MayStopSearch",
                        "whenCanPreempt": "TryNextFlavor",
                    },
                },
            }
        )

    def Cohort(self, name: str) -> ClusterQueue:
        self.obj["spec"]["cohortName"] = name
        return self

    def ResourceGroup(self, *flavors: dict[str, Any]) -> ClusterQueue:
        self.obj["spec"].setdefault("resourceGroups", []).append(_resource_group(flavors))
        return self

    def Preemption(self, preemption: dict[str, Any]) -> ClusterQueue:
        self.obj["spec"]["preemption"] = preemption
        return self

    def FlavorFungibility(self, fungibility: dict[str, Any]) -> ClusterQueue:
        self.obj["spec"]["flavorFungibility"] = fungibility
        return self


class Cohort(Builder):
    def __init__(self, name: str) -> None:
        super().__init__(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Cohort",
                "metadata": {"name": name},
                "spec": {},
            }
        )

    def Parent(self, name: str) -> Cohort:
        self.obj["spec"]["parentName"] = name
        return self

    def ResourceGroup(self, *flavors: dict[str, Any]) -> Cohort:
        self.obj["spec"].setdefault("resourceGroups", []).append(_resource_group(flavors))
        return self


class ResourceFlavor(Builder):
    def __init__(self, name: str) -> None:
        super().__init__(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
                "spec": {},
            }
        )

    def NodeLabel(self, key: str, value: str) -> ResourceFlavor:
        self.obj["spec"].setdefault("nodeLabels", {})[key] = value
        return self

    def Taint(self, taint: dict[str, Any]) -> ResourceFlavor:
        self.obj["spec"].setdefault("nodeTaints", []).append(taint)
        return self

    def Toleration(self, toleration: dict[str, Any]) -> ResourceFlavor:
        self.obj["spec"].setdefault("tolerations", []).append(toleration)
        return self

    def TopologyName(self, name: str) -> ResourceFlavor:
        self.obj["spec"]["topologyName"] = name
        return self


class Topology(Builder):
    def __init__(self, name: str) -> None:
        super().__init__(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Topology",
                "metadata": {"name": name},
                "spec": {"levels": []},
            }
        )

    def Levels(self, *levels: str) -> Topology:
        self.obj["spec"]["levels"] = [{"nodeLabel": level} for level in levels]
        return self


class Node(Builder):
    def __init__(self, name: str) -> None:
        super().__init__({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})

    def Label(self, key: str, value: str) -> Node:
        self.obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def StatusAllocatable(self, resources: dict[str, str]) -> Node:
        self.obj.setdefault("status", {})["allocatable"] = dict(resources)
        return self

    def Ready(self) -> Node:
        self.obj.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "True"}]
        return self


class Workload(Builder):
    def __init__(self, name: str, namespace: str) -> None:
        super().__init__(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"podSets": [PodSet("main", 1).obj]},
            }
        )

    def PodSets(self, *pod_sets: dict[str, Any]) -> Workload:
        self.obj["spec"]["podSets"] = list(pod_sets)
        return self

    def AllowedFlavors(self, *flavors: str) -> Workload:
        annotations = self.obj["metadata"].setdefault("annotations", {})
        annotations["kueue.x-k8s.io/workload-allowed-resource-flavors"] = ",".join(flavors)
        return self


MAKERS: dict[str, Any] = {
    "utiltestingapi.MakePodSet": PodSet,
    "utiltestingapi.MakeFlavorQuotas": FlavorQuotas,
    "utiltestingapi.MakeClusterQueue": ClusterQueue,
    "utiltestingapi.MakeCohort": Cohort,
    "utiltestingapi.MakeResourceFlavor": ResourceFlavor,
    "utiltestingapi.MakeTopology": Topology,
    "utiltestingapi.MakeWorkload": Workload,
    "testingnode.MakeNode": Node,
}

STRUCT_FIELDS = {
    # Go field name -> the API's JSON name, where the tables spell structs out
    "Key": "key",
    "Value": "value",
    "Effect": "effect",
    "Operator": "operator",
    "Values": "values",
    "MatchExpressions": "matchExpressions",
    "WithinClusterQueue": "withinClusterQueue",
    "ReclaimWithinCohort": "reclaimWithinCohort",
    "BorrowWithinCohort": "borrowWithinCohort",
    "Policy": "policy",
    "MaxPriorityThreshold": "maxPriorityThreshold",
    "WhenCanBorrow": "whenCanBorrow",
    "WhenCanPreempt": "whenCanPreempt",
    "Preference": "preference",
    "Name": "name",
    "Count": "count",
}

API_STRUCTS = (
    "corev1.Taint",
    "corev1.Toleration",
    "corev1.NodeSelectorTerm",
    "corev1.NodeSelectorRequirement",
    "kueue.ClusterQueuePreemption",
    "kueue.BorrowWithinCohort",
    "kueue.FlavorFungibility",
    "kueue.ReclaimablePod",
)


def qualified(node: Any) -> str | None:
    if isinstance(node, Name):
        return node.text
    if isinstance(node, Select):
        inner = qualified(node.target)
        return None if inner is None else f"{inner}.{node.name}"
    return None


class Evaluator:
    """Turns a Go tree into Python values: API structs become their YAML, other structs
    (Kueue's internal types in the expectations) dicts under their Go field names, a
    `FlavorResource` key a (flavor, resource) tuple. `variables` holds what the test
    function assigned before its table (`tasCQ`, `sharedFlavors`, ...)."""

    def __init__(self, variables: dict[str, Any] | None = None) -> None:
        self.variables = variables or {}

    def __call__(self, node: Any, hint: str | None = None) -> Any:
        if isinstance(node, Lit):
            return node.value
        if isinstance(node, Unary):
            value = self(node.operand, hint)
            return -value if node.op == "-" else value
        if isinstance(node, Binary):
            left, right = self(node.left), self(node.right)
            return {"*": left * right, "+": left + right, "-": left - right}[node.op]
        if isinstance(node, Name | Select) and qualified(node) is not None:
            name = qualified(node)
            assert name is not None
            if name in CONSTANTS:
                return CONSTANTS[name]
            if name in self.variables:
                return copy.deepcopy(self.variables[name])
            if name.startswith("features."):
                return name.removeprefix("features.")
        if isinstance(node, Index):
            return copy.deepcopy(self(node.target)[self(node.key)])
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Composite):
            return self.composite(node, hint)
        if isinstance(node, Select):
            raise Unknown(f"selector {node.name}")
        raise Unknown(repr(node)[:200])

    def call(self, node: Call) -> Any:
        name = qualified(node.func)
        args = [self(a) for a in node.args]
        if name in MAKERS:
            return MAKERS[name](*args)
        if name in self.variables and not args:  # a function literal without parameters
            return copy.deepcopy(self.variables[name])
        if name in ("resource.MustParse",):
            return args[0]
        if name == "resources.NewAmount":
            return Amount(args[0])
        if name in ("new", "makePref", "ptr.To"):  # a pointer to the value
            return args[0] if not isinstance(node.args[0], Name) else self(node.args[0])
        if name == "utiltesting.SingleContainerForRequest":
            return [{"resources": {"requests": dict(args[0])}}]
        if name == "NewStatus":
            return {"reasons": list(args)}
        if isinstance(node.func, Select):
            target = self(node.func.target)
            if isinstance(target, Builder):
                if node.spread:
                    args = [*args[:-1], *args[-1]]
                return target.call(node.func.name, args)
        raise Unknown(f"call {name or node.func}")

    def composite(self, node: Composite, hint: str | None) -> Any:
        kind = node.type or hint or ""
        if kind.startswith("[]"):
            inner = kind[2:]
            return [self(v, inner) for _, v in node.elements]
        if kind.startswith("map[") or kind in MAP_TYPES:
            value_type = MAP_TYPES[kind] if kind in MAP_TYPES else kind[kind.index("]") + 1 :]
            key_type = "FlavorResource" if "FlavorResource" in kind else None
            out: dict[Any, Any] = {}
            for key, value in node.elements:
                k = self(key, key_type)
                out[tuple(k) if isinstance(k, list) else k] = self(value, value_type)
            return out
        if kind.endswith("FlavorResource") or kind == "FlavorResource":
            fields = {f: self(v) for f, v in _fields(node)}
            return [fields["Flavor"], fields["Resource"]]
        fields = {f: self(v, FIELD_TYPES.get(f)) for f, v in _fields(node, kind)}
        if kind.lstrip("*") in API_STRUCTS:
            return {STRUCT_FIELDS.get(k, k): v for k, v in fields.items()}
        fields["__type__"] = kind
        return fields


POSITIONAL = {
    # the field order of the structs the tables write positionally
    "simulationResultForFlavor": ("preemptionPossiblity", "borrowingAfterSimulation"),
}


def _fields(node: Composite, kind: str = "") -> list[tuple[str, Any]]:
    out = []
    for i, (key, value) in enumerate(node.elements):
        if key is None and kind in POSITIONAL:
            out.append((POSITIONAL[kind][i], value))
            continue
        if not isinstance(key, Name):
            raise Unknown(f"positional struct element in {node.type or kind}")
        out.append((key.text, value))
    return out


MAP_TYPES = {
    "corev1.ResourceList": "",
    "ResourceAssignment": "*FlavorAssignment",
    "resources.FlavorResourceQuantities": "",
    "map[string]case": "case",
    "rfMap": "",
}

FIELD_TYPES = {
    # elided element types inside Kueue's expectation structs
    "PodSets": "[]PodSetAssignment",
    "FlavorAssignmentAttempts": "[]FlavorAssignmentAttempt",
    "Flavors": "ResourceAssignment",
    "Requests": "corev1.ResourceList",
    "Quota": "resources.FlavorResourceQuantities",
}


class Amount(int):
    """`resources.NewAmount(n)`: n in Kueue's internal unit (milli for cpu)."""
