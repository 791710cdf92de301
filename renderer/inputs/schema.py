"""Check loaded documents against the JSON Schemas in `schemas/`, reporting at the offending line.

The same schemas drive editors (through the `yaml-language-server` modeline), so a PR author sees
the same rules in the editor and in CI. jsonschema's messages are rewritten into the findings'
vocabulary: unknown field, missing field, wrong type, invalid value, each with a hint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
from jsonschema.exceptions import ValidationError, best_match

from renderer.findings.diagnostics import Diagnostic, PathKey, closest
from renderer.findings.rules import document_rule
from renderer.inputs import limits
from renderer.inputs.source import Document
from renderer.model.evidence import EVIDENCE_FOLDER

_BESIDE = Path(__file__).resolve().parents[2]
SCHEMA_DIR = (
    _BESIDE / "gpuplane_schemas" if (_BESIDE / "gpuplane_schemas").is_dir() else _BESIDE / "schemas"
)
"""The engine and its schemas ship together: `schemas/` of this checkout (an editable install
too), or the copy an installed wheel carries as the data package `gpuplane_schemas` beside
`renderer` (see docs/schemas.md)."""

API_VERSION = "gpuplane.dev/v1alpha1"

KIND_FOLDERS: Mapping[str, str] = {
    "clusters": "Cluster",
    "pools": "Pool",
    "teams": "Team",
    "queues": "Queue",
}

REPOSITORY_FILE = "gpuplane.yaml"
"""The repository's own settings (kind Repository), at its root; optional."""

EVIDENCE_KIND = "AcceptanceEvidence"
"""The kind of an acceptance/<cluster>/<pool>.yaml file (`renderer.model.evidence`)."""

_SCHEMA_FILES: Mapping[str, str] = {EVIDENCE_KIND: "evidence"}
"""Kinds whose schema file is not named after the kind."""


def kind_of_folder(folder: str) -> str:
    """The kind of the files of an input folder ("." is the repository root; acceptance/'s
    files sit one folder deeper, under their cluster's name)."""
    if folder == ".":
        return "Repository"
    if folder.startswith(f"{EVIDENCE_FOLDER}/"):
        return EVIDENCE_KIND
    return KIND_FOLDERS[folder]


for _rule, _doc in {
    "schema-unknown-field": """A field that the object's schema does not define.

The schemas are strict so that a typo (`borowingLimit`) is an error instead of a setting that
silently does nothing.

To satisfy it: correct the spelling to the field the hint names (or remove the field);
without a close match the hint lists the fields allowed there. `schemas/<kind>.schema.json`
describes every field, and an editor that reads the file's `yaml-language-server` modeline
completes them.""",
    "schema-missing-field": """A required field is missing.

The message names the field and the object it belongs in; the schema's description (shown by
editors through the file's `yaml-language-server` modeline) says what it means.

To satisfy it: add the field at the place the message names; the hint quotes its description.
`gpuplane new KIND NAME` writes a complete object of each kind to copy from.""",
    "schema-wrong-type": """A value of the wrong type: a string where a number belongs, or the reverse.

A frequent cause is a version such as `1.30` written without quotes: YAML reads it as the number
1.3.

To satisfy it: write the value in the type the message names. Quote strings that look like
numbers (`kubernetesVersion: "1.33"`, `driver: "570.124.06"`, `kernel: "5.15"`); write numbers
and booleans without quotes (`nominal: 4`, `fairSharing: true`); for a list or mapping, check
the indentation of the lines under the key.""",
    "schema-invalid-value": """A value outside what the field allows: not one of its choices, out of range, or
not in the required format (a DNS-1123 name, a Kubernetes quantity, a duration, a CIDR).

The schemas refuse what the cluster or the operators would refuse later, or misread, so a
mistake shows at its own line in the pull request instead of in a failed sync.

To satisfy it: use one of the values the message lists (the hint names the closest), keep
numbers inside the range it gives, and match the format: a DNS-1123 name is lower-case letters,
digits and `-` (`llm-eval`), a quantity looks like `2Ti` or `500m`, a duration like `15m` or
`72h`, a CIDR like `10.30.4.0/24`. A block that belongs to another mode (`mig` beside
`sharing: full-gpu`) is refused too: remove it, or change the mode.""",
    "wrong-kind": """The object's kind belongs to another folder: a Pool in `teams/`, for example.

Clusters live in `clusters/`, pools in `pools/`, teams in `teams/`, queues in `queues/`; a file
elsewhere would be checked against the wrong schema and its object never rendered.

To satisfy it: move the file to the folder the hint names, or correct `kind:` if the file is in
the right place. (A wrong `apiVersion`, anything but `gpuplane.dev/v1alpha1`, is reported as
`schema-invalid-value`.)""",
    "name-mismatch": """`metadata.name` must equal the file name (without `.yaml`).

One object per file, named after it, so that a reviewer (and CODEOWNERS) can tell from the path
alone which team, pool, queue or cluster a change touches.

To satisfy it: rename the file to `<folder>/<metadata.name>.yaml`, or set `metadata.name` to the
file's name, as the hint says. Other files refer to an object by its name (a team's `queue`, a
queue's `pools`), so a new name must be changed there too; `gpuplane validate` reports each.""",
}.items():
    document_rule(_rule, "schema", _doc)


