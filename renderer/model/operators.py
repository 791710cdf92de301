"""Which operator serves each kind the platform renders or hands to teams, and which a cluster runs.

One table, `OPERATORS`: every add-on a cluster file can declare under `spec.addons`, the API
kinds its release serves (its CRDs), the Kueue integrations those kinds are, and the add-ons it
cannot run without. The policy reads it to refuse a kind no installed operator serves (rule
`operator-missing`), the queueing layer to enable exactly the Kueue integrations whose operators
run, the tenancy layer to grant teams only kinds the cluster serves, the gitops layer to install
each one, and the cluster README to say why each is there.

The served kinds are each project's CRDs at the release gpuplane's examples pin (a test compares
them with the CRD files in `../shared/crds`); Kubernetes' own kinds are served by the API server
at the cluster's version and checked against kubernetes-validate's schemas of that version.
Design: docs/operators.md.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

# The add-on keys live in names.py (the schema store and the drawing need them too, below this
# module); the `as` re-exports them, so callers may keep importing them from here.
from renderer.model.names import APPWRAPPER_ADDON as APPWRAPPER_ADDON
from renderer.model.names import (
    ARGO_CD_KINDS,
    ARGO_WORKFLOWS_ADDON,
    EXTERNAL_SECRETS_ADDON,
    GPU_OPERATOR_ADDON,
    KUEUE_ADDON,
    PROMETHEUS_ADDON,
    VOLCANO_ADDON,
)
from renderer.model.names import DRA_DRIVER_ADDON as DRA_DRIVER_ADDON
from renderer.model.names import ENVOY_GATEWAY_ADDON as ENVOY_GATEWAY_ADDON
from renderer.model.names import JOBSET_ADDON as JOBSET_ADDON
from renderer.model.names import KEDA_ADDON as KEDA_ADDON
from renderer.model.names import KUBERAY_ADDON as KUBERAY_ADDON
from renderer.model.names import LWS_ADDON as LWS_ADDON
from renderer.model.names import MPI_OPERATOR_ADDON as MPI_OPERATOR_ADDON
from renderer.model.names import NETWORK_OPERATOR_ADDON as NETWORK_OPERATOR_ADDON
from renderer.model.names import OPENCOST_ADDON as OPENCOST_ADDON
from renderer.model.names import TRAINER_ADDON as TRAINER_ADDON
from renderer.model.names import TRAINING_OPERATOR_ADDON as TRAINING_OPERATOR_ADDON

if TYPE_CHECKING:
    from renderer.model.platform import Cluster


@dataclass(frozen=True, slots=True)
class Api:
    """One kind an operator serves: its group, kind and the versions its release serves."""

    group: str
    kind: str
    versions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Operator:
    """An add-on a cluster file declares under `spec.addons`, and what it brings."""

    addon: str
    """The key under `spec.addons`."""
    title: str
    release: str
    """The release gpuplane is tested against: the version `new cluster` writes and the
    findings suggest (the chart version where the add-on installs from a chart)."""
    apis: tuple[Api, ...] = ()
    frameworks: tuple[str, ...] = ()
    """The Kueue integrations (`integrations.frameworks`) that manage its kinds."""
    requires: tuple[str, ...] = ()
    """Add-ons it cannot run without (Kubeflow Trainer runs its TrainJobs as JobSets)."""
    purpose: str = ""
    """Why a platform runs it, in a few words: the cluster README's column."""


def _apis(group: str, versions: tuple[str, ...], *kinds: str) -> tuple[Api, ...]:
    return tuple(Api(group, kind, versions) for kind in kinds)


