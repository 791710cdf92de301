"""A team's non-GPU caps (CPU, memory, storage, PersistentVolumeClaims) and each namespace's share.

The caps in a team file (or the cluster's `teamDefaults.resources`) are the team's on each
cluster, not each namespace's: a ResourceQuota is per namespace and Kubernetes has no quota
across namespaces, so the team's caps are split between its namespaces on the cluster. A
namespace that sets `resources` gets that; the others share what is left evenly, rounded down
(whole cores and GiB where a share is at least one, millicores and MiB below), so the
ResourceQuotas of a team never add up to more than its file says. Policy rule
`namespace-caps-exceed-team` refuses namespace shares that add up to more than the team's.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_FLOOR, Decimal
from typing import Literal

from renderer.model import quantity
from renderer.model.platform import Cluster, Namespace, Team

CapKey = Literal["cpu", "memory", "storage", "persistentVolumeClaims"]
CAP_KEYS: tuple[CapKey, ...] = ("cpu", "memory", "storage", "persistentVolumeClaims")

_GIB = Decimal(2**30)
_MIB = Decimal(2**20)


def team_caps(cluster: Cluster, team: Team) -> dict[CapKey, Decimal]:
    """The team's caps on the cluster, key by key the team's or else the cluster's default."""
    declared = {**cluster.team_default_resources, **team.resources}
    return {key: quantity.parse(declared[key]) for key in CAP_KEYS if key in declared}


def namespaces_on(team: Team, cluster: str) -> tuple[Namespace, ...]:
    return tuple(ns for ns in team.namespaces if ns.cluster == cluster)


def _floor(value: Decimal, step: Decimal) -> Decimal:
    return (value / step).to_integral_value(ROUND_FLOOR) * step


def _even(key: CapKey, value: Decimal) -> Decimal:
    """One even share, rounded down to a unit a reviewer reads."""
    if key == "persistentVolumeClaims":
        return _floor(value, Decimal(1))
    if key == "cpu":
        return _floor(value, Decimal(1) if value >= 1 else Decimal("0.001"))
    return _floor(value, _GIB if value >= _GIB else _MIB)


def namespace_shares(cluster: Cluster, team: Team) -> dict[str, dict[CapKey, Decimal]]:
    """Each of the team's namespaces on the cluster, by name: its caps."""
    caps = team_caps(cluster, team)
    namespaces = namespaces_on(team, cluster.name)
    shares: dict[str, dict[CapKey, Decimal]] = {ns.name: {} for ns in namespaces}
    for key, total in caps.items():
        explicit = {
            ns.name: quantity.parse(ns.resources[key]) for ns in namespaces if key in ns.resources
        }
        others = [ns.name for ns in namespaces if ns.name not in explicit]
        rest = max(Decimal(0), total - sum(explicit.values(), Decimal(0)))
        for name, value in explicit.items():
            shares[name][key] = value
        for name in others:
            shares[name][key] = _even(key, rest / len(others))
    return shares


def text(key: CapKey, value: Decimal) -> str:
    """A share as the ResourceQuota writes it."""
    if key == "persistentVolumeClaims":
        return str(int(value))
    if key == "cpu":
        return quantity.cpu(value)
    return quantity.memory(value)


def quota_text(shares: Mapping[CapKey, Decimal]) -> dict[str, str]:
    return {key: text(key, value) for key, value in shares.items()}
