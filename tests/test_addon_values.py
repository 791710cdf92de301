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
from tests.conftest import REPO, copy_inputs

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
