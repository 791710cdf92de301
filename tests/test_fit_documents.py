"""`gpuplane fit` reads what `kubectl apply -f FILE` would create: every document, Lists
flattened, one answer per workload, the other objects listed as ignored; and asks the cluster's
Kueue integrations whether a kind is admitted as one gang or pod by pod.

The expectations come from kubectl and Kueue, not from fit: kubectl skips empty documents and
flattens Lists (k8s.io/cli-runtime `FlattenListVisitor`); Kueue v0.19.2's framework names are its
controllers' `FrameworkName` constants (`pkg/controller/jobs/*`); the pods of a kind Kueue does
not manage are admitted one at a time by its pod webhook (`pkg/controller/jobs/pod/
pod_webhook.go` `Default`: no managed ancestor, LocalQueue defaulting, gate).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.admission.answer.result import BORROWS, ERROR, FITS, NEVER, FileFit, FitResult
from renderer.admission.answer.text import file_json, file_text
from renderer.admission.apiserver.gate import Step
from renderer.commands.fit import check_file, check_fit
from renderer.inputs.source import MAX_FILE_BYTES, MAX_STREAM_DOCUMENTS
from renderer.model import integrations
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.conftest import (
    KUBEFLOW_V1_KINDS,
    MPI_OPERATOR,
    REPO,
    TRAINING_OPERATOR,
    Result,
    copy_inputs,
    submits,
)

WORKLOADS = REPO.parent / "shared" / "reference" / "workloads"


def _at_136(target: Path) -> Path:
    copy_inputs(REPO, target)
    for cluster in (target / "clusters").glob("*.yaml"):
        text = cluster.read_text()
        changed = re.sub(r'kubernetesVersion: "[0-9.]+"', 'kubernetesVersion: "1.36"', text)
        assert changed != text, cluster
        cluster.write_text(changed)
    return target


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example platform with both clusters on Kubernetes 1.36, where the security layer's
    MutatingAdmissionPolicy gives an unlabelled job its team's priority (so what is tested here
    is Kueue's behaviour, not the older clusters' refusal), and llm-train submitting the
    Kubeflow v1 jobs: prod-east declares the training operator, which serves them."""
    target = _at_136(tmp_path_factory.mktemp("platform"))
    return submits(target, "llm-train", KUBEFLOW_V1_KINDS, TRAINING_OPERATOR)


@pytest.fixture(scope="module")
def platform(root: Path) -> Platform:
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


