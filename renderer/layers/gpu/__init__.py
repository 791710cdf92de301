"""GPU: everything a cluster needs to expose its GPUs the way each pool file says.

The GPU Operator's Helm values (checked by building the ClusterPolicy they imply), the MIG
manager and device-plugin sharing configurations, DRA device classes and claim templates, DCGM
telemetry, the Network Operator's RDMA device plugin (its NicClusterPolicy), and each pool's
node bootstrap for its provisioner. Each concern is one module; this
layer only strings them together in a fixed order.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.gpu import bootstrap as node_bootstrap
from renderer.layers.gpu import dcgm, dra, network
from renderer.layers.gpu import operator as gpu_operator
from renderer.layers.gpu import sharing as gpu_sharing
from renderer.model.view import ClusterView
from renderer.output.manifest import Output


def render(view: ClusterView) -> Iterator[Output]:
    """Every GPU object of one cluster."""
    yield from gpu_operator.render(view)
    yield from gpu_sharing.render(view)
    yield from dra.render(view)
    yield from dcgm.render(view)
    yield from network.render(view)
    yield from node_bootstrap.render(view)
