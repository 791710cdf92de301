"""checkpoint: write a real training checkpoint, restore it, and check every tensor came back.

The state is a TinyTransformer's state_dict plus its Adam optimizer state after one real step
(so the moments exist), sized to about `megabytes`, on the probe's device. Writing is
`torch.save` into an open file, then fsync of the file and of its directory; the timer stops after
both. Before restoring, the file's pages are evicted from the page cache (posix_fadvise
DONTNEED, where the kernel allows it), so the restore reads storage rather than memory.
Restoring is `torch.load(weights_only=True)` onto the same device. Every tensor is then compared
with `torch.equal` (and every other value with ==): `verified`.

A checkpoint can also be written by one pod and restored by another (`phase="write"`, then
`phase="restore"` with the same path): the writer leaves a sidecar `<file>.json` with its timing
and a SHA-256 of every tensor, and the restorer's result carries both timings.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from .envelope import (
    Outcome,
    ProbeFailure,
    drop_cache,
    fsync_directory,
    measure,
    now_rfc3339,
    rate,
)
from .models import ModelConfig, TinyTransformer, parameters_per_layer, synthetic_batches
from .runtime import pick_device, torch_labels

FILE_NAME = "gpuplane-checkpoint.pt"
PHASES = ("both", "write", "restore")
BYTES_PER_PARAMETER = 12  # float32 weight plus Adam's two float32 moments


def model_for_size(megabytes: float) -> ModelConfig:
    """A TinyTransformer whose weights and Adam state come to about `megabytes` (MB, 1e6 bytes)."""
    if megabytes <= 0:
        raise ValueError("megabytes must be positive")
    target = megabytes * 1e6
    width = 32
    while width < 1024 and parameters_per_layer(width * 2) * BYTES_PER_PARAMETER <= target / 2:
        width *= 2
    per_layer = parameters_per_layer(width) * BYTES_PER_PARAMETER
    layers = max(1, round(target / per_layer))
    return ModelConfig(vocab=256, width=width, layers=layers, heads=max(1, width // 64), seq_len=16)


def training_state(config: ModelConfig, device: torch.device, seed: int = 0) -> dict[str, Any]:
    """The model's and optimizer's state after one Adam step on synthetic data."""
    torch.manual_seed(seed)
    model = TinyTransformer(config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs, targets = synthetic_batches(config, 2, 1, seed, device)[0]
    logits = model(inputs)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config.vocab), targets.reshape(-1))
    loss.backward()  # type: ignore[no-untyped-call]
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": 1,
        "config": config.as_dict(),
    }


def save_checkpoint(state: Mapping[str, Any], path: Path) -> None:
    """torch.save, then fsync the file and its directory."""
    with path.open("wb") as handle:
        torch.save(state, handle)
        handle.flush()
        os.fsync(handle.fileno())
    fsync_directory(path.parent)


def load_checkpoint(path: Path, device: torch.device) -> Any:
    """torch.load onto `device`, refusing anything but tensors and plain data."""
    state = torch.load(path, map_location=device, weights_only=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return state


def evict(path: Path) -> None:
    """Drop the file's pages from the page cache where the kernel lets us."""
    fd = os.open(path, os.O_RDONLY)
    try:
        drop_cache(fd)
    finally:
        os.close(fd)


def leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, leaf) for every tensor or plain value inside nested dicts, lists and tuples."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from leaves(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def differences(expected: Any, actual: Any) -> list[str]:
    """Paths where `actual` is not exactly `expected`: structure, dtype, shape or any value."""
    want = dict(leaves(expected))
    got = dict(leaves(actual))
    found = sorted(set(want) ^ set(got))
    for key in sorted(set(want) & set(got)):
        if not _same(want[key], got[key]):
            found.append(key)
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and torch.equal(a, b.to(a.device))
        )
    return type(a) is type(b) and bool(a == b)


