"""The model's enumerated types (renderer/model/choices.py) against the schemas' `enum`s.

Every `enum` in schemas/*.json is found by walking the JSON, not listed by hand, so a new
enumerated field the model does not type fails here, and so does a value added to or dropped
from either side. Each alias must also be the declared type of the model fields that hold it.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from renderer.model import choices, metrics
from renderer.model.evidence import Evidence, EvidenceNode
from renderer.model.platform import (
    AllowedEgress,
    Autoscaling,
    Cluster,
    EgressRule,
    Endpoint,
    Namespace,
    Pool,
    Queue,
    SecretStore,
    Slo,
    Taint,
    Team,
)

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"

# (schema file, JSON pointer of the property holding `enum`) -> the alias and the model fields typed
# with it (a field the file may leave out is typed `Alias | None`).
TYPED: dict[tuple[str, str], tuple[Any, tuple[tuple[type, str], ...]]] = {
    ("cluster", "/properties/spec/properties/environment"): (
        choices.Environment,
        ((Cluster, "environment"),),
    ),
    ("cluster", "/properties/spec/properties/provider"): (
        choices.Provider,
        ((Cluster, "provider"),),
    ),
    ("cluster", "/properties/spec/properties/scheduler"): (
        choices.Scheduler,
        ((Cluster, "scheduler"),),
    ),
    ("cluster", "/properties/spec/properties/secretStore/properties/provider"): (
        choices.SecretStoreProvider,
        ((SecretStore, "provider"),),
    ),
    ("cluster", "/properties/spec/properties/secretStore/properties/vault/properties/version"): (
        choices.VaultVersion,
        ((SecretStore, "version"),),
    ),
    ("cluster", "/$defs/egressRule/properties/protocol"): (
        choices.EgressProtocol,
        ((EgressRule, "protocol"),),
    ),
    ("team", "/$defs/egressRule/properties/protocol"): (
        choices.EgressProtocol,
        ((EgressRule, "protocol"),),
    ),
    ("repository", "/$defs/allowedEgress/properties/protocol"): (
        choices.EgressProtocol,
        ((AllowedEgress, "protocol"),),
    ),
    ("pool", "/properties/spec/properties/topology/properties/form"): (
        choices.TopologyForm,
        ((Pool, "topology_form"),),
    ),
    ("pool", "/properties/spec/properties/topology/properties/interconnect"): (
        choices.Interconnect,
        ((Pool, "interconnect"),),
    ),
    ("pool", "/properties/spec/properties/fabric/properties/type"): (
        choices.Fabric,
        ((Pool, "fabric"),),
    ),
    ("pool", "/properties/spec/properties/workload"): (choices.Workload, ((Pool, "workload"),)),
    ("pool", "/properties/spec/properties/sharing"): (choices.Sharing, ((Pool, "sharing"),)),
    ("pool", "/properties/spec/properties/exposure"): (choices.Exposure, ((Pool, "exposure"),)),
    ("pool", "/properties/spec/properties/taints/items/properties/effect"): (
        choices.TaintEffect,
        ((Taint, "effect"),),
    ),
    ("queue", "/properties/spec/properties/strategy"): (
        choices.QueueStrategy,
        ((Queue, "strategy"),),
    ),
    ("team", "/properties/spec/properties/namespaces/items/properties/purpose"): (
        choices.Purpose,
        ((Namespace, "purpose"),),
    ),
    ("team", "/properties/spec/properties/namespaces/items/properties/kinds/items"): (
        choices.WorkloadKind,
        ((Namespace, "kinds"),),
    ),
    ("team", "/properties/spec/properties/namespaces/items/properties/podSecurity"): (
        choices.PodSecurityLevel,
        ((Namespace, "pod_security"),),
    ),
    ("team", "/properties/spec/properties/acceptedUnit/properties/kind"): (
        choices.AcceptedUnit,
        ((Team, "accepted_unit"),),
    ),
    ("team", "/$defs/endpoint/properties/server"): (choices.ServerKind, ((Endpoint, "server"),)),
    ("team", "/$defs/endpoint/properties/slo/properties/metric"): (
        choices.SloMetric,
        ((Slo, "metric"),),
    ),
    ("team", "/$defs/endpoint/properties/autoscaling/properties/signal"): (
        choices.ScalingSignal,
        ((Autoscaling, "signal"),),
    ),
    ("evidence", "/properties/spec/properties/verdict"): (
        choices.EvidenceVerdict,
        ((Evidence, "verdict"),),
    ),
    ("evidence", "/properties/spec/properties/nodes/items/properties/verdict"): (
        choices.NodeVerdict,
        ((EvidenceNode, "verdict"),),
    ),
}

UNTYPED = {
    ("evidence", "/properties/spec/properties/steps/items/properties/verdict"),
    ("evidence", "/$defs/figures/items/properties/comparison"),
    ("evidence", "/$defs/figures/items/properties/verdict"),
    ("queue", "/properties/spec/properties/preemption/properties/withinTeam"),
    ("queue", "/properties/spec/properties/preemption/properties/reclaimWithinCohort"),
    ("queue", "/properties/spec/properties/preemption/properties/borrowWithinCohort"),
}
"""`Queue.preemption` is a mapping handed to Kueue's ClusterQueue as written; nothing compares
its values; an evidence file's step and figure verdicts are read by people and by `diff`, never
compared by the gate."""


def _enums(node: Any, pointer: str = "") -> Iterator[tuple[str, list[Any]]]:
    if isinstance(node, dict):
        if "enum" in node:
            yield pointer, node["enum"]
        for key, value in node.items():
            yield from _enums(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _enums(value, f"{pointer}/{index}")


def schema_enums() -> dict[tuple[str, str], list[Any]]:
    found = {}
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        name = path.name.removesuffix(".schema.json")
        for pointer, values in _enums(json.loads(path.read_text())):
            found[(name, pointer)] = values
    return found


def test_every_schema_enum_has_a_model_type() -> None:
    assert set(schema_enums()) == set(TYPED) | UNTYPED


@pytest.mark.parametrize("site", sorted(TYPED), ids="{0[0]}:{0[1]}".format)
def test_alias_values_are_the_schema_enum(site: tuple[str, str]) -> None:
    alias, _ = TYPED[site]
    assert list(get_args(alias)) == schema_enums()[site]


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) is tuple:  # a list of choices: `tuple[Alias, ...]`
        return get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        assert len(rest) == 1
        return rest[0]
    return annotation


@pytest.mark.parametrize("site", sorted(TYPED), ids="{0[0]}:{0[1]}".format)
def test_model_fields_are_typed_with_the_alias(site: tuple[str, str]) -> None:
    alias, fields = TYPED[site]
    for cls, name in fields:
        hints = typing.get_type_hints(cls)
        assert _without_none(hints[name]) == alias, f"{cls.__name__}.{name}"


def test_value_tuples_list_every_value_in_order() -> None:
    pairs = {
        choices.Environment: choices.ENVIRONMENTS,
        choices.Provider: choices.PROVIDERS,
        choices.Scheduler: choices.SCHEDULERS,
        choices.SecretStoreProvider: choices.SECRET_STORE_PROVIDERS,
        choices.VaultVersion: choices.VAULT_VERSIONS,
        choices.EgressProtocol: choices.EGRESS_PROTOCOLS,
        choices.TopologyForm: choices.TOPOLOGY_FORMS,
        choices.Interconnect: choices.INTERCONNECTS,
        choices.Fabric: choices.FABRICS,
        choices.Workload: choices.WORKLOADS,
        choices.Sharing: choices.SHARINGS,
        choices.Exposure: choices.EXPOSURES,
        choices.TaintEffect: choices.TAINT_EFFECTS,
        choices.QueueStrategy: choices.QUEUE_STRATEGIES,
        choices.Purpose: choices.PURPOSES,
        choices.WorkloadKind: choices.WORKLOAD_KINDS,
        choices.PodSecurityLevel: choices.POD_SECURITY_LEVELS,
        choices.AcceptedUnit: choices.ACCEPTED_UNIT_KINDS,
        choices.ServerKind: choices.SERVER_KINDS,
        choices.SloMetric: choices.SLO_METRICS,
        choices.EvidenceVerdict: choices.EVIDENCE_VERDICTS,
        choices.NodeVerdict: choices.NODE_VERDICTS,
        choices.ScalingSignal: choices.SCALING_SIGNALS,
    }
    assert {alias for alias, _ in TYPED.values()} == set(pairs)
    for alias, values in pairs.items():
        assert values == get_args(alias)


def test_subsets_hold_only_their_types_values() -> None:
    assert set(choices.TIME_SHARED) == {"time-slicing", "mps"} < set(choices.SHARINGS)
    assert set(choices.INFERENCE_WORKLOADS) == {"online-inference", "batch-inference"}
    assert set(choices.INFERENCE_WORKLOADS) < set(choices.WORKLOADS)
    assert set(metrics.ACCEPTED_UNITS) == set(choices.ACCEPTED_UNIT_KINDS)


def test_one_of_returns_the_member_and_refuses_anything_else() -> None:
    assert choices.one_of("mig", choices.SHARINGS) == "mig"
    assert choices.optional_one_of(None, choices.SHARINGS) is None
    assert choices.optional_one_of("mps", choices.SHARINGS) == "mps"
    with pytest.raises(ValueError, match="'MIG' is not one of full-gpu, mig, time-slicing, mps"):
        choices.one_of("MIG", choices.SHARINGS)
    with pytest.raises(ValueError, match="is not one of"):
        choices.optional_one_of("", choices.SHARINGS)
