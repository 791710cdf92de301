"""The platform's Kubeflow Trainer runtime, and the TrainJob templates that name it.

Expectations come from Kubeflow Trainer v2.3.0 (the runtime `manifests/base/runtimes/
torch_distributed.yaml`, the webhooks and the JobSet builder, as tests/trainer_build.py reads
them), Kueue v0.19.2's TrainJob integration and the platform's own rendered admission policies:
a team's TrainJob made from its template must pass every ValidatingAdmissionPolicy and Pod
Security level the platform binds to its namespace, at each object the request makes (the
TrainJob the member creates, the JobSet Trainer creates, the Job the JobSet controller creates,
the pods the Job controller creates).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.apiserver import pod_security
from renderer.admission.apiserver.gate import Request, UserInfo
from renderer.admission.rendered import rendered_cluster
from renderer.layers import training
from renderer.layers.gitops import argocd
from renderer.layers.workload_templates import runtimes, workloads
from renderer.model.names import DEFAULT_FINISHED_JOBS, DEFAULT_POD_SECURITY
from renderer.model.platform import Addon, Platform
from renderer.model.view import ClusterView
from renderer.output.validation import OutputValidator
from renderer.pipeline import APPLY_ORDER, LAYERS, Rendered, load_platform
from tests import trainer_build
from tests.admission_cel import evaluate, kueue_webhook
from tests.conftest import REPO, render_clean

REFERENCE = REPO.parent / "shared" / "reference" / "workloads" / "kubeflow-trainer"

ALICE = "oidc:alice@example.com"
TRAINER = "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
JOBSET = "system:serviceaccount:jobset-system:jobset-controller-manager"
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
UID = "7d1f0c8e-0000-4000-8000-000000000001"


@pytest.fixture(scope="module")
def platform() -> Platform:
    return load_platform(REPO).platform


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


def _trainjobs(rendered: Rendered, cluster: str) -> list[Any]:
    return [v for v in rendered.values[cluster] if v.body.get("kind") == "TrainJob"]


def _runtime(rendered: Rendered, cluster: str) -> dict[str, Any]:
    (found,) = [m.body for m in rendered.manifests[cluster] if m.kind == runtimes.RUNTIME_KIND]
    return dict(found)


# --- where the runtime renders ------------------------------------------------------------------


def test_the_runtime_renders_where_trainer_is_declared(
    platform: Platform, example: Rendered
) -> None:
    for name, cluster in platform.clusters.items():
        objects = [m for m in example.manifests[name] if m.layer == training.LAYER]
        declared = "trainer" in cluster.addons
        assert bool(objects) is declared, name
        assert bool(_trainjobs(example, name)) is declared, name
        for manifest in objects:
            assert manifest.kind == runtimes.RUNTIME_KIND
            assert (
                manifest.path == f"{training.LAYER}/clustertrainingruntime-torch-distributed.yaml"
            )
            assert manifest.source == cluster.addons["trainer"].origin.location
    assert any("trainer" in c.addons for c in platform.clusters.values())
    assert any("trainer" not in c.addons for c in platform.clusters.values())


def test_a_trainer_running_already_still_gets_the_runtime(platform: Platform) -> None:
    """`enabled: false`: Trainer runs there, installed outside gpuplane; its kinds are served,
    so the runtime the templates name is rendered; without the add-on there is none."""
    cluster = platform.clusters["prod-east"]
    addon = cluster.addons["trainer"]
    off = {**cluster.addons, "trainer": Addon("trainer", None, {"enabled": False}, addon.origin)}
    view = ClusterView.of(platform, dataclasses.replace(cluster, addons=off))
    assert [m.kind for m in training.render(view)] == [runtimes.RUNTIME_KIND]
    gone = {k: v for k, v in cluster.addons.items() if k != "trainer"}
    view = ClusterView.of(platform, dataclasses.replace(cluster, addons=gone))
    assert list(training.render(view)) == []
    assert not [v for v in workloads.render(view) if v.body["kind"] == "TrainJob"]


def test_argo_cd_syncs_the_runtime_after_the_add_ons(example: Rendered) -> None:
    assert (training.LAYER, training.render) in LAYERS
    assert APPLY_ORDER.index(training.LAYER) > APPLY_ORDER.index("tenancy")
    wave = argocd.LAYER_WAVES[training.LAYER]
    assert argocd.ADDON_WAVE < wave < argocd.LAYER_WAVES["workflows"]
    apps = {m.name: m.body for m in example.manifests["prod-east"] if m.kind == "Application"}
    app = apps[f"prod-east-{training.LAYER}"]
    assert app["spec"]["source"]["path"] == f"rendered/prod-east/{training.LAYER}"
    assert int(app["metadata"]["annotations"][argocd.SYNC_WAVE]) == wave
    trainer = apps["prod-east-kubeflow-trainer"]
    assert int(trainer["metadata"]["annotations"][argocd.SYNC_WAVE]) < wave
    assert f"prod-east-{training.LAYER}" not in {
        m.name for m in example.manifests["staging-west"] if m.kind == "Application"
    }


# --- the runtime, against upstream --------------------------------------------------------------


def test_the_runtime_keeps_what_upstream_torch_distributed_declares(example: Rendered) -> None:
    """kubeflow/trainer v2.3.0 manifests/base/runtimes/torch_distributed.yaml: name
    `torch-distributed`, label `trainer.kubeflow.org/framework: torch`, `mlPolicy: {numNodes: 1,
    torch: {}}`, one replicatedJob `node` labelled `trainer.kubeflow.org/trainjob-ancestor-step:
    trainer` with one container `node` of `pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime`."""
    body = _runtime(example, "prod-east")
    assert body["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert body["kind"] == "ClusterTrainingRuntime"
    assert body["metadata"]["name"] == "torch-distributed"
    assert body["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torch"
    # the chart's commonLabels turn Trainer's webhook off for its runtimes; this one is checked
    assert "trainer.kubeflow.org/webhook-validation" not in body["metadata"]["labels"]
    assert body["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    (job,) = body["spec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    assert job["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
    }
    # Trainer's webhook (validateReplicatedJobs): replicas 1 and a `node` container
    assert job.get("replicas", 1) == 1
    (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "node"
    assert container["image"] == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def test_the_runtime_validates_against_its_crd(
    example: Rendered, validator: OutputValidator
) -> None:
    checked = validator.check(_runtime(example, "prod-east"), "1.33")
    assert checked.crd == "clustertrainingruntimes.trainer.kubeflow.org"
    assert (checked.problems, checked.cel) == ([], ())


def test_the_runtime_jobset_is_deleted_within_every_teams_retention(
    platform: Platform, example: Rendered
) -> None:
    """A TrainJob has no TTL of its own and cannot patch its JobSet's: the shared runtime keeps
    finished JobSets (and their pods) no longer than the shortest retention of the cluster."""
    ttl = _runtime(example, "prod-east")["spec"]["template"]["spec"]["ttlSecondsAfterFinished"]
    from renderer.layers.queueing.kueue import duration_seconds

    retentions = [
        duration_seconds(str(t.retention.get("finishedJobs", DEFAULT_FINISHED_JOBS)))
        for t in platform.teams.values()
        if any(ns.cluster == "prod-east" for ns in t.namespaces)
    ]
    assert ttl == min(retentions) > 0


def test_upstream_trainjob_examples_patch_a_job_the_runtime_has() -> None:
    """Kubeflow's own examples (v2.3.0 examples/yaml) name `torch-distributed` and patch its
    `node` job: Trainer's webhook refuses a patch of a replicated Job the runtime lacks."""
    files = sorted(REFERENCE.glob("0*.yaml")) if REFERENCE.is_dir() else []
    if not files:
        pytest.skip("../shared/reference/workloads/kubeflow-trainer is not beside this checkout")
    body = runtimes.torch_distributed(3600)
    jobs = {j["name"] for j in body["spec"]["template"]["spec"]["replicatedJobs"]}
    named = 0
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "TrainJob":
                continue
            ref = doc["spec"]["runtimeRef"]
            if ref["name"] != runtimes.TORCH_RUNTIME:
                continue
            named += 1
            assert ref.get("kind", "ClusterTrainingRuntime") == runtimes.RUNTIME_KIND
            for patch in doc["spec"].get("runtimePatches", []):
                spec = patch["trainingRuntimeSpec"]["template"].get("spec", {})
                assert {j["name"] for j in spec.get("replicatedJobs", [])} <= jobs, path.name
            doc["metadata"].setdefault("namespace", "llm-train")
            built = trainer_build.pods(body, doc)
            (node,) = [count for job, count, _ in built if job == "node"]
            assert node == doc["spec"]["trainer"].get("numNodes", 1)
    assert named >= 2


