"""The admission model: which ClusterQueue holds which quota, and CPU/memory by node share.

Expected numbers are derived here from the example platform's input files.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from renderer.model.platform import Platform
from renderer.model.quantity import parse
from renderer.model.queue_plans import CPU, MEMORY, ClusterQueuePlan, cluster_queues
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import REPO


@pytest.fixture(scope="module")
def example() -> Platform:
    return load_platform(REPO).platform


def _plans(platform: Platform, cluster: str) -> dict[str, ClusterQueuePlan]:
    return {p.name: p for p in cluster_queues(ClusterView.of(platform, platform.clusters[cluster]))}


def test_one_cluster_queue_per_team_and_purpose(example: Platform) -> None:
    plans = cluster_queues(ClusterView.of(example, example.clusters["prod-east"]))
    expected = sorted(
        f"{team.name}-{ns.purpose}"
        for team in example.teams.values()
        if example.queues[team.queue].cluster == "prod-east"
        for ns in team.namespaces
        if ns.cluster == "prod-east"
    )
    assert sorted(p.name for p in plans) == sorted(set(expected))
    for plan in plans:
        assert {ns.purpose for ns in plan.namespaces} == {plan.purpose}


def test_quota_lives_in_the_primary_purpose_and_others_borrow(example: Platform) -> None:
    plans = _plans(example, "prod-east")
    vision = example.teams["vision"]
    mig = [q for q in vision.gpus if q.pool == "a100-mig"]
    notebooks = plans["vision-notebooks"]
    training = plans["vision-training"]
    inference = plans["vision-inference"]
    held = {f.pool.name: f for f in notebooks.flavors}
    assert not held["a100-mig"].borrow_only
    assert {q.profile for q in held["a100-mig"].quotas} == {q.profile for q in mig}
    borrowed = {f.pool.name: f for f in training.flavors}
    assert borrowed["a100-mig"].borrow_only
    assert all(a.nominal == 0 for a in borrowed["a100-mig"].resources.values())
    assert not borrowed["h100-train"].borrow_only
    # separation: inference sees only inference pools
    assert [f.pool.name for f in inference.flavors] == ["l40s-infer"]


def test_cpu_and_memory_follow_the_gpu_share(example: Platform) -> None:
    plans = _plans(example, "prod-east")
    pool = example.pools["h100-train"]
    quota = next(q for q in example.teams["vision"].gpus if q.pool == "h100-train")
    flavor = next(f for f in plans["vision-training"].cohort.flavors if f.pool.name == "h100-train")
    share = Decimal(quota.nominal) / pool.gpus_per_node
    assert flavor.resources[CPU].nominal == int(pool.host_cpus * share)
    assert flavor.resources[MEMORY].nominal == int(parse(pool.host_memory) * share / 2**30) * 2**30
    assert flavor.resources["nvidia.com/gpu"].borrowing_limit == quota.borrowing_limit
    assert flavor.resources["nvidia.com/gpu"].lending_limit == quota.lending_limit
    lend_share = Decimal(quota.lending_limit) / pool.gpus_per_node
    assert flavor.resources[CPU].lending_limit == int(pool.host_cpus * lend_share)


def test_mig_shares_count_compute_slices(example: Platform) -> None:
    plans = _plans(example, "prod-east")
    pool = example.pools["a100-mig"]
    slices = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 3}
    per_gpu = sum(n * slices[p] for p, n in pool.mig_layout.items())
    quotas = [q for q in example.teams["vision"].gpus if q.pool == "a100-mig"]
    used = sum(q.nominal * slices[q.profile or ""] for q in quotas)
    flavor = next(f for f in plans["vision-notebooks"].cohort.flavors if f.pool.name == "a100-mig")
    expected = int(Decimal(pool.host_cpus) * used / (per_gpu * pool.gpus_per_node))
    assert flavor.resources[CPU].nominal == expected


def test_team_on_another_cluster_gets_no_queue_there(example: Platform) -> None:
    staging = _plans(example, "staging-west")
    prod_teams = {t.name for t in example.teams.values() if t.queue == "prod"}
    assert not [name for name in staging if name.rsplit("-", 1)[0] in prod_teams]
