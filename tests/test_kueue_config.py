"""The rendered Kueue configuration against the pinned chart (../shared/charts/kueue-0.19.2).

The chart hands `managerConfig.controllerManagerConfigYaml` to the manager whole: a setting the
rendered string leaves out is not the chart's value but the manager's built-in default. So every
setting of the chart's own string must be in ours with the chart's value, unless gpuplane means to
change it (only `integrations.frameworks`, which may only grow). The chart's `embedded.json` lists
the Configuration's fields from Kueue's Go types (decoded strictly: an unknown field stops the
manager) and every `FrameworkName` under `pkg/controller/jobs`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from renderer.model.integrations import (
    DEFAULT_FRAMEWORKS,
    KUEUE_INTEGRATIONS,
    integration_for,
)
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, render_platform
from tests.conftest import REPO

CHART = REPO.parent / "shared" / "charts" / "kueue-0.19.2"

needs_chart = pytest.mark.skipif(not CHART.is_dir(), reason="needs ../shared/charts/kueue-0.19.2")

CHANGED_ON_PURPOSE = {"integrations"}
"""Top-level settings of the chart's string gpuplane replaces (and checks below on their own)."""

ADDED_ON_PURPOSE = {"metrics": {"enableClusterQueueResources": True}}
"""Settings gpuplane adds beside the chart's own in one of its sections: the per-flavor quota
series the observability layer reads (Kueue exports them only with this on)."""


@pytest.fixture(scope="module")
def example() -> Rendered:
    """The example, rendered without CRDs: this module reads only the Kueue values and README."""
    return render_platform(REPO, OutputValidator([]))


def _configs(rendered: Rendered) -> dict[str, dict[str, Any]]:
    configs = {}
    for cluster, values in rendered.values.items():
        for output in values:
            if output.chart == "kueue":
                text = output.body["managerConfig"]["controllerManagerConfigYaml"]
                configs[cluster] = yaml.safe_load(text)
    assert configs, "no Kueue values rendered"
    return configs


def _chart_config() -> dict[str, Any]:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    config: dict[str, Any] = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    return config


@needs_chart
def test_every_setting_of_the_charts_configuration_is_kept(example: Rendered) -> None:
    chart = _chart_config()
    assert chart["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"] == 10
    for cluster, ours in _configs(example).items():
        for key, value in chart.items():
            if key in CHANGED_ON_PURPOSE:
                continue
            expected = {**value, **ADDED_ON_PURPOSE[key]} if key in ADDED_ON_PURPOSE else value
            assert ours.get(key) == expected, f"{cluster}: `{key}` differs from the chart's"


# The operator whose CRDs each non-built-in integration's kind is, as the cluster files name it
# (spec.addons): written from each project's API group, not from gpuplane's table.
OPERATOR_OF_GROUP = {
    "ray.io": "kuberay",
    "jobset.x-k8s.io": "jobset",
    "trainer.kubeflow.org": "trainer",
    "leaderworkerset.x-k8s.io": "lws",
    "workload.codeflare.dev": "appwrapper",
}


@needs_chart
def test_integrations_are_the_charts_whose_operators_each_cluster_runs(
    example: Rendered,
) -> None:
    """Kueue enables a chart integration exactly where the cluster file declares its operator;
    Kubernetes' own kinds everywhere; nothing Kueue does not know."""
    chart = set(_chart_config()["integrations"]["frameworks"])
    known = set(json.loads((CHART / "embedded.json").read_text())["frameworks"])
    for cluster, ours in _configs(example).items():
        frameworks = ours["integrations"]["frameworks"]
        assert set(frameworks) <= known & chart
        assert len(frameworks) == len(set(frameworks))
        declared = set(
            yaml.safe_load((REPO / "clusters" / f"{cluster}.yaml").read_text())["spec"]["addons"]
        )
        for framework in chart:
            group = framework.rpartition("/")[0]
            if "/" not in framework or group == "batch":
                assert framework in frameworks, f"{cluster}: {framework} is Kubernetes' own"
            elif group in OPERATOR_OF_GROUP:
                wanted = OPERATOR_OF_GROUP[group] in declared
                assert (framework in frameworks) == wanted, f"{cluster}: {framework}"
            else:  # the training operator v1 and the MPI Operator: no add-on of the example
                assert framework not in frameworks, f"{cluster}: {framework}"


