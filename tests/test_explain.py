"""`gpuplane explain`: every rule says why it exists and how to satisfy it, and `--list` shows
every summary whole, in a 100-column terminal."""

from __future__ import annotations

from typing import Any

import pytest

from renderer.cli.loading import load_every_rule
from renderer.findings.rules import FIX_MARK, RuleDoc, all_rules, parse_rule_text
from renderer.model import catalog

WIDTH = 100


@pytest.fixture(scope="module")
def rules() -> list[RuleDoc]:
    load_every_rule()  # the registry knows a rule once its module is imported
    found = all_rules()
    assert len(found) > 50, "the rules' modules were not imported"
    return found


def test_every_rule_says_how_to_satisfy_it(rules: list[RuleDoc]) -> None:
    for doc in rules:
        assert doc.summary, doc.id
        assert len(doc.fix.split()) >= 10, f"{doc.id}: no '{FIX_MARK}' section, or a thin one"
        # concrete: it names a field, a value or a command to use, written as code
        assert "`" in doc.fix, f"{doc.id}: the fix names no field, value or command"
        assert FIX_MARK not in doc.why, f"{doc.id}: the fix is mixed into the why"


def test_explain_prints_id_stage_summary_why_and_how(rules: list[RuleDoc], gpuplane: Any) -> None:
    for doc in rules:
        result = gpuplane("explain", doc.id)
        assert result.exit_code == 0, doc.id
        text = result.output
        assert text.startswith(f"{doc.id} ({doc.stage})\n\n"), doc.id
        how = text.index(f"\n{FIX_MARK} ")
        assert " ".join(text[:how].split()).find(doc.summary) > 0, doc.id
        if doc.why:
            assert text.index("\nWhy:\n") < how, doc.id
        assert " ".join(text[how:].split()).endswith(" ".join(doc.fix.split())), doc.id
        assert max(len(line) for line in text.splitlines()) <= WIDTH, doc.id


def test_explain_list_shows_every_summary_whole_in_100_columns(
    rules: list[RuleDoc], gpuplane: Any
) -> None:
    result = gpuplane("explain", "--list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    # each rule starts a line `id  stage  summary...`; indented lines continue its summary
    listed: dict[str, tuple[str, str]] = {}
    current = ""
    for line in lines[1:]:
        if line.startswith(" "):
            stage, summary = listed[current]
            listed[current] = (stage, f"{summary} {line.strip()}")
        else:
            current, stage, summary = line.split(maxsplit=2)
            listed[current] = (stage, summary)
    assert listed == {doc.id: (doc.stage, doc.summary) for doc in rules}


def test_a_summary_is_the_whole_first_paragraph() -> None:
    doc = parse_rule_text(
        "made-up",
        "policy",
        """A summary that a long line
        wraps onto a second.

        Why it exists.

        Second paragraph of why.

        To satisfy it: set `spec.x`.

        An example that belongs to the fix.""",
    )
    assert doc.summary == "A summary that a long line wraps onto a second."
    assert doc.why == "Why it exists.\n\nSecond paragraph of why."
    assert doc.fix == "set `spec.x`.\n\nAn example that belongs to the fix."


def test_a_rule_without_the_section_has_an_empty_fix() -> None:
    doc = parse_rule_text("made-up", "policy", "Only a summary.\n\nAnd why.")
    assert (doc.summary, doc.why, doc.fix) == ("Only a summary.", "And why.", "")


def test_unknown_accelerator_names_every_catalog_key(rules: list[RuleDoc]) -> None:
    doc = next(r for r in rules if r.id == "unknown-accelerator")
    assert all(key in doc.fix for key in catalog.CATALOG), doc.fix


def test_mig_layout_invalid_says_how_to_name_a_layout(gpuplane: Any) -> None:
    text = gpuplane("explain", "mig-layout-invalid").output
    how = text[text.index(FIX_MARK) :]
    for needed in ("spec.mig.layout", "all-balanced", "all-<profile>", "all-1g.10gb.me"):
        assert needed in how, needed
