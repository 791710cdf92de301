"""The priority admission objects grow with the teams, not with pairs of teams: bytes, not calls.

`tests/test_scaling.py` counts the calls that write the CEL literals; this weighs what is written.
The benchmark's generated platform at 12, 24 and 48 teams (clusters and pools fixed): the bytes
of every priority object (`renderer.layers.security.priority.render`, as the output writes them)
are a fixed part (the kinds, the messages) plus a part per team namespace, team and class, so
each doubling of the teams adds about twice what the previous doubling added. Each team's
policy listing every team namespace made it four times. On a 1.36 cluster (a
MutatingAdmissionPolicy per team beside the validating one) the same holds.
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import pytest

from bench.generate import generate_platform
from renderer.layers.security import priority
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.pipeline import load_platform

SIZES = (12, 24, 48)
CLUSTERS = 2
POOLS_PER_CLUSTER = 4


@cache
def priority_bytes(teams: int, version: str | None = None) -> tuple[int, int]:
    """The bytes of the priority objects of every cluster of the generated platform (on this
    Kubernetes version, where one is given), and how many objects."""
    with tempfile.TemporaryDirectory(prefix="gpuplane-priority-") as tmp:
        root = Path(tmp)
        generate_platform(root, clusters=CLUSTERS, pools_per_cluster=POOLS_PER_CLUSTER, teams=teams)
        if version is not None:
            for path in (root / "clusters").glob("*.yaml"):
                text = path.read_text()
                start = text.index("kubernetesVersion:")
                end = text.index("\n", start)
                path.write_text(f'{text[:start]}kubernetesVersion: "{version}"{text[end:]}')
        platform = load_platform(root).platform
    size = count = 0
    for name in sorted(platform.clusters):
        for manifest in priority.render(ClusterView.of(platform, platform.clusters[name])):
            size += len(dump(dict(manifest.body)).encode("utf-8"))
            count += 1
    return size, count


@pytest.mark.parametrize("version", [None, "1.36"])
def test_the_priority_objects_grow_linearly_with_the_teams(version: str | None) -> None:
    small, middle, large = (priority_bytes(n, version)[0] for n in SIZES)
    first, second = middle - small, large - middle
    # linear: the second doubling adds twice what the first did; with a list of every team in
    # each team's object it adds four times as much
    assert second <= 2.2 * first, (small, middle, large)
    assert large < 2 * middle, (small, middle, large)


def test_a_kueue_cluster_below_136_has_two_priority_objects_whatever_its_teams() -> None:
    assert {priority_bytes(n)[1] for n in SIZES} == {2 * CLUSTERS}
