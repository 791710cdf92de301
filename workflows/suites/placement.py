"""Where a pool's suite runs: the platform's own ClusterQueue in the cohort of the pool, which
borrows the cohort's idle quota (nominal 0), and the suite's Jobs namespace, where no team has any
right; how large its Jobs may be, from the team queue that can hold the most of the pool.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from renderer.model.capacity import Offer, quota_offer
from renderer.model.choices import INFERENCE_WORKLOADS
from renderer.model.names import (
    SUITE_JOBS_NAMESPACE,
    suite_cluster_queue_name,
    window_cluster_queue_name,
)
from renderer.model.platform import AcceptanceWindow, Cluster, Pool, Queue, Repository
from renderer.model.queue_plans import (
    cluster_queues,
    cohorts,
    potential_available,
)
from renderer.model.topology import topology_aware
from renderer.model.view import ClusterView
from workflows.suites.settings import (
    DATASET_FALLBACK,
    DATASET_PREFIX,
    DEADLINE_SECONDS,
    KUBECTL_REPOSITORY,
    RELEASE_SECONDS,
    SERVER_IMAGE,
    SUITE_IMAGE,
    WINDOW_SECONDS,
)


@dataclass(frozen=True, slots=True)
class Target:
    """A pool, and the platform ClusterQueue of its cohort its suite Jobs are admitted through.

    `plan` names the team queue that can hold the most of the pool: the suite's Jobs take the
    shapes a team's jobs could. `available` is the most of `offer.resource` a suite Job may ask
    for: what that team queue could be admitted (Kueue's PotentialAvailable in an empty cluster),
    and no more than the cohort lends, which is all the platform ClusterQueue (nominal 0) can
    ever borrow; it is the platform queue's borrowing limit on the pool.
    """

    cluster: Cluster
    pool: Pool
    queue: Queue
    """The gpuplane Queue (Kueue's cohort) whose idle quota the suite borrows."""
    plan: str
    """The team ClusterQueue, by name: the suites read nothing else of it (or of its team), so
    a change to a team reaches a suite only through `available` (their compiled objects are
    cached by what a target holds: `renderer.layers.workflows.compiled`)."""
    offer: Offer
    available: int
    repository: Repository | None = None
    reserved: bool = False
    """The window run's target (`reserved`): the whole pool, admitted by the pool's own window
    ClusterQueue, on nodes the run has tainted for itself (docs/acceptance-window.md)."""

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def window(self) -> AcceptanceWindow | None:
        """The cluster's acceptance window, where the suite can use it: Kueue clusters only (on
        Volcano nothing is rendered for it, see docs/acceptance-window.md)."""
        if self.cluster.scheduler != "kueue":
            return None
        return self.cluster.acceptance_window

    @property
    def deadline_seconds(self) -> int:
        """How long a run, and each of its Jobs, may last: the window's hours less the time kept
        for releasing the pool, else DEADLINE_SECONDS."""
        if self.reserved and self.window is not None:
            return self.window.hours * 3600 - RELEASE_SECONDS
        return DEADLINE_SECONDS

    @property
    def namespace(self) -> str:
        """Where the Jobs, their workspace claim and the headless Service are created."""
        return SUITE_JOBS_NAMESPACE

    @property
    def cluster_queue(self) -> str:
        if self.reserved:
            return window_cluster_queue_name(self.pool.name)
        return suite_cluster_queue_name(self.queue.name)

    @property
    def local_queue(self) -> str:
        """The LocalQueue in the Jobs' namespace pointing at `cluster_queue` (the same name)."""
        return self.cluster_queue

    @property
    def priority_class(self) -> str | None:
        """The cohort's lowest priority: a team's jobs of any higher priority come first, and
        a team queue that reclaims with `LowerPriority` may preempt the suite's Jobs. None in
        the window: its ClusterQueue is the pool's alone, there is nothing to rank against."""
        if self.reserved:
            return None
        priorities = sorted(self.queue.priorities, key=lambda p: (p.value, p.name))
        return f"{self.queue.name}-{priorities[0].name}" if priorities else None

    @property
    def kubectl_image(self) -> str:
        return kubectl_image(self.cluster)

    @property
    def dra(self) -> bool:
        return self.offer.device_class is not None

    @property
    def unit(self) -> int:
        """The most one pod asks for: a node's whole GPUs, else one device."""
        return self.pool.gpus_per_node if self.pool.sharing == "full-gpu" else 1

    @property
    def placed_by_kueue(self) -> bool:
        """Whether Kueue places the pods itself (a topology-aware flavor), writing each pod's
        node into a nodeSelector and packing pods smaller than a node together."""
        return self.cluster.scheduler == "kueue" and topology_aware(self.pool)

    @property
    def multi_node(self) -> bool:
        return self.pool.nodes.max > 1

    @property
    def inference(self) -> bool:
        return self.pool.workload in INFERENCE_WORKLOADS

    @property
    def production_image(self) -> str:
        """The image the torch steps run in: the pool's `productionImage`, else the suite's."""
        return self.pool.production_image or SUITE_IMAGE

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """The suite's parameters and their defaults, in every template of the pool."""
        found = [
            ("image", SUITE_IMAGE),
            ("production-image", self.production_image),
            ("image-namespace", ""),
            ("window-seconds", str(WINDOW_SECONDS)),
            ("dataset", dataset(self.cluster)),
        ]
        if self.inference:
            found.append(("server-image", SERVER_IMAGE))
        return tuple(found)


def reserved(target: Target) -> Target:
    """The window run's target of a pool: every device of every node the pool may have."""
    whole = target.pool.size * target.offer.per_node
    return dataclasses.replace(target, reserved=True, available=whole)


@dataclass(frozen=True, slots=True)
class NamespaceRun:
    """A weekly run of a pool's acceptance in a team namespace's own `productionImage`: its
    results are labelled with the namespace and published apart, reported, never gating."""

    namespace: str
    image: str
    pool: str


def namespace_runs(view: ClusterView, targets: tuple[Target, ...]) -> tuple[NamespaceRun, ...]:
    """Each namespace of the cluster that names a `productionImage`, on each pool with a suite
    that its team has quota on."""
    suites = {target.name for target in targets}
    found: set[NamespaceRun] = set()
    for tenant in view.tenants:
        pools = {quota.pool for quota in tenant.team.gpus} & suites
        for ns in tenant.namespaces:
            if ns.production_image is not None:
                found.update(NamespaceRun(ns.name, ns.production_image, pool) for pool in pools)
    return tuple(sorted(found, key=lambda run: (run.pool, run.namespace)))


def kubectl_image(cluster: Cluster) -> str:
    return f"{KUBECTL_REPOSITORY}:v{cluster.kubernetes_version}.0"


def dataset(cluster: Cluster) -> str:
    if cluster.object_store:
        return f"{cluster.object_store.rstrip('/')}/{DATASET_PREFIX}"
    return DATASET_FALLBACK


def targets(view: ClusterView) -> tuple[Target, ...]:
    """Each pool of the cluster with the team queue that can hold the most of it: among the
    ClusterQueues with a quota (not only borrowing) on the pool, the one Kueue could admit the
    most units, then by name; the suite asks for no more than that and than the cohort lends. A
    pool no team has quota on, or whose cohort lends nothing of it, gets no suite: nothing could
    run there through the platform's queue. One pass over the ClusterQueues' flavors."""
    plans = cluster_queues(view)
    by_cohort = cohorts(plans)
    pools = {pool.name: pool for pool in view.pools}
    best: dict[str, tuple[tuple[int, str, str], Target]] = {}
    for plan in plans:
        cohort = by_cohort[plan.queue.name]
        for flavor in plan.flavors:
            pool = pools.get(flavor.pool.name)
            if pool is None or flavor.borrow_only:
                continue
            for quota in flavor.quotas:
                offer = quota_offer(pool, quota)
                if offer is None:
                    continue
                team = potential_available(plan, cohort, pool.name, offer.resource)
                available = int(min(team, cohort.lendable(pool.name, offer.resource)))
                key = (-available, plan.name, offer.resource)
                held = best.get(pool.name)
                if available > 0 and (held is None or key < held[0]):
                    target = Target(
                        view.cluster,
                        pool,
                        plan.queue,
                        plan.name,
                        offer,
                        available,
                        view.platform.repository,
                    )
                    best[pool.name] = (key, target)
    return tuple(best[pool.name][1] for pool in view.pools if pool.name in best)
