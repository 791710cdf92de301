"""`gpuplane explain`: every rule says why it exists, how to satisfy it and where it lives, and
`--list` shows every summary whole, in a 100-column terminal."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from renderer.cli.loading import load_every_rule
from renderer.commands import explain
from renderer.findings import rules as registry
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
        where = text.index("\n\nWhere:\n")
        assert " ".join(text[:how].split()).find(doc.summary) > 0, doc.id
        if doc.why:
            assert text.index("\nWhy:\n") < how, doc.id
        assert " ".join(text[how:where].split()).endswith(" ".join(doc.fix.split())), doc.id
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


REPO = Path(__file__).resolve().parents[1]


def where_part(text: str) -> dict[str, list[str]]:
    """The `Where:` part of an explanation: each label's files, continuation lines joined."""
    rows: dict[str, list[str]] = {}
    label = ""
    for line in text[text.index("\n\nWhere:\n") + len("\n\nWhere:\n") :].splitlines():
        if not line.startswith(" "):
            label, line = line.split(maxsplit=1)
        rows.setdefault(label, []).extend(f for f in re.split(r",\s*", line.strip()) if f)
    return rows


@pytest.fixture
def places(rules: list[RuleDoc], gpuplane: Any) -> dict[str, dict[str, list[str]]]:
    """Each rule's `Where:` part, as `gpuplane explain RULE` prints it."""
    return {doc.id: where_part(gpuplane("explain", doc.id).output) for doc in rules}


def test_where_names_the_module_that_checks_the_rule(
    rules: list[RuleDoc], places: dict[str, dict[str, list[str]]]
) -> None:
    for doc in rules:
        rows = places[doc.id]
        assert set(rows) <= {"module", "docs", "tests"}, (doc.id, rows)
        [module] = rows["module"]
        path = REPO / module
        # the file that registers it: a policy rule's topic module, not the decorator's
        assert path.is_file() and not Path(module).is_absolute(), (doc.id, module)
        assert module.startswith("renderer/") and module.endswith(".py"), (doc.id, module)
        assert doc.id in path.read_text(encoding="utf-8"), (doc.id, module)


def test_where_names_the_pages_and_tests_that_mention_the_rule(
    rules: list[RuleDoc], places: dict[str, dict[str, list[str]]]
) -> None:
    for doc in rules:
        rows = places[doc.id]
        for label, folder, suffix in (("docs", "docs/", ".md"), ("tests", "tests/", ".py")):
            for name in rows.get(label, []):
                assert name.startswith(folder) and name.endswith(suffix), (doc.id, name)
                assert doc.id in (REPO / name).read_text(encoding="utf-8"), (doc.id, name)
    # the pages are found, not made up: a page known to explain a rule is listed for it
    page = places["schema-unchecked"]
    assert "docs/schema-store.md" in page["docs"]
    assert "tests/test_schema_store.py" in page["tests"]


def test_a_policy_rule_records_its_topic_module_not_the_decorator(rules: list[RuleDoc]) -> None:
    doc = next(r for r in rules if r.id == "quota-exceeds-pool")
    assert explain.source_path(doc) == "renderer/policy/quotas.py"


def test_document_rule_records_the_calling_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "RULES", {})
    registry.document_rule("made-up", "policy", "A summary.\n\nTo satisfy it: set `x`.")
    assert explain.source_path(registry.RULES["made-up"]) == "tests/test_explain.py"


def test_without_docs_or_tests_beside_the_package_where_names_only_the_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An installed wheel: site-packages holds `renderer/` and no docs/ or tests/."""
    (tmp_path / "renderer" / "policy").mkdir(parents=True)
    monkeypatch.setattr(explain, "ROOT", tmp_path)
    doc = parse_rule_text("made-up", "policy", "S.", str(tmp_path / "renderer/policy/x.py"))
    assert (
        explain.explain_text(doc)
        == "made-up (policy)\n\nS.\n\nWhere:\nmodule  renderer/policy/x.py"
    )
