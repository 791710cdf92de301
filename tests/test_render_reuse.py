"""Reuse below the cluster: when a change reaches a cluster, its objects whose bodies did not
change keep their checks and (when the file on disk is still the one recorded) their files; the
suites' Hera objects are compiled once per distinct input. Each shortcut must give what the full
render gives, and trust nothing on disk it cannot verify."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from renderer.layers import workflows as suites_layer
from renderer.model.content import content_digest
from renderer.model.platform import Platform
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest
from renderer.output.reuse import CheckMemo
from renderer.output.transitions import CommittedTree
from renderer.output.validation import Checked, Pin
from renderer.output.writer import TreeListing, compare_listed, folder_fingerprints, tree_stats
from renderer.pipeline import load_platform
from tests.conftest import REPO, tree
from workflows.suites import placement, references
from workflows.suites.workflow_templates import acceptance_template, benchmark_template


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPLANE_CACHE_DIR", str(folder))
    return folder


def _check(gpuplane, root: Path, *args: str):  # type: ignore[no-untyped-def]
    return gpuplane("-C", str(root), "render", "--check", *args)


def _one_team_on(root: Path, cluster: str) -> Path:
    """The file of a team with namespaces on `cluster` only."""
    loaded = load_platform(root).platform
    team = next(
        t
        for t in sorted(loaded.teams)
        if {ns.cluster for ns in loaded.teams[t].namespaces} == {cluster}
    )
    return root / "teams" / f"{team}.yaml"


def _lower_first_nominal(path: Path) -> None:
    text = path.read_text()
    changed, count = re.subn(
        r"nominal: (\d+)", lambda m: f"nominal: {int(m.group(1)) - 1}", text, count=1
    )
    assert count == 1, path
    path.write_text(changed)


# --- objects whose bodies did not change ---------------------------------------------------------


def test_a_hand_edit_beside_a_change_is_found_in_the_cluster_rendered_again(
    platform: Path, crds: Path, cache: Path, gpuplane
) -> None:
    """prod-east renders again for a team change; another of its files, hand-edited to the same
    size and mtime, is not taken for the recorded one (its ctime and inode say otherwise), and
    the report is the one a full render gives."""
    assert _check(gpuplane, platform, "--crds", str(crds)).exit_code == 0  # fills the index
    _lower_first_nominal(_one_team_on(platform, "prod-east"))
    edited = sorted((platform / "rendered" / "prod-east" / "security").rglob("*.yaml"))[0]
    before = edited.stat()
    edited.write_bytes(edited.read_bytes().replace(b"gpuplane", b"gpuplanf", 1))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))
    with_index = _check(gpuplane, platform, "--crds", str(crds))
    without = _check(gpuplane, platform, "--crds", str(crds), "--no-index")
    assert with_index.exit_code == without.exit_code == 1
    assert with_index.output == without.output
    shown = f"rendered/{edited.relative_to(platform / 'rendered').as_posix()}"
    assert (
        f"{shown}: error[stale-output] {shown} is changed; run `gpuplane render` and commit the "
        "result"
    ) in with_index.output.splitlines()


def test_a_render_after_a_change_writes_what_a_full_render_writes(
    platform: Path, crds: Path, cache: Path, gpuplane, tmp_path: Path
) -> None:
    assert gpuplane("-C", str(platform), "render", "--crds", str(crds)).exit_code == 0
    for cluster in ("prod-east", "staging-west"):
        _lower_first_nominal(_one_team_on(platform, cluster))
    full = tmp_path / "full"
    shutil.copytree(platform, full)
    assert gpuplane("-C", str(platform), "render", "--crds", str(crds)).exit_code == 0
    assert gpuplane("-C", str(full), "render", "--crds", str(crds), "--no-index").exit_code == 0
    assert tree(platform / "rendered") == tree(full / "rendered")
    assert _check(gpuplane, platform, "--crds", str(crds)).exit_code == 0


def test_findings_of_kept_checks_are_reported_again_after_a_change(
    platform: Path, cache: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without CRDs every custom kind is a warning; after a change that re-renders a cluster,
    the checks kept for its unchanged objects say the same as checking them again."""
    monkeypatch.delenv("GPUPLANE_CRDS", raising=False)
    args = ("--format", "json")
    assert _check(gpuplane, platform, *args).exit_code == 0
    _lower_first_nominal(_one_team_on(platform, "prod-east"))
    with_index = _check(gpuplane, platform, *args)
    without = _check(gpuplane, platform, *args, "--no-index")
    assert with_index.exit_code == without.exit_code == 1
    assert with_index.output == without.output and "warning" in with_index.output


