"""Volcano objects of one cluster: hierarchical Queues and the gang defaults of team namespaces.

The same admission plans as Kueue (`renderer.model.queue_plans`), expressed in Volcano's vocabulary:

- a parent Queue per gpuplane Queue (`parent: root`), whose `capability` is what its pools hold;
- a team Queue per team (`<team>`, under its parent, Kueue's team Cohort): `deserved` is the
  team's nominal quota, `guarantee.resource` the part the team never lends (nominal -
  lendingLimit), `capability` nominal + borrowingLimit (left out where borrowing is unlimited,
  so the parent's applies): the team's limits hold across all its purposes;
- a leaf Queue per plan (`<team>-<purpose>`, under its team Queue), with nothing deserved of its
  own: its jobs use the team's; its `capability` only closes the GPU resources of pools that do
  not serve its purpose;
- a ConfigMap `volcano-job-defaults` in each team namespace, holding a gang Job template that
  submits to the namespace's queue (inert: a template is data, not a job);
- Helm values for the Volcano chart that turn on the `capacity` plugin with `enableHierarchy`,
  without which the scheduler ignores `parent`.

Volcano counts quota per resource name, not per pool: see docs/volcano.md for what that loses.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from renderer.model import nodes, quantity
from renderer.model.capacity import is_dra_resource, pool_offers
from renderer.model.choices import QueueStrategy
from renderer.model.names import VOLCANO_ADDON
from renderer.model.platform import Namespace, Pool, Queue
from renderer.model.queue_plans import (
    CPU,
    MEMORY,
    ClusterQueuePlan,
    TeamCohortPlan,
    amount_text,
    cluster_queues,
    cohorts,
    covered_of,
    team_cohorts,
)
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, Values, metadata
from workflows.suites import jobs, placement

LAYER = "queueing"
QUEUE_API = "scheduling.volcano.sh/v1beta1"
JOB_API = "batch.volcano.sh/v1alpha1"
ROOT_QUEUE = "root"
"""The queue the capacity plugin creates at the top of the hierarchy."""

SCHEDULER_NAME = "volcano"
DEFAULTS_CONFIGMAP = "volcano-job-defaults"
GANG_SIZE = 2
"""Workers in the template gang; `minAvailable` equals it, so the job starts all or nothing."""

DEQUEUE_STRATEGY: Mapping[QueueStrategy, str] = {"BestEffortFIFO": "traverse", "StrictFIFO": "fifo"}
"""Kueue's queueing strategy and Volcano's nearest `dequeueStrategy`: `fifo` lets a job that
cannot be placed block the jobs of equal or lower priority behind it; `traverse` does not."""


SCHEDULER_CONFIG: dict[str, Any] = {
    "actions": "enqueue, allocate, preempt, reclaim, backfill",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]
        },
        {
            "plugins": [
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {"name": "capacity", "enableHierarchy": True},
                {"name": "nodeorder"},
                {"name": "binpack"},
            ]
        },
    ],
}
"""The scheduler configuration hierarchical queues need: the `capacity` plugin with
`enableHierarchy` (not `proportion`), and the `reclaim` action so a queue gets back what it
deserves from queues that borrowed it."""

Amounts = dict[str, Decimal]


def render(view: ClusterView) -> Iterator[Output]:
    """Every Volcano object of one cluster: scheduler values, parent and child Queues, then the
    gang defaults of each team namespace."""
    addon = view.cluster.addons.get(VOLCANO_ADDON)
    yield Values(
        LAYER,
        "volcano",
        {"custom": {"scheduler_config_override": json.dumps(SCHEDULER_CONFIG)}},
        addon.origin.location if addon is not None else view.cluster.origin.location,
    )
    plans = cluster_queues(view)
    by_cohort = cohorts(plans)
    suites = placement.targets(view)
    for queue in view.queues:
        children = list(by_cohort.get(queue.name, ()))
        pools = [p for p in view.pools if p.name in queue.pools]
        ceilings = {pool.name: _ceiling(pool, children) for pool in pools}
        parent_capability = _host_everywhere(_add(ceilings.values()), ceilings.values())
        teams = team_cohorts(children)
        yield _parent_queue(queue, teams, parent_capability)
        for team in teams:
            yield _team_queue(team, ceilings, parent_capability)
        for plan in children:
            yield _child_queue(plan, parent_capability)
        suite = [t for t in suites if t.queue.name == queue.name]
        if suite:
            yield _suite_queue(queue, suite, parent_capability)
    for plan in plans:
        for namespace in plan.namespaces:
            yield _job_defaults(plan, namespace)


# --- quantities ---------------------------------------------------------------------------------


def _physical(pool: Pool) -> Amounts:
    """What the pool holds at its maximum size, per resource name (cpu and memory only when the
    pool declares its host figures)."""
    held: Amounts = {o.resource: Decimal(o.maximum) for o in pool_offers(pool)}
    if pool.host_cpus is not None and pool.host_memory is not None:
        held[CPU] = Decimal(pool.host_cpus) * pool.nodes.max
        held[MEMORY] = quantity.parse(pool.host_memory) * pool.nodes.max
    return held


def _ceiling(pool: Pool, plans: Iterable[ClusterQueuePlan]) -> Amounts:
    """The pool's share of its parent's capability: what it holds, or what the queue's teams are
    promised there when an oversubscribed queue promises more (Volcano refuses a `deserved`
    above `capability`, and a child's `capability` above its parent's)."""
    ceiling = _physical(pool)
    promised: Amounts = {}
    for plan in plans:
        for flavor in plan.flavors:
            if flavor.pool.name == pool.name:
                for resource, amount in flavor.resources.items():
                    promised[resource] = promised.get(resource, Decimal(0)) + amount.nominal
    for resource, total in promised.items():
        if resource in ceiling:
            ceiling[resource] = max(ceiling[resource], total)
    return ceiling


def _add(parts: Iterable[Mapping[str, Decimal]]) -> Amounts:
    """Per-resource sums."""
    total: Amounts = {}
    for part in parts:
        for resource, value in part.items():
            total[resource] = total.get(resource, Decimal(0)) + value
    return total


def _host_everywhere(total: Amounts, parts: Iterable[Collection[str]]) -> Amounts:
    """`total` without cpu and memory unless every part has them: Volcano counts a job's CPU
    against its queue on whichever pool the job runs, so a cap summed over some of the pools
    would stop jobs on the others."""
    having = list(parts)
    for host in (CPU, MEMORY):
        if host in total and not all(host in part for part in having):
            del total[host]
    return total


def _deserved(plan: TeamCohortPlan) -> Amounts:
    """Nominal quota per resource name, summed over the plan's flavors (pools)."""
    return _add({r: a.nominal for r, a in f.resources.items()} for f in plan.flavors)


