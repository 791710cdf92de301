"""`gpuplane diff` takes the clusters a change does not reach from the render index.

`gpuplane render` (and `render --check`) records each cluster's findings, checked against the
folder of `rendered/` committed at HEAD. `diff --base REF` takes such a record instead of
rendering the cluster when the cluster's slice is the same on both sides and in the record,
when the base commit's folder is the one the record was checked against (the same tree id),
and when no transition rule found anything there. Every case here compares the report with
the one `--no-index` gives (both revisions rendered whole), on the example platform in a real
git repository, and counts which clusters were rendered; the quota figures `diff` leaves out
for the clusters whose slice is the same are worked out too, and must not differ.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_CRDS, committed_example, copy_inputs, edit_once, git

LOCAL_QUEUE = "staging-west/queueing/search-train/localqueue-default.yaml"
"""A staging-west LocalQueue; Kueue's CRD keeps its `spec.clusterQueue` immutable."""


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, git_env: None) -> Path:
    """The example platform rendered with the upstream CRDs and committed."""
    return committed_example(tmp_path_factory.mktemp("diff-index") / "repo", "--no-index")


@pytest.fixture
def repo(committed: Path, tmp_path: Path, git_env: None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the committed repository, with a render index of its own."""
    monkeypatch.setenv("GPUPLANE_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "repo"
    shutil.copytree(committed, target, symlinks=True)
    return target


class Rendered:
    """The clusters `check_cluster` rendered, in this process or in a forked worker (each call
    appends a line to a file)."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def clear(self) -> None:
        self.log.write_text("")

    def names(self) -> list[str]:
        return self.log.read_text().split()


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Rendered]:
    """Counts the clusters rendered; and checks every `quotas` call against the same call that
    works out every cluster's figures."""
    import renderer.pipeline as pipeline
    from renderer.commands.diff import background, platforms

    spy = Rendered(tmp_path / "rendered.log")
    spy.clear()
    real_check, real_quotas = pipeline.check_cluster, platforms.quotas

    def counted(platform: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        with open(spy.log, "a") as log:
            log.write(f"{name}\n")
        return real_check(platform, name, *args, **kwargs)

    def both_ways(base: Any, head: Any, same: frozenset[str] = frozenset()) -> Any:
        shortcut = real_quotas(base, head, same)
        assert shortcut == real_quotas(base, head, frozenset()), sorted(same)
        return shortcut

    monkeypatch.setattr(pipeline, "check_cluster", counted)
    monkeypatch.setattr(background, "check_cluster", counted)
    monkeypatch.setattr(platforms, "quotas", both_ways)
    yield spy


def _render(gpuplane: Callable[..., Any], root: Path, *args: str) -> Any:
    return gpuplane("-C", str(root), "render", "--crds", str(SHARED_CRDS), *args)


def _diff(
    gpuplane: Callable[..., Any],
    root: Path,
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
    base: str = "HEAD",
) -> tuple[Any, list[str]]:
    """The JSON report with the index, and the clusters that diff rendered; asserting that
    `--no-index` (both revisions rendered whole) and one process (the base rendered after the
    head, here) give the same report in every format."""
    import renderer.commands.render as render

    args = ("-C", str(root), "diff", "--base", base, "--crds", str(SHARED_CRDS))
    rendered.clear()
    with_index = gpuplane(*args, "--format", "json")
    names = sorted(rendered.names())
    whole = gpuplane(*args, "--format", "json", "--no-index")
    assert (with_index.exit_code, with_index.output) == (whole.exit_code, whole.output)
    for fmt in ("markdown", "text"):
        shown = gpuplane(*args, "--format", fmt)
        assert shown.output == gpuplane(*args, "--format", fmt, "--no-index").output
    with monkeypatch.context() as one_process:
        one_process.setattr(render, "default_jobs", lambda: 1)
        for extra in ((), ("--no-index",)):
            alone = gpuplane(*args, "--format", "json", *extra)
            assert (alone.exit_code, alone.output) == (with_index.exit_code, with_index.output)
    assert with_index.exit_code == 0, with_index.output
    return json.loads(with_index.output), names


def _more_gpus_for_llm(root: Path) -> None:
    """A one-team quota change on prod-east."""
    edit_once(
        root / "teams/llm.yaml",
        "{pool: h100-train, nominal: 16, borrowingLimit: 16, lendingLimit: 8}",
        "{pool: h100-train, nominal: 16, borrowingLimit: 16, lendingLimit: 6}",
    )


def _codes(report: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["code"], set()).add(finding["cluster"])
    return found


@pytest.mark.parametrize("checked_after_the_edit", [True, False])
def test_a_one_team_change_renders_only_the_cluster_it_reaches(
    checked_after_the_edit: bool,
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The index's records serve whether `render --check` recorded the change (as CI runs it
    before diff) or the last render was before the edit (a person's): the cluster the change
    reaches is rendered on both sides, the other is taken."""
    assert _render(gpuplane, repo).exit_code == 0
    _more_gpus_for_llm(repo)
    if checked_after_the_edit:
        assert _render(gpuplane, repo, "--check").exit_code == 1  # stale: it records the change
    report, names = _diff(gpuplane, repo, rendered, monkeypatch)
    assert names == ["prod-east", "prod-east"]  # the head's and the base's
    assert _codes(report)["gpu-quota"] == {"prod-east"}


def test_an_immutable_edit_in_the_cluster_the_change_reaches(
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _render(gpuplane, repo).exit_code == 0
    edit_once(repo / "pools/h100-train.yaml", "      - topology.gpuplane.dev/block\n", "")
    report, names = _diff(gpuplane, repo, rendered, monkeypatch)
    assert "staging-west" not in names
    assert _codes(report)["immutable-field"] == {"prod-east"}


def _hand_edited_local_queue(root: Path) -> None:
    edit_once(
        root / "rendered" / LOCAL_QUEUE,
        "clusterQueue: search-training",
        "clusterQueue: search-inference",
    )


def _staging_west_is_rendered_and_refused(
    gpuplane: Callable[..., Any],
    repo: Path,
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
    base: str,
) -> None:
    """After a one-team change on prod-east, diff renders staging-west (the index's record of
    it cannot stand for it) and finds its LocalQueue's refused update."""
    _more_gpus_for_llm(repo)
    report, names = _diff(gpuplane, repo, rendered, monkeypatch, base=base)
    assert "staging-west" in names
    assert _codes(report)["immutable-field"] == {"staging-west"}


def test_a_base_whose_folder_is_not_the_one_checked_is_rendered(
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The base commit holds another staging-west folder (a hand edit a later commit undid)
    than the HEAD the index checked against: staging-west is rendered and its LocalQueue
    compared with the base's, which the API server would refuse to update."""
    _hand_edited_local_queue(repo)
    git(repo, "commit", "-q", "-am", "a hand edit")
    assert _render(gpuplane, repo).exit_code == 1  # refused: an immutable field against HEAD
    assert _render(gpuplane, repo, "--allow-recreate").exit_code == 0
    git(repo, "commit", "-q", "-am", "rendered again")
    assert _render(gpuplane, repo, "--check").exit_code == 0  # checked against the new HEAD
    _staging_west_is_rendered_and_refused(gpuplane, repo, rendered, monkeypatch, "HEAD~1")


def test_a_record_whose_transition_rules_found_something_is_not_taken(
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HEAD commits the hand edit: the index's staging-west was checked against that same
    folder, but its transition rule refused the update, so diff renders staging-west again
    to say which object and why."""
    _hand_edited_local_queue(repo)
    git(repo, "commit", "-q", "-am", "a hand edit")
    checked = _render(gpuplane, repo, "--check", "--allow-recreate")
    assert "output-immutable-field" in checked.output
    _staging_west_is_rendered_and_refused(gpuplane, repo, rendered, monkeypatch, "HEAD")


def test_an_index_made_with_other_schemas_is_not_read(
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert gpuplane("-C", str(repo), "render").exit_code == 0  # without --crds
    _more_gpus_for_llm(repo)
    _, names = _diff(gpuplane, repo, rendered, monkeypatch)
    assert sorted(set(names)) == ["prod-east", "staging-west"]


def test_a_base_without_rendered_files_takes_nothing(
    committed: Path,
    tmp_path: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the base commit has no rendered/, the base's own render stands in for it: nothing
    recorded was checked against that."""
    root = copy_inputs(committed, tmp_path / "inputs-only")
    git(root, "-c", "init.defaultBranch=main", "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "inputs only")
    assert _render(gpuplane, root).exit_code == 0
    _more_gpus_for_llm(root)
    _, names = _diff(gpuplane, root, rendered, monkeypatch)
    assert sorted(set(names)) == ["prod-east", "staging-west"]
