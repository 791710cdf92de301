"""Templates: the workload templates each team namespace starts from (the guide's step 5).

Files only, never applied: `rendered/<cluster>/templates/<namespace>/<kind>-<pool>.yaml`, listed
by no kustomization and synced by no Argo CD Application, since applying a template would start
work. Which templates each namespace gets: `workloads`; the Job, JobSet, TrainJob and RayJob:
`batch`; the vLLM Deployment: `serving`; what they all share: `pieces`; the Kubeflow Trainer
runtime the TrainJob names, which the training layer applies: `runtimes`. Why:
docs/workload-templates.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.workload_templates import workloads as workload_templates
from renderer.model.view import ClusterView
from renderer.output.manifest import Output


def render(view: ClusterView) -> Iterator[Output]:
    """Every team namespace's workload templates on one cluster."""
    yield from workload_templates.render(view)
