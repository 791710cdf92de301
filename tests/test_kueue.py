"""The Kueue objects: valid against the v0.19.2 CRDs, and by construction against the CEL rules
and webhook checks the output validator does not evaluate (each asserted here, on the output)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.queueing import kueue
from renderer.model.capacity import MIXABLE, WORKLOAD_PURPOSES
from renderer.model.nodes import node_labels, tolerations
from renderer.model.platform import Pool
from renderer.model.quantity import parse
from renderer.model.queue_plans import cluster_queues
from renderer.model.view import ClusterView
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, load_platform, render_platform
from tests.conftest import INPUT_FOLDERS, REPO, SHARED_CRDS, render_clean

MINIMAL = Path(__file__).parent / "cases" / "render" / "minimal"
API = "kueue.x-k8s.io/v1beta2"
QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
INT32 = (-(2**31), 2**31 - 1)


@pytest.fixture(scope="module")
def example() -> Rendered:
    return render_clean(REPO)


@pytest.fixture(scope="module")
def minimal() -> Rendered:
    return render_clean(MINIMAL)


def _variant(
    tmp_path: Path, queue: str, extra_namespace: str = "", warnings: tuple[str, ...] = ()
) -> Rendered:
    """The minimal platform with its queue file replaced (and a namespace added to the team)."""
    root = tmp_path / "repo"
    for folder in INPUT_FOLDERS:
        shutil.copytree(MINIMAL / folder, root / folder)
    (root / "queues" / "main.yaml").write_text(
        "apiVersion: gpuplane.dev/v1alpha1\nkind: Queue\nmetadata:\n  name: main\nspec:\n"
        "  cluster: lab\n  pools: [train, serve]\n"
        "  priorities:\n    - {name: high, value: 1000}\n    - {name: normal, value: 100, default: true}\n"
        + queue
    )
    if extra_namespace:
        team = root / "teams" / "ml.yaml"
        text = team.read_text()
        anchor = "    - {name: ml-serve, cluster: lab, purpose: inference}\n"
        team.write_text(text.replace(anchor, anchor + extra_namespace))
    return render_clean(root, warnings)


def objects(
    rendered: Rendered, kind: str | None = None, suite: bool = False
) -> Iterator[dict[str, Any]]:
    """Every Kueue object of every cluster, as plain data; the acceptance suites' platform
    ClusterQueues (label `gpuplane.dev/suite`) only with `suite` (tests/test_suites.py)."""
    for cluster in sorted(rendered.manifests):
        for manifest in rendered.manifests[cluster]:
            body = dict(manifest.body)
            if not suite and "gpuplane.dev/suite" in body["metadata"].get("labels", {}):
                continue
            if manifest.layer == "queueing" and (kind is None or body["kind"] == kind):
                yield body


def named(rendered: Rendered, kind: str) -> dict[str, dict[str, Any]]:
    return {b["metadata"]["name"]: b for b in objects(rendered, kind)}


def config(rendered: Rendered, cluster: str) -> dict[str, Any]:
    (values,) = [v for v in rendered.values[cluster] if v.chart == "kueue"]
    assert values.path == "values/kueue.yaml"
    text = values.body["managerConfig"]["controllerManagerConfigYaml"]
    assert isinstance(text, str)  # the chart parses it with fromYaml
    parsed: dict[str, Any] = yaml.safe_load(text)
    return parsed


# --- the CEL rules and webhook checks, asserted on the output ---------------------------------


def assert_cluster_queue_rules(cq: dict[str, Any]) -> None:
    spec = cq["spec"]
    name = cq["metadata"]["name"]
    assert_resource_group_rules(spec, name, has_parent=bool(spec.get("cohortName")))
    preemption = spec["preemption"]
    borrow = preemption.get("borrowWithinCohort", {}).get("policy", "Never")
    # CEL: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never
    assert not (preemption.get("reclaimWithinCohort", "Never") == "Never" and borrow != "Never")
    assert preemption["withinClusterQueue"] in (
        "Never",
        "LowerPriority",
        "LowerOrNewerEqualPriority",
    )
    assert spec["queueingStrategy"] in ("StrictFIFO", "BestEffortFIFO")
    assert_fair_sharing_rules(spec)
    assert "flavorFungibility" not in spec  # its CEL rule never applies
    (expression,) = spec["namespaceSelector"]["matchExpressions"]
    assert expression["operator"] == "In" and expression["values"]  # In needs values


def assert_resource_group_rules(spec: dict[str, Any], name: str, has_parent: bool) -> None:
    """The CEL rules and `validateResourceGroups` (pkg/webhooks/clusterqueue_webhook.go) that
    ClusterQueues and Cohorts share."""
    groups = spec.get("resourceGroups", [])
    assert len(groups) <= kueue.MAX_RESOURCE_GROUPS, name
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for group in groups:
        covered = group["coveredResources"]
        assert 1 <= len(covered) <= kueue.MAX_COVERED_RESOURCES, name
        assert 1 <= len(group["flavors"]) <= kueue.MAX_FLAVORS, name
        assert not seen_resources & set(covered) and len(set(covered)) == len(covered), name
        seen_resources |= set(covered)
        for flavor in group["flavors"]:
            assert DNS_SUBDOMAIN.match(flavor["name"]), name
            assert flavor["name"] not in seen_flavors, name
            seen_flavors.add(flavor["name"])
            # CEL: flavors must have the same number of resources as the coveredResources;
            # webhook: and the same names, in the same order
            assert [r["name"] for r in flavor["resources"]] == covered, (name, flavor["name"])
            for quota in flavor["resources"]:
                amounts = {
                    k: parse(str(quota[k]))
                    for k in ("nominalQuota", "borrowingLimit", "lendingLimit")
                    if k in quota
                }
                for key, value in amounts.items():
                    assert QUANTITY.match(str(quota[key])), (name, quota)
                    assert value >= 0, (name, quota)  # webhook: must be non-negative
                if "lendingLimit" in amounts:  # webhook: lendingLimit <= nominalQuota
                    assert amounts["lendingLimit"] <= amounts["nominalQuota"], (name, quota)
                if not has_parent:  # CEL and webhook: limits need a parent
                    assert "borrowingLimit" not in quota and "lendingLimit" not in quota, name
    assert len(seen_flavors) <= 256 and len(seen_resources) <= 256, name


def assert_fair_sharing_rules(spec: dict[str, Any]) -> None:
    if "fairSharing" in spec:  # CEL: "When not 0, Weight must be greater than 10^-9"
        weight = Decimal(str(spec["fairSharing"]["weight"]))
        assert weight == 0 or weight > Decimal("1e-9")


def assert_cohort_rules(cohort: dict[str, Any], cohorts: set[str]) -> None:
    """pkg/webhooks/cohort_webhook.go validateCohort: the fair-sharing weight and the same
    resource-group rules as a ClusterQueue's, limits only with a parent; the parent is a
    Cohort rendered here (else Kueue makes an implicit root with no quota) and not itself."""
    spec = cohort["spec"]
    name = cohort["metadata"]["name"]
    parent = spec.get("parentName")
    assert parent != name, name
    if parent is not None:
        assert parent in cohorts, (name, parent)
    assert_fair_sharing_rules(spec)
    assert_resource_group_rules(spec, name, has_parent=parent is not None)


def assert_resource_flavor_rules(flavor: dict[str, Any], topologies: set[str]) -> None:
    spec = flavor["spec"]
    name = flavor["metadata"]["name"]
    assert 1 <= len(spec["nodeLabels"]) <= kueue.MAX_NODE_LABELS, name  # CEL: >= 1 with topology
    if "topologyName" in spec:
        assert spec["topologyName"] in topologies, name
    items = spec.get("tolerations", [])
    assert len(items) <= kueue.MAX_TOLERATIONS, name
    for item in items:
        assert "key" in item or item["operator"] == "Exists", name
        assert "tolerationSeconds" not in item or item["effect"] == "NoExecute", name
        assert item.get("operator", "Equal") in ("Equal", "Exists"), name
        assert item.get("operator") != "Exists" or "value" not in item, name
        assert item.get("effect", "NoSchedule") in ("NoSchedule", "PreferNoSchedule", "NoExecute")
    assert "nodeTaints" not in spec  # the tolerations already match the taints


def assert_topology_rules(topology: dict[str, Any]) -> None:
    levels = [level["nodeLabel"] for level in topology["spec"]["levels"]]
    name = topology["metadata"]["name"]
    assert 1 <= len(levels) <= kueue.MAX_TOPOLOGY_LEVELS, name
    assert len(set(levels)) == len(levels), name  # CEL: must be unique
    assert all(LABEL_KEY.match(level) and len(level) <= 316 for level in levels), name
    if kueue.HOSTNAME_LABEL in levels:  # CEL: the hostname label only at the lowest level
        assert levels[-1] == kueue.HOSTNAME_LABEL, name
    assert DNS_SUBDOMAIN.match(name) and len(name) <= 253, name


def assert_all_rules(rendered: Rendered) -> None:
    topologies = named(rendered, "Topology")
    for topology in topologies.values():
        assert_topology_rules(topology)
    for flavor in objects(rendered, "ResourceFlavor"):
        assert_resource_flavor_rules(flavor, set(topologies))
    for cq in objects(rendered, "ClusterQueue", suite=True):
        assert_cluster_queue_rules(cq)
    cohorts = named(rendered, "Cohort")
    for cohort in cohorts.values():
        assert_cohort_rules(cohort, set(cohorts))
    for cq in objects(rendered, "ClusterQueue", suite=True):  # each in a Cohort rendered here
        if cq["metadata"]["name"].startswith("gpuplane-window-"):
            # the acceptance window's queue holds a whole pool, lends and borrows nothing
            assert "cohortName" not in cq["spec"]
            continue
        assert cq["spec"]["cohortName"] in cohorts
    for wpc in objects(rendered, "WorkloadPriorityClass"):
        assert INT32[0] <= wpc["value"] <= INT32[1] and len(wpc["description"]) <= 2048


# --- the example platform ---------------------------------------------------------------------


def test_example_platform_renders_every_kueue_kind_valid_against_the_crds(
    example: Rendered,
) -> None:
    kinds = Counter(b["kind"] for b in objects(example))
    assert set(kinds) == {
        "Topology",
        "ResourceFlavor",
        "Cohort",
        "WorkloadPriorityClass",
        "ClusterQueue",
        "LocalQueue",
    }
    assert all(b["apiVersion"] == API for b in objects(example))  # never the deprecated v1beta1
    assert kinds["ResourceFlavor"] == len(example.platform.pools)
    teams = {
        team.name
        for team in example.platform.teams.values()
        if example.platform.queues[team.queue].cluster in example.platform.clusters
    }
    assert kinds["Cohort"] == len(example.platform.queues) + len(teams)  # a Queue's, each team's


def test_example_platform_honours_the_cel_rules(example: Rendered) -> None:
    assert_all_rules(example)


def test_minimal_platform_honours_the_cel_rules(minimal: Rendered) -> None:
    assert_all_rules(minimal)


def test_flavors_carry_the_pool_labels_tolerations_and_topology(example: Rendered) -> None:
    flavors = named(example, "ResourceFlavor")
    topologies = named(example, "Topology")
    for pool in example.platform.pools.values():
        spec = flavors[pool.name]["spec"]
        assert spec["nodeLabels"] == node_labels(pool)
        assert spec.get("tolerations", []) == tolerations(pool)
        if "topologyName" not in spec:  # tests/test_tas_flavors.py: which pools are aware
            continue
        levels = topologies[spec["topologyName"]]["spec"]["levels"]
        assert [level["nodeLabel"] for level in levels] == list(pool.topology_levels)
    assert flavors["h100-train"]["spec"]["topologyName"] == "block-rack-hostname"


def test_cluster_queue_amounts_are_the_admission_plan(example: Rendered) -> None:
    """Every number in every ClusterQueue reads back as the plan's amount, in its order."""
    cqs = named(example, "ClusterQueue")
    for cluster in example.platform.clusters.values():
        for plan in cluster_queues(ClusterView.of(example.platform, cluster)):
            spec = cqs[plan.name]["spec"]
            if not plan.flavors:
                assert "resourceGroups" not in spec
                continue
            (group,) = spec["resourceGroups"]
            flavors = kueue.ordered_flavors(plan)
            assert [f["name"] for f in group["flavors"]] == [f.pool.name for f in flavors]
            assert [f.borrow_only for f in flavors] == sorted(f.borrow_only for f in flavors)
            for flavor, rendered in zip(flavors, group["flavors"], strict=True):
                for quota in rendered["resources"]:
                    amount = flavor.resources.get(quota["name"])
                    if amount is None:  # not offered, or no quota there: none, and no borrowing
                        assert parse(str(quota["nominalQuota"])) == 0
                        assert parse(str(quota["borrowingLimit"])) == 0
                        assert "lendingLimit" not in quota
                        continue
                    assert parse(str(quota["nominalQuota"])) == amount.nominal
                    for key, value in (
                        ("borrowingLimit", amount.borrowing_limit),
                        ("lendingLimit", amount.lending_limit),
                    ):
                        assert (parse(str(quota[key])) if key in quota else None) == value


