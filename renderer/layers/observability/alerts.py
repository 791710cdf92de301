"""The PrometheusRule `gpuplane-alerts`: alerts that name the team, the pool and a runbook.

Design: docs/observability.md#how-the-alerts-are-written
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from renderer.layers.observability import endpoint_rules
from renderer.layers.observability.info import number
from renderer.layers.observability.recording import prometheus_rule, uses_kueue
from renderer.model import metrics as m
from renderer.model.names import PROMETHEUS_ADDON
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output

LAYER = "observability"
NAME = "gpuplane-alerts"

THROTTLE_RATIO = 0.1
"""GPUThermalThrottling / GPUPowerThrottling: throttled for more than this share of the time."""
THROTTLE_WINDOW = "5m"
THROTTLE_FOR = "10m"
ERROR_WINDOW = "10m"
"""How far back the ECC and remapped-row counters are read for an increase."""
TEMPERATURE_FOR = "5m"
QUEUE_WAIT_FOR = "10m"
NODE_LOST_FOR = "5m"
GPU_RESOURCES = "nvidia_com_.+"
"""kube-state-metrics' names of NVIDIA's extended resources (whole GPUs, shared replicas, MIG
profiles of the mixed strategy)."""
LIVE_PHASES = "Pending|Running"
IDLE_MINUTES = "idle_minutes"
RUNBOOK_URL = "runbook_url"
RUNBOOK_URL_TEMPLATE = "{{ $labels." + m.RUNBOOK + " }}"
"""The `runbook_url` annotation: the expression's `runbook` label, printed by the template."""
HELD_BY = (
    "{{ if $labels.pod }}held by {{ $labels.namespace }}/{{ $labels.pod }} of team "
    "{{ $labels.team }}{{ else }}held by no pod{{ end }}"
)
"""Who holds the GPU of a DCGM alert, for a GPU no pod holds too (annotations are Go templates
of ours; `$labels` values are printed, never parsed)."""
OF_POOL = "{{ with $labels.pool }} (pool {{ . }}){{ end }}"
"""The pool of a GPU, where its node carries a gpuplane pool label."""


@dataclass(frozen=True, slots=True)
class Alert:
    name: str
    expr: str
    severity: str
    summary: str
    description: str
    for_: str = "0m"
    team: str | None = None
    """A static team (the acceptance suites: `platform`); otherwise the expression's."""
    extra: tuple[tuple[str, str], ...] = ()
    """Further static labels (GPUAllocatedIdle's `idle_minutes`, which tells its rules apart)."""

    def rule(self, view: ClusterView) -> dict[str, Any]:
        labels = {m.CLUSTER: view.cluster.name, "severity": self.severity}
        if self.team is not None:
            labels[m.TEAM] = self.team
        labels.update(self.extra)
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": labels,
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                RUNBOOK_URL: RUNBOOK_URL_TEMPLATE,
            },
        }


def anchor(name: str) -> str:
    """The runbook section of an alert (docs/runbooks.md: `## GPUAllocatedIdle` ->
    `#gpuallocatedidle`)."""
    return name.lower()


def with_runbook(expr: str, alert: str, on: str = m.POOL, series: str = m.POOL_RUNBOOK) -> str:
    """`expr` with the `runbook` label of `series` (matched on `on`) and `#<anchor>` after it;
    the value stays `expr`'s (the runbook series are 1)."""
    joined = f"({expr})\n* on ({on}) group_left ({m.RUNBOOK}) {series}"
    return f'label_replace(\n{joined},\n"{m.RUNBOOK}", "$1#{anchor(alert)}", "{m.RUNBOOK}", "(.*)")'


def gpu_team(condition: Callable[[str], str], metric: str) -> str:
    """`condition` over a DCGM series, with `team`: the team of the namespace of the pod that
    holds the GPU, `platform` where no pod holds it."""
    held = "(" + condition(metric + '{pod!=""}') + ")"
    free = condition(metric + '{pod=""}')
    return (
        f"{held}\n* on ({m.NAMESPACE}) group_left ({m.TEAM}) {m.NAMESPACE_INFO}\n"
        f'or\nlabel_replace({free}, "{m.TEAM}", "{m.PLATFORM_TEAM}", "", "")'
    )


