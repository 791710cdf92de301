"""The Grafana dashboards: every expression parses with Prometheus's own promtool, reads only
series someone records, is filtered by the dashboard's variables, and the ConfigMaps are what
kube-prometheus-stack's Grafana sidecar loads."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers import observability
from renderer.layers.gpu import dcgm
from renderer.layers.observability import dashboards
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest
from renderer.pipeline import load_platform
from tests.conftest import REPO, require_tool

CHART_VALUES = REPO.parent / "shared" / "charts" / "kube-prometheus-stack-79.6.1" / "values.yaml"

GRAFANA_GLOBALS = {
    # Grafana's global variables (docs: "Global variables"), as a 24-hour dashboard sees them.
    "__rate_interval": "1m",
    "__interval": "30s",
    "__range": "1d",
    "__range_s": "86400",
    "__all": ".*",
}

KUBE_STATE_METRICS = {
    # kube-state-metrics docs/metrics: workload/pod-metrics.md, cluster/namespace-metrics.md,
    # cluster/node-metrics.md (the series and labels a dashboard may read).
    "kube_pod_owner": {"namespace", "pod"},
    "kube_pod_container_info": {"namespace", "pod"},
    "kube_pod_labels": {"namespace", "pod"},
    "kube_pod_status_phase": {"namespace", "pod"},
    "kube_pod_container_status_restarts_total": {"namespace", "pod"},
    "kube_pod_container_status_last_terminated_reason": {"namespace", "pod"},
    "kube_namespace_labels": {"namespace"},
    "kube_node_labels": {"node"},
    "kube_node_status_condition": {"node"},
}
KUBELET = {
    # the kubelet's volume stats (k8s.io/component-helpers: pkg/kubelet/metrics/collectors).
    "kubelet_volume_stats_used_bytes": {"namespace"},
    "kubelet_volume_stats_capacity_bytes": {"namespace"},
}
PROMETHEUS = {"ALERTS": {"team", "pool"}}
"""Prometheus's own series of firing alerts: every gpuplane alert is labelled team and pool."""
DCGM_LABELS = {"pool", "node", "namespace", "pod"}
"""What the ServiceMonitor in renderer/layers/gpu/dcgm.py puts on every DCGM series."""

RECORDED_LABELS: dict[str, set[str]] = {
    # The series contract (the common brief, decision 2, and renderer/model/metrics.py): which of
    # the dashboards' variable labels each recorded series carries. `cluster` is on all of them.
    "gpuplane:pod:": {"namespace", "pod", "team", "pool"},
    "gpuplane:pod:failed": {"namespace", "pod"},
    "gpuplane:team_pool:": {"team", "pool"},
    "gpuplane:pool:": {"pool"},
    "gpuplane:node:info": {"node", "pool"},
    "gpuplane:namespace:info": {"namespace", "team"},
    "gpuplane:cluster_queue:info": {"team"},
    "gpuplane:cluster_queue:": set(),
    "gpuplane:cluster_queue_pool:": {"pool"},
    # renderer/model/serving.py ENDPOINT_SERIES_LABELS (server too, which no variable filters)
    "gpuplane_endpoint:": {"team", "namespace", "endpoint", "pool"},
}
RECORDED_PREFIXES = ("gpuplane:", "gpuplane_endpoint:")


def recorded_labels(series: str) -> set[str]:
    """The longest matching entry of RECORDED_LABELS (an exact name wins over its prefix)."""
    if series in RECORDED_LABELS:
        return RECORDED_LABELS[series]
    prefixes = [k for k in RECORDED_LABELS if k.endswith(":") and series.startswith(k)]
    assert prefixes, f"{series}: no entry in RECORDED_LABELS"
    return RECORDED_LABELS[max(prefixes, key=len)]


# --- the rendered layer --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def views() -> list[ClusterView]:
    loaded = load_platform(REPO)
    found = [
        ClusterView.of(loaded.platform, c)
        for _, c in sorted(loaded.platform.clusters.items())
        if observability.enabled(ClusterView.of(loaded.platform, c))
    ]
    assert found, "no cluster of the example runs kube-prometheus-stack"
    return found


@pytest.fixture(scope="module")
def layer(views: list[ClusterView]) -> dict[str, list[Manifest]]:
    out: dict[str, list[Manifest]] = {}
    for view in views:
        out[view.cluster.name] = [o for o in observability.render(view) if isinstance(o, Manifest)]
    return out


def boards(layer: dict[str, list[Manifest]]) -> Iterator[tuple[str, Manifest, dict[str, Any]]]:
    for cluster, objects in layer.items():
        for obj in objects:
            if obj.kind == "ConfigMap" and "grafana_dashboard" in obj.body["metadata"]["labels"]:
                (text,) = obj.body["data"].values()
                yield cluster, obj, json.loads(text)


