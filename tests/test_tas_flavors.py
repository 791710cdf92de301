"""Which pools' ResourceFlavors are topology-aware, and that everything that asks for a topology
agrees with it.

Kueue v0.19.2 (`checkPodSetAndFlavorMatchForTAS`, `pkg/scheduler/flavorassigner/
tas_flavorassigner.go`) skips a flavor without `topologyName` for a pod set with a TAS annotation
("does not support TopologyAwareScheduling"), and in a ClusterQueue mixing both kinds skips a
TAS flavor for a pod set without one ("supports only TopologyAwareScheduling"). So a TAS
annotation on a job for a pool that is not topology-aware, or none on a job for one that is,
leaves the job unadmitted; these tests read every rendered pod template for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.commands.fit import check_fit
from renderer.layers import readme
from renderer.layers.queueing import kueue
from renderer.layers.workload_templates import workloads
from renderer.model.platform import Platform
from renderer.model.queue_plans import cluster_queues
from renderer.model.topology import HOSTNAME, PREFERRED, topology_aware, with_topology_peers
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Values
from renderer.pipeline import load_platform
from tests.conftest import REPO
from workflows.suites import jobs, placement, program

TAS_ANNOTATIONS = ("kueue.x-k8s.io/podset-", "kueue.x-k8s.io/podset-group-name")


@pytest.fixture(scope="module")
def platform() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def views(platform: Platform) -> Iterator[ClusterView]:
    for cluster in sorted(platform.clusters.values(), key=lambda c: c.name):
        if cluster.scheduler == "kueue":
            yield ClusterView.of(platform, cluster)


def test_which_example_pools_are_topology_aware(platform: Platform) -> None:
    """A level above the node makes a pool topology-aware; the node alone does not, unless a
    ClusterQueue may list the pool beside one that is: a100-mig serves prod's training
    namespaces beside h100-train; l40s-infer and l4-serve serve only inference."""
    aware = {name for name, pool in platform.pools.items() if topology_aware(pool)}
    assert aware == {"h100-train", "h200-tune", "a100-mig"}
    assert platform.pools["a100-mig"].topology_peer
    pool = dataclasses.replace(platform.pools["h100-train"], topology_peer=False)
    assert topology_aware(dataclasses.replace(pool, topology_levels=("example.com/rack",)))
    assert not topology_aware(dataclasses.replace(pool, topology_levels=(HOSTNAME,)))
    assert not topology_aware(dataclasses.replace(pool, topology_levels=()))


def test_only_topology_aware_flavors_name_a_topology(platform: Platform) -> None:
    seen = 0
    for view in views(platform):
        bodies = [o.body for o in kueue.render(view) if isinstance(o, Manifest)]
        topologies = {b["metadata"]["name"]: b for b in bodies if b["kind"] == "Topology"}
        flavors = {b["metadata"]["name"]: b for b in bodies if b["kind"] == "ResourceFlavor"}
        for pool in view.pools:
            spec = flavors[pool.name]["spec"]
            assert ("topologyName" in spec) is topology_aware(pool), pool.name
            if "topologyName" in spec:
                levels = topologies[spec["topologyName"]]["spec"]["levels"]
                assert [lvl["nodeLabel"] for lvl in levels] == list(pool.topology_levels)
                seen += 1
        named = {f["spec"].get("topologyName") for f in flavors.values()}
        assert set(topologies) <= named  # no Topology that no flavor uses
    assert seen == 3


def test_every_team_cluster_queue_is_all_topology_aware_or_not_at_all(platform: Platform) -> None:
    """Kueue refuses a topology-aware flavor of a mixed ClusterQueue to every pod set that asks
    for no topology (`Flavor "…" supports only TopologyAwareScheduling`), which is every upstream
    job: no team queue may mix them, with mixing on or off."""
    variants = [platform]
    mixing = {
        name: dataclasses.replace(q, mixing_priority="preemptible")
        for name, q in platform.queues.items()
    }
    pools = {
        name: dataclasses.replace(p, topology_peer=False) for name, p in platform.pools.items()
    }
    variants.append(
        dataclasses.replace(platform, queues=mixing, pools=with_topology_peers(pools, mixing))
    )
    checked = 0
    for variant in variants:
        for view in views(variant):
            for plan in cluster_queues(view):
                kinds = {topology_aware(f.pool) for f in plan.flavors}
                assert len(kinds) <= 1, f"{plan.name} mixes topology-aware and other flavors"
                checked += len(plan.flavors) > 1
    assert checked


def test_a_team_file_never_makes_a_flavor_topology_aware(platform: Platform) -> None:
    """`topologyName` cannot change once set (a CEL rule of the ResourceFlavor CRD), so which
    flavors are topology-aware follows from pools and queues alone, never from team quotas."""
    bare = {name: dataclasses.replace(p, topology_peer=False) for name, p in platform.pools.items()}
    assert with_topology_peers(bare, platform.queues) == dict(platform.pools)


def pod_templates(node: Any) -> Iterator[dict[str, Any]]:
    """Every pod template (a mapping whose `spec` has `containers`) below `node`."""
    if isinstance(node, dict):
        spec = node.get("spec")
        if isinstance(spec, dict) and "containers" in spec:
            yield node
        for value in node.values():
            yield from pod_templates(value)
    elif isinstance(node, list):
        for item in node:
            yield from pod_templates(item)


def asks_for_topology(template: dict[str, Any]) -> bool:
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return any(key.startswith(TAS_ANNOTATIONS) for key in annotations)


def template_pool(template: dict[str, Any]) -> str:
    return str(template["spec"]["nodeSelector"]["gpuplane.dev/pool"])


def test_workload_templates_ask_for_a_topology_exactly_on_topology_aware_pools(
    platform: Platform,
) -> None:
    counts = {True: 0, False: 0}
    for view in views(platform):
        for values in workloads.render(view):
            assert isinstance(values, Values)
            for template in pod_templates(dict(values.body)):
                pool = platform.pools[template_pool(template)]
                aware = topology_aware(pool)
                assert asks_for_topology(template) is aware, (values.chart, pool.name)
                if aware:
                    assert template["metadata"]["annotations"][PREFERRED] == pool.topology_levels[0]
                counts[aware] += 1
    assert counts[True] and counts[False]


def test_suite_jobs_ask_for_a_topology_exactly_on_topology_aware_pools(
    platform: Platform,
) -> None:
    counts = {True: 0, False: 0}
    for view in views(platform):
        for target in placement.targets(view):
            for step in program.acceptance_steps(target):
                template = jobs.job_manifest(target, step)["spec"]["template"]
                aware = topology_aware(target.pool)
                assert asks_for_topology(template) is aware, (target.pool.name, step.name)
                counts[aware] += 1
    assert counts[True] and counts[False]


def test_fit_admits_the_templates_of_a_topology_aware_pool(
    platform: Platform, tmp_path: Path
) -> None:
    """The templates rendered for h100-train in llm-train get past Kueue's TAS checks: no
    "TopologyAwareScheduling" reason and no topology placement failure."""
    (view,) = [v for v in views(platform) if v.cluster.name == "prod-east"]
    checked = 0
    for values in workloads.render(view):
        if values.folder != "templates/llm-train" or "h100-train" not in values.chart:
            continue
        path = tmp_path / f"{values.chart}.yaml"
        with path.open("w", encoding="utf-8") as out:
            YAML().dump(dict(values.body), out)
        result = check_fit(platform, path)
        message = result.message or ""
        assert "TopologyAwareScheduling" not in message, (values.chart, message)
        assert "topology " not in message, (values.chart, message)
        checked += 1
    assert checked >= 2


def test_the_cluster_readme_says_which_pools_are_topology_aware(platform: Platform) -> None:
    (view,) = [v for v in views(platform) if v.cluster.name == "prod-east"]
    text = readme.cluster_readme(view)
    assert "## Topology-aware pools" in text
    assert "| h100-train | yes |" in text
    assert (
        "| a100-mig | yes | levels kubernetes.io/hostname: a ClusterQueue may list it beside h100-train"
        in text
    )
    assert "| l40s-infer | no |" in text
