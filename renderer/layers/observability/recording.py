"""The PrometheusRule `gpuplane-recording`: gpuplane's labels on the DCGM, kube-state-metrics and
Kueue series, and the series `gpuplane cost` and the dashboards read (`renderer.model.metrics`).

The groups, evaluated in this order within each group (Prometheus evaluates a group's rules one
after the other, each seeing the ones before it at the same timestamp):
- `gpuplane.info`: the model's static series (`info.py`);
- `gpuplane.joins`: namespace -> team, the busy ratio, the per-pod and per-team GPU series, the
  per-pool totals;
- `gpuplane.kueue`: Kueue's queue series with the ClusterQueue's team (only on Kueue clusters);
- `gpuplane.serving.<server>`, `gpuplane.serving.slo`: the inference endpoints' series from
  their servers' own metrics, and the share of requests over each SLO (`endpoint_rules.py`;
  only on clusters that serve endpoints);
- `gpuplane.failed-runs`: GPU-hours of pods that failed, every 5 minutes (a 7-day subquery).

Upstream names, checked where they are defined: dcgm-exporter exports what
`renderer.layers.gpu.dcgm.METRICS` lists, with `pool`, `node`, `namespace`, `pod` from that
ServiceMonitor and `gpu`, `GPU_I_PROFILE` of its own; Kueue v0.19.2's pkg/metrics/metrics.go
(subsystem `kueue`; `replica_role` leader, follower or standalone: a follower's gauges are left
out); kube-state-metrics' `kube_namespace_labels`, `kube_node_labels` (with the chart's
`metricLabelsAllowlist`), `kube_pod_status_phase`. See docs/observability.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.layers.observability import endpoint_rules, info
from renderer.layers.observability.info import record
from renderer.model import metrics as m
from renderer.model.names import PROMETHEUS_ADDON, PROMETHEUS_NAMESPACE
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "observability"
NAME = "gpuplane-recording"

FAILED_RUN_INTERVAL = "5m"
FAILED_RUN_WINDOW = "7d"
"""How far back the failed-run burn looks: a pod that ran longer counts its last 7 days."""

NS_LABEL = "label_gpuplane_dev_"
"""kube-state-metrics' prefix of an allowlisted `gpuplane.dev/<key>` label (`-` becomes `_`)."""

NOT_FOLLOWER = 'replica_role!="follower"'
"""Kueue's followers (HA replicas that are not the leader) keep gauges of their own cache."""

CQ_LABELS = f"{m.TEAM}, {m.COST_CENTER}, {m.PURPOSE}, {m.QUEUE}, {m.POOLS}"
"""What a ClusterQueue series takes from `CLUSTER_QUEUE_INFO`."""
CQ_POOL_LABELS = f"{m.TEAM}, {m.COST_CENTER}, {m.PURPOSE}, {m.QUEUE}"
"""The same for a series that has one pool of its own (Kueue's flavor)."""
POD_LABELS = f"{m.NAMESPACE}, {m.POD}, {m.POOL}"


def _relabel(expr: str, target: str, source: str, empty: str | None = None) -> str:
    """`label_replace` copying `source` onto `target`; with `empty`, a missing or empty source
    writes that value instead."""
    copied = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
    if empty is None:
        return copied
    return f'label_replace({copied}, "{target}", "{empty}", "{source}", "")'


def _namespace_info() -> str:
    expr = "kube_namespace_labels"
    expr = _relabel(expr, m.TEAM, f"{NS_LABEL}team", empty=m.PLATFORM_TEAM)
    expr = _relabel(expr, m.COST_CENTER, f"{NS_LABEL}cost_center", empty=m.PLATFORM_TEAM)
    expr = _relabel(expr, m.PURPOSE, f"{NS_LABEL}purpose")
    return f"max by ({m.NAMESPACE}, {m.TEAM}, {m.COST_CENTER}, {m.PURPOSE}) ({expr})"


def _node_info() -> str:
    expr = f'kube_node_labels{{{NS_LABEL}pool!=""}}'
    expr = _relabel(expr, m.POOL, f"{NS_LABEL}pool")
    expr = _relabel(expr, m.ACCELERATOR, f"{NS_LABEL}accelerator")
    return f"max by (node, {m.POOL}, {m.ACCELERATOR}) ({expr})"


