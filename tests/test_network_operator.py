"""The NicClusterPolicy gpuplane renders for the NVIDIA Network Operator's RDMA shared device plugin.

Expectations come from the pool files and from upstream, at the tags gpuplane pins:
- Mellanox/network-operator v26.4.1: the CRD (../shared/crds/network-operator); the operator
  reconciles only `nic-cluster-policy` (pkg/consts/consts.go); the admission webhook's schema of
  the plugin's config (webhook-schemas/rdma_shared_device_plugin.json: `configList` of at least
  one entry, each with `resourceName` and an integer `rdmaHcaMax`, `selectors` among `vendors`,
  `deviceIDs`, `drivers`, `ifNames`, `linkTypes`) and its name and prefix rules
  (api/v1alpha1/validator/nicpolicy_webhook.go: `rdmaResourceNameRegex`, `fqdnRegex`); the
  plugin's image (hack/release.yaml `RdmaSharedDevicePlugin`).
- Mellanox/k8s-rdma-shared-dev-plugin README: the resource is `<resourcePrefix>/<resourceName>`,
  the prefix `rdma` when the config sets none; `linkTypes` are netlink's link types (`ether`,
  `infiniband`); `rdmaHcaMax` is how many of the resource a node advertises.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from renderer.cli import main
from renderer.layers.gpu import network
from renderer.model.operators import BY_ADDON, NETWORK_OPERATOR_ADDON
from renderer.model.view import ClusterView
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform
from tests.conftest import REPO, copy_inputs, edit_once

CASES = REPO / "tests" / "cases" / "render"
POLICY_FILE = "gpu/nicclusterpolicy-nic-cluster-policy.yaml"

RESOURCE_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
FQDN = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z]{2,})+$")
SELECTOR_KEYS = {"vendors", "deviceIDs", "drivers", "ifNames", "linkTypes"}
LINK_TYPE = {"infiniband": "infiniband", "roce": "ether"}
DEFAULT_PREFIX = "rdma"


def render(root: Path) -> Path:
    result = CliRunner(env={"GPUPLANE_CRDS": ""}).invoke(main, ["-C", str(root), "render"])
    assert result.exit_code == 0, result.output
    return root / "rendered"


def pools_of(root: Path, cluster: str) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted((root / "pools").glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        if body["spec"]["cluster"] == cluster:
            found[body["metadata"]["name"]] = body["spec"]
    return found


def advertised(policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`<prefix>/<name>` -> its config entry, as the plugin names its resources."""
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    return {
        f"{entry.get('resourcePrefix', DEFAULT_PREFIX)}/{entry['resourceName']}": entry
        for entry in config["configList"]
    }


def webhook_problems(policy: dict[str, Any]) -> list[str]:
    """What the operator's admission webhook would refuse in the plugin's config."""
    problems = []
    config = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    entries = config.get("configList")
    if not isinstance(entries, list) or not entries:
        return ["configList: at least one entry"]
    for entry in entries:
        if not isinstance(entry.get("rdmaHcaMax"), int) or entry["rdmaHcaMax"] < 0:
            problems.append(f"{entry}: rdmaHcaMax")
        if not RESOURCE_NAME.match(entry.get("resourceName", "")):
            problems.append(f"{entry}: resourceName")
        if "resourcePrefix" in entry and not FQDN.match(entry["resourcePrefix"]):
            problems.append(f"{entry}: resourcePrefix")
        selectors = entry.get("selectors", {})
        if not selectors or set(selectors) - SELECTOR_KEYS:
            problems.append(f"{entry}: selectors")
    return problems


