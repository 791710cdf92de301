"""Attacks on the acceptance suites: a team lead fakes the team's own acceptance results, by
editing the probe Jobs, their pods or their logs, by writing the results ConfigMaps, or by
sending work through the platform's own queue.

The suites' Workflows run in `gpuplane-acceptance` (the results ConfigMaps are kept there) and
their probe Jobs in `gpuplane-acceptance-jobs`, admitted by the platform ClusterQueue
`<queue>-acceptance`. Each attack asserts, on the rendered output of the example platform or of
the attacker's edit of it, that the team got no reach into either (taking the namespaces' names is
refused by `reserved-namespace`, in test_names.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml

from renderer.output.manifest import Manifest
from renderer.pipeline import Rendered
from tests.conftest import REPO, render_clean
from tests.red_team.harness import Attempt, errors, refused_on

SUITE = "gpuplane-acceptance"
JOBS = "gpuplane-acceptance-jobs"
SUITE_ACCOUNT = {"kind": "ServiceAccount", "name": "gpuplane-acceptance", "namespace": SUITE}
"""The only subject bound in the suites' namespaces: the Workflows' own ServiceAccount."""


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


def manifests(rendered: Rendered) -> Iterator[tuple[str, Manifest]]:
    for cluster in sorted(rendered.manifests):
        for manifest in rendered.manifests[cluster]:
            yield cluster, manifest


def team_namespaces(rendered: Rendered) -> dict[str, dict[str, str]]:
    """Every rendered team Namespace (tenancy layer), with its labels."""
    return {
        m.name: dict(m.body["metadata"]["labels"])
        for _, m in manifests(rendered)
        if m.kind == "Namespace" and m.layer == "tenancy"
    }


def team_groups(rendered: Rendered) -> set[str]:
    """The IdP groups bound anywhere in a team namespace: the team leads and members."""
    teams = team_namespaces(rendered)
    return {
        s["name"]
        for _, m in manifests(rendered)
        if m.kind == "RoleBinding" and m.namespace in teams
        for s in m.body.get("subjects", [])
        if s["kind"] == "Group"
    }


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector evaluated on a set of labels, as the API machinery does
    (matchLabels and every matchExpression must hold)."""
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def with_name(name: str, labels: Mapping[str, str]) -> dict[str, str]:
    """A Namespace's labels as the API server keeps them: with `kubernetes.io/metadata.name`."""
    return {**labels, "kubernetes.io/metadata.name": name}


# --- rights: a team owner edits a probe Job, its pod or its log, or writes the results --------


@pytest.mark.parametrize(
    ("namespace", "attack"),
    [
        (JOBS, "edit or replace a probe Job so its pods print good results"),
        (JOBS, "exec into a probe pod, or create a pod labelled like rank 0, to fake its log"),
        (JOBS, "delete the probe Jobs of a run, so a failing step leaves no trace"),
        (SUITE, "apply a results ConfigMap acceptance-<pool> with figures of its own"),
        (SUITE, "edit a WorkflowTemplate so the report judges nothing"),
    ],
)
def test_no_team_is_bound_in_the_suites_namespaces(
    example: Rendered, namespace: str, attack: str
) -> None:
    """Whatever the attack, it needs a right in the namespace: every RoleBinding there binds
    only the suite's ServiceAccount, and no ClusterRoleBinding binds a team group (which would
    reach every namespace)."""
    groups = team_groups(example)
    assert groups  # the example binds its teams' IdP groups in their namespaces
    bindings = [m for _, m in manifests(example) if m.kind == "RoleBinding"]
    inside = [m for m in bindings if m.namespace == namespace]
    assert inside, attack  # the suite's own binding is there
    for binding in inside:
        assert binding.body["subjects"] == [SUITE_ACCOUNT], (attack, binding.path)
    for _, m in manifests(example):
        if m.kind == "ClusterRoleBinding":
            bound = {s["name"] for s in m.body.get("subjects", []) if s["kind"] == "Group"}
            assert not bound & groups, (attack, m.path)


