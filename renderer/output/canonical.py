"""Canonical YAML: the one dumper every rendered file goes through, with fixed settings.

Block style, keys in the order the layer built them (apiVersion, kind, metadata, then the body,
as kubectl prints), no line folding, UTF-8, and multi-line strings as literal blocks (`|`) so an
embedded config file reads as itself. libyaml's emitter is used when PyYAML has it; the pure
Python one gives the same bytes (tests/test_model.py checks every rendered file with both).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from renderer.output.emitter import Emitter, Unsupported

_OTHER_READERS = re.compile(
    r"""^(?:
        [-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?  # 1e3, 1_0: floats, ints
        |[-+]?0(?:[oO][0-7_]+|[bB][01_]+|[xX][0-9a-fA-F_]+)  # 0o17, 0b1 (YAML 1.2, Go)
        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
        |[yYnN]|<<|=  # Go yaml.v2 booleans, merge and value keys
    )$""",
    re.VERBOSE,
)
"""Plain scalars that PyYAML (YAML 1.1) would write unquoted but that another reader of the
rendered files takes for a number, a boolean or a key of its own: YAML 1.2 parsers read `1e3`
as a float, and Go's yaml.v2 (kubectl, Helm, Argo CD) reads `y` and `n` as booleans."""

_BREAKS = frozenset("\x85\u2028\u2029\ufeff")
"""Characters a YAML reader takes for a line break (or a byte order mark) inside a plain,
quoted or block scalar: only a double-quoted escape (`\\N`, `\\L`, `\\P`) keeps them."""


_LAST_BMP = "\uffff"


def _needs_escapes(value: str) -> bool:
    """Whether the string holds a line break other than `\n`, a byte order mark or any other
    character that is not printable but a tab, or a character beyond the Basic Multilingual Plane
    (an emoji): libyaml escapes those and PyYAML's own emitter does not, so only a double-quoted
    scalar, where both escape them, gives the same bytes on every machine. Every one of `_BREAKS`
    is one that `str.isprintable` refuses, so C-level checks of the whole string decide (a loop
    over the characters was a quarter of a large render)."""
    if not value.isascii() and max(value) > _LAST_BMP:
        return True
    if value.isprintable():
        return False
    return not value.replace("\n", "").replace("\t", "").isprintable()


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """A string that parses back as the same string in every YAML reader: text from an input
    file (`\\n`, `: `, `#`, `&anchor`, `!!python/object`, `{{ }}`) is a value, never structure."""
    tag = "tag:yaml.org,2002:str"
    if _needs_escapes(value):
        return dumper.represent_scalar(tag, value, style='"')
    if "\n" in value:
        return dumper.represent_scalar(tag, value, style="|")
    if _OTHER_READERS.match(value):
        return dumper.represent_scalar(tag, value, style="'")
    return dumper.represent_scalar(tag, value)


_AS_IS = re.compile(r"[A-Za-z][\x20-\x7e]*")
_READ_AS_OTHER = frozenset(("yes", "no", "true", "false", "on", "off", "null", "y", "n"))


def written_as_is(value: str) -> bool:
    """Whether `_represent_str` and PyYAML write the string as itself, a plain scalar, decided
    without them: printable ASCII (no tab, no line break), a letter first (no YAML indicator,
    no number, no `.inf`, no `---`), no `: ` or ` #` (which start a value or a comment) and no
    space or `:` last, and not a word some reader takes for a boolean or null, in any case.
    Inside a plain scalar of a block mapping, `{}[],?'"!&*|>%@` are text. A string this refuses
    may still be plain; PyYAML decides those (tests/test_emitter.py checks this against both of
    its emitters, on every string of a small alphabet and on random ones)."""
    return (
        _AS_IS.fullmatch(value) is not None
        and value[-1] not in " :"
        and ": " not in value
        and " #" not in value
        and value.lower() not in _READ_AS_OTHER
    )


class PythonDumper(yaml.SafeDumper):
    """The pure-Python emitter with gpuplane's string style."""


PythonDumper.add_representer(str, _represent_str)

_LIBYAML: type[yaml.SafeDumper] | None = getattr(yaml, "CSafeDumper", None)
CDumper: type[yaml.SafeDumper] = (
    type("CDumper", (_LIBYAML,), {"__doc__": "libyaml's emitter with gpuplane's string style."})
    if _LIBYAML is not None
    else PythonDumper  # PyYAML built without libyaml: same output, slower
)
CDumper.add_representer(str, _represent_str)
DEFAULT_DUMPER = CDumper


def dump(body: Mapping[str, Any], dumper: type[yaml.SafeDumper] | None = None) -> str:
    """The canonical document of one body. Without `dumper`, gpuplane's own emitter writes
    PyYAML's bytes (`renderer.output.emitter`), handing PyYAML what it cannot lay out itself;
    with one, that PyYAML dumper writes it."""
    if dumper is None:
        try:
            return _EMITTER.dump(body)
        except Unsupported:
            dumper = DEFAULT_DUMPER
    return _pyyaml(body, dumper)


def emitted(body: Mapping[str, Any]) -> str | None:
    """`dump(body)` when gpuplane's emitter lays the body out itself (a mapping of plain JSON
    data, each value of exactly its type, no list or mapping reached twice); None where PyYAML
    would have to. PyYAML's safe loader reads such a document back as the body, each value of
    its type (tests/test_emitter.py)."""
    try:
        return _EMITTER.dump(body)
    except Unsupported:
        return None


def _pyyaml(body: Any, dumper: type[yaml.SafeDumper]) -> str:
    text: str = yaml.dump(
        body,
        Dumper=dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    return text


_EMITTER = Emitter(lambda value: _pyyaml(value, DEFAULT_DUMPER), written_as_is)


def sorted_keys(value: Any) -> Any:
    """A JSON-shaped value with every mapping's keys sorted, for stable JSON reports."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value
