"""Turn manifests into a byte-exact tree and put it on disk atomically.

One dumper with fixed settings (renderer.output.canonical) gives canonical YAML; files and kustomization resources are
sorted; nothing depends on the machine, the clock or hash seeds. The tree is written to a sibling
temporary folder and swapped in by rename, so a failed run leaves `rendered/` as it was, and
files of removed objects disappear with the old tree.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import shutil
import weakref
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, cast

import yaml

from renderer.output.canonical import dump, emitted
from renderer.output.emitter import LINE_BREAKS
from renderer.output.manifest import Manifest, Values

HEADER = "# Rendered by gpuplane from {source}; edit that file, not this one.\n"

OUTPUT_DIR = "rendered"


def build_tree(
    rendered: Mapping[str, Iterable[Manifest]],
    readmes: Mapping[str, str] | None = None,
    values: Mapping[str, Iterable[Values]] | None = None,
) -> dict[str, bytes]:
    """`{relative path: bytes}` for every file under `rendered/`: the manifests and the
    kustomizations that list them, then (listed by no kustomization) each cluster's Helm values
    and its generated README.md."""
    return cast(dict[str, bytes], build_files(rendered, readmes, values))


def build_files(
    rendered: Mapping[str, Iterable[Manifest]],
    readmes: Mapping[str, str] | None = None,
    values: Mapping[str, Iterable[Values]] | None = None,
    unchanged: Container[str] = (),
) -> dict[str, bytes | None]:
    """`build_tree`, with the manifest and values files whose path is in `unchanged` (known to
    be on disk as this render would write them) left None instead of dumped."""
    files: dict[str, bytes | None] = {}
    for cluster, manifests in rendered.items():
        for manifest in manifests:
            path = f"{cluster}/{manifest.path}"
            if path in unchanged:
                files[path] = None
                continue
            files[path] = (_header(manifest.source.file) + dump(manifest.body)).encode("utf-8")
    files.update(_kustomizations(files))
    for cluster, items in (values or {}).items():
        for item in items:
            path = f"{cluster}/{item.path}"
            if path in unchanged:
                files[path] = None
                continue
            text = _header(item.source.file) + comment_lines(item.comment)
            files[path] = (text + dump(item.body)).encode("utf-8")
    for cluster, text in (readmes or {}).items():
        files[f"{cluster}/README.md"] = text.encode("utf-8")
    return dict(sorted(files.items()))


def _header(source: str) -> str:
    return HEADER.format(source=source)


def plain_manifest_file(manifest: Manifest) -> bytes | None:
    """The bytes `build_files` writes for the manifest, when they are one document that PyYAML
    reads back as the body itself: gpuplane's emitter lays the body out (`canonical.emitted`)
    and the header is one comment line (a line break in the source's name would end it). None
    otherwise."""
    if any(mark in manifest.source.file for mark in LINE_BREAKS):
        return None
    try:
        text = emitted(manifest.body)
        return None if text is None else (_header(manifest.source.file) + text).encode("utf-8")
    except (UnicodeError, yaml.YAMLError):  # what `build_files` meets, it reports there
        return None


def comment_lines(text: str, width: int = 98) -> str:
    """`text` as YAML comment lines of at most `width` characters (nothing for no text)."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width - 2:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return "".join(f"# {line}\n" for line in lines)


def _kustomizations(files: Iterable[str]) -> dict[str, bytes]:
    """A kustomization.yaml in every folder, listing its files and subfolders, so that
    `kubectl kustomize rendered/<cluster>` builds a whole cluster for a person at a terminal."""
    entries: dict[str, set[str]] = {}
    for path in files:
        current = path
        while "/" in current:  # each folder, up to the top one, lists what it holds
            folder, _, name = current.rpartition("/")
            known = entries.get(folder)
            if known is None:
                entries[folder] = {name}
            elif name in known:
                break  # the folders above list this one already
            else:
                known.add(name)
            current = folder
    result = {}
    for folder, names in entries.items():
        body = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": sorted(names),
        }
        text = "# Rendered by gpuplane; lists this folder for `kubectl kustomize`.\n" + dump(body)
        result[f"{folder}/kustomization.yaml"] = text.encode("utf-8")
    return result


@dataclass(frozen=True, slots=True)
class Staleness:
    """How the tree on disk differs from the one the inputs render."""

    missing: tuple[str, ...]
    extra: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.changed)


