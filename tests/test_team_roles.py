"""The team ClusterRoles, evaluated the way the API server's RBAC authorizer does.

Every RoleBinding the example platform renders for a team's IdP groups is resolved to its role's
rules, and a small evaluator (Kubernetes' `rbac/v1` evaluation helpers: `*` in verbs, groups and
resources, `*/subresource`, resourceNames) asks it what a member could do with kubectl: no
write on any guardrail kind, nothing cluster-scoped, no escalate, bind or impersonate, and yet
every kind the team's own workload templates need. The built-in `edit` and `admin` rules are
transcribed from Kubernetes' bootstrap policy to show the evaluator refuses what it should.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import pytest

from renderer.layers.gitops import argocd
from renderer.layers.tenancy import ROLE_FOR
from renderer.model.guardrails import GUARDRAILS, NETWORK_POLICY_GLOB, argocd_blacklist
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, render_platform
from tests.conftest import REPO, SHARED_CRDS
from tests.red_team.harness import errors

Rule = Mapping[str, Any]

WRITE = ("create", "update", "patch", "delete", "deletecollection")
ESCALATING = ("escalate", "bind", "impersonate", "approve", "sign", "*")


# --- the RBAC authorizer, after k8s.io/kubernetes pkg/apis/rbac/v1/evaluation_helpers.go --------


def _resource_matches(rule: Rule, resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for allowed in rule.get("resources", ()):
        if allowed in ("*", combined):
            return True
        if subresource and allowed == f"*/{subresource}":
            return True
    return False


def allows(
    rules: Sequence[Rule],
    verb: str,
    group: str,
    resource: str,
    subresource: str = "",
    name: str | None = None,
) -> bool:
    """Whether some rule allows the request. `name=None` asks whether any name is allowed, so a
    rule limited by resourceNames still counts as a write."""
    for rule in rules:
        if rule.get("nonResourceURLs"):
            continue
        if verb not in rule["verbs"] and "*" not in rule["verbs"]:
            continue
        if group not in rule["apiGroups"] and "*" not in rule["apiGroups"]:
            continue
        if not _resource_matches(rule, resource, subresource):
            continue
        names = rule.get("resourceNames") or []
        if not names or name is None or name in names:
            return True
    return False


# Kubernetes' bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go):
# part of system:aggregate-to-edit and system:aggregate-to-admin, which edit and admin aggregate.
BUILTIN_EDIT: tuple[Rule, ...] = (
    {
        "apiGroups": ["networking.k8s.io"],
        "resources": ["networkpolicies", "ingresses"],
        "verbs": list(WRITE),
    },
    {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
)
BUILTIN_ADMIN: tuple[Rule, ...] = (
    *BUILTIN_EDIT,
    {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles", "rolebindings"],
        "verbs": ["get", "list", "watch", *WRITE],
    },
)


def test_the_evaluator_sees_what_the_built_in_roles_allow() -> None:
    assert allows(BUILTIN_EDIT, "update", "networking.k8s.io", "networkpolicies")
    assert allows(BUILTIN_EDIT, "impersonate", "", "serviceaccounts")
    assert allows(BUILTIN_ADMIN, "create", "rbac.authorization.k8s.io", "rolebindings")
    star = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    assert allows(star, "patch", "", "resourcequotas", "status")
    sub = [{"apiGroups": [""], "resources": ["*/status"], "verbs": ["update"]}]
    assert allows(sub, "update", "", "pods", "status")
    assert not allows(sub, "update", "", "pods")
    named = [
        {
            "apiGroups": [""],
            "resources": ["limitranges"],
            "verbs": ["update"],
            "resourceNames": ["x"],
        }
    ]
    assert allows(named, "update", "", "limitranges")
    assert not allows(named, "update", "", "limitranges", name="y")


# --- what Kubernetes serves: namespaced and cluster-scoped resources --------------------------

CLUSTER_SCOPED_BUILTINS = frozenset(
    {
        ("", "namespaces"),
        ("", "nodes"),
        ("", "persistentvolumes"),
        ("", "componentstatuses"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "apiservices"),
        ("certificates.k8s.io", "certificatesigningrequests"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
        ("networking.k8s.io", "ingressclasses"),
        ("networking.k8s.io", "ipaddresses"),
        ("networking.k8s.io", "servicecidrs"),
        ("node.k8s.io", "runtimeclasses"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceslices"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "volumeattachments"),
    }
)
"""`kubectl api-resources --namespaced=false` of Kubernetes 1.33/1.34 (less the review APIs)."""

NAMESPACED_BUILTINS = frozenset(
    {
        *(
            ("", r)
            for r in (
                *("bindings", "configmaps", "endpoints", "events", "limitranges"),
                *("persistentvolumeclaims", "pods", "podtemplates", "replicationcontrollers"),
                *("resourcequotas", "secrets", "serviceaccounts", "services"),
            )
        ),
        *(("apps", r) for r in ("controllerrevisions", "daemonsets", "deployments", "replicasets")),
        ("apps", "statefulsets"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("batch", "cronjobs"),
        ("batch", "jobs"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ingresses"),
    }
)

NAMESPACED_ELSEWHERE = frozenset(
    {
        # Kubeflow training-operator v1, LeaderWorkerSet, Spark operator, KubeRay's RayService:
        # each a namespaced CRD in its project's manifests (not among ../shared/crds)
        *(
            ("kubeflow.org", r)
            for r in ("jaxjobs", "mpijobs", "mxjobs", "paddlejobs", "pytorchjobs", "tfjobs")
        ),
        ("kubeflow.org", "xgboostjobs"),
        ("leaderworkerset.x-k8s.io", "leaderworkersets"),
        ("sparkoperator.k8s.io", "sparkapplications"),
        ("sparkoperator.k8s.io", "scheduledsparkapplications"),
        ("ray.io", "rayservices"),
    }
)


def _crds() -> list[dict[str, Any]]:
    """The upstream CRDs' index (../shared/crds/index.json): group, kind, plural, scope."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    crds: list[dict[str, Any]] = json.loads((SHARED_CRDS / "index.json").read_text())
    return crds


