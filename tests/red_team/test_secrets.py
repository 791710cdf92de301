"""Attacks on secrets and clean-up by a team lead who may edit only `teams/<own-team>.yaml` or add
a team file: each ends in a finding on that file, or renders nothing that widens the team's reach.
"""

from __future__ import annotations

from typing import Any

import pytest

from renderer.layers.security import cleanup, secrets
from renderer.model.view import ClusterView
from tests.red_team.harness import Attempt, refused_on, without_serving

LLM = "teams/llm.yaml"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
TOKEN = "ghp_" + "Zx9" * 12


def _no_echo(attempt: Attempt, secret: str) -> None:
    for finding in attempt.findings():
        assert secret not in finding.message and secret not in (finding.hint or "")


def test_aws_key_in_a_description(attempt: Attempt) -> None:
    attempt.edit(
        LLM,
        "description: Pre-training and post-training",
        f"description: key {AWS_KEY} for Pre-training and post-training",
    )
    found = refused_on(attempt.findings(), LLM, "secret-literal")
    assert found.at.line == 8  # the description's own line
    _no_echo(attempt, AWS_KEY[4:])


def test_private_key_in_contact(attempt: Attempt) -> None:
    team = attempt.team("llm")
    team["spec"]["contact"] = PRIVATE_KEY
    attempt.save_team("llm", team)
    refused_on(attempt.findings(), LLM, "secret-literal")
    _no_echo(attempt, "b3BlbnNzaC1rZXktdjEAAAAA")


def test_token_in_an_egress_description(attempt: Attempt) -> None:
    attempt.edit(
        LLM, "description: experiment tracking", f"description: experiment tracking {TOKEN}"
    )
    found = refused_on(attempt.findings(), LLM, "secret-literal")
    assert "egress" in found.message
    _no_echo(attempt, TOKEN[4:])


def test_password_in_a_label_of_a_new_team_file(attempt: Attempt) -> None:
    text = (
        attempt.path(LLM)
        .read_text()
        .replace(
            "name: llm\n",
            'name: llm2\n  annotations:\n    note: "db password=Sup3rS3cretValue"\n',
            1,
        )
    )
    for ns in ("llm-train", "llm-serve", "llm-notebooks"):
        text = text.replace(f"name: {ns},", f"name: {ns}2,")
    attempt.write("teams/llm2.yaml", text)
    refused_on(attempt.findings(), "teams/llm2.yaml", "secret-literal")
    _no_echo(attempt, "Sup3rS3cretValue")


def test_a_year_of_finished_jobs(attempt: Attempt) -> None:
    attempt.edit(LLM, "finishedJobs: 48h", "finishedJobs: 365d")
    found = refused_on(attempt.findings(), LLM, "retention-bounds")
    assert (
        found.at.line
        == attempt.path(LLM).read_text().splitlines().index("    finishedJobs: 365d") + 1
    )


def test_zero_retention_to_destroy_evidence(attempt: Attempt) -> None:
    attempt.edit(LLM, "finishedJobs: 48h", "finishedJobs: 0s")
    refused_on(attempt.findings(), LLM, "retention-bounds")


def test_dropping_retention_still_caps_the_jobs(attempt: Attempt) -> None:
    """Without `retention`, the team's Jobs are capped at the platform default, not unbounded."""
    team = attempt.team("llm")
    del team["spec"]["retention"]
    attempt.save_team("llm", team)
    loaded = attempt.findings()
    assert not [d for d in loaded if d.severity.name == "ERROR"]
    from renderer.pipeline import load_platform

    platform = load_platform(attempt.root).platform
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    (policy, *_) = [
        m for m in cleanup.render(view) if m.body["kind"] == "ValidatingAdmissionPolicy"
    ]
    limit = next(v for v in policy.body["spec"]["variables"] if v["name"] == "limit")
    assert "'llm': 604800" in limit["expression"]  # 7d


@pytest.mark.parametrize("how", ["namespace", "new-team"])
def test_reading_another_teams_secret_path(attempt: Attempt, how: str) -> None:
    """A team cannot get a store (or a Vault role) that logs in for another team: roles and
    paths come from the team's own name, and a namespace of the same name as another team's
    is refused before anything renders."""
    from renderer.pipeline import load_platform

    if how == "namespace":  # take the vision team's namespace name into llm's file
        attempt.edit(
            LLM,
            "- {name: llm-notebooks, cluster: prod-east, purpose: notebooks}",
            "- {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n"
            "    - {name: vision-train, cluster: prod-east, purpose: training}",
        )
        rendered = attempt.render()
        # which of the two files the clash lands on is the namespace rules' part (item 1)
        assert [d for d in rendered.diagnostics if d.rule == "namespace-conflict"]
        assert not rendered.manifests  # nothing is written: no llm store in vision's namespace
        return
    # a new team named so that its path would sit inside llm's: teams/llm/x is not a team name
    text = without_serving(attempt.path(LLM).read_text()).replace("name: llm\n", "name: llm-x\n", 1)
    for ns in ("llm-train", "llm-serve", "llm-notebooks"):
        text = text.replace(f"name: {ns},", f"name: {ns}-x,").replace(
            f"- name: {ns}\n", f"- name: {ns}-x\n"
        )
    attempt.write("teams/llm-x.yaml", text)
    platform = load_platform(attempt.root).platform
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    store = platform.clusters["prod-east"].secret_store
    assert store is not None
    body = secrets.vault_roles(view, store)
    by_team = {r["team"]: r for r in body["roles"]}
    assert by_team["llm-x"]["policy"]["path"] == "secret/data/teams/llm-x/*"
    assert by_team["llm-x"]["boundServiceAccountNamespaces"] == [
        "llm-notebooks-x",
        "llm-serve-x",
        "llm-train-x",
    ]
    # llm's path is not a prefix of the newcomer's, nor the other way round
    assert not "teams/llm-x/".startswith("teams/llm/")


