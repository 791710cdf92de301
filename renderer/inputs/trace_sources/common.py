"""What the public-trace readers share: the targets, the rule that spreads identities over
them, the mapped result and the rules of its findings (see the package's docstring)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, Literal

from renderer.findings.diagnostics import Diagnostic, Location, Severity
from renderer.findings.rules import document_rule
from renderer.inputs.schema import schema_for
from renderer.inputs.trace import TraceRow
from renderer.model.platform import Platform
from renderer.model.queue_plans import cluster_queues
from renderer.model.view import ClusterView

SourceKind = Literal["alibaba-gpu-2023", "philly-vc"]
SOURCES: Final[tuple[SourceKind, ...]] = ("alibaba-gpu-2023", "philly-vc")
WHOLE_GPU: Final = "nvidia.com/gpu"
TRAINING: Final = "training"
STAGE: Final = "inputs"


@dataclass(frozen=True, slots=True)
class Target:
    """A team's training namespace that mapped workloads go to, and its weight: the team's
    nominal `nvidia.com/gpu` quota on the pools its training ClusterQueue draws on."""

    namespace: str
    cluster: str
    team: str
    weight: int
    low_priority: str
    """The WorkloadPriorityClass of the lowest value of the team's queue (`<queue>-<name>`),
    or "" when the queue declares none."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """One source identity (an Alibaba pod, a Philly virtual cluster) and its namespace."""

    source: str
    namespace: str
    workloads: int
    gpus: int
    """GPUs asked by its replayed workloads (pods x GPUs per pod, summed)."""


@dataclass(frozen=True, slots=True)
class Mapped:
    """A source file read and mapped: the rows for the simulator, which identity went where,
    the rows not replayed (warnings, each at its row), and the rows that cannot be read
    (errors)."""

    source: SourceKind
    file: str
    rows: tuple[TraceRow, ...] = ()
    targets: tuple[Target, ...] = ()
    mapping: tuple[Assignment, ...] = ()
    skipped: tuple[Diagnostic, ...] = ()
    findings: tuple[Diagnostic, ...] = ()
    source_rows: int = 0
    """Data rows the source file holds (replayed, skipped, or in error)."""
    rounded: int = 0
    """Rows whose fraction of a GPU was rounded up to one whole GPU (Alibaba's sharing pods)."""
    limit: int | None = None


def targets(platform: Platform) -> tuple[Target, ...]:
    """Every team's training namespace on a Kueue cluster whose team holds whole GPUs there,
    sorted by namespace."""
    found: list[Target] = []
    for name, cluster in sorted(platform.clusters.items()):
        if cluster.scheduler != "kueue":
            continue
        view = ClusterView.of(platform, cluster)
        for plan in cluster_queues(view):
            if plan.purpose != TRAINING:
                continue
            reached = {f.pool.name for f in plan.flavors}
            weight = sum(
                (
                    f.resources[WHOLE_GPU].nominal
                    for f in plan.cohort.flavors
                    if f.pool.name in reached and WHOLE_GPU in f.resources
                ),
                Decimal(0),
            )
            if weight < 1:
                continue
            low = min(plan.queue.priorities, key=lambda p: (p.value, p.name), default=None)
            found.extend(
                Target(
                    ns.name,
                    name,
                    plan.team.name,
                    int(weight),
                    f"{plan.queue.name}-{low.name}" if low else "",
                )
                for ns in plan.namespaces
                if ns.cluster == name
            )
    return tuple(sorted(found, key=lambda t: t.namespace))


def assign(identities: Iterable[str], weighted: Sequence[Target]) -> dict[str, Target]:
    """Each identity's target: the identities in sorted order, the targets in namespace order,
    by smooth weighted round-robin. Every target's credit grows by its weight, the target of
    most credit (the first in namespace order on a tie) takes the identity and gives back the
    sum of the weights. Over any run of that sum of identities, each target takes exactly its
    weight of them, spread as evenly as the weights allow."""
    total = sum(t.weight for t in weighted)
    credit = [0] * len(weighted)
    out: dict[str, Target] = {}
    for identity in sorted(set(identities)):
        for i, target in enumerate(weighted):
            credit[i] += target.weight
        best = max(range(len(weighted)), key=lambda i: (credit[i], -i))
        credit[best] -= total
        out[identity] = weighted[best]
    return out


def no_targets(file: str) -> Diagnostic:
    return Diagnostic(
        "trace-source-teams",
        "no team has a training namespace with whole-GPU quota on a Kueue cluster",
        Location(file, 1, 1),
        hint="give a team a namespace of purpose training and a `gpus` entry on a full-GPU pool",
    )


def checked(
    values: Mapping[str, object], at: Location, cells: Mapping[str, Location]
) -> TraceRow | Diagnostic:
    """The mapped row, or why the trace schema refuses it (a value out of range)."""
    schema = schema_for("Trace")
    if schema.valid(dict(values)):
        return TraceRow(dict(values), at, dict(cells))
    error = next(iter(schema.validator.iter_errors(dict(values))))
    column = str(error.path[0]) if error.path else ""
    return Diagnostic(
        "trace-source-row",
        f"maps to {column} {error.instance!r}, outside the trace schema: {error.message}",
        cells.get(column, at),
        hint="docs/simulate.md#traces-from-public-clusters says how each column is mapped",
    )


def bad_cell(message: str, at: Location, hint: str) -> Diagnostic:
    return Diagnostic("trace-source-row", message, at, hint=hint)


def skipped(message: str, at: Location) -> Diagnostic:
    return Diagnostic(
        "trace-source-skipped",
        message,
        at,
        hint="docs/simulate.md#traces-from-public-clusters lists the rows that are not replayed",
        severity=Severity.WARNING,
    )


def duplicates(rows: Sequence[TraceRow]) -> list[Diagnostic]:
    """A second row of one workload name (the simulator keys workloads by namespace and name)."""
    seen: dict[str, Location] = {}
    found: list[Diagnostic] = []
    for row in rows:
        name = str(row.values["name"])
        if name in seen:
            found.append(
                Diagnostic(
                    "trace-source-row",
                    f"workload {name} is given twice",
                    row.where("name"),
                    notes=(("first given here", seen[name]),),
                    hint="pass the upstream file unmodified: its names are unique",
                )
            )
        else:
            seen[name] = row.where("name")
    return found


def first_rows(rows: list[TraceRow], limit: int | None) -> list[TraceRow]:
    """The `limit` earliest submitted rows (in file order on a tie), in that order."""
    if limit is None:
        return rows
    return sorted(rows, key=lambda r: float(r.values["submit_s"]))[:limit]


def kept_and_tally(
    rows: list[TraceRow], identities: Sequence[str], chosen: Mapping[str, Target], limit: int | None
) -> tuple[list[TraceRow], tuple[Assignment, ...]]:
    """The rows `first_rows` keeps, and the tally of the identities they came from
    (`identities[i]` is the identity of `rows[i]`; `chosen` gives each its target)."""
    of_row = {id(r): who for r, who in zip(rows, identities, strict=True)}
    kept = first_rows(rows, limit)
    identity = {i: of_row[id(r)] for i, r in enumerate(kept)}
    used = {who: chosen[who] for who in identity.values()}
    return kept, tally(kept, identity, used)


def tally(
    rows: Sequence[TraceRow], identity_of: Mapping[int, str], chosen: Mapping[str, Target]
) -> tuple[Assignment, ...]:
    """Every identity with its namespace, and its replayed workloads and GPUs (rows are keyed
    by their position in `rows`)."""
    counts: dict[str, list[int]] = {identity: [0, 0] for identity in chosen}
    for index, row in enumerate(rows):
        entry = counts[identity_of[index]]
        entry[0] += 1
        entry[1] += int(row.values["pods"]) * int(row.values["gpus_per_pod"])
    return tuple(
        Assignment(identity, chosen[identity].namespace, n, gpus)
        for identity, (n, gpus) in sorted(counts.items())
    )


for _rule, _doc in {
    "trace-source-row": """A row of a public trace (`simulate --from`) cannot be read.

A cell is missing, is not a number where the upstream column is one, or gives a value no
workload can have (a deletion before the pod was scheduled, a GPU fraction above one GPU).

To satisfy it: pass the upstream file unmodified (`openb_pod_list_default.csv` with its
header, Gavel's `<vc>.trace` files with seven tab-separated fields a line);
docs/simulate.md#traces-from-public-clusters gives each source's columns.""",
    "trace-source-skipped": """A row of a public trace (`simulate --from`) is read but not replayed.

The row gives no run time the simulator could use: an Alibaba pod never scheduled in its
cluster (`scheduled_time` empty), or a Philly job whose model and GPU count have no measured
throughput in Gavel's `simulation_throughputs.json`, so its steps cannot become seconds.

To satisfy it: nothing to fix in the file; the warning counts what the simulation leaves out
(the JSON's `mapping.skipped`). For a Philly job, a throughputs file that measures its model on
that many GPUs (`v100`, `('<job_type>', <scale_factor>)`) beside the traces replays it.""",
    "trace-source-teams": """A public trace cannot be spread over the platform's teams.

`simulate --from` gives each source identity to a team's training namespace, weighted by the
team's nominal whole-GPU quota; the platform has no such namespace.

To satisfy it: give a team a namespace of `purpose: training` on a Kueue cluster and a `gpus`
entry on a full-GPU pool its queue serves.""",
}.items():
    document_rule(_rule, STAGE, _doc)


__all__ = [
    "SOURCES",
    "Assignment",
    "Mapped",
    "SourceKind",
    "Target",
    "assign",
    "targets",
]
