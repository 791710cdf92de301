"""What fit knows of the labels on a pool's nodes, for Kueue's topology-aware scheduling.

Design: docs/fit.md#node-labels-under-topology-aware-flavors
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from renderer.admission.workloads.podsets import Requirement
from renderer.layers.gpu.sharing import has_plugin_config, nvidia_node_labels
from renderer.model import catalog, nodes
from renderer.model.choices import TIME_SHARED, Provider
from renderer.model.nodes import node_labels
from renderer.model.platform import Cluster, Pool
from renderer.model.topology import HOSTNAME

PRODUCT_LABELS = {
    "nvidia.com/gpu.product": "",
    "cloud.google.com/gke-accelerator": "gke",
}
"""Labels whose value names the GPU model, and the provider that sets them ("" for any)."""

PRODUCT_LABEL = "nvidia.com/gpu.product"
SHARED_SUFFIX = "-SHARED"
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"

PROVIDER_PREFIXES = {
    "cloud.google.com/": "gke",
    "topology.gke.io/": "gke",
    "topology.k8s.aws/": "eks",
    "eks.amazonaws.com/": "eks",
    "k8s.amazonaws.com/": "eks",
    "karpenter.sh/": "eks",
    "karpenter.k8s.aws/": "eks",
    "kubernetes.azure.com/": "aks",
}
"""Label domains only one provider's nodes carry."""

