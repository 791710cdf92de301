"""The objects currently committed in `rendered/`: what each rendered object would replace on the
cluster, for the CRDs' transition rules (`oldSelf`, immutable fields).

Argo CD applies the committed tree, so the object a render replaces is the one in `rendered/` at
git HEAD (on `render`), or at the base revision (`validate --base REF`, `diff --base REF`); in a
folder outside git, the file on disk. Files are read with one `git ls-tree` and one
`git cat-file --batch` (no checkout, nothing written) and parsed only when an object with
transition rules asks for its old self. See docs/cel.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from renderer.output.manifest import Manifest

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

__all__ = ["CommittedTree", "committed_tree"]

RENDERED = "rendered"


class CommittedTree:
    """`rendered/` as committed: file bytes by path under it (`prod-east/queueing/...yaml`)."""

    def __init__(self, files: Mapping[str, bytes], origin: str) -> None:
        self.files = dict(files)
        self.origin = origin
        """Where the files come from, for messages: `HEAD`, a ref, or `disk`."""
        self._parsed: dict[str, tuple[list[Any], str | None]] = {}
        self._unread: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._by_name: dict[tuple[str, str], list[str]] | None = None

    def __bool__(self) -> bool:
        return bool(self.files)

    def _documents(self, path: str) -> tuple[list[Any], str | None]:
        """The file's YAML documents, or why it cannot be read."""
        if path not in self._parsed:
            try:
                docs = list(yaml.load_all(self.files[path], Loader=_Loader))
                self._parsed[path] = (docs, None)
            except yaml.MarkedYAMLError as err:
                mark = err.problem_mark or err.context_mark
                line = f" (line {mark.line + 1})" if mark is not None else ""
                self._parsed[path] = ([], f"it is not YAML: {err.problem or err.context}{line}")
            except (yaml.YAMLError, ValueError, RecursionError) as err:
                self._parsed[path] = ([], f"it is not YAML: {type(err).__name__}")
        return self._parsed[path]

    def _lookup(
        self, cluster: str, manifest: Manifest
    ) -> tuple[Mapping[str, Any] | None, list[tuple[str, str]]]:
        """The committed object, and the candidate files that could not be read."""
        exact = f"{cluster}/{manifest.path}"
        candidates = [exact] if exact in self.files else []
        candidates += [p for p in self._named(cluster, manifest.filename) if p != exact]
        unread: list[tuple[str, str]] = []
        for path in candidates:
            docs, why = self._documents(path)
            if why is not None:
                unread.append((path, why))
            for found in docs:
                if isinstance(found, Mapping) and same_object(found, manifest.body):
                    return found, []
        return None, unread

    def _named(self, cluster: str, filename: str) -> list[str]:
        """The committed files of the cluster with this file name, in any folder, sorted. An
        index built once: scanning every file for every object made a large render's check
        grow with the square of its objects."""
        if "/" in cluster or "/" in filename:  # no such names; scan as the index cannot
            suffix = f"/{filename}"
            return sorted(
                p for p in self.files if p.startswith(f"{cluster}/") and p.endswith(suffix)
            )
        if self._by_name is None:
            index: dict[tuple[str, str], list[str]] = {}
            for path in self.files:
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
        found, unread = self._lookup(cluster, manifest)
        return found is not None or bool(unread)

    def old_self(self, cluster: str, manifest: Manifest) -> Mapping[str, Any] | None:
        """`find`, for the transition rules: a candidate file that cannot be read is kept, for
        `unreadable`, so that rules not evaluated against it are never passed silently."""
        found, unread = self._lookup(cluster, manifest)
        if found is None and unread:
            self._unread[(cluster, manifest.path)] = unread
        return found

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


def _git(
    repo: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    git = shutil.which("git")
    if git is None:
        return None
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(
            [git, "-C", str(repo), *args], input=stdin, capture_output=True, env=env, check=False
        )
    except OSError:
        return None


def committed_tree(root: Path, ref: str = "HEAD") -> CommittedTree:
    """`rendered/` of the repository at `root` as committed at `ref`; outside a git repository,
    `rendered/` on disk. A repository where `ref` has no `rendered/` (no commit yet, a first
    render) gives an empty tree: every object is created, no transition rule applies."""
    top = _git(root, "rev-parse", "--show-prefix")
    if top is None or top.returncode != 0:
        return _from_disk(root)
    prefix = top.stdout.decode().strip()
    if ref.startswith("-") or not ref:
        return CommittedTree({}, ref)
    listed = _git(root, "ls-tree", "-r", "-z", "--full-tree", f"{ref}:{prefix}{RENDERED}")
    if listed is None or listed.returncode != 0:
        return CommittedTree({}, ref)
    entries: list[tuple[str, str]] = []
    for record in listed.stdout.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        parts = meta.decode().split()
        if len(parts) == 3 and parts[1] == "blob" and raw.endswith((b".yaml", b".yml")):
            entries.append((parts[2], raw.decode("utf-8", "surrogateescape")))
    if not entries:
        return CommittedTree({}, ref)
    batch = _git(root, "cat-file", "--batch", stdin="".join(f"{s}\n" for s, _ in entries).encode())
    if batch is None or batch.returncode != 0:
        return CommittedTree({}, ref)
    files: dict[str, bytes] = {}
    data, offset = batch.stdout, 0
    for _, path in entries:
        header_end = data.index(b"\n", offset)
        size = int(data[offset:header_end].split()[2])
        files[path] = data[header_end + 1 : header_end + 1 + size]
        offset = header_end + 1 + size + 1
    return CommittedTree(files, ref)


def _from_disk(root: Path) -> CommittedTree:
    folder = root / RENDERED
    files: dict[str, bytes] = {}
    if folder.is_dir():
        for path in sorted(folder.rglob("*.yaml")):
            if path.is_file() and not path.is_symlink():
                try:
                    files[path.relative_to(folder).as_posix()] = path.read_bytes()
                except OSError:
                    continue
    return CommittedTree(files, "disk")
