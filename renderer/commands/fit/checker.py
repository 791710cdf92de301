"""Where a job goes: the team and ClusterQueue of its namespace, its LocalQueue, its priority.

What fails here fails before Kueue looks at any quota; what passes goes on to `admit`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from renderer.commands.fit.admit import Admitter
from renderer.commands.fit.result import ERROR, NEVER, FitResult
from renderer.layers.queueing import kueue
from renderer.layers.security import priority as security_priority
from renderer.layers.security.admission import CRONJOB, SUSPENDABLE_KINDS
from renderer.model import names
from renderer.model.admission import ClusterQueuePlan, cluster_queues
from renderer.model.platform import Namespace, Priority, Team
from renderer.model.security import priority_enforcement
from renderer.model.view import ClusterView

DEFAULT_LOCAL_QUEUE = kueue.DEFAULT_LOCAL_QUEUE


class Checker(Admitter):
    """One job against one platform: resolve its queue and priority, then assign flavors."""

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
        admission = self.priority_admission(team, queue.name, intended, context)
        if admission is not None:
            return admission
        advice = ""
        if intended is not None:
            whose = f"team {team.name}'s" if team.priority else f"queue {queue.name}'s default"
            advice = (
                f"; label it kueue.x-k8s.io/priority-class: {queue.name}-{intended.name} "
                f"for {whose} priority ({intended.value})"
            )
        return None, 0, f"no priority label or priorityClassName: Kueue's default 0{advice}"

    def priority_admission(
        self, team: Team, queue: str, intended: Priority | None, context: dict[str, Any]
    ) -> tuple[str, int, str] | FitResult | None:
        """What the security layer's priority policy does to a batch job without a priority
        label (`renderer.layers.security.priority`): on a cluster that serves
        MutatingAdmissionPolicies it sets the team's priority; elsewhere a
        ValidatingAdmissionPolicy refuses the job, as the API server would. None: the policy
        does not apply (serving kinds, or no priority to give)."""
        cluster = self.platform.clusters[self.platform.queues[queue].cluster]
        wl = self.workload
        batch = {(k.group, k.kind) for k in (*SUSPENDABLE_KINDS, CRONJOB)}
        group = wl.api_version.rpartition("/")[0] if "/" in wl.api_version else ""
        if intended is None or cluster.scheduler != "kueue" or (group, wl.kind) not in batch:
            return None
        value = f"{queue}-{intended.name}"
        policy = security_priority.policy_name(team)
        if priority_enforcement(cluster) == "mutating":
            return (
                value,
                intended.value,
                f"no priority label: MutatingAdmissionPolicy {policy} sets "
                f"{names.PRIORITY_LABEL}: {value} (team {team.name}'s priority)",
            )
        return self.result(
            NEVER,
            "refused at admission: no priority label",
            **context,
            message_from="API server",
            message=f"{wl.kind.lower()}s is forbidden: ValidatingAdmissionPolicy '{policy}' "
            f"with binding '{policy}' denied request: jobs of team {team.name} must name their "
            f"priority",
            reasons=(
                f"cluster {cluster.name} runs Kubernetes {cluster.kubernetes_version}, which "
                "serves no MutatingAdmissionPolicy (v1 from 1.36), so a validating policy "
                f"requires the label instead of setting it",
                f"label the job {names.PRIORITY_LABEL}: {value} for team {team.name}'s "
                f"priority ({intended.value})",
            ),
        )
