"""The API server's admission policies as fit evaluates them (renderer/admission/apiserver:
policies.py, mutating.py, matching.py), from the objects gpuplane renders.

Expectations come from upstream, not from the evaluator: the matching table is Kubernetes' own
(`tests/admission_matching_cases.py`), the message formats are the API server's (the Go
sources cited per test, and the kubernetes.io examples), and each hand-written job below trips
the one rendered policy whose CEL it breaks, read from the policy.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from renderer import pipeline
from renderer.admission.apiserver import applyconfig, matching, resources
from renderer.admission.apiserver.gate import Outcome, RenderedCluster, Request, Step, UserInfo
from renderer.admission.apiserver.policies import evaluate_policy, mutate_gate, validate_gate
from renderer.admission.rendered import rendered_cluster
from tests import admission_cel
from tests.admission_matching_cases import CASES, RegistryMapper
from tests.conftest import REPO, example_at_kubernetes

MEMBER = UserInfo("oidc:alice@example.com", ("oidc:llm-research",))
SHARED = REPO.parent / "shared" / "reference"


@pytest.fixture(scope="module")
def prod_east() -> RenderedCluster:
    platform = pipeline.load_platform(REPO).platform
    return rendered_cluster(platform, platform.clusters["prod-east"])


@pytest.fixture(scope="module")
def staging_west() -> RenderedCluster:
    platform = pipeline.load_platform(REPO).platform
    return rendered_cluster(platform, platform.clusters["staging-west"])


@pytest.fixture(scope="module")
def prod_east_136(tmp_path_factory: pytest.TempPathFactory) -> RenderedCluster:
    root = example_at_kubernetes(tmp_path_factory.mktemp("k136"), "1.36")
    platform = pipeline.load_platform(root).platform
    return rendered_cluster(platform, platform.clusters["prod-east"])


def request(cluster: RenderedCluster, obj: Mapping[str, Any], ns: str = "llm-train") -> Request:
    return Request(obj, ns, MEMBER, cluster)


def refused_by(outcome: Outcome) -> list[str]:
    return [r.source for r in outcome.refusals]


# --- matching: Kubernetes' TestMatcher ------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matching_agrees_with_kubernetes(case: dict[str, Any]) -> None:
    given = case["attrs"]
    attrs = matching.Attributes(
        resource=given["resource"],
        subresource=given["subresource"],
        kind=given["kind"],
        namespace="ns",
        name="name",
        operation="CREATE",
        obj={"metadata": {}} if given["object"] else None,
        namespace_labels={},
    )
    found = matching.matches(case["criteria"], attrs, RegistryMapper())
    if case.get("error"):
        assert case["error"] in found.error
        return
    assert found.error == ""
    assert found.matches is case["matches"]
    if found.matches:
        assert found.resource == case.get("resource", given["resource"])
        if "kind" in case:
            assert found.kind == case["kind"]


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]},
            {"team": "a"},
            False,
        ),
        ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, {"team": ""}, True),
        ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, {"x": "1"}, True),
        ({"matchLabels": {"team": "a"}, "matchExpressions": []}, {"team": "a", "x": "y"}, True),
        ({"matchLabels": {"team": "a"}}, {"team": "b"}, False),
        ({}, {}, True),
    ],
)
def test_label_selectors(selector: dict[str, Any], labels: dict[str, str], selected: bool) -> None:
    """apimachinery `labels.Requirement.Matches`: NotIn and DoesNotExist select an object
    without the key; In, Exists and matchLabels need it; an empty selector selects all."""
    parsed = matching.parse_selector(selector)
    assert not isinstance(parsed, str)
    assert parsed.matches(labels) is selected


def test_a_nil_selector_selects_nothing_and_defaults_make_it_empty() -> None:
    """`LabelSelectorAsSelector(nil)` is `labels.Nothing()`; the API server stores a policy
    with `{}` for the selectors it leaves out (`SetDefaults_MatchResources`)."""
    nothing = matching.parse_selector(None)
    assert not isinstance(nothing, str) and not nothing.matches({})
    defaulted = matching.defaulted({"resourceRules": [{"operations": ["CREATE"]}]})
    assert defaulted["namespaceSelector"] == {} and defaulted["objectSelector"] == {}
    assert defaulted["matchPolicy"] == "Equivalent"
    assert defaulted["resourceRules"][0]["scope"] == "*"


def test_rules_subresources_and_wildcards() -> None:
    """rules.go `resource()`: `pods` does not match `pods/ephemeralcontainers`, `pods/*` and
    `*/*` do; `*` alone matches no subresource."""
    attrs = matching.Attributes(("", "v1", "pods"), "ephemeralcontainers", ("", "v1", "Pod"),
                                "ns", "p", "UPDATE", None)  # fmt: skip
    base = {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"]}
    assert not matching.rule_matches({**base, "resources": ["pods"]}, attrs)
    assert not matching.rule_matches({**base, "resources": ["*"]}, attrs)
    assert matching.rule_matches({**base, "resources": ["pods/*"]}, attrs)
    assert matching.rule_matches({**base, "resources": ["*/*"]}, attrs)
    assert matching.rule_matches({**base, "resources": ["pods/ephemeralcontainers"]}, attrs)
    assert not matching.rule_matches(
        {**base, "operations": ["CREATE"], "resources": ["*/*"]}, attrs
    )


# --- the API server's wording, on the kubernetes.io example --------------------------------

DEMO_POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "demo-policy.example.com"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["deployments"],
                }
            ]
        },
        "validations": [{"expression": "object.spec.replicas <= 5"}],
    },
}
"""kubernetes/website content/en/examples/validatingadmissionpolicy/basic-example-policy.yaml"""


def demo_binding(actions: list[str]) -> dict[str, Any]:
    """basic-example-binding.yaml, with the validationActions under test."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "demo-binding-test.example.com"},
        "spec": {
            "policyName": "demo-policy.example.com",
            "validationActions": actions,
            "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}},
        },
    }


