"""Attacks on the security layer's admission policies by a team lead who edits only
`teams/<own-team>.yaml` (or adds a team file). Each ends in a finding on that file, or in
rendered policies that still refuse what the attack wanted through (evaluated with cel-python)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from renderer.pipeline import Rendered
from tests.admission_cel import evaluate, kueue_webhook
from tests.conftest import REPO, TRAINING_OPERATOR, copy_inputs, submits
from tests.red_team.harness import Attempt, errors, refused_on

TEAM_FILE = "teams/llm.yaml"


def _policy(rendered: Rendered, cluster: str, name: str) -> dict[str, Any]:
    for manifest in rendered.manifests[cluster]:
        if manifest.kind == "ValidatingAdmissionPolicy" and manifest.name == name:
            return dict(manifest.body)
    raise AssertionError(f"{name} not rendered on {cluster}")


def _bound(rendered: Rendered, cluster: str, name: str) -> list[str]:
    for manifest in rendered.manifests[cluster]:
        if manifest.kind == "ValidatingAdmissionPolicyBinding" and manifest.name == name:
            (expression,) = manifest.body["spec"]["matchResources"]["namespaceSelector"][
                "matchExpressions"
            ]
            return list(expression["values"])
    return []


def _pod(image: str, namespace: str = "llm-train", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace, "labels": {}},
        "spec": {"containers": [{"name": "c", "image": image}], **spec},
    }


def test_a_quote_in_an_image_prefix_does_not_open_the_policy(attempt: Attempt) -> None:
    """`registry.example.com/x" || true || "/`: were it pasted into the CEL, every image would pass."""
    attempt.edit(
        TEAM_FILE,
        "    - registry.example.com/llm/\n",
        "    - 'registry.example.com/x\"||true||\"/'\n",
    )
    rendered = attempt.render()
    if errors(rendered.diagnostics):
        refused_on(rendered.diagnostics, TEAM_FILE, errors(rendered.diagnostics)[0].rule)
        return
    policy = _policy(rendered, "prod-east", "gpuplane-images-llm")
    assert evaluate(policy, _pod("docker.io/evil/miner:1"))
    assert evaluate(policy, _pod('registry.example.com/x"||true||"/a')) == []


def test_a_prefix_that_ends_inside_a_host_name_is_refused(attempt: Attempt) -> None:
    """`registry.example.com` would also match `registry.example.com.evil.io/`."""
    attempt.edit(TEAM_FILE, "    - registry.example.com/llm/\n", "    - registry.example.com\n")
    found = attempt.findings()
    assert errors(found)
    assert {d.at.file for d in errors(found)} == {TEAM_FILE}


def test_a_prefix_without_a_trailing_slash_matches_only_that_repository(attempt: Attempt) -> None:
    attempt.edit(TEAM_FILE, "    - registry.example.com/llm/\n", "    - registry.example.com/llm\n")
    rendered = attempt.render()
    if errors(rendered.diagnostics):
        assert {d.at.file for d in errors(rendered.diagnostics)} == {TEAM_FILE}
        return
    policy = _policy(rendered, "prod-east", "gpuplane-images-llm")
    assert evaluate(policy, _pod("registry.example.com/llm-evil/miner:1"))
    assert evaluate(policy, _pod("registry.example.com/llm:1")) == []


def test_dropping_images_allows_no_image_rather_than_every_image(attempt: Attempt) -> None:
    team = attempt.team("llm")
    del team["spec"]["images"]
    attempt.save_team("llm", team)
    rendered = attempt.render()
    if errors(rendered.diagnostics):
        assert {d.at.file for d in errors(rendered.diagnostics)} == {TEAM_FILE}
        return
    policy = _policy(rendered, "prod-east", "gpuplane-images-llm")
    assert evaluate(policy, _pod("registry.example.com/llm/train:1"))
    assert evaluate(policy, _pod("busybox"))


def test_a_new_namespace_is_bound_by_every_lock(attempt: Attempt) -> None:
    """A namespace the team adds is held by the host, GPU, label and image policies at once (a
    baseline one, in place of its notebooks namespace: one namespace per purpose)."""
    attempt.edit(
        TEAM_FILE,
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: llm-scratch, cluster: prod-east, purpose: notebooks}\n",
    )
    rendered = attempt.render()
    assert not errors(rendered.diagnostics), errors(rendered.diagnostics)
    for name in (
        "gpuplane-host-baseline",
        "gpuplane-gpu-queue",
        "gpuplane-queue-suspend",
        "gpuplane-common-labels",
        "gpuplane-images-llm",
        "gpuplane-priority",
        "gpuplane-scheduling-llm",
        "gpuplane-services",
    ):
        assert "llm-scratch" in _bound(rendered, "prod-east", name), name
    # and its service accounts are the team's, not the platform's
    gpu = _policy(rendered, "prod-east", "gpuplane-gpu-queue")
    gated = kueue_webhook(
        _pod("registry.example.com/llm/x", "llm-scratch")
        | {
            "spec": {
                "containers": [
                    {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
                ]
            }
        }
    )
    ungated = {**gated, "spec": {**gated["spec"], "schedulingGates": []}}
    assert evaluate(
        gpu,
        ungated,
        old=gated,
        operation="UPDATE",
        username="system:serviceaccount:llm-scratch:default",
    )


def test_a_stricter_pod_security_level_moves_the_namespace_to_the_stricter_lock(
    attempt: Attempt,
) -> None:
    attempt.edit(
        TEAM_FILE,
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks, podSecurity: restricted}\n",
    )
    rendered = attempt.render()
    assert not errors(rendered.diagnostics)
    assert "llm-notebooks" in _bound(rendered, "prod-east", "gpuplane-host-restricted")
    assert "llm-notebooks" not in _bound(rendered, "prod-east", "gpuplane-host-baseline")


def test_a_laxer_pod_security_level_is_refused_on_the_team_file(attempt: Attempt) -> None:
    attempt.edit(
        TEAM_FILE,
        "podSecurity: restricted",  # llm-serve's, the one namespace of the file that sets it
        "podSecurity: privileged",
    )
    found = attempt.findings()
    assert errors(found) and {d.at.file for d in errors(found)} == {TEAM_FILE}


def test_another_queues_priority_is_refused_on_the_team_file(attempt: Attempt) -> None:
    other = next(
        p
        for p in ("critical", "production", "release-candidate", "high")
        if p not in attempt.path("queues/prod.yaml").read_text()
    )
    attempt.edit(TEAM_FILE, "  priority: standard\n", f"  priority: {other}\n")
    found = attempt.findings()
    assert errors(found) and {d.at.file for d in errors(found)} == {TEAM_FILE}


def test_jobs_labelled_with_another_queues_priority_are_refused(attempt: Attempt) -> None:
    rendered = attempt.render()
    policy = _policy(rendered, "prod-east", "gpuplane-priority")
    queues = sorted(q for q in rendered.platform.queues if q != "prod")
    for queue in queues:
        for priority in rendered.platform.queues[queue].priorities:
            job = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "labels": {"kueue.x-k8s.io/priority-class": f"{queue}-{priority.name}"}
                },
                "spec": {},
            }
            namespace = {"metadata": {"name": "llm-train", "labels": {}}}
            refused = evaluate(policy, job, namespace=namespace)
            assert refused and not any("matchCondition" in r for r in refused), refused
            assert any(f"{queue}-{priority.name}" in r or "priority" in r for r in refused)


def test_a_new_team_file_cannot_claim_another_teams_namespace_for_its_images(
    attempt: Attempt,
) -> None:
    """A new team that lists llm-train as its own would get its image policy bound there."""
    text = attempt.path(TEAM_FILE).read_text()
    text = text.replace("name: llm\n", "name: llm-evil\n", 1)
    text = text.replace('codeowners: ["@example/llm"]', 'codeowners: ["@example/llm-evil"]')
    text = text.replace("    - registry.example.com/llm/\n", "    - docker.io/library/\n")
    attempt.write("teams/llm-evil.yaml", text)
    found = attempt.findings()
    assert errors(found)
    assert "teams/llm-evil.yaml" in {d.at.file for d in errors(found)}


# --- scheduling: a member places pods past the scheduler, the taints or the queue's priorities --


def _namespace(rendered: Rendered, cluster: str, name: str) -> dict[str, Any]:
    for manifest in rendered.manifests[cluster]:
        if manifest.kind == "Namespace" and manifest.name == name:
            return copy.deepcopy(dict(manifest.body))
    raise AssertionError(name)


HOSTILE_POD_SPECS: dict[str, dict[str, Any]] = {
    "straight onto a GPU node, past Kueue and the pool's taint": {"nodeName": "h100-train-node-01"},
    "tolerate every taint": {"tolerations": [{"operator": "Exists"}]},
    "never be evicted from a failing node": {
        "tolerations": [{"operator": "Exists", "effect": "NoExecute"}]
    },
    "preempt everything as a node-critical pod": {"priorityClassName": "system-node-critical"},
    "preempt everything as a cluster-critical pod": {
        "priorityClassName": "system-cluster-critical"
    },
}


@pytest.mark.parametrize("attack", sorted(HOSTILE_POD_SPECS))
def test_a_member_cannot_place_a_pod_past_the_scheduler_and_queue(
    attempt: Attempt, attack: str
) -> None:
    rendered = attempt.render()
    policy = _policy(rendered, "prod-east", "gpuplane-scheduling-llm")
    for namespace in ("llm-train", "llm-serve", "llm-notebooks"):
        hostile = _pod("registry.example.com/llm/x:1", namespace, **HOSTILE_POD_SPECS[attack])
        assert evaluate(policy, hostile), (attack, namespace)
        # wrapped in a Job, the Job controller's pods would carry it: refused at submission
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": namespace},
            "spec": {"suspend": True, "template": {"spec": hostile["spec"]}},
        }
        assert evaluate(policy, job), (attack, namespace)


def test_a_team_lead_who_moves_the_team_to_another_queue_is_refused_on_the_team_file(
    attempt: Attempt,
) -> None:
    """Another queue's PriorityClasses (and WorkloadPriorityClasses) would come with it."""
    attempt.edit(TEAM_FILE, "  queue: prod\n", "  queue: staging\n")
    found = attempt.findings()
    assert errors(found) and {d.at.file for d in errors(found)} == {TEAM_FILE}


