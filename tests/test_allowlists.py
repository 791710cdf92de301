"""The platform's allowlists in gpuplane.yaml: team image prefixes and egress rules must lie
within them (`image-prefix-not-allowed`, `egress-not-allowed`), the hint names what is allowed,
and following it fixes the file. No allowlist allows nothing; the metadata and link-local
addresses stay refused inside any allowlist, however broad.

Image prefixes are compared as the runtime resolves names (tests/test_image_references.py holds
that comparison to distribution/reference's own cases); networks with Python's ipaddress, the
arithmetic a NetworkPolicy ipBlock uses.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from renderer.findings.diagnostics import Diagnostic
from tests.red_team.harness import Attempt, errors, refused_on

TEAM = "teams/llm.yaml"
RULES = ("image-prefix-not-allowed", "egress-not-allowed")
EXAMPLE_REGISTRIES = ["registry.example.com/", "ghcr.io/example/", "docker.io/library/"]
BROAD = (
    "  allowlists:\n"
    f"    images: [{', '.join(EXAMPLE_REGISTRIES)}]\n"
    "    egress:\n"
    "      - cidr: 0.0.0.0/0\n"
)
"""The example's registries, and every network: a platform that opens egress wide."""


@pytest.fixture
def attempt(tmp_path: Path) -> Attempt:
    return Attempt.on_example(tmp_path / "repo")


def _images(attempt: Attempt, images: list[str]) -> list[Diagnostic]:
    team = attempt.team("llm")
    team["spec"]["images"] = images
    attempt.save_team("llm", team)
    return attempt.findings()


def _egress(attempt: Attempt, rules: list[dict[str, Any]]) -> list[Diagnostic]:
    team = attempt.team("llm")
    team["spec"]["egress"] = rules
    attempt.save_team("llm", team)
    return attempt.findings()


def _allowlists(attempt: Attempt, text: str) -> None:
    """Replace gpuplane.yaml's `allowlists:` block (the platform's edit, not the attacker's)."""
    path = attempt.path("gpuplane.yaml")
    current = path.read_text()
    start = current.index("  allowlists:\n")
    path.write_text(current[:start] + text)


def _line_of(attempt: Attempt, text: str) -> int:
    lines = attempt.path(TEAM).read_text().splitlines()
    hits = [n for n, line in enumerate(lines, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def _ours(found: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in errors(found) if d.rule in RULES]


def test_the_example_asks_for_nothing_outside_its_allowlists(attempt: Attempt) -> None:
    assert errors(attempt.findings()) == []


# --- images ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix",
    [
        "registry.example.com/llm/",
        "registry.example.com/",  # the allowed registry itself
        "registry.example.com:443/llm/",  # https's default port: the same registry
        "index.docker.io/library/",  # Docker Hub's legacy name (normalize.go)
        "registry-1.docker.io/library/",  # the host containerd fetches docker.io from
        "docker.io/library/python:3.12",  # a tag inside an allowed path
        "docker.io/python:3.12",  # the runtime reads it as docker.io/library/python
        "ghcr.io/example/tools/",
        "ghcr.io/example/cli@sha256:" + "a" * 64,
    ],
)
def test_prefixes_inside_the_allowlist_are_accepted(attempt: Attempt, prefix: str) -> None:
    assert _ours(_images(attempt, [prefix])) == []


@pytest.mark.parametrize(
    "prefix",
    [
        "ttl.sh/",  # anonymous: anyone pushes any name for a day
        "docker.io/someone/",
        "registry-1.docker.io/python:3.12",  # no library/ on this spelling: repository "python"
        "ghcr.io/example-evil/",
        "ghcr.io/examplex/",
        "docker.io/library-evil/",
        "registry.example.com:8443/",  # another port is another registry
        "registry.example.com.evil.io/",
        "quay.io/example/",
    ],
)
def test_prefixes_outside_the_allowlist_are_refused_where_written(
    attempt: Attempt, prefix: str
) -> None:
    found = refused_on(_images(attempt, [prefix]), TEAM, "image-prefix-not-allowed")
    assert found.at.line == _line_of(attempt, prefix)
    assert found.hint is not None
    for allowed in EXAMPLE_REGISTRIES:
        assert allowed in found.hint


def test_following_the_image_hint_fixes_the_file(attempt: Attempt) -> None:
    found = refused_on(_images(attempt, ["ghcr.io/someone/"]), TEAM, "image-prefix-not-allowed")
    assert found.hint is not None
    named = re.search(r"\(spec\.allowlists\.images\): ([^;\s]+/)", found.hint)
    assert named is not None, found.hint
    assert errors(_images(attempt, [named.group(1)])) == []


def test_a_prefix_the_runtime_reads_otherwise_says_how(attempt: Attempt) -> None:
    found = refused_on(
        _images(attempt, ["registry-1.docker.io/python:3.12"]), TEAM, "image-prefix-not-allowed"
    )
    assert "docker.io/python:3.12" in found.message


def test_other_image_rules_say_what_to_do_first(attempt: Attempt) -> None:
    found = _images(attempt, ["ghcr.io/"])  # a public root: image-prefix-public-root
    refused_on(found, TEAM, "image-prefix-public-root")
    assert _ours(found) == []


# --- egress ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule",
    [
        {"cidr": "10.20.0.0/16", "ports": [443]},
        {"cidr": "10.20.4.0/24", "ports": [443, 8443], "protocol": "TCP"},
        {"cidr": "10.40.8.0/22", "ports": [6379]},
        {"cidr": "10.90.16.0/24", "ports": [9200, 9300]},
    ],
)
def test_egress_inside_the_allowlist_is_accepted(attempt: Attempt, rule: dict[str, Any]) -> None:
    assert _ours(_egress(attempt, [rule])) == []


