"""`gpuplane diff --base REF`: the meaning of a change, on pairs of platforms in a git repository.

One repository is committed per module from the example platform; each test copies it, edits the
working tree as a pull request would, and runs the CLI. The Markdown of each case is compared
with tests/cases/diff/<case>.md, whose numbers were checked by hand against the input files
(the quota case: see test_quota_change_numbers, which derives them again).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.diff.checkout import BaseRefError, checkout_base
from renderer.commands.diff.json_form import diff_json, report_from_json
from renderer.commands.diff.markdown import MARKER, diff_markdown
from renderer.findings.envelope import envelope
from tests.conftest import REPO, commit_all, copy_inputs, edit_once, git

CASES = Path(__file__).parent / "cases" / "diff"
COMMIT = "BASE_COMMIT"
"""Stands for the base commit in golden files: the commit id depends on the example inputs."""


# --- a git repository of the example platform ---------------------------------------------------


def _diff(gpuplane: Callable[..., Any], repo: Path, crds: Path, *args: str) -> Any:
    return gpuplane("-C", str(repo), "diff", "--base", "HEAD", "--crds", str(crds), *args)


def _normalised(output: str, repo: Path) -> str:
    return output.replace(git(repo, "rev-parse", "HEAD")[:12], COMMIT)


# --- the cases --------------------------------------------------------------------------------

NEW_TEAM = """\
# yaml-language-server: $schema=../schemas/team.schema.json
apiVersion: gpuplane.dev/v1alpha1
kind: Team
metadata:
  name: translate
spec:
  description: Machine translation APIs
  owners: [translate-leads]
  members: [translate]
  codeowners: ["@example/translate"]
  costCenter: CC-1099
  contact: "#translate"
  queue: prod
  namespaces:
    - {name: translate-serve, cluster: prod-east, purpose: inference}
  gpus:
    - {pool: l40s-infer, nominal: 8, borrowingLimit: 8, lendingLimit: 4}
  images: [registry.example.com/translate/]
  egress:
    - cidr: 10.20.0.0/16
      ports: [443]
      description: dataset catalog
