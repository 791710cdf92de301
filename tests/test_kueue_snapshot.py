"""`renderer.admission.scheduler.snapshot`: Kueue's objects as its scheduler reads them.

- Defaults: an object with its optional fields left out reads the same as that object after the
  API server applied the defaults of Kueue v0.19.2's own CRD (../shared/crds/kueue, structural
  defaulting: a `default` applies where the field is absent, inside objects that are present).
- The tree: Kueue's `TestAvailable` table (tests/kueue_tables/available.yaml, transcribed from
  pkg/cache/scheduler/resource_test.go) gives the same numbers when its ClusterQueues and
  Cohorts go through Kueue objects and `build_tree`, as they do through the port directly.
- The rendered cluster: the tree read from the objects gpuplane renders agrees with the one
  `plan` and `fit` build from the model, node by node.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer import pipeline
from renderer.admission.rendered import rendered_cluster
from renderer.admission.scheduler.preemption import fair_sharing_strategies
from renderer.admission.scheduler.preemptor import DEFAULT_STRATEGIES
from renderer.admission.scheduler.snapshot import (
    BorrowWithinCohort,
    FlavorFungibility,
    Preemption,
    build_tree,
    cluster_queue,
    cohort,
    read_objects,
)
from renderer.model import quantity
from renderer.model.queue_plans import cluster_queues, cohorts
from renderer.model.view import ClusterView
from tests.kueue_conformance.common import cluster_queue_object, cohort_object, snapshot

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "tests" / "kueue_tables" / "available.yaml"


def _default(value: dict[str, Any], schema: Mapping[str, Any]) -> None:
    """Structural defaulting (k8s.io/apiextensions-apiserver pkg/apiserver/schema/defaulting)."""
    for name, prop in (schema.get("properties") or {}).items():
        if name not in value and "default" in prop:
            value[name] = yaml.safe_load(yaml.safe_dump(prop["default"]))
        if isinstance(value.get(name), dict):
            _default(value[name], prop)


def _crd_defaulted(crds: Path, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    crd = yaml.safe_load((crds / "kueue" / f"kueue.x-k8s.io_{plural}.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    out = yaml.safe_load(yaml.safe_dump(obj))
    _default(out, version["schema"]["openAPIV3Schema"])
    return out


def test_cluster_queue_defaults_are_the_crds(crds: Path) -> None:
    bare = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {"fairSharing": {}, "preemption": {"borrowWithinCohort": {}}},
    }
    defaulted = _crd_defaulted(crds, "clusterqueues", bare)
    assert defaulted["spec"]["queueingStrategy"] == "BestEffortFIFO"  # the CRD did default
    assert cluster_queue(bare) == cluster_queue(defaulted)
    read = cluster_queue(bare)
    assert read.preemption == Preemption("Never", "Never", BorrowWithinCohort("Never"))
    assert read.flavor_fungibility == FlavorFungibility("MayStopSearch", "TryNextFlavor")
    assert read.fair_weight == 1


def test_cohort_defaults_are_the_crds(crds: Path) -> None:
    bare = {"kind": "Cohort", "metadata": {"name": "c"}, "spec": {"fairSharing": {}}}
    assert cohort(bare) == cohort(_crd_defaulted(crds, "cohorts", bare))
    assert cohort(bare).fair_weight == 1


def test_malformed_objects_are_problems_not_tracebacks() -> None:
    found = read_objects(
        [
            {"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": {"resourceGroups": 3}},
            {"kind": "ClusterQueue", "metadata": {"name": "p"}, "spec": {"preemption": {"withinClusterQueue": "Sometimes"}}},
            {"kind": "Cohort", "metadata": {}},
            {"kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {"nodeLabels": []}},
            {"kind": "Workload", "metadata": {"name": "w"}, "status": {"admission": {}, "conditions": [{"type": "QuotaReserved", "status": "True"}]}},
            "not an object",
            {"kind": "ClusterQueue", "apiVersion": "kueue.x-k8s.io/v1beta1", "metadata": {"name": "old"}},
        ]
    )  # fmt: skip
    assert not found.cluster_queues and not found.cohorts and not found.flavors
    assert not found.workloads
    assert len(found.problems) == 5
    assert "spec.resourceGroups: expected a list" in found.problems[0]
    assert "withinClusterQueue: expected one of" in found.problems[1]


def test_only_workloads_holding_quota_count() -> None:
    base = {
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "status": {"admission": {"clusterQueue": "q", "podSetAssignments": []}},
    }
    reserved = {"type": "QuotaReserved", "status": "True"}
    finished = {"type": "Finished", "status": "True"}
    cases = [([], False), ([reserved], True), ([reserved, finished], False)]
    for conditions, holds in cases:
        obj = {**base, "status": {**base["status"], "conditions": conditions}}
        assert bool(read_objects([obj]).workloads) is holds, conditions


def test_a_cycle_of_cohorts_is_left_out() -> None:
    found = snapshot(
        {
            "cohorts": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}],
            "clusterQueues": [
                {"name": "in-cycle", "cohort": "a", "resourceGroups": [{"f": {"cpu": "1"}}]},
                {"name": "free", "cohort": "c", "resourceGroups": [{"f": {"cpu": "1"}}]},
            ],
        }
    )
    tree = found.tree()
    assert tree.cluster_queue("in-cycle") is None and tree.cohort("a") is None
    free = tree.cluster_queue("free")
    assert free is not None and free.parent is tree.cohort("c")


def _table_cases() -> list[dict[str, Any]]:
    return list(yaml.safe_load(TABLE.read_text())["cases"])


def _shorthand(flavors: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """available.yaml's flavor -> resource -> {nominal, borrowingLimit, lendingLimit} as the
    conformance shorthand's one resource group."""
    return [
        {
            f: {
                r: [q.get("nominal", "0"), q.get("borrowingLimit", ""), q.get("lendingLimit", "")]
                for r, q in res.items()
            }
            for f, res in flavors.items()
        }
    ]


