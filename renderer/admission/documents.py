"""What `kubectl apply -f FILE` would create, as `gpuplane fit` reads it: every object of every
document, the workloads among them, and which Kueue integration admits each on its cluster.

kubectl reads a file as a stream of YAML documents and skips the empty ones (an empty,
`null` or comment-only document is no object). An object with an `items` list is a List:
kubectl's `FlattenListVisitor` (k8s.io/cli-runtime `pkg/resource/visitor.go`) replaces it by its
items, Lists inside it included. Each object that makes pods is a workload and gets an answer;
the rest (Services, ConfigMaps, PersistentVolumeClaims, a TrainJob's TrainingRuntime) are listed
as ignored, with why.

Kueue admits an object as one Workload only when the cluster's Kueue manages its kind
(`renderer.model.integrations`, Kueue's `integrations.frameworks`). The pods of any other kind
reach Kueue's pod webhook (`pkg/controller/jobs/pod/pod_webhook.go` `Default`): their owner is no
job Kueue manages (`jobframework.FindAncestorJobManagedByKueue` finds none), the namespace is a
managed one, LocalQueue defaulting gives them the `default` queue, and each pod is gated and
admitted as a Workload of its own. fit then checks each pod set's pod on its own and says that
nothing keeps the gang together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.admission import chain as admission_chain
from renderer.admission import endpoints, needed
from renderer.admission.answer.result import (
    ERROR,
    NEVER,
    FileFit,
    FitResult,
    Ignored,
    Lender,
    Quota,
    worse,
)
from renderer.admission.apiserver import metadata as apiserver
from renderer.admission.apiserver import mutating, policies, rbac
from renderer.admission.apiserver.gate import RenderedCluster, Step
from renderer.admission.enqueue import Enqueuer
from renderer.admission.rendered import as_if_declared, rendered_cluster
from renderer.admission.scheduled_runs import scheduled_chain
from renderer.admission.scheduler.kueue_usage import Snapshot
from renderer.admission.workloads import readers
from renderer.admission.workloads.podsets import (
    FieldPath,
    PodSet,
    Unreadable,
    Workload,
    read_strings,
)
from renderer.findings.diagnostics import Location
from renderer.inputs.source import Document
from renderer.layers.security import priority as security_priority
from renderer.model import integrations
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL
from renderer.model.platform import Cluster, Platform

MAX_OBJECTS = 100
"""The most objects (List items included) fit reads from one file: a job file holds the job and
the few objects it needs, not a whole cluster's worth."""

TRAINER_GROUP = "trainer.kubeflow.org"
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
DEFAULT_RUNTIME_KIND = "ClusterTrainingRuntime"
"""`TrainJob.spec.runtimeRef.kind`'s default (Kubeflow Trainer v2 `RuntimeRef`)."""

METADATA_RULES: dict[str, str] = {
    "required": "it needs a metadata.name (kubectl create also takes a generateName)",
    "generateName": "a name (or generateName) is at most 253 lower-case letters, digits, '-' and "
    "'.', starting and ending with a letter or digit",
    "name": "a name (or generateName) is at most 253 lower-case letters, digits, '-' and '.', "
    "starting and ending with a letter or digit",
    "labels": "a label key is at most 63 letters, digits, '-', '_' and '.', starting and ending "
    "with a letter or digit, after an optional DNS subdomain and '/'; a label value the same, "
    "or empty",
    "annotations": "an annotation key follows the label key's rule, and all annotations together "
    "are at most 256 KiB",
}
"""What the API server asks of each metadata field it validates (`apiserver.metadata_errors`),
in words, for the reason of a refusal."""

ADMITTED_AS: dict[tuple[str, str], tuple[str, str]] = {
    ("batch", "CronJob"): ("batch/v1", "Job"),
    ("", "PodTemplate"): ("v1", "Pod"),
}
"""Kinds Kueue admits through what they stand for: a CronJob's runs are Jobs (the batch/job
integration manages them), and fit reads a PodTemplate as the Pod it describes."""