OPERATORS: tuple[Operator, ...] = (
    Operator(
        GPU_OPERATOR_ADDON,
        "NVIDIA GPU Operator",
        "v26.7.0",
        _apis("nvidia.com", ("v1",), "ClusterPolicy")
        + _apis("nvidia.com", ("v1alpha1",), "NVIDIADriver", "GPUCluster"),
        purpose="driver, container toolkit, device plugin, MIG manager, GPU feature discovery",
    ),
    Operator(
        KUEUE_ADDON,
        "Kueue",
        "v0.19.2",
        _apis(
            "kueue.x-k8s.io",
            ("v1beta1", "v1beta2"),
            "AdmissionCheck",
            "ClusterQueue",
            "Cohort",
            "LocalQueue",
            "ResourceFlavor",
            "Topology",
            "WorkloadPriorityClass",
            "Workload",
            "ProvisioningRequestConfig",
            "MultiKueueCluster",
            "MultiKueueConfig",
        ),
        purpose="quota, queues, fair sharing and gang admission of every GPU job",
    ),
    Operator(
        VOLCANO_ADDON,
        "Volcano",
        "v1.15.1",
        _apis("batch.volcano.sh", ("v1alpha1",), "Job")
        + _apis("scheduling.volcano.sh", ("v1beta1",), "PodGroup", "Queue")
        + _apis("bus.volcano.sh", ("v1alpha1",), "Command")
        + _apis("flow.volcano.sh", ("v1alpha1",), "JobFlow", "JobTemplate"),
        purpose="queues and gang scheduling (scheduler: volcano)",
    ),
    Operator(
        ARGO_WORKFLOWS_ADDON,
        "Argo Workflows",
        "2.0.4",
        _apis(
            "argoproj.io",
            ("v1alpha1",),
            "Workflow",
            "WorkflowTemplate",
            "ClusterWorkflowTemplate",
            "CronWorkflow",
        ),
        purpose="runs the acceptance and benchmark suites",
    ),
    Operator(
        PROMETHEUS_ADDON,
        "kube-prometheus-stack",
        "79.6.1",
        _apis(
            "monitoring.coreos.com",
            ("v1",),
            "Prometheus",
            "Alertmanager",
            "PodMonitor",
            "Probe",
            "PrometheusRule",
            "ServiceMonitor",
            "ThanosRuler",
        )
        + _apis("monitoring.coreos.com", ("v1alpha1",), "AlertmanagerConfig", "ScrapeConfig"),
        purpose="Prometheus, Alertmanager and Grafana for the rules and dashboards",
    ),
    Operator(
        EXTERNAL_SECRETS_ADDON,
        "External Secrets Operator",
        "2.9.0",
        _apis(
            "external-secrets.io",
            ("v1",),
            "SecretStore",
            "ClusterSecretStore",
            "ExternalSecret",
            "ClusterExternalSecret",
        ),
        purpose="syncs team secrets from the secret store",
    ),
    Operator(
        JOBSET_ADDON,
        "JobSet",
        "0.12.0",
        _apis("jobset.x-k8s.io", ("v1alpha2",), "JobSet"),
        frameworks=("jobset.x-k8s.io/jobset",),
        purpose="multi-node training jobs (the JobSet templates, Kubeflow Trainer)",
    ),
    Operator(
        KUBERAY_ADDON,
        "KubeRay",
        "1.7.0",
        _apis("ray.io", ("v1", "v1alpha1"), "RayCluster", "RayJob", "RayService")
        + _apis("ray.io", ("v1",), "RayCronJob"),
        frameworks=("ray.io/rayjob", "ray.io/rayservice", "ray.io/raycluster"),
        purpose="Ray clusters, jobs and services (the RayJob templates)",
    ),
    Operator(
        TRAINER_ADDON,
        "Kubeflow Trainer",
        "2.3.0",
        _apis(
            "trainer.kubeflow.org",
            ("v1alpha1",),
            "TrainJob",
            "TrainingRuntime",
            "ClusterTrainingRuntime",
        ),
        frameworks=("trainer.kubeflow.org/trainjob",),
        requires=(JOBSET_ADDON,),
        purpose="TrainJobs on the platform's training runtimes",
    ),
    Operator(
        LWS_ADDON,
        "LeaderWorkerSet",
        "0.10.0",
        _apis("leaderworkerset.x-k8s.io", ("v1",), "LeaderWorkerSet"),
        frameworks=("leaderworkerset.x-k8s.io/leaderworkerset",),
        purpose="multi-node inference servers",
    ),
    Operator(
        APPWRAPPER_ADDON,
        "AppWrapper",
        "v1.2.1",
        _apis("workload.codeflare.dev", ("v1beta2",), "AppWrapper"),
        frameworks=("workload.codeflare.dev/appwrapper",),
        purpose="wraps a job's objects into one Kueue workload, with fault tolerance",
    ),
    Operator(
        TRAINING_OPERATOR_ADDON,
        "Kubeflow Training Operator",
        "v1.9.4",
        _apis(
            "kubeflow.org",
            ("v1",),
            "PyTorchJob",
            "TFJob",
            "XGBoostJob",
            "PaddleJob",
            "JAXJob",
            "MPIJob",
        ),
        frameworks=(
            "kubeflow.org/pytorchjob",
            "kubeflow.org/tfjob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/paddlejob",
            "kubeflow.org/jaxjob",
        ),
        purpose="Kubeflow v1 jobs: PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob",
    ),
    Operator(
        MPI_OPERATOR_ADDON,
        "MPI Operator",
        "v0.8.0",
        _apis("kubeflow.org", ("v2beta1",), "MPIJob"),
        frameworks=("kubeflow.org/mpijob",),
        purpose="MPIJob v2beta1: MPI and Horovod jobs, one launcher and its workers",
    ),
    Operator(
        NETWORK_OPERATOR_ADDON,
        "NVIDIA Network Operator",
        "26.4.1",
        _apis(
            "mellanox.com",
            ("v1alpha1",),
            "NicClusterPolicy",
            "NicNodePolicy",
            "HostDeviceNetwork",
            "IPoIBNetwork",
            "MacvlanNetwork",
        ),
        purpose="the RDMA shared device plugin behind the pools' rdma/ resources",
    ),
    Operator(
        DRA_DRIVER_ADDON,
        "NVIDIA DRA Driver for GPUs",
        "25.12.0",
        _apis("resource.nvidia.com", ("v1beta1",), "ComputeDomain", "ComputeDomainClique"),
        purpose="publishes GPUs and MIG devices to pools exposed through DRA",
    ),
    Operator(
        OPENCOST_ADDON,
        "OpenCost",
        "2.5.17",
        purpose="reads the pools' pricing file: cost per namespace and pod",
    ),
    Operator(
        KEDA_ADDON,
        "KEDA",
        "2.20.2",
        _apis(
            "keda.sh",
            ("v1alpha1",),
            "ScaledObject",
            "ScaledJob",
            "TriggerAuthentication",
            "ClusterTriggerAuthentication",
        ),
        purpose="scales each endpoint's Deployment on its server's own signal, up to its maximum",
    ),
    Operator(
        ENVOY_GATEWAY_ADDON,
        "Envoy Gateway",
        # envoyproxy/gateway v1.9.0: the chart (gateway-helm) is pushed to oci://docker.io/envoyproxy
        # as v1.9.0; it vendors the Gateway API CRDs of go.mod's sigs.k8s.io/gateway-api v1.6.1
        # (charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml, standard channel) and its
        # own gateway.envoyproxy.io CRDs (charts/crds/crds/generated/).
        "v1.9.0",
        _apis("gateway.networking.k8s.io", ("v1", "v1beta1"), "GatewayClass", "Gateway")
        + _apis("gateway.networking.k8s.io", ("v1", "v1beta1"), "HTTPRoute", "ReferenceGrant")
        + _apis(
            "gateway.networking.k8s.io",
            ("v1",),
            "GRPCRoute",
            "BackendTLSPolicy",
            "ListenerSet",
            "TCPRoute",
            "TLSRoute",
            "UDPRoute",
        )
        + _apis(
            "gateway.envoyproxy.io",
            ("v1alpha1",),
            "Backend",
            "BackendTrafficPolicy",
            "ClientTrafficPolicy",
            "EnvoyExtensionPolicy",
            "EnvoyPatchPolicy",
            "EnvoyProxy",
            "HTTPRouteFilter",
            "SecurityPolicy",
        ),
        purpose="the platform Gateway: routes from the gateway to the teams' inference endpoints",
    ),
)
"""Every add-on a cluster can declare, in the order its Applications and README rows are
listed. The DCGM exporter runs inside the GPU Operator and is not listed: it has no chart of
its own here and serves no kind."""

