"""Policy on quotas and borrowing: what teams are promised must fit the pools that back it.

Kept apart because these rules change with Kueue's quota model (nominal, lending, borrowing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic
from renderer.model.capacity import WORKLOAD_PURPOSES, Offer, quota_offer, serves
from renderer.model.platform import GpuQuota, Platform, Pool, Team
from renderer.policy.rule import error, rule


def quota_offers(p: Platform) -> dict[tuple[str, str], list[tuple[Team, GpuQuota, Offer]]]:
    """Each (pool, resource) with the team quotas that draw on it."""
    by_offer: dict[tuple[str, str], list[tuple[Team, GpuQuota, Offer]]] = defaultdict(list)
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            offer = quota_offer(pool, quota) if pool is not None else None
            if offer is not None:
                by_offer[(offer.pool, offer.resource)].append((team, quota, offer))
    return by_offer


def _what(offer: Offer) -> str:
    return f"{offer.unit}s" if not offer.profile else f"{offer.profile} MIG instances"


def _overcommit(
    rule_id: str,
    pool: Pool,
    entries: list[tuple[Team, GpuQuota, int]],
    capacity: int,
    what: str,
    hint: str,
    capacity_note: str,
) -> Diagnostic:
    """One finding per over-committed pool, on the largest request, noting every other one.

    Any of the requests could be lowered, so all are named; the finding sits on the largest,
    which is where a reviewer usually looks first.
    """
    total = sum(amount for _, _, amount in entries)
    ranked = sorted(entries, key=lambda e: -e[2])
    team, quota, amount = ranked[0]
    notes = tuple(
        (f"team '{t.name}' asks for {a}", q.origin.at("nominal")) for t, q, a in ranked[1:] if a
    )
    return error(
        rule_id,
        f"pool '{pool.name}' is promised {total} {what} and holds {capacity}: "
        f"team '{team.name}' asks for {amount} of them",
        quota.origin.at("nominal"),
        hint.format(index=quota.origin.path[-1], pool=pool.name, over=total - capacity),
        (*notes, (capacity_note, pool.origin.at("spec", "nodes"))),
    )


@rule("quota-exceeds-pool")
def quotas_fit_pools(p: Platform) -> Iterator[Diagnostic]:
    """The nominal quotas on a pool must fit its capacity, times the queue's oversubscription.

    Nominal quota is what a team is promised. If the promises add up to more than the pool holds
    (at its minimum size), some team's guaranteed work waits for capacity that does not exist.
    A queue may allow a deliberate ratio with `oversubscription`; the default is 1.0.
    """
    for (pool_name, _), entries in sorted(quota_offers(p).items()):
        pool = p.pools[pool_name]
        queue = next((q for q in p.queues.values() if pool_name in q.pools), None)
        ratio = queue.oversubscription if queue is not None else 1.0
        offer = entries[0][2]
        allowed = int(offer.guaranteed * ratio)
        if sum(q.nominal for _, q, _ in entries) <= allowed:
            continue
        note = f"declares {pool.nodes.min} nodes x {offer.per_node} {_what(offer)}"
        if ratio != 1.0:
            note += (
                f", and queue '{queue.name if queue else ''}' allows {ratio:g}x oversubscription"
            )
        yield _overcommit(
            "quota-exceeds-pool",
            pool,
            [(t, q, q.nominal) for t, q, _ in entries],
            allowed,
            _what(offer),
            "lower gpus[{index}].nominal (or another team's) by {over} in total, or add nodes to '{pool}'",
            note,
        )


@rule("guaranteed-exceeds-capacity")
def guarantees_fit_pools(p: Platform) -> Iterator[Diagnostic]:
    """What teams keep for themselves (nominal minus lending limit) must fit the pool.

    Oversubscription is a bet that not every team uses its nominal quota at once; the part a team
    never lends is not a bet, so the sum of those parts must fit the real hardware.
    """
    for (pool_name, _), entries in sorted(quota_offers(p).items()):
        pool = p.pools[pool_name]
        offer = entries[0][2]
        kept = [(t, q, q.nominal - (q.lending_limit or 0)) for t, q, _ in entries]
        if sum(k for _, _, k in kept) <= offer.guaranteed:
            continue
        yield _overcommit(
            "guaranteed-exceeds-capacity",
            pool,
            kept,
            offer.guaranteed,
            f"{_what(offer)} that are never lent",
            "set or raise lendingLimit on gpus[{index}] (or another team's) so {over} can be lent, or add nodes to '{pool}'",
            f"declares {pool.nodes.min} nodes x {offer.per_node} {_what(offer)}",
        )


@rule("lending-exceeds-nominal")
def lending_within_nominal(p: Platform) -> Iterator[Diagnostic]:
    """A team cannot lend more than its nominal quota.

    `lendingLimit` is how much of the team's own nominal quota others may borrow; Kueue requires
    it to be at most nominal.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            if quota.lending_limit is not None and quota.lending_limit > quota.nominal:
                yield error(
                    "lending-exceeds-nominal",
                    f"lendingLimit {quota.lending_limit} is more than nominal {quota.nominal} on pool '{quota.pool}'",
                    quota.origin.at("lendingLimit"),
                    f"set lendingLimit to at most {quota.nominal}",
                )


