"""The chain's Pod Security step: Pod Security Admission as the API server runs it, from
k8s.io/pod-security-admission v0.36.2 (Kubernetes v1.36.2), against the labels of the namespace
as gpuplane renders it.

Design: docs/fit.md#the-pod-security-step-as-the-api-server-runs-it
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.admission.apiserver.gate import (
    Outcome,
    Refusal,
    RenderedCluster,
    Request,
    Step,
    api_group,
)
from renderer.admission.apiserver.metadata import go_quote
from renderer.admission.apiserver.podsecurity.api import (
    Level,
    LevelVersion,
    Policy,
    Version,
    parse_cluster_version,
    policy_to_evaluate,
)
from renderer.admission.apiserver.podsecurity.checks import mapping, string_map, text
from renderer.admission.apiserver.podsecurity.fixes import mend
from renderer.admission.apiserver.podsecurity.registry import (
    AggregateResult,
    effective_version,
    evaluate,
)
from renderer.admission.apiserver.podsecurity.restricted import (
    ALLOWED_VOLUME_SOURCES,
    RESTRICTED_VOLUME_SOURCES,
)
from renderer.admission.workloads import readers
from renderer.admission.workloads.podsets import FieldPath, Unreadable, path_text

STEP = Step.POD_SECURITY
TEAM_LABEL = "gpuplane.dev/team"
MAX_GENERATED_NAME_LENGTH = 58
"""k8s.io/apiserver `pkg/storage/names/generate.go`: `maxNameLength - randomLength`."""
RANDOM = "<random>"

POD_SPEC_KINDS: Mapping[tuple[str, str], FieldPath] = {
    ("", "ReplicationController"): ("spec", "template"),
    ("", "PodTemplate"): ("template",),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
}
"""`admission.go` `defaultPodSpecResources` / `DefaultPodSpecExtractor.ExtractPodSpec`: the
kinds Pod Security warns about at create, and where their pod template is."""


# --- the pure part: one pod at one level and version ------------------------------------------


def evaluate_pod(
    lv: LevelVersion,
    metadata: Mapping[str, Any],
    spec: Mapping[str, Any],
    emulation: Version | None = None,
) -> AggregateResult:
    """The forbidden reasons and details of the pod (`metadata`, `spec`) at `lv`, in
    upstream's order, as `policy.AggregateCheckResults(evaluator.EvaluatePod(...))` gives them
    (no defaulting: see `defaulted`)."""
    return evaluate(lv, metadata, spec, emulation)


def defaulted(spec: Mapping[str, Any], *, is_pod: bool) -> dict[str, Any]:
    """A copy of `spec` with the API server's defaults that Pod Security can see: a source-less
    volume is an emptyDir (`SetDefaults_Volume`), and on a Pod with `hostNetwork: true` every
    container port without a hostPort gets its containerPort (`SetDefaults_Pod`; pod templates
    have not been defaulted so since Kubernetes 1.28, DefaultHostNetworkHostPortsInPodTemplates)."""
    result = copy.deepcopy(dict(spec))
    sources = (*ALLOWED_VOLUME_SOURCES, *RESTRICTED_VOLUME_SOURCES)
    volumes = result.get("volumes")
    for volume in volumes if isinstance(volumes, list) else []:  # decoding refused another type
        if isinstance(volume, MutableMapping) and not any(
            mapping(volume.get(k)) is not None for k in sources
        ):
            volume["emptyDir"] = {}
    if is_pod and result.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            listed = result.get(key)
            for container in listed if isinstance(listed, list) else []:
                ports = container.get("ports") if isinstance(container, MutableMapping) else None
                for port in ports if isinstance(ports, list) else []:
                    if isinstance(port, MutableMapping) and not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    return result


def violation(lv: LevelVersion, result: AggregateResult) -> str:
    """`EvaluatePod`'s error: `violates PodSecurity "<lv>": <ForbiddenDetail>`."""
    return f"violates PodSecurity {go_quote(str(lv))}: {result.forbidden_detail()}"