def test_every_namespace_gets_a_default_local_queue_of_its_own_cluster_queue(
    example: Rendered,
) -> None:
    cqs = named(example, "ClusterQueue")
    local = {b["metadata"]["namespace"]: b for b in objects(example, "LocalQueue")}
    assert all(b["metadata"]["name"] == kueue.DEFAULT_LOCAL_QUEUE for b in local.values())
    team_namespaces = {
        ns.name: (team, ns)
        for team in example.platform.teams.values()
        for ns in team.namespaces
        if example.platform.clusters[ns.cluster].scheduler == "kueue"
    }
    assert set(local) == set(team_namespaces)
    selected: dict[str, str] = {}
    for name, cq in cqs.items():
        (expression,) = cq["spec"]["namespaceSelector"]["matchExpressions"]
        assert expression["key"] == "kubernetes.io/metadata.name"
        assert expression["values"] == sorted(expression["values"])
        for namespace in expression["values"]:
            assert namespace not in selected, f"{namespace} is selected by {name} and more"
            selected[namespace] = name
    for namespace, lq in local.items():
        team, ns = team_namespaces[namespace]
        target = lq["spec"]["clusterQueue"]
        assert target == f"{team.name}-{ns.purpose}" and target in cqs
        assert selected[namespace] == target  # selected by its queue, and by no other
        assert cqs[target]["metadata"]["labels"]["gpuplane.dev/team"] == team.name


