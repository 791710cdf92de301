"""What decides after Kueue admits a job: the nodes, the schedulers and the namespace's
ResourceQuota (docs/fit.md, "How the answer is found", step 5).

Kueue reserves quota; it does not start pods. A job it admits can still never run: a pod that
no node of the pool can hold, a pool too small for the pods, a shared GPU asked for twice, a
nodeSelector or required node affinity naming labels no node of the pool carries (a flavor
without a Topology matches only the label keys it lists itself, `flavorSelector` in
`pkg/scheduler/flavorassigner/flavorassigner.go`, so Kueue admits such a pod set), a
`schedulerName` no scheduler of the cluster answers to (Kueue does not read it), or more than
the namespace's ResourceQuota allows. Each is a sentence of `Findings.problems`; fit answers
`never` with them, `messageFrom: gpuplane`, and says in a note what Kueue alone would do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal

from renderer.admission.answer.result import amount, resource_order
from renderer.admission.scheduler.flavorassigner import Assigner, Assignment
from renderer.admission.scheduler.nodelabels import NodeLabels, Verdict
from renderer.admission.workloads.podsets import PodSet, Requirement
from renderer.layers.gpu import sharing as gpu_sharing
from renderer.model import quantity, topology
from renderer.model.capacity import maximum_holding, pool_offers, usable_quotas
from renderer.model.caps import namespace_shares
from renderer.model.choices import TIME_SHARED
from renderer.model.platform import Cluster, Namespace, Platform, Pool, Team

DEFAULT_SCHEDULER = "default-scheduler"
"""The scheduler a pod without `schedulerName` gets (the API server's `SetDefaults_PodSpec`), and
the only one a Kueue cluster of gpuplane runs."""


@dataclass
class Findings:
    """Why the admitted pods would never run (`problems`), and what fit noticed on the way."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check(
    platform: Platform,
    team: Team,
    ns: Namespace,
    assigner: Assigner,
    final: Assignment,
    pod_sets: Sequence[PodSet],
) -> Findings:
    """Every check beyond Kueue, for the pod sets Kueue admitted in `final`."""
    found = Findings()
    cluster = platform.clusters.get(ns.cluster)
    by_name = {ps.name: ps for ps in pod_sets}
    physical(assigner, final, found)
    for fit in final.pod_sets:
        pod = by_name.get(fit.name)
        pool = assigner.pool(fit.flavor)
        if pod is None or pool is None:
            continue
        node_labels(pool, cluster, pod, found)
    schedulers(pod_sets, cluster, found)
    found.problems.extend(namespace_quota(platform, team, ns, final))
    return found


def physical(assigner: Assigner, final: Assignment, found: Findings) -> None:
    """One pod must fit one node, the pool must have room for all the pods (quotas may
    oversubscribe a pool), and a shared GPU is one per pod."""
    for ps in final.pod_sets:
        pool = assigner.pool(ps.flavor)
        if pool is None:
            continue
        problems: list[str] = []
        node = node_capacity(pool)
        if pool.sharing in TIME_SHARED and gpu_sharing.has_plugin_config(pool):
            shared = {o.resource for o in pool_offers(pool)}
            for resource in sorted(shared & set(ps.per_pod)):
                if ps.per_pod[resource] > 1:
                    problems.append(
                        f"a pod of pod set {ps.name} requests "
                        f"{amount(resource, ps.per_pod[resource])} {resource} on pool "
                        f"{pool.name}, whose {pool.sharing} replicas are one per pod: the device "
                        "plugin refuses the pod (failRequestsGreaterThanOne, "
                        "UnexpectedAdmissionError)"
                    )
        for resource, value in ps.per_pod.items():
            have = node.get(resource)
            if have is not None and value > have:
                problems.append(
                    f"a pod of pod set {ps.name} requests {amount(resource, value)} "
                    f"{resource}, but a node of pool {pool.name} has {amount(resource, have)}"
                )
        found.problems.extend(problems)
        if problems:
            continue
        per_node = pods_per_node(ps.per_pod, node)
        if per_node is None:
            continue
        if per_node * pool.nodes.min < ps.count <= per_node * pool.nodes.max:
            found.notes.append(
                f"pod set {ps.name} needs more than the {pool.nodes.min} node(s) pool "
                f"{pool.name} always runs: its pods wait for the autoscaler to add nodes"
            )
        if ps.count > per_node * pool.nodes.max:
            found.problems.append(
                f"pod set {ps.name} needs {ps.count} pods, but pool {pool.name} has room for "
                f"{per_node * pool.nodes.max} of them ({per_node} per node, "
                f"{pool.nodes.max} nodes at most)"
            )


