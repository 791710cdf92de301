"""The team's `priority` on the workloads that ask for none, and no priority from another queue.

Design: docs/security.md#how-the-priority-policy-is-built
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Mapping, Sequence

from renderer.findings.diagnostics import Location
from renderer.layers.security.policy_parts import (
    API_VERSION,
    CRONJOB,
    LAYER,
    POD,
    VOLCANO_JOB,
    WorkloadKind,
    any_kind,
    cel_list,
    cel_string,
    controlled_by,
    has_controller,
    kueue_kinds,
    namespace_selector,
    platform_account,
    policy_pair,
    resource_rules,
    validating_policy,
)
from renderer.model.names import PRIORITY_LABEL
from renderer.model.platform import Cluster, Priority, Queue, Team
from renderer.model.security import priority_enforcement
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest, metadata

POLICY_NAME = "gpuplane-priority"
"""The ValidatingAdmissionPolicy of a Kueue cluster, and its binding: one for every team."""


def policy_name(team: Team) -> str:
    """A team's own policy: its MutatingAdmissionPolicy (Kubernetes 1.36+), and on a Volcano
    cluster its ValidatingAdmissionPolicy. A Kueue cluster's validating one is `POLICY_NAME`."""
    return f"gpuplane-priority-{team.name}"


def class_name(queue: Queue, priority: Priority) -> str:
    """The WorkloadPriorityClass (Kueue) or PriorityClass (Volcano) of a queue's priority."""
    return f"{queue.name}-{priority.name}"


def team_priority(team: Team, queue: Queue) -> Priority | None:
    """The priority a team's jobs get when they ask for none: its own, else the queue's default."""
    if team.priority:
        return queue.priority(team.priority)
    return queue.default_priority


def priority_kinds(cluster: Cluster) -> tuple[WorkloadKind, ...]:
    """The kinds the priority policy covers on this cluster: every kind its Kueue manages as a
    Workload, and CronJobs (whose Jobs are such workloads); none where Kueue is not the
    scheduler."""
    kinds = kueue_kinds(cluster)
    return (*kinds, CRONJOB) if kinds else ()


def covered_kind(cluster: Cluster, api_version: str, kind: str) -> WorkloadKind | None:
    """The kind of `priority_kinds` an object of this apiVersion and kind is, as the policy's
    CEL condition matches it (`WorkloadKind.condition_on`); None where the policy does not
    cover it (a kind Kueue does not manage, or whose integration is off)."""
    group, _, version = api_version.rpartition("/")
    for covered in priority_kinds(cluster):
        if covered.kind != kind or covered.group != group:
            continue
        if not covered.group:
            return covered if api_version == "v1" else None
        return covered if not covered.versions or version in covered.versions else None
    return None


_FOREIGN = (
    "team {team} may use only the priorities of queue {queue}: "
    "set the label {label} to one of {classes}"
)
_REQUIRED = (
    "workloads of team {team} must name their priority: set the label "
    "{label}: {value} (the team's priority) or another of {classes} "
    "(on a CronJob, in spec.jobTemplate.metadata.labels)"
)
"""The messages, as templates: filled in here for `fit`, spelled out as CEL for the policy's
`messageExpression` (`_message_expression`), so the two cannot drift."""


def _classes(queue: Queue) -> list[str]:
    return [class_name(queue, p) for p in queue.priorities]


def foreign_message(team: Team, queue: Queue) -> str:
    """The policy's message to a workload labelled with a class not of the team's queue."""
    return _FOREIGN.format(
        team=team.name, queue=queue.name, label=PRIORITY_LABEL, classes=", ".join(_classes(queue))
    )


def required_message(team: Team, queue: Queue, value: str) -> str:
    """The validating policy's message to a workload without the label: fit quotes it."""
    return _REQUIRED.format(
        team=team.name,
        queue=queue.name,
        label=PRIORITY_LABEL,
        value=value,
        classes=", ".join(_classes(queue)),
    )


def _message_expression(template: str) -> str:
    """CEL: a message template (`_FOREIGN`, `_REQUIRED`) for the request's team: each field
    read from the policy's variables (`_MESSAGE_VARIABLES`, `_team_variables`), the label's
    name and the text around them as string literals (`cel_string`)."""
    parts = []
    text = ""
    for literal, field, _, _ in string.Formatter().parse(template):
        text += literal
        if field == "label":
            text += PRIORITY_LABEL
        elif field is not None:
            parts.extend([cel_string(text)] if text else [])
            parts.append(_MESSAGE_VARIABLES[field])
            text = ""
    parts.extend([cel_string(text)] if text else [])
    return " + ".join(parts)


_MESSAGE_VARIABLES = {
    "team": "variables.team",
    "queue": "variables.queue",
    "value": "variables.teamPriority",
    "classes": "variables.classText",
}
"""Where the policy's CEL finds each field of a message: the request's team and queue, the
team's priority and its queue's classes as the messages list them."""


def _own_workload(kinds: tuple[WorkloadKind, ...]) -> str:
    """CEL: Kueue makes the object a Workload of its own: a Pod without a controller, another
    kind whose controller is none of the kinds Kueue manages (`IsOwnerManagedByKueueForObject`,
    which Kueue's priority defaulting checks)."""
    managed = tuple(k for k in kinds if k.framework is not None)
    return f"(({POD.condition}) ? !{has_controller()} : !{controlled_by(managed)})"


