"""`render --jobs N`: clusters rendered in worker processes give the same bytes, the same
findings and the same staleness as one after the other in one process, and as the in-memory
path `diff` takes (`render_platform` then `build_tree`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.generate import generate_platform
from renderer.output.validation import OutputValidator
from renderer.output.writer import build_tree
from renderer.pipeline import render_platform
from tests.conftest import REPO, copy_inputs, tree

Run = Callable[..., Any]


def _render(gpuplane: Run, root: Path, *args: str) -> Any:
    return gpuplane("-C", str(root), "render", *args)


@pytest.mark.parametrize("platform_kind", ["example", "generated", "many-small"])
def test_every_job_count_writes_the_same_tree(
    tmp_path: Path, crds: Path, gpuplane: Run, platform_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same tree and report from one process and from workers; on the many-small shape
    (teams of one or two namespaces) with the input files loaded in workers too."""
    from renderer.commands import render

    if platform_kind == "many-small":
        monkeypatch.setattr(render, "PARALLEL_LOAD_FROM", 2)
    trees, outputs = [], []
    for jobs in ("1", "2", "5"):
        root = tmp_path / f"jobs-{jobs}"
        if platform_kind == "example":
            copy_inputs(REPO, root)
        elif platform_kind == "many-small":
            generate_platform(root, clusters=3, pools_per_cluster=2, teams=40, shape="many-small")
        else:
            generate_platform(root, clusters=5, pools_per_cluster=3, teams=20)
        result = _render(gpuplane, root, "--crds", str(crds), "--strict-schemas", "-j", jobs)
        assert result.exit_code == 0, result.output
        trees.append(tree(root / "rendered"))
        outputs.append(result.output)
        check = _render(gpuplane, root, "--crds", str(crds), "--check", "-j", jobs)
        assert check.exit_code == 0, check.output
    assert trees[0] and trees[0] == trees[1] == trees[2]
    assert outputs[0] == outputs[1] == outputs[2]
    # the path `diff` and the tests take, one process and in memory, gives the same files
    root = tmp_path / "jobs-1"
    rendered = render_platform(root, OutputValidator([crds], strict_schemas=True))
    assert not [d for d in rendered.diagnostics if d.severity.value == "error"], (
        rendered.diagnostics
    )
    assert build_tree(rendered.manifests, rendered.readmes, rendered.values) == trees[0]
    if platform_kind == "example":
        assert trees[0] == tree(REPO / "rendered")


def _stale(output: str) -> set[str]:
    """What the stale-output findings of `render --check`'s text say is stale, and how."""
    return {
        line.split(" error[stale-output] ", 1)[1].split(";", 1)[0]
        for line in output.splitlines()
        if " error[stale-output] " in line
    }


def test_check_finds_the_same_stale_files_whatever_the_jobs(
    platform: Path, crds: Path, gpuplane: Run
) -> None:
    rendered = platform / "rendered"
    clusters = sorted(p.name for p in rendered.iterdir() if p.is_dir())
    first, second = clusters[0], clusters[-1]
    edited = next(iter(sorted((rendered / first / "tenancy").rglob("resourcequota-*.yaml"))))
    edited.write_bytes(edited.read_bytes() + b"# by hand\n")
    removed = next(iter(sorted((rendered / second / "queueing").glob("clusterqueue-*.yaml"))))
    removed.unlink()
    (rendered / first / "queueing" / "stray.yaml").write_text("kind: ConfigMap\n")
    (rendered / "gone-cluster" / "tenancy").mkdir(parents=True)
    (rendered / "gone-cluster" / "tenancy" / "namespace-x.yaml").write_text("{}\n")
    (rendered / "notes.txt").write_text("left here\n")
    expected = {
        f"rendered/{edited.relative_to(rendered).as_posix()} is changed",
        f"rendered/{removed.relative_to(rendered).as_posix()} is missing",
        f"rendered/{first}/queueing/stray.yaml is extra",
        "rendered/gone-cluster/tenancy/namespace-x.yaml is extra",
        "rendered/notes.txt is extra",
    }
    outputs = []
    for jobs in ("1", "3"):
        result = _render(gpuplane, platform, "--crds", str(crds), "--check", "-j", jobs)
        assert result.exit_code == 1
        assert _stale(result.output) == expected
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    # and render puts back exactly the committed tree, whatever the jobs
    result = _render(gpuplane, platform, "--crds", str(crds), "-j", "3")
    assert result.exit_code == 0, result.output
    assert tree(rendered) == tree(REPO / "rendered")