def compare(target: Path, files: Mapping[str, bytes]) -> Staleness:
    """How the tree on disk at `target` differs from `files`, every file of it read."""
    on_disk = _read_tree(target)
    return Staleness(
        missing=tuple(sorted(set(files) - set(on_disk))),
        extra=tuple(sorted(set(on_disk) - set(files))),
        changed=tuple(sorted(p for p in files if p in on_disk and on_disk[p] != files[p])),
    )


def compare_listed(
    target: Path, listed: Mapping[str, Stat | None], files: Mapping[str, bytes | None]
) -> Staleness:
    """`compare`, against `listed` (the files on disk as `tree_stats` found them): only the
    files with bytes here and a regular file there are read; a file None here is known to be
    current; anything on disk that is not a regular file differs."""
    changed = []
    folder = os.fspath(target)
    for path, content in files.items():
        if content is None or path not in listed:
            continue
        stat = listed[path]
        if stat is None or stat[0] != len(content):  # not a regular file, or another size
            changed.append(path)
            continue
        if _read(f"{folder}/{path}", len(content)) != content:
            changed.append(path)
    return Staleness(
        missing=tuple(sorted(p for p in files if p not in listed)),
        extra=tuple(sorted(p for p in listed if p not in files)),
        changed=tuple(sorted(changed)),
    )


def _read(path: str, size: int) -> bytes | None:
    """The file's bytes (None when it cannot be read), with fewer system calls than `open`
    makes: `compare_listed` reads every file of a large tree."""
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        chunks: list[bytes] = []
        while True:  # until the end: the file may have grown since it was listed
            chunk = os.read(handle, size + 1)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(handle)


Stat = tuple[int, int, int, int]
"""What says a file on disk is unchanged, as git's index trusts it: (size, mtime_ns, ctime_ns,
inode)."""


def stat_of(found: os.stat_result) -> Stat:
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino)


def file_stat(path: str | Path, *, follow_symlinks: bool = False) -> Stat | None:
    """The file's `Stat`, None when it cannot be read. A symbolic link's own by default;
    `follow_symlinks`: the file it points at (what reading the path reads: a link pointed
    elsewhere, or its target written, changes it)."""
    try:
        return stat_of(os.stat(path, follow_symlinks=follow_symlinks))
    except OSError:
        return None


class TreeListing:
    """`tree_stats` of a folder, and its `folder_fingerprints`, made in a forked process while
    this one goes on loading the inputs (a large tree takes a quarter of a second to list, and
    a tenth to fingerprint); where there is no fork, or the child fails, made here when asked
    for."""

    def __init__(self, folder: Path, *, background: bool = True) -> None:
        self.folder = folder
        self._stats: dict[str, Stat | None] | None = None
        self._fingerprints: dict[str, bytes] | None = None
        self._child: weakref.finalize[Any, TreeListing] | None = None
        if background and hasattr(os, "fork"):
            child = _list_in_child(folder)
            if child is not None:  # reaped when asked for, or when this is dropped
                self._child = weakref.finalize(self, _reap, *child)

    def stats(self) -> dict[str, Stat | None]:
        """Each file below the folder with its `Stat`, as `tree_stats` gives it."""
        self._take()
        if self._stats is None:
            self._stats = tree_stats(self.folder)
        return self._stats

    def fingerprints(self) -> dict[str, bytes]:
        """`folder_fingerprints` of `stats`."""
        self._take()
        if self._fingerprints is None:
            self._fingerprints = folder_fingerprints(self.stats())
        return self._fingerprints

    def _take(self) -> None:
        if self._child is not None and self._stats is None:
            sent = self._child()
            if sent is not None:
                self._stats, self._fingerprints = sent


def folder_fingerprints(stats: Mapping[str, Stat | None]) -> dict[str, bytes]:
    """Per top folder of a listed tree, a digest of its `.yaml` files below it (a file beside
    the folders is left out), each path with its stat, in path order; `CommittedTree.fingerprint`
    of a tree on disk none of whose files was read. A folder with no such file is absent
    (`EMPTY_FINGERPRINT`)."""
    grouped: dict[str, list[tuple[str, Stat]]] = {}
    for path in sorted(stats):
        stat = stats[path]
        folder, slash, _ = path.partition("/")
        if slash and stat is not None and path.endswith(".yaml"):
            grouped.setdefault(folder, []).append((path, stat))
    return {folder: fingerprint_of(entries) for folder, entries in grouped.items()}


