"""Writes tests/kueue_conformance/flavorassigner/*.yaml: the cases of Kueue v0.19.2's
`pkg/scheduler/flavorassigner/flavorassigner_test.go`, as facts.

Facts carry over, Go code does not: each case becomes the API objects its builders make
(ClusterQueues, Cohorts, ResourceFlavors, Topologies, Nodes, the Workload's pod sets), the
usage and the preemption oracle's answers the test sets up, and what the test asserts of
Kueue's assignment, under the names of Kueue's types (`representativeMode`, per pod set per
resource the flavor and mode, the status reasons, borrowing, usage, `noFitReason`). Each file
says which harness its cases run in (`harness:`), i.e. what the Go test function does around
the table, in words a runner can follow.

Run from the repository root, where the Kueue mirror is (the `fetch` tool's copy):

    python tools/port_kueue_flavorassigner.py /work/.mirror/kubernetes-sigs+kueue/repo

The output is reviewed like code: each case keeps its Kueue name, so `git show` of the test
file at the tag finds it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.golit import Composite, Lit, assignment, case_table, returned
from tools.kueue_builders import Builder, Evaluator, PodSet, Unknown, Workload

TAG = "v0.19.2"
PATH = "pkg/scheduler/flavorassigner/flavorassigner_test.go"
OUT = Path("tests/kueue_conformance/flavorassigner")
GI, MI, KI = 1 << 30, 1 << 20, 1 << 10


def quantity(resource: str, amount: int) -> str:
    """A Kueue internal amount (`resources.NewAmount`) as a quantity: milli-cpu for cpu."""
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    for unit, size in (("Gi", GI), ("Mi", MI), ("Ki", KI)):
        if amount and amount % size == 0:
            return f"{amount // size}{unit}"
    return str(amount)


def usage_map(quantities: dict[Any, Any] | None) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for (flavor, resource), amount in (quantities or {}).items():
        out.setdefault(flavor, {})[resource] = quantity(resource, int(amount))
    return out


def simulation(results: dict[Any, Any] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for (flavor, resource), result in (results or {}).items():
        out.setdefault(flavor, {})[resource] = {
            "possibility": result.get("preemptionPossiblity", "NoCandidates"),
            "borrow": result.get("borrowingAfterSimulation", 0),
        }
    return out


def objects(values: Any) -> list[dict[str, Any]]:
    """Builders' objects, from a Go map or list of them, in name order for a map."""
    if isinstance(values, dict):
        values = [values[k] for k in sorted(values)]
    return [v.Obj() if isinstance(v, Builder) else v for v in values or []]


def status_reasons(status: Any) -> list[str]:
    if not status:
        return []
    return sorted(status.get("reasons") or [])


def error_text(error: Any) -> str:
    """A flavor assigner error as its `Error()` reads (errors.go)."""
    if isinstance(error, dict) and error.get("__type__", "").endswith(
        "MultipleTASFlavorsAssignedError"
    ):
        return f"more than one TAS flavor assigned: {', '.join(sorted(error['Flavors']))}"
    texts = {
        "ErrNoTASFlavorAssigned": "no TAS flavor assigned",
        "ErrNoTASCacheInformation": "workload requires Topology, but there is no TAS cache information",
    }
    if error in texts:
        return texts[error]
    raise Unknown(f"error {error}")


def flavors_of(assignment_: dict[str, Any] | None) -> dict[str, Any]:
    out = {}
    for resource, fa in sorted((assignment_ or {}).items()):
        entry = {"flavor": fa["Name"], "mode": fa.get("Mode", "NoFit")}
        if "TriedFlavorIdx" in fa:
            entry["triedFlavorIdx"] = fa["TriedFlavorIdx"]
        out[resource] = entry
    return out


def attempt(at: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"flavor": at["Flavor"], "mode": at.get("Mode", "NoFit")}
    if at.get("Borrow"):
        out["borrow"] = at["Borrow"]
    if at.get("PreemptionPossibility"):
        out["preemptionPossibility"] = at["PreemptionPossibility"]
    if at.get("Reasons"):
        out["reasons"] = sorted(at["Reasons"])
    if at.get("NoFitReason"):
        out["noFitReason"] = at["NoFitReason"]
    return out


