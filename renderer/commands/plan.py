"""`gpuplane plan`: what each pool offers, what is promised on it, and what each team can hold.

Per cluster, one row per pool and resource name (a MIG pool has one per profile): capacity at
the pool's minimum and maximum size, the queue's oversubscription ceiling, and the sums of the
teams' nominal, guaranteed and lendable quota on it. Then one row per team quota entry: its
guaranteed, nominal and lendable part, the most the team can ever hold there, and the
ClusterQueue (`renderer.model.admission`) that holds it.

Every count comes from `renderer.model.capacity` (never recomputed here), and "guaranteed" is the very
figure the policy rule `guaranteed-exceeds-capacity` checks, so the plan and the policy cannot
disagree. `build_plan` returns immutable data; the three renderers turn it into rich tables,
GitHub-flavoured Markdown or JSON. Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from renderer.model.admission import cluster_queues, cohort_of, potential_available
from renderer.model.capacity import Offer, maximum_holding, pool_offers, quota_offer
from renderer.model.platform import GpuQuota, Platform, Pool, Queue, Team
from renderer.model.view import ClusterView
from renderer.output.canonical import sorted_keys
from renderer.output.text import markdown_cell

VERSION = 1
"""The `version` of the JSON document; bumped when a key is renamed or its meaning changes."""

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
    """One team quota entry: its parts, its ceiling and the ClusterQueue that holds it."""

    team: str
    pool: str
    resource: str
    profile: str | None
    unit: str
    cluster_queue: str | None
    borrowing_queues: tuple[str, ...]
    nominal: int
    guaranteed: int
    lendable: int
    lending_limit: int | None
    borrowing_limit: int | None
    maximum: int
    reachable: int
    warnings: tuple[PlanWarning, ...]


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    name: str
    environment: str
    scheduler: str
    pools: tuple[PoolRow, ...]
    teams: tuple[TeamRow, ...]


@dataclass(frozen=True, slots=True)
class PlanReport:
    clusters: tuple[ClusterPlan, ...]
    legend: tuple[tuple[str, str], ...] = LEGEND


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
    )


def _holders(view: ClusterView) -> dict[tuple[str, str], tuple[str | None, tuple[str, ...]]]:
    """(team, pool) -> the ClusterQueue holding the team's quota there, and those that borrow."""
    holders: dict[tuple[str, str], tuple[str | None, tuple[str, ...]]] = {}
    for plan in cluster_queues(view):
        for flavor in plan.flavors:
            key = (plan.team.name, flavor.pool.name)
            holder, borrowers = holders.get(key, (None, ()))
            if flavor.borrow_only:
                borrowers = (*borrowers, plan.name)
            else:
                holder = plan.name
            holders[key] = (holder, borrowers)
    return holders


def _reachable(view: ClusterView) -> dict[tuple[str, str, str], int]:
    """(team, pool, resource) -> Kueue's PotentialAvailable for the queue holding the quota."""
    plans = cluster_queues(view)
    found: dict[tuple[str, str, str], int] = {}
    for plan in plans:
        cohort = cohort_of(plans, plan)
        for flavor in plan.flavors:
            if flavor.borrow_only:
                continue
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
    holder, borrowers = holders.get((team.name, pool.name), (None, ()))
    warnings: list[PlanWarning] = []
    if holder is None:
        warnings.append(
            PlanWarning(
                "no-cluster-queue",
                "no ClusterQueue holds this quota: no namespace of the team can use the pool",
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
        cluster_queue=holder,
        borrowing_queues=tuple(sorted(borrowers)),
        nominal=quota.nominal,
        guaranteed=guaranteed(quota),
        lendable=lendable(quota),
        lending_limit=quota.lending_limit,
        borrowing_limit=quota.borrowing_limit,
        maximum=maximum_holding(offer, quota),
        reachable=reachable.get((team.name, pool.name, offer.resource), 0),
        warnings=tuple(warnings),
    )


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
    )


def build_plan(platform: Platform, clusters: Iterable[str] | None = None) -> PlanReport:
    """The plan of every cluster (or of those named), in name order."""
    names = sorted(platform.clusters) if clusters is None else sorted(set(clusters))
    unknown = [n for n in names if n not in platform.clusters]
    if unknown:
        raise ValueError(f"unknown cluster(s): {', '.join(unknown)}")
    return PlanReport(tuple(_cluster_plan(platform, n) for n in names))


