"""Team workload templates: every one validates, `gpuplane fit` admits every one, and each
carries the namespace's queue, priority, pool resource, storage and log-export contract.

Expected values are derived from the platforms' own inputs (teams, pools, queues), never copied
from the renderer's output.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.answer.text import fit_text
from renderer.admission.workloads.readers import PRIORITY_LABEL, QUEUE_LABEL
from renderer.commands.fit import check_fit
from renderer.layers.gpu import dra
from renderer.layers.queueing import kueue
from renderer.layers.tenancy import DEFAULT_CONTAINER
from renderer.layers.workload_templates import pieces as wt
from renderer.layers.workload_templates import runtimes, workloads
from renderer.model import nodes, quantity
from renderer.model.capacity import pool_offers, usable_quotas
from renderer.model.names import DEFAULT_FINISHED_JOBS, DEFAULT_POD_SECURITY
from renderer.model.platform import Namespace, Platform, Team
from renderer.model.queue_plans import cluster_queues, cohort_of, potential_available
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import MANAGED_BY, Values
from renderer.output.validation import OutputValidator
from renderer.pipeline import LAYERS, load_platform
from tests import trainer_build
from tests.conftest import REPO, copy_inputs, tree

CASES = Path(__file__).parent / "cases" / "render"
PLATFORMS = {
    "example": REPO,
    "dra": CASES / "dra",
    "minimal": CASES / "minimal",
    "gitops": CASES / "gitops",
    "volcano": CASES / "volcano",
}
KUEUE_PLATFORMS = ("example", "dra", "minimal", "gitops")
GPU_KINDS = ("Job", "JobSet", "TrainJob", "RayJob", "Deployment")
DISTRIBUTED = ("JobSet", "TrainJob", "RayJob")
RUNTIME = runtimes.torch_distributed(0)
"""The platform's ClusterTrainingRuntime (its TTL aside, the same on every cluster): a TrainJob
template's pods are the runtime's pod template with the TrainJob's parts, as Trainer builds
them (tests/trainer_build.py)."""


# --- helpers -------------------------------------------------------------------------------------


def _platform(root: Path) -> Platform:
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"]
    return loaded.platform


def _rendered(root: Path) -> list[tuple[ClusterView, Values]]:
    platform = _platform(root)
    out = []
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        out.extend((view, item) for item in workloads.render(view))
    return out


@pytest.fixture(scope="module", params=sorted(PLATFORMS))
def case(request: pytest.FixtureRequest) -> tuple[str, list[tuple[ClusterView, Values]]]:
    return request.param, _rendered(PLATFORMS[request.param])


@pytest.fixture(scope="module")
def example() -> list[tuple[ClusterView, Values]]:
    return _rendered(REPO)


def _namespace(view: ClusterView, name: str) -> tuple[Team, Namespace]:
    return next((t.team, ns) for t in view.tenants for ns in t.namespaces if ns.name == name)


def _pod_templates(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(role, PodTemplateSpec) of every pod a template creates."""
    kind, spec = body["kind"], body["spec"]
    if kind in ("Job", "Deployment"):
        yield "main", spec["template"]
    elif kind == "JobSet":
        for job in spec["replicatedJobs"]:
            yield job["name"], job["template"]["spec"]["template"]
    elif kind == "RayJob":
        cluster = spec["rayClusterSpec"]
        yield "head", cluster["headGroupSpec"]["template"]
        for group in cluster["workerGroupSpecs"]:
            yield group["groupName"], group["template"]
        yield "submitter", spec["submitterPodTemplate"]
    elif kind == "TrainJob":
        assert spec["runtimeRef"]["name"] == RUNTIME["metadata"]["name"]
        for job, _, template in _trainjob_pods(body):
            yield job, template


_BUILT: dict[int, tuple[dict[str, Any], list[tuple[str, int, Any]]]] = {}


def _trainjob_pods(body: dict[str, Any]) -> list[tuple[str, int, Any]]:
    """The TrainJob's pods as Trainer builds them, once per body (tests match pods by id)."""
    kept = _BUILT.get(id(body))
    if kept is None or kept[0] is not body:
        kept = _BUILT[id(body)] = (body, trainer_build.pods(RUNTIME, body))
    return kept[1]


def _pool_of(item: Values) -> str:
    return str(item.body["metadata"]["labels"][f"{nodes.PREFIX}pool"])