def _on_gpu(name: str) -> str:
    return (
        f"{name} on GPU {{{{ $labels.gpu }}}} of node {{{{ $labels.node }}}} "
        "({{ with $labels.pool }}pool {{ . }}, {{ end }}team {{ $labels.team }})"
    )


def idle_alerts(view: ClusterView) -> list[Alert]:
    """GPUAllocatedIdle: one rule per distinct `alerts.idleMinutes` of the cluster's pools."""
    found: list[Alert] = []
    for minutes in sorted({int(p.alerts["idleMinutes"]) for p in view.pools}):
        seconds = number(minutes * 60)
        below = (
            f"({m.POD_BUSY_RATIO} < on ({m.POOL}) group_left () {m.POOL_ALERT_IDLE_BUSY_RATIO})\n"
            f"and on ({m.POOL}) ({m.POOL_ALERT_IDLE_SECONDS} == {seconds})"
        )
        found.append(
            Alert(
                "GPUAllocatedIdle",
                with_runbook(below, "GPUAllocatedIdle"),
                "warning",
                "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds idle GPUs of pool "
                "{{ $labels.pool }}",
                "The GPUs that pod {{ $labels.namespace }}/{{ $labels.pod }} of team "
                "{{ $labels.team }} holds on pool {{ $labels.pool }} have been busy "
                "{{ $value | humanizePercentage }} (below the pool's alerts.idleBusyPercent) "
                f"for {minutes} minutes (alerts.idleMinutes): they are paid for and do no work.",
                for_=f"{minutes}m",
                extra=((IDLE_MINUTES, str(minutes)),),
            )
        )
    return found


def _increase(metric_window: str) -> Callable[[str], str]:
    return lambda series: f"increase({series}[{metric_window}]) > 0"


def gpu_alerts() -> list[Alert]:
    """GPU health from the DCGM exporter: errors, throttling, temperature."""
    return [*_gpu_error_alerts(), *_gpu_heat_alerts()]