def test_a_new_team_gets_its_own_scheduling_lock_not_another_teams_classes(
    attempt: Attempt,
) -> None:
    """A team lead adds a team file: its namespaces are held by its own scheduling policy,
    which allows its queue's classes and no system class."""
    text = attempt.path(TEAM_FILE).read_text()
    text = text.replace("name: llm\n", "name: llm-new\n", 1)
    text = text.replace('codeowners: ["@example/llm"]', 'codeowners: ["@example/llm-new"]')
    for ns in ("llm-train", "llm-serve", "llm-notebooks"):
        text = text.replace(f"name: {ns},", f"name: {ns.replace('llm-', 'llmnew-')},")
    attempt.write("teams/llm-new.yaml", text)
    rendered = attempt.render()
    if errors(rendered.diagnostics):
        assert "teams/llm-new.yaml" in {d.at.file for d in errors(rendered.diagnostics)}
        return
    assert sorted(_bound(rendered, "prod-east", "gpuplane-scheduling-llm-new")) == [
        "llmnew-notebooks",
        "llmnew-serve",
        "llmnew-train",
    ]
    policy = _policy(rendered, "prod-east", "gpuplane-scheduling-llm-new")
    critical = _pod("registry.example.com/llm/x:1", "llmnew-train")
    critical["spec"]["priorityClassName"] = "system-cluster-critical"
    assert evaluate(policy, critical)


