"""Kueue v0.19.2's conformance cases run through the simulator's scheduling cycle
(`renderer.commands.simulate`), not only through the engine's functions.

For every case that is a state the simulator can hold, the runner builds the simulator's world
from the case's Kueue objects (the snapshot `common.kueue_objects` gives, read by the engine's
`read_objects`), starts it with the Workloads holding quota (`simulate.state.start`), submits the
case's incoming workload as a job of one pod set at the case's `now`, and runs the simulator's
cycles at that instant (`Simulator.schedule`). What it checks is Kueue's expectation, unchanged:

- preemption tables (`preemption/*.yaml`): the assignment the cycle nominates is the one the test
  hands `GetTargets` (else the case is not the same state); the incoming job's evictions, each
  `namespace/name:reason` newly evicted and their count, are Kueue's targets; the job is admitted
  at once where Kueue finds targets (the simulator takes no time to evict) and left pending where
  it finds none;
- flavor assigner tables (`flavorassigner/*.yaml`): the mode and the flavors the cycle nominates
  are Kueue's, and what the cycle then does follows: Fit admits it at once on those flavors,
  Preempt evicts and admits or leaves it pending, NoFit leaves it pending with the no-fit reason.

The case's `usage` of a ClusterQueue (the flavor assigner's tests add it to the snapshot) is
held by one running Workload per ClusterQueue and flavor, priority 0. Times: the case's `now`
is the simulator's 0; the seeded Workloads' creation and reservation times keep their offsets;
an incoming workload with no creation time is created at Go's zero time, as upstream.

A case the simulator cannot express is listed with why (`modelled=False`), never counted as
agreeing; a disagreement the simulations explain is in `KNOWN_DISAGREEMENTS` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.scheduler.assignment import Assignment
from renderer.admission.scheduler.preemptor import DEFAULT_STRATEGIES, parse_time
from renderer.admission.scheduler.snapshot import (
    AdmittedWorkload,
    KueueSnapshot,
    PodSetUsage,
    read_objects,
)
from renderer.commands.simulate.engine import (
    EPOCH,
    EVICTED,
    Job,
    Simulator,
    World,
    nomination,
)
from renderer.commands.simulate.state import StateError, start
from renderer.model import quantity
from tests.kueue_conformance import run_flavorassigner
from tests.kueue_conformance.common import NOW, Case, CaseResult, kueue_objects, load_cases

ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
FOREVER = None
"""Seeded Workloads do not finish during a case."""

_FITS = (
    "the request fits by borrowing from the cohort, so the cycle's flavor assigner (Kueue's "
    "assignFlavors, as Kueue's own scheduler would) answers Fit and the simulator admits it; "
    "the test hands GetTargets a Preempt assignment to check that no target is found"
)
_ORACLE = (
    "docs/simulate.md 'The preemption oracle during flavor assignment': the simulator assigns "
    "flavors with `always_preempt` (Preempt wherever Kueue may preempt), so a flavor where "
    "Kueue's SimulatePreemption finds no candidates (the test's `simulation` stub: {stub}) "
    "does not send the search on to the next flavor"
)
KNOWN_DISAGREEMENTS: dict[str, str] = {
    "preemption/classical: no workloads borrowing": _FITS,
    "preemption/classical: can't preempt workloads in ClusterQueue for withinClusterQueue=Never": (
        _FITS
    ),
    "preemption/classical: only preempt workloads using the chosen flavor": (
        "the test hands GetTargets memory on beta; the cycle's flavor assigner tries alpha "
        "first, where preemption is possible too (Preempt on both, the first kept), and evicts "
        "alpha's lowest-priority workload (low) instead of beta's (mid): the same rule on the "
        "flavor Kueue's assigner would pick"
    ),
    "preemption/fair_sharing: hierarchical preemption": (
        "the simulator evicts Kueue's five targets, but once their pods are gone the requeued "
        "targets come before the preemptor in the next cycle and take the quota back: the "
        "simulator orders a cycle's entries by Kueue's entryOrdering, not by fair sharing's "
        "tournament of DominantResourceShares (docs/simulate.md 'Fair sharing's admission "
        "order'), which would put the preemptor's lower share first"
    ),
    "flavorassigner/assign_flavors: cannot preempt in cohort (oracle returns None) for the first "
    "flavor, tries the second flavor (which fits)": _ORACLE.format(stub="one: NoCandidates"),
    "flavorassigner/assign_flavors: cannot preempt in cohort (oracle returns None) for the first "
    "flavor, tries the second flavor (which fits); using deprecated WhenCanBorrow=MayStopSearch,"
    "WhenCanPreempt=MayStopSearch": _ORACLE.format(stub="one: NoCandidates"),
    "flavorassigner/hierarchical: Select deeper-borrowing flavor that fits when "
    "shallower-borrowing flavor has no preemption candidates": _ORACLE.format(
        stub="one: NoCandidates, borrowing 1"
    ),
    "flavorassigner/reclaim_before_priority_preemption: Select first flavor where gpu "
    "reclamation is possible": _ORACLE.format(stub="uno: Preempt, due: Reclaim"),
    "flavorassigner/reclaim_before_priority_preemption: Select second flavor where gpu "
    "reclamation is possible, as compute Fits": _ORACLE.format(
        stub="uno: Preempt, due: Reclaim, tre: Reclaim"
    ),
}
"""Case name -> why the simulator differs from Kueue's table (the test expects it to differ)."""


