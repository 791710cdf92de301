"""`gpuplane plan`: what each pool offers, what is promised on it, and what each team can hold.

Per cluster, one row per pool and resource name (a MIG pool has one per profile): capacity at
the pool's minimum and maximum size, the queue's oversubscription ceiling, and the sums of the
teams' nominal, guaranteed and lendable quota on it. Then one row per team quota entry: its
guaranteed, nominal and lendable part, what it can borrow, the most the team can ever hold there,
and the ClusterQueue (`renderer.model.queue_plans`) that holds it; and one row per ClusterQueue:
the namespaces that submit to it and the pools it reaches. `build_plan(..., teams=, pools=)`
keeps only what concerns those teams or pools ("how many GPUs can team X get, and where").

Every count comes from `renderer.model.capacity` and `renderer.model.queue_plans` (never
recomputed here), and "guaranteed" is the very figure the policy rule
`guaranteed-exceeds-capacity` checks, so the plan and the policy cannot disagree. `build_plan`
returns immutable data and `plan_json` its JSON; `plan_forms` renders tables and Markdown.
Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from renderer.findings.diagnostics import closest
from renderer.layers.queueing.kueue import DEFAULT_LOCAL_QUEUE
from renderer.model.capacity import Offer, maximum_holding, pool_offers, quota_offer
from renderer.model.platform import GpuQuota, Platform, Pool, Queue, Team
from renderer.model.queue_plans import cluster_queues, cohorts, potential_available
from renderer.model.serving_quota import SURGE, endpoint_quotas
from renderer.model.view import ClusterView
from renderer.output.canonical import sorted_keys

UNDERUSED = 0.5
"""A pool whose nominal quotas add up to less than this share of its capacity is "underused"."""

LEGEND: tuple[tuple[str, str], ...] = (
    (
        "capacity",
        "units the pool offers at its minimum node count; quotas and guarantees are sized "
        "against it (max: at its maximum node count, the most borrowing can ever reach)",
    ),
    ("limit", "the queue's oversubscription ceiling: nominal may reach capacity x limit"),
    ("nominal", "sum of the teams' nominal quotas (Kueue nominalQuota)"),
    (
        "guaranteed",
        "sum of (nominal - lendingLimit): what teams never lend; an entry without lendingLimit "
        "counts its whole nominal, exactly as rule guaranteed-exceeds-capacity checks it "
        "against capacity",
    ),
    (
        "lendable",
        "sum of lendingLimit, or of the whole nominal where it is unset: what Kueue lets "
        "other queues of the cohort borrow while idle (and reclaims by preemption)",
    ),
    ("free", "capacity - nominal: units nobody is promised; negative when oversubscribed"),
    (
        "headroom",
        "capacity x limit - nominal: nominal quota that can still be granted; "
        "negative only where rule quota-exceeds-pool fails",
    ),
    ("used", "nominal / capacity: the oversubscription ratio in use"),
    (
        "nominal in GPUs",
        "nominal in physical GPUs (JSON: physicalGpus, with gpuShare the GPUs one unit is): "
        "a time-slicing or MPS replica is 1/replicas of a GPU, a MIG instance its compute "
        "slices of the GPU's 7; quota counts units, so nominal 2 on a pool of 4 replicas per "
        "GPU is half a GPU",
    ),
    (
        "maximum",
        "the most one team can hold: nominal + borrowingLimit, capped at the pool's maximum; "
        "without borrowingLimit (unlimited borrowing) the pool's maximum",
    ),
    (
        "reachable",
        "the most Kueue can admit for the team on an empty cluster (its PotentialAvailable): "
        "what it never lends plus all the cohort may lend, capped by the maximum; lower than the "
        "maximum when the other teams lend less",
    ),
    (
        "borrowable",
        "reachable - nominal: what the team can borrow on top of its nominal quota, the smaller "
        "of its borrowingLimit and what the other teams of the cohort lend",
    ),
    (
        "ClusterQueue",
        "the Kueue ClusterQueue (on Volcano: the leaf queue) of one team and namespace purpose; "
        "each namespace's `default` LocalQueue points at it; it holds no quota of its own and "
        "draws on the team's (the team's Cohort, on Volcano its queue), on the pools of its "
        "purpose first, then on those another purpose of the team shares with it",
    ),
)
"""What each figure means; shown under the tables, in the Markdown and in the JSON."""


@dataclass(frozen=True, slots=True)
class PlanWarning:
    """Something off but valid: a stable `code` for tools and a sentence for people."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class PoolRow:
    """One resource name of one pool: its capacity and what the teams are promised on it."""

    pool: str
    resource: str
    profile: str | None
    unit: str
    accelerator: str
    sharing: str
    workload: str
    nodes_min: int
    nodes_max: int
    per_node: int
    capacity: int
    capacity_max: int
    queue: str | None
    limit: float
    allowed: int
    nominal: int
    guaranteed: int
    lendable: int
    teams: tuple[str, ...]
    warnings: tuple[PlanWarning, ...]
    gpu_share: Fraction | None = Fraction(1)
    """Physical GPUs one unit is (`Offer.gpu_share`): below 1 on a shared or MIG pool."""

    @property
    def physical_nominal(self) -> Fraction | None:
        """The teams' nominal quotas in physical GPUs."""
        return None if self.gpu_share is None else self.nominal * self.gpu_share

    @property
    def free(self) -> int:
        return self.capacity - self.nominal

    @property
    def headroom(self) -> int:
        return self.allowed - self.nominal

    @property
    def used(self) -> float | None:
        """Nominal / capacity, or None when the pool guarantees nothing (min 0 nodes)."""
        return round(self.nominal / self.capacity, 4) if self.capacity else None


