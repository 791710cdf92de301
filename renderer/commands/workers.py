"""Work spread over forked worker processes that never leaves the parent waiting for a worker
that is gone.

`multiprocessing.Pool` replaces a worker that dies (killed for memory, say) and loses its task:
the parent then waits for that result forever, and a CI job hangs until its timeout. Here each
worker has a pipe of its own to the parent, which hands it the items one or two at a time and
so always knows what each worker holds; a worker whose pipe closes before it was told to stop
has died, and `WorkerStopped` names the item it was on. The workers fork with what the parent
holds (the platform, the validator), so only the items' positions go out and only results come
back. Nothing waits on a full pipe: the parent never has more than `AHEAD` small messages in a
worker's pipe, and it reads results as it iterates.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import pickle
import signal
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

AHEAD = 2
"""Items handed to a worker before it returns one: it goes on with the next while the parent
is busy elsewhere (`render` runs the policy while its workers render)."""

_DONE = "done"
_FAILED = "failed"


class WorkerStopped(Exception):
    """A worker process ended without the result of an item it held."""


class WorkerTraceback(Exception):
    """Where in the worker an exception raised there was raised (its traceback, as text)."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}"


def can_fork() -> bool:
    """Whether this platform starts processes by forking (Linux, macOS; not Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


class _Worker:
    """One forked process, this process's end of its pipe, and the positions of the items it
    holds, oldest first (it returns them in that order)."""

    def __init__(self, process: BaseProcess, connection: Connection) -> None:
        self.process = process
        self.connection = connection
        self.holds: deque[int] = deque()
        self.stopped = False
        self.finished = False


@contextlib.contextmanager
def forked_map(
    job: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int,
    *,
    describe: Callable[[Item], str] = str,
    advice: str = "",
) -> Iterator[Iterator[Result]]:
    """`job` of each item in `workers` forked processes, handed out in the order given; yields
    an iterator of the results as they are done. What `job` raised is raised here; a worker that
    ends without its result raises `WorkerStopped`, with `describe(item)` in its message, and
    `advice` when it was killed (what the command's user can do about it). Leaving the block
    stops the workers, finished or not."""
    if not items:
        yield iter(())
        return
    context = multiprocessing.get_context("fork")
    started: list[_Worker] = []
    pending = deque(range(len(items)))
    try:
        with _interrupts_deferred():  # every worker forked is in `started`, to be stopped
            for _ in range(max(1, min(workers, len(items)))):
                mine, theirs = context.Pipe()
                process = context.Process(target=_serve, args=(job, items, theirs), daemon=True)
                started.append(_Worker(process, mine))
                try:
                    process.start()
                finally:
                    theirs.close()  # the worker's end closing is then seen here as an end
        for _ in range(AHEAD):  # round by round: the first items, the largest, on every worker
            for worker in started:
                _hand_out(worker, pending)
        yield _results(started, items, pending, describe, advice)
    finally:
        for worker in started:
            worker.connection.close()
            if worker.process.is_alive():
                worker.process.terminate()
        for worker in started:
            if worker.process.pid is not None:
                worker.process.join()


def _hand_out(worker: _Worker, pending: deque[int]) -> None:
    """One more item for the worker, within `AHEAD`; the stop when none is left."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it died: `_results`
        # reads its end next, and reports it stopped with what it holds
        if pending and len(worker.holds) < AHEAD:
            position = pending.popleft()
            worker.holds.append(position)
            worker.connection.send(position)
        if not pending and not worker.holds and not worker.stopped:
            worker.stopped = True
            worker.connection.send(None)


def _results(
    started: list[_Worker],
    items: Sequence[Any],
    pending: deque[int],
    describe: Callable[[Any], str],
    advice: str,
) -> Iterator[Any]:
    """Each result as a worker sends it, until every item has one."""
    remaining = len(items)
    while remaining:
        live = {w.connection: w for w in started if not w.finished}
        if not live:  # pragma: no cover - a worker stops only once it holds nothing
            raise WorkerStopped("the worker processes stopped with work left")
        for ready in wait(list(live)):
            assert isinstance(ready, Connection)
            worker = live[ready]
            held = describe(items[worker.holds[0]]) if worker.holds else None
            try:
                kind, position, value = ready.recv()
            except (EOFError, ConnectionResetError):  # the worker's end closed: it ended
                # (a socket pair: a worker killed with an item unread in its end is a reset)
                worker.finished = True
                worker.process.join()
                if worker.stopped and not worker.holds:
                    continue
                doing = f" for {held}" if held is not None else ""
                raise WorkerStopped(
                    f"the worker process{doing} stopped before it finished"
                    f" ({_exit_status(worker.process.exitcode, advice)})"
                ) from None
            except Exception as err:  # the message arrived whole but cannot be rebuilt here
                raise RuntimeError(f"the result for {held} cannot be read back: {err!r}") from err
            worker.holds.remove(position)  # the oldest: a worker does its items in order
            if kind == _FAILED:
                error, where = _rebuilt(value)
                raise error from WorkerTraceback(where)
            remaining -= 1
            _hand_out(worker, pending)
            yield value


def _rebuilt(failure: tuple[bytes | None, str, str]) -> tuple[BaseException, str]:
    """The exception a worker sent (its text, when the exception itself cannot be unpickled
    here), and its traceback."""
    pickled, text, where = failure
    error: object = None
    if pickled is not None:
        with contextlib.suppress(Exception):
            error = pickle.loads(pickled)
    if not isinstance(error, BaseException):
        error = RuntimeError(text)
    return error, where


def _exit_status(code: int | None, advice: str) -> str:
    if code is not None and code < 0:
        return f"killed by signal {-code}; out of memory?{f' {advice}' if advice else ''}"
    return f"exit code {code}"


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Ctrl-C while worker processes start is taken once they have started and are known, not
    between a fork and its record (a worker nobody stops would be left running). In a worker
    forked meanwhile it is nothing, until `_quiet_on_interrupt`."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread takes signals in Python
        return
    arrived: list[int] = []

    def later(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    previous = signal.signal(signal.SIGINT, later)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if arrived:
        signal.raise_signal(signal.SIGINT)  # now, to the handler it was meant for


def _quiet_on_interrupt() -> None:
    """In a worker: ignore Ctrl-C, which the terminal sends to every process of the command.
    The parent stops its workers when it is interrupted; a worker that took the interrupt
    itself would print its own traceback beside the parent's one-line `Aborted!`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serve(job: Callable[[Any], Any], items: Sequence[Any], connection: Connection) -> None:
    """In the worker: do each item the parent hands out, in order, until it says stop (or is
    gone), sending each one's result, or what it raised, back."""
    _quiet_on_interrupt()
    gc.freeze()  # what it inherits lives as long as it does: out of its collections
    while True:
        try:
            position = connection.recv()
        except EOFError:
            break
        if position is None:
            break
        try:
            message: tuple[str, int, Any] = (_DONE, position, job(items[position]))
        except BaseException as err:  # SystemExit too: raised in the parent, as in one process
            message = (_FAILED, position, _failure(err))
        try:
            connection.send(message)
        except Exception as err:  # a result that cannot be pickled
            where = traceback.format_exc()
            connection.send((_FAILED, position, (None, f"its result: {err}", where)))
    connection.close()


def _failure(error: BaseException) -> tuple[bytes | None, str, str]:
    """What the parent needs to raise `error` again: the exception pickled (None when it cannot
    be), its type and text, and the traceback."""
    try:
        pickled: bytes | None = pickle.dumps(error, pickle.HIGHEST_PROTOCOL)
    except Exception:
        pickled = None
    return pickled, f"{type(error).__name__}: {error}", traceback.format_exc()
