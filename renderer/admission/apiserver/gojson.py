"""How the API server decodes a built-in object's JSON into its Go type, and what it says when it
cannot: a walk of the object over the OpenAPI definitions of the cluster's release that does what
sigs.k8s.io/json (Go's encoding/json, forked; `internal/golang/encoding/json/decode.go`,
`kubernetes_patch.go`, the version apimachinery v0.30 to v0.36 vendor) does, in its order.

What kubectl sends: the YAML document turned into JSON (sigs.k8s.io/yaml `YAMLToJSON`) and, for
`kubectl create` and `apply`, encoded again from a map, so every object's keys arrive sorted, a
float whole number as an integer (`3.0` as `3`) and other floats as Go writes them.

What the decoder does with it, in document order:
- A value of the wrong JSON type for its Go field (a list for a struct, a string for an int32, a
  fraction or an overflow for an integer) is an `UnmarshalTypeError`: the first one is kept,
  the value skipped, decoding goes on; it is reported as `json: cannot unmarshal <array|object|
  string|number|number 1.5|bool> into Go struct field <Struct>.<json path without indices> of
  type <Go type>` (Go's `UnmarshalTypeError.Error`, the field path from `addErrorContext`, the
  struct being the innermost one whose field was being decoded).
- A type with its own `UnmarshalJSON` fails at once, and that error wins over one kept before:
  `resource.Quantity` (`ParseQuantity`'s `ErrFormatWrong`, `ErrSuffix`), `intstr.IntOrString`
  (a non-string decoded as an int32: the same type error, with the field's context), `v1.Time`
  and `v1.MicroTime` (a non-string decoded as a string). The text of a time is not parsed here.
- With strict field validation (kubectl's default `--validate=strict` since 1.27), every key no
  field matches, exactly and case-sensitively, is an `unknown field "<path>"` (the path with
  map keys and `[index]`), up to 100, each once; they matter only when nothing else failed.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from renderer.admission.apiserver.builtin_api import definition_name
from renderer.admission.apiserver.gonames import FIELD_TYPES, UNDERLYING
from renderer.admission.apiserver.metadata import go_quote
from renderer.model import quantity

ShapeKind = Literal[
    "struct", "map", "slice", "string", "int32", "int64", "float64", "bool", "bytes", "quantity",
    "intorstring", "time", "any",
]  # fmt: skip

MAX_STRICT_ERRORS = 100
"""sigs.k8s.io/json `saveStrictError`: the most strict errors kept."""

QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
"""apimachinery `pkg/api/resource/quantity.go` `ErrFormatWrong`."""
QUANTITY_SUFFIX = "unable to parse quantity's suffix"
"""`ErrSuffix`."""

_SPECIAL: Mapping[str, tuple[ShapeKind, str]] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": ("quantity", "resource.Quantity"),
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ("intorstring", "intstr.IntOrString"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": ("time", "v1.Time"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": ("time", "v1.MicroTime"),
    "io.k8s.apimachinery.pkg.runtime.RawExtension": ("any", "runtime.RawExtension"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": ("any", "v1.FieldsV1"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": ("any", "v1.Patch"),
}
"""Definitions whose Go type has its own UnmarshalJSON (apimachinery v0.36.0: `Quantity`,
`IntOrString`, `Time`, `MicroTime`, `RawExtension`, `FieldsV1`; k8s.io/api has none)."""
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass(frozen=True)
class Shape:
    """What a JSON value decodes into: its kind, and Go's name for the type."""

    kind: ShapeKind
    go: str
    definition: str | None = None
    """The OpenAPI definition of a struct."""
    node: Mapping[str, Any] | None = None
    """The schema node of a slice or map, whose items or values give the element."""


@dataclass(frozen=True)
class DecodeError:
    """The error that stops decoding: Go's text, and where it is, for the fix."""

    message: str
    path: str
    """Where, as the strict errors write it (`spec.containers[0].ports`); "" for the object."""
    expected: str
    """The Go type the value could not become."""
    found: str
    """`object`, `array`, `string`, `number` or `bool`."""
    shape: ShapeKind = "any"
    """What the field is (`struct`, `slice`, `int32`, `quantity` ...), for the fix."""
    steps: tuple[str | int, ...] = ()
    """The path as keys and indices."""


