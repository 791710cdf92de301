"""The observability layer's PrometheusRules under Prometheus's own `promtool` (2.42, Debian's
`prometheus` package): every rendered rule file passes `check rules`, and `test rules` runs the
rendered recording and alerting rules, unmodified, on synthetic series shaped like what
dcgm-exporter (with gpuplane's ServiceMonitor relabelling), kube-state-metrics (with gpuplane's
label allowlist), Kueue and Argo Workflows' controller expose. Each alert fires after its window
and not before, with the team, pool and runbook labels the on-call person needs, and the
recording rules feed `gpuplane cost` the GPU-hours worked out by hand here.

Expected figures come from the input files (asserted where they are read) and from the
upstream definitions: DCGM's violation counters count microseconds (dcgm_fields.h); Kueue's
admission wait is a histogram of seconds per ClusterQueue (pkg/metrics/metrics.go); Argo
prefixes a custom metric with `argo_workflows_` (docs/workflow-telemetry.md).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.commands.cost.query import export_query
from renderer.layers import observability
from renderer.model import metrics as m
from renderer.model.platform import Pool
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest
from renderer.pipeline import load_platform
from tests.conftest import REPO, Result, require_tool
from tests.cost.platform import RATES, cost_platform

CLUSTER = "prod-east"
RUNBOOKS = "https://github.com/example/gpuplane/blob/main/docs/runbooks.md"
"""The default runbook page: gpuplane.yaml's https repoURL at its targetRevision."""


# --- the rendered rules ------------------------------------------------------------------------


def _views() -> list[ClusterView]:
    loaded = load_platform(REPO)
    return [
        ClusterView.of(loaded.platform, c)
        for _, c in sorted(loaded.platform.clusters.items())
        if observability.enabled(ClusterView.of(loaded.platform, c))
    ]


@pytest.fixture(scope="module")
def views() -> dict[str, ClusterView]:
    found = {v.cluster.name: v for v in _views()}
    assert CLUSTER in found
    return found


