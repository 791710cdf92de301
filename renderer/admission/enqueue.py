"""Where a job goes: the team and ClusterQueue of its namespace, its LocalQueue, its priority.

What fails here fails before Kueue looks at any quota; what passes goes on to `admit`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from renderer.admission.answer.result import ERROR, NEVER, FitResult
from renderer.admission.scheduler.admitter import Admitter, Queued, limit_range_defaults
from renderer.layers.queueing import kueue
from renderer.layers.security import priority as security_priority
from renderer.model import names
from renderer.model.platform import Cluster, Namespace, Priority, Queue, Team
from renderer.model.queue_plans import ClusterQueuePlan, cluster_queues, cohort_of
from renderer.model.security import priority_enforcement
from renderer.model.view import ClusterView

DEFAULT_LOCAL_QUEUE = kueue.DEFAULT_LOCAL_QUEUE


class Chosen(NamedTuple):
    """The priority Kueue gives the workload: the class's name (None: no class), its value,
    and where it came from, in words."""

    name: str | None
    value: int
    source: str


class Enqueuer(Admitter):
    """One job against one platform: find where Kueue queues it (its namespace's team and
    cluster, its LocalQueue and ClusterQueue) and at what priority, then admit it."""

    def enqueue(self, namespace: str | None, cluster: str | None) -> FitResult:
        wl = self.workload
        ns_name = namespace or wl.namespace
        if namespace and wl.namespace and namespace != wl.namespace:
            return self.namespace_refused(namespace, wl.namespace)
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

    def namespace_refused(self, option: str, own: str) -> FitResult:
        """`kubectl apply -f FILE --namespace OPTION` on an object of another metadata.namespace:
        the builder's `RequireNamespace` visitor (k8s.io/cli-runtime pkg/resource/visitor.go)
        refuses it before anything is sent, so no object is created and Kueue sees none."""
        refusal = (
            f'the namespace from the provided object "{own}" does not match the namespace '
            f"\"{option}\". You must pass '--namespace={own}' to perform this operation."
        )
        return self.result(
            ERROR,
            "--namespace does not match the job's metadata.namespace",
            namespace=own,
            reasons=(
                f"kubectl refuses the object: {refusal}",
                f"drop --namespace, or pass the job's own namespace {own} (or change its "
                "metadata.namespace)",
            ),
        )

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
        context: dict[str, Any] = {
            "cluster": ns.cluster,
            "namespace": ns.name,
            "team": team.name,
            "purpose": ns.purpose,
        }
        cluster = self.kueue_cluster(team, ns, context)
        if isinstance(cluster, FitResult):
            return cluster
        view = ClusterView.of(self.platform, cluster)
        self.limit_range = limit_range_defaults(team)  # the pod sets' requests from here on
        self.excluded = kueue.excluded_resource_prefixes(view.pools)
        lq = self.workload.queue_name or DEFAULT_LOCAL_QUEUE
        context["local_queue"] = lq
        if self.workload.queue_name is None:
            self.notes.append(
                f"no {names.QUEUE_LABEL} label: Kueue's LocalQueue defaulting sends the job "
                f"to LocalQueue {DEFAULT_LOCAL_QUEUE}"
            )
        plans = cluster_queues(view)
        plan = next((p for p in plans if any(n.name == ns.name for n in p.namespaces)), None)
        if plan is None:
            return self.no_cluster_queue(team, ns, cluster, context)
        if lq != DEFAULT_LOCAL_QUEUE:
            return self.no_local_queue(team, ns, plans, plan, context)
        context.update(cluster_queue=plan.name, cohort=plan.queue.name)
        priority = self.priority(team, plan, plans, context)
        if isinstance(priority, FitResult):
            return priority
        context.update(
            priority=priority.name, priority_value=priority.value, priority_source=priority.source
        )
        cohort = cohort_of(plans, plan)
        fair_sharing = kueue.fair_sharing_enabled(view.queues)
        excluded = kueue.excluded_resource_prefixes(view.pools)
        return self.admit(
            Queued(team, ns, plan, cohort, context, priority.value, fair_sharing, excluded)
        )

    def kueue_cluster(
        self, team: Team, ns: Namespace, context: dict[str, Any]
    ) -> Cluster | FitResult:
        """The namespace's cluster, where it is declared and schedules with Kueue."""
        cluster = self.platform.clusters.get(ns.cluster)
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
        return cluster

    def no_cluster_queue(
        self, team: Team, ns: Namespace, cluster: Cluster, context: dict[str, Any]
    ) -> FitResult:
        """The namespace's cluster has no ClusterQueue for it: its team's queue is elsewhere
        or not declared, so the namespace has no LocalQueue."""
        queue = self.platform.queues.get(team.queue)
        if queue is None:
            why = f"team {team.name}'s queue {team.queue} is not declared"
        else:
            why = (
                f"team {team.name}'s queue {queue.name} is on cluster {queue.cluster}, so "
                f"cluster {cluster.name} has no ClusterQueue for it"
            )
        lq = context["local_queue"]
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

    def no_local_queue(
        self,
        team: Team,
        ns: Namespace,
        plans: Sequence[ClusterQueuePlan],
        plan: ClusterQueuePlan,
        context: dict[str, Any],
    ) -> FitResult:
        """The job's queue label names a LocalQueue the namespace does not have."""
        # the API server's admission policies run on create, before Kueue; Kueue's
        # reconciler resolves the priority (ExtractPriority) before it makes the Workload
        # whose LocalQueue it then looks for (getQueueBlocker)
        first = self.priority(team, plan, plans, dict(context))
        if isinstance(first, FitResult):
            return first
        lq = context["local_queue"]
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

    def priority(
        self,
        team: Team,
        plan: ClusterQueuePlan,
        plans: Sequence[ClusterQueuePlan],
        context: dict[str, Any],
    ) -> Chosen | FitResult:
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
            instead = self.foreign_priority(team, plan, label)
            if instead is not None:
                return instead
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
            return Chosen(label, found[1].value, self.label_source(team, queue, label))
        # The security layer's priority policy runs at admission, before Kueue reads the
        # labels: a label it sets wins over a priorityClassName, and where it refuses the
        # object the answer goes on as if the object were labelled as it asks.
        intended = security_priority.team_priority(team, queue)
        admission = self.priority_admission(team, queue.name, intended, context)
        if admission is not None:
            return admission
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
            return Chosen(pod_class, found[1].value, "the pod template's priorityClassName")
        # Kueue has no per-namespace default priority: a workload with neither label nor
        # priorityClassName runs at 0 (`pkg/util/priority`, no global default PriorityClass).
        # Name the class the team's file intends, so the author can add the label.
        advice = ""
        if intended is not None:
            whose = _whose(team, queue.name)
            advice = (
                f"; label it kueue.x-k8s.io/priority-class: {queue.name}-{intended.name} "
                f"for {whose} priority ({intended.value})"
            )
        return Chosen(None, 0, f"no priority label or priorityClassName: Kueue's default 0{advice}")

    def label_source(self, team: Team, queue: Queue, label: str) -> str:
        """Where the priority label came from: the job file, or the MutatingAdmissionPolicy
        that set it on create (the chain's mutate step, `Workload.priority_set_by`)."""
        policy = self.workload.priority_set_by
        if policy is None:
            return f"label {names.PRIORITY_LABEL}"
        intended = security_priority.team_priority(team, queue)
        whose = ""
        if intended is not None and label == security_priority.class_name(queue, intended):
            whose = f" ({_whose(team, queue.name)} priority)"
        return (
            f"no priority label: MutatingAdmissionPolicy {policy} sets "
            f"{names.PRIORITY_LABEL}: {label}{whose}"
        )

    def foreign_priority(self, team: Team, plan: ClusterQueuePlan, label: str) -> Chosen | None:
        """A label naming a class not of the team's queue: the priority policy refuses the
        object (the chain's admission-policies step says so, in the API server's words,
        `Workload.priority_refused`), and Kueue's answer goes on as if the label named the
        team's own priority. None where the policy lets the label through."""
        own = {security_priority.class_name(plan.queue, p) for p in plan.queue.priorities}
        if not self.workload.priority_refused or label in own or not plan.queue.priorities:
            return None
        intended = security_priority.team_priority(team, plan.queue)
        if intended is None:
            return None
        value = security_priority.class_name(plan.queue, intended)
        return Chosen(
            value,
            intended.value,
            f"as if labelled {names.PRIORITY_LABEL}: {value}: the priority policy refuses "
            f"{label}, not a class of queue {plan.queue.name}",
        )

    def priority_admission(
        self, team: Team, queue: str, intended: Priority | None, context: dict[str, Any]
    ) -> Chosen | FitResult | None:
        """What the security layer's priority policy does to a workload without a priority
        label (`renderer.layers.security.priority`), for every kind it covers
        (`priority.covered_kind`: each kind the cluster's Kueue manages, and CronJobs). The
        admission chain evaluated the rendered policies on the object itself: where a
        ValidatingAdmissionPolicy refused it (`Workload.priority_refused`), Kueue's answer goes
        on as if it were labelled with the team's priority; where a MutatingAdmissionPolicy
        set the label, the label is there (`label_source`). What the chain does not see is the
        Jobs a CronJob creates: on a cluster that serves MutatingAdmissionPolicies the policy
        sets the team's priority on each. None: the workload has a label, the policy does not
        cover its kind or let it through, or there is no priority to give."""
        cluster = self.platform.clusters[self.platform.queues[queue].cluster]
        wl = self.workload
        if wl.priority_class is not None or intended is None:
            return None
        covered = security_priority.covered_kind(cluster, wl.api_version, wl.kind)
        if covered is None:
            return None
        queue_obj = self.platform.queues[queue]
        value = security_priority.class_name(queue_obj, intended)
        whose = _whose(team, queue)
        if priority_enforcement(cluster) == "mutating":
            if covered.kind != "CronJob":
                return None  # the chain's mutate step evaluated the policy, and set no label
            return Chosen(
                value,
                intended.value,
                "no priority label: MutatingAdmissionPolicy "
                f"{security_priority.policy_name(team)} sets "
                f"{names.PRIORITY_LABEL}: {value} on each Job it creates ({whose} priority)",
            )
        if not wl.priority_refused:
            return None  # the chain's admission-policies step let the object through
        return Chosen(
            value,
            intended.value,
            f"as if labelled {names.PRIORITY_LABEL}: {value} ({whose} priority): on "
            f"Kubernetes {cluster.kubernetes_version} the priority policy requires the label "
            "instead of setting it",
        )


def _whose(team: Team, queue: str) -> str:
    """Whose priority the policy gives: the team's own, else its queue's default."""
    return f"team {team.name}'s" if team.priority else f"queue {queue}'s default"
