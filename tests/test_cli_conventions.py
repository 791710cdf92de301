"""What a CLI user expects of any command-line tool (issue 33, item 7): the repository found
from any subfolder as git finds its own, `gpuplane help COMMAND`, `diff`'s default base,
completion of the repository's names, tables that fit the terminal, one JSON envelope.

Expectations come from the tools users know: git (`git -C`, `git status` paths relative to the
current folder, `git help COMMAND`, `git merge-base`), click's completion protocol
(click.shell_completion: `_PROG_COMPLETE=bash_complete`, COMP_WORDS/COMP_CWORD, lines
`type,value`), never from gpuplane's own output.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from renderer.cli import main
from renderer.cli.loading import repository_root
from tests.conftest import REPO, copy_inputs, edit_once, git

FIT_CASES = REPO / "tests" / "cases" / "fit"


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)
    return result.exit_code, result.output


# --- 1. the repository found from a subfolder ---------------------------------------------


def test_repository_root_is_found_from_a_subfolder_without_git(platform: Path) -> None:
    assert not (platform / ".git").exists()
    assert repository_root(platform / "teams") == platform
    assert repository_root(platform) == platform
    nested = platform / "teams" / "a" / "b"
    nested.mkdir(parents=True)
    assert repository_root(nested) == platform


def test_a_new_repository_without_gpuplane_yaml_is_found_by_its_folders(tmp_path: Path) -> None:
    (tmp_path / "teams").mkdir()
    assert repository_root(tmp_path / "teams") == tmp_path
    lone = tmp_path / "empty"
    lone.mkdir()
    (lone / ".git").mkdir()  # a git work tree's top: the walk never leaves it
    assert repository_root(lone) == lone


@pytest.mark.parametrize("where", ["teams", "pools", "clusters"])
def test_validate_from_a_subfolder_validates_the_repository(
    platform: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(platform / where)
    code, output = invoke("validate")
    assert "no-inputs" not in output
    assert code == 0, output
    files = sum(1 for f in platform.glob("*/*.yaml") if f.parent.name != "rendered")
    assert f"{files + 1} input files" in output  # the four folders and gpuplane.yaml


def test_text_findings_name_files_from_the_users_folder(
    platform: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `git status` prints paths from the current folder: `file:line:col` opens from there;
    JSON keeps the repository-relative path code scanning and annotations resolve."""
    team = sorted((platform / "teams").glob("*.yaml"))[0]
    edit_once(team, "kind: Team\n", "kind: Team\nbogus: 1\n")
    monkeypatch.chdir(platform / "teams")
    code, output = invoke("validate")
    assert code == 1
    (line,) = [ln for ln in output.splitlines() if "schema-unknown-field" in ln]
    shown = line.split(":", 1)[0]
    assert shown == f"../teams/{team.name}"
    assert (Path.cwd() / shown).resolve() == team.resolve()


