"""AppWrapper as Kueue v0.19.2 reads it, and what AppWrapper's own webhook refuses on create.

Kueue's integration (`pkg/controller/jobs/appwrapper/appwrapper_controller.go` `PodSets`) takes
the AppWrapper's pod sets from `awutils.GetComponentPodSpecs`, names pod set i over all the
components `fmt.Sprintf("%s-%v", j.Name, psIndex)` (lower-cased by `NewPodSetReference`) and
counts `awutils.Replicas` (the pod set's `replicas`, 1 when unset). Those pod sets are
AppWrapper's, not the wrapped kinds' (project-codeflare/appwrapper v1.2.1 `pkg/utils/utils.go`;
Kueue v0.19.2 compiles against v1.2.2): `EnsureComponentStatusInitialized` uses a component's
declared `podSets` exactly as written when it has any, else `InferPodSets`, which knows only
v1 Pod, apps/v1 Deployment and StatefulSet, batch/v1 Job, jobset.x-k8s.io/v1alpha2 JobSet,
kubeflow.org/v1 PyTorchJob and ray.io/v1 RayCluster and RayJob (`templatesForGVK`,
`inferRayPodSets`, `inferReplicas`: a missing `replicas` is 1; a Ray worker group's
`numOfHosts` is not read). A component of any other kind without declared `podSets` has no pod
sets: Kueue counts none of its pods.

AppWrapper's validating webhook (`internal/webhook/appwrapper_webhook.go`
`validateAppWrapperCreate`, `vappwrapper.kb.io`) refuses an AppWrapper with no pod set at all or
more than 8, declared `podSets` whose path is not a pod template, declared `podSets` that differ
from what it infers for a known kind (`ValidatePodSets`), nested AppWrappers and components in
another namespace. Its messages are apimachinery v0.32.3 field errors; where the bad value is a
Go struct (printed with `%#v`, the component's raw JSON as bytes) it is shown elided, `{…}`.

Not modelled: the strict `v1.PodSpec` parse of `GetPodTemplateSpec` (unknown fields) and the
webhook's optional RBAC check (`userRBACAdmissionCheck`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from renderer.admission.workloads.podsets import (
    EMPTY_RESOURCES,
    BadField,
    FieldPath,
    PodSet,
    read_field,
    read_pod_set,
)
from renderer.admission.workloads.ray import denied

WEBHOOK = "vappwrapper.kb.io"
MAX_POD_SETS = 8
"""`validateAppWrapperCreate` step 6: "Enforce Kueue limitation that 0 < podSpecCount <= 8"."""

REFUSED_BY = "AppWrapper's webhook"
COMPONENTS_VALUE = "[]v1beta2.AppWrapperComponent{…}"
TEMPLATE_VALUE = "runtime.RawExtension{…}"
POD_SETS_VALUE = "[]v1beta2.AppWrapperPodSet{…}"

_TEMPLATE = "template"


class _PathError(Exception):
    """An error of AppWrapper's `getValueAtPath` / `GetPodTemplateSpec`, in its words."""


