"""Kueue's DRA step: what its Workload controller makes of the devices a pod set claims, before
the Workload is queued (Kueue v0.19.2, feature gate `KueueDRAIntegration`, beta and on by
default since v0.18, `pkg/features/kube_features.go`; gpuplane sets no feature gate).

Design: docs/dra.md#kueues-dra-step-as-fit-runs-it
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.apiserver.gate import RenderedCluster
from renderer.admission.apiserver.metadata import go_quote
from renderer.admission.rendered import rendered_cluster
from renderer.admission.workloads.podsets import PodSet, ResourceClaim, Workload
from renderer.model.platform import Namespace, Platform

RESOURCE_CLAIMS_MESSAGE = "KueueDRAIntegration feature does not support use of resource claims"
"""`core/workload_controller.go` `Reconcile`: the QuotaReserved condition's message for a
Workload with a standalone ResourceClaim."""

EXACT_COUNT = "ExactCount"


@dataclass(frozen=True)
class Claims:
    """What Kueue's DRA step makes of a Workload's device claims."""

    message: str | None = None
    """Kueue's message where it leaves the Workload inadmissible; None where it goes on."""
    reasons: tuple[str, ...] = ()
    """Why, in plain words, and what to change."""
    per_pod: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    """Devices each pod of a pod set takes, by the logical resource Kueue counts them as."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Cluster:
    """What Kueue's DRA step reads of the cluster, as gpuplane renders it."""

    name: str
    namespace: str
    templates: Mapping[str, Any]
    """The ResourceClaimTemplates in the namespace, by name: the file's and gpuplane's (where
    both have a name, gpuplane's, which Argo CD keeps as rendered)."""
    rendered: tuple[str, ...]
    """The names of those gpuplane renders there."""
    mappings: Mapping[str, str]
    """`deviceClassMappings`: DeviceClass -> logical resource (the first mapping of a class,
    as `ResourceMapper.PopulateFromConfiguration` keeps it)."""
    with_sources: frozenset[str]
    """Classes whose mapping counts through `sources` (counters, capacity), not devices."""


class _Refused(Exception):
    def __init__(self, message: str, *reasons: str) -> None:
        super().__init__(message)
        self.message = message
        self.reasons = reasons


def claims(
    platform: Platform,
    ns: Namespace,
    workload: Workload,
    rendered: RenderedCluster | None = None,
) -> Claims:
    """Kueue's DRA step for `workload` in namespace `ns`; nothing to say (and nothing rendered)
    when no pod set names a claim or a template."""
    if not any(c.template or c.claim for ps in workload.pod_sets for c in ps.resource_claims):
        return Claims()
    standalone = [(ps.name, c) for ps in workload.pod_sets for c in ps.resource_claims if c.claim]
    cluster = _read(platform, ns, workload, rendered)
    if standalone:
        return Claims(RESOURCE_CLAIMS_MESSAGE, _standalone_reasons(standalone, cluster))
    per_pod: dict[str, dict[str, Decimal]] = {}
    notes: list[str] = []
    try:
        for index, ps in enumerate(workload.pod_sets):
            devices = _pod_set_devices(index, ps, cluster, notes)
            if devices:
                per_pod[ps.name] = devices
    except _Refused as refused:
        return Claims(refused.message, refused.reasons)
    return Claims(per_pod=per_pod, notes=tuple(dict.fromkeys(notes)))


def add_devices(
    requests: Mapping[str, dict[str, Decimal]], devices: Mapping[str, Mapping[str, Decimal]]
) -> None:
    """Each pod set's per-pod requests with the devices it claims added."""
    for name, more in devices.items():
        pod = requests.get(name)
        if pod is None:
            continue
        for resource, count in more.items():
            pod[resource] = pod.get(resource, Decimal(0)) + count


# --- the cluster ------------------------------------------------------------------------------


