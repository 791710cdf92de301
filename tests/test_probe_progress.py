"""The probes say what they are doing on stderr while they run (workflows/probes/progress.py):
a line per phase with the time since the start, a "still running" line every few seconds of a
long phase, and nothing else changes: stdout is the one summary line and the JSON result has the
same fields, valid against schemas/results/, whether progress is on or off."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

REPO = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^\[(\w+) \+(\d+\.\d)s\] (.+)$")


def _probe(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    environ.update(env, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "workflows.probes", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environ,
        timeout=120,
    )


def _valid(result: dict[str, Any]) -> None:
    folder = REPO / "schemas" / "results"
    for name in ("result", result["probe"]):
        schema = json.loads((folder / f"{name}.schema.json").read_text(encoding="utf-8"))
        if name != "result":
            if not result["ok"]:
                continue
            Draft202012Validator(schema, format_checker=FormatChecker()).validate(result["metrics"])
        else:
            Draft202012Validator(schema, format_checker=FormatChecker()).validate(result)


def _shape(result: dict[str, Any]) -> tuple[list[str], list[str], bool]:
    return sorted(result), sorted(result["metrics"]), result["ok"]


def test_storage_says_each_phase_on_stderr_and_nothing_else_changes(tmp_path: Path) -> None:
    on = _probe(tmp_path, "storage", "--bytes", "8M", "--path", str(tmp_path), "--out", "on.json")
    off = _probe(
        tmp_path,
        *("storage", "--bytes", "8M", "--path", str(tmp_path), "--out", "off.json"),
        GPUPLANE_PROBE_PROGRESS="0",
    )
    assert on.returncode == off.returncode == 0, on.stderr
    assert off.stderr == ""  # before progress lines, a probe printed nothing to stderr
    lines = on.stderr.splitlines()
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    messages = [m[3] for m in parsed if m]
    assert {m[1] for m in parsed if m} == {"storage"}
    assert messages[0] == "started"
    assert messages[-1].startswith("finished in ") and messages[-1].endswith(": ok")
    for name in ("write", "read"):
        assert any(m.startswith(f"{name}: ") and "MB" in m for m in messages), messages
        assert any(re.fullmatch(rf"{name}: done in \d+\.\d s", m) for m in messages), messages
    times = [float(m[2]) for m in parsed if m]
    assert times == sorted(times)  # elapsed since the start, never backwards
    # stdout: the one summary line, as without progress
    pattern = r"storage: write [\d.]+ GB/s, read [\d.]+ GB/s over 8\.4 MB -> {}\n"
    assert re.fullmatch(pattern.format("on.json"), on.stdout)
    assert re.fullmatch(pattern.format("off.json"), off.stdout)
    results = [json.loads((tmp_path / f"{n}.json").read_text()) for n in ("on", "off")]
    for result in results:
        _valid(result)
        assert "progress" not in json.dumps(result)
    assert _shape(results[0]) == _shape(results[1])


def test_a_long_phase_says_it_is_still_running(tmp_path: Path) -> None:
    """The inference probe waiting for a server that never answers: one phase of 3 s, which
    says it is still running at the heartbeat (set to 0.5 s here; 5 s by default)."""
    done = _probe(
        tmp_path,
        *("inference", "--endpoint", "http://127.0.0.1:9", "--wait-seconds", "3"),
        *("--model", "m", "--requests", "1", "--out", "r.json"),
        GPUPLANE_PROBE_HEARTBEAT="0.5",
    )
    assert done.returncode == 1
    messages = [m[3] for m in map(LINE.match, done.stderr.splitlines()) if m]
    assert messages[0] == "started"
    assert messages[1].startswith("wait: for http://127.0.0.1:9, up to 3 s")
    beats = [m for m in messages if re.fullmatch(r"wait: still running \(\d+ s\)", m)]
    assert len(beats) >= 3, messages
    assert messages[-1].endswith(": failed")
    assert done.stderr.splitlines()[-1].startswith("inference failed: ")  # the CLI's own line
    result = json.loads((tmp_path / "r.json").read_text())
    _valid(result)
    assert result["ok"] is False


def test_only_rank_zero_of_a_world_speaks(tmp_path: Path) -> None:
    done = _probe(
        tmp_path,
        *("storage", "--bytes", "4M", "--path", str(tmp_path), "--out", "r.json"),
        RANK="1",
        WORLD_SIZE="2",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
