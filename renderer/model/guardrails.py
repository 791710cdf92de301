"""The guardrail kinds: objects in a team's namespaces that the platform writes and the team
may only read.

One list, read by two stages: the tenancy layer's team ClusterRoles never grant a write verb on
any of them (tests/test_team_roles.py evaluates every rendered binding against this list), and
the gitops layer's team AppProjects put them on the namespace blacklist, so a team can change
them neither with kubectl nor with an Application of its own. Cluster-scoped kinds are listed
too (admission policies, cluster-wide network policies): a RoleBinding cannot grant them and an
AppProject's empty cluster whitelist refuses them already, but naming them keeps the list the
one place that says what a team may never write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Guardrail:
    """One kind a team may never write: its API group, kind, RBAC resource name and why."""

    group: str
    kind: str
    resource: str
    why: str

    @property
    def network_policy(self) -> bool:
        return self.kind.endswith("NetworkPolicy")


_NETWORK = "network policy: what the team's pods may reach and be reached from"
_ADMISSION = "admission policy: what the API server accepts from the team"
_EXPOSURE = "exposure: which host names and routes reach the team's services"
_STORE = "secrets by reference: which store, with which identity, a namespace's secrets come from"

GUARDRAILS: tuple[Guardrail, ...] = (
    Guardrail("", "ResourceQuota", "resourcequotas", "the namespace's CPU, memory, GPU caps"),
    Guardrail("", "LimitRange", "limitranges", "the namespace's container defaults"),
    Guardrail(
        "",
        "ServiceAccount",
        "serviceaccounts",
        "identity: an annotation binds a cloud identity (IRSA, workload identity); the secret "
        "store logs in as one",
    ),
    Guardrail("rbac.authorization.k8s.io", "Role", "roles", "RBAC: who may do what"),
    Guardrail("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", "RBAC: who may do what"),
    Guardrail("kueue.x-k8s.io", "LocalQueue", "localqueues", "the queue (and quota) jobs enter"),
    Guardrail("kueue.x-k8s.io", "Workload", "workloads", "Kueue's own record of an admission"),
    # every CNI's network policy kinds, namespaced and cluster-wide
    Guardrail("networking.k8s.io", "NetworkPolicy", "networkpolicies", _NETWORK),
    Guardrail("extensions", "NetworkPolicy", "networkpolicies", _NETWORK),
    Guardrail("cilium.io", "CiliumNetworkPolicy", "ciliumnetworkpolicies", _NETWORK),
    Guardrail(
        "cilium.io", "CiliumClusterwideNetworkPolicy", "ciliumclusterwidenetworkpolicies", _NETWORK
    ),
    Guardrail("crd.projectcalico.org", "NetworkPolicy", "networkpolicies", _NETWORK),
    Guardrail("crd.projectcalico.org", "GlobalNetworkPolicy", "globalnetworkpolicies", _NETWORK),
    Guardrail("crd.projectcalico.org", "NetworkSet", "networksets", _NETWORK),
    Guardrail("projectcalico.org", "NetworkPolicy", "networkpolicies", _NETWORK),
    Guardrail("projectcalico.org", "StagedNetworkPolicy", "stagednetworkpolicies", _NETWORK),
    Guardrail("projectcalico.org", "NetworkSet", "networksets", _NETWORK),
    Guardrail("crd.antrea.io", "NetworkPolicy", "networkpolicies", _NETWORK),
    Guardrail("crd.antrea.io", "ClusterNetworkPolicy", "clusternetworkpolicies", _NETWORK),
    Guardrail("policy.networking.k8s.io", "AdminNetworkPolicy", "adminnetworkpolicies", _NETWORK),
    Guardrail(
        "policy.networking.k8s.io",
        "BaselineAdminNetworkPolicy",
        "baselineadminnetworkpolicies",
        _NETWORK,
    ),
    Guardrail("k8s.cni.cncf.io", "MultiNetworkPolicy", "multi-networkpolicies", _NETWORK),
    # admission: the security layer's policies and anything that could stand in for them
    *(
        Guardrail("admissionregistration.k8s.io", kind, resource, _ADMISSION)
        for kind, resource in (
            ("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
            ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
            ("MutatingAdmissionPolicy", "mutatingadmissionpolicies"),
            ("MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings"),
            ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations"),
            ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        )
    ),
    # secrets by reference: the platform's store is the only way a secret value comes in (teams
    # write ExternalSecrets, which admission holds to that store: layers/security/secret_refs)
    *(
        Guardrail("external-secrets.io", kind, resource, _STORE)
        for kind, resource in (
            ("SecretStore", "secretstores"),
            ("ClusterSecretStore", "clustersecretstores"),
            ("ClusterExternalSecret", "clusterexternalsecrets"),
            ("PushSecret", "pushsecrets"),
            ("ClusterPushSecret", "clusterpushsecrets"),
        )
    ),
    Guardrail("generators.external-secrets.io", "ClusterGenerator", "clustergenerators", _STORE),
    # exposure and drains: a host name or route is the platform's to hand out (a team's
    # Ingress could claim another's host), and a PodDisruptionBudget can block node drains
    Guardrail("networking.k8s.io", "Ingress", "ingresses", _EXPOSURE),
    *(
        Guardrail("gateway.networking.k8s.io", kind, resource, _EXPOSURE)
        for kind, resource in (
            ("HTTPRoute", "httproutes"),
            ("GRPCRoute", "grpcroutes"),
            ("TLSRoute", "tlsroutes"),
            ("TCPRoute", "tcproutes"),
            ("UDPRoute", "udproutes"),
            ("Gateway", "gateways"),
        )
    ),
    Guardrail(
        "policy",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "node maintenance: a budget of zero disruptions blocks every drain of the pool's nodes",
    ),
)
"""Every kind a team may read at most. Network policies of any CNI: a policy a team writes is
added to the platform's (policies are additive), so one allow-all policy undoes default-deny.
Not ExternalSecret: a team asks for its Secrets with one, and admission holds it to the
namespace's own SecretStore."""

NETWORK_POLICY_GLOB: Mapping[str, str] = MappingProxyType({"group": "*", "kind": "*NetworkPolicy"})
"""One Argo CD blacklist entry for every CNI's network policy (Argo CD matches group and kind
as globs), including ones this list does not know yet."""

GENERATOR_GROUP = "generators.external-secrets.io"
GENERATOR_GLOB: Mapping[str, str] = MappingProxyType({"group": GENERATOR_GROUP, "kind": "*"})
"""Every External Secrets generator (Password, VaultDynamicSecret, ECRAuthorizationToken, ... and
kinds to come): a generator makes credentials with an identity of its own, so a team's
Applications may not add one. The team roles grant nothing in the group either."""


def argocd_blacklist() -> tuple[Mapping[str, str], ...]:
    """The guardrails as AppProject `namespaceResourceBlacklist` entries: the network policy
    glob, then every other guardrail once, in list order, then the generator glob."""
    seen: list[Mapping[str, str]] = [NETWORK_POLICY_GLOB]
    for guardrail in GUARDRAILS:
        if guardrail.network_policy or guardrail.group == GENERATOR_GROUP:
            continue
        entry = MappingProxyType({"group": guardrail.group, "kind": guardrail.kind})
        if entry not in seen:
            seen.append(entry)
    seen.append(GENERATOR_GLOB)
    return tuple(seen)
