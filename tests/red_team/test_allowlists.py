"""Attacks on image registries and egress by a team lead who edits only `teams/llm.yaml`, against
the example platform, whose gpuplane.yaml allows registry.example.com/, ghcr.io/example/ and
docker.io/library/, and five service networks with their ports.

Before allowlists, registries and egress were held by denylists: a short list of public registry
roots and of special networks. Every attack here got through that (each fails on the main
branch before `spec.allowlists`); each now ends in an error on the team file, or in a rendered
image policy that refuses the pod (evaluated with cel-python, as the API server would).
Where an expectation depends on how a runtime reads a name, the source is distribution/reference
(normalize.go, ParseDockerRef) and containerd (CRI PullImage, hosts.go): renderer/model/images.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.admission_cel import evaluate
from tests.red_team.harness import Attempt, errors, refused_on

TEAM = "teams/llm.yaml"


def _add_image(attempt: Attempt, prefix: str) -> None:
    team = attempt.team("llm")
    team["spec"]["images"] = [*team["spec"]["images"], prefix]
    attempt.save_team("llm", team)


def _add_egress(attempt: Attempt, rule: dict[str, Any]) -> None:
    team = attempt.team("llm")
    team["spec"]["egress"] = [*team["spec"]["egress"], rule]
    attempt.save_team("llm", team)


# --- registries anyone can publish to -------------------------------------------------------------

ANYONE_PUBLISHES = [
    pytest.param("ttl.sh/", id="ttl.sh-anonymous-and-ephemeral"),
    pytest.param("docker.io/evil-user/", id="docker-hub-user-namespace"),
    pytest.param("ghcr.io/attacker/", id="ghcr-any-account"),
    pytest.param("quay.io/attacker/", id="quay-any-account"),
    pytest.param("codeberg.org/attacker/", id="forgejo-package-registry"),
    pytest.param("attacker.azurecr.io/", id="anyones-azure-registry"),
    pytest.param("123456789012.dkr.ecr.us-east-1.amazonaws.com/", id="anyones-ecr"),
    pytest.param("public.ecr.aws/attacker/", id="ecr-public-any-alias"),
]


@pytest.mark.parametrize("prefix", ANYONE_PUBLISHES)
def test_a_registry_anyone_can_publish_to_is_refused(attempt: Attempt, prefix: str) -> None:
    _add_image(attempt, prefix)
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")


# --- hosts that look like the platform's ---------------------------------------------------------

LOOK_ALIKES = [
    pytest.param("registry.example.com.evil.io/", id="suffix-domain"),
    pytest.param("registry-example.com/", id="hyphen-for-dot"),
    pytest.param("registry.examp1e.com/", id="digit-for-letter"),
    pytest.param("registry.example.co/", id="other-tld"),
    pytest.param("registry.example.com.nip.io/", id="wildcard-dns-service"),
    pytest.param("ghcr.io.evil.io/example/", id="public-host-as-subdomain"),
]


@pytest.mark.parametrize("prefix", LOOK_ALIKES)
def test_a_look_alike_host_is_refused(attempt: Attempt, prefix: str) -> None:
    _add_image(attempt, prefix)
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")


# --- the same host, another registry -------------------------------------------------------------

OTHER_PORTS = [
    pytest.param("registry.example.com:8443/", id="port-8443"),
    pytest.param("registry.example.com:5000/llm/", id="port-5000"),
    pytest.param("registry.example.com:80/llm/", id="port-80-plain-http"),
]


@pytest.mark.parametrize("prefix", OTHER_PORTS)
def test_another_port_of_the_allowed_host_is_refused(attempt: Attempt, prefix: str) -> None:
    _add_image(attempt, prefix)
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")


# --- Docker Hub's other names and spellings ------------------------------------------------------

HUB_SPELLINGS = [
    pytest.param("index.docker.io/evil-user/", id="legacy-index-name"),
    pytest.param("registry-1.docker.io/evil-user/", id="the-host-containerd-fetches"),
    pytest.param("docker.io:443/evil-user/", id="explicit-default-port"),
    pytest.param("registry-1.docker.io:443/evil-user/", id="alias-and-default-port"),
    pytest.param("registry-1.docker.io/python:3.12", id="alias-single-name-is-no-library"),
]


@pytest.mark.parametrize("prefix", HUB_SPELLINGS)
def test_docker_hub_spelled_otherwise_is_held_to_the_allowed_path(
    attempt: Attempt, prefix: str
) -> None:
    _add_image(attempt, prefix)
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")


# --- paths that start like an allowed one --------------------------------------------------------

PATH_BOUNDARY = [
    pytest.param("ghcr.io/example-evil/", id="ghcr-org-with-suffix"),
    pytest.param("ghcr.io/examplex/", id="ghcr-org-longer"),
    pytest.param("docker.io/library-evil/", id="library-with-suffix"),
    pytest.param("docker.io/libraryx/", id="library-longer"),
]


@pytest.mark.parametrize("prefix", PATH_BOUNDARY)
def test_a_path_that_only_starts_like_an_allowed_one_is_refused(
    attempt: Attempt, prefix: str
) -> None:
    _add_image(attempt, prefix)
    refused_on(attempt.findings(), TEAM, "image-prefix-not-allowed")


# --- a digest beside a pinned tag ----------------------------------------------------------------

PINNED = "registry.example.com/tools/trainer:1.4"
DIGEST_OVER_TAG = [
    pytest.param(PINNED, f"{PINNED}@sha256:{'6' * 64}", id="sha256"),
    pytest.param(PINNED, f"{PINNED}@sha384:{'6' * 96}", id="sha384"),
    pytest.param(PINNED, f"{PINNED}@sha512:{'6' * 128}", id="sha512"),
    pytest.param(
        "registry.example.com/tools/trainer:latest",
        f"registry.example.com/tools/trainer:latest@sha256:{'6' * 64}",
        id="latest",
    ),
    pytest.param(
        "docker.io/library/python:3.12",
        f"docker.io/library/python:3.12@sha256:{'6' * 64}",
        id="official-image",
    ),
]


@pytest.mark.parametrize(("prefix", "image"), DIGEST_OVER_TAG)
def test_a_digest_does_not_ride_on_a_pinned_tag(attempt: Attempt, prefix: str, image: str) -> None:
    """containerd pulls `name:tag@digest` by the digest alone (ParseDockerRef), so a prefix
    that pins a tag must not admit the tag with any digest after it: that is any image ever
    pushed to the repository."""
    _add_image(attempt, prefix)
    rendered = attempt.render()
    assert errors(rendered.diagnostics) == []
    policy = next(
        dict(m.body)
        for m in rendered.manifests["prod-east"]
        if m.kind == "ValidatingAdmissionPolicy" and m.name == "gpuplane-images-llm"
    )
    assert evaluate(policy, _pod(prefix)) == []  # the pinned tag itself runs
    assert evaluate(policy, _pod(image))


def _pod(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "llm-train", "labels": {}},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }


# --- egress the platform never opened ------------------------------------------------------------

EGRESS = [
    # the internet: anything a pod reads can leave
    pytest.param({"cidr": "8.8.8.8/32", "ports": [53], "protocol": "UDP"}, id="dns-exfiltration"),
    pytest.param({"cidr": "1.1.1.0/24", "ports": [443]}, id="a-public-/24"),
    pytest.param({"cidr": "52.216.0.0/16", "ports": [443]}, id="object-storage-someone-owns"),
    # the control plane and the nodes
    pytest.param({"cidr": "10.96.0.1/32", "ports": [443]}, id="kubeadm-api-server-service"),
    pytest.param({"cidr": "172.20.0.1/32", "ports": [443]}, id="eks-api-server-service"),
    pytest.param({"cidr": "10.0.0.0/16", "ports": [10250]}, id="kubelets"),
    pytest.param({"cidr": "10.0.0.0/16", "ports": [22]}, id="node-ssh"),
    pytest.param({"cidr": "100.64.0.0/16", "ports": [443]}, id="shared-address-space"),
    # an allowed network, asked for more than it allows
    pytest.param({"cidr": "10.20.0.0/16", "ports": [22]}, id="allowed-network-other-port"),
    pytest.param({"cidr": "10.20.0.0/16", "ports": [53], "protocol": "UDP"}, id="other-protocol"),
    pytest.param({"cidr": "10.90.0.0/16", "ports": [9200]}, id="wider-than-the-allowed-/20"),
    pytest.param({"cidr": "10.30.0.0/16", "ports": list(range(5430, 5440))}, id="port-range"),
]


@pytest.mark.parametrize("rule", EGRESS)
def test_egress_outside_what_the_platform_allows_is_refused(
    attempt: Attempt, rule: dict[str, Any]
) -> None:
    _add_egress(attempt, rule)
    refused_on(attempt.findings(), TEAM, "egress-not-allowed")


def test_a_new_team_file_is_held_to_the_same_allowlists(attempt: Attempt) -> None:
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
        "  images: [ttl.sh/]\n"
        "  egress:\n"
        "    - {cidr: 203.0.113.0/24, ports: [443]}\n",
    )
    found = attempt.findings()
    refused_on(found, "teams/mallory.yaml", "image-prefix-not-allowed")
    refused_on(found, "teams/mallory.yaml", "egress-not-allowed")
