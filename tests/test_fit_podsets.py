"""Pod sets and per-pod requests as Kueue v0.19.2 computes them, on hand-written manifests.

Every expected number and message is worked out from the upstream source named in the test's
docstring (Kueue `pkg/...` at v0.19.2, k8s.io/component-helpers v0.36 `resource/helpers.go`,
KubeRay v1.6, Kubeflow Trainer v2.3.0), not from fit's output."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from renderer.admission.answer.result import NEVER
from renderer.admission.workloads.podsets import PodSet, Workload, resources_validation_message
from renderer.admission.workloads.readers import workload_from
from renderer.commands.fit import check_fit
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.compliance import TTL_SECONDS, team_labels
from tests.conftest import REPO

Gi = 2**30
Mi = 2**20
LIMIT_RANGE_REQUESTS = {"cpu": Decimal(1), "memory": Decimal(2 * Gi)}
LIMIT_RANGE_LIMITS = {"memory": Decimal(2 * Gi)}
"""What the tenancy layer's LimitRange `gpuplane-defaults` holds for a team without defaults:
`defaultRequest` cpu 1, memory 2Gi; `default` memory 2Gi."""


def read(document: dict[str, Any], others: tuple[dict[str, Any], ...] = ()) -> Workload:
    parsed = workload_from(document, others)
    assert isinstance(parsed, Workload), parsed
    return parsed


def sets(workload: Workload) -> dict[str, int]:
    return {ps.name: ps.count for ps in workload.pod_sets}


def container(name: str, **resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": resources}


def job(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": list(containers), **spec}}},
    }


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers), **spec},
    }


def one(workload: Workload) -> PodSet:
    assert len(workload.pod_sets) == 1
    return workload.pod_sets[0]


# --- 1. defaulting order and Kueue's validation -------------------------------------------------


def test_limit_range_defaults_come_before_limits_stand_in_for_requests() -> None:
    """`workload.AdjustResources`: `handlePodLimitRange` merges `defaultRequest` into missing
    requests, then `handleLimitsToRequests` copies limits into requests still missing. A cpu
    limit of 4 without a request is therefore counted at the LimitRange's 1, not 4."""
    ps = one(
        read(job(container("a", limits={"cpu": "4", "memory": "1Gi"}, requests={"memory": "1Gi"})))
    )
    assert ps.requests(LIMIT_RANGE_REQUESTS, LIMIT_RANGE_LIMITS) == {
        "cpu": Decimal(1),
        "memory": Decimal(Gi),
    }
    # without a LimitRange the limit stands in (UseLimitsAsMissingRequestsInPod)
    assert ps.requests()["cpu"] == 4


def test_a_default_request_above_the_limit_is_refused_in_kueues_words() -> None:
    """`ValidateResources` runs on the adjusted Workload: a cpu limit of 500m without a request
    gets the default request 1 > 500m. The message is `ValidateAdmissibility`'s: Kueue's own
    scheduler test writes it as `resources validation failed: spec.podSets[0].template.spec.
    containers[0]: Invalid value: ["cpu"]: requests must not exceed its limits`."""
    wl = read(job(container("a", limits={"cpu": "500m"}, requests={"memory": "1Gi"})))
    message = resources_validation_message(wl.pod_sets, LIMIT_RANGE_REQUESTS, LIMIT_RANGE_LIMITS)
    assert message == (
        "resources validation failed: spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not exceed its limits'
    )
    assert resources_validation_message(wl.pod_sets) is None  # no LimitRange: request = limit


def test_several_invalid_containers_aggregate_as_apimachinery_prints_them() -> None:
    """A memory request above the LimitRange's default memory limit (merged into the missing
    limit) and an init container over its own limit: two field errors, sorted resource names
    as JSON (`GreaterKeys` sorts; `field.Error.ErrorBody` marshals), init containers first,
    aggregated in brackets joined by ", " (`utilerrors.aggregate.Error`)."""
    wl = read(
        job(
            container("a", requests={"memory": "4Gi", "cpu": "3"}, limits={"cpu": "2"}),
            initContainers=[container("i", requests={"cpu": "2"}, limits={"cpu": "1"})],
        )
    )
    assert resources_validation_message(wl.pod_sets, LIMIT_RANGE_REQUESTS, LIMIT_RANGE_LIMITS) == (
        "resources validation failed: [spec.podSets[0].template.spec.initContainers[0]: "
        'Invalid value: ["cpu"]: requests must not exceed its limits, '
        "spec.podSets[0].template.spec.containers[0]: Invalid value: "
        '["cpu","memory"]: requests must not exceed its limits]'
    )


