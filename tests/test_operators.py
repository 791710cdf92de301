"""Every kind the platform renders or hands to teams has its operator installed, pinned and checked.

The table of operators (renderer/model/operators.py) is compared with the operators' own CRDs in
../shared/crds; the example platform's rendered tree is read as a cluster would be asked for it
(every apiVersion and kind, templates included, against the Applications of the same cluster);
and each need is removed in turn to see the finding land on the line that needs it, with a hint
that, applied, makes the platform valid again.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

from renderer.model.integrations import KUEUE_INTEGRATIONS, enabled_frameworks
from renderer.model.operators import OPERATORS, installed, serving_problem
from renderer.output.served import unserved
from tests.conftest import REPO, SHARED_CRDS, edit_once

RENDERED = REPO / "rendered"

# Written from each project's release, not from gpuplane's table: the API group its CRDs define,
# and the Argo CD source that installs it (Helm chart name, or a git repository for AppWrapper,
# which publishes no chart: project-codeflare/appwrapper's README installs its install.yaml).
INSTALLED_BY = {
    "kueue.x-k8s.io": "kueue",
    "nvidia.com": "gpu-operator",
    "argoproj.io": "argo-workflows",
    "monitoring.coreos.com": "kube-prometheus-stack",
    "external-secrets.io": "external-secrets",
    "jobset.x-k8s.io": "jobset",
    "ray.io": "kuberay-operator",
    "trainer.kubeflow.org": "kubeflow-trainer",
    "leaderworkerset.x-k8s.io": "lws",
    "workload.codeflare.dev": "https://github.com/project-codeflare/appwrapper.git",
    "mellanox.com": "network-operator",
    "resource.nvidia.com": "nvidia-dra-driver-gpu",
    "keda.sh": "keda",  # kedacore/charts v2.20.2: keda/Chart.yaml name
    # envoyproxy/gateway v1.9.0: charts/gateway-helm vendors the Gateway API CRDs (charts/crds)
    "gateway.networking.k8s.io": "gateway-helm",
}
ARGO_CD_KINDS = {"Application", "AppProject", "ApplicationSet"}  # Argo CD runs before any of it


def _index() -> list[dict[str, Any]]:
    index = SHARED_CRDS / "index.json"
    if not index.is_file():
        pytest.skip("../shared/crds is not beside this checkout")
    return json.loads(index.read_text())


def test_the_table_serves_what_each_operators_crds_define() -> None:
    """Each kind of the table is a CRD of its project, at the versions the CRD serves."""
    crds = {(e["group"], e["kind"]): tuple(e["versions"]) for e in _index()}
    checked = 0
    for operator in OPERATORS:
        for api in operator.apis:
            if (api.group, api.kind) in crds:
                assert set(api.versions) == set(crds[api.group, api.kind]), (operator.addon, api)
                checked += 1
    assert checked >= 40  # most kinds have their CRD in ../shared (Kueue's Workload has not)


def test_every_crd_of_an_operator_group_is_in_the_table() -> None:
    groups = {api.group for operator in OPERATORS for api in operator.apis}
    table = {(api.group, api.kind) for operator in OPERATORS for api in operator.apis}
    missing = [
        (e["group"], e["kind"])
        for e in _index()
        if e["group"] in groups
        and (e["group"], e["kind"]) not in table
        and not (e["group"] == "argoproj.io" and e["kind"] in ARGO_CD_KINDS)
    ]
    assert not missing


def test_each_kueue_integration_of_an_operator_is_one_of_its_kinds() -> None:
    by_framework = {i.framework: i for i in KUEUE_INTEGRATIONS}
    for operator in OPERATORS:
        for framework in operator.frameworks:
            integration = by_framework[framework]
            assert any(
                api.group == integration.group and api.kind == integration.kind
                for api in operator.apis
            ), (operator.addon, framework)


def _documents(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in sorted(folder.rglob("*.yaml")):
        if "values" in path.relative_to(folder).parts[:1] or path.parts[-2] == "nodes":
            continue
        for body in yaml.safe_load_all(path.read_text()):
            if (
                isinstance(body, dict)
                and "apiVersion" in body
                and body.get("kind") != "Kustomization"
            ):
                found.append((path, body))
    return found


def _applications(cluster: Path) -> dict[str, dict[str, Any]]:
    """The add-on Applications of a cluster, by what they install (chart name or git repository)."""
    found = {}
    for path in (cluster / "gitops" / "argocd").glob("application-*.yaml"):
        app = yaml.safe_load(path.read_text())
        for source in app["spec"].get("sources") or [app["spec"]["source"]]:
            if "chart" in source:
                found[source["chart"]] = source
            elif source.get("path") and not source["repoURL"].endswith("gpuplane.git"):
                found[source["repoURL"]] = source
    return found


@pytest.mark.slow
@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_every_rendered_kind_is_served_by_a_pinned_application_of_its_cluster(cluster: str) -> None:
    """Issue 30's "done when", read from the committed tree as Argo CD would apply it."""
    folder = RENDERED / cluster
    applications = _applications(folder)
    groups = set()
    for path, body in _documents(folder):
        group = body["apiVersion"].rpartition("/")[0]
        builtin = group.endswith(".k8s.io") and group not in INSTALLED_BY  # Gateway API: a CRD
        if not group or "." not in group or builtin or group == "audit.k8s.io":
            continue  # Kubernetes' own: the output validator checks them per version
        if group == "argoproj.io" and body["kind"] in ARGO_CD_KINDS:
            continue
        groups.add(group)
        installer = INSTALLED_BY.get(group)
        assert installer in applications, (path, group)
        assert applications[installer]["targetRevision"] not in ("*", "HEAD"), (path, group)
    assert {"jobset.x-k8s.io", "ray.io", "gateway.networking.k8s.io"} <= groups


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_every_enabled_kueue_integration_has_its_operator_on_the_cluster(cluster: str) -> None:
    values = yaml.safe_load((RENDERED / cluster / "values" / "kueue.yaml").read_text())
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    frameworks = config["integrations"]["frameworks"]
    applications = _applications(RENDERED / cluster)
    by_framework = {i.framework: i for i in KUEUE_INTEGRATIONS}
    for framework in frameworks:
        group = by_framework[framework].group
        if group in ("", "batch", "apps"):
            continue
        assert INSTALLED_BY[group] in applications, framework


