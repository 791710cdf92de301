"""The amounts in rendered objects, held to what Kubernetes and Kueue count (docs/api-limits.md).

The input schemas keep every quantity a file writes within range (`renderer.inputs.limits`);
gpuplane then multiplies and splits them (a container default per GPU of a pod, a team's caps).
`rendered_quantity_problems` checks what comes out, in every object the pipeline renders: a
finding here is a gpuplane bug or an input limit still unknown, never a value to let through.
"""

from __future__ import annotations

import marshal
import re
import struct
from collections.abc import Iterator, Mapping
from typing import Any

from renderer.model.quantity import RangeProblem, Unit, range_problem

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


_Link = tuple[Any, str | int] | None
"""Where a node sits, as (its parent's link, its key): a path is made of one only when a problem
is found, since copying a growing tuple for each of an object's containers was a third of the
walk."""


_UNMADE: Any = object()
"""`encoded` not given: made here."""


def _path(link: _Link, *last: str | int) -> _Path:
    keys: list[str | int] = list(reversed(last))
    while link is not None:
        link, key = link
        keys.append(key)
    keys.reverse()
    return tuple(keys)


_RANGE: dict[tuple[type, str | int, Unit], RangeProblem | None] = {}
"""`range_problem`'s answers, by the amount's type and value and the unit: a platform's objects
repeat a few hundred amounts tens of thousands of times, and the answer is a function of these
alone."""


def _range(amount: str | int, unit: Unit) -> RangeProblem | None:
    key = (type(amount), amount, unit)
    try:
        return _RANGE[key]
    except KeyError:
        found = _RANGE[key] = range_problem(amount, unit)
        if len(_RANGE) > 100_000:  # a hostile platform of distinct amounts: start again
            _RANGE.clear()
        return found


def _judged(link: _Link, key: str | int, resource: str, value: Any) -> Iterator[tuple[_Path, str]]:
    amount = _amount(value)
    if amount is None:
        return
    problem = _range(amount, resource_unit(resource))
    if problem is not None:
        yield _path(link, key), f"{resource} {amount!r} {problem.message}"


def _resource_map(node: Mapping[str, Any], link: _Link) -> Iterator[tuple[_Path, str]]:
    for resource, value in node.items():
        if isinstance(resource, str):
            yield from _judged(link, resource, resource, value)


def rendered_quantity_problems(
    obj: Mapping[str, Any], encoded: bytes | None = _UNMADE
) -> list[tuple[_Path, str]]:
    """Each amount of a rendered object that Kubernetes or Kueue cannot count as written
    (`range_problem`), wherever it sits: resource maps (`RESOURCE_MAPS`), Kueue's flavor
    amounts and emptyDir `sizeLimit`s. A LimitRange's `maxLimitRequestRatio` is a ratio, not
    an amount, and is left alone. An object none of whose keys is one the walk reads
    (`_KEYS_READ`, told from its marshal bytes, version 2: `encoded` when the caller made them,
    None when marshal cannot write the object) has nothing to find."""
    if encoded is _UNMADE:
        try:
            encoded = marshal.dumps(obj, 2)  # type: ignore[arg-type]
        except ValueError:  # a subclass, a type marshal does not write: walked
            encoded = None
    if encoded is not None and _KEYS_READ.search(encoded) is None:
        return []
    found: list[tuple[_Path, str]] = []
    stack: list[tuple[Any, _Link]] = [(obj, None)]
    while stack:
        node, link = stack.pop()
        if isinstance(node, list):
            stack.extend((v, (link, i)) for i, v in enumerate(node) if _is_container(v))
            continue
        name = node.get("name")
        if isinstance(name, str) and not node.keys().isdisjoint(KUEUE_AMOUNTS):
            for key in KUEUE_AMOUNTS:
                if key in node:
                    found.extend(_judged(link, key, name, node[key]))
        for key, value in node.items():
            if key == "sizeLimit":
                found.extend(_judged(link, key, "memory", value))
            elif type(value) in _LEAVES:  # told from its type: no `Mapping` check in Python
                continue
            elif key in _AMOUNT_MAPS and isinstance(value, Mapping):
                found.extend(_resource_map(value, (link, key)))
            elif _is_container(value):
                stack.append((value, (link, key)))
    return found


_AMOUNT_MAPS = RESOURCE_MAPS - {"maxLimitRequestRatio"}

_KEYS_READ = re.compile(
    b"|".join(
        re.escape(b"u" + struct.pack("<I", len(word)) + word.encode())
        for word in sorted({*_AMOUNT_MAPS, *KUEUE_AMOUNTS, "sizeLimit"})
    )
)
"""The keys the walk reads an amount under, as marshal's version 2 writes a str: `u`, its
length in four bytes (little-endian) and its UTF-8. Every key of an object marshal writes is
written out whole (no back-references in version 2), so an object whose bytes hold none of
these has no amount to check; a string value that reads as one only sends it to the walk."""

_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types of a value that is neither a mapping nor a list, told from the type alone: the
`Mapping` check is a call into Python for each of a rendered object's thousands of values. A
subclass of one of them is checked the long way."""


def _is_container(value: object) -> bool:
    kind = type(value)
    return (
        kind is dict or kind is list or (kind not in _LEAVES and isinstance(value, Mapping | list))
    )