def _gpu_error_alerts() -> list[Alert]:
    """XID errors, ECC errors and row remapping."""
    return [
        Alert(
            "GPUXidError",
            with_runbook(gpu_team(lambda s: f"{s} > 0", "DCGM_FI_DEV_XID_ERRORS"), "GPUXidError"),
            "warning",
            "XID {{ $value }} " + _on_gpu("reported"),
            "The driver reported XID error {{ $value }} on GPU {{ $labels.gpu }} of node "
            "{{ $labels.node }}" + OF_POOL + ", " + HELD_BY + ".",
        ),
        Alert(
            "GPUDoubleBitECC",
            with_runbook(
                gpu_team(_increase(ERROR_WINDOW), "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
                "GPUDoubleBitECC",
            ),
            "critical",
            "Uncorrectable (double-bit) ECC errors " + _on_gpu("reported"),
            f"{{{{ $value }}}} double-bit ECC errors in {ERROR_WINDOW} on GPU "
            "{{ $labels.gpu }} of node {{ $labels.node }}: the data the workload of team "
            "{{ $labels.team }} computed there may be wrong.",
        ),
        Alert(
            "GPURemappedRowsUncorrectable",
            with_runbook(
                gpu_team(_increase(ERROR_WINDOW), "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
                "GPURemappedRowsUncorrectable",
            ),
            "warning",
            "Rows remapped for uncorrectable errors " + _on_gpu("reported"),
            f"{{{{ $value }}}} memory rows remapped for uncorrectable errors in {ERROR_WINDOW} "
            "on GPU {{ $labels.gpu }} of node {{ $labels.node }}: the remap takes effect only "
            "after a GPU reset.",
        ),
        Alert(
            "GPURowRemapFailure",
            with_runbook(
                gpu_team(lambda s: f"{s} > 0", "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
                "GPURowRemapFailure",
            ),
            "critical",
            "Row remapping failure " + _on_gpu("reported"),
            "GPU {{ $labels.gpu }} of node {{ $labels.node }}" + OF_POOL + " could "
            "not remap a failing memory row: it must be taken out of service.",
        ),
    ]


def _gpu_heat_alerts() -> list[Alert]:
    """Thermal and power throttling, and temperature over the pool's threshold."""
    throttled = f"{THROTTLE_RATIO!r}"

    def throttling(series: str) -> str:
        return f"rate({series}[{THROTTLE_WINDOW}]) / 1000000 > {throttled}"

    temperature = f"> on ({m.POOL}) group_left () {m.POOL_ALERT_MAX_TEMPERATURE}"
    return [
        Alert(
            "GPUThermalThrottling",
            with_runbook(
                gpu_team(throttling, "DCGM_FI_DEV_THERMAL_VIOLATION"), "GPUThermalThrottling"
            ),
            "warning",
            "Thermal throttling " + _on_gpu("seen"),
            "GPU {{ $labels.gpu }} of node {{ $labels.node }} has been slowed by its thermal "
            "limit {{ $value | humanizePercentage }} of the time for "
            f"{THROTTLE_FOR}; team {{{{ $labels.team }}}} gets less than it pays for.",
            for_=THROTTLE_FOR,
        ),
        Alert(
            "GPUPowerThrottling",
            with_runbook(gpu_team(throttling, "DCGM_FI_DEV_POWER_VIOLATION"), "GPUPowerThrottling"),
            "warning",
            "Power throttling " + _on_gpu("seen"),
            "GPU {{ $labels.gpu }} of node {{ $labels.node }} has been slowed by its power "
            "limit {{ $value | humanizePercentage }} of the time for "
            f"{THROTTLE_FOR}; team {{{{ $labels.team }}}} gets less than it pays for.",
            for_=THROTTLE_FOR,
        ),
        Alert(
            "GPUTemperatureHigh",
            with_runbook(
                gpu_team(lambda s: f"{s} {temperature}", "DCGM_FI_DEV_GPU_TEMP"),
                "GPUTemperatureHigh",
            ),
            "warning",
            "GPU at {{ $value }} C " + _on_gpu("seen"),
            "GPU {{ $labels.gpu }} of node {{ $labels.node }} has been at {{ $value }} C, "
            "above its pool's alerts.maxTemperatureCelsius, for "
            f"{TEMPERATURE_FOR}.",
            for_=TEMPERATURE_FOR,
        ),
    ]


def _failed_runs() -> str:
    """GPU-hours burned per failed run: a pod's owner (a Job's pods, retries included, are one
    run), or the pod itself when nothing owns it (kube-state-metrics' `<none>`)."""
    owner = f"topk by ({m.NAMESPACE}, {m.POD}) (1, kube_pod_owner)"
    owned = (
        f"{m.POD_FAILED_GPU_HOURS}\n* on ({m.NAMESPACE}, {m.POD}) group_left (owner_name) {owner}"
    )
    joined = f'label_join({owned}, "owner_pod", "/", "owner_name", "{m.POD}")'
    run = f'label_replace({joined}, "run", "$1", "owner_pod", "([^/]+)/.+")'
    run = f'label_replace({run}, "run", "$1", "owner_pod", "<none>/(.+)")'
    by = f"{m.NAMESPACE}, run, {m.TEAM}, {m.COST_CENTER}, {m.POOL}"
    return (
        f"sum by ({by}) ({run})\n> on ({m.POOL}) group_left () {m.POOL_ALERT_FAILED_RUN_GPU_HOURS}"
    )


def usage_alerts() -> list[Alert]:
    return [
        Alert(
            "FailedRunBurnedGPUHours",
            with_runbook(_failed_runs(), "FailedRunBurnedGPUHours"),
            "warning",
            "Run {{ $labels.namespace }}/{{ $labels.run }} failed after "
            '{{ $value | printf "%.1f" }} GPU-hours',
            "The pods of {{ $labels.namespace }}/{{ $labels.run }} (team {{ $labels.team }}, "
            "pool {{ $labels.pool }}) that ended in phase Failed held "
            '{{ $value | printf "%.1f" }} GPU-hours in the last 7 days, more than the pool\'s '
            "alerts.failedRunGpuHours.",
        ),
    ]


def node_alerts() -> list[Alert]:
    """A node of a gpuplane pool NotReady or Unknown while pods holding GPUs are bound to it,
    one alert per node and namespace, valued at the GPUs those pods asked for."""
    requests = (
        f"sum by ({m.NAMESPACE}, {m.POD}) "
        f'(kube_pod_container_resource_requests{{resource=~"{GPU_RESOURCES}"}}) > 0'
    )
    live = f'max by ({m.NAMESPACE}, {m.POD}) (kube_pod_status_phase{{phase=~"{LIVE_PHASES}"}}) == 1'
    bound = (
        f"(({requests})\nand on ({m.NAMESPACE}, {m.POD}) ({live}))\n"
        f"* on ({m.NAMESPACE}, {m.POD}) group_left (node) "
        f'max by ({m.NAMESPACE}, {m.POD}, node) (kube_pod_info{{node!=""}})'
    )
    lost = (
        "(max by (node) "
        '(kube_node_status_condition{condition="Ready", status=~"false|unknown"}) == 1)\n'
        f"* on (node) group_left ({m.POOL}) {m.NODE_INFO}"
    )
    expr = (
        f"sum by (node, {m.NAMESPACE}) ({bound})\n"
        f"* on (node) group_left ({m.POOL}) ({lost})\n"
        f"* on ({m.NAMESPACE}) group_left ({m.TEAM}) {m.NAMESPACE_INFO}"
    )
    return [
        Alert(
            "GPUNodeLostDuringRun",
            with_runbook(expr, "GPUNodeLostDuringRun"),
            "critical",
            "Node {{ $labels.node }} of pool {{ $labels.pool }} lost under running GPU pods",
            "Node {{ $labels.node }} (pool {{ $labels.pool }}) has not been Ready for "
            f"{NODE_LOST_FOR} while pods of namespace {{{{ $labels.namespace }}}} (team "
            "{{ $labels.team }}) holding {{ $value }} GPUs are bound to it.",
            for_=NODE_LOST_FOR,
        ),
    ]


def queue_alerts() -> list[Alert]:
    over = (
        f"{m.CLUSTER_QUEUE_ADMISSION_WAIT_P90}\n"
        f"> on ({m.CLUSTER_QUEUE}) group_left () {m.CLUSTER_QUEUE_WAIT_BUDGET}"
    )
    expr = f'label_replace({over}, "{m.POOL}", "$1", "{m.POOLS}", "(.+)")'
    return [
        Alert(
            "QueueWaitOverBudget",
            with_runbook(expr, "QueueWaitOverBudget", m.CLUSTER_QUEUE, m.CLUSTER_QUEUE_RUNBOOK),
            "warning",
            "ClusterQueue {{ $labels.cluster_queue }} waits {{ $value | humanizeDuration }} "
            "for admission",
            "Workloads of team {{ $labels.team }} admitted through ClusterQueue "
            "{{ $labels.cluster_queue }} (pools {{ $labels.pool }}) waited "
            "{{ $value | humanizeDuration }} (90th percentile over 30 minutes), over its wait "
            "budget: the queue's waitBudgetMinutes, else the smallest "
            "acceptance.maxQueueWaitMinutes of its pools.",
            for_=QUEUE_WAIT_FOR,
        ),
    ]


def acceptance_alerts() -> list[Alert]:
    """The acceptance suites' last checkpoint figures against the pool's acceptance
    thresholds (only pools that set them have a threshold series, so only they alert)."""
    write = m.ARGO_METRIC_PREFIX + m.CHECKPOINT_WRITE_GBPS_METRIC
    restore = m.ARGO_METRIC_PREFIX + m.CHECKPOINT_RESTORE_SECONDS_METRIC
    slow_write = f"{write} < on ({m.POOL}) group_left () {m.POOL_ACCEPTANCE_CHECKPOINT_WRITE_GBPS}"
    slow_restore = f"{restore} > on ({m.POOL}) group_left () {m.POOL_ACCEPTANCE_RESTORE_SECONDS}"
    return [
        Alert(
            "CheckpointSlowerThanAcceptance",
            with_runbook(slow_write, "CheckpointSlowerThanAcceptance"),
            "warning",
            "Checkpoints on pool {{ $labels.pool }} write at {{ $value }} GB/s",
            "The last {{ $labels.suite }} run on pool {{ $labels.pool }} wrote its checkpoint at "
            "{{ $value }} GB/s, below the pool's acceptance.checkpointWriteGBps.",
            team=m.PLATFORM_TEAM,
        ),
        Alert(
            "RestoreSlowerThanAcceptance",
            with_runbook(slow_restore, "RestoreSlowerThanAcceptance"),
            "warning",
            "Checkpoint restore on pool {{ $labels.pool }} took {{ $value }} s",
            "The last {{ $labels.suite }} run on pool {{ $labels.pool }} restored its checkpoint "
            "in {{ $value }} s, more than the pool's acceptance.restoreSeconds.",
            team=m.PLATFORM_TEAM,
        ),
    ]


SLO_ALERT = "EndpointSLOBurn"


def slo_alerts(view: ClusterView) -> list[Alert]:
    """EndpointSLOBurn: one rule per endpoint whose SLO can be counted (its bound a bucket of
    the server's histogram), naming the team, endpoint and pool."""
    found: list[Alert] = []
    for served in view.endpoints():
        expr = endpoint_rules.burn_expr(served)
        if expr is None:
            continue
        slo = served.endpoint.slo
        objective = f"95% of requests within {slo.text} ({slo.metric})"
        found.append(
            Alert(
                SLO_ALERT,
                with_runbook(expr, SLO_ALERT),
                "critical",
                "Endpoint {{ $labels.namespace }}/{{ $labels.endpoint }} of team "
                "{{ $labels.team }} (pool {{ $labels.pool }}) burns its SLO budget "
                '{{ $value | printf "%.1f" }} times too fast',
                "Endpoint {{ $labels.endpoint }} ({{ $labels.server }}, namespace "
                "{{ $labels.namespace }}, team {{ $labels.team }}, pool {{ $labels.pool }}) "
                f"misses its objective, {objective}: its error budget of 5% burns "
                '{{ $value | printf "%.1f" }} times faster than the objective allows '
                "(1h and 5m over 14.4 times, or 6h and 30m over 6 times).",
                extra=(("endpoint", served.name), ("slo", slo.text)),
            )
        )
    return found


def groups(view: ClusterView) -> list[dict[str, Any]]:
    found: list[tuple[str, list[Alert]]] = [
        ("gpuplane.alerts.usage", [*idle_alerts(view), *usage_alerts()]),
        ("gpuplane.alerts.gpus", gpu_alerts()),
        ("gpuplane.alerts.nodes", node_alerts()),
    ]
    if uses_kueue(view):
        found.append(("gpuplane.alerts.queues", queue_alerts()))
    found.append(("gpuplane.alerts.acceptance", acceptance_alerts()))
    serving = slo_alerts(view)
    if serving:
        found.append(("gpuplane.alerts.serving", serving))
    return [{"name": n, "rules": [a.rule(view) for a in alerts]} for n, alerts in found]


def render(view: ClusterView) -> Iterator[Output]:
    addon = view.cluster.addons[PROMETHEUS_ADDON]
    yield Manifest(LAYER, prometheus_rule(view, NAME, groups(view)), addon.origin.location)
