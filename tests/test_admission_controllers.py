"""The security layer's admission policies let the platform's own controllers do their work, and
nobody else the same.

Each case is what a controller really does, from its source and Kueue v0.19.2's: KubeRay and
the Kubeflow operators create the pods of a job Kueue admitted ungated (Kueue's pod webhook
skips a pod whose ancestor job it manages, `FindAncestorJobManagedByKueue`), the Kubeflow
Trainer's MPI runtime writes an SSH key Secret owned by the TrainJob, Kubernetes' controllers
act as `system:kube-controller-manager` when the controller manager runs without
`--use-service-account-credentials`, and Kueue and the Job controller remove their finalizers
from pods admitted before a policy narrowed. Each allowed case has its refused twin: a team
member, a team service account, Argo CD (which syncs the teams' own Applications) or Argo
Workflows' controller doing the same."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from renderer.layers.security import gpus, host, images, secret_refs
from renderer.layers.security.policy_parts import pod_owner_kinds, suspendable_kinds
from renderer.layers.tenancy import workload_kinds
from renderer.pipeline import Rendered
from tests.admission_cel import compile_expression, evaluate, kueue_webhook
from tests.conftest import (
    KUBEFLOW_V1_KINDS,
    MPI_OPERATOR,
    REPO,
    TRAINING_OPERATOR,
    copy_inputs,
    render_clean,
    submits,
)

KUEUE_JOBS = REPO.parent / "shared" / "reference" / "kueue-examples" / "jobs"

ALICE = "oidc:alice@example.com"
TEAM_SA = "system:serviceaccount:llm-train:default"
ARGOCD_CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
ARGOCD_CREDENTIAL = "system:serviceaccount:kube-system:argocd-manager"
ARGO_WORKFLOWS = "system:serviceaccount:argo:argo-workflows-workflow-controller"
NOT_CONTROLLERS = (ALICE, TEAM_SA, ARGOCD_CONTROLLER, ARGOCD_CREDENTIAL, ARGO_WORKFLOWS)
"""Who is refused what a controller may do: a person, the team's own service account, Argo CD
in either form, and Argo Workflows' controller (it runs a Workflow's pods as written)."""

JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
CONTROLLER_MANAGER = "system:kube-controller-manager"
KUEUE_CONTROLLER = "system:serviceaccount:kueue-system:kueue-controller-manager"
KUBERAY = "system:serviceaccount:kuberay-system:kuberay-operator"
TRAINING_OPERATOR_SA = "system:serviceaccount:kubeflow:training-operator"
MPI_OPERATOR_SA = "system:serviceaccount:mpi-operator:mpi-operator"
TRAINER = "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"

LABELS = {"gpuplane.dev/team": "llm", "gpuplane.dev/cost-center": "CC-1050"}
IMAGE = "registry.example.com/llm/train:1"
GPU = {"limits": {"nvidia.com/gpu": 1}}


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


@pytest.fixture(scope="module")
def kubeflow(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The example, llm-train submitting the training operator's v1 jobs: prod-east declares
    the Kubeflow Training Operator, so its Kueue manages them and the policies cover them."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("kubeflow"))
    rendered: Rendered = render_clean(
        submits(root, "llm-train", KUBEFLOW_V1_KINDS, TRAINING_OPERATOR)
    )
    return rendered


@pytest.fixture(scope="module")
def mpi(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The example, llm-train submitting MPIJobs: prod-east declares the MPI Operator (its
    v2beta1 MPIJob; the training operator would define the same CRD, so not both)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("mpi"))
    rendered: Rendered = render_clean(submits(root, "llm-train", ("MPIJob",), MPI_OPERATOR))
    return rendered


def policy(rendered: Rendered, name: str, cluster: str = "prod-east") -> dict[str, Any]:
    for m in rendered.manifests[cluster]:
        if m.kind == "ValidatingAdmissionPolicy" and m.name == name:
            return dict(m.body)
    raise AssertionError(f"no policy {name} on {cluster}")


def namespace(rendered: Rendered, name: str, cluster: str = "prod-east") -> dict[str, Any]:
    for m in rendered.manifests[cluster]:
        if m.kind == "Namespace" and m.name == name:
            return copy.deepcopy(dict(m.body))
    raise AssertionError(name)


def sample(name: str) -> dict[str, Any]:
    """A Kueue example job, moved into a team namespace with the team's labels and images, and
    asking for a GPU in every pod template."""
    if not KUEUE_JOBS.is_dir():
        pytest.skip("../shared/reference/kueue-examples is not beside this checkout")
    docs: list[dict[str, Any]] = [
        d for d in yaml.safe_load_all((KUEUE_JOBS / name).read_text()) if d
    ]
    (doc,) = docs
    doc["metadata"]["namespace"] = "llm-train"
    doc["metadata"].setdefault("labels", {}).update(LABELS)
    return doc


def owner(api_version: str, kind: str, *, controller: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": "train",
        "uid": "7d1f0c8e-0000-4000-8000-000000000001",
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def pod_of(template: dict[str, Any], *owners: dict[str, Any]) -> dict[str, Any]:
    """The pod a controller creates from a pod template, with a GPU and the given owners, as
    Kueue's pod webhook leaves it (ungated where the owner is a job Kueue manages)."""
    spec = copy.deepcopy(template["spec"])
    for c in spec["containers"]:
        c["image"] = IMAGE
        c["resources"] = copy.deepcopy(GPU)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "train-worker-0",
            "namespace": "llm-train",
            "labels": dict(LABELS),
            "ownerReferences": list(owners),
        },
        "spec": spec,
    }
    return kueue_webhook(body)