# --- the file's objects ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileObject:
    """One object of the file, and where it is: its document, and its path in it (a List's
    item is at `items[i]` of the List's document)."""

    data: Any
    document: Document
    prefix: FieldPath = ()
    moved: tuple[FieldPath, FieldPath] | None = None
    """For an object fit builds from another (a RayCronJob's run): a path of `data` that
    starts with the first is written in the file where the second is."""

    def locate(self, path: FieldPath) -> Location:
        if self.moved is not None and path[: len(self.moved[0])] == self.moved[0]:
            path = (*self.moved[1], *path[len(self.moved[0]) :])
        return self.document.locate((*self.prefix, *path))

    @property
    def api_version(self) -> str:
        value = self.data.get("apiVersion") if isinstance(self.data, dict) else None
        return value if isinstance(value, str) else ""

    @property
    def kind(self) -> str:
        value = self.data.get("kind") if isinstance(self.data, dict) else None
        return value if isinstance(value, str) else ""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def name(self) -> str:
        metadata = self.data.get("metadata") if isinstance(self.data, dict) else None
        if isinstance(metadata, dict):
            for key in ("name", "generateName"):
                if isinstance(metadata.get(key), str) and metadata[key]:
                    return str(metadata[key])
        return "(unnamed)"

    @property
    def namespace(self) -> str | None:
        metadata = self.data.get("metadata") if isinstance(self.data, dict) else None
        value = metadata.get("namespace") if isinstance(metadata, dict) else None
        return value if isinstance(value, str) and value else None


class TooMany(Exception):
    pass


RAY_CRONJOB = ("ray.io", "RayCronJob")
RAY_CRONJOB_NAME_LABEL = "ray.io/cronjob-name"
"""KubeRay v1.7.0 `utils.RayCronJobNameLabelKey`: the one label a run carries."""


def run_of(obj: FileObject) -> FileObject | None:
    """The object one run of a scheduled kind Kueue has no integration for creates, where Kueue
    admits that one: a KubeRay RayCronJob's RayJob (`raycronjob_controller.go` `constructRayJob`:
    the RayJob's spec is `spec.jobTemplate`; its one label is the controller's own, none of the
    RayCronJob's; the RayCronJob is its controller owner). None for every other object."""
    if (obj.group, obj.kind) != RAY_CRONJOB:
        return None
    spec = obj.data.get("spec")
    template = spec.get("jobTemplate") if isinstance(spec, dict) else None
    owner = {"apiVersion": obj.api_version, "kind": obj.kind, "name": obj.name}
    metadata: dict[str, Any] = {
        "name": f"{obj.name}-<run>",
        "labels": {RAY_CRONJOB_NAME_LABEL: obj.name},
        "ownerReferences": [{**owner, "controller": True, "blockOwnerDeletion": True}],
    }
    if obj.namespace:
        metadata["namespace"] = obj.namespace
    run = {"apiVersion": obj.api_version, "kind": "RayJob", "metadata": metadata, "spec": template}
    return FileObject(run, obj.document, obj.prefix, (("spec",), ("spec", "jobTemplate")))


def objects_of(documents: Iterable[Document]) -> list[FileObject]:
    """Every object kubectl would create, in file order, Lists flattened; raises TooMany past
    MAX_OBJECTS."""
    found: list[FileObject] = []

    def add(data: Any, document: Document, prefix: FieldPath) -> None:
        items = data.get("items") if isinstance(data, dict) else None
        if isinstance(items, list):
            for index, item in enumerate(items):
                add(item, document, (*prefix, "items", index))
            return
        if data is None:  # a List's null item
            return
        if len(found) >= MAX_OBJECTS:
            raise TooMany
        found.append(FileObject(data, document, prefix))

    for document in documents:
        add(document.data, document, ())
    return found


def _runtime_users(objects: Sequence[FileObject], namespace: str | None) -> dict[int, str]:
    """Each TrainingRuntime or ClusterTrainingRuntime of the file a TrainJob of the file runs on
    (`spec.runtimeRef`), by its index: the name of the first such TrainJob."""
    users: dict[int, str] = {}
    for job in objects:
        if (job.group, job.kind) != (TRAINER_GROUP, "TrainJob"):
            continue
        spec = job.data.get("spec")
        ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
        if not isinstance(ref, dict):
            continue
        ref_kind = ref.get("kind") or DEFAULT_RUNTIME_KIND
        for index, runtime in enumerate(objects):
            if (runtime.group, runtime.kind) != (TRAINER_GROUP, ref_kind) or index in users:
                continue
            same_namespace = ref_kind != "TrainingRuntime" or (
                (runtime.namespace or namespace) == (job.namespace or namespace)
            )
            if runtime.name == ref.get("name") and same_namespace:
                users[index] = job.name
    return users


