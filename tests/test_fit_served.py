"""fit's discovery step answers "not served" for a custom kind no add-on of the cluster serves.

What kubectl does, from its source: before it sends an object, k8s.io/cli-runtime
`pkg/resource/mapper.go` `infoForData` asks the cluster's discovery for a REST mapping of the
object's group, kind and version; where no CRD serves it, the RESTMapper returns apimachinery's
`meta.NoKindMatchError` (`pkg/api/meta/errors.go`, v0.36.3: `no matches for kind %q in version
%q` for the one version searched) and kubectl prints `resource mapping not found for name: %q
namespace: %q from %q: <that error>` and the line `ensure CRDs are installed first`. Nothing is
created, so neither the API server's admission nor Kueue ever sees the object.

Which add-on serves which kind is each project's CRDs at its release (kubeflow/trainer v1.9.4
manifests/base/crds: PyTorchJob and the other v1 kinds at kubeflow.org/v1; kubeflow/mpi-operator
v0.8.0: MPIJob at kubeflow.org/v2beta1; kubeflow/trainer v2.3.0: TrainJob at
trainer.kubeflow.org/v1alpha1); a cluster serves the kinds of the add-ons its file declares.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.answer.result import FITS, NEVER
from renderer.admission.apiserver import discovery
from renderer.admission.apiserver.gate import RenderedCluster, Request, Step, UserInfo
from renderer.commands.fit import check_file
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.conftest import REPO, TRAINING_OPERATOR, copy_inputs, edit_once, submits

NOBODY = UserInfo("nobody")
KUEUE_CLUSTER = frozenset({"gpuOperator", "kueue", "jobset", "kuberay", "trainer"})
"""A Kueue cluster's add-ons, none of them the training operator or the MPI Operator."""


def _gate(obj: dict[str, Any], addons: frozenset[str] | None) -> Any:
    cluster = RenderedCluster("east", "1.33", addons=addons)
    return discovery.gate(Request(obj, "llm-train", NOBODY, cluster), source="job.yaml")


def _obj(api_version: str, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "ddp", "namespace": "llm-train"},
    }


def _kubectl(api_version: str, kind: str) -> str:
    return (
        'resource mapping not found for name: "ddp" namespace: "llm-train" from "job.yaml": '
        f'no matches for kind "{kind}" in version "{api_version}"\n'
        "ensure CRDs are installed first"
    )


# --- the step -----------------------------------------------------------------------------------


def test_a_kind_no_declared_add_on_serves_is_not_mapped_by_kubectl() -> None:
    outcome = _gate(_obj("kubeflow.org/v1", "PyTorchJob"), KUEUE_CLUSTER)
    assert outcome.status == "refused"
    (refusal,) = outcome.refusals
    assert (refusal.source, refusal.message) == (
        "kubectl",
        _kubectl("kubeflow.org/v1", "PyTorchJob"),
    )
    assert "`trainingOperator: {version: v1.9.4}` under spec.addons" in refusal.fix
    assert outcome.addon == "trainingOperator"  # fit goes on as if declared
    assert outcome.changes == ("cluster east declares `trainingOperator: {version: v1.9.4}`",)
    assert outcome.obj is None  # nothing in the job file to change


def test_the_add_on_declared_serves_it() -> None:
    assert (
        _gate(_obj("kubeflow.org/v1", "PyTorchJob"), KUEUE_CLUSTER | {"trainingOperator"}).status
        == "passed"
    )
    assert (
        _gate(_obj("kubeflow.org/v2beta1", "MPIJob"), KUEUE_CLUSTER | {"mpiOperator"}).status
        == "passed"
    )
    assert (
        _gate(_obj("trainer.kubeflow.org/v1alpha1", "TrainJob"), KUEUE_CLUSTER).status == "passed"
    )


