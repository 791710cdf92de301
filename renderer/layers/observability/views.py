"""The panels of the guide's three views: what each dashboard shows, and the series it reads.

`renderer.layers.observability.dashboards` wraps each grid in a dashboard and a ConfigMap. The
series are the layer's recording rules (`renderer.model.metrics`) and the raw inputs they come
from: the DCGM fields of `renderer.layers.gpu.dcgm`, kube-state-metrics, the kubelet's volume
stats and Prometheus's `ALERTS`. docs/observability.md, "Dashboards", lists them per view.
"""

from __future__ import annotations

from typing import Any

from renderer.layers.observability import panels as p
from renderer.layers.observability.panels import Query, sel
from renderer.model import metrics as m
from renderer.model import server_metrics as sm

COST_COMMAND = (
    "Cost per accepted unit needs what each team accepted (completed training runs, accepted "
    "model outputs, requests served), which Prometheus does not know. Export these series and "
    "run `gpuplane cost USAGE` (docs/cost.md): it adds the other cost terms and divides by each "
    "team's accepted units."
)


# --- platform -------------------------------------------------------------------------------------


def _dcgm(field: str, **kw: Any) -> str:
    return sel(field, raw=True, pool=True, **kw)


def platform() -> p.Grid:
    """The platform view: a row per section, top to bottom."""
    g = p.Grid()
    _nodes_and_gpus(g)
    _gpu_health(g)
    _fabric(g)
    _storage(g)
    _queues(g)
    _events(g)
    return g


def _nodes_and_gpus(g: p.Grid) -> None:
    """Row: GPUs present, allocated and busy, and nodes per pool."""
    g.row("Nodes and GPUs per pool")
    g.add(
        p.timeseries(
            "GPUs present, allocated and busy",
            "Physical GPUs the pool's dcgm-exporters report; physical-GPU equivalents pods hold;"
            " the same weighted by how busy each GPU is.",
            (
                Query(f"sum by (pool) ({sel(m.POOL_GPUS_PRESENT, pool=True)})", "{{pool}} present"),
                Query(
                    f"sum by (pool) ({sel(m.POOL_GPUS_ALLOCATED, pool=True)})", "{{pool}} allocated"
                ),
                Query(
                    f"sum by (pool) ({sel(m.TEAM_POOL_GPUS_BUSY, team=True, pool=True)})",
                    "{{pool}} busy",
                ),
            ),
        ),
        12,
        8,
    )
    g.add(
        p.timeseries(
            "Nodes per pool, and nodes not Ready",
            "Nodes with the pool's label (kube-state-metrics kube_node_labels) and those whose"
            " Ready condition is not true (kube_node_status_condition).",
            (
                Query(f"count by (pool) ({p.node_pool()})", "{{pool}} nodes"),
                Query(
                    "sum by (pool) ("
                    + sel(
                        "kube_node_status_condition",
                        raw=True,
                        extra=('condition="Ready"', 'status!="true"'),
                    )
                    + f" * on (node) group_left (pool) {p.node_pool()})",
                    "{{pool}} not Ready",
                ),
            ),
        ),
        12,
        8,
    )


def _gpu_health(g: p.Grid) -> None:
    """Row: errors, temperature, power and throttling of the pools' GPUs."""
    g.row("GPU health")
    _gpu_errors(g)
    _gpu_heat(g)


