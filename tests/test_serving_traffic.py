"""Traffic in: the rendered Gateway, routes, Services and NetworkPolicies connect a client at the
gateway to each example endpoint's pods and Prometheus to their metrics, and nothing else.

Evaluated, not read: tests/netpol.py implements the NetworkPolicy semantics and is first held to
Kubernetes' own truth tables (kubernetes/kubernetes test/e2e/network/netpol/network_policy.go,
replayed as data below). The peers' labels are written here from upstream source, not from
gpuplane's constants:
- Envoy Gateway v1.9.0 runs each Gateway's Envoy proxy in its controller's namespace
  (internal/infrastructure/kubernetes/proxy_infra.go `GetResourceNamespace`) labelled
  app.kubernetes.io/{name: envoy, component: proxy, managed-by: envoy-gateway}
  (proxy/resource.go `EnvoyAppLabel`) and gateway.envoyproxy.io/owning-gateway-{name,namespace}
  (internal/gatewayapi/helpers.go); its controller is gateway.envoyproxy.io/gatewayclass-controller
  (api/v1alpha1/envoygateway_types.go);
- Prometheus Operator v0.86.2 labels a Prometheus's pods app.kubernetes.io/name: prometheus,
  app.kubernetes.io/instance and operator.prometheus.io/name: <its name>, prometheus: <its name>
  (pkg/prometheus/server/operator.go `makeSelectorLabels`); kube-prometheus-stack 79.6.1 names it
  kube-prometheus-stack-prometheus (templates/_helpers.tpl `prometheus.crname`).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.netpol import Cluster, External, Pod, selects

pytestmark = pytest.mark.slow

RENDERED = REPO / "rendered"
NAME = "kubernetes.io/metadata.name"

# --- the evaluator against Kubernetes' truth tables ----------------------------------------------

E2E_NAMESPACES = ("x", "y", "z")
E2E_PODS = ("a", "b", "c")


def _e2e_pods() -> list[Pod]:
    """The e2e model: pods a, b, c in namespaces x, y, z, labelled pod=<name>, serving 80 and 81
    over TCP and UDP on ports named serve-<port>-<protocol> (test/e2e/network/netpol/model.go)."""
    pods = []
    for index, (ns, name) in enumerate(itertools.product(E2E_NAMESPACES, E2E_PODS)):
        ports = {
            f"serve-{port}-{protocol.lower()}": (port, protocol)
            for port in (80, 81)
            for protocol in ("TCP", "UDP")
        }
        pods.append(Pod(ns, name, {"pod": name}, f"10.0.0.{index + 1}", ports))
    return pods


def _policy(ns: str, spec: dict[str, Any], name: str = "p") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def _ns(name: str) -> dict[str, Any]:
    return {"matchLabels": {NAME: name}}


def _matches(pattern: str, pod: Pod) -> bool:
    ns, name = pattern.split("/")
    return ns in ("*", pod.namespace) and name in ("*", pod.name)


# Each case: its policies, the port and protocol probed, and the reachability the e2e test
# expects, as the test writes it: everything reachable, then its Expect* calls in order.
E2E_CASES: dict[str, tuple[list[dict[str, Any]], int, str, list[tuple[str, str, bool]]]] = {
    "default-deny-ingress": (
        [_policy("x", {"podSelector": {}, "policyTypes": ["Ingress"]})],
        80,
        "TCP",
        [("*/*", "x/*", False)],
    ),
    "default-deny-all": (
        [_policy("x", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})],
        80,
        "TCP",
        [("*/*", "x/*", False), ("x/*", "*/*", False)],
    ),
    "allow from pods within server namespace based on PodSelector": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}],
                },
            )
        ],
        80,
        "TCP",
        [("*/*", "x/a", False), ("x/b", "x/a", True)],
    ),
    "allow ingress traffic for a target": (
        [
            _policy("x", {"podSelector": {}, "policyTypes": ["Ingress"]}, "deny-all"),
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"from": [{"podSelector": {}, "namespaceSelector": {}}]}],
                },
                "allow-all-to-a",
            ),
        ],
        80,
        "TCP",
        [("*/*", "x/a", True), ("*/*", "x/b", False), ("*/*", "x/c", False)],
    ),
    "allow only from a different namespace, based on NamespaceSelector": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"from": [{"namespaceSelector": _ns("y")}]}],
                },
            )
        ],
        80,
        "TCP",
        [("x/*", "x/a", False), ("z/*", "x/a", False)],
    ),
    "NamespaceSelector with MatchExpressions": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [
                        {
                            "from": [
                                {
                                    "namespaceSelector": {
                                        "matchExpressions": [
                                            {"key": NAME, "operator": "In", "values": ["y"]}
                                        ]
                                    }
                                }
                            ]
                        }
                    ],
                },
            )
        ],
        80,
        "TCP",
        [("x/*", "x/a", False), ("z/*", "x/a", False)],
    ),
    "PodSelector or NamespaceSelector": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [
                        {
                            "from": [
                                {
                                    "namespaceSelector": {
                                        "matchExpressions": [
                                            {"key": NAME, "operator": "NotIn", "values": ["x"]}
                                        ]
                                    }
                                },
                                {"podSelector": {"matchLabels": {"pod": "b"}}},
                            ]
                        }
                    ],
                },
            )
        ],
        80,
        "TCP",
        [("x/a", "x/a", False), ("x/c", "x/a", False)],
    ),
    "PodSelector and NamespaceSelector": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [
                        {
                            "from": [
                                {
                                    "namespaceSelector": {
                                        "matchExpressions": [
                                            {"key": NAME, "operator": "NotIn", "values": ["x"]}
                                        ]
                                    },
                                    "podSelector": {"matchLabels": {"pod": "b"}},
                                }
                            ]
                        }
                    ],
                },
            )
        ],
        80,
        "TCP",
        [("*/*", "x/a", False), ("y/b", "x/a", True), ("z/b", "x/a", True)],
    ),
    "ports: ingress on 81 only, probed on 80": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [
                        {"from": [{"namespaceSelector": _ns("y")}], "ports": [{"port": 81}]}
                    ],
                },
            )
        ],
        80,
        "TCP",
        [("*/*", "x/a", False)],
    ),
    "ports: ingress on 81 only, probed on 81": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [
                        {"from": [{"namespaceSelector": _ns("y")}], "ports": [{"port": 81}]}
                    ],
                },
            )
        ],
        81,
        "TCP",
        [("x/*", "x/a", False), ("z/*", "x/a", False)],
    ),
    "one named port, probed on it": (
        [
            _policy(
                "x",
                {
                    "podSelector": {},
                    "ingress": [{"ports": [{"port": "serve-81-tcp"}]}],
                    "policyTypes": ["Ingress"],
                },
            )
        ],
        81,
        "TCP",
        [],
    ),
    "one named port, probed on another": (
        [
            _policy(
                "x",
                {
                    "podSelector": {},
                    "ingress": [{"ports": [{"port": "serve-81-tcp"}]}],
                    "policyTypes": ["Ingress"],
                },
            )
        ],
        80,
        "TCP",
        [("*/*", "x/*", False)],
    ),
    "any port of a protocol: TCP allowed": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"ports": [{"protocol": "TCP"}]}],
                },
            )
        ],
        80,
        "TCP",
        [],
    ),
    "any port of a protocol: UDP denied": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"ports": [{"protocol": "TCP"}]}],
                },
            )
        ],
        80,
        "UDP",
        [("*/*", "x/a", False)],
    ),
    "endPort range": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [
                        {
                            "from": [{"namespaceSelector": _ns("y")}],
                            "ports": [{"port": 80, "endPort": 81}],
                        }
                    ],
                },
            )
        ],
        81,
        "TCP",
        [("*/*", "x/a", False), ("y/*", "x/a", True)],
    ),
    "stacked policies with overlapping podSelectors: union": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"from": [{"namespaceSelector": _ns("y")}]}],
                },
                "from-y",
            ),
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "ingress": [{"from": [{"namespaceSelector": _ns("z")}]}],
                },
                "from-z",
            ),
        ],
        80,
        "TCP",
        [("x/*", "x/a", False)],
    ),
    "egress denied on the client side even where the server allows it": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "policyTypes": ["Egress"],
                    "egress": [
                        {
                            "to": [
                                {
                                    "namespaceSelector": _ns("y"),
                                    "podSelector": {"matchLabels": {"pod": "a"}},
                                }
                            ]
                        }
                    ],
                },
            ),
            _policy("z", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]}),
        ],
        80,
        "TCP",
        [("x/a", "*/*", False), ("x/a", "y/a", True)],
    ),
    "egress to a CIDR block with an except": (
        [
            _policy(
                "x",
                {
                    "podSelector": {"matchLabels": {"pod": "a"}},
                    "policyTypes": ["Egress"],
                    "egress": [
                        {"to": [{"ipBlock": {"cidr": "10.0.0.0/24", "except": ["10.0.0.4/32"]}}]}
                    ],
                },
            )
        ],
        80,
        "TCP",
        [("x/a", "y/a", False)],  # y/a is 10.0.0.4 in _e2e_pods
    ),
}


@pytest.mark.parametrize("case", sorted(E2E_CASES))
def test_the_evaluator_agrees_with_kubernetes_truth_tables(case: str) -> None:
    policies, port, protocol, expectations = E2E_CASES[case]
    pods = _e2e_pods()
    cluster = Cluster({ns: {NAME: ns} for ns in E2E_NAMESPACES}, pods, policies)
    for src, dst in itertools.product(pods, pods):
        if src == dst:
            continue  # the e2e suite ignores loopback (ignoreLoopback)
        expected = True
        for src_pattern, dst_pattern, value in expectations:
            if _matches(src_pattern, src) and _matches(dst_pattern, dst):
                expected = value
        assert cluster.allows(src, dst, port, protocol) is expected, (case, src.name, dst)


def test_an_ip_block_matches_only_addresses_not_pods_outside_it() -> None:
    policy = _policy(
        "x",
        {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "192.168.0.0/16"}}]}]},
    )
    pods = _e2e_pods()
    cluster = Cluster({ns: {NAME: ns} for ns in E2E_NAMESPACES}, pods, [policy])
    assert cluster.allows(External("192.168.4.5"), pods[0], 80)
    assert not cluster.allows(External("172.16.0.1"), pods[0], 80)
    assert not cluster.allows(pods[4], pods[0], 80)


# --- the example platform, as rendered -----------------------------------------------------------


def _documents(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.rglob("*.yaml")):
        for body in yaml.safe_load_all(path.read_text()):
            if isinstance(body, dict) and "kind" in body and body["kind"] != "Kustomization":
                yield body


ENVOY_PROXY = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
PROMETHEUS = {
    "app.kubernetes.io/name": "prometheus",
    "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus",
    "app.kubernetes.io/managed-by": "prometheus-operator",
    "operator.prometheus.io/name": "kube-prometheus-stack-prometheus",
    "prometheus": "kube-prometheus-stack-prometheus",
}
ENDPOINT = "gpuplane.dev/endpoint"


class Example:
    """One rendered cluster: its namespaces, policies, Gateway, routes and Services."""

    def __init__(self, cluster: str) -> None:
        objects = list(_documents(RENDERED / cluster))
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        for body in objects:
            self.by_kind.setdefault(body["kind"], []).append(body)
        self.namespaces = {
            ns["metadata"]["name"]: {
                **ns["metadata"].get("labels", {}),
                NAME: ns["metadata"]["name"],
            }
            for ns in self.by_kind.get("Namespace", [])
        }
        for name in ("envoy-gateway-system", "monitoring", "argo", "kueue-system", "kube-system"):
            self.namespaces.setdefault(name, {NAME: name})

    def policies(self) -> list[dict[str, Any]]:
        return self.by_kind.get("NetworkPolicy", [])

    def gateway(self) -> dict[str, Any]:
        (gateway,) = self.by_kind["Gateway"]
        return gateway


def _gateway_proxy(name: str = "gpuplane-inference", ip: str = "10.1.0.1") -> Pod:
    labels = {
        **ENVOY_PROXY,
        "gateway.envoyproxy.io/owning-gateway-name": name,
        "gateway.envoyproxy.io/owning-gateway-namespace": "envoy-gateway-system",
    }
    return Pod("envoy-gateway-system", f"envoy-{name}", labels, ip)


def _endpoints(example: Example) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(HTTPRoute, its Service) per endpoint."""
    services = {
        (s["metadata"]["namespace"], s["metadata"]["name"]): s for s in example.by_kind["Service"]
    }
    found = []
    for route in example.by_kind["HTTPRoute"]:
        ns = route["metadata"]["namespace"]
        (rule,) = route["spec"]["rules"]
        (backend,) = rule["backendRefs"]
        found.append((route, services[ns, backend["name"]]))
    return found