def demo_cluster(*objects: Mapping[str, Any], env: str = "test") -> RenderedCluster:
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "default", "labels": {"environment": env}}}  # fmt: skip
    return RenderedCluster("demo", "1.36", (namespace, *objects))


def deployment(replicas: int, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "mynginx", **meta}, "spec": {"replicas": replicas}}  # fmt: skip


def test_deny_is_worded_as_the_api_server_words_it() -> None:
    """validating/dispatcher.go `Dispatch` and admission `NewForbidden`; the kubernetes.io
    page's example: `deployments.apps "mynginx" is forbidden: ValidatingAdmissionPolicy
    'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request:
    failed expression: object.spec.replicas <= 5`."""
    cluster = demo_cluster(DEMO_POLICY, demo_binding(["Deny"]))
    outcome = validate_gate(Request(deployment(10), "default", MEMBER, cluster))
    assert outcome.step is Step.POLICIES and outcome.status == "refused"
    (refusal,) = outcome.refusals
    assert refusal.source == "ValidatingAdmissionPolicy 'demo-policy.example.com'"
    assert refusal.message == (
        'deployments.apps "mynginx" is forbidden: ValidatingAdmissionPolicy '
        "'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: "
        "failed expression: object.spec.replicas <= 5"
    )
    assert validate_gate(Request(deployment(5), "default", MEMBER, cluster)).status == "passed"
    other = demo_cluster(DEMO_POLICY, demo_binding(["Deny"]), env="prod")
    assert validate_gate(Request(deployment(10), "default", MEMBER, other)).status == "passed"


def test_warn_is_a_note_and_audit_is_silent() -> None:
    """dispatcher.go: Warn adds `Validation failed for ValidatingAdmissionPolicy '<p>' with
    binding '<b>': <message>` (admission_test.go expects exactly that form); Audit only writes
    an audit annotation."""
    warned = validate_gate(
        Request(
            deployment(10), "default", MEMBER, demo_cluster(DEMO_POLICY, demo_binding(["Warn"]))
        )
    )
    assert warned.status == "passed" and not warned.refusals
    assert warned.notes == (
        "Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding "
        "'demo-binding-test.example.com': failed expression: object.spec.replicas <= 5",
    )
    audited = validate_gate(
        Request(
            deployment(10), "default", MEMBER, demo_cluster(DEMO_POLICY, demo_binding(["Audit"]))
        )
    )
    assert audited.status == "passed" and audited.notes == ()


def test_a_generated_name_and_the_core_group() -> None:
    """Validating admission sees the generated name (`<generateName>` + 5 random characters,
    written `?????`); the core group has no dot (`GroupResource.String()`)."""
    policy = copy.deepcopy(DEMO_POLICY)
    policy["spec"]["matchConstraints"]["resourceRules"][0].update(
        apiGroups=[""], resources=["pods"]
    )
    policy["spec"]["validations"] = [{"expression": "false", "message": "  no pods  "}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "train-"}}
    outcome = validate_gate(
        Request(pod, "default", MEMBER, demo_cluster(policy, demo_binding(["Deny"])))
    )
    assert outcome.refusals[0].message == (
        "pods \"train-?????\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' "
        "with binding 'demo-binding-test.example.com' denied request: no pods"
    )