@pytest.mark.parametrize(
    ("api_version", "addon"),
    [("kubeflow.org/v1", "trainingOperator"), ("kubeflow.org/v2beta1", "mpiOperator")],
)
def test_an_mpijob_names_the_operator_of_its_version(api_version: str, addon: str) -> None:
    outcome = _gate(_obj(api_version, "MPIJob"), KUEUE_CLUSTER)
    assert outcome.refusals[0].message == _kubectl(api_version, "MPIJob")
    assert outcome.addon == addon and f"`{addon}: {{version:" in outcome.refusals[0].fix


def test_an_mpijob_of_the_other_operators_version_is_not_served() -> None:
    """The cluster runs the training operator, whose MPIJob CRD serves v1 only: a v2beta1 MPIJob
    finds no mapping, and declaring the MPI Operator beside it would be a second CRD of the same
    name (rule operator-conflict), so fit names the version the cluster serves."""
    outcome = _gate(_obj("kubeflow.org/v2beta1", "MPIJob"), KUEUE_CLUSTER | {"trainingOperator"})
    assert outcome.refusals[0].message == _kubectl("kubeflow.org/v2beta1", "MPIJob")
    assert outcome.addon is None
    fix = outcome.refusals[0].fix
    assert fix.startswith("use apiVersion: kubeflow.org/v1:") and "MPI Operator" in fix


def test_an_unknown_version_of_an_undeclared_kind_names_both_fixes() -> None:
    outcome = _gate(_obj("kubeflow.org/v2", "PyTorchJob"), KUEUE_CLUSTER)
    fix = outcome.refusals[0].fix
    assert "trainingOperator: {version: v1.9.4}" in fix and "apiVersion: kubeflow.org/v1" in fix


def test_a_platform_add_on_is_not_declared_for_a_job() -> None:
    """A Volcano Job on a Kueue cluster: no batch.volcano.sh API is served, and the fix is not
    to install a second scheduler."""
    outcome = _gate(_obj("batch.volcano.sh/v1alpha1", "Job"), KUEUE_CLUSTER)
    assert outcome.refusals[0].message == _kubectl("batch.volcano.sh/v1alpha1", "Job")
    assert outcome.addon is None and "runs Volcano" in outcome.refusals[0].fix


def test_a_kind_no_add_on_gpuplane_knows_serves_cannot_be_told() -> None:
    for api_version, kind in (
        ("serving.kserve.io/v1beta1", "InferenceService"),
        ("argoproj.io/v1alpha1", "Application"),  # Argo CD: not an add-on of a cluster file
    ):
        outcome = _gate(_obj(api_version, kind), KUEUE_CLUSTER)
        assert outcome.status == "passed" and not outcome.refusals
        assert outcome.notes[0].startswith("cannot tell whether the cluster serves")


def test_a_cluster_of_unknown_add_ons_checks_the_version_only() -> None:
    assert _gate(_obj("kubeflow.org/v1", "PyTorchJob"), None).status == "passed"
    assert _gate(_obj("kubeflow.org/v1beta1", "PyTorchJob"), None).refused


# --- fit's answer -------------------------------------------------------------------------------

PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {
        "name": "ddp",
        "namespace": "llm-train",
        "labels": {
            "gpuplane.dev/team": "llm",
            "gpuplane.dev/cost-center": "CC-1050",
            "kueue.x-k8s.io/priority-class": "prod-standard",  # 1.33: the policy requires it
        },
    },
    "spec": {
        "pytorchReplicaSpecs": {
            role: {
                "replicas": replicas,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "pytorch",
                                "image": "registry.example.com/llm/ddp:1",
                                "resources": {
                                    "requests": {"cpu": "4", "memory": "16Gi"},
                                    "limits": {"memory": "16Gi", "nvidia.com/gpu": 1},
                                },
                            }
                        ]
                    }
                },
            }
            for role, replicas in (("Master", 1), ("Worker", 3))
        }
    },
}
"""A PyTorchJob team llm may submit on prod-east (teams/llm.yaml labels, a registry it may
pull from, its queue's priority): everything but its kind is what the platform admits."""


