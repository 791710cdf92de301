"""The static series of the recording rules: what the model knows and Prometheus does not.

Each is one rule, `expr: vector(<number>)` with the series' labels as rule labels: the pools
(accelerator, sharing, workload, GPU-hour rate, the weight of one device series, alert
thresholds, the runbook), the ClusterQueues (team, cost centre, purpose, queue, pools, wait
budget) to join Kueue's series on, which carry no team. Recording-rule labels are not templated
by Prometheus (rules/recording.go sets them as they are, unlike an alerting rule's), so a
runbook URL or any other value from an input file is inert here. Numbers are Python's `repr` of
the float: exact, and the same on every machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from renderer.model import catalog
from renderer.model import metrics as m
from renderer.model.choices import TIME_SHARED
from renderer.model.names import SUITE_COST_CENTER
from renderer.model.platform import Pool
from renderer.model.queue_plans import cluster_queues
from renderer.model.view import ClusterView
from workflows.suites import placement

RUNBOOK_PAGE = "docs/runbooks.md"
"""The runbooks of this repository, one section per alert (anchor: the alert's name in lower
case)."""

ACCEPTANCE_PURPOSE = "acceptance"
"""The `purpose` of the platform's acceptance ClusterQueues (`<queue>-acceptance`)."""


def number(value: float) -> str:
    """A number as PromQL reads it: Python's repr of the float (`0.05`, `1800.0`,
    `0.14285714285714285`), never locale-dependent, never rounded."""
    return repr(float(value))


def record(view: ClusterView, name: str, expr: str, **labels: str) -> dict[str, object]:
    """One recording rule; every one carries the static `cluster` label."""
    return {"record": name, "expr": expr, "labels": {m.CLUSTER: view.cluster.name, **labels}}


def default_runbook(view: ClusterView) -> str:
    """`docs/runbooks.md` at the revision Argo CD syncs, when gpuplane.yaml names an https
    repository (GitHub's and Gitea's `blob` path), else the page's path in the repository."""
    repository = view.platform.repository
    if repository is None or not repository.repo_url.startswith("https://"):
        return RUNBOOK_PAGE
    base = repository.repo_url.removesuffix(".git").rstrip("/")
    return f"{base}/blob/{repository.target_revision}/{RUNBOOK_PAGE}"


def pool_runbook(view: ClusterView, pool: Pool) -> str:
    runbook = pool.alerts.get("runbook")
    return str(runbook) if runbook else default_runbook(view)


def gpu_weights(pool: Pool) -> list[tuple[str | None, float]]:
    """(MIG profile or None, physical-GPU equivalents) of one DCGM device series on the pool.

    A whole GPU is 1; a time-sliced or MPS replica 1/replicas (dcgm-exporter repeats a shared
    GPU's series for each pod on it); a MIG instance its compute slices over the GPU's, from
    the catalog, for every profile the accelerator has (a node relabelled to another layout
    still counts), and 1 for a GPU of the pool with MIG off."""
    if pool.sharing in TIME_SHARED and pool.replicas > 1:
        return [(None, 1 / pool.replicas)]
    weights: list[tuple[str | None, float]] = [(None, 1.0)]
    accelerator = catalog.accelerator(pool.accelerator)
    if pool.sharing == "mig" and accelerator is not None and accelerator.compute_slices:
        for name in sorted(accelerator.mig_profiles):
            slices = accelerator.mig_profiles[name].compute_slices
            weights.append((name, slices / accelerator.compute_slices))
    return weights


