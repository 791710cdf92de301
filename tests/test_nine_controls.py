"""The guide's nine security and multi-tenancy controls, asserted on the rendered example
platform: what the cluster would hold, not what the input says.

Each test reads the rendered objects of every cluster as the API server would receive them. The
admission controls are checked by running the rendered policies (tests/admission_cel.py, the
API server's order of evaluation) against requests a team member could send, with the policies
selected by their bindings' namespace selectors and resource rules, as the API server selects
them. The expectations come from the guide (docs/security.md lists the controls) and from
Kubernetes' semantics, not from the rendered files.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from renderer.model.platform import Namespace, Platform, Team
from renderer.model.reserved import platform_namespaces
from renderer.output.manifest import Values
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, render_platform
from tests.admission_cel import evaluate, kueue_webhook
from tests.conftest import REPO, copy_inputs

pytestmark = pytest.mark.slow

TEAM_LABEL = "gpuplane.dev/team"
COST_LABEL = "gpuplane.dev/cost-center"
GUARDED_WRITES = ("create", "update", "patch", "delete", "deletecollection", "*")


@pytest.fixture(scope="module")
def example() -> Rendered:
    """The example platform, rendered as `gpuplane render` renders it (no CRDs needed: the
    controls are on built-in kinds and admission policies)."""
    rendered = render_platform(REPO, OutputValidator([]))
    assert not [d for d in rendered.diagnostics if d.severity.value == "error"], (
        rendered.diagnostics
    )
    return rendered


def objects(rendered: Rendered, cluster: str) -> list[dict[str, Any]]:
    return [m.body for m in rendered.manifests[cluster]]


def team_namespaces(platform: Platform) -> Iterator[tuple[Team, Namespace]]:
    for team in sorted(platform.teams.values(), key=lambda t: t.name):
        for ns in team.namespaces:
            yield team, ns


def one(found: list[dict[str, Any]], what: str) -> dict[str, Any]:
    assert len(found) == 1, f"{what}: {len(found)} found"
    return found[0]


def namespaced(rendered: Rendered, cluster: str, kind: str, ns: str) -> list[dict[str, Any]]:
    return [
        o
        for o in objects(rendered, cluster)
        if o["kind"] == kind and o["metadata"].get("namespace") == ns
    ]


# --- the API server's admission, as far as the rendered policies go ---------------------------


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions", []):
        present, value = expr["key"] in labels, labels.get(expr["key"])
        op = expr["operator"]
        if op == "In" and value not in expr["values"]:
            return False
        if op == "NotIn" and present and value in expr["values"]:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _rule_matches(rules: list[dict[str, Any]], group: str, resource: str, op: str) -> bool:
    return any(
        (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (resource in r["resources"] or "*" in r["resources"])
        and (op in r["operations"] or "*" in r["operations"])
        for r in rules
    )


def denials(
    rendered: Rendered, cluster: str, obj: dict[str, Any], namespace: dict[str, Any]
) -> list[str]:
    """What the cluster's bound ValidatingAdmissionPolicies say to a team member's CREATE of
    `obj` in `namespace` (after Kueue's mutating webhook, which runs first)."""
    bodies = objects(rendered, cluster)
    policies = {
        o["metadata"]["name"]: o for o in bodies if o["kind"] == "ValidatingAdmissionPolicy"
    }
    group = obj["apiVersion"].rpartition("/")[0]
    resource = obj["kind"].lower() + "s"
    labels = namespace["metadata"]["labels"]
    found: list[str] = []
    for binding in bodies:
        if binding["kind"] != "ValidatingAdmissionPolicyBinding":
            continue
        spec = binding["spec"]
        if "Deny" not in spec["validationActions"]:
            continue
        selector = spec.get("matchResources", {}).get("namespaceSelector", {})
        if not _selects(selector, labels):
            continue
        policy = policies[spec["policyName"]]
        constraints = policy["spec"]["matchConstraints"]
        if not _selects(constraints.get("namespaceSelector", {}), labels):
            continue
        rules = constraints["resourceRules"]
        if not _rule_matches(rules, group, resource, "CREATE"):
            continue
        found += evaluate(policy, kueue_webhook(obj), namespace=namespace)
    return found


def namespace_object(rendered: Rendered, cluster: str, ns: str) -> dict[str, Any]:
    """The rendered Namespace as the API server stores it: with the immutable
    `kubernetes.io/metadata.name` label it sets on every namespace (NamespaceDefaultLabelName)."""
    body = one(
        [
            o
            for o in objects(rendered, cluster)
            if o["kind"] == "Namespace" and o["metadata"]["name"] == ns
        ],
        f"Namespace {ns}",
    )
    stored = copy.deepcopy(body)
    stored["metadata"]["labels"]["kubernetes.io/metadata.name"] = ns
    return stored


def team_pod(team: Team, ns: Namespace, **spec: Any) -> dict[str, Any]:
    """A pod as a member of the team would write it: the team's labels, its first image prefix,
    and its priority (a pod without an owner is a Kueue workload of its own: below Kubernetes
    1.36 the priority policy requires the label, docs/security.md)."""
    image = (team.images[0] if team.images else "registry.example.com/x/") + "app:1"
    labels = {TEAM_LABEL: team.name, COST_LABEL: team.cost_center}
    if team.priority:
        labels["kueue.x-k8s.io/priority-class"] = f"{team.queue}-{team.priority}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns.name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": image}], **spec},
    }