def test_kueue_enables_an_integration_exactly_where_its_operator_runs(platform: Path) -> None:
    from renderer.pipeline import load_platform

    loaded = load_platform(platform)
    prod = loaded.platform.clusters["prod-east"]
    staging = loaded.platform.clusters["staging-west"]
    assert "trainer.kubeflow.org/trainjob" in enabled_frameworks(prod)
    assert "leaderworkerset.x-k8s.io/leaderworkerset" in enabled_frameworks(prod)
    assert "leaderworkerset.x-k8s.io/leaderworkerset" not in enabled_frameworks(staging)
    assert "workload.codeflare.dev/appwrapper" not in enabled_frameworks(prod)
    assert "kubeflow.org/pytorchjob" not in enabled_frameworks(prod)  # no training operator v1
    without = dataclasses.replace(
        prod, addons=MappingProxyType({k: v for k, v in prod.addons.items() if k != "kuberay"})
    )
    assert not any(f.startswith("ray.io/") for f in enabled_frameworks(without))
    assert "kuberay" not in {o.addon for o in installed(without)}


def _validate(gpuplane, root: Path) -> dict[str, Any]:
    return json.loads(gpuplane("-C", str(root), "validate", "--format", "json").output)


def _findings(report: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [d for d in report["findings"] if d["rule"] == rule]


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_removing_jobset_is_an_error_on_each_namespace_whose_template_needs_it(
    platform: Path, gpuplane
) -> None:
    cluster = platform / "clusters" / "prod-east.yaml"
    jobset = "    jobset:\n      version: 0.11.1                # the JobSet templates, Trainer's TrainJobs (0.12 needs 1.34)\n"
    edit_once(cluster, jobset, "")
    found = _findings(_validate(gpuplane, platform), "operator-missing")
    places = {(d["file"], d["line"]) for d in found}
    # the training namespaces of prod-east (their JobSet templates), and Trainer, which runs on it
    assert ("teams/llm.yaml", _line_of(platform / "teams/llm.yaml", "name: llm-train")) in places
    assert (
        "teams/vision.yaml",
        _line_of(platform / "teams/vision.yaml", "name: vision-train"),
    ) in places
    assert ("clusters/prod-east.yaml", _line_of(cluster, "trainer:")) in places
    assert all("JobSet" in d["message"] for d in found)
    assert not any("staging-west" in d["message"] for d in found)
    # the hint, applied
    edit_once(cluster, "    trainer:\n", "    jobset: {version: 0.11.1}\n    trainer:\n")
    assert not _findings(_validate(gpuplane, platform), "operator-missing")


def test_an_rdma_pool_needs_the_network_operator_on_prem_only(platform: Path, gpuplane) -> None:
    cluster = platform / "clusters" / "prod-east.yaml"
    edit_once(
        cluster,
        "    networkOperator:\n      version: 26.4.1",
        "    networkOperatorX:\n      version: 26.4.1",
    )
    edit_once(cluster, "    networkOperatorX:\n      version: 26.4.1", "    # none")
    found = _findings(_validate(gpuplane, platform), "operator-missing")
    pools = {d["file"] for d in found}
    assert pools == {"pools/h100-train.yaml", "pools/a100-mig.yaml"}  # rdma/rdma_shared_device_a
    for d in found:
        assert d["line"] == _line_of(platform / d["file"], "resource: rdma/")
        assert "networkOperator: {version: 26.4.1}" in d["hint"]
    # staging-west's EFA pool (EKS brings the EFA device plugin) needs none: no finding there


def test_a_namespace_kind_needs_its_operator_on_its_line(platform: Path, gpuplane) -> None:
    team = platform / "teams" / "search.yaml"
    text = team.read_text()
    old = next(line for line in text.splitlines() if "name: search-serve" in line)
    edit_once(
        team, old, old.replace("purpose: inference", "purpose: inference, kinds: [LeaderWorkerSet]")
    )
    found = _findings(_validate(gpuplane, platform), "operator-missing")
    assert len(found) == 1
    assert (found[0]["file"], found[0]["line"]) == (
        "teams/search.yaml",
        _line_of(team, "kinds: [LeaderWorkerSet]"),
    )
    assert "LeaderWorkerSet" in found[0]["message"] and "staging-west" in found[0]["message"]
    edit_once(
        platform / "clusters" / "staging-west.yaml",
        "    opencost:\n",
        "    lws: {version: 0.10.0}\n    opencost:\n",
    )
    report = _validate(gpuplane, platform)
    assert not _findings(report, "operator-missing")
    assert not _findings(report, "operator-unused")  # search-serve uses it now


def test_an_operator_nothing_uses_is_a_warning_the_hint_removes(platform: Path, gpuplane) -> None:
    cluster = platform / "clusters" / "staging-west.yaml"
    edit_once(cluster, "    opencost:\n", "    appwrapper: {version: v1.2.1}\n    opencost:\n")
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    assert result.exit_code == 0  # a warning only
    found = _findings(json.loads(result.output), "operator-unused")
    assert [(d["file"], d["line"], d["level"]) for d in found] == [
        ("clusters/staging-west.yaml", _line_of(cluster, "appwrapper:"), "warning")
    ]
    edit_once(cluster, "    appwrapper: {version: v1.2.1}\n", "")
    assert not _findings(_validate(gpuplane, platform), "operator-unused")


def test_an_operator_already_running_serves_its_kinds_and_is_not_installed(
    platform: Path, gpuplane
) -> None:
    cluster = platform / "clusters" / "staging-west.yaml"
    edit_once(
        cluster,
        "    kuberay:\n      version: 1.7.0                 # the RayJob templates\n",
        "    kuberay: {enabled: false}\n",
    )
    result = gpuplane("-C", str(platform), "render")
    assert result.exit_code == 0, result.output
    apps = platform / "rendered" / "staging-west" / "gitops" / "argocd"
    assert not (apps / "application-staging-west-kuberay-operator.yaml").exists()
    assert list((platform / "rendered" / "staging-west" / "templates").rglob("rayjob-*.yaml"))


def test_the_backstop_finds_a_rendered_kind_its_cluster_does_not_serve(platform: Path) -> None:
    """`kind-unserved` reads what was rendered, whatever the policy predicted."""
    from renderer.model.view import ClusterView
    from renderer.pipeline import load_platform, render_cluster

    loaded = load_platform(platform)
    prod = loaded.platform.clusters["prod-east"]
    outputs = render_cluster(ClusterView.of(loaded.platform, prod))
    objects = [
        (getattr(o, "path", ""), o.body, o.source) for o in outputs if "apiVersion" in o.body
    ]
    assert not list(
        unserved(
            "prod-east", prod.origin.location, objects, functools.partial(serving_problem, prod)
        )
    )
    without = dataclasses.replace(
        prod, addons=MappingProxyType({k: v for k, v in prod.addons.items() if k != "jobset"})
    )
    found = list(
        unserved(
            "prod-east", prod.origin.location, objects, functools.partial(serving_problem, without)
        )
    )
    assert found and all("JobSet" in d.message and d.rule == "kind-unserved" for d in found)
    assert {d.at.file for d in found} == {
        "teams/llm.yaml",
        "teams/recsys.yaml",
        "teams/speech.yaml",
        "teams/vision.yaml",
    }
    wrong_version = {"apiVersion": "jobset.x-k8s.io/v1alpha1", "kind": "JobSet"}
    at = prod.origin.location
    [problem] = list(
        unserved(
            "prod-east",
            at,
            [("a JobSet", wrong_version, at)],
            functools.partial(serving_problem, prod),
        )
    )
    assert "v1alpha2" in problem.message and problem.hint == "write jobset.x-k8s.io/v1alpha2"
    unknown = {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy"}
    [problem] = list(
        unserved(
            "prod-east", at, [("a policy", unknown, at)], functools.partial(serving_problem, prod)
        )
    )
    assert "no add-on" in problem.message
