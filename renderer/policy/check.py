"""Cross-file policy: the rules that need the whole platform, each with a stable id.

A rule is a function from the Platform to the Diagnostics it finds; its docstring is what
`gpuplane explain RULE` prints, so it says why the rule exists and how to satisfy it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Diagnostic, Location, Severity, closest
from renderer.findings.rules import document_rule
from renderer.model import catalog
from renderer.model.capacity import RDMA_FABRICS, WORKLOAD_PURPOSES, Offer, quota_offer, serves
from renderer.model.names import (
    ARGO_WORKFLOWS_ADDON,
    DEFAULT_POD_SECURITY,
    SCHEDULER_ADDON,
)
from renderer.model.platform import Cluster, GpuQuota, Namespace, Platform, Pool, Queue, Team

RuleFunction = Callable[[Platform], Iterable[Diagnostic]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    check: RuleFunction


POLICY: list[Rule] = []


def rule(rule_id: str) -> Callable[[RuleFunction], RuleFunction]:
    """Register a policy rule; its docstring becomes its `explain` text."""

    def register(function: RuleFunction) -> RuleFunction:
        document_rule(rule_id, "policy", function.__doc__ or rule_id)
        POLICY.append(Rule(rule_id, function))
        return function

    return register


def check_policy(platform: Platform) -> list[Diagnostic]:
    """Run every rule; all findings, never only the first."""
    return [d for r in POLICY for d in r.check(platform)]


RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def _did_you_mean(name: str, known: Iterable[str]) -> str | None:
    close = closest(name, known)
    return f"did you mean '{close}'?" if close else None


def _pools_by_cluster(p: Platform) -> dict[str, list[Pool]]:
    """The pools of each cluster, in name order: rules that compare a cluster's pools."""
    by_cluster: dict[str, list[Pool]] = defaultdict(list)
    for pool in p.pools.values():
        by_cluster[pool.cluster].append(pool)
    return by_cluster


def _error(
    rule_id: str,
    message: str,
    at: Location,
    hint: str | None = None,
    notes: tuple[tuple[str, Location], ...] = (),
) -> Diagnostic:
    return Diagnostic(rule_id, message, at, notes=notes, hint=hint)


# --- references -----------------------------------------------------------------------------


@rule("unknown-reference")
def references_resolve(p: Platform) -> Iterator[Diagnostic]:
    """Every name an object refers to must exist: clusters, pools, queues.

    Teams name their queue, their namespaces' clusters and the pools they hold quota on; pools
    and queues name their cluster; queues name their pools. A dangling name would render objects
    that point at nothing (a LocalQueue with no ClusterQueue, a flavor with no nodes).
    """

    def check(
        kind: str, name: str, known: Iterable[str], at: Location, what: str
    ) -> Iterator[Diagnostic]:
        known = list(known)
        if name not in known and not p.is_broken(kind, name):
            yield _error(
                "unknown-reference",
                f"{what} '{name}' does not exist",
                at,
                _did_you_mean(name, known) or f"add {kind.lower()}s/{name}.yaml",
            )

    for pool in p.pools.values():
        yield from check(
            "Cluster", pool.cluster, p.clusters, pool.origin.at("spec", "cluster"), "cluster"
        )
    for queue in p.queues.values():
        yield from check(
            "Cluster", queue.cluster, p.clusters, queue.origin.at("spec", "cluster"), "cluster"
        )
        for index, pool_name in enumerate(queue.pools):
            yield from check(
                "Pool", pool_name, p.pools, queue.origin.at("spec", "pools", index), "pool"
            )
    for team in p.teams.values():
        yield from check("Queue", team.queue, p.queues, team.origin.at("spec", "queue"), "queue")
        for ns in team.namespaces:
            yield from check("Cluster", ns.cluster, p.clusters, ns.origin.at("cluster"), "cluster")
        for quota in team.gpus:
            yield from check("Pool", quota.pool, p.pools, quota.origin.at("pool"), "pool")


@rule("queue-pool-elsewhere")
def queue_pools_on_its_cluster(p: Platform) -> Iterator[Diagnostic]:
    """A queue may only list pools of its own cluster.

    A queue is one Kueue cohort on one cluster; a pool of another cluster has no nodes there, so
    quota on it would admit workloads that can never be scheduled.
    """
    for queue in p.queues.values():
        for index, name in enumerate(queue.pools):
            pool = p.pools.get(name)
            if pool is not None and pool.cluster != queue.cluster:
                yield _error(
                    "queue-pool-elsewhere",
                    f"queue '{queue.name}' is on cluster '{queue.cluster}' but pool '{name}' is on '{pool.cluster}'",
                    queue.origin.at("spec", "pools", index),
                    "remove the pool from this queue, or list it in a queue of its own cluster",
                    (("the pool's cluster is set here", pool.origin.at("spec", "cluster")),),
                )


