"""Attacks with the values gpuplane itself writes for what no team owns.

The recording rules label every series of a namespace without a team, and every alert on a GPU
no pod holds, with team `platform` and cost centre `platform` (renderer/layers/observability:
`recording._namespace_info`, `alerts.gpu_team`); the acceptance suites' Jobs are charged to cost
centre `platform` (`renderer.model.names.SUITE_COST_CENTER`). A team named `platform`, or
charged to cost centre `platform`, mixes its GPU hours with the platform's in every dashboard
and cost report, and takes (or hides) the platform's alerts.
"""

from __future__ import annotations

import pytest

from tests.red_team.harness import Attempt, refused_on


def line_of(attempt: Attempt, file: str, needle: str) -> int:
    lines = attempt.path(file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def test_a_new_team_named_platform(attempt: Attempt) -> None:
    text = (
        attempt.path("teams/speech.yaml").read_text().replace("name: speech\n", "name: platform\n")
    )
    text = text.replace("name: speech-", "name: platform-")
    attempt.write("teams/platform.yaml", text)
    found = refused_on(attempt.findings(), "teams/platform.yaml", "sentinel-value")
    assert found.message.startswith("team name 'platform' is reserved for gpuplane: it is the ")
    assert "namespace no team owns" in found.message
    assert found.at.line == line_of(attempt, "teams/platform.yaml", "name: platform")


@pytest.mark.parametrize("value", ["platform", "Platform", "PLATFORM", "p1atform", "P1ATF0RM"])
def test_charge_the_team_to_the_platforms_cost_centre(attempt: Attempt, value: str) -> None:
    attempt.edit("teams/vision.yaml", "costCenter: CC-1042", f"costCenter: {value}")
    found = refused_on(attempt.findings(), "teams/vision.yaml", "sentinel-value")
    assert found.message.startswith(
        f"costCenter '{value}' of team 'vision' is reserved for gpuplane: it is the "
    )
    assert "acceptance suites' Jobs" in found.message
    assert found.at.line == line_of(attempt, "teams/vision.yaml", "costCenter:")


def test_a_new_team_charged_to_the_platform(attempt: Attempt) -> None:
    text = attempt.path("teams/speech.yaml").read_text().replace("name: speech\n", "name: gpuops\n")
    text = text.replace("name: speech-", "name: gpuops-")
    text = text.replace("costCenter: CC-1061", "costCenter: platform")
    assert "costCenter: platform" in text
    attempt.write("teams/gpuops.yaml", text)
    refused_on(attempt.findings(), "teams/gpuops.yaml", "sentinel-value")


def test_the_hint_fixes_it(attempt: Attempt) -> None:
    attempt.edit("teams/vision.yaml", "costCenter: CC-1042", "costCenter: platform")
    found = refused_on(attempt.findings(), "teams/vision.yaml", "sentinel-value")
    assert found.hint is not None and "'CC-1050'" in found.hint
    attempt.edit("teams/vision.yaml", "costCenter: platform", "costCenter: CC-1050")
    assert not [d for d in attempt.findings() if d.rule == "sentinel-value"]


# --- look-alikes of another team's name or cost centre (read as that team in every report) -----


def test_charge_the_team_to_a_look_alike_of_another_teams_cost_centre(attempt: Attempt) -> None:
    """speech is charged to CC-1061; vision writes the letter O for the zero."""
    attempt.edit("teams/vision.yaml", "costCenter: CC-1042", "costCenter: CC-1O61")
    found = refused_on(attempt.findings(), "teams/vision.yaml", "team-name-confusable")
    assert found.message.startswith(
        "costCenter 'CC-1O61' of team 'vision' looks like costCenter 'CC-1061' of team 'speech'"
    )
    assert found.notes[0][1].file == "teams/speech.yaml"


@pytest.mark.parametrize(
    ("name", "existing"), [("visi0n", "vision"), ("1lm", "llm"), ("11m-eval", "llm-eval")]
)
def test_name_a_new_team_like_an_existing_one(attempt: Attempt, name: str, existing: str) -> None:
    """A team that reads as vision in the `team` label of every series, alert and cost line."""
    from renderer.pipeline import load_platform

    text = (
        attempt.path("teams/speech.yaml").read_text().replace("name: speech\n", f"name: {name}\n")
    )
    text = text.replace("name: speech-", f"name: {name}-").replace("CC-1061", "CC-2000")
    file = f"teams/{name}.yaml"
    attempt.write(file, text)
    diagnostics = load_platform(attempt.root, changed={file: None}).diagnostics
    found = refused_on(diagnostics, file, "team-name-confusable")
    assert f"team name '{name}' of team '{name}' looks like team name '{existing}'" in found.message
