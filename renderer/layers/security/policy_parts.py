"""The pieces every admission policy of the security layer is built from: CEL literals, the pod
specs of each workload kind, who counts as the platform, and the policy and binding objects.

Every expression sticks to standard CEL (`has`, `all`, `exists`, `map`, `in`, `startsWith`,
`size`, `?:`), so the tests can evaluate it with cel-python as the API server would; nothing
here uses the Kubernetes CEL libraries (`split`, `lists`, `quantity`, ...).

Bindings select the namespaces they hold in by `kubernetes.io/metadata.name`, a label the API
server sets from the namespace's name and does not let anyone change, not by the
`gpuplane.dev/team` label the tenancy layer sets: a namespace that lost or changed its labels
(someone with namespace rights relabelling it) stays bound. The same goes for Pod Security
Admission, which reads the namespace's `pod-security.kubernetes.io/enforce` label: these
policies are a second lock that a relabel does not open.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.findings.diagnostics import Location
from renderer.model.integrations import KUEUE_INTEGRATIONS, enabled_frameworks
from renderer.model.names import ARGO_CD_NAMESPACE, ARGO_WORKFLOWS_NAMESPACE
from renderer.model.platform import Cluster
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, metadata

LAYER = "security"
API_VERSION = "admissionregistration.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
POLICY_PREFIX = "gpuplane-"


# --- CEL literals -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)
def cel_string(text: str) -> str:
    """`text` as a CEL double-quoted string literal: a quote, a backslash or a control or
    non-ASCII character in input text becomes an escape, so it can neither end the literal nor
    add an expression of its own. Kept per text: each cluster's policies quote the same names
    tens of thousands of times."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def cel_list(items: Iterable[str]) -> str:
    """A CEL list of string literals, in the given order."""
    return "[" + ", ".join(cel_string(item) for item in items) + "]"


# --- the workload kinds and their pod templates -------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """A kind whose objects are pods or hold pod templates: where its pod specs are (a CEL list
    expression over `object`), so a policy refuses a bad Job at `kubectl apply`, not only when
    its pods are created. For the kinds Kueue integrates, what Kueue v0.19.2 does with one."""

    group: str
    resource: str
    kind: str
    pod_specs: str
    suspend: str | None = None
    """Where Kueue's job webhook suspends it (`GenericJob.Suspend` of its integration, through
    `jobframework.ApplyDefaultForSuspend`); None for a kind Kueue does not suspend: a Pod (gated
    instead), a Deployment, StatefulSet or LeaderWorkerSet (its pods are gated, their templates
    annotated `kueue.x-k8s.io/pod-suspending-parent` by its webhook)."""
    framework: str | None = None
    """Kueue's integration for it (`renderer.model.integrations`), None for a kind Kueue does
    not integrate (CronJob, ReplicaSet, DaemonSet, Volcano's Job)."""
    versions: tuple[str, ...] = ()
    """The only API versions that are this kind (Kueue matches a kind and an ownerReference by
    its exact GroupVersionKind: a training-operator v1 MPIJob is not its v2beta1 MPIJob); empty
    for any version of the group."""
    owns_pods: bool = False
    """Its controller creates pods itself, which Kueue's pod webhook leaves ungated because their
    controller is a job Kueue manages (`jobframework.FindAncestorJobManagedByKueue`)."""
    kueue_version: str | None = None
    """The API version of Kueue's integration (its `gvk`): Kueue knows an ownerReference as this
    kind only at exactly this version (`ownerReferenceMatchingGVK`)."""

    @property
    def condition(self) -> str:
        """CEL: the object is of this kind (kind names repeat across groups: `Job`)."""
        return self.condition_on("object")

    def condition_on(self, obj: str) -> str:
        """CEL: `obj` (an object, or an ownerReference: both carry apiVersion and kind) is of
        this kind."""
        if not self.group:
            version = f"{obj}.apiVersion == 'v1'"
        elif self.versions:
            exact = [f"{self.group}/{v}" for v in self.versions]
            version = " || ".join(f"{obj}.apiVersion == '{v}'" for v in exact)
            version = version if len(exact) == 1 else f"({version})"
        else:
            version = f"{obj}.apiVersion.startsWith('{self.group}/')"
        return f"{version} && {obj}.kind == '{self.kind}'"

    def owner_condition(self, ref: str) -> str:
        """CEL: the ownerReference `ref` names this kind as Kueue knows it: at exactly the API
        version of Kueue's integration, where it has one (an ownerReference is not converted)."""
        if self.kueue_version is None:
            return self.condition_on(ref)
        api_version = f"{self.group}/{self.kueue_version}" if self.group else self.kueue_version
        return f"{ref}.apiVersion == '{api_version}' && {ref}.kind == '{self.kind}'"


def _ray_specs(cluster_spec: str) -> str:
    return (
        f"[{cluster_spec}.headGroupSpec.template.spec] + "
        f"(has({cluster_spec}.workerGroupSpecs) ? "
        f"{cluster_spec}.workerGroupSpecs.map(w, w.template.spec) : [])"
    )


def _managed(
    framework: str, resource: str, pod_specs: str, suspend: str | None, *, owns_pods: bool = False
) -> WorkloadKind:
    """The kind of a Kueue integration: its group, kind and versions are the integration's
    (`renderer.model.integrations.KUEUE_INTEGRATIONS`), so the two lists cannot drift."""
    (integration,) = [i for i in KUEUE_INTEGRATIONS if i.framework == framework]
    version = integration.versions[0] if integration.versions else _KUEUE_VERSIONS[framework]
    return WorkloadKind(
        integration.group,
        resource,
        integration.kind,
        pod_specs,
        suspend=suspend,
        framework=framework,
        versions=integration.versions,
        owns_pods=owns_pods,
        kueue_version=version,
    )


_KUEUE_VERSIONS = {
    "batch/job": "v1",
    "ray.io/rayjob": "v1",
    "ray.io/rayservice": "v1",
    "ray.io/raycluster": "v1",
    "jobset.x-k8s.io/jobset": "v1alpha2",
    "workload.codeflare.dev/appwrapper": "v1beta2",
    "trainer.kubeflow.org/trainjob": "v1alpha1",
    "sparkoperator.k8s.io/sparkapplication": "v1beta2",
    "pod": "v1",
    "deployment": "v1",
    "statefulset": "v1",
    "leaderworkerset.x-k8s.io/leaderworkerset": "v1",
}
"""The API version of each integration's `gvk` in Kueue v0.19.2 (pkg/controller/jobs/*:
`batchv1`, `rayv1`, `jobsetapi` v1alpha2, `awv1beta2`, `kftrainer` v1alpha1, `sparkv1beta2`,
`corev1`, `appsv1`, `leaderworkersetv1`), where `Integration.versions` does not pin it."""


_SUSPEND = "spec.suspend"
_RUN_POLICY_SUSPEND = "spec.runPolicy.suspend"

POD = _managed("pod", "pods", "[object.spec]", None)
BATCH_JOB = _managed("batch/job", "jobs", "[object.spec.template.spec]", _SUSPEND, owns_pods=True)
CRONJOB = WorkloadKind(
    "batch", "cronjobs", "CronJob", "[object.spec.jobTemplate.spec.template.spec]"
)
DEPLOYMENT = _managed("deployment", "deployments", "[object.spec.template.spec]", None)
STATEFULSET = _managed("statefulset", "statefulsets", "[object.spec.template.spec]", None)
REPLICASET = WorkloadKind("apps", "replicasets", "ReplicaSet", "[object.spec.template.spec]")
DAEMONSET = WorkloadKind("apps", "daemonsets", "DaemonSet", "[object.spec.template.spec]")
JOBSET = _managed(
    "jobset.x-k8s.io/jobset",
    "jobsets",
    "object.spec.replicatedJobs.map(r, r.template.spec.template.spec)",
    _SUSPEND,
)
RAYJOB = _managed(
    "ray.io/rayjob",
    "rayjobs",
    f"has(object.spec.rayClusterSpec) ? {_ray_specs('object.spec.rayClusterSpec')} : []",
    _SUSPEND,
)
RAYCLUSTER = _managed(
    "ray.io/raycluster", "rayclusters", _ray_specs("object.spec"), _SUSPEND, owns_pods=True
)
RAYSERVICE = _managed(
    "ray.io/rayservice",
    "rayservices",
    _ray_specs("object.spec.rayClusterConfig"),
    "spec.rayClusterConfig.suspend",
)
"""Kueue suspends the RayCluster spec inside it (`RayService.Suspend`); KubeRay creates a
RayCluster from it, whose pods pass as a RayCluster's."""
TRAINJOB = _managed("trainer.kubeflow.org/trainjob", "trainjobs", "[]", _SUSPEND)
"""A TrainJob holds no pod template (its runtime does): its pods are checked as pods."""
LEADERWORKERSET = _managed(
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "leaderworkersets",
    "[object.spec.leaderWorkerTemplate.workerTemplate.spec] + "
    "(has(object.spec.leaderWorkerTemplate.leaderTemplate) ? "
    "[object.spec.leaderWorkerTemplate.leaderTemplate.spec] : [])",
    None,
)
APPWRAPPER = _managed(
    "workload.codeflare.dev/appwrapper", "appwrappers", "[]", _SUSPEND, owns_pods=True
)
"""Its components are objects of any kind (their pod templates at paths it names): the pods it
wraps are checked as pods, owned by it."""
SPARKAPPLICATION = _managed(
    "sparkoperator.k8s.io/sparkapplication", "sparkapplications", "[]", _SUSPEND, owns_pods=True
)
"""The operator creates the driver pod, owned by it; the driver creates the executors."""
VOLCANO_JOB = WorkloadKind(
    "batch.volcano.sh", "jobs", "Job", "object.spec.tasks.map(t, t.template.spec)"
)


def _kubeflow_job(kind: str, replica_specs: str) -> WorkloadKind:
    """A Kubeflow training-operator (or MPI operator v2) job: its pods are templated per role
    in a map, created by its operator, and Kueue suspends it by `spec.runPolicy.suspend`
    (`KubeflowJob.Suspend`, `MPIJob.Suspend`)."""
    specs = f"object.spec.{replica_specs}"
    return _managed(
        f"kubeflow.org/{kind.lower()}",
        kind.lower() + "s",
        f"has({specs}) ? {specs}.map(k, {specs}[k].template.spec) : []",
        _RUN_POLICY_SUSPEND,
        owns_pods=True,
    )


KUBEFLOW_JOBS = (
    _kubeflow_job("JAXJob", "jaxReplicaSpecs"),
    _kubeflow_job("MPIJob", "mpiReplicaSpecs"),
    _kubeflow_job("PaddleJob", "paddleReplicaSpecs"),
    _kubeflow_job("PyTorchJob", "pytorchReplicaSpecs"),
    _kubeflow_job("TFJob", "tfReplicaSpecs"),
    _kubeflow_job("XGBoostJob", "xgbReplicaSpecs"),
)
"""The Kubeflow jobs Kueue v0.19 integrates (`pkg/controller/jobs/kubeflow`: v1 of the training
operator; `pkg/controller/jobs/mpijob`: the MPI Operator's v2beta1). MXJob and a v1 MPIJob are
no Kueue integration: their pods are gated by Kueue's pod webhook one by one, like any pod
whose owner Kueue does not manage."""

KUEUE_KINDS: tuple[WorkloadKind, ...] = (
    BATCH_JOB,
    *(k for k in KUBEFLOW_JOBS if k.kind == "MPIJob"),
    RAYJOB,
    RAYSERVICE,
    RAYCLUSTER,
    JOBSET,
    *(k for k in KUBEFLOW_JOBS if k.kind != "MPIJob"),
    APPWRAPPER,
    TRAINJOB,
    SPARKAPPLICATION,
    POD,
    DEPLOYMENT,
    STATEFULSET,
    LEADERWORKERSET,
)
"""One kind per Kueue integration (`tests/test_priority_kinds.py` holds it to
`KUEUE_INTEGRATIONS`). What a cluster's policies cover is the part its Kueue enables:
`kueue_kinds`."""

POD_TEMPLATE_KINDS = (
    POD,
    BATCH_JOB,
    CRONJOB,
    DEPLOYMENT,
    STATEFULSET,
    REPLICASET,
    DAEMONSET,
    JOBSET,
    RAYJOB,
    RAYCLUSTER,
)
"""Pods are the floor (every workload ends in pods, whoever creates them); the templates of the
kinds a team submits are checked too, for an early and readable refusal."""


def kueue_kinds(cluster: Cluster) -> tuple[WorkloadKind, ...]:
    """The kinds this cluster's Kueue manages (`integrations.enabled_frameworks`), in
    `KUEUE_KINDS`' order: each is admitted by Kueue as a Workload of its own when nothing
    Kueue manages owns it. None on a cluster that schedules with Volcano."""
    if cluster.scheduler != "kueue":
        return ()
    enabled = set(enabled_frameworks(cluster))
    return tuple(k for k in KUEUE_KINDS if k.framework in enabled)


def suspendable_kinds(cluster: Cluster) -> tuple[WorkloadKind, ...]:
    """The kinds this cluster's Kueue admits by suspending them: created suspended by Kueue's
    job webhook, let go by Kueue's controller once admitted. `gpuplane-queue-suspend` holds
    them to that."""
    return tuple(k for k in kueue_kinds(cluster) if k.suspend is not None)


def pod_owner_kinds(cluster: Cluster) -> tuple[WorkloadKind, ...]:
    """The parents whose controllers create GPU pods that this cluster's Kueue leaves ungated
    (`pod_webhook.go` Default skips a pod whose ancestor job Kueue manages): the Job
    controller's for a Job (a JobSet's, a TrainJob's, a RayJob's submitter, an MPIJob's
    launcher), KubeRay's for a RayCluster (a RayJob's or a RayService's), the training and MPI
    operators' for their jobs, the AppWrapper controller's for the pods it wraps. Each is in
    `suspendable_kinds`: it starts pods only once Kueue (or its platform parent) unsuspends it."""
    return tuple(k for k in suspendable_kinds(cluster) if k.owns_pods)


def any_kind(kinds: Iterable[WorkloadKind], obj: str = "object", *, owner: bool = False) -> str:
    """CEL: `obj` is of one of `kinds` (false for none); `owner`: `obj` is an ownerReference,
    matched as Kueue matches one (`WorkloadKind.owner_condition`)."""
    conditions = [f"({k.owner_condition(obj) if owner else k.condition_on(obj)})" for k in kinds]
    return " || ".join(conditions) if conditions else "false"


def _set_and_true(obj: str, path: str) -> str:
    """CEL: the boolean `obj.path` and every field on the way to it are set, and it is true."""
    parts = f"{obj}.{path}".split(".")
    present = [f"has({'.'.join(parts[: i + 1])})" for i in range(1, len(parts))]
    return "(" + " && ".join([*present, ".".join(parts)]) + ")"


def suspended(obj: str, kinds: Sequence[WorkloadKind]) -> str:
    """CEL: `obj` (`object` or `oldObject`: an UPDATE does not change the kind, so the kind is
    read from `object`) is suspended, at the field its kind keeps the flag in (`spec.suspend`
    for a kind not in `kinds`)."""
    expression = _set_and_true(obj, _SUSPEND)
    paths = {kind.suspend for kind in kinds if kind.suspend is not None}
    for path in sorted(paths - {_SUSPEND}):
        of_kind = " || ".join(f"({k.condition})" for k in kinds if k.suspend == path)
        expression = f"(({of_kind}) ? {_set_and_true(obj, path)} : {expression})"
    return expression


def pod_template_kinds(view: ClusterView) -> tuple[WorkloadKind, ...]:
    """The kinds whose pod specs the cluster's policies check: Volcano Jobs on Volcano clusters."""
    if view.cluster.scheduler == "volcano":
        return (*POD_TEMPLATE_KINDS, VOLCANO_JOB)
    return POD_TEMPLATE_KINDS


def pod_specs_variable(kinds: Sequence[WorkloadKind]) -> dict[str, str]:
    """The `podSpecs` variable: the object's pod specs as a list, by kind (empty for others)."""
    expression = "[]"
    for kind in reversed(kinds):
        expression = f"({kind.condition}) ? ({kind.pod_specs}) : ({expression})"
    return {"name": "podSpecs", "expression": expression}


def all_containers(spec: str, predicate: str, var: str = "c") -> str:
    """CEL: `predicate` holds for every container, init container and ephemeral container of
    the pod spec `spec` (`var` names the container in `predicate`)."""
    lists = ", ".join(
        f"has({spec}.{field}) ? {spec}.{field} : []"
        for field in ("containers", "initContainers", "ephemeralContainers")
    )
    return f"[{lists}].all(l, l.all({var}, {predicate}))"


def every_pod_spec(predicate: str) -> str:
    """CEL: `predicate` (over `s`, one pod spec) holds for each of the object's pod specs."""
    return f"variables.podSpecs.all(s, {predicate})"


def resource_rules(
    kinds: Iterable[WorkloadKind],
    operations: Sequence[str] = ("CREATE", "UPDATE"),
    extra: Mapping[str, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """matchConstraints.resourceRules: one rule per API group, its resources sorted; `extra`
    adds resources (subresources such as `pods/ephemeralcontainers`) to a group."""
    by_group: dict[str, set[str]] = {}
    for kind in kinds:
        by_group.setdefault(kind.group, set()).add(kind.resource)
    for group, resources in (extra or {}).items():
        by_group.setdefault(group, set()).update(resources)
    return [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": list(operations),
            "resources": sorted(resources),
        }
        for group, resources in sorted(by_group.items())
    ]


# --- who is the platform --------------------------------------------------------------------------


def team_namespaces(view: ClusterView) -> list[str]:
    """Every team namespace of the cluster, sorted."""
    return sorted(ns.name for tenant in view.tenants for ns in tenant.namespaces)


ARGO_CD_CLUSTER_CREDENTIAL = "system:serviceaccount:kube-system:argocd-manager"
"""The service account `argocd cluster add` creates on a cluster Argo CD manages from elsewhere:
the identity Argo CD's application controller acts as there."""


def argocd_namespaces(view: ClusterView) -> list[str]:
    """The namespaces Argo CD's own service accounts live in: the repository's
    `argocdNamespace` and the default one (reserved either way, `renderer.model.reserved`)."""
    repository = view.platform.repository
    found = {ARGO_CD_NAMESPACE}
    if repository is not None:
        found.add(repository.argocd_namespace)
    return sorted(found)


def not_platform_prefixes(view: ClusterView) -> list[str]:
    """Username prefixes of service accounts that are not the platform: every team namespace's,
    and Argo CD's, which syncs the teams' own Applications."""
    namespaces = sorted({*team_namespaces(view), *argocd_namespaces(view)})
    return [f"system:serviceaccount:{ns}:" for ns in namespaces]


CONTROLLER_MANAGER = "system:kube-controller-manager"
"""The identity Kubernetes' controllers (Job, CronJob, ReplicaSet, garbage collector, ...) act as
when kube-controller-manager runs without `--use-service-account-credentials` (the default of
a bare kube-controller-manager; kubeadm turns the flag on, and each controller then acts as its
own `kube-system` service account). A person never is it: the API server's OIDC and
certificate users cannot take a `system:` name (`--oidc-username-prefix`; client certificates
are the cluster admin's), and `rbac-group-characters` refuses `system:` group names."""


def platform_account_variable(view: ClusterView) -> dict[str, str]:
    """The `platformAccount` variable: the request comes from the platform: Kubernetes'
    controller manager (`CONTROLLER_MANAGER`, in either credential mode) or a service account
    outside every team namespace: a controller of Kubernetes (kube-system) or of an operator
    (Kueue, JobSet, Volcano, Argo Workflows). Teams cannot act as one: they create no
    RoleBindings and own no platform namespace, and a service account of their own lives in a
    team namespace. A person (an IdP user) never is one.

    Argo CD is not the platform here, in its own namespace or as its cluster credential on a
    cluster it manages from elsewhere (`ARGO_CD_CLUSTER_CREDENTIAL`; an IAM or exec credential
    is no service account at all): its application controller syncs the teams' own Applications
    (team AppProjects) from the teams' repositories, so an object it writes into a team
    namespace is as much the team's as one applied with kubectl. What the platform itself syncs
    into team namespaces (RBAC, quotas, network policy, LocalQueues, SecretStores) passes every
    policy on its own merits (tests/test_security_admission.py)."""
    return {"name": "platformAccount", "expression": platform_account(view)}


def platform_account(view: ClusterView) -> str:
    """CEL for `platformAccount`, for matchConditions too (they cannot read variables)."""
    username = "request.userInfo.username"
    return (
        f"({username} == {cel_string(CONTROLLER_MANAGER)} || "
        f"({username}.startsWith('system:serviceaccount:') && "
        f"{username} != {cel_string(ARGO_CD_CLUSTER_CREDENTIAL)} && "
        f"!{cel_list(not_platform_prefixes(view))}.exists(p, {username}.startsWith(p))))"
    )


ARGO_WORKFLOWS_CONTROLLER_PREFIX = f"system:serviceaccount:{ARGO_WORKFLOWS_NAMESPACE}:"
"""Argo Workflows' service accounts: its workflow controller creates the pods of a Workflow, as
the Workflow's templates say, in whichever namespace the Workflow is. Team roles grant no
`argoproj.io` kind, but the team AppProjects do not blacklist Workflows (only the guardrails and
Argo CD's own kinds), so a team's Application can sync one into its namespaces."""


def workload_controller(view: ClusterView) -> str:
    """CEL: the request comes from a platform account (`platform_account`) that is not Argo
    Workflows' controller: one that makes a team's objects only from a parent Kueue admitted or
    from its own state (a Job's pods, a RayCluster's, a TrainJob's SSH key), never from a
    specification the team wrote for that object itself."""
    return (
        f"({platform_account(view)}) && "
        f"!request.userInfo.username.startsWith({cel_string(ARGO_WORKFLOWS_CONTROLLER_PREFIX)})"
    )


def controlled_by(kinds: Iterable[WorkloadKind], obj: str = "object") -> str:
    """CEL: `obj`'s controller ownerReference is of one of `kinds`, as Kueue matches it (at the
    exact API version of its integration, for a kind Kueue integrates). Only worth something
    when the requester is a controller: an ownerReference is written by the client."""
    return (
        f"(has({obj}.metadata.ownerReferences) && {obj}.metadata.ownerReferences.exists(r, "
        f"has(r.controller) && r.controller && ({any_kind(kinds, 'r', owner=True)})))"
    )


def has_controller(obj: str = "object") -> str:
    """CEL: `obj` has a controller ownerReference, of any kind."""
    return (
        f"(has({obj}.metadata.ownerReferences) && "
        f"{obj}.metadata.ownerReferences.exists(r, has(r.controller) && r.controller))"
    )


# --- updates that leave the spec alone ----------------------------------------------------------


def spec_changed_condition() -> dict[str, str]:
    """A matchCondition that skips an UPDATE leaving `spec` as it was: a finalizer removed by
    Kueue (`kueue.x-k8s.io/managed`) or the Job controller (`batch.kubernetes.io/job-tracking`),
    a label or annotation set. Such an update changes nothing that runs, and re-checking the
    spec would refuse it for an object admitted before the policy (or the team's image list)
    narrowed: a pod stuck Terminating with its finalizer. An UPDATE that changes the spec (a
    new image, an ephemeral container through `pods/ephemeralcontainers`, a workload's
    template) is checked in full."""
    return {
        "name": "spec-changed",
        "expression": "request.operation != 'UPDATE' || !has(object.spec) || "
        "!has(oldObject.spec) || object.spec != oldObject.spec",
    }


# --- objects --------------------------------------------------------------------------------------


def validating_policy(
    name: str,
    rules: list[dict[str, Any]],
    validations: list[dict[str, str]],
    *,
    variables: Sequence[Mapping[str, str]] = (),
    match_conditions: Sequence[Mapping[str, str]] = (),
    **label_values: str | None,
) -> dict[str, Any]:
    """A ValidatingAdmissionPolicy that fails closed: a broken expression, or an object whose
    fields it cannot read, refuses the request rather than letting it through."""
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": rules},
    }
    if match_conditions:
        spec["matchConditions"] = [dict(c) for c in match_conditions]
    if variables:
        spec["variables"] = [dict(v) for v in variables]
    spec["validations"] = validations
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(name, **label_values),
        "spec": spec,
    }


def namespace_selector(namespaces: Iterable[str]) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(namespaces)}
        ]
    }


def validating_binding(
    name: str, namespaces: Iterable[str], **label_values: str | None
) -> dict[str, Any]:
    """The policy's binding, denying (not only warning or auditing) in the namespaces named."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(name, **label_values),
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": namespace_selector(namespaces)},
        },
    }


def policy_pair(
    policy: dict[str, Any], namespaces: Sequence[str], source: Location
) -> list[Manifest]:
    """The policy and its binding; nothing when no namespace would be bound (a binding's
    selector must name at least one value)."""
    if not namespaces:
        return []
    name = policy["metadata"]["name"]
    labels = {
        key.removeprefix("gpuplane.dev/").replace("-", "_"): value
        for key, value in policy["metadata"]["labels"].items()
        if key.startswith("gpuplane.dev/")
    }
    return [
        Manifest(LAYER, policy, source),
        Manifest(LAYER, validating_binding(name, namespaces, **labels), source),
    ]