@pytest.fixture(scope="module")
def mpi_platform(tmp_path_factory: pytest.TempPathFactory) -> Platform:
    """As `platform`, llm-train submitting MPIJobs instead: prod-east declares the MPI
    Operator (which defines the MPIJob CRD the training operator would: a cluster runs one)."""
    target = _at_136(tmp_path_factory.mktemp("mpi"))
    loaded = load_platform(submits(target, "llm-train", ("MPIJob",), MPI_OPERATOR))
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def put(text: str, name: str = "job.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return put


LABELS = "{gpuplane.dev/team: llm, gpuplane.dev/cost-center: CC-1050}"
"""The common labels the platform's ValidatingAdmissionPolicy 'gpuplane-common-labels' asks of
every workload in a team namespace: the llm team's (teams/llm.yaml `costCenter`)."""
TTL = 172_800
"""The llm team's `retention.finishedJobs` (48h): the most the TTL policies allow a Job."""


def job(name: str, cpu: str = "1", namespace: str = "llm-train") -> str:
    """A Job of one CPU pod: GPU pods meet the topology-aware flavors, another test's matter.
    It carries what the platform's admission policies ask (the team's labels, a TTL), so that
    Kueue's answer is the answer."""
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels: {LABELS}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: registry.example.com/llm/train:1
          resources:
            requests: {{cpu: "{cpu}", memory: 1Gi}}
            limits: {{memory: 1Gi}}
  ttlSecondsAfterFinished: {TTL}
"""


SERVICE = """apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: llm-train
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: llm-train
data:
  epochs: "10"
"""


def answer(platform: Platform, path: Path, namespace: str | None = None) -> FileFit:
    result = check_file(platform, path, namespace=namespace)
    assert file_text(result).endswith("\n")
    json.dumps(file_json(result))
    return result


def kinds(result: FileFit) -> list[tuple[str | None, str | None]]:
    return [(w.kind, w.name) for w in result.workloads]


# --- documents -------------------------------------------------------------------------------


def test_a_workload_with_its_service(platform: Platform, write: Callable[..., Path]) -> None:
    result = answer(platform, write(job("train") + "---\n" + SERVICE))
    assert kinds(result) == [("Job", "train")]
    assert [(i.kind, i.name, i.why) for i in result.ignored] == [
        ("Service", "web", "not a workload")
    ]
    assert result.admissible and result.verdict in (FITS, BORROWS)


def test_two_workloads_get_an_answer_each_in_file_order(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(platform, write(job("first") + "---\n" + job("second")))
    assert kinds(result) == [("Job", "first"), ("Job", "second")]
    assert all(w.admissible for w in result.workloads)
    assert result.admissible


def test_the_worst_workload_decides_the_file(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """A pod of 100,000 cores fits no node and no quota: never, whatever the other job does."""
    result = answer(platform, write(job("small") + "---\n" + job("huge", cpu="100000")))
    small, huge = result.workloads
    assert small.admissible and huge.verdict == NEVER
    assert (result.verdict, result.admissible) == (NEVER, False)
    assert check_fit(platform, write(job("small") + "---\n" + job("huge", cpu="100000"))) == huge


@pytest.mark.parametrize(
    "around",
    [
        "---\n{job}---\n",
        "{job}---\n# only a comment\n",
        "{job}---\nnull\n---\n~\n---\n",
        "# leading comment\n---\n---\n{job}...\n",
    ],
    ids=["empty", "comment-only", "null", "leading-empty"],
)
def test_empty_documents_are_no_objects(
    platform: Platform, write: Callable[..., Path], around: str
) -> None:
    result = answer(platform, write(around.format(job=job("train"))))
    assert kinds(result) == [("Job", "train")]
    assert result.ignored == ()


def _list(*items: str, kind: str = "List") -> str:
    body = "".join("  - " + item.strip().replace("\n", "\n    ") + "\n" for item in items)
    return f"apiVersion: v1\nkind: {kind}\nitems:\n{body}"


def test_a_list_stands_for_its_items_nested_lists_too(
    platform: Platform, write: Callable[..., Path]
) -> None:
    inner = _list(job("inner"), kind="JobList")
    result = answer(platform, write(_list(CONFIGMAP, job("outer"), inner) + "---\n" + SERVICE))
    assert kinds(result) == [("Job", "outer"), ("Job", "inner")]
    assert [(i.kind, i.name) for i in result.ignored] == [
        ("ConfigMap", "settings"),
        ("Service", "web"),
    ]


def _where(path: Path, text: str, value: str) -> str:
    """`file:line:col` of `value` on the (only) line holding `text`, counted in the file."""
    lines = path.read_text().split("\n")
    (number,) = [n for n, line in enumerate(lines, start=1) if text in line]
    return f"{number}:{lines[number - 1].index(value) + 1}"


def test_a_finding_points_into_its_own_document(
    platform: Platform, write: Callable[..., Path]
) -> None:
    broken = job("broken").replace("spec:\n  template:", "spec:\n  parallelism: many\n  template:")
    path = write(job("first") + "---\n" + SERVICE + "---\n" + broken)
    result = answer(platform, path)
    first, bad = result.workloads
    assert first.admissible and bad.verdict == ERROR
    assert bad.reasons[0].startswith(f"{bad.file}:{_where(path, 'parallelism: many', 'many')}: ")
    assert "parallelism" in bad.reasons[0]


def test_a_finding_points_into_a_list_item(platform: Platform, write: Callable[..., Path]) -> None:
    broken = job("broken").replace("spec:\n  template:", "spec:\n  parallelism: many\n  template:")
    path = write(_list(CONFIGMAP, broken))
    (bad,) = answer(platform, path).workloads
    assert bad.reasons[0].startswith(f"{bad.file}:{_where(path, 'parallelism: many', 'many')}: ")


def test_a_file_without_a_workload_says_what_it_holds(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(platform, write(SERVICE + "---\n" + CONFIGMAP))
    assert result.workloads == () and result.verdict == ERROR and not result.admissible
    assert (
        result.worst.reasons[0]
        == "no workload in the file; it holds Service web, ConfigMap settings"
    )
    empty = answer(platform, write("# nothing\n---\n---\n", "empty.yaml"))
    assert empty.verdict == ERROR and empty.worst.summary == "the file holds no object"


def test_a_document_that_is_no_object_is_ignored_with_why(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(
        platform, write(job("train") + "---\njust a string\n---\nmetadata: {name: x}\n")
    )
    assert kinds(result) == [("Job", "train")]
    assert len(result.ignored) == 2
    assert all("not a Kubernetes object" in i.why for i in result.ignored)


# --- hostile files -----------------------------------------------------------------------------


def _refused(result: FileFit, words: str) -> None:
    assert result.verdict == ERROR and not result.admissible and result.workloads == ()
    assert result.worst.summary == "cannot read the job file"
    assert any(words in r for r in result.worst.reasons), result.worst.reasons


def test_ten_thousand_documents(platform: Platform, write: Callable[..., Path]) -> None:
    text = "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n" * 10_000
    assert len(text.encode()) < MAX_FILE_BYTES
    _refused(answer(platform, write(text)), f"more than {MAX_STREAM_DOCUMENTS} YAML documents")
    _refused(answer(platform, write("---\n" * 10_000 + job("x"))), "YAML documents")


def test_too_many_objects_in_a_list(platform: Platform, write: Callable[..., Path]) -> None:
    result = answer(platform, write(_list(*[CONFIGMAP] * 101)))
    assert result.verdict == ERROR and "more than 100 objects" in result.worst.reasons[0]


def test_an_alias_bomb_in_a_later_document(platform: Platform, write: Callable[..., Path]) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        levels.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]")
    bomb = "\n".join(levels) + "\n"
    _refused(answer(platform, write(job("x") + "---\n" + bomb)), "aliases expand this document")


def test_aliases_spread_over_many_documents(platform: Platform, write: Callable[..., Path]) -> None:
    """Each document stays under the per-document limit; all of them together do not."""
    one = "a: &a [" + ", ".join(["x"] * 40) + "]\nb: [" + ", ".join(["*a"] * 20) + "]\n"
    _refused(answer(platform, write(("---\n" + one) * 150)), "nodes together")


def test_a_tag_in_a_later_document(platform: Platform, write: Callable[..., Path]) -> None:
    tagged = job("x") + "---\n!!python/object/apply:os.system ['echo owned']\n"
    _refused(answer(platform, write(tagged)), "YAML tag")


def test_a_huge_document(platform: Platform, write: Callable[..., Path]) -> None:
    text = job("x") + "---\n" + CONFIGMAP + f"  blob: {'x' * (MAX_FILE_BYTES + 1)}\n"
    _refused(answer(platform, write(text)), f"{MAX_FILE_BYTES:,}")


def test_deep_nesting_and_duplicate_keys(platform: Platform, write: Callable[..., Path]) -> None:
    deep = "a: " + "[" * 200 + "]" * 200 + "\n"
    result = answer(platform, write(job("x") + "---\n" + deep))
    assert result.verdict == ERROR and result.workloads == ()
    twice = job("x") + "---\n" + CONFIGMAP + "data: {}\n"
    _refused(answer(platform, write(twice, "twice.yaml")), "duplicate key 'data'")


# --- integrations ------------------------------------------------------------------------------


MPIJOB = """apiVersion: kubeflow.org/{version}
kind: MPIJob
metadata:
  name: pi
  namespace: llm-train
  labels: {{gpuplane.dev/team: llm, gpuplane.dev/cost-center: CC-1050}}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: launcher
              image: registry.example.com/llm/mpi:1
              resources:
                limits: {{cpu: "1", memory: 2Gi}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: registry.example.com/llm/mpi:1
              resources:
                requests: {{cpu: "4", memory: 16Gi}}
                limits: {{memory: 16Gi}}
"""


def test_a_training_operator_v1_mpijob_is_admitted_pod_by_pod(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """Kueue's mpijob integration is for the MPI Operator's kubeflow.org/v2beta1 MPIJob
    (`pkg/controller/jobs/mpijob`, `kfmpi.SchemeGroupVersionKind`); a v1 one is another API, so
    its 1 launcher and 2 workers would be 3 Pod Workloads of Kueue's pod integration. Those pods
    come from the API server, whose Pod defaulting (`SetDefaults_Pod`) copied the launcher's
    limits into its missing requests before the LimitRanger and Kueue saw it: 1 cpu, 2Gi."""
    (mpi,) = answer(platform, write(MPIJOB.format(version="v1"))).workloads
    assert not mpi.refusals  # the training operator serves MPIJob v1
    launcher = next(ps for ps in mpi.pod_sets if ps.name == "launcher")
    assert (launcher.per_pod["cpu"], launcher.per_pod["memory"]) == (Decimal(1), Decimal(2**31))
    assert (mpi.gang, mpi.integration) == (False, "pod")
    assert "this cluster's Kueue does not manage kubeflow.org/v1 MPIJob" in mpi.summary
    assert any("nothing keeps the gang together" in n for n in mpi.notes)
    assert any("kubeflow.org/v2beta1" in n for n in mpi.notes)
    assert [(ps.name, ps.count) for ps in mpi.pod_sets] == [("launcher", 1), ("worker", 1)]
    assert mpi.replicas == 3 and mpi.replica_unit == "pod"
    # Kueue would admit the pods; prod-east declares the training operator here, so the team
    # roles grant its kinds (renderer/layers/tenancy.py `workload_kinds`): nothing refuses it
    assert mpi.kueue_verdict in (FITS, BORROWS)
    assert [(o.step, r.source) for o in mpi.chain for r in o.refusals] == []


def test_the_mpi_operators_v2beta1_mpijob_is_one_gang(
    mpi_platform: Platform, write: Callable[..., Path]
) -> None:
    """One Workload of pod sets launcher and worker (`mpijob_controller.go` PodSets). Its
    launcher is a template (no API server defaulting): the namespace LimitRange's default cpu
    request (the team's `defaults.cpu`) exceeds the 1-cpu limit, which Kueue refuses."""
    platform = mpi_platform
    text = MPIJOB.format(version="v2beta1")
    (mpi,) = answer(platform, write(text)).workloads
    assert not mpi.refusals  # served, and passes the chain: Kueue alone refuses it
    assert (mpi.gang, mpi.integration) == (True, "kubeflow.org/mpijob")
    assert "does not manage" not in mpi.summary
    assert platform.teams["llm"].defaults["cpu"] == "2"
    assert mpi.verdict == NEVER and "requests must not exceed its limits" in (mpi.message or "")
    fixed = text.replace(
        'limits: {{cpu: "1", memory: 2Gi}}'.replace("{{", "{").replace("}}", "}"),
        'requests: {cpu: "1", memory: 2Gi}',
    )
    (ok,) = answer(platform, write(fixed, "fixed.yaml")).workloads
    assert [(ps.name, ps.count) for ps in ok.pod_sets] == [("launcher", 1), ("worker", 2)]
    assert ok.admissible


PYTORCHJOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ddp
  namespace: llm-train
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example.com/llm/ddp:1
              resources:
                requests: {cpu: "4", memory: 16Gi}
                limits: {memory: 16Gi}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example.com/llm/ddp:1
              resources:
                requests: {cpu: "4", memory: 16Gi}
                limits: {memory: 16Gi}
"""


def _without(*frameworks: str) -> Callable[[Any], tuple[str, ...]]:
    def enabled(cluster: Any) -> tuple[str, ...]:
        del cluster
        return tuple(f for f in integrations.DEFAULT_FRAMEWORKS if f not in frameworks)

    return enabled


def test_an_integration_that_is_off(
    platform: Platform, write: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(PYTORCHJOB)
    (gang,) = answer(platform, path).workloads
    # prod-east declares the training operator here: served (the file's job lacks the team's
    # labels, which only the admission policies refuse)
    assert {o.step for o, _ in gang.refusals} == {Step.POLICIES}
    assert (gang.gang, gang.integration) == (True, "kubeflow.org/pytorchjob")
    monkeypatch.setattr(integrations, "enabled_frameworks", _without("kubeflow.org/pytorchjob"))
    (pods,) = answer(platform, path).workloads
    assert (pods.gang, pods.integration) == (False, "pod")
    assert "this cluster's Kueue does not manage kubeflow.org/v1 PyTorchJob" in pods.summary
    assert any("kubeflow.org/pytorchjob integration is off" in n for n in pods.notes)
    assert pods.replicas == 4
    monkeypatch.setattr(
        integrations, "enabled_frameworks", _without("kubeflow.org/pytorchjob", "pod")
    )
    (unseen,) = answer(platform, path).workloads
    assert unseen.verdict == ERROR and unseen.integration is None
    assert "pod integration is off" in unseen.reasons[0]


def test_a_volcano_job_on_a_kueue_cluster(platform: Platform, write: Callable[..., Path]) -> None:
    volcano = """apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: mpi
  namespace: llm-train
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
    - replicas: 2
      name: worker
      template:
        spec:
          containers: [{name: w, image: 'registry.example.com/llm/mpi:1'}]
"""
    (result,) = answer(platform, write(volcano)).workloads
    assert platform.clusters["prod-east"].scheduler == "kueue"
    assert result.verdict == ERROR and result.integration is None and not result.gang
    assert any(
        "runs Kueue, not Volcano: it serves no batch.volcano.sh API" in r for r in result.reasons
    )
    assert any("Kueue has no integration for it" in r for r in result.reasons)


def test_an_inference_service_fit_cannot_see_into(
    platform: Platform, write: Callable[..., Path]
) -> None:
    isvc = """apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: flowers
  namespace: llm-serve
spec:
  predictor:
    model:
      modelFormat: {name: tensorflow}
      storageUri: gs://kfserving-examples/models/tensorflow/flowers
"""
    (result,) = answer(platform, write(isvc)).workloads
    assert result.verdict == ERROR and (result.kind, result.name) == ("InferenceService", "flowers")
    assert result.reasons[0].startswith(
        "fit cannot see the pods serving.kserve.io/v1beta1 InferenceService creates; Kueue has "
        "no integration for it"
    )


@pytest.mark.parametrize(
    ("document", "integration", "gang"),
    [
        (job("train"), "batch/job", True),
        (
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: llm-train}\n"
            "spec:\n  schedule: '0 1 * * *'\n  jobTemplate:\n    spec:\n      template:\n"
            "        spec:\n          restartPolicy: Never\n"
            "          containers: [{name: c, image: 'registry.example.com/llm/x:1'}]\n",
            "batch/job",
            True,
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: one, namespace: llm-train}\nspec:\n"
            "  containers: [{name: c, image: 'registry.example.com/llm/x:1'}]\n",
            "pod",
            False,
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: llm-serve}\n"
            "spec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n"
            "    metadata: {labels: {app: web}}\n"
            "    spec:\n      containers: [{name: c, image: 'registry.example.com/llm/x:1'}]\n",
            "deployment",
            False,
        ),
        (
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: llm-serve}\n"
            "spec:\n  replicas: 2\n  selector: {matchLabels: {app: db}}\n  template:\n"
            "    metadata: {labels: {app: db}}\n"
            "    spec:\n      containers: [{name: c, image: 'registry.example.com/llm/x:1'}]\n",
            "statefulset",
            True,
        ),
    ],
    ids=["job", "cronjob", "pod", "deployment", "statefulset"],
)
def test_integration_and_gang_of_each_kind(
    platform: Platform, write: Callable[..., Path], document: str, integration: str, gang: bool
) -> None:
    """Kueue's FrameworkName of each (job_controller.go "batch/job", pod_controller.go "pod",
    deployment_controller.go "deployment", statefulset_controller.go "statefulset"); a
    Deployment's pods are Workloads of their own, a StatefulSet's one pod group."""
    (result,) = answer(platform, write(document)).workloads
    assert (result.integration, result.gang) == (integration, gang)


def test_a_pod_naming_another_scheduler(platform: Platform, write: Callable[..., Path]) -> None:
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: llm-serve}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n"
        "    metadata: {labels: {app: web}}\n    spec:\n      schedulerName: volcano\n"
        "      containers: [{name: c, image: 'registry.example.com/llm/x:1'}]\n"
    )
    """Kueue admits a pod whatever its schedulerName (no Kueue source reads it), but a Kueue
    cluster runs only the default-scheduler, so the pod would stay Pending: gpuplane's own
    `never`, with its message, and Kueue's admission in a note."""
    (result,) = answer(platform, write(deployment)).workloads
    assert (result.verdict, result.message_from) == ("never", "gpuplane")
    assert result.message is not None
    assert "pod set main names schedulerName volcano, but no scheduler of cluster" in result.message
    assert result.pod_sets[0].flavor is not None  # Kueue assigned a flavor
    assert any("Kueue admits pod set main whatever its schedulerName" in n for n in result.notes)
    plain = deployment.replace(
        "      schedulerName: volcano\n", "      schedulerName: default-scheduler\n"
    )
    (default,) = answer(platform, write(plain, "plain.yaml")).workloads
    assert default.kueue_verdict in ("fits", "borrows")  # Pod Security refuses its pods
    assert not any("schedulerName" in n for n in default.notes)


TRAINING_RUNTIME = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: {kind}
metadata:
  name: {name}
  namespace: llm-train
spec:
  mlPolicy:
    numNodes: 1
  template:
    spec:
      replicatedJobs:
        - name: node
          replicas: 1
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: registry.example.com/llm/torch:1
"""

TRAINJOB = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: tune
  namespace: llm-train
spec:
  runtimeRef:
    name: torch-rt
    kind: TrainingRuntime
  trainer:
    numNodes: 1
"""


def test_a_trainjobs_runtime_is_used_not_checked(
    platform: Platform, write: Callable[..., Path]
) -> None:
    text = "---\n".join(
        [
            TRAINING_RUNTIME.format(kind="TrainingRuntime", name="torch-rt"),
            TRAINJOB,
            TRAINING_RUNTIME.format(kind="ClusterTrainingRuntime", name="torch-rt"),
        ]
    )
    result = answer(platform, write(text))
    # a team member may create neither runtime (the member ClusterRole grants no
    # trainer.kubeflow.org runtime, and a ClusterTrainingRuntime is cluster-scoped): kubectl
    # apply creates the TrainJob and each runtime is refused at RBAC, with an answer of its own
    assert kinds(result) == [
        ("TrainingRuntime", "torch-rt"),
        ("TrainJob", "tune"),
        ("ClusterTrainingRuntime", "torch-rt"),
    ]
    runtime, _, cluster_runtime = result.workloads
    assert [o.step.value for o in runtime.chain if o.refused] == ["rbac"]
    assert "used as the runtime of TrainJob tune" in runtime.reasons  # runtimeRef names it
    assert "not a workload" in cluster_runtime.reasons[0]
    assert result.ignored == ()


# --- JSON, text, exit codes ---------------------------------------------------------------------


PER_WORKLOAD_FIELDS = {
    "file", "verdict", "admissible", "summary", "assumption", "workload", "cluster", "team",
    "purpose", "localQueue", "clusterQueue", "cohort", "priority", "podSets", "replicas",
    "quota", "lenders", "message", "messageFrom", "reasons", "preemption", "notes",
    "gang", "integration",
}  # fmt: skip


def _cli(gpuplane: Callable[..., Result], root: Path, path: Path) -> tuple[Result, dict[str, Any]]:
    text = gpuplane("-C", str(root), "fit", str(path))
    as_json = gpuplane("-C", str(root), "fit", str(path), "--format", "json")
    assert as_json.exit_code == text.exit_code
    return text, json.loads(as_json.output)


def test_json_shape_and_exit_code(
    gpuplane: Callable[..., Result], root: Path, write: Callable[..., Path]
) -> None:
    text, body = _cli(
        gpuplane, root, write(job("first") + "---\n" + SERVICE + "---\n" + job("second"))
    )
    assert text.exit_code == 0
    assert set(body) == {
        "schemaVersion",
        "command",
        "findings",
        "file",
        "verdict",
        "admissible",
        "summary",
        "reasons",
        "workloads",
        "ignored",
    }
    assert body["admissible"] is True and body["reasons"] == []
    assert [w["workload"]["name"] for w in body["workloads"]] == ["first", "second"]
    for workload in body["workloads"]:
        assert set(workload) >= PER_WORKLOAD_FIELDS
        assert (workload["gang"], workload["integration"]) == (True, "batch/job")
    assert body["ignored"] == [{"kind": "Service", "name": "web", "why": "not a workload"}]
    blocks = text.output.split("\n\n")
    assert len(blocks) == 3  # two workloads, then the ignored objects
    assert blocks[0].startswith(f"{body['file']}: {body['workloads'][0]['verdict']}: ")
    assert "Kueue integration batch/job: its pods are admitted together" in blocks[0]
    assert blocks[2] == "ignored (not workloads):\n  - Service web: not a workload\n"


def test_exit_code_is_one_unless_every_workload_is_admissible(
    gpuplane: Callable[..., Result], root: Path, write: Callable[..., Path]
) -> None:
    text, body = _cli(gpuplane, root, write(job("small") + "---\n" + job("huge", cpu="100000")))
    assert text.exit_code == 1
    assert (body["verdict"], body["admissible"]) == (NEVER, False)
    assert [w["admissible"] for w in body["workloads"]] == [True, False]
    none, nothing = _cli(gpuplane, root, write(SERVICE + "---\n" + CONFIGMAP, "none.yaml"))
    assert none.exit_code == 1
    assert (nothing["verdict"], nothing["workloads"]) == (ERROR, [])
    assert nothing["reasons"] == [
        "no workload in the file; it holds Service web, ConfigMap settings"
    ]
    assert len(nothing["ignored"]) == 2


def test_hostile_names_stay_inert_in_the_text(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(
        platform,
        write(job("x") + "---\n" + SERVICE.replace("name: web", 'name: "\\e[31m::error::x"')),
    )
    text = file_text(result)
    assert "\x1b" not in text
    assert "\n  - Service \\x1b[31m" in text


# --- real upstream workloads -------------------------------------------------------------------


def _corpus() -> list[Path]:
    if not WORKLOADS.is_dir():
        return []
    return sorted(p for p in WORKLOADS.rglob("*") if p.suffix in (".yaml", ".yml"))


def _objects(path: Path) -> Iterator[Any]:
    """The objects of a file as kubectl reads them, by PyYAML-compatible ruamel, independently
    of fit's loader: documents that hold something, Lists flattened."""

    def flat(data: Any) -> Iterator[Any]:
        if isinstance(data, dict) and isinstance(data.get("items"), list):
            for item in data["items"]:
                yield from flat(item)
        elif data is not None:
            yield data

    for document in YAML(typ="safe").load_all(path.read_text()):
        yield from flat(document)


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: str(p.relative_to(WORKLOADS)))
def test_every_upstream_workload_file_is_read(platform: Platform, path: Path) -> None:
    """Every object of every file gets an answer or is listed as ignored: none is `cannot read
    the job file`, none raises."""
    result = answer(platform, path, namespace="llm-train")
    assert result.problem is None or result.problem.summary != "cannot read the job file", (
        result.problem.reasons if result.problem else None
    )
    objects = list(_objects(path))
    assert len(result.workloads) + len(result.ignored) == len(objects)
    for workload in result.workloads:
        assert workload.integration is None or isinstance(workload.integration, str)
        assert "the file holds" not in workload.summary


def test_the_corpus_is_there_or_skipped() -> None:
    if not WORKLOADS.is_dir():
        pytest.skip("../shared/reference/workloads is not beside this checkout")
    assert len(_corpus()) >= 50


RAY_CRONJOB = """apiVersion: ray.io/v1
kind: RayCronJob
metadata:
  name: nightly
  namespace: llm-train
  labels:
    kueue.x-k8s.io/queue-name: no-such-queue
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    entrypoint: python /home/ray/train.py
    shutdownAfterJobFinishes: true
    ttlSecondsAfterFinished: 172800
    rayClusterSpec:
      headGroupSpec:
        template:
          spec:
            containers:
              - name: ray-head
                image: registry.example.com/llm/ray:1
                resources:
                  requests: {cpu: "1", memory: 2Gi}
                  limits: {memory: 2Gi}
"""


def _messages(result: FitResult) -> str:
    return " ".join(r.message for o in result.chain for r in o.refusals)


def test_a_ray_cronjobs_run_is_judged_as_kuberays_operator_creates_it(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """The run is created by KubeRay's operator, a service account outside the team
    namespaces, with only its own label (`ray.io/cronjob-name`) and the RayCronJob as its
    controller owner (`constructRayJob`, `SetControllerReference`). gpuplane's common-labels
    policy leaves such requests out (its matchCondition `submitted-by-a-team`), so the run needs
    no team label; the RayJob TTL policy has no such condition, so the run's TTL, written in
    `spec.jobTemplate`, must be within the team's retention; the priority policy (Kubernetes
    1.36: mutating) labels the run, whose owner is no kind Kueue manages."""
    (run,) = answer(platform, write(RAY_CRONJOB)).workloads
    assert "gpuplane-common-labels" not in _messages(run)
    assert (run.priority, run.priority_source) == (
        "prod-standard",
        "no priority label: MutatingAdmissionPolicy gpuplane-priority-llm sets "
        "kueue.x-k8s.io/priority-class: prod-standard (team llm's priority)",
    )
    without_ttl = RAY_CRONJOB.replace("    ttlSecondsAfterFinished: 172800\n", "")
    (bad,) = answer(platform, write(without_ttl, "ttl.yaml")).workloads
    ttl = [r for o in bad.chain for r in o.refusals if "gpuplane-ttl-rayjobs" in r.source]
    assert [r.message for r in ttl] == [
        'rayjobs.ray.io "nightly-<run>" is forbidden: ValidatingAdmissionPolicy '
        "'gpuplane-ttl-rayjobs' with binding 'gpuplane-ttl-rayjobs' denied request: RayJobs in "
        "team llm namespaces must set spec.ttlSecondsAfterFinished to at most 172800 seconds "
        "(retention.finishedJobs of the team file)"
    ]
    assert "spec.jobTemplate" in ttl[0].fix


def test_a_ray_cronjob_is_checked_as_one_of_its_rayjobs(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """KubeRay v1.7.0 `raycronjob_controller.go` `constructRayJob`: each run is a RayJob whose
    spec is `spec.jobTemplate` and whose labels are only the controller's, so the RayCronJob's
    queue-name label never reaches it: LocalQueue defaulting sends the run to `default`.

    Kueue admits the run (`kueue_verdict`); the answer is `never` since the chain: gpuplane's
    team roles grant `ray.io` rayclusters, rayjobs and rayservices (renderer/layers/tenancy.py),
    not raycronjobs, so the API server refuses the member's RayCronJob itself."""
    (run,) = answer(platform, write(RAY_CRONJOB)).workloads
    assert (run.kind, run.name) == ("RayCronJob", "nightly")
    assert (run.integration, run.gang) == ("ray.io/rayjob", True)
    assert run.local_queue == "default" and run.kueue_verdict in (FITS, BORROWS)
    assert [(o.step, r.source) for o in run.chain for r in o.refusals] == [(Step.RBAC, "RBAC")]
    assert 'cannot create resource "raycronjobs" in API group "ray.io"' in _messages(run)
    assert run.verdict == NEVER
    assert any("each run of the RayCronJob is a RayJob of its own" in n for n in run.notes)
    broken = RAY_CRONJOB.replace("rayClusterSpec:", "rayClusterSpec: 3\n    unused:")
    path = write(broken, "broken.yaml")
    (bad,) = answer(platform, path).workloads
    assert bad.verdict == ERROR
    assert bad.reasons[0].startswith(f"{bad.file}:{_where(path, 'rayClusterSpec: 3', '3')}: ")
