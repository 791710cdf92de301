"""The namespaces a team may never take on a cluster: those the platform's own components use.

A team's namespace gets the team's RoleBindings (its owners become `admin` there), its quota,
its default-deny NetworkPolicies and its labels. Declared over a component's namespace, it
would hand the team that component (Argo CD's cluster credentials, the GPU Operator's
privileged driver pods) or cut the component off. The policy refuses every name listed here,
`diff` rates a change that touches one as high risk, and both read it from this one place.

Chosen: every well-known component namespace is reserved on every cluster, whether or not
the cluster runs the component (`volcano-system` on a Kueue cluster, `argocd` where Argo CD
runs elsewhere). Reserving a name nobody uses costs a team nothing; leaving it free lets a
team squat on the name the platform will need the day it installs the component, or on the
cluster an admin expects the component in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from renderer.findings.diagnostics import Location
from renderer.model import metrics, nvidia
from renderer.model.identifiers import skeleton
from renderer.model.names import (
    ARGO_CD_NAMESPACE,
    ARGO_WORKFLOWS_NAMESPACE,
    ENVOY_GATEWAY_NAMESPACE,
    EXTERNAL_SECRETS_NAMESPACE,
    KUEUE_NAMESPACE,
    PROMETHEUS_NAMESPACE,
    SUITE_COST_CENTER,
    SUITE_JOBS_NAMESPACE,
    SUITE_NAMESPACE,
    VOLCANO_NAMESPACE,
)
from renderer.model.platform import Cluster, Platform

KUBERNETES = "Kubernetes"

KUBERNETES_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
RESERVED_PREFIXES: Mapping[str, str] = MappingProxyType({"kube-": KUBERNETES})
"""Whole families of names: Kubernetes keeps `kube-*` for itself, present and future."""

COMPONENT_NAMESPACES: Mapping[str, str] = MappingProxyType(
    {
        ARGO_CD_NAMESPACE: "Argo CD",
        nvidia.NAMESPACE: "the GPU Operator",
        KUEUE_NAMESPACE: "Kueue",
        VOLCANO_NAMESPACE: "Volcano",
        ARGO_WORKFLOWS_NAMESPACE: "Argo Workflows",
        PROMETHEUS_NAMESPACE: "kube-prometheus-stack (monitoring)",
        EXTERNAL_SECRETS_NAMESPACE: "the External Secrets Operator",
        ENVOY_GATEWAY_NAMESPACE: "Envoy Gateway (the platform Gateway and its proxies)",
        SUITE_NAMESPACE: "the acceptance suites",
        SUITE_JOBS_NAMESPACE: "the acceptance suites' Jobs",
    }
)
"""The namespaces gpuplane's add-ons and layers install into, reserved on every cluster."""

INFRASTRUCTURE_NAMESPACES: Mapping[str, str] = MappingProxyType(
    {
        name: f"cluster infrastructure ({what})"
        for name, what in (
            ("cert-manager", "cert-manager"),
            ("ingress-nginx", "the NGINX ingress controller"),
            ("istio-system", "Istio"),
            ("vault", "HashiCorp Vault"),
            ("external-dns", "ExternalDNS"),
            ("gatekeeper-system", "OPA Gatekeeper"),
            ("kyverno", "Kyverno"),
            ("flux-system", "Flux"),
            ("calico-system", "Calico"),
            ("tigera-operator", "the Calico operator"),
            ("metallb-system", "MetalLB"),
            ("local-path-storage", "the local-path provisioner"),
            ("longhorn-system", "Longhorn"),
            ("rook-ceph", "Rook Ceph"),
            ("velero", "Velero"),
            ("kubernetes-dashboard", "the Kubernetes dashboard"),
            ("node-feature-discovery", "Node Feature Discovery"),
            ("nvidia-network-operator", "the NVIDIA Network Operator"),
            ("network-operator", "the NVIDIA Network Operator"),
            ("kuberay", "the KubeRay operator"),
            ("ray-system", "the KubeRay operator"),
            ("kubeflow", "Kubeflow"),
            ("kubeflow-system", "the Kubeflow Trainer"),
            ("mpi-operator", "the MPI Operator"),
            ("jobset-system", "JobSet"),
            ("lws-system", "LeaderWorkerSet"),
            ("keda", "KEDA"),
            ("karpenter", "Karpenter"),
            ("logging", "the log pipeline"),
        )
    }
)
"""Namespaces cluster admins commonly install infrastructure into outside gpuplane, reserved
too: taking one would relabel it, bind the team's groups there and fence the component in
with default-deny policies. A cluster names its own others in `spec.reservedNamespaces`; team
namespaces are also held to the team's name as a prefix (policy rule `namespace-team-prefix`),
so an unknown infrastructure name is out of reach unless a team is named after it."""


