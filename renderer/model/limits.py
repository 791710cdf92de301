"""The amounts in rendered objects, held to what Kubernetes and Kueue count (docs/api-limits.md).

The input schemas keep every quantity a file writes within range (`renderer.inputs.limits`);
gpuplane then multiplies and splits them (a container default per GPU of a pod, a team's caps).
`rendered_quantity_problems` checks what comes out, in every object the pipeline renders: a
finding here is a gpuplane bug or an input limit still unknown, never a value to let through.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from renderer.model.quantity import Unit, range_problem

_Path = tuple[str | int, ...]

RESOURCE_MAPS = frozenset(
    {
        *("requests", "limits"),  # a container's resources, a PVC's requests
        "hard",  # a ResourceQuota's
        *("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"),  # a LimitRange's
        *("capability", "deserved", "guarantee"),  # a Volcano Queue's
    }
)
"""Keys whose value maps resource names to quantities."""

KUEUE_AMOUNTS = ("nominalQuota", "borrowingLimit", "lendingLimit")
"""The amounts of one resource of a Kueue flavor (`{name, nominalQuota, ...}`)."""

_BYTES = frozenset({"memory", "storage", "ephemeral-storage"})


def resource_unit(name: str) -> Unit:
    """How Kubernetes counts a resource: CPU in millicores, memory and storage in bytes, and
    every other resource (extended resources, object counts) as a whole number. A
    ResourceQuota's `requests.`/`limits.` prefix is read past."""
    bare = name.removeprefix("requests.").removeprefix("limits.")
    if bare == "cpu":
        return "cpu"
    if bare in _BYTES or bare.startswith("hugepages-"):
        return "bytes"
    return "count"


def _amount(value: Any) -> str | int | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return value if isinstance(value, str | int) else repr(value)


def _judged(path: _Path, resource: str, value: Any) -> Iterator[tuple[_Path, str]]:
    amount = _amount(value)
    if amount is None:
        return
    problem = range_problem(amount, resource_unit(resource))
    if problem is not None:
        yield path, f"{resource} {amount!r} {problem.message}"


def _resource_map(node: Mapping[str, Any], at: _Path) -> Iterator[tuple[_Path, str]]:
    for resource, value in node.items():
        if isinstance(resource, str):
            yield from _judged((*at, resource), resource, value)


def rendered_quantity_problems(obj: Mapping[str, Any]) -> list[tuple[_Path, str]]:
    """Each amount of a rendered object that Kubernetes or Kueue cannot count as written
    (`range_problem`), wherever it sits: resource maps (`RESOURCE_MAPS`), Kueue's flavor
    amounts and emptyDir `sizeLimit`s. A LimitRange's `maxLimitRequestRatio` is a ratio, not
    an amount, and is left alone."""
    found: list[tuple[_Path, str]] = []
    stack: list[tuple[Any, _Path]] = [(obj, ())]
    while stack:
        node, at = stack.pop()
        if isinstance(node, list):
            stack.extend((v, (*at, i)) for i, v in enumerate(node) if _is_container(v))
            continue
        name = node.get("name")
        if isinstance(name, str) and not node.keys().isdisjoint(KUEUE_AMOUNTS):
            for key in KUEUE_AMOUNTS:
                if key in node:
                    found.extend(_judged((*at, key), name, node[key]))
        for key, value in node.items():
            if key == "sizeLimit":
                found.extend(_judged((*at, key), "memory", value))
            elif type(value) in _LEAVES:  # told from its type: no `Mapping` check in Python
                continue
            elif key in _AMOUNT_MAPS and isinstance(value, Mapping):
                found.extend(_resource_map(value, (*at, key)))
            elif _is_container(value):
                stack.append((value, (*at, key)))
    return found


_AMOUNT_MAPS = RESOURCE_MAPS - {"maxLimitRequestRatio"}

_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types of a value that is neither a mapping nor a list, told from the type alone: the
`Mapping` check is a call into Python for each of a rendered object's thousands of values. A
subclass of one of them is checked the long way."""


def _is_container(value: object) -> bool:
    kind = type(value)
    return (
        kind is dict or kind is list or (kind not in _LEAVES and isinstance(value, Mapping | list))
    )
