"""The NVIDIA GPU Operator of one cluster: its Helm chart values, and the ClusterPolicy they imply.

For a cluster that declares `addons.gpuOperator`, this module writes the values of NVIDIA's
`gpu-operator` chart (`rendered/<cluster>/values/gpu-operator.yaml`), which the GitOps layer
installs as an Argo CD Application source (`application_source`) at the pinned chart version. The
chart turns the values into one `nvidia.com/v1` ClusterPolicy named `cluster-policy`;
`cluster_policy_spec` builds that spec the same way, so the tests can check the values against
the ClusterPolicy CRD of the pinned operator. The MIG and sharing settings come from
`renderer.layers.gpu.sharing`, which renders the ConfigMaps they name. What each value is, and why, is
in docs/gpu-operator.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from renderer.layers.gpu import sharing as gpu_sharing
from renderer.model import nvidia
from renderer.model.names import DCGM_EXPORTER_ADDON, GPU_OPERATOR_ADDON
from renderer.model.platform import Addon, Pool
from renderer.model.view import ClusterView
from renderer.output.manifest import Output, Values

LAYER = "gpu"

CHART = "gpu-operator"
CHART_REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"
RELEASE = "gpu-operator"
"""Argo CD installs the chart under this release name, into `nvidia.NAMESPACE`."""

API_VERSION = "nvidia.com/v1"
CLUSTER_POLICY = "cluster-policy"
"""The chart creates exactly one ClusterPolicy, with this name."""

DCGM_EXPORTER_IMAGE_OS = "ubuntu22.04"
"""NVIDIA tags the exporter image `<dcgm>-<exporter>-<os>`; a cluster file gives the first two."""

GPU_TOLERATION: Mapping[str, str] = {
    "key": "nvidia.com/gpu",
    "operator": "Exists",
    "effect": "NoSchedule",
}
"""The chart's own default toleration for its operands; setting the list replaces it, so it is
kept."""

CONTROL_PLANE_TOLERATIONS: tuple[Mapping[str, str], ...] = tuple(
    {"key": key, "operator": "Equal", "value": "", "effect": "NoSchedule"}
    for key in ("node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane")
)
"""The chart's default tolerations of the node-feature-discovery worker, besides the GPU one."""

CHART_ONLY_VALUES = frozenset({"node-feature-discovery"})
"""Top-level values that configure the chart itself (here its node-feature-discovery
subchart) and never reach the ClusterPolicy."""

REQUIRED_SPEC = (
    "daemonsets",
    "dcgm",
    "dcgmExporter",
    "devicePlugin",
    "driver",
    "gfd",
    "nodeStatusExporter",
    "operator",
    "toolkit",
)
"""The spec fields the ClusterPolicy CRD requires; the chart always renders them."""

_OS_SUFFIX = re.compile(r"-[a-z]")


def render(view: ClusterView) -> Iterator[Output]:
    """The chart values of the cluster's GPU Operator, when the cluster declares one."""
    addon = view.cluster.addons.get(GPU_OPERATOR_ADDON)
    if addon is None:
        return
    yield Values(layer=LAYER, chart=CHART, body=helm_values(view), source=addon.origin.location)


# --- what the pools ask of the operator -------------------------------------------------------


def uses_mps(pools: Iterable[Pool]) -> bool:
    """Some pool shares its GPUs through MPS, which the device plugin serves only with CDI."""
    return any(gpu_sharing.has_plugin_config(pool) and pool.sharing == "mps" for pool in pools)


def declared_driver_versions(pools: Iterable[Pool]) -> dict[str, tuple[str, ...]]:
    """The driver versions the pools' images declare, each with the pools that declare it."""
    found: dict[str, list[str]] = {}
    for pool in pools:
        driver = pool.image.get("driver")
        if driver:
            found.setdefault(driver, []).append(pool.name)
    return {version: tuple(names) for version, names in sorted(found.items())}


def driver_managed(addon: Addon) -> bool:
    """Whether the operator installs the driver; the policy rules read a missing flag as true."""
    return bool(addon.settings.get("driverManaged", True))


def dcgm_exporter_image_tag(version: str) -> str:
    """`4.5.2-4.8.1` -> `4.5.2-4.8.1-ubuntu22.04`; a tag that names its OS already is kept."""
    return version if _OS_SUFFIX.search(version) else f"{version}-{DCGM_EXPORTER_IMAGE_OS}"


def operand_tolerations(pools: Iterable[Pool]) -> list[dict[str, str]]:
    """The chart's GPU toleration, then one `Exists` toleration per taint key and effect of the
    pools: the operator's DaemonSets must run on every GPU node, whatever its pool's taint value."""
    taints = sorted({(t.key, t.effect) for pool in pools for t in pool.taints})
    result = [dict(GPU_TOLERATION)]
    for key, effect in taints:
        if (key, effect) != (GPU_TOLERATION["key"], GPU_TOLERATION["effect"]):
            result.append({"key": key, "operator": "Exists", "effect": effect})
    return result


# --- the chart values -------------------------------------------------------------------------


