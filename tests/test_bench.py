"""`make bench` (bench/run.py) measures only what gpuplane would accept, and measures it all.

A benchmark of a platform `gpuplane render` refuses times an error path; so a planted finding
must stop the run. A tiny run of the whole benchmark proves every command it times did what it
should (the one-team change really makes `render --check` report stale files)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import run
from bench.generate import generate_platform
from tests.conftest import SHARED_CRDS

pytestmark = pytest.mark.slow

TINY = ["--teams", "3", "--clusters", "1", "--pools-per-cluster", "4", "--repeat", "1"]


def test_a_planted_finding_stops_the_benchmark(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def broken(root: Path, **sizes: Any) -> dict[str, int]:
        counts = generate_platform(root, **sizes)
        pool = sorted((root / "pools").glob("*.yaml"))[0]
        text, removed = re.subn(r"^  host: .*\n", "", pool.read_text(), flags=re.M)
        assert removed == 1
        pool.write_text(text)
        return counts

    monkeypatch.setattr(run, "generate_platform", broken)
    crds = tmp_path / "crds"
    crds.mkdir()
    assert run.main([*TINY, "--sizes", "1", "--crds", str(crds)]) == 1
    out = capsys.readouterr().out
    assert "finding(s); gpuplane would refuse it" in out
    assert "pool-host-capacity" in out


def test_the_generated_platform_has_no_finding(tmp_path: Path) -> None:
    generate_platform(tmp_path, clusters=2, pools_per_cluster=5, teams=40)
    run.refuse_findings(tmp_path)


def test_without_crds_the_benchmark_says_what_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("GPUPLANE_CRDS", raising=False)
    monkeypatch.setattr(run, "SHARED_CRDS", tmp_path / "absent")
    assert run.main(TINY) == 1
    assert "--crds PATH" in capsys.readouterr().out


def test_one_team_change_reaches_the_rendered_tree(tmp_path: Path) -> None:
    generate_platform(tmp_path, clusters=1, pools_per_cluster=4, teams=3)
    seen = set()
    for step in (1, 2, 3, 4):
        path, old = run.one_team_change(tmp_path, step)
        seen.add(path.read_bytes())
        assert path.read_bytes() != old
        run.refuse_findings(tmp_path)  # still a platform gpuplane accepts
        path.write_bytes(old)
    assert len(seen) == 4  # each step a platform not checked before


def test_a_tiny_run_times_every_stage_command_and_tool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    code = run.main(
        [*TINY, "--sizes", "1,2", "--kubernetes-validate-sample", "5", "--crds", str(SHARED_CRDS)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    for row in (
        "load (YAML, positions, hostile-input checks)",
        "validate output (strict built-ins, CRDs)",
        "gpuplane validate",
        "gpuplane render (into an empty tree)",
        "gpuplane render --check --no-index (cold)",
        "gpuplane render --check --no-index (warm)",
        "gpuplane render --check, index, nothing changed",
        "gpuplane render --check --no-index, one team changed",
        "gpuplane render --check, index, one team changed",
        "in git: gpuplane render --check --no-index",
        "in git: gpuplane render --check, index, one team changed",
        "in git: gpuplane diff --base HEAD --no-index, one team changed",
        "in git: gpuplane diff --base HEAD, index, one team changed",
        "kubernetes-validate",
    ):
        # a row's first cell, whole: one label inside another's is not that row
        assert re.search(rf"^[│┃] {re.escape(row)}[ (│]", out, re.MULTILINE), row
    assert "exp 1x-2x" in out and "peak MiB" in out
    if run.memory_folder() is not None:  # the write stage again, without the disk
        assert re.search(rf"^[│┃] {re.escape(run.WRITE_IN_MEMORY)}[ │]", out, re.MULTILINE)


def test_peak_memory_counts_every_process_of_a_command(tmp_path: Path) -> None:
    """Two forked workers each fill 100 MiB of their own at the same time: the command held
    about 200 MiB, which the peak of any one process (ru_maxrss, ~100 MiB) leaves half out;
    and what the benchmark itself holds (forked children inherit its ru_maxrss) is not
    counted."""
    program = (
        "import os, time\n"
        "pids = []\n"
        "for _ in range(2):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        held = b'x' * (100 * 2**20)\n"
        "        time.sleep(0.6)\n"
        "        os._exit(0)\n"
        "    pids.append(pid)\n"
        "for pid in pids:\n"
        "    os.waitpid(pid, 0)\n"
    )
    ballast = b"y" * (300 * 2**20)  # noqa: F841 - held by this process while the command runs
    _, peak_kib = run.run_command([sys.executable, "-c", program], tmp_path, 0)
    assert 190 * 1024 < peak_kib < 280 * 1024, peak_kib


def test_timed_runs_are_not_watched_and_memory_comes_from_one_more() -> None:
    """The memory sampler competes with the command for the two cores, so the seconds come
    only from runs nothing samples, and the peak from one more run that is sampled."""
    calls: list[bool] = []

    def run_once(memory: bool) -> tuple[float, int]:
        calls.append(memory)
        return (9.0 if memory else float(len(calls))), (512 if memory else 0)

    assert run.measured(run_once, 3) == (2.0, 512)
    assert calls == [False, False, False, True]
