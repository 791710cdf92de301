"""Kueue v0.19.2's own conformance cases (tests/kueue_conformance/preemption/*.yaml and
flavorassigner/*.yaml) run through the simulator's scheduling cycle
(tests/kueue_conformance/run_simulated.py): the world built from the case's objects, the
admitted Workloads running, the incoming workload submitted, the cycle run.

Every case the simulator can express agrees with Kueue's table, except the ones in
`run_simulated.KNOWN_DISAGREEMENTS`, each with its reason (strict: one that starts agreeing must
leave the list). A case it cannot express says why and is counted, never hidden."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from renderer.commands.simulate.engine import World
from renderer.commands.simulate.state import StateError, start
from tests.kueue_conformance import run_simulated
from tests.kueue_conformance.common import CaseResult, load_cases, snapshot

RESULTS = {r.name: r for r in run_simulated.results()}
MINIMUM_RUN = 136
"""Cases the simulator expresses and runs (today 136 of 204: 71 preemption, 65 flavor
assigner); a change that silently stops running cases fails here."""
MINIMUM_AGREE = 127
"""Of those, agreeing with Kueue's table (9 known disagreements)."""


def test_every_case_is_accounted_for() -> None:
    total = len(load_cases("preemption")) + len(load_cases("flavorassigner"))
    assert len(RESULTS) == total
    run = [r for r in RESULTS.values() if r.modelled]
    agree = [r for r in run if r.agrees]
    assert len(run) >= MINIMUM_RUN, f"only {len(run)} cases run through the simulator"
    assert len(agree) >= MINIMUM_AGREE
    assert len(run) - len(agree) == len(run_simulated.KNOWN_DISAGREEMENTS)
    for result in RESULTS.values():
        if not result.modelled:
            assert result.why, f"{result.name} is not run and does not say why"


def test_both_families_run() -> None:
    families = Counter(name.split("/", 1)[0] for name, r in RESULTS.items() if r.modelled)
    assert families["preemption"] >= 60
    assert families["flavorassigner"] >= 60


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_case_agrees_with_kueue(name: str) -> None:
    result: CaseResult = RESULTS[name]
    if not result.modelled:
        pytest.skip(f"not expressible in the simulator: {result.why}")
    known = run_simulated.KNOWN_DISAGREEMENTS.get(name)
    if known is not None:
        assert not result.agrees, f"{name} agrees now: drop it from KNOWN_DISAGREEMENTS"
        pytest.xfail(known)
    assert result.agrees, result.why


def test_known_disagreements_name_run_cases() -> None:
    for name in run_simulated.KNOWN_DISAGREEMENTS:
        assert name in RESULTS and RESULTS[name].modelled, name


def _case(folder: str, ending: str):  # type: ignore[no-untyped-def]
    return next(c for c in load_cases(folder) if c.name.endswith(ending))


def test_a_wrong_target_is_caught() -> None:
    """The runner is not a rubber stamp: Kueue's table with another target disagrees."""
    case = _case("preemption", "preempt lowest priority")
    assert run_simulated.run_preemption_case(case).agrees
    facts = {**case.facts, "want": {"preempted": 1, "targets": ["/mid:InClusterQueue"]}}
    result = run_simulated.run_preemption_case(replace(case, facts=facts))
    assert result.modelled and not result.agrees
    assert "/low:InClusterQueue" in result.why


def test_a_wrong_flavor_is_caught() -> None:
    case = _case("flavorassigner", "multiple resource groups, fits")
    assert run_simulated.run_flavorassigner_case(case).agrees
    want = dict(case.facts["want"])
    pod_set = dict(want["podSets"][0])
    pod_set["flavors"] = {**pod_set["flavors"], "cpu": {"flavor": "one", "mode": "Fit"}}
    want["podSets"] = [pod_set]
    result = run_simulated.run_flavorassigner_case(
        replace(case, facts={**case.facts, "want": want})
    )
    assert result.modelled and not result.agrees


def test_preemption_happens_in_the_cycle() -> None:
    """Worked by hand from Kueue's "preempt lowest priority" case: standalone holds 6 cpu, all
    used by low (-1), mid (0) and high (1), 2 cpu each; `in` (priority 1, 2 cpu) evicts low
    alone, InClusterQueue, and waits while low's pods end (`evict_ms`, 30 s): low holds its
    quota until then. Then low is requeued and `in` admitted, its wait those 30 s."""
    case = _case("preemption", "preempt lowest priority")
    snap = snapshot(case.facts)
    job = run_simulated.incoming_job(case.facts)
    sim = run_simulated.simulator(snap, list(snap.workloads), job, fair_sharing=False)
    sim.schedule()
    assert run_simulated.evictions(sim, job) == [("/low", "InClusterQueue")]
    assert job.key not in sim.running and sim.running["/low"].evicting
    assert sim.settings["standalone"].node.usage[("default", "cpu")] == 6
    run_simulated.settle(sim)
    assert sim.now == sim.world.evict_ms == 30_000
    assert sim.running[job.key].admitted.pod_sets[0].flavors == {"cpu": "default"}
    assert sim.outcomes["/low"].preempted == 1
    assert sim.outcomes[job.key].waits == [30_000]
    assert sorted(sim.running) == ["/high", "/in", "/mid"]
    assert "/low" in sim.pending


def test_start_holds_the_running_workloads() -> None:
    """The seeded Workloads hold their quota: a job that would fit an empty queue waits."""
    case = _case("preemption", "preempt lowest priority")
    snap = snapshot(case.facts)
    sim = start(World(replace(snap, workloads=())), list(snap.workloads))
    node = sim.settings["standalone"].node
    assert node.usage[("default", "cpu")] == 6
    assert sorted(sim.live.running["standalone"]) == ["/high", "/low", "/mid"]


def test_start_refuses_what_it_cannot_hold() -> None:
    case = _case("preemption", "preempt lowest priority")
    snap = snapshot(case.facts)
    low = snap.workloads[0]
    several = replace(low, pod_sets=low.pod_sets * 2)
    with pytest.raises(StateError, match="2 pod sets"):
        start(World(replace(snap, workloads=())), [several])
    with pytest.raises(StateError, match="does not exist"):
        start(World(replace(snap, workloads=())), [replace(low, cluster_queue="nowhere")])
