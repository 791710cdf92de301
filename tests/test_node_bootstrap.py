"""Node bootstrap: for every provider, each pool's labels and taints in the provisioner's own
form, from the same source as the Kueue ResourceFlavors, and never applied to the cluster."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.gpu import bootstrap as node_bootstrap
from renderer.layers.gpu.sharing import nvidia_node_labels
from renderer.layers.queueing import kueue
from renderer.model.nodes import node_labels
from renderer.model.platform import Platform, Pool, Taint
from renderer.model.view import ClusterView
from renderer.output.manifest import Values
from renderer.pipeline import load_platform
from tests.conftest import REPO, copy_inputs, tree

CASES = Path(__file__).parent / "cases" / "render"
PLATFORMS = (CASES / "dra", CASES / "minimal", REPO)
PROVIDERS = tuple(
    json.loads((REPO / "schemas" / "cluster.schema.json").read_text())["properties"]["spec"][
        "properties"
    ]["provider"]["enum"]
)
SECTIONS = {
    "eks": ("nodeadm", "karpenter"),
    "gke": ("gke",),
    "aks": ("aks",),
    "coreweave": ("coreweave",),
    "on-prem": ("kubeadm",),
    "other": ("kubeadm",),
}
EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


def _platform(root: Path) -> Platform:
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"]
    return loaded.platform


def _views(root: Path, provider: str) -> list[ClusterView]:
    """Every cluster of a platform, as if its provider were `provider`."""
    platform = _platform(root)
    clusters = {
        name: dataclasses.replace(cluster, provider=provider)
        for name, cluster in platform.clusters.items()
    }
    platform = dataclasses.replace(platform, clusters=clusters)
    return [ClusterView.of(platform, clusters[name]) for name in sorted(clusters)]


def _files(view: ClusterView) -> dict[str, Values]:
    outputs = list(node_bootstrap.render(view))
    assert all(isinstance(o, Values) for o in outputs)
    return {o.path: o for o in outputs if isinstance(o, Values)}


def parse_labels(flag: str) -> dict[str, str]:
    name, _, value = flag.partition("=")
    assert name == "--node-labels"
    pairs = [item.split("=", 1) for item in value.split(",")]
    return {k: v for k, v in pairs}


def parse_taints(flag: str) -> list[dict[str, str]]:
    """`--register-with-taints=k=v:Effect,k2:Effect` back into taints, as kubelet reads it."""
    name, _, value = flag.partition("=")
    assert name == "--register-with-taints"
    result = []
    for item in value.split(","):
        head, _, effect = item.rpartition(":")
        key, _, taint_value = head.partition("=")
        taint = {"key": key}
        if taint_value:
            taint["value"] = taint_value
        taint["effect"] = effect
        result.append(taint)
    return result


def _taints(pool: Pool) -> list[dict[str, str]]:
    return [
        {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
        for t in pool.taints
    ]


def test_every_provider_of_the_schema_has_a_section() -> None:
    assert set(node_bootstrap.PROVIDERS) == set(PROVIDERS) == set(SECTIONS)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("root", PLATFORMS, ids=lambda p: p.name)
def test_bootstrap_per_pool_and_provider(root: Path, provider: str) -> None:
    for view in _views(root, provider):
        files = _files(view)
        assert sorted(files) == sorted(f"nodes/{p.name}.yaml" for p in view.pools)
        for pool in view.pools:
            item = files[f"nodes/{pool.name}.yaml"]
            body: dict[str, Any] = dict(item.body)
            assert item.layer == "gpu" and item.folder == "nodes" and item.chart == pool.name
            assert item.source == pool.origin.location
            assert "Not applied to the cluster" in body["description"]
            assert (body["pool"], body["cluster"], body["provider"]) == (
                pool.name,
                view.cluster.name,
                provider,
            )
            expected = node_labels(pool) | nvidia_node_labels(pool)
            assert body["labels"] == expected
            assert list(body["labels"]) == sorted(expected)
            assert body["taints"] == _taints(pool)
            flags = body["kubelet"]["flags"]
            assert parse_labels(flags[0]) == expected
            assert flags[0] == "--node-labels=" + ",".join(
                f"{k}={v}" for k, v in sorted(expected.items())
            )
            if pool.taints:
                assert parse_taints(flags[1]) == _taints(pool)
                assert len(flags) == 2
            else:
                assert len(flags) == 1
            sections = [k for k in SECTIONS[provider] if k in body]
            assert sections == list(SECTIONS[provider])
            others = {k for keys in SECTIONS.values() for k in keys} - set(sections)
            assert not others & set(body)
            _check_provider(provider, pool, body, expected)


def _check_provider(
    provider: str, pool: Pool, body: dict[str, Any], expected: dict[str, str]
) -> None:
    taints = _taints(pool)
    if provider == "eks":
        nodeadm = body["nodeadm"]
        assert (nodeadm["apiVersion"], nodeadm["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
        assert nodeadm["spec"]["kubelet"]["flags"] == body["kubelet"]["flags"]
        karpenter = body["karpenter"]
        assert (karpenter["apiVersion"], karpenter["kind"]) == ("karpenter.sh/v1", "NodePool")
        assert karpenter["metadata"]["name"] == pool.name
        template = karpenter["spec"]["template"]
        assert template["metadata"]["labels"] == {
            k: v for k, v in expected.items() if node_bootstrap.karpenter_takes(k)
        }
        assert template["spec"]["taints"] == taints
        (requirement,) = template["spec"]["requirements"]
        assert requirement == {
            "key": "karpenter.k8s.aws/instance-gpu-count",
            "operator": "In",
            "values": [str(pool.gpus_per_node)],
        }
        assert template["spec"]["nodeClassRef"]["kind"] == "EC2NodeClass"
        ((resource, limit),) = karpenter["spec"]["limits"].items()
        assert resource in ("nvidia.com/gpu", "amd.com/gpu")
        assert limit == str(pool.gpus_per_node * pool.nodes.max)
        assert karpenter["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    elif provider == "gke":
        node_pool = body["gke"]["nodePool"]
        assert node_pool["config"]["labels"] == expected
        assert node_pool["config"]["taints"] == [
            {**t, "effect": node_bootstrap.GKE_EFFECTS[t["effect"]]} for t in taints
        ]
        assert node_pool["initialNodeCount"] == pool.nodes.min
        autoscaled = pool.nodes.max > pool.nodes.min
        assert ("autoscaling" in node_pool) == autoscaled
        gcloud = body["gke"]["gcloudFlags"]
        assert parse_labels(gcloud[0]) == expected
        if taints:
            assert parse_taints(gcloud[1].replace("--node-taints", "--register-with-taints")) == (
                taints
            )
    elif provider == "aks":
        properties = body["aks"]["agentPool"]["properties"]
        assert properties["nodeLabels"] == expected
        assert properties["nodeTaints"] == [node_bootstrap.taint_text(t) for t in pool.taints]
        assert properties["count"] == pool.nodes.min
        if pool.nodes.max > pool.nodes.min:
            assert (properties["minCount"], properties["maxCount"]) == (
                pool.nodes.min,
                pool.nodes.max,
            )
    elif provider == "coreweave":
        coreweave = body["coreweave"]
        assert (coreweave["apiVersion"], coreweave["kind"]) == (
            "compute.coreweave.com/v1alpha1",
            "NodePool",
        )
        spec = coreweave["spec"]
        assert spec["nodeLabels"] == expected and spec["nodeTaints"] == taints
        assert spec["targetNodes"] == pool.nodes.min
        assert spec["autoscaling"] == (pool.nodes.max > pool.nodes.min)
    else:
        kubeadm = body["kubeadm"]
        assert (kubeadm["apiVersion"], kubeadm["kind"]) == (
            "kubeadm.k8s.io/v1beta4",
            "JoinConfiguration",
        )
        registration = kubeadm["nodeRegistration"]
        ((arg),) = registration["kubeletExtraArgs"]
        assert parse_labels(f"--{arg['name']}={arg['value']}") == expected
        assert registration["taints"] == taints
    for taint in taints:
        assert taint["effect"] in EFFECTS


@pytest.mark.parametrize("root", PLATFORMS, ids=lambda p: p.name)
def test_flavor_labels_are_the_bootstrap_labels(root: Path) -> None:
    """One source: every label a ResourceFlavor selects, the nodes register with; every
    toleration it adds matches a taint they register with."""
    for view in _views(root, "eks"):
        files = _files(view)
        flavors = {
            o.body["metadata"]["name"]: o.body
            for o in kueue.render(view)
            if not isinstance(o, Values) and o.body["kind"] == "ResourceFlavor"
        }
        for pool in view.pools:
            body = files[f"nodes/{pool.name}.yaml"].body
            flavor = flavors[pool.name]["spec"]
            assert flavor["nodeLabels"].items() <= body["labels"].items()
            tolerated = {
                (t["key"], t.get("value", ""), t["effect"]) for t in flavor.get("tolerations", [])
            }
            registered = {(t["key"], t.get("value", ""), t["effect"]) for t in body["taints"]}
            assert tolerated == registered
            karpenter_labels = body["karpenter"]["spec"]["template"]["metadata"]["labels"]
            # what Karpenter may not carry in a template, it sets itself (karpenter.sh/nodepool)
            for key, value in flavor["nodeLabels"].items():
                if key in karpenter_labels:
                    assert karpenter_labels[key] == value
                else:
                    assert key == "karpenter.sh/nodepool" and value == pool.name


def test_rendered_under_nodes_and_listed_by_no_kustomization(
    tmp_path: Path, gpuplane, crds: Path
) -> None:
    root = copy_inputs(CASES / "dra", tmp_path / "repo")
    cluster = root / "clusters" / "lab.yaml"
    cluster.write_text(cluster.read_text().replace("provider: on-prem", "provider: eks"))
    result = gpuplane("-C", str(root), "render", "--crds", str(crds))
    assert result.exit_code == 0, result.output
    files = tree(root / "rendered")
    nodes = sorted(p for p in files if p.startswith("lab/nodes/"))
    assert nodes == [f"lab/nodes/{p}.yaml" for p in ("infer-mig", "serve", "train")]
    for path in nodes:
        text = files[path].decode()
        assert text.startswith(f"# Rendered by gpuplane from pools/{Path(path).stem}.yaml;")
        assert yaml.safe_load(text)["karpenter"]["kind"] == "NodePool"
    for path, content in files.items():
        if path.endswith("kustomization.yaml"):
            resources = yaml.safe_load(content)["resources"]
            assert "nodes" not in resources and not any("nodes/" in r for r in resources)
    assert "lab/nodes/kustomization.yaml" not in files


def test_taint_text_and_karpenter_label_domains() -> None:
    assert node_bootstrap.taint_text(Taint("a.io/k", "v", "NoSchedule")) == "a.io/k=v:NoSchedule"
    assert node_bootstrap.taint_text(Taint("a.io/k", "", "NoExecute")) == "a.io/k:NoExecute"
    takes = node_bootstrap.karpenter_takes
    assert takes("gpuplane.dev/pool") and takes("nvidia.com/mig.config") and takes("plain")
    assert takes("node.kubernetes.io/instance-type") and takes("topology.kubernetes.io/zone")
    assert takes("karpenter.sh/capacity-type")
    assert not takes("karpenter.sh/nodepool") and not takes("kubernetes.io/hostname")
    assert not takes("node-role.kubernetes.io/gpu") and not takes("example.k8s.io/x")
    assert not takes("karpenter.k8s.aws/instance-family")


def test_bootstrap_is_deterministic() -> None:
    (first,) = _views(CASES / "dra", "gke")
    (second,) = _views(CASES / "dra", "gke")
    assert [dict(v.body) for v in _files(first).values()] == [
        dict(v.body) for v in _files(second).values()
    ]
