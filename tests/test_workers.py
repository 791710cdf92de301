"""Forked workers (`commands/workers.py`): every item done once, what a job raised raised in the
parent, and a worker that dies reported with the item it was on, never waited for. Before,
`render --jobs N` used `multiprocessing.Pool`, which loses a killed worker's task and leaves the
parent waiting for it for ever: a CI job that hangs until its timeout.

A test here that hung would hang the suite, so each wait is bounded by an alarm."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from bench.generate import generate_platform
from renderer.commands.workers import WorkerStopped, WorkerTraceback, can_fork, forked_map

pytestmark = pytest.mark.skipif(not can_fork(), reason="workers fork")


@pytest.fixture(autouse=True)
def ctrl_c_reaches_python() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here, as in a terminal, even when the suite runs as a
    shell's background job (`make test &`, nohup), which starts Python with SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def never_hangs() -> Iterator[None]:
    """A wait that does not end fails the test after a minute instead."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("forked_map waited for a worker that will never answer")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert not multiprocessing.active_children(), "a worker was left running"


def _where(item: int) -> tuple[int, int]:
    return item, os.getpid()


def test_every_item_is_done_once_in_worker_processes() -> None:
    items = list(range(25))
    with forked_map(_where, items, 3) as results:
        done = list(results)
    assert sorted(item for item, _ in done) == items
    workers = {pid for _, pid in done}
    assert os.getpid() not in workers
    assert 1 <= len(workers) <= 3


def test_more_workers_than_items_start_one_per_item() -> None:
    with forked_map(_where, [7], 4) as results:
        assert [item for item, _ in results] == [7]
    with forked_map(_where, [], 4) as results:
        assert list(results) == []


def _raises_on_three(item: int) -> int:
    if item == 3:
        raise ValueError(f"item {item} is broken")
    return item


def test_what_a_job_raised_is_raised_here_with_where_it_was_raised() -> None:
    with (
        pytest.raises(ValueError, match="item 3 is broken") as raised,
        forked_map(_raises_on_three, list(range(6)), 2) as results,
    ):
        list(results)
    where = raised.value.__cause__
    assert isinstance(where, WorkerTraceback)
    assert "in _raises_on_three" in str(where) and 'raise ValueError(f"item' in str(where)


class _Unpicklable(Exception):
    def __init__(self) -> None:
        super().__init__("cannot travel")
        self.handle = lambda: None


def _raises_unpicklable(item: int) -> int:
    raise _Unpicklable()


def test_an_exception_that_cannot_be_pickled_still_arrives_as_its_text() -> None:
    with (
        pytest.raises(RuntimeError, match="cannot travel"),
        forked_map(_raises_unpicklable, [1], 1) as results,
    ):
        list(results)


def _unpicklable_result(item: int) -> Any:
    return lambda: item


def test_a_result_that_cannot_be_pickled_is_an_error_not_a_lost_item() -> None:
    with (
        pytest.raises(RuntimeError, match=r"its result: .*pickle"),
        forked_map(_unpicklable_result, [1, 2], 2) as results,
    ):
        list(results)


def _killed_on(victim: str) -> Any:
    def job(item: str) -> str:
        if item == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return item

    return job


def test_a_killed_worker_is_reported_with_the_item_it_was_on() -> None:
    items = ["cluster a", "cluster b", "cluster c", "cluster d"]
    with (
        pytest.raises(WorkerStopped) as stopped,
        forked_map(
            _killed_on("cluster c"),
            items,
            2,
            describe=lambda i: f"<{i}>",
            advice="--jobs 1 needs less",  # what render says (render.LESS_MEMORY)
        ) as results,
    ):
        list(results)
    message = str(stopped.value)
    assert "for <cluster c> stopped before it finished" in message
    assert "killed by signal 9" in message and "--jobs 1" in message


def _exits_quietly(item: int) -> int:
    if item == 2:
        os._exit(0)  # as a library calling exit in the worker would
    return item


def test_a_worker_that_exits_without_its_result_is_reported_with_its_exit_code() -> None:
    with (
        pytest.raises(WorkerStopped, match=r"for 2 stopped before it finished \(exit code 0\)"),
        forked_map(_exits_quietly, [0, 1, 2, 3], 2) as results,
    ):
        list(results)


def _sleeps(item: int) -> int:
    time.sleep(120)
    return item


def test_leaving_the_block_early_stops_the_workers() -> None:
    started = time.monotonic()
    with forked_map(_sleeps, [1, 2, 3], 2) as results:
        del results  # left without a result, as render is when the policy finds an error
    assert time.monotonic() - started < 30
    # the autouse fixture checks that no worker is left


_KILL_ONE = """
import os, signal, sys
from renderer import cli
from renderer.commands import render

victim = sys.argv[1]
original = getattr(render, victim.split(":")[0])

def killed(*args, **kwargs):
    if victim == "_load_share" or args[-1] == victim.split(":")[1]:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)

setattr(render, victim.split(":")[0], killed)
sys.argv = ["gpuplane", *sys.argv[2:]]
cli.run()
"""


