"""storage: sequential write then read throughput of a file on the volume under test.

The probe writes `total_bytes` in blocks of `block_bytes` (random data, each block stamped with its
index so that deduplicating or compressing storage cannot shortcut it), fsyncs the file and its
folder, and stops the write timer after the fsync. It then asks the kernel to drop the file's
pages from the page cache (posix_fadvise DONTNEED) and reads the file back sequentially in the same
blocks. With `direct=True` both passes use O_DIRECT and bypass the page cache entirely (the
filesystem must support it; tmpfs does not).

Honest limits: without O_DIRECT, a kernel or filesystem that ignores the eviction hint (some
network filesystems, or a hypervisor's cache below the guest) serves the read from memory, and
small sizes then overstate the read rate. Use sizes well above the volume's cache, or `direct`.

Under load (`workers`): N workers per process (threads; under torchrun each rank runs its own N,
and the world's W = N x ranks workers are numbered rank x N + i). Even-numbered workers write a new
file, odd-numbered ones read a file written (and evicted) beforehand, all at once: the workers of
a process wait on one barrier, and under torchrun the ranks meet first (a gloo barrier). Each
direction's aggregate is the total bytes it moved divided by the wall time of the concurrent phase
for that direction (from the common start to its last worker's end; the longest such span over
the ranks), never a sum of per-worker rates, which would overstate a volume whose workers do not
overlap. With one worker and no torchrun the probe is the sequential one above.
"""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import progress
from .envelope import Outcome, ProbeFailure, drop_cache, fsync_directory, measure, rate

MIB = 1024 * 1024
ALIGNMENT = 4096


@dataclass(frozen=True, kw_only=True)
class StorageSettings:
    """Where a storage run writes, how much, and how (the CLI's flags)."""

    path: str | os.PathLike[str] | None = None
    """folder on the volume under test (default: a temporary folder)"""
    total_bytes: int = 1024 * MIB
    block_bytes: int = 4 * MIB
    direct: bool = False
    """use O_DIRECT (bypass the page cache)"""
    keep: bool = False
    """keep the test file"""
    workers: int | None = None
    """concurrent workers per process, half writing and half reading (None: the sequential
    probe)"""


