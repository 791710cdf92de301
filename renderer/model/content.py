"""A digest of what a piece of the model says, for caching what is built from it by content.

`content_digest` walks model values (frozen dataclasses, mappings, sequences, sets, enums and
plain values, decimals included) into one SHA-256, every value tagged with its type, so that two values have the
same digest only when they are equal, field by field, and of the same types. Where a value was
declared (`Origin`, `SourceMap`, `Location`) is left out: what is built from a digest must not
depend on it (the suites' WorkflowTemplates do not; `tests/test_suite_cache.py` checks that a
platform moved to other lines builds the same objects from the same digests).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Mapping, Set
from decimal import Decimal
from fractions import Fraction
from typing import Any

from renderer.findings.diagnostics import Location, SourceMap
from renderer.model.platform import Origin

__all__ = ["content_digest"]

_WHERE = (Origin, SourceMap, Location)
"""Where a value was declared: not what it says."""


class _Unhashable(Exception):
    """A value the digest does not know how to read (then nothing is cached)."""


def content_digest(*values: Any) -> bytes | None:
    """The digest of `values`, None when one holds a type the walk does not know or refers
    back to itself."""
    digest = hashlib.sha256()
    try:
        for value in values:
            _feed(digest, value, set())
    except (_Unhashable, RecursionError):
        return None
    return digest.digest()


def _feed(digest: Any, value: Any, open_ids: set[int]) -> None:
    kind = type(value)
    if value is None or kind is bool:
        digest.update(f"\0{value!r}".encode())
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        digest.update(f"\0s{len(data)}:".encode())
        digest.update(data)
    elif kind is int or kind is float or kind is Decimal or kind is Fraction:
        digest.update(f"\0{kind.__name__}{value!r}".encode())
    elif kind is bytes:
        digest.update(f"\0b{len(value)}:".encode())
        digest.update(value)
    elif isinstance(value, enum.Enum):
        digest.update(f"\0e{kind.__module__}.{kind.__qualname__}.{value.name}".encode())
    elif isinstance(value, _WHERE):
        digest.update(b"\0where")
    else:
        _feed_container(digest, value, open_ids)


def _feed_container(digest: Any, value: Any, open_ids: set[int]) -> None:
    kind = type(value)
    if id(value) in open_ids:
        raise _Unhashable(f"{kind.__name__} refers back to itself")
    open_ids.add(id(value))
    try:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            digest.update(f"\0d{kind.__module__}.{kind.__qualname__}(".encode())
            for item in dataclasses.fields(value):
                digest.update(f"\0f{item.name}=".encode())
                _feed(digest, getattr(value, item.name), open_ids)
        elif isinstance(value, Mapping):
            digest.update(f"\0m{kind.__name__}{len(value)}(".encode())
            for key, item in value.items():  # in order: the order may be what is built
                _feed(digest, key, open_ids)
                _feed(digest, item, open_ids)
        elif kind is list or kind is tuple:
            digest.update(f"\0{kind.__name__}{len(value)}(".encode())
            for item in value:
                _feed(digest, item, open_ids)
        elif isinstance(value, Set) and kind in (set, frozenset):
            parts = []
            for item in value:  # iteration order is the hash seed's: digest each, then sort
                part = hashlib.sha256()
                _feed(part, item, open_ids)
                parts.append(part.digest())
            digest.update(f"\0{kind.__name__}{len(value)}(".encode())
            for part_digest in sorted(parts):
                digest.update(part_digest)
        else:
            raise _Unhashable(kind.__qualname__)
        digest.update(b")")
    finally:
        open_ids.discard(id(value))
