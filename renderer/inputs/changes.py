"""Which input files, and which of their lines, the change being checked adds or edits.

A finding several files share (a pool over-committed by many teams, a namespace two teams
declare) should land on the entry the change touched, so a reviewer sees it on the pull
request's own lines: rewording one file's description must not make its quotas "the change".
This module only answers "which lines changed"; the policy reads the answer as data
(`Platform.changed`). It never raises and never prints: when git, the repository or the base's
history is not there, the answer is None ("don't know"), and the findings fall back to where
they sit without change information.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from renderer.inputs.schema import KIND_FOLDERS, REPOSITORY_FILE
from renderer.inputs.source import MAX_FILE_BYTES, load_bytes
from renderer.model.evidence import EVIDENCE_FOLDER, BaseSizes
from renderer.model.platform import Changes

GIT_TIMEOUT_S = 10
INPUTS = (*KIND_FOLDERS, EVIDENCE_FOLDER, REPOSITORY_FILE)
"""The pathspecs of the input files, relative to the repository folder."""

POOLS = next(folder for folder, kind in KIND_FOLDERS.items() if kind == "Pool")

_HUNK = re.compile(rb"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {ord(k): v for k, v in zip('abtnvfr"\\', b'\a\b\t\n\v\f\r"\\', strict=True)}


def changed_lines(root: Path, base: str | None = None) -> Changes | None:
    """Each input file under `root` that differs (a POSIX path relative to `root`), with the
    1-based lines of its working-tree version that the change adds or edits.

    With `base`: the change from `git merge-base BASE HEAD` to the working tree, plus untracked
    files (what a pull request from HEAD into BASE changes). Without it, the pull request's base
    branch when `$GITHUB_BASE_REF` names one (`origin/<it>`, else `<it>`); otherwise the
    uncommitted changes (staged, unstaged, untracked). An untracked file, or any file before
    the first commit, maps to None: every line of it is new (an added file git tracks lists
    all its lines). A pure deletion (a hunk `+c,0`) counts line c, the line before the removed
    ones (line 1 when they were at the top), because a YAML key is usually removed from the
    entry the line above belongs to. Deleted files are not listed, nor is one whose mode alone
    changed (it has no line to report on).

    None when `root` is not in a git work tree, git is missing, a base cannot be resolved, the
    base shares no history with HEAD in this clone (a shallow checkout: comparing with the
    base's tip would count the base's own later edits as the change), or git fails or hangs.
    """
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return _changed(git, root, base)
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError, ValueError):
        return None


def changed_files(root: Path, base: str | None = None) -> frozenset[str] | None:
    """The input files `changed_lines` lists, without their lines; None when it is None."""
    found = changed_lines(root, base)
    return None if found is None else frozenset(found)


def base_problem(root: Path, base: str) -> str | None:
    """Why `base` cannot be compared with (git missing, not a git work tree, no such commit),
    for a command that was asked to; None when it names a commit."""
    git = shutil.which("git")
    if git is None:
        return f"--base {base}: git is not installed"
    try:
        inside = _run(git, root, "rev-parse", "--is-inside-work-tree")
        if inside is None or inside.strip() != b"true":
            return f"--base {base}: {root} is not in a git work tree"
        if not safe_ref(base) or _commit(git, root, base) is None:
            return f"--base {base}: no such commit, branch or tag"
    except (OSError, subprocess.SubprocessError):
        return f"--base {base}: git failed"
    return None


def _changed(git: str, root: Path, base: str | None) -> Changes | None:
    inside = _run(git, root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != b"true":
        return None
    since, unknown = _since(git, root, base)
    if unknown is not None:
        return None
    changes: dict[str, frozenset[int] | None] = {}
    if since is None:  # nothing committed yet: everything git knows of is new
        tracked = _run(git, root, "ls-files", "-z", "--cached", "--", *INPUTS)
        if tracked is None:
            return None
        changes.update(dict.fromkeys(_names(tracked)))
    else:
        patch = _run(
            git,
            root,
            "diff",
            "-U0",
            "--inter-hunk-context=0",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--no-prefix",
            "--relative",
            "--diff-filter=d",
            since,
            "--",
            *INPUTS,
        )
        if patch is None:
            return None
        changes.update(_hunks(patch))
    untracked = _run(git, root, "ls-files", "-z", "--others", "--exclude-standard", "--", *INPUTS)
    if untracked is None:
        return None
    changes.update(dict.fromkeys(_names(untracked)))
    return changes


def _since(git: str, root: Path, base: str | None) -> tuple[str | None, str | None]:
    """The commit the change is compared with (None before the first commit), or why there is
    none: `base`, else `$GITHUB_BASE_REF`, merged with HEAD; else HEAD (uncommitted changes)."""
    candidates: tuple[str, ...]
    if base is None:
        pr_base = os.environ.get("GITHUB_BASE_REF", "").strip()
        candidates = (f"origin/{pr_base}", pr_base) if pr_base else ()
    else:
        candidates = (base,)
    if not candidates:
        return _commit(git, root, "HEAD"), None
    commit = next((c for c in (_resolve(git, root, r) for r in candidates) if c), None)
    if commit is None:  # a base was asked for and none resolves: the change is unknown
        return None, f"the base {' or '.join(candidates)} is not a commit in this clone"
    since = _merge_base(git, root, commit)
    if since is None:  # no common history here (a shallow clone): unknown, not "all"
        return None, f"the base {commit[:12]} shares no history with HEAD in this clone"
    return since, None


TODAY_VARIABLE = "GPUPLANE_TODAY"
"""Set to YYYY-MM-DD to judge evidence freshness and growth exceptions as on that day (to
reproduce a CI run); unset, the gate judges on today's date in UTC."""


