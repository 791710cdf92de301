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
"""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    blocks = settings.total_bytes // block_bytes
    nbytes = blocks * block_bytes

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
            write_seconds = _write(file, buffer, blocks, flags)
            evicted = direct or _evict(file)
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
