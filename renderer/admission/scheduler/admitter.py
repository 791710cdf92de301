"""Kueue's admission once the ClusterQueue is known: flavors, partial admission, preemption,
and what the nodes and the namespace's ResourceQuota decide beyond Kueue."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.admission.answer.result import (
    BORROWS,
    ERROR,
    FITS,
    HOST_RESOURCES,
    NEVER,
    WAITS,
    FitResult,
    PodSetFit,
    Quota,
    amount,
)
from renderer.admission.apiserver import metadata as apiserver
from renderer.admission.apiserver.gate import RenderedCluster
from renderer.admission.rendered import rendered_cluster
from renderer.admission.scheduler import after_admission as beyond
from renderer.admission.scheduler import dra, tas
from renderer.admission.scheduler.entry import Entry, preemption_for
from renderer.admission.scheduler.flavorassigner import (
    Assigner,
    Assignment,
    KueueCluster,
    kueue_cluster,
    rdma_notes,
    read_cluster,
    sharing_notes,
    topology_notes,
)
from renderer.admission.scheduler.kueue_usage import Snapshot
from renderer.admission.scheduler.never import never_reasons
from renderer.admission.scheduler.policy_lines import preemption_lines
from renderer.admission.scheduler.preemption import CohortNow, pending_ahead
from renderer.admission.scheduler.search import largest
from renderer.admission.workloads import podsets
from renderer.admission.workloads.podsets import PodSet, Workload
from renderer.layers.queueing import kueue
from renderer.layers.tenancy import DEFAULT_CONTAINER
from renderer.model import quantity
from renderer.model.platform import Namespace, Platform, Team
from renderer.model.queue_plans import ClusterQueuePlan, cluster_queues, limits_of
from renderer.model.view import ClusterView

NO_DEFAULT_LIMITS: Mapping[str, Decimal] = MappingProxyType({})
"""The limits a LimitRange's `default` adds to containers without one: none, as the tenancy
layer's LimitRange `gpuplane-defaults` has a `defaultRequest` and no `default` (Kueue's
handlePodLimitRange fills no limit)."""


@dataclass(frozen=True)
class Queued:
    """Where the workload waits, once its ClusterQueue and priority are known: what Kueue's
    admission reads beside the workload itself."""

    team: Team
    ns: Namespace
    plan: ClusterQueuePlan
    cohort: Sequence[ClusterQueuePlan]
    context: Mapping[str, Any]
    """The answer's fields so far (cluster, namespace, queues, priority)."""
    priority: int
    fair_sharing: bool
    excluded: tuple[str, ...] = kueue.EXCLUDED_RESOURCE_PREFIXES
    """The cluster's `resources.excludeResourcePrefixes`: Kueue drops those resources from
    every pod set before it assigns flavors (the pools' RDMA resources)."""


@dataclass(frozen=True)
class Assigned:
    """Kueue's flavor assignment of a workload, and what it was computed from."""

    assigner: Assigner
    unit: Assignment
    """One Workload's pod sets at their full counts."""
    final: Assignment
    """What Kueue admits: `unit`, shrunk by partial admission, or several replicas' worth."""
    admitted_replicas: int
    requested: Mapping[str, Mapping[str, Decimal]]
    """Per pod set, each pod's requests as the pod spec asks them (TAS counts these)."""
    per_pod: Mapping[str, Mapping[str, Decimal]]
    """The same without the resources Kueue's configuration excludes (quota counts these)."""
    counts: Mapping[str, int]


