"""The Argo CD wiring: golden trees, the AppProject guardrails evaluated the way Argo CD does, the
sync waves, and no dangling path or version in any Application."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.gitops import argocd as gitops
from renderer.output.writer import OUTPUT_DIR, build_tree
from renderer.pipeline import LAYERS, Rendered
from tests.conftest import REPO, copy_inputs, render_case, render_clean, render_inputs, tree

CASES = Path(__file__).parent / "cases" / "render"
GITOPS = CASES / "gitops"
MINIMAL = CASES / "minimal"
VOLCANO = CASES / "volcano"


@pytest.fixture(scope="module")
def example() -> Rendered:
    return render_clean(REPO)


def argo_objects(rendered: Rendered, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(cluster, body) of every rendered object of an Argo CD kind."""
    for cluster in sorted(rendered.manifests):
        for manifest in rendered.manifests[cluster]:
            if manifest.layer == gitops.LAYER and manifest.kind == kind:
                yield cluster, dict(manifest.body)


def projects(rendered: Rendered, cluster: str) -> dict[str, dict[str, Any]]:
    return {
        body["metadata"]["name"]: body
        for c, body in argo_objects(rendered, "AppProject")
        if c == cluster
    }


def applications(rendered: Rendered, cluster: str) -> dict[str, dict[str, Any]]:
    return {
        body["metadata"]["name"]: body
        for c, body in argo_objects(rendered, "Application")
        if c == cluster
    }


# --- Argo CD's rules, as documented, for the tests ------------------------------------------


def _listed(items: list[dict[str, str]], group: str, kind: str) -> bool:
    """Argo CD's isResourceInList: kind, then group, each a glob (Go's filepath.Match)."""
    return any(fnmatchcase(kind, i["kind"]) and fnmatchcase(group, i["group"]) for i in items)


def permits(
    project: dict[str, Any], group: str, kind: str, namespace: str | None, server: str
) -> bool:
    """Whether an Application of `project` may sync this object to `server` (Argo CD's
    IsGroupKindPermitted and IsDestinationPermitted). `namespace=None` is a cluster-scoped kind:
    it must match a non-empty clusterResourceWhitelist and no clusterResourceBlacklist entry. A
    namespaced kind passes when the namespaceResourceWhitelist is absent or empty or lists it,
    and no namespaceResourceBlacklist entry matches; and its namespace must be a destination."""
    spec = project["spec"]
    destinations = spec.get("destinations") or []
    if namespace is None:
        whitelist = spec.get("clusterResourceWhitelist") or []
        return (
            bool(whitelist)
            and _listed(whitelist, group, kind)
            and not _listed(spec.get("clusterResourceBlacklist") or [], group, kind)
            and any(fnmatchcase(server, d["server"]) for d in destinations)
        )
    whitelist = spec.get("namespaceResourceWhitelist") or []
    allowed = (not whitelist or _listed(whitelist, group, kind)) and not _listed(
        spec.get("namespaceResourceBlacklist") or [], group, kind
    )
    return allowed and any(
        fnmatchcase(server, d["server"]) and fnmatchcase(namespace, d["namespace"])
        for d in destinations
    )


def sources_permitted(project: dict[str, Any], application: dict[str, Any]) -> bool:
    repos = project["spec"].get("sourceRepos") or []
    spec = application["spec"]
    sources = spec.get("sources") or [spec["source"]]
    return all(any(fnmatchcase(s["repoURL"], r) for r in repos) for s in sources)


def destination_permitted(project: dict[str, Any], application: dict[str, Any]) -> bool:
    dest = application["spec"]["destination"]
    return any(
        fnmatchcase(dest["server"], d["server"])
        and fnmatchcase(dest.get("namespace", ""), d["namespace"])
        for d in project["spec"].get("destinations") or []
    )