# --- 1. a namespace per team and purpose -------------------------------------------------------


def test_1_every_team_namespace_exists_once_labelled_with_team_and_purpose(
    example: Rendered,
) -> None:
    platform = example.platform
    for team, ns in team_namespaces(platform):
        body = namespace_object(example, ns.cluster, ns.name)
        labels = body["metadata"]["labels"]
        assert labels[TEAM_LABEL] == team.name
        assert labels[COST_LABEL] == team.cost_center
        assert labels["gpuplane.dev/purpose"] == ns.purpose
        cluster = platform.clusters[ns.cluster]
        assert ns.name not in platform_namespaces(platform, cluster)
        assert not ns.name.startswith("kube-")
    names = [(ns.cluster, ns.name) for _, ns in team_namespaces(platform)]
    assert len(names) == len(set(names))


def test_1_objects_in_a_team_namespace_belong_to_that_team(example: Rendered) -> None:
    owner = {(ns.cluster, ns.name): team.name for team, ns in team_namespaces(example.platform)}
    for cluster in example.manifests:
        for body in objects(example, cluster):
            meta = body["metadata"]
            where = (cluster, meta.get("namespace"))
            if where not in owner:
                continue
            team = meta.get("labels", {}).get(TEAM_LABEL)
            assert team in (None, owner[where]), (cluster, body["kind"], meta["name"])


# --- 2. RBAC bound to IdP groups --------------------------------------------------------------


def test_2_team_access_is_rolebindings_of_the_teams_groups_to_gpuplanes_team_roles(
    example: Rendered,
) -> None:
    platform = example.platform
    for team, ns in team_namespaces(platform):
        prefix = platform.clusters[ns.cluster].group_prefix
        own = {prefix + g for g in (*team.owners, *team.members, *team.viewers)}
        bindings = namespaced(example, ns.cluster, "RoleBinding", ns.name)
        team_bindings = [b for b in bindings if b["metadata"].get("labels", {}).get(TEAM_LABEL)]
        assert team_bindings, ns.name
        for binding in team_bindings:
            assert binding["roleRef"]["kind"] == "ClusterRole"
            assert binding["roleRef"]["name"].startswith("gpuplane-team-")
            for subject in binding["subjects"]:
                assert subject["kind"] == "Group" and subject["name"] in own
        granted = {s["name"] for b in team_bindings for s in b["subjects"]}
        assert granted == own


