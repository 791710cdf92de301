"""`make help` colours the target names only for a person at a terminal who has not asked for
no colour: no-color.org asks every program to honour a non-empty NO_COLOR, and a pipe or a CI log
must get no escape codes (the same rule as the CLI's `wants_color`)."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess

import pytest

from tests.conftest import REPO

ESC = "\x1b["
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


def make_help(*, terminal: bool, no_color: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "MAKEFLAGS", "MAKELEVEL")}
    if no_color is not None:
        env["NO_COLOR"] = no_color
    command = ["make", "-s", "--no-print-directory", "-C", str(REPO), "help"]
    if not terminal:
        return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    leader, follower = pty.openpty()
    with subprocess.Popen(command, env=env, stdout=follower, stderr=subprocess.DEVNULL) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode()


def test_a_terminal_gets_bold_target_names() -> None:
    out = make_help(terminal=True, no_color=None)
    assert f"{ESC}1mhelp" in out


@pytest.mark.parametrize("value", ["1", "0", "yes"])  # any non-empty value, even "0"
def test_no_color_turns_colour_off_on_a_terminal(value: str) -> None:
    out = make_help(terminal=True, no_color=value)
    assert ESC not in out
    assert "  help " in out and "render-check" in out


def test_an_empty_no_color_is_not_a_request() -> None:
    assert ESC in make_help(terminal=True, no_color="")


def test_a_pipe_gets_plain_text() -> None:
    out = make_help(terminal=False, no_color=None)
    assert ESC not in out
    assert out.splitlines()[0].split() == [
        "help",
        "Show",
        "the",
        "targets",
        "and",
        "what",
        "they",
        "do",
    ]
