"""`gpuplane fit --usage FILE`: the cluster's current usage, read from what Kueue reports.

Design: docs/fit.md#reading-the-usage-files
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from renderer.model import quantity
from renderer.model.quota_tree import Limits

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""`kubectl get workloads -A -o json` of a busy cluster runs to megabytes (each Workload carries
its pod templates); one over 64 MiB is not a snapshot fit should hold in memory."""

MAX_OBJECTS = 100_000
KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
VISIBILITY_VERSIONS = ("visibility.kueue.x-k8s.io/v1beta2", "visibility.kueue.x-k8s.io/v1beta1")
LIST_KINDS = ("List", "WorkloadList", "ClusterQueueList")

FlavorResource = tuple[str, str]
"""(flavor, resource), Kueue's `resources.FlavorResource`."""


class SnapshotError(ValueError):
    """A field of the snapshot fit cannot read; `where` is its path."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")


@dataclass(frozen=True, slots=True)
class Holder:
    """A Workload that holds quota now."""

    name: str
    namespace: str
    cluster_queue: str
    priority: int
    usage: Mapping[FlavorResource, Decimal]
    reserved_at: str = ""
    """The QuotaReserved condition's lastTransitionTime (RFC 3339), "" when absent."""
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class QueueState:
    """A ClusterQueue as the snapshot shows it."""

    name: str
    cohort: str | None
    quotas: Mapping[FlavorResource, Limits]
    reservation: Mapping[FlavorResource, Decimal] | None
    """status.flavorsReservation; None when the object has no status."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A workload the visibility API lists as pending."""

    name: str
    namespace: str
    priority: int
    local_queue: str
    position: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    source: str
    holders: tuple[Holder, ...] = ()
    queues: Mapping[str, QueueState] = field(default_factory=dict)
    pending: tuple[Pending, ...] = ()
    problems: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    not_holding: int = 0
    """Workloads read that hold no quota (pending, finished, evicted)."""

    @property
    def readable(self) -> bool:
        return not self.problems


# --- reading ---------------------------------------------------------------------------------


def read_snapshot(paths: Sequence[Path]) -> Snapshot:
    """Every file of `--usage`, merged; never raises."""
    source = ", ".join(p.as_posix() for p in paths)
    reader = _Reader()
    for path in paths:
        try:
            reader.read_file(path)
        except SnapshotError as error:
            return Snapshot(source, problems=(f"{path.as_posix()}: {error}",))
    return Snapshot(
        source,
        holders=tuple(reader.holders.values()),
        queues=dict(reader.queues),
        pending=tuple(reader.pending),
        skipped=tuple(reader.skipped),
        not_holding=reader.not_holding,
    )


