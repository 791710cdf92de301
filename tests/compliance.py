"""What a job needs to pass the example platform's admission chain, for tests about Kueue's step.

Since issue 28 `gpuplane fit` runs the whole chain before Kueue (docs/fit.md, "The chain"):
the rendered ValidatingAdmissionPolicies refuse a workload without the namespace's
`gpuplane.dev/team` and `gpuplane.dev/cost-center` labels (renderer/layers/security/labels.py)
or without a `ttlSecondsAfterFinished` within the team's retention (cleanup.py), and Pod
Security refuses, in an inference namespace (enforce `restricted`), pods without the restricted
profile's securityContext. A test about flavors, topology, counts or preemption gives its job
these, so that the answer it checks is Kueue's and the whole answer at once.
"""

from __future__ import annotations

from typing import Any

from renderer.model.platform import Platform

TTL_SECONDS = 3600
"""Within every example team's `retention.finishedJobs` (teams/*.yaml: 12h the least)."""

RESTRICTED_POD: dict[str, Any] = {
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""The pod-level fields Pod Security's `restricted` profile checks (k8s.io/pod-security-admission
`policy/check_runAsNonRoot.go`, `check_seccompProfile_restricted.go`)."""

RESTRICTED_CONTAINER: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
"""The container fields it checks (`check_allowPrivilegeEscalation.go`,
`check_capabilities_restricted.go`)."""


def team_labels(platform: Platform, namespace: str) -> dict[str, str]:
    """The labels the common-labels policy asks for: those of the team owning `namespace`."""
    for team in platform.teams.values():
        if any(ns.name == namespace for ns in team.namespaces):
            return {"gpuplane.dev/team": team.name, "gpuplane.dev/cost-center": team.cost_center}
    raise KeyError(f"no team has namespace {namespace}")


def restricted(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """`pod_spec` (changed in place, and returned) as the restricted profile admits it."""
    pod_spec["securityContext"] = {**RESTRICTED_POD, **(pod_spec.get("securityContext") or {})}
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or ():
            own = container.get("securityContext") or {}
            container["securityContext"] = {**RESTRICTED_CONTAINER, **own}
    return pod_spec


def comply(document: dict[str, Any], platform: Platform, namespace: str) -> dict[str, Any]:
    """A batch/v1 Job `document` (changed in place, and returned) with the team's labels, a
    TTL and the restricted securityContext: no step before Kueue refuses it in `namespace`."""
    metadata = document.setdefault("metadata", {})
    metadata["labels"] = {**team_labels(platform, namespace), **(metadata.get("labels") or {})}
    document["spec"].setdefault("ttlSecondsAfterFinished", TTL_SECONDS)
    restricted(document["spec"]["template"]["spec"])
    return document
