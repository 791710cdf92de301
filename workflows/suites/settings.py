"""The names, images, labels and timings the suites share, in one place: the templates, the
Jobs, the scripts and the scheduled runs all read them, so a default changes here only.
"""

from __future__ import annotations

from dataclasses import dataclass

from renderer.model import metrics
from renderer.model.names import SUITE_JOBS_NAMESPACE, SUITE_NAMESPACE

NAMESPACE = SUITE_NAMESPACE
"""Where the Workflows run and the results ConfigMaps are kept."""
JOBS_NAMESPACE = SUITE_JOBS_NAMESPACE
"""Where the probe Jobs run (Kueue admits them there, and leaves the Workflows' pods alone)."""
SERVICE_ACCOUNT = "gpuplane-acceptance"

SUITE_IMAGE = "registry.example.com/base/gpuplane-acceptance:v0.1.0"
"""The default of every template's `image` parameter: what images/acceptance/Containerfile
builds (docs/acceptance-image.md): this repository installed from its wheel with the `probes` and
`s3` extras (PyTorch's CUDA build, torchrun, boto3), bash, uid/gid 1000 and the dataset sample at
DATASET_FALLBACK. .github/workflows/acceptance-image.yml pushes it from main as
`gpuplane-acceptance:v<project version>` to the platform's registry; `registry.example.com/base/`
stands for that registry, a prefix every example team admits. Never `latest`."""

PROBE_PACKAGE = "/opt/gpuplane-probes"
"""Where the suite image holds the probe package on its own (images/acceptance/Containerfile):
`workflows/__init__.py` and `workflows/probes/`, the standard library and torch its only
imports. The init container of a torch step copies `workflows/` from here into the pod."""
PROBE_COPY = "/gpuplane-probes"
"""Where the copy lives in a torch step's pod (an emptyDir): the probe container's PYTHONPATH,
so the production image's own `python3` imports the probes from it."""
PRODUCTION_PROBES = frozenset({"training", "allreduce", "checkpoint", "nodes"})
"""The torch probes: a step whose probes are all of these runs in the pool's production image
(the `production-image` parameter); the others (staging, storage, inference: boto3 and the
HTTP client, no torch) stay in the suite image."""

SERVER_IMAGE = "registry.example.com/base/vllm-openai:v0.8.5"
"""The default `server-image` of inference pools: an OpenAI-compatible server (vLLM's image,
mirrored) that step 4 runs beside the inference probe, serving the staged base weights."""

KUBECTL_REPOSITORY = "registry.k8s.io/kubectl"
"""The official kubectl image (it has no shell: every kubectl step is one kubectl command),
pinned to the cluster's Kubernetes minor (`v<minor>.0`), the client matching its API server."""

DATASET_PREFIX = "gpuplane-acceptance"
"""Under the cluster's object store: `data/` (a dataset sample) and `model/` (base weights in
Hugging Face layout), which step 2 stages. The `dataset` parameter overrides the location."""
OBJECT_STORE_SECRET = "gpuplane-object-store"
"""A Secret the platform may put in the Jobs' namespace (External Secrets, Vault, or by hand):
its keys become the probe's environment, so `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
`AWS_ENDPOINT_URL` (an on-prem S3 gateway) reach boto3 without anything secret being rendered.
Optional: on EKS the pod's service account (IRSA) or the node's role serve instead."""
DATASET_FALLBACK = "file:///opt/gpuplane-acceptance"
"""The `dataset` default of a cluster without an object store: the sample the suite image's build
writes with `python -m workflows.probes sample` (`data/`, synthetic token shards; `model/`, a tiny
Llama with random weights). It exercises staging and the serving path; its figures say nothing
about real data or weights (docs/acceptance-image.md)."""

WINDOW_SECONDS = 600
"""The fixed training window of step 4, in the templates and the CronWorkflow."""
HOOK_WINDOW_SECONDS = 120
"""The PostSync hook's window: Argo CD waits for the hook, so it runs the same steps, shorter."""
SMOKE_SECONDS = 60
"""Step 1's queued training job trains for this long."""
INFERENCE_REQUESTS = 200
ALLREDUCE_MAX_BYTES = "1G"
"""The largest all-reduce of the sweep: bus bandwidth peaks only with large messages."""

STORAGE_WORKERS = 8
"""Workers per pod of `concurrent-storage` (half write, half read, at once)."""
STAGING_WORKERS = 8
"""Concurrent downloads of `object-store`."""
RESERVE_SECONDS = 30 * 60
"""How long the window's `reserve` step waits for the pool's pods to be evicted (PodDisruption
Budgets may hold an eviction back) before it fails, and the run with it."""
WINDOW_REPORT_SECONDS = 30 * 60
"""In the window run, the time kept for export and report after the last step's deadline."""
WINDOW_STEP_MIN_SECONDS = 5 * 60
"""The shortest wait on a Job in the window, however short the window (a window too short for
its steps then fails them as not finished in time)."""
RELEASE_SECONDS = 10 * 60
"""The window's end kept for the exit handler: the run's deadline is the window's hours less
this, and `release` (which Argo runs after the deadline too) must be done within it."""

