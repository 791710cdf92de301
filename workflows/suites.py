"""The acceptance and benchmark suites as Hera objects, built from one cluster's view of the
platform.

Per pool a WorkflowTemplate `acceptance-<pool>` runs the guide's seven steps in order, and one
`benchmark-<pool>` runs the benchmarks; per cluster a PostSync hook Workflow (Argo CD runs it after
every sync of the cluster's workflows Application) and a CronWorkflow run every pool's acceptance
through `templateRef`. The Workflows run in the namespace `gpuplane-acceptance`; everything that
needs a GPU is a Job the Workflow creates in a team namespace, through that namespace's LocalQueue,
so the suite is queued, admitted and preempted like any team job. How results flow and why each
choice was made: docs/acceptance-suites.md.

Hera builds templates whose references dangle without a word, so `check_references` checks every
template and templateRef name, DAG dependency and `{{…}}` reference of a built object; the
workflows layer refuses to render anything it finds.

Nothing from an input file is pasted into a script: the scripts are constants, the Job manifests
are dumped from data, and per-pool values reach the containers as arguments and environment
variables.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from hera.workflows import (
    DAG,
    Container,
    CronWorkflow,
    Env,
    GitArtifact,
    Parameter,
    RawArtifact,
    Resource,
    Suspend,
    Task,
    Workflow,
    WorkflowTemplate,
)
from hera.workflows.models import (
    Capabilities,
    IntOrString,
    PodSecurityContext,
    Quantity,
    ResourceRequirements,
    RetryStrategy,
    SeccompProfile,
    SecurityContext,
    TemplateRef,
    ValueFrom,
)

from renderer.model import quantity
from renderer.model.admission import (
    ClusterQueuePlan,
    cluster_queues,
    cohort_of,
    node_share,
    potential_available,
)
from renderer.model.capacity import Offer, quota_offer, rdma_requests
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL, gpu_memory_utilization
from renderer.model.nodes import node_labels, tolerations
from renderer.model.platform import Cluster, Namespace, Pool, Repository
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import labels as common_labels
from renderer.output.manifest import metadata

NAMESPACE = "gpuplane-acceptance"
SERVICE_ACCOUNT = "gpuplane-acceptance"

SUITE_IMAGE = "registry.example.com/base/gpuplane-acceptance:v0.1.0"
"""The default of every template's `image` parameter: what images/acceptance/Containerfile
builds (docs/acceptance-image.md): this repository installed from its wheel with the `probes` and
`s3` extras (PyTorch's CUDA build, torchrun, boto3), bash, uid/gid 1000 and the dataset sample at
DATASET_FALLBACK. .github/workflows/acceptance-image.yml pushes it from main as
`gpuplane-acceptance:v<project version>` to the platform's registry; `registry.example.com/base/`
stands for that registry, a prefix every example team admits. Never `latest`."""

SERVER_IMAGE = "registry.example.com/base/vllm-openai:v0.8.5"
"""The default `server-image` of inference pools: an OpenAI-compatible server (vLLM's image,
mirrored) that step 4 runs beside the inference probe, serving the staged base weights."""

KUBECTL_REPOSITORY = "registry.k8s.io/kubectl"
"""The official kubectl image (it has no shell: every kubectl step is one kubectl command),
pinned to the cluster's Kubernetes minor (`v<minor>.0`), the client matching its API server."""

LOCAL_QUEUE = "default"
"""The LocalQueue the queueing layer renders in every team namespace."""

DATASET_PREFIX = "gpuplane-acceptance"
"""Under the cluster's object store: `data/` (a dataset sample) and `model/` (base weights in
Hugging Face layout), which step 2 stages. The `dataset` parameter overrides the location."""
OBJECT_STORE_SECRET = "gpuplane-object-store"
"""A Secret the platform may put in each team namespace (External Secrets, Vault, or by hand):
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

CRON_SCHEDULE = "0 3 * * 6"
"""Saturdays at 03:00 UTC: weekly, outside working hours."""
DEADLINE_SECONDS = 6 * 3600
"""Workflows, and every Job they create, stop after this, whatever the queue does."""
RESUME_STEPS = 3
"""Training steps step 5 resumes from the restored checkpoint and compares with the writer's (both
phases get it: the writer records that many). Above 0, or the report fails the step; from the
third step on, a lost optimizer state is unmistakable. The benchmarks' checkpoint resumes as many."""
STEP_DEADLINE_SECONDS = 50 * 60
"""How long the Workflow waits on one Job (queue wait included), and on step 5's replacement:
a Job Kueue never admits fails its step instead of spending the Workflow's whole deadline, so
export and report still run. Five steps and a restore fit in DEADLINE_SECONDS with an hour to
spare (a test checks it)."""
INTERRUPT_WAIT_SECONDS = 3600
"""How long step 5's first pod, its checkpoint written, waits for the Workflow to delete it."""
JOB_TTL_SECONDS = 24 * 3600
"""Finished Jobs the clean-up missed disappear after this."""
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

RUN = "{{workflow.uid}}"
"""Every object a run creates carries it (with the pool), so the clean-up finds exactly them."""

