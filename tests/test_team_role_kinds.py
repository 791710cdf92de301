"""The team ClusterRoles grant the workload kinds of exactly the operators the cluster serves.

The rule, written from the inputs and the upstream CRDs, not from the roles: a kind a team may
list in a namespace's `kinds` (schemas/team.schema.json) is granted to members (every write
verb) and viewers (read) on a cluster iff the operator whose CRDs define it is declared there
(`spec.addons`, `enabled: false` included: then it runs already); Volcano's Job iff Volcano is.
The resource names are the upstream CRDs' plurals (../shared/crds/index.json). The exceptions
are the three kinds `tenancy.EXCLUDED_KINDS` names, each checked for the reason it gives, and
no kind of an operator gpuplane does not install (the Kubeflow training operator's, Spark's) is
granted anywhere.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers import tenancy
from renderer.model.operators import OPERATORS, serving
from renderer.model.platform import Addon, Cluster, Platform
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import REPO, SHARED_CRDS
from tests.test_team_roles import WRITE, allows

CASES = REPO / "tests" / "cases" / "render"
ROLES = {name for _, name in tenancy.ROLE_FOR}
MEMBER, OWNER, VIEWER = "gpuplane-team-member", "gpuplane-team-owner", "gpuplane-team-viewer"
VOLCANO_JOB = ("batch.volcano.sh", "Job")


def _team_kinds() -> list[str]:
    """The operator kinds a team may declare in a namespace's `kinds`, from the team schema."""
    schema = json.loads((REPO / "schemas" / "team.schema.json").read_text())
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "kinds" in node and isinstance(node["kinds"], dict):
                found.extend(node["kinds"]["items"]["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert found, "the team schema lists the kinds a namespace may declare"
    return found


@pytest.fixture(scope="module")
def plurals() -> dict[tuple[str, str], tuple[str, str]]:
    """(group, kind) -> (plural, scope), from the upstream CRDs."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    index = json.loads((SHARED_CRDS / "index.json").read_text())
    return {(c["group"], c["kind"]): (c["plural"], c["scope"]) for c in index} | KUBEFLOW_V1


KUBEFLOW_V1 = {
    ("kubeflow.org", kind): (f"{kind.lower()}s", "Namespaced")
    for kind in ("JAXJob", "MPIJob", "PaddleJob", "PyTorchJob", "TFJob", "XGBoostJob")
}
"""Not in ../shared/crds: the plurals of kubeflow/trainer v1.9.4's CRDs
(manifests/base/crds/kubeflow.org_<plural>.yaml) and kubeflow/mpi-operator v0.8.0's mpijobs,
all namespaced."""


def _operator_kinds() -> list[tuple[str, str, str]]:
    """(add-on, group, kind) of every team kind and of Volcano's Job."""
    out = []
    for kind in _team_kinds():
        matches = [(o, a) for o in OPERATORS for a in o.apis if a.kind == kind]
        assert matches, kind  # MPIJob: the MPI Operator's v2beta1 and the training operator's v1
        out.extend((operator.addon, api.group, kind) for operator, api in matches)
    volcano = serving(*VOLCANO_JOB)
    assert volcano is not None
    out.append((volcano.addon, *VOLCANO_JOB))
    return out


def _roles(platform: Platform, cluster: Cluster) -> dict[str, list[Mapping[str, Any]]]:
    view = ClusterView.of(platform, cluster)
    return {
        m.body["metadata"]["name"]: list(m.body["rules"])
        for m in tenancy.team_roles(view)
        if m.body["metadata"]["name"] in ROLES
    }


def _with_addons(cluster: Cluster, names: set[str]) -> Cluster:
    """The cluster with exactly these optional operators declared (its others kept)."""
    optional = {addon for addon, _, _ in _operator_kinds()}
    addons = {k: v for k, v in cluster.addons.items() if k not in optional}
    for name in sorted(names):
        addons[name] = Addon(name, None, {}, cluster.origin)
    return dataclasses.replace(cluster, addons=addons)


def _platforms() -> list[tuple[str, Path]]:
    return [("example", REPO), *((p.name, p) for p in sorted(CASES.iterdir()) if p.is_dir())]


@pytest.fixture(scope="module")
def loaded() -> dict[str, Platform]:
    return {name: load_platform(root).platform for name, root in _platforms()}


def _check_rule(
    platform: Platform, cluster: Cluster, plurals: dict[tuple[str, str], tuple[str, str]]
) -> int:
    """Assert the rule on one cluster; the number of (kind, role) pairs checked."""
    roles = _roles(platform, cluster)
    checked = 0
    for addon, group, kind in _operator_kinds():
        if (group, kind) in tenancy.EXCLUDED_KINDS:
            continue
        plural, scope = plurals[(group, kind)]
        assert scope == "Namespaced", (group, kind)  # a RoleBinding grants only these
        # served where any add-on defining the kind is declared (MPIJob has two)
        served = any(
            a in cluster.addons for a, g, k in _operator_kinds() if (g, k) == (group, kind)
        )
        del addon
        for role, rules in roles.items():
            for verb in ("get", "list", "watch"):
                assert allows(rules, verb, group, plural) is served, (cluster.name, role, kind)
            for verb in WRITE:
                wants = served and role != VIEWER
                assert allows(rules, verb, group, plural) is wants, (cluster.name, role, verb)
            checked += 1
    return checked


def test_every_platform_grants_exactly_the_kinds_its_clusters_serve(
    loaded: dict[str, Platform], plurals: dict[tuple[str, str], tuple[str, str]]
) -> None:
    checked = 0
    for platform in loaded.values():
        for cluster in platform.clusters.values():
            checked += _check_rule(platform, cluster, plurals)
    assert checked >= 3 * 7 * 6


@pytest.mark.parametrize("addon", sorted({a for a, _, _ in _operator_kinds()}))
def test_one_operator_more_or_less_grants_its_kinds_and_nothing_else(
    loaded: dict[str, Platform], plurals: dict[tuple[str, str], tuple[str, str]], addon: str
) -> None:
    platform = loaded["example"]
    cluster = platform.clusters["prod-east"]
    for names in (set(), {addon}, {a for a, _, _ in _operator_kinds()} - {addon}):
        _check_rule(platform, _with_addons(cluster, names), plurals)


def test_a_kind_no_installed_operator_serves_is_granted_nowhere(
    loaded: dict[str, Platform],
) -> None:
    """Spark's kinds: no add-on installs the Spark operator, so Kueue does not manage them
    either (`integrations.enabled_frameworks`); the Kubeflow v1 kinds only with their operator."""
    everything = {a for a, _, _ in _operator_kinds()}
    for platform in loaded.values():
        for cluster in platform.clusters.values():
            for variant in (cluster, _with_addons(cluster, everything)):
                for rules in _roles(platform, variant).values():
                    groups = {g for rule in rules for g in rule["apiGroups"]}
                    assert "sparkoperator.k8s.io" not in groups, variant.name
                    kubeflow = {"trainingOperator", "mpiOperator"} & set(variant.addons)
                    assert ("kubeflow.org" in groups) is bool(kubeflow), variant.name


def test_the_excluded_kinds_are_never_written(
    loaded: dict[str, Platform], plurals: dict[tuple[str, str], tuple[str, str]]
) -> None:
    everything = {a for a, _, _ in _operator_kinds()}
    platform = loaded["example"]
    cluster = _with_addons(platform.clusters["prod-east"], everything)
    roles = _roles(platform, cluster)
    for group, kind in sorted(tenancy.EXCLUDED_KINDS):
        plural, _ = plurals[(group, kind)]
        for rules in roles.values():
            for verb in ("get", *WRITE):
                assert not allows(rules, verb, group, plural), (kind, verb)


def test_raycronjob_is_left_out_because_kuberay_runs_no_controller_for_it() -> None:
    """KubeRay 1.7.0's chart starts the RayCronJob controller only behind its feature gate,
    off by default (values.yaml `featureGates`), and gpuplane writes no KubeRay values."""
    values = REPO.parent / "shared" / "charts" / "kuberay-operator-1.7.0" / "values.yaml"
    if not values.is_file():
        pytest.skip("../shared/charts is not beside this checkout")
    gates = {g["name"]: g["enabled"] for g in yaml.safe_load(values.read_text())["featureGates"]}
    assert gates["RayCronJob"] is False
    assert ("ray.io", "RayCronJob") in tenancy.EXCLUDED_KINDS
    from renderer.layers.gitops import operator_values

    assert "kuberay" not in operator_values.VALUES


def test_trainingruntimes_are_left_out_and_clustertrainingruntimes_are_cluster_scoped(
    plurals: dict[tuple[str, str], tuple[str, str]],
) -> None:
    """A namespaced TrainingRuntime would be a team's own JobSet template, whose JobSet the
    TTL policy leaves to its owner TrainJob; the cluster-scoped runtimes are the platform's."""
    assert plurals[("trainer.kubeflow.org", "TrainingRuntime")][1] == "Namespaced"
    assert plurals[("trainer.kubeflow.org", "ClusterTrainingRuntime")][1] == "Cluster"
    from renderer.layers.security import cleanup

    (jobsets,) = [k for k in cleanup.KINDS if k.name == "JobSet"]
    assert "TrainJob" in jobsets.owners  # a TrainJob's JobSet escapes the TTL policy
    assert ("trainer.kubeflow.org", "TrainingRuntime") in tenancy.EXCLUDED_KINDS


def test_the_rendered_example_roles_follow_the_cluster_files(
    plurals: dict[tuple[str, str], tuple[str, str]],
) -> None:
    """The committed ClusterRoles, read back: prod-east runs Trainer and LeaderWorkerSet,
    staging-west neither; no example cluster runs Volcano."""
    for cluster in ("prod-east", "staging-west"):
        text = (REPO / "rendered" / cluster / "tenancy" / f"clusterrole-{MEMBER}.yaml").read_text()
        rules = yaml.safe_load(text)["rules"]
        declared = yaml.safe_load((REPO / "clusters" / f"{cluster}.yaml").read_text())["spec"][
            "addons"
        ]
        for addon, group, kind in _operator_kinds():
            if (group, kind) in tenancy.EXCLUDED_KINDS:
                continue
            plural, _ = plurals[(group, kind)]
            assert allows(rules, "create", group, plural) is (addon in declared), (cluster, kind)
