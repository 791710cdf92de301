"""Reading a user's data file (a workload trace, a usage export) as text, never more of it than
a limit, with why it cannot be read as a finding at the byte where it fails."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from renderer.findings.diagnostics import Diagnostic, Location


@dataclass(frozen=True)
class TextLimit:
    """What one kind of file may weigh, and what its findings say."""

    rule: str
    """The rule a file that cannot be read is reported under (`trace-unreadable`, ...)."""
    most_bytes: int
    too_large_hint: str
    """What to do with a file over `most_bytes`."""


def read_bounded_text(path: Path, display: str, limit: TextLimit) -> str | Diagnostic:
    """The file as text (a UTF-8 BOM dropped), or why it cannot be read: never more than
    `limit.most_bytes` + 1 bytes are read, whatever the file claims."""
    where = Location(display, 1, 1)
    try:
        if not path.is_file():
            return Diagnostic(limit.rule, "not a regular file", where)
        with path.open("rb") as stream:
            raw = stream.read(limit.most_bytes + 1)
    except OSError as err:
        return Diagnostic(limit.rule, f"cannot read file: {err.strerror}", where)
    if len(raw) > limit.most_bytes:
        message = f"file is larger than {limit.most_bytes:,} bytes"
        return Diagnostic(limit.rule, message, where, hint=limit.too_large_hint)
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        return Diagnostic(
            limit.rule,
            f"byte 0x{raw[err.start]:02x} is not valid UTF-8",
            Location(display, line, col),
            hint="save the file as UTF-8",
        )
