"""Pods go where the scheduler and the queue put them, at the priority of the team's own queue.

One ValidatingAdmissionPolicy per team, over every pod spec of its workloads (Pods, and the pod
templates of `admission.pod_template_kinds`), with three checks:

- **no `spec.nodeName`**. A pod created with a node name is never scheduled: the kubelet of that
  node runs it, past the kube-scheduler's filters, Kueue's flavor node selectors (the pool the
  quota was granted on) and every NoSchedule taint of the GPU pools (`renderer.model.nodes`).
  The scheduler itself never creates a pod with a node name: it binds a pending pod through the
  `pods/binding` subresource (a `Binding` object POSTed to `pods/<name>/binding`), and a policy
  whose rules name the resource `pods` matches no subresource (`pods/*` or `pods/binding` would),
  so normal scheduling does not pass through this policy at all. On UPDATE a pod's node name
  cannot change (pod update validation; scheduling gates make only node selectors and affinity
  mutable), so Pods are checked on CREATE; templates on CREATE and UPDATE.
- **no toleration with an empty key**. An empty key with `operator: Exists` (the only operator
  the API server accepts without a key) tolerates every taint: the GPU pools' NoSchedule taints,
  the control plane's, `node.kubernetes.io/unschedulable` on nodes being drained, and, with
  `NoExecute`, the not-ready and unreachable taints that evict pods from a failing node. That
  puts a team's pod on nodes no queue granted it, and keeps it there, so it is refused; a
  toleration of a named taint (a pool's `gpuplane.dev/pool`) is left to the queue, which counts
  what the pod holds on that pool. A pod's tolerations can only grow on UPDATE: an update that
  leaves their number unchanged (a finalizer removed, a label set) is not checked again.
- **only the PriorityClasses of the team's queue** (`<queue>-<priority>`, rendered by the
  tenancy layer, the names `priority.class_name` gives). PriorityClasses are cluster-wide and
  the kube-scheduler preempts lower-priority pods of any namespace for a higher one, so a pod
  naming another queue's top class (`prod-production`) evicts other teams' pods. The built-in
  `system-cluster-critical` and `system-node-critical` are refused too: since Kubernetes 1.17
  the Priority admission plugin no longer keeps them to `kube-system`; what limits them is the
  API server's ResourceQuota admission configuration (pods of those classes need a quota with a
  matching PriorityClass scope in their namespace), which is the cluster admin's setting, not a
  guarantee this repository can see. A pod without a class gets the cluster's global default
  (no gpuplane class is one) and is not refused.

Nothing here exempts a platform service account: a controller's pods carry their template's
node name, tolerations and class, and no controller of the platform sets any of them on a team's
pod otherwise (Kueue adds keyed flavor tolerations; Volcano's job controller copies the Job's
`spec.priorityClassName`, which `priority` holds to the same list).
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