# --- secrets only by reference, at admission (renderer.layers.security.secret_refs) -------------

NEW_NAMESPACE = "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}"


def _store_policy_and_bound(attempt: Attempt) -> tuple[dict[str, Any], list[str]]:
    """The rendered store policy of prod-east and the namespaces its binding holds in; every
    secret_refs binding must hold in the same ones."""
    from renderer.layers.security import secret_refs

    rendered = attempt.render()
    assert not [d for d in rendered.diagnostics if d.severity.name == "ERROR"]
    names = (
        secret_refs.ENV_POLICY,
        secret_refs.CONFIGMAP_POLICY,
        secret_refs.STORE_POLICY,
        secret_refs.EXTERNAL_SECRET_POLICY,
    )
    found = {(m.kind, m.name): m.body for m in rendered.manifests["prod-east"] if m.name in names}
    namespaces: list[list[str]] = []
    for name in names:
        body = found[("ValidatingAdmissionPolicyBinding", name)]
        (expr,) = body["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        namespaces.append(expr["values"])
    assert all(values == namespaces[0] for values in namespaces)
    return dict(found[("ValidatingAdmissionPolicy", secret_refs.STORE_POLICY)]), namespaces[0]


@pytest.mark.parametrize("how", ["own-file", "new-team"])
def test_a_new_namespace_does_not_escape_the_secret_policies(attempt: Attempt, how: str) -> None:
    """A namespace added to the own file, or a new team's, is bound like every other: Secrets
    there still come only from the store, env values still by reference."""
    if how == "own-file":
        attempt.edit(
            LLM,
            NEW_NAMESPACE,
            NEW_NAMESPACE + "\n    - {name: llm-scratch, cluster: prod-east, purpose: batch}",
        )
        newcomer = "llm-scratch"
    else:
        text = without_serving(attempt.path(LLM).read_text())
        text = text.replace("name: llm\n", "name: llm-side\n", 1)
        for ns in ("train", "serve", "notebooks"):
            text = text.replace(f"name: llm-{ns},", f"name: llm-side-{ns},").replace(
                f"- name: llm-{ns}\n", f"- name: llm-side-{ns}\n"
            )
        head, _, rest = text.partition("  gpus:\n")
        text = head + "  gpus: []\n  resources:\n" + rest.partition("  resources:\n")[2]
        attempt.write("teams/llm-side.yaml", text)  # no GPUs: no pool is over-promised
        newcomer = "llm-side-train"
    _, namespaces = _store_policy_and_bound(attempt)
    assert newcomer in namespaces and "llm-train" in namespaces


def test_a_lookalike_of_the_stores_namespace_writes_no_secrets(attempt: Attempt) -> None:
    """`external-secrets-x` is not the team's name, so team llm cannot take it
    (`namespace-team-prefix`); and were a namespace of that name anyone's, its service accounts
    would not be the store's: the store policy refuses their Secrets."""
    from tests.admission_cel import evaluate

    attempt.edit(
        LLM,
        NEW_NAMESPACE,
        NEW_NAMESPACE + "\n    - {name: external-secrets-x, cluster: prod-east, purpose: batch}",
    )
    refused_on(attempt.findings(), LLM, "namespace-team-prefix")
    attempt.edit(LLM, "{name: external-secrets-x,", "{name: llm-external-secrets,")
    body, namespaces = _store_policy_and_bound(attempt)
    assert "llm-external-secrets" in namespaces
    opaque = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque"}
    for impostor in (
        "system:serviceaccount:external-secrets-x:external-secrets",
        "system:serviceaccount:llm-external-secrets:external-secrets",
    ):
        assert evaluate(body, opaque, username=impostor), impostor
    assert evaluate(body, opaque, username="system:serviceaccount:external-secrets:x") == []


def test_take_the_stores_namespace_to_act_as_the_store(attempt: Attempt) -> None:
    """The one namespace whose service accounts may write Secrets is the store's: reserved."""
    attempt.edit(
        LLM,
        NEW_NAMESPACE,
        NEW_NAMESPACE + "\n    - {name: external-secrets, cluster: prod-east, purpose: batch}",
    )
    found = refused_on(attempt.findings(), LLM, "reserved-namespace")
    assert "external-secrets" in found.message


def test_move_a_namespace_to_a_cluster_without_a_store(attempt: Attempt) -> None:
    """staging-west declares no store, so Secrets are writable there; the team's queue does
    not reach it, so the team cannot put a namespace there."""
    attempt.edit(
        LLM,
        NEW_NAMESPACE,
        NEW_NAMESPACE + "\n    - {name: llm-secrets, cluster: staging-west, purpose: batch}",
    )
    refused_on(attempt.findings(), LLM, "namespace-outside-queue-cluster")


# --- ExternalSecrets: the one way to a Secret on a store cluster --------------------------------

ARGOCD_CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
GENERATORS = "generators.external-secrets.io/v1alpha1"


def _external_secret(namespace: str, **spec: Any) -> dict[str, Any]:
    data = [{"secretKey": "token", "remoteRef": {"key": "prod/db", "property": "password"}}]
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": "loot", "namespace": namespace},
        "spec": {"secretStoreRef": {"name": "team-secrets"}, "data": data, **spec},
    }


