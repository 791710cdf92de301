"""The values gpuplane writes for the operators' charts: only where it changes a default, and why.

Each function returns the values of one chart on one cluster, or None where the chart's
defaults are right there (no values file is written, the Application names none). Every key is
one the chart's templates read (a test checks them against the charts' values trees).
"""

from __future__ import annotations

from typing import Any

from renderer.layers.gpu import dra
from renderer.layers.gpu import operator as gpu_operator
from renderer.layers.observability.pricing import CONFIG_MAP, PRICING_KEY
from renderer.model.names import GPU_OPERATOR_ADDON, PROMETHEUS_NAMESPACE
from renderer.model.nodes import agent_tolerations, pools_affinity
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


def dra_driver_values(view: ClusterView) -> dict[str, Any]:
    """The NVIDIA DRA driver's chart (NVIDIA/k8s-dra-driver-gpu v25.12.0,
    `deployments/helm/nvidia-dra-driver-gpu`) refuses to render with its own defaults:
    `templates/validation.yaml` fails while `resources.gpus.enabled` (default true) is on and
    `gpuResourcesEnabledOverride` (default false) is off, because its GPU plugin must not share a
    node with the standard device plugin. gpuplane keeps the two apart by pool: a DRA pool's
    nodes switch the GPU Operator's device plugin off (`nvidia.com/gpu.deploy.device-plugin:
    "false"`, `renderer.layers.gpu.sharing`), and the kubelet plugin (`templates/kubeletplugin.yaml`,
    the GPU and ComputeDomain plugins in one pod) runs on those nodes only: its
    `kubeletPlugin.affinity` (default: every node with an NVIDIA PCI device) becomes the DRA
    pools' `gpuplane.dev/pool` label, and its `kubeletPlugin.tolerations` (default none) the
    pools' taints, without which it could not run on a tainted GPU node. So the override is
    set where the cluster has DRA pools; without one, `resources.gpus.enabled: false` leaves the
    chart its ComputeDomains (and the plugin every NVIDIA node, tolerating every pool's taints).
    Where the GPU Operator installs the driver as a container (`driverManaged`, true unless the
    cluster file says false, as the operator's own values read it), the plugins find it under
    the operator's driver root, not the host's `/` (`nvidiaDriverRoot`, values.yaml's
    comment)."""
    pools = dra.dra_pools(view)
    values: dict[str, Any] = {}
    operator = view.cluster.addons.get(GPU_OPERATOR_ADDON)
    if operator is not None and gpu_operator.driver_managed(operator):
        values["nvidiaDriverRoot"] = GPU_OPERATOR_DRIVER_ROOT
    plugin: dict[str, Any] = {}
    if pools:
        values["gpuResourcesEnabledOverride"] = True
        plugin["affinity"] = {"nodeAffinity": pools_affinity(pools)}
    else:
        values["resources"] = {"gpus": {"enabled": False}}
    tolerations = agent_tolerations(pools or view.pools)
    if tolerations:
        plugin["tolerations"] = tolerations
    if plugin:
        values["kubeletPlugin"] = plugin
    return values


PROMETHEUS_SERVICE = "kube-prometheus-stack-prometheus"
"""The Prometheus Service of the kube-prometheus-stack release gpuplane installs (chart 79.6.1,
prometheus-community/helm-charts `charts/kube-prometheus-stack`): `templates/prometheus/
service.yaml` names it `<fullname>-prometheus`, and `_helpers.tpl`'s fullname is the release
name itself when it contains the chart name (`kube-prometheus-stack`, 21 characters, under the
26 it truncates to)."""
PROMETHEUS_PORT = 9090
"""The Service's `port`: `prometheus.service.port`, 9090 in the chart's values.yaml."""
PRICING_MOUNT = "/var/configs/gpuplane"
PRICING_VOLUME = "gpuplane-pricing"
CSV_PROVIDER_ENV = {"USE_CSV_PROVIDER": "true"}
"""OpenCost prices nodes from a CSV file only with `USE_CSV_PROVIDER` true (opencost/opencost
`pkg/env/costmodelenv.go` `IsUseCSVProvider`, read by `pkg/cloud/provider/provider.go`
`getClusterProperties`), and reads the file `CSV_PATH` names (`GetCSVPath`). The chart has no
value for either: they go in through `opencost.exporter.extraEnv`, which
`templates/deployment.yaml` writes as `name`/`value` pairs. (The chart's
`opencost.exporter.csv_path` is something else: `EXPORT_CSV_FILE`, where OpenCost *writes* its
cost allocation export, `pkg/cmd/costmodel/costmodel.go` `StartExportWorker`.)"""


def opencost_values(view: ClusterView) -> dict[str, Any] | None:
    """OpenCost (chart 2.5.17, opencost/opencost-helm-chart `charts/opencost`) reads the
    cluster's kube-prometheus-stack (its default, `opencost.prometheus.internal`, is a
    `prometheus-server` in `prometheus-system` on port 80; `_helpers.tpl`
    `opencost.prometheusServerEndpoint` joins them into `http://<service>.<namespace>.svc...`),
    and it queries there the series it exports itself (`node_total_hourly_cost`,
    `container_cpu_allocation`: `pkg/costmodel/cluster.go`, `allocation.go`), so the stack must
    scrape it: `opencost.metrics.serviceMonitor.enabled` (default false) creates the
    ServiceMonitor, which the stack selects with no `release` label (`PROMETHEUS_VALUES` in
    argocd.py). Nodes are priced by the CSV provider from the pools' pricing file, the ConfigMap
    the observability layer renders beside it, mounted read-only (optional: it syncs in a later
    wave than the chart)."""
    del view
    return {
        "opencost": {
            "prometheus": {
                "internal": {
                    "serviceName": PROMETHEUS_SERVICE,
                    "namespaceName": PROMETHEUS_NAMESPACE,
                    "port": PROMETHEUS_PORT,
                }
            },
            "exporter": {
                "extraEnv": {**CSV_PROVIDER_ENV, "CSV_PATH": f"{PRICING_MOUNT}/{PRICING_KEY}"},
                "extraVolumeMounts": [
                    {"name": PRICING_VOLUME, "mountPath": PRICING_MOUNT, "readOnly": True}
                ],
            },
            "metrics": {"serviceMonitor": {"enabled": True}},
        },
        "extraVolumes": [
            {"name": PRICING_VOLUME, "configMap": {"name": CONFIG_MAP, "optional": True}}
        ],
    }


VALUES = {
    TRAINER_ADDON: trainer_values,
    NETWORK_OPERATOR_ADDON: network_operator_values,
    DRA_DRIVER_ADDON: dra_driver_values,
    OPENCOST_ADDON: opencost_values,
}
"""The operators' values, by add-on."""