def test_inference_and_training_queues_never_share_a_pool(example: Rendered) -> None:
    """The guide's separation, enforced by Kueue: a ClusterQueue lists only pools that serve
    its purpose (unless its queue explicitly allows mixing)."""
    pools = example.platform.pools
    training = {"distributed-training", "fine-tuning"}
    inference = {"online-inference", "batch-inference"}
    seen: Counter[str] = Counter()
    for cq in objects(example, "ClusterQueue"):
        purpose = cq["metadata"]["labels"]["gpuplane.dev/purpose"]
        queue = example.platform.queues[cq["metadata"]["labels"]["gpuplane.dev/queue"]]
        mixing = queue.mixing_priority is not None and purpose in MIXABLE
        for group in cq["spec"].get("resourceGroups", []):
            for flavor in group["flavors"]:
                workload = pools[flavor["name"]].workload
                where = (cq["metadata"]["name"], flavor["name"])
                assert purpose in WORKLOAD_PURPOSES[workload] or mixing, where
                if not mixing:
                    assert not (purpose == "inference" and workload in training), where
                    assert not (purpose == "training" and workload in inference), where
                seen[purpose] += 1
    assert seen["inference"] >= 4 and seen["training"] >= 4


def test_workload_priority_classes_share_the_priority_class_names(example: Rendered) -> None:
    """`gpuplane fit` and the workload templates name a priority once, for both objects."""
    wpcs = named(example, "WorkloadPriorityClass")
    priority_classes = {
        m.name: m.body
        for manifests in example.manifests.values()
        for m in manifests
        if m.kind == "PriorityClass"
    }
    assert set(wpcs) == set(priority_classes)
    for name, wpc in wpcs.items():
        assert wpc["value"] == priority_classes[name]["value"]
        assert wpc["description"] == priority_classes[name]["description"]


