"""Clean-up the cluster enforces: finished Jobs, JobSets and RayJobs go away within the team's
`retention.finishedJobs` (default `DEFAULT_FINISHED_JOBS`).

Kubernetes' TTL controller deletes a finished Job `ttlSecondsAfterFinished` after it ends, JobSet
and KubeRay honour the same field on theirs (a RayJob only with `shutdownAfterJobFinishes`, or
its RayCluster keeps its GPUs). Nothing makes a workload set it, so a ValidatingAdmissionPolicy
per kind refuses, in every team namespace, a workload without it or with more than the team's
retention. One policy per kind for the whole cluster: the team's limit is looked up by the
namespace's `gpuplane.dev/team` label, which only the platform can write (Namespaces are
cluster-scoped), in a map written into the CEL itself, never in a ConfigMap a team could edit.

Objects a workload controller creates for its owner are left alone: a JobSet's or RayJob's Jobs,
a CronJob's (the CronJob's template is checked instead) and a TrainJob's JobSet; the owner
carries the TTL, and an object that only claims an owner is garbage-collected when none exists.
An update that leaves the TTL as it was passes, so objects older than the policy can still be
suspended and resumed by Kueue.

Checkpoints, logs and scratch volumes have no TTL Kubernetes or the operators enforce; nothing is
rendered for them (docs/secrets-and-cleanup.md says what the cluster admin runs instead).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from renderer.layers.queueing.kueue import duration_seconds
from renderer.model.names import DEFAULT_FINISHED_JOBS
from renderer.model.platform import Team
from renderer.model.security import admission_policies_served
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "security"
API_VERSION = "admissionregistration.k8s.io/v1"
TEAM_LABEL = "gpuplane.dev/team"
TTL = "ttlSecondsAfterFinished"


@dataclass(frozen=True, slots=True)
class Kind:
    """A workload kind with a TTL field, where its spec is, and the owners exempting it."""

    name: str
    group: str
    version: str
    resource: str
    spec: str  # CEL path below `object` to the spec that holds the TTL
    owners: tuple[str, ...]
    extra: tuple[tuple[str, str], ...] = ()  # (expression, message): further validations


KINDS: tuple[Kind, ...] = (
    Kind("Job", "batch", "v1", "jobs", "spec", ("CronJob", "JobSet", "RayJob")),
    Kind("CronJob", "batch", "v1", "cronjobs", "spec.jobTemplate.spec", ()),
    Kind("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", "spec", ("TrainJob",)),
    Kind(
        "RayJob",
        "ray.io",
        "v1",
        "rayjobs",
        "spec",
        (),
        (
            (
                "request.operation == 'UPDATE' || "
                "(has(object.spec.shutdownAfterJobFinishes) && object.spec.shutdownAfterJobFinishes)",
                "spec.shutdownAfterJobFinishes must be true: without it the RayCluster, and its "
                "GPUs, outlive the job",
            ),
        ),
    ),
)


def finished_jobs_seconds(team: Team) -> int:
    """The longest a team's finished workload is kept, in seconds."""
    return duration_seconds(str(team.retention.get("finishedJobs", DEFAULT_FINISHED_JOBS)))


def policy_name(kind: Kind) -> str:
    return f"gpuplane-ttl-{kind.resource}"


def _ttl_of(root: str, kind: Kind) -> str:
    path = f"{root}.{kind.spec}"
    return f"has({path}.{TTL}) ? {path}.{TTL} : -1"


def _limits(limits: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"'{team}': {seconds}" for team, seconds in sorted(limits.items())) + "}"


def policy(kind: Kind, limits: Mapping[str, int]) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy of one kind, with every team's limit in it."""
    owners = ", ".join(f"'{owner}'" for owner in kind.owners)
    match_conditions: list[dict[str, str]] = []
    if kind.owners:
        match_conditions.append(
            {
                "name": "not-created-by-its-owner",
                "expression": "!has(object.metadata.ownerReferences) || "
                "!object.metadata.ownerReferences.exists(r, "
                f"has(r.controller) && r.controller && r.kind in [{owners}])",
            }
        )
    field = f"{kind.spec}.{TTL}"
    validations: list[dict[str, str]] = [
        {
            "expression": "variables.unchanged || "
            "(variables.ttl >= 0 && variables.ttl <= variables.limit)",
            "messageExpression": f"'{kind.name}s in team ' + variables.team + "
            f"' namespaces must set {field} to at most ' + string(variables.limit) + "
            "' seconds (retention.finishedJobs of the team file)'",
            "reason": "Invalid",
        }
    ]
    validations.extend(
        {"expression": expression, "message": message, "reason": "Invalid"}
        for expression, message in kind.extra
    )
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]},
            "resourceRules": [
                {
                    "apiGroups": [kind.group],
                    "apiVersions": [kind.version],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": [kind.resource],
                }
            ],
        },
    }
    if match_conditions:
        spec["matchConditions"] = match_conditions
    spec["variables"] = [
        {"name": "team", "expression": f"namespaceObject.metadata.labels['{TEAM_LABEL}']"},
        {"name": "limit", "expression": f"{_limits(limits)}[variables.team]"},
        {"name": "ttl", "expression": _ttl_of("object", kind)},
        {
            "name": "unchanged",
            "expression": f"request.operation == 'UPDATE' && ({_ttl_of('oldObject', kind)}) "
            "== variables.ttl",
        },
    ]
    spec["validations"] = validations
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(policy_name(kind)),
        "spec": spec,
    }


def binding(kind: Kind) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(policy_name(kind)),
        "spec": {"policyName": policy_name(kind), "validationActions": ["Deny"]},
    }


def render(view: ClusterView) -> Iterator[Output]:
    """A policy and its binding per workload kind, on clusters with team namespaces that serve
    admission policies."""
    if not view.tenants or not admission_policies_served(view.cluster):
        return
    limits = {tenant.team.name: finished_jobs_seconds(tenant.team) for tenant in view.tenants}
    at = view.cluster.origin.location
    for kind in KINDS:
        yield Manifest(LAYER, policy(kind, limits), at)
        yield Manifest(LAYER, binding(kind), at)
