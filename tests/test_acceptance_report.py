"""`gpuplane acceptance report`: probe results judged against the example platform's pools.

The result sets live in tests/cases/acceptance/ (passing, failing, missing, unknown-pool,
malformed, failed-probe). Every threshold, GPU-hour rate and catalog figure expected here is read
from pools/*.yaml and renderer.model.catalog, never pasted from the report's output, and each case file
is first checked to sit on the intended side of its threshold: a changed pool file shows up as a
broken premise, not as a test that silently checks something else.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.commands.acceptance.forms import report_json
from renderer.commands.acceptance.judge import (
    FORMULAS,
    INFERENCE_COST,
    NVLINK_SHARE,
    TRAINING_COST,
    build_report,
)
from renderer.commands.acceptance.load import MAX_RESULT_BYTES, load_results
from renderer.commands.acceptance.results import QUEUE_WAIT_KEY, Verdict
from renderer.findings.rules import explain
from renderer.model.catalog import CATALOG
from renderer.pipeline import load_platform
from tests.conftest import REPO, Result

CASES = REPO / "tests" / "cases" / "acceptance"
Run = Callable[..., Result]


# --- reading the inputs -----------------------------------------------------------------------


def _pool(name: str) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((REPO / "pools" / f"{name}.yaml").read_text())
    return data["spec"]


def _thresholds(name: str) -> dict[str, float]:
    return {k: v for k, v in _pool(name)["acceptance"].items() if k != "nodeImage"}


def _case(case: str, file: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / case / file).read_text())
    return data


def _report(gpuplane: Run, *args: str) -> tuple[int, dict[str, Any]]:
    result = gpuplane("-C", str(REPO), "acceptance", "report", "--format", "json", *args)
    return result.exit_code, json.loads(result.output)


def _checks(body: dict[str, Any], pool: str) -> list[dict[str, Any]]:
    (found,) = [p for p in body["pools"] if p["pool"] == pool]
    checks: list[dict[str, Any]] = found["checks"]
    return checks


def _check(body: dict[str, Any], pool: str, what: str) -> dict[str, Any]:
    """The one check of `pool` named `step.metric`, or `metric` where only one step has it."""
    (found,) = [
        c for c in _checks(body, pool) if what in (c["metric"], f"{c['step']}.{c['metric']}")
    ]
    return found


def _write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


# --- the premises -----------------------------------------------------------------------------


def test_the_cases_sit_where_they_should_against_the_pool_files() -> None:
    train, infer = _thresholds("h100-train"), _thresholds("l40s-infer")
    for case in ("passing", "missing", "failed-probe"):
        assert (
            _case(case, "h100-train/allreduce.json")["metrics"]["peakBusbwGBps"]
            >= (train["allReduceBusBandwidthGBps"])
        )
        storage = _case(case, "h100-train/storage.json")["metrics"]
        assert storage["readGBps"] >= train["storageReadGBps"]
        inference = _case(case, "l40s-infer/inference.json")["metrics"]
        assert inference["p95Ms"] <= infer["inferenceP95Ms"]
        assert inference["errors"] == 0
    passing = {
        probe: _case("passing", f"h100-train/{probe}.json")
        for probe in ("allreduce", "checkpoint", "storage", "staging", "training")
    }
    checkpoint = passing["checkpoint"]["metrics"]
    assert checkpoint["writeGBps"] >= train["checkpointWriteGBps"]
    assert checkpoint["restoreSeconds"] <= train["restoreSeconds"]
    assert checkpoint["verified"] is True
    assert checkpoint["resumed"] is True and checkpoint["resumeSteps"] > 0
    assert passing["training"]["metrics"]["samplesPerSecond"] >= train["trainingSamplesPerSecond"]
    wait = float(passing["training"]["environment"][QUEUE_WAIT_KEY])
    assert wait / 60 <= train["maxQueueWaitMinutes"]
    assert all(r["ok"] for r in passing.values())

    failing = _case("failing", "h100-train/checkpoint.json")
    assert (
        _case("failing", "h100-train/allreduce.json")["metrics"]["peakBusbwGBps"]
        < (train["allReduceBusBandwidthGBps"])
    )
    assert failing["metrics"]["restoreSeconds"] > train["restoreSeconds"]
    assert failing["metrics"]["writeGBps"] >= train["checkpointWriteGBps"]
    assert failing["metrics"]["verified"] is False
    assert failing["metrics"]["resumed"] is False  # nothing is resumed from an unverified restore
    assert (
        _case("failing", "l40s-infer/inference.json")["metrics"]["p95Ms"]
        > (infer["inferenceP95Ms"])
    )
    assert not (CASES / "missing" / "h100-train" / "checkpoint.json").exists()
    assert _case("failed-probe", "h100-train/training.json")["ok"] is False
    assert _case("unknown-pool", "storage.json")["pool"] not in {
        p.stem for p in (REPO / "pools").glob("*.yaml")
    }


# --- the result sets through the CLI ----------------------------------------------------------


def test_a_passing_set_passes_every_declared_threshold(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "passing"))
    assert code == 0, body
    assert (body["schemaVersion"], body["command"]) == (2, "acceptance report")
    assert body["passed"] is True
    assert body["findings"] == []
    assert [(p["cluster"], p["pool"]) for p in body["pools"]] == [
        (_pool("h100-train")["cluster"], "h100-train"),
        (_pool("l40s-infer")["cluster"], "l40s-infer"),
    ]
    for name in ("h100-train", "l40s-infer"):
        checks = _checks(body, name)
        judged = {c["thresholdKey"]: c["threshold"] for c in checks if c["thresholdKey"]}
        assert judged == _thresholds(name), "every threshold of the pool file is checked"
        assert {c["verdict"] for c in checks} <= {"pass", "measured-only"}
    train = _check(body, "h100-train", "peakBusbwGBps")
    assert train["comparison"] == ">="
    assert (
        train["measured"]
        == _case("passing", "h100-train/allreduce.json")["metrics"]["peakBusbwGBps"]
    )
    restore = _check(body, "h100-train", "restoreSeconds")
    assert restore["comparison"] == "<=" and restore["verdict"] == "pass"
    verified = _check(body, "h100-train", "verified")
    assert (verified["measured"], verified["threshold"], verified["thresholdKey"]) == (
        True,
        True,
        None,
    )
    resumed = _check(body, "h100-train", "resumed")
    assert (resumed["measured"], resumed["threshold"], resumed["verdict"]) == (True, True, "pass")
    assert resumed["note"] is None
    assert _check(body, "h100-train", "GBps")["verdict"] == "measured-only"
    assert _check(body, "h100-train", "readGBps")["verdict"] == "pass"
    assert _check(body, "h100-train", "storage.writeGBps")["verdict"] == "measured-only"
    wait = _check(body, "h100-train", "queueWaitMinutes")
    expected = float(_case("passing", "h100-train/training.json")["environment"][QUEUE_WAIT_KEY])
    assert wait["measured"] == pytest.approx(expected / 60)
    summary = body["summary"]
    assert (summary["fail"], summary["missing"], summary["findings"]) == (0, 0, 0)
    assert summary["files"] == 6


def test_the_text_report_shows_figure_threshold_and_verdict(gpuplane: Run) -> None:
    result = gpuplane("-C", str(REPO), "acceptance", "report", str(CASES / "passing"))
    assert result.exit_code == 0
    out = result.output
    assert out.startswith("acceptance PASSED: 2 pools")
    train = _thresholds("h100-train")
    assert f"prod-east / h100-train (h100-80gb, {_pool('h100-train')['cost']['gpuHour']} USD" in out
    row = next(line for line in out.splitlines() if "all-reduce bus bandwidth" in line)
    assert "372.4 GB/s" in row and f"≥ {train['allReduceBusBandwidthGBps']:g} GB/s" in row
    assert row.split()[-2] == "pass"
    row = next(line for line in out.splitlines() if "checkpoint restore" in line)
    assert f"≤ {train['restoreSeconds']:g} s" in row
    row = next(line for line in out.splitlines() if "inference latency p95" in line)
    assert f"≤ {_thresholds('l40s-infer')['inferenceP95Ms']:g} ms" in row
    assert "measured only" in out  # staging and storage write have no threshold
    for _, formula in FORMULAS:
        assert formula in out


def test_training_and_inference_cost_follow_the_stated_formulas(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "passing"))
    assert code == 0
    training = _case("passing", "h100-train/training.json")
    gpus = float(training["environment"]["gpuplane.dev/gpus"])
    rate = _pool("h100-train")["cost"]["gpuHour"]
    (cost,) = next(p for p in body["pools"] if p["pool"] == "h100-train")["costs"]
    per_million = rate * gpus / (training["metrics"]["samplesPerSecond"] * 3600) * 1e6
    assert cost["value"] == pytest.approx(per_million, rel=1e-6)
    assert (cost["unit"], cost["currency"], cost["gpus"]) == (
        "per million samples",
        _pool("h100-train")["cost"]["currency"],
        gpus,
    )
    assert cost["gpusSource"] == "from the environment label gpuplane.dev/gpus"
    assert "x 32 GPUs / (2,612.5 samples/s x 3600 s/h) x 1,000,000" in cost["formula"]

    inference = _case("passing", "l40s-infer/inference.json")["metrics"]
    (cost,) = next(p for p in body["pools"] if p["pool"] == "l40s-infer")["costs"]
    per_second = inference["concurrency"] / (inference["meanMs"] / 1000)
    per_thousand = _pool("l40s-infer")["cost"]["gpuHour"] * 1 / (per_second * 3600) * 1000
    assert cost["value"] == pytest.approx(per_thousand, rel=1e-6)
    assert cost["unit"] == "per thousand requests"
    assert cost["gpus"] == 1 and cost["gpusSource"].startswith("assumed: 1")
    assert body["formulas"]["trainingCost"] == TRAINING_COST
    assert body["formulas"]["inferenceCost"] == INFERENCE_COST


def test_the_nvlink_share_is_information_against_the_catalog(gpuplane: Run) -> None:
    _, body = _report(gpuplane, str(CASES / "failing"))
    (share,) = next(p for p in body["pools"] if p["pool"] == "h100-train")["nvlinkShare"]
    nvlink = CATALOG[_pool("h100-train")["accelerator"]].nvlink_bandwidth_gbps
    assert nvlink is not None
    busbw = _case("failing", "h100-train/allreduce.json")["metrics"]["peakBusbwGBps"]
    assert share["catalogNvlinkGBps"] == nvlink
    assert share["share"] == pytest.approx(busbw / nvlink, abs=1e-4)
    assert body["formulas"]["nvlinkShare"] == NVLINK_SHARE
    assert "total bidirectional" in NVLINK_SHARE and "indicative" in NVLINK_SHARE
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(CASES / "failing")).output
    line = next(x for x in text.splitlines() if x.strip().startswith("reference:"))
    assert f"{busbw / nvlink:.0%} of the catalog's NVLink figure" in line
    assert "total bidirectional" in line and "indicative only" in line


def test_a_failing_set_names_each_failure(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "failing"))
    assert code == 1 and body["passed"] is False
    verdicts = {f"{c['step']}.{c['metric']}": c["verdict"] for c in _checks(body, "h100-train")}
    assert verdicts["allreduce.peakBusbwGBps"] == "fail"
    assert verdicts["checkpoint.restoreSeconds"] == "fail"
    assert verdicts["checkpoint.verified"] == "fail"
    assert verdicts["checkpoint.resumed"] == "fail"
    assert verdicts["checkpoint.ok"] == "fail"  # the probe itself reported the failed check
    assert verdicts["checkpoint.writeGBps"] == "pass"
    assert verdicts["training.samplesPerSecond"] == "pass"
    assert _check(body, "l40s-infer", "p95Ms")["verdict"] == "fail"
    assert _check(body, "l40s-infer", "errors")["verdict"] == "pass"
    run = _check(body, "h100-train", "ok")
    assert "sha256 mismatch" in run["note"]
    assert "fix the restore first" in _check(body, "h100-train", "resumed")["note"]
    assert body["summary"]["fail"] == 6
    assert [p["passed"] for p in body["pools"]] == [False, False]


def test_a_failing_set_in_markdown_for_a_job_summary(gpuplane: Run) -> None:
    result = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "markdown", str(CASES / "failing")
    )
    assert result.exit_code == 1
    md = result.output
    assert md.startswith("# ❌ Acceptance failed\n")
    assert "## ❌ prod-east / h100-train (h100-80gb, 2.85 USD per GPU-hour)" in md
    assert "| step | check | measured | threshold | verdict | result |" in md
    row = next(line for line in md.splitlines() if "checkpoint restore" in line)
    assert "| 412 s | ≤ 300 s | ❌ **fail** |" in row
    row = next(line for line in md.splitlines() if "inference latency p95" in line)
    assert "❌ **fail**" in row
    assert "<details><summary>Formulas</summary>" in md
    assert all(line.count("|") in (0, 7) for line in md.splitlines() if line.startswith("|"))


def test_a_missing_result_fails_its_thresholds(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "missing"))
    assert code == 1
    missing = [c for c in _checks(body, "h100-train") if c["verdict"] == "missing"]
    train = _thresholds("h100-train")
    assert {c["thresholdKey"]: c["threshold"] for c in missing} == {
        "checkpointWriteGBps": train["checkpointWriteGBps"],
        "restoreSeconds": train["restoreSeconds"],
    }
    assert all(c["result"] is None and c["measured"] is None for c in missing)
    assert body["summary"]["missing"] == 2
    l40s = next(p for p in body["pools"] if p["pool"] == "l40s-infer")
    assert l40s["passed"] is True
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(CASES / "missing")).output
    assert "MISSING" in text and "no checkpoint result for this pool" in text


def test_a_result_for_an_unknown_pool_is_a_finding(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "passing"), str(CASES / "unknown-pool"))
    assert code == 1 and body["passed"] is False
    assert all(p["passed"] for p in body["pools"])  # the known pools still pass
    (finding,) = body["findings"]
    assert finding["rule"] == "result-unknown-pool"
    assert finding["file"].endswith("unknown-pool/storage.json")
    assert "'h100-trian'" in finding["message"]
    assert finding["hint"] == "did you mean 'h100-train'?"
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(CASES / "unknown-pool")).output
    assert "error[result-unknown-pool]" in text and "1 result file not counted" in text


def test_a_malformed_file_is_a_finding_with_its_position(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "malformed"))
    assert code == 1
    (finding,) = body["findings"]
    assert finding["rule"] == "result-syntax"
    lines = (CASES / "malformed" / "allreduce.json").read_text().count("\n")
    assert finding["line"] >= lines and finding["column"] > 0
    assert body["pools"] == []


def test_a_failed_probe_fails_its_pool(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "failed-probe"))
    assert code == 1
    run = _check(body, "h100-train", "ok")
    error = _case("failed-probe", "h100-train/training.json")["error"]
    assert run["verdict"] == "fail" and run["note"] == f"the probe failed: {error}"
    throughput = _check(body, "h100-train", "samplesPerSecond")
    assert (throughput["verdict"], throughput["measured"]) == ("fail", None)
    assert throughput["threshold"] == _thresholds("h100-train")["trainingSamplesPerSecond"]
    train = next(p for p in body["pools"] if p["pool"] == "h100-train")
    assert train["costs"] == []  # no cost from a failed run
    assert next(p for p in body["pools"] if p["pool"] == "l40s-infer")["passed"] is True


def test_results_in_any_order_give_the_same_report(gpuplane: Run) -> None:
    files = sorted(str(p) for p in (CASES / "failing").rglob("*.json"))
    forward = gpuplane("-C", str(REPO), "acceptance", "report", "--format", "json", *files)
    backward = gpuplane("-C", str(REPO), "acceptance", "report", "--format", "json", *files[::-1])
    assert forward.output == backward.output
    twice = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "json", *files, str(CASES / "failing")
    )
    assert twice.output == forward.output, "a file reached twice is judged once"
    folder = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "json", str(CASES / "failing")
    )
    assert folder.output == forward.output


# --- more cases, written on the fly -----------------------------------------------------------


def test_a_pool_named_with_no_results_has_every_threshold_missing(gpuplane: Run) -> None:
    code, body = _report(gpuplane, str(CASES / "passing"), "--pool", "a100-mig")
    assert code == 1
    checks = _checks(body, "a100-mig")
    mig = _thresholds("a100-mig")
    assert {c["thresholdKey"]: c["verdict"] for c in checks} == {
        "storageReadGBps": "missing",
        "maxQueueWaitMinutes": "not-reported",  # optional: only the workflow adds it
    }
    assert set(mig) == {"storageReadGBps", "maxQueueWaitMinutes"}


def test_a_figure_without_a_threshold_is_measured_only(gpuplane: Run, tmp_path: Path) -> None:
    storage = _case("passing", "h100-train/storage.json")
    storage.update(pool="l40s-infer", cluster=_pool("l40s-infer")["cluster"])
    assert "storageReadGBps" not in _thresholds("l40s-infer")
    _write(tmp_path, "storage.json", storage)
    _write(tmp_path, "inference.json", _case("passing", "l40s-infer/inference.json"))
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 0
    read = _check(body, "l40s-infer", "readGBps")
    assert (read["verdict"], read["threshold"], read["comparison"]) == ("measured-only", None, None)


def test_an_unverified_checkpoint_fails_even_when_the_probe_said_ok(
    gpuplane: Run, tmp_path: Path
) -> None:
    checkpoint = _case("passing", "h100-train/checkpoint.json")
    checkpoint["metrics"]["verified"] = False
    _write(tmp_path, "checkpoint.json", checkpoint)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    assert _check(body, "h100-train", "verified")["verdict"] == "fail"
    assert _check(body, "h100-train", "checkpoint.writeGBps")["verdict"] == "pass"


def test_a_checkpoint_that_did_not_resume_fails_and_says_what_to_do(
    gpuplane: Run, tmp_path: Path
) -> None:
    checkpoint = _case("passing", "h100-train/checkpoint.json")
    checkpoint["metrics"].update(resumed=False, resumeMaxLossDifference=0.0123)
    checkpoint.update(ok=False, error="the loss of step 3 (resumed step 2 of 3) is off")
    _write(tmp_path, "checkpoint.json", checkpoint)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    resumed = _check(body, "h100-train", "resumed")
    assert (resumed["measured"], resumed["verdict"]) == (False, "fail")
    assert "losses off by up to 0.0123" in resumed["note"]
    assert "optimizer state" in resumed["note"]
    assert _check(body, "h100-train", "verified")["verdict"] == "pass"
    assert _check(body, "h100-train", "checkpoint.writeGBps")["verdict"] == "pass"
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(tmp_path)).output
    row = next(line for line in text.splitlines() if "training resumed" in line)
    assert row.split()[-2] == "FAIL"


def test_a_checkpoint_run_without_resume_fails_acceptance(gpuplane: Run, tmp_path: Path) -> None:
    """--resume-steps 0 is honest (resumed false, the probe itself ok) and not acceptance."""
    checkpoint = _case("passing", "h100-train/checkpoint.json")
    checkpoint["metrics"].update(
        resumeSteps=0, resumed=False, resumeMaxLossDifference=None, resumeSeconds=0
    )
    _write(tmp_path, "checkpoint.json", checkpoint)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1 and checkpoint["ok"] is True
    resumed = _check(body, "h100-train", "resumed")
    assert resumed["verdict"] == "fail" and "--resume-steps" in resumed["note"]
    assert [c["metric"] for c in _checks(body, "h100-train") if c["verdict"] == "fail"] == [
        "resumed"
    ]


def test_a_checkpoint_result_without_resume_figures_is_refused_with_a_reason(
    gpuplane: Run, tmp_path: Path
) -> None:
    checkpoint = _case("passing", "h100-train/checkpoint.json")
    for key in ("resumeSteps", "resumed", "resumeMaxLossDifference", "resumeSeconds"):
        del checkpoint["metrics"][key]
    _write(tmp_path, "checkpoint.json", checkpoint)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    (finding,) = body["findings"]
    assert finding["rule"] == "result-invalid"
    assert "did not resume training" in finding["message"]
    assert "is missing" not in finding["message"]


def test_inference_errors_and_a_long_queue_wait_fail(gpuplane: Run, tmp_path: Path) -> None:
    inference = _case("passing", "l40s-infer/inference.json")
    inference["metrics"]["errors"] = 3
    budget = _thresholds("l40s-infer")["maxQueueWaitMinutes"]
    inference["environment"][QUEUE_WAIT_KEY] = str(budget * 60 + 1)
    _write(tmp_path, "inference.json", inference)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    assert _check(body, "l40s-infer", "errors")["verdict"] == "fail"
    wait = _check(body, "l40s-infer", "queueWaitMinutes")
    assert wait["verdict"] == "fail" and wait["threshold"] == budget


def test_a_result_from_another_cluster_is_not_counted(gpuplane: Run, tmp_path: Path) -> None:
    storage = _case("passing", "h100-train/storage.json")
    storage["cluster"] = "staging-west"
    _write(tmp_path, "storage.json", storage)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    (finding,) = body["findings"]
    assert finding["rule"] == "result-wrong-cluster"
    assert "'staging-west'" in finding["message"] and "'prod-east'" in finding["message"]
    assert body["pools"] == []


def test_a_result_without_a_pool_is_a_finding(gpuplane: Run, tmp_path: Path) -> None:
    storage = _case("passing", "h100-train/storage.json")
    storage.update(pool=None, cluster=None)
    _write(tmp_path, "storage.json", storage)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    assert [f["rule"] for f in body["findings"]] == ["result-unknown-pool"]
    assert "--pool" in body["findings"][0]["hint"]


def _valid() -> dict[str, Any]:
    return _case("passing", "h100-train/storage.json")


def _with(change: Callable[[dict[str, Any]], object]) -> str:
    data = _valid()
    change(data)
    return json.dumps(data)


def _checkpoint_with(**metrics: Any) -> str:
    data = _case("passing", "h100-train/checkpoint.json")
    data["metrics"].update(metrics)
    return json.dumps(data)


HOSTILE: list[tuple[str, str | bytes, str]] = [
    ("not-utf8", b'{"probe": "\xff"}', "result-unreadable"),
    ("truncated", '{"schemaVersion": 1, "probe": ', "result-syntax"),
    ("empty", "", "result-syntax"),
    ("nan", json.dumps(_valid()).replace('"readGBps": 14.6', '"readGBps": NaN'), "result-syntax"),
    ("duplicate-key", '{"probe": "storage", "probe": "training"}', "result-syntax"),
    ("deep", "[" * 100_000 + "]" * 100_000, "result-syntax"),
    ("huge-integer", '{"schemaVersion": ' + "9" * 5000 + "}", "result-syntax"),
    ("array", "[" + json.dumps(_valid()) + "]", "result-invalid"),
    ("version-2", _with(lambda d: d.update(schemaVersion=2)), "result-invalid"),
    ("unknown-probe", _with(lambda d: d.update(probe="nccl")), "result-invalid"),
    ("no-metric", _with(lambda d: d["metrics"].pop("readGBps")), "result-invalid"),
    ("string-metric", _with(lambda d: d["metrics"].update(readGBps="14.6")), "result-invalid"),
    ("bool-metric", _with(lambda d: d["metrics"].update(readGBps=True)), "result-invalid"),
    ("negative", _with(lambda d: d["metrics"].update(readGBps=-1)), "result-invalid"),
    ("resume-steps-text", _checkpoint_with(resumeSteps="3"), "result-invalid"),
    ("resumed-null", _checkpoint_with(resumed=None), "result-invalid"),
    ("negative-difference", _checkpoint_with(resumeMaxLossDifference=-0.5), "result-invalid"),
    ("bad-date", _with(lambda d: d.update(startedAt="yesterday")), "result-invalid"),
    ("bad-month", _with(lambda d: d.update(startedAt="2025-13-01T00:00:00Z")), "result-invalid"),
    ("offset", _with(lambda d: d.update(startedAt="2025-11-30T10:00:00+02:00")), "result-invalid"),
    ("no-ok", _with(lambda d: d.pop("ok")), "result-invalid"),
    ("env-number", _with(lambda d: d["environment"].update(node=7)), "result-invalid"),
    (
        "bad-wait",
        _with(lambda d: d["environment"].update({QUEUE_WAIT_KEY: "soon"})),
        "result-invalid",
    ),
    (
        "zero-gpus",
        _with(lambda d: d["environment"].update({"gpuplane.dev/gpus": "0"})),
        "result-invalid",
    ),
    ("silent-failure", _with(lambda d: d.update(ok=False, error=None)), "result-invalid"),
]


@pytest.mark.parametrize(("name", "content", "rule"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_file_that_is_no_valid_result_gets_one_finding(
    name: str, content: str | bytes, rule: str, gpuplane: Run, tmp_path: Path
) -> None:
    path = tmp_path / f"{name}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    code, body = _report(gpuplane, str(path), str(CASES / "passing"))
    assert code == 1
    (finding,) = body["findings"]
    assert (finding["rule"], finding["file"]) == (rule, str(path))
    assert all(p["passed"] for p in body["pools"]), "the valid files are still judged"
    assert len(finding["message"]) < 1000


def test_an_oversized_file_is_refused_unread(gpuplane: Run, tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as stream:
        stream.truncate(MAX_RESULT_BYTES + 1)
    code, body = _report(gpuplane, str(path))
    assert code == 1
    assert [f["rule"] for f in body["findings"]] == ["result-unreadable"]
    assert "limit" in body["findings"][0]["message"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_a_named_pipe_is_not_read(gpuplane: Run, tmp_path: Path) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    os.mkfifo(folder / "pipe.json")
    code, body = _report(gpuplane, str(folder))
    assert code == 1
    assert [f["rule"] for f in body["findings"]] == ["result-unreadable"]


def test_strings_from_a_result_cannot_reshape_the_report(gpuplane: Run, tmp_path: Path) -> None:
    training = _case("failed-probe", "h100-train/training.json")
    training["error"] = "boom\n| x | y |\n# Injected\x1b[31m red \u202e</details><script>"
    _write(tmp_path, "training.json", training)
    storage = _case("passing", "h100-train/storage.json")
    storage["pool"] = "h100|x\n# Title\x1b[2J"
    _write(tmp_path, "storage.json", storage)
    for fmt in ("text", "markdown"):
        out = gpuplane("-C", str(REPO), "acceptance", "report", "--format", fmt, str(tmp_path))
        assert out.exit_code == 1
        assert "\x1b" not in out.output and "\u202e" not in out.output
        assert not any(line.startswith("# Injected") for line in out.output.splitlines())
        assert not any(line.startswith("# Title") for line in out.output.splitlines())
    md = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "markdown", str(tmp_path)
    ).output
    assert "<script>" not in md and md.count("</details>") == 1
    assert all(
        line.count("|") - line.count("\\|") == 7
        for line in md.splitlines()
        if line.startswith("| ")
    )


def test_a_probe_result_from_an_older_run_keeps_its_unknown_labels(
    gpuplane: Run, tmp_path: Path
) -> None:
    storage = _case("passing", "h100-train/storage.json")
    storage["environment"]["gpuplane.dev/new-label"] = "anything"
    storage["extra"] = {"added": "by a later probe version"}
    _write(tmp_path, "storage.json", storage)
    code, _ = _report(gpuplane, str(tmp_path))
    assert code in (0, 1)  # judged, not refused; missing checkpoint etc. decide the verdict


SCHEMAS = REPO / "schemas" / "results"


def test_every_case_file_is_what_the_result_schemas_describe() -> None:
    if not (SCHEMAS / "result.schema.json").is_file():
        pytest.skip("schemas/results/ is not in this checkout")
    from jsonschema import Draft202012Validator

    def validator(name: str) -> Draft202012Validator:
        return Draft202012Validator(json.loads((SCHEMAS / name).read_text()))

    envelope = validator("result.schema.json")
    for path in sorted(CASES.rglob("*.json")):
        if path.parent.name == "malformed":
            continue
        data = json.loads(path.read_text())
        errors = list(envelope.iter_errors(data))
        errors += validator(f"{data['probe']}.schema.json").iter_errors(data["metrics"])
        assert not errors, f"{path}: {errors[0].message}"


SCHEMA_ONLY: list[tuple[str, Callable[[dict[str, Any]], object], str]] = [
    ("extra-metric", lambda d: d["metrics"].update(extra=1), "'extra' was unexpected"),
    (
        "partial-failure",
        lambda d: (d.update(ok=False, error="disk full"), d["metrics"].pop("readGBps")),
        "'readGBps' is a required property",
    ),
    ("label-name", lambda d: d["environment"].update({"bad key": "v"}), "environment"),
    ("extra-field", lambda d: d.update(note="hand-edited"), "'note' was unexpected"),
]


@pytest.mark.parametrize(
    ("name", "change", "message"), SCHEMA_ONLY, ids=[c[0] for c in SCHEMA_ONLY]
)
def test_the_probes_schemas_are_applied(
    name: str,
    change: Callable[[dict[str, Any]], object],
    message: str,
    gpuplane: Run,
    tmp_path: Path,
) -> None:
    if not (SCHEMAS / "result.schema.json").is_file():
        pytest.skip("schemas/results/ is not in this checkout")
    data = _valid()
    change(data)
    _write(tmp_path, f"{name}.json", data)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    (finding,) = body["findings"]
    assert finding["rule"] == "result-invalid" and message in finding["message"]


# --- usage errors and an invalid platform ----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["/nonexistent/results.json"],
        ["--format", "sarif", str(CASES / "passing")],
        ["--pool", "h100-trian", str(CASES / "passing")],
    ],
    ids=["no-results", "no-such-file", "bad-format", "unknown-pool-option"],
)
def test_usage_errors_exit_2(gpuplane: Run, args: list[str]) -> None:
    result = gpuplane("-C", str(REPO), "acceptance", "report", *args)
    assert result.exit_code == 2, result.output


def test_a_folder_without_results_is_a_usage_error(gpuplane: Run, tmp_path: Path) -> None:
    result = gpuplane("-C", str(REPO), "acceptance", "report", str(tmp_path))
    assert result.exit_code == 2
    assert "no result files" in result.output


def test_an_invalid_platform_reports_its_findings(gpuplane: Run, platform: Path) -> None:
    pool = platform / "pools" / "h100-train.yaml"
    pool.write_text(pool.read_text().replace("gpusPerNode: 8", "gpusPerNode: eight"))
    result = gpuplane("-C", str(platform), "acceptance", "report", str(CASES / "passing"))
    assert result.exit_code == 1
    assert "pools/h100-train.yaml" in result.output and "schema-wrong-type" in result.output


def test_the_rules_explain_themselves(gpuplane: Run) -> None:
    for rule in (
        "result-unreadable",
        "result-syntax",
        "result-invalid",
        "result-unknown-pool",
        "result-wrong-cluster",
    ):
        doc = explain(rule)
        assert doc is not None and doc.stage == "acceptance"
        result = gpuplane("explain", rule)
        assert result.exit_code == 0 and result.output.startswith(f"{rule} (acceptance)")


# --- the library, without the CLI -------------------------------------------------------------


def test_the_report_is_data_and_the_json_is_stable() -> None:
    loaded = load_platform(REPO)
    results, findings = load_results([CASES / "failing"])
    assert findings == () and len(results) == 6
    report = build_report(loaded.platform, results, findings)
    assert not report.passed
    assert report.count(Verdict.FAIL) == 6
    with pytest.raises(ValueError, match="unknown pool"):
        build_report(loaded.platform, results, pools=["nope"])
    body = report_json(report)
    assert list(body) == sorted(body)
    assert report_json(report) == report_json(build_report(loaded.platform, results[::-1]))


# --- results from the real probes ------------------------------------------------------------


def _probe(tmp_path: Path, probe: str, *args: str, pool: str = "h100-train") -> Path:
    out = tmp_path / "results" / f"{probe}.json"
    command = [sys.executable, "-m", "workflows.probes", probe, "--out", str(out)]
    command += ["--pool", pool, "--cluster", _pool(pool)["cluster"], *args]
    run = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert out.is_file(), run.stdout + run.stderr
    return out


@pytest.mark.slow
def test_results_of_the_real_probes_are_judged(gpuplane: Run, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    _probe(tmp_path, "storage", "--path", str(scratch), "--bytes", "8M", "--block-bytes", "1M")
    _probe(tmp_path, "training", "--seconds", "1", "--device", "cpu")
    code, body = _report(gpuplane, str(tmp_path / "results"))
    assert body["findings"] == [], body["findings"]
    read = _check(body, "h100-train", "readGBps")
    assert read["threshold"] == _thresholds("h100-train")["storageReadGBps"]
    assert read["verdict"] in ("pass", "fail") and read["measured"] > 0
    throughput = _check(body, "h100-train", "samplesPerSecond")
    # one CPU is no 32-GPU pool: its figure is neither a pass nor a failure of the pool
    assert throughput["verdict"] == "not-comparable"
    assert throughput["threshold"] == _thresholds("h100-train")["trainingSamplesPerSecond"]
    assert "measured on the CPU" in throughput["note"]
    (device,) = body["pools"][0]["devices"]
    assert (device["probe"], device["device"], device["comparable"]) == ("training", "cpu", False)
    (cost,) = body["pools"][0]["costs"]
    assert cost["gpus"] == 1 and "worldSize" in cost["gpusSource"]
    assert "measured on the CPU" in cost["gpusSource"]
    assert code == 1  # and the all-reduce and checkpoint thresholds have no result here
    assert _check(body, "h100-train", "restoreSeconds")["verdict"] == "missing"
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.slow
def test_a_real_checkpoint_is_judged_on_its_resume(gpuplane: Run, tmp_path: Path) -> None:
    common = ("--megabytes", "1", "--device", "cpu", "--path", str(tmp_path / "scratch"))
    _probe(tmp_path, "checkpoint", *common)
    code, body = _report(gpuplane, str(tmp_path / "results"))
    assert body["findings"] == [], body["findings"]
    # a restore that verifies and resumes holds on any device; its speed is the CPU's
    assert _check(body, "h100-train", "verified")["verdict"] == "pass"
    assert _check(body, "h100-train", "resumed")["verdict"] == "pass"
    assert _check(body, "h100-train", "writeGBps")["verdict"] == "not-comparable"
    assert _check(body, "h100-train", "restoreSeconds")["verdict"] == "not-comparable"

    _probe(tmp_path, "checkpoint", *common, "--resume-steps", "0")
    code, body = _report(gpuplane, str(tmp_path / "results"))
    assert code == 1 and body["findings"] == []
    resumed = _check(body, "h100-train", "resumed")
    assert resumed["verdict"] == "fail" and "--resume-steps 0" in resumed["note"]
    assert not any(c["metric"] == "ok" for c in _checks(body, "h100-train"))  # the probe was ok


# --- results measured on the CPU or on another accelerator ------------------------------------

TORCH_PROBES = ("allreduce", "checkpoint", "training")
"""The probes that record the device they ran on (workflows/probes/runtime.py torch_labels)."""


def _cpu_labels() -> dict[str, str]:
    """The labels the probes add on the CPU, from the probes' own code."""
    torch = pytest.importorskip("torch")
    from workflows.probes.runtime import torch_labels

    labels: dict[str, str] = torch_labels(torch.device("cpu"))
    assert labels["device"] == "cpu" and "gpu" not in labels
    return labels


