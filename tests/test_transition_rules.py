"""Transition rules (`oldSelf`) against the object committed in `rendered/`.

A change that edits a field the CRD keeps immutable (here the `topologyName` of a Kueue
ResourceFlavor, which Kueue's CRD freezes once set: a pool's topology levels name its Topology,
so new levels point the flavor at another one) is caught between two commits of a real git repository: on
`render` against HEAD, on `validate --base` and `diff --base` against the base revision (high
risk), and outside git against the files on disk.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.findings.diagnostics import Location
from renderer.output.manifest import Manifest
from renderer.output.transitions import committed_tree
from tests.conftest import SHARED_CRDS, committed_example, edit_once, tree

BLOCK_LEVEL = "      - topology.gpuplane.dev/block\n"


def _flavor_message() -> str:
    """The message of Kueue's rule freezing a ResourceFlavor's topologyName, from its CRD."""
    path = SHARED_CRDS / "kueue" / "kueue.x-k8s.io_resourceflavors.yaml"
    document = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    for version in document["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        for rule in spec["x-kubernetes-validations"]:
            if "self.topologyName == oldSelf.topologyName" in rule["rule"]:
                return str(rule["message"])
    raise AssertionError("Kueue's ResourceFlavor CRD has no rule freezing topologyName")


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, git_env: None) -> Path:
    """The example platform rendered with the upstream CRDs and committed."""
    return committed_example(tmp_path_factory.mktemp("transitions") / "repo")


@pytest.fixture
def repo(committed: Path, tmp_path: Path, git_env: None) -> Path:
    """A copy of the committed repository whose pool h100-train loses its block level."""
    target = tmp_path / "repo"
    shutil.copytree(committed, target, symlinks=True)
    edit_once(target / "pools" / "h100-train.yaml", BLOCK_LEVEL, "")
    return target


def _render(gpuplane: Callable[..., Any], root: Path, *args: str) -> Any:
    return gpuplane("-C", str(root), "render", "--crds", str(SHARED_CRDS), *args)


def test_the_committed_tree_is_read_from_git(committed: Path) -> None:
    at_head = committed_tree(committed)
    assert at_head.origin == "HEAD"
    assert at_head.files == {
        p.removeprefix("rendered/"): b
        for p, b in tree(committed).items()
        if p.startswith("rendered/") and p.endswith(".yaml")
    }
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100-train"},
    }
    found = at_head.find("prod-east", Manifest("queueing", body, Location("pools/h100-train.yaml")))
    assert found is not None and found["spec"]["topologyName"]
    assert committed_tree(committed, "no-such-ref").files == {}


def test_an_unchanged_render_refuses_nothing(committed: Path, gpuplane: Callable[..., Any]) -> None:
    result = _render(gpuplane, committed, "--check")
    assert result.exit_code == 0, result.output
    assert "output-immutable-field" not in result.output


def test_render_refuses_an_immutable_edit(repo: Path, gpuplane: Callable[..., Any]) -> None:
    before = tree(repo / "rendered")
    result = _render(gpuplane, repo)
    assert result.exit_code == 1, result.output
    found = [line for line in result.output.splitlines() if "output-immutable-field" in line]
    assert found, result.output
    assert all(line.startswith("pools/h100-train.yaml:") for line in found), found
    assert any(
        "ResourceFlavor 'h100-train'" in line
        and f'spec: Invalid value: "object": {_flavor_message()}' in line
        for line in found
    ), found
    assert "Force=true,Replace=true" in result.output and "new name" in result.output
    assert tree(repo / "rendered") == before  # nothing written


def test_render_allow_recreate_writes(repo: Path, gpuplane: Callable[..., Any]) -> None:
    result = _render(gpuplane, repo, "--allow-recreate")
    assert result.exit_code == 0, result.output
    assert "warning[output-immutable-field]" in result.output
    written = repo / "rendered" / "prod-east" / "queueing" / "resourceflavor-h100-train.yaml"
    assert "topologyName: rack-hostname" in written.read_text()


def test_validate_base_refuses_an_immutable_edit(
    repo: Path, gpuplane: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPLANE_CRDS", str(SHARED_CRDS))
    assert gpuplane("-C", str(repo), "validate").exit_code == 0  # without --base: inputs only
    result = gpuplane("-C", str(repo), "validate", "--base", "HEAD", "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    found = [d for d in report["findings"] if d["rule"] == "output-immutable-field"]
    assert found and all(d["file"] == "pools/h100-train.yaml" for d in found), report
    assert any(_flavor_message() in d["message"] for d in found)


def test_diff_marks_an_immutable_edit_high_risk(repo: Path, gpuplane: Callable[..., Any]) -> None:
    result = gpuplane(
        "-C", str(repo), "diff", "--base", "HEAD", "--crds", str(SHARED_CRDS), "--format", "json"
    )
    assert result.exit_code == 0, result.output
    findings = [f for f in json.loads(result.output)["changes"] if f["code"] == "immutable-field"]
    assert findings, result.output
    assert {f["risk"] for f in findings} == {"high"}
    assert any(
        f["cluster"] == "prod-east"
        and f["subject"] == "ResourceFlavor h100-train"
        and _flavor_message() in f["summary"]
        for f in findings
    ), findings


def test_outside_git_the_files_on_disk_are_the_old_objects(
    repo: Path, tmp_path: Path, gpuplane: Callable[..., Any]
) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
    assert committed_tree(plain).origin == "disk"
    result = _render(gpuplane, plain)
    assert result.exit_code == 1 and "output-immutable-field" in result.output, result.output


def test_the_file_name_index_finds_what_a_scan_of_every_file_finds() -> None:
    """The committed files are indexed by cluster and file name once, instead of scanned for
    every object (a quadratic `render --check`); the index must name the same files, in the same
    order, as the scan it replaced: every file below `<cluster>/` whose last part is the name."""
    from renderer.output.transitions import CommittedTree

    files = [
        "prod-east/queueing/clusterqueue-a.yaml",
        "prod-east/tenancy/clusterqueue-a.yaml",
        "prod-east/clusterqueue-a.yaml",
        "prod-east/deep/er/clusterqueue-a.yaml",
        "prod-eastern/queueing/clusterqueue-a.yaml",  # another cluster whose name starts alike
        "staging-west/queueing/clusterqueue-a.yaml",
        "prod-east/queueing/xclusterqueue-a.yaml",  # a name that ends alike
        "prod-east/queueing/clusterqueue-a.yaml.bak",
        "prod-east",
        "README.md",
    ]
    tree = CommittedTree(dict.fromkeys(files, b""), "disk")
    for cluster in ("prod-east", "prod-eastern", "staging-west", "absent"):
        for name in ("clusterqueue-a.yaml", "xclusterqueue-a.yaml", "README.md", "prod-east"):
            scanned = sorted(
                p for p in files if p.startswith(f"{cluster}/") and p.endswith(f"/{name}")
            )
            assert tree._named(cluster, name) == scanned, (cluster, name)
    assert tree._named("prod-east", "clusterqueue-a.yaml") == [
        "prod-east/clusterqueue-a.yaml",
        "prod-east/deep/er/clusterqueue-a.yaml",
        "prod-east/queueing/clusterqueue-a.yaml",
        "prod-east/tenancy/clusterqueue-a.yaml",
    ]


def test_only_objects_whose_crd_names_old_self_have_their_committed_file_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`validate --base` and `diff` compare each custom object with its committed self only
    where its CRD has a rule naming `oldSelf`; they found the same immutable edit when every
    committed custom object was read, and they still do."""
    from renderer.commands.transition_checks import transition_changes
    from renderer.output import transitions
    from renderer.output.validation import OutputValidator
    from renderer.pipeline import load_platform, schema_pins

    validator = OutputValidator([SHARED_CRDS])
    platform = load_platform(repo).platform
    previous = committed_tree(repo)
    read: list[str] = []
    documents = transitions.CommittedTree._documents

    def counted(self: transitions.CommittedTree, path: str) -> Any:
        read.append(path)
        return documents(self, path)

    monkeypatch.setattr(transitions.CommittedTree, "_documents", counted)
    found = transition_changes(repo, platform, validator, previous)
    assert any(
        d.rule == "output-immutable-field" and m.kind == "ResourceFlavor" for _, m, d in found
    )
    assert read
    folders = {path.split("/")[0] for path in read}
    for path in read:
        cluster = platform.clusters[path.split("/")[0]]
        docs = yaml.safe_load_all((repo / "rendered" / path).read_text())
        assert all(validator.reads_old_self(doc, schema_pins(cluster)) for doc in docs if doc), path
    assert folders <= set(platform.clusters)
    committed_custom = [
        p for p in previous.paths if "/queueing/" in p or "/workflows/" in p or "/gitops/" in p
    ]
    assert len(read) < len(committed_custom)


