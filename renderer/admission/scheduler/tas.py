"""Kueue v0.19.2's topology-aware scheduling (TAS), as far as fit can replay it offline.

Four steps, each after Kueue's source:

1. A pod set's topology request comes from its pod template's annotations
   (`podSetTopologyRequestBuilder.Build`, `pkg/controller/jobframework/tas.go`); Kueue's job
   webhooks refuse malformed ones first (`ValidateTASPodSetRequest`, `tas_validation.go`).
2. While flavors are assigned, a pod set that asks for TAS (or sits in a ClusterQueue whose
   flavors are all topology-aware: TAS is then implied) may use only a TAS flavor that has the
   levels it names, and one that does not ask may not use a TAS flavor of a mixed ClusterQueue
   (`checkPodSetAndFlavorMatchForTAS`, `pkg/scheduler/flavorassigner/tas_flavorassigner.go`).
3. Once quota holds the workload, Kueue places each TAS pod set on the flavor's nodes
   (`TASFlavorSnapshot.findTopologyAssignment`, `pkg/cache/scheduler/tas_flavor_snapshot.go`):
   nodes are kept when their taints are tolerated and their labels match the pod's whole
   nodeSelector (where the lowest level is the node) and required node affinity; a required
   level needs one domain of it holding every pod (or every slice); otherwise Kueue falls back
   to wider levels and finally spreads over the whole topology.
4. A pod set that does not fit fails with Kueue's `notFitMessage`.

What fit cannot see, it assumes and says: rack and block sizes (pools declare node counts only,
so one domain above the node is assumed to hold the whole pool), and node labels beyond those
of `nodelabels`. Capacity is the pool file's per-node figures (a node's allocatable is a little
less) and the kubelet's default of 110 pods per node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal

from renderer.admission.scheduler.nodelabels import NodeLabels, Verdict
from renderer.admission.workloads.podsets import PodSet
from renderer.model import quantity, topology
from renderer.model.capacity import pool_offers
from renderer.model.platform import Cluster, Pool

MAX_PODS = Decimal(110)
"""The kubelet's default `maxPods`: Kueue counts one `pods` per pod against a node's
allocatable (`resources.OnePodRequest`)."""


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """Kueue's `PodSetTopologyRequest`, the fields fit models."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slices: tuple[tuple[str, int], ...] = ()
    """The slice layers, outermost first (`PodSetSliceRequiredTopologyConstraints`)."""
    group: str | None = None

    @property
    def explicit(self) -> bool:
        """`workload.IsExplicitlyRequestingTAS`: one of the TAS fields is set."""
        return bool(self.required or self.preferred or self.unconstrained or self.slices)

    @property
    def levels(self) -> tuple[str, ...]:
        """The level keys it names (`TASFlavorSnapshot.HasLevel` needs them all)."""
        main = self.required or self.preferred
        return tuple(dict.fromkeys([*([main] if main else []), *(lvl for lvl, _ in self.slices)]))

    def describe(self) -> str:
        if self.required:
            text = f"required {self.required}"
        elif self.preferred:
            text = f"preferred {self.preferred}"
        elif self.slices:
            text = "slices only"
        else:
            text = "unconstrained"
        for level, size in self.slices:
            text += f", slices of {size} pod(s) within one {level}"
        return text


def request_of(ps: PodSet) -> TopologyRequest | None:
    """Kueue's topology request of a pod set, or None when its annotations ask for none
    (`Build`: required, else preferred, else unconstrained; slice layers beside them)."""
    notes = ps.annotations
    required = notes.get(topology.REQUIRED)
    preferred = notes.get(topology.PREFERRED)
    unconstrained = notes.get(topology.UNCONSTRAINED)
    slices: tuple[tuple[str, int], ...] = ()
    constraints = _constraints(notes.get(topology.SLICE_CONSTRAINTS))
    if constraints:
        slices = constraints
    elif topology.SLICE_REQUIRED in notes and topology.SLICE_SIZE in notes:
        size = _int(notes[topology.SLICE_SIZE])
        slices = ((notes[topology.SLICE_REQUIRED], size if size is not None else 0),)
    if required is None and preferred is None and unconstrained is None and not slices:
        return None
    group = notes.get(topology.GROUP) if (required is not None or preferred is not None) else None
    if required is not None:
        return TopologyRequest(required=required, slices=slices, group=group)
    if preferred is not None:
        return TopologyRequest(preferred=preferred, slices=slices, group=group)
    if unconstrained is not None:
        flag = _bool(unconstrained) is True
        return TopologyRequest(unconstrained=flag, slices=slices)
    return TopologyRequest(slices=slices)