def test_a_policy_error_found_while_the_clusters_render_stops_everything(
    platform: Path, crds: Path, cache: Path, gpuplane
) -> None:
    """The workers render while the policy runs; an error it finds drops what they rendered:
    the same report with one job or two, and nothing written."""
    before = tree(platform / "rendered")
    path = _one_team_on(platform, "prod-east")
    path.write_text(re.sub(r"nominal: (\d+)", "nominal: 100000", path.read_text(), count=1))
    reports = [
        gpuplane("-C", str(platform), "render", "--crds", str(crds), "--jobs", jobs)
        for jobs in ("1", "2")
    ]
    assert reports[0].exit_code == reports[1].exit_code == 1
    assert reports[0].output == reports[1].output and "error[" in reports[0].output
    assert tree(platform / "rendered") == before


class _CountingValidator:
    """Asks for the old self, as a CRD with transition rules makes `OutputValidator.check` do."""

    def __init__(self, asks_old: bool) -> None:
        self.asks_old = asks_old
        self.calls = 0

    def check(
        self,
        obj: Mapping[str, Any],
        kubernetes_version: str,
        pin_of: Callable[[str, str], Pin] | None = None,
        old_of: Callable[[], Mapping[str, Any] | None] | None = None,
    ) -> Checked:
        self.calls += 1
        if self.asks_old and old_of is not None:
            old_of()
        return Checked([])


def _memo_round(
    validator: _CountingValidator, before: CheckMemo | None, committed: dict[str, bytes] | None
) -> CheckMemo:
    """One check of the same body; `committed`: the committed tree (None: none, as for a
    workload template)."""
    example = load_platform(REPO).platform
    cluster = example.clusters[sorted(example.clusters)[0]]
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "llm-training"},
        "spec": {},
    }
    manifest = Manifest("queueing", body, cluster.origin.location)
    memo = CheckMemo(before.now if before is not None else {})
    previous = CommittedTree(committed, "HEAD") if committed is not None else None
    key = hashlib.sha256(b"the same body").digest()
    memo.check(
        validator,  # type: ignore[arg-type]
        key,
        manifest,
        cluster.name,
        cluster.kubernetes_version,
        lambda g, k: Pin(g, g),
        previous,
    )
    return memo


def test_a_check_that_read_the_old_self_is_kept_only_while_that_file_is_the_same() -> None:
    example = load_platform(REPO).platform
    cluster = sorted(example.clusters)[0]
    path = f"{cluster}/queueing/clusterqueue-llm-training.yaml"
    old = (
        b"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: llm-training\n"
    )
    validator = _CountingValidator(asks_old=True)
    first = _memo_round(validator, None, {path: old})
    assert validator.calls == 1
    second = _memo_round(validator, first, {path: old})
    assert validator.calls == 1  # the same committed file: kept
    _memo_round(validator, second, {path: old + b"spec: {}\n"})
    assert validator.calls == 2  # another committed version: checked again
    created = _memo_round(validator, None, {})
    assert validator.calls == 3 and not created.now  # nothing to compare with: never kept


def test_a_check_that_did_not_read_the_old_self_is_kept_whatever_is_committed() -> None:
    validator = _CountingValidator(asks_old=False)
    first = _memo_round(validator, None, {})
    _memo_round(validator, first, {"anything/else.yaml": b"{}\n"})
    assert validator.calls == 1


def test_a_check_without_a_committed_tree_is_kept_only_for_another_without_one() -> None:
    # a workload template is checked with no committed tree (nothing applies it): a CRD with
    # transition rules asks for its old self and gets none, so the check is the body's alone
    validator = _CountingValidator(asks_old=True)
    first = _memo_round(validator, None, None)
    assert validator.calls == 1
    second = _memo_round(validator, first, None)
    assert validator.calls == 1  # kept
    example = load_platform(REPO).platform
    path = f"{sorted(example.clusters)[0]}/queueing/clusterqueue-llm-training.yaml"
    _memo_round(validator, second, {path: b"kind: ClusterQueue\n"})
    assert validator.calls == 2  # with a committed tree it may meet an old self: checked again
    with_tree = _memo_round(validator, first, {})
    assert validator.calls == 3 and not with_tree.now  # nothing committed for it: as before