def _guarantee(plan: TeamCohortPlan) -> Amounts:
    """The part of the nominal quota the team never lends: nominal - lendingLimit, summed over
    the plan's flavors; no lending limit means all of it may be lent (Kueue's meaning)."""
    return _add(
        {
            r: max(a.nominal - a.lending_limit, Decimal(0))
            for r, a in f.resources.items()
            if a.lending_limit is not None
        }
        for f in plan.flavors
    )


def _capability(plan: TeamCohortPlan, ceilings: Mapping[str, Amounts]) -> Amounts:
    """Nominal + borrowing limit, per flavor capped at the pool's ceiling; a resource whose
    borrowing is unlimited on some flavor is left out (the parent's capability applies)."""
    per_flavor: list[Amounts] = []
    unlimited: set[str] = set()
    for flavor in plan.flavors:
        part: Amounts = {}
        for resource, amount in flavor.resources.items():
            if amount.borrowing_limit is None:
                unlimited.add(resource)
                continue
            ceiling = ceilings[flavor.pool.name].get(resource)
            most = amount.nominal + amount.borrowing_limit
            part[resource] = most if ceiling is None else min(most, ceiling)
        per_flavor.append(part)
    capability = _host_everywhere(_add(per_flavor), (f.resources for f in plan.flavors))
    for resource in unlimited:
        capability.pop(resource, None)
    return capability


def _closed(covered: Collection[str], parent: Amounts) -> Amounts:
    """0 of each GPU resource the parent has and `covered` does not name, so that a queue
    cannot take another purpose's (or team's) pool resource through its parent."""
    return {r: Decimal(0) for r in parent if r not in (CPU, MEMORY) and r not in covered}