def test_findings_are_the_same_whatever_the_jobs(
    tmp_path: Path, gpuplane: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without CRDs every custom kind is a warning, reported once on the first object that had
    it, whichever cluster's worker saw it first; --strict-schemas turns them into errors."""
    monkeypatch.delenv("GPUPLANE_CRDS", raising=False)
    root = copy_inputs(REPO, tmp_path / "repo")
    for extra in ((), ("--strict-schemas",)):
        outputs = []
        for jobs in ("1", "4"):
            result = _render(gpuplane, root, "--check", "--format", "json", "-j", jobs, *extra)
            assert result.exit_code == 1
            outputs.append(result.output)
        assert outputs[0] == outputs[1]
        assert "unchecked" in outputs[0] or "no schema" in outputs[0]
    assert not (root / "rendered").exists()


def test_the_default_is_one_worker_per_cpu() -> None:
    from renderer.commands.render import default_jobs

    assert default_jobs() == len(os.sched_getaffinity(0))


def test_inputs_loaded_in_workers_give_the_same_report(
    tmp_path: Path, crds: Path, gpuplane: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the threshold lowered, the example's input files are loaded in worker processes:
    the findings of a broken file, a schema error and a policy error read the same."""
    from renderer.commands import render

    root = copy_inputs(REPO, tmp_path / "repo")
    teams = sorted((root / "teams").glob("*.yaml"))
    teams[0].write_text(teams[0].read_text() + "broken: [\n")
    teams[1].write_text(teams[1].read_text().replace("spec:", "spec:\n  unknownField: 1", 1))
    pool = sorted((root / "pools").glob("*.yaml"))[0]
    pool.write_text(pool.read_text().replace("kind: Pool", "kind: Pool\nextra: true", 1))
    outputs = []
    for threshold, jobs in ((10_000, "1"), (2, "3")):
        monkeypatch.setattr(render, "PARALLEL_LOAD_FROM", threshold)
        result = _render(gpuplane, root, "--crds", str(crds), "--check", "-j", jobs)
        assert result.exit_code == 1
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    assert teams[0].name in outputs[0] and teams[1].name in outputs[0] and pool.name in outputs[0]


@pytest.mark.parametrize("broken", ["none", "needed", "unneeded"])
def test_crds_parsed_in_workers_give_the_same_report(
    tmp_path: Path, crds: Path, gpuplane: Run, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """With no disk cache of parsed CRDs (a clean CI machine) and the inputs loaded in workers,
    the workers parse the CRD files too: the report is the one parsing them here gives, with a
    CRD file that is not YAML as with none. A file parsed ahead is only remembered, so a broken
    one is reported where a lookup meets it, as without workers (an eager parse of every file
    had made a broken file no kind needed an error, only when the inputs loaded in workers)."""
    from renderer.commands import render
    from renderer.output import crds as crd_module

    root = copy_inputs(REPO, tmp_path / "repo")
    given = tmp_path / "crds"
    shutil.copytree(crds / "kueue", given / "kueue")
    if broken != "none":
        named = "# kueue.x-k8s.io ClusterQueue: its lookup reads this file\n"
        (given / "kueue" / "zz-broken.yaml").write_text(
            (named if broken == "needed" else "")
            + "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: [\n"
        )
    monkeypatch.setenv("GPUPLANE_CACHE_DIR", "")
    monkeypatch.delenv("GPUPLANE_CRDS", raising=False)  # `make test-all` exports ../shared/crds
    adopted: list[Path] = []
    adopt = crd_module.adopt
    monkeypatch.setattr(
        crd_module, "adopt", lambda path, *rest: adopted.append(path) or adopt(path, *rest)
    )
    outputs = []
    for threshold, jobs in ((10_000, "1"), (2, "3")):
        monkeypatch.setattr(crd_module, "_PARSED", {})  # parsed again, not kept from a test before
        monkeypatch.setattr(render, "PARALLEL_LOAD_FROM", threshold)
        result = _render(gpuplane, root, "--crds", str(given), "--check", "-j", jobs)
        outputs.append((result.exit_code, result.output))
    assert outputs[0] == outputs[1]
    assert sorted(p.name for p in adopted) == sorted(
        p.name for p in (given / "kueue").glob("kueue*.yaml")
    )  # each parsed in a worker, but the broken one, parsed here again to say what is wrong
    assert ("zz-broken.yaml" in outputs[0][1]) == (broken == "needed")