"""


def quota_change(repo: Path) -> None:
    """vision takes 4 more H100s, llm gives 4 up and lends 1 instead of 8."""
    edit_once(
        repo / "teams/vision.yaml",
        "{pool: h100-train, nominal: 8, borrowingLimit: 16, lendingLimit: 4}",
        "{pool: h100-train, nominal: 12, borrowingLimit: 16, lendingLimit: 4}",
    )
    edit_once(
        repo / "teams/llm.yaml",
        "{pool: h100-train, nominal: 16, borrowingLimit: 16, lendingLimit: 8}",
        "{pool: h100-train, nominal: 12, borrowingLimit: 16, lendingLimit: 1}",
    )


def new_team(repo: Path) -> None:
    (repo / "teams/translate.yaml").write_text(NEW_TEAM)


def removed_namespace(repo: Path) -> None:
    edit_once(
        repo / "teams/vision.yaml",
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "",
    )


def rbac_widening(repo: Path) -> None:
    edit_once(
        repo / "teams/vision.yaml", "owners: [vision-leads]", "owners: [vision-leads, contractors]"
    )


def egress_opening(repo: Path) -> None:
    edit_once(
        repo / "teams/vision.yaml",
        "      description: labelling service and dataset catalog\n",
        "      description: labelling service and dataset catalog\n"
        "    - cidr: 10.50.0.0/24\n      ports: [443]\n      description: model mirror\n",
    )


def no_change(repo: Path) -> None:
    pass


CHANGES: dict[str, Callable[[Path], None]] = {
    "quota-change": quota_change,
    "new-team": new_team,
    "removed-namespace": removed_namespace,
    "rbac-widening": rbac_widening,
    "egress-opening": egress_opening,
    "no-change": no_change,
}


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_markdown_golden(
    case: str, repo: Path, gpuplane: Callable[..., Any], crds: Path, update_golden: bool
) -> None:
    CHANGES[case](repo)
    result = _diff(gpuplane, repo, crds)
    assert result.exit_code == 0, result.output
    actual = _normalised(result.output, repo)
    golden = CASES / f"{case}.md"
    if update_golden:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
    assert actual == golden.read_text()
    assert actual.startswith(MARKER + "\n")
    _well_formed(actual)


def _findings(gpuplane: Callable[..., Any], repo: Path, crds: Path) -> list[dict[str, Any]]:
    result = _diff(gpuplane, repo, crds, "--format", "json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert (body["schemaVersion"], body["command"]) == (2, "diff")
    findings: list[dict[str, Any]] = body["changes"]
    return findings


def _by_code(findings: list[dict[str, Any]], code: str) -> list[dict[str, Any]]:
    return [f for f in findings if f["code"] == code]


def test_quota_change_numbers(repo: Path, gpuplane: Callable[..., Any], crds: Path) -> None:
    """The quota case's figures derived from the inputs: h100-train has 4 nodes x 8 GPUs = 32;
    vision 8 -> 12 (lends 4), llm 16 -> 12 (lends 8 -> 1), recsys and speech 4 each (lend 2,
    borrow up to 8). The cohort lends 8+2+2+4 = 16 before and 1+2+2+4 = 9 after."""
    quota_change(repo)
    findings = _findings(gpuplane, repo, crds)
    rows = {f["team"]: f for f in findings if f["code"] in ("gpu-quota", "gpu-affected")}
    assert set(rows) == {"llm", "vision", "recsys", "speech"}
    vision, llm = rows["vision"]["quota"], rows["llm"]["quota"]
    assert (vision["before"]["nominal"], vision["after"]["nominal"]) == (8, 12)
    assert (vision["before"]["guaranteed"], vision["after"]["guaranteed"]) == (4, 8)
    assert (vision["before"]["maximum"], vision["after"]["maximum"]) == (24, 28)  # 12 + 16
    # reachable: guaranteed + all the cohort lends, capped by the maximum
    assert (vision["before"]["reachable"], vision["after"]["reachable"]) == (4 + 16, 8 + 9)
    assert (llm["before"]["reachable"], llm["after"]["reachable"]) == (8 + 16, 11 + 9)
    assert (llm["before"]["guaranteed"], llm["after"]["guaranteed"]) == (8, 11)
    for team in ("recsys", "speech"):  # unchanged quota; 2 + 16 was capped at 4 + 8 = 12
        assert rows[team]["code"] == "gpu-affected"
        figures = rows[team]["quota"]
        assert (figures["before"]["reachable"], figures["after"]["reachable"]) == (12, 2 + 9)
        assert rows[team]["risk"] == "medium"
    assert rows["vision"]["code"] == rows["llm"]["code"] == "gpu-quota"
    text = _diff(gpuplane, repo, crds, "--format", "text").output
    # low: rendered objects changed in queueing, tenancy and workflows (suite jobs follow quota)
    assert "0 high, 4 medium, 3 low" in text
    assert (
        "prod-east / team vision\n  MEDIUM GPU quota changed: h100-train: nominal 8 → 12, "
        "guaranteed 4 → 8, maximum 24 → 28, reachable 20 → 17\n"
    ) in text


def test_risk_rules(repo: Path, gpuplane: Callable[..., Any], crds: Path) -> None:
    """One change of each kind that the goldens do not cover, and the risk each gets."""
    edit_once(repo / "pools/l40s-infer.yaml", "renameByDefault: false", "renameByDefault: true")
    edit_once(repo / "queues/prod.yaml", "oversubscription: 1.0", "oversubscription: 1.2")
    edit_once(repo / "teams/speech.yaml", "members: [speech]", "members: [speech, interns]")
    edit_once(repo / "teams/vision.yaml", "viewers: [ml-platform-support]", "viewers: []")
    edit_once(
        repo / "teams/vision.yaml",
        "cidr: 10.20.0.0/16\n      ports: [443]",
        "cidr: 10.20.0.0/16\n      ports: [443, 8443]",
    )
    edit_once(repo / "teams/llm.yaml", "cidr: 10.20.0.0/16", "cidr: 10.20.1.0/24")
    findings = _findings(gpuplane, repo, crds)
    got = {
        (f["code"], f["team"], f["subject"]): f["risk"] for f in findings if f["code"] != "objects"
    }
    assert got == {
        ("pool-sharing-changed", None, "l40s-infer"): "high",  # nvidia.com/gpu -> .shared
        ("queue-policy-changed", None, "prod"): "medium",
        ("rbac-widened", "speech", "oidc:interns"): "medium",
        ("rbac-narrowed", "vision", "oidc:ml-platform-support"): "low",
        # a new port on the same network opens it; nothing closes
        ("egress-opened", "vision", "10.20.0.0/16"): "high",
        # a /24 inside the /16 it replaces opens nothing
        ("egress-closed", "llm", "10.20.0.0/16"): "low",
    }
    sharing = _by_code(findings, "pool-sharing-changed")[0]["summary"]
    assert "nvidia.com/gpu.shared instead of nvidia.com/gpu" in sharing


def test_head_with_findings_exits_1(repo: Path, gpuplane: Callable[..., Any], crds: Path) -> None:
    edit_once(repo / "teams/vision.yaml", "queue: prod\n", "queue: prd\n")
    result = _diff(gpuplane, repo, crds)
    assert result.exit_code == 1
    assert result.output == gpuplane("-C", str(repo), "validate").output
    assert "error[unknown-reference] queue 'prd' does not exist" in result.output
    as_json = _diff(gpuplane, repo, crds, "--format", "json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.output)["summary"]["errors"] == 1


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("no-such-branch", "unknown revision 'no-such-branch'"),
        ("--output=/tmp/x", "refusing base ref '--output=/tmp/x'"),
    ],
)
def test_bad_ref_exits_2(
    ref: str, message: str, repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    result = gpuplane("-C", str(repo), "diff", f"--base={ref}", "--crds", str(crds))
    assert result.exit_code == 2
    assert message in result.output


def test_outside_git_exits_2(
    platform: Path, gpuplane: Callable[..., Any], crds: Path, git_env: None
) -> None:
    result = gpuplane("-C", str(platform), "diff", "--base", "HEAD", "--crds", str(crds))
    assert result.exit_code == 2
    assert "is not in a git repository" in result.output


def test_a_failure_writing_the_base_is_a_usage_error(
    repo: Path, gpuplane: Callable[..., Any], crds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base's files are written in a thread: what goes wrong there reaches the command,
    which exits 2 with git's message, and the thread has ended before its folder goes."""
    from renderer.commands.diff import checkout

    def refused(*args: Any, **kwargs: Any) -> bool:
        raise BaseRefError("cannot read the files of 'HEAD': fatal: broken pack")

    monkeypatch.setattr(checkout, "_write_paths", refused)
    result = _diff(gpuplane, repo, crds)
    assert result.exit_code == 2, result.output
    assert "broken pack" in result.output
    base = checkout.BaseCheckout(repo, "HEAD", repo / "unused")
    with pytest.raises(BaseRefError, match="broken pack"):
        base.wait()


