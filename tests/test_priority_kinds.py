"""The security layer's kinds follow the integrations the cluster's Kueue enables, and the
priority policy, `fit` and the rendered CEL agree on every kind Kueue manages.

Expectations come from Kueue v0.19.2's source, written out here and in `tests/admission_cel.py`
(`SUSPEND_FIELD`, `GATED_PARENTS`): each integration's GroupVersionKind (`gvk` in
pkg/controller/jobs/*/*_controller.go) and the field its `Suspend()` sets; the pod webhook's
`FindAncestorJobManagedByKueue`, which matches an ownerReference by its exact apiVersion and
kind; and the webhooks that copy a Deployment's or LeaderWorkerSet's priority label onto its
pod templates. What `fit`'s admission chain makes of each object (its admission-policies step
evaluates the rendered ValidatingAdmissionPolicies, its mutate step the MutatingAdmissionPolicies)
is compared with the rendered policy's CEL evaluated on the same object by an independent
evaluator (`tests/admission_cel.py`, cel-python), on the example platform's 1.33 cluster
(ValidatingAdmissionPolicy) and on a copy at 1.36 (MutatingAdmissionPolicy).

A cluster's Kueue manages the kinds of the operators it runs, and the Kubeflow Training
Operator and the MPI Operator both define the MPIJob CRD (a cluster runs one): the kinds the
example's prod-east does not serve are checked on copies where team llm submits them, one with
the training operator and AppWrapper (`kubeflow`: every kind but the MPI Operator's MPIJob), one
with the MPI Operator and AppWrapper (`mpi`).

The objects are otherwise what the platform admits (team llm's labels, an image from its
registry, a TTL within its retention, a pod securityContext its inference namespace's
`restricted` Pod Security level takes), so that the priority policy is all that refuses them.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.answer.result import FITS, NEVER
from renderer.admission.apiserver.gate import Refusal, Step
from renderer.commands.fit import check_fit
from renderer.layers.security import gpus
from renderer.layers.security import priority as security_priority
from renderer.layers.security.policy_parts import (
    KUEUE_KINDS,
    kueue_kinds,
    pod_owner_kinds,
    suspendable_kinds,
)
from renderer.model.integrations import KUEUE_INTEGRATIONS, enabled_frameworks
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, render_platform
from tests.admission_cel import (
    GATED_PARENTS,
    SUSPEND_FIELD,
    SUSPENDING_PARENT,
    compile_expression,
    evaluate,
    kueue_webhook,
)
from tests.admission_cel import evaluate as with_messages
from tests.conftest import (
    APPWRAPPER,
    KUBEFLOW_V1_KINDS,
    MPI_OPERATOR,
    REPO,
    SHARED_CRDS,
    TRAINING_OPERATOR,
    copy_inputs,
    render_clean,
    submits,
)

ALICE = "oidc:alice@example.com"
KUBERAY = "system:serviceaccount:kuberay-system:kuberay-operator"
CONTROLLER_MANAGER = "system:kube-controller-manager"
KUEUE_CONTROLLER = "system:serviceaccount:kueue-system:kueue-controller-manager"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TEAM = {"gpuplane.dev/team": "llm", "gpuplane.dev/cost-center": "CC-1050"}
IMAGE = "registry.example.com/llm/train:1"
LLM_PRIORITY = "prod-standard"
"""Team llm's `priority: standard` on queue prod (teams/llm.yaml): the class the policy names."""
PRIORITY_POLICY = f"ValidatingAdmissionPolicy '{security_priority.POLICY_NAME}'"
"""The chain's `Refusal.source` for the validating priority policy."""
SETS_LABEL = (
    f"MutatingAdmissionPolicy 'gpuplane-priority-llm' sets label {PRIORITY_LABEL}: {LLM_PRIORITY}"
)
"""The chain's mutate step's `changes` entry where the mutating priority policy sets the label."""
TTL = 3600
"""Within team llm's `retention.finishedJobs: 48h` (teams/llm.yaml), which the TTL policies
require of a Job, JobSet, RayJob and CronJob (docs/security.md)."""
PLATFORM_ONLY: set[str] = set()
"""Kinds no team member may create on a cluster that serves them: none of these (the team roles
grant every workload kind of a declared operator, AppWrappers included: renderer/layers/tenancy.py
`workload_kinds`); kept so that a kind the roles leave out is refused at RBAC here too."""