def test_a_pod_gets_its_limits_as_requests_before_the_limit_range() -> None:
    """A Pod is defaulted by the API server before Kueue builds its Workload
    (`SetDefaults_Pod` copies limits to missing requests; the LimitRanger then fills only what
    is still missing), so the same container as above is counted at its limit and is valid."""
    ps = one(read(pod(container("a", limits={"cpu": "500m"}))))
    assert ps.from_pod
    assert ps.requests(LIMIT_RANGE_REQUESTS, LIMIT_RANGE_LIMITS) == {
        "cpu": Decimal("0.5"),
        "memory": Decimal(2 * Gi),
    }
    assert ps.over_limit(LIMIT_RANGE_REQUESTS, LIMIT_RANGE_LIMITS) == ()
    assert ps.limit_without_request() == ()


# --- 2. pod-level resources -------------------------------------------------------------------


def test_pod_level_requests_replace_the_containers_sum() -> None:
    """`resourcehelpers.PodRequests` (component-helpers v0.36, called with default options by
    Kueue's `totalRequestsFromPodSets`): pod-level requests replace the aggregate for cpu and
    memory (`IsSupportedPodLevelResource`); overhead is added after. The Kubernetes website's
    pod-level example: pod requests cpu 1, memory 100Mi."""
    ps = one(
        read(
            pod(
                container(
                    "c1",
                    limits={"cpu": "0.5", "memory": "100Mi"},
                    requests={"cpu": "0.5", "memory": "50Mi"},
                ),
                container("c2", limits={"nvidia.com/gpu": 1}),
                resources={
                    "limits": {"cpu": "1", "memory": "200Mi"},
                    "requests": {"cpu": "1", "memory": "100Mi"},
                },
                overhead={"cpu": "100m"},
            )
        )
    )
    assert ps.requests() == {
        "cpu": Decimal("1.1"),
        "memory": Decimal(100 * Mi),
        "nvidia.com/gpu": Decimal(1),  # not a pod-level resource: the containers' sum stays
    }


