"""Tests of the synthetic platform generator (bench/generate.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from bench.generate import KIND_DIRS, generate_platform, main, pool_capacity

REPO = Path(__file__).resolve().parents[1]

SMALL = {"clusters": 2, "pools_per_cluster": 4, "teams": 20, "seed": 7}
MODELINE = "# yaml-language-server: $schema=../schemas/{kind}.schema.json\n"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.yaml"))}


def _load(root: Path) -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    yaml = YAML(typ="safe")
    out: dict[str, list[tuple[Path, dict[str, Any]]]] = defaultdict(list)
    for kind, folder in KIND_DIRS.items():
        for path in sorted((root / folder).glob("*.yaml")):
            out[kind].append((path, yaml.load(path.read_text(encoding="utf-8"))))
    return out


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("platform")
    generate_platform(root, **SMALL)
    return root


def test_deterministic(tmp_path: Path) -> None:
    a = generate_platform(tmp_path / "a", **SMALL)
    b = generate_platform(tmp_path / "b", **SMALL)
    assert a == b
    tree = _tree(tmp_path / "a")
    assert tree == _tree(tmp_path / "b")
    assert len(tree) == sum(a.values())
    other = generate_platform(tmp_path / "c", **{**SMALL, "seed": 8})
    assert other == a
    assert _tree(tmp_path / "c") != tree


def test_counts(tmp_path: Path) -> None:
    counts = generate_platform(tmp_path, **SMALL)
    assert counts == {"Cluster": 2, "Pool": 8, "Queue": 2, "Team": 20}
    for kind, folder in KIND_DIRS.items():
        assert len(list((tmp_path / folder).glob("*.yaml"))) == counts[kind]


def test_files_parse_with_modeline_and_name(platform: Path) -> None:
    for kind, objects in _load(platform).items():
        for path, obj in objects:
            text = path.read_text(encoding="utf-8")
            assert text.startswith(MODELINE.format(kind=kind.lower())), path
            assert obj["apiVersion"] == "gpuplane.dev/v1alpha1"
            assert obj["kind"] == kind
            assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
            assert path.name == obj["metadata"]["name"] + ".yaml"


def test_references_resolve(platform: Path) -> None:
    loaded = _load(platform)
    clusters = {o["metadata"]["name"] for _, o in loaded["Cluster"]}
    pools = {o["metadata"]["name"]: o["spec"] for _, o in loaded["Pool"]}
    queues = {o["metadata"]["name"]: o["spec"] for _, o in loaded["Queue"]}
    assert all(spec["cluster"] in clusters for spec in pools.values())
    for spec in queues.values():
        assert spec["cluster"] in clusters
        assert all(pools[p]["cluster"] == spec["cluster"] for p in spec["pools"])
    for _, team in loaded["Team"]:
        spec = team["spec"]
        queue = queues[spec["queue"]]
        assert spec["priority"] in {p["name"] for p in queue["priorities"]}
        assert {ns["cluster"] for ns in spec["namespaces"]} == {queue["cluster"]}
        for entry in spec["gpus"]:
            assert entry["pool"] in queue["pools"]


def test_quotas_fit_pools(platform: Path) -> None:
    loaded = _load(platform)
    pools = {o["metadata"]["name"]: o["spec"] for _, o in loaded["Pool"]}
    used: dict[tuple[str, str | None], int] = defaultdict(int)
    entries = 0
    for _, team in loaded["Team"]:
        for entry in team["spec"]["gpus"]:
            spec = pools[entry["pool"]]
            capacity = pool_capacity(spec)
            profile = entry.get("profile")
            if spec["sharing"] == "mig":
                assert profile in spec["mig"]["layout"]
            else:
                assert profile is None
            cap = capacity[profile]
            nominal = entry["nominal"]
            assert nominal > 0
            assert 0 <= entry["lendingLimit"] <= nominal
            assert entry["borrowingLimit"] >= 0
            assert nominal + entry["borrowingLimit"] <= cap
            used[(entry["pool"], profile)] += nominal
            entries += 1
    assert entries > 0
    for (pool, profile), total in used.items():
        assert total <= pool_capacity(pools[pool])[profile], (pool, profile)


def test_capacity_units() -> None:
    base = {"nodes": 4, "gpusPerNode": 8}
    assert pool_capacity({**base, "sharing": "full-gpu"}) == {None: 32}
    sliced = {**base, "gpusPerNode": 4, "sharing": "time-slicing", "timeSlicing": {"replicas": 4}}
    assert pool_capacity(sliced) == {None: 64}
    mig = {**base, "sharing": "mig", "mig": {"layout": {"1g.10gb": 2, "3g.40gb": 1}}}
    assert pool_capacity(mig) == {"1g.10gb": 64, "3g.40gb": 32}


def test_namespaces_unique_per_cluster(platform: Path) -> None:
    seen: set[tuple[str, str]] = set()
    for _, team in _load(platform)["Team"]:
        for ns in team["spec"]["namespaces"]:
            key = (ns["cluster"], ns["name"])
            assert key not in seen, key
            seen.add(key)
    assert len(seen) == 3 * SMALL["teams"]


def test_refuses_stale_files(tmp_path: Path) -> None:
    generate_platform(tmp_path, **SMALL)
    generate_platform(tmp_path, **SMALL)  # regenerating the same platform in place is fine
    with pytest.raises(FileExistsError):
        generate_platform(tmp_path, **{**SMALL, "teams": 10})


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc = main([str(out), "--clusters", "1", "--pools-per-cluster", "2", "--teams", "3"])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert "1 clusters" in lines[0] and "3 teams" in lines[0]
    assert len(list((out / "teams").glob("*.yaml"))) == 3


def test_validates_against_schemas(platform: Path) -> None:
    schema_paths = {kind: REPO / "schemas" / f"{kind.lower()}.schema.json" for kind in KIND_DIRS}
    missing = [p.name for p in schema_paths.values() if not p.is_file()]
    if missing:
        pytest.skip(f"schemas not written yet: {', '.join(missing)}")
    from jsonschema import Draft202012Validator

    for kind, objects in _load(platform).items():
        schema = json.loads(schema_paths[kind].read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema)
        for path, obj in objects:
            errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
            assert not errors, f"{path.name}: " + "; ".join(
                f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
            )


def test_passes_every_input_and_policy_rule(platform: Path) -> None:
    """ "Valid by construction" as gpuplane itself judges it: no finding of any severity, so a
    benchmark of it times the path a user's platform takes."""
    from renderer.pipeline import load_platform

    assert load_platform(platform).diagnostics == []


def test_many_small_teams_pass_and_have_one_or_two_namespaces(tmp_path: Path) -> None:
    """Issue 35's second shape: no finding either, every team one or two namespaces (a training
    one, and every other team an inference one), so the same objects need more team files."""
    from renderer.pipeline import load_platform

    few = generate_platform(tmp_path / "few", **SMALL)
    many = generate_platform(tmp_path / "many", **SMALL, shape="many-small")
    assert few == many  # the same files; the teams are smaller
    assert load_platform(tmp_path / "many").diagnostics == []
    namespaces = [
        [ns["purpose"] for ns in team["spec"]["namespaces"]]
        for _, team in _load(tmp_path / "many")["Team"]
    ]
    assert namespaces[:4] == [["training"], ["training", "inference"]] * 2
    assert sum(map(len, namespaces)) == 30  # 20 teams: 10 with one namespace, 10 with two
