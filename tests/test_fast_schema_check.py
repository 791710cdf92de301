"""jsonschema-rs decides whether a custom resource or an input file is valid, and only what it
refuses goes through jsonschema for the findings' words (docs/output-validation.md, "The compiled
check"): so the two must give the same verdict on every object. Proven here against the world,
not against the code's own idea of it: every CRD version of `../shared/crds`, on the objects the
example renders (`rendered/`), on upstream's example manifests (`../shared/reference`) and, for a
kind neither holds, on an object made from its schema; every input file of the example and of
`tests/cases`. Each field in turn gets a value of the wrong type, range, length or pattern (a
final newline, which Python's `$` takes and Rust's does not), a null, an unknown key, a
duplicated or a key-sharing list item (`x-kubernetes-list-type` set and map).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.inputs import schema as input_schema
from renderer.inputs.source import load_file
from renderer.output.crds import Crd, CrdSet, compile_fast, convert_crd_root
from renderer.output.defaults import apply_defaults, defaulted
from renderer.output.schema_messages import as_list
from renderer.output.validation import OutputValidator, _Compiled
from tests.conftest import INPUT_FOLDERS, REPO, SHARED_CRDS, json_paths

SHARED_REFERENCE = REPO.parent / "shared" / "reference"
K8S = "1.33"

# --- mutations ---------------------------------------------------------------------------------

COMMON: list[Any] = [None, 7, "x", True, [], {}, 1.5, 2**70, -1, "", [1], {"a": 1}]


def _typed(value: Any) -> list[Any]:
    """Values that break what a field of this value's type may hold."""
    if isinstance(value, str):
        return [
            value + "\n",  # Python's `$` matches before a final newline, Rust's does not
            "\n" + value,
            value.upper() + " !",
            value + "\x1c",  # Python's \s takes it, Rust's does not
            "\u017f" + value,  # long s: case-folds to 's'
            "A" * 300,
            value + "é",
            "0",
            "10Gi",
        ]
    if isinstance(value, bool):
        return [not value, "true", 1, 0]
    if isinstance(value, int):
        return [float(value), value + 10**6, -(value + 1), 0, -(2**70), str(value), 2**63]
    if isinstance(value, float):
        return [int(value) if value.is_integer() else value * 2, -value, value * 1e6]
    if isinstance(value, list):
        found: list[Any] = [[*value, *value[:1]], list(reversed(value)), [*value, None]]
        first = value[0] if value else None
        if isinstance(first, dict):
            for key in list(first)[:4]:  # an item that shares the keys but for one
                found.append([*value, {k: v for k, v in first.items() if k != key}])
                found.append([*value, {**first, key: "zz"}])
        return found
    if isinstance(value, dict):
        found = [{**value, "zzUnknownField": 1}]
        for key in list(value)[:3]:
            found.append({k: v for k, v in value.items() if k != key})
        return found
    return []


def _spread(items: list[Any], most: int) -> list[Any]:
    """At most `most` of `items`, evenly spread (all when there are fewer)."""
    if len(items) <= most:
        return items
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