def refusals(ps: PodSet) -> list[str]:
    """Why Kueue's job webhook refuses the pod set's TAS annotations, in its words
    (`ValidateTASPodSetRequest`, `ValidateSliceSizeAnnotationUpperBound`)."""
    notes = ps.annotations
    out: list[str] = []
    found = [
        k for k in (topology.REQUIRED, topology.PREFERRED, topology.UNCONSTRAINED) if k in notes
    ]
    if len(found) > 1:
        out.append(
            "must not contain more than one topology annotation: "
            f'["{topology.REQUIRED}", "{topology.PREFERRED}", "{topology.UNCONSTRAINED}"]'
        )
    if topology.UNCONSTRAINED in notes and _bool(notes[topology.UNCONSTRAINED]) is None:
        out.append(f"{topology.UNCONSTRAINED}: must be a boolean value")
    if topology.SLICE_SIZE in notes:
        size = _int(notes[topology.SLICE_SIZE])
        if size is None:
            out.append(f"{topology.SLICE_SIZE}: must be a numeric value")
        elif size < 1:
            out.append(f"{topology.SLICE_SIZE}: must be greater than or equal to 1")
        elif size > ps.count:
            out.append(f"{topology.SLICE_SIZE}: must not be greater than pod set count {ps.count}")
    if topology.SLICE_REQUIRED in notes and topology.SLICE_SIZE not in notes:
        out.append(
            f"{topology.SLICE_SIZE}: must be set when '{topology.SLICE_REQUIRED}' is specified"
        )
    if topology.SLICE_SIZE in notes and topology.SLICE_REQUIRED not in notes:
        out.append(
            f"{topology.SLICE_SIZE}: may not be set when '{topology.SLICE_REQUIRED}' is not specified"
        )
    if (
        topology.GROUP in notes
        and topology.REQUIRED not in notes
        and topology.PREFERRED not in notes
    ):
        out.append(
            f"{topology.GROUP}: may not be set when neither '{topology.PREFERRED}' nor "
            f"'{topology.REQUIRED}' is specified"
        )
    return [f"pod set {ps.name}: {text}" for text in out]


def _int(text: str) -> int | None:
    try:
        return int(text.strip(), 10)
    except ValueError:
        return None


def _bool(text: str) -> bool | None:
    """Go's strconv.ParseBool."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def _constraints(text: str | None) -> tuple[tuple[str, int], ...]:
    if text is None:
        return ()
    try:
        data = json.loads(text)
    except ValueError:
        return ()
    if not isinstance(data, list):
        return ()
    layers = []
    for layer in data[:3]:
        if isinstance(layer, dict) and isinstance(layer.get("topology"), str):
            size = layer.get("size")
            layers.append((layer["topology"], size if isinstance(size, int) else 0))
    return tuple(layers)


# --- flavor matching ---------------------------------------------------------------------------


def flavor_mismatch(
    pool: Pool,
    request: TopologyRequest | None,
    *,
    tas_only: bool,
    requests_covered: bool,
) -> str | None:
    """Kueue's `checkPodSetAndFlavorMatchForTAS`: why the flavor is skipped for the pod set, in
    Kueue's words, or None. `requests_covered`: the pod asks for a resource the ClusterQueue
    covers (a non-TAS flavor may still serve a pod set that asks for none of them)."""
    explicit = request is not None and request.explicit
    aware = topology.topology_aware(pool)
    if explicit or tas_only:
        if not explicit:
            return None  # TAS implied: every flavor of the ClusterQueue is a TAS flavor
        if not aware:
            if not requests_covered:
                return None
            return f'Flavor "{pool.name}" does not support TopologyAwareScheduling'
        assert request is not None
        if any(level not in pool.topology_levels for level in request.levels):
            return f'Flavor "{pool.name}" does not contain the requested level'
        return None
    if aware:
        return f'Flavor "{pool.name}" supports only TopologyAwareScheduling'
    return None


# --- placement ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ask:
    """One TAS pod set to place: `count` pods in `workloads` equal Workloads (a Deployment's
    pods each are one), each pod asking `per_pod` (the pod spec's requests, before Kueue drops
    excluded resources: TAS uses the pod spec itself)."""

    name: str
    count: int
    per_pod: Mapping[str, Decimal]
    request: TopologyRequest | None
    implied: bool
    pod: PodSet
    workloads: int = 1


@dataclass
class Placement:
    """The outcome for one flavor: the first pod set that does not fit and Kueue's reason."""

    failed: str | None = None
    reason: str = ""
    notes: list[str] = field(default_factory=list)