def _policy(validations: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    policy = copy.deepcopy(DEMO_POLICY)
    policy["spec"]["validations"] = validations
    policy["spec"].update(spec)
    return policy


def _only_message(policy: Mapping[str, Any], replicas: int = 10) -> str:
    cluster = demo_cluster(policy, demo_binding(["Deny"]))
    (refusal,) = validate_gate(Request(deployment(replicas), "default", MEMBER, cluster)).refusals
    return refusal.message.split("denied request: ", 1)[1]


def test_several_denials_report_the_first_and_fix_all() -> None:
    """dispatcher.go reports `deniedDecisions[0]` only; fit's fix covers every denial."""
    policy = _policy([
        {"expression": "object.spec.replicas <= 5", "message": "at most 5 replicas"},
        {"expression": "has(object.metadata.labels)", "message": "label it"},
    ])  # fmt: skip
    cluster = demo_cluster(policy, demo_binding(["Deny"]))
    (refusal,) = validate_gate(Request(deployment(10), "default", MEMBER, cluster)).refusals
    assert refusal.message.endswith("denied request: at most 5 replicas")
    assert refusal.fix == "at most 5 replicas; label it"


@pytest.mark.parametrize(
    ("validation", "message"),
    [
        (
            {"expression": "false", "messageExpression": "'n=' + string(object.spec.replicas)"},
            "n=10",
        ),
        ({"expression": "false", "messageExpression": "'  '", "message": "plain"}, "plain"),
        ({"expression": "false", "messageExpression": "'a\\nb'", "message": "plain"}, "plain"),
        ({"expression": "false", "messageExpression": "1", "message": "plain"}, "plain"),
        ({"expression": "false", "messageExpression": "object.nope", "message": "m"}, "m"),
        (
            {"expression": " object.spec.replicas < 2 "},
            "failed expression: object.spec.replicas < 2",
        ),
        (
            {"expression": "object.spec.nope > 1", "message": "never shown"},
            "expression 'object.spec.nope > 1' resulted in error: no such key: nope",
        ),
    ],
)
def test_message_expression_and_errors(validation: dict[str, Any], message: str) -> None:
    """validator.go: messageExpression's string, trimmed; blank, multi-line, non-string or
    failing falls back to message, then to `failed expression: <expression>`; an expression
    that fails denies under Fail with activation.go's `expression '<e>' resulted in error:`."""
    assert _only_message(_policy([validation])) == message


def test_failure_policy_ignore_admits_an_error() -> None:
    policy = _policy([{"expression": "object.spec.nope > 1"}], failurePolicy="Ignore")
    cluster = demo_cluster(policy, demo_binding(["Deny"]))
    assert validate_gate(Request(deployment(10), "default", MEMBER, cluster)).status == "passed"


def test_match_conditions_and_variables() -> None:
    """A false matchCondition skips the policy even where another fails; a failing one (all
    others true) denies with its error; a variable's error is the error of what reads it."""
    skip = _policy([{"expression": "false"}], matchConditions=[
        {"name": "broken", "expression": "object.spec.nope == 1"},
        {"name": "never", "expression": "false"},
    ])  # fmt: skip
    assert (
        validate_gate(
            Request(deployment(10), "default", MEMBER, demo_cluster(skip, demo_binding(["Deny"])))
        ).status
        == "passed"
    )
    broken = _policy([{"expression": "true"}], matchConditions=[
        {"name": "broken", "expression": "object.spec.nope == 1"},
    ])  # fmt: skip
    assert _only_message(broken) == (
        "expression 'object.spec.nope == 1' resulted in error: no such key: nope"
    )
    with_variable = _policy(
        [{"expression": "variables.n < 1"}],
        variables=[{"name": "n", "expression": "object.spec.nope"}],
    )
    assert _only_message(with_variable) == (
        "expression 'variables.n < 1' resulted in error: no such key: nope"
    )


def test_params_are_not_guessed() -> None:
    """generic.CollectParams: no paramRef, params null; a paramRef reads objects fit does not
    have, so the binding is not evaluated and a note says so."""
    policy = _policy(
        [{"expression": "params == null"}], paramKind={"apiVersion": "v1", "kind": "ConfigMap"}
    )
    cluster = demo_cluster(policy, demo_binding(["Deny"]))
    assert validate_gate(Request(deployment(1), "default", MEMBER, cluster)).status == "passed"
    binding = demo_binding(["Deny"])
    binding["spec"]["paramRef"] = {"name": "limits"}
    denying = _policy(
        [{"expression": "false"}], paramKind={"apiVersion": "v1", "kind": "ConfigMap"}
    )
    outcome = validate_gate(
        Request(deployment(1), "default", MEMBER, demo_cluster(denying, binding))
    )
    assert outcome.status == "passed"
    assert any("paramRef" in note for note in outcome.notes)


# --- every rendered policy of the example platform, one job each ----------------------------

LABELS = {
    "gpuplane.dev/team": "llm",
    "gpuplane.dev/cost-center": "CC-1050",
    "kueue.x-k8s.io/priority-class": "prod-standard",
}
IMAGE = "registry.example.com/llm/trainer:1.0"


def pod_spec(**extra: Any) -> dict[str, Any]:
    container = {"name": "trainer", "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": 8}}}
    return {"restartPolicy": "Never", "containers": [container], **extra}


def good_job(**spec: Any) -> dict[str, Any]:
    """A Job every policy bound to llm-train admits: the team's labels and priority, a TTL
    within the team's retention, suspended (as Kueue's webhook leaves it), an image from the
    team's registry, nothing from the host."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pretrain", "labels": dict(LABELS)},
        "spec": {
            "suspend": True,
            "ttlSecondsAfterFinished": 86400,
            "template": {"spec": pod_spec()},
            **spec,
        },
    }


def _edit(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`obj` with the dotted `path` set (a list index as a number; after `metadata.labels.`,
    the label's key whole); `value` None removes it."""
    result = copy.deepcopy(obj)
    if path.startswith("metadata.labels."):
        parents, last = ["metadata", "labels"], path.removeprefix("metadata.labels.")
    else:
        *parents, last = path.split(".")
    node: Any = result
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if value is None:
        del node[last]
    else:
        node[last] = value
    return result


