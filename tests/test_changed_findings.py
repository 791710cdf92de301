"""A finding several files share lands on the file the change adds or edits.

When a pull request's team file over-commits a pool, or declares a namespace another team
already has, its author must be told on their own line (the `error`, and so the GitHub
annotation), with the other teams' entries as notes. Each test builds a git repository of the
example platform, commits it, changes it as a pull request would and runs the CLI. Without git
(or without change information) the findings stay where they have always been.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from renderer.cli import main
from renderer.inputs.changes import changed_files, changed_lines
from renderer.pipeline import load_platform
from tests.conftest import REPO, commit_all, copy_inputs

# In the example, h100-train holds 4 nodes x 8 GPUs = 32 and the teams' nominal quotas on it
# fill it exactly: vision 8, llm 16, recsys 4, speech 4. Any raise over-commits it.
SPEECH_H100 = "{pool: h100-train, nominal: 4, borrowingLimit: 8, lendingLimit: 2}"


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No CI variable, no user or system git configuration, no repository above tmp_path."""
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def committed(root: Path) -> Path:
    """The example platform's inputs in `root`, committed on branch main."""
    copy_inputs(REPO, root)
    commit_all(root, "base")
    return root


def edit(root: Path, file: str, old: str, new: str) -> int:
    """Replace `old` (once) in an input file; the 1-based line the replacement is on."""
    path = root / file
    text = path.read_text()
    assert old in text, f"the example changed: {old!r} is no longer in {file}"
    path.write_text(text.replace(old, new, 1))
    return text[: text.index(old)].count("\n") + 1


def line_of(root: Path, file: str, needle: str) -> int:
    lines = (root / file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def nominal_column(root: Path, file: str, line: int) -> int:
    text = (root / file).read_text().splitlines()[line - 1]
    return text.index("nominal: ") + len("nominal: ") + 1


def new_team(root: Path, name: str, namespaces: str, gpus: str) -> str:
    """A new team file, made from speech's the way a newcomer copies one: name, namespaces and
    GPU quota replaced."""
    text = (root / "teams" / "speech.yaml").read_text().replace("name: speech\n", f"name: {name}\n")
    start, end = text.index("  namespaces:\n"), text.index("  resources:\n")
    text = text[:start] + namespaces + gpus + text[end:]
    file = f"teams/{name}.yaml"
    (root / file).write_text(text)
    return file


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def findings_of(root: Path, rule: str) -> list[dict[str, object]]:
    """`validate --format json`'s findings of one rule."""
    _, output = cli("-C", str(root), "validate", "--format", "json")
    return [d for d in json.loads(output)["findings"] if d["rule"] == rule]


def findings(root: Path, rule: str) -> list[dict[str, object]]:
    """The same, for a platform that must fail."""
    code, output = cli("-C", str(root), "validate")
    assert code == 1, output
    return findings_of(root, rule)


# --- over-committed pools --------------------------------------------------------------------


def test_edited_team_gets_the_error_and_the_others_notes(tmp_path: Path) -> None:
    """speech raises its 4 to 8: 36 promised on 32. Without change information the error would
    sit on llm (the largest ask, 16); the change is speech's, so speech's line is told."""
    root = committed(tmp_path / "repo")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 8")
    )
    col = nominal_column(root, "teams/speech.yaml", line)

    code, text = cli("-C", str(root), "validate")
    assert code == 1
    assert (
        f"teams/speech.yaml:{line}:{col}: error[quota-exceeds-pool] pool 'h100-train' is promised "
        "36 GPUs and holds 32: team 'speech' asks for 8 of them"
    ) in text
    llm = line_of(root, "teams/llm.yaml", "pool: h100-train")
    assert f"  note: teams/llm.yaml:{llm}:" in text and "team 'llm' asks for 16" in text
    assert "team 'vision' asks for 8" in text and "team 'recsys' asks for 4" in text
    assert "  note: pools/h100-train.yaml:" in text
    assert (
        "  hint: lower gpus[0].nominal in teams/speech.yaml by 4, or add nodes to 'h100-train'"
        in text
    )
    assert text.count("error[quota-exceeds-pool]") == 1

    code, github = cli("-C", str(root), "validate", "--format", "github")
    assert code == 1
    (annotation,) = [ln for ln in github.splitlines() if ln.startswith("::error ")]
    assert annotation.startswith(
        f"::error file=teams/speech.yaml,line={line},col={col},title=quota-exceeds-pool::"
    )
    assert f"%0Anote: teams/llm.yaml:{llm}:" in annotation
    assert "file=teams/llm.yaml" not in github


