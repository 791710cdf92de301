"""The MIG manager and device plugin ConfigMaps: upstream formats, node labels, and the resources
a node configured by them advertises, which must be what `renderer.model.capacity` counts."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.gpu import sharing as gpu_sharing
from renderer.model import catalog, nvidia
from renderer.model.capacity import pool_offers
from renderer.model.platform import Pool
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.pipeline import Rendered
from tests.conftest import INPUT_FOLDERS, REPO, render_clean

MINIMAL = Path(__file__).parent / "cases" / "render" / "minimal"
REFERENCE = REPO.parent / "shared" / "reference" / "gpu-operator"
PCI_ID = re.compile(r"^0x[0-9A-F]{8}$")
CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

MIG_ENTRY_KEYS = {"device-filter", "devices", "mig-enabled", "mig-devices"}
PLUGIN_KEYS = {"version", "flags", "resources", "sharing", "imex"}
SHARING_KEYS = {"renameByDefault", "failRequestsGreaterThanOne", "resources"}
RESOURCE_KEYS = {"name", "rename", "devices", "replicas"}

# Pools added to the minimal case (which has `train`, whole H100s, and `serve`, L40S
# time-sliced 2 ways with renameByDefault: true): a MIG layout with a +me profile, and H200 MIG
# with 1g.35gb, a profile upstream filters to the H200 SXM device id. MPS cannot share a cluster
# with MIG (policy rule mig-strategy-conflict), so it has a platform of its own.
MPS_POOLS = {
    "share": """\
  accelerator: l4
  gpusPerNode: 2
  nodes: 3
  host: {cpus: 30, memory: 100Gi}
  workload: batch-inference
  sharing: mps
  mps: {replicas: 3}
  cost: {gpuHour: 0.5}
  acceptance: {inferenceP95Ms: 500}
""",
}
VARIANT_POOLS = {
    "slices": """\
  accelerator: a100-80gb
  gpusPerNode: 8
  nodes: {min: 1, max: 2}
  host: {cpus: 100, memory: 1000Gi}
  workload: notebooks
  sharing: mig
  mig:
    layout: {1g.10gb+me: 1, 1g.10gb: 1, 2g.20gb: 1, 3g.40gb: 1}
  cost: {gpuHour: 1.5}
  acceptance: {maxQueueWaitMinutes: 10}
""",
    "h200-slices": """\
  accelerator: h200-141gb
  gpusPerNode: 8
  nodes: 1
  host: {cpus: 100, memory: 1000Gi}
  workload: notebooks
  sharing: mig
  mig:
    layout: {1g.35gb: 2, 3g.71gb: 1}
  cost: {gpuHour: 3.5}
  acceptance: {maxQueueWaitMinutes: 30}
""",
}


@pytest.fixture(scope="module")
def example() -> Rendered:
    return render_clean(REPO)


def _with_pools(root: Path, added: dict[str, str]) -> Rendered:
    """The minimal platform with `added` pools on its cluster and in its queue."""
    for folder in INPUT_FOLDERS:
        shutil.copytree(MINIMAL / folder, root / folder)
    for name, spec in added.items():
        (root / "pools" / f"{name}.yaml").write_text(
            "apiVersion: gpuplane.dev/v1alpha1\nkind: Pool\n"
            f"metadata:\n  name: {name}\nspec:\n  cluster: lab\n" + spec
        )
    queue = root / "queues" / "main.yaml"
    pools = ", ".join(["train", "serve", *added])
    queue.write_text(queue.read_text().replace("pools: [train, serve]", f"pools: [{pools}]"))
    return render_clean(root)


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The minimal platform with two MIG pools added to its cluster and queue."""
    return _with_pools(tmp_path_factory.mktemp("gpu-sharing") / "repo", VARIANT_POOLS)


