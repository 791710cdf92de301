"""Kueue's flavor assignment, on Kueue's own objects: Kueue v0.19.2
`pkg/scheduler/flavorassigner/flavorassigner.go` (`FlavorAssigner.assignFlavors`,
`findFlavorForPodSets`, `checkFlavorForPodSets`, `fitsResourceQuota`, `flavorSelector`,
`resolvePodSetFlavors`) and `tas_flavorassigner.go` (`checkPodSetAndFlavorMatchForTAS`,
`WorkloadsTopologyRequests`), with `classical.FindHeightOfLowestSubtreeThatFits`
(`pkg/scheduler/preemption/classical/hierarchical_preemption.go`).

It reads a ClusterQueue and its ResourceFlavors as `snapshot` reads them from Kueue's API
objects, and the ClusterQueue's node of the quota tree (`renderer.model.quota_tree`) with the
cohort's usage in it. What it cannot know offline comes in as callables, as in Kueue's own
tests: the preemption oracle (`SimulatePreemption`) and the TAS placement
(`FindTopologyAssignmentsForWorkload`). Nothing here reads gpuplane's platform model: `fit`
maps flavors to pools outside (`flavorassigner.Assigner`).

Feature gates are v0.19.2's defaults (FlavorFungibility, TopologyAwareScheduling,
ReclaimablePods, UnadmittedWorkloadsObservability's reasons on); `allowed_flavors` stands for
ConcurrentAdmission's annotation. Not modelled: workload slices (ElasticJobsViaWorkloadSlices
replacing a slice), a previous assignment's flavor bookmark (`LastAssignment`), nomination
mapping, resource transformations and DRA (their requests arrive already counted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from renderer.admission.scheduler.assignment import (
    BEST,
    WORST,
    Assignment,
    Attempt,
    FlavorAssignment,
    GranularMode,
    PodSetAssignment,
    Possibility,
    PreemptionMode,
    finalize_attempts,
    is_preferred,
    merge_attempts,
    most_severe,
    should_try_next_flavor,
)
from renderer.admission.scheduler.snapshot import (
    ClusterQueue,
    ResourceFlavor,
    ResourceGroup,
    Taint,
    Toleration,
)
from renderer.admission.scheduler.tas import TopologyRequest
from renderer.admission.workloads.podsets import Requirement
from renderer.model.quantity import kueue_string
from renderer.model.quota_tree import FlavorResource, QuotaNode

PODS = "pods"
Oracle = Callable[[FlavorResource, Decimal], tuple[Possibility, int]]
"""`preemptionOracle.SimulatePreemption`: for one flavor and resource and the quantity the
workload needs there, whether preempting could make room, and the borrowing level after."""


def always_preempt(fr: FlavorResource, quantity: Decimal) -> tuple[Possibility, int]:
    """The oracle of Kueue's flavor assigner tests when they set none: Preempt, no borrowing."""
    return "Preempt", 0


@dataclass(frozen=True, slots=True)
class PodSetRequest:
    """What the assigner reads of one pod set of the Workload."""

    name: str
    count: int
    """Pods after the reclaimable ones are taken off (`podSetsCountsAfterReclaim`)."""
    per_pod: Mapping[str, Decimal]
    """One pod's requests as Kueue counts them against quota (zero requests kept)."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[tuple[Requirement, ...], ...] = ()
    """Required node affinity terms (ORed), each a tuple of requirements (ANDed)."""
    tolerations: tuple[Toleration, ...] = ()
    topology: TopologyRequest | None = None
    spec_requests: Mapping[str, Decimal] | None = None
    """The pod spec's own requests (TAS reads them; before excluded resources are dropped);
    None: `per_pod`."""

    @property
    def group(self) -> str | None:
        return self.topology.group if self.topology is not None else None

    @property
    def explicit_tas(self) -> bool:
        return self.topology is not None and self.topology.explicit

    @property
    def pod_spec_requests(self) -> Mapping[str, Decimal]:
        return self.per_pod if self.spec_requests is None else self.spec_requests


@dataclass(frozen=True, slots=True)
class TASRequest:
    """`TASPodSetRequests`: one pod set to place on the nodes of its TAS flavor."""

    pod_set: PodSetRequest
    flavor: str
    count: int
    implied: bool


@dataclass(frozen=True, slots=True)
class TASFailure:
    pod_set: str
    flavor: str
    reason: str


@dataclass(frozen=True, slots=True)
class TASResult:
    """`TASAssignmentsResult`: the first pod set that does not fit, or each one's placement."""

    failure: TASFailure | None = None
    placements: Mapping[str, object] = field(default_factory=dict)