# --- services: a member opens a namespace to the outside ----------------------------------------


HOSTILE_SERVICES: dict[str, dict[str, Any]] = {
    "a NodePort on every node": {"type": "NodePort"},
    "a LoadBalancer for the model API": {"type": "LoadBalancer"},
    "the cluster DNS's address as an external IP (CVE-2020-8554)": {"externalIPs": ["10.96.0.10"]},
}


@pytest.mark.parametrize("attack", sorted(HOSTILE_SERVICES))
def test_a_member_cannot_expose_a_namespace_with_a_service(attempt: Attempt, attack: str) -> None:
    rendered = attempt.render()
    policy = _policy(rendered, "prod-east", "gpuplane-services")
    for namespace in ("llm-serve", "llm-train", "llm-notebooks"):
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "api", "namespace": namespace},
            "spec": {"ports": [{"port": 8000}], **HOSTILE_SERVICES[attack]},
        }
        (message,) = evaluate(policy, service)
        assert "ingress or gateway" in message
        clean = copy.deepcopy(service)
        clean["spec"] = {"ports": [{"port": 8000}]}
        assert evaluate(policy, service, old=clean, operation="UPDATE"), attack


def test_a_ray_cluster_cannot_ask_the_operator_for_a_load_balancer(attempt: Attempt) -> None:
    rendered = attempt.render()
    policy = _policy(rendered, "prod-east", "gpuplane-services")
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "r", "namespace": "llm-train"},
        "spec": {"headGroupSpec": {"serviceType": "LoadBalancer", "template": {"spec": {}}}},
    }
    assert evaluate(policy, ray)
    # and if it got past, the operator's Service would be refused all the same
    head = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "r-head-svc", "namespace": "llm-train"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 8265}]},
    }
    operator = "system:serviceaccount:kuberay-system:kuberay-operator"
    assert evaluate(policy, head, username=operator)