def argo_glob(pattern: str, path: str) -> bool:
    """gobwas/glob without separators, as Argo CD's directory include/exclude use it: `*` crosses
    `/`, `{a,b}` is an alternative; nothing else appears in gpuplane's patterns."""
    regex = ""
    for token in re.split(r"([{}*,])", pattern):
        regex += {"{": "(?:", "}": ")", "*": ".*", ",": "|"}.get(token, re.escape(token))
    return re.fullmatch(regex, path) is not None


CLUSTER_SCOPED = (
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("", "Namespace"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "ResourceFlavor"),
)
GUARDED = (
    ("", "ResourceQuota"),
    ("", "LimitRange"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("cilium.io", "CiliumNetworkPolicy"),
    ("crd.projectcalico.org", "NetworkPolicy"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "Role"),
    ("kueue.x-k8s.io", "LocalQueue"),
    ("argoproj.io", "Application"),
    ("argoproj.io", "AppProject"),
)
WORKLOADS = (
    ("apps", "Deployment"),
    ("batch", "Job"),
    ("", "ConfigMap"),
    ("", "Service"),
    ("jobset.x-k8s.io", "JobSet"),
    ("argoproj.io", "Workflow"),
)


# --- golden ----------------------------------------------------------------------------------


def test_gitops_case_renders_the_reviewed_tree(
    tmp_path: Path, crds: Path, update_golden: bool
) -> None:
    actual = render_case(GITOPS, tmp_path, crds, update_golden=update_golden)
    # the same inputs without gpuplane.yaml render the minimal tree: the layer only adds
    # (the workflows layer reads gpuplane.yaml too: step 7 clones the repository it names)
    minimal = tree(render_inputs(MINIMAL, tmp_path / "minimal", crds))

    def unaffected(p: str) -> bool:
        # the layer's own folders; the values of the charts it installs (the Network Operator's);
        # the README, whose add-on table says how each is installed: by Argo CD here, by hand there
        return not p.startswith(("lab/gitops/", "lab/workflows/")) and p not in (
            "lab/values/network-operator.yaml",
            "lab/README.md",
        )

    assert {p: b for p, b in actual.items() if unaffected(p)} | {
        "lab/kustomization.yaml": minimal["lab/kustomization.yaml"]
    } == {p: b for p, b in minimal.items() if unaffected(p)}


def test_no_gitops_output_without_repository_settings() -> None:
    rendered = render_clean(MINIMAL)
    assert rendered.platform.repository is None
    assert not [m for ms in rendered.manifests.values() for m in ms if m.layer == gitops.LAYER]
    assert not [v for vs in rendered.values.values() for v in vs if v.layer == gitops.LAYER]


# --- guardrails ------------------------------------------------------------------------------


def test_team_projects_fence_teams_into_their_namespaces(example: Rendered) -> None:
    repository = example.platform.repository
    assert repository is not None
    checked = 0
    for cluster_name, cluster in sorted(example.platform.clusters.items()):
        found = projects(example, cluster_name)
        server = cluster.argocd_destination
        team_namespaces = {
            team.name: [ns.name for ns in team.namespaces if ns.cluster == cluster_name]
            for team in example.platform.teams.values()
        }
        for team, own in sorted(team_namespaces.items()):
            if not own:
                assert gitops.team_project(team, cluster_name) not in found
                continue
            project = found[gitops.team_project(team, cluster_name)]
            assert project["spec"]["sourceRepos"] == [repository.repo_url]
            for group, kind in CLUSTER_SCOPED:
                assert not permits(project, group, kind, None, server), (team, kind)
            others = [ns for t, names in team_namespaces.items() if t != team for ns in names]
            for namespace in own:
                for group, kind in GUARDED:
                    assert not permits(project, group, kind, namespace, server), (team, kind)
                for group, kind in WORKLOADS:
                    assert permits(project, group, kind, namespace, server), (team, kind)
                    assert not permits(project, group, kind, namespace, "https://elsewhere")
            for namespace in [*others, "kube-system", "argocd", "gpu-operator", "default"]:
                for group, kind in WORKLOADS:
                    assert not permits(project, group, kind, namespace, server), (team, namespace)
            checked += 1
    assert checked == len(list(argo_objects(example, "AppProject"))) - 3  # default, 2 platform


def test_every_guardrail_the_platform_renders_into_a_team_namespace_is_denied_to_the_team(
    example: Rendered,
) -> None:
    """The tenancy objects in a team namespace, and its LocalQueues, are the platform's fences."""
    denied = 0
    for cluster_name, manifests in sorted(example.manifests.items()):
        found = projects(example, cluster_name)
        server = example.platform.clusters[cluster_name].argocd_destination
        owner = {
            ns.name: team.name
            for team in example.platform.teams.values()
            for ns in team.namespaces
            if ns.cluster == cluster_name
        }
        for manifest in manifests:
            fence = manifest.layer == "tenancy" or manifest.kind == "LocalQueue"
            if not fence or manifest.namespace not in owner:
                continue
            group = manifest.body["apiVersion"].rpartition("/")[0]
            project = found[gitops.team_project(owner[manifest.namespace], cluster_name)]
            assert not permits(project, group, manifest.kind, manifest.namespace, server), (
                manifest.path
            )
            denied += 1
    assert denied > 100


def test_the_default_project_permits_nothing(example: Rendered) -> None:
    default = projects(example, "prod-east")[gitops.DEFAULT_PROJECT]
    assert default["spec"]["sourceRepos"] == []
    assert default["spec"]["destinations"] == []
    for server in ("https://kubernetes.default.svc", "*"):
        for group, kind in CLUSTER_SCOPED:
            assert not permits(default, group, kind, None, server)
        for group, kind in (*GUARDED, *WORKLOADS):
            for namespace in ("default", "vision-train", "argocd"):
                assert not permits(default, group, kind, namespace, server)
    # even with a destination, its blacklist denies every namespaced kind
    opened = {"spec": {**default["spec"], "destinations": [{"server": "*", "namespace": "*"}]}}
    for group, kind in WORKLOADS:
        assert not permits(opened, group, kind, "default", "https://kubernetes.default.svc")


def test_the_default_project_is_locked_where_argo_cd_runs(example: Rendered) -> None:
    """prod-east deploys to itself (Argo CD runs there); staging-west is deployed from elsewhere,
    and locking `default` twice in one Argo CD would make two root Applications fight over it."""
    assert gitops.DEFAULT_PROJECT in projects(example, "prod-east")
    assert gitops.DEFAULT_PROJECT not in projects(example, "staging-west")


def test_platform_projects_hold_the_cluster_scoped_objects(example: Rendered) -> None:
    for name, cluster in sorted(example.platform.clusters.items()):
        platform = projects(example, name)[cluster.argocd_project]
        for group, kind in CLUSTER_SCOPED:
            assert permits(platform, group, kind, None, cluster.argocd_destination)
        assert not permits(platform, "apps", "Deployment", "x", "https://elsewhere.example")


def test_every_application_is_permitted_by_its_own_project(example: Rendered) -> None:
    """A project must allow its Applications' sources and destination, or nothing syncs."""
    for cluster in sorted(example.platform.clusters):
        found = projects(example, cluster)
        for name, app in applications(example, cluster).items():
            project = found[app["spec"]["project"]]
            assert sources_permitted(project, app), name
            assert destination_permitted(project, app), name


# --- Applications ----------------------------------------------------------------------------


def test_sync_waves_order_operators_then_tenancy_then_platform_objects(example: Rendered) -> None:
    for cluster in sorted(example.platform.clusters):
        apps = applications(example, cluster)
        wave = {
            name.removeprefix(f"{cluster}-"): int(app["metadata"]["annotations"][gitops.SYNC_WAVE])
            for name, app in apps.items()
            if gitops.SYNC_WAVE in app["metadata"]["annotations"]
        }
        declared = example.platform.clusters[cluster]
        addons = tuple(chart.release for chart in gitops.installed_charts(declared))
        assert {"gpu-operator", "kueue", "argo-workflows", "kube-prometheus-stack"} <= set(addons)
        layers = {"security", "tenancy", "queueing", "gpu", "observability", "workflows"}
        if "trainer" in declared.addons:  # the Kubeflow Trainer runtimes, after Trainer itself
            layers.add("training")
            assert wave["kubeflow-trainer"] < wave["training"] < wave["workflows"]
        if any(
            ns.endpoints
            for t in example.platform.teams.values()
            for ns in t.namespaces
            if ns.cluster == cluster
        ):  # the serving layer: once namespaces and queues exist
            layers.add("serving")
            assert wave["queueing"] < wave["serving"] < wave["workflows"]
        assert set(wave) == {*addons, *layers}
        operators = max(wave[a] for a in addons)
        assert operators < wave["security"] < wave["tenancy"] < wave["queueing"]
        assert wave["tenancy"] < wave["gpu"]
        assert max(wave["queueing"], wave["gpu"]) < wave["workflows"]
        # the rules and dashboards read what the add-ons and queues export; the suites' runs
        # should already be watched by them
        assert max(wave["queueing"], wave["gpu"]) < wave["observability"] < wave["workflows"]
        for project in projects(example, cluster).values():
            assert int(project["metadata"]["annotations"][gitops.SYNC_WAVE]) < operators


def test_every_layer_has_its_wave() -> None:
    # the templates layer writes only files nothing applies (no Application, no wave)
    named = [name for name, _ in LAYERS if name not in (gitops.LAYER, "templates")]
    assert set(named) <= set(gitops.LAYER_WAVES)
    others = [n for n in named if n != "workflows"]
    assert gitops.LAYER_WAVES["workflows"] > max(gitops.LAYER_WAVES[n] for n in others)


def test_every_application_syncs_itself_and_points_at_something_real(example: Rendered) -> None:
    files = build_tree(example.manifests, example.readmes, example.values)

    def exists(path: str, folder: bool) -> bool:
        assert path.startswith(f"{OUTPUT_DIR}/"), path
        relative = path.removeprefix(f"{OUTPUT_DIR}/")
        return any(f.startswith(f"{relative}/") for f in files) if folder else relative in files

    repository = example.platform.repository
    assert repository is not None
    for cluster in sorted(example.platform.clusters):
        apps = applications(example, cluster)
        assert f"{cluster}-root" in apps
        for name, app in apps.items():
            spec = app["spec"]
            assert app["metadata"]["namespace"] == repository.argocd_namespace
            policy = spec["syncPolicy"]
            assert policy["automated"] == {"prune": True, "selfHeal": True}, name
            hooks = [
                m
                for m in example.manifests[cluster]
                if f"{cluster}-{m.layer}" == name
                and "argocd.argoproj.io/hook" in m.body["metadata"].get("annotations", {})
            ]
            if hooks:  # a retry would delete the failed hook's Workflow and run it again
                assert "retry" not in policy, name
            else:
                assert policy["retry"]["limit"] == 5
                assert policy["retry"]["backoff"] == {
                    "duration": "10s",
                    "factor": 2,
                    "maxDuration": "3m",
                }
            paths = app["metadata"]["annotations"][gitops.GENERATE_PATHS]
            if "source" in spec:  # a plain directory of this repository
                source = spec["source"]
                assert source["repoURL"] == repository.repo_url
                assert source["directory"] == gitops.DIRECTORY
                assert exists(source["path"], folder=True), name
                assert paths == "."
            elif len(spec["sources"]) == 1:  # a chart on its defaults: no values file to read
                (chart,) = spec["sources"]
                assert "valueFiles" not in chart["helm"], name
                assert paths == "."
                assert "CreateNamespace=true" in policy["syncOptions"]
            else:  # a chart, with its values from this repository
                chart, values = spec["sources"]
                assert values == {
                    "repoURL": repository.repo_url,
                    "targetRevision": repository.target_revision,
                    "ref": "values",
                }
                (value_file,) = chart["helm"]["valueFiles"]
                assert value_file.startswith("$values/")
                assert exists(value_file.removeprefix("$values/"), folder=False), name
                assert paths == "/" + value_file.removeprefix("$values/")
                assert "CreateNamespace=true" in policy["syncOptions"]


def test_addon_charts_are_pinned_to_the_cluster_files_versions(example: Rendered) -> None:
    checked = 0
    for name, cluster in sorted(example.platform.clusters.items()):
        apps = applications(example, name)
        expected = {
            "gpu-operator": ("https://helm.ngc.nvidia.com/nvidia", "gpuOperator", ""),
            "kueue": ("registry.k8s.io/kueue/charts", "kueue", "v"),
            "argo-workflows": ("https://argoproj.github.io/argo-helm", "argoWorkflows", ""),
            "kube-prometheus-stack": (
                "https://prometheus-community.github.io/helm-charts",
                "prometheusStack",
                "",
            ),
        }
        for release, (repo, addon, dropped) in expected.items():
            chart = apps[f"{name}-{release}"]["spec"]["sources"][0]
            version = cluster.addons[addon].version
            assert version is not None
            assert chart["repoURL"] == repo
            assert chart["chart"] == release
            assert chart["targetRevision"] == version.removeprefix(dropped)
            assert chart["helm"]["releaseName"] == release
            checked += 1
    assert checked == 8


def test_volcano_clusters_install_volcano_instead_of_kueue(tmp_path: Path) -> None:
    root = copy_inputs(VOLCANO, tmp_path / "repo")
    shutil.copy(GITOPS / "gpuplane.yaml", root / "gpuplane.yaml")
    rendered = render_clean(root)
    apps = applications(rendered, "lab")
    assert "lab-kueue" not in apps
    chart, _ = apps["lab-volcano"]["spec"]["sources"]
    assert chart == {
        "repoURL": "https://volcano-sh.github.io/helm-charts",
        "chart": "volcano",
        "targetRevision": "1.15.1",
        "helm": {
            "releaseName": "volcano",
            "valueFiles": ["$values/rendered/lab/values/volcano.yaml"],
        },
    }
    assert apps["lab-volcano"]["spec"]["destination"]["namespace"] == "volcano-system"
    repos = projects(rendered, "lab")["platform"]["spec"]["sourceRepos"]
    assert "https://volcano-sh.github.io/helm-charts" in repos
    assert gitops.KUEUE.repository not in repos


def test_argo_workflows_is_installed_before_the_suites_it_runs(example: Rendered) -> None:
    """The chart's Application syncs in the add-on wave, before the workflows layer whose
    Workflow kinds its CRDs bring; its controller watches the suites' namespace, and the chart
    adds no ServiceAccount or RBAC of its own beside the ones the suites run as."""
    for name in sorted(example.platform.clusters):
        apps = applications(example, name)
        addon = apps[f"{name}-argo-workflows"]
        layer = apps[f"{name}-workflows"]
        wave = gitops.SYNC_WAVE
        assert int(addon["metadata"]["annotations"][wave]) < int(
            layer["metadata"]["annotations"][wave]
        )
        assert addon["spec"]["destination"]["namespace"] == "argo"
        assert "ServerSideApply=true" in addon["spec"]["syncPolicy"]["syncOptions"]
        (values,) = (dict(v.body) for v in example.values[name] if v.chart == "argo-workflows")
        namespaces = {
            m.body["metadata"]["namespace"]
            for m in example.manifests[name]
            if m.layer == "workflows" and m.body["apiVersion"].startswith("argoproj.io/")
        }
        assert values["controller"]["workflowNamespaces"] == sorted(namespaces)
        accounts = {
            m.body["metadata"]["name"]
            for m in example.manifests[name]
            if m.layer == "workflows" and m.kind == "ServiceAccount"
        }
        runs_as = {
            m.body["spec"].get("serviceAccountName")
            or m.body["spec"].get("workflowSpec", {}).get("serviceAccountName")
            for m in example.manifests[name]
            if m.layer == "workflows" and m.kind in ("WorkflowTemplate", "Workflow", "CronWorkflow")
        }
        assert runs_as == accounts
        assert values["workflow"] == {
            "serviceAccount": {"create": False},
            "rbac": {"create": False},
        }
        assert values["crds"] == {"install": True, "keep": True}
        # the cluster runs the Prometheus Operator, so the controller's metrics are scraped
        assert values["controller"]["serviceMonitor"] == {"enabled": True}


def test_an_argo_workflows_the_cluster_already_runs_is_not_installed_again(
    tmp_path: Path,
) -> None:
    root = copy_inputs(GITOPS, tmp_path / "repo")
    cluster = root / "clusters" / "lab.yaml"
    text = cluster.read_text()
    assert "argoWorkflows: {version: 2.0.4}" in text
    cluster.write_text(
        text.replace("argoWorkflows: {version: 2.0.4}", "argoWorkflows: {enabled: false}")
    )
    rendered = render_clean(root)
    assert "lab-argo-workflows" not in applications(rendered, "lab")
    assert "lab-workflows" in applications(rendered, "lab")  # the suites are rendered either way
    assert not any(v.chart == "argo-workflows" for v in rendered.values["lab"])
    assert any(v.chart == "kueue" for v in rendered.values["lab"])


def test_the_gpu_operator_namespace_admits_privileged_pods(example: Rendered) -> None:
    app = applications(example, "prod-east")["prod-east-gpu-operator"]
    policy = app["spec"]["syncPolicy"]
    assert app["spec"]["destination"]["namespace"] == "gpu-operator"
    assert policy["managedNamespaceMetadata"]["labels"] == {
        "pod-security.kubernetes.io/enforce": "privileged"
    }


def test_the_root_application_deploys_argo_cd_objects_where_argo_cd_runs(
    example: Rendered,
) -> None:
    for name in sorted(example.platform.clusters):
        root = applications(example, name)[f"{name}-root"]
        assert root["spec"]["destination"] == {
            "server": gitops.IN_CLUSTER,
            "namespace": "argocd",
        }
        assert root["spec"]["source"]["path"] == f"rendered/{name}/gitops"
        assert gitops.SYNC_WAVE not in root["metadata"]["annotations"]


def test_prometheus_selects_gpuplanes_monitors(example: Rendered) -> None:
    (values,) = [v for v in example.values["prod-east"] if v.chart == "kube-prometheus-stack"]
    assert values.path == "values/kube-prometheus-stack.yaml"
    spec = values.body["prometheus"]["prometheusSpec"]
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        ("kustomization.yaml", True),
        ("argocd/kustomization.yaml", True),
        ("vision-train/sub/kustomization.yaml", True),
        ("configmap-kustomization.yaml", False),
        ("vision-train/configmap-kustomization.yaml", False),
        ("vision-train/resourcequota-gpuplane.yaml", False),
    ],
)
def test_directory_exclude_skips_exactly_the_kustomizations(path: str, excluded: bool) -> None:
    assert argo_glob(str(gitops.DIRECTORY["exclude"]), path) is excluded


def test_committed_gitops_files_are_argo_cd_objects() -> None:
    """What the root Application reads: nothing but Applications and AppProjects."""
    for cluster in sorted(p.name for p in (REPO / OUTPUT_DIR).iterdir() if p.is_dir()):
        folder = REPO / OUTPUT_DIR / cluster / gitops.LAYER
        bodies = [
            yaml.safe_load(p.read_text())
            for p in sorted(folder.rglob("*.yaml"))
            if not argo_glob(str(gitops.DIRECTORY["exclude"]), p.relative_to(folder).as_posix())
        ]
        assert bodies
        assert {(b["apiVersion"], b["kind"]) for b in bodies} == {
            (gitops.API_VERSION, "Application"),
            (gitops.API_VERSION, "AppProject"),
        }