def _gpu_labels(name: str) -> dict[str, str]:
    """The labels torch_labels writes on a CUDA device (no GPU here to run it on): the device,
    torch's name for the GPU, the CUDA version and the GPUs visible."""
    return {"device": "cuda:0", "gpu": name, "cuda": "12.8", "gpusVisible": "8", "nccl": "2.27.3"}


TORCH_LABELS = ("device", "gpu", "gpusVisible", "nccl")
"""The labels torch_labels writes about the device; replaced, not merged, when relabelling."""


def _relabelled(
    tmp_path: Path, case: str, labels: dict[str, str], probes: tuple[str, ...] = TORCH_PROBES
) -> Path:
    """A copy of a case set whose torch probes' results carry `labels` (and no other device
    labels), as if run there."""
    target = tmp_path / case
    shutil.copytree(CASES / case, target)
    for probe in probes:
        for path in target.rglob(f"{probe}.json"):
            data = json.loads(path.read_text())
            for key in TORCH_LABELS:
                data["environment"].pop(key, None)
            data["environment"].update(labels)
            if probe == "training" and data["ok"] and "device" in labels:
                data["metrics"]["device"] = labels["device"].split(":")[0]
            path.write_text(json.dumps(data, indent=2))
    return target


def _product(pool: str) -> str:
    return CATALOG[_pool(pool)["accelerator"]].product


