"""The guide's `gpu-pool` label pattern, from one source: node labels and taints of each pool.

The same values reach the node bootstrap (GPU layer), the Kueue ResourceFlavors and Volcano
queues (queueing layer), quota dimensions, cost labels and alerts: change a pool file, and every
place that selects its nodes follows.
"""

from __future__ import annotations

from typing import Any

from renderer.model.platform import Pool

PREFIX = "gpuplane.dev/"


def node_labels(pool: Pool) -> dict[str, str]:
    """`gpuplane.dev/{pool,accelerator,topology,fabric,workload,sharing}` plus the pool's own."""
    labels = {
        f"{PREFIX}pool": pool.name,
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
