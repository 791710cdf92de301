"""The API server's REST mapping for the kinds fit reads: kind -> resource (plural), the versions
served, the scope. Admission matches a policy's `resourceRules` against the request's
group/version/resource, never its kind, so the admission gates need this table to match at all.

Sources, one per row (`Resource.source`):
- built-in kinds: Kubernetes' REST storage (`pkg/registry/<group>/rest/storage_<group>.go`,
  the `storage["<plural>"]` keys) at v1.33 to v1.36, the versions the example clusters run;
  `batch/v1beta1` CronJobs and `extensions/v1beta1` workloads are served by none of them (removed
  in 1.25 and 1.16), so each built-in kind has one served version;
- custom resources: `spec.names.plural`, `spec.scope` and the `served` versions of each project's
  released CustomResourceDefinition, at the release named in the row (the same releases
  `../shared/crds/README.md` lists, where it has them). None of them sets `spec.conversion`, so
  the API server converts between their versions with strategy `None`: only `apiVersion`
  changes (apiextensions-apiserver `pkg/apiserver/conversion/nop_converter.go`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Conversion = Literal["built-in", "none", "webhook"]
"""How the API server converts an object between two served versions of its resource:
`built-in` (Go conversion functions) and `webhook` (the CRD's conversion webhook), which fit does
not model; `none` (a CRD without `spec.conversion`: the apiVersion is rewritten, nothing else)."""


@dataclass(frozen=True)
class Resource:
    """One row of the REST mapping."""

    group: str
    kind: str
    plural: str
    versions: tuple[str, ...]
    """The served versions, the storage version first."""
    namespaced: bool
    conversion: Conversion
    source: str

    @property
    def resource(self) -> str:
        """The plural name RBAC rules list (`jobs`)."""
        return self.plural

    @property
    def qualified(self) -> str:
        return self.group_resource

    @property
    def group_resource(self) -> str:
        """`jobs.batch`, `pods` for the core group: `schema.GroupResource.String()`, as the API
        server names the resource in its errors."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_K8S = "Kubernetes v1.33-v1.36 pkg/registry/{}/rest"


def _builtin(group: str, kind: str, plural: str, version: str = "v1") -> Resource:
    where = _K8S.format({"": "core", "apps": "apps", "batch": "batch"}[group])
    return Resource(group, kind, plural, (version,), True, "built-in", where)


def _crd(
    group: str,
    kind: str,
    plural: str,
    versions: tuple[str, ...],
    source: str,
    conversion: Conversion = "none",
) -> Resource:
    return Resource(group, kind, plural, versions, True, conversion, source)


_KUBERAY = "KubeRay v1.7.0 ray-operator/config/crd/bases/ray.io_{}.yaml"
_TRAINING_OPERATOR = "Kubeflow training-operator v1.9.0 manifests/base/crds/kubeflow.org_{}.yaml"

RESOURCES: tuple[Resource, ...] = (
    _builtin("", "Pod", "pods"),
    _builtin("", "PodTemplate", "podtemplates"),
    _builtin("", "Service", "services"),
    _builtin("", "ConfigMap", "configmaps"),
    _builtin("", "Secret", "secrets"),
    _builtin("", "ServiceAccount", "serviceaccounts"),
    _builtin("", "PersistentVolumeClaim", "persistentvolumeclaims"),
    _builtin("apps", "Deployment", "deployments"),
    _builtin("apps", "ReplicaSet", "replicasets"),
    _builtin("apps", "StatefulSet", "statefulsets"),
    _builtin("apps", "DaemonSet", "daemonsets"),
    _builtin("batch", "Job", "jobs"),
    _builtin("batch", "CronJob", "cronjobs"),
    _crd(
        "jobset.x-k8s.io",
        "JobSet",
        "jobsets",
        ("v1alpha2",),
        "JobSet v0.12.0 config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
    ),
    _crd("ray.io", "RayJob", "rayjobs", ("v1", "v1alpha1"), _KUBERAY.format("rayjobs")),
    _crd("ray.io", "RayCluster", "rayclusters", ("v1", "v1alpha1"), _KUBERAY.format("rayclusters")),
    _crd("ray.io", "RayService", "rayservices", ("v1", "v1alpha1"), _KUBERAY.format("rayservices")),
    _crd("ray.io", "RayCronJob", "raycronjobs", ("v1",), _KUBERAY.format("raycronjobs")),
    _crd(
        "trainer.kubeflow.org",
        "TrainJob",
        "trainjobs",
        ("v1alpha1",),
        "Kubeflow Trainer v2.3.0 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
    ),
    _crd(
        "trainer.kubeflow.org",
        "TrainingRuntime",
        "trainingruntimes",
        ("v1alpha1",),
        "Kubeflow Trainer v2.3.0 manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml",
    ),
    _crd(
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
        "leaderworkersets",
        ("v1",),
        "LeaderWorkerSet v0.10.0 config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    ),
    _crd(
        "workload.codeflare.dev",
        "AppWrapper",
        "appwrappers",
        ("v1beta2",),
        "AppWrapper v1.2.1 config/crd/bases/workload.codeflare.dev_appwrappers.yaml",
    ),
    _crd(
        "kubeflow.org",
        "MPIJob",
        "mpijobs",
        ("v2beta1",),
        "MPI Operator v0.8.0 manifests/base/kubeflow.org_mpijobs.yaml",
    ),
    _crd(
        "kubeflow.org",
        "PyTorchJob",
        "pytorchjobs",
        ("v1",),
        _TRAINING_OPERATOR.format("pytorchjobs"),
    ),
    _crd("kubeflow.org", "TFJob", "tfjobs", ("v1",), _TRAINING_OPERATOR.format("tfjobs")),
    _crd(
        "kubeflow.org",
        "XGBoostJob",
        "xgboostjobs",
        ("v1",),
        _TRAINING_OPERATOR.format("xgboostjobs"),
    ),
    _crd(
        "kubeflow.org", "PaddleJob", "paddlejobs", ("v1",), _TRAINING_OPERATOR.format("paddlejobs")
    ),
    _crd("kubeflow.org", "JAXJob", "jaxjobs", ("v1",), _TRAINING_OPERATOR.format("jaxjobs")),
    _crd(
        "sparkoperator.k8s.io",
        "SparkApplication",
        "sparkapplications",
        ("v1beta2",),
        "kubeflow/spark-operator config/crd/bases/sparkoperator.k8s.io_sparkapplications.yaml",
    ),
    _crd(
        "batch.volcano.sh",
        "Job",
        "jobs",
        ("v1alpha1",),
        "Volcano v1.15.1 config/crd/volcano/bases/batch.volcano.sh_jobs.yaml",
    ),
    _crd(
        "batch.volcano.sh",
        "CronJob",
        "cronjobs",
        ("v1alpha1",),
        "volcano-sh/volcano config/crd/volcano/bases/batch.volcano.sh_cronjobs.yaml",
    ),
    _crd(
        "argoproj.io",
        "Workflow",
        "workflows",
        ("v1alpha1",),
        "Argo Workflows v4.1.2 manifests/base/crds/full/argoproj.io_workflows.yaml",
    ),
    _crd(
        "tekton.dev",
        "PipelineRun",
        "pipelineruns",
        ("v1", "v1beta1"),
        "tektoncd/pipeline config/300-crds/300-pipelinerun.yaml",
    ),
    _crd(
        "tekton.dev",
        "TaskRun",
        "taskruns",
        ("v1", "v1beta1"),
        "tektoncd/pipeline config/300-crds/300-taskrun.yaml",
    ),
    _crd(
        "agents.x-k8s.io",
        "Sandbox",
        "sandboxes",
        ("v1alpha1",),
        "kubernetes-sigs/agent-sandbox bundle/manifests/agents.x-k8s.io_sandboxes.yaml",
    ),
    _crd(
        "serving.kserve.io",
        "InferenceService",
        "inferenceservices",
        ("v1beta1",),
        "kserve/kserve config/crd/full/serving.kserve.io_inferenceservices.yaml "
        "(and isvc_conversion_webhook_patch.yaml)",
        "webhook",
    ),
    _crd(
        "serving.kserve.io",
        "LLMInferenceService",
        "llminferenceservices",
        ("v1alpha2", "v1alpha1"),
        "kserve/kserve config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml "
        "(and llmisvc_conversion_webhook_patch.yaml)",
        "webhook",
    ),
    _crd(
        "serving.knative.dev",
        "Service",
        "services",
        ("v1",),
        "knative/serving config/core/300-resources/service.yaml",
    ),
    _crd(
        "external-secrets.io",
        "ExternalSecret",
        "externalsecrets",
        ("v1",),
        "External Secrets v2.9.0 config/crds/bases/external-secrets.io_externalsecrets.yaml",
    ),
    # the kinds RBAC answers for beyond the ones fit reads (Roles, quotas, policies, DRA ...)
    Resource(
        "",
        "ReplicationController",
        "replicationcontrollers",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "PersistentVolume",
        "persistentvolumes",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "Endpoints",
        "endpoints",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "Event",
        "events",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "LimitRange",
        "limitranges",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "ResourceQuota",
        "resourcequotas",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "Namespace",
        "namespaces",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "",
        "Node",
        "nodes",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/core/rest",
    ),
    Resource(
        "apps",
        "ControllerRevision",
        "controllerrevisions",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/apps/rest",
    ),
    Resource(
        "autoscaling",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        ("v2", "v1"),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/autoscaling/rest",
    ),
    Resource(
        "policy",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/policy/rest",
    ),
    Resource(
        "networking.k8s.io",
        "NetworkPolicy",
        "networkpolicies",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/networking/rest",
    ),
    Resource(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/networking/rest",
    ),
    Resource(
        "networking.k8s.io",
        "IngressClass",
        "ingressclasses",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/networking/rest",
    ),
    Resource(
        "discovery.k8s.io",
        "EndpointSlice",
        "endpointslices",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/discovery/rest",
    ),
    Resource(
        "events.k8s.io",
        "Event",
        "events",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/events/rest",
    ),
    Resource(
        "rbac.authorization.k8s.io",
        "Role",
        "roles",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/rbac/rest",
    ),
    Resource(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        "rolebindings",
        ("v1",),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/rbac/rest",
    ),
    Resource(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/rbac/rest",
    ),
    Resource(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "clusterrolebindings",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/rbac/rest",
    ),
    Resource(
        "scheduling.k8s.io",
        "PriorityClass",
        "priorityclasses",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/scheduling/rest",
    ),
    Resource(
        "node.k8s.io",
        "RuntimeClass",
        "runtimeclasses",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/node/rest",
    ),
    Resource(
        "storage.k8s.io",
        "StorageClass",
        "storageclasses",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/storage/rest",
    ),
    Resource(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/admissionregistration/rest",
    ),
    Resource(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/admissionregistration/rest",
    ),
    Resource(
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicy",
        "mutatingadmissionpolicies",
        ("v1", "v1beta1"),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/admissionregistration/rest",
    ),
    Resource(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        ("v1",),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/apiextensions/rest",
    ),
    Resource(
        "resource.k8s.io",
        "ResourceClaim",
        "resourceclaims",
        ("v1", "v1beta2", "v1beta1"),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/resource/rest",
    ),
    Resource(
        "resource.k8s.io",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        ("v1", "v1beta2", "v1beta1"),
        True,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/resource/rest",
    ),
    Resource(
        "resource.k8s.io",
        "DeviceClass",
        "deviceclasses",
        ("v1", "v1beta2", "v1beta1"),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/resource/rest",
    ),
    Resource(
        "resource.k8s.io",
        "ResourceSlice",
        "resourceslices",
        ("v1", "v1beta2", "v1beta1"),
        False,
        "built-in",
        "Kubernetes v1.33-v1.36 pkg/registry/resource/rest",
    ),
    Resource(
        "trainer.kubeflow.org",
        "ClusterTrainingRuntime",
        "clustertrainingruntimes",
        ("v1alpha1",),
        False,
        "none",
        "kubeflow/trainer v2.3.0 manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
    ),
    Resource(
        "kubeflow.org",
        "MXJob",
        "mxjobs",
        ("v1",),
        True,
        "none",
        "kubeflow/training-operator v1.9.0 manifests/base/crds/kubeflow.org_mxjobs.yaml; Kueue v0.19.2 config/components/rbac/role.yaml",
    ),
    Resource(
        "sparkoperator.k8s.io",
        "ScheduledSparkApplication",
        "scheduledsparkapplications",
        ("v1beta2",),
        True,
        "none",
        "kubeflow/spark-operator config/crd/bases/sparkoperator.k8s.io_scheduledsparkapplications.yaml",
    ),
    Resource(
        "kueue.x-k8s.io",
        "LocalQueue",
        "localqueues",
        ("v1beta2", "v1beta1"),
        True,
        "none",
        "kubernetes-sigs/kueue v0.19.2 config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml",
    ),
    Resource(
        "kueue.x-k8s.io",
        "Workload",
        "workloads",
        ("v1beta2", "v1beta1"),
        True,
        "none",
        "kubernetes-sigs/kueue v0.19.2 config/components/crd/bases/kueue.x-k8s.io_workloads.yaml",
    ),
    Resource(
        "kueue.x-k8s.io",
        "ClusterQueue",
        "clusterqueues",
        ("v1beta2", "v1beta1"),
        False,
        "none",
        "kubernetes-sigs/kueue v0.19.2 config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml",
    ),
)
"""The kinds fit reads (renderer/admission/workloads/readers.py: READERS, FILE_READERS,
POD_BY_POD, NO_INTEGRATION) and the objects a job file carries beside them (Services,
ConfigMaps, Secrets, ExternalSecrets, runtimes), each as the API server maps it."""

_BY_KIND: Mapping[tuple[str, str], Resource] = MappingProxyType(
    {(r.group, r.kind): r for r in RESOURCES}
)


def split_api_version(api_version: str) -> tuple[str, str]:
    """`batch/v1` -> (`batch`, `v1`); `v1` -> (``, `v1`): `schema.ParseGroupVersion`."""
    group, _, version = api_version.rpartition("/")
    return group, version


def resource_of(api_version: str, kind: str) -> Resource | None:
    """The row of an object's kind in its API group, or None (a kind fit does not map). The
    version is not checked here: an unserved version is the discovery step's refusal."""
    group, _ = split_api_version(api_version)
    return _BY_KIND.get((group, kind))


def resource_for(group: str, kind: str) -> Resource | None:
    """The row of `kind` in API `group`, or None (a kind gpuplane does not map)."""
    return _BY_KIND.get((group, kind))


def known_kinds() -> tuple[tuple[str, str], ...]:
    """Every (group, kind) this table names, in its order."""
    return tuple((r.group, r.kind) for r in RESOURCES)


def by_resource(group: str, plural: str) -> Resource | None:
    for row in RESOURCES:
        if row.group == group and row.plural == plural:
            return row
    return None