def _pytorch_worker() -> dict[str, Any]:
    job = sample("sample-pytorchjob.yaml")
    return pod_of(
        job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"],
        owner("kubeflow.org/v1", "PyTorchJob"),
    )


def _mpi_worker() -> dict[str, Any]:
    job = sample("sample-mpijob.yaml")
    return pod_of(
        job["spec"]["mpiReplicaSpecs"]["Worker"]["template"],
        owner("kubeflow.org/v2beta1", "MPIJob"),
    )


def _ray_worker() -> dict[str, Any]:
    cluster = sample("ray-cluster-sample.yaml")
    return pod_of(
        cluster["spec"]["workerGroupSpecs"][0]["template"], owner("ray.io/v1", "RayCluster")
    )


def _job_pod() -> dict[str, Any]:
    job = sample("sample-job.yaml")
    return pod_of(job["spec"]["template"], owner("batch/v1", "Job"))


CONTROLLER_PODS = {
    "KubeRay: a RayCluster's worker": (_ray_worker, KUBERAY),
    "training operator: a PyTorchJob's worker": (_pytorch_worker, TRAINING_OPERATOR_SA),
    "MPI operator: an MPIJob's worker": (_mpi_worker, MPI_OPERATOR_SA),
    "Job controller: a Job's pod": (_job_pod, JOB_CONTROLLER),
    "controller manager (one identity): a Job's pod": (_job_pod, CONTROLLER_MANAGER),
}
PLATFORM_OF = {
    "training operator: a PyTorchJob's worker": "kubeflow",
    "MPI operator: an MPIJob's worker": "mpi",
}
"""The rendered platform whose prod-east runs the case's operator (`example` for the rest)."""


# --- 1. GPU pods of jobs Kueue admitted, created by their controllers ---------------------------


@pytest.mark.parametrize("case", sorted(CONTROLLER_PODS))
def test_a_controllers_gpu_pod_for_a_kueue_job_is_admitted_and_nobody_elses(
    request: pytest.FixtureRequest, case: str
) -> None:
    make, controller = CONTROLLER_PODS[case]
    rendered: Rendered = request.getfixturevalue(PLATFORM_OF.get(case, "example"))
    body = policy(rendered, gpus.QUEUE_POLICY)
    pod = make()
    assert "schedulingGates" not in pod["spec"]  # Kueue's pod webhook let it go by
    assert evaluate(body, pod, username=controller) == []
    for username in NOT_CONTROLLERS:
        (message,) = evaluate(body, pod, username=username)
        assert "ownerReferences" in message, username


