"""Schema validation of rendered Kubernetes objects, before anything is written.

Built-in kinds are checked in strict mode (unknown fields are errors) against the JSON schemas that
kubernetes-validate bundles for each Kubernetes minor version; custom kinds against the
``openAPIV3Schema`` of the CustomResourceDefinitions the user passes. An object whose kind has no
schema is a problem, never a silent pass.

kubernetes-validate's own ``validate()`` is not used: it re-reads and re-parses its schema files on
every call and compares versions as strings. Its data files are read directly instead, and every
schema is compiled once per :class:`OutputValidator` (lazily: most kinds are never used).
See docs/output-validation.md for the design and its limits.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import jsonschema.validators
import yaml
from jsonschema.exceptions import ValidationError, best_match
from packaging.version import Version
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from renderer.output import crd_cache

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

__all__ = [
    "CrdLoadError",
    "OutputValidator",
    "SchemaProblem",
    "UnsupportedKubernetesVersion",
]


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One way a rendered object does not match its schema."""

    path: str  # dotted with indexes: "spec.resourceGroups[0].flavors[1].name"; "" for the root
    message: str  # one line, human-readable


class UnsupportedKubernetesVersion(ValueError):
    """The cluster's Kubernetes version is outside what the bundled schemas cover."""


class CrdLoadError(ValueError):
    """A CRD source could not be read or is not a usable CustomResourceDefinition."""


# --------------------------------------------------------------------------------------------
# Built-in schemas (kubernetes-validate's data files)

_SCHEMA_ROOT = "kubernetes-json-schema"
_DIR_RE = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")
_K8S_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:[.+-].*)?$")
_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"

# Groups served by kube-apiserver itself. Any other group ending in ".k8s.io" is also looked up
# among the bundled schemas, but may well be a custom resource (Gateway API, snapshots, ...).
_KNOWN_BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)


def _is_builtin_group(group: str) -> bool:
    return group in _KNOWN_BUILTIN_GROUPS or group.endswith(".k8s.io")


def _schema_root() -> Any:
    return importlib.resources.files("kubernetes_validate") / _SCHEMA_ROOT


@cache
def _bundled_versions() -> tuple[tuple[Version, str], ...]:
    """(major.minor, strict schema folder name) for every bundled version, oldest first."""
    found = []
    for entry in _schema_root().iterdir():
        m = _DIR_RE.match(entry.name)
        if m:
            found.append((Version(f"{m[1]}.{m[2]}"), entry.name))
    if not found:  # pragma: no cover - broken installation
        raise UnsupportedKubernetesVersion("kubernetes-validate bundles no strict schemas")
    return tuple(sorted(found))


@cache
def _schema_dir_for(kubernetes_version: str) -> tuple[str, str]:
    """The strict schema folder to use for a cluster version, and the "x.y" it stands for."""
    versions = _bundled_versions()
    supported = f"{versions[0][0]} to {versions[-1][0]}"
    m = _K8S_VERSION_RE.match(kubernetes_version.strip())
    if not m:
        raise UnsupportedKubernetesVersion(
            f"cannot read Kubernetes version {kubernetes_version!r}: expected 'major.minor' "
            f"such as '1.33' (supported: {supported})"
        )
    wanted = Version(f"{m[1]}.{m[2]}")
    if wanted < versions[0][0] or wanted > versions[-1][0]:
        raise UnsupportedKubernetesVersion(
            f"Kubernetes {wanted} is not supported: the bundled schemas cover {supported}"
        )
    chosen = [(v, d) for v, d in versions if v <= wanted][-1]
    return chosen[1], str(wanted)


def _schema_file_name(group: str, version: str, kind: str) -> str:
    """``rolebinding-rbac-v1.json`` for rbac.authorization.k8s.io/v1 RoleBinding."""
    prefix = group.split(".", 1)[0]
    if prefix:
        return f"{kind.lower()}-{prefix}-{version}.json"
    return f"{kind.lower()}-{version}.json"


_Path = tuple[str | int, ...]
_Found = tuple[_Path, str]  # (path parts, message)

# --------------------------------------------------------------------------------------------
# Metadata checks (names, labels), applied to every object

_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

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