def gate_today() -> datetime.date | str:
    """The day the capacity gate judges on, or why `$GPUPLANE_TODAY` is not one."""
    asked = os.environ.get(TODAY_VARIABLE, "").strip()
    if not asked:
        return datetime.datetime.now(datetime.UTC).date()
    try:
        return datetime.date.fromisoformat(asked)
    except ValueError:
        return f"{TODAY_VARIABLE}={asked!r} is not a YYYY-MM-DD day"


def base_sizes(root: Path, base: str | None = None) -> BaseSizes | None:
    """`_base_sizes`, judged on `gate_today`."""
    found = _base_sizes(root, base)
    return None if found is None else replace(found, today=gate_today())


def _base_sizes(root: Path, base: str | None) -> BaseSizes | None:
    """Each pool's size (`nodes`, or `nodes.max`) in the pool files at the commit
    `changed_lines` compares with (the same base), for the capacity gate. A pool the base has no
    file of is new in the change. None when `root` is not in a git work tree (there is no
    change to judge); a `BaseSizes` whose `unknown` says why when git cannot tell the base (not
    installed, no such base in this clone, a shallow clone, git failing or hanging)."""
    git = shutil.which("git")
    if git is None:
        return BaseSizes(unknown="git is not installed")
    try:
        inside = _run(git, root, "rev-parse", "--is-inside-work-tree")
        if inside is None or inside.strip() != b"true":
            return None
        since, unknown = _since(git, root, base)
        if unknown is not None:
            return BaseSizes(unknown=unknown)
        if since is None:  # nothing committed yet: every pool is new
            return BaseSizes()
        return _sizes_at(git, root, since)
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError, ValueError):
        return BaseSizes(unknown="git failed")


def _sizes_at(git: str, root: Path, commit: str) -> BaseSizes:
    """The size of each pool whose file `commit` holds under pools/ (relative to `root`)."""
    listing = _run(git, root, "ls-tree", "-z", "--name-only", f"{commit}:./{POOLS}")
    names = [n for n in _names(listing or b"") if n.endswith(".yaml")]
    # a name with a newline cannot be asked of `cat-file --batch` (nor be a pool's)
    unreadable = {n.removesuffix(".yaml") for n in names if "\n" in n}
    names = [n for n in names if "\n" not in n]
    blobs = _blobs(git, root, [f"{commit}:./{POOLS}/{name}" for name in names])
    sizes: dict[str, int] = {}
    for name, raw in zip(names, blobs, strict=True):
        stem = name.removesuffix(".yaml")
        size = _size_of(raw, f"{POOLS}/{name}")
        if size is None:
            unreadable.add(stem)
        else:
            sizes[stem] = size
    return BaseSizes(MappingProxyType(sizes), unreadable=frozenset(unreadable))