class Admitter:
    """One job against one platform, once its ClusterQueue and priority are known: assign
    flavors, then check what Kueue does not."""

    def __init__(
        self,
        platform: Platform,
        display: str,
        workload: Workload,
        snapshot: Snapshot | None = None,
        rendered: RenderedCluster | None = None,
    ) -> None:
        """`snapshot`: the cluster's usage now (`fit --usage`); None for an empty cluster.
        `rendered`: the cluster's objects as gpuplane renders them, where the caller has them
        (else the queueing layer renders the Kueue objects when they are needed)."""
        self.platform = platform
        self.rendered = rendered
        self.display = display
        self.workload = workload
        self.snapshot = snapshot
        self.notes: list[str] = list(workload.notes)
        self.limit_range: dict[str, Decimal] = {}
        """The `defaultRequest` of the namespace's LimitRange, once the team is known."""
        self.excluded: tuple[str, ...] = ()
        """The cluster's `excludeResourcePrefixes`, once the cluster is known."""
        self.native: KueueCluster | None = None
        """The cluster's Kueue objects, as Kueue reads them, once the cluster is known."""

    def result(self, verdict: str, summary: str, **fields: Any) -> FitResult:
        """The answer; a Workload's pod sets are listed even where Kueue assigned none of them
        (no LocalQueue, a webhook's refusal, requests over limits): they are what the Workload
        holds, with the requests Kueue counts and no flavor."""
        base: dict[str, Any] = {"kind": self.workload.kind, "name": self.workload.name}
        base.update(fields)
        base.setdefault("notes", tuple(self.notes))
        if not base.get("pod_sets"):
            base["pod_sets"] = self.unassigned()
        return FitResult(self.display, verdict, summary, **base)

    def unassigned(self) -> tuple[PodSetFit, ...]:
        """The workload's pod sets before any flavor assignment: each pod's requests after the
        namespace LimitRange's defaults where fit knows the namespace (`limit_range`), without
        the resources the cluster's Kueue excludes."""
        out = []
        for ps in self.workload.pod_sets:
            per_pod = ps.requests(self.limit_range, {})
            per_pod = podsets.drop_excluded(per_pod, self.excluded)
            out.append(
                PodSetFit(
                    ps.name, ps.count, ps.count, MappingProxyType(per_pod), None, False, tried=False
                )
            )
        return tuple(out)

    def admit(self, queued: Queued) -> FitResult:
        """Kueue's admission of the workload in its ClusterQueue: what refuses it before any
        quota is counted, the flavor assignment (with partial admission and replicas), then
        what the nodes and the namespace quota decide."""
        refused = self.unreadable_snapshot(queued) or self.refused_before_quota(queued)
        if isinstance(refused, FitResult):
            return refused
        devices = dra.claims(self.platform, queued.ns, self.workload, self.rendered)
        if devices.message is not None:  # the Workload controller's DRA step: Misconfigured
            summary = "never admitted: Kueue cannot count the devices it claims through DRA"
            return self.result(
                NEVER, summary, **queued.context, message=devices.message, reasons=devices.reasons
            )
        self.notes.extend(devices.notes)
        invalid = self.invalid_resources(queued)
        if invalid is not None:
            return invalid
        return self.assign_and_conclude(queued, devices)

    def unreadable_snapshot(self, queued: Queued) -> FitResult | None:
        if self.snapshot is None or self.snapshot.readable:
            return None
        return self.result(
            ERROR,
            "cannot read the usage snapshot",
            **queued.context,
            reasons=(
                *self.snapshot.problems,
                "pass the JSON of `kubectl get workloads,clusterqueues -A -o json`, or of "
                "Kueue's visibility API (pendingworkloads); see docs/fit.md",
            ),
        )

    def refused_before_quota(self, queued: Queued) -> FitResult | None:
        """What stops the workload before Kueue counts any quota: a webhook's refusal, a pod
        whose request exceeds its limit, bad topology annotations, too many pod sets."""
        context = queued.context
        self.limit_range = limit_range_defaults(queued.team)
        self.excluded = queued.excluded
        if (refused := self.webhook_refusal(context)) is not None:
            return refused
        for ps in self.workload.pod_sets:
            if (refused := self.pod_set_refusal(ps, context)) is not None:
                return refused
        return self.too_many_pod_sets(context)

    def webhook_refusal(self, context: Mapping[str, Any]) -> FitResult | None:
        """A validating webhook denies the create: AppWrapper's, or Kueue's for the kind."""
        if self.workload.refused is not None and self.workload.refused_by is not None:
            # another admission webhook (AppWrapper's) denies the create: the API server's words
            at_admission = self.workload.refused.startswith("admission webhook ")
            return self.result(
                NEVER,
                "refused at admission"
                if at_admission
                else f"never runs: {self.workload.refused_by} refuses it",
                **context,
                message_from=self.workload.refused_by,
                message=self.workload.refused,
                reasons=self.workload.refused_why,
            )
        if self.workload.refused is not None:  # Kueue's validating webhook for the kind
            return self.result(
                NEVER,
                "refused at admission",
                **context,
                message_from="Kueue's webhook",
                message=self.workload.refused,
                reasons=(
                    f"Kueue's webhook for {self.workload.kind} denies the object on create, so "
                    "no Workload is ever made; change the fields it names",
                ),
            )
        return None

    def pod_set_refusal(self, ps: PodSet, context: Mapping[str, Any]) -> FitResult | None:
        """One pod set: a note for a limit without a request, then the API server's refusal of
        a pod whose request exceeds its limit, or Kueue's of bad topology annotations."""
        default_requests, default_limits = self.limit_range, NO_DEFAULT_LIMITS
        for container, resource in ps.limit_without_request():
            if resource in default_requests:
                shown = amount(resource, default_requests[resource])
                self.notes.append(
                    f"pod set {ps.name}, container {container}: a {resource} limit without a "
                    f"request; Kueue counts the namespace's LimitRange default request "
                    f"({shown}), not the limit"
                )
        over = ps.over_limit(default_requests, default_limits)
        if over and ps.from_pod:  # the API server refuses the Pod itself
            listed = ", ".join(f"spec.{f} {'/'.join(r)}" for f, r in over)
            return self.result(
                NEVER,
                "refused at admission: requests exceed limits",
                **context,
                message_from="API server",
                message=f"the API server refuses the pod: a request exceeds its limit ({listed})",
                reasons=(
                    f"pod set {ps.name}: after the API server's defaulting and the namespace "
                    "LimitRange, a request exceeds its limit; raise the limit or lower the "
                    "request",
                ),
            )
        refused = tas.refusals(ps)
        if refused:  # Kueue's job webhooks (ValidateTASPodSetRequest)
            return self.result(
                NEVER,
                "refused at admission: topology annotations",
                **context,
                message_from="Kueue's webhook",
                message="; ".join(refused),
                reasons=("Kueue's webhook refuses the object: fix the pod template's "
                         "kueue.x-k8s.io/podset-* annotations",),
            )  # fmt: skip
        return None

    def too_many_pod_sets(self, context: Mapping[str, Any]) -> FitResult | None:
        """Kueue's reconciler creates the Workload; the API server refuses one of too many pod
        sets."""
        too_many = apiserver.too_many_pod_sets(
            self.workload.kind, self.workload.name, len(self.workload.pod_sets)
        )
        if too_many is None:
            return None
        return self.result(
            NEVER,
            "never admitted: too many pod sets for a Workload",
            **context,
            message_from="API server",
            message=too_many,
            reasons=(
                f"Kueue makes one Workload of {len(self.workload.pod_sets)} pod sets for the "
                f"{self.workload.kind}; a Workload holds at most {apiserver.MAX_POD_SETS}, "
                "so the Workload is never created and the job stays suspended; split it",
            ),
        )

    def invalid_resources(self, queued: Queued) -> FitResult | None:
        """`workload.ValidateAdmissibility`: a request over its limit once the namespace
        LimitRange's defaults are in (reason Misconfigured)."""
        context = queued.context
        default_requests, default_limits = self.limit_range, NO_DEFAULT_LIMITS
        invalid = podsets.resources_validation_message(
            self.workload.pod_sets, default_requests, default_limits
        )
        if invalid is not None:
            return self.result(
                NEVER,
                "requests exceed limits",
                **context,
                message=invalid,
                reasons=(
                    "Kueue fills missing requests from the namespace LimitRange's defaultRequest "
                    f"({_listed(default_requests)}; it sets no default limit) before limits "
                    "stand in for requests still missing, then refuses a pod whose request "
                    "exceeds its limit: set the request (or raise the limit)",
                ),
            )
        return None

    def assign_and_conclude(self, queued: Queued, devices: dra.Claims) -> FitResult:
        """Assign flavors to the whole workload, then conclude."""
        return self.conclude(queued, self.assign(queued, devices))

    def assign(self, queued: Queued, devices: dra.Claims) -> Assigned:
        """Kueue's flavor assignment of the whole workload: with fewer pods where partial
        admission allows it, and as many of its identical Workloads as hold at once."""
        plan, cohort, excluded = queued.plan, queued.cohort, queued.excluded
        default_requests, default_limits = self.limit_range, NO_DEFAULT_LIMITS
        # resources the Kueue configuration excludes are not counted against any quota
        requested = {
            ps.name: ps.requests(default_requests, default_limits) for ps in self.workload.pod_sets
        }
        dra.add_devices(requested, devices.per_pod)
        per_pod = {name: podsets.drop_excluded(r, excluded) for name, r in requested.items()}
        cluster = self.platform.clusters[plan.namespaces[0].cluster]
        if self.rendered is not None and self.rendered.name == cluster.name:
            self.native = read_cluster(self.rendered.objects)
        else:
            self.native = kueue_cluster(self.platform, cluster)
        assigner = Assigner(
            plan, cohort, per_pod, native=self.native, cluster=cluster, requested=requested
        )
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
            most = largest(2, replicas, self.replicas_attempt(assigner, counts))
            if most is not None:
                admitted_replicas, final = most
        return Assigned(assigner, unit, final, admitted_replicas, requested, per_pod, counts)

    def conclude(self, queued: Queued, assigned: Assigned) -> FitResult:
        """The answer for an assignment: never (no flavor holds it, or its pods could never
        be scheduled), waits (with `--usage`), borrows or fits."""
        plan, cohort = queued.plan, queued.cohort
        priority, fair_sharing = queued.priority, queued.fair_sharing
        team, ns, context = queued.team, queued.ns, queued.context
        assigner, unit, final = assigned.assigner, assigned.unit, assigned.final
        admitted_replicas, requested = assigned.admitted_replicas, assigned.requested
        per_pod, counts = assigned.per_pod, assigned.counts
        replicas = self.workload.replicas
        fields: dict[str, Any] = dict(
            context,
            replicas=replicas,
            admitted_replicas=admitted_replicas,
            replica_unit=self.workload.replica_unit,
            flavors_tried=tuple(f.pool.name for f in assigner.flavors),
        )
        if self.snapshot is not None:  # never does not depend on usage; say what was read
            now = self.cohort_now(plan, cohort, fair_sharing=fair_sharing)
            fields["usage"] = now.report({}, None, ())
        self.notes.extend(topology_notes(final))
        if final.failed:
            fields["admitted_replicas"] = 0
            return self.never(assigner, plan, final, fields)
        found = beyond.check(self.platform, team, ns, assigner, final, self.workload.pod_sets)
        physical = found.problems
        quotas = assigner.quotas(final.usage)
        lenders = assigner.lenders(quotas)
        one = unit if replicas > 1 else final  # one Workload's pod sets; the quota of them all
        fields.update(pod_sets=tuple(one.pod_sets), quotas=quotas, lenders=lenders)
        self.notes.extend(sharing_notes(assigner, final))
        self.notes.extend(rdma_notes(assigner, one, requested))
        self.notes.extend(
            f"pod set {ps.name} asks for no GPU, yet Kueue gives it flavor {ps.flavor} like any "
            f"other: its pods run on pool {ps.flavor}'s nodes"
            for ps in one.pod_sets
            if ps.flavor and not any(r not in HOST_RESOURCES for r in ps.per_pod)
        )
        self.notes.extend(n for n in found.notes if n not in self.notes)
        if physical:
            return self.never_scheduled(plan, final, physical, fields)
        if self.snapshot is not None:
            return self.admit_now(plan, cohort, per_pod, counts, fields, (priority, fair_sharing))
        return self.admitted_idle(queued, assigned, quotas, fields)

    def never_scheduled(
        self,
        plan: ClusterQueuePlan,
        final: Assignment,
        physical: Sequence[str],
        fields: dict[str, Any],
    ) -> FitResult:
        """Kueue admits it, but no node of the flavor's pool could ever run its pods."""
        chosen = ", ".join(sorted({ps.flavor or "" for ps in final.pod_sets}))
        self.notes.append(
            f"Kueue alone admits it to flavor {chosen} (the quota allows it), but the pods "
            "would stay Pending"
            + (
                f"; waitForPodsReady evicts and requeues it every {plan.queue.gang_timeout}"
                if plan.queue.wait_for_pods_ready and plan.queue.gang_timeout
                else ""
            )
        )
        return self.result(
            NEVER,
            "its pods could never be scheduled",
            **fields,
            message_from="gpuplane",
            message="; ".join(physical),
            reasons=tuple(physical),
        )

    def admitted_idle(
        self, queued: Queued, assigned: Assigned, quotas: Sequence[Quota], fields: dict[str, Any]
    ) -> FitResult:
        """Admitted on an idle cluster: within the nominal quota or borrowing, and what
        preemption does once the cluster is busy."""
        plan, final = queued.plan, assigned.final
        borrowed = [q for q in quotas if q.borrowed > 0]
        verdict = BORROWS if borrowed else FITS
        partial_note = self.partial_note(final, assigned.admitted_replicas)
        if borrowed:
            by_flavor: dict[str, list[str]] = {}
            for q in borrowed:
                by_flavor.setdefault(q.flavor, []).append(
                    f"{amount(q.resource, q.borrowed)} {q.resource}"
                )
            listed = "; ".join(f"{', '.join(r)} on {f}" for f, r in by_flavor.items())
            summary = f"admitted by borrowing {listed} from cohort {plan.queue.name}"
        else:
            flavors = ", ".join(sorted({ps.flavor or "" for ps in final.pod_sets}))
            summary = (
                f"admitted within team {plan.team.name}'s nominal quota (Cohort "
                f"{plan.cohort.name}) on {flavors}"
            )
        if partial_note:
            summary += f" ({partial_note})"
        fields["preemption"] = preemption_lines(
            plan, queued.priority, borrows=verdict == BORROWS, fair_sharing=queued.fair_sharing
        )
        return self.result(verdict, summary, **fields)

    def cohort_now(
        self, plan: ClusterQueuePlan, cohort: Sequence[ClusterQueuePlan], *, fair_sharing: bool
    ) -> CohortNow:
        assert self.snapshot is not None
        here = plan.namespaces[0].cluster
        elsewhere = {
            other.name: name
            for name, cluster in sorted(self.platform.clusters.items())
            if name != here and cluster.scheduler == "kueue"
            for other in cluster_queues(ClusterView.of(self.platform, cluster))
        }
        rendered = self.rendered
        if rendered is None or rendered.name != here:
            rendered = rendered_cluster(self.platform, self.platform.clusters[here])
        return CohortNow(
            self.snapshot, plan, rendered, fair_sharing=fair_sharing, elsewhere=elsewhere
        )

    def admit_now(
        self,
        plan: ClusterQueuePlan,
        cohort: Sequence[ClusterQueuePlan],
        per_pod: Mapping[str, Mapping[str, Decimal]],
        counts: Mapping[str, int],
        fields: dict[str, Any],
        policy: tuple[int, bool],
    ) -> FitResult:
        """The admission against the snapshot's usage, once the job is known to be admissible
        on an idle cluster: `fits` or `borrows` now, or `waits`, with Kueue's message and what
        its preemptor would do (renderer.admission.scheduler.preemption). The steps of Kueue's
        `schedule()`: nominate (assign flavors), then admit what fits, else preempt or wait."""
        priority, fair_sharing = policy
        assert self.snapshot is not None
        now = self.cohort_now(plan, cohort, fair_sharing=fair_sharing)
        assert self.native is not None
        assigner = Assigner(plan, cohort, per_pod, now=now, native=self.native)
        assignment, admitted = self.nominate(assigner, counts)
        pending = pending_ahead(self.snapshot, plan, priority)
        entry = Entry(plan, now, assigner, assignment, admitted, pending)
        fields = dict(fields, admitted_replicas=0 if assignment.failed else admitted)
        fields.pop("preemption", None)
        if pending:
            self.notes.append(entry.queue_order_note(priority))
        if not assignment.failed:
            return self.admitted_now(entry, fields)
        return self.preempt_or_wait(entry, fields, priority)

    def nominate(self, assigner: Assigner, counts: Mapping[str, int]) -> tuple[Assignment, int]:
        """Kueue's `nominate`: the flavor assignment against the usage now, with partial
        admission where the whole job does not fit, and how many of its replicas fit at once."""
        sets = self.workload.pod_sets
        current = assigner.assign(sets, counts)
        replicas, admitted = self.workload.replicas, 1
        if current.failed:
            partial = self.partial(assigner, counts)
            # the partial trials overwrote which flavors wait: assign the whole job again
            current = partial if partial is not None else assigner.assign(sets, counts)
        elif replicas > 1:
            most = largest(2, replicas, self.replicas_attempt(assigner, counts))
            if most is not None:
                admitted, current = most
        return current, admitted

    def admitted_now(self, entry: Entry, fields: dict[str, Any]) -> FitResult:
        """The entry fits now (Kueue's `Fit` mode): admitted, within the nominal quota or
        borrowing what the team's usage now leaves over it."""
        plan, now, current = entry.plan, entry.now, entry.assignment
        fields["quotas"] = entry.assigner.quotas(current.usage)
        fields["pod_sets"] = tuple(current.pod_sets)
        fields["usage"] = now.report(current.usage, None, entry.pending)
        borrowed = {
            fr: now.team_usage(*fr)
            + v
            - max(limits_of(plan.cohort, *fr).nominal, now.team_usage(*fr))
            for fr, v in current.usage.items()
        }
        borrowed = {fr: v for fr, v in borrowed.items() if v > 0}
        if borrowed:
            listed = "; ".join(
                f"{amount(r, v)} {r} on {f}" for (f, r), v in sorted(borrowed.items())
            )
            summary = f"admitted now by borrowing {listed} from cohort {plan.queue.name}"
        else:
            flavors = ", ".join(sorted({ps.flavor or "" for ps in current.pod_sets}))
            summary = (
                f"admitted now within team {plan.team.name}'s nominal quota (Cohort "
                f"{plan.cohort.name}) on {flavors}"
            )
        note = self.partial_note(current, entry.admitted_replicas)
        if note:
            summary += f" ({note})"
        return self.result(BORROWS if borrowed else FITS, summary, **fields)

    def preempt_or_wait(self, entry: Entry, fields: dict[str, Any], priority: int) -> FitResult:
        """The entry does not fit now: Kueue's `Preempt` mode when its preemptor frees enough,
        else `NoFit`; either way the workload waits, with Kueue's message."""
        current = entry.assignment
        failing = [ps for ps in current.pod_sets if ps.flavor is None and ps.tried]
        message = "; ".join(
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(ps.reasons)}"
            for ps in failing
        )
        preemption = preemption_for(entry, failing, priority)
        requested = dict(current.usage)
        if preemption is not None:
            requested.update(preemption[1])
        chosen = preemption[0] if preemption else None
        fields.update(
            pod_sets=tuple(current.pod_sets),
            message=message,
            usage=entry.now.report(requested, chosen, entry.pending),
        )
        names = ", ".join(ps.name for ps in failing)
        if chosen is not None and chosen.frees_enough:
            summary = (
                f"not admissible now: Kueue would preempt {len(chosen.targets)} workload(s) to "
                f"admit pod set {names}"
            )
        else:
            summary = (
                f"not admissible now: pod set {names} waits for quota in ClusterQueue "
                f"{entry.plan.name}"
            )
        return self.result(
            WAITS,
            summary,
            reasons=(
                "it fits this ClusterQueue on an idle cluster (fit without --usage); the quota "
                "it needs is held now",
            ),
            **fields,
        )

    def partial(self, assigner: Assigner, counts: Mapping[str, int]) -> Assignment | None:
        """Kueue's partial admission: a pod set with a minimum count may run with fewer pods
        (largest that fits), for jobs with the kueue.x-k8s.io/job-min-parallelism annotation."""
        sets = self.workload.pod_sets
        minimum = sets[0].min_count if len(sets) == 1 else None
        if minimum is None or minimum >= sets[0].count:
            return None
        ps = sets[0]

        def attempt(count: int) -> Assignment | None:
            trial = assigner.assign(sets, {ps.name: count})
            return None if trial.failed else trial

        found = largest(minimum, ps.count - 1, attempt)
        return None if found is None else found[1]

    def replicas_attempt(
        self, assigner: Assigner, counts: Mapping[str, int]
    ) -> Callable[[int], Assignment | None]:
        """Whether `n` of the workload's identical Workloads (a Deployment's pods, a
        LeaderWorkerSet's groups) hold at once: their pod sets `n` times over."""

        def attempt(replicas: int) -> Assignment | None:
            trial = assigner.assign(
                self.workload.pod_sets, {k: v * replicas for k, v in counts.items()}
            )
            return None if trial.failed else trial

        return attempt

    def partial_note(self, final: Assignment, admitted_replicas: int) -> str:
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
        assigner: Assigner,
        plan: ClusterQueuePlan,
        final: Assignment,
        fields: dict[str, Any],
    ) -> FitResult:
        failing = [ps for ps in final.pod_sets if ps.flavor is None and ps.tried]
        message = "; ".join(
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(ps.reasons)}"
            for ps in failing
        )
        untried = [ps.name for ps in final.pod_sets if not ps.tried]
        if untried:
            self.notes.append(
                f"Kueue stops at the first pod set no flavor holds (assignFlavors): it did not "
                f"try pod set {', '.join(untried)}"
            )
        reasons: list[str] = []
        for ps in failing:
            pod_set = next(p for p in self.workload.pod_sets if p.name == ps.name)
            reasons.extend(never_reasons(self.platform, assigner, plan, ps, pod_set))
        fields.update(pod_sets=tuple(final.pod_sets), message=message)
        names = ", ".join(ps.name for ps in failing)
        return self.result(
            NEVER, f"no flavor of ClusterQueue {plan.name} can hold pod set {names}",
            reasons=tuple(dict.fromkeys(reasons)), **fields,
        )  # fmt: skip


def limit_range_defaults(team: Team) -> dict[str, Decimal]:
    """The `defaultRequest` of the namespace's LimitRange `gpuplane-defaults` (tenancy layer:
    the team's `defaults`, else `DEFAULT_CONTAINER`); it has no `default`, so Kueue's
    `handlePodLimitRange` fills requests, never limits."""
    defaults = {**DEFAULT_CONTAINER, **team.defaults}
    return {"cpu": quantity.parse(defaults["cpu"]), "memory": quantity.parse(defaults["memory"])}


def _listed(resources: Mapping[str, Decimal]) -> str:
    return ", ".join(f"{r} {amount(r, v)}" for r, v in sorted(resources.items()))