PLURALS = {
    ("", "Pod"): "pods",
    ("batch", "Job"): "jobs",
    ("batch", "CronJob"): "cronjobs",
    ("apps", "Deployment"): "deployments",
    ("apps", "StatefulSet"): "statefulsets",
    ("jobset.x-k8s.io", "JobSet"): "jobsets",
    ("ray.io", "RayJob"): "rayjobs",
    ("ray.io", "RayCluster"): "rayclusters",
    ("ray.io", "RayService"): "rayservices",
    ("trainer.kubeflow.org", "TrainJob"): "trainjobs",
    ("kubeflow.org", "MPIJob"): "mpijobs",
    ("kubeflow.org", "PyTorchJob"): "pytorchjobs",
    ("kubeflow.org", "TFJob"): "tfjobs",
    ("kubeflow.org", "XGBoostJob"): "xgboostjobs",
    ("kubeflow.org", "PaddleJob"): "paddlejobs",
    ("kubeflow.org", "JAXJob"): "jaxjobs",
    ("workload.codeflare.dev", "AppWrapper"): "appwrappers",
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkersets",
}
"""Each kind's resource name as its API serves it (the Kubernetes API and each project's CRD)."""


RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
"""What Pod Security's `restricted` level requires of a pod that asks nothing more (k8s.io/
pod-security-admission `policy/check_*.go`): inference namespaces enforce it."""


def _pod_spec(gpu: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    resources["limits"] = {**resources["requests"], **({"nvidia.com/gpu": 1} if gpu else {})}
    container = {
        "name": "main",
        "image": IMAGE,
        "resources": resources,
        "securityContext": copy.deepcopy(RESTRICTED_CONTAINER),
    }
    return {
        "restartPolicy": "Never",
        "securityContext": copy.deepcopy(RESTRICTED_POD),
        "containers": [container],
    }


def _template(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels or {"app": "x"})}, "spec": _pod_spec()}


def _replicas(*roles: str) -> dict[str, Any]:
    return {role: {"replicas": 1, "template": _template()} for role in roles}


def _ray_cluster() -> dict[str, Any]:
    return {"headGroupSpec": {"rayStartParams": {}, "template": _template()}}


def _job_spec(ttl: bool = False) -> dict[str, Any]:
    return {"template": _template(), **({"ttlSecondsAfterFinished": TTL} if ttl else {})}


SPECS: dict[tuple[str, str], dict[str, Any]] = {
    ("v1", "Pod"): _pod_spec(),
    ("batch/v1", "Job"): _job_spec(ttl=True),
    ("batch/v1", "CronJob"): {
        "schedule": "0 * * * *",
        "jobTemplate": {"spec": _job_spec(ttl=True)},
    },
    ("apps/v1", "Deployment"): {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "x"}},
        "template": _template(),
    },
    ("apps/v1", "StatefulSet"): {
        "replicas": 1,
        "serviceName": "x",
        "selector": {"matchLabels": {"app": "x"}},
        "template": _template(),
    },
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): {
        "replicas": 1,
        "leaderWorkerTemplate": {"size": 2, "workerTemplate": _template()},
    },
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): {
        "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": _job_spec()}}],
        "ttlSecondsAfterFinished": TTL,
    },
    ("ray.io/v1", "RayJob"): {
        "entrypoint": "python x.py",
        "rayClusterSpec": _ray_cluster(),
        # the TTL policy wants both: KubeRay honours the TTL only with shutdownAfterJobFinishes
        # (renderer/layers/security/cleanup.py)
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": TTL,
    },
    ("ray.io/v1", "RayCluster"): _ray_cluster(),
    ("ray.io/v1", "RayService"): {"rayClusterConfig": _ray_cluster()},
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {
            "numNodes": 1,
            # requests as well: the LimitRange's defaultRequest (cpu 2) would exceed the limit
            "resourcesPerNode": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
        },
    },
    ("kubeflow.org/v2beta1", "MPIJob"): {"mpiReplicaSpecs": _replicas("Launcher", "Worker")},
    ("kubeflow.org/v1", "PyTorchJob"): {"pytorchReplicaSpecs": _replicas("Master")},
    ("kubeflow.org/v1", "TFJob"): {"tfReplicaSpecs": _replicas("Worker")},
    ("kubeflow.org/v1", "XGBoostJob"): {"xgbReplicaSpecs": _replicas("Master")},
    ("kubeflow.org/v1", "PaddleJob"): {"paddleReplicaSpecs": _replicas("Worker")},
    ("kubeflow.org/v1", "JAXJob"): {"jaxReplicaSpecs": _replicas("Worker")},
    ("workload.codeflare.dev/v1beta2", "AppWrapper"): {
        "components": [{"template": {"apiVersion": "batch/v1", "kind": "Job", "spec": _job_spec()}}]
    },
}
"""One small object of every kind a gpuplane cluster's Kueue manages (`SUSPEND_FIELD`,
`GATED_PARENTS`, the pod integration) and of CronJob, at the API version Kueue's integration
is for. Serving kinds go to llm's inference namespace, the rest to its training one."""

