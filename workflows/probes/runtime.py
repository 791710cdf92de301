"""What the torch probes share: the device, its labels, and the distributed world.

A world comes from the job (torchrun or the pod's env: RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, LOCAL_RANK) or, on a laptop or in a test, from `run_local_world`, which spawns N
processes that meet through a file store in a temporary folder and talk over the loopback
interface only. NCCL is used when the rank has a GPU of its own, gloo otherwise.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch.multiprocessing.spawn import ProcessExitedException, ProcessRaisedException, spawn

from .envelope import ProbeFailure, end_process
from .preflight import driver_version

BACKENDS = ("auto", "gloo", "nccl")
Backend = Literal["auto", "gloo", "nccl"]
"""A probe's `backend` setting: `auto` picks NCCL or gloo (`choose_backend`)."""
Device = Literal["auto", "cpu", "cuda"]
"""A probe's `device` setting (`pick_device`)."""


def torch_labels(device: torch.device) -> dict[str, str]:
    """Environment labels for the torch runtime and the device a probe used, and the node's
    NVIDIA driver (`driver`: from /proc/driver/nvidia/version, `none` without one)."""
    labels = {"torch": torch.__version__, "device": str(device), "driver": driver_version()}
    if device.type == "cuda":
        labels["cuda"] = torch.version.cuda or "unknown"
        labels["gpu"] = torch.cuda.get_device_name(device)
        labels["gpusVisible"] = str(torch.cuda.device_count())
        nccl = getattr(torch.cuda, "nccl", None)
        if nccl is not None and dist.is_nccl_available():
            version = nccl.version()
            labels["nccl"] = (
                ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
            )
    return labels


def pick_device(requested: str = "auto", local_rank: int = 0) -> torch.device:
    """`auto`: this rank's GPU when CUDA is available, else the CPU; `cpu` or `cuda` to insist."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cpu":
        return torch.device("cpu")
    if requested == "cuda":
        if not torch.cuda.is_available():
            raise ProbeFailure("device 'cuda' was asked for, but CUDA is not available here")
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    raise ProbeFailure(f"unknown device {requested!r}; expected auto, cpu or cuda")


def choose_backend(requested: str, local_rank: int, local_world_size: int) -> str:
    """NCCL when every rank on this node has a GPU of its own, gloo otherwise (or as asked)."""
    if requested not in BACKENDS:
        raise ProbeFailure(f"unknown backend {requested!r}; expected auto, gloo or nccl")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "auto":
        return "nccl" if gpus and local_world_size <= gpus and dist.is_nccl_available() else "gloo"
    if requested == "nccl" and not (gpus and dist.is_nccl_available()):
        raise ProbeFailure("backend 'nccl' was asked for, but no CUDA GPU or NCCL is available")
    if requested == "nccl" and local_rank >= gpus:
        raise ProbeFailure(f"backend 'nccl' needs a GPU per rank; local rank {local_rank} has none")
    return requested


def launched() -> bool:
    """Whether this process is one rank of a world the job launched (torchrun or the pod's env)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


@dataclass(frozen=True)
class World:
    """This process's place in a distributed world, and the backend and device it uses."""

    rank: int
    size: int
    local_rank: int
    backend: str
    device: torch.device


@contextmanager
def distributed(
    requested_backend: str, timeout_s: float, init_method: str = "env://"
) -> Iterator[World]:
    """Join the world described by the environment; leave it on exit."""
    rank = int(os.environ["RANK"])
    size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", str(size)))
    backend = choose_backend(requested_backend, local_rank, local_size)
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    kwargs: dict[str, Any] = {}
    if device.type == "cuda":
        torch.cuda.set_device(device)
        kwargs["device_id"] = device
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=rank,
        world_size=size,
        timeout=timedelta(seconds=timeout_s),
        **kwargs,
    )
    try:
        yield World(rank, size, local_rank, backend, device)
        # leave together: a rank that tears down while a peer still reads its last message can
        # abort that peer (seen with gloo when the last collective was a broadcast)
        if device.type == "cuda":
            dist.barrier(device_ids=[local_rank])
        else:
            dist.barrier()
    finally:
        dist.destroy_process_group()


def loopback_interface() -> str | None:
    """The loopback interface's name (lo on Linux, lo0 on macOS), for gloo in a local world."""
    names = [name for _, name in socket.if_nameindex()]
    for name in ("lo", "lo0"):
        if name in names:
            return name
    return next((name for name in names if name.startswith("lo")), None)


def run_local_world(
    worker: Callable[..., dict[str, Any]], nprocs: int, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Spawn `nprocs` ranks of `worker(init_method=..., **kwargs)`; return rank 0's return value.

    `worker` must be a module-level function (it is pickled into fresh interpreters) that returns
    JSON-serialisable data. A failure on any rank stops them all and raises ProbeFailure.
    """
    if nprocs < 1:
        raise ProbeFailure(f"a local world needs at least one process, not {nprocs}")
    with tempfile.TemporaryDirectory(prefix="gpuplane-world-") as folder:
        try:
            spawn(_local_rank, args=(nprocs, folder, worker, kwargs), nprocs=nprocs, join=True)  # type: ignore[no-untyped-call]
        except (ProcessRaisedException, ProcessExitedException) as exc:
            reports = [path.read_text() for path in sorted(Path(folder).glob("rank*.error"))]
            reason = "; ".join(reports) or str(exc).strip().splitlines()[-1]
            raise ProbeFailure(f"local world of {nprocs} processes failed: {reason}") from None
        result: dict[str, Any] = json.loads((Path(folder) / "rank0.json").read_text())
        return result


def _local_rank(
    rank: int,
    nprocs: int,
    folder: str,
    worker: Callable[..., dict[str, Any]],
    kwargs: dict[str, Any],
) -> None:
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(nprocs),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(nprocs),
    )
    interface = loopback_interface()
    if interface and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = interface
    # the ranks share this machine's cores; one pool of threads each would oversubscribe them
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // nprocs))
    try:
        payload = worker(init_method=f"file://{folder}/store", **kwargs)
    except BaseException as exc:
        Path(folder, f"rank{rank}.error").write_text(f"rank {rank}: {type(exc).__name__}: {exc}")
        raise
    if rank == 0:
        Path(folder, "rank0.json").write_text(json.dumps(payload))
    end_process(0)