def test_kueue_configuration_follows_the_queue_policy(example: Rendered) -> None:
    east, west = config(example, "prod-east"), config(example, "staging-west")
    assert east["apiVersion"] == west["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert east["kind"] == "Configuration"
    # gang timeouts of queues/prod.yaml (10m) and queues/staging.yaml (15m)
    assert east["waitForPodsReady"] == {"timeout": "10m", "blockAdmission": False}
    assert west["waitForPodsReady"]["timeout"] == "15m"
    # both queues share idle quota fairly; v1beta2 has no `enable`, the block itself enables
    assert east["fairSharing"] == {"preemptionStrategies": list(kueue.FAIR_SHARING_STRATEGIES)}
    frameworks = east["integrations"]["frameworks"]
    assert len(set(frameworks)) == len(frameworks)
    for needs_pods in ("deployment", "statefulset"):
        assert needs_pods not in frameworks or "pod" in frameworks
    # LocalQueueDefaulting is GA and locked since v0.17: setting its gate would be refused
    assert "featureGates" not in east


def _pool_files() -> dict[str, dict[str, Any]]:
    """Every example pool file's spec, read with PyYAML rather than the engine."""
    return {
        path.stem: yaml.safe_load(path.read_text())["spec"]
        for path in sorted((REPO / "pools").glob("*.yaml"))
    }


def test_kueue_leaves_every_rdma_resource_of_the_clusters_pools_out_of_quota(
    example: Rendered,
) -> None:
    """Each cluster's Configuration excludes exactly the RDMA resources its pool files declare
    (besides ephemeral-storage), sorted, once each; the ClusterQueues cover none of them."""
    declared: dict[str, set[str]] = {}
    for spec in _pool_files().values():
        rdma = spec.get("fabric", {}).get("rdma")
        if rdma is not None:
            declared.setdefault(spec["cluster"], set()).add(rdma["resource"])
    assert declared == {
        "prod-east": {"rdma/rdma_shared_device_a"},  # h100-train and a100-mig share it
        "staging-west": {"vpc.amazonaws.com/efa"},
    }
    for cluster in sorted(example.manifests):
        excluded = config(example, cluster)["resources"]["excludeResourcePrefixes"]
        assert excluded == sorted({"ephemeral-storage", *declared.get(cluster, set())})
        queues = [m.body for m in example.manifests[cluster] if m.kind == "ClusterQueue"]
        assert queues
        for cq in queues:
            for group in cq["spec"].get("resourceGroups", []):
                assert not set(group["coveredResources"]) & declared.get(cluster, set())


def test_a_cluster_without_rdma_pools_excludes_only_scratch_disk() -> None:
    east = load_platform(REPO).platform
    pools = tuple(p for p in east.pools.values() if p.cluster == "prod-east")
    assert kueue.excluded_resource_prefixes(pools) == (
        "ephemeral-storage",
        "rdma/rdma_shared_device_a",
    )
    bare = tuple(dataclasses.replace(p, rdma=None) for p in pools)
    assert kueue.excluded_resource_prefixes(bare) == kueue.EXCLUDED_RESOURCE_PREFIXES
    resources = kueue.manager_config((), bare)["resources"]
    assert resources["excludeResourcePrefixes"] == ["ephemeral-storage"]


def test_kueue_manages_exactly_the_team_namespaces_and_the_suite_jobs(example: Rendered) -> None:
    """Kueue v0.19's job reconciler skips a Job in a namespace its managedJobsNamespaceSelector
    does not select, queue-name label or not ("Namespace not opted in for Kueue management",
    pkg/controller/jobframework/reconciler.go), while its webhook still suspends the Job: the
    selector must select the suites' Jobs namespace as well as every team namespace, and not the
    namespace where Argo's pods run."""
    (expression,) = config(example, "prod-east")["managedJobsNamespaceSelector"]["matchExpressions"]
    assert expression == {"key": "gpuplane.dev/cost-center", "operator": "Exists"}
    namespaces = {
        m.name: m.body["metadata"]["labels"]
        for m in example.manifests["prod-east"]
        if m.kind == "Namespace"
    }
    teams = {n for n, labels in namespaces.items() if kueue.TEAM_LABEL in labels}
    assert teams and all(expression["key"] in namespaces[n] for n in teams)
    assert expression["key"] in namespaces["gpuplane-acceptance-jobs"]
    assert kueue.TEAM_LABEL not in namespaces["gpuplane-acceptance-jobs"]
    # the Workflows' namespace is neither: Kueue leaves Argo's pods alone
    assert expression["key"] not in namespaces["gpuplane-acceptance"]


def test_the_suites_platform_queue_only_borrows_and_only_for_the_suite(
    example: Rendered,
) -> None:
    """Per cohort, `<queue>-acceptance`: in the cohort, nominal 0 on every resource of every
    flavor (it holds nothing a team is promised), never preempting, weight 0 under fair sharing
    (the CRD: a zero weight is always at a disadvantage), selecting only the suites' Jobs
    namespace; and no team ClusterQueue selects that namespace."""
    seen = 0
    for cluster in sorted(example.manifests):
        queues = {m.name: m.body for m in example.manifests[cluster] if m.kind == "ClusterQueue"}
        suite = {n: q for n, q in queues.items() if n.endswith("-acceptance")}
        assert suite, cluster
        for name, cq in suite.items():
            spec = cq["spec"]
            assert name == f"{spec['cohortName']}-acceptance"
            assert spec["namespaceSelector"] == {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": ["gpuplane-acceptance-jobs"],
                    }
                ]
            }
            assert spec["preemption"] == {
                "withinClusterQueue": "Never",
                "reclaimWithinCohort": "Never",
            }
            for group in spec["resourceGroups"]:
                for flavor in group["flavors"]:
                    for quota in flavor["resources"]:
                        assert str(quota["nominalQuota"]) == "0", (name, flavor["name"])
                        assert "lendingLimit" not in quota
            queue = example.platform.queues[spec["cohortName"]]
            assert ("fairSharing" in spec) is queue.fair_sharing
            if queue.fair_sharing:
                assert spec["fairSharing"] == {"weight": 0}
            seen += 1
        for name, cq in queues.items():
            if name in suite or name.startswith("gpuplane-window-"):  # tests/test_suite_window.py
                continue
            (expression,) = cq["spec"]["namespaceSelector"]["matchExpressions"]
            assert "gpuplane-acceptance-jobs" not in expression["values"], name
    assert seen == 2


