"""No Service in a team namespace opens it to the outside: no NodePort, no LoadBalancer, no
`spec.externalIPs`.

A NodePort Service listens on every node's address, a LoadBalancer one gets an address on the
provider's or MetalLB's network, and either is reachable from wherever those networks reach,
whatever the namespace's NetworkPolicies say about other namespaces (kube-proxy forwards node
traffic before a policy sees a pod-to-pod flow, and many CNIs exempt node-sourced traffic).
`spec.externalIPs` is worse: kube-proxy on every node intercepts traffic to the listed
addresses, so a Service naming another tenant's or a cluster service's IP takes its traffic
(CVE-2020-8554, which upstream left to admission control to close). Inference namespaces are no
exception: models are exposed through the platform's ingress or gateway, whose Ingresses and
routes are the platform's to write (the team roles only read them).

The policy holds for Services, whoever creates them (the KubeRay operator creates a RayCluster's
head Service from `headGroupSpec.serviceType`, so the operator is not exempt), and refuses a
RayCluster or RayJob asking for such a head Service at `kubectl apply`, before the operator
fails on it. An UPDATE that keeps a Service's type and external IPs as they were is let through,
so a Service created before these policies can still lose its finalizers and be deleted; it
cannot be turned into one, nor given new external IPs.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.security.policy_parts import (
    RAYCLUSTER,
    RAYJOB,
    WorkloadKind,
    cel_list,
    policy_pair,
    resource_rules,
    team_namespaces,
    validating_policy,
)
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest

POLICY = "gpuplane-services"
EXPOSING_TYPES = ("LoadBalancer", "NodePort")
SERVICE = WorkloadKind("", "services", "Service", "[]")

_ELSEWHERE = (
    "team namespaces are reached through the platform's ingress or gateway, inference "
    "namespaces included: ask the platform team for a route"
)


def _type(obj: str) -> str:
    return f"(has({obj}.spec.type) ? {obj}.spec.type : 'ClusterIP')"


def _external_ips(obj: str) -> str:
    return f"(has({obj}.spec.externalIPs) ? {obj}.spec.externalIPs : [])"


def _head_service_allowed(cluster_spec: str) -> str:
    """CEL: the Ray cluster spec's head group asks for no exposing Service type."""
    head = f"{cluster_spec}.headGroupSpec"
    return f"(!has({head}.serviceType) || !({head}.serviceType in {cel_list(EXPOSING_TYPES)}))"


def validations() -> list[dict[str, str]]:
    is_service = SERVICE.condition
    update = "request.operation == 'UPDATE'"
    ray_cluster_spec = "object.spec.rayClusterSpec"
    return [
        {
            "expression": f"!({is_service}) || !({_type('object')} in "
            f"{cel_list(EXPOSING_TYPES)}) || "
            f"({update} && {_type('object')} == {_type('oldObject')})",
            "message": "Services of type NodePort or LoadBalancer are not allowed in team "
            f"namespaces: use type ClusterIP; {_ELSEWHERE}",
            "reason": "Forbidden",
        },
        {
            "expression": f"!({is_service}) || size({_external_ips('object')}) == 0 || "
            f"({update} && {_external_ips('object')} == {_external_ips('oldObject')})",
            "message": "spec.externalIPs is not allowed in team namespaces (it takes traffic "
            f"for any address, CVE-2020-8554): remove it; {_ELSEWHERE}",
            "reason": "Forbidden",
        },
        {
            "expression": f"(!({RAYCLUSTER.condition}) || {_head_service_allowed('object.spec')})"
            f" && (!({RAYJOB.condition}) || !has({ray_cluster_spec}) || "
            f"{_head_service_allowed(ray_cluster_spec)})",
            "message": "a Ray head Service of type NodePort or LoadBalancer is not allowed in "
            "team namespaces: remove headGroupSpec.serviceType (ClusterIP is the default); "
            f"{_ELSEWHERE}",
            "reason": "Forbidden",
        },
    ]


def render(view: ClusterView) -> Iterator[Manifest]:
    policy = validating_policy(
        POLICY,
        resource_rules([SERVICE, RAYCLUSTER, RAYJOB]),
        validations(),
    )
    yield from policy_pair(policy, team_namespaces(view), view.cluster.origin.location)