@dataclass
class Decoded:
    """What decoding an object found."""

    error: DecodeError | None = None
    unknown: list[str] = field(default_factory=list)
    """Strict errors: the paths of unknown fields, in the order the decoder met them."""
    unknown_steps: list[tuple[str | int, ...]] = field(default_factory=list)
    """The same paths as keys and indices."""

    @property
    def strict_message(self) -> str:
        """apimachinery `runtime.strictDecodingError.Error` over sigs.k8s.io/json's errors."""
        return "strict decoding error: " + ", ".join(
            f"unknown field {go_quote(path)}" for path in self.unknown
        )


@dataclass(frozen=True)
class _Context:
    fields: tuple[str, ...] = ()
    """`errorContext.FieldStack`: JSON names of the struct fields on the way, no indices."""
    struct: str | None = None
    """`errorContext.Struct`: the struct whose field is being decoded."""
    path: str = ""
    """`strictFieldStack`: the path with map keys and indices."""
    steps: tuple[str | int, ...] = ()

    def field(self, struct: str, name: str) -> _Context:
        return _Context((*self.fields, name), struct, _join(self.path, name), (*self.steps, name))

    def key(self, name: str) -> _Context:
        return _Context(self.fields, self.struct, _join(self.path, name), (*self.steps, name))

    def index(self, i: int) -> _Context:
        return _Context(self.fields, self.struct, f"{self.path}[{i}]", (*self.steps, i))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Stop(Exception):
    """A decoding error that ends the walk (a type with its own UnmarshalJSON failed)."""


def go_float_text(value: float) -> str:
    """A float64 as Go's encoding/json writes it (`floatEncoder`): the shortest digits, fixed
    notation, `e` notation under 1e-6 and from 1e21 (`e-07` cleaned to `e-7`)."""
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    absolute = abs(value)
    if absolute != 0 and (absolute < 1e-6 or absolute >= 1e21):
        text = repr(value)
        return re.sub(r"e-0(\d)$", r"e-\1", text)
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def json_kind(value: Any) -> str:
    """The JSON type of a YAML value as kubectl sends it (`object`, `array` ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return "string"  # strings, and YAML timestamps kubectl writes as strings


def number_text(value: Any) -> str:
    if isinstance(value, float):
        return go_float_text(value)
    return str(value)


def key_text(key: Any) -> str:
    """A YAML mapping key as the JSON key kubectl writes."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, float):
        return go_float_text(key)
    return str(key)


def element_go(go: str) -> str:
    """The Go type of an element of a slice or map of Go type `go`."""
    go = UNDERLYING.get(go, go)
    if go.startswith("[]"):
        return go[2:].lstrip("*")
    if go.startswith("map["):
        depth = 0
        for i, char in enumerate(go):
            depth += char == "["
            depth -= char == "]"
            if depth == 0 and char == "]":
                return go[i + 1 :].lstrip("*")
    return "?"


def definition_go(name: str) -> str:
    """`io.k8s.api.core.v1.NodeSelector` -> `v1.NodeSelector`: the package's name and the type."""
    package, _, type_name = name.rpartition(".")
    return f"{package.rpartition('.')[2]}.{type_name}"