def test_borrow_within_cohort_is_left_out_under_fair_sharing(example: Rendered) -> None:
    """queues/prod.yaml asks for both; Kueue ignores borrowWithinCohort with fair sharing."""
    for cq in objects(example, "ClusterQueue"):
        assert "borrowWithinCohort" not in cq["spec"]["preemption"]
        assert cq["spec"]["preemption"]["reclaimWithinCohort"] == "Any"
        assert cq["spec"]["fairSharing"] == {"weight": kueue.FAIR_SHARING_WEIGHT}


# --- the minimal platform: the reviewed numbers, derived from the inputs ----------------------


def _pool_input(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((MINIMAL / "pools" / f"{name}.yaml").read_text())["spec"]
    return spec


def _flavor_quotas(spec: dict[str, Any], flavor: str) -> dict[str, dict[str, Any]]:
    (group,) = spec["resourceGroups"]
    (found,) = (f for f in group["flavors"] if f["name"] == flavor)
    return {r["name"]: r for r in found["resources"]}


def test_minimal_cluster_queue_arithmetic(minimal: Rendered) -> None:
    """Each number of the golden team Cohort and ClusterQueues, from the pool and team files."""
    cqs = named(minimal, "ClusterQueue")
    team = named(minimal, "Cohort")["ml"]["spec"]
    assert team["parentName"] == "main"  # the team's Cohort, under its Queue's
    gib = Decimal(2**30)

    train = _pool_input("train")  # 2 nodes x 8 H100; the team: nominal 12, borrow 4, lend 4
    per_node = Decimal(train["gpusPerNode"])
    cpus, memory = Decimal(train["host"]["cpus"]), parse(train["host"]["memory"])
    quotas = _flavor_quotas(team, "train")
    cpu, mem, gpu = quotas["cpu"], quotas["memory"], quotas["nvidia.com/gpu"]
    assert (gpu["nominalQuota"], gpu["borrowingLimit"], gpu["lendingLimit"]) == (12, 4, 4)
    # 12 GPUs are 1.5 nodes: 1.5 x 223 cores = 334.5, rounded down; 1.5 x 1951Gi = 2926.5Gi
    assert cpu["nominalQuota"] == str(int(cpus * 12 / per_node)) == "334"
    assert parse(mem["nominalQuota"]) == (memory * 12 / per_node // gib) * gib
    assert mem["nominalQuota"] == "2926Gi"
    # borrowing and lending 4 GPUs are half a node each: 111.5 cores and 975.5Gi, rounded down
    for key in ("borrowingLimit", "lendingLimit"):
        assert cpu[key] == str(int(cpus * 4 / per_node)) == "111"
        assert mem[key] == f"{int(memory * 4 / per_node / gib)}Gi" == "975Gi"

    serve = _pool_input("serve")  # 1 node x 4 L40S x 2 replicas, renamed; the team: nominal 8
    per_node = Decimal(serve["gpusPerNode"] * serve["timeSlicing"]["replicas"])
    quotas = _flavor_quotas(team, "serve")
    cpu, mem, gpu = quotas["cpu"], quotas["memory"], quotas["nvidia.com/gpu.shared"]
    assert gpu == {"name": "nvidia.com/gpu.shared", "nominalQuota": 8}  # no limits: unlimited
    assert 8 / per_node == 1  # the whole node
    assert cpu == {"name": "cpu", "nominalQuota": str(serve["host"]["cpus"])}
    assert mem == {"name": "memory", "nominalQuota": serve["host"]["memory"]}

    # the ClusterQueues hold nothing of their own and set no limit: all they use is the team's
    for name, pool, covered in (
        ("ml-training", "train", ["cpu", "memory", "nvidia.com/gpu"]),
        ("ml-inference", "serve", ["cpu", "memory", "nvidia.com/gpu.shared"]),
    ):
        spec = cqs[name]["spec"]
        assert spec["cohortName"] == "ml"
        (group,) = spec["resourceGroups"]
        assert group["coveredResources"] == covered
        (flavor,) = group["flavors"]
        assert flavor["name"] == pool
        for quota in flavor["resources"]:
            assert set(quota) == {"name", "nominalQuota"} and parse(str(quota["nominalQuota"])) == 0


def test_minimal_queue_without_policy_uses_kueue_defaults(minimal: Rendered) -> None:
    for cq in objects(minimal, "ClusterQueue"):
        assert cq["spec"]["preemption"] == {
            "withinClusterQueue": "Never",
            "reclaimWithinCohort": "Never",
        }
        assert "fairSharing" not in cq["spec"]
    lab = config(minimal, "lab")
    assert "waitForPodsReady" not in lab and "fairSharing" not in lab  # Kueue's own defaults


# --- variants of the minimal platform ---------------------------------------------------------


def test_classical_preemption_keeps_borrow_within_cohort(tmp_path: Path) -> None:
    rendered = _variant(
        tmp_path,
        "  strategy: StrictFIFO\n"
        "  preemption: {withinTeam: LowerOrNewerEqualPriority, reclaimWithinCohort: LowerPriority,"
        " borrowWithinCohort: LowerPriority}\n"
        "  gang: {waitForPodsReady: true, timeout: 1d}\n",
    )
    assert_all_rules(rendered)
    for cq in objects(rendered, "ClusterQueue"):
        assert cq["spec"]["queueingStrategy"] == "StrictFIFO"
        assert cq["spec"]["preemption"] == {
            "withinClusterQueue": "LowerOrNewerEqualPriority",
            "reclaimWithinCohort": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority"},
        }
    # Go durations have no days
    assert config(rendered, "lab")["waitForPodsReady"]["timeout"] == "24h"


def test_borrowing_preemption_without_reclaim_is_never_rendered() -> None:
    """Kueue's CEL rule refuses borrowWithinCohort without reclaimWithinCohort; the policy rule
    `queue-preemption` refuses such a queue, and the layer would leave the field out anyway."""
    queue = load_platform(MINIMAL).platform.queues["main"]
    invalid = dataclasses.replace(queue, preemption={"borrowWithinCohort": "LowerPriority"})
    assert kueue.preemption(invalid, fair_sharing=False) == {
        "withinClusterQueue": "Never",
        "reclaimWithinCohort": "Never",
    }
    explicit = dataclasses.replace(queue, preemption={"borrowWithinCohort": "Never"})
    assert kueue.preemption(explicit, fair_sharing=False)["borrowWithinCohort"] == {
        "policy": "Never"
    }


def test_fair_sharing_sets_weights_and_the_controller(tmp_path: Path) -> None:
    rendered = _variant(
        tmp_path,
        "  fairSharing: true\n"
        "  preemption: {reclaimWithinCohort: Any, borrowWithinCohort: LowerPriority}\n"
        "  gang: {waitForPodsReady: true}\n",
        warnings=("queue-settings-differ",),  # borrowWithinCohort is ignored under fair sharing
    )
    assert_all_rules(rendered)
    for cq in objects(rendered, "ClusterQueue"):
        assert cq["spec"]["fairSharing"] == {"weight": 1}
        assert "borrowWithinCohort" not in cq["spec"]["preemption"]
    lab = config(rendered, "lab")
    assert lab["fairSharing"]["preemptionStrategies"] == list(kueue.FAIR_SHARING_STRATEGIES)
    assert lab["waitForPodsReady"]["timeout"] == "30m"  # no timeout asked: Kueue's default


def test_a_purpose_no_pool_serves_still_gets_its_queues(tmp_path: Path) -> None:
    """Notebooks have no pool here: the ClusterQueue exists with no quota (Kueue reports its
    workloads' resources as unavailable), and the namespace's default LocalQueue is valid."""
    rendered = _variant(
        tmp_path,
        "",
        extra_namespace="    - {name: ml-notebooks, cluster: lab, purpose: notebooks}\n",
    )
    assert_all_rules(rendered)
    cq = named(rendered, "ClusterQueue")["ml-notebooks"]
    assert "resourceGroups" not in cq["spec"]
    assert cq["spec"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml-notebooks"]
    local = [
        b for b in objects(rendered, "LocalQueue") if b["metadata"]["namespace"] == "ml-notebooks"
    ]
    assert [b["spec"]["clusterQueue"] for b in local] == ["ml-notebooks"]


# --- names and durations ----------------------------------------------------------------------


def _pool(**changes: Any) -> Pool:
    pool = load_platform(MINIMAL).platform.pools["train"]
    return dataclasses.replace(pool, **changes)


def test_topology_names_are_readable_and_never_collide() -> None:
    a = ("topology.gpuplane.dev/rack", "kubernetes.io/hostname")
    b = ("topology.k8s.aws/rack", "kubernetes.io/hostname")
    c = ("example.com/Block_A", "kubernetes.io/hostname")
    names = kueue.topology_names(
        [
            _pool(name="x", topology_levels=a),
            _pool(name="y", topology_levels=b),
            _pool(name="z", topology_levels=c),
            _pool(name="w", topology_levels=a),
        ]
    )
    assert set(names) == {a, b, c}
    assert names[c] == "block-a-hostname"
    assert names[a] != names[b]
    assert names[a].startswith("rack-hostname-") and names[b].startswith("rack-hostname-")
    assert all(DNS_SUBDOMAIN.match(n) for n in names.values())
    # alone on a cluster, a list keeps its readable name
    assert kueue.topology_names([_pool(topology_levels=a)]) == {a: "rack-hostname"}
    long = tuple(f"example.com/level-{i:02d}-{'x' * 40}" for i in range(16))
    (name,) = kueue.topology_names([_pool(topology_levels=long)]).values()
    assert len(name) <= 253 and DNS_SUBDOMAIN.match(name)


def test_gang_timeout_is_the_strictest_of_the_queues() -> None:
    queue = load_platform(MINIMAL).platform.queues["main"]
    ten = dataclasses.replace(queue, wait_for_pods_ready=True, gang_timeout="10m")
    day = dataclasses.replace(queue, wait_for_pods_ready=True, gang_timeout="1d")
    unset = dataclasses.replace(queue, wait_for_pods_ready=True, gang_timeout=None)
    off = dataclasses.replace(queue, wait_for_pods_ready=False, gang_timeout="1m")
    assert kueue.gang_timeout([day, ten, off]) == 600
    assert kueue.gang_timeout([day, unset]) == 1800
    assert kueue.gang_timeout([off]) is None
    assert [kueue.go_duration(s) for s in (600, 86400, 90, 5400)] == ["10m", "24h", "90s", "90m"]


def test_too_many_node_labels_for_a_flavor_is_reported_not_truncated(tmp_path: Path) -> None:
    """A ResourceFlavor takes at most 8 node labels; gpuplane derives 5 or 6 per pool (6 with a
    topology form or interconnect), so a few labels of the pool's own break the limit. The policy
    reports it at the pool file, and the output check would too; nothing is dropped."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    root = tmp_path / "repo"
    for folder in INPUT_FOLDERS:
        shutil.copytree(MINIMAL / folder, root / folder)
    pool = root / "pools" / "train.yaml"
    pool.write_text(
        pool.read_text()
        + "  labels: {example.com/a: w, example.com/b: x, example.com/c: y, example.com/d: z}\n"
    )
    rendered = render_platform(root, OutputValidator([SHARED_CRDS]))
    (problem,) = rendered.diagnostics
    assert problem.rule == "pool-labels-limit"
    assert (
        problem.message == "pool 'train' has 9 node labels; a Kueue ResourceFlavor takes at most 8"
    )
    assert problem.at.file == "pools/train.yaml"
    # without the policy, the output validator catches it on the ResourceFlavor itself
    from renderer.policy import rule as policy

    rule = next(r for r in policy.POLICY if r.id == "pool-labels-limit")
    policy.POLICY.remove(rule)
    try:
        rendered = render_platform(root, OutputValidator([SHARED_CRDS]))
    finally:
        policy.POLICY.append(rule)
    (problem,) = rendered.diagnostics
    assert problem.rule == "output-schema" and "spec.nodeLabels" in problem.message