# --- the answer for the file -----------------------------------------------------------------


class FileChecker:
    """Every workload of one file against one platform."""

    def __init__(
        self,
        platform: Platform,
        display: str,
        namespace: str | None = None,
        cluster: str | None = None,
        usage: Snapshot | None = None,
    ) -> None:
        self.platform = platform
        self.display = display
        self.namespace = namespace
        self.cluster = cluster
        self.usage = usage
        """`fit --usage`: the cluster's usage now (renderer.admission.scheduler.kueue_usage)."""
        self.rendered: dict[str, RenderedCluster] = {}
        """The clusters' admission objects, rendered once per file (`rendered_cluster`)."""

    def check(self, documents: Sequence[Document]) -> FileFit:
        try:
            objects = objects_of(documents)
        except TooMany:
            return self.problem(
                "the file holds too many objects",
                f"the file holds more than {MAX_OBJECTS} objects; fit reads a job file (the job "
                "and the few objects it needs)",
            )
        runtimes = _runtime_users(objects, self.namespace)
        claimed = self.claimed_templates(objects)
        workloads: list[FitResult] = []
        ignored: list[Ignored] = []
        for index, obj in enumerate(objects):
            others = [o.data for o in objects if o is not obj]
            if not isinstance(obj.data, dict) or not obj.api_version or not obj.kind:
                ignored.append(
                    Ignored(
                        obj.kind,
                        obj.name if isinstance(obj.data, dict) else "",
                        f"{obj.locate(())}: not a Kubernetes object (no apiVersion and kind); "
                        "kubectl apply refuses it",
                    )
                )
            elif (run := run_of(obj)) is not None:
                result = self.workload(run, others, submitted=obj)
                if isinstance(result, Ignored):
                    ignored.append(dataclasses.replace(result, kind=obj.kind, name=obj.name))
                else:
                    workloads.append(self.one_run(obj, result))
            elif index in runtimes or not readers.is_workload(obj.api_version, obj.kind):
                used = (
                    f"used as the runtime of TrainJob {runtimes[index]}"
                    if index in runtimes
                    else ""
                )
                refused = None if obj in claimed else self.refused_other(obj, used)
                if refused is not None:
                    workloads.append(refused)
                elif used:
                    ignored.append(Ignored(obj.kind, obj.name, used))
                else:
                    ignored.append(Ignored(obj.kind, obj.name, "not a workload"))
            else:
                result = self.workload(obj, others)
                if isinstance(result, Ignored):
                    ignored.append(result)
                else:
                    workloads.append(result)
        if not workloads:
            if not objects:
                return self.problem("the file holds no object", "the file holds no object")
            held = ", ".join(f"{i.kind or '?'} {i.name}".rstrip() for i in ignored)
            why = [f"no workload in the file; it holds {held}"]
            why.extend(f"{i.kind} {i.name}: {i.why}" for i in ignored if i.why != "not a workload")
            return FileFit(
                self.display,
                (),
                tuple(ignored),
                FitResult(self.display, ERROR, "no workload in the file", reasons=tuple(why)),
            )
        return FileFit(self.display, tuple(workloads), tuple(ignored))

    def claimed_templates(self, objects: Sequence[FileObject]) -> list[FileObject]:
        """The file's ResourceClaimTemplates whose refusal a workload of the file answers for
        in its own RBAC step (`needed.claim_templates`: what the workload then loses)."""
        names: set[str] = set()
        for obj in objects:
            cluster = self.cluster_of(obj.namespace)
            namespace = self.namespace or obj.namespace
            if cluster is None or namespace is None or not isinstance(obj.data, dict):
                continue
            rendered = self.rendered.get(cluster.name)
            if rendered is None:
                rendered = self.rendered[cluster.name] = rendered_cluster(self.platform, cluster)
            others = [o.data for o in objects if o is not obj]
            names.update(
                n.name for n in needed.claim_templates(obj.data, others, rendered, namespace)
            )
        return [o for o in objects if o.kind == "ResourceClaimTemplate" and o.name in names]

    def refused_other(self, obj: FileObject, used: str = "") -> FitResult | None:
        """An object that is no workload (a Service, a ConfigMap, a runtime) still meets the
        chain when `kubectl apply` creates it: where a step refuses it, the file cannot be
        applied as written, and the object gets an answer of its own (`never`, with the
        refusals); None where it passes (it is listed as ignored)."""
        cluster = self.cluster_of(obj.namespace)
        _, _, run = self.served_chain(obj, cluster)
        if run is None or not run.refused or cluster is None:
            return None
        result = FitResult(
            self.display,
            NEVER,
            "created by kubectl apply with the workloads",
            kind=obj.kind,
            name=obj.name,
            cluster=cluster.name,
            namespace=self.namespace or obj.namespace,
            message_from="API server",
            reasons=(used or f"{obj.kind} {obj.name} is not a workload: Kueue never sees it",),
        )
        concluded = admission_chain.conclude(result, run)
        steps = ", ".join(sorted({o.step.value for o in run.outcomes if o.refused}))
        return dataclasses.replace(
            concluded, summary=f"refused before it is created ({steps})", kueue_verdict=None
        )

    def one_run(self, obj: FileObject, result: FitResult) -> FitResult:
        note = (
            f"each run of the {obj.kind} is a RayJob of its own, created by KubeRay's RayCronJob "
            "controller (its RayCronJob feature gate must be on) with none of the RayCronJob's "
            "labels: fit checks one run"
        )
        return dataclasses.replace(
            result, kind=obj.kind, name=obj.name, notes=_unique((note,), result.notes)
        )

    def refused_on_create(
        self, obj: FileObject, parsed: Workload, cluster: Cluster | None = None
    ) -> FitResult | None:
        """What stops the object before it exists, whatever its namespace and cluster: kubectl
        itself (a --namespace other than the object's), then the API server (metadata it
        refuses: a name that is no RFC 1123 subdomain, none at all, labels or annotations,
        `apiserver.name_refusal`). Kueue never sees such an object."""
        enqueuer = self.enqueuer(parsed)
        if self.namespace and obj.namespace and self.namespace != obj.namespace:
            return enqueuer.namespace_refused(self.namespace, obj.namespace)
        # a run fit builds (a RayCronJob's RayJob) is named by its controller, not the file
        minor = cluster.kubernetes_version if cluster is not None else None
        message = apiserver.name_refusal(obj.data, minor) if obj.moved is None else None
        if message is None:
            return None
        fields = [f for f in METADATA_RULES if f"metadata.{f}: Invalid" in message]
        if "metadata.annotations: Too long" in message:
            fields.append("annotations")
        if "metadata.name: Required value" in message:
            fields.insert(0, "required")
        shown = {"generateName": "name", "required": "name"}
        what = ", ".join(dict.fromkeys(shown.get(f, f) for f in fields))
        return enqueuer.result(
            NEVER,
            f"refused by the API server: invalid {what}",
            namespace=self.namespace or obj.namespace,
            message_from="API server",
            message=message,
            reasons=(
                f"the API server creates no {obj.kind} with this metadata, so Kueue never sees "
                "it: " + "; ".join(dict.fromkeys(METADATA_RULES[f] for f in fields)),
            ),
        )

    def enqueuer(self, workload: Workload) -> Enqueuer:
        return Enqueuer(self.platform, self.display, workload, self.usage)

    def problem(self, summary: str, reason: str) -> FileFit:
        return FileFit(
            self.display, (), (), FitResult(self.display, ERROR, summary, reasons=(reason,))
        )

    # --- one workload ------------------------------------------------------------------------

    def workload(
        self, obj: FileObject, others: Sequence[Any], submitted: FileObject | None = None
    ) -> FitResult | Ignored:
        """The workload's answer: the admission chain on the object first, where fit knows the
        cluster, then Kueue's admission of the object as the chain hands it on. `submitted`:
        the object the file creates, where `obj` is what its controller creates from it (a
        RayCronJob's run)."""
        cluster = self.cluster_of(obj.namespace)
        checker, cluster, run = self.served_chain(obj, cluster, others, submitted)
        if run is None:
            alone = self.kueue(obj, others, cluster)
            if isinstance(alone, Ignored):
                return alone
            return dataclasses.replace(alone, kueue_verdict=alone.verdict)
        result = checker.kueue(dataclasses.replace(obj, data=dict(run.obj)), others, cluster, run)
        if isinstance(result, Ignored):
            return result
        assumed = [o.addon for o in run.outcomes if o.addon is not None]
        if checker is not self and cluster is not None and assumed:
            note = (
                f"Kueue's answer is for cluster {cluster.name} as if it declared `{assumed[0]}` "
                "under spec.addons: the cluster serves no such kind today"
            )
            result = dataclasses.replace(result, notes=_unique((note,), result.notes))
        return admission_chain.conclude(result, run)

    def served_chain(
        self,
        obj: FileObject,
        cluster: Cluster | None,
        others: Sequence[Any] = (),
        submitted: FileObject | None = None,
    ) -> tuple[FileChecker, Cluster | None, admission_chain.ChainRun | None]:
        """The chain's steps (`chain`), and who answers after them: this checker on `cluster`,
        or, where the discovery step refused a kind that an add-on the cluster does not declare
        serves, a checker of the platform as if the cluster declared it (`as_if_declared`), as
        the refusal's fix asks: the rest of the chain and Kueue read the cluster rendered with
        it (its Kueue integration on, the policies covering its kinds); the refusal stays."""
        run = self.chain(obj, cluster, others, submitted)
        addon = next((o.addon for o in run.outcomes if o.addon), None) if run else None
        if run is None or cluster is None or addon is None:
            return self, cluster, run
        platform = as_if_declared(self.platform, cluster, addon)
        checker = FileChecker(platform, self.display, self.namespace, self.cluster, self.usage)
        changed = platform.clusters[cluster.name]
        again = checker.chain(obj, changed, others, submitted)
        assert again is not None  # the same namespace and object as `run`
        discovery = tuple(o for o in run.outcomes if o.step is Step.DISCOVERY)
        outcomes = (*discovery, *(o for o in again.outcomes if o.step is not Step.DISCOVERY))
        return checker, changed, dataclasses.replace(again, outcomes=outcomes)

    def chain(
        self,
        obj: FileObject,
        cluster: Cluster | None,
        others: Sequence[Any] = (),
        submitted: FileObject | None = None,
    ) -> admission_chain.ChainRun | None:
        """The chain's steps for the object in its namespace of `cluster`, with the RBAC step's
        refusals of the file's objects it needs (`needed`); None where fit does not know the
        cluster (the enqueuer then says why) or the object is no mapping. `submitted`: the
        object the file creates, where `obj` is what its controller creates from it."""
        namespace = self.namespace or obj.namespace
        if cluster is None or namespace is None or not isinstance(obj.data, dict):
            return None
        rendered = self.rendered.get(cluster.name)
        if rendered is None:
            rendered = self.rendered[cluster.name] = rendered_cluster(self.platform, cluster)
        user = rbac.member_of(rendered, namespace)
        if submitted is None:
            run = admission_chain.run(obj.data, namespace, rendered, user, source=self.display)
        else:
            run = scheduled_chain(submitted.data, obj.data, namespace, rendered, user, self.display)
        templates = needed.claim_templates(run.obj, others, rendered, namespace)
        found = needed.refusals(templates, namespace, user, rendered, self.display)
        return dataclasses.replace(run, outcomes=needed.with_refusals(run.outcomes, found))

    def kueue(
        self,
        obj: FileObject,
        others: Sequence[Any],
        cluster: Cluster | None,
        run: admission_chain.ChainRun | None = None,
    ) -> FitResult | Ignored:
        """Kueue's answer for the object (as the chain `run` handed it on, where it ran): its
        Workload, queue, priority and admission."""
        parsed = readers.workload_from(obj.data, others)
        if isinstance(parsed, Unreadable):
            if not parsed.workload:
                return Ignored(obj.kind, obj.name, parsed.reason)
            return self.unreadable(obj, parsed, cluster)
        parsed = endpoints.at_maximum(self.platform, parsed, obj.data, self.namespace)
        if run is not None:
            parsed = _priority_admission(parsed, run)
        refused = self.refused_on_create(obj, parsed, cluster)
        if refused is not None:
            return refused
        if cluster is None or cluster.scheduler != "kueue":
            # the enqueuer says why (no team namespace, several clusters, not Kueue)
            result = self.enqueuer(parsed).enqueue(self.namespace, self.cluster)
            return dataclasses.replace(result, integration=None, gang=False)
        framework = self.framework(cluster, parsed)
        if framework is None:
            return self.pod_by_pod(obj, parsed, cluster)
        result = self.enqueuer(parsed).enqueue(self.namespace, self.cluster)
        gang = (
            bool(parsed.pod_sets)
            and parsed.replica_unit != "pod"
            and (framework != "pod" or readers.POD_GROUP_LABEL in _labels(obj.data, ("metadata",)))
        )
        return dataclasses.replace(result, integration=framework, gang=gang)

    def cluster_of(self, object_namespace: str | None) -> Cluster | None:
        """The cluster the workload's namespace is a team namespace on, when there is exactly
        one (the enqueuer explains every other case)."""
        name = self.namespace or object_namespace
        found = {
            ns.cluster
            for team in self.platform.teams.values()
            for ns in team.namespaces
            if ns.name == name and (self.cluster is None or ns.cluster == self.cluster)
        }
        if len(found) != 1:
            return None
        return self.platform.clusters.get(found.pop())

    def framework(self, cluster: Cluster, workload: Workload) -> str | None:
        """The Kueue framework that admits this workload as one Workload on the cluster, or
        None when the cluster's Kueue does not manage its kind."""
        group = workload.api_version.rpartition("/")[0]
        api_version, kind = ADMITTED_AS.get(
            (group, workload.kind), (workload.api_version, workload.kind)
        )
        if not integrations.manages(cluster, api_version, kind):
            return None
        found = integrations.integration_for(api_version, kind)
        return found.framework if found is not None else None

    def unreadable(self, obj: FileObject, parsed: Unreadable, cluster: Cluster | None) -> FitResult:
        where = obj.locate(parsed.path) if parsed.path else None
        prefix = f"{where}: " if where is not None and where.line > 0 else ""
        reasons = [f"{prefix}{parsed.reason}"]
        key = (obj.group, obj.kind)
        summary = f"cannot read the {obj.kind or 'job'}"
        integration: str | None = None
        if key in readers.NO_INTEGRATION:
            summary = f"fit cannot see the pods {obj.kind} creates"
            if obj.group == readers.VOLCANO_GROUP and cluster and cluster.scheduler == "kueue":
                summary = "this cluster runs Kueue, not Volcano"
                reasons.insert(
                    0,
                    f"cluster {cluster.name} runs Kueue, not Volcano: it serves no "
                    f"{readers.VOLCANO_GROUP} API, so the API server refuses the {obj.kind}",
                )
        elif key in readers.POD_BY_POD:
            integration = "pod"
        elif (found := integrations.integration_for(obj.api_version, obj.kind)) is not None:
            integration = found.framework
        return FitResult(
            self.display,
            ERROR,
            summary,
            kind=obj.kind,
            name=obj.name,
            namespace=self.namespace or obj.namespace,
            cluster=cluster.name if cluster else None,
            reasons=tuple(reasons),
            integration=integration,
        )

    def pod_by_pod(self, obj: FileObject, workload: Workload, cluster: Cluster) -> FitResult:
        """A kind the cluster's Kueue does not manage: each of its pods is a Pod Workload of its
        own (the pod integration), so each pod set's pod is checked on its own, as many times
        as the object makes such pods. Kueue sees these pods as the API server created them
        (`from_pod`: its Pod defaulting and LimitRanger ran first)."""
        shown = f"{workload.api_version} {workload.kind}"
        not_managed = f"this cluster's Kueue does not manage {shown}"
        why = _why_not_managed(cluster, workload)
        if not integrations.manages(cluster, "v1", "Pod"):
            return self.enqueuer(workload).result(
                ERROR,
                not_managed,
                cluster=cluster.name,
                namespace=self.namespace or workload.namespace,
                reasons=(
                    f"{not_managed}{why}, and its pod integration is off: Kueue never sees the "
                    "pods, so no queue holds them",
                ),
            )
        subs: list[FitResult] = []
        for ps in workload.pod_sets:
            labels = _labels(obj.data, (*ps.path, "metadata"))
            one = Workload(
                api_version=workload.api_version,
                kind=workload.kind,
                name=workload.name,
                namespace=workload.namespace,
                queue_name=labels.get(QUEUE_LABEL) or None,
                priority_class=labels.get(PRIORITY_LABEL) or None,
                pod_sets=(dataclasses.replace(ps, count=1, min_count=None, from_pod=True),),
                replicas=ps.count * workload.replicas,
                replica_unit="pod",
                notes=workload.notes,
                claim_templates=workload.claim_templates,
            )
            subs.append(self.enqueuer(one).enqueue(self.namespace, self.cluster))
        merged = _merge(workload.pod_sets, subs)
        notes = (
            f"{not_managed}{why}: Kueue's pod integration admits each of its pods on its own, as "
            "a Pod; nothing keeps the gang together, so some pods may run while others wait",
            *merged.notes,
        )
        return dataclasses.replace(
            merged,
            summary=f"{not_managed}; pod by pod: {merged.summary}",
            notes=_unique(notes),
            integration="pod",
            gang=False,
        )