def _gpu_containers(body: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod spec, container) of the containers that get GPUs."""
    for _, template in _pod_templates(body):
        for container in template["spec"]["containers"]:
            resources = container["resources"]
            if resources.get("claims") or set(resources["requests"]) - {"cpu", "memory"}:
                yield template["spec"], container


def _rdma(view: ClusterView) -> set[str]:
    """The RDMA resources the platform's pools declare: not GPU units."""
    return {p.rdma.resource for p in view.platform.pools.values() if p.rdma is not None}


def _templates(
    case: tuple[str, list[tuple[ClusterView, Values]]],
) -> list[tuple[ClusterView, Values]]:
    return [(v, i) for v, i in case[1] if i.body["kind"] in GPU_KINDS]


# --- where they go -------------------------------------------------------------------------------


def test_templates_are_values_in_the_namespace_folder(case: Any) -> None:
    assert case[1], "every case platform has at least one template"
    for view, item in case[1]:
        namespace = item.body["metadata"]["namespace"]
        assert isinstance(item, Values)
        assert (item.layer, item.folder) == ("templates", f"templates/{namespace}")
        _, ns = _namespace(view, namespace)
        assert item.source == ns.origin.location
        if item.body["kind"] == "PersistentVolumeClaim":
            assert item.chart == "persistentvolumeclaim-shared-data"
        elif ns.endpoints:  # a template per endpoint, named after it (test_serving_templates)
            assert item.chart == f"deployment-{item.body['metadata']['name']}"
            assert item.body["metadata"]["name"] in {e.name for e in ns.endpoints}
        else:
            assert item.chart == f"{item.body['kind'].lower()}-{_pool_of(item)}"
        assert item.path == f"templates/{namespace}/{item.chart}.yaml"
        assert not set(MANAGED_BY) & set(item.body["metadata"]["labels"])  # the team's copy
    paths = [(view.cluster.name, item.path) for view, item in case[1]]
    assert len(paths) == len(set(paths))


def test_the_layer_is_registered_and_yields_values_only(case: Any) -> None:
    registered = dict(LAYERS)
    assert "templates" in registered
    for view in {id(v): v for v, _ in case[1]}.values():
        outputs = list(registered["templates"](view))
        assert outputs and all(isinstance(o, Values) for o in outputs)


def test_rendered_tree_lists_templates_nowhere(platform: Path, gpuplane: Any, crds: Path) -> None:
    """Applying a template would start work: no kustomization lists the folder and no Argo CD
    Application reads it."""
    result = gpuplane("-C", str(platform), "render", "--crds", str(crds))
    assert result.exit_code == 0, result.output
    files = tree(platform / "rendered")
    for cluster in ("prod-east", "staging-west"):
        found = [p for p in files if p.startswith(f"{cluster}/templates/")]
        assert found and all(not p.endswith("kustomization.yaml") for p in found)
    for path, content in files.items():
        if path.endswith("kustomization.yaml"):
            resources = yaml.safe_load(content)["resources"]
            assert not any(r == "templates" or r.startswith("templates/") for r in resources)
        if path.endswith(".yaml") and "/gitops/" in path:
            assert "/templates" not in content.decode()
        if "/templates/" in path:
            assert content.decode().startswith("# Rendered by gpuplane from teams/")


def test_kinds_follow_the_namespace_purpose(example: Any) -> None:
    """inference: a Deployment; training and batch: a Job, a RayJob and (whole GPUs) a JobSet,
    training also a TrainJob where the cluster runs Kubeflow Trainer; notebooks: a Job; on every
    pool the namespace may use."""
    made: dict[tuple[str, str], set[str]] = {}
    for _, item in example:
        if item.body["kind"] in GPU_KINDS:
            key = (item.body["metadata"]["namespace"], _pool_of(item))
            made.setdefault(key, set()).add(item.body["kind"])
    platform = _platform(REPO)
    expected: dict[tuple[str, str], set[str]] = {}
    for team in platform.teams.values():
        for ns in team.namespaces:
            for pool, _, _ in usable_quotas(platform, team, ns):
                if ns.purpose == "inference":
                    kinds = {"Deployment"}
                elif ns.purpose == "notebooks":
                    kinds = {"Job"}
                else:
                    kinds = {"Job", "RayJob"} | (
                        {"JobSet"} if pool.sharing == "full-gpu" else set()
                    )
                    trainer = "trainer" in platform.clusters[ns.cluster].addons
                    if kinds >= {"JobSet"} and ns.purpose == "training" and trainer:
                        kinds.add("TrainJob")  # on the Trainer runtime, where Trainer runs
                expected[(ns.name, pool.name)] = kinds
    assert made == expected


# --- the two checks the issue asks for ------------------------------------------------------------


