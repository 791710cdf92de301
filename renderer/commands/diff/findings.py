"""What a `gpuplane diff` report is made of: risks, finding codes and their titles, immutable data.

Every comparison produces these and every renderer (Markdown, JSON, text) reads them, so the
vocabulary lives here on its own and changes only when the report's shape does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction

from renderer.commands.simulate.compare import Comparison
from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import WaitGrowth


class Risk(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


RISKS = (Risk.HIGH, Risk.MEDIUM, Risk.LOW)

TITLES: dict[str, str] = {
    "repository-changed": "repository settings changed",
    "cluster-added": "cluster added",
    "cluster-removed": "cluster removed",
    "scheduler-changed": "scheduler changed",
    "group-prefix-changed": "RBAC group prefix changed",
    "platform-owners-widened": "platform owners added",
    "platform-owners-narrowed": "platform owners removed",
    "reservation-removed": "reserved namespace released",
    "cluster-changed": "cluster settings changed",
    "operator-removed": "operator removed",
    "operator-disabled": "operator no longer installed by gpuplane",
    "operator-enabled": "operator installed over a running one",
    "operator-version-changed": "operator version changed",
    "operator-changed": "operator settings changed",
    "operator-added": "operator added",
    "pool-added": "pool added",
    "pool-removed": "pool removed",
    "pool-resized": "pool resized",
    "pool-sharing-changed": "GPU sharing or exposure changed",
    "pool-changed": "pool settings changed",
    "growth-exception": "growth exception declared",
    "queue-added": "queue added",
    "queue-removed": "queue removed",
    "queue-policy-changed": "queue policy changed",
    "queue-changed": "queue description changed",
    "team-added": "team added",
    "team-removed": "team removed",
    "namespace-platform": "platform namespace taken",
    "namespace-removed": "namespace removed",
    "namespace-moved": "namespace moved to this team",
    "namespace-added": "namespace added",
    "namespace-changed": "namespace changed",
    "rbac-widened": "RBAC widened",
    "rbac-narrowed": "RBAC narrowed",
    "egress-opened": "egress opened",
    "egress-closed": "egress closed",
    "images-widened": "image registries added",
    "images-narrowed": "image registries removed",
    "quota-cap-removed": "quota cap removed",
    "quota-cap-changed": "quota cap changed",
    "codeowners-changed": "code owners changed",
    "cost-center-shared": "cost centre of another team",
    "team-queue-changed": "queue or priority changed",
    "team-changed": "team settings changed",
    "domain-added": "team domain added",
    "domain-removed": "team domain removed",
    "endpoint-added": "endpoint added",
    "endpoint-removed": "endpoint removed",
    "endpoint-url-changed": "endpoint host or path changed",
    "endpoint-server-changed": "endpoint server changed",
    "endpoint-changed": "endpoint template changed",
    "endpoint-capacity-changed": "endpoint maximum changed",
    "endpoint-floor-changed": "endpoint minimum changed",
    "endpoint-slo-changed": "endpoint SLO changed",
    "endpoint-scaling-changed": "endpoint autoscaling changed",
    "gpu-quota": "GPU quota changed",
    "gpu-affected": "GPU reach changed",
    "simulated-wait": "simulated waits changed",
    "immutable-field": "immutable field changed",
    "transition-unchecked": "update rules not evaluated",
    "objects": "rendered objects",
}
"""Every finding code, in the order findings of one group are listed, with its title."""


_CODE_ORDER = {code: index for index, code in enumerate(TITLES)}


DERIVED = ("guaranteed", "maximum", "reachable")
OWN = ("nominal", "borrowing_limit", "lending_limit")


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# --- the data -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuotaFigures:
    """One team quota entry on one side, and what `plan` makes of it (None: not computed, because
    that side does not validate)."""

    resource: str
    unit: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    guaranteed: int | None
    maximum: int | None
    reachable: int | None
    gpu_share: Fraction | None = Fraction(1)
    """Physical GPUs one unit is (`Offer.gpu_share`): 1/replicas on a time-shared pool."""


@dataclass(frozen=True, slots=True)
class QuotaChange:
    """A team's quota on one pool (and MIG profile) before and after; None where absent."""

    pool: str
    profile: str | None
    before: QuotaFigures | None
    after: QuotaFigures | None

    @property
    def resource(self) -> str:
        side = self.after or self.before
        return side.resource if side is not None else ""


