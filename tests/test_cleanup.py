"""Clean-up: the TTL admission policies, evaluated with cel-python against Jobs, CronJobs, JobSets
and RayJobs written the way the upstream APIs define them (batch/v1 `spec.ttlSecondsAfterFinished`,
CronJob `spec.jobTemplate.spec`, JobSet v1alpha2 and RayJob v1 `spec.ttlSecondsAfterFinished`,
RayJob `spec.shutdownAfterJobFinishes`), and validated against the Kubernetes schemas.

The evaluation follows the ValidatingAdmissionPolicy contract: a policy applies when every
matchCondition is true; its variables are evaluated in order, each seeing the earlier ones; an
object is admitted when every validation is true (failurePolicy Fail: an error refuses it).
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest
from celpy.adapter import json_to_cel
from celpy.celtypes import MapType, StringType
from celpy.evaluation import CELEvalError

from renderer.layers.security import cleanup
from renderer.model.view import ClusterView
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform
from tests.conftest import REPO

LLM_LIMIT = 48 * 3600  # teams/llm.yaml: retention.finishedJobs: 48h


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """The value, or the CELEvalError the expression ends in (an error refuses: failurePolicy Fail)."""
    env = celpy.Environment()
    try:
        return env.program(env.compile(expression)).evaluate(activation)
    except CELEvalError as err:
        return err


def admitted(
    policy: dict[str, Any],
    obj: dict[str, Any],
    *,
    old: dict[str, Any] | None = None,
    team: str = "llm",
) -> bool | None:
    """True/False: admitted or refused; None: the policy does not apply (a matchCondition)."""
    request = {"operation": "UPDATE" if old is not None else "CREATE"}
    namespace = {"metadata": {"name": "ns", "labels": {cleanup.TEAM_LABEL: team}}}
    base: dict[str, Any] = {
        "object": json_to_cel(obj),
        "oldObject": json_to_cel(old),
        "request": json_to_cel(request),
        "namespaceObject": json_to_cel(namespace),
    }
    spec = policy["spec"]
    for condition in spec.get("matchConditions", []):
        matched = evaluate(condition["expression"], base)
        assert not isinstance(matched, CELEvalError), matched
        if not matched:
            return None
    variables: dict[str, Any] = {}
    for variable in spec["variables"]:
        activation = {**base, "variables": json_to_cel(variables)}
        value = evaluate(variable["expression"], activation)
        if isinstance(value, CELEvalError):
            return False  # failurePolicy: Fail
        variables[variable["name"]] = value
    activation = {
        **base,
        "variables": MapType({StringType(k): v for k, v in variables.items()}),
    }
    for validation in spec["validations"]:
        result = evaluate(validation["expression"], activation)
        if isinstance(result, CELEvalError) or not result:
            return False
    return True


@pytest.fixture(scope="module")
def view() -> ClusterView:
    loaded = load_platform(REPO)
    return ClusterView.of(loaded.platform, loaded.platform.clusters["prod-east"])


@pytest.fixture(scope="module")
def policies(view: ClusterView) -> dict[str, dict[str, Any]]:
    return {
        m.body["metadata"]["name"]: dict(m.body)
        for m in cleanup.render(view)
        if m.body["kind"] == "ValidatingAdmissionPolicy"
    }


def job(ttl: int | None = None, **metadata: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", **metadata},
        "spec": spec,
    }


def test_the_teams_limit_comes_from_its_retention(view: ClusterView) -> None:
    llm = next(t.team for t in view.tenants if t.team.name == "llm")
    assert cleanup.finished_jobs_seconds(llm) == LLM_LIMIT


@pytest.mark.parametrize(
    ("ttl", "expected"),
    [
        (None, False),
        (0, True),
        (3600, True),
        (LLM_LIMIT, True),
        (LLM_LIMIT + 1, False),
        (365 * 86400, False),
    ],
)
def test_jobs_must_carry_a_ttl_within_the_teams_retention(
    policies: dict[str, dict[str, Any]], ttl: int | None, expected: bool
) -> None:
    assert admitted(policies["gpuplane-ttl-jobs"], job(ttl)) is expected


def test_a_namespace_of_no_known_team_is_refused(policies: dict[str, dict[str, Any]]) -> None:
    assert admitted(policies["gpuplane-ttl-jobs"], job(60), team="no-such-team") is False


def test_raising_the_ttl_later_is_refused_and_untouched_ttls_pass(
    policies: dict[str, dict[str, Any]],
) -> None:
    policy = policies["gpuplane-ttl-jobs"]
    assert admitted(policy, job(365 * 86400), old=job(3600)) is False
    assert (
        admitted(policy, job(None), old=job(None)) is True
    )  # older than the policy: Kueue resumes it


def test_jobs_a_controller_owns_are_left_to_their_owner(
    policies: dict[str, dict[str, Any]],
) -> None:
    owner = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "t",
        "uid": "1",
        "controller": True,
    }
    assert admitted(policies["gpuplane-ttl-jobs"], job(None, ownerReferences=[owner])) is None
    plain = {**owner, "kind": "ConfigMap"}
    assert admitted(policies["gpuplane-ttl-jobs"], job(None, ownerReferences=[plain])) is False


def test_cronjob_templates_are_checked(policies: dict[str, dict[str, Any]]) -> None:
    def cronjob(ttl: int | None) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": job(ttl)["spec"]}},
        }

    policy = policies["gpuplane-ttl-cronjobs"]
    assert admitted(policy, cronjob(None)) is False
    assert admitted(policy, cronjob(600)) is True


def test_jobsets_and_rayjobs(policies: dict[str, dict[str, Any]]) -> None:
    jobset: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "s"},
        "spec": {"replicatedJobs": []},
    }
    assert admitted(policies["gpuplane-ttl-jobsets"], jobset) is False
    jobset["spec"]["ttlSecondsAfterFinished"] = 600
    assert admitted(policies["gpuplane-ttl-jobsets"], jobset) is True
    rayjob: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r"},
        "spec": {"entrypoint": "python a.py", "ttlSecondsAfterFinished": 600},
    }
    assert admitted(policies["gpuplane-ttl-rayjobs"], rayjob) is False  # cluster outlives the job
    rayjob["spec"]["shutdownAfterJobFinishes"] = True
    assert admitted(policies["gpuplane-ttl-rayjobs"], rayjob) is True


def test_rendered_policies_validate(view: ClusterView, validator: OutputValidator) -> None:
    outputs = list(cleanup.render(view))
    assert len(outputs) == 2 * len(cleanup.KINDS)
    for output in outputs:
        assert validator.validate(output.body, view.cluster.kubernetes_version) == []
        if output.body["kind"] == "ValidatingAdmissionPolicyBinding":
            assert output.body["spec"]["validationActions"] == ["Deny"]


def test_the_templates_jobs_pass_the_policy(view: ClusterView, policies: dict[str, Any]) -> None:
    """The workload templates gpuplane renders for a team are admitted by its own policy."""
    from renderer.layers import workload_templates

    checked = 0
    for output in workload_templates.render(view):
        body = output.body
        name = {"Job": "jobs", "JobSet": "jobsets", "RayJob": "rayjobs"}.get(body.get("kind", ""))
        team = body.get("metadata", {}).get("labels", {}).get(cleanup.TEAM_LABEL)
        if name and team:
            assert admitted(policies[f"gpuplane-ttl-{name}"], dict(body), team=team), body[
                "metadata"
            ]
            checked += 1
    assert checked
