"""A MutatingAdmissionPolicy's `ApplyConfiguration` mutation, for the forms gpuplane renders.

The API server (k8s.io/apiserver `pkg/admission/plugin/policy/mutating/patch/smd.go`
`applyConfigPatcher.Patch`) evaluates the expression to a typed `Object{...}` value
(`pkg/cel/mutation/dynamic`: `Object.metadata{labels: {...}}`, each type named by its field
path, which `CheckTypeNamesMatchFieldPathNames` checks), refuses one that sets an atomic list,
map or struct (`validatePatch`), and merges it into the object with server-side apply's merge
(structured-merge-diff `TypedValue.Merge`: maps and structs merged key by key, scalars
replaced).

gpuplane's CEL engine has no typed object construction, so `translate` rewrites each
`Object.<path>{field: value, ...}` as the map literal `{"field": value, ...}` and checks that
each nested type names its field path; the values stay CEL, evaluated as written. `merge`
applies the result where fit knows the merge without the kind's schema: the entries of
`metadata.labels` and `metadata.annotations` (string maps, granular in every kind's schema),
set one by one. Any other form (a list, a field elsewhere, a null, a type that does not follow
its field path) raises `Unsupported`: fit says it did not apply the mutation rather than guess.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class Unsupported(Exception):
    """A mutation fit does not apply, and why."""


_Q3 = "'''"
_D3 = '"""'
_TOKEN = re.compile(
    "|".join(
        (
            r"(?P<space>\s+|//[^\n]*)",
            rf"(?P<string>(?:[rR][bB]?|[bB][rR])(?:{_Q3}.*?{_Q3}|{_D3}.*?{_D3}|'[^'\n]*'|\"[^\"\n]*\")"
            rf"|[bB]?(?:{_Q3}(?:\\.|.)*?{_Q3}|{_D3}(?:\\.|.)*?{_D3}"
            r"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))",
            r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*)",
            r"(?P<number>[0-9][0-9A-Za-z_.]*)",
            r"(?P<op>==|!=|<=|>=|&&|\|\||.)",
        )
    ),
    re.DOTALL,
)
"""CEL's tokens (cel-spec `CEL.g4`), as far as the translation needs them."""


@dataclass
class _Frame:
    kind: str
    """`struct` (an Object construction), `map`, `paren` or `bracket`."""
    path: tuple[str, ...] = ()
    expect_field: bool = False
    current: str = ""


@dataclass
class _Translation:
    out: list[str] = field(default_factory=list)
    stack: list[_Frame] = field(default_factory=list)


def _tokens(expression: str) -> list[tuple[str, str]]:
    found = []
    for match in _TOKEN.finditer(expression):
        kind = match.lastgroup or "op"
        found.append((kind, match.group()))
    return found


def _significant(tokens: list[tuple[str, str]], start: int) -> int:
    while start < len(tokens) and tokens[start][0] == "space":
        start += 1
    return start


def _type_path(tokens: list[tuple[str, str]], start: int) -> tuple[tuple[str, ...], int]:
    """After `Object` at `start`: the `.name` parts that follow, and the index after them."""
    path: list[str] = []
    index = _significant(tokens, start + 1)
    while index < len(tokens) and tokens[index][1] == ".":
        name = _significant(tokens, index + 1)
        if name >= len(tokens) or tokens[name][0] != "ident":
            raise Unsupported("an Object type name ends in a dot")
        path.append(tokens[name][1])
        index = _significant(tokens, name + 1)
    return tuple(path), index


def _expected(stack: list[_Frame]) -> tuple[str, ...]:
    """The type path an Object construction must have where it stands: the root `Object`, or
    the enclosing construction's path and the field it is the value of."""
    for frame in reversed(stack):
        if frame.kind == "struct":
            return (*frame.path, frame.current)
        if frame.kind == "map":
            raise Unsupported("an Object inside a map literal")
    return ()


def _previous_is_dot(state: _Translation) -> bool:
    for text in reversed(state.out):
        if text.strip():
            return text == "."
    return False


