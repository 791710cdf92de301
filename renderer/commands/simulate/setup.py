"""From the platform and a trace to the simulator's inputs: each Kueue cluster's objects as
gpuplane renders them (the same `kueue_cluster` fit reads), and each row of the trace as a job of
its namespace's ClusterQueue, at its WorkloadPriorityClass's value (docs/simulate.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from renderer.admission.answer.result import HOST_RESOURCES
from renderer.admission.scheduler.flavorassigner import kueue_cluster
from renderer.admission.workloads.podsets import drop_excluded
from renderer.commands.simulate.engine import Job, World
from renderer.findings.diagnostics import Diagnostic, closest
from renderer.inputs.trace import TraceRow
from renderer.layers.queueing import kueue
from renderer.model import quantity
from renderer.model.capacity import pool_offers
from renderer.model.nodes import POOL_LABEL
from renderer.model.platform import Platform
from renderer.model.queue_plans import ClusterQueuePlan, cluster_queues
from renderer.model.view import ClusterView

DEFAULT_GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class ClusterSetup:
    """One Kueue cluster: its Kueue as the scheduler holds it, its ClusterQueues as gpuplane
    plans them, the resources its Kueue excludes, and each pool's GPUs per resource."""

    name: str
    world: World
    plans: tuple[ClusterQueuePlan, ...]
    excluded: tuple[str, ...]
    capacity: Mapping[str, Mapping[str, tuple[int, Fraction | None]]]
    """Per pool, per resource: how many units at the pool's largest size, and how much of one
    physical GPU each is."""


@dataclass(frozen=True)
class Placed:
    """A namespace's cluster, ClusterQueue and team."""

    cluster: str
    plan: ClusterQueuePlan


def clusters(platform: Platform) -> dict[str, ClusterSetup]:
    """Every cluster that schedules with Kueue, by name."""
    out: dict[str, ClusterSetup] = {}
    for name, cluster in sorted(platform.clusters.items()):
        if cluster.scheduler != "kueue":
            continue
        view = ClusterView.of(platform, cluster)
        native = kueue_cluster(platform, cluster)
        world = World(native.snapshot, native.topologies, kueue.fair_sharing_enabled(view.queues))
        capacity = {
            pool.name: {o.resource: (o.maximum, o.gpu_share) for o in pool_offers(pool)}
            for pool in view.pools
        }
        out[name] = ClusterSetup(
            name,
            world,
            tuple(cluster_queues(view)),
            kueue.excluded_resource_prefixes(view.pools),
            capacity,
        )
    return out


def namespaces(setups: Mapping[str, ClusterSetup]) -> dict[str, list[Placed]]:
    """Each team namespace's places (one per cluster it is on)."""
    out: dict[str, list[Placed]] = {}
    for name, setup in setups.items():
        for plan in setup.plans:
            for ns in plan.namespaces:
                if ns.cluster == name:
                    out.setdefault(ns.name, []).append(Placed(name, plan))
    return out


def job_of(
    row: TraceRow,
    index: int,
    platform: Platform,
    setups: Mapping[str, ClusterSetup],
    places: Mapping[str, list[Placed]],
) -> tuple[str, Job] | list[Diagnostic]:
    """The row as a job of its cluster, or why it cannot be one."""
    values = row.values
    namespace = str(values["namespace"])
    found = places.get(namespace, [])
    if len(found) != 1:
        return [_namespace_problem(row, namespace, found, places)]
    place = found[0]
    setup = setups[place.cluster]
    problems: list[Diagnostic] = []
    priority = _priority(row, setup, place.plan, problems)
    pool = str(values.get("pool") or "")
    if pool and pool not in platform.pools:
        problems.append(
            _unknown(row, "pool", f"pool {pool!r} is not declared", pool, sorted(platform.pools))
        )
    if problems:
        return problems
    gpus = int(values["gpus_per_pod"])
    resource = str(values.get("gpu_resource") or DEFAULT_GPU)
    per_pod = {
        "cpu": quantity.parse(values["cpu_per_pod"]),
        "memory": quantity.parse(values["memory_per_pod"]),
    }
    if gpus:
        per_pod[resource] = Decimal(gpus)
    job = Job(
        index=index,
        namespace=namespace,
        name=str(values["name"]),
        cluster_queue=place.plan.name,
        priority=priority,
        submit=_ms(values["submit_s"]),
        duration=_ms(values["duration_s"]),
        pods=int(values["pods"]),
        per_pod=drop_excluded(per_pod, setup.excluded),
        node_selector={POOL_LABEL: pool} if pool else {},
    )
    return place.cluster, job


def _ms(seconds: float | int) -> int:
    return round(Decimal(str(seconds)) * 1000)


def _priority(
    row: TraceRow, setup: ClusterSetup, plan: ClusterQueuePlan, problems: list[Diagnostic]
) -> int:
    """The WorkloadPriorityClass's value; none named: the team's own priority (gpuplane's
    priority policy sets it), else the queue's default, else 0 (Kueue with no class)."""
    classes = setup.world.snapshot.priority_classes
    named = str(row.values.get("priority") or "")
    if named:
        found = classes.get(named)
        if found is None:
            problems.append(
                _unknown(
                    row,
                    "priority",
                    f"WorkloadPriorityClass {named!r} does not exist on cluster {setup.name}",
                    named,
                    sorted(classes),
                )
            )
            return 0
        return found.value
    queue = plan.queue
    own = queue.priority(plan.team.priority) if plan.team.priority else None
    chosen = own or queue.default_priority
    if chosen is None:
        return 0
    found = classes.get(f"{queue.name}-{chosen.name}")
    return found.value if found is not None else chosen.value


def _unknown(row: TraceRow, column: str, message: str, value: str, known: list[str]) -> Diagnostic:
    close = closest(value, known)
    hint = f"did you mean {close!r}?" if close else f"known: {', '.join(known) or 'none'}"
    return Diagnostic("trace-unknown-name", message, row.where(column), hint=hint)


def _namespace_problem(
    row: TraceRow, namespace: str, found: list[Placed], places: Mapping[str, list[Placed]]
) -> Diagnostic:
    if found:
        on = ", ".join(sorted(p.cluster for p in found))
        return Diagnostic(
            "trace-unknown-name",
            f"namespace {namespace!r} is a team namespace on several clusters ({on})",
            row.where("namespace"),
            hint="simulate one cluster's namespaces: give the namespace one cluster in its team file",
        )
    return _unknown(
        row,
        "namespace",
        f"namespace {namespace!r} is not a team namespace on a Kueue cluster",
        namespace,
        sorted(places),
    )


def gpu_resources(capacity: Mapping[str, tuple[int, Fraction | None]]) -> dict[str, Fraction]:
    """The GPU resources of a pool and each unit's share of a physical GPU (1 where unknown)."""
    return {
        r: share if share is not None else Fraction(1)
        for r, (_, share) in capacity.items()
        if r not in HOST_RESOURCES
    }