# --- JSON -------------------------------------------------------------------------------------


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
                "clusterQueue": r.cluster_queue,
                "borrowingClusterQueues": list(r.borrowing_queues),
                "nominal": r.nominal,
                "guaranteed": r.guaranteed,
                "lendable": r.lendable,
                "lendingLimit": r.lending_limit,
                "borrowingLimit": r.borrowing_limit,
                "maximum": r.maximum,
                "reachable": r.reachable,
                "warnings": [{"code": w.code, "message": w.message} for w in r.warnings],
            }
            for r in cluster.teams
        ]
        clusters.append(
            {
                "name": cluster.name,
                "environment": cluster.environment,
                "scheduler": cluster.scheduler,
                "pools": pools,
                "teams": teams,
            }
        )
    body = {"version": VERSION, "clusters": clusters, "legend": dict(report.legend)}
    result: dict[str, Any] = sorted_keys(body)
    return result


# --- shared cell text -------------------------------------------------------------------------


def _nodes(row: PoolRow) -> str:
    if row.nodes_min == row.nodes_max:
        return str(row.nodes_min)
    return f"{row.nodes_min}-{row.nodes_max}"


def _capacity(row: PoolRow) -> str:
    if row.capacity == row.capacity_max:
        return str(row.capacity)
    return f"{row.capacity} / {row.capacity_max}"


def _queue(row: PoolRow) -> str:
    return "-" if row.queue is None else f"{row.queue} ({row.limit:g}x)"


def _used(row: PoolRow) -> str:
    return "-" if row.used is None else f"{row.used:.2f}"


def _limit(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def _short_unit(row: PoolRow) -> str:
    """The unit in a few letters, for the text table (the resource column names the profile)."""
    if row.profile is not None:
        return "MIG instance"
    return {"time-slicing replica": "time-slice", "mps replica": "MPS share"}.get(
        row.unit, row.unit
    )


def _pool_counts(row: PoolRow) -> list[str]:
    """The figures a pool row shows in every format, nominal to used."""
    return [
        str(row.nominal),
        str(row.guaranteed),
        str(row.lendable),
        str(row.free),
        str(row.headroom),
        _used(row),
    ]


def _team_counts(row: TeamRow) -> list[str]:
    """The figures a team row shows in every format, guaranteed to reachable."""
    return [
        str(row.guaranteed),
        str(row.nominal),
        str(row.lendable),
        _limit(row.borrowing_limit),
        str(row.maximum),
        str(row.reachable),
    ]


def _title(cluster: ClusterPlan) -> str:
    return f"{cluster.name} ({cluster.environment}, {cluster.scheduler})"


def _what(row: PoolRow | TeamRow) -> str:
    if isinstance(row, TeamRow):
        return f"{row.team} on {row.pool} {row.resource}"
    return f"{row.pool} {row.resource}"


POOL_LEGEND = (
    "capacity at min/max nodes; guaranteed = nominal - lendingLimit, lendable = lendingLimit "
    "(both all of nominal if unset), summed; free = capacity - nominal"
)
TEAM_LEGEND = (
    "guaranteed = nominal - lendingLimit (all of nominal if unset); maximum = nominal + "
    "borrowingLimit up to the pool's max (the max if borrowing is unlimited)"
)


# --- rich tables ------------------------------------------------------------------------------


def _table(title: str, columns: tuple[tuple[str, bool], ...]) -> Table:
    table = Table(
        title=Text(title, style="bold"), title_justify="left", box=box.SIMPLE_HEAD, show_edge=False
    )
    for header, numeric in columns:
        if numeric:
            table.add_column(header, justify="right", no_wrap=True)
        else:
            table.add_column(header, no_wrap=header != "notes", overflow="fold")
    return table


def _row(table: Table, *cells: str | Text) -> None:
    """Add a row whose plain strings are shown as written, never read as rich markup."""
    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells))


def _notes(warnings: tuple[PlanWarning, ...]) -> Text:
    return Text(", ".join(w.code for w in warnings), style="yellow")


def _explained(rows: tuple[PoolRow, ...] | tuple[TeamRow, ...]) -> list[RenderableType]:
    return [
        Text(f"  ! {_what(row)}: {w.code}: {w.message}", style="yellow")
        for row in rows
        for w in row.warnings
    ]


