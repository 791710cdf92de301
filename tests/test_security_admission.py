"""The security layer's admission policies: they validate against each cluster's Kubernetes
schemas, their CEL compiles and, evaluated with cel-python as the API server would, admits the
platform's own workloads and Kueue's examples and refuses what the Pod Security Standards, Kueue
and the team's registries say it must."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from celpy.adapter import json_to_cel

from renderer.layers.security import gpus, host, images, scheduling, services
from renderer.layers.security import priority as security_priority
from renderer.layers.security.policy_parts import cel_string
from renderer.model.names import SUITE_JOBS_NAMESPACE
from renderer.model.security import priority_enforcement
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, render_platform
from tests.admission_cel import compile_expression, evaluate, kueue_webhook
from tests.admission_cel import evaluate as with_messages
from tests.conftest import REPO, SHARED_CRDS, copy_inputs, render_clean

KUEUE_EXAMPLES = REPO.parent / "shared" / "reference" / "kueue-examples"
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
KUEUE_CONTROLLER = "system:serviceaccount:kueue-system:kueue-controller-manager"
ALICE = "oidc:alice@example.com"


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


MINE = (
    "gpuplane-images-",
    "gpuplane-host-",
    "gpuplane-gpu-queue",
    "gpuplane-queue-suspend",
    "gpuplane-common-labels",
    "gpuplane-priority",
    "gpuplane-scheduling-",
    "gpuplane-services",
)
"""The admission-policy modules' objects (the layer's audit, secrets and clean-up modules have
tests of their own)."""


def security(rendered: Rendered, cluster: str) -> list[Manifest]:
    return [
        m for m in rendered.manifests[cluster] if m.layer == "security" and m.name.startswith(MINE)
    ]


def policy(
    rendered: Rendered, cluster: str, name: str, kind: str = "ValidatingAdmissionPolicy"
) -> dict[str, Any]:
    for manifest in security(rendered, cluster):
        if manifest.kind == kind and manifest.name == name:
            return dict(manifest.body)
    raise AssertionError(f"no {kind} {name} on {cluster}")


def namespace(rendered: Rendered, cluster: str, name: str) -> dict[str, Any]:
    for manifest in rendered.manifests[cluster]:
        if manifest.kind == "Namespace" and manifest.name == name:
            return copy.deepcopy(dict(manifest.body))
    raise AssertionError(name)


def reference(relative: str) -> list[dict[str, Any]]:
    if not KUEUE_EXAMPLES.is_dir():
        pytest.skip("../shared/reference/kueue-examples is not beside this checkout")
    with (KUEUE_EXAMPLES / relative).open() as handle:
        return [d for d in yaml.safe_load_all(handle) if d]


def in_namespace(obj: dict[str, Any], ns: str, team: str, cost_center: str) -> dict[str, Any]:
    """A reference object moved into a team namespace with the team's labels and images."""
    result = copy.deepcopy(obj)
    meta = result["metadata"]
    meta["namespace"] = ns
    meta.setdefault("labels", {}).update(
        {"gpuplane.dev/team": team, "gpuplane.dev/cost-center": cost_center}
    )
    return result


def pod(spec: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "llm-train",
            "labels": {"gpuplane.dev/team": "llm", "gpuplane.dev/cost-center": "CC-1050", **labels},
        },
        "spec": spec,
    }


def container(image: str = "registry.example.com/llm/train:1", **extra: Any) -> dict[str, Any]:
    return {"name": "main", "image": image, **extra}


GPU: dict[str, Any] = {"resources": {"limits": {"nvidia.com/gpu": 1}}}


def all_expressions(body: dict[str, Any]) -> Iterator[str]:
    spec = body["spec"]
    for key in ("matchConditions", "variables", "validations"):
        for item in spec.get(key, []):
            yield item["expression"]
            if "messageExpression" in item:
                yield item["messageExpression"]


# --- objects and schemas -----------------------------------------------------------------------


def test_every_cluster_gets_its_admission_policies_and_they_validate(example: Rendered) -> None:
    for cluster in example.manifests:
        found = security(example, cluster)
        kinds = {m.kind for m in found}
        assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds
        assert all(m.path.startswith("security/") for m in found)
    assert not [d for d in example.diagnostics if "security/" in d.message]


def test_each_policy_has_a_denying_binding_of_the_same_name(example: Rendered) -> None:
    for cluster in example.manifests:
        found = security(example, cluster)
        policies = {m.name for m in found if m.kind == "ValidatingAdmissionPolicy"}
        bindings = {m.name: m.body for m in found if m.kind == "ValidatingAdmissionPolicyBinding"}
        assert policies == set(bindings)
        for name, binding in bindings.items():
            assert binding["spec"]["policyName"] == name
            assert binding["spec"]["validationActions"] == ["Deny"]
            (expression,) = binding["spec"]["matchResources"]["namespaceSelector"][
                "matchExpressions"
            ]
            assert expression["key"] == "kubernetes.io/metadata.name"  # set by the API server
        for m in found:
            if m.kind == "ValidatingAdmissionPolicy":
                assert m.body["spec"]["failurePolicy"] == "Fail"


def test_every_expression_compiles_and_every_variable_it_reads_is_defined(
    example: Rendered,
) -> None:
    for cluster in example.manifests:
        for m in security(example, cluster):
            if "Binding" in m.kind or m.kind == "MutatingAdmissionPolicy":
                continue
            names = [v["name"] for v in m.body["spec"].get("variables", [])]
            defined: set[str] = set()
            for variable in m.body["spec"].get("variables", []):
                for used in _variables_read(variable["expression"]):
                    assert used in defined, (m.name, used)  # read before it is defined
                defined.add(variable["name"])
            for expression in all_expressions(dict(m.body)):
                compile_expression(expression)
                assert set(_variables_read(expression)) <= set(names), (m.name, expression)
            for condition in m.body["spec"].get("matchConditions", []):
                assert "variables." not in condition["expression"]  # not visible there


def _variables_read(expression: str) -> list[str]:
    import re

    return re.findall(r"variables\.([A-Za-z_][A-Za-z0-9_]*)", expression)


def _cluster_at(tmp_path: Path, version: str) -> Rendered:
    root = copy_inputs(REPO, tmp_path / "repo")
    path = root / "clusters/prod-east.yaml"
    text = path.read_text()
    assert text.count('kubernetesVersion: "1.33"') == 1
    path.write_text(text.replace('kubernetesVersion: "1.33"', f'kubernetesVersion: "{version}"'))
    return render_platform(root, OutputValidator([SHARED_CRDS] if SHARED_CRDS.is_dir() else []))


def test_a_136_cluster_gets_the_mutating_priority_policy_and_it_validates(tmp_path: Path) -> None:
    rendered = _cluster_at(tmp_path, "1.36")
    assert priority_enforcement(rendered.platform.clusters["prod-east"]) == "mutating"
    assert priority_enforcement(rendered.platform.clusters["staging-west"]) == "validating"
    problems = [
        d for d in rendered.diagnostics if d.rule == "output-schema" and "security/" in d.message
    ]
    assert problems == []
    mutating = policy(rendered, "prod-east", "gpuplane-priority-llm", "MutatingAdmissionPolicy")
    binding = policy(
        rendered, "prod-east", "gpuplane-priority-llm", "MutatingAdmissionPolicyBinding"
    )
    assert binding["spec"]["policyName"] == "gpuplane-priority-llm"
    (mutation,) = mutating["spec"]["mutations"]
    # celpy parses Kubernetes' typed Object{...} construction but cannot build it: parse only
    compile_expression(mutation["applyConfiguration"]["expression"])
    conditions = [compile_expression(c["expression"]) for c in mutating["spec"]["matchConditions"]]
    for labels, mutate in (({"kueue.x-k8s.io/priority-class": "prod-high"}, False), ({}, True)):
        created = json_to_cel(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels": labels}}
        )
        assert all(bool(c.evaluate({"object": created})) for c in conditions) is mutate

    # with the mutation served, a job without the label is not refused, only a foreign one
    validating = policy(rendered, "prod-east", "gpuplane-priority")
    assert "teamPriority" not in [v["name"] for v in validating["spec"]["variables"]]
    ns = namespace(rendered, "prod-east", "llm-train")
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"labels": {}},
        "spec": {},
    }
    assert evaluate(validating, job, namespace=ns) == []
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "nope-critical"
    llm, prod = rendered.platform.teams["llm"], rendered.platform.queues["prod"]
    assert with_messages(validating, job, namespace=ns) == [
        security_priority.foreign_message(llm, prod)
    ]
    # 1.33 and 1.34 get no MutatingAdmissionPolicy
    for cluster in ("staging-west",):
        assert not [m for m in security(rendered, cluster) if m.kind.startswith("Mutating")]