GUIDE_STEPS: tuple[tuple[str, str], ...] = (
    ("submit", "submit a queued training job through the team's LocalQueue"),
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

RUNNER = """\
import json, os, subprocess, sys, time

plan = json.loads(sys.argv[1])
state = os.environ["STATE"]
os.makedirs(state, exist_ok=True)


def run(specs):
    results, status = [], 0
    for key, command, writes in specs:
        out = os.path.join(state, key + ".json")
        code = subprocess.call(command + (["--out", out] if writes else []))
        status = status or code
        if writes:
            try:
                with open(out) as f:
                    results.append([key, json.load(f)])
            except (OSError, ValueError):
                pass  # not rank 0 of a distributed probe, or the probe died: the log says
        elif code:
            results.append([key, {"ok": False, "error": "%s exited with %d" % (key, code)}])
    return results, status


def report(results, status):
    for key, result in results:
        print(RESULT_PREFIX, key, json.dumps(result, sort_keys=True), flush=True)
    sys.exit(status)


marker = os.path.join(state, "interrupt-me.json")
if "after" not in plan:
    report(*run(plan["run"]))
if not os.path.exists(marker):
    results, status = run(plan["run"])
    if status:
        report(results, status)
    with open(marker + ".tmp", "w") as f:
        json.dump(results, f)
    os.replace(marker + ".tmp", marker)
    time.sleep(int(os.environ["INTERRUPT_WAIT_SECONDS"]))
    sys.exit("the workflow did not delete this pod: nothing was restored")
with open(marker) as f:
    before = json.load(f)
after, status = run(plan["after"])
report(before + after, status)
""".replace("RESULT_PREFIX", json.dumps(RESULT_PREFIX))
"""What every suite Job's container runs: `python -m workflows.probes …` for each probe in turn,
then each result on one line of the log (`gpuplane-result <key> <json>`), where the Workflow reads
it. With `after` (step 5), the first pod runs `run`, marks the workspace and turns Ready, and
waits; the Workflow deletes it; the Job's replacement pod finds the mark and runs `after` (the
restore of what the first pod wrote, and training resumed from it), then prints both pods'
results."""

EXPORT = """\
import datetime, json, os

out = os.environ["OUT"]
os.makedirs(out, exist_ok=True)


def when(text):
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def seconds(start, end):
    return str(max(0, int((end - start).total_seconds()))) if start and end else None


for step in json.loads(os.environ["STEPS"]):
    prefix = step["step"].upper() + "_"
    found = {}
    for line in os.environ.get(prefix + "LOG", "").splitlines():
        if line.startswith(RESULT_PREFIX + " "):
            _, key, text = line.split(" ", 2)
            found[key] = json.loads(text)
    created, started, finished = (
        when(os.environ.get(prefix + part, "")) for part in ("CREATED", "STARTED", "FINISHED")
    )
    for key, probe in step["results"]:
        result = found.get(key) or {}
        if "schemaVersion" not in result:
            result = {
                "schemaVersion": 1,
                "probe": probe,
                "cluster": os.environ["CLUSTER"],
                "pool": os.environ["POOL"],
                "startedAt": os.environ.get(prefix + "STARTED") or "1970-01-01T00:00:00Z",
                "durationSeconds": 0,
                "ok": False,
                "error": result.get("error") or "the %s job printed no result" % step["step"],
                "environment": {},
                "metrics": {},
            }
        environment = result.setdefault("environment", {})
        for name, value in (
            (QUEUE_WAIT_LABEL, seconds(created, started)),
            ("gpuplane.dev/job-seconds", seconds(started, finished)),
        ):
            if value is not None:
                environment[name] = value
        with open(os.path.join(out, key + ".json"), "w") as f:
            json.dump(result, f, sort_keys=True)
""".replace("RESULT_PREFIX", json.dumps(RESULT_PREFIX)).replace(
    "QUEUE_WAIT_LABEL", json.dumps(QUEUE_WAIT_LABEL)
)
"""Step 6's first half: each expected result from the Jobs' logs (a failed result in its place
when a Job printed none), with its Job's queue wait (created to admitted: Kueue unsuspends the
Job, which sets its start time) and run time added to its `environment`, one file each."""


# --- where a pool's suite runs ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """A pool and the team queue its suite Jobs are submitted through.

    `available` is the most of `offer.resource` that queue can ever be admitted on the pool
    (Kueue's PotentialAvailable in an empty cluster), so no suite Job asks for more than that.
    """

    cluster: Cluster
    pool: Pool
    plan: ClusterQueuePlan
    namespace: Namespace
    offer: Offer
    available: int
    repository: Repository | None = None

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def priority_class(self) -> str | None:
        """The team's priority (the queue's default when the team names none)."""
        queue = self.plan.queue
        team = self.plan.team
        priority = queue.priority(team.priority) if team.priority else None
        priority = priority or queue.default_priority
        return f"{queue.name}-{priority.name}" if priority is not None else None

    @property
    def kubectl_image(self) -> str:
        return kubectl_image(self.cluster)

    @property
    def dra(self) -> bool:
        return self.offer.device_class is not None

    @property
    def unit(self) -> int:
        """The most one pod asks for: a node's whole GPUs, else one device."""
        return self.pool.gpus_per_node if self.pool.sharing == "full-gpu" else 1

    @property
    def multi_node(self) -> bool:
        return self.pool.nodes.max > 1

    @property
    def inference(self) -> bool:
        return self.pool.workload in ("online-inference", "batch-inference")

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """The suite's parameters and their defaults, in every template of the pool."""
        found = [
            ("image", SUITE_IMAGE),
            ("window-seconds", str(WINDOW_SECONDS)),
            ("dataset", dataset(self.cluster)),
        ]
        if self.inference:
            found.append(("server-image", SERVER_IMAGE))
        return tuple(found)


def kubectl_image(cluster: Cluster) -> str:
    return f"{KUBECTL_REPOSITORY}:v{cluster.kubernetes_version}.0"


def dataset(cluster: Cluster) -> str:
    if cluster.object_store:
        return f"{cluster.object_store.rstrip('/')}/{DATASET_PREFIX}"
    return DATASET_FALLBACK


def targets(view: ClusterView) -> tuple[Target, ...]:
    """Each pool of the cluster with the team queue that can hold the most of it: among the
    ClusterQueues with a quota (not only borrowing) on the pool, the one Kueue could admit the
    most units, then by name. A pool no team has quota on gets no suite: nothing could run there
    through a queue."""
    plans = cluster_queues(view)
    found: list[Target] = []
    for pool in view.pools:
        best: tuple[tuple[int, str, str], Target] | None = None
        for plan in plans:
            cohort = cohort_of(plans, plan)
            for flavor in plan.flavors:
                if flavor.pool.name != pool.name or flavor.borrow_only:
                    continue
                for quota in flavor.quotas:
                    offer = quota_offer(pool, quota)
                    if offer is None:
                        continue
                    available = int(potential_available(plan, cohort, pool.name, offer.resource))
                    key = (-available, plan.name, offer.resource)
                    if available > 0 and (best is None or key < best[0]):
                        target = Target(
                            view.cluster,
                            pool,
                            plan,
                            plan.namespaces[0],
                            offer,
                            available,
                            view.platform.repository,
                        )
                        best = (key, target)
        if best is not None:
            found.append(best[1])
    return tuple(found)


# --- the Jobs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    pods: int
    per_pod: int


@dataclass(frozen=True, slots=True)
class Probe:
    """One `python -m workflows.probes` run in a Job. `key` names its result; `distributed`
    launches it with torchrun over every GPU of every pod of the Job; `writes` is False for
    checkpoint's write phase, which writes no result."""

    key: str
    probe: str
    options: tuple[str, ...] = ()
    distributed: bool = False
    writes: bool = True
    judged: bool = True
    """Whether the report judges it: not step 1's short run, whose success is its Job's."""


@dataclass(frozen=True, slots=True)
class Step:
    """A Job of a suite: the probes it runs, on how many GPUs, whether it uses the run's
    workspace, serves a model beside the probe (inference), or has its pod deleted halfway
    (step 5: `after` runs in the replacement pod)."""

    name: str
    probes: tuple[Probe, ...]
    shape: Shape
    workspace: bool = False
    after: tuple[Probe, ...] = ()
    server: bool = False

    @property
    def results(self) -> tuple[Probe, ...]:
        return tuple(p for p in (*self.probes, *self.after) if p.writes)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.results)

    @property
    def judged(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.results if p.judged)

    @property
    def gpus(self) -> int:
        return self.shape.pods * self.shape.per_pod


ONE = Shape(1, 1)