def test_egress_outside_every_network_is_refused_at_its_cidr(attempt: Attempt) -> None:
    found = refused_on(
        _egress(attempt, [{"cidr": "8.8.8.8/32", "ports": [53], "protocol": "UDP"}]),
        TEAM,
        "egress-not-allowed",
    )
    assert found.at.line == _line_of(attempt, "8.8.8.8/32")
    assert found.hint is not None and "10.20.0.0/16 TCP 443, 8443" in found.hint


def test_following_the_egress_hint_fixes_the_file(attempt: Attempt) -> None:
    found = refused_on(
        _egress(attempt, [{"cidr": "10.96.0.1/32", "ports": [443]}]), TEAM, "egress-not-allowed"
    )
    assert found.hint is not None
    first = re.search(r"\(spec\.allowlists\.egress\): (\S+) (TCP|UDP) ([0-9, ]+)[;.]", found.hint)
    assert first is not None, found.hint
    cidr, protocol, ports = first.group(1), first.group(2), first.group(3)
    fixed = {"cidr": cidr, "protocol": protocol, "ports": [int(p) for p in ports.split(", ")]}
    assert errors(_egress(attempt, [fixed])) == []


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ({"cidr": "10.20.0.0/16", "ports": [22]}, "a port the entry does not list"),
        ({"cidr": "10.20.0.0/16", "ports": [443, 22]}, "one port too many"),
        ({"cidr": "10.20.0.0/16", "ports": [443], "protocol": "UDP"}, "the other protocol"),
    ],
)
def test_ports_and_protocol_outside_the_entry_are_refused_at_the_ports(
    attempt: Attempt, rule: dict[str, Any], why: str
) -> None:
    found = refused_on(_egress(attempt, [rule]), TEAM, "egress-not-allowed")
    ports = _line_of(attempt, "ports:")
    assert found.at.line in (ports, ports + 1), why  # the list, written as a block
    assert found.hint is not None and "10.20.0.0/16 TCP 443, 8443" in found.hint
    rule.update(ports=[443], protocol="TCP")
    assert errors(_egress(attempt, [rule])) == []


def test_a_network_wider_than_the_allowed_one_is_refused(attempt: Attempt) -> None:
    # the allowlist has 10.90.16.0/20; a /16 around it reaches 15 more /20s
    refused_on(
        _egress(attempt, [{"cidr": "10.90.0.0/16", "ports": [9200]}]), TEAM, "egress-not-allowed"
    )


