"""The guide's `gpu-pool` label pattern, from one source: node labels and taints of each pool.

The same values reach the node bootstrap (GPU layer), the Kueue ResourceFlavors and Volcano
queues (queueing layer), quota dimensions, cost labels and alerts: change a pool file, and every
place that selects its nodes follows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from renderer.model.platform import Pool

PREFIX = "gpuplane.dev/"
POOL_LABEL = f"{PREFIX}pool"
"""Every node of a pool carries its name under this label."""


def node_labels(pool: Pool) -> dict[str, str]:
    """`gpuplane.dev/{pool,accelerator,topology,fabric,workload,sharing}` plus the pool's own."""
    labels = {
        POOL_LABEL: pool.name,
        f"{PREFIX}accelerator": pool.accelerator,
    }
    topology = "-".join(p for p in (pool.topology_form, pool.interconnect) if p)
    if topology:
        labels[f"{PREFIX}topology"] = topology
    labels[f"{PREFIX}fabric"] = pool.fabric
    labels[f"{PREFIX}workload"] = pool.workload
    labels[f"{PREFIX}sharing"] = pool.sharing
    for key, value in sorted(pool.node_labels.items()):
        labels.setdefault(key, value)
    return labels


def tolerations(pool: Pool) -> list[dict[str, Any]]:
    """Tolerations matching exactly the pool's taints (Equal with a value, Exists without)."""
    result: list[dict[str, Any]] = []
    for taint in pool.taints:
        toleration: dict[str, Any] = {"key": taint.key}
        if taint.value:
            toleration.update({"operator": "Equal", "value": taint.value})
        else:
            toleration["operator"] = "Exists"
        toleration["effect"] = taint.effect
        result.append(toleration)
    return result


def pools_affinity(pools: Iterable[Pool]) -> dict[str, Any]:
    """A required node affinity (`NodeAffinity`) matching the nodes of exactly these pools."""
    names = sorted({pool.name for pool in pools})
    term = {"key": POOL_LABEL, "operator": "In", "values": names}
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [term]}]
        }
    }


def agent_tolerations(pools: Iterable[Pool]) -> list[dict[str, str]]:
    """One `Exists` toleration per taint key and effect of the pools, sorted: a node agent (a
    device plugin, a kubelet plugin) must run on every node of them, whatever the value."""
    taints = sorted({(taint.key, taint.effect) for pool in pools for taint in pool.taints})
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in taints]
