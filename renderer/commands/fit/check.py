"""`gpuplane fit`: would Kueue admit this job, on which flavor, and if never, why.

An offline rerun of Kueue's admission against the queues `renderer.model.admission` plans: the
job's namespace picks the team's ClusterQueue (through the namespace's `default` LocalQueue),
its labels pick the priority, and each pod set gets the first flavor, in the ClusterQueue's
order, whose node labels and taints it accepts and whose quota holds it. The numbers are
Kueue's: a ClusterQueue may use its nominal quota plus, capped by its borrowing limit, what the
other ClusterQueues of its cohort lend (their lending limit, or all their nominal quota when they
set none). Messages reuse Kueue's own wording (`pkg/scheduler/flavorassigner`), so what `fit`
prints is what `kubectl describe workload` would say.

`fit` assumes an empty cluster: no other workload holds quota. "fits" and "borrows" therefore
mean "would be admitted now if the cluster were idle"; "never" means no amount of waiting helps.
See docs/fit.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, ScalarNode

from renderer.commands.fit import workloads
from renderer.commands.fit.workloads import PodSet, Toleration, Unreadable, Workload
from renderer.inputs.source import MAX_FILE_BYTES, load_file
from renderer.layers.gpu import sharing as gpu_sharing
from renderer.layers.queueing import kueue
from renderer.layers.tenancy import DEFAULT_CONTAINER
from renderer.model import names, nodes, quantity
from renderer.model.admission import (
    ClusterQueuePlan,
    FlavorPlan,
    amount_text,
    cluster_queues,
    limits_of,
    potential_available,
)
from renderer.model.capacity import PURPOSE_ORDER, maximum_holding, pool_offers, usable_quotas
from renderer.model.platform import Namespace, Platform, Pool, Priority, Queue, Team
from renderer.model.view import ClusterView

FITS = "fits"
BORROWS = "borrows"
NEVER = "never"
ERROR = "error"
VERDICTS = (FITS, BORROWS, NEVER, ERROR)
"""fits: within the ClusterQueue's nominal quota. borrows: admitted only by borrowing from the
cohort. never: can never be admitted as written. error: fit could not read the job or place it."""

DEFAULT_LOCAL_QUEUE = kueue.DEFAULT_LOCAL_QUEUE
RDMA_RESOURCE_PREFIXES = ("rdma/", "vpc.amazonaws.com/efa")
"""The names RDMA device plugins advertise (the Network Operator's and CoreWeave's `rdma/…`,
AWS's EFA plugin), for a hint when a cluster's Kueue does not exclude one."""
ASSUMPTION = "assumes an empty cluster: no other workload holds quota (see docs/fit.md)"


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
    """Kueue's own message on the Workload when it cannot be admitted."""
    reasons: tuple[str, ...] = ()
    """Why it can never be admitted, or why fit could not answer, in plain words."""
    preemption: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    flavors_tried: tuple[str, ...] = field(default=())

    @property
    def admissible(self) -> bool:
        return self.verdict in (FITS, BORROWS)


# --- the check -----------------------------------------------------------------------------------


def check_fit(
    platform: Platform,
    path: Path,
    *,
    namespace: str | None = None,
    cluster: str | None = None,
) -> FitResult:
    """Would Kueue admit the job in `path`, and where; never raises on a bad job file."""
    display = _display(path)
    loaded = load_file(path, display)
    if loaded.document is None:
        return _load_error(display, path, loaded.diagnostics)
    parsed = workloads.workload_from(loaded.document.data)
    if isinstance(parsed, Unreadable):
        where = loaded.document.locate(parsed.path) if parsed.path else None
        prefix = f"{where}: " if where is not None and where.line > 0 else ""
        summary = (
            f"{parsed.kind} is not a workload fit can check"
            if not parsed.workload
            else f"cannot read the {parsed.kind.split(' ')[-1] or 'job'}"
        )
        return FitResult(display, ERROR, summary, reasons=(f"{prefix}{parsed.reason}",))
    return _Checker(platform, display, parsed).run(namespace, cluster)


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def _load_error(display: str, path: Path, diagnostics: Sequence[Any]) -> FitResult:
    reasons = []
    for d in diagnostics:
        text = f"{d.at}: {d.message}"
        if d.rule == "yaml-multiple-documents":
            kinds = _document_kinds(path)
            if kinds:
                listed = ", ".join(k or "?" for k in kinds)
                text = (
                    f"{d.at}: the file holds {len(kinds)} YAML documents ({listed}); fit checks "
                    "one workload per file"
                )
        reasons.append(text)
    hints = [d.hint for d in diagnostics if d.hint]
    if any(d.rule == "yaml-multiple-documents" for d in diagnostics):
        hints = [
            "put the job in a file of its own (the queues already exist: gpuplane renders them)"
        ]
    return FitResult(
        display,
        ERROR,
        "cannot read the job file",
        reasons=tuple(reasons),
        notes=tuple(f"hint: {h}" for h in hints),
    )


def _document_kinds(path: Path) -> list[str]:
    """The `kind` of each document of a multi-document file, without building any object."""
    try:
        text = path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8")
        kinds = []
        for node in YAML(typ="safe").compose_all(text):
            if node is None or (isinstance(node, ScalarNode) and node.value in ("", "~", "null")):
                continue
            kind = ""
            if isinstance(node, MappingNode):
                for key, value in node.value:
                    if isinstance(key, ScalarNode) and key.value == "kind":
                        kind = str(value.value) if isinstance(value, ScalarNode) else ""
            kinds.append(kind)
        return kinds
    except Exception:  # the loader already said what is wrong; this only adds detail
        return []


@dataclass
class _Assignment:
    pod_sets: list[PodSetFit]
    usage: dict[tuple[str, str], Decimal]

    @property
    def failed(self) -> bool:
        return any(ps.flavor is None for ps in self.pod_sets)


class _Checker:
    """One job against one platform: resolve its queue and priority, then assign flavors."""

    def __init__(self, platform: Platform, display: str, workload: Workload) -> None:
        self.platform = platform
        self.display = display
        self.workload = workload
        self.notes: list[str] = list(workload.notes)

    def result(self, verdict: str, summary: str, **fields: Any) -> FitResult:
        base: dict[str, Any] = {"kind": self.workload.kind, "name": self.workload.name}
        base.update(fields)
        base.setdefault("notes", tuple(self.notes))
        return FitResult(self.display, verdict, summary, **base)

    # -- where the job goes

    def run(self, namespace: str | None, cluster: str | None) -> FitResult:
        wl = self.workload
        ns_name = namespace or wl.namespace
        if namespace and wl.namespace and namespace != wl.namespace:
            self.notes.append(
                f"--namespace {namespace} overrides the job's metadata.namespace {wl.namespace}"
            )
        if not ns_name:
            return self.result(
                ERROR,
                "no namespace",
                reasons=(
                    "the job has no metadata.namespace and no --namespace was given: fit needs "
                    "the namespace to find the team's LocalQueue",
                ),
            )
        if cluster is not None and cluster not in self.platform.clusters:
            known = ", ".join(sorted(self.platform.clusters))
            return self.result(
                ERROR,
                f"unknown cluster {cluster}",
                reasons=(f"cluster {cluster} is not declared (clusters: {known})",),
            )
        found = [
            (team, ns)
            for team in self.platform.teams.values()
            for ns in team.namespaces
            if ns.name == ns_name and (cluster is None or ns.cluster == cluster)
        ]
        if not found:
            return self.not_a_team_namespace(ns_name, cluster)
        clusters = sorted({ns.cluster for _, ns in found})
        if len(clusters) > 1:
            return self.result(
                ERROR,
                f"namespace {ns_name} is on several clusters",
                namespace=ns_name,
                reasons=(
                    f"namespace {ns_name} is a team namespace on clusters {', '.join(clusters)}: "
                    "pass --cluster to choose one",
                ),
            )
        team, ns = found[0]
        return self.in_namespace(team, ns)

    def not_a_team_namespace(self, ns_name: str, cluster: str | None) -> FitResult:
        elsewhere = sorted(
            ns.cluster
            for team in self.platform.teams.values()
            for ns in team.namespaces
            if ns.name == ns_name
        )
        where = f" on cluster {cluster}" if cluster else ""
        reasons = [
            f"namespace {ns_name} is not a team namespace{where}: no LocalQueue, so Kueue has "
            "nowhere to queue the job"
        ]
        if elsewhere:
            reasons.append(f"namespace {ns_name} is a team namespace on {', '.join(elsewhere)}")
        else:
            reasons.append(
                "add the namespace to a team's `namespaces` (teams/<team>.yaml), or submit the "
                "job in one of the team's namespaces"
            )
        return self.result(
            NEVER,
            f"namespace {ns_name} is not a team namespace",
            cluster=cluster,
            namespace=ns_name,
            local_queue=self.workload.queue_name or DEFAULT_LOCAL_QUEUE,
            message=f"LocalQueue {self.workload.queue_name or DEFAULT_LOCAL_QUEUE} doesn't exist",
            reasons=tuple(reasons),
        )

    def in_namespace(self, team: Team, ns: Namespace) -> FitResult:
        cluster = self.platform.clusters.get(ns.cluster)
        context: dict[str, Any] = {
            "cluster": ns.cluster,
            "namespace": ns.name,
            "team": team.name,
            "purpose": ns.purpose,
        }
        if cluster is None:
            return self.result(
                ERROR, f"cluster {ns.cluster} is not declared", **context,
                reasons=(f"team {team.name} puts {ns.name} on cluster {ns.cluster}, which no file declares",),
            )  # fmt: skip
        if cluster.scheduler != "kueue":
            return self.result(
                ERROR,
                f"cluster {cluster.name} schedules with {cluster.scheduler}",
                **context,
                reasons=(
                    f"cluster {cluster.name} uses {cluster.scheduler}, not Kueue; fit models "
                    "Kueue's admission",
                ),
            )
        lq = self.workload.queue_name or DEFAULT_LOCAL_QUEUE
        context["local_queue"] = lq
        if self.workload.queue_name is None:
            self.notes.append(
                f"no {names.QUEUE_LABEL} label: Kueue's LocalQueue defaulting sends the job "
                f"to LocalQueue {DEFAULT_LOCAL_QUEUE}"
            )
        view = ClusterView.of(self.platform, cluster)
        plans = cluster_queues(view)
        plan = next((p for p in plans if any(n.name == ns.name for n in p.namespaces)), None)
        if plan is None:
            queue = self.platform.queues.get(team.queue)
            if queue is None:
                why = f"team {team.name}'s queue {team.queue} is not declared"
            else:
                why = (
                    f"team {team.name}'s queue {queue.name} is on cluster {queue.cluster}, so "
                    f"cluster {cluster.name} has no ClusterQueue for it"
                )
            return self.result(
                NEVER,
                f"namespace {ns.name} has no ClusterQueue",
                **context,
                message=f"LocalQueue {lq} doesn't exist",
                reasons=(
                    f"namespace {ns.name} has no LocalQueue: {why}",
                    "move the namespace to the queue's cluster, or give the team a queue on "
                    f"{cluster.name}",
                ),
            )
        if lq != DEFAULT_LOCAL_QUEUE:
            return self.result(
                NEVER,
                f"LocalQueue {lq} doesn't exist",
                **context,
                message=f"LocalQueue {lq} doesn't exist",
                reasons=(
                    f"namespace {ns.name} has one LocalQueue, {DEFAULT_LOCAL_QUEUE} (pointing at "
                    f"ClusterQueue {plan.name}); the job's {names.QUEUE_LABEL} label names {lq}",
                    f"set the label to {DEFAULT_LOCAL_QUEUE}, or remove it",
                ),
            )
        context.update(cluster_queue=plan.name, cohort=plan.queue.name)
        priority = self.priority(team, plan, plans, context)
        if isinstance(priority, FitResult):
            return priority
        context.update(
            priority=priority[0], priority_value=priority[1], priority_source=priority[2]
        )
        cohort = [p for p in plans if p.queue.name == plan.queue.name]
        fair_sharing = kueue.fair_sharing_enabled(view.queues)
        excluded = kueue.excluded_resource_prefixes(view.pools)
        return self.admit(team, ns, plan, cohort, context, (priority[1], fair_sharing), excluded)

    def priority(
        self,
        team: Team,
        plan: ClusterQueuePlan,
        plans: Sequence[ClusterQueuePlan],
        context: dict[str, Any],
    ) -> tuple[str | None, int, str] | FitResult:
        """The WorkloadPriorityClass (or PriorityClass) name, its value and where it came from.

        Both kinds of class are named `<queue>-<priority>` and are cluster-scoped, so any queue
        of the cluster provides them."""
        queue = plan.queue
        queues = {p.queue.name: p.queue for p in plans}
        classes = {
            f"{q.name}-{prio.name}": (q, prio) for q in queues.values() for prio in q.priorities
        }
        own = ", ".join(f"{queue.name}-{p.name}" for p in queue.priorities)
        label = self.workload.priority_class
        if label is not None:
            found = classes.get(label)
            if found is None:
                return self.result(
                    NEVER,
                    f"WorkloadPriorityClass {label} not found",
                    **context,
                    message=f'workloadpriorityclasses.kueue.x-k8s.io "{label}" not found',
                    reasons=(
                        f"the job's {names.PRIORITY_LABEL} label names {label}, which does "
                        f"not exist; queue {queue.name}'s WorkloadPriorityClasses are {own}",
                    ),
                )
            if found[0].name != queue.name:
                self.notes.append(
                    f"priority {label} belongs to queue {found[0].name}, not to team "
                    f"{team.name}'s queue {queue.name}"
                )
            return label, found[1].value, f"label {names.PRIORITY_LABEL}"
        pod_class = next(
            (ps.priority_class_name for ps in self.workload.pod_sets if ps.priority_class_name),
            None,
        )
        if pod_class is not None:
            found = classes.get(pod_class)
            if found is None:
                return self.result(
                    NEVER,
                    f"PriorityClass {pod_class} not found",
                    **context,
                    message=f'priorityclasses.scheduling.k8s.io "{pod_class}" not found',
                    reasons=(
                        f"the pod template's priorityClassName {pod_class} does not exist; "
                        f"queue {queue.name}'s PriorityClasses are {own}",
                    ),
                )
            return pod_class, found[1].value, "the pod template's priorityClassName"
        # Kueue has no per-namespace default priority: a workload with neither label nor
        # priorityClassName runs at 0. Name the class the team's file intends, so the author
        # can add the label.
        intended: Priority | None = queue.priority(team.priority) if team.priority else None
        intended = intended or queue.default_priority
        advice = ""
        if intended is not None:
            whose = f"team {team.name}'s" if team.priority else f"queue {queue.name}'s default"
            advice = (
                f"; label it kueue.x-k8s.io/priority-class: {queue.name}-{intended.name} "
                f"for {whose} priority ({intended.value})"
            )
        return None, 0, f"no priority label or priorityClassName: Kueue's default 0{advice}"

    # -- flavors

    def admit(
        self,
        team: Team,
        ns: Namespace,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        context: dict[str, Any],
        policy: tuple[int, bool],
        excluded: tuple[str, ...] = kueue.EXCLUDED_RESOURCE_PREFIXES,
    ) -> FitResult:
        """Kueue's flavor assignment, then what the nodes and the namespace quota decide.

        `excluded` is the cluster's `resources.excludeResourcePrefixes`: Kueue drops those
        resources from every pod set before it assigns flavors (the pools' RDMA resources)."""
        priority, fair_sharing = policy
        defaults = {**DEFAULT_CONTAINER, **team.defaults}
        default_requests = {
            "cpu": quantity.parse(defaults["cpu"]),
            "memory": quantity.parse(defaults["memory"]),
        }
        default_limits = {"memory": quantity.parse(defaults["memory"])}
        for ps in self.workload.pod_sets:
            for container, resource in ps.limit_without_request():
                if resource in default_requests:
                    shown = _amount(resource, default_requests[resource])
                    self.notes.append(
                        f"pod set {ps.name}, container {container}: a {resource} limit without a "
                        f"request; Kueue counts the namespace's LimitRange default request "
                        f"({shown}), not the limit"
                    )
            if ps.resource_claims:
                self.notes.append(
                    f"pod set {ps.name} claims devices through DRA ({', '.join(ps.resource_claims)}): "
                    "fit does not count them"
                )
            over = ps.over_limit()
            if over:
                listed = ", ".join(f"{c} {r}" for c, r in over)
                return self.result(
                    NEVER,
                    "requests exceed limits",
                    **context,
                    message="requests must not exceed its limits",
                    reasons=(f"pod set {ps.name}: the request exceeds the limit for {listed}",),
                )
        # resources the Kueue configuration excludes are not counted against any quota
        requested = {
            ps.name: ps.requests(default_requests, default_limits) for ps in self.workload.pod_sets
        }
        per_pod = {name: workloads.drop_excluded(r, excluded) for name, r in requested.items()}
        assigner = _Assigner(plan, cohort, per_pod)
        counts = {ps.name: ps.count for ps in self.workload.pod_sets}
        unit = assigner.assign(self.workload.pod_sets, counts)
        admitted_replicas = 1
        replicas = self.workload.replicas
        final = unit
        if unit.failed:
            partial = self.partial(assigner, counts)
            if partial is not None:
                final = partial
        elif replicas > 1:
            best, best_n = unit, 1
            low, high = 1, replicas
            while low <= high:
                mid = (low + high) // 2
                trial = assigner.assign(
                    self.workload.pod_sets, {k: v * mid for k, v in counts.items()}
                )
                if trial.failed:
                    high = mid - 1
                else:
                    best, best_n, low = trial, mid, mid + 1
            final, admitted_replicas = best, best_n
        fields: dict[str, Any] = dict(
            context,
            replicas=replicas,
            admitted_replicas=admitted_replicas,
            replica_unit=self.workload.replica_unit,
            flavors_tried=tuple(f.pool.name for f in assigner.flavors),
        )
        if final.failed:
            fields["admitted_replicas"] = 0
            return self.never(assigner, plan, final, fields)
        physical = self.physical(assigner, final) + self.namespace_quota(team, ns, final)
        quotas = assigner.quotas(final.usage)
        lenders = assigner.lenders(quotas)
        one = unit if replicas > 1 else final  # one Workload's pod sets; the quota of them all
        fields.update(pod_sets=tuple(one.pod_sets), quotas=quotas, lenders=lenders)
        self.notes.extend(_sharing_notes(assigner, final))
        self.notes.extend(_rdma_notes(assigner, one, requested))
        self.notes.extend(
            f"pod set {ps.name} asks for no GPU, yet Kueue gives it flavor {ps.flavor} like any "
            f"other: its pods run on pool {ps.flavor}'s nodes"
            for ps in one.pod_sets
            if ps.flavor and not any(r not in _HOST_RESOURCES for r in ps.per_pod)
        )
        if physical:
            chosen = ", ".join(sorted({ps.flavor or "" for ps in final.pod_sets}))
            return self.result(
                NEVER,
                "its pods could never be scheduled",
                **fields,
                reasons=(
                    *physical,
                    f"Kueue would admit it to flavor {chosen} (the quota allows it), but the "
                    "pods would stay Pending"
                    + (
                        f"; waitForPodsReady evicts and requeues it every {plan.queue.gang_timeout}"
                        if plan.queue.wait_for_pods_ready and plan.queue.gang_timeout
                        else ""
                    ),
                ),
            )
        borrowed = [q for q in quotas if q.borrowed > 0]
        verdict = BORROWS if borrowed else FITS
        partial_note = self.partial_note(final, admitted_replicas)
        if borrowed:
            by_flavor: dict[str, list[str]] = {}
            for q in borrowed:
                by_flavor.setdefault(q.flavor, []).append(
                    f"{_amount(q.resource, q.borrowed)} {q.resource}"
                )
            listed = "; ".join(f"{', '.join(r)} on {f}" for f, r in by_flavor.items())
            summary = f"admitted by borrowing {listed} from cohort {plan.queue.name}"
        else:
            flavors = ", ".join(sorted({ps.flavor or "" for ps in final.pod_sets}))
            summary = f"admitted within the nominal quota of ClusterQueue {plan.name} on {flavors}"
        if partial_note:
            summary += f" ({partial_note})"
        fields["preemption"] = _preemption(plan, priority, verdict == BORROWS, fair_sharing)
        return self.result(verdict, summary, **fields)

    def partial(self, assigner: _Assigner, counts: Mapping[str, int]) -> _Assignment | None:
        """Kueue's partial admission: a pod set with a minimum count may run with fewer pods
        (largest that fits), for jobs with the kueue.x-k8s.io/job-min-parallelism annotation."""
        sets = self.workload.pod_sets
        minimum = sets[0].min_count if len(sets) == 1 else None
        if minimum is None or minimum >= sets[0].count:
            return None
        ps = sets[0]
        low, high, best = minimum, ps.count - 1, None
        while low <= high:
            mid = (low + high) // 2
            trial = assigner.assign(sets, {ps.name: mid})
            if trial.failed:
                high = mid - 1
            else:
                best, low = trial, mid + 1
        return best

    def partial_note(self, final: _Assignment, admitted_replicas: int) -> str:
        parts = [
            f"partial admission: pod set {ps.name} runs {ps.count} of {ps.requested_count} pods"
            for ps in final.pod_sets
            if ps.count < ps.requested_count
        ]
        if admitted_replicas < self.workload.replicas:
            unit = self.workload.replica_unit
            parts.append(
                f"only {admitted_replicas} of {self.workload.replicas} {unit}s at once; the "
                f"rest wait for quota"
            )
        return "; ".join(parts)

    def never(
        self,
        assigner: _Assigner,
        plan: ClusterQueuePlan,
        final: _Assignment,
        fields: dict[str, Any],
    ) -> FitResult:
        failing = [ps for ps in final.pod_sets if ps.flavor is None]
        message = "; ".join(
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(ps.reasons)}"
            for ps in failing
        )
        reasons: list[str] = []
        for ps in failing:
            reasons.extend(self.explain(assigner, plan, ps))
        fields.update(pod_sets=tuple(final.pod_sets), message=message)
        names = ", ".join(ps.name for ps in failing)
        return self.result(
            NEVER, f"no flavor of ClusterQueue {plan.name} can hold pod set {names}",
            reasons=tuple(dict.fromkeys(reasons)), **fields,
        )  # fmt: skip

    def explain(self, assigner: _Assigner, plan: ClusterQueuePlan, ps: PodSetFit) -> list[str]:
        """Plain-words reasons behind Kueue's, from the platform's inputs."""
        out: list[str] = []
        covered = set(plan.covered_resources)
        pod_set = next(p for p in self.workload.pod_sets if p.name == ps.name)
        for resource in ps.per_pod:
            if resource in covered:
                continue
            offered = sorted(
                {
                    (pool.name, o.resource)
                    for pool in self.platform.pools.values()
                    for o in pool_offers(pool)
                    if pool.cluster == plan.namespaces[0].cluster
                }
            )
            pools = [name for name, r in offered if r == resource]
            if pools:
                out.append(
                    f"{resource} is offered by pool {', '.join(pools)}, but team {plan.team.name} "
                    f"has no quota there that namespace purpose {plan.purpose} may use "
                    f"(ClusterQueue {plan.name} covers {', '.join(plan.covered_resources)})"
                )
            else:
                mig = [
                    f"{pool.name} ({', '.join(sorted(pool.mig_layout))})"
                    for pool in self.platform.pools.values()
                    if pool.cluster == plan.namespaces[0].cluster and pool.mig_layout
                ]
                extra = f"; MIG profiles on this cluster: {'; '.join(mig)}" if mig else ""
                out.append(
                    f"no pool on cluster {plan.namespaces[0].cluster} offers {resource} "
                    f"(ClusterQueue {plan.name} covers {', '.join(plan.covered_resources)}){extra}"
                )
                if resource.startswith(RDMA_RESOURCE_PREFIXES):
                    out.append(
                        f"{resource} is an RDMA device resource: Kueue leaves it out of quota "
                        "only when a pool of the cluster declares it in spec.fabric.rdma "
                        "(the pools' RDMA resources are excludeResourcePrefixes, docs/rdma.md)"
                    )
        wanted = pod_set.node_selector.get(f"{nodes.PREFIX}pool")
        if wanted and wanted not in {f.pool.name for f in plan.flavors}:
            pool = self.platform.pools.get(wanted)
            if pool is None:
                out.append(f"the nodeSelector names pool {wanted}, which does not exist")
            else:
                served = ", ".join(PURPOSE_ORDER.get(pool.workload, ()))
                out.append(
                    f"the nodeSelector asks for pool {wanted}, which serves {served} namespaces "
                    f"({pool.workload}); {plan.purpose} namespaces queue in ClusterQueue "
                    f"{plan.name}, whose flavors are {', '.join(f.pool.name for f in plan.flavors)}"
                )
        for reason in ps.reasons:
            if "request > maximum capacity" not in reason:
                continue
            flavor = reason.split(" in flavor ", 1)[1].split(",", 1)[0]
            resource = reason.removeprefix("insufficient quota for ").split(" in flavor ", 1)[0]
            own = limits_of(plan, flavor, resource)
            if own.nominal == 0 and own.borrowing == 0:
                continue  # the flavor has none of it: Kueue's reason says all there is
            lenders = assigner.lenders_of(flavor, resource)
            lent = sum((lendable for _, lendable in lenders), Decimal(0))
            text = amount_text
            limit = (
                "no borrowing limit"
                if own.borrowing is None
                else f"borrowing limit {text(resource, own.borrowing)}"
            )
            listed = ", ".join(f"{name} {text(resource, amount)}" for name, amount in lenders)
            out.append(
                f"ClusterQueue {plan.name} holds {text(resource, own.nominal)} {resource} on "
                f"{flavor} ({limit}); the rest of cohort {plan.queue.name} lends at most "
                f"{text(resource, lent)}" + (f" ({listed})" if listed else "")
            )
        return out

    def namespace_quota(self, team: Team, ns: Namespace, final: _Assignment) -> list[str]:
        """The namespace's ResourceQuota (tenancy layer): the API server refuses pods beyond it,
        whatever Kueue admitted. GPUs: the team's maximum on the pools the namespace may use;
        cpu and memory: the team's `resources`."""
        hard: dict[str, Decimal] = {}
        for _, quota, offer in usable_quotas(self.platform, team, ns):
            hard[offer.resource] = hard.get(offer.resource, Decimal(0)) + maximum_holding(
                offer, quota
            )
        for resource in ("cpu", "memory"):
            if resource in team.resources:
                hard[resource] = quantity.parse(team.resources[resource])
        total: dict[str, Decimal] = {}
        for (_, resource), value in final.usage.items():
            total[resource] = total.get(resource, Decimal(0)) + value
        return [
            f"the pods request {_amount(r, total[r])} {r} in all, but namespace {ns.name}'s "
            f"ResourceQuota allows requests.{r} up to {_amount(r, hard[r])}: the API server "
            "refuses the pods beyond it"
            for r in sorted(total, key=_resource_order)
            if r in hard and total[r] > hard[r]
        ]

    def physical(self, assigner: _Assigner, final: _Assignment) -> list[str]:
        """What Kueue does not check but the nodes decide: one pod must fit one node, and the
        pool must have room for all the pods (quotas may oversubscribe a pool)."""
        problems: list[str] = []
        for ps in final.pod_sets:
            pool = assigner.pool(ps.flavor)
            if pool is None:
                continue
            node = _node_capacity(pool)
            if pool.sharing in ("time-slicing", "mps") and gpu_sharing.has_plugin_config(pool):
                shared = {o.resource for o in pool_offers(pool)}
                for resource in sorted(shared & set(ps.per_pod)):
                    if ps.per_pod[resource] > 1:
                        problems.append(
                            f"a pod of pod set {ps.name} requests {_amount(resource, ps.per_pod[resource])} "
                            f"{resource} on pool {pool.name}, whose {pool.sharing} replicas are "
                            "one per pod: the device plugin refuses the pod "
                            "(failRequestsGreaterThanOne, UnexpectedAdmissionError)"
                        )
            for resource, value in ps.per_pod.items():
                have = node.get(resource)
                if have is not None and value > have:
                    problems.append(
                        f"a pod of pod set {ps.name} requests {_amount(resource, value)} "
                        f"{resource}, but a node of pool {pool.name} has "
                        f"{_amount(resource, have)}"
                    )
            if problems:
                continue
            per_node = _pods_per_node(ps.per_pod, node)
            if (
                per_node is not None
                and per_node * pool.nodes.min < ps.count <= per_node * pool.nodes.max
            ):
                self.notes.append(
                    f"pod set {ps.name} needs more than the {pool.nodes.min} node(s) pool "
                    f"{pool.name} always runs: its pods wait for the autoscaler to add nodes"
                )
            if per_node is not None and ps.count > per_node * pool.nodes.max:
                problems.append(
                    f"pod set {ps.name} needs {ps.count} pods, but pool {pool.name} has room for "
                    f"{per_node * pool.nodes.max} of them ({per_node} per node, "
                    f"{pool.nodes.max} nodes at most)"
                )
        return problems