def fingerprint_of(entries: list[tuple[str, Any]]) -> bytes:
    """The digest of (path, version) pairs: marshal's version 2, which writes no references,
    so the bytes do not depend on how often a value is referenced elsewhere."""
    return hashlib.sha256(marshal.dumps(entries, 2)).digest()


EMPTY_FINGERPRINT = fingerprint_of([])


def _list_in_child(folder: Path) -> tuple[int, int] | None:
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the child: list, send, and leave without running anything of the parent's
        code = 1
        try:
            os.close(read_end)
            stats = tree_stats(folder)
            with os.fdopen(write_end, "wb") as out:
                out.write(marshal.dumps((stats, folder_fingerprints(stats))))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end


def _reap(pid: int, fd: int) -> tuple[dict[str, Stat | None], dict[str, bytes]] | None:
    """What the child sent (None when it failed), once it has exited."""
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        _, status = os.waitpid(pid, 0)
    except OSError:
        return None
    if status != 0 or not data:
        return None
    try:
        found = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not (isinstance(found, tuple) and len(found) == 2):
        return None
    stats, fingerprints = found
    return (
        (stats, fingerprints)
        if isinstance(stats, dict) and isinstance(fingerprints, dict)
        else None
    )


def tree_stats(target: Path | str) -> dict[str, Stat | None]:
    """Every file below `target` (by its path relative to `target`) with its `Stat`, in one
    walk of the folders and without reading any file: a symbolic link or anything else that is
    not a regular file, or a file that cannot be stat'ed, is None (it never matches a recorded
    stat)."""
    found: dict[str, Stat | None] = {}
    pending = [(os.fspath(target), "")]
    while pending:
        folder, head = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            relative = f"{head}{entry.name}"
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{relative}/"))
                    continue
                regular = entry.is_file(follow_symlinks=False)  # not a link, a pipe, a socket
                found[relative] = stat_of(entry.stat(follow_symlinks=False)) if regular else None
            except OSError:
                found[relative] = None
    return found


def _walk(folder: Path) -> Iterator[str]:
    """The relative paths of the files below `folder`."""
    for path, _, names in os.walk(folder):
        relative = os.path.relpath(path, folder)
        head = "" if relative == "." else f"{Path(relative).as_posix()}/"
        for name in names:
            if os.path.isfile(os.path.join(path, name)):
                yield f"{head}{name}"


def _read_tree(target: Path) -> dict[str, bytes]:
    if not target.is_dir():
        return {}
    found = {}
    for relative in sorted(_walk(target)):
        with open(target / relative, "rb") as handle:
            found[relative] = handle.read()
    return found


def write_tree(
    target: Path, files: Mapping[str, bytes | None], staleness: Staleness | None = None
) -> Staleness:
    """Replace `target` with exactly `files`; returns what changed (`staleness`, when the caller
    compared already: then a file it found current may be None, kept as it is on disk). Nothing
    is touched when the tree is already current, and an error before the swap leaves the old
    tree in place."""
    if staleness is None:
        if any(content is None for content in files.values()):
            raise ValueError("a file kept as it is on disk needs the caller's staleness")
        staleness = compare(target, cast(Mapping[str, bytes], files))
    if staleness.clean:
        return staleness
    parent = target.parent
    staging = parent / f".{target.name}.new-{os.getpid()}"
    retired = parent / f".{target.name}.old-{os.getpid()}"
    try:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in sorted({str(PurePosixPath(p).parent) for p in files}):
            (staging / folder).mkdir(parents=True, exist_ok=True)
        changed = set(staleness.missing) | set(staleness.changed)
        for relative, content in files.items():
            if relative in changed:
                if content is None:
                    raise ValueError(f"{relative} is to be written but has no content")
                (staging / relative).write_bytes(content)
            else:  # unchanged: share the old file's inode, far cheaper than writing it again
                os.link(target / relative, staging / relative)
        had_tree = target.exists()
        if had_tree:
            target.rename(retired)
        try:
            staging.rename(target)
        except OSError:
            if had_tree:
                retired.rename(target)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(retired, ignore_errors=True)
    return staleness


def write_file_atomically(path: Path, data: bytes) -> bool:
    """Put `data` at `path` by writing a sibling temporary file and renaming it over the old one,
    so a reader sees the old file or the new one, never half of one. Returns whether anything was
    written: a file that already holds `data` is left alone."""
    if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        staging.write_bytes(data)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)
    return True