def _go_value(value: Any) -> str:
    """Go's `%v` of a JSON value, for AppWrapper's "non-int value %v"."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_value(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    return str(value)


def _as_int(value: Any) -> int | None:
    """The integer a JSON number decodes to (`int64`), else None (kubectl's YAML-to-JSON writes
    a whole float such as 2.0 as 2)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def value_at(obj: Any, path: str) -> tuple[Any, FieldPath]:
    """AppWrapper's `getValueAtPath`: the value at `path` ("template" is the component's object
    itself), with its place below the component template; `_PathError` in AppWrapper's words
    (which keep its position text as it builds it: an index without its closing bracket)."""
    processed = _TEMPLATE
    if not path.startswith(processed):
        raise _PathError("first element of the path must be 'template'")
    remaining = path[len(processed) :]
    cursor = obj
    parts: list[str | int] = []
    while remaining:
        if remaining.startswith("["):
            end = remaining.find("]")
            if end < 0:
                raise _PathError(
                    f"at path position '{processed}' invalid array index '{remaining}'"
                )
            text = remaining[1:end]
            try:
                index = int(text, 10)
            except ValueError:
                raise _PathError(
                    f"at path position '{processed}' invalid index expression '{text}'"
                ) from None
            if not isinstance(cursor, list):
                raise _PathError(f"at path position '{processed}' found non-array value")
            if index < 0 or index >= len(cursor):
                raise _PathError(f"at path position '{processed}' out of bounds index '{index}'")
            cursor = cursor[index]
            parts.append(index)
            processed += remaining[0:end]
            remaining = remaining[end + 1 :]
        elif remaining.startswith("."):
            remaining = remaining[1:]
            processed += "."
            end = len(remaining)
            dot = remaining.find(".")
            if dot > 0:
                end = dot
            bracket = remaining.find("[")
            if 0 < bracket < end:
                end = bracket
            key = remaining[:end]
            if not isinstance(cursor, dict):
                raise _PathError(f"at path position '{processed}' non-map value")
            if key not in cursor:
                raise _PathError(f"at path position '{processed}' missing field '{key}'")
            cursor = cursor[key]
            parts.append(key)
            remaining = remaining[len(key) :]
            processed += key
        else:
            raise _PathError(f"at path position '{processed}' invalid path element '{remaining}'")
    return cursor, tuple(parts)


def _raw_template(obj: Any, path: str) -> tuple[dict[str, Any], FieldPath]:
    """`GetRawTemplate`: the map at `path`."""
    value, parts = value_at(obj, path)
    if not isinstance(value, dict):
        raise _PathError(f"at path position '{path}' non-map value")
    return value, parts


def pod_template_at(obj: Any, path: str) -> FieldPath:
    """`GetPodTemplateSpec`'s checks (bar the strict PodSpec parse): where the pod template at
    `path` is, below the component template."""
    template, parts = _raw_template(obj, path)
    if not isinstance(template.get("spec"), dict):
        raise _PathError(f"content at {path} does not contain a spec")
    return parts


def _get_replicas(obj: Any, path: str) -> int | None:
    """`GetReplicas`: the int at `path`, None where AppWrapper gets an error (missing, not int)."""
    try:
        value, _ = value_at(obj, path)
    except _PathError:
        return None
    return _as_int(value)


def _infer_replicas(obj: Any, path: str) -> int:
    """`inferReplicas`: the int at `path`, 1 when the field is absent or null."""
    if not path:
        return 1
    index = path.rfind(".")
    if index >= 0:
        obj, _ = _raw_template(obj, path[:index])
    value = obj.get(path[index + 1 :]) if isinstance(obj, dict) else None
    if value is None:
        return 1
    number = _as_int(value)
    if number is None:
        raise _PathError(f"at path position '{path}' non-int value {_go_value(value)}")
    return number


_TEMPLATES_FOR_GVK: dict[tuple[str, str], tuple[str, str]] = {
    ("v1", "Pod"): ("template", ""),
    ("apps/v1", "Deployment"): ("template.spec.template", "template.spec.replicas"),
    ("apps/v1", "StatefulSet"): ("template.spec.template", "template.spec.replicas"),
}
"""`templatesForGVK`: pod template path and replica count path."""


def _job_count(obj: Any, prefix: str) -> int:
    """The Job and JobSet cases: parallelism (1 when unreadable), at most completions."""
    count = _get_replicas(obj, prefix + "parallelism")
    count = 1 if count is None else count
    completions = _get_replicas(obj, prefix + "completions")
    return completions if completions is not None and completions < count else count


def _infer_ray(obj: Any, prefix: str) -> list[tuple[int, str]]:
    """`inferRayPodSets`: the head at 1, each worker group with a template at its `replicas`."""
    pod_sets = [(1, prefix + "headGroupSpec.template")]
    try:
        workers, _ = value_at(obj, prefix + "workerGroupSpecs")
    except _PathError:
        return pod_sets
    if isinstance(workers, list):
        for i in range(len(workers)):
            group = f"{prefix}workerGroupSpecs[{i}]."
            try:
                value_at(obj, group + _TEMPLATE)
            except _PathError:
                continue
            pod_sets.append((_infer_replicas(obj, group + "replicas"), group + _TEMPLATE))
    return pod_sets