CONTAINER = "spec.template.spec.containers.0"
JOBS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "team label missing",
        _edit(good_job(), "metadata.labels.gpuplane.dev/team", None),
        "gpuplane-common-labels",
        "set the label gpuplane.dev/team: llm, as on the namespace",
    ),
    (
        "cost-centre wrong",
        _edit(good_job(), "metadata.labels.gpuplane.dev/cost-center", "CC-9999"),
        "gpuplane-common-labels",
        "set the label gpuplane.dev/cost-center: CC-1050, as on the namespace",
    ),
    (
        "TTL missing",
        _edit(good_job(), "spec.ttlSecondsAfterFinished", None),
        "gpuplane-ttl-jobs",
        "Jobs in team llm namespaces must set spec.ttlSecondsAfterFinished to at most 172800 "
        "seconds (retention.finishedJobs of the team file)",
    ),
    (
        "image from another registry",
        _edit(good_job(), f"{CONTAINER}.image", "docker.io/pytorch/pytorch:2.4.0"),
        "gpuplane-images-llm",
        "team llm may run images only from registry.example.com/llm/, registry.example.com/base/, "
        "registry.example.com/mirror/nvcr.io/nvidia/: use an image from one of them, or add its "
        "registry to spec.images of the team file",
    ),
    (
        "priority of another queue",
        _edit(good_job(), "metadata.labels.kueue.x-k8s.io/priority-class", "staging-standard"),
        "gpuplane-priority",
        "team llm may use only the priorities of queue prod: set the label "
        "kueue.x-k8s.io/priority-class to one of prod-production, prod-standard, prod-preemptible",
    ),
    (
        "secret in env",
        _edit(good_job(), f"{CONTAINER}.env", [{"name": "DB_PASSWORD", "value": "hunter22"}]),
        "gpuplane-secret-env",
        "an environment variable whose name says it holds a secret (PASSWORD, SECRET, TOKEN, "
        "API_KEY, PRIVATE_KEY, ACCESS_KEY, CREDENTIALS, AUTH, ...) must take its value from a "
        "Secret: replace `value` with `valueFrom.secretKeyRef` (or mount the Secret and pass its "
        "path in a `*_FILE` variable)",
    ),
    (
        "host path",
        _edit(good_job(), "spec.template.spec.volumes", [{"name": "h", "hostPath": {"path": "/"}}]),
        "gpuplane-host-baseline",
        "hostPath volumes are not allowed in team namespaces: use a PersistentVolumeClaim, an "
        "emptyDir or a ConfigMap instead",
    ),
    (
        "privileged",
        _edit(good_job(), f"{CONTAINER}.securityContext", {"privileged": True}),
        "gpuplane-host-baseline",
        "privileged containers and Windows host-process pods are not allowed in team namespaces: "
        "remove securityContext.privileged (and windowsOptions.hostProcess)",
    ),
    (
        "queue suspend",
        _edit(good_job(), "spec.suspend", False),
        "gpuplane-queue-suspend",
        "Kueue did not take this job in: it must be created suspended,",
    ),
    (
        "node name",
        _edit(good_job(), "spec.template.spec.nodeName", "gpu-node-1"),
        "gpuplane-scheduling-llm",
        "pods in team namespaces are placed by the scheduler and the queue: remove spec.nodeName "
        "and select nodes with the queue's flavors (or nodeSelector)",
    ),
    (
        "toleration of every taint",
        _edit(good_job(), "spec.template.spec.tolerations", [{"operator": "Exists"}]),
        "gpuplane-scheduling-llm",
        "a toleration without a key tolerates every taint",
    ),
]
"""(what, job, the one policy that refuses it, its message or the message's start), each
written from the rendered policy's CEL (rendered/prod-east/security/)."""


@pytest.mark.parametrize(("what", "job", "policy", "message"), JOBS, ids=[j[0] for j in JOBS])
def test_each_job_trips_one_policy(
    prod_east: RenderedCluster, what: str, job: dict[str, Any], policy: str, message: str
) -> None:
    outcome = validate_gate(request(prod_east, job))
    assert refused_by(outcome) == [f"ValidatingAdmissionPolicy '{policy}'"], what
    prefix = (
        f"jobs.batch \"pretrain\" is forbidden: ValidatingAdmissionPolicy '{policy}' with binding "
        f"'{policy}' denied request: "
    )
    assert outcome.refusals[0].message.startswith(prefix + message)


def test_the_good_job_passes_everywhere_it_may_run(prod_east: RenderedCluster) -> None:
    for namespace in ("llm-train", "llm-serve", "llm-notebooks"):
        outcome = validate_gate(request(prod_east, good_job(), namespace))
        assert outcome.status == "passed", (namespace, outcome.refusals)
        assert outcome.notes == ()


