"""Problems as data: every stage returns Diagnostics; only the CLI prints them."""

from __future__ import annotations

import difflib
import marshal
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

PathKey = tuple[str | int, ...]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True, order=True)
class Location:
    """A place in an input file: repository-relative path, 1-based line and column."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"

    def __reduce__(self) -> tuple[type[Location], tuple[str, int, int]]:
        """Pickled as a constructor call: twice as fast to read back as a frozen dataclass's
        state (the render index keeps every input's positions)."""
        return (Location, (self.file, self.line, self.col))


@dataclass(frozen=True, slots=True)
class SourceMap:
    """Where each value (and each mapping key) of one input file was written."""

    file: str
    values: Mapping[PathKey, Location]
    keys: Mapping[PathKey, Location]

    def locate(self, path: PathKey) -> Location:
        """The position of the value at `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            found = self.values.get(path[:end])
            if found is not None:
                return found
        return Location(self.file, 1, 1)

    def locate_key(self, path: PathKey) -> Location:
        """The position of the key that holds `path` (for "unknown field" and the like); for
        a key not written, that of its nearest written ancestor's key (`spec:` for a missing
        `spec.resources`, where it would go), not the ancestor's first child."""
        for end in range(len(path), 0, -1):
            found = self.keys.get(path[:end])
            if found is not None:
                return found
        return self.locate(path)

    @classmethod
    def of_marks(
        cls,
        file: str,
        values: dict[PathKey, tuple[int, int]],
        keys: dict[PathKey, tuple[int, int]],
    ) -> SourceMap:
        """The map of (line, column) positions the loader found, made `Location`s only when
        first looked in (`_Marks`): a load worker's positions go back to the parent packed,
        and 150,000 Locations made for that alone were a sixth of loading."""
        return cls(file, _Marks(file, values), _Marks(file, keys))

    def __reduce__(self) -> tuple[Callable[..., SourceMap], tuple[str, bytes, bytes]]:
        """Pickled as each map's paths, lines and columns in one marshal string, read back
        into dictionaries only when first looked in: the render index keeps every input's
        positions, and most files' are never asked for (a render that finds nothing asks for
        those of the objects it renders)."""
        file = self.file
        return (_unpacked, (file, _packed(file, self.values), _packed(file, self.keys)))


def _packed(file: str, locations: Mapping[PathKey, Location]) -> bytes:
    """(path, line, column), and the file where it is not the map's (marshal's version 2,
    which writes no references, so the same map gives the same bytes)."""
    if isinstance(locations, _Packed) and locations.file == file:
        return locations.packed
    if isinstance(locations, _Marks) and locations.file == file:
        return marshal.dumps([(p, line, col) for p, (line, col) in locations.marks.items()], 2)
    return marshal.dumps(
        [
            (p, at.line, at.col) if at.file == file else (p, at.line, at.col, at.file)
            for p, at in locations.items()
        ],
        2,
    )


def _unpacked(file: str, values: bytes, keys: bytes) -> SourceMap:
    return SourceMap(file, _Packed(file, values), _Packed(file, keys))


class _Packed(Mapping[PathKey, Location]):
    """A SourceMap's positions as pickled: read into a dictionary of the packed entries when
    first looked in, and each made a `Location` only when it is asked for (a team file's 80
    positions made Locations at its first lookup were a fifth of a cluster's templates)."""

    __slots__ = ("_found", "file", "packed")

    def __init__(self, file: str, packed: bytes) -> None:
        self.file = file
        self.packed = packed
        self._found: dict[PathKey, tuple[Any, ...]] | None = None

    def _entries(self) -> dict[PathKey, tuple[Any, ...]]:
        if self._found is None:
            self._found = {entry[0]: entry for entry in marshal.loads(self.packed)}
        return self._found

    def _location(self, entry: tuple[Any, ...]) -> Location:
        return Location(entry[3] if len(entry) == 4 else self.file, entry[1], entry[2])

    def __getitem__(self, path: PathKey) -> Location:
        return self._location(self._entries()[path])

    def get(self, path: PathKey, default: Any = None) -> Any:
        entry = self._entries().get(path)
        return default if entry is None else self._location(entry)

    def __iter__(self) -> Iterator[PathKey]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())


