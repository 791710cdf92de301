"""Secrets by reference: a SecretStore in each team namespace, so teams write ExternalSecrets
(External Secrets Operator, `external-secrets.io/v1`) and no file holds a secret value.

Rendered only where the cluster declares `spec.secretStore`. The stores sit in team namespaces, so
they are tenancy objects (`namespace_objects`, called by the tenancy layer: they sync with the
namespaces, after the security wave); this module adds the Vault roles. Why one namespaced SecretStore per
team namespace and not one ClusterSecretStore: a ClusterSecretStore's `conditions` only choose
which namespaces may use it; every namespace that may then reads with the same Vault identity,
so any of them could name another team's path in an ExternalSecret's `remoteRef.key`. A
namespaced SecretStore logs in with a ServiceAccount of its own namespace (`serviceAccountRef`;
without one ESO would use its controller's identity, the same for every team), and Vault's
Kubernetes auth binds the team's role to that ServiceAccount in that team's namespaces only, with
a policy that reads the team's path and nothing else. The isolation is Vault's, so the roles
Vault must hold are written beside the objects, never applied, as
`rendered/<cluster>/secret-store/vault-roles.yaml` (docs/secrets-and-cleanup.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model.platform import Cluster, Namespace, SecretStore, Team
from renderer.model.security import admission_policies_served
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest, Output, Values, metadata

LAYER = "security"
API_VERSION = "external-secrets.io/v1"
STORE_NAME = "team-secrets"
"""The SecretStore every team namespace has: an ExternalSecret names it in `secretStoreRef`."""
SERVICE_ACCOUNT = "gpuplane-secret-store"
"""The identity the store logs in to Vault with; no workload needs to run as it."""
FOLDER = "secret-store"
FILE = "vault-roles"


def from_store(cluster: Cluster) -> bool:
    """Whether team Secrets come only from the store on `cluster`: it declares one and serves
    the admission policies that hold it (`secret_refs`: Secrets written only by the External
    Secrets Operator, ExternalSecrets naming only the namespace's SecretStore). There the team
    roles write ExternalSecrets and no Secrets; elsewhere owners write Secrets and nobody writes
    an ExternalSecret, which nothing would hold to the team's store."""
    return cluster.secret_store is not None and admission_policies_served(cluster)


def render(view: ClusterView) -> Iterator[Output]:
    """The Vault roles the team stores need, written beside the objects. The stores themselves
    live in team namespaces, so they sync with tenancy, after the namespaces exist
    (`namespace_objects`, called by the tenancy layer)."""
    store = view.cluster.secret_store
    if store is None:
        return
    yield Values(
        layer=LAYER,
        chart=FILE,
        body=vault_roles(view, store),
        source=store.origin.location,
        folder=FOLDER,
        comment=(
            "The Vault side of the team secret stores: create each role on the Kubernetes auth "
            f"mount {store.auth_mount_path} with its policy, e.g. `vault write "
            f"auth/{store.auth_mount_path}/role/<role> bound_service_account_names=... "
            "bound_service_account_namespaces=... policies=<role>`. Not applied to the cluster: "
            "no kustomization lists this file."
        ),
    )


def namespace_objects(
    view: ClusterView, team: Team, ns: Namespace, layer: str
) -> Iterator[Manifest]:
    """The ServiceAccount and SecretStore of one team namespace, in `layer` (tenancy's: a
    namespaced object cannot sync before its namespace); nothing without a secret store."""
    store = view.cluster.secret_store
    if store is None:
        return
    labels = {"team": team.name, "cost_center": team.cost_center}
    yield Manifest(
        layer,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata(SERVICE_ACCOUNT, ns.name, **labels),
            "automountServiceAccountToken": False,
        },
        ns.origin.location,
    )
    yield Manifest(
        layer,
        {
            "apiVersion": API_VERSION,
            "kind": "SecretStore",
            "metadata": metadata(STORE_NAME, ns.name, **labels),
            "spec": {"provider": {"vault": _vault(store, team.name)}},
        },
        ns.origin.location,
    )


def _vault(store: SecretStore, team: str) -> dict[str, Any]:
    return {
        "server": store.server,
        "path": store.mount_path,
        "version": store.version,
        "auth": {
            "kubernetes": {
                "mountPath": store.auth_mount_path,
                "role": store.role_of(team),
                "serviceAccountRef": {"name": SERVICE_ACCOUNT},
            }
        },
    }


def readable_path(store: SecretStore, team: str) -> str:
    """The Vault API path the team's policy grants: KV v2 reads go through `<mount>/data/`."""
    data = "data/" if store.version == "v2" else ""
    return f"{store.mount_path}/{data}{store.path_of(team)}/*"


def vault_roles(view: ClusterView, store: SecretStore) -> dict[str, Any]:
    """Each team's Vault role: who may log in with it, and the one path its policy reads."""
    return {
        "cluster": view.cluster.name,
        "server": store.server,
        "authMountPath": store.auth_mount_path,
        "roles": [_role(store, tenant) for tenant in view.tenants],
    }


def _role(store: SecretStore, tenant: Tenant) -> dict[str, Any]:
    team = tenant.team.name
    return {
        "name": store.role_of(team),
        "team": team,
        "boundServiceAccountNames": [SERVICE_ACCOUNT],
        "boundServiceAccountNamespaces": [ns.name for ns in tenant.namespaces],
        "policy": {"path": readable_path(store, team), "capabilities": ["read"]},
    }
