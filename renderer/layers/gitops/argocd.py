"""GitOps: the Argo CD objects that deploy one cluster's rendered tree, and fence in its teams.

Rendered only when the repository settings (`gpuplane.yaml`) say where Argo CD clones from; all of
it lands in `rendered/<cluster>/gitops/`, in the Argo CD namespace:

- a root Application `<cluster>-root` (app of apps) that syncs this folder, itself included;
- an Application per add-on (GPU Operator, Kueue or Volcano, Argo Workflows,
  kube-prometheus-stack): the pinned Helm chart, with the values the other layers wrote to `rendered/<cluster>/values/<chart>.yaml`;
- an Application per layer folder that exists for the cluster, read as a plain directory;
- AppProjects: the platform's own (cluster-scoped kinds allowed), a locked-down `default` (where
  Argo CD runs in the cluster), and one per team, limited to the team's namespaces and denied the
  kinds the platform guards them with.

Sync waves order the Applications: projects, then the add-ons that bring the CRDs, then the
security layer's admission policies, then tenancy (namespaces first: the other layers put objects in team namespaces), then the platform objects,
then workflows. Why each setting is what it is: docs/gitops.md.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.layers.gitops import argo_workflows, operator_values
from renderer.layers.gpu import operator as gpu_operator
from renderer.model import nvidia
from renderer.model.choices import Scheduler
from renderer.model.guardrails import argocd_blacklist
from renderer.model.names import (
    ARGO_WORKFLOWS_ADDON,
    ARGO_WORKFLOWS_NAMESPACE,
    ENVOY_GATEWAY_NAMESPACE,
    EXTERNAL_SECRETS_ADDON,
    EXTERNAL_SECRETS_NAMESPACE,
    GPU_OPERATOR_ADDON,
    KEDA_NAMESPACE,
    KUEUE_ADDON,
    KUEUE_NAMESPACE,
    PROMETHEUS_ADDON,
    PROMETHEUS_NAMESPACE,
    VOLCANO_ADDON,
    VOLCANO_NAMESPACE,
)
from renderer.model.operators import (
    APPWRAPPER_ADDON,
    DRA_DRIVER_ADDON,
    ENVOY_GATEWAY_ADDON,
    JOBSET_ADDON,
    KEDA_ADDON,
    KUBERAY_ADDON,
    LWS_ADDON,
    MPI_OPERATOR_ADDON,
    NETWORK_OPERATOR_ADDON,
    OPENCOST_ADDON,
    TRAINER_ADDON,
    TRAINING_OPERATOR_ADDON,
)
from renderer.model.platform import Cluster, Repository
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest, Output, Values, metadata
from renderer.output.writer import OUTPUT_DIR

LAYER = "gitops"
API_VERSION = "argoproj.io/v1alpha1"

IN_CLUSTER = "https://kubernetes.default.svc"
"""Where Argo CD itself runs, as it sees it: its Applications and AppProjects live there, while
the Applications deploy to the cluster's `argocd.destination` (the same server when Argo CD runs
in the cluster it manages)."""

DEFAULT_PROJECT = "default"
VALUES_REF = "values"

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
GENERATE_PATHS = "argocd.argoproj.io/manifest-generate-paths"

DIRECTORY = {"recurse": True, "exclude": "{kustomization.yaml,*/kustomization.yaml}"}
"""Every folder of `rendered/` holds a kustomization.yaml for people at a terminal; Argo CD reads
the folders as plain directories instead, so it must skip them. Argo CD matches the pattern
against each file's path below the source path with `*` crossing `/`: the two alternatives are
the top folder's file and every nested one."""

AUTOMATED = {"prune": True, "selfHeal": True}
RETRY: Mapping[str, Any] = {
    "limit": 5,
    "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"},
    "refresh": True,
}
"""Five tries over about five minutes; each retry syncs the latest commit, so a fix pushed while
a sync fails is picked up without waiting for the next one."""

