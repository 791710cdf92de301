"""The render index: a cluster is rendered from its slice of the platform only, so its output
is a function of the slice's files; a check re-renders only the clusters whose files (or
gpuplane, or the CRDs) changed, trusts nothing it cannot verify, and writes the same bytes as a
full render."""

from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path

import pytest

from bench.generate import generate_platform
from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import Platform
from renderer.model.view import ClusterView, cluster_slice, slice_files
from renderer.pipeline import load_platform, render_cluster
from renderer.policy.rule import Scope
from tests.conftest import REPO, tree


def _bodies(view: ClusterView) -> list[tuple[str, object]]:
    return [(o.path, o.body) for o in render_cluster(view)]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("generated")
    generate_platform(root, clusters=4, pools_per_cluster=4, teams=24)
    return root


@pytest.mark.parametrize("which", ["example", "generated"])
def test_a_cluster_renders_the_same_from_its_slice(which: str, generated: Path) -> None:
    root = REPO if which == "example" else generated
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    platform = loaded.platform
    for name in sorted(platform.clusters):
        cluster = platform.clusters[name]
        sliced = ClusterView.of(platform, cluster)
        assert sliced.platform is not platform
        assert _bodies(sliced) == _bodies(ClusterView.over(platform, cluster)), name


def test_a_slice_holds_only_what_its_cluster_depends_on(generated: Path) -> None:
    platform = load_platform(generated).platform
    every_file = set(slice_files(platform))
    seen: set[str] = set()
    for name in sorted(platform.clusters):
        part = cluster_slice(platform, name)
        files = set(slice_files(part))
        assert f"clusters/{name}.yaml" in files
        assert set(part.documents) == files
        # another cluster's own pools and teams are not in it
        assert all(p.cluster == name for p in part.pools.values())
        assert all(any(ns.cluster == name for ns in t.namespaces) for t in part.teams.values())
        seen |= files
    assert seen == every_file


# --- the index ----------------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPLANE_CACHE_DIR", str(folder))
    return folder


def _tree_render(root: Path, crds: Path, *, check: bool = True, index: bool = True):  # type: ignore[no-untyped-def]
    """`render_tree` as `gpuplane render --check --crds CRDS --strict-schemas` calls it."""
    from renderer.commands.render import render_tree
    from renderer.commands.render_context import RenderContext
    from renderer.commands.render_index import RenderIndex
    from renderer.inputs.changes import changed_lines
    from renderer.output.transitions import committed_tree
    from renderer.output.validation import OutputValidator

    opened = (
        RenderIndex.open(root, [crds], strict_schemas=True) if index else RenderIndex.disabled()
    )
    result = render_tree(
        root,
        root / "rendered",
        RenderContext(
            OutputValidator([crds], strict_schemas=True),
            changed=changed_lines(root),
            previous=committed_tree(root),
            keep_files=not check,
            index=opened,
        ),
    )
    opened.save()
    return result


def _check(gpuplane, root: Path, crds: Path, *args: str):  # type: ignore[no-untyped-def]
    return gpuplane(
        "-C", str(root), "render", "--check", "--crds", str(crds), "--strict-schemas", *args
    )


def test_an_unchanged_platform_is_taken_from_the_index(
    platform: Path, crds: Path, cache: Path, gpuplane
) -> None:
    first = _tree_render(platform, crds)
    assert first.reused == () and first.staleness is not None and first.staleness.clean
    second = _tree_render(platform, crds)
    assert second.reused == tuple(sorted(first.platform.clusters))
    assert (second.objects, second.file_count, second.diagnostics) == (
        first.objects,
        first.file_count,
        first.diagnostics,
    )
    assert second.staleness is not None and second.staleness.clean
    assert not any(cache.rglob("*.pickle")) or all(
        not p.resolve().is_relative_to(platform.resolve()) for p in cache.rglob("*.pickle")
    )
    result = _check(gpuplane, platform, crds)
    assert result.exit_code == 0 and result.output.startswith("rendered/ is current"), result.output


def test_a_team_change_renders_only_its_clusters_and_the_same_bytes(
    platform: Path, crds: Path, cache: Path, gpuplane, tmp_path: Path
) -> None:
    assert _check(gpuplane, platform, crds).exit_code == 0  # fills the index
    loaded = load_platform(platform).platform
    team = next(
        t
        for t in sorted(loaded.teams)
        if {ns.cluster for ns in loaded.teams[t].namespaces} == {"prod-east"}
    )
    path = platform / "teams" / f"{team}.yaml"
    text = path.read_text()
    assert "nominal: 4" in text or "nominal: " in text
    import re

    path.write_text(
        re.sub(r"nominal: (\d+)", lambda m: f"nominal: {int(m.group(1)) - 1}", text, count=1)
    )
    result = _tree_render(platform, crds)
    assert "prod-east" not in result.reused and result.reused, result.reused
    without = _check(gpuplane, platform, crds, "--no-index")
    with_index = _check(gpuplane, platform, crds)
    assert with_index.exit_code == without.exit_code == 1
    assert with_index.output == without.output
    # render with the index writes what a full render writes
    full = tmp_path / "full"
    shutil.copytree(platform, full)
    assert gpuplane("-C", str(platform), "render", "--crds", str(crds)).exit_code == 0
    assert gpuplane("-C", str(full), "render", "--crds", str(crds), "--no-index").exit_code == 0
    assert tree(platform / "rendered") == tree(full / "rendered")
    assert _check(gpuplane, platform, crds).exit_code == 0


