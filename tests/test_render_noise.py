"""A render with no CRDs beside it says once, not once per kind, what it could not check.

The count of custom kinds is `EXAMPLE_CUSTOM_KINDS` (written from the layers' operators, in
test_schema_store.py); the releases named are the ones the example's cluster files pin.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from renderer.cli import main
from tests.conftest import REPO, copy_inputs
from tests.test_schema_store import EXAMPLE_CUSTOM_KINDS


def render(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    environ = {"GPUPLANE_CRDS": "", "GPUPLANE_UNCHECKED": "", "NO_COLOR": "1", **(env or {})}
    result = CliRunner(env=environ).invoke(main, ["-C", str(root), "render", *args])
    return result.exit_code, result.output.splitlines()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_inputs(REPO, tmp_path_factory.mktemp("noise") / "repo")


def unchecked_lines(lines: list[str], severity: str = "warning") -> list[str]:
    return [line for line in lines if f"{severity}[schema-unchecked]" in line]


def test_by_default_one_summary_line_names_every_unchecked_release(repo: Path) -> None:
    code, lines = render(repo)
    assert code == 0
    [line] = unchecked_lines(lines)
    assert f" {len(EXAMPLE_CUSTOM_KINDS)} custom kinds (" in line
    # every release an example cluster pins for an operator whose kinds it renders
    pinned = (REPO / "clusters/prod-east.yaml").read_text()
    for title, version in (("Kueue", "v0.19.2"), ("GPU Operator", "v26.7.0"), ("KEDA", "2.20.2")):
        assert f"version: {version}" in pinned or f'version: "{version}"' in pinned
        assert f"{title} {version}" in line
    assert "0 errors, 1 warning in" in lines[-2]
    assert len(lines) <= 4, lines  # the summary, its hint, the tally, what was written


def test_list_shows_each_kind_and_the_objects_add_up_to_the_summary(repo: Path) -> None:
    _, summary = render(repo)
    code, lines = render(repo, "--unchecked", "list")
    assert code == 0
    listed = unchecked_lines(lines)
    assert len(listed) == len(EXAMPLE_CUSTOM_KINDS)
    objects = sum(int(re.search(r": (\d+) objects? on ", line)[1]) for line in listed)  # type: ignore[index]
    assert f"custom kinds ({objects} objects)" in unchecked_lines(summary)[0]
    # the same through the environment, for a CI job or an Argo CD plugin that cannot add flags
    _, by_env = render(repo, env={"GPUPLANE_UNCHECKED": "list"})
    assert unchecked_lines(by_env) == listed


def test_hide_leaves_them_out_and_the_tool_formats_keep_every_kind(repo: Path) -> None:
    code, lines = render(repo, "--unchecked", "hide")
    assert code == 0
    assert not unchecked_lines(lines)
    assert not any("warning" in line for line in lines), lines
    code, out = render(repo, "--format", "json")
    assert code == 0
    findings = json.loads("\n".join(out))["findings"]
    assert len([f for f in findings if f["rule"] == "schema-unchecked"]) == len(
        EXAMPLE_CUSTOM_KINDS
    )


def test_strict_schemas_still_lists_every_kind_as_an_error(repo: Path) -> None:
    code, lines = render(repo, "--strict-schemas")
    assert code == 1
    assert len(unchecked_lines(lines, "error")) == len(EXAMPLE_CUSTOM_KINDS)
    assert not unchecked_lines(lines)
