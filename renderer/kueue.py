"""Kueue objects of one cluster (placeholder until the queue layer lands)."""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers import ClusterView
from renderer.manifest import Output


def render(view: ClusterView) -> Iterator[Output]:
    yield from ()
