"""Which admission policies and bindings a request meets, as the API server decides it.

From k8s.io/apiserver (Kubernetes v1.36):
- `pkg/admission/plugin/policy/matching/matching.go` `Matcher.Matches`: the namespace
  selector, then the object selector, then `excludeResourceRules`, then `resourceRules` (none:
  every resource), with `matchPolicy: Equivalent` trying the request's resource at the other
  versions (and groups) that serve it; a selector that cannot be parsed is an error only where
  the rules match;
- `pkg/admission/plugin/policy/generic/policy_matcher.go` `DefinitionMatches` (a policy must
  have `matchConstraints`) and `BindingMatches` (a binding without `matchResources` matches);
- `pkg/admission/plugin/webhook/predicates/rules/rules.go` `Matcher.Matches`: scope,
  operation, group, version, resource and subresource, each `*` or exact;
- `.../predicates/namespace/matcher.go` `MatchNamespaceSelector` (a cluster-scoped request
  always matches; a Namespace's own request reads the object's labels) and
  `.../predicates/object/matcher.go` `MatchObjectSelector` (the object's or the old object's
  labels);
- apimachinery `pkg/apis/meta/v1/helpers.go` `LabelSelectorAsSelector` (a nil selector selects
  nothing, an empty one everything) and `pkg/labels/selector.go` `NewRequirement`;
- the API's defaults (`pkg/apis/admissionregistration/v1/defaults.go`): `matchPolicy:
  Equivalent`, empty selectors, rule `scope: "*"`, applied by `defaulted` to a policy as
  written, as the API server stores it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from renderer.admission.apiserver.resources import RESOURCES

GVR = tuple[str, str, str]
"""(group, version, resource)."""
GVK = tuple[str, str, str]
"""(group, version, kind)."""


@dataclass(frozen=True)
class Attributes:
    """What the matcher reads of a request (`admission.Attributes`)."""

    resource: GVR
    subresource: str
    kind: GVK
    namespace: str
    name: str
    operation: str
    obj: Mapping[str, Any] | None
    old: Mapping[str, Any] | None = None
    namespace_labels: Mapping[str, str] | None = None
    """The labels of the request's namespace; None where it does not exist (a 404)."""


class EquivalentMapper(Protocol):
    """`runtime.EquivalentResourceMapper`: the resources that serve the same objects."""

    def equivalents(self, resource: GVR, subresource: str) -> list[GVR]: ...

    def kind_for(self, resource: GVR, subresource: str) -> GVK | None: ...


class TableMapper:
    """The equivalents of the REST mapping table (`resources.RESOURCES`): a custom resource's
    served versions (apiextensions-apiserver registers every served version of a CRD as
    equivalent); a built-in kind the example clusters serve at one version only."""

    def equivalents(self, resource: GVR, subresource: str) -> list[GVR]:
        group, _, plural = resource
        for row in RESOURCES:
            if row.group == group and row.plural == plural and not subresource:
                return [(group, version, plural) for version in row.versions]
        return [resource]

    def kind_for(self, resource: GVR, subresource: str) -> GVK | None:
        group, version, plural = resource
        for row in RESOURCES:
            if row.group == group and row.plural == plural and version in row.versions:
                return (group, version, row.kind) if not subresource else None
        return None


@dataclass(frozen=True)
class Match:
    """`Matches`' answer: whether it matches, at which resource and kind, or the error."""

    matches: bool
    resource: GVR | None = None
    kind: GVK | None = None
    error: str = ""


# --- label selectors -----------------------------------------------------------------------

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
"""apimachinery `pkg/util/validation/validation.go` (`IsValidLabelValue`, `IsQualifiedName`)."""

_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    """`in`, `notin`, `exists`, `!` (does not exist), `=` (a matchLabels entry)."""
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """`labels.Requirement.Matches`."""
        present = self.key in labels
        if self.operator in ("in", "="):
            return present and labels[self.key] in self.values
        if self.operator == "notin":
            return not present or labels[self.key] not in self.values
        if self.operator == "exists":
            return present
        return not present


