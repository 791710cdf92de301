"""`gpuplane fit` where it used to disagree with Kueue, the API server, KubeRay and the nodes.

Each expectation comes from the upstream source named in its docstring (Kueue v0.19.2,
KubeRay v1.7.0, the NVIDIA device plugin's GPU Feature Discovery) and from the example
platform's own inputs (teams/*.yaml, pools/*.yaml), never from fit's output.

The jobs keep the platform's admission policies and Pod Security (the namespace team's labels,
a TTL, the restricted securityContext in an inference namespace: `tests.compliance`), so that
the answers checked are Kueue's and gpuplane's own, not a refusal before Kueue; a test about a
refusal before Kueue says so.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from renderer.admission.answer.result import NEVER, FitResult
from renderer.admission.answer.text import file_json, fit_json, fit_text
from renderer.admission.scheduler.kueue_usage import read_snapshot
from renderer.commands.fit import check_file, check_fit
from renderer.layers.tenancy import DEFAULT_CONTAINER
from renderer.model import quantity
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.compliance import RESTRICTED_CONTAINER, RESTRICTED_POD, TTL_SECONDS
from tests.conftest import REPO, TRAINING_OPERATOR, copy_inputs, submits

PRIORITY = "kueue.x-k8s.io/priority-class: prod-standard"
"""prod-east runs Kubernetes 1.33: the priority policy requires the label (docs/fit.md)."""
VISION = "gpuplane.dev/team: vision, gpuplane.dev/cost-center: CC-1042"
"""The common labels of team vision's namespaces (teams/vision.yaml `costCenter`)."""
RECSYS = "gpuplane.dev/team: recsys, gpuplane.dev/cost-center: CC-1077"
"""The common labels of team recsys's namespaces (teams/recsys.yaml `costCenter`)."""
SPEECH = "gpuplane.dev/team: speech, gpuplane.dev/cost-center: CC-1061"
"""The common labels of team speech's namespaces (teams/speech.yaml `costCenter`)."""


@pytest.fixture(scope="module")
def example() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


@pytest.fixture(scope="module")
def kubeflow(tmp_path_factory: pytest.TempPathFactory) -> Platform:
    """The example with vision-train submitting PyTorchJobs: prod-east declares the Kubeflow
    Training Operator, which serves them (and its own kubeflow.org/v1 MPIJob)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("kubeflow"))
    loaded = load_platform(submits(root, "vision-train", ("PyTorchJob",), TRAINING_OPERATOR))
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def run(platform: Platform, tmp_path: Path, text: str, **options: object) -> FitResult:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    result = check_fit(platform, path, **options)  # type: ignore[arg-type]
    json.dumps(fit_json(result))
    assert fit_text(result).endswith("\n")
    return result


def refused_before_kueue(result: FitResult) -> list[str]:
    """The refusals of the steps before Kueue, by source."""
    return [r.source for o in result.chain for r in o.refusals]


def job(
    namespace: str, container: str, *, labels: str = f"{PRIORITY}, {VISION}", parallelism: int = 1
) -> str:
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: probe
  namespace: {namespace}
  labels: {{{labels}}}
spec:
  ttlSecondsAfterFinished: {TTL_SECONDS}
  parallelism: {parallelism}
  template:
    spec:
      restartPolicy: Never
      containers:
        - {container}
"""


