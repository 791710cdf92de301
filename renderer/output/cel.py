"""The `x-kubernetes-validations` rules of a CRD schema, compiled once and evaluated on objects as
the API server evaluates them (apiextensions-apiserver, `pkg/apiserver/schema/cel/validation.go`,
`Validator.Validate` and `validateExpressions`).

Design: docs/cel.md#how-a-crds-rules-are-evaluated
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings

__all__ = [
    "CelViolation",
    "CompiledRules",
    "Evaluation",
    "UncheckedRule",
    "compile_rules",
    "root_path",
]

ROOT = "<nil>"
"""How the API server prints the path of a rule on the object's root (a nil field path)."""

_REASONS = {
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


@dataclass(frozen=True, slots=True)
class UncheckedRule:
    """A rule gpuplane cannot evaluate: where it sits in the schema, its text, and why."""

    path: str
    rule: str
    why: str
    transition: bool = False
    """The rule names `oldSelf`: `validate --base` and `diff` report it too."""


@dataclass(frozen=True, slots=True)
class CelViolation:
    """One rule an object breaks, worded as the API server reports it."""

    path: str
    """The field path the API server names ("spec.tolerations", "<nil>" for the root)."""
    message: str
    """The whole field error: `spec: Invalid value: "object": at least one nodeLabel ...`."""
    rule: str
    transition: bool
    """The rule compares with `oldSelf`: an update the API server refuses."""


@dataclass(frozen=True, slots=True)
class _Rule:
    text: str
    message: str | None
    field_path: str | None
    reason: str | None
    transition: bool
    program: Any
    message_program: Any
    path: str
    """Where the rule sits in the schema (`spec.tolerations`), for the unchecked list."""


@dataclass(slots=True)
class _Node:
    """A schema node that has rules at or below it; `schema` is the raw structural schema."""

    schema: Mapping[str, Any]
    rules: tuple[_Rule, ...] = ()
    properties: dict[str, _Node] = field(default_factory=dict)
    items: _Node | None = None
    additional: _Node | None = None


@dataclass(frozen=True, slots=True)
class CompiledRules:
    """Every rule of one CRD version's schema, compiled; evaluate with `violations`."""

    root: _Node | None
    unchecked: tuple[UncheckedRule, ...]
    transition: bool
    """Some rule is a transition rule: the old object matters."""

    def evaluate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> Evaluation:
        """The rules `obj` breaks (defaults already applied), transition rules against `old`."""
        result = Evaluation()
        if self.root is not None:
            _walk(self.root, obj, old, has_old=old is not None, path=(), found=result)
        return result

    def violations(
        self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
    ) -> list[CelViolation]:
        return self.evaluate(obj, old).violations


@dataclass(slots=True)
class Evaluation:
    """What evaluating one object gave: the rules it breaks, and the rules that could not be
    evaluated on it (a run-time type mismatch of a `dyn` value)."""

    violations: list[CelViolation] = field(default_factory=list)
    unchecked: list[UncheckedRule] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Compilation

_ENVIRONMENT: Any = None
_PROGRAMS: dict[str, tuple[Any, str | None, bool]] = {}
"""Rule text -> (compiled expression or None, why it cannot be evaluated, names oldSelf): the
same rule text recurs in many places of one schema (Argo Workflows has one rule in 22) and in
every CRD version."""

_Q3 = "'''"
_D3 = '"""'
_TOKENS = re.compile(
    "|".join(
        (
            rf"(?P<raw>[rR][bB]?|[bB][rR])(?:{_Q3}.*?{_Q3}|{_D3}.*?{_D3}|'[^'\n]*'|\"[^\"\n]*\")",
            rf"[bB]?(?:{_Q3}(?:\\.|.)*?{_Q3}|{_D3}(?:\\.|.)*?{_D3}",
            r"'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\")",
            r"//[^\n]*",
            r"(?P<dot>\.\s*)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)",
            r".",
        )
    ),
    re.DOTALL,
)
"""CEL's tokens as far as `oldSelf` matters (cel-spec `CEL.g4`: STRING, raw strings, comments,
IDENTIFIER, and `.` before a field name): string literals and comments are skipped whole."""


def uses_old_self(text: str) -> bool:
    """Whether a rule references the variable `oldSelf`, as apiextensions-apiserver's
    `compilation.go` decides it from the checked AST's references (`UsesOldSelf`): never for
    the word inside a string literal or a comment, nor for a field selected as `x.oldSelf`."""
    for match in _TOKENS.finditer(text):
        if match["name"] == "oldSelf" and match["dot"] is None:
            return True
    return False


def is_ip(text: str) -> bool:
    """Kubernetes' CEL `isIP(string)` (k8s.io/apiserver/pkg/cel/library/ip.go, `parseIPAddr`):
    an IPv4 or IPv6 address as Go's `netip.ParseAddr` reads it (no leading zeros in IPv4), with
    no zone and not IPv4-mapped IPv6."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        return address.scope_id is None and address.ipv4_mapped is None
    return True


def _environment() -> Any:
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        is_ip_decl = cel.FunctionDecl(
            "isIP", [cel.Overload("isIP_string", cel.Type.BOOL, [cel.Type.STRING], impl=is_ip)]
        )
        _ENVIRONMENT = cel.NewEnv(
            variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN},
            extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
            functions=[is_ip_decl],
        )
    return _ENVIRONMENT


def _program(text: str) -> tuple[Any, str | None, bool]:
    """Compile one CEL expression: (expression, None, names oldSelf), or (None, why not, ...)."""
    cached = _PROGRAMS.get(text)
    if cached is not None:
        return cached
    uses_old = uses_old_self(text)
    try:
        result: tuple[Any, str | None, bool] = (_environment().compile(text), None, uses_old)
    except (RuntimeError, ValueError) as err:
        lines = [line for line in str(err).splitlines() if line.strip()]
        first = lines[0] if lines else type(err).__name__
        first = re.sub(r"^INVALID_ARGUMENT: ERROR: <input>:\d+:\d+: ", "", first)
        result = (None, f"gpuplane's CEL (cel-expr-python) cannot compile it: {first}", uses_old)
    _PROGRAMS[text] = result
    return result


def compile_rules(schema: Mapping[str, Any]) -> CompiledRules:
    """The rules of one version's `openAPIV3Schema`, each compiled once."""
    unchecked: list[UncheckedRule] = []
    transition = [False]
    root = _compile(schema, "", unchecked, transition)
    return CompiledRules(root, tuple(unchecked), transition[0])


def _compile(
    schema: Any, path: str, unchecked: list[UncheckedRule], transition: list[bool]
) -> _Node | None:
    if not isinstance(schema, Mapping):
        return None
    rules: list[_Rule] = []
    for entry in schema.get("x-kubernetes-validations") or ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("rule"), str):
            continue
        text = entry["rule"]
        program, why, uses_old = _program(text)
        if why is None and entry.get("optionalOldSelf") is True:
            why = "it sets optionalOldSelf, which needs CEL optionals that cel-python does not have"
        if program is None or why is not None:
            unchecked.append(
                UncheckedRule(path or ROOT, text, why or "it does not compile", uses_old)
            )
            continue
        message_program = None
        expression = entry.get("messageExpression")
        if isinstance(expression, str):
            message_program, _, _ = _program(expression)
        transition[0] = transition[0] or uses_old
        message = entry.get("message")
        rules.append(
            _Rule(
                text,
                message if isinstance(message, str) else None,
                entry.get("fieldPath") if isinstance(entry.get("fieldPath"), str) else None,
                entry.get("reason") if isinstance(entry.get("reason"), str) else None,
                uses_old,
                program,
                message_program,
                path or ROOT,
            )
        )
    node = _Node(schema, tuple(rules))
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            compiled = _compile(child, _child(path, key), unchecked, transition)
            if compiled is not None:
                node.properties[key] = compiled
    node.items = _compile(schema.get("items"), f"{path}[*]", unchecked, transition)
    extra = schema.get("additionalProperties")
    node.additional = _compile(extra, f"{path}[*]", unchecked, transition)
    if not node.rules and not node.properties and node.items is None and node.additional is None:
        return None
    return node


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def root_path(path: tuple[str | int, ...]) -> str:
    """A field path as the API server prints it: `spec.tolerations[0]`, `<nil>` for the root."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif text and part.startswith("["):
            text += part
        else:
            text = _child(text, part)
    return text or ROOT


# --------------------------------------------------------------------------------------------
# Evaluation


def _walk(
    node: _Node,
    value: Any,
    old: Any,
    *,
    has_old: bool,
    path: tuple[str | int, ...],
    found: Evaluation,
) -> None:
    if value is None:
        return
    if node.rules:
        _evaluate(node, value, old if has_old else None, has_old=has_old, path=path, found=found)
    if isinstance(value, Mapping):
        for key, child in node.properties.items():
            if key in value:
                here = has_old and isinstance(old, Mapping) and old.get(key) is not None
                _walk(
                    child,
                    value[key],
                    old[key] if here else None,
                    has_old=here,
                    path=(*path, key),
                    found=found,
                )
        if node.additional is not None:
            for key, item in value.items():
                here = has_old and isinstance(old, Mapping) and old.get(key) is not None
                _walk(
                    node.additional,
                    item,
                    old[key] if here else None,
                    has_old=here,
                    path=(*path, f"[{key}]"),
                    found=found,
                )
    elif isinstance(value, list) and node.items is not None:
        olds = _correlated(node.schema, value, old if has_old else None)
        for index, item in enumerate(value):
            previous = olds.get(index, _ABSENT)
            _walk(
                node.items,
                item,
                None if previous is _ABSENT else previous,
                has_old=previous is not _ABSENT,
                path=(*path, index),
                found=found,
            )


_ABSENT = object()


def _correlated(schema: Mapping[str, Any], value: list[Any], old: Any) -> dict[int, Any]:
    """The old item of each new item, by its map keys; only `x-kubernetes-list-type: map` lists
    correlate (a set or atomic list's items have no old value)."""
    if not isinstance(old, list) or schema.get("x-kubernetes-list-type") != "map":
        return {}
    keys = schema.get("x-kubernetes-list-map-keys") or []
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
    props = items.get("properties", {}) if isinstance(items, Mapping) else {}

    def key_of(item: Any) -> tuple[Any, ...] | None:
        if not isinstance(item, Mapping):
            return None
        return tuple(repr(item.get(k, props.get(k, {}).get("default"))) for k in keys)

    before = {key_of(item): item for item in old if key_of(item) is not None}
    return {
        index: before[key]
        for index, item in enumerate(value)
        if (key := key_of(item)) is not None and key in before
    }


_Outcome = tuple[_Rule, str, str]
"""A rule that did not pass: "error", "false" or "unchecked", and the message's detail."""

_OUTCOMES: dict[tuple[int, str, str | None], tuple[_Node, tuple[_Outcome, ...]]] = {}
"""What the rules of one schema node gave on one value (and old value): rendered objects repeat
(every team's templates, both clusters' queues). Keyed by the node (compiled once per CRD and
kept: the entry holds it, so its id is never reused while the entry lives) and the values'
JSON; emptied past `_MAX_OUTCOMES` entries."""

_MAX_OUTCOMES = 20_000


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _run(program: Any, data: Mapping[str, Any]) -> tuple[str, Any]:
    """("true" | "false" | "error" | "other", the value or the error's text)."""
    try:
        value = program.eval(data=data)
    except (RuntimeError, ValueError, TypeError) as err:
        return "error", str(err)
    kind = value.type()
    if kind == cel.Type.ERROR:
        return "error", str(value.value())
    if kind == cel.Type.BOOL:
        return ("true" if value.value() is True else "false"), value.value()
    return "other", value.value()


def _outcomes(node: _Node, value: Any, old: Any, *, has_old: bool) -> tuple[_Outcome, ...]:
    uses_old = has_old and any(rule.transition for rule in node.rules)
    key = (id(node), _key(value), _key(old) if uses_old else None)
    cached = _OUTCOMES.get(key)
    if cached is not None and cached[0] is node:
        return cached[1]
    failed: list[_Outcome] = []
    data: dict[str, Any] = {}
    for rule in node.rules:
        if rule.transition and not has_old:
            continue  # a transition rule is not evaluated on create (validation.go)
        if "self" not in data:
            data["self"] = to_cel(value, node.schema)
        if rule.transition and "oldSelf" not in data:
            data["oldSelf"] = to_cel(aligned(old, value, node.schema), node.schema)
        state, result = _run(rule.program, data)
        if state == "true":
            continue
        if state == "error" and "No matching overloads" in str(result):
            if _typed_alike(node):
                # validateExpressions: a run-time overload error on a dyn value (int-or-string,
                # x-kubernetes-preserve-unknown-fields) refuses the object
                detail = (
                    "'no such overload': call arguments did not match a supported operator, "
                    f"function or macro signature for rule: {_rule_string(rule)}"
                )
                failed.append((rule, "error", detail))
            else:
                why = (
                    "at run time it met a value typed otherwise than the API server types it "
                    f"({_error_text(str(result))})"
                )
                failed.append((rule, "unchecked", why))
        elif state == "error":
            detail = f"{_error_text(str(result))} evaluating rule: {_rule_string(rule)}"
            failed.append((rule, "error", detail))
        elif state == "false":
            failed.append((rule, "false", _message(rule, data)))
        else:
            failed.append((rule, "unchecked", "it does not give a bool"))
    outcome = tuple(failed)
    if len(_OUTCOMES) >= _MAX_OUTCOMES:
        _OUTCOMES.clear()
    _OUTCOMES[key] = (node, outcome)
    return outcome


_ALIKE: dict[int, tuple[Mapping[str, Any], bool]] = {}
"""Schema node (by id, kept alive by the entry) -> whether `_typed_alike` holds."""

_RETYPED_FORMATS = frozenset({"byte", "date", "date-time", "duration"})
"""String formats the API server gives CEL as bytes, timestamps and durations
(apiserver `pkg/cel/common/schemas.go`, `SchemaDeclType`); gpuplane keeps them strings."""


def _typed_alike(node: _Node) -> bool:
    """Whether a run-time `no matching overload` here is the API server's too: the values under
    the node include one the API server types `dyn` as well (int-or-string, preserved unknown
    fields: the only way past its type checker), and none it types otherwise than gpuplane does
    (a string of a format in `_RETYPED_FORMATS`)."""
    cached = _ALIKE.get(id(node.schema))
    if cached is not None and cached[0] is node.schema:
        return cached[1]
    dyn, retyped = _typing(node.schema)
    _ALIKE[id(node.schema)] = (node.schema, dyn and not retyped)
    return dyn and not retyped


def _typing(schema: Any) -> tuple[bool, bool]:
    """(some value under `schema` is dyn to the API server, some is retyped there)."""
    if not isinstance(schema, Mapping):
        return False, False
    if schema.get("x-kubernetes-int-or-string") is True:
        return True, False
    if schema.get("type") == "string":
        return False, schema.get("format") in _RETYPED_FORMATS
    dyn = schema.get("x-kubernetes-preserve-unknown-fields") is True or "type" not in schema
    retyped = False
    children: list[Any] = [schema.get("items"), schema.get("additionalProperties")]
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        children.extend(properties.values())
    for child in children:
        child_dyn, child_retyped = _typing(child)
        dyn, retyped = dyn or child_dyn, retyped or child_retyped
    return dyn, retyped


def aligned(old: Any, new: Any, schema: Any) -> Any:
    """`old` with its `set` and `map` lists in `new`'s order where they hold the same elements:
    the API server compares such lists regardless of order (apiserver `pkg/cel/common/values.go`,
    `unstructuredSetList.Equal`, `unstructuredMapList.Equal`), CEL's lists in order."""
    if not isinstance(schema, Mapping):
        return old
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties")
        return {
            k: aligned(v, new[k], properties.get(k, extra)) if k in new else v
            for k, v in old.items()
        }
    if not isinstance(old, list) or not isinstance(new, list):
        return old
    kind = schema.get("x-kubernetes-list-type")
    items = schema.get("items")
    if kind == "set":
        if len(old) == len(new) and {_key(v) for v in old} == {_key(v) for v in new}:
            return list(new)
        return old
    if kind == "map" and len(old) == len(new):
        keys = schema.get("x-kubernetes-list-map-keys") or []

        def key_of(item: Any) -> str:
            return _key([item.get(k) if isinstance(item, Mapping) else None for k in keys])

        by_key = {key_of(item): item for item in old}
        if len(by_key) == len(old) and set(by_key) == {key_of(item) for item in new}:
            return [aligned(by_key[key_of(item)], item, items) for item in new]
        return old
    return [aligned(o, n, items) for o, n in zip(old, new, strict=False)] + old[len(new) :]


def _evaluate(
    node: _Node,
    value: Any,
    old: Any,
    *,
    has_old: bool,
    path: tuple[str | int, ...],
    found: Evaluation,
) -> None:
    type_name = str(node.schema.get("type", ""))
    for rule, state, detail in _outcomes(node, value, old, has_old=has_old):
        if state == "unchecked":
            found.unchecked.append(UncheckedRule(rule.path, rule.text, detail, rule.transition))
            continue
        if state == "error":
            shown = root_path(path)
            text = f'{shown}: Invalid value: "{type_name}": {detail}'
            found.violations.append(CelViolation(shown, text, rule.text, rule.transition))
            continue
        where = path
        if rule.field_path:
            where = (*path, rule.field_path.lstrip("."))
        shown = root_path(where)
        kind = _REASONS.get(rule.reason or "")
        if kind in ("Forbidden", "Required value"):
            text = f"{shown}: {kind}: {detail}"
        else:
            text = f'{shown}: {kind or "Invalid value"}: "{type_name}": {detail}'
        found.violations.append(CelViolation(shown, text, rule.text, rule.transition))


def _rule_string(rule: _Rule) -> str:
    """`ruleErrorString`: the rule's message when it has one, else its text."""
    return (rule.message or "").strip() or rule.text.strip()


def _message(rule: _Rule, data: Mapping[str, Any]) -> str:
    """`messageExpression`'s string when it gives a usable one, else `ruleMessageOrDefault`."""
    if rule.message_program is not None:
        state, text = _run(rule.message_program, data)
        if state == "other" and isinstance(text, str) and text.strip() and "\n" not in text:
            return text
    if rule.message and rule.message.strip():
        return rule.message.strip()
    return f"failed rule: {_rule_string(rule)}"


_NO_KEY = re.compile(r'Key not found in map : "(.*)"')
_STATUS = re.compile(r"^[A-Z_]+: ")


def _error_text(error: str) -> str:
    """The C++ runtime's error in cel-go's words where they differ ("no such key: x")."""
    match = _NO_KEY.search(error)
    if match:
        return f"no such key: {match[1]}"
    return _STATUS.sub("", error.strip().splitlines()[0] if error.strip() else error)


# --------------------------------------------------------------------------------------------
# JSON -> CEL, typed by the schema as the API server types it


def to_cel(value: Any, schema: Any) -> Any:
    """`value` as the API server types it for CEL, in plain Python: a `number` field is a double
    even when written as an integer; the rest stays as JSON gives it (strings of `format:
    date-time` stay strings here, a limit docs/cel.md names)."""
    if not isinstance(schema, Mapping):
        schema = {}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value) if schema.get("type") == "number" else value
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        extra = schema.get("additionalProperties")
        return {str(k): to_cel(v, properties.get(k, extra)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = schema.get("items")
        return [to_cel(v, items) for v in value]
    return value