def query_panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in board["panels"] if p["type"] not in ("row", "text")]


def expressions(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target, and every variable's label_values selector."""
    found = [
        (f"{board['uid']} / {panel['title']} / {t['refId']}", t["expr"])
        for panel in query_panels(board)
        for t in panel["targets"]
    ]
    for variable in board["templating"]["list"]:
        assert variable["type"] == "query", variable["name"]
        query = variable["query"]["query"]
        match = re.fullmatch(r"label_values\((.+), *(\w+)\)", query)
        assert match, f"{variable['name']}: {query} is not label_values(selector, label)"
        found.append((f"{board['uid']} / ${variable['name']}", match.group(1)))
    return found


def substitute(expr: str, board: dict[str, Any], cluster: str) -> str:
    """Grafana's interpolation, with one value per variable; an undefined variable fails."""
    values = {
        "cluster": cluster,
        "team": "(vision|platform)",
        "pool": "(h100-train|a100-mig)",
        "namespace": "(vision-train)",
        "endpoint": "(chat|ranker)",
        **GRAFANA_GLOBALS,
    }
    defined = {v["name"] for v in board["templating"]["list"]} | set(GRAFANA_GLOBALS)

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in defined, f"${name} is not a variable of {board['uid']}"
        return values[name]

    return re.sub(r"\$(\w+)", one, expr)


def promtool_check(exprs: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    promtool = require_tool("promtool", "prometheus")
    rules = {
        "groups": [
            {
                "name": "dashboards",
                "rules": [
                    {"record": f"dashboard:expr_{i}", "expr": e} for i, e in enumerate(exprs)
                ],
            }
        ]
    }
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )


# --- PromQL --------------------------------------------------------------------------------------


def test_every_expression_parses_with_promtool(
    layer: dict[str, list[Manifest]], tmp_path: Path
) -> None:
    exprs = [
        substitute(expr, board, cluster)
        for cluster, _, board in boards(layer)
        for _, expr in expressions(board)
    ]
    assert len(exprs) > 60
    result = promtool_check(exprs, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(exprs)} rules found" in result.stdout


def test_the_promtool_check_fails_on_a_broken_expression(tmp_path: Path) -> None:
    good = 'sum by (pool) (rate(DCGM_FI_DEV_POWER_VIOLATION{pool=~"a"}[5m]))'
    assert promtool_check([good], tmp_path).returncode == 0
    for broken in (good[:-1], good.replace("rate(", "rate_of("), good.replace("[5m]", "[$x]")):
        result = promtool_check([good, broken], tmp_path)
        assert result.returncode != 0, broken


# --- series --------------------------------------------------------------------------------------

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|([A-Za-z_:][A-Za-z0-9_:]*)\s*\{')
METRIC_LIKE = re.compile(
    r"\b(gpuplane:[a-z_:0-9]+|DCGM_\w+|kube_\w+|kubelet_\w+|kueue_\w+|ALERTS)\b"
)


def selectors(expr: str) -> list[tuple[str, str]]:
    """Every `series{matchers}` of an expression (braces inside label values are no selector);
    every series name is written with matchers, so none is missed."""
    found = []
    position = 0
    while (match := TOKEN.search(expr, position)) is not None:
        position = match.end()
        if match.group(1) is None:
            continue
        end = position
        while expr[end] != "}":
            string = re.match(r'"(?:[^"\\]|\\.)*"', expr[end:])
            end += string.end() if string else 1
        found.append((match.group(1), expr[position:end]))
        position = end + 1
    named = METRIC_LIKE.findall(re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr))
    assert sorted(named) == sorted(n for n, _ in found if METRIC_LIKE.fullmatch(n)), (
        f"a series without matchers: {expr}"
    )
    return found


def test_selectors_finds_what_a_panel_reads() -> None:
    expr = (
        'sum(gpuplane:a:b{cluster="$cluster", pool=~"x{1}"}) * on (pool)'
        ' DCGM_FI_DEV_GPU_TEMP{x="y"}'
    )
    assert selectors(expr) == [
        ("gpuplane:a:b", 'cluster="$cluster", pool=~"x{1}"'),
        ("DCGM_FI_DEV_GPU_TEMP", 'x="y"'),
    ]
    with pytest.raises(AssertionError):
        selectors('sum(gpuplane:pool:info) * DCGM_FI_DEV_GPU_TEMP{x="y"}')


def recorded(layer: dict[str, list[Manifest]]) -> set[str]:
    names = {
        rule["record"]
        for objects in layer.values()
        for obj in objects
        if obj.kind == "PrometheusRule"
        for group in obj.body["spec"]["groups"]
        for rule in group["rules"]
        if "record" in rule
    }
    assert names, "the layer renders no recording rule"
    return names


def test_every_series_is_recorded_or_a_known_input(layer: dict[str, list[Manifest]]) -> None:
    known = (
        recorded(layer)
        | {m.field for m in dcgm.METRICS if m.type != "label"}
        | set(KUBE_STATE_METRICS)
        | set(KUBELET)
        | set(PROMETHEUS)
    )
    unknown = {
        f"{where}: {name}"
        for _, _, board in boards(layer)
        for where, expr in expressions(board)
        for name, _ in selectors(expr)
        if name not in known
    }
    assert not unknown, sorted(unknown)


KSM_KINDS = {
    "kube_namespace_labels": "namespaces",
    "kube_node_labels": "nodes",
    "kube_pod_labels": "pods",
}


def allowed_kube_labels(cluster: str) -> dict[str, set[str]]:
    """The `label_<key>` names kube-state-metrics exports per kind with the rendered chart values:
    `--metric-labels-allowlist kind=[key,...]`, each key sanitised as kube-state-metrics'
    SanitizeLabelName does (every character outside [a-zA-Z0-9_] becomes `_`)."""
    values = yaml.safe_load(
        (REPO / "rendered" / cluster / "values" / "kube-prometheus-stack.yaml").read_text()
    )
    allowed: dict[str, set[str]] = {}
    for entry in values["kube-state-metrics"]["metricLabelsAllowlist"]:
        match = re.fullmatch(r"(\w+)=\[(.*)\]", entry)
        assert match, entry
        allowed[match.group(1)] = {
            "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key) for key in match.group(2).split(",")
        }
    return allowed


def test_every_kubernetes_label_read_is_one_kube_state_metrics_exports(
    layer: dict[str, list[Manifest]],
) -> None:
    """A `label_<key>` a rule or panel reads off `kube_<kind>_labels` exists only if the chart's
    values allow that key for that kind; otherwise the column or join is silently empty."""
    problems = []
    for cluster, objects in layer.items():
        allowed = allowed_kube_labels(cluster)
        exprs = [e for c, _, board in boards(layer) if c == cluster for _, e in expressions(board)]
        exprs += [
            rule["expr"]
            for obj in objects
            if obj.kind == "PrometheusRule"
            for group in obj.body["spec"]["groups"]
            for rule in group["rules"]
        ]
        read = 0
        for expr in exprs:
            series = set(re.findall(r"\bkube_(?:namespace|node|pod)_labels\b", expr))
            for label in set(re.findall(r"\blabel_(?!replace\b|join\b|values\b)\w+", expr)):
                read += 1
                kinds = {KSM_KINDS[s] for s in series}
                if not any(label in allowed.get(kind, set()) for kind in kinds):
                    problems.append(f"{cluster}: {label} read from {sorted(series)}: {expr[:120]}")
        assert read, f"{cluster}: no kube-state-metrics label is read"
    assert not problems, "\n".join(problems)


def series_labels(name: str) -> set[str]:
    if name.startswith("DCGM_"):
        return DCGM_LABELS
    for table in (KUBE_STATE_METRICS, KUBELET, PROMETHEUS):
        if name in table:
            return table[name]
    return recorded_labels(name)


def test_every_selector_is_filtered_by_the_variables(layer: dict[str, list[Manifest]]) -> None:
    problems = []
    for _, _, board in boards(layer):
        defined = {v["name"] for v in board["templating"]["list"]}
        assert {"cluster", "team", "pool"} <= defined, board["uid"]
        for panel in query_panels(board):
            for target in panel["targets"]:
                for name, matchers in selectors(target["expr"]):
                    where = f"{board['uid']} / {panel['title']}: {name}"
                    if not re.search(r'(^|, )cluster=~?"\$cluster\|?"', matchers):
                        problems.append(f"{where} is not filtered by $cluster")
                    for label in series_labels(name) & (defined - {"cluster"}):
                        if not re.search(rf'(^|, ){label}=~"[^"]*\${label}\b', matchers):
                            problems.append(f"{where} has {label} but not ${label}")
    assert not problems, "\n".join(problems)


def test_raw_and_recorded_series_match_the_cluster_as_they_carry_it(
    layer: dict[str, list[Manifest]],
) -> None:
    """Recorded series carry the static rule label `cluster`; raw ones only behind a global view."""
    for _, _, board in boards(layer):
        for panel in query_panels(board):
            for name, matchers in (s for t in panel["targets"] for s in selectors(t["expr"])):
                exact = 'cluster="$cluster"' in matchers
                assert exact == name.startswith(RECORDED_PREFIXES), f"{name}{{{matchers}}}"


# --- layout and the ConfigMaps -------------------------------------------------------------------


def test_panels_do_not_overlap_and_fit_the_grid(layer: dict[str, list[Manifest]]) -> None:
    for _, _, board in boards(layer):
        cells: dict[tuple[int, int], str] = {}
        for panel in board["panels"]:
            pos = panel["gridPos"]
            assert pos["x"] >= 0 and pos["w"] >= 1 and pos["x"] + pos["w"] <= 24, panel["title"]
            for x in range(pos["x"], pos["x"] + pos["w"]):
                for y in range(pos["y"], pos["y"] + pos["h"]):
                    assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                    cells[(x, y)] = panel["title"]
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids))