def deployment(pod_spec: str, *, namespace: str = "recsys-serve") -> str:
    """A Deployment of team recsys, with the restricted securityContext its inference
    namespace enforces."""
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/priority-class: prod-production, {RECSYS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      securityContext: {json.dumps(RESTRICTED_POD)}
{pod_spec}      containers:
        - name: c
          image: registry.example.com/recsys/x:1
          securityContext: {json.dumps(RESTRICTED_CONTAINER)}
          resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def default_request(platform: Platform, team: str, resource: str) -> Decimal:
    """The namespace LimitRange's defaultRequest (tenancy layer), from the team file."""
    return quantity.parse({**DEFAULT_CONTAINER, **platform.teams[team].defaults}[resource])


# --- pod sets are always listed ------------------------------------------------------------


def test_pod_sets_are_listed_when_the_local_queue_does_not_exist(
    example: Platform, tmp_path: Path
) -> None:
    """Kueue makes the Workload, with its pod sets, and marks it inadmissible: "LocalQueue
    research doesn't exist" (`getQueueBlocker`). No flavor was tried."""
    text = job(
        "vision-train",
        "{name: c, image: 'registry.example.com/vision/x:1', resources: {limits: {nvidia.com/gpu: 1}}}",
        labels=f"{PRIORITY}, {VISION}, kueue.x-k8s.io/queue-name: research",
        parallelism=2,
    )
    result = run(example, tmp_path, text)
    assert refused_before_kueue(result) == []
    assert (result.verdict, result.message) == (NEVER, "LocalQueue research doesn't exist")
    (main,) = result.pod_sets
    assert (main.name, main.count, main.flavor, main.tried) == ("main", 2, None, False)
    # requests after Kueue's AdjustResources: the LimitRange's defaultRequest, the gpu limit
    assert main.per_pod == {
        "cpu": default_request(example, "vision", "cpu"),
        "memory": default_request(example, "vision", "memory"),
        "nvidia.com/gpu": 1,
    }
    assert "-> not assigned" in fit_text(result)
    assert "assumes an empty cluster" not in fit_text(result)  # no quota was looked at
    assert fit_json(result)["podSets"][0]["tried"] is False


RAYJOB_AUTOSCALING = f"""apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: r
  namespace: speech-train
  labels: {{kueue.x-k8s.io/priority-class: prod-standard, {SPEECH}}}
spec:
  entrypoint: python x.py
  ttlSecondsAfterFinished: {TTL_SECONDS}
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    enableInTreeAutoscaling: true
    headGroupSpec:
      template:
        spec:
          containers: [{{name: head, image: 'registry.example.com/speech/ray:1'}}]
    workerGroupSpecs:
      - groupName: gpu
        replicas: 2
        template:
          spec:
            containers:
              - {{name: w, image: 'registry.example.com/speech/ray:1', resources: {{limits: {{nvidia.com/gpu: 1}}}}}}
"""


def test_pod_sets_are_listed_when_kueues_webhook_refuses(example: Platform, tmp_path: Path) -> None:
    """`RayJobWebhook.validateCreate` (`raycluster.ValidateCreate`) refuses in-tree autoscaling
    on a RayJob that is not elastic; the answer still lists the pod sets `RayJob.PodSets` would
    give: head, the worker group, the default submitter (K8sJobMode).

    The RayJob keeps the platform's policies, so the refusal is Kueue's webhook's alone. (This
    test's RayJob used to leave out `shutdownAfterJobFinishes`, which Kueue's webhook refuses
    too; on this platform the rendered ValidatingAdmissionPolicy `gpuplane-ttl-rayjobs` refuses
    that first: the ValidatingAdmissionPolicy plugin runs before the validating webhooks,
    k8s.io/kubernetes `pkg/kubeapiserver/options/plugins.go`.)"""
    result = run(example, tmp_path, RAYJOB_AUTOSCALING)
    assert refused_before_kueue(result) == ["Kueue's validating webhook"]  # the chain's step
    assert (result.verdict, result.message_from) == (NEVER, "Kueue's webhook")
    assert result.message == (
        'admission webhook "vrayjob.kb.io" denied the request: '
        "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job "
        "should only use autoscaling when workload slicing is enabled"
    )
    assert [(ps.name, ps.count, ps.tried) for ps in result.pod_sets] == [
        ("head", 1, False),
        ("gpu", 2, False),
        ("submitter", 1, False),
    ]


def test_the_platforms_policy_refuses_a_rayjob_before_kueues_webhook(
    example: Platform, tmp_path: Path
) -> None:
    """Without `shutdownAfterJobFinishes` the TTL policy (renderer/layers/security/cleanup.py)
    refuses the RayJob before Kueue's webhook sees it; as if it were set, Kueue's webhook still
    refuses the autoscaling, and only that (its own shutdown check then passes)."""
    text = RAYJOB_AUTOSCALING.replace("  shutdownAfterJobFinishes: true\n", "")
    result = run(example, tmp_path, text)
    # the policy refuses first; Kueue's webhook, a later step of the chain, sees the same
    # object and refuses it too (the shutdown and the autoscaling)
    assert refused_before_kueue(result) == [
        "ValidatingAdmissionPolicy 'gpuplane-ttl-rayjobs'",
        "Kueue's validating webhook",
    ]
    refusal, webhook = [r for o in result.chain for r in o.refusals]
    assert "shutdownAfterJobFinishes" in webhook.message
    assert "enableInTreeAutoscaling" in webhook.message
    assert refusal.message.endswith(
        "denied request: spec.shutdownAfterJobFinishes must be true: without it the RayCluster, "
        "and its GPUs, outlive the job"
    )
    assert (result.verdict, result.kueue_verdict) == (NEVER, NEVER)
    assert result.message_from == "Kueue's webhook"
    assert result.message is not None and "shutdownAfterJobFinishes" not in result.message
    assert "enableInTreeAutoscaling" in result.message


def test_pod_sets_are_listed_when_requests_exceed_limits(example: Platform, tmp_path: Path) -> None:
    """The LimitRange's defaultRequest fills the missing memory request above the container's
    own limit; Kueue's `ValidateResources` then refuses the Workload (Misconfigured), whose pod
    sets are still there."""
    memory = default_request(example, "vision", "memory")
    limit = quantity.go_string(memory / 2, binary=True)
    container = (
        "{name: c, image: 'registry.example.com/vision/x:1', "
        f"resources: {{limits: {{memory: {limit}}}}}}}"
    )
    result = run(example, tmp_path, job("vision-train", container))
    assert refused_before_kueue(result) == []
    assert result.verdict == NEVER
    assert result.message == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]: Invalid "
        'value: ["memory"]: requests must not exceed its limits'
    )
    (main,) = result.pod_sets
    assert (main.name, main.flavor, main.tried) == ("main", None, False)
    assert main.per_pod["memory"] == memory


