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
from renderer.model import nvidia
from renderer.model.names import (
    ARGO_CD_NAMESPACE,
    ARGO_WORKFLOWS_NAMESPACE,
    EXTERNAL_SECRETS_NAMESPACE,
    KUEUE_NAMESPACE,
    PROMETHEUS_NAMESPACE,
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
            ("envoy-gateway-system", "Envoy Gateway"),
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


@dataclass(frozen=True, slots=True)
class Reservation:
    """Why a namespace is reserved: the component, and the input line that names the namespace
    where one does (the DNS namespace, an entry of `reservedNamespaces`), else None."""

    component: str
    declared: Location | None = None


def reservations(platform: Platform, cluster: Cluster) -> dict[str, Reservation]:
    """Every namespace reserved on `cluster`, by name: Kubernetes' own first, then the
    components', then those the cluster and repository files name (first reason wins)."""
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
    ("Argo CD", "Kueue", ...). Names reserved as a family (`kube-*`) are in `namespace_owner`."""
    return MappingProxyType(
        {name: r.component for name, r in sorted(reservations(platform, cluster).items())}
    )


def namespace_owner(platform: Platform, cluster: Cluster, name: str) -> str | None:
    """The component a namespace name is reserved for on `cluster`, by name or by prefix;
    None when a team may take it."""
    reserved = reservations(platform, cluster).get(name)
    if reserved is not None:
        return reserved.component
    return next((c for p, c in RESERVED_PREFIXES.items() if name.startswith(p)), None)