# --- Volcano: a member submits to another team's queue ------------------------------------------


VOLCANO_CASE = REPO / "tests/cases/render/volcano"
OTHER_TEAM = """apiVersion: gpuplane.dev/v1alpha1
kind: Team
metadata:
  name: rival
spec:
  owners: [rival-leads]
  members: [rival]
  codeowners: ["@example/rival"]
  costCenter: CC-2
  queue: main
  namespaces:
    - {name: rival-train, cluster: lab, purpose: training}
  gpus:
    - {pool: train, nominal: 1}
  resources: {cpu: "8", memory: 64Gi, storage: 1Ti}
"""


@pytest.fixture
def volcano_attempt(tmp_path: Path) -> Attempt:
    """The Volcano case with a second team, `rival`, whose lead adds its team file."""
    attempt = Attempt(copy_inputs(VOLCANO_CASE, tmp_path / "repo"))
    attempt.write("teams/rival.yaml", OTHER_TEAM)
    return attempt


def _volcano_hostiles(queue: str, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        "Volcano Job": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": namespace},
            "spec": {"queue": queue, "tasks": [{"replicas": 1, "template": {"spec": {}}}]},
        },
        "pod annotation": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p",
                "namespace": namespace,
                "annotations": {"scheduling.volcano.sh/queue-name": queue},
            },
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]},
        },
        "PodGroup (through an operator's queue option)": {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": namespace},
            "spec": {"minMember": 1, "queue": queue},
        },
    }


@pytest.mark.parametrize(
    "route", ["Volcano Job", "pod annotation", "PodGroup (through an operator's queue option)"]
)
def test_a_rival_team_cannot_submit_to_another_teams_volcano_queue(
    volcano_attempt: Attempt, route: str
) -> None:
    rendered = volcano_attempt.render()
    assert not errors(rendered.diagnostics), errors(rendered.diagnostics)
    policy = _policy(rendered, "lab", "gpuplane-gpu-queue")
    assert "rival-train" in _bound(rendered, "lab", "gpuplane-gpu-queue")
    ns = _namespace(rendered, "lab", "rival-train")
    for victim in ("ml-training", "ml-inference", "default"):
        hostile = _volcano_hostiles(victim, "rival-train")[route]
        for username in (
            "oidc:mallory@example.com",
            "system:serviceaccount:kube-system:replicaset-controller",
            "system:serviceaccount:kuberay-system:kuberay-operator",
        ):
            assert evaluate(policy, hostile, namespace=ns, username=username), (victim, username)
    own = _volcano_hostiles("rival-training", "rival-train")[route]
    assert evaluate(policy, own, namespace=ns) == []


