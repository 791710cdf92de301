"""The values gpuplane writes for the operators' charts: only where it changes a default, and why.

Each function returns the values of one chart on one cluster, or None where the chart's
defaults are right there (no values file is written, the Application names none). Every key is
one the chart's templates read (a test checks them against the charts' values trees).
"""

from __future__ import annotations

from typing import Any

from renderer.layers.observability.pricing import CONFIG_MAP, PRICING_KEY
from renderer.model.names import GPU_OPERATOR_ADDON, PROMETHEUS_NAMESPACE
from renderer.model.operators import (
    DRA_DRIVER_ADDON,
    NETWORK_OPERATOR_ADDON,
    OPENCOST_ADDON,
    TRAINER_ADDON,
)
from renderer.model.view import ClusterView

GPU_OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
"""Where the GPU Operator's driver container mounts the driver on the host: the DRA driver's
`nvidiaDriverRoot` when the operator manages the driver (its default, `/`, is a host-installed
driver)."""


def trainer_values(view: ClusterView) -> dict[str, Any] | None:
    """Kubeflow Trainer's chart bundles JobSet (`jobset.install`, on by default); the jobset
    add-on installs it on its own, and two JobSet controllers would both reconcile every JobSet."""
    del view
    return {"jobset": {"install": False}}


def network_operator_values(view: ClusterView) -> dict[str, Any] | None:
    """The Network Operator's chart deploys Node Feature Discovery (`nfd.enabled`), which the GPU
    Operator's chart already runs: two NFD masters would fight over the same node labels."""
    if not view.cluster.runs(GPU_OPERATOR_ADDON):
        return None
    return {"nfd": {"enabled": False}}


def dra_driver_values(view: ClusterView) -> dict[str, Any] | None:
    """Where the GPU Operator installs the driver as a container, the DRA driver finds it under
    the operator's driver root, not on the host's `/`."""
    operator = view.cluster.addons.get(GPU_OPERATOR_ADDON)
    if operator is None or operator.settings.get("driverManaged", False) is not True:
        return None
    return {"nvidiaDriverRoot": GPU_OPERATOR_DRIVER_ROOT}


PROMETHEUS_SERVICE = "kube-prometheus-stack-prometheus"
"""The Prometheus Service of the kube-prometheus-stack release gpuplane installs (its fullname
`kube-prometheus-stack`, then `-prometheus`), port 9090."""
PRICING_MOUNT = "/var/configs/gpuplane"


def opencost_values(view: ClusterView) -> dict[str, Any] | None:
    """OpenCost reads the cluster's kube-prometheus-stack (its default is a `prometheus-server`
    in `prometheus-system`) and prices nodes from the pools' CSV pricing file, the ConfigMap the
    observability layer renders beside it (optional: it syncs in a later wave)."""
    del view
    return {
        "opencost": {
            "prometheus": {
                "internal": {
                    "serviceName": PROMETHEUS_SERVICE,
                    "namespaceName": PROMETHEUS_NAMESPACE,
                    "port": 9090,
                }
            },
            "exporter": {
                "csv_path": f"{PRICING_MOUNT}/{PRICING_KEY}",
                "extraVolumeMounts": [
                    {"name": "gpuplane-pricing", "mountPath": PRICING_MOUNT, "readOnly": True}
                ],
            },
        },
        "extraVolumes": [
            {"name": "gpuplane-pricing", "configMap": {"name": CONFIG_MAP, "optional": True}}
        ],
    }


VALUES = {
    TRAINER_ADDON: trainer_values,
    NETWORK_OPERATOR_ADDON: network_operator_values,
    DRA_DRIVER_ADDON: dra_driver_values,
    OPENCOST_ADDON: opencost_values,
}
"""The operators' values, by add-on."""