def test_without_git_the_largest_ask_keeps_the_error(tmp_path: Path) -> None:
    """The same edit in a folder outside git: nothing is known about the change, so the error
    stays on the largest ask (llm's 16) as it always has."""
    root = copy_inputs(REPO, tmp_path / "plain")
    edit(root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 8"))
    assert changed_files(root) is None
    (found,) = findings(root, "quota-exceeds-pool")
    assert found["file"] == "teams/llm.yaml"
    assert found["line"] == line_of(root, "teams/llm.yaml", "pool: h100-train")
    assert {n["file"] for n in found["notes"]} == {  # type: ignore[union-attr]
        "teams/vision.yaml",
        "teams/recsys.yaml",
        "teams/speech.yaml",
        "pools/h100-train.yaml",
    }
    assert found["hint"] == (
        "lower gpus[0].nominal (or another team's) by 4 in total, or add nodes to 'h100-train'"
    )


def test_committed_repository_without_changes_keeps_todays_placement(tmp_path: Path) -> None:
    """An over-commitment already in HEAD, with a clean working tree: no file is changed."""
    root = committed(tmp_path / "repo")
    edit(root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 8"))
    git(root, "commit", "-q", "-am", "speech asks for more")
    assert changed_files(root) == frozenset()
    (found,) = findings(root, "quota-exceeds-pool")
    assert found["file"] == "teams/llm.yaml"


def test_new_team_file_gets_the_error(tmp_path: Path) -> None:
    """A new team asking for 4 on the full pool: the smallest ask, but the newcomer's."""
    root = committed(tmp_path / "repo")
    file = new_team(
        root,
        "translate",
        "  namespaces:\n    - {name: translate-train, cluster: prod-east, purpose: training}\n",
        "  gpus:\n    - {pool: h100-train, nominal: 4}\n",
    )
    assert changed_files(root) == frozenset({file})
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == (file, line_of(root, file, "pool: h100-train"))
    assert "team 'translate' asks for 4 of them" in str(found["message"])
    notes = [n["file"] for n in found["notes"]]  # type: ignore[union-attr]
    assert file not in notes and "teams/llm.yaml" in notes and "teams/speech.yaml" in notes
    assert found["hint"] == (f"lower gpus[0].nominal in {file} by 4, or add nodes to 'h100-train'")


def test_changed_team_that_cannot_fix_it_alone_is_told_so(tmp_path: Path) -> None:
    """The pool shrinks to 3 nodes (24) and speech asks for 5: 33 on 24, 9 too many, more than
    speech's 5. Speech's file changed too, so it gets the error, and the hint says others must
    give the rest."""
    root = committed(tmp_path / "repo")
    edit(root, "pools/h100-train.yaml", "  nodes: 4\n", "  nodes: 3\n")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 5")
    )
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)
    assert found["hint"] == (
        "lower gpus[0].nominal in teams/speech.yaml (it asks for 5) and other teams' by 9 in "
        "total, or add nodes to 'h100-train'"
    )


