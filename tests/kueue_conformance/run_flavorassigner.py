"""Kueue v0.19.2's flavor assigner tests (`pkg/scheduler/flavorassigner/flavorassigner_test.go`)
run on gpuplane's engine: each case of `flavorassigner/*.yaml` becomes Kueue objects
(`common.kueue_objects`), read by `renderer.admission.scheduler.snapshot`, and
`renderer.admission.scheduler.kueue_assigner.FlavorAssigner` assigns the case's Workload; the
result is compared with what Kueue's test asserts, and only that (each file's `harness` says
what its Go test sets up and checks).

What the Go harness does with code, the runner does here: the usage it adds to a
ClusterQueue's snapshot (`AddUsage`), the test oracle (`simulation`, else Preempt with
borrowing 0), the TAS cache's nodes (a placement on them, `place`, for the few cases with
nodes; without nodes a TAS pod set fits nowhere).

`results()` lists every case: `modelled=False` (with why) for what the engine does not model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from renderer.admission.scheduler import snapshot as kueue_snapshot
from renderer.admission.scheduler.assignment import (
    Assignment,
    Attempt,
    GranularMode,
    PodSetAssignment,
    PreemptionMode,
    is_preferred,
)
from renderer.admission.scheduler.kueue_assigner import (
    FlavorAssigner,
    PodSetRequest,
    Setting,
    TASFailure,
    TASRequest,
    TASResult,
)
from renderer.admission.scheduler.snapshot import FlavorFungibility, Toleration, read_objects
from renderer.admission.scheduler.tas import TopologyRequest
from renderer.admission.workloads.podsets import Requirement
from renderer.model import quantity
from tests.kueue_conformance.common import Case, CaseResult, kueue_objects, load_cases

ALLOWED_FLAVORS = "kueue.x-k8s.io/workload-allowed-resource-flavors"
KNOWN_DISAGREEMENTS: dict[str, str] = {}
"""Cases the engine models but disagrees on, by name, with why (the test marks them xfail)."""


def results() -> list[CaseResult]:
    return [run(case) for case in load_cases("flavorassigner")]


def run(case: Case) -> CaseResult:
    facts = case.facts
    unmodelled = not_modelled(facts)
    if unmodelled is not None:
        return CaseResult(case.name, False, False, unmodelled)
    test = case.source.rsplit(" ", 1)[-1]
    try:
        problems = CHECKS[test](facts)
    except Exception as error:  # a crash is a disagreement, named
        problems = [f"the engine raised {type(error).__name__}: {error}"]
    return CaseResult(case.name, not problems, True, "; ".join(problems))


def not_modelled(facts: Mapping[str, Any]) -> str | None:
    if facts.get("skip"):
        return str(facts["skip"])
    if facts.get("replaceWorkloadSlice") or facts.get("untranscribed"):
        return (
            "workload slices (ElasticJobsViaWorkloadSlices: a Workload replacing an admitted "
            "slice keeps its flavors and asks only the difference) are not modelled"
        )
    return None


# --- the case's setting -----------------------------------------------------------------------


def setting(facts: Mapping[str, Any]) -> tuple[Setting, list[PodSetRequest]]:
    """The ClusterQueue under test (the first), its node with the cases' usage, the flavors
    and topologies, the oracle and the placer; and the Workload's pod sets."""
    snap = read_objects(list(kueue_objects(facts)))
    assert not snap.problems, snap.problems
    tree = snap.tree(with_usage=False)
    for queue, flavors in (facts.get("usage") or {}).items():
        node = tree.cluster_queue(queue)
        assert node is not None, queue
        for flavor, resources in flavors.items():
            for resource, value in resources.items():
                node.add_usage((flavor, resource), quantity.parse(str(value)))
    name = facts["clusterQueues"][0]["name"]
    node = tree.cluster_queue(name)
    assert node is not None
    topologies = {t["name"]: tuple(t["levels"]) for t in facts.get("topologies") or []}
    workload = facts.get("workload") or {}
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    allowed = None
    if (facts.get("featureGates") or {}).get(
        "ConcurrentAdmission"
    ) and ALLOWED_FLAVORS in annotations:
        allowed = frozenset(f.strip() for f in annotations[ALLOWED_FLAVORS].split(","))
    result = Setting(
        cq=snap.cluster_queues[name],
        node=node,
        flavors=snap.flavors,
        topologies=topologies,
        fair_sharing=bool(facts.get("fairSharing")),
        oracle=oracle(facts.get("simulation") or {}),
        placer=Nodes(facts, snap.flavors).place,
        allowed_flavors=allowed,
    )
    return result, pod_sets(workload, facts.get("featureGates") or {})


