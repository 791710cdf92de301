"""Every hint, applied, validates: no finding of its rule and no new error either.

tests/cases/hints/cases.yaml holds the cases: a broken edit of the example platform, the rule
it must raise, and the edit a user makes by following that rule's hint literally. The check is
the platform after the fix, not the hint's wording. A step edits text in a file
(`{old, new}`, optionally `file`), adds a whole file (`{add: path, text}`), removes one
(`{remove: path}`) or commits the platform as it stands (`{commit: message}`, making it a git
repository first): the base of the change that the capacity gate measures growth against,
judged as on TODAY.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.policy.check import POLICY
from tests.conftest import git
from tests.test_finding_positions import apply_edits, findings

CASES = Path(__file__).parent / "cases" / "hints" / "cases.yaml"
TABLE: list[dict[str, Any]] = YAML(typ="safe").load(CASES.read_text())
TODAY = "2026-03-10"
"""The day the capacity gate judges evidence on (`$GPUPLANE_TODAY`), whatever the clock says."""


def apply_steps(platform: Path, default_file: str, steps: list[dict[str, str]]) -> None:
    """Apply each step in order: an edit, a file added (that must not exist yet) or removed."""
    for step in steps:
        if "add" in step:
            added = platform / step["add"]
            assert not added.exists(), added
            added.parent.mkdir(parents=True, exist_ok=True)
            added.write_text(step["text"])
        elif "remove" in step:
            (platform / step["remove"]).unlink()
        elif "commit" in step:
            if not (platform / ".git").exists():
                git(platform, "-c", "init.defaultBranch=main", "init", "-q")
            git(platform, "add", "-A")
            git(platform, "commit", "-q", "-m", step["commit"])
        else:
            apply_edits(platform, default_file, [step])


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=() if c.get("fast") else pytest.mark.slow, id=c["name"]) for c in TABLE],
)
def test_hint_applied_validates(
    case: dict[str, Any],
    platform: Path,
    gpuplane,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A warning's case (`level: warning`) must raise its rule as a warning, beside no error
    but those in `also`; after the fix neither the warning nor any error is left."""
    if any("commit" in step for step in case["break"] + case["fix"]):
        request.getfixturevalue("git_env")  # git that reads no configuration of the machine
        monkeypatch.setenv("GPUPLANE_TODAY", TODAY)
        monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    level = case.get("level", "error")
    apply_steps(platform, case["file"], case["break"])
    before = findings(gpuplane, platform)
    broken = [f for f in before if f["level"] == "error" or f["rule"] == case["rule"]]
    assert {f["rule"] for f in broken} - set(case.get("also", [])) == {case["rule"]}, broken
    assert {f["level"] for f in broken if f["rule"] == case["rule"]} == {level}, broken
    hints = [f.get("hint") or "" for f in broken if f["rule"] == case["rule"]]
    assert all(case["says"] in hint for hint in hints), hints
    apply_steps(platform, case["file"], case["fix"])
    left = [
        f
        for f in findings(gpuplane, platform)
        if f["level"] == "error" or f["rule"] == case["rule"]
    ]
    assert left == [], left


# Policy rules that no case above applies the hint of yet, each with why: this list may only
# shrink. Every policy rule gives a hint ("To satisfy it:" in its `explain` text); a new rule
# needs a case, or a line here with its reason.
NOT_YET: dict[str, str] = {}


def test_every_policy_rule_has_a_case_or_says_why_not() -> None:
    """Each policy rule's hint is applied by a case, or the rule waits in NOT_YET."""
    covered = {case["rule"] for case in TABLE}
    rules = {r.id for r in POLICY}
    assert sorted(rules - covered - set(NOT_YET)) == [], "add a case or a NOT_YET line"
    assert sorted(set(NOT_YET) & covered) == [], "covered now: remove it from NOT_YET"
    assert sorted(set(NOT_YET) - rules) == [], "not a policy rule"
