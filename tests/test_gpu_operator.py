"""The GPU Operator chart values: derived from the cluster and pool files, naming ConfigMaps that
are rendered, and implying a ClusterPolicy that the v26.7.0 CRD accepts (for the example
platform and for variants of it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

from renderer.layers.gpu import operator as gpu_operator
from renderer.layers.gpu import sharing as gpu_sharing
from renderer.model import nvidia
from renderer.model.platform import Addon, Cluster, Platform, Pool
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import Values
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, load_platform, render_platform
from tests.conftest import REPO

SHARED = {"mig", "time-slicing", "mps"}
"""Pool sharing modes with an entry in the device plugin ConfigMap (`renderer.layers.gpu.sharing`)."""


@pytest.fixture(scope="module")
def example(validator: OutputValidator) -> Rendered:
    rendered = render_platform(REPO, validator)
    errors = [d for d in rendered.diagnostics if d.severity.value == "error"]
    assert not errors, "\n".join(map(str, errors))
    return rendered


@pytest.fixture(scope="module")
def platform() -> Platform:
    return load_platform(REPO).platform


def values_of(rendered: Rendered, cluster: str) -> Values:
    (values,) = [v for v in rendered.values[cluster] if v.chart == gpu_operator.CHART]
    return values


def inputs(folder: str) -> Iterator[dict[str, Any]]:
    for path in sorted((REPO / folder).glob("*.yaml")):
        yield yaml.safe_load(path.read_text())


def cluster_file(name: str) -> dict[str, Any]:
    (doc,) = [d for d in inputs("clusters") if d["metadata"]["name"] == name]
    return doc


def pool_files(cluster: str) -> list[dict[str, Any]]:
    return [d for d in inputs("pools") if d["spec"]["cluster"] == cluster]


def policy(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def with_addon(view: ClusterView, name: str, **settings: Any) -> ClusterView:
    """The view with one add-on's settings replaced (`version=` sets its version, `remove=True`
    removes the add-on)."""
    addons = dict(view.cluster.addons)
    if settings.get("remove"):
        addons.pop(name)
    else:
        old = addons[name]
        version = settings.pop("version", old.version)
        addons[name] = Addon(name, version, MappingProxyType(settings), old.origin)
    cluster: Cluster = dataclasses.replace(view.cluster, addons=MappingProxyType(addons))
    return dataclasses.replace(view, cluster=cluster)


def with_pools(view: ClusterView, **changes: dict[str, Any]) -> ClusterView:
    """The view with some pools' fields replaced, by pool name."""
    pools: list[Pool] = [
        dataclasses.replace(p, **changes[p.name]) if p.name in changes else p for p in view.pools
    ]
    return dataclasses.replace(view, pools=tuple(pools))


# --- the example platform ---------------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_values_follow_the_input_files(example: Rendered, cluster: str) -> None:
    values = values_of(example, cluster)
    body = values.body
    addons = cluster_file(cluster)["spec"]["addons"]
    pools = pool_files(cluster)
    managed = addons["gpuOperator"].get("driverManaged", True)
    mig = any(p["spec"]["sharing"] == "mig" for p in pools)
    shared = any(
        p["spec"]["sharing"] in SHARED
        and p["spec"].get("exposure", "device-plugin") == "device-plugin"
        for p in pools
    )
    drivers = {
        p["spec"]["image"]["driver"] for p in pools if p["spec"].get("image", {}).get("driver")
    }

    assert values.path == "values/gpu-operator.yaml"
    assert values.source.file == f"clusters/{cluster}.yaml"
    assert body["operator"]["version"] == addons["gpuOperator"]["version"]
    assert body["validator"]["version"] == addons["gpuOperator"]["version"]
    assert body["driver"]["enabled"] is managed
    if managed and len(drivers) == 1:
        assert body["driver"]["version"] == drivers.pop()
    else:
        assert "version" not in body["driver"]
    assert body["toolkit"]["enabled"] is True
    assert body["mig"]["strategy"] == ("mixed" if mig else "single")
    assert body["migManager"]["enabled"] is mig
    if mig:
        assert body["migManager"]["config"] == {
            "name": nvidia.MIG_CONFIG,
            "default": "all-disabled",
        }
    else:
        assert "config" not in body["migManager"]
    assert body["devicePlugin"]["enabled"] is True
    if shared:
        assert body["devicePlugin"]["config"]["name"] == nvidia.DEVICE_PLUGIN_CONFIG
    else:
        assert "config" not in body["devicePlugin"]
    exporter = body["dcgmExporter"]
    assert exporter["enabled"] is True
    assert exporter["version"] == f"{addons['dcgmExporter']['version']}-ubuntu22.04"
    assert exporter["config"] == {"name": nvidia.DCGM_METRICS_CONFIG}
    assert exporter["serviceMonitor"] == {"enabled": False}  # dcgm.py renders its own
    assert body["gfd"]["enabled"] is True