PROJECT_WAVE = -3
ADDON_WAVE = -2
LAYER_WAVES: Mapping[str, int] = {
    "security": -1,
    "tenancy": 0,
    "queueing": 1,
    "gpu": 1,
    "training": 1,
    "observability": 2,
    "serving": 2,
    "workflows": 3,
}
"""The security layer's admission policies right after the add-ons (wave -1), so that no team
namespace exists, even for a moment, without them; then namespaces, quotas and RBAC (wave 0),
because the queueing and GPU layers put
LocalQueues, ConfigMaps and claim templates into team namespaces; platform objects next (1:
flavors and queues, GPU configuration, the Kubeflow Trainer runtimes, whose CRD and validating
webhook come with the Trainer add-on);
the observability layer's rules and dashboards once the add-ons and the queues they watch exist,
and the serving layer's routes, autoscalers and monitors once the namespaces and the add-ons
serving their kinds (Envoy Gateway, KEDA, the Prometheus Operator) do (2); workflows, which
exercise all of it, last (3). A layer missing here syncs with the platform."""
DEFAULT_LAYER_WAVE = 1

HOOK_LAYERS = frozenset({"workflows"})
"""Layers whose sync runs a hook (the acceptance suites' PostSync Workflow): a failing hook fails
the sync, and a retry would delete its Workflow (BeforeHookCreation) and queue every pool's GPU
Jobs again, up to RETRY's limit. Their Applications do not retry; the next commit, or a manual
sync, runs the suites again."""

GUARDRAILS: tuple[Mapping[str, str], ...] = (
    *argocd_blacklist(),
    {"group": "argoproj.io", "kind": "Application"},
    {"group": "argoproj.io", "kind": "ApplicationSet"},
    {"group": "argoproj.io", "kind": "AppProject"},
)
"""Kinds a team's own Applications may not manage: the platform's guardrails in its namespaces
(`renderer.model.guardrails`, the list the team ClusterRoles are checked against: quota,
container defaults, network policy of any CNI, RBAC, the queue its jobs enter, admission
policies, secret references) and Argo CD's own kinds. Cluster-scoped kinds are denied by an
empty whitelist as well."""

WEBHOOK_CA: tuple[Mapping[str, Any], ...] = tuple(
    {
        "group": "admissionregistration.k8s.io",
        "kind": kind,
        "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"],
    }
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
)
CONVERSION_CA: Mapping[str, Any] = {
    "group": "apiextensions.k8s.io",
    "kind": "CustomResourceDefinition",
    "jsonPointers": ["/spec/conversion/webhook/clientConfig/caBundle"],
}


@dataclass(frozen=True, slots=True)
class Chart:
    """An add-on installed from its Helm chart, and what its Application needs to know."""

    addon: str  # key under the cluster's spec.addons
    chart: str
    repository: str  # no scheme: an OCI registry (Argo CD needs no repository secret for it)
    namespace: str
    release: str
    server_side_apply: bool  # CRDs too big for kubectl's last-applied annotation
    privileged: bool  # runs privileged pods: the namespace's Pod Security level must allow it
    ignore_differences: tuple[Mapping[str, Any], ...] = ()  # fields the add-on writes at runtime
    values: bool = True  # gpuplane writes a values file for it (False: the chart's defaults)
    tagged_v: bool = False  # the chart's versions keep the release tag's `v` (v26.7.0)
    path: str = ""  # no chart: the kustomize base at this path of `repository`, at the tag
    images: tuple[str, ...] = ()  # kustomize image overrides, `{version}` standing for the tag