SERVING = {"Deployment", "StatefulSet", "LeaderWorkerSet", "RayService", "Pod"}


def make(api_version: str, kind: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    ns = "llm-serve" if kind in SERVING else "llm-train"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "w", "namespace": ns, "labels": {**TEAM, **(labels or {})}},
        "spec": copy.deepcopy(SPECS[(api_version, kind)]),
    }


def _cron_labelled(obj: dict[str, Any], value: str) -> dict[str, Any]:
    """A CronJob's Jobs carry its job template's labels: that is where it names its priority."""
    obj = copy.deepcopy(obj)
    obj["spec"]["jobTemplate"]["metadata"] = {"labels": {PRIORITY_LABEL: value}}
    return obj


def labelled(obj: dict[str, Any], value: str) -> dict[str, Any]:
    if obj["kind"] == "CronJob":
        return _cron_labelled(obj, value)
    obj = copy.deepcopy(obj)
    obj["metadata"]["labels"][PRIORITY_LABEL] = value
    return obj


# --- rendered platforms ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


MPIJOB = ("kubeflow.org/v2beta1", "MPIJob")
OPERATORS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "kubeflow": ((*KUBEFLOW_V1_KINDS, "AppWrapper"), {**TRAINING_OPERATOR, **APPWRAPPER}),
    "mpi": (("MPIJob", "AppWrapper"), {**MPI_OPERATOR, **APPWRAPPER}),
}
"""What llm-train submits on each copy, and the add-ons prod-east declares for it."""
NOT_SERVED = {
    "kubeflow": {MPIJOB},
    "mpi": {("kubeflow.org/v1", kind) for kind in KUBEFLOW_V1_KINDS},
}
"""The kinds of SPECS each copy's prod-east does not serve: the other operator's."""


def _platform(factory: pytest.TempPathFactory, name: str, *, at_136: bool = False) -> Rendered:
    """The example platform, prod-east at Kubernetes 1.36 if asked (MutatingAdmissionPolicy
    v1), llm-train submitting the kinds of `OPERATORS[name]` (none for `example`)."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    root = copy_inputs(REPO, factory.mktemp(f"{name}-{at_136}") / "repo")
    if at_136:
        path = root / "clusters/prod-east.yaml"
        text = path.read_text()
        assert text.count('kubernetesVersion: "1.33"') == 1
        path.write_text(text.replace('kubernetesVersion: "1.33"', 'kubernetesVersion: "1.36"'))
    if name in OPERATORS:
        kinds, addons = OPERATORS[name]
        submits(root, "llm-train", kinds, addons)
    rendered = render_platform(root, OutputValidator([SHARED_CRDS]))
    assert not [d for d in rendered.diagnostics if d.severity.value == "error"], (
        rendered.diagnostics
    )
    return rendered


@pytest.fixture(scope="module")
def at_136(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The example platform with prod-east at Kubernetes 1.36 (MutatingAdmissionPolicy v1)."""
    return _platform(tmp_path_factory, "example", at_136=True)