def results() -> list[CaseResult]:
    return preemption_results() + flavorassigner_results()


def preemption_results() -> list[CaseResult]:
    return [run_preemption_case(c) for c in load_cases("preemption")]


def flavorassigner_results() -> list[CaseResult]:
    return [run_flavorassigner_case(c) for c in load_cases("flavorassigner")]


def _name(case: Case, family: str) -> str:
    return f"{family}/{case.name}"


# --- shared: the case's state as the simulator's -------------------------------------------------


def shift(stamp: str) -> str:
    """A fixture time (NOW plus an offset) on the simulator's clock (EPOCH plus that offset)."""
    if not stamp:
        return ""
    moved = EPOCH + (parse_time(stamp) - NOW)
    return moved.isoformat().replace("+00:00", "Z")


def submit_ms(created: Any) -> int:
    """The incoming job's submit time in milliseconds: its creation offset from NOW, or Go's zero
    time where the case leaves it unset (the simulator stamps a job's creation with it)."""
    if created is None:
        return (ZERO_TIME - EPOCH) // _MS
    return round(Decimal(str(created)) * 1000)


_MS = datetime(2000, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - EPOCH


def simulator(
    snapshot: KueueSnapshot,
    running: list[AdmittedWorkload],
    job: Job,
    *,
    fair_sharing: bool,
    topologies: Mapping[str, tuple[str, ...]] | None = None,
) -> Simulator:
    """The simulator at the case's now (its 0) with `running` holding quota and `job` queued."""
    world = World(replace(snapshot, workloads=()), dict(topologies or {}), fair_sharing)
    sim = start(world, running, [job])
    sim.enqueue(job, 0)
    return sim


def settle(sim: Simulator) -> None:
    """Let the evictions the first cycles issued complete, with the cycles at that instant
    (`Simulator.step`): Kueue admits a preemptor once its targets' pods are gone, in a later
    cycle than the one that preempted for it (docs/simulate.md, "Time to evict"). Only those:
    what follows (a requeued target preempted again, Kueue#13662) is no case's question."""
    gone = sim.now + sim.world.evict_ms
    while sim.events and sim.events[0][0] <= gone and any(k == EVICTED for _, k, *_ in sim.events):
        sim.now = sim.events[0][0]
        sim.step()


def evictions(sim: Simulator, by: Job) -> list[tuple[str, str]]:
    """Every Workload `by` evicted, with the preemptor's reason."""
    return sorted(
        (outcome.job.key, reason)
        for outcome in sim.outcomes.values()
        for preemptor, reason in outcome.preempted_by
        if preemptor == by.key
    )


def flavors_of(assignment: Assignment) -> dict[str, tuple[str, str]]:
    """The first pod set's resource -> (flavor, mode)."""
    if not assignment.pod_sets:
        return {}
    return {r: (a.flavor, a.mode) for r, a in sorted(assignment.pod_sets[0].flavors.items())}


# --- preemption tables --------------------------------------------------------------------------


def preemption_unexpressible(facts: Mapping[str, Any]) -> str | None:
    if facts.get("skip"):
        return str(facts["skip"])
    if len(facts["incoming"]["podSets"]) != 1:
        return "a workload of several pod sets (the simulator's job is one pod set)"
    strategies = (facts.get("fairSharing") or {}).get("preemptionStrategies")
    if strategies and tuple(strategies) != tuple(DEFAULT_STRATEGIES):
        return (
            f"fair-sharing preemptionStrategies {list(strategies)}: the simulator runs Kueue's "
            "default pair"
        )
    return None


def incoming_job(facts: Mapping[str, Any]) -> Job:
    wl = facts["incoming"]
    pod_set = wl["podSets"][0]
    per_pod = {r: quantity.parse(str(v)) for r, v in (pod_set.get("requests") or {}).items()}
    return Job(
        index=0,
        namespace=wl.get("namespace", ""),
        name=wl.get("name", "incoming"),
        cluster_queue=facts["targetCQ"],
        priority=int(wl.get("priority", 0)),
        submit=submit_ms(wl.get("created")),
        duration=3_600_000,
        pods=int(pod_set.get("count", 1)),
        per_pod=MappingProxyType(per_pod),
    )


def run_preemption_case(case: Case) -> CaseResult:
    name = _name(case, "preemption")
    facts = case.facts
    why = preemption_unexpressible(facts)
    snap = read_objects(list(kueue_objects(facts)))
    if why is None and snap.problems:
        why = "; ".join(snap.problems)
    if why is not None:
        return CaseResult(name, False, False, why)
    running = [
        replace(w, created=shift(w.created), reserved_at=shift(w.reserved_at))
        for w in snap.workloads
    ]
    job = incoming_job(facts)
    try:
        sim = simulator(snap, running, job, fair_sharing=facts.get("fairSharing") is not None)
    except StateError as error:
        return CaseResult(name, False, False, str(error))
    assignment = nomination(sim, job)
    sim.schedule()
    got = evictions(sim, job)
    settle(sim)
    problems = preemption_outcome(facts, sim, job, running, got)
    if not problems:
        return CaseResult(name, True, True)
    handed = {r: (fm[0], fm[1]) for r, fm in (facts["assignment"][0].get("flavors") or {}).items()}
    nominated = flavors_of(assignment)
    if nominated == dict(sorted(handed.items())):
        return CaseResult(name, False, True, "; ".join(problems))
    uncovered = sorted(set(job.per_pod) - covered(snap, job.cluster_queue))
    if uncovered and assignment.representative_mode == "NoFit":
        return CaseResult(
            name,
            False,
            False,
            f"ClusterQueue {job.cluster_queue} covers no {', '.join(uncovered)} (upstream "
            "builds it with `MakeFlavorQuotas(...).Obj()`, no resources): Kueue's flavor "
            "assigner answers NoFit, so no scheduling cycle reaches the preemptor; the test "
            f"hands GetTargets {handed} itself",
        )
    problems.append(f"the cycle nominates {nominated}; Kueue's test hands GetTargets {handed}")
    return CaseResult(name, False, True, "; ".join(problems))


def covered(snap: KueueSnapshot, cluster_queue: str) -> set[str]:
    cq = snap.cluster_queues[cluster_queue]
    return {r for group in cq.resource_groups for r in group.covered}


def preemption_outcome(
    facts: Mapping[str, Any],
    sim: Simulator,
    job: Job,
    running: list[AdmittedWorkload],
    got: list[tuple[str, str]],
) -> list[str]:
    """Kueue's targets against the incoming job's evictions in the cycle (`got`), and whether
    it was admitted once they were gone."""
    was_evicted = {w.key for w in running if w.evicted}
    listed = sorted(f"{key}:{reason}" for key, reason in got if key not in was_evicted)
    want = facts["want"]
    wanted = sorted(want.get("targets") or [])
    count = int(want.get("preempted", 0))
    problems = []
    if listed != wanted or len(got) != count:
        problems.append(f"Kueue preempts {count}: {wanted}; the simulator {len(got)}: {listed}")
    admitted = job.key in sim.running
    if admitted != (count > 0):
        problems.append(
            f"the incoming workload is {'admitted' if admitted else 'pending'}; Kueue "
            f"{'finds targets, so admits it once they are gone' if count else 'finds none: pending'}"
        )
    return problems


# --- flavor assigner tables -----------------------------------------------------------------------

COMPARED = {
    "TestAssignFlavors",
    "TestDeletedFlavors",
    "TestReclaimBeforePriorityPreemption",
    "TestHierarchical",
    "TestIsNoFitDueToCapacityAndLimits",
}
"""The tests whose cases are one Workload against a ClusterQueue's state."""

NOT_A_STATE = {
    "TestIsPreferred": "compares two flavor modes (isPreferred), not a Workload against a state",
    "TestAssignFlavorsWithAllowedFlavors": (
        "ConcurrentAdmission's allowed-flavors annotation is not modelled"
    ),
    "TestAssignFlavors_LeaderWorkerSetTASFlavor": (
        "topology-aware scheduling and several pod sets are not modelled"
    ),
    "TestFlavorScanRecordsLastTriedFlavorIdx": (
        "topology-aware scheduling and the flavor bookmark across cycles are not modelled"
    ),
}


def flavorassigner_unexpressible(case: Case) -> str | None:
    facts = case.facts
    found = run_flavorassigner.not_modelled(facts)
    if found is not None:
        return found
    test = case.source.rsplit(" ", 1)[-1]
    if test in NOT_A_STATE:
        return NOT_A_STATE[test]
    workload = facts.get("workload") or {}
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    if len(pod_sets) != 1:
        return "a workload of several pod sets (the simulator's job is one pod set)"
    spec = pod_sets[0].get("template", {}).get("spec", {})
    if pod_sets[0].get("topologyRequest") or facts.get("nodes"):
        return "topology-aware scheduling is not modelled"
    if spec.get("tolerations") or spec.get("affinity"):
        return "tolerations and node affinity: a simulated job has a node selector only"
    if (workload.get("status") or {}).get("reclaimablePods"):
        return "reclaimable pods are not modelled"
    if (facts.get("featureGates") or {}).get("ConcurrentAdmission"):
        return "ConcurrentAdmission is not modelled"
    return None


def usage_holders(facts: Mapping[str, Any]) -> list[AdmittedWorkload]:
    """The case's added usage as running Workloads: one per ClusterQueue and flavor."""
    out = []
    for queue, flavors in sorted((facts.get("usage") or {}).items()):
        for flavor, resources in sorted(flavors.items()):
            usage = {r: quantity.parse(str(v)) for r, v in resources.items()}
            out.append(
                AdmittedWorkload(
                    name=f"usage-{queue}-{flavor}",
                    namespace="seeded",
                    cluster_queue=queue,
                    pod_sets=(
                        PodSetUsage(
                            "main",
                            1,
                            MappingProxyType(dict.fromkeys(usage, flavor)),
                            MappingProxyType(usage),
                        ),
                    ),
                    uid=f"usage-{queue}-{flavor}",
                )
            )
    return out


def workload_job(facts: Mapping[str, Any]) -> Job:
    workload = facts.get("workload") or {}
    pod_set = workload["spec"]["podSets"][0]
    spec = pod_set.get("template", {}).get("spec", {})
    return Job(
        index=0,
        namespace="default",
        name=str((workload.get("metadata") or {}).get("name", "incoming")),
        cluster_queue=facts["clusterQueues"][0]["name"],
        priority=int(workload["spec"].get("priority", 0)),
        submit=submit_ms(None),
        duration=3_600_000,
        pods=int(pod_set.get("count", 1)),
        per_pod=MappingProxyType(run_flavorassigner.pod_requests(spec)),
        node_selector=MappingProxyType(dict(spec.get("nodeSelector") or {})),
    )


def wanted_flavors(want: Mapping[str, Any]) -> dict[str, str] | None:
    """Kueue's flavor per resource of the (one) pod set, where the test checks it."""
    if "podSets" in want:
        return {r: a["flavor"] for r, a in want["podSets"][0]["flavors"].items()}
    if "flavors" in want:
        return dict(want["flavors"])
    return None


def run_flavorassigner_case(case: Case) -> CaseResult:
    name = _name(case, "flavorassigner")
    facts = case.facts
    why = flavorassigner_unexpressible(case)
    if why is not None:
        return CaseResult(name, False, False, why)
    snap = read_objects(list(kueue_objects(facts)))
    if snap.problems:
        return CaseResult(name, False, False, "; ".join(snap.problems))
    job = workload_job(facts)
    topologies = {t["name"]: tuple(t["levels"]) for t in facts.get("topologies") or []}
    sim = simulator(
        snap,
        usage_holders(facts),
        job,
        fair_sharing=bool(facts.get("fairSharing")),
        topologies=topologies,
    )
    assignment = nomination(sim, job)
    sim.schedule()
    evicted = evictions(sim, job)
    settle(sim)
    problems = compare_nomination(assignment, facts["want"])
    problems.extend(cycle_follows(sim, job, assignment, evicted))
    return CaseResult(name, not problems, True, "; ".join(problems))


def compare_nomination(assignment: Assignment, want: Mapping[str, Any]) -> list[str]:
    problems = []
    mode = want.get("representativeMode")
    if mode is not None and assignment.representative_mode != mode:
        problems.append(f"the cycle nominates {assignment.representative_mode}, Kueue {mode}")
    flavors = wanted_flavors(want)
    got = {r: f for r, (f, _) in flavors_of(assignment).items()}
    if flavors is not None and got != flavors:
        problems.append(f"the cycle's flavors {got}, Kueue {flavors}")
    reason = want.get("noFitReason")
    if reason is not None and assignment.no_fit_reason != reason:
        problems.append(f"no-fit reason {assignment.no_fit_reason!r}, Kueue {reason!r}")
    return problems


def cycle_follows(
    sim: Simulator, job: Job, assignment: Assignment, evicted: list[tuple[str, str]]
) -> list[str]:
    """What the cycle did with the nomination: Fit admits at once on its flavors; Preempt
    evicts (`evicted`, in the cycle) and admits once they are gone, or (no targets) leaves it
    pending; NoFit leaves it pending."""
    mode = assignment.representative_mode
    running = sim.running.get(job.key)
    outcome = sim.outcomes[job.key]
    admitted_on = (
        {r: f for r, f in running.admitted.pod_sets[0].flavors.items()} if running else None
    )
    nominated = {r: f for r, (f, _) in flavors_of(assignment).items()}
    if mode == "Fit":
        if admitted_on != nominated or evicted:
            return [f"Fit, but the cycle admits it on {admitted_on} evicting {evicted}"]
        return []
    if mode == "Preempt":
        if running is not None and (not evicted or admitted_on != nominated):
            return [f"Preempt, but the cycle admits it on {admitted_on} evicting {evicted}"]
        if running is None and evicted:
            return [f"Preempt: the cycle evicts {evicted} and leaves it pending"]
        return []
    if running is not None or evicted:
        return [f"NoFit, but the cycle admits it on {admitted_on} evicting {evicted}"]
    if outcome.reason != assignment.no_fit_reason:
        return [f"pending with reason {outcome.reason!r}, nominated {assignment.no_fit_reason!r}"]
    return []


if __name__ == "__main__":
    from tests.kueue_conformance.common import summary

    found = results()
    for r in found:
        if not (r.modelled and r.agrees):
            print(f"{'DIFF' if r.modelled else 'SKIP'} {r.name}: {r.why}")
    print(f"simulated: {summary(found)}")
