"""DCGM telemetry of one cluster: the exporter's metrics ConfigMap and its ServiceMonitor.

The GPU Operator runs NVIDIA's DCGM exporter on every GPU node (`renderer.layers.gpu.operator` turns it
on and points it at the ConfigMap below). gpuplane chooses what it collects: utilisation, memory,
clocks, temperature, power, throttling, XID/ECC/row-remap errors, PCIe and NVLink, and the
profiling (DCP) ratios that say how busy a GPU really is. The Prometheus Operator ServiceMonitor
that scrapes it is rendered here, not by the chart, so that the series carry the labels alerts
and cost need (`pool`, and the workload's `namespace`/`pod`/`container`). See
docs/gpu-operator.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from renderer.model import nvidia
from renderer.model.names import DCGM_EXPORTER_ADDON
from renderer.model.nodes import PREFIX
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "gpu"

METRICS_KEY = "dcgm-metrics.csv"
"""The key the GPU Operator mounts from the metrics ConfigMap (its `MetricsConfigFileName`); the
operator also points the exporter's DCGM_EXPORTER_COLLECTORS at it."""

SERVICE_MONITOR = "gpuplane-dcgm-exporter"
EXPORTER_SELECTOR = {"app": "nvidia-dcgm-exporter"}
"""The label of the Service the GPU Operator creates for the exporter (`nvidia-dcgm-exporter`)."""
EXPORTER_PORT = "gpu-metrics"
"""That Service's port name (9400)."""
SCRAPE_INTERVAL = "15s"

POOL_LABEL = "pool"
"""The series label that carries the node's `gpuplane.dev/pool` label."""
NODE_LABEL = "node"
"""The series label that carries the name of the node the GPU is in."""
WORKLOAD_LABELS = ("namespace", "pod", "container")
"""What the exporter labels a GPU's series with when a pod holds the GPU. They collide with the
target labels of the exporter's own pod, so Prometheus stores them as `exported_<label>`; the
metric relabelings move them back."""

TYPES = frozenset({"gauge", "counter", "label"})
"""The metric types the exporter's CSV accepts (a `label` field becomes a label on every series)."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One line of the exporter's CSV: DCGM field, Prometheus type, help text."""

    field: str
    type: str
    help: str

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"{self.field}: type '{self.type}' is not one of {sorted(TYPES)}")
        if "," in self.help or "\n" in self.help:
            raise ValueError(f"{self.field}: the exporter reads three comma-separated fields")