def test_other_egress_rules_say_what_to_do_first(attempt: Attempt) -> None:
    for cidr, rule in (
        ("0.0.0.0/0", "egress-too-wide"),
        ("169.254.169.254/32", "egress-special-address"),
        ("10.20.0.1/16", "egress-host-bits"),
    ):
        found = _egress(attempt, [{"cidr": cidr, "ports": [443]}])
        refused_on(found, TEAM, rule)
        assert _ours(found) == [], cidr


# --- no allowlist, and a broad one ---------------------------------------------------------------


def test_without_allowlists_no_prefix_and_no_egress_is_allowed(attempt: Attempt) -> None:
    _allowlists(attempt, "")
    found = attempt.findings()
    images = [d for d in errors(found) if d.rule == "image-prefix-not-allowed"]
    egress = [d for d in errors(found) if d.rule == "egress-not-allowed"]
    assert images and egress
    assert {d.at.file for d in images + egress} == {
        f"teams/{name}.yaml" for name in ("llm", "llm-eval", "recsys", "search", "speech", "vision")
    }
    assert all("declares no spec.allowlists" in (d.hint or "") for d in images + egress)


def test_without_gpuplane_yaml_nothing_is_allowed_and_removing_fixes_it(attempt: Attempt) -> None:
    attempt.path("gpuplane.yaml").unlink()
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")
    for name in ("llm", "llm-eval", "recsys", "search", "speech", "vision"):
        team = attempt.team(name)
        del team["spec"]["images"], team["spec"]["egress"]
        attempt.save_team(name, team)
    assert _ours(attempt.findings()) == []


def test_an_empty_list_allows_nothing(attempt: Attempt) -> None:
    _allowlists(attempt, "  allowlists:\n    images: []\n    egress: []\n")
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")
    refused_on(attempt.findings(), TEAM, "egress-not-allowed")


@pytest.mark.parametrize(
    "cidr",
    [
        "169.254.169.254/32",  # AWS, GCP, Azure, OCI metadata
        "169.254.170.2/32",  # ECS task credentials
        "169.254.170.23/32",  # EKS Pod Identity Agent
        "169.254.0.0/16",
        "169.254.169.0/24",
        "168.63.129.16/32",  # Azure WireServer
        "168.63.0.0/16",  # a /16 around it
        "100.100.100.200/32",  # Alibaba Cloud metadata
        "100.100.0.0/16",
        "127.0.0.1/32",
    ],
)
def test_a_broad_allowlist_reopens_no_metadata_address(attempt: Attempt, cidr: str) -> None:
    _allowlists(attempt, BROAD)
    found = _egress(attempt, [{"cidr": cidr, "ports": [80]}])
    refused_on(found, TEAM, "egress-special-address")


def test_a_broad_allowlist_still_holds_a_team_to_slash_16(attempt: Attempt) -> None:
    _allowlists(attempt, BROAD)
    refused_on(_egress(attempt, [{"cidr": "10.0.0.0/8", "ports": [443]}]), TEAM, "egress-too-wide")
    assert errors(_egress(attempt, [{"cidr": "10.0.0.0/16", "ports": [443]}])) == []


@pytest.mark.parametrize(
    "cidr",
    [
        "::ffff:169.254.169.254/128",  # IPv4-mapped: team egress is IPv4 only, by the schema
        "fd00:ec2::254/128",
        "fe80::/64",
    ],
)
def test_ipv6_spellings_of_metadata_are_refused_by_the_schema(attempt: Attempt, cidr: str) -> None:
    _allowlists(attempt, BROAD)
    refused_on(_egress(attempt, [{"cidr": cidr, "ports": [80]}]), TEAM, "schema-invalid-value")


def test_an_allowlist_entry_with_host_bits_is_refused_in_gpuplane_yaml(attempt: Attempt) -> None:
    _allowlists(attempt, "  allowlists:\n    egress:\n      - cidr: 10.20.0.1/16\n")
    found = refused_on(attempt.findings(), "gpuplane.yaml", "egress-host-bits")
    assert found.hint is not None and "10.20.0.0/16" in found.hint


def test_an_allowlist_path_needs_its_trailing_slash(attempt: Attempt) -> None:
    _allowlists(attempt, "  allowlists:\n    images: [registry.example.com/llm]\n")
    refused_on(attempt.findings(), "gpuplane.yaml", "schema-invalid-value")
