"""What a cluster's Kubernetes version lets the security layer enforce, for the layer, `fit` and
the cluster README alike."""

from __future__ import annotations

from typing import Literal

from renderer.model.platform import Cluster

VALIDATING_POLICY_MINOR = 30
"""`admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy is GA (served, on) from 1.30."""

MUTATING_POLICY_MINOR = 36
"""`admissionregistration.k8s.io/v1` MutatingAdmissionPolicy is served from 1.36; in 1.34 and
1.35 it is beta and off by default (feature gate and API group version both off), so gpuplane
does not count on it there."""

PriorityEnforcement = Literal["mutating", "validating"]


def admission_policies_served(cluster: Cluster) -> bool:
    """Whether the cluster serves ValidatingAdmissionPolicy v1: below 1.30 the security layer
    renders no admission policies at all."""
    return cluster.minor >= VALIDATING_POLICY_MINOR


def priority_enforcement(cluster: Cluster) -> PriorityEnforcement:
    """How a team's `priority` reaches its jobs on this cluster.

    `mutating`: a MutatingAdmissionPolicy sets Kueue's `kueue.x-k8s.io/priority-class` label on
    jobs that carry none (Kubernetes 1.36+, Kueue clusters). `validating`: a
    ValidatingAdmissionPolicy refuses such jobs, and its message names the label and the value
    to set (older clusters, and every Volcano cluster: Volcano Jobs take a PriorityClass name in
    `spec.priorityClassName`, which the policy requires).
    """
    if cluster.scheduler == "kueue" and cluster.minor >= MUTATING_POLICY_MINOR:
        return "mutating"
    return "validating"