def _gpuplane_with_a_worker_killed(victim: str, root: Path) -> subprocess.CompletedProcess[str]:
    command = ["-C", str(root), "render", "--no-index", "--check", "-j", "2"]
    return subprocess.run(
        [sys.executable, "-c", _KILL_ONE, victim, *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_render_reports_a_cluster_worker_killed_for_memory(platform: Path) -> None:
    found = _gpuplane_with_a_worker_killed("_render_one:staging-west", platform)
    assert found.returncode == 1, found.stderr
    assert "Traceback" not in found.stderr
    assert found.stderr.strip().splitlines()[-1] == (
        "Error: the worker process for cluster staging-west stopped before it finished (killed "
        "by signal 9; out of memory? --jobs 1 needs less)"
    )


@pytest.mark.slow
def test_render_reports_a_loading_worker_killed_for_memory(tmp_path: Path) -> None:
    # enough input files to load them in workers (render.PARALLEL_LOAD_FROM)
    generate_platform(tmp_path, clusters=2, pools_per_cluster=1, teams=240)
    found = _gpuplane_with_a_worker_killed("_load_share", tmp_path)
    assert found.returncode == 1, found.stderr
    assert "Traceback" not in found.stderr
    last = found.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: the worker process for loading ") and "input files" in last
    assert "killed by signal 9" in last


_SLOW = """
import os, sys, time
from renderer import cli
from renderer.commands import render

marks = sys.argv[1]
original = render._render_one

def slow(*args):
    open(os.path.join(marks, f"started-{os.getpid()}"), "w").close()
    time.sleep(60)
    return original(*args)

render._render_one = slow
sys.argv = ["gpuplane", *sys.argv[2:]]
cli.run()
"""


@pytest.mark.slow
def test_ctrl_c_stops_render_and_its_workers_with_one_line(platform: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    command = ["-C", str(platform), "render", "--no-index", "--check", "-j", "2"]
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW, str(marks), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        while len(list(marks.iterdir())) < 2:  # both workers are in a cluster
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the whole group
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 1
    assert err.strip() == "Aborted!", err  # no worker's traceback beside it
    for _ in range(100):  # and no worker left behind
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("a worker outlived the interrupted render")


def _interrupt_handler(item: int) -> Any:
    return signal.getsignal(signal.SIGINT)


def test_workers_leave_ctrl_c_to_the_parent() -> None:
    from renderer.commands.diff.background import in_background

    with forked_map(_interrupt_handler, [1, 2], 2) as results:
        assert list(results) == [signal.SIG_IGN, signal.SIG_IGN]
    with in_background(lambda: _interrupt_handler(0), fork=True) as result:
        assert result() == signal.SIG_IGN  # diff's base worker too
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN  # and not the parent


def test_many_more_items_than_a_pipe_holds_all_come_back() -> None:
    # the first version queued every item in one pipe before any worker read: 3,575 filled it
    items = list(range(10_000))
    with forked_map(_where, items, 2) as results:
        assert sorted(item for item, _ in results) == items


def _ctrl_c_right_after_each_fork(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Ctrl-C as a terminal sends it, to the parent and to the worker just forked, at the worst
    moment: after the fork, before the parent has recorded the worker. The workers' pids."""
    import multiprocessing.popen_fork as popen_fork

    launch = popen_fork.Popen._launch
    forked: list[int] = []

    def launched(self: Any, process_obj: Any) -> None:
        launch(self, process_obj)
        forked.append(self.pid)
        os.kill(self.pid, signal.SIGINT)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(popen_fork.Popen, "_launch", launched)
    return forked


def _assert_reaped(pids: list[int]) -> None:
    """Each worker was stopped and waited for: none is left running, nor left to init."""
    assert pids
    left = []
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)  # a child nobody waited for: still ours to wait for
        except ChildProcessError:
            continue
        left.append(pid)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert not left, f"workers {left} were left behind"


@pytest.mark.slow
def test_ctrl_c_while_workers_start_stops_every_one_of_them(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    forked = _ctrl_c_right_after_each_fork(monkeypatch)
    with pytest.raises(KeyboardInterrupt), forked_map(_sleeps, [1, 2, 3], 3) as results:
        list(results)
    _assert_reaped(forked)
    assert "Traceback" not in capfd.readouterr().err  # no worker's traceback


def test_ctrl_c_while_diffs_base_worker_starts_stops_it(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from renderer.commands.diff.background import in_background

    forked = _ctrl_c_right_after_each_fork(monkeypatch)
    with pytest.raises(KeyboardInterrupt), in_background(lambda: _sleeps(1), fork=True):
        pass
    _assert_reaped(forked)
    assert "Traceback" not in capfd.readouterr().err


class _TwoArguments(Exception):
    def __init__(self, first: int, second: int) -> None:
        super().__init__(f"{first} and {second}")


def _raises_what_cannot_be_rebuilt(item: int) -> int:
    raise _TwoArguments(item, item + 1)


def test_an_exception_that_cannot_be_rebuilt_here_arrives_as_its_text() -> None:
    with (
        pytest.raises(RuntimeError, match=r"^_TwoArguments: 4 and 5$") as raised,
        forked_map(_raises_what_cannot_be_rebuilt, [4], 1) as results,
    ):
        list(results)
    assert "in _raises_what_cannot_be_rebuilt" in str(raised.value.__cause__)


class _BreaksWhenLoaded:
    def __reduce__(self) -> Any:
        return (_refuse, ())


def _refuse() -> None:
    raise ValueError("cannot be rebuilt")


def _result_that_breaks_when_loaded(item: int) -> Any:
    return _BreaksWhenLoaded()


def test_a_result_that_cannot_be_read_back_names_its_item() -> None:
    with (
        pytest.raises(RuntimeError, match=r"the result for <seven> cannot be read back"),
        forked_map(_result_that_breaks_when_loaded, [7], 1, describe=lambda i: "<seven>") as res,
    ):
        list(res)


def _exits(item: int) -> int:
    sys.exit(f"item {item} says stop")


def test_a_job_that_exits_raises_the_same_exit_here() -> None:
    with pytest.raises(SystemExit, match="item 5 says stop"), forked_map(_exits, [5], 1) as r:
        list(r)
