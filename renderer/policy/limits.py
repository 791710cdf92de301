"""Policy on Kubernetes' own limits: the names gpuplane builds from an input's name must still fit
where Kubernetes, Kueue or Argo Workflows put them, and a pool's totals must stay amounts they
can count (docs/api-limits.md).

Every input name is a DNS-1123 label of at most 63 characters, but gpuplane adds to some of them:
a team's ClusterQueue is `<team>-<purpose>`, a queue's WorkloadPriorityClass
`<queue>-<priority>`, a pool's acceptance WorkflowTemplate `acceptance-<pool>`. Each of those
names ends up in a label value or under a limit of 63, so a name that fits its own field can
still break an object built from it; the output check (`renderer.output.api_limits`) would then
refuse the object at render, and this rule says so at `validate`, on the input line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Diagnostic, Location
from renderer.model.capacity import pool_offers
from renderer.model.names import suite_cluster_queue_name
from renderer.model.platform import Platform, Pool
from renderer.model.quantity import Unit, range_problem
from renderer.model.queue_plans import cluster_queue_name
from renderer.policy.rule import error, rule

NAME_MAX = 63
"""A label value's limit (apimachinery `LabelValueMaxLength`), and Argo Workflows' for a
WorkflowTemplate's name (workflow/validate `maxCharsInObjectName`)."""

SUITE_TEMPLATES = ("acceptance-", "benchmark-")
WINDOW_TEMPLATE = "acceptance-window-"
"""The window run's template of a pool, on a Kueue cluster with an acceptance window (longer
than the others, and than its queue `gpuplane-window-<pool>`)."""
"""The pool's WorkflowTemplates, `acceptance-<pool>` and `benchmark-<pool>`
(`workflows.suites.workflow_templates.acceptance_name`, `benchmark_name`)."""


@dataclass(frozen=True, slots=True)
class _Derived:
    name: str
    kind: str
    why: str
    part: str
    """The input name the derived one is built from, and may be shortened."""
    field: str
    """Where that name is written, for the hint."""
    at: Location
    notes: tuple[tuple[str, Location], ...] = ()
    other: str = ""
    """The other name it is built from, when shortening `part` alone may not do."""


def _too_long(found: _Derived) -> Diagnostic:
    over = len(found.name) - NAME_MAX
    hint = f"shorten {found.field} '{found.part}' to at most {len(found.part) - over} characters"
    if found.other:
        hint += f", or {found.other}"
    if len(found.part) <= over:
        hint = f"shorten {found.other}: {found.field} cannot be short enough alone"
    return error(
        "derived-name-too-long",
        f"{found.kind} name '{found.name}' is {len(found.name)} characters, "
        f"{over} more than the {NAME_MAX} it may have: {found.why}",
        found.at,
        hint,
        found.notes,
    )


def _team_names(p: Platform) -> Iterator[_Derived]:
    """Each team's ClusterQueues, one per purpose, on the clusters that run Kueue."""
    for team in p.teams.values():
        seen: set[str] = set()
        for ns in team.namespaces:
            cluster = p.clusters.get(ns.cluster)
            if cluster is None or cluster.scheduler != "kueue" or ns.purpose in seen:
                continue
            seen.add(ns.purpose)
            yield _Derived(
                cluster_queue_name(team.name, ns.purpose),
                "ClusterQueue",
                "Kueue labels the pods it admits with their ClusterQueue "
                "(kueue.x-k8s.io/cluster-queue-name) only when the name is a label value",
                team.name,
                "the team's name (metadata.name, and the file's)",
                ns.origin.at("purpose"),
                (("the team's name", team.origin.at("metadata", "name")),),
            )


def _queue_names(p: Platform) -> Iterator[_Derived]:
    """Each queue's suite LocalQueue and WorkloadPriorityClasses, on clusters that run Kueue."""
    for queue in p.queues.values():
        cluster = p.clusters.get(queue.cluster)
        if cluster is None or cluster.scheduler != "kueue":
            continue
        yield _Derived(
            suite_cluster_queue_name(queue.name),
            "LocalQueue",
            "the acceptance suites' Jobs name it in the label kueue.x-k8s.io/queue-name",
            queue.name,
            "the queue's name (metadata.name, and the file's)",
            queue.origin.at("metadata", "name"),
        )
        for prio in queue.priorities:
            yield _Derived(
                f"{queue.name}-{prio.name}",
                "WorkloadPriorityClass",
                "workloads name their priority in the label kueue.x-k8s.io/priority-class",
                prio.name,
                "the priority's name",
                prio.origin.at("name"),
                (("the queue's name", queue.origin.at("metadata", "name")),),
                f"the queue's name '{queue.name}'",
            )


