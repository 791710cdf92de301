"""What the cluster README and the diagram say of each add-on a cluster declares: its name, the
version it pins, how it gets onto the cluster and why it is there.

Not a render layer (it writes no object): `renderer.layers.readme` tabulates these notes and
`renderer.layers.platform_drawing` draws one box per note. How an add-on is installed is the
gitops layer's answer (`renderer.layers.gitops.argocd`: one Argo CD Application per chart it
installs, named `<cluster>-<release>`); why, `renderer.model.operator_reasons`'.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from renderer.layers.gitops.argocd import Chart, installed_charts
from renderer.model.names import DCGM_EXPORTER_ADDON, GPU_OPERATOR_ADDON
from renderer.model.operator_reasons import ordered, platform_addon, purpose, reasons, title
from renderer.model.view import ClusterView

How = Literal["application", "operand", "elsewhere", "by-hand"]
"""How an add-on gets onto the cluster: an Argo CD Application gpuplane renders; deployed by
another add-on's Application (the DCGM exporter by the GPU Operator); already running, installed
by someone else (`enabled: false`); or by hand, where no `gpuplane.yaml` says where Argo CD
clones from, so no Application is rendered."""

UNPINNED = "unpinned"


@dataclass(frozen=True, slots=True)
class AddonNote:
    """One add-on of one cluster, as the README's row and the diagram's box say it."""

    addon: str
    """The key under `spec.addons`."""
    title: str
    version: str | None
    how: How
    application: str | None
    """The Argo CD Application that installs it (for an operand, its operator's); None without
    one."""
    chart: Chart | None
    """The chart (or kustomize base) it is installed from; None where gpuplane installs nothing."""
    purpose: str
    reasons: tuple[str, ...]
    """What on the cluster needs it, grouped (`renderer.model.operator_reasons.grouped`)."""
    platform: bool
    """One of the platform's own add-ons, there for the platform itself."""

    @property
    def shown_version(self) -> str:
        return self.version or UNPINNED

    def source(self, name: Callable[[str], str] = str) -> str:
        """Where its chart or kustomize base comes from, in words ("" without one); each name
        in it passed through `name` (the README writes them as code)."""
        chart = self.chart
        if chart is None:
            return ""
        if chart.path:
            return (
                f"kustomize base {name(chart.path)} of {name(chart.repository)} at the pinned tag"
            )
        return f"chart {name(chart.chart)} from {name(chart.repository)}"

    def installed_as(self, name: Callable[[str], str] = str) -> str:
        """How it gets onto the cluster, in one line of words; names passed through `name`."""
        if self.how == "elsewhere":
            return f"already running, not installed by gpuplane ({name('enabled: false')})"
        if self.how == "operand":
            through = f", Argo CD Application {name(self.application)}" if self.application else ""
            return f"deployed by the GPU Operator (its {name(self.addon)} values{through})"
        if self.how == "by-hand":
            return (
                f"by hand, no Argo CD Application (no {name('gpuplane.yaml')}): {self.source(name)}"
            )
        return f"Argo CD Application {name(self.application or '')}: {self.source(name)}"

    def why(self) -> str:
        """Why it is on the cluster: what needs it; the platform's own add-ons are there for the
        platform itself."""
        needs = "; ".join(self.reasons)
        if self.platform:
            return "the platform itself" + (f"; also needed by {needs}" if needs else "")
        return needs or "nothing on the cluster needs it (warning operator-unused)"


def addon_notes(view: ClusterView) -> tuple[AddonNote, ...]:
    """A note per add-on the cluster declares, the GPU Operator first (`operator_reasons.ORDER`)."""
    cluster = view.cluster
    charts = {chart.addon: chart for chart in installed_charts(cluster)}
    needs = reasons(view.platform, cluster)
    repository = view.platform.repository is not None
    notes = []
    for name in ordered(cluster.addons):
        addon = cluster.addons[name]
        chart = charts.get(name)
        how: How
        if name == DCGM_EXPORTER_ADDON:
            # an operand of the GPU Operator: its values enable the exporter
            how, chart = "operand", charts.get(GPU_OPERATOR_ADDON)
        elif not cluster.runs(name):
            how = "elsewhere"
        elif chart is not None:
            how = "application" if repository else "by-hand"
        else:
            how = "elsewhere"  # no chart of gpuplane's installs it
        notes.append(
            AddonNote(
                addon=name,
                title=title(name),
                version=addon.version,
                how=how,
                application=_application(view, chart) if how != "elsewhere" else None,
                chart=chart if how != "operand" else None,
                purpose=purpose(name),
                reasons=needs.get(name, ()),
                platform=platform_addon(name),
            )
        )
    return tuple(notes)


def _application(view: ClusterView, chart: Chart | None) -> str | None:
    """The name `renderer.layers.gitops.argocd` gives the chart's Application; None where no
    Application is rendered (no repository settings) or no chart installs it."""
    if chart is None or view.platform.repository is None:
        return None
    return f"{view.cluster.name}-{chart.release}"
