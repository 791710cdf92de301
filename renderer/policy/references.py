"""Policy on names: every name an object refers to exists where it must, and is declared once.

Kept apart because these rules change when the files gain a new kind of cross-reference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping

from renderer.findings.diagnostics import Diagnostic, PathKey
from renderer.model.platform import GpuQuota, Namespace, Origin, Platform, Queue, Team
from renderer.policy.rule import did_you_mean, error, rule


@rule("unknown-reference", scope="team")
def references_resolve(p: Platform) -> Iterator[Diagnostic]:
    """Every name an object refers to must exist: clusters, pools, queues.

    Teams name their queue, their namespaces' clusters and the pools they hold quota on; pools
    and queues name their cluster; queues name their pools. A dangling name would render objects
    that point at nothing (a LocalQueue with no ClusterQueue, a flavor with no nodes).

    To satisfy it: correct the name to an existing object's `metadata.name` (the hint names the
    closest), or add the object's file, e.g. `clusters/<name>.yaml` (`gpuplane new cluster NAME`
    writes one). Checked: `spec.cluster` of pools and queues, `spec.pools` of queues, and a
    team's `spec.queue`, each namespace's `cluster` and each `gpus` entry's `pool`.
    """

    def check(
        kind: str, name: str, known: Mapping[str, object], at: Origin, field: PathKey, what: str
    ) -> Iterator[Diagnostic]:
        # the position only for a finding: most files' positions are never unpacked
        # (`SourceMap`), and this rule would otherwise ask for every reference's
        if name not in known and not p.is_broken(kind, name):
            yield error(
                "unknown-reference",
                f"{what} '{name}' does not exist",
                at.at(*field),
                did_you_mean(name, list(known)) or f"add {kind.lower()}s/{name}.yaml",
            )

    for pool in p.pools.values():
        yield from check("Cluster", pool.cluster, p.clusters, pool.origin, CLUSTER, "cluster")
    for queue in p.queues.values():
        yield from check("Cluster", queue.cluster, p.clusters, queue.origin, CLUSTER, "cluster")
        for index, pool_name in enumerate(queue.pools):
            yield from check(
                "Pool", pool_name, p.pools, queue.origin, ("spec", "pools", index), "pool"
            )
    for team in p.teams.values():
        yield from check("Queue", team.queue, p.queues, team.origin, ("spec", "queue"), "queue")
        for ns in team.namespaces:
            yield from check("Cluster", ns.cluster, p.clusters, ns.origin, ("cluster",), "cluster")
        for quota in team.gpus:
            yield from check("Pool", quota.pool, p.pools, quota.origin, ("pool",), "pool")


CLUSTER: PathKey = ("spec", "cluster")


@rule("queue-pool-elsewhere")
def queue_pools_on_its_cluster(p: Platform) -> Iterator[Diagnostic]:
    """A queue may only list pools of its own cluster.

    A queue is one Kueue cohort on one cluster; a pool of another cluster has no nodes there, so
    quota on it would admit workloads that can never be scheduled.

    To satisfy it: remove the pool from the queue's `spec.pools` and list it in a queue whose
    `spec.cluster` is the pool's cluster, or correct the pool's `spec.cluster` (the note points
    at it) if that is what is wrong.
    """
    for queue in p.queues.values():
        for index, name in enumerate(queue.pools):
            pool = p.pools.get(name)
            if pool is not None and pool.cluster != queue.cluster:
                yield error(
                    "queue-pool-elsewhere",
                    f"queue '{queue.name}' is on cluster '{queue.cluster}' but pool '{name}' is on '{pool.cluster}'",
                    queue.origin.at("spec", "pools", index),
                    "remove the pool from this queue, or list it in a queue of its own cluster",
                    (("the pool's cluster is set here", pool.origin.at("spec", "cluster")),),
                )


@rule("pool-not-in-queue", scope="team")
def team_pools_in_queue(p: Platform) -> Iterator[Diagnostic]:
    """A team may hold quota only on pools that its queue lists.

    The team's ClusterQueue joins its queue's cohort; quota on a pool outside it would be a flavor
    no one else can lend to or borrow from, and escapes the queue's fair-sharing policy.

    To satisfy it: add the pool to `spec.pools` of the team's queue file, move the quota to a
    pool the queue lists (the hint lists them), or set the team's `spec.queue` to the queue
    that lists the pool. A pool of another cluster than the queue's cannot join it: move the
    quota to a pool of the queue's cluster or remove the entry (a team whose work belongs on
    the other cluster moves there whole: its `spec.queue` and every namespace's `cluster`).
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        if queue is None:
            continue
        for quota in team.gpus:
            if quota.pool in p.pools and quota.pool not in queue.pools:
                yield error(
                    "pool-not-in-queue",
                    f"team '{team.name}' holds quota on pool '{quota.pool}', which queue '{queue.name}' does not list",
                    quota.origin.at("pool"),
                    _not_in_queue_hint(p, team, quota, queue),
                )


