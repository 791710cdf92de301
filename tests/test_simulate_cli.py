"""`gpuplane simulate TRACE` on the example platform: the JSON envelope, and a bad trace's
findings at their line and column with exit 1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HEADER = "submit_s,namespace,name,pods,gpus_per_pod,cpu_per_pod,memory_per_pod,duration_s,priority"


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch, platform: Path) -> Path:
    monkeypatch.chdir(platform)
    return platform


def test_json_answer_is_in_the_envelope_with_teams_and_pools(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    # llm's h100-train quota: nominal 16 in its Cohort (teams/llm.yaml). One job of 2 x 8
    # GPUs at t=0 for an hour is admitted at once; a second at t=0 of 8 more GPUs borrows
    # (the pool has 32 and the other teams are idle): both wait 0.
    trace = in_repo / "trace.csv"
    trace.write_text(
        f"{HEADER}\n0,llm-train,a,2,8,32,256Gi,3600,\n0,llm-train,b,1,8,32,256Gi,3600,\n",
        encoding="utf-8",
    )
    result = gpuplane("simulate", "trace.csv", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["schemaVersion"], data["command"], data["findings"]) == (2, "simulate", [])
    (llm,) = data["teams"]
    assert llm["name"] == "llm"
    assert llm["wait"] == {"p50": 0, "p90": 0, "p99": 0, "max": 0}
    assert (llm["completed"], llm["never"], llm["preempted"]) == (2, 0, 0)
    h100 = next(p for p in data["pools"] if p["name"] == "h100-train")
    # 24 of the pool's GPUs for the whole hour simulated
    assert h100["utilisation"] == pytest.approx(24 / h100["gpus"])


def test_a_bad_trace_is_every_finding_at_its_cell(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    trace = in_repo / "trace.csv"
    trace.write_text(
        f"{HEADER}\n"
        "0,llm-train,a,two,8,32,256Gi,3600,\n"
        "0,nobody,b,1,8,32,256Gi,3600,\n"
        "0,llm-train,c,1,8,32,256Gi,3600,prod-urgent\n",
        encoding="utf-8",
    )
    result = gpuplane("simulate", "trace.csv")
    assert result.exit_code == 1
    assert "trace.csv:2:15: error[trace-field] pods 'two': expected integer" in result.output
    assert "Traceback" not in result.output


def test_names_are_checked_against_the_platform(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    trace = in_repo / "trace.csv"
    trace.write_text(
        f"{HEADER}\n0,nobody,b,1,8,32,256Gi,3600,\n0,llm-train,c,1,8,32,256Gi,3600,prod-urgent\n",
        encoding="utf-8",
    )
    result = gpuplane("simulate", "trace.csv")
    assert result.exit_code == 1
    assert "trace.csv:2:3: error[trace-unknown-name] namespace 'nobody'" in result.output
    # the priority cell starts after "0,llm-train,c,1,8,32,256Gi,3600," (32 characters)
    assert "trace.csv:3:33: error[trace-unknown-name] WorkloadPriorityClass 'prod-urgent'" in (
        result.output
    )


SAMPLE = Path(__file__).parent / "cases" / "traces" / "alibaba"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--from", "alibaba-gpu-2023", "{alibaba}", "--base", "HEAD"], "leave out --base"),
        (["{folder}"], "is a folder"),
        (["trace.csv", "--limit", "3"], "--limit goes with --from"),
    ],
    ids=["from-with-base", "folder-without-from", "limit-without-from"],
)
def test_options_that_do_not_go_together_are_usage_errors(
    in_repo: Path, gpuplane: Callable[..., Any], args: list[str], says: str
) -> None:
    (in_repo / "trace.csv").write_text(f"{HEADER}\n0,llm-train,a,1,1,1,1Gi,60,\n")
    (in_repo / "folder").mkdir()
    alibaba = SAMPLE / "pods.csv"
    filled = [a.format(alibaba=alibaba, folder="folder") for a in args]
    result = gpuplane("simulate", *filled)
    assert result.exit_code == 2 and says in result.output, result.output


def test_a_mapped_trace_draws_its_chart(
    in_repo: Path, gpuplane: Callable[..., Any], tmp_path: Path
) -> None:
    alibaba = SAMPLE / "pods.csv"
    chart = tmp_path / "waits.svg"
    result = gpuplane("simulate", "--from", "alibaba-gpu-2023", str(alibaba), "--chart", str(chart))
    assert result.exit_code == 0, result.output
    assert "<svg" in chart.read_text() and "Mapping" in result.output
