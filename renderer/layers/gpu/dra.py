"""DRA: the DeviceClass of each pool exposed through Dynamic Resource Allocation, and the
ResourceClaimTemplates its teams' pods name to get one of its devices.

`resource.k8s.io/v1` (Kubernetes 1.34 and later; the policy rule `dra-needs-kubernetes-1.34`
refuses DRA on older clusters, so nothing here looks at the version). The devices are the
NVIDIA DRA driver's (`gpu.nvidia.com`): it publishes every whole GPU with the attribute
`type: gpu` and every MIG device with `type: mig` and its `profile`. Each DRA pool gets its own
class, `<pool>.dra.gpuplane.dev`, selecting that kind of device (and, on a MIG pool, the
profiles of its layout); the class name is what the namespace ResourceQuota counts
(`<class>.deviceclass.resource.k8s.io/devices`) and what Kueue maps to the pool's logical
resource (`renderer.layers.queueing.kueue.device_class_mappings`), all from `renderer.model.capacity`.

A device selector sees device attributes only, never node labels: which pool's devices a pod
gets is decided by where it runs, and Kueue puts it there with the pool's ResourceFlavor (its
node labels and tolerations), the flavor being the only one whose quota covers the pool's
logical resource. See docs/dra.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model import catalog
from renderer.model.capacity import (
    DRA_DRIVER,
    dra_device_class,
    pool_offers,
    usable_quotas,
)
from renderer.model.platform import Pool
from renderer.model.view import ClusterView
from renderer.output.manifest import MANAGED_BY, Manifest, Output, labels, metadata

LAYER = "gpu"
API_VERSION = "resource.k8s.io/v1"
REQUEST = "gpu"
"""The request's name in every claim template (what a container's `resources.claims[].request`
may name)."""

NODE_SUFFIX = "-node"
"""A second template on whole-GPU pools with several GPUs per node: all of one node's GPUs in
one claim (`<pool>-node`), for the pod of a distributed job that takes the whole node."""


def _attribute(name: str) -> str:
    return f"device.attributes['{DRA_DRIVER}'].{name}"


def _quoted(value: str) -> str:
    """A CEL string literal. Profile names are catalog keys (`1g.10gb+me`), checked by the
    policy against the catalog, so no quote or backslash can reach here."""
    if "'" in value or "\\" in value:
        raise ValueError(f"not a plain CEL string: {value!r}")
    return f"'{value}'"


def selector(pool: Pool) -> str:
    """The CEL expression that selects the pool's kind of device from the NVIDIA driver:
    whole GPUs, or MIG devices of the layout's profiles. The driver check comes first, so
    devices of other drivers (which lack the attribute domain) never reach an attribute."""
    if pool.sharing == "mig":
        accelerator = catalog.accelerator(pool.accelerator)
        known = accelerator.mig_profiles if accelerator is not None else {}
        profiles = [_quoted(p) for p in sorted(pool.mig_layout) if p in known]
        kind = f"{_attribute('type')} == 'mig'"
        if len(profiles) == 1:
            kind += f" && {_attribute('profile')} == {profiles[0]}"
        else:
            kind += f" && {_attribute('profile')} in [{', '.join(profiles)}]"
    else:
        kind = f"{_attribute('type')} == 'gpu'"
    return f"device.driver == '{DRA_DRIVER}' && {kind}"


def dra_pools(view: ClusterView) -> tuple[Pool, ...]:
    """The cluster's pools exposed through DRA with the NVIDIA driver: a known NVIDIA
    accelerator, and devices to offer (a MIG layout of known profiles)."""
    result = []
    for pool in view.pools:
        accelerator = catalog.accelerator(pool.accelerator)
        if (
            pool.exposure == "dra"
            and accelerator is not None
            and accelerator.vendor == "nvidia"
            and pool_offers(pool)
        ):
            result.append(pool)
    return tuple(result)


def render(view: ClusterView) -> Iterator[Output]:
    """The DeviceClass of every DRA pool, then each team namespace's claim templates."""
    pools = dra_pools(view)
    for pool in pools:
        yield _device_class(pool)
    names = {p.name for p in pools}
    for tenant in view.tenants:
        team = tenant.team
        for ns in tenant.namespaces:
            seen: set[str] = set()
            for pool, _, offer in usable_quotas(view.platform, team, ns):
                if pool.name not in names or offer.device_class is None or pool.name in seen:
                    continue
                seen.add(pool.name)
                common = {
                    "team": team.name,
                    "cost_center": team.cost_center,
                    "pool": pool.name,
                    "purpose": ns.purpose,
                }
                yield claim_template(pool, pool.name, ns.name, 1, common)
                if pool.sharing != "mig" and pool.gpus_per_node > 1:
                    name = f"{pool.name}{NODE_SUFFIX}"
                    yield claim_template(pool, name, ns.name, pool.gpus_per_node, common)


def _device_class(pool: Pool) -> Manifest:
    return Manifest(
        LAYER,
        {
            "apiVersion": API_VERSION,
            "kind": "DeviceClass",
            "metadata": metadata(dra_device_class(pool.name), pool=pool.name),
            "spec": {"selectors": [{"cel": {"expression": selector(pool)}}]},
        },
        pool.origin.location,
    )


def claim_template(
    pool: Pool, name: str, namespace: str, count: int, common: dict[str, str]
) -> Manifest:
    """A template requesting `count` devices of the pool's class; the claims made from it carry
    the team, cost-center and pool labels too, so usage can be traced to who holds a device."""
    (offer,) = pool_offers(pool)
    # the claims are made by the control plane, not managed by gpuplane: no managed-by label
    claim_labels = {k: v for k, v in labels(**common).items() if k not in MANAGED_BY}
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(name, namespace, **common),
        "spec": {
            "metadata": {"labels": claim_labels},
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": REQUEST,
                            "exactly": {
                                "deviceClassName": offer.device_class,
                                "allocationMode": "ExactCount",
                                "count": count,
                            },
                        }
                    ]
                }
            },
        },
    }
    return Manifest(LAYER, body, pool.origin.location)