def test_mechanical_fixes_are_handed_on(prod_east: RenderedCluster) -> None:
    """A missing label the namespace holds and a missing TTL: the chain goes on with the
    object changed, and the changed object passes."""
    job = _edit(good_job(), "metadata.labels.gpuplane.dev/team", None)
    job = _edit(job, "metadata.labels.gpuplane.dev/cost-center", "CC-9999")
    job = _edit(job, "spec.ttlSecondsAfterFinished", None)
    outcome = validate_gate(request(prod_east, job))
    assert refused_by(outcome) == [
        "ValidatingAdmissionPolicy 'gpuplane-common-labels'",
        "ValidatingAdmissionPolicy 'gpuplane-ttl-jobs'",
    ]
    assert outcome.refusals[0].fix == (
        "add label gpuplane.dev/team: llm; set label gpuplane.dev/cost-center: CC-1050 (not CC-9999)"
    )
    assert outcome.refusals[1].fix == (
        "set spec.ttlSecondsAfterFinished: 172800 (the most the policy allows)"
    )
    assert outcome.obj is not None
    assert outcome.changes == (
        "add label gpuplane.dev/team: llm",
        "set label gpuplane.dev/cost-center: CC-1050 (not CC-9999)",
        "set spec.ttlSecondsAfterFinished: 172800 (the most the policy allows)",
    )
    assert validate_gate(request(prod_east, outcome.obj)).status == "passed"


def test_a_fix_the_policy_cannot_spell_is_its_message(prod_east: RenderedCluster) -> None:
    job = _edit(good_job(), f"{CONTAINER}.image", "docker.io/pytorch/pytorch:2.4.0")
    outcome = validate_gate(request(prod_east, job))
    assert outcome.refusals[0].fix.startswith("team llm may run images only from")
    assert outcome.obj is None and outcome.changes == ()


def test_other_kinds_trip_their_policies(prod_east: RenderedCluster) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
               "spec": {"type": "NodePort", "ports": [{"port": 80}]}}  # fmt: skip
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
              "data": {"DB_PASSWORD": "hunter22"}}  # fmt: skip
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}}
    external = {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
                "metadata": {"name": "e"},
                "spec": {"secretStoreRef": {"kind": "ClusterSecretStore", "name": "all"}}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": dict(LABELS)},
           "spec": pod_spec()}  # fmt: skip
    expected = [
        (service, 'services "api"', "gpuplane-services"),
        (config, 'configmaps "c"', "gpuplane-secret-configmaps"),
        (secret, 'secrets "s"', "gpuplane-secrets-from-store"),
        (external, 'externalsecrets.external-secrets.io "e"', "gpuplane-external-secrets"),
        (pod, 'pods "p"', "gpuplane-gpu-queue"),
    ]
    for obj, named, policy in expected:
        outcome = validate_gate(request(prod_east, obj))
        assert refused_by(outcome) == [f"ValidatingAdmissionPolicy '{policy}'"], policy
        assert outcome.refusals[0].message.startswith(f"{named} is forbidden: ")
    gated = _edit(pod, "spec.schedulingGates", [{"name": "kueue.x-k8s.io/admission"}])
    assert validate_gate(request(prod_east, gated)).status == "passed"


def test_ttl_of_each_kind(prod_east: RenderedCluster) -> None:
    cronjob = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly",
               "labels": dict(LABELS)}, "spec": {"schedule": "0 0 * * *", "jobTemplate": {
               "metadata": {"labels": dict(LABELS)}, "spec": {"template": {"spec": pod_spec()}}}}}  # fmt: skip
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "js", "labels": dict(LABELS)}, "spec": {"suspend": True,
              "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
              "spec": pod_spec()}}}}]}}  # fmt: skip
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj",
              "labels": dict(LABELS)}, "spec": {"suspend": True, "ttlSecondsAfterFinished": 60,
              "entrypoint": "python x.py"}}  # fmt: skip
    for obj, policy, fix in [
        (
            cronjob,
            "gpuplane-ttl-cronjobs",
            "set spec.jobTemplate.spec.ttlSecondsAfterFinished: 172800",
        ),
        (jobset, "gpuplane-ttl-jobsets", "set spec.ttlSecondsAfterFinished: 172800"),
        (rayjob, "gpuplane-ttl-rayjobs", "set spec.shutdownAfterJobFinishes: true"),
    ]:
        outcome = validate_gate(request(prod_east, obj))
        assert refused_by(outcome) == [f"ValidatingAdmissionPolicy '{policy}'"], policy
        assert outcome.refusals[0].fix.startswith(fix)
        assert outcome.obj is not None
        assert validate_gate(request(prod_east, outcome.obj)).status == "passed", policy


def test_ttl_binds_only_team_namespaces(prod_east: RenderedCluster) -> None:
    """gpuplane-ttl-jobs' binding has no matchResources; its policy's namespaceSelector
    (`gpuplane.dev/team` Exists) keeps it to team namespaces."""
    job = _edit(good_job(), "spec.ttlSecondsAfterFinished", None)
    outcome = validate_gate(request(prod_east, job, "default"))
    assert outcome.status == "passed"
    assert outcome.notes and "not one gpuplane renders" in outcome.notes[0]