BY_ADDON = {operator.addon: operator for operator in OPERATORS}

OPTIONAL_ADDONS = frozenset(
    {
        JOBSET_ADDON,
        KUBERAY_ADDON,
        TRAINER_ADDON,
        LWS_ADDON,
        APPWRAPPER_ADDON,
        NETWORK_OPERATOR_ADDON,
        DRA_DRIVER_ADDON,
        OPENCOST_ADDON,
        KEDA_ADDON,
        TRAINING_OPERATOR_ADDON,
        MPI_OPERATOR_ADDON,
        ENVOY_GATEWAY_ADDON,
    }
)
"""The operators a cluster installs because something on it needs them (rules
`operator-missing` and `operator-unused`); the platform's own add-ons (GPU Operator, scheduler,
DCGM exporter, Argo Workflows, Prometheus stack, External Secrets) have rules of their own."""

NETWORK_OPERATOR_PREFIX = "rdma/"
"""The resources of the Network Operator's RDMA shared device plugin: `rdma/<resourceName>`
(its `resourcePrefix` is `rdma` unless changed, as gpuplane never does)."""
PROVIDER_RDMA = frozenset({"eks", "gke", "aks", "coreweave"})
"""Providers whose GPU nodes come with their own RDMA device plugin: the AWS EFA device plugin
(`vpc.amazonaws.com/efa`), GKE's and AKS's managed RDMA, CoreWeave's `rdma/ib`. Their pools
need no gpuplane add-on for RDMA."""