def test_a_hand_edit_is_found_whatever_its_stat_says(
    platform: Path, crds: Path, cache: Path, gpuplane
) -> None:
    assert _check(gpuplane, platform, crds).exit_code == 0
    edited = sorted((platform / "rendered" / "staging-west" / "tenancy").rglob("*.yaml"))[0]
    before = edited.stat()
    data = edited.read_bytes()
    edited.write_bytes(data.replace(b"gpuplane", b"gpuplanf", 1))  # same size
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime
    result = _check(gpuplane, platform, crds)
    assert result.exit_code == 1
    shown = f"rendered/{edited.relative_to(platform / 'rendered').as_posix()}"
    assert (
        f"{shown}: error[stale-output] {shown} is changed; run `gpuplane render` and commit the "
        "result"
    ) in result.output.splitlines()


@pytest.mark.parametrize("how", ["extra", "missing"])
def test_an_extra_or_missing_file_renders_the_cluster_again(
    platform: Path, crds: Path, cache: Path, gpuplane, how: str
) -> None:
    assert _check(gpuplane, platform, crds).exit_code == 0
    folder = platform / "rendered" / "prod-east" / "queueing"
    if how == "extra":
        (folder / "extra.yaml").write_text("{}\n")
        shown = "rendered/prod-east/queueing/extra.yaml"
    else:
        gone = sorted(folder.glob("*.yaml"))[0]
        gone.unlink()
        shown = f"rendered/prod-east/queueing/{gone.name}"
    expected = f"{shown}: error[stale-output] {shown} is {how}; run `gpuplane render` and commit the result"
    result = _check(gpuplane, platform, crds)
    assert result.exit_code == 1 and expected in result.output.splitlines(), result.output


def test_a_corrupt_or_foreign_index_is_a_miss(
    platform: Path, crds: Path, cache: Path, gpuplane
) -> None:
    assert _check(gpuplane, platform, crds).exit_code == 0
    (index,) = list(cache.rglob("*.pickle"))
    for junk in (
        b"not a pickle",
        b"",
        pickle.dumps({"format": 1, "fingerprint": b"x", "clusters": {}}),
    ):
        index.write_bytes(junk)
        result = _tree_render(platform, crds)
        assert result.reused == () and result.staleness is not None and result.staleness.clean