class _Assigner:
    """Kueue's flavor assignment for one ClusterQueue of an empty cluster."""

    def __init__(
        self,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        per_pod: Mapping[str, Mapping[str, Decimal]],
    ) -> None:
        self.plan = plan
        self.cohort = cohort
        self.per_pod = per_pod
        self.flavors: tuple[FlavorPlan, ...] = tuple(kueue.ordered_flavors(plan))
        self.covered = frozenset(plan.covered_resources)
        self.label_keys = frozenset(k for f in self.flavors for k in nodes.node_labels(f.pool))

    def pool(self, flavor: str | None) -> Pool | None:
        return next((f.pool for f in self.flavors if f.pool.name == flavor), None)

    def maximum(self, flavor: str, resource: str) -> Decimal:
        return potential_available(self.plan, self.cohort, flavor, resource)

    def lenders_of(self, flavor: str, resource: str) -> list[tuple[str, Decimal]]:
        return [
            (p.name, limits_of(p, flavor, resource).lendable)
            for p in self.cohort
            if p.name != self.plan.name and limits_of(p, flavor, resource).lendable > 0
        ]

    def assign(self, pod_sets: Iterable[PodSet], counts: Mapping[str, int]) -> _Assignment:
        usage: dict[tuple[str, str], Decimal] = {}
        fits: list[PodSetFit] = []
        for ps in pod_sets:
            per_pod = MappingProxyType(dict(self.per_pod[ps.name]))
            count = counts[ps.name]
            total = workloads.scaled(per_pod, count)
            flavor, borrows, reasons = self.flavor_for(ps, total, usage)
            if flavor is not None:
                for resource, value in total.items():
                    usage[(flavor, resource)] = usage.get((flavor, resource), Decimal(0)) + value
            fits.append(
                PodSetFit(
                    ps.name, count, ps.count, per_pod, flavor, borrows, tuple(sorted(reasons))
                )
            )
        return _Assignment(fits, usage)

    def flavor_for(
        self,
        ps: PodSet,
        total: Mapping[str, Decimal],
        usage: Mapping[tuple[str, str], Decimal],
    ) -> tuple[str | None, bool, list[str]]:
        """The first flavor, in order, that the pod set accepts and whose quota holds it."""
        uncovered = sorted(r for r in total if r not in self.covered)
        if uncovered:
            return None, False, [f"resource {uncovered[0]} unavailable in ClusterQueue"]
        reasons: list[str] = []
        for flavor in self.flavors:
            name = flavor.pool.name
            taint = _untolerated(flavor.pool, ps.tolerations)
            if taint is not None:
                reasons.append(f"untolerated taint {taint} in flavor {name}")
                continue
            if not _matches(ps, nodes.node_labels(flavor.pool), self.label_keys):
                reasons.append(f"flavor {name} doesn't match node affinity")
                continue
            borrows = False
            misfit = False
            for resource in sorted(total):
                value = total[resource] + usage.get((name, resource), Decimal(0))
                most = self.maximum(name, resource)
                if value > most:
                    reasons.append(
                        f"insufficient quota for {resource} in flavor {name}, request > maximum "
                        f"capacity ({_amount(resource, value)} > {_amount(resource, most)})"
                    )
                    misfit = True
                    break
                if value > limits_of(self.plan, name, resource).nominal:
                    borrows = True
            if not misfit:
                return name, borrows, []
        return None, False, reasons

    def quotas(self, usage: Mapping[tuple[str, str], Decimal]) -> tuple[Quota, ...]:
        result = []
        order = {f.pool.name: i for i, f in enumerate(self.flavors)}
        for (flavor, resource), requested in sorted(
            usage.items(), key=lambda item: (order.get(item[0][0], 0), _resource_order(item[0][1]))
        ):
            own = limits_of(self.plan, flavor, resource)
            lent = sum((amount for _, amount in self.lenders_of(flavor, resource)), Decimal(0))
            result.append(
                Quota(
                    flavor=flavor,
                    resource=resource,
                    requested=requested,
                    nominal=own.nominal,
                    borrowing_limit=own.borrowing,
                    maximum=self.maximum(flavor, resource),
                    cohort_lendable=lent,
                )
            )
        return tuple(result)

    def lenders(self, quotas: Sequence[Quota]) -> tuple[Lender, ...]:
        teams = {p.name: p.team.name for p in self.cohort}
        return tuple(
            Lender(name, teams[name], q.flavor, q.resource, amount)
            for q in quotas
            if q.borrowed > 0
            for name, amount in self.lenders_of(q.flavor, q.resource)
        )


