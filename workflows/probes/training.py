"""training: samples per second of a small real model trained for a fixed window.

The model is a TinyTransformer language model trained with AdamW on deterministic synthetic
sequences (workflows/probes/models.py), in float32 or, with `bf16`, under bfloat16 autocast.
After `warmup_steps` untimed steps, the probe trains until `seconds` have passed and divides the
samples of the steps it completed (batch size x steps x ranks) by the measured window, which
ends after the device has finished the last step. In a world the job launched (torchrun) or that
the probe spawns (`local_world_size`), the model is wrapped in DistributedDataParallel, rank 0
decides when the window closes (one tiny collective per step, so that every rank stops on the
same step), and the number is the whole world's throughput.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from . import progress
from .envelope import Outcome, ProbeFailure, measure
from .models import ModelConfig, TinyTransformer, synthetic_batches
from .runtime import (
    Backend,
    Device,
    World,
    distributed,
    launched,
    pick_device,
    run_local_world,
    torch_labels,
)

DATA_BATCHES = 16  # distinct batches made up front and cycled, so no data loading is timed


@dataclass(frozen=True, kw_only=True)
class TrainingSettings:
    """What a training run trains, for how long, and where (the CLI's flags)."""

    seconds: float = 30.0
    """length of the timed window"""
    warmup_steps: int = 5
    batch_size: int = 32
    """per rank"""
    config: ModelConfig = field(default_factory=ModelConfig)
    device: Device = "auto"
    bf16: bool = False
    """bfloat16 autocast"""
    learning_rate: float = 3e-4
    seed: int = 0
    local_world_size: int | None = None
    """spawn this many DDP ranks here"""
    backend: Backend = "auto"
    timeout_s: float = 300.0


def run_training(
    settings: TrainingSettings | None = None,
    *,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Train for a window of `settings.seconds` after warm-up; return the result envelope.

    A single process by default; one rank of the job's world when RANK and WORLD_SIZE are set;
    `local_world_size` ranks spawned here (gloo on CPU, NCCL when each has a GPU) when given.
    """
    settings = settings or TrainingSettings()
    if settings.seconds <= 0 or settings.warmup_steps < 0 or settings.batch_size < 1:
        raise ValueError("seconds and batch_size must be positive, warmup_steps at least 0")

    def body() -> Outcome:
        if settings.local_world_size is not None:
            payload = run_local_world(rank_main, settings.local_world_size, {"settings": settings})
        elif launched():
            payload = rank_main(settings=settings)
        else:
            payload = _train(None, pick_device(settings.device), settings)
        return Outcome(payload["metrics"], None, payload["environment"])

    return measure("training", body, cluster=cluster, pool=pool, labels=labels)


def rank_main(*, settings: TrainingSettings, init_method: str = "env://") -> dict[str, Any]:
    """One rank of distributed training; every rank returns the world's numbers."""
    with distributed(settings.backend, settings.timeout_s, init_method) as world:
        return _train(world, world.device, settings)


def _train(world: World | None, device: torch.device, settings: TrainingSettings) -> dict[str, Any]:
    shape = settings.config
    batch_size, seed = settings.batch_size, settings.seed
    ranks = world.size if world else 1
    torch.manual_seed(seed)
    model: torch.nn.Module = TinyTransformer(shape).to(device)
    if world and world.size > 1:
        model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    rank = world.rank if world else 0
    batches = synthetic_batches(shape, batch_size, DATA_BATCHES, seed + rank, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if settings.bf16 else nullcontext()

    def step(index: int) -> torch.Tensor:
        inputs, targets = batches[index % len(batches)]
        with autocast:
            logits = model(inputs)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, shape.vocab).float(), targets.reshape(-1)
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        return loss.detach()

    with progress.phase("warm-up", f"{settings.warmup_steps} steps"):
        for index in range(settings.warmup_steps):
            step(index)
        _synchronize(device)
    steps = 0
    start = time.perf_counter()
    with progress.phase("timed window", f"{settings.seconds:g} s of training"):
        while True:
            loss = step(settings.warmup_steps + steps)
            steps += 1
            if _window_closed(world, device, time.perf_counter() - start >= settings.seconds):
                break
        _synchronize(device)
    window = time.perf_counter() - start
    final_loss = float(loss)
    if not math.isfinite(final_loss):
        raise ProbeFailure(f"the training loss is not finite ({final_loss}) after {steps} steps")
    metrics = {
        "model": shape.name(),
        "steps": steps,
        "windowSeconds": window,
        "samplesPerSecond": steps * batch_size * ranks / window,
        "batchSize": batch_size,
        "device": str(device),
        "finalLoss": final_loss,
    }
    environment = torch_labels(device) | {
        "worldSize": str(ranks),
        "precision": "bf16-autocast" if settings.bf16 else "float32",
    }
    if world:
        environment["backend"] = world.backend
    if device.type == "cuda":  # one GPU per rank: what the report prices the run at
        environment["gpuplane.dev/gpus"] = str(ranks)
    return {"metrics": metrics, "environment": environment}


def _window_closed(world: World | None, device: torch.device, closed_here: bool) -> bool:
    """Whether to stop; in a world, rank 0's clock decides for everyone."""
    if world is None or world.size == 1:
        return closed_here
    flag = torch.tensor([1.0 if closed_here else 0.0], device=device)
    dist.broadcast(flag, src=0)
    return bool(flag.item() > 0)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