def training_shape(target: Target) -> Shape:
    """All the queue can be admitted, in whole-node pods up to the pool's size (one device per
    pod on shared, MIG and single-device DRA pools)."""
    unit = target.unit
    if target.available >= unit:
        return Shape(min(target.pool.nodes.max, target.available // unit), unit)
    return Shape(1, 1 if target.dra else target.available)


def multi_node_shape(target: Target) -> Shape:
    """At least two pods, one per node: the communication benchmark must cross nodes."""
    shape = training_shape(target)
    if shape.pods >= 2:
        return shape
    return Shape(2, 1 if target.dra else max(1, target.available // 2))


def _ref(path: str) -> str:
    """An Argo reference, `{{path}}`."""
    return "{{" + path + "}}"


def _input(name: str) -> str:
    return _ref(f"inputs.parameters.{name}")


def _task_output(task: str, name: str) -> str:
    return _ref(f"tasks.{task}.outputs.parameters.{name}")


ALLREDUCE = Probe("allreduce", "allreduce", ("--max-bytes", ALLREDUCE_MAX_BYTES), distributed=True)
STORAGE = Probe("storage", "storage", ("--path", f"{WORKSPACE}/storage"))
CHECKPOINT_DIR = f"{WORKSPACE}/checkpoint"


def _inference_probe() -> Probe:
    return Probe(
        "inference",
        "inference",
        (
            "--endpoint",
            f"http://127.0.0.1:{SERVER_PORT}",
            "--model",
            SERVED_MODEL,
            "--requests",
            str(INFERENCE_REQUESTS),
            "--wait-seconds",
            str(SERVER_START_SECONDS),
        ),
    )


def acceptance_steps(target: Target) -> tuple[Step, ...]:
    """The Jobs of the acceptance DAG (steps 1 to 5), in order."""
    training = training_shape(target)
    steps = [
        Step(
            "submit",
            (
                Probe(
                    "submit",
                    "training",
                    ("--seconds", str(SMOKE_SECONDS)),
                    distributed=True,
                    judged=False,
                ),
            ),
            training,
        ),
        Step(
            "stage",
            (
                Probe(
                    "staging",
                    "staging",
                    ("--source", _input("dataset"), "--dest", f"{WORKSPACE}/data"),
                ),
                STORAGE,
            ),
            ONE,
            workspace=True,
        ),
    ]
    if target.multi_node:
        steps.append(Step("allreduce", (ALLREDUCE,), multi_node_shape(target)))
    if target.inference:
        steps.append(Step("train", (_inference_probe(),), ONE, workspace=True, server=True))
    else:
        window = ("--seconds", _input("window-seconds"))
        steps.append(Step("train", (Probe("training", "training", window, True),), training))
    checkpoint = ("--path", CHECKPOINT_DIR, "--resume-steps", str(RESUME_STEPS))
    steps.append(
        Step(
            "checkpoint",
            (
                Probe(
                    "checkpoint-write",
                    "checkpoint",
                    (*checkpoint, "--phase", "write"),
                    writes=False,
                ),
            ),
            ONE,
            workspace=True,
            after=(Probe("checkpoint", "checkpoint", (*checkpoint, "--phase", "restore")),),
        )
    )
    return tuple(steps)


def benchmark_steps(target: Target) -> tuple[Step, ...]:
    """The benchmark Jobs: all-reduce sweep, storage, checkpoint write, restore and resume, and for
    inference pools the latency of a served model (its weights staged by the Job before)."""
    shape = multi_node_shape(target) if target.multi_node else training_shape(target)
    steps = [
        Step("allreduce", (ALLREDUCE,), shape),
        Step("storage", (STORAGE,), ONE, workspace=True),
        Step(
            "checkpoint",
            (
                Probe(
                    "checkpoint",
                    "checkpoint",
                    ("--path", CHECKPOINT_DIR, "--resume-steps", str(RESUME_STEPS)),
                ),
            ),
            ONE,
            workspace=True,
        ),
    ]
    if target.inference:
        stage = Probe(
            "staging",
            "staging",
            ("--source", _input("dataset"), "--dest", f"{WORKSPACE}/data"),
            judged=False,
        )
        # a Job of its own before the server's: the server is a native sidecar, which must be
        # serving before the pod's main container (and so anything it would stage) starts
        steps.append(Step("stage", (stage,), ONE, workspace=True))
        steps.append(Step("inference", (_inference_probe(),), ONE, workspace=True, server=True))
    return tuple(steps)


def headless_service(target: Target) -> str:
    """The headless Service whose name is the multi-pod Jobs' subdomain: rank 0's address."""
    return _dns_label(f"acceptance-{target.name}")


def needs_service(target: Target) -> bool:
    return any(s.shape.pods > 1 for s in (*acceptance_steps(target), *benchmark_steps(target)))


def _dns_label(text: str, limit: int = 63) -> str:
    return text[:limit].rstrip("-")


def _command(target: Target, probe: Probe, shape: Shape) -> list[str]:
    nproc = shape.per_pod if target.pool.sharing == "full-gpu" else 1
    args = [probe.probe, "--cluster", target.cluster.name, "--pool", target.name, *probe.options]
    if not probe.distributed or shape.pods * nproc == 1:
        return ["python", "-m", "workflows.probes", *args]
    if shape.pods == 1:
        launch = ["torchrun", "--standalone", f"--nproc-per-node={nproc}"]
    else:
        launch = [
            "torchrun",
            f"--nnodes={shape.pods}",
            f"--nproc-per-node={nproc}",
            "--node-rank=$(JOB_COMPLETION_INDEX)",
            "--master-addr=$(MASTER_ADDR)",
            f"--master-port={MASTER_PORT}",
        ]
    return [*launch, "-m", "workflows.probes", *args]


def _host_resources(target: Target, per_pod: int) -> dict[str, str]:
    """CPU and memory for one pod: half of what its GPU share of a node holds (whole cores and
    GiB), so a pod that fits the queue's GPU quota fits its CPU and memory quota too. Nothing
    when the pool does not declare its hosts (the namespace's LimitRange defaults apply)."""
    pool = target.pool
    if pool.host_cpus is None or pool.host_memory is None:
        return {}
    share = node_share(pool, target.offer, Decimal(per_pod)) / 2
    cpus = max(Decimal(1), (Decimal(pool.host_cpus) * share).to_integral_value(ROUND_FLOOR))
    gib = quantity.parse(pool.host_memory) * share / Decimal(2**30)
    memory = max(Decimal(1), gib.to_integral_value(ROUND_FLOOR))
    return {"cpu": str(cpus), "memory": f"{memory}Gi"}


def run_labels(target: Target, step: str) -> dict[str, str]:
    return {RUN_LABEL: RUN, POOL_LABEL: target.name, STEP_LABEL: step}


def _selector(labels: Mapping[str, str]) -> str:
    """kubectl's `--selector` for objects carrying `labels` (built from `run_labels`, so it
    matches what the Jobs and their pods are labelled with)."""
    return "--selector=" + ",".join(f"{key}={value}" for key, value in labels.items())


def result_labels(target: Target) -> dict[str, str]:
    """The labels every result carries (and the results ConfigMap): the pool's node labels (GPU,
    topology, fabric), its storage class, the queue path and the cost rate."""
    pool = target.pool
    team = target.plan.team
    found = {k: v for k, v in node_labels(pool).items() if k.startswith("gpuplane.dev/")}
    found.update(
        {
            "gpuplane.dev/cluster": target.cluster.name,
            "gpuplane.dev/team": team.name,
            "gpuplane.dev/cost-center": team.cost_center,
            "gpuplane.dev/namespace": target.namespace.name,
            "gpuplane.dev/queue": target.plan.queue.name,
            "gpuplane.dev/cluster-queue": target.plan.name,
            "gpuplane.dev/local-queue": LOCAL_QUEUE,
            "gpuplane.dev/resource": target.offer.resource.replace("/", "_"),
            "gpuplane.dev/gpu-hour": _decimal_text(pool.gpu_hour),
            "gpuplane.dev/currency": pool.currency,
        }
    )
    if target.priority_class is not None:
        found["gpuplane.dev/priority-class"] = target.priority_class
    if target.cluster.shared_class:
        found["gpuplane.dev/storage-class"] = target.cluster.shared_class
    return found


def _decimal_text(value: float) -> str:
    return format(Decimal(str(value)).normalize(), "f")


def _probe_env(target: Target, step: Step) -> list[dict[str, Any]]:
    """The probes' own labels (`GPUPLANE_LABELS`, the node, the pod, the image), the runner's
    state folder, and for multi-pod Jobs rank 0's address."""
    labels = {
        **result_labels(target),
        "gpuplane.dev/step": step.name,
        GPUS_LABEL: str(step.gpus),
    }
    env: list[dict[str, Any]] = [
        {"name": "STATE", "value": f"{WORKSPACE}/{step.name}" if step.workspace else RESULTS_DIR},
        {"name": "GPUPLANE_LABELS", "value": ",".join(f"{k}={v}" for k, v in labels.items())},
        {"name": "GPUPLANE_IMAGE", "value": _input("image")},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {
            "name": "JOB_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}},
        },
    ]
    if step.shape.pods > 1:
        env.append({"name": "MASTER_ADDR", "value": f"$(JOB_NAME)-0.{headless_service(target)}"})
    if step.after:
        env.append({"name": "INTERRUPT_WAIT_SECONDS", "value": str(INTERRUPT_WAIT_SECONDS)})
    return env


def _secure_container() -> dict[str, Any]:
    """What the `restricted` Pod Security level asks of every container."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def communicates(step: Step) -> bool:
    """Whether the step's pods talk NCCL across the fabric: a Job of several pods, or a
    distributed probe (torchrun); such pods get the pool's RDMA devices (docs/rdma.md)."""
    return step.shape.pods > 1 or any(p.distributed for p in (*step.probes, *step.after))


def rdma_resources(target: Target, step: Step) -> dict[str, int]:
    """The pool's RDMA resource for one pod of a communicating step, in the pod's share of a
    node (rounded up, at least 1); nothing on a pool without `fabric.rdma` or for a step that
    does not communicate."""
    if not communicates(step):
        return {}
    share = node_share(target.pool, target.offer, Decimal(step.shape.per_pod))
    return rdma_requests(target.pool, share)


def _gpu_resources(
    target: Target, shape: Shape, rdma: Mapping[str, int] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One pod's GPU container resources (with its RDMA devices, requests equal to limits, as
    extended resources must be), and the pod's resourceClaims on a DRA pool."""
    host = _host_resources(target, shape.per_pod)
    requests: dict[str, Any] = dict(host)
    limits: dict[str, Any] = {k: v for k, v in host.items() if k == "memory"}
    pod: dict[str, Any] = {}
    resources: dict[str, Any] = {}
    if target.dra:
        claim = target.name if shape.per_pod == 1 else f"{target.name}-node"
        pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim}]
        resources["claims"] = [{"name": "gpu"}]
    else:
        requests[target.offer.resource] = shape.per_pod
        limits[target.offer.resource] = shape.per_pod
    requests.update(rdma or {})
    limits.update(rdma or {})
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources, pod


def _server(
    target: Target, mounts: list[dict[str, Any]], resources: dict[str, Any]
) -> dict[str, Any]:
    """The inference server, a native sidecar (an init container that keeps running, stopped
    when the probe is done): it starts first and loads the weights an earlier Job staged, while
    the probe waits for it to answer (SERVER_START_SECONDS). It has no probes of its own, so the
    pod is Ready for Kueue at once. On a time-shared GPU it takes only its replica's share of the
    memory, like the team's template."""
    return {
        "name": "server",
        "image": _input("server-image"),
        "restartPolicy": "Always",
        "args": [
            "--model",
            f"{WORKSPACE}/data/model",
            "--served-model-name",
            SERVED_MODEL,
            "--port",
            str(SERVER_PORT),
            "--gpu-memory-utilization",
            gpu_memory_utilization(target.pool),
        ],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": resources,
        "securityContext": _secure_container(),
        "volumeMounts": mounts,
    }


def topology_aware(target: Target) -> bool:
    """Whether Kueue places the pool's pods itself (its flavor names a Topology): it then writes
    each pod's node into a nodeSelector, packing pods smaller than a node together, so a
    required anti-affinity would leave all but one Pending until waitForPodsReady evicts the Job,
    again and again. There the suite leaves placement to Kueue (docs/acceptance-suites.md)."""
    return target.cluster.scheduler == "kueue" and bool(target.pool.topology_levels)


def job_manifest(target: Target, step: Step) -> dict[str, Any]:
    """The batch/v1 Job of one step, as the Workflow submits it to the team's namespace (Argo
    fills in the `{{…}}` parameters; the workspace claim is `{{inputs.parameters.workspace}}`)."""
    pool = target.pool
    shape = step.shape
    team = target.plan.team
    pod_labels = run_labels(target, step.name)
    labels = {
        **pod_labels,
        "gpuplane.dev/team": team.name,
        "gpuplane.dev/cost-center": team.cost_center,
        "gpuplane.dev/pool": pool.name,
    }
    pod_annotations: dict[str, str] = {}
    pod_spec: dict[str, Any] = {"restartPolicy": "Never"}
    if target.cluster.scheduler == "volcano":
        pod_spec["schedulerName"] = "volcano"
        pod_annotations["scheduling.volcano.sh/queue-name"] = target.plan.name
        if target.priority_class is not None:
            pod_spec["priorityClassName"] = target.priority_class
    else:
        labels[QUEUE_LABEL] = LOCAL_QUEUE
        if target.priority_class is not None:
            labels[PRIORITY_LABEL] = target.priority_class
    plan: dict[str, Any] = {
        "run": [[p.key, _command(target, p, shape), p.writes] for p in step.probes]
    }
    if step.after:
        plan["after"] = [[p.key, _command(target, p, shape), p.writes] for p in step.after]
    mounts: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    if step.workspace:
        mounts.append({"name": "workspace", "mountPath": WORKSPACE})
        volumes.append(
            {"name": "workspace", "persistentVolumeClaim": {"claimName": _input("workspace")}}
        )
    if any(p.distributed for p in step.probes) and shape.pods * shape.per_pod > 1:
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
    resources, claims = _gpu_resources(target, shape, rdma_resources(target, step))
    pod_spec.update(claims)
    container: dict[str, Any] = {
        "name": "probe",
        "image": _input("image"),
        "command": ["python", "-c", RUNNER],
        "args": [json.dumps(plan)],
        "env": _probe_env(target, step),
        # credentials and endpoint of the object store, where the namespace provides them
        "envFrom": [{"secretRef": {"name": OBJECT_STORE_SECRET, "optional": True}}],
    }
    if step.server:
        pod_spec["initContainers"] = [_server(target, copy.deepcopy(mounts), resources)]
    elif resources:
        container["resources"] = resources
    container["securityContext"] = _secure_container()
    if mounts:
        container["volumeMounts"] = mounts
    if step.after:
        container["readinessProbe"] = {
            "exec": {"command": ["test", "-e", f"{WORKSPACE}/{step.name}/interrupt-me.json"]},
            "periodSeconds": 10,
        }
    pod_spec.update(
        {
            "nodeSelector": {"gpuplane.dev/pool": pool.name},
            "tolerations": tolerations(pool),
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "fsGroup": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
        }
    )
    if not pod_spec["tolerations"]:
        del pod_spec["tolerations"]
    if shape.pods > 1:
        pod_spec["subdomain"] = headless_service(target)
        if shape.per_pod < target.offer.per_node and not topology_aware(target):
            # devices smaller than a node: one pod per node, or nothing crosses a node
            pod_spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": dict(pod_labels)},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
    if volumes:
        pod_spec["volumes"] = volumes
    template_meta: dict[str, Any] = {"labels": pod_labels}
    if pod_annotations:
        template_meta["annotations"] = pod_annotations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": _dns_label(f"{pool.name}-{step.name}", 57) + "-",
            "namespace": target.namespace.name,
            "labels": labels,
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": shape.pods,
            "parallelism": shape.pods,
            "backoffLimit": 1 if step.after else 0,
            "activeDeadlineSeconds": DEADLINE_SECONDS,
            "ttlSecondsAfterFinished": JOB_TTL_SECONDS,
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def workspace_manifest(target: Target) -> dict[str, Any]:
    """The run's PersistentVolumeClaim in the team namespace: the cluster's shared file system
    (ReadWriteMany) when it declares one, else the default class. Only single-pod Jobs mount it."""
    cluster = target.cluster
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany" if cluster.shared_class else "ReadWriteOnce"],
        "resources": {"requests": {"storage": WORKSPACE_SIZE}},
    }
    if cluster.shared_class:
        spec["storageClassName"] = cluster.shared_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "generateName": _dns_label(f"{target.name}-workspace", 57) + "-",
            "namespace": target.namespace.name,
            "labels": {
                **run_labels(target, "workspace"),
                "gpuplane.dev/team": target.plan.team.name,
            },
        },
        "spec": spec,
    }


