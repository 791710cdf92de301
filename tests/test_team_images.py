"""A team that lists no image registries can run no container: every command says so.

The security layer's ValidatingAdmissionPolicy admits a pod into a team namespace only when each
of its images lies under one of the team's `spec.images` prefixes, so a team without any has
every pod refused (renderer/layers/security/images.py). `new team` writes `images` as a blank to
fill, `validate` reports a team without images (team-images-missing), `plan --team` and the
generated README name the team's registries or say that every pod is refused, and `fit` refuses
a job of such a team with that reason.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from renderer.layers import readme
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import REPO, copy_inputs
from tests.test_scaffold import TEAM, fill, findings, new


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_inputs(REPO, tmp_path / "repo")


def _without_images(root: Path, team: str) -> Path:
    """The team file with its `images` list deleted, as a lead who took it for optional would."""
    path = root / "teams" / f"{team}.yaml"
    text = path.read_text()
    cut = re.sub(r"(?m)^  images:\n(    - .*\n)+", "", text)
    cut = re.sub(r"(?m)^  images:(  # REPLACE-ME: .*| \[.*\])\n", "", cut)
    assert cut != text and "\n  images:" not in cut
    path.write_text(cut)
    return path


def _apply(path: Path, hint: str) -> None:
    """Write what the hint says: `add to spec of teams/T.yaml: images: [...] (...)`."""
    match = re.match(r"add to spec of (\S+): (images: \[\S+\]) \(", hint)
    assert match is not None, hint
    assert path.as_posix().endswith(match[1])
    text = path.read_text()
    path.write_text(text.replace("\nspec:\n", f"\nspec:\n  {match[2]}\n", 1))


def test_a_new_team_asks_for_its_images_and_validates_once_given(repo: Path, gpuplane) -> None:
    """`new team x`, every other blank filled as its listing says: validate reports the images
    blank alone; written as the blank suggests, the team validates."""
    blanks = new(gpuplane, repo, "team", "ranking")
    assert "spec.images" in blanks, "new team asks for images like any required value"
    path = repo / "teams/ranking.yaml"
    others = {f: n for f, n in blanks.items() if f != "spec.images"}
    fill(path, others, {f: v for f, v in TEAM.items() if f != "spec.images"})
    found = [d for d in findings(gpuplane, repo) if d["file"] == "teams/ranking.yaml"]
    assert [(d["line"], d["level"]) for d in found] == [(blanks["spec.images"], "error")]
    listed = re.search(
        r"for example (\[\S+\])", path.read_text().splitlines()[blanks["spec.images"] - 1]
    )
    assert listed is not None
    fill(path, {"spec.images": blanks["spec.images"]}, {"spec.images": listed[1]})
    assert findings(gpuplane, repo) == []


def test_a_team_without_images_is_an_error_whose_hint_makes_it_pass(
    repo: Path, gpuplane, crds: Path
) -> None:
    """The images line deleted from a filled new team (it asks for GPUs): team-images-missing,
    an error at `namespaces`; its hint, applied as written, makes validate and render pass."""
    blanks = new(gpuplane, repo, "team", "ranking")
    fill(repo / "teams/ranking.yaml", blanks, TEAM)
    path = _without_images(repo, "ranking")
    found = findings(gpuplane, repo)
    assert [(d["rule"], d["level"]) for d in found] == [("team-images-missing", "error")]
    (finding,) = found
    namespaces = path.read_text().splitlines().index("  namespaces:") + 1
    assert (finding["file"], finding["line"]) == ("teams/ranking.yaml", namespaces)
    assert "ranking-train" in str(finding["message"])
    # gpuplane.yaml's first allowed registry path is registry.example.com/
    assert "images: [registry.example.com/ranking/]" in str(finding["hint"])
    _apply(path, str(finding["hint"]))
    assert findings(gpuplane, repo) == []
    result = gpuplane("-C", str(repo), "render", "--crds", str(crds))
    assert result.exit_code == 0, result.output
    text = (repo / "rendered/prod-east/README.md").read_text()
    assert "| images only from | `registry.example.com/ranking/` |" in text


def test_a_team_with_no_gpus_and_no_endpoint_is_warned(repo: Path, gpuplane) -> None:
    """No `spec.gpus` and no endpoint: the namespaces may be being set up, so a warning; the
    generated README still says every pod there is refused."""
    _team_without_gpus_or_images(repo, gpuplane)
    loaded = load_platform(repo)
    platform = loaded.platform
    assert platform.teams["ranking"].gpus == ()
    found = [(d.rule, d.at.file, d.severity.value) for d in loaded.diagnostics]
    assert found == [("team-images-missing", "teams/ranking.yaml", "warning")]
    # the scaffold's one namespace is on prod-east (TEAM)
    page = readme.cluster_readme(ClusterView.of(platform, platform.clusters["prod-east"]))
    section = page.split("### ranking\n", 1)[1].split("\n### ", 1)[0]
    assert "| images only from | none: every pod is refused" in section


def _team_without_gpus_or_images(root: Path, gpuplane) -> Path:
    """A new team `ranking`, filled, without `gpus` and without `images`: validates with the
    team-images-missing warning alone (a team with GPUs is an error, and plan refuses errors)."""
    blanks = new(gpuplane, root, "team", "ranking")
    fill(root / "teams/ranking.yaml", blanks, TEAM)
    path = _without_images(root, "ranking")
    path.write_text(re.sub(r"(?ms)^  gpus:\n.*?(?=^  \S)", "", path.read_text()))
    return path


def test_plan_for_a_team_names_its_registries_or_says_none(repo: Path, gpuplane) -> None:
    # the words, whatever width the terminal (or a test worker's) wraps them at
    listed = " ".join(gpuplane("-C", str(repo), "plan", "--team", "speech").output.split())
    # teams/speech.yaml lists these two
    assert (
        "images team speech may run: registry.example.com/speech/, registry.example.com/base/"
        in listed
    )
    _team_without_gpus_or_images(repo, gpuplane)
    result = gpuplane("-C", str(repo), "plan", "--team", "ranking")
    assert result.exit_code == 0, result.output
    assert "images team ranking may run: none: every pod is refused" in " ".join(
        result.output.split()
    )
    markdown = gpuplane("-C", str(repo), "plan", "--team", "ranking", "--format", "markdown")
    assert "- images team ranking may run: none: every pod is refused" in markdown.output
    body = json.loads(
        gpuplane("-C", str(repo), "plan", "--team", "ranking", "--format", "json").output
    )
    assert body["focus"]["imageRegistries"] == {"ranking": []}


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: {namespace}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.example.com/{team}/trainer:1
"""


def test_fit_refuses_a_job_of_a_team_without_images_and_says_why(
    repo: Path, gpuplane, tmp_path: Path
) -> None:
    """A team with GPUs and no images: fit stops at the error and names it. A team whose
    missing images are only a warning: fit replays the rendered image policy, which has no
    prefix, and the refusal names the missing registries (the policy's message)."""
    job = tmp_path / "job.yaml"
    _without_images(repo, "speech")
    job.write_text(JOB.format(namespace="speech-train", team="speech"))
    result = gpuplane("-C", str(repo), "fit", str(job))
    assert result.exit_code == 1, result.output
    assert "error[team-images-missing] team 'speech' lists no image registries" in result.output
    shutil.copy(REPO / "teams/speech.yaml", repo / "teams/speech.yaml")  # as it was
    _team_without_gpus_or_images(repo, gpuplane)
    job.write_text(JOB.format(namespace="ranking-train", team="ranking"))
    result = gpuplane("-C", str(repo), "fit", str(job), "--format", "json")
    assert result.exit_code == 1, result.output
    assert "ValidatingAdmissionPolicy 'gpuplane-images-ranking'" in result.output
    assert "team ranking declares no image registries" in result.output