@dataclass(frozen=True)
class Selector:
    """A parsed `LabelSelector`: `nothing` for a nil one; no requirements selects all."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """`labels.Selector.Empty()`: selects everything."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self.nothing and all(r.matches(labels) for r in self.requirements)


def _key_error(key: str) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f'key: Invalid value: "{key}": prefix part must be a lowercase RFC 1123 subdomain'
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return f'key: Invalid value: "{key}": {_NAME_MESSAGE}'
    return ""


def _requirement(key: str, operator: str, values: Sequence[str]) -> Requirement | str:
    """`labels.NewRequirement`: the requirement, or its first error."""
    error = _key_error(key)
    if error:
        return error
    if operator in ("in", "notin") and not values:
        return "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
    if operator in ("exists", "!") and values:
        return "values: Invalid value: values set must be empty for exists and does not exist"
    for index, value in enumerate(values):
        if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            return f'values[{index}]: Invalid value: "{value}": {_VALUE_MESSAGE}'
    return Requirement(key, operator, tuple(values))


def parse_selector(selector: Any) -> Selector | str:
    """`LabelSelectorAsSelector`: the selector, or the error that parsing it gives."""
    if selector is None:
        return Selector(nothing=True)
    if not isinstance(selector, Mapping):
        return "the label selector is not an object"
    labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(expressions, list):
        return "the label selector is not an object"
    found: list[Requirement] = []
    for key, value in labels.items():
        made = _requirement(str(key), "=", [str(value)])
        if isinstance(made, str):
            return made
        found.append(made)
    for expression in expressions:
        if not isinstance(expression, Mapping):
            return "a matchExpressions entry is not an object"
        operator = str(expression.get("operator", ""))
        if operator not in _OPERATORS:
            return f'"{operator}" is not a valid label selector operator'
        values = [str(v) for v in expression.get("values") or []]
        made = _requirement(str(expression.get("key", "")), _OPERATORS[operator], values)
        if isinstance(made, str):
            return made
        found.append(made)
    return Selector(tuple(found))


# --- rules ---------------------------------------------------------------------------------

_NAMESPACE_RESOURCE: GVR = ("", "v1", "namespaces")


def _exact_or_wildcard(items: Any, requested: str) -> bool:
    return any(item in ("*", requested) for item in items or [])


def rule_matches(rule: Mapping[str, Any], attrs: Attributes, resource: GVR | None = None) -> bool:
    """`rules.Matcher.Matches`, with the request's resource replaced by `resource` (an
    equivalent one) when given."""
    group, version, plural = resource or attrs.resource
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        in_scope = (group, version, plural) != _NAMESPACE_RESOURCE and attrs.namespace != ""
    elif scope == "Cluster":
        in_scope = (group, version, plural) == _NAMESPACE_RESOURCE or attrs.namespace == ""
    else:
        in_scope = scope == "*"
    operations = rule.get("operations") or []
    if not in_scope or not any(op in ("*", attrs.operation) for op in operations):
        return False
    if not _exact_or_wildcard(rule.get("apiGroups"), group):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions"), version):
        return False
    for entry in rule.get("resources") or []:
        res, _, sub = str(entry).partition("/")
        if res in ("*", plural) and sub in ("*", attrs.subresource):
            return True
    return False


def _named(rule: Mapping[str, Any], name: str) -> bool:
    names = rule.get("resourceNames") or []
    return not names or name in names