def test_every_template_validates_against_its_schema(case: Any, validator: OutputValidator) -> None:
    checked = 0
    for view, item in case[1]:
        problems = validator.validate(item.body, view.cluster.kubernetes_version)
        assert not problems, (item.path, problems)
        checked += 1
    assert checked


@pytest.mark.slow
@pytest.mark.parametrize("name", KUEUE_PLATFORMS)
def test_gpuplane_fit_admits_every_template(name: str, tmp_path: Path) -> None:
    platform = _platform(PLATFORMS[name])
    rendered = _rendered(PLATFORMS[name])
    plans = {
        ns.name: plan
        for view in {v.cluster.name: v for v, _ in rendered}.values()
        for plan in cluster_queues(view)
        for ns in plan.namespaces
    }
    checked = 0
    for view, item in rendered:
        if item.body["kind"] not in GPU_KINDS:
            continue
        path = tmp_path / view.cluster.name / item.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(item.body))
        result = check_fit(platform, path)
        namespace = item.body["metadata"]["namespace"]
        team = next(
            t for t in platform.teams.values() if any(n.name == namespace for n in t.namespaces)
        )
        refused = [r.source for _, r in result.refusals]
        if team.images:
            assert result.admissible and not refused, fit_text(result)
        else:
            # a team that lists no registries may run no image: the platform's image policy
            # refuses the template's placeholder image, and only that (the first-hour issue)
            assert refused == [f"ValidatingAdmissionPolicy 'gpuplane-images-{team.name}'"]
        assert result.kueue_verdict in ("fits", "borrows"), fit_text(result)
        assert (result.cluster_queue, result.local_queue) == (plans[namespace].name, "default")
        # every pod set, GPU or not, lands on the template's pool
        assert {ps.flavor for ps in result.pod_sets} == {_pool_of(item)}, fit_text(result)
        assert result.priority_source == f"label {PRIORITY_LABEL}"
        checked += 1
    assert checked


# --- what every template carries ------------------------------------------------------------------


def _priority(view: ClusterView, team: Team) -> str:
    queue = view.platform.queues[team.queue]
    chosen = (queue.priority(team.priority) if team.priority else None) or queue.default_priority
    assert chosen is not None
    return f"{queue.name}-{chosen.name}"


