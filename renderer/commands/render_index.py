"""The render index: what each cluster rendered last time, so that a check after a small change
re-renders only the clusters the change reaches.

A cluster is rendered from its slice of the platform and nothing else
(`renderer.model.view.cluster_slice`), so its files, findings and counts are a function of:
gpuplane's own code and the libraries it pins, the options and CRDs it checks with, the bytes
of the input files of its slice (and the lines the change under review touched in them), and
the committed tree its transition rules compare with. The index keeps, per cluster, a key
hashed from all of these, the findings and counts the render gave, and each file's SHA-256
with the `stat` of the file on disk when it was known to hold those bytes.

Nothing is trusted blindly. A cluster is taken from the index only when its key is the same
and every file of `rendered/<cluster>/` is the one recorded: the same set of names, and for
each the same size, mtime, ctime and inode (what git's own index trusts), or else the same
SHA-256 once read. Anything else (a hand edit, a missing or extra file, another gpuplane, an
unreadable or corrupt index) renders the cluster again, as a full render would.

The index lives outside the repository, in gpuplane's cache (`$GPUPLANE_CACHE_DIR`, else
`$XDG_CACHE_HOME/gpuplane`, else `~/.cache/gpuplane`; an empty `$GPUPLANE_CACHE_DIR` turns it
off), one file per repository path, never in the repository: it is a pickle, and a pull request
must not be able to put one where `gpuplane render --check` would read it.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import pickle
import sys
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from renderer.commands.policy_index import (
    PolicyCheck,
    TeamRecord,
    changed_lines,
    policy_key,
    scoped_findings,
)
from renderer.findings.diagnostics import Diagnostic
from renderer.layers import workflows as suites
from renderer.model import platform as model
from renderer.model.view import cluster_slice, slice_files
from renderer.output.crd_cache import cache_dir
from renderer.output.reuse import CheckMemo
from renderer.output.transitions import CommittedTree
from renderer.output.writer import Stat, file_stat
from renderer.pipeline import ClusterOutcome, InputCache, Loaded

__all__ = ["ClusterRecord", "RenderIndex"]

FORMAT = 7
"""Bumped when what the index holds changes shape: an index of another format is ignored."""

PINNED = (
    "cel-expr-python",
    "click",
    "hera",
    "jinja2",
    "jsonschema",
    "jsonschema-rs",
    "kubernetes-validate",
    "pydantic",
    "pyyaml",
    "referencing",
    "ruamel.yaml",
)
"""The libraries whose version can change what gpuplane renders or finds."""


@dataclass(slots=True)
class ClusterRecord:
    """One cluster as last rendered: its key, what the render gave, and its files."""

    key: bytes
    outcome: ClusterOutcome
    objects: int
    files: dict[str, tuple[bytes, Stat | None, bytes | None]]
    """Path under rendered/ -> (SHA-256 of the bytes, the file's stat when it held them, what
    the file was made from: its object's `body_key`, source file and (values) comment, None for
    kustomizations and READMEs)."""
    context: bytes = b""
    """What the checks below were made against besides each object's body (`RenderIndex.keys`)."""
    checks: bytes = b""
    """Each object's check by its body (`output.reuse.CheckMemo`), pickled: only a worker that
    renders the cluster again reads them."""
    suites: dict[bytes, bytes] = field(default_factory=dict)
    """The suite objects Hera compiled for the cluster, by the digest of their inputs
    (`layers.workflows.COMPILED`)."""
    slice: bytes = b""
    """`key` without the changed lines and the committed tree: what the outcome is a function
    of when no transition rule found anything (`gpuplane diff` takes the cluster from here)."""
    previous: bytes = b""
    """The committed tree's fingerprint of the cluster's folder its transition rules read."""