@dataclass(frozen=True, slots=True)
class TeamRow:
    """One team quota entry: its parts, its ceiling, the team's Cohort that holds it and the
    ClusterQueues that draw on it."""

    team: str
    pool: str
    resource: str
    profile: str | None
    unit: str
    cohort: str | None
    """The team's Cohort holding the quota; None when no ClusterQueue of the team lists the pool."""
    cluster_queues: tuple[str, ...]
    """The team's ClusterQueues that list the pool, all drawing on the same quota."""
    nominal: int
    guaranteed: int
    lendable: int
    lending_limit: int | None
    borrowing_limit: int | None
    maximum: int
    reachable: int
    warnings: tuple[PlanWarning, ...]
    gpu_share: Fraction | None = Fraction(1)
    """Physical GPUs one unit is (`Offer.gpu_share`): below 1 on a shared or MIG pool, where
    `nominal: 2` on a pool of 4 time-slicing replicas per GPU is half a GPU."""

    @property
    def physical_nominal(self) -> Fraction | None:
        """The nominal quota in physical GPUs."""
        return None if self.gpu_share is None else self.nominal * self.gpu_share

    @property
    def physical_maximum(self) -> Fraction | None:
        """The most the team can hold, in physical GPUs."""
        return None if self.gpu_share is None else self.maximum * self.gpu_share

    @property
    def borrowable(self) -> int:
        """What the cohort can lend the team beyond its nominal quota on an empty cluster."""
        return self.reachable - self.nominal


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One ClusterQueue (a leaf queue on Volcano): who submits to it and which pools it reaches."""

    team: str
    name: str
    purpose: str
    cohort: str
    namespaces: tuple[str, ...]
    local_queue: str | None
    """The LocalQueue in each namespace that points at it; None on Volcano, which has none."""
    team_cohort: str
    """The team's Cohort (on Volcano: the team's queue), which holds the quota it draws on."""
    pools: tuple[str, ...]
    """Pools of its own purpose, which Kueue tries first."""
    shared: tuple[str, ...]
    """Pools whose primary purpose is another of the team's, which it also draws on."""


@dataclass(frozen=True, slots=True)
class EndpointRow:
    """One endpoint at its maximum against its team's nominal quota on the pool
    (`renderer.model.serving_quota`): `(max + 1 surge) x gpus`, and all the team's endpoints
    there together."""

    team: str
    namespace: str
    endpoint: str
    pool: str
    resource: str
    profile: str | None
    unit: str
    gpus: int
    """Units per replica."""
    min_replicas: int
    max_replicas: int
    at_max: int
    """(max + 1 surge) x gpus: what it holds at its maximum during a rolling update."""
    team_total: int
    """What all the team's endpoints on this pool (and resource) hold at their maximum."""
    nominal: int

    @property
    def fits(self) -> bool:
        return self.team_total <= self.nominal


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    name: str
    environment: str
    scheduler: str
    pools: tuple[PoolRow, ...]
    teams: tuple[TeamRow, ...]
    queues: tuple[QueueRow, ...] = ()
    endpoints: tuple[EndpointRow, ...] = ()