WINDOW_RIGHTS = {
    ("", "nodes", "get"),
    ("", "nodes", "list"),
    ("", "nodes", "patch"),
    ("", "pods", "list"),
    ("", "pods/eviction", "create"),
}
"""All the suite's ServiceAccount may do outside its two namespaces, and only on a cluster with an
acceptance window: taint the pool's nodes, find the pods on them and evict those (the Eviction
API honours PodDisruptionBudgets)."""


def rights(rendered: Rendered, cluster: str, namespace: str | None) -> set[tuple[str, str, str]]:
    """What the suite's ServiceAccount may do in `namespace` (None: cluster-scoped objects) on
    `cluster`, as Kubernetes' RBAC authorizer grants it: the rules of every ClusterRole a
    ClusterRoleBinding binds it to, and of the Roles and ClusterRoles a RoleBinding in that
    namespace binds it to. A wildcard stays `*` (and fails the comparisons)."""
    objects = {(m.kind, m.namespace, m.name): m.body for m in rendered.manifests[cluster]}
    granted: set[tuple[str, str, str]] = set()
    for (kind, ns, _), body in objects.items():
        if SUITE_ACCOUNT not in body.get("subjects", []):
            continue
        if kind == "ClusterRoleBinding" or (kind == "RoleBinding" and ns == namespace):
            ref = body["roleRef"]
            role_ns = ns if ref["kind"] == "Role" else None
            role = objects[(ref["kind"], role_ns, ref["name"])]
            for rule in role["rules"]:
                granted |= {
                    (g, r, v)
                    for g in rule["apiGroups"]
                    for r in rule["resources"]
                    for v in rule["verbs"]
                }
    return granted


def test_the_suites_account_has_no_right_in_a_team_namespace(example: Rendered) -> None:
    """A team cannot lure the suite into its namespace either: nothing binds the suite's
    ServiceAccount there, so no probe, claim or Service of the suite lives where a team writes.
    Where the cluster has an acceptance window, one ClusterRole gives it cluster-wide exactly
    WINDOW_RIGHTS (no wildcard, no write but the node patch and evictions), bound to it alone;
    elsewhere it has nothing outside its two namespaces."""
    teams = team_namespaces(example)
    windowed = {
        c for c in example.manifests if example.platform.clusters[c].acceptance_window is not None
    }
    assert windowed == {"prod-east"}
    for cluster, m in manifests(example):
        if m.kind in ("RoleBinding", "ClusterRoleBinding") and SUITE_ACCOUNT in m.body.get(
            "subjects", []
        ):
            if m.kind == "ClusterRoleBinding":
                assert cluster in windowed, m.path
                assert m.body["subjects"] == [SUITE_ACCOUNT], m.path
                assert m.body["roleRef"]["kind"] == "ClusterRole", m.path
            else:
                assert m.namespace in (SUITE, JOBS), m.path
        if m.layer == "workflows":
            assert m.namespace not in teams, m.path
    for cluster in example.manifests:
        expected = WINDOW_RIGHTS if cluster in windowed else set()
        for name in teams:
            if any(m.name == name for m in example.manifests[cluster] if m.kind == "Namespace"):
                assert rights(example, cluster, name) == expected, (cluster, name)
        assert rights(example, cluster, None) == expected
        assert not any("*" in right for right in rights(example, cluster, JOBS))