# --- Hera templates ---------------------------------------------------------------------------

STEP_PARTS = ("log", "created", "started", "finished")
"""What each step's DAG outputs: its Job's log, and the Job's timestamps."""


def _params(*names: str) -> list[Parameter]:
    return [Parameter(name=n) for n in names]


def _tool_resources() -> ResourceRequirements:
    return ResourceRequirements(
        requests={"cpu": Quantity("100m"), "memory": Quantity("128Mi")},
        limits={"memory": Quantity("512Mi")},
    )


def _container_security() -> SecurityContext:
    return SecurityContext(
        allow_privilege_escalation=False, capabilities=Capabilities(drop=["ALL"])
    )


def _pod_security() -> PodSecurityContext:
    return PodSecurityContext(
        run_as_non_root=True,
        run_as_user=65532,
        run_as_group=65532,
        seccomp_profile=SeccompProfile(type="RuntimeDefault"),
    )


def _kubectl(
    target: Target,
    name: str,
    args: list[str],
    inputs: Sequence[str] = (),
    retried: bool = True,
) -> Container:
    """A step that is one kubectl command, retried (the API server may blink) unless running it
    twice would do something else the second time."""
    return Container(
        name=name,
        image=target.kubectl_image,
        command=["kubectl"],
        args=args,
        inputs=_params(*inputs),
        resources=_tool_resources(),
        security_context=_container_security(),
        retry_strategy=RetryStrategy(limit=IntOrString(2)) if retried else None,
    )


