"""What every Kueue conformance runner shares: the result of one case, and the fixtures' facts
turned into Kueue v1beta2 objects (dicts, as the API server would store them) that
`renderer.admission.scheduler.snapshot` reads, so the engine under test reads Kueue's own objects.

A fixture file (`<area>/*.yaml`) transcribes cases of one upstream Go test as data, never code:

```yaml
source: pkg/scheduler/preemption/preemption_test.go TestPreemption   # upstream file and function
kueue: v0.19.2
shared:            # facts the cases share; a key a case sets replaces the shared one whole
  flavors: [default, alpha]            # names, or {name, nodeLabels, nodeTaints, tolerations, topologyName}
  clusterQueues:
    - name: c1
      cohort: cohort                   # .Cohort("cohort"), spec.cohortName
      resourceGroups:                  # one mapping per .ResourceGroup(...), flavors in order
        - default: {cpu: ["6", "6"], memory: "3Gi"}   # .Resource(name, nominal, borrowing, lending)
      preemption: {withinClusterQueue: LowerPriority}  # the v1beta2 fields, as written upstream
      flavorFungibility: {whenCanPreempt: MayStopSearch}
      fairSharing: {weight: "2"}
  cohorts:
    - {name: root, parent: other, resourceGroups: [...], fairSharing: {weight: "1"}}
  priorityClasses: [{name: high, value: 100}]
cases:
  - name: preempt lowest priority      # the upstream case name, verbatim
    admitted:                          # Workloads holding quota (ReserveQuotaAt)
      - name: low                      # namespace "" unless given; uid defaults to the name
        priority: -1
        clusterQueue: standalone
        reservedAt: 0                  # seconds after NOW (now.Add(time.Second) is 1)
        created: -10                   # metadata.creationTimestamp, seconds after NOW (unset: zero time)
        evicted: true                  # an Evicted=True condition (already being preempted)
        usage: {cpu: [default, "2"]}   # one pod set "main": resource -> [flavor, total]
        # or podSets: [{name: main, count: 1, usage: {cpu: [default, "2"]}}]
    ...                                # the runner's own keys (incoming, want, ...)
```

A `[nominal, borrowingLimit, lendingLimit]` list follows `FlavorQuotasWrapper.Resource`
(pkg/util/testing/v1beta2/wrappers.go): "" or a missing entry is Kueue's nil; a bare string is
the nominal quota alone. `coveredResources` are the first flavor's resources, in order, as
`ResourceGroup(...)` there sets them. Fixtures may carry `skip: <why>` on a case: the runner
reports it as not modelled.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from renderer.admission.scheduler.snapshot import KueueSnapshot, read_objects

HERE = Path(__file__).resolve().parent
KUEUE = "kueue.x-k8s.io/v1beta2"
NOW = datetime(2025, 1, 1, tzinfo=UTC)
"""The fixtures' `now` (upstream: time.Now() truncated to the second)."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One ported case: whether the engine agrees with Kueue's expectation, whether the engine
    models the case at all (a case not modelled never counts as agreeing), and why (what differs,
    or what is not modelled)."""

    name: str
    agrees: bool
    modelled: bool
    why: str = ""


@dataclass(frozen=True)
class Case:
    """One case of a fixture file: its name, where it is from, and its facts (shared merged in)."""

    name: str
    file: Path
    source: str
    facts: Mapping[str, Any] = field(default_factory=dict)

    @property
    def skip(self) -> str | None:
        reason = self.facts.get("skip")
        return str(reason) if reason else None


def load_cases(folder: Path | str) -> list[Case]:
    """Every case of every `*.yaml` file in `folder` (relative to tests/kueue_conformance),
    files by name, cases in file order; a case name is `<file stem>: <upstream name>`."""
    root = HERE / folder if not Path(folder).is_absolute() else Path(folder)
    cases: list[Case] = []
    for path in sorted(root.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        shared = data.get("shared") or {}
        source = str(data.get("source", ""))
        for raw in data.get("cases") or []:
            facts = {**shared, **raw}
            cases.append(Case(f"{path.stem}: {raw['name']}", path, source, facts))
    return cases


def summary(results: Sequence[CaseResult]) -> str:
    """`agree/modelled/total` as one line."""
    agree = sum(1 for r in results if r.modelled and r.agrees)
    modelled = sum(1 for r in results if r.modelled)
    return f"{agree}/{modelled}/{len(results)} (agree/modelled/total)"


# --- facts -> Kueue objects ----------------------------------------------------------------------


def timestamp(seconds: float | int | None) -> str:
    """NOW plus `seconds`, as RFC 3339 (metav1.Time's second precision)."""
    return (NOW + timedelta(seconds=seconds or 0)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quota(resource: str, value: Any) -> dict[str, Any]:
    values = [value] if not isinstance(value, list) else value
    entry: dict[str, Any] = {"name": resource, "nominalQuota": str(values[0] or "0")}
    if len(values) > 1 and values[1] not in ("", None):
        entry["borrowingLimit"] = str(values[1])
    if len(values) > 2 and values[2] not in ("", None):
        entry["lendingLimit"] = str(values[2])
    return entry


def resource_groups(groups: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The shorthand groups as `spec.resourceGroups`."""
    out = []
    for group in groups:
        flavors: list[dict[str, Any]] = [
            {"name": name, "resources": [_quota(r, v) for r, v in resources.items()]}
            for name, resources in group.items()
        ]
        covered = [r["name"] for r in flavors[0]["resources"]] if flavors else []
        out.append({"coveredResources": covered, "flavors": flavors})
    return out


def flavor_object(fact: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(fact, str):
        return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": fact}}
    spec = {k: v for k, v in fact.items() if k != "name"}
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": fact["name"]},
        "spec": spec,
    }


def cluster_queue_object(fact: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"namespaceSelector": {}}
    if fact.get("cohort"):
        spec["cohortName"] = fact["cohort"]
    spec["resourceGroups"] = resource_groups(fact.get("resourceGroups") or [])
    for key in ("preemption", "flavorFungibility", "fairSharing", "queueingStrategy"):
        if key in fact:
            spec[key] = fact[key]
    if "admissionScope" in fact:
        spec["admissionScope"] = fact["admissionScope"]
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": fact["name"]},
        "spec": spec,
    }


def cohort_object(fact: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if fact.get("parent"):
        spec["parentName"] = fact["parent"]
    if fact.get("resourceGroups"):
        spec["resourceGroups"] = resource_groups(fact["resourceGroups"])
    if "fairSharing" in fact:
        spec["fairSharing"] = fact["fairSharing"]
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": fact["name"]}, "spec": spec}


def pod_sets(fact: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A workload's pod sets in the fixture's form: `podSets`, or `usage` for one "main"."""
    if "podSets" in fact:
        return [dict(ps) for ps in fact["podSets"]]
    return [{"name": "main", "count": fact.get("count", 1), "usage": fact.get("usage", {})}]


def workload_object(fact: Mapping[str, Any]) -> dict[str, Any]:
    """An admitted Workload (`ReserveQuotaAt`): status.admission and QuotaReserved=True."""
    sets = pod_sets(fact)
    meta: dict[str, Any] = {
        "name": fact["name"],
        "namespace": fact.get("namespace", ""),
        "uid": str(fact.get("uid", fact["name"])),
    }
    if "created" in fact:  # upstream's builders leave it unset: Go's zero time
        meta["creationTimestamp"] = timestamp(fact["created"])
    assignments = [
        {
            "name": ps["name"],
            "count": ps.get("count", 1),
            "flavors": {r: fv[0] for r, fv in ps.get("usage", {}).items()},
            "resourceUsage": {r: str(fv[1]) for r, fv in ps.get("usage", {}).items()},
        }
        for ps in sets
    ]
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "priority": fact.get("priority", 0),
            "podSets": [{"name": ps["name"], "count": ps.get("count", 1)} for ps in sets],
        },
        "status": {
            "admission": {"clusterQueue": fact["clusterQueue"], "podSetAssignments": assignments},
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "AdmittedByTest",
                    "lastTransitionTime": timestamp(fact.get("reservedAt", 0)),
                },
                *(
                    [{"type": "Evicted", "status": "True", "reason": "Preempted"}]
                    if fact.get("evicted")
                    else []
                ),
            ],
        },
    }


def kueue_objects(facts: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The case's flavors, Cohorts, ClusterQueues, priority classes and admitted Workloads."""
    for flavor in facts.get("flavors") or []:
        yield flavor_object(flavor)
    for cohort in facts.get("cohorts") or []:
        yield cohort_object(cohort)
    for cq in facts.get("clusterQueues") or []:
        yield cluster_queue_object(cq)
    for pc in facts.get("priorityClasses") or []:
        yield {
            "apiVersion": KUEUE,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": pc["name"]},
            "value": pc["value"],
        }
    for wl in facts.get("admitted") or []:
        yield workload_object(wl)


def snapshot(facts: Mapping[str, Any]) -> KueueSnapshot:
    """The case's Kueue objects as the scheduler's snapshot reads them."""
    return read_objects(list(kueue_objects(facts)))


__all__ = [
    "NOW",
    "Case",
    "CaseResult",
    "kueue_objects",
    "load_cases",
    "snapshot",
    "summary",
    "timestamp",
]
