"""The acceptance probes (workflows/probes): real measurements on the CPU, small sizes, and results
that validate against schemas/results/. Networking stays on 127.0.0.1; nothing asserts on time.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch
from jsonschema import Draft202012Validator, FormatChecker

from workflows.probes import PROBES, checkpoint, inference
from workflows.probes.allreduce import AllreduceSettings, bus_factor, run_allreduce, size_sweep
from workflows.probes.checkpoint import (
    CheckpointSettings,
    Continuation,
    continue_training,
    digests,
    loss_mismatches,
    run_checkpoint,
    training_state,
)
from workflows.probes.envelope import Outcome, ProbeFailure, measure
from workflows.probes.inference import (
    InferenceSettings,
    endpoint_url,
    nearest_rank,
    run_inference,
)
from workflows.probes.models import ModelConfig
from workflows.probes.staging import run_staging
from workflows.probes.storage import StorageSettings, run_storage
from workflows.probes.training import TrainingSettings, run_training

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "schemas" / "results"
SCHEMA_NAMES = ["result", *PROBES]


def load_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text("utf-8"))
    return schema


def assert_valid(result: dict[str, Any]) -> None:
    """The envelope against result.schema.json, its metrics against <probe>.schema.json."""
    envelope = Draft202012Validator(load_schema("result"), format_checker=FormatChecker())
    metrics = Draft202012Validator(load_schema(result["probe"]))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in envelope.iter_errors(result)]
    problems += [
        f"metrics{list(e.absolute_path)}: {e.message}"
        for e in metrics.iter_errors(result["metrics"])
    ]
    assert problems == []
    json.dumps(result, allow_nan=False)  # the JSON on disk must be strict JSON


def subschemas(node: Any, pointer: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(node, dict):
        return
    yield pointer, node
    for keyword in ("properties", "$defs"):
        for key, sub in node.get(keyword, {}).items():
            yield from subschemas(sub, f"{pointer}/{keyword}/{key}")
    for keyword in ("items", "additionalProperties", "if", "then"):
        if isinstance(node.get(keyword), dict):
            yield from subschemas(node[keyword], f"{pointer}/{keyword}")
    for keyword in ("allOf", "anyOf"):
        for i, sub in enumerate(node.get(keyword, [])):
            yield from subschemas(sub, f"{pointer}/{keyword}/{i}")


# ------------------------------------------------------------------------------ the schemas


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_result_schema_is_strict_and_documented(name: str) -> None:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://gpuplane.dev/schemas/results/{name}.schema.json"
    assert schema["title"] and schema["description"]
    for pointer, node in subschemas(schema):
        for key, sub in node.get("properties", {}).items():
            if pointer.split("/")[-1] in ("if", "then") or "/allOf/" in pointer:
                continue  # conditions name properties without declaring them
            assert sub.get("title") and sub.get("description"), f"{pointer}/properties/{key}"
        if node.get("type") == "object" and pointer != "#/properties/metrics":
            closed = node.get("additionalProperties") is False
            keyed_map = "pattern" in node.get("propertyNames", {})
            assert closed or keyed_map, pointer


def test_the_envelope_names_every_probe() -> None:
    assert load_schema("result")["properties"]["probe"]["enum"] == list(PROBES)


def test_ok_results_need_metrics_and_failed_ones_an_error() -> None:
    result = measure("storage", lambda: Outcome({}))
    envelope = Draft202012Validator(load_schema("result"))
    assert not envelope.is_valid(result)  # ok with empty metrics
    failed = measure("storage", lambda: Outcome({}, "it broke"))
    assert envelope.is_valid(failed)
    assert not envelope.is_valid(failed | {"error": None})


def test_a_probe_that_raises_leaves_a_failed_result() -> None:
    def body() -> Outcome:
        raise ProbeFailure("the volume is read-only")

    result = measure("storage", body, cluster="prod-east", pool="h100-train")
    assert_valid(result)
    assert (result["ok"], result["error"], result["metrics"]) == (
        False,
        "the volume is read-only",
        {},
    )
    assert result["environment"]["gpuplane.dev/pool"] == "h100-train"

    crashed = measure("storage", lambda: Outcome({"bytes": 1 / 0}))
    assert crashed["ok"] is False and crashed["error"].startswith("ZeroDivisionError")


def test_environment_comes_from_options_env_vars_and_the_runtime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPUPLANE_CLUSTER", "prod-east")
    monkeypatch.setenv("GPUPLANE_POOL", "h100-train")
    monkeypatch.setenv("GPUPLANE_LABELS", "image.driver=570.124.06,image.cuda=12.8")
    monkeypatch.setenv("NODE_NAME", "gpu-node-7")
    body = lambda: Outcome({}, "x", {"torch": "2.13.0"})  # noqa: E731
    result = measure("storage", body, labels={"team": "vision", "torch": "a lie"})
    assert (result["cluster"], result["pool"]) == ("prod-east", "h100-train")
    env = result["environment"]
    assert env["gpuplane.dev/cluster"] == "prod-east"
    assert env["gpuplane.dev/pool"] == "h100-train"
    assert env["image.driver"] == "570.124.06" and env["image.cuda"] == "12.8"
    assert env["node"] == "gpu-node-7"
    assert env["team"] == "vision"
    assert env["torch"] == "2.13.0"  # runtime facts win over labels
    with pytest.raises(ValueError, match="label"):
        measure("storage", body, labels={"has space": "x"})


# ------------------------------------------------------------------------------ allreduce


def test_bus_bandwidth_factor_is_the_nccl_tests_one() -> None:
    # PERFORMANCE.md, AllReduce: busbw = algbw * 2(n-1)/n
    assert [bus_factor(n) for n in (1, 2, 4, 8)] == [0.0, 1.0, 1.5, 1.75]
    assert size_sweep() == [1024 * 4**k for k in range(9)]  # 1 KiB ... 64 MiB
    assert size_sweep(1024, 5000, 2) == [1024, 2048, 4096]


def test_allreduce_with_gloo_across_two_local_processes() -> None:
    result = run_allreduce(
        AllreduceSettings(
            sizes=[16384, 1024, 4096, 65536],
            iterations=5,
            warmup=2,
            local_world_size=2,
            backend="auto",
        ),
        cluster="prod-east",
        pool="h100-train",
    )
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert (metrics["backend"], metrics["worldSize"], metrics["iterations"]) == ("gloo", 2, 5)
    rows = metrics["sizes"]
    assert [row["bytes"] for row in rows] == [1024, 4096, 16384, 65536]
    n = metrics["worldSize"]
    for row in rows:
        assert row["timeUs"] > 0
        assert row["algbwGBps"] == pytest.approx(row["bytes"] / (row["timeUs"] / 1e6) / 1e9)
        assert row["busbwGBps"] == pytest.approx(row["algbwGBps"] * 2 * (n - 1) / n)
    assert metrics["peakBusbwGBps"] == max(row["busbwGBps"] for row in rows)
    env = result["environment"]
    assert env["backend"] == "gloo" and env["worldSize"] == "2" and env["device"] == "cpu"
    assert env["torch"] == torch.__version__


@pytest.mark.skipif(torch.cuda.is_available(), reason="NCCL may work here")
def test_allreduce_failure_in_a_spawned_rank_is_a_failed_result() -> None:
    result = run_allreduce(
        AllreduceSettings(sizes=[1024], iterations=1, warmup=0, local_world_size=1, backend="nccl")
    )
    assert_valid(result)
    assert result["ok"] is False
    assert "rank 0" in result["error"] and "nccl" in result["error"]


# ------------------------------------------------------------------------------ checkpoint


def test_checkpoint_write_and_restore_verifies_every_tensor(tmp_path: Path) -> None:
    result = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=4), pool="h100-train")
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert metrics["verified"] is True
    assert metrics["bytes"] > 2_000_000
    assert metrics["writeSeconds"] > 0 and metrics["restoreSeconds"] > 0
    assert metrics["writeGBps"] > 0 and metrics["restoreGBps"] > 0
    assert metrics["path"] == str(tmp_path / checkpoint.FILE_NAME)
    assert not (tmp_path / checkpoint.FILE_NAME).exists()  # removed unless kept
    assert metrics["resumeSteps"] == checkpoint.RESUME_STEPS > 0
    assert metrics["resumed"] is True
    assert metrics["resumeMaxLossDifference"] == 0.0  # the same steps on the CPU: bit-identical
    assert metrics["resumeSeconds"] > 0


def test_a_corrupted_restore_fails_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_load = checkpoint.load_checkpoint

    def corrupted(path: Path, device: torch.device) -> Any:
        state = real_load(path, device)
        tensor = next(iter(state["model"].values()))
        tensor.view(-1)[0] += 1
        return state

    monkeypatch.setattr(checkpoint, "load_checkpoint", corrupted)
    result = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1))
    assert_valid(result)
    assert result["ok"] is False
    assert result["metrics"]["verified"] is False
    assert "differs" in result["error"]


def test_checkpoint_written_by_one_process_and_restored_by_another(tmp_path: Path) -> None:
    written = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="write"))
    assert written["ok"] and written["metrics"] == {}
    assert (tmp_path / checkpoint.FILE_NAME).is_file()
    restored = run_checkpoint(
        CheckpointSettings(path=tmp_path, megabytes=1, phase="restore", keep=True)
    )
    assert_valid(restored)
    assert restored["ok"], restored["error"]
    assert restored["metrics"]["verified"] is True
    assert restored["metrics"]["resumed"] is True
    assert restored["metrics"]["resumeSteps"] == checkpoint.RESUME_STEPS

    # flip one byte inside the largest tensor's record of the zip archive torch.save writes
    file = tmp_path / checkpoint.FILE_NAME
    with zipfile.ZipFile(file) as archive:
        records = [info for info in archive.infolist() if "/data/" in info.filename]
    record = max(records, key=lambda info: info.file_size)
    data = bytearray(file.read_bytes())
    name_length, extra_length = struct.unpack_from("<HH", data, record.header_offset + 26)
    data[record.header_offset + 30 + name_length + extra_length + 100] ^= 0xFF
    file.write_bytes(bytes(data))
    damaged = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="restore"))
    assert_valid(damaged)
    assert damaged["ok"] is False and damaged["metrics"]["verified"] is False
    assert "differs" in damaged["error"]
    assert damaged["metrics"]["resumed"] is False  # nothing resumed from an unverified state
    assert damaged["metrics"]["resumeMaxLossDifference"] is None


def _sidecar(folder: Path) -> Path:
    return folder / (checkpoint.FILE_NAME + ".json")


def test_the_writer_records_what_the_restorer_needs_to_resume(tmp_path: Path) -> None:
    run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="write", resume_steps=4))
    record = json.loads(_sidecar(tmp_path).read_text())["resume"]
    reference = Continuation.from_record(record)
    assert reference.as_record() == record
    assert (reference.from_step, reference.final_step, len(reference.losses)) == (1, 5, 4)
    assert (reference.seed, reference.batch_size, reference.learning_rate) == (
        checkpoint.SEED,
        checkpoint.BATCH_SIZE,
        checkpoint.LEARNING_RATE,
    )
    assert all(math.isfinite(loss) and loss > 0 for loss in reference.losses)
    assert len(set(reference.losses)) == 4  # each step trains on a batch of its own


def test_a_restore_whose_training_does_not_continue_fails_although_every_tensor_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bug a digest cannot see: a restore that loads the weights but not Adam's state."""
    run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="write"))
    monkeypatch.setattr(torch.optim.Adam, "load_state_dict", lambda self, state: None)
    result = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="restore"))
    assert_valid(result)
    metrics = result["metrics"]
    assert result["ok"] is False
    assert metrics["verified"] is True and metrics["resumed"] is False
    assert metrics["resumeMaxLossDifference"] > 1e-3
    # the first resumed loss needs only the weights; the lost moments show from the second on
    assert "does not continue the written run: step 3 (resumed 2 of 3)" in result["error"]


