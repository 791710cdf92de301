"""`fit` of an endpoint's Deployment answers for the endpoint at its maximum.

An endpoint's Deployment (its pods labelled `gpuplane.dev/endpoint`, `model.serving.
ENDPOINT_LABEL`) is scaled by its autoscaler up to `replicas.max`, whatever its file's
`spec.replicas` says (KEDA's HPA owns the count). Kueue admits each of its pods as a Workload
of its own (v0.19.2 `pkg/controller/jobs/deployment`: the webhook hands the pods to the pod
integration), so the question that matters is whether all `replicas.max` pods can be admitted
at once: fit answers that, and says so. docs/serving-autoscaling.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from renderer.admission.workloads.podsets import Workload
from renderer.model.platform import Endpoint, Platform
from renderer.model.serving import ENDPOINT_LABEL


def _endpoint_name(data: Any) -> str | None:
    """The ENDPOINT_LABEL of the Deployment's pods (or, failing that, of the Deployment)."""
    for path in (("spec", "template", "metadata", "labels"), ("metadata", "labels")):
        value: Any = data
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, dict) and isinstance(value.get(ENDPOINT_LABEL), str):
            return str(value[ENDPOINT_LABEL])
    return None


def declared_endpoint(platform: Platform, namespace: str | None, name: str) -> Endpoint | None:
    """The endpoint `name` of the team namespace `namespace`, where one is declared."""
    for team in platform.teams.values():
        for ns in team.namespaces:
            if ns.name == namespace:
                return next((e for e in ns.endpoints if e.name == name), None)
    return None


def at_maximum(
    platform: Platform, workload: Workload, data: Any, namespace: str | None
) -> Workload:
    """The Deployment's workload with `replicas.max` pods where it is a declared endpoint's;
    any other workload as it is."""
    if workload.kind != "Deployment" or not isinstance(data, dict):
        return workload
    name = _endpoint_name(data)
    if name is None:
        return workload
    endpoint = declared_endpoint(platform, workload.namespace or namespace, name)
    if endpoint is None:
        return workload
    note = (
        f"answered for endpoint {endpoint.name} at its maximum: replicas.max "
        f"{endpoint.max_replicas} pods admitted at once (its autoscaler may reach them; the "
        f"file's spec.replicas {workload.replicas} is its starting count)"
    )
    return dataclasses.replace(
        workload, replicas=endpoint.max_replicas, notes=(note, *workload.notes)
    )
