"""Text from input files is inert wherever gpuplane prints it: an escape sequence cannot reach a
terminal, a newline cannot start a line a CI runner reads as a workflow command, and a bidi
override cannot reorder what a reviewer sees. The attack values come from a review: the schema
lets both a MIG layout name and an unknown key carry any character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from renderer.cli import main
from renderer.findings.diagnostics import Diagnostic, Location, inert
from tests.conftest import REPO, copy_inputs

ATTACK = "all-\x1b[31mRED\x1b]0;PWNED\x07\n::error file=teams/llm.yaml,line=1::pwned\u202e"


def run(root: Path, *args: str) -> str:
    result = CliRunner(env={"GPUPLANE_CRDS": ""}).invoke(main, ["-C", str(root), *args])
    return result.output


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = copy_inputs(REPO, tmp_path / "repo")
    pool = root / "pools/a100-mig.yaml"
    lines = pool.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "layout:")
    end = at + 1
    while lines[end].startswith("      "):
        end += 1
    lines[at:end] = [f"    layout: {json.dumps(ATTACK)}"]
    pool.write_text("\n".join(lines) + "\n")
    team = root / "teams/llm.yaml"
    team.write_text(team.read_text().replace("spec:\n", f"spec:\n  {json.dumps(ATTACK)}: 1\n", 1))
    return root


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_findings_quoting_hostile_values_print_nothing_a_terminal_or_runner_obeys(
    hostile: Path, fmt: str
) -> None:
    output = run(hostile, "validate", "--format", fmt)
    assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert "\\x1b[31mRED" in output  # shown, escaped
    for line in output.splitlines():
        assert not line.startswith("::error file=teams/llm.yaml,line=1"), line
    if fmt == "github":
        assert all(line.startswith("::") for line in output.splitlines()[:-1])


def test_json_and_sarif_carry_the_escaped_form(hostile: Path) -> None:
    for fmt in ("json", "sarif"):
        text = json.dumps(json.loads(run(hostile, "validate", "--format", fmt)))
        assert "\\u001b" not in text and "\\\\x1b[31mRED" in text


def test_inert_escapes_only_what_cannot_be_seen() -> None:
    assert inert("café ü 中文 — ok") == "café ü 中文 — ok"
    assert inert("a\tb\nc\x1bd\u200be\u2028f") == "a\\tb\\nc\\x1bd\\u200be\\u2028f"
    d = Diagnostic("r", "m\x1b", Location("f"), notes=(("n\n", Location("g")),), hint="h\x07")
    assert (d.message, d.notes[0][0], d.hint) == ("m\\x1b", "n\\n", "h\\x07")


def test_a_description_reaches_the_generated_readme_escaped(tmp_path: Path) -> None:
    from renderer.output.markdown_escape import cell

    # the escape's backslash is escaped for Markdown, so a reader sees `\x1b`
    assert cell("team \x1b]0;T\x07 | <b>") == "team \\\\x1b\\]0;T\\\\x07 \\| &lt;b&gt;"