def _not_in_queue_hint(p: Platform, team: Team, quota: GpuQuota, queue: Queue) -> str:
    """A change that, made, validates: a pool of another cluster cannot join the queue (a
    queue lists only its own cluster's pools, and a team's namespaces sit on its queue's
    cluster), so the quota moves to a pool of the queue the team holds none on yet, or goes."""
    where = p.pools[quota.pool].cluster
    if where == queue.cluster:
        return f"add '{quota.pool}' to {queue.origin.file} spec.pools, or use one of: {', '.join(queue.pools)}"
    held = {q.pool for q in team.gpus if q.profile is None}
    free = [name for name in queue.pools if name not in held and name in p.pools]
    free = (
        [name for name in free if p.pools[name].sharing != "mig"] if quota.profile is None else free
    )
    move = (
        f"move it to a pool of queue '{queue.name}' the team has no quota on yet ({', '.join(free)}) or "
        if free
        else ""
    )
    return (
        f"pool '{quota.pool}' is on cluster '{where}', but the team's queue '{queue.name}' and "
        f"namespaces are on '{queue.cluster}': {move}remove this gpus entry (quota on "
        f"'{where}' needs the team's queue and namespaces there)"
    )


@rule("duplicate-quota", scope="team")
def quota_entries_unique(p: Platform) -> Iterator[Diagnostic]:
    """A team lists each pool (each MIG profile of a pool) at most once in `gpus`.

    Two entries for the same pool would render two flavor quotas for one flavor, which Kueue
    rejects.

    To satisfy it: merge the two entries of the team's `spec.gpus` into one, adding up their
    `nominal`, `borrowingLimit` and `lendingLimit`: `{pool: h200-tune, nominal: 4}` and
    `{pool: h200-tune, nominal: 2}` become `{pool: h200-tune, nominal: 6}`. On a MIG pool, one
    entry per `profile` is allowed.
    """
    for team in p.teams.values():
        seen: dict[tuple[str, str | None], GpuQuota] = {}
        for quota in team.gpus:
            key = (quota.pool, quota.profile)
            if key in seen:
                what = f"pool '{quota.pool}'" + (
                    f" profile '{quota.profile}'" if quota.profile else ""
                )
                yield error(
                    "duplicate-quota",
                    f"team '{team.name}' lists {what} twice",
                    quota.origin.location,
                    "merge the two entries",
                    (("first listed here", seen[key].origin.location),),
                )
            seen.setdefault(key, quota)


@rule("namespace-conflict")
def namespaces_unique(p: Platform) -> Iterator[Diagnostic]:
    """A namespace name is used once per cluster, across all teams.

    Two teams declaring the same namespace would overwrite each other's quota, RBAC and network
    policy: the second one silently wins. The team that had the name keeps it: the error is on
    each namespace entry the change adds or edits (without change information, on every
    declaration after the first, in file order), noting where the name was declared first.

    To satisfy it: give the namespace entry the finding points at another `name`, unique on
    that cluster across all teams, e.g. prefixed with the team: `vision-serve`. Within one
    team's file, remove the repeated entry.
    """
    declared: dict[tuple[str, str], list[tuple[Team, Namespace]]] = defaultdict(list)
    for team in p.teams.values():
        for ns in team.namespaces:
            declared[(ns.cluster, ns.name)].append((team, ns))
    for claims in declared.values():
        if len(claims) < 2:
            continue
        kept = next((c for c in claims if not p.is_changed(c[1].origin)), claims[0])
        owner, earlier = kept
        for team, ns in claims:
            if ns is earlier:
                continue
            whose = "its own list" if owner.name == team.name else f"team '{owner.name}'"
            where = (
                f" for namespaces[{ns.origin.path[-1]}] in {ns.origin.file}"
                if p.is_changed(ns.origin)
                else ""
            )
            yield error(
                "namespace-conflict",
                f"namespace '{ns.name}' on cluster '{ns.cluster}' is already declared by {whose}",
                ns.origin.at("name"),
                f"choose another name{where}, e.g. prefix it with the team name",
                (("declared first here", earlier.origin.at("name")),),
            )