def test_three_views_per_cluster_loaded_by_the_sidecar(layer: dict[str, list[Manifest]]) -> None:
    if CHART_VALUES.is_file():
        grafana = yaml.safe_load(CHART_VALUES.read_text())["grafana"]["sidecar"]
        sidecar = grafana["dashboards"]
        label = {sidecar["label"]: sidecar["labelValue"]}
        assert sidecar["searchNamespace"] == "ALL"  # Grafana's namespace is searched too
        assert sidecar["folderAnnotation"] is None  # so no folder annotation is read
        datasource = grafana["datasources"]["uid"]
        assert grafana["datasources"]["defaultDatasourceEnabled"] is True
    else:
        label, datasource = {"grafana_dashboard": "1"}, "prometheus"
    uids: set[str] = set()
    for cluster in layer:
        found = [(o, b) for c, o, b in boards(layer) if c == cluster]
        assert sorted(b["tags"][1] for _, b in found) == ["financial", "platform", "workload"]
        for obj, board in found:
            meta = obj.body["metadata"]
            assert meta["namespace"] == "monitoring"
            assert label.items() <= meta["labels"].items()
            (key,) = obj.body["data"]
            assert key.endswith(".json")
            assert len(board["uid"]) <= 40 and board["uid"] not in uids
            uids.add(board["uid"])
            assert board["schemaVersion"] >= 41  # Grafana 12
            assert cluster in board["title"]
            cluster_var = board["templating"]["list"][0]
            assert cluster_var["current"]["value"] == cluster
            for panel in query_panels(board):
                assert panel["type"] in ("timeseries", "stat", "table")
                assert panel["datasource"]["uid"] == datasource
                assert all(t["datasource"]["uid"] == datasource for t in panel["targets"])
            # kubectl's client-side apply keeps the object in an annotation of at most 256 KiB
            assert len(json.dumps(obj.body)) < 262144