JOB_OUTPUTS = (
    ("job", "{.metadata.name}"),
    ("created", "{.metadata.creationTimestamp}"),
    ("started", "{.status.startTime}"),
)


def _suite_inputs(target: Target, step: Step | None = None) -> list[str]:
    names = [name for name, _ in target.parameters]
    if step is not None and step.workspace:
        names.append("workspace")
    return names


def _job_template(target: Target, step: Step) -> Resource:
    """Create the step's Job; done when every pod succeeded (step 5: when its pod is Ready)."""
    outputs = list(JOB_OUTPUTS)
    if step.after:
        success, failure = "status.ready > 0", "status.failed > 1"
    else:
        # completionTime is written after the last pod succeeded: read it only once it is there
        success = f"status.succeeded > {step.shape.pods - 1},status.completionTime"
        failure = "status.failed > 0"
        outputs.append(("finished", "{.status.completionTime}"))
    return Resource(
        name=f"{step.name}-job",
        action="create",
        manifest=dump(job_manifest(target, step)),
        success_condition=success,
        failure_condition=failure,
        active_deadline_seconds=STEP_DEADLINE_SECONDS,
        inputs=_params(*_suite_inputs(target, step)),
        outputs=[Parameter(name=n, value_from=ValueFrom(json_path=p)) for n, p in outputs],
    )


def staged_by(steps: Sequence[Step]) -> dict[str, str]:
    """Each server step, and the staging step before it whose weights it serves."""
    found: dict[str, str] = {}
    staged: str | None = None
    for step in steps:
        if step.server and staged is not None:
            found[step.name] = staged
        if any(p.probe == "staging" for p in step.probes):
            staged = step.name
    return found


def _ended(task: str) -> str:
    """A `depends` term true once `task` has finished, however it finished."""
    return f"{task}.Succeeded || {task}.Failed || {task}.Errored"


def _step_templates(target: Target, step: Step, gated: bool = False) -> None:
    """The Job template of a step, and the DAG that runs it (step 5: deletes its pod and waits
    for the replacement) and reads its log; the DAG outputs STEP_PARTS.

    A Job that fails does not stop the suite: the log is read whatever the Job did (a failed
    probe prints its result before it exits), and the DAG's only leaf, `done`, runs once the log
    task ended in any way, so the DAG succeeds with what it could read (an empty part where a
    task had nothing) and the next steps, export and report run; the report names every step
    that failed and fails the Workflow. Argo refuses `continueOn` in a DAG that uses `depends`,
    so the results in the `depends` expressions say it all.

    A `gated` step (a server step) takes the staging step's `finished` as input `staged` and
    creates no Job when it is empty: a server without weights would never answer. The step's
    task itself always runs (Argo v4.0.x waits forever on the outputs of a skipped task)."""
    job = _job_template(target, step)
    inputs = _suite_inputs(target, step)
    finished_from = "restore" if step.after else "job"

    def part(name: str, value: str) -> Parameter:
        return Parameter(name=name, value_from=ValueFrom(parameter=value, default=""))

    with DAG(
        name=step.name,
        inputs=_params(*inputs, *(["staged"] if gated else [])),
        outputs=[
            part("log", _ref("tasks.logs.outputs.result")),
            *(part(n, _task_output("job", n)) for n in ("created", "started")),
            part("finished", _task_output(finished_from, "finished")),
        ],
    ):
        Task(
            name="job",
            template=job.name,
            arguments={n: _input(n) for n in inputs},
            when=f"'{_input('staged')}' != ''" if gated else None,
        )
        read_after = _ended("job")
        if step.after:
            Task(
                name="interrupt",
                template="interrupt",
                arguments={"job": _task_output("job", "job")},
                depends="job.Succeeded",
            )
            Task(
                name="restore",
                template="await-job",
                arguments={"job": _task_output("job", "job")},
                depends="interrupt.Succeeded",
            )
            read_after = " || ".join(
                (
                    "job.Failed",
                    "job.Errored",
                    "interrupt.Failed",
                    "interrupt.Errored",
                    _ended("restore"),
                )
            )
        # by labels known before the Job exists: a Job that failed records no outputs, not
        # even its name
        Task(name="logs", template="logs", arguments={"step": step.name}, depends=read_after)
        # a Job that did not finish (failed, past its deadline, still queued) must not run on
        # beside the next steps: deleted once its log is read
        unfinished = ["job.Failed", "job.Errored"]
        if step.after:
            unfinished += ["interrupt.Failed", "interrupt.Errored"]
            unfinished += ["restore.Failed", "restore.Errored"]
        Task(
            name="drop",
            template="drop",
            arguments={"step": step.name},
            depends=f"({' || '.join(unfinished)}) && ({_ended('logs')})",
        )
        Task(
            name="done",
            template="done",
            depends=f"({_ended('logs')} || logs.Omitted) && ({_ended('drop')} || drop.Omitted)",
        )


def _common_templates(target: Target, kind: str, steps: Sequence[Step]) -> None:
    """The workspace, the kubectl steps, export (label, then publish) and the clean-up."""
    ns = target.namespace.name
    Resource(
        name="workspace",
        action="create",
        manifest=dump(workspace_manifest(target)),
        outputs=[Parameter(name="name", value_from=ValueFrom(json_path="{.metadata.name}"))],
    )
    _kubectl(
        target,
        "logs",
        [
            "logs",
            f"--namespace={ns}",
            _selector({**run_labels(target, _input("step")), INDEX_LABEL: "0"}),
            "--container=probe",
            f"--tail={LOG_TAIL}",
        ],
        ["step"],
    )
    Suspend(name="done", duration="0")  # no pod, no wait: the step's DAG has ended
    if any(s.after for s in steps):
        _kubectl(
            target,
            "interrupt",
            [
                "delete",
                "pod",
                f"--namespace={ns}",
                f"--selector={JOB_NAME_LABEL}={_input('job')}",
                "--wait=true",
            ],
            ["job"],
            # a second try would find the replacement pod and delete that one too
            retried=False,
        )
        Resource(
            name="await-job",
            action="get",
            manifest=dump(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": _input("job"), "namespace": ns},
                }
            ),
            success_condition="status.succeeded > 0,status.completionTime",
            failure_condition="status.failed > 1",
            active_deadline_seconds=STEP_DEADLINE_SECONDS,
            inputs=_params("job"),
            outputs=[
                Parameter(
                    name="finished", value_from=ValueFrom(json_path="{.status.completionTime}")
                )
            ],
        )
    keys = [k for s in steps for k in s.keys]
    step_inputs = [f"{s.name}-{part}" for s in steps for part in STEP_PARTS]
    Container(
        name="label",
        image=_input("image"),
        command=["python", "-c", EXPORT],
        inputs=_params("image", *step_inputs),
        env=[
            Env(name="OUT", value=EXPORT_DIR),
            Env(name="CLUSTER", value=target.cluster.name),
            Env(name="POOL", value=target.name),
            Env(
                name="STEPS",
                value=json.dumps(
                    [
                        {"step": s.name, "results": [[p.key, p.probe] for p in s.results]}
                        for s in steps
                    ]
                ),
            ),
            *(
                Env(name=f"{s.name.upper()}_{part.upper()}", value=_input(f"{s.name}-{part}"))
                for s in steps
                for part in STEP_PARTS
            ),
        ],
        outputs=[
            Parameter(name=k, value_from=ValueFrom(path=f"{EXPORT_DIR}/{k}.json")) for k in keys
        ],
        resources=_tool_resources(),
        security_context=_container_security(),
    )
    Resource(
        name="publish",
        action="apply",
        manifest=_results_configmap(target, kind, keys),
        inputs=_params(*keys),
    )
    with DAG(
        name="export",
        inputs=_params("image", *step_inputs),
        outputs=[
            Parameter(name=k, value_from=ValueFrom(parameter=_task_output("label", k)))
            for k in keys
        ],
    ):
        Task(
            name="label",
            template="label",
            arguments={n: _input(n) for n in ("image", *step_inputs)},
        )
        Task(
            name="publish",
            template="publish",
            arguments={k: _task_output("label", k) for k in keys},
            depends="label",
        )
    _kubectl(
        target,
        "drop",
        [
            "delete",
            "job",
            f"--namespace={ns}",
            _selector(run_labels(target, _input("step"))),
            "--ignore-not-found",
            "--wait=false",
        ],
        ["step"],
    )
    _kubectl(
        target,
        "cleanup",
        [
            "delete",
            "job,persistentvolumeclaim",
            f"--namespace={ns}",
            _selector({RUN_LABEL: RUN, POOL_LABEL: target.name}),
            "--ignore-not-found",
            "--wait=false",
        ],
    )


