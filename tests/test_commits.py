"""Commit subjects of at most 72 characters (CONTRIBUTING.md), from the commit that adopted the
rule on: a reader of `git log --oneline` sees the whole subject, and the details go in the body.

Skipped where the checkout has no history to read (an archive, or a clone too shallow to hold
the first commit under the rule)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import REPO

ADOPTED = "9faa972"
"""The first commit under the rule (issue 29): 'Rename modules so each name has one meaning'."""

MAX_SUBJECT = 72


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO, check=False)


def too_long(subjects: list[str], limit: int = MAX_SUBJECT) -> list[str]:
    return [subject for subject in subjects if len(subject) > limit]


def test_the_rule_catches_a_long_subject() -> None:
    long = "Render the observability layer's dashboards, alerts and recording rules once"
    assert too_long(["Split render_tree into its steps", long]) == [long]


def test_every_commit_since_the_rule_has_a_short_subject() -> None:
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("no git history here")
    if _git("cat-file", "-e", f"{ADOPTED}^{{commit}}").returncode != 0:
        pytest.skip(f"{ADOPTED} is not in this clone's history (shallow)")
    log = _git("log", "--format=%s", f"{ADOPTED}^..HEAD")
    assert log.returncode == 0, log.stderr
    subjects = log.stdout.splitlines()
    assert subjects, "the adopting commit itself is in the range"
    assert too_long(subjects) == []