# --- the team's own Argo CD Application: synced by Argo CD, held as the team ---------------------

ARGOCD_CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
GPU_LIMITS = {"limits": {"nvidia.com/gpu": 1}}


def _team_job(namespace: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "grab-gpus",
            "namespace": namespace,
            "labels": {
                "gpuplane.dev/team": "llm",
                "gpuplane.dev/cost-center": "CC-1050",
                "kueue.x-k8s.io/priority-class": "prod-production",
            },
            **meta,
        },
        "spec": {
            "suspend": False,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.example.com/llm/x",
                            "resources": GPU_LIMITS,
                        }
                    ],
                }
            },
        },
    }


def test_a_team_application_syncing_an_unsuspended_gpu_job(attempt: Attempt) -> None:
    """The team's AppProject lets its Application sync into its namespaces (one it adds
    included); Argo CD's application controller applies what the team's repository holds. An
    unsuspended GPU Job that Kueue's webhook skips (a made-up JobSet owner) is refused as if the
    team had applied it, and so is unsuspending a waiting one and ungating a GPU pod."""
    attempt.edit(
        TEAM_FILE,
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n"
        "    - {name: llm-batch, cluster: prod-east, purpose: batch}\n",
    )
    rendered = attempt.render()
    assert not errors(rendered.diagnostics), errors(rendered.diagnostics)
    (project,) = [
        m.body
        for m in rendered.manifests["prod-east"]
        if m.kind == "AppProject" and m.name == "team-llm-prod-east"
    ]
    destinations = sorted(d["namespace"] for d in project["spec"]["destinations"])
    assert "llm-batch" in destinations
    suspend = _policy(rendered, "prod-east", "gpuplane-queue-suspend")
    gpu = _policy(rendered, "prod-east", "gpuplane-gpu-queue")
    assert set(destinations) <= set(_bound(rendered, "prod-east", "gpuplane-queue-suspend"))
    assert set(destinations) <= set(_bound(rendered, "prod-east", "gpuplane-gpu-queue"))
    owner = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "x", "uid": "1"}
    for namespace in destinations:
        skipped = kueue_webhook(
            _team_job(namespace, ownerReferences=[{**owner, "controller": True}])
        )
        assert skipped["spec"]["suspend"] is False  # Kueue let it go by
        assert evaluate(suspend, skipped, username=ARGOCD_CONTROLLER), namespace
        waiting = kueue_webhook(_team_job(namespace))
        assert evaluate(suspend, waiting, username=ARGOCD_CONTROLLER) == []
        running = copy.deepcopy(waiting)
        running["spec"]["suspend"] = False
        assert evaluate(
            suspend, running, old=waiting, operation="UPDATE", username=ARGOCD_CONTROLLER
        )
        gated = kueue_webhook(
            _pod("registry.example.com/llm/x", namespace)
            | {"spec": {"containers": [{"name": "c", "image": "x", "resources": GPU_LIMITS}]}}
        )
        ungated = {**gated, "spec": {**gated["spec"], "schedulingGates": []}}
        assert evaluate(gpu, ungated, old=gated, operation="UPDATE", username=ARGOCD_CONTROLLER)


def test_a_team_application_syncing_an_unlabelled_deployment(attempt: Attempt) -> None:
    """The common labels bill the right cost centre; Argo CD syncing the team's Deployment
    without them (or with another team's) does not skip the check."""
    rendered = attempt.render()
    labels = _policy(rendered, "prod-east", "gpuplane-common-labels")
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "llm-serve",
            "labels": {"gpuplane.dev/team": "llm", "gpuplane.dev/cost-center": "CC-1050"},
        },
    }
    for wrong in ({}, {"gpuplane.dev/team": "vision", "gpuplane.dev/cost-center": "CC-0000"}):
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "llm-serve", "labels": wrong},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
        }
        assert evaluate(labels, deployment, username=ARGOCD_CONTROLLER, namespace=namespace)


# --- the controllers' exemptions: a team cannot pass through them ------------------------------