# --- the TrainJob template ------------------------------------------------------------------------


def test_trainjob_templates_name_the_rendered_runtime_and_fit_the_namespace(
    platform: Platform, example: Rendered
) -> None:
    from renderer.model.capacity import usable_quotas
    from renderer.model.queue_plans import cluster_queues, cohort_of, potential_available

    view = ClusterView.of(platform, platform.clusters["prod-east"])
    plans = cluster_queues(view)
    checked = 0
    for item in _trainjobs(example, "prod-east"):
        body = item.body
        namespace = body["metadata"]["namespace"]
        team = next(t for t in platform.teams.values() for n in t.namespaces if n.name == namespace)
        ns = next(n for n in team.namespaces if n.name == namespace)
        assert ns.purpose == "training"
        assert item.path == f"templates/{namespace}/trainjob-{item.chart.split('-', 1)[1]}.yaml"
        assert body["spec"]["runtimeRef"] == {
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
            "name": _runtime(example, "prod-east")["metadata"]["name"],
        }
        assert body["spec"]["suspend"] is True
        labels = body["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "default"
        pool = platform.pools[labels["gpuplane.dev/pool"]]
        assert pool.sharing == "full-gpu" and pool.exposure != "dra"
        trainer = body["spec"]["trainer"]
        assert trainer["image"].startswith(team.images[0])
        gpus = trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"]
        assert gpus <= pool.gpus_per_node
        plan = next(p for p in plans if ns in p.namespaces)
        (offer,) = [o for p, _, o in usable_quotas(platform, team, ns) if p.name == pool.name]
        most = potential_available(plan, cohort_of(plans, plan), pool.name, offer.resource)
        assert trainer["numNodes"] * gpus <= most
        checked += 1
    assert checked == 4  # every training namespace of prod-east, on h100-train


def test_no_trainjob_template_outside_training_namespaces_or_on_dra_pools(
    example: Rendered,
) -> None:
    dra = load_platform(REPO / "tests" / "cases" / "render" / "dra").platform
    for cluster in dra.clusters.values():
        with_trainer = {**cluster.addons}
        origin = next(iter(cluster.addons.values())).origin
        with_trainer["trainer"] = Addon("trainer", None, {}, origin)
        with_trainer["jobset"] = Addon("jobset", None, {}, origin)
        view = ClusterView.of(dra, dataclasses.replace(cluster, addons=with_trainer))
        for item in workloads.render(view):
            if item.body["kind"] == "TrainJob":
                pool = dra.pools[item.body["metadata"]["labels"]["gpuplane.dev/pool"]]
                assert pool.exposure != "dra", item.path
    for values in example.values.values():
        for item in values:
            if item.body.get("kind") == "TrainJob":
                assert item.body["metadata"]["labels"]["gpuplane.dev/purpose"] == "training"


# --- admission, object by object ------------------------------------------------------------------


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return True
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        key, op = expression["key"], expression["operator"]
        values = expression.get("values", [])
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _matches(policy: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = {
        "Pod": "pods",
        "Job": "jobs",
        "JobSet": "jobsets",
        "TrainJob": "trainjobs",
    }[obj["kind"]]
    for rule in policy["spec"]["matchConstraints"]["resourceRules"]:
        if group not in rule["apiGroups"] and "*" not in rule["apiGroups"]:
            continue
        if version not in rule["apiVersions"] and "*" not in rule["apiVersions"]:
            continue
        if plural in rule["resources"] and "CREATE" in rule["operations"]:
            return True
    return False


def _denials(
    rendered: Rendered, cluster: str, obj: Mapping[str, Any], username: str
) -> Iterator[tuple[str, list[str]]]:
    """(policy, messages) of every ValidatingAdmissionPolicy bound to the object's namespace
    that matches it and refuses it; also the policies it matches (empty messages) when none."""
    manifests = rendered.manifests[cluster]
    namespace = next(
        copy.deepcopy(dict(m.body))
        for m in manifests
        if m.kind == "Namespace" and m.name == obj["metadata"]["namespace"]
    )
    labels = namespace["metadata"]["labels"]
    labels["kubernetes.io/metadata.name"] = namespace["metadata"]["name"]  # the API server's
    bindings = [m.body for m in manifests if m.kind == "ValidatingAdmissionPolicyBinding"]
    for m in manifests:
        if m.kind != "ValidatingAdmissionPolicy" or not _matches(m.body, obj):
            continue
        if not _selects(m.body["spec"]["matchConstraints"].get("namespaceSelector"), labels):
            continue
        bound = [
            b
            for b in bindings
            if b["spec"]["policyName"] == m.name
            and _selects(b["spec"].get("matchResources", {}).get("namespaceSelector"), labels)
        ]
        if bound:
            yield m.name, evaluate(m.body, obj, username=username, namespace=namespace)


def _owned(kind: str, api_version: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": "train-h100-train",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _chain(runtime: dict[str, Any], trainjob: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(requester, object) of each create the TrainJob leads to, as Kueue admitted it."""
    created = kueue_webhook(trainjob)
    namespace = trainjob["metadata"]["namespace"]
    jobset = trainer_build.jobset(runtime, trainjob)
    jobset["metadata"]["ownerReferences"] = _owned("TrainJob", "trainer.kubeflow.org/v1alpha1")
    jobset["spec"]["suspend"] = False  # Kueue admitted the TrainJob
    steps: list[tuple[str, dict[str, Any]]] = [(ALICE, created), (TRAINER, jobset)]
    for job_name, _, template in trainer_build.pods(runtime, trainjob):
        name = f"{jobset['metadata']['name']}-{job_name}-0"
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": _owned("JobSet", "jobset.x-k8s.io/v1alpha2"),
            },
            "spec": {"template": template, "completionMode": "Indexed"},
        }
        steps.append((JOBSET, job))
        steps.append((JOB_CONTROLLER, trainer_build.pod_of(template, namespace, name)))
    return steps


def test_a_trainjob_from_its_template_passes_every_policy_of_its_namespace(
    example: Rendered,
) -> None:
    runtime = _runtime(example, "prod-east")
    matched: set[str] = set()
    for item in _trainjobs(example, "prod-east"):
        trainjob = copy.deepcopy(dict(item.body))
        for username, obj in _chain(runtime, trainjob):
            for name, denied in _denials(example, "prod-east", obj, username):
                matched.add(name)
                assert denied == [], (item.path, obj["kind"], name, denied)
    # the checks that matter saw the objects: images, host access, GPUs through the queue,
    # labels, the suspend rule, the JobSet TTL
    for name in (
        "gpuplane-images-llm",
        "gpuplane-gpu-queue",
        "gpuplane-common-labels",
        "gpuplane-queue-suspend",
        "gpuplane-ttl-jobsets",
    ):
        assert name in matched, name
    assert any(n.startswith("gpuplane-host-") for n in matched)


@pytest.mark.parametrize(
    ("change", "refusing"),
    [
        (lambda t: t["spec"]["trainer"].update(image="docker.io/evil/miner:1"), "images"),
        (lambda t: t["metadata"]["labels"].pop("gpuplane.dev/team"), "common-labels"),
        (lambda t: t["spec"].update(suspend=False), "queue-suspend"),
        (
            lambda t: t["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
                "replicatedJobs"
            ][0]["template"]["spec"]["template"]["spec"]["containers"][0].update(
                securityContext={"privileged": True}
            ),
            "host",
        ),
    ],
)
def test_a_trainjob_changed_past_the_platform_is_refused(
    example: Rendered, change: Any, refusing: str
) -> None:
    """The same chain, with one change a team could make to its copy: some policy refuses it."""
    runtime = _runtime(example, "prod-east")
    trainjob = copy.deepcopy(dict(_trainjobs(example, "prod-east")[0].body))
    change(trainjob)
    refused = []
    for username, obj in _chain(runtime, trainjob):
        if obj["kind"] == "TrainJob" and refusing == "queue-suspend":
            obj = trainjob  # as sent, before Kueue's webhook: Kueue did not take it in
        refused += [n for n, denied in _denials(example, "prod-east", obj, username) if denied]
    assert any(refusing in name for name in refused), refused


def test_the_pods_meet_the_pod_security_level_of_every_training_namespace(
    platform: Platform, example: Rendered
) -> None:
    """Restricted, the strictest level a training namespace may choose; its default is
    baseline (`DEFAULT_POD_SECURITY`). The chain's Pod Security step is checked against
    pod-security-admission's own tables (tests/test_pod_security.py)."""
    assert DEFAULT_POD_SECURITY["training"] in ("baseline", "restricted")
    cluster = rendered_cluster(platform, platform.clusters["prod-east"])
    runtime = _runtime(example, "prod-east")
    checked = 0
    for item in _trainjobs(example, "prod-east"):
        trainjob = dict(item.body)
        namespace = trainjob["metadata"]["namespace"]
        for username, obj in _chain(runtime, trainjob):
            if obj["kind"] != "Pod":
                continue
            outcome = pod_security.gate(Request(obj, namespace, UserInfo(username), cluster))
            assert (outcome.status, outcome.refusals, outcome.notes) == ("passed", (), ()), (
                item.path,
                outcome,
            )
            checked += 1
    assert checked == 4


def test_the_reference_runtime_would_be_refused_in_a_restricted_namespace(
    platform: Platform, example: Rendered
) -> None:
    """Upstream's runtime sets no securityContext: its pods fail restricted (and the checks
    above could fail); the platform's runtime is why a TrainJob passes there."""
    cluster = rendered_cluster(platform, platform.clusters["prod-east"])
    runtime = copy.deepcopy(_runtime(example, "prod-east"))
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    del pod["securityContext"]
    del pod["containers"][0]["securityContext"]
    trainjob = dict(_trainjobs(example, "prod-east")[0].body)
    (pod_obj,) = [o for _, o in _chain(runtime, trainjob) if o["kind"] == "Pod"]
    outcome = pod_security.gate(Request(pod_obj, "llm-serve", UserInfo(JOB_CONTROLLER), cluster))
    assert outcome.refusals


def test_the_runtime_file_is_committed(example: Rendered) -> None:
    path = REPO / "rendered" / "prod-east" / training.LAYER
    committed = yaml.safe_load((path / "clustertrainingruntime-torch-distributed.yaml").read_text())
    assert committed == _runtime(example, "prod-east")
    assert not (REPO / "rendered" / "staging-west" / training.LAYER).exists()
    assert Path(path / "kustomization.yaml").is_file()
