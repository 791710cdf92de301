"""The objects currently committed in `rendered/`: what each rendered object would replace on the
cluster, for the CRDs' transition rules (`oldSelf`, immutable fields).

Argo CD applies the committed tree, so the object a render replaces is the one in `rendered/` at
git HEAD (on `render`), or at the base revision (`validate --base REF`, `diff --base REF`); in a
folder outside git, the file on disk. Files are read with one `git ls-tree` and one
`git cat-file --batch` (no checkout, nothing written) and parsed only when an object with
transition rules asks for its old self. See docs/cel.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from renderer.output.manifest import Manifest
from renderer.output.writer import (
    EMPTY_FINGERPRINT,
    Stat,
    TreeListing,
    file_stat,
    fingerprint_of,
    plain_manifest_file,
)

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

__all__ = ["CommittedTree", "committed_tree"]

RENDERED = "rendered"


class CommittedTree:
    """`rendered/` as committed: file bytes by path under it (`prod-east/queueing/...yaml`),
    read only when an object asks for its old self (most objects have no transition rule, and
    reading a 75,000-file tree up front cost a large `render --check` seconds)."""

    def __init__(
        self,
        files: Mapping[str, bytes],
        origin: str,
        *,
        unread: Mapping[str, str] | None = None,
        read: Callable[[str], bytes | None] | None = None,
        listing: Callable[[], Mapping[str, Stat | None]] | None = None,
        fingerprints: Callable[[], Mapping[str, bytes]] | None = None,
        folder: Path | None = None,
    ) -> None:
        self._contents = dict(files)
        self._unread_paths = dict(unread or {})
        """Path -> where to read it (a blob id, a file), for `read`."""
        self._read = read
        self._listing = listing
        self._fingerprints = fingerprints
        """Each top folder's digest: of its git tree id, or `folder_fingerprints` of
        `listing`'s stats, made with them."""
        self._disk: Mapping[str, Stat | None] | None = None
        self.folder = folder
        """The folder `disk` lists."""
        self._paths: list[str] | None = None
        self._listed = False
        self.origin = origin
        """Where the files come from, for messages: `HEAD`, a ref, or `disk`."""
        self._parsed: dict[str, tuple[list[Any], str | None]] = {}
        self._unread: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._by_name: dict[tuple[str, str], list[str]] | None = None
        self._by_folder: dict[str, list[str]] | None = None

    def _ready(self) -> None:
        """Outside git, take the listing of rendered/ (made in the background) when first
        needed."""
        if self._listed:
            return
        self._listed = True
        if self._listing is not None and self.folder is not None:
            self._disk = self._listing()
            self._unread_paths.update(
                (path, path)  # read below `folder`
                for path, stat in self._disk.items()
                if stat is not None and path.endswith(".yaml")
            )

    @property
    def disk(self) -> Mapping[str, Stat | None] | None:
        """Outside git: every file below rendered/ on disk with its stat, as listed once (the
        committed tree is then the tree on disk); None in git."""
        self._ready()
        return self._disk

    @property
    def paths(self) -> list[str]:
        """Every committed file, sorted."""
        self._ready()
        if self._paths is None:
            self._paths = sorted({*self._contents, *self._unread_paths})
        return self._paths

    @property
    def files(self) -> dict[str, bytes]:
        """Every file's bytes, all read now (for tests and small trees)."""
        return {path: self._bytes(path) for path in self.paths}

    def _bytes(self, path: str) -> bytes:
        self._ready()
        if path not in self._contents:
            where = self._unread_paths[path]  # kept: it says which version was read
            found = self._read(where) if self._read is not None else None
            if found is None:
                raise OSError(f"cannot read {RENDERED}/{path} ({self.origin})")
            self._contents[path] = found
        return self._contents[path]

    def fingerprint(self, folder: str) -> bytes:
        """A digest of what the tree holds below the top folder `folder` (`prod-east`): in git,
        the folder's tree id; on disk, with none of the folder's files read, the one the
        listing made with the stats; else each path with its blob id, its stat or its bytes
        (already read)."""
        self._ready()
        disk = self.origin == "disk"
        if not disk and self._fingerprints is not None:
            # in git, a folder's tree id: it changes when anything below it does
            found = self._fingerprints().get(folder)
            if found is not None:
                return found
        elif disk and self._fingerprints is not None and self._disk is not None:
            below = f"{folder}/"
            if not any(path.startswith(below) for path in self._contents):
                return self._fingerprints().get(folder, EMPTY_FINGERPRINT)
        if self._by_folder is None:
            grouped: dict[str, list[str]] = {}
            for path in {*self._contents, *self._unread_paths}:
                grouped.setdefault(path.partition("/")[0], []).append(path)
            for paths in grouped.values():
                paths.sort()
            self._by_folder = grouped
        entries: list[tuple[str, Any]] = []
        for path in self._by_folder.get(folder, ()):
            if "/" not in path:
                continue  # a file named like the folder, beside it
            if path in self._contents:
                entries.append((path, hashlib.sha256(self._contents[path]).digest()))
            elif not disk:
                entries.append((path, self._unread_paths[path]))
            elif self._disk is not None:
                entries.append((path, self._disk.get(path)))
            else:
                entries.append((path, file_stat(self._unread_paths[path])))
        return fingerprint_of(entries)

    def __contains__(self, path: str) -> bool:
        self._ready()
        return path in self._contents or path in self._unread_paths

    def __bool__(self) -> bool:
        self._ready()
        return bool(self._contents or self._unread_paths)

    def _documents(self, path: str) -> tuple[list[Any], str | None]:
        """The file's YAML documents, or why it cannot be read."""
        if path not in self._parsed:
            try:
                docs = list(yaml.load_all(self._bytes(path), Loader=_Loader))
                self._parsed[path] = (docs, None)
            except yaml.MarkedYAMLError as err:
                mark = err.problem_mark or err.context_mark
                line = f" (line {mark.line + 1})" if mark is not None else ""
                self._parsed[path] = ([], f"it is not YAML: {err.problem or err.context}{line}")
            except (yaml.YAMLError, ValueError, RecursionError) as err:
                self._parsed[path] = ([], f"it is not YAML: {type(err).__name__}")
            except OSError as err:
                self._parsed[path] = ([], str(err))
        return self._parsed[path]

    def _lookup(
        self, cluster: str, manifest: Manifest
    ) -> tuple[Mapping[str, Any] | None, list[tuple[str, str]], str | None]:
        """The committed object, the candidate files that could not be read, and the file
        it was found in."""
        exact = f"{cluster}/{manifest.path}"
        candidates = [exact] if exact in self else []
        candidates += [p for p in self._named(cluster, manifest.filename) if p != exact]
        unread: list[tuple[str, str]] = []
        for path in candidates:
            docs, why = self._documents(path)
            if why is not None:
                unread.append((path, why))
            for found in docs:
                if isinstance(found, Mapping) and same_object(found, manifest.body):
                    return found, [], path
        return None, unread, None

    def version_of(self, path: str) -> str | None:
        """What identifies this version of a committed file without reading it (its blob id in
        git, its stat on disk), None when it is not in the tree or cannot be stat'ed."""
        self._ready()
        if path in self._unread_paths:
            if self._disk is None:
                return f"{self.origin}:{self._unread_paths[path]}"
            stat = self._disk.get(path)
            return None if stat is None else f"disk:{stat}"
        if path in self._contents:
            return f"bytes:{hashlib.sha256(self._contents[path]).hexdigest()}"
        return None

    def _named(self, cluster: str, filename: str) -> list[str]:
        """The committed files of the cluster with this file name, in any folder, sorted. An
        index built once: scanning every file for every object made a large render's check
        grow with the square of its objects."""
        if "/" in cluster or "/" in filename:  # no such names; scan as the index cannot
            suffix = f"/{filename}"
            return sorted(
                p for p in self.paths if p.startswith(f"{cluster}/") and p.endswith(suffix)
            )
        if self._by_name is None:
            index: dict[tuple[str, str], list[str]] = {}
            for path in self.paths:
                head, slash, _ = path.partition("/")
                if slash:
                    index.setdefault((head, path.rpartition("/")[2]), []).append(path)
            for paths in index.values():
                paths.sort()
            self._by_name = index
        return self._by_name.get((cluster, filename), [])

    def find(self, cluster: str, manifest: Manifest) -> Mapping[str, Any] | None:
        """The committed object with the manifest's identity (group, kind, namespace, name) on
        the cluster: at the same path, else in another layer's folder of the same name (any
        YAML document of the file)."""
        return self._lookup(cluster, manifest)[0]

    def could_hold(self, cluster: str, manifest: Manifest) -> bool:
        """Whether the object is committed, or a file that could hold it cannot be read."""
        found, unread, _ = self._lookup(cluster, manifest)
        return found is not None or bool(unread)

    def old_self(self, cluster: str, manifest: Manifest) -> Mapping[str, Any] | None:
        """`find`, for the transition rules: a candidate file that cannot be read is kept, for
        `unreadable`, so that rules not evaluated against it are never passed silently."""
        return self.old_self_from(cluster, manifest)[0]

    def old_self_from(
        self, cluster: str, manifest: Manifest
    ) -> tuple[Mapping[str, Any] | None, str | None]:
        """`old_self`, and the `version_of` the file it was found in when that is the object's
        own file (`<cluster>/<its path>`); None when it was found elsewhere or not at all."""
        exact = f"{cluster}/{manifest.path}"
        if exact in self and self._holds_as_written(exact, manifest):
            return manifest.body, self.version_of(exact)
        found, unread, path = self._lookup(cluster, manifest)
        if found is None and unread:
            self._unread[(cluster, manifest.path)] = unread
        if path is None or path != f"{cluster}/{manifest.path}":
            return found, None
        return found, self.version_of(path)

    def _holds_as_written(self, path: str, manifest: Manifest) -> bool:
        """Whether the object's own file holds the bytes this render writes for it, which
        PyYAML reads back as its body (`plain_manifest_file`): then the body is what `_lookup`
        would find there, first of the candidates, without parsing the file (a cold check of
        thousands of objects with transition rules parsed each one's file)."""
        if path in self._parsed:
            return False  # parsed already: `_lookup` reads it from there
        written = plain_manifest_file(manifest)
        if written is None:
            return False
        try:
            return self._bytes(path) == written
        except OSError:
            return False  # `_lookup` reports it

    def unreadable(self, cluster: str, manifest: Manifest) -> list[tuple[str, str]]:
        """(path under rendered/, why) of the files `old_self` could not read for the manifest;
        forgotten once asked."""
        return self._unread.pop((cluster, manifest.path), [])


