"""Quota on a shared or MIG pool is in the pool's units: every view gives it in GPUs too.

What a unit is, from NVIDIA's documentation (NVIDIA/cloud-native-docs,
gpu-operator/gpu-sharing.rst): with time-slicing, "`<replicas-count>` is the factor by which each
resource of `<resource-name>` is oversubscribed" and "on a machine with one GPU, the following config map [replicas:
4] configures Kubernetes so that the node advertises four GPU resources", so one advertised unit
is 1/replicas of a GPU (MPS advertises replicas the same way). A MIG instance `Ng.Mgb` takes N of
the GPU's 7 compute slices (A100/H100: NVIDIA MIG User Guide, "Supported MIG Profiles"), so a
1g.10gb is 1/7 of a GPU. The figures below come from the pool files, not from gpuplane's output.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.commands.diff.findings import QuotaChange, QuotaFigures
from renderer.commands.diff.markdown import _nominal_cell
from tests.conftest import REPO, copy_inputs, edit_once


def _spec(root: Path, pool: str) -> Any:
    return YAML(typ="safe").load((root / "pools" / f"{pool}.yaml").read_text())["spec"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The example, where speech asks for `nominal: 2` on the time-sliced l40s-infer."""
    root = copy_inputs(REPO, tmp_path / "repo")
    edit_once(
        root / "teams/speech.yaml",
        "{pool: l40s-infer, nominal: 16, borrowingLimit: 16, lendingLimit: 8}",
        "{pool: l40s-infer, nominal: 2, borrowingLimit: 16, lendingLimit: 2}",
    )
    return root


def _rows(gpuplane, root: Path, *args: str) -> dict[str, dict[str, Any]]:
    result = gpuplane("-C", str(root), "plan", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    (cluster,) = json.loads(result.output)["clusters"]
    return {row["pool"]: row for row in cluster["teams"]}


def test_a_time_sliced_quota_of_2_is_half_a_gpu_in_every_form(repo: Path, gpuplane) -> None:
    spec = _spec(repo, "l40s-infer")
    assert spec["sharing"] == "time-slicing"
    replicas = spec["timeSlicing"]["replicas"]
    assert replicas == 4  # the case: two quarter-GPUs
    row = _rows(gpuplane, repo, "--team", "speech")["l40s-infer"]
    assert row["nominal"] == 2
    assert row["gpuShare"] == f"1/{replicas}"
    assert row["physicalGpus"]["nominal"] == 2 / replicas == 0.5
    text = gpuplane("-C", str(repo), "plan", "--team", "speech", "--wide").output
    # team table, one team: pool, resource, guaranteed, nominal, nominal in GPUs, ...
    assert re.search(r"^l40s-infer +nvidia\.com/gpu +0 +2 +0\.5 ", text, re.M), text
    assert "in GPUs" in text
    markdown = gpuplane("-C", str(repo), "plan", "--team", "speech", "--format", "markdown")
    lines = markdown.output.splitlines()
    header = next(line for line in lines if line.startswith("| team | pool |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    row_line = next(line for line in lines if line.startswith("| speech | l40s-infer |"))
    cells = [c.strip() for c in row_line.strip("|").split("|")]
    assert cells[columns.index("nominal")] == "2"
    assert cells[columns.index("nominal in GPUs")] == "0.5"


def test_a_mig_instance_is_its_compute_slices_of_7(repo: Path, gpuplane) -> None:
    spec = _spec(repo, "a100-mig")
    assert spec["sharing"] == "mig"
    teams = YAML(typ="safe").load((repo / "teams/speech.yaml").read_text())["spec"]["gpus"]
    (entry,) = [g for g in teams if g["pool"] == "a100-mig"]
    compute = int(entry.get("profile", "1g.10gb").split("g.")[0])
    row = _rows(gpuplane, repo, "--team", "speech")["a100-mig"]
    assert row["gpuShare"] == str(Fraction(compute, 7))
    assert row["physicalGpus"]["nominal"] == round(entry["nominal"] * compute / 7, 4)


def test_whole_gpu_pools_show_no_extra_column(repo: Path, gpuplane) -> None:
    row = _rows(gpuplane, repo, "--pool", "h100-train", "--team", "speech")["h100-train"]
    assert row["gpuShare"] == "1" and row["physicalGpus"]["nominal"] == row["nominal"]
    text = gpuplane("-C", str(repo), "plan", "--pool", "h100-train", "--wide").output
    assert "in GPUs" not in text
    markdown = gpuplane("-C", str(repo), "plan", "--pool", "h100-train", "--format", "markdown")
    assert "| nominal in GPUs |" not in markdown.output


def _figures(nominal: int, share: Fraction | None) -> QuotaFigures:
    return QuotaFigures(
        "nvidia.com/gpu", "time-slicing replica", nominal, None, None, 0, 0, 0, share
    )


def test_diff_markdown_gives_a_changed_shared_quota_in_gpus() -> None:
    quarter = Fraction(1, 4)  # 4 replicas per GPU
    change = QuotaChange("l40s-infer", None, _figures(2, quarter), _figures(8, quarter))
    assert _nominal_cell(change) == "2 → 8 (0.5 → 2 GPUs)"
    new = QuotaChange("l40s-infer", None, None, _figures(2, quarter))
    assert _nominal_cell(new) == "- → 2 (- → 0.5 GPUs)"
    whole = QuotaChange("h100-train", None, _figures(2, Fraction(1)), _figures(4, Fraction(1)))
    assert _nominal_cell(whole) == "2 → 4"


def test_new_team_says_what_a_unit_of_each_shared_pool_is(tmp_path: Path, gpuplane) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    assert gpuplane("-C", str(root), "new", "team", "ranking").exit_code == 0
    text = (root / "teams/ranking.yaml").read_text()
    comment = " ".join(
        line.strip().removeprefix("# ")
        for line in text.split("  gpus:", 1)[1].split("nominal:", 1)[0].splitlines()
        if line.strip().startswith("#")
    )
    replicas = _spec(root, "l40s-infer")["timeSlicing"]["replicas"]
    assert "nominal 2 on a pool of 4 replicas per GPU is half a GPU" in comment
    assert (
        f"l40s-infer: {replicas} time-slicing replicas per GPU, so nominal {replicas} is 1 GPU"
        in comment
    )
