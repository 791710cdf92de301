"""DCGM telemetry: the exporter's metrics CSV (every metric alerts and dashboards need, with the
type dcgm-exporter gives it) and the ServiceMonitor (valid against the Prometheus Operator CRD,
and relabelling series the way docs/gpu-operator.md says)."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from renderer.layers.gpu import dcgm
from renderer.model import nvidia
from renderer.model.names import DCGM_EXPORTER_ADDON
from renderer.model.nodes import node_labels
from renderer.model.platform import Addon, Platform
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import MANAGED_BY, Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform
from tests.conftest import REPO

REQUIRED = {
    # utilisation and memory
    "DCGM_FI_DEV_GPU_UTIL": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge",
    "DCGM_FI_DEV_FB_FREE": "gauge",
    # errors
    "DCGM_FI_DEV_XID_ERRORS": "gauge",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "counter",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "counter",
    # thermal and power
    "DCGM_FI_DEV_GPU_TEMP": "gauge",
    "DCGM_FI_DEV_MEMORY_TEMP": "gauge",
    "DCGM_FI_DEV_POWER_USAGE": "gauge",
    # interconnect and clocks
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "counter",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter",
    "DCGM_FI_DEV_SM_CLOCK": "gauge",
    # profiling: how busy a GPU really is
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge",
    "DCGM_FI_PROF_DRAM_ACTIVE": "gauge",
    "DCGM_FI_PROF_SM_ACTIVE": "gauge",
    "DCGM_FI_PROF_SM_OCCUPANCY": "gauge",
}
"""Types as dcgm-exporter's etc/default-counters.csv and etc/dcp-metrics-included.csv give them."""

FIELD = re.compile(r"^DCGM_FI_[A-Z0-9_]+$")


@pytest.fixture(scope="module")
def platform() -> Platform:
    return load_platform(REPO).platform


def view_of(
    platform: Platform,
    cluster: str,
    settings: dict[str, Any] | None = None,
    remove: bool = False,
) -> ClusterView:
    """A cluster's view, with its dcgmExporter settings replaced, or the add-on removed."""
    view = ClusterView.of(platform, platform.clusters[cluster])
    if settings is None and not remove:
        return view
    addons = dict(view.cluster.addons)
    if remove:
        addons.pop(DCGM_EXPORTER_ADDON)
    else:
        assert settings is not None
        old = addons[DCGM_EXPORTER_ADDON]
        addons[DCGM_EXPORTER_ADDON] = Addon(
            old.name, old.version, MappingProxyType(settings), old.origin
        )
    changed = dataclasses.replace(view.cluster, addons=MappingProxyType(addons))
    return dataclasses.replace(view, cluster=changed)


def by_kind(view: ClusterView) -> dict[str, Manifest]:
    found: dict[str, Manifest] = {}
    for output in dcgm.render(view):
        assert isinstance(output, Manifest)
        assert output.kind not in found
        found[output.kind] = output
    return found