def test_a_set_measured_on_the_cpu_is_not_comparable_neither_pass_nor_fail(
    gpuplane: Run, tmp_path: Path
) -> None:
    """The passing set, with its all-reduce, training and checkpoint run on the CPU: the
    figures that would pass are not counted as passes, and nothing is called a failure."""
    folder = _relabelled(tmp_path, "passing", _cpu_labels())
    code, body = _report(gpuplane, str(folder))
    assert code == 3, body
    assert (body["passed"], body["status"]) == (False, "not-comparable")
    (train,) = [p for p in body["pools"] if p["pool"] == "h100-train"]
    assert (train["passed"], train["status"]) == (False, "not-comparable")
    # every threshold of the pool that these probes measure: allReduceBusBandwidthGBps,
    # trainingSamplesPerSecond, checkpointWriteGBps and restoreSeconds (pools/h100-train.yaml)
    elsewhere = {c["thresholdKey"] for c in train["checks"] if c["verdict"] == "not-comparable"}
    assert elsewhere == {
        k
        for k in _thresholds("h100-train")
        if k
        in (
            "allReduceBusBandwidthGBps",
            "trainingSamplesPerSecond",
            "checkpointWriteGBps",
            "restoreSeconds",
        )
    }
    assert body["summary"]["notComparable"] == 4
    # what holds on any device is still judged: the restore verified and resumed training
    assert _check(body, "h100-train", "verified")["verdict"] == "pass"
    assert _check(body, "h100-train", "resumed")["verdict"] == "pass"
    # storage, staging and the queue wait do not depend on the device
    assert _check(body, "h100-train", "readGBps")["verdict"] == "pass"
    assert _check(body, "h100-train", "queueWaitMinutes")["verdict"] == "pass"
    assert next(p for p in body["pools"] if p["pool"] == "l40s-infer")["status"] == "passed"
    assert {d["probe"]: (d["device"], d["comparable"]) for d in train["devices"]} == {
        probe: ("cpu", False) for probe in TORCH_PROBES
    }
    # a CPU all-reduce over gloo says nothing of NVLink: no share is computed from it
    assert train["nvlinkShare"] == []
    (cost,) = train["costs"]
    accelerator = _pool("h100-train")["accelerator"]
    assert f"measured on the CPU, not on the pool's {accelerator}" in cost["gpusSource"]