# --- Kueue stops at the first pod set that fails -------------------------------------------


def test_kueue_names_only_the_first_pod_set_that_fails(kubeflow: Platform, tmp_path: Path) -> None:
    """`FlavorAssigner.assignFlavors` returns at the first pod set no flavor can hold
    (`atLeastOnePodsAssignmentFailed`): a PyTorchJob whose Master asks for a MIG profile no
    pool offers gets a message about pod set master only, and worker is not tried."""
    example = kubeflow
    assert not any("7g.80gb" in p.mig_layout for p in example.pools.values())
    text = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pt
  namespace: vision-train
  labels: {kueue.x-k8s.io/priority-class: prod-standard, gpuplane.dev/team: vision, gpuplane.dev/cost-center: CC-1042}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata:
          annotations: {kueue.x-k8s.io/podset-preferred-topology: topology.gpuplane.dev/block}
        spec:
          containers:
            - {name: pytorch, image: 'registry.example.com/vision/x:1', resources: {limits: {nvidia.com/mig-7g.80gb: 1}}}
    Worker:
      replicas: 2
      template:
        metadata:
          annotations: {kueue.x-k8s.io/podset-preferred-topology: topology.gpuplane.dev/block}
        spec:
          containers:
            - {name: pytorch, image: 'registry.example.com/vision/x:1', resources: {limits: {nvidia.com/mig-7g.80gb: 1}}}
"""
    result = run(example, tmp_path, text)
    assert refused_before_kueue(result) == []
    assert result.verdict == NEVER
    assert result.message == (
        "couldn't assign flavors to pod set master: resource nvidia.com/mig-7g.80gb "
        "unavailable in ClusterQueue"
    )
    assert [(ps.name, ps.tried) for ps in result.pod_sets] == [("master", True), ("worker", False)]
    assert any("did not try pod set worker" in n for n in result.notes)


# --- exact quantities ----------------------------------------------------------------------


def test_amounts_are_exact(example: Platform, tmp_path: Path) -> None:
    """8G of memory is 8·10⁹ bytes: not 7629Mi. JSON `perPod` and the text keep it exact."""
    container = (
        "{name: c, image: 'registry.example.com/vision/x:1', resources: "
        "{requests: {cpu: 1500m, memory: 8G}, limits: {nvidia.com/gpu: 1, memory: 144G}}}"
    )
    result = run(example, tmp_path, job("vision-train", container))
    (main,) = result.pod_sets
    assert main.per_pod["memory"] == 8 * 10**9
    per_pod = fit_json(result)["podSets"][0]["perPod"]
    assert (per_pod["memory"], per_pod["cpu"]) == ("8G", "1500m")
    assert quantity.parse(per_pod["memory"]) == 8 * 10**9
    assert "memory: 8G" in fit_text(result)


# --- a RayJob on an existing cluster -------------------------------------------------------


def test_a_rayjob_with_a_cluster_selector_never_runs(example: Platform, tmp_path: Path) -> None:
    """Kueue's webhook defaults the LocalQueue and suspends the RayJob (`Default`,
    `ApplyDefaultForSuspend`), validation lets it pass, and no Workload is made for it; KubeRay
    v1.7.0's `ValidateRayJobSpec` then fails a suspended ClusterSelector RayJob."""
    text = """apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: on-existing
  namespace: speech-train
  labels: {kueue.x-k8s.io/priority-class: prod-standard}
spec:
  entrypoint: python -c "print(1)"
  clusterSelector: {ray.io/cluster: shared}
"""
    path = tmp_path / "rayjob.yaml"
    path.write_text(text)
    answer = check_file(example, path)
    (result,) = answer.workloads
    assert not answer.ignored
    assert (result.verdict, result.message_from) == (NEVER, "KubeRay")
    assert result.message == (
        "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation"
    )
    assert (result.integration, result.gang, result.pod_sets) == ("ray.io/rayjob", False, ())
    assert "it makes no Workload for this object" in fit_text(result)
    assert file_json(answer)["admissible"] is False


