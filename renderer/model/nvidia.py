"""Names shared by the GPU layer's modules and the objects that refer to each other.

The GPU Operator's chart values name the ConfigMaps the MIG manager and the device plugin read,
and node labels select entries in them; keeping the names here makes the references line up.
"""

from __future__ import annotations

NAMESPACE = "gpu-operator"
"""Where the GPU Operator, its operands and their ConfigMaps live."""

MIG_CONFIG = "gpuplane-mig-config"
"""The MIG manager ConfigMap (key `config.yaml`: mig-parted's `version: v1` / `mig-configs`)."""

DEVICE_PLUGIN_CONFIG = "gpuplane-device-plugin-config"
"""The device plugin ConfigMap: one key per pool, selected by the node label below."""

DCGM_METRICS_CONFIG = "gpuplane-dcgm-metrics"
"""The DCGM exporter's metrics ConfigMap (key `dcgm-metrics.csv`)."""

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