class Walker:
    """One decode of one object over the definitions of one release."""

    def __init__(self, definitions: Mapping[str, Mapping[str, Any]], *, strict: bool = True):
        self.definitions = definitions
        self.strict = strict
        self.result = Decoded()

    # -- shapes ------------------------------------------------------------------------------

    def shape(self, node: Mapping[str, Any], go: str | None = None) -> Shape:
        """The shape of a schema node; `go`: the Go type the field table names, if any."""
        ref = node.get("$ref")
        if ref is None and isinstance(node.get("allOf"), list) and node["allOf"]:
            first = node["allOf"][0]
            ref = first.get("$ref") if isinstance(first, Mapping) else None
        if isinstance(ref, str):
            return self.definition_shape(definition_name(ref), go)
        types = node.get("type")
        listed = [t for t in (types if isinstance(types, list) else [types]) if t != "null"]
        kind = listed[0] if listed else None
        if kind == "array":
            return Shape(
                "slice", go or "[]" + self.shape(_mapping(node.get("items"))).go, node=node
            )
        if kind == "object":
            values = node.get("additionalProperties")
            if isinstance(values, Mapping):
                return Shape("map", go or "map[string]" + self.shape(values).go, node=node)
            return Shape("any", go or "map[string]interface {}")
        return _primitive(kind, node, go)

    def definition_shape(self, name: str, go: str | None = None) -> Shape:
        special = _SPECIAL.get(name)
        if special is not None:
            return Shape(special[0], special[1])
        schema = self.definitions.get(name)
        if schema is None or name.startswith("io.k8s.apiextensions-apiserver."):
            return Shape("any", go or definition_go(name))  # CRD schemas: JSON of their own
        if "properties" in schema or _only_object(schema):
            return Shape("struct", go or definition_go(name), definition=name)
        return self.shape(schema, go or definition_go(name))

    def element(self, shape: Shape) -> Shape:
        node = shape.node or {}
        key = "items" if shape.kind == "slice" else "additionalProperties"
        go = element_go(shape.go)
        return self.shape(_mapping(node.get(key)), None if go == "?" else go)

    # -- decoding ----------------------------------------------------------------------------

    def decode(self, value: Any, shape: Shape) -> Decoded:
        """Decode `value` into `shape`; the first error, or every unknown field."""
        with contextlib.suppress(_Stop):
            self.value(value, shape, _Context())
        return self.result

    def value(self, value: Any, shape: Shape, ctx: _Context) -> None:
        if value is None or shape.kind == "any":
            return
        handler = _HANDLERS[shape.kind]
        handler(self, value, shape, ctx)

    def struct(self, value: Any, shape: Shape, ctx: _Context) -> None:
        if not isinstance(value, Mapping):
            return self.mismatch(value, shape, ctx)
        schema = self.definitions.get(shape.definition or "", {})
        properties = schema.get("properties") or {}
        named = FIELD_TYPES.get(shape.definition or "", {})
        struct_name = shape.go.rpartition(".")[2]
        for key in sorted(value, key=key_text):
            name = key_text(key)
            node = properties.get(name)
            if not isinstance(node, Mapping):
                self.unknown(_join(ctx.path, name), (*ctx.steps, name))
                continue
            self.value(value[key], self.shape(node, named.get(name)), ctx.field(struct_name, name))
        return None

    def mapping(self, value: Any, shape: Shape, ctx: _Context) -> None:
        if not isinstance(value, Mapping):
            return self.mismatch(value, shape, ctx)
        element = self.element(shape)
        for key in sorted(value, key=key_text):
            self.value(value[key], element, ctx.key(key_text(key)))
        return None

    def slice(self, value: Any, shape: Shape, ctx: _Context) -> None:
        if not isinstance(value, list | tuple):
            return self.mismatch(value, shape, ctx)
        element = self.element(shape)
        for i, item in enumerate(value):
            self.value(item, element, ctx.index(i))
        return None

    def scalar(self, value: Any, shape: Shape, ctx: _Context) -> None:
        kind = json_kind(value)
        if shape.kind in ("string", "bytes") and kind == "string":
            return None  # a []byte's base64 is not checked here
        if shape.kind == "bool" and kind == "bool":
            return None
        if shape.kind == "float64" and kind == "number":
            return None
        if shape.kind in _INT_RANGE and kind == "number":
            if _fits(number_text(value), shape.kind):
                return None
            return self.mismatch(value, shape, ctx, with_number=True)
        return self.mismatch(value, shape, ctx)

    def quantity(self, value: Any, shape: Shape, ctx: _Context) -> None:
        kind = json_kind(value)
        text = str(value).strip() if kind == "string" else number_text(value)
        if kind == "bool":
            text = "true" if value else "false"
        problem = (
            quantity_problem(text) if kind in ("string", "number", "bool") else QUANTITY_FORMAT
        )
        if problem is not None:
            self.stop(DecodeError(problem, ctx.path, shape.go, kind, shape.kind, ctx.steps))

    def int_or_string(self, value: Any, shape: Shape, ctx: _Context) -> None:
        kind = json_kind(value)
        if kind == "string":
            return
        if kind == "number" and _fits(number_text(value), "int32"):
            return
        found = f"number {number_text(value)}" if kind == "number" else kind
        text = _type_text(found, "int32", ctx)
        self.stop(DecodeError(text, ctx.path, "int32", kind, shape.kind, ctx.steps))

    def time(self, value: Any, shape: Shape, ctx: _Context) -> None:
        kind = json_kind(value)
        if kind != "string":
            text = _type_text(kind, "string", ctx)
            self.stop(DecodeError(text, ctx.path, "string", kind, shape.kind, ctx.steps))

    # -- errors ------------------------------------------------------------------------------

    def mismatch(
        self, value: Any, shape: Shape, ctx: _Context, *, with_number: bool = False
    ) -> None:
        """Keep the first type error (decoding goes on past it)."""
        if self.result.error is not None:
            return
        kind = json_kind(value)
        found = f"number {number_text(value)}" if with_number else kind
        text = _type_text(found, shape.go, ctx)
        self.result.error = DecodeError(text, ctx.path, shape.go, kind, shape.kind, ctx.steps)

    def stop(self, error: DecodeError) -> None:
        self.result.error = error
        raise _Stop

    def unknown(self, path: str, steps: tuple[str | int, ...]) -> None:
        if not self.strict or len(self.result.unknown) >= MAX_STRICT_ERRORS:
            return
        if path not in self.result.unknown:
            self.result.unknown.append(path)
            self.result.unknown_steps.append(steps)


