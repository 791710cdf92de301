"""What `gpuplane fit` answers: the verdict, each pod set's flavor, the quota the job takes.

One set of types for the checker to fill and for the text and JSON forms to write, with the one
way both write a quantity, so the two forms always agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from renderer.admission.apiserver.gate import Outcome, Refusal
from renderer.admission.scheduler.kueue_usage import UsageReport
from renderer.model import quantity

FITS = "fits"
BORROWS = "borrows"
WAITS = "waits"
NEVER = "never"
ERROR = "error"
VERDICTS = (FITS, BORROWS, WAITS, NEVER, ERROR)
"""fits: within the ClusterQueue's nominal quota. borrows: admitted only by borrowing from the
cohort. waits (only with `--usage`): admissible on an idle cluster, not with the snapshot's
usage. never: can never be admitted as written. error: fit could not read the job or place it."""


# --- the result ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodSetFit:
    """One pod set: its pods, what each asks for, and the flavor Kueue would give it."""

    name: str
    count: int
    requested_count: int
    per_pod: Mapping[str, Decimal]
    flavor: str | None
    borrows: bool
    reasons: tuple[str, ...] = ()
    """Kueue's reasons, when no flavor fits (sorted, as Kueue prints them)."""
    tried: bool = True
    """Whether Kueue's flavor assignment reached this pod set: `assignFlavors` stops at the
    first pod set no flavor can hold, and a Workload refused before any assignment (no
    LocalQueue, a webhook, requests over limits) still lists its pod sets, none tried."""


@dataclass(frozen=True, slots=True)
class Quota:
    """One resource on one flavor of the ClusterQueue: what the job takes and Kueue's limits."""

    flavor: str
    resource: str
    requested: Decimal
    nominal: Decimal
    """The team's nominal quota (its Cohort's), which all its ClusterQueues share."""
    borrowing_limit: Decimal | None
    maximum: Decimal
    """What Kueue lets the ClusterQueue hold at most: the team's nominal plus what the other
    teams lend, capped by the team's borrowing limit (`PotentialAvailable` in an empty
    cluster)."""
    cohort_lendable: Decimal

    @property
    def borrowed(self) -> Decimal:
        return max(Decimal(0), self.requested - self.nominal)


@dataclass(frozen=True, slots=True)
class Lender:
    """Another team's Cohort in the job's cohort and what it lends on one flavor and resource."""

    cohort: str
    team: str
    flavor: str
    resource: str
    lendable: Decimal


@dataclass(frozen=True, slots=True)
class FitResult:
    """The answer for one job file. `admissible` is False when Kueue can never admit it."""

    file: str
    verdict: str
    summary: str
    kind: str | None = None
    name: str | None = None
    cluster: str | None = None
    namespace: str | None = None
    team: str | None = None
    purpose: str | None = None
    local_queue: str | None = None
    cluster_queue: str | None = None
    cohort: str | None = None
    priority: str | None = None
    priority_value: int | None = None
    priority_source: str | None = None
    pod_sets: tuple[PodSetFit, ...] = ()
    quotas: tuple[Quota, ...] = ()
    lenders: tuple[Lender, ...] = ()
    replicas: int = 1
    admitted_replicas: int = 1
    replica_unit: str = "workload"
    message: str | None = None
    """Kueue's own message on the Workload when it cannot be admitted, or the API server's when
    an admission policy refuses the job (`message_from` says which)."""
    message_from: str = "Kueue"
    reasons: tuple[str, ...] = ()
    """Why it can never be admitted, or why fit could not answer, in plain words."""
    preemption: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    flavors_tried: tuple[str, ...] = field(default=())
    gang: bool = False
    """Kueue admits the object's pods together, as one Workload (all or none of them); False
    when they are admitted one by one (a Deployment's pods, the pods of a kind Kueue does not
    manage) or when Kueue never sees them."""
    integration: str | None = None
    """The Kueue framework that admits it (`integrations.frameworks`: `batch/job`, `pod`, ...),
    or None when none does."""
    usage: UsageReport | None = None
    """With `--usage`: the ClusterQueue's and the cohort's usage now, and the preemption
    candidates; None for the empty-cluster answer."""
    chain: tuple[Outcome, ...] = ()
    """What each step of the admission chain before Kueue did with the object, in the API
    server's order (`renderer.admission.chain`); empty where fit did not reach the cluster."""
    kueue_verdict: str | None = None
    """What Kueue answers for the object as the chain hands it on (after mutations, and as if
    every refusal's fix were made); None where Kueue is never reached. `verdict` is this one
    unless a step of the chain refuses the object."""

    @property
    def refusals(self) -> tuple[tuple[Outcome, Refusal], ...]:
        """Every refusal of the chain, with the step that made it, in order."""
        return tuple((o, r) for o in self.chain for r in o.refusals)

    @property
    def admissible(self) -> bool:
        """Kueue can admit it, now or once quota frees up (`waits`): docs/fit.md says why a
        busy cluster does not fail the exit code."""
        return self.verdict in (FITS, BORROWS, WAITS)