def _sharing_notes(assigner: _Assigner, final: _Assignment) -> list[str]:
    """What a GPU is on the chosen pools, where it is not a whole one."""
    notes = []
    used = {
        ps.flavor
        for ps in final.pod_sets
        if ps.flavor and any(r not in _HOST_RESOURCES for r in ps.per_pod)
    }
    for name in sorted(used):
        pool = assigner.pool(name)
        if pool is None:
            continue
        if pool.sharing in ("time-slicing", "mps"):
            notes.append(
                f"pool {pool.name} shares each GPU among {pool.replicas} pods ({pool.sharing}): "
                "one GPU unit there is a share of a GPU, without memory isolation"
            )
        elif pool.sharing == "mig":
            notes.append(
                f"pool {pool.name} hands out MIG slices: each is an isolated part of one GPU"
            )
    return notes


def _rdma_notes(
    assigner: _Assigner,
    final: _Assignment,
    requested: Mapping[str, Mapping[str, Decimal]],
) -> list[str]:
    """What Kueue left out of a pod set's quota (the excluded RDMA resources), and where the
    chosen pool does not declare the RDMA resource the pods ask for: Kueue admits them, but
    unless the pool's nodes advertise it they stay Pending."""
    notes = []
    fixed = kueue.EXCLUDED_RESOURCE_PREFIXES
    for ps in final.pod_sets:
        pool = assigner.pool(ps.flavor)
        asked = requested.get(ps.name, {})
        dropped = sorted(r for r in asked if r not in ps.per_pod and not r.startswith(fixed))
        if pool is None or not dropped:
            continue
        listed = ", ".join(f"{_amount(r, asked[r])} {r}" for r in dropped)
        notes.append(
            f"pod set {ps.name} asks for {listed} per pod, which Kueue does not count against "
            "quota (excludeResourcePrefixes)"
        )
        declared = pool.rdma.resource if pool.rdma is not None else None
        for resource in dropped:
            if resource != declared:
                has = f"declares {declared}" if declared else "declares no RDMA resource"
                notes.append(
                    f"pod set {ps.name} asks for {resource}, but pool {pool.name} {has} "
                    "(spec.fabric.rdma): unless its nodes advertise it, the pods stay Pending"
                )
    return notes