class _Reader:
    def __init__(self) -> None:
        self.holders: dict[str, Holder] = {}
        self.queues: dict[str, QueueState] = {}
        self.pending: list[Pending] = []
        self.skipped: list[str] = []
        self.not_holding = 0
        self.count = 0

    def read_file(self, path: Path) -> None:
        try:
            size = path.stat().st_size
            if size > MAX_SNAPSHOT_BYTES:
                raise SnapshotError(
                    "file", f"{size} bytes, more than the {MAX_SNAPSHOT_BYTES} fit reads"
                )
            text = path.read_bytes().decode("utf-8")
            data = json.loads(text)
        except SnapshotError:
            raise
        except OSError as error:
            raise SnapshotError("file", f"cannot read it ({error.strerror or error})") from None
        except UnicodeDecodeError:
            raise SnapshotError("file", "not UTF-8 text") from None
        except RecursionError:
            raise SnapshotError("file", "nested too deeply to be Kubernetes JSON") from None
        except ValueError as error:
            raise SnapshotError(
                "file",
                f"not JSON ({str(error).splitlines()[0][:120]}); pass the output of "
                "`kubectl get workloads,clusterqueues -A -o json`",
            ) from None
        self.read_object(data, "")

    def read_object(self, data: Any, where: str) -> None:
        obj = _mapping(data, where or "the document")
        kind = _string(obj.get("kind"), _at(where, "kind"), "")
        version = _string(obj.get("apiVersion"), _at(where, "apiVersion"), "")
        if kind in LIST_KINDS or (kind == "" and "items" in obj and not where):
            for i, item in enumerate(_sequence(obj.get("items", []), _at(where, "items"))):
                self.read_object(item, f"{_at(where, 'items')}[{i}]")
            return
        self.count += 1
        if self.count > MAX_OBJECTS:
            raise SnapshotError(where or "the document", f"more than {MAX_OBJECTS} objects")
        name = _name(obj, where)
        if kind == "PendingWorkloadsSummary" and version in VISIBILITY_VERSIONS:
            self.read_pending(obj, where)
        elif kind == "Workload" and version in KUEUE_VERSIONS:
            self.read_workload(obj, where)
        elif kind == "ClusterQueue" and version in KUEUE_VERSIONS:
            self.read_cluster_queue(obj, where)
        else:
            shown = f"{version} {kind}".strip() or "an object without kind"
            self.skipped.append(f"{shown} {name}".rstrip())

    def read_workload(self, obj: Mapping[str, Any], where: str) -> None:
        meta = _mapping(obj.get("metadata", {}), _at(where, "metadata"))
        name = _string(meta.get("name"), _at(where, "metadata.name"))
        namespace = _string(meta.get("namespace"), _at(where, "metadata.namespace"), "")
        spec = _mapping(obj.get("spec", {}), _at(where, "spec"))
        priority = _integer(spec.get("priority", 0), _at(where, "spec.priority"))
        status = _mapping(obj.get("status", {}), _at(where, "status"))
        conditions = _conditions(status.get("conditions", []), _at(where, "status.conditions"))
        admission = status.get("admission")
        reserved = conditions.get("QuotaReserved")
        finished = conditions.get("Finished")
        if (
            admission is None
            or reserved is None
            or reserved[0] != "True"
            or (finished is not None and finished[0] == "True")
        ):
            self.not_holding += 1
            return
        at = _at(where, "status.admission")
        admission = _mapping(admission, at)
        cq = _string(admission.get("clusterQueue"), f"{at}.clusterQueue")
        usage: dict[FlavorResource, Decimal] = {}
        assignments = _sequence(admission.get("podSetAssignments", []), f"{at}.podSetAssignments")
        for i, psa in enumerate(assignments):
            here = f"{at}.podSetAssignments[{i}]"
            psa = _mapping(psa, here)
            flavors = _mapping(psa.get("flavors", {}), f"{here}.flavors")
            used = _mapping(psa.get("resourceUsage", {}), f"{here}.resourceUsage")
            for resource, value in used.items():
                amount = _quantity(value, f"{here}.resourceUsage.{resource}")
                flavor = flavors.get(resource)
                if flavor is None:
                    continue  # not a covered resource: Kueue counts it against no quota
                flavor = _string(flavor, f"{here}.flavors.{resource}")
                usage[(flavor, resource)] = usage.get((flavor, resource), Decimal(0)) + amount
        holder = Holder(
            name,
            namespace,
            cq,
            priority,
            usage,
            reserved_at=reserved[1],
            uid=_string(meta.get("uid", ""), _at(where, "metadata.uid"), ""),
        )
        if holder.key in self.holders:
            self.skipped.append(f"Workload {holder.key} again (the first one counts)")
            return
        self.holders[holder.key] = holder

    def read_cluster_queue(self, obj: Mapping[str, Any], where: str) -> None:
        meta = _mapping(obj.get("metadata", {}), _at(where, "metadata"))
        name = _string(meta.get("name"), _at(where, "metadata.name"))
        spec = _mapping(obj.get("spec", {}), _at(where, "spec"))
        cohort_field = "cohortName" if "cohortName" in spec else "cohort"
        cohort = _string(spec.get(cohort_field, ""), _at(where, f"spec.{cohort_field}"), "")
        quotas: dict[FlavorResource, Limits] = {}
        groups = _sequence(spec.get("resourceGroups", []), _at(where, "spec.resourceGroups"))
        for g, group in enumerate(groups):
            here = _at(where, f"spec.resourceGroups[{g}]")
            group = _mapping(group, here)
            for f, flavor in enumerate(_sequence(group.get("flavors", []), f"{here}.flavors")):
                at = f"{here}.flavors[{f}]"
                flavor = _mapping(flavor, at)
                fname = _string(flavor.get("name"), f"{at}.name")
                for r, res in enumerate(_sequence(flavor.get("resources", []), f"{at}.resources")):
                    rat = f"{at}.resources[{r}]"
                    res = _mapping(res, rat)
                    rname = _string(res.get("name"), f"{rat}.name")
                    quotas[(fname, rname)] = Limits(
                        _quantity(res.get("nominalQuota", 0), f"{rat}.nominalQuota"),
                        _optional_quantity(res.get("borrowingLimit"), f"{rat}.borrowingLimit"),
                        _optional_quantity(res.get("lendingLimit"), f"{rat}.lendingLimit"),
                    )
        status = obj.get("status")
        reservation: dict[FlavorResource, Decimal] | None = None
        if status is not None:
            status = _mapping(status, _at(where, "status"))
            reservation = {}
            at = _at(where, "status.flavorsReservation")
            for f, flavor in enumerate(_sequence(status.get("flavorsReservation", []), at)):
                here = f"{at}[{f}]"
                flavor = _mapping(flavor, here)
                fname = _string(flavor.get("name"), f"{here}.name")
                for r, res in enumerate(
                    _sequence(flavor.get("resources", []), f"{here}.resources")
                ):
                    rat = f"{here}.resources[{r}]"
                    res = _mapping(res, rat)
                    rname = _string(res.get("name"), f"{rat}.name")
                    reservation[(fname, rname)] = _quantity(res.get("total", 0), f"{rat}.total")
        if name in self.queues:
            self.skipped.append(f"ClusterQueue {name} again (the first one counts)")
            return
        self.queues[name] = QueueState(name, cohort or None, quotas, reservation)

    def read_pending(self, obj: Mapping[str, Any], where: str) -> None:
        for i, item in enumerate(_sequence(obj.get("items", []), _at(where, "items"))):
            here = _at(where, f"items[{i}]")
            item = _mapping(item, here)
            meta = _mapping(item.get("metadata", {}), f"{here}.metadata")
            self.pending.append(
                Pending(
                    _string(meta.get("name"), f"{here}.metadata.name"),
                    _string(meta.get("namespace"), f"{here}.metadata.namespace"),
                    _integer(item.get("priority", 0), f"{here}.priority"),
                    _string(item.get("localQueueName", ""), f"{here}.localQueueName", ""),
                    _integer(
                        item.get("positionInClusterQueue", 0), f"{here}.positionInClusterQueue"
                    ),
                )
            )


