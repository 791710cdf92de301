"""Kueue v0.19.2's own preemption tests (tests/kueue_conformance/preemption/*.yaml, transcribed
from pkg/scheduler/preemption's TestPreemption, TestHierarchicalPreemptions and
TestFairPreemptions) on the admission engine's preemptor: every modelled case agrees with
Kueue's expected targets and reasons."""

from __future__ import annotations

import pytest

from tests.kueue_conformance import run_preemption
from tests.kueue_conformance.common import CaseResult, load_cases

KNOWN_DISAGREEMENTS: dict[str, str] = {}
"""Case name -> why the engine differs from Kueue (xfail); none today."""

RESULTS = {r.name: r for r in run_preemption.results()}


def test_enough_cases_are_ported() -> None:
    cases = load_cases(run_preemption.FOLDER)
    assert len(cases) >= 80
    assert len({c.name for c in cases}) == len(cases), "case names repeat"
    files = {c.file.stem for c in cases}
    assert files == {"classical", "hierarchical", "fair_sharing"}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_case_agrees_with_kueue(name: str) -> None:
    result: CaseResult = RESULTS[name]
    if name in KNOWN_DISAGREEMENTS:
        pytest.xfail(KNOWN_DISAGREEMENTS[name])
    assert result.modelled, result.why
    assert result.agrees, result.why
