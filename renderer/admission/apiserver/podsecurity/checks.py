"""What every Pod Security check shares: the result (`policy/checks.go` `CheckResult`), the
wording helpers (`policy/helpers.go`), the container visitor (`policy/visitor.go`), and reading
a pod spec as the decoded Go struct would hold it.

The checks read plain dictionaries (the YAML of a pod, or of a pod template's `metadata` and
`spec`). A field the Go struct holds as a pointer is "nil" when absent or null; a value of the
wrong type, which decoding would have refused before admission, counts as absent, so no check
raises on odd input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.admission.apiserver.podsecurity.api import Level, Version

Pod = Mapping[str, Any]
"""A pod spec (`corev1.PodSpec`) as a mapping."""
Meta = Mapping[str, Any]
"""A pod's `metadata` (`metav1.ObjectMeta`) as a mapping."""


@dataclass(frozen=True)
class CheckResult:
    """`policy.CheckResult`, and the ID of the check that gave it (set by the registry)."""

    allowed: bool
    reason: str = ""
    detail: str = ""
    check: str = ""


ALLOWED = CheckResult(True)

CheckPod = Callable[[Meta, Pod], CheckResult]
"""`policy.CheckPodFn`."""


def forbidden(reason: str, detail: str) -> CheckResult:
    return CheckResult(False, reason, detail)


# --- policy/helpers.go ------------------------------------------------------------------------


def join_quote(items: Sequence[str]) -> str:
    """`joinQuote`: each item in double quotes, joined by `, ` (no escaping, as upstream)."""
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def relax_for_user_namespace(spec: Pod) -> bool:
    """`relaxPolicyForUserNamespacePod`: the pod sets `hostUsers: false`."""
    return spec.get("hostUsers") is False


def go_sorted(values: set[str]) -> list[str]:
    """`sets.String.List()`: sorted by bytes, which for UTF-8 is code-point order."""
    return sorted(values)


def setters(*, pod_bad: bool, containers: Sequence[str]) -> list[str]:
    """The `badSetters` list most checks build: `pod`, then `container(s) "a", "b"`."""
    found = ["pod"] if pod_bad else []
    if containers:
        found.append(
            f"{pluralize('container', 'containers', len(containers))} {join_quote(containers)}"
        )
    return found


# --- reading the decoded pod ------------------------------------------------------------------


def mapping(value: Any) -> Mapping[str, Any] | None:
    """A struct pointer: the mapping, or None (absent, null, or not an object)."""
    return value if isinstance(value, Mapping) else None


def entries(value: Any) -> list[Mapping[str, Any]]:
    """A list of structs; a null entry decodes to the zero struct."""
    if not isinstance(value, list):
        return []
    return [item if isinstance(item, Mapping) else {} for item in value]


def text(value: Any) -> str:
    """A Go string field: the string, or "" when absent."""
    return value if isinstance(value, str) else ""


def integer(value: Any) -> int | None:
    """An int field given as a YAML integer; None when absent or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def string_map(value: Any) -> dict[str, str]:
    source = mapping(value) or {}
    return {str(k): v for k, v in source.items() if isinstance(v, str)}


CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
"""`visitContainers`' order: init containers, containers, ephemeral containers."""


def containers(spec: Pod) -> Iterator[Mapping[str, Any]]:
    """`visitContainers`: every container of the pod, in upstream's order."""
    for key in CONTAINER_LISTS:
        yield from entries(spec.get(key))


def container_name(container: Mapping[str, Any]) -> str:
    return text(container.get("name"))


def security_context(holder: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `securityContext` of a pod spec or a container (nil when absent)."""
    return mapping(holder.get("securityContext"))


def field_of(holder: Mapping[str, Any], *path: str) -> Any:
    """The value at `path` below a pod spec or container, None where a struct on the way is
    nil."""
    here: Any = holder
    for part in path:
        here = mapping(here)
        if here is None:
            return None
        here = here.get(part)
    return here


def is_windows(spec: Pod) -> bool:
    """`podSpec.OS != nil && podSpec.OS.Name == corev1.Windows`."""
    return bool(field_of(spec, "os", "name") == "windows")


# --- policy/checks.go: a check and its versions -----------------------------------------------


@dataclass(frozen=True)
class VersionedCheck:
    """`policy.VersionedCheck`: the check as it applies from `minimum` on, and the baseline
    checks it replaces at the restricted level."""

    minimum: Version
    check_pod: CheckPod
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """`policy.Check`: a check's unique ID, its level and its versions (strictly increasing)."""

    id: str
    level: Level
    versions: tuple[VersionedCheck, ...]
