"""GPU quota before and after, with the `plan` figures (guaranteed, maximum, reachable) it implies.

A quota change moves other teams' figures through the cohort; building `plan` for both sides
and comparing its numbers is what shows that, so it is kept apart from the model comparisons.
"""

from __future__ import annotations

from collections.abc import Sequence

from renderer.commands.diff.field_changes import camel
from renderer.commands.diff.findings import (
    DERIVED,
    OWN,
    Finding,
    PoolFigures,
    PoolTotals,
    QuotaChange,
    QuotaFigures,
    Risk,
)
from renderer.commands.diff.revision import Revision
from renderer.commands.plan import ClusterPlan, build_plan

_QuotaKey = tuple[str, str, str, str | None]
"""(cluster, team, pool, profile)"""


def _plans(rev: Revision, same: frozenset[str]) -> tuple[ClusterPlan, ...]:
    """The plan of each cluster not in `same` (none when the side does not validate)."""
    if not rev.model_ok:
        return ()
    return build_plan(rev.platform, [n for n in rev.platform.clusters if n not in same]).clusters


def _quota_figures(rev: Revision, plans: Sequence[ClusterPlan]) -> dict[_QuotaKey, QuotaFigures]:
    platform = rev.platform
    found: dict[_QuotaKey, QuotaFigures] = {}
    if rev.model_ok:
        for cluster in plans:
            for t in cluster.teams:
                found[(cluster.name, t.team, t.pool, t.profile)] = QuotaFigures(
                    t.resource,
                    t.unit,
                    t.nominal,
                    t.borrowing_limit,
                    t.lending_limit,
                    t.guaranteed,
                    t.maximum,
                    t.reachable,
                    t.gpu_share,
                )
        return found
    for team in platform.teams.values():
        for q in team.gpus:
            pool = platform.pools.get(q.pool)
            if pool is None:
                continue
            found[(pool.cluster, team.name, q.pool, q.profile)] = QuotaFigures(
                "", "", q.nominal, q.borrowing_limit, q.lending_limit, None, None, None
            )
    return found


def _pool_figures(
    rev: Revision, plans: Sequence[ClusterPlan]
) -> dict[tuple[str, str, str], PoolFigures]:
    if not rev.model_ok:
        return {}
    return {
        (c.name, r.pool, r.resource): PoolFigures(
            r.capacity, r.capacity_max, r.nominal, r.guaranteed, r.lendable
        )
        for c in plans
        for r in c.pools
    }


def _loses(before: QuotaFigures | None, after: QuotaFigures | None) -> bool:
    """Whether the team is promised or can reach less than before on this entry."""
    if before is None:
        return False
    if after is None:
        return True
    for name in ("nominal", *DERIVED):
        old, new = getattr(before, name), getattr(after, name)
        if old is not None and new is not None and new < old:
            return True
    return after.borrowing_limit is not None and (
        before.borrowing_limit is None or after.borrowing_limit < before.borrowing_limit
    )


def _quota_summary(change: QuotaChange) -> str:
    before, after = change.before, change.after
    where = change.pool + (f" {change.profile}" if change.profile else "")
    if before is None and after is not None:
        return f"new quota on {where}: nominal {after.nominal}"
    if after is None and before is not None:
        return f"quota on {where} removed (was nominal {before.nominal})"
    assert before is not None and after is not None
    parts = []
    for name in OWN:  # None: no limit set
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            parts.append(f"{camel(name)} {_limit(old)} → {_limit(new)}")
    for name in DERIVED:  # None: not computed (that side does not validate)
        old, new = getattr(before, name), getattr(after, name)
        if old != new and old is not None and new is not None:
            parts.append(f"{name} {old} → {new}")
    return f"{where}: " + ", ".join(parts)


def _limit(value: int | None) -> str:
    return "unset" if value is None else str(value)


def quotas(
    base: Revision, head: Revision, same: frozenset[str] = frozenset()
) -> tuple[list[Finding], tuple[PoolTotals, ...]]:
    """The quota and pool figures that change. `same`: clusters whose slice is the same on both
    sides, so that their figures are too (a cluster's plan is a function of its slice, as its
    objects are): not worked out when both sides validate."""
    if not (base.model_ok and head.model_ok):
        same = frozenset()
    old_plans, new_plans = _plans(base, same), _plans(head, same)
    old, new = _quota_figures(base, old_plans), _quota_figures(head, new_plans)
    findings = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[0], k[1], k[2], k[3] or "")):
        cluster, team, pool, profile = key
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if before is not None and after is not None:
            own = any(getattr(before, n) != getattr(after, n) for n in OWN)
            derived = any(
                getattr(before, n) is not None and getattr(before, n) != getattr(after, n)
                for n in DERIVED
            )
            if not own and not derived:
                continue
            code = "gpu-quota" if own else "gpu-affected"
        else:
            code = "gpu-quota"
        change = QuotaChange(pool, profile, before, after)
        findings.append(
            Finding(
                Risk.MEDIUM if _loses(before, after) else Risk.LOW,
                code,
                cluster,
                team,
                f"{pool} {change.resource}".strip(),
                _quota_summary(change),
                quota=change,
            )
        )
    if not base.model_ok:
        return findings, ()
    old_pools, new_pools = _pool_figures(base, old_plans), _pool_figures(head, new_plans)
    totals = tuple(
        PoolTotals(*key, old_pools.get(key), new_pools.get(key))
        for key in sorted(set(old_pools) | set(new_pools))
        if old_pools.get(key) != new_pools.get(key)
    )
    return findings, totals
