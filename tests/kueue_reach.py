"""What a team can hold at most, read from rendered Kueue objects the way Kueue reads them.

The Cohorts and ClusterQueues (their YAML, not gpuplane's model) become Kueue's cohort tree
(`renderer.model.quota_tree`, the port of resource_node.go that tests/test_quota_tree.py checks
against Kueue's own `TestAvailable` table). Then, with every other team idle, the team's
ClusterQueues admit one unit at a time while Kueue's `available` allows, in every order of
ClusterQueues and also round-robin: the most the team's ClusterQueues ever hold together is its
reach. Admission one unit at a time is the finest any mix of workload sizes can fill.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from renderer.model import quantity
from renderer.model.quota_tree import Limits, QuotaNode, settle

Fr = tuple[str, str]
HOST = ("cpu", "memory")


def _quotas(spec: Mapping[str, Any]) -> dict[Fr, Limits]:
    found: dict[Fr, Limits] = {}
    for group in spec.get("resourceGroups", []):
        for flavor in group["flavors"]:
            for entry in flavor["resources"]:

                def amount(key: str, entry: Mapping[str, Any] = entry) -> Decimal | None:
                    return quantity.parse(str(entry[key])) if key in entry else None

                nominal = amount("nominalQuota")
                assert nominal is not None
                found[(flavor["name"], entry["name"])] = Limits(
                    nominal, amount("borrowingLimit"), amount("lendingLimit")
                )
    return found


def tree(objects: Iterable[Mapping[str, Any]]) -> dict[str, QuotaNode]:
    """Kueue's tree of these Cohorts and ClusterQueues (one cluster's), by name. A Cohort no
    object defines but one names is made, as Kueue's hierarchy manager does, with no quota."""
    nodes: dict[str, QuotaNode] = {}
    parents: dict[str, str] = {}
    for body in objects:
        kind, name, spec = body["kind"], body["metadata"]["name"], body["spec"]
        if kind == "Cohort":
            nodes[name] = QuotaNode(name, "Cohort", _quotas(spec))
            if spec.get("parentName"):
                parents[name] = spec["parentName"]
        elif kind == "ClusterQueue":
            nodes[name] = QuotaNode(name, "ClusterQueue", _quotas(spec))
            if spec.get("cohortName"):
                parents[name] = spec["cohortName"]
    for child, parent in sorted(parents.items()):
        if parent not in nodes:
            nodes[parent] = QuotaNode(parent, "Cohort", {})
        nodes[parent].adopt(nodes[child])
    for node in nodes.values():
        if node.parent is None:
            settle(node)
    return nodes


def _release(queues: Iterable[QuotaNode], fr: Fr) -> None:
    for node in queues:
        used = node.usage.get(fr, Decimal(0))
        if used:
            node.remove_usage(fr, used)


def _round_robin(queues: list[QuotaNode], fr: Fr) -> Decimal:
    """One unit to each queue in turn, as long as any can take one."""
    held = Decimal(0)
    progress = True
    while progress:
        progress = False
        for node in queues:
            if node.available(fr) >= 1:
                node.add_usage(fr, Decimal(1))
                held += 1
                progress = True
    return held


def _one_after_another(queues: list[QuotaNode], fr: Fr) -> Decimal:
    """Each queue takes all it can before the next one starts."""
    held = Decimal(0)
    for node in queues:
        while node.available(fr) >= 1:
            node.add_usage(fr, Decimal(1))
            held += 1
    return held


def most_held(nodes: Mapping[str, QuotaNode], queues: Iterable[str], fr: Fr) -> Decimal:
    """The most the named ClusterQueues hold together of `fr`, over every order of the queues,
    filled round-robin or one after another, nothing else used."""
    members = [nodes[q] for q in queues if fr in nodes[q].quotas]
    best = Decimal(0)
    for order in itertools.permutations(members):
        for fill in (_round_robin, _one_after_another):
            best = max(best, fill(list(order), fr))
            _release(members, fr)
    return best


def team_queues(objects: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each team's ClusterQueues, by the team label gpuplane puts on them."""
    found: dict[str, list[str]] = {}
    for body in objects:
        if body["kind"] != "ClusterQueue":
            continue
        team = body["metadata"].get("labels", {}).get("gpuplane.dev/team")
        if team:
            found.setdefault(team, []).append(body["metadata"]["name"])
    return found