def test_2_no_cluster_wide_binding_names_a_team_group_and_no_team_role_writes_rbac(
    example: Rendered,
) -> None:
    platform = example.platform
    for name, cluster in platform.clusters.items():
        team_groups = {
            cluster.group_prefix + g
            for t in platform.teams.values()
            for g in (*t.owners, *t.members, *t.viewers)
        }
        bodies = objects(example, name)
        for body in bodies:
            if body["kind"] == "ClusterRoleBinding":
                assert not {s["name"] for s in body.get("subjects", [])} & team_groups
        roles = [
            b
            for b in bodies
            if b["kind"] == "ClusterRole" and b["metadata"]["name"].startswith("gpuplane-team-")
        ]
        assert len(roles) == 3
        for role in roles:
            for rule in role["rules"]:
                if "rbac.authorization.k8s.io" in rule.get("apiGroups", []):
                    assert not set(rule["verbs"]) & {*GUARDED_WRITES, "bind", "escalate"}
                assert "impersonate" not in rule["verbs"] and "*" not in rule["verbs"]


# --- 3. ResourceQuota and LimitRange ------------------------------------------------------------


def test_3_every_team_namespace_caps_gpus_cpu_memory_and_storage(example: Rendered) -> None:
    for _, ns in team_namespaces(example.platform):
        quota = one(namespaced(example, ns.cluster, "ResourceQuota", ns.name), ns.name)
        hard = quota["spec"]["hard"]
        for key in ("requests.cpu", "requests.memory", "requests.storage"):
            assert key in hard, (ns.name, key)
        gpu_keys = [k for k in hard if "nvidia.com" in k]
        assert gpu_keys, ns.name  # GPUs are capped (0 where the team has no quota)
        limits = one(namespaced(example, ns.cluster, "LimitRange", ns.name), ns.name)
        (container,) = [x for x in limits["spec"]["limits"] if x["type"] == "Container"]
        assert {"cpu", "memory"} <= set(container["defaultRequest"])


# --- 4. privileged pods, host mounts, host network, device access -----------------------------


HOSTILE_SPECS: dict[str, dict[str, Any]] = {
    "hostNetwork": {"hostNetwork": True},
    "hostPID": {"hostPID": True},
    "hostPath": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
}


@pytest.mark.parametrize("case", [*HOSTILE_SPECS, "privileged", "hostPort", "SYS_ADMIN"])
def test_4_host_level_pods_are_refused_in_every_team_namespace(
    example: Rendered, case: str
) -> None:
    for team, ns in team_namespaces(example.platform):
        pod = team_pod(team, ns, **HOSTILE_SPECS.get(case, {}))
        container = pod["spec"]["containers"][0]
        if case == "privileged":
            container["securityContext"] = {"privileged": True}
        elif case == "hostPort":
            container["ports"] = [{"containerPort": 80, "hostPort": 80}]
        elif case == "SYS_ADMIN":
            container["securityContext"] = {"capabilities": {"add": ["SYS_ADMIN"]}}
        namespace = namespace_object(example, ns.cluster, ns.name)
        assert denials(example, ns.cluster, pod, namespace), (case, ns.name)
        labels = namespace["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] in ("baseline", "restricted")


def test_4_a_plain_team_pod_is_admitted_so_the_refusals_above_mean_something(
    example: Rendered,
) -> None:
    for team, ns in team_namespaces(example.platform):
        pod = team_pod(team, ns)
        namespace = namespace_object(example, ns.cluster, ns.name)
        assert denials(example, ns.cluster, pod, namespace) == [], ns.name


def test_4_gpus_are_reachable_only_through_the_queue(example: Rendered) -> None:
    """A GPU pod Kueue would not gate (it claims a Job owner, so Kueue's webhook skips it) is
    refused: a team cannot take GPUs around its ClusterQueue."""
    for team, ns in team_namespaces(example.platform):
        if example.platform.clusters[ns.cluster].scheduler != "kueue":
            continue
        pod = team_pod(team, ns)
        pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": "1", "controller": True}
        ]
        namespace = namespace_object(example, ns.cluster, ns.name)
        assert denials(example, ns.cluster, pod, namespace), ns.name


# --- 5. secrets by reference only ------------------------------------------------------------