def test_a_cluster_older_than_130_gets_no_admission_policies(tmp_path: Path) -> None:
    rendered = _cluster_at(tmp_path, "1.29")
    assert "prod-east" not in rendered.manifests or not [
        m for m in security(rendered, "prod-east") if "AdmissionPolicy" in m.kind
    ]


# --- CEL string literals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ['registry.example.com/a"||true||"/', 'a\\"b', "x\n'y", "ünï\u200b\U0001f600", ""],
)
def test_a_string_literal_reads_back_as_itself(text: str) -> None:
    value = compile_expression(cel_string(text)).evaluate({})
    assert str(value) == text
    # and the literal cannot end early: comparing it with something else is false
    assert not compile_expression(f"{cel_string(text)} == 'registry.example.com/'").evaluate({})


# --- images ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "allowed"),
    [
        ("registry.example.com/llm/train:1", True),
        ("registry.example.com/mirror/nvcr.io/nvidia/pytorch:25.01-py3", True),
        ("registry.example.com.evil.io/llm/train:1", False),
        ("registry.example.com/llm-evil/train:1", False),
        ("registry.example.com/vision/train:1", False),  # another team's
        ("busybox", False),  # docker.io/library/busybox
        ("docker.io/registry.example.com/llm/x", False),
    ],
)
def test_images_only_from_the_teams_prefixes(example: Rendered, image: str, allowed: bool) -> None:
    body = policy(example, "prod-east", "gpuplane-images-llm")
    for where in ("containers", "initContainers", "ephemeralContainers"):
        spec = {"containers": [container()], where: [container(image)]}
        if where == "containers":
            spec = {"containers": [container(image)]}
        assert (evaluate(body, pod(spec)) == []) is allowed, where


def test_a_prefix_without_a_slash_still_ends_at_a_boundary() -> None:
    check = compile_expression(images.image_allowed(["registry.example.com/llm"], "i"))
    for image, allowed in (
        ("registry.example.com/llm", True),
        ("registry.example.com/llm:1", True),
        ("registry.example.com/llm/x", True),
        ("registry.example.com/llm@sha256:" + "0" * 64, True),
        ("registry.example.com/llmx", False),
        ("registry.example.com/llm.evil.io/x", False),
    ):
        assert bool(check.evaluate({"i": json_to_cel(image)})) is allowed, image


DIGEST = "sha256:" + "d" * 64
OTHER_DIGEST = "sha256:" + "e" * 64
NORMALISED_PREFIXES = [
    "registry.example.com/llm/",
    "docker.io/library/",
    "ghcr.io/example/",
    "registry.example.com/tools/trainer:1.4",
    "registry.example.com/tools/eval@" + DIGEST,
]


