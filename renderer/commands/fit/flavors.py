"""Kueue's flavor assignment in an empty cluster: each pod set gets the first flavor, in the
ClusterQueue's order, whose taints and node labels it accepts and whose quota holds it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType

from renderer.commands.fit import podsets
from renderer.commands.fit.podsets import PodSet, Toleration
from renderer.commands.fit.result import (
    HOST_RESOURCES,
    Lender,
    PodSetFit,
    Quota,
    amount,
    resource_order,
)
from renderer.layers.queueing import kueue
from renderer.model import nodes
from renderer.model.admission import ClusterQueuePlan, FlavorPlan, limits_of, potential_available
from renderer.model.platform import Pool


@dataclass
class Assignment:
    pod_sets: list[PodSetFit]
    usage: dict[tuple[str, str], Decimal]

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
    ) -> None:
        self.plan = plan
        self.cohort = cohort
        self.per_pod = per_pod
        self.flavors: tuple[FlavorPlan, ...] = tuple(kueue.ordered_flavors(plan))
        self.covered = frozenset(plan.covered_resources)
        self.label_keys = frozenset(k for f in self.flavors for k in nodes.node_labels(f.pool))

    def pool(self, flavor: str | None) -> Pool | None:
        return next((f.pool for f in self.flavors if f.pool.name == flavor), None)

    def maximum(self, flavor: str, resource: str) -> Decimal:
        return potential_available(self.plan, self.cohort, flavor, resource)

    def lenders_of(self, flavor: str, resource: str) -> list[tuple[str, Decimal]]:
        return [
            (p.name, limits_of(p, flavor, resource).lendable)
            for p in self.cohort
            if p.name != self.plan.name and limits_of(p, flavor, resource).lendable > 0
        ]

    def assign(self, pod_sets: Iterable[PodSet], counts: Mapping[str, int]) -> Assignment:
        usage: dict[tuple[str, str], Decimal] = {}
        fits: list[PodSetFit] = []
        for ps in pod_sets:
            per_pod = MappingProxyType(dict(self.per_pod[ps.name]))
            count = counts[ps.name]
            total = podsets.scaled(per_pod, count)
            flavor, borrows, reasons = self.flavor_for(ps, total, usage)
            if flavor is not None:
                for resource, value in total.items():
                    usage[(flavor, resource)] = usage.get((flavor, resource), Decimal(0)) + value
            fits.append(
                PodSetFit(
                    ps.name, count, ps.count, per_pod, flavor, borrows, tuple(sorted(reasons))
                )
            )
        return Assignment(fits, usage)

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
        for flavor in self.flavors:
            name = flavor.pool.name
            taint = _untolerated(flavor.pool, ps.tolerations)
            if taint is not None:
                reasons.append(f"untolerated taint {taint} in flavor {name}")
                continue
            if not _matches(ps, nodes.node_labels(flavor.pool), self.label_keys):
                reasons.append(f"flavor {name} doesn't match node affinity")
                continue
            borrows = False
            misfit = False
            for resource in sorted(total):
                value = total[resource] + usage.get((name, resource), Decimal(0))
                most = self.maximum(name, resource)
                if value > most:
                    reasons.append(
                        f"insufficient quota for {resource} in flavor {name}, request > maximum "
                        f"capacity ({amount(resource, value)} > {amount(resource, most)})"
                    )
                    misfit = True
                    break
                if value > limits_of(self.plan, name, resource).nominal:
                    borrows = True
            if not misfit:
                return name, borrows, []
        return None, False, reasons

    def quotas(self, usage: Mapping[tuple[str, str], Decimal]) -> tuple[Quota, ...]:
        result = []
        order = {f.pool.name: i for i, f in enumerate(self.flavors)}
        for (flavor, resource), requested in sorted(
            usage.items(), key=lambda item: (order.get(item[0][0], 0), resource_order(item[0][1]))
        ):
            own = limits_of(self.plan, flavor, resource)
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
        teams = {p.name: p.team.name for p in self.cohort}
        return tuple(
            Lender(name, teams[name], q.flavor, q.resource, amount)
            for q in quotas
            if q.borrowed > 0
            for name, amount in self.lenders_of(q.flavor, q.resource)
        )


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
    the label keys the ClusterQueue's flavors use, against the flavor's node labels."""
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