def results_configmap_name(kind: str, pool: str) -> str:
    return _dns_label(f"{kind}-{pool}", 253)


def _results_configmap(target: Target, kind: str, keys: Sequence[str]) -> str:
    """The ConfigMap `<kind>-<pool>` in the suite namespace: the latest run's results, one key
    each (a JSON line, which Argo puts into the literal block), labelled like the results."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": results_configmap_name(kind, target.name),
            "namespace": NAMESPACE,
            "labels": result_labels(target),
            "annotations": {"gpuplane.dev/workflow": _ref("workflow.name")},
        },
        "data": {f"{k}.json": _input(k) + "\n" for k in keys},
    }
    return dump(body)


def _report(target: Target, keys: Sequence[str]) -> None:
    """Step 7: `gpuplane acceptance report` on the judged results, against the pool's
    thresholds in the repository at the revision Argo CD syncs (cloned by Argo's git artifact),
    with the cost of useful work beside each figure."""
    artifacts: list[Any] = [
        RawArtifact(name=k, path=f"/results/{k}.json", data=_input(k)) for k in keys
    ]
    repository = target.repository
    if repository is not None:
        artifacts.append(
            GitArtifact(
                name="platform",
                path=PLATFORM_DIR,
                repo=repository.repo_url,
                revision=repository.target_revision,
                depth=1,
            )
        )
    Container(
        name="report",
        image=_input("image"),
        command=["gpuplane", "-C", PLATFORM_DIR, "acceptance", "report"],
        args=["--pool", target.name, *(f"/results/{k}.json" for k in keys)],
        inputs=[*_params("image", *keys), *artifacts],
        resources=_tool_resources(),
        security_context=_container_security(),
    )


def _main_dag(target: Target, name: str, steps: Sequence[Step], report: bool) -> None:
    """The entrypoint: the workspace, each step's DAG after the one before, export, report."""
    inputs = _suite_inputs(target)
    with DAG(name=name, inputs=_params(*inputs)):
        Task(name="workspace", template="workspace")
        previous = "workspace"
        gates = staged_by(steps)
        for step in steps:
            arguments = {n: _input(n) for n in inputs}
            if step.workspace:
                arguments["workspace"] = _task_output("workspace", "name")
            if step.name in gates:
                arguments["staged"] = _task_output(gates[step.name], "finished")
            Task(name=step.name, template=step.name, arguments=arguments, depends=previous)
            previous = step.name
        export_args = {"image": _input("image")}
        for step in steps:
            for part in STEP_PARTS:
                export_args[f"{step.name}-{part}"] = _task_output(step.name, part)
        Task(name="export", template="export", arguments=export_args, depends=previous)
        if report:
            keys = [k for s in steps for k in s.judged]
            Task(
                name="report",
                template="report",
                arguments={
                    "image": _input("image"),
                    **{k: _task_output("export", k) for k in keys},
                },
                depends="export",
            )


def _template(target: Target, name: str, suite: str, description: str) -> WorkflowTemplate:
    team = target.plan.team
    meta = metadata(
        name, NAMESPACE, pool=target.name, team=team.name, cost_center=team.cost_center, suite=suite
    )
    return WorkflowTemplate(
        name=name,
        namespace=NAMESPACE,
        labels=meta["labels"],
        annotations={"workflows.argoproj.io/description": description},
        entrypoint=suite,
        on_exit="cleanup",
        service_account_name=SERVICE_ACCOUNT,
        security_context=_pod_security(),
        active_deadline_seconds=DEADLINE_SECONDS,
        arguments=[Parameter(name=n, value=v) for n, v in target.parameters],
    )


def acceptance_template(target: Target) -> WorkflowTemplate:
    """`acceptance-<pool>`: the guide's seven steps as a DAG, each waiting for the one before."""
    steps = acceptance_steps(target)
    description = (
        f"Acceptance of pool {target.name}: the guide's seven steps, submitted through "
        f"LocalQueue {LOCAL_QUEUE} of namespace {target.namespace.name} "
        f"(ClusterQueue {target.plan.name})."
    )
    gates = staged_by(steps)
    with _template(target, acceptance_name(target.name), "acceptance", description) as wt:
        for step in steps:
            _step_templates(target, step, gated=step.name in gates)
        _common_templates(target, "acceptance", steps)
        _report(target, [k for s in steps for k in s.judged])
        _main_dag(target, "acceptance", steps, report=True)
    return wt


def benchmark_template(target: Target) -> WorkflowTemplate:
    """`benchmark-<pool>`: the benchmarks one after the other (they would compete for the same
    GPUs and file system otherwise), their results exported like acceptance's."""
    steps = benchmark_steps(target)
    description = (
        f"Benchmarks of pool {target.name} ({', '.join(s.name for s in steps)}), submitted "
        f"through LocalQueue {LOCAL_QUEUE} of namespace {target.namespace.name}."
    )
    gates = staged_by(steps)
    with _template(target, benchmark_name(target.name), "benchmarks", description) as wt:
        for step in steps:
            _step_templates(target, step, gated=step.name in gates)
        _common_templates(target, "benchmark", steps)
        _main_dag(target, "benchmarks", steps, report=False)
    return wt


def acceptance_name(pool: str) -> str:
    return f"acceptance-{pool}"


def benchmark_name(pool: str) -> str:
    return f"benchmark-{pool}"


HOOK_NAME = "acceptance-postsync"
CRON_NAME = "acceptance-weekly"
HOOK_ANNOTATIONS = {
    "argocd.argoproj.io/hook": "PostSync",
    "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
}


def _run_parameters(targets: Sequence[Target], window: int) -> list[tuple[str, str]]:
    """Every parameter any pool's template takes (their defaults agree on a cluster)."""
    found: dict[str, str] = {}
    for target in targets:
        for name, value in target.parameters:
            found.setdefault(name, value)
    found["window-seconds"] = str(window)
    return list(found.items())


def _runs_every_pool(targets: Sequence[Target]) -> None:
    """The templates of a Workflow that runs every pool's acceptance at once (the pools are
    separate hardware and separate quotas), then cleans up after each, however it ended."""
    names = [name for name, _ in _run_parameters(targets, 0)]
    with DAG(name="acceptance", inputs=_params(*names)):
        for target in targets:
            Task(
                name=target.name,
                template_ref=TemplateRef(name=acceptance_name(target.name), template="acceptance"),
                arguments={n: _input(n) for n in _suite_inputs(target)},
            )
    with DAG(name="cleanup"):
        for target in targets:
            Task(
                name=target.name,
                template_ref=TemplateRef(name=acceptance_name(target.name), template="cleanup"),
            )


def _run_spec(targets: Sequence[Target], window: int) -> dict[str, Any]:
    return {
        "entrypoint": "acceptance",
        "on_exit": "cleanup",
        "service_account_name": SERVICE_ACCOUNT,
        "security_context": _pod_security(),
        "active_deadline_seconds": DEADLINE_SECONDS,
        "arguments": [Parameter(name=n, value=v) for n, v in _run_parameters(targets, window)],
    }


def postsync_hook(cluster: Cluster, targets: Sequence[Target]) -> Workflow:
    """The Workflow Argo CD creates after every sync of the cluster's workflows Application,
    deleting the previous run first (a fixed name: the writer names files after it)."""
    with Workflow(
        name=HOOK_NAME,
        namespace=NAMESPACE,
        labels=common_labels(cluster=cluster.name, suite="acceptance"),
        annotations={
            **HOOK_ANNOTATIONS,
            "workflows.argoproj.io/description": (
                f"Acceptance of every pool of cluster {cluster.name} after each sync, with a "
                f"{HOOK_WINDOW_SECONDS}-second training window."
            ),
        },
        **_run_spec(targets, HOOK_WINDOW_SECONDS),
    ) as wf:
        _runs_every_pool(targets)
    return wf


def cron_workflow(cluster: Cluster, targets: Sequence[Target]) -> CronWorkflow:
    """The periodic run: every pool's acceptance with the full window, one run at a time."""
    with CronWorkflow(
        name=CRON_NAME,
        namespace=NAMESPACE,
        labels=common_labels(cluster=cluster.name, suite="acceptance"),
        annotations={
            "workflows.argoproj.io/description": (
                f"Weekly acceptance of every pool of cluster {cluster.name}."
            )
        },
        schedules=[CRON_SCHEDULE],
        timezone="UTC",
        concurrency_policy="Forbid",
        starting_deadline_seconds=3600,
        successful_jobs_history_limit=4,
        failed_jobs_history_limit=4,
        **_run_spec(targets, WINDOW_SECONDS),
    ) as cron:
        _runs_every_pool(targets)
    return cron


# --- from Hera to data ------------------------------------------------------------------------


def to_data(obj: Workflow) -> dict[str, Any]:
    """The object as Argo's YAML has it: Hera's dict, with `name` first in every mapping and the
    top level in kubectl's order (apiVersion, kind, metadata, spec)."""
    built = _name_first(obj.to_dict())
    meta = built["metadata"]
    ordered_meta = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    ordered_meta.update({k: v for k, v in meta.items() if k not in ordered_meta})
    return {
        "apiVersion": built["apiVersion"],
        "kind": built["kind"],
        "metadata": ordered_meta,
        **{k: v for k, v in built.items() if k not in ("apiVersion", "kind", "metadata")},
    }


def _name_first(value: Any) -> Any:
    if isinstance(value, dict):
        items = {k: _name_first(v) for k, v in value.items()}
        if "name" in items:
            return {"name": items["name"], **{k: v for k, v in items.items() if k != "name"}}
        return items
    if isinstance(value, list):
        return [_name_first(v) for v in value]
    return value


# --- reference checks -------------------------------------------------------------------------

WORKFLOW_GLOBALS = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "serviceAccountName",
        "mainEntrypoint",
        "creationTimestamp",
        "priority",
        "duration",
        "scheduledTime",
        "status",
        "failures",
        "annotations",
        "labels",
    }
)
"""`{{workflow.<x>}}` variables Argo defines itself (besides `workflow.parameters.<p>`)."""

