"""Kueue's flavor assignment in an empty cluster: each pod set gets the first flavor, in the
ClusterQueue's order, whose topology rules, taints and node labels it accepts and whose quota
holds it; then Kueue places the pod sets of topology-aware flavors on their nodes (`tas`).

The order of the checks per flavor is Kueue v0.19.2's `FlavorAssigner.checkFlavorForPodSets`
(`pkg/scheduler/flavorassigner/flavorassigner.go`): TAS first
(`checkPodSetAndFlavorMatchForTAS`), then untolerated taints, then the flavor selector on the
flavor's own node label keys, then quota (`fitsResourceQuota`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType

from renderer.admission.answer.result import (
    HOST_RESOURCES,
    Lender,
    PodSetFit,
    Quota,
    amount,
    resource_order,
)
from renderer.admission.scheduler import tas
from renderer.admission.scheduler.preemption import CohortNow
from renderer.admission.workloads import podsets
from renderer.admission.workloads.podsets import PodSet, Toleration
from renderer.layers.queueing import kueue
from renderer.model import nodes
from renderer.model.admission import (
    ClusterQueuePlan,
    Cohort,
    FlavorPlan,
    limits_of,
    potential_available,
)
from renderer.model.platform import Cluster, Pool
from renderer.model.quantity import kueue_string
from renderer.model.quota_tree import Limits
from renderer.model.topology import topology_aware


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
    """Kueue's flavor assignment for one ClusterQueue of an empty cluster."""

    def __init__(
        self,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        per_pod: Mapping[str, Mapping[str, Decimal]],
        now: CohortNow | None = None,
        *,
        cluster: Cluster | None = None,
        requested: Mapping[str, Mapping[str, Decimal]] | None = None,
    ) -> None:
        """`now`: the cluster's current usage (`fit --usage`); None for an empty cluster.
        `per_pod`: each pod set's requests as Kueue counts them against quota (excluded
        resources dropped); `requested`: before the drop, as TAS counts them against a node
        (the pod spec itself); `cluster`: for the labels its provider puts on nodes."""
        self.requested = requested if requested is not None else per_pod
        self.cluster = cluster
        self.plan = plan
        self.cohort = cohort if isinstance(cohort, Cohort) else Cohort(cohort)
        self.per_pod = per_pod
        self.now = now
        self.waiting: dict[str, list[str]] = {}
        """Per pod set, the flavors that would hold it but for the quota others use now."""
        self.flavors: tuple[FlavorPlan, ...] = tuple(kueue.ordered_flavors(plan))
        self.covered = frozenset(plan.covered_resources)
        self.tas_only = bool(self.flavors) and all(topology_aware(f.pool) for f in self.flavors)
        """`clusterQueue.isTASOnly` (`pkg/cache/scheduler/clusterqueue.go`): every flavor is a
        TAS flavor, so a pod set that asks for no topology gets TAS implied."""
        pools = {f.pool.name: f.pool for p in (plan, *cohort) for f in p.flavors}
        self.topology_names = kueue.topology_names(pools[n] for n in sorted(pools))

    def pool(self, flavor: str | None) -> Pool | None:
        return next((f.pool for f in self.flavors if f.pool.name == flavor), None)

    def maximum(self, flavor: str, resource: str) -> Decimal:
        return potential_available(self.plan, self.cohort, flavor, resource)

    def lenders_of(self, flavor: str, resource: str) -> list[tuple[str, Decimal]]:
        """The other teams' Cohorts that lend the resource on the flavor, and how much."""
        return self.cohort.lenders(self.plan, flavor, resource)

    def team_limits(self, flavor: str, resource: str) -> Limits:
        """The team's quota on the flavor: what its Cohort holds for all its ClusterQueues."""
        return limits_of(self.plan.cohort, flavor, resource)

    def assign(self, pod_sets: Iterable[PodSet], counts: Mapping[str, int]) -> Assignment:
        """Kueue's `assignFlavors`: the pod sets in order, each on the first flavor that holds
        it with the pod sets before it. At the first pod set no flavor can hold (NoFit: not
        one that only waits for quota others use now) Kueue returns the assignment
        (`atLeastOnePodsAssignmentFailed`), so the pod sets after it are not tried and its
        message names that pod set alone."""
        self.waiting = {}
        usage: dict[tuple[str, str], Decimal] = {}
        fits: list[PodSetFit] = []
        listed = list(pod_sets)
        stopped = False
        for ps in listed:
            per_pod = MappingProxyType(dict(self.per_pod[ps.name]))
            count = counts[ps.name]
            if stopped:
                fits.append(PodSetFit(ps.name, count, ps.count, per_pod, None, False, tried=False))
                continue
            total = podsets.scaled(per_pod, count)
            flavor, borrows, reasons = self.flavor_for(ps, total, usage)
            stopped = flavor is None and ps.name not in self.waiting
            if flavor is not None:
                for resource, value in total.items():
                    usage[(flavor, resource)] = usage.get((flavor, resource), Decimal(0)) + value
            fits.append(
                PodSetFit(
                    ps.name, count, ps.count, per_pod, flavor, borrows, tuple(sorted(reasons))
                )
            )
        assignment = Assignment(fits, usage)
        if not assignment.failed:
            self.place(listed, assignment)
        for ps, fit in zip(listed, fits, strict=True):
            if fit.flavor is None and fit.tried:
                assignment.notes.extend(self.topology_hints(ps, fit.reasons))
        return assignment

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

    def flavor_for(
        self,
        ps: PodSet,
        total: Mapping[str, Decimal],
        usage: Mapping[tuple[str, str], Decimal],
    ) -> tuple[str | None, bool, list[str]]:
        """The first flavor, in order, that the pod set accepts and whose quota holds it."""
        uncovered = sorted(r for r in total if r not in self.covered)
        if uncovered:
            return None, False, [f"resource {uncovered[0]} unavailable in ClusterQueue"]
        reasons: list[str] = []
        request = tas.request_of(ps)
        covered = any(r in self.covered for r in self.per_pod[ps.name])
        for flavor in self.flavors:
            name = flavor.pool.name
            mismatch = tas.flavor_mismatch(flavor.pool, request, self.tas_only, covered)
            if mismatch is not None:
                reasons.append(mismatch)
                continue
            taint = _untolerated(flavor.pool, ps.tolerations)
            if taint is not None:
                reasons.append(f"untolerated taint {taint} in flavor {name}")
                continue
            labels = nodes.node_labels(flavor.pool)
            if not _matches(ps, labels, frozenset(labels)):
                reasons.append(f"flavor {name} doesn't match node affinity")
                continue
            borrows = False
            misfit = waits = False
            for resource in sorted(total):
                before = usage.get((name, resource), Decimal(0))
                value = total[resource] + before
                most = self.maximum(name, resource)
                if value > most:
                    reasons.append(  # flavorassigner.go fitsResourceQuota, word for word
                        f"insufficient quota for {resource} in flavor {name}, previously "
                        f"considered podsets requests ({kueue_string(resource, before)}) + "
                        f"current podset request ({kueue_string(resource, total[resource])}) > "
                        f"maximum capacity ({kueue_string(resource, most)})"
                    )
                    misfit = True
                    break
                used = Decimal(0)
                if self.now is not None:  # Kueue's Available (flavorassigner fitsResourceQuota)
                    free = self.now.available(name, resource)
                    used = self.now.team_usage(name, resource)
                    if value > free:
                        reasons.append(
                            f"insufficient unused quota for {resource} in flavor {name}, "
                            f"{kueue_string(resource, value - free)} more needed"
                        )
                        waits = True
                        continue
                if used + value > self.team_limits(name, resource).nominal:
                    borrows = True  # beyond the team's quota: from other teams
            if waits and not misfit:
                self.waiting.setdefault(ps.name, []).append(name)
            elif not misfit:
                return name, borrows, []
        return None, False, reasons

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
        if pool.sharing in ("time-slicing", "mps"):
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


