"""DRA pools: the DeviceClasses and claim templates, the quota key and the Kueue mapping that
count their devices, all naming the same class; the reviewed golden tree; refusal before 1.34."""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.gpu import dra
from renderer.layers.queueing.kueue import device_class_mappings, manager_config
from renderer.model import capacity
from renderer.model.capacity import (
    DRA_QUOTA_SUFFIX,
    dra_device_class,
    dra_resource,
    is_dra_resource,
    maximum_holding,
    pool_offers,
    usable_quotas,
)
from renderer.model.queue_plans import cluster_queues
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, load_platform, render_platform
from tests.conftest import SHARED_CRDS, copy_inputs, render_case

CASE = Path(__file__).parent / "cases" / "render" / "dra"
MINIMAL = Path(__file__).parent / "cases" / "render" / "minimal"
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.fixture(scope="module")
def rendered() -> Rendered:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    return render_platform(CASE, OutputValidator([SHARED_CRDS]))


def _objects(rendered: Rendered, kind: str) -> list[Manifest]:
    """The objects of a kind but the workflows layer's (the suites' own claim templates, in their
    platform namespace, are tests/test_suites.py's)."""
    return [m for m in rendered.manifests["lab"] if m.kind == kind and m.layer != "workflows"]


def _view() -> ClusterView:
    platform = load_platform(CASE).platform
    return ClusterView.of(platform, platform.clusters["lab"])


# --- the reviewed tree ------------------------------------------------------------------------


def test_dra_case_renders_the_reviewed_tree(
    tmp_path: Path, crds: Path, update_golden: bool
) -> None:
    render_case(CASE, tmp_path, crds, update_golden=update_golden)


def test_dra_quota_arithmetic() -> None:
    """The reviewed numbers, derived here from the inputs rather than copied from the output."""

    def hard(namespace: str) -> dict[str, str]:
        path = CASE / "expected" / "lab" / "tenancy" / namespace / "resourcequota-gpuplane.yaml"
        body: dict[str, Any] = yaml.safe_load(path.read_text())
        return dict(body["spec"]["hard"])

    train = "train.dra.gpuplane.dev.deviceclass.resource.k8s.io/devices"
    mig = "infer-mig.dra.gpuplane.dev.deviceclass.resource.k8s.io/devices"
    # train: 2 nodes x 8 H100 as whole devices; ml holds nominal 12 + borrowing 4 = 16
    assert hard("ml-train")[train] == str(min(2 * 8, 12 + 4))
    # vision has no borrowing limit: Kueue lets it borrow up to the whole pool
    assert hard("vision-train")[train] == str(2 * 8)
    # infer-mig: 1..2 nodes x 2 A100 x (1 + 1 + 2) MIG devices = 8 guaranteed, 16 at most;
    # ml holds nominal 6 + borrowing 2 = 8
    assert hard("ml-serve")[mig] == str(min(2 * 2 * (1 + 1 + 2), 6 + 2))
    # a pool the namespace's purpose may not use is closed with an explicit 0
    assert hard("ml-serve")[train] == "0"
    assert hard("ml-train")[mig] == "0"
    assert hard("vision-train")[mig] == "0"

    def nominal(team: str, flavor: str, resource: str) -> int:
        """The team's nominal quota: its Cohort's (its ClusterQueues hold none of their own)."""
        path = CASE / "expected" / "lab" / "queueing" / f"cohort-{team}.yaml"
        body: dict[str, Any] = yaml.safe_load(path.read_text())
        (group,) = body["spec"]["resourceGroups"]
        (found,) = [f for f in group["flavors"] if f["name"] == flavor]
        (entry,) = [r for r in found["resources"] if r["name"] == resource]
        return int(entry["nominalQuota"])

    assert nominal("ml", "train", "train.dra.gpuplane.dev/gpu") == 12
    assert nominal("vision", "train", "train.dra.gpuplane.dev/gpu") == 4
    assert nominal("ml", "infer-mig", "infer-mig.dra.gpuplane.dev/mig") == 6


# --- validation and one name for one class ----------------------------------------------------


