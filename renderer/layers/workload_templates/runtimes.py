"""The Kubeflow Trainer runtimes the TrainJob templates name: the platform's
ClusterTrainingRuntime `torch-distributed`, applied by the training layer
(`renderer.layers.training`) on clusters that serve Trainer's kinds.

A TrainJob holds no pod template: Trainer v2.3 builds a JobSet from the runtime's JobSet template,
puts the TrainJob's `trainer` (image, command, env, `numNodes`, `resourcesPerNode`,
`numProcPerNode`) into the `node` container of the replicated Job labelled
`trainer.kubeflow.org/trainjob-ancestor-step: trainer`, and strategic-merges each
`runtimePatches` entry (pod labels and annotations, nodeSelector, volumes, the `node`
container's volumeMounts) into the template (`pkg/runtime/core/trainingruntime.go`
`newRuntimeInfo`, `pkg/runtime/framework/plugins/jobset/builder.go` `Trainer`). So what the
runtime's pod template sets holds for every team whose TrainJob names it: the restricted Pod
Security settings and the clean-up, which no TrainJob can patch away (a runtime patch may set
the pod's and the `node` container's securityContext, which the admission policies and Pod
Security then check on the pods). It lives beside the templates because the two are one
workload: the runtime is the half every team shares, the TrainJob template the team's half.

Modelled on the upstream runtime of the same name (kubeflow/trainer v2.3.0,
`manifests/base/runtimes/torch_distributed.yaml` and the chart's
`files/runtimes/torch-distributed.yaml`): one replicated Job `node` with the trainer ancestor
label, `mlPolicy: {numNodes: 1, torch: {}}`, the `trainer.kubeflow.org/framework: torch` label,
and upstream's image as the default a TrainJob replaces. Design: docs/workload-templates.md.
"""

from __future__ import annotations

from typing import Any

from renderer.layers.workload_templates.pieces import (
    CONTAINER_SECURITY,
    JOB_GRACE_SECONDS,
    POD_SECURITY,
    finished_ttl,
)
from renderer.model.view import ClusterView
from renderer.output.manifest import metadata

API_VERSION = "trainer.kubeflow.org/v1alpha1"
API_GROUP = "trainer.kubeflow.org"
RUNTIME_KIND = "ClusterTrainingRuntime"

TORCH_RUNTIME = "torch-distributed"
"""The runtime's name, upstream's: a TrainJob written for Kubeflow's own runtime runs here."""
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
"""What the Kubeflow SDK lists a runtime by (`trainer.kubeflow.org/framework: torch`)."""
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_STEP = "trainer"
"""Trainer's `constants.LabelTrainJobAncestor` and `AncestorTrainer`: the replicated Job whose
`node` container the TrainJob's `trainer` fills in, at `numNodes` pods."""
NODE = "node"
"""Trainer's `constants.Node`: the trainer Job's and container's name (its webhook requires a
container of this name in the trainer step, `validateReplicatedJobs`)."""
UPSTREAM_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
"""Upstream's image for the runtime at v2.3.0. A TrainJob sets its own (`spec.trainer.image`):
the images policy admits a team's pods only with the team's registries, so a TrainJob that
leaves the default runs only for a team that allows Docker Hub's `pytorch/`."""


def runtime_ttl(view: ClusterView) -> int:
    """The JobSet TTL of the shared runtime: the shortest `retention.finishedJobs` of the
    cluster's teams (the default where it has none), so no team's finished pods are kept
    longer than its retention allows. A TrainJob cannot set its JobSet's TTL (Trainer v2.3's
    runtime patches reach only the replicated Jobs), and has no TTL of its own."""
    teams = [finished_ttl(tenant.team) for tenant in view.tenants]
    return min(teams) if teams else finished_ttl(None)


def torch_distributed(ttl: int) -> dict[str, Any]:
    """`torch-distributed`: `numNodes` pods of one `node` container running torchrun, which
    reads the `PET_*` variables Trainer's torch plugin sets (nodes, processes per node, node
    rank, the rank-0 pod's address and port 29500). The pods start with no GPU, no image of the
    team's and no pool: the TrainJob brings them, the runtime the rules every team's pods
    follow (restricted Pod Security, no service account token, 120 s to checkpoint on
    preemption, the gang restarted whole at most three times, the JobSet and its pods deleted
    `ttl` seconds after it finishes)."""
    container = {
        "name": NODE,
        "image": UPSTREAM_IMAGE,
        "securityContext": dict(CONTAINER_SECURITY),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    pod = {
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": JOB_GRACE_SECONDS,
            "securityContext": dict(POD_SECURITY),
            "containers": [container],
        }
    }
    job = {
        "name": NODE,
        "replicas": 1,  # Trainer's webhook requires 1 for the trainer step
        "template": {
            "metadata": {"labels": {ANCESTOR_LABEL: TRAINER_STEP}},
            # a failed pod fails its Job, and the JobSet restarts the whole gang
            "spec": {"backoffLimit": 0, "template": pod},
        },
    }
    meta = metadata(TORCH_RUNTIME)
    meta["labels"][FRAMEWORK_LABEL] = "torch"
    return {
        "apiVersion": API_VERSION,
        "kind": RUNTIME_KIND,
        "metadata": meta,
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
                    "failurePolicy": {"maxRestarts": 3, "restartStrategy": "Recreate"},
                    "ttlSecondsAfterFinished": ttl,
                    "replicatedJobs": [job],
                }
            },
        },
    }


def runtimes(view: ClusterView) -> list[dict[str, Any]]:
    """The ClusterTrainingRuntimes the platform installs, in the order they are written."""
    return [torch_distributed(runtime_ttl(view))]
