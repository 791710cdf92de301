"""`gpuplane explain RULE`: a rule's text, then where the rule lives.

The module that checks a rule is the file recorded when it was registered (`document_rule`
records its caller's, `@rule` its function's). The docs/ pages and the test files that name the
rule id are found by reading docs/ and tests/ beside the package: in a checkout they are there,
in an installed wheel they are not, and `Where:` names the module only.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from renderer.findings.rules import Places, RuleDoc, explanation

ROOT = Path(__file__).resolve().parents[2]
"""The folder that holds the `renderer` package: a checkout's root, or site-packages."""


def source_path(doc: RuleDoc) -> str:
    """The file of the module that checks the rule, relative to `ROOT` (`renderer/policy/
    quotas.py`); as recorded when it lies elsewhere, and empty when unknown."""
    if not doc.source:
        return ""
    path = Path(os.path.abspath(doc.source))
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else doc.source


@functools.cache
def _texts(place: Path, pattern: str) -> tuple[tuple[str, str], ...]:
    """Each file `place/pattern` as (path relative to `ROOT`, text), read once a process."""
    if not place.is_dir():
        return ()
    return tuple(
        (path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8", errors="replace"))
        for path in sorted(place.glob(pattern))
    )


def naming_files(rule_id: str, folder: str, pattern: str) -> list[str]:
    """The files `ROOT/folder/pattern` that name the rule id as a whole word, relative to
    `ROOT`; none when the folder is not there."""
    word = re.compile(rf"(?<![\w-]){re.escape(rule_id)}(?![\w-])")
    return [
        path
        for path, text in _texts(ROOT / folder, pattern)
        if rule_id in text and word.search(text)
    ]


def places(doc: RuleDoc) -> Places:
    """The rule's module, the docs/ pages that explain it and the test files that trigger it."""
    return [
        ("module", [source_path(doc) or "unknown"]),
        ("docs", naming_files(doc.id, "docs", "*.md")),
        ("tests", naming_files(doc.id, "tests", "*.py")),
    ]


def explain_text(doc: RuleDoc) -> str:
    """What `gpuplane explain RULE` prints."""
    return explanation(doc, places(doc))