def test_5_secrets_come_by_reference(example: Rendered) -> None:
    for team, ns in team_namespaces(example.platform):
        pod = team_pod(team, ns)
        pod["spec"]["containers"][0]["env"] = [{"name": "DB_PASSWORD", "value": "hunter2hunter2"}]
        namespace = namespace_object(example, ns.cluster, ns.name)
        assert denials(example, ns.cluster, pod, namespace), ns.name
        pod["spec"]["containers"][0]["env"] = [
            {
                "name": "DB_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}},
            }
        ]
        assert denials(example, ns.cluster, pod, namespace) == [], ns.name
        if example.platform.clusters[ns.cluster].secret_store is not None:
            stores = namespaced(example, ns.cluster, "SecretStore", ns.name)
            assert len(stores) == 1, ns.name


# --- 6. image registries per team ------------------------------------------------------------


def test_6_images_only_from_the_teams_registries(example: Rendered) -> None:
    for team, ns in team_namespaces(example.platform):
        namespace = namespace_object(example, ns.cluster, ns.name)
        for image in ("docker.io/library/busybox:1", "registry.example.com.evil.io/x/y:1"):
            pod = team_pod(team, ns)
            pod["spec"]["containers"][0]["image"] = image
            assert denials(example, ns.cluster, pod, namespace), (ns.name, image)
        others = {
            p
            for t in example.platform.teams.values()
            for p in t.images
            if t.name != team.name and not any(p.startswith(q) for q in team.images)
        }
        for prefix in sorted(others):
            pod = team_pod(team, ns)
            pod["spec"]["containers"][0]["image"] = prefix + "app:1"
            assert denials(example, ns.cluster, pod, namespace), (ns.name, prefix)


# --- 7. network policy ---------------------------------------------------------------------


def test_7_default_deny_and_only_declared_narrow_egress(example: Rendered) -> None:
    for team, ns in team_namespaces(example.platform):
        policies = namespaced(example, ns.cluster, "NetworkPolicy", ns.name)
        deny = [
            p
            for p in policies
            if p["spec"]["podSelector"] == {}
            and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
            and "ingress" not in p["spec"]
            and "egress" not in p["spec"]
        ]
        assert deny, ns.name
        cluster = example.platform.clusters[ns.cluster]
        declared = {r.cidr for r in (*team.egress, *cluster.object_store_egress)}
        for policy in policies:
            for rule in policy["spec"].get("egress", []):
                for peer in rule.get("to", []):
                    if "ipBlock" in peer:
                        cidr = peer["ipBlock"]["cidr"]
                        assert cidr in declared, (ns.name, cidr)
                        network = ipaddress.ip_network(cidr)
                        assert network.prefixlen >= 16 and not network.is_link_local
                    else:  # in-cluster peers: the namespace itself or the DNS pods only
                        assert "podSelector" in peer, (ns.name, peer)


# --- 8. audit logging ---------------------------------------------------------------------

PROVIDERS = tuple(
    json.loads((REPO / "schemas" / "cluster.schema.json").read_text())["properties"]["spec"][
        "properties"
    ]["provider"]["enum"]
)


@pytest.fixture(scope="module")
def every_provider(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendered]:
    """The example platform once for each provider the cluster schema lists, with every cluster
    on that provider: the managed control planes (EKS, GKE, AKS, CoreWeave's CKS) as well as the
    ones whose API server flags the platform team sets."""
    found: dict[str, Rendered] = {}
    for provider in PROVIDERS:
        root = copy_inputs(REPO, tmp_path_factory.mktemp(provider) / "repo")
        for path in sorted((root / "clusters").glob("*.yaml")):
            text, count = re.subn(
                r"(?m)^  provider: \S+$", f"  provider: {provider}", path.read_text()
            )
            assert count == 1, path
            path.write_text(text)
        rendered = render_platform(root, OutputValidator([]))
        errors = [d for d in rendered.diagnostics if d.severity.value == "error"]
        assert not errors, errors
        assert {c.provider for c in rendered.platform.clusters.values()} == {provider}
        found[provider] = rendered
    return found