@dataclass(frozen=True, slots=True)
class PoolFigures:
    capacity: int
    capacity_max: int
    nominal: int
    guaranteed: int
    lendable: int


@dataclass(frozen=True, slots=True)
class PoolTotals:
    """The sums of a pool resource's quotas before and after (plan's pool rows)."""

    cluster: str
    pool: str
    resource: str
    before: PoolFigures | None
    after: PoolFigures | None


@dataclass(frozen=True, slots=True)
class ObjectChanges:
    """Files of one cluster's layer (or values/nodes folder) added, changed and deleted, by path
    under `rendered/<cluster>/`."""

    layer: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PoolEvidence:
    """A pool's evidence file in the head, beside its capacity change (all None but the file
    and sizes when there is none)."""

    file: str
    base_size: int | None
    """Nodes before the change (what the evidence must cover); None for a new pool."""
    size: int
    verdict: str | None = None
    age_days: int | None = None
    covered: int | None = None
    """Distinct nodes the run came from with no failed verdict."""
    image: str | None = None
    digest: str | None = None
    driver: str | None = None

    def line(self) -> str:
        if self.verdict is None:
            return f"evidence: none ({self.file})"
        needed = max(self.base_size or 0, 1)
        age = "age unknown" if self.age_days is None else f"{plural(self.age_days, 'day')} old"
        return (
            f"evidence: {self.verdict}, {age}, {self.covered}/{needed} nodes covered, "
            f"image {self.image} ({self.digest}), driver {self.driver} ({self.file})"
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """One change and its risk. `summary` and `details` are plain text that may quote input
    files verbatim; the renderers escape them."""

    risk: Risk
    code: str
    cluster: str | None
    """None: platform-wide (gpuplane.yaml)."""
    team: str | None
    """None: about the cluster itself (its pools, queues, settings, rendered objects)."""
    subject: str
    summary: str
    details: tuple[str, ...] = ()
    quota: QuotaChange | None = None
    objects: ObjectChanges | None = None
    at: str | None = None
    """`file:line` of the head's input that the finding is about, the line the change touched
    where it touched one (None: nothing in the head says it, e.g. a removed team)."""
    evidence: PoolEvidence | None = None
    """The pool's evidence, on a pool's capacity change (added or resized)."""

    @property
    def title(self) -> str:
        return TITLES.get(self.code, self.code)

    def sort_key(self) -> tuple[str, int, str, int, int, str]:
        """Platform-wide first; per cluster its own findings, then each team's, then objects."""
        group = 2 if self.code == "objects" else 1 if self.team is not None else 0
        return (
            self.cluster or "",
            group,
            self.team or "",
            RISKS.index(self.risk),
            _CODE_ORDER.get(self.code, len(_CODE_ORDER)),
            self.subject,
        )


@dataclass(frozen=True, slots=True)
class Side:
    """One revision: `label` is the ref (or "working tree"), `commit` what it resolved to."""

    label: str
    commit: str | None
    valid: bool
    errors: int
    warnings: int


@dataclass(frozen=True, slots=True)
class ClusterHeading:
    name: str
    environment: str
    scheduler: str
    status: str
    """"added", "removed" or "kept"."""


@dataclass(frozen=True, slots=True)
class SimulatedWaits:
    """`diff --trace`: the trace replayed on both sides (`comparison`; None with `note` saying
    why, or with `problems` when the trace names what neither side has), and the base's bound
    on a team's p90 wait growth that rates it (`waits.py`)."""

    bound: WaitGrowth
    comparison: Comparison | None
    note: str | None = None
    problems: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True, slots=True)
class DiffReport:
    base: Side
    head: Side
    clusters: tuple[ClusterHeading, ...]
    findings: tuple[Finding, ...]
    pools: tuple[PoolTotals, ...]
    objects_compared: bool
    """False when the base does not render, so its objects could not be compared."""
    head_diagnostics: tuple[Diagnostic, ...] = field(default=(), compare=False)
    head_files: int = field(default=0, compare=False)
    waits: SimulatedWaits | None = None
    """`--trace`: the "Simulated waits" section; None without a trace."""

    def count(self, risk: Risk) -> int:
        return sum(f.risk is risk for f in self.findings)

    @property
    def head_valid(self) -> bool:
        return self.head.valid