def test_the_window_rights_are_the_least_the_window_steps_use(example: Rendered) -> None:
    """Each right of WINDOW_RIGHTS is an API call of the window's script (read, then patch, a
    node; list the pods on a node; post an eviction), and it makes no other: nothing it may not
    do, nothing granted for nothing."""
    from workflows.suites.scripts import WINDOW

    calls = {
        ("", "nodes", "get"): 'call("GET", "/api/v1/nodes/"',
        ("", "nodes", "list"): 'listed("/api/v1/nodes"',
        ("", "nodes", "patch"): '"PATCH", "/api/v1/nodes/"',
        ("", "pods", "list"): 'listed("/api/v1/pods"',
        ("", "pods/eviction", "create"): '/eviction"',
    }
    assert set(calls) == WINDOW_RIGHTS
    for right, text in calls.items():
        assert text in WINDOW, right
    # GET node, PATCH node, POST eviction, and listed's GET: no other request
    assert sorted(re.findall(r'call\(\s*"([A-Z]+)"', WINDOW)) == ["GET", "GET", "PATCH", "POST"]
    assert "DELETE" not in WINDOW and '"PUT"' not in WINDOW


def embedded(body: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object a WorkflowTemplate creates or reads (its resource templates), and the
    namespace of every kubectl step."""
    for template in body["spec"]["templates"]:
        manifest = template.get("resource", {}).get("manifest")
        if manifest == "{{inputs.parameters.manifest}}":
            continue  # the evidence ConfigMap: `acceptance record --namespace`, below
        if manifest is not None:
            yield template["name"], yaml.safe_load(manifest)
        args = template.get("container", {}).get("args", [])
        for arg in args:
            if arg.startswith("--namespace="):
                yield template["name"], {"metadata": {"namespace": arg.split("=", 1)[1]}}
            if arg == "--configmap":  # record writes the ConfigMap the next step applies
                namespace = args[args.index("--namespace") + 1]
                yield template["name"], {"kind": "ConfigMap", "metadata": {"namespace": namespace}}


def test_every_probe_job_runs_in_the_platforms_namespace(example: Rendered) -> None:
    """The probe Jobs, their workspace claims and every kubectl step are in the Jobs
    namespace, the results ConfigMaps in the suite's: never in a namespace a team administers."""
    teams = team_namespaces(example)
    checked = 0
    for _, m in manifests(example):
        if m.kind != "WorkflowTemplate":
            continue
        for name, obj in embedded(m.body):
            namespace = obj["metadata"]["namespace"]
            assert namespace not in teams, (m.path, name)
            kind = obj.get("kind")
            expected = SUITE if kind == "ConfigMap" else JOBS
            assert namespace == expected, (m.path, name, kind)
            checked += 1
    assert checked > 100


# --- the platform's queue -------------------------------------------------------------------------


def platform_queues(rendered: Rendered) -> list[Manifest]:
    return [
        m
        for _, m in manifests(rendered)
        if m.kind == "ClusterQueue" and m.name.endswith("-acceptance")
    ]


def test_a_team_local_queue_naming_the_platform_queue_is_never_admitted(
    example: Rendered,
) -> None:
    """Kueue lets a LocalQueue in any namespace name any ClusterQueue (`spec.clusterQueue` is
    only a name); admission then requires the ClusterQueue's namespaceSelector to select the
    workload's namespace. The platform queue's selects the Jobs namespace and no team
    namespace, so a team's workloads sent to it stay inadmissible (and the team may not write
    LocalQueues: the guardrails)."""
    teams = team_namespaces(example)
    queues = platform_queues(example)
    assert len(queues) == 2  # one per cohort with a tested pool
    jobs_namespace = next(
        m.body["metadata"]["labels"] for _, m in manifests(example) if m.name == JOBS
    )
    for queue in queues:
        selector = queue.body["spec"]["namespaceSelector"]
        assert selects(selector, with_name(JOBS, jobs_namespace)), queue.path
        for name, labels in teams.items():
            assert not selects(selector, with_name(name, labels)), (queue.path, name)


def test_no_team_queue_admits_from_the_jobs_namespace(example: Rendered) -> None:
    """The reverse: the suite's Jobs borrow only through the platform queue, and no team's
    ClusterQueue selects the Jobs namespace, so the suite never spends a team's own quota
    (and no team queue's selector can be widened to it: a team may not name it)."""
    jobs_namespace = next(
        m.body["metadata"]["labels"] for _, m in manifests(example) if m.name == JOBS
    )
    platform = {m.name for m in platform_queues(example)} | {m.name for m in window_queues(example)}
    team_queues = [
        m for _, m in manifests(example) if m.kind == "ClusterQueue" and m.name not in platform
    ]
    assert team_queues
    for queue in team_queues:
        selector = queue.body["spec"]["namespaceSelector"]
        assert not selects(selector, with_name(JOBS, jobs_namespace)), queue.path


def window_queues(rendered: Rendered) -> list[Manifest]:
    return [
        m
        for _, m in manifests(rendered)
        if m.kind == "ClusterQueue" and m.name.startswith("gpuplane-window-")
    ]


def test_no_team_can_submit_to_a_window_queue_and_it_lends_nothing(example: Rendered) -> None:
    """The window's ClusterQueues hold whole pools: only the Jobs namespace may use them, and,
    in no cohort, they lend nothing to a team and borrow nothing from one."""
    teams = team_namespaces(example)
    queues = window_queues(example)
    assert {q.name for q in queues} == {
        "gpuplane-window-h100-train",
        "gpuplane-window-a100-mig",
        "gpuplane-window-l40s-infer",
    }  # prod-east's tested pools; staging-west has no window
    jobs_namespace = next(
        m.body["metadata"]["labels"] for _, m in manifests(example) if m.name == JOBS
    )
    for queue in queues:
        spec = queue.body["spec"]
        assert "cohortName" not in spec and "cohort" not in spec, queue.path
        selector = spec["namespaceSelector"]
        assert selects(selector, with_name(JOBS, jobs_namespace)), queue.path
        for name, labels in teams.items():
            assert not selects(selector, with_name(name, labels)), (queue.path, name)


def test_the_platform_queue_holds_nothing_a_team_is_promised(example: Rendered) -> None:
    """Nominal 0 on every resource: the suite runs only on capacity the teams lend, never
    preempts a team's workload, and under fair sharing has weight 0 (always last to borrow)."""
    for queue in platform_queues(example):
        spec = queue.body["spec"]
        assert spec["preemption"] == {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}
        for group in spec["resourceGroups"]:
            for flavor in group["flavors"]:
                assert {str(r["nominalQuota"]) for r in flavor["resources"]} == {"0"}


def test_a_new_team_cannot_take_the_platform_queue_by_purpose(attempt: Attempt) -> None:
    """A new team `prod` with a namespace of purpose `acceptance` would render the
    ClusterQueue `prod-acceptance`, the platform queue of cohort prod: the purpose is not one
    a team may declare, and the finding lands on the new file."""
    text = attempt.path("teams/speech.yaml").read_text().replace("name: speech\n", "name: prod\n")
    text = text.replace("name: speech-", "name: prod-")
    text = text.replace("purpose: notebooks", "purpose: acceptance", 1)
    assert "purpose: acceptance" in text
    attempt.write("teams/prod.yaml", text)
    refused_on(attempt.findings(), "teams/prod.yaml", "schema-invalid-value")


def test_a_team_that_lends_nothing_starves_only_its_own_pool_s_suite(attempt: Attempt) -> None:
    """A team that stops lending (lendingLimit 0 on every pool) changes what the platform queue
    may borrow, never whose quota it spends: the render is clean or refused on the team's file,
    and the suite still runs only in the platform's namespaces."""
    team = attempt.team("llm")
    for quota in team["spec"]["gpus"]:
        quota["lendingLimit"] = 0
    attempt.save_team("llm", team)
    rendered = attempt.render()
    found = errors(rendered.diagnostics)
    assert all(d.at.file == "teams/llm.yaml" for d in found), [str(d) for d in found]
    if found:
        return
    teams = team_namespaces(rendered)
    for _, m in manifests(rendered):
        if m.kind == "WorkflowTemplate":
            for name, obj in embedded(m.body):
                assert obj["metadata"]["namespace"] not in teams, (m.path, name)
