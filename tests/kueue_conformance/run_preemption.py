"""Kueue's own preemption tests, run on gpuplane's admission engine.

The fixtures in `preemption/*.yaml` transcribe, as data, the table-driven cases of Kueue v0.19.2's
pkg/scheduler/preemption (`TestPreemption` in preemption_test.go, `TestFairPreemptions` in
preemption_fair_test.go, `TestHierarchicalPreemptions` in preemption_hierarchical_test.go), each
under its upstream name with the line it starts at. Besides the facts `common.py` describes, a
case holds:

- `incoming`: the workload to admit (`name`, `priority`, `created`, and its `podSets`, each with
  `count` and per-pod `requests`), and `targetCQ`, its ClusterQueue;
- `assignment`: the flavor assignment handed to `Preemptor.GetTargets`, per pod set in the
  workload's order: `count` (Go's zero when upstream leaves it out) and, per resource,
  `[flavor, mode]` (mode Fit, Preempt or NoFit);
- `fairSharing`: present when upstream builds the preemptor with a fair-sharing configuration,
  with its `preemptionStrategies` (none: Kueue's default pair);
- `want`: `preempted`, how many targets Kueue returns (upstream `wantPreempted`, the count
  `IssuePreemptions` reports), and `targets`, the `namespace/name:reason` of each Workload it
  newly marks as preempted (from upstream `wantWorkloads`' Preempted conditions, or the fair
  tests' `wantPreempted` set). A target already evicted before the call keeps its conditions
  upstream, so it is counted in `preempted` but not listed.

What the preemptor is given is what Kueue's is: the usage of the assignment
(`Assignment.TotalRequestsFor`: per-pod requests times the assignment's count, zero requests
left out) and the flavor resources whose mode is Preempt (`flavorResourcesNeedPreemption`).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from renderer.admission.scheduler.preemption import get_targets
from renderer.admission.scheduler.preemptor import Incoming, Strategy
from renderer.model import quantity
from renderer.model.quota_tree import FlavorResource
from tests.kueue_conformance.common import NOW, Case, CaseResult, load_cases, snapshot, timestamp

FOLDER = "preemption"


def incoming(case: Case) -> Incoming:
    facts = case.facts
    wl = facts["incoming"]
    usage: dict[FlavorResource, Decimal] = {}
    needs: set[FlavorResource] = set()
    for i, assigned in enumerate(facts["assignment"]):
        pod_set = wl["podSets"][i]
        count = int(assigned.get("count", 0))
        for resource, value in (pod_set.get("requests") or {}).items():
            total = quantity.parse(str(value)) * count
            flavor = (assigned.get("flavors") or {}).get(resource)
            if total == 0 or flavor is None:
                continue
            key = (flavor[0], resource)
            usage[key] = usage.get(key, Decimal(0)) + total
        for resource, (flavor, mode) in (assigned.get("flavors") or {}).items():
            if mode == "Preempt":
                needs.add((flavor, resource))
    return Incoming(
        cluster_queue=facts["targetCQ"],
        usage=usage,
        needs=frozenset(needs),
        priority=int(wl.get("priority", 0)),
        created=timestamp(wl["created"]) if "created" in wl else "",
        name=wl.get("name", ""),
        namespace=wl.get("namespace", ""),
    )


def run(case: Case) -> CaseResult:
    if case.skip:
        return CaseResult(case.name, False, False, case.skip)
    facts = case.facts
    found = snapshot(facts)
    if found.problems:
        return CaseResult(case.name, False, False, "; ".join(found.problems))
    fair: Mapping[str, Any] | None = facts.get("fairSharing")
    strategies: tuple[Strategy, ...] = tuple((fair or {}).get("preemptionStrategies") or ())
    targets = get_targets(
        found, incoming(case), fair_sharing=fair is not None, strategies=strategies, now=NOW
    )
    got = sorted(
        f"{t.workload.namespace}/{t.workload.name}:{t.reason}"
        for t in targets
        if not t.workload.evicted
    )
    want = facts["want"]
    wanted = sorted(want.get("targets") or [])
    agrees = got == wanted and len(targets) == int(want.get("preempted", 0))
    why = (
        ""
        if agrees
        else f"Kueue preempts {len(wanted)}: {wanted}; the engine {len(targets)}: {got}"
    )
    return CaseResult(case.name, agrees, True, why)


def results() -> list[CaseResult]:
    return [run(case) for case in load_cases(FOLDER)]


if __name__ == "__main__":
    from tests.kueue_conformance.common import summary

    found = results()
    for r in found:
        if not r.agrees:
            print(f"{'DIFFERS' if r.modelled else 'NOT MODELLED'} {r.name}: {r.why}")
    print(f"kueue preemption conformance: {summary(found)}")