RAY_OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "x",
    "uid": "1",
    "controller": True,
}
PYTORCH_OWNER = {**RAY_OWNER, "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}
TRAINJOB_OWNER = {**RAY_OWNER, "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"}
ARGO_WORKFLOWS_CONTROLLER = "system:serviceaccount:argo:argo-workflows-workflow-controller"


def _gpu_pod(namespace: str, *owners: dict[str, Any]) -> dict[str, Any]:
    body = _pod("registry.example.com/llm/x", namespace)
    body["metadata"]["labels"] = {"gpuplane.dev/team": "llm", "gpuplane.dev/cost-center": "CC-1050"}
    body["metadata"]["ownerReferences"] = list(owners)
    body["spec"]["containers"][0]["resources"] = GPU_LIMITS
    return kueue_webhook(body)


def _with_namespace(attempt: Attempt, name: str, purpose: str = "batch") -> Rendered:
    attempt.edit(
        TEAM_FILE,
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n"
        f"    - {{name: {name}, cluster: prod-east, purpose: {purpose}}}\n",
    )
    rendered = attempt.render()
    assert not errors(rendered.diagnostics), errors(rendered.diagnostics)
    return rendered


@pytest.mark.parametrize("fake_owner", [RAY_OWNER, PYTORCH_OWNER], ids=["RayCluster", "PyTorchJob"])
def test_a_gpu_pod_with_a_made_up_kueue_job_owner_is_refused_from_the_team(
    attempt: Attempt, fake_owner: dict[str, Any]
) -> None:
    """Kueue's pod webhook leaves a pod with a RayCluster or PyTorchJob controller owner ungated
    (it takes the parent for one it admitted); the exemption for KubeRay's and the training
    operator's pods believes that owner only from a workload controller. Also from a service
    account of a namespace the team adds, named like an operator's."""
    rendered = _with_namespace(attempt, "llm-kuberay-system")
    gpu = _policy(rendered, "prod-east", "gpuplane-gpu-queue")
    for namespace in ("llm-train", "llm-kuberay-system"):
        assert namespace in _bound(rendered, "prod-east", "gpuplane-gpu-queue")
        pod = _gpu_pod(namespace, fake_owner)
        assert "schedulingGates" not in pod["spec"]  # Kueue let it go by
        for username in (
            "oidc:mallory@example.com",
            f"system:serviceaccount:{namespace}:default",
            "system:serviceaccount:llm-kuberay-system:kuberay-operator",
            ARGOCD_CONTROLLER,
            "system:serviceaccount:kube-system:argocd-manager",
        ):
            assert evaluate(gpu, pod, username=username), (namespace, username)


def test_a_team_workflow_cannot_run_gpu_pods_past_the_queue(attempt: Attempt) -> None:
    """Team roles grant no Workflow, but the team's AppProject does not blacklist one: a team
    Application can sync a Workflow, whose pods Argo Workflows' controller creates as written.
    Whatever owner such a pod carried, Argo Workflows' controller gets no exemption: its GPU pods
    must be gated by Kueue like a lone pod's."""
    rendered = attempt.render()
    (project,) = [
        m.body
        for m in rendered.manifests["prod-east"]
        if m.kind == "AppProject" and m.name == "team-llm-prod-east"
    ]
    blacklisted = project["spec"]["namespaceResourceBlacklist"]
    assert not [b for b in blacklisted if b["group"] == "argoproj.io" and b["kind"] == "Workflow"]
    gpu = _policy(rendered, "prod-east", "gpuplane-gpu-queue")
    workflow_owner = {**RAY_OWNER, "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow"}
    for owners in ([workflow_owner], [RAY_OWNER], [PYTORCH_OWNER], []):
        pod = _gpu_pod("llm-train", *owners)
        pod["spec"].pop("schedulingGates", None)
        assert evaluate(gpu, pod, username=ARGO_WORKFLOWS_CONTROLLER), owners


def test_an_unsuspended_pytorchjob_past_kueue_is_refused(attempt: Attempt) -> None:
    """The training operator's GPU pods pass ungated once their PyTorchJob runs, so a PyTorchJob
    created unsuspended (Kueue's webhook skips one with a made-up JobSet owner) or unsuspended
    by the team would be a way around the queue: both are refused. (On a cluster that runs
    the training operator: elsewhere no PyTorchJob is served, and the policy takes none.)"""
    submits(attempt.root, "llm-train", ("PyTorchJob",), TRAINING_OPERATOR)
    rendered = attempt.render()
    suspend = _policy(rendered, "prod-east", "gpuplane-queue-suspend")
    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "grab",
            "namespace": "llm-train",
            "labels": {"gpuplane.dev/team": "llm", "gpuplane.dev/cost-center": "CC-1050"},
            "ownerReferences": [
                {**RAY_OWNER, "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}
            ],
        },
        "spec": {
            "runPolicy": {"suspend": False},
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": 8,
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "image": "x", "resources": GPU_LIMITS}]
                        }
                    },
                }
            },
        },
    }
    skipped = kueue_webhook(job)
    assert skipped["spec"]["runPolicy"]["suspend"] is False
    for username in ("oidc:mallory@example.com", ARGOCD_CONTROLLER):
        assert evaluate(suspend, skipped, username=username), username
    waiting = copy.deepcopy(job)
    del waiting["metadata"]["ownerReferences"]
    waiting = kueue_webhook(waiting)
    assert waiting["spec"]["runPolicy"]["suspend"] is True
    running = copy.deepcopy(waiting)
    running["spec"]["runPolicy"]["suspend"] = False
    assert evaluate(suspend, running, old=waiting, operation="UPDATE", username=ARGOCD_CONTROLLER)
    dropped = copy.deepcopy(waiting)
    del dropped["spec"]["runPolicy"]
    assert evaluate(suspend, dropped, old=waiting, operation="UPDATE")


