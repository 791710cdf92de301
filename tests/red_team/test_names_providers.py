"""Attacks on the namespaces a managed Kubernetes provider runs its own agents in.

A team namespace must start with the team's name, so the attacker names a new team after the
provider's prefix (`amazon`, `aws`, `gke`, `gmp`, `config`, `aks`, `app`, `cw`) and declares the
provider's namespace as its own: its owners become admin next to the provider's agent
(GuardDuty's runtime sensor, Config Sync's cluster-admin reconcilers, AKS run command's pods),
its default-deny policies cut the agent off, its labels relabel it.

The example's staging-west is an EKS cluster. For GKE, AKS and CoreWeave the setup step sets
staging-west's `spec.provider`: that is the platform team's configuration the attack then runs
against, not part of the attack. Each name and its owner come from the provider's documentation
(cited beside each entry in renderer/model/reserved.py).
"""

from __future__ import annotations

import pytest

from tests.red_team.harness import Attempt, errors, refused_on


def new_team(attempt: Attempt, team: str, namespace: str) -> tuple[str, int]:
    """The attacker's new team file: search's, renamed `team`, its training namespace renamed
    `namespace` on staging-west. The file and the attacked line."""
    text = attempt.path("teams/search.yaml").read_text()
    text = text.replace("name: search\n", f"name: {team}\n")
    text = text.replace("name: search-train,", f"name: {namespace},")
    text = text.replace("name: search-serve,", f"name: {team}-serve,")
    file = f"teams/{team}.yaml"
    attempt.write(file, text)
    lines = text.splitlines()
    return file, next(n for n, line in enumerate(lines, 1) if f"{{name: {namespace}," in line)


def on_provider(attempt: Attempt, provider: str) -> None:
    attempt.edit("clusters/staging-west.yaml", "provider: eks", f"provider: {provider}")


def assert_refused(attempt: Attempt, file: str, line: int, namespace: str, owner: str) -> None:
    found = refused_on(attempt.findings(), file, "reserved-namespace")
    assert found.message == (
        f"namespace '{namespace}' is reserved for {owner} on cluster 'staging-west'"
    )
    assert found.at.line == line, str(found)
    assert not errors(attempt.findings(), "namespace-team-prefix")  # the attacker's own prefix


@pytest.mark.parametrize(
    ("team", "namespace", "owner"),
    [
        ("amazon", "amazon-guardduty", "Amazon GuardDuty's runtime agent (EKS)"),
        ("amazon", "amazon-cloudwatch", "Amazon CloudWatch Observability (EKS)"),
        (
            "amazon",
            "amazon-network-flow-monitor",
            "the CloudWatch Network Flow Monitor agent (EKS)",
        ),
        ("aws", "aws-observability", "the Fargate log router (EKS)"),
        ("opentelemetry", "opentelemetry-operator-system", "AWS Distro for OpenTelemetry (EKS)"),
        # the next add-on's: every namespace AWS documents for its agents is amazon-* or aws-*
        ("amazon", "amazon-eks-pod-identity", "Amazon EKS (its amazon-* namespaces)"),
        ("aws", "aws-load-balancer", "Amazon EKS (its aws-* namespaces)"),
    ],
)
def test_take_an_eks_namespace(attempt: Attempt, team: str, namespace: str, owner: str) -> None:
    file, line = new_team(attempt, team, namespace)
    assert_refused(attempt, file, line, namespace, owner)


@pytest.mark.parametrize(
    ("team", "namespace", "owner"),
    [
        ("gmp", "gmp-system", "Google Cloud Managed Service for Prometheus (GKE)"),
        ("gmp", "gmp-public", "Google Cloud Managed Service for Prometheus (GKE)"),
        ("config", "config-management-system", "Config Sync (GKE)"),
        ("config", "config-management-monitoring", "Config Sync (GKE)"),
        ("gke", "gke-managed-system", "Google Kubernetes Engine (its gke-* namespaces)"),
        ("gke", "gke-connect", "Google Kubernetes Engine (its gke-* namespaces)"),
        ("gke", "gke-gmp-system", "Google Kubernetes Engine (its gke-* namespaces)"),
    ],
)
def test_take_a_gke_namespace(attempt: Attempt, team: str, namespace: str, owner: str) -> None:
    on_provider(attempt, "gke")
    file, line = new_team(attempt, team, namespace)
    assert_refused(attempt, file, line, namespace, owner)


@pytest.mark.parametrize(
    ("team", "namespace", "owner"),
    [
        ("aks", "aks-command", "AKS run command (AKS)"),
        ("aks", "aks-istio-system", "the Istio service mesh add-on (AKS)"),
        ("aks", "aks-istio-ingress", "the Istio service mesh add-on (AKS)"),
        ("app", "app-routing-system", "the application routing add-on (AKS)"),
        ("aks", "aks-istio-egress", "Azure Kubernetes Service (its aks-* namespaces)"),
    ],
)
def test_take_an_aks_namespace(attempt: Attempt, team: str, namespace: str, owner: str) -> None:
    on_provider(attempt, "aks")
    file, line = new_team(attempt, team, namespace)
    assert_refused(attempt, file, line, namespace, owner)


@pytest.mark.parametrize("namespace", ["cw-system", "cw-hpc-verification", "cw-metrics"])
def test_take_a_coreweave_namespace(attempt: Attempt, namespace: str) -> None:
    on_provider(attempt, "coreweave")
    file, line = new_team(attempt, "cw", namespace)
    owner = "CoreWeave Kubernetes Service (its cw-* control plane namespaces)"
    assert_refused(attempt, file, line, namespace, owner)


def test_a_provider_namespace_the_team_already_declares_by_editing_its_own_file(
    attempt: Attempt,
) -> None:
    """Not only a new file: a team named after the prefix that renames one of its entries."""
    file, _ = new_team(attempt, "amazon", "amazon-train")
    attempt.edit(file, "name: amazon-train,", "name: amazon-guardduty,")
    found = refused_on(attempt.findings(), file, "reserved-namespace")
    assert "Amazon GuardDuty" in found.message