_HANDLERS = {
    "struct": Walker.struct,
    "map": Walker.mapping,
    "slice": Walker.slice,
    "string": Walker.scalar,
    "bytes": Walker.scalar,
    "int32": Walker.scalar,
    "int64": Walker.scalar,
    "float64": Walker.scalar,
    "bool": Walker.scalar,
    "quantity": Walker.quantity,
    "intorstring": Walker.int_or_string,
    "time": Walker.time,
}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _only_object(schema: Mapping[str, Any]) -> bool:
    """A definition of type object with no properties and no map values: an empty Go struct
    (`BasicSchedulingPolicy`), every key of which is unknown."""
    types = schema.get("type")
    listed = types if isinstance(types, list) else [types]
    return "object" in listed and not isinstance(schema.get("additionalProperties"), Mapping)


def _primitive(kind: Any, node: Mapping[str, Any], go: str | None) -> Shape:
    if kind == "string":
        if node.get("format") == "byte":
            return Shape("bytes", go or "[]uint8")
        return Shape("string", go or "string")
    if kind == "integer":
        if node.get("format") == "int32":
            return Shape("int32", go or "int32")
        return Shape("int64", go or "int64")
    if kind == "number":
        return Shape("float64", go or "float64")
    if kind == "boolean":
        return Shape("bool", go or "bool")
    return Shape("any", go or "interface {}")


def _fits(text: str, bits: str) -> bool:
    """strconv.ParseInt(text, 10, 64) without error, and no overflow of the field's type."""
    if not re.fullmatch(r"-?[0-9]+", text):
        return False
    low, high = _INT_RANGE[bits]
    return low <= int(text) <= high


def _type_text(found: str, go: str, ctx: _Context) -> str:
    """Go's `UnmarshalTypeError.Error`, the context added by `addErrorContext`."""
    if ctx.struct is not None or ctx.fields:
        where = f"{ctx.struct or ''}.{'.'.join(ctx.fields)}"
        return f"json: cannot unmarshal {found} into Go struct field {where} of type {go}"
    return f"json: cannot unmarshal {found} into Go value of type {go}"


def quantity_problem(text: str) -> str | None:
    """`ParseQuantity`'s error for `text` (after `UnmarshalJSON` trimmed it), else None: an
    empty text or one `parseQuantityString` cannot split is `ErrFormatWrong` (`1GB`, `abc`), a
    suffix `suffixHandler.interpret` does not know is `ErrSuffix` (`1Gii`). `renderer.model.
    quantity` ports both steps; `ErrNumeric` (digits beyond what an int64 scale holds) is not
    modelled."""
    if not text:
        return QUANTITY_FORMAT
    if text == "0":
        return None
    try:
        _, _, _, suffix = quantity._split(text)
    except ValueError:
        return QUANTITY_FORMAT
    return None if quantity._interpret(suffix) is not None else QUANTITY_SUFFIX


__all__ = [
    "QUANTITY_FORMAT",
    "DecodeError",
    "Decoded",
    "Shape",
    "Walker",
    "definition_go",
    "go_float_text",
    "json_kind",
    "key_text",
    "quantity_problem",
]
