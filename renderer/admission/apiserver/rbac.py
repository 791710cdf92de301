"""Step.RBAC: may the team's member create this object here, by the Roles, ClusterRoles and
bindings gpuplane renders (`request.cluster`), as Kubernetes' RBAC authorizer decides.

Design: docs/fit.md#the-rbac-step-as-the-authorizer-decides
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.admission.apiserver.gate import (
    Outcome,
    Refusal,
    RenderedCluster,
    Request,
    Step,
    UserInfo,
)
from renderer.admission.apiserver.metadata import go_quote
from renderer.admission.apiserver.resources import resource_for

MEMBER_BINDING = "gpuplane-team-member"
OWNER_BINDING = "gpuplane-team-owner"
"""The RoleBinding gpuplane renders in every team namespace for the team's members."""
AUTHENTICATED = "system:authenticated"
"""The group the API server adds to every authenticated user (apiserver
`pkg/authentication/group` `AuthenticatedGroupAdder`)."""
TEAM_LABEL = "gpuplane.dev/team"
RBAC_GROUP = "rbac.authorization.k8s.io"
SOURCE = "RBAC"

_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


@dataclass(frozen=True)
class Attributes:
    """The authorizer's view of a request (apiserver `authorizer.AttributesRecord`)."""

    user: UserInfo
    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    resource_request: bool = True
    path: str = ""


@dataclass(frozen=True)
class Allowed:
    """What one authorization found: whether it is allowed, by which binding, and the errors met
    resolving the bindings that apply."""

    allowed: bool
    by: str = ""
    errors: tuple[str, ...] = ()


# -- RuleAllows ---------------------------------------------------------------------------------


def rule_allows(attributes: Attributes, rule: Mapping[str, Any]) -> bool:
    """Kubernetes' `RuleAllows` for one PolicyRule (a rendered `rules` entry)."""
    verbs = _strings(rule.get("verbs"))
    if "*" not in verbs and attributes.verb not in verbs:
        return False
    if not attributes.resource_request:
        return _url_matches(_strings(rule.get("nonResourceURLs")), attributes.path)
    groups = _strings(rule.get("apiGroups"))
    if "*" not in groups and attributes.group not in groups:
        return False
    combined = attributes.resource
    if attributes.subresource:
        combined = f"{attributes.resource}/{attributes.subresource}"
    if not _resource_matches(_strings(rule.get("resources")), combined, attributes.subresource):
        return False
    names = _strings(rule.get("resourceNames"))
    return not names or attributes.name in names


def _resource_matches(resources: Sequence[str], combined: str, subresource: str) -> bool:
    for resource in resources:
        if resource in ("*", combined):
            return True
        if (
            subresource
            and len(resource) == len(subresource) + 2
            and resource.startswith("*/")
            and resource.endswith(subresource)
        ):
            return True
    return False


def _url_matches(urls: Sequence[str], path: str) -> bool:
    for url in urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


# -- the rule resolver --------------------------------------------------------------------------


def authorize(cluster: RenderedCluster, attributes: Attributes) -> Allowed:
    """`RBACAuthorizer.Authorize` over the rendered objects."""
    errors: list[str] = []
    for source, rules, error in visit_rules(cluster, attributes.user, attributes.namespace):
        if error is not None:
            errors.append(error)
            continue
        for rule in rules:
            if rule_allows(attributes, rule):
                return Allowed(True, source)
    return Allowed(False, errors=tuple(errors))


def visit_rules(
    cluster: RenderedCluster, user: UserInfo, namespace: str
) -> Iterator[tuple[str, list[Mapping[str, Any]], str | None]]:
    """(binding described, its role's rules, or the error resolving its role), for every binding
    that applies to `user`: the ClusterRoleBindings, then the namespace's RoleBindings (both by
    name: the API server's informer order is a cache's, gpuplane's is fixed)."""
    cluster_bindings = _by_name(cluster.of_kind("ClusterRoleBinding", RBAC_GROUP))
    for binding in cluster_bindings:
        subject = applies_to(user, binding.get("subjects"), "")
        if subject is None:
            continue
        rules, error = role_rules(cluster, binding.get("roleRef"), "")
        yield _describe("ClusterRoleBinding", _name(binding), binding, subject, ""), rules, error
    if not namespace:
        return
    bindings = [b for b in cluster.of_kind("RoleBinding", RBAC_GROUP) if _namespace(b) == namespace]
    for binding in _by_name(bindings):
        subject = applies_to(user, binding.get("subjects"), namespace)
        if subject is None:
            continue
        rules, error = role_rules(cluster, binding.get("roleRef"), namespace)
        name = f"{_name(binding)}/{namespace}"
        yield _describe("RoleBinding", name, binding, subject, namespace), rules, error