def _priority_admission(workload: Workload, run: admission_chain.ChainRun) -> Workload:
    """The Workload with what the chain's priority policies did to its label: the
    MutatingAdmissionPolicy that set it, or the ValidatingAdmissionPolicy's refusal."""
    set_by = mutating.label_set_by(run.outcomes, PRIORITY_LABEL)
    return dataclasses.replace(
        workload,
        priority_set_by=set_by if workload.priority_class is not None else None,
        priority_refused=policies.refused_by(run.outcomes, security_priority.POLICY_NAME),
    )


def _why_not_managed(cluster: Cluster, workload: Workload) -> str:
    """Why Kueue does not manage the kind: another version of it, an integration that is off,
    or none at all."""
    group, _, version = workload.api_version.rpartition("/")
    same_kind = [
        i for i in integrations.KUEUE_INTEGRATIONS if (i.group, i.kind) == (group, workload.kind)
    ]
    if not same_kind:
        return " (Kueue has no integration for it)"
    integration = same_kind[0]
    if integration.versions and version not in integration.versions:
        return (
            f" (Kueue's {integration.framework} integration is for "
            f"{', '.join(f'{group}/{v}' for v in integration.versions)}, another API)"
        )
    if integration.framework not in integrations.enabled_frameworks(cluster):
        return f" (its {integration.framework} integration is off)"
    return ""


