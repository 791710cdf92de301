"""Structural defaulting: the `default`s of a CRD schema applied to an object, as the API server
applies them before it validates (apiextensions-apiserver, `pkg/apiserver/schema/defaulting/
algorithm.go`, `Default`).

A property's default fills the property when it is absent from an object that is present (or
when it is null and the property is not nullable), then defaulting goes on into every property
the object has, the defaulted ones included, into every item of a list and into every value of a
map (`additionalProperties`). A default never creates a parent object that is absent: a default
under `spec.foo` applies only when `spec.foo` is there. The input is never changed; the result
shares nothing with it. See docs/cel.md.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["apply_defaults", "defaulted"]


def apply_defaults(obj: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of `obj` with the structural schema's defaults applied."""
    return defaulted(obj, schema)[0]


def defaulted(obj: Any, schema: Mapping[str, Any]) -> tuple[Any, bool]:
    """`apply_defaults(obj, schema)`, and whether `obj` is plain JSON: dicts with string keys,
    lists, strings, booleans, None, integers within 64 bits and finite floats, each of exactly
    that type (jsonschema-rs reads only such an object as jsonschema does: it takes a tuple for
    an array, for one)."""
    copier = _Copier()
    result = copier.copy(obj)
    _default(result, schema)
    return result, copier.plain


_INT_LIMIT = 2**63


class _Copier:
    """`copy.deepcopy` for plain JSON, with its memo (a value held twice is copied once, as
    deepcopy copies it), noting whether anything was not plain JSON; anything else goes to
    deepcopy itself, with the same memo."""

    __slots__ = ("memo", "plain")

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.plain = True

    def copy(self, value: Any) -> Any:
        kind = type(value)
        if kind is str or kind is bool or value is None:
            return value
        if kind is int:
            if not -_INT_LIMIT < value < _INT_LIMIT:
                self.plain = False
            return value
        if kind is float:
            if not math.isfinite(value):
                self.plain = False
            return value
        if kind is dict:
            done = self.memo.get(id(value))
            if done is not None:
                return done
            out: dict[Any, Any] = {}
            self.memo[id(value)] = out
            for key, item in value.items():
                if type(key) is not str:
                    self.plain = False
                    key = copy.deepcopy(key, self.memo)
                out[key] = self.copy(item)
            return out
        if kind is list:
            done = self.memo.get(id(value))
            if done is not None:
                return done
            items: list[Any] = []
            self.memo[id(value)] = items
            for item in value:
                items.append(self.copy(item))
            return items
        self.plain = False
        return copy.deepcopy(value, self.memo)


def _default(value: Any, schema: Any) -> None:
    plan = _plan_of(schema)
    if plan is None:
        return
    if isinstance(value, dict):
        for key, default, nullable in plan.fills:
            if key not in value or (value[key] is None and not nullable):
                value[key] = copy.deepcopy(default)
        if not plan.below and plan.extra is None:
            return
        for key, item in value.items():
            if not isinstance(item, dict | list):  # nothing to default in a scalar
                continue
            if key in plan.named:
                below = plan.below.get(key)
                if below is not None:
                    _default(item, below)
            elif plan.extra is not None:
                _default(item, plan.extra)
    elif isinstance(value, list) and plan.items is not None:
        for item in value:
            if isinstance(item, dict | list):
                _default(item, plan.items)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What `_default` does under one schema node that has a default somewhere below it: the
    properties it fills (key, default, whether null is kept), the properties it goes into
    (those with a default below them), every property's name (a key that names one is never
    read by `additionalProperties`), and the schema of a map's values and of a list's items
    when they have a default below them."""

    fills: tuple[tuple[str, Any, bool], ...]
    below: Mapping[str, Mapping[str, Any]]
    named: frozenset[str]
    extra: Mapping[str, Any] | None
    items: Mapping[str, Any] | None


_PLANS: dict[int, tuple[Any, _Plan | None]] = {}
"""Schema node (by id, holding the node so that the id stays its own) -> its `_Plan`, None
where no default lies below it. Worked out once per node: looking through every property of a
large schema (a pod template's) for each mapping of each object was most of the defaulting."""


def _plan_of(schema: Any) -> _Plan | None:
    known = _PLANS.get(id(schema))
    if known is not None:
        return known[1]
    plan = None
    if isinstance(schema, Mapping) and _has_defaults(schema):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        fills = tuple(
            (key, prop["default"], prop.get("nullable") is True)
            for key, prop in properties.items()
            if isinstance(prop, Mapping) and "default" in prop
        )
        below = {
            key: prop
            for key, prop in properties.items()
            if isinstance(prop, Mapping) and _has_defaults(prop)
        }
        extra, items = schema.get("additionalProperties"), schema.get("items")
        plan = _Plan(
            fills,
            below,
            frozenset(properties),
            extra if isinstance(extra, Mapping) and _has_defaults(extra) else None,
            items if isinstance(items, Mapping) and _has_defaults(items) else None,
        )
    _PLANS[id(schema)] = (schema, plan)
    return plan


_HAS_DEFAULTS: dict[int, tuple[Mapping[str, Any], bool]] = {}
"""Schema node (by id, holding the node so that the id stays its own) -> whether `_default`
can change anything under it. CRD schemas are parsed once and never changed; most of a large
schema (a pod template) has no default, and its part of the object need not be walked."""


def _has_defaults(schema: Mapping[str, Any]) -> bool:
    known = _HAS_DEFAULTS.get(id(schema))
    if known is not None:
        return known[1]
    _HAS_DEFAULTS[id(schema)] = (schema, True)  # a schema that holds itself: walk it all
    found = False
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        found = any(
            isinstance(prop, Mapping) and ("default" in prop or _has_defaults(prop))
            for prop in properties.values()
        )
    for key in ("additionalProperties", "items"):
        below = schema.get(key)
        found = found or (isinstance(below, Mapping) and _has_defaults(below))
    _HAS_DEFAULTS[id(schema)] = (schema, found)
    return found