def _group(api_version: Any) -> str:
    return str(api_version).rpartition("/")[0] if isinstance(api_version, str) else ""


def same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two objects are the same API object: group, kind, namespace and name."""

    def identity(obj: Mapping[str, Any]) -> tuple[str, Any, Any, Any]:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        return (
            _group(obj.get("apiVersion")),
            obj.get("kind"),
            meta.get("namespace"),
            meta.get("name"),
        )

    return identity(a) == identity(b)


def _git_env() -> dict[str, str]:
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def _git(
    repo: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return subprocess.run(
            [git, "-C", str(repo), *args],
            input=stdin,
            capture_output=True,
            env=_git_env(),
            check=False,
        )
    except OSError:
        return None


class _GitBlobs:
    """Blobs read through one `git cat-file --batch` process, started on the first read in each
    process (a forked worker starts its own: the parent's pipes are not its to use)."""

    def __init__(self, argv: list[str], env: Mapping[str, str]) -> None:
        self._argv = argv
        self._env = dict(env)
        self._process: subprocess.Popen[bytes] | None = None
        self._pid = 0

    def __call__(self, blob: str) -> bytes | None:
        try:
            process = self._started()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(f"{blob}\n".encode())
            process.stdin.flush()
            header = process.stdout.readline().split()
            if len(header) != 3:  # "<id> missing", or git has gone
                return None
            data = process.stdout.read(int(header[2]))
            process.stdout.read(1)  # the newline after the contents
        except (OSError, ValueError):
            return None
        return data

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._pid != os.getpid():
            self._process = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self._env,
            )
            self._pid = os.getpid()
            weakref.finalize(self, _close, self._process, self._pid)
        return self._process