ESO_ATTACKS: dict[str, dict[str, Any]] = {
    # the store every namespace may use reads with one identity: another team's paths
    "cluster-secret-store": {
        "secretStoreRef": {"name": "vault-platform", "kind": "ClusterSecretStore"}
    },
    "cluster-secret-store-per-entry": {
        "data": [
            {
                "secretKey": "token",
                "remoteRef": {"key": "prod/db"},
                "sourceRef": {"storeRef": {"name": "vault-platform", "kind": "ClusterSecretStore"}},
            }
        ]
    },
    # a generator mints credentials with an identity of its own
    "cluster-generator": {
        "data": [],
        "dataFrom": [
            {
                "sourceRef": {
                    "generatorRef": {
                        "apiVersion": GENERATORS,
                        "kind": "ClusterGenerator",
                        "name": "ecr-admin",
                    }
                }
            }
        ],
    },
    "vault-dynamic-secret-generator": {
        "data": [
            {
                "secretKey": "creds",
                "remoteRef": {"key": "x"},
                "sourceRef": {
                    "generatorRef": {
                        "apiVersion": GENERATORS,
                        "kind": "VaultDynamicSecret",
                        "name": "db-admin",
                    }
                },
            }
        ]
    },
    # the operator writes any kind with its own rights
    "generic-target": {"target": {"manifest": {"apiVersion": "v1", "kind": "ConfigMap"}}},
    # a token that never expires for a ServiceAccount of the namespace
    "service-account-token": {
        "target": {
            "template": {
                "type": "kubernetes.io/service-account-token",
                "metadata": {
                    "annotations": {"kubernetes.io/service-account.name": "gpuplane-secret-store"}
                },
            }
        }
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ESO_ATTACKS))
@pytest.mark.parametrize("how", ["kubectl", "own-application"])
def test_an_external_secret_that_reaches_past_the_teams_store(
    attempt: Attempt, attack: str, how: str
) -> None:
    """Members write ExternalSecrets (they must, to get a Secret); one that names a
    ClusterSecretStore, a generator, a non-Secret target or a token Secret is refused, whether
    applied with kubectl or synced by the team's own Argo CD Application. In a namespace the
    attacker adds too."""
    from renderer.layers.security import secret_refs
    from tests.admission_cel import evaluate

    attempt.edit(
        LLM,
        NEW_NAMESPACE,
        NEW_NAMESPACE + "\n    - {name: llm-vault, cluster: prod-east, purpose: batch}",
    )
    rendered = attempt.render()
    assert not [d for d in rendered.diagnostics if d.severity.name == "ERROR"]
    policies = {
        (m.kind, m.name): m.body
        for m in rendered.manifests["prod-east"]
        if m.name == secret_refs.EXTERNAL_SECRET_POLICY
    }
    binding = policies[("ValidatingAdmissionPolicyBinding", secret_refs.EXTERNAL_SECRET_POLICY)]
    (expr,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert {"llm-vault", "llm-train"} <= set(expr["values"])
    body = policies[("ValidatingAdmissionPolicy", secret_refs.EXTERNAL_SECRET_POLICY)]
    username = ARGOCD_CONTROLLER if how == "own-application" else "oidc:lead@example.com"
    for namespace in ("llm-vault", "llm-train"):
        honest = _external_secret(namespace)
        assert evaluate(body, honest, username=username) == []
        hostile = _external_secret(namespace, **ESO_ATTACKS[attack])
        assert evaluate(body, hostile, username=username), (attack, namespace)
        assert evaluate(body, hostile, old=honest, operation="UPDATE", username=username)
