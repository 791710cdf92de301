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
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    SHARED_CRDS,
    commit_all,
    committed_example,
    copy_inputs,
    edit_once,
    git,
)

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


FORMATS = ("json", "markdown", "text")


def _diff(
    gpuplane: Callable[..., Any],
    root: Path,
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
    base: str = "HEAD",
    args: tuple[str, ...] = ("--crds", str(SHARED_CRDS)),
    expect: int = 0,
) -> tuple[Any, list[str]]:
    """The JSON report, and the clusters that diff rendered, with the index and the base in a
    worker (two jobs, whatever this machine has); asserting that every other way gives the
    same exit code and the same report in every format: without the index, in one process,
    and as before any shortcut (one process, no index, no cluster shared by the two sides,
    nothing kept from the runs before in the suites' cache)."""
    import renderer.commands.render as render
    from renderer.commands.diff import platforms
    from renderer.layers import workflows

    command = ("-C", str(root), "diff", "--base", base, *args)
    whole: dict[str, tuple[int, str]] = {}
    with monkeypatch.context() as before:
        before.setattr(render, "default_jobs", lambda: 1)
        before.setattr(platforms, "outcome_keys", lambda *args, **kwargs: {})
        workflows.COMPILED.clear()
        for fmt in FORMATS:
            done = gpuplane(*command, "--format", fmt, "--no-index")
            whole[fmt] = (done.exit_code, done.output)
    assert whole["json"][0] == expect, whole["json"][1]
    names: list[str] = []
    for jobs, extra in ((2, ()), (2, ("--no-index",)), (1, ())):
        with monkeypatch.context() as ways:
            ways.setattr(render, "default_jobs", lambda jobs=jobs: jobs)
            for fmt in FORMATS:
                rendered.clear()
                done = gpuplane(*command, "--format", fmt, *extra)
                assert (done.exit_code, done.output) == whole[fmt], (jobs, extra, fmt)
                if (jobs, extra, fmt) == (2, (), "json"):
                    names = sorted(rendered.names())
    return json.loads(whole["json"][1]) if expect == 0 else None, names


def _more_gpus_for_llm(root: Path) -> None:
    """A one-team quota change on prod-east."""
    edit_once(
        root / "teams/llm.yaml",
        "{pool: h100-train, nominal: 16, borrowingLimit: 16, lendingLimit: 8}",
        "{pool: h100-train, nominal: 16, borrowingLimit: 16, lendingLimit: 6}",
    )