def test_the_example_covers_both_cases(example: Rendered) -> None:
    """prod-east: managed driver, a MIG and a time-sliced pool; staging-west: none of those."""
    east, west = (values_of(example, c).body for c in ("prod-east", "staging-west"))
    assert east["driver"] == {"enabled": True, "version": "570.124.06"}
    assert east["mig"] == {"strategy": "mixed"} and west["mig"] == {"strategy": "single"}
    assert east["migManager"]["enabled"] and "config" in east["devicePlugin"]
    assert west["driver"] == {"enabled": False}
    assert not west["migManager"]["enabled"] and "config" not in west["devicePlugin"]


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_values_name_configmaps_that_are_rendered(example: Rendered, cluster: str) -> None:
    body = values_of(example, cluster).body
    config_maps = {
        m.name: m.body
        for m in example.manifests[cluster]
        if m.kind == "ConfigMap" and m.namespace == nvidia.NAMESPACE
    }
    named = [body["dcgmExporter"]["config"]["name"]]
    for component in ("devicePlugin", "migManager"):
        if "config" in body[component]:
            named.append(body[component]["config"]["name"])
    for name in named:
        assert name in config_maps, name
    assert "dcgm-metrics.csv" in config_maps[nvidia.DCGM_METRICS_CONFIG]["data"]
    if "config" in body["migManager"]:
        mig = yaml.safe_load(config_maps[nvidia.MIG_CONFIG]["data"]["config.yaml"])
        assert body["migManager"]["config"]["default"] in mig["mig-configs"]


