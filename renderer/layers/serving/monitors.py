"""Serving: a PodMonitor per endpoint, so the cluster's Prometheus scrapes the model server's own
metrics with gpuplane's labels on every series.

kube-prometheus-stack 79.6.1's Prometheus selects PodMonitors by `podMonitorSelector` and
`podMonitorNamespaceSelector`, both `{}` in the chart's values; with
`podMonitorSelectorNilUsesHelmValues: false` (gitops `PROMETHEUS_VALUES`, as for the DCGM
ServiceMonitor) the chart leaves them empty and the Prometheus Operator reads an empty selector
as every PodMonitor in every namespace. So the PodMonitor lives in the endpoint's own
namespace and carries no `release` label.

Its one `podMetricsEndpoints` entry names no port: the Prometheus Operator then makes a target of
every declared container port of the selected pods, and the first relabeling keeps only the
server's metrics port (model/serving.py `SERVERS`), so the PodMonitor does not depend on what
the Deployment template calls its ports. The other relabelings write gpuplane's labels
(`ENDPOINT_SERIES_LABELS`) onto the target, and so onto every series scraped from it: the
recording rules select and group by them.

The order this relies on: kube-prometheus-stack 79.6.1 runs the Prometheus Operator v0.86.2 (the
chart's appVersion; `prometheusOperator.image.tag` empty takes it), whose
`pkg/prometheus/promcfg.go` `generatePodMonitorConfig` writes one scrape job per endpoint with
its own relabelings first (the running-pod filter, the selector's `keep`s, `namespace`,
`container`, `pod`, `job`, the scrape class's) and the endpoint's `relabelings` last
(`labeler.GetRelabelingConfigs(..., ep.RelabelConfigs)` appended after them). Those only keep
and write labels, so every `__meta_kubernetes_*` label, the container port number included, is
still on the target when ours run, and ours win over any label the operator wrote. Rendered only where the cluster runs
kube-prometheus-stack (the PodMonitor CRD comes with it).

The NetworkPolicy that lets Prometheus reach the metrics port is the tenancy layer's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model.names import PROMETHEUS_ADDON
from renderer.model.serving import ENDPOINT_LABEL, ENDPOINT_SERIES_LABELS, SERVERS
from renderer.model.view import ClusterView, Served
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "serving"
SCRAPE_INTERVAL = "15s"
"""As the DCGM exporter's: the SLO's 5-minute windows see 20 samples."""
PORT_NUMBER_META = "__meta_kubernetes_pod_container_port_number"
"""Prometheus's Kubernetes service discovery: a pod target's declared container port (there
when the endpoint's relabelings run: prometheus-operator v0.86.2 promcfg.go appends them after
its own, see the module docstring)."""


def name_of(served: Served) -> str:
    return f"endpoint-{served.name}"


def series_labels(served: Served) -> dict[str, str]:
    """The value of each of `ENDPOINT_SERIES_LABELS` for this endpoint's series."""
    values = {
        "team": served.team.name,
        "namespace": served.namespace.name,
        "endpoint": served.name,
        "pool": served.endpoint.pool,
        "server": served.endpoint.server,
    }
    return {label: values[label] for label in ENDPOINT_SERIES_LABELS}


def relabelings(served: Served) -> list[dict[str, Any]]:
    endpoint = served.endpoint
    port = SERVERS[endpoint.server].metrics_port_of(endpoint.port)
    found: list[dict[str, Any]] = [
        {"action": "keep", "sourceLabels": [PORT_NUMBER_META], "regex": str(port)},
    ]
    found.extend(
        {"action": "replace", "targetLabel": label, "replacement": value}
        for label, value in series_labels(served).items()
    )
    return found


def pod_monitor(served: Served) -> dict[str, Any]:
    endpoint = served.endpoint
    server = SERVERS[endpoint.server]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": metadata(
            name_of(served), served.namespace.name, team=served.team.name, endpoint=served.name
        ),
        "spec": {
            "selector": {"matchLabels": {ENDPOINT_LABEL: served.name}},
            "podMetricsEndpoints": [
                {
                    "path": server.metrics_path,
                    "scheme": "http",
                    "interval": SCRAPE_INTERVAL,
                    "honorLabels": False,
                    "relabelings": relabelings(served),
                }
            ],
        },
    }


def render(view: ClusterView) -> Iterator[Output]:
    """A PodMonitor per endpoint of the cluster, where it runs the Prometheus Operator."""
    if not view.cluster.runs(PROMETHEUS_ADDON):
        return
    for served in view.endpoints():
        yield Manifest(LAYER, pod_monitor(served), served.endpoint.origin.location)
