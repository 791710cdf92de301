"""Work spread over forked worker processes that never leaves the parent waiting for a worker
that is gone.

`multiprocessing.Pool` replaces a worker that dies (killed for memory, say) and loses its task:
the parent then waits for that result forever, and a CI job hangs until its timeout. Here the
parent watches each worker's process as well as its results, knows which item each worker is
on, and raises `WorkerStopped` naming it. The workers fork with what the parent holds (the
platform, the validator), so only the items' positions go out and only results come back.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

_STARTED = "started"
_DONE = "done"
_FAILED = "failed"
_STOPPING = "stopping"


class WorkerStopped(Exception):
    """A worker process ended without the result of the item it was working on."""


class WorkerTraceback(Exception):
    """Where in the worker an exception raised there was raised (its traceback, as text)."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}"


def can_fork() -> bool:
    """Whether this platform starts processes by forking (Linux, macOS; not Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


class _Worker(Generic[Item]):
    """One forked process, the end of its pipe that this process reads, and its item now."""

    def __init__(self, process: BaseProcess, connection: Connection) -> None:
        self.process = process
        self.connection = connection
        self.current: Item | None = None
        self.stopping = False
        self.finished = False


@contextlib.contextmanager
def forked_map(
    job: Callable[[Item], Result],
    items: Sequence[Item],
    workers: int,
    *,
    describe: Callable[[Item], str] = str,
) -> Iterator[Iterator[Result]]:
    """`job` of each item in `workers` forked processes, taken in the order given; yields an
    iterator of the results as they are done. What `job` raised is raised here; a worker that
    ends without its result raises `WorkerStopped`, with `describe(item)` in its message.
    Leaving the block stops the workers, finished or not."""
    context = multiprocessing.get_context("fork")
    tasks = context.SimpleQueue()
    for position in range(len(items)):
        tasks.put(position)
    count = max(1, min(workers, len(items)))
    for _ in range(count):
        tasks.put(None)  # one stop for each worker, after every item
    started: list[_Worker[Item]] = []
    try:
        for _ in range(count):
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_serve, args=(job, items, tasks, sender), daemon=True)
            process.start()
            sender.close()  # the worker's end closing is then seen here as the end of its pipe
            started.append(_Worker(process, receiver))
        yield _results(started, items, describe)
    finally:
        for worker in started:
            worker.connection.close()
            if worker.process.is_alive():
                worker.process.terminate()
        for worker in started:
            worker.process.join()


def _results(
    started: list[_Worker[Item]], items: Sequence[Item], describe: Callable[[Item], str]
) -> Iterator[Any]:
    """Each result as a worker sends it, until every item has one."""
    remaining = len(items)
    while remaining:
        live = {w.connection: w for w in started if not w.finished}
        if not live:  # pragma: no cover - each worker stops only after the last item's result
            raise WorkerStopped("the worker processes stopped with work left")
        for ready in wait(list(live)):
            assert isinstance(ready, Connection)
            worker = live[ready]
            try:
                kind, position, value = ready.recv()
            except EOFError:  # the worker's end of the pipe closed: it ended
                worker.finished = True
                worker.process.join()
                if worker.stopping:
                    continue
                doing = f" for {describe(worker.current)}" if worker.current is not None else ""
                raise WorkerStopped(
                    f"the worker process{doing} stopped before it finished"
                    f" ({_exit_status(worker.process.exitcode)})"
                ) from None
            if kind == _STOPPING:
                worker.stopping = True
                continue
            if kind == _STARTED:
                worker.current = items[position]
                continue
            worker.current = None
            if kind == _FAILED:
                error, where = value
                raise error from WorkerTraceback(where)
            remaining -= 1
            yield value


def quiet_on_interrupt() -> None:
    """In a worker: ignore Ctrl-C, which the terminal sends to every process of the command.
    The parent stops its workers when it is interrupted; a worker that took the interrupt
    itself would print its own traceback beside the parent's one-line `Aborted!`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_status(code: int | None) -> str:
    if code is not None and code < 0:
        return f"killed by signal {-code}; out of memory? --jobs 1 needs less"
    return f"exit code {code}"


def _serve(
    job: Callable[[Item], Any], items: Sequence[Item], tasks: Any, sender: Connection
) -> None:
    """In the worker: take items until the stop, sending each one's start and result (or
    what it raised) back."""
    quiet_on_interrupt()
    gc.freeze()  # what it inherits lives as long as it does: out of its collections
    while True:
        position = tasks.get()
        if position is None:
            sender.send((_STOPPING, -1, None))
            break
        sender.send((_STARTED, position, None))
        try:
            message: tuple[str, int, Any] = (_DONE, position, job(items[position]))
        except Exception as err:
            message = (_FAILED, position, (err, traceback.format_exc()))
        try:
            sender.send(message)
        except Exception as err:  # a result or an exception that cannot be pickled
            kind, _, value = message
            what = f"{value[0]!r}" if kind == _FAILED else "its result"
            cannot = RuntimeError(f"{what}; then, sending it back: {err}")
            where = value[1] if kind == _FAILED else traceback.format_exc()
            sender.send((_FAILED, position, (cannot, where)))
    sender.close()
