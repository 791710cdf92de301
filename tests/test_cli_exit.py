"""How the `gpuplane` program ends (`cli.leave`): with the code `SystemExit` would give, its
output flushed and the exit handlers run, without the interpreter's teardown; as `SystemExit`
itself under a profiler or a tracer, which write what they found at the interpreter's exit."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

_LEAVE = """
import atexit, sys
from renderer.cli import leave
atexit.register(lambda: print("handler ran", file=sys.stderr))
print("buffered", end="")  # no newline: left in the buffer until flushed
leave({code})
"""


def _ended(code: str, *, profiled: bool = False) -> subprocess.CompletedProcess[str]:
    program = _LEAVE.format(code=code)
    if profiled:
        program = f"import cProfile\ncProfile.run({program!r}, sort='calls')"
    return subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("code", "status", "said"),
    [("None", 0, ""), ("0", 0, ""), ("3", 3, ""), ("'no such file'", 1, "no such file\n")],
)
def test_the_program_ends_as_system_exit_would(code: str, status: int, said: str) -> None:
    ended = _ended(code)
    assert ended.returncode == status
    assert ended.stdout == "buffered"
    assert ended.stderr == f"{said}handler ran\n"


def test_under_a_profiler_it_exits_through_system_exit() -> None:
    # cProfile.run takes the SystemExit and prints its table: os._exit would have left nothing
    ended = _ended("3", profiled=True)
    assert ended.stdout.startswith("buffered")
    assert "function calls" in ended.stdout
    assert "handler ran" in ended.stderr