def oracle(simulation: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Any:
    def simulate(fr: tuple[str, str], value: Decimal) -> tuple[Any, int]:
        found = simulation.get(fr[0], {}).get(fr[1])
        if found is None:
            return "Preempt", 0
        return found["possibility"], int(found.get("borrow", 0))

    return simulate


def pod_sets(workload: Mapping[str, Any], gates: Mapping[str, bool]) -> list[PodSetRequest]:
    """`workload.NewInfo`'s view of the pod sets: counts after reclaimable pods, one pod's
    requests (`resourcehelpers.PodRequests`: containers summed, the largest init container,
    the overhead; zero requests kept)."""
    reclaimable = {
        r["name"]: int(r["count"])
        for r in ((workload.get("status") or {}).get("reclaimablePods") or [])
    }
    out = []
    for ps in (workload.get("spec") or {}).get("podSets") or []:
        spec = ps.get("template", {}).get("spec", {})
        count = int(ps.get("count", 1))
        if gates.get("ReclaimablePods", True):  # podSetsCountsAfterReclaim
            count -= min(reclaimable.get(ps["name"], 0), count)
        out.append(
            PodSetRequest(
                name=ps["name"],
                count=count,
                per_pod=pod_requests(spec),
                node_selector=dict(spec.get("nodeSelector") or {}),
                affinity=affinity(spec),
                tolerations=tuple(
                    Toleration(
                        t.get("key", ""),
                        t.get("operator", "Equal"),
                        t.get("value", ""),
                        t.get("effect", ""),
                    )
                    for t in spec.get("tolerations") or []
                ),
                topology=topology_request(ps.get("topologyRequest")),
            )
        )
    return out


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        for r, v in ((container.get("resources") or {}).get("requests") or {}).items():
            total[r] = total.get(r, Decimal(0)) + quantity.parse(str(v))
    for container in spec.get("initContainers") or []:
        for r, v in ((container.get("resources") or {}).get("requests") or {}).items():
            total[r] = max(total.get(r, Decimal(0)), quantity.parse(str(v)))
    for r, v in (spec.get("overhead") or {}).items():
        total[r] = total.get(r, Decimal(0)) + quantity.parse(str(v))
    return total


def affinity(spec: Mapping[str, Any]) -> tuple[tuple[Requirement, ...], ...]:
    node = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return tuple(
        tuple(
            Requirement(e["key"], e["operator"], tuple(e.get("values") or ()))
            for e in term.get("matchExpressions") or []
        )
        for term in node.get("nodeSelectorTerms") or []
    )


def topology_request(request: Mapping[str, Any] | None) -> TopologyRequest | None:
    if not request:
        return None
    slices: tuple[tuple[str, int], ...] = ()
    if request.get("podSetSliceRequiredTopology"):
        slices = ((request["podSetSliceRequiredTopology"], int(request.get("podSetSliceSize", 0))),)
    return TopologyRequest(
        required=request.get("required"),
        preferred=request.get("preferred"),
        unconstrained=bool(request.get("unconstrained")),
        slices=slices,
        group=request.get("podSetGroupName"),
    )


class Nodes:
    """The TAS cache's nodes for the cases that sync some: a pod set is placed on the nodes
    of its flavor (those carrying its node labels), in one domain of its required level, else
    anywhere; each pod takes its pod-spec requests and one `pods`. Kueue's own placement is
    far richer (pkg/cache/scheduler/tas_flavor_snapshot.go); these cases need no more."""

    def __init__(
        self, facts: Mapping[str, Any], flavors: Mapping[str, kueue_snapshot.ResourceFlavor]
    ) -> None:
        self.nodes = facts.get("nodes") or []
        self.used = facts.get("nodeUsage") or {}
        self.flavors = flavors

    def place(self, requests: Sequence[TASRequest], simulate_empty: bool) -> TASResult:
        placements: dict[str, object] = {}
        for request in requests:
            flavor = self.flavors[request.flavor]
            free = self.free(request.flavor, flavor.node_labels, simulate_empty)
            per_pod = {**request.pod_set.pod_spec_requests, "pods": Decimal(1)}
            fits = {name: pods_fitting(left, per_pod) for name, left in free.items()}
            topology = request.pod_set.topology
            level = topology.required if topology is not None else None
            domains: dict[str, int] = {}
            for node in self.nodes:
                name = node["metadata"]["name"]
                if name in fits:
                    key = (
                        (node["metadata"].get("labels") or {}).get(level or "", "") if level else ""
                    )
                    domains[key] = domains.get(key, 0) + fits[name]
            if not any(n >= request.count for n in domains.values()):
                reason = (
                    f'topology "{flavor.topology_name}" doesn\'t allow to fit any of '
                    f"{request.count} pod(s)"
                )
                return TASResult(TASFailure(request.pod_set.name, request.flavor, reason))
            placements[request.pod_set.name] = sorted(domains)
        return TASResult(None, placements)

    def free(
        self, flavor: str, labels: Mapping[str, str], simulate_empty: bool
    ) -> dict[str, dict[str, Decimal]]:
        out = {}
        for node in self.nodes:
            meta = node["metadata"]
            node_labels = meta.get("labels") or {}
            if any(node_labels.get(k) != v for k, v in labels.items()):
                continue
            left = {r: quantity.parse(str(v)) for r, v in node["status"]["allocatable"].items()}
            if not simulate_empty:
                for r, v in (self.used.get(flavor, {}).get(meta["name"]) or {}).items():
                    left[r] = left.get(r, Decimal(0)) - quantity.parse(str(v))
            out[meta["name"]] = left
        return out


def pods_fitting(left: Mapping[str, Decimal], per_pod: Mapping[str, Decimal]) -> int:
    counts = [int(left.get(r, Decimal(0)) // v) for r, v in per_pod.items() if v > 0]
    return max(0, min(counts)) if counts else 0


# --- comparisons --------------------------------------------------------------------------------


def q(value: Any) -> Decimal:
    return quantity.parse(str(value))


def check_assign_flavors(facts: Mapping[str, Any]) -> list[str]:
    """TestAssignFlavors, TestDeletedFlavors: everything their cmp.Diff compares."""
    got = assign(facts)
    want = facts["want"]
    problems = []
    if got.representative_mode != want["representativeMode"]:
        problems.append(f"mode {got.representative_mode}, Kueue {want['representativeMode']}")
    if got.borrowing != want["borrowing"]:
        problems.append(f"borrowing {got.borrowing}, Kueue {want['borrowing']}")
    if got.no_fit_reason != want["noFitReason"]:
        problems.append(f"noFitReason {got.no_fit_reason!r}, Kueue {want['noFitReason']!r}")
    usage = {(f, r): q(v) for f, rs in want["usage"].items() for r, v in rs.items()}
    if got.usage != usage:
        problems.append(f"usage {_show(got.usage)}, Kueue {_show(usage)}")
    names = [ps["name"] for ps in want["podSets"]]
    if [ps.name for ps in got.pod_sets] != names:
        problems.append(f"pod sets {[ps.name for ps in got.pod_sets]}, Kueue {names}")
        return problems
    for have, wanted in zip(got.pod_sets, want["podSets"], strict=True):
        problems.extend(compare_pod_set(have, wanted))
    return problems


def compare_pod_set(got: PodSetAssignment, want: Mapping[str, Any]) -> list[str]:
    at = f"pod set {got.name}"
    problems = []
    if got.count != want["count"]:
        problems.append(f"{at}: count {got.count}, Kueue {want['count']}")
    requests = {r: q(v) for r, v in want["requests"].items()}
    if got.requests != requests:
        problems.append(f"{at}: requests {_show(got.requests)}, Kueue {_show(requests)}")
    flavors = {r: (a.flavor, a.mode, a.tried_flavor_idx) for r, a in sorted(got.flavors.items())}
    wanted = {
        r: (a["flavor"], a["mode"], a.get("triedFlavorIdx", 0))
        for r, a in sorted(want["flavors"].items())
    }
    if flavors != wanted:
        problems.append(f"{at}: flavors {flavors}, Kueue {wanted}")
    if sorted(got.reasons) != sorted(want["status"]) or got.error != want.get("error"):
        expected = want.get("error") or ", ".join(sorted(want["status"]))
        problems.append(f"{at}: status {got.message()!r}, Kueue {expected!r}")
    if "attempts" in want:
        problems.extend(compare_attempts(at, got.attempts, want["attempts"]))
    if bool(got.topology) != bool(want.get("topologyAssignment")):
        problems.append(
            f"{at}: topology assignment {got.topology}, Kueue {want.get('topologyAssignment')}"
        )
    return problems


def compare_attempts(
    at: str, got: Sequence[Attempt], want: Sequence[Mapping[str, Any]]
) -> list[str]:
    """`flexAssertConsidered`: with a Fit among the attempts, only the flavors returned are
    checked (a Fit where Kueue says "does not provide" alone passes); else every wanted one."""
    wanted = {w["flavor"]: w for w in want}
    have = {a.flavor: a for a in got}
    problems = []
    if any(a.mode == "Fit" for a in got):
        for flavor, attempt in have.items():
            expected = wanted.get(flavor)
            if expected is None:
                problems.append(f"{at}: attempt on {flavor} Kueue does not list")
                continue
            only_missing = (
                expected.get("mode") == "NoFit"
                and expected.get("reasons")
                and all("does not provide resource" in r for r in expected["reasons"])
            )
            if attempt.mode == "Fit" and only_missing:
                continue
            problems.extend(compare_attempt(at, attempt, expected))
        return problems
    for flavor, expected in wanted.items():
        found = have.get(flavor)
        if found is None:
            problems.append(f"{at}: no attempt on {flavor}")
        else:
            problems.extend(compare_attempt(at, found, expected))
    return problems


def compare_attempt(at: str, got: Attempt, want: Mapping[str, Any]) -> list[str]:
    mine = (got.mode, got.borrow, got.possibility, sorted(got.reasons), got.no_fit_reason)
    theirs = (
        want.get("mode", "NoFit"),
        want.get("borrow", 0),
        want.get("preemptionPossibility"),
        sorted(want.get("reasons") or []),
        want.get("noFitReason", ""),
    )
    return [] if mine == theirs else [f"{at}: attempt on {got.flavor} {mine}, Kueue {theirs}"]


def check_flavors(facts: Mapping[str, Any]) -> list[str]:
    """TestReclaimBeforePriorityPreemption, TestHierarchical, TestAssignFlavorsWithAllowedFlavors:
    the mode and, where given, each resource's flavor of the first pod set (and no other)."""
    got = assign(facts)
    want = facts["want"]
    problems = []
    if got.representative_mode != want["representativeMode"]:
        problems.append(f"mode {got.representative_mode}, Kueue {want['representativeMode']}")
    if "flavors" in want:
        have = {r: a.flavor for r, a in got.pod_sets[0].flavors.items()}
        if have != dict(want["flavors"]):
            problems.append(f"flavors {have}, Kueue {dict(want['flavors'])}")
    return problems


def check_allowed(facts: Mapping[str, Any]) -> list[str]:
    """TestAssignFlavorsWithAllowedFlavors: the mode, and the cpu flavor where it is Fit."""
    got = assign(facts)
    want = facts["want"]
    problems = []
    if got.representative_mode != want["representativeMode"]:
        problems.append(f"mode {got.representative_mode}, Kueue {want['representativeMode']}")
    for resource, flavor in (want.get("flavors") or {}).items():
        assigned = got.pod_sets[0].flavors.get(resource)
        if assigned is None or assigned.flavor != flavor:
            problems.append(
                f"{resource} on {assigned.flavor if assigned else None}, Kueue {flavor}"
            )
    return problems


def check_no_fit_reason(facts: Mapping[str, Any]) -> list[str]:
    """TestIsNoFitDueToCapacityAndLimits: the noFitReason, and each listed flavor's attempt's."""
    got = assign(facts)
    want = facts["want"]
    problems = []
    if got.no_fit_reason != want["noFitReason"]:
        problems.append(f"noFitReason {got.no_fit_reason!r}, Kueue {want['noFitReason']!r}")
    for ps in got.pod_sets:
        for attempt in ps.attempts:
            expected = want["attemptNoFitReasons"].get(attempt.flavor)
            if expected is not None and attempt.no_fit_reason != expected:
                problems.append(
                    f"attempt on {attempt.flavor}: {attempt.no_fit_reason!r}, Kueue {expected!r}"
                )
    return problems


def check_lws(facts: Mapping[str, Any]) -> list[str]:
    """TestAssignFlavors_LeaderWorkerSetTASFlavor: each pod set's error and flavors."""
    got = assign(facts)
    want = facts["want"]
    errors = {ps.name: ps.error for ps in got.pod_sets if ps.error is not None}
    expected = {name: ERRORS.get(str(e), e) for name, e in (want["podSetErrors"] or {}).items()}
    expected = {
        name: (
            f"more than one TAS flavor assigned: {', '.join(e['MultipleTASFlavorsAssignedError'])}"
            if isinstance(e, Mapping)
            else e
        )
        for name, e in expected.items()
    }
    problems = [] if errors == expected else [f"errors {errors}, Kueue {expected}"]
    for ps in got.pod_sets:
        have = {r: (a.flavor, a.mode, a.tried_flavor_idx) for r, a in sorted(ps.flavors.items())}
        wanted = {
            r: (a["flavor"], a["mode"], a.get("triedFlavorIdx", 0))
            for r, a in sorted((want["podSetFlavors"].get(ps.name) or {}).items())
        }
        if have != wanted:
            problems.append(f"pod set {ps.name}: flavors {have}, Kueue {wanted}")
    return problems


ERRORS = {
    "ErrNoTASFlavorAssigned": "no TAS flavor assigned",
    "ErrNoTASCacheInformation": "workload requires Topology, but there is no TAS cache information",
}


def check_last_tried(facts: Mapping[str, Any]) -> list[str]:
    """TestFlavorScanRecordsLastTriedFlavorIdx: the mode, the bookmark for cpu, a placement."""
    got = assign(facts)
    want = facts["want"]
    problems = []
    if got.representative_mode != want["representativeMode"]:
        problems.append(f"mode {got.representative_mode}, Kueue {want['representativeMode']}")
    tried = got.last_tried[0].get("cpu") if got.last_tried else None
    if tried != want["lastTriedFlavorIdx"]["cpu"]:
        problems.append(f"LastTriedFlavorIdx {tried}, Kueue {want['lastTriedFlavorIdx']['cpu']}")
    if bool(got.pod_sets[0].topology) != want["topologyAssignment"]:
        problems.append(
            f"topology assignment {got.pod_sets[0].topology}, Kueue {want['topologyAssignment']}"
        )
    return problems


def check_is_preferred(facts: Mapping[str, Any]) -> list[str]:
    def mode(m: Mapping[str, Any]) -> GranularMode:
        return GranularMode(PREEMPTION_MODES[m["preemptionMode"]], int(m["borrowingLevel"]))

    config = facts.get("flavorFungibility") or {}
    fungibility = FlavorFungibility(
        config.get("whenCanBorrow", "MayStopSearch"),
        config.get("whenCanPreempt", "TryNextFlavor"),
        config.get("preference"),
    )
    got = is_preferred(mode(facts["a"]), mode(facts["b"]), fungibility)
    want = facts["want"]["preferred"]
    return [] if got == want else [f"isPreferred {got}, Kueue {want}"]


PREEMPTION_MODES = {
    "noFit": PreemptionMode.NO_FIT,
    "noPreemptionCandidates": PreemptionMode.NO_CANDIDATES,
    "preempt": PreemptionMode.PREEMPT,
    "reclaim": PreemptionMode.RECLAIM,
    "fit": PreemptionMode.FIT,
}


def assign(facts: Mapping[str, Any]) -> Assignment:
    found, sets = setting(facts)
    return FlavorAssigner(found, sets).assign()


def _show(values: Mapping[Any, Decimal]) -> str:
    return ", ".join(f"{k}={v.normalize()}" for k, v in sorted(values.items(), key=str)) or "none"


CHECKS = {
    "TestAssignFlavors": check_assign_flavors,
    "TestDeletedFlavors": check_assign_flavors,
    "TestReclaimBeforePriorityPreemption": check_flavors,
    "TestHierarchical": check_flavors,
    "TestAssignFlavorsWithAllowedFlavors": check_allowed,
    "TestIsNoFitDueToCapacityAndLimits": check_no_fit_reason,
    "TestAssignFlavors_LeaderWorkerSetTASFlavor": check_lws,
    "TestFlavorScanRecordsLastTriedFlavorIdx": check_last_tried,
    "TestIsPreferred": check_is_preferred,
}


if __name__ == "__main__":
    found = results()
    for r in found:
        if not (r.modelled and r.agrees):
            print(f"{'DIFF' if r.modelled else 'SKIP'} {r.name}: {r.why}")
    agree = sum(r.agrees for r in found)
    print(f"{agree}/{sum(r.modelled for r in found)}/{len(found)} agree/modelled/total")