def pool_rules(view: ClusterView) -> list[dict[str, object]]:
    rules: list[dict[str, object]] = []
    for pool in view.pools:
        at = {m.POOL: pool.name}
        rules.append(
            record(
                view,
                m.POOL_INFO,
                "vector(1)",
                **at,
                accelerator=pool.accelerator,
                sharing=pool.sharing,
                workload=pool.workload,
            )
        )
        rules.append(
            record(
                view,
                m.POOL_GPU_HOUR_COST,
                f"vector({number(pool.gpu_hour)})",
                **at,
                currency=pool.currency,
            )
        )
        for profile, weight in gpu_weights(pool):
            labels = dict(at) if profile is None else {**at, m.MIG_PROFILE: profile}
            rules.append(record(view, m.POOL_GPU_WEIGHT, f"vector({number(weight)})", **labels))
        rules.append(
            record(view, m.POOL_RUNBOOK, "vector(1)", **at, runbook=pool_runbook(view, pool))
        )
        alerts = pool.alerts
        thresholds: list[tuple[str, float]] = [
            (m.POOL_ALERT_IDLE_BUSY_RATIO, float(alerts["idleBusyPercent"]) / 100),
            (m.POOL_ALERT_IDLE_SECONDS, float(alerts["idleMinutes"]) * 60),
            (m.POOL_ALERT_MAX_TEMPERATURE, float(alerts["maxTemperatureCelsius"])),
            (m.POOL_ALERT_FAILED_RUN_GPU_HOURS, float(alerts["failedRunGpuHours"])),
        ]
        for key, name in (
            ("restoreSeconds", m.POOL_ACCEPTANCE_RESTORE_SECONDS),
            ("checkpointWriteGBps", m.POOL_ACCEPTANCE_CHECKPOINT_WRITE_GBPS),
        ):
            if key in pool.acceptance:
                thresholds.append((name, float(pool.acceptance[key])))
        for name, value in thresholds:
            rules.append(record(view, name, f"vector({number(value)})", **at))
    # A GPU whose node carries no pool label: the default runbook and temperature limit, so its
    # health alerts still fire (with no `pool`).
    rules.append(record(view, m.POOL_RUNBOOK, "vector(1)", runbook=default_runbook(view)))
    default_temperature = number(float(m.ALERT_DEFAULTS["maxTemperatureCelsius"]))
    rules.append(record(view, m.POOL_ALERT_MAX_TEMPERATURE, f"vector({default_temperature})"))
    return rules


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """A ClusterQueue as the info series describe it."""

    name: str
    team: str
    cost_center: str
    purpose: str
    queue: str
    pools: tuple[str, ...]
    wait_budget_minutes: float
    runbook: str


def _wait_budget(view: ClusterView, own: float | None, pools: tuple[str, ...]) -> float:
    """The queue's `waitBudgetMinutes`, else the smallest `acceptance.maxQueueWaitMinutes` of
    the ClusterQueue's pools, else `DEFAULT_QUEUE_WAIT_MINUTES`."""
    if own is not None:
        return float(own)
    by_name = {p.name: p for p in view.pools}
    given = [
        float(by_name[p].acceptance["maxQueueWaitMinutes"])
        for p in pools
        if p in by_name and "maxQueueWaitMinutes" in by_name[p].acceptance
    ]
    return min(given) if given else float(m.DEFAULT_QUEUE_WAIT_MINUTES)


def _queue_runbook(view: ClusterView, pools: tuple[str, ...]) -> str:
    """The first of the ClusterQueue's pools (by name) that names a runbook, else the default."""
    by_name = {p.name: p for p in view.pools}
    for name in sorted(pools):
        pool = by_name.get(name)
        if pool is not None and pool.alerts.get("runbook"):
            return str(pool.alerts["runbook"])
    return default_runbook(view)


def queue_infos(view: ClusterView) -> tuple[QueueInfo, ...]:
    """The teams' ClusterQueues (`<team>-<purpose>`), then the platform's acceptance ones
    (`<queue>-acceptance`, team `platform`), by name."""
    found: dict[str, QueueInfo] = {}
    for plan in cluster_queues(view):
        pools = tuple(sorted(f.pool.name for f in plan.flavors))
        found[plan.name] = QueueInfo(
            plan.name,
            plan.team.name,
            plan.team.cost_center,
            plan.purpose,
            plan.queue.name,
            pools,
            _wait_budget(view, plan.queue.wait_budget_minutes, pools),
            _queue_runbook(view, pools),
        )
    suites: dict[str, list[placement.Target]] = {}
    for target in placement.targets(view):
        suites.setdefault(target.cluster_queue, []).append(target)
    for name, targets in suites.items():
        if name in found:
            continue
        pools = tuple(sorted(t.pool.name for t in targets))
        queue = targets[0].queue
        found[name] = QueueInfo(
            name,
            m.PLATFORM_TEAM,
            SUITE_COST_CENTER,
            ACCEPTANCE_PURPOSE,
            queue.name,
            pools,
            _wait_budget(view, queue.wait_budget_minutes, pools),
            _queue_runbook(view, pools),
        )
    return tuple(found[n] for n in sorted(found))


def queue_rules(view: ClusterView) -> list[dict[str, object]]:
    rules: list[dict[str, object]] = []
    for info in queue_infos(view):
        at = {m.CLUSTER_QUEUE: info.name}
        labels: Mapping[str, str] = {
            **at,
            m.TEAM: info.team,
            m.COST_CENTER: info.cost_center,
            m.PURPOSE: info.purpose,
            m.QUEUE: info.queue,
            m.POOLS: ",".join(info.pools),
        }
        rules.append(record(view, m.CLUSTER_QUEUE_INFO, "vector(1)", **labels))
        rules.append(record(view, m.CLUSTER_QUEUE_RUNBOOK, "vector(1)", **at, runbook=info.runbook))
        seconds = number(info.wait_budget_minutes * 60)
        rules.append(record(view, m.CLUSTER_QUEUE_WAIT_BUDGET, f"vector({seconds})", **at))
    return rules