def _codes(report: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in report["changes"]:
        found.setdefault(finding["code"], set()).add(finding["cluster"])
    return found


def test_a_teams_reach_behind_renamed_namespaces_is_the_same_with_the_index(
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """llm's namespaces renamed while a group gets admin: the team's findings and the lines of
    teams/llm.yaml they point at (from the change's lines, as git gives them) are the same
    whichever way the report is made; staging-west, which the change does not reach, is
    taken from the index."""
    assert _render(gpuplane, repo).exit_code == 0
    for old in ("- name: llm-train\n", "- name: llm-serve\n", "{name: llm-notebooks,"):
        edit_once(repo / "teams/llm.yaml", old, old.replace("llm-", "llm-v2-"))
    edit_once(repo / "teams/llm.yaml", "owners: [llm-leads]", "owners: [llm-leads, contractors]")
    report, names = _diff(gpuplane, repo, rendered, monkeypatch)
    assert names == ["prod-east", "prod-east"]
    (widened,) = [f for f in report["changes"] if f["code"] == "rbac-widened"]
    assert widened["risk"] == "high" and widened["at"] == "teams/llm.yaml:9"


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
    commit_all(root, "inputs only")
    assert _render(gpuplane, root).exit_code == 0
    _more_gpus_for_llm(root)
    _, names = _diff(gpuplane, root, rendered, monkeypatch)
    assert sorted(set(names)) == ["prod-east", "staging-west"]


def _crds_without(tmp_path: Path, *operators: str) -> Path:
    """The upstream CRD folders but `operators`', copied."""
    folder = tmp_path / "crds-without"
    for source in sorted(SHARED_CRDS.iterdir()):
        if source.is_dir() and source.name not in operators:
            shutil.copytree(source, folder / source.name)
    return folder


def test_a_base_checked_with_another_schema_store(
    repo: Path,
    tmp_path: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HEAD imported Kueue's CRDs into the schema store, which the base commit has not, and
    --crds lacks them: the index's checks were made with HEAD's store, so none of them may
    stand for the base's, whose Kueue objects no schema checks (strict: errors)."""
    crds = _crds_without(tmp_path, "kueue")
    done = gpuplane(
        "-C", str(repo), "schemas", "import", str(SHARED_CRDS / "kueue"), "--cluster", "prod-east"
    )
    assert done.exit_code == 0, done.output
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Kueue's CRDs in the store")
    strict = ("--crds", str(crds), "--strict-schemas")
    assert gpuplane("-C", str(repo), "render", "--check", *strict).exit_code == 0
    _more_gpus_for_llm(repo)
    report, _ = _diff(gpuplane, repo, rendered, monkeypatch, "HEAD~1", strict)
    assert not report["base"]["valid"] and report["base"]["errors"] > 0


def test_crds_and_gpuplane_crds_are_two_sets(
    repo: Path,
    tmp_path: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CRD given twice, differently, is an error within --crds but not across --crds and
    $GPUPLANE_CRDS (the first set wins): an index made with the two sets is not read by a diff
    given both in one, which must find the clash as a render of both sides does."""
    twin = tmp_path / "twin"
    twin.mkdir()
    crd = SHARED_CRDS / "kueue" / "kueue.x-k8s.io_workloadpriorityclasses.yaml"
    text = crd.read_text()
    assert text.count("description:") > 1
    (twin / crd.name).write_text(text.replace("description:", "description: (edited)", 1))
    monkeypatch.setenv("GPUPLANE_CRDS", str(twin))
    assert _render(gpuplane, repo, "--check").exit_code == 0  # across the sets: no clash
    monkeypatch.delenv("GPUPLANE_CRDS")
    edit_once(repo / "teams/llm.yaml", "  description: Pre-training", "  description: Reworded.")
    both = ("--crds", str(SHARED_CRDS), "--crds", str(twin))
    _diff(gpuplane, repo, rendered, monkeypatch, args=both, expect=1)


def test_the_index_is_keyed_by_the_set_each_crd_source_is_in(committed: Path) -> None:
    from renderer.commands.render_index import code_and_schema_fingerprint

    kueue, argo = SHARED_CRDS / "kueue", SHARED_CRDS / "argo-cd"
    one_set = code_and_schema_fingerprint(committed, [kueue, argo], strict_schemas=True)
    two_sets = code_and_schema_fingerprint(committed, [kueue], strict_schemas=True, fallback=[argo])
    assert one_set != two_sets
    assert two_sets != code_and_schema_fingerprint(
        committed, [argo], strict_schemas=True, fallback=[kueue]
    )
    assert one_set == code_and_schema_fingerprint(
        committed, [kueue, argo, kueue], strict_schemas=True
    )
    # a fallback folder that --crds names too reads nothing --crds has not found first
    assert one_set == code_and_schema_fingerprint(
        committed, [kueue, argo], strict_schemas=True, fallback=[argo]
    )


def test_a_base_with_policy_errors(
    repo: Path,
    gpuplane: Callable[..., Any],
    rendered: Rendered,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The base commit names a queue that does not exist: it does not validate, so no plan
    figures are compared, for the clusters the change does not reach either."""
    assert _render(gpuplane, repo).exit_code == 0
    vision = repo / "teams/vision.yaml"
    good = vision.read_text()
    vision.write_text(good.replace("queue: prod\n", "queue: prd\n"))
    git(repo, "commit", "-q", "-am", "a dangling queue")
    vision.write_text(good)
    report, _ = _diff(gpuplane, repo, rendered, monkeypatch)
    assert not report["base"]["valid"]


# --- the guards, one by one --------------------------------------------------------------------


def test_a_record_stands_for_a_check_without_a_committed_tree_only_when_nothing_read_it(
    repo: Path, gpuplane: Callable[..., Any]
) -> None:
    """`outcomes_for` leaves out a record whose transition rules found anything: a refused
    update, an unreadable committed file, or a transition rule left unevaluated (which shows
    only in the rules, not in the findings)."""
    from dataclasses import replace

    from renderer.commands.render_index import RenderIndex
    from renderer.findings.diagnostics import Diagnostic, Location
    from renderer.output.cel import UncheckedRule
    from renderer.output.cel_report import UncheckedRules, _CrdRules
    from renderer.pipeline import load_platform

    assert _render(gpuplane, repo).exit_code == 0
    index = RenderIndex.open(repo, [SHARED_CRDS], strict_schemas=False)
    loaded = load_platform(repo)
    assert sorted(index.outcomes_for(repo, loaded)) == ["prod-east", "staging-west"]
    record = index.clusters["staging-west"]
    clean = record.outcome
    where = Location("teams/search.yaml", 1, 1)
    for rule in ("output-immutable-field", "output-cel-unchecked"):
        found = Diagnostic(rule, "found against the committed tree", where)
        record.outcome = replace(clean, diagnostics=[*clean.diagnostics, found])
        assert "staging-west" not in index.outcomes_for(repo, loaded), rule
    for transition in (True, False):
        rules = UncheckedRules()
        rules.by_crd["localqueues.kueue.x-k8s.io"] = _CrdRules(
            "LocalQueue",
            where,
            {("spec", "x"): UncheckedRule("spec", "self == oldSelf", "why", transition)},
        )
        record.outcome = replace(clean, rules=rules)
        taken = "staging-west" in index.outcomes_for(repo, loaded)
        assert taken is not transition


def test_checks_are_kept_only_for_the_same_context(
    repo: Path, tmp_path: Path, gpuplane: Callable[..., Any]
) -> None:
    """`memo_for` gives a cluster's recorded checks for a folder only where they were made with
    what that folder's checks read: the same cluster file (its Kubernetes version, its
    operators' pins) and the same schema store."""
    from renderer.commands.render_index import RenderIndex
    from renderer.pipeline import load_platform

    assert _render(gpuplane, repo).exit_code == 0
    index = RenderIndex.open(repo, [SHARED_CRDS], strict_schemas=False)
    assert index.memo_for(repo, load_platform(repo), "prod-east") is not None
    other = copy_inputs(repo, tmp_path / "other")
    assert index.memo_for(other, load_platform(other), "prod-east") is not None  # same bytes
    edit_once(
        other / "clusters/prod-east.yaml", 'kubernetesVersion: "1.33"', 'kubernetesVersion: "1.32"'
    )
    assert index.memo_for(other, load_platform(other), "prod-east") is None
    assert index.memo_for(other, load_platform(other), "staging-west") is not None
    store = copy_inputs(repo, tmp_path / "store")
    (store / ".gpuplane" / "schemas").mkdir(parents=True)
    (store / ".gpuplane" / "schemas" / "README.md").write_text("a store\n")
    assert index.memo_for(store, load_platform(store), "staging-west") is None


# --- the base's worker ---------------------------------------------------------------------------


def _exits() -> Any:
    os._exit(9)


def _raises() -> Any:
    raise ValueError("a bug in the worker")


def _sleeps() -> Any:
    time.sleep(60)


def _ended(pid: int) -> bool:
    """Whether the process has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_the_base_worker_ends_once_done_before_the_head_asks(tmp_path: Path) -> None:
    """diff's base worker sends its result as soon as it has it and ends, its memory given
    back while this process still renders the head (before, it held the whole rendered base
    until the head asked: a third of the peak at 4x)."""
    from renderer.commands.diff.background import in_background

    marker = tmp_path / "pid"

    def job() -> Any:
        marker.write_text(str(os.getpid()))
        return "the base"

    with in_background(job, fork=True) as result:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        pid = int(marker.read_text())
        while not _ended(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _ended(pid)  # result() not asked for yet
        assert result() == "the base"


def test_a_worker_that_dies_or_raises_is_reported_not_waited_for() -> None:
    from renderer.commands.diff.background import in_background
    from renderer.commands.workers import WorkerStopped

    with in_background(_exits, fork=True) as result, pytest.raises(WorkerStopped, match="9"):
        result()
    with in_background(_raises, fork=True) as result, pytest.raises(ValueError, match="a bug"):
        result()
    started = time.monotonic()
    with in_background(_sleeps, fork=True):
        pass  # left without its result (the head did not validate): the worker is stopped
    assert time.monotonic() - started < 30
    with in_background(lambda: "here", fork=False) as result:
        assert result() == "here"