def test_base_from_a_subfolder_and_an_invalid_base(
    tmp_path: Path, gpuplane: Callable[..., Any], crds: Path, git_env: None
) -> None:
    """The platform may live in a folder of a larger repository; a base that does not validate
    is compared as far as it loads, without rendered objects."""
    top = tmp_path / "mono"
    copy_inputs(REPO, top / "platform")
    (top / "README.md").write_text("not gpuplane\n")
    commit_all(top, "base")
    into = tmp_path / "checkout"
    into.mkdir()
    commit = checkout_base(top / "platform", "HEAD", into)
    assert commit == git(top, "rev-parse", "HEAD")
    assert sorted(p.name for p in into.iterdir()) == sorted(
        ["clusters", "pools", "teams", "queues", "gpuplane.yaml"]
    )
    assert (into / "teams/vision.yaml").read_bytes() == (REPO / "teams/vision.yaml").read_bytes()
    with pytest.raises(BaseRefError, match="unknown revision"):
        checkout_base(top / "platform", "HEAD~5", tmp_path / "none")

    vision = top / "platform/teams/vision.yaml"
    good = vision.read_text()
    vision.write_text(good.replace("queue: prod\n", "queue: prd\n"))
    git(top, "commit", "-q", "-am", "broken")
    vision.write_text(good)
    result = gpuplane("-C", str(top / "platform"), "diff", "--base", "HEAD", "--crds", str(crds))
    assert result.exit_code == 0, result.output
    assert "The base does not validate (1 error)" in result.output
    assert "Rendered objects were not compared" in result.output
    _well_formed(result.output)


# --- Markdown hygiene -------------------------------------------------------------------------