@pytest.fixture(scope="module")
def normalised(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """llm's image policy, rendered for prefixes that exercise every rule of how a runtime
    reads a name (the example's gpuplane.yaml allows all of them)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("normalised") / "repo")
    text = (root / "teams/llm.yaml").read_text()
    start = text.index("  images:\n")
    end = text.index("  egress:\n")
    listed = "".join(f"    - {p}\n" for p in NORMALISED_PREFIXES)
    (root / "teams/llm.yaml").write_text(text[:start] + "  images:\n" + listed + text[end:])
    rendered = render_clean(root)
    return policy(rendered, "prod-east", "gpuplane-images-llm")


# Each expectation is how containerd resolves the name (distribution/reference normalize.go,
# ParseDockerRef; containerd hosts.go), read from upstream, not from the policy: see
# renderer/model/images.py and tests/test_image_references.py for the sources.
NORMALISATION = [
    # no host means docker.io; a single part means library/
    ("nginx", True),
    ("nginx:1.27", True),
    ("library/nginx:1.27", True),
    ("docker.io/nginx:1.27", True),
    ("docker.io/library/nginx:1.27", True),
    ("index.docker.io/nginx:1.27", True),
    ("registry-1.docker.io/library/nginx:1.27", True),
    ("DOCKER.IO/library/nginx:1.27", True),
    ("docker.io:443/library/nginx", True),
    ("nginx@" + DIGEST, True),
    ("someone/nginx:1.27", False),  # docker.io/someone/nginx: a user namespace
    ("docker.io/someone/nginx", False),
    ("registry-1.docker.io/nginx", False),  # no library/ on this spelling: repository "nginx"
    ("Docker.io/nginx", False),  # the same: only docker.io and index.docker.io add library/
    ("docker.io:5000/library/nginx", False),  # another port is another registry
    ("library-evil/nginx", False),
    # host case and default port
    ("REGISTRY.EXAMPLE.COM/llm/train:1", True),
    ("registry.example.com:443/llm/train:1", True),
    ("registry.example.com:0443/llm/train:1", True),
    ("registry.example.com:8443/llm/train:1", False),
    ("registry.example.com./llm/train:1", False),  # not a reference the kubelet parses
    ("registry.example.com/LLM/train:1", False),  # nor this: repositories are lower case
    # path boundaries
    ("registry.example.com/llm-evil/train:1", False),
    ("registry.example.com/llmx/train:1", False),
    ("registry.example.com/llm", False),  # the folder itself is no repository under it
    ("ghcr.io/example/cli:2", True),
    ("GHCR.IO/example/cli:2", True),
    ("ghcr.io/example-evil/cli:2", False),
    ("ghcr.io/examplex/cli:2", False),
    ("ghcr.io.evil.io/example/cli:2", False),
    # a pinned tag: that tag, pulled by that tag; a digest overrides the tag
    ("registry.example.com/tools/trainer:1.4", True),
    ("registry.example.com:443/tools/trainer:1.4", True),
    ("registry.example.com/tools/trainer:1.4@" + DIGEST, False),
    ("registry.example.com/tools/trainer:1.40", False),
    ("registry.example.com/tools/trainer:1.4-evil", False),
    ("registry.example.com/tools/trainer", False),  # :latest
    ("registry.example.com/tools/trainer/sub:1.4", False),
    # a pinned digest: that digest, whatever tag is written beside it
    ("registry.example.com/tools/eval@" + DIGEST, True),
    ("registry.example.com/tools/eval:anything@" + DIGEST, True),
    ("registry.example.com/tools/eval@" + OTHER_DIGEST, False),
    ("registry.example.com/tools/eval:1", False),
]


@pytest.mark.parametrize(("image", "allowed"), NORMALISATION)
def test_the_rendered_policy_reads_names_as_the_runtime_does(
    normalised: dict[str, Any], image: str, allowed: bool
) -> None:
    for where in ("containers", "initContainers", "ephemeralContainers"):
        spec = {"containers": [container()], where: [container(image)]}
        if where == "containers":
            spec = {"containers": [container(image)]}
        assert (evaluate(normalised, pod(spec)) == []) is allowed, where


def test_a_team_without_images_may_run_none() -> None:
    check = compile_expression(images.image_allowed(()))
    assert not check.evaluate({"c": json_to_cel({"image": "registry.example.com/x"})})


def test_image_policy_checks_workload_templates(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-images-llm")
    (jobset,) = reference("jobs/sample-jobset.yaml")
    jobset = in_namespace(jobset, "llm-train", "llm", "CC-1050")
    assert evaluate(body, jobset)  # registry.k8s.io is not the team's
    for job in jobset["spec"]["replicatedJobs"]:
        for c in job["template"]["spec"]["template"]["spec"]["containers"]:
            c["image"] = "registry.example.com/llm/worker:1"
    assert evaluate(body, jobset) == []


# --- host access ----------------------------------------------------------------------------------


HOSTILE_SPECS: dict[str, dict[str, Any]] = {
    "privileged": {"containers": [container(securityContext={"privileged": True})]},
    "privileged init container": {
        "containers": [container()],
        "initContainers": [container(securityContext={"privileged": True})],
    },
    "hostNetwork": {"hostNetwork": True, "containers": [container()]},
    "hostPID": {"hostPID": True, "containers": [container()]},
    "hostIPC": {"hostIPC": True, "containers": [container()]},
    "hostPath": {
        "containers": [container()],
        "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}],
    },
    "hostPort": {"containers": [container(ports=[{"containerPort": 80, "hostPort": 80}])]},
    "SYS_ADMIN": {
        "containers": [container(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})]
    },
    "CAP_SYS_ADMIN": {
        "containers": [container(securityContext={"capabilities": {"add": ["CAP_SYS_ADMIN"]}})]
    },
    "hostProcess": {
        "securityContext": {"windowsOptions": {"hostProcess": True}},
        "containers": [container()],
    },
}


@pytest.mark.parametrize("level", ["baseline", "restricted"])
@pytest.mark.parametrize("case", sorted(HOSTILE_SPECS))
def test_host_access_is_refused_at_both_levels(example: Rendered, level: str, case: str) -> None:
    body = policy(example, "prod-east", host.policy_name(level))
    assert evaluate(body, pod(HOSTILE_SPECS[case]))


def test_the_levels_differ_on_capabilities_as_pod_security_says(example: Rendered) -> None:
    chown = pod({"containers": [container(securityContext={"capabilities": {"add": ["CHOWN"]}})]})
    bind = pod(
        {"containers": [container(securityContext={"capabilities": {"add": ["NET_BIND_SERVICE"]}})]}
    )
    baseline = policy(example, "prod-east", host.policy_name("baseline"))
    restricted = policy(example, "prod-east", host.policy_name("restricted"))
    assert evaluate(baseline, chown) == [] and evaluate(baseline, bind) == []
    assert evaluate(restricted, chown) and evaluate(restricted, bind) == []
    explicit_false = pod(
        {
            "hostNetwork": False,
            "containers": [
                container(
                    securityContext={"privileged": False},
                    ports=[{"containerPort": 80, "hostPort": 0}],
                )
            ],
        }
    )
    assert evaluate(baseline, explicit_false) == []


def test_each_level_is_bound_to_the_namespaces_of_that_level(example: Rendered) -> None:
    for cluster in example.manifests:
        bound: dict[str, str] = {}
        for m in security(example, cluster):
            if m.kind == "ValidatingAdmissionPolicyBinding" and m.name.startswith("gpuplane-host-"):
                (expr,) = m.body["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
                for ns in expr["values"]:
                    bound[ns] = m.name.removeprefix("gpuplane-host-")
        for m in example.manifests[cluster]:
            if m.kind == "Namespace" and "gpuplane.dev/team" in m.body["metadata"]["labels"]:
                level = m.body["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
                assert bound[m.name] == level, m.name


# --- the platform's own workloads and Kueue's examples are admitted -----------------------------


def templates(rendered: Rendered, cluster: str) -> list[dict[str, Any]]:
    """The templates layer's workloads (files a team applies: Values, not Manifests)."""
    return [
        dict(v.body)
        for v in rendered.values[cluster]
        if v.layer == "templates" and v.body.get("metadata", {}).get("namespace")
    ]


def test_the_templates_layers_workloads_pass_every_policy(example: Rendered) -> None:
    checked = 0
    kinds = set()
    for cluster in example.manifests:
        bodies = [
            dict(m.body)
            for m in security(example, cluster)
            if m.kind == "ValidatingAdmissionPolicy"
        ]
        for workload in templates(example, cluster):
            ns = workload["metadata"]["namespace"]
            ns_body = namespace(example, cluster, ns)
            obj = kueue_webhook(workload)
            for body in bodies:
                if not _binds(example, cluster, body["metadata"]["name"], ns) or not _matches(
                    body, obj
                ):
                    continue
                assert evaluate(body, obj, namespace=ns_body) == [], (
                    cluster,
                    ns,
                    workload["metadata"]["name"],
                    body["metadata"]["name"],
                )
                checked += 1
                kinds.add(obj["kind"])
    assert checked > 50
    assert {"Job", "JobSet", "RayJob", "Deployment"} <= kinds


def _binds(rendered: Rendered, cluster: str, name: str, ns: str) -> bool:
    for m in security(rendered, cluster):
        if m.kind == "ValidatingAdmissionPolicyBinding" and m.name == name:
            (expr,) = m.body["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
            return ns in expr["values"]
    return False


def _matches(body: dict[str, Any], obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    plural = obj["kind"].lower() + "s"
    return any(
        group in rule["apiGroups"] and plural in rule["resources"]
        for rule in body["spec"]["matchConstraints"]["resourceRules"]
    )


def test_kueue_examples_in_a_team_namespace_pass_host_gpu_and_label_policies(
    example: Rendered,
) -> None:
    ns = namespace(example, "prod-east", "llm-train")
    for relative in (
        "jobs/sample-job.yaml",
        "jobs/sample-jobset.yaml",
        "provisioning/sample-job.yaml",
        "dra/sample-dra-rct-job.yaml",
        "pods-kueue/kueue-pod.yaml",
    ):
        for doc in reference(relative):
            if doc["kind"] == "ResourceClaimTemplate":
                continue
            obj = kueue_webhook(in_namespace(doc, "llm-train", "llm", "CC-1050"))
            for name in (
                "gpuplane-host-baseline",
                "gpuplane-gpu-queue",
                "gpuplane-queue-suspend",
                "gpuplane-common-labels",
            ):
                body = policy(example, "prod-east", name)
                if _matches(body, obj):
                    assert evaluate(body, obj, namespace=ns) == [], (relative, name)


# --- GPUs only through Kueue ----------------------------------------------------------------------


def gpu_pod(**meta: Any) -> dict[str, Any]:
    body = pod({"containers": [container(**GPU)]})
    body["metadata"].update(meta)
    return body


def test_a_gpu_pod_kueue_gates_is_admitted_and_one_it_skipped_is_not(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-gpu-queue")
    assert evaluate(body, kueue_webhook(gpu_pod())) == []
    # a made-up controller ownerReference: Kueue's webhook skips the pod, nothing gates it
    faked = kueue_webhook(
        gpu_pod(
            ownerReferences=[
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "x",
                    "uid": "1",
                    "controller": True,
                }
            ]
        )
    )
    assert "schedulingGates" not in faked["spec"]
    assert evaluate(body, faked)
    # the same pod from the Job controller (an unsuspended Job's) is admitted
    assert evaluate(body, faked, username=JOB_CONTROLLER) == []
    # a pod without GPUs is none of this policy's business
    assert evaluate(body, pod({"containers": [container()]})) == []


@pytest.mark.parametrize(
    "resources",
    [
        {"limits": {"nvidia.com/mig-3g.40gb": 1}},
        {"requests": {"nvidia.com/gpu.shared": 1}},
        {"limits": {"nvidia.com/gpu": 2}},
    ],
)
def test_every_gpu_resource_name_counts(example: Rendered, resources: dict[str, Any]) -> None:
    body = policy(example, "prod-east", "gpuplane-gpu-queue")
    ungated = pod({"containers": [container(resources=resources)]})
    assert evaluate(body, ungated)


def test_a_dra_claim_counts_as_a_gpu(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-gpu-queue")
    claim = pod(
        {
            "containers": [container()],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
        }
    )
    assert evaluate(body, claim)


def test_only_kueue_removes_the_admission_gate(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-gpu-queue")
    gated = kueue_webhook(gpu_pod())
    ungated = copy.deepcopy(gated)
    ungated["spec"]["schedulingGates"] = []
    assert evaluate(body, ungated, old=gated, operation="UPDATE", username=ALICE)
    # a service account of a team namespace is the team's, not Kueue's
    team_sa = "system:serviceaccount:llm-train:default"
    assert evaluate(body, ungated, old=gated, operation="UPDATE", username=team_sa)
    assert evaluate(body, ungated, old=gated, operation="UPDATE", username=KUEUE_CONTROLLER) == []


def test_jobs_must_be_created_suspended_and_only_the_platform_unsuspends(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-queue-suspend")
    (job,) = reference("provisioning/sample-job.yaml")
    job = in_namespace(job, "llm-train", "llm", "CC-1050")
    admitted = kueue_webhook(job)
    assert evaluate(body, admitted) == []
    # a Job with a made-up JobSet owner is skipped by Kueue and would start unsuspended
    job["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "x",
            "uid": "1",
            "controller": True,
        }
    ]
    skipped = kueue_webhook(job)
    assert evaluate(body, skipped)
    # the JobSet controller creating its own Jobs is the platform
    jobset_controller = "system:serviceaccount:jobset-system:jobset-controller-manager"
    assert evaluate(body, skipped, username=jobset_controller) == []
    running = copy.deepcopy(admitted)
    running["spec"]["suspend"] = False
    assert evaluate(body, running, old=admitted, operation="UPDATE", username=ALICE)
    assert (
        evaluate(body, running, old=admitted, operation="UPDATE", username=KUEUE_CONTROLLER) == []
    )


# --- common labels --------------------------------------------------------------------------------


def test_workloads_carry_the_namespaces_team_and_cost_centre(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-common-labels")
    ns = namespace(example, "prod-east", "llm-train")
    good = pod({"containers": [container()]})
    assert evaluate(body, good, namespace=ns) == []
    wrong_team = copy.deepcopy(good)
    wrong_team["metadata"]["labels"]["gpuplane.dev/team"] = "vision"
    assert evaluate(body, wrong_team, namespace=ns)
    no_cost = copy.deepcopy(good)
    del no_cost["metadata"]["labels"]["gpuplane.dev/cost-center"]
    assert len(evaluate(body, no_cost, namespace=ns)) == 1
    # a pod the Job controller creates inherits its template: not checked
    assert evaluate(body, no_cost, namespace=ns, username=JOB_CONTROLLER) == []
    # an ownerReference is client-set: it exempts nothing
    no_cost["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "1", "controller": True}
    ]
    assert evaluate(body, no_cost, namespace=ns)


# --- priority -------------------------------------------------------------------------------------


PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def _job(*, cron: bool = False, **labels: str) -> dict[str, Any]:
    """A Job (or a CronJob, labelled on its job template) with these labels."""
    if cron:
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"metadata": {"labels": dict(labels)}, "spec": {}}},
        }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels": dict(labels)}}


def _classes(rendered: Rendered, queue: str) -> list[str]:
    return [f"{queue}-{p.name}" for p in rendered.platform.queues[queue].priorities]


def _held(rendered: Rendered, cluster: str) -> dict[str, str]:
    """Each team namespace of the cluster whose team's queue is there: its team."""
    return {
        ns.name: team.name
        for team in rendered.platform.teams.values()
        if rendered.platform.queues[team.queue].cluster == cluster
        for ns in team.namespaces
        if ns.cluster == cluster
    }


def test_priority_is_required_below_136_and_must_be_the_teams_queues(example: Rendered) -> None:
    """Each team namespace gets its own team's messages, word for word what `fit` quotes."""
    cluster = example.platform.clusters["prod-east"]
    assert priority_enforcement(cluster) == "validating"
    checked = 0
    for cluster_name in example.manifests:
        body = policy(example, cluster_name, "gpuplane-priority")
        for ns_name, team_name in _held(example, cluster_name).items():
            ns = namespace(example, cluster_name, ns_name)
            team = example.platform.teams[team_name]
            queue = example.platform.queues[team.queue]
            default = security_priority.team_priority(team, queue)
            assert default is not None
            value = security_priority.class_name(queue, default)
            required = security_priority.required_message(team, queue, value)
            foreign = security_priority.foreign_message(team, queue)
            for unlabelled in (_job(), _job(cron=True)):
                assert with_messages(body, unlabelled, namespace=ns) == [required], ns_name
            for name in _classes(example, queue.name):
                labelled = {PRIORITY_LABEL: name}
                assert with_messages(body, _job(**labelled), namespace=ns) == [], name
                assert with_messages(body, _job(cron=True, **labelled), namespace=ns) == []
            for other in sorted(example.platform.queues):
                if other == queue.name:
                    continue
                for name in [*_classes(example, other), f"{other}-x"]:
                    foreign_job = _job(**{PRIORITY_LABEL: name})
                    assert with_messages(body, foreign_job, namespace=ns) == [foreign], name
            checked += 1
    assert checked == 15  # every team namespace of the example on both clusters
    # recsys's own priority, not the queue's default
    ns = namespace(example, "prod-east", "recsys-train")
    (message,) = with_messages(
        policy(example, "prod-east", "gpuplane-priority"), _job(), namespace=ns
    )
    assert f"{PRIORITY_LABEL}: prod-production (the team's priority)" in message


def test_a_kueue_cluster_has_one_priority_policy_naming_each_team_namespace_once(
    example: Rendered, two_queues: Rendered
) -> None:
    """Not one per team: every team's policy named every team namespace (the platform's
    accounts are those outside them), so the output grew with the square of the teams."""
    for rendered in (example, two_queues):
        for cluster in rendered.manifests:
            found = [m for m in security(rendered, cluster) if m.name.startswith("gpuplane-prio")]
            assert {(m.kind, m.name) for m in found} == {
                ("ValidatingAdmissionPolicy", "gpuplane-priority"),
                ("ValidatingAdmissionPolicyBinding", "gpuplane-priority"),
            }
            held = _held(rendered, cluster)
            assert _bound_namespaces(rendered, cluster, "gpuplane-priority") == sorted(held)
            body = policy(rendered, cluster, "gpuplane-priority")
            text = json.dumps(body)
            for ns in held:
                assert text.count(f'\\"{ns}\\"') == 1, ns  # its team
                assert text.count(f"system:serviceaccount:{ns}:") == 1, ns  # not the platform
            assert "gpuplane.dev/team" not in body["metadata"]["labels"]


@pytest.fixture(scope="module")
def two_queues(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The example with a second queue on prod-east: `research`, with its own pool and
    classes (`research-urgent`, `research-standard`, `research-scavenger`), and a team in it,
    `robotics` (namespaces robotics-train, -serve, -notebooks; priority urgent)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("two-queues") / "repo")
    pool = (root / "pools/h100-train.yaml").read_text()
    (root / "pools/h100-research.yaml").write_text(
        pool.replace("name: h100-train\n", "name: h100-research\n")
    )
    queue = (root / "queues/prod.yaml").read_text()
    for old, new in (
        ("name: prod\n", "name: research\n"),
        ("- name: production", "- name: urgent"),
        ("- name: preemptible", "- name: scavenger"),
        ("pools: [h100-train, l40s-infer, a100-mig]", "pools: [h100-research]"),
    ):
        assert old in queue
        queue = queue.replace(old, new)
    (root / "queues/research.yaml").write_text(queue)
    team = (root / "teams/vision.yaml").read_text()
    gpus = team[team.index("  gpus:\n") :]
    gpus = gpus[: gpus.index("\n", gpus.rindex("    - {pool:")) + 1]
    for old, new in (
        ("name: vision\n", "name: robotics\n"),
        ("  queue: prod\n", "  queue: research\n"),
        ("  priority: standard\n", "  priority: urgent\n"),
        ('"@example/vision"', '"@example/robotics"'),
        (gpus, "  gpus:\n    - {pool: h100-research, nominal: 8}\n"),
        ("vision-", "robotics-"),
    ):
        assert old in team, old
        team = team.replace(old, new)
    (root / "teams/robotics.yaml").write_text(team)
    rendered: Rendered = render_clean(root)
    return rendered


def test_a_team_may_use_only_its_own_queues_priorities(two_queues: Rendered) -> None:
    """Two queues on one cluster: each team namespace takes its own queue's classes and no
    other's, whichever namespace or team the other queue's are for."""
    body = policy(two_queues, "prod-east", "gpuplane-priority")
    everything = [c for q in sorted(two_queues.platform.queues) for c in _classes(two_queues, q)]
    held = _held(two_queues, "prod-east")
    assert {"robotics", "vision"} <= set(held.values())
    for ns_name, team_name in held.items():
        ns = namespace(two_queues, "prod-east", ns_name)
        team = two_queues.platform.teams[team_name]
        queue = two_queues.platform.queues[team.queue]
        own = _classes(two_queues, queue.name)
        for name in everything:
            said = with_messages(body, _job(**{PRIORITY_LABEL: name}), namespace=ns)
            expected = [] if name in own else [security_priority.foreign_message(team, queue)]
            assert said == expected, (ns_name, name)
        default = security_priority.team_priority(team, queue)
        assert default is not None
        value = security_priority.class_name(queue, default)
        assert with_messages(body, _job(), namespace=ns) == [
            security_priority.required_message(team, queue, value)
        ]
    robotics = namespace(two_queues, "prod-east", "robotics-train")
    (message,) = with_messages(body, _job(), namespace=robotics)
    assert "research-urgent (the team's priority)" in message


def test_no_team_service_account_is_the_platform_in_any_team_namespace(
    two_queues: Rendered,
) -> None:
    """A service account of one team namespace acting in another (as far as RBAC lets it) is
    held like a person; the platform's controllers are not held at all."""
    body = policy(two_queues, "prod-east", "gpuplane-priority")
    held = _held(two_queues, "prod-east")
    accounts = [f"system:serviceaccount:{ns}:default" for ns in sorted(held)]
    accounts += [ARGOCD_CONTROLLER, ARGOCD_CREDENTIAL]
    for target in sorted(held):
        ns = namespace(two_queues, "prod-east", target)
        team = two_queues.platform.teams[held[target]]
        queue = two_queues.platform.queues[team.queue]
        other = next(q for q in sorted(two_queues.platform.queues) if q != queue.name)
        foreign = _job(**{PRIORITY_LABEL: _classes(two_queues, other)[0]})
        for username in accounts:
            said = with_messages(body, foreign, namespace=ns, username=username)
            assert said == [security_priority.foreign_message(team, queue)], (target, username)
            assert with_messages(body, _job(), namespace=ns, username=username), username
        for platform in (JOB_CONTROLLER, KUEUE_CONTROLLER, "system:kube-controller-manager"):
            assert with_messages(body, foreign, namespace=ns, username=platform) == []


def test_a_namespace_the_policy_does_not_name_is_not_bound_and_would_fail_closed(
    example: Rendered,
) -> None:
    """The binding holds in the team namespaces by their immutable name label; were the policy
    ever evaluated in another namespace (a new one someone labels as a team's), its lookups
    fail and it refuses rather than admits. A team namespace relabelled as another team's is
    still its own team's."""
    bound = _bound_namespaces(example, "prod-east", "gpuplane-priority")
    for outside in (SUITE_JOBS_NAMESPACE, "default", "kube-system", "kueue-system", "argocd"):
        assert outside not in bound
    body = policy(example, "prod-east", "gpuplane-priority")
    stray = namespace(example, "prod-east", "llm-train")
    stray["metadata"]["name"] = "llm-scratch"
    stray["metadata"]["labels"]["kubernetes.io/metadata.name"] = "llm-scratch"
    assert "llm-scratch" not in bound
    assert with_messages(body, _job(**{PRIORITY_LABEL: "prod-standard"}), namespace=stray)
    assert with_messages(body, _job(), namespace=stray)
    relabelled = namespace(example, "prod-east", "llm-train")
    relabelled["metadata"]["labels"]["gpuplane.dev/team"] = "recsys"
    llm, prod = example.platform.teams["llm"], example.platform.queues["prod"]
    assert with_messages(body, _job(), namespace=relabelled) == [
        security_priority.required_message(llm, prod, "prod-standard")
    ]


HOSTILE_NAMES = [
    'x", "llm-train": "evil',
    "a\\b'c",
    "ünï\u200b\U0001f600",
    'q"]+["',
    "} || true || {",
]


@pytest.mark.parametrize("hostile", HOSTILE_NAMES)
def test_a_name_cannot_break_out_of_the_policys_literals(hostile: str) -> None:
    """The maps and messages are built from names the schemas already hold to DNS labels; even
    a name that were not reads back as itself, as a key or a value, and in a message."""
    entries: dict[str, str | list[str]] = {hostile: hostile, "llm-train": [hostile, "b"]}
    literal = security_priority._map(entries)
    value = compile_expression(literal).evaluate({})
    assert {str(k): v for k, v in value.items()} == {hostile: hostile, "llm-train": [hostile, "b"]}
    variables = json_to_cel(
        {"team": hostile, "queue": hostile, "teamPriority": hostile, "classText": hostile}
    )
    for template in (security_priority._FOREIGN, security_priority._REQUIRED):
        expression = security_priority._message_expression(template)
        said = compile_expression(expression).evaluate({"variables": variables})
        assert said == template.format(
            team=hostile,
            queue=hostile,
            value=hostile,
            classes=hostile,
            label=PRIORITY_LABEL,
        )


def test_a_team_name_with_cel_in_it_is_refused_on_the_team_file(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    path = root / "teams/llm.yaml"
    text = path.read_text()
    assert text.count("  name: llm\n") == 1
    path.write_text(text.replace("  name: llm\n", '  name: \'llm", "x": "y\'\n'))
    rendered = render_platform(root, OutputValidator([]))
    assert any(
        d.severity.value == "error" and d.at.file == "teams/llm.yaml" for d in rendered.diagnostics
    )


def test_platform_service_accounts_are_those_outside_team_namespaces(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-queue-suspend")
    (variable,) = body["spec"]["variables"]
    check = compile_expression(variable["expression"])
    for username, platform in (
        (KUEUE_CONTROLLER, True),
        (JOB_CONTROLLER, True),
        ("system:serviceaccount:llm-train:default", False),
        ("system:serviceaccount:llm-train-x:default", True),  # not a team namespace
        (ALICE, False),
        ("system:serviceaccountx", False),
    ):
        request = json_to_cel({"userInfo": {"username": username}})
        assert bool(check.evaluate({"request": request})) is platform, username


# --- scheduling: no nodeName, no toleration of every taint, only the queue's PriorityClasses ---


VOLCANO_CASE = REPO / "tests/cases/render/volcano"
REPLICASET_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"


@pytest.fixture(scope="module")
def volcano() -> Rendered:
    rendered: Rendered = render_clean(VOLCANO_CASE)
    return rendered


def test_a_pod_created_on_a_named_node_is_refused_and_scheduling_is_not(
    example: Rendered,
) -> None:
    body = policy(example, "prod-east", "gpuplane-scheduling-llm")
    assert evaluate(body, pod({"containers": [container()]})) == []
    pinned = pod({"nodeName": "gpu-node-7", "containers": [container()]})
    (message,) = evaluate(body, pinned)
    assert "spec.nodeName" in message
    # the Job controller creating a Job's pods is not exempt: the template's nodeName reaches it
    assert evaluate(body, pinned, username=JOB_CONTROLLER)
    # the scheduler binds through the pods/binding subresource, which no rule names ...
    for rule in body["spec"]["matchConstraints"]["resourceRules"]:
        assert not [r for r in rule["resources"] if r.startswith("pods/") or r == "*"], rule
    # ... and a bound pod's later updates (a label, a finalizer removed) are admitted
    bound = copy.deepcopy(pinned)
    bound["metadata"]["labels"]["x"] = "y"
    assert evaluate(body, bound, old=pinned, operation="UPDATE", username=JOB_CONTROLLER) == []


def test_a_node_name_in_a_workload_template_is_refused(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-scheduling-llm")
    (job,) = reference("provisioning/sample-job.yaml")
    job = in_namespace(job, "llm-train", "llm", "CC-1050")
    assert evaluate(body, job) == []
    job["spec"]["template"]["spec"]["nodeName"] = "gpu-node-7"
    assert evaluate(body, job)
    assert evaluate(body, job, old=job, operation="UPDATE")  # a template is checked on update


@pytest.mark.parametrize(
    ("toleration", "refused"),
    [
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "", "operator": "Exists", "effect": "NoExecute"}, True),
        ({"key": "gpuplane.dev/pool", "operator": "Exists", "effect": "NoSchedule"}, False),
        ({"key": "gpuplane.dev/pool", "value": "h100-train", "effect": "NoSchedule"}, False),
        (
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
            False,
        ),
    ],
)
def test_a_toleration_of_every_taint_is_refused(
    example: Rendered, toleration: dict[str, Any], refused: bool
) -> None:
    body = policy(example, "prod-east", "gpuplane-scheduling-llm")
    spec = {"tolerations": [toleration], "containers": [container()]}
    assert bool(evaluate(body, pod(spec))) is refused
    jobset = in_namespace(reference("jobs/sample-jobset.yaml")[0], "llm-train", "llm", "CC-1050")
    for job in jobset["spec"]["replicatedJobs"]:
        job["template"]["spec"]["template"]["spec"]["tolerations"] = [toleration]
    assert bool(evaluate(body, jobset)) is refused


def test_a_pods_tolerations_are_checked_when_an_update_adds_one(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-scheduling-llm")
    keyed = {"key": "gpuplane.dev/pool", "operator": "Exists", "effect": "NoSchedule"}
    created = pod({"tolerations": [keyed], "containers": [container()]})
    widened = copy.deepcopy(created)
    widened["spec"]["tolerations"].append({"operator": "Exists"})
    assert evaluate(body, widened, old=created, operation="UPDATE")
    # a pod from before the policy keeps its tolerations through updates that add none
    legacy = pod({"tolerations": [{"operator": "Exists"}], "containers": [container()]})
    relabelled = copy.deepcopy(legacy)
    relabelled["metadata"]["labels"]["x"] = "y"
    assert evaluate(body, relabelled, old=legacy, operation="UPDATE", username=JOB_CONTROLLER) == []


def test_pods_may_name_only_their_queues_priority_classes(example: Rendered) -> None:
    body = policy(example, "prod-east", "gpuplane-scheduling-llm")
    prod = example.platform.queues["prod"]
    own = [f"prod-{p.name}" for p in prod.priorities]
    assert evaluate(body, pod({"containers": [container()]})) == []
    for name in own:
        assert evaluate(body, pod({"priorityClassName": name, "containers": [container()]})) == []
    rendered_classes = {m.name for m in example.manifests["prod-east"] if m.kind == "PriorityClass"}
    foreign = sorted(rendered_classes - set(own)) + list(scheduling.SYSTEM_PRIORITY_CLASSES)
    assert foreign  # the example has another queue's classes on this cluster
    for name in foreign:
        (message,) = evaluate(body, pod({"priorityClassName": name, "containers": [container()]}))
        assert "prod-standard" in message, name
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "llm-serve"},
            "spec": {
                "template": {"spec": {"priorityClassName": name, "containers": [container()]}}
            },
        }
        assert evaluate(body, deployment), name


def test_a_teams_other_namespaces_are_bound_and_the_suites_namespace_is_not(
    example: Rendered,
) -> None:
    llm = [ns.name for ns in example.platform.teams["llm"].namespaces]
    assert sorted(_bound_namespaces(example, "prod-east", "gpuplane-scheduling-llm")) == sorted(llm)
    for cluster in example.manifests:
        for name in (
            "gpuplane-services",
            *(scheduling.policy_name(t) for t in example.platform.teams.values()),
        ):
            assert SUITE_JOBS_NAMESPACE not in _bound_namespaces(example, cluster, name)
    assert "llm-serve" in _bound_namespaces(example, "prod-east", "gpuplane-services")


def _bound_namespaces(rendered: Rendered, cluster: str, name: str) -> list[str]:
    for m in security(rendered, cluster):
        if m.kind == "ValidatingAdmissionPolicyBinding" and m.name == name:
            (expr,) = m.body["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
            return list(expr["values"])
    return []


# --- services: nothing that opens the namespace beyond its network policy ----------------------


def service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "api", "namespace": "llm-serve"},
        "spec": {"selector": {"app": "api"}, "ports": [{"port": 8000}], **spec},
    }


@pytest.mark.parametrize(
    ("spec", "refused"),
    [
        ({}, False),
        ({"type": "ClusterIP"}, False),
        ({"clusterIP": "None"}, False),  # headless
        ({"type": "ExternalName", "externalName": "api.example.com"}, False),
        ({"type": "NodePort"}, True),
        ({"type": "NodePort", "ports": [{"port": 8000, "nodePort": 30080}]}, True),
        ({"type": "LoadBalancer"}, True),
        ({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/8"]}, True),
        ({"externalIPs": ["10.96.0.10"]}, True),  # CVE-2020-8554: the cluster DNS's address
        ({"externalIPs": []}, False),
    ],
)
def test_services_do_not_open_team_namespaces(
    example: Rendered, spec: dict[str, Any], refused: bool
) -> None:
    body = policy(example, "prod-east", services.POLICY)
    found = evaluate(body, service(**spec))
    assert bool(found) is refused
    if refused:
        assert all("ingress or gateway" in m for m in found)
    # a controller creating it (the KubeRay operator, say) is no exception
    operator = "system:serviceaccount:kuberay-system:kuberay-operator"
    assert bool(evaluate(body, service(**spec), username=operator)) is refused


def test_a_service_cannot_be_turned_into_an_exposed_one_but_an_old_one_can_be_deleted(
    example: Rendered,
) -> None:
    body = policy(example, "prod-east", services.POLICY)
    plain = service()
    assert evaluate(body, service(type="NodePort"), old=plain, operation="UPDATE")
    assert evaluate(body, service(externalIPs=["10.0.0.1"]), old=plain, operation="UPDATE")
    legacy = service(type="LoadBalancer", externalIPs=["10.0.0.1"])
    legacy["metadata"]["finalizers"] = ["service.kubernetes.io/load-balancer-cleanup"]
    released = copy.deepcopy(legacy)
    released["metadata"]["finalizers"] = []
    assert evaluate(body, released, old=legacy, operation="UPDATE") == []
    moved = service(type="LoadBalancer", externalIPs=["10.0.0.2"])
    assert evaluate(body, moved, old=legacy, operation="UPDATE")


def test_a_ray_head_service_that_exposes_the_cluster_is_refused(example: Rendered) -> None:
    body = policy(example, "prod-east", services.POLICY)
    ray_cluster: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "r", "namespace": "llm-train"},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {}}}},
    }
    assert evaluate(body, ray_cluster) == []
    for kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        ray_cluster["spec"]["headGroupSpec"]["serviceType"] = kind
        assert bool(evaluate(body, ray_cluster)) is (kind != "ClusterIP"), kind
        ray_job = {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "j", "namespace": "llm-train"},
            "spec": {"entrypoint": "python x.py", "rayClusterSpec": ray_cluster["spec"]},
        }
        assert bool(evaluate(body, ray_job)) is (kind != "ClusterIP"), kind
    assert evaluate(body, {**ray_job, "spec": {"clusterSelector": {"ray.io/cluster": "r"}}}) == []