def _amount(resource: str, value: Decimal) -> str | int:
    """A quantity as Kubernetes prints it: cores, bytes in binary units, counts as integers."""
    if resource == "ephemeral-storage" or resource.startswith("hugepages-"):
        return quantity.memory(value)
    if resource not in ("cpu", "memory") and value != value.to_integral_value():
        return str(value.normalize())
    return amount_text(resource, value)


_HOST_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def _resource_order(resource: str) -> tuple[int, str]:
    return ({"cpu": 0, "memory": 1}.get(resource, 2), resource)


def _untolerated(pool: Pool, tolerations: Sequence[Toleration]) -> str | None:
    """The first NoSchedule/NoExecute taint of the pool that neither the pod nor the flavor
    tolerates (Kueue adds the ResourceFlavor's tolerations, which match the pool's taints)."""
    flavor = [
        Toleration(t["key"], t["operator"], t.get("value", ""), t.get("effect", ""))
        for t in nodes.tolerations(pool)
    ]
    for taint in pool.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in (*tolerations, *flavor)):
            value = f"={taint.value}" if taint.value else ""
            return f"{taint.key}{value}:{taint.effect}"
    return None


def _matches(ps: PodSet, labels: Mapping[str, str], keys: frozenset[str]) -> bool:
    """Kueue's `flavorSelector`: the pod's nodeSelector and required node affinity, limited to
    the label keys the ClusterQueue's flavors use, against the flavor's node labels."""
    for key, value in ps.node_selector.items():
        if key in keys and labels.get(key) != value:
            return False
    terms = []
    for term in ps.affinity:
        kept = tuple(r for r in term if r.key in keys)
        if not kept:
            return True  # a term without relevant keys matches every flavor
        terms.append(kept)
    return not terms or any(all(r.matches(labels) for r in term) for term in terms)