@rule("borrowing-exceeds-pool")
def borrowing_within_pool(p: Platform) -> Iterator[Diagnostic]:
    """Nominal plus borrowing limit may not exceed what the pool can ever hold.

    A borrowing limit past the pool's maximum size promises GPUs that no node provides, and the
    namespace's ResourceQuota (which backs the queue up) would be set above the hardware.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            offer = quota_offer(pool, quota) if pool is not None else None
            if offer is None or quota.borrowing_limit is None:
                continue
            if quota.nominal + quota.borrowing_limit > offer.maximum:
                yield error(
                    "borrowing-exceeds-pool",
                    f"nominal {quota.nominal} + borrowingLimit {quota.borrowing_limit} exceeds pool "
                    f"'{quota.pool}', which holds at most {offer.maximum} {_what(offer)}",
                    quota.origin.at("borrowingLimit"),
                    f"set borrowingLimit to at most {max(offer.maximum - quota.nominal, 0)}",
                )


@rule("quota-needs-namespace")
def quota_has_namespace(p: Platform) -> Iterator[Diagnostic]:
    """A team's GPU quota on a pool needs a namespace of that team on the pool's cluster.

    Quota is admitted through a LocalQueue in a team namespace; without a namespace on the pool's
    cluster the quota can never be used, and usually means the namespace was forgotten.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            if not any(ns.cluster == pool.cluster for ns in team.namespaces):
                yield error(
                    "quota-needs-namespace",
                    f"team '{team.name}' holds quota on pool '{pool.name}' but has no namespace on cluster '{pool.cluster}'",
                    quota.origin.at("pool"),
                    f"add a namespace with cluster: {pool.cluster}",
                )


@rule("training-inference-separation")
def purposes_match_pools(p: Platform) -> Iterator[Diagnostic]:
    """A pool's workload decides which namespace purposes may use it.

    The guide's common mistake: mixing training and production inference without priority and
    isolation rules. Training and fine-tuning pools serve training and batch namespaces;
    online-inference pools serve inference; batch-inference pools serve batch and inference;
    notebook pools serve notebooks and training. A queue may allow mixing explicitly with
    `mixing: {inferencePriority: NAME}`, naming its highest priority so inference always wins.
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            on_cluster = [ns for ns in team.namespaces if ns.cluster == pool.cluster]
            if on_cluster and not any(serves(pool, ns, queue) for ns in on_cluster):
                purposes = ", ".join(sorted({ns.purpose for ns in on_cluster}))
                wanted = " or ".join(sorted(WORKLOAD_PURPOSES[pool.workload]))
                yield error(
                    "training-inference-separation",
                    f"pool '{pool.name}' ({pool.workload}) serves {wanted} namespaces; "
                    f"team '{team.name}' has only {purposes} namespaces on '{pool.cluster}'",
                    quota.origin.at("pool"),
                    f"add a {wanted} namespace, use a pool for {purposes} work, or let the queue mix workloads with mixing.inferencePriority",
                )