PROVIDER_NAMESPACES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "eks": MappingProxyType(
            {
                # GuardDuty's EKS add-on `aws-guardduty-agent` runs its agent pods here:
                # https://docs.aws.amazon.com/guardduty/latest/ug/how-runtime-monitoring-works-eks.html
                # (the namespace: `kubectl -n amazon-guardduty get pods`, EKS workshop,
                # https://www.eksworkshop.com/docs/security/guardduty/runtime-monitoring/)
                "amazon-guardduty": "Amazon GuardDuty's runtime agent (EKS)",
                # the CloudWatch Observability add-on (CloudWatch agent, Fluent Bit):
                # https://docs.aws.amazon.com/eks/latest/userguide/amazon-cloudwatch-observability.html
                "amazon-cloudwatch": "Amazon CloudWatch Observability (EKS)",
                # Fargate's log router reads its ConfigMap `aws-logging` from this namespace:
                # https://docs.aws.amazon.com/eks/latest/userguide/fargate-logging.html
                "aws-observability": "the Fargate log router (EKS)",
                # the Network Flow Monitor agent add-on's namespace:
                # https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-NetworkFlowMonitor-agents-kubernetes-before-you-begin.html
                "amazon-network-flow-monitor": "the CloudWatch Network Flow Monitor agent (EKS)",
                # the `adot` add-on installs the OpenTelemetry operator here
                # (https://aws-otel.github.io/docs/getting-started/adot-eks-add-on; the namespace
                # in AWS's own add-on test, github.com/aws/eks-hybrid test/e2e: adotNamespace)
                "opentelemetry-operator-system": "AWS Distro for OpenTelemetry (EKS)",
            }
        ),
        "gke": MappingProxyType(
            {
                # Managed Service for Prometheus: the operator and collectors in gmp-system ("do
                # not modify or deploy anything in this namespace"), its OperatorConfig in
                # gmp-public: https://cloud.google.com/kubernetes-engine/multi-cloud/docs/azure/how-to/managed-service-prometheus
                # https://github.com/GoogleCloudPlatform/prometheus-engine/blob/main/manifests/operator.yaml
                "gmp-system": "Google Cloud Managed Service for Prometheus (GKE)",
                "gmp-public": "Google Cloud Managed Service for Prometheus (GKE)",
                # Config Sync's reconcilers (cluster-admin) and its OpenTelemetry collector:
                # https://cloud.google.com/kubernetes-engine/config-sync/docs/reference/config-sync-permissions
                # https://cloud.google.com/kubernetes-engine/enterprise/config-sync/docs/how-to/monitoring-config-sync
                "config-management-system": "Config Sync (GKE)",
                "config-management-monitoring": "Config Sync (GKE)",
            }
        ),
        "aks": MappingProxyType(
            {
                # `az aks command invoke` runs its pods here:
                # https://learn.microsoft.com/en-us/troubleshoot/azure/azure-kubernetes/connectivity/resolve-az-aks-command-invoke-failures
                "aks-command": "AKS run command (AKS)",
                # the Istio service mesh add-on's control plane and ingress gateways:
                # https://learn.microsoft.com/en-us/azure/aks/istio-deploy-addon
                # https://learn.microsoft.com/en-us/azure/aks/istio-deploy-ingress
                "aks-istio-system": "the Istio service mesh add-on (AKS)",
                "aks-istio-ingress": "the Istio service mesh add-on (AKS)",
                # the application routing add-on's managed NGINX ("editing the ingress-nginx
                # ConfigMap in app-routing-system is not supported"):
                # https://learn.microsoft.com/en-us/azure/aks/app-routing
                "app-routing-system": "the application routing add-on (AKS)",
            }
        ),
        # CKS documents its managed namespaces as kube-system and the cw-* family (below).
        "coreweave": MappingProxyType({}),
    }
)
"""The namespaces a managed provider runs its own agents in, by the cluster's `spec.provider`
(reserved on that provider's clusters only, and named in the finding before the common
infrastructure list). kube-system, where most add-ons of every provider run, is Kubernetes'."""

