"""KEDA and the endpoints' ScaledObjects (renderer/layers/serving/autoscaling.py), checked against
the example's inputs and the upstream projects, not against gpuplane's own output:

- the endpoints are read from teams/*.yaml (chat 2..8 queue-depth 4; ranker 4..12, Triton's
  default queue-depth 4; candidate 2..3 kv-cache 0.8);
- the Prometheus address from kube-prometheus-stack 79.6.1's values.yaml (`prometheus.service.
  port`) and the release the stack's Argo CD Application installs (`templates/prometheus/
  service.yaml` names the Service `<fullname>-prometheus`; the fullname is the release name);
- the arithmetic from Kubernetes' HPA (pkg/controller/podautoscaler/replica_calculator.go at
  v1.33: `GetExternalPerPodMetricReplicas` for AverageValue, desired = ceil(usage / target);
  `GetExternalMetricReplicas` for Value, desired = ceil(usage / target x current replicas));
- KEDA's ScaledObject CRD at v2.20.2 (../shared/crds/keda).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.serving import autoscaling
from renderer.model.serving import ENDPOINT_SERIES_LABELS, SIGNAL_SERIES
from renderer.model.view import ClusterView, Served
from renderer.pipeline import load_platform
from tests.conftest import REPO, SHARED_CRDS, edit_once

RENDERED = REPO / "rendered"
CHARTS = REPO.parent / "shared" / "charts"

# (cluster, namespace, name, min, max, signal, target), read from teams/*.yaml by hand
EXAMPLE = [
    ("prod-east", "llm-serve", "chat", 2, 8, "queue-depth", 4.0),
    ("prod-east", "recsys-serve", "ranker", 4, 12, "queue-depth", 4.0),
    ("staging-west", "llm-eval-serve", "candidate", 2, 3, "kv-cache", 0.8),
]


def _scaled(cluster: str, namespace: str, name: str) -> dict[str, Any]:
    path = RENDERED / cluster / "serving" / namespace / f"scaledobject-{name}.yaml"
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize(("cluster", "ns", "name", "low", "high", "signal", "target"), EXAMPLE)
def test_each_autoscaling_endpoint_has_its_scaled_object(
    cluster: str, ns: str, name: str, low: int, high: int, signal: str, target: float
) -> None:
    body = _scaled(cluster, ns, name)
    spec = body["spec"]
    assert body["metadata"]["namespace"] == ns
    assert body["metadata"]["labels"]["gpuplane.dev/endpoint"] == name
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (low, high)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert float(trigger["metadata"]["threshold"]) == target
    query = trigger["metadata"]["query"]
    assert dict(SIGNAL_SERIES)[signal] in query
    assert f'namespace="{ns}"' in query and f'endpoint="{name}"' in query
    assert {"namespace", "endpoint"} <= set(ENDPOINT_SERIES_LABELS)


@pytest.mark.skipif(not CHARTS.is_dir(), reason="../shared/charts is not beside this checkout")
def test_the_trigger_reads_the_stacks_prometheus_service() -> None:
    values = yaml.safe_load((CHARTS / "kube-prometheus-stack-79.6.1" / "values.yaml").read_text())
    app = yaml.safe_load(
        (
            RENDERED / "prod-east" / "gitops" / "argocd" / "application-prod-east-"
            "kube-prometheus-stack.yaml"
        ).read_text()
    )
    (source,) = [s for s in app["spec"]["sources"] if s.get("chart") == "kube-prometheus-stack"]
    release = source["helm"].get("releaseName", app["metadata"]["name"])
    namespace = app["spec"]["destination"]["namespace"]
    port = values["prometheus"]["service"]["port"]
    for cluster, ns, name, *_ in EXAMPLE:
        address = _scaled(cluster, ns, name)["spec"]["triggers"][0]["metadata"]["serverAddress"]
        assert address == f"http://{release}-prometheus.{namespace}.svc:{port}"


def _hpa_desired(metric_type: str, usage: float, target: float, current: int) -> int:
    """Kubernetes' HPA for an external metric (replica_calculator.go), tolerance 10%."""
    if metric_type == "AverageValue":
        ratio = usage / (target * current)
        return current if abs(ratio - 1) <= 0.1 else math.ceil(usage / target)
    ratio = usage / target
    return current if abs(ratio - 1) <= 0.1 else math.ceil(ratio * current)


def _example_served(name: str) -> Served:
    loaded = load_platform(REPO)
    for cluster in loaded.platform.clusters.values():
        for served in ClusterView.of(loaded.platform, cluster).endpoints():
            if served.name == name:
                return served
    raise AssertionError(name)


@pytest.mark.parametrize("signal", ["queue-depth", "kv-cache", "ttft"])
def test_the_metric_type_makes_the_hpa_arithmetic_right(signal: str) -> None:
    """A sum over the pods must give the same answer whatever the current replica count (the
    total work decides); a p95 latency twice the target must double the replicas."""
    served = _example_served("chat")
    target = {"queue-depth": 4.0, "kv-cache": 0.8, "ttft": 0.5}[signal]
    scaling = dataclasses.replace(served.endpoint.autoscaling, signal=signal, target=target)
    endpoint = dataclasses.replace(served.endpoint, autoscaling=scaling)
    body = autoscaling.scaled_object(dataclasses.replace(served, endpoint=endpoint)).body
    (trigger,) = body["spec"]["triggers"]
    metric_type = trigger["metricType"]
    if signal == "ttft":
        assert _hpa_desired(metric_type, 1.0, 0.5, 2) == 4
        assert _hpa_desired(metric_type, 1.0, 0.5, 3) == 6
        assert trigger["metadata"]["query"].startswith("max(")
    else:
        total = {"queue-depth": 30.0, "kv-cache": 4.0}[signal]  # 30 waiting; 5 caches at 80%
        wanted = {"queue-depth": 8, "kv-cache": 5}[signal]
        assert {_hpa_desired(metric_type, total, target, n) for n in (2, 3, 6)} == {wanted}
        assert trigger["metadata"]["query"].startswith("sum(")


