"""Model values compared field by field and shown as `field: old → new` lines.

Every comparison (repository, clusters, pools, queues, teams) reports the fields it does not
handle itself the same way; this is that one way, free of any particular model type.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any


def _plain(value: Any) -> Any:
    """A model value as plain data, without source positions, for comparing and showing."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.name != "origin"}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def changed_fields(
    before: object, after: object, only: Iterable[str]
) -> list[tuple[str, Any, Any]]:
    """(field, before, after) for each named field whose plain value differs."""
    out = []
    for name in only:
        old, new = _plain(getattr(before, name)), _plain(getattr(after, name))
        if old != new:
            out.append((name, old, new))
    return out


def _named(items: list[Any]) -> dict[str, Any] | None:
    """A list of named entries (priorities, add-ons) as a mapping by name, else None."""
    if not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    named = {i["name"]: {k: v for k, v in i.items() if k != "name"} for i in items}
    return named if len(named) == len(items) else None


def _value_lines(path: str, old: Any, new: Any) -> Iterator[str]:
    """`path: old → new` for each leaf that differs, through mappings and named lists."""
    if old == new:
        return
    if isinstance(old, list) and isinstance(new, list):
        old_named, new_named = _named(old), _named(new)
        if old_named is not None and new_named is not None and (old_named or new_named):
            old, new = old_named, new_named
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            yield from _value_lines(f"{path}.{camel(key)}", old.get(key), new.get(key))
        return
    yield f"{path}: {_show(old)} → {_show(new)}"


def field_lines(changes: Sequence[tuple[str, Any, Any]]) -> tuple[str, ...]:
    return tuple(line for name, old, new in changes for line in _value_lines(camel(name), old, new))


def other_fields(kind: type, handled: Iterable[str]) -> tuple[str, ...]:
    skip = {"name", "origin", *handled}
    return tuple(f.name for f in fields(kind) if f.name not in skip)