def _attackers(example: Example, ns: str) -> list[Pod]:
    """Every peer that must reach no port of an endpoint in `ns` of `team`."""
    found = [
        _gateway_proxy("another-gateway", "10.1.0.9"),
        Pod(
            "envoy-gateway-system",
            "envoy-gateway",
            {"app.kubernetes.io/name": "gateway-helm", "control-plane": "envoy-gateway"},
            "10.1.0.2",
        ),
        Pod("monitoring", "grafana", {"app.kubernetes.io/name": "grafana"}, "10.2.0.2"),
        Pod("monitoring", "prometheus-other", {"app.kubernetes.io/name": "prometheus"}, "10.2.0.3"),
        Pod("argo", "workflow", {"workflows.argoproj.io/workflow": "x"}, "10.3.0.1"),
        Pod("kueue-system", "kueue", {"control-plane": "controller-manager"}, "10.3.0.2"),
        Pod("kube-system", "coredns", {"k8s-app": "kube-dns"}, "10.3.0.3"),
        # a pod of another namespace that copies every label a platform pod carries
        *(
            Pod(other, f"impostor-{i}", {**ENVOY_PROXY, **PROMETHEUS}, f"10.4.{i}.1")
            for i, other in enumerate(sorted(example.namespaces))
            if other not in (ns, "envoy-gateway-system", "monitoring")
        ),
    ]
    return found


