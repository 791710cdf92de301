"""Kueue's admission once the ClusterQueue is known: flavors, partial admission, preemption,
and what the nodes and the namespace's ResourceQuota decide beyond Kueue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from renderer.commands.fit import podsets
from renderer.commands.fit.flavors import Assigner, Assignment, rdma_notes, sharing_notes
from renderer.commands.fit.podsets import Workload
from renderer.commands.fit.result import (
    BORROWS,
    FITS,
    HOST_RESOURCES,
    NEVER,
    FitResult,
    PodSetFit,
    amount,
    resource_order,
)
from renderer.layers.gpu import sharing as gpu_sharing
from renderer.layers.queueing import kueue
from renderer.layers.tenancy import DEFAULT_CONTAINER
from renderer.model import nodes, quantity
from renderer.model.admission import ClusterQueuePlan, amount_text, limits_of
from renderer.model.capacity import PURPOSE_ORDER, maximum_holding, pool_offers, usable_quotas
from renderer.model.platform import Namespace, Platform, Pool, Queue, Team

RDMA_RESOURCE_PREFIXES = ("rdma/", "vpc.amazonaws.com/efa")
"""The names RDMA device plugins advertise (the Network Operator's and CoreWeave's `rdma/…`,
AWS's EFA plugin), for a hint when a cluster's Kueue does not exclude one."""


class Admitter:
    """One job against one platform, once its ClusterQueue and priority are known: assign
    flavors, then check what Kueue does not."""

    def __init__(self, platform: Platform, display: str, workload: Workload) -> None:
        self.platform = platform
        self.display = display
        self.workload = workload
        self.notes: list[str] = list(workload.notes)

    def result(self, verdict: str, summary: str, **fields: Any) -> FitResult:
        base: dict[str, Any] = {"kind": self.workload.kind, "name": self.workload.name}
        base.update(fields)
        base.setdefault("notes", tuple(self.notes))
        return FitResult(self.display, verdict, summary, **base)

    def admit(
        self,
        team: Team,
        ns: Namespace,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        context: dict[str, Any],
        policy: tuple[int, bool],
        excluded: tuple[str, ...] = kueue.EXCLUDED_RESOURCE_PREFIXES,
    ) -> FitResult:
        """Kueue's flavor assignment, then what the nodes and the namespace quota decide.

        `excluded` is the cluster's `resources.excludeResourcePrefixes`: Kueue drops those
        resources from every pod set before it assigns flavors (the pools' RDMA resources)."""
        priority, fair_sharing = policy
        defaults = {**DEFAULT_CONTAINER, **team.defaults}
        default_requests = {
            "cpu": quantity.parse(defaults["cpu"]),
            "memory": quantity.parse(defaults["memory"]),
        }
        default_limits = {"memory": quantity.parse(defaults["memory"])}
        for ps in self.workload.pod_sets:
            for container, resource in ps.limit_without_request():
                if resource in default_requests:
                    shown = amount(resource, default_requests[resource])
                    self.notes.append(
                        f"pod set {ps.name}, container {container}: a {resource} limit without a "
                        f"request; Kueue counts the namespace's LimitRange default request "
                        f"({shown}), not the limit"
                    )
            if ps.resource_claims:
                self.notes.append(
                    f"pod set {ps.name} claims devices through DRA ({', '.join(ps.resource_claims)}): "
                    "fit does not count them"
                )
            over = ps.over_limit()
            if over:
                listed = ", ".join(f"{c} {r}" for c, r in over)
                return self.result(
                    NEVER,
                    "requests exceed limits",
                    **context,
                    message="requests must not exceed its limits",
                    reasons=(f"pod set {ps.name}: the request exceeds the limit for {listed}",),
                )
        # resources the Kueue configuration excludes are not counted against any quota
        requested = {
            ps.name: ps.requests(default_requests, default_limits) for ps in self.workload.pod_sets
        }
        per_pod = {name: podsets.drop_excluded(r, excluded) for name, r in requested.items()}
        assigner = Assigner(plan, cohort, per_pod)
        counts = {ps.name: ps.count for ps in self.workload.pod_sets}
        unit = assigner.assign(self.workload.pod_sets, counts)
        admitted_replicas = 1
        replicas = self.workload.replicas
        final = unit
        if unit.failed:
            partial = self.partial(assigner, counts)
            if partial is not None:
                final = partial
        elif replicas > 1:
            best, best_n = unit, 1
            low, high = 1, replicas
            while low <= high:
                mid = (low + high) // 2
                trial = assigner.assign(
                    self.workload.pod_sets, {k: v * mid for k, v in counts.items()}
                )
                if trial.failed:
                    high = mid - 1
                else:
                    best, best_n, low = trial, mid, mid + 1
            final, admitted_replicas = best, best_n
        fields: dict[str, Any] = dict(
            context,
            replicas=replicas,
            admitted_replicas=admitted_replicas,
            replica_unit=self.workload.replica_unit,
            flavors_tried=tuple(f.pool.name for f in assigner.flavors),
        )
        if final.failed:
            fields["admitted_replicas"] = 0
            return self.never(assigner, plan, final, fields)
        physical = self.physical(assigner, final) + self.namespace_quota(team, ns, final)
        quotas = assigner.quotas(final.usage)
        lenders = assigner.lenders(quotas)
        one = unit if replicas > 1 else final  # one Workload's pod sets; the quota of them all
        fields.update(pod_sets=tuple(one.pod_sets), quotas=quotas, lenders=lenders)
        self.notes.extend(sharing_notes(assigner, final))
        self.notes.extend(rdma_notes(assigner, one, requested))
        self.notes.extend(
            f"pod set {ps.name} asks for no GPU, yet Kueue gives it flavor {ps.flavor} like any "
            f"other: its pods run on pool {ps.flavor}'s nodes"
            for ps in one.pod_sets
            if ps.flavor and not any(r not in HOST_RESOURCES for r in ps.per_pod)
        )
        if physical:
            chosen = ", ".join(sorted({ps.flavor or "" for ps in final.pod_sets}))
            return self.result(
                NEVER,
                "its pods could never be scheduled",
                **fields,
                reasons=(
                    *physical,
                    f"Kueue would admit it to flavor {chosen} (the quota allows it), but the "
                    "pods would stay Pending"
                    + (
                        f"; waitForPodsReady evicts and requeues it every {plan.queue.gang_timeout}"
                        if plan.queue.wait_for_pods_ready and plan.queue.gang_timeout
                        else ""
                    ),
                ),
            )
        borrowed = [q for q in quotas if q.borrowed > 0]
        verdict = BORROWS if borrowed else FITS
        partial_note = self.partial_note(final, admitted_replicas)
        if borrowed:
            by_flavor: dict[str, list[str]] = {}
            for q in borrowed:
                by_flavor.setdefault(q.flavor, []).append(
                    f"{amount(q.resource, q.borrowed)} {q.resource}"
                )
            listed = "; ".join(f"{', '.join(r)} on {f}" for f, r in by_flavor.items())
            summary = f"admitted by borrowing {listed} from cohort {plan.queue.name}"
        else:
            flavors = ", ".join(sorted({ps.flavor or "" for ps in final.pod_sets}))
            summary = f"admitted within the nominal quota of ClusterQueue {plan.name} on {flavors}"
        if partial_note:
            summary += f" ({partial_note})"
        fields["preemption"] = _preemption(plan, priority, verdict == BORROWS, fair_sharing)
        return self.result(verdict, summary, **fields)

    def partial(self, assigner: Assigner, counts: Mapping[str, int]) -> Assignment | None:
        """Kueue's partial admission: a pod set with a minimum count may run with fewer pods
        (largest that fits), for jobs with the kueue.x-k8s.io/job-min-parallelism annotation."""
        sets = self.workload.pod_sets
        minimum = sets[0].min_count if len(sets) == 1 else None
        if minimum is None or minimum >= sets[0].count:
            return None
        ps = sets[0]
        low, high, best = minimum, ps.count - 1, None
        while low <= high:
            mid = (low + high) // 2
            trial = assigner.assign(sets, {ps.name: mid})
            if trial.failed:
                high = mid - 1
            else:
                best, low = trial, mid + 1
        return best

    def partial_note(self, final: Assignment, admitted_replicas: int) -> str:
        parts = [
            f"partial admission: pod set {ps.name} runs {ps.count} of {ps.requested_count} pods"
            for ps in final.pod_sets
            if ps.count < ps.requested_count
        ]
        if admitted_replicas < self.workload.replicas:
            unit = self.workload.replica_unit
            parts.append(
                f"only {admitted_replicas} of {self.workload.replicas} {unit}s at once; the "
                f"rest wait for quota"
            )
        return "; ".join(parts)

    def never(
        self,
        assigner: Assigner,
        plan: ClusterQueuePlan,
        final: Assignment,
        fields: dict[str, Any],
    ) -> FitResult:
        failing = [ps for ps in final.pod_sets if ps.flavor is None]
        message = "; ".join(
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(ps.reasons)}"
            for ps in failing
        )
        reasons: list[str] = []
        for ps in failing:
            reasons.extend(self.explain(assigner, plan, ps))
        fields.update(pod_sets=tuple(final.pod_sets), message=message)
        names = ", ".join(ps.name for ps in failing)
        return self.result(
            NEVER, f"no flavor of ClusterQueue {plan.name} can hold pod set {names}",
            reasons=tuple(dict.fromkeys(reasons)), **fields,
        )  # fmt: skip

    def explain(self, assigner: Assigner, plan: ClusterQueuePlan, ps: PodSetFit) -> list[str]:
        """Plain-words reasons behind Kueue's, from the platform's inputs."""
        out: list[str] = []
        covered = set(plan.covered_resources)
        pod_set = next(p for p in self.workload.pod_sets if p.name == ps.name)
        for resource in ps.per_pod:
            if resource in covered:
                continue
            offered = sorted(
                {
                    (pool.name, o.resource)
                    for pool in self.platform.pools.values()
                    for o in pool_offers(pool)
                    if pool.cluster == plan.namespaces[0].cluster
                }
            )
            pools = [name for name, r in offered if r == resource]
            if pools:
                out.append(
                    f"{resource} is offered by pool {', '.join(pools)}, but team {plan.team.name} "
                    f"has no quota there that namespace purpose {plan.purpose} may use "
                    f"(ClusterQueue {plan.name} covers {', '.join(plan.covered_resources)})"
                )
            else:
                mig = [
                    f"{pool.name} ({', '.join(sorted(pool.mig_layout))})"
                    for pool in self.platform.pools.values()
                    if pool.cluster == plan.namespaces[0].cluster and pool.mig_layout
                ]
                extra = f"; MIG profiles on this cluster: {'; '.join(mig)}" if mig else ""
                out.append(
                    f"no pool on cluster {plan.namespaces[0].cluster} offers {resource} "
                    f"(ClusterQueue {plan.name} covers {', '.join(plan.covered_resources)}){extra}"
                )
                if resource.startswith(RDMA_RESOURCE_PREFIXES):
                    out.append(
                        f"{resource} is an RDMA device resource: Kueue leaves it out of quota "
                        "only when a pool of the cluster declares it in spec.fabric.rdma "
                        "(the pools' RDMA resources are excludeResourcePrefixes, docs/rdma.md)"
                    )
        wanted = pod_set.node_selector.get(f"{nodes.PREFIX}pool")
        if wanted and wanted not in {f.pool.name for f in plan.flavors}:
            pool = self.platform.pools.get(wanted)
            if pool is None:
                out.append(f"the nodeSelector names pool {wanted}, which does not exist")
            else:
                served = ", ".join(PURPOSE_ORDER.get(pool.workload, ()))
                out.append(
                    f"the nodeSelector asks for pool {wanted}, which serves {served} namespaces "
                    f"({pool.workload}); {plan.purpose} namespaces queue in ClusterQueue "
                    f"{plan.name}, whose flavors are {', '.join(f.pool.name for f in plan.flavors)}"
                )
        for reason in ps.reasons:
            if "request > maximum capacity" not in reason:
                continue
            flavor = reason.split(" in flavor ", 1)[1].split(",", 1)[0]
            resource = reason.removeprefix("insufficient quota for ").split(" in flavor ", 1)[0]
            own = limits_of(plan, flavor, resource)
            if own.nominal == 0 and own.borrowing == 0:
                continue  # the flavor has none of it: Kueue's reason says all there is
            lenders = assigner.lenders_of(flavor, resource)
            lent = sum((lendable for _, lendable in lenders), Decimal(0))
            text = amount_text
            limit = (
                "no borrowing limit"
                if own.borrowing is None
                else f"borrowing limit {text(resource, own.borrowing)}"
            )
            listed = ", ".join(f"{name} {text(resource, amount)}" for name, amount in lenders)
            out.append(
                f"ClusterQueue {plan.name} holds {text(resource, own.nominal)} {resource} on "
                f"{flavor} ({limit}); the rest of cohort {plan.queue.name} lends at most "
                f"{text(resource, lent)}" + (f" ({listed})" if listed else "")
            )
        return out

    def namespace_quota(self, team: Team, ns: Namespace, final: Assignment) -> list[str]:
        """The namespace's ResourceQuota (tenancy layer): the API server refuses pods beyond it,
        whatever Kueue admitted. GPUs: the team's maximum on the pools the namespace may use;
        cpu and memory: the team's `resources`."""
        hard: dict[str, Decimal] = {}
        for _, quota, offer in usable_quotas(self.platform, team, ns):
            hard[offer.resource] = hard.get(offer.resource, Decimal(0)) + maximum_holding(
                offer, quota
            )
        for resource in ("cpu", "memory"):
            if resource in team.resources:
                hard[resource] = quantity.parse(team.resources[resource])
        total: dict[str, Decimal] = {}
        for (_, resource), value in final.usage.items():
            total[resource] = total.get(resource, Decimal(0)) + value
        return [
            f"the pods request {amount(r, total[r])} {r} in all, but namespace {ns.name}'s "
            f"ResourceQuota allows requests.{r} up to {amount(r, hard[r])}: the API server "
            "refuses the pods beyond it"
            for r in sorted(total, key=resource_order)
            if r in hard and total[r] > hard[r]
        ]

    def physical(self, assigner: Assigner, final: Assignment) -> list[str]:
        """What Kueue does not check but the nodes decide: one pod must fit one node, and the
        pool must have room for all the pods (quotas may oversubscribe a pool)."""
        problems: list[str] = []
        for ps in final.pod_sets:
            pool = assigner.pool(ps.flavor)
            if pool is None:
                continue
            node = _node_capacity(pool)
            if pool.sharing in ("time-slicing", "mps") and gpu_sharing.has_plugin_config(pool):
                shared = {o.resource for o in pool_offers(pool)}
                for resource in sorted(shared & set(ps.per_pod)):
                    if ps.per_pod[resource] > 1:
                        problems.append(
                            f"a pod of pod set {ps.name} requests {amount(resource, ps.per_pod[resource])} "
                            f"{resource} on pool {pool.name}, whose {pool.sharing} replicas are "
                            "one per pod: the device plugin refuses the pod "
                            "(failRequestsGreaterThanOne, UnexpectedAdmissionError)"
                        )
            for resource, value in ps.per_pod.items():
                have = node.get(resource)
                if have is not None and value > have:
                    problems.append(
                        f"a pod of pod set {ps.name} requests {amount(resource, value)} "
                        f"{resource}, but a node of pool {pool.name} has "
                        f"{amount(resource, have)}"
                    )
            if problems:
                continue
            per_node = _pods_per_node(ps.per_pod, node)
            if (
                per_node is not None
                and per_node * pool.nodes.min < ps.count <= per_node * pool.nodes.max
            ):
                self.notes.append(
                    f"pod set {ps.name} needs more than the {pool.nodes.min} node(s) pool "
                    f"{pool.name} always runs: its pods wait for the autoscaler to add nodes"
                )
            if per_node is not None and ps.count > per_node * pool.nodes.max:
                problems.append(
                    f"pod set {ps.name} needs {ps.count} pods, but pool {pool.name} has room for "
                    f"{per_node * pool.nodes.max} of them ({per_node} per node, "
                    f"{pool.nodes.max} nodes at most)"
                )
        return problems


def _node_capacity(pool: Pool) -> dict[str, Decimal]:
    capacity = {o.resource: Decimal(o.per_node) for o in pool_offers(pool)}
    if pool.host_cpus is not None:
        capacity["cpu"] = Decimal(pool.host_cpus)
    if pool.host_memory is not None:
        capacity["memory"] = quantity.parse(pool.host_memory)
    return capacity


def _pods_per_node(per_pod: Mapping[str, Decimal], node: Mapping[str, Decimal]) -> int | None:
    counts = [
        int((node[r] / v).to_integral_value(ROUND_FLOOR))
        for r, v in per_pod.items()
        if v > 0 and r in node
    ]
    return min(counts) if counts else None


def _preemption(
    plan: ClusterQueuePlan, priority: int, borrows: bool, fair_sharing: bool
) -> tuple[str, ...]:
    """What the job could do to others once the cluster is busy, in the terms of the policy the
    queue layer renders (`kueue.preemption`)."""
    queue: Queue = plan.queue
    policy = kueue.preemption(queue, fair_sharing)
    lower = [p for p in queue.priorities if p.value < priority]
    lower_text = ", ".join(f"{queue.name}-{p.name} ({p.value})" for p in lower)
    out = []
    within = policy["withinClusterQueue"]
    if within == "Never":
        out.append(
            f"never preempts workloads in ClusterQueue {plan.name} (withinClusterQueue: Never)"
        )
    elif lower or within == "LowerOrNewerEqualPriority":
        whom = "lower-priority workloads" + (
            ", or newer ones of equal priority," if within == "LowerOrNewerEqualPriority" else ""
        )
        listed = f": {lower_text}" if lower else ""
        out.append(
            f"could preempt {whom} in ClusterQueue {plan.name} (withinClusterQueue: {within}){listed}"
        )
    else:
        out.append(
            f"cannot preempt in ClusterQueue {plan.name}: no priority of queue {queue.name} is "
            f"below {priority} (withinClusterQueue: {within})"
        )
    reclaim = policy["reclaimWithinCohort"]
    if reclaim == "Never":
        out.append(
            f"does not reclaim nominal quota lent to cohort {queue.name} (reclaimWithinCohort: Never)"
        )
    else:
        whom = "any workload" if reclaim == "Any" else "lower-priority workloads"
        out.append(
            f"could reclaim its nominal quota from {whom} of other ClusterQueues borrowing it in "
            f"cohort {queue.name} (reclaimWithinCohort: {reclaim})"
        )
    borrow = policy.get("borrowWithinCohort", {}).get("policy")
    if fair_sharing:
        strategies = ", ".join(kueue.FAIR_SHARING_STRATEGIES)
        out.append(
            f"fair sharing is on: Kueue may preempt workloads of ClusterQueues in cohort "
            f"{queue.name} that use more than their fair share (preemptionStrategies: "
            f"{strategies}); borrowWithinCohort does not apply"
        )
    elif borrow in (None, "Never"):
        out.append("while borrowing, never preempts in the cohort (borrowWithinCohort: Never)")
    elif borrows:
        target = f": {lower_text}" if lower else ": none, no lower priority exists"
        out.append(
            f"while borrowing, could preempt lower-priority workloads of other ClusterQueues in "
            f"cohort {queue.name} (borrowWithinCohort: {borrow}){target}"
        )
    if borrows:
        out.append(
            "what it borrows can be taken back: a lender reclaiming its nominal quota may evict it"
        )
    return tuple(out)