@pytest.mark.skipif(not SHARED_CRDS.is_dir(), reason="../shared/crds is not beside this checkout")
def test_an_unreachable_prometheus_holds_the_replicas() -> None:
    """A failed read (Prometheus down, or a sum that came back empty) never shrinks an
    endpoint: after three failures KEDA holds the current count, at least min."""
    crd = yaml.safe_load((SHARED_CRDS / "keda" / "keda.sh_scaledobjects.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    behaviours = schema["properties"]["fallback"]["properties"]["behavior"]["enum"]
    for cluster, ns, name, low, _, signal, _ in EXAMPLE:
        spec = _scaled(cluster, ns, name)["spec"]
        assert spec["fallback"]["behavior"] in behaviours
        assert spec["fallback"]["behavior"] == "currentReplicasIfHigher"
        assert spec["fallback"]["replicas"] == low
        # KEDA's default (true) reads an empty answer as 0: the sums must fail instead
        ignore = spec["triggers"][0]["metadata"]["ignoreNullValues"]
        assert ignore == ("true" if signal == "ttft" else "false")


def test_scale_down_is_slower_than_kubernetes_default() -> None:
    """Kubernetes' default scale-down: a 300 s window, then any number of pods at once."""
    for cluster, ns, name, *_ in EXAMPLE:
        hpa = _scaled(cluster, ns, name)["spec"]["advanced"]["horizontalPodAutoscalerConfig"]
        down = hpa["behavior"]["scaleDown"]
        assert down["stabilizationWindowSeconds"] > 300
        assert down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 120}]
        assert "scaleUp" not in hpa["behavior"]  # a burst is met as fast as the HPA can


def test_the_scaled_objects_are_valid_keda_objects(validator) -> None:
    for cluster, ns, name, *_ in EXAMPLE:
        checked = validator.check(_scaled(cluster, ns, name), "1.33")
        assert checked.crd == "scaledobjects.keda.sh"
        assert not checked.problems and not checked.cel, checked


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_no_team_role_may_touch_keda(cluster: str) -> None:
    """The autoscaler is the platform's bound on the quota: a team editing its ScaledObject
    could lift the maximum past it."""
    for path in (RENDERED / cluster / "tenancy").glob("clusterrole-*.yaml"):
        for rule in yaml.safe_load(path.read_text()).get("rules", []):
            groups = rule.get("apiGroups", [])
            assert "keda.sh" not in groups and "*" not in groups, (path.name, rule)


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_kueue_manages_the_endpoints_replicas(cluster: str) -> None:
    """Kueue v0.19.2's deployment integration (pkg/controller/jobs/deployment) marks each pod
    of a Deployment in a managed namespace for the pod integration, which admits every pod as a
    Workload of its own: both must be enabled, and the namespace selected."""
    values = yaml.safe_load((RENDERED / cluster / "values" / "kueue.yaml").read_text())
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert {"pod", "deployment"} <= set(config["integrations"]["frameworks"])
    selector = config["managedJobsNamespaceSelector"]["matchExpressions"]
    for c, ns, *_ in EXAMPLE:
        if c != cluster:
            continue
        namespace = yaml.safe_load(
            (RENDERED / cluster / "tenancy" / ns / f"namespace-{ns}.yaml").read_text()
        )
        labels = namespace["metadata"]["labels"]
        for expression in selector:
            assert expression["operator"] == "Exists" and expression["key"] in labels


def test_a_fixed_size_endpoint_gets_no_autoscaler(platform: Path, gpuplane) -> None:
    team = platform / "teams" / "llm.yaml"
    edit_once(team, "replicas: {min: 2, max: 8}", "replicas: {min: 2, max: 2}")
    result = gpuplane("-C", str(platform), "render")
    assert result.exit_code == 0, result.output
    serving = platform / "rendered" / "prod-east" / "serving"
    assert not (serving / "llm-serve" / "scaledobject-chat.yaml").exists()
    assert (serving / "recsys-serve" / "scaledobject-ranker.yaml").exists()


def test_keda_missing_is_found_on_the_endpoint_and_the_hint_declares_it(
    platform: Path, gpuplane
) -> None:
    import json

    cluster = platform / "clusters" / "staging-west.yaml"
    declared = "    keda:\n      version: 2.20.2"
    text = cluster.read_text()
    line = next(x for x in text.splitlines(keepends=True) if x.startswith("      version: 2.20.2"))
    edit_once(cluster, "    keda:\n" + line, "")
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    found = [d for d in json.loads(result.output)["findings"] if d["rule"] == "operator-missing"]
    team = (platform / "teams" / "llm-eval.yaml").read_text().splitlines()
    replicas = next(i for i, x in enumerate(team, 1) if "replicas: {min: 2, max: 3}" in x)
    assert [(d["file"], d["line"]) for d in found] == [("teams/llm-eval.yaml", replicas)]
    assert "`keda: {version: 2.20.2}`" in found[0]["hint"]
    edit_once(
        cluster, "    opencost:\n", declared.replace("\n      ", ": {") + "}\n    opencost:\n"
    )
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    assert not [
        d for d in json.loads(result.output)["findings"] if d["rule"].startswith("operator-")
    ]
