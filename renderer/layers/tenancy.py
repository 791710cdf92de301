"""Tenancy: a namespace per team and purpose, with its RBAC, quota, defaults and network policy.

These are the guide's first multi-tenancy controls: namespace per team and purpose, RBAC bound to
IdP groups, ResourceQuota and LimitRange for GPUs, CPU, memory and storage, and default-deny
network policy with explicit egress. Cluster-wide PriorityClasses come from the queues.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model.admission import cluster_queue_name
from renderer.model.capacity import (
    DRA_DEVICE_CLASS,
    DRA_MIG_DEVICE_CLASS,
    DRA_QUOTA_SUFFIX,
    SHARING_MODES,
    how_to_request,
    maximum_holding,
    pool_offers,
    usable_quotas,
)
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import EgressRule, Namespace, Team
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest, metadata

LAYER = "tenancy"

ROLE_FOR = (("owners", "admin"), ("members", "edit"), ("viewers", "view"))
"""IdP group lists and the built-in ClusterRole each is bound to, inside the namespace only."""

DEFAULT_CONTAINER = {"cpu": "1", "memory": "2Gi"}


def render(view: ClusterView) -> Iterator[Manifest]:
    """Every tenancy object of one cluster."""
    for queue in view.queues:
        for prio in queue.priorities:
            yield Manifest(
                LAYER,
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": metadata(f"{queue.name}-{prio.name}", queue=queue.name),
                    "value": prio.value,
                    "globalDefault": False,
                    "preemptionPolicy": "PreemptLowerPriority",
                    "description": prio.description
                    or f"Queue '{queue.name}', priority '{prio.name}'.",
                },
                queue.origin.location,
            )
    for tenant in view.tenants:
        for namespace in tenant.namespaces:
            yield from _namespace_objects(view, tenant, namespace)


def _namespace_objects(view: ClusterView, tenant: Tenant, ns: Namespace) -> Iterator[Manifest]:
    team = tenant.team
    source = ns.origin.location
    common = {"team": team.name, "cost_center": team.cost_center}

    def manifest(kind: str, api_version: str, name: str, body: dict[str, Any]) -> Manifest:
        return Manifest(
            LAYER,
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": metadata(name, ns.name, **common),
                **body,
            },
            source,
        )

    yield Manifest(LAYER, _namespace(view, team, ns), source)
    for field_name, role in ROLE_FOR:
        groups = getattr(team, field_name)
        if groups:
            yield manifest(
                "RoleBinding",
                "rbac.authorization.k8s.io/v1",
                f"gpuplane-{role}",
                {
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": role,
                    },
                    "subjects": [
                        {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "Group",
                            "name": view.cluster.group_prefix + g,
                        }
                        for g in groups
                    ],
                },
            )
    yield manifest("ResourceQuota", "v1", "gpuplane", {"spec": {"hard": _quota(view, team, ns)}})
    defaults = {**DEFAULT_CONTAINER, **team.defaults}
    yield manifest(
        "LimitRange",
        "v1",
        "gpuplane-defaults",
        {
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "defaultRequest": {"cpu": defaults["cpu"], "memory": defaults["memory"]},
                        "default": {"memory": defaults["memory"]},
                    }
                ]
            }
        },
    )
    yield from (
        manifest("NetworkPolicy", "networking.k8s.io/v1", name, {"spec": spec})
        for name, spec in _network_policies(view, team)
    )


def _namespace(view: ClusterView, team: Team, ns: Namespace) -> dict[str, Any]:
    enforce = ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]
    version = f"v{view.cluster.kubernetes_version}"
    meta = metadata(ns.name, team=team.name, cost_center=team.cost_center, purpose=ns.purpose)
    meta["labels"].update(
        {
            "pod-security.kubernetes.io/enforce": enforce,
            "pod-security.kubernetes.io/enforce-version": version,
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/audit-version": version,
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": version,
        }
    )
    annotations = {"gpuplane.dev/gpu-sharing": _sharing_note(view, team, ns)}
    if view.cluster.scheduler == "volcano":
        # Volcano's counterpart of Kueue's `default` LocalQueue: the queue of this namespace's purpose
        annotations["scheduling.volcano.sh/queue-name"] = cluster_queue_name(team.name, ns.purpose)
    if team.description:
        annotations["gpuplane.dev/description"] = team.description
    if team.contact:
        annotations["gpuplane.dev/contact"] = team.contact
    meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _sharing_note(view: ClusterView, team: Team, ns: Namespace) -> str:
    """What a pod in this namespace gets on each pool it can use, for the people who read it."""
    resources: dict[str, list[str]] = {}
    notes: dict[str, str] = {}
    for pool, _, offer in usable_quotas(view.platform, team, ns):
        resources.setdefault(pool.name, []).append(how_to_request(offer))
        shared = (
            f", {pool.replicas} replicas per GPU" if pool.sharing in ("time-slicing", "mps") else ""
        )
        notes[pool.name] = f"{SHARING_MODES[pool.sharing]} of {pool.accelerator}{shared}"
    parts = [
        f"{name}: {notes[name]} (request {' or '.join(sorted(set(resources[name])))})"
        for name in sorted(notes)
    ]
    return "; ".join(parts) or "no GPUs"


def _quota(view: ClusterView, team: Team, ns: Namespace) -> dict[str, str]:
    """GPU keys for every resource the cluster advertises (0 where the team has no quota), so
    GPUs are reachable only through the queue; the rest from the team's resources."""
    gpus: dict[str, int] = {
        offer.quota_key: 0 for pool in view.pools for offer in pool_offers(pool)
    }
    if any(pool.exposure == "dra" for pool in view.pools):
        # the NVIDIA DRA driver's own classes: closed, so a claim cannot go around the pools'
        for device_class in (DRA_DEVICE_CLASS, DRA_MIG_DEVICE_CLASS):
            gpus.setdefault(f"{device_class}{DRA_QUOTA_SUFFIX}", 0)
    for _, quota, offer in usable_quotas(view.platform, team, ns):
        gpus[offer.quota_key] += maximum_holding(offer, quota)
    hard = {key: str(value) for key, value in sorted(gpus.items())}
    names = {
        "cpu": "requests.cpu",
        "memory": "requests.memory",
        "storage": "requests.storage",
        "persistentVolumeClaims": "persistentvolumeclaims",
    }
    for field_name, key in names.items():
        if field_name in team.resources:
            hard[key] = str(team.resources[field_name])
    return hard


def _egress_rule(rule: EgressRule) -> dict[str, Any]:
    return {
        "to": [{"ipBlock": {"cidr": rule.cidr}}],
        "ports": [{"protocol": rule.protocol, "port": port} for port in rule.ports],
    }


def _network_policies(view: ClusterView, team: Team) -> Iterator[tuple[str, dict[str, Any]]]:
    cluster = view.cluster
    yield "default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    yield (
        "allow-dns",
        {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {
                                    "kubernetes.io/metadata.name": cluster.dns_namespace
                                }
                            },
                            "podSelector": {"matchLabels": dict(cluster.dns_pod_selector)},
                        }
                    ],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                }
            ],
        },
    )
    yield (
        "allow-same-namespace",
        {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
            "egress": [{"to": [{"podSelector": {}}]}],
        },
    )
    if cluster.object_store_egress:
        yield (
            "allow-object-store",
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [_egress_rule(r) for r in cluster.object_store_egress],
            },
        )
    if team.egress:
        yield (
            "allow-declared-egress",
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [_egress_rule(r) for r in team.egress],
            },
        )
