"""Whether a pool's Kueue ResourceFlavor is topology-aware (names a Topology), and the names
of Kueue's topology annotations.

A flavor with `topologyName` makes Kueue place the pods itself (topology-aware scheduling, TAS):
it reads the real nodes of the flavor, picks a domain at the requested level and writes each
pod's node into its node selector. That only helps where there is a domain above the node to
pack a gang into (a block, a rack, an EC2 network node). A pool whose only level is
`kubernetes.io/hostname` gains nothing from it, and loses something: a ClusterQueue whose
flavors are all topology-aware treats every workload as asking for TAS
(`clusterQueue.isTASOnly`, `pkg/cache/scheduler/clusterqueue.go`), a mixed one refuses a
TAS flavor to a pod set that does not ask for TAS, and a TAS annotation on a pod set makes every
flavor without a Topology unusable to it (`checkPodSetAndFlavorMatchForTAS`,
`pkg/scheduler/flavorassigner/tas_flavorassigner.go`, Kueue v0.19.2). So a pool is topology-aware
exactly when its `topology.levels` name a level other than the host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from renderer.model.capacity import MIXABLE, WORKLOAD_PURPOSES
from renderer.model.platform import Pool, Queue

HOSTNAME = "kubernetes.io/hostname"
"""The node level; a Topology may use it only as its lowest level (a CEL rule of the CRD)."""

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
GROUP = "kueue.x-k8s.io/podset-group-name"
"""Kueue v0.19.2's pod template annotations (`apis/kueue/v1beta2/topology_types.go`)."""

ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_REQUIRED, SLICE_SIZE, SLICE_CONSTRAINTS)
"""The annotations that ask for TAS (`workload.IsExplicitlyRequestingTAS`); the group name alone
does not."""


def topology_aware(pool: Pool) -> bool:
    """Whether the pool's ResourceFlavor names a Topology: its levels go above the node, or a
    ClusterQueue may list it beside one whose levels do (`with_topology_peers`)."""
    return pool.topology_peer or spans_nodes(pool)


def spans_nodes(pool: Pool) -> bool:
    """Whether the pool's own topology levels name a domain above the node."""
    return any(level != HOSTNAME for level in pool.topology_levels)


def with_topology_peers(pools: Mapping[str, Pool], queues: Mapping[str, Queue]) -> dict[str, Pool]:
    """The pools, with `topology_peer` set on each that a team ClusterQueue may list beside a
    topology-aware one, so that every ClusterQueue is all topology-aware or not at all.

    A mixed ClusterQueue would refuse its topology-aware flavors to every pod set that asks for
    no topology (`Flavor "…" supports only TopologyAwareScheduling`): an upstream GPU job, which
    carries no Kueue annotation, could then never reach the training pool. Which pools a
    ClusterQueue may list follows from the platform's own files, not from the teams' quotas
    (`renderer.model.queue_plans.cluster_queues` lists the pools of the queue that serve the
    namespace purpose, `capacity.serves`), so a team file never flips a flavor, whose
    `topologyName` cannot change once it is set. The suites' platform ClusterQueue lists every
    pool; its Jobs ask for a topology on the topology-aware ones (`workflows/suites/jobs.py`)."""
    parent = {name: name for name in pools}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    purposes = {p for served in WORKLOAD_PURPOSES.values() for p in served} | MIXABLE
    for queue in queues.values():
        mixing = queue.mixing_priority is not None
        for purpose in sorted(purposes):
            members = [
                name
                for name in queue.pools
                if (pool := pools.get(name)) is not None
                and pool.cluster == queue.cluster
                and (purpose in WORKLOAD_PURPOSES[pool.workload] or (mixing and purpose in MIXABLE))
            ]
            for other in members[1:]:
                parent[root(other)] = root(members[0])
    spanning = {root(name) for name, pool in pools.items() if spans_nodes(pool)}
    return {
        name: dataclasses.replace(
            pool, topology_peer=True, topology_levels=pool.topology_levels or (HOSTNAME,)
        )
        if root(name) in spanning and not spans_nodes(pool)
        else pool
        for name, pool in pools.items()
    }


def widest_level(pool: Pool) -> str | None:
    """The pool's widest topology level, for a `podset-preferred-topology` annotation; None
    where the pool is not topology-aware."""
    return pool.topology_levels[0] if topology_aware(pool) else None