def _gpu_errors(g: p.Grid) -> None:
    """XID errors, ECC errors and remapped rows."""
    errors = (
        (
            "XID errors",
            "The last XID error each GPU reported (0: none); XID 48, 63, 64, 74, 79, 94, 95 need"
            " attention.",
            (
                Query(
                    f"max by (pool, node, gpu) ({_dcgm('DCGM_FI_DEV_XID_ERRORS')}) > 0",
                    "{{node}} GPU {{gpu}}",
                ),
            ),
        ),
        (
            "ECC errors (per hour)",
            "Volatile double-bit (uncorrectable) and single-bit ECC errors.",
            (
                Query(
                    f"sum by (pool, node) (increase({_dcgm('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL')}[1h]))",
                    "{{node}} double-bit",
                ),
                Query(
                    f"sum by (pool, node) (increase({_dcgm('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL')}[1h]))",
                    "{{node}} single-bit",
                ),
            ),
        ),
        (
            "Remapped rows",
            "Rows remapped after uncorrectable errors; a GPU whose remapping failed needs a"
            " reset or replacement.",
            (
                Query(
                    f"max by (pool, node, gpu) ({_dcgm('DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS')})",
                    "{{node}} GPU {{gpu}}",
                ),
                Query(
                    f"max by (pool, node, gpu) ({_dcgm('DCGM_FI_DEV_ROW_REMAP_FAILURE')}) > 0",
                    "{{node}} GPU {{gpu}} remap failed",
                ),
            ),
        ),
    )
    for title, description, queries in errors:
        g.add(p.timeseries(title, description, queries, "short"), 8, 8)


def _gpu_heat(g: p.Grid) -> None:
    """Temperature, power draw and throttling."""
    g.add(
        p.timeseries(
            "Temperature",
            "The hottest GPU of each node, and the pool's alert threshold"
            " (alerts.maxTemperatureCelsius).",
            (
                Query(f"max by (pool, node) ({_dcgm('DCGM_FI_DEV_GPU_TEMP')})", "{{node}}"),
                Query(
                    f"max by (pool) ({sel(m.POOL_ALERT_MAX_TEMPERATURE, pool=True)})",
                    "{{pool}} threshold",
                ),
            ),
            "celsius",
        ),
        8,
        8,
    )
    g.add(
        p.timeseries(
            "Power draw",
            "Power draw of each node's GPUs.",
            (Query(f"sum by (pool, node) ({_dcgm('DCGM_FI_DEV_POWER_USAGE')})", "{{node}}"),),
            "watt",
        ),
        8,
        8,
    )
    g.add(
        p.timeseries(
            "Throttling",
            "Share of time the node's GPUs were held back by power or thermal limits (DCGM"
            " counts the throttled time in microseconds).",
            (
                Query(
                    "sum by (pool, node) (rate("
                    f"{_dcgm('DCGM_FI_DEV_POWER_VIOLATION')}[$__rate_interval])) / 1e6",
                    "{{node}} power",
                ),
                Query(
                    "sum by (pool, node) (rate("
                    f"{_dcgm('DCGM_FI_DEV_THERMAL_VIOLATION')}[$__rate_interval])) / 1e6",
                    "{{node}} thermal",
                ),
            ),
            "percentunit",
        ),
        8,
        8,
    )


def _fabric(g: p.Grid) -> None:
    """Row: NVLink and PCIe traffic, and PCIe replays."""
    g.row("Fabric")
    g.add(
        p.timeseries(
            "NVLink traffic",
            "Rate of DCGM's NVLink bandwidth counter, all lanes.",
            (
                Query(
                    "sum by (pool, node) (rate("
                    f"{_dcgm('DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL')}[$__rate_interval]))",
                    "{{node}}",
                ),
            ),
        ),
        8,
        8,
    )
    g.add(
        p.timeseries(
            "PCIe throughput",
            "Bytes per second over each node's GPUs' PCIe links.",
            (
                Query(
                    f"sum by (pool, node) ({_dcgm('DCGM_FI_PROF_PCIE_TX_BYTES')})", "{{node}} tx"
                ),
                Query(
                    f"sum by (pool, node) ({_dcgm('DCGM_FI_PROF_PCIE_RX_BYTES')})", "{{node}} rx"
                ),
            ),
            "Bps",
        ),
        8,
        8,
    )
    g.add(
        p.timeseries(
            "PCIe replays (per hour)",
            "PCIe retries: a rising count points at a bad riser, slot or cable.",
            (
                Query(
                    "sum by (pool, node) (increase("
                    f"{_dcgm('DCGM_FI_DEV_PCIE_REPLAY_COUNTER')}[1h]))",
                    "{{node}}",
                ),
            ),
        ),
        8,
        8,
    )


