"""KubeRay's kinds as Kueue v0.19.2 reads them: RayCluster, RayJob and RayService pod sets
(`pkg/controller/jobs/raycluster/common.go` `BuildPodSets`, `pkg/controller/jobs/rayjob/
rayjob_controller.go` `PodSets`) and what Kueue's validating webhooks refuse on create
(`raycluster_webhook.go`, `rayjob_webhook.go`, `rayservice_webhook.go` `validateCreate`).

The field defaults are the RayCluster CRD's, which the API server applies before Kueue sees the
object: a worker group's `replicas` defaults to 0, `numOfHosts` to 1, a RayJob's
`submissionMode` to `K8sJobMode`."""

from __future__ import annotations

import json
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.workloads.podsets import (
    EMPTY_RESOURCES,
    Container,
    FieldPath,
    PodSet,
    read_count,
    read_field,
    read_pod_set,
    read_resources,
    read_strings,
)
from renderer.model import quantity

RAY_AUTOSCALER = MappingProxyType({"cpu": Decimal("0.5"), "memory": quantity.parse("512Mi")})
"""KubeRay's autoscaler sidecar in the head pod when in-tree autoscaling is on and
`autoscalerOptions.resources` is not set: requests and limits both (Kueue's
`defaultAutoscalerResources`, mirroring KubeRay's `BuildAutoscalerContainer`)."""

RAY_SUBMITTER_REQUESTS = MappingProxyType(
    {"cpu": Decimal("0.5"), "memory": quantity.parse("200Mi")}
)
RAY_SUBMITTER_LIMITS = MappingProxyType({"cpu": Decimal(1), "memory": quantity.parse("1Gi")})
"""The default submitter container of a RayJob (Kueue's `defaultSubmitterResources`, mirroring
KubeRay's `GetDefaultSubmitterContainer`): its own pod set in `K8sJobMode` without a
`submitterPodTemplate`, and a container of the head pod in `SidecarMode`."""

RAY_REDIS_CLEANUP = MappingProxyType({"cpu": Decimal("0.2"), "memory": quantity.parse("256Mi")})
"""With GCS fault tolerance on, Kueue raises the head's Ray container requests to at least
KubeRay's Redis cleanup job's (`redisCleanupResourceRequests`, `accountForRedisCleanupInHeadPodSet`)."""

ELASTIC_JOB = "kueue.x-k8s.io/elastic-job"
"""Kueue's `constants.ElasticJobAnnotation`: with value "true" (and the
ElasticJobsViaWorkloadSlices feature gate, on by default since Kueue v0.18) the job is elastic."""

MAX_POD_SETS = 18
"""Kueue's `jobframework.MaxPodSets`."""


CLUSTER_SELECTOR_SUSPENDED = (
    "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation"
)
"""KubeRay v1.7.0's `utils.ValidateRayJobSpec` (`ray-operator/controllers/ray/utils/
validation.go`) for a suspended RayJob with a `clusterSelector`: the RayJob controller's
`validateRayJob` sets it as `status.message`, with `jobDeploymentStatus: ValidationFailed`."""

CLUSTER_SELECTOR_WHY = (
    "Kueue's RayJob webhook gives the RayJob the namespace's LocalQueue and suspends it "
    "(rayjob_webhook.go Default: ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector, "
    'ApplyDefaultForSuspend), and lets it through validation ("RayJobs using existing clusters '
    'are not managed by Kueue"), but Kueue makes no Workload for it, so nothing unsuspends it',
    "KubeRay refuses to run a suspended RayJob in ClusterSelector mode and marks it "
    "ValidationFailed: the job never starts",
    "give the RayJob its own rayClusterSpec (Kueue then admits the cluster with the job), or "
    "submit it on the existing RayCluster from outside Kueue's managed namespaces",
)


def denied(webhook: str, errors: list[str]) -> str | None:
    """The API server's answer when a validating webhook denies an object with these field
    errors (controller-runtime returns the aggregate of them; apimachinery's aggregate prints
    one error alone, several in brackets joined by ", ")."""
    if not errors:
        return None
    unique = list(dict.fromkeys(errors))
    joined = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f'admission webhook "{webhook}" denied the request: {joined}'


