"""The guide's three views as Grafana dashboards: platform, workload and financial.

Each is a ConfigMap in `monitoring` that kube-prometheus-stack's Grafana sidecar loads: the chart
(79.6.1) watches ConfigMaps labelled `grafana_dashboard: "1"` (`grafana.sidecar.dashboards.label`
and `.labelValue`) in every namespace (`.searchNamespace: ALL`), and reads no folder annotation
by default (`.folderAnnotation: null`), so the dashboards land in the provider's folder. One JSON
file per ConfigMap; `uid` stable per cluster and view, at most 40 characters (Grafana's limit).
The panels read the layer's recording rules (`renderer.model.metrics`) and the raw series they
are built from; every panel is filtered by the `cluster`, `team`, `pool` (and on the workload
view `namespace`) variables where its series carry those labels. See docs/observability.md,
"Dashboards".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from renderer.layers.observability import panels as p
from renderer.layers.observability import views
from renderer.model.names import PROMETHEUS_NAMESPACE
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "observability"

SIDECAR_LABEL = {"grafana_dashboard": "1"}
"""kube-prometheus-stack's `grafana.sidecar.dashboards.label` / `.labelValue` defaults."""
UID_MAX = 40
"""Grafana refuses a dashboard uid longer than 40 characters."""
TAG = "gpuplane"


def uid(cluster: str, view: str) -> str:
    """`gpuplane-<view>-<cluster>`, or with the cluster name cut and a hash of it when longer."""
    whole = f"{TAG}-{view}-{cluster}"
    if len(whole) <= UID_MAX:
        return whole
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    keep = UID_MAX - len(f"{TAG}-{view}--{digest}")
    return f"{TAG}-{view}-{cluster[:keep].rstrip('-')}-{digest}"


def dashboard(
    view: ClusterView, name: str, title: str, description: str, grid: p.Grid, *, namespace: bool
) -> dict[str, Any]:
    """The dashboard around one view's panels: uid, title, variables, links."""
    cluster = view.cluster.name
    return {
        "uid": uid(cluster, name),
        "title": f"gpuplane / {title} / {cluster}",
        "description": description,
        "tags": [TAG, name],
        "schemaVersion": p.SCHEMA_VERSION,
        "version": 1,
        "editable": False,
        "graphTooltip": 1,
        "timezone": "browser",
        "time": {"from": "now-24h", "to": "now"},
        "refresh": "1m",
        "templating": {"list": p.variables(cluster, namespace=namespace)},
        "annotations": {"list": []},
        "links": [
            {
                "type": "dashboards",
                "title": "gpuplane views",
                "tags": [TAG],
                "asDropdown": False,
                "includeVars": True,
                "keepTime": True,
            }
        ],
        "panels": grid.panels,
    }


@dataclass(frozen=True, slots=True)
class View:
    name: str
    title: str
    description: str
    panels: Callable[[], p.Grid]
    namespace: bool
    """Whether the view has a `namespace` variable (the workload view's pods)."""


VIEWS = (
    View(
        "platform",
        "Platform",
        "Nodes, GPUs, GPU health, fabric, storage, queues and alerts, per pool.",
        views.platform,
        namespace=False,
    ),
    View(
        "workload",
        "Workload",
        "Per team, namespace and pod: GPUs held and busy, owner, image, runtime, retries and exit"
        " reasons.",
        views.workload,
        namespace=True,
    ),
    View(
        "financial",
        "Financial",
        "Allocated against useful GPU-hours, idle and failed-run hours, and their GPU cost per"
        " team and pool. " + views.COST_COMMAND,
        views.financial,
        namespace=False,
    ),
)


def build(view: ClusterView, board: View) -> dict[str, Any]:
    return dashboard(
        view, board.name, board.title, board.description, board.panels(), namespace=board.namespace
    )


def config_map_name(name: str) -> str:
    return f"{TAG}-dashboard-{name}"


def dashboard_json(body: dict[str, Any]) -> str:
    """Deterministic: keys sorted, two-space indent, a final newline."""
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render(view: ClusterView) -> Iterator[Output]:
    """One ConfigMap per view, in Grafana's namespace, labelled for the sidecar."""
    for board in VIEWS:
        meta = metadata(config_map_name(board.name), PROMETHEUS_NAMESPACE)
        meta["labels"].update(SIDECAR_LABEL)
        yield Manifest(
            LAYER,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": meta,
                "data": {f"{TAG}-{board.name}.json": dashboard_json(build(view, board))},
            },
            view.cluster.origin.at("spec", "addons", "prometheusStack"),
        )