def worse(a: str, b: str) -> bool:
    """Whether verdict `a` is worse than `b`, in VERDICTS' order (an unknown one is worst)."""

    def rank(verdict: str) -> int:
        return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)

    return rank(a) > rank(b)


@dataclass(frozen=True, slots=True)
class Ignored:
    """An object of the file that is no workload: `kubectl apply` creates it, fit skips it."""

    kind: str
    name: str
    why: str


@dataclass(frozen=True, slots=True)
class FileFit:
    """The answer for one job file: one FitResult per workload it holds, in file order, and the
    objects it skipped. `problem` is the file's own answer when it has no workload to check
    (unreadable, hostile, or only other objects)."""

    file: str
    workloads: tuple[FitResult, ...]
    ignored: tuple[Ignored, ...] = ()
    problem: FitResult | None = None

    def __post_init__(self) -> None:
        if not self.workloads and self.problem is None:
            raise ValueError("a file's answer without workloads says why (its problem)")

    @property
    def results(self) -> tuple[FitResult, ...]:
        """What there is to print: the workloads, or the file's problem."""
        return self.workloads if self.problem is None else (self.problem,)

    @property
    def worst(self) -> FitResult:
        """The first result with the worst verdict: the file's answer in one FitResult."""
        found = self.results[0]
        for result in self.results[1:]:
            if worse(result.verdict, found.verdict):
                found = result
        return found

    @property
    def verdict(self) -> str:
        return self.worst.verdict

    @property
    def admissible(self) -> bool:
        """Every workload can be admitted (and there is at least one)."""
        return all(r.admissible for r in self.results)


# --- quantities ------------------------------------------------------------------------------


BINARY_RESOURCES = ("memory", "ephemeral-storage")
"""Resources counted in bytes (with `hugepages-*`): written in binary units where they are whole."""

MEBIBYTE = Decimal(2) ** 20


def amount(resource: str, value: Decimal) -> str | int:
    """A quantity exactly, as a Kubernetes quantity string (never rounded): cpu in cores or
    the finest decimal unit that keeps it whole (`64`, `500m`, `36500m`); bytes in the largest
    binary unit that keeps them whole where they are whole mebibytes (`512Gi`, `200Mi`), else
    in the largest decimal unit that does (`8G` stays `8G`, not `7629Mi`; `144G`); counts
    (`nvidia.com/gpu`) as integers, a fraction of one as its decimal."""
    if resource == "cpu":
        return quantity.go_string(value, binary=False)
    if resource in BINARY_RESOURCES or resource.startswith("hugepages-"):
        whole_mebibytes = value % MEBIBYTE == 0
        return quantity.go_string(value, binary=bool(whole_mebibytes))
    if value == value.to_integral_value():
        return int(value)
    return str(value.normalize())


HOST_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def resource_order(resource: str) -> tuple[int, str]:
    return ({"cpu": 0, "memory": 1}.get(resource, 2), resource)


__all__ = [
    "BORROWS",
    "ERROR",
    "FITS",
    "NEVER",
    "VERDICTS",
    "WAITS",
    "FileFit",
    "FitResult",
    "Ignored",
    "Lender",
    "PodSetFit",
    "Quota",
]