def _qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label or annotation key (``[prefix/]name``), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix)):
        return "its prefix must be a lowercase RFC 1123 subdomain of at most 253 characters"
    if not name or len(name) > 63 or not _QUALIFIED_NAME_RE.match(name):
        return (
            "its name part must be at most 63 characters of [A-Za-z0-9-_.], "
            "starting and ending with a letter or digit"
        )
    return None


def _metadata_problems(obj: Mapping[str, Any]) -> Iterator[_Found]:
    """Name and label syntax, which the bundled schemas leave to the API server.

    Only values of the right type are looked at: type errors come from the schemas.
    """
    if "metadata" not in obj:
        yield (), "missing required field 'metadata'"
        return
    meta = obj["metadata"]
    if not isinstance(meta, Mapping):
        return
    name = meta.get("name")
    if "name" not in meta:
        yield ("metadata",), "missing required field 'name'"
    elif isinstance(name, str) and (len(name) > 253 or not _DNS_SUBDOMAIN_RE.match(name)):
        yield (
            ("metadata", "name"),
            f"{_show(name)} is not a valid name: it must be a lowercase RFC 1123 subdomain "
            "(a-z, 0-9, '-', '.') of at most 253 characters",
        )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and (len(namespace) > 63 or not _DNS_LABEL_RE.match(namespace)):
        yield (
            ("metadata", "namespace"),
            f"{_show(namespace)} is not a valid namespace: it must be a lowercase RFC 1123 "
            "label (a-z, 0-9, '-') of at most 63 characters",
        )
    for section in ("labels", "annotations"):
        entries = meta.get(section)
        if not isinstance(entries, Mapping):
            continue
        for key, value in entries.items():
            if not isinstance(key, str):
                continue
            where = ("metadata", section, key)
            why = _qualified_name_problem(key)
            if why:
                yield where, f"invalid {section[:-1]} key {_show(key)}: {why}"
            if (
                section == "labels"
                and isinstance(value, str)
                and (len(value) > 63 or not _LABEL_VALUE_RE.match(value))
            ):
                yield (
                    where,
                    f"invalid label value {_show(value)}: at most 63 characters of "
                    "[A-Za-z0-9-_.], starting and ending with a letter or digit",
                )


# --------------------------------------------------------------------------------------------
# Error messages


_IDENTIFIER_RE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")
_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_MAX_SHOWN = 60


