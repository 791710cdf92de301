"""The one JSON envelope of every `gpuplane ... --format json` (docs/machine-readable-output.md,
schemas/output/envelope.schema.json): `schemaVersion`, the `command` that wrote it, its
`findings` in one shape, then the command's own fields.

A tool reads any command's output the same way: check `schemaVersion`, look at `findings`
(`level` error or warning, at `file:line:column` relative to the repository's root), then read
the fields of the command it ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from renderer.findings.diagnostics import Diagnostic

SCHEMA_VERSION: Final = 2
"""The envelope's version (1 was each command's own `version` or `schemaVersion`); bumped when
a key of the envelope or of a command's fields is renamed or changes meaning."""

ENVELOPE_KEYS: Final = ("schemaVersion", "command", "findings")


def finding_json(d: Diagnostic) -> dict[str, Any]:
    """A finding as every command's JSON writes it: the rule, its level, the message, the place
    (the file relative to the repository's root; line and column from 1, 0 when unknown), the
    notes with their places, and the hint (null when none)."""
    return {
        "rule": d.rule,
        "level": d.severity.value,
        "message": d.message,
        "file": d.at.file,
        "line": d.at.line,
        "column": d.at.col,
        "notes": [
            {"message": n, "file": w.file, "line": w.line, "column": w.col} for n, w in d.notes
        ],
        "hint": d.hint,
    }


def envelope(
    command: str, fields: Mapping[str, Any], findings: Sequence[Diagnostic] = ()
) -> dict[str, Any]:
    """The document `command` prints with `--format json`: the envelope, then `fields` (which
    must not use the envelope's keys)."""
    clash = sorted(set(fields) & set(ENVELOPE_KEYS))
    if clash:
        raise ValueError(f"{command}: its JSON fields {clash} are the envelope's own")
    return {
        "schemaVersion": SCHEMA_VERSION,
        "command": command,
        "findings": [finding_json(d) for d in findings],
        **fields,
    }


def check_envelope(data: Mapping[str, Any], command: str) -> None:
    """Raise ValueError unless `data` is `command`'s JSON in this envelope version (for readers
    of a kept document, such as `diff`'s report rendered again from its JSON)."""
    if data.get("schemaVersion") != SCHEMA_VERSION:
        raise ValueError(
            f"unsupported {command} document: schemaVersion {data.get('schemaVersion')!r}, "
            f"this gpuplane reads {SCHEMA_VERSION}"
        )
    if data.get("command") != command:
        raise ValueError(f"not a {command} document: command {data.get('command')!r}")
