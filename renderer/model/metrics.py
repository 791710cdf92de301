"""The series contract between the observability layer and `gpuplane cost`.

The layer's recording rules (`renderer.layers.observability.rules`) write these series into each
cluster's Prometheus; `gpuplane cost` reads a usage export of them, and the financial dashboard
plots them. One list of names, so the two sides cannot drift. docs/observability.md says where
each input series comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from renderer.model.choices import AcceptedUnit

# --- the labels every gpuplane series carries ---------------------------------------------------

CLUSTER = "cluster"
TEAM = "team"
COST_CENTER = "cost_center"
POOL = "pool"
ACCELERATOR = "accelerator"
SHARING = "sharing"
PURPOSE = "purpose"
QUEUE = "queue"
CLUSTER_QUEUE = "cluster_queue"
NAMESPACE = "namespace"
POD = "pod"
CURRENCY = "currency"
RUNBOOK = "runbook"

# --- recording rules ----------------------------------------------------------------------------

POD_GPUS_ALLOCATED = "gpuplane:pod:gpus_allocated"
"""Physical-GPU equivalents a pod holds now (a MIG slice by its share of compute slices, a
time-sliced or MPS replica by 1/replicas), labelled namespace, pod, team, cost_center, pool."""
POD_GPUS_BUSY = "gpuplane:pod:gpus_busy"
"""The same equivalents weighted by how busy each GPU is (0..1)."""
POD_FAILED = "gpuplane:pod:failed"
"""1 while a pod is in phase Failed (kube-state-metrics), labelled namespace, pod."""
TEAM_POOL_GPUS_ALLOCATED = "gpuplane:team_pool:gpus_allocated"
"""`POD_GPUS_ALLOCATED` summed by team, cost_center and pool."""
TEAM_POOL_GPUS_BUSY = "gpuplane:team_pool:gpus_busy"
"""`POD_GPUS_BUSY` summed by team, cost_center and pool."""
POOL_GPU_HOUR_COST = "gpuplane:pool:gpu_hour_cost"
"""A constant per pool: its `cost.gpuHour`, labelled pool and currency."""

EXPORT_STEP_SECONDS = 300
"""The step of the usage export's subqueries: samples every 5 minutes, each worth 5/60 hour."""

# Added with the recording rules (renderer/layers/observability/recording.py, info.py):
MIG_PROFILE = "mig_profile"
"""The label of `POOL_GPU_WEIGHT` that matches dcgm-exporter's `GPU_I_PROFILE` (absent: a GPU
that is not sliced by MIG)."""
POOLS = "pools"
"""A ClusterQueue's pools, joined with `,` (on `CLUSTER_QUEUE_INFO`)."""
PLATFORM_TEAM = "platform"
"""The `team` (and `cost_center`) of a namespace no gpuplane team owns, and of alerts on a GPU or
node no team holds."""

