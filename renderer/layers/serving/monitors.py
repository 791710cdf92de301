"""Serving: monitors (to be written)."""

from __future__ import annotations

from collections.abc import Iterator

from renderer.model.view import ClusterView
from renderer.output.manifest import Output


def render(view: ClusterView) -> Iterator[Output]:
    """Nothing yet."""
    yield from ()
