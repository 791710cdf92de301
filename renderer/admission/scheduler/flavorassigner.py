"""Kueue's flavor assignment for `fit`: the Kueue objects gpuplane renders for the cluster
(`kueue_cluster`) are read as Kueue's scheduler reads them (`snapshot`), and Kueue's own flavor
assigner (`kueue_assigner`) picks each pod set's flavor; this module maps its answer onto fit's
(a flavor per pod set, borrowing from other teams, the flavors a pod set waits for) and adds
what only the pools know: where the pods of a topology-aware flavor land (`tas`), GPU sharing,
RDMA.

A ClusterQueue of gpuplane has one resource group (every flavor lists every covered resource),
so a pod set gets one flavor for all its resources. Kueue's answer per pod set:

- Fit: the flavor; it borrows from other teams when the quota comes from above the team's
  Cohort (its borrowing level is past the team Cohort's height);
- Preempt, or NoFit while waiting for quota (`WaitingForQuota`): no flavor now, and the flavors
  that would hold it once others' usage is gone are its `waiting` ones (fit's preemptor then
  looks for targets there, `preemption`); fit asks no preemption oracle during assignment
  (every flavor Kueue may preempt on answers Preempt, as in Kueue's own assigner tests);
- NoFit otherwise: no flavor ever, with Kueue's reasons; Kueue stops at that pod set
  (`atLeastOnePodsAssignmentFailed`), so the ones after it are not tried."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.answer.result import (
    HOST_RESOURCES,
    Lender,
    PodSetFit,
    Quota,
    amount,
    resource_order,
)
from renderer.admission.scheduler import tas
from renderer.admission.scheduler.kueue_assigner import FlavorAssigner, PodSetRequest, Setting
from renderer.admission.scheduler.preemption import CohortNow
from renderer.admission.scheduler.snapshot import KueueSnapshot, Toleration, read_objects
from renderer.admission.workloads.podsets import PodSet
from renderer.layers import queueing
from renderer.layers.queueing import kueue
from renderer.model.choices import TIME_SHARED
from renderer.model.platform import Cluster, Platform, Pool
from renderer.model.queue_plans import (
    ClusterQueuePlan,
    Cohort,
    FlavorPlan,
    limits_of,
)
from renderer.model.quota_tree import Limits, QuotaNode
from renderer.model.topology import topology_aware
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest


@dataclass(frozen=True)
class KueueCluster:
    """A cluster's Kueue objects as Kueue's scheduler holds them: the snapshot, and each
    Topology's levels (top first)."""

    snapshot: KueueSnapshot
    topologies: Mapping[str, tuple[str, ...]]


def read_cluster(objects: Iterable[Mapping[str, Any]]) -> KueueCluster:
    """The Kueue objects among `objects` (what `render` writes for a cluster)."""
    listed = list(objects)
    topologies = {}
    for obj in listed:
        if obj.get("kind") == "Topology":
            levels = (obj.get("spec") or {}).get("levels") or []
            topologies[str(obj["metadata"]["name"])] = tuple(
                str(level.get("nodeLabel", "")) for level in levels if isinstance(level, dict)
            )
    return KueueCluster(read_objects(listed), topologies)


def kueue_cluster(platform: Platform, cluster: Cluster) -> KueueCluster:
    """The Kueue objects gpuplane renders for `cluster`, rendered now by the queueing layer."""
    view = ClusterView.of(platform, cluster)
    return read_cluster(o.body for o in queueing.render(view) if isinstance(o, Manifest))


@dataclass
class Assignment:
    pod_sets: list[PodSetFit]
    usage: dict[tuple[str, str], Decimal]
    notes: list[str] = field(default_factory=list)
    """How fit placed the TAS pod sets, and what it assumed there."""

    @property
    def failed(self) -> bool:
        return any(ps.flavor is None for ps in self.pod_sets)


