"""Which input files the change being checked adds or edits, read from git.

A finding that several files share (a pool over-committed by many teams, a namespace two teams
declare) should land on the file the change touched, so a reviewer sees it on the pull request's
own lines. This module only answers "which files changed"; the policy reads the answer as data.
It never raises and never prints: when git or the repository is not there, the answer is None
("don't know"), and the findings fall back to where they sit without change information.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from renderer.inputs.schema import KIND_FOLDERS, REPOSITORY_FILE

GIT_TIMEOUT_S = 10
INPUTS = (*KIND_FOLDERS, REPOSITORY_FILE)
"""The pathspecs of the input files, relative to the repository folder."""


def changed_files(root: Path, base: str | None = None) -> frozenset[str] | None:
    """The input files under `root` that differ, as POSIX paths relative to `root`.

    With `base`: every file changed between `git merge-base BASE HEAD` and the working tree, plus
    untracked ones (what a pull request from HEAD into BASE changes). Without it, the pull
    request's base branch when `$GITHUB_BASE_REF` names one (`origin/<it>`, else `<it>`);
    otherwise the uncommitted changes (staged, unstaged, untracked). Deleted files are not listed.
    None when `root` is not in a git work tree, git is missing, a base cannot be resolved, or git
    fails or hangs.
    """
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return _changed(git, root, base)
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None


def _changed(git: str, root: Path, base: str | None) -> frozenset[str] | None:
    inside = _run(git, root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != b"true":
        return None
    candidates: tuple[str, ...]
    if base is None:
        pr_base = os.environ.get("GITHUB_BASE_REF", "").strip()
        candidates = (f"origin/{pr_base}", pr_base) if pr_base else ()
    else:
        candidates = (base,)
    if candidates:
        forks = (_fork_point(git, root, ref) for ref in candidates)
        since = next((fork for fork in forks if fork is not None), None)
        if since is None:  # a base was asked for and none resolves: the change is unknown
            return None
    else:
        since = _commit(git, root, "HEAD")  # None before the first commit
    if since is None:  # nothing committed yet: everything git knows of is new
        tracked = _run(git, root, "ls-files", "-z", "--cached", "--", *INPUTS)
    else:
        tracked = _run(
            git,
            root,
            "diff",
            "--name-only",
            "-z",
            "--relative",
            "--no-renames",
            "--no-ext-diff",
            "--diff-filter=d",
            since,
            "--",
            *INPUTS,
        )
    untracked = _run(git, root, "ls-files", "-z", "--others", "--exclude-standard", "--", *INPUTS)
    if tracked is None or untracked is None:
        return None
    names = (tracked + b"\0" + untracked).split(b"\0")
    return frozenset(os.fsdecode(name) for name in names if name)


def _fork_point(git: str, root: Path, ref: str) -> str | None:
    """Where HEAD left REF (their merge base), or REF itself when they share no history that
    this clone holds (a shallow checkout); None when REF names no commit."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n\r"):
        return None
    commit = _commit(git, root, ref)
    if commit is None:
        return None
    merge_base = _run(git, root, "merge-base", commit, "HEAD")
    found = merge_base.decode().strip() if merge_base else ""
    return found or commit


def _commit(git: str, root: Path, ref: str) -> str | None:
    found = _run(git, root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return (found or b"").decode().strip() or None


def _run(git: str, root: Path, *args: str) -> bytes | None:
    """git's standard output, or None when it fails; no shell, no prompt, no optional locks."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    done = subprocess.run(
        [git, "-C", str(root), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None