@rule("pool-not-in-queue")
def team_pools_in_queue(p: Platform) -> Iterator[Diagnostic]:
    """A team may hold quota only on pools that its queue lists.

    The team's ClusterQueue joins its queue's cohort; quota on a pool outside it would be a flavor
    no one else can lend to or borrow from, and escapes the queue's fair-sharing policy.
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        if queue is None:
            continue
        for quota in team.gpus:
            if quota.pool in p.pools and quota.pool not in queue.pools:
                yield _error(
                    "pool-not-in-queue",
                    f"team '{team.name}' holds quota on pool '{quota.pool}', which queue '{queue.name}' does not list",
                    quota.origin.at("pool"),
                    f"add '{quota.pool}' to {queue.origin.file} spec.pools, or use one of: {', '.join(queue.pools)}",
                )


@rule("duplicate-quota")
def quota_entries_unique(p: Platform) -> Iterator[Diagnostic]:
    """A team lists each pool (each MIG profile of a pool) at most once in `gpus`.

    Two entries for the same pool would render two flavor quotas for one flavor, which Kueue
    rejects; add the numbers together instead.
    """
    for team in p.teams.values():
        seen: dict[tuple[str, str | None], GpuQuota] = {}
        for quota in team.gpus:
            key = (quota.pool, quota.profile)
            if key in seen:
                what = f"pool '{quota.pool}'" + (
                    f" profile '{quota.profile}'" if quota.profile else ""
                )
                yield _error(
                    "duplicate-quota",
                    f"team '{team.name}' lists {what} twice",
                    quota.origin.location,
                    "merge the two entries",
                    (("first listed here", seen[key].origin.location),),
                )
            seen.setdefault(key, quota)


# --- names ----------------------------------------------------------------------------------


@rule("namespace-conflict")
def namespaces_unique(p: Platform) -> Iterator[Diagnostic]:
    """A namespace name is used once per cluster, across all teams.

    Two teams declaring the same namespace would overwrite each other's quota, RBAC and network
    policy: the second one silently wins.
    """
    first: dict[tuple[str, str], tuple[Team, Namespace]] = {}
    for team in p.teams.values():
        for ns in team.namespaces:
            key = (ns.cluster, ns.name)
            if key in first:
                owner, earlier = first[key]
                whose = "its own list" if owner.name == team.name else f"team '{owner.name}'"
                yield _error(
                    "namespace-conflict",
                    f"namespace '{ns.name}' on cluster '{ns.cluster}' is already declared by {whose}",
                    ns.origin.at("name"),
                    "choose another name, e.g. prefix it with the team name",
                    (("declared first here", earlier.origin.at("name")),),
                )
            else:
                first[key] = (team, ns)


@rule("reserved-namespace")
def namespaces_not_reserved(p: Platform) -> Iterator[Diagnostic]:
    """Teams may not claim Kubernetes' own namespaces (`default`, `kube-*`).

    Quotas, network policies and RoleBindings rendered into them would break the cluster's system
    components or hand a team control over them.
    """
    for team in p.teams.values():
        for ns in team.namespaces:
            if ns.name in RESERVED_NAMESPACES or ns.name.startswith("kube-"):
                yield _error(
                    "reserved-namespace",
                    f"namespace '{ns.name}' is reserved for Kubernetes itself",
                    ns.origin.at("name"),
                    f"use a team-owned name such as '{team.name}-{ns.purpose}'",
                )


@rule("rbac-reserved-group")
def groups_not_system(p: Platform) -> Iterator[Diagnostic]:
    """IdP groups may not be Kubernetes' own `system:` groups.

    Binding `system:authenticated` or `system:masters` would hand a namespace to every user of the
    cluster, or name a group that is already cluster-admin. Teams can only widen access to their
    own namespaces through their own IdP groups.
    """
    for team in p.teams.values():
        for field_name, groups in (
            ("owners", team.owners),
            ("members", team.members),
            ("viewers", team.viewers),
        ):
            for index, group in enumerate(groups):
                if group.startswith("system:"):
                    yield _error(
                        "rbac-reserved-group",
                        f"team '{team.name}' binds the Kubernetes system group '{group}'",
                        team.origin.at("spec", field_name, index),
                        "name the team's own IdP group",
                    )
    for cluster in p.clusters.values():
        for index, group in enumerate(cluster.platform_owners):
            if group.startswith("system:"):
                yield _error(
                    "rbac-reserved-group",
                    f"platform owner '{group}' is a Kubernetes system group",
                    cluster.origin.at("spec", "platformOwners", index),
                    "name the platform team's IdP group",
                )


# --- capacity -------------------------------------------------------------------------------


def _quota_offers(p: Platform) -> dict[tuple[str, str], list[tuple[Team, GpuQuota, Offer]]]:
    """Each (pool, resource) with the team quotas that draw on it."""
    by_offer: dict[tuple[str, str], list[tuple[Team, GpuQuota, Offer]]] = defaultdict(list)
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            offer = quota_offer(pool, quota) if pool is not None else None
            if offer is not None:
                by_offer[(offer.pool, offer.resource)].append((team, quota, offer))
    return by_offer


def _what(offer: Offer) -> str:
    return f"{offer.unit}s" if not offer.profile else f"{offer.profile} MIG instances"


def _overcommit(
    rule_id: str,
    pool: Pool,
    entries: list[tuple[Team, GpuQuota, int]],
    capacity: int,
    what: str,
    hint: str,
    capacity_note: str,
) -> Diagnostic:
    """One finding per over-committed pool, on the largest request, noting every other one.

    Any of the requests could be lowered, so all are named; the finding sits on the largest,
    which is where a reviewer usually looks first.
    """
    total = sum(amount for _, _, amount in entries)
    ranked = sorted(entries, key=lambda e: -e[2])
    team, quota, amount = ranked[0]
    notes = tuple(
        (f"team '{t.name}' asks for {a}", q.origin.at("nominal")) for t, q, a in ranked[1:] if a
    )
    return _error(
        rule_id,
        f"pool '{pool.name}' is promised {total} {what} and holds {capacity}: "
        f"team '{team.name}' asks for {amount} of them",
        quota.origin.at("nominal"),
        hint.format(index=quota.origin.path[-1], pool=pool.name, over=total - capacity),
        (*notes, (capacity_note, pool.origin.at("spec", "nodes"))),
    )


@rule("quota-exceeds-pool")
def quotas_fit_pools(p: Platform) -> Iterator[Diagnostic]:
    """The nominal quotas on a pool must fit its capacity, times the queue's oversubscription.

    Nominal quota is what a team is promised. If the promises add up to more than the pool holds
    (at its minimum size), some team's guaranteed work waits for capacity that does not exist.
    A queue may allow a deliberate ratio with `oversubscription`; the default is 1.0.
    """
    for (pool_name, _), entries in sorted(_quota_offers(p).items()):
        pool = p.pools[pool_name]
        queue = next((q for q in p.queues.values() if pool_name in q.pools), None)
        ratio = queue.oversubscription if queue is not None else 1.0
        offer = entries[0][2]
        allowed = int(offer.guaranteed * ratio)
        if sum(q.nominal for _, q, _ in entries) <= allowed:
            continue
        note = f"declares {pool.nodes.min} nodes x {offer.per_node} {_what(offer)}"
        if ratio != 1.0:
            note += (
                f", and queue '{queue.name if queue else ''}' allows {ratio:g}x oversubscription"
            )
        yield _overcommit(
            "quota-exceeds-pool",
            pool,
            [(t, q, q.nominal) for t, q, _ in entries],
            allowed,
            _what(offer),
            "lower gpus[{index}].nominal (or another team's) by {over} in total, or add nodes to '{pool}'",
            note,
        )


@rule("guaranteed-exceeds-capacity")
def guarantees_fit_pools(p: Platform) -> Iterator[Diagnostic]:
    """What teams keep for themselves (nominal minus lending limit) must fit the pool.

    Oversubscription is a bet that not every team uses its nominal quota at once; the part a team
    never lends is not a bet, so the sum of those parts must fit the real hardware.
    """
    for (pool_name, _), entries in sorted(_quota_offers(p).items()):
        pool = p.pools[pool_name]
        offer = entries[0][2]
        kept = [(t, q, q.nominal - (q.lending_limit or 0)) for t, q, _ in entries]
        if sum(k for _, _, k in kept) <= offer.guaranteed:
            continue
        yield _overcommit(
            "guaranteed-exceeds-capacity",
            pool,
            kept,
            offer.guaranteed,
            f"{_what(offer)} that are never lent",
            "set or raise lendingLimit on gpus[{index}] (or another team's) so {over} can be lent, or add nodes to '{pool}'",
            f"declares {pool.nodes.min} nodes x {offer.per_node} {_what(offer)}",
        )


@rule("lending-exceeds-nominal")
def lending_within_nominal(p: Platform) -> Iterator[Diagnostic]:
    """A team cannot lend more than its nominal quota.

    `lendingLimit` is how much of the team's own nominal quota others may borrow; Kueue requires
    it to be at most nominal.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            if quota.lending_limit is not None and quota.lending_limit > quota.nominal:
                yield _error(
                    "lending-exceeds-nominal",
                    f"lendingLimit {quota.lending_limit} is more than nominal {quota.nominal} on pool '{quota.pool}'",
                    quota.origin.at("lendingLimit"),
                    f"set lendingLimit to at most {quota.nominal}",
                )