Placer = Callable[[Sequence[TASRequest], bool], TASResult]
"""`FindTopologyAssignmentsForWorkload(requests, simulateEmpty)`."""


@dataclass(frozen=True)
class Setting:
    """What Kueue's scheduler holds besides the Workload: the ClusterQueue, its node of the
    quota tree (usage in it), the ResourceFlavors and Topologies that exist, and the hooks."""

    cq: ClusterQueue
    node: QuotaNode
    flavors: Mapping[str, ResourceFlavor]
    topologies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Topology name -> its level keys, top first."""
    fair_sharing: bool = False
    oracle: Oracle = always_preempt
    placer: Placer | None = None
    """None: no TAS placement here (the caller places the pod sets itself)."""
    allowed_flavors: frozenset[str] | None = None
    """ConcurrentAdmission's `kueue.x-k8s.io/workload-allowed-resource-flavors`; None: all."""

    @property
    def tas_flavors(self) -> frozenset[str]:
        """The ClusterQueue's flavors the TAS cache knows: a Topology that exists."""
        names = {f.name for rg in self.cq.resource_groups for f in rg.flavors}
        return frozenset(
            n
            for n in names
            if n in self.flavors and self.flavors[n].topology_name in self.topologies
        )

    @property
    def tas_only(self) -> bool:
        """`isTASOnly`: every flavor of every group is a TAS flavor."""
        tas = self.tas_flavors
        return all(f.name in tas for rg in self.cq.resource_groups for f in rg.flavors)


