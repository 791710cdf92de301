"""The result envelope every probe writes, and the helpers that fill it.

A probe's body returns an `Outcome` (its metrics, an error if the numbers did not pass its own
check, and environment labels it knows); `measure` times the body, turns any exception into a
failed result, and wraps it in the envelope of schemas/results/result.schema.json. Nothing here
imports torch, so the probes that need none (storage, staging, inference) start fast.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import progress

SCHEMA_VERSION = 1
PROBES = ("allreduce", "checkpoint", "storage", "staging", "training", "inference", "nodes")
GB = 1e9  # bandwidths are decimal GB/s, as nccl-tests and storage vendors report them

# Environment variables that become labels (Hera passes them through the pod spec; NODE_NAME comes
# from the downward API). GPUPLANE_LABELS adds more: "key=value,key=value".
ENV_LABELS = {
    "GPUPLANE_ACCELERATOR": "gpuplane.dev/accelerator",
    "GPUPLANE_IMAGE": "image",
    "NODE_NAME": "node",
    "POD_NAME": "pod",
}


# the key pattern of result.schema.json's `environment`
LABEL_KEY = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?")


class ProbeFailure(Exception):
    """The probe could not measure; the message becomes the result's `error`, metrics stay empty."""


@dataclass
class Outcome:
    """What a probe's body measured: complete metrics, and an error when they failed its check."""

    metrics: dict[str, Any]
    error: str | None = None
    environment: dict[str, str] = field(default_factory=dict)


def now_rfc3339() -> str:
    """The current time in UTC, RFC 3339 with a `Z` and whole seconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """`key=value` strings into a dict; ValueError names the first malformed one."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not LABEL_KEY.fullmatch(key) or len(key) > 253:
            raise ValueError(f"label {item!r} is not key=value with a key like gpuplane.dev/pool")
        labels[key] = value.strip()
    return labels


def environment(
    cluster: str | None,
    pool: str | None,
    labels: Mapping[str, str] | None = None,
    runtime: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The result's labels: given labels, then cluster and pool, then facts of this runtime.

    Later sources win, so a label cannot misstate the torch version or the device a probe used.
    Raises ValueError for a malformed label (from GPUPLANE_LABELS or `labels`).
    """
    env: dict[str, str] = {}
    raw = os.environ.get("GPUPLANE_LABELS", "")
    env.update(parse_labels(part for part in raw.split(",") if part.strip()))
    for variable, key in ENV_LABELS.items():
        if os.environ.get(variable):
            env[key] = os.environ[variable]
    env.update(parse_labels(f"{key}={value}" for key, value in (labels or {}).items()))
    if cluster:
        env["gpuplane.dev/cluster"] = cluster
    if pool:
        env["gpuplane.dev/pool"] = pool
    env.setdefault("node", socket.gethostname())
    env["hostname"] = socket.gethostname()
    env["python"] = platform.python_version()
    env["platform"] = platform.platform()
    env.update(runtime or {})
    return env


def measure(
    probe: str,
    body: Callable[[], Outcome],
    *,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run a probe's body and return its result envelope; never raises for a failed measurement.

    `cluster` and `pool` default to GPUPLANE_CLUSTER and GPUPLANE_POOL. Any exception the body
    raises becomes `ok: false` with empty metrics and the exception as the error. ValueError for
    a malformed label, before the body runs.
    """
    if probe not in PROBES:
        raise ValueError(f"unknown probe {probe!r}; expected one of {', '.join(PROBES)}")
    cluster = cluster or os.environ.get("GPUPLANE_CLUSTER") or None
    pool = pool or os.environ.get("GPUPLANE_POOL") or None
    # a malformed label is a usage error: raise it before measuring anything
    environment(cluster, pool, labels)
    started_at = now_rfc3339()
    start = time.perf_counter()
    with progress.running(probe):
        try:
            outcome = body()
        except ProbeFailure as exc:
            outcome = Outcome({}, str(exc))
        except Exception as exc:  # a probe must always leave a result behind for the report
            outcome = Outcome({}, f"{type(exc).__name__}: {exc}")
    duration = time.perf_counter() - start
    error = None if outcome.error is None else one_line(outcome.error)
    progress.say(f"finished in {duration:.1f} s: " + ("ok" if error is None else "failed"))
    return {
        "schemaVersion": SCHEMA_VERSION,
        "probe": probe,
        "cluster": cluster,
        "pool": pool,
        "startedAt": started_at,
        "durationSeconds": round(duration, 6),
        "ok": error is None,
        "error": error,
        "environment": environment(cluster, pool, labels, outcome.environment),
        "metrics": outcome.metrics,
    }


def one_line(message: str, limit: int = 1000) -> str:
    """A message on one line (whitespace collapsed), at most `limit` characters, never empty."""
    text = " ".join(message.split()) or "failed without a message"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_result(result: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write a result atomically (a temporary file beside it, then a rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, target)
    return target


def rate(nbytes: float, seconds: float) -> float:
    """Decimal GB/s, guarded against a zero duration from a coarse clock."""
    return nbytes / max(seconds, 1e-9) / GB


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """Make a new directory entry durable (a no-op where directories cannot be opened)."""
    if sys.platform == "win32":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_cache(fd: int) -> bool:
    """Ask the kernel to evict a file's (clean, fsynced) pages; False where it cannot be asked."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return False
    try:
        advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        return False
    return True


def end_process(code: int) -> None:
    """Leave a rank's process without interpreter teardown, once its work is done and written.

    After a gloo world is torn down, the interpreter's teardown occasionally aborts in C++
    (`terminate called without an active exception`, SIGABRT, no Python frame; about one run in
    thirty here with torch 2.13). The measurement is complete by then, but the launcher would
    report the rank as failed, so ranks exit directly.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
