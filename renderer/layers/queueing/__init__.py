"""Queueing: the admission queues of one cluster, for the scheduler the cluster declares.

Kueue (`kueue.x-k8s.io/v1beta2`) or Volcano, from the same teams, pools and queues; both read
the ClusterQueue plans of `renderer.model.queue_plans`, so the two schedulers enforce the same quotas.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.queueing import kueue, volcano
from renderer.model.view import ClusterView
from renderer.output.manifest import Output


def render(view: ClusterView) -> Iterator[Output]:
    """Every queueing object of one cluster."""
    if view.cluster.scheduler == "volcano":
        yield from volcano.render(view)
    else:
        yield from kueue.render(view)
