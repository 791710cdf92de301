"""Serving: safe rollouts. Per endpoint a PodDisruptionBudget (policy/v1) that keeps
replicas.min of its pods through voluntary disruptions (node drains, the cluster autoscaler's
scale-down), beside the Deployment template's rolling update that never goes below the replicas
it has (maxUnavailable 0, one surge replica). docs/serving-rollouts.md.

A budget of minAvailable 1 over one replica allows no eviction at all: a drain of that node
waits until the replica runs elsewhere (docs/serving-rollouts.md says how). It is rendered all
the same: replicas.min is the floor the team declared, and the platform does not lower it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model.serving import ENDPOINT_LABEL
from renderer.model.view import ClusterView, Served
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "serving"
"""The package's layer (renderer.layers.serving.LAYER: importing it here would be a circle)."""

UNHEALTHY_POD_EVICTION_POLICY = "AlwaysAllow"
"""A pod that is running but not ready (a model that never loaded, a crash loop) may be evicted
even when the budget is spent: under the default IfHealthyBudget it would block every drain of
its node. k8s.io/api v0.33.0 and v0.34.0 (the example's 1.33 and 1.34) document the field with
no feature gate; through v0.32.0 it was beta behind PDBUnhealthyPodEvictionPolicy, on by
default (policy/v1/types.go)."""


def render(view: ClusterView) -> Iterator[Output]:
    """One PodDisruptionBudget per endpoint of the cluster, in the endpoint's namespace."""
    for served in view.endpoints():
        yield Manifest(LAYER, budget(served), served.endpoint.origin.location)


def budget(served: Served) -> dict[str, Any]:
    """minAvailable = replicas.min over the endpoint's pods (its label, which the template's
    selector and pods carry)."""
    endpoint = served.endpoint
    meta = metadata(
        endpoint.name,
        served.namespace.name,
        team=served.team.name,
        purpose=served.namespace.purpose,
        pool=endpoint.pool,
    )
    meta["labels"][ENDPOINT_LABEL] = endpoint.name
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": {
            "minAvailable": endpoint.min_replicas,
            "selector": {"matchLabels": {ENDPOINT_LABEL: endpoint.name}},
            "unhealthyPodEvictionPolicy": UNHEALTHY_POD_EVICTION_POLICY,
        },
    }
