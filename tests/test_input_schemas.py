"""The input schemas (schemas/*.schema.json) and the example platform they describe.

These tests use jsonschema and ruamel.yaml directly, not the engine, so that the schemas and the
example platform stay valid while the engine is being written. The arithmetic at the end mirrors
the policy rules of PRODUCT.md section 4.4 that the example must obey.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, ValidationError
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas"
FOLDERS = {"Cluster": "clusters", "Pool": "pools", "Team": "teams", "Queue": "queues"}
KINDS = sorted(FOLDERS)
API_VERSION = "gpuplane.dev/v1alpha1"


def schema_path(kind: str) -> Path:
    return SCHEMAS / f"{kind.lower()}.schema.json"


def load_schema(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_path(kind).read_text(encoding="utf-8"))
    return schema


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


VALIDATORS = {kind: Draft202012Validator(load_schema(kind)) for kind in KINDS}
EXAMPLE_FILES = sorted(
    (kind, path) for kind, folder in FOLDERS.items() for path in (ROOT / folder).glob("*.yaml")
)
EXAMPLE_IDS = [str(path.relative_to(ROOT)) for _, path in EXAMPLE_FILES]


def example(kind: str, name: str) -> dict[str, Any]:
    """A fresh copy of one example object, to mutate in a negative test."""
    doc: dict[str, Any] = load_yaml(ROOT / FOLDERS[kind] / f"{name}.yaml")
    return copy.deepcopy(doc)


def errors(kind: str, doc: Any) -> list[ValidationError]:
    return sorted(VALIDATORS[kind].iter_errors(doc), key=lambda e: list(map(str, e.path)))


def subschemas(node: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside a schema, with its JSON pointer."""
    if not isinstance(node, dict):
        return
    yield pointer, node
    for keyword in ("properties", "patternProperties", "$defs"):
        for key, sub in node.get(keyword, {}).items():
            yield from subschemas(sub, f"{pointer}/{keyword}/{key}")
    for keyword in ("items", "not", "if", "then", "else", "additionalProperties", "contains"):
        if isinstance(node.get(keyword), dict):
            yield from subschemas(node[keyword], f"{pointer}/{keyword}")
    for keyword in ("allOf", "anyOf", "oneOf", "prefixItems"):
        for i, sub in enumerate(node.get(keyword, [])):
            yield from subschemas(sub, f"{pointer}/{keyword}/{i}")


def describes_objects(node: dict[str, Any]) -> bool:
    """Whether a schema accepts mappings (`type: object`, or a list of types with object)."""
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


# ------------------------------------------------------------------------------ the schemas


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.schema.json")), ids=lambda p: p.name)
def test_every_input_schema_is_valid_for_its_draft(path: Path) -> None:
    # `inputs.schema.schema_for` compiles these without checking them against the
    # meta-schema (it did on every run): this is where a broken one is found
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_a_valid_draft_2020_12_schema(kind: str) -> None:
    schema = load_schema(kind)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://gpuplane.dev/schemas/{kind.lower()}.schema.json"
    assert schema["title"] and schema["description"]
    assert schema["properties"]["apiVersion"]["const"] == API_VERSION
    assert schema["properties"]["kind"]["const"] == kind
    assert set(schema["required"]) == {"apiVersion", "kind", "metadata", "spec"}


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_self_contained(kind: str) -> None:
    refs = [node["$ref"] for _, node in subschemas(load_schema(kind)) if "$ref" in node]
    assert refs, "expected shared definitions in $defs"
    assert all(ref.startswith("#/$defs/") for ref in refs), refs
    defs = load_schema(kind)["$defs"]
    assert {ref.removeprefix("#/$defs/") for ref in refs} <= set(defs)


