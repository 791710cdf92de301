"""Our NetworkPolicy evaluator (tests/netpol.py) held to a real analyser: IBM's
network-config-analyzer (`nca`, PyPI network-config-analyzer 2.1.0, tests/nca/requirements.txt;
`make test` installs it into build/nca). An evaluator written by us can share our
misunderstandings; nca is written by others, from the same API, and answers the same question.

Each test builds one set of namespaces, pods and NetworkPolicies, asks both for the connectivity
between every pair of peers on every probed port and protocol, and requires the same answer. nca
is asked through its command line, as a user would (`nca -s SCHEME`, one networkConfig per set,
a `connectivityMap` query each, output format `txt_no_fw_rules`: one line per connected pair,
`src => dst : connections`, nca/FWRules/ConnectivityGraph.py
`get_connections_without_fw_rules_txt_format`), and its connection sets are read as nca writes
them (nca/CoreDS/ConnectivityProperties.py `get_simplified_connections_representation`:
`All connections`, `All but {...}`, or `{protocols:TCP,dst_ports:80-81,90},{...}`).

One modelling difference is kept out of the comparison on purpose: nca takes an `ipBlock` to
mean addresses outside the cluster's pods, as the API reference advises ("These should be
cluster-external IPs, since Pod IPs are ephemeral and unpredictable", concepts/services-networking
/network-policies), while tests/netpol.py, like the e2e suite, also matches pod IPs. Whether a
CNI matches a pod's IP against an ipBlock is left to it (the same page: "it is not defined
whether this happens before or after NetworkPolicy processing"), so the pods here get addresses
that no ipBlock covers, and ipBlocks are compared on addresses outside the pods.

Where nca is stricter than the API server: it refuses `policyTypes: [Egress, Ingress]` ("policyTypes
has invalid value in spec"; nca/Parsers/K8sPolicyYamlParser.py accepts only [Ingress], [Egress]
and [Ingress, Egress]), which Kubernetes accepts in either order (pkg/apis/networking/validation
`ValidateNetworkPolicySpec`: at most two, each Ingress or Egress), and a policy with an `ingress`
section but no Ingress in its policyTypes. gpuplane writes neither; were it to, nca's exit code
fails these tests rather than letting them pass.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, REQUIRE_TOOLS
from tests.netpol import Cluster, External, Peer, Pod
from tests.test_serving_traffic import (
    E2E_CASES,
    E2E_NAMESPACES,
    NAME,
    PROMETHEUS,
    Example,
    _attackers,
    _e2e_pods,
    _gateway_proxy,
    _matches,
)

pytestmark = pytest.mark.slow

ENDPOINT = "gpuplane.dev/endpoint"
NCA = Path(os.environ.get("GPUPLANE_NCA", REPO / "build" / "nca" / "bin" / "nca"))
POD_RANGE = ipaddress.ip_network("100.64.0.0/16")
"""Where the pods here get their addresses: shared address space (RFC 6598), which no rendered
ipBlock covers (asserted), so no answer hangs on whether an ipBlock matches a pod's IP."""
PROTOCOLS = ("TCP", "UDP")


def analyser() -> Path:
    """nca's executable: build/nca (what `make test` installs), $GPUPLANE_NCA, or on PATH."""
    if NCA.is_file():
        return NCA
    found = shutil.which("nca")
    if found is not None:
        return Path(found)
    message = f"network-config-analyzer is not installed at {NCA} (make build/nca/bin/nca)"
    if os.environ.get(REQUIRE_TOOLS) == "1":
        pytest.fail(message)
    pytest.skip(message)


# --- nca's answer ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cube:
    """One of nca's connection cubes: the protocols and destination ports it allows (None: all)."""

    protocols: frozenset[str] | None
    ports: tuple[tuple[int, int], ...] | None

    def allows(self, port: int, protocol: str) -> bool:
        if self.protocols is not None and protocol not in self.protocols:
            return False
        return self.ports is None or any(lo <= port <= hi for lo, hi in self.ports)


