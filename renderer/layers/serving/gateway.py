"""Serving: the platform's GatewayClass and its one Gateway (Envoy Gateway), where endpoints are.

Envoy Gateway v1.9.0 (envoyproxy/gateway, the `envoyGateway` add-on) reconciles every
GatewayClass whose `controllerName` is its own (`api/v1alpha1/envoygateway_types.go`,
`GatewayControllerName`), and runs the Envoy proxy of each accepted Gateway as a Deployment in
its *own* namespace, not the Gateway's (`internal/infrastructure/kubernetes/proxy_infra.go`
`GetResourceNamespace`: the controller's namespace unless `GatewayNamespaceMode`, off in the
chart's defaults), its pods labelled `ENVOY_PROXY_LABELS` (`proxy/resource.go` `EnvoyAppLabel`)
plus `gateway.envoyproxy.io/owning-gateway-name` and `-namespace` (`internal/gatewayapi/
helpers.go`). The tenancy layer admits exactly those pods to the endpoints' serving port.

The Gateway lives in the controller's namespace too (`envoy-gateway-system`, reserved). It has
one HTTP listener per (team, domain) of the teams serving on the cluster, hostname
`*.<domain>` (and one for the domain itself where an endpoint's host is the domain), admitting HTTPRoutes only from that team's inference namespaces (a selector on
the labels the tenancy layer writes on every team namespace, which teams cannot change): a
route can claim a host only inside its own team's domains, even written by hand, and the
policy (`renderer.policy.hosts`) refuses the same earlier, on the input line.

TLS: the listeners speak HTTP. gpuplane holds no certificate and renders no Secret; TLS
terminates before the gateway (the cloud load balancer in front of the Gateway's Service), or
the admin adds an HTTPS listener with a certificate Secret of their own (docs/serving-traffic.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model.names import ENVOY_GATEWAY_NAMESPACE
from renderer.model.platform import Team
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "serving"
GATEWAY_API = "gateway.networking.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"

CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
"""Envoy Gateway's controller name (v1.9.0 `GatewayControllerName`, the chart's default
`config.envoyGateway.gateway.controllerName`)."""
GATEWAY_CLASS = "gpuplane"
GATEWAY_NAME = "gpuplane-inference"
GATEWAY_NAMESPACE = ENVOY_GATEWAY_NAMESPACE
HTTP_PORT = 80

ENVOY_PROXY_LABELS: dict[str, str] = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
"""The labels Envoy Gateway v1.9.0 puts on every Envoy proxy pod it runs."""
OWNING_GATEWAY_NAME = "gateway.envoyproxy.io/owning-gateway-name"
OWNING_GATEWAY_NAMESPACE = "gateway.envoyproxy.io/owning-gateway-namespace"


def proxy_pod_labels() -> dict[str, str]:
    """The labels of the platform Gateway's own Envoy proxy pods (not another Gateway's)."""
    return {
        **ENVOY_PROXY_LABELS,
        OWNING_GATEWAY_NAME: GATEWAY_NAME,
        OWNING_GATEWAY_NAMESPACE: GATEWAY_NAMESPACE,
    }


def team_namespaces_selector(team: str) -> dict[str, Any]:
    """The team's inference namespaces, by the labels the tenancy layer writes on them
    (`gpuplane.dev/team`, `gpuplane.dev/purpose`)."""
    return {"matchLabels": {"gpuplane.dev/team": team, "gpuplane.dev/purpose": "inference"}}


def serving_teams(view: ClusterView) -> tuple[Team, ...]:
    """The teams with an endpoint on the cluster, by name."""
    teams = {served.team.name: served.team for served in view.endpoints()}
    return tuple(teams[name] for name in sorted(teams))


def listeners(view: ClusterView) -> list[dict[str, Any]]:
    """One HTTP listener per team domain: `*.<domain>` (and the domain itself where a host is
    it), routes from that team's inference namespaces only. A Gateway holds at most 64
    listeners (the CRD's maxItems): a cluster with more team domains than that needs a second
    Gateway, which gpuplane does not render yet."""
    hosts = {served.endpoint.host.lower() for served in view.endpoints()}
    found = []
    for team in serving_teams(view):
        for index, domain in enumerate(team.domains):
            found.append(_listener(team, f"{team.name}-{index}", f"*.{domain}"))
            if domain.lower() in hosts:  # `*.d` does not match `d` itself
                found.append(_listener(team, f"{team.name}-{index}-apex", domain))
    return found


def _listener(team: Team, name: str, hostname: str) -> dict[str, Any]:
    return {
        "name": name,
        "hostname": hostname,
        "port": HTTP_PORT,
        "protocol": "HTTP",
        "allowedRoutes": {
            "namespaces": {"from": "Selector", "selector": team_namespaces_selector(team.name)},
            "kinds": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute"}],
        },
    }


def render(view: ClusterView) -> Iterator[Output]:
    """The GatewayClass and the Gateway, where the cluster has endpoints and team domains."""
    found = listeners(view)
    if not found:
        return
    source = view.cluster.origin.location
    yield Manifest(
        LAYER,
        {
            "apiVersion": GATEWAY_API,
            "kind": "GatewayClass",
            "metadata": metadata(GATEWAY_CLASS),
            "spec": {
                "controllerName": CONTROLLER_NAME,
                "description": "gpuplane's platform Gateway (Envoy Gateway)",
            },
        },
        source,
    )
    yield Manifest(
        LAYER,
        {
            "apiVersion": GATEWAY_API,
            "kind": "Gateway",
            "metadata": metadata(GATEWAY_NAME, GATEWAY_NAMESPACE),
            "spec": {"gatewayClassName": GATEWAY_CLASS, "listeners": found},
        },
        source,
    )