TASK_RESULTS = frozenset(
    {
        "Succeeded",
        "Failed",
        "Errored",
        "Skipped",
        "Omitted",
        "Daemoned",
        "AnySucceeded",
        "AllFailed",
    }
)
EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
DEPENDS_TOKEN = re.compile(r"[A-Za-z0-9_.-]+")


def check_references(
    workflow: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """Every dangling reference of a Workflow, WorkflowTemplate or CronWorkflow (as data), one
    message each; empty when there is none.

    Checked: the entrypoint and onExit name templates, and the entrypoint's inputs get a value
    from the workflow's arguments; every task's (and step's) `template` names a template of the
    same object, every `templateRef` a template of a WorkflowTemplate in `templates` (by name);
    `dependencies` and `depends` name tasks of the same DAG, with known task results, and form no
    cycle; every argument names an input of the template it calls, and every input without a
    default gets one; every `{{inputs.parameters.x}}`, `{{inputs.artifacts.x}}`,
    `{{tasks.t.outputs.…}}` (t an ancestor of the task in the same DAG, whose template declares
    that output), `{{steps.s.outputs.…}}` (s in an earlier group), `{{workflow.parameters.x}}`
    and `{{workflow.<variable>}}` exists. Anything else between `{{` and `}}` is reported too: Argo
    would substitute it, or fail on it.
    """
    known = templates or {}
    kind = workflow.get("kind", "Workflow")
    spec = workflow.get("spec", {})
    if kind == "CronWorkflow":
        spec = spec.get("workflowSpec", {})
    meta = workflow.get("metadata", {})
    where = f"{kind} {meta.get('name') or meta.get('generateName') or '?'}"
    problems: list[str] = []
    listed: list[Mapping[str, Any]] = spec.get("templates", [])
    own = {t.get("name", ""): t for t in listed}
    if len(own) != len(listed):
        problems.append(f"{where}: two templates share a name")
    arguments = {p["name"] for p in spec.get("arguments", {}).get("parameters", [])}
    entrypoint = spec.get("entrypoint")
    if "workflowTemplateRef" in spec:
        ref = spec["workflowTemplateRef"].get("name")
        if ref not in known:
            problems.append(f"{where}: workflowTemplateRef names {ref!r}, no WorkflowTemplate")
        else:
            arguments |= {
                p["name"]
                for p in known[ref].get("spec", {}).get("arguments", {}).get("parameters", [])
            }
    elif entrypoint is None and kind in ("WorkflowTemplate", "ClusterWorkflowTemplate"):
        pass  # a library of templates, used by templateRef only
    elif entrypoint not in own:
        problems.append(f"{where}: entrypoint {entrypoint!r} is not a template")
    elif kind in ("Workflow", "CronWorkflow"):
        # a WorkflowTemplate's entrypoint may take its inputs from `argo submit -p`
        for parameter in own[entrypoint].get("inputs", {}).get("parameters", []):
            if parameter["name"] not in arguments and not _has_value(parameter):
                problems.append(
                    f"{where}: entrypoint input {parameter['name']!r} gets no value: "
                    "no workflow argument names it"
                )
    on_exit = spec.get("onExit")
    if on_exit is not None and on_exit not in own:
        problems.append(f"{where}: onExit {on_exit!r} is not a template")
    rest = {k: v for k, v in spec.items() if k != "templates"}
    problems.extend(_strings_problems(where, rest, _Scope(arguments=arguments)))
    for template in listed:
        problems.extend(_template_problems(where, template, own, known, arguments))
    return problems


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a `{{…}}` may name where it appears."""

    arguments: set[str]
    inputs: frozenset[str] = frozenset()
    artifacts: frozenset[str] = frozenset()
    tasks: Mapping[str, Mapping[str, Any] | str] | None = None
    steps: Mapping[str, Mapping[str, Any] | str] | None = None
    item: bool = False


TEMPLATE_VARIABLES = frozenset({"pod.name", "retries", "node.name", "inputs.parameters"})
"""Template-level variables Argo defines, besides inputs and outputs."""


def _has_value(parameter: Mapping[str, Any]) -> bool:
    return any(k in parameter for k in ("value", "default", "valueFrom"))


def _template_problems(
    where: str,
    template: Mapping[str, Any],
    own: Mapping[str, Mapping[str, Any]],
    known: Mapping[str, Mapping[str, Any]],
    arguments: set[str],
) -> list[str]:
    at = f"{where}, template {template.get('name')}"
    problems: list[str] = []
    inputs = template.get("inputs", {})
    scope = _Scope(
        arguments=arguments,
        inputs=frozenset(p["name"] for p in inputs.get("parameters", [])),
        artifacts=frozenset(a["name"] for a in inputs.get("artifacts", [])),
    )
    tasks: list[Mapping[str, Any]] = template.get("dag", {}).get("tasks", [])
    by_name = {t.get("name", ""): t for t in tasks}
    if len(by_name) != len(tasks):
        problems.append(f"{at}: two tasks share a name")
    if any("depends" in t for t in tasks):
        # Argo's validator (and the v4 CRDs' CEL rule) refuses the pair
        for task in tasks:
            if "continueOn" in task:
                problems.append(
                    f"{at}, task {task.get('name')}: continueOn in a DAG that uses depends; "
                    "use '<task>.Failed' in depends instead"
                )
    for task in tasks:
        deps, found = _dependencies(task)
        for message in found:
            problems.append(f"{at}, task {task.get('name')}: {message}")
        for dep in sorted(deps - set(by_name)):
            problems.append(
                f"{at}, task {task.get('name')}: depends on {dep!r}, no task of this DAG"
            )
    called = {name: _called(task, own, known) for name, task in by_name.items()}
    for name, task in by_name.items():
        ancestors = _ancestors(name, by_name)
        if name in ancestors:
            problems.append(f"{at}, task {name}: its dependencies form a cycle")
        visible = {t: called[t] for t in ancestors if t in called}
        problems.extend(
            _invocation_problems(f"{at}, task {name}", task, called[name], scope, tasks=visible)
        )
    groups: list[list[Mapping[str, Any]]] = template.get("steps", [])
    earlier: dict[str, Mapping[str, Any] | str] = {}
    for group in groups:
        current = {step.get("name", ""): _called(step, own, known) for step in group}
        for step in group:
            name = step.get("name", "")
            problems.extend(
                _invocation_problems(
                    f"{at}, step {name}", step, current[name], scope, steps=dict(earlier)
                )
            )
        earlier.update(current)
    # the template's own fields: its outputs may read any of its tasks or steps
    rest = {k: v for k, v in template.items() if k not in ("name", "dag", "steps")}
    problems.extend(
        _strings_problems(
            at,
            rest,
            _Scope(
                arguments=arguments,
                inputs=scope.inputs,
                artifacts=scope.artifacts,
                tasks=called,
                steps=earlier,
            ),
        )
    )
    return problems


def _ancestors(name: str, by_name: Mapping[str, Mapping[str, Any]]) -> set[str]:
    seen: set[str] = set()
    stack = list(_dependencies(by_name[name])[0])
    while stack:
        dep = stack.pop()
        if dep in seen or dep not in by_name:
            continue
        seen.add(dep)
        stack.extend(_dependencies(by_name[dep])[0])
    return seen


def _invocation_problems(
    at: str,
    node: Mapping[str, Any],
    called: Mapping[str, Any] | str,
    scope: _Scope,
    *,
    tasks: Mapping[str, Mapping[str, Any] | str] | None = None,
    steps: Mapping[str, Mapping[str, Any] | str] | None = None,
) -> list[str]:
    """A DAG task or a step: the template it calls, its arguments, its references."""
    problems = (
        [f"{at}: {called}"] if isinstance(called, str) else _argument_problems(at, node, called)
    )
    body = {k: v for k, v in node.items() if k not in ("name", "dependencies", "depends")}
    item = any(k in node for k in ("withItems", "withParam", "withSequence"))
    inner = _Scope(
        arguments=scope.arguments,
        inputs=scope.inputs,
        artifacts=scope.artifacts,
        tasks=tasks,
        steps=steps,
        item=item,
    )
    problems.extend(_strings_problems(at, body, inner))
    return problems


def _dependencies(task: Mapping[str, Any]) -> tuple[set[str], list[str]]:
    names = set(task.get("dependencies", []))
    problems = []
    depends = task.get("depends")
    if depends:
        text = depends.replace("&&", " ").replace("||", " ").replace("!", " ")
        text = text.replace("(", " ").replace(")", " ")
        for token in DEPENDS_TOKEN.findall(text):
            head, _, result = token.partition(".")
            if result and result not in TASK_RESULTS:
                problems.append(f"depends on {token!r}: {result!r} is not a task result")
            names.add(head)
    return names, problems


def _called(
    task: Mapping[str, Any],
    own: Mapping[str, Mapping[str, Any]],
    known: Mapping[str, Mapping[str, Any]],
) -> Mapping[str, Any] | str:
    """The template a task runs, or why it cannot be found."""
    if "template" in task:
        found = own.get(task["template"])
        return found if found is not None else f"template {task['template']!r} does not exist"
    ref = task.get("templateRef")
    if ref is not None:
        target = known.get(ref.get("name", ""))
        if target is None:
            return f"templateRef names WorkflowTemplate {ref.get('name')!r}, which is not among those checked with it"
        candidates: list[Mapping[str, Any]] = target.get("spec", {}).get("templates", [])
        for candidate in candidates:
            if candidate.get("name") == ref.get("template"):
                return candidate
        return f"templateRef names template {ref.get('template')!r}, not in WorkflowTemplate {ref.get('name')!r}"
    inline: Mapping[str, Any] | None = task.get("inline")
    return inline if inline is not None else "names no template"


def _argument_problems(at: str, task: Mapping[str, Any], called: Mapping[str, Any]) -> list[str]:
    problems = []
    wanted = {p["name"]: p for p in called.get("inputs", {}).get("parameters", [])}
    given = {p["name"] for p in task.get("arguments", {}).get("parameters", [])}
    for name in sorted(given - set(wanted)):
        problems.append(
            f"{at}: passes parameter {name!r}, which template {called.get('name')} has no input for"
        )
    for name in sorted(set(wanted) - given):
        if not _has_value(wanted[name]):
            problems.append(
                f"{at}: leaves input {name!r} of template {called.get('name')} without a value"
            )
    return problems


def _declared_outputs(template: Mapping[str, Any]) -> tuple[set[str], set[str], bool]:
    outputs = template.get("outputs", {})
    parameters = {p["name"] for p in outputs.get("parameters", [])}
    artifacts = {a["name"] for a in outputs.get("artifacts", [])}
    has_result = any(k in template for k in ("container", "script", "containerSet"))
    return parameters, artifacts, has_result


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _strings_problems(at: str, value: Any, scope: _Scope) -> list[str]:
    problems = []
    for text in _strings(value):
        for match in EXPRESSION.finditer(text):
            expression = match.group(1).strip()
            message = _reference_problem(expression, scope)
            if message is not None:
                problems.append(f"{at}: {{{{{expression}}}}} {message}")
    return problems


def _reference_problem(expression: str, scope: _Scope) -> str | None:
    if expression.startswith("="):
        return "is an expression, which this check cannot follow"
    if expression in TEMPLATE_VARIABLES:
        return None
    parts = expression.split(".")
    head = parts[0]
    if head == "item":
        return None if scope.item else "is used by a task or step with no withItems or withParam"
    if parts[:2] == ["inputs", "parameters"] and len(parts) == 3:
        return None if parts[2] in scope.inputs else "names no input parameter of this template"
    if parts[:2] == ["inputs", "artifacts"] and len(parts) >= 3:
        return None if parts[2] in scope.artifacts else "names no input artifact of this template"
    if parts[:2] == ["workflow", "parameters"] and len(parts) == 3:
        return None if parts[2] in scope.arguments else "names no workflow parameter"
    if head == "workflow" and len(parts) == 2:
        return None if parts[1] in WORKFLOW_GLOBALS else "is not an Argo workflow variable"
    if head in ("tasks", "steps") and len(parts) >= 3:
        visible = scope.tasks if head == "tasks" else scope.steps
        if visible is None or parts[1] not in visible:
            where = "task this one depends on" if head == "tasks" else "step of an earlier group"
            return f"names no {where} (in the same template)"
        return _output_problem(parts[2:], visible[parts[1]])
    return "is not a reference this check knows"


def _output_problem(parts: list[str], called: Mapping[str, Any] | str) -> str | None:
    if isinstance(called, str):
        return None  # reported with the task itself
    if parts in (["status"], ["startedAt"], ["finishedAt"], ["id"], ["ip"], ["exitCode"]):
        return None
    parameters, artifacts, has_result = _declared_outputs(called)
    if parts == ["outputs", "result"]:
        return None if has_result else "reads the result of a template that runs no container"
    if parts == ["outputs", "parameters"]:  # all of them, as JSON (for withParam)
        return None if parameters else "reads the output parameters of a template that has none"
    if parts[:2] == ["outputs", "parameters"] and len(parts) == 3:
        return None if parts[2] in parameters else "names no output parameter of its template"
    if parts[:2] == ["outputs", "artifacts"] and len(parts) == 3:
        return None if parts[2] in artifacts else "names no output artifact of its template"
    return "is not an output Argo knows"
