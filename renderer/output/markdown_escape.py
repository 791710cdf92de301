"""The one Markdown escaper: text from input files inside GitHub-flavoured Markdown (the `diff`
pull-request comment, the generated cluster READMEs, `plan --format markdown`, the acceptance
report) that renders as the same characters and as nothing else.

GitHub reads more than CommonMark in a comment: raw HTML, tables split on `|` before any inline
is parsed, autolinks (`https://`, `www.`, bare e-mail addresses), `@user` and `@org/team`
mentions, `#12` and `GH-12` issue references, `$math$`. So:

- whitespace (newlines included) collapses to single spaces, so a value cannot start a line (no
  heading, list, quote, fence or table row of its own), and what is left invisible is escaped
  by `inert` (which also defuses GitHub Actions workflow commands, as the Markdown is printed to
  the CI log too);
- every character with a Markdown meaning is backslash-escaped (CommonMark lets any ASCII
  punctuation be), so no emphasis, link, image, HTML tag, entity, code span or math forms;
- what GitHub would still turn into a mention, reference or link gets a zero-width space;
- in a table cell `|` is escaped even inside a code span, as the table is split first.
"""

from __future__ import annotations

import re
from typing import Final

from renderer.findings.diagnostics import inert

_SPECIAL: Final = frozenset("\\`*_[]<>#|~&$")
"""Characters escaped wherever they stand: emphasis, links and images (no `[`, no link, and `!`
and `(` mean nothing alone), HTML, entities, code spans, headings, tables, strikethrough, math."""

_LINE_START: Final = re.compile(r"^(?:[-+=>]|\d+[.)])")
"""What makes a list item, a thematic break, a setext underline or a quote at a line's start."""

_ZWSP: Final = "&#8203;"
"""A zero-width space, as an entity: it breaks what GitHub would act on (`@user`, `#12`,
`https://`, `www.`, `GH-12`) both before and after entities are decoded, and shows nothing."""

_LIVE: Final = (
    (re.compile("@"), "@" + _ZWSP),
    (re.compile(r"\\#"), "\\#" + _ZWSP),
    (re.compile("://"), ":" + _ZWSP + "//"),
    (re.compile(r"(?i)\b(www)\."), r"\1" + _ZWSP + "."),
    (re.compile(r"(?i)\b(gh)-(?=[0-9])"), r"\1" + _ZWSP + "-"),
)
"""What GitHub turns into a mention, an issue reference or a link even when its characters
are escaped, each made inert with a zero-width space (after `_escaped`, so `#` is `\\#`)."""


def _one_line(value: object) -> str:
    return inert(" ".join(str(value).split()))


_ENTITIES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
"""Written as entities, not backslash escapes: an entity reads the same inside an HTML block,
where a backslash escape is not read."""


def _escaped(word: str) -> str:
    return "".join(_ENTITIES.get(c) or ("\\" + c if c in _SPECIAL else c) for c in word)


def code(value: object, *, table: bool = False) -> str:
    """A value as one inline code span that no backtick in it can close (the fence is longer
    than its longest run of backticks); in a table cell its `|` and `\\` are escaped too."""
    text = _one_line(value)
    if not text:
        return ""
    if table:
        text = text.replace("\\", "\\\\").replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def text(value: object, *, table: bool = False) -> str:
    """Input text as inline Markdown that reads as written, in a line or a table cell (`|` is
    always escaped, so `table` changes nothing here; it is `code`'s)."""
    escaped = _escaped(_one_line(value))
    for pattern, replacement in _LIVE:
        escaped = pattern.sub(replacement, escaped)
    if start := _LINE_START.match(escaped):
        escaped = escaped[: start.end() - 1] + "\\" + escaped[start.end() - 1 :]
    return escaped


def cell(value: object) -> str:
    """`text` in a table cell."""
    return text(value, table=True)


def html(value: object) -> str:
    """Text inside an HTML element (a `<summary>`), where Markdown is not read but mentions,
    references and autolinks still are: entities, with a zero-width space after each `@` and
    `#` and inside `://` and `www.`."""
    escaped = (
        _one_line(value)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
    )
    escaped = escaped.replace("#", "#" + _ZWSP)  # first: the others add a `#`
    for pattern, replacement in _LIVE[2:]:  # `@` and the links; `#` is not backslashed here
        escaped = pattern.sub(replacement, escaped)
    return escaped.replace("@", "@" + _ZWSP)
