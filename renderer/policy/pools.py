"""Policy on a pool's nodes: cost, host capacity, fabric and RDMA, topology and node labels.

These rules change with what a node pool declares about its hardware and how Kueue selects it.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.capacity import RDMA_FABRICS
from renderer.model.platform import Platform
from renderer.policy.rule import error, pools_by_cluster, rule


@rule("cost-currency")
def one_currency_per_cluster(p: Platform) -> Iterator[Diagnostic]:
    """All pools of a cluster state their cost in one currency.

    Effective cost per team adds GPU-hours across pools; amounts in different currencies cannot
    be added without an exchange rate the engine does not have.

    To satisfy it: write one `spec.cost.currency` (an ISO code; USD when left out) in every pool
    file of the cluster, converting `spec.cost.gpuHour` of the pool you change.
    """
    by_cluster = pools_by_cluster(p)
    for pools in by_cluster.values():
        first = pools[0]
        for pool in pools[1:]:
            if pool.currency != first.currency:
                yield error(
                    "cost-currency",
                    f"pool '{pool.name}' costs in {pool.currency}, pool '{first.name}' on the same cluster in {first.currency}",
                    pool.origin.at("spec", "cost", "currency"),
                    f"state the cost in {first.currency}",
                )


@rule("pool-host-capacity")
def pools_declare_host(p: Platform) -> Iterator[Diagnostic]:
    """Pools declare `host.cpus` and `host.memory`: CPU and memory quota follow the GPUs.

    Every pod requests CPU and memory, and Kueue refuses a workload whose ClusterQueue does not
    cover a requested resource; gpuplane gives each team CPU and memory in proportion to the share
    of a node its GPUs represent, which needs the node's allocatable CPUs and memory.

    To satisfy it: add both to the pool file: `spec.host.cpus` (the logical CPUs one node can
    allocate to pods, a whole number) and `spec.host.memory` (a quantity), e.g. `host: {cpus:
    256, memory: 2Ti}`. `kubectl describe node` shows a node's allocatable figures.
    """
    for pool in p.pools.values():
        missing = [
            f for f, v in (("cpus", pool.host_cpus), ("memory", pool.host_memory)) if v is None
        ]
        if missing:
            yield error(
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
    node advertises and stay Pending.

    To satisfy it: remove `spec.fabric.rdma` from the pool file, or, if the nodes do have an
    RDMA fabric, set `spec.fabric.type` to `infiniband`, `roce` or `efa`.
    """
    for pool in p.pools.values():
        if pool.rdma is not None and pool.fabric not in RDMA_FABRICS:
            yield error(
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

    To satisfy it: add `spec.fabric.rdma` to the pool file: `resource`, the extended resource
    the RDMA device plugin advertises, and `perNode`, how many a pod that takes a whole node
    requests. Examples: `rdma: {resource: rdma/rdma_shared_device_a, perNode: 1}` (NVIDIA
    Network Operator), `rdma: {resource: vpc.amazonaws.com/efa, perNode: 32}` (p5.48xlarge).
    A pool that never spans nodes says so with `nodes: 1` (or `max: 1`).
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


HOSTNAME = "kubernetes.io/hostname"


MAX_FLAVOR_NODE_LABELS = 8
"""Kueue's ResourceFlavor takes at most 8 nodeLabels (its CRD's maxProperties)."""


@rule("topology-levels")
def topology_levels_valid(p: Platform) -> Iterator[Diagnostic]:
    """Topology levels run from the widest domain to the node, at most 16, the node last.

    Kueue's Topology requires `kubernetes.io/hostname`, when present, to be the last level (a
    node is the narrowest domain) and allows at most 16 levels; otherwise the Topology and every
    flavor that names it are rejected.

    To satisfy it: list `spec.topology.levels` of the pool file from the widest domain to the
    narrowest, `kubernetes.io/hostname` last when present, 16 at most, e.g. `levels:
    [topology.gpuplane.dev/block, topology.gpuplane.dev/rack, kubernetes.io/hostname]`.
    """
    for pool in p.pools.values():
        levels = pool.topology_levels
        if HOSTNAME in levels and levels[-1] != HOSTNAME:
            index = levels.index(HOSTNAME)
            yield error(
                "topology-levels",
                f"pool '{pool.name}' lists {HOSTNAME} before other topology levels",
                pool.origin.at("spec", "topology", "levels", index),
                f"move {HOSTNAME} to the end: levels go from the widest domain to the node",
            )
        if len(levels) > 16:
            yield error(
                "topology-levels",
                f"pool '{pool.name}' declares {len(levels)} topology levels; Kueue allows 16",
                pool.origin.key("spec", "topology", "levels"),
                "keep the levels the scheduler should pack jobs by",
            )


@rule("pool-labels-limit")
def pool_labels_fit_a_flavor(p: Platform) -> Iterator[Diagnostic]:
    """A pool's node labels (gpuplane's own plus `labels`) must fit a Kueue ResourceFlavor.

    The flavor selects the pool's nodes by all of its labels, and Kueue accepts at most 8; gpuplane
    sets 5 or 6 itself (pool, accelerator, topology, fabric, workload, sharing). Checked on Kueue
    clusters only.

    To satisfy it: remove entries from `spec.labels` of the pool file until gpuplane's labels
    and yours are 8 at most (the message gives the count). A label the scheduler need not
    select by can still be set on the nodes by your own node bootstrap.
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
            yield error(
                "pool-labels-limit",
                f"pool '{pool.name}' has {count} node labels; a Kueue ResourceFlavor takes at most {MAX_FLAVOR_NODE_LABELS}",
                pool.origin.key("spec", "labels"),
                f"drop {count - MAX_FLAVOR_NODE_LABELS} of spec.labels (they still reach the nodes through their bootstrap if you add them there)",
            )


RESTRICTED_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")


@rule("pool-label-domain")
def pool_labels_settable(p: Platform) -> Iterator[Diagnostic]:
    """A pool's own node labels may not use the `kubernetes.io` or `k8s.io` domains.

    The kubelet registers a node with the labels of its bootstrap, and the NodeRestriction
    admission plugin refuses labels in those domains (bar a short allowlist Kubernetes sets
    itself), so the node would never carry them and the pool's ResourceFlavor would match no node.

    To satisfy it: rename the key in `spec.labels` of the pool file to a domain of your own,
    e.g. `example.com/rack-type` or `gpuplane.dev/...`; subdomains such as
    `node-role.kubernetes.io` are refused too. Labels Kubernetes puts on nodes itself
    (`kubernetes.io/hostname`, `topology.kubernetes.io/zone`) may still be topology levels.
    """
    for pool in p.pools.values():
        for key in pool.node_labels:
            domain = key.split("/", 1)[0] if "/" in key else ""
            if any(domain == d or domain.endswith("." + d) for d in RESTRICTED_LABEL_DOMAINS):
                yield error(
                    "pool-label-domain",
                    f"pool '{pool.name}' sets node label '{key}', which a kubelet may not set on its own node",
                    pool.origin.key("spec", "labels", key),
                    "use a label in your own domain, e.g. gpuplane.dev/… or example.com/…",
                )