def _quantities(amounts: Mapping[str, Decimal], *, keep_zero: bool = False) -> dict[str, Any]:
    """Kubernetes quantities, cpu and memory first, then GPU resource names in name order."""
    order = [r for r in (CPU, MEMORY) if r in amounts]
    order += sorted(r for r in amounts if r not in (CPU, MEMORY))
    return {r: amount_text(r, amounts[r]) for r in order if keep_zero or amounts[r] > 0}


# --- objects ------------------------------------------------------------------------------------


def _reclaimable(queue: Queue) -> bool:
    """Whether other teams may take back what a team of this queue borrowed beyond its
    `deserved`: Kueue's `reclaimWithinCohort` (Never when unset) for the whole cohort."""
    return queue.preemption.get("reclaimWithinCohort", "Never") != "Never"


def _parent_queue(
    queue: Queue, children: Iterable[TeamCohortPlan], capability: Amounts
) -> Manifest:
    """The gpuplane Queue (Kueue's cohort): the sums of its teams' deserved and guarantee, which
    Volcano requires to cover its children's, and the capability of its pools."""
    spec: dict[str, Any] = {"parent": ROOT_QUEUE}
    _amounts(
        spec,
        _add(_deserved(p) for p in children),
        _add(_guarantee(p) for p in children),
        capability,
    )
    return Manifest(
        LAYER,
        {
            "apiVersion": QUEUE_API,
            "kind": "Queue",
            "metadata": metadata(queue.name, queue=queue.name),
            "spec": spec,
        },
        queue.origin.location,
    )


def _amounts(
    spec: dict[str, Any], deserved: Amounts, guarantee: Amounts, capability: Amounts
) -> None:
    """A queue's `deserved`, `guarantee.resource` and `capability`, each only where it says
    something (zeros kept in the capability: they close a resource)."""
    if _quantities(deserved):
        spec["deserved"] = _quantities(deserved)
    if _quantities(guarantee):
        spec["guarantee"] = {"resource": _quantities(guarantee)}
    if capability:
        spec["capability"] = _quantities(capability, keep_zero=True)


def _team_queue(team: TeamCohortPlan, ceilings: Mapping[str, Amounts], parent: Amounts) -> Manifest:
    """One team under its Queue's parent: the team's quota and limits, shared by its leaves."""
    meta = metadata(
        team.name, team=team.team.name, cost_center=team.team.cost_center, queue=team.queue.name
    )
    spec: dict[str, Any] = {
        "parent": team.queue.name,
        "weight": 1,
        "reclaimable": _reclaimable(team.queue),
    }
    capability = _capability(team, ceilings)
    capability.update(_closed(covered_of(team.flavors), parent))
    _amounts(spec, _deserved(team), _guarantee(team), capability)
    return Manifest(
        LAYER,
        {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": meta, "spec": spec},
        team.team.origin.location,
    )


def _child_queue(plan: ClusterQueuePlan, parent: Amounts) -> Manifest:
    """One team and namespace purpose: the leaf queue its jobs are submitted to."""
    team = plan.team
    meta = metadata(
        plan.name,
        team=team.name,
        cost_center=team.cost_center,
        queue=plan.queue.name,
        purpose=plan.purpose,
    )
    meta["annotations"] = {
        "gpuplane.dev/pools": ", ".join(f.pool.name for f in plan.flavors) or "none"
    }
    spec: dict[str, Any] = {
        "parent": plan.cohort.name,
        "weight": 1,
        "reclaimable": _reclaimable(plan.queue),
        "dequeueStrategy": DEQUEUE_STRATEGY[plan.queue.strategy],
    }
    capability = _quantities(_closed(plan.covered_resources, parent), keep_zero=True)
    if capability:
        spec["capability"] = capability
    return Manifest(
        LAYER,
        {"apiVersion": QUEUE_API, "kind": "Queue", "metadata": meta, "spec": spec},
        team.origin.location,
    )


def _suite_queue(queue: Queue, targets: list[placement.Target], parent: Amounts) -> Manifest:
    """The acceptance suites' leaf queue under the cohort's parent (`<queue>-acceptance`, Kueue's
    platform ClusterQueue): nothing deserved, so it runs only on what the teams leave idle, and
    `reclaimable`, so a team takes it back; its capability is the most one suite Job asks (cpu and
    memory only when every pool has them, and 0 of the parent's GPU resources it does not test)."""
    per_pool = [jobs.demand(t) for t in targets]
    capability = _host_everywhere(
        {r: max(d.get(r, Decimal(0)) for d in per_pool) for d in per_pool for r in d}, per_pool
    )
    for resource in parent:
        if resource not in (CPU, MEMORY):
            capability.setdefault(resource, Decimal(0))
    return Manifest(
        LAYER,
        {
            "apiVersion": QUEUE_API,
            "kind": "Queue",
            "metadata": metadata(targets[0].cluster_queue, queue=queue.name, suite="acceptance"),
            "spec": {
                "parent": queue.name,
                "weight": 1,
                "reclaimable": True,
                "dequeueStrategy": DEQUEUE_STRATEGY["BestEffortFIFO"],
                "capability": _quantities(capability, keep_zero=True),
            },
        },
        queue.origin.location,
    )


def _job_defaults(plan: ClusterQueuePlan, namespace: Namespace) -> Manifest:
    """A ConfigMap with the queue name and a gang Job template for this namespace, as JSON text
    (`kubectl create -f` reads it): a template is data until a person submits it."""
    team = plan.team
    return Manifest(
        LAYER,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(
                DEFAULTS_CONFIGMAP, namespace.name, team=team.name, cost_center=team.cost_center
            ),
            "data": {
                "queue": plan.name,
                "job.json": json.dumps(job_template(plan, namespace)),
            },
        },
        namespace.origin.location,
    )


