"""The render index on the many-small-teams shape (`bench.generate --shape many-small`): after
a change to a team's quota, its namespaces, its images, a pool or a queue, `render --check`
with the index reports what it reports without one, byte for byte and finding for finding,
and `render` with the index writes the tree a full render writes. A change that reaches every
team of a cluster (a pool, a queue) must still reach every one of them."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.generate import generate_platform
from tests.conftest import SHARED_CRDS, tree


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPLANE_CACHE_DIR", str(folder))
    return folder


def _edit(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    changed, count = re.subn(pattern, replacement, text, count=1)
    assert count == 1 and changed != text, (path, pattern)
    path.write_text(changed)


def _quota(root: Path) -> None:
    # the first team's first lending limit, as `make bench` changes it
    _edit(root / "teams" / "team-0000.yaml", r"lendingLimit: (\d+)", "lendingLimit: 1")


def _namespaces(root: Path) -> None:
    _edit(
        root / "teams" / "team-0001.yaml",
        r"  namespaces:\n",
        "  namespaces:\n    - {name: team-0001-batch, cluster: c1, purpose: batch}\n",
    )


def _images(root: Path) -> None:
    # the generated platform has no gpuplane.yaml, so no allowlist: any image is a finding,
    # which must be reported the same with the index
    _edit(
        root / "teams" / "team-0002.yaml",
        r"  queue: ",
        "  images: [registry.example.com/team-0002/]\n  queue: ",
    )


def _pool(root: Path) -> None:
    _edit(root / "pools" / "c0-h100-train-0.yaml", r"nodes: (\d+)", "nodes: 40")


def _queue(root: Path) -> None:
    _edit(root / "queues" / "c1-queue.yaml", r"value: 1000", "value: 900")


INVALID = {"images"}
"""The changes that make a finding: nothing is rendered, with the index or without."""

CHANGES: dict[str, Callable[[Path], None]] = {
    "quota": _quota,
    "namespaces": _namespaces,
    "images": _images,
    "pool": _pool,
    "queue": _queue,
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small many-small platform, rendered once (without an index)."""
    from click.testing import CliRunner

    from renderer.cli import main

    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    crds = SHARED_CRDS
    root = tmp_path_factory.mktemp("many-small")
    generate_platform(root, clusters=2, pools_per_cluster=4, teams=16, shape="many-small")
    args = ["-C", str(root), "render", "--crds", str(crds), "--strict-schemas", "--no-index"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return root


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_checked_with_the_index_is_what_a_full_check_finds(
    change: str, rendered: Path, crds: Path, cache: Path, gpuplane, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(rendered, root)
    opts = ("--crds", str(crds), "--strict-schemas")
    assert gpuplane("-C", str(root), "render", "--check", *opts).exit_code == 0  # fills it
    CHANGES[change](root)
    for form in ("text", "json"):
        with_index = gpuplane("-C", str(root), "render", "--check", *opts, "--format", form)
        without = gpuplane(
            "-C", str(root), "render", "--check", *opts, "--format", form, "--no-index"
        )
        assert with_index.exit_code == without.exit_code == 1, without.output
        assert with_index.output == without.output
        assert ("error" if change in INVALID else "stale") in without.output
    full = tmp_path / "full"
    shutil.copytree(root, full)
    status = 1 if change in INVALID else 0
    assert gpuplane("-C", str(root), "render", *opts).exit_code == status
    assert gpuplane("-C", str(full), "render", *opts, "--no-index").exit_code == status
    assert tree(root / "rendered") == tree(full / "rendered")
    assert gpuplane("-C", str(root), "render", "--check", *opts).exit_code == status
