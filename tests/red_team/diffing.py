"""Running `gpuplane diff` on an attempt: its copy committed as the base, the attack in the
working tree, as a pull request would be seen."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from click.testing import CliRunner

from renderer.cli import main
from tests.red_team.harness import Attempt

_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
}


def commit_base(attempt: Attempt) -> None:
    """Commit the attempt's untouched copy: the base the attack's pull request is diffed to."""
    env = {**os.environ, **_ENV, "HOME": str(attempt.root)}
    for args in (
        ("-c", "init.defaultBranch=main", "init", "-q"),
        ("add", "-A"),
        ("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "base"),
    ):
        subprocess.run(["git", "-C", str(attempt.root), *args], check=True, env=env)


def commit_again(attempt: Attempt) -> None:
    """Make the attempt's current files the base (e.g. a namespace the platform hardened
    earlier), so that the next edits are the attack."""
    env = {**os.environ, **_ENV, "HOME": str(attempt.root)}
    for args in (
        ("add", "-A"),
        ("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "again"),
    ):
        subprocess.run(["git", "-C", str(attempt.root), *args], check=True, env=env)


def cli(attempt: Attempt, *args: str) -> tuple[int, str]:
    result = CliRunner(env={"GPUPLANE_CRDS": "", **_ENV}).invoke(
        main, ["-C", str(attempt.root), *args]
    )
    return result.exit_code, result.output


def diff_findings(attempt: Attempt) -> list[dict[str, Any]]:
    code, output = cli(attempt, "diff", "--base", "HEAD", "--format", "json")
    assert code == 0, output
    found: list[dict[str, Any]] = json.loads(output)["changes"]
    return found