def test_a_team_cannot_write_an_ssh_key_secret_as_if_the_trainer_had(attempt: Attempt) -> None:
    """The Trainer's MPI runtime writes `<trainjob>-mpi-ssh-auth` itself; a team writing a Secret
    of that type and owner (a literal from git, or a value it chose) is refused, from kubectl,
    its Application or a Workflow."""
    rendered = attempt.render()
    store = _policy(rendered, "prod-east", "gpuplane-secrets-from-store")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/ssh-auth",
        "metadata": {
            "name": "train-mpi-ssh-auth",
            "namespace": "llm-train",
            "ownerReferences": [TRAINJOB_OWNER],
        },
        "stringData": {"ssh-privatekey": "chosen by the team"},
    }
    for username in (
        "oidc:mallory@example.com",
        "system:serviceaccount:llm-train:default",
        ARGOCD_CONTROLLER,
        "system:serviceaccount:kube-system:argocd-manager",
        ARGO_WORKFLOWS_CONTROLLER,
    ):
        assert evaluate(store, secret, username=username), username


def test_a_metadata_update_does_not_carry_a_spec_change_through(attempt: Attempt) -> None:
    """Updates that leave a pod's spec alone skip the spec checks (Kueue and the Job controller
    remove finalizers from pods admitted before a policy narrowed); an update that also swaps
    the image, or adds a privileged ephemeral container, is checked in full."""
    rendered = attempt.render()
    images = _policy(rendered, "prod-east", "gpuplane-images-llm")
    host = _policy(rendered, "prod-east", "gpuplane-host-baseline")
    running = _pod("registry.example.com/llm/x")
    running["metadata"]["finalizers"] = ["kueue.x-k8s.io/managed"]
    swapped = copy.deepcopy(running)
    swapped["metadata"]["finalizers"] = []
    swapped["spec"]["containers"][0]["image"] = "docker.io/evil/miner:1"
    assert evaluate(images, swapped, old=running, operation="UPDATE")
    debug = copy.deepcopy(running)
    debug["spec"]["ephemeralContainers"] = [
        {
            "name": "d",
            "image": "registry.example.com/llm/x",
            "securityContext": {"privileged": True},
        }
    ]
    assert evaluate(host, debug, old=running, operation="UPDATE")
    kept = copy.deepcopy(running)
    kept["metadata"]["finalizers"] = []
    assert evaluate(images, kept, old=running, operation="UPDATE") == []
