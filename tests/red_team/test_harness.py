"""The bench itself: the example platform is clean, and an edit is seen."""

from __future__ import annotations

from tests.red_team.harness import Attempt, errors, refused_on


def test_the_example_platform_validates_clean(attempt: Attempt) -> None:
    assert errors(attempt.findings()) == []


def test_an_edit_to_a_team_file_is_seen_and_located(attempt: Attempt) -> None:
    attempt.edit("teams/llm.yaml", "podSecurity: restricted\n", "podSecurity: baseline\n")
    found = refused_on(attempt.findings(), "teams/llm.yaml", "pod-security-loosened")
    assert found.at.line > 0
