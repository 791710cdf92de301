"""Policy on what team files may draw from the platform: image registries and egress networks.

gpuplane.yaml's `spec.allowlists` names the registries (and registry paths) team `images`
prefixes must lie within, and the networks, ports and protocols team `egress` rules must lie
within. A team file picks inside them; anything outside is an error on the team file's line,
whose hint names what is allowed. No allowlist (no gpuplane.yaml, no `allowlists`, an empty
list) allows nothing: a denylist cannot know every registry anyone can push to, nor every
metadata address a provider serves, so what the platform did not name is refused.

Image prefixes are compared as the container runtime resolves them (`renderer.model.images`):
`index.docker.io/library/` lies inside an allowed `docker.io/library/`, `registry.example.com/
vision-evil/` does not lie inside `registry.example.com/vision/`. The egress rules that refuse a
network for being too wide, special or written with host bits (`renderer.policy.guardrails`)
come first: these rules say nothing about a network those already refuse.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Sequence

from renderer.findings.diagnostics import Diagnostic
from renderer.model.images import Prefix, parse_prefix
from renderer.model.platform import AllowedEgress, EgressRule, Platform
from renderer.policy.guardrails import image_problem, refused_elsewhere
from renderer.policy.rule import error, rule

SHOWN = 8
"""The most allowlist entries a hint names; the rest are counted."""

_NO_IMAGES = (
    "gpuplane.yaml declares no spec.allowlists.images, so team files may name no registry: "
    "remove the entry, or have the platform team list the registries teams may use there"
)
_NO_EGRESS = (
    "gpuplane.yaml declares no spec.allowlists.egress, so team files may open no egress: "
    "remove the rule, or have the platform team list the networks teams may reach there"
)


def _named(items: Sequence[str]) -> str:
    shown = "; ".join(items[:SHOWN])
    more = len(items) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


# --- images ------------------------------------------------------------------------------------


def _allowed_images(p: Platform) -> list[tuple[str, Prefix]]:
    entries = p.repository.allowed_images if p.repository is not None else ()
    return [(text, parsed) for text in entries if (parsed := parse_prefix(text)) is not None]


@rule("image-prefix-not-allowed", scope="team")
def image_prefix_allowed(p: Platform) -> Iterator[Diagnostic]:
    """A team's image prefix must lie within a registry path gpuplane.yaml allows.

    A prefix says which images the team's pods may run. On a registry where anyone can publish
    under any name (Docker Hub's user namespaces, ghcr.io, quay.io, anonymous ones such as
    ttl.sh), or on a host that only looks like the platform's, it lets in images nobody on the
    platform controls. So the platform names the registries and paths teams may draw from in
    gpuplane.yaml's `spec.allowlists.images`, and every prefix must lie within one of them,
    compared as the container runtime resolves names: host case, `:443`, and `docker.io`,
    `index.docker.io` and `registry-1.docker.io` alike; paths at a `/` boundary. Without an
    allowlist no prefix is allowed.

    To satisfy it: in the team's `spec.images`, write a prefix that starts with one of the
    entries of gpuplane.yaml's `spec.allowlists.images` (with `registry.example.com/` allowed:
    `registry.example.com/vision/`), or have the platform team add the registry or path to
    that list.
    """
    allowed = _allowed_images(p)
    texts = [text for text, _ in allowed]
    for name in sorted(p.teams):
        team = p.teams[name]
        for index, prefix in enumerate(team.images):
            parsed = parse_prefix(prefix)
            if image_problem(prefix) is not None or parsed is None:
                continue  # image-prefix-boundary, -invalid or -public-root says what to do
            if any(parsed.within(folder) for _, folder in allowed):
                continue
            hint = (
                f"use a prefix inside one of the registry paths gpuplane.yaml allows "
                f"(spec.allowlists.images): {_named(texts)}. Or have the platform team add "
                "this one there"
                if texts
                else _NO_IMAGES
            )
            read = "" if str(parsed) == prefix else f" (the runtime reads it as '{parsed}')"
            yield error(
                "image-prefix-not-allowed",
                f"team '{name}' allows images from '{prefix}'{read}, which is outside every "
                "registry path gpuplane.yaml allows teams",
                team.origin.at("spec", "images", index),
                hint,
            )


# --- egress ------------------------------------------------------------------------------------


def _describe(entry: AllowedEgress) -> str:
    protocol = entry.protocol or "TCP/UDP"
    ports = ", ".join(str(port) for port in entry.ports) if entry.ports else "any port"
    return f"{entry.cidr} {protocol} {ports}"


def _fits(egress: EgressRule, entry: AllowedEgress) -> bool:
    return (entry.protocol is None or entry.protocol == egress.protocol) and (
        not entry.ports or set(egress.ports) <= set(entry.ports)
    )


def _containing(cidr: str, entries: Sequence[AllowedEgress]) -> list[AllowedEgress]:
    """The allowlist entries whose network holds all of `cidr`."""
    net = ipaddress.ip_network(cidr)
    found = []
    for entry in entries:
        allowed = ipaddress.ip_network(entry.cidr, strict=False)
        if allowed.version == net.version and net.subnet_of(allowed):  # type: ignore[arg-type]
            found.append(entry)
    return found


@rule("egress-not-allowed", scope="team")
def egress_allowed(p: Platform) -> Iterator[Diagnostic]:
    """A team's egress rule must lie within a network, ports and protocol gpuplane.yaml allows.

    Every egress rule opens a path out of the team's namespaces. A network the platform never
    meant teams to reach (the internet, the API server's service address, the nodes' kubelets,
    a cloud's metadata service at an address no list knows) is as easy to write as a dataset
    service's. So the platform names the networks teams may reach in gpuplane.yaml's
    `spec.allowlists.egress`, with the ports and protocol allowed on each, and every team rule
    must lie within one entry: its network inside the entry's, its protocol the entry's (when
    the entry names one) and its ports among the entry's (when the entry lists them). Without
    an allowlist no egress is allowed. Metadata, link-local and loopback addresses stay refused
    inside any allowed network (`egress-special-address`).

    To satisfy it: in the team's `spec.egress`, set `cidr` to a network inside an entry of
    gpuplane.yaml's `spec.allowlists.egress` and `ports` and `protocol` to ones that entry
    allows, or have the platform team add the network there.
    """
    entries = p.repository.allowed_egress if p.repository is not None else ()
    for name in sorted(p.teams):
        team = p.teams[name]
        for index, egress in enumerate(team.egress):
            if refused_elsewhere(egress.cidr):
                continue
            containing = _containing(egress.cidr, entries)
            if any(_fits(egress, entry) for entry in containing):
                continue
            yield _egress_finding(name, index, egress, containing, entries)


def _egress_finding(
    team: str,
    index: int,
    egress: EgressRule,
    containing: Sequence[AllowedEgress],
    entries: Sequence[AllowedEgress],
) -> Diagnostic:
    asked = f"{egress.cidr} {egress.protocol} {', '.join(str(port) for port in egress.ports)}"
    if containing:
        offered = _named([_describe(entry) for entry in containing])
        return error(
            "egress-not-allowed",
            f"team '{team}' opens egress to {asked}, but gpuplane.yaml allows teams only "
            f"{offered} there",
            egress.origin.at("ports"),
            f"set spec.egress[{index}].ports and protocol to ones allowed there: {offered}",
        )
    hint = (
        f"name a network inside one gpuplane.yaml allows (spec.allowlists.egress): "
        f"{_named([_describe(entry) for entry in entries])}. Or have the platform team add "
        "this one there"
        if entries
        else _NO_EGRESS
    )
    return error(
        "egress-not-allowed",
        f"team '{team}' opens egress to {asked}, outside every network gpuplane.yaml allows teams",
        egress.origin.at("cidr"),
        hint,
    )