def want_assignment(mode: str, want: dict[str, Any]) -> dict[str, Any]:
    """`wantRepMode` and `wantAssignment` of TestAssignFlavors: everything its cmp.Diff
    compares (LastState and the unexported fields ignored, empty equal to absent); the
    attempts are compared flexibly (flexAssertConsidered): where a pod set got a Fit, only
    the flavors Kueue returns are checked."""
    pod_sets = []
    for ps in want.get("PodSets") or []:
        entry: dict[str, Any] = {"name": ps["Name"], "count": ps.get("Count", 0)}
        entry["requests"] = dict(ps.get("Requests") or {})
        entry["flavors"] = flavors_of(ps.get("Flavors"))
        entry["status"] = status_reasons(ps.get("Status"))
        error = (ps.get("Status") or {}).get("err")
        if error is not None:
            entry["error"] = error_text(error)
        if ps.get("FlavorAssignmentAttempts"):
            entry["attempts"] = [attempt(a) for a in ps["FlavorAssignmentAttempts"]]
        if ps.get("TopologyAssignment"):
            entry["topologyAssignment"] = ps["TopologyAssignment"]
        if ps.get("DelayedTopologyRequest"):
            entry["delayedTopologyRequest"] = ps["DelayedTopologyRequest"]
        pod_sets.append(entry)
    usage = usage_map((want.get("Usage") or {}).get("Quota"))
    return {
        "representativeMode": mode or "NoFit",
        "borrowing": want.get("Borrowing", 0),
        "noFitReason": want.get("NoFitReason", ""),
        "usage": usage,
        "podSets": pod_sets,
    }


def cohorts_for(queues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = sorted({q["spec"]["cohortName"] for q in queues if q["spec"].get("cohortName")})
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Cohort",
            "metadata": {"name": n},
            "spec": {},
        }
        for n in names
    ]


# --- objects -> the shorthand of tests/kueue_conformance/common.py ----------------------------

DEFAULT_FUNGIBILITY = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
"""What MakeClusterQueue sets; a ClusterQueue that keeps it is written without it."""