def test_a_sidecar_with_other_losses_fails_the_resume_at_that_step(tmp_path: Path) -> None:
    run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="write"))
    sidecar = json.loads(_sidecar(tmp_path).read_text())
    losses = sidecar["resume"]["losses"]
    losses[2] *= 1 + 10 * checkpoint.LOSS_RELATIVE_TOLERANCE
    _sidecar(tmp_path).write_text(json.dumps(sidecar))
    result = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="restore"))
    assert_valid(result)
    assert result["ok"] is False and result["metrics"]["verified"] is True
    assert result["metrics"]["resumed"] is False
    assert "step 4 (resumed 3 of 3)" in result["error"]
    assert "step 2 " not in result["error"] and "step 3 " not in result["error"]
    expected = losses[2] - losses[2] / (1 + 10 * checkpoint.LOSS_RELATIVE_TOLERANCE)
    assert result["metrics"]["resumeMaxLossDifference"] == pytest.approx(expected, rel=1e-3)


def test_the_loss_tolerance_and_the_step_counter() -> None:
    reference = Continuation(0, 2, 1e-3, 1, (5.0, 4.0, 3.0), 4)
    tolerance = checkpoint.LOSS_RELATIVE_TOLERANCE
    close = replace(reference, losses=(5.0, 4.0 * (1 + tolerance / 2), 3.0))
    assert loss_mismatches(reference, close) == (pytest.approx(4.0 * tolerance / 2), [])
    far = replace(reference, losses=(5.0, 4.0 * (1 + 2 * tolerance), 3.0))
    largest, problems = loss_mismatches(reference, far)
    assert largest == pytest.approx(8 * tolerance) and len(problems) == 1
    assert problems[0].startswith("step 3 (resumed 2 of 3) has loss")
    tiny = Continuation(0, 2, 1e-3, 1, (0.0,), 2)
    assert (
        loss_mismatches(tiny, replace(tiny, losses=(checkpoint.LOSS_ABSOLUTE_TOLERANCE,)))[1] == []
    )
    assert loss_mismatches(reference, replace(reference, losses=(5.0, math.nan, 3.0)))[0] is None
    counter = loss_mismatches(reference, replace(reference, final_step=3))[1]
    assert counter == [
        "the resumed run ended at step 3, the writer's at 4: the step counter did not continue"
    ]