def _storage(g: p.Grid) -> None:
    """Row: how full the teams' volume claims are."""
    g.row("Storage")
    used = sel("kubelet_volume_stats_used_bytes", raw=True)
    capacity = sel("kubelet_volume_stats_capacity_bytes", raw=True)
    g.add(
        p.timeseries(
            "Volume use of the teams' claims",
            "Used / capacity of each PersistentVolumeClaim (kubelet volume stats), by team.",
            (
                Query(
                    "max by (team, namespace, persistentvolumeclaim) ("
                    + p.with_team(f"{used} / {capacity}")
                    + ")",
                    "{{namespace}}/{{persistentvolumeclaim}}",
                ),
            ),
            "percentunit",
        ),
        24,
        8,
    )


def _per_queue(aggregate: str, metric: str) -> str:
    """`aggregate` over a recorded per-ClusterQueue series, with the queue's team."""
    return f"{aggregate} (" + p.with_queue_team(sel(metric)) + ")"


def _queues(g: p.Grid) -> None:
    """Row: Kueue's pending and admitted workloads, waits, quota use, preemptions."""
    g.row("Queues")
    g.add(
        p.timeseries(
            "Pending and admitted workloads",
            "Kueue's pending (active and inadmissible) and admitted active workloads per"
            " ClusterQueue.",
            (
                Query(
                    _per_queue("sum by (team, cluster_queue, status)", m.CLUSTER_QUEUE_PENDING),
                    "{{cluster_queue}} pending {{status}}",
                ),
                Query(
                    _per_queue("sum by (team, cluster_queue)", m.CLUSTER_QUEUE_ADMITTED_ACTIVE),
                    "{{cluster_queue}} admitted",
                ),
            ),
        ),
        12,
        8,
    )
    g.add(
        p.timeseries(
            "Admission wait, 90th percentile",
            "Kueue's admission wait time over 30 minutes, and each ClusterQueue's wait budget.",
            (
                Query(
                    _per_queue("max by (team, cluster_queue)", m.CLUSTER_QUEUE_ADMISSION_WAIT_P90),
                    "{{cluster_queue}} p90",
                ),
                Query(
                    _per_queue("max by (team, cluster_queue)", m.CLUSTER_QUEUE_WAIT_BUDGET),
                    "{{cluster_queue}} budget",
                ),
            ),
            "s",
        ),
        12,
        8,
    )
    g.add(
        p.timeseries(
            "Quota usage against nominal",
            "Reserved / nominal quota per team and pool, all its ClusterQueues together "
            "(the team's Kueue Cohort; above 1: borrowing).",
            (
                Query(
                    "max by (team, pool, resource) ("
                    + sel(m.TEAM_POOL_QUOTA_USAGE_RATIO, team=True, pool=True)
                    + ")",
                    "{{team}} {{pool}} {{resource}}",
                ),
            ),
            "percentunit",
        ),
        12,
        8,
    )
    g.add(
        p.timeseries(
            "Preemptions (last hour)",
            "Workloads each ClusterQueue preempted over the last hour, by reason.",
            (
                Query(
                    _per_queue("sum by (team, cluster_queue, reason)", m.CLUSTER_QUEUE_PREEMPTIONS),
                    "{{cluster_queue}} {{reason}}",
                ),
            ),
        ),
        12,
        8,
    )


def _events(g: p.Grid) -> None:
    """Row: the alerts firing now."""
    g.row("Events")
    firing = sel(
        "ALERTS",
        raw=True,
        team=True,
        extra=('alertstate="firing"', 'pool=~"(.*,)?($pool)(,.*)?"'),
    )
    g.add(
        p.table(
            "Alerts firing",
            "Every alert firing now, with the team and pool it names (a queue alert names its"
            " ClusterQueue's pools joined with commas).",
            (Query(f"sum by (alertname, severity, team, pool) ({firing})"),),
        ),
        24,
        8,
    )