GPU_OPERATOR = Chart(
    addon=GPU_OPERATOR_ADDON,
    chart=gpu_operator.CHART,
    repository=gpu_operator.CHART_REPOSITORY,
    namespace=nvidia.NAMESPACE,
    release=gpu_operator.RELEASE,
    server_side_apply=False,
    privileged=True,  # driver and toolkit containers, device plugin: host access
    tagged_v=True,
)
KUEUE = Chart(
    addon=KUEUE_ADDON,
    chart="kueue",
    repository="registry.k8s.io/kueue/charts",
    namespace=KUEUE_NAMESPACE,
    release="kueue",
    server_side_apply=True,
    privileged=False,
    # internal cert management injects its CA into the webhooks and the CRD conversion webhooks
    ignore_differences=(*WEBHOOK_CA, CONVERSION_CA),
)
VOLCANO = Chart(
    addon=VOLCANO_ADDON,
    chart="volcano",
    repository="https://volcano-sh.github.io/helm-charts",
    namespace=VOLCANO_NAMESPACE,
    release="volcano",
    server_side_apply=False,
    privileged=False,
)
ARGO_WORKFLOWS = Chart(
    addon=ARGO_WORKFLOWS_ADDON,
    chart=argo_workflows.CHART,
    repository=argo_workflows.CHART_REPOSITORY,
    namespace=ARGO_WORKFLOWS_NAMESPACE,
    release=argo_workflows.RELEASE,
    server_side_apply=True,  # the CRDs of Workflow and its templates
    privileged=False,
)
PROMETHEUS_STACK = Chart(
    addon=PROMETHEUS_ADDON,
    chart="kube-prometheus-stack",
    repository="https://prometheus-community.github.io/helm-charts",
    namespace=PROMETHEUS_NAMESPACE,
    release="kube-prometheus-stack",
    server_side_apply=True,
    privileged=True,  # node-exporter: host network, PID namespace and file system
    # the chart's admission-patch Job writes its CA into the operator's webhooks
    ignore_differences=WEBHOOK_CA,
)
EXTERNAL_SECRETS = Chart(
    addon=EXTERNAL_SECRETS_ADDON,
    chart="external-secrets",
    repository="https://charts.external-secrets.io",
    namespace=EXTERNAL_SECRETS_NAMESPACE,
    release="external-secrets",
    server_side_apply=True,  # the SecretStore CRDs are far over the last-applied annotation limit
    privileged=False,
    # its cert controller writes the CA into its webhooks and the CRDs' conversion webhooks
    ignore_differences=(*WEBHOOK_CA, CONVERSION_CA),
    values=False,  # no pinned values tree of the chart to check values against: its defaults
)
JOBSET = Chart(
    addon=JOBSET_ADDON,
    chart="jobset",
    repository="registry.k8s.io/jobset/charts",
    namespace="jobset-system",
    release="jobset",
    server_side_apply=True,  # the JobSet CRD (800 kB) is over the last-applied annotation limit
    privileged=False,
    # its cert controller writes the CA into its webhooks
    ignore_differences=WEBHOOK_CA,
    values=False,
)
KUBERAY = Chart(
    addon=KUBERAY_ADDON,
    chart="kuberay-operator",
    repository="https://ray-project.github.io/kuberay-helm/",
    namespace="ray-system",
    release="kuberay-operator",
    server_side_apply=True,  # the Ray CRDs are about 1 MB each
    privileged=False,
    values=False,
)
TRAINER = Chart(
    addon=TRAINER_ADDON,
    chart="kubeflow-trainer",
    repository="ghcr.io/kubeflow/charts",
    namespace="kubeflow-system",
    release="kubeflow-trainer",
    server_side_apply=True,  # the runtime CRDs are about 900 kB each
    privileged=False,
    ignore_differences=WEBHOOK_CA,
)
LWS = Chart(
    addon=LWS_ADDON,
    chart="lws",
    repository="registry.k8s.io/lws/charts",
    namespace="lws-system",
    release="lws",
    server_side_apply=True,  # the LeaderWorkerSet CRD is 1.3 MB
    privileged=False,
    ignore_differences=(*WEBHOOK_CA, CONVERSION_CA),
    values=False,
)
APPWRAPPER = Chart(
    addon=APPWRAPPER_ADDON,
    chart="appwrapper",
    repository="https://github.com/project-codeflare/appwrapper.git",
    namespace="appwrapper-system",
    release="appwrapper",
    server_side_apply=True,  # as the project's install.yaml asks (`kubectl apply --server-side`)
    privileged=False,
    ignore_differences=WEBHOOK_CA,
    values=False,
    tagged_v=True,
    # No Helm chart: the release's install.yaml is `kustomize build config/default` after
    # `kustomize edit set image controller=quay.io/ibm/appwrapper:<tag>` (its Makefile), which
    # the tag itself leaves untagged.
    path="config/default",
    images=("controller=quay.io/ibm/appwrapper:{version}",),
)
TRAINING_OPERATOR = Chart(
    addon=TRAINING_OPERATOR_ADDON,
    chart="training-operator",
    # kubeflow/training-operator was renamed kubeflow/trainer; its v1 tags live there
    repository="https://github.com/kubeflow/trainer.git",
    namespace="kubeflow",  # the overlay's `namespace:`, and its namespace.yaml
    release="training-operator",
    server_side_apply=True,  # each of its six CRDs is about 600 kB
    privileged=False,
    # its cert controller (pkg/cert) writes the CA into its ValidatingWebhookConfiguration
    ignore_differences=WEBHOOK_CA,
    values=False,
    tagged_v=True,
    # No Helm chart: the project installs `kubectl apply -k
    # manifests/overlays/standalone?ref=<tag>`; the overlay pins the operator's image itself
    # (`images: newTag`), so no override is needed.
    path="manifests/overlays/standalone",
)
MPI_OPERATOR = Chart(
    addon=MPI_OPERATOR_ADDON,
    chart="mpi-operator",
    repository="https://github.com/kubeflow/mpi-operator.git",
    namespace="mpi-operator",  # the overlay's `namespace:`, and its namespace.yaml
    release="mpi-operator",
    server_side_apply=True,  # as the release's README asks (`kubectl apply --server-side`)
    privileged=False,
    values=False,
    tagged_v=True,
    # No Helm chart: the release's deploy/v2beta1/mpi-operator.yaml is `kustomize build
    # manifests/overlays/standalone` (hack/generate-manifest.sh), which pins the image tag.
    path="manifests/overlays/standalone",
)
NETWORK_OPERATOR = Chart(
    addon=NETWORK_OPERATOR_ADDON,
    chart="network-operator",
    repository="https://helm.ngc.nvidia.com/nvidia",
    namespace="nvidia-network-operator",
    release="network-operator",
    server_side_apply=True,
    privileged=True,  # the RDMA shared device plugin and OFED driver pods: host access
)
DRA_DRIVER = Chart(
    addon=DRA_DRIVER_ADDON,
    chart="nvidia-dra-driver-gpu",
    repository="https://helm.ngc.nvidia.com/nvidia",
    namespace="nvidia-dra-driver-gpu",
    release="nvidia-dra-driver-gpu",
    server_side_apply=True,
    privileged=True,  # the kubelet plugin: host devices and the driver root
)
OPENCOST = Chart(
    addon=OPENCOST_ADDON,
    chart="opencost",
    repository="https://opencost.github.io/opencost-helm-chart",
    namespace=PROMETHEUS_NAMESPACE,  # beside the pricing ConfigMap it mounts, and Prometheus
    release="opencost",
    server_side_apply=False,
    privileged=False,
)
KEDA = Chart(
    addon=KEDA_ADDON,
    chart="keda",
    repository="https://kedacore.github.io/charts",
    namespace=KEDA_NAMESPACE,
    release="keda",
    server_side_apply=True,  # the ScaledJob CRD carries a whole pod template (667 kB)
    privileged=False,
    # KEDA's operator generates its own certificates (`certificates.autoGenerated`) and writes
    # their CA into the admission webhook and the external metrics APIService at runtime
    # (kedacore/charts v2.20.2 keda/templates/metrics-server/apiservice.yaml has no caBundle)
    ignore_differences=(
        *WEBHOOK_CA,
        {
            "group": "apiregistration.k8s.io",
            "kind": "APIService",
            "jsonPointers": ["/spec/caBundle"],
        },
    ),
    values=False,  # the chart's defaults: nothing here needs changing (docs/serving-autoscaling.md)
)
ENVOY_GATEWAY = Chart(
    addon=ENVOY_GATEWAY_ADDON,
    chart="gateway-helm",
    # envoyproxy/gateway v1.9.0 .github/workflows/release.yaml: `make helm-push` pushes the chart
    # to oci://docker.io/envoyproxy as v1.9.0 (and 1.9.0); the docs install `--version v1.9.0`
    repository="docker.io/envoyproxy",
    namespace=ENVOY_GATEWAY_NAMESPACE,
    release="eg",
    server_side_apply=True,  # the bundled HTTPRoute CRD (430 kB) is over the annotation limit
    privileged=False,  # the controller and the Envoy proxies run as non-root, unprivileged
    # its certgen Job writes the CA into the topology injector's MutatingWebhookConfiguration
    ignore_differences=WEBHOOK_CA,
    values=False,  # the chart's defaults: the controller runs the proxies in its own namespace
    tagged_v=True,
)
SCHEDULER_CHARTS: Mapping[Scheduler, Chart] = {"kueue": KUEUE, "volcano": VOLCANO}
OPERATOR_CHARTS: tuple[Chart, ...] = (
    JOBSET,
    KUBERAY,
    TRAINER,
    LWS,
    APPWRAPPER,
    TRAINING_OPERATOR,
    MPI_OPERATOR,
    NETWORK_OPERATOR,
    DRA_DRIVER,
    OPENCOST,
    KEDA,
    ENVOY_GATEWAY,
)
"""The operators of workload kinds, fabrics, devices and cost (`renderer.model.operators`)."""