def _tolerates(tolerations: list[dict[str, str]], key: str, value: str, effect: str) -> bool:
    return any(
        t.get("key") == key
        and (t.get("operator") == "Exists" or t.get("value") == value)
        and t.get("effect", effect) == effect
        for t in tolerations
    )


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_operands_and_feature_discovery_tolerate_every_pool_taint(
    example: Rendered, cluster: str
) -> None:
    body = values_of(example, cluster).body
    operands = body["daemonsets"]["tolerations"]
    discovery = body["node-feature-discovery"]["worker"]["tolerations"]
    taints = [t for p in pool_files(cluster) for t in p["spec"].get("taints", [])]
    assert taints
    for taint in [*taints, {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]:
        for tolerations in (operands, discovery):
            assert _tolerates(tolerations, taint["key"], taint.get("value", ""), taint["effect"])


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_implied_cluster_policy_validates(
    platform: Platform, validator: OutputValidator, cluster: str
) -> None:
    view = ClusterView.of(platform, platform.clusters[cluster])
    obj = gpu_operator.implied_cluster_policy(view)
    assert obj == policy(gpu_operator.cluster_policy_spec(view))
    assert validator.validate(obj, platform.clusters[cluster].kubernetes_version) == []
    spec = obj["spec"]
    assert spec["mig"] == gpu_operator.helm_values(view)["mig"]
    assert "version" not in spec["operator"]
    assert "node-feature-discovery" not in spec


def _variants(platform: Platform) -> Iterator[tuple[str, ClusterView]]:
    east = ClusterView.of(platform, platform.clusters["prod-east"])
    west = ClusterView.of(platform, platform.clusters["staging-west"])
    full = {"sharing": "full-gpu", "mig_layout": MappingProxyType({})}
    yield "no MIG", with_pools(east, **{"a100-mig": full})
    yield "no sharing at all", with_pools(east, **{"a100-mig": full, "l40s-infer": full})
    yield "MPS pool", with_pools(west, **{"l4-serve": {"sharing": "mps", "replicas": 2}})
    yield "MIG only", with_pools(east, **{"l40s-infer": full})
    yield "DRA pools", with_pools(east, **{"a100-mig": {"exposure": "dra"}})
    yield (
        "driver unmanaged",
        with_addon(east, "gpuOperator", version="v26.7.0", driverManaged=False),
    )
    yield "driver flag absent", with_addon(east, "gpuOperator", version="v26.7.0")
    yield "operator unpinned", with_addon(west, "gpuOperator", version=None, driverManaged=False)
    yield "no DCGM exporter", with_addon(east, "dcgmExporter", remove=True)
    yield "exporter unpinned", with_addon(west, "dcgmExporter", version=None, serviceMonitor=True)
    yield "no pools", dataclasses.replace(west, pools=())


def test_variants_imply_valid_cluster_policies(
    platform: Platform, validator: OutputValidator
) -> None:
    for name, view in _variants(platform):
        obj = gpu_operator.implied_cluster_policy(view)
        assert obj is not None, name
        problems = validator.validate(obj, view.cluster.kubernetes_version)
        assert problems == [], (name, problems)


def test_variants_set_what_they_change(platform: Platform) -> None:
    found = {name: gpu_operator.helm_values(view) for name, view in _variants(platform)}
    assert not found["no MIG"]["migManager"]["enabled"]
    assert "config" in found["no MIG"]["devicePlugin"]  # the time-sliced pool still needs it
    assert "config" not in found["no sharing at all"]["devicePlugin"]
    assert found["MPS pool"]["devicePlugin"]["config"]["name"] == nvidia.DEVICE_PLUGIN_CONFIG
    assert found["MPS pool"]["cdi"] == {"enabled": True}  # the plugin serves MPS only with CDI
    assert found["MPS pool"]["mig"] == {"strategy": "single"}
    assert found["MIG only"]["mig"] == {"strategy": "mixed"}
    assert found["no MIG"]["mig"] == {"strategy": "single"}
    assert "cdi" not in found["no MIG"]
    # a DRA MIG pool is still partitioned by the MIG manager; the DRA driver publishes its devices
    assert found["DRA pools"]["migManager"]["enabled"]
    assert found["DRA pools"]["mig"] == {"strategy": "mixed"}
    assert found["driver unmanaged"]["driver"] == {"enabled": False}
    assert found["driver flag absent"]["driver"] == {"enabled": True, "version": "570.124.06"}
    assert "operator" not in found["operator unpinned"]
    assert "version" not in found["operator unpinned"]["validator"]
    assert found["no DCGM exporter"]["dcgmExporter"] == {
        "enabled": False,
        "serviceMonitor": {"enabled": False},
    }
    assert "version" not in found["exporter unpinned"]["dcgmExporter"]
    assert found["no pools"]["daemonsets"]["tolerations"] == [dict(gpu_operator.GPU_TOLERATION)]


def test_the_check_catches_wrong_values(platform: Platform, validator: OutputValidator) -> None:
    """The CRD check is not vacuous: a wrong enum value and a misspelt key are both reported."""
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    spec = gpu_operator.cluster_policy_spec(view)
    wrong = {**spec, "mig": {"strategy": "mixd"}}
    assert validator.validate(policy(wrong), "1.33")
    misspelt = {**spec, "migManger": {"enabled": True}}
    assert validator.validate(policy(misspelt), "1.33")
    bad_config = {
        **spec,
        "devicePlugin": {"enabled": True, "config": {"name": "x", "create": True}},
    }
    assert validator.validate(policy(bad_config), "1.33")


def test_no_values_without_the_addon(platform: Platform) -> None:
    view = with_addon(
        ClusterView.of(platform, platform.clusters["prod-east"]), "gpuOperator", remove=True
    )
    assert list(gpu_operator.render(view)) == []
    assert gpu_operator.implied_cluster_policy(view) is None
    assert gpu_operator.application_source(view) is None


def test_driver_versions_are_grouped_by_version(platform: Platform) -> None:
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    changed = with_pools(view, **{"h100-train": {"image": MappingProxyType({"driver": "580.1"})}})
    assert gpu_operator.declared_driver_versions(changed.pools) == {
        "570.124.06": ("a100-mig", "l40s-infer"),
        "580.1": ("h100-train",),
    }
    # pools that disagree are the policy rule driver-version-mismatch's; no version is guessed
    assert "version" not in gpu_operator.helm_values(changed)["driver"]


@pytest.mark.parametrize(
    ("version", "tag"),
    [
        ("4.5.2-4.8.1", "4.5.2-4.8.1-ubuntu22.04"),
        ("4.5.2-4.8.1-ubuntu22.04", "4.5.2-4.8.1-ubuntu22.04"),
        ("4.5.2-4.8.1-distroless", "4.5.2-4.8.1-distroless"),
    ],
)
def test_dcgm_exporter_image_tag(version: str, tag: str) -> None:
    assert gpu_operator.dcgm_exporter_image_tag(version) == tag


def test_application_source_validates(platform: Platform, validator: OutputValidator) -> None:
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    source = gpu_operator.application_source(view)
    assert source is not None
    assert source["chart"] == "gpu-operator" and source["targetRevision"] == "v26.7.0"
    assert source["helm"]["valueFiles"] == ["$values/rendered/prod-east/values/gpu-operator.yaml"]
    application = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "gpu-operator", "namespace": "argocd"},
        "spec": {
            "project": "platform",
            "destination": {
                "server": view.cluster.argocd_destination,
                "namespace": nvidia.NAMESPACE,
            },
            "sources": [
                source,
                {
                    "repoURL": "https://git.example.com/platform.git",
                    "targetRevision": "HEAD",
                    "ref": "values",
                },
            ],
        },
    }
    assert validator.validate(application, "1.33") == []
    unpinned = with_addon(view, "gpuOperator", version=None)
    assert gpu_operator.application_source(unpinned)["targetRevision"] == "*"  # type: ignore[index]


