"""The whole loop of docs/prove-then-grow.md, as a platform engineer runs it: a pull request
grows a production pool, `validate` refuses it, the suite's results are recorded with `gpuplane
acceptance record`, and the evidence lets the same change pass; `diff` shows it beside the size.

The results are the fixtures shaped like an H100 run (tests/cases/acceptance/gpu-run/: 4 nodes,
NVIDIA H100 80GB HBM3, driver 570.124.06, the example pool's production image) and a laptop's
CPU run of the same probes (cpu-run/). Nothing here writes evidence by hand: every file the gate
reads is one `record` wrote, so the two ends of the loop are held to each other.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, commit_all, copy_inputs, edit_once, git

pytestmark = pytest.mark.usefixtures("git_env")

CASES = REPO / "tests" / "cases" / "acceptance"
POOL = "pools/h100-train.yaml"
EVIDENCE = "acceptance/prod-east/h100-train.yaml"
RUN_DAY = "2026-11-28"
"""The day the gpu-run fixtures were measured (their startedAt)."""


def _results(tmp_path: Path, run: str) -> Path:
    """The run's result files, copied where a platform engineer would have saved them."""
    target = tmp_path / "results" / f"{run}-{len(list(tmp_path.glob('results/*')))}"
    shutil.copytree(CASES / run, target)
    return target


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example's inputs, committed on main; today is a few days after the run."""
    monkeypatch.setenv("GPUPLANE_TODAY", "2026-12-03")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796169600")  # 2026-12-02: record's clock
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    root = copy_inputs(REPO, tmp_path / "repo")
    commit_all(root, "base")
    git(root, "checkout", "-q", "-b", "grow-h100")
    return root


def _gate(gpuplane: Any, root: Path) -> list[dict[str, Any]]:
    result = gpuplane("-C", str(root), "validate", "--base", "main", "--format", "json")
    body = json.loads(result.output)
    return [d for d in body["findings"] if d["rule"] == "capacity-evidence"]


def _grow(root: Path, before: int, after: int) -> None:
    edit_once(root / POOL, f"  nodes: {before}\n", f"  nodes: {after}\n")


@pytest.mark.slow
def test_a_pool_grows_only_once_a_gpu_run_is_recorded(
    repo: Path, tmp_path: Path, gpuplane: Any
) -> None:
    _grow(repo, 4, 8)
    (refused,) = _gate(gpuplane, repo)
    assert refused["level"] == "error" and refused["file"] == POOL
    assert f"{EVIDENCE} does not exist" in refused["message"]

    # the torch probes run on a laptop's CPU instead (the rest as on the pool): recorded,
    # honestly, as not comparable, and still refused
    laptop = _results(tmp_path, "gpu-run")
    for result in (CASES / "cpu-run" / "h100-train").glob("*.json"):
        shutil.copy(result, laptop / "h100-train" / result.name)
    cpu = gpuplane("-C", str(repo), "acceptance", "record", str(laptop))
    assert cpu.exit_code == 3, cpu.output
    recorded = yaml.safe_load((repo / EVIDENCE).read_text())
    assert recorded["spec"]["verdict"] == "not-comparable"
    (still,) = _gate(gpuplane, repo)
    assert "not-comparable" in still["message"]

    # the GPU run, recorded over it: the same change now passes
    gpu = gpuplane("-C", str(repo), "acceptance", "record", str(_results(tmp_path, "gpu-run")))
    assert gpu.exit_code == 0, gpu.output
    recorded = yaml.safe_load((repo / EVIDENCE).read_text())
    pool = yaml.safe_load((repo / POOL).read_text())["spec"]
    assert recorded["spec"]["verdict"] == "pass"
    assert recorded["spec"]["image"]["reference"] == pool["productionImage"]
    assert recorded["spec"]["driver"] == pool["image"]["driver"]
    assert len(recorded["spec"]["nodes"]) == 4  # the pool's size before the change
    assert _gate(gpuplane, repo) == []
    done = gpuplane("-C", str(repo), "validate", "--base", "main")
    assert done.exit_code == 0, done.output

    # diff puts the evidence beside the size change
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "grow h100-train to 8 nodes, with its evidence")
    diff = gpuplane("-C", str(repo), "diff", "--base", "main", "--format", "json")
    findings = json.loads(diff.output)["changes"]
    (resized,) = [f for f in findings if f["code"] == "pool-resized"]
    assert resized["evidence"]["verdict"] == "pass"


def test_evidence_of_four_nodes_does_not_prove_eight(
    repo: Path, tmp_path: Path, gpuplane: Any
) -> None:
    """After the pool grew to 8 nodes, its 4-node evidence cannot let it grow again."""
    record = gpuplane("-C", str(repo), "acceptance", "record", str(_results(tmp_path, "gpu-run")))
    assert record.exit_code == 0, record.output
    _grow(repo, 4, 8)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "grown")
    git(repo, "branch", "-f", "main")
    _grow(repo, 8, 12)
    (refused,) = _gate(gpuplane, repo)
    assert "grows from 8 to 12 nodes" in refused["message"]
    assert "covers 4 node(s)" in refused["message"], refused["message"]
    assert "8 before this change" in refused["message"]


def test_evidence_past_the_clusters_limit_no_longer_proves(
    repo: Path, tmp_path: Path, gpuplane: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = gpuplane("-C", str(repo), "acceptance", "record", str(_results(tmp_path, "gpu-run")))
    assert record.exit_code == 0, record.output
    _grow(repo, 4, 8)
    limit = yaml.safe_load((REPO / "clusters" / "prod-east.yaml").read_text())["spec"][
        "acceptance"
    ]["evidenceMaxAgeDays"]
    monkeypatch.setenv("GPUPLANE_TODAY", _days_after(RUN_DAY, limit))
    assert _gate(gpuplane, repo) == []
    monkeypatch.setenv("GPUPLANE_TODAY", _days_after(RUN_DAY, limit + 1))
    (refused,) = _gate(gpuplane, repo)
    assert f"{limit + 1} days old" in refused["message"], refused["message"]
    assert f"accepts {limit}" in refused["message"]


def _days_after(day: str, days: int) -> str:
    from datetime import date, timedelta

    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()
