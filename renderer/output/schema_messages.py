"""Schema errors as one-line messages with dotted paths, worded the same whichever schema found them.

jsonschema's own messages print whole values and schema fragments; the built-in kinds, the custom
resources and the CRD files all report through these, so a problem reads alike wherever it comes from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from jsonschema.exceptions import ValidationError, best_match

_Path = tuple[str | int, ...]
Found = tuple[_Path, str]  # (path parts, message)


# --------------------------------------------------------------------------------------------
# Error messages


_IDENTIFIER_RE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")
_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_MAX_SHOWN = 60


def path_sort_key(parts: _Path) -> tuple[tuple[int, int, str], ...]:
    """Indexes in numeric order ([2] before [10]); the parent before its children."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in parts)


def format_path(parts: Iterable[str | int]) -> str:
    """``spec.resourceGroups[0].name``; keys that are not identifiers are quoted:
    ``spec.hard["requests.nvidia.com/gpu"]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER_RE.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def show(value: Any) -> str:
    """A short, one-line rendering of a value for messages."""
    if isinstance(value, str):
        if len(value) > _MAX_SHOWN:
            value = value[: _MAX_SHOWN - 3] + "..."
        return repr(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def _show_types(types: Any) -> str:
    if isinstance(types, str):
        types = [types]
    shown = [t for t in types if t != "null"] or list(types)
    return " or ".join(repr(t) for t in shown)


def _show_choices(values: Iterable[Any]) -> str:
    shown = [show(v) for v in values if v is not None]
    if len(shown) > 12:
        shown = [*shown[:12], "..."]
    return ", ".join(shown)


def one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


def messages(error: ValidationError) -> Iterator[Found]:
    """(path, message) for one jsonschema error, concise and on one line."""
    path: _Path = tuple(error.absolute_path)
    keyword = error.validator
    value: Any = error.validator_value
    instance: Any = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}

    if keyword == "additionalProperties" and value is False and isinstance(instance, Mapping):
        known = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        for key in instance:
            if key not in known and not any(re.search(p, key) for p in patterns):
                yield path, f"unknown field {show(key)}"
        return
    if keyword == "required" and isinstance(instance, Mapping):
        for name in value:
            if name not in instance:
                yield path, f"missing required field {show(name)}"
        return
    if keyword in ("anyOf", "oneOf"):
        context = list(error.context or ())
        if keyword == "oneOf" and not context and instance is None:
            # The bundled schemas make every branch of a union (IntOrString, Quantity)
            # nullable, so null matches all of them; the API server takes null as unset.
            return
        same_level_types = [e for e in context if e.validator == "type" and not e.relative_path]
        if context and len(same_level_types) == len(context):
            types = [t for e in context for t in as_list(e.validator_value)]
            yield path, f"{show(instance)} is not of type {_show_types(dict.fromkeys(types))}"
            return
        best = best_match(context) if context else None
        if best is None or (best.validator in ("anyOf", "oneOf") and not best.context):
            yield path, f"{show(instance)} does not match exactly one of the allowed forms"
            return
        yield from messages(best)
        return
    if keyword == "not":
        if isinstance(value, Mapping) and set(value) == {"required"}:
            fields = " and ".join(repr(f) for f in value["required"])
            yield path, f"fields {fields} must not all be set"
        else:
            yield path, f"{show(instance)} is not allowed here"
        return
    message: str
    if keyword == "type":
        message = f"{show(instance)} is not of type {_show_types(value)}"
    elif keyword == "enum":
        message = f"{show(instance)} is not one of {_show_choices(value)}"
    elif keyword == "const":
        message = f"{show(instance)} must be {show(value)}"
    elif keyword == "pattern":
        if value == _QUANTITY_PATTERN:
            message = f"{show(instance)} is not a valid quantity (such as '16', '500m', '64Gi')"
        else:
            message = f"{show(instance)} does not match the pattern {value!r}"
    elif keyword == "maxLength":
        message = f"{show(instance)} is too long: at most {value} characters"
    elif keyword == "minLength":
        message = f"{show(instance)} is too short: at least {value} characters"
    elif keyword == "maxItems":
        message = f"has {len(instance)} items: at most {value} allowed"
    elif keyword == "minItems":
        message = f"has {len(instance)} items: at least {value} required"
    elif keyword == "maxProperties":
        message = f"has {len(instance)} fields: at most {value} allowed"
    elif keyword == "minProperties":
        message = f"has {len(instance)} fields: at least {value} required"
    else:
        message = one_line(error.message)
    yield path, message


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]
