"""The NVIDIA Network Operator's NicClusterPolicy: the RDMA shared device plugin behind the
pools' `rdma/` resources.

The Network Operator's chart (Mellanox/network-operator v26.4.1, `deployment/network-operator`)
installs the operator and its CRDs only: no template renders a NicClusterPolicy any more (its
`keep-ncp-hook.yaml` only marks one an older release made `helm.sh/resource-policy: keep`), and
the operator deploys nothing until one exists. So gpuplane renders it, on a cluster that installs
the `networkOperator` add-on, when pools there declare `spec.fabric.rdma` with an `rdma/`
resource on an InfiniBand or RoCE fabric (`renderer.model.operators.rdma_plugin`: the provider
brings no RDMA plugin of its own). A cluster that lists the add-on with `enabled: false` runs an
operator someone else installed, whose one policy is theirs: nothing is rendered there.

The policy configures only the RDMA shared device plugin (`spec.rdmaSharedDevicePlugin`; no
driver container, `ofedDriver`: the nodes bring their NIC driver, and the operator then labels
them `network.nvidia.com/operator.mofed.wait: "false"`, which the plugin's DaemonSet selects,
`controllers/nicclusterpolicy_controller.go` `handleMOFEDWaitLabelsNoConfig`). Its DaemonSet
(`manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml`) runs on nodes
labelled `feature.node.kubernetes.io/pci-15b3.present` (Node Feature Discovery: the GPU
Operator's, whose worker labels PCI class 02 by vendor, or the chart's NodeFeatureRule), and
takes the policy's `nodeAffinity` and `tolerations` besides: here the pools' nodes, by their
`gpuplane.dev/pool` label, and their taints. Design: docs/gitops.md, docs/rdma.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from renderer.model.capacity import pool_offers
from renderer.model.choices import Fabric
from renderer.model.nodes import agent_tolerations, pools_affinity
from renderer.model.operators import (
    NETWORK_OPERATOR_ADDON,
    NETWORK_OPERATOR_PREFIX,
    rdma_plugin,
)
from renderer.model.platform import Pool
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "gpu"
API_VERSION = "mellanox.com/v1alpha1"
NAME = "nic-cluster-policy"
"""The operator reconciles only the NicClusterPolicy of this name (`pkg/consts/consts.go`
`NicClusterPolicyResourceName`; `controllers/nicclusterpolicy_controller.go` ignores others)."""

RDMA_SHARED_DEVICE_PLUGIN: Mapping[str, str] = {
    "image": "k8s-rdma-shared-dev-plugin",
    "repository": "nvcr.io/nvidia/mellanox",
    "version": "network-operator-v26.4.1",
}
"""The component image Network Operator v26.4.1 ships for the plugin: `hack/release.yaml`
`RdmaSharedDevicePlugin` at the tag, which the release's example policies are generated from
(`example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml`). The CRD requires `image`."""
RELEASE = "26.4.1"
"""The Network Operator release that ships that image (the add-on's `release` in
`renderer.model.operators`; a test holds them equal, so a new release brings its image)."""

MELLANOX_VENDOR = "15b3"
"""NVIDIA (Mellanox) networking's PCI vendor ID: the plugin's `vendors` selector."""
LINK_TYPES: Mapping[Fabric, str] = {"infiniband": "infiniband", "roce": "ether"}
"""The plugin's `linkTypes` selector matches the netdevice's link encapsulation as netlink reports
it (Mellanox/k8s-rdma-shared-dev-plugin `pkg/resources/pci_net_device.go`,
`link.Attrs().EncapType`): `infiniband` for an IB port, `ether` for an Ethernet (RoCE) one."""

RDMA_HCA_MAX = 63
"""The plugin's `rdmaHcaMax`: how many of the resource one node advertises, that is how many
containers on the node can hold it at once (the HCA is shared, not divided). 63 is what every
example policy of Network Operator v26.4.1 uses; a pool whose pods could together ask for more
gets more (`hca_max`)."""


def render(view: ClusterView) -> Iterator[Output]:
    """The cluster's NicClusterPolicy, where the Network Operator installed here serves pools."""
    policy = nic_cluster_policy(view)
    if policy is not None:
        addon = view.cluster.addons[NETWORK_OPERATOR_ADDON]
        yield Manifest(LAYER, policy, addon.origin.location)


def rdma_pools(view: ClusterView) -> tuple[Pool, ...]:
    """The cluster's pools whose RDMA resource the Network Operator's plugin advertises."""
    return tuple(
        pool
        for pool in view.pools
        if pool.rdma is not None
        and pool.fabric in LINK_TYPES
        and rdma_plugin(view.cluster, pool.rdma.resource) == NETWORK_OPERATOR_ADDON
    )


def nic_cluster_policy(view: ClusterView) -> dict[str, Any] | None:
    """The NicClusterPolicy object; None where the operator is not installed by gpuplane here or
    no pool needs its plugin."""
    if not view.cluster.runs(NETWORK_OPERATOR_ADDON):
        return None
    pools = rdma_pools(view)
    if not pools:
        return None
    spec: dict[str, Any] = {"nodeAffinity": pools_affinity(pools)}
    tolerations = agent_tolerations(pools)
    if tolerations:
        spec["tolerations"] = tolerations
    spec["rdmaSharedDevicePlugin"] = {
        **RDMA_SHARED_DEVICE_PLUGIN,
        "config": json.dumps(plugin_config(pools), indent=2) + "\n",
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "NicClusterPolicy",
        "metadata": metadata(NAME),
        "spec": spec,
    }


def plugin_config(pools: Sequence[Pool]) -> dict[str, Any]:
    """The plugin's configuration (`config`, its config.json): one resource per distinct name the
    pools declare, `rdma/<name>` as `resourceName: <name>` under the plugin's default
    `resourcePrefix`, `rdma`. The prefix is left out: the operator's admission webhook accepts
    only a dotted domain there (`api/v1alpha1/validator/nicpolicy_webhook.go`, `fqdnRegex`), so
    an explicit `rdma` would be refused where the webhook runs."""
    by_name: dict[str, list[Pool]] = {}
    for pool in pools:
        assert pool.rdma is not None  # rdma_pools
        name = pool.rdma.resource.removeprefix(NETWORK_OPERATOR_PREFIX)
        by_name.setdefault(name, []).append(pool)
    return {
        "configList": [
            {
                "resourceName": name,
                "rdmaHcaMax": hca_max(members),
                "selectors": {
                    "vendors": [MELLANOX_VENDOR],
                    "linkTypes": sorted({LINK_TYPES[p.fabric] for p in members}),
                },
            }
            for name, members in sorted(by_name.items())
        ]
    }


def hca_max(pools: Sequence[Pool]) -> int:
    """At least RDMA_HCA_MAX, and at least what a node's pods can ask for together: a pod
    holds one device of the node or more (a whole GPU, a MIG device of any profile, a
    time-slice replica)
    and asks for its share of `perNode` rounded up (`renderer.model.capacity.rdma_per_pod`),
    so all of a node's pods ask for at most `perNode` plus one per device."""
    needed = RDMA_HCA_MAX
    for pool in pools:
        assert pool.rdma is not None
        devices = sum(offer.per_node for offer in pool_offers(pool)) or pool.gpus_per_node
        needed = max(needed, pool.rdma.per_node + devices)
    return needed