def test_shrunk_pool_gets_the_error_on_its_nodes(tmp_path: Path) -> None:
    """Only the pool file changed (4 nodes to 3): the error is on its `nodes`, every team's
    quota a note."""
    root = committed(tmp_path / "repo")
    line = edit(root, "pools/h100-train.yaml", "  nodes: 4\n", "  nodes: 3\n")
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("pools/h100-train.yaml", line)
    assert found["message"] == (
        "pool 'h100-train' is promised 32 GPUs and holds 24: it declares 3 nodes x 8 GPUs"
    )
    assert sorted(n["file"] for n in found["notes"]) == [  # type: ignore[union-attr]
        "teams/llm.yaml",
        "teams/recsys.yaml",
        "teams/speech.yaml",
        "teams/vision.yaml",
    ]
    assert "raise spec.nodes in pools/h100-train.yaml" in str(found["hint"])


def test_several_changed_teams_the_largest_changed_ask_gets_it(tmp_path: Path) -> None:
    """recsys (4 to 6) and speech (4 to 5) both changed; llm's 16 did not. The error goes to
    the larger changed ask, recsys, and speech is a note like the others."""
    root = committed(tmp_path / "repo")
    recsys = edit(
        root,
        "teams/recsys.yaml",
        "{pool: h100-train, nominal: 4,",
        "{pool: h100-train, nominal: 6,",
    )
    edit(root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 5"))
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/recsys.yaml", recsys)
    assert "teams/speech.yaml" in [n["file"] for n in found["notes"]]  # type: ignore[union-attr]


def test_guaranteed_capacity_lands_on_the_changed_team(tmp_path: Path) -> None:
    """Committed: h100-train shrinks to 2 nodes (16 GPUs) and prod oversubscribes 2x, so the
    nominal 32 fit (16 x 2) and the kept parts (nominal minus lendingLimit: vision 4, llm 8,
    recsys 2, speech 2) fill the 16 exactly. The change: speech stops lending and keeps 4, 18
    on 16. Without change information llm (keeps 8) would get the error."""
    root = committed(tmp_path / "repo")
    edit(root, "pools/h100-train.yaml", "  nodes: 4\n", "  nodes: 2\n")
    edit(root, "queues/prod.yaml", "oversubscription: 1.0", "oversubscription: 2.0")
    git(root, "commit", "-q", "-am", "a smaller pool, oversubscribed 2x")
    assert not findings_of(root, "guaranteed-exceeds-capacity")
    line = edit(
        root,
        "teams/speech.yaml",
        SPEECH_H100,
        SPEECH_H100.replace("lendingLimit: 2", "lendingLimit: 0"),
    )
    (found,) = findings(root, "guaranteed-exceeds-capacity")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)
    assert found["message"] == (
        "pool 'h100-train' is promised 18 GPUs that are never lent and holds 16: "
        "team 'speech' asks for 4 of them"
    )
    assert found["hint"] == (
        "set or raise lendingLimit on gpus[0] in teams/speech.yaml so 2 can be lent, "
        "or add nodes to 'h100-train'"
    )
    assert not findings_of(root, "quota-exceeds-pool")


