"""Why each add-on is on a cluster, in the few words the README, the diagram and `diff` say.

`renderer.model.operator_needs.cluster_needs` gives one `Need` per thing that needs an operator
("the JobSet template of namespace llm-train", "pool h100-train's RDMA resource ..."); a cluster
with a dozen team namespaces has a dozen of them per operator. `reasons` groups them: the needs
that differ only in their namespace become one ("the JobSet template of namespaces llm-train,
recsys-train"), those that differ only in their pool one more ("pools a100-mig, h100-train: RDMA
resource rdma/..."), in the order the needs come. The platform's own add-ons (GPU Operator,
scheduler, Argo Workflows, Prometheus stack, External Secrets, DCGM exporter) are there for the
platform itself: their `purpose` says why (`renderer.model.operators`; the DCGM exporter, which
is no operator of its own, has its purpose here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from renderer.model.names import DCGM_EXPORTER_ADDON, GPU_OPERATOR_ADDON
from renderer.model.operator_needs import cluster_needs
from renderer.model.operators import BY_ADDON, OPERATORS, OPTIONAL_ADDONS
from renderer.model.platform import Cluster, Platform

DCGM_EXPORTER_TITLE = "DCGM exporter"
DCGM_EXPORTER_PURPOSE = (
    "per-GPU utilisation, memory, power, thermal and XID/ECC error metrics for Prometheus"
)
"""What the DCGM exporter is for (schemas/cluster.schema.json says the same): it runs as an
operand of the GPU Operator and serves no kind, so `OPERATORS` does not list it."""

ORDER: tuple[str, ...] = tuple(
    addon
    for operator in OPERATORS
    for addon in (
        (operator.addon, DCGM_EXPORTER_ADDON)
        if operator.addon == GPU_OPERATOR_ADDON
        else (operator.addon,)
    )
)
"""The add-ons in the order the README and the diagram list them: `OPERATORS`' order, the DCGM
exporter beside the GPU Operator that deploys it."""

_IN_NAMESPACE = re.compile(r"^(?P<what>.+) namespace (?P<name>\S+)$")
_OF_POOL = re.compile(r"^pool (?P<name>\S+)'s (?P<what>.+)$")


def title(addon: str) -> str:
    """The add-on's name as people know it; the key itself for one gpuplane does not know."""
    if addon == DCGM_EXPORTER_ADDON:
        return DCGM_EXPORTER_TITLE
    operator = BY_ADDON.get(addon)
    return operator.title if operator is not None else addon


def purpose(addon: str) -> str:
    """What the add-on does on a platform, in a few words ("" for one gpuplane does not know)."""
    if addon == DCGM_EXPORTER_ADDON:
        return DCGM_EXPORTER_PURPOSE
    operator = BY_ADDON.get(addon)
    return operator.purpose if operator is not None else ""


def platform_addon(addon: str) -> bool:
    """Whether the add-on is one of the platform's own, there for the platform itself rather than
    because something on the cluster needs it."""
    return addon not in OPTIONAL_ADDONS


def ordered(addons: Iterable[str]) -> list[str]:
    """The add-on keys in `ORDER`, any key gpuplane does not know last, by name."""
    rank = {addon: index for index, addon in enumerate(ORDER)}
    return sorted(addons, key=lambda addon: (rank.get(addon, len(rank)), addon))


def grouped(whys: Iterable[str]) -> tuple[str, ...]:
    """The needs' texts with the ones that differ only in their namespace, or only in their
    pool, said once; in the order each group first comes, each text once."""
    groups: dict[tuple[str, str], list[str]] = {}
    for why in whys:
        if match := _IN_NAMESPACE.match(why):
            key = ("namespace", match["what"])
        elif match := _OF_POOL.match(why):
            key = ("pool", match["what"])
        else:
            groups.setdefault(("", why), [])
            continue
        names = groups.setdefault(key, [])
        if match["name"] not in names:
            names.append(match["name"])
    out = []
    for (kind, what), names in groups.items():
        if kind == "namespace":
            noun = "namespace" if len(names) == 1 else "namespaces"
            out.append(f"{what} {noun} {', '.join(names)}")
        elif kind == "pool" and len(names) == 1:
            out.append(f"pool {names[0]}'s {what}")
        elif kind == "pool":
            out.append(f"pools {', '.join(names)}: {what}")
        else:
            out.append(what)
    return tuple(out)


def reasons(platform: Platform, cluster: Cluster) -> Mapping[str, tuple[str, ...]]:
    """Per add-on key, what on the cluster needs it (`grouped`), for each add-on something
    needs, whether the cluster declares it or not."""
    whys: dict[str, list[str]] = {}
    for need in cluster_needs(platform, cluster):
        whys.setdefault(need.addon, []).append(need.why)
    return {addon: grouped(texts) for addon, texts in whys.items()}
