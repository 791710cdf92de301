"""Which checks run at a level and version, in which order, and how their results add up: a
port of k8s.io/pod-security-admission v0.36.2 `policy/registry.go` (`NewEvaluator`,
`populate`, `inflateVersions`, `EvaluatePod`) and `policy/checks.go`
(`AggregateCheckResults`, `ForbiddenReason`, `ForbiddenDetail`).

Every check is registered with the versions its behaviour changed at; a policy version runs,
of each check, the newest entry not newer than it. `restricted` runs its own checks and every
baseline check no restricted entry of that version overrides. The order is fixed: baseline
checks by ID, then restricted checks by ID, so messages are stable.

A version newer than the newest any check registers is evaluated as that newest one, and so is
`latest`. The API server lowers that ceiling to the Kubernetes version it emulates, its own
minor unless told otherwise (pod-security-admission 94fed1c, "Make pod-security-admission
honor emulation version", Kubernetes 4b0eeeb6): on a 1.33 cluster `latest` means the checks of
v1.33, not those 1.34 or 1.35 added. `evaluate_pod`'s `emulation` is that version.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from renderer.admission.apiserver.podsecurity.api import Level, LevelVersion, Version, v1
from renderer.admission.apiserver.podsecurity.baseline import BASELINE_CHECKS
from renderer.admission.apiserver.podsecurity.checks import (
    Check,
    CheckPod,
    CheckResult,
    Meta,
    Pod,
    VersionedCheck,
)
from renderer.admission.apiserver.podsecurity.restricted import RESTRICTED_CHECKS

DEFAULT_CHECKS: tuple[Check, ...] = BASELINE_CHECKS + RESTRICTED_CHECKS
"""`policy.DefaultChecks()`: every check with a minimum version (the experimental list, of
checks without one, is empty upstream)."""

UNKNOWN_FORBIDDEN_REASON = "unknown forbidden reason"

Ordered = tuple[tuple[str, CheckPod], ...]


@dataclass(frozen=True)
class Registry:
    """`checkRegistry`: per version, the checks of each level in evaluation order."""

    baseline: Mapping[Version, Ordered]
    restricted: Mapping[Version, Ordered]
    max_version: Version


def validate_checks(checks: Sequence[Check]) -> list[str]:
    """`validateChecks`: unique IDs, baseline or restricted, versions defined, not latest and
    strictly increasing; overrides only on restricted checks and only of baseline checks."""
    errors = []
    levels: dict[str, Level] = {}
    for check in checks:
        if check.id in levels:
            errors.append(f"multiple checks registered for ID {check.id}")
        levels[check.id] = check.level
        if check.level == Level.PRIVILEGED:
            errors.append(f"check {check.id}: invalid level {check.level.value}")
        if not check.versions:
            errors.append(f"check {check.id}: empty")
        previous = Version()
        for entry in check.versions:
            if entry.minimum == Version():
                errors.append(f"check {check.id}: undefined version found")
            elif entry.minimum.latest:
                errors.append(f"check {check.id}: version cannot be 'latest'")
            elif previous == entry.minimum:
                errors.append(f"check {check.id}: duplicate version {entry.minimum}")
            elif not previous.older(entry.minimum):
                errors.append(f"check {check.id}: versions must be strictly increasing")
            previous = entry.minimum
    for check in checks:
        for entry in check.versions:
            if entry.overrides and check.level != Level.RESTRICTED:
                errors.append(f"check {check.id}: only restricted checks may set overrides")
            for override in entry.overrides:
                if override in levels and levels[override] != Level.BASELINE:
                    errors.append(f"check {check.id}: overrides {levels[override].value} check")
    return errors


def _inflate(
    check: Check, into: dict[Version, dict[str, VersionedCheck]], max_version: Version
) -> None:
    """`inflateVersions`: each entry applies from its minimum up to the next entry's."""
    for i, entry in enumerate(check.versions):
        upto = (
            check.versions[i + 1].minimum
            if i + 1 < len(check.versions)
            else max_version.next_minor()
        )
        version = entry.minimum
        while version.older(upto):
            into.setdefault(version, {})[check.id] = entry
            version = version.next_minor()