@pytest.fixture(scope="module")
def crd_scopes() -> dict[tuple[str, str], str]:
    return {(crd["group"], crd["plural"]): crd["scope"] for crd in _crds()}


@pytest.fixture(scope="module")
def crd_plurals() -> dict[tuple[str, str], str]:
    """(group, kind) -> plural, from the upstream CRDs."""
    return {(crd["group"], crd["kind"]): crd["plural"] for crd in _crds()}


# --- the example platform's bindings ----------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Rendered:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    rendered = render_platform(REPO, OutputValidator([SHARED_CRDS]))
    assert errors(rendered.diagnostics) == []
    return rendered


def _objects(rendered: Rendered, cluster: str, kind: str) -> list[dict[str, Any]]:
    return [dict(m.body) for m in rendered.manifests[cluster] if m.body["kind"] == kind]


def team_bindings(rendered: Rendered) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(cluster, RoleBinding, the ClusterRole it grants) of every binding to an IdP group."""
    for cluster in sorted(rendered.manifests):
        roles = {r["metadata"]["name"]: r for r in _objects(rendered, cluster, "ClusterRole")}
        for binding in _objects(rendered, cluster, "RoleBinding"):
            if not any(s["kind"] == "Group" for s in binding["subjects"]):
                continue
            ref = binding["roleRef"]
            assert ref["kind"] == "ClusterRole", binding["metadata"]
            assert ref["name"] in roles, f"{ref['name']} is not rendered: a built-in role?"
            yield cluster, binding, roles[ref["name"]]


def test_every_team_group_is_bound_to_a_gpuplane_role_not_a_built_in(example: Rendered) -> None:
    found = list(team_bindings(example))
    namespaces = {
        (c, m.body["metadata"]["name"])
        for c in example.manifests
        for m in example.manifests[c]
        if m.body["kind"] == "Namespace" and m.layer == "tenancy"
    }
    bound = {(c, b["metadata"]["namespace"]) for c, b, _ in found}
    assert bound == namespaces  # every team namespace has its bindings
    for _, binding, role in found:
        assert binding["roleRef"]["name"] not in ("admin", "edit", "view", "cluster-admin")
        assert role["metadata"]["name"] in {name for _, name in ROLE_FOR}


def test_the_roles_aggregate_nothing_and_into_nothing(example: Rendered) -> None:
    for _, _, role in team_bindings(example):
        assert "aggregationRule" not in role
        labels = role["metadata"].get("labels", {})
        assert not [k for k in labels if k.startswith("rbac.authorization.k8s.io/aggregate-to")]


@pytest.mark.parametrize("guardrail", GUARDRAILS, ids=lambda g: f"{g.group or 'core'}/{g.kind}")
def test_no_binding_writes_a_guardrail(example: Rendered, guardrail: Any) -> None:
    for cluster, binding, role in team_bindings(example):
        for verb in (*WRITE, *ESCALATING):
            for subresource in ("", "status"):
                assert not allows(
                    role["rules"], verb, guardrail.group, guardrail.resource, subresource
                ), (cluster, binding["metadata"], verb, guardrail.kind, subresource)


def test_no_binding_escalates_or_writes_a_status(example: Rendered) -> None:
    for _, _, role in team_bindings(example):
        for rule in role["rules"]:
            assert not set(rule["verbs"]) & set(ESCALATING), rule
            assert "*" not in rule["apiGroups"] and "*" not in rule["resources"], rule
            written = set(rule["verbs"]) & set(WRITE)
            for resource in rule["resources"]:
                assert not (written and resource.endswith("/status")), rule


def test_no_binding_writes_anything_cluster_scoped(
    example: Rendered, crd_scopes: dict[tuple[str, str], str]
) -> None:
    for cluster, _, role in team_bindings(example):
        for rule in role["rules"]:
            if not set(rule["verbs"]) & set(WRITE):
                continue
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    base = (group, resource.split("/")[0])
                    assert base not in CLUSTER_SCOPED_BUILTINS, (cluster, base)
                    assert crd_scopes.get(base) != "Cluster", (cluster, base)
                    known = (
                        base in NAMESPACED_BUILTINS
                        or crd_scopes.get(base) == "Namespaced"
                        or base in NAMESPACED_ELSEWHERE
                    )
                    assert known, f"{base} is written but not known to be namespaced"


def _role(example: Rendered, name: str) -> list[Rule]:
    for _, _, role in team_bindings(example):
        if role["metadata"]["name"] == name:
            return list(role["rules"])
    raise AssertionError(f"no binding grants {name}")


BUILTIN_KINDS = {
    ("batch", "Job"): "jobs",
    ("batch", "CronJob"): "cronjobs",
    ("apps", "Deployment"): "deployments",
    ("apps", "StatefulSet"): "statefulsets",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("", "ConfigMap"): "configmaps",
    ("", "Service"): "services",
    ("", "Pod"): "pods",
}


def test_members_can_create_what_their_workload_templates_render(
    example: Rendered, crd_plurals: dict[tuple[str, str], str]
) -> None:
    member = _role(example, "gpuplane-team-member")
    # the templates are files a team member applies with kubectl in the team's namespace
    kinds = {
        (v.body["apiVersion"].rpartition("/")[0], v.body["kind"])
        for cluster in example.values
        for v in example.values[cluster]
        if v.layer == "templates" and "kind" in v.body
    }
    assert {("batch", "Job"), ("", "PersistentVolumeClaim")} <= kinds
    for group, kind in sorted(kinds):
        resource = BUILTIN_KINDS.get((group, kind)) or crd_plurals[(group, kind)]
        for verb in ("create", "get", "list", "watch", "update", "patch", "delete"):
            assert allows(member, verb, group, resource), (verb, group, resource)


def test_members_run_and_debug_their_pods(example: Rendered) -> None:
    member = _role(example, "gpuplane-team-member")
    assert allows(member, "get", "", "pods", "log")
    for sub in ("exec", "attach", "portforward"):
        assert allows(member, "create", "", "pods", sub)
    assert allows(member, "get", "", "secrets")
    assert not allows(member, "create", "", "secrets")
    assert allows(member, "get", "kueue.x-k8s.io", "localqueues")
    assert allows(member, "get", "kueue.x-k8s.io", "workloads")
    assert not allows(member, "impersonate", "", "serviceaccounts")
    assert not allows(member, "create", "", "serviceaccounts", "token")
    assert not allows(member, "create", "", "pods", "binding")
    assert not allows(member, "create", "", "bindings")


def test_owners_add_secrets_and_viewers_see_none(example: Rendered) -> None:
    owner = _role(example, "gpuplane-team-owner")
    viewer = _role(example, "gpuplane-team-viewer")
    for cluster, binding, role in team_bindings(example):
        if binding["roleRef"]["name"] == "gpuplane-team-owner":
            # where Secrets come from the store, only its operator writes them (test_secret_refs)
            from_store = example.platform.clusters[cluster].secret_store is not None
            assert allows(role["rules"], "create", "", "secrets") is not from_store, cluster
    assert not allows(owner, "create", "rbac.authorization.k8s.io", "rolebindings")
    assert not allows(viewer, "get", "", "secrets")
    assert not allows(viewer, "create", "batch", "jobs")
    assert allows(viewer, "get", "", "resourcequotas")
    assert allows(viewer, "get", "", "pods", "log")


# --- Argo CD reads the same list ----------------------------------------------------------------


def _blacklisted(items: Sequence[Mapping[str, str]], group: str, kind: str) -> bool:
    """Argo CD's isResourceInList: kind, then group, each a glob (Go's filepath.Match)."""
    return any(fnmatchcase(kind, i["kind"]) and fnmatchcase(group, i["group"]) for i in items)


def test_the_team_appprojects_blacklist_every_guardrail(example: Rendered) -> None:
    projects = [
        dict(m.body)
        for cluster in example.manifests
        for m in example.manifests[cluster]
        if m.body["kind"] == "AppProject" and m.body["metadata"]["name"].startswith("team-")
    ]
    assert projects
    for project in projects:
        blacklist = project["spec"]["namespaceResourceBlacklist"]
        for guardrail in GUARDRAILS:
            assert _blacklisted(blacklist, guardrail.group, guardrail.kind), guardrail
        assert project["spec"]["clusterResourceWhitelist"] == []


def test_the_gitops_layer_uses_the_model_list() -> None:
    assert set(map(tuple, (sorted(e.items()) for e in argocd_blacklist()))) <= set(
        map(tuple, (sorted(e.items()) for e in argocd.GUARDRAILS))
    )
    assert NETWORK_POLICY_GLOB in argocd.GUARDRAILS
    # every network policy kind the model names is caught by the one glob
    for guardrail in GUARDRAILS:
        if guardrail.network_policy:
            assert _blacklisted([NETWORK_POLICY_GLOB], guardrail.group, guardrail.kind)


def test_members_submit_volcano_jobs_but_never_pick_a_volcano_queue(example: Rendered) -> None:
    # Volcano Jobs where the cluster runs Volcano only (tests/test_team_role_kinds.py)
    member = _role(example, "gpuplane-team-member")
    assert not allows(member, "create", "batch.volcano.sh", "jobs")
    volcano = render_platform(
        REPO / "tests" / "cases" / "render" / "volcano", OutputValidator([SHARED_CRDS])
    )
    assert errors(volcano.diagnostics) == []
    member = _role(volcano, "gpuplane-team-member")
    assert allows(member, "create", "batch.volcano.sh", "jobs")
    assert not allows(member, "create", "scheduling.volcano.sh", "queues")
    assert not allows(member, "update", "scheduling.volcano.sh", "podgroups")