def mutated(base: Any, most_paths: int) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, changed copy of base): for each of at most `most_paths` paths, evenly spread (and
    a third as many lists besides, for the list types), three of the typed wrong values and one
    of the common ones, in turn."""
    paths = json_paths(base)
    lists = [p for p in paths if isinstance(_at(base, p), list)]
    chosen = set(_spread(paths, most_paths)) | set(_spread(lists, max(1, most_paths // 3)))
    for index, path in enumerate(p for p in paths if p in chosen):
        typed = _typed(_at(base, path))
        values = [typed[(index + k) % len(typed)] for k in range(min(3, len(typed)))]
        if path:
            values.append(COMMON[index % len(COMMON)])
        for value in values:
            if not path:
                yield path, copy.deepcopy(value)
                continue
            changed = copy.deepcopy(base)
            _at(changed, path[:-1])[path[-1]] = copy.deepcopy(value)
            yield path, changed


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


# --- custom kinds --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crd_set() -> CrdSet:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    crds = CrdSet([SHARED_CRDS])
    crds.load_all()
    return crds


def _documents(root: Path) -> Iterator[tuple[Path, Any]]:
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        try:
            documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue
        for document in documents:
            if isinstance(document, dict):
                yield path, document


def real_objects(crds: CrdSet) -> dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]]:
    """(group, kind) -> the objects of that kind in rendered/ and ../shared/reference."""
    found: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = {}
    roots = [REPO / "rendered", SHARED_REFERENCE]
    for root in roots:
        if not root.is_dir():
            continue
        for path, document in _documents(root):
            api_version, kind = document.get("apiVersion"), document.get("kind")
            if not isinstance(api_version, str) or "/" not in api_version:
                continue
            group = api_version.rsplit("/", 1)[0]
            if (group, kind) in crds.crds and defaulted(document, {})[1]:
                found.setdefault((group, str(kind)), []).append((path, document))
    return found


_CANDIDATES = [
    "a",
    "abc",
    "a-b",
    "a.b",
    "A",
    "1",
    "10",
    "10Gi",
    "0",
    "1h",
    "@daily",
    "* * * * *",
    "http://a.b",
    "a@b.iam.gserviceaccount.com",
    "abort",
]


def synthetic(schema: Any, depth: int = 0) -> Any:
    """A value that a converted CRD schema is likely to take: enum's first, the default, the
    lowest number allowed, a string that matches the pattern; every property of an object."""
    if not isinstance(schema, dict):
        return {}
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    types = as_list(schema.get("type", []))
    if "properties" in schema or "object" in types:
        properties = schema.get("properties", {})
        keep = [k for k in schema.get("required", []) if k in properties]
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches:  # the fields the first branch requires, and no other
            keep += [k for k in branches[0].get("required", []) if k in properties]
        elif depth <= 7 and "not" not in schema:
            keep += [k for k in properties if k not in keep][:8]
        out = {k: synthetic(properties[k], depth + 1) for k in keep}
        for key in list(out)[schema.get("maxProperties", len(out)) :]:
            del out[key]
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict):
            out["k"] = synthetic(extra, depth + 1)
        return out
    if "array" in types:
        return [synthetic(schema.get("items"), depth + 1) for _ in range(schema.get("minItems", 1))]
    if "integer" in types:
        return max(1, schema.get("minimum", 1))
    if "number" in types:
        return max(1.5, schema.get("minimum", 1.5))
    if "boolean" in types:
        return True
    if "string" in types:
        pattern = schema.get("pattern")
        low, high = schema.get("minLength", 0), schema.get("maxLength", 10**9)
        for candidate in _CANDIDATES:
            if low <= len(candidate) <= high and (not pattern or re.search(pattern, candidate)):
                return candidate
        return "a" * max(low, 1)
    return "x"


def crd_bases(crd: Crd, version: str, real: list[tuple[Path, dict[str, Any]]]) -> list[Any]:
    """The objects each field of which is changed: up to three real ones (of any version of the
    kind, moved to this one) and one made from the schema."""
    api_version = f"{crd.group}/{version}"
    bases = [{**document, "apiVersion": api_version} for _, document in real[:3]]
    made = synthetic(convert_crd_root(crd.schemas[version]))
    made.update(apiVersion=api_version, kind=crd.kind)
    made["metadata"] = {"name": "made-from-schema", "namespace": "default"}
    bases.append(made)
    return bases


def test_no_crd_of_shared_crds_falls_back(crd_set: CrdSet) -> None:
    """Every CRD version upstream ships compiles for jsonschema-rs (a schema with `multipleOf`
    would stay on jsonschema, see `compile_fast`)."""
    versions = [(c, v) for c in crd_set.crds.values() for v in c.schemas]
    assert len(versions) >= 45
    for crd, version in versions:
        assert compile_fast(convert_crd_root(crd.schemas[version])) is not None, crd.name


def test_the_compiled_check_agrees_with_jsonschema_on_every_crd(crd_set: CrdSet) -> None:
    validator = OutputValidator([SHARED_CRDS])
    real = real_objects(crd_set)
    assert len(real) >= 20  # the example renders and upstream ships objects of most kinds
    rendered_kinds = {
        key for key, found in real.items() if any("rendered" in str(p) for p, _ in found)
    }
    counts: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for (group, kind), crd in sorted(crd_set.crds.items()):
        for version in crd.schemas:
            compiled = validator._custom_validator(crd, version)
            assert compiled.fast is not None
            # up to 240 fields of a kind the example renders, 80 of another, over its objects
            bases = crd_bases(crd, version, real.get((group, kind), []))
            most = (240 if (group, kind) in rendered_kinds else 80) // len(bases)
            label = f"{crd.name}/{version}"
            for base in bases:
                for path, changed in mutated(base, most):
                    body, plain = defaulted(changed, crd.schemas[version])
                    if not plain:  # an integer past 64 bits: jsonschema alone judges it
                        continue
                    valid = not any(True for _ in compiled.validator.iter_errors(body))
                    assert compiled.fast.is_valid(body) == valid, (label, path, _at(changed, path))
                    counts[label] += 1
                    refused[label] += not valid
    summary = ", ".join(f"{k} {counts[k]} ({refused[k]} refused)" for k in sorted(counts))
    print(f"\n{sum(counts.values())} changes, {sum(refused.values())} refused: {summary}")
    assert len(counts) >= 45
    assert sum(refused.values()) > sum(counts.values()) / 3
    assert sum(refused.values()) < sum(counts.values())  # and both verdicts are seen


def test_a_value_jsonschema_rs_would_misread_goes_to_jsonschema(crd_set: CrdSet) -> None:
    """A tuple is an array to jsonschema-rs but not to jsonschema: an object holding anything
    but plain JSON is checked by jsonschema alone, and keeps its findings."""
    validator = OutputValidator([SHARED_CRDS])
    queue: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "team-a"},
        "spec": {"clusterQueue": "cq"},
    }
    assert validator.validate(queue, K8S) == []
    for odd in [("cq",), float("nan"), 2**64]:
        changed = copy.deepcopy(queue)
        changed["spec"]["clusterQueue"] = odd
        assert defaulted(changed, {})[1] is False
        (problem,) = validator.validate(changed, K8S)
        assert problem.path == "spec.clusterQueue"


def test_patterns_are_read_as_python_reads_them(crd_set: CrdSet) -> None:
    """Python's `$` matches before a final newline and Rust's does not: the compiled check keeps
    Python's reading (the API server's Go regexp would refuse it; so does neither check)."""
    validator = OutputValidator([SHARED_CRDS])
    queue: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "team-a"},
        "spec": {"clusterQueue": "cq\n"},
    }
    crd = crd_set.crds[("kueue.x-k8s.io", "LocalQueue")]
    compiled = validator._custom_validator(crd, "v1beta2")
    assert compiled.fast is not None and compiled.fast.is_valid(queue)
    assert validator.validate(queue, K8S) == []
    queue["spec"]["clusterQueue"] = "CQ"
    assert not compiled.fast.is_valid(queue)
    (problem,) = validator.validate(queue, K8S)
    assert problem.path == "spec.clusterQueue" and "does not match the pattern" in problem.message


def test_findings_are_those_of_jsonschema_alone(
    crd_set: CrdSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same findings, word for word, with and without the compiled check, on changes of
    one rendered object of every custom kind the example renders."""
    fast = OutputValidator([SHARED_CRDS])
    slow = OutputValidator([SHARED_CRDS])
    compile_both = slow._custom_validator

    def python_only(crd: Crd, version: str) -> _Compiled:
        compiled = compile_both(crd, version)
        return _Compiled(compiled.validator, compiled.gvks, None)

    monkeypatch.setattr(slow, "_custom_validator", python_only)
    checked = refused = 0
    for found in real_objects(crd_set).values():
        for base in [d for p, d in found if "rendered" in str(p)][:1]:
            for _, changed in mutated(base, 60):
                expected = slow.check(changed, K8S)
                assert fast.check(changed, K8S) == expected
                checked += 1
                refused += bool(expected.problems)
    print(f"\n{checked} changes, {refused} refused: the same findings")
    assert checked > 500
    assert checked / 4 < refused < checked