KUBE_STATE_LABELS: Mapping[str, tuple[str, ...]] = {
    "namespaces": ("gpuplane.dev/team", "gpuplane.dev/cost-center", "gpuplane.dev/purpose"),
    "nodes": ("gpuplane.dev/pool", "gpuplane.dev/accelerator", "gpuplane.dev/sharing"),
    "pods": (
        "gpuplane.dev/team",
        "gpuplane.dev/purpose",
        "gpuplane.dev/template",
        "gpuplane.dev/model",
        "gpuplane.dev/dataset",
        "gpuplane.dev/runtime",
        "kueue.x-k8s.io/queue-name",
        "kueue.x-k8s.io/priority-class",
    ),
}
"""The Kubernetes labels kube-state-metrics exports as `label_<name>` on `kube_<kind>_labels`:
none by default (`--metric-labels-allowlist`), so without these the observability layer's rules
could not tell a namespace's team or a node's pool. docs/observability.md."""

PROMETHEUS_VALUES: Mapping[str, Any] = {
    "prometheus": {
        "prometheusSpec": {
            f"{kind}SelectorNilUsesHelmValues": False
            for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig")
        }
    },
    "kube-state-metrics": {
        "metricLabelsAllowlist": [
            f"{kind}=[{','.join(keys)}]" for kind, keys in KUBE_STATE_LABELS.items()
        ]
    },
}
"""The chart's Prometheus selects only the monitors and rules labelled `release: <release>` unless
told otherwise; gpuplane's (the DCGM exporter's ServiceMonitor, the observability layer's rules)
carry no such label. kube-state-metrics (a subchart: its values under `kube-state-metrics`, whose
deployment joins `metricLabelsAllowlist` into `--metric-labels-allowlist`) exports the labels
the rules join on."""