@pytest.mark.parametrize("kind", KINDS)
def test_every_property_has_a_title_and_a_description(kind: str) -> None:
    undocumented = []
    for pointer, node in subschemas(load_schema(kind)):
        if not describes_objects(node):
            continue  # if/then/else conditions name properties without declaring them
        for keyword in ("properties", "patternProperties"):
            for key, sub in node.get(keyword, {}).items():
                if not (sub.get("title") and sub.get("description")):
                    undocumented.append(f"{pointer}/{keyword}/{key}")
    assert undocumented == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_object_is_closed(kind: str) -> None:
    """Records close their fields; maps close their keys with a propertyNames pattern."""
    open_objects = []
    for pointer, node in subschemas(load_schema(kind)):
        if not describes_objects(node):
            continue
        record = node.get("additionalProperties") is False and "propertyNames" not in node
        keys = node.get("propertyNames", {})
        key_pattern = "pattern" in keys or keys.get("$ref", "").startswith("#/$defs/")
        values = node.get("additionalProperties")
        closed_map = (
            key_pattern
            and "properties" not in node
            and isinstance(values, dict)
            and bool(values.get("title") and values.get("description"))
        )
        if not (record or closed_map):
            open_objects.append(pointer)
    assert open_objects == []


@pytest.mark.parametrize("kind", KINDS)
def test_map_keys_are_constrained_by_a_pattern(kind: str) -> None:
    schema = load_schema(kind)
    for pointer, node in subschemas(schema):
        keys = node.get("propertyNames")
        if keys is None:
            continue
        target = schema["$defs"][keys["$ref"].removeprefix("#/$defs/")] if "$ref" in keys else keys
        assert target.get("pattern"), pointer


# ------------------------------------------------------------------------------ the example


def test_the_example_platform_is_complete() -> None:
    counts = {kind: sum(1 for k, _ in EXAMPLE_FILES if k == kind) for kind in KINDS}
    assert counts["Cluster"] >= 2
    assert counts["Pool"] >= 5
    assert counts["Queue"] >= 2
    assert counts["Team"] >= 5