# --- gpuplane's own nevers say why in `message` --------------------------------------------


def test_the_device_plugins_refusal_is_the_message(example: Platform) -> None:
    """Two time-sliced GPUs in one pod: the device plugin refuses it on the node
    (failRequestsGreaterThanOne), whatever Kueue admitted."""
    pool = example.pools["l40s-infer"]
    assert pool.sharing == "time-slicing"
    result = check_fit(example, REPO / "tests/cases/fit/shared-gpu-two-replicas.yaml")
    assert (result.verdict, result.message_from) == (NEVER, "gpuplane")
    assert result.message is not None and "failRequestsGreaterThanOne" in result.message
    assert any("Kueue alone admits it to flavor l40s-infer" in n for n in result.notes)


def test_a_pod_larger_than_a_node_of_a_pool_without_topology(
    example: Platform, tmp_path: Path
) -> None:
    """l40s-infer names no Topology, so Kueue does not look at its nodes: it admits a pod with
    more CPUs than a node has; gpuplane's check says no node can run it."""
    pool = example.pools["l40s-infer"]
    assert pool.host_cpus is not None and not pool.topology_peer
    cpus = pool.host_cpus + 1
    text = deployment("").replace(
        "resources: {limits: {nvidia.com/gpu: 1}}",
        f'resources: {{requests: {{cpu: "{cpus}"}}, limits: {{nvidia.com/gpu: 1}}}}',
    )
    result = run(example, tmp_path, text)
    assert refused_before_kueue(result) == []
    assert (result.verdict, result.message_from) == (NEVER, "gpuplane")
    assert result.message == (
        f"a pod of pod set main requests {cpus} cpu, but a node of pool l40s-infer has "
        f"{pool.host_cpus}"
    )
    assert result.pod_sets[0].flavor == "l40s-infer"  # Kueue's own answer


# --- node labels no node carries -----------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "runs"),
    [
        ("nvidia.com/gpu.product: Tesla-T4-SHARED", False),  # another GPU model
        ("nvidia.com/gpu.sharing-strategy: mps", False),  # the pool time-slices
        ("nvidia.com/gpu.sharing-strategy: time-slicing", True),
        ("nvidia.com/gpu.product: NVIDIA-L40S-SHARED", True),  # GFD's name on a shared pool
        ("nvidia.com/gpu.product: NVIDIA-L40S", False),  # GFD adds -SHARED there
        ("node-type: inference", False),  # an unprefixed label the pool file does not declare
    ],
)
def test_node_labels_no_node_of_the_pool_carries(
    example: Platform, tmp_path: Path, selector: str, runs: bool
) -> None:
    """A flavor without a Topology matches only its own label keys (Kueue's `flavorSelector`),
    so Kueue admits the pod; GPU Feature Discovery labels l40s-infer's time-sliced nodes
    `nvidia.com/gpu.sharing-strategy: time-slicing` and suffixes the product with `-SHARED`
    (renameByDefault false), so a pod asking for other values never starts."""
    pool = example.pools["l40s-infer"]
    assert (pool.sharing, pool.rename_by_default, pool.accelerator) == (
        "time-slicing",
        False,
        "l40s",
    )
    result = run(example, tmp_path, deployment(f"      nodeSelector: {{{selector}}}\n"))
    assert refused_before_kueue(result) == []
    assert result.pod_sets[0].flavor == "l40s-infer"  # Kueue admits it either way
    if runs:
        assert result.verdict in ("fits", "borrows"), result.reasons
        return
    assert (result.verdict, result.message_from) == (NEVER, "gpuplane")
    key, _, value = selector.partition(": ")
    assert result.message is not None
    assert f"nodeSelector asks for {key}={value}, which no node of pool l40s-infer" in (
        result.message
    )
    assert any(n.startswith("Kueue admits pod set main to flavor l40s-infer") for n in result.notes)