def _node_capacity(pool: Pool) -> dict[str, Decimal]:
    capacity = {o.resource: Decimal(o.per_node) for o in pool_offers(pool)}
    if pool.host_cpus is not None:
        capacity["cpu"] = Decimal(pool.host_cpus)
    if pool.host_memory is not None:
        capacity["memory"] = quantity.parse(pool.host_memory)
    return capacity


def _pods_per_node(per_pod: Mapping[str, Decimal], node: Mapping[str, Decimal]) -> int | None:
    counts = [
        int((node[r] / v).to_integral_value(ROUND_FLOOR))
        for r, v in per_pod.items()
        if v > 0 and r in node
    ]
    return min(counts) if counts else None


def _preemption(
    plan: ClusterQueuePlan, priority: int, borrows: bool, fair_sharing: bool
) -> tuple[str, ...]:
    """What the job could do to others once the cluster is busy, in the terms of the policy the
    queue layer renders (`kueue.preemption`)."""
    queue: Queue = plan.queue
    policy = kueue.preemption(queue, fair_sharing)
    lower = [p for p in queue.priorities if p.value < priority]
    lower_text = ", ".join(f"{queue.name}-{p.name} ({p.value})" for p in lower)
    out = []
    within = policy["withinClusterQueue"]
    if within == "Never":
        out.append(
            f"never preempts workloads in ClusterQueue {plan.name} (withinClusterQueue: Never)"
        )
    elif lower or within == "LowerOrNewerEqualPriority":
        whom = "lower-priority workloads" + (
            ", or newer ones of equal priority," if within == "LowerOrNewerEqualPriority" else ""
        )
        listed = f": {lower_text}" if lower else ""
        out.append(
            f"could preempt {whom} in ClusterQueue {plan.name} (withinClusterQueue: {within}){listed}"
        )
    else:
        out.append(
            f"cannot preempt in ClusterQueue {plan.name}: no priority of queue {queue.name} is "
            f"below {priority} (withinClusterQueue: {within})"
        )
    reclaim = policy["reclaimWithinCohort"]
    if reclaim == "Never":
        out.append(
            f"does not reclaim nominal quota lent to cohort {queue.name} (reclaimWithinCohort: Never)"
        )
    else:
        whom = "any workload" if reclaim == "Any" else "lower-priority workloads"
        out.append(
            f"could reclaim its nominal quota from {whom} of other ClusterQueues borrowing it in "
            f"cohort {queue.name} (reclaimWithinCohort: {reclaim})"
        )
    borrow = policy.get("borrowWithinCohort", {}).get("policy")
    if fair_sharing:
        strategies = ", ".join(kueue.FAIR_SHARING_STRATEGIES)
        out.append(
            f"fair sharing is on: Kueue may preempt workloads of ClusterQueues in cohort "
            f"{queue.name} that use more than their fair share (preemptionStrategies: "
            f"{strategies}); borrowWithinCohort does not apply"
        )
    elif borrow in (None, "Never"):
        out.append("while borrowing, never preempts in the cohort (borrowWithinCohort: Never)")
    elif borrows:
        target = f": {lower_text}" if lower else ": none, no lower priority exists"
        out.append(
            f"while borrowing, could preempt lower-priority workloads of other ClusterQueues in "
            f"cohort {queue.name} (borrowWithinCohort: {borrow}){target}"
        )
    if borrows:
        out.append(
            "what it borrows can be taken back: a lender reclaiming its nominal quota may evict it"
        )
    return tuple(out)