def test_the_readme_example_is_what_a_change_to_vision_gets(tmp_path: Path) -> None:
    """README.md shows the report of a change to teams/vision.yaml (the golden error case's
    file): in a git repository, that is what validate prints, line for line."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("```\nteams/vision.yaml:") + len("```\n")
    shown = readme[start : readme.index("```", start)].splitlines()
    root = committed(tmp_path / "repo")
    case = REPO / "tests" / "cases" / "errors" / "quota-exceeds-pool" / "teams" / "vision.yaml"
    (root / "teams" / "vision.yaml").write_text(case.read_text())
    code, text = cli("-C", str(root), "validate")
    assert code == 1
    assert text.splitlines()[: len(shown)] == shown


# --- the edited line, not the edited file ---------------------------------------------------


def test_a_reworded_description_does_not_make_a_team_the_change(tmp_path: Path) -> None:
    """llm's description is reworded and speech raises its 4 to 6 (34 on 32): llm's file
    changed but none of its quotas did, so speech, whose quota line changed, is told."""
    root = committed(tmp_path / "repo")
    described = edit(root, "teams/llm.yaml", "description: Pre-training", "description: Training")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 6")
    )
    assert changed_lines(root) == {
        "teams/llm.yaml": frozenset({described}),
        "teams/speech.yaml": frozenset({line}),
    }
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)
    assert found["column"] == nominal_column(root, "teams/speech.yaml", line)
    assert found["message"] == (
        "pool 'h100-train' is promised 34 GPUs and holds 32: team 'speech' asks for 6 of them"
    )
    assert found["hint"] == (
        "lower gpus[0].nominal in teams/speech.yaml by 2, or add nodes to 'h100-train'"
    )
    llm = line_of(root, "teams/llm.yaml", "pool: h100-train")
    assert {"file": "teams/llm.yaml", "line": llm} in [
        {"file": n["file"], "line": n["line"]}
        for n in found["notes"]  # type: ignore[union-attr]
    ]


def test_another_quota_of_the_same_file_is_not_the_change(tmp_path: Path) -> None:
    """llm edits its l40s-infer quota (another pool) while speech raises h100-train: on
    h100-train only speech's entry changed, so llm's h100-train quota is a note."""
    root = committed(tmp_path / "repo")
    edit(
        root, "teams/llm.yaml", "{pool: l40s-infer, nominal: 32,", "{pool: l40s-infer, nominal: 30,"
    )
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 6")
    )
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)


def test_a_reworded_team_does_not_take_a_shrunk_pools_error(tmp_path: Path) -> None:
    """The pool shrinks to 3 nodes and llm's description is reworded: no quota changed, so the
    error is on the pool's `nodes`, as when the pool file alone changed."""
    root = committed(tmp_path / "repo")
    line = edit(root, "pools/h100-train.yaml", "  nodes: 4\n", "  nodes: 3\n")
    edit(root, "teams/llm.yaml", "description: Pre-training", "description: Training")
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("pools/h100-train.yaml", line)
    assert "raise spec.nodes in pools/h100-train.yaml" in str(found["hint"])


def test_a_pool_edit_that_keeps_its_size_does_not_take_the_error(tmp_path: Path) -> None:
    """The pool's cost changes and speech raises its quota: the pool holds what it did, so
    the error is speech's, even though the pool file changed too."""
    root = committed(tmp_path / "repo")
    edit(root, "pools/h100-train.yaml", "gpuHour: 2.85", "gpuHour: 3.10")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 6")
    )
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)


def test_a_new_team_taking_a_name_is_told_though_the_owner_was_edited(tmp_path: Path) -> None:
    """A new teams/aaa.yaml (first in file order) claims llm-train, and llm's description is
    reworded in the same change: llm's namespace entry did not change, so llm keeps the name
    and the newcomer is told."""
    root = committed(tmp_path / "repo")
    file = new_team(
        root,
        "aaa",
        "  namespaces:\n    - {name: llm-train, cluster: prod-east, purpose: training}\n",
        "",
    )
    edit(root, "teams/llm.yaml", "description: Pre-training", "description: Training")
    (found,) = findings(root, "namespace-conflict")
    assert (found["file"], found["line"]) == (file, line_of(root, file, "name: llm-train"))
    assert found["message"] == (
        "namespace 'llm-train' on cluster 'prod-east' is already declared by team 'llm'"
    )
    owner = line_of(root, "teams/llm.yaml", "name: llm-train")
    assert [(n["file"], n["line"]) for n in found["notes"]] == [  # type: ignore[union-attr]
        ("teams/llm.yaml", owner)
    ]
    assert found["hint"] == (
        f"choose another name for namespaces[0] in {file}, e.g. prefix it with the team name"
    )


# --- a queue's oversubscription --------------------------------------------------------------