def test_a_required_affinity_no_node_matches(example: Platform, tmp_path: Path) -> None:
    affinity = (
        "      affinity:\n        nodeAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n"
        "              - matchExpressions:\n"
        "                  - {key: nvidia.com/gpu.sharing-strategy, operator: In, values: [mps]}\n"
    )
    result = run(example, tmp_path, deployment(affinity))
    assert refused_before_kueue(result) == []
    assert (result.verdict, result.message_from) == (NEVER, "gpuplane")
    assert result.message is not None and "required node affinity matches no node" in result.message


# --- pods Kueue does not manage as a job ---------------------------------------------------


MPI_V1 = """apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: mpi
  namespace: vision-train
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {labels: {kueue.x-k8s.io/priority-class: prod-standard}}
        spec:
          containers:
            - {name: mpi, image: 'registry.example.com/vision/x:1', resources: {limits: {cpu: 3, memory: 6Gi}}}
    Worker:
      replicas: 2
      template:
        metadata: {labels: {kueue.x-k8s.io/priority-class: prod-standard}}
        spec:
          containers:
            - {name: mpi, image: 'registry.example.com/vision/x:1', resources: {limits: {cpu: 5, memory: 10Gi}}}
"""


def test_a_v1_mpijobs_pods_are_the_api_servers(kubeflow: Platform, tmp_path: Path) -> None:
    """Kueue's MPIJob integration is v2beta1 only, so the training operator's pods reach the
    pod integration as the API server stored them: `SetDefaults_Pod` copied their limits to
    the missing requests before the LimitRanger's defaultRequest could apply."""
    example = kubeflow
    assert default_request(example, "vision", "cpu") not in (3, 5)
    result = run(example, tmp_path, MPI_V1)
    assert "kubectl" not in refused_before_kueue(result)  # the training operator serves it
    assert (result.integration, result.gang) == ("pod", False)
    assert [(ps.name, ps.count, dict(ps.per_pod)) for ps in result.pod_sets] == [
        ("launcher", 1, {"cpu": Decimal(3), "memory": Decimal(6 * 2**30)}),
        ("worker", 1, {"cpu": Decimal(5), "memory": Decimal(10 * 2**30)}),
    ]
    assert (result.replicas, result.replica_unit) == (3, "pod")


def test_pod_by_pod_answers_keep_the_usage_now(kubeflow: Platform, tmp_path: Path) -> None:
    """With --usage every answer has its `usage`, a merged pod-by-pod one too."""
    snapshot = tmp_path / "usage.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    result = run(kubeflow, tmp_path, MPI_V1, usage=read_snapshot([snapshot]))
    assert result.usage is not None
    assert fit_json(result)["assumption"] == "snapshot"


def test_a_priority_label_only_on_the_pod_template_does_not_count(
    example: Platform, tmp_path: Path
) -> None:
    """Kueue reads the priority of the object it makes the Workload of
    (`jobframework.WorkloadPriorityClassName(job.Object())`, the Job's own labels), and the
    rendered ValidatingAdmissionPolicy reads `object.metadata.labels`: a label on the Job's pod
    template is neither's, so on prod-east (1.33) the Job is refused for having none.

    Since the chain, the refusal is the policies step's (it was fit's own answer, `messageFrom:
    API server`, before), and Kueue's answer goes on with the team's own priority, not the
    template's prod-production."""
    text = f"""apiVersion: batch/v1
kind: Job
metadata:
  name: template-label
  namespace: llm-train
  labels: {{gpuplane.dev/team: llm, gpuplane.dev/cost-center: CC-1050}}
spec:
  ttlSecondsAfterFinished: {TTL_SECONDS}
  template:
    metadata:
      labels: {{kueue.x-k8s.io/priority-class: prod-production}}
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.example.com/llm/train:1
          resources: {{requests: {{cpu: "1"}}}}
"""
    result = run(example, tmp_path, text)
    assert result.verdict == NEVER
    assert refused_before_kueue(result) == ["ValidatingAdmissionPolicy 'gpuplane-priority'"]
    (refusal,) = [r for o in result.chain for r in o.refusals]
    assert refusal.message.startswith('jobs.batch "template-label" is forbidden: ')
    assert "must name their priority" in refusal.message
    assert result.priority == "prod-standard"  # teams/llm.yaml `priority: standard`
    assert (result.priority_source or "").startswith("as if labelled")
