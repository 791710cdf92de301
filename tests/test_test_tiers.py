"""The two tiers: `make test` (the README's command) runs the fast one, CI everything, and the
fast tier still drives every command end to end (docs/testing.md)."""

from __future__ import annotations

import re

from tests.conftest import REPO, SLOW_MODULE

MAKEFILE = (REPO / "Makefile").read_text()
CI = (REPO / ".ci" / "run").read_text()


def recipe(target: str) -> str:
    """The commands of one Makefile target."""
    lines = MAKEFILE.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        body.append(line.strip())
    return "\n".join(body)


def test_make_test_runs_the_fast_tier_and_test_all_everything() -> None:
    assert re.search(r'-m pytest .*-m "not slow"', recipe("test"))
    assert "-m pytest" in recipe("test-all") and "slow" not in recipe("test-all")
    check = next(line for line in MAKEFILE.splitlines() if line.startswith("check:"))
    assert " test-all " in check


def test_ci_runs_every_test_with_the_tools_required_and_the_readmes_test_alone() -> None:
    here, lone = CI.split("# The lone path", 1)
    assert re.search(r"^GPUPLANE_REQUIRE_TOOLS=1 make test-all$", here, re.MULTILINE)
    assert re.search(r"^\s+make test$", lone, re.MULTILINE)
    assert "make test" in (REPO / "README.md").read_text().split("```")[1]


def test_the_slow_marker_is_registered_for_strict_markers() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert "--strict-markers" in pyproject
    assert re.search(r'^\s+"slow: ', pyproject, re.MULTILINE)


def test_every_command_keeps_a_test_file_in_the_fast_tier() -> None:
    """docs/index.md's command table names each command's tests; at least one of them must not
    be slow as a whole module, so `make test` still drives every command."""
    index = (REPO / "docs" / "index.md").read_text()
    table = index[index.index("## Commands") : index.index("## Concepts")]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 10
    for row in rows:
        command, tests = row.split(" | ")[0], row.split(" | ")[-1]
        files = re.findall(r"\(\.\./tests/(test_\w+\.py)\)", tests)
        assert files, row
        fast = [f for f in files if not SLOW_MODULE.search((REPO / "tests" / f).read_text())]
        assert fast, f"{command}: every test file is marked slow: {files}"
