"""Every value gpuplane writes into an add-on chart is read by the chart, and changes a default.

For each Argo CD Application of the example platform and of the render cases that installs a
Helm chart with a values file (`rendered/<cluster>/values/<chart>.yaml`), each leaf of that file
is checked against the chart's values tree at the version the Application pins,
`../shared/charts/<chart>-<version>/` (SOURCES.md there: `reads.txt` is every `.Values` path the
chart's templates read, `values.yaml` the chart's defaults with its subcharts' merged in):

- a written path must be read: equal to a read path, or under one where a template takes the
  whole subtree (`toYaml .Values.x`); or be a Chart.yaml dependency `condition`, which Helm
  itself reads (`DEPENDENCY_CONDITIONS`). A list is one leaf: Helm reads lists whole.
- a written value must differ from the chart's default: gpuplane writes a value only to change
  it (`KNOWN_AT_DEFAULT` lists the ones that do not yet, reported, each still true).

A chart version that has no folder is checked against the highest stored version of the same
chart (`FALLBACKS` names each such case; its defaults are not the pinned version's, so the
default check is skipped there). The render cases have no repository settings except `gitops`,
so each is rendered with that case's `gpuplane.yaml`, for its Applications.

Below, the values of the operators gpuplane configures are checked against what their charts and
programs do with them, written from the upstream sources at the pinned tags (each named).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from renderer.cli import main
from tests.conftest import REPO, copy_inputs, edit_once

CHARTS = REPO.parent / "shared" / "charts"
CASES = REPO / "tests" / "cases" / "render"
GITOPS_SETTINGS = CASES / "gitops" / "gpuplane.yaml"
PLATFORMS = {"example": REPO} | {case.name: case for case in sorted(CASES.iterdir())}

needs_charts = pytest.mark.skipif(
    not CHARTS.is_dir(), reason="../shared/charts is not beside this checkout"
)

DEPENDENCY_CONDITIONS: dict[str, frozenset[str]] = {
    # kubeflow/trainer v2.3.0 charts/kubeflow-trainer/Chart.yaml: jobset (`jobset.install`),
    # lws (`dataCache.enabled,dataCache.lws.install`)
    "kubeflow-trainer": frozenset({"jobset.install", "dataCache.enabled", "dataCache.lws.install"}),
    # Mellanox/network-operator v26.4.1 deployment/network-operator/Chart.yaml
    "network-operator": frozenset(
        {"nfd.enabled", "sriovNetworkOperator.enabled", "maintenanceOperator.enabled"}
    ),
    # NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/Chart.yaml
    "gpu-operator": frozenset({"nfd.enabled"}),
    # prometheus-community/helm-charts kube-prometheus-stack-79.6.1 Chart.yaml
    "kube-prometheus-stack": frozenset(
        {
            "crds.enabled",
            "kubeStateMetrics.enabled",
            "nodeExporter.enabled",
            "grafana.enabled",
            "windowsMonitoring.enabled",
        }
    ),
}
"""Values Helm reads itself, not the templates: a subchart's `condition` in the parent's
Chart.yaml `dependencies` (not in reads.txt, which holds template reads only)."""

FALLBACKS = {("argo-workflows", "2.0.4"): "argo-workflows-1.0.18"}
"""(chart, pinned version) checked against another stored version: SOURCES.md says the newest
argo-workflows chart in the upstream snapshot is 1.0.18; 2.0.4 is not stored."""

KNOWN_AT_DEFAULT: dict[str, frozenset[str]] = {
    # renderer/layers/gpu/operator.py `helm_values` spells out every component's switch, and
    # the sharing layer an empty `devicePlugin.config.default` and mig-parted's `all-disabled`.
    # Reported to the lead (not this change's layer); listed so that no new one creeps in.
    "gpu-operator": frozenset(
        {
            "driver.enabled",
            "toolkit.enabled",
            "devicePlugin.enabled",
            "devicePlugin.config.default",
            "dcgm.enabled",
            "dcgmExporter.enabled",
            "gfd.enabled",
            "migManager.enabled",
            "migManager.config.default",
            "nodeStatusExporter.enabled",
            "mig.strategy",
        }
    ),
}
"""Values written although they equal the pinned chart's default (findings, not intent)."""