PROVIDER_PREFIXES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        # Every namespace AWS documents for its EKS add-ons and agents is amazon-* or aws-*
        # (above); a team may not start a name the next add-on may take.
        "eks": MappingProxyType(
            {
                "amazon-": "Amazon EKS (its amazon-* namespaces)",
                "aws-": "Amazon EKS (its aws-* namespaces)",
            }
        ),
        # GKE's own namespaces are gke-* (gke-managed-system, gke-managed-cim,
        # gke-managed-filestorecsi, gke-gmp-system on Autopilot, ...) and gke-connect, the Connect
        # agent's default: https://cloud.google.com/python/docs/reference/gkehub/latest/google.cloud.gkehub_v1beta1.types.ConnectAgent
        "gke": MappingProxyType({"gke-": "Google Kubernetes Engine (its gke-* namespaces)"}),
        # AKS's own namespaces are aks-* (aks-command, aks-istio-*, above).
        "aks": MappingProxyType({"aks-": "Azure Kubernetes Service (its aks-* namespaces)"}),
        # CKS's control plane namespaces are cw-*, labelled ns.coreweave.cloud/org=control-plane:
        # https://docs.coreweave.com/support/cks/articles/which-resources-should-i-not-modify-on-cks
        "coreweave": MappingProxyType(
            {"cw-": "CoreWeave Kubernetes Service (its cw-* control plane namespaces)"}
        ),
    }
)
"""Families of names a managed provider keeps for itself, by `spec.provider`."""


def prefix_owner(provider: str | None, name: str) -> str | None:
    """Who keeps the family of names `name` belongs to: Kubernetes (`kube-*`) on every cluster,
    the provider's own on a cluster of that provider (None: the cluster is unknown)."""
    families = {**RESERVED_PREFIXES, **PROVIDER_PREFIXES.get(provider or "", {})}
    return next((owner for p, owner in families.items() if name.startswith(p)), None)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Why a namespace is reserved: the component, and the input line that names the namespace
    where one does (the DNS namespace, an entry of `reservedNamespaces`), else None."""

    component: str
    declared: Location | None = None


def reservations(platform: Platform, cluster: Cluster) -> dict[str, Reservation]:
    """Every namespace reserved on `cluster`, by name: Kubernetes' own first, then the
    components', the cluster's provider's, common infrastructure's, then those the cluster and
    repository files name (first reason wins)."""
    found: dict[str, Reservation] = {}

    def reserve(name: str, component: str, declared: Location | None = None) -> None:
        found.setdefault(name, Reservation(component, declared))

    for name in KUBERNETES_NAMESPACES:
        reserve(name, KUBERNETES)
    repository = platform.repository
    if repository is not None:
        reserve(
            repository.argocd_namespace,
            "Argo CD",
            repository.origin.at("spec", "argocdNamespace"),
        )
    for name, component in COMPONENT_NAMESPACES.items():
        reserve(name, component)
    for name, owner in PROVIDER_NAMESPACES.get(cluster.provider, {}).items():
        reserve(name, owner)
    for name, component in INFRASTRUCTURE_NAMESPACES.items():
        reserve(name, component)
    reserve(cluster.dns_namespace, "the cluster DNS", cluster.origin.at("spec", "dns", "namespace"))
    for index, name in enumerate(cluster.reserved_namespaces):
        reserve(
            name,
            "the platform (spec.reservedNamespaces)",
            cluster.origin.at("spec", "reservedNamespaces", index),
        )
    return found


def platform_namespaces(platform: Platform, cluster: Cluster) -> Mapping[str, str]:
    """Every namespace a platform component uses on `cluster`, mapped to the component's name
    ("Argo CD", "Kueue", ...). Names reserved as a family (`kube-*`, a provider's `gke-*`) are
    in `namespace_owner`."""
    return MappingProxyType(
        {name: r.component for name, r in sorted(reservations(platform, cluster).items())}
    )


def namespace_owner(platform: Platform, cluster: Cluster, name: str) -> str | None:
    """The component a namespace name is reserved for on `cluster`, by name or by prefix;
    None when a team may take it."""
    reserved = reservations(platform, cluster).get(name)
    if reserved is not None:
        return reserved.component
    return prefix_owner(cluster.provider, name)


SENTINEL_USES = (
    (
        metrics.PLATFORM_TEAM,
        "the `team` and `cost_center` gpuplane's recording rules give every namespace no team "
        "owns, the `team` of alerts on a GPU no pod holds and of the platform's own alerts",
    ),
    (SUITE_COST_CENTER, "the cost centre of the acceptance suites' Jobs and their namespace"),
)
"""Every value gpuplane writes into a label a team's value also fills (`team` and `cost_center`
on series and alerts, `gpuplane.dev/team` and `gpuplane.dev/cost-center` on objects) to mean
"no team" or "the platform": a team named so, or charged to a cost centre named so, would read
as the platform in every dashboard, cost report and alert route. The other labels written
from a team file take fixed values (`purpose`) or the platform's names (`pool`, `queue`);
the cost reports' platform-wide row, team `*`, is no DNS label and no label value, so the
schemas already refuse it as a team name or cost centre."""


def looks(value: str) -> str:
    """What `value` reads as in a report: its Unicode TR39 skeleton, without case (`P1atform`,
    `PLATFORM` and `platform` read alike)."""
    return skeleton(value.casefold()).casefold()


def sentinel_owner(value: str) -> str | None:
    """What gpuplane means by `value` where a team's name or cost centre would go, or None.
    Compared as it reads (`looks`): a `Platform` or `p1atform` cost centre reads as the
    platform's in a report."""
    uses = [use for sentinel, use in SENTINEL_USES if looks(sentinel) == looks(value)]
    return "; ".join(uses) if uses else None


