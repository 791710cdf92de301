"""CEL for admission policies, as the API server evaluates it, with the CEL engine gpuplane ships
(cel-expr-python, Google's C++ CEL: the engine `renderer/output/cel.py` evaluates CRD rules
with; cel-python is a test dependency only).

What the API server does, and this module after it (k8s.io/apiserver
`pkg/admission/plugin/cel`):
- `activation.go` `newActivation`: the expressions read `object`, `oldObject`, `request`,
  `namespaceObject`, `params` and `variables` (and `authorizer`, which this engine does not
  have: an expression that uses it does not compile here and is reported as not evaluated);
- `composition.go`: `variables` are evaluated in order, each may read the ones before it; a
  variable that fails fails each expression that reads it, with the variable's own error;
- `activation.go` `Evaluate`: an expression that fails is the error
  `expression '<expression>' resulted in error: <error>`.
The C++ runtime words a few errors otherwise than cel-go does; `go_error` rewrites the ones
the policies meet (a missing map key, no matching overload, division by zero). What is not
modelled: the CEL cost budget (`RuntimeCELCostBudget`), and the types the API server gives
values from the kind's OpenAPI schema (a built-in object reaches CEL as its typed Go struct
converted to JSON: a quantity written as `1` is the string "1" there; here it stays as written).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings

NAMES = ("object", "oldObject", "request", "namespaceObject", "params", "variables")
"""The variables an admission policy's expressions read (`plugin/cel/interface.go`)."""

State = Literal["value", "error", "unsupported"]


@dataclass(frozen=True)
class Result:
    """One expression's evaluation: a value, the API server's error, or why fit could not
    evaluate it (the expression does not compile in gpuplane's CEL engine)."""

    state: State
    value: Any = None
    error: str = ""
    """`value`: unused; `error`: the inner error (`no such key: x`); `unsupported`: why."""

    @property
    def true(self) -> bool:
        """Exactly CEL `true` (`EvalResult == celtypes.True`): anything else fails a check."""
        return self.state == "value" and self.value is True


_ENV: Any = None
_PROGRAMS: dict[str, tuple[Any, str]] = {}


def _environment() -> Any:
    global _ENV
    if _ENV is None:
        _ENV = cel.NewEnv(
            variables={name: cel.Type.DYN for name in NAMES},
            extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
        )
    return _ENV


def compiled(expression: str) -> tuple[Any, str]:
    """(program, "") or (None, why it does not compile here), once per expression text."""
    cached = _PROGRAMS.get(expression)
    if cached is not None:
        return cached
    try:
        result: tuple[Any, str] = (_environment().compile(expression), "")
    except (RuntimeError, ValueError) as err:
        lines = [line for line in str(err).splitlines() if line.strip()]
        first = lines[0] if lines else type(err).__name__
        first = re.sub(r"^[A-Z_]+: ERROR: <input>:\d+:\d+: ", "", first)
        result = (None, f"gpuplane's CEL engine (cel-expr-python) cannot compile it: {first}")
    _PROGRAMS[expression] = result
    return result


_NO_KEY = re.compile(r'Key not found in map : "(.*)"')
_STATUS = re.compile(r"^[A-Z_]+: ")


def go_error(text: str) -> str:
    """The C++ runtime's error in cel-go's words where the two differ (cel-go
    `common/types/err.go`: `no such key: <key>`, `no such overload`, `division by zero`)."""
    match = _NO_KEY.search(text)
    if match:
        return f"no such key: {match[1]}"
    first = text.strip().splitlines()[0] if text.strip() else text
    first = _STATUS.sub("", first)
    if first.startswith("No matching overloads found"):
        return "no such overload"
    if first == "divide by zero":
        return "division by zero"
    return first


ITERATION_BUDGET = "Iteration budget exceeded"
"""How the C++ runtime stops an evaluation past its comprehension iteration limit
(`RuntimeOptions.comprehension_max_iterations`, 10,000 in all of one evaluation's
comprehensions). cel-go, as the API server runs it, has no such limit: it stops an expression
past its cost (`PerCallLimit`, 1,000,000, and the policy's `RuntimeCELCostBudget`), which fit
does not model. So an object this large is one fit cannot judge, not one the API server
refuses."""


