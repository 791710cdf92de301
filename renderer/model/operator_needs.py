"""What on a cluster needs which operator, and the input line that needs it.

The policy refuses a need whose operator the cluster does not declare (rule `operator-missing`)
and warns of a declared operator nothing needs (`operator-unused`); the cluster README says, per
operator, why it is there. A need comes from:

- a team namespace's templates: training and batch namespaces on a Kueue cluster, with GPU quota
  there, get the JobSet and RayJob templates (`renderer.layers.workload_templates`);
- a team namespace's `kinds`, the operator kinds the team submits there beyond its templates;
- a team namespace's endpoints: one that autoscales (`replicas.max` above `min`) needs KEDA;
- a team namespace's `endpoints`: each is routed from the platform Gateway (Envoy Gateway's);
- a pool: its RDMA resource comes from a device plugin (the Network Operator's, on-prem), its
  devices through DRA from the NVIDIA DRA driver;
- another add-on: Kubeflow Trainer runs TrainJobs as JobSets; OpenCost reads Prometheus; the
  Prometheus stack's cluster gets the pools' pricing file, which only OpenCost reads; the DCGM
  exporter's ServiceMonitor is a kind of the Prometheus Operator the stack brings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Location
from renderer.model.capacity import usable_quotas
from renderer.model.choices import Purpose
from renderer.model.names import DCGM_EXPORTER_ADDON, PROMETHEUS_ADDON
from renderer.model.operators import (
    BY_ADDON,
    DRA_DRIVER_ADDON,
    ENVOY_GATEWAY_ADDON,
    JOBSET_ADDON,
    KEDA_ADDON,
    KUBERAY_ADDON,
    OPENCOST_ADDON,
    OPERATORS,
    rdma_plugin,
    serves_here,
)
from renderer.model.platform import Cluster, Namespace, Platform, Team

GANG_PURPOSES: frozenset[Purpose] = frozenset({"training", "batch"})
"""Purposes whose namespaces get the distributed templates (JobSet, RayJob) on Kueue clusters."""

TEMPLATE_OPERATORS: tuple[tuple[str, str], ...] = (
    (JOBSET_ADDON, "JobSet"),
    (KUBERAY_ADDON, "RayJob"),
)
"""The operators of the distributed templates, and the kind each template is."""


@dataclass(frozen=True, slots=True)
class Need:
    """One reason the cluster must serve an operator's kinds."""

    addon: str
    why: str
    """What needs it, as a README cell or a finding's clause: "the JobSet template of llm-train"."""
    at: Location


def kind_operator(kind: str, cluster: Cluster | None = None) -> str | None:
    """The add-on serving a workload kind a namespace's `kinds` may name. Where two serve it
    (MPIJob: the Training Operator's v1, the MPI Operator's v2beta1), the one the cluster
    declares, else the one whose kind Kueue manages (its `kubeflow.org/mpijob` integration is
    for v2beta1 only): the two define the same CRD, so a cluster declares one of them."""
    found = [o for o in OPERATORS if any(api.kind == kind for api in o.apis)]
    for operator in found:
        if cluster is not None and serves_here(cluster, operator.addon):
            return operator.addon
    for operator in found:
        if any(framework.endswith(f"/{kind.lower()}") for framework in operator.frameworks):
            return operator.addon
    return found[0].addon if found else None


def cluster_needs(platform: Platform, cluster: Cluster) -> Iterator[Need]:
    """Every need on the cluster, in input order: namespaces, pools, then add-ons."""
    for team in platform.teams.values():
        for index, ns in enumerate(team.namespaces):
            if ns.cluster == cluster.name:
                yield from _namespace_needs(platform, cluster, team, ns, index)
    for pool in sorted(platform.pools.values(), key=lambda p: p.name):
        if pool.cluster != cluster.name:
            continue
        if pool.rdma is not None:
            addon = rdma_plugin(cluster, pool.rdma.resource)
            if addon is not None:
                yield Need(
                    addon,
                    f"pool {pool.name}'s RDMA resource {pool.rdma.resource}",
                    pool.origin.at("spec", "fabric", "rdma", "resource"),
                )
        if pool.exposure == "dra":
            yield Need(
                DRA_DRIVER_ADDON,
                f"pool {pool.name}'s devices through DRA",
                pool.origin.at("spec", "exposure"),
            )
    yield from _addon_needs(cluster)


def _namespace_needs(
    platform: Platform, cluster: Cluster, team: Team, ns: Namespace, index: int
) -> Iterator[Need]:
    at = team.origin.at("spec", "namespaces", index)
    if (
        ns.purpose in GANG_PURPOSES
        and cluster.scheduler == "kueue"
        and any(pool.cluster == cluster.name for pool, _, _ in usable_quotas(platform, team, ns))
    ):
        for addon, kind in TEMPLATE_OPERATORS:
            yield Need(addon, f"the {kind} template of namespace {ns.name}", at)
    for position, endpoint in enumerate(ns.endpoints):
        if endpoint.max_replicas > endpoint.min_replicas:
            yield Need(
                KEDA_ADDON,
                f"the autoscaler of endpoint {endpoint.name} in namespace {ns.name}",
                team.origin.at("spec", "namespaces", index, "endpoints", position, "replicas"),
            )
    for position, kind in enumerate(ns.kinds):
        needed = kind_operator(kind, cluster)
        if needed is not None:
            yield Need(
                needed,
                f"{kind} in namespace {ns.name}",
                team.origin.at("spec", "namespaces", index, "kinds", position),
            )
    for position, endpoint in enumerate(ns.endpoints):
        yield Need(
            ENVOY_GATEWAY_ADDON,
            f"endpoint {endpoint.name} of namespace {ns.name}",
            team.origin.at("spec", "namespaces", index, "endpoints", position),
        )


def _addon_needs(cluster: Cluster) -> Iterator[Need]:
    for name, addon in cluster.addons.items():
        operator = BY_ADDON.get(name)
        if operator is None or addon.settings.get("enabled", True) is False:
            continue
        for required in operator.requires:
            yield Need(required, f"{operator.title}, which runs on it", addon.origin.key())
    exporter = cluster.addons.get(DCGM_EXPORTER_ADDON)
    if exporter is not None and exporter.settings.get("serviceMonitor", False) is True:
        yield Need(
            PROMETHEUS_ADDON,
            "the DCGM exporter's ServiceMonitor (the Prometheus Operator's kind)",
            exporter.origin.at("serviceMonitor"),
        )
    if cluster.runs(PROMETHEUS_ADDON):
        yield Need(
            OPENCOST_ADDON,
            "the pools' pricing file, read by OpenCost beside the Prometheus stack",
            cluster.addons[PROMETHEUS_ADDON].origin.key(),
        )
    opencost = cluster.addons.get(OPENCOST_ADDON)
    if opencost is not None and opencost.settings.get("enabled", True) is not False:
        yield Need(PROMETHEUS_ADDON, "OpenCost, which reads its Prometheus", opencost.origin.key())