CLOUD_LABELS = (
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
"""Labels a cloud provider's node controller sets, with values fit cannot know."""

CLOUD_PROVIDERS: tuple[Provider, ...] = ("eks", "gke", "aks", "coreweave")
ASSUMED_ARCH = "amd64"

_WORD = re.compile(r"[a-z0-9]+")
_MEMORY = re.compile(r"([0-9]+)gb")
_MODELS = frozenset(key.split("-", 1)[0] for key in catalog.CATALOG)


def names_model(key: str, value: str) -> bool:
    """Whether a GPU name (`NVIDIA-H100-80GB-HBM3`, `nvidia-l4`) names the catalog key's model
    (the part before `-`), no other model the catalog knows, and its memory where stated."""
    words = _WORD.findall(value.lower())
    model = key.split("-", 1)[0].lower()
    if model not in words or any(w in _MODELS and w != model for w in words):
        return False
    entry = catalog.accelerator(key)
    sizes = {int(m[1]) for w in words if (m := _MEMORY.fullmatch(w))}
    return entry is None or not sizes or entry.memory_gb in sizes


@dataclass
class Verdict:
    """A three-valued match: True, False, or None (fit cannot tell, and assumed it matches)."""

    value: bool | None
    assumed: list[str] = field(default_factory=list)


class NodeLabels:
    """The labels of one pool's nodes as fit knows them (see the module's docstring)."""

    def __init__(self, pool: Pool, cluster: Cluster | None, levels: Iterable[str]) -> None:
        self.pool = pool
        self.provider = cluster.provider if cluster is not None else ""
        entry = catalog.accelerator(pool.accelerator)
        self.nvidia = entry is None or entry.vendor == "nvidia"
        shares = pool.sharing in TIME_SHARED and has_plugin_config(pool)
        self.sharing = pool.sharing if shares else "none"
        """GPU Feature Discovery's `nvidia.com/gpu.sharing-strategy`: the device plugin's
        sharing strategy (`none`, `time-slicing`, `mps`; MIG is not a sharing strategy)."""
        self.shared_product = shares and not pool.rename_by_default
        """GFD appends `-SHARED` to `nvidia.com/gpu.product` on nodes whose GPUs are shared
        under their own resource name (`renameByDefault: false`)."""
        known = dict(node_labels(pool))
        known["kubernetes.io/os"] = "linux"
        if self.nvidia:
            known.update(nvidia_node_labels(pool))
            known["nvidia.com/gpu.present"] = "true"
            known["nvidia.com/gpu.count"] = str(pool.gpus_per_node)
            known[SHARING_LABEL] = self.sharing
            known["nvidia.com/gpu.replicas"] = str(pool.replicas if self.sharing != "none" else 1)
            if entry is not None:
                known["nvidia.com/mig.capable"] = "true" if entry.supports_mig else "false"
        self.known: Mapping[str, str] = known
        present = {HOSTNAME, *levels}
        if self.provider in CLOUD_PROVIDERS:
            present.update(CLOUD_LABELS)
        self.present = frozenset(present)

    def _absent(self, key: str) -> bool:
        if key in self.known or key in self.present:
            return False
        if "/" not in key or key.startswith(nodes.PREFIX):
            return True  # the platform's own labels: the pool file lists them all (nodeLabels)
        if key.startswith("nvidia.com/") and not self.nvidia:
            return True
        if key in PRODUCT_LABELS and PRODUCT_LABELS[key] not in ("", self.provider):
            return True
        return any(
            key.startswith(prefix) and provider != self.provider
            for prefix, provider in PROVIDER_PREFIXES.items()
        )

    def requirement(self, req: Requirement) -> Verdict:
        """One `matchExpressions` entry (or nodeSelector pair, as `In`) against the nodes."""
        key = req.key
        if key in self.known:
            return Verdict(req.matches({key: self.known[key]}))
        if self._absent(key):
            return Verdict(req.matches({}))
        if key in PRODUCT_LABELS and req.operator in ("In", "NotIn"):
            named = any(self._names_product(key, v) for v in req.values)
            return Verdict(named if req.operator == "In" else not named)
        if key == "kubernetes.io/arch":
            note = (
                f"fit assumed the nodes of pool {self.pool.name} are {ASSUMED_ARCH} "
                "(kubernetes.io/arch; a pool declares no CPU architecture)"
            )
            return Verdict(req.matches({key: ASSUMED_ARCH}), [note])
        if key in self.present or key.startswith("nvidia.com/") or key in PRODUCT_LABELS:
            if req.operator in ("Exists", "DoesNotExist"):
                return Verdict(req.operator == "Exists")
            note = (
                f"fit cannot know the values of label {key} on the nodes of pool "
                f"{self.pool.name}: it assumed they match ({req.operator} "
                f"{', '.join(req.values)})"
            )
            return Verdict(None, [note])
        note = (
            f"fit cannot know whether the nodes of pool {self.pool.name} carry label {key}: "
            f"it assumed they match ({req.operator} {', '.join(req.values)})"
        )
        return Verdict(None, [note])

    def _names_product(self, key: str, value: str) -> bool:
        """Whether a product label's value is what the pool's nodes carry: the pool's GPU model,
        and for GFD's `nvidia.com/gpu.product` the `-SHARED` suffix exactly where GFD adds it."""
        if key == PRODUCT_LABEL and value.endswith(SHARED_SUFFIX) != self.shared_product:
            return False
        return names_model(self.pool.accelerator, value.removesuffix(SHARED_SUFFIX))

    def selector(self, selector: Mapping[str, str]) -> Verdict:
        """A nodeSelector: every pair must match."""
        return _all(self.requirement(Requirement(k, "In", (v,))) for k, v in selector.items())

    def affinity(self, terms: tuple[tuple[Requirement, ...], ...]) -> Verdict:
        """Required node affinity: any term whose entries all match (no terms: every node)."""
        if not terms:
            return Verdict(True)
        verdicts = [_all(self.requirement(r) for r in term) for term in terms]
        if any(v.value is True for v in verdicts):
            return Verdict(True)
        maybe = [v for v in verdicts if v.value is None]
        if maybe:
            return Verdict(None, maybe[0].assumed)
        return Verdict(False)


def _all(verdicts: Iterable[Verdict]) -> Verdict:
    result = Verdict(True)
    for verdict in verdicts:
        if verdict.value is False:
            return Verdict(False)
        if verdict.value is None:
            result.value = None
        result.assumed.extend(verdict.assumed)
    return result
