"""Pods go where the scheduler and the queue put them, at the priority of the team's own queue.

Design: docs/security.md#node-names-catch-all-tolerations-and-priority-classes
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.security.policy_parts import (
    POD,
    cel_list,
    every_pod_spec,
    pod_specs_variable,
    pod_template_kinds,
    policy_pair,
    resource_rules,
    validating_policy,
)
from renderer.layers.security.priority import class_name
from renderer.model.platform import Team
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest

SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
"""The API server's built-in classes (values 2000000000 and 2000001000), refused in team
namespaces like any class of another queue."""


def policy_name(team: Team) -> str:
    return f"gpuplane-scheduling-{team.name}"


def allowed_classes(view: ClusterView, team: Team) -> list[str]:
    """The PriorityClasses a team's pods may name: its queue's, when the queue is this
    cluster's (a queue of another cluster renders no class here)."""
    queue = view.queue_of(team)
    if queue is None or queue.cluster != view.cluster.name:
        return []
    return [class_name(queue, p) for p in queue.priorities]


def _pod_update() -> str:
    """CEL: the request updates a Pod (not a template)."""
    return f"request.operation == 'UPDATE' && {POD.condition}"


def _tolerations(obj: str) -> str:
    return f"(has({obj}.spec.tolerations) ? size({obj}.spec.tolerations) : 0)"


def validations(team: Team, allowed: list[str]) -> list[dict[str, str]]:
    """The three checks, each with a message that says what to change."""
    pod_update = _pod_update()
    unchanged_tolerations = f"({pod_update} && {_tolerations('object')} == "
    unchanged_tolerations += f"{_tolerations('oldObject')})"
    if allowed:
        classes = (
            f"team {team.name} may use only the priorities of its queue: set "
            f"spec.priorityClassName to one of {', '.join(allowed)}, or leave it out"
        )
    else:
        classes = (
            f"team {team.name}'s queue has no priorities on this cluster: leave "
            "spec.priorityClassName out"
        )
    return [
        {
            "expression": f"({pod_update}) || "
            + every_pod_spec("!has(s.nodeName) || s.nodeName == ''"),
            "message": "pods in team namespaces are placed by the scheduler and the queue: "
            "remove spec.nodeName and select nodes with the queue's flavors (or nodeSelector)",
            "reason": "Forbidden",
        },
        {
            "expression": f"{unchanged_tolerations} || "
            + every_pod_spec(
                "!has(s.tolerations) || s.tolerations.all(t, has(t.key) && t.key != '')"
            ),
            "message": "a toleration without a key tolerates every taint (GPU pools, control "
            "plane, draining and failing nodes): name the taint's key in each of "
            "spec.tolerations",
            "reason": "Forbidden",
        },
        {
            "expression": f"({pod_update}) || "
            + every_pod_spec(
                "!has(s.priorityClassName) || s.priorityClassName == '' || "
                f"s.priorityClassName in {cel_list(allowed)}"
            ),
            "message": classes,
            "reason": "Forbidden",
        },
    ]


def render(view: ClusterView) -> Iterator[Manifest]:
    for tenant in view.tenants:
        yield from _team_policy(view, tenant)


def _team_policy(view: ClusterView, tenant: Tenant) -> list[Manifest]:
    team = tenant.team
    kinds = pod_template_kinds(view)
    policy = validating_policy(
        policy_name(team),
        resource_rules(kinds),
        validations(team, allowed_classes(view, team)),
        variables=[pod_specs_variable(kinds)],
        team=team.name,
        cost_center=team.cost_center,
    )
    source = team.origin.at("spec", "queue")
    return policy_pair(policy, [ns.name for ns in tenant.namespaces], source)
