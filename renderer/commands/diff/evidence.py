"""A pool's acceptance evidence beside its capacity change, and growth exceptions rated high
(docs/capacity-gate.md).

`diff` does not run the gate: it shows what a reviewer needs to judge the growth (the head's
evidence file of the pool: verdict, age, nodes covered against the size before the change,
image, driver), and rates high a change that lets a pool grow without passing evidence.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

from renderer.commands.diff.findings import Finding, PoolEvidence, Risk
from renderer.inputs.changes import gate_today
from renderer.model.evidence import evidence_path
from renderer.model.platform import Platform, Pool


def pool_evidence(head: Platform, pool: Pool, base_size: int | None) -> PoolEvidence:
    """What the head holds as `pool`'s evidence, its age judged on the gate's day."""
    file = evidence_path(pool.cluster, pool.name)
    found = head.evidence.get((pool.cluster, pool.name))
    if found is None:
        return PoolEvidence(file, base_size, pool.size)
    day = gate_today()
    age = found.age_days(day) if isinstance(day, datetime.date) else None
    return PoolEvidence(
        file,
        base_size,
        pool.size,
        verdict=found.verdict,
        age_days=age,
        covered=found.covered,
        image=found.image_reference,
        digest=found.image_digest,
        driver=found.driver,
    )


def growth_exceptions(cluster: str, before: Pool | None, after: Pool) -> Iterator[Finding]:
    """A growthException the change adds, or extends to a later day: high."""
    new = after.growth_exception
    if new is None:
        return
    old = before.growth_exception if before is not None else None
    if old is not None and old.until >= new.until:
        return
    what = "extends" if old is not None else "adds"
    where = new.origin.at()
    yield Finding(
        Risk.HIGH,
        "growth-exception",
        cluster,
        None,
        after.name,
        f"the change {what} a growthException: {after.name} may grow without passing "
        f"evidence until {new.until}, on {new.by}'s word: {new.reason}",
        at=f"{where.file}:{where.line}",
    )
