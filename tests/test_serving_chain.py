"""Each example endpoint, followed through every object the platform renders for it, by the
references the API server and the operators follow, never by names alone.

The parts were built apart (traffic: test_serving_traffic.py; templates and PDBs:
test_serving_templates.py, test_serving_rollouts.py; autoscaling: test_serving_autoscaling.py;
telemetry: test_serving_telemetry.py). Here they must meet, as they do on a cluster:

- a client at the Gateway: a listener of the Gateway admits the route's host from the route's
  namespace (Gateway API hostname and allowedRoutes matching); the route's backendRef names a
  Service port of its namespace; the Service's selector selects the pods of the endpoint's
  Deployment template, and its targetPort resolves (by name or number, as kube-proxy resolves
  it) to a port the template's container declares; the namespace's NetworkPolicies admit the
  Gateway's Envoy proxy on exactly that port (tests/netpol.py's evaluation);
- Prometheus: the PodMonitor selects the same pods, keeps the port the server serves its
  metrics on (a declared container port), and the policies admit Prometheus there;
- the autoscaler scales the Deployment the team applies from the template (same name and
  namespace), on a series some recording rule records;
- the PodDisruptionBudget selects the endpoint's pods and no other endpoint's;
- the SLO alert names the endpoint.

The peers' labels (Envoy's proxy, Prometheus) are the ones tests/test_serving_traffic.py writes
from Envoy Gateway's and the Prometheus Operator's source.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from renderer.model.serving import SERVERS
from tests.conftest import REPO
from tests.netpol import Cluster, Pod, selects
from tests.test_serving_traffic import PROMETHEUS, Example, _gateway_proxy, _host_matches

pytestmark = pytest.mark.slow

ENDPOINT = "gpuplane.dev/endpoint"


def _declared() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(cluster, team, namespace, endpoint) as the team files write them."""
    found = []
    for path in sorted((REPO / "teams").glob("*.yaml")):
        team = yaml.safe_load(path.read_text())
        for ns in team["spec"]["namespaces"]:
            for endpoint in ns.get("endpoints", []):
                found.append((ns["cluster"], team["metadata"]["name"], ns["name"], endpoint))
    return found


DECLARED = _declared()
IDS = [f"{c}/{ns}/{e['name']}" for c, _, ns, e in DECLARED]


def _in(rendered: Example, kind: str, ns: str) -> list[dict[str, Any]]:
    return [o for o in rendered.by_kind.get(kind, []) if o["metadata"].get("namespace") == ns]


def _template(cluster: str, ns: str, name: str) -> dict[str, Any]:
    """The Deployment template whose pods are the endpoint's: found by its pods' labels."""
    found = []
    for path in sorted((REPO / "rendered" / cluster / "templates" / ns).glob("*.yaml")):
        for body in yaml.safe_load_all(path.read_text()):
            if not isinstance(body, dict) or body.get("kind") != "Deployment":
                continue
            labels = body["spec"]["template"]["metadata"].get("labels", {})
            if labels.get(ENDPOINT) == name:
                found.append(body)
    assert len(found) == 1, (cluster, ns, name, len(found))
    return found[0]