def test_pod_level_limits_stand_in_for_pod_level_requests() -> None:
    """`UseLimitsAsMissingRequestsInPod` also copies pod-level limits into missing pod-level
    requests; a pod-level request above its limit is refused at `spec.resources`."""
    ps = one(read(job(container("a", requests={"cpu": "1"}), resources={"limits": {"cpu": "3"}})))
    assert ps.requests()["cpu"] == 3
    bad = read(
        job(container("a"), resources={"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}})
    )
    assert resources_validation_message(bad.pod_sets) == (
        "resources validation failed: spec.podSets[0].template.spec.resources: "
        'Invalid value: ["memory"]: requests must not exceed its limits'
    )


# --- 3. sidecars and init containers ------------------------------------------------------------


def test_sidecars_and_init_containers_follow_aggregate_container_requests() -> None:
    """`AggregateContainerRequests`: containers add up; a sidecar (restartPolicy Always) adds to
    them and to every init container after it; the pod needs the larger of the two. Here:
    containers 2 + sidecar 1 = 3 cpu; init `late` (after the sidecar) 4 + 1 = 5; init `early`
    (before it) 4 alone: 5 cpu. Memory: 1Gi + sidecar 1Gi = 2Gi vs `late` 3Gi + 1Gi = 4Gi."""
    ps = one(
        read(
            job(
                container("main", requests={"cpu": "2", "memory": "1Gi"}),
                initContainers=[
                    container("early", requests={"cpu": "4"}),
                    {
                        **container("proxy", requests={"cpu": "1", "memory": "1Gi"}),
                        "restartPolicy": "Always",
                    },
                    container("late", requests={"cpu": "4", "memory": "3Gi"}),
                ],
            )
        )
    )
    assert ps.requests() == {"cpu": Decimal(5), "memory": Decimal(4 * Gi)}


# --- 4. RayJob ------------------------------------------------------------------------------


def rayjob(**spec: Any) -> dict[str, Any]:
    cluster = {
        "headGroupSpec": {
            "template": {"spec": {"containers": [container("head", requests={"cpu": "2"})]}}
        },
        "workerGroupSpecs": [
            {
                "groupName": "GPU",
                "replicas": 2,
                "numOfHosts": 2,
                "template": {"spec": {"containers": [container("w", requests={"cpu": "8"})]}},
            },
            {
                "groupName": "idle",
                "template": {"spec": {"containers": [container("w", requests={"cpu": "1"})]}},
            },
        ],
    }
    body = {"shutdownAfterJobFinishes": True, "rayClusterSpec": cluster, **spec}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"}, "spec": body}


def test_rayjob_pod_sets_in_k8s_job_mode() -> None:
    """`raycluster.BuildPodSets`: head 1, each worker group named in lower case with
    `replicas` x `numOfHosts` pods (`effectiveWorkerCount`; `replicas` absent is the CRD's
    default 0); `RayJob.addSubmitterPodSet` in K8sJobMode (the CRD's default) adds `submitter`
    with `defaultSubmitterResources`: requests 500m / 200Mi, limits 1 / 1Gi."""
    wl = read(rayjob())
    assert wl.refused is None
    assert sets(wl) == {"head": 1, "gpu": 4, "idle": 0, "submitter": 1}
    assert wl.pod_sets[-1].requests() == {"cpu": Decimal("0.5"), "memory": Decimal(200 * Mi)}


@pytest.mark.parametrize("mode", ["HTTPMode", "InteractiveMode"])
def test_rayjob_without_submitter_pod(mode: str) -> None:
    """`addSubmitterPodSet` adds nothing outside K8sJobMode."""
    assert "submitter" not in sets(read(rayjob(submissionMode=mode)))


def test_rayjob_sidecar_mode_counts_the_submitter_in_the_head() -> None:
    """`addSidecarSubmitterToHeadPodSet`: in SidecarMode the default submitter container is
    added to the head pod set: 2 + 0.5 cpu, 200Mi memory (its request), no submitter pod set."""
    wl = read(rayjob(submissionMode="SidecarMode"))
    assert sets(wl) == {"head": 1, "gpu": 4, "idle": 0}
    assert wl.pod_sets[0].requests() == {"cpu": Decimal("2.5"), "memory": Decimal(200 * Mi)}


def test_rayjob_autoscaler_and_fault_tolerance_add_to_the_head() -> None:
    """`BuildPodSets`: with in-tree autoscaling the autoscaler container (default 500m/512Mi)
    joins the head; with GCS fault tolerance (`ray.io/ft-enabled: "true"`) the head's Ray
    container requests are raised to at least 200m/256Mi (`accountForRedisCleanupInHeadPodSet`)."""
    doc = rayjob()
    doc["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    doc["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    wl = read(doc)
    assert wl.pod_sets[0].requests() == {"cpu": Decimal("2.5"), "memory": Decimal(768 * Mi)}


def test_kueues_rayjob_webhook_refusals() -> None:
    """`RayJobWebhook.validateCreate`: a Kueue-managed RayJob must delete its cluster after
    finishing, and `raycluster.ValidateCreate` refuses in-tree autoscaling on a job that is not
    elastic and a worker group named `head`; the API server answers with the webhook's name."""
    doc = rayjob(shutdownAfterJobFinishes=False)
    doc["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    assert read(doc).refused == (
        'admission webhook "vrayjob.kb.io" denied the request: [spec.shutdownAfterJobFinishes: '
        "Invalid value: false: a kueue managed job should delete the cluster after finishing, "
        "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job "
        "should only use autoscaling when workload slicing is enabled]"
    )
    elastic = rayjob()
    elastic["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    elastic["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    assert read(elastic).refused is None


def test_a_rayjob_on_an_existing_cluster_never_runs() -> None:
    """`validateCreate` lets clusterSelector without rayClusterSpec through ("RayJobs using
    existing clusters are not managed by Kueue"), but the webhook's `Default` has suspended it
    (`ApplyDefaultForSuspend`) and no Workload ever unsuspends it; KubeRay v1.7.0's
    `ValidateRayJobSpec` then fails the suspended ClusterSelector RayJob. A workload, never
    admitted, with KubeRay's message."""
    parsed = workload_from(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "r"},
            "spec": {"clusterSelector": {"ray.io/cluster": "b"}},
        }
    )
    assert isinstance(parsed, Workload)
    assert parsed.refused_by == "KubeRay" and parsed.pod_sets == ()
    assert parsed.refused == (
        "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation"
    )


def test_a_raycluster_with_autoscaling_is_refused() -> None:
    """`RayClusterWebhook.validateCreate`'s own wording for a RayCluster."""
    doc = rayjob()["spec"]["rayClusterSpec"]
    wl = read(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "c"},
            "spec": {**doc, "enableInTreeAutoscaling": True},
        }
    )
    assert wl.refused is not None
    assert wl.refused.startswith('admission webhook "vraycluster.kb.io" denied the request: ')
    assert "a kueue-managed RayCluster can use autoscaling only as an elastic job" in wl.refused