def test_resuming_leaves_the_saved_state_as_it_was() -> None:
    """Adam's load_state_dict keeps the given tensors; training must not move the saved ones."""
    config = checkpoint.model_for_size(1)
    state = training_state(config, torch.device("cpu"))
    before = digests(state)
    first = continue_training(state, 3, torch.device("cpu"))
    assert digests(state) == before
    assert continue_training(state, 3, torch.device("cpu")) == first


def test_a_checkpoint_without_resume_says_so(tmp_path: Path) -> None:
    result = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, resume_steps=0))
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert (metrics["resumeSteps"], metrics["resumed"]) == (0, False)
    assert (metrics["resumeMaxLossDifference"], metrics["resumeSeconds"]) == (None, 0.0)


def test_the_restorer_cannot_resume_more_steps_than_the_writer_recorded(tmp_path: Path) -> None:
    run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="write", resume_steps=1))
    result = run_checkpoint(
        CheckpointSettings(path=tmp_path, megabytes=1, phase="restore", resume_steps=2)
    )
    assert_valid(result)
    assert result["ok"] is False and result["metrics"]["verified"] is True
    assert result["metrics"]["resumed"] is False
    assert "recorded 1 steps" in result["error"] and "--resume-steps" in result["error"]


def test_restore_without_a_write_phase_fails(tmp_path: Path) -> None:
    result = run_checkpoint(CheckpointSettings(path=tmp_path, megabytes=1, phase="restore"))
    assert_valid(result)
    assert result["ok"] is False and "write phase" in result["error"]


