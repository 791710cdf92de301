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
from renderer.model.operators import BY_ADDON, OPTIONAL_ADDONS, serves_here
from renderer.model.platform import Cluster, Platform
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


@rule("operator-missing")
def needed_operators_declared(p: Platform) -> Iterator[Diagnostic]:
    """Every kind the platform renders or tells a team to submit is served on its cluster.

    A team's first JobSet on a cluster without the JobSet controller fails with "no matches for
    kind"; a pool's RDMA resource that no device plugin advertises leaves every multi-node job
    Pending. So each need is checked against the add-ons the cluster declares: the JobSet and
    RayJob templates of training and batch namespaces on Kueue clusters (JobSet, KubeRay), the
    kinds a namespace lists under `kinds`, a pool's `rdma/` resource on a cluster that brings
    no device plugin of its own (the NVIDIA Network Operator), a pool exposed through DRA (the
    NVIDIA DRA driver), Kubeflow Trainer (JobSet), the Prometheus stack's pricing file (OpenCost)
    and OpenCost itself (the Prometheus stack). The finding sits on the line that needs it.

    To satisfy it: declare the add-on the finding names under `spec.addons` of the cluster file,
    pinned on production: for example `jobset: {version: 0.12.0}`, `kuberay: {version: 1.7.0}`,
    `trainer: {version: 2.3.0}`, `lws: {version: 0.10.0}`, `appwrapper: {version: v1.2.1}`,
    `networkOperator: {version: 26.4.1}`, `draDriver: {version: 25.12.0}`, `opencost:
    {version: 2.5.17}`. Where the cluster already runs the operator (installed outside
    gpuplane), declare it with `enabled: false`. Or remove the need: the kind from the
    namespace's `kinds`, the pool's `rdma` or `exposure: dra`.
    """
    for cluster in p.clusters.values():
        reported: set[tuple[str, str]] = set()
        for need in cluster_needs(p, cluster):
            if serves_here(cluster, need.addon):
                continue
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