def render(view: ClusterView, layer_folders: Sequence[str]) -> Iterator[Output]:
    """The Argo CD objects of one cluster; nothing without repository settings.

    `layer_folders` are the folders the cluster's other layers wrote manifests into (a layer can
    render nothing, or only values), so that no Application points at a missing path."""
    repository = view.platform.repository
    if repository is None:
        return
    cluster = view.cluster
    charts = installed_charts(cluster)
    yield from _projects(view, repository, charts)
    yield _root(cluster, repository)
    for chart in charts:
        values = operator_values.VALUES.get(chart.addon)
        body = values(view) if values is not None else None
        if body is not None:
            yield Values(LAYER, chart.chart, body, cluster.addons[chart.addon].origin.location)
        has_values = chart.values if values is None else body is not None
        yield _addon(view, repository, chart, has_values=has_values)
    for layer in layer_folders:
        yield _layer(cluster, repository, layer)
    if PROMETHEUS_STACK in charts:
        yield Values(
            LAYER,
            PROMETHEUS_STACK.chart,
            copy.deepcopy(dict(PROMETHEUS_VALUES)),
            cluster.addons[PROMETHEUS_STACK.addon].origin.location,
        )


def installed_charts(cluster: Cluster) -> tuple[Chart, ...]:
    """The add-ons gpuplane installs on the cluster, in the order their Applications are listed."""
    charts = [
        GPU_OPERATOR,
        SCHEDULER_CHARTS[cluster.scheduler],
        ARGO_WORKFLOWS,
        PROMETHEUS_STACK,
        EXTERNAL_SECRETS,
        *OPERATOR_CHARTS,
    ]
    return tuple(
        chart
        for chart in charts
        if chart.addon in cluster.addons
        and cluster.addons[chart.addon].settings.get("enabled", True) is not False
    )