# --- host names: what an endpoint's `host` may never be ------------------------------------------

RESERVED_HOST_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "argocd": "Argo CD's UI and API",
        "argo-cd": "Argo CD's UI and API",
        "argo": "Argo Workflows' UI",
        "workflows": "Argo Workflows' UI",
        "grafana": "Grafana",
        "prometheus": "Prometheus",
        "alertmanager": "Alertmanager",
        "thanos": "Thanos",
        "opencost": "OpenCost's UI",
        "kueue": "Kueue's dashboard (kueueviz)",
        "vault": "the secret store (Vault)",
        "dex": "the identity provider (Dex)",
        "auth": "the identity provider",
        "login": "the identity provider",
        "sso": "the identity provider",
        "oauth": "the identity provider",
        "keycloak": "the identity provider (Keycloak)",
        "dashboard": "the Kubernetes dashboard",
        "gateway": "the platform Gateway itself",
        "kubernetes": "the Kubernetes API server",
        "registry": "the image registry",
    }
)
"""The first labels of the platform's own host names (`argocd.example.com`, `grafana.ml.example.com`):
the UIs and APIs of the components gpuplane installs or sits beside. An endpoint's host may not
start with one, under any domain (rule `endpoint-host-reserved`): a team that owns a domain
could otherwise publish a `grafana.<domain>` or `login.<domain>` that users mistake for the
platform's and type their credentials into. Chosen like the reserved namespaces: every name, on
every cluster, whether or not the component runs there."""

RESERVED_HOST_SUFFIXES: Mapping[str, str] = MappingProxyType(
    {
        "localhost": "the loopback name (RFC 6761)",
        "local": "multicast DNS (RFC 6762)",
        "svc": "the cluster's Service DNS (`<service>.<namespace>.svc`)",
        "cluster.local": "the cluster's Service DNS",
        "internal": "private-use names (ICANN's .internal)",
    }
)
"""Names no public host may lie in: in-cluster and private DNS, which the Gateway would route to
a team while resolving elsewhere for everyone else."""


def reserved_host(host: str) -> str | None:
    """What a host name is reserved for, None where it is free."""
    labels = host.lower().rstrip(".").split(".")
    for suffix, owner in RESERVED_HOST_SUFFIXES.items():
        parts = suffix.split(".")
        if labels[-len(parts) :] == parts:
            return owner
    return RESERVED_HOST_LABELS.get(labels[0])