POOL_INFO = "gpuplane:pool:info"
"""1 per pool, labelled pool, accelerator, sharing, workload."""
POOL_GPU_WEIGHT = "gpuplane:pool:gpu_weight"
"""Physical-GPU equivalents one DCGM device series of the pool stands for: 1 for a whole GPU,
1/replicas on time-sliced and MPS pools, compute slices / the GPU's compute slices for a MIG
instance (labelled `mig_profile`)."""
POOL_RUNBOOK = "gpuplane:pool:runbook"
"""1 per pool, labelled `runbook`: the page its alerts link to (before the `#anchor`)."""
POOL_ALERT_IDLE_BUSY_RATIO = "gpuplane:pool:alert_idle_busy_ratio"
"""`alerts.idleBusyPercent` / 100."""
POOL_ALERT_IDLE_SECONDS = "gpuplane:pool:alert_idle_seconds"
"""`alerts.idleMinutes` * 60."""
POOL_ALERT_MAX_TEMPERATURE = "gpuplane:pool:alert_max_temperature_celsius"
"""`alerts.maxTemperatureCelsius`."""
POOL_ALERT_FAILED_RUN_GPU_HOURS = "gpuplane:pool:alert_failed_run_gpu_hours"
"""`alerts.failedRunGpuHours`."""
POOL_ACCEPTANCE_RESTORE_SECONDS = "gpuplane:pool:acceptance_restore_seconds"
"""`acceptance.restoreSeconds`, only for pools that set it."""
POOL_ACCEPTANCE_CHECKPOINT_WRITE_GBPS = "gpuplane:pool:acceptance_checkpoint_write_gbps"
"""`acceptance.checkpointWriteGBps`, only for pools that set it."""
POOL_GPUS_ALLOCATED = "gpuplane:pool:gpus_allocated"
"""`POD_GPUS_ALLOCATED` summed by pool."""
POOL_GPUS_PRESENT = "gpuplane:pool:gpus_present"
"""Physical GPUs the pool's dcgm-exporters report (distinct node and gpu index)."""
CLUSTER_QUEUE_INFO = "gpuplane:cluster_queue:info"
"""1 per ClusterQueue, labelled cluster_queue, team, cost_center, purpose, queue, pools."""
CLUSTER_QUEUE_RUNBOOK = "gpuplane:cluster_queue:runbook"
"""1 per ClusterQueue, labelled `runbook`: the first of its pools' runbooks, else the default."""
CLUSTER_QUEUE_WAIT_BUDGET = "gpuplane:cluster_queue:wait_budget_seconds"
"""The queue-wait budget of a ClusterQueue, in seconds."""
NAMESPACE_INFO = "gpuplane:namespace:info"
"""1 per namespace, labelled team, cost_center, purpose (kube-state-metrics' namespace labels)."""
NODE_INFO = "gpuplane:node:info"
"""1 per node of a gpuplane pool, labelled pool, accelerator (kube-state-metrics' node labels)."""
GPU_BUSY_RATIO = "gpuplane:gpu:busy_ratio"
"""0..1 per DCGM device series: DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL / 100."""
POD_BUSY_RATIO = "gpuplane:pod:busy_ratio"
"""`POD_GPUS_BUSY` / `POD_GPUS_ALLOCATED`: how busy the GPUs a pod holds are, 0..1."""
POD_FAILED_GPU_HOURS = "gpuplane:pod:failed_gpu_hours"
"""GPU-hours a pod now in phase Failed held over the last 7 days (samples every 5 minutes)."""
TEAM_POOL_FAILED_GPU_HOURS = "gpuplane:team_pool:failed_gpu_hours"
"""`POD_FAILED_GPU_HOURS` summed by team, cost_center and pool."""
CLUSTER_QUEUE_ADMISSION_WAIT_P90 = "gpuplane:cluster_queue:admission_wait_seconds:p90_30m"
"""Kueue's admission wait time, 90th percentile over 30 minutes, per ClusterQueue."""
CLUSTER_QUEUE_PENDING = "gpuplane:cluster_queue:pending_workloads"
"""Kueue's pending workloads per ClusterQueue and `status` (active, inadmissible)."""
CLUSTER_QUEUE_ADMITTED_ACTIVE = "gpuplane:cluster_queue:admitted_active_workloads"
"""Kueue's admitted, active workloads per ClusterQueue."""
CLUSTER_QUEUE_PREEMPTIONS = "gpuplane:cluster_queue:preempted_workloads:increase1h"
"""Workloads the ClusterQueue preempted over the last hour, per `reason`."""
CLUSTER_QUEUE_POOL_USAGE = "gpuplane:cluster_queue_pool:resource_usage"
"""Kueue's resource usage per ClusterQueue, pool (flavor) and resource."""
TEAM_POOL_QUOTA_RESERVED = "gpuplane:team_pool:quota_reserved"
"""Kueue's reservations in a team's Cohort (all its ClusterQueues), per pool and resource."""
TEAM_POOL_NOMINAL = "gpuplane:team_pool:nominal_quota"
"""Kueue's subtree quota of a team's Cohort (the team's nominal), per pool and resource."""
TEAM_POOL_QUOTA_USAGE_RATIO = "gpuplane:team_pool:nominal_quota_usage_ratio"
"""Reservations / nominal quota of a team, where the nominal is above 0 (above 1: borrowing)."""

ARGO_METRIC_PREFIX = "argo_workflows_"
"""What Argo Workflows v4 puts before a custom metric's name (its controller's Prometheus
exporter namespace, `argo_workflows`, in workflow/controller/controller.go)."""
CHECKPOINT_WRITE_GBPS_METRIC = "gpuplane_checkpoint_write_gbps"
"""The acceptance suites' gauge of the last checkpoint write rate, labelled cluster, pool, suite."""
CHECKPOINT_RESTORE_SECONDS_METRIC = "gpuplane_checkpoint_restore_seconds"
"""The acceptance suites' gauge of the last checkpoint restore time, labelled like the above."""

# --- inputs the layer reads ---------------------------------------------------------------------

ALERT_DEFAULTS: Mapping[str, int | float] = MappingProxyType(
    {
        "idleMinutes": 30,
        "idleBusyPercent": 5,
        "maxTemperatureCelsius": 85,
        "failedRunGpuHours": 8,
    }
)
"""A pool's alert thresholds where its `spec.alerts` is silent (the schema's defaults)."""

DEFAULT_QUEUE_WAIT_MINUTES = 60
"""The queue-wait budget of a ClusterQueue when neither its queue nor its pools give one."""

ACCEPTED_UNITS: Mapping[AcceptedUnit, str] = MappingProxyType(
    {
        "completed-training-runs": "completed training run",
        "accepted-model-outputs": "accepted model output",
        "requests-served": "request served",
    }
)
"""A team's `acceptedUnit.kind`, and how one unit reads in a sentence."""
DEFAULT_ACCEPTED_UNIT: AcceptedUnit = "completed-training-runs"