def test_lowered_oversubscription_gets_the_error_on_the_queue(tmp_path: Path) -> None:
    """staging lowers its oversubscription from 1.5 to 1.0: h200-tune (1 node x 8 GPUs) is
    promised 12 and l4-serve (2 x 4) 10, which fitted only 1.5x. No team changed, so each error
    is on the queue's `oversubscription`, the teams' quotas and the pool as notes, and the
    hint says how far to raise it back."""
    root = committed(tmp_path / "repo")
    line = edit(root, "queues/staging.yaml", "oversubscription: 1.5", "oversubscription: 1.0")
    col = (root / "queues/staging.yaml").read_text().splitlines()[line - 1].index("1.0") + 1
    found = {str(f["message"]).split("'")[1]: f for f in findings(root, "quota-exceeds-pool")}
    assert sorted(found) == ["h200-tune", "l4-serve"]
    h200, l4 = found["h200-tune"], found["l4-serve"]
    for one in (h200, l4):
        assert (one["file"], one["line"], one["column"]) == ("queues/staging.yaml", line, col)
        notes = [n["file"] for n in one["notes"]]  # type: ignore[union-attr]
        assert "teams/search.yaml" in notes and "teams/llm-eval.yaml" in notes
        assert "queues/staging.yaml" not in notes
    assert h200["message"] == (
        "pool 'h200-tune' is promised 12 GPUs and holds 8: queue 'staging' allows 1x "
        "oversubscription"
    )
    assert h200["hint"] == (
        "raise spec.oversubscription in queues/staging.yaml to at least 1.5, or lower the "
        "teams' nominal quotas on 'h200-tune' by 4 in total"
    )
    assert "pools/h200-tune.yaml" in [n["file"] for n in h200["notes"]]  # type: ignore[union-attr]
    assert l4["hint"] == (
        "raise spec.oversubscription in queues/staging.yaml to at least 1.25, or lower the "
        "teams' nominal quotas on 'l4-serve' by 2 in total"
    )


def test_a_queue_edit_elsewhere_does_not_take_a_teams_error(tmp_path: Path) -> None:
    """prod's description is reworded and speech raises its quota: the queue's ratio did not
    change, so speech is told."""
    root = committed(tmp_path / "repo")
    edit(root, "queues/prod.yaml", "  description: ", "  description: The ")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 6")
    )
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)


# --- namespaces ------------------------------------------------------------------------------


def test_new_team_claiming_a_namespace_is_told_not_the_owner(tmp_path: Path) -> None:
    """A new team `alpha` (its file sorts before speech's) declares speech-train. Without change
    information the error would land on speech, which had the name first; the newcomer is told."""
    root = committed(tmp_path / "repo")
    file = new_team(
        root,
        "alpha",
        "  namespaces:\n    - {name: speech-train, cluster: prod-east, purpose: training}\n",
        "",
    )
    code, text = cli("-C", str(root), "validate")
    assert code == 1
    line = line_of(root, file, "name: speech-train")
    owner = line_of(root, "teams/speech.yaml", "name: speech-train")
    assert (
        f"{file}:{line}:14: error[namespace-conflict] namespace 'speech-train' on cluster "
        "'prod-east' is already declared by team 'speech'"
    ) in text
    assert f"  note: teams/speech.yaml:{owner}:14: declared first here" in text
    assert (
        f"  hint: choose another name for namespaces[0] in {file}, e.g. prefix it with the "
        "team name"
    ) in text
    assert text.count("error[namespace-conflict]") == 1

    _, github = cli("-C", str(root), "validate", "--format", "github")
    (annotation,) = [ln for ln in github.splitlines() if "title=namespace-conflict" in ln]
    assert annotation.startswith(f"::error file={file},line={line},col=14,")