# --- output ----------------------------------------------------------------------------------------


def _resources_text(values: Mapping[str, Decimal]) -> str:
    ordered = sorted(values, key=_resource_order)
    return "{" + ", ".join(f"{r}: {_amount(r, values[r])}" for r in ordered) + "}"


def fit_text(result: FitResult) -> str:
    """The answer for people; ends with a newline."""
    lines = [f"{result.file}: {result.verdict}: {result.summary}"]
    if result.kind:
        where = f"{result.namespace}/" if result.namespace else ""
        head = f"  {result.kind} {where}{result.name}"
        if result.cluster:
            head += f" on cluster {result.cluster}"
        if result.team:
            head += f" (team {result.team}, {result.purpose} namespace)"
        lines.append(head)
    if result.cluster_queue:
        lines.append(
            f"  LocalQueue {result.local_queue} -> ClusterQueue {result.cluster_queue} "
            f"(cohort {result.cohort})"
        )
    if result.priority_source:
        name = result.priority or "(none)"
        lines.append(f"  priority {name} = {result.priority_value}, from {result.priority_source}")
    if result.message:
        lines.append(f"  Kueue: {result.message}")
    if result.reasons:
        lines.append("why:" if result.verdict in (NEVER, ERROR) else "reasons:")
        lines.extend(f"  - {r}" for r in result.reasons)
    if result.pod_sets:
        lines.append("pod sets:")
        width = max(len(ps.name) for ps in result.pod_sets)
        for ps in result.pod_sets:
            count = (
                f"{ps.count}"
                if ps.count == ps.requested_count
                else f"{ps.count} of {ps.requested_count}"
            )
            target = (
                f"-> {ps.flavor}" + (" (borrows)" if ps.borrows else "")
                if ps.flavor
                else "-> no flavor"
            )
            lines.append(f"  {ps.name:<{width}}  {count} x {_resources_text(ps.per_pod)} {target}")
        if result.replicas > 1:
            unit = result.replica_unit
            if result.admitted_replicas == result.replicas:
                fate = f"all {result.replicas} can be admitted at once"
            elif result.admitted_replicas == 0:
                fate = "none can be admitted"
            else:
                fate = f"only {result.admitted_replicas} can be admitted at once"
            lines.append(
                f"  each of the {result.replicas} {unit}s is a Workload of its own: {fate}"
            )
    if result.quotas:
        lines.append(f"quota of ClusterQueue {result.cluster_queue}, in an empty cluster:")
        rows = []
        for q in result.quotas:
            limit = (
                "no borrowing limit"
                if q.borrowing_limit is None
                else f"borrowing limit {_amount(q.resource, q.borrowing_limit)}"
            )
            row = [
                q.flavor,
                q.resource,
                f"{_amount(q.resource, q.requested)} of nominal {_amount(q.resource, q.nominal)}",
                f"{limit}, at most {_amount(q.resource, q.maximum)}",
            ]
            if q.borrowed > 0:
                row.append(f"borrows {_amount(q.resource, q.borrowed)}")
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for row in rows:
            cells = [f"{row[i]:<{widths[i]}}" for i in range(3)] + list(row[3:])
            lines.append("  " + "  ".join(cells).rstrip())
    accelerators = [x for x in result.lenders if x.resource not in _HOST_RESOURCES]
    shown = accelerators or list(result.lenders)
    if shown:
        lines.append("lent by (the cohort's other ClusterQueues):")
        for lender in shown:
            lines.append(
                f"  {lender.cluster_queue} (team {lender.team}) lends up to "
                f"{_amount(lender.resource, lender.lendable)} {lender.resource} on {lender.flavor}"
            )
    if result.preemption:
        lines.append("preemption, once the cluster is busy:")
        lines.extend(f"  - {p}" for p in result.preemption)
    if result.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in result.notes)
    if result.pod_sets:
        lines.append(ASSUMPTION)
    return "\n".join(lines) + "\n"