class _Marks(Mapping[PathKey, Location]):
    """A SourceMap's positions as the loader found them, (line, column) by path, in the map's
    file: each made a `Location` when it is asked for, and pickled without them (`_packed`)."""

    __slots__ = ("file", "marks")

    def __init__(self, file: str, marks: dict[PathKey, tuple[int, int]]) -> None:
        self.file = file
        self.marks = marks

    def __getitem__(self, path: PathKey) -> Location:
        line, col = self.marks[path]
        return Location(self.file, line, col)

    def get(self, path: PathKey, default: Any = None) -> Any:
        found = self.marks.get(path)
        return default if found is None else Location(self.file, found[0], found[1])

    def __iter__(self) -> Iterator[PathKey]:
        return iter(self.marks)

    def __len__(self) -> int:
        return len(self.marks)


_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})

LEGACY_COMMAND = "##["
"""A GitHub Actions runner obeys `##[command]` anywhere in a line (actions/runner
`ActionCommand.TryParse`, tried after `TryParseV2`), and `::command::` at the start of a line
after leading whitespace (`TryParseV2` trims the line first)."""


def inert(text: str) -> str:
    """Text from an input file made safe to print: every control, format (bidi, zero-width) or
    line-separator character becomes a visible escape (`\\x1b`, `\\n`, `\\u202e`), so a value
    cannot move the cursor, retitle a terminal, write its clipboard, start a second line that a
    CI log would read as a workflow command (`::error ...`), or reorder what a reviewer sees.

    The GitHub Actions runner's own two forms are defused too, wherever the text ends up in a
    line: `##[` becomes `##\\x5b`, and a text that starts (after whitespace) with `::` gets its
    first colon as `\\x3a`. Applied to a whole printed line, no line of it is a command."""
    if text.isascii() and text.isprintable():
        return _no_commands(text)
    out = []
    for char in text:
        if unicodedata.category(char) in _INVISIBLE:
            code = ord(char)
            out.append(
                "\\n"
                if char == "\n"
                else "\\t"
                if char == "\t"
                else f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
            )
        else:
            out.append(char)
    return _no_commands("".join(out))


def _no_commands(text: str) -> str:
    if LEGACY_COMMAND in text:
        text = text.replace(LEGACY_COMMAND, "##\\x5b")
    stripped = text.lstrip()
    if stripped.startswith("::"):
        text = text[: len(text) - len(stripped)] + "\\x3a" + stripped[1:]
    return text


def inert_lines(text: str) -> str:
    """`inert` on each line of a printed text (a command's text form): what the command wrote
    itself keeps its line breaks, and no line is one a CI runner obeys."""
    return "\n".join(inert(line) for line in text.split("\n"))


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem: which rule found it, where, what to do about it.

    Its texts are made `inert` when it is built: they quote input values, and every report form
    (text, GitHub annotations, JSON, SARIF, JUnit, Markdown) prints them.
    """

    rule: str
    message: str
    at: Location
    notes: tuple[tuple[str, Location], ...] = ()
    hint: str | None = None
    severity: Severity = field(default=Severity.ERROR)

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", inert(self.message))
        if self.hint is not None:
            object.__setattr__(self, "hint", inert(self.hint))
        if any(inert(n) != n for n, _ in self.notes):
            object.__setattr__(self, "notes", tuple((inert(n), w) for n, w in self.notes))

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.at.file, self.at.line, self.at.col, self.rule, self.message)


def sort_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Report order: by file, position, then rule and message, dropping exact repeats; two that
    differ only in notes, hint or severity by those, so that the order never depends on the
    order they were found in (the render index finds the policy's in another order)."""
    unique = {(d.sort_key(), d.notes, d.hint, d.severity): d for d in diagnostics}
    return [unique[k] for k in sorted(unique, key=lambda k: (k[0], k[1], k[2] or "", k[3].value))]


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)


def closest(typed: str, known: Iterable[str]) -> str | None:
    """The known name closest to `typed`, for "did you mean" hints; None when nothing is close.

    A name that starts with what was typed wins ("prod" -> "production"); otherwise difflib's
    closest match, compared without regard to case.
    """
    names = sorted(set(known))
    lowered = typed.strip().lower()
    if not lowered:
        return None
    prefixed = [n for n in names if n.lower().startswith(lowered)]
    if prefixed:
        return prefixed[0]
    by_lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(lowered, list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def finding_lines(
    diagnostics: Sequence[Diagnostic], clean: Callable[[str], str] = str
) -> list[str]:
    """`file:line:col: error[rule] message`, then notes and a hint, one finding after another;
    `clean` is applied to each message and hint (acceptance passes text from result files
    through it)."""
    lines = []
    for d in diagnostics:
        lines.append(f"{inert(str(d.at))}: {d.severity.value}[{d.rule}] {clean(d.message)}")
        lines.extend(f"  note: {inert(str(where))}: {note}" for note, where in d.notes)
        if d.hint:
            lines.append(f"  hint: {clean(d.hint)}")
    return lines