# --- workload -------------------------------------------------------------------------------------


def _pod_raw(metric: str, *extra: str) -> str:
    return sel(metric, raw=True, namespace=True, extra=extra)


def _pod(metric: str) -> str:
    """A recorded per-pod series, filtered by team, pool and namespace."""
    return sel(metric, team=True, pool=True, namespace=True)


def workload() -> p.Grid:
    """The workload view: a row per section, top to bottom."""
    g = p.Grid()
    _gpus_held(g)
    _owner_image_runtime(g)
    _retries_and_failures(g)
    _inference(g)
    return g


def _gpus_held(g: p.Grid) -> None:
    """Row: the GPUs each namespace and pod holds, and how busy they are."""
    g.row("GPUs held and busy")
    g.add(
        p.timeseries(
            "GPUs held per namespace",
            "Physical-GPU equivalents the namespace's pods hold (a MIG slice by its share of"
            " the GPU, a time-sliced or MPS replica by 1/replicas).",
            (
                Query(
                    f"sum by (team, namespace, pool) ({_pod(m.POD_GPUS_ALLOCATED)})",
                    "{{namespace}} {{pool}}",
                ),
            ),
        ),
        12,
        8,
    )
    g.add(
        p.timeseries(
            "GPUs busy per namespace",
            "The same equivalents weighted by how busy each GPU is"
            " (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL).",
            (
                Query(
                    f"sum by (team, namespace, pool) ({_pod(m.POD_GPUS_BUSY)})",
                    "{{namespace}} {{pool}}",
                ),
            ),
        ),
        12,
        8,
    )
    g.add(
        p.table(
            "Pods holding GPUs",
            "GPUs each pod holds now and how busy they are (0..1).",
            (
                Query(f"sum by (team, namespace, pod, pool) ({_pod(m.POD_GPUS_ALLOCATED)})"),
                Query(f"max by (team, namespace, pod, pool) ({_pod(m.POD_BUSY_RATIO)})"),
            ),
        ),
        24,
        10,
    )


def _owner_image_runtime(g: p.Grid) -> None:
    """Row: what each pod is: its owner, images and gpuplane labels."""
    g.row("Owner, image and runtime")
    g.add(
        p.table(
            "Owner",
            "The controller that owns each pod (kube-state-metrics kube_pod_owner).",
            (
                Query(
                    "max by (team, namespace, pod, owner_kind, owner_name) ("
                    + p.with_team(_pod_raw("kube_pod_owner"), namespace=True)
                    + ")"
                ),
            ),
        ),
        12,
        10,
    )
    g.add(
        p.table(
            "Image",
            "The image of each container: the model server or trainer, and its version"
            " (kube_pod_container_info).",
            (
                Query(
                    "max by (team, namespace, pod, container, image) ("
                    + p.with_team(_pod_raw("kube_pod_container_info"), namespace=True)
                    + ")"
                ),
            ),
        ),
        12,
        10,
    )
    g.add(
        p.table(
            "Model, dataset and runtime",
            "The gpuplane template the pod was made from (pod label gpuplane.dev/template: job,"
            " jobset, rayjob, inference...), its purpose, and the model, dataset and runtime the"
            " team labels its pods with (gpuplane.dev/model, gpuplane.dev/dataset,"
            " gpuplane.dev/runtime: the templates leave them to the team). kube-state-metrics"
            " exports them because gpuplane's kube-prometheus-stack values allow them"
            " (metricLabelsAllowlist); an empty column is a label the pods do not carry.",
            (
                Query(
                    "max by (team, namespace, pod, label_gpuplane_dev_template,"
                    " label_gpuplane_dev_purpose, label_gpuplane_dev_model,"
                    " label_gpuplane_dev_dataset, label_gpuplane_dev_runtime) ("
                    + p.with_team(_pod_raw("kube_pod_labels"), namespace=True)
                    + ")"
                ),
            ),
        ),
        24,
        8,
    )