METRIC_GROUPS: tuple[tuple[str, tuple[Metric, ...]], ...] = (
    (
        "Utilization (the sample period varies with the product)",
        (
            Metric("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
            Metric("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
        ),
    ),
    (
        "Memory usage",
        (
            Metric("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
            Metric("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
        ),
    ),
    (
        "Clocks",
        (
            Metric("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
            Metric("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
        ),
    ),
    (
        "Temperature",
        (
            Metric("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
            Metric("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
        ),
    ),
    (
        "Power and throttling",
        (
            Metric("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
            Metric(
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "counter",
                "Total energy consumption since boot (in mJ).",
            ),
            Metric(
                "DCGM_FI_DEV_POWER_VIOLATION",
                "counter",
                "Throttling duration due to power constraints.",
            ),
            Metric(
                "DCGM_FI_DEV_THERMAL_VIOLATION",
                "counter",
                "Throttling duration due to thermal constraints.",
            ),
        ),
    ),
    (
        "Errors",
        (
            Metric("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
            Metric(
                "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
                "counter",
                "Total number of single-bit volatile ECC errors.",
            ),
            Metric(
                "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                "counter",
                "Total number of double-bit volatile ECC errors.",
            ),
            Metric(
                "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                "counter",
                "Number of remapped rows for uncorrectable errors.",
            ),
            Metric(
                "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
                "counter",
                "Number of remapped rows for correctable errors.",
            ),
            Metric(
                "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."
            ),
        ),
    ),
    (
        "PCIe",
        (
            Metric("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
            Metric(
                "DCGM_FI_PROF_PCIE_TX_BYTES",
                "gauge",
                "The rate of data transmitted over the PCIe bus"
                " - including both protocol headers and data payloads - in bytes per second.",
            ),
            Metric(
                "DCGM_FI_PROF_PCIE_RX_BYTES",
                "gauge",
                "The rate of data received over the PCIe bus"
                " - including both protocol headers and data payloads - in bytes per second.",
            ),
        ),
    ),
    (
        "NVLink",
        (
            Metric(
                "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
                "counter",
                "Total number of NVLink bandwidth counters for all lanes.",
            ),
        ),
    ),
    (
        "Profiling (DCP): how busy the GPU really is",
        (
            Metric(
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                "gauge",
                "Ratio of time the graphics engine is active.",
            ),
            Metric(
                "DCGM_FI_PROF_SM_ACTIVE",
                "gauge",
                "The ratio of cycles an SM has at least 1 warp assigned.",
            ),
            Metric(
                "DCGM_FI_PROF_SM_OCCUPANCY",
                "gauge",
                "The ratio of number of warps resident on an SM.",
            ),
            Metric(
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                "gauge",
                "Ratio of cycles the tensor (HMMA) pipe is active.",
            ),
            Metric(
                "DCGM_FI_PROF_DRAM_ACTIVE",
                "gauge",
                "Ratio of cycles the device memory interface is active sending or receiving data.",
            ),
        ),
    ),
    (
        "Static configuration: a label on every series",
        (Metric("DCGM_FI_DRIVER_VERSION", "label", "Driver Version."),),
    ),
)

METRICS: tuple[Metric, ...] = tuple(m for _, group in METRIC_GROUPS for m in group)


def render(view: ClusterView) -> Iterator[Output]:
    """The metrics ConfigMap, and the ServiceMonitor when the cluster asks for one."""
    addon = view.cluster.addons.get(DCGM_EXPORTER_ADDON)
    if addon is None:
        return
    yield Manifest(
        LAYER,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(nvidia.DCGM_METRICS_CONFIG, nvidia.NAMESPACE),
            "data": {METRICS_KEY: metrics_csv()},
        },
        addon.origin.location,
    )
    if addon.settings.get("serviceMonitor", False):
        yield Manifest(LAYER, service_monitor(), addon.origin.at("serviceMonitor"))


def metrics_csv() -> str:
    """The exporter's collectors file: `# Format` comments, then `FIELD, type, help` lines."""
    width = max(len(m.field) for m in METRICS) + 1
    lines = [
        "# Format",
        "# If line starts with a '#' it is considered a comment",
        "# DCGM FIELD, Prometheus metric type, help message",
    ]
    for title, group in METRIC_GROUPS:
        lines += ["", f"# {title}"]
        lines += [f"{m.field + ',':<{width}} {m.type + ',':<8} {m.help}" for m in group]
    return "\n".join(lines) + "\n"


def prometheus_label(node_label: str) -> str:
    """The name Prometheus gives a node label in service discovery: every character that is not
    a letter, digit or underscore becomes `_` (`gpuplane.dev/pool` -> `gpuplane_dev_pool`)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", node_label)


def service_monitor() -> dict[str, Any]:
    """Scrape the exporter's Service every 15s, with the pool of each GPU's node and the workload
    holding the GPU on every series."""
    pool_meta = f"__meta_kubernetes_node_label_{prometheus_label(PREFIX + 'pool')}"
    relabelings = [
        {
            "action": "replace",
            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
            "targetLabel": NODE_LABEL,
        },
        {
            "action": "replace",
            "sourceLabels": [pool_meta],
            "regex": "(.+)",
            "targetLabel": POOL_LABEL,
            "replacement": "$1",
        },
    ]
    # An empty exported_* value (a GPU no pod holds) clears the label, so the exporter pod's own
    # namespace, pod and container never describe a GPU.
    metric_relabelings: list[dict[str, Any]] = [
        {
            "action": "replace",
            "sourceLabels": [f"exported_{label}"],
            "regex": "(.*)",
            "targetLabel": label,
            "replacement": "$1",
        }
        for label in WORKLOAD_LABELS
    ]
    metric_relabelings.append(
        {"action": "labeldrop", "regex": f"exported_({'|'.join(WORKLOAD_LABELS)})"}
    )
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": metadata(SERVICE_MONITOR, nvidia.NAMESPACE),
        "spec": {
            "jobLabel": "app",
            "selector": {"matchLabels": dict(EXPORTER_SELECTOR)},
            "namespaceSelector": {"matchNames": [nvidia.NAMESPACE]},
            "attachMetadata": {"node": True},
            "endpoints": [
                {
                    "port": EXPORTER_PORT,
                    "path": "/metrics",
                    "interval": SCRAPE_INTERVAL,
                    "honorLabels": False,
                    "relabelings": relabelings,
                    "metricRelabelings": metric_relabelings,
                }
            ],
        },
    }
