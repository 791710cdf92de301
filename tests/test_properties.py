"""Property: on generated platforms with randomly changed quotas, validation passes exactly when
the admission plans keep every pool's promises within its hardware.

Hypothesis draws platform sizes and quota changes; the invariants are checked on what the queue
layer renders from (renderer.model.queue_plans), independently of the policy code that decides validity.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.generate import KIND_DIRS, build_platform, to_yaml
from renderer.findings.diagnostics import has_errors
from renderer.model.capacity import pool_offers
from renderer.model.queue_plans import CPU, MEMORY, cluster_queues, team_cohorts
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform

pytestmark = pytest.mark.slow

QUOTA_RULES = {
    "quota-exceeds-pool",
    "guaranteed-exceeds-capacity",
    "borrowing-exceeds-pool",
    "lending-exceeds-nominal",
}


def _write(objects: list[dict[str, Any]], root: Path) -> None:
    for obj in objects:
        folder = root / KIND_DIRS[obj["kind"]]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{obj['metadata']['name']}.yaml").write_text(to_yaml(obj))


changes = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10_000),  # which quota entry
        st.sampled_from(["nominal", "lendingLimit", "borrowingLimit"]),
        st.integers(min_value=0, max_value=300),  # new value
    ),
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clusters=st.integers(min_value=1, max_value=2),
    pools=st.integers(min_value=1, max_value=4),
    teams=st.integers(min_value=1, max_value=12),
    seed=st.integers(min_value=0, max_value=1000),
    edits=changes,
)
def test_validation_passes_exactly_when_guarantees_fit(
    clusters: int, pools: int, teams: int, seed: int, edits: list[tuple[int, str, int]]
) -> None:
    objects = build_platform(clusters=clusters, pools_per_cluster=pools, teams=teams, seed=seed)
    entries = [q for o in objects if o["kind"] == "Team" for q in o["spec"]["gpus"]]
    for index, field, value in edits:
        if entries:
            entries[index % len(entries)][field] = value
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(objects, root)
        loaded = load_platform(root)
    quota_findings = {d.rule for d in loaded.diagnostics} & QUOTA_RULES
    platform = loaded.platform

    nominal: dict[tuple[str, str], int] = defaultdict(int)
    kept: dict[tuple[str, str], int] = defaultdict(int)
    over_limits = False
    for cluster in platform.clusters.values():
        for team in team_cohorts(cluster_queues(ClusterView.of(platform, cluster))):
            for flavor in team.flavors:  # a team's quota is its Cohort's
                for resource, amount in flavor.resources.items():
                    if resource in (CPU, MEMORY):
                        continue
                    key = (flavor.pool.name, resource)
                    nominal[key] += int(amount.nominal)
                    lent = amount.lending_limit
                    kept[key] += int(amount.nominal - (lent if lent is not None else 0))
                    if lent is not None and lent > amount.nominal:
                        over_limits = True
    fits = not over_limits
    for pool in platform.pools.values():
        queue = next(q for q in platform.queues.values() if pool.name in q.pools)
        for offer in pool_offers(pool):
            key = (pool.name, offer.resource)
            if (
                kept[key] > offer.guaranteed
                or nominal[key] > offer.guaranteed * queue.oversubscription
            ):
                fits = False
    borrow_ok = all(
        q["nominal"] + q["borrowingLimit"] <= _maximum(platform, q)
        for q in entries
        if "borrowingLimit" in q
    )
    event("promises fit" if fits and borrow_ok else "over-committed")
    if not has_errors(loaded.diagnostics):
        # validation passed: every promise fits the hardware
        assert fits and borrow_ok
    if fits and borrow_ok:
        assert not quota_findings, loaded.diagnostics[:3]
    else:
        assert quota_findings


def _maximum(platform: Any, entry: dict[str, Any]) -> int:
    pool = platform.pools[entry["pool"]]
    offers = pool_offers(pool)
    offer = (
        next(o for o in offers if o.profile == entry.get("profile"))
        if "profile" in entry
        else offers[0]
    )
    return offer.maximum