def infer_pod_sets(obj: Any) -> list[tuple[int, str]]:
    """`InferPodSets`: (replicas, path) of each pod set AppWrapper infers for the component's
    kind (none for a kind it does not know); `_PathError` where inference fails."""
    gvk = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    pod_sets: list[tuple[int, str]] = []
    if gvk == ("batch/v1", "Job"):
        pod_sets.append((_job_count(obj, "template.spec."), "template.spec.template"))
    elif gvk == ("jobset.x-k8s.io/v1alpha2", "JobSet"):
        try:
            jobs, _ = value_at(obj, "template.spec.replicatedJobs")
        except _PathError:
            jobs = None
        for i in range(len(jobs) if isinstance(jobs, list) else 0):
            job = f"template.spec.replicatedJobs[{i}]."
            try:
                value_at(obj, job + _TEMPLATE)
            except _PathError:
                continue
            replicas = _get_replicas(obj, job + "replicas")
            count = (1 if replicas is None else replicas) * _job_count(obj, job + "template.spec.")
            pod_sets.append((count, job + "template.spec.template"))
    elif gvk == ("kubeflow.org/v1", "PyTorchJob"):
        for replica_type in ("Master", "Worker"):
            prefix = f"template.spec.pytorchReplicaSpecs.{replica_type}."
            try:
                value_at(obj, prefix + _TEMPLATE)
            except _PathError:
                continue
            pod_sets.append((_infer_replicas(obj, prefix + "replicas"), prefix + _TEMPLATE))
    elif gvk == ("ray.io/v1", "RayCluster"):
        pod_sets.extend(_infer_ray(obj, "template.spec."))
    elif gvk == ("ray.io/v1", "RayJob"):
        pod_sets.extend(_infer_ray(obj, "template.spec.rayClusterSpec."))
    elif gvk in _TEMPLATES_FOR_GVK:
        path, replicas_path = _TEMPLATES_FOR_GVK[gvk]
        try:
            value_at(obj, path)
        except _PathError:
            pass
        else:
            pod_sets.append((_infer_replicas(obj, replicas_path), path))
    for _, path in pod_sets:
        try:
            pod_template_at(obj, path)
        except _PathError as err:
            raise _PathError(f"{path} does not refer to a v1.PodSpecTemplate: {err}") from None
    return pod_sets


def _validate_declared(
    declared: list[tuple[int | None, str]], inferred: list[tuple[int, str]]
) -> str | None:
    """`ValidatePodSets`: why declared pod sets disagree with the inferred ones, if they do."""
    if not declared:
        return None
    paths: dict[str, int | None] = {}
    for replicas, path in declared:
        if path in paths:
            return f"multiple DeclaredPodSets with path '{path}'"
        paths[path] = replicas
    if inferred:
        if len(inferred) != len(declared):
            return (
                f"DeclaredPodSet count {len(declared)} differs from inferred count {len(inferred)}"
            )
        for inferred_replicas, path in inferred:
            if path not in paths:
                return f"PodSet with path '{path}' is missing"
            declared_replicas = paths[path]
            declared_replicas = 1 if declared_replicas is None else declared_replicas
            if inferred_replicas != declared_replicas:
                return (
                    f"replica count {declared_replicas} differs from inferred count "
                    f"{inferred_replicas} for PodSet at path position '{path}'"
                )
    return None


def _declared(data: Any, here: FieldPath) -> list[tuple[int | None, str]]:
    """A component's declared `podSets`: (replicas or None, path), as the CRD admits them."""
    result: list[tuple[int | None, str]] = []
    items = read_field(data, (*here, "podSets"), list) or []
    for index, _ in enumerate(items):
        at = (*here, "podSets", index)
        read_field(data, at, dict, required=True)
        replicas = read_field(data, (*at, "replicas"), int)
        if isinstance(replicas, bool):
            raise BadField((*at, "replicas"), "podSets[].replicas must be an integer")
        result.append((replicas, read_field(data, (*at, "path"), str) or ""))
    return result


