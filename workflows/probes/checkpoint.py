"""checkpoint: write a real training checkpoint, restore it, check every tensor came back, resume.

The state is a TinyTransformer's state_dict plus its Adam optimizer state after one real step
(so the moments exist), sized to about `megabytes`, on the probe's device. Writing is
`torch.save` into an open file, then fsync of the file and of its directory; the timer stops after
both. Before restoring, the file's pages are evicted from the page cache (posix_fadvise
DONTNEED, where the kernel allows it), so the restore reads storage rather than memory.
Restoring is `torch.load(weights_only=True)` onto the same device. Every tensor is then compared
with `torch.equal` (and every other value with ==): `verified`.

Equal tensors do not yet show that training can go on, so the probe also resumes: before saving,
the writer trains `resume_steps` more steps from a copy of the saved state on the next synthetic
batches and keeps their losses (the reference); after verifying, the restorer rebuilds the model
and Adam from the restored state_dicts, trains the same steps on the same batches and must get
the same losses, within LOSS_RELATIVE_TOLERANCE, and the step count the writer reached: `resumed`.
A restore that brings back the weights but not the optimizer's moments or step count passes the
first step and fails the next ones.

A checkpoint can also be written by one pod and restored by another (`phase="write"`, then
`phase="restore"` with the same path): the writer leaves a sidecar `<file>.json` with its timing,
a SHA-256 of every tensor and its reference continuation (losses, data seed, batch size, learning
rate), its node and the wall-clock time its write finished; the restorer's result carries both
timings, both nodes (`writerNode`, `restoreNode`) and `sinceWriteSeconds`, from the write's finish
to the end of the restore (load and digest check): the node-loss step's recovery time.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import torch

from . import progress
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
from .runtime import Device, pick_device, torch_labels

FILE_NAME = "gpuplane-checkpoint.pt"
PHASES = ("both", "write", "restore")
Phase = Literal["both", "write", "restore"]
BYTES_PER_PARAMETER = 12  # float32 weight plus Adam's two float32 moments
SEED = 0
BATCH_SIZE = 2
LEARNING_RATE = 1e-3
RESUME_STEPS = 3
"""Steps resumed by default. The first resumed loss depends on the weights alone; the second and
third show whether Adam's moments and step count came back (a restore without them is off by at
least about 1e-3 relative at the second step and 1e-2 at the third, measured on the CPU)."""
LOSS_RELATIVE_TOLERANCE = 1e-4
"""How far a resumed loss may be from the writer's, relative to it. On the CPU the same steps give
bit-identical losses; on a GPU, kernels that reduce in a nondeterministic order (atomic adds in
backward passes) can change the last digits of a float32 loss, which a few steps barely grow:
this allows that, and stays ten times below what a lost optimizer state does."""
LOSS_ABSOLUTE_TOLERANCE = 1e-6
"""The floor under the relative tolerance, for losses near zero."""


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


def training_state(config: ModelConfig, device: torch.device, seed: int = SEED) -> dict[str, Any]:
    """The model's and optimizer's state after one Adam step on synthetic data."""
    torch.manual_seed(seed)
    model = TinyTransformer(config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    batch = synthetic_batches(config, BATCH_SIZE, 1, seed, device)[0]
    _train_step(model, optimizer, batch, config.vocab)
    optimizer.zero_grad(set_to_none=True)
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": 1,
        "config": config.as_dict(),
    }


def _train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: tuple[torch.Tensor, torch.Tensor],
    vocab: int,
) -> float:
    inputs, targets = batch
    logits = model(inputs)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]
    optimizer.step()
    return float(loss.detach())  # waits for the device


@dataclass(frozen=True, slots=True)
class Continuation:
    """Training steps taken from a saved state, with what another pod needs to repeat them."""

    seed: int
    batch_size: int
    learning_rate: float
    from_step: int
    losses: tuple[float, ...]
    final_step: int

    def as_record(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "batchSize": self.batch_size,
            "learningRate": self.learning_rate,
            "fromStep": self.from_step,
            "losses": list(self.losses),
            "finalStep": self.final_step,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Continuation:
        return cls(
            seed=int(record["seed"]),
            batch_size=int(record["batchSize"]),
            learning_rate=float(record["learningRate"]),
            from_step=int(record["fromStep"]),
            losses=tuple(float(loss) for loss in record["losses"]),
            final_step=int(record["finalStep"]),
        )


def resume_batches(
    config: ModelConfig, steps: int, seed: int, batch_size: int, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The `steps` batches after the one `training_state` trained on: the same generator, going
    on, so a restorer that knows the seed and batch size rebuilds them exactly."""
    return synthetic_batches(config, batch_size, 1 + steps, seed, device)[1:]


