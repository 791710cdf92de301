"""`gpuplane simulate TRACE --base REF`: one trace on two revisions of the example platform.

The repository is the example's inputs committed once; each test edits the working tree as a
pull request would. The expectations are worked by hand from Kueue's quota rules on the
rendered objects (docs/simulate.md):

vision's Cohort on h100-train (rendered/prod-east/queueing/cohort-vision.yaml) has nominal 8,
lendingLimit 4, borrowingLimit 16, under Cohort `prod` beside llm (16, lends 8), recsys and
speech (4, lend 2 each). Kueue's potentialAvailable for vision is its guaranteed quota
(nominal - lendingLimit) plus what `prod` can give it: the sum of what every child lends,
capped by what vision may borrow (stored in the parent + borrowingLimit):

- base: 8 - 4 = 4 guaranteed; prod holds 8 + 2 + 2 + 4 = 16, vision may take
  min(4 + 16, 16) = 16 of it: 20 GPUs (plan's "reachable" says 20 too);
- head, nominal 8 -> 4: 0 guaranteed; prod holds 8 + 2 + 2 + 4 = 16, vision may take
  min(4 + 16, 16) = 16: 16 GPUs.

The trace: at t=0 vision-train submits a (8 GPUs, 1 h), b (8 GPUs, 1 h), c (4 GPUs, 30 min);
nobody else runs. Base: 8 + 8 + 4 = 20 fit, every wait 0. Head: a and b take 16, c waits for
a (or b) to end at t = 3600 s: waits [0, 0, 3600], whose nearest-rank p90 (the 3rd of 3) is
3600 s: vision's p90 grows by 3600 s, its p50 stays 0, all three complete either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.simulate.compare import TeamSides, over_bound
from renderer.commands.simulate.report import TeamReport, Waits
from renderer.model.platform import WaitGrowth
from tests.conftest import edit_once, git

HEADER = "submit_s,namespace,name,pods,gpus_per_pod,cpu_per_pod,memory_per_pod,duration_s,priority"
TRACE = (
    f"{HEADER}\n"
    "0,vision-train,a,1,8,32,256Gi,3600,\n"
    "0,vision-train,b,1,8,32,256Gi,3600,\n"
    "0,vision-train,c,1,4,16,128Gi,1800,\n"
)
VISION_H100 = "{pool: h100-train, nominal: 8, borrowingLimit: 16, lendingLimit: 4}"


def lower_vision(repo: Path) -> None:
    edit_once(
        repo / "teams/vision.yaml",
        VISION_H100,
        "{pool: h100-train, nominal: 4, borrowingLimit: 16, lendingLimit: 4}",
    )


@pytest.fixture
def repo(repo: Path) -> Path:
    """conftest's copy of the committed example, the trace beside its inputs (untracked)."""
    (repo / "trace.csv").write_text(TRACE, encoding="utf-8")
    return repo


def _simulate(gpuplane: Callable[..., Any], repo: Path, *args: str) -> Any:
    return gpuplane("-C", str(repo), "simulate", str(repo / "trace.csv"), *args)


def test_a_lower_nominal_grows_the_teams_p90_by_the_worked_wait(
    repo: Path, gpuplane: Callable[..., Any]
) -> None:
    lower_vision(repo)
    result = _simulate(gpuplane, repo, "--base", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["schemaVersion"], data["command"], data["findings"]) == (2, "simulate", [])
    assert data["base"] == {"label": "HEAD", "commit": git(repo, "rev-parse", "HEAD")}
    (vision,) = data["teams"]
    assert vision["name"] == "vision"
    assert vision["base"]["wait"] == {"p50": 0, "p90": 0, "p99": 0, "max": 0}
    assert vision["head"]["wait"] == {"p50": 0, "p90": 3600, "p99": 3600, "max": 3600}
    assert vision["delta"] == {
        "wait": {"p50": 0, "p90": 3600, "p99": 3600, "max": 3600},
        "completed": 0,
        "never": 0,
        "preempted": 0,
        "preempting": 0,
    }
    h100 = next(p for p in data["pools"] if p["name"] == "h100-train")
    # 32 GPUs; 18 GPU-hours used either way (8 + 8 for an hour, 4 for half an hour), over a
    # span of 1 h at the base (c runs beside a and b) and 1.5 h in the head (c after them)
    assert h100["base"]["utilisation"] == pytest.approx(18 / 32)
    assert h100["head"]["utilisation"] == pytest.approx(18 / 48)
    assert h100["delta"]["usedGpuHours"] == 0
    # borrowed beyond vision's nominal: base 12 GPUs for 30 min + 8 for 30 min = 10 GPU-h;
    # head 12 for an hour, then c's 4 within the nominal of 4: 12 GPU-h
    assert h100["delta"]["borrowedGpuHours"] == pytest.approx(2)
    assert (data["onlyBase"], data["onlyHead"]) == ([], [])


def test_text_and_markdown_show_base_to_head(repo: Path, gpuplane: Callable[..., Any]) -> None:
    lower_vision(repo)
    text = _simulate(gpuplane, repo, "--base", "HEAD")
    assert text.exit_code == 0, text.output
    assert "against HEAD (" in text.output
    vision = next(line for line in text.output.splitlines() if line.startswith("vision"))
    assert "0s → 1h00m (+1h00m)" in vision
    assert vision.split()[-3:] == ["3", "0", "0"]  # completed, never, preempted: the same
    markdown = _simulate(gpuplane, repo, "--base", "HEAD", "--format", "markdown")
    assert "| vision | 0s | 0s → 1h00m (+1h00m) |" in markdown.output