# --- Volcano: only the namespace's own queue, PodGroups included --------------------------------


def volcano_objects() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    annotated = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ml-train",
            "annotations": {gpus.VOLCANO_QUEUE_ANNOTATION: "ml-training"},
        },
        "spec": {"schedulerName": "volcano", "containers": [container(**GPU)]},
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml-train"},
        "spec": {"queue": "ml-training", "tasks": [{"replicas": 1, "template": {"spec": {}}}]},
    }
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml-train"},
        "spec": {"minMember": 1, "queue": "ml-training"},
    }
    return annotated, job, group


def test_volcano_objects_name_only_their_namespaces_queue(volcano: Rendered) -> None:
    body = policy(volcano, "lab", gpus.QUEUE_POLICY)
    ns = namespace(volcano, "lab", "ml-train")
    assert ns["metadata"]["annotations"][gpus.VOLCANO_QUEUE_ANNOTATION] == "ml-training"
    queues = {m.name for m in volcano.manifests["lab"] if m.kind == "Queue"}
    assert {"ml-training", "ml-inference"} <= queues
    for obj in volcano_objects():
        assert evaluate(body, obj, namespace=ns) == [], obj["kind"]
        for other in [*sorted(queues - {"ml-training"}), "default", "root"]:
            hostile = copy.deepcopy(obj)
            if obj["kind"] == "Pod":
                hostile["metadata"]["annotations"][gpus.VOLCANO_QUEUE_ANNOTATION] = other
            else:
                hostile["spec"]["queue"] = other
            assert len(evaluate(body, hostile, namespace=ns)) == 1
            # nobody is exempt: a ReplicaSet's pods carry the Deployment template's annotation
            assert evaluate(body, hostile, namespace=ns, username=REPLICASET_CONTROLLER)
            volcano_controller = "system:serviceaccount:volcano-system:volcano-controllers"
            assert evaluate(body, hostile, namespace=ns, username=volcano_controller), other