def _describe(
    what: str, name: str, binding: Mapping[str, Any], subject: Mapping[str, Any], namespace: str
) -> str:
    """`roleBindingDescriber` / `clusterRoleBindingDescriber`: `RoleBinding "b/ns" of
    ClusterRole "r" to Group "g"` (a service account as `"name/namespace"`)."""
    ref = _mapping(binding.get("roleRef"))
    kind, who = str(subject.get("kind", "")), str(subject.get("name", ""))
    if kind == "ServiceAccount":
        who = f"{who}/{subject.get('namespace') or namespace}"
    return (
        f"{what} {go_quote(name)} of {ref.get('kind')} {go_quote(str(ref.get('name', '')))} "
        f"to {kind} {go_quote(who)}"
    )


def applies_to(user: UserInfo, subjects: Any, namespace: str) -> Mapping[str, Any] | None:
    """`appliesTo`: the first subject naming the user, one of its groups or its service
    account (a subject without a namespace takes the binding's)."""
    for subject in subjects if isinstance(subjects, list) else ():
        if not isinstance(subject, Mapping):
            continue
        kind, name = subject.get("kind"), subject.get("name")
        if kind == "User" and name == user.username:
            return subject
        if kind == "Group" and name in user.groups:
            return subject
        if kind == "ServiceAccount":
            sa_namespace = subject.get("namespace") or namespace
            if sa_namespace and user.username == f"system:serviceaccount:{sa_namespace}:{name}":
                return subject
    return None


def role_rules(
    cluster: RenderedCluster, role_ref: Any, namespace: str
) -> tuple[list[Mapping[str, Any]], str | None]:
    """`GetRoleReferenceRules`: the rules of the Role (in the binding's namespace) or
    ClusterRole a binding refers to, or the error the API server meets."""
    ref = role_ref if isinstance(role_ref, Mapping) else {}
    kind, name = ref.get("kind"), str(ref.get("name", ""))
    if kind == "Role":
        role = cluster.named("Role", name, namespace)
        if role is None:
            return [], f"role.rbac.authorization.k8s.io {go_quote(name)} not found"
        return _rules(role), None
    if kind == "ClusterRole":
        role = cluster.named("ClusterRole", name)
        if role is None:
            return [], f"clusterrole.rbac.authorization.k8s.io {go_quote(name)} not found"
        return cluster_role_rules(cluster, role), None
    return [], f"unsupported role reference kind: {go_quote(str(kind))}"