def _merge(pod_sets: Sequence[PodSet], subs: Sequence[FitResult]) -> FitResult:
    """One answer from the answers for each pod set's pods: the worst verdict, every pod set,
    the quota they take together, and with `--usage` the usage now (the worst answer's)."""
    if len(subs) == 1:
        return subs[0]
    base = subs[0]
    for sub in subs[1:]:
        if worse(sub.verdict, base.verdict):
            base = sub
    quotas: dict[tuple[str, str], Quota] = {}
    for sub in subs:
        for q in sub.quotas:
            key = (q.flavor, q.resource)
            before = quotas.get(key)
            quotas[key] = (
                q
                if before is None
                else dataclasses.replace(before, requested=before.requested + q.requested)
            )
    lenders: dict[Lender, None] = {}
    for sub in subs:
        lenders.update(dict.fromkeys(sub.lenders))
    reasons: list[str] = []
    for ps, sub in zip(pod_sets, subs, strict=True):
        if not sub.admissible:
            reasons.extend(f"pod set {ps.name}: {r}" for r in sub.reasons)
    return dataclasses.replace(
        base,
        summary="; ".join(
            f"{ps.name}: {sub.summary}" for ps, sub in zip(pod_sets, subs, strict=True)
        ),
        pod_sets=tuple(p for sub in subs for p in sub.pod_sets),
        quotas=tuple(quotas.values()) if base.admissible else base.quotas,
        lenders=tuple(lenders),
        replicas=sum(sub.replicas for sub in subs),
        admitted_replicas=sum(sub.admitted_replicas for sub in subs),
        replica_unit="pod",
        reasons=tuple(reasons) or base.reasons,
        preemption=_unique(*(sub.preemption for sub in subs)),
        usage=base.usage or next((sub.usage for sub in subs if sub.usage is not None), None),
        notes=_unique(*(sub.notes for sub in subs)),
        flavors_tried=_unique(*(sub.flavors_tried for sub in subs)),
    )


def _unique(*groups: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group))


def _field(data: Any, path: FieldPath) -> Any:
    node = data
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _labels(data: Any, metadata: FieldPath) -> dict[str, str]:
    labels = _field(data, (*metadata, "labels"))
    return read_strings(labels, ()) if isinstance(labels, dict) else {}


__all__ = ["MAX_OBJECTS", "FileChecker", "FileObject", "objects_of"]