def _path_sort_key(parts: _Path) -> tuple[tuple[int, int, str], ...]:
    """Indexes in numeric order ([2] before [10]); the parent before its children."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in parts)


def _format_path(parts: Iterable[str | int]) -> str:
    """``spec.resourceGroups[0].name``; keys that are not identifiers are quoted:
    ``spec.hard["requests.nvidia.com/gpu"]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER_RE.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _show(value: Any) -> str:
    """A short, one-line rendering of a value for messages."""
    if isinstance(value, str):
        if len(value) > _MAX_SHOWN:
            value = value[: _MAX_SHOWN - 3] + "..."
        return repr(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def _show_types(types: Any) -> str:
    if isinstance(types, str):
        types = [types]
    shown = [t for t in types if t != "null"] or list(types)
    return " or ".join(repr(t) for t in shown)


def _show_choices(values: Iterable[Any]) -> str:
    shown = [_show(v) for v in values if v is not None]
    if len(shown) > 12:
        shown = [*shown[:12], "..."]
    return ", ".join(shown)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


def _messages(error: ValidationError) -> Iterator[_Found]:
    """(path, message) for one jsonschema error, concise and on one line."""
    path: _Path = tuple(error.absolute_path)
    keyword = error.validator
    value: Any = error.validator_value
    instance: Any = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}

    if keyword == "additionalProperties" and value is False and isinstance(instance, Mapping):
        known = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        for key in instance:
            if key not in known and not any(re.search(p, key) for p in patterns):
                yield path, f"unknown field {_show(key)}"
        return
    if keyword == "required" and isinstance(instance, Mapping):
        for name in value:
            if name not in instance:
                yield path, f"missing required field {_show(name)}"
        return
    if keyword in ("anyOf", "oneOf"):
        context = list(error.context or ())
        if keyword == "oneOf" and not context and instance is None:
            # The bundled schemas make every branch of a union (IntOrString, Quantity)
            # nullable, so null matches all of them; the API server takes null as unset.
            return
        same_level_types = [e for e in context if e.validator == "type" and not e.relative_path]
        if context and len(same_level_types) == len(context):
            types = [t for e in context for t in _as_list(e.validator_value)]
            yield path, f"{_show(instance)} is not of type {_show_types(dict.fromkeys(types))}"
            return
        best = best_match(context) if context else None
        if best is None or (best.validator in ("anyOf", "oneOf") and not best.context):
            yield path, f"{_show(instance)} does not match exactly one of the allowed forms"
            return
        yield from _messages(best)
        return
    if keyword == "not":
        if isinstance(value, Mapping) and set(value) == {"required"}:
            fields = " and ".join(repr(f) for f in value["required"])
            yield path, f"fields {fields} must not all be set"
        else:
            yield path, f"{_show(instance)} is not allowed here"
        return
    message: str
    if keyword == "type":
        message = f"{_show(instance)} is not of type {_show_types(value)}"
    elif keyword == "enum":
        message = f"{_show(instance)} is not one of {_show_choices(value)}"
    elif keyword == "const":
        message = f"{_show(instance)} must be {_show(value)}"
    elif keyword == "pattern":
        if value == _QUANTITY_PATTERN:
            message = f"{_show(instance)} is not a valid quantity (such as '16', '500m', '64Gi')"
        else:
            message = f"{_show(instance)} does not match the pattern {value!r}"
    elif keyword == "maxLength":
        message = f"{_show(instance)} is too long: at most {value} characters"
    elif keyword == "minLength":
        message = f"{_show(instance)} is too short: at least {value} characters"
    elif keyword == "maxItems":
        message = f"has {len(instance)} items: at most {value} allowed"
    elif keyword == "minItems":
        message = f"has {len(instance)} items: at least {value} required"
    elif keyword == "maxProperties":
        message = f"has {len(instance)} fields: at most {value} allowed"
    elif keyword == "minProperties":
        message = f"has {len(instance)} fields: at least {value} required"
    else:
        message = _one_line(error.message)
    yield path, message


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


# --------------------------------------------------------------------------------------------
# CRD schemas -> Draft 2020-12


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
                yield ValidationError(f"duplicate entry {_show(item)}", path=(index,))
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
                shown = ", ".join(f"{n}={_show(v)}" for n, v in zip(names, values, strict=True))
                yield ValidationError(f"duplicate entry with {shown}", path=(index,))
            seen.add(key)


_CrdValidatorClass: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
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
            types = _as_list(out["type"])
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


def _convert_crd_root(schema: Mapping[str, Any]) -> dict[str, Any]:
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
# CRD loading


class _YamlLoader(_BaseLoader):
    """Safe loader that also reads a bare ``=`` (PyYAML's value tag) as a string."""


def _construct_value(loader: Any, node: yaml.Node) -> str:
    return str(node.value)


_YamlLoader.add_constructor("tag:yaml.org,2002:value", _construct_value)


@dataclass(slots=True)
class _Crd:
    name: str
    group: str
    kind: str
    scope: str
    source: Path
    schemas: dict[str, Mapping[str, Any]]  # version -> openAPIV3Schema
    served: tuple[str, ...]
    raw: Mapping[str, Any] = field(repr=False)


def _source_files(source: Path) -> list[Path]:
    if source.is_dir():
        return sorted(
            p
            for p in source.rglob("*")
            if p.is_file() and p.suffix.lower() in (".yaml", ".yml", ".json")
        )
    if source.is_file():
        return [source]
    raise CrdLoadError(f"{source}: no such file or folder")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CrdLoadError(f"{path}: cannot read: {exc}") from exc