class FlavorAssigner:
    """`FlavorAssigner` for one Workload of pod sets in one ClusterQueue."""

    def __init__(self, setting: Setting, pod_sets: Sequence[PodSetRequest]) -> None:
        self.setting = setting
        self.cq = setting.cq
        self.node = setting.node
        self.pod_sets = tuple(pod_sets)
        self.tas_flavors = setting.tas_flavors
        self.tas_only = setting.tas_only

    # --- assignFlavors ------------------------------------------------------------------------

    def assign(self, counts: Sequence[int] | None = None) -> Assignment:
        """Each group of pod sets (a `podSetGroupName`, else the pod set alone), in order: per
        resource the flavor; the first group no flavor holds ends the assignment."""
        assignment = Assignment()
        groups: dict[str, list[tuple[PodSetRequest, PodSetAssignment]]] = {}
        for i, ps in enumerate(self.pod_sets):
            count = ps.count if counts is None else counts[i]
            requests = {r: v * count for r, v in ps.per_pod.items()}
            if self.cq.group_of(PODS) is not None:
                requests[PODS] = Decimal(count)
            psa = PodSetAssignment(ps.name, count, requests)
            groups.setdefault(ps.group or str(i), []).append((ps, psa))
        for members in groups.values():
            if not self.assign_group(members, assignment):
                assignment.resolve_no_fit_reason(self.cq)
                return assignment
        if assignment.representative_mode == "NoFit":
            assignment.resolve_no_fit_reason(self.cq)
            return assignment
        self.place(assignment)
        assignment.resolve_no_fit_reason(self.cq)
        return assignment

    def assign_group(
        self, members: Sequence[tuple[PodSetRequest, PodSetAssignment]], assignment: Assignment
    ) -> bool:
        """One group's flavors, added to `assignment`; False where a member got none."""
        requests: dict[str, Decimal] = {}
        for _, psa in members:
            for resource, value in psa.requests.items():
                requests[resource] = requests.get(resource, Decimal(0)) + value
        attempts: dict[str, Attempt] = {}
        chosen: dict[str, FlavorAssignment] | None = {}
        reasons: list[str] = []
        error: str | None = None
        for resource, value in requests.items():
            assert chosen is not None
            if self.cq.group_of(resource) is None and value == 0:
                continue  # kueue#8079: a zero request of an undeclared resource
            if resource in chosen:
                continue  # assigned with its resource group
            found, status, tried = self.find_flavor(members, requests, resource, assignment.usage)
            group = self.cq.group_of(resource)
            merge_attempts(
                attempts, tried, (f.name for f in group.flavors) if group else (), resource
            )
            if (status is not None and status.error is not None) or (not found and requests):
                chosen = None
                reasons = list(status.reasons) if status is not None else []
                error = status.error if status is not None else None
                break
            chosen.update(found)
            if status is not None:
                reasons.extend(status.reasons)
        final = finalize_attempts(attempts)
        failed = False
        for ps, psa in members:
            psa.flavors = self.resolve_flavors(ps, psa, chosen or {})
            psa.reasons = list(reasons)
            psa.error = error
            psa.attempts = final
            assignment.add(psa)
            if error is not None or (psa.requests and not psa.flavors):
                failed = True
        return not failed

    def resolve_flavors(
        self, ps: PodSetRequest, psa: PodSetAssignment, chosen: Mapping[str, FlavorAssignment]
    ) -> dict[str, FlavorAssignment]:
        """`resolvePodSetFlavors`: the group's flavors of the resources this pod set asks for;
        a member asking for none (an LWS leader) takes the group's TAS flavors."""
        if psa.requests:
            return {r: a for r, a in chosen.items() if r in psa.requests}
        if ps.group is not None:
            return {r: a for r, a in chosen.items() if a.flavor in self.tas_flavors}
        return {}

    # --- findFlavorForPodSets -----------------------------------------------------------------

    def find_flavor(
        self,
        members: Sequence[tuple[PodSetRequest, PodSetAssignment]],
        requests: Mapping[str, Decimal],
        resource: str,
        usage: Mapping[FlavorResource, Decimal],
    ) -> tuple[dict[str, FlavorAssignment], Status | None, list[Attempt]]:
        """The flavor, among the resource group's in order, for every resource of the group:
        the first that satisfies the flavor fungibility policy, else the best seen."""
        group = self.cq.group_of(resource)
        if group is None:
            return {}, Status([f"resource {resource} unavailable in ClusterQueue"]), []
        status = Status()
        asked = {r: v for r, v in requests.items() if r in group.covered}
        best: dict[str, FlavorAssignment] = {}
        best_mode = WORST
        attempts: list[Attempt] = []
        last = -1
        fungibility = self.cq.flavor_fungibility
        for idx, flavor in enumerate(group.flavors):
            last = idx
            name = flavor.name
            if (
                self.setting.allowed_flavors is not None
                and name not in self.setting.allowed_flavors
            ):
                status.reasons.append(
                    f"skipping flavor {name} due to WorkloadAllowedResourceFlavorAnnotation "
                    "annotation"
                )
                continue
            mismatch = self.check_flavor([ps for ps, _ in members], name, group)
            if mismatch is not None:
                status.reasons.append(mismatch)
                attempts.append(
                    Attempt(name, "NoFit", reasons=[mismatch], no_fit_reason="NoMatchingFlavor")
                )
                continue
            found, mode, attempt = self.try_flavor(name, asked, usage, status)
            attempts.append(attempt)
            if not should_try_next_flavor(mode, fungibility):
                best, best_mode = found, mode
                break
            if is_preferred(mode, best_mode, fungibility):
                best, best_mode = found, mode
        for assigned in best.values():
            assigned.tried_flavor_idx = -1 if last == len(group.flavors) - 1 else last
        if best_mode.preemption is PreemptionMode.FIT:
            return best, None, attempts
        return best, status, attempts

    def try_flavor(
        self,
        name: str,
        asked: Mapping[str, Decimal],
        usage: Mapping[FlavorResource, Decimal],
        status: Status,
    ) -> tuple[dict[str, FlavorAssignment], GranularMode, Attempt]:
        """Every resource of the group on one flavor: each one's mode; the flavor's is the
        worst (a resource that does not fit leaves out the ones after it)."""
        found: dict[str, FlavorAssignment] = {}
        mode = BEST
        most_borrow = 0
        reasons: list[str] = []
        no_fit = ""
        fungibility = self.cq.flavor_fungibility
        for resource, value in asked.items():
            fr = (name, resource)
            preemption, borrow, why = self.fits_quota(fr, usage.get(fr, Decimal(0)), value)
            if why is not None:
                reasons.extend(why.reasons)
                status.reasons.extend(why.reasons)
                no_fit = most_severe(no_fit, why.no_fit_reason)
            most_borrow = max(most_borrow, borrow)
            this = GranularMode(preemption, borrow)
            if is_preferred(mode, this, fungibility):
                mode = this
            if mode.preemption is PreemptionMode.NO_FIT:
                continue
            found[resource] = FlavorAssignment(name, preemption.mode, borrow)
        attempt = Attempt(
            name, mode.preemption.mode, most_borrow, mode.preemption.possibility,
            sorted(reasons), no_fit,
        )  # fmt: skip
        return found, mode, attempt

    # --- checkFlavorForPodSets ----------------------------------------------------------------

    def check_flavor(
        self, pod_sets: Sequence[PodSetRequest], name: str, group: ResourceGroup
    ) -> str | None:
        """Why the flavor cannot serve the pod sets at all, in Kueue's words, or None: it does
        not exist, TAS does not match, a taint is not tolerated, node affinity does not match
        the flavor's own label keys."""
        flavor = self.setting.flavors.get(name)
        if flavor is None:
            return f"flavor {name} not found"
        for ps in pod_sets:
            mismatch = self.tas_mismatch(ps, flavor, group)
            if mismatch is not None:
                return mismatch
            taint = untolerated(flavor.node_taints, (*ps.tolerations, *flavor.tolerations))
            if taint is not None:
                return f"untolerated taint {taint_text(taint)} in flavor {name}"
            if not selector_matches(ps, flavor.node_labels):
                return f"flavor {name} doesn't match node affinity"
        return None

    def tas_mismatch(
        self, ps: PodSetRequest, flavor: ResourceFlavor, group: ResourceGroup
    ) -> str | None:
        """`checkPodSetAndFlavorMatchForTAS`."""
        if ps.explicit_tas or self.tas_only:
            if not ps.explicit_tas:
                return None  # TAS implied: a TAS-only ClusterQueue
            if flavor.topology_name is None:
                if not any(r in group.covered for r in ps.pod_spec_requests):
                    return None
                return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
            levels = self.setting.topologies.get(flavor.topology_name)
            if levels is None or flavor.name not in self.tas_flavors:
                return f'Flavor "{flavor.name}" information missing in TAS cache'
            assert ps.topology is not None
            if not has_level(ps.topology, levels):
                return f'Flavor "{flavor.name}" does not contain the requested level'
            return None
        if flavor.topology_name is not None:
            return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
        return None

    # --- fitsResourceQuota --------------------------------------------------------------------

    def fits_quota(
        self, fr: FlavorResource, assumed: Decimal, request: Decimal
    ) -> tuple[PreemptionMode, int, Status | None]:
        """How the flavor can hold `request` of the resource beyond what earlier pod sets took
        (`assumed`): NoFit past the most it can ever get, Fit within what is free now, else
        what preempting could do (asked of the oracle when Kueue may preempt here)."""
        node = self.node
        available = max(Decimal(0), node.available(fr))
        most = node.potential_available(fr)
        value = assumed + request
        resource = fr[1]
        if value > most:
            return (
                PreemptionMode.NO_FIT,
                0,
                Status(
                    [
                        f"insufficient quota for {resource} in flavor {fr[0]}, previously "
                        f"considered podsets requests ({kueue_string(resource, assumed)}) + "
                        f"current podset request ({kueue_string(resource, request)}) > maximum "
                        f"capacity ({kueue_string(resource, most)})"
                    ],
                    no_fit_reason="ExceedsMaxQuota",
                ),
            )
        borrow, may_reclaim = lowest_subtree_that_fits(node, fr, value)
        if value <= available:
            return PreemptionMode.FIT, borrow, None
        status = Status(
            [
                f"insufficient unused quota for {resource} in flavor {fr[0]}, "
                f"{kueue_string(resource, value - available)} more needed"
            ],
            no_fit_reason="WaitingForQuota",
        )
        nominal = self.cq.quotas.get(fr)
        within_nominal = nominal is not None and nominal.nominal >= value
        if within_nominal or may_reclaim or self.can_preempt_while_borrowing():
            possibility, after = self.setting.oracle(fr, value)
            status.no_fit_reason = ""
            return PreemptionMode.of(possibility), after, status
        return PreemptionMode.NO_FIT, borrow, status

    def can_preempt_while_borrowing(self) -> bool:
        preemption = self.cq.preemption
        return preemption.borrow_within_cohort.policy != "Never" or (
            self.setting.fair_sharing and preemption.reclaim_within_cohort != "Never"
        )

    # --- TAS ----------------------------------------------------------------------------------

    def place(self, assignment: Assignment) -> None:
        """The TAS stage of `assignFlavors`: with quota Fit, place the pod sets on their nodes
        (one that does not fit makes the assignment Preempt); with Preempt, place them as if
        every other workload were gone (one that still does not fit makes it NoFit)."""
        placer = self.setting.placer
        requests = self.topology_requests(assignment)
        if placer is None:
            return
        if assignment.representative_mode == "Fit":
            result = placer(requests, False)
            if result.failure is not None:
                psa = assignment.pod_set(result.failure.pod_set)
                assert psa is not None
                psa.reasons.append(result.failure.reason)
                psa.set_mode("Preempt")
                assignment.forced_mode = "Preempt"
            else:
                for name, placement in result.placements.items():
                    found = assignment.pod_set(name)
                    if found is not None:
                        found.topology = placement
        if assignment.representative_mode == "Preempt":
            result = placer(requests, True)
            if result.failure is not None:
                psa = assignment.pod_set(result.failure.pod_set)
                assert psa is not None
                for attempt in psa.attempts:
                    if attempt.flavor == result.failure.flavor:
                        attempt.mode = "NoFit"
                        attempt.no_fit_reason = "TopologyPlacementFailed"
                psa.set_mode("NoFit")
                assignment.forced_mode = "NoFit"
            else:
                for request in requests:
                    found = assignment.pod_set(request.pod_set.name)
                    if found is not None:
                        found.set_mode("Preempt")
                assignment.forced_mode = "Preempt"

    def topology_requests(self, assignment: Assignment) -> list[TASRequest]:
        """`WorkloadsTopologyRequests`: the pod sets that ask for TAS (or get it implied), each
        with its one TAS flavor; a pod set with none, or more than one, gets Kueue's error."""
        out = []
        for ps in self.pod_sets:
            if not (ps.explicit_tas or self.tas_only):
                continue
            psa = assignment.pod_set(ps.name)
            if psa is None or psa.error is not None or psa.count == 0:
                continue
            if not self.tas_flavors:
                psa.error = "workload requires Topology, but there is no TAS cache information"
            else:
                names = sorted({a.flavor for a in psa.flavors.values()} & self.tas_flavors)
                if not names:
                    psa.error = "no TAS flavor assigned"
                elif len(names) > 1:
                    psa.error = f"more than one TAS flavor assigned: {', '.join(names)}"
                else:
                    out.append(TASRequest(ps, names[0], psa.count, not ps.explicit_tas))
                    continue
            assignment.forced_mode = None
        return out


