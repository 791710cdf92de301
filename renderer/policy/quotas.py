"""Policy on quotas and borrowing: what teams are promised must fit the pools that back it.

Kept apart because these rules change with Kueue's quota model (nominal, lending, borrowing).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Diagnostic, PathKey
from renderer.model.capacity import (
    PURPOSE_ORDER,
    WORKLOAD_PURPOSES,
    Offer,
    mig_layout_usable,
    quota_offer,
    serves,
)
from renderer.model.platform import GpuQuota, Platform, Pool, Queue, Team
from renderer.policy.rule import error, rule


def quota_offers(p: Platform) -> dict[tuple[str, str], list[tuple[Team, GpuQuota, Offer]]]:
    """Each (pool, resource) with the team quotas that draw on it; none on a MIG pool whose
    layout is invalid (mig-layout-invalid says what to fix first, and the capacity a broken
    layout implies would send a team to a wrong fix)."""
    by_offer: dict[tuple[str, str], list[tuple[Team, GpuQuota, Offer]]] = defaultdict(list)
    usable_pools: dict[str, bool] = {}  # a pool's layout is checked once, not once per quota
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is not None and quota.pool not in usable_pools:
                usable_pools[quota.pool] = mig_layout_usable(pool)
            usable = pool is not None and usable_pools[quota.pool]
            offer = quota_offer(pool, quota) if pool is not None and usable else None
            if offer is not None:
                by_offer[(offer.pool, offer.resource)].append((team, quota, offer))
    return by_offer


CAPACITY_FIELDS: tuple[PathKey, ...] = tuple(
    ("spec", name)
    for name in (
        *("nodes", "gpusPerNode", "accelerator", "sharing", "exposure"),
        *("mig", "timeSlicing", "mps"),
    )
)
"""The fields of a pool file that decide what it holds: a change to one of them resized it."""

MAX_OVERSUBSCRIPTION = 10.0
"""The most `spec.oversubscription` the queue schema allows."""


def _declares(pool: Pool, offer: Offer) -> str:
    nodes = "1 node" if pool.nodes.min == 1 else f"{pool.nodes.min} nodes"
    return f"declares {nodes} x {offer.per_node} {_what(offer)}"


def _what(offer: Offer) -> str:
    return f"{offer.unit}s" if not offer.profile else f"{offer.profile} MIG instances"


@dataclass(frozen=True, slots=True)
class _Wording:
    """What one over-commitment rule says. The hints are templates of {index} (the quota's
    position in `gpus`), {file}, {amount} (that quota's part), {over}, {pool} and {unit}."""

    what: str
    capacity_note: str
    anyone: str
    """no change information: any team could give way"""
    alone: str
    """the changed team's file can give way by itself"""
    shared: str
    """the changed team cannot give way alone: other teams must give the rest"""
    resized: str
    """only the pool's file changed: it was made too small for what teams are promised"""
    reratioed: str = ""
    """only the queue's oversubscription changed (a template of {file}, {needed}, {pool},
    {over}, {unit}); empty for a rule that oversubscription does not relax"""


@dataclass(frozen=True, slots=True)
class _Overcommitted:
    """A pool's offer whose requests add up to more than `capacity`."""

    pool: Pool
    offer: Offer
    entries: list[tuple[Team, GpuQuota, int]]
    """each team's quota entry on the offer, with the amount the rule counts"""
    capacity: int
    queue: Queue | None = None
    """the queue whose oversubscription relaxes the capacity, if any"""


def _overcommit(p: Platform, rule_id: str, found: _Overcommitted, wording: _Wording) -> Diagnostic:
    """One finding per over-committed pool, on the request to lower, noting every other one.

    Any of the requests could be lowered, so all are named. The finding sits on the lines the
    change being checked adds or edits, so its author is told on their own line: the largest
    request whose quota entry changed; else the pool's nodes when only the pool's capacity
    fields changed; else `queue`'s oversubscription when only that changed; without change
    information, on the largest request, where a reviewer usually looks first.
    """
    pool, offer, queue = found.pool, found.offer, found.queue
    total = sum(amount for _, _, amount in found.entries)
    over = total - found.capacity
    ranked = [e for e in sorted(found.entries, key=lambda e: -e[2]) if e[2] > 0]
    changed = [e for e in ranked if p.is_changed(e[1].origin)]
    blamed = changed[0] if changed else ranked[0]
    nodes = pool.origin.at("spec", "nodes")
    promised = f"pool '{pool.name}' is promised {total} {wording.what} and holds {found.capacity}"
    fields = {"pool": pool.name, "over": over, "unit": _what(offer)}
    asks = tuple((f"team '{t.name}' asks for {a}", q.origin.at("nominal")) for t, q, a in ranked)
    if not changed and p.is_changed(pool.origin, *CAPACITY_FIELDS):
        return error(
            rule_id,
            f"{promised}: it {wording.capacity_note}",
            nodes,
            wording.resized.format(file=pool.origin.file, **fields),
            asks,
        )
    ratio = ("spec", "oversubscription")
    if not changed and queue and wording.reratioed and p.is_changed(queue.origin, ratio):
        needed = _ratio_for(total, offer.guaranteed)
        hint = (
            wording.reratioed.format(file=queue.origin.file, needed=needed, **fields)
            if needed
            else f"lower the teams' nominal quotas on '{pool.name}' by {over} in total, "
            f"or add nodes to '{pool.name}'"
        )
        declared = _declares(pool, offer)
        return error(
            rule_id,
            f"{promised}: queue '{queue.name}' allows {queue.oversubscription:g}x oversubscription",
            queue.origin.at(*ratio),
            hint,
            (*asks, (declared, nodes)),
        )
    team, quota, amount = blamed
    hint = wording.anyone
    if changed:
        hint = wording.alone if amount >= over else wording.shared
    fields["limits"] = _limits_after(quota, max(quota.nominal - over, 0), offer)
    notes = tuple(
        (f"team '{t.name}' asks for {a}", q.origin.at("nominal"))
        for t, q, a in ranked
        if q is not quota
    )
    return error(
        rule_id,
        f"{promised}: team '{team.name}' asks for {amount} of them",
        quota.origin.at("nominal"),
        hint.format(index=quota.origin.path[-1], file=quota.origin.file, amount=amount, **fields),
        (*notes, (wording.capacity_note, nodes)),
    )


def _limits_after(quota: GpuQuota, nominal: int, offer: Offer) -> str:
    """What else of the quota entry must change once its nominal is lowered to `nominal`, so
    that the hint, applied, raises neither lending-exceeds-nominal nor borrowing-exceeds-pool
    (which stays silent on an over-committed pool: this hint speaks for it)."""
    more = []
    if quota.lending_limit is not None and quota.lending_limit > nominal:
        more.append(f"lendingLimit to at most {nominal}")
    if quota.borrowing_limit is not None and nominal + quota.borrowing_limit > offer.maximum:
        more.append(f"borrowingLimit to at most {max(offer.maximum - nominal, 0)}")
    return f" (and {' and '.join(more)})" if more else ""


def _ratio_for(total: int, guaranteed: int) -> str:
    """The smallest oversubscription, in hundredths, under which `total` fits `guaranteed`
    (as `quotas_fit_pools` counts it); "" when none the schema allows does."""
    if guaranteed <= 0:
        return ""
    ratio = math.ceil(total * 100 / guaranteed) / 100
    while int(guaranteed * ratio) < total:  # float rounding: step up to the first that fits
        ratio = round(ratio + 0.01, 2)
    return f"{ratio:g}" if ratio <= MAX_OVERSUBSCRIPTION else ""


def _allowed(p: Platform, pool_name: str, offer: Offer) -> tuple[Queue | None, float, int]:
    """The queue that lists the pool, its oversubscription, and the nominal it allows."""
    queue = next((q for q in p.queues.values() if pool_name in q.pools), None)
    ratio = queue.oversubscription if queue is not None else 1.0
    return queue, ratio, int(offer.guaranteed * ratio)


def _nominal_over(p: Platform) -> dict[tuple[str, str], float]:
    """The offers quota-exceeds-pool reports, with their queue's oversubscription: the
    other capacity rules leave them to it, so that one hint says what to change."""
    over: dict[tuple[str, str], float] = {}
    for key, entries in quota_offers(p).items():
        _, ratio, allowed = _allowed(p, key[0], entries[0][2])
        if sum(q.nominal for _, q, _ in entries) > allowed:
            over[key] = ratio
    return over


@rule("quota-exceeds-pool")
def quotas_fit_pools(p: Platform) -> Iterator[Diagnostic]:
    """The nominal quotas on a pool must fit its capacity, times the queue's oversubscription.

    Nominal quota is what a team is promised. If the promises add up to more than the pool holds
    (at its minimum size), some team's guaranteed work waits for capacity that does not exist.
    A queue may allow a deliberate ratio with `oversubscription`; the default is 1.0.

    The error is on the largest quota entry the change adds or edits (on the pool's `nodes` when
    only the pool's size changed, on the queue's `oversubscription` when only that changed, on
    the largest quota when gpuplane cannot tell what changed); every other team's quota is a
    note.

    To satisfy it: lower `nominal` of the `spec.gpus` entries on that pool in the team files
    until they add up to what it holds at `nodes` (min) x `gpusPerNode`, counted in the pool's
    unit (GPUs, instances of the quota's MIG profile, or replicas); or add nodes to the pool's
    `spec.nodes`; or let the queue promise more on purpose with `spec.oversubscription` (up to
    10, e.g. `1.5`).
    """
    for (pool_name, _), entries in sorted(quota_offers(p).items()):
        pool = p.pools[pool_name]
        queue, ratio, allowed = _allowed(p, pool_name, entries[0][2])
        offer = entries[0][2]
        if sum(q.nominal for _, q, _ in entries) <= allowed:
            continue
        note = _declares(pool, offer)
        if ratio != 1.0:
            note += (
                f", and queue '{queue.name if queue else ''}' allows {ratio:g}x oversubscription"
            )
        yield _overcommit(
            p,
            "quota-exceeds-pool",
            _Overcommitted(pool, offer, [(t, q, q.nominal) for t, q, _ in entries], allowed, queue),
            _Wording(
                what=_what(offer),
                capacity_note=note,
                anyone="lower gpus[{index}].nominal (or another team's) by {over} in total"
                "{limits}, or add nodes to '{pool}'",
                alone="lower gpus[{index}].nominal in {file} by {over}{limits}, or add nodes to "
                "'{pool}'",
                shared="lower gpus[{index}].nominal in {file} (it asks for {amount}) and other "
                "teams' by {over} in total, or add nodes to '{pool}'",
                resized="raise spec.nodes in {file} so '{pool}' holds {over} more {unit}, "
                "or lower the teams' nominal quotas by {over} in total",
                reratioed="raise spec.oversubscription in {file} to at least {needed}, or lower "
                "the teams' nominal quotas on '{pool}' by {over} in total",
            ),
        )


@rule("guaranteed-exceeds-capacity")
def guarantees_fit_pools(p: Platform) -> Iterator[Diagnostic]:
    """What teams keep for themselves (nominal minus lending limit) must fit the pool.

    Oversubscription is a bet that not every team uses its nominal quota at once; the part a team
    never lends is not a bet, so the sum of those parts must fit the real hardware.

    The error is on the largest kept part of a quota entry the change adds or edits (on the
    pool's `nodes` when only the pool's size changed, on the largest kept part when gpuplane
    cannot tell what changed); every other team's quota is a note.

    To satisfy it: in the team files' `spec.gpus` entries on that pool, raise `lendingLimit`
    (at most `nominal`; this rule counts a missing one as 0) or lower `nominal`, until the
    parts never lent, `nominal - lendingLimit`, fit the pool at `nodes` (min); or add nodes.
    On a pool whose nominal quotas already exceed it without oversubscription, quota-exceeds-pool
    is reported instead: lowering the nominal quotas as it says fixes this too.
    """
    over = _nominal_over(p)
    for key, entries in sorted(quota_offers(p).items()):
        if over.get(key) == 1.0:  # lowering the nominal quotas, as that hint says, fixes this
            continue
        pool = p.pools[key[0]]
        offer = entries[0][2]
        kept = [(t, q, q.nominal - (q.lending_limit or 0)) for t, q, _ in entries]
        if sum(k for _, _, k in kept) <= offer.guaranteed:
            continue
        yield _overcommit(
            p,
            "guaranteed-exceeds-capacity",
            _Overcommitted(pool, offer, kept, offer.guaranteed),
            _Wording(
                what=f"{_what(offer)} that are never lent",
                capacity_note=_declares(pool, offer),
                anyone="set or raise lendingLimit on gpus[{index}] (or another team's) so {over} "
                "can be lent, or add nodes to '{pool}'",
                alone="set or raise lendingLimit on gpus[{index}] in {file} so {over} can be "
                "lent, or add nodes to '{pool}'",
                shared="set or raise lendingLimit on gpus[{index}] in {file} (it keeps {amount}) "
                "and on other teams' quotas so {over} can be lent in total, or add nodes to "
                "'{pool}'",
                resized="raise spec.nodes in {file} so '{pool}' holds {over} more {unit}, "
                "or raise the teams' lendingLimit so {over} more can be lent",
            ),
        )


@rule("lending-exceeds-nominal", scope="team")
def lending_within_nominal(p: Platform) -> Iterator[Diagnostic]:
    """A team cannot lend more than its nominal quota.

    `lendingLimit` is how much of the team's own nominal quota others may borrow; Kueue requires
    it to be at most nominal.

    To satisfy it: set `lendingLimit` of that `spec.gpus` entry to at most its `nominal`, e.g.
    `{pool: l4-serve, nominal: 4, lendingLimit: 2}`; 0 lends nothing.
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

    To satisfy it: lower `borrowingLimit` of that `spec.gpus` entry to at most the pool's
    maximum (`nodes` max x `gpusPerNode`, in the pool's unit) minus `nominal`, the number the
    hint gives; or let the pool grow: write its `spec.nodes` as `{min: N, max: M}` with a larger
    `max` (an autoscaled pool). An entry without `borrowingLimit` is not checked, nor one on a
    pool whose nominal quotas exceed it: quota-exceeds-pool's hint then names the borrowing limit
    that fits the lowered nominal.
    """
    over = _nominal_over(p)
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            usable = pool is not None and mig_layout_usable(pool)
            offer = quota_offer(pool, quota) if pool is not None and usable else None
            if offer is None or quota.borrowing_limit is None:
                continue
            if (offer.pool, offer.resource) in over:  # quota-exceeds-pool's hint says it
                continue
            if quota.nominal + quota.borrowing_limit > offer.maximum:
                yield error(
                    "borrowing-exceeds-pool",
                    f"nominal {quota.nominal} + borrowingLimit {quota.borrowing_limit} exceeds pool "
                    f"'{quota.pool}', which holds at most {offer.maximum} {_what(offer)}",
                    quota.origin.at("borrowingLimit"),
                    f"set borrowingLimit to at most {max(offer.maximum - quota.nominal, 0)}",
                )


@rule("quota-needs-namespace", scope="team")
def quota_has_namespace(p: Platform) -> Iterator[Diagnostic]:
    """A team's GPU quota on a pool needs a namespace of that team on the pool's cluster.

    Quota is admitted through a LocalQueue in a team namespace; without a namespace on the pool's
    cluster the quota can never be used, and usually means the namespace was forgotten.

    To satisfy it: put the team's namespaces on the pool's cluster, which is its queue's: set
    `cluster` of each entry in `spec.namespaces` (namespace-outside-queue-cluster reports each
    one, with the same fix); with the queue unknown, add a namespace on the pool's cluster with
    a purpose the pool serves, e.g. `- {name: vision-train, cluster: prod-east, purpose:
    training}`, or move the quota to a pool on a cluster where the team has a namespace. A
    pool on another cluster than the team's queue is pool-not-in-queue's, not this rule's.
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None or (queue is not None and queue.cluster != pool.cluster):
                continue  # pool-not-in-queue: a namespace there would leave the queue's cluster
            if not any(ns.cluster == pool.cluster for ns in team.namespaces):
                yield error(
                    "quota-needs-namespace",
                    f"team '{team.name}' holds quota on pool '{pool.name}' but has no namespace on cluster '{pool.cluster}'",
                    quota.origin.at("pool"),
                    # with the queue known, every namespace of the team is off the queue's
                    # cluster, and namespace-outside-queue-cluster asks the same of each
                    f"set cluster: {pool.cluster} on the team's namespaces (its queue's cluster)"
                    if queue is not None
                    else f"add a namespace with cluster: {pool.cluster}",
                )


@rule("training-inference-separation", scope="team")
def purposes_match_pools(p: Platform) -> Iterator[Diagnostic]:
    """A pool's workload decides which namespace purposes may use it.

    The guide's common mistake: mixing training and production inference without priority and
    isolation rules. Training and fine-tuning pools serve training and batch namespaces;
    online-inference pools serve inference; batch-inference pools serve batch and inference;
    notebook pools serve notebooks and training. A queue may allow mixing explicitly with
    `mixing: {inferencePriority: NAME}`, naming its highest priority so inference always wins.

    To satisfy it: give the team a namespace on the pool's cluster whose `purpose` the pool
    serves (`purpose: inference` for an online-inference pool, for example; the hint writes
    the entry, named `<team>-<purpose>`), or move the quota
    to a pool whose `spec.workload` fits the team's namespaces, or set `spec.mixing` on the
    queue as above.
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
                first = PURPOSE_ORDER[pool.workload][0]  # the pool's primary purpose
                yield error(
                    "training-inference-separation",
                    f"pool '{pool.name}' ({pool.workload}) serves {wanted} namespaces; "
                    f"team '{team.name}' has only {purposes} namespaces on '{pool.cluster}'",
                    quota.origin.at("pool"),
                    f"add `- {{name: {team.name}-{first}, cluster: {pool.cluster}, purpose: "
                    f"{first}}}` to spec.namespaces, use a pool for {purposes} work, or let the "
                    "queue mix workloads with mixing.inferencePriority",
                )