@dataclass(frozen=True)
class Connections:
    """A connection set as nca writes it: `All connections`, `All but X` or cubes."""

    cubes: tuple[Cube, ...]
    negated: bool = False

    def allows(self, port: int, protocol: str) -> bool:
        return any(c.allows(port, protocol) for c in self.cubes) != self.negated

    def ports(self, protocol: str) -> set[int]:
        """Every port (1-65535) of `protocol` the set allows."""
        found: set[int] = set()
        for cube in self.cubes:
            if cube.protocols is None or protocol in cube.protocols:
                for lo, hi in cube.ports or ((1, 65535),):
                    found |= set(range(lo, hi + 1))
        return set(range(1, 65536)) - found if self.negated else found


ALL = Connections((Cube(None, None),))


def _ranges(text: str) -> tuple[tuple[int, int], ...]:
    found = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        found.append((int(lo), int(hi or lo)))
    return tuple(found)


def parse_connections(text: str) -> Connections:
    text = text.strip()
    if text == "All connections":
        return ALL
    if text.startswith("All but "):
        return Connections(parse_connections(text[len("All but ") :]).cubes, negated=True)
    cubes = []
    for body in re.findall(r"\{([^{}]*)\}", text):
        fields = dict(item.split(":", 1) for item in re.split(r",(?=[a-z_]+:)", body))
        unknown = set(fields) - {"protocols", "dst_ports"}
        assert not unknown, f"nca wrote a dimension a NetworkPolicy cannot set: {text}"
        protocols = fields.get("protocols")
        ports = fields.get("dst_ports")
        cubes.append(
            Cube(
                frozenset(p.strip() for p in protocols.split(",")) if protocols else None,
                _ranges(ports) if ports else None,
            )
        )
    assert cubes, f"a connection set nca wrote that this reader does not know: {text!r}"
    return Connections(tuple(cubes))


def _ip_range(text: str) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address] | None:
    """An ipBlock node as nca names it (`a-b`, a CIDR or one address); None for a pod."""
    if text.endswith("]"):  # ns/name[Pod]
        return None
    if "/" in text:
        network = ipaddress.IPv4Network(text, strict=False)
        return network[0], network[-1]
    lo, _, hi = text.partition("-")
    return ipaddress.IPv4Address(lo), ipaddress.IPv4Address(hi or lo)


@dataclass
class Map:
    """nca's connectivity map: its nodes are pods (`ns/name[Pod]`) and address ranges."""

    pairs: dict[tuple[str, str], list[Connections]] = field(default_factory=dict)
    ranges: dict[str, tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]] = field(
        default_factory=dict
    )

    def add(self, src: str, dst: str, connections: Connections) -> None:
        self.pairs.setdefault((src, dst), []).append(connections)
        for node in (src, dst):
            span = _ip_range(node)
            if span is not None:
                self.ranges[node] = span

    def _nodes(self, peer: Peer) -> list[str]:
        if isinstance(peer, Pod):
            return [f"{peer.namespace}/{peer.name}[Pod]"]
        address = ipaddress.IPv4Address(peer.ip)
        return [node for node, (lo, hi) in self.ranges.items() if lo <= address <= hi]

    def connections(self, src: Peer, dst: Peer) -> list[Connections]:
        return [
            c
            for s in self._nodes(src)
            for d in self._nodes(dst)
            for c in self.pairs.get((s, d), [])
        ]

    def allows(self, src: Peer, dst: Peer, port: int, protocol: str = "TCP") -> bool:
        return any(c.allows(port, protocol) for c in self.connections(src, dst))

    def ports(self, src: Peer, dst: Peer, protocol: str = "TCP") -> set[int]:
        """Every port (1-65535) of `protocol` nca lets `src` open on `dst`."""
        return set().union(*(c.ports(protocol) for c in self.connections(src, dst)))


LINE = re.compile(r"^(\S+) => (\S+) : (.+)$")


