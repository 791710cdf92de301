"""AppWrapper: the pod sets Kueue v0.19.2 reads, and what AppWrapper's own webhook refuses.

Expectations come from the sources, not from fit's output:
- Kueue v0.19.2 `pkg/controller/jobs/appwrapper/appwrapper_controller.go` `PodSets`: pod set i
  over all the components is `fmt.Sprintf("%s-%v", j.Name, psIndex)` (lower-cased by
  `NewPodSetReference`), `Count: awutils.Replicas(...)` (1 when `replicas` is unset), from
  `awutils.GetComponentPodSpecs`.
- project-codeflare/appwrapper v1.2.1 `pkg/utils/utils.go`: `EnsureComponentStatusInitialized`
  (declared `podSets` as written, else `InferPodSets`), `InferPodSets` (Pod, Deployment,
  StatefulSet, batch/v1 Job, jobset v1alpha2 JobSet, kubeflow v1 PyTorchJob, ray v1 RayCluster and
  RayJob only), `ValidatePodSets`, `getValueAtPath` (its error words).
- `internal/webhook/appwrapper_webhook.go` `validateAppWrapperCreate` (`vappwrapper.kb.io`):
  "components contains no podspecs", "components contains %v podspecs; at most 8 are allowed",
  "path does not refer to a v1.PodSpecTemplate: %v", "Nested AppWrappers are forbidden".
  apimachinery v0.32.3 `field.Error`: `<field>: Invalid value: <value>: <detail>`, a string value
  quoted (`%q`); the API server prefixes `admission webhook "<name>" denied the request: `.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from renderer.admission.workloads.podsets import Workload
from renderer.admission.workloads.readers import workload_from
from renderer.cli import main
from tests.conftest import APPWRAPPER, example_at_kubernetes, submits

REPO = Path(__file__).resolve().parents[1]
DENIED = 'admission webhook "vappwrapper.kb.io" denied the request: '
SMALL = {"cpu": "1", "memory": "1Gi"}


def container(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "registry.example.com/llm/app:1",
        "resources": {"requests": SMALL},
    }


def pod_template() -> dict[str, Any]:
    return {"spec": {"containers": [container("main")], "restartPolicy": "Never"}}


def job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {**spec, "template": pod_template()},
    }


def lws() -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "inner"},
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {"size": 3, "workerTemplate": pod_template()},
        },
    }


def appwrapper(*components: dict[str, Any], name: str = "aw") -> dict[str, Any]:
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": name},
        "spec": {"components": list(components)},
    }


def read(document: dict[str, Any]) -> Workload:
    workload = workload_from(document)
    assert isinstance(workload, Workload), workload
    return workload


def sets(workload: Workload) -> dict[str, int]:
    return {ps.name: ps.count for ps in workload.pod_sets}


# --- pod sets ------------------------------------------------------------------------------------


def test_declared_pod_sets_keep_their_order_and_replicas_default_to_one() -> None:
    """Declared podSets are the component's pod sets as written (`EnsureComponentStatusInitialized`),
    in their order; `Replicas` is 1 when unset."""
    doc = appwrapper(
        {
            "podSets": [
                {"path": "template.spec.leaderWorkerTemplate.workerTemplate"},
                {"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 4},
            ],
            "template": lws(),
        },
        name="Mixed",
    )
    workload = read(doc)
    # a duplicated path is refused by ValidatePodSets, which runs for every declared list
    assert workload.refused is not None
    assert workload.refused.endswith(
        "spec.components[0].podSets: Invalid value: []v1beta2.AppWrapperPodSet{…}: multiple "
        "DeclaredPodSets with path 'template.spec.leaderWorkerTemplate.workerTemplate'"
    )
    doc["spec"]["components"][0]["podSets"] = [
        {"path": "template.spec.leaderWorkerTemplate.workerTemplate"}
    ]
    workload = read(doc)
    assert workload.refused is None
    assert sets(workload) == {"mixed-0": 1}


def test_pytorchjob_declared_in_another_order_is_named_in_that_order() -> None:
    """Declared podSets matching the inferred ones pass `ValidatePodSets` (matched by path) and
    are used in the declared order: Worker first here."""
    master = {"replicas": 1, "template": pod_template()}
    worker = {"replicas": 3, "template": pod_template()}
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "p"},
        "spec": {"pytorchReplicaSpecs": {"Master": master, "Worker": worker}},
    }
    prefix = "template.spec.pytorchReplicaSpecs."
    declared = [
        {"path": prefix + "Worker.template", "replicas": 3},
        {"path": prefix + "Master.template", "replicas": 1},
    ]
    workload = read(appwrapper({"podSets": declared, "template": pytorch}))
    assert workload.refused is None
    assert sets(workload) == {"aw-0": 3, "aw-1": 1}
    assert sets(read(appwrapper({"template": pytorch}))) == {"aw-0": 1, "aw-1": 3}


def test_inferred_counts_follow_appwrapper_not_the_wrapped_kinds_integration() -> None:
    """`InferPodSets`: a Job at parallelism capped by completions; a JobSet's replicatedJob at
    replicas x that; a Deployment at its `replicas` in one pod set (Kueue's own Deployment
    integration would admit each pod alone); names run over all components."""
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {
            "replicatedJobs": [
                {"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 3, "template": pod_template()}}}
            ]
        },
    }  # fmt: skip
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 3, "template": pod_template()},
    }
    doc = appwrapper(
        {"template": job(parallelism=4, completions=2)},
        {"template": jobset},
        {"template": deployment},
    )
    assert sets(read(doc)) == {"aw-0": 2, "aw-1": 6, "aw-2": 3}


def test_a_kind_appwrapper_cannot_infer_beside_one_it_can_adds_no_pods() -> None:
    """The webhook refuses only when the whole AppWrapper has no pod set (`podSpecCount == 0`):
    a LeaderWorkerSet without declared podSets beside a Job adds none, and the Workload holds the
    Job's pods only."""
    workload = read(appwrapper({"template": job(parallelism=2)}, {"template": lws()}))
    assert workload.refused is None
    assert sets(workload) == {"aw-0": 2}
    assert any("component 1" in note and "no pod sets" in note for note in workload.notes)


