"""Progress lines on stderr while a probe runs: what it is doing, phase by phase, with the time
since it started, and a line every few seconds while one phase goes on.

A probe can run for a minute (a training window, a sweep of all-reduce sizes, gigabytes of
storage I/O) and used to print nothing until its one-line summary: a person watching the pod's
log could not tell a slow measurement from a hung one. These lines go to stderr only; stdout (the
summary line) and the JSON result are what they were. One process of a distributed world speaks
(RANK 0, or a process outside any world); GPUPLANE_PROBE_PROGRESS=0 silences them all, and
GPUPLANE_PROBE_HEARTBEAT sets the seconds between "still running" lines (5).

    [storage +0.0s] started
    [storage +0.0s] write: 1024 MB
    [storage +5.0s] write: still running (5 s)
    [storage +7.3s] write: done in 7.3 s
    [storage +12.0s] finished in 12.0 s: ok
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

HEARTBEAT_SECONDS = 5.0
"""How often a phase that is still running says so (GPUPLANE_PROBE_HEARTBEAT overrides it)."""

_state: dict[str, object] = {"probe": "probe", "start": time.monotonic()}
_phases: list[tuple[str, float]] = []
"""The phases running now, outermost first: the heartbeat names the innermost."""


def enabled() -> bool:
    """Whether this process prints progress: not when silenced, and in a distributed world only
    on rank 0 (a spawned local world's ranks set RANK too)."""
    if os.environ.get("GPUPLANE_PROBE_PROGRESS", "1") == "0":
        return False
    return os.environ.get("RANK", "0") == "0"


def elapsed() -> float:
    return time.monotonic() - float(_state["start"])  # type: ignore[arg-type]


def say(message: str) -> None:
    """One progress line on stderr: `[probe +12.3s] message`."""
    if not enabled():
        return
    sys.stderr.write(f"[{_state['probe']} +{elapsed():.1f}s] {message}\n")
    sys.stderr.flush()


@contextmanager
def running(probe: str, every: float | None = None) -> Iterator[None]:
    """The whole run of `probe`: start its clock, and every `every` seconds (default
    GPUPLANE_PROBE_HEARTBEAT, else `HEARTBEAT_SECONDS`) until it ends say which phase is still
    running and for how long."""
    if every is None:
        every = float(os.environ.get("GPUPLANE_PROBE_HEARTBEAT") or HEARTBEAT_SECONDS)
    _state["probe"] = probe
    _state["start"] = time.monotonic()
    _phases.clear()
    say("started")
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            name, since = _phases[-1] if _phases else ("measuring", float(_state["start"]))  # type: ignore[arg-type]
            say(f"{name}: still running ({time.monotonic() - since:.0f} s)")

    thread = threading.Thread(target=beat, name="probe-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def phase(name: str, detail: str = "") -> Iterator[None]:
    """Say that phase `name` starts (with `detail`) and when it is done, with its own
    duration; while it runs, the heartbeat names it. A phase that raises says `failed`."""
    say(f"{name}: {detail}" if detail else name)
    start = time.monotonic()
    _phases.append((name, start))
    outcome = "done"
    try:
        yield
    except BaseException:
        outcome = "failed"
        raise
    finally:
        _phases.pop()
        say(f"{name}: {outcome} in {time.monotonic() - start:.1f} s")