def chart_version(chart: Chart, version: str | None) -> str:
    """The chart's own version for an add-on version: the GPU Operator versions its chart like
    its releases (`v26.7.0`), and a kustomize base is checked out at its tag; the other charts
    drop the `v` (`0.19.2`). An unpinned add-on follows the newest chart (`*`; a kustomize base
    the default branch, `HEAD`), which the policy allows outside production."""
    if version is None:
        return "HEAD" if chart.path else "*"
    return version if chart.tagged_v else version.removeprefix("v")


def values_path(cluster: Cluster, chart: Chart) -> str:
    """Where the chart's values file is in the repository."""
    return f"{OUTPUT_DIR}/{cluster.name}/values/{chart.chart}.yaml"


def sync_wave(layer: str) -> int:
    return LAYER_WAVES.get(layer, DEFAULT_LAYER_WAVE)


# --- Applications -----------------------------------------------------------------------------


def _application(
    cluster: Cluster,
    repository: Repository,
    name: str,
    wave: int | None,
    generate_paths: str,
    spec: dict[str, Any],
) -> Manifest:
    meta = metadata(name, repository.argocd_namespace, cluster=cluster.name)
    annotations = {GENERATE_PATHS: generate_paths}
    if wave is not None:
        annotations[SYNC_WAVE] = str(wave)
    meta["annotations"] = annotations
    return Manifest(
        LAYER,
        {"apiVersion": API_VERSION, "kind": "Application", "metadata": meta, "spec": spec},
        cluster.origin.location,
    )


def _sync_policy(*options: str, retry: bool = True, **extra: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"automated": dict(AUTOMATED)}
    if options:
        policy["syncOptions"] = list(options)
    policy.update(extra)
    if retry:
        policy["retry"] = copy.deepcopy(dict(RETRY))
    return policy


def _directory_source(repository: Repository, path: str) -> dict[str, Any]:
    return {
        "repoURL": repository.repo_url,
        "targetRevision": repository.target_revision,
        "path": path,
        "directory": dict(DIRECTORY),
    }


def _root(cluster: Cluster, repository: Repository) -> Manifest:
    """The app of apps an admin applies once; from then on it syncs this folder, itself too."""
    return _application(
        cluster,
        repository,
        f"{cluster.name}-root",
        None,
        ".",
        {
            "project": cluster.argocd_project,
            "source": _directory_source(repository, f"{OUTPUT_DIR}/{cluster.name}/{LAYER}"),
            "destination": {"server": IN_CLUSTER, "namespace": repository.argocd_namespace},
            "syncPolicy": _sync_policy(),
        },
    )


