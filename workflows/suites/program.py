"""What each suite runs: its steps in order, the probes of each and on how many pods and GPUs.
It changes when a guide step or a benchmark does, not when a manifest's shape does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from workflows.suites.placement import Target
from workflows.suites.settings import (
    ALLREDUCE_MAX_BYTES,
    INFERENCE_REQUESTS,
    RESERVE_SECONDS,
    RESUME_STEPS,
    SERVED_MODEL,
    SERVER_PORT,
    SERVER_START_SECONDS,
    SMOKE_SECONDS,
    STAGING_WORKERS,
    STEP_DEADLINE_SECONDS,
    STORAGE_WORKERS,
    WINDOW_REPORT_SECONDS,
    WINDOW_STEP_MIN_SECONDS,
    WORKSPACE,
)

Interruption = Literal["pod", "node"]
"""How a step with `after` is interrupted: its pod deleted (step 5), or its node taken away
(`node-loss`: tainted and its pods evicted, like `kubectl drain`)."""


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
    interruption: Interruption = "pod"
    one_per_node: bool = False
    """Its pods must each be on a node of their own (a required anti-affinity on the node's
    hostname, where Kueue does not place the pods itself)."""

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


def whole_node(target: Target) -> int:
    """What one pod asks for to hold a node: every device the node advertises (whole GPUs, or
    every MIG slice; on a DRA pool the node-sized claim template where there is one). On a
    time-sliced or MPS pool one replica: the device plugin refuses a pod asking for more
    (failRequestsGreaterThanOne), so there one pod per node comes from the anti-affinity."""
    pool = target.pool
    if pool.sharing in ("time-slicing", "mps"):
        return 1
    if target.dra:
        return pool.gpus_per_node if pool.sharing != "mig" and pool.gpus_per_node > 1 else 1
    return target.offer.per_node


def nodes_shape(target: Target) -> Shape:
    """One whole-node pod per node: in the window every node of the pool (`Pool.size`),
    otherwise as many whole nodes as the queue may borrow (the node check then covers only
    those; at least one pod, in the training shape, when not even one node is lent)."""
    whole = whole_node(target)
    nodes = min(target.pool.size, target.available // whole)
    if nodes >= 1:
        return Shape(nodes, whole)
    return training_shape(target)


def concurrent_shape(target: Target) -> Shape:
    """Pods reading and writing the shared workspace at once, one node each: all the pool's
    nodes (as many as lent outside the window), one device each, or a whole node each where
    Kueue places the pods (a topology-aware flavor packs smaller pods onto one node, and a
    required anti-affinity would keep them Pending); one pod where the cluster has no shared
    (ReadWriteMany) file system."""
    if not target.cluster.shared_class:
        return ONE
    if target.placed_by_kueue:
        return nodes_shape(target)
    return Shape(max(1, min(target.pool.size, target.available)), 1)


def storage_workers(target: Target, shape: Shape) -> int:
    """Workers per rank of `concurrent-storage`: STORAGE_WORKERS per pod (per node), shared
    among the pod's ranks (torchrun starts one per GPU of a whole-GPU pool)."""
    ranks = shape.per_pod if target.pool.sharing == "full-gpu" else 1
    return max(1, STORAGE_WORKERS // ranks)


def ref(path: str) -> str:
    """An Argo reference, `{{path}}`."""
    return "{{" + path + "}}"


def input_ref(name: str) -> str:
    return ref(f"inputs.parameters.{name}")


def task_output(task: str, name: str) -> str:
    return ref(f"tasks.{task}.outputs.parameters.{name}")


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
                    ("--source", input_ref("dataset"), "--dest", f"{WORKSPACE}/data"),
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
        window = ("--seconds", input_ref("window-seconds"))
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
    steps.extend(_data_path_steps(target))
    return tuple(steps)


def _data_path_steps(target: Target) -> list[Step]:
    """The node check, the data path under load and, in the window, the loss of a node."""
    concurrent = concurrent_shape(target)
    workers = str(storage_workers(target, concurrent))
    steps = [
        Step(
            "nodes",
            (Probe("nodes", "nodes", ("--max-bytes", ALLREDUCE_MAX_BYTES), distributed=True),),
            nodes_shape(target),
            one_per_node=True,
        ),
        Step(
            "concurrent-storage",
            (
                Probe(
                    "concurrent-storage",
                    "storage",
                    ("--path", f"{WORKSPACE}/concurrent-storage", "--workers", workers),
                    distributed=True,
                ),
            ),
            concurrent,
            workspace=True,
            one_per_node=True,
        ),
    ]
    if target.cluster.object_store:
        source = input_ref("dataset")
        dest = f"{WORKSPACE}/object-store"
        staging_workers = ("--workers", str(STAGING_WORKERS))
        probe = Probe(
            "object-store", "staging", ("--source", source, "--dest", dest, *staging_workers)
        )
        steps.append(Step("object-store", (probe,), ONE, workspace=True))
    if target.reserved and target.multi_node:
        # only in the window: outside it the node would hold the teams' pods
        path = ("--path", f"{WORKSPACE}/node-loss", "--resume-steps", str(RESUME_STEPS))
        steps.append(
            Step(
                "node-loss",
                (
                    Probe(
                        "node-loss-write", "checkpoint", (*path, "--phase", "write"), writes=False
                    ),
                ),
                ONE,
                workspace=True,
                after=(Probe("node-loss", "checkpoint", (*path, "--phase", "restore")),),
                interruption="node",
            )
        )
    return steps


def step_deadline_seconds(target: Target) -> int:
    """How long the Workflow waits on one Job of the target's suites (and on a replacement pod):
    STEP_DEADLINE_SECONDS, queue wait included; in the window, where nothing queues, an equal
    share of the window less `reserve` and export and report, at least WINDOW_STEP_MIN_SECONDS."""
    if not target.reserved:
        return STEP_DEADLINE_SECONDS
    waits = sum(2 if s.after else 1 for s in acceptance_steps(target))
    spare = target.deadline_seconds - RESERVE_SECONDS - WINDOW_REPORT_SECONDS
    return max(WINDOW_STEP_MIN_SECONDS, spare // waits)


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
            ("--source", input_ref("dataset"), "--dest", f"{WORKSPACE}/data"),
            judged=False,
        )
        # a Job of its own before the server's: the server is a native sidecar, which must be
        # serving before the pod's main container (and so anything it would stage) starts
        steps.append(Step("stage", (stage,), ONE, workspace=True))
        steps.append(Step("inference", (_inference_probe(),), ONE, workspace=True, server=True))
    return tuple(steps)


def headless_service(target: Target) -> str:
    """The headless Service whose name is the multi-pod Jobs' subdomain: rank 0's address."""
    return dns_label(f"acceptance-{target.name}")


def needs_service(target: Target) -> bool:
    return any(s.shape.pods > 1 for s in (*acceptance_steps(target), *benchmark_steps(target)))


def dns_label(text: str, limit: int = 63) -> str:
    return text[:limit].rstrip("-")
