"""The command line as CI and people use it: formats, exit codes, -C, explain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def queue_line() -> int:
    """The line of vision's `queue: prod` (read before `_break` misspells it)."""
    lines = (REPO / "teams" / "vision.yaml").read_text().splitlines()
    return lines.index("  queue: prod") + 1


def _break(platform: Path) -> None:
    vision = platform / "teams" / "vision.yaml"
    vision.write_text(vision.read_text().replace("queue: prod\n", "queue: prd\n"))


def test_validate_ok_exits_0(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "validate")
    assert result.exit_code == 0
    assert result.output == "ok: 16 input files, no findings\n"


def test_json_format(platform: Path, gpuplane) -> None:
    _break(platform)
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    assert result.exit_code == 1
    body = json.loads(result.output)
    assert body["summary"] == {"errors": 1, "warnings": 0, "files": 16}
    (finding,) = body["findings"]
    assert finding == {
        "rule": "unknown-reference",
        "level": "error",
        "message": "queue 'prd' does not exist",
        "file": "teams/vision.yaml",
        "line": queue_line(),
        "column": 10,
        "notes": [],
        "hint": "did you mean 'prod'?",
    }


def test_github_annotations_escape_and_point_at_the_line(platform: Path, gpuplane) -> None:
    _break(platform)
    result = gpuplane("-C", str(platform), "validate", "--format", "github")
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first == (
        f"::error file=teams/vision.yaml,line={queue_line()},col=10,"
        "title=unknown-reference::"
        "queue 'prd' does not exist%0Ahint: did you mean 'prod'?"
    )


def test_render_check_in_json_lists_stale_files(platform: Path, gpuplane, crds: Path) -> None:
    (platform / "rendered/prod-east/tenancy/priorityclass-prod-standard.yaml").unlink()
    result = gpuplane(
        "-C", str(platform), "render", "--check", "--crds", str(crds), "--format", "json"
    )
    assert result.exit_code == 1
    body = json.loads(result.output)
    assert body["stale"] == [
        {"file": "rendered/prod-east/tenancy/priorityclass-prod-standard.yaml", "state": "missing"}
    ]


def test_usage_errors_exit_2(gpuplane) -> None:
    assert gpuplane("validate", "--format", "xml").exit_code == 2
    assert gpuplane("-C", "/does/not/exist", "validate").exit_code == 2
    unknown = gpuplane("explain", "quota-exceeds-poll")
    assert unknown.exit_code == 2
    assert "Did you mean 'quota-exceeds-pool'?" in unknown.output


def test_explain_prints_the_rule_docstring(gpuplane) -> None:
    result = gpuplane("explain", "quota-exceeds-pool")
    assert result.exit_code == 0
    assert "oversubscription" in result.output
    listing = gpuplane("explain", "--list")
    assert "yaml-alias-bomb" in listing.output and "training-inference-separation" in listing.output


def test_console_script_runs_in_the_current_directory(tmp_path: Path) -> None:
    """`gpuplane validate` with no -C works on the repository the current directory lies in,
    like git; an empty folder at a git work tree's top (the walk up stops there, as git's does)
    has no inputs."""
    exe = Path(sys.executable).parent / "gpuplane"
    result = subprocess.run([str(exe), "validate"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (tmp_path / ".git").mkdir()
    empty = subprocess.run([str(exe), "validate"], cwd=tmp_path, capture_output=True, text=True)
    assert empty.returncode == 1
    assert empty.stdout.startswith(
        ".: error[no-inputs] no input files in clusters/, pools/, teams/, queues/"
    )
    assert "Traceback" not in empty.stderr