# --- the suites, compiled once per distinct input ------------------------------------------------


def _targets(platform: Platform) -> list[placement.Target]:
    return [
        t
        for name in sorted(platform.clusters)
        for t in placement.targets(ClusterView.of(platform, platform.clusters[name]))
    ]


def test_a_compiled_suite_is_what_hera_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suites_layer, "COMPILED", {})
    targets = _targets(load_platform(REPO).platform)
    assert targets
    for target in targets:
        for what, build in (("acceptance", acceptance_template), ("benchmark", benchmark_template)):
            direct = references.to_data(build(target))
            assert suites_layer.compiled(what, target) == direct
            again = suites_layer.compiled(what, target)  # from the cache now
            assert again == direct
            again["metadata"]["name"] = "changed by a later step"
            assert suites_layer.compiled(what, target) == direct  # a fresh copy each time


def test_moving_the_inputs_to_other_lines_keeps_the_digests(tmp_path: Path) -> None:
    """Where a value was declared is not part of what the suites are built from."""
    moved = tmp_path / "moved"
    for folder in ("clusters", "pools", "queues", "teams"):
        shutil.copytree(REPO / folder, moved / folder)
        for path in (moved / folder).glob("*.yaml"):
            path.write_text("# moved down two lines\n#\n" + path.read_text())
    settings = (REPO / "gpuplane.yaml").read_text()
    (moved / "gpuplane.yaml").write_text("# moved down one line\n" + settings)
    original = _targets(load_platform(REPO).platform)
    shifted = _targets(load_platform(moved).platform)
    assert [t.pool.origin.location for t in original] != [t.pool.origin.location for t in shifted]
    assert [content_digest("acceptance", t) for t in original] == [
        content_digest("acceptance", t) for t in shifted
    ]
    # and the suites do not read where a value was declared: the same digest, the same objects
    for before, after in zip(original, shifted, strict=True):
        for build in (acceptance_template, benchmark_template):
            assert references.to_data(build(before)) == references.to_data(build(after))


def test_what_a_suite_reads_changes_its_digest() -> None:
    (target, *_) = _targets(load_platform(REPO).platform)
    digest = content_digest("acceptance", target)
    assert digest is not None
    assert content_digest("benchmark", target) != digest
    for changed in (
        dataclasses.replace(target, available=target.available + 1),
        dataclasses.replace(target, plan=target.plan + "-other"),
        dataclasses.replace(target, pool=dataclasses.replace(target.pool, gpus_per_node=1)),
        dataclasses.replace(
            target,
            cluster=dataclasses.replace(
                target.cluster, kubernetes_version=target.cluster.kubernetes_version + "9"
            ),
        ),
    ):
        assert content_digest("acceptance", changed) != digest


# --- the digest itself ---------------------------------------------------------------------------


def test_the_digest_tells_types_and_orders_apart() -> None:
    values = [
        1,
        True,
        1.0,
        Fraction(1),
        "1",
        b"1",
        (1,),
        [1],
        {1: 1},
        {"1": 1},
        frozenset({1}),
        None,
    ]
    digests = [content_digest(v) for v in values]
    assert None not in digests and len(set(digests)) == len(values)
    assert content_digest({"a": 1, "b": 2}) != content_digest({"b": 2, "a": 1})  # order is output
    assert content_digest(("a", "b")) != content_digest(("ab",))


def test_the_digest_refuses_what_it_cannot_read() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert content_digest(loop) is None
    assert content_digest(object()) is None

    class Text(str):
        pass

    assert content_digest(Text("a subclass may write itself otherwise")) is None


def test_a_set_digests_the_same_under_every_hash_seed() -> None:
    code = (
        "from renderer.model.content import content_digest;"
        "print(content_digest(frozenset({'alpha', 'beta', 'gamma', 'delta'}), {'x', 'y'}).hex())"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout
        for seed in ("0", "1", "2", "3")
    }
    assert len(seen) == 1


