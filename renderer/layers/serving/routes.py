"""Serving: per endpoint its ClusterIP Service and the HTTPRoute from the platform Gateway.

The Service selects the endpoint's pods by `ENDPOINT_LABEL` (the label the server templates put
on them) in the endpoint's own namespace; its port `http` is the serving port, and Triton's
metrics port is a second port, `metrics` (vLLM and SGLang serve /metrics on the serving port).
The HTTPRoute hangs off the platform Gateway (`gateway.py`), with the endpoint's host and a
PathPrefix match on its path, to that Service: Envoy Gateway routes to the Service's endpoints
(the pods' addresses) directly, so the pods see the Envoy proxy pods as the peer, which the
tenancy layer's NetworkPolicy admits on the serving port.

No InferencePool, for any server yet (`INFERENCE_POOL_FITS`): the Gateway API Inference
Extension's InferencePool (inference.networking.k8s.io/v1) is a backendRef the gateway must
implement, and Envoy Gateway v1.9.0 does not: its translator knows Services, ServiceImports and
its own Backends only, and hands any other backendRef kind to an extension server
(`extensionManager.backendResources`; envoyproxy/gateway v1.9.0 has InferencePool only in its
extension-server examples and tests). The extension server that serves it is Envoy AI Gateway's
controller, a second add-on that reconfigures Envoy Gateway's own config. And an InferencePool
routes through an endpoint picker (EPP) Deployment in the team's namespace, whose image
(registry.k8s.io/gateway-api-inference-extension/epp) lies outside every team's image prefixes
and which needs a Role to watch pods and InferencePools. Until the platform installs the AI
Gateway and mirrors the EPP image, an LLM endpoint is routed like any other, to its Service, and
balanced by Envoy's round robin (docs/serving-traffic.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.layers.serving.gateway import (
    GATEWAY_API,
    GATEWAY_GROUP,
    GATEWAY_NAME,
    GATEWAY_NAMESPACE,
    listeners,
)
from renderer.model.serving import ENDPOINT_LABEL, SERVERS
from renderer.model.view import ClusterView, Served
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "serving"
SERVING_PORT_NAME = "http"
METRICS_PORT_NAME = "metrics"

INFERENCE_POOL_FITS = False
"""Whether an LLM endpoint gets an InferencePool: not with Envoy Gateway v1.9.0 alone (above)."""


def service_ports(served: Served) -> list[dict[str, Any]]:
    """The serving port, named `http`, and a separate metrics port where the server has one."""
    endpoint = served.endpoint
    server = SERVERS[endpoint.server]
    ports = [_port(SERVING_PORT_NAME, endpoint.port)]
    metrics = server.metrics_port_of(endpoint.port)
    if metrics != endpoint.port:
        ports.append(_port(METRICS_PORT_NAME, metrics))
    return ports


def _port(name: str, number: int) -> dict[str, Any]:
    return {
        "name": name,
        "port": number,
        "targetPort": number,
        "protocol": "TCP",
        "appProtocol": "http",
    }


def _labels(served: Served) -> dict[str, Any]:
    meta = metadata(
        served.endpoint.name,
        served.namespace.name,
        team=served.team.name,
        cost_center=served.team.cost_center,
    )
    meta["labels"][ENDPOINT_LABEL] = served.endpoint.name
    return meta


def service(served: Served) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _labels(served),
        "spec": {
            "type": "ClusterIP",
            "selector": {ENDPOINT_LABEL: served.endpoint.name},
            "ports": service_ports(served),
        },
    }


def http_route(served: Served) -> dict[str, Any]:
    endpoint = served.endpoint
    return {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": _labels(served),
        "spec": {
            "parentRefs": [
                {
                    "group": GATEWAY_GROUP,
                    "kind": "Gateway",
                    "name": GATEWAY_NAME,
                    "namespace": GATEWAY_NAMESPACE,
                }
            ],
            "hostnames": [endpoint.host],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": endpoint.path}}],
                    "backendRefs": [
                        {
                            "group": "",
                            "kind": "Service",
                            "name": endpoint.name,
                            "port": endpoint.port,
                        }
                    ],
                }
            ],
        },
    }


def render(view: ClusterView) -> Iterator[Output]:
    """Per endpoint, in the view's order: its Service, then its HTTPRoute (where the cluster has
    a Gateway to hang it on)."""
    gateway = bool(listeners(view))
    for served in view.endpoints():
        source = served.endpoint.origin.location
        yield Manifest(LAYER, service(served), source)
        if gateway:
            yield Manifest(LAYER, http_route(served), source)