def _cells(row: str) -> int:
    """The cells of a GFM table row: `|` not escaped by a backslash separates them."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def _well_formed(markdown: str) -> None:
    lines = markdown.splitlines()
    assert lines[0] == MARKER
    depth = 0
    width = None
    for line in lines:
        if line.startswith("<details>"):
            depth += 1
            assert depth == 1, "nested <details>"
        elif line == "</details>":
            depth -= 1
            assert depth == 0, "</details> without <details>"
        if line.startswith("|"):
            assert line.endswith("|") and not line.endswith("\\|"), line
            if width is None:
                width = _cells(line)
            assert _cells(line) == width, line
        else:
            width = None
    assert depth == 0, "a <details> is left open"
    assert len(markdown) <= 65536
    # no HTML but ours
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", markdown))
    assert tags <= {"details", "summary"}, tags


def test_injection_in_free_text(repo: Path, gpuplane: Callable[..., Any], crds: Path) -> None:
    hostile = "Vision | x |\\n<script>alert(1)</script>\\n# owned\\n</details> @octocat `x` &amp;"
    edit_once(
        repo / "teams/vision.yaml",
        "description: Computer vision research and the image-understanding services built on it",
        f'description: "{hostile}"',
    )
    edit_once(
        repo / "teams/vision.yaml",
        "      description: labelling service and dataset catalog\n",
        "      description: labelling service and dataset catalog\n"
        '    - cidr: 10.50.0.0/16\n      ports: [443]\n      description: "a | b <img src=x>"\n',
    )
    (repo / "teams/translate.yaml").write_text(
        NEW_TEAM.replace("Machine translation APIs", f'"{hostile}"')
    )
    result = _diff(gpuplane, repo, crds)
    assert result.exit_code == 0, result.output
    markdown = result.output
    _well_formed(markdown)
    assert "<script" not in markdown and "<img" not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    assert "\n# owned" not in markdown
    assert "@octocat" not in markdown  # no mention: GitHub would notify someone
    assert markdown.count("</details>") == markdown.count("<details>")
    # JSON keeps the text exactly as written
    findings = _findings(gpuplane, repo, crds)
    (changed,) = [f for f in findings if f["code"] == "team-changed"]
    assert any("<script>alert(1)</script>\n# owned" in d for d in changed["details"])


def test_truncation_and_json_round_trip(
    repo: Path, gpuplane: Callable[..., Any], crds: Path
) -> None:
    removed_namespace(repo)
    rbac_widening(repo)
    new_team(repo)
    data = json.loads(_diff(gpuplane, repo, crds, "--format", "json").output)
    report = report_from_json(data)
    assert envelope("diff", diff_json(report)) == data  # the working tree has no finding
    assert json.loads(json.dumps(data, sort_keys=True)) == data
    full = diff_markdown(report)
    assert full == _diff(gpuplane, repo, crds).output
    total = len(full.splitlines())
    for limit in (600, 1500, 2500, 4000, len(full) - 1):
        cut = diff_markdown(report, max_chars=limit)
        assert len(cut) <= limit
        _well_formed(cut)
        note = re.search(r"\*\*… (\d+) more lines? truncated\*\*", cut)
        assert note is not None, cut
        assert "run `gpuplane diff --base HEAD` locally" in cut
        kept = total - int(note.group(1))
        assert kept >= 2  # the marker and the verdict, always
        assert cut.startswith("\n".join(full.splitlines()[:kept]).rstrip("\n"))


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_a_cluster_the_change_does_not_reach_is_rendered_once(
    case: str,
    repo: Path,
    gpuplane: Callable[..., Any],
    crds: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Base and head render a cluster whose slice and schemas are the same bytes the same, so
    diff renders it once; the report is the one rendering both sides whole gives."""
    import renderer.pipeline as pipeline
    from renderer.commands.diff import platforms

    CHANGES[case](repo)
    rendered: list[str] = []
    real = pipeline.check_cluster

    def counted(platform: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        rendered.append(name)
        return real(platform, name, *args, **kwargs)

    monkeypatch.setattr(pipeline, "check_cluster", counted)
    shared = _diff(gpuplane, repo, crds, "--format", "json")
    once = list(rendered)
    rendered.clear()
    monkeypatch.setattr(platforms, "outcome_keys", lambda *args, **kwargs: {})
    whole = _diff(gpuplane, repo, crds, "--format", "json")
    assert (shared.exit_code, shared.output) == (whole.exit_code, whole.output)
    clusters = set(rendered)
    assert len(rendered) == 2 * len(clusters)  # both sides, every cluster
    if case == "no-change":
        assert sorted(once) == sorted(clusters)
    else:
        assert len(clusters) <= len(once) < len(rendered)