def _retries_and_failures(g: p.Grid) -> None:
    """Row: restarts, exit reasons and failed pods."""
    g.row("Retries and failures")
    g.add(
        p.timeseries(
            "Restarts (per hour)",
            "Container restarts: the retries of a crashing or preempted workload.",
            (
                Query(
                    "sum by (team, namespace, pod) ("
                    + p.with_team(
                        "increase("
                        + _pod_raw("kube_pod_container_status_restarts_total")
                        + "[1h])",
                        namespace=True,
                    )
                    + ")",
                    "{{namespace}}/{{pod}}",
                ),
            ),
        ),
        12,
        8,
    )
    g.add(
        p.table(
            "Exit reasons",
            "Why each container last terminated (OOMKilled, Error, Completed, ...).",
            (
                Query(
                    "sum by (team, namespace, pod, container, reason) ("
                    + p.with_team(
                        _pod_raw("kube_pod_container_status_last_terminated_reason"), namespace=True
                    )
                    + ") > 0"
                ),
            ),
        ),
        12,
        8,
    )
    g.add(
        p.table(
            "Failed pods and the GPU-hours they burned",
            "Pods in phase Failed now, and the GPU-hours each held over the last 7 days.",
            (
                Query(
                    "max by (team, namespace, pod) ("
                    + p.with_team(sel(m.POD_FAILED, namespace=True), namespace=True)
                    + ")"
                ),
                Query(f"sum by (team, namespace, pod) ({_pod(m.POD_FAILED_GPU_HOURS)})"),
            ),
        ),
        24,
        8,
    )


# --- financial ------------------------------------------------------------------------------------


def financial() -> p.Grid:
    g = p.Grid()
    by = "team, pool"
    allocated = p.gpu_hours(m.TEAM_POOL_GPUS_ALLOCATED, by)
    busy = p.gpu_hours(m.TEAM_POOL_GPUS_BUSY, by)
    idle = f"{allocated} - ({busy} or {allocated} * 0)"
    failed = f"sum by ({by}) ({sel(m.TEAM_POOL_FAILED_GPU_HOURS, team=True, pool=True)})"
    g.row("GPU-hours over the time range")
    for title, expr, unit in (
        ("Allocated GPU-hours", f"sum ({allocated})", "short"),
        ("Useful (busy) GPU-hours", f"sum ({busy})", "short"),
        ("Idle share", f"sum ({idle}) / sum ({allocated})", "percentunit"),
        ("Failed-run GPU-hours (7 days)", f"sum ({failed})", "short"),
    ):
        g.add(p.stat(title, "For the selected teams and pools.", (Query(expr),), unit), 6, 4)
    g.add(
        p.table(
            "GPU-hours per team and pool",
            "Allocated, useful (busy) and idle GPU-hours over the time range, sampled every"
            f" {p.STEP} as the usage export is, and GPU-hours of runs that failed (pods now"
            " Failed, last 7 days).",
            (
                Query(allocated, "allocated"),
                Query(busy, "useful"),
                Query(idle, "idle"),
                Query(failed, "failed runs"),
            ),
        ),
        24,
        10,
    )
    g.row("Cost")
    g.add(
        p.table(
            "GPU cost per team and pool",
            "GPU-hours times the pool's cost.gpuHour, over the time range: all allocated hours,"
            " the idle ones, and those of failed runs.",
            (
                Query(p.priced(allocated, by), "allocated"),
                Query(p.priced(idle, by), "idle"),
                Query(p.priced(failed, by), "failed runs"),
            ),
        ),
        24,
        10,
    )
    team_rate = sel(m.TEAM_POOL_GPUS_ALLOCATED, team=True, pool=True)
    g.add(
        p.timeseries(
            "GPU cost rate per team",
            "What the GPUs each team holds cost per hour, at the pools' cost.gpuHour.",
            (Query(p.priced(team_rate, "team"), "{{team}} ({{currency}})"),),
        ),
        16,
        8,
    )
    g.add(p.text("Cost per accepted unit", COST_COMMAND), 8, 8)
    g.add(
        p.timeseries(
            "Allocated and useful GPUs per team",
            "Physical-GPU equivalents held, and the busy part of them.",
            (
                Query(f"sum by (team) ({team_rate})", "{{team}} allocated"),
                Query(
                    f"sum by (team) ({sel(m.TEAM_POOL_GPUS_BUSY, team=True, pool=True)})",
                    "{{team}} useful",
                ),
            ),
        ),
        24,
        8,
    )
    return g