@pytest.mark.parametrize(
    "owners",
    [
        [],
        [owner("argoproj.io/v1alpha1", "Workflow")],  # Kueue gates a Workflow's pods
        [owner("sparkoperator.k8s.io/v1beta2", "SparkApplication")],
        [owner("apps/v1", "ReplicaSet")],  # gated pod by pod by Kueue's pod integration
        [owner("ray.io/v1", "RayCluster", controller=False)],  # not the controller
        [owner("example.com/v1", "RayCluster")],  # another group's kind of that name
    ],
)
def test_a_controller_gets_no_exemption_for_a_pod_kueue_does_not_admit_by_its_parent(
    example: Rendered, owners: list[dict[str, Any]]
) -> None:
    body = policy(example, gpus.QUEUE_POLICY)
    pod = _ray_worker()
    pod["metadata"]["ownerReferences"] = owners
    for controller in (KUBERAY, JOB_CONTROLLER, CONTROLLER_MANAGER):
        assert evaluate(body, pod, username=controller), (controller, owners)


def test_argo_workflows_cannot_create_an_ungated_gpu_pod_whatever_it_owns(
    example: Rendered,
) -> None:
    """A team's Application can sync a Workflow; its controller then creates the pods as the
    Workflow says, in the team's namespace. Even a pod that named a Kueue job as its controller
    would be refused from it."""
    body = policy(example, gpus.QUEUE_POLICY)
    for make, _ in CONTROLLER_PODS.values():
        assert evaluate(body, make(), username=ARGO_WORKFLOWS)
    # a Workflow pod as Kueue's pod webhook leaves it (gated) is admitted from it
    workflow_pod = pod_of(
        {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
        owner("argoproj.io/v1alpha1", "Workflow"),
    )
    assert workflow_pod["spec"]["schedulingGates"] == [{"name": gpus.ADMISSION_GATE}]
    assert evaluate(body, workflow_pod, username=ARGO_WORKFLOWS) == []


def test_every_parent_whose_pods_pass_ungated_is_held_suspended(example: Rendered) -> None:
    """A parent of `admission.pod_owner_kinds` starts pods only once unsuspended, so the suspend policy
    must match each of them, or a team would create one unsuspended past Kueue."""
    rules = policy(example, gpus.SUSPEND_POLICY)["spec"]["matchConstraints"]["resourceRules"]
    matched = {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
    cluster = example.platform.clusters["prod-east"]
    owners = pod_owner_kinds(cluster)
    assert owners
    for kind in owners:
        assert (kind.group, kind.resource) in matched, kind.kind
        assert kind in suspendable_kinds(cluster)
    # and every one of those is one a member may create on the cluster (the team roles' names)
    granted = {(group, r) for group, resources in workload_kinds(cluster) for r in resources}
    for kind in owners:
        assert (kind.group, kind.resource) in granted, kind.kind


@pytest.mark.parametrize(
    ("name", "suspend"),
    [
        ("sample-pytorchjob.yaml", ("runPolicy", "suspend")),
        ("sample-mpijob.yaml", ("runPolicy", "suspend")),
        ("sample-tfjob.yaml", ("runPolicy", "suspend")),
        ("sample-xgboostjob.yaml", ("runPolicy", "suspend")),
        ("sample-paddlejob.yaml", ("runPolicy", "suspend")),
        ("sample-jaxjob.yaml", ("runPolicy", "suspend")),
        ("ray-cluster-sample.yaml", ("suspend",)),
    ],
)
def test_a_kubeflow_or_ray_job_is_created_suspended_and_only_the_platform_unsuspends_it(
    request: pytest.FixtureRequest, name: str, suspend: tuple[str, ...]
) -> None:
    # each on a prod-east that runs its operator: the MPI Operator's MPIJob, the training
    # operator's v1 jobs, KubeRay (the example's)
    platform = {"sample-mpijob.yaml": "mpi", "ray-cluster-sample.yaml": "example"}
    rendered: Rendered = request.getfixturevalue(platform.get(name, "kubeflow"))
    body = policy(rendered, gpus.SUSPEND_POLICY)
    job = sample(name)
    waiting = kueue_webhook(job)
    assert evaluate(body, waiting, username=ALICE) == []
    # unsuspended past Kueue: a made-up owner Kueue thinks it manages
    skipped = copy.deepcopy(job)
    skipped["metadata"]["ownerReferences"] = [owner("jobset.x-k8s.io/v1alpha2", "JobSet")]
    parent = skipped["spec"]
    for field in suspend[:-1]:
        parent = parent.setdefault(field, {})
    parent[suspend[-1]] = False
    skipped = kueue_webhook(skipped)
    for username in (ALICE, TEAM_SA, ARGOCD_CONTROLLER):
        assert evaluate(body, skipped, username=username), username
    running = copy.deepcopy(waiting)
    parent = running["spec"]
    for field in suspend[:-1]:
        parent = parent[field]
    parent[suspend[-1]] = False
    for username in (ALICE, TEAM_SA, ARGOCD_CONTROLLER):
        assert evaluate(body, running, old=waiting, operation="UPDATE", username=username)
    assert evaluate(body, running, old=waiting, operation="UPDATE", username=KUEUE_CONTROLLER) == []


def test_the_refusal_no_longer_sends_users_to_a_kind_it_refuses(
    example: Rendered, kubeflow: Rendered
) -> None:
    body = policy(example, gpus.QUEUE_POLICY)
    message = body["spec"]["validations"][0]["message"]
    # nor to a kind the cluster does not serve: the example's prod-east runs KubeRay and no
    # training operator, so kubectl would find no mapping for a PyTorchJob there
    assert "RayJob" in message and "PyTorchJob" not in message
    served = policy(kubeflow, gpus.QUEUE_POLICY)["spec"]["validations"][0]["message"]
    assert "RayJob" in served and "PyTorchJob" in served
    # and a RayJob's pods (a RayCluster the KubeRay operator made for it) are admitted
    assert evaluate(body, _ray_worker(), username=KUBERAY) == []


# --- 2. the Trainer's (and MPI operator's) SSH key Secret ----------------------------------------


def ssh_secret(*owners: dict[str, Any], kind: str = secret_refs.SSH_AUTH) -> dict[str, Any]:
    """The Secret the Trainer's MPI plugin writes for a TrainJob (`<trainjob>-mpi-ssh-auth`)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": kind,
        "metadata": {
            "name": "train-mpi-ssh-auth",
            "namespace": "llm-train",
            "ownerReferences": list(owners),
        },
        "data": {"ssh-privatekey": "LS0tLS0=", "ssh-publickey": "c3NoLWVk"},
    }


TRAINJOB_OWNER = owner("trainer.kubeflow.org/v1alpha1", "TrainJob")
MPIJOB_OWNER = owner("kubeflow.org/v2beta1", "MPIJob")


@pytest.mark.parametrize(
    ("controller", "job_owner"), [(TRAINER, TRAINJOB_OWNER), (MPI_OPERATOR_SA, MPIJOB_OWNER)]
)
def test_an_mpi_controller_writes_its_ssh_key_secret_and_nobody_else(
    example: Rendered, controller: str, job_owner: dict[str, Any]
) -> None:
    body = policy(example, secret_refs.STORE_POLICY)
    secret = ssh_secret(job_owner)
    for operation in ("CREATE", "UPDATE"):
        old = secret if operation == "UPDATE" else None
        assert evaluate(body, secret, old=old, operation=operation, username=controller) == []
        for username in NOT_CONTROLLERS:
            assert evaluate(body, secret, old=old, operation=operation, username=username), username


@pytest.mark.parametrize(
    "secret",
    [
        ssh_secret(TRAINJOB_OWNER, kind="Opaque"),  # any other type
        ssh_secret(TRAINJOB_OWNER, kind="kubernetes.io/dockerconfigjson"),
        ssh_secret(),  # no owner
        ssh_secret({**TRAINJOB_OWNER, "controller": False}),
        ssh_secret(owner("batch/v1", "Job")),  # a Job makes no key
        ssh_secret(owner("example.com/v1", "TrainJob")),
    ],
)
def test_a_controller_writes_no_other_secret(example: Rendered, secret: dict[str, Any]) -> None:
    body = policy(example, secret_refs.STORE_POLICY)
    assert evaluate(body, secret, username=TRAINER)


# --- 3. Kubernetes' controllers in either credential mode ----------------------------------------


@pytest.mark.parametrize("controller", [JOB_CONTROLLER, CONTROLLER_MANAGER])
def test_the_controller_manager_is_the_platform_in_either_credential_mode(
    example: Rendered, controller: str
) -> None:
    suspend = policy(example, gpus.SUSPEND_POLICY)
    (variable,) = suspend["spec"]["variables"]
    check = compile_expression(variable["expression"])
    request = {"userInfo": {"username": controller}}
    from celpy.adapter import json_to_cel

    assert bool(check.evaluate({"request": json_to_cel(request)}))
    # its pods of a Job pass the queue and are not re-checked for the team's labels
    assert evaluate(policy(example, gpus.QUEUE_POLICY), _job_pod(), username=controller) == []
    labels = policy(example, "gpuplane-common-labels")
    unlabelled = _job_pod()
    unlabelled["metadata"]["labels"] = {}
    ns = namespace(example, "llm-train")
    assert evaluate(labels, unlabelled, namespace=ns, username=controller) == []
    assert evaluate(labels, unlabelled, namespace=ns, username=ALICE)
    # the CronJob controller's Job (Kueue's webhook suspends it; the controller may create it)
    cron_job = kueue_webhook(sample("sample-job.yaml"))
    assert evaluate(suspend, cron_job, username=controller) == []


@pytest.mark.parametrize(
    "username",
    [
        "system:kube-controller-manager-x",
        "oidc:system:kube-controller-manager",
        "system:kube-scheduler",
        "system:node:gpu-node-7",
    ],
)
def test_only_the_controller_manager_itself_is_the_platform(
    example: Rendered, username: str
) -> None:
    body = policy(example, gpus.QUEUE_POLICY)
    assert evaluate(body, _job_pod(), username=username)


# --- 4. updates that leave the spec alone ---------------------------------------------------------


def legacy_pod() -> dict[str, Any]:
    """A pod admitted before the policies (or the team's image list) narrowed: every check of the
    image, host and secret policies would refuse it now. Kueue and the Job controller hold
    finalizers on it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "legacy",
            "namespace": "llm-train",
            "labels": dict(LABELS),
            "finalizers": ["batch.kubernetes.io/job-tracking", "kueue.x-k8s.io/managed"],
            "ownerReferences": [owner("batch/v1", "Job")],
        },
        "spec": {
            "hostNetwork": True,
            "nodeName": "gpu-node-7",
            "containers": [
                {
                    "name": "main",
                    "image": "docker.io/library/busybox:1",
                    "securityContext": {"privileged": True},
                    "env": [{"name": "HF_TOKEN", "value": "hf_" + "a1B2" * 9}],
                    "resources": copy.deepcopy(GPU),
                }
            ],
        },
    }


def _pod_update_policies(rendered: Rendered) -> list[dict[str, Any]]:
    """Every ValidatingAdmissionPolicy of the security layer bound to llm-train whose rules
    match a Pod UPDATE."""
    bound = set()
    for m in rendered.manifests["prod-east"]:
        if m.layer != "security" or m.kind != "ValidatingAdmissionPolicyBinding":
            continue
        selector = m.body["spec"].get("matchResources", {}).get("namespaceSelector")
        if selector is None:
            bound.add(m.body["spec"]["policyName"])
            continue
        (expr,) = selector["matchExpressions"]
        if "llm-train" in expr["values"]:
            bound.add(m.body["spec"]["policyName"])
    found = []
    for m in rendered.manifests["prod-east"]:
        if m.kind != "ValidatingAdmissionPolicy" or m.name not in bound:
            continue
        for rule in m.body["spec"]["matchConstraints"]["resourceRules"]:
            pods = "" in rule["apiGroups"] and "pods" in rule["resources"]
            if pods and ("UPDATE" in rule["operations"] or "*" in rule["operations"]):
                found.append(dict(m.body))
                break
    return found


@pytest.mark.parametrize("controller", [KUEUE_CONTROLLER, JOB_CONTROLLER, CONTROLLER_MANAGER])
def test_a_controller_removing_its_finalizer_is_admitted_by_every_pod_policy(
    example: Rendered, controller: str
) -> None:
    found = _pod_update_policies(example)
    names = {body["metadata"]["name"] for body in found}
    assert {images.policy_name(example.platform.teams["llm"]), host.policy_name("baseline")} <= (
        names
    )
    assert secret_refs.ENV_POLICY in names
    ns = namespace(example, "llm-train")
    old = legacy_pod()
    for finalizer in old["metadata"]["finalizers"]:
        new = copy.deepcopy(old)
        new["metadata"]["finalizers"].remove(finalizer)
        for body in found:
            denied = evaluate(
                body, new, old=old, operation="UPDATE", username=controller, namespace=ns
            )
            assert denied == [], (body["metadata"]["name"], finalizer, denied)


@pytest.mark.parametrize(
    "name",
    ["gpuplane-images-llm", "gpuplane-host-baseline", secret_refs.ENV_POLICY],
)
def test_an_update_that_changes_the_spec_is_checked_in_full(example: Rendered, name: str) -> None:
    body = policy(example, name)
    old = legacy_pod()
    # a team member relabelling the legacy pod: nothing that runs changes
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"]["x"] = "y"
    assert evaluate(body, relabelled, old=old, operation="UPDATE", username=ALICE) == []
    # but a new image (a pod's image is mutable) is checked, with every other field of the spec
    changed = copy.deepcopy(old)
    changed["spec"]["containers"][0]["image"] = "docker.io/library/busybox:2"
    assert evaluate(body, changed, old=old, operation="UPDATE", username=ALICE)
    assert evaluate(body, changed, old=old, operation="UPDATE", username=KUEUE_CONTROLLER)
    # and so is the same pod created afresh
    assert evaluate(body, old, username=ALICE)


def test_a_workload_template_is_checked_when_it_changes_not_when_its_labels_do(
    example: Rendered,
) -> None:
    body = policy(example, "gpuplane-images-llm")
    job = sample("sample-job.yaml")
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "docker.io/evil/miner:1"
    relabelled = copy.deepcopy(job)
    relabelled["metadata"]["labels"]["x"] = "y"
    assert evaluate(body, relabelled, old=job, operation="UPDATE") == []
    fixed = copy.deepcopy(job)
    fixed["spec"]["template"]["spec"]["containers"][0]["image"] = IMAGE
    assert evaluate(body, fixed, old=job, operation="UPDATE") == []
    assert evaluate(body, job, old=fixed, operation="UPDATE")


def test_an_ephemeral_container_is_a_spec_change(example: Rendered) -> None:
    body = policy(example, "gpuplane-images-llm")
    old = _job_pod()
    debugged = copy.deepcopy(old)
    debugged["spec"]["ephemeralContainers"] = [
        {"name": "debug", "image": "docker.io/library/busybox:1"}
    ]
    assert evaluate(body, debugged, old=old, operation="UPDATE", username=ALICE)


def test_an_external_secret_update_that_keeps_its_spec_is_admitted(example: Rendered) -> None:
    body = policy(example, secret_refs.EXTERNAL_SECRET_POLICY)
    old: dict[str, Any] = {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": "s", "namespace": "llm-train", "finalizers": ["x"]},
        "spec": {"secretStoreRef": {"kind": "ClusterSecretStore", "name": "global"}},
    }
    assert evaluate(body, old)
    kept = copy.deepcopy(old)
    kept["metadata"]["finalizers"] = []
    assert evaluate(body, kept, old=old, operation="UPDATE") == []
    moved = copy.deepcopy(old)
    moved["spec"]["secretStoreRef"]["name"] = "other"
    assert evaluate(body, moved, old=old, operation="UPDATE")
