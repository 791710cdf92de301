"""`gpuplane diagram`: the declared platform drawn in the guide's six layers (docs/diagram.md).

Which clusters and which writer; the drawing is `renderer.layers.platform_drawing`'s, the writers are
`renderer.output.drawing`'s. Several clusters make one picture: in SVG a section per cluster,
top to bottom; in Mermaid a subgraph per cluster holding its six layers.
"""

from __future__ import annotations

from dataclasses import dataclass

from renderer.findings.diagnostics import closest, inert
from renderer.layers.platform_drawing import drawing
from renderer.model.platform import Platform
from renderer.model.view import ClusterView
from renderer.output import drawing as writers

FORMATS = ("svg", "mermaid")


@dataclass(frozen=True, slots=True)
class Diagram:
    clusters: tuple[str, ...]
    format: str
    text: str


def unknown_cluster(platform: Platform, cluster: str | None) -> str | None:
    """A usage problem when `cluster` names no cluster of the platform, else None."""
    if cluster is None or cluster in platform.clusters:
        return None
    known = sorted(platform.clusters)
    close = closest(cluster, known)
    hint = f" Did you mean '{close}'?" if close else f" Clusters: {', '.join(known) or 'none'}."
    return inert(f"unknown cluster '{cluster}'.{hint}")


def build(platform: Platform, cluster: str | None, fmt: str) -> Diagram:
    """The picture of one cluster, or of every cluster (in name order) when `cluster` is None."""
    names = (cluster,) if cluster is not None else tuple(sorted(platform.clusters))
    drawings = [drawing(ClusterView.of(platform, platform.clusters[name])) for name in names]
    text = writers.svg(*drawings) if fmt == "svg" else writers.mermaid(*drawings)
    return Diagram(names, fmt, text)
