"""A disk cache of parsed CRD files, keyed by their content.

Parsing YAML is most of a render's time: the Argo Workflows CRDs alone are 11 MB, seconds of
PyYAML on every `gpuplane render`, `diff` and pre-commit run. Their parsed documents are plain JSON
data, and JSON loads about twenty times faster, so the first parse of a file's exact bytes is kept
as JSON under the user's cache folder and read from there afterwards. The key is a SHA-256 of the
file's bytes (and this cache's format), so an edited or replaced CRD is parsed again; an entry
that cannot be read, or a document JSON would not give back exactly, is simply not used.
See docs/output-validation.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_ENV = "GPUPLANE_CACHE_DIR"
"""Where the cache lives; set to an empty string to turn it off."""
FORMAT = "crd-v1"
"""Part of every key: a change to how CRD files are parsed must not read old entries."""


def cache_dir() -> Path | None:
    """`$GPUPLANE_CACHE_DIR`, else `$XDG_CACHE_HOME/gpuplane`, else `~/.cache/gpuplane`; None
    when turned off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuplane"


def _entry(raw: bytes) -> Path | None:
    """Where the cache keeps the documents of a file whose bytes are `raw`; None when it is off."""
    folder = cache_dir()
    return None if folder is None else folder / f"{FORMAT}-{hashlib.sha256(raw).hexdigest()}.json"


def holds(raw: bytes) -> bool:
    """Whether the cache has an entry for a file of these bytes (not whether it reads back)."""
    entry = _entry(raw)
    return entry is not None and entry.is_file()


def documents(raw: bytes, parse: Callable[[], list[Any]]) -> list[Any]:
    """The parsed documents of a file whose bytes are `raw`: from the cache, or `parse()`d and
    then kept there. The cache never decides an error: `parse` raises as it would without it."""
    entry = _entry(raw)
    if entry is None:
        return parse()
    try:
        cached = json.loads(entry.read_bytes())
    except (OSError, ValueError):
        cached = None
    if isinstance(cached, list):
        return cached
    parsed = parse()
    _keep(entry, parsed)
    return parsed


def _keep(entry: Path, parsed: list[Any]) -> None:
    """Write the entry atomically, only when JSON gives the documents back exactly (a YAML
    timestamp or a non-string key would not survive); a cache that cannot be written is none."""
    try:
        text = json.dumps(parsed, separators=(",", ":"), allow_nan=False)
        if json.loads(text) != parsed:
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(name, entry)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
    except (OSError, TypeError, ValueError):
        return
