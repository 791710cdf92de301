"""The pieces of a Grafana dashboard: panels, template variables, selectors, the grid.

Grafana's dashboard JSON model (grafana/grafana `docs/sources/dashboards/build-dashboards/
view-dashboard-json-model`, panels `timeseries`, `stat`, `table`, `text`, `row`). The schema
version is Grafana 12's (`public/app/features/dashboard/state/DashboardMigrator.ts`,
`DASHBOARD_SCHEMA_VERSION` 41): kube-prometheus-stack 79.6.1 brings the grafana chart 10.1.5,
a Grafana 12 release. Every query goes to the datasource the chart's sidecar provisions by default
(`grafana.sidecar.datasources.defaultDatasourceEnabled: true`, `uid: prometheus`).

Selectors: the layer's recording rules carry a static `cluster` label, so their series are
matched with `cluster="$cluster"`. Raw series (DCGM, kube-state-metrics, kubelet, `ALERTS`)
carry `cluster` only where a global view (Thanos, federation with an external label) adds it; in
the cluster's own Prometheus they carry none, so they are matched with `cluster=~"$cluster|"`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from renderer.model import metrics
from renderer.model.server_metrics import REQUESTS_RATE as ENDPOINT_SERIES

DATASOURCE: dict[str, str] = {"type": "prometheus", "uid": "prometheus"}
"""kube-prometheus-stack's default Prometheus datasource (`grafana.sidecar.datasources.uid`)."""
SCHEMA_VERSION = 41
GRID_WIDTH = 24
"""Grafana's grid is 24 columns wide."""

CLUSTER_VAR = "cluster"
TEAM_VAR = "team"
POOL_VAR = "pool"
NAMESPACE_VAR = "namespace"
ENDPOINT_VAR = "endpoint"
"""The workload view's inference endpoints (the `endpoint` label of the recorded series)."""

STEP = f"{metrics.EXPORT_STEP_SECONDS // 60}m"
"""The subquery step of the GPU-hour panels: the usage export's (`gpuplane cost` reads the same)."""
HOURS_PER_STEP = f"{metrics.EXPORT_STEP_SECONDS} / 3600"


# --- selectors ------------------------------------------------------------------------------------


def sel(
    metric: str,
    *,
    raw: bool = False,
    team: bool = False,
    pool: bool = False,
    namespace: bool = False,
    extra: tuple[str, ...] = (),
) -> str:
    """`metric{...}` filtered by the dashboard's variables on the labels the series carries."""
    matchers = [f'{CLUSTER_VAR}=~"${CLUSTER_VAR}|"' if raw else f'{CLUSTER_VAR}="${CLUSTER_VAR}"']
    if team:
        matchers.append(f'{metrics.TEAM}=~"${TEAM_VAR}"')
    if pool:
        matchers.append(f'{metrics.POOL}=~"${POOL_VAR}"')
    if namespace:
        matchers.append(f'{metrics.NAMESPACE}=~"${NAMESPACE_VAR}"')
    matchers.extend(extra)
    return f"{metric}{{{', '.join(matchers)}}}"


def namespace_team(*, namespace: bool = False) -> str:
    """One series per namespace of the selected teams (and, where the dashboard has the variable,
    namespaces), labelled `team`: what raw pod series join to."""
    info = sel(metrics.NAMESPACE_INFO, team=True, namespace=namespace)
    return f"max by (namespace, team) ({info})"


def with_team(expr: str, *, namespace: bool = False) -> str:
    """A raw series that has a `namespace` label, kept for the selected teams' namespaces only
    and labelled with the team."""
    return f"({expr}) * on (namespace) group_left (team) {namespace_team(namespace=namespace)}"


def node_pool() -> str:
    """One series per node of the selected pools, labelled `pool`."""
    return f"max by (node, pool) ({sel(metrics.NODE_INFO, pool=True)})"


def queue_team() -> str:
    """One series per ClusterQueue of the selected teams, labelled `team`."""
    return f"max by (cluster_queue, team) ({sel(metrics.CLUSTER_QUEUE_INFO, team=True)})"


def with_queue_team(expr: str) -> str:
    return f"({expr}) * on (cluster_queue) group_left (team) {queue_team()}"


def gpu_hours(series: str, by: str) -> str:
    """GPU-hours over the dashboard's time range: GPUs sampled every export step, summed, times
    the hours one step is worth (the usage export's arithmetic)."""
    return (
        f"sum by ({by}) (sum_over_time({sel(series, team=True, pool=True)}[$__range:{STEP}]))"
        f" * {HOURS_PER_STEP}"
    )


def priced(expr: str, by: str) -> str:
    """A per-pool amount of GPU-hours times the pool's `cost.gpuHour`, summed `by` and currency."""
    rate = sel(metrics.POOL_GPU_HOUR_COST, pool=True)
    return f"sum by ({by}, currency) (({expr}) * on (pool) group_left (currency) {rate})"


# --- template variables ---------------------------------------------------------------------------


