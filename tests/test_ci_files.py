"""The pull-request check users install: the GitHub Actions workflow, the pre-commit hooks and
.gitattributes, read as files (no network, nothing run on GitHub)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest

from renderer.cli import main
from tests.conftest import REPO, github_workflow_errors, load_yaml_12, only_job_steps

WORKFLOW = REPO / ".github" / "workflows" / "gpuplane.yml"
PRE_COMMIT = REPO / ".pre-commit-config.yaml"


@pytest.fixture(scope="module")
def workflow() -> Any:
    return load_yaml_12(WORKFLOW)


@pytest.fixture(scope="module")
def steps(workflow: Any) -> list[dict[str, Any]]:
    return only_job_steps(workflow)


def step_running(steps: list[dict[str, Any]], text: str) -> dict[str, Any]:
    found = [s for s in steps if text in s.get("run", "")]
    assert len(found) == 1, f"one step runs {text!r}"
    return found[0]


def test_workflow_is_valid_for_github_actions(workflow: Any) -> None:
    """Against SchemaStore's workflow schema, as check-jsonschema ships it (no network)."""
    assert not github_workflow_errors(workflow)


def test_triggers_and_minimal_permissions(workflow: Any) -> None:
    assert "pull_request" in workflow["on"]
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert workflow["permissions"] == {"contents": "read"}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "security-events": "write",
        "actions": "read",
    }


def test_actions_are_pinned(steps: list[dict[str, Any]]) -> None:
    used = [s["uses"] for s in steps if "uses" in s]
    assert used
    for action in used:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", action), action


def test_checkout_python_and_setup(steps: list[dict[str, Any]]) -> None:
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"
    assert step_running(steps, "make setup")["id"] == "setup"
    assert (
        steps.index(checkout) < steps.index(python) < steps.index(step_running(steps, "make setup"))
    )


def test_the_three_checks_run_with_the_formats_ci_needs(steps: list[dict[str, Any]]) -> None:
    assert (
        ".venv/bin/gpuplane validate --format github"
        in step_running(steps, "validate --format github")["run"]
    )
    render = step_running(steps, "render --check")
    assert "--format github" in render["run"] and "--strict-schemas" in render["run"]
    diff = step_running(steps, "gpuplane diff")
    assert (
        '--base "origin/$BASE_REF" --format markdown' in diff["run"] and "> diff.md" in diff["run"]
    )
    assert diff["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert '>> "$GITHUB_STEP_SUMMARY"' in diff["run"]
    assert diff["if"].startswith("always()") and "pull_request" in diff["if"]


def test_the_sticky_comment_is_found_by_its_marker(steps: list[dict[str, Any]]) -> None:
    comment = next(s for s in steps if s.get("uses", "").startswith("actions/github-script@"))
    script = comment["with"]["script"]
    assert "const marker = '<!-- gpuplane-diff -->';" in script
    assert "updateComment" in script and "createComment" in script and "paginate" in script
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]


def test_sarif_is_written_and_uploaded_even_when_checks_fail(steps: list[dict[str, Any]]) -> None:
    sarif = step_running(steps, "--format sarif")
    assert ".venv/bin/gpuplane validate --format sarif > gpuplane.sarif" in sarif["run"]
    assert sarif["if"].startswith("always()")
    upload = next(
        s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")
    )
    assert upload["if"].startswith("always()")
    assert upload["with"]["sarif_file"] == "gpuplane.sarif"
    assert steps.index(sarif) < steps.index(upload)


def test_no_expression_is_pasted_into_a_script(steps: list[dict[str, Any]]) -> None:
    """Values from the event reach scripts through env, never through `${{ }}` in the text."""
    for step in steps:
        assert "${{" not in step.get("run", ""), step.get("name")


