"""Runs every policy rule, whichever topic module it lives in.

Importing the topic modules registers their rules. The order rules run in is not part of any
report: the pipeline sorts findings by file, position, rule and message.
"""

from __future__ import annotations

from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import Platform
from renderer.policy import (
    allowlists,
    capacity,
    cleanup,
    delivery,
    endpoints,
    gpus,
    guardrails,
    hosts,
    identities,
    limits,
    operator_versions,
    operators,
    pools,
    production_images,
    queues,
    quotas,
    reach,
    references,
    secrets,
    slo,
    team_images,
    tenancy,
)
from renderer.policy.rule import POLICY, Scope

TOPICS = (
    references,
    tenancy,
    identities,
    quotas,
    reach,
    gpus,
    pools,
    production_images,
    queues,
    delivery,
    operators,
    operator_versions,
    secrets,
    cleanup,
    guardrails,
    allowlists,
    team_images,
    limits,
    endpoints,
    hosts,
    slo,
    capacity,
)
"""The topic modules; importing them registers their rules in `POLICY`."""


def check_policy(platform: Platform, scope: Scope | None = None) -> list[Diagnostic]:
    """Run every rule (of `scope`, when given); all findings, never only the first."""
    return [d for r in POLICY if scope is None or r.scope == scope for d in r.check(platform)]
