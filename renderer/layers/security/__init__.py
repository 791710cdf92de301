"""Security: the cluster-wide guardrails that hold whatever a team applies in its namespaces.

Synced in its own wave, before tenancy (`renderer.layers.gitops.argocd.LAYER_WAVES`), so no team
namespace exists without them. One module per concern, rendered in this order:

- `images`: images only from the team's registries (a ValidatingAdmissionPolicy per team);
- `host`: no privileged, host-namespace, hostPath, host-port or extra-capability pods;
- `gpus`: GPUs only in pods the queue (Kueue, or Volcano) admits;
- `labels`: the team and cost-centre labels on every workload, as on the namespace;
- `priority`: the team's priority on its jobs (mutating where the cluster serves it);
- `scheduling`: no `nodeName`, no toleration of every taint, only the team's PriorityClasses;
- `services`: no NodePort or LoadBalancer Services and no external IPs;
- `secret_refs`: no secret values in workloads or ConfigMaps, Secrets only from the store;

then the audit Policy (or a managed control plane's audit log setting), secrets by reference
and clean-up (their own modules).

Admission policies need `admissionregistration.k8s.io/v1`, served from Kubernetes 1.30
(`renderer.model.security.admission_policies_served`): an older cluster gets none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from renderer.layers.security import (
    audit,
    audit_logging,
    cleanup,
    gpus,
    host,
    images,
    labels,
    priority,
    scheduling,
    secret_refs,
    secrets,
    services,
)
from renderer.model.security import admission_policies_served
from renderer.model.view import ClusterView
from renderer.output.manifest import Output

LAYER = "security"

ADMISSION: tuple[Callable[[ClusterView], Iterator[Output]], ...] = (
    images.render,
    host.render,
    gpus.render,
    labels.render,
    priority.render,
    scheduling.render,
    services.render,
    secret_refs.render,
)
"""The admission-policy concerns, in render order."""

OTHERS: tuple[Callable[[ClusterView], Iterator[Output]], ...] = (
    audit.render,
    audit_logging.render,
    secrets.render,
    cleanup.render,
)
"""Concerns that are not admission policies (each decides for itself what a version needs)."""


def render(view: ClusterView) -> Iterator[Output]:
    """Every security object of one cluster, in the fixed order above."""
    if admission_policies_served(view.cluster):
        for concern in ADMISSION:
            yield from concern(view)
    for other in OTHERS:
        yield from other(view)