def test_values_are_deterministic_and_plain(platform: Platform) -> None:
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        first = dump(gpu_operator.helm_values(view))
        assert first == dump(gpu_operator.helm_values(view))
        assert "&id" not in first and "*id" not in first  # no YAML anchors from shared objects


def test_config_names_come_from_gpu_sharing(platform: Platform) -> None:
    """One source for the ConfigMap names: the module that renders the ConfigMaps."""
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        values = gpu_operator.helm_values(view)
        sharing = gpu_sharing.helm_values(view)
        for component in ("devicePlugin", "migManager"):
            assert values[component].get("config") == sharing.get(component, {}).get("config")


def test_values_round_trip_through_canonical_yaml(example: Rendered) -> None:
    """What the writer puts at rendered/<cluster>/values/gpu-operator.yaml reads back the same
    (driver and tag versions stay strings)."""
    for cluster in ("prod-east", "staging-west"):
        values = values_of(example, cluster)
        assert values.layer == "gpu" and values.folder == "values"
        text = dump(values.body)
        assert yaml.safe_load(text) == values.body


def test_every_render_checks_the_implied_cluster_policy(
    monkeypatch: pytest.MonkeyPatch, crds: Path
) -> None:
    """The pipeline validates the ClusterPolicy the chart values imply on every render: a value
    the CRD refuses is a finding at the cluster's gpuOperator add-on, and nothing is written."""
    real = gpu_operator.cluster_policy_spec

    def broken(view: Any) -> dict[str, Any]:
        spec = real(view)
        spec["mig"] = {"strategy": "sometimes"}
        return spec

    monkeypatch.setattr(gpu_operator, "cluster_policy_spec", broken)
    rendered = render_platform(REPO, OutputValidator([crds]))
    found = [d for d in rendered.diagnostics if "ClusterPolicy implied" in d.message]
    assert {d.at.file for d in found} == {"clusters/prod-east.yaml", "clusters/staging-west.yaml"}
    assert all(d.rule == "output-schema" and "spec.mig.strategy" in d.message for d in found)