def helm_values(view: ClusterView) -> dict[str, Any]:
    """The `gpu-operator` chart values for the cluster (its addon must be declared).

    Only what gpuplane decides is set; everything else keeps the chart's default. The `config`
    of `migManager` and `devicePlugin` is `gpu_sharing.helm_values`'s: that module renders the
    ConfigMaps they name, so a name is set exactly when its ConfigMap exists, and so is its
    `mig.strategy` (one for the whole cluster: `mixed` when a pool uses MIG, else `single`).
    """
    cluster = view.cluster
    addon = cluster.addons[GPU_OPERATOR_ADDON]
    exporter = cluster.addons.get(DCGM_EXPORTER_ADDON)
    pools = view.pools
    sharing = gpu_sharing.helm_values(view)
    tolerations = operand_tolerations(pools)

    values: dict[str, Any] = {}
    if addon.version:
        values["operator"] = {"version": addon.version}
    values["daemonsets"] = {"tolerations": tolerations}
    validator: dict[str, Any] = {}
    if addon.version:
        validator["version"] = addon.version
    validator["plugin"] = {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}
    values["validator"] = validator
    values["mig"] = dict(sharing["mig"])
    if uses_mps(pools):
        values["cdi"] = {"enabled": True}

    driver: dict[str, Any] = {"enabled": driver_managed(addon)}
    versions = declared_driver_versions(pools)
    if driver["enabled"] and len(versions) == 1:
        (driver["version"],) = versions
    values["driver"] = driver
    values["toolkit"] = {"enabled": True}
    values["devicePlugin"] = {"enabled": True, **sharing.get("devicePlugin", {})}

    values["dcgm"] = {"enabled": False}
    dcgm_exporter: dict[str, Any] = {"enabled": exporter is not None}
    if exporter is not None:
        if exporter.version:
            dcgm_exporter["version"] = dcgm_exporter_image_tag(exporter.version)
        dcgm_exporter["config"] = {"name": nvidia.DCGM_METRICS_CONFIG}
    dcgm_exporter["serviceMonitor"] = {"enabled": False}
    values["dcgmExporter"] = dcgm_exporter

    values["gfd"] = {"enabled": True}
    values["migManager"] = {"enabled": "migManager" in sharing, **sharing.get("migManager", {})}
    values["nodeStatusExporter"] = {"enabled": False}
    values["node-feature-discovery"] = {
        "worker": {
            "tolerations": [dict(t) for t in (*CONTROL_PLANE_TOLERATIONS, *tolerations)],
        }
    }
    return values


# --- the ClusterPolicy the values imply --------------------------------------------------------


def cluster_policy_spec(view: ClusterView) -> dict[str, Any]:
    """The `spec` of the ClusterPolicy the chart creates from `helm_values(view)`.

    The chart copies each component's values to the field of the same name, except for what
    configures the chart rather than the operator: the node-feature-discovery subchart, the
    operator's own image version (its Deployment's, not the ClusterPolicy's), and the `create`
    and `data` keys of a component's `config` (whether the chart makes the ConfigMap). An empty
    string is left out: the chart skips it or writes a null the API server drops
    (`devicePlugin.config.default`). The components the CRD requires and the values leave
    to the chart's defaults are present, empty.
    """
    spec: dict[str, Any] = {}
    for component, settings in helm_values(view).items():
        if component in CHART_ONLY_VALUES:
            continue
        implied = _without_empty(settings)
        if component == "operator":
            implied.pop("version", None)
        config = implied.get("config")
        if isinstance(config, Mapping):
            implied["config"] = {k: v for k, v in config.items() if k not in ("create", "data")}
        spec[component] = implied
    for component in REQUIRED_SPEC:
        spec.setdefault(component, {})
    return spec


def _without_empty(settings: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: _without_empty(value) if isinstance(value, Mapping) else value
        for key, value in settings.items()
        if value != ""
    }


def implied_cluster_policy(view: ClusterView) -> dict[str, Any] | None:
    """The whole ClusterPolicy object, for validation against the CRD; None without an operator."""
    if GPU_OPERATOR_ADDON not in view.cluster.addons:
        return None
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterPolicy",
        "metadata": {"name": CLUSTER_POLICY},
        "spec": cluster_policy_spec(view),
    }


# --- the Argo CD source -----------------------------------------------------------------------


def values_path(view: ClusterView) -> str:
    """Where the values file lands in the repository: `rendered/<cluster>/values/<chart>.yaml`."""
    return f"rendered/{view.cluster.name}/values/{CHART}.yaml"


def application_source(view: ClusterView, values_ref: str = "values") -> dict[str, Any] | None:
    """The chart source of the operator's Argo CD Application; None without an operator.

    The values file is read from a second source of the same Application, the gpuplane
    repository itself, declared with `ref: <values_ref>`. An unpinned operator follows the
    chart repository's latest release (`*`), which the policy allows outside production.
    """
    addon = view.cluster.addons.get(GPU_OPERATOR_ADDON)
    if addon is None:
        return None
    return {
        "repoURL": CHART_REPOSITORY,
        "chart": CHART,
        "targetRevision": addon.version or "*",
        "helm": {
            "releaseName": RELEASE,
            "valueFiles": [f"${values_ref}/{values_path(view)}"],
        },
    }
