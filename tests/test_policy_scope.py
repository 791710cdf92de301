"""Every policy rule of scope `team` keeps to it (`renderer.policy.rule.Scope`): what it finds in
a team file it finds from that team file and the files that are not team files alone, and what
it finds elsewhere from those others alone. The render index reuses each unchanged team file's
findings on that promise (`renderer.commands.policy_index`), so a rule that breaks it would make
a check with the index report other findings than one without.

Checked the way the index uses it, on platforms where the team rules fire: the example, every
broken platform of the applied-hint cases (each policy rule fires in one, tests/cases/hints), a
generated platform of each bench shape, and with the change's lines known (`changed`), since
rules place findings on the entry a change touched. Then `scoped_findings` itself: after one team
file changes, the findings with the record are those of the whole policy.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.policy_index import scoped_findings
from renderer.findings.diagnostics import Diagnostic, sort_diagnostics
from renderer.model.platform import Platform
from renderer.model.view import is_team_file, team_slice
from renderer.pipeline import Loaded, load_platform
from renderer.policy.check import POLICY, check_policy
from tests.conftest import INPUT_FOLDERS, REPO, copy_inputs
from tests.test_hints_applied import TABLE, apply_steps

TEAM_RULES = [r for r in POLICY if r.scope == "team"]


def _key(d: Diagnostic) -> tuple[Any, ...]:
    return (d.sort_key(), d.notes, d.hint, d.severity)


def _broken_scopes(platform: Platform) -> list[str]:
    """Each team rule, and the file, where the slice's findings differ from the whole's."""
    files = sorted({f for f in platform.documents if is_team_file(f)})
    wrong = []
    for r in TEAM_RULES:
        whole = list(r.check(platform))
        outside = [
            d for d in r.check(team_slice(platform, frozenset())) if not is_team_file(d.at.file)
        ]
        if Counter(map(_key, outside)) != Counter(
            _key(d) for d in whole if not is_team_file(d.at.file)
        ):
            wrong.append(f"{r.id}: outside team files")
        for file in files:
            alone = [
                d for d in r.check(team_slice(platform, frozenset({file}))) if d.at.file == file
            ]
            if Counter(map(_key, alone)) != Counter(_key(d) for d in whole if d.at.file == file):
                wrong.append(f"{r.id}: {file}")
    return wrong


def _every_file_changed(root: Path) -> dict[str, None]:
    return {
        p.relative_to(root).as_posix(): None
        for f in INPUT_FOLDERS
        for p in (root / f).glob("*.yaml")
    }


def test_team_rules_are_many() -> None:
    """The rules the index reuses per team file: most of the policy's time on a large platform
    (secret-literal, derived-name-too-long, rbac-group-identifier...)."""
    assert {"secret-literal", "derived-name-too-long", "rbac-group-identifier"} <= {
        r.id for r in TEAM_RULES
    }
    assert "quota-exceeds-pool" not in {r.id for r in TEAM_RULES}  # a sum over teams


@pytest.mark.parametrize("changed", [False, True], ids=["unknown-change", "every-file-changed"])
def test_example_keeps_the_team_scope(changed: bool) -> None:
    loaded = load_platform(
        REPO, changed=_every_file_changed(REPO) if changed else None, policy=False
    )
    assert _broken_scopes(loaded.platform) == []


CASES = [c for c in TABLE if not any("commit" in step for step in c["break"])]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_broken_platforms_keep_the_team_scope(case: dict[str, Any], tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    apply_steps(root, case["file"], case["break"])
    changed = {f"{case['file']}": None} if case["file"] else None
    for known in (None, changed):
        loaded = load_platform(root, changed=known, policy=False)
        assert _broken_scopes(loaded.platform) == [], case["name"]


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["few-large", "many-small"])
def test_generated_platforms_keep_the_team_scope(shape: str, tmp_path: Path) -> None:
    from bench.generate import generate_platform

    generate_platform(tmp_path, clusters=2, pools_per_cluster=3, teams=24, seed=7, shape=shape)
    loaded = load_platform(tmp_path, policy=False)
    assert len(loaded.platform.teams) == 24
    assert _broken_scopes(loaded.platform) == []


def _recorded_then(root: Path, edit: tuple[str, str, str]) -> tuple[list[Diagnostic], Loaded]:
    """The scoped findings after `edit` (file, old, new) with the record made before it."""
    before = load_platform(root, policy=False)
    _, record = scoped_findings(before, check_policy, b"gpuplane", None)
    assert record is not None
    file, old, new = edit
    path = root / file
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    after = load_platform(root, policy=False)
    found, again = scoped_findings(after, check_policy, b"gpuplane", record)
    assert again is not None and again.shared == record.shared  # taken, not found afresh
    return found, after


@pytest.mark.parametrize(
    "edit",
    [
        # a team rule starts to fire in the changed file (rbac-group-characters)
        ("teams/llm-eval.yaml", "owners: [llm-leads]", 'owners: [llm-leads, "a,b"]'),
        # a platform rule's finding moves: more quota than the pool holds
        ("teams/llm.yaml", "h100-train, nominal: 16,", "h100-train, nominal: 96,"),
    ],
    ids=["team-rule", "platform-rule"],
)
def test_recorded_findings_are_the_whole_policy(edit: tuple[str, str, str], tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    found, after = _recorded_then(root, edit)
    whole = check_policy(after.platform)
    assert whole, "the edit must make the policy find something"
    assert sort_diagnostics(found) == sort_diagnostics(whole)