def _policy_level(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> str:
    """The first matching rule decides, as the API server's policy checker does
    (k8s.io/apiserver/pkg/audit/policy/checker.go, ruleMatches), for a resource request by a
    team member: a user in no rule's `users` or system `userGroups`."""
    for rule in rules:
        if rule.get("users") or rule.get("userGroups"):
            continue
        if rule.get("verbs") and verb not in rule["verbs"]:
            continue
        if rule.get("namespaces") or rule.get("resources"):
            if not rule.get("resources"):
                return str(rule["level"])
            for kinds in rule["resources"]:
                named = kinds.get("resources", [])
                if kinds.get("group", "") == group and (
                    not named or resource in named or "*" in named
                ):
                    return str(rule["level"])
            continue
        if rule.get("nonResourceURLs"):
            continue  # matches non-resource requests only
        return str(rule["level"])
    return "None"


def _self_managed_policy_covers_jobs_secrets_exec_and_admin(policy: dict[str, Any]) -> None:
    assert policy["apiVersion"] == "audit.k8s.io/v1"
    rules = policy["rules"]
    assert _policy_level(rules, "", "secrets", "get") == "Metadata"  # never a secret's body
    assert _policy_level(rules, "batch", "jobs", "create") in ("Request", "RequestResponse")
    assert _policy_level(rules, "", "pods/exec", "create") != "None"
    assert _policy_level(rules, "rbac.authorization.k8s.io", "rolebindings", "create") in (
        "Request",
        "RequestResponse",
    )
    assert _policy_level(rules, "", "pods", "create") in ("Request", "RequestResponse")


def _managed_setting_keeps_the_audit_log(provider: str, body: dict[str, Any]) -> None:
    """What each provider's documentation says turns its API server audit log on, reads
    (secret reads) included."""
    if provider == "eks":
        # EKS User Guide, "Send control plane logs to CloudWatch Logs": the `audit` log type is
        # the Kubernetes audit log; a LogSetup enables the types it lists (EKS API, LogSetup)
        setups = body["eks"]["updateClusterConfig"]["logging"]["clusterLogging"]
        assert any(s.get("enabled") is True and "audit" in s["types"] for s in setups)
    elif provider == "gke":
        # GKE "Audit policy": Admin Activity (writes) always on; reads are Data Access
        # DATA_READ, configured on the Kubernetes Engine API's audit config
        (config,) = [
            c
            for c in body["gke"]["iamPolicy"]["auditConfigs"]
            if c["service"] == "container.googleapis.com"
        ]
        assert "DATA_READ" in {c["logType"] for c in config["auditLogConfigs"]}
        assert not any(c.get("exemptedMembers") for c in config["auditLogConfigs"])
    elif provider == "aks":
        # Azure Monitor, AKSAudit: `kube-audit` has every event, get and list included;
        # `kube-audit-admin` has no get, so no secret read
        logs = body["aks"]["diagnosticSetting"]["properties"]["logs"]
        assert {"category": "kube-audit", "enabled": True} in logs
    else:
        pytest.fail(f"no audit log setting expected for provider {provider}")


def assert_control_8(rendered: Rendered, name: str) -> None:
    """Control 8 on one cluster, whoever runs its API server: a Policy the API server reads, the
    provider's own audit log setting turned on, or (CKS: no setting exists) the README saying
    where the provider's audit log is."""
    provider = rendered.platform.clusters[name].provider
    files = {v.path: dict(v.body) for v in rendered.values[name] if isinstance(v, Values)}
    audit = {path: body for path, body in files.items() if path.startswith("api-server/")}
    readme = rendered.readmes[name]
    if provider in ("on-prem", "other"):
        assert list(audit) == ["api-server/audit-policy.yaml"]
        _self_managed_policy_covers_jobs_secrets_exec_and_admin(
            audit["api-server/audit-policy.yaml"]
        )
        assert "`api-server/audit-policy.yaml`" in readme
    elif provider == "coreweave":
        # CoreWeave docs: CKS audit logs are on CoreWeave Grafana's Kubernetes Audit Logs
        # dashboard and in Telemetry Relay's Audit Logs stream; there is no setting to render
        assert audit == {}
        assert "Kubernetes Audit Logs" in readme and "Telemetry Relay" in readme
    else:
        assert list(audit) == ["api-server/audit-logging.yaml"]
        body = audit["api-server/audit-logging.yaml"]
        assert not any(b.get("kind") == "Policy" for b in audit.values())
        assert (body["cluster"], body["provider"]) == (name, provider)
        _managed_setting_keeps_the_audit_log(provider, body)
        assert "`api-server/audit-logging.yaml`" in readme


def test_8_every_example_cluster_has_its_audit_log(example: Rendered) -> None:
    """prod-east (on-prem: the Policy) and staging-west (EKS: the control plane log setting)."""
    providers = {n: c.provider for n, c in example.platform.clusters.items()}
    assert providers == {"prod-east": "on-prem", "staging-west": "eks"}
    for name in providers:
        assert_control_8(example, name)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_8_audit_logging_holds_on_every_provider(
    every_provider: dict[str, Rendered], provider: str
) -> None:
    rendered = every_provider[provider]
    for name in sorted(rendered.platform.clusters):
        assert_control_8(rendered, name)


def test_8_the_check_fails_without_the_setting(every_provider: dict[str, Rendered]) -> None:
    """The check above can fail: a managed setting that keeps only writes is caught."""
    body = copy.deepcopy(
        dict(
            next(
                v.body
                for v in every_provider["aks"].values["staging-west"]
                if v.path == "api-server/audit-logging.yaml"
            )
        )
    )
    body["aks"]["diagnosticSetting"]["properties"]["logs"] = [
        {"category": "kube-audit-admin", "enabled": True}
    ]
    with pytest.raises(AssertionError):
        _managed_setting_keeps_the_audit_log("aks", body)
    body = copy.deepcopy(
        dict(
            next(
                v.body
                for v in every_provider["eks"].values["staging-west"]
                if v.path == "api-server/audit-logging.yaml"
            )
        )
    )
    body["eks"]["updateClusterConfig"]["logging"]["clusterLogging"] = [
        {"types": ["api"], "enabled": True}
    ]
    with pytest.raises(AssertionError):
        _managed_setting_keeps_the_audit_log("eks", body)


# --- 9. clean-up ------------------------------------------------------------------------------


def test_9_finished_jobs_must_expire_within_the_teams_retention(example: Rendered) -> None:
    for team, ns in team_namespaces(example.platform):
        namespace = namespace_object(example, ns.cluster, ns.name)
        image = (team.images[0] if team.images else "registry.example.com/x/") + "app:1"
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "j",
                "namespace": ns.name,
                "labels": {
                    TEAM_LABEL: team.name,
                    COST_LABEL: team.cost_center,
                    "kueue.x-k8s.io/priority-class": _team_class(example.platform, team),
                },
            },
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": image}],
                    }
                }
            },
        }
        # the same Job is admitted with a TTL within retention: the refusal is the TTL's
        assert denials(example, ns.cluster, job, namespace), ns.name
        job["spec"]["ttlSecondsAfterFinished"] = 3600
        assert denials(example, ns.cluster, job, namespace) == [], ns.name
        job["spec"]["ttlSecondsAfterFinished"] = 365 * 24 * 3600
        assert denials(example, ns.cluster, job, namespace), ns.name


def _team_class(platform: Platform, team: Team) -> str:
    queue = platform.queues[team.queue]
    priority = queue.priority(team.priority) if team.priority else queue.default_priority
    assert priority is not None
    return f"{queue.name}-{priority.name}"


def test_9_the_suites_workflows_clean_up_after_themselves(example: Rendered) -> None:
    for cluster in example.manifests:
        for body in objects(example, cluster):
            if body["kind"] in ("Workflow", "WorkflowTemplate"):
                spec = body["spec"]
            elif body["kind"] == "CronWorkflow":
                spec = body["spec"]["workflowSpec"]
            else:
                continue
            assert "ttlStrategy" in spec and "podGC" in spec, body["metadata"]