# --- 5. TrainJob ---------------------------------------------------------------------------


RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "rt"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "dataset-initializer",
                        "replicas": 3,
                        "template": {
                            "metadata": {
                                "labels": {
                                    "trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"
                                }
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            container("dataset-initializer", requests={"cpu": "1"})
                                        ]
                                    }
                                }
                            },
                        },
                    },
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            container(
                                                "node", requests={"cpu": "1", "memory": "1Gi"}
                                            )
                                        ]
                                    }
                                }
                            },
                        },
                    },
                ]
            }
        },
    },
}


def trainjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t"},
        "spec": {"runtimeRef": {"kind": "TrainingRuntime", "name": "rt"}, **spec},
    }


def test_trainjob_pod_sets_are_every_replicated_job_of_its_runtime() -> None:
    """Kueue's TrainJob pod sets are the child JobSet's (`trainjob_controller.go` `podSets`).
    Trainer v2.3.0 `newRuntimeInfo`: the trainer step (ancestor label `trainer`) gets the
    TrainJob's `numNodes` (torch `EnforceMLPolicy`) and its `node` container's resources merged
    with `resourcesPerNode` (`MergeResourceRequirements`: per resource); the JobSet builder
    sets initializer and trainer replicas to 1 (`Initializer`, `Trainer`)."""
    wl = read(
        trainjob(
            trainer={
                "numNodes": 4,
                "resourcesPerNode": {"requests": {"nvidia.com/gpu": 8, "cpu": "16"}},
            }
        ),
        (RUNTIME,),
    )
    assert sets(wl) == {"dataset-initializer": 1, "node": 4}
    assert wl.pod_sets[1].requests() == {
        "cpu": Decimal(16),
        "memory": Decimal(Gi),
        "nvidia.com/gpu": Decimal(8),
    }


def test_trainjob_runtime_patches_merge_into_the_runtime() -> None:
    """`mergeRuntimePatches`: a strategic merge patch of the JobSet template, replicated jobs
    merged by name, node selectors merged key by key. Without `numNodes` the trainer gets the
    runtime's `mlPolicy.numNodes`."""
    patch = {
        "manager": "example.com/me",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {"template": {"spec": {"nodeSelector": {"pool": "h100"}}}}
                            },
                        }
                    ]
                }
            }
        },
    }
    wl = read(trainjob(runtimePatches=[patch]), (RUNTIME,))
    assert sets(wl) == {"dataset-initializer": 1, "node": 1}
    assert dict(wl.pod_sets[1].node_selector) == {"pool": "h100"}
    assert "nodeSelector" not in json.dumps(RUNTIME)  # the runtime document is left alone


def test_mpi_trainjob_with_the_launcher_as_a_node() -> None:
    """MPI `EnforceMLPolicy`: with `runLauncherAsNode` the `node` job gets numNodes - 1 pods."""
    runtime = {
        **RUNTIME,
        "spec": {
            **RUNTIME["spec"],
            "mlPolicy": {"numNodes": 1, "mpi": {"runLauncherAsNode": True}},
        },
    }
    wl = read(trainjob(trainer={"numNodes": 3}), (runtime,))
    assert sets(wl)["node"] == 2


def test_trainjob_without_its_runtime_in_the_file() -> None:
    """A built-in ClusterTrainingRuntime is not in the file: the trainer's node job alone, and
    a note that its other jobs are not seen."""
    wl = read(trainjob(runtimeRef={"name": "torch-distributed"}, trainer={"numNodes": 2}))
    assert sets(wl) == {"node": 2}
    assert any("not in the file" in n for n in wl.notes)


