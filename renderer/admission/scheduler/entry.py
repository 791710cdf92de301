"""A workload as Kueue's scheduler holds it against the usage now (`scheduler.go` `entry`):
nominated with a flavor assignment, and, where that assignment does not fit, the preemption
Kueue's preemptor would issue for the pod sets that wait."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from renderer.admission.answer.result import PodSetFit
from renderer.admission.scheduler.flavorassigner import Assigner, Assignment
from renderer.admission.scheduler.kueue_usage import Pending
from renderer.admission.scheduler.preemption import CohortNow, Preemption
from renderer.admission.workloads import podsets
from renderer.model.queue_plans import ClusterQueuePlan


@dataclass(frozen=True)
class Entry:
    """A workload nominated against the usage now: its ClusterQueue, the usage now, its
    flavor assignment, and the pending workloads Kueue's queue orders before it."""

    plan: ClusterQueuePlan
    now: CohortNow
    assigner: Assigner
    assignment: Assignment
    admitted_replicas: int
    pending: tuple[Pending, ...]

    def queue_order_note(self, priority: int) -> str:
        """The pending workloads ahead of it in its ClusterQueue's queue."""
        strict = self.plan.queue.strategy == "StrictFIFO"
        return (
            f"{len(self.pending)} pending workload(s) of ClusterQueue {self.plan.name} have "
            f"priority {priority} or higher: Kueue's queue orders them before this job"
            + (" and, with StrictFIFO, admits none behind them first" if strict else "")
        )


def preemption_for(
    entry: Entry, failing: Sequence[PodSetFit], priority: int
) -> tuple[Preemption, dict[tuple[str, str], Decimal]] | None:
    """Kueue's preemptor for the pod sets that wait: each tries its flavors in order and
    takes the first whose candidates free enough (flavor fungibility ranks a flavor without
    candidates last, `isPreferred`), else the first one."""
    now, assigner = entry.now, entry.assigner
    totals: dict[tuple[str, str], Decimal] = dict(entry.assignment.usage)
    needs: set[tuple[str, str]] = set()
    found: Preemption | None = None
    for ps in failing:
        flavors = assigner.waiting.get(ps.name, [])
        per_pod = assigner.per_pod[ps.name]
        best: tuple[Preemption, dict[tuple[str, str], Decimal], set[tuple[str, str]]] | None
        best = None
        for flavor in flavors:
            trial = dict(totals)
            for resource, value in podsets.scaled(per_pod, ps.count).items():
                key = (flavor, resource)
                trial[key] = trial.get(key, Decimal(0)) + value
            short = {fr for fr, v in trial.items() if fr[0] == flavor and v > now.available(*fr)}
            plan = now.preempt(trial, needs | short, priority)
            if best is None or (plan.frees_enough and not best[0].frees_enough):
                best = (plan, trial, needs | short)
            if plan.frees_enough:
                break
        if best is not None:
            found, totals, needs = best
    return None if found is None else (found, totals)