def plan_tables(report: PlanReport) -> list[RenderableType]:
    """For people: per cluster a pool table and a team table, each with a one-line legend;
    a warning's code sits in its row, its sentence right under the table."""
    out: list[RenderableType] = []
    for cluster in report.clusters:
        out.append(Text(f"cluster {_title(cluster)}", style="bold underline"))
        pools = _table(
            "pools: counts in each row's unit",
            (
                ("pool", False),
                ("resource", False),
                ("unit", False),
                ("nodes", True),
                ("capacity\nmin/max", True),
                ("queue\n(limit)", False),
                ("nominal", True),
                ("guaranteed", True),
                ("lendable", True),
                ("free", True),
                ("headroom\nto limit", True),
                ("used\nx cap.", True),
                ("notes", False),
            ),
        )
        for r in cluster.pools:
            _row(
                pools,
                r.pool,
                r.resource,
                _short_unit(r),
                _nodes(r),
                _capacity(r),
                _queue(r),
                *_pool_counts(r),
                _notes(r.warnings),
            )
        out += [pools, *_explained(cluster.pools), Text(POOL_LEGEND, style="dim"), Text("")]
        teams = _table(
            "teams: counts in the unit of the pool's row",
            (
                ("team", False),
                ("pool", False),
                ("resource", False),
                ("ClusterQueue", False),
                ("borrowed via", False),
                ("guaranteed", True),
                ("nominal", True),
                ("lendable", True),
                ("borrowing\nlimit", True),
                ("maximum\nwith borrowing", True),
                ("reachable\n(cohort lends)", True),
                ("notes", False),
            ),
        )
        for t in cluster.teams:
            _row(
                teams,
                t.team,
                t.pool,
                t.resource,
                t.cluster_queue or "-",
                ", ".join(t.borrowing_queues) or "-",
                *_team_counts(t),
                _notes(t.warnings),
            )
        out += [teams, *_explained(cluster.teams), Text(TEAM_LEGEND, style="dim"), Text("")]
    return out


# --- Markdown ---------------------------------------------------------------------------------


def _md_warnings(warnings: tuple[PlanWarning, ...]) -> str:
    return "<br>".join(
        f"⚠️ **{markdown_cell(w.code)}**: {markdown_cell(w.message)}" for w in warnings
    )


def _md_table(columns: tuple[tuple[str, bool], ...], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header for header, _ in columns) + " |"]
    lines.append("|" + "|".join("---:" if numeric else "---" for _, numeric in columns) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def plan_markdown(report: PlanReport) -> str:
    """The plan as GitHub-flavoured Markdown, for a pull-request comment."""
    lines = ["# GPU capacity plan", ""]
    for cluster in report.clusters:
        lines += [f"## {markdown_cell(_title(cluster))}", "", "### Pools", ""]
        lines += _md_table(
            (
                ("pool", False),
                ("resource", False),
                ("unit", False),
                ("nodes", True),
                ("capacity (min / max nodes)", True),
                ("queue (limit)", False),
                ("nominal", True),
                ("guaranteed", True),
                ("lendable", True),
                ("free", True),
                ("headroom to limit", True),
                ("used (x capacity)", True),
                ("warnings", False),
            ),
            [
                [
                    markdown_cell(r.pool),
                    f"`{markdown_cell(r.resource)}`",
                    markdown_cell(r.unit),
                    _nodes(r),
                    _capacity(r),
                    markdown_cell(_queue(r)),
                    *_pool_counts(r),
                    _md_warnings(r.warnings),
                ]
                for r in cluster.pools
            ],
        )
        lines += ["", "### Teams", ""]
        lines += _md_table(
            (
                ("team", False),
                ("pool", False),
                ("resource", False),
                ("ClusterQueue", False),
                ("borrowed via", False),
                ("guaranteed", True),
                ("nominal", True),
                ("lendable", True),
                ("borrowing limit", True),
                ("maximum with borrowing", True),
                ("reachable (cohort lends)", True),
                ("warnings", False),
            ),
            [
                [
                    markdown_cell(t.team),
                    markdown_cell(t.pool),
                    f"`{markdown_cell(t.resource)}`",
                    markdown_cell(t.cluster_queue or "-"),
                    markdown_cell(", ".join(t.borrowing_queues) or "-"),
                    *_team_counts(t),
                    _md_warnings(t.warnings),
                ]
                for t in cluster.teams
            ],
        )
        lines.append("")
    lines += [
        "Counts are in each pool row's unit: GPUs, MIG instances or time-slicing replicas.",
        "",
    ]
    lines += [f"- **{markdown_cell(term)}**: {markdown_cell(text)}" for term, text in report.legend]
    return "\n".join(lines) + "\n"
