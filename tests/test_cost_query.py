"""The export query of `gpuplane cost --query`: Prometheus 2.42's `promtool` parses it, and
evaluates it on synthetic pod series to the GPU-hours worked out by hand here; the API JSON
built from exactly those samples then goes through `gpuplane cost`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.commands.cost.query import export_query, window_problem
from renderer.model.metrics import EXPORT_STEP_SECONDS
from tests.conftest import Result, require_tool
from tests.cost.platform import RATES, cost_platform

Run = Callable[..., Result]


def rule_file(path: Path, expr: str) -> Path:
    body = {
        "groups": [{"name": "cost", "rules": [{"record": "gpuplane:cost:export", "expr": expr}]}]
    }
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def check(promtool: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )


def test_the_query_parses_in_promtool(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    for window in ("30d", "1w", "720h", "5m"):
        done = check(promtool, rule_file(tmp_path / "ok.yaml", export_query(window)))
        assert done.returncode == 0, done.stdout + done.stderr
    broken = export_query("30d").replace("unless on (", "unless on ", 1)
    done = check(promtool, rule_file(tmp_path / "broken.yaml", broken))
    assert done.returncode != 0
    assert "parse error" in done.stdout + done.stderr


def test_the_query_prints_and_names_the_contract(gpuplane: Run) -> None:
    done = gpuplane("cost", "--query", "30d")
    assert done.exit_code == 0
    assert done.output.strip() == export_query("30d")
    for name in ("gpuplane:pod:gpus_allocated", "gpuplane:pod:gpus_busy", "gpuplane:pod:failed"):
        assert name in done.output
    assert f"[30d:{EXPORT_STEP_SECONDS // 60}m]" in done.output


@pytest.mark.parametrize("window", ["30", "d30", "30 d", "1m", "30d;drop", ""])
def test_a_window_that_is_no_duration_is_refused(window: str) -> None:
    assert window_problem(window) is not None


# --- promtool evaluates the query on synthetic series -------------------------------------------

STEP_HOURS = EXPORT_STEP_SECONDS / 3600
VISION = 'cluster="prod-east",namespace="vision-train",team="vision",cost_center="CC-1042",pool="h100-train"'
LLM = 'cluster="prod-east",namespace="llm-serve",team="llm",cost_center="CC-1050",pool="l40s-infer"'
UNOWNED = 'cluster="prod-east",namespace="kube-system",team="",cost_center="",pool="h100-train"'

INPUT = [
    # pod a: 8 H100s from 5m to 60m (12 samples), 6 of them busy; never failed (kube-state-metrics
    # reports phase Failed as 0 for it)
    (f'gpuplane:pod:gpus_allocated{{{VISION},pod="a"}}', "_ 8x11"),
    (f'gpuplane:pod:gpus_busy{{{VISION},pod="a"}}', "_ 6x11"),
    ('gpuplane:pod:failed{cluster="prod-east",namespace="vision-train",pod="a"}', "0x12"),
    # pod b: 4 H100s from 5m to 30m (6 samples), 2 busy, then Failed from 35m
    (f'gpuplane:pod:gpus_allocated{{{VISION},pod="b"}}', "_ 4x5 stale"),
    (f'gpuplane:pod:gpus_busy{{{VISION},pod="b"}}', "_ 2x5 stale"),
    (
        'gpuplane:pod:failed{cluster="prod-east",namespace="vision-train",pod="b"}',
        "0 0 0 0 0 0 0 1 1 1 1 1 1",
    ),
    # pod c: a quarter of an L40S (time-sliced, 4 replicas) from 5m to 60m, half busy
    (f'gpuplane:pod:gpus_allocated{{{LLM},pod="c"}}', "_ 0.25x11"),
    (f'gpuplane:pod:gpus_busy{{{LLM},pod="c"}}', "_ 0.125x11"),
    # a pod of no team: nobody's to pay, left out of the export
    (f'gpuplane:pod:gpus_allocated{{{UNOWNED},pod="d"}}', "_ 1x11"),
]

# by hand: samples x GPUs x 5 minutes
EXPECTED = {
    ("vision", "CC-1042", "h100-train"): {
        "allocated_gpu_hours": (12 * 8 + 6 * 4) * STEP_HOURS,  # 10
        "used_gpu_hours": 12 * 6 * STEP_HOURS,  # 6: pod b failed, its busy hours are not use
        "failed_gpu_hours": 6 * 4 * STEP_HOURS,  # 2
    },
    ("llm", "CC-1050", "l40s-infer"): {
        "allocated_gpu_hours": 12 * 0.25 * STEP_HOURS,  # 0.25
        "used_gpu_hours": 12 * 0.125 * STEP_HOURS,  # 0.125; no failed series at all
    },
}


def samples() -> list[dict[str, Any]]:
    return [
        {
            "labels": {
                "cluster": "prod-east",
                "team": team,
                "cost_center": cc,
                "pool": pool,
                "term": term,
            },
            "value": value,
        }
        for (team, cc, pool), terms in EXPECTED.items()
        for term, value in terms.items()
    ]


def test_promtool_evaluates_the_export_to_the_hand_figures(gpuplane: Run, tmp_path: Path) -> None:
    promtool = require_tool("promtool", "prometheus")
    assert EXPECTED[("vision", "CC-1042", "h100-train")]["allocated_gpu_hours"] == 10
    expected = samples()
    unit = {
        "rule_files": [],
        "evaluation_interval": "5m",
        "tests": [
            {
                "interval": "5m",
                "input_series": [{"series": s, "values": v} for s, v in INPUT],
                "promql_expr_test": [
                    {
                        "expr": export_query("1h"),
                        "eval_time": "60m",
                        "exp_samples": [
                            {
                                "labels": "{"
                                + ",".join(f'{k}="{v}"' for k, v in s["labels"].items())
                                + "}",
                                "value": s["value"],
                            }
                            for s in expected
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "export_test.yaml"
    path.write_text(yaml.safe_dump(unit, sort_keys=False), encoding="utf-8")
    done = subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr

    # the API's answer to that query, built from the samples promtool just confirmed
    api = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": s["labels"], "value": [3600, repr(float(s["value"]))]} for s in expected
            ],
        },
    }
    usage = tmp_path / "usage.json"
    usage.write_text(json.dumps(api), encoding="utf-8")
    terms = tmp_path / "terms.csv"
    terms.write_text("team,accepted_units\nvision,2\nllm,500000\n", encoding="utf-8")
    root = cost_platform(tmp_path / "repo")
    out = gpuplane("-C", str(root), "cost", str(usage), "--terms", str(terms), "--format", "json")
    assert out.exit_code == 0, out.output
    body = json.loads(out.output)
    assert body["ending"] == "1970-01-01T01:00:00Z"
    teams = {t["team"]: t for t in body["teams"]}
    h100, l40s = RATES["h100-train"], RATES["l40s-infer"]
    assert teams["vision"]["terms"]["compute"] == pytest.approx(6 * h100)
    assert teams["vision"]["terms"]["idle"] == pytest.approx((10 - 6 - 2) * h100)
    assert teams["vision"]["terms"]["failed_runs"] == pytest.approx(2 * h100)
    assert teams["vision"]["costPerUnit"] == pytest.approx(10 * h100 / 2)
    assert teams["llm"]["terms"]["compute"] == pytest.approx(0.125 * l40s)
    assert teams["llm"]["costPerUnit"] == pytest.approx(0.25 * l40s / (500_000 / 1_000_000))
