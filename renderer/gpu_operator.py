"""Placeholder: being written (GPU layer)."""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers import ClusterView
from renderer.manifest import Output


def render(view: ClusterView) -> Iterator[Output]:
    yield from ()