def test_apply_defaults_is_deepcopy_then_default() -> None:
    """The faster copy keeps deepcopy's sharing: a mapping held twice is defaulted once, and
    seen defaulted at both places."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"x": {"type": "string", "default": "d"}}},
            "b": {"type": "object", "properties": {"y": {"type": "string", "default": "e"}}},
            "c": {"type": "array", "items": {"type": "object"}},
        },
    }
    shared: dict[str, Any] = {}
    obj = {"a": shared, "b": shared, "c": [(1, 2)]}
    result, plain = defaulted(obj, schema)
    assert not plain
    assert result == {"a": {"x": "d", "y": "e"}, "b": {"x": "d", "y": "e"}, "c": [(1, 2)]}
    assert result["a"] is result["b"] and result["a"] is not shared and shared == {}
    assert apply_defaults(obj, schema) == result


# --- input files ---------------------------------------------------------------------------------


def input_documents() -> list[tuple[str, Any]]:
    """(folder, loaded document) for every input file of the example and of tests/cases."""
    files = [(f, p) for f in INPUT_FOLDERS for p in sorted((REPO / f).glob("*.yaml"))]
    files += [(".", REPO / "gpuplane.yaml")] if (REPO / "gpuplane.yaml").is_file() else []
    cases = REPO / "tests" / "cases"
    for folder in INPUT_FOLDERS:
        files += [(folder, p) for p in sorted(cases.rglob(f"{folder}/*.yaml"))]
    files += [(".", p) for p in sorted(cases.rglob("gpuplane.yaml"))]
    loaded = []
    seen: set[bytes] = set()
    for folder, path in files:
        raw = path.read_bytes()
        if raw in seen:
            continue
        seen.add(raw)
        document = load_file(path, f"{folder}/{path.name}").document
        if document is not None:
            loaded.append((folder, document))
    return loaded


def _kind(folder: str) -> str:
    return "Repository" if folder == "." else input_schema.KIND_FOLDERS[folder]


def test_every_input_schema_compiles_for_jsonschema_rs() -> None:
    for kind in (*input_schema.KIND_FOLDERS.values(), "Repository"):
        assert input_schema.schema_for(kind).fast is not None, kind


@pytest.mark.slow
def test_the_compiled_check_agrees_with_jsonschema_on_every_input_file() -> None:
    documents = input_documents()
    assert len(documents) >= 40
    counts: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for folder, document in documents:
        schema = input_schema.schema_for(_kind(folder))
        for path, changed in mutated(document.data, 10**6):
            valid = not any(True for _ in schema.validator.iter_errors(changed))
            assert schema.valid(changed) == valid, (document.path, path, _at(changed, path))
            counts[schema.kind] += 1
            refused[schema.kind] += not valid
    print("\n" + ", ".join(f"{k} {counts[k]} ({refused[k]} refused)" for k in sorted(counts)))
    assert set(counts) == {*input_schema.KIND_FOLDERS.values(), "Repository"}
    assert sum(refused.values()) > sum(counts.values()) / 3
    assert sum(refused.values()) < sum(counts.values())


@pytest.mark.slow
def test_input_findings_are_those_of_jsonschema_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_document's findings, positions and words, are what jsonschema alone finds."""
    documents = input_documents()
    pairs = []
    for folder, document in documents:
        for _, changed in mutated(document.data, 30):
            pairs.append((folder, dataclasses.replace(document, data=changed)))
    fast = [input_schema.check_document(d, f) for f, d in pairs]
    slow_of = {
        kind: dataclasses.replace(input_schema.schema_for(kind), fast=None)
        for kind in (*input_schema.KIND_FOLDERS.values(), "Repository")
    }
    monkeypatch.setattr(input_schema, "schema_for", slow_of.__getitem__)
    assert fast == [input_schema.check_document(d, f) for f, d in pairs]
    print(f"\n{len(pairs)} changes, {sum(1 for f in fast if f)} with findings: the same findings")
    assert sum(1 for found in fast if found) > len(pairs) / 3
