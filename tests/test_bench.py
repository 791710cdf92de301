"""`make bench` (bench/run.py) measures only what gpuplane would accept, and measures it all.

A benchmark of a platform `gpuplane render` refuses times an error path; so a planted finding
must stop the run. A tiny run of the whole benchmark proves every command it times did what it
should (the one-team change really makes `render --check` report stale files)."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import run
from bench.generate import SHAPES, Shape, generate_platform
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


@pytest.mark.parametrize("shape", SHAPES)
def test_the_generated_platform_has_no_finding(tmp_path: Path, shape: Shape) -> None:
    generate_platform(tmp_path, clusters=2, pools_per_cluster=5, teams=40, shape=shape)
    run.refuse_findings(tmp_path)


def test_without_crds_the_benchmark_says_what_it_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("GPUPLANE_CRDS", raising=False)
    monkeypatch.setattr(run, "SHARED_CRDS", tmp_path / "absent")
    assert run.main(TINY) == 1
    assert "--crds PATH" in capsys.readouterr().out


@pytest.mark.parametrize("shape", SHAPES)
def test_one_team_change_reaches_the_rendered_tree(tmp_path: Path, shape: Shape) -> None:
    generate_platform(tmp_path, clusters=1, pools_per_cluster=4, teams=3, shape=shape)
    seen = set()
    for step in (1, 2, 3, 4):
        path, old = run.one_team_change(tmp_path, step)
        seen.add(path.read_bytes())
        assert path.read_bytes() != old
        run.refuse_findings(tmp_path)  # still a platform gpuplane accepts
        path.write_bytes(old)
    assert len(seen) == 4  # each step a platform not checked before


def test_a_tiny_run_times_every_stage_command_and_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Both shapes (the default), end to end: each gets its tables, the summary a row, and the
    JSON every figure the tables show."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    figures = tmp_path / "bench.json"
    code = run.main(
        [
            *TINY,
            "--sizes",
            "1,2",
            "--kubernetes-validate-sample",
            "5",
            "--crds",
            str(SHARED_CRDS),
            "--json",
            str(figures),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    for shape in SHAPES:
        assert f"{shape}: pipeline stages" in out and f"{shape}: commands" in out
        # the summary's row: the shape, then its 2x of 3 teams
        assert re.search(rf"^[│┃] {shape} +[│┃] +2x \(6 teams\) [│┃]", out, re.MULTILINE), shape
    found = json.loads(figures.read_text())
    assert list(found["shapes"]) == list(SHAPES)
    for shape, measured in found["shapes"].items():
        sizes = measured["sizes"]
        assert [(s["factor"], s["teams"]) for s in sizes] == [(1, 3), (2, 6)], shape
        assert sizes[0]["objects"] < sizes[1]["objects"], shape
        for size in sizes:
            assert size["stages"] and size["commands"], shape
            assert all(c["seconds"] > 0 for c in size["commands"].values()), shape
        largest = sizes[-1]
        assert set(measured["exponents"]["commands"]) == set(largest["commands"])
        assert set(measured["exponents"]["stages"]) == set(largest["stages"])
        summary = measured["summary"]
        assert summary["objects"] == largest["objects"]
        assert summary["input_files"] == largest["input_files"]
        assert summary["cold_check"] == largest["commands"][run.COLD_CHECK]["seconds"]
        assert summary["one_team"] == largest["commands"][run.ONE_TEAM]["seconds"]
        assert summary["peak_kib"] == max(c["peak_kib"] for c in largest["commands"].values())
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


def test_the_shapes_and_their_teams_come_from_the_options() -> None:
    both = run.arguments([])
    assert both.shapes == ["few-large", "many-small"]
    assert both.teams == {"few-large": 340, "many-small": 600}
    one = run.arguments(["--shapes", "many-small"])
    assert one.shapes == ["many-small"] and one.teams == {"many-small": 600}
    assert run.arguments(["--teams", "6"]).teams == {"few-large": 6, "many-small": 6}
    assert run.arguments(["--teams", "many-small=9"]).teams == {
        "few-large": 340,
        "many-small": 9,
    }


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--shapes", "few-large,tiny"], "unknown shape 'tiny'"),
        (["--teams", "many-small=lots"], "is not N or SHAPE=N"),
        (["--teams", "huge=4"], "unknown shape 'huge'"),
    ],
)
def test_an_unknown_shape_or_team_count_is_refused(
    capsys: pytest.CaptureFixture[str], option: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        run.arguments(option)
    assert stopped.value.code == 2
    assert says in capsys.readouterr().err


def fake_measure(size: run.Size, root: Path, crds: Path, args: argparse.Namespace) -> None:
    """What `measure_size` records, made up so that each figure is known: the objects grow as
    the factor, and many-small's cold check is a second slower at every size."""
    assert root.name == f"{size.shape}-x{size.factor}"
    size.files = 56 + size.teams
    size.objects = 100 * size.factor
    size.tree_files = 120 * size.factor
    slower = 1.0 if size.shape == "many-small" else 0.0
    # the load grows as the objects (exponent 1), the policy as their square (exponent 2)
    size.stages = {
        "load (YAML)": (size.files, "files", float(size.factor)),
        "policy (all rules)": (size.files, "files", float(size.factor**2)),
    }
    size.commands = {
        "gpuplane validate": (0.5 * size.factor, 5120),
        run.COLD_CHECK: (3.0 * size.factor + slower, 2048),
        run.ONE_TEAM: (0.25 * size.factor, 3072),
    }