def _bash(script: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a step's script with .venv/bin/gpuplane replaced by a stub that prints its arguments
    and exits with $STUB_EXIT."""
    stub = tmp_path / "gpuplane"
    stub.write_text('#!/bin/sh\necho "args:$*"\nexit "${STUB_EXIT:-0}"\n')
    stub.chmod(0o755)
    script = script.replace(".venv/bin/gpuplane", shlex.quote(str(stub)))
    return subprocess.run(
        ["bash", "-e", "-c", script],
        env={"PATH": os.environ["PATH"], **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def test_render_check_is_strict_once_the_repository_gives_schemas(
    steps: list[dict[str, Any]], tmp_path: Path
) -> None:
    """As committed (no store, no variable) the check passes with warnings; once schemas are
    given, through any of the three ways the workflow's comment names, it is strict."""
    script = step_running(steps, "render --check")["run"]
    unset = _bash(script, {}, tmp_path)
    assert unset.returncode == 0, unset.stderr
    assert unset.stdout.strip() == "args:render --check --format github"
    strict = "args:render --check --format github --strict-schemas"
    # the engine reads $GPUPLANE_CRDS itself, so the step passes no --crds
    assert _bash(script, {"GPUPLANE_CRDS": "crds:more crds"}, tmp_path).stdout.strip() == strict
    (tmp_path / "gpuplane.yaml").write_text("spec:\n  schemas: [crds]\n")
    assert _bash(script, {}, tmp_path).stdout.strip() == strict
    (tmp_path / "gpuplane.yaml").unlink()
    (tmp_path / ".gpuplane" / "schemas").mkdir(parents=True)
    assert _bash(script, {}, tmp_path).stdout.strip() == strict


def test_diff_step_writes_the_summary_only_when_diff_succeeds(
    steps: list[dict[str, Any]], tmp_path: Path
) -> None:
    script = step_running(steps, "gpuplane diff")["run"]
    summary = tmp_path / "summary.md"
    env = {"BASE_REF": "main", "GITHUB_STEP_SUMMARY": str(summary), "GPUPLANE_CRDS": "crds"}
    ok = _bash(script, env, tmp_path)
    assert ok.returncode == 0, ok.stderr
    # strict as render --check is, so that it reads the render index that check left
    expected = "args:diff --base origin/main --format markdown --strict-schemas\n"
    assert (tmp_path / "diff.md").read_text() == summary.read_text() == expected
    summary.unlink()
    failed = _bash(script, {**env, "STUB_EXIT": "1"}, tmp_path)
    assert failed.returncode == 1 and not summary.exists()
    unset = {k: v for k, v in env.items() if k != "GPUPLANE_CRDS"}
    assert _bash(script, unset, tmp_path).returncode == 0
    assert (tmp_path / "diff.md").read_text() == "args:diff --base origin/main --format markdown\n"


def test_validate_refuses_an_immutable_edit_unless_the_pull_request_allows_it(
    steps: list[dict[str, Any]], tmp_path: Path
) -> None:
    """On a pull request the validate step checks the transition rules against the base branch
    (`--base origin/<base>`), and passes `--allow-recreate` only for the label
    `gpuplane-allow-recreate`; a push validates the inputs alone. Adding or removing the label
    runs the check again."""
    step = step_running(steps, "validate --format github")
    label = step["env"]["ALLOW_RECREATE"]
    assert label == (
        "${{ contains(github.event.pull_request.labels.*.name, 'gpuplane-allow-recreate') }}"
    )
    assert step["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert step["env"]["EVENT"] == "${{ github.event_name }}"
    script = step["run"]
    pull = {"EVENT": "pull_request", "BASE_REF": "main", "ALLOW_RECREATE": "false"}
    assert _bash(script, pull, tmp_path).stdout.strip() == (
        "args:validate --format github --base origin/main"
    )
    labelled = _bash(script, {**pull, "ALLOW_RECREATE": "true"}, tmp_path)
    assert labelled.stdout.strip() == (
        "args:validate --format github --base origin/main --allow-recreate"
    )
    push = _bash(script, {"EVENT": "push", "BASE_REF": "", "ALLOW_RECREATE": "false"}, tmp_path)
    assert push.stdout.strip() == "args:validate --format github"
    assert _bash(script, {**pull, "STUB_EXIT": "1"}, tmp_path).returncode == 1
    known = {opt for p in main.commands["validate"].params for opt in getattr(p, "opts", ())}
    assert {"--base", "--allow-recreate"} <= known
    types = load_yaml_12(WORKFLOW)["on"]["pull_request"]["types"]
    assert {"opened", "synchronize", "labeled", "unlabeled"} <= set(types)


def test_sarif_step_tolerates_findings_but_not_usage_errors(
    steps: list[dict[str, Any]], tmp_path: Path
) -> None:
    script = step_running(steps, "--format sarif")["run"]
    assert _bash(script, {"STUB_EXIT": "1"}, tmp_path).returncode == 0
    assert (tmp_path / "gpuplane.sarif").read_text() == "args:validate --format sarif\n"
    assert _bash(script, {"STUB_EXIT": "2"}, tmp_path).returncode != 0


def test_the_commands_the_workflow_runs_exist(steps: list[dict[str, Any]]) -> None:
    """Each `gpuplane COMMAND --option` in the workflow is one the CLI has."""
    commands = main.commands
    for step in steps:
        for match in re.finditer(r"\.venv/bin/gpuplane (\w+)((?: --[\w-]+)*)", step.get("run", "")):
            name, options = match[1], match[2].split()
            if name == "diff" and "diff" not in commands:
                pytest.skip("`gpuplane diff` is not in this build yet")
            command = commands[name]
            known = {opt for p in command.params if isinstance(p, click.Option) for opt in p.opts}
            assert set(options) <= known, (name, options)


def test_pre_commit_hooks() -> None:
    config = load_yaml_12(PRE_COMMIT)
    local = next(r for r in config["repos"] if r["repo"] == "local")
    hooks = {h["id"]: h for h in local["hooks"]}
    assert set(hooks) == {"gpuplane-validate", "gpuplane-render-check"}
    assert hooks["gpuplane-validate"]["entry"] == ".venv/bin/gpuplane validate"
    assert hooks["gpuplane-render-check"]["entry"] == "make --no-print-directory render-check"
    assert "render-check:" in (REPO / "Makefile").read_text()
    for hook in hooks.values():
        assert hook["language"] == "system" and hook["pass_filenames"] is False
        pattern = re.compile(hook["files"])
        for path in (
            "teams/vision.yaml",
            "clusters/prod-east.yaml",
            "pools/a.yaml",
            "queues/q.yaml",
        ):
            assert pattern.search(path), (hook["id"], path)
        assert pattern.search("gpuplane.yaml")
        assert not pattern.search("docs/kueue.md") and not pattern.search("README.md")
    render = re.compile(hooks["gpuplane-render-check"]["files"])
    assert render.search("rendered/prod-east/README.md") and render.search(".github/CODEOWNERS")
    remote = [r for r in config["repos"] if r["repo"] != "local"]
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", str(r["rev"])) for r in remote)


def test_gitattributes_marks_rendered_as_generated() -> None:
    lines = (REPO / ".gitattributes").read_text().splitlines()
    assert "rendered/** linguist-generated=true" in lines