def translate(expression: str) -> str:
    """The expression with every typed Object construction written as a map literal."""
    tokens = _tokens(expression)
    state = _Translation()
    index = 0
    while index < len(tokens):
        kind, text = tokens[index]
        top = state.stack[-1] if state.stack else None
        if kind == "space":
            state.out.append(text)
        elif top is not None and top.kind == "struct" and top.expect_field and text != "}":
            if kind != "ident":
                raise Unsupported(f"an Object field written as {text!r}")
            colon = _significant(tokens, index + 1)
            if colon >= len(tokens) or tokens[colon][1] != ":":
                raise Unsupported(f"an Object field {text} without a value")
            state.out.append(f'"{text}":')
            top.current, top.expect_field = text, False
            index = colon
        elif kind == "ident" and text == "Object" and not _previous_is_dot(state):
            path, after = _type_path(tokens, index)
            if after >= len(tokens) or tokens[after][1] != "{":
                raise Unsupported("the type Object used other than to construct one")
            expected = _expected(state.stack)
            if path != expected:
                shown = ".".join(("Object", *path))
                raise Unsupported(
                    f"{shown} stands where Object{''.join('.' + p for p in expected)} belongs "
                    "(the API server refuses it: type mismatch)"
                )
            state.out.append("{")
            state.stack.append(_Frame("struct", path, expect_field=True))
            index = after
        elif kind == "ident" and text == "JSONPatch":
            raise Unsupported("a JSONPatch value inside an ApplyConfiguration")
        else:
            _punctuation(state, text)
        index += 1
    if state.stack:
        raise Unsupported("unbalanced brackets")
    return "".join(state.out)


_OPEN = {"{": "map", "(": "paren", "[": "bracket"}
_CLOSE = {"}": ("map", "struct"), ")": ("paren",), "]": ("bracket",)}


def _punctuation(state: _Translation, text: str) -> None:
    if text in _OPEN:
        state.stack.append(_Frame(_OPEN[text]))
    elif text in _CLOSE:
        if not state.stack or state.stack[-1].kind not in _CLOSE[text]:
            raise Unsupported("unbalanced brackets")
        state.stack.pop()
    elif text == "," and state.stack and state.stack[-1].kind == "struct":
        state.stack[-1].expect_field = True
    state.out.append(text)


_MAPS = ("labels", "annotations")
"""The `metadata` maps `merge` applies: `map[string]string` in ObjectMeta, granular."""


def merge(live: Mapping[str, Any], patch: Any) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """`live` with `patch` (the translated expression's value) merged in, and what it set:
    (`labels` or `annotations`, key, value) for each entry added or changed."""
    if not isinstance(patch, Mapping):
        raise Unsupported("the expression does not give an Object")
    result = copy.deepcopy(dict(live))
    changes: list[tuple[str, str, str]] = []
    for key, value in patch.items():
        if key != "metadata":
            raise Unsupported(f"it sets {key}, whose merge needs the kind's schema")
        if not isinstance(value, Mapping):
            raise Unsupported("it sets metadata to something other than an object")
        for part, entries in value.items():
            if part not in _MAPS:
                raise Unsupported(f"it sets metadata.{part}, whose merge needs the kind's schema")
            changes.extend(_merge_map(result, str(part), entries))
    return result, changes


def _merge_map(result: dict[str, Any], part: str, entries: Any) -> list[tuple[str, str, str]]:
    if not isinstance(entries, Mapping):
        raise Unsupported(f"it sets metadata.{part} to something other than a map")
    for key, value in entries.items():
        if not isinstance(value, str):
            raise Unsupported(f"it sets metadata.{part}[{key}] to a {type(value).__name__}")
    meta = result.get("metadata")
    if meta is None:
        meta = result["metadata"] = {}
    if not isinstance(meta, dict):
        raise Unsupported("the object's metadata is not an object")
    current = meta.get(part)
    if current is None:
        current = {}
    if not isinstance(current, dict):
        raise Unsupported(f"the object's metadata.{part} is not a map")
    changed = [(part, str(k), v) for k, v in entries.items() if current.get(k) != v]
    if entries:
        meta[part] = {**current, **{str(k): v for k, v in entries.items()}}
    return changed