def test_priority_is_required_before_1_36_and_set_from_1_36(
    prod_east: RenderedCluster, prod_east_136: RenderedCluster
) -> None:
    """renderer/model/security.py priority_enforcement: validating below 1.36 (the label is
    required), mutating from 1.36 (a MutatingAdmissionPolicy sets the team's priority)."""
    job = _edit(good_job(), "metadata.labels.kueue.x-k8s.io/priority-class", None)
    assert mutate_gate(request(prod_east, job)).status == "passed"
    refused = validate_gate(request(prod_east, job))
    assert refused_by(refused) == ["ValidatingAdmissionPolicy 'gpuplane-priority'"]
    assert (
        "set the label kueue.x-k8s.io/priority-class: prod-standard" in refused.refusals[0].message
    )
    mutated = mutate_gate(request(prod_east_136, job))
    assert mutated.step is Step.MUTATE and mutated.status == "mutated"
    assert mutated.changes == (
        "MutatingAdmissionPolicy 'gpuplane-priority-llm' sets label "
        "kueue.x-k8s.io/priority-class: prod-standard",
    )
    assert mutated.obj is not None
    assert mutated.obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "prod-standard"
    assert validate_gate(request(prod_east_136, mutated.obj)).status == "passed"


def test_the_mutating_policy_leaves_alone_what_it_does_not_match(
    prod_east_136: RenderedCluster,
) -> None:
    labelled = good_job()
    assert mutate_gate(request(prod_east_136, labelled)).status == "passed"
    owned = _edit(good_job(), "metadata.labels.kueue.x-k8s.io/priority-class", None)
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "1",
         "controller": True}
    ]  # fmt: skip
    assert mutate_gate(request(prod_east_136, owned)).status == "passed"
    unlabelled = _edit(good_job(), "metadata.labels.kueue.x-k8s.io/priority-class", None)
    elsewhere = mutate_gate(request(prod_east_136, unlabelled, "default"))
    assert elsewhere.status == "passed"


# --- ApplyConfiguration and reinvocation ----------------------------------------------------


def test_apply_configuration_translation() -> None:
    """The form gpuplane renders (renderer/layers/security/priority.py `_mutating`), and the
    forms fit refuses to guess at."""
    rendered = 'Object{metadata: Object.metadata{labels: {"kueue.x-k8s.io/priority-class": "p"}}}'
    assert applyconfig.translate(rendered) == (
        '{"metadata": {"labels": {"kueue.x-k8s.io/priority-class": "p"}}}'
    )
    conditional = "true ? Object{metadata: Object.metadata{}} : Object{}"
    assert applyconfig.translate(conditional) == 'true ? {"metadata": {}} : {}'
    for unsupported in (
        "Object{metadata: Object.spec{}}",  # the API server: type mismatch
        "Object{spec: Object.spec{x: [Object.spec.x{}]}} + 1)",
        "JSONPatch{op: 'add'}",
        "Object",
    ):
        with pytest.raises(applyconfig.Unsupported):
            applyconfig.translate(unsupported)


def test_apply_configuration_merge() -> None:
    """structured-merge-diff's merge of a granular map: entries added or replaced, the others
    kept; fields whose merge needs the kind's schema are not applied."""
    live = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {}}
    merged, changes = applyconfig.merge(live, {"metadata": {"labels": {"b": "3", "c": "4"}}})
    assert merged["metadata"]["labels"] == {"a": "1", "b": "3", "c": "4"}
    assert changes == [("labels", "b", "3"), ("labels", "c", "4")]
    assert live["metadata"]["labels"] == {"a": "1", "b": "2"}
    for patch in ({"spec": {"suspend": True}}, {"metadata": {"labels": {"a": 1}}},
                  {"metadata": {"finalizers": ["x"]}}):  # fmt: skip
        with pytest.raises(applyconfig.Unsupported):
            applyconfig.merge(live, patch)


def _mutating(reinvocation: str) -> tuple[dict[str, Any], dict[str, Any]]:
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "copy-tier"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                 "operations": ["CREATE"], "resources": ["deployments"]}]},
            "reinvocationPolicy": reinvocation,
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{metadata: Object.metadata{annotations: "
                "{'tier': has(object.metadata.labels) && 'tier' in object.metadata.labels "
                "? object.metadata.labels['tier'] : 'none'}}}"}}],
        },
    }  # fmt: skip
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "copy-tier"},
               "spec": {"policyName": "copy-tier"}}  # fmt: skip
    return policy, binding


def _webhook(req: Request) -> Outcome:
    """Stands for a mutating webhook after the policies: it labels the object."""
    obj = copy.deepcopy(dict(req.obj))
    obj.setdefault("metadata", {}).setdefault("labels", {})["tier"] = "gold"
    return Outcome(Step.MUTATE, "mutated", changes=("webhook sets label tier: gold",), obj=obj)


@pytest.mark.parametrize(("reinvocation", "tier"), [("Never", "none"), ("IfNeeded", "gold")])
def test_reinvocation(reinvocation: str, tier: str) -> None:
    """mutating/dispatcher.go and reinvocationcontext.go: a policy with reinvocationPolicy
    IfNeeded runs again when a later plugin (a webhook) changed the object; Never does not."""
    cluster = demo_cluster(*_mutating(reinvocation))
    outcome = mutate_gate(Request(deployment(1), "default", MEMBER, cluster), after=(_webhook,))
    assert outcome.status == "mutated"
    assert outcome.obj is not None and outcome.obj["metadata"]["annotations"] == {"tier": tier}
    assert "webhook sets label tier: gold" in outcome.changes