def node_labels(pool: Pool, cluster: Cluster | None, pod: PodSet, found: Findings) -> None:
    """The pod's whole nodeSelector and required node affinity against what fit knows of the
    pool's node labels (`nodelabels.NodeLabels`). On a topology-aware flavor whose lowest level
    is the node, Kueue's TAS has already filtered the nodes by both (fit's `tas.Nodes`), so
    only the other flavors are checked here; on a TAS flavor whose lowest level is above the
    node, TAS filters by affinity only, and the nodeSelector is checked here."""
    aware = topology.topology_aware(pool)
    if aware and pool.topology_levels and pool.topology_levels[-1] == topology.HOSTNAME:
        return
    labels = NodeLabels(pool, cluster, pool.topology_levels)
    missing = [
        f"{key}={value}"
        for key, value in sorted(pod.node_selector.items())
        if _verdict(labels, Requirement(key, "In", (value,)), found).value is False
    ]
    where = f"pool {pool.name} ({_describe(pool, labels)})"
    if missing:
        found.problems.append(
            f"pod set {pod.name}'s nodeSelector asks for {', '.join(missing)}, which no node of "
            f"{where} carries: the pods would stay Pending"
        )
    unmatched = False
    if not aware and pod.affinity:
        verdicts = [[_verdict(labels, r, found) for r in term] for term in pod.affinity]
        if all(any(v.value is False for v in term) for term in verdicts):
            failing = [
                _requirement_text(r)
                for term, listed in zip(pod.affinity, verdicts, strict=True)
                for r, v in zip(term, listed, strict=True)
                if v.value is False
            ]
            unmatched = True
            found.problems.append(
                f"pod set {pod.name}'s required node affinity matches no node of {where} "
                f"({'; '.join(dict.fromkeys(failing))}): the pods would stay Pending"
            )
    if (missing or unmatched) and not aware:
        keys = ", ".join(sorted({*pod.node_selector, *(r.key for t in pod.affinity for r in t)}))
        note = (
            f"Kueue admits pod set {pod.name} to flavor {pool.name}: a flavor without a Topology "
            f"matches the pod's node labels only on the keys it lists itself (flavorSelector), "
            f"and the pod asks for {keys}"
        )
        if note not in found.notes:
            found.notes.append(note)


def _verdict(labels: NodeLabels, requirement: Requirement, found: Findings) -> Verdict:
    verdict = labels.requirement(requirement)
    found.notes.extend(n for n in verdict.assumed if n not in found.notes)
    return verdict


def _describe(pool: Pool, labels: NodeLabels) -> str:
    """What fit knows of the pool's GPUs: its catalog model and how they are shared."""
    sharing = "" if labels.sharing == "none" else f", shared by {labels.sharing}"
    return f"{pool.accelerator}{sharing}"


def _requirement_text(req: Requirement) -> str:
    if req.operator in ("Exists", "DoesNotExist"):
        return f"{req.key} {req.operator}"
    return f"{req.key} {req.operator} ({', '.join(req.values)})"


def schedulers(pod_sets: Sequence[PodSet], cluster: Cluster | None, found: Findings) -> None:
    """A pod naming a scheduler the cluster does not run stays Pending: Kueue admits it (it
    does not read `schedulerName`), but on a Kueue cluster only the default scheduler places
    pods."""
    name = cluster.name if cluster is not None else "?"
    for ps in pod_sets:
        if ps.scheduler_name is None or ps.scheduler_name == DEFAULT_SCHEDULER:
            continue
        found.problems.append(
            f"pod set {ps.name} names schedulerName {ps.scheduler_name}, but no scheduler of "
            f"cluster {name} answers to it (it runs Kueue and the {DEFAULT_SCHEDULER}): the pods "
            "would stay Pending"
        )
        found.notes.append(
            f"Kueue admits pod set {ps.name} whatever its schedulerName: Kueue does not read it"
        )


def namespace_quota(platform: Platform, team: Team, ns: Namespace, final: Assignment) -> list[str]:
    """The namespace's ResourceQuota (tenancy layer): the API server refuses pods beyond it,
    whatever Kueue admitted. GPUs: the team's maximum on the pools the namespace may use;
    cpu and memory: the namespace's share of the team's caps (`renderer.model.caps`)."""
    hard: dict[str, Decimal] = {}
    for _, quota, offer in usable_quotas(platform, team, ns):
        hard[offer.resource] = hard.get(offer.resource, Decimal(0)) + maximum_holding(offer, quota)
    shares = namespace_shares(platform.clusters[ns.cluster], team).get(ns.name, {})
    for resource in ("cpu", "memory"):
        if resource in shares:
            hard[resource] = shares[resource]
    total: dict[str, Decimal] = {}
    for (_, resource), value in final.usage.items():
        total[resource] = total.get(resource, Decimal(0)) + value
    return [
        f"the pods request {amount(r, total[r])} {r} in all, but namespace {ns.name}'s "
        f"ResourceQuota allows requests.{r} up to {amount(r, hard[r])}: the API server "
        "refuses the pods beyond it"
        for r in sorted(total, key=resource_order)
        if r in hard and total[r] > hard[r]
    ]


def node_capacity(pool: Pool) -> dict[str, Decimal]:
    """One node of the pool as the pool file gives it: its GPU units, host CPUs and memory."""
    capacity = {o.resource: Decimal(o.per_node) for o in pool_offers(pool)}
    if pool.host_cpus is not None:
        capacity["cpu"] = Decimal(pool.host_cpus)
    if pool.host_memory is not None:
        capacity["memory"] = quantity.parse(pool.host_memory)
    return capacity


def pods_per_node(per_pod: Mapping[str, Decimal], node: Mapping[str, Decimal]) -> int | None:
    counts = [
        int((node[r] / v).to_integral_value(ROUND_FLOOR))
        for r, v in per_pod.items()
        if v > 0 and r in node
    ]
    return min(counts) if counts else None


def node_problems(pool: Pool, name: str, per_pod: Mapping[str, Decimal]) -> list[str]:
    """Where one pod of a pod set is larger than a node of the pool, in plain words (for the
    reasons behind Kueue's TAS message, whose counts do not say which resource)."""
    node = node_capacity(pool)
    return [
        f"a pod of pod set {name} requests {amount(r, v)} {r}, but a node of pool {pool.name} "
        f"has {amount(r, node[r])}"
        for r, v in sorted(per_pod.items(), key=lambda item: resource_order(item[0]))
        if r in node and v > node[r]
    ]


__all__ = ["DEFAULT_SCHEDULER", "Findings", "check", "node_capacity", "node_problems"]