def parse(text: str) -> list[list[str]]:
    """The CSV as dcgm-exporter reads it: `#` lines are comments, fields are trimmed."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        (row,) = csv.reader(io.StringIO(line), skipinitialspace=True)
        rows.append([field.strip() for field in row])
    return rows


# --- the metrics ConfigMap --------------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_metrics_configmap(platform: Platform, validator: OutputValidator, cluster: str) -> None:
    view = view_of(platform, cluster)
    config_map = by_kind(view)["ConfigMap"]
    body = config_map.body
    assert body["metadata"]["name"] == nvidia.DCGM_METRICS_CONFIG
    assert body["metadata"]["namespace"] == nvidia.NAMESPACE
    assert list(body["data"]) == ["dcgm-metrics.csv"]  # the key the GPU Operator mounts
    assert config_map.source.file == f"clusters/{cluster}.yaml"
    assert config_map.layer == "gpu"
    assert validator.validate(body, view.cluster.kubernetes_version) == []


def test_csv_has_every_required_metric_with_its_type() -> None:
    text = dcgm.metrics_csv()
    assert text.startswith("# Format\n")
    rows = parse(text)
    assert all(len(row) == 3 for row in rows), [r for r in rows if len(r) != 3]
    fields = [row[0] for row in rows]
    assert len(fields) == len(set(fields))
    for field, kind, help_text in rows:
        assert FIELD.match(field), field
        assert kind in {"gauge", "counter", "label"}, field
        assert help_text, field
    types = {row[0]: row[1] for row in rows}
    for field, kind in REQUIRED.items():
        assert types.get(field) == kind, field


def test_metric_help_texts_cannot_break_the_csv() -> None:
    with pytest.raises(ValueError, match="three comma-separated"):
        dcgm.Metric("DCGM_FI_DEV_GPU_UTIL", "gauge", "utilisation, in percent")
    with pytest.raises(ValueError, match="not one of"):
        dcgm.Metric("DCGM_FI_DEV_GPU_UTIL", "histogram", "utilisation")


# --- the ServiceMonitor -----------------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_service_monitor_validates(
    platform: Platform, validator: OutputValidator, cluster: str
) -> None:
    view = view_of(platform, cluster)
    monitor = by_kind(view)["ServiceMonitor"]
    assert validator.validate(monitor.body, view.cluster.kubernetes_version) == []
    assert monitor.body["metadata"]["namespace"] == nvidia.NAMESPACE
    assert monitor.source.file == f"clusters/{cluster}.yaml"
    spec = monitor.body["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}
    assert spec["namespaceSelector"] == {"matchNames": [nvidia.NAMESPACE]}
    assert spec["attachMetadata"] == {"node": True}
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] == "gpu-metrics"
    assert endpoint["interval"] == "15s"


def test_no_service_monitor_when_not_asked(platform: Platform) -> None:
    assert set(by_kind(view_of(platform, "prod-east", {"serviceMonitor": False}))) == {"ConfigMap"}
    assert set(by_kind(view_of(platform, "prod-east", {}))) == {"ConfigMap"}


def test_nothing_without_the_addon(platform: Platform) -> None:
    assert by_kind(view_of(platform, "prod-east", remove=True)) == {}


def test_pool_label_is_one_the_nodes_carry(platform: Platform) -> None:
    pool = platform.pools["h100-train"]
    assert "gpuplane.dev/pool" in node_labels(pool)
    assert dcgm.prometheus_label("gpuplane.dev/pool") == "gpuplane_dev_pool"
    sources = [
        r["sourceLabels"] for r in dcgm.service_monitor()["spec"]["endpoints"][0]["relabelings"]
    ]
    assert ["__meta_kubernetes_node_label_gpuplane_dev_pool"] in sources


# A small model of Prometheus relabelling (replace and labeldrop, anchored regexes), to check
# what the rendered rules do to a scraped series.


def _relabel(labels: Mapping[str, str], rules: list[dict[str, Any]]) -> dict[str, str]:
    result = dict(labels)
    for rule in rules:
        regex = re.compile(f"^(?:{rule.get('regex', '(.*)')})$")
        if rule["action"] == "labeldrop":
            result = {k: v for k, v in result.items() if not regex.match(k)}
            continue
        assert rule["action"] == "replace"
        value = rule.get("separator", ";").join(result.get(s, "") for s in rule["sourceLabels"])
        match = regex.match(value)
        if match is None:
            continue
        replaced = match.expand(re.sub(r"\$(\d+)", r"\\\1", rule.get("replacement", "$1")))
        if replaced:
            result[rule["targetLabel"]] = replaced
        else:
            result.pop(rule["targetLabel"], None)
    return result


def _rules() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    (endpoint,) = dcgm.service_monitor()["spec"]["endpoints"]
    return endpoint["relabelings"], endpoint["metricRelabelings"]


def test_targets_get_node_and_pool() -> None:
    relabelings, _ = _rules()
    target = {
        "__meta_kubernetes_pod_node_name": "gpu-node-7",
        "__meta_kubernetes_node_label_gpuplane_dev_pool": "h100-train",
        "namespace": nvidia.NAMESPACE,
        "pod": "nvidia-dcgm-exporter-abcde",
    }
    labelled = _relabel(target, relabelings)
    assert labelled["node"] == "gpu-node-7"
    assert labelled["pool"] == "h100-train"
    unlabelled = _relabel({"__meta_kubernetes_pod_node_name": "cpu-node-1"}, relabelings)
    assert "pool" not in unlabelled


def test_series_carry_the_workload_not_the_exporter() -> None:
    """With honorLabels false, Prometheus stores the exporter's namespace/pod/container as
    exported_*; the metric relabelings move them back and drop the exporter pod's own."""
    _, metric_relabelings = _rules()
    exporter = {
        "namespace": nvidia.NAMESPACE,
        "pod": "nvidia-dcgm-exporter-abcde",
        "container": "nvidia-dcgm-exporter",
    }
    held = {
        "__name__": "DCGM_FI_PROF_SM_ACTIVE",
        "gpu": "3",
        "pool": "h100-train",
        **exporter,
        "exported_namespace": "vision-train",
        "exported_pod": "ddp-0",
        "exported_container": "pytorch",
    }
    assert _relabel(held, metric_relabelings) == {
        "__name__": "DCGM_FI_PROF_SM_ACTIVE",
        "gpu": "3",
        "pool": "h100-train",
        "namespace": "vision-train",
        "pod": "ddp-0",
        "container": "pytorch",
    }
    idle = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "pool": "h100-train", **exporter}
    assert _relabel(idle, metric_relabelings) == {
        "__name__": "DCGM_FI_DEV_GPU_UTIL",
        "gpu": "0",
        "pool": "h100-train",
    }


# --- all of it --------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_common_labels_and_determinism(platform: Platform, cluster: str) -> None:
    first = [(o.path, dump(o.body)) for o in dcgm.render(view_of(platform, cluster))]
    second = [(o.path, dump(o.body)) for o in dcgm.render(view_of(platform, cluster))]
    assert first == second
    for output in dcgm.render(view_of(platform, cluster)):
        assert isinstance(output, Manifest)
        labels = output.body["metadata"]["labels"]
        assert MANAGED_BY.items() <= labels.items()
        assert output.path.startswith(f"gpu/{nvidia.NAMESPACE}/")