def test_the_cpu_is_said_plainly_in_text_and_markdown(gpuplane: Run, tmp_path: Path) -> None:
    folder = _relabelled(tmp_path, "passing", _cpu_labels())
    result = gpuplane("-C", str(REPO), "acceptance", "report", str(folder))
    assert result.exit_code == 3
    text = result.output
    assert text.startswith("acceptance NOT COMPARABLE: 2 pools")
    assert "neither a pass nor a hardware failure" in text
    line = (
        f"measured on the CPU, not on the pool's {_product('h100-train')} "
        f"({_pool('h100-train')['accelerator']}): figures are not comparable to its thresholds"
    )
    (said,) = [x for x in text.splitlines() if line in x]  # once, naming the three files
    assert all(f"h100-train/{probe}.json" in said for probe in TORCH_PROBES)
    assert "prod-east / h100-train (h100-80gb" in text and ": NOT COMPARABLE" in text
    row = next(x for x in text.splitlines() if "all-reduce bus bandwidth" in x)
    assert "NOT COMPARABLE" in row and "FAIL" not in row and " pass " not in row

    markdown = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "markdown", str(folder)
    ).output
    assert markdown.startswith("# ⚠️ Acceptance not comparable\n")
    assert f"- ⚠️ {line}" in markdown.replace("\\", "")
    assert "⚠️ **not comparable**" in markdown and "❌" not in markdown


