"""The registry of rule ids: every finding names one, and `gpuplane explain RULE` prints its text.

A rule's text has three parts, so that `explain` answers both "why does this exist?" and "what
do I change?": the first paragraph is its one-line summary, the paragraphs after it say why the
rule exists, and the section that starts with `To satisfy it:` says which field of which file to
change and what it accepts. The section may also be passed on its own (`document_rule(fix=...)`).
`explain` ends with where the rule lives: the module that checks it (its file is recorded when
the rule is registered), and, in a checkout, the docs/ pages and test files that name it.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

FIX_MARK = "To satisfy it:"
"""The words that open a rule's how-to-satisfy section, in a docstring and in `explain`."""

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True, slots=True)
class RuleDoc:
    """A rule's stable id, the pipeline stage that checks it, why it exists and how to satisfy it.

    `text` is the whole explanation as written; `summary`, `why` and `fix` are its parts;
    `source` is the file of the module that registered it (empty when unknown)."""

    id: str
    stage: str
    text: str
    summary: str
    why: str
    fix: str
    source: str = ""


RULES: dict[str, RuleDoc] = {}


def parse_rule_text(rule_id: str, stage: str, text: str, source: str = "") -> RuleDoc:
    """Split a rule's text into summary (first paragraph, on one line), why (the paragraphs up
    to the `To satisfy it:` section) and fix (that section, without the words that open it)."""
    cleaned = inspect.cleandoc(text)
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(cleaned) if p.strip()]
    if not paragraphs:
        paragraphs = [rule_id]
    summary = " ".join(paragraphs[0].split())
    body = paragraphs[1:]
    at = next((i for i, p in enumerate(body) if p.startswith(FIX_MARK)), len(body))
    why = "\n\n".join(body[:at])
    fix = "\n\n".join(body[at:]).removeprefix(FIX_MARK).strip()
    return RuleDoc(rule_id, stage, cleaned, summary, why, fix, source)


def document_rule(
    rule_id: str, stage: str, text: str, fix: str | None = None, *, source: str | None = None
) -> None:
    """Register a rule's explanation; ids are unique across the whole engine.

    `fix`, when given, is the how-to-satisfy section; otherwise `text` carries it after
    `To satisfy it:`. `source` is the file of the module that checks the rule; by default the
    caller's (a decorator that registers on behalf of its function's module passes that one)."""
    if rule_id in RULES:
        raise ValueError(f"rule id {rule_id!r} registered twice")
    if fix is not None:
        text = f"{inspect.cleandoc(text)}\n\n{FIX_MARK} {inspect.cleandoc(fix)}"
    if source is None:
        source = str(sys._getframe(1).f_globals.get("__file__") or "")
    RULES[rule_id] = parse_rule_text(rule_id, stage, text, source)


def explain(rule_id: str) -> RuleDoc | None:
    """The rule's text; only rules whose modules were imported are known (the CLI imports them
    all, so the registry never imports the modules that document rules)."""
    return RULES.get(rule_id)


def all_rules() -> list[RuleDoc]:
    return sorted(RULES.values(), key=lambda r: (r.stage, r.id))


def listing(width: int = 100) -> list[str]:
    """`explain --list`: a header, then one rule a line as `id  stage  summary`, the summary
    wrapped (never cut) under its own column so that every line fits `width`."""
    rules = all_rules()
    header = ("rule", "stage", "what it checks")
    id_width = max([len(header[0]), *(len(r.id) for r in rules)])
    stage_width = max([len(header[1]), *(len(r.stage) for r in rules)])
    indent = id_width + stage_width + 4
    room = max(width - indent, 20)
    lines = [f"{header[0]:<{id_width}}  {header[1]:<{stage_width}}  {header[2]}"]
    for doc in rules:
        wrapped = textwrap.wrap(
            doc.summary, room, break_long_words=False, break_on_hyphens=False
        ) or [""]
        lines.append(f"{doc.id:<{id_width}}  {doc.stage:<{stage_width}}  {wrapped[0]}")
        lines.extend(" " * indent + more for more in wrapped[1:])
    return lines


Places = Sequence[tuple[str, Sequence[str]]]
"""Where a rule lives, as `(label, files)` rows: `module` (the file that checks it), `docs` and
`tests` (the pages and test files that name it); `renderer/commands/explain.py` finds them."""


def where(places: Places, width: int = 100) -> str:
    """`explain`'s `Where:` part: a row per label that has files, the files wrapped under their
    column so that every line fits `width`."""
    lines = ["Where:"]
    for label, files in places:
        if files:
            lines.append(
                textwrap.fill(
                    ", ".join(files),
                    width,
                    initial_indent=f"{label:<8}",
                    subsequent_indent=" " * 8,
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
    return "\n".join(lines)


def explanation(doc: RuleDoc, places: Places = ()) -> str:
    """`explain RULE`: id and stage, the summary, why the rule exists, how to satisfy it, and
    where it lives when `places` says."""
    summary = textwrap.fill(doc.summary, 100, break_long_words=False, break_on_hyphens=False)
    parts = [f"{doc.id} ({doc.stage})", summary]
    if doc.why:
        parts.append(f"Why:\n{doc.why}")
    if doc.fix:
        parts.append(f"{FIX_MARK} {doc.fix}")  # the section as written, so its wrapping holds
    if places:
        parts.append(where(places))
    return "\n\n".join(parts)