# --- 6. the other kinds ----------------------------------------------------------------------


def template(cpu: str) -> dict[str, Any]:
    return {"spec": {"containers": [container("c", requests={"cpu": cpu})]}}


def test_leaderworkerset_pod_sets() -> None:
    """`leaderworkerset.podSets`: without a leader template one `main` pod set of `size`; with
    one, `leader` 1 and `worker` size - 1."""

    def lws(**lwt: Any) -> dict[str, Any]:
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l"},
                "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": template("2"), **lwt}}}  # fmt: skip

    plain = read(lws())
    assert sets(plain) == {"main": 4} and plain.replicas == 2
    assert sets(read(lws(leaderTemplate=template("1")))) == {"leader": 1, "worker": 3}


def test_jobset_pod_sets() -> None:
    """`JobSet.PodSets`: replicas x min(parallelism, completions), names in lower case."""
    doc = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": [
            {"name": "Workers", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2, "template": template("1")}}},
            {"name": "driver", "template": {"spec": {"template": template("1")}}},
        ]},
    }  # fmt: skip
    assert sets(read(doc)) == {"workers": 6, "driver": 1}


def test_kubeflow_pod_sets_in_kueues_order() -> None:
    """`KubeflowJob.PodSets`: `OrderedReplicaTypes` present in the spec, lower-case names,
    replicas default 1; MPIJob: launcher then worker (`orderedReplicaTypes`)."""
    tf = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "t"},
          "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": template("1")}, "PS": {"template": template("1")}}}}  # fmt: skip
    assert list(sets(read(tf)).items()) == [("ps", 1), ("worker", 2)]
    mpi = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
           "spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 4, "template": template("1")}, "Launcher": {"template": template("1")}}}}  # fmt: skip
    assert list(sets(read(mpi)).items()) == [("launcher", 1), ("worker", 4)]


def test_appwrapper_pod_sets_are_named_after_it() -> None:
    """`AppWrapper.PodSets`: `<appwrapper>-<index>` over all its pod sets."""
    doc = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "Aw"},
        "spec": {"components": [{"template": job(container("a", requests={"cpu": "1"}), ) | {"spec": {"parallelism": 2, "template": template("1")}}}]},
    }  # fmt: skip
    assert sets(read(doc)) == {"aw-0": 2}


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def test_a_refused_rayjob_is_never_admitted_with_the_webhooks_words(
    example: Platform, tmp_path: Path
) -> None:
    """The webhook's refusal is the answer: no Workload is ever created. The RayJob keeps the
    platform's policies (the team's labels, a TTL, images from the team's registry), so that
    the refusal is Kueue's webhook's alone: a worker group named `head` (Kueue v0.19.2
    `pkg/controller/jobs/raycluster/common.go` `ValidateCreate`, which `RayJobWebhook`
    calls). This test's RayJob used to leave out `shutdownAfterJobFinishes`: the rendered
    `gpuplane-ttl-rayjobs` policy now refuses that before Kueue's webhook sees it
    (tests/test_fit_fidelity.py)."""
    doc = rayjob(ttlSecondsAfterFinished=TTL_SECONDS)
    cluster = doc["spec"]["rayClusterSpec"]
    cluster["workerGroupSpecs"][1]["groupName"] = "head"
    for group in (cluster["headGroupSpec"], *cluster["workerGroupSpecs"]):
        for each in group["template"]["spec"]["containers"]:
            each["image"] = "registry.example.com/llm/ray:1"
    doc["metadata"]["namespace"] = "llm-train"
    doc["metadata"]["labels"] = {
        "kueue.x-k8s.io/priority-class": "prod-standard",
        **team_labels(example, "llm-train"),
    }
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(doc))
    result = check_fit(example, path)
    assert [r.source for o in result.chain for r in o.refusals] == ["Kueue's validating webhook"]
    assert result.verdict == NEVER
    assert result.message == (
        'admission webhook "vrayjob.kb.io" denied the request: '
        'spec.rayClusterSpec.workerGroupSpecs[1].groupName: Forbidden: "head" is reserved for '
        "the head group"
    )