def query_variable(
    name: str, label: str, query: str, *, multi: bool, current: str | None = None
) -> dict[str, Any]:
    """A variable filled by a `label_values(...)` query, refreshed when the time range changes."""
    variable: dict[str, Any] = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": dict(DATASOURCE),
        "definition": query,
        "query": {"query": query, "refId": "StandardVariableQuery"},
        "refresh": 2,
        "sort": 1,
        "regex": "",
        "hide": 0,
        "multi": multi,
        "includeAll": multi,
        "options": [],
    }
    if multi:
        variable["allValue"] = ".*"
        variable["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
    elif current is not None:
        variable["current"] = {"selected": True, "text": current, "value": current}
    return variable


def variables(cluster: str, *, namespace: bool) -> list[dict[str, Any]]:
    """cluster (one, the rendered cluster by default), pool, team and, where asked, namespace:
    each read from the layer's own info series."""
    result = [
        query_variable(
            CLUSTER_VAR,
            "Cluster",
            f'label_values({metrics.POOL_INFO}{{cluster!=""}}, cluster)',
            multi=False,
            current=cluster,
        ),
        query_variable(
            POOL_VAR,
            "Pool",
            f'label_values({metrics.POOL_INFO}{{cluster="$cluster"}}, pool)',
            multi=True,
        ),
        query_variable(
            TEAM_VAR,
            "Team",
            f'label_values({metrics.NAMESPACE_INFO}{{cluster="$cluster"}}, team)',
            multi=True,
        ),
    ]
    if namespace:
        result.append(
            query_variable(
                NAMESPACE_VAR,
                "Namespace",
                f'label_values({metrics.NAMESPACE_INFO}{{cluster="$cluster", team=~"$team"}},'
                " namespace)",
                multi=True,
            )
        )
        result.append(
            query_variable(
                ENDPOINT_VAR,
                "Endpoint",
                f'label_values({ENDPOINT_SERIES}{{cluster="$cluster", team=~"$team",'
                ' namespace=~"$namespace"}, endpoint)',
                multi=True,
            )
        )
    return result


# --- panels and the grid --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    expr: str
    legend: str = ""


def _targets(queries: tuple[Query, ...], *, instant: bool, table: bool) -> list[dict[str, Any]]:
    targets = []
    for index, query in enumerate(queries):
        target: dict[str, Any] = {
            "refId": chr(ord("A") + index),
            "datasource": dict(DATASOURCE),
            "expr": query.expr,
            "legendFormat": query.legend or "__auto",
            "instant": instant,
            "range": not instant,
        }
        if table:
            target["format"] = "table"
        targets.append(target)
    return targets


def timeseries(
    title: str, description: str, queries: tuple[Query, ...], unit: str = "short"
) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": dict(DATASOURCE),
        "targets": _targets(queries, instant=False, table=False),
        "fieldConfig": {
            "defaults": {"unit": unit, "custom": {"fillOpacity": 10, "lineWidth": 1}},
            "overrides": [],
        },
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }


def stat(
    title: str, description: str, queries: tuple[Query, ...], unit: str = "short"
) -> dict[str, Any]:
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": dict(DATASOURCE),
        "targets": _targets(queries, instant=True, table=False),
        "fieldConfig": {"defaults": {"unit": unit, "decimals": 2}, "overrides": []},
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "none",
            "textMode": "auto",
        },
    }


def table(
    title: str, description: str, queries: tuple[Query, ...], unit: str = "short"
) -> dict[str, Any]:
    """An instant table; several queries are merged on their common labels, one column each."""
    transformations: list[dict[str, Any]] = []
    if len(queries) > 1:
        transformations.append({"id": "merge", "options": {}})
    transformations.append(
        {"id": "organize", "options": {"excludeByName": {"Time": True}, "indexByName": {}}}
    )
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": dict(DATASOURCE),
        "targets": _targets(queries, instant=True, table=True),
        "transformations": transformations,
        "fieldConfig": {"defaults": {"unit": unit, "decimals": 2}, "overrides": []},
        "options": {"showHeader": True, "cellHeight": "sm"},
    }


def text(title: str, markdown: str) -> dict[str, Any]:
    return {
        "type": "text",
        "title": title,
        "options": {"mode": "markdown", "content": markdown},
    }


@dataclass
class Grid:
    """Lays panels out left to right, wrapping at 24 columns, so no two overlap."""

    panels: list[dict[str, Any]] = field(default_factory=list)
    x: int = 0
    y: int = 0
    line_height: int = 0

    def _wrap(self) -> None:
        self.y += self.line_height
        self.x = 0
        self.line_height = 0

    def row(self, title: str) -> None:
        """A section heading across the whole width."""
        if self.x:
            self._wrap()
        self._place({"type": "row", "title": title, "collapsed": False, "panels": []}, 24, 1)
        self._wrap()

    def add(self, panel: dict[str, Any], width: int, height: int) -> None:
        if self.x + width > GRID_WIDTH:
            self._wrap()
        self._place(panel, width, height)

    def _place(self, panel: dict[str, Any], width: int, height: int) -> None:
        panel = {"id": len(self.panels) + 1, **panel}
        panel["gridPos"] = {"h": height, "w": width, "x": self.x, "y": self.y}
        self.panels.append(panel)
        self.x += width
        self.line_height = max(self.line_height, height)