@pytest.fixture(scope="module")
def mps(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The minimal platform with an MPS pool added (no MIG on that cluster)."""
    return _with_pools(tmp_path_factory.mktemp("gpu-sharing-mps") / "repo", MPS_POOLS)


# --- reading the output back ------------------------------------------------------------------


def config_maps(rendered: Rendered, cluster: str) -> dict[str, dict[str, Any]]:
    """The GPU layer's ConfigMaps in the operator's namespace, by name."""
    return {
        m.name: dict(m.body)
        for m in rendered.manifests[cluster]
        if m.layer == "gpu" and m.kind == "ConfigMap" and m.namespace == nvidia.NAMESPACE
    }


def mig_config(rendered: Rendered, cluster: str) -> dict[str, Any] | None:
    body = config_maps(rendered, cluster).get(nvidia.MIG_CONFIG)
    if body is None:
        return None
    assert list(body["data"]) == ["config.yaml"]
    text = body["data"]["config.yaml"]
    assert isinstance(text, str)  # mig-parted reads the file the key becomes
    parsed: dict[str, Any] = yaml.safe_load(text)
    return parsed


def plugin_configs(rendered: Rendered, cluster: str) -> dict[str, dict[str, Any]] | None:
    body = config_maps(rendered, cluster).get(nvidia.DEVICE_PLUGIN_CONFIG)
    if body is None:
        return None
    parsed = {}
    for key, text in body["data"].items():
        assert isinstance(text, str)  # each key is a file the config manager links to
        parsed[key] = yaml.safe_load(text)
    return parsed


def pools_of(rendered: Rendered, cluster: str) -> list[Pool]:
    return [p for _, p in sorted(rendered.platform.pools.items()) if p.cluster == cluster]


def all_clusters(rendered: Rendered) -> list[str]:
    return sorted(rendered.manifests)


# --- a node as the MIG manager and the device plugin would configure it -----------------------


def _mig_entry(
    pool: Pool, mig: dict[str, Any] | None, labels: dict[str, str]
) -> dict[str, Any] | None:
    """The mig-parted entry that applies to the pool's GPUs: the one the label names (the
    operator's default `all-disabled` without a label), whose device-filter matches every PCI
    id of the accelerator. None where the node has no MIG manager config at all."""
    accelerator = catalog.accelerator(pool.accelerator)
    assert accelerator is not None
    name = labels.get(nvidia.MIG_CONFIG_LABEL, gpu_sharing.MIG_DISABLED)
    if mig is None:
        assert nvidia.MIG_CONFIG_LABEL not in labels, pool.name
        return None
    entries = mig["mig-configs"][name]
    chosen = None
    for pci_id in accelerator.pci_device_ids or ("0xFFFF10DE",):
        matching = [e for e in entries if pci_id in e.get("device-filter", [pci_id])]
        assert len(matching) == 1, (pool.name, pci_id)
        assert chosen is None or matching[0] == chosen, pool.name
        chosen = matching[0]
    return chosen


def advertised(
    pool: Pool, mig: dict[str, Any] | None, plugin: dict[str, dict[str, Any]] | None
) -> dict[str, int]:
    """Resource name -> count a node of the pool advertises under the rendered configs: the
    device plugin's rules (mixed strategy: `nvidia.com/mig-<profile>`, `+` read as `.`;
    `sharing` replicates `nvidia.com/gpu`, as `nvidia.com/gpu.shared` with renameByDefault),
    and an empty config (whole GPUs) where the node has no label."""
    labels = gpu_sharing.nvidia_node_labels(pool)
    key = labels.get(nvidia.DEVICE_PLUGIN_CONFIG_LABEL)
    config: dict[str, Any] = {}
    if key is not None:
        assert plugin is not None and key in plugin, pool.name
        config = plugin[key]
    strategy = config.get("flags", {}).get("migStrategy", "none")
    gpus = pool.gpus_per_node

    entry = _mig_entry(pool, mig, labels)
    if entry is not None and entry["mig-enabled"]:
        assert strategy == "mixed", pool.name  # none hides MIG devices; single needs one profile
        return {
            f"nvidia.com/mig-{profile.replace('+', '.')}": count * gpus
            for profile, count in entry["mig-devices"].items()
        }
    for kind in ("mps", "timeSlicing"):
        sharing = config.get("sharing", {}).get(kind)
        if sharing is not None:
            (resource,) = sharing["resources"]
            name = resource.get("rename") or resource["name"]
            if sharing.get("renameByDefault") and "rename" not in resource:
                name += ".shared"
            return {name: resource["replicas"] * gpus}
    return {"nvidia.com/gpu": gpus}


@pytest.mark.parametrize("platform_fixture", ["example", "variant", "mps"])
def test_advertised_resources_are_what_capacity_counts(
    platform_fixture: str, request: pytest.FixtureRequest
) -> None:
    """Every pool's nodes, configured by the rendered ConfigMaps, advertise exactly the resource
    names and per-node counts that quotas, flavors and `plan` count in."""
    rendered: Rendered = request.getfixturevalue(platform_fixture)
    checked = 0
    for cluster in all_clusters(rendered):
        mig, plugin = mig_config(rendered, cluster), plugin_configs(rendered, cluster)
        for pool in pools_of(rendered, cluster):
            if pool.exposure == "dra":
                continue  # DRA pools publish ResourceSlices, not extended resources
            expected = {o.resource: o.per_node for o in pool_offers(pool)}
            assert advertised(pool, mig, plugin) == expected, pool.name
            checked += 1
    assert checked >= 3  # the MPS platform has train, serve and share


def test_kept_offers_follow_a_changed_pool(example: Rendered) -> None:
    """`pool_offers` keeps each pool's answer: a pool made again with other nodes or another
    sharing (`dataclasses.replace`, as the model does) gets offers of its own."""
    pool = next(p for p in example.platform.pools.values() if p.sharing == "full-gpu")
    (whole,) = pool_offers(pool)
    assert pool_offers(pool) is pool_offers(pool)
    bigger = dataclasses.replace(pool, gpus_per_node=pool.gpus_per_node * 2)
    assert pool_offers(bigger)[0].per_node == whole.per_node * 2
    shared = dataclasses.replace(pool, sharing="time-slicing", replicas=4)
    assert pool_offers(shared)[0].per_node == whole.per_node * 4
    assert pool_offers(pool) == (whole,)


# --- the example platform ---------------------------------------------------------------------


def test_example_mig_config(example: Rendered) -> None:
    mig = mig_config(example, "prod-east")
    assert mig is not None and mig["version"] == "v1"
    pool = example.platform.pools["a100-mig"]
    name = gpu_sharing.nvidia_node_labels(pool)[nvidia.MIG_CONFIG_LABEL]
    assert name == "gpuplane-a100-mig"
    assert mig["mig-configs"][name] == [
        {
            "device-filter": ["0x20B210DE", "0x20B510DE"],
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        }
    ]
    a100 = catalog.accelerator("a100-80gb")
    assert a100 is not None
    assert mig["mig-configs"][name][0]["device-filter"] == list(a100.pci_device_ids)
    # the MIG manager's default label value must name an entry of a custom config
    assert gpu_sharing.MIG_DISABLED in mig["mig-configs"]
    assert list(mig["mig-configs"]) == ["all-disabled", "all-enabled", "gpuplane-a100-mig"]


def test_example_mig_config_follows_the_upstream_default(example: Rendered) -> None:
    """mig-parted's own entries are kept as the GPU Operator ships them, and the device ids in
    the filters are ones upstream filters on for the same profiles."""
    path = REFERENCE / "default-mig-parted-config.yaml"
    if not path.is_file():
        pytest.skip("../shared/reference is not beside this checkout")
    upstream = yaml.safe_load(path.read_text())
    mig = mig_config(example, "prod-east")
    assert mig is not None
    assert mig["version"] == upstream["version"]
    for standard in ("all-disabled", "all-enabled"):
        assert mig["mig-configs"][standard] == upstream["mig-configs"][standard]
    upstream_ids = {
        pci_id
        for entries in upstream["mig-configs"].values()
        for entry in entries
        for pci_id in entry.get("device-filter", [])
    }
    entry = mig["mig-configs"]["gpuplane-a100-mig"][0]
    assert set(entry["device-filter"]) <= upstream_ids
    assert set(entry) == MIG_ENTRY_KEYS
    # the layout is one upstream's balanced A100-80GB config would also make, instance for
    # instance (all-balanced is 2 x 1g.10gb, 1 x 2g.20gb, 1 x 3g.40gb on the same ids)
    balanced = [
        e
        for e in upstream["mig-configs"]["all-balanced"]
        if set(entry["device-filter"]) <= set(e.get("device-filter", []))
    ]
    assert [e["mig-devices"] for e in balanced] == [entry["mig-devices"]]


def test_example_device_plugin_config(example: Rendered) -> None:
    plugin = plugin_configs(example, "prod-east")
    assert plugin is not None
    pools = example.platform.pools
    l40s = pools["l40s-infer"]
    key = gpu_sharing.nvidia_node_labels(l40s)[nvidia.DEVICE_PLUGIN_CONFIG_LABEL]
    assert key == "gpuplane-l40s-infer"
    assert plugin[key] == {
        "version": "v1",
        "flags": {"migStrategy": "mixed"},  # the cluster's strategy: a100-mig uses MIG
        "sharing": {
            "timeSlicing": {
                "renameByDefault": l40s.rename_by_default,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert l40s.replicas == 4 and l40s.rename_by_default is False
    assert plugin["gpuplane-a100-mig"] == {"version": "v1", "flags": {"migStrategy": "mixed"}}
    assert sorted(plugin) == ["gpuplane-a100-mig", "gpuplane-l40s-infer"]
    assert gpu_sharing.nvidia_node_labels(pools["h100-train"]) == {}


def test_example_staging_west_gets_neither(example: Rendered) -> None:
    names = set(config_maps(example, "staging-west"))
    assert not names & {nvidia.MIG_CONFIG, nvidia.DEVICE_PLUGIN_CONFIG}
    for pool in pools_of(example, "staging-west"):
        assert gpu_sharing.nvidia_node_labels(pool) == {}


def test_example_labels(example: Rendered) -> None:
    pools = example.platform.pools
    assert gpu_sharing.nvidia_node_labels(pools["a100-mig"]) == {
        "nvidia.com/mig.config": "gpuplane-a100-mig",
        "nvidia.com/device-plugin.config": "gpuplane-a100-mig",
    }
    assert gpu_sharing.nvidia_node_labels(pools["l40s-infer"]) == {
        "nvidia.com/device-plugin.config": "gpuplane-l40s-infer",
    }


def test_example_helm_values(example: Rendered) -> None:
    platform = example.platform
    prod = ClusterView.of(platform, platform.clusters["prod-east"])
    assert gpu_sharing.helm_values(prod) == {
        "mig": {"strategy": "mixed"},  # a100-mig uses MIG
        "migManager": {"config": {"name": nvidia.MIG_CONFIG, "default": "all-disabled"}},
        "devicePlugin": {"config": {"name": nvidia.DEVICE_PLUGIN_CONFIG, "default": ""}},
    }
    staging = ClusterView.of(platform, platform.clusters["staging-west"])
    assert gpu_sharing.helm_values(staging) == {"mig": {"strategy": "single"}}


def test_example_sources_and_paths(example: Rendered) -> None:
    manifests = [m for m in example.manifests["prod-east"] if m.layer == "gpu"]
    by_name = {m.name: m for m in manifests if m.kind == "ConfigMap"}
    mig = by_name[nvidia.MIG_CONFIG]
    assert mig.path == "gpu/gpu-operator/configmap-gpuplane-mig-config.yaml"
    assert mig.source.file == "pools/a100-mig.yaml"
    plugin = by_name[nvidia.DEVICE_PLUGIN_CONFIG]
    assert plugin.source.file == "pools/a100-mig.yaml"  # the first pool with an entry
    assert mig.body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpuplane"}


# --- the test platform ------------------------------------------------------------------------


def test_variant_mps_pool(mps: Rendered) -> None:
    plugin = plugin_configs(mps, "lab")
    assert plugin is not None
    assert plugin["gpuplane-share"] == {
        "version": "v1",
        "flags": {"migStrategy": "none"},  # no MIG on this cluster (MPS refuses mixed)
        "sharing": {
            "mps": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 3}],
            }
        },
    }


def test_variant_time_slicing_renamed(variant: Rendered) -> None:
    plugin = plugin_configs(variant, "lab")
    assert plugin is not None
    sharing = plugin["gpuplane-serve"]["sharing"]["timeSlicing"]
    assert sharing["renameByDefault"] is True
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 2}]
    (offer,) = pool_offers(variant.platform.pools["serve"])
    assert offer.resource == "nvidia.com/gpu.shared" and offer.per_node == 8


def test_variant_mig_pools(variant: Rendered) -> None:
    mig = mig_config(variant, "lab")
    assert mig is not None
    configs = mig["mig-configs"]
    assert list(configs) == [
        "all-disabled",
        "all-enabled",
        "gpuplane-h200-slices",
        "gpuplane-slices",
    ]
    (media,) = configs["gpuplane-slices"]
    assert media["mig-devices"] == {"1g.10gb": 1, "1g.10gb+me": 1, "2g.20gb": 1, "3g.40gb": 1}
    (h200,) = configs["gpuplane-h200-slices"]
    assert h200["device-filter"] == ["0x233510DE"]  # H200 SXM only: NVL has no 1g.35gb
    assert h200["mig-devices"] == {"1g.35gb": 2, "3g.71gb": 1}
    names = {o.resource for o in pool_offers(variant.platform.pools["slices"])}
    assert "nvidia.com/mig-1g.10gb.me" in names
    assert gpu_sharing.nvidia_node_labels(variant.platform.pools["train"]) == {}


@pytest.mark.parametrize("platform_fixture", ["example", "variant", "mps"])
def test_configs_are_in_the_upstream_formats(
    platform_fixture: str, request: pytest.FixtureRequest
) -> None:
    """What mig-parted and the device plugin's config parser accept (api/config/v1 at the
    plugin's current release): known fields only, replicas of at least 2, one resource list per
    sharing kind, MPS never with the mixed strategy; layouts the accelerator can hold."""
    rendered: Rendered = request.getfixturevalue(platform_fixture)
    accelerators_by_id = {
        pci_id: a for a in catalog.CATALOG.values() for pci_id in a.pci_device_ids
    }
    for cluster in all_clusters(rendered):
        mig = mig_config(rendered, cluster)
        if mig is not None:
            assert set(mig) == {"version", "mig-configs"} and mig["version"] == "v1"
            for name, entries in mig["mig-configs"].items():
                assert LABEL_VALUE.match(name) and len(name) <= 63, name
                for entry in entries:
                    assert set(entry) <= MIG_ENTRY_KEYS and entry["devices"] == "all"
                    assert isinstance(entry["mig-enabled"], bool)
                    ids = entry.get("device-filter", [])
                    assert all(isinstance(i, str) and PCI_ID.match(i) for i in ids), name
                    layout = entry.get("mig-devices", {})
                    for pci_id in ids:
                        assert accelerators_by_id[pci_id].mig_layout_problems(layout) == []
        plugin = plugin_configs(rendered, cluster)
        for key, config in (plugin or {}).items():
            assert CONFIG_MAP_KEY.match(key) and LABEL_VALUE.match(key) and len(key) <= 63
            assert set(config) <= PLUGIN_KEYS and config["version"] == "v1"
            strategy = config["flags"]["migStrategy"]
            assert strategy in ("none", "single", "mixed")
            sharing = config.get("sharing", {})
            assert set(sharing) <= {"timeSlicing", "mps"} and len(sharing) <= 1
            for kind, replicated in sharing.items():
                assert set(replicated) <= SHARING_KEYS
                assert replicated["resources"], key
                for resource in replicated["resources"]:
                    assert set(resource) <= RESOURCE_KEYS and resource["replicas"] >= 2
                if kind == "mps":
                    assert strategy != "mixed", key
                    assert replicated["failRequestsGreaterThanOne"] is True


def test_variant_output_is_deterministic(variant: Rendered) -> None:
    platform = variant.platform
    view = ClusterView.of(platform, platform.clusters["lab"])
    first = [dump(o.body) for o in gpu_sharing.render(view)]
    second = [dump(o.body) for o in gpu_sharing.render(view)]
    assert first == second and len(first) == 2


# --- labels for every kind of pool ------------------------------------------------------------


def _pool(example: Rendered, pool_name: str, **changes: Any) -> Pool:
    return dataclasses.replace(example.platform.pools[pool_name], **changes)


def test_labels_for_pools_without_an_entry(example: Rendered) -> None:
    off = {gpu_sharing.DEPLOY_DEVICE_PLUGIN_LABEL: "false"}
    # DRA: the MIG manager still partitions a MIG pool; the device plugin is switched off
    dra_mig = _pool(example, "a100-mig", exposure="dra")
    assert gpu_sharing.nvidia_node_labels(dra_mig) == {
        nvidia.MIG_CONFIG_LABEL: "gpuplane-a100-mig",
        **off,
    }
    assert gpu_sharing.nvidia_node_labels(_pool(example, "l40s-infer", exposure="dra")) == off
    amd = _pool(example, "l40s-infer", accelerator="mi300x")
    assert gpu_sharing.nvidia_node_labels(amd) == {}
    assert gpu_sharing.device_plugin_configs([amd]) is None
    assert gpu_sharing.mig_parted_config([amd, _pool(example, "h100-train")]) is None


def test_long_pool_names_stay_label_values(example: Rendered) -> None:
    first = _pool(example, "l40s-infer", name="a" * 62 + "x")
    second = _pool(example, "l40s-infer", name="a" * 62 + "y")
    names = {gpu_sharing.config_name(p) for p in (first, second)}
    assert len(names) == 2
    for name in names:
        assert len(name) <= 63 and LABEL_VALUE.match(name) and name.startswith("gpuplane-")
    assert gpu_sharing.config_name(first) == gpu_sharing.config_name(first)