def test_a_podgroup_left_to_the_crds_default_queue_is_refused(volcano: Rendered) -> None:
    """Volcano's PodGroup CRD defaults spec.queue to `default` before any webhook runs, so a
    lone pod without the queue annotation would land in the default queue."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    crd = yaml.safe_load((SHARED_CRDS / "volcano/scheduling.volcano.sh_podgroups.yaml").read_text())
    (served,) = [v for v in crd["spec"]["versions"] if v["served"]]
    assert (
        served["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["queue"]["default"]
        == "default"
    )
    body = policy(volcano, "lab", gpus.QUEUE_POLICY)
    ns = namespace(volcano, "lab", "ml-train")
    group = volcano_objects()[2]
    group["spec"]["queue"] = "default"
    assert evaluate(body, group, namespace=ns)
    del group["spec"]["queue"]
    assert evaluate(body, group, namespace=ns)


def test_a_relabelled_namespace_keeps_its_queue(volcano: Rendered) -> None:
    body = policy(volcano, "lab", gpus.QUEUE_POLICY)
    ns = namespace(volcano, "lab", "ml-train")
    ns["metadata"]["annotations"][gpus.VOLCANO_QUEUE_ANNOTATION] = "ml-inference"
    _, job, _ = volcano_objects()
    assert evaluate(body, job, namespace=ns) == []
    job["spec"]["queue"] = "ml-inference"
    assert evaluate(body, job, namespace=ns)


def test_volcano_pods_may_name_only_their_queues_priority_classes(volcano: Rendered) -> None:
    body = policy(volcano, "lab", scheduling.policy_name(volcano.platform.teams["ml"]))
    _, job, _ = volcano_objects()
    job["spec"]["tasks"][0]["template"]["spec"]["priorityClassName"] = "system-node-critical"
    assert evaluate(body, job)


def _volcano_submissions(rendered: Rendered) -> Iterator[dict[str, Any]]:
    """What a team submits on the Volcano case (the templates layer's workloads and the gang
    Job of each namespace's `volcano-job-defaults`), and what the controllers make of it: the
    pods (from the template, annotations included) and the PodGroup Volcano's controllers create
    (with the Volcano Job's queue, or the pods' queue annotation)."""
    submitted = templates(rendered, "lab")
    for m in rendered.manifests["lab"]:
        if m.kind == "ConfigMap" and m.name == "volcano-job-defaults":
            job = json.loads(m.body["data"]["job.json"])
            job["metadata"]["namespace"] = m.body["metadata"]["namespace"]
            submitted.append(job)
    for workload in submitted:
        yield workload
        ns = workload["metadata"]["namespace"]
        if workload["kind"] == "Job" and workload["apiVersion"].startswith("batch.volcano.sh/"):
            templates_ = [t["template"] for t in workload["spec"]["tasks"]]
            queue = workload["spec"]["queue"]
        else:
            templates_ = [workload["spec"]["template"]]
            queue = templates_[0]["metadata"]["annotations"].get(gpus.VOLCANO_QUEUE_ANNOTATION)
        for template in templates_:
            meta = {"name": "p", "namespace": ns, **copy.deepcopy(template.get("metadata", {}))}
            spec = copy.deepcopy(template["spec"])
            if workload["apiVersion"].startswith("batch.volcano.sh/"):
                # Volcano's job controller fills in the Job's scheduler and priority class
                for field in ("schedulerName", "priorityClassName"):
                    if field in workload["spec"]:
                        spec.setdefault(field, workload["spec"][field])
            yield {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        group_spec: dict[str, Any] = {"minMember": 1}
        if queue is not None:
            group_spec["queue"] = queue
        yield {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": ns},
            "spec": group_spec,
        }


def test_the_volcano_templates_pass_every_policy(volcano: Rendered) -> None:
    # the case's team lists no image registries, so its image policy refuses every image
    bodies = [
        dict(m.body)
        for m in security(volcano, "lab")
        if m.kind == "ValidatingAdmissionPolicy" and not m.name.startswith("gpuplane-images-")
    ]
    checked = set()
    for obj in _volcano_submissions(volcano):
        ns = obj["metadata"]["namespace"]
        ns_body = namespace(volcano, "lab", ns)
        for body in bodies:
            name = body["metadata"]["name"]
            if _binds(volcano, "lab", name, ns) and _matches(body, obj):
                found = evaluate(body, obj, namespace=ns_body, username=REPLICASET_CONTROLLER)
                assert found == [], (ns, obj["kind"], name, found)
                checked.add((obj["apiVersion"].split("/")[0], obj["kind"], name))
    assert {
        ("scheduling.volcano.sh", "PodGroup", gpus.QUEUE_POLICY),
        ("batch.volcano.sh", "Job", gpus.QUEUE_POLICY),
        ("batch.volcano.sh", "Job", "gpuplane-priority-ml"),
        ("v1", "Pod", gpus.QUEUE_POLICY),
        ("v1", "Pod", scheduling.policy_name(volcano.platform.teams["ml"])),
    } <= checked


# --- Argo CD is not the platform: it syncs the teams' own Applications ------------------------

ARGOCD_CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
ARGOCD_CREDENTIAL = "system:serviceaccount:kube-system:argocd-manager"
"""What Argo CD acts as: its application controller in-cluster, the service account `argocd
cluster add` creates on a cluster it manages from elsewhere (staging-west)."""

BUILTIN_PLURALS = {
    ("", "ConfigMap"): "configmaps",
    ("", "LimitRange"): "limitranges",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("", "Pod"): "pods",
    ("", "ResourceQuota"): "resourcequotas",
    ("", "Secret"): "secrets",
    ("", "Service"): "services",
    ("", "ServiceAccount"): "serviceaccounts",
    ("apps", "Deployment"): "deployments",
    ("batch", "Job"): "jobs",
    ("networking.k8s.io", "NetworkPolicy"): "networkpolicies",
    ("policy", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("rbac.authorization.k8s.io", "Role"): "roles",
    ("rbac.authorization.k8s.io", "RoleBinding"): "rolebindings",
    ("resource.k8s.io", "ResourceClaimTemplate"): "resourceclaimtemplates",
}
"""Kubernetes' resource names of the built-in kinds these tests send (`kubectl api-resources`)."""


@pytest.fixture(scope="module")
def crd_plurals() -> dict[tuple[str, str], str]:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    index = json.loads((SHARED_CRDS / "index.json").read_text())
    return {(crd["group"], crd["kind"]): crd["plural"] for crd in index}


def _plural(obj: dict[str, Any], crd_plurals: dict[tuple[str, str], str]) -> tuple[str, str]:
    group = obj["apiVersion"].rpartition("/")[0]
    key = (group, obj["kind"])
    plural = BUILTIN_PLURALS.get(key) or crd_plurals.get(key)
    assert plural, f"add the resource name of {key}"
    return group, plural


def _rule_matches(rule: dict[str, Any], group: str, plural: str, operation: str) -> bool:
    return (
        (group in rule["apiGroups"] or "*" in rule["apiGroups"])
        and (plural in rule["resources"] or "*" in rule["resources"])
        and (operation in rule["operations"] or "*" in rule["operations"])
    )


def verdicts(
    rendered: Rendered,
    cluster: str,
    obj: dict[str, Any],
    crd_plurals: dict[tuple[str, str], str],
    *,
    username: str,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
) -> dict[str, list[str]]:
    """What every ValidatingAdmissionPolicy of the cluster's security layer whose binding holds
    in the object's namespace, and whose rules match its resource and operation, says of the
    request: policy name -> the messages of its denials (only policies that deny)."""
    group, plural = _plural(obj, crd_plurals)
    ns = obj["metadata"]["namespace"]
    ns_body = namespace(rendered, cluster, ns)
    layer = [m for m in rendered.manifests[cluster] if m.layer == "security"]
    bound = set()
    for m in layer:
        if m.kind != "ValidatingAdmissionPolicyBinding":
            continue
        if "matchResources" not in m.body["spec"]:  # every namespace (the clean-up TTLs)
            bound.add(m.body["spec"]["policyName"])
            continue
        (expr,) = m.body["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        assert expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "In"
        if ns in expr["values"]:
            bound.add(m.body["spec"]["policyName"])
    found: dict[str, list[str]] = {}
    for m in layer:
        if m.kind != "ValidatingAdmissionPolicy" or m.name not in bound:
            continue
        rules = m.body["spec"]["matchConstraints"]["resourceRules"]
        if not any(_rule_matches(r, group, plural, operation) for r in rules):
            continue
        denied = evaluate(
            m.body, obj, old=old, operation=operation, username=username, namespace=ns_body
        )
        if denied:
            found[m.name] = denied
    return found


def _team_namespaces(rendered: Rendered, cluster: str) -> set[str]:
    return {
        ns.name
        for team in rendered.platform.teams.values()
        for ns in team.namespaces
        if ns.cluster == cluster
    }


@pytest.fixture(scope="module")
def dra() -> Rendered:
    rendered: Rendered = render_clean(REPO / "tests/cases/render/dra")
    return rendered


def test_argocd_is_not_a_platform_account(example: Rendered) -> None:
    for cluster in example.manifests:
        body = policy(example, cluster, "gpuplane-queue-suspend")
        (variable,) = body["spec"]["variables"]
        check = compile_expression(variable["expression"])
        for username, platform in (
            (ARGOCD_CONTROLLER, False),
            ("system:serviceaccount:argocd:argocd-server", False),
            (ARGOCD_CREDENTIAL, False),
            ("system:serviceaccount:kube-system:argocd-manager-x", True),  # another account
            (KUEUE_CONTROLLER, True),
            (JOB_CONTROLLER, True),
        ):
            request = json_to_cel({"userInfo": {"username": username}})
            assert bool(check.evaluate({"request": request})) is platform, (cluster, username)


def test_a_repository_argocd_namespace_is_not_the_platform_either(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    config = root / "gpuplane.yaml"
    config.write_text(
        config.read_text().replace("argocdNamespace: argocd", "argocdNamespace: gitops")
    )
    rendered = render_clean(root)
    body = policy(rendered, "prod-east", "gpuplane-queue-suspend")
    (variable,) = body["spec"]["variables"]
    check = compile_expression(variable["expression"])
    for username in (
        "system:serviceaccount:gitops:argocd-application-controller",
        ARGOCD_CONTROLLER,
    ):
        request = json_to_cel({"userInfo": {"username": username}})
        assert not bool(check.evaluate({"request": request})), username


@pytest.mark.parametrize("case", ["example", "dra", "volcano"])
def test_everything_the_platform_syncs_into_team_namespaces_passes_every_policy_from_argocd(
    request: pytest.FixtureRequest, case: str, crd_plurals: dict[tuple[str, str], str]
) -> None:
    rendered: Rendered = request.getfixturevalue(case)
    kinds, checked = set(), 0
    for cluster in rendered.manifests:
        teams = _team_namespaces(rendered, cluster)
        username = (
            ARGOCD_CONTROLLER
            if rendered.platform.clusters[cluster].argocd_destination
            == "https://kubernetes.default.svc"
            else ARGOCD_CREDENTIAL
        )
        for m in rendered.manifests[cluster]:
            if m.body["metadata"].get("namespace") not in teams:
                continue
            obj = dict(m.body)
            kinds.add(m.kind)
            for operation in ("CREATE", "UPDATE"):
                old = obj if operation == "UPDATE" else None
                assert (
                    verdicts(
                        rendered,
                        cluster,
                        obj,
                        crd_plurals,
                        username=username,
                        operation=operation,
                        old=old,
                    )
                    == {}
                ), (cluster, m.path, operation)
                checked += 1
    assert checked
    assert {"RoleBinding", "ResourceQuota", "LimitRange", "NetworkPolicy"} <= kinds
    if case == "example":
        assert {"LocalQueue", "SecretStore", "ServiceAccount"} <= kinds
    if case == "dra":
        assert "ResourceClaimTemplate" in kinds


def _team_gpu_job(**spec: Any) -> dict[str, Any]:
    """A Job from the team's own repository, labelled as the namespace is."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "llm-train",
            "labels": {
                "gpuplane.dev/team": "llm",
                "gpuplane.dev/cost-center": "CC-1050",
                "kueue.x-k8s.io/priority-class": "prod-standard",
            },
        },
        "spec": {
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container(**GPU)],
                }
            },
            **spec,
        },
    }


FAKE_JOBSET_OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "x",
    "uid": "1",
    "controller": True,
}


def test_what_a_team_application_syncs_is_held_like_kubectl(
    example: Rendered, crd_plurals: dict[tuple[str, str], str]
) -> None:
    def said(obj: dict[str, Any], **kw: Any) -> dict[str, list[str]]:
        return verdicts(example, "prod-east", obj, crd_plurals, username=ARGOCD_CONTROLLER, **kw)

    # the same Job, taken in by Kueue's webhook, passes: the policies refuse only what they must
    job = _team_gpu_job()
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] in [
        f"{q.name}-{p.name}" for q in example.platform.queues.values() for p in q.priorities
    ]
    assert said(kueue_webhook(job)) == {}
    # unsuspended past Kueue (a made-up JobSet owner makes its webhook skip the Job)
    job["metadata"]["ownerReferences"] = [FAKE_JOBSET_OWNER]
    job["spec"]["suspend"] = False
    assert "gpuplane-queue-suspend" in said(kueue_webhook(job))
    # a team unsuspending its own admitted-to-wait Job
    waiting = kueue_webhook(_team_gpu_job())
    running = copy.deepcopy(waiting)
    running["spec"]["suspend"] = False
    assert "gpuplane-queue-suspend" in said(running, operation="UPDATE", old=waiting)
    # a Job without the priority label (Kubernetes 1.33: the validating form)
    assert priority_enforcement(example.platform.clusters["prod-east"]) == "validating"
    unprioritised = _team_gpu_job()
    del unprioritised["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    assert "gpuplane-priority" in said(kueue_webhook(unprioritised))
    # an unlabelled Deployment
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "llm-train"},
        "spec": {"template": {"spec": {"containers": [container()]}}},
    }
    assert "gpuplane-common-labels" in said(deployment)
    # a GPU pod: created ungated (a made-up Job owner), or ungated by the next sync
    gpu = pod({"containers": [container(**GPU)]})
    gpu["metadata"]["ownerReferences"] = [
        {**FAKE_JOBSET_OWNER, "apiVersion": "batch/v1", "kind": "Job"}
    ]
    assert "gpuplane-gpu-queue" in said(kueue_webhook(gpu))
    gated = kueue_webhook(pod({"containers": [container(**GPU)]}))
    ungated = copy.deepcopy(gated)
    ungated["spec"]["schedulingGates"] = []
    assert "gpuplane-gpu-queue" in said(ungated, operation="UPDATE", old=gated)
    assert (
        verdicts(
            example,
            "prod-east",
            ungated,
            crd_plurals,
            username=KUEUE_CONTROLLER,
            operation="UPDATE",
            old=gated,
        )
        == {}
    )