# ------------------------------------------------------------------------------ storage, staging


def test_storage_write_and_read(tmp_path: Path) -> None:
    result = run_storage(
        StorageSettings(path=tmp_path, total_bytes=8 * 1024 * 1024, block_bytes=1024 * 1024)
    )
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert (metrics["bytes"], metrics["blockBytes"], metrics["fsync"]) == (8 << 20, 1 << 20, True)
    assert metrics["writeGBps"] > 0 and metrics["readGBps"] > 0
    assert Path(metrics["path"]).parent == tmp_path
    assert list(tmp_path.iterdir()) == []  # the test file is removed


def test_staging_copies_and_counts_every_file(tmp_path: Path) -> None:
    source = tmp_path / "sample"
    (source / "data").mkdir(parents=True)
    (source / "weights").mkdir()
    files = {"data/part-0.bin": 3000, "data/part-1.bin": 5000, "weights/model.safetensors": 70000}
    for name, size in files.items():
        (source / name).write_bytes(os.urandom(size))
    dest = tmp_path / "staged"
    result = run_staging(source=str(source), dest=dest)
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert (metrics["files"], metrics["bytes"]) == (3, sum(files.values()))
    assert metrics["seconds"] > 0 and metrics["GBps"] > 0 and metrics["source"] == str(source)
    for name in files:
        assert (dest / name).read_bytes() == (source / name).read_bytes()

    url = run_staging(source=source.as_uri())
    assert url["ok"] and url["metrics"]["files"] == 3


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("gs://bucket/sample", "unsupported source scheme 'gs'"),
        ("/does/not/exist", "does not exist"),
    ],
)
def test_staging_from_an_unusable_source_fails_clearly(source: str, message: str) -> None:
    result = run_staging(source=source)
    assert_valid(result)
    assert result["ok"] is False and message in result["error"]


