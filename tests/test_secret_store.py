"""Secrets by reference: the team SecretStores validate against the External Secrets v2.9.0 CRDs,
each logs in as its own team, and a team's Vault role reaches only its own namespaces and path;
the `secret-literal` rule finds secrets in any string and never repeats them."""

from __future__ import annotations

from typing import Any

import pytest

from renderer.layers.security import secrets
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Values
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform, schema_pins
from renderer.policy.secrets import findings_in
from tests.conftest import REPO


@pytest.fixture(scope="module")
def view() -> ClusterView:
    loaded = load_platform(REPO)
    return ClusterView.of(loaded.platform, loaded.platform.clusters["prod-east"])


@pytest.fixture(scope="module")
def outputs(view: ClusterView) -> list[Any]:
    """What the tenancy layer (the stores, in team namespaces) and the security layer (the
    Vault roles) render for secrets."""
    from renderer.layers import tenancy

    return [
        *(o for o in tenancy.render(view) if o.kind in ("SecretStore", "ServiceAccount")),
        *secrets.render(view),
    ]


def test_every_team_namespace_gets_a_store_and_its_identity(
    view: ClusterView, outputs: list[Any]
) -> None:
    stores = {
        m.namespace: m.body for m in outputs if isinstance(m, Manifest) and m.kind == "SecretStore"
    }
    accounts = {
        m.namespace for m in outputs if isinstance(m, Manifest) and m.kind == "ServiceAccount"
    }
    namespaces = {ns.name for t in view.tenants for ns in t.namespaces}
    assert set(stores) == namespaces == accounts
    for tenant in view.tenants:
        for ns in tenant.namespaces:
            auth = stores[ns.name]["spec"]["provider"]["vault"]["auth"]["kubernetes"]
            # a store without serviceAccountRef logs in as the ESO controller: every team alike
            assert auth["serviceAccountRef"] == {"name": secrets.SERVICE_ACCOUNT}
            assert tenant.team.name in auth["role"]
    roles = {s["spec"]["provider"]["vault"]["auth"]["kubernetes"]["role"] for s in stores.values()}
    assert len(roles) == len(view.tenants)


def test_stores_validate_against_the_eso_crds(
    view: ClusterView, outputs: list[Any], validator: OutputValidator
) -> None:
    pins = schema_pins(view.cluster)
    for output in outputs:
        if isinstance(output, Manifest):
            checked = validator.check(output.body, view.cluster.kubernetes_version, pins)
            assert checked.unchecked is None, output.path  # really checked, by the CRD
            assert checked.problems == [], output.path


def test_a_broken_store_fails_the_crd(
    view: ClusterView, outputs: list[Any], validator: OutputValidator
) -> None:
    store = next(o for o in outputs if isinstance(o, Manifest) and o.kind == "SecretStore")
    body: dict[str, Any] = {**store.body, "spec": {"provider": {"vault": {"path": "secret"}}}}
    checked = validator.check(body, view.cluster.kubernetes_version, schema_pins(view.cluster))
    assert checked.problems  # server is required


def test_vault_roles_keep_teams_apart(view: ClusterView, outputs: list[Any]) -> None:
    (roles_file,) = [o for o in outputs if isinstance(o, Values)]
    assert roles_file.path == "secret-store/vault-roles.yaml"
    roles = roles_file.body["roles"]
    paths = [r["policy"]["path"] for r in roles]
    for role in roles:
        tenant = next(t for t in view.tenants if t.team.name == role["team"])
        assert role["boundServiceAccountNamespaces"] == [ns.name for ns in tenant.namespaces]
        assert role["policy"]["path"] == f"secret/data/teams/{role['team']}/*"
    # no team's path is inside another's (llm and llm-eval are both teams here)
    for a in paths:
        for b in paths:
            assert a == b or not a.rstrip("*").startswith(b.rstrip("*"))
    namespaces = [ns for r in roles for ns in r["boundServiceAccountNamespaces"]]
    assert len(namespaces) == len(set(namespaces))


def test_no_store_without_declaration() -> None:
    loaded = load_platform(REPO)
    staging = ClusterView.of(loaded.platform, loaded.platform.clusters["staging-west"])
    assert staging.cluster.secret_store is None
    assert list(secrets.render(staging)) == []
    from renderer.layers import tenancy

    assert not [o for o in tenancy.render(staging) if o.kind == "SecretStore"]


def test_stores_sync_with_the_namespaces_not_before_them(outputs: list[Any]) -> None:
    """The security layer syncs a wave before tenancy; a store there would find no namespace."""
    assert {o.layer for o in outputs if isinstance(o, Manifest)} == {"tenancy"}


SECRETS = [  # (text, the part that is secret)
    ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("ghp_" + "a1B2" * 9, "a1B2a1B2"),
    ("github_pat_" + "11ABCDEFG0" * 3, "11ABCDEFG0"),
    ("xoxb-1234567890-abcdefghij", "1234567890"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", "MIIEowIBAAKCAQEA"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "b3BlbnNzaC1rZXk"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3",
    ),
    ("call me, password=hunter2hunter2", "hunter2"),
    ("token: 8f14e45fceea167a5a36dedd4bea2543", "8f14e45f"),
    ("https://bob:s3cr3tpass@git.example.com/repo", "s3cr3tpass"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secret_shapes_are_found_and_not_repeated(text: str, secret: str) -> None:
    found = findings_in(text)
    assert found
    assert all(secret not in f for f in found)


@pytest.mark.parametrize(
    "text",
    [
        "dataset catalog and tokenizer service",
        "password=<from-vault>",
        "token: ${TOKEN}",
        "llm-infra@example.com",
        "https://vault.prod-east.example.com:8200",
        "registry.example.com/mirror/nvcr.io/nvidia/",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert findings_in(text) == []