def _elastic(data: Any) -> bool:
    return read_strings(data, ("metadata", "annotations")).get(ELASTIC_JOB) == "true"


def _ray_cluster(data: Any, spec: FieldPath) -> list[PodSet]:
    """`raycluster.BuildPodSets`: the head (1 pod, plus the autoscaler container when in-tree
    autoscaling is on, its requests raised for the Redis cleanup job with GCS fault tolerance),
    then one pod set per worker group, named by the group (lower case), `replicas` x
    `numOfHosts` pods (`effectiveWorkerCount`)."""
    read_field(data, spec, dict, required=True)
    extra: list[Container] = []
    if read_field(data, (*spec, "enableInTreeAutoscaling"), bool):
        resources = (*spec, "autoscalerOptions", "resources")
        if read_field(data, resources, dict) is not None:
            own = read_resources(data, (*resources, "requests"))
            limits = read_resources(data, (*resources, "limits"))
        else:
            own, limits = dict(RAY_AUTOSCALER), dict(RAY_AUTOSCALER)
        extra.append(
            Container("autoscaler", "container", MappingProxyType(own), MappingProxyType(limits))
        )
    head = read_pod_set(data, (*spec, "headGroupSpec", "template"), "head", 1, extra=extra)
    annotations = read_strings(data, ("metadata", "annotations"))
    fault_tolerant = annotations.get("ray.io/ft-enabled", "").lower() == "true" or (
        read_field(data, (*spec, "gcsFaultToleranceOptions"), dict) is not None
    )
    if fault_tolerant:
        head = _with_redis_cleanup(head)
    pod_sets = [head]
    groups = read_field(data, (*spec, "workerGroupSpecs"), list) or []
    for index, _ in enumerate(groups):
        here = (*spec, "workerGroupSpecs", index)
        name = read_field(data, (*here, "groupName"), str, required=True)
        count = read_count(data, (*here, "replicas"), 0)
        hosts = read_count(data, (*here, "numOfHosts"), 1)
        if hosts > 1:
            count *= hosts
        pod_sets.append(read_pod_set(data, (*here, "template"), name.lower(), count))
    return pod_sets


def _with_redis_cleanup(head: PodSet) -> PodSet:
    """The head pod set with its first container's requests raised to the Redis cleanup job's
    (`utilresource.MergeResourceListKeepMax` on requests only)."""
    containers = list(head.containers)
    first = next(i for i, c in enumerate(containers) if c.role == "container")
    ray = containers[first]
    raised = dict(ray.requests)
    for name, value in RAY_REDIS_CLEANUP.items():
        raised[name] = max(raised.get(name, value), value)
    containers[first] = Container(ray.name, ray.role, MappingProxyType(raised), ray.limits)
    return _replace(head, containers=tuple(containers))


def _replace(ps: PodSet, **changes: Any) -> PodSet:
    fields = {name: getattr(ps, name) for name in PodSet.__dataclass_fields__}
    fields.update(changes)
    return PodSet(**fields)


AUTOSCALING_JOB = "a kueue managed job should only use autoscaling when workload slicing is enabled"
"""`raycluster.ValidateCreate`'s words for a RayJob's or RayService's cluster."""
AUTOSCALING_CLUSTER = (
    "a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the "
    f'ElasticJobsViaWorkloadSlices feature gate and set the "{ELASTIC_JOB}": "true" annotation'
)
"""`RayClusterWebhook.validateCreate`'s words for a RayCluster."""


def _cluster_errors(data: Any, spec: FieldPath, shown: str, autoscaling: str) -> list[str]:
    """The checks of a cluster spec Kueue's Ray webhooks share: no in-tree autoscaling unless
    the job is elastic, at most `MaxPodSets` pod sets, no worker group named `head`. (An
    elastic RayCluster's scheduling-gate checks are not modelled.)"""
    errors = []
    if read_field(data, (*spec, "enableInTreeAutoscaling"), bool) and not _elastic(data):
        errors.append(f"{shown}.enableInTreeAutoscaling: Invalid value: true: {autoscaling}")
    groups = read_field(data, (*spec, "workerGroupSpecs"), list) or []
    if len(groups) + 1 > MAX_POD_SETS:
        errors.append(
            f"{shown}.workerGroupSpecs: Too many: {len(groups) + 1}: must have at most "
            f"{MAX_POD_SETS} items"
        )
    for index, group in enumerate(groups):
        if isinstance(group, dict) and group.get("groupName") == "head":
            errors.append(
                f'{shown}.workerGroupSpecs[{index}].groupName: Forbidden: "head" is reserved '
                "for the head group"
            )
    return errors


