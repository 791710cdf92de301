"""Policy on queues: priorities, preemption, pool membership and cluster-wide Kueue settings.

These rules change when the scheduler's queueing model does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.platform import Platform, Queue
from renderer.policy.rule import did_you_mean, error, rule


@rule("pool-unused")
def pools_in_a_queue(p: Platform) -> Iterator[Diagnostic]:
    """A pool that no queue lists cannot be used by any team (a warning).

    Teams get quota only on the pools of their queue, so its GPUs would sit idle and
    unaccounted for.

    To satisfy it: add the pool's name to `spec.pools` of a queue file on the pool's cluster,
    e.g. `pools: [h100-train, a100-mig]`, or delete the pool file if its nodes are gone.
    """
    used = {name for q in p.queues.values() for name in q.pools}
    for pool in p.pools.values():
        if pool.name not in used:
            yield Diagnostic(
                "pool-unused",
                f"pool '{pool.name}' is in no queue, so no team can use it",
                pool.origin.at("metadata", "name"),
                hint=f"add it to spec.pools of a queue on cluster '{pool.cluster}'",
                severity=Severity.WARNING,
            )


@rule("queue-priorities")
def priorities_coherent(p: Platform) -> Iterator[Diagnostic]:
    """A queue's priorities have unique names and values, and exactly one is the default.

    They become PriorityClasses and WorkloadPriorityClasses; jobs that name none get the default.
    Two priorities with one value would leave the preemption order between them to chance.

    To satisfy it: in the queue's `spec.priorities`, give each entry its own `name` and its own
    `value` (higher wins admission and preemption; the hint names a free one), and put
    `default: true` on exactly one, e.g. `- {name: standard, value: 100, default: true}`.
    """
    for queue in p.queues.values():
        names: set[str] = set()
        values: dict[int, str] = {}
        for prio in queue.priorities:
            if prio.name in names:
                yield error(
                    "queue-priorities",
                    f"priority '{prio.name}' is declared twice",
                    prio.origin.at("name"),
                )
            if prio.value in values:
                yield error(
                    "queue-priorities",
                    f"priorities '{values[prio.value]}' and '{prio.name}' have the same value {prio.value}",
                    prio.origin.at("value"),
                    f"give '{prio.name}' a value no other priority has, e.g. "
                    f"value: {_free_value(queue, prio.value)}",
                )
            names.add(prio.name)
            values.setdefault(prio.value, prio.name)
        defaults = [prio for prio in queue.priorities if prio.default]
        if len(defaults) != 1:
            yield error(
                "queue-priorities",
                f"queue '{queue.name}' has {len(defaults)} default priorities; exactly one is needed",
                queue.origin.key("spec", "priorities"),
                "mark one priority with default: true",
            )


def _free_value(queue: Queue, taken: int) -> int:
    """The value next below `taken` that no priority of the queue has (or next above, at the
    schema's minimum), so the order against the others stays as written."""
    values = {prio.value for prio in queue.priorities}
    step = -1 if taken > -1_000_000_000 else 1
    free = taken + step
    while free in values:
        free += step
    return free


@rule("unknown-priority", scope="team")
def team_priority_known(p: Platform) -> Iterator[Diagnostic]:
    """A team's priority must be one of its queue's priorities.

    `spec.priority` is the priority the team's workloads get when they ask for none; gpuplane
    renders it into the team's templates as one of the queue's priority classes, so a name the
    queue does not declare would select no class at all.

    To satisfy it: set the team's `spec.priority` to a `name` from its queue's
    `spec.priorities` (the hint names the closest, or lists them), remove it to use the queue's
    default, or add the priority to the queue file.
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        if (
            queue is not None
            and team.priority is not None
            and queue.priority(team.priority) is None
        ):
            known = [prio.name for prio in queue.priorities]
            yield error(
                "unknown-priority",
                f"priority '{team.priority}' is not a priority of queue '{queue.name}'",
                team.origin.at("spec", "priority"),
                did_you_mean(team.priority, known) or f"use one of: {', '.join(known)}",
            )


@rule("mixing-priority")
def mixing_protects_inference(p: Platform) -> Iterator[Diagnostic]:
    """A queue that mixes training and inference must protect inference with its highest priority.

    `mixing.inferencePriority` names the priority inference workloads run at; it must be a
    priority of the queue and strictly higher than every other, so training can never preempt or
    starve production inference on a shared pool.

    To satisfy it: set the queue's `spec.mixing.inferencePriority` to the name of its highest
    priority, or raise that priority's `value` above every other one. Example: priorities
    `serving` (1000) and `standard` (100) with `mixing: {inferencePriority: serving}`. Remove
    `mixing` to keep training and inference on pools of their own.
    """
    for queue in p.queues.values():
        if queue.mixing_priority is None:
            continue
        chosen = queue.priority(queue.mixing_priority)
        at = queue.origin.at("spec", "mixing", "inferencePriority")
        if chosen is None:
            yield error(
                "mixing-priority",
                f"mixing.inferencePriority '{queue.mixing_priority}' is not a priority of queue '{queue.name}'",
                at,
                did_you_mean(queue.mixing_priority, [x.name for x in queue.priorities]),
            )
        elif any(other.value >= chosen.value for other in queue.priorities if other is not chosen):
            yield error(
                "mixing-priority",
                f"priority '{chosen.name}' ({chosen.value}) is not the highest in queue '{queue.name}'",
                at,
                "name the queue's highest priority, or raise its value above the others",
            )


@rule("queue-preemption")
def preemption_coherent(p: Platform) -> Iterator[Diagnostic]:
    """Preempting to borrow needs reclaiming: `borrowWithinCohort` requires `reclaimWithinCohort`.

    Kueue refuses a ClusterQueue whose borrowWithinCohort policy preempts while
    reclaimWithinCohort is Never: a queue that may evict others to borrow must also let them
    reclaim their own quota.

    To satisfy it: in the queue file set `spec.preemption.reclaimWithinCohort` to
    `LowerPriority` or `Any`, or set `borrowWithinCohort: Never` (the default when left out).
    """
    for queue in p.queues.values():
        borrow = queue.preemption.get("borrowWithinCohort", "Never")
        if borrow != "Never" and queue.preemption.get("reclaimWithinCohort", "Never") == "Never":
            yield error(
                "queue-preemption",
                f"queue '{queue.name}' preempts to borrow (borrowWithinCohort: {borrow}) but never reclaims (reclaimWithinCohort: Never)",
                queue.origin.at("spec", "preemption", "borrowWithinCohort"),
                "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort to Never",
            )


@rule("pool-in-several-queues")
def pool_in_one_queue(p: Platform) -> Iterator[Diagnostic]:
    """A pool belongs to one queue.

    A queue is one Kueue cohort with one oversubscription policy; a pool shared by two cohorts
    would have its capacity promised twice, and the capacity rules could not tell which queue's
    limit applies.

    To satisfy it: remove the pool from `spec.pools` of one of the two queue files (the note
    shows where it is listed first), or split its nodes into two pools, one for each queue.
    """
    first: dict[str, Queue] = {}
    for queue in p.queues.values():
        for index, name in enumerate(queue.pools):
            owner = first.setdefault(name, queue)
            if owner is not queue:
                yield error(
                    "pool-in-several-queues",
                    f"pool '{name}' is already in queue '{owner.name}'",
                    queue.origin.at("spec", "pools", index),
                    "remove it from one of the two queues, or split the pool",
                    (
                        (
                            "listed first here",
                            owner.origin.at("spec", "pools", owner.pools.index(name)),
                        ),
                    ),
                )


@rule("reserved-queue-name")
def queue_names_not_reserved(p: Platform) -> Iterator[Diagnostic]:
    """On Volcano clusters a queue may not be named `root` or `default`.

    Volcano creates those two queues itself; a gpuplane Queue (rendered as a Volcano parent
    queue) with either name would overwrite them, and `root` would become its own parent.

    To satisfy it: rename the queue, its `metadata.name` and its file together (e.g.
    `queues/prod.yaml` with `name: prod`), and update `spec.queue` of the teams that name it.
    """
    for queue in p.queues.values():
        cluster = p.clusters.get(queue.cluster)
        if (
            cluster is not None
            and cluster.scheduler == "volcano"
            and queue.name in ("root", "default")
        ):
            teams = sorted(t.name for t in p.teams.values() if t.queue == queue.name)
            yield error(
                "reserved-queue-name",
                f"queue '{queue.name}' would replace Volcano's own '{queue.name}' queue on cluster '{cluster.name}'",
                queue.origin.at("metadata", "name"),
                f"rename the queue (its metadata.name and its file), e.g. "
                f"'{cluster.name}-{queue.name}'"
                + (f", and spec.queue of {_teams(teams)}" if teams else ""),
            )


def _teams(names: list[str]) -> str:
    """`team llm` or `teams llm-eval, search`."""
    return ("team " if len(names) == 1 else "teams ") + ", ".join(names)


@rule("queue-settings-differ")
def cluster_wide_queue_settings(p: Platform) -> Iterator[Diagnostic]:
    """Queues on one cluster should agree on Kueue's cluster-wide settings (a warning).

    `gang.timeout` (waitForPodsReady) and fair sharing are settings of the Kueue controller, not
    of a ClusterQueue: gpuplane applies the strictest timeout and enables fair sharing when any
    queue asks, so a queue that says otherwise does not get what it declares. With fair sharing,
    Kueue also ignores `borrowWithinCohort`.

    To satisfy it: give every queue of the cluster that sets `gang.waitForPodsReady` the same
    `spec.gang.timeout` (e.g. `10m`); and when any of them sets `fairSharing: true`, remove
    `spec.preemption.borrowWithinCohort` from all of them, or turn fair sharing off everywhere.
    """
    by_cluster: dict[str, list[Queue]] = defaultdict(list)
    for queue in p.queues.values():
        by_cluster[queue.cluster].append(queue)
    for queues in by_cluster.values():
        timeouts = {q.gang_timeout for q in queues if q.wait_for_pods_ready}
        if len(timeouts) > 1:
            for queue in queues[1:]:
                yield Diagnostic(
                    "queue-settings-differ",
                    f"queues on cluster '{queue.cluster}' set different gang timeouts ({', '.join(sorted(str(t) for t in timeouts))}); the shortest applies to all",
                    queue.origin.at("spec", "gang", "timeout"),
                    hint="use one gang.timeout for every queue of the cluster",
                    severity=Severity.WARNING,
                )
        fair = any(q.fair_sharing for q in queues)
        for queue in queues:
            if fair and queue.preemption.get("borrowWithinCohort", "Never") != "Never":
                yield Diagnostic(
                    "queue-settings-differ",
                    f"queue '{queue.name}': Kueue ignores borrowWithinCohort when fair sharing is on for the cluster",
                    queue.origin.at("spec", "preemption", "borrowWithinCohort"),
                    hint="remove borrowWithinCohort, or turn fair sharing off on every queue of the cluster",
                    severity=Severity.WARNING,
                )
