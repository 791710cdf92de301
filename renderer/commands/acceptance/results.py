"""The data of `gpuplane acceptance report`: a probe result that passed the checks, and the
verdicts judged from it. Loading makes them, judging fills them in, the forms read them; all
immutable, so each stage can change without the others' code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from renderer.findings.diagnostics import Diagnostic, Severity

QUEUE_WAIT_KEY: Final = "gpuplane.dev/queue-wait-seconds"
"""The environment label the workflow adds: seconds the acceptance job waited in Kueue."""

GPUS_KEY: Final = "gpuplane.dev/gpus"
"""The environment label that states how many GPUs a result used (for its cost); optional."""

STEP_KEY: Final = "gpuplane.dev/step"
"""The environment label the suite adds: the step (Job) that ran the probe."""

LABELLED_STEPS: Final = {
    "concurrent-storage": "storage",
    "object-store": "staging",
    "node-loss": "checkpoint",
}
"""The suite steps told apart from their probe's own step by the STEP_KEY label alone: the
probe each runs. Every other result is judged as its probe's step (the node check's probe is
`nodes`, the step of the same name)."""


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    MISSING = "missing"
    """The pool declares a threshold and no result measures it: fails."""
    MEASURED = "measured-only"
    """A figure without a threshold on this pool: shown, never judged."""
    NOT_REPORTED = "not-reported"
    """An optional figure (the queue wait) that no result carries: shown, never judged."""
    NOT_COMPARABLE = "not-comparable"
    """A figure measured on the CPU, or on a device not shown to be the pool's accelerator:
    shown, not judged against the pool's threshold, and the pool is not accepted on it."""

    @property
    def failing(self) -> bool:
        return self in (Verdict.FAIL, Verdict.MISSING)


class Status(StrEnum):
    """Where a pool, or the whole report, stands. Failing wins over not comparable."""

    PASSED = "passed"
    FAILED = "failed"
    """A figure failed its threshold, a threshold has no result, or a file was not counted."""
    NOT_COMPARABLE = "not-comparable"
    """Nothing failed, but some result was measured on the CPU or on a device not shown to be
    the pool's accelerator (whether or not a threshold asks for its figures), so the pool is not
    accepted either: run the probes on the pool."""


# --- the data ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    """One probe result that passed the envelope and metrics checks."""

    file: str
    probe: str
    cluster: str | None
    pool: str | None
    started_at: str
    duration_seconds: float
    ok: bool
    error: str | None
    environment: Mapping[str, str]
    metrics: Mapping[str, Any]
    complete: bool
    """Whether `metrics` holds every figure of the probe (always when ok; a failed probe may
    leave them all, or none)."""

    @property
    def step(self) -> str:
        """The step this result is judged as: a labelled step (concurrent-storage,
        object-store, node-loss) when the label names one its probe runs, else the probe."""
        label = self.environment.get(STEP_KEY)
        if label is not None and LABELLED_STEPS.get(label) == self.probe:
            return label
        return self.probe

    @property
    def queue_wait_seconds(self) -> float | None:
        value = self.environment.get(QUEUE_WAIT_KEY)
        return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class Check:
    """One figure of one pool: what was measured, against what, and the verdict."""

    step: str
    metric: str
    label: str
    unit: str
    measured: float | bool | None
    comparison: str | None
    """`>=`, `<=`, `==` or None (measured only, not reported)."""
    threshold: float | bool | None
    threshold_key: str | None
    """The pool's `spec.acceptance` key, or None for a requirement that always holds."""
    verdict: Verdict
    result: str | None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Device:
    """The device a result was measured on, against the pool's accelerator."""

    result: str
    probe: str
    device: str | None
    """The torch device the probe used: `cpu`, `cuda:0`; None when a torch probe's result
    records none."""
    name: str | None
    """The GPU's name as torch reports it (`NVIDIA H100 80GB HBM3`); None on the CPU or when
    the result does not name the GPU."""
    accelerator: str
    """The pool's `accelerator` (a catalog key)."""
    comparable: bool
    """True only for a GPU whose name shows it is the pool's accelerator (model, memory and
    form factor where the name states them)."""
    message: str
    """The sentence that says so, for people."""


@dataclass(frozen=True, slots=True)
class NvlinkShare:
    """An all-reduce result's bus bandwidth against the catalog's NVLink figure: information."""

    result: str
    busbw_gbps: float
    nvlink_gbps: float | None
    share: float | None


@dataclass(frozen=True, slots=True)
class Cost:
    """The cost of useful work of one training or inference result, with its formula filled in."""

    step: str
    unit: str
    value: float | None
    currency: str
    gpus: float
    gpus_source: str
    formula: str
    result: str


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node of the node check: its health and intra-node bus bandwidth, judged."""

    node: str
    ranks: int
    healthy: bool
    error: str | None
    intra_busbw_gbps: float | None
    matmul_tflops: float | None
    verdict: Verdict
    result: str
    why: str | None = None
    """What failed the node (unhealthy, below the threshold, an outlier, fabric errors)."""


@dataclass(frozen=True, slots=True)
class LinkRow:
    """The all-reduce over two nodes' ranks of the node check's ring of pairs."""

    a: str
    b: str
    busbw_gbps: float
    verdict: Verdict
    result: str

    @property
    def subject(self) -> str:
        return f"{self.a}<->{self.b}"


@dataclass(frozen=True, slots=True)
class Outlier:
    """A node or link below the outlier fraction of the pool's median of the same figure (the
    median recomputed here from the result's own figures)."""

    subject: str
    figure: str
    value: float
    median: float
    result: str


@dataclass(frozen=True, slots=True)
class PoolAcceptance:
    cluster: str
    pool: str
    accelerator: str
    gpu_hour: float
    currency: str
    checks: tuple[Check, ...]
    nvlink: tuple[NvlinkShare, ...]
    costs: tuple[Cost, ...]
    results: tuple[str, ...]
    devices: tuple[Device, ...] = ()
    """The devices of results that record one (the torch probes)."""
    nodes: tuple[NodeRow, ...] = ()
    """The node check's nodes, slowest intra-node bus bandwidth first."""
    links: tuple[LinkRow, ...] = ()
    """The node check's links, slowest first."""
    outliers: tuple[Outlier, ...] = ()
    """Nodes and links below the outlier fraction of the median, slowest (by share) first."""

    @property
    def elsewhere(self) -> int:
        """Results measured on the CPU or on a device not shown to be the pool's accelerator."""
        return sum(not d.comparable for d in self.devices)

    @property
    def status(self) -> Status:
        if any(c.verdict.failing for c in self.checks):
            return Status.FAILED
        if self.elsewhere or any(c.verdict is Verdict.NOT_COMPARABLE for c in self.checks):
            return Status.NOT_COMPARABLE
        return Status.PASSED

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED


@dataclass(frozen=True, slots=True)
class AcceptanceReport:
    pools: tuple[PoolAcceptance, ...]
    findings: tuple[Diagnostic, ...]
    files: int

    @property
    def status(self) -> Status:
        errors = any(d.severity is Severity.ERROR for d in self.findings)
        statuses = {p.status for p in self.pools}
        if errors or not self.pools or Status.FAILED in statuses:
            return Status.FAILED
        return Status.NOT_COMPARABLE if Status.NOT_COMPARABLE in statuses else Status.PASSED

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def count(self, verdict: Verdict) -> int:
        return sum(c.verdict is verdict for p in self.pools for c in p.checks)

    @property
    def elsewhere(self) -> int:
        """Results, over all pools, not shown to be measured on their pool's accelerator."""
        return sum(p.elsewhere for p in self.pools)