def test_dash_c_names_the_repository_itself(
    platform: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """-C is what scripts and CI pass: the repository's folder, used as given (an empty folder
    stays empty: `new` writes there, not into a repository around it)."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)  # its own (empty) work tree: no repository above
    monkeypatch.chdir(elsewhere)
    code, output = invoke("validate")
    assert "no-inputs" in output and code == 1
    code, output = invoke("-C", str(platform), "validate")
    assert code == 0, output
    code, output = invoke("-C", str(platform / "teams"), "validate")
    assert code == 1 and "no-inputs" in output


def test_plan_and_fit_from_a_subfolder(platform: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(platform / "queues")
    code, output = invoke("plan", "--format", "json")
    assert code == 0, output
    assert json.loads(output)["clusters"]
    code, output = invoke("fit", str(FIT_CASES / "job-within-nominal.yaml"))
    assert code == 0, output


# --- 2. gpuplane help ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "words", [(), ("validate",), ("plan",), ("acceptance",), ("acceptance", "report")]
)
def test_help_command_prints_what_dash_dash_help_prints(words: tuple[str, ...]) -> None:
    code, helped = invoke("help", *words)
    assert code == 0
    code, dashed = invoke(*words, "--help")
    assert code == 0
    assert helped == dashed


def test_help_of_an_unknown_command_is_a_usage_error() -> None:
    code, output = invoke("help", "nope")
    assert code == 2
    assert "No such command 'nope'" in output


# --- 3. diff's default base: the merge base with the upstream default branch ----------------


def _repo_on_a_branch(root: Path) -> tuple[str, str]:
    """The example's inputs committed on main (A); a branch from A that changes a quota (B);
    then main moves on (C) and the branch is checked out. Returns (A, C)."""
    copy_inputs(REPO, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "A")
    fork = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-qb", "feature")
    edit_once(
        root / "teams" / "llm.yaml",
        "nominal: 16, borrowingLimit: 16",
        "nominal: 12, borrowingLimit: 16",
    )
    git(root, "commit", "-qam", "B")
    git(root, "checkout", "-q", "main")
    edit_once(root / "teams" / "vision.yaml", "labelling service", "labelling services")
    git(root, "commit", "-qam", "C")
    tip = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "feature")
    return fork, tip


@pytest.mark.usefixtures("git_env")
def test_diff_without_base_compares_with_the_merge_base_and_says_so(tmp_path: Path) -> None:
    """`git merge-base HEAD main` is what a pull request from `feature` into `main` shows: A,
    not main's tip C (whose change is not the branch's)."""
    root = tmp_path / "repo"
    fork, tip = _repo_on_a_branch(root)
    code, output = invoke("-C", str(root), "diff", "--format", "json")
    assert code == 0, output
    base = json.loads(output)["base"]
    assert base["commit"] == fork != tip
    assert "main" in base["label"] and "merge base" in base["label"]
    code, text = invoke("-C", str(root), "diff", "--format", "text")
    assert code == 0
    assert f"merge base of HEAD and main ({fork[:12]})" in text


@pytest.mark.usefixtures("git_env")
def test_diff_without_base_prefers_origin_head(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    fork, _ = _repo_on_a_branch(upstream)
    git(upstream, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))  # sets origin/HEAD to main
    git(clone, "checkout", "-q", "feature")
    git(clone, "branch", "-qm", "main", "old")  # no local main: origin/HEAD must be the one
    code, output = invoke("-C", str(clone), "diff", "--format", "json")
    assert code == 0, output
    base = json.loads(output)["base"]
    assert base["commit"] == fork
    assert "origin/HEAD" in base["label"]


@pytest.mark.usefixtures("git_env")
def test_diff_without_a_base_to_find_is_a_usage_error(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    code, output = invoke("-C", str(root), "diff")
    assert code == 2
    assert "--base" in output and "Traceback" not in output
    git(root, "init", "-q", "-b", "trunk")
    code, output = invoke("-C", str(root), "diff")
    assert code == 2 and "no git commit" in output
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    code, output = invoke("-C", str(root), "diff")
    assert code == 2
    assert "no base to compare with" in output and "--base REF" in output


# --- 6. one JSON envelope for every command -----------------------------------------------

ENVELOPE = json.loads((REPO / "schemas" / "output" / "envelope.schema.json").read_text())


def _check_envelope(output: str, command: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(output)
    Draft202012Validator(ENVELOPE).validate(body)
    assert list(body)[:3] == ["schemaVersion", "command", "findings"]
    assert body["command"] == command
    assert "version" not in body and "diagnostics" not in body  # the old keys, gone
    return body


def test_the_envelope_schema_is_a_valid_schema_that_refuses_the_old_shapes() -> None:
    Draft202012Validator.check_schema(ENVELOPE)
    old = {"diagnostics": [], "summary": {"errors": 0, "warnings": 0, "files": 1}}
    assert not Draft202012Validator(ENVELOPE).is_valid(old)
    finding = {
        "rule": "x",
        "severity": "error",  # the old key: `level` now, as SARIF's result.level
        "message": "m",
        "file": "f",
        "line": 1,
        "column": 1,
        "notes": [],
        "hint": None,
    }
    bad = {"schemaVersion": 2, "command": "plan", "findings": [finding]}
    assert not Draft202012Validator(ENVELOPE).is_valid(bad)


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("validate", ("validate",)),
        ("plan", ("plan",)),
        ("plan", ("plan", "--team", "vision")),
        ("fit", ("fit", str(FIT_CASES / "job-borrows.yaml"))),
        ("schemas list", ("schemas", "list")),
        (
            "acceptance report",
            ("acceptance", "report", str(REPO / "tests" / "cases" / "acceptance" / "passing")),
        ),
    ],
)
def test_every_command_writes_the_envelope(
    platform: Path, command: str, args: tuple[str, ...]
) -> None:
    _, output = invoke("-C", str(platform), *args, "--format", "json")
    _check_envelope(output, command)


def test_findings_have_one_shape_in_every_command(platform: Path) -> None:
    """The same broken input: validate, plan and fit stop on it and write the same findings."""
    edit_once(platform / "teams" / "vision.yaml", "queue: prod", "queue: prd")
    seen = []
    for command, args in [
        ("validate", ()),
        ("plan", ()),
        ("fit", (str(FIT_CASES / "job-borrows.yaml"),)),
        ("render", ()),
    ]:
        code, output = invoke("-C", str(platform), command, *args, "--format", "json")
        assert code == 1, output
        body = _check_envelope(output, command)
        seen.append(body["findings"])
        (finding,) = [f for f in body["findings"] if f["rule"] == "unknown-reference"]
        assert (finding["level"], finding["file"]) == ("error", "teams/vision.yaml")
    assert all(found == seen[0] for found in seen)


def test_cost_writes_the_envelope(tmp_path: Path) -> None:
    from tests.cost.platform import cost_platform

    root = cost_platform(tmp_path / "repo")
    worked = REPO / "tests" / "cost" / "worked.csv"
    code, output = invoke("-C", str(root), "cost", str(worked), "--format", "json")
    assert code == 0, output
    body = _check_envelope(output, "cost")
    assert body["currency"] and body["teams"]


@pytest.mark.usefixtures("git_env")
def test_diff_writes_the_envelope_and_reads_it_back(tmp_path: Path) -> None:
    from renderer.commands.diff.json_form import report_from_json

    root = tmp_path / "repo"
    _repo_on_a_branch(root)
    code, output = invoke("-C", str(root), "diff", "--base", "main", "--format", "json")
    assert code == 0, output
    body = _check_envelope(output, "diff")
    assert any(c["code"] for c in body["changes"])
    assert report_from_json(body).base.label == "main"
    with pytest.raises(ValueError, match="schemaVersion"):
        report_from_json({**body, "schemaVersion": 1})


# --- 5. tables that fit the terminal, with whole words in their headers ---------------------

HYPHEN_CUT = re.compile(r"[A-Za-z]-(?=\s|$)")
"""A word cut with a hyphen at the end of a line or cell ("capa-" over "city")."""


def _header_words(columns: int, args: tuple[str, ...]) -> list[str]:
    """The words of every table header as rich prints it at `columns`: each table of `plan`
    rendered without its title, the lines above its rule."""
    from rich.console import Console
    from rich.table import Table

    from renderer.commands.plan import build_plan
    from renderer.commands.plan_forms import plan_tables
    from renderer.pipeline import load_platform

    platform = load_platform(REPO).platform
    teams = tuple(v for k, v in itertools.pairwise(args) if k == "--team")
    pools = tuple(v for k, v in itertools.pairwise(args) if k == "--pool")
    words = []
    for table in plan_tables(build_plan(platform, None, teams, pools), columns):
        if not isinstance(table, Table):
            continue
        table.title = None
        console = Console(width=columns, record=True, file=io.StringIO(), color_system=None)
        console.print(table)
        lines = console.export_text().splitlines()
        rule = next(i for i, line in enumerate(lines) if set(line.strip()) == {"─"})
        words += [w for line in lines[:rule] for w in line.split()]
    return words


ENGLISH = {
    # each word a header may show: whole English words, the abbreviations the legend explains
    # (cap, nom, guar, lend, room, max) and the names of the columns
    *[
        "pool",
        "resource",
        "unit",
        "nodes",
        "capacity",
        "min/max",
        "queue",
        "(limit)",
        "nominal",
        "gpus",
        "guaranteed",
        "lendable",
        "free",
        "headroom",
        "to",
        "limit",
        "used",
        "notes",
        "team",
        "borrowing",
        "borrowable",
        "reachable",
        "(cohort",
        "lends)",
        "maximum",
        "with",
        "namespace",
        "clusterqueue",
        "localqueue",
        "purpose",
        "its",
        "purpose's",
        "pools",
        "shared",
        "endpoint",
        "replicas",
        "at",
        "max",
        "max,",
        "(max",
        "+",
        "surge)",
        "x",
        "per",
        "replica",
        "team's",
        "endpoints",
        "of",
        "cap",
        "nom",
        "guar",
        "lend",
        "room",
        "can",
        "borrow",
        "reach",
        "!",
        "cohort",
    ],
}


@pytest.mark.parametrize("columns", [80, 90, 100, 120])
@pytest.mark.parametrize("args", [(), ("--team", "llm"), ("--pool", "h100-train")])
def test_plan_tables_fit_the_width_and_never_cut_a_header_word(
    columns: int, args: tuple[str, ...]
) -> None:
    code, output = invoke(
        "-C", str(REPO), "--no-color", "plan", *args, env={"COLUMNS": str(columns)}
    )
    assert code == 0, output
    too_wide = [line for line in output.splitlines() if len(line) > columns]
    assert not too_wide, too_wide
    assert not [line for line in output.splitlines() if HYPHEN_CUT.search(line)], output
    words = _header_words(columns, args)
    assert words  # the search finds the headers
    unknown = sorted({w for w in words if w.lower() not in ENGLISH})
    assert not unknown, (unknown, output)
    if any(w in words for w in ("nom", "guar", "cap")):  # abbreviated: the legend says so
        assert (
            "nom = nominal" in output or "guar = guaranteed" in output or "cap = capacity" in output
        )


def test_columns_decides_the_width_in_a_pipe_too() -> None:
    from renderer.cli.plan import table_width

    assert table_width({"COLUMNS": "90"}, 200, is_terminal=False) == 90
    assert table_width({}, 200, is_terminal=False) == 100
    assert table_width({}, 132, is_terminal=True) == 132
    assert table_width({"COLUMNS": "x"}, 132, is_terminal=True) == 132


# --- 4. completion of the repository's names ---------------------------------------------


def _complete(root: Path, words: str) -> tuple[list[str], str]:
    """What bash gets from `gpuplane` for COMP_WORDS/COMP_CWORD (click.shell_completion's
    bash_complete protocol: one `type,value` line per candidate), with its whole output."""
    parts = words.split(" ")
    env = {
        "_GPUPLANE_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(parts) - 1),
    }
    result = CliRunner().invoke(main, [], prog_name="gpuplane", env=env)
    assert result.exit_code == 0, result.output
    values = [line.split(",", 1)[1] for line in result.output.splitlines() if "," in line]
    return values, result.output


def _team_file_names(root: Path, key: str) -> set[str]:
    from ruamel.yaml import YAML

    names = set()
    for team in (root / "teams").glob("*.yaml"):
        spec = YAML(typ="safe").load(team.read_text())["spec"]
        names |= {n[key] for n in spec.get("namespaces", [])}
    return names


@pytest.mark.parametrize(
    ("words", "folder"),
    [
        ("gpuplane plan --team ", "teams"),
        ("gpuplane plan --pool ", "pools"),
        ("gpuplane plan --cluster ", "clusters"),
        ("gpuplane fit job.yaml --cluster ", "clusters"),
        ("gpuplane acceptance report x --pool ", "pools"),
        ("gpuplane diagram --cluster ", "clusters"),
    ],
)
def test_completion_offers_the_repositorys_names(
    platform: Path, monkeypatch: pytest.MonkeyPatch, words: str, folder: str
) -> None:
    monkeypatch.chdir(platform / "teams")  # from a subfolder, as a user types
    values, _ = _complete(platform, words)
    assert values == sorted(p.stem for p in (platform / folder).glob("*.yaml"))


def test_completion_narrows_to_what_is_typed_and_offers_namespaces(
    platform: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(platform)
    values, _ = _complete(platform, "gpuplane plan --team ll")
    assert values and all(v.startswith("ll") for v in values)
    assert "llm" in values
    values, _ = _complete(platform, "gpuplane fit job.yaml --namespace ")
    assert set(values) == _team_file_names(platform, "name")
    values, _ = _complete(platform, "gpuplane new ")
    assert values == ["cluster", "pool", "queue", "team"]


def test_completion_offers_rule_ids() -> None:
    from renderer.cli.loading import load_every_rule
    from renderer.findings.rules import all_rules

    load_every_rule()
    rules = sorted(r.id for r in all_rules())
    values, _ = _complete(REPO, "gpuplane explain ")
    assert values == rules
    values, _ = _complete(REPO, "gpuplane explain no-in")
    assert values == ["no-inputs"]


@pytest.mark.usefixtures("git_env")
def test_completion_offers_git_refs_for_base(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _repo_on_a_branch(root)
    git(root, "tag", "v1")
    for words in (f"gpuplane -C {root} diff --base ", f"gpuplane -C {root} validate --base "):
        values, _ = _complete(root, words)
        assert {"HEAD", "main", "feature", "v1"} <= set(values)


def test_completion_never_prints_a_traceback_on_a_broken_repository(
    platform: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (platform / "teams" / "broken.yaml").write_text("spec: [unclosed\n  - {")
    (platform / "teams" / "list.yaml").write_text("- 1\n- 2\n")
    (platform / "teams" / "binary.yaml").write_bytes(b"\xff\xfe\x00")
    monkeypatch.chdir(platform)
    values, output = _complete(platform, "gpuplane fit job.yaml --namespace ")
    assert "Traceback" not in output
    assert set(values) == _team_file_names_skipping_broken(platform)
    monkeypatch.chdir(platform.parent)
    (platform.parent / ".git").mkdir()  # no repository here, and no git: nothing, quietly
    for words in ("gpuplane plan --team ", "gpuplane diff --base ", "gpuplane fit j --namespace "):
        values, output = _complete(platform.parent, words)
        assert values == [] and "Traceback" not in output


def _team_file_names_skipping_broken(root: Path) -> set[str]:
    from ruamel.yaml import YAML

    names = set()
    for team in (root / "teams").glob("*.yaml"):
        try:
            spec = YAML(typ="safe").load(team.read_text())["spec"]
        except Exception:
            continue
        names |= {n["name"] for n in spec.get("namespaces", [])}
    return names