@dataclass(frozen=True, slots=True)
class Schema:
    kind: str
    validator: Any
    """jsonschema's Draft 2020-12 validator with integers that are integers and quantities
    Kubernetes can count (`renderer.inputs.limits.StrictValidator`)."""
    raw: Mapping[str, Any]
    fast: Any = None
    """The same schema compiled by jsonschema-rs (`compile_fast`), None where it is not proven to
    judge alike: it says whether a document is valid, and only a document it refuses goes
    through `validator` for the findings' words (docs/output-validation.md, "The compiled
    check")."""

    def valid(self, data: Any) -> bool:
        """Whether jsonschema-rs finds `data` valid; False when it cannot say."""
        if self.fast is None:
            return False
        try:
            return bool(self.fast.is_valid(data))
        except (ValueError, TypeError):  # a value JSON has no type for: jsonschema says
            return False


@cache
def schema_for(kind: str) -> Schema:
    """The compiled schema of one kind (compiled once per process). The schemas are gpuplane's
    own files: tests/test_input_schemas.py checks each against the 2020-12 meta-schema, which
    took a tenth of a second here on every run that loaded a changed file."""
    path = SCHEMA_DIR / f"{_SCHEMA_FILES.get(kind, kind.lower())}.schema.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    return Schema(kind, limits.StrictValidator(raw), raw, compile_fast(raw))


_PYTHON_PATTERN = "x-gpuplane-python-pattern"
"""The keyword that replaces `pattern` in the schema given to jsonschema-rs: its value indexes
the compiled patterns, searched with Python's `re`, as jsonschema searches them (Rust's regex
reads `$` before a final newline, and `\\s`, differently)."""