def serving(group: str, kind: str, version: str | None = None) -> Operator | None:
    """The operator whose CRDs define the kind; None for a kind no add-on serves. Two operators
    may define one kind at different versions (MPIJob: the Training Operator's v1, the MPI
    Operator's v2beta1): with `version`, the one that serves it there, else the first."""
    found = servers(group, kind)
    if version is not None:
        for operator in found:
            if version in served_versions(operator, group, kind):
                return operator
    return found[0] if found else None


@functools.lru_cache(maxsize=1 << 12)
def servers(group: str, kind: str) -> tuple[Operator, ...]:
    """Every operator whose CRDs define the kind, in OPERATORS' order (kept per kind: every
    custom object of every cluster asks)."""
    return tuple(
        operator
        for operator in OPERATORS
        if any(api.group == group and api.kind == kind for api in operator.apis)
    )


def conflicts(first: Operator, second: Operator) -> tuple[Api, ...]:
    """The kinds both operators define: one CRD each (`mpijobs.kubeflow.org`), which a cluster
    can hold only once, so no cluster installs both as gpuplane installs them."""
    return tuple(
        api
        for api in second.apis
        if any((a.group, a.kind) == (api.group, api.kind) for a in first.apis)
    )


def served_versions(operator: Operator, group: str, kind: str) -> tuple[str, ...]:
    for api in operator.apis:
        if api.group == group and api.kind == kind:
            return api.versions
    return ()


def serves_here(cluster: Cluster, addon: str) -> bool:
    """Whether the add-on's kinds are served on the cluster: declared in its file, installed by
    gpuplane or (`enabled: false`) already running there."""
    return addon in cluster.addons


def installed(cluster: Cluster) -> tuple[Operator, ...]:
    """The operators whose kinds the cluster serves, in OPERATORS' order."""
    return tuple(o for o in OPERATORS if serves_here(cluster, o.addon))


def missing_requirements(cluster: Cluster) -> Iterator[tuple[Operator, Operator]]:
    """(operator, the add-on it requires) for each requirement the cluster does not declare."""
    for operator in installed(cluster):
        for needed in operator.requires:
            if not serves_here(cluster, needed):
                yield operator, BY_ADDON[needed]


def rdma_plugin(cluster: Cluster, resource: str) -> str | None:
    """The add-on that advertises a pool's RDMA resource on the cluster, None where the
    provider brings the device plugin (or a name no add-on of gpuplane's advertises)."""
    if cluster.provider in PROVIDER_RDMA:
        return None
    return NETWORK_OPERATOR_ADDON if resource.startswith(NETWORK_OPERATOR_PREFIX) else None


def serving_problem(
    cluster: Cluster, group: str, version: str, kind: str
) -> tuple[str, str] | None:
    """Why the cluster does not serve a custom kind at this version, and what to do; None where
    it does (Argo CD's own kinds are served where Argo CD runs, before any add-on)."""
    if group == "argoproj.io" and kind in ARGO_CD_KINDS:
        return None
    operator = serving(group, kind, version)
    if operator is None:
        return (
            "no add-on gpuplane installs serves this kind",
            "install its operator outside gpuplane and import its CRDs, or stop rendering it",
        )
    if not serves_here(cluster, operator.addon):
        return (
            f"{operator.title} serves it, and the cluster does not install it",
            f"declare `{operator.addon}: {{version: {operator.release}}}` under spec.addons",
        )
    versions = served_versions(operator, group, kind)
    if version not in versions:
        return (
            f"{operator.title} {operator.release} serves {kind} as {', '.join(versions)} only",
            f"write {group}/{versions[0]}",
        )
    return None