def test_only_the_exact_versions_appwrapper_knows_are_inferred() -> None:
    """`InferPodSets` switches on the whole GroupVersionKind: a `ray.io/v1alpha1` RayCluster is
    not inferred, so alone it leaves the AppWrapper with no pod sets."""
    cluster = {
        "apiVersion": "ray.io/v1alpha1",
        "kind": "RayCluster",
        "metadata": {"name": "rc"},
        "spec": {"headGroupSpec": {"template": pod_template()}},
    }
    workload = read(appwrapper({"template": cluster}))
    assert workload.pod_sets == ()
    assert workload.refused is not None and workload.refused.endswith(
        "components contains no podspecs"
    )


# --- refusals --------------------------------------------------------------------------------


def test_refusal_words() -> None:
    """Each refusal in `validateAppWrapperCreate`'s words."""
    mismatch = appwrapper(
        {"podSets": [{"path": "template.spec.template", "replicas": 3}], "template": job(parallelism=2)}
    )  # fmt: skip
    assert read(mismatch).refused == (
        DENIED + "spec.components[0].podSets: Invalid value: []v1beta2.AppWrapperPodSet{…}: "
        "replica count 3 differs from inferred count 2 for PodSet at path position "
        "'template.spec.template'"
    )
    bad_path = appwrapper(
        {"podSets": [{"path": "template.spec.nope", "replicas": 1}], "template": lws()}
    )
    assert read(bad_path).refused == (
        DENIED + 'spec.components[0].podSets[0].path: Invalid value: "template.spec.nope": '
        "path does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing "
        "field 'nope'"
    )
    many = appwrapper(*({"template": job()} for _ in range(9)))
    assert read(many).refused == (
        DENIED + "spec.components: Invalid value: []v1beta2.AppWrapperComponent{…}: components "
        "contains 9 podspecs; at most 8 are allowed"
    )
    nested = appwrapper({"template": appwrapper({"template": job()})}, {"template": job()})
    assert read(nested).refused == (
        DENIED + "spec.components[0].template: Forbidden: Nested AppWrappers are forbidden"
    )
    bad_replicas = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": "two", "template": pod_template()},
    }
    assert read(appwrapper({"template": bad_replicas})).refused == (
        DENIED + "[spec.components[0].template: Invalid value: runtime.RawExtension{…}: error "
        "inferring PodSets: at path position 'template.spec.replicas' non-int value two, "
        "spec.components: Invalid value: []v1beta2.AppWrapperComponent{…}: components contains "
        "no podspecs]"
    )


