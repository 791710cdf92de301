"""Golden error reports: realistic broken pull requests and the exact report each one gets.

Each folder in tests/cases/errors/ holds input files that replace (or join) those of the
built-in example platform, and `expected.txt`, the report `gpuplane validate` prints. The
expected reports were read line by line against the inputs when they were written; regenerate
them with `pytest --update-golden` and review the diff like code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import tree

CASES = Path(__file__).parent / "cases" / "errors"


def _overlay(case: Path, platform: Path) -> None:
    for source in sorted(case.rglob("*")):
        if source.is_file() and source.name != "expected.txt":
            target = platform / source.relative_to(case)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_error_report(name: str, platform: Path, gpuplane, crds: Path, update_golden: bool) -> None:
    case = CASES / name
    _overlay(case, platform)
    before = tree(platform / "rendered")
    result = gpuplane("-C", str(platform), "validate")
    golden = case / "expected.txt"
    if update_golden:
        golden.write_text(result.output)
    assert result.exit_code == 1
    assert result.output == golden.read_text()
    # render reports the same problems and writes nothing
    rendered = gpuplane("-C", str(platform), "render", "--crds", str(crds))
    assert rendered.exit_code == 1
    assert rendered.output == result.output
    assert tree(platform / "rendered") == before