# --- the tree on disk, listed once ---------------------------------------------------------------


def test_the_listing_made_in_a_child_is_the_walk(tmp_path: Path) -> None:
    folder = tmp_path / "rendered"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "one.yaml").write_text("1\n")
    (folder / "top.yaml").write_text("2\n")
    (folder / "a" / "link.yaml").symlink_to(folder / "top.yaml")
    os.mkfifo(folder / "a" / "pipe.yaml")
    listed = TreeListing(folder).stats()
    assert listed == tree_stats(folder)
    assert set(listed) == {"a/b/one.yaml", "top.yaml", "a/link.yaml", "a/pipe.yaml"}
    assert listed["a/link.yaml"] is None and listed["a/pipe.yaml"] is None
    assert listed["top.yaml"] is not None
    assert TreeListing(tmp_path / "absent").stats() == {}
    # a link or a pipe is never read, and never current
    files: dict[str, bytes | None] = {"a/link.yaml": b"2\n", "a/pipe.yaml": b"", "top.yaml": None}
    found = compare_listed(folder, listed, files)
    assert found.changed == ("a/link.yaml", "a/pipe.yaml")
    assert found.extra == ("a/b/one.yaml",) and found.missing == ()


def test_compare_listed_reads_what_is_on_disk_now_not_what_was_listed(tmp_path: Path) -> None:
    folder = tmp_path / "rendered"
    folder.mkdir()
    for name in ("same", "edited", "grown", "gone", "unreadable", "resized"):
        (folder / f"{name}.yaml").write_bytes(b"kind: ConfigMap\n")
    listed = tree_stats(folder)
    (folder / "edited.yaml").write_bytes(b"kind: ConfigMaq\n")  # same size, other bytes
    (folder / "grown.yaml").write_bytes(b"kind: ConfigMap\n" * 5000)  # longer than listed
    (folder / "gone.yaml").unlink()
    (folder / "unreadable.yaml").chmod(0)
    (folder / "resized.yaml").write_bytes(b"kind: ConfigMap\n")  # listed at its size
    expected = b"kind: ConfigMap\n"
    files: dict[str, bytes | None] = dict.fromkeys(listed, expected)
    files["resized.yaml"] = b"kind: Secret\n"  # another size: changed without reading it
    found = compare_listed(folder, listed, files)
    readable = os.access(folder / "unreadable.yaml", os.R_OK)  # root reads it anyway
    expected_changed = {"edited.yaml", "grown.yaml", "gone.yaml", "resized.yaml"}
    if not readable:
        expected_changed.add("unreadable.yaml")
    assert set(found.changed) == expected_changed
    assert found.missing == () and found.extra == ()
    assert compare_listed(folder, listed, {"same.yaml": expected}).changed == ()


def test_a_failed_listing_child_falls_back_to_listing_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import renderer.output.writer as writer

    def failing(folder: Path) -> tuple[int, int] | None:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os._exit(3)
        os.close(write_end)
        return pid, read_end

    monkeypatch.setattr(writer, "_list_in_child", failing)
    (tmp_path / "x.yaml").write_text("x\n")
    assert TreeListing(tmp_path).stats() == tree_stats(tmp_path)
    assert TreeListing(tmp_path).fingerprints() == folder_fingerprints(tree_stats(tmp_path))


def _committed_on_disk(folder: Path, listing: TreeListing | None) -> CommittedTree:
    """The committed tree of a folder outside git, with the listing's fingerprints or without."""
    if listing is None:
        stats = tree_stats(folder)
        return CommittedTree(
            {},
            "disk",
            read=lambda path: (folder / path).read_bytes(),
            listing=lambda: stats,
            folder=folder,
        )
    return CommittedTree(
        {},
        "disk",
        read=lambda path: (folder / path).read_bytes(),
        listing=listing.stats,
        fingerprints=listing.fingerprints,
        folder=folder,
    )