def _blobs(git: str, root: Path, objects: Sequence[str]) -> list[bytes | None]:
    """The contents of each of `objects` (`<commit>:<path>`), None for one git does not have:
    one `git cat-file --batch` for all of them, not a process each."""
    if not objects:
        return []
    out = _run(git, root, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in objects))
    if out is None:
        return [None] * len(objects)
    found: list[bytes | None] = []
    at = 0
    for _ in objects:
        end = out.index(b"\n", at)
        header = out[at:end].split(b" ")
        at = end + 1
        if len(header) != 3:  # `<object> missing` (or ambiguous): no contents follow
            found.append(None)
            continue
        size = int(header[2])
        # a folder named like a pool file is a tree: its contents are skipped, never read
        found.append(out[at : at + size] if header[1] == b"blob" else None)
        at += size + 1  # the newline after the contents
    return found


def _size_of(raw: bytes | None, display: str) -> int | None:
    """A pool file's `spec.nodes` (or `spec.nodes.max`), None when it has no readable one."""
    if raw is None or len(raw) > MAX_FILE_BYTES:
        return None
    loaded = load_bytes(raw, display)
    data = loaded.document.data if loaded.document is not None else None
    spec = data.get("spec") if isinstance(data, dict) else None
    nodes = spec.get("nodes") if isinstance(spec, dict) else None
    if isinstance(nodes, dict):
        nodes = nodes.get("max")
    return nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None


def _hunks(patch: bytes) -> dict[str, frozenset[int] | None]:
    """`git diff -U0 --no-prefix` output read as file -> the new side's changed lines."""
    found: dict[str, set[int]] = {}
    lines: set[int] | None = None
    for row in patch.split(b"\n"):
        if row.startswith(b"diff --git "):
            lines = None  # until this file's `+++` names it
        elif row.startswith(b"+++ ") and lines is None:
            name = row[4:].removesuffix(b"\t")  # git adds a tab after a name with a space
            lines = found.setdefault(os.fsdecode(_unquote(name)), set())
        elif row.startswith(b"@@ ") and lines is not None:
            hunk = _HUNK.match(row)
            if hunk is None:
                raise ValueError(f"unreadable hunk header {row!r}")
            start, count = int(hunk[1]), int(hunk[2] or b"1")
            lines.update(range(start, start + count) if count else (max(start, 1),))
    return {name: frozenset(changed) for name, changed in found.items()}


def _unquote(path: bytes) -> bytes:
    """A path as git writes it in a patch: C-quoted ("a\\tb", octal bytes) when it has to be."""
    if not path.startswith(b'"'):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == ord("\\") and i + 1 < len(body):
            escape = body[i + 1]
            if escape in b"01234567":
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(escape, escape))
            i += 2
            continue
        out.append(body[i])
        i += 1
    return bytes(out)


def _names(listing: bytes) -> list[str]:
    return [os.fsdecode(name) for name in listing.split(b"\0") if name]


def safe_ref(ref: str) -> bool:
    """A ref git cannot read as an option or split into several arguments."""
    return bool(ref) and not ref.startswith("-") and not any(c in ref for c in "\0\n\r")


def _resolve(git: str, root: Path, ref: str) -> str | None:
    """The commit REF names, None when it names none (or could be read as an option)."""
    return _commit(git, root, ref) if safe_ref(ref) else None


def _merge_base(git: str, root: Path, commit: str) -> str | None:
    """Where HEAD left `commit`; None when they share no history this clone holds."""
    found = _run(git, root, "merge-base", commit, "HEAD")
    return (found or b"").decode().strip() or None


def _commit(git: str, root: Path, ref: str) -> str | None:
    found = _run(git, root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return (found or b"").decode().strip() or None


def _run(git: str, root: Path, *args: str, stdin: str | None = None) -> bytes | None:
    """git's standard output, or None when it fails; no shell, no prompt, no optional locks.
    `stdin`: what git reads (UTF-8), else nothing."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    done = subprocess.run(
        [git, "-C", str(root), *args],
        input=None if stdin is None else stdin.encode("utf-8"),
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        env=env,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None