def build_registry(checks: Sequence[Check] = DEFAULT_CHECKS) -> Registry:
    """`NewEvaluator` + `populate`."""
    max_version = v1(0)
    for check in checks:
        last = check.versions[-1].minimum
        if max_version.older(last):
            max_version = last
    baseline: dict[Version, dict[str, VersionedCheck]] = {}
    restricted: dict[Version, dict[str, VersionedCheck]] = {}
    for check in checks:
        _inflate(check, restricted if check.level == Level.RESTRICTED else baseline, max_version)
    order = sorted(c.id for c in checks if c.level == Level.BASELINE)
    order += sorted(c.id for c in checks if c.level == Level.RESTRICTED)
    by_level: dict[Level, dict[Version, Ordered]] = {Level.BASELINE: {}, Level.RESTRICTED: {}}
    version = v1(0)
    while version.older(max_version.next_minor()):
        own = restricted.get(version, {})
        overridden = {o for entry in own.values() for o in entry.overrides}
        base = baseline.get(version, {})
        combined = {**own, **{i: e for i, e in base.items() if i not in overridden}}
        by_level[Level.RESTRICTED][version] = _ordered(combined, order)
        by_level[Level.BASELINE][version] = _ordered(base, order)
        version = version.next_minor()
    return Registry(by_level[Level.BASELINE], by_level[Level.RESTRICTED], max_version)


def _ordered(checks: Mapping[str, VersionedCheck], order: Sequence[str]) -> Ordered:
    """`mapCheckPodFns`: the checks' functions in `order`."""
    return tuple((i, checks[i].check_pod) for i in order if i in checks)


@functools.cache
def default_registry() -> Registry:
    return build_registry()


def effective_version(version: Version, emulation: Version | None = None) -> Version:
    """The version whose checks run for `version`: no newer than the newest registered, nor
    than the emulated Kubernetes version."""
    ceiling = default_registry().max_version
    if emulation is not None and emulation.older(ceiling):
        ceiling = emulation
    return ceiling if ceiling.older(version) else version


def evaluate_pod(
    lv: LevelVersion, meta: Meta, spec: Pod, emulation: Version | None = None
) -> list[CheckResult]:
    """`checkRegistry.EvaluatePod`: every check of the level at the version, in order, each
    result tagged with its check's ID. `privileged` runs none."""
    if lv.level == Level.PRIVILEGED:
        return []
    registry = default_registry()
    version = effective_version(lv.version, emulation)
    checks = registry.baseline if lv.level == Level.BASELINE else registry.restricted
    return [
        replace(check(meta, spec), check=check_id) for check_id, check in checks.get(version, ())
    ]


@dataclass(frozen=True)
class AggregateResult:
    """`policy.AggregateCheckResult`: the forbidden checks' reasons and details, in order."""

    reasons: tuple[str, ...]
    details: tuple[str, ...]
    checks: tuple[str, ...]
    """The IDs of the checks that forbade, beside their reasons (gpuplane's, for the fixes)."""

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def forbidden_reason(self) -> str:
        """`ForbiddenReason`: the reasons, comma-separated."""
        return ", ".join(self.reasons)

    def forbidden_detail(self) -> str:
        """`ForbiddenDetail`: each reason with its detail in parentheses where it has one."""
        return ", ".join(
            f"{reason} ({detail})" if detail else reason
            for reason, detail in zip(self.reasons, self.details, strict=True)
        )


def aggregate(results: Sequence[CheckResult]) -> AggregateResult:
    """`AggregateCheckResults`; a forbidding check without a reason is named
    `unknown forbidden reason`."""
    failed = [r for r in results if not r.allowed]
    return AggregateResult(
        tuple(r.reason or UNKNOWN_FORBIDDEN_REASON for r in failed),
        tuple(r.detail for r in failed),
        tuple(r.check for r in failed),
    )


def evaluate(
    lv: LevelVersion, meta: Meta, spec: Pod, emulation: Version | None = None
) -> AggregateResult:
    """The pod at `lv`: `AggregateCheckResults(EvaluatePod(...))`."""
    return aggregate(evaluate_pod(lv, meta, spec, emulation))