def test_kueue_labels_priority_suspend_and_pool(case: Any) -> None:
    for view, item in _templates(case):
        body = item.body
        team, _ = _namespace(view, body["metadata"]["namespace"])
        labels = body["metadata"]["labels"]
        if view.cluster.scheduler == "volcano":
            assert QUEUE_LABEL not in labels and PRIORITY_LABEL not in labels
            assert "suspend" not in body["spec"]
            continue
        assert labels[QUEUE_LABEL] == kueue.DEFAULT_LOCAL_QUEUE
        assert labels[PRIORITY_LABEL] == _priority(view, team)
        if body["kind"] == "Deployment":
            pod_labels = body["spec"]["template"]["metadata"]["labels"]
            assert pod_labels[QUEUE_LABEL] == kueue.DEFAULT_LOCAL_QUEUE
            assert pod_labels[PRIORITY_LABEL] == labels[PRIORITY_LABEL]
            assert body["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        else:
            assert body["spec"]["suspend"] is True  # Kueue starts it; an accidental apply queues
        for _, template in _pod_templates(body):
            spec = template["spec"]
            assert spec["nodeSelector"] == {f"{nodes.PREFIX}pool": _pool_of(item)}
            assert "tolerations" not in spec  # Kueue adds the flavor's on admission
            assert "priorityClassName" not in spec  # Kueue's WorkloadPriorityClass decides


def test_requests_use_the_resource_name_the_pool_advertises(case: Any) -> None:
    for view, item in _templates(case):
        team, ns = _namespace(view, item.body["metadata"]["namespace"])
        pool = view.platform.pools[_pool_of(item)]
        offers = [o for p, _, o in usable_quotas(view.platform, team, ns) if p.name == pool.name]
        containers = list(_gpu_containers(item.body))
        assert containers, item.path
        for spec, container in containers:
            resources = container["resources"]
            gpus = set(resources["requests"]) - {"cpu", "memory"} - _rdma(view)
            if pool.exposure == "dra":
                assert not gpus and resources["claims"] == [{"name": dra.REQUEST}]
                (claim,) = spec["resourceClaims"]
                assert claim["name"] == dra.REQUEST
                assert claim["resourceClaimTemplateName"] in _claim_templates(view, ns.name)
                continue
            (resource,) = gpus
            assert resource in {o.resource for o in offers}
            assert resources["limits"][resource] == resources["requests"][resource]
            if pool.sharing == "mig":
                assert resource.startswith("nvidia.com/mig-")
            if pool.sharing == "time-slicing" and pool.rename_by_default:
                assert resource.endswith(".shared")


def _claim_templates(view: ClusterView, namespace: str) -> set[str]:
    return {
        m.name
        for m in dra.render(view)
        if m.body["kind"] == "ResourceClaimTemplate"
        and m.body["metadata"]["namespace"] == namespace
    }


def test_mig_templates_request_a_profile_the_team_holds(example: Any) -> None:
    platform = _platform(REPO)
    checked = 0
    for view, item in example:
        if item.body["kind"] not in GPU_KINDS or _pool_of(item) != "a100-mig":
            continue
        team, _ = _namespace(view, item.body["metadata"]["namespace"])
        profiles = {f"nvidia.com/mig-{q.profile}" for q in team.gpus if q.pool == "a100-mig"}
        for _, container in _gpu_containers(item.body):
            requests = set(container["resources"]["requests"]) - _rdma(view)
            assert requests - {"cpu", "memory"} <= profiles
            checked += 1
    assert checked and platform.pools["a100-mig"].sharing == "mig"


def test_cpu_and_memory_come_from_the_team_defaults(case: Any) -> None:
    """The team's container defaults for one GPU unit, scaled by the units a pod gets."""
    for view, item in _templates(case):
        team, _ = _namespace(view, item.body["metadata"]["namespace"])
        pool = view.platform.pools[_pool_of(item)]
        defaults = {**DEFAULT_CONTAINER, **team.defaults}
        cpu, memory = quantity.parse(defaults["cpu"]), quantity.parse(defaults["memory"])
        for spec, container in _gpu_containers(item.body):
            requests = container["resources"]["requests"]
            units = (
                _dra_units(spec, pool) if pool.exposure == "dra" else _units(container, _rdma(view))
            )
            assert quantity.parse(requests["cpu"]) == cpu * units
            assert quantity.parse(requests["memory"]) == memory * units
            assert container["resources"]["limits"]["memory"] == requests["memory"]
            assert "cpu" not in container["resources"]["limits"]


def _units(container: dict[str, Any], rdma: set[str]) -> int:
    """The GPU units an extended-resource container requests (not its RDMA devices)."""
    (units,) = [
        v
        for k, v in container["resources"]["requests"].items()
        if k not in ("cpu", "memory") and k not in rdma
    ]
    return int(units)


def _most(view: ClusterView, namespace: str, pool: str, resource: str) -> int:
    plans = cluster_queues(view)
    plan = next(p for p in plans if any(ns.name == namespace for ns in p.namespaces))
    return int(potential_available(plan, cohort_of(plans, plan), pool, resource))


def _gpu_pod_sets(body: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(pod count, pod template) of the GPU pods of a JobSet, TrainJob or RayJob."""
    spec = body["spec"]
    if body["kind"] == "JobSet":
        for job in spec["replicatedJobs"]:
            yield job["template"]["spec"]["parallelism"], job["template"]["spec"]["template"]
    elif body["kind"] == "TrainJob":
        for _, count, template in _trainjob_pods(body):
            yield count, template
    else:
        for group in spec["rayClusterSpec"]["workerGroupSpecs"]:
            yield group["replicas"], group["template"]


def test_distributed_templates_are_sized_to_a_node_when_the_quota_allows(case: Any) -> None:
    for view, item in _templates(case):
        body = item.body
        if body["kind"] not in DISTRIBUTED:
            continue
        team, ns = _namespace(view, body["metadata"]["namespace"])
        pool = view.platform.pools[_pool_of(item)]
        offer = next(o for p, _, o in usable_quotas(view.platform, team, ns) if p.name == pool.name)
        most = _most(view, ns.name, pool.name, offer.resource)
        pods = 0
        per_pod = set()
        for count, template in _gpu_pod_sets(body):
            (container,) = template["spec"]["containers"]
            pods += count
            per_pod.add(
                _dra_units(template["spec"], pool)
                if pool.exposure == "dra"
                else _units(container, _rdma(view))
            )
        (units,) = per_pod
        assert pods * units <= most, item.path
        if pool.sharing == "full-gpu" and most >= 2 * offer.per_node:
            assert units == offer.per_node, item.path  # one node per pod
        if pool.sharing != "full-gpu":
            assert units == 1  # a MIG slice or a time-shared replica is one process's device
        if body["kind"] == "JobSet":
            assert pods == 2
            for _, template in _gpu_pod_sets(body):
                env = {e["name"]: e.get("value") for e in template["spec"]["containers"][0]["env"]}
                assert env["NNODES"] == "2" and env["GPUS_PER_POD"] == str(units)
                assert env["MASTER_ADDR"] == "$(JOBSET_NAME)-leader-0-0.$(JOBSET_NAME)"
            assert body["spec"]["failurePolicy"]["maxRestarts"] > 0
            assert body["spec"]["network"]["enableDNSHostnames"] is True
        elif body["kind"] == "TrainJob":
            trainer = body["spec"]["trainer"]
            assert pods == trainer["numNodes"] == 2
            assert trainer["numProcPerNode"] == units  # torchrun's processes: one per GPU
            assert trainer["command"][0] == "torchrun"  # it reads Trainer's PET_* variables
            for _, template in _gpu_pod_sets(body):
                env = {e["name"]: e.get("value") for e in template["spec"]["containers"][0]["env"]}
                assert env["PET_NNODES"] == "2" and env["PET_NPROC_PER_NODE"] == str(units)
            assert pool.exposure != "dra"  # a runtime patch cannot add resourceClaims
        else:
            (group,) = body["spec"]["rayClusterSpec"]["workerGroupSpecs"]
            assert group["rayStartParams"]["num-gpus"] == str(units)


def test_distributed_templates_request_the_pools_rdma_devices(case: Any) -> None:
    """The JobSet's pods and a RayJob's GPU workers (when there are several) on a pool whose
    file declares `fabric.rdma` request its resource, requests equal to limits, in their share
    of a node rounded up; the Job, the Deployment, the Ray head and submitter request none."""
    checked = 0
    for view, item in _templates(case):
        body = item.body
        pool = view.platform.pools[_pool_of(item)]
        spec = yaml.safe_load((PLATFORMS[case[0]] / "pools" / f"{pool.name}.yaml").read_text())
        rdma = spec["spec"].get("fabric", {}).get("rdma")
        multi_pod = body["kind"] in DISTRIBUTED
        gpu_pods = {id(t["spec"]) for _, t in _gpu_pod_sets(body)} if multi_pod else set()
        pods = sum(c for c, _ in _gpu_pod_sets(body)) if gpu_pods else 1
        for _, template in _pod_templates(body):
            for container in template["spec"]["containers"]:
                resources = container["resources"]
                distributed = id(template["spec"]) in gpu_pods and pods > 1
                if rdma is None or not distributed:
                    assert not _rdma(view) & set(resources["requests"]), item.path
                    assert not _rdma(view) & set(resources.get("limits", {})), item.path
                    continue
                amount = resources["requests"][rdma["resource"]]
                assert resources["limits"][rdma["resource"]] == amount
                units = (
                    _dra_units(template["spec"], pool)
                    if pool.exposure == "dra"
                    else _units(container, _rdma(view))
                )
                per_node = rdma["perNode"]
                if spec["spec"]["sharing"] == "full-gpu":
                    share = -(-per_node * units // spec["spec"]["gpusPerNode"])  # ceil
                    assert amount == min(per_node, max(1, share)), item.path
                else:
                    assert 1 <= amount <= per_node and (per_node > 1 or amount == 1)
                checked += 1
    if case[0] in ("example", "dra", "gitops"):
        assert checked, case[0]


def _dra_units(spec: dict[str, Any], pool: Any) -> int:
    """The devices a DRA pod claims: one, or a whole node's from `<pool>-node`."""
    (claim,) = spec["resourceClaims"]
    return pool.gpus_per_node if claim["resourceClaimTemplateName"].endswith(dra.NODE_SUFFIX) else 1


def test_rayjob_head_has_no_gpu_and_kueue_settings(case: Any) -> None:
    for _, item in _templates(case):
        if item.body["kind"] != "RayJob":
            continue
        spec = item.body["spec"]
        assert spec["shutdownAfterJobFinishes"] is True  # Kueue refuses a RayJob without it
        assert spec["submissionMode"] == "K8sJobMode" and "clusterSelector" not in spec
        head = spec["rayClusterSpec"]["headGroupSpec"]
        assert head["rayStartParams"]["num-gpus"] == "0"
        (container,) = head["template"]["spec"]["containers"]
        assert set(container["resources"]["requests"]) == {"cpu", "memory"}
        (group,) = spec["rayClusterSpec"]["workerGroupSpecs"]
        assert group["replicas"] == group["minReplicas"] == group["maxReplicas"]
        assert "enableInTreeAutoscaling" not in spec["rayClusterSpec"]


# --- storage, logs, security, images --------------------------------------------------------------


def test_scratch_and_shared_storage(case: Any) -> None:
    pvcs = {
        (v.cluster.name, i.body["metadata"]["namespace"])
        for v, i in case[1]
        if i.body["kind"] == "PersistentVolumeClaim"
    }
    for view, item in _templates(case):
        cluster = view.cluster
        namespace = item.body["metadata"]["namespace"]
        assert ((cluster.name, namespace) in pvcs) == (cluster.shared_class is not None)
        for role, template in _pod_templates(item.body):
            spec = template["spec"]
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            if role == "submitter":
                assert not volumes
                continue
            mounts = {m["mountPath"]: m for m in spec["containers"][0]["volumeMounts"]}
            assert mounts["/scratch"]["name"] == "scratch"
            scratch = volumes["scratch"]
            if cluster.scratch_class is not None:
                claim = scratch["ephemeral"]["volumeClaimTemplate"]["spec"]
                assert claim["storageClassName"] == cluster.scratch_class
            else:
                assert "emptyDir" in scratch
            if cluster.shared_class is not None:
                assert volumes["shared"]["persistentVolumeClaim"]["claimName"] == wt.SHARED_CLAIM
                assert mounts["/data"]["name"] == "shared"
                read_only = item.body["kind"] == "Deployment"
                assert mounts["/data"].get("readOnly", False) is read_only
            else:
                assert "shared" not in volumes and "/data" not in mounts
            assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    for view, item in case[1]:
        if item.body["kind"] == "PersistentVolumeClaim":
            assert item.body["metadata"]["name"] == wt.SHARED_CLAIM
            assert item.body["spec"]["storageClassName"] == view.cluster.shared_class
            assert item.body["spec"]["accessModes"] == ["ReadWriteMany"]


def test_log_export_contract(case: Any) -> None:
    for view, item in _templates(case):
        team, ns = _namespace(view, item.body["metadata"]["namespace"])
        for _, template in _pod_templates(item.body):
            labels = template["metadata"]["labels"]
            assert labels[f"{nodes.PREFIX}team"] == team.name
            assert labels[f"{nodes.PREFIX}cost-center"] == team.cost_center
            assert labels[f"{nodes.PREFIX}purpose"] == ns.purpose
            assert labels[f"{nodes.PREFIX}pool"] == _pool_of(item)
            assert labels[wt.TEMPLATE_LABEL] == item.chart
            annotations = template["metadata"]["annotations"]
            assert annotations[wt.LOG_EXPORT] == "stdout"
            names = [c["name"] for c in template["spec"]["containers"]]
            assert annotations[wt.DEFAULT_CONTAINER_ANNOTATION] in names
            for container in template["spec"]["containers"]:
                assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_jobs_are_kept_as_long_as_the_team_keeps_finished_jobs(case: Any) -> None:
    for view, item in _templates(case):
        if item.body["kind"] == "Deployment":
            continue
        team, _ = _namespace(view, item.body["metadata"]["namespace"])
        # a team without retention gets the platform's default: the clean-up policy
        # (renderer/layers/security/cleanup.py) refuses a Job without a TTL
        finished = kueue.duration_seconds(team.retention.get("finishedJobs", DEFAULT_FINISHED_JOBS))
        if item.body["kind"] == "TrainJob":
            # no TTL field of its own: its JobSet takes the runtime's, the cluster's shortest
            assert "ttlSecondsAfterFinished" not in item.body["spec"]
            (runtime,) = runtimes.runtimes(view)
            assert 0 < runtime["spec"]["template"]["spec"]["ttlSecondsAfterFinished"] <= finished
            continue
        ttl = item.body["spec"].get("ttlSecondsAfterFinished")
        assert ttl == finished


def test_example_retention_reaches_the_jobs(example: Any) -> None:
    bodies = {(v.cluster.name, i.path): i.body for v, i in example}
    assert (
        bodies[("prod-east", "templates/vision-train/job-h100-train.yaml")]["spec"][
            "ttlSecondsAfterFinished"
        ]
        == 24 * 3600
    )
    assert (
        bodies[("staging-west", "templates/llm-eval-train/rayjob-h200-tune.yaml")]["spec"][
            "ttlSecondsAfterFinished"
        ]
        == 72 * 3600
    )


def test_pods_meet_the_restricted_pod_security_level(case: Any) -> None:
    """The strictest level any team namespace enforces (inference and batch by default)."""
    assert "restricted" in DEFAULT_POD_SECURITY.values()
    for _, item in _templates(case):
        for _, template in _pod_templates(item.body):
            spec = template["spec"]
            security = spec["securityContext"]
            assert security["runAsNonRoot"] is True and security["runAsUser"] > 0
            assert security["seccompProfile"] == {"type": "RuntimeDefault"}
            assert spec["automountServiceAccountToken"] is False
            for key in ("hostNetwork", "hostPID", "hostIPC"):
                assert key not in spec
            for volume in spec.get("volumes", []):
                assert set(volume) - {"name"} <= {"ephemeral", "emptyDir", "persistentVolumeClaim"}
            for container in spec["containers"]:
                assert container["securityContext"] == {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                }


def test_images_use_the_team_prefix_and_a_placeholder_tag(case: Any) -> None:
    for view, item in _templates(case):
        team, _ = _namespace(view, item.body["metadata"]["namespace"])
        for _, template in _pod_templates(item.body):
            for container in template["spec"]["containers"]:
                image = container["image"]
                assert image.endswith(f":{wt.PLACEHOLDER_TAG}")
                prefix = team.images[0] if team.images else f"{wt.PLACEHOLDER_REGISTRY}{team.name}/"
                assert image.startswith(prefix)
                assert "//" not in image


def test_vllm_takes_only_its_share_of_a_time_shared_gpu(case: Any) -> None:
    """The pool's generic vLLM template (an endpoint's: tests/test_serving_templates.py)."""
    for view, item in _templates(case):
        if item.body["kind"] != "Deployment" or item.body["metadata"]["name"] in _endpoints(view):
            continue
        pool = view.platform.pools[_pool_of(item)]
        (container,) = item.body["spec"]["template"]["spec"]["containers"]
        flag = next(a for a in container["args"] if a.startswith("--gpu-memory-utilization="))
        share = Decimal(flag.split("=", 1)[1])
        replicas = pool.replicas if pool.sharing in ("time-slicing", "mps") else 1
        assert 0 < share * replicas <= Decimal("0.9")
        probe = container["readinessProbe"]["httpGet"]
        assert probe == {"path": "/health", "port": "http"}
        assert {"name": "http", "containerPort": 8000} in container["ports"]


def _endpoints(view: ClusterView) -> set[str]:
    return {served.name for served in view.endpoints()}


def test_output_has_no_yaml_anchors(case: Any) -> None:
    for _, item in case[1]:
        text = dump(item.body)
        assert "&id" not in text and "*id" not in text


# --- Volcano ---------------------------------------------------------------------------------------


def test_volcano_gets_a_job_and_a_deployment_for_volcano() -> None:
    rendered = _rendered(PLATFORMS["volcano"])
    kinds = sorted(i.body["kind"] for _, i in rendered)
    assert kinds == ["Deployment", "Job"]  # its gang job is the volcano-job-defaults ConfigMap
    for view, item in rendered:
        team, ns = _namespace(view, item.body["metadata"]["namespace"])
        pool = view.platform.pools[_pool_of(item)]
        plan = next(p for p in cluster_queues(view) if ns in p.namespaces)
        for _, template in _pod_templates(item.body):
            spec = template["spec"]
            assert spec["schedulerName"] == "volcano"
            assert template["metadata"]["annotations"][wt.VOLCANO_QUEUE] == plan.name
            assert spec["priorityClassName"] == _priority(view, team)
            assert spec.get("tolerations", []) == nodes.tolerations(pool)
        if item.body["kind"] == "Job":
            assert "volcano-job-defaults" in item.body["metadata"]["annotations"][wt.NOTE]


# --- edges -----------------------------------------------------------------------------------------


def test_a_pool_the_namespace_can_never_use_gets_no_template(tmp_path: Path) -> None:
    root = copy_inputs(CASES / "minimal", tmp_path / "repo")
    team = root / "teams" / "ml.yaml"
    text = team.read_text()
    text = text.replace(
        "{pool: train, nominal: 12, borrowingLimit: 4, lendingLimit: 4}",
        "{pool: train, nominal: 0, borrowingLimit: 0}",
    )
    team.write_text(text)
    platform = load_platform(root).platform
    view = ClusterView.of(platform, platform.clusters["lab"])
    pools = {_pool_of(i) for i in workloads.render(view) if i.body["kind"] in GPU_KINDS}
    assert pools == {"serve"}


def test_units_per_pod() -> None:
    platform = _platform(CASES / "minimal")
    view = ClusterView.of(platform, platform.clusters["lab"])
    team = platform.teams["ml"]
    ns = next(n for n in team.namespaces if n.purpose == "training")
    plan = next(p for p in cluster_queues(view) if ns in p.namespaces)
    pool = platform.pools["train"]
    (offer,) = pool_offers(pool)

    def target(most: int) -> wt.Target:
        return wt.Target(view.cluster, team, ns, plan, pool, offer, most, ())

    assert target(16).units_per_pod(2) == 8
    assert target(40).units_per_pod(2) == 8
    assert target(15).units_per_pod(2) == 4
    assert target(6).units_per_pod(2) == 2
    assert target(2).units_per_pod(2) == 1
    assert target(1).units_per_pod(1) == 1


def test_rendering_is_deterministic() -> None:
    first = [(v.cluster.name, i.path, dump(i.body)) for v, i in _rendered(REPO)]
    second = [(v.cluster.name, i.path, dump(i.body)) for v, i in _rendered(REPO)]
    assert first == second


def test_a_long_pool_name_keeps_names_and_label_values_within_limits(
    tmp_path: Path, validator: OutputValidator
) -> None:
    root = copy_inputs(CASES / "minimal", tmp_path / "repo")
    # the longest pool name: 52 characters, so that its acceptance WorkflowTemplate
    # `acceptance-<pool>` keeps to Argo Workflows' 63 (rule derived-name-too-long)
    long = "train-" + "x" * 46
    pool = root / "pools" / "train.yaml"
    pool.rename(root / "pools" / f"{long}.yaml")
    for path, old, new in (
        (root / "pools" / f"{long}.yaml", "name: train\n", f"name: {long}\n"),
        (root / "pools" / f"{long}.yaml", "value: train,", f"value: {long},"),
        (root / "queues" / "main.yaml", "pools: [train, serve]", f"pools: [{long}, serve]"),
        (root / "teams" / "ml.yaml", "{pool: train,", f"{{pool: {long},"),
    ):
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
    rendered = _rendered(root)
    limits = {
        "Job": 63,
        "JobSet": wt.JOBSET_NAME_MAX,
        "RayJob": wt.RAYJOB_NAME_MAX,
        "TrainJob": wt.TRAINJOB_NAME_MAX,
    }
    kinds = set()
    for view, item in rendered:
        body = item.body
        kinds.add(body["kind"])
        assert len(body["metadata"]["name"]) <= limits.get(body["kind"], 63)
        for _, template in [("object", body), *_pod_templates(body)]:
            for value in template["metadata"].get("labels", {}).values():
                assert len(value) <= 63
        assert not validator.validate(body, view.cluster.kubernetes_version)
    assert {"Job", "JobSet", "RayJob", "Deployment"} <= kinds
    assert wt.short("a" * 70, 63) != wt.short("a" * 71, 63)


def test_a_template_body_is_copied_with_nothing_shared() -> None:
    """The copy that keeps anchors out of the YAML shares no dict or list, keeps every value's
    type and order, and copies a body holding a type marshal does not write exactly too."""
    import enum

    from renderer.layers.workload_templates.workloads import _tree

    class Purpose(enum.StrEnum):
        TRAINING = "training"

    labels = {"team": "a", "n": 1, "on": True, "ratio": 0.5, "none": None}
    body = {"metadata": {"labels": labels}, "spec": {"labels": labels, "items": [labels, [1]]}}
    for original in (body, {**body, "purpose": Purpose.TRAINING}):
        copied = _tree(original)
        assert copied == original
        containers: list[int] = []

        def walk(value: object, into: list[int]) -> None:
            if isinstance(value, dict | list):
                into.append(id(value))
                for item in value.values() if isinstance(value, dict) else value:
                    walk(item, into)

        walk(copied, containers)
        assert len(containers) == len(set(containers)) == 8
        assert type(copied["metadata"]["labels"]["on"]) is bool
        assert list(copied["spec"]) == ["labels", "items"]
    assert type(_tree({**body, "purpose": Purpose.TRAINING})["purpose"]) is Purpose


def test_the_readme_lists_the_files_the_templates_layer_writes(
    case: tuple[str, list[tuple[ClusterView, Values]]],
) -> None:
    """`workloads.files` names each template `render` writes, in order, without building one:
    the cluster README lists them from it (`readme.templated_namespaces`)."""
    _, rendered = case
    views = {id(view): view for view, _ in rendered}
    written = [(v.folder, v.chart) for _, v in rendered]
    named = [
        (f"{workloads.FOLDER}/{namespace}", chart)
        for view in views.values()
        for namespace, chart in workloads.files(view)
    ]
    assert named == written and written