def test_a_cpu_figure_below_its_threshold_is_not_called_a_failure(
    gpuplane: Run, tmp_path: Path
) -> None:
    """The failing set's all-reduce is under the pool's bandwidth (checked by the premises):
    measured on the CPU, it is not comparable instead of a failed fabric; the set still fails
    on what does not depend on the device (its inference latency, its unverified restore)."""
    folder = _relabelled(tmp_path, "failing", _cpu_labels())
    code, body = _report(gpuplane, str(folder))
    allreduce = _check(body, "h100-train", "peakBusbwGBps")
    assert allreduce["verdict"] == "not-comparable"
    assert allreduce["measured"] < _thresholds("h100-train")["allReduceBusBandwidthGBps"]
    assert _check(body, "h100-train", "verified")["verdict"] == "fail"
    assert _check(body, "l40s-infer", "p95Ms")["verdict"] == "fail"
    # failing wins: exit 1, as for any failure
    assert (code, body["status"]) == (1, "failed")


def _gpu_line(pool: str, name: str, why: str) -> str:
    """The device line the report must show for a GPU that is not the pool's, as
    docs/acceptance-report.md words it."""
    accelerator = _pool(pool)["accelerator"]
    return (
        f"measured on '{name}', not on the pool's {_product(pool)} ({accelerator}): {why}; "
        "figures are not comparable to its thresholds"
    )


