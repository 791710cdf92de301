"""Serving: per endpoint that autoscales (`replicas.max` above `replicas.min`), its KEDA
ScaledObject. docs/serving-autoscaling.md.

The ScaledObject scales the endpoint's Deployment (named after the endpoint, in its namespace)
between `replicas.min` and `replicas.max` through the HPA KEDA creates for it. Its one trigger is
KEDA's prometheus scaler reading the recorded series of the endpoint's signal
(`model.serving.SIGNAL_SERIES`, written by the observability layer's recording rules with
labels `namespace` and `endpoint`) from the cluster's kube-prometheus-stack.

Facts read from kedacore/keda v2.20.2:
- `pkg/scalers/prometheus_scaler.go`: the query must return one element (more is an error); an
  empty result, NaN or Inf is 0 while `ignoreNullValues` is true (its default), an error where
  it is false; the metric type defaults to AverageValue (`pkg/scalers/scaler.go`
  `GetMetricTargetType`).
- The HPA reads an AverageValue target as "metric / replicas" and a Value target as the metric
  itself (desired = ceil(current x value / target)): a sum over the pods (waiting requests,
  KV-cache use) is AverageValue, so the threshold is per replica; a p95 latency is no sum, and
  dividing it by the replica count would mean nothing: it is a Value.
- `pkg/fallback/fallback.go`: once a trigger has failed more than `fallback.failureThreshold`
  times in a row, KEDA feeds the HPA a metric that yields the fallback's replicas; behavior
  `currentReplicasIfHigher` keeps the replicas running, or `fallback.replicas` where fewer run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from renderer.layers.gitops.operator_values import PROMETHEUS_PORT, PROMETHEUS_SERVICE
from renderer.model.choices import ScalingSignal
from renderer.model.names import PROMETHEUS_NAMESPACE
from renderer.model.serving import SIGNAL_SERIES
from renderer.model.view import ClusterView, Served
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "serving"
API_VERSION = "keda.sh/v1alpha1"

PROMETHEUS_URL = f"http://{PROMETHEUS_SERVICE}.{PROMETHEUS_NAMESPACE}.svc:{PROMETHEUS_PORT}"
"""kube-prometheus-stack's Prometheus Service, as the OpenCost values address it (without the
cluster domain: the KEDA operator's resolver search list completes `<svc>.<ns>.svc`)."""

MetricType = Literal["AverageValue", "Value"]

METRIC_TYPE: Mapping[ScalingSignal, MetricType] = {
    "queue-depth": "AverageValue",
    "kv-cache": "AverageValue",
    "ttft": "Value",
}
"""How the HPA compares each signal with its target: the waiting requests and the KV-cache use
are summed over the pods, so AverageValue divides them by the replicas and the target is per
replica; a p95 time to first token is not additive, so it is compared as it is (Value), and the
HPA scales in proportion to how far above the target it is."""

AGGREGATE: Mapping[ScalingSignal, str] = {
    "queue-depth": "sum",
    "kv-cache": "sum",
    "ttft": "max",
}
"""The outer aggregation that makes the query one element (the scaler refuses more): a sum of
sums is a sum; of latencies, the worst."""

IGNORE_NULL: Mapping[ScalingSignal, bool] = {
    "queue-depth": False,
    "kv-cache": False,
    "ttft": True,
}
"""`ignoreNullValues`: the waiting requests and KV-cache use exist while any replica is scraped
(0 when idle), so an empty answer means the recording rules or the scrape broke, and is an
error (the fallback holds the replicas) rather than a 0 that would shrink the endpoint to its
minimum. A p95 over five minutes without a request is NaN: no traffic, nothing to scale for,
so it reads as 0."""

FAILURE_THRESHOLD = 3
"""Failed reads in a row before the fallback holds the replicas: at KEDA's default 30-second
polling, a Prometheus restart (about a minute) does not trip it; an outage does."""

SCALE_DOWN_WINDOW_SECONDS = 600
"""The HPA's scale-down stabilization: it removes replicas only down to the highest count it
wanted over the last ten minutes (Kubernetes' default is five). A model server takes minutes
to load its weights, so a replica removed on a short lull is missed before a new one serves."""
SCALE_DOWN_POLICY = {"type": "Pods", "value": 1, "periodSeconds": 120}
"""And at most one replica every two minutes (the default allows all of them at once): traffic
that drops steadily still releases GPUs, a dip costs at most one replica."""


def render(view: ClusterView) -> Iterator[Output]:
    """A ScaledObject per endpoint of the cluster whose maximum is above its minimum."""
    for served in view.endpoints():
        if served.endpoint.max_replicas > served.endpoint.min_replicas:
            yield scaled_object(served)


def query(served: Served) -> str:
    """The PromQL the trigger runs: the endpoint's recorded series of its signal."""
    signal = served.endpoint.autoscaling.signal
    selector = f'namespace="{served.namespace.name}",endpoint="{served.endpoint.name}"'
    return f"{AGGREGATE[signal]}({SIGNAL_SERIES[signal]}{{{selector}}})"


def threshold(value: float) -> str:
    """The target as KEDA reads it (a decimal string): `4`, `0.8`, `0.5`."""
    return f"{value:g}"


def scaled_object(served: Served) -> Manifest:
    endpoint = served.endpoint
    signal = endpoint.autoscaling.signal
    trigger: dict[str, Any] = {
        "type": "prometheus",
        "name": signal,
        "metricType": METRIC_TYPE[signal],
        "metadata": {
            "serverAddress": PROMETHEUS_URL,
            "query": query(served),
            "threshold": threshold(endpoint.autoscaling.target),
            "ignoreNullValues": str(IGNORE_NULL[signal]).lower(),
        },
    }
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": endpoint.name},
        "minReplicaCount": endpoint.min_replicas,
        "maxReplicaCount": endpoint.max_replicas,
        "fallback": {
            "failureThreshold": FAILURE_THRESHOLD,
            "replicas": endpoint.min_replicas,
            "behavior": "currentReplicasIfHigher",
        },
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": SCALE_DOWN_WINDOW_SECONDS,
                        "policies": [SCALE_DOWN_POLICY],
                    }
                }
            }
        },
        "triggers": [trigger],
    }
    return Manifest(
        LAYER,
        {
            "apiVersion": API_VERSION,
            "kind": "ScaledObject",
            "metadata": metadata(
                endpoint.name,
                served.namespace.name,
                team=served.team.name,
                endpoint=endpoint.name,
                pool=endpoint.pool,
            ),
            "spec": spec,
        },
        endpoint.origin.key(),
    )
