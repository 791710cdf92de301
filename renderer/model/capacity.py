"""What each pool really offers, per Kubernetes resource name: the one place this is computed.

The policy rules, the tenancy ResourceQuotas and (later) the queue layer, `plan` and `fit` all
ask here, so "how many GPUs does this pool have" has exactly one answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

from renderer.model import catalog
from renderer.model.choices import TIME_SHARED, Fabric, Purpose, Sharing, Workload
from renderer.model.platform import GpuQuota, Namespace, Platform, Pool, Queue, Team

PURPOSE_ORDER: dict[Workload, tuple[Purpose, ...]] = {
    "distributed-training": ("training", "batch"),
    "fine-tuning": ("training", "batch"),
    "online-inference": ("inference",),
    "batch-inference": ("batch", "inference"),
    "notebooks": ("notebooks", "training"),
}
"""Which namespace purposes each pool workload serves, the primary one first: the guide's
training/inference split. The primary purpose's ClusterQueue holds a team's quota on the pool."""

WORKLOAD_PURPOSES: dict[Workload, frozenset[Purpose]] = {
    w: frozenset(p) for w, p in PURPOSE_ORDER.items()
}

MIXABLE: frozenset[Purpose] = frozenset({"training", "inference", "batch"})
"""Purposes a queue with `mixing` lets share each other's pools."""

SHARING_MODES: dict[Sharing, str] = {
    "full-gpu": "whole GPUs",
    "mig": "MIG slices",
    "time-slicing": "time-shared GPUs",
    "mps": "MPS-shared GPUs",
}

DRA_DRIVER = "gpu.nvidia.com"
"""The NVIDIA DRA driver: the `driver` of the devices it publishes and the domain of their
attributes (`device.attributes['gpu.nvidia.com'].type` is `gpu` or `mig`)."""

DRA_DEVICE_CLASS = "gpu.nvidia.com"
DRA_MIG_DEVICE_CLASS = "mig.nvidia.com"
"""The DeviceClasses the NVIDIA DRA driver installs itself (every whole GPU, every MIG device of
the cluster). gpuplane renders a class per pool instead, so quota counts one pool's devices."""

DRA_DOMAIN = "dra.gpuplane.dev"
DRA_QUOTA_SUFFIX = ".deviceclass.resource.k8s.io/devices"
"""A ResourceQuota counts the devices claimed from a class under `<class>` + this suffix."""


def how_to_request(offer: Offer) -> str:
    """What a pod asks for to use this offer: the extended resource, or on a DRA pool the
    ResourceClaimTemplate named after the pool (DRA devices are claimed, not requested)."""
    if offer.device_class is not None:
        return f"a claim from ResourceClaimTemplate {offer.pool}"
    return offer.resource


def dra_device_class(pool: str) -> str:
    """The DeviceClass of a DRA pool's devices: `<pool>.dra.gpuplane.dev`."""
    return f"{pool}.{DRA_DOMAIN}"


def dra_resource(pool: Pool) -> str:
    """The logical resource Kueue counts a DRA pool's devices as (its `deviceClassMappings`
    name): `<pool>.dra.gpuplane.dev/gpu`, or `/mig` on a MIG pool."""
    unit = "mig" if pool.sharing == "mig" else "gpu"
    return f"{dra_device_class(pool.name)}/{unit}"


def is_dra_resource(resource: str) -> bool:
    """Whether a resource name is a DRA pool's logical resource (never a container request)."""
    prefix, _, _ = resource.partition("/")
    return prefix.endswith(f".{DRA_DOMAIN}")


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
    device_class: str | None = None
    """The DeviceClass whose devices this is, on a DRA pool; None for extended resources."""
    gpu_share: Fraction | None = Fraction(1)
    """How much of one physical GPU one unit of the resource is: 1 for a whole GPU, 1/replicas
    for a time-slicing or MPS replica (`replicas` pods share a GPU), compute slices / the GPU's
    slices for a MIG instance (a 1g.10gb is 1/7 of an H100); None where units differ (the MIG
    devices of a DRA pool, whatever profile each is). Quota counts units, so a nominal of 2 on
    a pool of 4 replicas per GPU is half a GPU."""

    def physical_gpus(self, units: int) -> Fraction | None:
        """`units` of this resource in physical GPUs (None: not one figure, `gpu_share`)."""
        return None if self.gpu_share is None else units * self.gpu_share

    @property
    def quota_key(self) -> str:
        """The ResourceQuota key that counts this resource in a namespace: the devices claimed
        from the pool's DeviceClass on a DRA pool, else the extended resource's requests."""
        if self.device_class is not None:
            return f"{self.device_class}{DRA_QUOTA_SUFFIX}"
        return f"requests.{self.resource}"


