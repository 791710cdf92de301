"""Node bootstrap: the labels and taints each pool's nodes register with, in the forms the
cluster's provisioner takes.

One file per pool, `rendered/<cluster>/nodes/<pool>.yaml`, for the people and tools that create
nodes; it is never applied to the cluster, and no kustomization lists it. It holds the full
label set (the guide's `gpu-pool` pattern from `renderer.model.nodes`, the single source the Kueue
ResourceFlavors also read, plus the NVIDIA labels from `renderer.layers.gpu.sharing` that pick the
pool's MIG and device-plugin configuration), the taints, the kubelet flags a bootstrap script
passes, and per provider:

- `eks`: a nodeadm `NodeConfig` (`node.eks.aws/v1alpha1`, `spec.kubelet.flags`) and a Karpenter
  `NodePool` (`karpenter.sh/v1`) with the labels, taints, GPU count and a GPU limit;
- `gke`: the node pool's `config.labels` / `config.taints` (GKE API spelling: `NO_SCHEDULE`) and
  the `gcloud container node-pools create` flags;
- `aks`: the agent pool's `properties.nodeLabels` / `properties.nodeTaints`;
- `coreweave`: a CKS `NodePool` (`compute.coreweave.com/v1alpha1`, `nodeLabels`, `nodeTaints`);
- `on-prem` and `other`: a kubeadm `JoinConfiguration` fragment (`kubeadm.k8s.io/v1beta4`).

Field names and where they were checked: docs/node-bootstrap.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from renderer.layers.gpu.sharing import nvidia_node_labels
from renderer.model import catalog
from renderer.model.choices import Provider, TaintEffect
from renderer.model.nodes import PREFIX, node_labels
from renderer.model.platform import Cluster, Pool, Taint
from renderer.model.view import ClusterView
from renderer.output.manifest import MANAGED_BY, Output, Values

LAYER = "gpu"
FOLDER = "nodes"

NODE_LABELS_FLAG = "--node-labels"
TAINTS_FLAG = "--register-with-taints"

NODEADM_API_VERSION = "node.eks.aws/v1alpha1"
KARPENTER_API_VERSION = "karpenter.sh/v1"
KARPENTER_NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass"}
KARPENTER_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
KARPENTER_DISRUPTION = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m"}
"""Karpenter replaces only empty GPU nodes: consolidating an underutilized one would evict a
running training or inference pod to save a fraction of a node."""
KARPENTER_RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
KARPENTER_ALLOWED_DOMAINS = ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")
KARPENTER_ALLOWED_LABELS = frozenset(
    {
        "karpenter.sh/capacity-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    }
)
"""The label domains the NodePool CRD refuses in `spec.template.metadata.labels` (its CEL rules),
and the exceptions it makes. Karpenter sets `karpenter.sh/nodepool` (the NodePool's name, here
the pool's) on its nodes itself."""
COREWEAVE_API_VERSION = "compute.coreweave.com/v1alpha1"
KUBEADM_API_VERSION = "kubeadm.k8s.io/v1beta4"

GKE_EFFECTS: dict[TaintEffect, str] = {
    "NoSchedule": "NO_SCHEDULE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
}
"""The GKE API's spelling of the taint effects (`NodeTaint.effect`)."""

NOT_APPLIED = (
    "Not applied to the cluster: no kustomization lists this file. Hand it to the node "
    "provisioner, and change the pool file, not this one."
)


def labels(pool: Pool) -> dict[str, str]:
    """Every label the pool's nodes carry, sorted: the pool pattern and the NVIDIA selectors."""
    merged = node_labels(pool) | nvidia_node_labels(pool)
    return dict(sorted(merged.items()))


def taint_text(taint: Taint) -> str:
    """`key=value:Effect`, or `key:Effect` without a value, as kubelet and kubectl read it."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def _taint(taint: Taint, effect: str | None = None) -> dict[str, str]:
    result = {"key": taint.key}
    if taint.value:
        result["value"] = taint.value
    result["effect"] = effect or taint.effect
    return result


def karpenter_takes(key: str) -> bool:
    """Whether a Karpenter NodePool template may carry this label key."""
    if key in KARPENTER_ALLOWED_LABELS:
        return True
    domain = key.partition("/")[0] if "/" in key else ""
    if domain.endswith(KARPENTER_ALLOWED_DOMAINS):
        return True
    return not domain.endswith(KARPENTER_RESTRICTED_DOMAINS)


def kubelet_flags(pool: Pool) -> list[str]:
    """The kubelet flags a bootstrap script passes, each one argument: the labels sorted, the
    taints in the pool file's order."""
    node = labels(pool)
    flags = [f"{NODE_LABELS_FLAG}={','.join(f'{k}={v}' for k, v in node.items())}"]
    if pool.taints:
        flags.append(f"{TAINTS_FLAG}={','.join(taint_text(t) for t in pool.taints)}")
    return flags


def render(view: ClusterView) -> Iterator[Output]:
    """One bootstrap file per pool of the cluster, whatever its provider."""
    for pool in view.pools:
        yield Values(
            layer=LAYER,
            chart=pool.name,
            body=bootstrap(view.cluster, pool),
            source=pool.origin.location,
            folder=FOLDER,
        )


def bootstrap(cluster: Cluster, pool: Pool) -> dict[str, Any]:
    """The bootstrap document of one pool: what every provider needs, then the provider's own."""
    body: dict[str, Any] = {
        "description": (
            f"Node bootstrap of pool {pool.name} on cluster {cluster.name} "
            f"(provider {cluster.provider}): the labels and taints its nodes register with. "
            + NOT_APPLIED
        ),
        "pool": pool.name,
        "cluster": cluster.name,
        "provider": cluster.provider,
        "nodes": {"min": pool.nodes.min, "max": pool.nodes.max},
        "labels": labels(pool),
        "taints": [_taint(t) for t in pool.taints],
        "kubelet": {"flags": kubelet_flags(pool)},
    }
    body.update(PROVIDERS.get(cluster.provider, _kubeadm)(pool))
    return body


# --- providers --------------------------------------------------------------------------------


def _eks(pool: Pool) -> dict[str, Any]:
    """nodeadm (AL2023 EKS AMIs) for node groups, and a Karpenter NodePool for autoscaling."""
    accelerator = catalog.accelerator(pool.accelerator)
    gpu = accelerator.resource_name if accelerator is not None else "nvidia.com/gpu"
    node = labels(pool)
    template_labels = {k: v for k, v in node.items() if karpenter_takes(k)}
    left_out = sorted(set(node) - set(template_labels))
    note = (
        f" Left out of the template (Karpenter sets or refuses them): {', '.join(left_out)}."
        if left_out
        else ""
    )
    return {
        "nodeadm": {
            "description": (
                "User data for nodeadm: add spec.cluster (name, apiServerEndpoint, "
                "certificateAuthority, cidr) unless the managed node group fills it in."
            ),
            "apiVersion": NODEADM_API_VERSION,
            "kind": "NodeConfig",
            "spec": {"kubelet": {"flags": kubelet_flags(pool)}},
        },
        "karpenter": {
            "description": (
                "Karpenter NodePool: add the instance types (node.kubernetes.io/instance-type) "
                f"and provide the EC2NodeClass {pool.name}. Karpenter scales from pending "
                "pods; it does not keep a minimum number of nodes." + note
            ),
            "apiVersion": KARPENTER_API_VERSION,
            "kind": "NodePool",
            "metadata": {"name": pool.name, "labels": {**MANAGED_BY, f"{PREFIX}pool": pool.name}},
            "spec": {
                "template": {
                    "metadata": {"labels": template_labels},
                    "spec": {
                        "taints": [_taint(t) for t in pool.taints],
                        "requirements": [
                            {
                                "key": KARPENTER_GPU_COUNT,
                                "operator": "In",
                                "values": [str(pool.gpus_per_node)],
                            }
                        ],
                        "nodeClassRef": {**KARPENTER_NODE_CLASS, "name": pool.name},
                    },
                },
                "limits": {gpu: str(pool.gpus_per_node * pool.nodes.max)},
                "disruption": dict(KARPENTER_DISRUPTION),
            },
        },
    }


def _gke(pool: Pool) -> dict[str, Any]:
    """The GKE node pool's NodeConfig fields, and the same as gcloud flags."""
    node = labels(pool)
    node_pool: dict[str, Any] = {
        "config": {
            "labels": node,
            "taints": [_taint(t, GKE_EFFECTS[t.effect]) for t in pool.taints],
        },
        "initialNodeCount": pool.nodes.min,
    }
    if pool.nodes.max > pool.nodes.min:
        node_pool["autoscaling"] = {
            "enabled": True,
            "minNodeCount": pool.nodes.min,
            "maxNodeCount": pool.nodes.max,
        }
    flags = [f"--node-labels={','.join(f'{k}={v}' for k, v in node.items())}"]
    if pool.taints:
        flags.append(f"--node-taints={','.join(taint_text(t) for t in pool.taints)}")
    return {
        "gke": {
            "description": (
                "GKE node pool (container.googleapis.com/v1 NodePool): add the name, machine "
                "type and accelerators; `gcloudFlags` are the same labels and taints for "
                "`gcloud container node-pools create`."
            ),
            "nodePool": node_pool,
            "gcloudFlags": flags,
        }
    }


def _aks(pool: Pool) -> dict[str, Any]:
    """The AKS agent pool's properties (Microsoft.ContainerService managedClusters/agentPools)."""
    properties: dict[str, Any] = {
        "nodeLabels": labels(pool),
        "nodeTaints": [taint_text(t) for t in pool.taints],
        "count": pool.nodes.min,
    }
    if pool.nodes.max > pool.nodes.min:
        properties.update(
            {"enableAutoScaling": True, "minCount": pool.nodes.min, "maxCount": pool.nodes.max}
        )
    return {
        "aks": {
            "description": (
                "AKS agent pool properties: add the name (lower-case letters and digits, at "
                "most 12 characters on Linux) and vmSize."
            ),
            "agentPool": {"properties": properties},
        }
    }


def _coreweave(pool: Pool) -> dict[str, Any]:
    """A CoreWeave Kubernetes Service NodePool (applied to CKS by the platform team)."""
    spec: dict[str, Any] = {
        "autoscaling": pool.nodes.max > pool.nodes.min,
        "targetNodes": pool.nodes.min,
    }
    if pool.nodes.max > pool.nodes.min:
        spec.update({"minNodes": pool.nodes.min, "maxNodes": pool.nodes.max})
    spec["nodeLabels"] = labels(pool)
    spec["nodeTaints"] = [_taint(t) for t in pool.taints]
    return {
        "coreweave": {
            "description": "CKS NodePool: add spec.instanceType (immutable once created).",
            "apiVersion": COREWEAVE_API_VERSION,
            "kind": "NodePool",
            "metadata": {"name": pool.name, "labels": {**MANAGED_BY, f"{PREFIX}pool": pool.name}},
            "spec": spec,
        }
    }


def _kubeadm(pool: Pool) -> dict[str, Any]:
    """The nodeRegistration of a kubeadm join: labels as a kubelet argument, taints as kubeadm
    registers them (it passes them to the kubelet itself)."""
    node = labels(pool)
    return {
        "kubeadm": {
            "description": (
                "kubeadm JoinConfiguration fragment: merge into the join configuration with "
                "the discovery settings."
            ),
            "apiVersion": KUBEADM_API_VERSION,
            "kind": "JoinConfiguration",
            "nodeRegistration": {
                "kubeletExtraArgs": [
                    {
                        "name": NODE_LABELS_FLAG.lstrip("-"),
                        "value": ",".join(f"{k}={v}" for k, v in node.items()),
                    }
                ],
                "taints": [_taint(t) for t in pool.taints],
            },
        }
    }


PROVIDERS: Mapping[Provider, Callable[[Pool], dict[str, Any]]] = {
    "eks": _eks,
    "gke": _gke,
    "aks": _aks,
    "coreweave": _coreweave,
    "on-prem": _kubeadm,
    "other": _kubeadm,
}
"""The provider section of each `cluster.provider` value (schema enum)."""