@pytest.mark.parametrize(("kind", "path"), EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_file_validates(kind: str, path: Path) -> None:
    doc = load_yaml(path)
    assert [f"{list(e.absolute_path)}: {e.message}" for e in errors(kind, doc)] == []


@pytest.mark.parametrize(("kind", "path"), EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_file_starts_with_the_schema_modeline(kind: str, path: Path) -> None:
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    expected = f"# yaml-language-server: $schema=../schemas/{kind.lower()}.schema.json"
    assert first_line == expected
    assert (path.parent / "../schemas" / f"{kind.lower()}.schema.json").resolve().is_file()


@pytest.mark.parametrize(("kind", "path"), EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_example_file_is_named_after_its_object(kind: str, path: Path) -> None:
    doc = load_yaml(path)
    assert doc["kind"] == kind
    assert path.name == f"{doc['metadata']['name']}.yaml"


# ------------------------------------------------------------------------------ negative cases


def the_error(kind: str, doc: Any) -> ValidationError:
    """The one error a single mistake must produce: one mistake, one message."""
    found = errors(kind, doc)
    assert len(found) == 1, [f"{list(e.absolute_path)}: {e.message}" for e in found]
    return found[0]


def test_unknown_spec_field_is_refused() -> None:
    doc = example("Team", "vision")
    doc["spec"]["gpuCount"] = 8
    error = the_error("Team", doc)
    assert list(error.absolute_path) == ["spec"]
    assert error.validator == "additionalProperties"
    assert "'gpuCount'" in error.message


def test_unknown_top_level_field_is_refused() -> None:
    doc = example("Queue", "prod")
    doc["status"] = {}
    error = the_error("Queue", doc)
    assert list(error.absolute_path) == []
    assert error.validator == "additionalProperties"


def test_unknown_nested_field_is_refused() -> None:
    doc = example("Team", "vision")
    doc["spec"]["gpus"][0]["quota"] = 3
    error = the_error("Team", doc)
    assert list(error.absolute_path) == ["spec", "gpus", 0]
    assert error.validator == "additionalProperties"
    assert "'quota'" in error.message


def test_unknown_addon_field_is_refused() -> None:
    doc = example("Cluster", "prod-east")
    doc["spec"]["addons"]["kueue"]["chart"] = "kueue"
    error = the_error("Cluster", doc)
    assert list(error.absolute_path) == ["spec", "addons", "kueue"]
    assert error.validator == "additionalProperties"


@pytest.mark.parametrize(
    ("kind", "name", "path", "value"),
    [
        ("Pool", "h100-train", ["spec", "gpusPerNode"], "8"),
        ("Pool", "h100-train", ["spec", "cost", "gpuHour"], "2.85"),
        ("Cluster", "prod-east", ["spec", "kubernetesVersion"], 1.33),
        ("Queue", "prod", ["spec", "fairSharing"], "yes"),
        ("Team", "vision", ["spec", "gpus", 0, "nominal"], 1.5),
    ],
    ids=["gpusPerNode-string", "gpuHour-string", "unquoted-version", "bool-string", "float"],
)
def test_wrong_type_is_refused(kind: str, name: str, path: list[Any], value: Any) -> None:
    doc = example(kind, name)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    error = the_error(kind, doc)
    assert list(error.absolute_path) == path
    assert error.validator == "type"


def test_mig_sharing_requires_a_mig_block() -> None:
    doc = example("Pool", "a100-mig")
    del doc["spec"]["mig"]
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec"]
    assert error.validator == "required"
    assert error.message == "'mig' is a required property"


def test_time_slicing_sharing_requires_a_time_slicing_block() -> None:
    doc = example("Pool", "l40s-infer")
    del doc["spec"]["timeSlicing"]
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec"]
    assert error.message == "'timeSlicing' is a required property"


@pytest.mark.parametrize(
    ("block", "value"),
    [
        ("timeSlicing", {"replicas": 4}),
        ("mig", {"layout": {"1g.10gb": 7}}),
        ("mps", {"replicas": 4}),
    ],
)
def test_sharing_block_of_another_mode_is_refused(block: str, value: dict[str, Any]) -> None:
    doc = example("Pool", "h100-train")
    assert doc["spec"]["sharing"] == "full-gpu"
    doc["spec"][block] = value
    error = the_error("Pool", doc)
    # `not: {required: [block]}` in the else branch: the engine turns it into "'block' is not
    # allowed here" and shows the branch's description as the hint.
    assert list(error.absolute_path) == ["spec"]
    assert error.validator == "not"
    assert error.validator_value == {"required": [block]}
    assert f"remove `{block}`, or set sharing:" in error.schema["description"]


def test_a_mig_block_next_to_time_slicing_is_refused() -> None:
    doc = example("Pool", "l40s-infer")
    doc["spec"]["mig"] = {"layout": {"1g.10gb": 7}}
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec"]
    assert error.validator_value == {"required": ["mig"]}


@pytest.mark.parametrize("profile", ["1g.10GB", "8g.80gb", "1g10gb", "mig-1g.10gb"])
def test_bad_mig_profile_in_layout_is_refused(profile: str) -> None:
    doc = example("Pool", "a100-mig")
    doc["spec"]["mig"]["layout"] = {"1g.10gb": 1, profile: 1}
    error = the_error("Pool", doc)
    # Only the bad key is reported (a propertyNames error), not the valid one next to it.
    assert list(error.absolute_path) == ["spec", "mig", "layout"]
    assert error.validator == "pattern"
    assert error.instance == profile


def test_bad_node_label_key_is_refused() -> None:
    doc = example("Pool", "h200-tune")
    doc["spec"]["labels"]["bad key"] = "x"
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec", "labels"]
    assert error.validator == "pattern"
    doc["spec"]["labels"] = {"gpuplane.dev/tier": "bad value!"}
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec", "labels", "gpuplane.dev/tier"]


def test_mig_instances_are_counted_from_one() -> None:
    doc = example("Pool", "a100-mig")
    doc["spec"]["mig"]["layout"]["1g.10gb"] = 0
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec", "mig", "layout", "1g.10gb"]
    assert error.validator == "minimum"


@pytest.mark.parametrize(
    ("nodes", "path", "validator"),
    [
        (-1, ["spec", "nodes"], "minimum"),
        ("4", ["spec", "nodes"], "type"),
        ({"min": 1}, ["spec", "nodes"], "required"),
        ({"min": 1, "max": 4, "desired": 2}, ["spec", "nodes"], "additionalProperties"),
        ({"min": 0, "max": 0}, ["spec", "nodes", "max"], "minimum"),
        ({"min": -1, "max": 4}, ["spec", "nodes", "min"], "minimum"),
    ],
)
def test_bad_node_count_is_refused(nodes: Any, path: list[Any], validator: str) -> None:
    doc = example("Pool", "h200-tune")
    doc["spec"]["nodes"] = nodes
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == path
    assert error.validator == validator


@pytest.mark.parametrize(
    ("rdma", "path", "validator"),
    [
        ({"resource": "efa", "perNode": 16}, ["spec", "fabric", "rdma", "resource"], "pattern"),
        ({"resource": "/efa", "perNode": 16}, ["spec", "fabric", "rdma", "resource"], "pattern"),
        (
            {"resource": "vpc.amazonaws.com/efa interfaces", "perNode": 16},
            ["spec", "fabric", "rdma", "resource"],
            "pattern",
        ),
        (
            {"resource": "vpc.amazonaws.com/efa", "perNode": 0},
            ["spec", "fabric", "rdma", "perNode"],
            "minimum",
        ),
        (
            {"resource": "vpc.amazonaws.com/efa", "perNode": "16"},
            ["spec", "fabric", "rdma", "perNode"],
            "type",
        ),
        ({"resource": "vpc.amazonaws.com/efa"}, ["spec", "fabric", "rdma"], "required"),
        (
            {"resource": "vpc.amazonaws.com/efa", "perNode": 16, "perPod": 2},
            ["spec", "fabric", "rdma"],
            "additionalProperties",
        ),
        ("vpc.amazonaws.com/efa", ["spec", "fabric", "rdma"], "type"),
    ],
)
def test_bad_rdma_block_is_refused(rdma: Any, path: list[Any], validator: str) -> None:
    doc = example("Pool", "h200-tune")
    doc["spec"]["fabric"]["rdma"] = rdma
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == path
    assert error.validator == validator


@pytest.mark.parametrize(
    "resource",
    ["rdma/ib", "rdma/rdma_shared_device_a", "vpc.amazonaws.com/efa", "nvidia.com/hostdev"],
)
def test_device_plugin_rdma_resources_are_accepted(resource: str) -> None:
    doc = example("Pool", "h100-train")
    doc["spec"]["fabric"]["rdma"] = {"resource": resource, "perNode": 1}
    assert errors("Pool", doc) == []


def test_empty_acceptance_is_refused() -> None:
    doc = example("Pool", "l4-serve")
    doc["spec"]["acceptance"] = {}
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["spec", "acceptance"]
    assert error.validator == "minProperties"


@pytest.mark.parametrize(
    "name", ["Vision_Train", "vision-", "-vision", "vision.train", "a" * 64, ""]
)
def test_bad_namespace_name_is_refused(name: str) -> None:
    doc = example("Team", "vision")
    doc["spec"]["namespaces"][0]["name"] = name
    error = the_error("Team", doc)
    assert list(error.absolute_path) == ["spec", "namespaces", 0, "name"]
    assert error.validator in {"pattern", "maxLength", "minLength"}


def test_bad_object_name_is_refused() -> None:
    doc = example("Pool", "h100-train")
    doc["metadata"]["name"] = "H100_train"
    error = the_error("Pool", doc)
    assert list(error.absolute_path) == ["metadata", "name"]
    assert error.validator == "pattern"


@pytest.mark.parametrize("cidr", ["10.20.0.0/33", "10.20.0.0", "300.1.1.1/8", "10.20.0/16", "any"])
def test_bad_team_egress_cidr_is_refused(cidr: str) -> None:
    doc = example("Team", "vision")
    doc["spec"]["egress"][0]["cidr"] = cidr
    error = the_error("Team", doc)
    assert list(error.absolute_path) == ["spec", "egress", 0, "cidr"]
    assert error.validator == "pattern"


def test_bad_object_store_egress_cidr_is_refused() -> None:
    doc = example("Cluster", "prod-east")
    doc["spec"]["storage"]["objectStoreEgress"][0]["cidr"] = "10.64.0.0/40"
    error = the_error("Cluster", doc)
    assert list(error.absolute_path) == ["spec", "storage", "objectStoreEgress", 0, "cidr"]


def test_egress_rule_needs_ports() -> None:
    doc = example("Team", "vision")
    doc["spec"]["egress"][0]["ports"] = []
    error = the_error("Team", doc)
    assert list(error.absolute_path) == ["spec", "egress", 0, "ports"]
    assert error.validator == "minItems"


@pytest.mark.parametrize(
    ("kind", "name", "path", "value"),
    [
        ("Team", "vision", ["spec", "resources", "memory"], "4TB"),
        ("Team", "vision", ["spec", "retention", "checkpoints"], "1 month"),
        ("Team", "vision", ["spec", "codeowners", 0], "example/vision"),
        ("Team", "vision", ["spec", "images", 0], "vision/"),
        ("Cluster", "prod-east", ["spec", "addons", "kueue", "version"], "latest"),
        ("Cluster", "prod-east", ["spec", "storage", "objectStore"], "ftp://data"),
        ("Pool", "h100-train", ["spec", "cost", "currency"], "usd"),
        ("Pool", "h100-train", ["spec", "taints", 0, "key"], "gpu pool"),
    ],
)
def test_bad_formats_are_refused(kind: str, name: str, path: list[Any], value: Any) -> None:
    doc = example(kind, name)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    error = the_error(kind, doc)
    assert list(error.absolute_path) == path
    assert error.validator == "pattern"


def test_cpu_accepts_a_string_or_an_integer_but_not_nonsense() -> None:
    doc = example("Team", "vision")
    for cpu in ("512", 512, "500m", "0.5"):
        doc["spec"]["resources"]["cpu"] = cpu
        assert errors("Team", doc) == []
    doc["spec"]["resources"]["cpu"] = "lots"
    error = the_error("Team", doc)
    assert list(error.absolute_path) == ["spec", "resources", "cpu"]
    assert error.validator == "pattern"


@pytest.mark.parametrize(
    ("kind", "name", "field"),
    [
        ("Cluster", "prod-east", "environment"),
        ("Pool", "h100-train", "cost"),
        ("Pool", "h100-train", "acceptance"),
        ("Team", "vision", "costCenter"),
        ("Team", "vision", "namespaces"),
        ("Queue", "prod", "priorities"),
    ],
)
def test_required_fields(kind: str, name: str, field: str) -> None:
    doc = example(kind, name)
    del doc["spec"][field]
    error = the_error(kind, doc)
    assert list(error.absolute_path) == ["spec"]
    assert error.message == f"{field!r} is a required property"


def test_wrong_api_version_and_kind_are_refused() -> None:
    doc = example("Team", "vision")
    doc["apiVersion"] = "gpuplane.dev/v1"
    doc["kind"] = "Pool"
    assert {tuple(e.absolute_path) for e in errors("Team", doc)} == {("apiVersion",), ("kind",)}


# ------------------------------------------------------------------------------ policy arithmetic
# The engine's policy rules, restated in a few lines over the example platform.


def platform() -> dict[str, dict[str, dict[str, Any]]]:
    objects: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for kind, path in EXAMPLE_FILES:
        doc = load_yaml(path)
        objects[kind][doc["metadata"]["name"]] = doc["spec"]
    return objects


PURPOSES = {
    "distributed-training": {"training", "batch"},
    "fine-tuning": {"training", "batch"},
    "online-inference": {"inference"},
    "batch-inference": {"batch", "inference"},
    "notebooks": {"notebooks", "training"},
}


def node_counts(pool: dict[str, Any]) -> tuple[int, int]:
    """(nodes that guarantees count, nodes that borrowing may reach)."""
    nodes = pool["nodes"]
    if isinstance(nodes, int):
        return nodes, nodes
    return nodes["min"], nodes["max"]


def capacity(pool: dict[str, Any], profile: str | None) -> tuple[int, int]:
    """(guaranteed, maximum) capacity of a pool in the unit it advertises."""
    low, high = node_counts(pool)
    per_gpu = {
        "full-gpu": 1,
        "time-slicing": pool.get("timeSlicing", {}).get("replicas", 1),
        "mps": pool.get("mps", {}).get("replicas", 1),
        "mig": pool.get("mig", {}).get("layout", {}).get(profile, 0),
    }[pool["sharing"]]
    return low * pool["gpusPerNode"] * per_gpu, high * pool["gpusPerNode"] * per_gpu


def test_references_resolve() -> None:
    p = platform()
    for name, pool in p["Pool"].items():
        assert pool["cluster"] in p["Cluster"], name
    for name, queue in p["Queue"].items():
        assert queue["cluster"] in p["Cluster"], name
        for pool in queue["pools"]:
            assert pool in p["Pool"], (name, pool)
            assert p["Pool"][pool]["cluster"] == queue["cluster"], (name, pool)
    for name, team in p["Team"].items():
        queue = p["Queue"][team["queue"]]
        for ns in team["namespaces"]:
            assert ns["cluster"] == queue["cluster"], (name, ns["name"])
        for entry in team.get("gpus", []):
            assert entry["pool"] in queue["pools"], (name, entry["pool"])


def test_quotas_fit_the_pools() -> None:
    p = platform()
    nominal: dict[tuple[str, str | None], int] = defaultdict(int)
    guaranteed: dict[tuple[str, str | None], int] = defaultdict(int)
    oversubscription = {}
    for name, team in p["Team"].items():
        queue = p["Queue"][team["queue"]]
        for entry in team.get("gpus", []):
            pool = p["Pool"][entry["pool"]]
            profile = entry.get("profile")
            if pool["sharing"] == "mig":
                assert profile in pool["mig"]["layout"], (name, entry)
            else:
                assert profile is None, (name, entry)
            key = (entry["pool"], profile)
            oversubscription[key] = queue.get("oversubscription", 1.0)
            lend = entry.get("lendingLimit", 0)  # unset counts as lending nothing: conservative
            assert lend <= entry["nominal"], (name, entry)
            nominal[key] += entry["nominal"]
            guaranteed[key] += entry["nominal"] - lend
            if "borrowingLimit" in entry:
                _, most = capacity(pool, profile)
                assert entry["nominal"] + entry["borrowingLimit"] <= most, (name, entry)
    assert nominal, "the example platform declares no GPU quota"
    for key, total in nominal.items():
        low, _ = capacity(p["Pool"][key[0]], key[1])
        assert total <= low * oversubscription[key], (key, total, low)
        assert guaranteed[key] <= low, (key, guaranteed[key], low)


def test_namespaces_fit_the_pools_they_use() -> None:
    p = platform()
    for name, team in p["Team"].items():
        purposes = {ns["purpose"] for ns in team["namespaces"]}
        assert {"training", "inference"} <= purposes, name
        for entry in team.get("gpus", []):
            pool = p["Pool"][entry["pool"]]
            usable = {
                ns["purpose"] for ns in team["namespaces"] if ns["cluster"] == pool["cluster"]
            } & PURPOSES[pool["workload"]]
            assert usable, (name, entry["pool"])


def test_namespace_names_are_unique_per_cluster() -> None:
    seen: dict[tuple[str, str], str] = {}
    for name, team in platform()["Team"].items():
        for ns in team["namespaces"]:
            key = (ns["cluster"], ns["name"])
            assert key not in seen, f"{key} in {seen.get(key)} and {name}"
            seen[key] = name


def test_priorities_are_coherent() -> None:
    p = platform()
    for name, queue in p["Queue"].items():
        names = [prio["name"] for prio in queue["priorities"]]
        assert len(names) == len(set(names)), name
        assert sum(1 for prio in queue["priorities"] if prio.get("default")) == 1, name
        if "mixing" in queue:
            assert queue["mixing"]["inferencePriority"] in names, name
    for name, team in p["Team"].items():
        if "priority" in team:
            queue = p["Queue"][team["queue"]]
            assert team["priority"] in {prio["name"] for prio in queue["priorities"]}, name


def test_pools_are_tainted_priced_and_valid() -> None:
    for name, pool in platform()["Pool"].items():
        taint = {"key": "gpuplane.dev/pool", "value": name, "effect": "NoSchedule"}
        assert taint in pool.get("taints", []), name
        assert pool["cost"]["gpuHour"] > 0, name
        assert pool["acceptance"], name
        if isinstance(pool["nodes"], dict):
            assert pool["nodes"]["min"] <= pool["nodes"]["max"], name
        if pool["sharing"] == "mig":
            # Every NVIDIA GPU has 7 compute slices; the catalog checks the memory slices.
            slices = sum(int(p[0]) * n for p, n in pool["mig"]["layout"].items())
            assert slices <= 7, name


def test_production_clusters_pin_every_addon() -> None:
    for name, cluster in platform()["Cluster"].items():
        if cluster["environment"] != "production":
            continue
        addons = cluster.get("addons", {})
        assert addons, name
        for addon, settings in addons.items():
            assert settings.get("version"), (name, addon)
