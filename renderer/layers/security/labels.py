"""The common labels on every workload a team submits: `gpuplane.dev/team` and
`gpuplane.dev/cost-center`, equal to the namespace's own (the tenancy layer sets them there).

Cost reports and the audit trail group by these labels, so a workload without them, or with
another team's, would bill the wrong cost centre. The policy compares with `namespaceObject`,
which the requester cannot change. It holds for the kinds teams submit: those whose pod
templates the policies check (Pods, Jobs, CronJobs, Deployments, StatefulSets, ReplicaSets,
DaemonSets, JobSets, RayJobs, RayClusters, Volcano Jobs) and every kind Kueue has an
integration for (`admission.KUEUE_KINDS`: TrainJobs, RayServices, LeaderWorkerSets, the Kubeflow
jobs, AppWrappers, SparkApplications too), on Volcano clusters as well: the cost labels do not
depend on which scheduler admits the workload. Objects a platform
controller creates (a Job's pods, a JobSet's Jobs, a CronJob's Jobs: requests from a platform
service account, `admission.platform_account`, which Argo CD's are not: it syncs the teams' own
Applications) are left alone: they inherit what the team submitted, and their templates are not the policy's to rewrite. An
ownerReference does not exempt a pod: it is client-set.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.security.policy_parts import (
    KUEUE_KINDS,
    platform_account,
    pod_template_kinds,
    policy_pair,
    resource_rules,
    team_namespaces,
    validating_policy,
)
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, labels

POLICY = "gpuplane-common-labels"
LABEL_KEYS = tuple(
    key for key in labels(team="", cost_center="") if key.startswith("gpuplane.dev/")
)
"""`gpuplane.dev/team` and `gpuplane.dev/cost-center`, as `renderer.output.manifest.labels`
spells them."""


def label_matches(key: str) -> str:
    """CEL: the object carries `key` with the namespace's value."""
    return (
        f"has(object.metadata.labels) && '{key}' in object.metadata.labels && "
        f"has(namespaceObject.metadata.labels) && '{key}' in namespaceObject.metadata.labels && "
        f"object.metadata.labels['{key}'] == namespaceObject.metadata.labels['{key}']"
    )


def render(view: ClusterView) -> Iterator[Manifest]:
    # every workload kind a team submits carries its cost labels, whichever scheduler admits it
    submitted = (*pod_template_kinds(view), *KUEUE_KINDS)
    kinds = {k.group + "/" + k.resource: k for k in submitted}
    validations = [
        {
            "expression": label_matches(key),
            "messageExpression": f"'set the label {key}: ' + "
            f"namespaceObject.metadata.labels['{key}'] + ', as on the namespace'",
            "message": f"set the label {key} to the namespace's value on this object",
            "reason": "Forbidden",
        }
        for key in LABEL_KEYS
    ]
    policy = validating_policy(
        POLICY,
        resource_rules(sorted(kinds.values(), key=lambda k: (k.group, k.resource))),
        validations,
        match_conditions=[
            {"name": "submitted-by-a-team", "expression": f"!({platform_account(view)})"}
        ],
    )
    yield from policy_pair(policy, team_namespaces(view), view.cluster.origin.location)