@dataclass(frozen=True, slots=True)
class PlanReport:
    clusters: tuple[ClusterPlan, ...]
    legend: tuple[tuple[str, str], ...] = LEGEND
    teams: tuple[str, ...] = ()
    """The teams asked about (`plan --team`); empty: every team."""
    pools: tuple[str, ...] = ()
    """The pools asked about (`plan --pool`); empty: every pool."""
    registries: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each team asked about and the image prefixes its pods may use (`spec.images`); an
    empty tuple: none, so the admission policy refuses every pod of the team."""


# --- building ---------------------------------------------------------------------------------


def guaranteed(quota: GpuQuota) -> int:
    """What a team keeps for itself: the figure rule guaranteed-exceeds-capacity adds up."""
    return quota.nominal - (quota.lending_limit or 0)


def lendable(quota: GpuQuota) -> int:
    """What Kueue lets the cohort borrow: the lending limit, or all of nominal when unset."""
    return quota.nominal if quota.lending_limit is None else quota.lending_limit


def _queue_of(platform: Platform, pool: Pool) -> tuple[Queue | None, tuple[str, ...]]:
    """The queue whose ceiling applies (the first listing the pool, as the policy picks it),
    and the names of every queue listing the pool."""
    listing = [q for q in platform.queues.values() if pool.name in q.pools]
    return (listing[0] if listing else None), tuple(q.name for q in listing)


def _pool_row(
    platform: Platform, pool: Pool, offer: Offer, entries: list[tuple[Team, GpuQuota]]
) -> PoolRow:
    queue, listing = _queue_of(platform, pool)
    limit = queue.oversubscription if queue is not None else 1.0
    allowed = int(offer.guaranteed * limit)
    nominal = sum(q.nominal for _, q in entries)
    warnings: list[PlanWarning] = []
    if queue is None:
        warnings.append(PlanWarning("no-queue", "no queue lists this pool: no team can use it"))
    elif len(listing) > 1:
        warnings.append(
            PlanWarning(
                "several-queues",
                f"listed by queues {', '.join(listing)}: "
                f"the ceiling is checked against '{queue.name}'",
            )
        )
    if offer.guaranteed == 0:
        warnings.append(
            PlanWarning("no-capacity", "nothing guaranteed: the pool may scale to 0 nodes")
        )
    if not entries:
        warnings.append(
            PlanWarning(
                "no-quota",
                "no team holds quota on it: no ClusterQueue covers it, so no "
                "workload is admitted here",
            )
        )
    elif nominal * 2 < offer.guaranteed:  # UNDERUSED, in integers
        share = round(100 * nominal / offer.guaranteed)
        warnings.append(
            PlanWarning(
                "underused",
                f"nominal quotas cover {share}% of capacity (under {UNDERUSED:.0%})",
            )
        )
    elif nominal > offer.guaranteed:
        warnings.append(
            PlanWarning(
                "oversubscribed",
                f"{nominal} promised on {offer.guaranteed} at min nodes (queue allows {limit:g}x)",
            )
        )
    return PoolRow(
        pool=pool.name,
        resource=offer.resource,
        profile=offer.profile,
        unit=offer.unit,
        accelerator=pool.accelerator,
        sharing=pool.sharing,
        workload=pool.workload,
        nodes_min=pool.nodes.min,
        nodes_max=pool.nodes.max,
        per_node=offer.per_node,
        capacity=offer.guaranteed,
        capacity_max=offer.maximum,
        queue=queue.name if queue is not None else None,
        limit=limit,
        allowed=allowed,
        nominal=nominal,
        guaranteed=sum(guaranteed(q) for _, q in entries),
        lendable=sum(lendable(q) for _, q in entries),
        teams=tuple(sorted({t.name for t, _ in entries})),
        warnings=tuple(warnings),
        gpu_share=offer.gpu_share,
    )


def _holders(view: ClusterView) -> dict[tuple[str, str], tuple[str | None, tuple[str, ...]]]:
    """(team, pool) -> the team's Cohort holding its quota there, and the ClusterQueues that
    draw on it."""
    holders: dict[tuple[str, str], tuple[str | None, tuple[str, ...]]] = {}
    for plan in cluster_queues(view):
        for flavor in plan.flavors:
            key = (plan.team.name, flavor.pool.name)
            _, drawing = holders.get(key, (None, ()))
            holders[key] = (plan.cohort.name, (*drawing, plan.name))
    return holders


def _reachable(view: ClusterView) -> dict[tuple[str, str, str], int]:
    """(team, pool, resource) -> Kueue's PotentialAvailable for the team's ClusterQueues there
    (the same for each: they set no limit of their own, the team's Cohort does)."""
    plans = cluster_queues(view)
    by_cohort = cohorts(plans)
    found: dict[tuple[str, str, str], int] = {}
    for plan in plans:
        cohort = by_cohort[plan.queue.name]
        for flavor in plan.flavors:
            for resource in flavor.resources:
                key = (plan.team.name, flavor.pool.name, resource)
                found[key] = int(potential_available(plan, cohort, flavor.pool.name, resource))
    return found


def _team_row(
    team: Team,
    pool: Pool,
    quota: GpuQuota,
    offer: Offer,
    holders: dict[tuple[str, str], tuple[str | None, tuple[str, ...]]],
    reachable: dict[tuple[str, str, str], int],
) -> TeamRow:
    holder, drawing = holders.get((team.name, pool.name), (None, ()))
    warnings: list[PlanWarning] = []
    if holder is None:
        warnings.append(
            PlanWarning(
                "no-cluster-queue",
                "no ClusterQueue of the team lists the pool: no namespace of the team can use it",
            )
        )
    if quota.nominal == 0:
        warnings.append(PlanWarning("borrow-only", "nominal 0: the team can only borrow here"))
    elif quota.lending_limit is None:
        warnings.append(
            PlanWarning(
                "lends-all",
                "no lendingLimit: counted as guaranteed, yet Kueue may lend all of it "
                "(and reclaims it by preemption)",
            )
        )
    return TeamRow(
        team=team.name,
        pool=pool.name,
        resource=offer.resource,
        profile=offer.profile,
        unit=offer.unit,
        cohort=holder,
        cluster_queues=tuple(sorted(drawing)),
        nominal=quota.nominal,
        guaranteed=guaranteed(quota),
        lendable=lendable(quota),
        lending_limit=quota.lending_limit,
        borrowing_limit=quota.borrowing_limit,
        maximum=maximum_holding(offer, quota),
        reachable=reachable.get((team.name, pool.name, offer.resource), 0),
        warnings=tuple(warnings),
        gpu_share=offer.gpu_share,
    )


def _queue_rows(view: ClusterView) -> list[QueueRow]:
    """Every ClusterQueue of the cluster: its namespaces and the pools it draws on."""
    local = DEFAULT_LOCAL_QUEUE if view.cluster.scheduler == "kueue" else None
    return [
        QueueRow(
            team=plan.team.name,
            name=plan.name,
            purpose=plan.purpose,
            cohort=plan.queue.name,
            namespaces=tuple(ns.name for ns in plan.namespaces),
            local_queue=local,
            team_cohort=plan.cohort.name,
            pools=tuple(f.pool.name for f in plan.flavors if not f.borrow_only),
            shared=tuple(f.pool.name for f in plan.flavors if f.borrow_only),
        )
        for plan in cluster_queues(view)
    ]


def _endpoint_rows(platform: Platform, name: str) -> list[EndpointRow]:
    """Every endpoint of the cluster with a quota to draw on, at its maximum."""
    found = [e for e in endpoint_quotas(platform) if e.pool.cluster == name]
    totals: dict[tuple[str, str, str], int] = {}
    for entry in found:
        totals[entry.key] = totals.get(entry.key, 0) + entry.at_max
    return [
        EndpointRow(
            team=e.team.name,
            namespace=e.namespace.name,
            endpoint=e.endpoint.name,
            pool=e.pool.name,
            resource=e.offer.resource,
            profile=e.offer.profile,
            unit=e.offer.unit,
            gpus=e.endpoint.gpus,
            min_replicas=e.endpoint.min_replicas,
            max_replicas=e.endpoint.max_replicas,
            at_max=e.at_max,
            team_total=totals[e.key],
            nominal=e.quota.nominal,
        )
        for e in found
    ]


def _cluster_plan(platform: Platform, name: str) -> ClusterPlan:
    cluster = platform.clusters[name]
    view = ClusterView.of(platform, cluster)
    holders = _holders(view)
    reachable = _reachable(view)
    by_offer: dict[tuple[str, str], list[tuple[Team, GpuQuota]]] = {}
    team_rows: list[TeamRow] = []
    for team_name in sorted(platform.teams):
        team = platform.teams[team_name]
        for quota in team.gpus:
            pool = platform.pools.get(quota.pool)
            if pool is None or pool.cluster != name:
                continue
            offer = quota_offer(pool, quota)
            if offer is None:
                continue
            by_offer.setdefault((pool.name, offer.resource), []).append((team, quota))
            team_rows.append(_team_row(team, pool, quota, offer, holders, reachable))
    pool_rows = [
        _pool_row(platform, pool, offer, by_offer.get((pool.name, offer.resource), []))
        for pool in view.pools
        for offer in pool_offers(pool)
    ]
    return ClusterPlan(
        name=name,
        environment=cluster.environment,
        scheduler=cluster.scheduler,
        pools=tuple(pool_rows),
        teams=tuple(sorted(team_rows, key=lambda r: (r.team, r.pool, r.resource))),
        queues=tuple(sorted(_queue_rows(view), key=lambda q: (q.team, q.name))),
        endpoints=tuple(_endpoint_rows(platform, name)),
    )


def _focused(cluster: ClusterPlan, teams: set[str], pools: set[str]) -> ClusterPlan | None:
    """The part of a cluster's plan about these teams and pools (empty set: all of them), or
    None when nothing is left. Team rows must match both; pool rows are the pools asked about,
    or else the pools the teams' rows are on; ClusterQueues are the teams', on those pools."""
    team_rows = tuple(
        r
        for r in cluster.teams
        if (not teams or r.team in teams) and (not pools or r.pool in pools)
    )
    used = {(r.pool, r.resource) for r in team_rows}
    pool_rows = tuple(
        r for r in cluster.pools if (r.pool in pools if pools else (r.pool, r.resource) in used)
    )
    queue_rows = tuple(
        q
        for q in cluster.queues
        if (not teams or q.team in teams) and (not pools or pools & {*q.pools, *q.shared})
    )
    endpoint_rows = tuple(
        e
        for e in cluster.endpoints
        if (not teams or e.team in teams) and (not pools or e.pool in pools)
    )
    if not (team_rows or pool_rows or queue_rows):
        return None
    return ClusterPlan(
        cluster.name,
        cluster.environment,
        cluster.scheduler,
        pool_rows,
        team_rows,
        queue_rows,
        endpoint_rows,
    )


def unknown_names(
    platform: Platform,
    clusters: Iterable[str] = (),
    teams: Iterable[str] = (),
    pools: Iterable[str] = (),
) -> str | None:
    """Why the names asked for cannot be planned (with the closest known name), or None."""
    for what, asked, known in (
        ("cluster", clusters, platform.clusters),
        ("team", teams, platform.teams),
        ("pool", pools, platform.pools),
    ):
        unknown = sorted(set(asked) - set(known))
        if unknown:
            near = closest(unknown[0], known)
            hint = f" Did you mean '{near}'?" if near else f" Known: {', '.join(sorted(known))}."
            return f"unknown {what}(s): {', '.join(unknown)}.{hint}"
    return None


def build_plan(
    platform: Platform,
    clusters: Iterable[str] | None = None,
    teams: Iterable[str] = (),
    pools: Iterable[str] = (),
) -> PlanReport:
    """The plan of every cluster (or of those named), in name order; with `teams` or `pools`,
    only what concerns them. ValueError for a name the platform does not declare."""
    names = sorted(platform.clusters) if clusters is None else sorted(set(clusters))
    wanted_teams, wanted_pools = sorted(set(teams)), sorted(set(pools))
    problem = unknown_names(platform, names, wanted_teams, wanted_pools)
    if problem is not None:
        raise ValueError(problem)
    plans = [_cluster_plan(platform, n) for n in names]
    if wanted_teams or wanted_pools:
        found = (_focused(c, set(wanted_teams), set(wanted_pools)) for c in plans)
        plans = [c for c in found if c is not None]
    registries = tuple((name, platform.teams[name].images) for name in wanted_teams)
    return PlanReport(
        tuple(plans),
        teams=tuple(wanted_teams),
        pools=tuple(wanted_pools),
        registries=registries,
    )


# --- JSON -------------------------------------------------------------------------------------


def _share_json(share: Fraction | None) -> str | None:
    """`Offer.gpu_share` as JSON: `"1/4"` (exact), `"1"`, or null where units differ."""
    return None if share is None else str(share)


def _gpus_json(gpus: Fraction | None) -> float | int | None:
    """Physical GPUs as a JSON number: whole where whole, else rounded to 4 decimals."""
    if gpus is None:
        return None
    return gpus.numerator if gpus.denominator == 1 else round(float(gpus), 4)


def plan_json(report: PlanReport) -> dict[str, Any]:
    """The plan as JSON-ready data: stable camelCase keys in sorted order, numbers as numbers."""
    clusters = []
    for cluster in report.clusters:
        pools = [
            {
                "pool": r.pool,
                "resource": r.resource,
                "profile": r.profile,
                "unit": r.unit,
                "accelerator": r.accelerator,
                "sharing": r.sharing,
                "workload": r.workload,
                "nodes": {"min": r.nodes_min, "max": r.nodes_max},
                "perNode": r.per_node,
                "capacity": {"atMinNodes": r.capacity, "atMaxNodes": r.capacity_max},
                "queue": r.queue,
                "oversubscription": {"limit": r.limit, "allowedNominal": r.allowed, "used": r.used},
                "nominal": r.nominal,
                "guaranteed": r.guaranteed,
                "lendable": r.lendable,
                "free": r.free,
                "headroom": r.headroom,
                "teams": list(r.teams),
                "gpuShare": _share_json(r.gpu_share),
                "physicalGpus": {"nominal": _gpus_json(r.physical_nominal)},
                "warnings": [{"code": w.code, "message": w.message} for w in r.warnings],
            }
            for r in cluster.pools
        ]
        teams = [
            {
                "team": r.team,
                "pool": r.pool,
                "resource": r.resource,
                "profile": r.profile,
                "unit": r.unit,
                "cohort": r.cohort,
                "clusterQueues": list(r.cluster_queues),
                "nominal": r.nominal,
                "guaranteed": r.guaranteed,
                "lendable": r.lendable,
                "lendingLimit": r.lending_limit,
                "borrowingLimit": r.borrowing_limit,
                "maximum": r.maximum,
                "reachable": r.reachable,
                "borrowable": r.borrowable,
                "gpuShare": _share_json(r.gpu_share),
                "physicalGpus": {
                    "nominal": _gpus_json(r.physical_nominal),
                    "maximum": _gpus_json(r.physical_maximum),
                },
                "warnings": [{"code": w.code, "message": w.message} for w in r.warnings],
            }
            for r in cluster.teams
        ]
        queues = [
            {
                "team": q.team,
                "clusterQueue": q.name,
                "purpose": q.purpose,
                "cohort": q.cohort,
                "namespaces": list(q.namespaces),
                "localQueue": q.local_queue,
                "teamCohort": q.team_cohort,
                "pools": list(q.pools),
                "sharedPools": list(q.shared),
            }
            for q in cluster.queues
        ]
        endpoints = [
            {
                "team": e.team,
                "namespace": e.namespace,
                "endpoint": e.endpoint,
                "pool": e.pool,
                "resource": e.resource,
                "profile": e.profile,
                "unit": e.unit,
                "gpusPerReplica": e.gpus,
                "replicas": {"min": e.min_replicas, "max": e.max_replicas},
                "surge": SURGE,
                "atMax": e.at_max,
                "teamAtMax": e.team_total,
                "nominal": e.nominal,
                "fits": e.fits,
            }
            for e in cluster.endpoints
        ]
        clusters.append(
            {
                "name": cluster.name,
                "endpoints": endpoints,
                "environment": cluster.environment,
                "scheduler": cluster.scheduler,
                "pools": pools,
                "teams": teams,
                "clusterQueues": queues,
            }
        )
    body = {
        "focus": {
            "teams": list(report.teams),
            "pools": list(report.pools),
            "imageRegistries": {team: list(prefixes) for team, prefixes in report.registries},
        },
        "clusters": clusters,
        "legend": dict(report.legend),
    }
    result: dict[str, Any] = sorted_keys(body)
    return result
