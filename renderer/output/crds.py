"""CustomResourceDefinitions as schemas: the files given with `--crds` read into CRDs, and their
structural OpenAPI v3 schemas turned into Draft 2020-12. They change with the operators' CRDs and the
apiextensions rules, not with the built-in kinds or the way problems are worded.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema.validators
import jsonschema_rs
import yaml
from jsonschema.exceptions import ValidationError

from renderer.output import crd_cache
from renderer.output.schema_messages import as_list, one_line, show

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]


class CrdLoadError(ValueError):
    """A CRD source could not be read or is not a usable CustomResourceDefinition."""


# --------------------------------------------------------------------------------------------
# CRD schemas -> Draft 2020-12


_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}

# Top-level metadata of a custom resource: CRDs usually say only `type: object`, but the API server
# validates it as ObjectMeta. Unknown fields are errors, as with strict field validation.
_OBJECT_META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "name": {"type": "string"},
                    "uid": {"type": "string"},
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
                "additionalProperties": False,
            },
        },
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": ["string", "null"]},
        "deletionTimestamp": {"type": ["string", "null"]},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "managedFields": {"type": "array", "items": {"type": "object"}},
        "selfLink": {"type": "string"},
    },
    "additionalProperties": False,
}


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a JSON value, for duplicate detection."""
    if isinstance(value, Mapping):
        return ("{", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("[", tuple(_freeze(v) for v in value))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _list_type(
    validator: Any, list_type: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-kubernetes-list-type``: a ``set`` has no repeated items, a ``map`` no repeated keys.

    The API server enforces both for custom resources ("Duplicate value").
    """
    if not isinstance(instance, list):
        return
    seen: set[Any] = set()
    if list_type == "set":
        for index, item in enumerate(instance):
            key = _freeze(item)
            if key in seen:
                yield ValidationError(f"duplicate entry {show(item)}", path=(index,))
            seen.add(key)
    elif list_type == "map":
        names = schema.get("x-kubernetes-list-map-keys") or []
        items = schema.get("items")
        props = items.get("properties", {}) if isinstance(items, Mapping) else {}
        for index, item in enumerate(instance):
            if not isinstance(item, Mapping):
                continue
            values = [item.get(n, props.get(n, {}).get("default")) for n in names]
            key = tuple(_freeze(v) for v in values)
            if key in seen:
                shown = ", ".join(f"{n}={show(v)}" for n, v in zip(names, values, strict=True))
                yield ValidationError(f"duplicate entry with {shown}", path=(index,))
            seen.add(key)


CrdValidatorClass: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.validators.Draft202012Validator, {"x-kubernetes-list-type": _list_type}
)


# OpenAPI keywords kept as they are; everything else (descriptions, x-kubernetes-* markers that
# only steer merging, ...) is dropped from the compiled schema.
_KEPT_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "required",
        "default",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
    }
)


def _go_regex_to_python(pattern: str) -> str | None:
    """Kubernetes patterns are Go RE2; fix what Python reads differently, None if unusable."""
    m = re.match(r"^\^(\(\?[a-zA-Z]+\))", pattern)
    if m:  # "^(?i)..." -> "(?i)^...": Python wants global flags first
        pattern = m[1] + "^" + pattern[len(m[0]) :]
    try:
        re.compile(pattern)
    except re.error:
        return None
    return pattern


def _convert_crd_schema(node: Any, *, in_junctor: bool = False) -> Any:
    """A structural OpenAPI v3 schema node as a Draft 2020-12 JSON Schema node."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    exclusive: set[str] = set()
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            fixed = _go_regex_to_python(value)
            if fixed is not None:
                out[key] = fixed
        elif key in _KEPT_KEYWORDS:
            out[key] = value
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            # OpenAPI 3.0: a boolean beside minimum/maximum; 2020-12: the bound itself.
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value is True and bound in node:
                out[key] = node[bound]
                exclusive.add(bound)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _convert_crd_schema(v, in_junctor=in_junctor) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = (
                _convert_crd_schema(value, in_junctor=in_junctor or key == "not")
                if isinstance(value, Mapping)
                else value
            )
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_convert_crd_schema(v, in_junctor=True) for v in value]
    for bound in exclusive:
        out.pop(bound, None)

    if node.get("x-kubernetes-int-or-string") is True:
        out["type"] = ["integer", "string"]
        branches = out.get("anyOf")
        if isinstance(branches, list) and all(
            isinstance(b, Mapping) and set(b) == {"type"} for b in branches
        ):
            del out["anyOf"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if node.get("x-kubernetes-embedded-resource") is True:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if node.get("nullable") is True:
        if "type" in out:
            types = as_list(out["type"])
            out["type"] = [*types, "null"] if "null" not in types else types
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if (
        not in_junctor
        and "properties" in out
        and "additionalProperties" not in out
        and not preserve
    ):
        out["additionalProperties"] = False
    return out


def convert_crd_root(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The whole object's schema: as above, with apiVersion/kind/metadata always allowed and the
    top-level metadata validated as ObjectMeta."""
    out = _convert_crd_schema(schema)
    assert isinstance(out, dict)
    props = out.setdefault("properties", {})
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    declared = schema.get("properties", {}).get("metadata")
    meta: dict[str, Any] = dict(_OBJECT_META_SCHEMA)
    if isinstance(declared, Mapping) and isinstance(declared.get("properties"), Mapping):
        # CRDs may only restrict name/generateName here; keep those restrictions.
        extra = {
            k: _convert_crd_schema(v)
            for k, v in declared["properties"].items()
            if k in ("name", "generateName")
        }
        meta["properties"] = {
            **meta["properties"],
            **{k: {"allOf": [meta["properties"][k], v]} for k, v in extra.items()},
        }
    props["metadata"] = meta
    if "additionalProperties" not in out and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


# --------------------------------------------------------------------------------------------
# The same converted schema for jsonschema-rs (docs/output-validation.md, "The compiled check")

_PYTHON_KEYWORD = "x-gpuplane-python"
"""The keyword, in the schema given to jsonschema-rs, through which it asks Python about a value:
its value indexes the checks `compile_fast` made for that schema."""


class _Unproven(Exception):
    """A schema the compiled check is not proven to judge as jsonschema does."""


def compile_fast(schema: Mapping[str, Any]) -> Any | None:
    """A jsonschema-rs validator that finds an object valid exactly when
    ``CrdValidatorClass(schema)`` does, or None where that is not proven (then jsonschema alone
    decides).

    Rust evaluates the schema but for two keywords, which it hands back to Python through one
    custom keyword: every `pattern` is searched with Python's `re`, as jsonschema searches it
    (Rust's regex reads `$`, `\\s` and `\\w` differently from Python's), and
    `x-kubernetes-list-type` runs `_list_type` itself. `multipleOf` on floats is computed
    differently by the two and no CRD of `shared/crds` uses it: a schema with it stays on
    jsonschema; so does one jsonschema-rs refuses to compile."""
    checks: list[Callable[[Any], bool]] = []
    try:
        rewritten = _for_rust(schema, checks)
    except _Unproven:
        return None

    class PythonKeyword:
        def __init__(self, parent_schema: Any, value: int, schema_path: Any) -> None:
            self.check = checks[value]

        def validate(self, instance: Any) -> None:
            if not self.check(instance):
                raise ValueError("refused by the Python check")

    try:
        return jsonschema_rs.Draft202012Validator(
            rewritten, validate_formats=False, keywords={_PYTHON_KEYWORD: PythonKeyword}
        )
    except (ValueError, TypeError, jsonschema_rs.ValidationError):
        return None


def _pattern_check(pattern: Any) -> Callable[[Any], bool]:
    """jsonschema's `pattern`: a string must hold a match of `re.search`."""
    if not isinstance(pattern, str):
        raise _Unproven(f"pattern {pattern!r} is not a string")
    try:
        search = re.compile(pattern).search
    except re.error as exc:
        raise _Unproven(f"pattern {pattern!r} does not compile") from exc
    return lambda instance: not isinstance(instance, str) or search(instance) is not None


def _list_check(list_type: Any, node: Mapping[str, Any]) -> Callable[[Any], bool]:
    """`_list_type` itself, on the very schema node jsonschema hands it."""
    return lambda instance: next(_list_type(None, list_type, instance, node), None) is None


def _for_rust(node: Any, checks: list[Callable[[Any], bool]]) -> Any:
    """A converted schema node with its `pattern` and set/map list types replaced by
    `_PYTHON_KEYWORD`, the checks they need appended to `checks`."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    own: list[Callable[[Any], bool]] = []
    for key, value in node.items():
        if key == "pattern":
            own.append(_pattern_check(value))
        elif key == "x-kubernetes-list-type":
            if value in ("set", "map"):
                own.append(_list_check(value, node))
        elif key == "multipleOf":
            raise _Unproven("multipleOf")
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _for_rust(v, checks) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _for_rust(value, checks)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_for_rust(v, checks) for v in value]
        elif key in _KEPT_KEYWORDS or key in ("exclusiveMinimum", "exclusiveMaximum"):
            out[key] = value
        else:  # nothing else comes out of the conversion: another keyword is not proven
            raise _Unproven(key)
    if own:
        checks.append(own[0] if len(own) == 1 else _all_of(tuple(own)))
        out[_PYTHON_KEYWORD] = len(checks) - 1
    return out


def _all_of(checks: tuple[Callable[[Any], bool], ...]) -> Callable[[Any], bool]:
    return lambda instance: all(check(instance) for check in checks)


# --------------------------------------------------------------------------------------------
# CRD loading


class _YamlLoader(_BaseLoader):
    """Safe loader that also reads a bare ``=`` (PyYAML's value tag) as a string."""


def _construct_value(loader: Any, node: yaml.Node) -> str:
    return str(node.value)


_YamlLoader.add_constructor("tag:yaml.org,2002:value", _construct_value)


@dataclass(slots=True)
class Crd:
    name: str
    group: str
    kind: str
    scope: str
    source: Path
    schemas: dict[str, Mapping[str, Any]]  # version -> openAPIV3Schema
    served: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False)


def source_files(source: Path) -> list[Path]:
    if source.is_dir():
        return sorted(
            p
            for p in source.rglob("*")
            if p.is_file() and p.suffix.lower() in (".yaml", ".yml", ".json")
        )
    if source.is_file():
        return [source]
    raise CrdLoadError(f"{source}: no such file or folder")


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CrdLoadError(f"{path}: cannot read: {exc}") from exc


MAX_NODES = 1_000_000
"""Values one CRD file may hold once YAML aliases are followed: the largest real CRD (Argo
Workflows', 2.8 MB) holds about 35,000. Past it the file is an alias bomb, refused before anything
(the disk cache, the schema conversion, an import) walks it."""


def bounded(path: Path, documents: list[Any]) -> list[Any]:
    """The documents, if they hold at most MAX_NODES values counted through every alias."""
    left = MAX_NODES
    stack: list[Any] = [documents]
    while stack:
        item = stack.pop()
        left -= 1
        if left < 0:
            raise CrdLoadError(
                f"{path}: more than {MAX_NODES:,} values once YAML aliases are followed: "
                "not a CRD file (an alias bomb?)"
            )
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return documents


def _read_documents(path: Path, raw: bytes) -> list[Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CrdLoadError(f"{path}: cannot read: {exc}") from exc
    try:
        if path.suffix.lower() == ".json":
            return bounded(path, [json.loads(text, parse_constant=_no_constant)])
        return crd_cache.documents(
            raw, lambda: bounded(path, list(yaml.load_all(text, Loader=_YamlLoader)))
        )
    except CrdLoadError:
        raise
    except RecursionError as exc:
        raise CrdLoadError(f"{path}: nested too deeply to be a CRD file") from exc
    except (yaml.YAMLError, ValueError) as exc:
        raise CrdLoadError(f"{path}: not valid YAML/JSON: {one_line(str(exc))}") from exc


def _no_constant(name: str) -> Any:
    """JSON has no NaN or Infinity; Python's reader would take them, the API server would not."""
    raise ValueError(f"{name} is not JSON")


_PARSED: dict[tuple[Path, bytes], tuple[Crd, ...]] = {}
"""CRD files parsed in this process, by path and content digest: parsing the Argo Workflows
CRDs alone takes seconds, and a process (a test run, `diff` rendering two sides) builds several
validators over the same files. The parsed CRDs are never mutated."""


def parsed_ahead(path: Path, raw: bytes) -> tuple[Crd, ...] | None:
    """The CRDs of a file parsed before any lookup needs them, into this process's memo (or in
    a worker process, to send to the one that will `adopt` them); None when the file is broken:
    the lookup that needs it parses it again and meets the error, as it would have."""
    try:
        return parsed_crds(path, raw)
    except CrdLoadError:
        return None


def adopt(path: Path, raw: bytes, found: tuple[Crd, ...]) -> None:
    """What `parsed_ahead` parsed from this path and bytes elsewhere, as if parsed here."""
    _PARSED.setdefault((path, hashlib.sha256(raw).digest()), found)


def parsed_crds(path: Path, raw: bytes) -> tuple[Crd, ...]:
    key = (path, hashlib.sha256(raw).digest())
    found = _PARSED.get(key)
    if found is None:
        found = tuple(
            crd for document in _read_documents(path, raw) for crd in _crds_in(document, path)
        )
        _PARSED[key] = found
    return found


def _crds_in(document: Any, path: Path) -> Iterator[Crd]:
    if not isinstance(document, Mapping):
        return
    kind = document.get("kind")
    if kind in ("List", "CustomResourceDefinitionList"):
        items = document.get("items")
        if not isinstance(items, list):
            raise CrdLoadError(f"{path}: a {kind} without a list of items")
        for item in items:
            yield from _crds_in(item, path)
        return
    api_version = document.get("apiVersion")
    if kind != "CustomResourceDefinition" or not isinstance(api_version, str):
        return
    if not api_version.startswith("apiextensions.k8s.io/"):
        return
    meta = document.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    label = f"{path}: CustomResourceDefinition {name or '(unnamed)'}"
    if api_version != "apiextensions.k8s.io/v1":
        raise CrdLoadError(f"{label}: {api_version} is not supported, only apiextensions.k8s.io/v1")
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        raise CrdLoadError(f"{label}: no spec")
    group = spec.get("group")
    names = spec.get("names")
    if not isinstance(names, Mapping):
        names = {}
    crd_kind = names.get("kind")
    versions = spec.get("versions")
    if not isinstance(group, str) or not group:
        raise CrdLoadError(f"{label}: no spec.group")
    if not isinstance(crd_kind, str) or not crd_kind:
        raise CrdLoadError(f"{label}: no spec.names.kind")
    if not isinstance(versions, list) or not versions:
        raise CrdLoadError(f"{label}: no spec.versions")
    schemas: dict[str, Mapping[str, Any]] = {}
    served: list[str] = []
    for entry in versions:
        version = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(version, str) or not version:
            raise CrdLoadError(f"{label}: a version without a name")
        schema = entry.get("schema")
        open_api = schema.get("openAPIV3Schema") if isinstance(schema, Mapping) else None
        if not isinstance(open_api, Mapping):
            raise CrdLoadError(f"{label}: version {version} has no schema.openAPIV3Schema")
        schemas[version] = open_api
        if entry.get("served") is True:
            served.append(version)
    yield Crd(
        name=str(name or f"{names.get('plural', crd_kind.lower())}.{group}"),
        group=group,
        kind=crd_kind,
        scope=str(spec.get("scope", "Namespaced")),
        source=path,
        schemas=schemas,
        served=tuple(served),
        raw=spec,
    )


class CrdSet:
    """The CRDs of some files, parsed on demand: parsing every CRD an operator ships (22 MB,
    mostly Argo Workflows) takes seconds, and a render needs a handful. A file is read now but
    parsed only when its bytes mention both the group and the kind looked up, a cheap superset
    test. Two different definitions of one kind in one set are an error."""

    def __init__(self, sources: Sequence[Path] = ()) -> None:
        self.crds: dict[tuple[str, str], Crd] = {}
        self._broken: CrdLoadError | None = None
        self._unparsed: dict[Path, bytes] = {}
        self._searched: set[tuple[str, str]] = set()
        for source in sources:
            for path in source_files(Path(source)):
                self._unparsed.setdefault(path, read_bytes(path))

    def __bool__(self) -> bool:
        return bool(self._unparsed or self.crds)

    def find(self, group: str, kind: str) -> Crd | None:
        """The CRD of a kind, parsing the files that may define it. Once a file of the set has
        failed, every lookup raises its error: no kind may slip past a set that is broken."""
        if self._broken is not None:
            raise self._broken
        if (group, kind) not in self._searched:
            self._searched.add((group, kind))
            needles = (group.encode(), kind.encode())
            for path in sorted(self._unparsed):
                raw = self._unparsed[path]
                if all(needle in raw for needle in needles):
                    self._parse(path)
        return self.crds.get((group, kind))

    def unparsed(self) -> list[tuple[Path, bytes]]:
        """The files not parsed yet, with their bytes, in the order `load_all` parses them."""
        return sorted(self._unparsed.items())

    def load_all(self) -> None:
        """Parse every file now; raises CrdLoadError for the first broken one."""
        for path in sorted(self._unparsed):
            self._parse(path)

    def _parse(self, path: Path) -> None:
        if self._broken is not None:  # a broken file stays broken for every later lookup
            raise self._broken
        raw = self._unparsed.pop(path)
        try:
            found = parsed_crds(path, raw)
        except CrdLoadError as err:
            self._broken = err
            raise
        for crd in found:
            key = (crd.group, crd.kind)
            existing = self.crds.get(key)
            if existing is not None and existing.raw != crd.raw:
                self._broken = CrdLoadError(
                    f"{crd.source}: CustomResourceDefinition {crd.name} is also defined, "
                    f"differently, in {existing.source}"
                )
                raise self._broken
            if existing is None:
                self.crds[key] = crd
