"""staging: how long it takes to pull a dataset sample and base weights onto the node.

Every file under `source` is copied into `dest`, keeping relative paths; the timer covers
listing, reading, writing and an fsync of each copied file. Sources: a local path or `file://`
URL (a file or a folder, walked recursively), or `s3://bucket/prefix` through boto3 when the image
has it (credentials and endpoint from the usual AWS environment: AWS_ENDPOINT_URL, …). Any other
scheme, or s3 without boto3, gives a failed result that says so. Local copies go through an 8 MiB
buffer rather than copy_file_range, so a filesystem cannot turn the copy into a reflink.

With `workers` N > 1, N threads copy (or download) files at once, each file taken by the next free
thread; `aggregateGBps` is the bytes of every file divided by the wall time of the whole copy, not
a sum of per-thread rates (the same number as `GBps`, named for the concurrent step).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from . import progress
from .envelope import Outcome, ProbeFailure, measure, rate

CHUNK = 8 * 1024 * 1024


def run_staging(
    *,
    source: str,
    dest: str | os.PathLike[str] | None = None,
    workers: int = 1,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Copy everything under `source` into the folder `dest`.

    A given `dest` keeps the copies (the job may train on them); without one the probe copies into
    a temporary folder and removes it afterwards. `workers` files are copied at once.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")

    def body() -> Outcome:
        parts = urlsplit(source)
        scheme = parts.scheme.lower()
        if scheme not in ("", "file", "s3"):
            raise ProbeFailure(
                f"unsupported source scheme {scheme!r} in {source!r}; supported: a local path, file://, s3:// (with boto3)"
            )
        folder = (
            Path(dest) if dest is not None else Path(tempfile.mkdtemp(prefix="gpuplane-stage-"))
        )
        try:
            folder.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            with progress.phase("copy", f"{source} into {folder}, {workers} at once"):
                if scheme == "s3":
                    prefix = unquote(parts.path).lstrip("/")
                    files, nbytes = _from_s3(parts.netloc, prefix, folder, workers)
                else:
                    local = Path(unquote(parts.path) if scheme == "file" else source)
                    files, nbytes = _from_folder(local, folder, workers)
            seconds = time.perf_counter() - start
        finally:
            if dest is None:
                shutil.rmtree(folder, ignore_errors=True)
        if files == 0:
            raise ProbeFailure(f"no files under {source}")
        metrics = {
            "bytes": nbytes,
            "files": files,
            "seconds": seconds,
            "GBps": rate(nbytes, seconds),
            "source": source,
            "workers": workers,
            "aggregateGBps": rate(nbytes, seconds),
        }
        return Outcome(metrics, None, {"stagingDestination": str(folder)})

    return measure("staging", body, cluster=cluster, pool=pool, labels=labels)


def _each(jobs: Sequence[Callable[[], int]], workers: int) -> int:
    """Run every job on `workers` threads (here when one); the sum of what they return."""
    if workers == 1:
        return sum(job() for job in jobs)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(pool.map(lambda job: job(), jobs))


def _from_folder(source: Path, dest: Path, workers: int) -> tuple[int, int]:
    if not source.exists():
        raise ProbeFailure(f"source {source} does not exist")
    if source.is_file():
        pairs = [(source, dest / source.name)]
    else:
        if dest.resolve().is_relative_to(source.resolve()):
            raise ProbeFailure(f"destination {dest} lies inside the source {source}")
        pairs = [
            (Path(root) / name, dest / Path(root).relative_to(source) / name)
            for root, _, names in sorted(os.walk(source))
            for name in sorted(names)
        ]
    jobs = [partial(_copy, src, dst) for src, dst in pairs]
    return len(pairs), _each(jobs, workers)


def _copy(src: Path, dst: Path) -> int:
    dst.parent.mkdir(parents=True, exist_ok=True)
    copied = 0
    with src.open("rb", buffering=0) as reader, dst.open("wb", buffering=0) as writer:
        buffer = bytearray(CHUNK)
        view = memoryview(buffer)
        while count := reader.readinto(buffer):
            writer.write(view[:count])
            copied += count
        os.fsync(writer.fileno())
    return copied


def _from_s3(bucket: str, prefix: str, dest: Path, workers: int) -> tuple[int, int]:
    try:
        import boto3  # type: ignore[import-not-found]  # optional: only images that pull from S3 have it
    except ImportError:
        raise ProbeFailure("s3:// sources need boto3, which this image does not have") from None
    client = boto3.client("s3")  # boto3's clients are safe to share between threads
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [item["Key"] for item in page.get("Contents", []) if not item["Key"].endswith("/")]

    def download(key: str) -> int:
        relative = key[len(prefix) :].lstrip("/") or key.rsplit("/", 1)[-1]
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(bucket, key, str(target))
        with target.open("rb") as handle:
            os.fsync(handle.fileno())
        return target.stat().st_size

    return len(keys), _each([partial(download, key) for key in keys], workers)
