"""Policy on operator versions: each pinned release agrees with its cluster's Kubernetes and with
the Kueue release that manages its kinds.

The statements come from `renderer.model.operator_support`, each with the project file that
makes it; an add-on release no statement covers is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator

from packaging.version import Version

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.integrations import enabled_frameworks
from renderer.model.names import KUEUE_ADDON
from renderer.model.operator_support import (
    IntegrationSupport,
    KubernetesSupport,
    integration_support,
    kubernetes_minor,
    kubernetes_support,
    parse_release,
    releases_supporting,
)
from renderer.model.operators import BY_ADDON, installed
from renderer.model.platform import Addon, Cluster, Platform
from renderer.policy.rule import error, rule

RULE = "operator-version-incompatible"


def _title(addon: str) -> str:
    operator = BY_ADDON.get(addon)
    return operator.title if operator is not None else addon


def _stated(row: KubernetesSupport) -> str:
    """Where the range is stated, its words, and how gpuplane reads them where it must."""
    return f'{row.source}: "{row.source.says}"' + (f"; {row.reading}" if row.reading else "")


def _kueue_refusals(cluster: Cluster, addon: str, version: str) -> list[IntegrationSupport]:
    """The statements of the cluster's pinned Kueue that this release of the add-on breaks, for
    the integrations the cluster enables; none where Kueue is not pinned or not declared."""
    kueue = cluster.addons.get(KUEUE_ADDON)
    release = parse_release(version)
    operator = BY_ADDON.get(addon)
    if kueue is None or kueue.version is None or release is None or operator is None:
        return []
    enabled = set(enabled_frameworks(cluster))
    refusals = []
    for framework in operator.frameworks:
        row = integration_support(kueue.version, framework) if framework in enabled else None
        if row is not None and not row.supports(release):
            refusals.append(row)
    return refusals


def _kubernetes_hint(cluster: Cluster, addon: Addon, row: KubernetesSupport) -> str:
    minor = kubernetes_minor(cluster.kubernetes_version)
    lines = releases_supporting(addon.name, minor) if minor is not None else ()
    fitting = [r for r in lines if not _kueue_refusals(cluster, addon.name, r.releases.pin)]
    change = f"change spec.kubernetesVersion to one it supports ({row.span})"
    if not fitting:
        return (
            f"no {_title(addon.name)} release gpuplane knows a statement for supports Kubernetes "
            f"{cluster.kubernetes_version}: {change}"
        )
    best = fitting[0]
    return (
        f"pin spec.addons.{addon.name}.version to {best.releases.pin} (Kubernetes "
        f"{best.span}, {best.source}), or {change}"
    )


def _against_kubernetes(cluster: Cluster) -> Iterator[Diagnostic]:
    minor = kubernetes_minor(cluster.kubernetes_version)
    if minor is None:
        return
    for name, addon in sorted(cluster.addons.items()):
        if addon.version is None:
            continue  # addon-version-unpinned asks for a version where one is needed
        row = kubernetes_support(name, addon.version)
        if row is None or row.supports(minor):
            continue
        newer = minor > Version(row.minimum)  # above the newest minor the project tested
        yield Diagnostic(
            RULE,
            f"{_title(name)} {addon.version} supports Kubernetes {row.span} ({_stated(row)}), "
            f"but cluster '{cluster.name}' runs Kubernetes {cluster.kubernetes_version}"
            + (": newer than the project has tested" if newer else ""),
            addon.origin.at("version"),
            severity=Severity.WARNING if newer else Severity.ERROR,
            hint=_kubernetes_hint(cluster, addon, row),
            notes=(
                (
                    "the cluster's Kubernetes version",
                    cluster.origin.at("spec", "kubernetesVersion"),
                ),
            ),
        )


def _kueue_pin(refusals: list[IntegrationSupport], addon: str) -> str:
    """The release to pin: gpuplane's tested release where every refusing statement allows it,
    else the highest minimum they state."""
    operator = BY_ADDON[addon]
    tested = parse_release(operator.release)
    if tested is not None and all(r.supports(tested) for r in refusals):
        return operator.release
    return max((r.minimum for r in refusals), key=Version)


def _against_kueue(cluster: Cluster) -> Iterator[Diagnostic]:
    kueue = cluster.addons.get(KUEUE_ADDON)
    if kueue is None or kueue.version is None:
        return
    for operator in installed(cluster):
        addon = cluster.addons[operator.addon]
        if addon.version is None:
            continue
        refusals = _kueue_refusals(cluster, operator.addon, addon.version)
        if not refusals:
            continue
        strictest = sorted(refusals, key=lambda r: Version(r.minimum), reverse=True)
        stated = "; ".join(f"{r.span} for {r.framework} ({r.source})" for r in strictest)
        yield error(
            RULE,
            f"Kueue {kueue.version} supports {operator.title} {stated}, but cluster "
            f"'{cluster.name}' pins {operator.title} {addon.version}",
            addon.origin.at("version"),
            f"pin spec.addons.{operator.addon}.version to {_kueue_pin(refusals, operator.addon)}",
            notes=(("the cluster's Kueue release", kueue.origin.at("version")),),
        )


@rule(RULE)
def operator_versions_agree(p: Platform) -> Iterator[Diagnostic]:
    """Each add-on release a cluster pins supports its Kubernetes, and its Kueue supports it.

    An operator on a Kubernetes version its project does not support may not start (an API it
    needs is not served there) or run where nobody tested it; a Kueue integration given an
    operator release older than the one Kueue's documentation requires may not manage its kinds.
    Each range is the project's own statement at the release: its README, installation or
    platform-support page, or its chart's `kubeVersion` (which Helm enforces), and each row of
    `renderer/model/operator_support.py` names the repository, tag and file it comes from. A
    release no statement covers, and an add-on whose project states no range (AppWrapper,
    Argo Workflows, the DCGM exporter), is not checked; an add-on without a version neither.
    The finding sits on the add-on's `version` line, with a note on the Kubernetes version or
    the Kueue release it was compared with. Below a stated minimum it is an error (what the
    operator needs may not be served); above a stated maximum a warning (the newest minor the
    project had tested when it released, which newer minors often still run).

    To satisfy it: in the cluster file, change `spec.addons.<add-on>.version` to a release that
    supports the cluster (the hint names one: for example `jobset: {version: 0.11.1}` on
    Kubernetes 1.33), or change `spec.kubernetesVersion` to a minor inside the range the
    finding states. Against Kueue: pin the operator at or above the release Kueue's page
    requires (KubeRay 1.1.0 for RayJob and RayCluster, 1.3.0 for RayService; Kubeflow Trainer
    2.0.0; AppWrapper v1.1.1).
    """
    for cluster in p.clusters.values():
        yield from _against_kubernetes(cluster)
        yield from _against_kueue(cluster)