@pytest.mark.parametrize("case", _table_cases(), ids=lambda c: c["name"])
def test_available_table_through_kueue_objects(case: dict[str, Any]) -> None:
    queues = [
        cluster_queue(
            cluster_queue_object(
                {"name": q["name"], "cohort": q.get("cohort"), "resourceGroups": _shorthand(q.get("flavors") or {})}
            )
        )
        for q in case["clusterQueues"]
    ]  # fmt: skip
    groups = [
        cohort(
            cohort_object(
                {"name": c["name"], "parent": c.get("parent"), "resourceGroups": _shorthand(c.get("flavors") or {})}
            )
        )
        for c in case.get("cohorts") or []
    ]  # fmt: skip
    tree = build_tree(queues, groups)
    for cq, flavors in sorted((case.get("usage") or {}).items()):
        for flavor, per_resource in flavors.items():
            for resource, value in per_resource.items():
                node = tree.cluster_queue(cq)
                assert node is not None
                node.add_usage((flavor, resource), quantity.parse(str(value)))
    for key, fn in (("wantAvailable", "available"), ("wantPotentiallyAvailable", "potential")):
        for cq, flavors in (case.get(key) or {}).items():
            node = tree.cluster_queue(cq)
            assert node is not None
            for flavor, per_resource in flavors.items():
                for resource, value in per_resource.items():
                    fr = (flavor, resource)
                    got = (
                        max(Decimal(0), node.available(fr))
                        if fn == "available"
                        else node.potential_available(fr)
                    )
                    assert got == quantity.parse(str(value)), (cq, fr, key)


def test_rendered_tree_is_the_models_tree() -> None:
    platform = pipeline.load_platform(REPO).platform
    checked = 0
    for cluster in platform.clusters.values():
        if cluster.scheduler != "kueue":
            continue
        read = read_objects(rendered_cluster(platform, cluster).objects)
        tree = read.tree()
        plans = cluster_queues(ClusterView.of(platform, cluster))
        for cohort_plans in cohorts(plans).values():
            model = cohort_plans.build()
            for name, node in model.items():
                mine = tree.get(name) if node.kind == "ClusterQueue" else tree.cohort(name)
                assert mine is not None, name
                assert mine.kind == node.kind
                assert {k: v for k, v in mine.subtree.items() if v} == {
                    k: v for k, v in node.subtree.items() if v
                }, name
                for fr in node.subtree:
                    assert mine.potential_available(fr) == node.potential_available(fr)
                checked += 1
        for cq in read.cluster_queues.values():
            assert cq.resource_groups or not cq.quotas
    assert checked > 10


def test_fair_sharing_strategies_are_read_from_the_rendered_configuration() -> None:
    """The Kueue Configuration gpuplane renders into the chart's values names the strategies;
    one that names only S2-b gives only S2-b, and none gives Kueue's default pair
    (`parseStrategies`, pkg/scheduler/preemption/preemption.go)."""
    platform = pipeline.load_platform(REPO).platform
    rendered = rendered_cluster(platform, platform.clusters["prod-east"])
    text = rendered.values["kueue"]["managerConfig"]["controllerManagerConfigYaml"]
    config = yaml.safe_load(text)
    assert config["fairSharing"]["preemptionStrategies"] == list(DEFAULT_STRATEGIES)
    assert fair_sharing_strategies(rendered.values) == DEFAULT_STRATEGIES
    config["fairSharing"]["preemptionStrategies"] = ["LessThanInitialShare"]
    only = {"kueue": {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config)}}}
    assert fair_sharing_strategies(only) == ("LessThanInitialShare",)
    assert fair_sharing_strategies({}) == DEFAULT_STRATEGIES
