"""Placeholder: being written (GPU layer)."""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers import ClusterView
from renderer.manifest import Output
from renderer.model import Pool


def nvidia_node_labels(pool: Pool) -> dict[str, str]:
    """The labels that select this pool's entries in the MIG manager and device plugin
    configurations (`nvidia.com/mig.config`, `nvidia.com/device-plugin.config`)."""
    return {}


def render(view: ClusterView) -> Iterator[Output]:
    yield from ()
