"""Training: the Kubeflow Trainer runtimes the platform installs on clusters that serve
Trainer's kinds (`rendered/<cluster>/training/`).

A TrainJob names a runtime and brings only its image, command, size and patches; the runtime
holds the pod template every team's TrainJob starts from. The platform renders its own
(`renderer.layers.workload_templates.runtimes`: `torch-distributed`, the one the TrainJob
templates name) instead of the chart's: the chart's built-in runtimes are applied by a Helm
hook Job that installs kubectl from Alpine's package mirror (`runtimes.installer`, off by
default, and gpuplane leaves it off), which an air-gapped cluster cannot reach, and their pod
templates are not the platform's (no restricted Pod Security settings, no TTL).

Its own folder and Argo CD Application, synced in the wave of the platform objects, after the
add-ons (the Trainer chart brings the CRD and the webhook that validates a runtime). Design:
docs/workload-templates.md#kubeflow-trainer.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.workload_templates import runtimes
from renderer.model.operators import TRAINER_ADDON, serves_here
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest

LAYER = "training"


def render(view: ClusterView) -> Iterator[Manifest]:
    """The cluster's ClusterTrainingRuntimes, where it serves Kubeflow Trainer's kinds."""
    cluster = view.cluster
    if not serves_here(cluster, TRAINER_ADDON):
        return
    source = cluster.addons[TRAINER_ADDON].origin.location
    for body in runtimes.runtimes(view):
        yield Manifest(LAYER, body, source)
