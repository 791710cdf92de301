"""allreduce: the bus bandwidth of torch.distributed all_reduce (sum) over a message-size sweep.

For each size every rank runs `warmup` untimed all-reduces, meets the others, then times
`iterations` back-to-back all-reduces (synchronising the GPU at the end, as nccl-tests does); the
time per operation is averaged over the ranks. Bandwidths follow nccl-tests
(/work/shared/reference/nccl-tests/PERFORMANCE.md): `algbw = S / t` and, for AllReduce,
`busbw = algbw * 2(n-1)/n`, in decimal GB/s. After timing, each size is checked: every rank
contributes rank + 1, and the sum must be n(n+1)/2 everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from . import progress
from .envelope import Outcome, measure
from .runtime import Backend, World, distributed, launched, run_local_world, torch_labels

KIB = 1024
MIB = 1024 * KIB
DTYPE = torch.float32
ELEMENT_BYTES = 4


def size_sweep(min_bytes: int = KIB, max_bytes: int = 64 * MIB, factor: int = 4) -> list[int]:
    """Message sizes from `min_bytes` to `max_bytes` (inclusive when reached), times `factor`."""
    if min_bytes < 1 or max_bytes < min_bytes or factor < 2:
        raise ValueError("a sweep needs 1 <= min_bytes <= max_bytes and a factor of at least 2")
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


def bus_factor(world_size: int) -> float:
    """nccl-tests' AllReduce correction from algorithm to bus bandwidth: 2(n-1)/n."""
    return 2 * (world_size - 1) / world_size


def default_local_world_size() -> int:
    """Ranks to spawn when the job launched none: one per local GPU, and at least two."""
    return max(2, torch.cuda.device_count() if torch.cuda.is_available() else 0)


@dataclass(frozen=True, kw_only=True)
class AllreduceSettings:
    """Which message sizes an all-reduce run times, how often, and in which world (the CLI's
    flags)."""

    sizes: Sequence[int] | None = None
    """message sizes in bytes (default: `size_sweep()`)"""
    iterations: int = 20
    """timed all-reduces per size"""
    warmup: int = 5
    """untimed all-reduces per size"""
    local_world_size: int | None = None
    """spawn this many ranks here instead of joining the job's world"""
    backend: Backend = "auto"
    timeout_s: float = 300.0


def run_allreduce(
    settings: AllreduceSettings | None = None,
    *,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Measure all-reduce bandwidth; return the result envelope (on every rank).

    In a world the job launched (RANK and WORLD_SIZE set, `local_world_size` None) this process
    is one rank; otherwise the probe spawns `local_world_size` ranks itself (default: one per
    local GPU, at least two) and this process only collects rank 0's numbers.
    """
    settings = settings or AllreduceSettings()
    byte_sizes = sorted(
        {max(1, size // ELEMENT_BYTES) * ELEMENT_BYTES for size in (settings.sizes or size_sweep())}
    )
    if settings.iterations < 1 or settings.warmup < 0:
        raise ValueError("iterations must be at least 1 and warmup at least 0")
    options: dict[str, Any] = {
        "sizes": byte_sizes,
        "iterations": settings.iterations,
        "warmup": settings.warmup,
        "backend": settings.backend,
        "timeout_s": settings.timeout_s,
    }
    local_world_size = settings.local_world_size

    def body() -> Outcome:
        if local_world_size is None and launched():
            payload = rank_main(**options)
        else:
            nprocs = local_world_size or default_local_world_size()
            payload = run_local_world(rank_main, nprocs, options)
        return Outcome(payload["metrics"], payload["error"], payload["environment"])

    return measure("allreduce", body, cluster=cluster, pool=pool, labels=labels)


def rank_main(
    *,
    sizes: list[int],
    iterations: int,
    warmup: int,
    backend: str,
    timeout_s: float,
    init_method: str = "env://",
) -> dict[str, Any]:
    """One rank's part of the sweep; every rank returns the same (rank-averaged) numbers."""
    with distributed(backend, timeout_s, init_method) as world:
        seconds: list[float] = []
        wrong: list[int] = []
        for index, nbytes in enumerate(sizes):
            with progress.phase(f"size {index + 1}/{len(sizes)}", f"{nbytes} bytes"):
                elapsed, correct = _time_one_size(world, nbytes, iterations, warmup)
            seconds.append(elapsed)
            if not correct:
                wrong.append(nbytes)
        averaged = torch.tensor(seconds, dtype=torch.float64, device=world.device)
        dist.all_reduce(averaged)
        averaged /= world.size
        per_op = [float(value) for value in averaged.cpu()]
    rows = []
    for nbytes, seconds_per_op in zip(sizes, per_op, strict=True):
        algbw = nbytes / max(seconds_per_op, 1e-12) / 1e9
        rows.append(
            {
                "bytes": nbytes,
                "timeUs": seconds_per_op * 1e6,
                "algbwGBps": algbw,
                "busbwGBps": algbw * bus_factor(world.size),
            }
        )
    metrics = {
        "backend": world.backend,
        "worldSize": world.size,
        "iterations": iterations,
        "sizes": rows,
        "peakBusbwGBps": max(row["busbwGBps"] for row in rows),
    }
    error = None
    if wrong:
        error = f"all_reduce returned wrong sums for {len(wrong)} sizes (first at {wrong[0]} bytes)"
    environment = torch_labels(world.device) | {
        "backend": world.backend,
        "worldSize": str(world.size),
        "dtype": "float32",
    }
    if world.device.type == "cuda":  # one GPU per rank
        environment["gpuplane.dev/gpus"] = str(world.size)
    return {"metrics": metrics, "error": error, "environment": environment}


def _time_one_size(world: World, nbytes: int, iterations: int, warmup: int) -> tuple[float, bool]:
    """Seconds per all-reduce of `nbytes` on this rank, and whether the checked sum was right."""
    buffer = torch.zeros(nbytes // ELEMENT_BYTES, dtype=DTYPE, device=world.device)
    for _ in range(warmup):
        dist.all_reduce(buffer)
    _meet(world)
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(buffer)
    if world.device.type == "cuda":
        torch.cuda.synchronize(world.device)
    elapsed = (time.perf_counter() - start) / iterations
    buffer.fill_(world.rank + 1)
    dist.all_reduce(buffer)
    correct = bool(torch.all(buffer == world.size * (world.size + 1) / 2))
    return elapsed, correct


def _meet(world: World) -> None:
    """A barrier that works the same on every backend: a one-element all-reduce, synchronised."""
    dist.all_reduce(torch.zeros(1, dtype=DTYPE, device=world.device))
    if world.device.type == "cuda":
        torch.cuda.synchronize(world.device)