def job_template(plan: ClusterQueuePlan, namespace: Namespace) -> dict[str, Any]:
    """A Volcano Job that reaches the plan's queue as one gang: `schedulerName: volcano`,
    `queue`, `minAvailable` equal to the workers (the PodGroup's minMember), the team's
    priority, pods kept to the plan's pools, and the whole gang restarted when a pod fails or is
    evicted. Image and command are the team's to add."""
    team = plan.team
    labels = {"gpuplane.dev/team": team.name, "gpuplane.dev/cost-center": team.cost_center}
    queue = plan.queue
    priority = queue.priority(team.priority) if team.priority else queue.default_priority
    pools = [f.pool for f in plan.flavors]
    container: dict[str, Any] = {"name": "worker"}
    gpu = _template_gpu(plan)
    if gpu is not None:
        container["resources"] = {"limits": {gpu: 1}}
    pod: dict[str, Any] = {"restartPolicy": "Never"}
    if pools:
        pod["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": f"{nodes.PREFIX}pool",
                                    "operator": "In",
                                    "values": [p.name for p in pools],
                                }
                            ]
                        }
                    ]
                }
            }
        }
        tolerations = _unique(t for p in pools for t in nodes.tolerations(p))
        if tolerations:
            pod["tolerations"] = tolerations
    pod["containers"] = [container]
    spec: dict[str, Any] = {"schedulerName": SCHEDULER_NAME, "queue": plan.name}
    if priority is not None:
        spec["priorityClassName"] = f"{queue.name}-{priority.name}"
    spec.update(
        {
            "minAvailable": GANG_SIZE,
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ],
            "tasks": [
                {
                    "name": "worker",
                    "replicas": GANG_SIZE,
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                }
            ],
        }
    )
    return {
        "apiVersion": JOB_API,
        "kind": "Job",
        "metadata": {"name": "gang-job", "namespace": namespace.name, "labels": labels},
        "spec": spec,
    }


def _template_gpu(plan: ClusterQueuePlan) -> str | None:
    """The GPU resource a template worker requests: the first one the team has quota for (else
    the first it may borrow); None on DRA pools, whose devices come through ResourceClaims."""
    ordered = sorted(plan.flavors, key=lambda f: f.borrow_only)
    for flavor in ordered:
        for resource in sorted(flavor.resources):
            if resource not in (CPU, MEMORY) and not is_dra_resource(resource):
                return resource
    return None


def _unique(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen
