"""Kind -> REST resource: what the API server's authorization sees when an object is created (the
resource's plural name, and whether it lives in a namespace), for the kinds a job file holds.

RBAC names resources, not kinds: a Role allowing `jobs` in group `batch` lets its holder create
Jobs. The names are the API's own:
- built-in kinds: the resources kube-apiserver serves (`pkg/registry/<group>/<kind>/storage`,
  installed by `pkg/registry/<group>/rest`; what `kubectl api-resources` lists), the same for
  every release gpuplane models;
- custom kinds: `spec.names.plural` and `spec.scope` of the operator's CRD, at the release named
  (the file is the CRD the project publishes at that tag), and, for the Kueue integrations,
  the resources Kueue v0.19.2's own ClusterRole names (`config/components/rbac/role.yaml`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    """The REST resource of a kind."""

    group: str
    resource: str
    """The plural name RBAC rules list (`jobs`)."""
    namespaced: bool

    @property
    def qualified(self) -> str:
        """`schema.GroupResource.String()`: `jobs.batch`, or `pods` in the core group."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


_BUILTIN: Mapping[tuple[str, str], tuple[str, bool]] = {
    # core (pkg/registry/core/rest/storage_core.go)
    ("", "Pod"): ("pods", True),
    ("", "PodTemplate"): ("podtemplates", True),
    ("", "ReplicationController"): ("replicationcontrollers", True),
    ("", "Service"): ("services", True),
    ("", "ConfigMap"): ("configmaps", True),
    ("", "Secret"): ("secrets", True),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("", "PersistentVolume"): ("persistentvolumes", False),
    ("", "Endpoints"): ("endpoints", True),
    ("", "Event"): ("events", True),
    ("", "LimitRange"): ("limitranges", True),
    ("", "ResourceQuota"): ("resourcequotas", True),
    ("", "Namespace"): ("namespaces", False),
    ("", "Node"): ("nodes", False),
    # apps, batch, autoscaling, policy
    ("apps", "Deployment"): ("deployments", True),
    ("apps", "ReplicaSet"): ("replicasets", True),
    ("apps", "StatefulSet"): ("statefulsets", True),
    ("apps", "DaemonSet"): ("daemonsets", True),
    ("apps", "ControllerRevision"): ("controllerrevisions", True),
    ("batch", "Job"): ("jobs", True),
    ("batch", "CronJob"): ("cronjobs", True),
    ("autoscaling", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("policy", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    # networking, discovery, events
    ("networking.k8s.io", "NetworkPolicy"): ("networkpolicies", True),
    ("networking.k8s.io", "Ingress"): ("ingresses", True),
    ("networking.k8s.io", "IngressClass"): ("ingressclasses", False),
    ("discovery.k8s.io", "EndpointSlice"): ("endpointslices", True),
    ("events.k8s.io", "Event"): ("events", True),
    # rbac, scheduling, node, storage, admission
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("node.k8s.io", "RuntimeClass"): ("runtimeclasses", False),
    ("storage.k8s.io", "StorageClass"): ("storageclasses", False),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): (
        "validatingadmissionpolicies",
        False,
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): (
        "validatingadmissionpolicybindings",
        False,
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"): (
        "mutatingadmissionpolicies",
        False,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("customresourcedefinitions", False),
    # DRA (pkg/registry/resource/rest/storage_resource.go)
    ("resource.k8s.io", "ResourceClaim"): ("resourceclaims", True),
    ("resource.k8s.io", "ResourceClaimTemplate"): ("resourceclaimtemplates", True),
    ("resource.k8s.io", "DeviceClass"): ("deviceclasses", False),
    ("resource.k8s.io", "ResourceSlice"): ("resourceslices", False),
}

_CUSTOM: Mapping[tuple[str, str], tuple[str, bool, str]] = {
    ("jobset.x-k8s.io", "JobSet"): (
        "jobsets",
        True,
        "kubernetes-sigs/jobset v0.12.0 config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
    ),
    ("trainer.kubeflow.org", "TrainJob"): (
        "trainjobs",
        True,
        "kubeflow/trainer v2.3.0 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
    ),
    ("trainer.kubeflow.org", "TrainingRuntime"): (
        "trainingruntimes",
        True,
        "kubeflow/trainer v2.3.0 manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml",
    ),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): (
        "clustertrainingruntimes",
        False,
        "kubeflow/trainer v2.3.0 "
        "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
    ),
    **{
        ("kubeflow.org", kind): (
            f"{kind.lower()}s",
            True,
            "kubeflow/training-operator v1.9.0 manifests/base/crds/kubeflow.org_"
            f"{kind.lower()}s.yaml; Kueue v0.19.2 config/components/rbac/role.yaml",
        )
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob")
    },
    ("kubeflow.org", "MPIJob"): (
        "mpijobs",
        True,
        "kubeflow/mpi-operator v0.8.0 manifests/base/kubeflow.org_mpijobs.yaml",
    ),
    **{
        ("ray.io", kind): (
            f"{kind.lower()}s",
            True,
            f"ray-project/kuberay v1.7.0 ray-operator/config/crd/bases/ray.io_{kind.lower()}s.yaml",
        )
        for kind in ("RayJob", "RayCluster", "RayService", "RayCronJob")
    },
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): (
        "leaderworkersets",
        True,
        "kubernetes-sigs/lws v0.10.0 "
        "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    ),
    ("workload.codeflare.dev", "AppWrapper"): (
        "appwrappers",
        True,
        "project-codeflare/appwrapper v1.2.1 "
        "config/crd/bases/workload.codeflare.dev_appwrappers.yaml",
    ),
    ("sparkoperator.k8s.io", "SparkApplication"): (
        "sparkapplications",
        True,
        "kubeflow/spark-operator config/crd/bases/sparkoperator.k8s.io_sparkapplications.yaml; "
        "Kueue v0.19.2 config/components/rbac/role.yaml",
    ),
    ("sparkoperator.k8s.io", "ScheduledSparkApplication"): (
        "scheduledsparkapplications",
        True,
        "kubeflow/spark-operator "
        "config/crd/bases/sparkoperator.k8s.io_scheduledsparkapplications.yaml",
    ),
    ("agents.x-k8s.io", "Sandbox"): (
        "sandboxes",
        True,
        "kubernetes-sigs/agent-sandbox k8s/crds/agents.x-k8s.io_sandboxes.yaml",
    ),
    ("batch.volcano.sh", "Job"): (
        "jobs",
        True,
        "volcano-sh/volcano v1.15.1 config/crd/volcano/bases/batch.volcano.sh_jobs.yaml",
    ),
    ("batch.volcano.sh", "CronJob"): (
        "cronjobs",
        True,
        "volcano-sh/volcano v1.15.1 config/crd/volcano/bases/batch.volcano.sh_cronjobs.yaml",
    ),
    ("argoproj.io", "Workflow"): (
        "workflows",
        True,
        "argoproj/argo-workflows v4.1.2 manifests/base/crds/full/argoproj.io_workflows.yaml",
    ),
    ("tekton.dev", "PipelineRun"): (
        "pipelineruns",
        True,
        "tektoncd/pipeline config/300-crds/300-pipelinerun.yaml",
    ),
    ("tekton.dev", "TaskRun"): (
        "taskruns",
        True,
        "tektoncd/pipeline config/300-crds/300-taskrun.yaml",
    ),
    ("serving.kserve.io", "InferenceService"): (
        "inferenceservices",
        True,
        "kserve/kserve config/crd/full/serving.kserve.io_inferenceservices.yaml",
    ),
    ("serving.kserve.io", "LLMInferenceService"): (
        "llminferenceservices",
        True,
        "kserve/kserve config/crd/full/serving.kserve.io_llminferenceservices.yaml",
    ),
    ("serving.knative.dev", "Service"): (
        "services",
        True,
        "knative/serving config/core/300-resources/service.yaml",
    ),
    ("kueue.x-k8s.io", "LocalQueue"): (
        "localqueues",
        True,
        "kubernetes-sigs/kueue v0.19.2 config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml",
    ),
    ("kueue.x-k8s.io", "Workload"): (
        "workloads",
        True,
        "kubernetes-sigs/kueue v0.19.2 config/components/crd/bases/kueue.x-k8s.io_workloads.yaml",
    ),
    ("kueue.x-k8s.io", "ClusterQueue"): (
        "clusterqueues",
        False,
        "kubernetes-sigs/kueue v0.19.2 "
        "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml",
    ),
}
"""(group, kind) -> (plural, namespaced, the CRD it is read from)."""


def resource_of(group: str, kind: str) -> Resource | None:
    """The REST resource objects of `kind` in API `group` are created as; None when gpuplane
    does not know the kind (its RBAC cannot be checked)."""
    builtin = _BUILTIN.get((group, kind))
    if builtin is not None:
        return Resource(group, builtin[0], builtin[1])
    custom = _CUSTOM.get((group, kind))
    if custom is not None:
        return Resource(group, custom[0], custom[1])
    return None


def source_of(group: str, kind: str) -> str | None:
    """Where a custom kind's resource name comes from (None for built-ins and unknown kinds)."""
    custom = _CUSTOM.get((group, kind))
    return None if custom is None else custom[2]


def known_kinds() -> tuple[tuple[str, str], ...]:
    """Every (group, kind) this table names, built-in ones first."""
    return (*_BUILTIN, *_CUSTOM)


__all__ = ["Resource", "known_kinds", "resource_of", "source_of"]