def test_namespace_clash_without_git_stays_on_the_later_file(tmp_path: Path) -> None:
    """Outside git the first file in name order keeps the name: alpha, so speech is told."""
    root = copy_inputs(REPO, tmp_path / "plain")
    file = new_team(
        root,
        "alpha",
        "  namespaces:\n    - {name: speech-train, cluster: prod-east, purpose: training}\n",
        "",
    )
    (found,) = findings(root, "namespace-conflict")
    assert found["file"] == "teams/speech.yaml"
    assert found["message"] == (
        "namespace 'speech-train' on cluster 'prod-east' is already declared by team 'alpha'"
    )
    assert [n["file"] for n in found["notes"]] == [file]  # type: ignore[union-attr]
    assert found["hint"] == "choose another name, e.g. prefix it with the team name"


# --- where the change information comes from -------------------------------------------------


def pull_request(root: Path) -> int:
    """A feature branch whose one commit raises speech's quota, working tree clean; its line."""
    git(root, "checkout", "-q", "-b", "feature")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 8")
    )
    git(root, "commit", "-q", "-am", "speech asks for more")
    return line


def test_github_base_ref_compares_with_the_remote_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a pull request's CI run the change is what the branch adds to origin/<base>. The local
    `main` is moved onto the feature branch, so only origin/main gives the right answer."""
    root = committed(tmp_path / "repo")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    line = pull_request(root)
    git(root, "branch", "-f", "main", "feature")
    (found,) = findings(root, "quota-exceeds-pool")
    assert found["file"] == "teams/llm.yaml"  # no CI variable: a clean tree changes nothing
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    assert changed_files(root) == frozenset({"teams/speech.yaml"})
    code, github = cli("-C", str(root), "validate", "--format", "github")
    assert code == 1
    (annotation,) = [ln for ln in github.splitlines() if ln.startswith("::error ")]
    assert annotation.startswith(f"::error file=teams/speech.yaml,line={line},")


def test_github_base_ref_falls_back_to_the_local_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    line = pull_request(root)
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    (found,) = findings(root, "quota-exceeds-pool")
    assert (found["file"], found["line"]) == ("teams/speech.yaml", line)
    monkeypatch.setenv("GITHUB_BASE_REF", "no-such-branch")
    assert changed_files(root) is None
    (found,) = findings(root, "quota-exceeds-pool")
    assert found["file"] == "teams/llm.yaml"


@pytest.mark.parametrize("command", ["validate", "render", "plan"])
def test_every_command_that_reports_findings_places_them_alike(
    tmp_path: Path, command: str
) -> None:
    root = committed(tmp_path / "repo")
    line = edit(
        root, "teams/speech.yaml", SPEECH_H100, SPEECH_H100.replace("nominal: 4", "nominal: 8")
    )
    code, text = cli("-C", str(root), command)
    assert code == 1
    assert f"teams/speech.yaml:{line}:" in text.split("error[quota-exceeds-pool]")[0]


def test_diff_places_the_heads_findings_by_its_base(tmp_path: Path) -> None:
    """`diff --base main` on a branch: the change is the branch's commits, not the (clean)
    working tree."""
    root = committed(tmp_path / "repo")
    line = pull_request(root)
    code, text = cli("-C", str(root), "diff", "--base", "main", "--format", "text")
    assert code == 1
    assert (
        f"teams/speech.yaml:{line}:{nominal_column(root, 'teams/speech.yaml', line)}: "
        "error[quota-exceeds-pool]"
    ) in text


def test_validate_takes_the_base_diff_takes(tmp_path: Path) -> None:
    """On a committed feature branch, `validate --base main` places the error as `diff --base
    main` does (on speech's raised line), where plain `validate` sees a clean tree."""
    root = committed(tmp_path / "repo")
    line = pull_request(root)
    col = nominal_column(root, "teams/speech.yaml", line)
    (plain,) = findings(root, "quota-exceeds-pool")
    assert plain["file"] == "teams/llm.yaml"
    code, text = cli("-C", str(root), "validate", "--base", "main")
    assert code == 1
    assert f"teams/speech.yaml:{line}:{col}: error[quota-exceeds-pool]" in text
    _, diffed = cli("-C", str(root), "diff", "--base", "main", "--format", "text")
    assert f"teams/speech.yaml:{line}:{col}: error[quota-exceeds-pool]" in diffed


def test_a_base_that_names_no_commit_is_a_usage_error(tmp_path: Path) -> None:
    """Asked for explicitly, a bad --base is not quietly ignored: exit 2, saying why."""
    root = committed(tmp_path / "repo")
    code, text = cli("-C", str(root), "validate", "--base", "no-such-branch")
    assert code == 2
    assert "--base no-such-branch: no such commit, branch or tag" in text
    code, text = cli("-C", str(root), "validate", "--base=--output=x")  # never an option to git
    assert code == 2
    assert "--base --output=x: no such commit, branch or tag" in text
    plain = copy_inputs(REPO, tmp_path / "plain")
    code, text = cli("-C", str(plain), "validate", "--base", "main")
    assert code == 2
    assert "is not in a git work tree" in text


def test_a_shallow_clone_without_the_fork_point_knows_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI checkout one commit deep of both the branch and its base: they share no history in
    the clone, so what changed is unknown. Comparing with the base's tip instead would count
    the base's own later edit (recsys lowering its quota) as the change."""
    origin = committed(tmp_path / "origin")
    pull_request(origin)
    git(origin, "checkout", "-q", "main")
    edit(
        origin,
        "teams/recsys.yaml",
        "{pool: h100-train, nominal: 4,",
        "{pool: h100-train, nominal: 3,",
    )
    git(origin, "commit", "-q", "-am", "recsys gives one back")
    url = (origin / ".git").as_uri()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", url, str(clone))
    git(clone, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    assert changed_lines(clone, base="origin/main") is None
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    assert changed_lines(clone) is None
    (found,) = findings(clone, "quota-exceeds-pool")  # as without change information
    assert found["file"] == "teams/llm.yaml"
    code, _ = cli("-C", str(clone), "validate", "--base", "origin/main")
    assert code == 1  # the base exists: not a usage error, only nothing is known


# --- changed_files ---------------------------------------------------------------------------


def test_changed_files_outside_git_is_none(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "plain")
    assert changed_files(root) is None
    assert changed_files(root, base="main") is None


def test_changed_files_without_git_installed_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    (root / "teams" / "new.yaml").write_text("x: 1\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert changed_files(root) is None


def test_changed_files_lists_edited_staged_and_untracked_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    assert changed_files(root) == frozenset()
    monkeypatch.setenv("GITHUB_BASE_REF", "")  # what a push (not a pull request) run sets
    edit(root, "teams/speech.yaml", "nominal: 4", "nominal: 5")
    edit(root, "pools/l4-serve.yaml", "currency: USD", "currency: EUR")
    git(root, "add", "pools/l4-serve.yaml")
    (root / "teams" / "new team.yaml").write_text("kind: Team\n")
    (root / "notes.md").write_text("not an input\n")
    (root / "teams" / "recsys.yaml").unlink()  # a deleted file has no line to report on
    assert changed_files(root) == frozenset(
        {"teams/speech.yaml", "pools/l4-serve.yaml", "teams/new team.yaml"}
    )


def test_changed_files_before_the_first_commit(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    git(root, "init", "-q")
    git(root, "add", "teams")
    found = changed_files(root)
    assert found is not None
    assert "teams/speech.yaml" in found and "clusters/prod-east.yaml" in found


def test_changed_files_of_a_platform_in_a_subfolder(tmp_path: Path) -> None:
    """The platform is `platform/` of a larger repository: paths are relative to it, and changes
    outside it are not the platform's."""
    top = tmp_path / "monorepo"
    root = copy_inputs(REPO, top / "platform")
    copy_inputs(REPO, top / "other")
    commit_all(top, "base")
    edit(root, "teams/speech.yaml", "nominal: 4", "nominal: 5")
    edit(top / "other", "teams/vision.yaml", "nominal: 8", "nominal: 9")
    (root / "teams" / "added.yaml").write_text("kind: Team\n")
    assert changed_files(root) == frozenset({"teams/speech.yaml", "teams/added.yaml"})
    assert changed_files(top / "other") == frozenset({"teams/vision.yaml"})


def test_changed_files_against_a_base(tmp_path: Path) -> None:
    root = committed(tmp_path / "repo")
    pull_request(root)
    (root / "teams" / "added.yaml").write_text("kind: Team\n")
    assert changed_files(root, base="main") == frozenset({"teams/speech.yaml", "teams/added.yaml"})
    assert changed_files(root) == frozenset({"teams/added.yaml"})
    assert changed_files(root, base="no-such-ref") is None
    assert changed_files(root, base="--output=/tmp/x") is None


def test_load_platform_runs_no_git_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Library callers and tests get a platform with no change information and no subprocess."""
    root = committed(tmp_path / "repo")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("load_platform ran a program")

    monkeypatch.setattr(subprocess, "run", refuse)
    loaded = load_platform(root)
    assert loaded.platform.changed == {}
    told = load_platform(root, changed={"teams/speech.yaml": frozenset({22}), "teams/x.yaml": None})
    assert told.platform.changed == {"teams/speech.yaml": frozenset({22}), "teams/x.yaml": None}


def test_changed_lines_are_the_working_trees_edited_lines(tmp_path: Path) -> None:
    """A replaced line, two inserted lines, a removed line (counted as the line before it), a
    staged new file (all its lines) and an untracked one (None: the whole file)."""
    root = committed(tmp_path / "repo")
    replaced = edit(root, "teams/speech.yaml", "nominal: 4", "nominal: 5")
    inserted = edit(root, "teams/vision.yaml", "  gpus:\n", "  # one\n  # two\n  gpus:\n")
    removed = edit(root, "teams/recsys.yaml", "  viewers: [finops]\n", "")
    (root / "teams" / "staged.yaml").write_text("kind: Team\nspec: {}\n")
    git(root, "add", "teams/staged.yaml")
    (root / "teams" / "untracked.yaml").write_text("kind: Team\n")
    assert changed_lines(root) == {
        "teams/speech.yaml": frozenset({replaced}),
        "teams/vision.yaml": frozenset({inserted, inserted + 1}),
        "teams/recsys.yaml": frozenset({removed - 1}),
        "teams/staged.yaml": frozenset({1, 2}),
        "teams/untracked.yaml": None,
    }


def test_changed_lines_of_names_git_quotes(tmp_path: Path) -> None:
    """A name with a space (git ends its patch header with a tab) or a non-ASCII letter (git
    writes it C-quoted, in octal) is read back as the file's own name."""
    root = committed(tmp_path / "repo")
    for name in ("teams/a b.yaml", "teams/\u00e9t\u00e9.yaml"):
        (root / name).write_text("kind: Team\nspec: {}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "two more")
    for name in ("teams/a b.yaml", "teams/\u00e9t\u00e9.yaml"):
        (root / name).write_text("kind: Team\nspec: {x: 1}\n")
    assert changed_lines(root) == {
        "teams/a b.yaml": frozenset({2}),
        "teams/\u00e9t\u00e9.yaml": frozenset({2}),
    }


def test_changed_lines_removed_from_the_top_count_the_first_line(tmp_path: Path) -> None:
    root = committed(tmp_path / "repo")
    text = (root / "teams" / "speech.yaml").read_text()
    (root / "teams" / "speech.yaml").write_text(text.split("\n", 1)[1])
    assert changed_lines(root) == {"teams/speech.yaml": frozenset({1})}


def test_changed_lines_before_the_first_commit_are_whole_files(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    git(root, "init", "-q")
    git(root, "add", "teams")
    found = changed_lines(root)
    assert found is not None
    assert found["teams/speech.yaml"] is None and found["clusters/prod-east.yaml"] is None
