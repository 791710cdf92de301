"""Argo Workflows on one cluster: the values of the argo-helm `argo-workflows` chart.

The acceptance and benchmark suites (the workflows layer) are Argo Workflows objects; without
the controller and its CRDs a cluster can apply none of them and the PostSync hook never runs.
A cluster that declares `addons.argoWorkflows` gets the chart's values in
`rendered/<cluster>/values/argo-workflows.yaml`, which the GitOps layer installs at the pinned
chart version, in the add-on wave, before the workflows layer syncs. Why each value is what it
is: docs/argo-workflows.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.model.names import ARGO_WORKFLOWS_ADDON, PROMETHEUS_ADDON
from renderer.model.platform import Cluster
from renderer.output.manifest import Output, Values
from workflows.suites.settings import (
    POD_GC_DELAY,
    WORKFLOW_SUCCESS_TTL_SECONDS,
    WORKFLOW_TTL_SECONDS,
)

CHART = "argo-workflows"
CHART_REPOSITORY = "https://argoproj.github.io/argo-helm"
RELEASE = "argo-workflows"


def enabled(cluster: Cluster) -> bool:
    """Whether gpuplane installs the chart on the cluster (declared, and not `enabled: false`)."""
    addon = cluster.addons.get(ARGO_WORKFLOWS_ADDON)
    return addon is not None and addon.settings.get("enabled", True) is not False


def values(cluster: Cluster, layer: str, suite_namespace: str) -> Iterator[Output]:
    """The chart's values for the cluster; nothing unless the chart is installed."""
    if not enabled(cluster):
        return
    addon = cluster.addons[ARGO_WORKFLOWS_ADDON]
    yield Values(layer, CHART, helm_values(cluster, suite_namespace), addon.origin.location)


def helm_values(cluster: Cluster, suite_namespace: str) -> dict[str, Any]:
    """The controller and CRDs, nothing the workflows layer renders itself.

    - `crds`: installed and kept on uninstall (deleting a CRD deletes every Workflow and
      template with it).
    - `workflow`: no ServiceAccount or RBAC from the chart; the workflows layer renders the
      suites' own (`gpuplane-acceptance`), and `workflowNamespaces` names only their namespace so
      the chart creates nothing in `default`.
    - `controller.workflowDefaults`: the clean-up every rendered Workflow, CronWorkflow and
      WorkflowTemplate carries itself (`workflows.suites.workflow_templates.clean_up`), for any Workflow
      someone submits by hand: a succeeded Workflow goes after a day, its pods an hour after it
      succeeded; a failed one stays, with its pods and their logs, for a week.
    - metrics and a ServiceMonitor when the cluster runs the Prometheus Operator.
    """
    controller: dict[str, Any] = {
        "workflowNamespaces": [suite_namespace],
        "workflowDefaults": {
            "spec": {
                "ttlStrategy": {
                    "secondsAfterCompletion": WORKFLOW_TTL_SECONDS,
                    "secondsAfterSuccess": WORKFLOW_SUCCESS_TTL_SECONDS,
                    "secondsAfterFailure": WORKFLOW_TTL_SECONDS,
                },
                "podGC": {"strategy": "OnWorkflowSuccess", "deleteDelayDuration": POD_GC_DELAY},
            }
        },
    }
    if PROMETHEUS_ADDON in cluster.addons:
        controller["metricsConfig"] = {"enabled": True}
        controller["serviceMonitor"] = {"enabled": True}
    return {
        "crds": {"install": True, "keep": True},
        "workflow": {"serviceAccount": {"create": False}, "rbac": {"create": False}},
        "controller": controller,
    }
