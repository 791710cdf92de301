"""The team's `priority` on the jobs that ask for none, and no priority from another queue.

Kueue reads a job's priority from its `kueue.x-k8s.io/priority-class` label: the name of a
WorkloadPriorityClass, `<queue>-<priority>` (the queueing layer). WorkloadPriorityClasses are
cluster-wide, so without a check a team could label its jobs with another queue's top priority;
every team therefore gets a ValidatingAdmissionPolicy allowing only its own queue's classes.
For jobs without the label, `renderer.model.security.priority_enforcement` decides:

- `mutating` (Kubernetes 1.36+): a MutatingAdmissionPolicy sets the label to the team's
  priority (`spec.priority`, or the queue's default priority) when a job is created without one;
- `validating`: the validating policy also refuses a job without the label, and its message
  names the value to set.

The kinds are the batch kinds Kueue admits (Jobs, JobSets, RayJobs, RayClusters, TrainJobs) and,
in the validating form, CronJobs (the label on `spec.jobTemplate`); serving workloads
(Deployments, StatefulSets) are left to the queue's default priority. Objects a platform
controller creates (a JobSet's Jobs) are not checked: Kueue takes the priority from their parent.
Argo CD is no such controller (`admission.platform_account`): a job a team's Application syncs
is checked like one applied with kubectl.

Volcano clusters get the validating form on every version: a Volcano Job takes a PriorityClass
name (`spec.priorityClassName`, the tenancy layer's `<queue>-<priority>`, which Volcano's
`priority` plugin reads from the Job's PodGroup). The policy requires one of the team's queue's
classes there, and its message names the team's own.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Location
from renderer.layers.security.admission import (
    API_VERSION,
    CRONJOB,
    LAYER,
    SUSPENDABLE_KINDS,
    VOLCANO_JOB,
    cel_list,
    cel_string,
    namespace_selector,
    platform_account,
    policy_pair,
    resource_rules,
    validating_policy,
)
from renderer.model.names import PRIORITY_LABEL
from renderer.model.platform import Priority, Queue, Team
from renderer.model.security import priority_enforcement
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest, metadata


def policy_name(team: Team) -> str:
    return f"gpuplane-priority-{team.name}"


def class_name(queue: Queue, priority: Priority) -> str:
    """The WorkloadPriorityClass (Kueue) or PriorityClass (Volcano) of a queue's priority."""
    return f"{queue.name}-{priority.name}"


def team_priority(team: Team, queue: Queue) -> Priority | None:
    """The priority a team's jobs get when they ask for none: its own, else the queue's default."""
    if team.priority:
        return queue.priority(team.priority)
    return queue.default_priority


def render(view: ClusterView) -> Iterator[Manifest]:
    for tenant in view.tenants:
        queue = view.queue_of(tenant.team)
        if queue is None or queue.cluster != view.cluster.name or not queue.priorities:
            continue
        if view.cluster.scheduler == "volcano":
            yield from _volcano(tenant, queue)
        else:
            yield from _kueue(view, tenant, queue)


def _labels_variable() -> dict[str, str]:
    """`labels`: the labels Kueue will read: the job's own, a CronJob's job template's."""
    template = "object.spec.jobTemplate"
    return {
        "name": "labels",
        "expression": f"({CRONJOB.condition}) ? "
        f"((has({template}.metadata) && has({template}.metadata.labels)) ? "
        f"{template}.metadata.labels : {{}}) : "
        "(has(object.metadata.labels) ? object.metadata.labels : {})",
    }


def _kueue(view: ClusterView, tenant: Tenant, queue: Queue) -> Iterator[Manifest]:
    team = tenant.team
    allowed = [class_name(queue, p) for p in queue.priorities]
    default = team_priority(team, queue)
    mutating = priority_enforcement(view.cluster) == "mutating"
    validations = [
        {
            "expression": f"!('{PRIORITY_LABEL}' in variables.labels) || "
            f"variables.labels['{PRIORITY_LABEL}'] in {cel_list(allowed)}",
            "message": f"team {team.name} may use only the priorities of queue {queue.name}: "
            f"set the label {PRIORITY_LABEL} to one of {', '.join(allowed)}",
            "reason": "Forbidden",
        }
    ]
    if default is not None and not mutating:
        validations.append(
            {
                "expression": f"'{PRIORITY_LABEL}' in variables.labels",
                "message": f"jobs of team {team.name} must name their priority: set the label "
                f"{PRIORITY_LABEL}: {class_name(queue, default)} (the team's priority) or "
                f"another of {', '.join(allowed)}",
                "reason": "Forbidden",
            }
        )
    kinds = SUSPENDABLE_KINDS if mutating else (*SUSPENDABLE_KINDS, CRONJOB)
    policy = validating_policy(
        policy_name(team),
        resource_rules(kinds),
        validations,
        variables=[_labels_variable()],
        match_conditions=[
            {"name": "submitted-by-a-team", "expression": f"!({platform_account(view)})"}
        ],
        team=team.name,
        cost_center=team.cost_center,
    )
    namespaces = [ns.name for ns in tenant.namespaces]
    source = team.origin.at("spec", "priority") if team.priority else team.origin.location
    yield from policy_pair(policy, namespaces, source)
    if mutating and default is not None:
        yield from _mutating(team, class_name(queue, default), namespaces, source)


def _mutating(
    team: Team, value: str, namespaces: list[str], source: Location
) -> Iterator[Manifest]:
    name = policy_name(team)
    apply = (
        "Object{metadata: Object.metadata{labels: "
        f"{{{cel_string(PRIORITY_LABEL)}: {cel_string(value)}}}}}}}"
    )
    common = {"team": team.name, "cost_center": team.cost_center}
    policy = {
        "apiVersion": API_VERSION,
        "kind": "MutatingAdmissionPolicy",
        "metadata": metadata(name, **common),
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": resource_rules(SUSPENDABLE_KINDS, operations=("CREATE",))
            },
            "matchConditions": [
                {
                    "name": "no-priority-label",
                    "expression": "!has(object.metadata.labels) || "
                    f"!('{PRIORITY_LABEL}' in object.metadata.labels)",
                }
            ],
            "mutations": [
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": apply}}
            ],
            "reinvocationPolicy": "Never",
        },
    }
    binding = {
        "apiVersion": API_VERSION,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": metadata(name, **common),
        "spec": {
            "policyName": name,
            "matchResources": {"namespaceSelector": namespace_selector(namespaces)},
        },
    }
    yield Manifest(LAYER, policy, source)
    yield Manifest(LAYER, binding, source)


def _volcano(tenant: Tenant, queue: Queue) -> Iterator[Manifest]:
    team = tenant.team
    allowed = [class_name(queue, p) for p in queue.priorities]
    default = team_priority(team, queue)
    suggestion = (
        f"{class_name(queue, default)} (the team's priority) or another of " if default else ""
    )
    policy = validating_policy(
        policy_name(team),
        resource_rules([VOLCANO_JOB]),
        [
            {
                "expression": "has(object.spec.priorityClassName) && "
                f"object.spec.priorityClassName in {cel_list(allowed)}",
                "message": f"Volcano Jobs of team {team.name} must name a priority of queue "
                f"{queue.name}: set spec.priorityClassName to {suggestion}"
                f"{', '.join(allowed)}",
                "reason": "Forbidden",
            }
        ],
        team=team.name,
        cost_center=team.cost_center,
    )
    source = team.origin.at("spec", "priority") if team.priority else team.origin.location
    yield from policy_pair(policy, [ns.name for ns in tenant.namespaces], source)