@rule("borrowing-exceeds-pool")
def borrowing_within_pool(p: Platform) -> Iterator[Diagnostic]:
    """Nominal plus borrowing limit may not exceed what the pool can ever hold.

    A borrowing limit past the pool's maximum size promises GPUs that no node provides, and the
    namespace's ResourceQuota (which backs the queue up) would be set above the hardware.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            offer = quota_offer(pool, quota) if pool is not None else None
            if offer is None or quota.borrowing_limit is None:
                continue
            if quota.nominal + quota.borrowing_limit > offer.maximum:
                yield _error(
                    "borrowing-exceeds-pool",
                    f"nominal {quota.nominal} + borrowingLimit {quota.borrowing_limit} exceeds pool "
                    f"'{quota.pool}', which holds at most {offer.maximum} {_what(offer)}",
                    quota.origin.at("borrowingLimit"),
                    f"set borrowingLimit to at most {max(offer.maximum - quota.nominal, 0)}",
                )


@rule("quota-needs-namespace")
def quota_has_namespace(p: Platform) -> Iterator[Diagnostic]:
    """A team's GPU quota on a pool needs a namespace of that team on the pool's cluster.

    Quota is admitted through a LocalQueue in a team namespace; without a namespace on the pool's
    cluster the quota can never be used, and usually means the namespace was forgotten.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            if not any(ns.cluster == pool.cluster for ns in team.namespaces):
                yield _error(
                    "quota-needs-namespace",
                    f"team '{team.name}' holds quota on pool '{pool.name}' but has no namespace on cluster '{pool.cluster}'",
                    quota.origin.at("pool"),
                    f"add a namespace with cluster: {pool.cluster}",
                )