@dataclass(slots=True)
class RenderIndex:
    """The index of one repository, read at the start of a render and saved at its end."""

    path: Path | None
    """Where it is kept; None: kept nowhere (`--no-index`)."""
    clusters: dict[str, ClusterRecord] = field(default_factory=dict)
    fingerprint: bytes = b""
    inputs: dict[tuple[str, bytes], bytes] = field(default_factory=dict)
    """Each input file as loaded and schema-checked, by name and bytes (`pipeline.InputCache`);
    entries this run did not ask for are dropped when it is saved."""
    _asked: set[tuple[str, bytes]] = field(default_factory=set)
    contexts: dict[str, bytes] = field(default_factory=dict)
    """Per cluster, what its objects' checks read besides their bodies: gpuplane, the CRDs, the
    cluster's own file (its Kubernetes version and operator pins) and the repository's settings
    (`settings`); set by `keys`."""
    _stored: dict[str, tuple[ClusterRecord, bytes]] = field(default_factory=dict)
    """Each record as read, with its pickle: saved again as it was unless it changed."""
    _read: dict[str, Any] | None = None
    """The index as read (`open`): saved again only when what `save` would write differs."""
    slices: dict[str, bytes] = field(default_factory=dict)
    """Per cluster, `ClusterRecord.slice` as `keys` found it."""
    previous: dict[str, bytes] = field(default_factory=dict)
    """Per cluster, `ClusterRecord.previous` as `keys` found it."""
    _checked_with: dict[tuple[Path, tuple[str, ...]], bytes] = field(default_factory=dict)
    """What the checks of a folder read besides each object and its cluster's settings
    (`checked_with`), by the folder and the CRD sources its gpuplane.yaml lists."""
    policy: tuple[bytes, list[Diagnostic]] | None = None
    """The policy's findings, with the key of what they were found from (`policy_key`)."""
    team_policy: TeamRecord | None = None
    """The team rules' findings in each team file (`policy_index`)."""

    def input_cache(self) -> InputCache | None:
        """The loaded inputs to start from, or None when the index is off."""
        return None if self.path is None else _Recorded(self)

    @classmethod
    def disabled(cls) -> RenderIndex:
        return cls(None)

    @classmethod
    def open(
        cls,
        root: Path,
        schema_paths: Sequence[Path],
        *,
        strict_schemas: bool,
        fallback: Sequence[Path] = (),
    ) -> RenderIndex:
        """The repository's index, or an empty one when there is none, it cannot be read, or
        it was written by another gpuplane or against other CRDs (then every cluster renders).
        `schema_paths`: the CRD sources given with --crds; `fallback`: those of
        $GPUPLANE_CRDS, which the validator consults after them, as another set."""
        folder = cache_dir()
        if folder is None:
            return cls.disabled()
        known = FileDigests.load(folder / "render-index" / "file-digests.marshal")
        fingerprint = code_and_schema_fingerprint(
            root, schema_paths, strict_schemas=strict_schemas, fallback=fallback, known=known
        )
        known.save()
        name = hashlib.sha256(str(root.resolve()).encode()).hexdigest()
        index = cls(folder / "render-index" / f"{name}.pickle", fingerprint=fingerprint)
        try:
            with open(index.path, "rb") as handle:  # type: ignore[arg-type]
                stored = pickle.load(handle)
        except Exception:  # a missing, corrupt or foreign index is a miss, never a failure
            return index
        if (
            isinstance(stored, dict)
            and stored.get("format") == FORMAT
            and stored.get("fingerprint") == fingerprint
            and isinstance(stored.get("clusters"), dict)
            and isinstance(stored.get("inputs"), dict)
        ):
            try:
                for name, data in stored["clusters"].items():
                    record = pickle.loads(data)
                    if isinstance(record, ClusterRecord):
                        index.clusters[name] = record
                        index._stored[name] = (record, data)
            except Exception:  # as above: render those clusters
                index.clusters.clear()
                index._stored.clear()
            index.inputs = dict(stored["inputs"])  # added to: `_read` stays as read
            index._read = stored
            policy = stored.get("policy")
            if isinstance(policy, tuple) and len(policy) == 2 and isinstance(policy[1], list):
                index.policy = policy
            team_policy = stored.get("team_policy")
            if isinstance(team_policy, TeamRecord):
                index.team_policy = team_policy
        return index

    def save(self) -> None:
        """Write the index atomically; a cache that cannot be written is no error."""
        if self.path is None:
            return
        inputs = {k: v for k, v in self.inputs.items() if k in self._asked}
        clusters = {}
        for name, record in self.clusters.items():
            kept = self._stored.get(name)
            if kept is not None and kept[0] is record:
                clusters[name] = kept[1]
            else:
                clusters[name] = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        data = {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "clusters": clusters,
            "inputs": inputs,
            "policy": self.policy,
            "team_policy": self.team_policy,
        }
        if data == self._read:  # nothing changed: 33 MB not written again (4x many-small)
            return
        staging = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(staging, "wb") as handle:
                pickle.dump(data, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(staging, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                staging.unlink()

    def keys(self, root: Path, loaded: Loaded, previous: CommittedTree | None) -> dict[str, bytes]:
        """Each cluster's key: this index's fingerprint, the cluster's name, the path and bytes
        (their SHA-256, as `load_platform` read them) of every input file of its slice with the
        lines the change touched in it, and what the committed tree holds for it."""
        platform = loaded.platform
        keys = {}
        fingerprint = listed_schemas(self.fingerprint, root, platform)
        checked_with = self.checked_with(root, platform)
        for name in sorted(platform.clusters):
            self.contexts[name] = _context(checked_with, loaded, name)
            files = slice_files(cluster_slice(platform, name))
            key = slice_key(fingerprint, loaded, name, with_changes=True, files=files)
            self.slices[name] = slice_key(
                fingerprint, loaded, name, with_changes=False, files=files
            ).digest()
            self.previous[name] = b""
            if previous is not None:
                self.previous[name] = previous.fingerprint(name)
                key.update(f"\0previous\0{previous.origin}\0".encode())
                key.update(self.previous[name])
            keys[name] = key.digest()
        return keys

    def policy_findings(self, loaded: Loaded, check: PolicyCheck) -> list[Diagnostic]:
        """`check(loaded.platform)`, the policy's findings: as the index recorded them when
        what they are found from is the same (`policy_key`), else found now, with the team
        rules' findings in each unchanged team file taken from the index (`policy_index`), and
        recorded."""
        if self.path is None:
            return check(loaded.platform)
        key = policy_key(self.fingerprint, loaded)
        if key is not None and self.policy is not None and self.policy[0] == key:
            return list(self.policy[1])
        found, self.team_policy = scoped_findings(loaded, check, self.fingerprint, self.team_policy)
        self.policy = None if key is None else (key, list(found))
        return found

    def memo_for(self, root: Path, loaded: Loaded, name: str) -> CheckMemo | None:
        """The checks the cluster's last render made, for a render of `root`'s cluster `name`
        without a committed tree: valid when what they read besides each object's body is the
        same (`contexts`), else None. A check that read an old self is done again
        (`CheckMemo.check` without a committed tree), as are the objects the index has none of.
        The suites its workflows layer compiled are made available to this process."""
        record = self.clusters.get(name)
        if record is None or name not in loaded.platform.clusters:
            return None
        checked_with = self.checked_with(root, loaded.platform)
        if not record.checks or record.context != _context(checked_with, loaded, name):
            return None
        suites.COMPILED.update(record.suites)
        return CheckMemo(pickle.loads(record.checks))

    def checked_with(self, root: Path, platform: model.Platform) -> bytes:
        """This index's fingerprint with the CRDs `root`'s gpuplane.yaml lists and `root`'s
        schema store: the index's fingerprint holds the store of the repository it indexes,
        and a check reused for another folder (`diff`'s base, in `memo_for`) must have been
        made with that folder's. Hashed once per folder and list."""
        listed = platform.repository.schemas if platform.repository is not None else ()
        found = self._checked_with.get((root, tuple(listed)))
        if found is None:
            digest = hashlib.sha256(listed_schemas(self.fingerprint, root, platform))
            _hash_tree(digest, root / ".gpuplane" / "schemas", label="store")
            found = self._checked_with[(root, tuple(listed))] = digest.digest()
        return found

    def outcomes_for(self, root: Path, loaded: Loaded) -> dict[str, tuple[ClusterOutcome, bytes]]:
        """Each recorded cluster whose slice is the one `loaded` has, as the render that
        recorded it found it (objects left out), with the fingerprint of the committed folder
        it was checked against; a cluster whose check read anything from that tree for a
        transition rule (an update refused, a file unreadable, a transition rule not evaluated)
        is left out: only a check against the same tree could say the same of it. What
        `gpuplane diff` takes instead of rendering a cluster its change does not reach."""
        fingerprint = listed_schemas(self.fingerprint, root, loaded.platform)
        found = {}
        for name in sorted(loaded.platform.clusters):
            record = self.clusters.get(name)
            if record is None or not record.slice or not record.previous:
                continue
            if record.slice != slice_key(fingerprint, loaded, name, with_changes=False).digest():
                continue
            if not _transitions_silent(record.outcome):
                continue
            found[name] = (record.outcome, record.previous)
        return found

    def restat(self, target: Path) -> None:
        """Each recorded file's stat as it is on disk now, after `target` was written."""
        for record in self.clusters.values():
            for path, (digest, _, made_of) in record.files.items():
                record.files[path] = (digest, file_stat(target / path), made_of)
        self._stored.clear()

    def current(
        self, name: str, key: bytes, target: Path, on_disk: Mapping[str, Stat | None]
    ) -> ClusterRecord | None:
        """The cluster's record when its key is `key` and `target/<name>/` holds exactly the
        files it recorded (`on_disk`: each file below it, as `tree_stats` listed it); else None
        (render it)."""
        record = self.clusters.get(name)
        if record is None or record.key != key:
            return None
        recorded = {path: entry[1] for path, entry in record.files.items()}
        if None not in recorded.values() and recorded == on_disk:  # each file as recorded
            return record
        if on_disk.keys() != record.files.keys():
            return None
        for path, (digest, stat, made_of) in record.files.items():
            now = on_disk[path]
            if stat is not None and now == stat:
                continue
            if now is None or _read_digest(target / path) != digest:
                return None
            record.files[path] = (digest, now, made_of)
            self._stored.pop(name, None)  # changed: pickled again when saved
        return record


class _Recorded(MutableMapping[tuple[str, bytes], bytes]):
    """The index's loaded inputs, remembering which this run asked for."""

    def __init__(self, index: RenderIndex) -> None:
        self._index = index

    def __contains__(self, key: object) -> bool:
        if isinstance(key, tuple):
            self._index._asked.add(key)
        return key in self._index.inputs

    def __getitem__(self, key: tuple[str, bytes]) -> bytes:
        return self._index.inputs[key]

    def __setitem__(self, key: tuple[str, bytes], value: bytes) -> None:
        self._index._asked.add(key)
        self._index.inputs[key] = value

    def __delitem__(self, key: tuple[str, bytes]) -> None:
        del self._index.inputs[key]

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        return iter(self._index.inputs)

    def __len__(self) -> int:
        return len(self._index.inputs)


def listed_schemas(fingerprint: bytes, root: Path, platform: model.Platform) -> bytes:
    """`fingerprint` with the bytes of the CRDs the repository's gpuplane.yaml lists."""
    listed = hashlib.sha256(fingerprint)
    for entry in platform.repository.schemas if platform.repository is not None else ():
        _hash_tree(listed, root / entry, label=entry)  # as written, wherever the root is
    return listed.digest()


def slice_key(
    fingerprint: bytes,
    loaded: Loaded,
    name: str,
    *,
    with_changes: bool,
    files: Sequence[str] | None = None,
) -> hashlib._Hash:
    """A digest (to be added to) of `fingerprint`, the cluster's name and the path and bytes
    (their SHA-256, as `load_platform` read them) of every input file of its slice (`files`,
    when the caller has them), with the lines the change touched in each when `with_changes`."""
    platform = loaded.platform
    key = hashlib.sha256(fingerprint)
    key.update(f"\0cluster\0{name}".encode())
    if files is None:
        files = slice_files(cluster_slice(platform, name))
    for file in files:  # each declares an object: read
        lines = changed_lines(platform, file) if with_changes else "-"
        key.update(f"\0file\0{file}\0{lines}\0".encode())
        key.update(loaded.digests[file])
    return key


def outcome_keys(root: Path, loaded: Loaded, *, strict_schemas: bool) -> dict[str, bytes]:
    """Per cluster, what its `ClusterOutcome` (rendered without a committed tree) is a function
    of in this process, besides the CRDs the caller's validator was given: `--strict-schemas`,
    the repository's schema store and listed CRDs, and the slice's files, none by where the
    repository is. Two folders whose cluster has the same key render it the same (`gpuplane
    diff` renders such a cluster once for both sides)."""
    store = hashlib.sha256(f"strict {strict_schemas}\0".encode())
    _hash_tree(store, root / ".gpuplane" / "schemas", label="store")
    fingerprint = listed_schemas(store.digest(), root, loaded.platform)
    return {
        name: slice_key(fingerprint, loaded, name, with_changes=False).digest()
        for name in sorted(loaded.platform.clusters)
    }


def settings(platform: model.Platform, name: str) -> list[str]:
    """The files a cluster's objects are checked by besides their bodies: the cluster's own (its
    Kubernetes version, its operators' pinned releases) and the repository's settings."""
    files = [platform.clusters[name].origin.file]
    if platform.repository is not None:
        files.append(platform.repository.origin.file)
    return files


def _context(fingerprint: bytes, loaded: Loaded, name: str) -> bytes:
    """What a cluster's objects' checks read besides their bodies (`RenderIndex.contexts`)."""
    context = hashlib.sha256(fingerprint)
    context.update(f"\0cluster\0{name}".encode())
    for own in settings(loaded.platform, name):
        context.update(f"\0{own}\0".encode())
        context.update(loaded.digests.get(own, b"unknown"))
    return context.digest()


TRANSITION_RULES = frozenset({"output-immutable-field", "output-cel-unchecked"})
"""What a cluster's own findings can hold from its committed tree: an update its transition
rules refuse, a committed file that could not be read for them (`cel_report`)."""


def _transitions_silent(outcome: ClusterOutcome) -> bool:
    """Whether the outcome is what a check without a committed tree finds: nothing of
    `TRANSITION_RULES`, and no transition rule among those not evaluated (a rule that meets a
    value it cannot evaluate says so only when it runs, and it runs only against an old self)."""
    if any(d.rule in TRANSITION_RULES for d in outcome.diagnostics):
        return False
    return not any(
        rule.transition for crd in outcome.rules.by_crd.values() for rule in crd.rules.values()
    )


def code_and_schema_fingerprint(
    root: Path,
    schema_paths: Sequence[Path],
    *,
    strict_schemas: bool,
    fallback: Sequence[Path] = (),
    known: FileDigests | None = None,
) -> bytes:
    """gpuplane's own files, the pinned libraries' versions, Python's, the options, and the
    bytes of every CRD source, by the set it is in (--crds, $GPUPLANE_CRDS: two definitions of
    one kind in one set are an error, across sets the first wins), and of the repository's
    schema store. `known`: the files' digests by their stats (`FileDigests`), else each file
    is read."""
    digest = hashlib.sha256(
        f"format {FORMAT}\0python {sys.version}\0strict {strict_schemas}\0".encode()
    )
    digest.update(known.versions() if known is not None else pinned_versions())
    engine = Path(__file__).resolve().parents[1]  # renderer/, and workflows/ beside it
    for package in (engine, engine.parent / "workflows"):
        _hash_tree(
            digest, package, suffixes=(".py", ".json", ".yaml", ".j2", ".txt", ".md"), known=known
        )
    seen: set[Path] = set()
    for role, paths in (("crds", schema_paths), ("fallback", fallback)):
        digest.update(f"\0{role}\0".encode())
        for path in paths:
            resolved = path.resolve()
            # a folder named twice reads the same: within a set, and in the fallback after
            # --crds, which finds every kind the folder defines first
            if resolved not in seen:
                seen.add(resolved)
                _hash_tree(digest, resolved, known=known)
    digest.update(b"\0store\0")
    _hash_tree(digest, (root / ".gpuplane" / "schemas").resolve(), known=known)
    return digest.digest()


def _hash_tree(
    digest: hashlib._Hash,
    path: Path,
    suffixes: tuple[str, ...] = (),
    label: str | None = None,
    known: FileDigests | None = None,
) -> None:
    """Every file's name and bytes below `path` (or the file itself), in name order, after
    `label` (else the path itself); each file's digest from `known` when it has it."""
    digest.update(f"\0tree\0{path if label is None else label}\0".encode())
    if path.is_file():
        candidates = [path]
    elif path.is_dir():
        candidates = sorted(p for p in path.rglob("*") if p.is_file())
    else:
        return
    for file in candidates:
        if suffixes and file.suffix not in suffixes:
            continue
        if "__pycache__" in file.parts:
            continue
        digest.update(f"\0{file.relative_to(path) if file != path else file.name}\0".encode())
        found = known.digest(file) if known is not None else _read_digest(file)
        digest.update(found if found is not None else b"unreadable")


def pinned_versions() -> bytes:
    """`name==version` of each library of `PINNED`, as installed ("-" when it is not)."""
    from importlib import metadata  # 35 ms to import: only when `FileDigests` has none kept

    found = []
    for name in PINNED:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        found.append(f"{name}=={version}\0")
    return "".join(found).encode()


def _read_digest(file: Path) -> bytes | None:
    try:
        return hashlib.sha256(file.read_bytes()).digest()
    except OSError:
        return None


class FileDigests:
    """The SHA-256 of files read before, by path, kept with the file's `Stat` when it was read
    (size, mtime, ctime, inode): a file whose stat is the same is taken as holding the same
    bytes, as the index takes rendered/'s files (`current`), and as git takes its work tree.
    Writing a file changes its ctime, which no tool sets back. For the fingerprint's files:
    gpuplane's own sources and the CRD sources, 29 MB read and hashed on every run before
    (`code_and_schema_fingerprint`)."""

    AT_MOST = 50_000
    """More paths than this (many repositories' CRDs) and the memory starts over."""

    def __init__(self, path: Path | None, kept: dict[str, tuple[tuple[Any, ...], bytes]]) -> None:
        self.path = path
        self._kept = kept
        self._changed = False

    @classmethod
    def load(cls, path: Path) -> FileDigests:
        """The digests kept at `path`; none when it is missing or cannot be read."""
        try:
            with open(path, "rb") as handle:
                stored = marshal.loads(handle.read())
        except (OSError, ValueError, EOFError, TypeError):
            stored = None
        kept = stored[1] if _kept_digests(stored) else {}
        return cls(path, kept)

    def digest(self, file: Path) -> bytes | None:
        """The file's SHA-256, None when it cannot be read."""
        name = os.fspath(file)
        stat = file_stat(name, follow_symlinks=True)
        found = self._kept.get(name)
        if stat is not None and found is not None and found[0] == stat:
            return found[1]
        digest = _read_digest(file)
        if (
            digest is None
            or stat is None
            or file_stat(name, follow_symlinks=True) != stat
            or _recent(stat)
        ):
            self._kept.pop(name, None)  # changed while read, or may change unseen (below)
            return digest
        if len(self._kept) >= self.AT_MOST:
            self._kept.clear()
        self._kept[name] = (stat, digest)
        self._changed = True
        return digest

    def versions(self) -> bytes:
        """`pinned_versions`, kept by the stats of the folders on `sys.path`: installing,
        upgrading or removing a library adds or removes its `.dist-info` folder there, which
        changes the folder's mtime and ctime (a folder changed in the last two seconds is
        asked again, as a file is; one that does not exist, as Python's zip of the standard
        library mostly, is kept as missing: made, it changes the key)."""
        folders = tuple(sorted({os.path.abspath(p or os.curdir) for p in sys.path}))
        stats = tuple((f, file_stat(f, follow_symlinks=True)) for f in folders)
        name = "\0versions\0" + "\0".join(folders)
        found = self._kept.get(name)
        if found is not None and found[0] == stats:
            return found[1]
        versions = pinned_versions()
        if not any(s is not None and _recent(s) for _, s in stats):  # a missing one may stay
            self._kept[name] = (stats, versions)
            self._changed = True
        return versions

    def save(self) -> None:
        """Keep the digests, atomically, when this run added any; no error when it cannot."""
        if not self._changed or self.path is None:
            return
        staging = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(staging, "wb") as handle:
                handle.write(marshal.dumps((_DIGESTS_FORMAT, self._kept), 2))
            os.replace(staging, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                staging.unlink()


_DIGESTS_FORMAT = 1

RECENT_NS = 2_000_000_000
"""A file changed less than this long ago (2 s) is read again next time, not taken by its
stat: a file system's clock ticks coarser than a nanosecond, so a second write of the same
size within one tick would leave the stat as it was ("racy git")."""


def _recent(stat: Stat) -> bool:
    return time.time_ns() - max(stat[1], stat[2]) < RECENT_NS


def _kept_digests(stored: object) -> bool:
    """Whether `stored` is what `FileDigests.save` writes."""
    if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _DIGESTS_FORMAT):
        return False
    kept = stored[1]
    return isinstance(kept, dict) and all(
        type(name) is str
        and type(entry) is tuple
        and len(entry) == 2
        and type(entry[0]) is tuple
        and type(entry[1]) is bytes
        for name, entry in kept.items()
    )