def continue_training(
    state: Mapping[str, Any],
    steps: int,
    device: torch.device,
    *,
    seed: int = SEED,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
) -> Continuation:
    """Rebuild the model and Adam from `state`'s state_dicts and train `steps` more steps.

    `state` is left as it was: Adam's load_state_dict keeps the given tensors when their device
    and dtype fit, and its steps would then update the saved moments in place.
    """
    config = ModelConfig(**state["config"])
    model = TinyTransformer(config).to(device)
    model.load_state_dict(state["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    step = from_step = int(state["step"])
    losses = []
    for batch in resume_batches(config, steps, seed, batch_size, device):
        losses.append(_train_step(model, optimizer, batch, config.vocab))
        step += 1
    return Continuation(seed, batch_size, learning_rate, from_step, tuple(losses), step)


def loss_mismatches(
    reference: Continuation, resumed: Continuation
) -> tuple[float | None, list[str]]:
    """The largest loss difference (None when a loss is not finite) and what does not match:
    each loss beyond the tolerance, and a step count that does not continue the reference's."""
    problems = []
    differences = []
    for index, (want, got) in enumerate(zip(reference.losses, resumed.losses, strict=True)):
        step = reference.from_step + index + 1
        difference = abs(got - want)
        differences.append(difference)
        allowed = max(LOSS_RELATIVE_TOLERANCE * abs(want), LOSS_ABSOLUTE_TOLERANCE)
        if not difference <= allowed:  # NaN never matches
            problems.append(
                f"step {step} (resumed {index + 1} of {len(resumed.losses)}) has loss "
                f"{got:.7g}, the writer's {want:.7g}: off by {difference:.3g}, tolerance "
                f"{allowed:.3g}"
            )
    if resumed.final_step != reference.final_step:
        problems.append(
            f"the resumed run ended at step {resumed.final_step}, the writer's at "
            f"{reference.final_step}: the step counter did not continue"
        )
    if not all(math.isfinite(d) for d in differences):
        return None, problems
    return max(differences, default=0.0), problems


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


@dataclass(frozen=True, kw_only=True)
class CheckpointSettings:
    """Where a checkpoint run writes, how big, and which phase it runs (the CLI's flags)."""

    path: str | os.PathLike[str] | None = None
    """folder for the checkpoint (default: a temporary folder)"""
    megabytes: float = 512.0
    """approximate checkpoint size in MB"""
    device: Device = "auto"
    phase: Phase = "both"
    keep: bool = False
    """keep the checkpoint file"""
    resume_steps: int = RESUME_STEPS
    """training steps the writer records and the restorer repeats (0: no resume)"""


def run_checkpoint(
    settings: CheckpointSettings | None = None,
    *,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write and restore a checkpoint under the folder `settings.path` (a temporary one when
    None).

    `phase="write"` only writes (and keeps) the checkpoint and its sidecar, and returns a result
    whose metrics are empty, which is not a reportable result (the CLI writes none): the restore
    phase's result is the one to report. Unless `keep`, the restore phase (like `both`) removes the
    checkpoint afterwards. `resume_steps` is how many steps the writer records and the restorer
    repeats (the restorer's must not exceed the writer's); 0 resumes nothing, and says so.
    """
    settings = settings or CheckpointSettings()
    path, phase, keep = settings.path, settings.phase, settings.keep
    resume_steps = settings.resume_steps
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}")
    if phase != "both" and path is None:
        raise ValueError(f"phase {phase!r} needs a path shared by the writer and the restorer")
    if resume_steps < 0:
        raise ValueError("resume_steps must be 0 or more")
    config = model_for_size(settings.megabytes)

    def body() -> Outcome:
        target = pick_device(settings.device)
        env = torch_labels(target) | {"checkpointPhase": phase}
        folder = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="gpuplane-ckpt-"))
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / FILE_NAME
        sidecar = file.with_name(file.name + ".json")
        try:
            if phase == "restore":
                with progress.phase("restore", f"{file}, then {resume_steps} training steps"):
                    return _restore_elsewhere(file, sidecar, target, env, resume_steps)
            with progress.phase("reference", f"{resume_steps} training steps from the state"):
                state = training_state(config, target)
                reference = continue_training(state, resume_steps, target)
            if not all(math.isfinite(loss) for loss in reference.losses):
                raise ProbeFailure(f"training from the saved state gave losses {reference.losses}")
            start = time.perf_counter()
            with progress.phase("write", f"{settings.megabytes} MB to {file}"):
                save_checkpoint(state, file)
            write_seconds = time.perf_counter() - start
            finished = time.time()
            nbytes = file.stat().st_size
            if phase == "write":
                record = {
                    "writtenAt": now_rfc3339(),
                    "finishedAt": finished,
                    "writerNode": node_name(),
                    "bytes": nbytes,
                    "writeSeconds": write_seconds,
                    "model": config.name(),
                    "digests": digests(state),
                    "resume": reference.as_record(),
                }
                sidecar.write_text(json.dumps(record), encoding="utf-8")
                return Outcome({}, None, env)
            evict(file)
            start = time.perf_counter()
            with progress.phase("restore", f"{nbytes / 1e6:.0f} MB from {file}"):
                restored = load_checkpoint(file, target)
            restore_seconds = time.perf_counter() - start
            with progress.phase("verify", f"every tensor, then {resume_steps} training steps"):
                mismatched = differences(state, restored)
                resume = _resume(restored, reference, resume_steps, target, verified=not mismatched)
            return _outcome(nbytes, write_seconds, restore_seconds, mismatched, resume, file, env)
        finally:
            if path is None and not keep:
                shutil.rmtree(folder, ignore_errors=True)
            elif phase != "write" and not keep:
                file.unlink(missing_ok=True)
                sidecar.unlink(missing_ok=True)

    return measure("checkpoint", body, cluster=cluster, pool=pool, labels=labels)


def _restore_elsewhere(
    file: Path, sidecar: Path, device: torch.device, env: dict[str, str], resume_steps: int
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
    restored_at = time.time()
    reference = Continuation.from_record(record["resume"]) if "resume" in record else None
    resume = _resume(restored, reference, resume_steps, device, verified=not found)
    env = env | {"checkpointWrittenAt": record["writtenAt"]}
    outcome = _outcome(nbytes, record["writeSeconds"], restore_seconds, found, resume, file, env)
    if "finishedAt" in record and "writerNode" in record:  # sidecars of older writers lack them
        outcome.metrics |= {
            # wall clocks of two nodes (NTP-synchronised); a skew below zero reads as 0
            "sinceWriteSeconds": max(0.0, restored_at - float(record["finishedAt"])),
            "writerNode": str(record["writerNode"]),
            "restoreNode": node_name(),
        }
    return outcome


def node_name() -> str:
    """The node this pod runs on: NODE_NAME (the downward API's spec.nodeName), else the
    hostname."""
    return os.environ.get("NODE_NAME") or socket.gethostname()


@dataclass(frozen=True, slots=True)
class Resume:
    """What resuming training from the restored state showed."""

    steps: int
    resumed: bool
    max_difference: float | None
    seconds: float
    error: str | None = None


def _resume(
    restored: Mapping[str, Any],
    reference: Continuation | None,
    steps: int,
    device: torch.device,
    *,
    verified: bool,
) -> Resume:
    """Train `steps` steps from the restored state and compare them with the writer's; nothing is
    resumed from a state that did not verify (its error already says why)."""
    if steps == 0 or not verified:
        return Resume(steps, False, None, 0.0)
    recorded = 0 if reference is None else len(reference.losses)
    if reference is None or recorded < steps:
        return Resume(
            steps,
            False,
            None,
            0.0,
            f"the write phase recorded {recorded} steps to resume (the sidecar's 'resume'); "
            f"resuming {steps} needs as many: give both phases the same --resume-steps",
        )
    want = replace(
        reference,
        losses=reference.losses[:steps],
        final_step=reference.from_step + steps,
    )
    start = time.perf_counter()
    got = continue_training(
        restored,
        steps,
        device,
        seed=want.seed,
        batch_size=want.batch_size,
        learning_rate=want.learning_rate,
    )
    seconds = time.perf_counter() - start
    largest, problems = loss_mismatches(want, got)
    error = None
    if problems:
        error = (
            f"training resumed from the restore does not continue the written run: "
            f"{'; '.join(problems)}"
        )
    return Resume(steps, not problems, largest, seconds, error)


def _outcome(
    nbytes: int,
    write_seconds: float,
    restore_seconds: float,
    mismatched: Sequence[str],
    resume: Resume,
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
        "resumeSteps": resume.steps,
        "resumed": resume.resumed,
        "resumeMaxLossDifference": resume.max_difference,
        "resumeSeconds": resume.seconds,
        "path": str(file),
    }
    error = resume.error
    if mismatched:
        error = f"the restored checkpoint differs from what was written ({len(mismatched)} mismatched entries, first: {mismatched[0]})"
    return Outcome(metrics, error, env)
