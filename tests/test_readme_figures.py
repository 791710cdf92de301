"""README.md's opening figures are tools/measured.json's, and what can be checked without
measuring again still holds: the warnings a lone `render` prints, the tests each tier collects.
When one fails, measure again: `make measure NOTE="what else ran"` (docs/testing.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from renderer.cli import main
from tests.conftest import REPO, SHARED_CRDS, copy_inputs
from tools.measure import COLLECTED, DATA, END, FINDING_WARNING, START, readme_block

MEASURED = json.loads(DATA.read_text())


def test_the_readme_says_what_was_measured() -> None:
    readme = (REPO / "README.md").read_text()
    assert readme.count(START) == 1 and readme.count(END) == 1
    assert readme_block(MEASURED) in readme


def test_a_lone_render_prints_the_measured_warnings(tmp_path: Path) -> None:
    """As `make render` on a clone with nothing beside it: no CRDs, no settings."""
    repo = copy_inputs(REPO, tmp_path / "repo")
    env = {"GPUPLANE_CRDS": "", "GPUPLANE_UNCHECKED": "", "NO_COLOR": "1"}
    result = CliRunner(env=env).invoke(main, ["-C", str(repo), "render"])
    assert result.exit_code == 0, result.output
    printed = len(FINDING_WARNING.findall(result.output))
    assert printed == MEASURED["render"]["finding_warnings"], result.output
    assert MEASURED["render"]["python_warnings"] == 0  # the install's: test_editable_install


@pytest.mark.slow
@pytest.mark.parametrize(("tier", "marker"), [("fast", "not slow"), ("slow", "slow")])
def test_each_tier_collects_the_measured_number_of_tests(tier: str, marker: str) -> None:
    if "test" not in MEASURED:
        pytest.skip("make test was not measured yet")
    if SHARED_CRDS.parent.is_dir():
        # the README counts a lone clone's tests; ../shared adds the cases read from it
        pytest.skip("../shared is beside the checkout: its cases change the count")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            marker,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    match = COLLECTED.search(done.stdout)
    assert match, done.stdout[-2000:] + done.stderr[-2000:]
    assert int(match.group(1)) == MEASURED["test"]["collected"][tier]
