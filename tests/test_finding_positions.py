"""Findings point at the offending key or value, at a line and column written from the input.

tests/cases/positions/cases.yaml holds the cases: an edit of the example platform, the rule it
must raise and a piece of text of the edited file; the finding must start where that text does.
The expected positions come from the input files, never from gpuplane's output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import Result, edit_once

CASES = Path(__file__).parent / "cases" / "positions" / "cases.yaml"
TABLE: list[dict[str, Any]] = YAML(typ="safe").load(CASES.read_text())


def _expand(text: str) -> str:
    """`LONG<n>`: a description of n characters, too long for any input's schema."""
    return re.sub(r"LONG([0-9]+)", lambda m: "x" * int(m.group(1)), text)


def apply_edits(platform: Path, default_file: str, edits: list[dict[str, str]]) -> None:
    """Each edit's `old` must occur once in its `file` (the case's, unless it names one)."""
    for edit in edits:
        edit_once(platform / edit.get("file", default_file), edit["old"], _expand(edit["new"]))


def position_of(text: str, piece: str) -> tuple[int, int]:
    """The 1-based line and column where `piece`, which must occur once, starts in `text`."""
    assert text.count(piece) == 1, f"{piece!r} must occur once"
    start = text.index(piece)
    return text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1


def findings(gpuplane: Callable[..., Result], platform: Path) -> list[dict[str, Any]]:
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    document = json.loads(result.output)
    listed = document.get("findings", document.get("diagnostics", document))
    assert isinstance(listed, list), result.output
    return listed


def at(finding: dict[str, Any]) -> tuple[str, int, int]:
    """(file, line, column) of a JSON finding, flat or under `location`."""
    where = finding.get("location", finding)
    return where["file"], where["line"], where.get("column", where.get("col", 0))


@pytest.mark.parametrize("case", TABLE, ids=[c["name"] for c in TABLE])
def test_finding_position(case: dict[str, Any], platform: Path, gpuplane) -> None:
    apply_edits(platform, case["file"], case["edits"])
    line, col = position_of((platform / case["file"]).read_text(), case["at"])
    col += case.get("skip", 0)
    found = [at(f) for f in findings(gpuplane, platform) if f["rule"] == case["rule"]]
    assert (case["file"], line, col) in found, found