def _json_amount(resource: str, value: Decimal | None) -> str | int | None:
    return None if value is None else _amount(resource, value)


def fit_json(result: FitResult) -> dict[str, Any]:
    """The answer for tools: plain JSON types, quantities as Kubernetes writes them."""
    return {
        "file": result.file,
        "verdict": result.verdict,
        "admissible": result.admissible,
        "summary": result.summary,
        "assumption": "empty-cluster",
        "workload": {"kind": result.kind, "name": result.name, "namespace": result.namespace}
        if result.kind
        else None,
        "cluster": result.cluster,
        "team": result.team,
        "purpose": result.purpose,
        "localQueue": result.local_queue,
        "clusterQueue": result.cluster_queue,
        "cohort": result.cohort,
        "priority": {
            "name": result.priority,
            "value": result.priority_value,
            "source": result.priority_source,
        }
        if result.priority_source
        else None,
        "podSets": [
            {
                "name": ps.name,
                "count": ps.count,
                "requestedCount": ps.requested_count,
                "perPod": {r: _amount(r, v) for r, v in ps.per_pod.items()},
                "flavor": ps.flavor,
                "borrows": ps.borrows,
                "reasons": list(ps.reasons),
            }
            for ps in result.pod_sets
        ],
        "replicas": {
            "requested": result.replicas,
            "admitted": result.admitted_replicas,
            "unit": result.replica_unit,
        },
        "quota": [
            {
                "flavor": q.flavor,
                "resource": q.resource,
                "requested": _amount(q.resource, q.requested),
                "nominal": _amount(q.resource, q.nominal),
                "borrowingLimit": _json_amount(q.resource, q.borrowing_limit),
                "maximum": _amount(q.resource, q.maximum),
                "cohortLendable": _amount(q.resource, q.cohort_lendable),
                "borrowed": _amount(q.resource, q.borrowed),
            }
            for q in result.quotas
        ],
        "lenders": [
            {
                "clusterQueue": lender.cluster_queue,
                "team": lender.team,
                "flavor": lender.flavor,
                "resource": lender.resource,
                "lendable": _amount(lender.resource, lender.lendable),
            }
            for lender in result.lenders
        ],
        "message": result.message,
        "reasons": list(result.reasons),
        "preemption": list(result.preemption),
        "notes": list(result.notes),
    }


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
    "check_fit",
    "fit_json",
    "fit_text",
]