def test_other_crds_render_every_cluster_again(
    platform: Path, crds: Path, cache: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "crds"
    shutil.copytree(crds, copy)
    assert _tree_render(platform, copy).reused == ()
    assert _tree_render(platform, copy).reused
    some = sorted(p for p in copy.rglob("*.yaml"))[0]
    some.write_bytes(some.read_bytes() + b"\n# a comment changes the bytes\n")
    assert _tree_render(platform, copy).reused == ()


def test_findings_kept_in_the_index_are_reported_again(
    platform: Path, cache: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without CRDs each custom kind is a warning; a check taken from the index says the same."""
    monkeypatch.delenv("GPUPLANE_CRDS", raising=False)
    args = ("-C", str(platform), "render", "--check", "--format", "json")
    first = gpuplane(*args)
    second = gpuplane(*args)
    assert first.exit_code == second.exit_code == 0
    assert first.output == second.output and "warning" in first.output
    assert second.output == gpuplane(*args, "--no-index").output


def test_an_empty_cache_setting_turns_the_index_off(
    platform: Path, crds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from renderer.commands.render_index import RenderIndex

    monkeypatch.setenv("GPUPLANE_CACHE_DIR", "")
    assert RenderIndex.open(platform, [crds], strict_schemas=True).path is None


def test_the_policy_findings_are_kept_while_every_input_is_the_same(
    platform: Path, crds: Path, cache: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy runs again only when an input file, the files that failed to load or the
    changed lines differ; a platform with policy errors saves no index, so runs it again."""
    from renderer.commands import render as command
    from renderer.policy.check import check_policy

    calls = 0

    def counted(platform_: Platform, scope: Scope | None = None) -> list[Diagnostic]:
        nonlocal calls
        calls += scope != "team"  # a run: the whole policy, or its platform rules
        return check_policy(platform_, scope)

    monkeypatch.setattr(command, "check_policy", counted)
    assert _check(gpuplane, platform, crds).exit_code == 0
    assert calls == 1
    assert _check(gpuplane, platform, crds).exit_code == 0
    assert calls == 1  # nothing changed: kept
    team = sorted((platform / "teams").glob("*.yaml"))[0]
    team.write_text(re.sub(r"nominal: (\d+)", "nominal: 100000", team.read_text(), count=1))
    first = _check(gpuplane, platform, crds)
    assert calls == 2 and first.exit_code == 1 and "error[" in first.output
    without = _check(gpuplane, platform, crds, "--no-index")
    assert calls == 3 and without.exit_code == 1 and first.output == without.output


def test_a_team_rules_finding_after_a_team_edit_is_the_one_a_full_check_gives(
    platform: Path, crds: Path, cache: Path, gpuplane
) -> None:
    """After a check recorded every team file's findings, an edit of one team file that a team
    rule refuses (rbac-group-characters) and one a platform rule refuses (quota-exceeds-pool)
    are reported as a check without the index reports them; taking the edit back is clean."""
    assert _check(gpuplane, platform, crds).exit_code == 0
    team = platform / "teams" / "llm-eval.yaml"
    text = team.read_text()
    team.write_text(text.replace("owners: [llm-leads]", 'owners: [llm-leads, "a,b"]'))
    (platform / "teams" / "llm.yaml").write_text(
        (platform / "teams" / "llm.yaml").read_text().replace("nominal: 16,", "nominal: 96,", 1)
    )
    kept = _check(gpuplane, platform, crds)
    fresh = _check(gpuplane, platform, crds, "--no-index")
    assert kept.exit_code == fresh.exit_code == 1
    assert "rbac-group-characters" in kept.output and "quota-exceeds-pool" in kept.output
    assert kept.output == fresh.output
    team.write_text(text)
    assert "rbac-group-characters" not in _check(gpuplane, platform, crds).output


def test_kept_policy_findings_are_the_ones_found(platform: Path, cache: Path) -> None:
    """Findings kept in the saved index come back equal, and any input's bytes, a changed
    line, or the pools' sizes at a change's base (from git) make the policy run again."""
    import dataclasses

    from renderer.commands.render_index import RenderIndex
    from renderer.findings.diagnostics import Location

    found = [Diagnostic("quota-exceeds-pool", "a finding", Location("teams/x.yaml", 3, 5))]
    calls = 0

    def check(platform_: Platform, scope: Scope | None = None) -> list[Diagnostic]:
        nonlocal calls
        calls += scope != "team"  # a run: the whole policy, or its platform rules
        return list(found) if scope != "team" else []

    loaded = load_platform(platform, policy=False)
    index = RenderIndex.open(platform, [], strict_schemas=False)
    assert index.policy_findings(loaded, check) == found and calls == 1
    index.save()
    reopened = RenderIndex.open(platform, [], strict_schemas=False)
    assert reopened.policy_findings(loaded, check) == found and calls == 1
    team = sorted((platform / "teams").glob("*.yaml"))[0]
    changed = load_platform(platform, changed={f"teams/{team.name}": frozenset({3})}, policy=False)
    assert reopened.policy_findings(changed, check) == found and calls == 2
    team.write_text(team.read_text() + "\n")
    edited = load_platform(platform, policy=False)
    assert reopened.policy_findings(edited, check) == found and calls == 3
    from renderer.model.evidence import BaseSizes

    based = dataclasses.replace(
        edited, platform=dataclasses.replace(edited.platform, base_sizes=BaseSizes())
    )
    reopened.policy_findings(based, check)
    reopened.policy_findings(based, check)
    assert calls == 5


# --- the fingerprint's files, taken by their stats -----------------------------------------------


def _fingerprint(root: Path, crds: Path, known):  # type: ignore[no-untyped-def]
    from renderer.commands.render_index import code_and_schema_fingerprint

    return code_and_schema_fingerprint(root, [crds], strict_schemas=True, known=known)


def test_digests_kept_by_stat_give_the_fingerprint_the_files_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from renderer.commands import render_index
    from renderer.commands.render_index import FileDigests

    crds = tmp_path / "crds"
    crds.mkdir()
    for name in ("a.yaml", "b.yaml"):
        (crds / name).write_text(f"# {name}\n")
    read = _fingerprint(tmp_path, crds, None)
    monkeypatch.setattr(render_index, "RECENT_NS", 0)  # every file old enough to be kept
    store = tmp_path / "digests.marshal"
    first = FileDigests.load(store)
    assert _fingerprint(tmp_path, crds, first) == read
    first.save()
    kept = FileDigests.load(store)
    assert os.fspath(crds / "a.yaml") in kept._kept  # what the next run takes by the stat
    assert _fingerprint(tmp_path, crds, kept) == read


@pytest.mark.parametrize("edit", ["same size, mtime set back", "the target of a link written"])
def test_a_file_kept_by_stat_and_changed_since_is_read_again(
    edit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from renderer.commands import render_index
    from renderer.commands.render_index import FileDigests

    monkeypatch.setattr(render_index, "RECENT_NS", 0)
    crds = tmp_path / "crds"
    crds.mkdir()
    target = crds / "a.yaml"
    target.write_text("# alpha\n")
    if edit == "the target of a link written":  # the link itself stays as it was
        (tmp_path / "one.yaml").write_text("# one\n")
        target.unlink()
        target.symlink_to(tmp_path / "one.yaml")
        target = tmp_path / "one.yaml"
    store = tmp_path / "digests.marshal"
    known = FileDigests.load(store)
    before = _fingerprint(tmp_path, crds, known)
    known.save()
    stat = target.stat()
    target.write_text(target.read_text().upper())  # the same size: only the ctime tells
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    after = _fingerprint(tmp_path, crds, FileDigests.load(store))
    assert after != before
    assert after == _fingerprint(tmp_path, crds, None)


def test_a_file_written_just_now_is_not_taken_by_its_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second write of the same size within one tick of the file system's clock would leave
    the stat as it was: a file as recent as that is read again each time, and kept once it is
    older than `RECENT_NS`."""
    import time

    from renderer.commands import render_index
    from renderer.commands.render_index import FileDigests

    fresh = tmp_path / "fresh.yaml"
    fresh.write_text("# fresh\n")
    known = FileDigests.load(tmp_path / "digests.marshal")
    assert known.digest(fresh) is not None
    assert os.fspath(fresh) not in known._kept
    later = time.time_ns() + render_index.RECENT_NS
    monkeypatch.setattr(render_index.time, "time_ns", lambda: later)
    assert known.digest(fresh) is not None
    assert os.fspath(fresh) in known._kept


@pytest.mark.parametrize(
    "stored", [b"", b"not marshal", b"\xe9\x01", None], ids=["empty", "text", "bad", "foreign"]
)
def test_an_unreadable_digest_store_is_read_as_empty(stored: bytes | None, tmp_path: Path) -> None:
    import marshal

    from renderer.commands.render_index import FileDigests

    store = tmp_path / "digests.marshal"
    store.write_bytes(marshal.dumps((1, {"a": ("not a stat", b"x")})) if stored is None else stored)
    known = FileDigests.load(store)
    (tmp_path / "a.yaml").write_text("# a\n")
    assert known._kept == {} and known.digest(tmp_path / "a.yaml") is not None


def test_the_libraries_versions_are_kept_until_a_folder_on_the_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installing, upgrading or removing a library adds or removes its .dist-info folder in a
    folder on sys.path: the versions are asked again then, and only then."""
    from renderer.commands import render_index
    from renderer.commands.render_index import FileDigests, pinned_versions

    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(render_index, "RECENT_NS", 0)
    asked: list[bytes] = []

    def counted() -> bytes:
        asked.append(pinned_versions())
        return asked[-1]

    monkeypatch.setattr(render_index, "pinned_versions", counted)
    store = tmp_path / "digests.marshal"
    first = FileDigests.load(store)
    versions = first.versions()
    first.save()
    assert versions == asked[0] and b"jinja2==" in versions
    assert FileDigests.load(store).versions() == versions
    assert len(asked) == 1  # kept
    (site / "some_library-1.0.dist-info").mkdir()  # an install, as pip lays it out
    assert FileDigests.load(store).versions() == versions  # asked again: the same here
    assert len(asked) == 2


def test_the_index_is_written_again_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that changes nothing leaves the index file as it was (33 MB at the bench's 4x
    many-small shape); one that loads a new input file, every other asked for as it was,
    writes it with that file."""
    from renderer.commands import render_index
    from renderer.commands.render_index import RenderIndex

    monkeypatch.setattr(render_index, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(render_index, "code_and_schema_fingerprint", lambda *a, **k: b"f")

    def run(*new: tuple[str, bytes]) -> RenderIndex:
        index = RenderIndex.open(tmp_path, [], strict_schemas=True)
        loaded = index.input_cache()
        assert loaded is not None
        for key in list(index.inputs):
            assert key in loaded  # asked for, as load_platform asks for each file it loads
        for key in new:
            loaded[key] = b"loaded " + key[1]
        index.save()
        return index

    first = run(("teams/a.yaml", b"1"))
    assert first.path is not None
    written = first.path.stat()
    run()
    assert first.path.stat().st_ino == written.st_ino  # nothing changed: not replaced
    run(("teams/b.yaml", b"2"))
    assert set(run().inputs) == {("teams/a.yaml", b"1"), ("teams/b.yaml", b"2")}