def render(view: ClusterView) -> Iterator[Manifest]:
    held = [
        (tenant, queue)
        for tenant in view.tenants
        if (queue := view.queue_of(tenant.team)) is not None
        and queue.cluster == view.cluster.name
        and queue.priorities
    ]
    if view.cluster.scheduler == "volcano":
        for tenant, queue in held:
            yield from _volcano(tenant, queue)
    else:
        yield from _kueue(view, held)


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


def _map(entries: Mapping[str, str | Sequence[str]]) -> str:
    """A CEL map literal from string keys to strings or lists of strings, in key order; every
    key and value is a string literal (`cel_string`), so no name can end one early."""
    items = (
        f"{cel_string(key)}: {cel_string(value) if isinstance(value, str) else cel_list(value)}"
        for key, value in sorted(entries.items())
    )
    return "{" + ", ".join(items) + "}"


def _team_variables(
    held: Sequence[tuple[Tenant, Queue]], *, required: bool
) -> list[dict[str, str]]:
    """The request's team and what the policy holds it to, each a lookup in a map that names
    each namespace, team or queue once: `team` (of the namespace), `queue` (the team's),
    `classes` and `classText` (the queue's classes, as a list and as the messages list them),
    and where the label is required, `teamPriority` (the class to name; empty for a team with
    no priority and a queue with no default, whose workloads may go without)."""
    teams = {ns.name: tenant.team.name for tenant, _ in held for ns in tenant.namespaces}
    queues = {tenant.team.name: queue.name for tenant, queue in held}
    classes = {queue.name: _classes(queue) for _, queue in held}
    variables = [
        {"name": "team", "expression": f"{_map(teams)}[namespaceObject.metadata.name]"},
        {"name": "queue", "expression": f"{_map(queues)}[variables.team]"},
        {"name": "classes", "expression": f"{_map(classes)}[variables.queue]"},
        {
            "name": "classText",
            "expression": f"{_map({q: ', '.join(c) for q, c in classes.items()})}[variables.queue]",
        },
    ]
    if required:
        priorities = {}
        for tenant, queue in held:
            default = team_priority(tenant.team, queue)
            priorities[tenant.team.name] = class_name(queue, default) if default else ""
        variables.append(
            {"name": "teamPriority", "expression": f"{_map(priorities)}[variables.team]"}
        )
    return variables


def _kueue(view: ClusterView, held: Sequence[tuple[Tenant, Queue]]) -> Iterator[Manifest]:
    kinds = priority_kinds(view.cluster)
    if not kinds or not held:  # a Kueue that manages no kind: nothing to give a priority to
        return
    mutating = priority_enforcement(view.cluster) == "mutating"
    validations = [
        {
            "expression": f"!('{PRIORITY_LABEL}' in variables.labels) || "
            f"variables.labels['{PRIORITY_LABEL}'] in variables.classes",
            "message": f"the label {PRIORITY_LABEL} may name only a priority of the team's queue",
            "messageExpression": _message_expression(_FOREIGN),
            "reason": "Forbidden",
        }
    ]
    if not mutating:
        validations.append(
            {
                "expression": f"'{PRIORITY_LABEL}' in variables.labels || "
                "!variables.ownWorkload || variables.teamPriority == ''",
                "message": f"workloads must name their priority: set the label {PRIORITY_LABEL} "
                "to a priority of the team's queue (on a CronJob, in "
                "spec.jobTemplate.metadata.labels)",
                "messageExpression": _message_expression(_REQUIRED),
                "reason": "Forbidden",
            }
        )
    policy = validating_policy(
        POLICY_NAME,
        resource_rules(kinds),
        validations,
        variables=[
            _labels_variable(),
            {"name": "ownWorkload", "expression": _own_workload(kinds)},
            *_team_variables(held, required=not mutating),
        ],
        match_conditions=[
            {"name": "submitted-by-a-team", "expression": f"!({platform_account(view)})"},
            {"name": "a-kind-kueue-manages", "expression": any_kind(kinds)},
        ],
    )
    namespaces = [ns.name for tenant, _ in held for ns in tenant.namespaces]
    yield from policy_pair(policy, namespaces, view.cluster.origin.location)
    if mutating:
        managed = kueue_kinds(view.cluster)
        for tenant, queue in held:
            team = tenant.team
            default = team_priority(team, queue)
            if default is None:
                continue
            source = team.origin.at("spec", "priority") if team.priority else team.origin.location
            yield from _mutating(
                team,
                class_name(queue, default),
                managed,
                [ns.name for ns in tenant.namespaces],
                source,
            )


def _mutating(
    team: Team,
    value: str,
    kinds: tuple[WorkloadKind, ...],
    namespaces: list[str],
    source: Location,
) -> Iterator[Manifest]:
    """The label set on create, for the objects Kueue makes a Workload of (whoever creates
    them: a CronJob's Jobs come from the CronJob controller)."""
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
            "matchConstraints": {"resourceRules": resource_rules(kinds, operations=("CREATE",))},
            "matchConditions": [
                {
                    "name": "no-priority-label",
                    "expression": "!has(object.metadata.labels) || "
                    f"!('{PRIORITY_LABEL}' in object.metadata.labels)",
                },
                {"name": "a-kind-kueue-manages", "expression": any_kind(kinds)},
                {"name": "its-own-workload", "expression": _own_workload(kinds)},
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