def gpus_text(gpus: Fraction | None) -> str:
    """Physical GPUs as a person reads them: `2`, `0.5`, `0.29` (two decimals at most), `-`
    where there is no one figure (`Offer.gpu_share`)."""
    if gpus is None:
        return "-"
    if gpus.denominator == 1:
        return str(gpus.numerator)
    return f"{float(gpus):.2f}".rstrip("0").rstrip(".")


_OFFERS: dict[int, tuple[Pool, tuple[Offer, ...]]] = {}
"""`pool_offers`' answers, by the pool's id (holding the pool, so that the id stays its own): the
layers and rules ask for a pool's offers once per quota entry of every namespace."""


def pool_offers(pool: Pool) -> tuple[Offer, ...]:
    """Every resource the pool advertises; empty when its accelerator is unknown."""
    known = _OFFERS.get(id(pool))
    if known is not None:
        return known[1]
    if len(_OFFERS) >= 10_000:  # a process that loads many platforms (the tests): start again
        _OFFERS.clear()
    offers = _pool_offers(pool)
    _OFFERS[id(pool)] = (pool, offers)
    return offers


def _pool_offers(pool: Pool) -> tuple[Offer, ...]:
    accelerator = catalog.accelerator(pool.accelerator)
    if accelerator is None:
        return ()

    def offer(
        resource: str,
        per_gpu: int,
        unit: str,
        profile: str | None = None,
        device_class: str | None = None,
        share: Fraction | None = Fraction(1),
    ) -> Offer:
        per_node = per_gpu * pool.gpus_per_node
        return Offer(
            pool=pool.name,
            resource=resource,
            profile=profile,
            per_node=per_node,
            guaranteed=per_node * pool.nodes.min,
            maximum=per_node * pool.nodes.max,
            unit=unit,
            device_class=device_class,
            gpu_share=share,
        )

    if pool.exposure == "dra":
        # One class per pool: every MIG device of the layout (the claim does not pick a
        # profile), or every whole GPU. Time-slicing and MPS do not multiply DRA devices: a
        # claim from a template is one pod's own device.
        if pool.sharing == "mig":
            profiles = accelerator.mig_profiles
            per_gpu = sum(n for name, n in pool.mig_layout.items() if name in profiles)
            unit = "MIG device"
        else:
            per_gpu, unit = 1, "GPU"
        if per_gpu == 0:
            return ()
        share = None if pool.sharing == "mig" else Fraction(1)
        device_class = dra_device_class(pool.name)
        return (offer(dra_resource(pool), per_gpu, unit, device_class=device_class, share=share),)
    if pool.sharing == "mig":
        profiles = accelerator.mig_profiles
        return tuple(
            offer(
                profiles[name].resource_name,
                count,
                f"MIG {name} instance",
                name,
                share=Fraction(profiles[name].compute_slices, accelerator.compute_slices),
            )
            for name, count in sorted(pool.mig_layout.items())
            if name in profiles
        )
    if pool.sharing in TIME_SHARED:
        shared = pool.rename_by_default
        resource = f"{accelerator.resource_name}.shared" if shared else accelerator.resource_name
        unit = f"{pool.sharing} replica"
        return (offer(resource, pool.replicas, unit, share=Fraction(1, pool.replicas)),)
    return (offer(accelerator.resource_name, 1, "GPU"),)


RDMA_FABRICS: frozenset[Fabric] = frozenset({"infiniband", "roce", "efa"})
"""The fabric types whose NICs NCCL reaches through RDMA verbs (libibverbs, or libfabric on EFA)
when the pod is given the devices; on `ethernet` and `none` it uses TCP sockets."""


def rdma_per_pod(pool: Pool, share: Decimal) -> int:
    """How many of the pool's RDMA resource a pod holding `share` of a node requests: the
    whole-node amount times the share, rounded up, at least 1 and at most the whole-node amount;
    0 when the pool declares no RDMA. See docs/rdma.md."""
    if pool.rdma is None:
        return 0
    amount = int((pool.rdma.per_node * share).to_integral_value(ROUND_CEILING))
    return min(pool.rdma.per_node, max(1, amount))


def rdma_requests(pool: Pool, share: Decimal) -> dict[str, int]:
    """`{resource: amount}` for one pod of a multi-node job holding `share` of a node (what goes
    into its requests and its limits alike), or nothing when the pool declares no RDMA."""
    if pool.rdma is None:
        return {}
    return {pool.rdma.resource: rdma_per_pod(pool, share)}


def mig_layout_usable(pool: Pool) -> bool:
    """Whether a MIG pool's layout is one its accelerator can carve (always true for other
    pools): counting against a layout the GPU Operator would refuse says nothing true."""
    if pool.sharing != "mig":
        return True
    gpu = catalog.accelerator(pool.accelerator)
    return gpu is not None and gpu.supports_mig and not gpu.mig_layout_problems(pool.mig_layout)


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