def pool_affinity(policy: dict[str, Any]) -> set[str]:
    """The pools whose nodes (`gpuplane.dev/pool: <name>`) the policy's required affinity admits."""
    terms = policy["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (term,) = terms["nodeSelectorTerms"]
    (expression,) = term["matchExpressions"]
    assert (expression["key"], expression["operator"]) == ("gpuplane.dev/pool", "In")
    return set(expression["values"])


def devices_per_node(pool: dict[str, Any]) -> int:
    """The GPU devices one node of the pool hands out: GPUs, time-slice replicas, MIG devices."""
    gpus = pool["gpusPerNode"]
    if pool.get("sharing") == "time-slicing":
        return gpus * pool["timeSlicing"]["replicas"]
    if pool.get("sharing") == "mig":
        return gpus * sum(pool["mig"]["layout"].values())
    return gpus


def worst_demand(pool: dict[str, Any]) -> int:
    """The most of the resource one node's pods can request together: as many pods as devices,
    each asking for its share of `perNode` rounded up (docs/rdma.md)."""
    devices = devices_per_node(pool)
    return devices * math.ceil(pool["fabric"]["rdma"]["perNode"] / devices)


def check_against_pools(policy: dict[str, Any], pools: dict[str, dict[str, Any]]) -> None:
    served = {
        name: spec
        for name, spec in pools.items()
        if spec.get("fabric", {}).get("type") in LINK_TYPE
        and spec["fabric"].get("rdma", {}).get("resource", "").startswith("rdma/")
    }
    resources = advertised(policy)
    assert set(resources) == {spec["fabric"]["rdma"]["resource"] for spec in served.values()}
    for resource, entry in resources.items():
        users = [spec for spec in served.values() if spec["fabric"]["rdma"]["resource"] == resource]
        assert entry["selectors"]["vendors"] == ["15b3"]
        assert sorted(entry["selectors"]["linkTypes"]) == sorted(
            {LINK_TYPE[spec["fabric"]["type"]] for spec in users}
        )
        assert entry["rdmaHcaMax"] >= max(63, *(worst_demand(spec) for spec in users))
    assert pool_affinity(policy) == set(served)
    taints = {(t["key"], t["effect"]) for spec in served.values() for t in spec.get("taints", [])}
    tolerated = {(t["key"], t["effect"]) for t in policy["spec"].get("tolerations", [])}
    assert all(t["operator"] == "Exists" for t in policy["spec"].get("tolerations", []))
    assert taints <= tolerated
    assert webhook_problems(policy) == []


# --- the example platform ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_inputs(REPO, tmp_path_factory.mktemp("example") / "repo")
    render(root)
    return root


def test_prod_east_advertises_exactly_its_pools_rdma_resources(example: Path) -> None:
    policy = yaml.safe_load((example / "rendered" / "prod-east" / POLICY_FILE).read_text())
    assert policy["apiVersion"] == "mellanox.com/v1alpha1"
    assert policy["kind"] == "NicClusterPolicy"
    assert policy["metadata"]["name"] == "nic-cluster-policy"
    assert "namespace" not in policy["metadata"]  # cluster-scoped
    check_against_pools(policy, pools_of(example, "prod-east"))
    assert set(advertised(policy)) == {"rdma/rdma_shared_device_a"}  # h100-train, a100-mig
    plugin = policy["spec"]["rdmaSharedDevicePlugin"]
    assert (plugin["repository"], plugin["image"], plugin["version"]) == (
        "nvcr.io/nvidia/mellanox",
        "k8s-rdma-shared-dev-plugin",
        "network-operator-v26.4.1",
    )
    assert set(policy["spec"]) == {"nodeAffinity", "tolerations", "rdmaSharedDevicePlugin"}


def test_no_policy_where_the_pools_fabric_is_efa(example: Path) -> None:
    """staging-west (EKS) declares no Network Operator: its h200-tune pool's EFA devices come
    from the AWS EFA device plugin."""
    assert not (example / "rendered" / "staging-west" / POLICY_FILE).exists()
    assert not list((example / "rendered" / "staging-west").rglob("nicclusterpolicy-*"))


def test_the_plugin_image_is_the_one_of_the_release_gpuplane_suggests() -> None:
    assert BY_ADDON[NETWORK_OPERATOR_ADDON].release == network.RELEASE


@pytest.mark.skipif(
    not (REPO.parent / "shared" / "crds").is_dir(),
    reason="../shared/crds is not beside this checkout",
)
def test_the_policy_is_valid_against_the_crd_and_a_broken_one_is_not(
    example: Path, validator: OutputValidator
) -> None:
    policy = yaml.safe_load((example / "rendered" / "prod-east" / POLICY_FILE).read_text())
    checked = validator.check(policy, "1.33")
    assert checked.unchecked is None
    assert checked.problems == []
    broken = copy.deepcopy(policy)
    del broken["spec"]["rdmaSharedDevicePlugin"]["image"]  # required by the CRD
    assert validator.check(broken, "1.33").problems


def test_the_webhook_check_can_fail() -> None:
    policy = {
        "spec": {
            "rdmaSharedDevicePlugin": {
                "config": json.dumps(
                    {
                        "configList": [
                            {
                                "resourceName": "a",
                                "resourcePrefix": "rdma",
                                "rdmaHcaMax": 1,
                                "selectors": {"vendor": ["15b3"]},
                            }
                        ]
                    }
                )
            }
        }
    }
    assert len(webhook_problems(policy)) == 2  # a bare `rdma` prefix, an unknown selector


# --- pools of several fabrics and resources; no add-on -------------------------------------------

ROCE_POOL = """\
apiVersion: gpuplane.dev/v1alpha1
kind: Pool
metadata:
  name: roce
spec:
  cluster: lab
  accelerator: l40s
  gpusPerNode: 8
  nodes: 2
  host: {cpus: 62, memory: 370Gi}
  fabric:
    type: roce
    rdma: {resource: rdma/roce_shared, perNode: 1}
  workload: batch-inference
  sharing: time-slicing
  timeSlicing: {replicas: 10}
  taints: [{key: example.com/roce, effect: NoExecute}]
  cost: {gpuHour: 1.0}
  acceptance: {inferenceP95Ms: 200}
"""
"""A RoCE pool with its own resource, whose 80 time-slice replicas per node could ask for more
than the plugin's usual 63."""
BOTH_POOL = ROCE_POOL.replace("name: roce", "name: roce-ib").replace(
    "rdma/roce_shared", "rdma/rdma_shared_device_a"
)
"""A RoCE pool sharing the InfiniBand pool's resource name: one resource, both link types."""


def test_one_resource_per_name_with_the_link_types_of_its_pools(tmp_path: Path) -> None:
    root = copy_inputs(CASES / "minimal", tmp_path / "repo")
    (root / "pools" / "roce.yaml").write_text(ROCE_POOL)
    (root / "pools" / "roce-ib.yaml").write_text(BOTH_POOL)
    render(root)
    policy = yaml.safe_load((root / "rendered" / "lab" / POLICY_FILE).read_text())
    check_against_pools(policy, pools_of(root, "lab"))
    resources = advertised(policy)
    assert set(resources) == {"rdma/rdma_shared_device_a", "rdma/roce_shared"}
    assert resources["rdma/roce_shared"]["selectors"]["linkTypes"] == ["ether"]
    assert sorted(resources["rdma/rdma_shared_device_a"]["selectors"]["linkTypes"]) == [
        "ether",
        "infiniband",
    ]
    assert resources["rdma/roce_shared"]["rdmaHcaMax"] >= 80
    assert pool_affinity(policy) == {"train", "roce", "roce-ib"}  # not `serve`: no fabric


def test_nothing_without_the_addon_or_where_someone_else_installed_it() -> None:
    platform = load_platform(CASES / "minimal").platform
    cluster = platform.clusters["lab"]
    assert network.nic_cluster_policy(ClusterView.of(platform, cluster)) is not None
    addons = dict(cluster.addons)
    declared = addons.pop(NETWORK_OPERATOR_ADDON)
    without = dataclasses.replace(cluster, addons=addons)
    assert network.nic_cluster_policy(ClusterView.of(platform, without)) is None
    elsewhere = dataclasses.replace(declared, settings={**declared.settings, "enabled": False})
    not_ours = dataclasses.replace(cluster, addons={**addons, NETWORK_OPERATOR_ADDON: elsewhere})
    assert network.nic_cluster_policy(ClusterView.of(platform, not_ours)) is None


def test_nothing_when_no_pool_needs_the_plugin(tmp_path: Path) -> None:
    root = copy_inputs(CASES / "minimal", tmp_path / "repo")
    edit_once(
        root / "pools" / "train.yaml",
        "    rdma: {resource: rdma/rdma_shared_device_a, perNode: 1}   # Network Operator, shared\n",
        "",
    )
    platform = load_platform(root).platform
    cluster = platform.clusters["lab"]
    assert network.nic_cluster_policy(ClusterView.of(platform, cluster)) is None