@rule("training-inference-separation")
def purposes_match_pools(p: Platform) -> Iterator[Diagnostic]:
    """A pool's workload decides which namespace purposes may use it.

    The guide's common mistake: mixing training and production inference without priority and
    isolation rules. Training and fine-tuning pools serve training and batch namespaces;
    online-inference pools serve inference; batch-inference pools serve batch and inference;
    notebook pools serve notebooks and training. A queue may allow mixing explicitly with
    `mixing: {inferencePriority: NAME}`, naming its highest priority so inference always wins.
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            on_cluster = [ns for ns in team.namespaces if ns.cluster == pool.cluster]
            if on_cluster and not any(serves(pool, ns, queue) for ns in on_cluster):
                purposes = ", ".join(sorted({ns.purpose for ns in on_cluster}))
                wanted = " or ".join(sorted(WORKLOAD_PURPOSES[pool.workload]))
                yield _error(
                    "training-inference-separation",
                    f"pool '{pool.name}' ({pool.workload}) serves {wanted} namespaces; "
                    f"team '{team.name}' has only {purposes} namespaces on '{pool.cluster}'",
                    quota.origin.at("pool"),
                    f"add a {wanted} namespace, use a pool for {purposes} work, or let the queue mix workloads with mixing.inferencePriority",
                )


# --- pools and the GPU catalog -------------------------------------------------------------


@rule("unknown-accelerator")
def accelerators_known(p: Platform) -> Iterator[Diagnostic]:
    """A pool's accelerator must be a key of the GPU catalog.

    The catalog knows each accelerator's memory, MIG profiles, resource name and reference
    bandwidths; without it the pool's capacity and resource names are unknown.
    `gpuplane explain unknown-accelerator` cannot list them all; see docs/gpu-catalog.md.
    """
    for pool in p.pools.values():
        if catalog.accelerator(pool.accelerator) is None:
            suggestion = catalog.suggest(pool.accelerator)
            yield _error(
                "unknown-accelerator",
                f"accelerator '{pool.accelerator}' is not in the GPU catalog",
                pool.origin.at("spec", "accelerator"),
                f"did you mean '{suggestion}'?"
                if suggestion
                else f"known: {', '.join(sorted(catalog.CATALOG))}",
            )


@rule("mig-layout-invalid")
def mig_layouts_valid(p: Platform) -> Iterator[Diagnostic]:
    """A MIG layout must be one the accelerator can hold.

    Each profile must exist on the accelerator, each count must be within the profile's per-GPU
    maximum (as the GPU Operator's MIG manager knows them), and the instances must fit the GPU's
    7 compute slices and 8 memory slices in a valid placement. The MIG manager would otherwise
    leave the node unconfigured and its GPUs unadvertised.
    """
    for pool in p.pools.values():
        accelerator = catalog.accelerator(pool.accelerator)
        if accelerator is None or pool.sharing != "mig":
            continue
        for problem in accelerator.mig_layout_problems(pool.mig_layout):
            yield _error(
                "mig-layout-invalid",
                f"pool '{pool.name}': {problem}",
                pool.origin.at("spec", "mig", "layout"),
                "use a layout from the GPU Operator's MIG configs, e.g. all-balanced",
            )


@rule("quota-profile")
def quota_profiles_match(p: Platform) -> Iterator[Diagnostic]:
    """Quota on a MIG pool names one of its layout's profiles; quota on other pools names none.

    A MIG pool advertises one resource per profile (`nvidia.com/mig-3g.40gb`), so the quota must
    say which one it counts; on a whole-GPU or time-shared pool a profile means nothing.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            if pool.sharing == "mig" and pool.exposure != "dra":
                layout = sorted(pool.mig_layout)
                if quota.profile is None:
                    yield _error(
                        "quota-profile",
                        f"pool '{pool.name}' is a MIG pool; say which profile this quota counts",
                        quota.origin.location,
                        f"add profile: one of {', '.join(layout)}",
                    )
                elif quota.profile not in pool.mig_layout:
                    yield _error(
                        "quota-profile",
                        f"profile '{quota.profile}' is not in the MIG layout of pool '{pool.name}' ({', '.join(layout)})",
                        quota.origin.at("profile"),
                        _did_you_mean(quota.profile, layout),
                    )
            elif quota.profile is not None:
                yield _error(
                    "quota-profile",
                    f"pool '{pool.name}' does not use MIG; profile '{quota.profile}' has no meaning there",
                    quota.origin.at("profile"),
                    "remove profile",
                )


@rule("sharing-breaks-training")
def no_sharing_on_training(p: Platform) -> Iterator[Diagnostic]:
    """Time-slicing and MPS are refused on distributed-training pools.

    Multi-node training assumes every rank owns its GPU: all-reduce runs in lockstep, so one
    time-shared rank slows every rank, and memory is not isolated between replicas.
    """
    for pool in p.pools.values():
        if pool.workload == "distributed-training" and pool.sharing in ("time-slicing", "mps"):
            yield _error(
                "sharing-breaks-training",
                f"pool '{pool.name}' shares GPUs with {pool.sharing} but runs distributed training",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu for distributed training, or change the workload",
            )


@rule("dra-needs-kubernetes-1.34")
def dra_needs_new_clusters(p: Platform) -> Iterator[Diagnostic]:
    """`exposure: dra` needs Kubernetes 1.34 or later, where `resource.k8s.io/v1` is served.

    Dynamic Resource Allocation reached GA (v1) in 1.34; earlier versions serve only beta APIs
    that gpuplane does not render.
    """
    for pool in p.pools.values():
        cluster = p.clusters.get(pool.cluster)
        if pool.exposure == "dra" and cluster is not None and cluster.minor < 34:
            yield _error(
                "dra-needs-kubernetes-1.34",
                f"pool '{pool.name}' uses DRA but cluster '{cluster.name}' runs Kubernetes {cluster.kubernetes_version}",
                pool.origin.at("spec", "exposure"),
                "use exposure: device-plugin, or upgrade the cluster to 1.34",
                (("version declared here", cluster.origin.at("spec", "kubernetesVersion")),),
            )


REQUIRED_THRESHOLDS = {
    "distributed-training": ("allReduceBusBandwidthGBps", "checkpointWriteGBps", "restoreSeconds"),
    "fine-tuning": ("checkpointWriteGBps", "restoreSeconds"),
    "online-inference": ("inferenceP95Ms",),
    "batch-inference": ("inferenceP95Ms",),
    "notebooks": (),
}


@rule("acceptance-thresholds")
def pools_have_thresholds(p: Platform) -> Iterator[Diagnostic]:
    """Every pool declares the acceptance thresholds its workload is judged by.

    The guide: a cluster that cannot explain its bandwidth, checkpoint restore time or latency is
    not production infrastructure yet. Distributed training needs all-reduce bus bandwidth,
    checkpoint write throughput and restore time; fine-tuning the checkpoint figures; inference
    pools a p95 latency. The acceptance suite fails a pool that misses them.
    """
    for pool in p.pools.values():
        wanted = REQUIRED_THRESHOLDS[pool.workload]
        if pool.workload == "distributed-training" and pool.nodes.max <= 1:
            wanted = tuple(t for t in wanted if t != "allReduceBusBandwidthGBps")
        missing = [t for t in wanted if t not in pool.acceptance]
        if missing:
            yield _error(
                "acceptance-thresholds",
                f"pool '{pool.name}' ({pool.workload}) has no acceptance threshold for {', '.join(missing)}",
                pool.origin.key("spec", "acceptance"),
                f"add {', '.join(f'{m}: …' for m in missing)} under spec.acceptance",
            )


@rule("cost-currency")
def one_currency_per_cluster(p: Platform) -> Iterator[Diagnostic]:
    """All pools of a cluster state their cost in one currency.

    Effective cost per team adds GPU-hours across pools; amounts in different currencies cannot
    be added without an exchange rate the engine does not have.
    """
    by_cluster = _pools_by_cluster(p)
    for pools in by_cluster.values():
        first = pools[0]
        for pool in pools[1:]:
            if pool.currency != first.currency:
                yield _error(
                    "cost-currency",
                    f"pool '{pool.name}' costs in {pool.currency}, pool '{first.name}' on the same cluster in {first.currency}",
                    pool.origin.at("spec", "cost", "currency"),
                    f"state the cost in {first.currency}",
                )


@rule("pool-unused")
def pools_in_a_queue(p: Platform) -> Iterator[Diagnostic]:
    """A pool that no queue lists cannot be used by any team (a warning).

    Its GPUs would sit idle and unaccounted for; add it to its cluster's queue.
    """
    used = {name for q in p.queues.values() for name in q.pools}
    for pool in p.pools.values():
        if pool.name not in used:
            yield Diagnostic(
                "pool-unused",
                f"pool '{pool.name}' is in no queue, so no team can use it",
                pool.origin.at("metadata", "name"),
                hint=f"add it to spec.pools of a queue on cluster '{pool.cluster}'",
                severity=Severity.WARNING,
            )


# --- queues ---------------------------------------------------------------------------------


@rule("queue-priorities")
def priorities_coherent(p: Platform) -> Iterator[Diagnostic]:
    """A queue's priorities have unique names and values, and exactly one is the default.

    They become PriorityClasses and WorkloadPriorityClasses; jobs that name none get the default.
    """
    for queue in p.queues.values():
        names: set[str] = set()
        values: dict[int, str] = {}
        for prio in queue.priorities:
            if prio.name in names:
                yield _error(
                    "queue-priorities",
                    f"priority '{prio.name}' is declared twice",
                    prio.origin.at("name"),
                )
            if prio.value in values:
                yield _error(
                    "queue-priorities",
                    f"priorities '{values[prio.value]}' and '{prio.name}' have the same value {prio.value}",
                    prio.origin.at("value"),
                    "give each priority a distinct value so preemption order is explicit",
                )
            names.add(prio.name)
            values.setdefault(prio.value, prio.name)
        defaults = [prio for prio in queue.priorities if prio.default]
        if len(defaults) != 1:
            yield _error(
                "queue-priorities",
                f"queue '{queue.name}' has {len(defaults)} default priorities; exactly one is needed",
                queue.origin.key("spec", "priorities"),
                "mark one priority with default: true",
            )


@rule("unknown-priority")
def team_priority_known(p: Platform) -> Iterator[Diagnostic]:
    """A team's priority must be one of its queue's priorities."""
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        if (
            queue is not None
            and team.priority is not None
            and queue.priority(team.priority) is None
        ):
            known = [prio.name for prio in queue.priorities]
            yield _error(
                "unknown-priority",
                f"priority '{team.priority}' is not a priority of queue '{queue.name}'",
                team.origin.at("spec", "priority"),
                _did_you_mean(team.priority, known) or f"use one of: {', '.join(known)}",
            )


@rule("mixing-priority")
def mixing_protects_inference(p: Platform) -> Iterator[Diagnostic]:
    """A queue that mixes training and inference must protect inference with its highest priority.

    `mixing.inferencePriority` names the priority inference workloads run at; it must be a
    priority of the queue and strictly higher than every other, so training can never preempt or
    starve production inference on a shared pool.
    """
    for queue in p.queues.values():
        if queue.mixing_priority is None:
            continue
        chosen = queue.priority(queue.mixing_priority)
        at = queue.origin.at("spec", "mixing", "inferencePriority")
        if chosen is None:
            yield _error(
                "mixing-priority",
                f"mixing.inferencePriority '{queue.mixing_priority}' is not a priority of queue '{queue.name}'",
                at,
                _did_you_mean(queue.mixing_priority, [x.name for x in queue.priorities]),
            )
        elif any(other.value >= chosen.value for other in queue.priorities if other is not chosen):
            yield _error(
                "mixing-priority",
                f"priority '{chosen.name}' ({chosen.value}) is not the highest in queue '{queue.name}'",
                at,
                "name the queue's highest priority, or raise its value above the others",
            )


# --- clusters -------------------------------------------------------------------------------


def _required_addons(cluster: Cluster) -> list[str]:
    return ["gpuOperator", SCHEDULER_ADDON[cluster.scheduler], "dcgmExporter"]


def _runs_suites(p: Platform) -> set[str]:
    """The clusters with a pool some team has quota on: the workflows layer renders acceptance
    and benchmark suites there, so they need Argo Workflows."""
    return {
        p.pools[pool].cluster
        for (pool, _), entries in _quota_offers(p).items()
        if any(quota.nominal > 0 for _, quota, _ in entries)
    }


@rule("addon-version-unpinned")
def production_pins_addons(p: Platform) -> Iterator[Diagnostic]:
    """Production clusters declare and pin every add-on: GPU Operator, scheduler, DCGM exporter,
    and Argo Workflows where the acceptance suites run.

    An unpinned chart upgrades whenever its repository moves, which is how a driver or Kueue API
    change reaches production without review. Staging may float; production may not.
    """
    suites = _runs_suites(p)
    for cluster in p.clusters.values():
        if not cluster.production:
            continue
        required = _required_addons(cluster)
        if cluster.name in suites:
            required.append(ARGO_WORKFLOWS_ADDON)
        for name in required:
            if name not in cluster.addons:
                yield _error(
                    "addon-version-unpinned",
                    f"production cluster '{cluster.name}' does not declare the {name} add-on",
                    cluster.origin.key("spec", "addons"),
                    f"add spec.addons.{name}.version",
                )
        for addon in cluster.addons.values():
            enabled = addon.settings.get("enabled", True)
            if addon.version is None and enabled:
                yield _error(
                    "addon-version-unpinned",
                    f"production cluster '{cluster.name}' does not pin the {addon.name} version",
                    addon.origin.location,
                    f"add version: to spec.addons.{addon.name}",
                )


@rule("scheduler-addon-missing")
def scheduler_installed(p: Platform) -> Iterator[Diagnostic]:
    """A cluster's scheduler (Kueue or Volcano) must be among its add-ons.

    The queue layer renders that scheduler's objects; without the add-on their CRDs never arrive
    and every sync fails.
    """
    for cluster in p.clusters.values():
        wanted = SCHEDULER_ADDON[cluster.scheduler]
        if wanted not in cluster.addons and not cluster.production:
            yield _error(
                "scheduler-addon-missing",
                f"cluster '{cluster.name}' schedules with {cluster.scheduler} but does not install it",
                cluster.origin.at("spec", "scheduler"),
                f"add spec.addons.{wanted}",
            )


@rule("argo-workflows-addon-missing")
def argo_workflows_installed(p: Platform) -> Iterator[Diagnostic]:
    """A cluster whose pools run acceptance suites must declare the Argo Workflows add-on.

    The workflows layer renders WorkflowTemplates, a CronWorkflow and Argo CD's PostSync hook
    Workflow; without the controller and its CRDs the sync of that layer fails and no change is
    ever tested. Declare it with `enabled: false` when the cluster already runs Argo Workflows v4.
    """
    for name in sorted(_runs_suites(p)):
        cluster = p.clusters.get(name)
        if cluster is None or cluster.production or ARGO_WORKFLOWS_ADDON in cluster.addons:
            continue  # production: addon-version-unpinned says it, with the version
        yield _error(
            "argo-workflows-addon-missing",
            f"cluster '{cluster.name}' runs acceptance suites but does not install Argo Workflows",
            cluster.origin.key("spec", "addons"),
            f"add spec.addons.{ARGO_WORKFLOWS_ADDON}.version (the argo-workflows chart, for example 2.0.4), or enabled: false if the cluster already runs Argo Workflows v4",
        )


@rule("pod-security-loosened")
def pod_security_only_stricter(p: Platform) -> Iterator[Diagnostic]:
    """A namespace's `podSecurity` may only make its purpose's level stricter.

    Inference and batch namespaces enforce `restricted`; training and notebook namespaces enforce
    `baseline` (and audit and warn at `restricted`). Lowering inference to baseline would let
    serving pods run with extra privileges next to production traffic.
    """
    rank = {"baseline": 0, "restricted": 1}
    for team in p.teams.values():
        for ns in team.namespaces:
            default = DEFAULT_POD_SECURITY[ns.purpose]
            if ns.pod_security is not None and rank[ns.pod_security] < rank[default]:
                yield _error(
                    "pod-security-loosened",
                    f"namespace '{ns.name}' ({ns.purpose}) lowers Pod Security from {default} to {ns.pod_security}",
                    ns.origin.at("podSecurity"),
                    f"remove podSecurity, or set it to {default}",
                )


@rule("pool-host-capacity")
def pools_declare_host(p: Platform) -> Iterator[Diagnostic]:
    """Pools declare `host.cpus` and `host.memory`: CPU and memory quota follow the GPUs.

    Every pod requests CPU and memory, and Kueue refuses a workload whose ClusterQueue does not
    cover a requested resource; gpuplane gives each team CPU and memory in proportion to the share
    of a node its GPUs represent, which needs the node's allocatable CPUs and memory.
    """
    for pool in p.pools.values():
        missing = [
            f for f, v in (("cpus", pool.host_cpus), ("memory", pool.host_memory)) if v is None
        ]
        if missing:
            yield _error(
                "pool-host-capacity",
                f"pool '{pool.name}' does not declare host {' and '.join(missing)}",
                pool.origin.key("spec", "host")
                if pool.host_cpus or pool.host_memory
                else pool.origin.key("spec", "gpusPerNode"),
                "add spec.host.cpus and spec.host.memory: what one node can allocate to pods",
            )


@rule("rdma-on-tcp-fabric")
def rdma_needs_an_rdma_fabric(p: Platform) -> Iterator[Diagnostic]:
    """`fabric.rdma` belongs to an InfiniBand, RoCE or EFA fabric only.

    The block names the RDMA devices a device plugin hands to pods; an `ethernet` or `none`
    fabric has none, so every multi-node job rendered for the pool would request a resource no
    node advertises and stay Pending. Remove the block, or correct `fabric.type`.
    """
    for pool in p.pools.values():
        if pool.rdma is not None and pool.fabric not in RDMA_FABRICS:
            yield _error(
                "rdma-on-tcp-fabric",
                f"pool '{pool.name}' declares RDMA devices ({pool.rdma.resource}) on a fabric of type {pool.fabric}, which has none",
                pool.rdma.origin.key(),
                f"remove spec.fabric.rdma, or set spec.fabric.type to {', '.join(sorted(RDMA_FABRICS))}",
            )


@rule("multi-node-without-rdma")
def multi_node_pools_declare_rdma(p: Platform) -> Iterator[Diagnostic]:
    """A multi-node pool on an InfiniBand, RoCE or EFA fabric should declare `fabric.rdma`
    (a warning).

    Pods reach RDMA NICs only through the device plugin's extended resource (for example
    `rdma/rdma_shared_device_a` or `vpc.amazonaws.com/efa`). Without it the acceptance suite's
    all-reduce and the teams' distributed templates request none, NCCL silently falls back to
    TCP sockets, and the pool fails its bus-bandwidth threshold for a rendering gap, not a
    hardware fault. See docs/rdma.md.
    """
    for pool in p.pools.values():
        if pool.rdma is None and pool.fabric in RDMA_FABRICS and pool.nodes.max > 1:
            yield Diagnostic(
                "multi-node-without-rdma",
                f"pool '{pool.name}' spans up to {pool.nodes.max} nodes over {pool.fabric} but declares no RDMA resource, so its multi-node jobs would run over TCP",
                pool.origin.at("spec", "fabric", "type"),
                hint="add spec.fabric.rdma: {resource: <the device plugin's resource>, perNode: <per whole node>}",
                severity=Severity.WARNING,
            )


@rule("queue-preemption")
def preemption_coherent(p: Platform) -> Iterator[Diagnostic]:
    """Preempting to borrow needs reclaiming: `borrowWithinCohort` requires `reclaimWithinCohort`.

    Kueue refuses a ClusterQueue whose borrowWithinCohort policy preempts while
    reclaimWithinCohort is Never: a queue that may evict others to borrow must also let them
    reclaim their own quota.
    """
    for queue in p.queues.values():
        borrow = queue.preemption.get("borrowWithinCohort", "Never")
        if borrow != "Never" and queue.preemption.get("reclaimWithinCohort", "Never") == "Never":
            yield _error(
                "queue-preemption",
                f"queue '{queue.name}' preempts to borrow (borrowWithinCohort: {borrow}) but never reclaims (reclaimWithinCohort: Never)",
                queue.origin.at("spec", "preemption", "borrowWithinCohort"),
                "set reclaimWithinCohort to LowerPriority or Any, or borrowWithinCohort to Never",
            )


@rule("pool-in-several-queues")
def pool_in_one_queue(p: Platform) -> Iterator[Diagnostic]:
    """A pool belongs to one queue.

    A queue is one Kueue cohort with one oversubscription policy; a pool shared by two cohorts
    would have its capacity promised twice, and the capacity rules could not tell which queue's
    limit applies.
    """
    first: dict[str, Queue] = {}
    for queue in p.queues.values():
        for index, name in enumerate(queue.pools):
            owner = first.setdefault(name, queue)
            if owner is not queue:
                yield _error(
                    "pool-in-several-queues",
                    f"pool '{name}' is already in queue '{owner.name}'",
                    queue.origin.at("spec", "pools", index),
                    "remove it from one of the two queues, or split the pool",
                    (
                        (
                            "listed first here",
                            owner.origin.at("spec", "pools", owner.pools.index(name)),
                        ),
                    ),
                )


@rule("reserved-queue-name")
def queue_names_not_reserved(p: Platform) -> Iterator[Diagnostic]:
    """On Volcano clusters a queue may not be named `root` or `default`.

    Volcano creates those two queues itself; a gpuplane Queue (rendered as a Volcano parent
    queue) with either name would overwrite them, and `root` would become its own parent.
    """
    for queue in p.queues.values():
        cluster = p.clusters.get(queue.cluster)
        if (
            cluster is not None
            and cluster.scheduler == "volcano"
            and queue.name in ("root", "default")
        ):
            yield _error(
                "reserved-queue-name",
                f"queue '{queue.name}' would replace Volcano's own '{queue.name}' queue on cluster '{cluster.name}'",
                queue.origin.at("metadata", "name"),
                f"rename the queue (and its file), e.g. '{cluster.name}-{queue.name}'",
            )


HOSTNAME = "kubernetes.io/hostname"
MAX_FLAVOR_NODE_LABELS = 8
"""Kueue's ResourceFlavor takes at most 8 nodeLabels (its CRD's maxProperties)."""


@rule("topology-levels")
def topology_levels_valid(p: Platform) -> Iterator[Diagnostic]:
    """Topology levels run from the widest domain to the node, at most 16, the node last.

    Kueue's Topology requires `kubernetes.io/hostname`, when present, to be the last level (a
    node is the narrowest domain) and allows at most 16 levels; otherwise the Topology and every
    flavor that names it are rejected.
    """
    for pool in p.pools.values():
        levels = pool.topology_levels
        if HOSTNAME in levels and levels[-1] != HOSTNAME:
            index = levels.index(HOSTNAME)
            yield _error(
                "topology-levels",
                f"pool '{pool.name}' lists {HOSTNAME} before other topology levels",
                pool.origin.at("spec", "topology", "levels", index),
                f"move {HOSTNAME} to the end: levels go from the widest domain to the node",
            )
        if len(levels) > 16:
            yield _error(
                "topology-levels",
                f"pool '{pool.name}' declares {len(levels)} topology levels; Kueue allows 16",
                pool.origin.key("spec", "topology", "levels"),
                "keep the levels the scheduler should pack jobs by",
            )


@rule("pool-labels-limit")
def pool_labels_fit_a_flavor(p: Platform) -> Iterator[Diagnostic]:
    """A pool's node labels (gpuplane's own plus `labels`) must fit a Kueue ResourceFlavor.

    The flavor selects the pool's nodes by all of its labels, and Kueue accepts at most 8; gpuplane
    sets 5 or 6 itself (pool, accelerator, topology, fabric, workload, sharing).
    """
    from renderer.model.nodes import (
        node_labels,  # nodes imports the model only; kept local for clarity
    )

    for pool in p.pools.values():
        cluster = p.clusters.get(pool.cluster)
        if cluster is None or cluster.scheduler != "kueue":
            continue
        count = len(node_labels(pool))
        if count > MAX_FLAVOR_NODE_LABELS:
            yield _error(
                "pool-labels-limit",
                f"pool '{pool.name}' has {count} node labels; a Kueue ResourceFlavor takes at most {MAX_FLAVOR_NODE_LABELS}",
                pool.origin.key("spec", "labels"),
                f"drop {count - MAX_FLAVOR_NODE_LABELS} of spec.labels (they still reach the nodes through their bootstrap if you add them there)",
            )


@rule("queue-settings-differ")
def cluster_wide_queue_settings(p: Platform) -> Iterator[Diagnostic]:
    """Queues on one cluster should agree on Kueue's cluster-wide settings (a warning).

    `gang.timeout` (waitForPodsReady) and fair sharing are settings of the Kueue controller, not
    of a ClusterQueue: gpuplane applies the strictest timeout and enables fair sharing when any
    queue asks, so a queue that says otherwise does not get what it declares. With fair sharing,
    Kueue also ignores `borrowWithinCohort`.
    """
    by_cluster: dict[str, list[Queue]] = defaultdict(list)
    for queue in p.queues.values():
        by_cluster[queue.cluster].append(queue)
    for queues in by_cluster.values():
        timeouts = {q.gang_timeout for q in queues if q.wait_for_pods_ready}
        if len(timeouts) > 1:
            for queue in queues[1:]:
                yield Diagnostic(
                    "queue-settings-differ",
                    f"queues on cluster '{queue.cluster}' set different gang timeouts ({', '.join(sorted(str(t) for t in timeouts))}); the shortest applies to all",
                    queue.origin.at("spec", "gang", "timeout"),
                    hint="use one gang.timeout for every queue of the cluster",
                    severity=Severity.WARNING,
                )
        fair = any(q.fair_sharing for q in queues)
        for queue in queues:
            if fair and queue.preemption.get("borrowWithinCohort", "Never") != "Never":
                yield Diagnostic(
                    "queue-settings-differ",
                    f"queue '{queue.name}': Kueue ignores borrowWithinCohort when fair sharing is on for the cluster",
                    queue.origin.at("spec", "preemption", "borrowWithinCohort"),
                    hint="remove borrowWithinCohort, or turn fair sharing off on every queue of the cluster",
                    severity=Severity.WARNING,
                )


@rule("driver-version-required")
def unmanaged_drivers_declared(p: Platform) -> Iterator[Diagnostic]:
    """Where the GPU Operator does not manage the driver, pools declare the driver their image ships.

    With `driverManaged: false` (EKS and GKE images, for example, ship their own driver) the
    cluster's driver version is whatever each node image carries; gpuplane records it as a node
    fact and compares it in acceptance results, so it must be written down.
    """
    for pool in p.pools.values():
        cluster = p.clusters.get(pool.cluster)
        operator = cluster.addons.get("gpuOperator") if cluster is not None else None
        if operator is None or operator.settings.get("driverManaged", True):
            continue
        if not pool.image.get("driver"):
            yield _error(
                "driver-version-required",
                f"pool '{pool.name}' runs on cluster '{pool.cluster}', where the GPU Operator does not manage drivers, but declares no image.driver",
                pool.origin.key("spec", "image")
                if pool.image
                else pool.origin.key("spec", "accelerator"),
                "add spec.image.driver: the driver version the node image ships",
                (("driverManaged: false is set here", operator.origin.at("driverManaged")),),
            )


@rule("driver-version-mismatch")
def managed_driver_agrees(p: Platform) -> Iterator[Diagnostic]:
    """Where the GPU Operator installs the driver, the pools of a cluster agree on its version.

    The operator installs one driver version on every GPU node of the cluster (its chart's
    `driver.version`); pools that declare different versions describe nodes that will not exist.
    """
    by_cluster = _pools_by_cluster(p)
    for name, pools in by_cluster.items():
        cluster = p.clusters.get(name)
        operator = cluster.addons.get("gpuOperator") if cluster is not None else None
        if operator is None or not operator.settings.get("driverManaged", True):
            continue
        declared = [pool for pool in pools if pool.image.get("driver")]
        if not declared:
            continue
        first = declared[0]
        for pool in declared[1:]:
            if pool.image["driver"] != first.image["driver"]:
                yield _error(
                    "driver-version-mismatch",
                    f"pool '{pool.name}' declares driver {pool.image['driver']}, pool '{first.name}' {first.image['driver']}; the GPU Operator installs one driver on cluster '{name}'",
                    pool.origin.at("spec", "image", "driver"),
                    f"use driver {first.image['driver']} in every pool of the cluster",
                    (
                        (
                            "the other version is declared here",
                            first.origin.at("spec", "image", "driver"),
                        ),
                    ),
                )


@rule("acceptance-image-differs")
def acceptance_on_the_production_image(p: Platform) -> Iterator[Diagnostic]:
    """Acceptance thresholds measured on another node image than the pool runs (a warning).

    The guide's mistake: benchmarking on a clean image and running production on another. When
    `acceptance.nodeImage` records the image the thresholds came from, it should match `image`.
    """
    for pool in p.pools.values():
        if not pool.acceptance_image:
            continue
        differs = sorted(
            key
            for key in set(pool.acceptance_image) | set(pool.image)
            if pool.acceptance_image.get(key) != pool.image.get(key)
        )
        if differs:
            details = ", ".join(
                f"{k} {pool.acceptance_image.get(k, '-')} vs {pool.image.get(k, '-')}"
                for k in differs
            )
            yield Diagnostic(
                "acceptance-image-differs",
                f"pool '{pool.name}' was accepted on another node image ({details})",
                pool.origin.key("spec", "acceptance", "nodeImage"),
                hint="re-run the acceptance suite on the production image, then update acceptance.nodeImage",
                severity=Severity.WARNING,
            )


@rule("mig-strategy-conflict")
def one_mig_strategy(p: Platform) -> Iterator[Diagnostic]:
    """One MIG strategy per cluster: MIG pools (strategy `mixed`) and MPS pools cannot share one.

    The GPU Operator sets the device plugin's MIG strategy for the whole cluster, `mixed` as soon
    as any pool uses MIG, and the device plugin refuses to start with MPS under `mixed`. Put the
    MPS pool on another cluster, or use time-slicing there.
    """
    by_cluster = _pools_by_cluster(p)
    for pools in by_cluster.values():
        mig = [pool for pool in pools if pool.sharing == "mig"]
        if not mig:
            continue
        for pool in pools:
            if pool.sharing == "mps":
                yield _error(
                    "mig-strategy-conflict",
                    f"pool '{pool.name}' uses MPS on cluster '{pool.cluster}', whose MIG pool '{mig[0].name}' makes the MIG strategy mixed",
                    pool.origin.at("spec", "sharing"),
                    "use time-slicing for this pool, or move it (or the MIG pool) to another cluster",
                    (("the MIG pool is declared here", mig[0].origin.at("spec", "sharing")),),
                )


@rule("sharing-needs-nvidia")
def sharing_is_nvidia_only(p: Platform) -> Iterator[Diagnostic]:
    """MIG, time-slicing and MPS are NVIDIA features; other accelerators are shared whole.

    gpuplane renders them through the NVIDIA GPU Operator (MIG manager, device plugin sharing);
    on an AMD pool they would be promised in quotas and never configured on the nodes.
    """
    for pool in p.pools.values():
        accelerator = catalog.accelerator(pool.accelerator)
        if (
            accelerator is not None
            and accelerator.vendor != "nvidia"
            and pool.sharing != "full-gpu"
        ):
            yield _error(
                "sharing-needs-nvidia",
                f"pool '{pool.name}' ({accelerator.product}) uses {pool.sharing}, which gpuplane renders for NVIDIA GPUs only",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu",
            )


@rule("dra-unsupported")
def dra_is_nvidia_whole_or_mig(p: Platform) -> Iterator[Diagnostic]:
    """DRA pools are NVIDIA pools of whole GPUs or MIG devices.

    gpuplane renders DeviceClasses for the NVIDIA DRA driver only, and a DRA claim is one pod's
    own device: time-slicing or MPS replicas do not exist there, so quotas counted in replicas
    would promise devices no claim can get.
    """
    for pool in p.pools.values():
        if pool.exposure != "dra":
            continue
        accelerator = catalog.accelerator(pool.accelerator)
        if accelerator is not None and accelerator.vendor != "nvidia":
            yield _error(
                "dra-unsupported",
                f"pool '{pool.name}' ({accelerator.product}) uses DRA, which gpuplane renders for the NVIDIA DRA driver only",
                pool.origin.at("spec", "exposure"),
                "use exposure: device-plugin",
            )
        if pool.sharing in ("time-slicing", "mps"):
            yield _error(
                "dra-unsupported",
                f"pool '{pool.name}' combines DRA with {pool.sharing}, whose replicas a DRA claim cannot get",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu or mig with exposure: dra, or the device plugin for sharing",
            )


RESTRICTED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")


@rule("pool-label-domain")
def pool_labels_settable(p: Platform) -> Iterator[Diagnostic]:
    """A pool's own node labels may not use the `kubernetes.io` or `k8s.io` domains.

    The kubelet registers a node with the labels of its bootstrap, and the NodeRestriction
    admission plugin refuses labels in those domains (bar a short allowlist Kubernetes sets
    itself), so the node would never carry them and the pool's ResourceFlavor would match no node.
    """
    for pool in p.pools.values():
        for key in pool.node_labels:
            domain = key.split("/", 1)[0] if "/" in key else ""
            if any(domain == d or domain.endswith("." + d) for d in RESTRICTED_LABEL_DOMAINS):
                yield _error(
                    "pool-label-domain",
                    f"pool '{pool.name}' sets node label '{key}', which a kubelet may not set on its own node",
                    pool.origin.key("spec", "labels", key),
                    "use a label in your own domain, e.g. gpuplane.dev/… or example.com/…",
                )


IN_CLUSTER = "https://kubernetes.default.svc"


@rule("argocd-project")
def argocd_projects_distinct(p: Platform) -> Iterator[Diagnostic]:
    """A cluster's Argo CD project is its own: never `default`, and not shared with a cluster that
    one Argo CD also manages.

    gpuplane locks the `default` project down and renders each cluster's platform project with
    that cluster's destinations only. A cluster Argo CD reaches remotely (a destination other than
    https://kubernetes.default.svc) is managed by another cluster's Argo CD, so two clusters naming
    the same project would render two different objects under one name, and the two root
    Applications would overwrite each other's.
    """
    for cluster in p.clusters.values():
        if cluster.argocd_project == "default":
            yield _error(
                "argocd-project",
                f"cluster '{cluster.name}' uses Argo CD's default project, which gpuplane locks down",
                cluster.origin.at("spec", "argocd", "project"),
                f"name a project of its own, e.g. platform-{cluster.name}",
            )
    by_project: dict[str, list[Cluster]] = defaultdict(list)
    for cluster in p.clusters.values():
        by_project[cluster.argocd_project].append(cluster)
    for project, clusters in by_project.items():
        remote = [c for c in clusters if c.argocd_destination != IN_CLUSTER]
        if len(clusters) > 1 and remote:
            first = clusters[0]
            for cluster in clusters[1:]:
                yield _error(
                    "argocd-project",
                    f"clusters '{first.name}' and '{cluster.name}' both use Argo CD project '{project}', and '{remote[0].name}' is managed remotely",
                    cluster.origin.at("spec", "argocd", "project"),
                    f"give cluster '{cluster.name}' a project of its own, e.g. platform-{cluster.name}",
                    (
                        (
                            "the other cluster names it here",
                            first.origin.at("spec", "argocd", "project"),
                        ),
                    ),
                )
