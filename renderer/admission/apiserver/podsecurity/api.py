"""Pod Security levels, policy versions and the namespace labels that choose them: a port of
k8s.io/pod-security-admission v0.36.2 `api/constants.go` and `api/helpers.go`.

A namespace names a level (`privileged`, `baseline`, `restricted`) and a version (`latest` or
`v1.X`) per mode (enforce, audit, warn); a label it does not set takes the API server's default,
which with no `PodSecurityConfiguration` (gpuplane renders none) is `privileged` at `latest` for
every mode (`admission/api/v1/defaults.go` `SetDefaults_PodSecurityDefaults`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from renderer.admission.apiserver.metadata import go_quote


class Level(Enum):
    """`api.Level`."""

    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"


LABEL_PREFIX = "pod-security.kubernetes.io/"
ENFORCE_LEVEL_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LEVEL_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LEVEL_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"


@dataclass(frozen=True, order=False)
class Version:
    """`api.Version`: `v<major>.<minor>`, or `latest`, which is newer than every version."""

    major: int = 0
    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return "latest" if self.latest else f"v{self.major}.{self.minor}"

    def older(self, other: Version) -> bool:
        """`Version.Older`: latest is never older, and every version is older than latest."""
        if self.latest:
            return False
        if other.latest:
            return True
        if self.major != other.major:
            return self.major < other.major
        return self.minor < other.minor

    def next_minor(self) -> Version:
        """`policy/registry.go` `nextMinor`."""
        return self if self.latest else Version(self.major, self.minor + 1)


LATEST = Version(latest=True)


def v1(minor: int) -> Version:
    """`api.MajorMinorVersion(1, minor)`."""
    return Version(1, minor)


@dataclass(frozen=True)
class LevelVersion:
    """`api.LevelVersion`; `str()` is how messages name it (`restricted:v1.33`)."""

    level: Level
    version: Version

    def __str__(self) -> str:
        return f"{self.level.value}:{self.version}"


@dataclass(frozen=True)
class Policy:
    """`api.Policy`: the level and version of each mode."""

    enforce: LevelVersion
    audit: LevelVersion
    warn: LevelVersion

    def fully_privileged(self) -> bool:
        """`Policy.FullyPrivileged`."""
        return all(lv.level == Level.PRIVILEGED for lv in (self.enforce, self.audit, self.warn))


PRIVILEGED_LATEST = LevelVersion(Level.PRIVILEGED, LATEST)
DEFAULT_POLICY = Policy(PRIVILEGED_LATEST, PRIVILEGED_LATEST, PRIVILEGED_LATEST)
"""The API server's defaults without a PodSecurityConfiguration."""

_VERSION = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")
_LEVEL_ERROR = "must be one of privileged, baseline, restricted"
_VERSION_ERROR = 'must be "latest" or "v1.x"'


def parse_level(text: str) -> tuple[Level, str | None]:
    """`api.ParseLevel`: an unknown level is `restricted`, with an error."""
    for level in Level:
        if text == level.value:
            return level, None
    return Level.RESTRICTED, _LEVEL_ERROR


def parse_version(text: str) -> tuple[Version, str | None]:
    """`api.ParseVersion`: `latest` or `v1.X` (no leading zero); anything else is `latest`,
    with an error. Go's `$` ends the text (no trailing newline), hence `fullmatch`."""
    if text == "latest":
        return LATEST, None
    match = _VERSION.fullmatch(text)
    if match is None:
        return LATEST, _VERSION_ERROR
    return v1(int(match.group(1))), None


def parse_cluster_version(text: str) -> Version | None:
    """A cluster's `kubernetesVersion` (`1.33`, `1.33.2`, `v1.34`) as the API server's emulation
    version (its binary's minor, `api.GetAPIVersion`); None when it names no minor."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\..*)?", text.strip())
    return Version(int(match.group(1)), int(match.group(2))) if match else None


def compare_levels(a: Level, b: Level) -> int:
    """`api.CompareLevels`: 1 when `a` is stricter than `b`, -1 when less strict, 0 when equal."""
    order = {Level.PRIVILEGED: 0, Level.BASELINE: 1, Level.RESTRICTED: 2}
    return (order[a] > order[b]) - (order[a] < order[b])


def _label_error(label: str, value: str, detail: str) -> str:
    """`field.Invalid(metadata.labels[<label>], value, detail).Error()`."""
    return f"metadata.labels[{label}]: Invalid value: {go_quote(value)}: {detail}"


def policy_to_evaluate(
    labels: Mapping[str, object], defaults: Policy = DEFAULT_POLICY
) -> tuple[Policy, tuple[str, ...]]:
    """`api.PolicyToEvaluate`: the namespace's policy from its labels, falling back to
    `defaults` per label. A bad enforce level is `restricted` (fail closed), a bad audit or warn
    level `privileged` (fail open), a bad version `latest`; each bad label is an error. Warn
    follows enforce when the namespace sets an enforce level stricter than warn's and no warn
    level of its own (and its version too, unless warn-version is set)."""
    enforce, audit, warn = defaults.enforce, defaults.audit, defaults.warn
    errors: list[str] = []
    text = {key: str(value) for key, value in labels.items() if isinstance(value, str)}

    def level(label: str, current: LevelVersion, *, fail_open: bool) -> LevelVersion:
        if label not in text:
            return current
        parsed, error = parse_level(text[label])
        if error:
            errors.append(_label_error(label, text[label], error))
            parsed = Level.PRIVILEGED if fail_open else parsed
        return LevelVersion(parsed, current.version)

    def version(label: str, current: LevelVersion) -> LevelVersion:
        if label not in text:
            return current
        parsed, error = parse_version(text[label])
        if error:
            errors.append(_label_error(label, text[label], error))
        return LevelVersion(current.level, parsed)

    enforce = level(ENFORCE_LEVEL_LABEL, enforce, fail_open=False)
    has_enforce_level = ENFORCE_LEVEL_LABEL in text and not errors
    enforce = version(ENFORCE_VERSION_LABEL, enforce)
    audit = version(AUDIT_VERSION_LABEL, level(AUDIT_LEVEL_LABEL, audit, fail_open=True))
    warn = version(WARN_VERSION_LABEL, level(WARN_LEVEL_LABEL, warn, fail_open=True))
    if (
        WARN_LEVEL_LABEL not in text
        and has_enforce_level
        and compare_levels(enforce.level, warn.level) > 0
    ):
        warn_version = warn.version if WARN_VERSION_LABEL in text else enforce.version
        warn = LevelVersion(enforce.level, warn_version)
    return Policy(enforce, audit, warn), tuple(errors)
