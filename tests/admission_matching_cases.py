"""Kubernetes' own matching cases, as data: `TestMatcher` of
staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/matching/matching_test.go (Kubernetes
v1.36), every case of its table, with the test's equivalent-resource registry (`mapper`: the
deployments of every API group are one resource, each with a `scale` subresource).

Each case: `criteria` (a MatchResources as the Go test writes it: a selector it leaves nil is
None here, and selects nothing), `attrs` (kind, resource, subresource, object present),
and the expected `matches`, `kind`, `resource` (None: the request's own) and error substring.
"""

from __future__ import annotations

from typing import Any

ALL = "*"


def rule(groups: list[str], versions: list[str], resources: list[str], **extra: Any) -> dict:
    return {
        "operations": ["*"],
        "apiGroups": groups,
        "apiVersions": versions,
        "resources": resources,
        "scope": extra.pop("scope", "*"),
        **extra,
    }


def criteria(rules: list[dict] | None = None, **extra: Any) -> dict:
    found: dict[str, Any] = {"namespaceSelector": {}, "objectSelector": {}}
    if rules is not None:
        found["resourceRules"] = rules
    found.update(extra)
    return found


DEPLOYMENTS = ("apps", "v1", "deployments")
DEPLOYMENT = ("apps", "v1", "Deployment")
SCALE = ("autoscaling", "v1", "Scale")
EXT = ("extensions", "v1beta1", "deployments")
APPS_BETA = ("apps", "v1beta1", "deployments")
WILDCARD = [rule([ALL], [ALL], [ALL])]
EXT_RULE = rule(["extensions"], ["v1beta1"], ["deployments"])
APPS_BETA_RULE = rule(["apps"], ["v1beta1"], ["deployments"])
EXT_SCALE = rule(["extensions"], ["v1beta1"], ["deployments", "deployments/scale"])
APPS_BETA_SCALE = rule(["apps"], ["v1beta1"], ["deployments", "deployments/scale"])
APPS_V1_SCALE = rule(["apps"], ["v1"], ["deployments", "deployments/scale"])
BAD_NS = {"matchExpressions": [{"key": "key", "operator": "In", "values": ["bad value"]}]}
BAD_KEY = {"matchExpressions": [{"key": "key ", "operator": "In", "values": ["bad value"]}]}
POD = ("example.apiserver.k8s.io", "v1", "Pod")
PODS = ("example.apiserver.k8s.io", "v1", "pods")
UNSCOPED_PODS = [
    {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods"]}
]
UNSCOPED_DEPLOYMENTS = [
    {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["deployments"]}
]


def attrs(kind: tuple, resource: tuple, sub: str = "", obj: bool = False) -> dict:
    return {"kind": kind, "resource": resource, "subresource": sub, "object": obj}


CASES: list[dict[str, Any]] = [
    {
        "name": "no rules (just write)",
        "criteria": {"namespaceSelector": {}, "objectSelector": None, "resourceRules": []},
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "wildcard rule, match as requested",
        "criteria": criteria(WILDCARD),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": True,
        "kind": DEPLOYMENT,
    },
    {
        "name": "specific rules, prefer exact match",
        "criteria": criteria([EXT_RULE, APPS_BETA_RULE, rule(["apps"], ["v1"], ["deployments"])]),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": True,
        "kind": DEPLOYMENT,
    },
    {
        "name": "specific rules, match miss",
        "criteria": criteria([EXT_RULE, APPS_BETA_RULE]),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "specific rules, exact match miss",
        "criteria": criteria([EXT_RULE, APPS_BETA_RULE], matchPolicy="Exact"),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "specific rules, equivalent match, prefer extensions",
        "criteria": criteria([EXT_RULE, APPS_BETA_RULE], matchPolicy="Equivalent"),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": True,
        "resource": EXT,
        "kind": ("extensions", "v1beta1", "Deployment"),
    },
    {
        "name": "specific rules, equivalent match, prefer apps",
        "criteria": criteria([APPS_BETA_RULE, EXT_RULE], matchPolicy="Equivalent"),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": True,
        "resource": APPS_BETA,
        "kind": ("apps", "v1beta1", "Deployment"),
    },
    {
        "name": "specific rules, subresource prefer exact match",
        "criteria": criteria([EXT_SCALE, APPS_BETA_SCALE, APPS_V1_SCALE]),
        "attrs": attrs(SCALE, DEPLOYMENTS, "scale"),
        "matches": True,
        "kind": SCALE,
    },
    {
        "name": "specific rules, subresource match miss",
        "criteria": criteria([EXT_SCALE, APPS_BETA_SCALE]),
        "attrs": attrs(SCALE, DEPLOYMENTS, "scale"),
        "matches": False,
    },
    {
        "name": "specific rules, subresource exact match miss",
        "criteria": criteria([EXT_SCALE, APPS_BETA_SCALE], matchPolicy="Exact"),
        "attrs": attrs(SCALE, DEPLOYMENTS, "scale"),
        "matches": False,
    },
    {
        "name": "specific rules, subresource equivalent match, prefer extensions",
        "criteria": criteria([EXT_SCALE, APPS_BETA_SCALE], matchPolicy="Equivalent"),
        "attrs": attrs(SCALE, DEPLOYMENTS, "scale"),
        "matches": True,
        "resource": EXT,
        "kind": ("extensions", "v1beta1", "Scale"),
    },
    {
        "name": "specific rules, subresource equivalent match, prefer apps",
        "criteria": criteria([APPS_BETA_SCALE, EXT_SCALE], matchPolicy="Equivalent"),
        "attrs": attrs(SCALE, DEPLOYMENTS, "scale"),
        "matches": True,
        "resource": APPS_BETA,
        "kind": ("apps", "v1beta1", "Scale"),
    },
    {
        "name": "specific rules, prefer exact match and name match",
        "criteria": criteria([rule(["apps"], ["v1"], ["deployments"], resourceNames=["name"])]),
        "attrs": attrs(SCALE, DEPLOYMENTS),
        "matches": True,
        "kind": SCALE,
    },
    {
        "name": "specific rules, prefer exact match and name match miss",
        "criteria": criteria(
            [rule(["apps"], ["v1"], ["deployments"], resourceNames=["wrong-name"])]
        ),
        "attrs": attrs(SCALE, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "specific rules, subresource equivalent match, prefer extensions and name match",
        "criteria": criteria(
            [rule(["apps"], ["v1"], ["deployments", "deployments/scale"], resourceNames=["name"])],
            matchPolicy="Equivalent",
        ),
        "attrs": attrs(SCALE, EXT, "scale"),
        "matches": True,
        "resource": DEPLOYMENTS,
        "kind": SCALE,
    },
    {
        "name": "specific rules, subresource equivalent match, prefer extensions and name match miss",
        "criteria": criteria(
            [
                rule(
                    ["apps"],
                    ["v1"],
                    ["deployments", "deployments/scale"],
                    resourceNames=["wrong-name"],
                )
            ],
            matchPolicy="Equivalent",
        ),
        "attrs": attrs(SCALE, EXT, "scale"),
        "matches": False,
    },
    {
        "name": "exclude resource match on miss",
        "criteria": criteria(WILDCARD, excludeResourceRules=[EXT_RULE]),
        "attrs": attrs(SCALE, DEPLOYMENTS),
        "matches": True,
        "kind": SCALE,
    },
    {
        "name": "exclude resource miss on match",
        "criteria": criteria(WILDCARD, excludeResourceRules=[EXT_RULE]),
        "attrs": attrs(SCALE, EXT),
        "matches": False,
    },
    {
        "name": "exclude resource with name match",
        "criteria": criteria(
            WILDCARD,
            excludeResourceRules=[rule(["apps"], ["v1"], ["deployments"], resourceNames=["name"])],
        ),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "exclude resource with name miss",
        "criteria": criteria(
            WILDCARD,
            excludeResourceRules=[
                rule(["apps"], ["v1"], ["deployments"], resourceNames=["other-name"])
            ],
        ),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": True,
        "kind": DEPLOYMENT,
    },
    {
        "name": "exclude equivalent resource match",
        "criteria": criteria(WILDCARD, excludeResourceRules=[EXT_RULE], matchPolicy="Equivalent"),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "exclude equivalent resource with name miss",
        "criteria": criteria(
            WILDCARD,
            excludeResourceRules=[
                rule(["extensions"], ["v1beta1"], ["deployments"], resourceNames=["other-name"])
            ],
            matchPolicy="Equivalent",
        ),
        "attrs": attrs(DEPLOYMENT, DEPLOYMENTS),
        "matches": True,
        "kind": DEPLOYMENT,
    },
    {
        "name": "treat empty ResourceRules as match",
        "criteria": criteria(None, excludeResourceRules=[EXT_RULE]),
        "attrs": attrs(SCALE, DEPLOYMENTS),
        "matches": True,
    },
    {
        "name": "treat non-empty ResourceRules as no match",
        "criteria": criteria([{}]),
        "attrs": attrs(SCALE, DEPLOYMENTS),
        "matches": False,
    },
    {
        "name": "erroring namespace selector on otherwise non-matching rule doesn't error",
        "criteria": {
            "namespaceSelector": BAD_KEY,
            "objectSelector": {},
            "resourceRules": UNSCOPED_DEPLOYMENTS,
        },
        "attrs": attrs(POD, PODS, obj=True),
        "matches": False,
        "error": "",
    },
    {
        "name": "erroring namespace selector on otherwise matching rule errors",
        "criteria": {
            "namespaceSelector": BAD_NS,
            "objectSelector": {},
            "resourceRules": UNSCOPED_PODS,
        },
        "attrs": attrs(POD, PODS, obj=True),
        "matches": False,
        "error": "bad value",
    },
    {
        "name": "erroring object selector on otherwise non-matching rule doesn't error",
        "criteria": {
            "namespaceSelector": {},
            "objectSelector": BAD_NS,
            "resourceRules": UNSCOPED_DEPLOYMENTS,
        },
        "attrs": attrs(POD, PODS, obj=True),
        "matches": False,
        "error": "",
    },
    {
        "name": "erroring object selector on otherwise matching rule errors",
        "criteria": {
            "namespaceSelector": {},
            "objectSelector": BAD_NS,
            "resourceRules": UNSCOPED_PODS,
        },
        "attrs": attrs(POD, PODS, obj=True),
        "matches": False,
        "error": "bad value",
    },
]

REGISTRY: list[tuple[tuple[str, str, str], str, tuple[str, str, str]]] = [
    (EXT, "", ("extensions", "v1beta1", "Deployment")),
    (DEPLOYMENTS, "", DEPLOYMENT),
    (APPS_BETA, "", ("apps", "v1beta1", "Deployment")),
    (("apps", "v1alpha1", "deployments"), "", ("apps", "v1alpha1", "Deployment")),
    (EXT, "scale", ("extensions", "v1beta1", "Scale")),
    (DEPLOYMENTS, "scale", SCALE),
    (APPS_BETA, "scale", ("apps", "v1beta1", "Scale")),
    (("apps", "v1alpha1", "deployments"), "scale", ("apps", "v1alpha1", "Scale")),
    (("example.com", "v1", "widgets"), "", ("", "", "")),
    (("example.com", "v2", "widgets"), "", ("", "", "")),
]
"""The test's `mapper.RegisterKindFor` calls, in order (`NewEquivalentResourceRegistryWithIdentity`
keeps each resource's equivalents in registration order)."""


class RegistryMapper:
    """`runtime.equivalentResourceRegistry` over `REGISTRY`: deployments of every group are
    one resource (the test's identity function), anything else only itself."""

    def _identity(self, resource: tuple[str, str, str]) -> str:
        return "/deployments" if resource[2] == "deployments" else f"{resource[2]}.{resource[0]}"

    def equivalents(self, resource: tuple[str, str, str], subresource: str) -> list:
        key = self._identity(resource)
        return [r for r, sub, _ in REGISTRY if self._identity(r) == key and sub == subresource]

    def kind_for(self, resource: tuple[str, str, str], subresource: str) -> Any:
        for r, sub, kind in REGISTRY:
            if r == resource and sub == subresource:
                return kind
        return None