@pytest.fixture(scope="module")
def rule_objects(views: dict[str, ClusterView]) -> dict[str, list[dict[str, Any]]]:
    """Each cluster's PrometheusRules, recording first (the layer's order)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for name, view in views.items():
        found[name] = [
            o.body
            for o in observability.render(view)
            if isinstance(o, Manifest) and o.kind == "PrometheusRule"
        ]
    return found


def write_rules(directory: Path, objects: list[dict[str, Any]]) -> list[Path]:
    """The `spec` of each PrometheusRule as a Prometheus rule file (what the operator writes
    into Prometheus's rule folder)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for body in objects:
        path = directory / f"{body['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(body["spec"], sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = require_tool("promtool", "prometheus")
    return subprocess.run([tool, *args], capture_output=True, text=True, check=False)


def test_every_rendered_rule_file_passes_promtool_check_rules(
    rule_objects: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    names = set()
    for cluster, objects in rule_objects.items():
        assert [o["metadata"]["name"] for o in objects] == ["gpuplane-recording", "gpuplane-alerts"]
        for path in write_rules(tmp_path / cluster, objects):
            done = promtool("check", "rules", str(path))
            assert done.returncode == 0, done.stdout + done.stderr
            assert "SUCCESS" in done.stdout
            names.add(path.name)
    assert names == {"gpuplane-recording.yaml", "gpuplane-alerts.yaml"}


def test_promtool_check_rules_refuses_a_broken_expression(
    rule_objects: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """The check above can fail: the same file with one join broken is refused."""
    alerts = json.loads(json.dumps(rule_objects[CLUSTER][1]))
    rule = alerts["spec"]["groups"][0]["rules"][0]
    rule["expr"] = rule["expr"].replace("group_left", "group_left group_left", 1)
    (path,) = write_rules(tmp_path, [alerts])
    done = promtool("check", "rules", str(path))
    assert done.returncode != 0


def test_every_alert_names_the_team_the_pool_and_a_runbook(
    rule_objects: dict[str, list[dict[str, Any]]],
) -> None:
    """Static labels where the expression cannot know them; the rest from the expression, where
    `team`, `pool` and `runbook` must come out of its joins (checked by promtool below)."""
    documented = set(re.findall(r"^## (\w+)$", (REPO / "docs" / "runbooks.md").read_text(), re.M))
    seen = set()
    for objects in rule_objects.values():
        for group in objects[1]["spec"]["groups"]:
            for rule in group["rules"]:
                seen.add(rule["alert"])
                assert rule["labels"]["severity"] in ("warning", "critical")
                assert f'{m.RUNBOOK}", "$1#{rule["alert"].lower()}"' in rule["expr"]
                assert m.POOL in rule["expr"]
                # a join that adds team, a per-pod series that carries it, or a static label
                assert (
                    m.TEAM in rule["expr"]
                    or m.POD_BUSY_RATIO in rule["expr"]
                    or m.CLUSTER_QUEUE_ADMISSION_WAIT_P90 in rule["expr"]
                    or rule["labels"].get(m.TEAM) == m.PLATFORM_TEAM
                ), rule["alert"]
                assert {"summary", "description"} <= set(rule["annotations"])
    assert seen == documented


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, characters other than letters,
    digits, spaces, `-` and `_` dropped, spaces turned into `-` (github/cmark-gfm's
    html.c-compatible slugger, as github-slugger implements it)."""
    anchors = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", markdown, re.M):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return anchors


def test_every_alert_links_its_runbook_section_as_runbook_url(
    rule_objects: dict[str, list[dict[str, Any]]],
) -> None:
    """`runbook_url` (the annotation kube-prometheus's alerts carry and Alertmanager's PagerDuty
    and Opsgenie templates link to) prints the alert's `runbook` label: the page from gpuplane.yaml's
    repoURL at its targetRevision, or the pool's, and an anchor that exists in
    docs/runbooks.md. promtool's unit tests below check the expanded value."""
    anchors = github_anchors((REPO / "docs" / "runbooks.md").read_text())
    for objects in rule_objects.values():
        for group in objects[1]["spec"]["groups"]:
            for rule in group["rules"]:
                assert rule["annotations"]["runbook_url"] == "{{ $labels.runbook }}"
                anchor = re.search(r'"\$1#([^"]+)", "runbook"', rule["expr"])
                assert anchor is not None and anchor.group(1) in anchors, rule["alert"]


def test_the_anchor_check_knows_githubs_slugs() -> None:
    assert github_anchors("## GPUXidError\n### Check first: the log\n") == {
        "gpuxiderror",
        "check-first-the-log",
    }


# --- promtool test rules -----------------------------------------------------------------------


def selector(name: str, labels: Mapping[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def ksm_labels(kube: Mapping[str, str]) -> dict[str, str]:
    """kube-state-metrics' names of allowlisted object labels: `label_` and the key with every
    character outside [a-zA-Z0-9_] turned into `_` (its sanitizing of label names)."""
    return {"label_" + re.sub(r"[^a-zA-Z0-9_]", "_", k): v for k, v in kube.items()}


def rendered_labels(path: str) -> dict[str, str]:
    body = yaml.safe_load((REPO / "rendered" / CLUSTER / path).read_text())
    labels = body["metadata"]["labels"] if "metadata" in body else body["labels"]
    return {k: v for k, v in labels.items() if k.startswith("gpuplane.dev/")}


KSM = {"job": "kube-state-metrics", "instance": "10.0.0.9:8080"}


def namespace_series(namespace: str) -> str:
    """`kube_namespace_labels` of a rendered Namespace, with the labels the chart's allowlist
    keeps (renderer/layers/gitops KUBE_STATE_LABELS: team, cost-center, purpose)."""
    labels = rendered_labels(f"tenancy/{namespace}/namespace-{namespace}.yaml")
    kept = {k: labels[k] for k in ("gpuplane.dev/team", "gpuplane.dev/cost-center")}
    kept["gpuplane.dev/purpose"] = labels["gpuplane.dev/purpose"]
    return selector("kube_namespace_labels", {**KSM, "namespace": namespace, **ksm_labels(kept)})


def node_series(node: str, pool: str) -> str:
    labels = rendered_labels(f"nodes/{pool}.yaml")
    kept = {k: labels[k] for k in ("gpuplane.dev/pool", "gpuplane.dev/accelerator")}
    return selector("kube_node_labels", {**KSM, "node": node, **ksm_labels(kept)})


def gpu(pool: str, node: str, index: int, pod: str | None = None, **extra: str) -> dict[str, str]:
    """The labels of a dcgm-exporter series after gpuplane's ServiceMonitor: the scrape's job
    and instance, `node` and `pool` from the target, `gpu`, `UUID`, `modelName`, `Hostname` of
    the exporter's own, and `namespace`, `pod`, `container` where a pod holds the GPU."""
    labels = {
        "job": "nvidia-dcgm-exporter",
        "instance": f"{node}:9400",
        "node": node,
        "pool": pool,
        "gpu": str(index),
        "UUID": f"GPU-{node}-{index}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": node,
        **extra,
    }
    if pod is not None:
        namespace, name = pod.split("/")
        labels.update(namespace=namespace, pod=name, container="main")
    return labels


def runbook(alert: str, page: str = RUNBOOKS) -> str:
    return f"{page}#{alert.lower()}"


def unit_test(
    tmp_path: Path,
    rules: list[Path],
    order: list[str],
    series: list[tuple[str, str]],
    alerts: list[dict[str, Any]] = (),  # type: ignore[assignment]
    exprs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    interval: str = "1m",
) -> None:
    """`promtool test rules` on the rule files, evaluated every `interval` in `order`, with the
    series sampled every `interval`; a mismatch fails with promtool's own report."""
    body = {
        "rule_files": [str(p) for p in rules],
        "evaluation_interval": interval,
        "group_eval_order": order,
        "tests": [
            {
                "interval": interval,
                "input_series": [{"series": s, "values": v} for s, v in series],
                "alert_rule_test": list(alerts),
                "promql_expr_test": list(exprs),
            }
        ],
    }
    path = tmp_path / "unit.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    done = promtool("test", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def fires(alert: str, at: str, *expected: tuple[dict[str, str], dict[str, str]]) -> dict[str, Any]:
    """`alert` fires at `at` with exactly these (labels, annotations), and with the
    `runbook_url` annotation Alertmanager integrations link to: the runbook each test expects
    in its labels (the page, `#`, the alert's name in lower case)."""
    return {
        "eval_time": at,
        "alertname": alert,
        "exp_alerts": [
            {"exp_labels": lab, "exp_annotations": {**ann, "runbook_url": lab["runbook"]}}
            for lab, ann in expected
        ],
    }


def silent(alert: str, at: str) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": []}


@pytest.fixture(scope="module")
def prod(
    rule_objects: dict[str, list[dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[Path], list[str]]:
    """prod-east's rule files and their groups in the order they are written (recording, then
    alerts), which `group_eval_order` keeps: promtool would otherwise evaluate groups in map
    order, and one alert would read a recorded series of the step before."""
    objects = rule_objects[CLUSTER]
    paths = write_rules(tmp_path_factory.mktemp("prod-rules"), objects)
    order = [g["name"] for body in objects for g in body["spec"]["groups"]]
    return paths, order


@pytest.fixture(scope="module")
def pools(views: dict[str, ClusterView]) -> dict[str, Pool]:
    return {p.name: p for p in views[CLUSTER].pools}


def base(cluster: str = CLUSTER) -> dict[str, str]:
    return {"cluster": cluster}


# --- GPUs allocated but idle -------------------------------------------------------------------

VISION = {"team": "vision", "cost_center": "CC-1042"}
LLM = {"team": "llm", "cost_center": "CC-1050"}


def test_an_idle_gpu_pages_after_its_pools_window_and_not_before(
    prod: tuple[list[Path], list[str]], pools: dict[str, Pool], tmp_path: Path
) -> None:
    """h100-train waits 20 minutes (pools/h100-train.yaml), l40s-infer the default 30; both at
    the default 5 % busy. A busy GPU and one idle for only 15 minutes never page."""
    assert pools["h100-train"].alerts["idleMinutes"] == 20
    assert pools["l40s-infer"].alerts["idleMinutes"] == m.ALERT_DEFAULTS["idleMinutes"] == 30
    for name in ("h100-train", "l40s-infer"):
        assert pools[name].alerts["idleBusyPercent"] == 5
    assert pools["l40s-infer"].sharing == "time-slicing"
    idle_h100 = gpu("h100-train", "gpu-h100-0", 0, "vision-train/trainer-0")
    busy_h100 = gpu("h100-train", "gpu-h100-0", 1, "vision-train/trainer-1")
    briefly = gpu("h100-train", "gpu-h100-1", 0, "vision-train/eval-0")
    idle_l40s = gpu("l40s-infer", "gpu-l40s-0", 0, "llm-serve/server-0")
    series = [
        (namespace_series("vision-train"), "1x60"),
        (namespace_series("llm-serve"), "1x60"),
        *((selector("DCGM_FI_DEV_FB_USED", g), "30000x60") for g in (idle_h100, busy_h100)),
        (selector("DCGM_FI_DEV_FB_USED", briefly), "30000x60"),
        (selector("DCGM_FI_DEV_FB_USED", idle_l40s), "20000x60"),
        # 2 % busy: below the 5 % threshold
        (selector("DCGM_FI_PROF_GR_ENGINE_ACTIVE", idle_h100), "0.02x60"),
        (selector("DCGM_FI_PROF_GR_ENGINE_ACTIVE", busy_h100), "0.7x60"),
        (selector("DCGM_FI_PROF_GR_ENGINE_ACTIVE", briefly), "0.01x14 0.9x45"),
        # an L40S without the profiling field: the exporter's GPU_UTIL percent instead
        (selector("DCGM_FI_DEV_GPU_UTIL", idle_l40s), "1x60"),
    ]

    def idle(pod: str, pool: str, team: dict[str, str], minutes: int, busy: str) -> Any:
        namespace, name = pod.split("/")
        labels = {
            **base(),
            "namespace": namespace,
            "pod": name,
            "pool": pool,
            **team,
            "runbook": runbook("GPUAllocatedIdle"),
            "severity": "warning",
            "idle_minutes": str(minutes),
        }
        annotations = {
            "summary": f"Pod {pod} holds idle GPUs of pool {pool}",
            "description": f"The GPUs that pod {pod} of team {team['team']} holds on pool {pool} "
            f"have been busy {busy} (below the pool's alerts.idleBusyPercent) for {minutes} "
            "minutes (alerts.idleMinutes): they are paid for and do no work.",
        }
        return labels, annotations

    h100 = idle("vision-train/trainer-0", "h100-train", VISION, 20, "2%")
    l40s = idle("llm-serve/server-0", "l40s-infer", LLM, 30, "1%")
    unit_test(
        tmp_path,
        *prod,
        series,
        alerts=[
            silent("GPUAllocatedIdle", "19m"),
            fires("GPUAllocatedIdle", "20m", h100),
            fires("GPUAllocatedIdle", "29m", h100),
            fires("GPUAllocatedIdle", "30m", h100, l40s),
        ],
    )


# --- GPU health --------------------------------------------------------------------------------


def on_gpu(labels: Mapping[str, str], team: str, alert: str, severity: str) -> dict[str, str]:
    """An alert's labels on a DCGM series: the series' own (no metric name), the team, the
    runbook, the severity and the cluster."""
    return {
        **labels,
        **base(),
        "team": team,
        "runbook": runbook(alert),
        "severity": severity,
    }


def test_gpu_errors_throttling_and_heat_page_the_team_holding_the_gpu(
    prod: tuple[list[Path], list[str]], pools: dict[str, Pool], tmp_path: Path
) -> None:
    """XID and row-remap failures (gauges: the last XID, 1 on a failure) page at once; double-bit
    ECC and uncorrectable remapped rows (counters) on an increase in 10 minutes; throttling when
    a violation counter (microseconds throttled) grows by more than 10 % of the time for 10
    minutes; temperature above the pool's limit (default 85 C) for 5 minutes. A GPU no pod holds
    pages the platform team; one whose node has no gpuplane pool keeps the default limit and
    runbook."""
    assert pools["h100-train"].alerts["maxTemperatureCelsius"] == 85
    held = [gpu("h100-train", "gpu-h100-0", i, f"vision-train/trainer-{i}") for i in range(4)]
    free = [gpu("h100-train", "gpu-h100-2", i) for i in range(2)]
    stray = {k: v for k, v in gpu("h100-train", "gpu-x", 0).items() if k != "pool"}
    series = [
        (namespace_series("vision-train"), "1x30"),
        (selector("DCGM_FI_DEV_XID_ERRORS", free[0]), "0x2 79x30"),
        (selector("DCGM_FI_DEV_ROW_REMAP_FAILURE", free[1]), "0x2 1x30"),
        (selector("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", held[0]), "0x4 2x30"),
        (selector("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", held[1]), "0x4 1x30"),
        # 30 s throttled per minute: half the time; power 3 s per minute: 5 %, under 10 %
        (selector("DCGM_FI_DEV_THERMAL_VIOLATION", held[2]), "0+30000000x30"),
        (selector("DCGM_FI_DEV_POWER_VIOLATION", held[2]), "0+3000000x30"),
        (selector("DCGM_FI_DEV_GPU_TEMP", held[3]), "70x1 90x30"),
        (selector("DCGM_FI_DEV_GPU_TEMP", held[0]), "84x30"),
        (selector("DCGM_FI_DEV_GPU_TEMP", stray), "70x1 88x30"),
    ]
    xid = (
        on_gpu(free[0], "platform", "GPUXidError", "warning"),
        {
            "summary": "XID 79 reported on GPU 0 of node gpu-h100-2 (pool h100-train, team platform)",
            "description": "The driver reported XID error 79 on GPU 0 of node gpu-h100-2 "
            "(pool h100-train), held by no pod.",
        },
    )
    remap_failure = (
        on_gpu(free[1], "platform", "GPURowRemapFailure", "critical"),
        {
            "summary": "Row remapping failure reported on GPU 1 of node gpu-h100-2 "
            "(pool h100-train, team platform)",
            "description": "GPU 1 of node gpu-h100-2 (pool h100-train) could not remap a failing "
            "memory row: it must be taken out of service.",
        },
    )
    dbe = (
        on_gpu(held[0], "vision", "GPUDoubleBitECC", "critical"),
        {
            "summary": "Uncorrectable (double-bit) ECC errors reported on GPU 0 of node "
            "gpu-h100-0 (pool h100-train, team vision)",
            "description": "2 double-bit ECC errors in 10m on GPU 0 of node gpu-h100-0: the data "
            "the workload of team vision computed there may be wrong.",
        },
    )
    rows = (
        on_gpu(held[1], "vision", "GPURemappedRowsUncorrectable", "warning"),
        {
            "summary": "Rows remapped for uncorrectable errors reported on GPU 1 of node "
            "gpu-h100-0 (pool h100-train, team vision)",
            "description": "1 memory rows remapped for uncorrectable errors in 10m on GPU 1 of "
            "node gpu-h100-0: the remap takes effect only after a GPU reset.",
        },
    )
    thermal = (
        on_gpu(held[2], "vision", "GPUThermalThrottling", "warning"),
        {
            "summary": "Thermal throttling seen on GPU 2 of node gpu-h100-0 "
            "(pool h100-train, team vision)",
            "description": "GPU 2 of node gpu-h100-0 has been slowed by its thermal limit 50% of "
            "the time for 10m; team vision gets less than it pays for.",
        },
    )
    hot = (
        on_gpu(held[3], "vision", "GPUTemperatureHigh", "warning"),
        {
            "summary": "GPU at 90 C seen on GPU 3 of node gpu-h100-0 (pool h100-train, team vision)",
            "description": "GPU 3 of node gpu-h100-0 has been at 90 C, above its pool's "
            "alerts.maxTemperatureCelsius, for 5m.",
        },
    )
    stray_hot = (
        on_gpu(stray, "platform", "GPUTemperatureHigh", "warning"),
        {
            "summary": "GPU at 88 C seen on GPU 0 of node gpu-x (team platform)",
            "description": "GPU 0 of node gpu-x has been at 88 C, above its pool's "
            "alerts.maxTemperatureCelsius, for 5m.",
        },
    )
    unit_test(
        tmp_path,
        *prod,
        series,
        alerts=[
            # `0x2 79x30`: 0 at 0, 1 and 2 minutes, 79 from 3 minutes on
            silent("GPUXidError", "2m"),
            fires("GPUXidError", "3m", xid),
            fires("GPURowRemapFailure", "3m", remap_failure),
            silent("GPUDoubleBitECC", "4m"),
            fires("GPUDoubleBitECC", "6m", dbe),
            fires("GPURemappedRowsUncorrectable", "6m", rows),
            # above 10 % from 2m (the first 5-minute rate over two samples is exactly 10 %)
            silent("GPUThermalThrottling", "11m"),
            fires("GPUThermalThrottling", "12m", thermal),
            silent("GPUPowerThrottling", "20m"),
            # 90 C from 2 minutes on
            silent("GPUTemperatureHigh", "6m"),
            fires("GPUTemperatureHigh", "7m", hot, stray_hot),
        ],
    )


# --- nodes, failed runs, queues, acceptance ----------------------------------------------------


def test_a_node_lost_under_gpu_pods_pages_their_team_after_5_minutes(
    prod: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    """kube-state-metrics: the node's Ready condition turns false at 3 minutes; a pod of
    vision-train asking for 8 GPUs runs on it (and a CPU-only pod, which does not count); a
    Ready node with GPU pods stays quiet."""
    lost, fine = "gpu-h100-0", "gpu-h100-1"

    def ready(node: str, status: str, values: str) -> tuple[str, str]:
        labels = {**KSM, "node": node, "condition": "Ready", "status": status}
        return selector("kube_node_status_condition", labels), values

    def pod(name: str, node: str, gpus: int) -> list[tuple[str, str]]:
        at = {**KSM, "namespace": "vision-train", "pod": name}
        found = [
            (selector("kube_pod_info", {**at, "node": node, "created_by_kind": "Job"}), "1x20"),
            *(
                (selector("kube_pod_status_phase", {**at, "phase": phase}), f"{value}x20")
                for phase, value in (("Pending", 0), ("Running", 1), ("Failed", 0))
            ),
            (
                selector(
                    "kube_pod_container_resource_requests",
                    {**at, "container": "main", "node": node, "resource": "cpu", "unit": "core"},
                ),
                "4x20",
            ),
        ]
        if gpus:
            requests = {**at, "container": "main", "node": node, "resource": "nvidia_com_gpu"}
            found.append(
                (
                    selector(
                        "kube_pod_container_resource_requests", {**requests, "unit": "integer"}
                    ),
                    f"{gpus}x20",
                )
            )
        return found

    series = [
        (namespace_series("vision-train"), "1x20"),
        (node_series(lost, "h100-train"), "1x20"),
        (node_series(fine, "h100-train"), "1x20"),
        ready(lost, "true", "1x2 0x17"),
        ready(lost, "false", "0x2 1x17"),
        ready(lost, "unknown", "0x20"),
        ready(fine, "true", "1x20"),
        ready(fine, "false", "0x20"),
        *pod("trainer-0", lost, 8),
        *pod("sidecar-0", lost, 0),
        *pod("trainer-1", fine, 8),
    ]
    expected = (
        {
            **base(),
            "node": lost,
            "namespace": "vision-train",
            "pool": "h100-train",
            "team": "vision",
            "runbook": runbook("GPUNodeLostDuringRun"),
            "severity": "critical",
        },
        {
            "summary": f"Node {lost} of pool h100-train lost under running GPU pods",
            "description": f"Node {lost} (pool h100-train) has not been Ready for 5m while pods of "
            "namespace vision-train (team vision) holding 8 GPUs are bound to it.",
        },
    )
    unit_test(
        tmp_path,
        *prod,
        series,
        alerts=[
            silent("GPUNodeLostDuringRun", "7m"),
            fires("GPUNodeLostDuringRun", "8m", expected),
        ],
    )


@pytest.mark.slow
def test_a_failed_run_that_burned_more_than_the_pools_gpu_hours_pages_its_team(
    prod: tuple[list[Path], list[str]], pools: dict[str, Pool], tmp_path: Path
) -> None:
    """Job run-7's two pods hold 4 H100s each from 0 to 150 minutes and fail at 151: the
    5-minute samples at 0, 5, ..., 150 minutes are 31 per GPU, so 2 x 4 x 31 x 5/60 = 20.67
    GPU-hours, over h100-train's 16 (pools/h100-train.yaml). A bare pod that failed after
    holding one GPU as long (2.58 GPU-hours) stays under it."""
    assert pools["h100-train"].alerts["failedRunGpuHours"] == 16
    series: list[tuple[str, str]] = [(namespace_series("vision-train"), "1x160")]
    pods = {"run-7-0": ("Job", "run-7", 4), "run-7-1": ("Job", "run-7", 4), "adhoc": None}
    for index, (name, owner) in enumerate(pods.items()):
        kind, owned_by, gpus = owner if owner else ("<none>", "<none>", 1)
        at = {**KSM, "namespace": "vision-train", "pod": name}
        series += [
            (selector("kube_pod_status_phase", {**at, "phase": "Failed"}), "0x150 1x10"),
            (selector("kube_pod_status_phase", {**at, "phase": "Running"}), "1x150 0x10"),
            (
                selector(
                    "kube_pod_owner",
                    {
                        **at,
                        "owner_kind": kind,
                        "owner_name": owned_by,
                        "owner_is_controller": "true",
                    },
                ),
                "1x160",
            ),
        ]
        for i in range(gpus):
            held = gpu("h100-train", f"gpu-h100-{index}", i, f"vision-train/{name}")
            series.append((selector("DCGM_FI_DEV_FB_USED", held), "30000x150 stale"))
    burned = 2 * 4 * 31 * m.EXPORT_STEP_SECONDS / 3600
    assert f"{burned:.1f}" == "20.7"
    expected = (
        {
            **base(),
            "namespace": "vision-train",
            "run": "run-7",
            **VISION,
            "pool": "h100-train",
            "runbook": runbook("FailedRunBurnedGPUHours"),
            "severity": "warning",
        },
        {
            "summary": "Run vision-train/run-7 failed after 20.7 GPU-hours",
            "description": "The pods of vision-train/run-7 (team vision, pool h100-train) that "
            "ended in phase Failed held 20.7 GPU-hours in the last 7 days, more than the pool's "
            "alerts.failedRunGpuHours.",
        },
    )
    unit_test(
        tmp_path,
        *prod,
        series,
        alerts=[
            silent("FailedRunBurnedGPUHours", "150m"),
            fires("FailedRunBurnedGPUHours", "151m", expected),
        ],
        exprs=[
            {
                "expr": f'{m.TEAM_POOL_FAILED_GPU_HOURS}{{team="vision"}}',
                "eval_time": "151m",
                "exp_samples": [
                    {
                        "labels": selector(
                            m.TEAM_POOL_FAILED_GPU_HOURS,
                            {**base(), **VISION, "pool": "h100-train"},
                        ),
                        "value": burned + 1 * 31 * m.EXPORT_STEP_SECONDS / 3600,
                    }
                ],
            }
        ],
    )


def test_queue_wait_over_a_clusterqueues_budget_pages_after_10_minutes(
    prod: tuple[list[Path], list[str]], pools: dict[str, Pool], tmp_path: Path
) -> None:
    """Kueue's admission-wait histogram: one workload a minute admitted after 60 to 600 s on
    vision-training and vision-inference, so the 30-minute p90 is 60 + 0.9 x 540 = 546 s
    (histogram_quantile interpolates within the bucket). queues/prod.yaml sets no
    waitBudgetMinutes, so each ClusterQueue's budget is the smallest maxQueueWaitMinutes of its
    pools: vision-training (a100-mig 10, h100-train 30) 600 s, over 546; vision-inference
    (l40s-infer 5) 300 s, under it. A follower replica's gauges, which would put training's p90
    over its budget, are left out."""
    assert pools["a100-mig"].acceptance["maxQueueWaitMinutes"] == 10
    assert pools["h100-train"].acceptance["maxQueueWaitMinutes"] == 30
    assert pools["l40s-infer"].acceptance["maxQueueWaitMinutes"] == 5
    kueue = {"job": "kueue-controller-manager-metrics", "instance": "10.0.1.4:8443"}
    series = []
    for queue in ("vision-training", "vision-inference"):
        for le in ("60", "600", "1800", "3600", "+Inf"):
            at = {**kueue, "cluster_queue": queue, "le": le}
            leader = "0x40" if le == "60" else "0x4 1+1x35"
            series.append(
                (
                    selector(
                        "kueue_admission_wait_time_seconds_bucket", {**at, "replica_role": "leader"}
                    ),
                    leader,
                )
            )
            follower = "0x4 9+9x35" if le in ("1800", "3600", "+Inf") else "0x40"
            series.append(
                (
                    selector(
                        "kueue_admission_wait_time_seconds_bucket",
                        {**at, "replica_role": "follower"},
                    ),
                    follower,
                )
            )
    expected = (
        {
            **base(),
            "cluster_queue": "vision-inference",
            **VISION,
            "purpose": "inference",
            "queue": "prod",
            "pools": "l40s-infer",
            "pool": "l40s-infer",
            "runbook": runbook("QueueWaitOverBudget"),
            "severity": "warning",
        },
        {
            "summary": "ClusterQueue vision-inference waits 9m 6s for admission",
            "description": "Workloads of team vision admitted through ClusterQueue "
            "vision-inference (pools l40s-infer) waited 9m 6s (90th percentile over 30 minutes), "
            "over its wait budget: the queue's waitBudgetMinutes, else the smallest "
            "acceptance.maxQueueWaitMinutes of its pools.",
        },
    )
    unit_test(
        tmp_path,
        *prod,
        series,
        alerts=[
            silent("QueueWaitOverBudget", "14m"),
            fires("QueueWaitOverBudget", "15m", expected),
            fires("QueueWaitOverBudget", "30m", expected),
        ],
    )


def test_slow_checkpoints_of_the_suites_page_the_platform_team(
    prod: tuple[list[Path], list[str]], pools: dict[str, Pool], tmp_path: Path
) -> None:
    """The suites' Argo custom metrics (`argo_workflows_` + the gauge's name, labelled cluster,
    pool and suite) against the pool's acceptance thresholds: h100-train wants 4 GB/s and a
    restore within 300 s; l40s-infer sets neither, so its slow figures page nobody."""
    assert pools["h100-train"].acceptance["checkpointWriteGBps"] == 4
    assert pools["h100-train"].acceptance["restoreSeconds"] == 300
    assert "checkpointWriteGBps" not in pools["l40s-infer"].acceptance
    argo = {"job": "argo-workflows-workflow-controller", "instance": "10.0.2.8:9090"}

    def figure(metric: str, pool: str) -> str:
        labels = {**argo, "cluster": CLUSTER, "pool": pool, "suite": "acceptance"}
        return selector(m.ARGO_METRIC_PREFIX + metric, labels)

    series = [
        (figure(m.CHECKPOINT_WRITE_GBPS_METRIC, "h100-train"), "2.5x10"),
        (figure(m.CHECKPOINT_RESTORE_SECONDS_METRIC, "h100-train"), "420x10"),
        (figure(m.CHECKPOINT_WRITE_GBPS_METRIC, "l40s-infer"), "0.5x10"),
        (figure(m.CHECKPOINT_RESTORE_SECONDS_METRIC, "l40s-infer"), "900x10"),
    ]

    def labels(alert: str) -> dict[str, str]:
        return {
            **argo,
            **base(),
            "pool": "h100-train",
            "suite": "acceptance",
            "team": "platform",
            "runbook": runbook(alert),
            "severity": "warning",
        }

    write = (
        labels("CheckpointSlowerThanAcceptance"),
        {
            "summary": "Checkpoints on pool h100-train write at 2.5 GB/s",
            "description": "The last acceptance run on pool h100-train wrote its checkpoint at "
            "2.5 GB/s, below the pool's acceptance.checkpointWriteGBps.",
        },
    )
    restore = (
        labels("RestoreSlowerThanAcceptance"),
        {
            "summary": "Checkpoint restore on pool h100-train took 420 s",
            "description": "The last acceptance run on pool h100-train restored its checkpoint in "
            "420 s, more than the pool's acceptance.restoreSeconds.",
        },
    )
    unit_test(
        tmp_path,
        *prod,
        series,
        alerts=[
            fires("CheckpointSlowerThanAcceptance", "1m", write),
            fires("RestoreSlowerThanAcceptance", "1m", restore),
        ],
    )


# --- from raw series to gpuplane cost ----------------------------------------------------------

Run = Callable[..., Result]


def hours(samples: list[float]) -> float:
    """GPU-hours of one series' 5-minute samples, summed in order as sum_over_time does, then
    `* 300 / 3600` as the export query writes it."""
    total = 0.0
    for value in samples:
        total += value
    return total * m.EXPORT_STEP_SECONDS / 3600


def test_gpuplane_cost_reads_what_the_recording_rules_make_of_raw_series(
    prod: tuple[list[Path], list[str]],
    pools: dict[str, Pool],
    gpuplane: Run,
    tmp_path: Path,
) -> None:
    """dcgm-exporter and kube-state-metrics series, sampled every 5 minutes from 5 to 60
    minutes, through the rendered recording rules and the export query (`gpuplane cost
    --query 1h`) at 60 minutes: promtool confirms the export is exactly the GPU-hours worked out
    here, and `gpuplane cost` prices that answer.

    - vision-train/a: 8 whole H100s of h100-train, 75 % busy, 12 samples: 8 allocated, 6 used;
    - vision-train/b: 4 H100s, 5 to 30 minutes (6 samples), Failed from 35: 2 failed;
    - vision-notebooks/n: one 3g.40gb MIG instance of a100-mig (3 of the A100's 7 compute slices),
      half busy;
    - llm-serve/c: one time-sliced replica of an L40S (4 replicas: a quarter), GPU_UTIL 50 %."""
    assert pools["l40s-infer"].sharing == "time-slicing" and pools["l40s-infer"].replicas == 4
    assert pools["a100-mig"].sharing == "mig"
    mig = 3 / 7
    steps = 12
    a = [gpu("h100-train", "gpu-h100-0", i, "vision-train/a") for i in range(8)]
    b = [gpu("h100-train", "gpu-h100-1", i, "vision-train/b") for i in range(4)]
    n = gpu(
        "a100-mig", "gpu-a100-0", 0, "vision-notebooks/n", GPU_I_PROFILE="3g.40gb", GPU_I_ID="1"
    )
    c = gpu("l40s-infer", "gpu-l40s-0", 0, "llm-serve/c")
    phase = {**KSM, "phase": "Failed"}
    series = [
        *(
            (namespace_series(ns), "1x12")
            for ns in ("vision-train", "vision-notebooks", "llm-serve")
        ),
        *((selector("DCGM_FI_DEV_FB_USED", g), "_ 30000x11") for g in a),
        *((selector("DCGM_FI_PROF_GR_ENGINE_ACTIVE", g), "_ 0.75x11") for g in a),
        *((selector("DCGM_FI_DEV_FB_USED", g), "_ 30000x5 stale") for g in b),
        *((selector("DCGM_FI_PROF_GR_ENGINE_ACTIVE", g), "_ 0.5x5 stale") for g in b),
        (selector("DCGM_FI_DEV_FB_USED", n), "_ 20000x11"),
        (selector("DCGM_FI_PROF_GR_ENGINE_ACTIVE", n), "_ 0.5x11"),
        (selector("DCGM_FI_DEV_FB_USED", c), "_ 10000x11"),
        (selector("DCGM_FI_DEV_GPU_UTIL", c), "_ 50x11"),
        *(
            (selector("kube_pod_status_phase", {**phase, "namespace": ns, "pod": pod}), values)
            for ns, pod, values in (
                ("vision-train", "a", "0x12"),
                ("vision-train", "b", "0x6 1x5"),
                ("vision-notebooks", "n", "0x12"),
                ("llm-serve", "c", "0x12"),
            )
        ),
    ]
    notebooks = {"team": "vision", "cost_center": "CC-1042", "pool": "a100-mig"}
    expected = {
        ("vision", "CC-1042", "h100-train"): {
            "allocated_gpu_hours": hours([8.0] * steps + [4.0] * 6),
            "used_gpu_hours": hours([6.0] * steps),
            "failed_gpu_hours": hours([4.0] * 6),
        },
        ("vision", "CC-1042", "a100-mig"): {
            "allocated_gpu_hours": hours([mig] * steps),
            "used_gpu_hours": hours([0.5 * mig] * steps),
        },
        ("llm", "CC-1050", "l40s-infer"): {
            "allocated_gpu_hours": hours([0.25] * steps),
            "used_gpu_hours": hours([0.125] * steps),
        },
    }
    assert expected[("vision", "CC-1042", "h100-train")]["allocated_gpu_hours"] == 10
    samples = [
        ({**base(), "team": t, "cost_center": cc, "pool": pool, "term": term}, value)
        for (t, cc, pool), terms in expected.items()
        for term, value in terms.items()
    ]
    unit_test(
        tmp_path,
        *prod,
        series,
        exprs=[
            {
                "expr": export_query("1h"),
                "eval_time": "60m",
                "exp_samples": [{"labels": selector("", s), "value": v} for s, v in samples],
            },
            {
                # the financial view's per-pool allocation: what the pods hold now
                "expr": m.POOL_GPUS_ALLOCATED,
                "eval_time": "60m",
                "exp_samples": [
                    {"labels": selector(m.POOL_GPUS_ALLOCATED, {**base(), "pool": p}), "value": v}
                    for p, v in (("h100-train", 8.0), ("a100-mig", mig), ("l40s-infer", 0.25))
                ],
            },
            {
                "expr": f'{m.POD_GPUS_BUSY}{{pod="n"}}',
                "eval_time": "60m",
                "exp_samples": [
                    {
                        "labels": selector(
                            m.POD_GPUS_BUSY,
                            {**base(), "namespace": "vision-notebooks", "pod": "n", **notebooks},
                        ),
                        "value": 0.5 * mig,
                    }
                ],
            },
        ],
        interval="5m",
    )

    # the Prometheus API's answer to the export query: the samples promtool just confirmed
    api = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": s, "value": [3600, repr(v)]} for s, v in samples],
        },
    }
    usage = tmp_path / "usage.json"
    usage.write_text(json.dumps(api), encoding="utf-8")
    terms = tmp_path / "terms.csv"
    terms.write_text("team,accepted_units\nvision,2\nllm,500000\n", encoding="utf-8")
    root = cost_platform(tmp_path / "repo")
    out = gpuplane("-C", str(root), "cost", str(usage), "--terms", str(terms), "--format", "json")
    assert out.exit_code == 0, out.output
    teams = {t["team"]: t for t in json.loads(out.output)["teams"]}
    h100, a100, l40s = RATES["h100-train"], RATES["a100-mig"], RATES["l40s-infer"]
    mig_hours = steps * mig * 5 / 60
    vision = teams["vision"]["terms"]
    assert vision["compute"] == pytest.approx(6 * h100 + mig_hours / 2 * a100)
    assert vision["failed_runs"] == pytest.approx(2 * h100)
    assert vision["idle"] == pytest.approx(2 * h100 + mig_hours / 2 * a100)
    assert teams["vision"]["costPerUnit"] == pytest.approx((10 * h100 + mig_hours * a100) / 2)
    assert teams["llm"]["costPerUnit"] == pytest.approx(0.25 * l40s / 0.5)


def test_quota_use_is_the_teams_across_all_its_cluster_queues(
    prod: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    """A team's quota is its Kueue Cohort's (docs/admission-model.md), so quota use is read from
    Kueue's Cohort gauges (v0.19.2 pkg/metrics/metrics.go `kueue_cohort_subtree_quota`,
    `kueue_cohort_subtree_resource_reservations`, labels cohort, flavor, resource,
    replica_role), never from a ClusterQueue's nominal quota (0 for every team ClusterQueue).
    vision reserves 12 of its 8 H100s (borrowing: 1.5); llm reserves nothing of its 16 (0); the
    `prod` Cohort (the Queue's, no team's) and a follower replica's gauges are left out."""
    kueue = {"job": "kueue-controller-manager-metrics", "instance": "10.0.1.4:8443"}
    at = {"flavor": "h100-train", "resource": "nvidia.com/gpu"}

    def gauge(name: str, cohort: str, role: str = "leader") -> str:
        return selector(name, {**kueue, "cohort": cohort, **at, "replica_role": role})

    series = [
        (gauge("kueue_cohort_subtree_quota", "vision"), "8x10"),
        (gauge("kueue_cohort_subtree_resource_reservations", "vision"), "12x10"),
        (gauge("kueue_cohort_subtree_resource_reservations", "vision", "follower"), "99x10"),
        (gauge("kueue_cohort_subtree_quota", "llm"), "16x10"),
        (gauge("kueue_cohort_subtree_quota", "prod"), "32x10"),
        (gauge("kueue_cohort_subtree_resource_reservations", "prod"), "4x10"),
    ]
    where = {"pool": "h100-train", "resource": "nvidia.com/gpu"}
    unit_test(
        tmp_path,
        *prod,
        series,
        exprs=[
            {
                "expr": m.TEAM_POOL_QUOTA_USAGE_RATIO,
                "eval_time": "5m",
                "exp_samples": [
                    {
                        "labels": selector(
                            m.TEAM_POOL_QUOTA_USAGE_RATIO,
                            {**base(), **team, "queue": "prod", **where},
                        ),
                        "value": value,
                    }
                    for team, value in ((VISION, 1.5), (LLM, 0.0))
                ],
            }
        ],
    )
