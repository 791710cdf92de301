"""Observability: what turns the DCGM, kube-state-metrics and Kueue series into answers.

The guide's three views at once: PrometheusRules that put gpuplane's labels (team, cost centre,
pool, accelerator, sharing mode, cluster) on the raw series and alert with the team, the pool and
a runbook; Grafana dashboards for the platform, workload and financial views; and each pool's
cost rate where OpenCost-style tools read it. Rendered only where the cluster runs
kube-prometheus-stack, which brings the Prometheus Operator and Grafana. See
docs/observability.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.observability import alerts, dashboards, pricing, recording
from renderer.model.names import PROMETHEUS_ADDON
from renderer.model.view import ClusterView
from renderer.output.manifest import Output

LAYER = "observability"


def enabled(view: ClusterView) -> bool:
    """Whether the cluster runs kube-prometheus-stack (its Prometheus Operator and Grafana)."""
    return view.cluster.runs(PROMETHEUS_ADDON)


def render(view: ClusterView) -> Iterator[Output]:
    """Every observability object of one cluster, in a fixed order."""
    if not enabled(view):
        return
    yield from recording.render(view)
    yield from alerts.render(view)
    yield from dashboards.render(view)
    yield from pricing.render(view)