def _devices(body: dict[str, Any], pool: str) -> list[dict[str, Any]]:
    (found,) = [p for p in body["pools"] if p["pool"] == pool]
    devices: list[dict[str, Any]] = found["devices"]
    return devices


def test_another_accelerator_is_not_comparable(gpuplane: Run, tmp_path: Path) -> None:
    folder = _relabelled(tmp_path, "passing", _gpu_labels("NVIDIA L4"))
    code, body = _report(gpuplane, str(folder))
    assert (code, body["status"]) == (3, "not-comparable")
    messages = {d["message"] for d in _devices(body, "h100-train")}
    assert messages == {_gpu_line("h100-train", "NVIDIA L4", "'NVIDIA L4' is not the pool's H100")}
    assert {d["name"] for d in _devices(body, "h100-train")} == {"NVIDIA L4"}
    assert _check(body, "h100-train", "samplesPerSecond")["verdict"] == "not-comparable"


def test_the_pools_own_accelerator_is_judged_as_measured(gpuplane: Run, tmp_path: Path) -> None:
    # torch's name for an H100 SXM5 80GB is "NVIDIA H100 80GB HBM3": no form word, the pool's
    # form (sxm) is not contradicted
    assert _pool("h100-train")["topology"]["form"] == "sxm"
    folder = _relabelled(tmp_path, "passing", _gpu_labels("NVIDIA H100 80GB HBM3"))
    code, body = _report(gpuplane, str(folder))
    assert (code, body["status"]) == (0, "passed"), body
    assert {d["comparable"] for d in _devices(body, "h100-train")} == {True}
    assert body["summary"]["resultsNotComparable"] == 0
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(folder)).output
    assert "not comparable" not in text.lower()


def _as_pool(tmp_path: Path, pool: str, labels: dict[str, str]) -> Path:
    """The passing set's h100-train results moved to `pool`, its torch probes' results with
    `labels`: a set that passes every threshold the pool declares, measured where `labels` say."""
    spec, thresholds = _pool(pool), _thresholds(pool)
    target = tmp_path / pool
    for probe in (*TORCH_PROBES, "storage"):
        data = _case("passing", f"h100-train/{probe}.json")
        data["pool"], data["cluster"] = pool, spec["cluster"]
        environment = {k: v for k, v in data["environment"].items() if k not in TORCH_LABELS}
        environment |= {
            "gpuplane.dev/pool": pool,
            "gpuplane.dev/cluster": spec["cluster"],
            "gpuplane.dev/accelerator": spec["accelerator"],
            **(labels if probe in TORCH_PROBES else {}),
        }
        data["environment"] = environment
        _write(target, f"{probe}.json", data)
    # the premise: every figure sits on the passing side of the pool's thresholds
    figures = {
        "allReduceBusBandwidthGBps": ("allreduce", "peakBusbwGBps", 1),
        "trainingSamplesPerSecond": ("training", "samplesPerSecond", 1),
        "checkpointWriteGBps": ("checkpoint", "writeGBps", 1),
        "restoreSeconds": ("checkpoint", "restoreSeconds", -1),
        "storageReadGBps": ("storage", "readGBps", 1),
    }
    assert set(thresholds) <= {*figures, "maxQueueWaitMinutes"}, thresholds
    for key, threshold in thresholds.items():
        if key in figures:
            probe, metric, sign = figures[key]
            measured = json.loads((target / f"{probe}.json").read_text())["metrics"][metric]
            assert sign * measured >= sign * threshold, (key, measured, threshold)
    return target


def test_a_gpu_that_is_not_the_pools_model_is_not_comparable(gpuplane: Run, tmp_path: Path) -> None:
    """h200-tune measured on a GeForce card with figures that would pass: no model of the
    catalog is in its name, and certainly not the pool's H200, so the pool is not accepted."""
    name = "NVIDIA GeForce RTX 4090"
    folder = _as_pool(tmp_path, "h200-tune", _gpu_labels(name))
    code, body = _report(gpuplane, str(folder))
    assert (code, body["status"], body["passed"]) == (3, "not-comparable", False)
    devices = _devices(body, "h200-tune")
    assert {(d["name"], d["comparable"]) for d in devices} == {(name, False)}
    line = _gpu_line("h200-tune", name, f"'{name}' is not the pool's H200")
    assert {d["message"] for d in devices} == {line}
    elsewhere = {c["thresholdKey"] for c in _checks(body, "h200-tune")} - {None}
    assert {
        c["thresholdKey"] for c in _checks(body, "h200-tune") if c["verdict"] == "not-comparable"
    } == elsewhere - {"maxQueueWaitMinutes"}
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(folder))
    assert text.exit_code == 3 and "PASSED" not in text.output
    assert line in text.output