def test_a_failing_mutating_policy_refuses_with_its_own_words() -> None:
    """generic/policy_dispatcher.go: the message is `PolicyError.Error()` alone."""
    policy, binding = _mutating("Never")
    policy["spec"]["matchConditions"] = [{"name": "broken", "expression": "object.spec.nope"}]
    outcome = mutate_gate(Request(deployment(1), "default", MEMBER, demo_cluster(policy, binding)))
    assert outcome.status == "refused"
    assert outcome.refusals[0].source == "MutatingAdmissionPolicy 'copy-tier'"
    assert outcome.refusals[0].message == (
        "policy 'copy-tier' with binding 'copy-tier' denied request: expression "
        "'object.spec.nope' resulted in error: no such key: nope"
    )


def test_a_json_patch_is_not_guessed() -> None:
    policy, binding = _mutating("Never")
    policy["spec"]["mutations"] = [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]
    outcome = mutate_gate(Request(deployment(1), "default", MEMBER, demo_cluster(policy, binding)))
    assert outcome.status == "passed"
    assert outcome.notes == ("fit did not apply MutatingAdmissionPolicy 'copy-tier': it is a "
                             "JSONPatch mutation",)  # fmt: skip


# --- the REST mapping table -----------------------------------------------------------------


def test_the_resource_table_agrees_with_the_crds_and_the_layers() -> None:
    """Each custom resource's plural, scope and served versions as its CRD declares them
    (../shared/crds/index.json, where present); each kind the security layer's policies name,
    at the plural they name it by."""
    from renderer.layers.security import policy_parts

    for kind in (
        *policy_parts.KUEUE_KINDS,
        *policy_parts.POD_TEMPLATE_KINDS,
        policy_parts.VOLCANO_JOB,
    ):
        row = resources.resource_of(f"{kind.group}/v1" if kind.group else "v1", kind.kind)
        assert row is not None and row.plural == kind.resource, kind
    index = REPO.parent / "shared" / "crds" / "index.json"
    if not index.exists():
        pytest.skip("../shared/crds is not beside this checkout")
    import json

    crds = {(e["group"], e["kind"]): e for e in json.loads(index.read_text())}
    checked = 0
    for row in resources.RESOURCES:
        entry = crds.get((row.group, row.kind))
        if entry is None:
            continue
        checked += 1
        assert entry["plural"] == row.plural, row.kind
        assert (entry["scope"] == "Namespaced") is row.namespaced, row.kind
        assert set(entry["versions"]) == set(row.versions), row.kind
        assert entry["storage"] == row.versions[0], row.kind
    assert checked >= 12


# --- the upstream corpus --------------------------------------------------------------------

