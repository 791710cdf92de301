"""The two checks of the input schemas that JSON Schema cannot say: integers written as integers,
and quantities Kubernetes and Kueue can count (docs/api-limits.md).

JSON Schema's `integer` takes any number with a zero fraction, so `gpusPerNode: 8.0` or
`nodes: 1e30` passed the schema as integers and reached the model as floats, where they broke
arithmetic meant for counts. Here `integer` means an integer as YAML reads it (no point, no
exponent). A quantity field carries the keyword `x-gpuplane-quantity` with what it counts
(`renderer.model.quantity.range_problem`): its value must be one the API server takes, the
scheduler and Kueue count without overflow, and gpuplane's own arithmetic can hold.

Both schema validators, jsonschema (the findings' words) and jsonschema-rs (the fast verdict,
`renderer.inputs.schema.compile_fast`), are given the same two checks, so they still agree on
every document.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema.validators
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from renderer.findings.diagnostics import Diagnostic
from renderer.findings.rules import document_rule
from renderer.inputs.source import Document
from renderer.model.quantity import RangeProblem, Unit, range_problem

QUANTITY = "x-gpuplane-quantity"
"""The schema keyword of a quantity field: `{"unit": "cpu" | "bytes"}`, with `"times": N` where
gpuplane multiplies the value up to N times into one request, and `"because"`, why."""

STRICT_INTEGER = "x-gpuplane-integer"
"""The keyword `compile_fast` adds beside `"type": "integer"` for jsonschema-rs, whose
`integer` also takes 8.0, as jsonschema's did."""

document_rule(
    "quantity-out-of-range",
    "schema",
    """A quantity that Kubernetes or Kueue cannot count as written: negative, finer than
they count, or more than a 64-bit integer holds.

The API server refuses a negative quota or request. It keeps any other quantity, but the
scheduler counts CPU in millicores and memory and storage in bytes as 64-bit integers, and so
does Kueue: `0.0000000001m` of CPU is read as 1m, `1m` of memory (a thousandth of a byte, not a
mebibyte) as one byte, and `10E` cores or `8Ei` bytes as the largest 64-bit integer. Such a
value caps or requests something else than it says, and gpuplane refuses it where it is written
rather than render objects that mean another amount.

To satisfy it: write the field as a whole number of millicores for `cpu` (`500m`, `2`, `1.5`)
and of bytes for `memory` and `storage` (`512Mi`, `4Gi`, `2Ti`; `Mi` is mebibytes, `m` is
milli), and no more than the figure the message gives (for `spec.defaults`, which every GPU of a
templated pod requests again, that figure is divided by 16).""",
)


def quantity_problem(keyword: Any, instance: Any) -> RangeProblem | None:
    """Why `instance` is out of the range the field's `x-gpuplane-quantity` keyword names, or
    None; a value of the wrong type is left to `type` and `pattern`."""
    if isinstance(instance, bool) or not isinstance(instance, str | int):
        return None
    if not isinstance(keyword, Mapping):
        return None
    unit: Unit = "cpu" if keyword.get("unit") == "cpu" else "bytes"
    times = keyword.get("times", 1)
    return range_problem(instance, unit, times if isinstance(times, int) and times > 0 else 1)


def _quantity(
    validator: Any, keyword: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    problem = quantity_problem(keyword, instance)
    if problem is not None:
        yield ValidationError(problem.message)


def _integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


StrictValidator: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={QUANTITY: _quantity},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _integer),
)
"""Draft 2020-12 with integers that are integers, and the quantity keyword."""


class RustQuantity:
    """`x-gpuplane-quantity` for jsonschema-rs."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.keyword = value

    def validate(self, instance: Any) -> None:
        problem = quantity_problem(self.keyword, instance)
        if problem is not None:
            raise ValueError(problem.message)


class RustStrictInteger:
    """`integer` as jsonschema's `StrictValidator` reads it, for jsonschema-rs: a float never
    passes (its own type check already refuses what is no number at all)."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        pass

    def validate(self, instance: Any) -> None:
        if isinstance(instance, float):
            raise ValueError("is not an integer")


def strict_integer(node: Mapping[str, Any]) -> bool:
    """Whether a schema node's `type` takes integers but not other numbers."""
    kinds = node.get("type")
    listed = kinds if isinstance(kinds, list) else [kinds]
    return "integer" in listed and "number" not in listed


def integer_hint(written: str, instance: float) -> str:
    """How to write a float that stands where an integer belongs."""
    if instance.is_integer() and abs(instance) < 10**15 and "e" not in written.lower():
        return f"write {int(instance)}, without the decimal point: YAML reads {written} as a decimal number"
    return f"write a whole number without a decimal point or exponent: YAML reads {written} as a decimal number"


_HINTS = {
    "format": "write a Kubernetes quantity, for example 500m, 2, 512Mi or 4Gi",
    "negative": "write a positive amount",
    "finer": "round it to whole millicores, for example 1m, 250m or 2",
    "fraction": "write whole bytes, for example 512Mi or 4Gi: Mi is mebibytes, m is thousandths",
}


def explain_quantity(doc: Document, error: ValidationError, where: str) -> Diagnostic:
    """The finding for a quantity out of range, on its line."""
    path = tuple(error.absolute_path)
    written = doc.plain_text.get(path, str(error.instance))
    problem = quantity_problem(error.validator_value, error.instance)
    hint = _HINTS.get(problem.kind, "") if problem else ""
    message = error.message
    keyword = error.validator_value
    if problem is not None and problem.kind == "over":
        hint = f"write a smaller amount: at most {problem.most}"
        because = keyword.get("because") if isinstance(keyword, Mapping) else None
        if because:
            message = message.replace(" times over:", f" times over ({because}):", 1)
    return Diagnostic(
        "quantity-out-of-range", f"{where} '{written}' {message}", doc.locate(path), hint=hint
    )