# --- rendering --------------------------------------------------------------------------------


def render(source: Path, target: Path, edit: Callable[[Path], None] | None = None) -> Path:
    """The platform's inputs copied to `target` (with repository settings, so the GitOps layer
    renders), edited, and rendered with the CLI; returns the repository root."""
    root = copy_inputs(source, target)
    if not (root / "gpuplane.yaml").is_file():
        shutil.copy(GITOPS_SETTINGS, root / "gpuplane.yaml")
    if edit is not None:
        edit(root)
    result = CliRunner(env={"GPUPLANE_CRDS": ""}).invoke(main, ["-C", str(root), "render"])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture(scope="module")
def platforms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {
        name: render(source, tmp_path_factory.mktemp(name) / "repo")
        for name, source in PLATFORMS.items()
    }


@dataclass(frozen=True)
class ChartValues:
    """One values file an Application hands to a chart."""

    platform: str
    cluster: str
    chart: str
    version: str
    release: str
    namespace: str
    file: Path
    body: Any


def chart_values(name: str, root: Path) -> Iterator[ChartValues]:
    for app in sorted((root / "rendered").glob("*/gitops/argocd/application-*.yaml")):
        spec = yaml.safe_load(app.read_text())["spec"]
        for source in spec.get("sources") or [spec["source"]]:
            if "chart" not in source:
                continue
            for value_file in source.get("helm", {}).get("valueFiles", []):
                path = root / value_file.removeprefix("$values/")
                assert path.is_file(), f"{app.name} names {value_file}, which is not rendered"
                yield ChartValues(
                    name,
                    app.parts[-4],
                    source["chart"],
                    source["targetRevision"],
                    source["helm"]["releaseName"],
                    spec["destination"]["namespace"],
                    path,
                    yaml.safe_load(path.read_text()),
                )


@pytest.fixture(scope="module")
def every_values(platforms: dict[str, Path]) -> list[ChartValues]:
    found = [v for name, root in platforms.items() for v in chart_values(name, root)]
    assert {v.chart for v in found} >= {
        "gpu-operator",
        "kueue",
        "kube-prometheus-stack",
        "argo-workflows",
        "kubeflow-trainer",
        "network-operator",
        "nvidia-dra-driver-gpu",
        "opencost",
    }
    return found


# --- the charts' values trees ------------------------------------------------------------------


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def chart_folder(chart: str, version: str) -> tuple[Path, bool]:
    """The stored values tree of the chart at `version` (with or without a leading `v`), else
    the highest stored version of the same chart; True when it is that fallback."""
    for name in (f"{chart}-{version}", f"{chart}-v{version.removeprefix('v')}"):
        if (CHARTS / name).is_dir():
            return CHARTS / name, False
    pattern = re.compile(re.escape(chart) + r"-(v?\d[0-9A-Za-z.+-]*)")
    stored = [
        (match.group(1), folder)
        for folder in CHARTS.iterdir()
        if (match := pattern.fullmatch(folder.name))
    ]
    assert stored, f"no values tree of chart {chart} in {CHARTS}"
    return max(stored, key=lambda item: _version_key(item[0]))[1], True


def reads(folder: Path) -> set[tuple[str, ...]]:
    return {tuple(line.split(".")) for line in (folder / "reads.txt").read_text().split()}


def leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each path to a value that is not a non-empty mapping: Helm addresses lists whole."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, str(key)))
    else:
        yield path, value


MISSING = object()