class Assigner:
    """Kueue's flavor assignment for one ClusterQueue, on an idle cluster or with `now`."""

    def __init__(
        self,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        per_pod: Mapping[str, Mapping[str, Decimal]],
        now: CohortNow | None = None,
        *,
        native: KueueCluster,
        cluster: Cluster | None = None,
        requested: Mapping[str, Mapping[str, Decimal]] | None = None,
    ) -> None:
        """`now`: the cluster's current usage (`fit --usage`); None for an empty cluster.
        `native`: the cluster's Kueue objects (`kueue_cluster`), which decide.
        `per_pod`: each pod set's requests as Kueue counts them against quota (excluded
        resources dropped); `requested`: before the drop, as TAS counts them against a node
        (the pod spec itself); `cluster`: for the labels its provider puts on nodes."""
        self.requested = requested if requested is not None else per_pod
        self.cluster = cluster
        self.plan = plan
        self.cohort = cohort if isinstance(cohort, Cohort) else Cohort(cohort)
        self.per_pod = per_pod
        self.now = now
        self.native = native
        self.waiting: dict[str, list[str]] = {}
        """Per pod set, the flavors that would hold it but for the quota others use now."""
        cq = native.snapshot.cluster_queues[plan.name]
        plans = {f.pool.name: f for f in plan.flavors}
        self.flavors: tuple[FlavorPlan, ...] = tuple(
            plans[f.name] for rg in cq.resource_groups for f in rg.flavors if f.name in plans
        )
        self.covered = frozenset(r for rg in cq.resource_groups for r in rg.covered)
        self.tas_only = bool(self.flavors) and all(topology_aware(f.pool) for f in self.flavors)
        """`clusterQueue.isTASOnly` (`pkg/cache/scheduler/clusterqueue.go`): every flavor is a
        TAS flavor, so a pod set that asks for no topology gets TAS implied."""
        pools = {f.pool.name: f.pool for p in (plan, *cohort) for f in p.flavors}
        self.topology_names = kueue.topology_names(pools[n] for n in sorted(pools))
        self.node = self.quota_node()
        self.setting = Setting(
            cq=cq,
            node=self.node,
            flavors=native.snapshot.flavors,
            topologies=native.topologies,
            fair_sharing=now.fair_sharing if now is not None else False,
        )

    def quota_node(self) -> QuotaNode:
        """The ClusterQueue's node of Kueue's quota tree: with the usage now, or (idle) read
        from the rendered objects."""
        tree = (
            self.now.tree if self.now is not None else self.native.snapshot.tree(with_usage=False)
        )
        node = tree.cluster_queue(self.plan.name)
        assert node is not None, self.plan.name
        return node

    def pool(self, flavor: str | None) -> Pool | None:
        return next((f.pool for f in self.flavors if f.pool.name == flavor), None)

    def maximum(self, flavor: str, resource: str) -> Decimal:
        """`PotentialAvailable`: the most the ClusterQueue can ever hold on the flavor."""
        return self.node.potential_available((flavor, resource))

    def lenders_of(self, flavor: str, resource: str) -> list[tuple[str, Decimal]]:
        """The other teams' Cohorts that lend the resource on the flavor, and how much."""
        return self.cohort.lenders(self.plan, flavor, resource)

    def team_limits(self, flavor: str, resource: str) -> Limits:
        """The team's quota on the flavor: what its Cohort holds for all its ClusterQueues."""
        return limits_of(self.plan.cohort, flavor, resource)

    def assign(self, pod_sets: Iterable[PodSet], counts: Mapping[str, int]) -> Assignment:
        """Kueue's `assignFlavors` on the pod sets with these pod counts, then (on an idle
        cluster, once quota holds them all) their places on the nodes of topology-aware
        flavors (`place`)."""
        self.waiting = {}
        listed = list(pod_sets)
        requests = [self.request_of(ps) for ps in listed]
        found = FlavorAssigner(self.setting, requests).assign([counts[ps.name] for ps in listed])
        fits: list[PodSetFit] = []
        usage: dict[tuple[str, str], Decimal] = {}
        by_name = {psa.name: psa for psa in found.pod_sets}
        team = self.node.parent.height() if self.node.parent is not None else 0
        for ps in listed:
            per_pod = MappingProxyType(dict(self.per_pod[ps.name]))
            psa = by_name.get(ps.name)
            if psa is None:  # after the pod set Kueue stopped at
                fits.append(
                    PodSetFit(ps.name, counts[ps.name], ps.count, per_pod, None, False, tried=False)
                )
                continue
            flavors = {a.flavor for a in psa.flavors.values()}
            # one resource group: one flavor for all the pod set's resources (a pod set asking
            # for nothing gets none from Kueue; fit shows the ClusterQueue's first)
            if psa.representative_mode == "Fit" and len(flavors) <= 1:
                flavor = next(iter(flavors), self.flavors[0].pool.name if self.flavors else None)
                borrows = any(a.borrow > team for a in psa.flavors.values())
                fits.append(PodSetFit(ps.name, psa.count, ps.count, per_pod, flavor, borrows))
                for resource, assigned in psa.flavors.items():
                    key = (assigned.flavor, resource)
                    usage[key] = usage.get(key, Decimal(0)) + psa.requests[resource]
                continue
            waits = [
                a.flavor
                for a in psa.attempts
                if a.mode == "Preempt" or a.no_fit_reason == "WaitingForQuota"
            ]
            order = [f.pool.name for f in self.flavors]
            if waits:
                self.waiting[ps.name] = sorted(waits, key=order.index)
            reasons = (psa.error,) if psa.error is not None else tuple(sorted(psa.reasons))
            fits.append(PodSetFit(ps.name, psa.count, ps.count, per_pod, None, False, reasons))
        assignment = Assignment(fits, usage)
        if not assignment.failed:
            self.place(listed, assignment)
        for ps, fit in zip(listed, fits, strict=True):
            if fit.flavor is None and fit.tried:
                assignment.notes.extend(self.topology_hints(ps, fit.reasons))
        return assignment

    def request_of(self, ps: PodSet) -> PodSetRequest:
        """What Kueue's flavor assigner reads of a pod set (`PodSetRequest`)."""
        return PodSetRequest(
            name=ps.name,
            count=ps.count,
            per_pod=self.per_pod[ps.name],
            node_selector=ps.node_selector,
            affinity=ps.affinity,
            tolerations=tuple(
                Toleration(t.key, t.operator, t.value, t.effect) for t in ps.tolerations
            ),
            topology=tas.request_of(ps),
            spec_requests=self.requested.get(ps.name),
        )

    def topology_hints(self, ps: PodSet, reasons: Sequence[str]) -> list[str]:
        """Plain words behind Kueue's TAS reasons for skipping a flavor."""
        hints = []
        for flavor in self.flavors:
            pool = flavor.pool
            quoted = f'Flavor "{pool.name}"'
            if f"{quoted} supports only TopologyAwareScheduling" in reasons:
                hints.append(
                    f"pod set {ps.name}: flavor {pool.name} is topology-aware and ClusterQueue "
                    f"{self.plan.name} also has flavors that are not, so Kueue gives it only to "
                    "pod sets that ask for TAS: annotate the pod template with "
                    f"kueue.x-k8s.io/podset-preferred-topology: {pool.topology_levels[0]} (or "
                    'kueue.x-k8s.io/podset-unconstrained-topology: "true")'
                )
            elif f"{quoted} does not contain the requested level" in reasons:
                request = tas.request_of(ps)
                asked = ", ".join(request.levels) if request is not None else ""
                hints.append(
                    f"pod set {ps.name} asks for topology level {asked}, but the Topology of "
                    f"flavor {pool.name} has levels {', '.join(pool.topology_levels)}"
                )
            elif f"{quoted} does not support TopologyAwareScheduling" in reasons:
                hints.append(
                    f"pod set {ps.name} asks for TAS (a kueue.x-k8s.io/podset-* topology "
                    f"annotation), but pool {pool.name} is not topology-aware (no level above "
                    "the node), so its flavor names no Topology"
                )
        return hints

    def place(self, pod_sets: Sequence[PodSet], assignment: Assignment) -> None:
        """Kueue's TAS placement once quota holds the workload
        (`FindTopologyAssignmentsForWorkload` after `assignFlavors`), on an empty cluster: the
        pod sets on TAS flavors, in order, on that flavor's nodes; the first that does not fit
        gets Kueue's reason and no flavor, and the workload is not admitted."""
        placed: dict[str, tas.Nodes] = {}
        for ps, fit in zip(pod_sets, list(assignment.pod_sets), strict=True):
            pool = self.pool(fit.flavor)
            request = tas.request_of(ps)
            explicit = request is not None and request.explicit
            if pool is None or fit.count == 0 or not topology_aware(pool):
                continue
            if not explicit and not self.tas_only:
                continue
            name = tas.topology_name(pool, self.topology_names)
            nodes_ = placed.setdefault(pool.name, tas.Nodes(pool, self.cluster, name))
            ask = tas.Ask(
                name=ps.name,
                count=fit.count,
                per_pod=self.requested.get(ps.name, fit.per_pod),
                request=request,
                implied=not explicit,
                pod=ps,
                workloads=max(1, fit.count // ps.count) if ps.count else 1,
            )
            if explicit and request is not None:
                how = request.describe()
            else:
                how = "implied (every flavor of the ClusterQueue is topology-aware): unconstrained"
            assignment.notes.append(
                f"pod set {ps.name}: topology-aware flavor {pool.name} (Topology {name}), {how}"
            )
            reason = nodes_.place(ask)
            if reason is not None:
                index = assignment.pod_sets.index(fit)
                assignment.pod_sets[index] = PodSetFit(
                    fit.name, fit.count, fit.requested_count, fit.per_pod, None, False, (reason,)
                )
                break
        for nodes_ in placed.values():
            assignment.notes.extend(n for n in nodes_.notes if n not in assignment.notes)

    def quotas(self, usage: Mapping[tuple[str, str], Decimal]) -> tuple[Quota, ...]:
        result = []
        order = {f.pool.name: i for i, f in enumerate(self.flavors)}
        for (flavor, resource), requested in sorted(
            usage.items(), key=lambda item: (order.get(item[0][0], 0), resource_order(item[0][1]))
        ):
            own = self.team_limits(flavor, resource)
            lent = sum((amount for _, amount in self.lenders_of(flavor, resource)), Decimal(0))
            result.append(
                Quota(
                    flavor=flavor,
                    resource=resource,
                    requested=requested,
                    nominal=own.nominal,
                    borrowing_limit=own.borrowing,
                    maximum=self.maximum(flavor, resource),
                    cohort_lendable=lent,
                )
            )
        return tuple(result)

    def lenders(self, quotas: Sequence[Quota]) -> tuple[Lender, ...]:
        teams = {p.cohort.name: p.team.name for p in self.cohort}
        return tuple(
            Lender(name, teams[name], q.flavor, q.resource, amount)
            for q in quotas
            if q.borrowed > 0
            for name, amount in self.lenders_of(q.flavor, q.resource)
        )


def topology_notes(final: Assignment) -> list[str]:
    """How Kueue places the pod sets on topology-aware flavors, and what fit assumed there."""
    return list(final.notes)


def sharing_notes(assigner: Assigner, final: Assignment) -> list[str]:
    """What a GPU is on the chosen pools, where it is not a whole one."""
    notes = []
    used = {
        ps.flavor
        for ps in final.pod_sets
        if ps.flavor and any(r not in HOST_RESOURCES for r in ps.per_pod)
    }
    for name in sorted(used):
        pool = assigner.pool(name)
        if pool is None:
            continue
        if pool.sharing in TIME_SHARED:
            notes.append(
                f"pool {pool.name} shares each GPU among {pool.replicas} pods ({pool.sharing}): "
                "one GPU unit there is a share of a GPU, without memory isolation"
            )
        elif pool.sharing == "mig":
            notes.append(
                f"pool {pool.name} hands out MIG slices: each is an isolated part of one GPU"
            )
    return notes


def rdma_notes(
    assigner: Assigner,
    final: Assignment,
    requested: Mapping[str, Mapping[str, Decimal]],
) -> list[str]:
    """What Kueue left out of a pod set's quota (the excluded RDMA resources), and where the
    chosen pool does not declare the RDMA resource the pods ask for: Kueue admits them, but
    unless the pool's nodes advertise it they stay Pending."""
    notes = []
    fixed = kueue.EXCLUDED_RESOURCE_PREFIXES
    for ps in final.pod_sets:
        pool = assigner.pool(ps.flavor)
        asked = requested.get(ps.name, {})
        dropped = sorted(r for r in asked if r not in ps.per_pod and not r.startswith(fixed))
        if pool is None or not dropped:
            continue
        listed = ", ".join(f"{amount(r, asked[r])} {r}" for r in dropped)
        notes.append(
            f"pod set {ps.name} asks for {listed} per pod, which Kueue does not count against "
            "quota (excludeResourcePrefixes)"
        )
        declared = pool.rdma.resource if pool.rdma is not None else None
        for resource in dropped:
            if resource != declared:
                has = f"declares {declared}" if declared else "declares no RDMA resource"
                notes.append(
                    f"pod set {ps.name} asks for {resource}, but pool {pool.name} {has} "
                    "(spec.fabric.rdma): unless its nodes advertise it, the pods stay Pending"
                )
    return notes