def evaluate(expression: str, data: Mapping[str, Any]) -> Result:
    """`expression` on `data` (plain JSON values by variable name)."""
    program, why = compiled(expression)
    if program is None:
        return Result("unsupported", error=why)
    try:
        value = program.eval(data=dict(data))
    except (RuntimeError, ValueError, TypeError) as err:
        return _failed(str(err))
    if value.type() == cel.Type.ERROR:
        return _failed(str(value.value()))
    return Result("value", value=value.plain_value())


_OUT_OF_RANGE = re.compile(r"Integer value '(-?\d+)' out of range")
"""How cel-expr-python refuses to convert an integer beyond int64 (its words go on with the
whole mapping that holds it)."""


def _failed(text: str) -> Result:
    if ITERATION_BUDGET in text:
        return Result(
            "unsupported",
            error="gpuplane's CEL engine stops after 10,000 iterations of an expression's "
            "comprehensions, where the API server counts the expression's cost instead: too "
            "many list items or map entries to evaluate here",
        )
    if found := _OUT_OF_RANGE.search(text):
        # the API server's decoder refuses such a number in a typed field, and a custom
        # resource's unstructured JSON holds it as a double: never this engine's error
        digits = found[1] if len(found[1]) <= 40 else found[1][:20] + "..."
        return Result(
            "unsupported",
            error=f"the object holds the integer {digits}, beyond the 64-bit integers "
            "gpuplane's CEL engine takes",
        )
    return Result("error", error=go_error(text))


def error_message(expression: str, error: str) -> str:
    """`activation.go` `Evaluate`: how the API server words an expression that failed."""
    return f"expression '{expression}' resulted in error: {error}"


@dataclass
class Activation:
    """What one policy's expressions read, and the variables evaluated so far."""

    base: dict[str, Any]
    """`object`, `oldObject`, `request`, `namespaceObject`, `params`."""
    variables: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, Result] = field(default_factory=dict)
    """Variables that failed (an error) or that fit could not evaluate, by name."""

    def data(self) -> dict[str, Any]:
        return {**self.base, "variables": dict(self.variables)}

    def run(self, expression: str) -> Result:
        """`expression` as the API server evaluates it: an error that is the lookup of a
        variable that failed is that variable's failure (cel-go evaluates variables lazily and
        hands on their error)."""
        result = evaluate(expression, self.data())
        if result.state != "error":
            return result
        match = re.fullmatch(r"no such key: (.*)", result.error)
        if match and match[1] in self.failed and f"variables.{match[1]}" in expression:
            return self.failed[match[1]]
        return result

    def define(self, variables: Sequence[Any]) -> None:
        """Evaluate a policy's `variables`, in order (`composition.go`)."""
        for variable in variables:
            if not isinstance(variable, Mapping):
                continue
            name = str(variable.get("name", ""))
            result = self.run(str(variable.get("expression", "")))
            if result.state == "value":
                self.variables[name] = result.value
            else:
                self.failed[name] = result

    def unsupported_in(self, expression: str) -> str:
        """Why `expression` cannot be evaluated here because of a variable it reads ("" if
        none): a variable fit could not compile."""
        for name, result in self.failed.items():
            if result.state == "unsupported" and re.search(rf"variables\.{name}\b", expression):
                return f"variable {name}: {result.error}"
        return ""


def aggregate(errors: Sequence[str]) -> str:
    """`utilerrors.NewAggregate(errs).Error()`: one as it is, several as `[e1, e2]`, each
    distinct message once."""
    seen: list[str] = []
    for error in errors:
        if error not in seen:
            seen.append(error)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def match_conditions(spec: Mapping[str, Any], activation: Activation) -> tuple[str, str]:
    """A policy's `matchConditions` (webhook/matchconditions/matcher.go `Match`): ("match" |
    "skip" | "error" | "unsupported", the error or why). One false skips the policy even where
    another failed; failures are aggregated."""
    errors: list[str] = []
    unsupported = ""
    conditions = spec.get("matchConditions")
    for condition in conditions if isinstance(conditions, list) else []:
        if not isinstance(condition, Mapping):
            continue
        expression = str(condition.get("expression", ""))
        result = activation.run(expression)
        if result.state == "unsupported":
            unsupported = unsupported or f"matchCondition {condition.get('name')}: {result.error}"
        elif result.state == "error":
            errors.append(error_message(expression, result.error))
        elif result.value is False:
            return "skip", ""
    if unsupported:
        return "unsupported", unsupported
    if errors:
        return "error", aggregate(errors)
    return "match", ""