def groups_fact(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for group in groups:
        flavors: dict[str, Any] = {}
        for flavor in group["flavors"]:
            resources: dict[str, Any] = {}
            for entry in flavor["resources"]:
                limits = [entry.get("borrowingLimit", ""), entry.get("lendingLimit", "")]
                while limits and limits[-1] == "":
                    limits.pop()
                nominal = entry["nominalQuota"]
                resources[entry["name"]] = [nominal, *limits] if limits else nominal
            flavors[flavor["name"]] = resources
        out.append(flavors)
    return out


def queue_fact(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]
    fact: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if spec.get("cohortName"):
        fact["cohort"] = spec["cohortName"]
    fact["resourceGroups"] = groups_fact(spec.get("resourceGroups") or [])
    if spec.get("preemption") is not None:
        fact["preemption"] = {k: v for k, v in spec["preemption"].items() if k != "__type__"}
    fungibility = {
        k: v for k, v in (spec.get("flavorFungibility") or {}).items() if k != "__type__"
    }
    if fungibility != DEFAULT_FUNGIBILITY:
        fact["flavorFungibility"] = fungibility
    return fact


def cohort_fact(obj: dict[str, Any]) -> dict[str, Any]:
    fact: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if obj["spec"].get("parentName"):
        fact["parent"] = obj["spec"]["parentName"]
    if obj["spec"].get("resourceGroups"):
        fact["resourceGroups"] = groups_fact(obj["spec"]["resourceGroups"])
    return fact


def flavor_fact(obj: dict[str, Any]) -> str | dict[str, Any]:
    spec = obj.get("spec") or {}
    return {"name": obj["metadata"]["name"], **spec} if spec else obj["metadata"]["name"]


def topology_fact(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": obj["metadata"]["name"],
        "levels": [lv["nodeLabel"] for lv in obj["spec"]["levels"]],
    }


def shorthand(case: dict[str, Any]) -> dict[str, Any]:
    """A case with its objects in the shared shorthand (common.py's docstring)."""
    out = dict(case)
    for key, convert in (
        ("resourceFlavors", flavor_fact),
        ("clusterQueues", queue_fact),
        ("cohorts", cohort_fact),
        ("topologies", topology_fact),
    ):
        if key in out:
            out[key] = [convert(o) for o in out[key]]
    if "resourceFlavors" in out:
        out["flavors"] = out.pop("resourceFlavors")
    # implicit Cohorts (no quota, named by a ClusterQueue) need no object
    out["cohorts"] = [c for c in out.get("cohorts", []) if len(c) > 1]
    if not out["cohorts"]:
        del out["cohorts"]
    return {k: out[k] for k in ORDER if k in out}


ORDER = (
    "name", "untranscribed", "replaceWorkloadSlice", "featureGates", "fairSharing", "flavors",
    "topologies", "nodes", "nodeUsage", "cohorts", "clusterQueues", "usage", "simulation",
    "workload", "a", "b", "flavorFungibility", "want",
)  # fmt: skip


def evaluate_case(evaluate: Evaluator, element: Any) -> tuple[str, dict[str, Any], str | None]:
    """A case's name and fields; a field the port cannot read is left out and named."""
    key, body = element
    assert isinstance(key, Lit) and isinstance(body, Composite)
    fields: dict[str, Any] = {}
    unread = None
    for name, value in body.elements:
        try:
            fields[name.text] = evaluate(value)
        except Unknown as error:
            unread = f"{name.text} ({error})"
    return key.value, fields, unread


def port_assign_flavors(source: str) -> dict[str, Any]:
    evaluate = Evaluator()
    flavors = objects(evaluate(assignment(source, "TestAssignFlavors", "resourceFlavors")))
    cases = []
    for element in case_table(source, "TestAssignFlavors").elements:
        name, tc, unread = evaluate_case(evaluate, element)
        queues = [
            tc["clusterQueue"].Obj()
            if isinstance(tc["clusterQueue"], Builder)
            else tc["clusterQueue"]
        ]
        usage = {queues[0]["metadata"]["name"]: usage_map(tc.get("clusterQueueUsage"))}
        if tc.get("secondaryClusterQueue"):
            queues.append(tc["secondaryClusterQueue"])
            usage[queues[1]["metadata"]["name"]] = usage_map(tc.get("secondaryClusterQueueUsage"))
        case: dict[str, Any] = {"name": name}
        if unread:
            case["untranscribed"] = unread
        case.update(
            featureGates=tc.get("featureGates") or {},
            fairSharing=bool(tc.get("enableFairSharing")),
            topologies=objects(tc.get("topologies")),
            cohorts=cohorts_for(queues),
            clusterQueues=queues,
            usage={k: v for k, v in usage.items() if v},
            simulation=simulation(tc.get("simulationResult")),
            workload={"spec": {"podSets": tc["wlPods"]}},
        )
        if tc.get("wlReclaimablePods"):
            case["workload"]["status"] = {"reclaimablePods": tc["wlReclaimablePods"]}
        if tc.get("preemptWorkloadSlice") is not None or (unread or "").startswith(
            "preemptWorkloadSlice"
        ):
            case["replaceWorkloadSlice"] = True
        case["want"] = want_assignment(tc.get("wantRepMode", "NoFit"), tc["wantAssignment"])
        cases.append(_tidy(case))
    return {
        "test": "TestAssignFlavors",
        "harness": (
            "The ClusterQueues (the first is the one assigned to), the ResourceFlavors and "
            "Topologies go into a fresh cache; a Cohort with no quota is made for the first "
            "ClusterQueue's cohortName. Usage is added to each ClusterQueue's snapshot. The "
            "preemption oracle answers `simulation` for a flavor and resource, else Preempt "
            "with borrowing 0. Quota check BlockUndeclared; UnadmittedWorkloadsObservability "
            "on (Kueue runs each case with it off too, then ignoring noFitReason)."
        ),
        "resourceFlavors": flavors,
        "cases": cases,
    }


def _tidy(case: dict[str, Any]) -> dict[str, Any]:
    """Empty facts left out, so a case reads as what its test sets."""
    out = {}
    for key, value in case.items():
        if key in ("name", "want", "clusterQueues", "workload") or value not in (
            {},
            [],
            None,
            False,
        ):
            out[key] = value
    return out


class _NoAliases(yaml.SafeDumper):
    """Each case spelled out in full, without YAML anchors for the objects cases share; a
    short mapping or list of scalars on one line (`{cpu: '1', memory: 1Mi}`)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_mapping(self, tag: str, mapping: Any, flow_style: Any = None) -> Any:
        return super().represent_mapping(tag, mapping, _flow(mapping.values()))

    def represent_sequence(self, tag: str, sequence: Any, flow_style: Any = None) -> Any:
        return super().represent_sequence(tag, sequence, _flow(sequence))


def _flow(items: Any) -> bool:
    values = list(items)
    scalars = all(isinstance(v, str | int | float | bool) or v is None for v in values)
    return scalars and sum(len(str(v)) + 8 for v in values) < 80


def main(mirror: str) -> None:
    source = subprocess.run(
        ["git", f"--git-dir={mirror}", "show", f"{TAG}:{PATH}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    OUT.mkdir(parents=True, exist_ok=True)
    for filename, port in PORTS.items():
        data = port(source)
        if "resourceFlavors" in data:
            data["shared"] = {"flavors": [flavor_fact(f) for f in data.pop("resourceFlavors")]}
        data["cases"] = [shorthand(c) for c in data["cases"]]
        data = {
            "source": f"{PATH} {data['test']}",
            "kueue": TAG,
            **{k: v for k, v in data.items() if k not in ("test", "cases")},
            "cases": data["cases"],
        }
        header = (
            f"# Kueue {TAG} {data['source']}:\n# its cases as facts, transcribed by "
            "tools/port_kueue_flavorassigner.py (its docstring\n# has the rules); each case "
            "keeps its Kueue name. The objects are in the shorthand of\n# "
            "tests/kueue_conformance/common.py, as the test builds them (no API server "
            "defaults\n# them). Do not edit by hand: fix the tool and run it again.\n"
        )
        text = yaml.dump(data, Dumper=_NoAliases, sort_keys=False, width=100, allow_unicode=True)
        (OUT / filename).write_text(header + text)
        print(f"{filename}: {len(data['cases'])} cases")


def flavor_names(assignment_: dict[str, Any] | None) -> dict[str, str]:
    return {r: fa["Name"] for r, fa in sorted((assignment_ or {}).items())}


def port_single_flavor_tables(source: str, test: str) -> list[dict[str, Any]]:
    """TestReclaimBeforePriorityPreemption and TestHierarchical: one pod set, two
    ClusterQueues, a fixed setup; the test checks the mode and the flavor of each resource
    (and that no other resource got one)."""
    cases = []
    setup = Evaluator()
    flavors = objects(setup(assignment(source, test, "resourceFlavors")))
    cohorts = []
    if test == "TestHierarchical":
        cohorts = objects(setup(assignment(source, test, "cohorts")))
        defaults = setup(assignment(source, test, "defaultTestClusterQueueFlavors"))
        setup.variables["defaultTestClusterQueueFlavors"] = defaults
    for element in case_table(source, test).elements:
        name, tc, unread = evaluate_case(setup, element)
        assert unread is None, (name, unread)
        per_case = Evaluator({"tc.testClusterQueueFlavors": tc.get("testClusterQueueFlavors")})
        test_cq = per_case(assignment(source, test, "testCq")).copy()
        other_cq = per_case(assignment(source, test, "otherCq"))
        if tc.get("flavorFungibility"):
            test_cq["spec"]["flavorFungibility"] = tc["flavorFungibility"]
        case = {
            "name": name,
            "resourceFlavors": flavors,
            "cohorts": cohorts or cohorts_for([test_cq, other_cq]),
            "clusterQueues": [test_cq, other_cq],
            "usage": {
                "test-clusterqueue": usage_map(tc.get("testClusterQueueUsage")),
                "other-clusterqueue": usage_map(tc.get("otherClusterQueueUsage")),
            },
            "simulation": simulation(tc.get("simulationResult")),
            "workload": {"spec": {"podSets": [tc["workloadRequests"].Obj()]}},
            "want": {"representativeMode": tc["wantMode"], "flavors": dict(tc["wantAssigment"])},
        }
        case["usage"] = {k: v for k, v in case["usage"].items() if v}
        cases.append(_tidy(case))
    return cases


def port_reclaim(source: str) -> dict[str, Any]:
    return {
        "test": "TestReclaimBeforePriorityPreemption",
        "harness": (
            "test-clusterqueue (assigned to) and other-clusterqueue in Cohort `cohort` (no "
            "Cohort object: Kueue's hierarchy makes one without quota). Usage is added to each "
            "snapshot; the oracle answers `simulation`, else Preempt with borrowing 0. The test "
            "checks representativeMode and, for the one pod set, the flavor of each resource "
            "and that no other resource has one."
        ),
        "cases": port_single_flavor_tables(source, "TestReclaimBeforePriorityPreemption"),
    }


def port_hierarchical(source: str) -> dict[str, Any]:
    return {
        "test": "TestHierarchical",
        "harness": (
            "Cohorts one -> two -> three (each with 4 cpu of its own flavor); test-clusterqueue "
            "in Cohort one (assigned to), other-clusterqueue in Cohort two. Checks as in "
            "TestReclaimBeforePriorityPreemption."
        ),
        "cases": port_single_flavor_tables(source, "TestHierarchical"),
    }


def port_deleted(source: str) -> dict[str, Any]:
    evaluate = Evaluator()
    cases = []
    for element in case_table(source, "TestDeletedFlavors").elements:
        name, tc, unread = evaluate_case(evaluate, element)
        assert unread is None, (name, unread)
        queue = tc["clusterQueue"]
        cases.append(
            _tidy(
                {
                    "name": name,
                    "resourceFlavors": [
                        {
                            "apiVersion": "kueue.x-k8s.io/v1beta2",
                            "kind": "ResourceFlavor",
                            "metadata": {"name": "flavor"},
                            "spec": {},
                        }
                    ],
                    "clusterQueues": [queue],
                    "workload": {"spec": {"podSets": tc["wlPods"]}},
                    "want": want_assignment(tc.get("wantRepMode", "NoFit"), tc["wantAssignment"]),
                }
            )
        )
    return {
        "test": "TestDeletedFlavors",
        "harness": (
            "The ClusterQueue's snapshot is taken while ResourceFlavors `flavor` and "
            "`deleted-flavor` both exist; then deleted-flavor is deleted, so the assigner "
            "knows only `flavor` (listed here) while the ClusterQueue still names both. "
            "Compared as TestAssignFlavors compares, attempts included."
        ),
        "cases": cases,
    }


def port_is_preferred(source: str) -> dict[str, Any]:
    evaluate = Evaluator()
    cases = []
    for element in case_table(source, "TestIsPreferred").elements:
        name, tc, unread = evaluate_case(evaluate, element)
        assert unread is None, (name, unread)

        def mode(m: dict[str, Any]) -> dict[str, Any]:
            return {
                "preemptionMode": m.get("preemptionMode", "noFit"),
                "borrowingLevel": m.get("borrowingLevel", 0),
            }

        config = {k: v for k, v in (tc.get("config") or {}).items() if k != "__type__"}
        cases.append(
            {
                "name": name,
                "a": mode(tc["a"]),
                "b": mode(tc["b"]),
                "flavorFungibility": config,
                "want": {"preferred": tc["wantPreferred"]},
            }
        )
    return {
        "test": "TestIsPreferred",
        "harness": (
            "isPreferred(a, b, flavorFungibility): whether granular mode a (a preemption mode "
            "of noFit < noPreemptionCandidates < preempt < reclaim < fit, and a borrowing "
            "level) is preferred to b."
        ),
        "cases": cases,
    }


def port_allowed(source: str) -> dict[str, Any]:
    evaluate = Evaluator()
    flavors = objects(
        evaluate(assignment(source, "TestAssignFlavorsWithAllowedFlavors", "resourceFlavors"))
    )
    queue = evaluate(assignment(source, "TestAssignFlavorsWithAllowedFlavors", "cq"))
    cases = []
    for element in case_table(source, "TestAssignFlavorsWithAllowedFlavors", "tests").elements:
        name, tc, unread = evaluate_case(evaluate, element)
        assert unread is None, (name, unread)
        # the harness's Workload (its Go code, checked to be there)
        assert 'MakePodSet("main", 1).Request(corev1.ResourceCPU, "2")' in source
        wl = Workload("wl", "ns").PodSets(PodSet("main", 1).Request("cpu", "2").Obj())
        if tc.get("allowedFlavors") is not None:
            wl = wl.AllowedFlavors(*tc["allowedFlavors"])
        want: dict[str, Any] = {"representativeMode": tc["wantRepMode"]}
        if tc["wantRepMode"] == "Fit":
            want["flavors"] = {"cpu": tc["wantFlavor"]}
        cases.append(
            {
                "name": name,
                "featureGates": {"ConcurrentAdmission": True},
                "resourceFlavors": flavors,
                "clusterQueues": [queue],
                "workload": wl.Obj(),
                "want": want,
            }
        )
    return {
        "test": "TestAssignFlavorsWithAllowedFlavors",
        "harness": (
            "ConcurrentAdmission on; a Workload `wl` with one pod set main (1 pod, cpu 2) and, "
            "where the case names them, the allowed-flavors annotation. Checks "
            "representativeMode, and the cpu flavor where that is Fit."
        ),
        "cases": cases,
    }


def port_no_fit_reason(source: str) -> dict[str, Any]:
    test = "TestIsNoFitDueToCapacityAndLimits"
    setup = Evaluator()
    for variable in (
        "resourceFlavors",
        "cq",
        "tasCQ",
        "tasFlavors",
        "sharedCQ",
        "siblingCQ",
        "sharedFlavors",
    ):
        setup.variables[variable] = setup(assignment(source, test, variable))
    cases = []
    for element in case_table(source, test, "tests").elements:
        name, tc, unread = evaluate_case(setup, element)
        queue = tc.get("cq") or setup.variables["cq"]
        siblings = list(tc.get("siblingCQs") or [])
        usage = {queue["metadata"]["name"]: usage_map(tc.get("cqUsage"))}
        for sibling, quantities in (tc.get("siblingCQUsage") or {}).items():
            usage[sibling] = usage_map(quantities)
        workload: dict[str, Any] = {"spec": {"podSets": [tc["podSet"]]}}
        if tc.get("allowedFlavors"):
            workload["metadata"] = {
                "annotations": {
                    "kueue.x-k8s.io/workload-allowed-resource-flavors": ",".join(
                        tc["allowedFlavors"]
                    )
                }
            }
        case: dict[str, Any] = {"name": name}
        if unread:
            case["untranscribed"] = unread
            case["replaceWorkloadSlice"] = True
        case.update(
            featureGates=tc.get("featureGates") or {},
            resourceFlavors=objects(
                tc.get("resourceFlavors") or setup.variables["resourceFlavors"]
            ),
            topologies=objects(tc.get("topologies")),
            cohorts=cohorts_for([queue, *siblings]),
            clusterQueues=[queue, *siblings],
            usage={k: v for k, v in usage.items() if v},
            simulation=simulation(tc.get("simulationResult")),
            workload=workload,
            want={
                "noFitReason": tc.get("wantNoFitReason", ""),
                "attemptNoFitReasons": dict(tc.get("wantFlavorAttempts") or {}),
            },
        )
        cases.append(_tidy(case))
    return {
        "test": test,
        "harness": (
            "UnadmittedWorkloadsObservability on. The first ClusterQueue is assigned to, the "
            "others are its siblings; no Cohort object (Kueue's hierarchy makes one without "
            "quota). No nodes: a TAS flavor's topology has no domain. Checks the assignment's "
            "noFitReason and, for each attempt of every pod set whose flavor is listed, its "
            "noFitReason."
        ),
        "cases": cases,
    }


def port_lws_tas(source: str) -> dict[str, Any]:
    test = "TestAssignFlavors_LeaderWorkerSetTASFlavor"
    setup = Evaluator()
    flavors = objects(setup(assignment(source, test, "resourceFlavors")))
    topologies = objects(setup(assignment(source, test, "topologies")))
    nodes = objects(setup(assignment(source, test, "nodes")))
    cases = []
    for element in case_table(source, test).elements:
        name, tc, unread = evaluate_case(setup, element)
        assert unread is None, unread
        errors = {}
        for pod_set, error in (tc.get("wantPodSetErrors") or {}).items():
            if isinstance(error, dict):
                errors[pod_set] = {"MultipleTASFlavorsAssignedError": sorted(error["Flavors"])}
            else:
                errors[pod_set] = error
        cases.append(
            {
                "name": name,
                "featureGates": {"TopologyAwareScheduling": True},
                "resourceFlavors": flavors,
                "topologies": topologies,
                "nodes": nodes,
                "cohorts": cohorts_for([tc["clusterQueue"]]),
                "clusterQueues": [tc["clusterQueue"]],
                "workload": {"spec": {"podSets": tc["wlPods"]}},
                "want": {
                    "podSetErrors": errors,
                    "podSetFlavors": {
                        ps: flavors_of(assigned)
                        for ps, assigned in (tc.get("wantPodSetFlavors") or {}).items()
                    },
                },
            }
        )
    return {
        "test": test,
        "harness": (
            "TopologyAwareScheduling on; nodes tas-node-a and tas-node-b (Ready, pods 32, 4 of "
            "each GPU resource) synced into the TAS cache. Checks each pod set's error (none "
            "where not listed) and its flavors."
        ),
        "cases": cases,
    }


def port_last_tried(source: str) -> dict[str, Any]:
    test = "TestFlavorScanRecordsLastTriedFlavorIdx"
    flavors = objects(Evaluator()(returned(source, "bookmarkTestFlavors")))
    nodes = objects(Evaluator()(returned(source, "bookmarkTestNodes")))
    topologies = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        }
        for name in ("topology-1", "topology-2")
    ]
    cases = []
    setup = Evaluator()
    for element in case_table(source, test).elements:
        name, tc, unread = evaluate_case(setup, element)
        per_case = Evaluator(
            {
                "nominalPerFlavor": tc["nominalPerFlavor"],
                "cohortSpare": tc["cohortSpare"],
                "fungibility": tc["fungibility"],
            }
        )
        queue = per_case(assignment(source, "newBookmarkSnapshot", "clusterQueue"))
        sibling = per_case(assignment(source, "newBookmarkSnapshot", "sibling"))
        queue["spec"]["flavorFungibility"] = {
            k: v for k, v in tc["fungibility"].items() if k != "__type__"
        }
        pod_set = {
            "name": "main",
            "count": 1,
            "topologyRequest": {"required": "kubernetes.io/hostname"},
            "template": {
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": tc["request"]}}}]
                }
            },
        }
        case: dict[str, Any] = {"name": name}
        if unread and not unread.startswith("nodeUsage (call nodeUsageOnFlavorOne)"):
            case["untranscribed"] = unread
        if "nodeUsage" in tc or (unread or "").startswith("nodeUsage"):
            # nodeUsageOnFlavorOne("2"): 2 cpu of node-1 taken on flavor-1, outside quota
            assert 'nodeUsageOnFlavorOne("2")' in source
            case["nodeUsage"] = {"flavor-1": {"node-1": {"cpu": "2"}}}
        case.update(
            featureGates={"TopologyAwareScheduling": True, "FlavorFungibility": True},
            resourceFlavors=flavors,
            topologies=topologies,
            nodes=nodes,
            cohorts=cohorts_for([queue, sibling]),
            clusterQueues=[queue, sibling],
            usage={"cq": usage_map(tc.get("clusterQueueUsage"))},
            simulation=simulation(tc.get("simulationResult")),
            workload={"spec": {"podSets": [pod_set]}},
            want={
                "representativeMode": tc["wantMode"],
                "lastTriedFlavorIdx": {"cpu": tc["wantTriedFlavorIdx"]},
                "topologyAssignment": bool(tc.get("wantPlan")),
            },
        )
        case["usage"] = {k: v for k, v in case["usage"].items() if v}
        cases.append(_tidy(case))
    return {
        "test": test,
        "harness": (
            "TopologyAwareScheduling and FlavorFungibility on; ClusterQueue cq (assigned to) "
            "and sibling in Cohort `cohort`; nodes node-1 (flavor one) and node-2 (flavor two), "
            "4 cpu each. Usage on cq, node usage (cpu taken on a node without quota) where "
            "listed. Checks representativeMode, the LastTriedFlavorIdx recorded for cpu, and "
            "whether the pod set got a TopologyAssignment."
        ),
        "cases": cases,
    }


PORTS = {
    "assign_flavors.yaml": port_assign_flavors,
    "reclaim_before_priority_preemption.yaml": port_reclaim,
    "deleted_flavors.yaml": port_deleted,
    "hierarchical.yaml": port_hierarchical,
    "is_preferred.yaml": port_is_preferred,
    "allowed_flavors.yaml": port_allowed,
    "no_fit_reason.yaml": port_no_fit_reason,
    "lws_tas_flavor.yaml": port_lws_tas,
    "last_tried_flavor_idx.yaml": port_last_tried,
}

if __name__ == "__main__":
    main(sys.argv[1])
