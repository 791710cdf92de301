"""`gpuplane diff` shows a pool's acceptance evidence beside its capacity change, and rates high a
change that adds or extends a growthException (docs/capacity-gate.md). Each case is a git
repository of the example platform and one edit to it; the evidence file is written by hand
after schemas/evidence.schema.json."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, copy_inputs, edit_once, git
from tests.test_capacity_gate import IMAGE, POOL, _evidence, _set_image, _write_evidence

EXCEPTION = "  growthException:\n    by: platform-team\n    reason: burn-in\n    until: {}\n"


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, git_env: None) -> Path:
    root = copy_inputs(REPO, tmp_path_factory.mktemp("evidence") / "repo")
    _set_image(root)
    edit_once(root / POOL, "  workload:", f"{EXCEPTION.format('2026-03-20')}  workload:")
    git(root, "-c", "init.defaultBranch=main", "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


@pytest.fixture
def repo(committed: Path, tmp_path: Path, git_env: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUPLANE_TODAY", "2026-03-10")
    target = tmp_path / "repo"
    shutil.copytree(committed, target, symlinks=True)
    return target


def _diff(gpuplane: Callable[..., Any], repo: Path, form: str = "json") -> str:
    result = gpuplane("-C", str(repo), "diff", "--base", "HEAD", "--format", form)
    assert result.exit_code == 0, result.output
    output: str = result.output
    return output


def _codes(found: list[dict[str, Any]], code: str) -> list[dict[str, Any]]:
    return [f for f in found if f["code"] == code]


@pytest.mark.slow  # a diff against a committed base in each of four forms
def test_a_resized_pool_shows_its_evidence_in_every_form(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / POOL, "  nodes: 4\n", "  nodes: 8\n")
    _write_evidence(repo, _evidence())
    (resized,) = _codes(json.loads(_diff(gpuplane, repo))["changes"], "pool-resized")
    assert resized["evidence"] == {
        "file": "acceptance/prod-east/h100-train.yaml",
        "baseSize": 4,
        "size": 8,
        "verdict": "pass",
        "ageDays": 5,  # finished 2026-03-05
        "covered": 4,
        "image": IMAGE,
        "digest": "sha256:" + "ab" * 32,
        "driver": "570.124.06",
    }
    line = (
        f"evidence: pass, 5 days old, 4/4 nodes covered, image {IMAGE} "
        f"(sha256:{'ab' * 32}), driver 570.124.06 (acceptance/prod-east/h100-train.yaml)"
    )
    assert resized["details"] == [line]
    assert line in _diff(gpuplane, repo, "text")
    assert line in _diff(gpuplane, repo, "markdown")


def test_a_resized_pool_without_evidence_says_so(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / POOL, "  nodes: 4\n", "  nodes: 6\n")
    (resized,) = _codes(json.loads(_diff(gpuplane, repo))["changes"], "pool-resized")
    assert resized["details"] == ["evidence: none (acceptance/prod-east/h100-train.yaml)"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("until", "high"), [("2026-04-30", True), ("2026-03-20", False), ("2026-03-15", False)]
)
def test_extending_a_growth_exception_is_high(
    repo: Path, gpuplane: Any, until: str, high: bool
) -> None:
    edit_once(repo / POOL, "until: 2026-03-20", f"until: {until}")
    found = _codes(json.loads(_diff(gpuplane, repo))["changes"], "growth-exception")
    assert [f["risk"] for f in found] == (["high"] if high else [])
    if high:
        assert "until 2026-04-30, on platform-team's word: burn-in" in found[0]["summary"]


def test_adding_a_growth_exception_is_high(repo: Path, gpuplane: Any) -> None:
    pool = repo / "pools" / "l40s-infer.yaml"
    edit_once(pool, "  workload:", EXCEPTION.format("2026-03-31") + "  workload:")
    (found,) = _codes(json.loads(_diff(gpuplane, repo))["changes"], "growth-exception")
    assert (found["risk"], found["subject"]) == ("high", "l40s-infer")
    assert found["at"].startswith("pools/l40s-infer.yaml:")
