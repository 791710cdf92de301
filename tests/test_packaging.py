"""The engine as a wheel installs it (the suite image's report step runs it so, not editable):
the wheel carries the input and result schemas, and the installed CLI validates the example
platform and judges results with them."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

PASSING = REPO / "tests" / "cases" / "acceptance" / "passing"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("gpuplane-*.whl")
    return built


def test_the_wheel_carries_every_schema(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema in sorted((REPO / "schemas").rglob("*.schema.json")):
        relative = schema.relative_to(REPO / "schemas").as_posix()
        assert f"gpuplane_schemas/{relative}" in names, relative
    assert not any(name.startswith("schemas/") for name in names)  # no generic top-level name


def test_the_installed_engine_validates_and_reports(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as archive:  # what pip does with a pure-Python wheel
        archive.extractall(site)
    # the dependencies come from this environment's site-packages, after the wheel's own files,
    # and never this checkout: the engine must find everything inside the installed wheel
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    code = "from renderer.cli import main; main()"
    validate = subprocess.run(
        [str(python), "-c", code, "-C", str(REPO), "validate"],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert validate.returncode == 0, validate.stdout + validate.stderr
    located = subprocess.run(
        [str(python), "-c", "import renderer.inputs.schema as s; print(s.SCHEMA_DIR)"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(located.stdout.strip()) == site / "gpuplane_schemas"
    results = sorted(str(p) for p in (PASSING / "h100-train").glob("*.json"))
    report = subprocess.run(
        [str(python), "-c", code, "-C", str(REPO), "acceptance", "report", *results],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    broken = tmp_path / "broken.json"
    broken.write_text(
        (PASSING / "h100-train" / "checkpoint.json")
        .read_text()
        .replace('"verified"', '"verifiedd"')
    )
    refused = subprocess.run(
        [str(python), "-c", code, "-C", str(REPO), "acceptance", "report", str(broken)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1 and "result-invalid" in refused.stdout, refused.stdout
