"""What Kueue's flavor assignment returns, and how it ranks the ways a flavor can hold a pod set:
Kueue v0.19.2 `pkg/scheduler/flavorassigner/flavorassigner.go` (`Assignment`,
`PodSetAssignment`, `FlavorAssignmentMode`, `granularMode`, `isPreferred`,
`shouldTryNextFlavor`, `resolveNoFitReason`) and `flavor_assigner_attempts.go`
(`FlavorAssignmentAttempt`, `mergeFlavorAttemptsForResource`).

`kueue_assigner.FlavorAssigner` fills these in; nothing here reads gpuplane's model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum
from typing import Literal

from renderer.admission.scheduler.snapshot import ClusterQueue, FlavorFungibility
from renderer.model.quota_tree import FlavorResource

Mode = Literal["NoFit", "Preempt", "Fit"]
"""`FlavorAssignmentMode` as Kueue prints it (DeferredFit is never returned by the assigner)."""

MODE_RANK: Mapping[Mode, int] = {"NoFit": 0, "Preempt": 1, "Fit": 3}

Possibility = Literal["NoCandidates", "Preempt", "Reclaim"]
"""`preemptioncommon.PreemptionPossibility`: what the preemption oracle found."""

NoFitReason = Literal[
    "", "TopologyPlacementFailed", "WaitingForQuota", "ExceedsMaxQuota", "NoMatchingFlavor"
]
"""`WorkloadQuotaReservedReason*`, least severe first (`reasonSeverity`)."""

SEVERITY: Mapping[str, int] = {
    "": 0,
    "TopologyPlacementFailed": 1,
    "WaitingForQuota": 2,
    "ExceedsMaxQuota": 3,
    "NoMatchingFlavor": 4,
}

UNLIMITED_LEVEL = 1 << 62
"""`math.MaxInt`: the borrowing level of the worst mode."""


class PreemptionMode(IntEnum):
    """`preemptionMode`, worst first."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    """Preemption could make room, but the simulation found no workload to preempt."""
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def mode(self) -> Mode:
        """`flavorAssignmentMode`."""
        if self is PreemptionMode.NO_FIT:
            return "NoFit"
        return "Fit" if self is PreemptionMode.FIT else "Preempt"

    @property
    def possibility(self) -> Possibility | None:
        return POSSIBILITY_OF.get(self)

    @staticmethod
    def of(possibility: Possibility) -> PreemptionMode:
        """`fromPreemptionPossibility`."""
        return {
            "NoCandidates": PreemptionMode.NO_CANDIDATES,
            "Preempt": PreemptionMode.PREEMPT,
            "Reclaim": PreemptionMode.RECLAIM,
        }[possibility]


POSSIBILITY_OF: Mapping[PreemptionMode, Possibility] = {
    PreemptionMode.NO_CANDIDATES: "NoCandidates",
    PreemptionMode.PREEMPT: "Preempt",
    PreemptionMode.RECLAIM: "Reclaim",
}


@dataclass(frozen=True, slots=True)
class GranularMode:
    """`granularMode`: how a flavor holds a pod set, and how far up the cohort tree its quota
    comes from (0: the ClusterQueue's own nominal quota)."""

    preemption: PreemptionMode
    borrowing: int

    @property
    def preempts(self) -> bool:
        """`isPreemptMode`: preemption targets were found."""
        return self.preemption in (PreemptionMode.PREEMPT, PreemptionMode.RECLAIM)


WORST = GranularMode(PreemptionMode.NO_FIT, UNLIMITED_LEVEL)
BEST = GranularMode(PreemptionMode.FIT, 0)


def is_preferred(a: GranularMode, b: GranularMode, fungibility: FlavorFungibility) -> bool:
    """`isPreferred`: whether `a` is better than `b` under the ClusterQueue's preference (by
    default BorrowingOverPreemption: the preemption mode first, then the borrowing level)."""
    if a.preemption is PreemptionMode.NO_FIT:
        return False
    if b.preemption is PreemptionMode.NO_FIT:
        return True
    a_none = a.preemption is PreemptionMode.NO_CANDIDATES
    b_none = b.preemption is PreemptionMode.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == "PreemptionOverBorrowing":
        if a.borrowing != b.borrowing:
            return a.borrowing < b.borrowing
        return a.preemption > b.preemption
    if a.preemption != b.preemption:
        return a.preemption > b.preemption
    return a.borrowing < b.borrowing


def should_try_next_flavor(mode: GranularMode, fungibility: FlavorFungibility) -> bool:
    """`shouldTryNextFlavor`: whether the search goes on past a flavor that holds the pod set
    in `mode` (a flavor that does not hold it, or whose preemption found no candidates, never
    stops it)."""
    if mode.preemption in (PreemptionMode.NO_FIT, PreemptionMode.NO_CANDIDATES):
        return True
    if mode.preempts and fungibility.when_can_preempt == "TryNextFlavor":
        return True
    return mode.borrowing != 0 and fungibility.when_can_borrow == "TryNextFlavor"


def most_severe(a: str, b: str) -> str:
    """`mostSevereReason`."""
    return a if SEVERITY.get(a, 0) >= SEVERITY.get(b, 0) else b


# --- results ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FlavorAssignment:
    """The flavor of one resource of one pod set, its mode, and where the flavor search
    stopped (`TriedFlavorIdx`: -1 once it reached the group's last flavor)."""

    flavor: str
    mode: Mode
    borrow: int = 0
    tried_flavor_idx: int = -1


@dataclass(slots=True)
class Attempt:
    """`FlavorAssignmentAttempt`: one flavor tried for a pod set (group), at its worst over
    the resources asked for."""

    flavor: str
    mode: Mode
    borrow: int = 0
    possibility: Possibility | None = None
    reasons: list[str] = field(default_factory=list)
    no_fit_reason: str = ""


@dataclass(slots=True)
class PodSetAssignment:
    """`PodSetAssignment`: per resource its flavor; the reasons a flavor could not be had
    outright (`Status`), or the error that stopped the assignment."""

    name: str
    count: int
    requests: dict[str, Decimal]
    """What the whole pod set asks for (count pods), as Kueue counts it."""
    flavors: dict[str, FlavorAssignment] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    topology: object | None = None
    """The TAS placement, where one was made (its shape is the placer's)."""

    @property
    def fits(self) -> bool:
        """`Status.IsFit`."""
        return self.error is None and not self.reasons

    @property
    def representative_mode(self) -> Mode:
        """The worst mode of its flavors (`PodSetAssignment.RepresentativeMode`)."""
        if self.fits:
            return "Fit"
        if self.error is not None or not self.flavors:
            return "NoFit"
        return min((f.mode for f in self.flavors.values()), key=MODE_RANK.__getitem__)

    def message(self) -> str:
        """`Status.Message`: the reasons sorted, or the error."""
        return self.error if self.error is not None else ", ".join(sorted(self.reasons))

    def set_mode(self, mode: Mode) -> None:
        for assigned in self.flavors.values():
            assigned.mode = mode


@dataclass(slots=True)
class Assignment:
    """`Assignment`: the pod sets in order, the deepest borrowing, the usage they add."""

    pod_sets: list[PodSetAssignment] = field(default_factory=list)
    borrowing: int = 0
    usage: dict[FlavorResource, Decimal] = field(default_factory=dict)
    no_fit_reason: str = ""
    last_tried: list[dict[str, int]] = field(default_factory=list)
    """`LastState.LastTriedFlavorIdx`: per pod set, per resource."""
    forced_mode: Mode | None = None
    """The representative mode TAS set (`updateMode`), where it did."""

    def pod_set(self, name: str) -> PodSetAssignment | None:
        return next((ps for ps in self.pod_sets if ps.name == name), None)

    @property
    def representative_mode(self) -> Mode:
        """The worst mode among the pod sets; NoFit with none."""
        if not self.pod_sets:
            return "NoFit"
        if self.forced_mode is not None:
            return self.forced_mode
        return min((ps.representative_mode for ps in self.pod_sets), key=MODE_RANK.__getitem__)

    def message(self) -> str:
        """`Assignment.Message`: what Kueue writes in the Workload's QuotaReserved condition."""
        parts = []
        for ps in self.pod_sets:
            if ps.fits:
                continue
            if ps.error is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {ps.message()}")
        return "; ".join(parts)

    def add(self, ps: PodSetAssignment) -> None:
        """`Assignment.append`: the pod set, its borrowing, its usage per flavor."""
        self.pod_sets.append(ps)
        tried: dict[str, int] = {}
        for resource, assigned in ps.flavors.items():
            self.borrowing = max(self.borrowing, assigned.borrow)
            fr = (assigned.flavor, resource)
            value = ps.requests.get(resource, Decimal(0))
            self.usage[fr] = self.usage.get(fr, Decimal(0)) + value
            tried[resource] = assigned.tried_flavor_idx
        self.last_tried.append(tried)

    def resolve_no_fit_reason(self, cq: ClusterQueue) -> None:
        """`resolveNoFitReason`: for a NoFit assignment, the most severe of the pod sets'
        reasons, each pod set's being the most severe across its resource groups of the least
        severe among a group's flavors."""
        if self.representative_mode != "NoFit":
            return
        overall = ""
        for ps in self.pod_sets:
            if ps.representative_mode != "NoFit":
                continue
            if not ps.attempts:
                overall = most_severe(overall, "NoMatchingFlavor")
                continue
            least: dict[int, str] = {}
            for i, attempt in enumerate(ps.attempts):
                if attempt.mode != "NoFit":
                    continue
                groups = [
                    g for g, rg in enumerate(cq.resource_groups)
                    if any(f.name == attempt.flavor for f in rg.flavors)
                ] or [-1 - i]  # fmt: skip
                for g in groups:
                    if g not in least or SEVERITY.get(attempt.no_fit_reason, 0) < SEVERITY.get(
                        least[g], 0
                    ):
                        least[g] = attempt.no_fit_reason
            reason = ""
            for found in least.values():
                reason = most_severe(reason, found)
            overall = most_severe(overall, reason)
        self.no_fit_reason = overall


# --- attempts --------------------------------------------------------------------------------


def merge_attempts(
    into: dict[str, Attempt], found: Sequence[Attempt], group_flavors: Iterable[str], resource: str
) -> None:
    """`mergeFlavorAttemptsForResource`: the attempts of one resource's search merged into the
    pod set group's (worst mode, deepest borrowing, lowest possibility, reasons united); a
    flavor of the resource's group that this search did not reach but an earlier one did is
    marked as not providing the resource."""
    for at in found:
        have = into.get(at.flavor)
        if have is None:
            into[at.flavor] = Attempt(
                at.flavor, at.mode, at.borrow, at.possibility, sorted(set(at.reasons)),
                at.no_fit_reason,
            )  # fmt: skip
            continue
        have.mode = min(have.mode, at.mode, key=MODE_RANK.__getitem__)
        have.borrow = max(have.borrow, at.borrow)
        if at.possibility is not None and (
            have.possibility is None or _rank(at.possibility) < _rank(have.possibility)
        ):
            have.possibility = at.possibility
        have.reasons = sorted(set(have.reasons) | set(at.reasons))
        have.no_fit_reason = most_severe(have.no_fit_reason, at.no_fit_reason)
    if not found:
        return
    present = {at.flavor for at in found}
    in_group = set(group_flavors)
    for name, at in into.items():
        if name in in_group and name not in present:
            at.mode = "NoFit"
            at.reasons = sorted(
                {*at.reasons, f"flavor {name} does not provide resource {resource}"}
            )
            at.no_fit_reason = "NoMatchingFlavor"


def _rank(possibility: Possibility) -> int:
    return PreemptionMode.of(possibility).value


def finalize_attempts(attempts: Mapping[str, Attempt]) -> list[Attempt]:
    """`finalizeFlavorAssignmentAttempts`: by flavor name."""
    return [attempts[name] for name in sorted(attempts)]