def _weighted(series: str, op: str) -> str:
    """Each DCGM device series a pod holds, with its weight in physical GPUs (`op` `+` after a
    `* 0`: the weight alone; `*`: the series times its weight)."""
    profile = f'label_replace({series}, "{m.MIG_PROFILE}", "$1", "GPU_I_PROFILE", "(.*)")'
    return f"{profile} {op} on ({m.POOL}, {m.MIG_PROFILE}) group_left () {m.POOL_GPU_WEIGHT}"


def _with_namespace(expr: str) -> str:
    return (
        f"({expr})\n* on ({m.NAMESPACE}) group_left ({m.TEAM}, {m.COST_CENTER}) {m.NAMESPACE_INFO}"
    )


def joins(view: ClusterView) -> list[dict[str, Any]]:
    held = 'DCGM_FI_DEV_FB_USED{pod!=""}'
    allocated = f"sum by ({POD_LABELS}) (\n  {_weighted(f'({held} * 0)', '+')}\n)"
    held_busy = m.GPU_BUSY_RATIO + '{pod!=""}'
    busy = f"sum by ({POD_LABELS}) (\n  {_weighted(held_busy, '*')}\n)"
    team_pool = f"{m.TEAM}, {m.COST_CENTER}, {m.POOL}"
    return [
        record(view, m.NAMESPACE_INFO, _namespace_info()),
        record(view, m.NODE_INFO, _node_info()),
        record(
            view,
            m.GPU_BUSY_RATIO,
            "clamp(DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL / 100, 0, 1)",
        ),
        record(view, m.POD_GPUS_ALLOCATED, _with_namespace(allocated)),
        record(view, m.POD_GPUS_BUSY, _with_namespace(busy)),
        record(view, m.POD_BUSY_RATIO, f"{m.POD_GPUS_BUSY} / {m.POD_GPUS_ALLOCATED}"),
        record(
            view,
            m.POD_FAILED,
            f'max by ({m.NAMESPACE}, {m.POD}) (kube_pod_status_phase{{phase="Failed"}}) == 1',
        ),
        record(view, m.TEAM_POOL_GPUS_ALLOCATED, f"sum by ({team_pool}) ({m.POD_GPUS_ALLOCATED})"),
        record(view, m.TEAM_POOL_GPUS_BUSY, f"sum by ({team_pool}) ({m.POD_GPUS_BUSY})"),
        record(view, m.POOL_GPUS_ALLOCATED, f"sum by ({m.POOL}) ({m.POD_GPUS_ALLOCATED})"),
        record(
            view,
            m.POOL_GPUS_PRESENT,
            f"count by ({m.POOL}) (count by ({m.POOL}, node, gpu) (DCGM_FI_DEV_FB_USED))",
        ),
    ]


def _with_queue(expr: str, labels: str = CQ_LABELS) -> str:
    return f"({expr})\n* on ({m.CLUSTER_QUEUE}) group_left ({labels}) {m.CLUSTER_QUEUE_INFO}"


def _per_pool(metric: str) -> str:
    series = _relabel(f"{metric}{{{NOT_FOLLOWER}}}", m.POOL, "flavor")
    return _with_queue(f"sum by ({m.CLUSTER_QUEUE}, {m.POOL}, resource) ({series})", CQ_POOL_LABELS)