def warning(lv: LevelVersion, result: AggregateResult) -> str:
    """`EvaluatePod`'s warning and audit annotation: `would violate PodSecurity ...`."""
    return f"would violate PodSecurity {go_quote(str(lv))}: {result.forbidden_detail()}"


def forbidden_message(name: str, lv: LevelVersion, result: AggregateResult) -> str:
    """The refusal of a pod as the API server returns it: apimachinery `NewForbidden` of the
    `pods` resource (`<resource> "<name>" is forbidden: <err>`, no name: `pods is forbidden`)."""
    who = f"pods {go_quote(name)}" if name else "pods"
    return f"{who} is forbidden: {violation(lv, result)}"


# --- where the pods are -----------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """One kind of pod the request makes: the pod template (or the Pod) at `path` of the
    object, and the name the API server would give the first such pod."""

    path: FieldPath
    role: str
    pod_name: str

    def at(self, obj: Any) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        """(metadata, spec) of the pod template in `obj`, or None where there is none."""
        here = _value_at(obj, self.path)
        if not isinstance(here, Mapping):
            return None
        return mapping(here.get("metadata")) or {}, mapping(here.get("spec")) or {}


def _value_at(obj: Any, path: FieldPath) -> Any:
    here = obj
    for part in path:
        if isinstance(part, int):
            here = here[part] if isinstance(here, list) and 0 <= part < len(here) else None
        else:
            here = here.get(part) if isinstance(here, Mapping) else None
    return here


def _generated(base: str) -> str:
    """A `generateName` as the API server completes it: cut to 58 characters, then five random
    characters (`SimpleNameGenerator.GenerateName`)."""
    return base[:MAX_GENERATED_NAME_LENGTH] + RANDOM


def _object_name(obj: Mapping[str, Any]) -> str:
    meta = mapping(obj.get("metadata")) or {}
    name = text(meta.get("name"))
    return name or (_generated(text(meta.get("generateName"))) if meta.get("generateName") else "")


def _job_pod_name(job: str, spec: Mapping[str, Any]) -> str:
    """Kubernetes `pkg/controller/job`: an Indexed Job's pods are `<job>-<index>-` +
    random (`podGenerateNameWithIndex`), the others `<job>-` + random (`getPodsPrefix`)."""
    if spec.get("completionMode") == "Indexed":
        prefix = f"{job}-0-"
        if len(prefix) > MAX_GENERATED_NAME_LENGTH:
            prefix = prefix[: MAX_GENERATED_NAME_LENGTH - len("-0-")] + "-0-"
        return prefix + RANDOM
    return _generated(f"{job}-")


def _controller_pod_name(key: tuple[str, str], obj: Mapping[str, Any]) -> str:
    """The first pod's name, as each built-in controller names it (`pkg/controller/*`)."""
    name = _object_name(obj)
    spec = mapping(obj.get("spec")) or {}
    kind = key[1]
    if kind == "Job":
        return _job_pod_name(name, spec)
    if kind == "CronJob":
        job_spec = mapping(_value_at(obj, ("spec", "jobTemplate", "spec"))) or {}
        return _job_pod_name(f"{name}-<scheduled-minute>", job_spec)
    if kind == "StatefulSet":
        start = _value_at(spec, ("ordinals", "start"))
        return f"{name}-{start if isinstance(start, int) else 0}"
    if kind == "Deployment":
        return _generated(f"{name}-<pod-template-hash>-")
    return _generated(f"{name}-")


