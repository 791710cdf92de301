"""The API server audit Policy: valid against the upstream audit.k8s.io/v1 types, and logging each
kind of request at the level the guide asks for when the upstream first-match checker reads it.

The schema and the checker below are written from kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go (fields, levels, stages),
.../audit/validation/validation.go (what the API server refuses at start) and
.../audit/policy/checker.go (first matching rule wins, default None; resource matching with
`*`, `res/*`, `*/sub`), never from gpuplane's own output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from renderer.layers.security import audit
from renderer.model.view import ClusterView
from renderer.output.manifest import Values
from renderer.output.writer import build_tree
from renderer.pipeline import load_platform
from tests.conftest import REPO

LEVELS = ["None", "Metadata", "Request", "RequestResponse"]  # type Level
STAGES = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"]  # type Stage
STRINGS = {"type": "array", "items": {"type": "string"}}

GROUP_RESOURCES = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"group": {"type": "string"}, "resources": STRINGS, "resourceNames": STRINGS},
}
POLICY_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["level"],
    "properties": {
        "level": {"enum": LEVELS},
        "users": STRINGS,
        "userGroups": STRINGS,
        "verbs": STRINGS,
        "resources": {"type": "array", "items": GROUP_RESOURCES},
        "namespaces": STRINGS,
        "nonResourceURLs": STRINGS,
        "omitStages": {"type": "array", "items": {"enum": STAGES}},
        "omitManagedFields": {"type": "boolean"},
    },
}
POLICY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "rules"],
    "properties": {
        "apiVersion": {"const": "audit.k8s.io/v1"},
        "kind": {"const": "Policy"},
        "metadata": {"type": "object"},
        "rules": {"type": "array", "items": POLICY_RULE},
        "omitStages": {"type": "array", "items": {"enum": STAGES}},
        "omitManagedFields": {"type": "boolean"},
    },
}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def semantic_problems(policy: dict[str, Any]) -> list[str]:
    """What validation.go's ValidatePolicy refuses beyond the field types."""
    problems = []
    for index, rule in enumerate(policy["rules"]):
        urls = rule.get("nonResourceURLs", [])
        if urls and (rule.get("resources") or rule.get("namespaces")):
            problems.append(f"rules[{index}]: both resources and non-resource URLs")
        for url in urls:
            if url != "*" and not url.startswith("/"):
                problems.append(f"rules[{index}]: {url} does not begin with /")
            if "*" in url[:-1]:
                problems.append(f"rules[{index}]: {url} has a * before its end")
        for gr in rule.get("resources", []):
            if gr.get("group") and not DNS_SUBDOMAIN.match(gr["group"]):
                problems.append(f"rules[{index}]: group {gr['group']}")
            if gr.get("resourceNames") and not gr.get("resources"):
                problems.append(f"rules[{index}]: resourceNames without resources")
    return problems


@dataclass
class Request:
    verb: str
    resource: str = ""  # "" for a non-resource request
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    path: str = ""
    user: str = "alice"
    groups: list[str] = field(default_factory=lambda: ["oidc:llm-research"])


def _matches_resource(rule: dict[str, Any], req: Request) -> bool:
    if not req.resource:
        return False
    if rule.get("namespaces") and req.namespace not in rule["namespaces"]:
        return False
    if not rule.get("resources"):
        return True
    combined = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
    for gr in rule["resources"]:
        if gr.get("group", "") != req.group:
            continue
        if not gr.get("resources"):
            return True
        for res in gr["resources"]:
            if res in (combined, "*"):
                return True
            if req.subresource and res.startswith("*/") and res[2:] == req.subresource:
                return True
            if res.endswith("/*") and res[:-2] == req.resource:
                return True
    return False


def _path_matches(path: str, spec: str) -> bool:
    return spec in ("*", path) or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def level_of(policy: dict[str, Any], req: Request) -> str:
    """checker.go's LevelAndStages: the first matching rule's level, else None."""
    for rule in policy["rules"]:
        if rule.get("users") and req.user not in rule["users"]:
            continue
        if rule.get("userGroups") and not set(req.groups) & set(rule["userGroups"]):
            continue
        if rule.get("verbs") and req.verb not in rule["verbs"]:
            continue
        if rule.get("namespaces") or rule.get("resources"):
            if _matches_resource(rule, req):
                return str(rule["level"])
            continue
        if rule.get("nonResourceURLs"):
            if not req.resource and any(
                _path_matches(req.path, s) for s in rule["nonResourceURLs"]
            ):
                return str(rule["level"])
            continue
        return str(rule["level"])
    return "None"


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    return audit.audit_policy()


def test_policy_matches_the_upstream_types(policy: dict[str, Any]) -> None:
    jsonschema.validate(policy, POLICY)
    assert semantic_problems(policy) == []
    assert policy["omitStages"] == ["RequestReceived"]


def test_the_checks_refuse_what_the_api_server_refuses() -> None:
    """The schema and semantic checks above can fail: each broken policy is caught."""
    broken_level = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "All"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken_level, POLICY)
    broken_stage = {**broken_level, "rules": [{"level": "None"}], "omitStages": ["Received"]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken_stage, POLICY)
    mixed = {"rules": [{"level": "None", "nonResourceURLs": ["/a*b"], "namespaces": ["x"]}]}
    assert len(semantic_problems(mixed)) == 2


