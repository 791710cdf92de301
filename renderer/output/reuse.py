"""What one render found about an object, kept for the next render of the same body.

A cluster that a change reaches is rendered again whole, but most of its objects come out as
they were: `CheckMemo` keeps each object's check by its body (`body_key`), so that an object
whose body did not change is not validated again (the render index keeps the memo between
runs: `renderer.commands.render_index`).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from renderer.output.manifest import Manifest, Values
from renderer.output.transitions import CommittedTree
from renderer.output.validation import Checked, OutputValidator, Pin

__all__ = ["CheckMemo", "body_key", "made_of_files"]


def body_key(body: Any) -> bytes | None:
    """What identifies an object's body, for reusing what was found about the same body: the
    SHA-256 of its pickle (every value and its type, in order; equal bodies may pickle apart,
    which only misses), None when it cannot be pickled."""
    try:
        return hashlib.sha256(pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)).digest()
    except Exception:  # an object no render should hold: never reused
        return None


def made_of_files(
    cluster: str,
    manifests: Sequence[Manifest],
    keys: Sequence[bytes | None],
    values: Sequence[Values],
    value_keys: Sequence[bytes | None] = (),
) -> dict[str, bytes]:
    """What each object and values file of a cluster's folder is made from: its body
    (`body_key`; `keys`, the objects' in order; `value_keys`, the values files', worked out
    here when not given), its source file (in its header) and a values file's comment. The same bytes here are the same bytes in the file; a path two objects
    claim (a clash, an error) gets none."""
    made: dict[str, bytes] = {}
    twice: set[str] = set()
    parts: list[tuple[str, bytes | None, str]] = [
        (f"{cluster}/{m.path}", key, m.source.file) for m, key in zip(manifests, keys, strict=True)
    ]
    if not value_keys:
        value_keys = [body_key(v.body) for v in values]
    parts.extend(
        (f"{cluster}/{v.path}", key, f"{v.source.file}\0{v.comment}")
        for v, key in zip(values, value_keys, strict=True)
    )
    seen: set[str] = set()
    for path, key, rest in parts:
        if path in seen:
            twice.add(path)
        seen.add(path)
        if key is not None:
            made[path] = key + rest.encode()
    return {path: made_of for path, made_of in made.items() if path not in twice}


_PASSED: tuple[Checked, None, bool] = (Checked([]), None, False)
"""What most objects' checks are: one shared entry, which the index pickles once."""

NO_TREE = "\0no committed tree"
"""The version of a check that asked for its old self with no committed tree to read it from
(a workload template, which nothing applies; a render without `rendered/`): it met no old self,
so it is what any check of the same body without a committed tree finds. No `version_of`
holds a NUL."""


@dataclass(slots=True)
class CheckMemo:
    """Each object's check from the cluster's last render, by its body (`body_key`), so that an
    object whose body did not change is not validated again. Valid only where everything else
    the check reads is the same: gpuplane, the CRDs, the cluster's Kubernetes version and
    operator pins (the caller's `context`); and, for an object whose CRD has transition rules,
    the committed file its old self was read from (its blob id or stat), or, checked without a
    committed tree, only by another check without one (`NO_TREE`); else not reused."""

    before: Mapping[bytes, tuple[Checked, str | None, bool]]
    """body key -> (the check, the version of the object's committed file, whether the check
    asked for the old self)."""
    now: dict[bytes, tuple[Checked, str | None, bool]] = field(default_factory=dict)
    """What this render checked or reused, for the next one."""

    def check(
        self,
        validator: OutputValidator,
        key: bytes | None,
        manifest: Manifest,
        cluster: str,
        kubernetes_version: str,
        pin_of: Callable[[str, str], Pin],
        previous: CommittedTree | None,
    ) -> Checked:
        earlier = self.before.get(key) if key is not None else None
        if earlier is not None:
            checked, version, asked = earlier
            if not asked or _same_old_self(version, previous, f"{cluster}/{manifest.path}"):
                self.now[key] = earlier  # type: ignore[index]
                return checked
        seen: list[str | None] = []

        def old_of() -> Mapping[str, Any] | None:
            if previous is None:
                seen.append(None)
                return None
            found, version = previous.old_self_from(cluster, manifest)
            seen.append(version)
            return found

        checked = validator.check(manifest.body, kubernetes_version, pin_of, old_of)
        if key is not None and not seen:
            self.now[key] = _PASSED if checked == _PASSED[0] else (checked, None, False)
        elif key is not None and previous is None:
            self.now[key] = (checked, NO_TREE, True)
        elif key is not None and seen[0] is not None:
            self.now[key] = (checked, seen[0], True)
        return checked


def _same_old_self(version: str | None, previous: CommittedTree | None, path: str) -> bool:
    """Whether a check that read an old self of `version` reads the same one now: no committed
    tree then and now, or the object's own committed file at the same version."""
    if previous is None:
        return version == NO_TREE
    return version is not None and version != NO_TREE and previous.version_of(path) == version