def templates(obj: Mapping[str, Any]) -> tuple[list[Template], tuple[str, ...]]:
    """The pods `obj` makes, and notes on pods it makes that cannot be seen up front."""
    group = api_group(text(obj.get("apiVersion")))
    kind = text(obj.get("kind"))
    if (group, kind) == ("", "Pod"):
        return [Template((), "pod", _object_name(obj))], ()
    if (group, kind) in POD_SPEC_KINDS:
        if kind == "PodTemplate":
            return [], ()
        path = POD_SPEC_KINDS[(group, kind)]
        return [Template(path, "pod", _controller_pod_name((group, kind), obj))], ()
    workload = readers.workload_from(dict(obj))
    if isinstance(workload, Unreadable):
        if not workload.workload:
            return [], ()
        return [], (
            f"Pod Security checks the pods {kind} {_object_name(obj)} makes when they are "
            "created; gpuplane cannot see them up front: not checked here",
        )
    found, notes = [], []
    for pod_set in workload.pod_sets:
        here = _value_at(obj, pod_set.path)
        if not (isinstance(here, Mapping) and isinstance(here.get("spec"), Mapping)):
            notes.append(
                f"Pod Security checks the {pod_set.name} pods of {kind} {_object_name(obj)} when "
                "its operator creates them, from a pod spec not in the file: not checked here"
            )
            continue
        role = "" if pod_set.name == "main" else f"{pod_set.name} "
        found.append(
            Template(pod_set.path, pod_set.name, f"<{role}pod of {kind} {_object_name(obj)}>")
        )
    return found, tuple(notes)


# --- the gate ---------------------------------------------------------------------------------


def gate(request: Request) -> Outcome:
    """Pod Security at the request's namespace: refusals (of the Pod, or at the pods of a
    workload), the warnings the user sees, and the object as it would pass (fixes applied where
    they are mechanical)."""
    namespace = request.namespace_object
    if namespace is None:
        return Outcome(
            STEP,
            "skipped",
            notes=(
                f"namespace {go_quote(request.namespace)} is not one gpuplane renders: Pod "
                "Security reads its labels on the cluster",
            ),
        )
    meta = mapping(namespace.get("metadata")) or {}
    policy, errors = policy_to_evaluate(string_map(meta.get("labels")))
    emulation = parse_cluster_version(request.cluster.kubernetes_version)
    obj = request.obj
    found, notes = templates(obj)
    refusals, pod_allowed = _enforce(request, policy, emulation, found)
    warnings = _warnings(
        obj, policy, label_errors=bool(errors), emulation=emulation, pod_allowed=pod_allowed
    )
    if not refusals:
        return Outcome(STEP, "passed", notes=(*warnings, *notes))
    mended, changes = _mended(obj, policy, emulation, found)
    return Outcome(
        STEP,
        "refused",
        refusals=tuple(refusals),
        changes=tuple(changes),
        obj=mended if mended != obj else None,
        notes=(*warnings, *notes),
    )


def _enforce(
    request: Request, policy: Policy, emulation: Version | None, found: Sequence[Template]
) -> tuple[list[Refusal], bool]:
    """A refusal for each kind of pod that enforce forbids, and whether the request's own Pod
    (if it is one) passes."""
    obj = request.obj
    is_pod = bool(found) and found[0].path == ()
    refusals = []
    for template in found:
        pod = template.at(obj)
        if pod is None or policy.enforce.level == Level.PRIVILEGED:
            continue
        meta, spec = pod
        result = evaluate(policy.enforce, meta, defaulted(spec, is_pod=True), emulation)
        if result.allowed:
            continue
        refusals.append(
            Refusal(
                source=f"PodSecurity {go_quote(str(policy.enforce))}",
                message=forbidden_message(template.pod_name, policy.enforce, result),
                fix=_fix(request, policy, emulation, template, result),
                at_pods=not is_pod,
            )
        )
    return refusals, not (is_pod and refusals)


