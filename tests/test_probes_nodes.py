"""The nodes probe (workflows/probes/nodes.py) on the CPU: 4 gloo ranks as 2 simulated nodes, small
messages. Expectations come from nccl-tests' PERFORMANCE.md (busbw), the Linux sysfs ABI
(Documentation/ABI/stable/sysfs-class-infiniband: <device>/ports/<port>/counters/<name>), and
medians computed here from the figures the probe reports. Nothing asserts on speed.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.test_probes import assert_valid
from workflows.probes import nodes
from workflows.probes.nodes import (
    NodesSettings,
    fabric_errors,
    read_counters,
    ring_rounds,
    run_nodes,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas" / "results"
SMALL = NodesSettings(
    max_bytes=16 * 1024, iterations=2, warmup=1, local_world_size=4, simulate_nodes=2
)


def fake_sysfs(root: Path, values: dict[str, int]) -> Path:
    """A /sys/class/infiniband lookalike: `device/port/counter` -> value."""
    for key, value in values.items():
        device, port, counter = key.split("/")
        folder = root / device / "ports" / port / "counters"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / counter).write_text(f"{value}\n")
    return root


def test_the_schema_is_valid() -> None:
    Draft202012Validator.check_schema(json.loads((SCHEMAS / "nodes.schema.json").read_text()))


@pytest.mark.parametrize(
    ("count", "rounds"),
    [
        (1, 0),
        (2, 1),  # one pair: node 0 with node 1
        (4, 2),  # an even ring: (0,1),(2,3) then (1,2),(3,0)
        (5, 3),  # an odd ring needs a third round for its closing pair
    ],
)
def test_the_ring_is_measured_in_rounds_of_disjoint_pairs(count: int, rounds: int) -> None:
    found = ring_rounds(count)
    assert len(found) == rounds
    ring = {(0, 1)} if count == 2 else {(i, (i + 1) % count) for i in range(count)}
    assert {pair for taken in found for pair in taken} == (ring if count > 1 else set())
    for taken in found:
        members = [node for pair in taken for node in pair]
        assert len(members) == len(set(members)), taken


def test_bus_bandwidth_is_the_nccl_tests_all_reduce_formula() -> None:
    # PERFORMANCE.md: algbw = S / t, busbw = algbw * 2(n-1)/n
    assert nodes.busbw(10**9, 1.0, 4) == pytest.approx(1.5)
    assert nodes.busbw(10**9, 0.5, 8) == pytest.approx(2 * 1.75)
    assert nodes.busbw(10**9, 1.0, 1) == 0.0


def test_fabric_counters_are_read_per_device_and_port_and_diffed(tmp_path: Path) -> None:
    root = fake_sysfs(
        tmp_path / "ib",
        {
            "mlx5_0/1/symbol_error": 3,
            "mlx5_0/1/link_downed": 0,
            "mlx5_0/1/port_xmit_data": 999,  # a data counter, not an error
            "mlx5_1/1/port_rcv_errors": 7,
        },
    )
    before = read_counters(root)
    assert before == {
        "mlx5_0/1/symbol_error": 3,
        "mlx5_0/1/link_downed": 0,
        "mlx5_1/1/port_rcv_errors": 7,
    }
    fake_sysfs(root, {"mlx5_0/1/link_downed": 2, "mlx5_1/1/port_rcv_errors": 7})
    after = read_counters(root)
    assert after is not None
    assert fabric_errors(before, after) == [
        {"device": "mlx5_0", "port": "1", "counter": "link_downed", "delta": 2}
    ]
    assert read_counters(tmp_path / "absent") is None
    (tmp_path / "empty").mkdir()
    assert read_counters(tmp_path / "empty") is None  # no device: nothing was checked


def test_four_ranks_as_two_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(nodes.SYSFS_ENV, str(fake_sysfs(tmp_path, {"mlx5_0/1/symbol_error": 5})))
    monkeypatch.delenv(nodes.FAULT_ENV, raising=False)
    result = run_nodes(replace(SMALL, outlier_fraction=1.0))
    assert_valid(result)
    assert result["ok"], result["error"]
    m = result["metrics"]
    assert (m["nodeCount"], m["worldSize"]) == (2, 4)
    assert [(n["node"], n["ranks"], n["healthy"]) for n in m["nodes"]] == [
        ("local-0", 2, True),
        ("local-1", 2, True),
    ]
    assert all(n["intraBusbwGBps"] > 0 and n["matmulTflops"] > 0 for n in m["nodes"])
    assert [(link["a"], link["b"]) for link in m["links"]] == [("local-0", "local-1")]
    assert m["links"][0]["busbwGBps"] > 0 and m["poolBusbwGBps"] > 0
    assert m["fabric"] == {"available": True, "errors": []}  # counters there, none grew
    # outliers against a median computed here: with fraction 1, every figure below its median
    intra = {n["node"]: n["intraBusbwGBps"] for n in m["nodes"]}
    median = statistics.median(intra.values())
    assert m["median"]["intraBusbwGBps"] == pytest.approx(median)
    assert m["median"]["linkBusbwGBps"] == pytest.approx(m["links"][0]["busbwGBps"])
    expected = sorted(node for node, value in intra.items() if value < median)
    assert sorted(o["subject"] for o in m["outliers"] if o["figure"] == "intraBusbwGBps") == (
        expected
    )
    assert not [o for o in m["outliers"] if o["figure"] == "linkBusbwGBps"]  # one link: its median
    assert m["outlierFraction"] == 1.0


def test_a_rank_that_fails_health_marks_its_node_unhealthy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(nodes.SYSFS_ENV, str(tmp_path / "no-infiniband"))
    monkeypatch.setenv(nodes.FAULT_ENV, "3")  # rank 3 is on local-1 (ranks 2 and 3)
    result = run_nodes(SMALL)
    assert_valid(result)
    assert result["ok"] is False
    assert "node local-1 is unhealthy" in result["error"]
    healthy, sick = result["metrics"]["nodes"]
    assert healthy["healthy"] and healthy["error"] is None and healthy["intraBusbwGBps"] > 0
    assert not sick["healthy"] and "rank 3: matmul" in sick["error"]
    assert sick["intraBusbwGBps"] is None  # an unhealthy node's figure is not trusted
    assert result["metrics"]["median"]["intraBusbwGBps"] == healthy["intraBusbwGBps"]
    assert result["metrics"]["fabric"] == {"available": False, "errors": []}


def test_outliers_are_those_below_the_fraction_of_the_median() -> None:
    median, found = nodes.outliers(
        {"a": 10.0, "b": 9.0, "c": 5.0, "d": None}, "intraBusbwGBps", 0.85
    )
    assert median == 9.0
    assert found == [{"subject": "c", "figure": "intraBusbwGBps", "value": 5.0, "median": 9.0}]
    assert nodes.outliers({"x": None}, "linkBusbwGBps", 0.85) == (None, [])


def test_the_cli_refuses_more_nodes_than_ranks(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    command = [sys.executable, "-m", "workflows.probes", "nodes", "--out", str(out)]
    done = subprocess.run(
        [*command, "--local-world-size", "2", "--simulate-nodes", "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot simulate 3 nodes with 2 ranks" in done.stderr
    assert not out.exists()
