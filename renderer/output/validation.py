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

import copy
import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jsonschema.validators
import jsonschema_rs
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from renderer.findings.diagnostics import Location
from renderer.output import crd_cache
from renderer.output.api_limits import ObjectCheck, marshalled, object_problems
from renderer.output.cel import CelViolation, CompiledRules, UncheckedRule, compile_rules
from renderer.output.crds import (
    Crd,
    CrdSet,
    CrdValidatorClass,
    compile_fast,
    convert_crd_root,
    parsed_ahead,
)
from renderer.output.defaults import apply_defaults, defaulted
from renderer.output.kubernetes_schemas import (
    DEFINITIONS_URI,
    KNOWN_BUILTIN_GROUPS,
    is_builtin_group,
    schema_dir_for,
    schema_file_name,
    schema_root,
)
from renderer.output.schema_messages import Found, format_path, messages, path_sort_key, show
from renderer.output.schema_store import SchemaStore

__all__ = [
    "Checked",
    "OutputValidator",
    "Pin",
    "SchemaProblem",
    "Unchecked",
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


@functools.lru_cache(maxsize=1 << 16)
def _qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a valid label or annotation key (``[prefix/]name``), or None. Kept
    per key: a platform's objects repeat a few dozen keys hundreds of thousands of times."""
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


class _FastCheck(Protocol):
    def is_valid(self, instance: Any) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Compiled:
    validator: _Validator
    gvks: frozenset[tuple[str, str, str]]  # (group, version, kind) the schema is for
    fast: _FastCheck | None
    """The same schema compiled by jsonschema-rs: it says whether an object is valid ~40x
    faster, and only an object it refuses goes through `validator` for the problems' words
    (docs/output-validation.md, "The compiled check"). None for a CRD schema it is not proven
    to judge alike (`crds.compile_fast`)."""

    def errors(self, instance: Any, *, plain: bool = True) -> Iterable[ValidationError]:
        """jsonschema's errors for `instance`, none without asking it when jsonschema-rs finds
        it valid; `plain`: whether `instance` is known to be plain JSON (`defaulted`)."""
        if plain and self.fast is not None:
            try:
                if self.fast.is_valid(instance):
                    return ()
            except (ValueError, TypeError):  # a value JSON has no type for: jsonschema says
                pass
        return self.validator.iter_errors(instance)


def _split_api_version(api_version: str) -> tuple[str, str] | None:
    group, slash, version = api_version.rpartition("/")
    if not version or (slash and not group) or "/" in group or " " in api_version:
        return None
    return group, version


@dataclass(frozen=True, slots=True)
class Pin:
    """The operator release a cluster runs for some kinds, and the line that pins it.

    `operator` names the store's folder (the add-on key, or a name of its own for an operator
    no cluster pins); `release` is None when the cluster pins no version of it.
    """

    operator: str
    title: str
    release: str | None = None
    where: Location | None = None


@dataclass(frozen=True, slots=True)
class Unchecked:
    """An object no schema was found for: which kind, for which release, and what the store
    holds of that operator instead."""

    api_version: str
    kind: str
    pin: Pin
    available: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Checked:
    """What checking one object found: its problems, or that no schema could check it; for a
    custom kind also the `x-kubernetes-validations` rules it breaks (`cel`, transition rules
    against the old object included) and the rules of its CRD that cannot be evaluated."""

    problems: list[SchemaProblem]
    """Every problem found, the limits of `renderer.output.api_limits` and the validator's
    further checks included, whether or not a schema was found."""
    unchecked: Unchecked | None = None
    cel: tuple[CelViolation, ...] = ()
    cel_unchecked: tuple[UncheckedRule, ...] = ()
    crd: str | None = None
    """The CRD that checked it (`resourceflavors.kueue.x-k8s.io`), None for a built-in kind."""


class OutputValidator:
    """Validates rendered objects; compile once, call many times.

    Custom kinds are looked up, in order, in the CRD files given to the constructor (`--crds`,
    then the fallback $GPUPLANE_CRDS), in the repository's own `schemas:` list, and in its schema
    store for the release the object's cluster pins (`for_repository`). The first that defines a
    kind wins; a repository's own sources never replace what the command line gave.
    """

    def __init__(
        self,
        crd_sources: Sequence[Path] = (),
        *,
        fallback_sources: Sequence[Path] = (),
        strict_schemas: bool = False,
    ) -> None:
        self.strict_schemas = strict_schemas
        self._explicit: list[CrdSet] = [CrdSet(crd_sources)]
        if fallback_sources:
            self._explicit.append(CrdSet(fallback_sources))
        self._store: SchemaStore | None = None
        self._store_releases: dict[str, tuple[str, ...]] | None = None
        self._store_sets: dict[tuple[str, str], CrdSet] = {}
        self._registries: dict[str, Registry[Any]] = {}
        self._builtin: dict[tuple[str, str], _Compiled | None] = {}
        self._fast_registries: dict[str, Any] = {}
        self._definitions_read: dict[str, Any] = {}
        self._custom: dict[tuple[str, str, str], _Compiled] = {}
        self._cel: dict[tuple[str, str, str], CompiledRules] = {}
        self._checks: tuple[ObjectCheck, ...] = ()

    def with_checks(self, *checks: ObjectCheck) -> OutputValidator:
        """This validator with further checks run on every object, whatever its kind (the
        pipeline adds the quantity ranges, which need the model); compiled schemas are shared."""
        other = copy.copy(self)
        other._checks = (*self._checks, *checks)
        return other

    def for_repository(self, root: Path, sources: Sequence[Path] = ()) -> OutputValidator:
        """This validator with a repository's `schemas:` files and its schema store added after
        the explicit sources; compiled schemas are shared. Raises CrdLoadError for a source that
        cannot be read."""
        other = copy.copy(self)  # shares the compiled-schema caches, by reference
        other._explicit = [*self._explicit, CrdSet(sources)] if sources else self._explicit
        other._store = SchemaStore(root)
        other._store_releases = None
        other._store_sets = {}
        return other

    def _find_explicit(self, group: str, kind: str) -> Crd | None:
        for crd_set in self._explicit:
            crd = crd_set.find(group, kind)
            if crd is not None:
                return crd
        return None

    def store_releases(self) -> dict[str, tuple[str, ...]]:
        """operator -> the releases the repository's schema store holds, oldest first."""
        if self._store_releases is None:
            self._store_releases = self._store.releases() if self._store else {}
        return self._store_releases

    def _find_stored(self, group: str, kind: str, pin: Pin) -> Crd | None:
        """The kind's CRD in the store's release the pin names (the newest one when it names
        none); None when the store has no such release or the release lacks the kind."""
        available = self.store_releases().get(pin.operator, ())
        release = pin.release or (available[-1] if available else None)
        if release is None or release not in available or self._store is None:
            return None
        crd_set = self._store_sets.get((pin.operator, release))
        if crd_set is None:
            # a release is small once compact, and a broken store file must not pass as a
            # missing kind: the whole release is parsed when first used
            crd_set = CrdSet(self._store.files(pin.operator, release))
            self._store_sets[(pin.operator, release)] = crd_set
            crd_set.load_all()
        return crd_set.find(group, kind)

    def has_custom_schemas(self) -> bool:
        """Whether any CRD source or schema store release is there to look custom kinds up in."""
        return any(self._explicit) or any(self.store_releases().values())

    def slow_crds(self) -> list[tuple[Path, bytes]]:
        """The explicit CRD files `parse_ahead` would parse from YAML (not parsed in this
        process, not in the disk cache), largest first: what a worker process can parse
        meanwhile (`crds.parsed_ahead`)."""
        files = {
            path: raw
            for crd_set in self._explicit
            for path, raw in crd_set.unparsed()
            if path.suffix.lower() != ".json" and not crd_cache.holds(raw)
        }
        return sorted(files.items(), key=lambda item: (-len(item[1]), item[0]))

    def parse_ahead(self) -> None:
        """Parse every explicit CRD file now, into this process's memo only (`parsed_ahead`): a
        lookup then finds its file parsed, and a broken file, or two that define a kind apart,
        are an error only where a lookup meets them, as if nothing had been parsed ahead."""
        for crd_set in self._explicit:
            for path, raw in crd_set.unparsed():
                parsed_ahead(path, raw)

    def load_all(self) -> None:
        """Parse every explicit CRD source now; raises CrdLoadError for the first broken one."""
        for crd_set in self._explicit:
            crd_set.load_all()

    # -- public API ---------------------------------------------------------------------------

    def known_kinds(self) -> set[tuple[str, str]]:
        """(apiVersion, kind) for every served version of the explicitly given CRDs."""
        self.load_all()
        return {
            (f"{crd.group}/{version}", crd.kind)
            for crd_set in self._explicit
            for crd in crd_set.crds.values()
            for version in crd.served
        }

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        """Whether an explicitly given CRD's kind is namespaced; None if unknown or built-in."""
        parts = _split_api_version(api_version)
        crd = self._find_explicit(parts[0], kind) if parts else None
        return None if crd is None else crd.scope == "Namespaced"

    def validate(self, obj: Mapping[str, Any], kubernetes_version: str) -> list[SchemaProblem]:
        """Every schema problem of one rendered object, sorted by path then message; a custom
        kind without a schema is a problem here.

        Raises UnsupportedKubernetesVersion when no bundled schemas cover the cluster version.
        """
        checked = self.check(obj, kubernetes_version)
        if checked.unchecked is not None:
            u = checked.unchecked
            return [
                SchemaProblem(
                    "",
                    f"no schema for {u.api_version} {u.kind}: pass the operator's CRDs with --crds",
                )
            ]
        return checked.problems

    def check(
        self,
        obj: Mapping[str, Any],
        kubernetes_version: str,
        pin_of: Callable[[str, str], Pin] | None = None,
        old_of: Callable[[], Mapping[str, Any] | None] | None = None,
    ) -> Checked:
        """Check one rendered object against the schema its cluster would use: `pin_of(group,
        kind)` says which operator release the cluster runs for a custom kind, for the store.
        A custom object is defaulted first, as the API server defaults it, then checked against
        its schema and its CRD's CEL rules; `old_of()` gives the object it replaces (None: it is
        created), asked for only when the CRD has transition rules.

        Raises UnsupportedKubernetesVersion when no bundled schemas cover the cluster version.
        """
        checked = self._check(obj, kubernetes_version, pin_of, old_of)
        if not isinstance(obj, Mapping):
            return checked
        encoded = marshalled(obj)
        found = set(object_problems(obj, encoded))
        for extra in self._checks:
            found.update(extra(obj, encoded))
        if not found:
            return checked
        known = {(p.path, p.message) for p in checked.problems}
        added = [
            SchemaProblem(format_path(path), message)
            for path, message in sorted(found, key=lambda f: (path_sort_key(f[0]), f[1]))
            if (format_path(path), message) not in known
        ]
        return dataclasses.replace(checked, problems=[*checked.problems, *added])

    def _check(
        self,
        obj: Mapping[str, Any],
        kubernetes_version: str,
        pin_of: Callable[[str, str], Pin] | None,
        old_of: Callable[[], Mapping[str, Any] | None] | None,
    ) -> Checked:
        schema_dir, minor = schema_dir_for(kubernetes_version)
        if not isinstance(obj, Mapping):
            return Checked([SchemaProblem("", f"{show(obj)} is not an object")])
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        head: list[SchemaProblem] = []
        for key, value in (("apiVersion", api_version), ("kind", kind)):
            if key not in obj:
                head.append(SchemaProblem("", f"missing required field '{key}'"))
            elif not isinstance(value, str) or not value:
                head.append(SchemaProblem(key, f"{show(value)} is not a non-empty string"))
        if head:
            return Checked(head)
        assert isinstance(api_version, str) and isinstance(kind, str)
        parts = _split_api_version(api_version)
        if parts is None:
            return Checked(
                [
                    SchemaProblem(
                        "apiVersion", f"{show(api_version)} is not 'group/version' or 'version'"
                    )
                ]
            )
        group, version = parts

        crd, pin = self._crd_of(group, kind, pin_of)
        if crd is None and pin is not None:
            available = self.store_releases().get(pin.operator, ())
            return Checked([], Unchecked(api_version, kind, pin, available))
        if crd is not None:
            if version not in crd.served:
                served = ", ".join(crd.served) or "none"
                return Checked(
                    [
                        SchemaProblem(
                            "apiVersion",
                            f"{api_version} {kind} is not served by CRD {crd.name} "
                            f"(from {crd.source}); served versions: {served}",
                        )
                    ]
                )
            custom = self._custom_validator(crd, version)
            return self._check_custom(obj, crd, version, custom, old_of)
        builtin = self._builtin_validator(schema_dir, group, version, kind)
        if builtin is None:
            message = f"no schema for {api_version} {kind} in Kubernetes {minor}"
            if group not in KNOWN_BUILTIN_GROUPS:
                message += " (if it is a custom resource, pass its CRDs with --crds)"
            return Checked([SchemaProblem("", message)])

        found: set[Found] = set(_metadata_problems(obj))
        for error in builtin.errors(obj):
            found.update(messages(error))
        ordered = sorted(found, key=lambda f: (path_sort_key(f[0]), f[1]))
        return Checked([SchemaProblem(format_path(path), message) for path, message in ordered])

    def reads_old_self(
        self,
        obj: Mapping[str, Any],
        pin_of: Callable[[str, str], Pin] | None = None,
    ) -> bool:
        """Whether `check` of `obj` can read the object it replaces: its CRD's version has a
        rule that names `oldSelf` (one gpuplane evaluates or one it cannot). False for a
        built-in kind and for a kind or version no CRD here serves, whose check reads nothing
        old (it says why it checked nothing)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return False
        parts = _split_api_version(api_version)
        if parts is None:
            return False
        group, version = parts
        crd, _ = self._crd_of(group, kind, pin_of)
        if crd is None or version not in crd.served:
            return False
        rules = self.cel_rules(crd, version)
        return rules.transition or any(rule.transition for rule in rules.unchecked)

    def _crd_of(
        self, group: str, kind: str, pin_of: Callable[[str, str], Pin] | None
    ) -> tuple[Crd | None, Pin | None]:
        """The CRD a custom kind is checked against: one given with --crds, else the store's
        release the cluster pins (then with that pin, also when the store lacks the kind);
        (None, None) for a built-in kind. No CRD can define a kind in a built-in group, so
        built-ins never trigger parsing."""
        crd = None if group in KNOWN_BUILTIN_GROUPS else self._find_explicit(group, kind)
        if crd is not None or is_builtin_group(group):
            return crd, None
        pin = pin_of(group, kind) if pin_of else Pin(group, group)
        return self._find_stored(group, kind, pin), pin

    def _check_custom(
        self,
        obj: Mapping[str, Any],
        crd: Crd,
        version: str,
        compiled: _Compiled,
        old_of: Callable[[], Mapping[str, Any] | None] | None,
    ) -> Checked:
        schema = crd.schemas[version]
        body, plain = defaulted(obj, schema)
        found: set[Found] = set(_metadata_problems(body))
        for error in compiled.errors(body, plain=plain):
            found.update(messages(error))
        ordered = sorted(found, key=lambda f: (path_sort_key(f[0]), f[1]))
        problems = [SchemaProblem(format_path(path), message) for path, message in ordered]
        rules = self.cel_rules(crd, version)
        old = old_of() if rules.transition and old_of is not None else None
        if old is not None:
            old = apply_defaults(old, schema)
        if problems:  # the rules run on an object of the schema's types
            return Checked(problems, None, (), rules.unchecked, crd.name)
        evaluation = rules.evaluate(body, old)
        unchecked = (*rules.unchecked, *evaluation.unchecked)
        return Checked(problems, None, tuple(evaluation.violations), unchecked, crd.name)

    def cel_rules(self, crd: Crd, version: str) -> CompiledRules:
        """The CEL rules of one CRD version, compiled once per validator family."""
        key = (str(crd.source), crd.name, version)
        rules = self._cel.get(key)
        if rules is None:
            rules = compile_rules(crd.schemas[version])
            self._cel[key] = rules
        return rules

    # -- compilation --------------------------------------------------------------------------

    def _definitions(self, schema_dir: str) -> Any:
        """A Kubernetes version's `_definitions.json`, read once for both validators."""
        definitions = self._definitions_read.get(schema_dir)
        if definitions is None:
            definitions = json.loads(
                (schema_root() / schema_dir / "_definitions.json").read_bytes()
            )
            self._definitions_read[schema_dir] = definitions
        return definitions

    def _registry(self, schema_dir: str) -> Registry[Any]:
        registry = self._registries.get(schema_dir)
        if registry is None:
            definitions = self._definitions(schema_dir)
            resource = Resource.from_contents(definitions, default_specification=DRAFT202012)
            registry = Registry().with_resource(DEFINITIONS_URI, resource).crawl()
            self._registries[schema_dir] = registry
        return registry

    def _fast_registry(self, schema_dir: str) -> Any:
        registry = self._fast_registries.get(schema_dir)
        if registry is None:
            registry = jsonschema_rs.Registry([(DEFINITIONS_URI, self._definitions(schema_dir))])
            self._fast_registries[schema_dir] = registry
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
            try:
                is_file = schema_file.is_file()
            except OSError:  # a kind or version too long for a file name has no schema file
                is_file = False
            if is_file:
                schema = json.loads(schema_file.read_bytes())
                gvks = frozenset(
                    (g.get("group", ""), g.get("version", ""), g.get("kind", ""))
                    for g in schema.get("x-kubernetes-group-version-kind", ())
                )
                validator = jsonschema.validators.Draft202012Validator(
                    schema, registry=self._registry(schema_dir)
                )
                fast = jsonschema_rs.Draft202012Validator(
                    schema, registry=self._fast_registry(schema_dir)
                )
                compiled = _Compiled(validator, gvks, fast)
            self._builtin[key] = compiled
        # The file name keeps only the group's first label: check the group really matches.
        if compiled is None or (group, version, kind) not in compiled.gvks:
            return None
        return compiled

    def _custom_validator(self, crd: Crd, version: str) -> _Compiled:
        key = (str(crd.source), crd.name, version)
        compiled = self._custom.get(key)
        if compiled is None:
            schema = convert_crd_root(crd.schemas[version])
            compiled = _Compiled(CrdValidatorClass(schema), frozenset(), compile_fast(schema))
            self._custom[key] = compiled
        return compiled