def test_staging_from_s3_needs_boto3() -> None:
    try:
        import boto3  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        result = run_staging(source="s3://bucket/sample")
        assert result["ok"] is False and "boto3" in result["error"]
    else:
        pytest.skip("boto3 is installed; the S3 path needs a real endpoint")


# ------------------------------------------------------------------------------ training


def test_training_throughput_of_the_tiny_model() -> None:
    config = ModelConfig(vocab=64, width=32, layers=1, heads=2, seq_len=16)
    result = run_training(
        TrainingSettings(seconds=1.0, warmup_steps=2, batch_size=8, config=config, device="cpu")
    )
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert metrics["samplesPerSecond"] > 0 and metrics["steps"] >= 1
    assert metrics["samplesPerSecond"] == pytest.approx(
        metrics["steps"] * metrics["batchSize"] / metrics["windowSeconds"]
    )
    assert math.isfinite(metrics["finalLoss"])
    assert metrics["model"] == config.name() and metrics["device"] == "cpu"


# ------------------------------------------------------------------------------ inference


class CompletionServer(ThreadingHTTPServer):
    daemon_threads = True
    status = 200
    delay = 0.003
    loading = 0  # GET /v1/models answers 503 this many times first, as a loading server does
    paths: list[str]
    bodies: list[dict[str, Any]]