def _layer(cluster: Cluster, repository: Repository, layer: str) -> Manifest:
    """A layer's folder, read as a plain directory; its objects carry their own namespaces."""
    return _application(
        cluster,
        repository,
        f"{cluster.name}-{layer}",
        sync_wave(layer),
        ".",
        {
            "project": cluster.argocd_project,
            "source": _directory_source(repository, f"{OUTPUT_DIR}/{cluster.name}/{layer}"),
            "destination": {"server": cluster.argocd_destination},
            # custom kinds whose CRDs the add-on Applications of the same root sync bring
            "syncPolicy": _sync_policy(
                "SkipDryRunOnMissingResource=true", retry=layer not in HOOK_LAYERS
            ),
        },
    )


def _addon(
    view: ClusterView, repository: Repository, chart: Chart, *, has_values: bool
) -> Manifest:
    """An add-on's Helm chart at its pinned version, with the values file of this repository."""
    cluster = view.cluster
    values = values_path(cluster, chart)
    version = chart_version(chart, cluster.addons[chart.addon].version)
    if chart is GPU_OPERATOR:
        source = gpu_operator.application_source(view, VALUES_REF)
        assert source is not None  # installed_charts lists it only with the add-on
    elif chart.path:
        source = {"repoURL": chart.repository, "path": chart.path, "targetRevision": version}
        if chart.images and cluster.addons[chart.addon].version:
            images = [image.format(version=version) for image in chart.images]
            source["kustomize"] = {"images": images}
    else:
        source = {
            "repoURL": chart.repository,
            "chart": chart.chart,
            "targetRevision": version,
            "helm": {"releaseName": chart.release},
        }
        if has_values:
            source["helm"]["valueFiles"] = [f"${VALUES_REF}/{values}"]
    options = ["CreateNamespace=true"]
    if chart.server_side_apply:
        options.append("ServerSideApply=true")
    if chart.ignore_differences:
        options.append("RespectIgnoreDifferences=true")
    extra: dict[str, Any] = {}
    if chart.privileged:
        extra["managedNamespaceMetadata"] = {
            "labels": {"pod-security.kubernetes.io/enforce": "privileged"}
        }
    values_source = {
        "repoURL": repository.repo_url,
        "targetRevision": repository.target_revision,
        "ref": VALUES_REF,
    }
    spec: dict[str, Any] = {
        "project": cluster.argocd_project,
        "sources": [source, values_source] if has_values else [source],
        "destination": {"server": cluster.argocd_destination, "namespace": chart.namespace},
        "syncPolicy": _sync_policy(*options, **extra),
    }
    if chart.ignore_differences:
        spec["ignoreDifferences"] = copy.deepcopy(list(chart.ignore_differences))
    # absolute: relative paths resolve against each source's path, and the values source has none
    generate_paths = f"/{values}" if has_values else "."
    return _application(
        cluster, repository, f"{cluster.name}-{chart.release}", ADDON_WAVE, generate_paths, spec
    )


# --- AppProjects ------------------------------------------------------------------------------