def test_a_gpu_the_result_does_not_name_is_not_comparable(gpuplane: Run, tmp_path: Path) -> None:
    folder = _relabelled(tmp_path, "passing", {"device": "cuda:0"})
    code, body = _report(gpuplane, str(folder))
    assert (code, body["status"]) == (3, "not-comparable")
    devices = _devices(body, "h100-train")
    assert {(d["device"], d["name"], d["comparable"]) for d in devices} == {("cuda:0", None, False)}
    assert all("the GPU is not named in the result" in d["message"] for d in devices)
    assert _check(body, "h100-train", "samplesPerSecond")["verdict"] == "not-comparable"


def test_a_torch_result_that_records_no_device_is_not_comparable(
    gpuplane: Run, tmp_path: Path
) -> None:
    """An all-reduce and a checkpoint without any device label: nothing shows where they ran."""
    folder = _relabelled(tmp_path, "passing", {}, probes=("allreduce", "checkpoint"))
    code, body = _report(gpuplane, str(folder))
    assert (code, body["status"]) == (3, "not-comparable")
    devices = {d["probe"]: d for d in _devices(body, "h100-train")}
    assert {p: (d["device"], d["comparable"]) for p, d in devices.items()} == {
        "allreduce": (None, False),
        "checkpoint": (None, False),
        "training": ("cuda:0", True),
    }
    assert "records no device" in devices["allreduce"]["message"]


@pytest.mark.parametrize(
    ("pool", "name", "why"),
    [
        # h100-train declares topology.form sxm: a PCIe or NVL H100 is another part
        ("h100-train", "NVIDIA H100 PCIe", "'NVIDIA H100 PCIe' says PCIe, the pool's H100 is SXM"),
        ("h100-train", "NVIDIA H100 NVL", "'NVIDIA H100 NVL' says NVL, the pool's H100 is SXM"),
        # h200-tune declares sxm too; the H200 NVL is the PCIe card with an NVLink bridge
        ("h200-tune", "NVIDIA H200 NVL", "'NVIDIA H200 NVL' says NVL, the pool's H200 is SXM"),
    ],
)
def test_a_gpu_of_another_form_factor_is_not_comparable(
    gpuplane: Run, tmp_path: Path, pool: str, name: str, why: str
) -> None:
    assert _pool(pool)["topology"]["form"] == "sxm"
    folder = _as_pool(tmp_path, pool, _gpu_labels(name))
    code, body = _report(gpuplane, str(folder))
    assert (code, body["status"]) == (3, "not-comparable")
    (message,) = {d["message"] for d in _devices(body, pool)}
    assert message == _gpu_line(pool, name, f"{why} (its topology.form)")


@pytest.mark.parametrize("name", ["NVIDIA H200", "NVIDIA H200 SXM 141GB"])
def test_the_h200_pool_passes_on_an_h200(gpuplane: Run, tmp_path: Path, name: str) -> None:
    # torch calls an H200 SXM "NVIDIA H200": no form word is no mismatch
    code, body = _report(gpuplane, str(_as_pool(tmp_path, "h200-tune", _gpu_labels(name))))
    assert (code, body["status"]) == (0, "passed"), body


@pytest.mark.slow  # runs the checkpoint probe under real PyTorch
def test_a_pool_measured_only_on_the_cpu_never_passes(gpuplane: Run, tmp_path: Path) -> None:
    """The review's repro: a100-mig has no checkpoint thresholds (so no threshold turns not
    comparable), yet a checkpoint measured on this CPU must keep the pool from passing."""
    assert not {"checkpointWriteGBps", "restoreSeconds"} & set(_thresholds("a100-mig"))
    scratch = tmp_path / "scratch"
    storage = ("--path", str(scratch), "--bytes", "8M", "--block-bytes", "1M")
    _probe(tmp_path, "storage", *storage, pool="a100-mig")
    checkpoint = ("--megabytes", "1", "--device", "cpu", "--path", str(scratch))
    _probe(tmp_path, "checkpoint", *checkpoint, pool="a100-mig")
    results = tmp_path / "results"
    # the storage read passes on this machine or not: make it pass, so only the device decides
    stored = json.loads((results / "storage.json").read_text())
    stored["metrics"]["readGBps"] = _thresholds("a100-mig")["storageReadGBps"]
    _write(results, "storage.json", stored)
    code, body = _report(gpuplane, str(results))
    assert body["findings"] == [], body["findings"]
    assert (code, body["status"], body["passed"]) == (3, "not-comparable", False)
    (mig,) = body["pools"]
    assert (mig["pool"], mig["status"]) == ("a100-mig", "not-comparable")
    assert not any(c["verdict"] in ("fail", "missing") for c in mig["checks"])
    assert [(d["probe"], d["device"], d["comparable"]) for d in mig["devices"]] == [
        ("checkpoint", "cpu", False)
    ]
    assert body["summary"]["resultsNotComparable"] == 1
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(results))
    assert text.exit_code == 3
    assert text.output.startswith("acceptance NOT COMPARABLE:") and "PASSED" not in text.output
    assert "neither a pass nor a hardware failure" in text.output

    # a failure still wins over not comparable
    stored["metrics"]["readGBps"] = _thresholds("a100-mig")["storageReadGBps"] / 2
    _write(results, "storage.json", stored)
    code, body = _report(gpuplane, str(results))
    assert (code, body["status"]) == (1, "failed")
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.parametrize(
    ("key", "form", "name", "same"),
    [
        # the names torch.cuda.get_device_name reports
        ("h100-80gb", "sxm", "NVIDIA H100 80GB HBM3", True),  # an H100 SXM5 says no form
        ("h100-80gb", "sxm", "NVIDIA H100 PCIe", False),
        ("h100-80gb", "pcie", "NVIDIA H100 PCIe", True),
        ("h100-80gb", None, "NVIDIA H100 PCIe", True),  # the catalog's h100-80gb has PCIe cards
        ("h100-80gb", "sxm", "NVIDIA H100 NVL", False),
        ("h100-80gb", None, "NVIDIA H100 NVL", False),  # the NVL is the catalog's h100-94gb
        ("h100-94gb", "nvl", "NVIDIA H100 NVL", True),
        ("h100-94gb", "nvl", "NVIDIA H100 PCIe", False),
        ("h200-141gb", "sxm", "NVIDIA H200", True),
        ("h200-141gb", "sxm", "NVIDIA H200 NVL", False),
        ("h200-141gb", None, "NVIDIA H200 NVL", False),  # the catalog's h200-141gb is SXM only
        ("h200-141gb", "sxm", "NVIDIA H100 80GB HBM3", False),
        ("h200-141gb", "sxm", "NVIDIA GeForce RTX 4090", False),  # no model of the catalog
        ("h200-141gb", "sxm", "NVIDIA GH200 480GB", False),  # Grace Hopper is not an H200
        ("a100-80gb", "sxm", "NVIDIA A100-SXM4-80GB", True),
        ("a100-80gb", "sxm", "NVIDIA A100 80GB PCIe", False),
        ("a100-80gb", "pcie", "NVIDIA A100 80GB PCIe", True),
        ("a100-80gb", "sxm", "NVIDIA A100-SXM4-40GB", False),  # the memory says otherwise
        ("a100-80gb", "sxm", "NVIDIA A100-SXM4-80GB MIG 1g.10gb", True),  # a slice of the GPU
        ("a100-40gb", None, "NVIDIA A100-PCIE-40GB", True),
        ("l4", "pcie", "NVIDIA L4", True),
        ("l4", "pcie", "NVIDIA L40S", False),
        ("l40s", "pcie", "NVIDIA L40S", True),
        ("l40s", "pcie", "NVIDIA L4", False),
        ("h100-80gb", "sxm", "NVIDIA A100-SXM4-80GB", False),
        ("mi300x", None, "AMD Instinct MI300X", True),
        ("h100-80gb", "sxm", "Contoso Tensor Unit 9", False),  # cannot be shown: not comparable
    ],
)
def test_gpu_names_are_matched_to_the_pools_accelerator(
    key: str, form: str | None, name: str, same: bool
) -> None:
    from renderer.commands.acceptance.device import same_accelerator

    assert key in CATALOG
    assert same_accelerator(key, name, form) is same


