"""The Kubeflow Training Operator v1 and the MPI Operator as add-ons: what they serve, what
Kueue manages where they run, how Argo CD installs them, and why a cluster runs only one.

Expectations are written from the projects at the tags gpuplane pins, not from its output:

- kubeflow/trainer (formerly kubeflow/training-operator) v1.9.4: `manifests/base/crds/
  kustomization.yaml` lists six CRDs, tfjobs, pytorchjobs, xgboostjobs, mpijobs, paddlejobs and
  jaxjobs of `kubeflow.org`, each serving `v1` only; `manifests/overlays/standalone/
  kustomization.yaml` sets `namespace: kubeflow` and pins the operator image (`images: newTag:
  v1-93c5489`); its cert controller (`pkg/cert`) writes the CA into the
  ValidatingWebhookConfiguration the base installs.
- kubeflow/mpi-operator v0.8.0: `manifests/base/kubeflow.org_mpijobs.yaml` serves `v2beta1`
  only; the README installs the release with `kubectl apply --server-side -f
  .../v0.8.0/deploy/v2beta1/mpi-operator.yaml`, which `hack/generate-manifest.sh` builds from
  `manifests/overlays/standalone` (`namespace: mpi-operator`, image tag `0.8.0`).
- Kueue v0.19.2: its `kubeflow.org/mpijob` integration is for v2beta1 (`pkg/controller/jobs/
  mpijob`), its PyTorchJob, TFJob, XGBoostJob, PaddleJob and JAXJob integrations for v1.
- Both projects define the CRD `mpijobs.kubeflow.org`: "You can not install both MPIJob v1 and
  v2beta1 crds to the cluster" (kubeflow/trainer#1930); running both takes the training
  operator's `--enable-scheme` without MPIJob (kubeflow/trainer#1777).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from renderer.model.integrations import enabled_frameworks, integration_for
from renderer.model.operators import BY_ADDON, serving
from tests.conftest import (
    KUBEFLOW_V1_KINDS,
    MPI_OPERATOR,
    TRAINING_OPERATOR,
    edit_once,
    submits,
)

TRAINING_KINDS = {*KUBEFLOW_V1_KINDS, "MPIJob"}
TRAINING_REPOSITORY = "https://github.com/kubeflow/trainer.git"
MPI_REPOSITORY = "https://github.com/kubeflow/mpi-operator.git"
OVERLAY = "manifests/overlays/standalone"


def _validate(gpuplane, root: Path) -> dict[str, Any]:
    return json.loads(gpuplane("-C", str(root), "validate", "--format", "json").output)


def _findings(report: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [d for d in report["findings"] if d["rule"] == rule]


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- what each serves ---------------------------------------------------------------------------


def test_the_training_operator_serves_its_six_v1_kinds() -> None:
    operator = BY_ADDON["trainingOperator"]
    assert {(a.group, a.kind, a.versions) for a in operator.apis} == {
        ("kubeflow.org", kind, ("v1",)) for kind in TRAINING_KINDS
    }
    assert operator.release == "v1.9.4"
    # Kueue manages its five job kinds, not its v1 MPIJob (Kueue's MPIJob is v2beta1)
    assert set(operator.frameworks) == {f"kubeflow.org/{k.lower()}" for k in KUBEFLOW_V1_KINDS}
    for kind in KUBEFLOW_V1_KINDS:
        found = integration_for("kubeflow.org/v1", kind)
        assert found is not None and found.framework in operator.frameworks
    assert integration_for("kubeflow.org/v1", "MPIJob") is None


def test_the_mpi_operator_serves_mpijob_v2beta1() -> None:
    operator = BY_ADDON["mpiOperator"]
    assert [(a.group, a.kind, a.versions) for a in operator.apis] == [
        ("kubeflow.org", "MPIJob", ("v2beta1",))
    ]
    assert operator.release == "v0.8.0"
    found = integration_for("kubeflow.org/v2beta1", "MPIJob")
    assert found is not None and operator.frameworks == (found.framework,)


def test_an_mpijob_is_served_by_the_operator_of_its_version() -> None:
    for version, addon in (("v1", "trainingOperator"), ("v2beta1", "mpiOperator")):
        operator = serving("kubeflow.org", "MPIJob", version)
        assert operator is not None and operator.addon == addon, version
    assert serving("kubeflow.org", "MPIJob", "v2") is not None  # a kind known, a version not


# --- on a cluster -------------------------------------------------------------------------------


def _loaded(root: Path) -> Any:
    from renderer.pipeline import load_platform

    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def test_kueue_manages_the_kinds_of_the_operator_the_cluster_runs(platform: Path) -> None:
    submits(platform, "llm-train", tuple(KUBEFLOW_V1_KINDS), TRAINING_OPERATOR)
    submits(platform, "search-train", ("MPIJob",), MPI_OPERATOR)
    loaded = _loaded(platform)
    prod = set(enabled_frameworks(loaded.clusters["prod-east"]))
    staging = set(enabled_frameworks(loaded.clusters["staging-west"]))
    v1 = {f"kubeflow.org/{k.lower()}" for k in KUBEFLOW_V1_KINDS}
    assert v1 <= prod and "kubeflow.org/mpijob" not in prod
    assert "kubeflow.org/mpijob" in staging and not v1 & staging


def test_argo_cd_installs_each_from_its_standalone_overlay_at_the_tag(
    platform: Path, gpuplane
) -> None:
    submits(platform, "llm-train", ("PyTorchJob",), TRAINING_OPERATOR)
    submits(platform, "search-train", ("MPIJob",), MPI_OPERATOR)
    result = gpuplane("-C", str(platform), "render")
    assert result.exit_code == 0, result.output
    rendered = platform / "rendered"
    cases = (
        ("prod-east", "training-operator", TRAINING_REPOSITORY, "v1.9.4", "kubeflow"),
        ("staging-west", "mpi-operator", MPI_REPOSITORY, "v0.8.0", "mpi-operator"),
    )
    for cluster, name, repository, tag, namespace in cases:
        argocd = rendered / cluster / "gitops" / "argocd"
        app = yaml.safe_load((argocd / f"application-{cluster}-{name}.yaml").read_text())
        (source,) = app["spec"]["sources"]  # no values: the overlay pins what it needs
        assert source == {"repoURL": repository, "path": OVERLAY, "targetRevision": tag}
        assert app["spec"]["destination"]["namespace"] == namespace
        assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"]
        webhooks = {d["kind"] for d in app["spec"].get("ignoreDifferences", [])}
        # only the training operator has a webhook, whose CA its cert controller writes
        assert ("ValidatingWebhookConfiguration" in webhooks) is (name == "training-operator")
        projects = [yaml.safe_load(p.read_text()) for p in argocd.glob("appproject-platform*")]
        (project,) = [p for p in projects if p["metadata"]["name"] == app["spec"]["project"]]
        assert repository in project["spec"]["sourceRepos"]
        other = "mpi-operator" if name == "training-operator" else "training-operator"
        assert not (argocd / f"application-{cluster}-{other}.yaml").exists()


def test_an_operator_already_running_is_not_installed_but_serves(platform: Path, gpuplane) -> None:
    submits(platform, "llm-train", ("PyTorchJob",), {})
    edit_once(
        platform / "clusters/prod-east.yaml",
        "  addons:\n",
        "  addons:\n    trainingOperator: {enabled: false}\n",
    )
    result = gpuplane("-C", str(platform), "render")
    assert result.exit_code == 0, result.output
    argocd = platform / "rendered" / "prod-east" / "gitops" / "argocd"
    assert not (argocd / "application-prod-east-training-operator.yaml").exists()
    assert "kubeflow.org/pytorchjob" in enabled_frameworks(_loaded(platform).clusters["prod-east"])


# --- the policy ---------------------------------------------------------------------------------


def test_a_namespace_kind_needs_its_operator_and_the_hint_declares_it(
    platform: Path, gpuplane
) -> None:
    team = platform / "teams" / "search.yaml"
    submits(platform, "search-train", ("PyTorchJob", "MPIJob"), {})
    found = _findings(_validate(gpuplane, platform), "operator-missing")
    line = _line_of(team, "kinds: [PyTorchJob, MPIJob]")
    assert {(d["file"], d["line"]) for d in found} == {("teams/search.yaml", line)}
    hints = sorted(d["hint"] for d in found)
    assert "mpiOperator: {version: v0.8.0}" in hints[0]  # MPIJob: the v2beta1 one Kueue manages
    assert "trainingOperator: {version: v1.9.4}" in hints[1]
    # the training operator's hint, applied, serves both: its own MPIJob is v1 (and declaring
    # the MPI Operator beside it would be a second CRD of that name: operator-conflict)
    cluster = platform / "clusters" / "staging-west.yaml"
    edit_once(cluster, "  addons:\n", "  addons:\n    trainingOperator: {version: v1.9.4}\n")
    report = _validate(gpuplane, platform)
    assert not _findings(report, "operator-missing")
    assert not _findings(report, "operator-unused")
    assert not _findings(report, "operator-conflict")


def test_an_mpijob_alone_needs_the_mpi_operator(platform: Path, gpuplane) -> None:
    submits(platform, "search-train", ("MPIJob",), {})
    (found,) = _findings(_validate(gpuplane, platform), "operator-missing")
    assert "MPI Operator" in found["message"] and "mpiOperator: {version: v0.8.0}" in found["hint"]
    cluster = platform / "clusters" / "staging-west.yaml"
    edit_once(cluster, "  addons:\n", "  addons:\n    mpiOperator: {version: v0.8.0}\n")
    report = _validate(gpuplane, platform)
    assert not _findings(report, "operator-missing") and not _findings(report, "operator-unused")


def test_declaring_both_is_an_error_on_the_second_and_the_hint_clears_it(
    platform: Path, gpuplane
) -> None:
    cluster = platform / "clusters" / "staging-west.yaml"
    training = "    trainingOperator: {version: v1.9.4}\n"
    mpi = "    mpiOperator: {version: v0.8.0}\n"
    for first, second, key in ((training, mpi, "mpiOperator"), (mpi, training, "trainingOperator")):
        original = cluster.read_text()
        edit_once(cluster, "    opencost:\n", f"{first}{second}    opencost:\n")
        report = _validate(gpuplane, platform)
        (found,) = _findings(report, "operator-conflict")
        assert (found["file"], found["line"]) == (
            "clusters/staging-west.yaml",
            _line_of(cluster, f"{key}:"),
        )
        assert found["level"] == "error" and "MPIJob" in found["message"]
        assert f"remove spec.addons.{key}" in found["hint"]
        # the hint, applied: one of the two stays
        edit_once(cluster, second, "")
        assert not _findings(_validate(gpuplane, platform), "operator-conflict")
        cluster.write_text(original)


def test_an_operator_already_running_still_conflicts(platform: Path, gpuplane) -> None:
    """`enabled: false` says the cluster runs the operator: its CRD is there all the same."""
    cluster = platform / "clusters" / "staging-west.yaml"
    edit_once(
        cluster,
        "    opencost:\n",
        "    trainingOperator: {enabled: false}\n    mpiOperator: {version: v0.8.0}\n    opencost:\n",
    )
    (found,) = _findings(_validate(gpuplane, platform), "operator-conflict")
    assert found["line"] == _line_of(cluster, "mpiOperator:")