_SCHEMA_MAPS = frozenset({"$defs", "properties", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "propertyNames",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SAME_IN_BOTH = frozenset(
    {
        "$schema",
        "$id",
        "$ref",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "type",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
        "required",
        "dependentRequired",
    }
)
"""Keywords jsonschema-rs reads as jsonschema does (tests/test_fast_schema_check.py proves it on
every field of every input file); another one (`multipleOf`, whose float arithmetic differs,
`$dynamicRef`, ...) keeps the schema on jsonschema alone. `format` is an annotation in both."""


class _Unproven(Exception):
    """A schema the compiled check is not proven to judge as jsonschema does."""


def compile_fast(raw: Mapping[str, Any]) -> Any:
    """A jsonschema-rs validator that finds a document valid exactly when jsonschema does, or
    None where that is not proven."""
    searches: list[Callable[[str], Any]] = []
    try:
        rewritten = _for_rust(raw, searches)
    except _Unproven:
        return None

    class PythonPattern:
        def __init__(self, parent_schema: Any, value: int, schema_path: Any) -> None:
            self.search = searches[value]

        def validate(self, instance: Any) -> None:
            if isinstance(instance, str) and self.search(instance) is None:
                raise ValueError("does not match the pattern")

    try:
        return jsonschema_rs.Draft202012Validator(
            rewritten,
            validate_formats=False,
            keywords={
                _PYTHON_PATTERN: PythonPattern,
                limits.QUANTITY: limits.RustQuantity,
                limits.STRICT_INTEGER: limits.RustStrictInteger,
            },
        )
    except (ValueError, TypeError, jsonschema_rs.ValidationError):
        return None


def _for_rust(node: Any, searches: list[Callable[[str], Any]]) -> Any:
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "pattern":
            if not isinstance(value, str):
                raise _Unproven(key)
            searches.append(re.compile(value).search)
            out[_PYTHON_PATTERN] = len(searches) - 1
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: _for_rust(v, searches) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_for_rust(v, searches) for v in value]
        elif key in _SCHEMA_ONE:
            out[key] = _for_rust(value, searches)
        elif key in _SAME_IN_BOTH or key == limits.QUANTITY:
            out[key] = value
        else:
            raise _Unproven(key)
    if limits.strict_integer(node):
        out[limits.STRICT_INTEGER] = True
    return out


def check_document(doc: Document, folder: str) -> list[Diagnostic]:
    """Every schema problem of one document, plus its kind and name against its place
    (`folder` "." is the repository root, whose one file is the Repository)."""
    data = doc.data
    expected_kind = kind_of_folder(folder)
    if not isinstance(data, dict):
        return [
            Diagnostic(
                "schema-wrong-type",
                f"expected a {expected_kind} object (a mapping), got {_type_name(data)}",
                doc.locate(()),
                hint="start the file with apiVersion, kind, metadata and spec",
            )
        ]
    envelope = _check_envelope(doc, data, expected_kind)
    if envelope:
        return envelope
    schema = schema_for(expected_kind)
    errors = [] if schema.valid(data) else list(schema.validator.iter_errors(data))
    # a value of the wrong type is reported once: not also as "not one of" or "wrong format"
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    errors = [e for e in errors if e.validator == "type" or tuple(e.absolute_path) not in mistyped]
    # a quantity not in the quantity format is reported as that, not also as out of range
    malformed = {tuple(e.absolute_path) for e in errors if e.validator == "pattern"}
    errors = [
        e
        for e in errors
        if e.validator != limits.QUANTITY or tuple(e.absolute_path) not in malformed
    ]
    problems = [d for error in errors for d in _explain(doc, error)]
    name = data.get("metadata", {}).get("name") if isinstance(data.get("metadata"), dict) else None
    stem = Path(doc.path).name.removesuffix(".yaml")
    if isinstance(name, str) and name != stem:
        problems.append(
            Diagnostic(
                "name-mismatch",
                f"metadata.name is '{name}' but the file is named '{stem}.yaml'",
                doc.locate(("metadata", "name")),
                hint=f"set metadata.name: {stem}"
                if folder == "."
                else f"rename the file to {folder}/{name}.yaml, or set metadata.name: {stem}",
            )
        )
    return problems


def _check_envelope(doc: Document, data: dict[str, Any], expected_kind: str) -> list[Diagnostic]:
    kind = data.get("kind")
    if isinstance(kind, str) and kind in KIND_FOLDERS.values() and kind != expected_kind:
        folder = next(f for f, k in KIND_FOLDERS.items() if k == kind)
        return [
            Diagnostic(
                "wrong-kind",
                f"a {kind} in the folder of {expected_kind} objects",
                doc.locate(("kind",)),
                hint=f"move the file to {folder}/",
            )
        ]
    if kind == EVIDENCE_KIND and expected_kind != EVIDENCE_KIND:
        spec = data.get("spec")
        cluster = spec.get("cluster") if isinstance(spec, dict) else None
        where = f"{EVIDENCE_FOLDER}/{cluster if isinstance(cluster, str) else '<cluster>'}/"
        return [
            Diagnostic(
                "wrong-kind",
                f"an {kind} in the folder of {expected_kind} objects",
                doc.locate(("kind",)),
                hint=f"move the file to {where}",
            )
        ]
    return []


def _explain(doc: Document, error: ValidationError) -> Iterator[Diagnostic]:
    """Turn one jsonschema error into findings in gpuplane's vocabulary."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        yield from _explain(doc, best_match(error.context))
        return
    failure = _Failure.of(doc, error)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        yield from _unknown_fields(failure, error.instance)
        return
    explainer = _EXPLAINERS.get(str(error.validator))
    explained = explainer(failure) if explainer is not None else None
    yield explained if explained is not None else _invalid(failure)


@dataclass(frozen=True)
class _Failure:
    """One jsonschema error with what each explanation reads of it: where it is, in the
    document and in words, and the schema that failed."""

    doc: Document
    error: ValidationError
    path: PathKey
    where: str
    schema: Mapping[str, Any]

    @classmethod
    def of(cls, doc: Document, error: ValidationError) -> _Failure:
        path: PathKey = tuple(error.absolute_path)
        schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
        return cls(doc, error, path, _describe(path), schema)

    def invalid_value(self, message: str, hint: str) -> Diagnostic:
        return Diagnostic("schema-invalid-value", message, self.doc.locate(self.path), hint=hint)


def _unknown_fields(failure: _Failure, instance: Mapping[str, Any]) -> Iterator[Diagnostic]:
    """Each key of `instance` the schema does not define, with the closest one it does."""
    allowed = sorted(failure.schema.get("properties", {}))
    for key in sorted(set(instance) - set(allowed)):
        close = closest(key, allowed)
        hint = f"did you mean '{close}'?" if close else f"known fields: {', '.join(allowed)}"
        yield Diagnostic(
            "schema-unknown-field",
            f"unknown field '{key}' in {failure.where}",
            failure.doc.locate_key((*failure.path, key)),
            hint=hint,
        )


def _missing_field(failure: _Failure) -> Diagnostic:
    message = failure.error.message
    missing = message.split("'")[1] if "'" in message else message
    description = _property_description(failure.schema, missing)
    return Diagnostic(
        "schema-missing-field",
        f"missing required field '{missing}' in {failure.where}",
        failure.doc.locate(failure.path),
        hint=f"add {missing}: {description}" if description else f"add {missing}",
    )


def _wrong_type(failure: _Failure) -> Diagnostic:
    error, where = failure.error, failure.where
    expected = error.validator_value
    expected_text = " or ".join(expected) if isinstance(expected, list) else str(expected)
    hint = f"write {where} as {_article(expected_text)}"
    written = failure.doc.plain_text.get(failure.path, str(error.instance))
    if expected_text == "string" and isinstance(error.instance, int | float):
        hint = f'quote the value: "{written}" (YAML reads {written} as the number {error.instance})'
    elif "integer" in expected_text and isinstance(error.instance, float):
        hint = limits.integer_hint(written, error.instance)
    return Diagnostic(
        "schema-wrong-type",
        f"{where} must be {_article(expected_text)}, got {_type_name(error.instance)}",
        failure.doc.locate(failure.path),
        hint=hint,
    )


def _not_a_choice(failure: _Failure) -> Diagnostic:
    error = failure.error
    choices = [str(c) for c in _listed(error.validator_value)]
    close = closest(str(error.instance), choices)
    return failure.invalid_value(
        f"{failure.where} is '{error.instance}'; expected one of: {', '.join(choices)}",
        f"did you mean '{close}'?" if close else "use one of the values listed",
    )


def _not_the_constant(failure: _Failure) -> Diagnostic:
    error = failure.error
    return failure.invalid_value(
        f"{failure.where} must be '{error.validator_value}', got '{error.instance}'",
        f"set it to {error.validator_value}",
    )


def _not_the_format(failure: _Failure) -> Diagnostic:
    error, schema = failure.error, failure.schema
    described = str(schema.get("title") or schema.get("description", ""))
    first = described.split(".")[0] if described else f"pattern {error.validator_value}"
    # a key that breaks `propertyNames` is reported on the key, not on its mapping
    key = error.instance
    on_key = "propertyNames" in error.absolute_schema_path and isinstance(key, str)
    doc, path = failure.doc, failure.path
    return Diagnostic(
        "schema-invalid-value",
        f"{failure.where} '{error.instance}' is not in the required format: {first}",
        doc.locate_key((*path, str(key))) if on_key else doc.locate(path),
        hint=_format_hint(str(error.instance), first),
    )


def _too_long(failure: _Failure) -> Diagnostic | None:
    error = failure.error
    if not isinstance(error.instance, str):
        return None
    return failure.invalid_value(
        f"{failure.where} is {len(error.instance)} characters long, more than the "
        f"{error.validator_value} it may have",
        f"shorten it to at most {error.validator_value} characters",
    )


def _too_many(failure: _Failure) -> Diagnostic | None:
    error = failure.error
    if not isinstance(error.instance, list):
        return None
    return failure.invalid_value(
        f"{failure.where} has {len(error.instance)} entries, more than the "
        f"{error.validator_value} it may have",
        f"keep at most {error.validator_value} entries",
    )


def _forbidden(failure: _Failure) -> Diagnostic:
    """On the key the schema forbids (`mig:` of a pool that does not share by MIG), not on
    its mapping, whose position is its first key's line."""
    forbidden = failure.error.validator_value
    written = failure.error.instance
    keys = forbidden.get("required", []) if isinstance(forbidden, Mapping) else []
    present = [k for k in keys if isinstance(written, Mapping) and k in written]
    doc, path = failure.doc, failure.path
    return Diagnostic(
        "schema-invalid-value",
        f"{failure.where} holds a combination its schema forbids: {_not_text(failure.error)}",
        doc.locate_key((*path, present[0])) if present else doc.locate(path),
        hint=str(failure.schema.get("description") or "remove the field that is not allowed here"),
    )


def _invalid(failure: _Failure) -> Diagnostic:
    """Any other error: jsonschema's message, and the field's description as the hint."""
    return failure.invalid_value(
        f"{failure.where}: {failure.error.message}",
        _property_description({"properties": {"x": failure.schema}}, "x")
        or "see the field's description in the schema (editors show it on hover)",
    )


_EXPLAINERS: Mapping[str, Callable[[_Failure], Diagnostic | None]] = {
    "required": _missing_field,
    limits.QUANTITY: lambda f: limits.explain_quantity(f.doc, f.error, f.where),
    "type": _wrong_type,
    "enum": _not_a_choice,
    "const": _not_the_constant,
    "pattern": _not_the_format,
    "maxLength": _too_long,
    "maxItems": _too_many,
    "not": _forbidden,
}
"""The explanation of each JSON Schema keyword's error; None: the generic one."""


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _format_hint(value: str, format_text: str) -> str:
    """A corrected value where one can be guessed (names), else what the format asks for."""
    if "DNS-1123" in format_text:
        guess = re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")[:63].strip("-")
        if guess:
            return f"for example '{guess}'"
    if "MIG profile" in format_text:
        # the resource name and named layouts spell `+me` as `.me`; a profile keeps the `+`
        guess = re.sub(r"[.]me$", "+me", value.strip().lower().replace("_", "."))
        if guess != value and re.fullmatch(r"[1-9]g\.[0-9]+gb(\+me)?", guess):
            return f"did you mean '{guess}'? (profiles write `+me`; only resource and layout names write `.me`)"
    return f"write it as {format_text}"


def _not_text(error: ValidationError) -> str:
    forbidden = error.validator_value
    if isinstance(forbidden, Mapping) and "required" in forbidden:
        return f"'{', '.join(forbidden['required'])}' is not allowed here"
    return "see the schema"


def _property_description(schema: Mapping[str, Any], name: str) -> str | None:
    prop = schema.get("properties", {}).get(name, {})
    text = prop.get("description") if isinstance(prop, dict) else None
    return text.split(". ")[0].rstrip(".") if isinstance(text, str) else None


def _describe(path: PathKey) -> str:
    if not path:
        return "the object"
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _type_name(value: Any) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"number {value!s}"
    if isinstance(value, str):
        return f"string '{value}'"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _article(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word