def lookup(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return MISSING
        tree = tree[key]
    return tree


def merged(defaults: Any, values: Any) -> Any:
    """Helm's coalescing of a values file over the chart's: maps merge, anything else replaces."""
    if isinstance(defaults, dict) and isinstance(values, dict):
        return {
            key: merged(defaults.get(key, MISSING), values[key])
            if key in values and key in defaults
            else values.get(key, defaults.get(key))
            for key in {**defaults, **values}
        }
    return values


def is_read(path: tuple[str, ...], read: set[tuple[str, ...]], chart: str) -> bool:
    if ".".join(path) in DEPENDENCY_CONDITIONS.get(chart, ()):
        return True
    return any(path[: len(r)] == r for r in read)


# --- every chart, every value ------------------------------------------------------------------


@needs_charts
def test_every_written_value_is_one_the_chart_reads(every_values: list[ChartValues]) -> None:
    unread = []
    for values in every_values:
        folder, _ = chart_folder(values.chart, values.version)
        read = reads(folder)
        for path, _ in leaves(values.body):
            if not is_read(path, read, values.chart):
                unread.append(f"{values.platform}: {values.file.name} {'.'.join(path)}")
    assert not unread, f"no template of the chart reads: {unread}"


@needs_charts
def test_every_written_value_changes_the_charts_default(every_values: list[ChartValues]) -> None:
    at_default = set()
    for values in every_values:
        folder, fallback = chart_folder(values.chart, values.version)
        if fallback:
            continue  # the pinned version's defaults are not stored (FALLBACKS)
        defaults = yaml.safe_load((folder / "values.yaml").read_text())
        for path, value in leaves(values.body):
            if lookup(defaults, path) == value:
                at_default.add((values.chart, ".".join(path)))
    known = {(chart, path) for chart, paths in KNOWN_AT_DEFAULT.items() for path in paths}
    assert at_default - known == set(), "written, but the chart's default already"
    assert known - at_default == set(), "KNOWN_AT_DEFAULT lists values no longer at default"


@needs_charts
def test_charts_checked_against_another_version_are_named(every_values: list[ChartValues]) -> None:
    used = {}
    for values in every_values:
        folder, fallback = chart_folder(values.chart, values.version)
        if fallback:
            used[(values.chart, values.version)] = folder.name
    assert used == FALLBACKS


@needs_charts
def test_the_read_check_can_fail() -> None:
    folder, _ = chart_folder("opencost", "2.5.17")
    read = reads(folder)
    assert is_read(("opencost", "exporter", "extraEnv", "CSV_PATH"), read, "opencost")
    assert not is_read(("opencost", "exporter", "extraEnvs"), read, "opencost")
    assert not is_read(("opencost", "csvPath"), read, "opencost")
    assert chart_folder("argo-workflows", "2.0.4") == (CHARTS / "argo-workflows-1.0.18", True)


# --- OpenCost ----------------------------------------------------------------------------------


def of_chart(every_values: list[ChartValues], chart: str) -> list[ChartValues]:
    found = [v for v in every_values if v.chart == chart]
    assert found, f"no {chart} values rendered"
    return found


@pytest.mark.slow
def test_opencost_prices_nodes_with_the_csv_provider_from_the_mounted_pricing_file(
    every_values: list[ChartValues],
) -> None:
    """opencost/opencost pkg/env/costmodelenv.go: the CSV provider is on only with
    `USE_CSV_PROVIDER` true (env.GetBool), and reads the file `CSV_PATH` names. The chart
    (opencost-2.5.17 templates/deployment.yaml) passes `opencost.exporter.extraEnv` as env, and
    `csv_path` as `EXPORT_CSV_FILE`, the file OpenCost writes its allocation export to: never
    the pricing file."""
    for values in of_chart(every_values, "opencost"):
        exporter = values.body["opencost"]["exporter"]
        env = exporter["extraEnv"]
        assert env["USE_CSV_PROVIDER"] in ("true", "1", "True")
        assert "csv_path" not in exporter
        csv = Path(env["CSV_PATH"])
        (mount,) = [m for m in exporter["extraVolumeMounts"] if csv.parent == Path(m["mountPath"])]
        assert mount["readOnly"] is True
        (volume,) = [v for v in values.body["extraVolumes"] if v["name"] == mount["name"]]
        config_map = values.file.parents[1] / "observability" / PROMETHEUS_NAMESPACE
        body = yaml.safe_load(
            (config_map / f"configmap-{volume['configMap']['name']}.yaml").read_text()
        )
        assert values.namespace == body["metadata"]["namespace"]  # a pod mounts its own namespace's
        assert csv.name in body["data"]


PROMETHEUS_NAMESPACE = "monitoring"


def prometheus_service(release: str) -> str:
    """kube-prometheus-stack 79.6.1 templates/prometheus/service.yaml: `<fullname>-prometheus`;
    _helpers.tpl `kube-prometheus-stack.fullname`: the release name when it contains the chart
    name, else `<release>-<chart>`, cut to 26 characters and a trailing `-`."""
    chart = "kube-prometheus-stack"
    fullname = release if chart in release else f"{release}-{chart}"
    return f"{fullname[:26].rstrip('-')}-prometheus"


@needs_charts
def test_opencost_reads_the_stacks_prometheus_and_the_stack_scrapes_it(
    every_values: list[ChartValues],
) -> None:
    """OpenCost queries Prometheus for the series it exports itself (pkg/costmodel/cluster.go
    `node_total_hourly_cost`), so the stack must scrape it: the chart's ServiceMonitor, which
    the stack selects without a `release` label (`serviceMonitorSelectorNilUsesHelmValues`)."""
    stack_chart, _ = chart_folder("kube-prometheus-stack", "79.6.1")
    port = yaml.safe_load((stack_chart / "values.yaml").read_text())["prometheus"]["service"]
    for values in of_chart(every_values, "opencost"):
        (stack,) = [
            v
            for v in every_values
            if v.chart == "kube-prometheus-stack"
            and (v.platform, v.cluster) == (values.platform, values.cluster)
        ]
        internal = values.body["opencost"]["prometheus"]["internal"]
        assert internal["serviceName"] == prometheus_service(stack.release)
        assert internal["namespaceName"] == stack.namespace
        assert internal["port"] == port["port"] == 9090
        assert values.body["opencost"]["metrics"]["serviceMonitor"]["enabled"] is True
        spec = stack.body["prometheus"]["prometheusSpec"]
        assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False


def test_the_prometheus_service_name_follows_the_charts_fullname_rule() -> None:
    assert prometheus_service("kube-prometheus-stack") == "kube-prometheus-stack-prometheus"
    assert prometheus_service("monitoring") == "monitoring-kube-prometheus-prometheus"


# --- the NVIDIA DRA driver ---------------------------------------------------------------------


def chart_fails(values: dict[str, Any]) -> bool:
    """NVIDIA/k8s-dra-driver-gpu v25.12.0 templates/validation.yaml: `fail` when
    `resources.gpus.enabled` and not `gpuResourcesEnabledOverride`."""
    return (
        bool(values["resources"]["gpus"]["enabled"]) and not values["gpuResourcesEnabledOverride"]
    )


def tolerates(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    """k8s.io/api core/v1 Toleration.ToleratesTaint: the effect (empty: any), the key (empty
    with Exists: any), then Exists or an equal value."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def pool_files(root: Path) -> dict[str, dict[str, Any]]:
    return {
        body["metadata"]["name"]: body["spec"]
        for body in (yaml.safe_load(p.read_text()) for p in sorted((root / "pools").glob("*.yaml")))
    }


def selected_pools(affinity: dict[str, Any], pools: dict[str, dict[str, Any]]) -> set[str]:
    """The pools whose nodes (labelled `gpuplane.dev/pool: <name>`) a required node affinity of
    `In` terms on that label admits."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    chosen = set()
    for name in pools:
        for term in terms["nodeSelectorTerms"]:
            exprs = term["matchExpressions"]
            if all(
                e["key"] == "gpuplane.dev/pool" and e["operator"] == "In" for e in exprs
            ) and all(name in e["values"] for e in exprs):
                chosen.add(name)
    return chosen


@needs_charts
def test_the_dra_driver_chart_renders_and_its_plugin_runs_on_the_dra_pools_only(
    platforms: dict[str, Path], every_values: list[ChartValues]
) -> None:
    folder, _ = chart_folder("nvidia-dra-driver-gpu", "25.12.0")
    defaults = yaml.safe_load((folder / "values.yaml").read_text())
    assert chart_fails(defaults)  # the chart's own defaults do not render
    (values,) = [v for v in of_chart(every_values, "nvidia-dra-driver-gpu")]
    assert values.platform == "dra"
    assert not chart_fails(merged(defaults, values.body))
    pools = pool_files(platforms["dra"])
    dra_pools = {name for name, spec in pools.items() if spec.get("exposure") == "dra"}
    assert dra_pools == {"train", "infer-mig"}
    plugin = merged(defaults, values.body)["kubeletPlugin"]
    assert selected_pools(plugin["affinity"], pools) == dra_pools
    for name in dra_pools:
        for taint in pools[name].get("taints", []):
            assert tolerates(plugin["tolerations"], taint), f"{name}: {taint}"
    # lab's file: driverManaged: true, so the driver lives under the operator's driver root
    # (the chart's values.yaml: "typically /run/nvidia/driver")
    assert values.body["nvidiaDriverRoot"] == "/run/nvidia/driver"


@needs_charts
def test_without_dra_pools_the_dra_driver_serves_compute_domains_only(tmp_path: Path) -> None:
    def add_driver(root: Path) -> None:
        edit_once(
            root / "clusters" / "lab.yaml",
            "    networkOperator: {version: 26.4.1}\n",
            "    networkOperator: {version: 26.4.1}\n    draDriver: {version: 25.12.0}\n",
        )

    root = render(CASES / "minimal", tmp_path / "repo", add_driver)
    (values,) = [v for v in chart_values("minimal", root) if v.chart == "nvidia-dra-driver-gpu"]
    folder, _ = chart_folder("nvidia-dra-driver-gpu", "25.12.0")
    whole = merged(yaml.safe_load((folder / "values.yaml").read_text()), values.body)
    assert not chart_fails(whole)
    assert whole["resources"]["gpus"]["enabled"] is False
    assert whole["resources"]["computeDomains"]["enabled"] is True
    assert "gpuResourcesEnabledOverride" not in values.body


# --- Kubeflow Trainer, the Network Operator ----------------------------------------------------


def test_trainer_leaves_jobset_to_the_jobset_addon(every_values: list[ChartValues]) -> None:
    """kubeflow/trainer v2.3.0 values.yaml: `jobset.install` "must be set to `false` if jobset
    controller/webhook has already been installed into the cluster"."""
    for values in of_chart(every_values, "kubeflow-trainer"):
        assert values.body == {"jobset": {"install": False}}


def test_the_network_operator_leaves_node_feature_discovery_to_the_gpu_operator(
    every_values: list[ChartValues],
) -> None:
    """Mellanox/network-operator v26.4.1 deployment/network-operator/README.md, "Deploy Network
    Operator without Node Feature Discovery": `nfd.enabled=false` where NFD runs already (the
    GPU Operator's chart deploys it, `nfd.enabled` true there)."""
    for values in of_chart(every_values, "network-operator"):
        assert values.body["nfd"] == {"enabled": False}
        operator = [
            v
            for v in every_values
            if v.chart == "gpu-operator"
            and (v.platform, v.cluster) == (values.platform, values.cluster)
        ]
        assert operator, "nfd off without the GPU Operator's NFD"
