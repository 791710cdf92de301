"""Network egress opened and closed, for a cluster's object store or a team's own rules.

A wider network that already allows a port hides the narrower rules under it, so the rules are
compared as networks, not as lines; clusters and teams share this one comparison. Whatever
opens (a wider network, a new port, a new rule) is high risk: egress is how data leaves.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator

from renderer.commands.diff.findings import Finding, Risk
from renderer.model.platform import EgressRule

_EgressKey = tuple[str, str, int]


def _egress_keys(rules: Iterable[EgressRule]) -> dict[_EgressKey, str]:
    """(cidr, protocol, port) -> the rule's description."""
    return {(r.cidr, r.protocol, p): r.description for r in rules for p in r.ports}


def _covered(key: _EgressKey, others: Iterable[_EgressKey]) -> bool:
    """Whether another rule with the same protocol and port already allows this network."""
    net = ipaddress.ip_network(key[0], strict=False)
    for cidr, protocol, port in others:
        if (protocol, port) != key[1:]:
            continue
        other = ipaddress.ip_network(cidr, strict=False)
        if other.version == net.version and net.subnet_of(other):  # type: ignore[arg-type]
            return True
    return False


_METADATA = (
    ipaddress.ip_network("169.254.0.0/16"),
    ipaddress.ip_network("fe80::/10"),
    ipaddress.ip_network("fd00:ec2::254/128"),
)
"""Link-local networks and AWS's IPv6 address, where clouds serve instance metadata and
credentials (169.254.169.254 on every major provider)."""


def _width(cidr: str) -> str:
    net = ipaddress.ip_network(cidr, strict=False)
    if net.prefixlen == 0:
        return " (any address: the internet)"
    if any(net.version == ll.version and net.overlaps(ll) for ll in _METADATA):
        return " (the cloud metadata service and its credentials)"
    if net.prefixlen <= 8:
        return f" ({net.num_addresses:,} addresses)"
    return ""


def egress(
    cluster: str,
    team: str | None,
    before: Iterable[EgressRule],
    after: Iterable[EgressRule],
    where: str,
) -> Iterator[Finding]:
    old, new = _egress_keys(before), _egress_keys(after)
    opened = [k for k in new if k not in old and not _covered(k, old)]
    closed = [k for k in old if k not in new and not _covered(k, new)]
    for keys, source, is_open in ((opened, new, True), (closed, old, False)):
        grouped: dict[tuple[str, str], list[int]] = {}
        for cidr, protocol, port in keys:
            grouped.setdefault((cidr, protocol), []).append(port)
        for (cidr, protocol), ports in sorted(grouped.items()):
            port_text = ", ".join(str(p) for p in sorted(ports))
            descriptions = sorted({source[(cidr, protocol, p)] for p in ports} - {""})
            why = f" ({'; '.join(descriptions)})" if descriptions else ""
            if is_open:  # any new reach out of the cluster is reviewed as high risk
                yield Finding(
                    Risk.HIGH,
                    "egress-opened",
                    cluster,
                    team,
                    cidr,
                    f"pods in {where} may now reach {cidr}{_width(cidr)} on {protocol} "
                    f"{port_text}{why}",
                )
            else:
                yield Finding(
                    Risk.LOW,
                    "egress-closed",
                    cluster,
                    team,
                    cidr,
                    f"pods in {where} may no longer reach {cidr} on {protocol} {port_text}{why}",
                )