@dataclass(slots=True)
class Status:
    """`Status`: why a flavor was not had outright, the error that stopped the search, and
    the no-fit reason (UnadmittedWorkloadsObservability)."""

    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    no_fit_reason: str = ""


# --- quota ------------------------------------------------------------------------------------


def lowest_subtree_that_fits(
    node: QuotaNode, fr: FlavorResource, value: Decimal
) -> tuple[int, bool]:
    """`FindHeightOfLowestSubtreeThatFits`: the height of the lowest node on the path to the
    root whose subtree holds `value` (0: the ClusterQueue itself), and whether that node has a
    parent (quota below the root can be reclaimed in the hierarchy)."""
    has_parent = node.parent is not None
    if not node.borrowing_with(fr, value) or not has_parent:
        return 0, has_parent
    remaining = value - node.local_available(fr)
    for ancestor in node.path_to_root():
        if not ancestor.borrowing_with(fr, remaining):
            return ancestor.height(), ancestor.parent is not None
        remaining -= ancestor.local_available(fr)
    return node.root().height(), False


# --- matching a pod set to a flavor ------------------------------------------------------------


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """`Toleration.ToleratesTaint` (k8s.io/api/core/v1 toleration.go)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """`FindMatchingUntoleratedTaint` for NoSchedule and NoExecute taints: the first one no
    toleration tolerates."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def taint_text(taint: Taint) -> str:
    """The taint as Kueue's message prints it: Go's `%s` of the `corev1.Taint` struct
    (`{key value effect timeAdded}`; a ResourceFlavor's taints have no timeAdded)."""
    return f"{{{taint.key} {taint.value} {taint.effect} <nil>}}"


