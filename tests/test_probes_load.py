"""The data path under load: concurrent storage workers, concurrent staging downloads, and a
checkpoint restored on another node (workflows/probes/storage.py, staging.py, checkpoint.py).
Small sizes on tmp_path; every result validates against schemas/results/. Nothing asserts on
speed: the checks are identities that follow from how the figures are defined.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_probes import assert_valid
from workflows.probes.checkpoint import CheckpointSettings, run_checkpoint
from workflows.probes.staging import run_staging
from workflows.probes.storage import StorageSettings, run_storage

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
KIB = 1024


def test_four_concurrent_storage_workers(tmp_path: Path) -> None:
    settings = StorageSettings(
        path=tmp_path, total_bytes=256 * KIB, block_bytes=64 * KIB, workers=4, keep=True
    )
    result = run_storage(settings)
    assert_valid(result)
    assert result["ok"], result["error"]
    m = result["metrics"]
    assert m["workers"] == 4 and m["bytes"] == 256 * KIB
    assert min(m["aggregateReadGBps"], m["aggregateWriteGBps"]) > 0
    # two readers and two writers of equal files: the slowest of each took the longest, so the
    # aggregate (all bytes over the phase's wall time) is exactly twice the slowest one's rate
    assert m["aggregateReadGBps"] == pytest.approx(2 * m["slowestReadGBps"])
    assert m["aggregateWriteGBps"] == pytest.approx(2 * m["slowestWriteGBps"])
    assert (m["readGBps"], m["writeGBps"]) == (m["aggregateReadGBps"], m["aggregateWriteGBps"])
    kept = sorted(path.name.split("-")[2] for path in tmp_path.glob("gpuplane-storage-*.bin"))
    assert kept == ["0", "1", "2", "3"]
    assert all(path.stat().st_size == 256 * KIB for path in tmp_path.iterdir())


def test_concurrent_storage_leaves_nothing_behind(tmp_path: Path) -> None:
    result = run_storage(
        StorageSettings(path=tmp_path, total_bytes=64 * KIB, block_bytes=16 * KIB, workers=3)
    )
    assert result["ok"] and result["metrics"]["workers"] == 3  # worker 0 and 2 write, 1 reads
    assert list(tmp_path.iterdir()) == []


def test_one_worker_without_torchrun_is_the_sequential_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RANK", raising=False)
    result = run_storage(
        StorageSettings(path=tmp_path, total_bytes=64 * KIB, block_bytes=16 * KIB, workers=1)
    )
    assert_valid(result)
    assert result["ok"]
    assert not {"workers", "aggregateReadGBps"} & set(result["metrics"])


def test_concurrent_storage_under_torchrun(tmp_path: Path) -> None:
    out = tmp_path / "storage.json"
    volume = tmp_path / "volume"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUPLANE_", "RANK"))}
    env["PYTHONPATH"] = str(ROOT)
    env["GLOO_SOCKET_IFNAME"] = "lo"  # the ranks meet over loopback only
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    command += ["--standalone", "-m", "workflows.probes", "storage", "--out", str(out)]
    command += ["--path", str(volume), "--bytes", "64K", "--block-bytes", "16K", "--workers", "2"]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert_valid(result)
    m = result["metrics"]
    assert m["workers"] == 4  # 2 per rank, 2 ranks: workers 0, 2 write and 1, 3 read
    assert m["aggregateReadGBps"] == pytest.approx(2 * m["slowestReadGBps"])
    assert done.stdout.count(f"-> {out}") == 1  # rank 0 alone writes and reports
    assert list(volume.iterdir()) == []


def test_staging_with_concurrent_downloads(tmp_path: Path) -> None:
    source = tmp_path / "source"
    for index in range(5):
        (source / f"part-{index % 2}").mkdir(parents=True, exist_ok=True)
        (source / f"part-{index % 2}" / f"shard-{index}.bin").write_bytes(os.urandom(3000 + index))
    dest = tmp_path / "dest"
    result = run_staging(source=str(source), dest=dest, workers=3)
    assert_valid(result)
    assert result["ok"], result["error"]
    m = result["metrics"]
    assert (m["files"], m["bytes"], m["workers"]) == (5, 5 * 3000 + 10, 3)
    assert m["aggregateGBps"] == pytest.approx(m["bytes"] / m["seconds"] / 1e9)
    for path in source.rglob("*.bin"):
        assert (dest / path.relative_to(source)).read_bytes() == path.read_bytes()


def test_a_restore_on_another_node_reports_both_nodes_and_the_time_since_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = CheckpointSettings(path=tmp_path, megabytes=0.2, device="cpu", phase="write")
    monkeypatch.setenv("NODE_NAME", "gpu-node-a")
    before = time.time()
    assert run_checkpoint(settings)["ok"]
    time.sleep(0.3)  # the node is lost; the restore starts elsewhere
    monkeypatch.setenv("NODE_NAME", "gpu-node-b")
    result = run_checkpoint(CheckpointSettings(path=tmp_path, device="cpu", phase="restore"))
    elapsed = time.time() - before
    assert_valid(result)
    assert result["ok"], result["error"]
    m = result["metrics"]
    assert (m["writerNode"], m["restoreNode"]) == ("gpu-node-a", "gpu-node-b")
    assert 0.3 <= m["sinceWriteSeconds"] <= elapsed
    assert m["verified"] and m["resumed"]


def test_a_sidecar_without_the_writers_node_gives_no_node_loss_figures(tmp_path: Path) -> None:
    assert run_checkpoint(
        CheckpointSettings(path=tmp_path, megabytes=0.2, device="cpu", phase="write")
    )["ok"]
    sidecar = next(tmp_path.glob("*.json"))
    record = json.loads(sidecar.read_text())
    del record["writerNode"], record["finishedAt"]  # written by an older probe
    sidecar.write_text(json.dumps(record))
    result = run_checkpoint(CheckpointSettings(path=tmp_path, device="cpu", phase="restore"))
    assert_valid(result)
    assert result["ok"]
    assert not {"sinceWriteSeconds", "writerNode", "restoreNode"} & set(result["metrics"])


def test_the_cli_runs_concurrent_storage(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUPLANE_", "RANK"))}
    command = [sys.executable, "-m", "workflows.probes", "storage", "--out", str(out)]
    command += ["--path", str(tmp_path / "v"), "--bytes", "32K", "--block-bytes", "8K"]
    done = subprocess.run(
        [*command, "--workers", "2"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["metrics"]["workers"] == 2
    bad = subprocess.run(
        [*command, "--workers", "0"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and "not positive" in bad.stderr