def test_the_summary_and_json_hold_every_shape_figure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(run, "measure_size", fake_measure)
    crds = tmp_path / "crds"
    crds.mkdir()
    figures = tmp_path / "bench.json"
    args = ["--teams", "few-large=5,many-small=8", "--sizes", "1,2", "--repeat", "1"]
    assert run.main([*args, "--crds", str(crds), "--json", str(figures)]) == 0
    out = capsys.readouterr().out
    # at 2x: input files 56 + 2 x teams; cold check 6 s (+1 s on many-small); one team 0.5 s;
    # peak the validate's 5 MiB; the steepest stage the policy, 4x the time for 2x the objects
    assert re.search(
        r"^[│┃] few-large +[│┃] +2x \(10 teams\) [│┃] +66 [│┃] +200 [│┃] +6\.00 [│┃] +0\.50 "
        r"[│┃] +5 [│┃] +2\.00 \(policy\) [│┃]$",
        out,
        re.MULTILINE,
    ), out
    assert re.search(
        r"^[│┃] many-small +[│┃] +2x \(16 teams\) [│┃] +72 [│┃] +200 [│┃] +7\.00 [│┃] +0\.50 ",
        out,
        re.MULTILINE,
    ), out
    found = json.loads(figures.read_text())
    assert found["repeat"] == 1 and found["clusters"] == 8 and found["pools_per_cluster"] == 5
    assert set(found["machine"]) == {"cpu", "cores", "python"}
    assert list(found["shapes"]) == ["few-large", "many-small"]
    small = found["shapes"]["many-small"]
    assert small["teams_at_1x"] == 8
    assert [s["teams"] for s in small["sizes"]] == [8, 16]
    assert small["sizes"][1] == {
        "factor": 2,
        "teams": 16,
        "input_files": 72,
        "objects": 200,
        "tree_files": 240,
        "stages": {
            "load (YAML)": {"items": 72, "unit": "files", "seconds": 2.0},
            "policy (all rules)": {"items": 72, "unit": "files", "seconds": 4.0},
        },
        "commands": {
            "gpuplane validate": {"seconds": 1.0, "peak_kib": 5120},
            run.COLD_CHECK: {"seconds": 7.0, "peak_kib": 2048},
            run.ONE_TEAM: {"seconds": 0.5, "peak_kib": 3072},
        },
        "others": {},
    }
    stages = small["exponents"]["stages"]
    assert stages["load (YAML)"]["1x-2x"] == pytest.approx(1.0)
    assert stages["policy (all rules)"]["1x-2x"] == pytest.approx(2.0)
    # validate 0.5 -> 1.0 s: linear; the cold check 4 -> 7 s for twice the objects
    commands = small["exponents"]["commands"]
    assert commands["gpuplane validate"]["1x-2x"] == pytest.approx(1.0)
    assert commands[run.COLD_CHECK]["1x-2x"] == pytest.approx(math.log2(7 / 4))
    assert small["summary"] == {
        "factor": 2,
        "teams": 16,
        "input_files": 72,
        "objects": 200,
        "cold_check": 7.0,
        "one_team": 0.5,
        "peak_kib": 5120,
        "peak_command": "gpuplane validate",
        "stage_exponent": pytest.approx(2.0),
        "stage": "policy (all rules)",
    }


def test_one_shape_alone_is_measured_and_summarized_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    measured: list[tuple[Shape, int]] = []

    def record(size: run.Size, root: Path, crds: Path, args: argparse.Namespace) -> None:
        measured.append((size.shape, size.teams))
        fake_measure(size, root, crds, args)

    monkeypatch.setattr(run, "measure_size", record)
    crds = tmp_path / "crds"
    crds.mkdir()
    assert run.main(["--shapes", "many-small", "--crds", str(crds)]) == 0
    out = capsys.readouterr().out
    assert measured == [("many-small", 600), ("many-small", 1200), ("many-small", 2400)]
    assert "few-large" not in out
    assert "many-small: pipeline stages" in out and "exp 2x-4x" in out
