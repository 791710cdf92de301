"""The shape every step of the admission chain shares (docs/fit.md, "The chain").

A job meets, in the API server's order: discovery (is its kind served at its apiVersion), RBAC
(may the team's member create it there), decoding and schema, mutating admission (Kueue's
defaulting webhooks, the MutatingAdmissionPolicies, LimitRange defaults on the pods), Pod
Security, the ValidatingAdmissionPolicies bound to its namespace, Kueue's validating webhooks,
the namespace's ResourceQuota, and then Kueue's admission. Each step is a gate: it reads a
`Request` and returns an `Outcome` that passes, mutates (the object it hands on) or refuses.
A refusal quotes what the user would see and says what to change; the chain then goes on as if
it were changed, so one run tells the whole story.

The gates read the cluster as gpuplane renders it (`RenderedCluster`): the same objects Argo CD
applies, so a policy and `fit` cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, Literal


class Step(Enum):
    """The chain's steps, in the order a create request meets them."""

    DISCOVERY = "discovery"
    """kubectl's REST mapping: the kind at its apiVersion is served by the cluster (built in at
    its Kubernetes version, or by an installed CRD)."""
    RBAC = "rbac"
    """Authorization: the team member's groups may `create` the resource in the namespace."""
    DECODE = "decode"
    """Decoding (strict field validation, kubectl's default) and the API's schema."""
    MUTATE = "mutate"
    """Mutating admission: Kueue's defaulting webhooks, MutatingAdmissionPolicies, LimitRange."""
    VALIDATE = "validate"
    """The API server's own validation of the object (names, quantities, CRD schemas)."""
    POD_SECURITY = "pod-security"
    """Pod Security Admission at the namespace's enforce level and version."""
    POLICIES = "admission-policies"
    """Every ValidatingAdmissionPolicy bound to the request, evaluated with CEL."""
    KUEUE_WEBHOOK = "kueue-webhook"
    """Kueue's (and the integrations') validating webhooks."""
    RESOURCE_QUOTA = "resource-quota"
    """The namespace's ResourceQuota (the API server's last validating plugin)."""
    KUEUE = "kueue"
    """Kueue's admission: flavors, topology, DRA, quota, preemption."""


Status = Literal["passed", "mutated", "refused", "skipped"]


@dataclass(frozen=True)
class Refusal:
    """One reason a step refuses the request, as the user would meet it."""

    source: str
    """Who refuses, by name: `ValidatingAdmissionPolicy 'gpuplane-common-labels'`,
    `PodSecurity "restricted:v1.33"`, `RBAC`, `webhook vjob.kb.io` ..."""
    message: str
    """The error the user sees, verbatim (what kubectl prints after `Error from server`)."""
    fix: str
    """What to change in the job file (or, where no change of the file helps, whom to ask)."""
    at_pods: bool = False
    """True when the object itself is created and the refusal meets the pods its controller
    creates later (Pod Security and LimitRange act on pods, not on a Job's template)."""


@dataclass(frozen=True)
class Outcome:
    """What one step did with the request."""

    step: Step
    status: Status
    refusals: tuple[Refusal, ...] = ()
    changes: tuple[str, ...] = ()
    """What a mutation did, in words (`sets label kueue.x-k8s.io/priority-class: prod-standard`),
    or, after a refusal, what the chain assumed changed to go on."""
    obj: Mapping[str, Any] | None = None
    """The object handed to the next step: mutated, or changed as the refusal's fix says where
    that can be done mechanically; None leaves it as it came."""
    notes: tuple[str, ...] = ()
    """Warnings the API server would return (Pod Security's `warn` level, deprecations)."""
    addon: str | None = None
    """The add-on the cluster would have to declare for the step to pass, where the object's
    kind is served by no add-on it declares (discovery): the chain goes on as if declared."""

    @property
    def refused(self) -> bool:
        return self.status == "refused"


@dataclass(frozen=True)
class UserInfo:
    """Who sends the request: a member of the team, by the groups its RoleBindings name."""

    username: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenderedCluster:
    """The objects gpuplane renders for one cluster that decide admission (the security, tenancy
    and queueing layers), as plain dictionaries, and the cluster's Kubernetes version."""

    name: str
    kubernetes_version: str
    """`1.36`: the cluster's minor version, as clusters/<name>.yaml declares it."""
    objects: tuple[Mapping[str, Any], ...] = field(default=())
    values: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The Helm values gpuplane writes per chart (`kueue`: its `managerConfig`, whose
    Configuration holds `deviceClassMappings`, the enabled integrations, `waitForPodsReady` ...)."""
    addons: frozenset[str] | None = None
    """The add-ons whose kinds the cluster serves (`renderer.model.operators.installed`: the
    keys its file declares under `spec.addons`), which decide what the discovery step finds
    served; None where unknown (a cluster made up for a test): every operator's kinds count."""

    def of_kind(self, kind: str, group: str | None = None) -> list[Mapping[str, Any]]:
        """The objects of `kind` (and of API `group`, when given: "" for the core group)."""
        found = []
        for obj in self.objects:
            if obj.get("kind") != kind:
                continue
            if group is not None and api_group(str(obj.get("apiVersion", ""))) != group:
                continue
            found.append(obj)
        return found

    @cached_property
    def kueue_configuration(self) -> Mapping[str, Any]:
        """The Kueue Configuration of the cluster's chart values (`kueue_configuration`)."""
        return kueue_configuration(self.values)

    def in_namespace(self, kind: str, group: str, namespace: str) -> dict[str, Mapping[str, Any]]:
        """The objects of `kind` in API `group` and `namespace`, by name."""
        found = {}
        for obj in self.of_kind(kind, group):
            meta = obj.get("metadata")
            if isinstance(meta, Mapping) and meta.get("namespace") == namespace:
                found[str(meta.get("name"))] = obj
        return found

    def named(self, kind: str, name: str, namespace: str | None = None) -> Mapping[str, Any] | None:
        for obj in self.of_kind(kind):
            meta = obj.get("metadata") or {}
            if meta.get("name") == name and meta.get("namespace") == namespace:
                return obj
        return None


@dataclass(frozen=True)
class Request:
    """One create request, as a step sees it."""

    obj: Mapping[str, Any]
    """The object as it reaches this step (after the mutations and assumed fixes before)."""
    namespace: str
    user: UserInfo
    cluster: RenderedCluster
    operation: Literal["CREATE", "UPDATE"] = "CREATE"
    source: str = "STDIN"
    """The file as given to `kubectl apply -f` (kubectl names it in its own errors)."""
    admitted: Mapping[str, Any] | None = None
    """The object as mutating admission left it: what every validating step of the API server
    sees (`obj` has the earlier validating steps' fixes made as well). None before then."""

    @property
    def namespace_object(self) -> Mapping[str, Any] | None:
        return self.cluster.named("Namespace", self.namespace)


def kueue_configuration(values: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """The Kueue Configuration gpuplane renders into the Kueue chart's values
    (`managerConfig.controllerManagerConfigYaml`, a YAML string); empty where there is none or
    it does not read."""
    import yaml

    manager = (values.get("kueue") or {}).get("managerConfig") or {}
    text = manager.get("controllerManagerConfigYaml") if isinstance(manager, Mapping) else None
    try:
        config = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return {}
    return config if isinstance(config, dict) else {}


def api_group(api_version: str) -> str:
    """The group of an apiVersion: `batch/v1` -> `batch`, `v1` -> `` (the core group)."""
    return api_version.rpartition("/")[0]


def passed(step: Step, notes: Sequence[str] = ()) -> Outcome:
    return Outcome(step, "passed", notes=tuple(notes))