@pytest.fixture(scope="module")
def kubeflow(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _platform(tmp_path_factory, "kubeflow")


@pytest.fixture(scope="module")
def mpi(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _platform(tmp_path_factory, "mpi")


@pytest.fixture(scope="module")
def kubeflow_136(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _platform(tmp_path_factory, "kubeflow", at_136=True)


@pytest.fixture(scope="module")
def mpi_136(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _platform(tmp_path_factory, "mpi", at_136=True)


def _serving(
    request: pytest.FixtureRequest, api_version: str, kind: str, suffix: str = ""
) -> Rendered:
    """The copy whose prod-east serves the kind: `mpi` for the MPI Operator's MPIJob, else
    `kubeflow` (which serves every other kind of SPECS)."""
    name = "mpi" if (api_version, kind) == MPIJOB else "kubeflow"
    rendered: Rendered = request.getfixturevalue(name + suffix)
    return rendered


def _security(rendered: Rendered, kind: str, name: str, cluster: str = "prod-east") -> Any:
    for m in rendered.manifests[cluster]:
        if m.layer == "security" and m.kind == kind and m.name == name:
            return copy.deepcopy(dict(m.body))
    raise AssertionError(f"no {kind} {name} on {cluster}")


def _namespace(rendered: Rendered, name: str, cluster: str = "prod-east") -> dict[str, Any]:
    for m in rendered.manifests[cluster]:
        if m.kind == "Namespace" and m.name == name:
            return copy.deepcopy(dict(m.body))
    raise AssertionError(name)


def _matches(body: dict[str, Any], obj: dict[str, Any], operation: str = "CREATE") -> bool:
    """The policy's resourceRules take this object's resource and operation."""
    group = obj["apiVersion"].rpartition("/")[0]
    plural = PLURALS[(group, obj["kind"])]
    return any(
        group in rule["apiGroups"]
        and plural in rule["resources"]
        and operation in rule["operations"]
        for rule in body["spec"]["matchConstraints"]["resourceRules"]
    )


def _conditions_hold(body: dict[str, Any], obj: dict[str, Any]) -> bool:
    """A MutatingAdmissionPolicy's matchConditions, evaluated as the API server does."""
    from celpy.adapter import json_to_cel

    activation = {
        "object": json_to_cel(obj),
        "request": json_to_cel({"operation": "CREATE", "userInfo": {"username": ALICE}}),
    }
    return all(
        bool(compile_expression(c["expression"]).evaluate(activation))
        for c in body["spec"]["matchConditions"]
    )


def _fit(rendered: Rendered, obj: dict[str, Any], tmp_path: Path) -> Any:
    path = tmp_path / f"{obj['kind'].lower()}.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return check_fit(rendered.platform, path)


COVERED = sorted(SPECS)


# --- one source for the kinds -----------------------------------------------------------------


def test_every_kueue_integration_has_one_kind_and_they_agree() -> None:
    by_framework = {k.framework: k for k in KUEUE_KINDS}
    assert len(by_framework) == len(KUEUE_KINDS)
    assert set(by_framework) == {i.framework for i in KUEUE_INTEGRATIONS}
    for integration in KUEUE_INTEGRATIONS:
        kind = by_framework[integration.framework]
        assert (kind.group, kind.kind, kind.versions) == (
            integration.group,
            integration.kind,
            integration.versions,
        )


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_the_kinds_kueue_suspends_are_kueues_at_the_field_its_suspend_sets(
    request: pytest.FixtureRequest, name: str
) -> None:
    rendered: Rendered = request.getfixturevalue(name)
    cluster = rendered.platform.clusters["prod-east"]
    assert set(enabled_frameworks(cluster)) >= {k.framework for k in kueue_kinds(cluster)}
    found = {}
    for kind in suspendable_kinds(cluster):
        assert kind.suspend is not None
        found[(kind.group, kind.kind)] = tuple(kind.suspend.split("."))
    expected = {
        (gv.rpartition("/")[0], k): path
        for (gv, k), path in SUSPEND_FIELD.items()
        if (gv, k) not in NOT_SERVED[name]
    }
    assert found == expected
    for api_version, kind_name in (*SUSPEND_FIELD, *GATED_PARENTS, ("v1", "Pod")):
        group, _, version = api_version.rpartition("/")
        (kind,) = [k for k in KUEUE_KINDS if (k.group, k.kind) == (group, kind_name)]
        assert not kind.versions or version in kind.versions
        # an ownerReference is Kueue's kind only at its integration's exact version
        assert kind.kueue_version == version, kind_name
    # the serving kinds are not suspended: their pods are gated
    gated = {(gv.rpartition("/")[0], k) for gv, k in GATED_PARENTS}
    managed = {(k.group, k.kind) for k in kueue_kinds(cluster)}
    assert gated <= managed
    assert not gated & set(found)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_the_pods_kueue_leaves_ungated_are_exactly_those_of_its_pod_owning_jobs(
    request: pytest.FixtureRequest, example: Rendered, name: str
) -> None:
    """From Kueue's and the operators' source: the Job controller, KubeRay (RayCluster), the
    training operator (v1 jobs), the MPI Operator (v2beta1 workers) and the AppWrapper
    controller create pods owned by the job itself; JobSets, RayJobs, RayServices and
    TrainJobs create them through a Job or a RayCluster. Each only where its operator runs."""
    rendered: Rendered = request.getfixturevalue(name)
    cluster = rendered.platform.clusters["prod-east"]
    owners = {(k.group, k.kind) for k in pod_owner_kinds(cluster)}
    everywhere = {("batch", "Job"), ("ray.io", "RayCluster")}
    assert owners == everywhere | {
        (gv.rpartition("/")[0], kind)
        for gv, kind in (
            MPIJOB,
            *(("kubeflow.org/v1", k) for k in KUBEFLOW_V1_KINDS),
            ("workload.codeflare.dev/v1beta2", "AppWrapper"),
        )
        if (gv, kind) not in NOT_SERVED[name]
    }
    # the example's prod-east runs none of those operators (KubeRay is in the example)
    example_cluster = example.platform.clusters["prod-east"]
    assert {(k.group, k.kind) for k in pod_owner_kinds(example_cluster)} == everywhere


# --- GPUs only through Kueue, for the new integrations -----------------------------------------


def _gpu_pod(owner: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    pod = make("v1", "Pod", {PRIORITY_LABEL: LLM_PRIORITY})
    pod["metadata"]["namespace"] = "llm-train"
    pod["spec"] = _pod_spec(gpu=True)
    if annotations:
        pod["metadata"]["annotations"] = dict(annotations)
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [
            {**owner, "name": "x", "uid": "1", "controller": True}
        ]
    return pod


@pytest.mark.parametrize(("api_version", "kind"), sorted(SUSPEND_FIELD))
def test_a_controller_creates_the_pods_of_a_kueue_job_ungated_only_at_its_exact_version(
    request: pytest.FixtureRequest, api_version: str, kind: str
) -> None:
    example = _serving(request, api_version, kind)
    body = _security(example, "ValidatingAdmissionPolicy", gpus.QUEUE_POLICY)
    cluster = example.platform.clusters["prod-east"]
    owns = (api_version.rpartition("/")[0], kind) in {
        (k.group, k.kind) for k in pod_owner_kinds(cluster)
    }
    pod = kueue_webhook(_gpu_pod({"apiVersion": api_version, "kind": kind}))
    assert "schedulingGates" not in pod["spec"]  # Kueue's webhook skips it
    allowed = evaluate(body, pod, username=KUBERAY) == []
    assert allowed is owns, (api_version, kind)
    # from a team, never
    assert evaluate(body, pod, username=ALICE)
    # the same kind at another version is no job Kueue manages: its pods are gated, not exempt
    # (for the MPIJob: the training operator's kubeflow.org/v1 one)
    group = api_version.rpartition("/")[0]
    other = "kubeflow.org/v1" if kind == "MPIJob" else f"{group}/v0alpha1"
    stray = _gpu_pod({"apiVersion": other, "kind": kind})
    assert evaluate(body, stray, username=KUBERAY)
    assert evaluate(body, kueue_webhook(stray), username=KUBERAY) == []


def test_a_leaderworkersets_pods_pass_gated_by_kueue_and_not_otherwise(
    example: Rendered,
) -> None:
    body = _security(example, "ValidatingAdmissionPolicy", gpus.QUEUE_POLICY)
    lws = kueue_webhook(make("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"))
    template = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    annotations = template["metadata"]["annotations"]
    assert annotations[SUSPENDING_PARENT] == "leaderworkerset"
    # the StatefulSet controller makes the worker pods from the template
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet"}
    pod = kueue_webhook(_gpu_pod(sts, **annotations))
    assert evaluate(body, pod, username=CONTROLLER_MANAGER) == []
    # a StatefulSet's pod that no Kueue webhook annotated, created ungated: refused
    assert evaluate(body, _gpu_pod(sts), username=CONTROLLER_MANAGER)


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("ray.io/v1", "RayService"), ("workload.codeflare.dev/v1beta2", "AppWrapper")],
)
def test_a_rayservice_or_appwrapper_is_created_suspended_and_only_the_platform_lets_it_go(
    kubeflow: Rendered, api_version: str, kind: str
) -> None:
    example = kubeflow  # prod-east runs KubeRay and AppWrapper
    body = _security(example, "ValidatingAdmissionPolicy", gpus.SUSPEND_POLICY)
    ns = _namespace(example, "llm-train")
    obj = make(api_version, kind, {PRIORITY_LABEL: LLM_PRIORITY})
    waiting = kueue_webhook(obj)
    assert evaluate(body, waiting, username=ALICE, namespace=ns) == []
    *path, last = SUSPEND_FIELD[(api_version, kind)]
    skipped = copy.deepcopy(obj)
    skipped["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "controller": True}
    ]
    parent = skipped
    for field in path:
        parent = parent.setdefault(field, {})
    parent[last] = False
    skipped = kueue_webhook(skipped)
    assert evaluate(body, skipped, username=ALICE, namespace=ns)
    running = copy.deepcopy(waiting)
    parent = running
    for field in path:
        parent = parent[field]
    parent[last] = False
    kwargs: dict[str, Any] = {"operation": "UPDATE", "old": waiting, "namespace": ns}
    assert evaluate(body, running, username=ALICE, **kwargs)
    assert evaluate(body, running, username=KUEUE_CONTROLLER, **kwargs) == []


def test_a_training_operator_v1_mpijob_is_not_held_to_suspension(
    kubeflow: Rendered, mpi: Rendered
) -> None:
    """Kueue v0.19 integrates the MPI Operator's v2beta1 MPIJob only: it never suspends a
    kubeflow.org/v1 one, so requiring it suspended would strand it. Where the training operator
    runs (serving the v1 MPIJob), the cluster's Kueue has no MPIJob integration and the policy
    takes no MPIJob at all; where the MPI Operator runs, its resource rule takes every version
    of mpijobs and its CEL skips v1."""
    v1 = make("kubeflow.org/v2beta1", "MPIJob")
    v1["apiVersion"] = "kubeflow.org/v1"
    assert not _matches(_security(kubeflow, "ValidatingAdmissionPolicy", gpus.SUSPEND_POLICY), v1)
    body = _security(mpi, "ValidatingAdmissionPolicy", gpus.SUSPEND_POLICY)
    assert _matches(body, v1)  # the resource rule takes every version ...
    assert evaluate(body, kueue_webhook(v1), username=ALICE) == []  # ... the CEL skips v1
    v2 = make("kubeflow.org/v2beta1", "MPIJob")
    assert evaluate(body, v2, username=ALICE)  # unsuspended past Kueue
    assert evaluate(body, kueue_webhook(v2), username=ALICE) == []


# --- priorities: the policy and fit agree on every kind ---------------------------------------


def test_gpuplane_renders_no_default_workload_priority_class(example: Rendered) -> None:
    """Kueue's own priority defaulting (`ApplyDefaultWorkloadPriorityClass`) applies only a
    WorkloadPriorityClass named `default`: none exists, so the policy's label is the only one."""
    for cluster, manifests in example.manifests.items():
        names = {m.name for m in manifests if m.kind == "WorkloadPriorityClass"}
        assert names, cluster
        assert "default" not in names, cluster


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_the_policy_covers_exactly_the_kinds_kueue_manages_and_cronjobs(
    request: pytest.FixtureRequest, name: str
) -> None:
    example: Rendered = request.getfixturevalue(name)
    at_136: Rendered = request.getfixturevalue(f"{name}_136")
    cluster = example.platform.clusters["prod-east"]
    covered = {(k.group, k.kind) for k in security_priority.priority_kinds(cluster)}
    served = [(gv, k) for gv, k in SPECS if (gv, k) not in NOT_SERVED[name]]
    expected = {(gv.rpartition("/")[0], k) for gv, k in served}
    assert covered == expected
    validating = _security(example, "ValidatingAdmissionPolicy", security_priority.POLICY_NAME)
    mutating = _security(at_136, "MutatingAdmissionPolicy", "gpuplane-priority-llm")
    for api_version, kind in served:
        obj = make(api_version, kind)
        assert _matches(validating, obj), kind
        assert _matches(mutating, obj) is (kind != "CronJob"), kind


def _refusals(result: Any, kind: str) -> list[tuple[Step, Refusal]]:
    """The chain's refusals, each with its step; for a kind only the platform team may create,
    less RBAC's (checked here: the one that kind always gets)."""
    found = [(outcome.step, refusal) for outcome, refusal in result.refusals]
    if kind in PLATFORM_ONLY:
        rbac = [refusal for step, refusal in found if step is Step.RBAC]
        assert [r.source for r in rbac] == ["RBAC"], found
        found = [(step, refusal) for step, refusal in found if step is not Step.RBAC]
    return found


def _mutate_changes(result: Any) -> tuple[str, ...]:
    (mutate,) = [outcome for outcome in result.chain if outcome.step is Step.MUTATE]
    return tuple(mutate.changes)


def _forbidden(api_version: str, kind: str) -> str:
    """The start of the API server's Forbidden for the object `w`:
    `<resource>.<group> "<name>" is forbidden: ` (k8s.io/apimachinery `NewForbidden`)."""
    group = api_version.rpartition("/")[0]
    resource = PLURALS[(group, kind)] + (f".{group}" if group else "")
    return f'{resource} "w" is forbidden: '


@pytest.mark.parametrize(("api_version", "kind"), COVERED)
def test_below_136_fit_and_the_policy_refuse_an_unlabelled_workload_alike(
    request: pytest.FixtureRequest, tmp_path: Path, api_version: str, kind: str
) -> None:
    example = _serving(request, api_version, kind)
    body = _security(example, "ValidatingAdmissionPolicy", security_priority.POLICY_NAME)
    obj = make(api_version, kind)
    ns = _namespace(example, obj["metadata"]["namespace"])
    denied = with_messages(body, kueue_webhook(obj), username=ALICE, namespace=ns)
    assert len(denied) == 1, denied
    assert f"{PRIORITY_LABEL}: {LLM_PRIORITY}" in denied[0]
    result = _fit(example, obj, tmp_path)
    # the chain's admission-policies step refuses it, alone, in the API server's words
    ((step, refusal),) = _refusals(result, kind)
    assert (result.verdict, step, refusal.source) == (NEVER, Step.POLICIES, PRIORITY_POLICY)
    assert refusal.message.startswith(_forbidden(api_version, kind))
    assert refusal.message.endswith(
        "ValidatingAdmissionPolicy 'gpuplane-priority' with binding "
        f"'gpuplane-priority' denied request: {denied[0]}"
    )
    assert f"{PRIORITY_LABEL}: {LLM_PRIORITY}" in refusal.fix
    # ... and Kueue's answer goes on as if the object named the team's priority
    assert result.kueue_verdict == FITS, result.summary
    assert "admission-policies); as if changed, Kueue: fits: " in result.summary
    assert result.priority == LLM_PRIORITY
    assert result.priority_source is not None
    assert result.priority_source.startswith(f"as if labelled {PRIORITY_LABEL}: {LLM_PRIORITY}")
    # labelled with the team's class, the policy admits it, and so does the chain
    named = labelled(obj, LLM_PRIORITY)
    assert evaluate(body, kueue_webhook(named), username=ALICE, namespace=ns) == []
    result = _fit(example, named, tmp_path)
    assert _refusals(result, kind) == [], result.summary
    if kind not in PLATFORM_ONLY:
        assert result.verdict == result.kueue_verdict == FITS, result.summary
    assert (result.priority, result.priority_source) == (LLM_PRIORITY, f"label {PRIORITY_LABEL}")
    # another queue's class: refused by both, with the same message; Kueue's answer goes on
    # with the team's own class
    other = labelled(obj, "staging-release-candidate")
    (foreign,) = with_messages(body, kueue_webhook(other), username=ALICE, namespace=ns)
    result = _fit(example, other, tmp_path)
    ((step, refusal),) = _refusals(result, kind)
    assert (result.verdict, step, refusal.source) == (NEVER, Step.POLICIES, PRIORITY_POLICY)
    assert refusal.message.startswith(_forbidden(api_version, kind))
    assert refusal.message.endswith(f"with binding 'gpuplane-priority' denied request: {foreign}")
    assert (result.kueue_verdict, result.priority) == (FITS, LLM_PRIORITY), result.summary
    assert result.priority_source is not None
    assert result.priority_source.startswith(f"as if labelled {PRIORITY_LABEL}: {LLM_PRIORITY}")


@pytest.mark.parametrize(("api_version", "kind"), COVERED)
def test_from_136_fit_says_the_mutating_policy_sets_the_label_it_sets(
    request: pytest.FixtureRequest, tmp_path: Path, api_version: str, kind: str
) -> None:
    at_136 = _serving(request, api_version, kind, "_136")
    mutating = _security(at_136, "MutatingAdmissionPolicy", "gpuplane-priority-llm")
    validating = _security(at_136, "ValidatingAdmissionPolicy", security_priority.POLICY_NAME)
    (mutation,) = mutating["spec"]["mutations"]
    expression = mutation["applyConfiguration"]["expression"]
    # celpy parses Kubernetes' typed Object{...} construction but cannot build it: read the
    # value it sets from the expression
    compile_expression(expression)
    (value,) = re.findall(rf'"{re.escape(PRIORITY_LABEL)}": "([^"]+)"', expression)
    assert value == LLM_PRIORITY
    obj = make(api_version, kind)
    ns = _namespace(at_136, obj["metadata"]["namespace"])
    # the validating policy no longer refuses an unlabelled workload
    assert evaluate(validating, kueue_webhook(obj), username=ALICE, namespace=ns) == []
    result = _fit(at_136, obj, tmp_path)
    assert _refusals(result, kind) == [], result.summary
    if kind not in PLATFORM_ONLY:
        assert result.verdict == result.kueue_verdict == FITS, result.summary
    assert result.priority == LLM_PRIORITY
    assert result.priority_source is not None
    assert "MutatingAdmissionPolicy gpuplane-priority-llm" in result.priority_source
    if kind == "CronJob":
        # the policy's rules do not take CronJobs: the CronJob controller creates Jobs without
        # a controller Kueue manages, and the policy sets each
        assert not _matches(mutating, obj)
        assert SETS_LABEL not in _mutate_changes(result)
        job = make("batch/v1", "Job")
        job["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "CronJob", "name": "w", "uid": "1"}
        ]
        job["metadata"]["ownerReferences"][0]["controller"] = True
        assert _conditions_hold(mutating, job)
        assert "each Job" in result.priority_source
        return
    # the chain's mutate step set the label on the object itself, as the policy's conditions
    # (evaluated on their own) say it does
    assert _matches(mutating, obj) and _conditions_hold(mutating, obj), kind
    assert SETS_LABEL in _mutate_changes(result)
    # where the file names the class, the policy leaves it, and fit says it is the file's
    named = labelled(obj, LLM_PRIORITY)
    assert not _conditions_hold(mutating, named), kind
    result = _fit(at_136, named, tmp_path)
    assert SETS_LABEL not in _mutate_changes(result)
    assert (result.priority, result.priority_source) == (LLM_PRIORITY, f"label {PRIORITY_LABEL}")


NO_PRIORITY = "no priority label or priorityClassName: Kueue's default 0"
"""fit's priority source for a workload that reaches Kueue with neither (`jobframework.
ExtractPriority`: 0, as gpuplane renders no `default` WorkloadPriorityClass)."""


def _left_alone(result: Any) -> None:
    """fit's answer for an object neither priority policy touches: no refusal of the
    validating one, no label set by the mutating one, and the priority Kueue would then give."""
    assert not [r for _, r in result.refusals if r.source == PRIORITY_POLICY], result.summary
    assert not [c for c in _mutate_changes(result) if PRIORITY_LABEL in c], result.chain
    assert (result.priority, result.priority_value) == (None, 0), result.priority_source
    assert result.priority_source is not None
    assert result.priority_source.startswith(NO_PRIORITY)


def test_objects_kueue_does_not_make_a_workload_of_are_left_alone(
    example: Rendered, at_136: Rendered, tmp_path: Path
) -> None:
    """A Deployment's or a Job's pods, a JobSet's Jobs, a RayJob's RayCluster: Kueue admits
    their parent, whose priority they take; neither form touches them, and fit, which
    evaluates both in its chain, neither refuses them for want of a label nor claims the
    policy gives them the team's priority (a pod copied from a Deployment, say)."""
    validating = _security(example, "ValidatingAdmissionPolicy", security_priority.POLICY_NAME)
    mutating = _security(at_136, "MutatingAdmissionPolicy", "gpuplane-priority-llm")
    children = [
        ("v1", "Pod", {"apiVersion": "apps/v1", "kind": "ReplicaSet"}),
        ("v1", "Pod", {"apiVersion": "batch/v1", "kind": "Job"}),
        ("batch/v1", "Job", {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}),
        ("ray.io/v1", "RayCluster", {"apiVersion": "ray.io/v1", "kind": "RayJob"}),
        ("ray.io/v1", "RayCluster", {"apiVersion": "ray.io/v1", "kind": "RayService"}),
    ]
    for api_version, kind, owner in children:
        obj = make(api_version, kind)
        obj["metadata"]["ownerReferences"] = [
            {**owner, "name": "p", "uid": "1", "controller": True}
        ]
        ns = _namespace(example, obj["metadata"]["namespace"])
        # even from a team (an ownerReference is client-set: other policies hold that)
        assert evaluate(validating, obj, username=ALICE, namespace=ns) == [], (kind, owner)
        assert not _conditions_hold(mutating, obj), (kind, owner)
        _left_alone(_fit(example, obj, tmp_path))
        _left_alone(_fit(at_136, obj, tmp_path))
    # and a pod with no controller is a workload of its own
    assert _conditions_hold(mutating, make("v1", "Pod"))


def test_a_kind_kueue_does_not_manage_is_not_covered(
    kubeflow: Rendered, mpi: Rendered, tmp_path: Path
) -> None:
    """A kubeflow.org/v1 MPIJob (no Kueue integration in v0.19), on a cluster whose training
    operator serves it, is admitted pod by pod: the policy does not refuse it, and fit does not
    claim it does. Where the MPI Operator runs instead, the policy's rule takes mpijobs at every
    version, and its CEL lets a v1 one by all the same."""
    example = kubeflow
    validating = _security(example, "ValidatingAdmissionPolicy", security_priority.POLICY_NAME)
    v1 = make("kubeflow.org/v2beta1", "MPIJob")
    v1["apiVersion"] = "kubeflow.org/v1"
    ns = _namespace(example, "llm-train")
    assert not _matches(validating, v1)
    with_mpi = _security(mpi, "ValidatingAdmissionPolicy", security_priority.POLICY_NAME)
    assert _matches(with_mpi, v1)
    assert evaluate(with_mpi, v1, username=ALICE, namespace=ns) == []
    cluster = example.platform.clusters["prod-east"]
    assert security_priority.covered_kind(cluster, "kubeflow.org/v1", "MPIJob") is None
    assert security_priority.covered_kind(cluster, "apps/v1", "ReplicaSet") is None
    result = _fit(example, v1, tmp_path)
    assert result.integration == "pod", result.summary
    _left_alone(result)