def test_dra_objects_validate_against_kubernetes_1_34(rendered: Rendered) -> None:
    assert rendered.diagnostics == []
    classes = _objects(rendered, "DeviceClass")
    templates = _objects(rendered, "ResourceClaimTemplate")
    assert [m.name for m in classes] == ["infer-mig.dra.gpuplane.dev", "train.dra.gpuplane.dev"]
    assert sorted((m.namespace, m.name) for m in templates) == [
        ("ml-serve", "infer-mig"),
        ("ml-train", "train"),
        ("ml-train", "train-node"),
        ("vision-train", "train"),
        ("vision-train", "train-node"),
    ]
    for manifest in (*classes, *templates):
        assert manifest.layer == "gpu"
        assert manifest.body["apiVersion"] == "resource.k8s.io/v1"
        assert manifest.body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpuplane"
        assert manifest.source.file.startswith("pools/")


def test_the_validator_does_check_dra_objects(rendered: Rendered) -> None:
    """The pipeline's clean bill above means something: a broken template is reported."""
    validator = OutputValidator([SHARED_CRDS])
    template = next(
        m for m in _objects(rendered, "ResourceClaimTemplate") if m.name == "train-node"
    )
    broken = copy.deepcopy(dict(template.body))
    exactly = broken["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    exactly["deviceClass"] = exactly.pop("deviceClassName")  # the v1beta1 spelling's mistake
    assert validator.validate(broken, "1.34")
    (device_class,) = [m for m in _objects(rendered, "DeviceClass") if m.name.startswith("train")]
    broken = copy.deepcopy(dict(device_class.body))
    broken["spec"]["selectors"] = [{"cel": {}}]
    assert validator.validate(broken, "1.34")


def test_quota_kueue_and_claims_name_the_same_class(rendered: Rendered) -> None:
    view = _view()
    mapped = {
        m["name"]: m["deviceClassNames"]
        for m in manager_config(view.queues, view.pools)["resources"]["deviceClassMappings"]
    }
    classes = {m.name: m for m in _objects(rendered, "DeviceClass")}
    covered = {
        r
        for plan in cluster_queues(view)
        for r in plan.covered_resources
        if is_dra_resource(r)  # the logical resources the ClusterQueues count
    }
    quotas = {
        key
        for m in _objects(rendered, "ResourceQuota")
        for key in m.body["spec"]["hard"]
        if key.endswith(DRA_QUOTA_SUFFIX)
    }
    for pool in dra.dra_pools(view):
        (offer,) = pool_offers(pool)
        device_class = dra_device_class(pool.name)
        assert offer.device_class == device_class in classes
        assert offer.resource == dra_resource(pool) in covered
        assert mapped[offer.resource] == [device_class]
        assert offer.quota_key == f"{device_class}.deviceclass.resource.k8s.io/devices" in quotas
    assert set(mapped) == covered
    assert sorted(c for (c,) in mapped.values()) == sorted(classes)
    for template in _objects(rendered, "ResourceClaimTemplate"):
        (request,) = template.body["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["deviceClassName"] in classes
        assert request["exactly"]["allocationMode"] == "ExactCount"


def test_claim_templates_follow_the_teams_usable_quotas(rendered: Rendered) -> None:
    """A template where the team has quota on the pool and the namespace's purpose may use it;
    nowhere else, so a claim cannot name a class its namespace has no quota for."""
    view = _view()
    expected = set()
    for tenant in view.tenants:
        for ns in tenant.namespaces:
            for pool, _, offer in usable_quotas(view.platform, tenant.team, ns):
                if offer.device_class is not None:
                    expected.add((ns.name, pool.name))
    found = {
        (m.namespace, m.body["metadata"]["labels"]["gpuplane.dev/pool"])
        for m in _objects(rendered, "ResourceClaimTemplate")
    }
    assert found == expected
    assert ("ml-train", "infer-mig") not in found  # a training namespace, an inference pool
    assert ("vision-train", "infer-mig") not in found  # no quota there


def test_whole_node_template_counts_one_node_of_gpus(rendered: Rendered) -> None:
    pools = {p.name: p for p in _view().pools}
    for template in _objects(rendered, "ResourceClaimTemplate"):
        (request,) = template.body["spec"]["spec"]["devices"]["requests"]
        pool = pools[template.body["metadata"]["labels"]["gpuplane.dev/pool"]]
        if template.name.endswith(dra.NODE_SUFFIX):
            assert pool.sharing != "mig"
            assert request["exactly"]["count"] == pool.gpus_per_node
        else:
            assert template.name == pool.name
            assert request["exactly"]["count"] == 1
        claim_labels = template.body["spec"]["metadata"]["labels"]
        assert "app.kubernetes.io/managed-by" not in claim_labels  # the control plane makes them
        assert (
            claim_labels["gpuplane.dev/team"]
            == template.body["metadata"]["labels"]["gpuplane.dev/team"]
        )


# --- selectors and names ----------------------------------------------------------------------


def test_selectors_pick_the_pools_kind_of_device() -> None:
    pools = {p.name: p for p in _view().pools}
    whole = dra.selector(pools["train"])
    assert whole == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    )
    mig = dra.selector(pools["infer-mig"])
    assert mig.startswith("device.driver == 'gpu.nvidia.com' && ")
    assert "device.attributes['gpu.nvidia.com'].type == 'mig'" in mig
    assert mig.endswith("profile in ['1g.10gb', '2g.20gb', '3g.40gb']")
    single = dataclasses.replace(pools["infer-mig"], mig_layout={"1g.10gb": 7})
    assert dra.selector(single).endswith("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")


def test_names_are_valid_kubernetes_names() -> None:
    longest = "p" * 63
    device_class = dra_device_class(longest)
    assert DNS_SUBDOMAIN.match(device_class) and len(device_class) <= 253
    assert all(len(part) <= 63 for part in device_class.split("."))
    for unit in ("gpu", "mig"):
        prefix, name = f"{device_class}/{unit}".split("/")
        assert DNS_SUBDOMAIN.match(prefix) and DNS_LABEL.match(name)
    prefix, name = f"{device_class}{DRA_QUOTA_SUFFIX}".split("/")
    assert DNS_SUBDOMAIN.match(prefix) and len(prefix) <= 253 and name == "devices"


def test_dra_offers() -> None:
    pools = {p.name: p for p in _view().pools}
    (train,) = pool_offers(pools["train"])
    assert (train.resource, train.device_class, train.unit) == (
        "train.dra.gpuplane.dev/gpu",
        "train.dra.gpuplane.dev",
        "GPU",
    )
    assert (train.per_node, train.guaranteed, train.maximum) == (8, 16, 16)
    (mig,) = pool_offers(pools["infer-mig"])
    assert (mig.per_node, mig.guaranteed, mig.maximum) == (2 * 4, 8, 16)
    assert mig.profile is None and mig.unit == "MIG device"
    (serve,) = pool_offers(pools["serve"])
    assert serve.device_class is None and serve.quota_key == "requests.nvidia.com/gpu.shared"
    assert is_dra_resource(train.resource) and not is_dra_resource(serve.resource)
    assert not is_dra_resource("cpu")
    ml = _view().platform.teams["ml"]
    (quota,) = [q for q in ml.gpus if q.pool == "infer-mig"]
    assert maximum_holding(mig, quota) == 8
    assert capacity.quota_offer(pools["infer-mig"], quota) == mig


def test_kueue_maps_nothing_without_dra_pools() -> None:
    platform = load_platform(MINIMAL).platform
    view = ClusterView.of(platform, platform.clusters["lab"])
    assert device_class_mappings(view.pools) == []
    assert "deviceClassMappings" not in manager_config(view.queues, view.pools)["resources"]
    # without DRA pools, only their RDMA resources (docs/rdma.md) make the pools matter
    bare = tuple(dataclasses.replace(p, rdma=None) for p in view.pools)
    assert manager_config(view.queues, bare) == manager_config(view.queues)


def test_kueue_mappings_are_one_class_each() -> None:
    view = _view()
    mappings = device_class_mappings(view.pools)
    assert mappings == [
        {
            "name": "infer-mig.dra.gpuplane.dev/mig",
            "deviceClassNames": ["infer-mig.dra.gpuplane.dev"],
        },
        {"name": "train.dra.gpuplane.dev/gpu", "deviceClassNames": ["train.dra.gpuplane.dev"]},
    ]
    # Kueue refuses a configuration that maps one class twice
    names = [c for m in mappings for c in m["deviceClassNames"]]
    assert len(names) == len(set(names))


# --- older clusters ---------------------------------------------------------------------------


def test_dra_before_kubernetes_1_34_is_refused(tmp_path: Path, gpuplane) -> None:
    root = copy_inputs(CASE, tmp_path / "repo")
    cluster = root / "clusters" / "lab.yaml"
    cluster.write_text(
        cluster.read_text().replace('kubernetesVersion: "1.34"', 'kubernetesVersion: "1.33"')
    )
    result = gpuplane("-C", str(root), "render")
    assert result.exit_code == 1
    assert result.output.count("error[dra-needs-kubernetes-1.34]") == 2  # train and infer-mig
    assert "pools/train.yaml" in result.output and "pools/infer-mig.yaml" in result.output
    assert not (root / "rendered").exists()
