"""What `gpuplane fit` answers: the verdict, each pod set's flavor, the quota the job takes.

One set of types for the checker to fill and for the text and JSON forms to write, with the one
way both write a quantity, so the two forms always agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from renderer.model import quantity
from renderer.model.admission import amount_text

FITS = "fits"
BORROWS = "borrows"
NEVER = "never"
ERROR = "error"
VERDICTS = (FITS, BORROWS, NEVER, ERROR)
"""fits: within the ClusterQueue's nominal quota. borrows: admitted only by borrowing from the
cohort. never: can never be admitted as written. error: fit could not read the job or place it."""


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


@dataclass(frozen=True, slots=True)
class Quota:
    """One resource on one flavor of the ClusterQueue: what the job takes and Kueue's limits."""

    flavor: str
    resource: str
    requested: Decimal
    nominal: Decimal
    borrowing_limit: Decimal | None
    maximum: Decimal
    """What Kueue lets the ClusterQueue hold at most: nominal plus what the cohort lends,
    capped by the borrowing limit (`PotentialAvailable` in an empty cluster)."""
    cohort_lendable: Decimal

    @property
    def borrowed(self) -> Decimal:
        return max(Decimal(0), self.requested - self.nominal)


@dataclass(frozen=True, slots=True)
class Lender:
    """Another ClusterQueue of the cohort and what it lends on one flavor and resource."""

    cluster_queue: str
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

    @property
    def admissible(self) -> bool:
        return self.verdict in (FITS, BORROWS)


# --- quantities ------------------------------------------------------------------------------


def amount(resource: str, value: Decimal) -> str | int:
    """A quantity as Kubernetes prints it: cores, bytes in binary units, counts as integers."""
    if resource == "ephemeral-storage" or resource.startswith("hugepages-"):
        return quantity.memory(value)
    if resource not in ("cpu", "memory") and value != value.to_integral_value():
        return str(value.normalize())
    return amount_text(resource, value)


HOST_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def resource_order(resource: str) -> tuple[int, str]:
    return ({"cpu": 0, "memory": 1}.get(resource, 2), resource)


__all__ = [
    "BORROWS",
    "ERROR",
    "FITS",
    "NEVER",
    "VERDICTS",
    "FitResult",
    "Lender",
    "PodSetFit",
    "Quota",
]
