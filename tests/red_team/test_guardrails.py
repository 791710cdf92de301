"""Attacks on the guardrails: what a team lead asks for in the team file (egress, images,
quota caps), and what a member of the team tries with kubectl once the file is applied.

File attacks end in an error on the attacker's file. kubectl attacks are evaluated against the
rendered RoleBindings with the RBAC evaluator of tests/test_team_roles.py: the verb is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from renderer.pipeline import Rendered, render_platform
from tests.conftest import REPO, SHARED_CRDS
from tests.red_team.harness import Attempt, errors, refused_on
from tests.test_team_roles import allows, team_bindings

TEAM = "teams/llm.yaml"


def _egress(attempt: Attempt, rules: list[dict[str, Any]]) -> None:
    team = attempt.team("llm")
    team["spec"]["egress"] = rules
    attempt.save_team("llm", team)


def _images(attempt: Attempt, images: list[str]) -> None:
    team = attempt.team("llm")
    team["spec"]["images"] = images
    attempt.save_team("llm", team)


# --- egress ------------------------------------------------------------------------------------

EGRESS_ATTACKS = [
    pytest.param({"cidr": "0.0.0.0/0", "ports": [443]}, "egress-too-wide", id="the-internet"),
    pytest.param({"cidr": "10.0.0.0/8", "ports": [443]}, "egress-too-wide", id="all-of-10/8"),
    pytest.param({"cidr": "::/0", "ports": [443]}, "schema-invalid-value", id="ipv6-everything"),
    pytest.param(
        {"cidr": "169.254.169.254/32", "ports": [80]},
        "egress-special-address",
        id="cloud-metadata",
    ),
    pytest.param(
        {"cidr": "169.254.170.2/32", "ports": [80]},
        "egress-special-address",
        id="ecs-credentials",
    ),
    pytest.param(
        {"cidr": "100.100.100.200/32", "ports": [80]},
        "egress-special-address",
        id="alibaba-metadata",
    ),
    pytest.param(
        {"cidr": "127.0.0.1/32", "ports": [10250]}, "egress-special-address", id="loopback"
    ),
    pytest.param(
        {"cidr": "10.0.0.1/8", "ports": [443]}, "egress-host-bits", id="host-bits-hide-a-/8"
    ),
    pytest.param({"cidr": "10.20.0.0/16", "ports": [0]}, "schema-invalid-value", id="port-0"),
    pytest.param(
        {"cidr": "10.20.0.0/16", "ports": [70000]}, "schema-invalid-value", id="port-70000"
    ),
    pytest.param(
        {"cidr": "10.20.0.0/16", "ports": list(range(1, 1025))},
        "egress-too-many-rules",
        id="every-low-port",
    ),
]


@pytest.mark.parametrize(("rule", "expected"), EGRESS_ATTACKS)
def test_egress_attack_is_refused(attempt: Attempt, rule: dict[str, Any], expected: str) -> None:
    _egress(attempt, [rule])
    refused_on(attempt.findings(), TEAM, expected)


def test_five_hundred_egress_rules_are_refused(attempt: Attempt) -> None:
    _egress(
        attempt,
        [{"cidr": f"10.{n // 256}.{n % 256}.0/24", "ports": [443]} for n in range(500)],
    )
    refused_on(attempt.findings(), TEAM, "egress-too-many-rules")


def test_a_repeated_rule_to_pad_the_list_is_refused(attempt: Attempt) -> None:
    _egress(attempt, [{"cidr": "10.20.0.0/16", "ports": [443]}] * 2)
    refused_on(attempt.findings(), TEAM, "egress-duplicate")


def test_a_new_team_file_opening_the_internet_is_refused_on_the_new_file(
    attempt: Attempt,
) -> None:
    attempt.write(
        "teams/mallory.yaml",
        "# yaml-language-server: $schema=../schemas/team.schema.json\n"
        "apiVersion: gpuplane.dev/v1alpha1\n"
        "kind: Team\n"
        "metadata:\n"
        "  name: mallory\n"
        "spec:\n"
        "  owners: [mallory-leads]\n"
        "  costCenter: CC-6666\n"
        "  queue: staging\n"
        "  namespaces:\n"
        "    - {name: mallory-train, cluster: staging-west, purpose: training}\n"
        "  images: [registry.example.com/mallory/]\n"
        "  egress:\n"
        "    - {cidr: 0.0.0.0/0, ports: [443]}\n",
    )
    refused_on(attempt.findings(), "teams/mallory.yaml", "egress-too-wide")


# --- images ------------------------------------------------------------------------------------

IMAGE_ATTACKS = [
    pytest.param("registry.example.com", "schema-invalid-value", id="bare-host"),
    pytest.param("registry.example.com/llm", "image-prefix-boundary", id="path-without-slash"),
    pytest.param("registry.example.com/*/", "image-prefix-invalid", id="wildcard"),
    pytest.param("docker.io/", "image-prefix-public-root", id="all-of-docker-hub"),
    pytest.param("ghcr.io/", "image-prefix-public-root", id="all-of-ghcr"),
]


@pytest.mark.parametrize(("prefix", "expected"), IMAGE_ATTACKS)
def test_image_prefix_attack_is_refused(attempt: Attempt, prefix: str, expected: str) -> None:
    _images(attempt, ["registry.example.com/llm/", prefix])
    refused_on(attempt.findings(), TEAM, expected)


# --- quota caps --------------------------------------------------------------------------------


def test_removing_resources_keeps_every_cap(attempt: Attempt) -> None:
    team = attempt.team("llm")
    del team["spec"]["resources"]
    attempt.save_team("llm", team)
    rendered = attempt.render()
    assert errors(rendered.diagnostics) == []
    namespaces = {ns["name"] for ns in team["spec"]["namespaces"]}
    quotas = [
        m.body
        for m in rendered.manifests["prod-east"]
        if m.body["kind"] == "ResourceQuota" and m.body["metadata"]["namespace"] in namespaces
    ]
    assert len(quotas) == len(namespaces)
    for quota in quotas:
        hard = quota["spec"]["hard"]
        for key in ("requests.cpu", "requests.memory", "requests.storage"):
            assert key in hard, (quota["metadata"]["namespace"], key)


# --- kubectl, as a member or an owner of the team -----------------------------------------------


@pytest.fixture(scope="module")
def example() -> Rendered:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    from renderer.output.validation import OutputValidator

    return render_platform(REPO, OutputValidator([SHARED_CRDS]))


def _rules_of(example: Rendered, role: str) -> list[dict[str, Any]]:
    for _, _, granted in team_bindings(example):
        if granted["metadata"]["name"] == role:
            return list(granted["rules"])
    raise AssertionError(role)


KUBECTL_ATTACKS = [
    pytest.param("patch", "networking.k8s.io", "networkpolicies", "", id="edit-networkpolicy"),
    pytest.param("delete", "networking.k8s.io", "networkpolicies", "", id="delete-default-deny"),
    pytest.param("create", "cilium.io", "ciliumnetworkpolicies", "", id="cilium-allow-all"),
    pytest.param("create", "crd.projectcalico.org", "networkpolicies", "", id="calico-allow-all"),
    pytest.param("create", "rbac.authorization.k8s.io", "rolebindings", "", id="rolebinding"),
    pytest.param("create", "rbac.authorization.k8s.io", "roles", "", id="role"),
    pytest.param("patch", "kueue.x-k8s.io", "localqueues", "", id="edit-localqueue"),
    pytest.param("delete", "", "resourcequotas", "", id="delete-quota"),
    pytest.param("update", "", "limitranges", "", id="edit-limitrange"),
    pytest.param("patch", "", "namespaces", "", id="relabel-namespace"),
    pytest.param("impersonate", "", "serviceaccounts", "", id="impersonate-sa"),
    pytest.param("create", "", "serviceaccounts", "token", id="mint-sa-token"),
    pytest.param("create", "", "pods", "binding", id="bind-pod-to-node"),
    pytest.param(
        "create",
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        "",
        id="disable-admission",
    ),
    # an ExternalSecret is the team's (admission holds it to the namespace's own store); the
    # store itself, which says with which identity the namespace reads, is not
    pytest.param("create", "external-secrets.io", "secretstores", "", id="read-other-secrets"),
    pytest.param("create", "external-secrets.io", "pushsecrets", "", id="push-secrets-out"),
    pytest.param("create", "generators.external-secrets.io", "passwords", "", id="generator"),
    pytest.param("create", "networking.k8s.io", "ingresses", "", id="claim-a-host-name"),
    pytest.param("patch", "kueue.x-k8s.io", "workloads", "status", id="self-admit"),
]


@pytest.mark.parametrize("role", ["gpuplane-team-member", "gpuplane-team-owner"])
@pytest.mark.parametrize(("verb", "group", "resource", "subresource"), KUBECTL_ATTACKS)
def test_kubectl_attack_is_refused(
    example: Rendered, role: str, verb: str, group: str, resource: str, subresource: str
) -> None:
    assert not allows(_rules_of(example, role), verb, group, resource, subresource)


def test_the_evaluator_would_have_let_the_built_in_edit_role_through() -> None:
    from tests.test_team_roles import BUILTIN_EDIT

    assert allows(BUILTIN_EDIT, "patch", "networking.k8s.io", "networkpolicies")


@pytest.mark.parametrize("path", [Path("teams/llm.yaml")])
def test_the_attacked_file_is_the_one_the_findings_name(attempt: Attempt, path: Path) -> None:
    _egress(attempt, [{"cidr": "0.0.0.0/0", "ports": [443]}])
    found = errors(attempt.findings(), "egress-too-wide")
    assert {d.at.file for d in found} == {str(path)}
