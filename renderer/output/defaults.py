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
from collections.abc import Mapping
from typing import Any

__all__ = ["apply_defaults"]


def apply_defaults(obj: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of `obj` with the structural schema's defaults applied."""
    result = copy.deepcopy(obj)
    _default(result, schema)
    return result


def _default(value: Any, schema: Any) -> None:
    if not isinstance(schema, Mapping):
        return
    if isinstance(value, dict):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for key, prop in properties.items():
                if not isinstance(prop, Mapping) or "default" not in prop:
                    continue
                if key not in value or (value[key] is None and prop.get("nullable") is not True):
                    value[key] = copy.deepcopy(prop["default"])
        else:
            properties = {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                _default(item, properties[key])
            elif isinstance(extra, Mapping):
                _default(item, extra)
    elif isinstance(value, list):
        items = schema.get("items")
        for item in value:
            _default(item, items)