def test_an_unchanged_platform_reports_zero_deltas(
    repo: Path, gpuplane: Callable[..., Any]
) -> None:
    result = _simulate(gpuplane, repo, "--base", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for team in data["teams"]:
        assert team["base"] == team["head"]
        assert set(team["delta"]["wait"].values()) == {0}
        assert [team["delta"][k] for k in ("completed", "never", "preempted")] == [0, 0, 0]
    for pool in data["pools"]:
        assert set(pool["delta"].values()) == {0}


def test_a_namespace_on_one_side_only_is_replayed_there_and_marked_absent(
    repo: Path, gpuplane: Callable[..., Any]
) -> None:
    # the head removes vision-notebooks; the trace has a notebook there and an llm job
    edit_once(
        repo / "teams/vision.yaml",
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "",
    )
    (repo / "trace.csv").write_text(
        f"{HEADER}\n0,vision-notebooks,nb,1,0,1,1Gi,600,\n0,llm-train,a,1,8,32,256Gi,600,\n",
        encoding="utf-8",
    )
    result = _simulate(gpuplane, repo, "--base", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["onlyBase"], data["onlyHead"]) == (["vision-notebooks"], [])
    teams = {t["name"]: t for t in data["teams"]}
    assert teams["vision"]["base"]["workloads"] == 1
    assert (teams["vision"]["head"], teams["vision"]["delta"]) == (None, None)
    assert teams["llm"]["delta"]["wait"]["p90"] == 0
    text = _simulate(gpuplane, repo, "--base", "HEAD")
    assert "0s → absent" in text.output
    assert "replayed at the base only (not a team namespace in the working tree): " in text.output


def test_a_bad_ref_exits_2(repo: Path, gpuplane: Callable[..., Any]) -> None:
    result = _simulate(gpuplane, repo, "--base", "no-such-branch")
    assert result.exit_code == 2
    assert "unknown revision 'no-such-branch'" in result.output
    assert "Traceback" not in result.output
    refused = _simulate(gpuplane, repo, "--base", "--upload-pack=x")
    assert refused.exit_code == 2


def test_a_bad_trace_is_its_findings_with_exit_1(repo: Path, gpuplane: Callable[..., Any]) -> None:
    (repo / "trace.csv").write_text(
        f"{HEADER}\n0,vision-train,a,two,8,32,256Gi,3600,\n", encoding="utf-8"
    )
    result = _simulate(gpuplane, repo, "--base", "HEAD")
    assert result.exit_code == 1
    assert "trace.csv:2:18: error[trace-field] pods 'two'" in result.output
    (repo / "trace.csv").write_text(f"{HEADER}\n0,nobody,a,1,8,32,256Gi,3600,\n")
    unknown = _simulate(gpuplane, repo, "--base", "HEAD")
    assert unknown.exit_code == 1
    # neither side has the namespace: said once, without a side
    assert unknown.output.count("error[trace-unknown-name] namespace 'nobody'") == 1
    assert "Traceback" not in unknown.output


def test_a_base_that_does_not_validate_is_one_finding(
    repo: Path, gpuplane: Callable[..., Any]
) -> None:
    good = (repo / "teams/vision.yaml").read_text()
    edit_once(repo / "teams/vision.yaml", VISION_H100, "{pool: h100-train, nominal: -1}")
    git(repo, "commit", "-q", "-am", "broken")
    (repo / "teams/vision.yaml").write_text(good)
    result = _simulate(gpuplane, repo, "--base", "HEAD")
    assert result.exit_code == 1
    assert "error[simulate-base-invalid] the base HEAD (" in result.output
    assert "HEAD:teams/vision.yaml:" in result.output
    assert "Traceback" not in result.output


def _team(p90: float, never: int = 0) -> TeamReport:
    return TeamReport("t", 10, Waits(0, p90, p90, p90, 10 - never), 10 - never, never, (), 0, 0)


@pytest.mark.parametrize(
    ("before", "after", "never", "over"),
    [
        (0, 600, 0, False),  # +600 s is not more than 600 s
        (0, 601, 0, True),  # +601 s > 600 s, and > 25% of 0
        (3600, 4200, 0, False),  # +600 s: not more than 600 s
        (3600, 4800, 0, True),  # +1200 s > 600 s and > 900 s (25% of 3600)
        (7200, 8400, 0, False),  # +1200 s > 600 s but not > 1800 s (25% of 7200)
        (7200, 9001, 0, True),  # +1801 s > 1800 s
        (3600, 3600, 1, True),  # a workload the base admitted never is
        (3600, 0, 0, False),  # waits shrink
    ],
)
def test_the_bound_is_seconds_and_ratio(
    before: float, after: float, never: int, over: bool
) -> None:
    team = TeamSides("t", _team(before), _team(after, never))
    assert over_bound(team, WaitGrowth(seconds=600, ratio=0.25)) is over
    assert over_bound(TeamSides("t", None, _team(after)), WaitGrowth()) is False
