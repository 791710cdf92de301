"""A NetworkPolicy evaluator for the tests: Kubernetes' semantics (networking.k8s.io/v1), so that
the serving tests check what the rendered policies *allow*, never what they are named.

The semantics, from the API reference (k8s.io/api networking/v1 types.go) and the e2e suite
that defines them (kubernetes/kubernetes test/e2e/network/netpol, whose truth tables
tests/test_serving_traffic.py replays as data):

- a pod is isolated for a direction when any policy of its namespace selects it
  (`spec.podSelector`) with that direction in `policyTypes` (absent: Ingress, plus Egress when
  the policy has an `egress` section); an isolated pod takes the union of the rules of every
  policy selecting it for that direction; a pod no policy isolates allows everything;
- a rule with no `from`/`to` matches every peer, with no `ports` every port;
- a peer is an `ipBlock` (cidr, less its `except`s), or pods: `namespaceSelector` and
  `podSelector` together (both must match), `namespaceSelector` alone (every pod of the
  matching namespaces), `podSelector` alone (pods of the policy's own namespace);
- a port is a number (with `endPort`: the range), a name (the destination pod's container
  port of that name and protocol), or absent (every port of the protocol); protocol default TCP;
- a connection happens only when the source's egress and the destination's ingress both allow it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from renderer.admission.apiserver.rbac import selector_matches


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    labels: Mapping[str, str]
    ip: str
    ports: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Named container ports: name -> (number, protocol)."""


@dataclass(frozen=True)
class External:
    """A peer outside the cluster's pods: only ipBlocks can match it."""

    ip: str


Peer = Pod | External


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels, matchExpressions), as the admission engine's RBAC model
    matches one; a peer or policy that writes none selects every pod."""
    return True if selector is None else selector_matches(selector, labels)


def policy_types(spec: Mapping[str, Any]) -> tuple[str, ...]:
    declared = spec.get("policyTypes")
    if declared:
        return tuple(declared)
    return ("Ingress", "Egress") if "egress" in spec else ("Ingress",)


@dataclass
class Cluster:
    """Namespaces (name -> labels), pods, and NetworkPolicy objects as rendered."""

    namespaces: Mapping[str, Mapping[str, str]]
    pods: Sequence[Pod]
    policies: Sequence[Mapping[str, Any]]

    def _peer_matches(self, peer: Mapping[str, Any], policy_ns: str, other: Peer) -> bool:
        block = peer.get("ipBlock")
        if block is not None:
            address = ipaddress.ip_address(other.ip)
            if address not in ipaddress.ip_network(block["cidr"], strict=False):
                return False
            return not any(
                address in ipaddress.ip_network(e, strict=False) for e in block.get("except") or []
            )
        if not isinstance(other, Pod):
            return False
        if "namespaceSelector" in peer:
            if not selects(peer["namespaceSelector"], self.namespaces[other.namespace]):
                return False
        elif other.namespace != policy_ns:
            return False
        return selects(peer.get("podSelector"), other.labels)

    @staticmethod
    def _port_matches(entry: Mapping[str, Any], dst: Peer, port: int, protocol: str) -> bool:
        if entry.get("protocol", "TCP") != protocol:
            return False
        wanted = entry.get("port")
        if wanted is None:
            return True
        if isinstance(wanted, str):
            if not isinstance(dst, Pod) or wanted not in dst.ports:
                return False
            return dst.ports[wanted] == (port, protocol)
        end = entry.get("endPort", wanted)
        return wanted <= port <= end

    def _direction_allows(
        self, pod: Pod, direction: str, other: Peer, dst: Peer, port: int, protocol: str
    ) -> bool:
        key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        isolating = [
            p
            for p in self.policies
            if p["metadata"]["namespace"] == pod.namespace
            and direction in policy_types(p["spec"])
            and selects(p["spec"].get("podSelector") or {}, pod.labels)
        ]
        if not isolating:
            return True
        for policy in isolating:
            for rule in policy["spec"].get(key) or []:
                peers = rule.get(peers_key)
                if peers and not any(
                    self._peer_matches(p, policy["metadata"]["namespace"], other) for p in peers
                ):
                    continue
                ports = rule.get("ports")
                if ports and not any(self._port_matches(e, dst, port, protocol) for e in ports):
                    continue
                return True
        return False

    def allows(self, src: Peer, dst: Peer, port: int, protocol: str = "TCP") -> bool:
        """Whether `src` can open `port` on `dst`: its egress and the destination's ingress."""
        if isinstance(src, Pod) and not self._direction_allows(
            src, "Egress", dst, dst, port, protocol
        ):
            return False
        return not isinstance(dst, Pod) or self._direction_allows(
            dst, "Ingress", src, dst, port, protocol
        )

    def reachable_ports(self, src: Peer, dst: Peer, ports: Iterable[int]) -> set[int]:
        return {port for port in ports if self.allows(src, dst, port)}
