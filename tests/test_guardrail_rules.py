"""The guardrails policy topic: egress, image prefixes and quota caps a team file may ask for.

Expectations come from how the things work, not from gpuplane's output: a NetworkPolicy
ipBlock masks its address with the prefix (Python's ipaddress does the same arithmetic), the
metadata services answer on the addresses their clouds document, and an image reference's
repository path follows the OCI distribution spec's grammar.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from renderer.findings.diagnostics import Diagnostic
from renderer.policy.guardrails import MAX_EGRESS_RULES, MAX_PORTS_PER_RULE
from tests.red_team.harness import Attempt, errors, refused_on

TEAM = "teams/llm.yaml"
RULES = (
    "egress-too-wide",
    "egress-special-address",
    "egress-host-bits",
    "egress-too-many-rules",
    "egress-duplicate",
    "image-prefix-boundary",
    "image-prefix-invalid",
    "image-prefix-public-root",
    "quota-caps-missing",
)


@pytest.fixture
def attempt(tmp_path: Path) -> Attempt:
    return Attempt.on_example(tmp_path / "repo")


def _with_egress(attempt: Attempt, rules: list[dict[str, Any]]) -> list[Diagnostic]:
    team = attempt.team("llm")
    team["spec"]["egress"] = rules
    attempt.save_team("llm", team)
    return attempt.findings()


def _with_images(attempt: Attempt, images: list[str]) -> list[Diagnostic]:
    team = attempt.team("llm")
    team["spec"]["images"] = images
    attempt.save_team("llm", team)
    return attempt.findings()


def _guardrail_errors(found: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in errors(found) if d.rule in RULES]


def _line_of(attempt: Attempt, text: str) -> int:
    lines = attempt.path(TEAM).read_text().splitlines()
    hits = [n for n, line in enumerate(lines, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def test_the_example_platform_asks_for_nothing_these_rules_refuse(attempt: Attempt) -> None:
    assert _guardrail_errors(attempt.findings()) == []


# --- egress ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "10.0.0.0/8", "172.16.0.0/12", "10.0.0.0/15"])
def test_a_network_wider_than_a_slash_16_is_refused(attempt: Attempt, cidr: str) -> None:
    found = refused_on(
        _with_egress(attempt, [{"cidr": cidr, "ports": [443]}]), TEAM, "egress-too-wide"
    )
    assert found.at.line == _line_of(attempt, cidr)
    assert cidr in found.message


@pytest.mark.parametrize("cidr", ["10.20.0.0/16", "10.30.4.0/24", "192.0.2.10/32"])
def test_a_service_network_is_accepted(attempt: Attempt, cidr: str) -> None:
    assert _guardrail_errors(_with_egress(attempt, [{"cidr": cidr, "ports": [443]}])) == []


@pytest.mark.parametrize(
    "cidr",
    [
        "169.254.169.254/32",  # AWS, GCP, Azure, OCI, OpenStack metadata
        "169.254.170.2/32",  # AWS ECS task credentials
        "169.254.0.0/16",
        "169.254.169.0/24",
        "100.100.100.200/32",  # Alibaba Cloud metadata
        "168.63.129.16/32",  # Azure WireServer
        "127.0.0.1/32",
        "224.0.0.251/32",
        "255.255.255.255/32",
    ],
)
def test_metadata_link_local_loopback_and_multicast_are_refused(
    attempt: Attempt, cidr: str
) -> None:
    found = refused_on(
        _with_egress(attempt, [{"cidr": cidr, "ports": [80]}]), TEAM, "egress-special-address"
    )
    assert found.at.line == _line_of(attempt, cidr)


def test_a_network_next_to_the_metadata_range_is_accepted(attempt: Attempt) -> None:
    assert (
        ipaddress.ip_network("169.255.0.0/16").overlaps(ipaddress.ip_network("169.254.0.0/16"))
        is False
    )
    assert (
        _guardrail_errors(_with_egress(attempt, [{"cidr": "169.255.0.0/16", "ports": [80]}])) == []
    )


def test_host_bits_are_refused_with_the_network_kubernetes_would_apply(attempt: Attempt) -> None:
    found = refused_on(
        _with_egress(attempt, [{"cidr": "10.20.0.1/16", "ports": [443]}]), TEAM, "egress-host-bits"
    )
    # Kubernetes masks the address with the prefix: the whole /16, not the one host
    assert str(ipaddress.ip_network("10.20.0.1/16", strict=False)) == "10.20.0.0/16"
    assert "10.20.0.0/16" in found.message
    assert found.hint is not None
    assert "10.20.0.0/16" in found.hint and "10.20.0.1/32" in found.hint


def test_host_bits_on_a_wide_network_get_both_findings(attempt: Attempt) -> None:
    found = _with_egress(attempt, [{"cidr": "10.0.0.1/8", "ports": [443]}])
    assert refused_on(found, TEAM, "egress-host-bits").hint is not None
    assert "10.0.0.0/8" in refused_on(found, TEAM, "egress-host-bits").message
    refused_on(found, TEAM, "egress-too-wide")


def _many(count: int) -> list[dict[str, Any]]:
    return [{"cidr": f"10.{20 + n // 256}.{n % 256}.0/24", "ports": [443]} for n in range(count)]


def test_more_rules_than_the_bound_are_refused_on_the_first_one_over(attempt: Attempt) -> None:
    found = refused_on(
        _with_egress(attempt, _many(MAX_EGRESS_RULES + 1)), TEAM, "egress-too-many-rules"
    )
    last = _many(MAX_EGRESS_RULES + 1)[-1]["cidr"]
    assert found.at.line == _line_of(attempt, last)


def test_the_bound_itself_is_accepted(attempt: Attempt) -> None:
    assert _guardrail_errors(_with_egress(attempt, _many(MAX_EGRESS_RULES))) == []


def test_a_rule_with_too_many_ports_is_refused(attempt: Attempt) -> None:
    ports = list(range(8000, 8000 + MAX_PORTS_PER_RULE + 1))
    found = _with_egress(attempt, [{"cidr": "10.20.0.0/16", "ports": ports}])
    refused_on(found, TEAM, "egress-too-many-rules")
    fine = _with_egress(attempt, [{"cidr": "10.20.0.0/16", "ports": ports[:-1]}])
    assert _guardrail_errors(fine) == []


def test_a_repeated_rule_is_refused_on_the_repeat(attempt: Attempt) -> None:
    found = refused_on(
        _with_egress(
            attempt,
            [
                {"cidr": "10.20.0.0/16", "ports": [443, 8443]},
                {"cidr": "10.20.4.0/24", "ports": [443], "description": "inside the first"},
            ],
        ),
        TEAM,
        "egress-duplicate",
    )
    assert found.at.line == _line_of(attempt, "10.20.4.0/24")


@pytest.mark.parametrize(
    "second",
    [
        {"cidr": "10.20.4.0/24", "ports": [5432]},  # a port the first lacks
        {"cidr": "10.20.4.0/24", "ports": [443], "protocol": "UDP"},  # another protocol
        {"cidr": "10.21.0.0/16", "ports": [443]},  # another network
    ],
)
def test_a_rule_that_adds_something_is_no_duplicate(
    attempt: Attempt, second: dict[str, Any]
) -> None:
    rules = [{"cidr": "10.20.0.0/16", "ports": [443]}, second]
    assert _guardrail_errors(_with_egress(attempt, rules)) == []


def test_the_clusters_object_store_egress_is_held_to_the_same_rules(attempt: Attempt) -> None:
    attempt.edit("clusters/prod-east.yaml", "- cidr: 10.64.0.0/20", "- cidr: 0.0.0.0/0")
    found = refused_on(attempt.findings(), "clusters/prod-east.yaml", "egress-too-wide")
    assert "objectStoreEgress" in (found.hint or "")


@pytest.mark.parametrize("ports", [[0], [70000]])
def test_ports_outside_1_to_65535_are_refused_by_the_schema(
    attempt: Attempt, ports: list[int]
) -> None:
    refused_on(
        _with_egress(attempt, [{"cidr": "10.20.0.0/16", "ports": ports}]),
        TEAM,
        "schema-invalid-value",
    )


# --- image prefixes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix",
    [
        "registry.example.com/llm/",
        "registry.example.com/mirror/nvcr.io/nvidia/",
        "registry.example.com:5000/",
        "localhost:5000/team/",
        "registry.example.com/llm/trainer:1.4",
        "registry.example.com/llm/trainer@sha256:" + "a" * 64,
        "docker.io/pytorch/",
        "ghcr.io/example-org/",
    ],
)
def test_prefixes_that_end_at_a_boundary_are_accepted(attempt: Attempt, prefix: str) -> None:
    assert _guardrail_errors(_with_images(attempt, [prefix])) == []


@pytest.mark.parametrize(
    ("prefix", "fixed"),
    [
        ("registry.example.com/llm", "registry.example.com/llm/"),
        ("registry.example.com/mirror/nvcr.io", "registry.example.com/mirror/nvcr.io/"),
    ],
)
def test_a_path_prefix_without_a_trailing_slash_is_refused(
    attempt: Attempt, prefix: str, fixed: str
) -> None:
    found = refused_on(_with_images(attempt, [prefix]), TEAM, "image-prefix-boundary")
    # what a literal startsWith would let through
    assert (prefix + "-evil/miner:1").startswith(prefix)
    assert found.hint == f"write it as '{fixed}'"
    assert found.at.line == _line_of(attempt, f"- {prefix}")  # the images entry


@pytest.mark.parametrize(
    "prefix",
    [
        "registry.example.com/*/",
        "registry.example.com/llm/*",
        "registry.example.com/LLM/",
        "registry.example.com/llm//",
        "registry.example.com/llm/../",
        "registry.example.com/llm/trainer@sha256:abc",
        "registry.example.com/llm/trainer:-bad",
    ],
)
def test_prefixes_that_are_not_literal_repository_paths_are_refused(
    attempt: Attempt, prefix: str
) -> None:
    refused_on(_with_images(attempt, [prefix]), TEAM, "image-prefix-invalid")


def test_an_upper_case_path_gets_its_lower_case_fix(attempt: Attempt) -> None:
    found = refused_on(
        _with_images(attempt, ["registry.example.com/LLM/"]), TEAM, "image-prefix-invalid"
    )
    assert found.hint == "write it as 'registry.example.com/llm/'"


@pytest.mark.parametrize(
    "prefix", ["docker.io/", "ghcr.io/", "quay.io/", "us-docker.pkg.dev/", "eu.gcr.io/"]
)
def test_the_root_of_a_public_registry_is_refused(attempt: Attempt, prefix: str) -> None:
    refused_on(_with_images(attempt, [prefix]), TEAM, "image-prefix-public-root")


def test_a_bare_host_is_refused_by_the_schema(attempt: Attempt) -> None:
    refused_on(_with_images(attempt, ["registry.example.com"]), TEAM, "schema-invalid-value")


# --- quota caps --------------------------------------------------------------------------------


def _drop_team_defaults(attempt: Attempt, cluster: str) -> None:
    path = attempt.path(f"clusters/{cluster}.yaml")
    text = path.read_text()
    start = text.index("  teamDefaults:\n")
    end = text.index("  storage:\n", start)
    path.write_text(text[:start] + text[end:])


def test_a_team_without_caps_on_a_cluster_without_defaults_is_refused(attempt: Attempt) -> None:
    _drop_team_defaults(attempt, "prod-east")
    team = attempt.team("llm")
    del team["spec"]["resources"]
    attempt.save_team("llm", team)
    found = refused_on(attempt.findings(), TEAM, "quota-caps-missing")
    assert "cpu, memory, storage" in found.message and "prod-east" in found.message
    assert found.hint == (
        "set spec.resources.cpu, spec.resources.memory, spec.resources.storage in the team file"
    )


def test_only_the_keys_missing_from_both_are_named(attempt: Attempt) -> None:
    _drop_team_defaults(attempt, "prod-east")
    team = attempt.team("llm")
    del team["spec"]["resources"]["memory"]
    attempt.save_team("llm", team)
    found = refused_on(attempt.findings(), TEAM, "quota-caps-missing")
    assert "no memory cap" in found.message
    assert found.at.line == _line_of(attempt, "resources:")


def test_cluster_defaults_fill_what_the_team_leaves_out(attempt: Attempt) -> None:
    team = attempt.team("llm")
    del team["spec"]["resources"]
    attempt.save_team("llm", team)
    assert _guardrail_errors(attempt.findings()) == []


def test_a_team_with_every_cap_needs_no_cluster_default(attempt: Attempt) -> None:
    _drop_team_defaults(attempt, "prod-east")
    _drop_team_defaults(attempt, "staging-west")
    assert _guardrail_errors(attempt.findings()) == []


def test_the_rendered_quota_takes_each_missing_key_from_the_cluster(attempt: Attempt) -> None:
    team = attempt.team("llm")
    del team["spec"]["resources"]["cpu"]
    attempt.save_team("llm", team)
    rendered = attempt.render()
    assert errors(rendered.diagnostics) == []
    quotas = [
        m.body
        for m in rendered.manifests["prod-east"]
        if m.body["kind"] == "ResourceQuota" and m.body["metadata"]["namespace"] == "llm-train"
    ]
    (quota,) = quotas
    hard = quota["spec"]["hard"]
    # prod-east's teamDefaults.resources.cpu, 128, is the team's cap, split evenly between
    # llm's three namespaces there and rounded down to whole cores
    assert hard["requests.cpu"] == str(128 // 3)
    # still the team's own 8Ti, split the same way and rounded down to whole GiB
    assert hard["requests.memory"] == f"{8 * 1024 // 3}Gi"


# --- IPv6: the schema takes IPv4 only today; the rules are ready for the day it widens -------


@pytest.mark.parametrize(
    ("cidr", "rule"),
    [
        ("::/0", "egress-too-wide"),
        ("2001:db8::/32", "egress-too-wide"),
        ("fd00:ec2::254/128", "egress-special-address"),  # AWS IMDS over IPv6
        ("fe80::/64", "egress-special-address"),
        ("::ffff:169.254.169.254/128", "egress-special-address"),  # IPv4-mapped metadata
        ("2001:db8::1/64", "egress-host-bits"),
    ],
)
def test_ipv6_egress_is_held_to_the_same_rules(cidr: str, rule: str) -> None:
    import dataclasses
    from types import MappingProxyType

    from renderer.pipeline import load_platform
    from renderer.policy import guardrails
    from tests.conftest import REPO

    platform = load_platform(REPO).platform
    llm = platform.teams["llm"]
    hostile = dataclasses.replace(llm.egress[0], cidr=cidr)
    teams = {**platform.teams, "llm": dataclasses.replace(llm, egress=(hostile,))}
    platform = dataclasses.replace(platform, teams=MappingProxyType(teams))
    checks = {
        "egress-too-wide": guardrails.egress_not_too_wide,
        "egress-special-address": guardrails.egress_not_special,
        "egress-host-bits": guardrails.egress_is_a_network,
    }
    found = list(checks[rule](platform))
    assert [d.at.file for d in found] == [TEAM], found
    fine = dataclasses.replace(llm.egress[0], cidr="2001:db8:1::/48")
    teams["llm"] = dataclasses.replace(llm, egress=(fine,))
    platform = dataclasses.replace(platform, teams=MappingProxyType(teams))
    assert [d for check in checks.values() for d in check(platform)] == []