def _outside_code(markdown: str) -> str:
    """The Markdown with its code spans taken out: what GitHub links and mentions in."""
    return re.sub(r"`[^`\n]*`", "", markdown)


def test_markdown_keeps_every_string_from_a_result_inert(gpuplane: Run, tmp_path: Path) -> None:
    """A file name with a backtick, a pipe and HTML, a GPU label that mentions a team, names
    an issue and links, and zero-width and bidirectional marks: none of it reshapes the table,
    mentions anyone or survives invisibly."""
    folder = _relabelled(
        tmp_path,
        "passing",
        _gpu_labels("NVIDIA L4 @org/team #1 https://x.example &#64;me &commat;team"),
    )
    (folder / "h100-train" / "training.json").rename(folder / "h100-train" / "ck`|<b>.json")
    checkpoint = _case("passing", "h100-train/checkpoint.json")
    checkpoint["environment"] |= _gpu_labels("NVIDIA L4\u200b\u200e\u200f @\u200bsomeone")
    _write(folder, "h100-train/checkpoint.json", checkpoint)
    md = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "markdown", str(folder)
    ).output
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    # every row has the header's seven pipes (GFM splits cells on each unescaped one)
    assert rows and all(len(re.findall(r"(?<!\\)(?:\\\\)*\|", row)) == 7 for row in rows)
    assert any("ck`" in row for row in rows)  # the name as written, in a longer code fence
    free = _outside_code(md)
    # GitHub mentions `@word`, references `#1` and links `scheme://`: each is broken by a
    # zero-width space (renderer/output/markdown_escape.py), which GitHub's filters do not skip
    assert "<b>" not in free and not re.search(r"@\w|(?<!&)#\d|://", free)
    # no entity of the input (`&commat;` is an @) is read as one: only the escaper's own
    assert not re.search(r"(?<!\\)&(?!amp;|lt;|gt;|#8203;)", free)
    for text in (md, gpuplane("-C", str(REPO), "acceptance", "report", str(folder)).output):
        assert not {"\u200b", "\u200e", "\u200f"} & set(text)


def test_a_hostile_device_label_stays_on_one_line(gpuplane: Run, tmp_path: Path) -> None:
    folder = _relabelled(tmp_path, "passing", _gpu_labels("NVIDIA L4\n::error::owned\x1b[2J"))
    result = gpuplane("-C", str(REPO), "acceptance", "report", str(folder))
    assert result.exit_code == 3
    assert "\x1b" not in result.output
    assert not any(line.startswith("::error") for line in result.output.splitlines())


def test_a_result_nested_too_deep_is_refused_before_parsing(tmp_path: Path) -> None:
    """A hostile result file cannot exhaust the JSON parser's stack: brackets deeper than the
    limit are a result-syntax finding (brackets inside strings do not count)."""
    from renderer.commands.acceptance.load import MAX_DEPTH

    deep = tmp_path / "deep.json"
    deep.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    results, findings = load_results([deep])
    assert not results
    assert [f.rule for f in findings] == ["result-syntax"]
    assert f"nested deeper than {MAX_DEPTH} levels" in findings[0].message
    quoted = tmp_path / "quoted.json"
    quoted.write_text(json.dumps({"note": "[" * 500}))
    _, findings = load_results([quoted])
    assert all("nested deeper" not in f.message for f in findings)


# --- the node check and the data path under load (issue 32) ---------------------------------

GPU_RUN = CASES / "gpu-run"


def _with_new_thresholds(root: Path, thresholds: dict[str, float]) -> None:
    path = root / "pools" / "h100-train.yaml"
    text = path.read_text()
    lines = "".join(f"    {k}: {v}\n" for k, v in thresholds.items())
    path.write_text(text.replace("  acceptance:\n", "  acceptance:\n" + lines, 1))


def test_the_new_steps_are_judged_by_their_step_label(
    gpuplane: Run, platform: Path, tmp_path: Path
) -> None:
    run = {p.name: json.loads(p.read_text()) for p in (GPU_RUN / "h100-train").glob("*.json")}
    concurrent = run["concurrent-storage.json"]["metrics"]
    # read threshold above the aggregate: the concurrent step fails; the plain storage step,
    # judged on its own readGBps, does not
    _with_new_thresholds(
        platform,
        {"concurrentStorageReadGBps": concurrent["aggregateReadGBps"] + 1, "objectStoreGBps": 1},
    )
    result = gpuplane("-C", str(platform), "acceptance", "report", "--format", "json", str(GPU_RUN))
    body = json.loads(result.output)
    assert result.exit_code == 1
    read = _check(body, "h100-train", "concurrent-storage.aggregateReadGBps")
    assert (read["measured"], read["verdict"]) == (concurrent["aggregateReadGBps"], "fail")
    assert _check(body, "h100-train", "storage.readGBps")["verdict"] == "pass"
    store = _check(body, "h100-train", "object-store.aggregateGBps")
    assert store["measured"] == run["object-store.json"]["metrics"]["aggregateGBps"]
    assert store["verdict"] == "pass"
    # the node-loss restore is not the checkpoint step's: its restoreSeconds is not judged there
    restores = [c for c in _checks(body, "h100-train") if c["metric"] == "restoreSeconds"]
    assert [c["result"].endswith("/checkpoint.json") for c in restores] == [True]


def test_the_report_names_the_slowest_node_and_link(gpuplane: Run, tmp_path: Path) -> None:
    run = json.loads((GPU_RUN / "h100-train" / "nodes.json").read_text())
    slow_node = min(run["metrics"]["nodes"], key=lambda n: n["intraBusbwGBps"])["node"]
    slow = min(run["metrics"]["links"], key=lambda link: link["busbwGBps"])
    text = gpuplane("-C", str(REPO), "acceptance", "report", str(GPU_RUN)).output
    assert f"slowest node {slow_node}" in text
    assert f"slowest link {slow['a']}<->{slow['b']}" in text
    code, body = _report(gpuplane, str(GPU_RUN))
    assert code == 0
    (pool,) = [p for p in body["pools"] if p["pool"] == "h100-train"]
    assert pool["nodes"][0]["node"] == slow_node
    assert len(pool["nodes"]) == run["metrics"]["nodeCount"]
    assert (pool["links"][0]["a"], pool["links"][0]["b"]) == (slow["a"], slow["b"])
    markdown = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "markdown", str(GPU_RUN)
    ).output
    assert f"| {slow_node} | 8 | yes |" in markdown


def test_an_unhealthy_node_fails_and_its_name_is_inert_in_markdown(
    gpuplane: Run, tmp_path: Path
) -> None:
    data = json.loads((GPU_RUN / "h100-train" / "nodes.json").read_text())
    data["ok"], data["error"] = False, "node @team unhealthy"
    data["metrics"]["nodes"][1].update(
        {"node": "evil|@admins", "healthy": False, "error": "matmul differs from the CPU"}
    )
    _write(tmp_path, "nodes.json", data)
    code, body = _report(gpuplane, str(tmp_path))
    assert code == 1
    healthy = _check(body, "h100-train", "healthyNodes")
    assert healthy["verdict"] == "fail"
    assert "matmul differs from the CPU" in healthy["note"]
    markdown = gpuplane(
        "-C", str(REPO), "acceptance", "report", "--format", "markdown", str(tmp_path)
    ).output
    # the cell's | is escaped, and the mention is broken (as the report breaks every one)
    assert "| evil\\|@&#8203;admins | 8 | no |" in markdown
    assert "@admins" not in markdown
