"""The command line's face for people: a fast start, colour on a terminal only, progress on a
terminal only, and shell completion."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from renderer.cli.new import NEW_KINDS
from renderer.cli.reporters import progress, wants_color
from renderer.commands.new import KINDS
from tests.conftest import REPO

EXE = Path(sys.executable).parent / "gpuplane"
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
HEAVY = ("hera", "kubernetes_validate", "jsonschema", "referencing", "rich", "torch", "jinja2")
"""What takes the start-up time: Hera's models alone take about a second to import."""


def _break(platform: Path) -> None:
    """One error with a hint (an unknown queue), so a finding has every part that is coloured."""
    vision = platform / "teams" / "vision.yaml"
    vision.write_text(vision.read_text().replace("queue: prod\n", "queue: prd\n"))


def _python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return result.stdout


# --- a fast start --------------------------------------------------------------------------------


def test_importing_the_cli_imports_no_heavy_module() -> None:
    """`--help`, `completion` and every tab press import only the CLI module: what each command
    needs beyond it, it imports itself."""
    loaded = _python(
        "import json, sys, renderer.cli\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    )
    assert json.loads(loaded) == []


def test_no_command_starts_with_importlib_metadata() -> None:
    """importlib.metadata (with the email package it reads metadata with) takes 35 ms to
    import: the SARIF reporter and the render index's fingerprint import it when they need
    it."""
    loaded = _python("import sys, renderer.cli\nprint('importlib.metadata' in sys.modules)")
    assert loaded.strip() == "False"


def test_validate_does_not_import_hera_or_rich() -> None:
    """`validate` loads, schema-checks and policy-checks: it renders nothing, so the workflows
    layer (Hera) and rich's tables stay unimported."""
    loaded = _python(
        "import json, sys\n"
        "from click.testing import CliRunner\n"
        "from renderer.cli import main\n"
        "result = CliRunner().invoke(main, ['validate'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'hera', 'rich'})))"
    )
    assert json.loads(loaded) == []


@pytest.mark.slow
def test_load_every_rule_knows_every_rule() -> None:
    """`explain` and SARIF list a rule only once its module is imported; `load_every_rule` must
    reach as many as importing every module of the engine does."""
    ids = _python(
        "import json, importlib, pkgutil, renderer, workflows\n"
        "from renderer.findings.rules import all_rules\n"
        "import renderer.cli\n"
        "renderer.cli.loading.load_every_rule()\n"
        "reached = sorted(r.id for r in all_rules())\n"
        "for package in (renderer, workflows):\n"
        "    for m in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        if m.name != 'renderer.__main__':\n"
        "            importlib.import_module(m.name)\n"
        "print(json.dumps([reached, sorted(r.id for r in all_rules())]))"
    )
    reached, everything = json.loads(ids)
    assert len(everything) > 50, "the walk found no rules: the test is broken"
    assert reached == everything


def test_explain_and_sarif_know_rules_of_modules_the_command_never_imports() -> None:
    """In a fresh process, as a user runs it: `validate` never imports the acceptance modules,
    yet its SARIF log and `explain` know their rules."""

    def run(*args: str) -> str:
        done = subprocess.run([str(EXE), *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("explain", "result-unreadable").startswith("result-unreadable (acceptance)")
    assert "result-wrong-cluster" in run("explain", "--list")
    sarif = json.loads(run("-C", str(REPO), "validate", "--format", "sarif"))
    rules = {rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {"stale-output", "output-schema", "quota-exceeds-pool", "result-unreadable"} <= rules


def test_new_offers_the_kinds_the_scaffolder_writes() -> None:
    assert tuple(sorted(KINDS)) == NEW_KINDS


# --- colour ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "environ", "terminal", "wanted"),
    [
        (None, {}, True, True),  # a terminal: colour
        (None, {}, False, False),  # a pipe or a file: none
        (None, {"NO_COLOR": "1"}, True, False),  # NO_COLOR beats the terminal
        (None, {"NO_COLOR": ""}, True, True),  # ... when it is not empty (no-color.org)
        (True, {"NO_COLOR": "1"}, False, True),  # --color beats NO_COLOR and a pipe
        (False, {}, True, False),  # --no-color beats the terminal
    ],
)
def test_colour_precedence(
    flag: bool | None, environ: dict[str, str], terminal: bool, wanted: bool
) -> None:
    assert wants_color(environ, flag=flag, is_terminal=terminal) is wanted


def test_piped_findings_have_no_escape_codes(platform: Path, gpuplane) -> None:
    _break(platform)
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 1
    assert "error[unknown-reference]" in result.output
    assert "\x1b" not in result.output


def test_color_colours_each_part_and_changes_no_text(platform: Path, gpuplane) -> None:
    _break(platform)
    plain = gpuplane("-C", str(platform), "--no-color", "validate").output
    coloured = gpuplane("-C", str(platform), "--color", "validate").output
    lines = (platform / "teams" / "vision.yaml").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.startswith("  queue: "))
    assert f"\x1b[1mteams/vision.yaml:{line}:10\x1b[0m" in coloured  # the place bold
    assert "\x1b[31m\x1b[1merror[unknown-reference]\x1b[0m" in coloured  # the error red
    assert "\x1b[36mhint:\x1b[0m" in coloured
    assert ESCAPE.sub("", coloured) == plain


def test_a_warning_is_yellow_and_a_note_dim() -> None:
    from renderer.cli.reporters import text
    from renderer.findings.diagnostics import Diagnostic, Location, Severity

    warning = Diagnostic(
        "some-rule",
        "looks odd",
        Location("pools/a.yaml", 3, 5),
        severity=Severity.WARNING,
        notes=(("the other one", Location("pools/b.yaml", 1, 1)),),
    )
    coloured = text([warning], 2, color=True)
    assert "\x1b[33m\x1b[1mwarning[some-rule]\x1b[0m" in coloured
    assert "\x1b[2m  note: pools/b.yaml:1:1: the other one\x1b[0m" in coloured
    assert ESCAPE.sub("", coloured) == text([warning], 2)


def test_color_beats_no_color_env(
    platform: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break(platform)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in gpuplane("-C", str(platform), "validate").output
    assert "\x1b[31m" in gpuplane("-C", str(platform), "--color", "validate").output


@pytest.mark.parametrize("fmt", ["json", "github", "sarif", "junit"])
def test_formats_for_tools_are_never_coloured(platform: Path, gpuplane, fmt: str) -> None:
    _break(platform)
    result = gpuplane("-C", str(platform), "--color", "validate", "--format", fmt)
    assert result.exit_code == 1
    assert "unknown-reference" in result.output
    assert "\x1b" not in result.output


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """What `gpuplane ARGS` prints to stdout when stdout is a terminal (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [str(EXE), *args],
            stdout=follower,
            stderr=subprocess.DEVNULL,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal is closed and read to its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return b"".join(chunks).decode()


def test_a_terminal_gets_colour_unless_no_color_is_set(platform: Path) -> None:
    _break(platform)
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    args = ["-C", str(platform), "validate"]
    assert "\x1b[31m\x1b[1merror[unknown-reference]" in _on_a_terminal(args, env)
    quiet = _on_a_terminal(args, {**env, "NO_COLOR": "1"})
    assert "error[unknown-reference]" in quiet
    assert "\x1b[" not in quiet


# --- progress ---------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_shown_on_a_terminal_only() -> None:
    piped = io.StringIO()
    with progress("loading the inputs", stream=piped) as step:
        step("rendering and checking cluster prod-east")
    assert piped.getvalue() == ""
    terminal = _Terminal()
    with progress("loading the inputs", stream=terminal) as step:
        step("rendering and checking cluster prod-east")
    assert "rendering and checking cluster prod-east" in terminal.getvalue()


def test_plain_progress_has_no_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """--no-color keeps the spinner plain too: cursor movement, but no colour (SGR) codes."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    coloured, plain = _Terminal(), _Terminal()
    for stream, flag in ((coloured, False), (plain, True)):
        with progress("loading the inputs", stream=stream, plain=flag) as step:
            step("rendering")
    sgr = re.compile(r"\x1b\[[0-9;]*m")
    assert "rendering" in plain.getvalue()
    assert not [c for c in sgr.findall(plain.getvalue()) if c not in ("\x1b[0m", "\x1b[m")]
    assert [c for c in sgr.findall(coloured.getvalue()) if c not in ("\x1b[0m", "\x1b[m")]


def test_render_shows_no_progress_when_not_on_a_terminal(
    platform: Path, gpuplane, crds: Path
) -> None:
    result = gpuplane("-C", str(platform), "render", "--check", "--crds", str(crds))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("rendered/ is current"), result.output
    assert "cluster prod-east" not in result.output and "\x1b" not in result.output


# --- shell completion -------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(gpuplane, shell: str) -> None:
    result = gpuplane("completion", shell)
    assert result.exit_code == 0
    assert "_GPUPLANE_COMPLETE" in result.output
    program = shutil.which(shell)
    if program is not None:  # the shell's own parser accepts the script
        checked = subprocess.run([program, "-n"], input=result.output, text=True, check=False)
        assert checked.returncode == 0


def test_completion_help_says_how_to_install(gpuplane) -> None:
    result = gpuplane("completion", "--help")
    assert 'eval "$(gpuplane completion bash)"' in result.output
    assert "~/.config/fish/completions/gpuplane.fish" in result.output
    assert gpuplane("completion", "tcsh").exit_code == 2


def test_the_installed_command_completes_its_subcommands() -> None:
    """What the bash script asks `gpuplane` on Tab, answered by the installed console script."""
    env = {**os.environ, "_GPUPLANE_COMPLETE": "bash_complete", "COMP_WORDS": "gpuplane val"}
    result = subprocess.run(
        [str(EXE)], env={**env, "COMP_CWORD": "1"}, capture_output=True, text=True, check=False
    )
    assert "plain,validate" in result.stdout.splitlines()