def test_the_fingerprints_the_listing_made_are_the_committed_trees(tmp_path: Path) -> None:
    """The listing child fingerprints each cluster's folder as the committed tree does from
    the stats, so keys made either way are the same; the fingerprint follows the `.yaml` files
    below the folder and nothing else."""
    folder = tmp_path / "rendered"
    for cluster in ("east", "west"):
        (folder / cluster / "queueing").mkdir(parents=True)
        (folder / cluster / "queueing" / "cq.yaml").write_text(f"{cluster}\n")
        (folder / cluster / "README.md").write_text("readme\n")
    (folder / "east.yaml").write_text("beside the folders\n")
    (folder / "empty").mkdir()
    child = _committed_on_disk(folder, TreeListing(folder))
    here = _committed_on_disk(folder, None)
    for name in ("east", "west", "empty", "absent"):
        assert child.fingerprint(name) == here.fingerprint(name), name
    assert child.fingerprint("empty") == child.fingerprint("absent")
    assert child.fingerprint("east") != child.fingerprint("west")
    before = {name: child.fingerprint(name) for name in ("east", "west")}

    (folder / "east" / "README.md").write_text("another readme\n")  # not a committed object
    (folder / "west" / "queueing" / "cq.yaml").write_text("west, edited\n")
    after = _committed_on_disk(folder, TreeListing(folder))
    assert after.fingerprint("east") == before["east"]
    assert after.fingerprint("west") != before["west"]


def test_a_folder_with_a_file_read_is_fingerprinted_by_its_bytes(tmp_path: Path) -> None:
    """Once an object read its old self, the folder's fingerprint is of the bytes read, not the
    stats the listing saw before (the file may have changed since)."""
    folder = tmp_path / "rendered"
    (folder / "east").mkdir(parents=True)
    (folder / "east" / "a.yaml").write_text("kind: A\n")
    tree = _committed_on_disk(folder, TreeListing(folder))
    listed = tree.fingerprint("east")
    assert tree.files == {"east/a.yaml": b"kind: A\n"}  # read
    assert tree.fingerprint("east") != listed


@pytest.mark.usefixtures("git_env")
def test_in_git_a_folder_is_fingerprinted_by_its_tree(tmp_path: Path) -> None:
    """In git, a cluster folder's fingerprint is of its tree id at the revision: the same for
    the same commit contents, changed by any file committed below it, and untouched by a
    change to another cluster's folder or to the working tree."""
    from renderer.output.transitions import committed_tree
    from tests.conftest import git

    rendered = tmp_path / "rendered"
    for cluster in ("east", "west"):
        (rendered / cluster / "queueing").mkdir(parents=True)
        (rendered / cluster / "queueing" / "cq.yaml").write_text(f"kind: A\nname: {cluster}\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "one")
    first = committed_tree(tmp_path)
    assert first.origin == "HEAD"
    before = {name: first.fingerprint(name) for name in ("east", "west")}
    assert before["east"] != before["west"]
    assert committed_tree(tmp_path).fingerprint("east") == before["east"]

    (rendered / "east" / "queueing" / "cq.yaml").write_text("kind: A\nname: changed\n")
    assert committed_tree(tmp_path).fingerprint("east") == before["east"]  # not committed
    git(tmp_path, "commit", "-qam", "two")
    after = committed_tree(tmp_path)
    assert after.fingerprint("east") != before["east"]
    assert after.fingerprint("west") == before["west"]
    # a folder the revision does not have is fingerprinted as an empty one, as before
    assert after.fingerprint("north") == CommittedTree({}, "HEAD").fingerprint("north")


# --- the README's templates, taken from the templates layer ---------------------------------------


def test_the_readme_names_the_templates_the_layer_rendered(
    monkeypatch: pytest.MonkeyPatch, validator
) -> None:
    """`check_cluster` renders the templates layer once: the README lists each namespace's
    template files (`workloads.files`) without building them a second time."""
    from renderer.layers import readme
    from renderer.layers.workload_templates import workloads
    from renderer.pipeline import check_cluster

    platform = load_platform(REPO).platform
    rendered = 0
    layer = workloads.render

    def counted(view: ClusterView):  # type: ignore[no-untyped-def]
        nonlocal rendered
        rendered += 1
        yield from layer(view)

    first = sorted(platform.clusters)[0]
    alone = readme.cluster_readme(ClusterView.of(platform, platform.clusters[first]))
    monkeypatch.setattr(workloads, "render", counted)
    assert check_cluster(platform, first, validator).readme == alone
    assert rendered == 1
