"""A PodDisruptionBudget per endpoint (issue 31, part 3: safe rollouts).

Expectations come from the team files as written and from Kubernetes' own rules:
- policy/v1 PodDisruptionBudget (k8s.io/api policy/v1/types.go): `minAvailable`, a label
  `selector`, and `unhealthyPodEvictionPolicy` (AlwaysAllow: a running pod that is not ready may
  be evicted even when the budget is spent), documented without a feature gate from v0.33.0;
- the disruption controller (k8s.io/kubernetes pkg/controller/disruption): `disruptionsAllowed`
  = currentHealthy - desiredHealthy, desiredHealthy = minAvailable; the eviction API refuses an
  eviction of a healthy pod when disruptionsAllowed is 0, and with AlwaysAllow admits the
  eviction of a pod that is not Ready whatever the budget says.
The budget is evaluated here against the endpoint template's pods, not read for its names.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from renderer.layers.serving import rollouts
from renderer.layers.workload_templates import workloads
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform
from tests.conftest import REPO

ENDPOINT = "gpuplane.dev/endpoint"


def _declared() -> dict[tuple[str, str], dict[str, Any]]:
    """(namespace, endpoint name) -> the endpoint as its team file writes it."""
    found = {}
    for path in sorted((REPO / "teams").glob("*.yaml")):
        team = yaml.safe_load(path.read_text())
        for ns in team["spec"]["namespaces"]:
            for endpoint in ns.get("endpoints", []):
                found[(ns["name"], endpoint["name"])] = endpoint
    return found


@pytest.fixture(scope="module")
def rendered() -> list[tuple[ClusterView, list[Manifest], list[Any]]]:
    """Per cluster: its budgets, and its template pods (metadata of every template's pods)."""
    platform = load_platform(REPO).platform
    out = []
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        budgets = [o for o in rollouts.render(view) if isinstance(o, Manifest)]
        pods = [
            (item.body["metadata"]["namespace"], item.body["spec"]["template"]["metadata"])
            for item in workloads.render(view)
            if item.body["kind"] == "Deployment"
        ]
        out.append((view, budgets, pods))
    return out


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector of matchLabels only (what a budget of ours may hold)."""
    assert set(selector) == {"matchLabels"}
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def _allowed(budget: dict[str, Any], healthy: int) -> int:
    """The disruption controller's disruptionsAllowed for `healthy` ready pods."""
    return max(0, healthy - budget["spec"]["minAvailable"])


def test_one_budget_per_endpoint_in_its_namespace(rendered: Any) -> None:
    found = {
        (m.body["metadata"]["namespace"], m.body["metadata"]["name"]): m
        for _, budgets, _ in rendered
        for m in budgets
    }
    assert set(found) == set(_declared())
    for (namespace, name), manifest in found.items():
        body = manifest.body
        assert (body["apiVersion"], body["kind"]) == ("policy/v1", "PodDisruptionBudget")
        assert manifest.path == f"serving/{namespace}/poddisruptionbudget-{name}.yaml"
        assert body["metadata"]["labels"][ENDPOINT] == name
        assert manifest.source.file.startswith("teams/")


def test_the_budget_selects_exactly_the_endpoints_template_pods(rendered: Any) -> None:
    """Evaluated against every Deployment template's pods on the cluster: the endpoint's own
    are selected, no other template's are."""
    for _, budgets, pods in rendered:
        for manifest in budgets:
            body = manifest.body
            namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
            for pod_namespace, meta in pods:
                selected = pod_namespace == namespace and _selects(
                    body["spec"]["selector"], meta["labels"]
                )
                mine = pod_namespace == namespace and meta["labels"].get(ENDPOINT) == name
                assert selected == mine, (name, meta["labels"])
            assert any(ns == namespace and m["labels"].get(ENDPOINT) == name for ns, m in pods)


def test_a_drain_never_takes_an_endpoint_below_replicas_min(rendered: Any) -> None:
    declared = _declared()
    for _, budgets, _ in rendered:
        for manifest in budgets:
            body = manifest.body
            replicas = declared[(body["metadata"]["namespace"], body["metadata"]["name"])][
                "replicas"
            ]
            assert body["spec"]["minAvailable"] == replicas["min"]
            assert "maxUnavailable" not in body["spec"]  # the two are exclusive
            assert _allowed(body, replicas["min"]) == 0
            assert _allowed(body, replicas["max"]) == replicas["max"] - replicas["min"]
            # pods that never got ready (a model that fails to load) do not block a drain
            assert body["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_budgets_are_valid_policy_v1_at_the_clusters_version(
    rendered: Any, validator: OutputValidator
) -> None:
    checked = 0
    for view, budgets, _ in rendered:
        assert view.cluster.kubernetes_version in ("1.33", "1.34")
        for manifest in budgets:
            assert validator.validate(manifest.body, view.cluster.kubernetes_version) == []
            checked += 1
    assert checked == len(_declared())


def test_a_broken_budget_is_refused_by_the_schema(
    rendered: Any, validator: OutputValidator
) -> None:
    """The check above can fail (Kubernetes' OpenAPI holds no enum for the policy, so the
    value is held to upstream's two by test_a_drain_never_takes_an_endpoint_below_replicas_min)."""
    view, budgets, _ = rendered[0]
    body = {**budgets[0].body, "spec": {**budgets[0].body["spec"]}}
    body["spec"]["selector"] = ENDPOINT
    assert validator.validate(body, view.cluster.kubernetes_version)


def test_no_budget_where_no_endpoint_is() -> None:
    platform = load_platform(REPO).platform
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        endpoints = {(s.namespace.name, s.name) for s in view.endpoints()}
        made = {
            (m.body["metadata"]["namespace"], m.body["metadata"]["name"])
            for m in rollouts.render(view)
            if isinstance(m, Manifest)
        }
        assert made == endpoints