def matches_resource_rules(
    rules: Sequence[Mapping[str, Any]],
    policy: str | None,
    attrs: Attributes,
    mapper: EquivalentMapper,
) -> Match:
    """`matchesResourceRules`: the request's own resource first, then (matchPolicy
    Equivalent) each equivalent resource, in the rules' order."""
    for rule in rules:
        if rule_matches(rule, attrs) and _named(rule, attrs.name):
            return Match(True, attrs.resource, attrs.kind)
    if policy is None or policy == "Exact":
        return Match(False)
    equivalents = mapper.equivalents(attrs.resource, attrs.subresource)
    for rule in rules:
        for equivalent in equivalents:
            if equivalent == attrs.resource or not rule_matches(rule, attrs, equivalent):
                continue
            kind = mapper.kind_for(equivalent, attrs.subresource)
            if kind is None or not any(kind):
                return Match(False, error=f"unable to convert to {equivalent}: unknown kind")
            if _named(rule, attrs.name):
                return Match(True, equivalent, kind)
    return Match(False)


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _namespace_selected(selector: Any, attrs: Attributes) -> tuple[bool, str]:
    """`MatchNamespaceSelector`."""
    if not attrs.namespace and attrs.resource[2] != "namespaces":
        return True, ""
    parsed = parse_selector(selector)
    if isinstance(parsed, str):
        return False, parsed
    if parsed.empty:
        return True, ""
    creating_namespace = attrs.resource[2] == "namespaces" and not attrs.subresource
    if creating_namespace and attrs.operation in ("CREATE", "UPDATE"):
        labels = _labels(attrs.obj) or {}
    elif attrs.namespace_labels is None:
        return False, f'namespaces "{attrs.namespace}" not found'
    else:
        labels = attrs.namespace_labels
    return parsed.matches(labels), ""


def _object_selected(selector: Any, attrs: Attributes) -> tuple[bool, str]:
    """`MatchObjectSelector`: the new object's labels, or the old one's."""
    parsed = parse_selector(selector)
    if isinstance(parsed, str):
        return False, parsed
    if parsed.empty:
        return True, ""
    found = [labels for labels in (_labels(attrs.obj), _labels(attrs.old)) if labels is not None]
    return any(parsed.matches(labels) for labels in found), ""


def matches(criteria: Mapping[str, Any], attrs: Attributes, mapper: EquivalentMapper) -> Match:
    """`matching.Matcher.Matches` on a `MatchResources` as given (`defaulted` gives the API
    server's defaults; a missing selector here selects nothing, as a nil one does there)."""
    ns_ok, ns_error = _namespace_selected(criteria.get("namespaceSelector"), attrs)
    if not ns_ok and not ns_error:
        return Match(False)
    obj_ok, obj_error = _object_selected(criteria.get("objectSelector"), attrs)
    if not obj_ok and not obj_error:
        return Match(False)
    policy = criteria.get("matchPolicy")
    excluded = matches_resource_rules(
        criteria.get("excludeResourceRules") or [], policy, attrs, mapper
    )
    if excluded.matches or excluded.error:
        return Match(False, error=excluded.error)
    rules = criteria.get("resourceRules") or []
    found = (
        matches_resource_rules(rules, policy, attrs, mapper)
        if rules
        else Match(True, attrs.resource, attrs.kind)
    )
    if found.error or not found.matches:
        return found
    if ns_error or obj_error:
        return Match(False, error=ns_error or obj_error)
    return found


def defaulted(match_resources: Any) -> dict[str, Any]:
    """A `MatchResources` with the API server's defaults (`SetDefaults_MatchResources`,
    `SetDefaults_Rule`): what it stores, and so what admission reads."""
    result = copy.deepcopy(dict(match_resources)) if isinstance(match_resources, Mapping) else {}
    result.setdefault("matchPolicy", "Equivalent")
    for selector in ("namespaceSelector", "objectSelector"):
        if result.get(selector) is None:
            result[selector] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in result.get(key) or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
    return result


def definition_matches(
    policy: Mapping[str, Any], attrs: Attributes, mapper: EquivalentMapper
) -> Match:
    """`DefinitionMatches`."""
    spec = policy.get("spec")
    constraints = spec.get("matchConstraints") if isinstance(spec, Mapping) else None
    if not isinstance(constraints, Mapping):
        return Match(False, error="policy contained no match constraints, a required field")
    return matches(defaulted(constraints), attrs, mapper)


def binding_matches(
    binding: Mapping[str, Any], attrs: Attributes, mapper: EquivalentMapper
) -> Match:
    """`BindingMatches`: a binding without `matchResources` matches every request its
    policy does."""
    spec = binding.get("spec")
    resources = spec.get("matchResources") if isinstance(spec, Mapping) else None
    if not isinstance(resources, Mapping):
        return Match(True, attrs.resource, attrs.kind)
    return matches(defaulted(resources), attrs, mapper)