CRON_SCHEDULE = "0 3 * * 6"
"""Saturdays at 03:00 UTC: weekly, outside working hours."""
DEADLINE_SECONDS = 9 * 3600
"""Workflows, and every Job they create, stop after this, whatever the queue does."""
RESUME_STEPS = 3
"""Training steps step 5 resumes from the restored checkpoint and compares with the writer's (both
phases get it: the writer records that many). Above 0, or the report fails the step; from the
third step on, a lost optimizer state is unmistakable. The benchmarks' checkpoint resumes as many."""
STEP_DEADLINE_SECONDS = 50 * 60
"""How long the Workflow waits on one Job (queue wait included), and on step 5's replacement:
a Job Kueue never admits fails its step instead of spending the Workflow's whole deadline, so
export and report still run. Eight steps and a restore fit in DEADLINE_SECONDS with an hour to
spare (a test checks it). In the window (no queue wait: the quota is the run's) each wait gets
an equal share of the window instead (`program.step_deadline_seconds`)."""
INTERRUPT_WAIT_SECONDS = 3600
"""How long step 5's first pod, its checkpoint written, waits for the Workflow to delete it."""
JOB_TTL_SECONDS = 24 * 3600
"""Finished Jobs the clean-up missed disappear after this (`ttlSecondsAfterFinished`)."""
WORKFLOW_SUCCESS_TTL_SECONDS = 24 * 3600
"""A Workflow that succeeded is deleted this long after it ended (`ttlStrategy`)."""
WORKFLOW_TTL_SECONDS = 7 * 24 * 3600
"""A finished Workflow, with the pods it kept, is deleted this long after it ended (Argo's
`ttlStrategy`): a week, so a failed weekly run is there to read until the next one. The
results outlive it, in the results ConfigMaps."""
POD_GC_DELAY = "1h"
"""Argo deletes each pod of a Workflow this long after the pod completed (`podGC`
OnPodCompletion, `deleteDelayDuration`): long enough to read a failed pod's log, short enough
that no pod lingers for the Workflow's whole TTL."""
HISTORY_LIMIT = 4
"""The CronWorkflow's finished runs kept, successful and failed each."""
SERVER_START_SECONDS = 1800
"""How long the inference probe waits for its server to load the model (`--wait-seconds`) before
it fails. The probe waits, not a startupProbe on the server: a sidecar's failing startupProbe
only restarts it, and holds the pod un-Ready, so Kueue's waitForPodsReady would evict and requeue
the Job again and again instead of the step failing once."""
WORKSPACE_SIZE = "100Gi"
MASTER_PORT = 29500
SERVER_PORT = 8000
SERVED_MODEL = "acceptance"

WORKSPACE = "/workspace"
RESULTS_DIR = "/tmp/gpuplane-results"
EXPORT_DIR = "/tmp/results"
PLATFORM_DIR = "/platform"
RESULT_PREFIX = "gpuplane-result"
LOG_TAIL = 50
"""The lines of a pod's log a step keeps: the results come last, and Argo passes each log on to
the export step as an environment variable, which the kernel caps at 128 KiB."""

RUN_LABEL = "gpuplane.dev/acceptance-run"
POOL_LABEL = "gpuplane.dev/acceptance"
STEP_LABEL = "gpuplane.dev/acceptance-step"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
QUEUE_WAIT_LABEL = "gpuplane.dev/queue-wait-seconds"
GPUS_LABEL = "gpuplane.dev/gpus"
IMAGE_DIGEST_LABEL = "gpuplane.dev/image-digest"
IMAGE_NAMESPACE_LABEL = "gpuplane.dev/image-namespace"
"""On a run in a team namespace's own production image: the namespace (the template's
`image-namespace` parameter; empty on the pool's own runs). It labels the Jobs, so a step reads
its own run's pods, and the results, which that run publishes apart."""

RUN = "{{workflow.uid}}"
"""Every object a run creates carries it (with the pool), so the clean-up finds exactly them."""

GUIDE_STEPS: tuple[tuple[str, str], ...] = (
    ("submit", "submit a queued training job through a LocalQueue of the pool's cohort"),
    ("stage", "pull the dataset sample and base weights, timed"),
    ("allreduce", "run the multi-node communication benchmark"),
    ("train", "train for a fixed window"),
    (
        "checkpoint",
        "write a checkpoint, delete the pod, restore and resume training in its replacement",
    ),
    ("export", "export the GPU, network, storage, queue and cost labels with the results"),
    ("report", "compare useful work with the rental or API baseline"),
)
"""The guide's seven steps, as the acceptance DAG's task names, in order."""


@dataclass(frozen=True, slots=True)
class SuiteGauge:
    """A figure of a probe's result that the export step publishes as an Argo Workflows custom
    metric (a gauge labelled cluster, pool and suite, which Argo's controller names
    `argo_workflows_<metric>`); the observability layer's alerts compare it with the pool's
    acceptance threshold."""

    parameter: str
    """The export step's output parameter, and the file the figure is written to."""
    probe: str
    field: str
    """The key of the probe's `metrics`."""
    metric: str
    help: str


SUITE_GAUGES: tuple[SuiteGauge, ...] = (
    SuiteGauge(
        "checkpoint-write-gbps",
        "checkpoint",
        "writeGBps",
        metrics.CHECKPOINT_WRITE_GBPS_METRIC,
        "GB/s at which the suite's last checkpoint probe wrote its checkpoint",
    ),
    SuiteGauge(
        "checkpoint-restore-seconds",
        "checkpoint",
        "restoreSeconds",
        metrics.CHECKPOINT_RESTORE_SECONDS_METRIC,
        "Seconds the suite's last checkpoint probe took to restore its checkpoint",
    ),
)