def node_capacity(pool: Pool) -> dict[str, Decimal]:
    """One node of the pool, as the pool file gives it: its GPU units, host CPUs and memory,
    and the kubelet's pod limit."""
    capacity = {o.resource: Decimal(o.per_node) for o in pool_offers(pool)}
    if pool.host_cpus is not None:
        capacity["cpu"] = Decimal(pool.host_cpus)
    if pool.host_memory is not None:
        capacity["memory"] = quantity.parse(pool.host_memory)
    capacity["pods"] = MAX_PODS
    return capacity


def topology_name(pool: Pool, names: Mapping[tuple[str, ...], str]) -> str:
    return names.get(pool.topology_levels, "-".join(pool.topology_levels))


class Nodes:
    """A TAS flavor's nodes in an empty cluster: `nodes.max` nodes of the pool's capacity, every
    level above the node assumed to be one domain holding them all."""

    def __init__(self, pool: Pool, cluster: Cluster | None, name: str) -> None:
        self.pool = pool
        self.name = name
        self.levels = pool.topology_levels
        self.labels = NodeLabels(pool, cluster, self.levels)
        self.free = [node_capacity(pool) for _ in range(pool.nodes.max)]
        self.notes: list[str] = []

    def _lowest_is_node(self) -> bool:
        return bool(self.levels) and self.levels[-1] == topology.HOSTNAME

    def _feasible(self, pod: PodSet) -> tuple[Verdict, str]:
        """Kueue's node filter, the same for every node of the pool (fit's nodes are alike):
        taints are the pool's, tolerated through the flavor's tolerations, so only the pod's
        nodeSelector (where the lowest level is the node) and required affinity decide."""
        if self._lowest_is_node():
            verdict = self.labels.selector(pod.node_selector)
            if verdict.value is False:
                return verdict, "nodeSelector"
        else:
            verdict = Verdict(True)
        affinity = self.labels.affinity(pod.affinity)
        if affinity.value is False:
            return affinity, "affinity"
        verdict.assumed.extend(affinity.assumed)
        if affinity.value is None:
            verdict.value = None
        return verdict, ""

    def place(self, ask: Ask) -> str | None:
        """Place one pod set; Kueue's reason when it does not fit."""
        request = ask.request
        lowest = self.levels[-1]
        if request is not None and (request.required or request.preferred):
            main = request.required or request.preferred or lowest
        elif request is not None and request.slices and not request.unconstrained:
            main = self.levels[0]  # slice-only request: the highest level
        else:
            main = lowest  # unconstrained, or implied
        if main not in self.levels:
            return f"no requested topology level: {main}"
        slice_level, size = (
            request.slices[0] if request is not None and request.slices else (lowest, 1)
        )
        if slice_level not in self.levels:
            return f"no requested topology level for slices: {slice_level}"
        if size <= 0:
            return "slice topology requested, but slice size not provided"
        if self.levels.index(main) > self.levels.index(slice_level):
            return f"podset slice topology {slice_level} is above the podset topology {main}"
        required = request is not None and request.required is not None
        verdict, excluded_by = self._feasible(ask.pod)
        self.notes.extend(verdict.assumed)
        total_nodes = len(self.free)
        per_pod = {**{r: v for r, v in ask.per_pod.items() if v > 0}, "pods": Decimal(1)}
        unit = max(1, ask.count // max(1, ask.workloads))
        slices_needed = unit // size
        stats: dict[str, int] = {}
        if verdict.value is False:
            counts = [0] * total_nodes
            stats[excluded_by] = total_nodes
        else:
            counts = []
            for free in self.free:
                n, limiting = _count_in(per_pod, free)
                counts.append(n)
                if n == 0 and limiting:
                    key = f'resource "{limiting}"'
                    stats[key] = stats.get(key, 0) + 1
        node_slices = slice_level == topology.HOSTNAME
        per_node_slices = [c // size for c in counts] if node_slices else counts
        for level in (main, slice_level):
            if required and level != topology.HOSTNAME:
                self._note_assumed_domain(level)
        if not required or main != topology.HOSTNAME:
            # one domain (the whole pool) or a spread over it: what the nodes hold together
            fit = sum(per_node_slices) if node_slices else sum(counts) // size
            needed = slices_needed * ask.workloads
            if fit < needed:
                return self._not_fit(min(fit, needed), needed, size, stats, total_nodes)
            self._take(per_pod, ask.count, size if node_slices else 1)
            return None
        # required at the node: each Workload's pods (or slices) on one node
        for _ in range(ask.workloads):
            best = _best_fit(per_node_slices, slices_needed)
            if best is None:
                top = max(per_node_slices, default=0)
                return self._not_fit(top, slices_needed, size, stats, total_nodes)
            _subtract(self.free[best], per_pod, unit)
            per_node_slices[best] = _count_in(per_pod, self.free[best])[0] // size
        return None

    def _note_assumed_domain(self, level: str) -> None:
        note = (
            f"pool {self.pool.name} declares no sizes of its {level} domains: fit assumed one "
            f"domain holds all {self.pool.nodes.max} nodes; Kueue counts the real ones"
        )
        if note not in self.notes:
            self.notes.append(note)

    def _not_fit(
        self, fit: int, needed: int, size: int, stats: Mapping[str, int], total_nodes: int
    ) -> str:
        """Kueue's `notFitMessage`."""
        unit = "pod" if size == 1 else "slice"
        if fit == 0:
            text = f'topology "{self.name}" doesn\'t allow to fit any of {needed} {unit}(s)'
        else:
            text = f'topology "{self.name}" allows to fit only {fit} out of {needed} {unit}(s)'
        if stats:
            listed = ", ".join(sorted(f"{k}: {v}" for k, v in stats.items()))
            text += f". Total nodes: {total_nodes}; excluded: {listed}"
        return text

    def _take(self, per_pod: Mapping[str, Decimal], pods: int, step: int) -> None:
        """Use the nodes for `pods` pods, the freest first, `step` pods at a time."""
        left = pods
        order = sorted(
            range(len(self.free)), key=lambda i: (-_count_in(per_pod, self.free[i])[0], i)
        )
        for i in order:
            if left <= 0:
                break
            room = _count_in(per_pod, self.free[i])[0]
            room -= room % step
            take = min(room, left)
            _subtract(self.free[i], per_pod, take)
            left -= take


def _count_in(per_pod: Mapping[str, Decimal], free: Mapping[str, Decimal]) -> tuple[int, str]:
    """Kueue's `CountInWithLimitingResource`: how many pods fit in `free`, and the resource
    that limits it. Resources the node's figures do not list are not counted (fit does not
    know them)."""
    best: int | None = None
    limiting = ""
    for resource in sorted(per_pod):
        value = per_pod[resource]
        if resource not in free or value <= 0:
            continue
        n = int((free[resource] / value).to_integral_value(ROUND_FLOOR))
        if best is None or n < best:
            best, limiting = n, resource
    return (best if best is not None else int(MAX_PODS)), limiting


def _subtract(free: dict[str, Decimal], per_pod: Mapping[str, Decimal], pods: int) -> None:
    for resource, value in per_pod.items():
        if resource in free:
            free[resource] -= value * pods


def _best_fit(slices: Sequence[int], needed: int) -> int | None:
    """The first node with the fewest slices that still holds `needed` (`findBestFitDomain`)."""
    fitting = [(n, i) for i, n in enumerate(slices) if n >= needed]
    return min(fitting)[1] if fitting else None