@needs_chart
def test_the_model_knows_every_integration_kueue_has() -> None:
    known = set(json.loads((CHART / "embedded.json").read_text())["frameworks"])
    assert {i.framework for i in KUEUE_INTEGRATIONS} == known


def _unknown_fields(value: Any, fields: Any, path: str) -> list[str]:
    if fields == "*" or fields is None:
        return []
    if isinstance(value, dict):
        assert isinstance(fields, dict), path
        problems = []
        for key, inner in value.items():
            if key not in fields:
                problems.append(f"{path}.{key}")
            else:
                problems += _unknown_fields(inner, fields[key], f"{path}.{key}")
        return problems
    if isinstance(value, list) and isinstance(fields, list):
        return [p for item in value for p in _unknown_fields(item, fields[0], f"{path}[]")]
    return []


@needs_chart
def test_every_rendered_field_is_one_the_strict_decoder_knows(example: Rendered) -> None:
    fields = json.loads((CHART / "embedded.json").read_text())["fields"]
    for cluster, ours in _configs(example).items():
        assert _unknown_fields(ours, fields, cluster) == []


def test_the_chart_keeps_its_own_certificate_management(example: Rendered) -> None:
    """The chart's template adds `internalCertManagement` (its own service and secret names)
    only when the string has none: setting it here would need those names spelled out."""
    for ours in _configs(example).values():
        assert "internalCertManagement" not in ours


def test_deployments_and_statefulsets_come_with_the_pod_integration() -> None:
    """Kueue refuses to start with `deployment` or `statefulset` but not `pod`
    (pkg/controller/jobframework/validation.go, "depends on the pod integration")."""
    for integration in KUEUE_INTEGRATIONS:
        if integration.framework in DEFAULT_FRAMEWORKS:
            assert set(integration.needs) <= set(DEFAULT_FRAMEWORKS)


@pytest.mark.parametrize(
    ("api_version", "kind", "framework"),
    [
        ("kubeflow.org/v2beta1", "MPIJob", "kubeflow.org/mpijob"),
        ("kubeflow.org/v1", "MPIJob", None),  # the training operator's, not the MPI Operator's
        ("kubeflow.org/v1", "PyTorchJob", "kubeflow.org/pytorchjob"),
        ("batch/v1", "Job", "batch/job"),
        ("batch.volcano.sh/v1alpha1", "Job", None),
        ("v1", "Pod", "pod"),
        ("apps/v1", "ReplicaSet", None),
        ("serving.kserve.io/v1beta1", "InferenceService", None),
        (
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ),
    ],
)
def test_integration_for_a_kind(api_version: str, kind: str, framework: str | None) -> None:
    found = integration_for(api_version, kind)
    assert (found.framework if found else None) == framework


def test_the_cluster_readme_lists_the_gang_kinds(example: Rendered) -> None:
    readme = example.readmes["prod-east"]
    section = readme.split("## Workloads Kueue admits", 1)[1].split("\n## ", 1)[0]
    gangs = section.split("It admits", 1)[0]  # the kinds admitted whole
    for kind in ("`JobSet`", "`RayJob`", "`TrainJob`"):
        assert kind in gangs  # prod-east runs their operators
    for kind in ("`MPIJob`", "`PyTorchJob`", "`AppWrapper`"):
        assert kind not in gangs  # it runs none of theirs
    assert "`LeaderWorkerSet`" in section
    assert "`Deployment`" in section and "one at a time" in section