def _read_documents(path: Path, raw: bytes) -> list[Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CrdLoadError(f"{path}: cannot read: {exc}") from exc
    try:
        if path.suffix.lower() == ".json":
            return [json.loads(text)]
        return crd_cache.documents(raw, lambda: list(yaml.load_all(text, Loader=_YamlLoader)))
    except (yaml.YAMLError, ValueError) as exc:
        raise CrdLoadError(f"{path}: not valid YAML/JSON: {_one_line(str(exc))}") from exc


_PARSED: dict[tuple[Path, bytes], tuple[_Crd, ...]] = {}
"""CRD files parsed in this process, by path and content digest: parsing the Argo Workflows
CRDs alone takes seconds, and a process (a test run, `diff` rendering two sides) builds several
validators over the same files. The parsed CRDs are never mutated."""


def _parsed_crds(path: Path, raw: bytes) -> tuple[_Crd, ...]:
    key = (path, hashlib.sha256(raw).digest())
    found = _PARSED.get(key)
    if found is None:
        found = tuple(
            crd for document in _read_documents(path, raw) for crd in _crds_in(document, path)
        )
        _PARSED[key] = found
    return found


def _crds_in(document: Any, path: Path) -> Iterator[_Crd]:
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
    yield _Crd(
        name=str(name or f"{names.get('plural', crd_kind.lower())}.{group}"),
        group=group,
        kind=crd_kind,
        scope=str(spec.get("scope", "Namespaced")),
        source=path,
        schemas=schemas,
        served=tuple(served),
        raw=spec,
    )


# --------------------------------------------------------------------------------------------
# The validator


class _Validator(Protocol):
    def iter_errors(self, instance: Any) -> Iterable[ValidationError]: ...


@dataclass(frozen=True, slots=True)
class _Compiled:
    validator: _Validator
    gvks: frozenset[tuple[str, str, str]]  # (group, version, kind) the schema is for


def _split_api_version(api_version: str) -> tuple[str, str] | None:
    group, slash, version = api_version.rpartition("/")
    if not version or (slash and not group) or "/" in group or " " in api_version:
        return None
    return group, version


class OutputValidator:
    """Validates rendered objects; compile once, call many times."""

    def __init__(self, crd_sources: Sequence[Path] = ()) -> None:
        self._crds: dict[tuple[str, str], _Crd] = {}
        self._registries: dict[str, Registry[Any]] = {}
        self._builtin: dict[tuple[str, str], _Compiled | None] = {}
        self._custom: dict[tuple[str, str, str], _Validator] = {}
        # CRD files are read now but parsed on demand: parsing every shipped CRD (22 MB, mostly
        # Argo Workflows) takes seconds, and a render needs a handful. A file is parsed when its
        # bytes mention both the group and the kind looked up, a cheap superset test.
        self._unparsed: dict[Path, bytes] = {}
        self._searched: set[tuple[str, str]] = set()
        for source in crd_sources:
            for path in _source_files(Path(source)):
                self._unparsed.setdefault(path, _read_bytes(path))

    def _parse(self, path: Path) -> None:
        raw = self._unparsed.pop(path)
        for crd in _parsed_crds(path, raw):
            self._add_crd(crd)

    def _load_matching(self, group: str, kind: str) -> None:
        if (group, kind) in self._searched:
            return
        self._searched.add((group, kind))
        needles = (group.encode(), kind.encode())
        for path in sorted(self._unparsed):
            raw = self._unparsed[path]
            if all(needle in raw for needle in needles):
                self._parse(path)

    def load_all(self) -> None:
        """Parse every CRD source now; raises CrdLoadError for the first broken one."""
        for path in sorted(self._unparsed):
            self._parse(path)

    def _add_crd(self, crd: _Crd) -> None:
        key = (crd.group, crd.kind)
        existing = self._crds.get(key)
        if existing is not None and existing.raw != crd.raw:
            raise CrdLoadError(
                f"{crd.source}: CustomResourceDefinition {crd.name} is also defined, "
                f"differently, in {existing.source}"
            )
        if existing is None:
            self._crds[key] = crd

    # -- public API ---------------------------------------------------------------------------

    def known_kinds(self) -> set[tuple[str, str]]:
        """(apiVersion, kind) for every served version of the loaded CRDs."""
        self.load_all()
        return {
            (f"{crd.group}/{version}", crd.kind)
            for crd in self._crds.values()
            for version in crd.served
        }

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        """Whether a loaded CRD's kind is namespaced; None if unknown or built-in."""
        parts = _split_api_version(api_version)
        if parts:
            self._load_matching(parts[0], kind)
        crd = self._crds.get((parts[0], kind)) if parts else None
        return None if crd is None else crd.scope == "Namespaced"

    def validate(self, obj: Mapping[str, Any], kubernetes_version: str) -> list[SchemaProblem]:
        """Every schema problem of one rendered object, sorted by path then message.

        Raises UnsupportedKubernetesVersion when no bundled schemas cover the cluster version.
        """
        schema_dir, minor = _schema_dir_for(kubernetes_version)
        if not isinstance(obj, Mapping):
            return [SchemaProblem("", f"{_show(obj)} is not an object")]
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        head: list[SchemaProblem] = []
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if key not in obj:
                head.append(SchemaProblem("", f"missing required field '{key}'"))
            elif not isinstance(value, str) or not value:
                head.append(SchemaProblem(key, f"{_show(value)} is not a non-empty string"))
        if head:
            return head
        assert isinstance(api_version, str) and isinstance(kind, str)
        parts = _split_api_version(api_version)
        if parts is None:
            return [
                SchemaProblem(
                    "apiVersion", f"{_show(api_version)} is not 'group/version' or 'version'"
                )
            ]
        group, version = parts

        if self._unparsed and group and group not in _KNOWN_BUILTIN_GROUPS:
            # no CRD can define a kind in a built-in group, so built-ins never trigger parsing
            self._load_matching(group, kind)
        crd = self._crds.get((group, kind))
        compiled: _Validator
        if crd is not None:
            if version not in crd.served:
                served = ", ".join(crd.served) or "none"
                return [
                    SchemaProblem(
                        "apiVersion",
                        f"{api_version} {kind} is not served by CRD {crd.name} "
                        f"(from {crd.source}); served versions: {served}",
                    )
                ]
            compiled = self._custom_validator(crd, version)
        elif _is_builtin_group(group):
            builtin = self._builtin_validator(schema_dir, group, version, kind)
            if builtin is None:
                message = f"no schema for {api_version} {kind} in Kubernetes {minor}"
                if group not in _KNOWN_BUILTIN_GROUPS:
                    message += " (if it is a custom resource, pass its CRDs with --crds)"
                return [SchemaProblem("", message)]
            compiled = builtin.validator
        else:
            return [
                SchemaProblem(
                    "",
                    f"no schema for {api_version} {kind}: pass the operator's CRDs with --crds",
                )
            ]

        found: set[_Found] = set(_metadata_problems(obj))
        for error in compiled.iter_errors(obj):
            found.update(_messages(error))
        ordered = sorted(found, key=lambda f: (_path_sort_key(f[0]), f[1]))
        return [SchemaProblem(_format_path(path), message) for path, message in ordered]

    # -- compilation --------------------------------------------------------------------------

    def _registry(self, schema_dir: str) -> Registry[Any]:
        registry = self._registries.get(schema_dir)
        if registry is None:
            definitions = json.loads(
                (_schema_root() / schema_dir / "_definitions.json").read_bytes()
            )
            resource = Resource.from_contents(definitions, default_specification=DRAFT202012)
            registry = Registry().with_resource(_DEFINITIONS_URI, resource).crawl()
            self._registries[schema_dir] = registry
        return registry

    def _builtin_validator(
        self, schema_dir: str, group: str, version: str, kind: str
    ) -> _Compiled | None:
        file_name = _schema_file_name(group, version, kind)
        key = (schema_dir, file_name)
        if key in self._builtin:
            compiled = self._builtin[key]
        else:
            compiled = None
            schema_file = _schema_root() / schema_dir / file_name
            if schema_file.is_file():
                schema = json.loads(schema_file.read_bytes())
                gvks = frozenset(
                    (g.get("group", ""), g.get("version", ""), g.get("kind", ""))
                    for g in schema.get("x-kubernetes-group-version-kind", ())
                )
                validator = jsonschema.validators.Draft202012Validator(
                    schema, registry=self._registry(schema_dir)
                )
                compiled = _Compiled(validator, gvks)
            self._builtin[key] = compiled
        # The file name keeps only the group's first label: check the group really matches.
        if compiled is None or (group, version, kind) not in compiled.gvks:
            return None
        return compiled

    def _custom_validator(self, crd: _Crd, version: str) -> _Validator:
        key = (crd.group, crd.kind, version)
        validator = self._custom.get(key)
        if validator is None:
            schema = _convert_crd_root(crd.schemas[version])
            validator = _CrdValidatorClass(schema)
            self._custom[key] = validator
        return validator
