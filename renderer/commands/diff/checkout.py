"""Reading the base revision with git: `gpuplane diff --base REF` renders what the inputs were at REF.

Kept apart from the comparison because it is the only part that runs a program (git) and touches
the repository; it reads blobs and writes them into a folder, without a checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from renderer.inputs.changes import safe_ref
from renderer.inputs.schema import KIND_FOLDERS, REPOSITORY_FILE
from renderer.inputs.source import load_file
from renderer.output.schema_store import STORE_DIR


class BaseRefError(Exception):
    """The base revision cannot be read: not a git repository, an unknown or refused ref."""


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    if git is None:
        raise BaseRefError("git is not installed: `gpuplane diff` reads the base revision with it")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    return subprocess.run(
        [git, "-C", str(repo), *args], input=stdin, capture_output=True, env=env, check=False
    )


def _resolve(repo_root: Path, ref: str) -> tuple[Path, str, str]:
    """(the repository's top folder, the commit REF names, the path of repo_root inside it)."""
    if not safe_ref(ref):
        raise BaseRefError(f"refusing base ref {ref!r}: a ref must not be empty or start with '-'")
    top = _git(repo_root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaseRefError(
            f"{repo_root} is not in a git repository: --base needs the repository's history"
        )
    toplevel = Path(top.stdout.decode().strip())
    prefix = _git(repo_root, "rev-parse", "--show-prefix").stdout.decode().strip()
    found = _git(toplevel, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise BaseRefError(
            f"unknown revision '{ref}': no branch, tag or commit of this repository has that name "
            "(in CI, fetch the base branch first, e.g. `git fetch origin main` and "
            "`--base origin/main`)"
        )
    return toplevel, found.stdout.decode().strip(), prefix.rstrip("/")


UPSTREAM_CANDIDATES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")
"""Where the branch a change is merged into is looked for when `diff` is given no base: the
remote's default branch (`origin/HEAD`, which `git clone` sets), then the usual names."""


def default_base(repo_root: Path) -> tuple[str, str]:
    """What `diff` compares with when no --base is given, as CI and a developer mean it: the
    merge base of HEAD and the upstream default branch (`git merge-base HEAD origin/main`, what
    a pull request's diff shows), as (its label, the commit). BaseRefError when there is none:
    not a git repository, no commit, or no upstream branch."""
    if _git(repo_root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").returncode != 0:
        raise BaseRefError(
            f"{repo_root} has no git commit to compare with: pass --base REF "
            "(a branch, tag or commit)"
        )
    for name in UPSTREAM_CANDIDATES:
        found = _git(repo_root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
        if found.returncode != 0:
            continue
        merge_base = _git(repo_root, "merge-base", "HEAD", name)
        if merge_base.returncode == 0:
            commit = merge_base.stdout.decode().strip()
            return f"merge base of HEAD and {name} ({commit[:12]})", commit
    raise BaseRefError(
        "no base to compare with: none of "
        + ", ".join(UPSTREAM_CANDIDATES)
        + " exists (or shares history with HEAD); pass --base REF, e.g. --base origin/main "
        "after `git fetch origin main`"
    )


def checkout_base(repo_root: Path, ref: str, into: Path) -> str:
    """Write the input files of `repo_root` as they are at REF into the folder `into`, and
    return the commit REF resolved to: the kind folders, gpuplane.yaml, and the CRD schemas the
    base checks its objects against (its schema store, and the `schemas:` folders its
    gpuplane.yaml lists), so the base is rendered and checked as it was.

    Blobs are read with `git ls-tree` and `git cat-file --batch` (no shell, no checkout, no
    change to the repository); a symbolic link is recreated as a link, which the loader reports
    as it does in a working tree. Raises BaseRefError for a bad ref or a folder outside git.
    """
    checkout = BaseCheckout(repo_root, ref, into)
    checkout.wait()
    return checkout.commit


class BaseCheckout:
    """`checkout_base` in a thread: REF is resolved here (BaseRefError now for a bad ref), and
    the files are written while the caller goes on (creating 1,400 files took a third of a
    second on the benchmark's VM); `wait` before reading them."""

    def __init__(self, repo_root: Path, ref: str, into: Path) -> None:
        self._toplevel, self.commit, self._prefix = _resolve(repo_root, ref)
        self._ref, self._into = ref, into
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write, name="gpuplane-base", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        try:
            tree = f"{self.commit}:{self._prefix}" if self._prefix else self.commit
            wanted = (*KIND_FOLDERS, REPOSITORY_FILE, STORE_DIR.as_posix())
            args = (self._toplevel, tree, self._ref)
            if not _write_paths(*args, wanted, self._into, missing_ok=bool(self._prefix)):
                return
            listed = _listed_schemas(self._into)
            if listed:
                _write_paths(*args, listed, self._into, missing_ok=True)
        except BaseException as err:  # raised again in the caller's thread, by `wait`
            self._error = err

    def wait(self) -> None:
        """Once the files are written (the thread has ended); raises what writing raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error

    def join(self) -> None:
        """Once the thread has ended, whatever it raised (before the folder is removed)."""
        self._thread.join()


def _listed_schemas(into: Path) -> tuple[str, ...]:
    """The `schemas:` entries of the base's gpuplane.yaml that name a path inside it."""
    settings = into / REPOSITORY_FILE
    if not settings.is_file() or settings.is_symlink():
        return ()
    loaded = load_file(settings, REPOSITORY_FILE)
    data = loaded.document.data if loaded.document is not None else None
    spec = data.get("spec") if isinstance(data, Mapping) else None
    entries = spec.get("schemas") if isinstance(spec, Mapping) else None
    if not isinstance(entries, list):
        return ()
    return tuple(
        str(PurePosixPath(e))
        for e in entries
        if isinstance(e, str)
        and e
        and not PurePosixPath(e).is_absolute()
        and ".." not in PurePosixPath(e).parts
        and not e.startswith("-")
    )


def _write_paths(
    toplevel: Path, tree: str, ref: str, wanted: tuple[str, ...], into: Path, *, missing_ok: bool
) -> bool:
    """Write the blobs under `wanted` at `tree` into `into`; False when `tree` has none."""
    listed = _git(toplevel, "ls-tree", "-r", "-z", "--full-name", tree, "--", *wanted)
    if listed.returncode != 0:
        if missing_ok:  # the folder did not exist at REF: an empty base, everything is new
            return False
        raise BaseRefError(f"cannot list the files of '{ref}': {listed.stderr.decode().strip()}")
    entries: list[tuple[str, str, PurePosixPath]] = []
    for record in listed.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        path = PurePosixPath(raw_path.decode("utf-8", "surrogateescape"))
        if kind != "blob" or path.is_absolute() or ".." in path.parts:
            continue  # submodules, and nothing git would ever store
        entries.append((mode, sha, path))
    if not entries:
        return False
    batch = _git(
        toplevel, "cat-file", "--batch", stdin="".join(f"{s}\n" for _, s, _ in entries).encode()
    )
    if batch.returncode != 0:
        raise BaseRefError(f"cannot read the files of '{ref}': {batch.stderr.decode().strip()}")
    data, offset = batch.stdout, 0
    folders: set[Path] = set()
    for mode, _, path in entries:
        header_end = data.index(b"\n", offset)
        size = int(data[offset:header_end].split()[2])
        content = data[header_end + 1 : header_end + 1 + size]
        offset = header_end + 1 + size + 1
        target = into.joinpath(*path.parts)
        if target.parent not in folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.add(target.parent)
        try:  # an entry that exists was written by the first pass
            if mode == "120000":
                os.symlink(os.fsdecode(content), target)
            else:
                _write_new(target, content)
        except FileExistsError:
            continue
    return True


def _write_new(target: Path, content: bytes) -> None:
    """Write a file that must not exist yet (FileExistsError: it does, or a link is there)."""
    handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    with os.fdopen(handle, "wb") as out:
        out.write(content)