# --- workload: inference endpoints -------------------------------------------------------------

ENDPOINT_LEGEND = "{{namespace}}/{{endpoint}}"
ABSENT = (
    " A server that does not measure it has no series here (Triton: no tokens, no time to first"
    " token, no inter-token latency, no KV cache)."
)


def _endpoint(metric: str) -> str:
    """A recorded endpoint series, filtered by team, pool, namespace and endpoint."""
    return sel(
        metric,
        team=True,
        pool=True,
        namespace=True,
        extra=(f'{p.ENDPOINT_VAR}=~"${p.ENDPOINT_VAR}"',),
    )


def _series(metric: str, legend: str = "") -> Query:
    return Query(_endpoint(metric), f"{ENDPOINT_LEGEND}{legend}")


def _inference(g: p.Grid) -> None:
    """Row: each endpoint's latency, throughput, errors, cache, queue and batch, from its
    server's own metrics (recording rules `gpuplane.serving.<server>`)."""
    g.row("Inference endpoints")
    panels = (
        (
            "Time to first token (p95)",
            "95th percentile over 5 minutes of the time to the first token." + ABSENT,
            "s",
            (_series(sm.TTFT_P95),),
        ),
        (
            "Inter-token latency (p95)",
            "95th percentile over 5 minutes of the time between output tokens." + ABSENT,
            "s",
            (_series(sm.INTER_TOKEN_P95),),
        ),
        (
            "Request latency (p95)",
            "95th percentile over 5 minutes of the whole request (Triton: to its response).",
            "s",
            (_series(sm.LATENCY_P95),),
        ),
        (
            "Tokens per second",
            "Prompt (prefill) and generated tokens per second over 5 minutes." + ABSENT,
            "short",
            (
                _series(sm.PROMPT_TOKENS_RATE, " prompt"),
                _series(sm.GENERATION_TOKENS_RATE, " generated"),
            ),
        ),
        (
            "Requests and errors per second",
            "Requests the server completed and failed (vLLM: HTTP 5xx; SGLang: aborted;"
            " Triton: failed) per second over 5 minutes.",
            "reqps",
            (_series(sm.REQUESTS_RATE, " completed"), _series(sm.ERRORS_RATE, " failed")),
        ),
        (
            "Error ratio",
            "Failed over all requests in the last 5 minutes.",
            "percentunit",
            (_series(sm.ERROR_RATIO),),
        ),
        (
            "KV-cache use",
            "The KV cache's use, averaged over the endpoint's pods (1: full)." + ABSENT,
            "percentunit",
            (_series(sm.KV_CACHE_AVG),),
        ),
        (
            "Queue depth",
            "Requests waiting, not yet running, summed over the endpoint's pods: the"
            " queue-depth autoscaling signal.",
            "short",
            (_series(sm.WAITING),),
        ),
        (
            "Batch size",
            "Requests in a running batch, averaged over the endpoint's pods (Triton:"
            " inferences per model execution).",
            "short",
            (_series(sm.BATCH_SIZE),),
        ),
    )
    for title, description, unit, queries in panels:
        g.add(p.timeseries(title, description, queries, unit), 8, 8)
