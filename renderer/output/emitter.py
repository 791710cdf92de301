"""Canonical YAML written directly: the bytes `canonical.dump` gets from PyYAML, several times
faster.

PyYAML builds a node for every value and asks its resolver about every scalar, which made dumping
a third of a large `render --check` (make bench). Rendered bodies are plain data (mappings with
string keys, lists, strings, numbers, booleans, null), so this module walks them and writes the
block layout PyYAML writes with gpuplane's settings (two-space mappings, sequences not indented
under their key, `{}` and `[]` for empty collections). What a scalar looks like is still
PyYAML's decision: each distinct string (and float) is dumped by PyYAML once and its text
reused. A body this module does not know how to lay out exactly as PyYAML would (a key that is
not a short single-line string, a value of another type, one list or mapping reached twice,
which PyYAML writes as an anchor) is handed to PyYAML whole. tests/test_model.py compares the
two on every rendered file and on hostile text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

SIMPLE_KEY_LENGTH = 128
"""A key of this many UTF-8 bytes or more goes to PyYAML: libyaml writes a key longer than 128
bytes as an explicit `? key` (PyYAML's own emitter counts characters, and the tag)."""
LONGEST_STRING = 100_000
"""Longer strings go to PyYAML with their body: near its line width (a million columns) where
a string breaks would depend on the column it starts at."""
CACHE_ENTRIES = 1_000_000
"""Distinct scalars remembered before the caches start again."""
LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
"""What libyaml's scalar analysis counts as a line break (a multi-line key is explicit too)."""


class Unsupported(Exception):
    """The body holds something only PyYAML lays out right."""


class Emitter:
    """Writes bodies as `dump_scalar` (PyYAML with gpuplane's settings) would write them whole.

    `dump_scalar(value)` must return PyYAML's document for `{"k": value}`; the caches hold one
    entry per distinct scalar, so one emitter serves a whole render. `as_is(text)`, when given,
    says without PyYAML that `dump_scalar` writes a string as itself (a plain scalar): most
    rendered strings are names, and asking PyYAML about each distinct one was a third of the
    time dumping took."""

    def __init__(
        self, dump_scalar: Callable[[Any], str], as_is: Callable[[str], bool] | None = None
    ) -> None:
        self._dump_scalar = dump_scalar
        self._as_is = as_is
        self._inline: dict[Any, str] = {}
        self._blocks: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._keys: dict[str, str] = {}

    # --- scalars ---------------------------------------------------------------------------------

    def _scalar_text(self, value: Any) -> str:
        """What follows `k: ` in PyYAML's document for `{"k": value}`."""
        text = self._dump_scalar({"k": value})
        if not text.startswith("k: "):
            raise Unsupported(repr(value))
        return text[3:]

    def _string(self, value: str) -> str | tuple[str, tuple[str, ...]]:
        """A one-line scalar's text, or a block scalar's header and lines (as PyYAML indents
        them under a top-level key: two spaces, none on an empty line)."""
        found = self._inline.get(value)
        if found is not None:
            return found
        if len(value) > LONGEST_STRING:
            raise Unsupported("a string long enough to reach PyYAML's line width")
        block = self._blocks.get(value)
        if block is not None:
            return block
        if self._as_is is not None and self._as_is(value):
            self._remember()
            self._inline[value] = value
            return value
        text = self._scalar_text(value)
        first, _, rest = text.partition("\n")
        if first[:1] in ("|", ">"):
            if "+" in first:
                # kept final line breaks: PyYAML ends the document with `...` when such a
                # scalar comes last, so where it sits decides the bytes
                raise Unsupported(repr(value))
            lines = rest.split("\n")
            if lines[-1] != "":
                raise Unsupported(repr(value))
            lines.pop()
            if any(line and not line.startswith("  ") for line in lines):
                raise Unsupported(repr(value))
            parsed = (first, tuple(lines))
            self._remember()
            self._blocks[value] = parsed
            return parsed
        if rest:
            raise Unsupported(repr(value))  # a scalar PyYAML spreads over lines some other way
        self._remember()
        self._inline[value] = first
        return first

    def _remember(self) -> None:
        """Keep the caches bounded: a long-running process renders many platforms."""
        if len(self._inline) + len(self._blocks) >= CACHE_ENTRIES:
            self._inline.clear()
            self._blocks.clear()
            self._keys.clear()

    def _key(self, key: Any) -> str:
        found = self._keys.get(key) if type(key) is str else None
        if found is not None:
            return found
        if (
            type(key) is not str
            or not key
            or len(key.encode("utf-8", "surrogatepass")) >= SIMPLE_KEY_LENGTH
            or any(b in key for b in LINE_BREAKS)
        ):
            raise Unsupported(repr(key))
        text = self._string(key)
        if not isinstance(text, str):
            raise Unsupported(repr(key))
        self._keys[key] = text
        return text

    def _atom(self, value: Any, seen: set[int]) -> str | tuple[str, tuple[str, ...]] | None:
        """The text of a scalar or empty collection; None for a collection with entries."""
        if type(value) is str:
            return self._string(value)
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if type(value) is int:
            return str(value)
        if type(value) is float:
            cached = ("float", repr(value))  # not the value: 0.0 == -0.0, and nan != nan
            found = self._inline.get(cached)
            if found is None:
                found = self._scalar_text(value).rstrip("\n")
                if "\n" in found:
                    raise Unsupported(repr(value))
                self._inline[cached] = found
            return found
        if type(value) is dict or type(value) is list:
            if value:
                return None
            self._enter(value, seen)
            return "{}" if type(value) is dict else "[]"
        raise Unsupported(type(value).__name__)

    # --- collections -------------------------------------------------------------------------------

    def dump(self, body: Mapping[str, Any]) -> str:
        """The document, or Unsupported where PyYAML must write it."""
        out: list[str] = []
        seen: set[int] = set()
        atom = self._atom(body, seen)
        if atom is not None:
            raise Unsupported("a body that is not a mapping with entries")
        self._mapping(body, 0, out, seen, first_prefix="")
        return "".join(out)

    def _enter(self, value: Any, seen: set[int]) -> None:
        if id(value) in seen:
            raise Unsupported("a collection reached twice (PyYAML writes an anchor)")
        seen.add(id(value))

    def _block(self, header: str, lines: tuple[str, ...], indent: int, out: list[str]) -> None:
        """A block scalar under an entry at column `indent`: PyYAML indents its lines two
        columns deeper, and writes an empty line as nothing but the line break."""
        out.append(header + "\n")
        pad = " " * indent
        for line in lines:
            out.append(pad + line + "\n" if line else "\n")

    def _scalar(
        self, atom: str | tuple[str, tuple[str, ...]] | None, indent: int, out: list[str]
    ) -> bool:
        """Write an atom after its `key:` or `-` at column `indent`; False for a collection with
        entries, which the caller lays out."""
        if atom is None:
            return False
        if isinstance(atom, str):
            out.append(" " + atom + "\n")
        else:
            out.append(" ")
            self._block(atom[0], atom[1], indent, out)
        return True

    def _mapping(
        self,
        value: Mapping[Any, Any],
        indent: int,
        out: list[str],
        seen: set[int],
        first_prefix: str,
    ) -> None:
        """Entries at column `indent`; the first one after `first_prefix` (`- ` in a list)."""
        self._enter(value, seen)
        pad = " " * indent
        prefix = first_prefix
        keys, inline = self._keys, self._inline
        for key, item in value.items():
            text = keys.get(key) if type(key) is str else None
            if text is None:
                text = self._key(key)
            # the common entries first, each written at once: a string seen before, a number,
            # a boolean, a mapping or a list with entries
            kind = type(item)
            if kind is str:
                atom = inline.get(item)
                if atom is not None:
                    out.append(f"{prefix}{text}: {atom}\n")
                    prefix = pad
                    continue
            elif kind is dict and item:
                out.append(f"{prefix}{text}:\n")
                prefix = pad
                self._mapping(item, indent + 2, out, seen, " " * (indent + 2))
                continue
            elif kind is list and item:
                out.append(f"{prefix}{text}:\n")
                prefix = pad
                self._sequence(item, indent, out, seen, pad)
                continue
            elif kind is int:
                out.append(f"{prefix}{text}: {item}\n")
                prefix = pad
                continue
            elif kind is bool:
                out.append(f"{prefix}{text}: {'true' if item else 'false'}\n")
                prefix = pad
                continue
            out.append(prefix + text + ":")
            prefix = pad
            self._scalar(self._atom(item, seen), indent, out)

    def _sequence(
        self, value: list[Any], indent: int, out: list[str], seen: set[int], first_prefix: str
    ) -> None:
        """Items whose `-` is at column `indent`; the first one after `first_prefix`."""
        self._enter(value, seen)
        pad = " " * indent
        prefix = first_prefix
        inline = self._inline
        for item in value:
            kind = type(item)
            if kind is str:
                atom = inline.get(item)
                if atom is not None:
                    out.append(f"{prefix}- {atom}\n")
                    prefix = pad
                    continue
            elif kind is dict and item:
                out.append(prefix + "-")
                prefix = pad
                self._mapping(item, indent + 2, out, seen, " ")
                continue
            elif kind is list and item:
                out.append(prefix + "-")
                prefix = pad
                self._sequence(item, indent + 2, out, seen, " ")
                continue
            out.append(prefix + "-")
            prefix = pad
            self._scalar(self._atom(item, seen), indent, out)
