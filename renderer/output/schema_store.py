"""gpuplane's schema store: the operators' CRDs, per operator release, kept in the repository.

Upstream CRD files cannot ship with gpuplane, so a platform team imports the ones it runs
(`gpuplane schemas import`, `gpuplane schemas pull`) into `.gpuplane/schemas/`, commits them, and
every later run (CI included) checks each cluster's objects against the release that cluster pins.

Layout: `.gpuplane/schemas/<operator>/<release>/<crd name>.json`, one CustomResourceDefinition per
file, compact: the `description` of every schema node is dropped (most of a CRD's bytes; the API
server never reads it), everything else the API server checks is kept as it was. Each file records
where it came from and the sha256 of the bytes it was read from, in its annotations. The operator
is the cluster file's add-on key (`kueue`, `gpuOperator`, ...) or, for an operator no cluster pins,
a name of its own (`argocd`); the release is the add-on's `version:` as the cluster file pins it.
See docs/schema-store.md.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STORE_DIR = Path(".gpuplane") / "schemas"
"""The store's folder, relative to the repository."""

SOURCE_ANNOTATION = "gpuplane.dev/source"
SHA256_ANNOTATION = "gpuplane.dev/source-sha256"
OPERATOR_ANNOTATION = "gpuplane.dev/operator"
RELEASE_ANNOTATION = "gpuplane.dev/release"

UNPINNED = "unpinned"
"""The release folder of an operator no cluster pinned when its CRDs were imported."""

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")
"""What an operator, a release or a CRD name may be to become a folder or file name: no
separators, no leading dot, nothing a shell or a path would read twice."""


class StoreError(ValueError):
    """The store cannot be read or written as asked."""


@dataclass(frozen=True, slots=True)
class StoredCrd:
    """One CRD file in the store, as `schemas list` shows it."""

    operator: str
    release: str
    name: str
    group: str
    kind: str
    versions: tuple[str, ...]
    source: str
    sha256: str
    path: Path


def release_key(release: str) -> tuple[int, tuple[int, ...], str]:
    """Sort key, oldest first: `unpinned` (what was imported before any cluster pinned the
    operator) before every release, releases by their numbers (v10 after v9, 4.5.2-4.8.1 as
    4, 5, 2, 4, 8, 1), then by name."""
    if release == UNPINNED:
        return (0, (), release)
    return (1, tuple(int(n) for n in re.findall(r"\d+", release)), release)