def test_the_views_show_what_the_guide_asks(layer: dict[str, list[Manifest]]) -> None:
    def reads(board: dict[str, Any]) -> str:
        return "\n".join(e for _, e in expressions(board))

    by_view = {b["tags"][1]: reads(b) for _, _, b in boards(layer)}
    for needed in (
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "kubelet_volume_stats_used_bytes",
        "gpuplane:cluster_queue:pending_workloads",
        "gpuplane:cluster_queue:admission_wait_seconds:p90_30m",
        'alertstate="firing"',
    ):
        assert needed in by_view["platform"], needed
    for needed in (
        "kube_pod_owner",
        "kube_pod_container_info",
        "kube_pod_container_status_restarts_total",
        "kube_pod_container_status_last_terminated_reason",
        "gpuplane:pod:gpus_allocated",
        "gpuplane:pod:gpus_busy",
    ):
        assert needed in by_view["workload"], needed
    for needed in (
        "gpuplane:team_pool:gpus_allocated",
        "gpuplane:team_pool:gpus_busy",
        "gpuplane:team_pool:failed_gpu_hours",
        "gpuplane:pool:gpu_hour_cost",
    ):
        assert needed in by_view["financial"], needed


def test_uid_stays_short_stable_and_distinct_for_long_cluster_names() -> None:
    long = "a" * 30 + "-" + "b" * 32
    other = "a" * 30 + "-" + "c" * 32
    uids = {dashboards.uid(c, v) for c in (long, other) for v in ("platform", "financial")}
    assert len(uids) == 4 and all(len(u) <= 40 for u in uids)
    assert dashboards.uid(long, "platform") == dashboards.uid(long, "platform")
    assert dashboards.uid("prod-east", "platform") == "gpuplane-platform-prod-east"


def test_output_is_deterministic_and_names_nothing_from_free_text(
    views: list[ClusterView],
) -> None:
    view = views[0]
    first = [o.body for o in dashboards.render(view)]
    assert first == [o.body for o in dashboards.render(view)]
    # A cluster description (free text) never reaches the dashboards.
    hostile = replace(view, cluster=replace(view.cluster, description='"}) or vector(1) #\n<b>'))
    assert [o.body for o in dashboards.render(hostile)] == first