def _ports(template: dict[str, Any]) -> dict[str, int]:
    """The container ports of the template's server, by name (and by number as text)."""
    (container,) = template["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
    ports |= {str(p["containerPort"]): p["containerPort"] for p in container.get("ports", [])}
    return ports


def _path_matches(route_path: str, path: str) -> bool:
    """Gateway API PathPrefix: element-wise prefix (`/v1` matches `/v1/x`, not `/v10`)."""
    prefix = route_path.rstrip("/")
    return path == prefix or path.startswith(prefix + "/") or prefix == ""


CLUSTERS = sorted({c for c, *_ in DECLARED})


@pytest.fixture(scope="module", params=CLUSTERS)
def example(request: pytest.FixtureRequest) -> tuple[str, Example]:
    """One rendered cluster with an endpoint, and its name."""
    return request.param, Example(request.param)


def _case(cluster: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(team, ns, e) for c, team, ns, e in DECLARED if c == cluster]


def test_a_client_at_the_gateway_reaches_each_endpoints_server(
    example: tuple[str, Example],
) -> None:
    cluster, rendered = example
    (gateway,) = rendered.by_kind["Gateway"]
    proxy = _gateway_proxy(gateway["metadata"]["name"])
    for _, ns, endpoint in _case(cluster):
        template = _template(cluster, ns, endpoint["name"])
        labels = template["spec"]["template"]["metadata"]["labels"]
        ports = _ports(template)
        host, path = endpoint["host"], endpoint.get("path", "/")
        routes = [
            r
            for r in _in(rendered, "HTTPRoute", ns)
            if host in r["spec"]["hostnames"]
            and any(
                m["path"]["type"] == "PathPrefix" and _path_matches(m["path"]["value"], path)
                for rule in r["spec"]["rules"]
                for m in rule.get("matches", [])
            )
        ]
        assert len(routes) == 1, (ns, host, path)
        (route,) = routes
        (parent,) = route["spec"]["parentRefs"]
        assert (parent.get("namespace", ns), parent["name"]) == (
            gateway["metadata"]["namespace"],
            gateway["metadata"]["name"],
        )
        assert any(
            _host_matches(listener.get("hostname", host), host)
            and selects(
                listener["allowedRoutes"]["namespaces"]["selector"], rendered.namespaces[ns]
            )
            for listener in gateway["spec"]["listeners"]
        ), (ns, host)
        (rule,) = route["spec"]["rules"]
        (backend,) = rule["backendRefs"]
        assert backend.get("kind", "Service") == "Service"
        (service,) = [
            s for s in _in(rendered, "Service", ns) if s["metadata"]["name"] == backend["name"]
        ]
        assert selects({"matchLabels": service["spec"]["selector"]}, labels)
        (port,) = [p for p in service["spec"]["ports"] if p["port"] == backend["port"]]
        target = str(port.get("targetPort", port["port"]))
        assert target in ports, (ns, target, ports)
        serving = ports[target]
        assert serving == endpoint.get("port", SERVERS[endpoint["server"]].port)
        pod = Pod(
            ns,
            "server-0",
            dict(labels),
            "10.9.0.1",
            {n: (p, "TCP") for n, p in ports.items() if not n.isdigit()},
        )
        net = Cluster(rendered.namespaces, [pod, proxy], rendered.policies())
        assert net.reachable_ports(proxy, pod, {serving}) == {serving}, (ns, endpoint["name"])
        # readiness is asked of a port the container declares (the model is loaded there)
        (container,) = template["spec"]["template"]["spec"]["containers"]
        ready = container["readinessProbe"]["httpGet"]
        assert str(ready["port"]) in ports


def test_prometheus_scrapes_each_endpoints_server(example: tuple[str, Example]) -> None:
    cluster, rendered = example
    prometheus = Pod("monitoring", "prometheus-0", PROMETHEUS, "10.2.0.1")
    for _, ns, endpoint in _case(cluster):
        template = _template(cluster, ns, endpoint["name"])
        labels = template["spec"]["template"]["metadata"]["labels"]
        ports = _ports(template)
        monitors = [
            m for m in _in(rendered, "PodMonitor", ns) if selects(m["spec"]["selector"], labels)
        ]
        assert len(monitors) == 1, (ns, endpoint["name"])
        (scrape,) = monitors[0]["spec"]["podMetricsEndpoints"]
        server = SERVERS[endpoint["server"]]
        assert scrape["path"] == server.metrics_path
        keep = [r for r in scrape["relabelings"] if r.get("action") == "keep"]
        kept = {
            int(r["regex"])
            for r in keep
            if r["sourceLabels"] == ["__meta_kubernetes_pod_container_port_number"]
        }
        metrics = server.metrics_port_of(endpoint.get("port", server.port))
        assert kept == {metrics} and metrics in ports.values(), (kept, ports)
        pod = Pod(ns, "server-0", dict(labels), "10.9.0.1")
        net = Cluster(rendered.namespaces, [pod, prometheus], rendered.policies())
        assert net.reachable_ports(prometheus, pod, {metrics}) == {metrics}


def _recorded(rendered: Example) -> set[str]:
    return {
        rule["record"]
        for body in rendered.by_kind.get("PrometheusRule", [])
        for group in body["spec"]["groups"]
        for rule in group["rules"]
        if "record" in rule
    }


def test_the_autoscaler_scales_the_deployment_the_template_makes(
    example: tuple[str, Example],
) -> None:
    cluster, rendered = example
    recorded = _recorded(rendered)
    for _, ns, endpoint in _case(cluster):
        replicas = endpoint["replicas"]
        scaled = [
            s
            for s in _in(rendered, "ScaledObject", ns)
            if s["spec"]["scaleTargetRef"]["name"]
            == _template(cluster, ns, endpoint["name"])["metadata"]["name"]
        ]
        if replicas["max"] == replicas["min"]:
            assert not scaled
            continue
        (body,) = scaled
        spec = body["spec"]
        assert spec["scaleTargetRef"]["kind"] == "Deployment"
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (
            replicas["min"],
            replicas["max"],
        )
        (trigger,) = spec["triggers"]
        query = trigger["metadata"]["query"]
        series = query.split("(", 1)[1].split("{", 1)[0]
        assert series in recorded, (series, sorted(recorded))
        assert f'endpoint="{endpoint["name"]}"' in query and f'namespace="{ns}"' in query


def test_each_budget_guards_its_own_endpoint_only(example: tuple[str, Example]) -> None:
    cluster, rendered = example
    pods = {
        (ns, e["name"]): _template(cluster, ns, e["name"])["spec"]["template"]["metadata"]["labels"]
        for _, ns, e in _case(cluster)
    }
    for _, ns, endpoint in _case(cluster):
        budgets = [
            b
            for b in _in(rendered, "PodDisruptionBudget", ns)
            if selects(b["spec"]["selector"], pods[ns, endpoint["name"]])
        ]
        assert len(budgets) == 1
        assert budgets[0]["spec"]["minAvailable"] == endpoint["replicas"]["min"]
        others = [
            labels for key, labels in pods.items() if key != (ns, endpoint["name"]) and key[0] == ns
        ]
        assert not any(selects(budgets[0]["spec"]["selector"], labels) for labels in others)


def test_each_endpoint_has_its_slo_alert(example: tuple[str, Example]) -> None:
    cluster, rendered = example
    alerts = [
        rule
        for body in rendered.by_kind.get("PrometheusRule", [])
        for group in body["spec"]["groups"]
        for rule in group["rules"]
        if rule.get("alert") == "EndpointSLOBurn"
    ]
    for team, ns, endpoint in _case(cluster):
        mine = [a for a in alerts if a["labels"].get("endpoint") == endpoint["name"]]
        assert len(mine) == 1, (ns, endpoint["name"])
        expr = mine[0]["expr"]
        assert f'team="{team}"' in expr and f'namespace="{ns}"' in expr
        assert mine[0]["labels"]["slo"] == endpoint["slo"]["p95"]
        assert "{{ $labels.pool }}" in mine[0]["annotations"]["summary"]
