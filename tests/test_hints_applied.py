"""Every hint, applied, validates: no finding of its rule and no new error either.

tests/cases/hints/cases.yaml holds the cases: a broken edit of the example platform, the rule
it must raise, and the edit a user makes by following that rule's hint literally. The check is
the platform after the fix, not the hint's wording.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.test_finding_positions import apply_edits, findings

CASES = Path(__file__).parent / "cases" / "hints" / "cases.yaml"
TABLE: list[dict[str, Any]] = YAML(typ="safe").load(CASES.read_text())


@pytest.mark.parametrize("case", TABLE, ids=[c["name"] for c in TABLE])
def test_hint_applied_validates(case: dict[str, Any], platform: Path, gpuplane) -> None:
    apply_edits(platform, case["file"], case["break"])
    broken = [f for f in findings(gpuplane, platform) if f["level"] == "error"]
    assert {f["rule"] for f in broken} - set(case.get("also", [])) == {case["rule"]}, broken
    hints = [f.get("hint") or "" for f in broken if f["rule"] == case["rule"]]
    assert all(case["says"] in hint for hint in hints), hints
    apply_edits(platform, case["file"], case["fix"])
    errors = [f for f in findings(gpuplane, platform) if f["level"] == "error"]
    assert errors == [], errors