def _pod_object(pod: Pod) -> dict[str, Any]:
    ports = [
        {"name": name, "containerPort": number, "protocol": protocol}
        for name, (number, protocol) in sorted(pod.ports.items())
    ]
    container: dict[str, Any] = {"name": "main", "image": "example"}
    if ports:
        container["ports"] = ports
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "labels": dict(pod.labels)},
        "spec": {"containers": [container]},
        "status": {"podIP": pod.ip},
    }


def _namespace_object(name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _dump_list(path: Path, kind: str, items: Iterable[Mapping[str, Any]]) -> str:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": kind, "items": list(items)}))
    return str(path)


@pytest.fixture
def nca() -> Path:
    return analyser()


def nca_maps(nca: Path, folder: Path, networks: Mapping[str, Cluster]) -> dict[str, Map]:
    """One run of nca over several networks (a scheme with a networkConfig and a
    connectivityMap query each); each network's map."""
    configs, queries = [], []
    for index, net in enumerate(networks.values()):
        namespaces = (_namespace_object(n, labels) for n, labels in net.namespaces.items())
        policies = [
            {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", **p}
            for p in net.policies
        ]
        configs.append(
            {
                "name": f"net{index}",
                "namespaceList": _dump_list(
                    folder / f"ns{index}.yaml", "NamespaceList", namespaces
                ),
                "podList": _dump_list(
                    folder / f"pods{index}.yaml", "PodList", map(_pod_object, net.pods)
                ),
                "networkPolicyList": [
                    _dump_list(folder / f"policies{index}.yaml", "NetworkPolicyList", policies)
                ],
            }
        )
        queries.append(
            {
                "name": f"map{index}",
                "connectivityMap": [f"net{index}"],
                "outputConfiguration": {
                    "outputFormat": "txt_no_fw_rules",
                    "outputPath": str(folder / f"map{index}.txt"),
                },
            }
        )
    scheme = folder / "scheme.yaml"
    scheme.write_text(yaml.safe_dump({"networkConfigList": configs, "queries": queries}))
    result = subprocess.run(
        [str(nca), "--scheme", str(scheme)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Ignoring" not in result.stdout + result.stderr, result.stdout + result.stderr
    maps = {}
    for index, name in enumerate(networks):
        answer = Map()
        for line in (folder / f"map{index}.txt").read_text().splitlines():
            match = LINE.match(line)
            if match:
                answer.add(match[1], match[2], parse_connections(match[3]))
        maps[name] = answer
    return maps


# --- the reader, on nca's own strings -----------------------------------------------------------


def test_the_reader_understands_ncas_connection_sets() -> None:
    tcp_range = parse_connections("{protocols:TCP,dst_ports:1-79,81-65535}")
    assert tcp_range.allows(79, "TCP") and tcp_range.allows(81, "TCP")
    assert not tcp_range.allows(80, "TCP") and not tcp_range.allows(79, "UDP")
    both = parse_connections("{protocols:TCP, UDP,dst_ports:53},{protocols:SCTP}")
    assert both.allows(53, "UDP") and both.allows(9, "SCTP") and not both.allows(54, "TCP")
    but = parse_connections("All but {protocols:UDP,dst_ports:53}")
    assert but.allows(53, "TCP") and not but.allows(53, "UDP") and but.allows(54, "UDP")
    assert parse_connections("All connections").allows(1, "UDP")
    assert but.ports("UDP") == set(range(1, 65536)) - {53} and both.ports("TCP") == {53}


# --- the truth tables of tests/test_serving_traffic.py, asked of nca too ----------------------------


def _e2e_network(case: str) -> Cluster:
    """A case of E2E_CASES with the e2e pods moved to POD_RANGE (the ipBlock case below)."""
    policies, _, _, _ = E2E_CASES[case]
    pods = [
        Pod(p.namespace, p.name, p.labels, str(POD_RANGE[index + 1]), p.ports)
        for index, p in enumerate(_e2e_pods())
    ]
    return Cluster({ns: {NAME: ns} for ns in E2E_NAMESPACES}, pods, policies)


def test_nca_and_the_evaluator_agree_on_kubernetes_truth_tables(nca: Path, tmp_path: Path) -> None:
    """Every case, every pair of the e2e pods, on the case's port and protocol: nca, the
    evaluator and the e2e suite's expectation say the same. The CIDR case is asked on addresses
    outside the pods (the module's docstring says why)."""
    cidr_case = "egress to a CIDR block with an except"
    cases = [c for c in sorted(E2E_CASES) if c != cidr_case]
    maps = nca_maps(nca, tmp_path, {c: _e2e_network(c) for c in cases})
    wrong = []
    for case in cases:
        _, port, protocol, expectations = E2E_CASES[case]
        net = _e2e_network(case)
        for src, dst in itertools.permutations(net.pods, 2):
            expected = True
            for src_pattern, dst_pattern, value in expectations:
                if _matches(src_pattern, src) and _matches(dst_pattern, dst):
                    expected = value
            ours = net.allows(src, dst, port, protocol)
            theirs = maps[case].allows(src, dst, port, protocol)
            if not ours == theirs == expected:
                wrong.append(
                    (case, src.name, f"{dst.namespace}/{dst.name}", expected, ours, theirs)
                )
    assert not wrong, "(case, src, dst, e2e, evaluator, nca):\n" + "\n".join(map(str, wrong))


def test_nca_and_the_evaluator_agree_on_an_ip_block_with_an_except(
    nca: Path, tmp_path: Path
) -> None:
    policies = [
        {
            "metadata": {"name": "p", "namespace": "x"},
            "spec": {
                "podSelector": {"matchLabels": {"pod": "a"}},
                "policyTypes": ["Ingress", "Egress"],
                "egress": [
                    {"to": [{"ipBlock": {"cidr": "10.0.0.0/24", "except": ["10.0.0.4/32"]}}]}
                ],
                "ingress": [{"from": [{"ipBlock": {"cidr": "192.168.0.0/16"}}]}],
            },
        }
    ]
    pods = _e2e_network("endPort range").pods
    net = Cluster({ns: {NAME: ns} for ns in E2E_NAMESPACES}, pods, policies)
    (answer,) = nca_maps(nca, tmp_path, {"cidr": net}).values()
    (a,) = (p for p in net.pods if (p.namespace, p.name) == ("x", "a"))
    outside = [
        External(ip)
        for ip in ("10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.1.1", "192.168.4.5", "172.16.0.1")
    ]
    for peer in outside:
        for port in (80, 81):
            assert net.allows(a, peer, port) == answer.allows(a, peer, port), (peer, port)
            assert net.allows(peer, a, port) == answer.allows(peer, a, port), (peer, port)
    assert [net.allows(a, p, 80) for p in outside] == [True, False, True, False, False, False]
    assert [net.allows(p, a, 80) for p in outside] == [False] * 4 + [True, False]
    for other in net.pods:
        if other != a:
            assert not answer.allows(a, other, 80) and not net.allows(a, other, 80), other.name


# --- the example platform, as rendered ------------------------------------------------------------


@dataclass(frozen=True)
class Served:
    """An endpoint's pod, as its rendered Deployment's template makes it, and the two ports the
    platform's traffic needs: the one its HTTPRoute's backend reaches through the Service, and
    the one its PodMonitor keeps."""

    pod: Pod
    serving: int
    metrics: int


def _container_port(pod: Pod, port: int | str) -> int:
    return pod.ports[port][0] if isinstance(port, str) else port


def _metrics_port(monitor: Mapping[str, Any], pod: Pod) -> int:
    (scrape,) = monitor["spec"]["podMetricsEndpoints"]
    if "port" in scrape:
        return _container_port(pod, scrape["port"])
    (keep,) = (
        r
        for r in scrape.get("relabelings") or []
        if r.get("action") == "keep"
        and r.get("sourceLabels") == ["__meta_kubernetes_pod_container_port_number"]
    )
    return int(keep["regex"])


def _served(example: Example, addresses: Iterator[str]) -> list[Served]:
    services = {
        (body["metadata"]["namespace"], body["metadata"]["name"]): body
        for body in example.by_kind.get("Service", [])
    }
    monitors = {
        (m["metadata"]["namespace"], m["spec"]["selector"]["matchLabels"][ENDPOINT]): m
        for m in example.by_kind.get("PodMonitor", [])
        if ENDPOINT in m["spec"]["selector"].get("matchLabels", {})
    }
    routes = {
        (r["metadata"]["namespace"], r["metadata"]["labels"][ENDPOINT]): r
        for r in example.by_kind.get("HTTPRoute", [])
    }
    found = []
    for deployment in example.by_kind.get("Deployment", []):
        template = deployment["spec"]["template"]
        labels = template["metadata"]["labels"]
        if ENDPOINT not in labels:
            continue
        ns = deployment["metadata"]["namespace"]
        ports = {
            p["name"]: (p["containerPort"], p.get("protocol", "TCP"))
            for c in template["spec"]["containers"]
            for p in c.get("ports") or []
            if "name" in p
        }
        pod = Pod(ns, f"{deployment['metadata']['name']}-0", labels, next(addresses), ports)
        ((backend,),) = (
            rule["backendRefs"] for rule in routes[ns, labels[ENDPOINT]]["spec"]["rules"]
        )
        service = services[ns, backend["name"]]
        (target,) = (
            p["targetPort"] for p in service["spec"]["ports"] if p["port"] == backend["port"]
        )
        found.append(
            Served(
                pod,
                _container_port(pod, target),
                _metrics_port(monitors[ns, labels[ENDPOINT]], pod),
            )
        )
    return found


@functools.cache
def _example_network(cluster: str) -> tuple[Cluster, list[Served], Pod, Pod]:
    """The rendered cluster's namespaces and NetworkPolicies, with: a pod per endpoint, a
    neighbour beside it, a pod in every team namespace, the gateway's proxy, Prometheus, and
    tests/test_serving_traffic.py's peers that must reach nothing (another Gateway's proxy, the
    gateway's controller, Grafana, another Prometheus, Argo, Kueue, CoreDNS, and in every other
    namespace an impostor that copies the proxy's and Prometheus's labels). Every pod gets an
    address in POD_RANGE."""
    example = Example(cluster)
    addresses = (str(a) for a in POD_RANGE.hosts())
    served = _served(example, addresses)
    proxy = replace(_gateway_proxy(), ip=next(addresses))
    prometheus = Pod("monitoring", "prometheus-0", PROMETHEUS, next(addresses))
    pods: dict[tuple[str, str], Pod] = {}
    for peer in (
        *(s.pod for s in served),
        *(Pod(s.pod.namespace, "client", {"app": "batch-client"}, "") for s in served),
        *(
            Pod(ns, "notebook", {"app": "notebook"}, "")
            for ns, labels in sorted(example.namespaces.items())
            if "gpuplane.dev/team" in labels
        ),
        proxy,
        prometheus,
        *_attackers(example, ""),  # "": impostors in every namespace but the platform's two
    ):
        if not peer.ip or ipaddress.ip_address(peer.ip) not in POD_RANGE:
            peer = replace(peer, ip=next(addresses))
        pods.setdefault((peer.namespace, peer.name), peer)
    return (
        Cluster(example.namespaces, list(pods.values()), example.policies()),
        served,
        proxy,
        prometheus,
    )


def _ip_blocks(policies: Iterable[Mapping[str, Any]]) -> set[str]:
    return {
        cidr
        for policy in policies
        for key, peers_key in (("ingress", "from"), ("egress", "to"))
        for rule in policy["spec"].get(key) or []
        for peer in rule.get(peers_key) or []
        if "ipBlock" in peer
        for cidr in (peer["ipBlock"]["cidr"], *(peer["ipBlock"].get("except") or []))
    }


def _probed_ports(net: Cluster, served: Iterable[Served]) -> set[int]:
    """Well-known ports, and every port a policy or an endpoint names with its neighbours."""
    named = {s.serving for s in served} | {s.metrics for s in served}
    for policy in net.policies:
        for key in ("ingress", "egress"):
            for rule in policy["spec"].get(key) or []:
                named |= {
                    e["port"] for e in rule.get("ports") or [] if isinstance(e.get("port"), int)
                }
    return {1, 22, 80, 443, 8080, 9090, 65535} | {p + d for p in named for d in (-1, 0, 1)}


def _widened(net: Cluster) -> Cluster:
    """The network with each endpoint policy's ports removed: open on every port."""
    policies = copy.deepcopy(list(net.policies))
    for policy in policies:
        if policy["metadata"]["name"].startswith("allow-endpoint-"):
            for rule in policy["spec"]["ingress"]:
                del rule["ports"]
    return Cluster(net.namespaces, net.pods, policies)


CLUSTERS = ("prod-east", "staging-west")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_nca_and_the_evaluator_agree_on_the_rendered_example(
    nca: Path, cluster: str, tmp_path: Path
) -> None:
    """Every ordered pair of peers (the pods above, and addresses outside them: a public one and
    one in every rendered ipBlock), every probed port, TCP and UDP: the same answer from both."""
    net, served, _, _ = _example_network(cluster)
    blocks = _ip_blocks(net.policies)
    assert blocks, "the example's policies name ipBlocks: the comparison covers them"
    assert not any(ipaddress.ip_network(b).overlaps(POD_RANGE) for b in blocks)
    outside = [External("203.0.113.7")] + [
        External(str(ipaddress.ip_network(b)[1])) for b in sorted(blocks)
    ]
    probed = sorted(_probed_ports(net, served))
    (answer,) = nca_maps(nca, tmp_path, {cluster: net}).values()
    wrong = []
    peers: list[Peer] = [*net.pods, *outside]
    for src, dst in itertools.permutations(peers, 2):
        if isinstance(src, External) and isinstance(dst, External):
            continue
        for protocol, port in itertools.product(PROTOCOLS, probed):
            ours = net.allows(src, dst, port, protocol)
            if ours != answer.allows(src, dst, port, protocol):
                wrong.append((_name(src), _name(dst), port, protocol, ours))
    assert not wrong, "(src, dst, port, protocol, evaluator) where nca differs:\n" + "\n".join(
        map(str, wrong[:40])
    )


def _name(peer: Peer) -> str:
    return f"{peer.namespace}/{peer.name}" if isinstance(peer, Pod) else peer.ip


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_nca_says_what_the_issue_requires(nca: Path, cluster: str, tmp_path: Path) -> None:
    """On nca's answer, every port of both protocols: the gateway's proxy reaches each endpoint
    on its serving port only, Prometheus on its metrics port only, and nothing else from outside
    a team namespace reaches any of its pods. The same check on the policies with an endpoint's
    ports removed finds the gateway on every port: it can fail."""
    net, served, proxy, prometheus = _example_network(cluster)
    assert served, "every example cluster serves an endpoint"
    maps = nca_maps(nca, tmp_path, {"rendered": net, "widened": _widened(net)})
    answer = maps["rendered"]
    for s in served:
        assert answer.ports(proxy, s.pod) == {s.serving}, s.pod.namespace
        assert answer.ports(prometheus, s.pod) == {s.metrics}, s.pod.namespace
        assert not answer.ports(proxy, s.pod, "UDP") and not answer.ports(prometheus, s.pod, "UDP")
        assert len(maps["widened"].ports(proxy, s.pod)) == 65535, "the widened policy is seen"
    allowed = {(_name(peer), _name(s.pod)) for s in served for peer in (proxy, prometheus)}
    team = [p for p in net.pods if "gpuplane.dev/team" in net.namespaces[p.namespace]]
    outsiders: list[Peer] = [External("203.0.113.7"), *net.pods]
    for victim in team:
        for peer in outsiders:
            if isinstance(peer, Pod) and peer.namespace == victim.namespace:
                continue
            if (_name(peer), _name(victim)) in allowed:
                continue
            assert not answer.connections(peer, victim), (_name(peer), _name(victim))