def _everything_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """transition_changes as it was before `reads_old_self`: every committed custom object."""
    from renderer.output.validation import OutputValidator

    monkeypatch.setattr(OutputValidator, "reads_old_self", lambda *_, **__: True)


def _shown(found: list[Any]) -> list[tuple[str, str, str, str]]:
    return [(cluster, m.path, d.rule, str(d)) for cluster, m, d in found]


@pytest.mark.parametrize(
    "case", ["as committed", "broken CRD of a new kind", "unsupported version"]
)
def test_the_shortcut_finds_what_reading_every_committed_object_finds(
    repo: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The same findings, in the same order, as comparing every committed custom object; also
    when a kind that has nothing committed has a CRD that cannot be loaded (only a committed
    object meets it, in `check`, which stops there) and when a cluster's Kubernetes version has
    no schemas (`check` stops at its first committed custom object)."""
    from dataclasses import replace

    from renderer.commands.transition_checks import transition_changes
    from renderer.model.view import ClusterView
    from renderer.output.crds import CrdLoadError
    from renderer.output.kubernetes_schemas import is_builtin_group
    from renderer.output.transitions import CommittedTree
    from renderer.output.validation import OutputValidator
    from renderer.pipeline import load_platform, render_cluster

    platform = load_platform(repo).platform
    if case == "broken CRD of a new kind":
        first = platform.clusters[sorted(platform.clusters)[0]]
        custom = [
            o.kind
            for o in render_cluster(ClusterView.of(platform, first))
            if isinstance(o, Manifest)
            and not is_builtin_group(o.body["apiVersion"].rpartition("/")[0])
            and o.kind != "ResourceFlavor"
        ]
        new_kind = custom[0]
        holds = CommittedTree.could_hold
        monkeypatch.setattr(
            CommittedTree,
            "could_hold",
            lambda self, c, m: m.kind != new_kind and holds(self, c, m),
        )
        find = OutputValidator._find_explicit

        def broken(self: OutputValidator, group: str, kind: str) -> Any:
            if kind == new_kind:
                raise CrdLoadError(f"{kind}: a broken CRD file")
            return find(self, group, kind)

        monkeypatch.setattr(OutputValidator, "_find_explicit", broken)
    if case == "unsupported version":
        name = sorted(platform.clusters)[-1]
        clusters = dict(platform.clusters)
        clusters[name] = replace(clusters[name], kubernetes_version="1.99")
        platform = replace(platform, clusters=clusters)

    def run() -> list[tuple[str, str, str, str]]:
        validator = OutputValidator([SHARED_CRDS])
        return _shown(transition_changes(repo, platform, validator, committed_tree(repo)))

    shortcut = run()
    _everything_read(monkeypatch)
    assert shortcut == run()
    if case == "as committed":
        assert any("output-immutable-field" in shown for shown in shortcut)


def test_a_file_holding_what_the_render_writes_is_taken_as_the_body_unparsed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`CommittedTree.old_self_from` takes an object whose own committed file holds exactly the
    bytes this render writes for it as its body, without parsing the file; it must find what
    parsing finds (the same values of the same types, the same version), for every object of
    the example, and parse a file that differs (the repository's edited ResourceFlavor)."""
    from renderer.model.view import ClusterView
    from renderer.output import transitions
    from renderer.pipeline import load_platform, render_cluster
    from tests.test_emitter import _typed

    platform = load_platform(repo).platform
    fast, slow = committed_tree(repo), committed_tree(repo)
    parsed: list[str] = []
    documents = transitions.CommittedTree._documents

    def counted(self: transitions.CommittedTree, path: str) -> Any:
        if self is fast:
            parsed.append(path)
        return documents(self, path)

    monkeypatch.setattr(transitions.CommittedTree, "_documents", counted)
    taken = 0
    for name in sorted(platform.clusters):
        for output in render_cluster(ClusterView.of(platform, platform.clusters[name])):
            if not isinstance(output, Manifest):
                continue
            before = len(parsed)
            found, version = fast.old_self_from(name, output)
            monkeypatch.setattr(slow, "_holds_as_written", lambda *_: False)
            expected, expected_version = slow.old_self_from(name, output)
            assert _typed(found) == _typed(expected), output.path
            assert version == expected_version
            taken += len(parsed) == before and found is output.body
    assert taken > 100
    assert any(path.endswith(".yaml") and "resourceflavor-" in path for path in parsed)


def test_a_header_a_line_break_would_end_is_never_taken_unparsed() -> None:
    from renderer.output.writer import plain_manifest_file

    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    for name in ("teams/a.yaml", "teams/a\nkind: Secret.yaml", "teams/a\u2028b.yaml"):
        manifest = Manifest("tenancy", body, Location(name, 1, 1))
        assert (plain_manifest_file(manifest) is None) == (name != "teams/a.yaml")
    # a lone surrogate (a YAML escape can make one) cannot be written: left to `build_files`
    broken = {**body, "data": {"k": "\ud800"}}
    assert plain_manifest_file(Manifest("tenancy", broken, Location("teams/a.yaml", 1, 1))) is None
