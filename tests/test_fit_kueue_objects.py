"""fit's flavor assignment reads the Kueue objects gpuplane renders, as Kueue's scheduler reads
them (`flavorassigner.read_cluster`, `snapshot.read_objects`), not gpuplane's model: change a
rendered object and fit's answer follows it as Kueue would (Kueue v0.19.2
`pkg/scheduler/flavorassigner/flavorassigner.go`: flavors in the ClusterQueue's order,
`checkFlavorForPodSets` refusing a flavor whose taints the pod does not tolerate,
`fitsResourceQuota` reading the quota tree built from the ClusterQueues and Cohorts)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from renderer import pipeline
from renderer.admission.rendered import rendered_cluster
from renderer.admission.scheduler.flavorassigner import Assigner, kueue_cluster, read_cluster
from renderer.admission.workloads.podsets import PodSet, read_pod_set
from renderer.model.platform import Cluster, Platform
from renderer.model.queue_plans import ClusterQueuePlan, cluster_queues, cohort_of
from renderer.model.view import ClusterView

REPO = Path(__file__).resolve().parents[1]
QUEUE = "llm-training"
"""A ClusterQueue of the example with two flavors, h100-train then a100-mig."""


@pytest.fixture(scope="module")
def example() -> tuple[Platform, Cluster, list[ClusterQueuePlan], list[Mapping[str, Any]]]:
    platform = pipeline.load_platform(REPO).platform
    cluster = platform.clusters["prod-east"]
    plans = list(cluster_queues(ClusterView.of(platform, cluster)))
    objects = list(rendered_cluster(platform, cluster).objects)
    return platform, cluster, plans, objects


def pod_set(requests: Mapping[str, str]) -> PodSet:
    job = {
        "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}}
    }
    return read_pod_set(job, ("template",), "main", 1)


def flavor_of(
    example: tuple[Platform, Cluster, list[ClusterQueuePlan], list[Mapping[str, Any]]],
    objects: list[Mapping[str, Any]],
    requests: Mapping[str, str],
) -> tuple[str | None, tuple[str, ...]]:
    _, cluster, plans, _ = example
    plan = next(p for p in plans if p.name == QUEUE)
    ps = pod_set(requests)
    assigner = Assigner(
        plan,
        cohort_of(plans, plan),
        {ps.name: ps.requests()},
        native=read_cluster(objects),
        cluster=cluster,
    )
    fit = assigner.assign([ps], {ps.name: 1}).pod_sets[0]
    return fit.flavor, fit.reasons


def edited(objects: list[Mapping[str, Any]], kind: str, name: str) -> tuple[list[Any], Any]:
    copied = copy.deepcopy(objects)
    found = next(o for o in copied if o["kind"] == kind and o["metadata"]["name"] == name)
    return copied, found


def test_the_rendered_objects_decide(example: Any) -> None:
    objects = example[3]
    assert flavor_of(example, objects, {"cpu": "1"}) == ("h100-train", ())
    changed, queue = edited(objects, "ClusterQueue", QUEUE)
    queue["spec"]["resourceGroups"][0]["flavors"].reverse()
    assert flavor_of(example, changed, {"cpu": "1"}) == ("a100-mig", ())


def test_a_taint_of_the_rendered_flavor_is_checked(example: Any) -> None:
    changed, flavor = edited(example[3], "ResourceFlavor", "h100-train")
    flavor["spec"]["nodeTaints"] = [{"key": "spot", "value": "yes", "effect": "NoSchedule"}]
    assert flavor_of(example, changed, {"cpu": "1"}) == ("a100-mig", ())
    changed, other = edited(changed, "ResourceFlavor", "a100-mig")
    other["spec"]["nodeTaints"] = [{"key": "spot", "effect": "NoExecute"}]
    found, reasons = flavor_of(example, changed, {"cpu": "1"})
    assert found is None
    assert reasons == (
        "untolerated taint {spot  NoExecute <nil>} in flavor a100-mig",
        "untolerated taint {spot yes NoSchedule <nil>} in flavor h100-train",
    )


def test_the_quota_comes_from_the_rendered_cohorts(example: Any) -> None:
    """The team's Cohort holds the quota; with none of it, nothing fits (ExceedsMaxQuota)."""
    objects = example[3]
    found, _ = flavor_of(example, objects, {"cpu": "1"})
    assert found is not None
    changed = copy.deepcopy(objects)
    for obj in changed:
        if obj["kind"] == "Cohort":
            obj["spec"].pop("resourceGroups", None)
    found, reasons = flavor_of(example, changed, {"cpu": "1"})
    assert found is None
    assert any("> maximum capacity (0)" in r for r in reasons), reasons


def test_the_queueing_layer_alone_renders_the_same_kueue_objects(example: Any) -> None:
    platform, cluster, _, objects = example
    alone = kueue_cluster(platform, cluster)
    everything = read_cluster(objects)
    assert alone.snapshot.cluster_queues == everything.snapshot.cluster_queues
    assert alone.snapshot.cohorts == everything.snapshot.cohorts
    assert alone.snapshot.flavors == everything.snapshot.flavors
    assert alone.topologies == everything.topologies
    assert QUEUE in alone.snapshot.cluster_queues