# --- end to end ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example platform, both clusters at Kubernetes 1.36 (as `tests/test_fit_corpus.py`),
    team llm submitting AppWrappers in llm-serve: prod-east declares AppWrapper, which serves
    them."""
    root = example_at_kubernetes(tmp_path_factory.mktemp("platform"), "1.36")
    return submits(root, "llm-serve", ("AppWrapper",), APPWRAPPER)


def fit(platform: Path, tmp_path: Path, document: dict[str, Any]) -> dict[str, Any]:
    """fit's answer for the AppWrapper in llm-serve, with team llm's labels (teams/llm.yaml),
    which the common-labels policy asks of every AppWrapper."""
    document["metadata"]["labels"] = {
        "gpuplane.dev/team": "llm",
        "gpuplane.dev/cost-center": "CC-1050",
    }
    path = tmp_path / "aw.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    args = ["-C", str(platform), "fit", str(path), "--namespace", "llm-serve", "--format", "json"]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    answer = json.loads(result.stdout)
    assert isinstance(answer, dict)
    return answer


def test_a_wrapped_kind_appwrapper_cannot_infer_is_refused_at_admission(
    platform: Path, tmp_path: Path
) -> None:
    """A LeaderWorkerSet alone, without declared podSets: `InferPodSets` gives none, so the
    webhook's podSpecCount is 0 and it denies the create; no Workload is ever made.

    A team member may not create an AppWrapper on a cluster that declares no `appwrapper`
    add-on (RBAC, renderer/layers/tenancy.py `workload_kinds`): fit says so, then answers as if an administrator had created it, and the
    webhook's refusal is that answer."""
    answer = fit(platform, tmp_path, appwrapper({"template": lws()}))
    (workload,) = answer["workloads"]
    assert (answer["verdict"], answer["admissible"]) == ("never", False)
    sources = [r["source"] for step in workload["chain"] for r in step["refusals"]]
    # the cluster declares AppWrapper, so the team roles grant it: the webhook, a step of the
    # chain, is the only refusal
    assert sources == ["AppWrapper's webhook"]
    assert workload["kueueVerdict"] == "never"
    assert workload["summary"] == (
        "refused before Kueue (kueue-webhook); as if changed, Kueue: never: refused at admission"
    )
    assert workload["messageFrom"] == "AppWrapper's webhook"
    assert workload["message"] == (
        DENIED + "spec.components: Invalid value: []v1beta2.AppWrapperComponent{…}: components "
        "contains no podspecs"
    )


def test_a_pod_template_counts_as_get_pod_template_spec_copies_it() -> None:
    """`GetPodTemplateSpec` copies containers' and init containers' requests but not an init
    container's `restartPolicy` nor the pod-level `resources`: a sidecar counts as a plain init
    container (Kueue takes the larger of it and the containers' sum), and pod-level requests do
    not replace the containers'."""
    sidecar = {**container("proxy"), "restartPolicy": "Always"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [sidecar],
            "containers": [container("main")],
            "resources": {"requests": {"cpu": "8", "memory": "8Gi"}},
        },
    }
    (ps,) = read(appwrapper({"template": pod})).pod_sets
    assert ps.requests() == {"cpu": 1, "memory": 2**30}