def _pool_names(p: Platform) -> Iterator[_Derived]:
    for pool in p.pools.values():
        prefix = max(SUITE_TEMPLATES, key=len)  # the longer one overflows first
        cluster = p.clusters.get(pool.cluster)
        if cluster is not None and cluster.acceptance_window and cluster.scheduler == "kueue":
            prefix = WINDOW_TEMPLATE
        yield _Derived(
            f"{prefix}{pool.name}",
            "WorkflowTemplate",
            "Argo Workflows refuses a longer WorkflowTemplate name",
            pool.name,
            "the pool's name (metadata.name, and the file's)",
            pool.origin.at("metadata", "name"),
        )


@rule("derived-name-too-long", scope="team")
def derived_names_fit(p: Platform) -> Iterator[Diagnostic]:
    """A name gpuplane builds from an input's name is longer than Kubernetes, Kueue or Argo
    Workflows take it.

    A team's ClusterQueue is named `<team>-<purpose>`, and Kueue labels the pods it admits with
    that name only when it is a label value (at most 63 characters); a queue's
    WorkloadPriorityClass is `<queue>-<priority>` and its acceptance LocalQueue
    `<queue>-acceptance`, both named in workload labels; a pool's acceptance and benchmark
    WorkflowTemplates are `acceptance-<pool>` and `benchmark-<pool>`, which Argo Workflows
    refuses beyond 63, and on a Kueue cluster with an acceptance window also the longer
    template name `acceptance-window-<pool>` (its queues, `gpuplane-window-<pool>`, are
    shorter). A name that fits its own field can still break what is built from it:
    the sync fails, or a label silently goes missing.

    To satisfy it: shorten the name the hint points at, to the length it gives: a team's
    `metadata.name` (and its file's name; its namespaces start with it) so that
    `<team>-notebooks` fits, a queue's `metadata.name` or a priority's `name` in
    `spec.priorities`, a pool's `metadata.name`. Each is at most 63 characters less what
    gpuplane adds.
    """
    reported: set[tuple[str, str]] = set()
    for found in (*_team_names(p), *_queue_names(p), *_pool_names(p)):
        if len(found.name) > NAME_MAX and (found.kind, found.name) not in reported:
            reported.add((found.kind, found.name))
            yield _too_long(found)


def _pool_factor(p: Platform, pool: Pool) -> int:
    """How many of one node's amounts a ClusterQueue's flavor of the pool can hold: the pool's
    largest node count times the largest oversubscription of a queue that lists it (nominal
    quotas add up to the pool times that, and a team's CPU and memory follow its GPUs)."""
    ratios = [q.oversubscription for q in p.queues.values() if pool.name in q.pools]
    return max(1, pool.nodes.max) * max([1, *(math.ceil(r) for r in ratios)])


def _pool_amounts(pool: Pool) -> Iterator[tuple[tuple[str, ...], str | int, Unit, str]]:
    """(field, value per node, unit, what) of each amount a node of the pool has."""
    if pool.host_cpus is not None:
        yield ("spec", "host", "cpus"), pool.host_cpus, "cpu", "CPUs"
    if pool.host_memory is not None:
        yield ("spec", "host", "memory"), pool.host_memory, "bytes", "memory"
    for offer in pool_offers(pool):
        yield ("spec", "gpusPerNode"), offer.per_node, "count", offer.resource


def _per_node(most: str, unit: Unit) -> str:
    """The largest amount as `spec.host` writes it: CPUs in whole cores (`range_problem` gives
    millicores, which `host.cpus`, an integer, cannot hold)."""
    if unit == "cpu" and most.endswith("m"):
        return str(int(most[:-1]) // 1000)
    return most


@rule("pool-amount-out-of-range")
def pool_amounts_countable(p: Platform) -> Iterator[Diagnostic]:
    """A pool holds more CPU, memory or GPUs than Kubernetes and Kueue can count.

    Kueue counts every quota as a 64-bit integer, CPU in millicores, and the API server checks
    a GPU count is whole through its thousandths. A team's ClusterQueue holds, for a pool, up to
    the pool's whole capacity times its queue's oversubscription, and CPU and memory in
    proportion to its GPUs: a pool of absurd nodes renders quotas that overflow, and Kueue then
    admits against numbers that mean nothing.

    To satisfy it: write the pool's real hardware: `spec.host.cpus` and `spec.host.memory` per
    node, `spec.nodes` (or its `max`) and `spec.gpusPerNode`, so that one node's amount times
    the nodes times the queue's `spec.oversubscription` stays within the figure the message
    gives.
    """
    for pool in p.pools.values():
        factor = _pool_factor(pool=pool, p=p)
        for field, value, unit, what in _pool_amounts(pool):
            problem = range_problem(value, unit, factor)
            if problem is None or problem.kind != "over":
                continue
            yield error(
                "pool-amount-out-of-range",
                f"pool '{pool.name}' has {value} {what} per node on up to {factor} node shares "
                f"(nodes times the queue's oversubscription), {problem.message} per node",
                pool.origin.at(*field),
                f"write the nodes' real {what}: at most {_per_node(problem.most, unit)} per node",
                (("the nodes", pool.origin.at("spec", "nodes")),),
            )
