"""Which workload APIs a cluster's Kueue manages: its `integrations.frameworks`.

One list, read by the queueing layer (the Kueue configuration it renders), by `fit` (which
answers "this cluster's Kueue does not manage this kind" for the rest) and by the cluster README.
Kueue v0.19.2's integrations are in `pkg/controller/jobs/*` (`FrameworkName` and `gvk` of each).

A kind whose integration is off is not gang-admitted: Kueue never sees the job, and where the
`pod` integration is on its pods are queued one at a time as plain pods (Kueue's pod webhook
manages a pod whose owner is no job it knows). Kueue defers an enabled integration whose CRD is
not installed (`jobframework/setup.go`: "No matching API in the server for job framework,
deferring setting up controller"), so enabling one the cluster may not run costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from renderer.model.operators import installed

if TYPE_CHECKING:
    from renderer.model.platform import Cluster


@dataclass(frozen=True, slots=True)
class Integration:
    framework: str
    """Kueue's name for it in `integrations.frameworks`."""
    group: str
    kind: str
    versions: tuple[str, ...] = ()
    """The API versions Kueue's integration is for, where another version of the kind is another
    API altogether (a training-operator v1 MPIJob is not the MPI Operator's v2beta1 one); empty
    where the API server converts every served version for Kueue's webhooks."""
    needs: tuple[str, ...] = ()
    """Frameworks Kueue refuses to start without (`deployment` and `statefulset` work through
    the `pod` integration)."""


KUEUE_INTEGRATIONS: tuple[Integration, ...] = (
    Integration("batch/job", "batch", "Job"),
    Integration("kubeflow.org/mpijob", "kubeflow.org", "MPIJob", versions=("v2beta1",)),
    Integration("ray.io/rayjob", "ray.io", "RayJob"),
    Integration("ray.io/rayservice", "ray.io", "RayService"),
    Integration("ray.io/raycluster", "ray.io", "RayCluster"),
    Integration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "JobSet"),
    Integration("kubeflow.org/paddlejob", "kubeflow.org", "PaddleJob", versions=("v1",)),
    Integration("kubeflow.org/pytorchjob", "kubeflow.org", "PyTorchJob", versions=("v1",)),
    Integration("kubeflow.org/tfjob", "kubeflow.org", "TFJob", versions=("v1",)),
    Integration("kubeflow.org/xgboostjob", "kubeflow.org", "XGBoostJob", versions=("v1",)),
    Integration("kubeflow.org/jaxjob", "kubeflow.org", "JAXJob", versions=("v1",)),
    Integration("workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "AppWrapper"),
    Integration("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "TrainJob"),
    Integration(
        "sparkoperator.k8s.io/sparkapplication", "sparkoperator.k8s.io", "SparkApplication"
    ),
    Integration("pod", "", "Pod"),
    Integration("deployment", "apps", "Deployment", needs=("pod",)),
    Integration("statefulset", "apps", "StatefulSet", needs=("pod",)),
    Integration(
        "leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "LeaderWorkerSet"
    ),
)
"""Every integration Kueue v0.19.2 offers, in the order of its chart's `integrations.frameworks`
(the commented-out ones where the chart leaves them)."""

BUILT_IN_FRAMEWORKS: tuple[str, ...] = ("batch/job", "pod", "deployment", "statefulset")
"""The integrations for Kubernetes' own kinds, enabled on every cluster: Jobs, and Deployments and
StatefulSets (which need the pod integration) for serving."""

DEFAULT_FRAMEWORKS: tuple[str, ...] = tuple(
    i.framework
    for i in KUEUE_INTEGRATIONS
    if i.framework != "sparkoperator.k8s.io/sparkapplication"
)
"""Every integration of a job API an ML team submits, Spark left out (the platform runs no Spark
operator): the chart's list. A cluster enables those of them whose operators it runs
(`enabled_frameworks`)."""


def integration_for(api_version: str, kind: str) -> Integration | None:
    """Kueue's integration for objects of this apiVersion and kind, whether or not a cluster
    enables it; None where Kueue has none (its pods may still be queued one by one)."""
    group, _, version = api_version.rpartition("/")
    for integration in KUEUE_INTEGRATIONS:
        if integration.group != group or integration.kind != kind:
            continue
        if integration.versions and version not in integration.versions:
            return None
        return integration
    return None


def enabled_frameworks(cluster: Cluster) -> tuple[str, ...]:
    """The `integrations.frameworks` of this cluster's Kueue, in KUEUE_INTEGRATIONS' order:
    Kubernetes' own kinds and those of the operators the cluster runs, nothing else. An
    integration whose operator is missing would only be deferred by Kueue, but it would tell
    `fit` and the README that the cluster runs a kind it does not."""
    served = {framework for operator in installed(cluster) for framework in operator.frameworks}
    return tuple(
        i.framework
        for i in KUEUE_INTEGRATIONS
        if i.framework in BUILT_IN_FRAMEWORKS or i.framework in served
    )


def manages(cluster: Cluster, api_version: str, kind: str) -> bool:
    """Whether this cluster's Kueue admits objects of this kind itself (as one Workload)."""
    integration = integration_for(api_version, kind)
    return integration is not None and integration.framework in enabled_frameworks(cluster)
