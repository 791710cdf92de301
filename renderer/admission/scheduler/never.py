"""Why no flavor of the ClusterQueue can hold a pod set, in plain words from the platform's
inputs, beside Kueue's own reasons: a resource no quota covers, a nodeSelector naming a pool
the ClusterQueue has no flavor of, quota the team and its cohort do not have."""

from __future__ import annotations

from decimal import Decimal

from renderer.admission.answer.result import PodSetFit, amount
from renderer.admission.scheduler import after_admission as beyond
from renderer.admission.scheduler import tas
from renderer.admission.scheduler.flavorassigner import Assigner
from renderer.admission.workloads.podsets import PodSet
from renderer.model import nodes
from renderer.model.capacity import PURPOSE_ORDER, pool_offers
from renderer.model.platform import Platform
from renderer.model.queue_plans import ClusterQueuePlan, limits_of
from renderer.model.topology import topology_aware

RDMA_RESOURCE_PREFIXES = ("rdma/", "vpc.amazonaws.com/efa")
"""The names RDMA device plugins advertise (the Network Operator's and CoreWeave's `rdma/…`,
AWS's EFA plugin), for a hint when a cluster's Kueue does not exclude one."""


def never_reasons(
    platform: Platform, assigner: Assigner, plan: ClusterQueuePlan, ps: PodSetFit, pod_set: PodSet
) -> list[str]:
    """Plain-words reasons behind Kueue's, from the platform's inputs. `ps`: the pod set as
    Kueue assigned it; `pod_set`: the same pod set as the workload declares it."""
    return [
        *_uncovered(platform, plan, ps),
        *_pool_selector(platform, plan, pod_set),
        *_quota_reasons(assigner, plan, ps),
    ]


def _uncovered(platform: Platform, plan: ClusterQueuePlan, ps: PodSetFit) -> list[str]:
    """Each resource the pod set asks for that the ClusterQueue's quota does not cover."""
    out: list[str] = []
    covered = set(plan.covered_resources)
    for resource in ps.per_pod:
        if resource in covered:
            continue
        offered = sorted(
            {
                (pool.name, o.resource)
                for pool in platform.pools.values()
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
                for pool in platform.pools.values()
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
    return out


def _pool_selector(platform: Platform, plan: ClusterQueuePlan, pod_set: PodSet) -> list[str]:
    """A nodeSelector that names a pool none of the ClusterQueue's flavors is."""
    wanted = pod_set.node_selector.get(f"{nodes.PREFIX}pool")
    if not wanted or wanted in {f.pool.name for f in plan.flavors}:
        return []
    pool = platform.pools.get(wanted)
    if pool is None:
        return [f"the nodeSelector names pool {wanted}, which does not exist"]
    served = ", ".join(PURPOSE_ORDER.get(pool.workload, ()))
    return [
        f"the nodeSelector asks for pool {wanted}, which serves {served} namespaces "
        f"({pool.workload}); {plan.purpose} namespaces queue in ClusterQueue "
        f"{plan.name}, whose flavors are {', '.join(f.pool.name for f in plan.flavors)}"
    ]


def _quota_reasons(assigner: Assigner, plan: ClusterQueuePlan, ps: PodSetFit) -> list[str]:
    """Behind each of Kueue's reasons: the nodes of a topology that cannot hold the pods, and
    the quota the team holds and its cohort lends where the request exceeds the most it may
    reach."""
    out: list[str] = []
    for reason in ps.reasons:
        for tried in assigner.flavors:  # Kueue's TAS notFitMessage names the Topology
            topology = tas.topology_name(tried.pool, assigner.topology_names)
            if reason.startswith(f'topology "{topology}"') and topology_aware(tried.pool):
                requested = assigner.requested.get(ps.name, ps.per_pod)
                out.extend(beyond.node_problems(tried.pool, ps.name, requested))
        if "> maximum capacity (" not in reason:
            continue
        flavor = reason.split(" in flavor ", 1)[1].split(",", 1)[0]
        resource = reason.removeprefix("insufficient quota for ").split(" in flavor ", 1)[0]
        own = limits_of(plan.cohort, flavor, resource)
        if own.nominal == 0 and own.borrowing == 0:
            continue  # the flavor has none of it: Kueue's reason says all there is
        lenders = assigner.lenders_of(flavor, resource)
        lent = sum((lendable for _, lendable in lenders), Decimal(0))
        text = amount
        limit = (
            "no borrowing limit"
            if own.borrowing is None
            else f"borrowing limit {text(resource, own.borrowing)}"
        )
        listed = ", ".join(f"{name} {text(resource, amount)}" for name, amount in lenders)
        out.append(
            f"team {plan.team.name} holds {text(resource, own.nominal)} {resource} on "
            f"{flavor} for all its ClusterQueues (Cohort {plan.cohort.name}, {limit}); "
            f"the other teams of cohort {plan.queue.name} lend at most "
            f"{text(resource, lent)}" + (f" ({listed})" if listed else "")
        )
    return out