def raycluster(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    pod_sets = _ray_cluster(data, ("spec",))
    errors = _cluster_errors(data, ("spec",), "spec", AUTOSCALING_CLUSTER)
    return pod_sets, {"refused": denied("vraycluster.kb.io", errors)}


def rayservice(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    spec = ("spec", "rayClusterConfig")
    pod_sets = _ray_cluster(data, spec)
    # Kueue names the field by its Go name in the message (`specPath.Child("rayClusterSpec")`)
    errors = _cluster_errors(data, spec, "spec.rayClusterSpec", AUTOSCALING_JOB)
    return pod_sets, {"refused": denied("vrayservice.kb.io", errors)}


def rayjob(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """`RayJob.PodSets`: the cluster's pod sets, then by `submissionMode`: `K8sJobMode` adds a
    `submitter` pod set (the `submitterPodTemplate`, else KubeRay's default submitter),
    `SidecarMode` adds the default submitter container to the head pod set (KubeRay ignores a
    `submitterPodTemplate` there), `HTTPMode` and `InteractiveMode` add nothing."""
    selector = read_field(data, ("spec", "clusterSelector"), dict)
    cluster_spec = read_field(data, ("spec", "rayClusterSpec"), dict)
    if selector and cluster_spec is None:
        return [], {
            "refused": CLUSTER_SELECTOR_SUSPENDED,
            "refused_by": "KubeRay",
            "refused_why": CLUSTER_SELECTOR_WHY,
        }
    if selector:
        message = (
            f"spec.clusterSelector: Invalid value: {json.dumps(selector, sort_keys=True, separators=(',', ':'))}: "
            "a kueue managed job should not use an existing cluster"
        )
        return [], {"refused": denied("vrayjob.kb.io", [message])}
    if cluster_spec is None:
        message = (
            "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed "
            "jobs that don't use clusterSelector"
        )
        return [], {"refused": denied("vrayjob.kb.io", [message])}
    spec = ("spec", "rayClusterSpec")
    pod_sets = _ray_cluster(data, spec)
    mode = read_field(data, ("spec", "submissionMode"), str) or "K8sJobMode"
    notes: list[str] = []
    if mode == "K8sJobMode":
        template = ("spec", "submitterPodTemplate")
        if read_field(data, template, dict) is not None:
            pod_sets.append(read_pod_set(data, template, "submitter", 1))
        else:
            pod_sets.append(_default_submitter())
    elif mode == "SidecarMode":
        head = pod_sets[0]
        pod_sets[0] = _replace(head, containers=(*head.containers, _submitter_container()))
        notes.append(
            "SidecarMode: KubeRay runs the job submitter as a container of the head pod; Kueue "
            "counts its default resources in the head pod set"
        )
    errors = []
    if read_field(data, ("spec", "shutdownAfterJobFinishes"), bool) is not True:
        errors.append(
            "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should "
            "delete the cluster after finishing"
        )
    errors.extend(_cluster_errors(data, spec, "spec.rayClusterSpec", AUTOSCALING_JOB))
    return pod_sets, {"refused": denied("vrayjob.kb.io", errors), "notes": tuple(notes)}


def _submitter_container() -> Container:
    return Container("ray-job-submitter", "container", RAY_SUBMITTER_REQUESTS, RAY_SUBMITTER_LIMITS)


def _default_submitter() -> PodSet:
    return PodSet(
        name="submitter",
        count=1,
        min_count=None,
        containers=(_submitter_container(),),
        overhead=EMPTY_RESOURCES,
        node_selector=MappingProxyType({}),
        affinity=(),
        tolerations=(),
        priority_class_name=None,
        resource_claims=(),
        path=("spec",),
    )