class CompletionHandler(BaseHTTPRequestHandler):
    server: CompletionServer

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        if self.path != "/v1/models":
            self.send_error(404)
            return
        if self.server.loading:
            self.server.loading -= 1
            self.send_error(503, "loading the model")
            return
        payload = json.dumps({"object": "list", "data": [{"id": "tiny"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.paths.append(self.path)
        self.server.bodies.append(body)
        time.sleep(self.server.delay)
        if self.server.status != 200:
            self.send_error(self.server.status, "the model fell over")
            return
        answer = {"id": "cmpl-1", "object": "text_completion", "model": body["model"]}
        answer["choices"] = [{"index": 0, "text": " GPUs are fast.", "finish_reason": "length"}]
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[CompletionServer]:
    httpd = CompletionServer(("127.0.0.1", 0), CompletionHandler)
    httpd.paths, httpd.bodies = [], []
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def base_url(server: CompletionServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_inference_latency_percentiles(server: CompletionServer) -> None:
    result = run_inference(
        InferenceSettings(
            endpoint=base_url(server), model="tiny", requests=20, concurrency=4, warmup=1
        )
    )
    assert_valid(result)
    assert result["ok"], result["error"]
    metrics = result["metrics"]
    assert (metrics["requests"], metrics["concurrency"], metrics["errors"]) == (20, 4, 0)
    assert 0 < metrics["p50Ms"] <= metrics["p95Ms"] <= metrics["p99Ms"]
    assert metrics["meanMs"] > 0
    assert metrics["endpoint"] == f"{base_url(server)}/v1/completions"
    assert server.paths == ["/v1/completions"] * 21  # one warm-up request, then twenty timed
    assert server.bodies[0]["model"] == "tiny" and "prompt" in server.bodies[0]


def test_inference_chat_api(server: CompletionServer) -> None:
    result = run_inference(
        InferenceSettings(
            endpoint=f"{base_url(server)}/v1/", model="tiny", requests=3, warmup=0, api="chat"
        )
    )
    assert result["ok"], result["error"]
    assert server.paths == ["/v1/chat/completions"] * 3
    assert server.bodies[0]["messages"][0]["role"] == "user"


def test_inference_counts_server_errors_and_fails(server: CompletionServer) -> None:
    server.status = 500
    result = run_inference(
        InferenceSettings(
            endpoint=base_url(server), model="tiny", requests=10, concurrency=2, warmup=0
        )
    )
    assert_valid(result)
    assert result["ok"] is False
    assert result["metrics"]["errors"] == 10
    assert "10 of 10 requests failed" in result["error"] and "HTTP 500" in result["error"]


def test_inference_waits_for_a_loading_server(
    server: CompletionServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inference, "READY_POLL_SECONDS", 0.05)
    server.loading = 3
    result = run_inference(
        InferenceSettings(endpoint=base_url(server), model="tiny", requests=2, warmup=0, wait_s=10)
    )
    assert_valid(result)
    assert result["ok"], result["error"]
    assert server.paths[:4] == ["/v1/models"] * 4  # three 503s while loading, then 200
    assert server.paths[4:] == ["/v1/completions"] * 2
    assert 0.1 <= result["metrics"]["readySeconds"] < 10


def test_inference_fails_once_when_the_server_never_answers(
    server: CompletionServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inference, "READY_POLL_SECONDS", 0.05)
    server.loading = 10**6
    result = run_inference(
        InferenceSettings(endpoint=base_url(server), model="tiny", requests=2, wait_s=0.3)
    )
    assert_valid(result)
    assert result["ok"] is False and result["metrics"] == {}
    assert "did not answer GET" in result["error"] and "within 0.3 s" in result["error"]
    assert "HTTP 503" in result["error"]
    assert "/v1/completions" not in server.paths  # nothing was measured


def test_the_ready_url_is_the_servers_model_list() -> None:
    for endpoint in ("http://m:8000", "http://m:8000/v1/", "http://m:8000/v1/chat/completions"):
        assert inference.models_url(endpoint) == "http://m:8000/v1/models"


def test_nearest_rank_percentiles_and_urls() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert [nearest_rank(values, p) for p in (50, 95, 99, 100)] == [50.0, 95.0, 99.0, 100.0]
    assert [nearest_rank([3.0, 1.0, 2.0], p) for p in (1, 50, 95)] == [1.0, 2.0, 3.0]
    assert endpoint_url("http://m:8000") == "http://m:8000/v1/completions"
    assert endpoint_url("http://m:8000/v1/") == "http://m:8000/v1/completions"
    assert (
        endpoint_url("http://m:8000/v1/chat/completions", "chat")
        == "http://m:8000/v1/chat/completions"
    )


# ------------------------------------------------------------------------------ the CLI


def probe_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPLANE_")}
    command = [sys.executable, "-m", "workflows.probes", *map(str, args)]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_exit_codes(tmp_path: Path) -> None:
    out = tmp_path / "results" / "storage.json"
    ok = probe_cli(
        "storage",
        "--out",
        out,
        "--path",
        tmp_path,
        "--bytes",
        "4M",
        "--block-bytes",
        "1M",
        "--pool",
        "h100-train",
        "--label",
        "image.driver=570.124.06",
    )
    assert ok.returncode == 0, ok.stderr
    result = json.loads(out.read_text("utf-8"))
    assert_valid(result)
    assert result["pool"] == "h100-train" and result["environment"]["image.driver"] == "570.124.06"

    failed_out = tmp_path / "staging.json"
    failed = probe_cli("staging", "--out", failed_out, "--source", "gs://bucket/sample")
    assert failed.returncode == 1
    assert "unsupported source scheme" in failed.stderr
    assert json.loads(failed_out.read_text("utf-8"))["ok"] is False

    for usage in (
        ["storage", "--path", tmp_path],  # no --out
        ["storage", "--out", tmp_path / "x.json", "--bytes", "lots"],
        ["storage", "--out", tmp_path / "x.json", "--label", "no-equals-sign"],
        ["no-such-probe", "--out", tmp_path / "x.json"],
        ["checkpoint", "--phase", "write", "--out", tmp_path / "x.json"],
        ["checkpoint", "--out", tmp_path / "x.json", "--resume-steps", "-1"],
    ):
        run = probe_cli(*usage)
        assert run.returncode == 2, (usage, run.stderr)
        assert "usage:" in run.stderr
    assert not (tmp_path / "x.json").exists()


def test_the_cli_leaves_the_resume_default_to_the_probe() -> None:
    """The CLI does not import torch, so it passes --resume-steps only when given."""
    from workflows.probes.cli import build_parser

    assert build_parser().parse_args(["checkpoint", "--out", "r.json"]).resume_steps is None
    shown = " ".join(probe_cli("checkpoint", "--help").stdout.split())
    assert f"(default: {checkpoint.RESUME_STEPS};" in shown