def compact_schema(node: Any) -> Any:
    """A structural schema without the `description` of any node; property names, defaults,
    enums and examples are data and stay exactly as they are."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description":
            continue
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, Mapping):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not", "additionalItems") and isinstance(
            value, Mapping
        ):
            out[key] = compact_schema(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [compact_schema(sub) for sub in value]
        else:
            out[key] = value
    return out


def compact_crd(
    name: str, spec: Mapping[str, Any], operator: str, release: str, source: str, sha256: str
) -> dict[str, Any]:
    """The store's form of one CRD: its spec with every version's schema compacted, the
    conversion webhook's client config and the descriptions of printer columns dropped, and its
    provenance in the annotations."""
    versions = []
    for entry in spec.get("versions", ()):
        version = {k: v for k, v in entry.items() if k != "schema"}
        schema = entry.get("schema")
        if isinstance(schema, Mapping):
            version["schema"] = {
                k: compact_schema(v) if k == "openAPIV3Schema" else v for k, v in schema.items()
            }
        columns = version.get("additionalPrinterColumns")
        if isinstance(columns, list):
            version["additionalPrinterColumns"] = [
                {k: v for k, v in c.items() if k != "description"} if isinstance(c, Mapping) else c
                for c in columns
            ]
        versions.append(version)
    kept = {k: v for k, v in spec.items() if k not in ("versions", "conversion")}
    kept["versions"] = versions
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": name,
            "annotations": {
                OPERATOR_ANNOTATION: operator,
                RELEASE_ANNOTATION: release,
                SOURCE_ANNOTATION: source,
                SHA256_ANNOTATION: sha256,
            },
        },
        "spec": kept,
    }


def check_name(what: str, value: str) -> str:
    if not NAME_RE.match(value) or value in (".", ".."):
        raise StoreError(
            f"{what} {json.dumps(value)} cannot name a folder of the schema store: use letters, "
            "digits and . _ + - only"
        )
    return value


class SchemaStore:
    """The store of one repository; reading it never fails on a missing folder."""

    def __init__(self, root: Path) -> None:
        self.folder = root / STORE_DIR

    def releases(self) -> dict[str, tuple[str, ...]]:
        """operator -> its releases in the store, oldest first."""
        found: dict[str, tuple[str, ...]] = {}
        if not self.folder.is_dir():
            return found
        if self.folder.is_symlink():
            return found
        for operator in sorted(p for p in self.folder.iterdir() if _plain_dir(p)):
            releases = [
                p.name
                for p in operator.iterdir()
                if _plain_dir(p) and self.files(operator.name, p.name)
            ]
            if releases:
                found[operator.name] = tuple(sorted(releases, key=release_key))
        return found

    def files(self, operator: str, release: str) -> list[Path]:
        """The release's CRD files: plain files with plain names, never a link out of the store
        (what CI checks against is what the pull request shows)."""
        folder = self.folder / operator / release
        if not (_plain_dir(self.folder / operator) and _plain_dir(folder)):
            return []
        return sorted(
            p
            for p in folder.glob("*.json")
            if p.is_file() and not p.is_symlink() and NAME_RE.match(p.stem)
        )

    def entries(self) -> list[StoredCrd]:
        """Every CRD file in the store, by operator, release and name."""
        out = []
        for operator, releases in self.releases().items():
            for release in releases:
                for path in self.files(operator, release):
                    out.append(_entry(path, operator, release))
        return out

    def write(
        self, operator: str, release: str, documents: Mapping[str, Mapping[str, Any]]
    ) -> list[Path]:
        """Write CRDs (name -> store form) into one release, each file atomically; returns the
        files whose bytes changed. Other CRDs already in the release stay."""
        folder = self.folder / check_name("operator", operator) / check_name("release", release)
        changed = []
        for name in sorted(documents):
            target = folder / f"{check_name('CRD name', name)}.json"
            text = json.dumps(documents[name], sort_keys=True, separators=(",", ":"))
            data = (text + "\n").encode("utf-8")
            try:
                if target.is_symlink():
                    raise StoreError(f"{target}: a link: the store holds plain files only")
                if target.is_file() and _same_crd(target.read_bytes(), documents[name]):
                    continue
                folder.mkdir(parents=True, exist_ok=True)
                fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=folder)
                try:
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(data)
                    os.replace(temporary, target)
                except BaseException:
                    Path(temporary).unlink(missing_ok=True)
                    raise
            except OSError as exc:
                raise StoreError(f"{target}: cannot write: {exc}") from exc
            changed.append(target)
        return changed


def _same_crd(stored: bytes, document: Mapping[str, Any]) -> bool:
    """Whether a store file already holds this CRD, read from the same bytes (the sha256) if
    perhaps through another path: importing it again changes nothing."""
    try:
        old = json.loads(stored)
    except ValueError:
        return False
    if not isinstance(old, dict):
        return False
    notes = _mapping(_mapping(old.get("metadata")).get("annotations"))
    new_notes = document["metadata"]["annotations"]
    return bool(
        old.get("spec") == document["spec"]
        and notes.get(SHA256_ANNOTATION) == new_notes[SHA256_ANNOTATION]
        and notes.get(OPERATOR_ANNOTATION) == new_notes[OPERATOR_ANNOTATION]
        and notes.get(RELEASE_ANNOTATION) == new_notes[RELEASE_ANNOTATION]
    )


def _plain_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and bool(NAME_RE.match(path.name))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _entry(path: Path, operator: str, release: str) -> StoredCrd:
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path}: not a readable store file: {exc}") from exc
    meta = _mapping(_mapping(document).get("metadata"))
    notes = _mapping(meta.get("annotations"))
    spec = _mapping(_mapping(document).get("spec"))
    listed = spec.get("versions")
    versions = tuple(
        str(v.get("name"))
        for v in (listed if isinstance(listed, list) else ())
        if isinstance(v, Mapping) and v.get("served") is True
    )
    names = _mapping(spec.get("names"))
    return StoredCrd(
        operator=operator,
        release=release,
        name=str(meta.get("name", path.stem)),
        group=str(spec.get("group", "")),
        kind=str(names.get("kind", "")),
        versions=versions,
        source=str(notes.get(SOURCE_ANNOTATION, "")),
        sha256=str(notes.get(SHA256_ANNOTATION, "")),
        path=path,
    )
