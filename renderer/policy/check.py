"""Runs every policy rule in one fixed order, whichever topic module a rule lives in.

Importing the topic modules registers their rules; `ORDER` keeps their findings in the sequence
they have always come out in, so moving a rule between topics never reorders a report.
"""

from __future__ import annotations

from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import Platform
from renderer.policy import delivery, gpus, pools, queues, quotas, references, tenancy
from renderer.policy.rule import REGISTERED, Rule

TOPICS = (references, tenancy, quotas, gpus, pools, queues, delivery)
"""The topic modules; importing them registers their rules."""

ORDER = (
    "unknown-reference",
    "queue-pool-elsewhere",
    "pool-not-in-queue",
    "duplicate-quota",
    "namespace-conflict",
    "reserved-namespace",
    "rbac-reserved-group",
    "quota-exceeds-pool",
    "guaranteed-exceeds-capacity",
    "lending-exceeds-nominal",
    "borrowing-exceeds-pool",
    "quota-needs-namespace",
    "training-inference-separation",
    "unknown-accelerator",
    "mig-layout-invalid",
    "quota-profile",
    "sharing-breaks-training",
    "dra-needs-kubernetes-1.34",
    "acceptance-thresholds",
    "cost-currency",
    "pool-unused",
    "queue-priorities",
    "unknown-priority",
    "mixing-priority",
    "addon-version-unpinned",
    "scheduler-addon-missing",
    "argo-workflows-addon-missing",
    "pod-security-loosened",
    "pool-host-capacity",
    "rdma-on-tcp-fabric",
    "multi-node-without-rdma",
    "queue-preemption",
    "pool-in-several-queues",
    "reserved-queue-name",
    "topology-levels",
    "pool-labels-limit",
    "queue-settings-differ",
    "driver-version-required",
    "driver-version-mismatch",
    "acceptance-image-differs",
    "mig-strategy-conflict",
    "sharing-needs-nvidia",
    "dra-unsupported",
    "pool-label-domain",
    "argocd-project",
)
"""The order rules run in, and so the order of their findings."""


def _in_order(registered: list[Rule]) -> list[Rule]:
    """The registered rules in `ORDER`; a rule missing from it, or listed but not registered, is
    refused here rather than run in an order no one chose."""
    ids = [r.id for r in registered]
    if sorted(ids) != sorted(ORDER):
        unlisted = sorted(set(ids) - set(ORDER))
        unregistered = sorted(set(ORDER) - set(ids))
        raise RuntimeError(
            f"policy ORDER is out of date: not listed {unlisted}, not registered {unregistered}"
        )
    return sorted(registered, key=lambda r: ORDER.index(r.id))


POLICY: list[Rule] = _in_order(REGISTERED)


def check_policy(platform: Platform) -> list[Diagnostic]:
    """Run every rule; all findings, never only the first."""
    return [d for r in POLICY for d in r.check(platform)]
