"""Schema validation of rendered Kubernetes objects, before anything is written.

Built-in kinds are checked in strict mode (unknown fields are errors) against the JSON schemas that
kubernetes-validate bundles for each Kubernetes minor version; custom kinds against the
``openAPIV3Schema`` of the CustomResourceDefinitions the user passes. An object whose kind has no
schema is a problem, never a silent pass.

kubernetes-validate's own ``validate()`` is not used: it re-reads and re-parses its schema files on
every call and compares versions as strings. Its data files are read directly instead, and every
schema is compiled once per :class:`OutputValidator` (lazily: most kinds are never used).
The bundled schemas are found by `renderer.output.kubernetes_schemas`, the CRDs read and converted
by `renderer.output.crds`, the problems worded by `renderer.output.schema_messages`.
See docs/output-validation.md for the design and its limits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jsonschema.validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from renderer.output.crds import (
    Crd,
    CrdLoadError,
    CrdValidatorClass,
    convert_crd_root,
    parsed_crds,
    read_bytes,
    source_files,
)
from renderer.output.kubernetes_schemas import (
    DEFINITIONS_URI,
    KNOWN_BUILTIN_GROUPS,
    is_builtin_group,
    schema_dir_for,
    schema_file_name,
    schema_root,
)
from renderer.output.schema_messages import Found, format_path, messages, path_sort_key, show

__all__ = [
    "OutputValidator",
    "SchemaProblem",
]


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One way a rendered object does not match its schema."""

    path: str  # dotted with indexes: "spec.resourceGroups[0].flavors[1].name"; "" for the root
    message: str  # one line, human-readable


# --------------------------------------------------------------------------------------------
# Metadata checks (names, labels), applied to every object

_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


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


def _metadata_problems(obj: Mapping[str, Any]) -> Iterator[Found]:
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
            f"{show(name)} is not a valid name: it must be a lowercase RFC 1123 subdomain "
            "(a-z, 0-9, '-', '.') of at most 253 characters",
        )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and (len(namespace) > 63 or not _DNS_LABEL_RE.match(namespace)):
        yield (
            ("metadata", "namespace"),
            f"{show(namespace)} is not a valid namespace: it must be a lowercase RFC 1123 "
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
                yield where, f"invalid {section[:-1]} key {show(key)}: {why}"
            if (
                section == "labels"
                and isinstance(value, str)
                and (len(value) > 63 or not _LABEL_VALUE_RE.match(value))
            ):
                yield (
                    where,
                    f"invalid label value {show(value)}: at most 63 characters of "
                    "[A-Za-z0-9-_.], starting and ending with a letter or digit",
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
        self._crds: dict[tuple[str, str], Crd] = {}
        self._registries: dict[str, Registry[Any]] = {}
        self._builtin: dict[tuple[str, str], _Compiled | None] = {}
        self._custom: dict[tuple[str, str, str], _Validator] = {}
        # CRD files are read now but parsed on demand: parsing every shipped CRD (22 MB, mostly
        # Argo Workflows) takes seconds, and a render needs a handful. A file is parsed when its
        # bytes mention both the group and the kind looked up, a cheap superset test.
        self._unparsed: dict[Path, bytes] = {}
        self._searched: set[tuple[str, str]] = set()
        for source in crd_sources:
            for path in source_files(Path(source)):
                self._unparsed.setdefault(path, read_bytes(path))

    def _parse(self, path: Path) -> None:
        raw = self._unparsed.pop(path)
        for crd in parsed_crds(path, raw):
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

    def _add_crd(self, crd: Crd) -> None:
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
        schema_dir, minor = schema_dir_for(kubernetes_version)
        if not isinstance(obj, Mapping):
            return [SchemaProblem("", f"{show(obj)} is not an object")]
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        head: list[SchemaProblem] = []
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if key not in obj:
                head.append(SchemaProblem("", f"missing required field '{key}'"))
            elif not isinstance(value, str) or not value:
                head.append(SchemaProblem(key, f"{show(value)} is not a non-empty string"))
        if head:
            return head
        assert isinstance(api_version, str) and isinstance(kind, str)
        parts = _split_api_version(api_version)
        if parts is None:
            return [
                SchemaProblem(
                    "apiVersion", f"{show(api_version)} is not 'group/version' or 'version'"
                )
            ]
        group, version = parts

        if self._unparsed and group and group not in KNOWN_BUILTIN_GROUPS:
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
        elif is_builtin_group(group):
            builtin = self._builtin_validator(schema_dir, group, version, kind)
            if builtin is None:
                message = f"no schema for {api_version} {kind} in Kubernetes {minor}"
                if group not in KNOWN_BUILTIN_GROUPS:
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

        found: set[Found] = set(_metadata_problems(obj))
        for error in compiled.iter_errors(obj):
            found.update(messages(error))
        ordered = sorted(found, key=lambda f: (path_sort_key(f[0]), f[1]))
        return [SchemaProblem(format_path(path), message) for path, message in ordered]

    # -- compilation --------------------------------------------------------------------------

    def _registry(self, schema_dir: str) -> Registry[Any]:
        registry = self._registries.get(schema_dir)
        if registry is None:
            definitions = json.loads(
                (schema_root() / schema_dir / "_definitions.json").read_bytes()
            )
            resource = Resource.from_contents(definitions, default_specification=DRAFT202012)
            registry = Registry().with_resource(DEFINITIONS_URI, resource).crawl()
            self._registries[schema_dir] = registry
        return registry

    def _builtin_validator(
        self, schema_dir: str, group: str, version: str, kind: str
    ) -> _Compiled | None:
        file_name = schema_file_name(group, version, kind)
        key = (schema_dir, file_name)
        if key in self._builtin:
            compiled = self._builtin[key]
        else:
            compiled = None
            schema_file = schema_root() / schema_dir / file_name
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

    def _custom_validator(self, crd: Crd, version: str) -> _Validator:
        key = (crd.group, crd.kind, version)
        validator = self._custom.get(key)
        if validator is None:
            schema = convert_crd_root(crd.schemas[version])
            validator = CrdValidatorClass(schema)
            self._custom[key] = validator
        return validator