def _read(
    platform: Platform, ns: Namespace, workload: Workload, cluster: RenderedCluster | None
) -> _Cluster:
    if cluster is None or cluster.name != ns.cluster:
        cluster = rendered_cluster(platform, platform.clusters[ns.cluster])
    rendered = cluster.in_namespace("ResourceClaimTemplate", "resource.k8s.io", ns.name)
    mappings, with_sources = _mappings(cluster)
    return _Cluster(
        name=cluster.name,
        namespace=ns.name,
        templates=MappingProxyType({**workload.claim_templates, **rendered}),
        rendered=tuple(sorted(rendered)),
        mappings=MappingProxyType(mappings),
        with_sources=frozenset(with_sources),
    )


def _mappings(cluster: RenderedCluster) -> tuple[dict[str, str], set[str]]:
    """The `resources.deviceClassMappings` of the Kueue Configuration in the chart's values
    (`managerConfig.controllerManagerConfigYaml`, a YAML string)."""
    resources = cluster.kueue_configuration.get("resources")
    found: dict[str, str] = {}
    with_sources: set[str] = set()
    for mapping in (resources or {}).get("deviceClassMappings") or []:
        for device_class in mapping.get("deviceClassNames") or []:
            found.setdefault(str(device_class), str(mapping.get("name")))
            if mapping.get("sources"):
                with_sources.add(str(device_class))
    return found, with_sources


# --- one pod set ------------------------------------------------------------------------------


def _pod_set_devices(
    index: int, ps: PodSet, cluster: _Cluster, notes: list[str]
) -> dict[str, Decimal]:
    """`GetResourceRequestsForResourceClaimTemplates` for one pod set: the devices one pod
    takes, by logical resource; raises _Refused with Kueue's message."""
    devices: dict[str, Decimal] = {}
    for claim in ps.resource_claims:
        if claim.template is None:
            continue
        path = f"spec.podSets[{index}].template.spec.resourceClaims[{claim.index}]"
        template = cluster.templates.get(claim.template)
        if template is None:
            raise _Refused(
                f"{path}: Internal error: failed to get claim spec for ResourceClaimTemplate "
                f"{claim.template} in podset {ps.name}: ResourceClaimTemplate.resource.k8s.io "
                f"{go_quote(claim.template)} not found",
                *_missing_reasons(ps, claim, cluster),
            )
        counts = _count_per_class(path, claim.template, template, notes)
        for device_class, count in counts.items():
            logical = cluster.mappings.get(device_class)
            if logical is None:
                detail = (
                    f"DeviceClass {device_class} is not mapped in DRA configuration for podset "
                    f"{ps.name}"
                )
                raise _Refused(
                    f"{path}.resourceClaimTemplateName: Not found: {go_quote(detail)}",
                    *_unmapped_reasons(ps, claim, device_class, cluster),
                )
            if device_class in cluster.with_sources:
                notes.append(
                    f"pod set {ps.name}: DeviceClass {device_class} is counted through its "
                    "mapping's sources (counters or capacity), which fit does not model"
                )
                continue
            devices[logical] = devices.get(logical, Decimal(0)) + count
    return devices


def _count_per_class(path: str, name: str, template: Any, notes: list[str]) -> dict[str, Decimal]:
    """`countDevicesPerClass` on the template's claim spec, with the API server's defaults
    (`allocationMode` ExactCount, `count` 1); raises _Refused with Kueue's field error."""
    counts: dict[str, Decimal] = {}
    for k, request in enumerate(_requests(template)):
        here = f"{path}.devices.requests[{k}]"
        prefix = f"ResourceClaimTemplate {name}: "
        if request.get("firstAvailable") is not None:
            raise _unsupported(
                here, "null", prefix + "FirstAvailable device selection is not supported"
            )
        exactly = request.get("exactly")
        if not isinstance(exactly, dict):
            raise _unsupported(
                here, "null", prefix + "Exactly must be set if FirstAvailable is nil"
            )
        if exactly.get("selectors"):
            notes.append(
                f"ResourceClaimTemplate {name} selects devices with CEL: Kueue also checks that "
                "enough devices of the cluster's ResourceSlices match, which fit cannot see"
            )
        mode = exactly.get("allocationMode") or EXACT_COUNT
        if exactly.get("adminAccess") is True:
            raise _unsupported(
                f"{here}.exactly.adminAccess", "null", prefix + "AdminAccess is not supported"
            )
        if mode != EXACT_COUNT:
            detail = (
                "AllocationMode 'All' is not supported"
                if mode == "All"
                else f"unsupported allocation mode: {mode}"
            )
            raise _unsupported(
                f"{here}.exactly.allocationMode", go_quote(str(mode)), prefix + detail
            )
        device_class = exactly.get("deviceClassName")
        if not isinstance(device_class, str) or not device_class:
            continue
        count = exactly.get("count")
        amount = Decimal(1)  # SetDefaults_ExactDeviceRequest: a missing or 0 count is 1
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            amount = Decimal(count)
        counts[device_class] = counts.get(device_class, Decimal(0)) + amount
    return counts