def _as_appwrapper_sees_it(ps: PodSet) -> PodSet:
    """`GetPodTemplateSpec` copies only part of the pod spec into the pod set: containers' and
    init containers' requests and limits but not an init container's `restartPolicy` (a
    sidecar counts as a plain init container), and no pod-level `resources`."""
    containers = tuple(
        dataclasses.replace(c, role="init") if c.role == "sidecar" else c for c in ps.containers
    )
    return dataclasses.replace(
        ps,
        containers=containers,
        pod_requests=EMPTY_RESOURCES,
        pod_limits=EMPTY_RESOURCES,
        pod_resources=False,
        min_count=None,
        from_pod=False,
    )


def _name(data: Any) -> str:
    metadata = read_field(data, ("metadata",), dict) or {}
    name = metadata.get("name") or metadata.get("generateName")
    return name if isinstance(name, str) else "(unnamed)"


def appwrapper(data: Any) -> tuple[list[PodSet], dict[str, Any]]:
    """The AppWrapper's pod sets as Kueue reads them (`GetComponentPodSpecs`), and the refusal
    of AppWrapper's webhook (`validateAppWrapperCreate`), if any."""
    components = read_field(data, ("spec", "components"), list, required=True)
    reading = _Reading(data, _name(data), read_field(data, ("metadata", "namespace"), str))
    for index, _ in enumerate(components):
        reading.component(index)
    errors = reading.errors + _count_errors(reading.count)
    extra: dict[str, Any] = {"notes": tuple(reading.notes)}
    refused = denied(WEBHOOK, errors)
    if refused is not None:
        extra.update(
            refused=refused,
            refused_by=REFUSED_BY,
            refused_why=(
                "AppWrapper's validating webhook (internal/webhook/appwrapper_webhook.go "
                "validateAppWrapperCreate) denies the AppWrapper on create, so Kueue never "
                "makes a Workload for it",
                "declare spec.components[].podSets (path to each pod template, replicas) for a "
                "kind AppWrapper cannot infer, and keep declared podSets equal to what it infers "
                "for Pod, Deployment, StatefulSet, Job, JobSet, PyTorchJob, RayCluster and RayJob",
            ),
        )
    return reading.pod_sets, extra


