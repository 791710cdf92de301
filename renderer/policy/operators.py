"""Policy on operators: every kind the platform renders or hands to teams is served where it runs.

The needs come from `renderer.model.operator_needs`; which add-on serves what from
`renderer.model.operators`. Design: docs/operators.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.operator_needs import cluster_needs
from renderer.model.operator_support import (
    kubernetes_minor,
    kubernetes_support,
    releases_supporting,
)
from renderer.model.operators import (
    BY_ADDON,
    DRA_DRIVER_ADDON,
    OPTIONAL_ADDONS,
    Operator,
    conflicts,
    installed,
    serves_here,
)
from renderer.model.platform import Cluster, Platform
from renderer.policy.gpus import dra_refused
from renderer.policy.rule import error, rule


def suggested_release(cluster: Cluster, addon: str) -> str:
    """The release to declare: gpuplane's tested one, unless its project says it does not
    support the cluster's Kubernetes; then the newest line that does (so that the hint leads to
    no `operator-version-incompatible` finding)."""
    release = BY_ADDON[addon].release
    minor = kubernetes_minor(cluster.kubernetes_version)
    row = kubernetes_support(addon, release)
    if minor is None or row is None or row.supports(minor):
        return release
    fitting = releases_supporting(addon, minor)
    return fitting[0].releases.pin if fitting else release


def _declare_hint(cluster: Cluster, addon: str) -> str:
    operator = BY_ADDON[addon]
    return (
        f"declare `{addon}: {{version: {suggested_release(cluster, addon)}}}` under spec.addons of "
        f"{cluster.origin.location.file} ({operator.title}), or `{addon}: {{enabled: false}}` "
        "if the cluster already runs it"
    )


@rule("operator-missing", scope="team")
def needed_operators_declared(p: Platform) -> Iterator[Diagnostic]:
    """Every kind the platform renders or tells a team to submit is served on its cluster.

    A team's first JobSet on a cluster without the JobSet controller fails with "no matches for
    kind"; a pool's RDMA resource that no device plugin advertises leaves every multi-node job
    Pending. So each need is checked against the add-ons the cluster declares: the JobSet and
    RayJob templates of training and batch namespaces on Kueue clusters (JobSet, KubeRay), the
    kinds a namespace lists under `kinds`, a pool's `rdma/` resource on a cluster that brings
    no device plugin of its own (the NVIDIA Network Operator), a pool exposed through DRA (the
    NVIDIA DRA driver), Kubeflow Trainer (JobSet), the Prometheus stack's pricing file (OpenCost),
    OpenCost itself (the Prometheus stack) and an endpoint that autoscales (KEDA). The finding
    sits on the line that needs it.

    To satisfy it: declare the add-on the finding names under `spec.addons` of the cluster file,
    pinned on production: for example `jobset: {version: 0.12.0}`, `kuberay: {version: 1.7.0}`,
    `trainer: {version: 2.3.0}`, `lws: {version: 0.10.0}`, `appwrapper: {version: v1.2.1}`,
    `networkOperator: {version: 26.4.1}`, `draDriver: {version: 25.12.0}`, `opencost:
    {version: 2.5.17}`, `keda: {version: 2.20.2}`, `trainingOperator: {version: v1.9.4}`
    (PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob), `mpiOperator: {version: v0.8.0}`
    (MPIJob v2beta1). Where the cluster already runs the operator (installed outside
    gpuplane), declare it with `enabled: false`.
    Or remove the need: the kind from the namespace's `kinds`, the pool's `rdma` or
    `exposure: dra`, an endpoint's autoscaling (`replicas.max` equal to `replicas.min`). A pool
    whose DRA is refused (dra-needs-kubernetes-1.34, dra-unsupported) asks for no DRA driver
    until those rules are satisfied: their hints may lead back to the device plugin.
    """
    refused = {
        pool.origin.at("spec", "exposure") for pool in p.pools.values() if dra_refused(p, pool)
    }
    for cluster in p.clusters.values():
        reported: set[tuple[str, str]] = set()
        for need in cluster_needs(p, cluster):
            if serves_here(cluster, need.addon):
                continue
            if need.addon == DRA_DRIVER_ADDON and need.at in refused:
                continue  # dra-needs-kubernetes-1.34 or dra-unsupported: DRA itself is refused
            key = (need.addon, f"{need.at.file}:{need.at.line}")
            if key in reported:
                continue
            reported.add(key)
            operator = BY_ADDON[need.addon]
            yield error(
                "operator-missing",
                f"{need.why} needs {operator.title}, which cluster '{cluster.name}' does not "
                "install",
                need.at,
                _declare_hint(cluster, need.addon),
                notes=(
                    (
                        "the cluster's add-ons are declared here",
                        cluster.origin.key("spec", "addons"),
                    ),
                ),
            )


@rule("operator-unused")
def declared_operators_used(p: Platform) -> Iterator[Diagnostic]:
    """An operator a cluster installs is needed by something on it.

    Each operator is a controller, CRDs and webhooks to patch and upgrade; one that nothing
    on the cluster uses is risk with no return, and its Kueue integration tells `fit` and the
    README that the cluster runs a kind no team is meant to submit. A warning: the platform team
    may be installing ahead of a team.

    To satisfy it: remove the add-on from `spec.addons` of the cluster file, or add what uses
    it: the kind in the `kinds` of a team namespace on the cluster (`kinds: [LeaderWorkerSet]`),
    a pool that needs it. An add-on declared `enabled: false` is not installed and never warned.
    """
    for cluster in p.clusters.values():
        needed = {need.addon for need in cluster_needs(p, cluster)}
        for name, addon in cluster.addons.items():
            operator = BY_ADDON.get(name)
            if operator is None or name in needed:
                continue
            if addon.settings.get("enabled", True) is False or name not in OPTIONAL_ADDONS:
                continue
            yield Diagnostic(
                "operator-unused",
                f"cluster '{cluster.name}' installs {operator.title}, but nothing on it needs it",
                addon.origin.key(),
                severity=Severity.WARNING,
                hint=f"remove spec.addons.{name}, or list its kinds under `kinds` of a team "
                "namespace on the cluster",
            )


@rule("operator-conflict")
def operators_that_cannot_share_a_cluster(p: Platform) -> Iterator[Diagnostic]:
    """No cluster declares two operators that define the same CRD.

    A CustomResourceDefinition is cluster-wide and named by its plural and group alone: the
    Kubeflow Training Operator v1 and the MPI Operator both define `mpijobs.kubeflow.org`, the
    first at v1, the second at v2beta1. Argo CD would apply both in turn (each sync undoing the
    other, or the API server refusing the second, "status.storedVersions[0]: Invalid value:
    v2beta1: must appear in spec.versions", kubeflow/trainer#1930), and both controllers would
    start a launcher for every MPIJob (kubeflow/trainer#1777). Running both takes a training
    operator started with `--enable-scheme` for its other kinds only and without its MPIJob
    CRD; gpuplane installs its standalone overlay as the release ships it, every scheme on.
    The finding sits on the second of the two declarations in the cluster file.

    To satisfy it: keep one of the two under `spec.addons` of the cluster file:
    `mpiOperator: {version: v0.8.0}` for MPIJob v2beta1 (the MPIJob Kueue manages), or
    `trainingOperator: {version: v1.9.4}` for PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob
    and the v1 MPIJob. Teams that need both run them on different clusters.
    """
    for cluster in p.clusters.values():
        declared = sorted(
            installed(cluster), key=lambda o: cluster.addons[o.addon].origin.key().line
        )
        for index, second in enumerate(declared):
            for first in declared[:index]:
                shared = conflicts(first, second)
                if not shared:
                    continue
                crds = ", ".join(f"{api.kind} ({api.group})" for api in shared)
                yield error(
                    "operator-conflict",
                    f"cluster '{cluster.name}' declares both {first.title} and {second.title}, "
                    f"which each define the CRD of {crds}: a cluster holds one",
                    cluster.addons[second.addon].origin.key(),
                    f"remove spec.addons.{second.addon} or spec.addons.{first.addon} from "
                    f"{cluster.origin.location.file}: keep {BY_ADDON[second.addon].title} for "
                    f"{_kinds(second)}, or {first.title} for {_kinds(first)}",
                    notes=(
                        (
                            f"{first.title} is declared here",
                            cluster.addons[first.addon].origin.key(),
                        ),
                    ),
                )


def _kinds(operator: Operator) -> str:
    """Its kinds, in words, per API: `PyTorchJob, TFJob, ..., MPIJob (kubeflow.org/v1)`."""
    by_api: dict[str, list[str]] = {}
    for api in operator.apis:
        by_api.setdefault(f"{api.group}/{', '.join(api.versions)}", []).append(api.kind)
    return "; ".join(f"{', '.join(kinds)} ({api})" for api, kinds in by_api.items())
