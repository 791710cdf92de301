"""Policy on what reaches a cluster and how it is proven: add-ons, drivers, acceptance, Argo CD.

These rules change with the add-ons gpuplane installs and the acceptance suites it runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.names import (
    ARGO_WORKFLOWS_ADDON,
    DCGM_EXPORTER_ADDON,
    GPU_OPERATOR_ADDON,
    PROMETHEUS_ADDON,
    SCHEDULER_ADDON,
)
from renderer.model.operators import BY_ADDON
from renderer.model.platform import Cluster, Platform
from renderer.policy.operators import suggested_release
from renderer.policy.quotas import quota_offers
from renderer.policy.rule import error, pools_by_cluster, rule

REQUIRED_THRESHOLDS = {
    "distributed-training": ("allReduceBusBandwidthGBps", "checkpointWriteGBps", "restoreSeconds"),
    "fine-tuning": ("checkpointWriteGBps", "restoreSeconds"),
    "online-inference": ("inferenceP95Ms",),
    "batch-inference": ("inferenceP95Ms",),
    "notebooks": (),
}


@rule("acceptance-thresholds")
def pools_have_thresholds(p: Platform) -> Iterator[Diagnostic]:
    """Every pool declares the acceptance thresholds its workload is judged by.

    The guide: a cluster that cannot explain its bandwidth, checkpoint restore time or latency is
    not production infrastructure yet. Distributed training needs all-reduce bus bandwidth,
    checkpoint write throughput and restore time; fine-tuning the checkpoint figures; inference
    pools a p95 latency. The acceptance suite fails a pool that misses them.

    To satisfy it: add the keys the finding lists under `spec.acceptance` of the pool file, in
    the units their names carry: `allReduceBusBandwidthGBps` (distributed-training pools of more
    than one node), `checkpointWriteGBps` and `restoreSeconds` (distributed-training and
    fine-tuning), `inferenceP95Ms` (online- and batch-inference). Notebook pools need none.
    Example: `acceptance: {checkpointWriteGBps: 4, restoreSeconds: 300}`.
    """
    for pool in p.pools.values():
        wanted = REQUIRED_THRESHOLDS[pool.workload]
        if pool.workload == "distributed-training" and pool.nodes.max <= 1:
            wanted = tuple(t for t in wanted if t != "allReduceBusBandwidthGBps")
        missing = [t for t in wanted if t not in pool.acceptance]
        if missing:
            yield error(
                "acceptance-thresholds",
                f"pool '{pool.name}' ({pool.workload}) has no acceptance threshold for {', '.join(missing)}",
                pool.origin.key("spec", "acceptance"),
                f"add {', '.join(f'{m}: …' for m in missing)} under spec.acceptance",
            )


def _required_addons(cluster: Cluster) -> list[str]:
    return [GPU_OPERATOR_ADDON, SCHEDULER_ADDON[cluster.scheduler], DCGM_EXPORTER_ADDON]


def _runs_suites(p: Platform) -> set[str]:
    """The clusters with a pool some team has quota on: the workflows layer renders acceptance
    and benchmark suites there, so they need Argo Workflows."""
    return {
        p.pools[pool].cluster
        for (pool, _), entries in quota_offers(p).items()
        if any(quota.nominal > 0 for _, quota, _ in entries)
    }


def _release(cluster: Cluster, addon: str) -> str | None:
    """The release to pin where gpuplane knows one (its tested release, or the newest line that
    supports the cluster's Kubernetes); None for an add-on it has no release of."""
    return suggested_release(cluster, addon) if addon in BY_ADDON else None


@rule("addon-version-unpinned")
def production_pins_addons(p: Platform) -> Iterator[Diagnostic]:
    """Production clusters declare and pin every add-on: GPU Operator, scheduler, DCGM exporter,
    and Argo Workflows where the acceptance suites run.

    An unpinned chart upgrades whenever its repository moves, which is how a driver or Kueue API
    change reaches production without review. Staging may float; production may not.

    To satisfy it: in the cluster file, give each add-on the finding names a `version` under
    `spec.addons`: `gpuOperator` (the chart, e.g. v26.7.0), `kueue` (e.g. v0.19.2) or `volcano`
    (e.g. v1.13.0) for the cluster's scheduler, `dcgmExporter` (e.g. 4.5.2-4.8.1), and
    `argoWorkflows` (the argo-helm chart, e.g. 2.0.4) where the suites run: on a cluster with
    a pool some team holds quota on. An add-on set to `enabled: false` needs no version.
    """
    suites = _runs_suites(p)
    for cluster in p.clusters.values():
        if not cluster.production:
            continue
        required = _required_addons(cluster)
        if cluster.name in suites:
            required.append(ARGO_WORKFLOWS_ADDON)
        for name in required:
            if name not in cluster.addons:
                known = _release(cluster, name)
                yield error(
                    "addon-version-unpinned",
                    f"production cluster '{cluster.name}' does not declare the {name} add-on",
                    cluster.origin.key("spec", "addons"),
                    f"add `{name}: {{version: {known}}}` under spec.addons"
                    if known
                    else f"add spec.addons.{name}.version",
                )
        for addon in cluster.addons.values():
            enabled = addon.settings.get("enabled", True)
            if addon.version is None and enabled:
                yield error(
                    "addon-version-unpinned",
                    f"production cluster '{cluster.name}' does not pin the {addon.name} version",
                    addon.origin.location,
                    f"add version: {_release(cluster, addon.name) or '…'} to spec.addons.{addon.name}",
                )


@rule("scheduler-addon-missing")
def scheduler_installed(p: Platform) -> Iterator[Diagnostic]:
    """A cluster's scheduler (Kueue or Volcano) must be among its add-ons.

    The queue layer renders that scheduler's objects; without the add-on their CRDs never arrive
    and every sync fails.

    To satisfy it: add the add-on to `spec.addons` of the cluster file: `kueue: {version:
    v0.19.2}` for `scheduler: kueue`, `volcano: {version: v1.13.0}` for `scheduler: volcano`; or
    set `spec.scheduler` to the scheduler the cluster does install. (On production clusters
    `addon-version-unpinned` reports it, with the version.)
    """
    for cluster in p.clusters.values():
        wanted = SCHEDULER_ADDON[cluster.scheduler]
        if wanted not in cluster.addons and not cluster.production:
            yield error(
                "scheduler-addon-missing",
                f"cluster '{cluster.name}' schedules with {cluster.scheduler} but does not install it",
                cluster.origin.at("spec", "scheduler"),
                f"add `{wanted}: {{version: {_release(cluster, wanted) or '…'}}}` under "
                "spec.addons",
            )


@rule("argo-workflows-addon-missing")
def argo_workflows_installed(p: Platform) -> Iterator[Diagnostic]:
    """A cluster whose pools run acceptance suites must declare the Argo Workflows add-on.

    The workflows layer renders WorkflowTemplates, a CronWorkflow and Argo CD's PostSync hook
    Workflow; without the controller and its CRDs the sync of that layer fails and no change is
    ever tested. A cluster runs the suites as soon as a team holds nominal quota above 0 on one
    of its pools.

    To satisfy it: add `spec.addons.argoWorkflows.version` to the cluster file (the argo-helm
    chart version, e.g. `2.0.4`, which installs Argo Workflows v4.1), or `argoWorkflows:
    {enabled: false}` when the cluster already runs an Argo Workflows v4 controller.
    """
    for name in sorted(_runs_suites(p)):
        cluster = p.clusters.get(name)
        if cluster is None or cluster.production or ARGO_WORKFLOWS_ADDON in cluster.addons:
            continue  # production: addon-version-unpinned says it, with the version
        yield error(
            "argo-workflows-addon-missing",
            f"cluster '{cluster.name}' runs acceptance suites but does not install Argo Workflows",
            cluster.origin.key("spec", "addons"),
            f"add spec.addons.{ARGO_WORKFLOWS_ADDON}.version (the argo-workflows chart, for example 2.0.4), or enabled: false if the cluster already runs Argo Workflows v4",
        )


@rule("observability-missing")
def clusters_explain_themselves(p: Platform) -> Iterator[Diagnostic]:
    """A cluster runs kube-prometheus-stack and the DCGM exporter's ServiceMonitor, so that the
    observability layer's rules, alerts and dashboards have series to read.

    The guide: a cluster that cannot explain queue time, GPU utilisation, checkpoint restore time
    and failure causes is not yet production infrastructure. Without the Prometheus stack gpuplane
    renders no rules, alerts or dashboards at all (they need the Prometheus Operator and Grafana
    it brings); without the exporter's ServiceMonitor every GPU series is missing and idle,
    XID and thermal alerts can never fire. Production clusters only: a lab or staging cluster
    may run without them.

    To satisfy it: in the cluster file add `spec.addons.prometheusStack: {version: 79.6.1}` (the
    kube-prometheus-stack chart) and `serviceMonitor: true` under `spec.addons.dcgmExporter`.
    """
    for cluster in p.clusters.values():
        if not cluster.production:
            continue
        if not cluster.runs(PROMETHEUS_ADDON):
            yield Diagnostic(
                "observability-missing",
                f"cluster '{cluster.name}' runs no Prometheus stack: no GPU, queue or cost "
                "alerts and no dashboards are rendered for it",
                cluster.origin.key("spec", "addons"),
                hint=f"add spec.addons.{PROMETHEUS_ADDON}.version (the kube-prometheus-stack chart, for example 79.6.1)",
            )
        exporter = cluster.addons.get(DCGM_EXPORTER_ADDON)
        if exporter is None or not exporter.settings.get("serviceMonitor", False):
            where = (
                cluster.origin.key("spec", "addons")
                if exporter is None
                else exporter.origin.location
            )
            yield Diagnostic(
                "observability-missing",
                f"cluster '{cluster.name}' does not scrape the DCGM exporter: every GPU series "
                "the alerts and dashboards read is missing",
                where,
                hint=f"set spec.addons.{DCGM_EXPORTER_ADDON}.serviceMonitor: true",
            )


@rule("driver-version-required")
def unmanaged_drivers_declared(p: Platform) -> Iterator[Diagnostic]:
    """Where the GPU Operator does not manage the driver, pools declare the driver their image ships.

    With `driverManaged: false` (EKS and GKE images, for example, ship their own driver) the
    cluster's driver version is whatever each node image carries; gpuplane records it as a node
    fact and compares it in acceptance results, so it must be written down.

    To satisfy it: add `spec.image.driver` to the pool file, quoted: the version the node image
    ships, as `nvidia-smi` prints it on a node, e.g. `driver: "570.124.06"`. Or let the operator
    install the driver: `driverManaged: true` under `spec.addons.gpuOperator` of the cluster.
    """
    for pool in p.pools.values():
        cluster = p.clusters.get(pool.cluster)
        operator = cluster.addons.get(GPU_OPERATOR_ADDON) if cluster is not None else None
        if operator is None or operator.settings.get("driverManaged", True):
            continue
        if not pool.image.get("driver"):
            yield error(
                "driver-version-required",
                f"pool '{pool.name}' runs on cluster '{pool.cluster}', where the GPU Operator does not manage drivers, but declares no image.driver",
                pool.origin.key("spec", "image")
                if pool.image
                else pool.origin.key("spec", "accelerator"),
                "add spec.image.driver: the driver version the node image ships",
                (("driverManaged: false is set here", operator.origin.at("driverManaged")),),
            )


@rule("driver-version-mismatch")
def managed_driver_agrees(p: Platform) -> Iterator[Diagnostic]:
    """Where the GPU Operator installs the driver, the pools of a cluster agree on its version.

    The operator installs one driver version on every GPU node of the cluster (its chart's
    `driver.version`); pools that declare different versions describe nodes that will not exist.

    To satisfy it: write the same `spec.image.driver` (quoted, e.g. `"570.124.06"`) in every
    pool file of the cluster: the version the GPU Operator installs. The finding's note points
    at the version it was compared with (the cluster's first pool, by name, that declares one).
    """
    by_cluster = pools_by_cluster(p)
    for name, pools in by_cluster.items():
        cluster = p.clusters.get(name)
        operator = cluster.addons.get(GPU_OPERATOR_ADDON) if cluster is not None else None
        if operator is None or not operator.settings.get("driverManaged", True):
            continue
        declared = [pool for pool in pools if pool.image.get("driver")]
        if not declared:
            continue
        first = declared[0]
        for pool in declared[1:]:
            if pool.image["driver"] != first.image["driver"]:
                yield error(
                    "driver-version-mismatch",
                    f"pool '{pool.name}' declares driver {pool.image['driver']}, pool '{first.name}' {first.image['driver']}; the GPU Operator installs one driver on cluster '{name}'",
                    pool.origin.at("spec", "image", "driver"),
                    f"use driver {first.image['driver']} in every pool of the cluster",
                    (
                        (
                            "the other version is declared here",
                            first.origin.at("spec", "image", "driver"),
                        ),
                    ),
                )


@rule("acceptance-image-differs")
def acceptance_on_the_production_image(p: Platform) -> Iterator[Diagnostic]:
    """Acceptance thresholds measured on another node image than the pool runs (a warning).

    The guide's mistake: benchmarking on a clean image and running production on another. When
    `acceptance.nodeImage` records the image the thresholds came from, it should match `image`.

    To satisfy it: run the acceptance suite again on the image the pool runs, then make
    `spec.acceptance.nodeImage` of the pool file equal `spec.image`: the same keys (os, kernel,
    driver, cuda, runtime) with the same values. The warning lists each key that differs.
    """
    for pool in p.pools.values():
        if not pool.acceptance_image:
            continue
        differs = sorted(
            key
            for key in set(pool.acceptance_image) | set(pool.image)
            if pool.acceptance_image.get(key) != pool.image.get(key)
        )
        if differs:
            details = ", ".join(
                f"{k} {pool.acceptance_image.get(k, '-')} vs {pool.image.get(k, '-')}"
                for k in differs
            )
            wanted = ", ".join(
                f'{k}: "{pool.image[k]}"' if k in pool.image else f"no {k}" for k in differs
            )
            yield Diagnostic(
                "acceptance-image-differs",
                f"pool '{pool.name}' was accepted on another node image ({details})",
                pool.origin.key("spec", "acceptance", "nodeImage"),
                hint="re-run the acceptance suite on the pool's image, then write what spec.image "
                f"says in spec.acceptance.nodeImage: {wanted}",
                severity=Severity.WARNING,
            )


IN_CLUSTER = "https://kubernetes.default.svc"


@rule("argocd-project")
def argocd_projects_distinct(p: Platform) -> Iterator[Diagnostic]:
    """A cluster's Argo CD project is its own: never `default`, and not shared with a cluster that
    one Argo CD also manages.

    gpuplane locks the `default` project down and renders each cluster's platform project with
    that cluster's destinations only. A cluster Argo CD reaches remotely (a destination other than
    https://kubernetes.default.svc) is managed by another cluster's Argo CD, so two clusters naming
    the same project would render two different objects under one name, and the two root
    Applications would overwrite each other's.

    To satisfy it: set `spec.argocd.project` of the cluster file to a project of its own, e.g.
    `platform-<cluster>`. Clusters whose Argo CD runs in the cluster itself (destination
    `https://kubernetes.default.svc`) may share a name; as soon as one of them is managed
    remotely, each needs its own.
    """
    for cluster in p.clusters.values():
        if cluster.argocd_project == "default":
            yield error(
                "argocd-project",
                f"cluster '{cluster.name}' uses Argo CD's default project, which gpuplane locks down",
                cluster.origin.at("spec", "argocd", "project"),
                f"name a project of its own, e.g. platform-{cluster.name}",
            )
    by_project: dict[str, list[Cluster]] = defaultdict(list)
    for cluster in p.clusters.values():
        by_project[cluster.argocd_project].append(cluster)
    for project, clusters in by_project.items():
        remote = [c for c in clusters if c.argocd_destination != IN_CLUSTER]
        if len(clusters) > 1 and remote:
            first = clusters[0]
            for cluster in clusters[1:]:
                yield error(
                    "argocd-project",
                    f"clusters '{first.name}' and '{cluster.name}' both use Argo CD project '{project}', and '{remote[0].name}' is managed remotely",
                    cluster.origin.at("spec", "argocd", "project"),
                    f"give cluster '{cluster.name}' a project of its own, e.g. platform-{cluster.name}",
                    (
                        (
                            "the other cluster names it here",
                            first.origin.at("spec", "argocd", "project"),
                        ),
                    ),
                )
