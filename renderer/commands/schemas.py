"""`gpuplane schemas import|pull|list`: filling and reading the repository's schema store.

A platform team gets its operators' CRDs from where it keeps them (release CRD files, or a
cluster's `kubectl get crd -o yaml`), and gpuplane keeps a compact copy per operator release in
`.gpuplane/schemas/` (renderer/output/schema_store.py), which the team commits so that every run,
CI included, checks the same schemas. Each CRD lands under its operator (the cluster files' add-on
key, from its API group) and under the release that operator runs: `--release`, else the version
every cluster that has the add-on pins, else `unpinned` for an operator no cluster pins.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from renderer.model.names import OPERATOR_TITLES, SCHEMA_OPERATORS, schema_operator
from renderer.model.platform import Platform
from renderer.output.crds import Crd, CrdLoadError, parsed_crds, read_bytes, source_files
from renderer.output.schema_store import (
    STORE_DIR,
    UNPINNED,
    SchemaStore,
    StoreError,
    check_name,
    compact_crd,
    release_key,
)


class SchemaImportError(ValueError):
    """The CRDs cannot be imported as asked; the message says why and what to pass."""


@dataclass(frozen=True, slots=True)
class Input:
    """Bytes to import and how the store should record where they came from."""

    label: str
    raw: bytes


@dataclass(slots=True)
class Imported:
    """What an import wrote, per operator release."""

    releases: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(names) for names in self.releases.values())


def read_inputs(paths: Sequence[Path]) -> list[Input]:
    """Every CRD file under the given files and folders (YAML or JSON)."""
    inputs = []
    for source in paths:
        try:
            files = source_files(source)
        except CrdLoadError as err:
            raise SchemaImportError(str(err)) from err
        for path in files:
            try:
                inputs.append(Input(str(path), read_bytes(path)))
            except CrdLoadError as err:
                raise SchemaImportError(str(err)) from err
    return inputs


def pins_for_import(root: Path, release: str | None, cluster: str | None) -> dict[str, str | None]:
    """The releases the clusters pin (`cluster`'s alone, when given), for CRDs imported without
    --release. An unknown cluster, or input errors without --release, cannot be imported as."""
    from renderer.findings.diagnostics import closest, has_errors
    from renderer.pipeline import load_platform

    loaded = load_platform(root)
    if cluster is not None and cluster not in loaded.platform.clusters:
        known = sorted(loaded.platform.clusters)
        close = closest(cluster, known)
        hint = f" Did you mean '{close}'?" if close else f" Clusters: {', '.join(known) or 'none'}."
        raise SchemaImportError(f"unknown cluster '{cluster}'.{hint}")
    if release is None and has_errors(loaded.diagnostics):
        raise SchemaImportError(
            "the input files have errors, so the releases the clusters pin are unknown: fix them "
            "(`gpuplane validate`) or pass --release VERSION"
        )
    return pinned_releases(loaded.platform, cluster)


def pinned_releases(platform: Platform, cluster: str | None = None) -> dict[str, str | None]:
    """operator -> the release the clusters pin (None where they disagree), from one cluster's
    file or from all of them."""
    chosen = [platform.clusters[cluster]] if cluster else list(platform.clusters.values())
    found: dict[str, set[str]] = {}
    for c in chosen:
        for key, addon in c.addons.items():
            if addon.version:
                found.setdefault(key, set()).add(addon.version)
    return {key: next(iter(v)) if len(v) == 1 else None for key, v in found.items()}


def _folder_name(what: str, value: str) -> str:
    try:
        return check_name(what, value)
    except StoreError as err:
        raise SchemaImportError(str(err)) from err


def _release_for(
    crd: Crd, operator: str, release: str | None, pins: Mapping[str, str | None]
) -> str:
    if release:
        return release
    if operator in pins:
        pinned = pins[operator]
        if pinned is None:
            raise SchemaImportError(
                f"{crd.name}: the clusters pin different {OPERATOR_TITLES.get(operator, operator)} "
                "releases: import each release's CRDs with --release VERSION (or --cluster NAME)"
            )
        return pinned
    return UNPINNED


def import_crds(
    root: Path,
    inputs: Sequence[Input],
    pins: Mapping[str, str | None],
    *,
    release: str | None = None,
    operator: str | None = None,
    known_only: bool = False,
) -> Imported:
    """Parse the inputs' CRDs and write them into the store; nothing is written when any input
    is broken, and a CRD defined twice, differently, is an error."""
    if release is not None:
        _folder_name("release", release)
    if operator is not None:
        _folder_name("operator", operator)
    chosen: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    seen: dict[str, tuple[Crd, str]] = {}
    result = Imported()
    for item in inputs:
        sha = hashlib.sha256(item.raw).hexdigest()
        try:
            crds = parsed_crds(Path(item.label), item.raw)
        except CrdLoadError as err:
            raise SchemaImportError(str(err)) from err
        for crd in crds:
            earlier = seen.get(crd.name)
            if earlier is not None:
                if earlier[0].raw != crd.raw:
                    raise SchemaImportError(
                        f"{item.label}: CustomResourceDefinition {crd.name} is also defined, "
                        f"differently, in {earlier[1]}"
                    )
                continue
            seen[crd.name] = (crd, item.label)
            plural = crd.raw.get("names", {}).get("plural")
            if crd.name != f"{plural}.{crd.group}":
                raise SchemaImportError(
                    f"{item.label}: CustomResourceDefinition {crd.name!r} is not named "
                    f"<plural>.<group> ({plural}.{crd.group}), as the API server requires"
                )
            _folder_name("CRD name", crd.name)
            owner = operator or schema_operator(crd.group, crd.kind)
            _folder_name("operator", owner)
            if known_only and owner not in OPERATOR_TITLES:
                result.skipped.append(crd.name)
                continue
            target = _release_for(crd, owner, release, pins)
            _folder_name("release", target)
            document = compact_crd(crd.name, crd.raw, owner, target, item.label, sha)
            chosen.setdefault((owner, target), {})[crd.name] = document
    if not chosen:
        raise SchemaImportError(
            "no CustomResourceDefinition found in the input"
            + (
                f" (skipped {len(result.skipped)} of operators gpuplane does not render for)"
                if result.skipped
                else ""
            )
        )
    store = SchemaStore(root)
    try:
        for (owner, target), documents in sorted(chosen.items()):
            result.written.extend(store.write(owner, target, documents))
            result.releases[(owner, target)] = sorted(documents)
    except StoreError as err:
        raise SchemaImportError(str(err)) from err
    return result


def kubectl_crds(context: str | None, kubectl: str = "kubectl", timeout: float = 120) -> Input:
    """`kubectl get crd -o yaml` from the cluster kubectl reaches (or `context`)."""
    binary = shutil.which(kubectl)
    if binary is None:
        raise SchemaImportError(f"{kubectl} is not on PATH: install kubectl, or import CRD files")
    command = [binary, "get", "crd", "-o", "yaml"]
    if context:
        command[1:1] = ["--context", context]
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SchemaImportError(f"{' '.join(command)}: {err}") from err
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SchemaImportError(
            f"{' '.join(command)} failed (exit {done.returncode}): "
            + (message[-1] if message else "no message")
        )
    label = "kubectl get crd" + (f" --context {context}" if context else "")
    return Input(label, done.stdout)


@dataclass(frozen=True, slots=True)
class ReleaseRow:
    """One operator release in the store, and which clusters pin it."""

    operator: str
    title: str
    release: str
    kinds: tuple[str, ...]
    sources: tuple[str, ...]
    pinned_by: tuple[str, ...]


def store_rows(root: Path, platform: Platform | None) -> list[ReleaseRow]:
    """What the store holds, per operator release, oldest release first."""
    store = SchemaStore(root)
    try:
        entries = store.entries()
    except StoreError as err:
        raise SchemaImportError(str(err)) from err
    grouped: dict[tuple[str, str], list[Any]] = {}
    for entry in entries:
        grouped.setdefault((entry.operator, entry.release), []).append(entry)
    rows = []
    for (operator, release), items in sorted(
        grouped.items(), key=lambda kv: (kv[0][0], release_key(kv[0][1]))
    ):
        pinned_by: tuple[str, ...] = ()
        if platform is not None:
            pinned_by = tuple(
                sorted(
                    name
                    for name, c in platform.clusters.items()
                    if operator in c.addons and c.addons[operator].version == release
                )
            )
        rows.append(
            ReleaseRow(
                operator=operator,
                title=OPERATOR_TITLES.get(operator, operator),
                release=release,
                kinds=tuple(sorted(f"{e.group}/{e.kind}" for e in items)),
                sources=tuple(sorted({e.source for e in items})),
                pinned_by=pinned_by,
            )
        )
    return rows


def missing_pins(root: Path, platform: Platform) -> list[tuple[str, str, str]]:
    """(cluster, operator, release) a cluster pins that the store has no CRDs for, for the
    operators whose kinds gpuplane renders."""
    have = SchemaStore(root).releases()
    rendered_for = set(SCHEMA_OPERATORS.values())
    out = []
    for name, cluster in sorted(platform.clusters.items()):
        for key, addon in sorted(cluster.addons.items()):
            if key in rendered_for and addon.version and addon.version not in have.get(key, ()):
                out.append((name, key, addon.version))
    return out


def import_text(imported: Imported) -> str:
    """What an import wrote, for people."""
    lines = []
    for (operator, release), names in sorted(imported.releases.items()):
        title = OPERATOR_TITLES.get(operator, operator)
        lines.append(
            f"{title} {release}: {len(names)} CRDs in {STORE_DIR / operator / release} "
            f"({', '.join(names)})"
        )
    if imported.skipped:
        lines.append(
            f"skipped {len(imported.skipped)} CRDs of other operators: "
            f"{', '.join(imported.skipped)} (--all keeps them)"
        )
    lines.append(
        f"{len(imported.written)} files written; commit {STORE_DIR} so that CI checks the same "
        "schemas"
        if imported.written
        else "the store already held these CRDs: nothing written"
    )
    return "".join(f"{line}\n" for line in lines)


def list_text(rows: Sequence[ReleaseRow], missing: Sequence[tuple[str, str, str]]) -> str:
    """`schemas list` for people: each release, then each pinned release the store lacks."""
    lines = [] if rows else [f"{STORE_DIR}: empty"]
    for r in rows:
        pinned = f"pinned by {', '.join(r.pinned_by)}" if r.pinned_by else "pinned by no cluster"
        lines.append(f"{r.title} {r.release} ({r.operator}), {pinned}: {len(r.kinds)} kinds")
        lines.append(f"  kinds: {', '.join(r.kinds)}")
        lines.append(f"  from: {', '.join(r.sources)}")
    for cluster, operator, release in missing:
        lines.append(
            f"missing: {cluster} pins {OPERATOR_TITLES.get(operator, operator)} {release}; its "
            f"objects go unchecked until `gpuplane schemas import CRDS --release {release}` "
            f"(or `gpuplane schemas pull --cluster {cluster}`)"
        )
    return "".join(f"{line}\n" for line in lines)


def list_json(
    rows: Sequence[ReleaseRow], missing: Sequence[tuple[str, str, str]]
) -> dict[str, Any]:
    """`schemas list --format json`."""
    return {
        "store": str(STORE_DIR),
        "releases": [
            {
                "operator": r.operator,
                "release": r.release,
                "kinds": list(r.kinds),
                "sources": list(r.sources),
                "pinnedBy": list(r.pinned_by),
            }
            for r in rows
        ],
        "missing": [{"cluster": c, "operator": o, "release": v} for c, o, v in missing],
    }


__all__ = [
    "STORE_DIR",
    "UNPINNED",
    "Imported",
    "Input",
    "ReleaseRow",
    "SchemaImportError",
    "import_crds",
    "import_text",
    "kubectl_crds",
    "list_json",
    "list_text",
    "missing_pins",
    "pinned_releases",
    "read_inputs",
    "store_rows",
]