@pytest.fixture(scope="module")
def example() -> Platform:
    return load_platform(REPO).platform


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> Platform:
    """The example with llm-train listing PyTorchJob and prod-east declaring the training
    operator, as the refusal's fix asks."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("declared"))
    submits(root, "llm-train", ("PyTorchJob",), TRAINING_OPERATOR)
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"]
    return loaded.platform


def _fit(platform: Platform, tmp_path: Path, obj: dict[str, Any]) -> Any:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    (result,) = check_file(platform, path).workloads
    return result


def test_a_pytorchjob_on_a_cluster_without_the_training_operator_is_never_created(
    example: Platform, declared: Platform, tmp_path: Path
) -> None:
    assert "trainingOperator" not in example.clusters["prod-east"].addons
    result = _fit(example, tmp_path, copy.deepcopy(PYTORCHJOB))
    assert result.verdict == NEVER
    refused = [(o.step, r) for o, r in result.refusals]
    assert [step for step, _ in refused] == [Step.DISCOVERY]
    assert 'no matches for kind "PyTorchJob" in version "kubeflow.org/v1"' in refused[0][1].message
    assert result.summary.startswith("refused before Kueue (discovery); as if changed, Kueue: ")
    # Kueue's answer is the one the job gets once the add-on is declared: the same as on the
    # platform that declares it, where nothing refuses it
    served = _fit(declared, tmp_path, copy.deepcopy(PYTORCHJOB))
    assert not served.refusals and served.verdict == FITS
    assert result.kueue_verdict == served.kueue_verdict == FITS
    assert (result.integration, result.gang) == ("kubeflow.org/pytorchjob", True)
    assert [(p.name, p.count, p.flavor) for p in result.pod_sets] == [
        (p.name, p.count, p.flavor) for p in served.pod_sets
    ]
    assert any("as if it declared `trainingOperator`" in n for n in result.notes)
    assert not any("as if it declared" in n for n in served.notes)


def test_a_file_of_an_unserved_kind_exits_1(tmp_path: Path, gpuplane) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(PYTORCHJOB, sort_keys=False))
    result = gpuplane("-C", str(REPO), "fit", str(path))
    assert result.exit_code == 1
    assert 'no matches for kind "PyTorchJob" in version "kubeflow.org/v1"' in result.output
    assert "trainingOperator: {version: v1.9.4}" in result.output


def test_a_runtime_of_an_unserved_kind_is_refused_before_it_is_created(
    example: Platform, tmp_path: Path
) -> None:
    """A TrainingRuntime is no workload, yet `kubectl apply` creates it with the file: on
    staging-west, which does not declare Kubeflow Trainer, kubectl finds no mapping for it."""
    assert "trainer" not in example.clusters["staging-west"].addons
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt", "namespace": "search-train"},
        "spec": {"template": {"spec": {"replicatedJobs": []}}},
    }
    job = copy.deepcopy(PYTORCHJOB)
    job["metadata"]["namespace"] = "search-train"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump_all([runtime, job], sort_keys=False))
    answer = check_file(example, path)
    kinds = {w.kind: w for w in answer.workloads}
    # kubectl maps nothing; were it served, RBAC would refuse it too (members create no runtime)
    runtime_answer = kinds["TrainingRuntime"]
    assert runtime_answer.summary == "refused before it is created (discovery, rbac)"
    assert runtime_answer.refusals[0][1].message.endswith(
        'no matches for kind "TrainingRuntime" in version "trainer.kubeflow.org/v1alpha1"\n'
        "ensure CRDs are installed first"
    )
    assert kinds["PyTorchJob"].refusals[0][0].step is Step.DISCOVERY


def test_the_hint_applied_to_the_cluster_file_makes_it_served(tmp_path: Path, gpuplane) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(PYTORCHJOB, sort_keys=False))
    submits(root, "llm-train", ("PyTorchJob",), {})  # the team's kinds; the hint, next:
    edit_once(
        root / "clusters/prod-east.yaml",
        "  addons:\n",
        "  addons:\n    trainingOperator: {version: v1.9.4}\n",
    )
    result = gpuplane("-C", str(root), "fit", str(job))
    assert result.exit_code == 0, result.output
    assert "no matches for kind" not in result.output