def selector_matches(ps: PodSetRequest, labels: Mapping[str, str]) -> bool:
    """`flavorSelector(...).Match`: the pod's nodeSelector and required node affinity, cut to
    the flavor's own node label keys, against the flavor's node labels. A term left with no
    relevant expression drops the whole affinity (terms are ORed)."""
    keys = set(labels)
    for key, value in ps.node_selector.items():
        if key in keys and labels.get(key) != value:
            return False
    terms = []
    for term in ps.affinity:
        kept = tuple(r for r in term if r.key in keys)
        if not kept:
            return True
        terms.append(kept)
    return not terms or any(all(r.matches(labels) for r in term) for term in terms)


def has_level(request: TopologyRequest, levels: Sequence[str]) -> bool:
    """`TASFlavorSnapshot.HasLevel`: the request's main level (required, preferred, the top
    level for a slices-only request, the lowest for an unconstrained one) and its slice
    levels are all levels of the Topology."""
    if not levels:
        return False
    if request.required:
        main = request.required
    elif request.preferred:
        main = request.preferred
    elif request.slices:
        main = levels[0]
    elif request.unconstrained:
        main = levels[-1]
    else:
        return False
    slice_levels = [level for level, _ in request.slices] or [levels[-1]]
    return all(level in levels for level in (main, *slice_levels))