def _requests(template: Any) -> Iterator[dict[str, Any]]:
    """The device requests of a template's claim spec, in the shape of `resource.k8s.io/v1`
    (v1beta1 writes an exact request's fields on the request itself; the API server converts)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    claim_spec = spec.get("spec") if isinstance(spec, dict) else None
    devices = claim_spec.get("devices") if isinstance(claim_spec, dict) else None
    requests = devices.get("requests") if isinstance(devices, dict) else None
    old = str(template.get("apiVersion", "")).endswith(("/v1beta1", "/v1alpha3"))
    for request in requests if isinstance(requests, list) else []:
        if not isinstance(request, dict):
            continue
        if old and "firstAvailable" not in request and "exactly" not in request:
            exact = {k: v for k, v in request.items() if k != "name"}
            yield {"name": request.get("name"), "exactly": exact}
        else:
            yield request


def _unsupported(path: str, value: str, detail: str) -> _Refused:
    """A `field.Invalid` of `countDevicesPerClass`, as Kueue prefixes it."""
    return _Refused(
        f"{path}: Invalid value: {value}: {detail}",
        "Kueue v0.19.2 counts only device requests of `exactly` a number of devices "
        "(allocationMode ExactCount, no adminAccess); it leaves the Workload inadmissible",
    )


# --- plain words ------------------------------------------------------------------------------


def _way_out(cluster: _Cluster) -> str:
    """The templates a pod in the namespace can name, in a sentence."""
    if not cluster.rendered:
        return (
            f"gpuplane renders no ResourceClaimTemplate in namespace {cluster.namespace}: no DRA "
            f"pool of cluster {cluster.name} is one this namespace may use"
        )
    return (
        f"name one of the ResourceClaimTemplates gpuplane renders in namespace "
        f"{cluster.namespace}: {', '.join(cluster.rendered)}"
    )


def _standalone_reasons(
    standalone: list[tuple[str, ResourceClaim]], cluster: _Cluster
) -> tuple[str, ...]:
    listed = ", ".join(f"pod set {name} names ResourceClaim {c.claim}" for name, c in standalone)
    return (
        f"{listed} (resourceClaimName): Kueue v0.19.2 counts only the devices of claims made "
        "from a ResourceClaimTemplate, one per pod, and leaves a Workload with a claim shared "
        "by its pods inadmissible",
        f"claim the devices through resourceClaimTemplateName instead; {_way_out(cluster)}",
    )


def _missing_reasons(ps: PodSet, claim: ResourceClaim, cluster: _Cluster) -> tuple[str, ...]:
    return (
        f"pod set {ps.name} claims devices from ResourceClaimTemplate {claim.template}, which "
        f"is neither in the file nor rendered by gpuplane in namespace {cluster.namespace}; "
        "Kueue keeps the Workload pending and retries until the template exists (fit sees only "
        "the file and what gpuplane renders)",
        _way_out(cluster),
    )


def _unmapped_reasons(
    ps: PodSet, claim: ResourceClaim, device_class: str, cluster: _Cluster
) -> tuple[str, ...]:
    mapped = ", ".join(sorted(cluster.mappings)) or "none"
    return (
        f"pod set {ps.name}: ResourceClaimTemplate {claim.template} asks for devices of "
        f"DeviceClass {device_class}, which the Kueue Configuration of cluster {cluster.name} "
        f"does not map to a quota resource (deviceClassMappings: {mapped}); Kueue counts only "
        "the devices of mapped classes, one class per DRA pool (docs/dra.md)",
        _way_out(cluster),
    )
