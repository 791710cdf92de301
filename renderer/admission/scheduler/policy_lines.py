"""What a job could do to others once the cluster is busy, in the words of the preemption
policy the queueing layer renders for its ClusterQueue (`kueue.preemption`): the lines of the
empty-cluster answer's "preemption, once the cluster is busy"."""

from __future__ import annotations

from renderer.layers.queueing import kueue
from renderer.model.platform import Queue
from renderer.model.queue_plans import ClusterQueuePlan


def preemption_lines(
    plan: ClusterQueuePlan, priority: int, *, borrows: bool, fair_sharing: bool
) -> tuple[str, ...]:
    """What the job could do to others once the cluster is busy, in the terms of the policy the
    queue layer renders (`kueue.preemption`)."""
    queue: Queue = plan.queue
    policy = kueue.preemption(queue, fair_sharing=fair_sharing)
    lower = [p for p in queue.priorities if p.value < priority]
    lower_text = ", ".join(f"{queue.name}-{p.name} ({p.value})" for p in lower)
    out = []
    within = policy["withinClusterQueue"]
    if within == "Never":
        out.append(
            f"never preempts workloads in ClusterQueue {plan.name} (withinClusterQueue: Never)"
        )
    elif lower or within == "LowerOrNewerEqualPriority":
        whom = "lower-priority workloads" + (
            ", or newer ones of equal priority," if within == "LowerOrNewerEqualPriority" else ""
        )
        listed = f": {lower_text}" if lower else ""
        out.append(
            f"could preempt {whom} in ClusterQueue {plan.name} (withinClusterQueue: {within}){listed}"
        )
    else:
        out.append(
            f"cannot preempt in ClusterQueue {plan.name}: no priority of queue {queue.name} is "
            f"below {priority} (withinClusterQueue: {within})"
        )
    reclaim = policy["reclaimWithinCohort"]
    if reclaim == "Never":
        out.append(
            f"does not reclaim nominal quota lent to cohort {queue.name} (reclaimWithinCohort: Never)"
        )
    else:
        whom = "any workload" if reclaim == "Any" else "lower-priority workloads"
        out.append(
            f"could reclaim its nominal quota from {whom} of other ClusterQueues borrowing it in "
            f"cohort {queue.name} (reclaimWithinCohort: {reclaim})"
        )
    borrow = policy.get("borrowWithinCohort", {}).get("policy")
    if fair_sharing:
        strategies = ", ".join(kueue.FAIR_SHARING_STRATEGIES)
        out.append(
            f"fair sharing is on: Kueue may preempt workloads of ClusterQueues in cohort "
            f"{queue.name} that use more than their fair share (preemptionStrategies: "
            f"{strategies}); borrowWithinCohort does not apply"
        )
    elif borrow in (None, "Never"):
        out.append("while borrowing, never preempts in the cohort (borrowWithinCohort: Never)")
    elif borrows:
        target = f": {lower_text}" if lower else ": none, no lower priority exists"
        out.append(
            f"while borrowing, could preempt lower-priority workloads of other ClusterQueues in "
            f"cohort {queue.name} (borrowWithinCohort: {borrow}){target}"
        )
    if borrows:
        out.append(
            "what it borrows can be taken back: a lender reclaiming its nominal quota may evict it"
        )
    return tuple(out)