CLUSTERS = ("prod-east", "staging-west")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_gateway_and_prometheus_reach_each_endpoint_on_its_ports_only(cluster: str) -> None:
    example = Example(cluster)
    endpoints = _endpoints(example)
    assert endpoints, "every example cluster serves an endpoint"
    probed = {1, 22, 80, 443, 8080, 9090, 65535}
    for policy in example.policies():
        for rule in policy["spec"].get("ingress") or []:
            for entry in rule.get("ports") or []:
                if isinstance(entry.get("port"), int):
                    probed |= {entry["port"] - 1, entry["port"], entry["port"] + 1}
    for route, service in endpoints:
        ns = route["metadata"]["namespace"]
        ports = {p["name"]: p["targetPort"] for p in service["spec"]["ports"]}
        serving, metrics = ports["http"], ports.get("metrics", ports["http"])
        pod = Pod(ns, "server-0", dict(service["spec"]["selector"]), "10.9.0.1")
        neighbour = Pod(ns, "client", {"app": "batch-client"}, "10.9.0.2")
        prometheus = Pod("monitoring", "prometheus-0", PROMETHEUS, "10.2.0.1")
        pods = [pod, neighbour, prometheus, _gateway_proxy(), *_attackers(example, ns)]
        net = Cluster(example.namespaces, pods, example.policies())
        assert net.reachable_ports(_gateway_proxy(), pod, probed) == {serving}, ns
        assert net.reachable_ports(prometheus, pod, probed) == {metrics}, ns
        assert net.reachable_ports(neighbour, pod, probed) == probed, "same namespace: every port"
        for attacker in _attackers(example, ns):
            assert not net.reachable_ports(attacker, pod, probed), (ns, attacker.name)
        assert not net.reachable_ports(External("203.0.113.7"), pod, probed)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_other_namespaces_of_teams_are_reached_by_nothing_outside(cluster: str) -> None:
    """The endpoint policies open the endpoint's pods only: a team namespace's other pods, and
    every namespace without an endpoint, still take nothing from the gateway or Prometheus."""
    example = Example(cluster)
    team_namespaces = [
        n for n, labels in example.namespaces.items() if "gpuplane.dev/team" in labels
    ]
    for ns in team_namespaces:
        victim = Pod(ns, "other", {"app": "notebook"}, "10.9.1.1")
        proxy, prometheus = _gateway_proxy(), Pod("monitoring", "p", PROMETHEUS, "10.2.0.1")
        net = Cluster(example.namespaces, [victim, proxy, prometheus], example.policies())
        assert not net.reachable_ports(proxy, victim, range(1, 65536, 997)), ns
        assert not net.reachable_ports(prometheus, victim, {8000, 8002, 30000, 9090}), ns


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_route_connects_the_gateway_to_the_endpoints_service(cluster: str) -> None:
    example = Example(cluster)
    (gateway_class,) = example.by_kind["GatewayClass"]
    assert (
        gateway_class["spec"]["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
    )
    gateway = example.gateway()
    assert gateway["spec"]["gatewayClassName"] == gateway_class["metadata"]["name"]
    # Envoy Gateway runs the proxies in its own namespace and labels them with the Gateway's name
    assert gateway["metadata"]["namespace"] == "envoy-gateway-system"
    assert (
        gateway["metadata"]["name"]
        == _gateway_proxy().labels["gateway.envoyproxy.io/owning-gateway-name"]
    )
    for route, service in _endpoints(example):
        ns = route["metadata"]["namespace"]
        (parent,) = route["spec"]["parentRefs"]
        assert (parent["namespace"], parent["name"]) == (
            gateway["metadata"]["namespace"],
            gateway["metadata"]["name"],
        )
        (host,) = route["spec"]["hostnames"]
        admitting = [
            listener
            for listener in gateway["spec"]["listeners"]
            if _host_matches(listener["hostname"], host)
            and selects(listener["allowedRoutes"]["namespaces"]["selector"], example.namespaces[ns])
        ]
        assert admitting, (ns, host)
        (rule,) = route["spec"]["rules"]
        (backend,) = rule["backendRefs"]
        assert backend["port"] in {p["port"] for p in service["spec"]["ports"]}
        assert service["spec"]["selector"] == {ENDPOINT: route["metadata"]["labels"][ENDPOINT]}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_listener_admits_no_other_teams_routes(cluster: str) -> None:
    example = Example(cluster)
    for listener in example.gateway()["spec"]["listeners"]:
        selector = listener["allowedRoutes"]["namespaces"]["selector"]
        admitted = {n for n, labels in example.namespaces.items() if selects(selector, labels)}
        assert admitted, listener["name"]
        teams = {example.namespaces[n]["gpuplane.dev/team"] for n in admitted}
        assert len(teams) == 1, listener["name"]
        assert {example.namespaces[n]["gpuplane.dev/purpose"] for n in admitted} == {"inference"}


def _host_matches(listener: str, host: str) -> bool:
    """Gateway API hostname matching: `*.d` matches any name ending in `.d`."""
    if listener.startswith("*."):
        return host.endswith(listener[1:]) and host != listener[2:]
    return host == listener


def test_the_evaluator_notices_a_wider_policy() -> None:
    """The endpoint check fails when a rendered policy opens more than it should."""
    example = Example("prod-east")
    route, service = _endpoints(example)[0]
    ns = route["metadata"]["namespace"]
    policies = copy.deepcopy(example.policies())
    for policy in policies:
        if policy["metadata"]["namespace"] == ns and policy["metadata"]["name"].startswith(
            "allow-endpoint-"
        ):
            del policy["spec"]["ingress"][0]["ports"]
    pod = Pod(ns, "server-0", dict(service["spec"]["selector"]), "10.9.0.1")
    net = Cluster(example.namespaces, [pod, _gateway_proxy()], policies)
    assert net.reachable_ports(_gateway_proxy(), pod, {22, 8000, 9090}) == {22, 8000, 9090}