def kueue(view: ClusterView) -> list[dict[str, Any]]:
    cq = m.CLUSTER_QUEUE
    wait = (
        f"histogram_quantile(0.9, sum by ({cq}, le) "
        f"(rate(kueue_admission_wait_time_seconds_bucket{{{NOT_FOLLOWER}}}[30m]))) >= 0"
    )
    preempting = _relabel(
        f"increase(kueue_preempted_workloads_total{{{NOT_FOLLOWER}}}[1h])",
        cq,
        "preempting_cluster_queue",
    )
    return [
        record(view, m.CLUSTER_QUEUE_ADMISSION_WAIT_P90, _with_queue(wait)),
        record(
            view,
            m.CLUSTER_QUEUE_PENDING,
            _with_queue(f"sum by ({cq}, status) (kueue_pending_workloads{{{NOT_FOLLOWER}}})"),
        ),
        record(
            view,
            m.CLUSTER_QUEUE_ADMITTED_ACTIVE,
            _with_queue(f"sum by ({cq}) (kueue_admitted_active_workloads{{{NOT_FOLLOWER}}})"),
        ),
        record(
            view, m.CLUSTER_QUEUE_PREEMPTIONS, _with_queue(f"sum by ({cq}, reason) ({preempting})")
        ),
        record(view, m.CLUSTER_QUEUE_POOL_USAGE, _per_pool("kueue_cluster_queue_resource_usage")),
        record(
            view,
            m.TEAM_POOL_QUOTA_RESERVED,
            _per_team_pool("kueue_cohort_subtree_resource_reservations"),
        ),
        record(view, m.TEAM_POOL_NOMINAL, _per_team_pool("kueue_cohort_subtree_quota")),
        record(
            view,
            m.TEAM_POOL_QUOTA_USAGE_RATIO,
            f"({m.TEAM_POOL_QUOTA_RESERVED} or 0 * {m.TEAM_POOL_NOMINAL})"
            f" / ({m.TEAM_POOL_NOMINAL} > 0)",
        ),
    ]


def _per_team_pool(metric: str) -> str:
    """A Kueue Cohort series of the teams' Cohorts (named after the team; the Queues' Cohorts
    and any Cohort gpuplane does not render have no ClusterQueue of a team and are dropped by
    the join), per pool and resource, with the team's cost centre and queue."""
    series = _relabel(_relabel(f"{metric}{{{NOT_FOLLOWER}}}", m.POOL, "flavor"), m.TEAM, "cohort")
    teams = f"max by ({m.TEAM}, {m.COST_CENTER}, {m.QUEUE}) ({m.CLUSTER_QUEUE_INFO})"
    return (
        f"(sum by ({m.TEAM}, {m.POOL}, resource) ({series}))\n"
        f"* on ({m.TEAM}) group_left ({m.COST_CENTER}, {m.QUEUE}) {teams}"
    )


def failed_runs(view: ClusterView) -> list[dict[str, Any]]:
    """GPU-hours each Failed pod held: its allocation sampled every EXPORT_STEP_SECONDS over the
    window, each sample worth that many seconds."""
    step = m.EXPORT_STEP_SECONDS
    burned = (
        f"sum_over_time({m.POD_GPUS_ALLOCATED}[{FAILED_RUN_WINDOW}:{step // 60}m]) * {step} / 3600"
    )
    return [
        record(
            view,
            m.POD_FAILED_GPU_HOURS,
            f"({burned})\n* on ({m.NAMESPACE}, {m.POD}) group_left () {m.POD_FAILED}",
        ),
        record(
            view,
            m.TEAM_POOL_FAILED_GPU_HOURS,
            f"sum by ({m.TEAM}, {m.COST_CENTER}, {m.POOL}) ({m.POD_FAILED_GPU_HOURS})",
        ),
    ]


def uses_kueue(view: ClusterView) -> bool:
    return view.cluster.scheduler == "kueue"


def groups(view: ClusterView) -> list[dict[str, Any]]:
    static = info.pool_rules(view)
    if uses_kueue(view):
        static += info.queue_rules(view)
    found: list[dict[str, Any]] = [
        {"name": "gpuplane.info", "rules": static},
        {"name": "gpuplane.joins", "rules": joins(view)},
    ]
    if uses_kueue(view):
        found.append({"name": "gpuplane.kueue", "rules": kueue(view)})
    found.extend(endpoint_rules.groups(view))
    found.append(
        {
            "name": "gpuplane.failed-runs",
            "interval": FAILED_RUN_INTERVAL,
            "rules": failed_runs(view),
        }
    )
    return found


def prometheus_rule(view: ClusterView, name: str, rule_groups: list[dict[str, Any]]) -> Any:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata(name, PROMETHEUS_NAMESPACE),
        "spec": {"groups": rule_groups},
    }


def render(view: ClusterView) -> Iterator[Output]:
    addon = view.cluster.addons[PROMETHEUS_ADDON]
    yield Manifest(LAYER, prometheus_rule(view, NAME, groups(view)), addon.origin.location)
