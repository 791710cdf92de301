"""Where a pool's suite runs: the team queue, and its namespace, that the suite's Jobs are
submitted through, chosen among the cluster's ClusterQueues.
"""

from __future__ import annotations

from dataclasses import dataclass

from renderer.model.admission import (
    ClusterQueuePlan,
    cluster_queues,
    cohort_of,
    potential_available,
)
from renderer.model.capacity import Offer, quota_offer
from renderer.model.platform import Cluster, Namespace, Pool, Repository
from renderer.model.view import ClusterView
from workflows.suites.settings import (
    DATASET_FALLBACK,
    DATASET_PREFIX,
    KUBECTL_REPOSITORY,
    SERVER_IMAGE,
    SUITE_IMAGE,
    WINDOW_SECONDS,
)


@dataclass(frozen=True, slots=True)
class Target:
    """A pool and the team queue its suite Jobs are submitted through.

    `available` is the most of `offer.resource` that queue can ever be admitted on the pool
    (Kueue's PotentialAvailable in an empty cluster), so no suite Job asks for more than that.
    """

    cluster: Cluster
    pool: Pool
    plan: ClusterQueuePlan
    namespace: Namespace
    offer: Offer
    available: int
    repository: Repository | None = None

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def priority_class(self) -> str | None:
        """The team's priority (the queue's default when the team names none)."""
        queue = self.plan.queue
        team = self.plan.team
        priority = queue.priority(team.priority) if team.priority else None
        priority = priority or queue.default_priority
        return f"{queue.name}-{priority.name}" if priority is not None else None

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
    def multi_node(self) -> bool:
        return self.pool.nodes.max > 1

    @property
    def inference(self) -> bool:
        return self.pool.workload in ("online-inference", "batch-inference")

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """The suite's parameters and their defaults, in every template of the pool."""
        found = [
            ("image", SUITE_IMAGE),
            ("window-seconds", str(WINDOW_SECONDS)),
            ("dataset", dataset(self.cluster)),
        ]
        if self.inference:
            found.append(("server-image", SERVER_IMAGE))
        return tuple(found)


def kubectl_image(cluster: Cluster) -> str:
    return f"{KUBECTL_REPOSITORY}:v{cluster.kubernetes_version}.0"


def dataset(cluster: Cluster) -> str:
    if cluster.object_store:
        return f"{cluster.object_store.rstrip('/')}/{DATASET_PREFIX}"
    return DATASET_FALLBACK


def targets(view: ClusterView) -> tuple[Target, ...]:
    """Each pool of the cluster with the team queue that can hold the most of it: among the
    ClusterQueues with a quota (not only borrowing) on the pool, the one Kueue could admit the
    most units, then by name. A pool no team has quota on gets no suite: nothing could run there
    through a queue."""
    plans = cluster_queues(view)
    found: list[Target] = []
    for pool in view.pools:
        best: tuple[tuple[int, str, str], Target] | None = None
        for plan in plans:
            cohort = cohort_of(plans, plan)
            for flavor in plan.flavors:
                if flavor.pool.name != pool.name or flavor.borrow_only:
                    continue
                for quota in flavor.quotas:
                    offer = quota_offer(pool, quota)
                    if offer is None:
                        continue
                    available = int(potential_available(plan, cohort, pool.name, offer.resource))
                    key = (-available, plan.name, offer.resource)
                    if available > 0 and (best is None or key < best[0]):
                        target = Target(
                            view.cluster,
                            pool,
                            plan,
                            plan.namespaces[0],
                            offer,
                            available,
                            view.platform.repository,
                        )
                        best = (key, target)
        if best is not None:
            found.append(best[1])
    return tuple(found)
