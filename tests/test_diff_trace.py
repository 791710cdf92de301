"""`gpuplane diff --trace TRACE`: the "Simulated waits" of a pull-request comment, and their
risk against the bound the base's gpuplane.yaml sets (`simulate.p90WaitGrowth`).

The change and the trace are tests/test_simulate_base.py's, whose docstring works the waits
out by hand: lowering vision's h100-train nominal from 8 to 4 makes the third of three
vision-train jobs wait 3600 s, so vision's p90 wait grows from 0 to 3600 s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.diff.json_form import report_from_json
from renderer.commands.diff.markdown import diff_markdown
from tests.conftest import edit_once, git
from tests.test_simulate_base import HEADER, TRACE, lower_vision

SETTING = '  codeowners: ["@example/platform"]\n'


@pytest.fixture
def repo(repo: Path) -> Path:
    """conftest's copy of the committed example, the trace beside its inputs (untracked)."""
    (repo / "trace.csv").write_text(TRACE, encoding="utf-8")
    return repo


def _diff(gpuplane: Callable[..., Any], repo: Path, crds: Path, *args: str) -> Any:
    trace = str(repo / "trace.csv")
    return gpuplane(
        "-C", str(repo), "diff", "--base", "HEAD", "--crds", str(crds), "--trace", trace, *args
    )


def _json(gpuplane: Callable[..., Any], repo: Path, crds: Path) -> dict[str, Any]:
    result = _diff(gpuplane, repo, crds, "--format", "json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def _waits(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in data["changes"] if c["code"] == "simulated-wait"]


def _bound(repo: Path, setting: str) -> None:
    """Set simulate.p90WaitGrowth in gpuplane.yaml."""
    edit_once(
        repo / "gpuplane.yaml", SETTING, f"{SETTING}  simulate:\n    p90WaitGrowth: {setting}\n"
    )


def test_a_p90_growth_past_the_default_bound_is_high(
    repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    # default bound: more than 600 s and more than 25% of the base's p90 (0): +3600 s is over
    lower_vision(repo)
    data = _json(gpuplane, repo, crds)
    (vision,) = _waits(data)
    assert (vision["risk"], vision["team"], vision["cluster"]) == ("high", "vision", None)
    assert vision["summary"].startswith("p90 wait 0s → 1h00m (+1h00m): over the platform's bound")
    waits = data["simulatedWaits"]
    assert waits["bound"] == {"seconds": 600, "ratio": 0.25}
    (team,) = waits["comparison"]["teams"]
    assert team["delta"]["wait"]["p90"] == 3600
    assert data["summary"]["high"] == 1
    # the GPU quota finding stays as diff rates it (a nominal going down: medium)
    assert [c["risk"] for c in data["changes"] if c["code"] == "gpu-quota"] == ["medium"]
    # a CI job renders the comment from the JSON it kept: the section comes back
    markdown = diff_markdown(report_from_json(data))
    assert "### Simulated waits" in markdown
    assert "| vision | 0s | 0s → 1h00m (+1h00m) |" in markdown
    assert markdown.rstrip().splitlines()[1] == "**1 high-risk change** · 1 medium · 2 low"


def test_a_bad_trace_exits_1_before_anything_renders(
    repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    (repo / "trace.csv").write_text(f"{HEADER}\n0,vision-train,a,1,8,32,256Gi,-5,\n")
    result = _diff(gpuplane, repo, crds)
    assert result.exit_code == 1
    # the duration cell starts after "0,vision-train,a,1,8,32,256Gi," (30 characters)
    assert "trace.csv:2:31: error[trace-field] duration_s" in result.output
    assert "Traceback" not in result.output
    (repo / "trace.csv").write_text(TRACE)
    bad_ref = gpuplane(
        "-C", str(repo), "diff", "--base", "nope", "--trace", str(repo / "trace.csv")
    )
    assert bad_ref.exit_code == 2
    assert "unknown revision 'nope'" in bad_ref.output


@pytest.mark.slow
@pytest.mark.parametrize(("seconds", "risk"), [(3600, "medium"), (3599, "high")])
def test_the_bases_bound_decides(
    repo: Path, gpuplane: Callable[..., Any], crds: Path, seconds: int, risk: str
) -> None:
    # +3600 s is not more than 3600 s (medium: a wait grew within the bound); it is more than
    # 3599 s, and more than 0% of the base's 0 (high)
    _bound(repo, f"{{seconds: {seconds}, ratio: 0}}")
    git(repo, "commit", "-q", "-am", "the platform's bound")
    lower_vision(repo)
    data = _json(gpuplane, repo, crds)
    assert [c["risk"] for c in _waits(data)] == [risk]
    assert data["simulatedWaits"]["bound"] == {"seconds": seconds, "ratio": 0}


@pytest.mark.slow
def test_the_change_cannot_loosen_its_own_bound(
    repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    _bound(repo, "{seconds: 7200}")
    lower_vision(repo)
    data = _json(gpuplane, repo, crds)
    assert [c["risk"] for c in _waits(data)] == ["high"]
    assert data["simulatedWaits"]["bound"]["seconds"] == 600
    (setting,) = [c for c in data["changes"] if c["code"] == "repository-changed"]
    assert "waitGrowth changed" in setting["summary"]


@pytest.mark.slow
def test_an_unchanged_platform_has_zero_deltas_and_no_wait_finding(
    repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    data = _json(gpuplane, repo, crds)
    assert data["changes"] == []
    (team,) = data["simulatedWaits"]["comparison"]["teams"]
    assert set(team["delta"]["wait"].values()) == {0}
    markdown = _diff(gpuplane, repo, crds).output
    assert "**No changes**" in markdown
    assert "### Simulated waits" in markdown
    text = _diff(gpuplane, repo, crds, "--format", "text").output
    assert text.startswith("no changes: ")
    rows = text.split("Simulated waits")[1].splitlines()
    vision = next(line for line in rows if line.startswith("vision"))
    assert vision.split() == ["vision", "0s", "0s", "0s", "0s", "3", "0", "0"]  # the same


@pytest.mark.slow
def test_a_name_no_side_has_is_a_finding_with_exit_1(
    repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    (repo / "trace.csv").write_text(f"{HEADER}\n0,nobody,a,1,8,32,256Gi,60,\n")
    result = _diff(gpuplane, repo, crds)
    assert result.exit_code == 1
    assert "trace.csv:2:3: error[trace-unknown-name] namespace 'nobody'" in result.output
    assert "Traceback" not in result.output