@dataclasses.dataclass
class _Reading:
    """One AppWrapper read component by component: the webhook's errors, the notes, the pod
    sets Kueue takes, and how many pod sets the webhook counts."""

    data: Any
    name: str
    namespace: str | None
    errors: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    pod_sets: list[PodSet] = dataclasses.field(default_factory=list)
    count: int = 0

    def component(self, index: int) -> None:
        """Component `index`: the webhook's checks of it, then its pod sets as Kueue reads
        them (`EnsureComponentStatusInitialized`, then `GetComponentPodSpecs`)."""
        here: FieldPath = ("spec", "components", index)
        shown = f"spec.components[{index}]"
        obj = read_field(self.data, (*here, "template"), dict, required=True)
        self._check_placement(obj, here, shown)
        declared = _declared(self.data, here)
        self._check_declared_paths(obj, declared, shown)
        inferred = self._inferred(obj, declared, shown)
        chosen = declared or [(replicas, path) for replicas, path in inferred]
        if not chosen:
            kind = f"{obj.get('apiVersion', '')} {obj.get('kind', '')}".strip()
            self.notes.append(
                f"component {index} ({kind}): no pod sets: AppWrapper infers none for this kind "
                f"and {shown}.podSets declares none, so Kueue's Workload counts none of its pods"
            )
        self._read_pod_sets(obj, here, chosen)
        if not declared and obj.get("apiVersion") == "ray.io/v1":
            self.notes.extend(_hosts_notes(obj, index))

    def _check_placement(self, obj: dict[str, Any], here: FieldPath, shown: str) -> None:
        """No AppWrapper inside an AppWrapper, no component in another namespace."""
        if obj.get("apiVersion") == "workload.codeflare.dev/v1beta2" and obj.get("kind") == (
            "AppWrapper"
        ):
            self.errors.append(f"{shown}.template: Forbidden: Nested AppWrappers are forbidden")
        namespace = read_field(self.data, (*here, "template", "metadata", "namespace"), str)
        if namespace and self.namespace and namespace != self.namespace:
            self.errors.append(
                f"{shown}.template.metadata.namespace: Forbidden: AppWrappers cannot create "
                "objects in other namespaces"
            )

    def _check_declared_paths(
        self, obj: dict[str, Any], declared: list[tuple[int | None, str]], shown: str
    ) -> None:
        """Each declared pod set's path must lead to a pod template."""
        for ps_index, (_, path) in enumerate(declared):
            at = f"{shown}.podSets[{ps_index}].path"
            if not path:
                self.errors.append(f"{at}: Required value: podspec must specify path")
            try:
                pod_template_at(obj, path)
            except _PathError as err:
                self.errors.append(
                    f'{at}: Invalid value: "{path}": path does not refer to a '
                    f"v1.PodSpecTemplate: {err}"
                )

    def _inferred(
        self, obj: dict[str, Any], declared: list[tuple[int | None, str]], shown: str
    ) -> list[tuple[int, str]]:
        """The pod sets AppWrapper infers for the component, counted, with declared pod sets
        checked against them; none when inferring fails."""
        try:
            inferred = infer_pod_sets(obj)
        except _PathError as err:
            self.errors.append(
                f"{shown}.template: Invalid value: {TEMPLATE_VALUE}: error inferring PodSets: {err}"
            )
            return []
        self.count += max(len(declared), len(inferred))
        if (why := _validate_declared(declared, inferred)) is not None:
            self.errors.append(f"{shown}.podSets: Invalid value: {POD_SETS_VALUE}: {why}")
        return inferred

    def _read_pod_sets(
        self, obj: dict[str, Any], here: FieldPath, chosen: list[tuple[int | None, str]]
    ) -> None:
        """The chosen pod sets, named over all components; a bad path is skipped."""
        for replicas, path in chosen:
            try:
                parts = pod_template_at(obj, path)
            except _PathError:
                continue
            ps = read_pod_set(
                self.data,
                (*here, "template", *parts),
                f"{self.name}-{len(self.pod_sets)}".lower(),
                1 if replicas is None else replicas,
            )
            self.pod_sets.append(_as_appwrapper_sees_it(ps))


def _count_errors(count: int) -> list[str]:
    """`validateAppWrapperCreate`'s limit on the pod sets of all components together."""
    if count == 0:
        return [
            f"spec.components: Invalid value: {COMPONENTS_VALUE}: components contains no podspecs"
        ]
    if count > MAX_POD_SETS:
        return [
            f"spec.components: Invalid value: {COMPONENTS_VALUE}: components contains {count} "
            f"podspecs; at most {MAX_POD_SETS} are allowed"
        ]
    return []


def _hosts_notes(obj: Any, index: int) -> list[str]:
    """A wrapped Ray worker group with `numOfHosts` > 1: KubeRay makes replicas x numOfHosts
    pods, but AppWrapper's `inferRayPodSets` counts `replicas` only."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and obj.get("kind") == "RayJob":
        spec = spec.get("rayClusterSpec")
    groups = spec.get("workerGroupSpecs") if isinstance(spec, dict) else None
    notes = []
    for group in groups if isinstance(groups, list) else []:
        hosts = _as_int(group.get("numOfHosts")) if isinstance(group, dict) else None
        if hosts is not None and hosts > 1:
            notes.append(
                f"component {index}: worker group {group.get('groupName', '?')} has numOfHosts "
                f"{hosts}: KubeRay creates replicas x {hosts} pods, but AppWrapper infers "
                "the replicas only, and Kueue's Workload counts what AppWrapper infers"
            )
    return notes