def _untolerated(pool: Pool, tolerations: Sequence[Toleration]) -> str | None:
    """The first NoSchedule/NoExecute taint of the pool that neither the pod nor the flavor
    tolerates (Kueue adds the ResourceFlavor's tolerations, which match the pool's taints)."""
    flavor = [
        Toleration(t["key"], t["operator"], t.get("value", ""), t.get("effect", ""))
        for t in nodes.tolerations(pool)
    ]
    for taint in pool.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in (*tolerations, *flavor)):
            value = f"={taint.value}" if taint.value else ""
            return f"{taint.key}{value}:{taint.effect}"
    return None


def _matches(ps: PodSet, labels: Mapping[str, str], keys: frozenset[str]) -> bool:
    """Kueue's `flavorSelector`: the pod's nodeSelector and required node affinity, limited to
    the flavor's own node label keys (v0.19.2: "Use only this flavor's own label keys (not the
    union across all flavors in the resource group)"), against the flavor's node labels."""
    for key, value in ps.node_selector.items():
        if key in keys and labels.get(key) != value:
            return False
    terms = []
    for term in ps.affinity:
        kept = tuple(r for r in term if r.key in keys)
        if not kept:
            return True  # a term without relevant keys matches every flavor
        terms.append(kept)
    return not terms or any(all(r.matches(labels) for r in term) for term in terms)