def _projects(
    view: ClusterView, repository: Repository, charts: tuple[Chart, ...]
) -> Iterator[Manifest]:
    cluster = view.cluster
    namespace = repository.argocd_namespace
    at = cluster.origin.location

    def project(name: str, spec: dict[str, Any], **labels: str) -> dict[str, Any]:
        meta = metadata(name, namespace, cluster=cluster.name, **labels)
        meta["annotations"] = {SYNC_WAVE: str(PROJECT_WAVE)}
        return {"apiVersion": API_VERSION, "kind": "AppProject", "metadata": meta, "spec": spec}

    if cluster.argocd_destination == IN_CLUSTER and cluster.argocd_project != DEFAULT_PROJECT:
        # Argo CD runs in this cluster, so its `default` project is this cluster's to lock; a
        # cluster deployed from elsewhere leaves it to the cluster Argo CD runs in
        yield Manifest(
            LAYER,
            project(
                DEFAULT_PROJECT,
                {
                    "description": "Locked down by gpuplane: every Application names its project",
                    "sourceRepos": [],
                    "destinations": [],
                    "clusterResourceWhitelist": [],
                    "namespaceResourceBlacklist": [{"group": "*", "kind": "*"}],
                },
            ),
            at,
        )
    destinations = [{"server": cluster.argocd_destination, "namespace": "*"}]
    if cluster.argocd_destination != IN_CLUSTER:  # Argo CD runs elsewhere: its own objects
        destinations.append({"server": IN_CLUSTER, "namespace": namespace})
    yield Manifest(
        LAYER,
        project(
            cluster.argocd_project,
            {
                "description": f"Platform of cluster {cluster.name}: its add-ons, its layers "
                "and the Argo CD objects that deploy them",
                # one entry per repository: Argo CD's API refuses a project that lists one twice
                "sourceRepos": list(
                    dict.fromkeys([repository.repo_url, *(chart.repository for chart in charts)])
                ),
                "destinations": destinations,
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        ),
        at,
    )
    for tenant in view.tenants:
        team = tenant.team
        yield Manifest(
            LAYER,
            project(
                team_project(team.name, cluster.name),
                _team_project_spec(cluster, repository, tenant),
                team=team.name,
                cost_center=team.cost_center,
            ),
            team.origin.location,
        )


def team_project(team: str, cluster: str) -> str:
    """`team-<team>-<cluster>`: one Argo CD may manage several clusters, and a team's project on
    each must not collide with its project on another."""
    return f"team-{team}-{cluster}"


def csv_field(value: str) -> str:
    """One field of an Argo CD RBAC line, read back as exactly `value`.

    Argo CD splits the policy text on newlines, trims each line, and reads it with Go's
    encoding/csv (`TrimLeadingSpace`, no lazy quotes: util/rbac `loadPolicyLine`); a project
    role's `groups` are written into `g, <group>, proj:<project>:<role>` lines unquoted, and a
    group with a comma is accepted only in double quotes, never with a quote, newline or tab in
    it (`validateGroupName`). So a field with a comma is quoted, and one that could end the line,
    open a quote, carry an invisible character or lose its edges to trimming is refused: a
    ValueError, as policy rules refuse such names first (a line that widens access is never
    written)."""
    if not value or value != value.strip() or '"' in value or not value.isprintable():
        raise ValueError(f"not an Argo CD RBAC field: {value!r}")
    return f'"{value}"' if "," in value else value


def policy_line(*fields: str) -> str:
    """`p, <subject>, <resource>, <action>, <object>, <effect>`: each field through `csv_field`."""
    return ", ".join(csv_field(f) for f in fields)


def _team_project_spec(cluster: Cluster, repository: Repository, tenant: Tenant) -> dict[str, Any]:
    """The team's namespaces on this cluster, this repository, no cluster-scoped kinds, no
    guardrail kinds; roles that let the team's IdP groups run their own Applications in it."""
    team = tenant.team
    name = team_project(team.name, cluster.name)
    spec: dict[str, Any] = {
        "description": team.description or f"Team '{team.name}'",
        "sourceRepos": [repository.repo_url],
        "destinations": [
            {"server": cluster.argocd_destination, "namespace": ns.name} for ns in tenant.namespaces
        ],
        "clusterResourceWhitelist": [],
        "namespaceResourceBlacklist": [dict(kind) for kind in GUARDRAILS],
    }
    roles = []
    for role, groups, actions in (
        ("owners", team.owners, ("*",)),
        ("members", team.members, ("get", "sync")),
        ("viewers", team.viewers, ("get",)),
    ):
        if groups:
            roles.append(
                {
                    "name": role,
                    "description": f"Team '{team.name}' {role}",
                    "policies": [
                        policy_line(
                            "p", f"proj:{name}:{role}", "applications", action, f"{name}/*", "allow"
                        )
                        for action in actions
                    ],
                    "groups": [csv_field(group) for group in groups],
                }
            )
    if roles:
        spec["roles"] = roles
    return spec