def _close(process: subprocess.Popen[bytes], pid: int) -> None:
    if pid != os.getpid():
        return
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=5)
        if process.stdout is not None:
            process.stdout.close()


def committed_tree(
    root: Path, ref: str = "HEAD", listing: TreeListing | None = None
) -> CommittedTree:
    """`rendered/` of the repository at `root` as committed at `ref`; outside a git repository,
    `rendered/` on disk. A repository where `ref` has no `rendered/` (no commit yet, a first
    render) gives an empty tree: every object is created, no transition rule applies. Only the
    listing is read here (outside git, `listing`'s, when it lists `rendered/`); a file's bytes
    are read when an object asks for it."""
    top = _git(root, "rev-parse", "--show-prefix")
    if top is None or top.returncode != 0:
        return _from_disk(root, listing)
    prefix = top.stdout.decode().strip()
    if ref.startswith("-") or not ref:
        return CommittedTree({}, ref)
    listed = _git(root, "ls-tree", "-r", "-t", "-z", "--full-tree", f"{ref}:{prefix}{RENDERED}")
    git = shutil.which("git")
    if listed is None or listed.returncode != 0 or git is None:
        return CommittedTree({}, ref)
    blobs: dict[str, str] = {}
    folders: dict[str, str] = {}
    for record in listed.stdout.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        parts = meta.decode().split()
        if len(parts) != 3:
            continue
        if parts[1] == "blob" and raw.endswith((b".yaml", b".yml")):
            blobs[raw.decode("utf-8", "surrogateescape")] = parts[2]
        elif parts[1] == "tree" and b"/" not in raw:
            folders[raw.decode("utf-8", "surrogateescape")] = parts[2]
    if not blobs:
        return CommittedTree({}, ref)
    reader = _GitBlobs([git, "-C", str(root), "cat-file", "--batch"], _git_env())
    fingerprints = {name: fingerprint_of([("tree", tree)]) for name, tree in folders.items()}
    return CommittedTree({}, ref, unread=blobs, read=reader, fingerprints=lambda: fingerprints)


def _from_disk(root: Path, listing: TreeListing | None = None) -> CommittedTree:
    folder = root / RENDERED
    if listing is None or listing.folder != folder:
        listing = TreeListing(folder, background=False)
    base = str(folder)
    return CommittedTree(
        {},
        "disk",
        read=lambda path: _read_file(os.path.join(base, path)),
        listing=listing.stats,
        fingerprints=listing.fingerprints,
        folder=folder,
    )


def _read_file(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None
