"""The port of Kueue's resource_node.go (`renderer.model.quota_tree`) against Kueue's own
`TestAvailable` table (pkg/cache/scheduler/resource_test.go, v0.19.2), transcribed as data in
tests/kueue_tables/available.yaml.

Each case is run as upstream runs it: the Cohorts and ClusterQueues become a tree (a Cohort
that a ClusterQueue or Cohort names but no object defines is made with no quota, as Kueue's
hierarchy manager `getOrCreateCohort` does), the tree is settled, and then

- with no usage, every ClusterQueue's available equals its potentially available;
- with the case's usage added, available and potentially available are the wanted ones;
- with that usage removed again, available equals potentially available once more.

`ClusterQueueSnapshot.Available` floors resource_node.go's `available` at 0; the port's
`available` is the unfloored function, so the test floors it as Kueue's snapshot does. Usage is
added per ClusterQueue in name order, then per (flavor, resource) in order: upstream walks Go
maps in random order, so its wants hold in any order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.model import quantity
from renderer.model.quota_tree import ZERO, FlavorResource, Limits, QuotaNode, settle

TABLE = Path(__file__).resolve().parent / "kueue_tables" / "available.yaml"

Amounts = dict[str, dict[FlavorResource, Decimal]]
"""ClusterQueue name -> (flavor, resource) -> quantity."""


@dataclass(frozen=True)
class Case:
    name: str
    body: Mapping[str, Any]

    @property
    def skip(self) -> str | None:
        reason = self.body.get("skip")
        return str(reason) if reason else None

    def amounts(self, key: str) -> Amounts:
        return {
            cq: {
                (flavor, resource): quantity.parse(str(value))
                for flavor, per_resource in flavors.items()
                for resource, value in per_resource.items()
            }
            for cq, flavors in (self.body.get(key) or {}).items()
        }


def _load() -> list[Case]:
    document = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    return [Case(entry["name"], entry) for entry in document["cases"]]


CASES = _load()


def _params() -> list[Any]:
    return [
        pytest.param(case, id=case.name, marks=[pytest.mark.skip(reason=case.skip)])
        if case.skip
        else pytest.param(case, id=case.name)
        for case in CASES
    ]


def _quotas(
    flavors: Mapping[str, Mapping[str, Mapping[str, Any]]] | None,
) -> dict[FlavorResource, Limits]:
    def amount(entry: Mapping[str, Any], key: str) -> Decimal | None:
        return quantity.parse(str(entry[key])) if key in entry else None

    found: dict[FlavorResource, Limits] = {}
    for flavor, resources in (flavors or {}).items():
        for resource, entry in resources.items():
            unknown = set(entry) - {"nominal", "borrowingLimit", "lendingLimit"}
            assert not unknown, f"{flavor}/{resource}: fields the port does not model: {unknown}"
            nominal = amount(entry, "nominal")
            assert nominal is not None, f"{flavor}/{resource}: no nominal"
            found[(flavor, resource)] = Limits(
                nominal, amount(entry, "borrowingLimit"), amount(entry, "lendingLimit")
            )
    return found


def _build(case: Case) -> tuple[dict[str, QuotaNode], dict[str, QuotaNode]]:
    """The settled tree: (ClusterQueues by name, Cohorts by name, implicit ones included)."""
    cohorts: dict[str, QuotaNode] = {}
    queues: dict[str, QuotaNode] = {}
    parents: list[tuple[QuotaNode, str]] = []
    for body in case.body.get("cohorts") or []:
        node = cohorts[body["name"]] = QuotaNode(body["name"], "Cohort", _quotas(body["flavors"]))
        if body.get("parent"):
            parents.append((node, body["parent"]))
    for body in case.body.get("clusterQueues") or []:
        node = queues[body["name"]] = QuotaNode(
            body["name"], "ClusterQueue", _quotas(body["flavors"])
        )
        if body.get("cohort"):
            parents.append((node, body["cohort"]))
    for child, parent in parents:
        if parent not in cohorts:  # implicit Cohort: no object, no quota
            cohorts[parent] = QuotaNode(parent, "Cohort", {})
        cohorts[parent].adopt(child)
    for node in [*cohorts.values(), *queues.values()]:
        if node.parent is None:
            settle(node)
    return queues, cohorts


def _add(queues: Mapping[str, QuotaNode], usage: Amounts) -> None:
    for cq in sorted(usage):
        for fr in sorted(usage[cq]):
            queues[cq].add_usage(fr, usage[cq][fr])


def _remove(queues: Mapping[str, QuotaNode], usage: Amounts, reverse: bool) -> None:
    for cq in sorted(usage, reverse=reverse):
        for fr in sorted(usage[cq], reverse=reverse):
            queues[cq].remove_usage(fr, usage[cq][fr])


def _available(queues: Mapping[str, QuotaNode]) -> Amounts:
    """`ClusterQueueSnapshot.Available` of every ClusterQueue's own (flavor, resource)s."""
    return {
        name: {fr: max(ZERO, node.available(fr)) for fr in node.quotas}
        for name, node in queues.items()
    }


def _potential(queues: Mapping[str, QuotaNode]) -> Amounts:
    return {
        name: {fr: node.potential_available(fr) for fr in node.quotas}
        for name, node in queues.items()
    }


def _usage(nodes: Mapping[str, QuotaNode]) -> dict[str, dict[FlavorResource, Decimal]]:
    """Every node's usage, a missing (flavor, resource) read as 0 as Go's map reads it."""
    return {
        name: {fr: value for fr, value in node.usage.items() if value != 0}
        for name, node in nodes.items()
    }


def test_table_is_whole() -> None:
    """All eight cases of upstream's TestAvailable at v0.19.2, each named once."""
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    assert names == [
        "base cqs",
        "cqs with cohort",
        "cq borrows from cohort",
        "cq oversubscription spills into cohort",
        "lending and borrowing limits respected",
        "hierarchical cohort",
        "hierarchical cohort respects borrowing limit",
        "hierarchical cohort respects lending limit",
    ]


@pytest.mark.parametrize("case", _params())
def test_available(case: Case) -> None:
    queues, _ = _build(case)
    want_available = case.amounts("wantAvailable")
    want_potential = case.amounts("wantPotentiallyAvailable")
    usage = case.amounts("usage")

    assert _potential(queues) == want_potential, "potentially available, no usage"
    assert _available(queues) == want_potential, "available, no usage"

    _add(queues, usage)
    assert _available(queues) == want_available, "available, with usage"
    assert _potential(queues) == want_potential, "potentially available, with usage"

    _remove(queues, usage, reverse=False)
    assert _available(queues) == want_potential, "available, usage removed"
    assert _potential(queues) == want_potential, "potentially available, usage removed"


@pytest.mark.parametrize("reverse", [False, True], ids=["same-order", "reverse-order"])
@pytest.mark.parametrize("case", _params())
def test_remove_usage_undoes_add_usage(case: Case, reverse: bool) -> None:
    queues, cohorts = _build(case)
    nodes = {**cohorts, **queues}
    usage = case.amounts("usage")
    before = _usage(nodes)

    _add(queues, usage)
    if any(usage.values()):
        assert _usage(nodes) != before, "the usage was not added"
    _remove(queues, usage, reverse=reverse)
    assert _usage(nodes) == before