COMMON_LABELS_KINDS = {
    ("", "Pod"), ("apps", "DaemonSet"), ("apps", "Deployment"), ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"), ("batch", "CronJob"), ("batch", "Job"), ("jobset.x-k8s.io", "JobSet"),
    ("kubeflow.org", "JAXJob"), ("kubeflow.org", "MPIJob"), ("kubeflow.org", "PaddleJob"),
    ("kubeflow.org", "PyTorchJob"), ("kubeflow.org", "TFJob"), ("kubeflow.org", "XGBoostJob"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("ray.io", "RayCluster"),
    ("ray.io", "RayJob"), ("ray.io", "RayService"), ("sparkoperator.k8s.io", "SparkApplication"),
    ("trainer.kubeflow.org", "TrainJob"), ("workload.codeflare.dev", "AppWrapper"),
}  # fmt: skip
"""The kinds gpuplane-common-labels covers (its resourceRules, read from
rendered/prod-east/security/validatingadmissionpolicy-gpuplane-common-labels.yaml)."""

NOT_REFUSED_FOR_LABELS = {
    "kserve/llmisvc-inference_default.yaml",
    "kserve/tensorflow-gpu.yaml",
    "kuberay/ray-cronjob.sample.yaml",
    "volcano/mindspore-gpu.yaml",
    "volcano/vcjob.yaml",
    "volcano/volcano-cronjob.yaml",
}
"""The files of ../shared/reference/workloads/ with no document of those kinds (read from the
manifests: KServe's InferenceService and LLMInferenceService, KubeRay's RayCronJob and a
ConfigMap, Volcano's Job and CronJob). Every other file carries a workload without the team's
labels, which the policy refuses."""


def corpus(folder: str) -> list[tuple[str, dict[str, Any]]]:
    root = SHARED / folder
    if not root.is_dir():
        pytest.skip(f"../shared/reference/{folder} is not beside this checkout")
    found = []
    for path in sorted(root.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and "kind" in document:
                found.append((str(path.relative_to(root)), document))
    return found


def _kind(document: Mapping[str, Any]) -> tuple[str, str]:
    return str(document.get("apiVersion", "")).rpartition("/")[0], str(document["kind"])


@pytest.mark.parametrize("folder", ["workloads", "workloads-2"])
def test_the_corpus_meets_the_common_labels_policy(prod_east: RenderedCluster, folder: str) -> None:
    refused_files: set[str] = set()
    documents = corpus(folder)
    for name, document in documents:
        outcome = validate_gate(request(prod_east, document))
        labelled = "gpuplane.dev/team" in (document.get("metadata", {}).get("labels") or {})
        expected = _kind(document) in COMMON_LABELS_KINDS and not labelled
        got = "ValidatingAdmissionPolicy 'gpuplane-common-labels'" in refused_by(outcome)
        assert got is expected, (name, document["kind"], refused_by(outcome))
        if got:
            refused_files.add(name)
            assert outcome.refusals[0].fix.startswith("add label gpuplane.dev/team: llm")
    if folder == "workloads":
        assert {name for name, _ in documents} - refused_files == NOT_REFUSED_FOR_LABELS


# --- cross-check with the test-side evaluator (tests/admission_cel.py, cel-python) ----------


def _one_validation(policy: Mapping[str, Any], index: int) -> dict[str, Any]:
    single = copy.deepcopy(dict(policy))
    single["spec"]["validations"] = [policy["spec"]["validations"][index]]
    return single


def test_agrees_with_admission_cel(
    prod_east: RenderedCluster,
    prod_east_136: RenderedCluster,
    staging_west: RenderedCluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """For every rendered ValidatingAdmissionPolicy and every object here, each validation
    denies with cel-expr-python (fit) exactly where it does with cel-python (the test's
    evaluator), with the same message where it is a denial rather than an error. staging-west's
    policies meet llm-train, a namespace they do not bind, so their team lookups fail: the
    errors and fallbacks are compared too."""
    cached = functools.lru_cache(maxsize=None)(admission_cel.compile_expression)
    monkeypatch.setattr(admission_cel, "compile_expression", cached)
    objects = [good_job(), *(job for _, job, _, _ in JOBS)]
    objects += [document for _, document in corpus("workloads")][:10]
    policies = {}
    for cluster in (prod_east, prod_east_136, staging_west):
        for policy in cluster.of_kind("ValidatingAdmissionPolicy"):
            policies[yaml.safe_dump(policy)] = policy
    namespace = prod_east.named("Namespace", "llm-train")
    assert namespace is not None
    namespace = copy.deepcopy(dict(namespace))
    namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] = "llm-train"
    compared = 0
    for policy in policies.values():
        for obj in objects:
            obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": "llm-train"}}
            base = {"object": obj, "oldObject": None, "namespaceObject": namespace,
                    "request": {"operation": "CREATE", "namespace": "llm-train",
                                "userInfo": {"username": MEMBER.username, "groups": []}}}  # fmt: skip
            mine = evaluate_policy(policy, base)
            assert mine.notes == ()
            denied = {d.index: d for d in mine.decisions}
            for index in range(len(policy["spec"]["validations"])):
                theirs = admission_cel.evaluate(
                    _one_validation(policy, index), obj, namespace=namespace,
                    username=MEMBER.username,
                )  # fmt: skip
                if -1 in denied:
                    assert theirs and theirs[0].startswith("matchCondition")
                    continue
                assert bool(theirs) is (index in denied), (policy["metadata"]["name"], index)
                if index in denied and denied[index].evaluation == "deny":
                    # admission_cel falls back to the bare expression where validator.go
                    # writes `failed expression: <expression>`
                    said = denied[index].message.removeprefix("failed expression: ")
                    assert theirs == [said]
                compared += 1
    assert compared > 1000


def test_odd_objects_never_raise(
    prod_east: RenderedCluster, prod_east_136: RenderedCluster
) -> None:
    """A gate never raises: a malformed field is a refusal or a note."""
    import datetime

    odd = [
        {},
        {"kind": "Job"},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": "x"},
        {"apiVersion": "batch/v1", "kind": "Job", "spec": [], "metadata": {"name": "j",
         "creationTimestamp": datetime.datetime(2024, 1, 1), "labels": {"a": 1}}},
    ]  # fmt: skip
    for obj in odd:
        for cluster in (prod_east, prod_east_136):
            assert validate_gate(request(cluster, obj)).step is Step.POLICIES
            assert mutate_gate(request(cluster, obj)).step is Step.MUTATE
    unknown = validate_gate(request(prod_east, {"apiVersion": "example.com/v1", "kind": "Thing"}))
    assert unknown.status == "passed" and "does not know the resource" in unknown.notes[0]


def test_a_mutating_policy_sees_the_namespace(prod_east: RenderedCluster) -> None:
    """handlers/create.go sets metadata.namespace before admission; the object handed on is
    the user's, with only the mutation."""
    policy, binding = _mutating("Never")
    policy["spec"]["mutations"][0]["applyConfiguration"]["expression"] = (
        "Object{metadata: Object.metadata{labels: {'ns': object.metadata.namespace}}}"
    )
    outcome = mutate_gate(Request(deployment(1), "default", MEMBER, demo_cluster(policy, binding)))
    assert outcome.obj == {
        **deployment(1),
        "metadata": {"name": "mynginx", "labels": {"ns": "default"}},
    }