def cluster_role_rules(
    cluster: RenderedCluster, role: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """A ClusterRole's rules, those its aggregationRule gathers when it has one."""
    aggregation = role.get("aggregationRule")
    if not isinstance(aggregation, Mapping):
        return _rules(role)
    selectors = aggregation.get("clusterRoleSelectors")
    gathered: list[Mapping[str, Any]] = []
    for selector in selectors if isinstance(selectors, list) else ():
        for other in _by_name(cluster.of_kind("ClusterRole", RBAC_GROUP)):
            if other is role or not selector_matches(selector, _labels(other)):
                continue
            for rule in _rules(other):
                if rule not in gathered:
                    gathered.append(rule)
    return gathered


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A `metav1.LabelSelector` (matchLabels and matchExpressions: In, NotIn, Exists,
    DoesNotExist) against labels; an empty selector matches everything."""
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return False
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    for expression in selector.get("matchExpressions") or ():
        if not isinstance(expression, Mapping):
            return False
        key, operator = str(expression.get("key")), expression.get("operator")
        values = _strings(expression.get("values"))
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


# -- the team member ----------------------------------------------------------------------------


def member_of(cluster: RenderedCluster, namespace: str, username: str | None = None) -> UserInfo:
    """A member of the team owning `namespace`: the groups its `gpuplane-team-member`
    RoleBinding names (as rendered, the cluster's group prefix included) and
    `system:authenticated`. RBAC binds groups here, so the user's name only shows in messages:
    `<team>-member` unless given. A team that lists no members (only `owners`) submits as its
    owners: their `gpuplane-team-owner` binding's groups."""
    binding = cluster.named("RoleBinding", MEMBER_BINDING, namespace)
    role = "member"
    if binding is None:
        binding = cluster.named("RoleBinding", OWNER_BINDING, namespace)
        role = "owner"
    groups: list[str] = []
    team = namespace
    if binding is not None:
        for subject in binding.get("subjects") or ():
            if isinstance(subject, Mapping) and subject.get("kind") == "Group":
                groups.append(str(subject.get("name")))
        team = _labels(binding).get(TEAM_LABEL, namespace)
    return UserInfo(username or f"{team}-{role}", (*groups, AUTHENTICATED))


# -- the gate -----------------------------------------------------------------------------------


def gate(request: Request) -> Outcome:
    """The authorization step for creating `request.obj` as `request.user`."""
    api_version, kind = request.obj.get("apiVersion"), request.obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return Outcome(Step.RBAC, "skipped", notes=("the object names no apiVersion and kind",))
    group, _, version = api_version.rpartition("/")
    resource = resource_for(group, kind)
    if resource is None:
        note = f"gpuplane does not know the REST resource of {kind} in group {group!r}"
        return Outcome(Step.RBAC, "skipped", notes=(note + ": RBAC not checked",))
    attributes = Attributes(
        user=request.user,
        verb="create" if request.operation == "CREATE" else "update",
        group=group,
        version=version,
        resource=resource.resource,
        namespace=request.namespace if resource.namespaced else "",
    )
    decision = authorize(request.cluster, attributes)
    if decision.allowed:
        return Outcome(Step.RBAC, "passed", notes=(f"RBAC: allowed by {decision.by}",))
    message = forbidden_message(attributes, resource.qualified, decision.errors)
    refusal = Refusal(SOURCE, message, whom_to_ask(request.cluster, attributes))
    return Outcome(Step.RBAC, "refused", (refusal,))


def forbidden_message(attributes: Attributes, qualified: str, errors: Sequence[str] = ()) -> str:
    """The API server's Forbidden status message for a denied request."""
    user = go_quote(attributes.user.username)
    if not attributes.resource_request:
        text = f"User {user} cannot {attributes.verb} path {go_quote(attributes.path)}"
        return "forbidden: " + text.translate(_HTML) + _reason(errors)
    resource = attributes.resource
    if attributes.subresource:
        resource = f"{resource}/{attributes.subresource}"
    text = (
        f"User {user} cannot {attributes.verb} resource {go_quote(resource)} in API group "
        f"{go_quote(attributes.group)}"
    )
    if attributes.namespace:
        text += f" in the namespace {go_quote(attributes.namespace)}"
    else:
        text += " at the cluster scope"
    named = f" {go_quote(attributes.name)}" if attributes.name else ""
    return f"{qualified}{named} is forbidden: {text.translate(_HTML)}{_reason(errors)}"


def _reason(errors: Sequence[str]) -> str:
    """`RBAC: ` and the resolution errors as `utilerrors.NewAggregate` writes them: one as it
    is, several in brackets, each text once."""
    unique = list(dict.fromkeys(errors))
    if not unique:
        return ""
    joined = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f": RBAC: {joined}"


def whom_to_ask(cluster: RenderedCluster, attributes: Attributes) -> str:
    """Who may do it instead, from the rendered bindings: the groups of every binding whose role
    allows the request, or, when none does, that gpuplane grants it to no one."""
    granted = []
    for binding in _candidate_bindings(cluster, attributes.namespace):
        rules, error = role_rules(cluster, binding.get("roleRef"), attributes.namespace)
        if error is not None:
            continue
        if any(rule_allows(attributes, rule) for rule in rules):
            ref = _mapping(binding.get("roleRef"))
            groups = [
                f"{s.get('kind')} {go_quote(str(s.get('name')))}"
                for s in binding.get("subjects") or ()
                if isinstance(s, Mapping) and s.get("kind") in ("Group", "User")
            ]
            role = f"{ref.get('kind')} {go_quote(str(ref.get('name', '')))}"
            granted.append(f"{' or '.join(groups) or 'no one'} (bound to {role})")
    where = (
        f"in namespace {go_quote(attributes.namespace)}" if attributes.namespace else "cluster-wide"
    )
    team = _namespace_team(cluster, attributes.namespace)
    owner = f" (the namespace of team {go_quote(team)})" if team else ""
    if granted:
        return (
            f"only {'; '.join(granted)} may {attributes.verb} it {where}{owner}: create it in "
            "your own team's namespace, or ask to be added to one of those groups"
        )
    what = attributes.resource + (f".{attributes.group}" if attributes.group else "")
    return (
        f"gpuplane lets no team {attributes.verb} {what} {where}{owner}: the platform team "
        "manages these objects in the platform repository; ask them, or leave the object out "
        "of the job file"
    )


def _candidate_bindings(cluster: RenderedCluster, namespace: str) -> list[Mapping[str, Any]]:
    found = list(_by_name(cluster.of_kind("ClusterRoleBinding", RBAC_GROUP)))
    if namespace:
        found += _by_name(
            [b for b in cluster.of_kind("RoleBinding", RBAC_GROUP) if _namespace(b) == namespace]
        )
    return found


def _namespace_team(cluster: RenderedCluster, namespace: str) -> str | None:
    if not namespace:
        return None
    obj = cluster.named("Namespace", namespace)
    return _labels(obj).get(TEAM_LABEL) if obj is not None else None


def _rules(role: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rules = role.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("metadata"))


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _namespace(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("namespace", ""))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _by_name(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(objects, key=_name)


__all__ = [
    "AUTHENTICATED",
    "MEMBER_BINDING",
    "Allowed",
    "Attributes",
    "authorize",
    "forbidden_message",
    "gate",
    "member_of",
    "rule_allows",
    "selector_matches",
]
