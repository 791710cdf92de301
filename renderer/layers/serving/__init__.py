"""Serving: what turns a team's declared endpoints into traffic, safe rollouts, autoscaling and
telemetry (`rendered/<cluster>/serving/`). See docs/serving.md.

One module per concern, each rendering from the cluster's view alone:
- `gateway`: the platform's GatewayClass and Gateway (Envoy Gateway), where endpoints exist;
- `routes`: per endpoint its Service, HTTPRoute and, for LLM servers, InferencePool;
- `rollouts`: per endpoint its PodDisruptionBudget;
- `autoscaling`: per endpoint its KEDA ScaledObject, bounded by the team's quota;
- `monitors`: per endpoint its PodMonitor.
The NetworkPolicies that let the gateway and Prometheus in are the tenancy layer's (with the
namespace's other policies); the recording rules, panel and SLO alert the observability layer's;
the Deployment a template (`templates/<namespace>/`), which the team applies with its image.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.serving import autoscaling, gateway, monitors, rollouts, routes
from renderer.model.view import ClusterView
from renderer.output.manifest import Output

LAYER = "serving"


def render(view: ClusterView) -> Iterator[Output]:
    """Every serving object of one cluster, in a fixed order; nothing where no endpoint is."""
    if not view.endpoints():
        return
    yield from gateway.render(view)
    yield from routes.render(view)
    yield from rollouts.render(view)
    yield from autoscaling.render(view)
    yield from monitors.render(view)