# --- typed access ------------------------------------------------------------------------------


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise SnapshotError(where, f"expected an object, found {_type(value)}")
    return value


def _sequence(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SnapshotError(where, f"expected a list, found {_type(value)}")
    return value


def _string(value: Any, where: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise SnapshotError(where, f"expected a string, found {_type(value)}")
    if len(value) > 253:
        raise SnapshotError(where, f"a string of {len(value)} characters, longer than any name")
    return value


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SnapshotError(where, f"expected an integer, found {_type(value)}")
    if not -(2**31) <= value < 2**31:
        raise SnapshotError(where, f"{value} is outside int32")
    return value


def _quantity(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or len(str(value)) > 64:
        raise SnapshotError(where, f"expected a Kubernetes quantity, found {_type(value)}")
    try:
        parsed = quantity.parse(value)
    except ValueError:
        raise SnapshotError(where, f"not a Kubernetes quantity: {str(value)[:64]!r}") from None
    if parsed < 0:  # a quantity may carry a sign; what a Workload holds never does
        raise SnapshotError(where, f"a negative quantity: {str(value)[:64]!r}")
    return parsed


def _optional_quantity(value: Any, where: str) -> Decimal | None:
    return None if value is None else _quantity(value, where)


def _conditions(value: Any, where: str) -> dict[str, tuple[str, str]]:
    """type -> (status, lastTransitionTime)."""
    out: dict[str, tuple[str, str]] = {}
    for i, item in enumerate(_sequence(value, where)):
        item = _mapping(item, f"{where}[{i}]")
        kind = _string(item.get("type"), f"{where}[{i}].type")
        status = _string(item.get("status"), f"{where}[{i}].status")
        since = _string(item.get("lastTransitionTime", ""), f"{where}[{i}].lastTransitionTime", "")
        out[kind] = (status, since)
    return out


def _name(obj: Mapping[str, Any], where: str) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name[:253] if isinstance(name, str) else ""


def _type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string"}.get(
        type(value), "a list" if isinstance(value, list) else "an object"
    )


# --- what fit reports about the snapshot ---------------------------------------------------------

Shown = str | int
"""A quantity as Kubernetes writes it (`result.amount`), or a count."""


@dataclass(frozen=True, slots=True)
class ResourceNow:
    """One resource on one flavor of the job's ClusterQueue, now."""

    flavor: str
    resource: str
    requested: Shown
    nominal: Shown
    """The team's nominal quota (its Cohort's), shared by all its ClusterQueues."""
    used: Shown
    """What all the team's ClusterQueues use now."""
    cohort_available: Shown
    """What the Queue's Cohort can give the team now, capped by the team's borrowing limit."""
    available: Shown
    """Kueue's `Available`: what the ClusterQueue can be admitted now without preempting."""


@dataclass(frozen=True, slots=True)
class CandidateNow:
    """An admitted Workload Kueue's preemptor could evict for the job."""

    name: str
    namespace: str
    cluster_queue: str
    priority: int
    holds: Mapping[str, Shown]
    reason: str
    """Kueue's preemption reason (InClusterQueue, InCohortReclamation, ...)."""
    target: bool
    """In the smallest set that frees enough, as Kueue's preemptor picks it."""


@dataclass(frozen=True, slots=True)
class UsageReport:
    """The `usage` of one workload's answer under `--usage`."""

    source: str
    cluster_queue: str
    usage_from: str
    workloads: int
    resources: tuple[ResourceNow, ...] = ()
    candidates: tuple[CandidateNow, ...] = ()
    frees_enough: bool | None = None
    """None: no preemption needed, or Kueue would not try it."""
    preemption: tuple[str, ...] = ()
    queued_ahead: tuple[Pending, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot": self.source,
            "clusterQueue": self.cluster_queue,
            "usageFrom": self.usage_from,
            "workloadsHoldingQuota": self.workloads,
            "resources": [
                {
                    "flavor": r.flavor,
                    "resource": r.resource,
                    "requested": r.requested,
                    "nominal": r.nominal,
                    "used": r.used,
                    "cohortAvailable": r.cohort_available,
                    "available": r.available,
                }
                for r in self.resources
            ],
            "preemption": {
                "freesEnough": self.frees_enough,
                "candidates": [
                    {
                        "name": c.name,
                        "namespace": c.namespace,
                        "clusterQueue": c.cluster_queue,
                        "priority": c.priority,
                        "holds": dict(c.holds),
                        "reason": c.reason,
                        "target": c.target,
                    }
                    for c in self.candidates
                ],
                "says": list(self.preemption),
            },
            "queuedAhead": [
                {
                    "name": p.name,
                    "namespace": p.namespace,
                    "priority": p.priority,
                    "localQueue": p.local_queue,
                    "positionInClusterQueue": p.position,
                }
                for p in self.queued_ahead
            ],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The text form; the caller makes it inert."""
        out = [
            f"usage now (snapshot {self.source}; ClusterQueue {self.cluster_queue}, from "
            f"{self.usage_from}, {self.workloads} workload(s) holding quota):"
        ]
        for r in self.resources:
            out.append(
                f"  {r.flavor} {r.resource}: the team uses {r.used} of its nominal {r.nominal}; "
                f"the cohort can lend {r.cohort_available} now; available {r.available}, the job asks "
                f"{r.requested}"
            )
        if self.preemption or self.candidates:
            out.append("preemption now:")
            out.extend(f"  - {line}" for line in self.preemption)
            for c in self.candidates:
                holds = ", ".join(f"{k}: {v}" for k, v in c.holds.items())
                mark = " (would be evicted)" if c.target else ""
                out.append(
                    f"  - {c.namespace}/{c.name} in {c.cluster_queue}, priority {c.priority}, "
                    f"holds {{{holds}}}, {c.reason}{mark}"
                )
        if self.queued_ahead:
            out.append("pending ahead of it in the ClusterQueue (visibility API):")
            out.extend(
                f"  - {p.namespace}/{p.name}, priority {p.priority}, position {p.position}"
                for p in self.queued_ahead
            )
        if self.notes:
            out.append("snapshot notes:")
            out.extend(f"  - {n}" for n in self.notes)
        return out


__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "CandidateNow",
    "Holder",
    "Pending",
    "QueueState",
    "ResourceNow",
    "Snapshot",
    "UsageReport",
    "read_snapshot",
]