def _warnings(
    obj: Mapping[str, Any],
    policy: Policy,
    *,
    label_errors: bool,
    emulation: Version | None,
    pod_allowed: bool,
) -> tuple[str, ...]:
    """What the user sees on create: a Pod that enforce allowed (`ValidatePod`), or the
    template of a kind PSA extracts one from (`ValidatePodController`, which skips the
    evaluation when warn and audit are both privileged and the labels parse), evaluated at
    `warn`."""
    key = (api_group(text(obj.get("apiVersion"))), text(obj.get("kind")))
    is_pod = key == ("", "Pod")
    if is_pod and not pod_allowed:
        return ()
    if not is_pod:
        if key not in POD_SPEC_KINDS or _template_absent(obj, key):
            return ()
        if not label_errors and policy.warn.level == policy.audit.level == Level.PRIVILEGED:
            return ()
    here = _value_at(obj, () if is_pod else POD_SPEC_KINDS[key])
    if not isinstance(here, Mapping):
        return ()
    meta = mapping(here.get("metadata")) or {}
    spec = defaulted(mapping(here.get("spec")) or {}, is_pod=is_pod)
    result = evaluate(policy.warn, meta, spec, emulation)
    return () if result.allowed else (warning(policy.warn, result),)


def _template_absent(obj: Mapping[str, Any], key: tuple[str, str]) -> bool:
    """`extractPodSpecFromTemplate` of a nil template (only a ReplicationController's is a
    pointer): nothing to check."""
    return key == ("", "ReplicationController") and _value_at(obj, ("spec", "template")) is None


def _mended(
    obj: Mapping[str, Any],
    policy: Policy,
    emulation: Version | None,
    found: Sequence[Template],
) -> tuple[Mapping[str, Any], list[str]]:
    """`obj` with the mechanical fixes made, and what they changed, per pod template."""
    result = copy.deepcopy(dict(obj))
    version = effective_version(policy.enforce.version, emulation)
    changes = []
    for template in found:
        here = _value_at(result, template.path)
        if not isinstance(here, MutableMapping):
            continue
        meta, spec = here.get("metadata"), here.get("spec")
        if not isinstance(meta, MutableMapping):
            meta = {}  # no annotations to remove: nothing a fix changes there
        if not isinstance(spec, MutableMapping):
            continue
        outcome = evaluate(policy.enforce, meta, defaulted(spec, is_pod=True), emulation)
        for check in outcome.checks:
            done = mend(check, meta, spec, version)
            if done.mechanical:
                changes += [_where(template, says) for says in done.says]
    return result, changes


def _where(template: Template, says: str) -> str:
    return f"in {path_text(template.path)}: {says}" if template.path else says


def _fix(
    request: Request,
    policy: Policy,
    emulation: Version | None,
    template: Template,
    result: AggregateResult,
) -> str:
    """What to change in the file: each failing check's fix, then the team's namespaces whose
    level admits the pods as they are."""
    pod = template.at(request.obj)
    meta, spec = pod if pod is not None else ({}, {})
    scratch_meta, scratch_spec = copy.deepcopy(dict(meta)), copy.deepcopy(dict(spec))
    version = effective_version(policy.enforce.version, emulation)
    says: list[str] = []
    for check in result.checks:
        says += mend(check, scratch_meta, scratch_spec, version).says
    fix = _where(template, "; ".join(says)) if says else ""
    elsewhere = _namespaces_admitting(request, meta, spec, emulation)
    if elsewhere:
        fix += f"; or create it in namespace {elsewhere}, which the team also has"
    return fix


def _namespaces_admitting(
    request: Request, meta: Mapping[str, Any], spec: Mapping[str, Any], emulation: Version | None
) -> str:
    """The team's other rendered namespaces whose enforce level admits the pod unchanged."""
    cluster: RenderedCluster = request.cluster
    own = request.namespace_object or {}
    team = string_map((mapping(own.get("metadata")) or {}).get("labels")).get(TEAM_LABEL)
    if not team:
        return ""
    found = []
    for namespace in cluster.of_kind("Namespace", ""):
        ns_meta = mapping(namespace.get("metadata")) or {}
        labels = string_map(ns_meta.get("labels"))
        name = text(ns_meta.get("name"))
        if labels.get(TEAM_LABEL) != team or name == request.namespace:
            continue
        enforce = policy_to_evaluate(labels)[0].enforce
        if evaluate(enforce, meta, defaulted(spec, is_pod=True), emulation).allowed:
            found.append(f"{name} (enforce {enforce})")
    return " or ".join(sorted(found))
