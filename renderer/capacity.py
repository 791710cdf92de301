"""What each pool really offers, per Kubernetes resource name: the one place this is computed.

The policy rules, the tenancy ResourceQuotas and (later) the queue layer, `plan` and `fit` all
ask here, so "how many GPUs does this pool have" has exactly one answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from renderer import catalog
from renderer.model import GpuQuota, Namespace, Platform, Pool, Queue, Team

PURPOSE_ORDER: dict[str, tuple[str, ...]] = {
    "distributed-training": ("training", "batch"),
    "fine-tuning": ("training", "batch"),
    "online-inference": ("inference",),
    "batch-inference": ("batch", "inference"),
    "notebooks": ("notebooks", "training"),
}
"""Which namespace purposes each pool workload serves, the primary one first: the guide's
training/inference split. The primary purpose's ClusterQueue holds a team's quota on the pool."""

WORKLOAD_PURPOSES: dict[str, frozenset[str]] = {w: frozenset(p) for w, p in PURPOSE_ORDER.items()}

MIXABLE = frozenset({"training", "inference", "batch"})
"""Purposes a queue with `mixing` lets share each other's pools."""

SHARING_MODES = {
    "full-gpu": "whole GPUs",
    "mig": "MIG slices",
    "time-slicing": "time-shared GPUs",
    "mps": "MPS-shared GPUs",
}

DRA_DEVICE_CLASS = "gpu.nvidia.com"
"""The DeviceClass the NVIDIA DRA driver installs for whole GPUs."""


@dataclass(frozen=True, slots=True)
class Offer:
    """One resource name a pool advertises, with its count at the pool's min and max size."""

    pool: str
    resource: str
    profile: str | None
    per_node: int
    guaranteed: int
    maximum: int
    unit: str

    @property
    def quota_key(self) -> str:
        """The ResourceQuota key that counts this resource in a namespace."""
        if self.resource.endswith(".deviceclass.resource.k8s.io/devices"):
            return self.resource
        return f"requests.{self.resource}"


def pool_offers(pool: Pool) -> tuple[Offer, ...]:
    """Every resource the pool advertises; empty when its accelerator is unknown."""
    accelerator = catalog.accelerator(pool.accelerator)
    if accelerator is None:
        return ()

    def offer(resource: str, per_gpu: int, unit: str, profile: str | None = None) -> Offer:
        per_node = per_gpu * pool.gpus_per_node
        return Offer(
            pool=pool.name,
            resource=resource,
            profile=profile,
            per_node=per_node,
            guaranteed=per_node * pool.nodes.min,
            maximum=per_node * pool.nodes.max,
            unit=unit,
        )

    if pool.exposure == "dra":
        return (offer(f"{DRA_DEVICE_CLASS}.deviceclass.resource.k8s.io/devices", 1, "GPU"),)
    if pool.sharing == "mig":
        profiles = accelerator.mig_profiles
        return tuple(
            offer(profiles[name].resource_name, count, f"MIG {name} instance", name)
            for name, count in sorted(pool.mig_layout.items())
            if name in profiles
        )
    if pool.sharing in ("time-slicing", "mps"):
        shared = pool.rename_by_default
        resource = f"{accelerator.resource_name}.shared" if shared else accelerator.resource_name
        return (offer(resource, pool.replicas, f"{pool.sharing} replica"),)
    return (offer(accelerator.resource_name, 1, "GPU"),)


def quota_offer(pool: Pool, quota: GpuQuota) -> Offer | None:
    """The offer a team's quota entry draws on: the profile's on MIG pools, else the only one."""
    offers = pool_offers(pool)
    if pool.sharing == "mig" and pool.exposure != "dra":
        return next((o for o in offers if o.profile == quota.profile), None)
    return offers[0] if offers else None


def maximum_holding(offer: Offer, quota: GpuQuota) -> int:
    """The most a team can ever hold under this quota: nominal plus what it may borrow.

    Kueue treats a missing borrowingLimit as unlimited borrowing within the cohort, so the bound
    is then the pool itself.
    """
    if quota.borrowing_limit is None:
        return max(offer.maximum, quota.nominal)
    return min(offer.maximum, quota.nominal + quota.borrowing_limit)


def serves(pool: Pool, namespace: Namespace, queue: Queue | None) -> bool:
    """Whether pods of this namespace may use this pool under the team's queue."""
    if namespace.cluster != pool.cluster:
        return False
    if namespace.purpose in WORKLOAD_PURPOSES[pool.workload]:
        return True
    return bool(
        queue is not None and queue.mixing_priority is not None and namespace.purpose in MIXABLE
    )


def usable_quotas(
    platform: Platform, team: Team, namespace: Namespace
) -> Iterator[tuple[Pool, GpuQuota, Offer]]:
    """The team's quotas that pods of this namespace may draw on, with the offer each counts."""
    queue = platform.queues.get(team.queue)
    for quota in team.gpus:
        pool = platform.pools.get(quota.pool)
        if pool is None or not serves(pool, namespace, queue):
            continue
        offer = quota_offer(pool, quota)
        if offer is not None:
            yield pool, quota, offer
