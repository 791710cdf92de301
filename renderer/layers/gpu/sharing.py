"""GPU sharing: the MIG manager and device plugin configurations, and the node labels that pick.

Design: docs/gpu-sharing.md#the-two-configmaps-and-the-node-labels-that-pick
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from renderer.model import catalog, nvidia
from renderer.model.platform import Pool
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "gpu"
MIG_CONFIG_KEY = "config.yaml"
"""The key of the MIG manager ConfigMap the MIG manager reads."""

MIG_DISABLED = "all-disabled"
MIG_ENABLED = "all-enabled"
"""mig-parted's standard entries, kept as the upstream default config has them. `all-disabled`
is the ClusterPolicy's `migManager.config.default`: the operator labels every MIG-capable node
without a `nvidia.com/mig.config` label with it, so it must exist in a custom config."""

MIG_STRATEGY = "mixed"
"""The strategy on clusters with MIG: a resource per profile, so one pool may mix them."""

SHARED_STRATEGY = "none"
"""The strategy in the plugin configs of clusters without MIG (the chart's `single`)."""

CHART_STRATEGY = {MIG_STRATEGY: "mixed", SHARED_STRATEGY: "single"}
"""The chart's `mig.strategy` for each strategy the configs use."""

DEPLOY_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
"""The GPU Operator's per-node switch for its device plugin; "false" on DRA pools."""

FAIL_REQUESTS_GREATER_THAN_ONE = True
"""A pod asking for 2 replicas of a shared GPU gets no more compute, only a second handle on
the same kind of share, so the plugin refuses it (NVIDIA recommends it; MPS always does)."""

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"
"""`renameByDefault: true` advertises the replicas as `nvidia.com/gpu.shared`."""

_PREFIX = "gpuplane-"
_LABEL_VALUE_MAX = 63


def config_name(pool: Pool) -> str:
    """The pool's entry in both ConfigMaps, and the value of its node labels: `gpuplane-<pool>`.

    The prefix keeps it apart from mig-parted's `all-*` entries; a name that would be longer
    than a label value may be is cut and given a digest of the whole pool name."""
    name = _PREFIX + pool.name
    if len(name) <= _LABEL_VALUE_MAX:
        return name
    digest = hashlib.sha256(pool.name.encode()).hexdigest()[:8]
    head = name[: _LABEL_VALUE_MAX - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}"


def _nvidia(pool: Pool) -> bool:
    accelerator = catalog.accelerator(pool.accelerator)
    return accelerator is not None and accelerator.vendor == "nvidia"


def _nvidia_device_plugin(pool: Pool) -> bool:
    """Pools whose GPUs the NVIDIA device plugin serves."""
    return _nvidia(pool) and pool.exposure == "device-plugin"


def uses_mig(pool: Pool) -> bool:
    """The pool has an entry in the MIG manager config (device plugin or DRA exposure)."""
    return pool.sharing == "mig" and _nvidia(pool)


def cluster_strategy(pools: Iterable[Pool]) -> str:
    """The device plugin's MIG strategy on a cluster: `mixed` as soon as a pool uses MIG."""
    return MIG_STRATEGY if any(uses_mig(p) for p in pools) else SHARED_STRATEGY


def has_plugin_config(pool: Pool) -> bool:
    """The pool has an entry in the device plugin config (MIG, time-slicing or MPS)."""
    return pool.sharing in ("mig", "time-slicing", "mps") and _nvidia_device_plugin(pool)


def nvidia_node_labels(pool: Pool) -> dict[str, str]:
    """The labels that select this pool's entries in the MIG manager and device plugin
    configurations (`nvidia.com/mig.config`, `nvidia.com/device-plugin.config`); empty for a
    pool of whole GPUs or a non-NVIDIA pool; DRA pools also switch the device plugin off."""
    labels: dict[str, str] = {}
    if uses_mig(pool):
        labels[nvidia.MIG_CONFIG_LABEL] = config_name(pool)
    if has_plugin_config(pool):
        labels[nvidia.DEVICE_PLUGIN_CONFIG_LABEL] = config_name(pool)
    if pool.exposure == "dra" and _nvidia(pool):
        labels[DEPLOY_DEVICE_PLUGIN_LABEL] = "false"
    return labels


# --- the MIG manager --------------------------------------------------------------------------


def _mig_entry(pool: Pool) -> list[dict[str, Any]]:
    """The pool's mig-parted entry: its layout (a named one resolved) on every GPU it filters."""
    accelerator = catalog.accelerator(pool.accelerator)
    entry: dict[str, Any] = {}
    if accelerator is not None and accelerator.pci_device_ids:
        entry["device-filter"] = list(accelerator.pci_device_ids)
    entry["devices"] = "all"
    entry["mig-enabled"] = True
    entry["mig-devices"] = dict(pool.mig_layout)
    return [entry]


def mig_parted_config(pools: Iterable[Pool]) -> dict[str, Any] | None:
    """mig-parted's document for the MIG pools among `pools`; None when there are none."""
    mig_pools = [p for p in pools if uses_mig(p)]
    if not mig_pools:
        return None
    configs: dict[str, Any] = {
        MIG_DISABLED: [{"devices": "all", "mig-enabled": False}],
        MIG_ENABLED: [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
    }
    for pool in mig_pools:
        configs[config_name(pool)] = _mig_entry(pool)
    return {"version": "v1", "mig-configs": configs}


# --- the device plugin ------------------------------------------------------------------------


def plugin_config(pool: Pool, strategy: str) -> dict[str, Any]:
    """The device plugin's config for one MIG, time-slicing or MPS pool, with the cluster's
    MIG strategy."""
    if pool.sharing == "mig":
        return {"version": "v1", "flags": {"migStrategy": strategy}}
    kind = "timeSlicing" if pool.sharing == "time-slicing" else "mps"
    return {
        "version": "v1",
        "flags": {"migStrategy": strategy},
        "sharing": {
            kind: {
                "renameByDefault": pool.rename_by_default,
                "failRequestsGreaterThanOne": FAIL_REQUESTS_GREATER_THAN_ONE,
                "resources": [{"name": GPU_RESOURCE, "replicas": pool.replicas}],
            }
        },
    }


def device_plugin_configs(pools: Iterable[Pool]) -> dict[str, dict[str, Any]] | None:
    """Entry name -> config for the pools that need one; None when none does."""
    pools = list(pools)
    strategy = cluster_strategy(pools)
    configs = {config_name(p): plugin_config(p, strategy) for p in pools if has_plugin_config(p)}
    return configs or None


# --- output -----------------------------------------------------------------------------------


def helm_values(view: ClusterView) -> dict[str, Any]:
    """The GPU Operator chart values these ConfigMaps need: `mig.strategy` (`mixed` when a pool
    uses MIG, else `single`: the same strategy the configs carry), and `migManager.config` /
    `devicePlugin.config` naming the ConfigMaps rendered for the cluster. No `default` entry:
    nodes without the label get the plugin's own defaults (whole GPUs)."""
    values: dict[str, Any] = {"mig": {"strategy": CHART_STRATEGY[cluster_strategy(view.pools)]}}
    if mig_parted_config(view.pools) is not None:
        values["migManager"] = {"config": {"name": nvidia.MIG_CONFIG, "default": MIG_DISABLED}}
    if device_plugin_configs(view.pools) is not None:
        values["devicePlugin"] = {"config": {"name": nvidia.DEVICE_PLUGIN_CONFIG, "default": ""}}
    return values


def _config_map(name: str, data: dict[str, str], pool: Pool, *field: str) -> Manifest:
    return Manifest(
        LAYER,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(name, nvidia.NAMESPACE),
            "data": data,
        },
        pool.origin.at("spec", *field),
    )


def render(view: ClusterView) -> Iterator[Output]:
    """The MIG manager and device plugin ConfigMaps of one cluster, each when a pool needs it.

    Each names the first pool (by name) with an entry in it as its source."""
    mig = mig_parted_config(view.pools)
    if mig is not None:
        first = next(p for p in view.pools if uses_mig(p))
        yield _config_map(nvidia.MIG_CONFIG, {MIG_CONFIG_KEY: dump(mig)}, first, "mig")
    plugin = device_plugin_configs(view.pools)
    if plugin is not None:
        first = next(p for p in view.pools if has_plugin_config(p))
        data = {key: dump(config) for key, config in plugin.items()}
        yield _config_map(nvidia.DEVICE_PLUGIN_CONFIG, data, first, "sharing")