def run_storage(
    settings: StorageSettings | None = None,
    *,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Measure sequential write (with fsync) and read throughput in the folder `settings.path`."""
    settings = settings or StorageSettings()
    path, block_bytes, direct = settings.path, settings.block_bytes, settings.direct
    if block_bytes < 8 or settings.total_bytes < block_bytes:
        raise ValueError("block_bytes must be at least 8, and total_bytes at least one block")
    if direct and block_bytes % ALIGNMENT:
        raise ValueError(f"direct I/O needs block_bytes to be a multiple of {ALIGNMENT}")
    if settings.workers is not None and settings.workers < 1:
        raise ValueError("workers must be at least 1")
    blocks = settings.total_bytes // block_bytes
    nbytes = blocks * block_bytes
    if settings.workers is not None and (settings.workers > 1 or _launched()):
        return measure(
            "storage",
            lambda: _under_load(settings, blocks),
            cluster=cluster,
            pool=pool,
            labels=labels,
        )

    def body() -> Outcome:
        folder = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="gpuplane-io-"))
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / f"gpuplane-storage-{os.getpid()}.bin"
        flags = getattr(os, "O_DIRECT", 0) if direct else 0
        if direct and not flags:
            raise ProbeFailure("O_DIRECT is not available on this platform")
        buffer = mmap.mmap(-1, block_bytes)  # page-aligned, as O_DIRECT requires
        try:
            buffer.write(os.urandom(block_bytes))
            with progress.phase("write", f"{nbytes / 1e6:.0f} MB to {file}, fsync"):
                write_seconds = _write(file, buffer, blocks, flags)
            evicted = direct or _evict(file)
            with progress.phase("read", f"{nbytes / 1e6:.0f} MB back"):
                read_seconds, read = _read(file, buffer, flags)
        except OSError as exc:
            if direct and exc.errno == 22:
                raise ProbeFailure(
                    f"the filesystem under {folder} refuses O_DIRECT: {exc}"
                ) from exc
            raise
        finally:
            buffer.close()
            if not settings.keep:
                file.unlink(missing_ok=True)
                if path is None:
                    shutil.rmtree(folder, ignore_errors=True)
        if read != nbytes:
            raise ProbeFailure(f"read {read} bytes back from {file}, wrote {nbytes}")
        metrics = {
            "bytes": nbytes,
            "blockBytes": block_bytes,
            "writeGBps": rate(nbytes, write_seconds),
            "readGBps": rate(nbytes, read_seconds),
            "fsync": True,
            "path": str(file),
        }
        env = {
            "storageDirectIO": str(direct).lower(),
            "storageCacheDropped": str(evicted).lower(),
        }
        return Outcome(metrics, None, env)

    return measure("storage", body, cluster=cluster, pool=pool, labels=labels)


def _write(file: Path, buffer: mmap.mmap, blocks: int, flags: int) -> float:
    view = memoryview(buffer)
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o600)
    try:
        start = time.perf_counter()
        for index in range(blocks):
            struct.pack_into("<Q", buffer, 0, index)
            done = 0
            while done < len(view):
                done += os.write(fd, view[done:])
        os.fsync(fd)
    finally:
        os.close(fd)
        view.release()
    fsync_directory(file.parent)
    return time.perf_counter() - start


def _evict(file: Path) -> bool:
    fd = os.open(file, os.O_RDONLY)
    try:
        return drop_cache(fd)
    finally:
        os.close(fd)


def _read(file: Path, buffer: mmap.mmap, flags: int) -> tuple[float, int]:
    fd = os.open(file, os.O_RDONLY | flags)
    try:
        start = time.perf_counter()
        total = 0
        while True:
            count = os.readv(fd, [buffer])
            if count == 0:
                break
            total += count
        return time.perf_counter() - start, total
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ under load


def _launched() -> bool:
    """One rank of a world torchrun launched (as runtime.launched, without importing torch)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def _under_load(settings: StorageSettings, blocks: int) -> Outcome:
    """Concurrent writers and readers; under torchrun every rank's workers together."""
    workers = settings.workers or 1
    folder = (
        Path(settings.path)
        if settings.path is not None
        else Path(tempfile.mkdtemp(prefix="gpuplane-io-"))
    )
    folder.mkdir(parents=True, exist_ok=True)
    if not _launched():
        try:
            rows = _run_workers(settings, folder, blocks, 0)
        finally:
            _clean(settings, folder)
        return _load_outcome(settings, folder, rows, workers)
    from .runtime import distributed  # torch only under torchrun

    with distributed("gloo", 300.0) as world:
        import torch.distributed as dist

        try:
            dist.barrier()  # every rank's files are prepared before any starts
            rows = _run_workers(settings, folder, blocks, world.rank)
            gathered: list[Any] = [None] * world.size
            dist.all_gather_object(gathered, rows)
        finally:
            _clean(settings, folder)
    return _load_outcome(settings, folder, [row for part in gathered for row in part], workers)


def _run_workers(
    settings: StorageSettings, folder: Path, blocks: int, rank: int
) -> list[dict[str, Any]]:
    """Prepare the readers' files, then run this process's workers from one barrier."""
    workers = settings.workers or 1
    flags = getattr(os, "O_DIRECT", 0) if settings.direct else 0
    if settings.direct and not flags:
        raise ProbeFailure("O_DIRECT is not available on this platform")
    jobs = []
    for index in range(rank * workers, (rank + 1) * workers):
        file = folder / f"gpuplane-storage-{index}-{os.getpid()}.bin"
        buffer = mmap.mmap(-1, settings.block_bytes)
        buffer.write(os.urandom(settings.block_bytes))
        writer = index % 2 == 0
        if not writer:  # readers read a file written before the concurrent phase
            _write(file, buffer, blocks, flags)
            if not settings.direct:
                _evict(file)
        jobs.append((index, writer, file, buffer))
    start = threading.Barrier(len(jobs))
    rows: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def work(index: int, writer: bool, file: Path, buffer: mmap.mmap) -> None:
        try:
            start.wait()
            if writer:
                seconds, moved = _write(file, buffer, blocks, flags), blocks * len(buffer)
            else:
                seconds, moved = _read(file, buffer, flags)
            rows.append({"worker": index, "write": writer, "bytes": moved, "seconds": seconds})
        except BaseException as exc:  # reported below, in the probe's result
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for _, _, _, buffer in jobs:
        buffer.close()
    if errors:
        raise ProbeFailure(f"a storage worker failed: {errors[0]}")
    return rows


def _clean(settings: StorageSettings, folder: Path) -> None:
    if settings.keep:
        return
    for file in folder.glob(f"gpuplane-storage-*-{os.getpid()}.bin"):
        file.unlink(missing_ok=True)
    if settings.path is None:
        shutil.rmtree(folder, ignore_errors=True)


def _load_outcome(
    settings: StorageSettings, folder: Path, rows: Sequence[dict[str, Any]], per_process: int
) -> Outcome:
    writes = [row for row in rows if row["write"]]
    reads = [row for row in rows if not row["write"]]
    nbytes = (settings.total_bytes // settings.block_bytes) * settings.block_bytes
    short = [row for row in reads if row["bytes"] != nbytes]
    if short:
        raise ProbeFailure(
            f"worker {short[0]['worker']} read {short[0]['bytes']} of {nbytes} bytes"
        )

    def aggregate(group: Sequence[dict[str, Any]]) -> float:
        if not group:
            return 0.0
        return rate(sum(row["bytes"] for row in group), max(row["seconds"] for row in group))

    def slowest(group: Sequence[dict[str, Any]]) -> float:
        return min((rate(row["bytes"], row["seconds"]) for row in group), default=0.0)

    metrics = {
        "bytes": nbytes,
        "blockBytes": settings.block_bytes,
        "writeGBps": aggregate(writes),
        "readGBps": aggregate(reads),
        "fsync": True,
        "path": str(folder),
        "workers": len(rows),
        "aggregateReadGBps": aggregate(reads),
        "aggregateWriteGBps": aggregate(writes),
        "slowestReadGBps": slowest(reads),
        "slowestWriteGBps": slowest(writes),
    }
    env = {
        "storageDirectIO": str(settings.direct).lower(),
        "storageWorkersPerProcess": str(per_process),
    }
    return Outcome(metrics, None, env)
