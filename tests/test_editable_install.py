"""`make setup` installs the engine with `pip install -e .`; setuptools' build of it must print
no warning caused by our pyproject.toml (a newcomer's first `make render` showed a 10-35 line
`BuildBackendWarning: Editable installation` block, which setuptools emits whenever a package
lives somewhere other than where its name says: `setuptools/command/editable_wheel.py`,
`_TopLevelFinder.__exit__`). Built with pip as the Makefile does, with build isolation, so it is
the pinned setuptools of `[build-system]` that judges."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

# what the build reads: the project table, the readme, and every package's folder
BUILD_INPUTS = (
    "pyproject.toml",
    "README.md",
    "renderer",
    "workflows",
    "schemas",
    "gpuplane_schemas",
)
# a Python warning as the build backend prints it: `file.py:354: SomeWarning: text`
WARNING = re.compile(r"\b\w*Warning\b|^\s*!!\s*$")


@pytest.mark.slow
def test_the_editable_install_builds_without_a_warning(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in BUILD_INPUTS:
        source = REPO / name
        if source.is_symlink():
            (project / name).symlink_to(source.readlink())
        elif source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy(source, project / name)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"),
            *("--disable-pip-version-check", "--prefix", str(tmp_path / "prefix")),
            # never uninstall the gpuplane of the venv running the tests (pip would, to put
            # the new one in its place, and the console-script tests after it would fail)
            "--ignore-installed",
            *("-e", str(project)),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [line for line in (done.stdout + done.stderr).splitlines() if WARNING.search(line)]
    assert not warned, "\n".join(warned)
    # and the install is a plain path entry to the project: no import hook
    [pth] = (tmp_path / "prefix").rglob("__editable__.gpuplane-*.pth")
    assert pth.read_text().split() == [str(project)]
