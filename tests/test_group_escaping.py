"""Every report that prints an IdP group shows a non-ASCII one escaped, in one form
(`renderer.model.identifiers.escaped`): `diff` (text, Markdown, JSON), the findings of
`validate`, and the cluster diagram.

A group in one script other than Latin is allowed (docs/identities.md), so it reaches the
reports; written out, a Cyrillic `команда` and a Latin look-alike would read the same in a
review, and `diff` would show a swapped group as the same name removed and added.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from renderer.commands.diagram import FORMATS, build
from renderer.pipeline import load_platform
from tests.red_team.diffing import cli, commit_base
from tests.red_team.harness import Attempt

TEAM_GROUP = "\u043a\u043e\u043c\u0430\u043d\u0434\u0430"  # Cyrillic, single-script: allowed
SHOWN = "\\u043a\\u043e\\u043c\\u0430\\u043d\\u0434\\u0430"


@pytest.fixture
def swapped(tmp_path: Path) -> Attempt:
    """vision's owner group swapped for a Cyrillic one, as a pull request."""
    attempt = Attempt.on_example(tmp_path / "repo")
    commit_base(attempt)
    attempt.edit("teams/vision.yaml", "owners: [vision-leads]", f'owners: ["{SHOWN}"]')
    return attempt


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_diff_shows_the_group_escaped(swapped: Attempt, fmt: str) -> None:
    code, output = cli(swapped, "diff", "--base", "HEAD", "--format", fmt)
    assert code == 0, output
    text = json.dumps(json.loads(output)) if fmt == "json" else output
    assert TEAM_GROUP not in output
    assert SHOWN in text.replace("\\\\", "\\"), output
    assert "vision-leads" in output  # the group that lost admin, by its name


def test_validate_shows_the_group_escaped(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit("teams/vision.yaml", "owners: [vision-leads]", 'owners: ["vision-le\\u0430ds"]')
    code, output = cli(attempt, "validate")
    assert code == 1, output
    assert "group 'vision-le\\u0430ds' mixes the scripts Latin and Cyrillic" in output
    assert "\u0430" not in output


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_diagram_shows_platform_owners_escaped(tmp_path: Path, fmt: str) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "clusters/prod-east.yaml",
        "platformOwners: [platform-admins]",
        f'platformOwners: [platform-admins, "{SHOWN}"]',
    )
    text = build(load_platform(attempt.root).platform, "prod-east", fmt).text
    assert TEAM_GROUP not in text
    # each writer encodes the backslash its own way (Mermaid `#92;`): the escape's digits stay
    assert all(f"u{ord(c):04x}" in text for c in TEAM_GROUP)
