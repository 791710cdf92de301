"""Shared fixtures: the example platform copied to a temporary folder, the CLI, the CRDs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from renderer.cli import main

REPO = Path(__file__).resolve().parents[1]
SHARED_CRDS = REPO.parent / "shared" / "crds"
INPUT_FOLDERS = ("clusters", "pools", "teams", "queues")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Rewrite golden files from the current output (refused in CI; review the diff).",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    wanted = bool(request.config.getoption("--update-golden"))
    if wanted and os.environ.get("CI"):
        pytest.fail("--update-golden is refused in CI: golden files are reviewed by people")
    return wanted


@pytest.fixture
def crds() -> Path:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    return SHARED_CRDS


@dataclass
class Result:
    exit_code: int
    output: str


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    """A copy of the built-in example platform (inputs and rendered/) in a fresh folder."""
    root = tmp_path / "repo"
    root.mkdir()
    for folder in (*INPUT_FOLDERS, "rendered"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder)
    return root


@pytest.fixture
def gpuplane() -> Callable[..., Result]:
    """Run the CLI in-process, as a user would, and return its exit code and output."""

    def run(*args: str) -> Result:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return Result(result.exit_code, result.output)

    return run


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path, for byte-exact comparisons."""
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