SECRET_READS = [
    Request("get", "secrets", namespace="llm-train"),
    Request("list", "secrets", namespace="llm-train"),
    Request("create", "secrets", namespace="llm-train"),
    Request("update", "configmaps", namespace="llm-train"),
    Request("create", "serviceaccounts", subresource="token", namespace="llm-train"),
    Request("create", "tokenreviews", group="authentication.k8s.io"),
]


@pytest.mark.parametrize("req", SECRET_READS, ids=lambda r: f"{r.verb}-{r.resource}")
def test_secret_access_is_recorded_without_its_body(policy: dict[str, Any], req: Request) -> None:
    assert level_of(policy, req) == "Metadata"


@pytest.mark.parametrize("sub", ["exec", "attach", "portforward"])
def test_exec_attach_and_port_forward_are_recorded(policy: dict[str, Any], sub: str) -> None:
    req = Request("create", "pods", subresource=sub, namespace="llm-train")
    assert level_of(policy, req) != "None"


JOB_SUBMISSIONS = [
    Request("create", "jobs", group="batch", namespace="llm-train"),
    Request("delete", "jobs", group="batch", namespace="llm-train"),
    Request("create", "jobsets", group="jobset.x-k8s.io", namespace="llm-train"),
    Request("create", "trainjobs", group="trainer.kubeflow.org", namespace="llm-train"),
    Request("create", "rayjobs", group="ray.io", namespace="llm-train"),
    Request("create", "workloads", group="kueue.x-k8s.io", namespace="llm-train"),
    Request("create", "pods", namespace="llm-train"),  # the body names the images
]


@pytest.mark.parametrize("req", JOB_SUBMISSIONS, ids=lambda r: f"{r.verb}-{r.resource}")
def test_job_submission_and_image_use_record_the_request(
    policy: dict[str, Any], req: Request
) -> None:
    assert level_of(policy, req) in ("Request", "RequestResponse")


ADMIN_ACTIONS = [
    Request("create", "rolebindings", group="rbac.authorization.k8s.io", namespace="llm-train"),
    Request("patch", "clusterroles", group="rbac.authorization.k8s.io"),
    Request("delete", "namespaces"),
    Request("update", "resourcequotas", namespace="llm-train"),
    Request("delete", "networkpolicies", group="networking.k8s.io", namespace="llm-train"),
    Request("delete", "validatingadmissionpolicybindings", group="admissionregistration.k8s.io"),
    Request("create", "customresourcedefinitions", group="apiextensions.k8s.io"),
    Request("patch", "nodes"),
    Request("update", "localqueues", group="kueue.x-k8s.io", namespace="llm-train"),
]


@pytest.mark.parametrize("req", ADMIN_ACTIONS, ids=lambda r: f"{r.verb}-{r.resource}")
def test_admin_actions_record_request_and_response(policy: dict[str, Any], req: Request) -> None:
    assert level_of(policy, req) == "RequestResponse"


NOISE = [
    Request("get", path="/healthz"),
    Request("get", path="/readyz/etcd"),
    Request("create", "events", namespace="llm-train", user="system:serviceaccount:kube-system:x"),
    Request("update", "leases", group="coordination.k8s.io", namespace="kube-node-lease"),
    Request("watch", "pods", user="system:node:gpu-1", groups=["system:nodes"]),
]


@pytest.mark.parametrize("req", NOISE, ids=lambda r: f"{r.verb}-{r.resource or r.path}")
def test_noise_is_dropped(policy: dict[str, Any], req: Request) -> None:
    assert level_of(policy, req) == "None"


def test_everything_else_is_recorded_at_metadata(policy: dict[str, Any]) -> None:
    assert level_of(policy, Request("get", "services", namespace="llm-train")) == "Metadata"
    # a kubelet's write is not dropped with its reads
    kubelet = Request(
        "delete", "pods", namespace="x", user="system:node:a", groups=["system:nodes"]
    )
    assert level_of(policy, kubelet) != "None"


@pytest.fixture(scope="module")
def views() -> dict[str, ClusterView]:
    loaded = load_platform(REPO)
    return {
        name: ClusterView.of(loaded.platform, c) for name, c in loaded.platform.clusters.items()
    }


def test_self_managed_clusters_get_the_file_beside_the_objects(
    views: dict[str, ClusterView],
) -> None:
    view = views["prod-east"]
    assert view.cluster.provider == "on-prem"
    (item,) = audit.render(view)
    assert isinstance(item, Values)
    assert item.path == "api-server/audit-policy.yaml"
    files = build_tree({}, values={"prod-east": [item]})
    text = files["prod-east/api-server/audit-policy.yaml"].decode()
    assert "--audit-policy-file" in text.split("apiVersion:")[0]  # the comment header
    assert not any(p.endswith("kustomization.yaml") for p in files)  # nothing applies it


def test_managed_control_planes_get_no_policy_file(views: dict[str, ClusterView]) -> None:
    """EKS reads no custom policy: the provider's own audit log setting is rendered instead
    (tests/test_audit_logging.py)."""
    view = views["staging-west"]
    assert view.cluster.provider == "eks"
    assert list(audit.render(view)) == []


def test_docs_say_where_the_file_goes() -> None:
    text = (Path(REPO) / "docs" / "audit-policy.md").read_text()
    for needle in ("--audit-policy-file", "extraVolumes", "k3s", "RKE2", "EKS", "GKE", "AKS"):
        assert needle in text