def digests(state: Any) -> dict[str, str]:
    """SHA-256 of every leaf (a tensor's dtype, shape and bytes; a value's repr)."""
    found = {}
    for key, value in leaves(state):
        digest = hashlib.sha256()
        if isinstance(value, torch.Tensor):
            flat = value.detach().cpu().contiguous().reshape(-1)
            digest.update(f"{value.dtype}{tuple(value.shape)}".encode())
            digest.update(flat.view(torch.uint8).numpy().tobytes())
        else:
            digest.update(repr(value).encode())
        found[key] = digest.hexdigest()
    return found


def run_checkpoint(
    *,
    path: str | os.PathLike[str] | None = None,
    megabytes: float = 512.0,
    device: str = "auto",
    phase: str = "both",
    keep: bool = False,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write and restore a checkpoint under the folder `path` (a temporary one when None).

    `phase="write"` only writes (and keeps) the checkpoint and its sidecar, and returns a result
    whose metrics are empty, which is not a reportable result (the CLI writes none): the restore
    phase's result is the one to report. Unless `keep`, the restore phase (like `both`) removes the
    checkpoint afterwards.
    """
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}")
    if phase != "both" and path is None:
        raise ValueError(f"phase {phase!r} needs a path shared by the writer and the restorer")
    config = model_for_size(megabytes)

    def body() -> Outcome:
        target = pick_device(device)
        env = torch_labels(target) | {"checkpointPhase": phase}
        folder = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="gpuplane-ckpt-"))
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / FILE_NAME
        sidecar = file.with_name(file.name + ".json")
        try:
            if phase == "restore":
                return _restore_elsewhere(file, sidecar, target, env)
            state = training_state(config, target)
            start = time.perf_counter()
            save_checkpoint(state, file)
            write_seconds = time.perf_counter() - start
            nbytes = file.stat().st_size
            if phase == "write":
                record = {
                    "writtenAt": now_rfc3339(),
                    "bytes": nbytes,
                    "writeSeconds": write_seconds,
                    "model": config.name(),
                    "digests": digests(state),
                }
                sidecar.write_text(json.dumps(record), encoding="utf-8")
                return Outcome({}, None, env)
            evict(file)
            start = time.perf_counter()
            restored = load_checkpoint(file, target)
            restore_seconds = time.perf_counter() - start
            return _outcome(
                nbytes, write_seconds, restore_seconds, differences(state, restored), file, env
            )
        finally:
            if path is None and not keep:
                shutil.rmtree(folder, ignore_errors=True)
            elif phase != "write" and not keep:
                file.unlink(missing_ok=True)
                sidecar.unlink(missing_ok=True)

    return measure("checkpoint", body, cluster=cluster, pool=pool, labels=labels)


def _restore_elsewhere(
    file: Path, sidecar: Path, device: torch.device, env: dict[str, str]
) -> Outcome:
    if not sidecar.is_file() or not file.is_file():
        raise ProbeFailure(
            f"no checkpoint written by a write phase at {file} (with {sidecar.name})"
        )
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    nbytes = file.stat().st_size
    if nbytes != record["bytes"]:
        raise ProbeFailure(f"{file} has {nbytes} bytes; the write phase wrote {record['bytes']}")
    evict(file)
    start = time.perf_counter()
    restored = load_checkpoint(file, device)
    restore_seconds = time.perf_counter() - start
    got = digests(restored)
    want: dict[str, str] = record["digests"]
    found = sorted(set(want) ^ set(got)) + sorted(
        k for k in set(want) & set(got) if want[k] != got[k]
    )
    env = env | {"checkpointWrittenAt": record["writtenAt"]}
    return _outcome(nbytes, record["writeSeconds"], restore_seconds, found, file, env)


def _outcome(
    nbytes: int,
    write_seconds: float,
    restore_seconds: float,
    mismatched: list[str],
    file: Path,
    env: dict[str, str],
) -> Outcome:
    metrics = {
        "bytes": nbytes,
        "writeSeconds": write_seconds,
        "writeGBps": rate(nbytes, write_seconds),
        "restoreSeconds": restore_seconds,
        "restoreGBps": rate(nbytes, restore_seconds),
        "verified": not mismatched,
        "path": str(file),
    }
    error = None
    if mismatched:
        error = f"the restored checkpoint differs from what was written ({len(mismatched)} mismatched entries, first: {mismatched[0]})"
    return Outcome(metrics, error, env)
