"""Policy on endpoint hosts and team domains: who may claim which name at the platform Gateway.

One Gateway serves every team (`renderer.layers.serving.gateway`), so a host is a platform-wide
resource: two routes on one host and path both attach, and the gateway picks one by its own
precedence, not by who declared it first. These rules keep each host and path with one endpoint,
each team inside its own DNS domains, and the platform's own names out of every team's reach.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import Endpoint, Namespace, Platform, Team
from renderer.model.reserved import RESERVED_HOST_LABELS, reserved_host
from renderer.model.view import served
from renderer.policy.rule import error, rule


@dataclass(frozen=True, slots=True)
class _Declared:
    team: Team
    ns: Namespace
    endpoint: Endpoint

    @property
    def host(self) -> str:
        return self.endpoint.host.lower().rstrip(".")


def _declared(p: Platform) -> Iterator[_Declared]:
    """Every endpoint, by team name, then namespace and declaration order."""
    for s in served(p):
        yield _Declared(s.team, s.namespace, s.endpoint)


def under(host: str, domain: str) -> bool:
    """Whether `host` is `domain` or a name below it (label-wise: `xllm.example.com` is not
    under `llm.example.com`)."""
    host, domain = host.lower().rstrip("."), domain.lower().rstrip(".")
    return host == domain or host.endswith(f".{domain}")


def path_elements(path: str) -> tuple[str, ...]:
    """A PathPrefix as Gateway API matches it: element by element, a trailing `/` ignored."""
    return tuple(part for part in path.split("/") if part)


def prefixes_overlap(first: str, second: str) -> bool:
    """Whether some request path matches both PathPrefixes: one is an element prefix of the
    other (`/v1` and `/v1/chat` overlap; `/v1` and `/v10` do not)."""
    a, b = path_elements(first), path_elements(second)
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def suggested_host(
    team: Team, endpoint: Endpoint, ns: Namespace, taken: frozenset[str] = frozenset()
) -> str:
    """A host the hints offer: the endpoint's name (or, where that is a reserved label or a
    host in `taken`, the namespace's and the endpoint's) under the team's first domain."""
    domain = team.domains[0] if team.domains else f"{team.name}.example.com"
    label = endpoint.name
    if label in RESERVED_HOST_LABELS or f"{label}.{domain}".lower() in taken:
        label = f"{ns.name}-{endpoint.name}"
    return f"{label}.{domain}"


@rule("endpoint-host-duplicate")
def hosts_unique(p: Platform) -> Iterator[Diagnostic]:
    """Each host and path prefix at the platform Gateway belongs to one endpoint.

    Every team's routes hang off the one platform Gateway. Two endpoints declaring the same
    host on overlapping path prefixes both attach, and the gateway sends each request to one of
    them by Gateway API precedence (the longest prefix, then the oldest route): a second
    declaration silently takes traffic, and with it the requests and their prompts, from the
    first. Two endpoints may share a host on prefixes that do not overlap: PathPrefix matches
    whole path elements, so `/v1` and `/v2` (or `/v1` and `/v10`) are disjoint, while `/` and
    `/v1`, or `/v1` and `/v1/chat`, overlap and are refused. The first declaration (by team
    name, then file order) keeps the host; the second is reported, on its `host` line.

    To satisfy it: give the second endpoint a host of its own under the team's `spec.domains`
    in its `endpoints[].host` (for example `<endpoint>.<domain>`, or
    `<namespace>-<endpoint>.<domain>` where that one is taken), or a `path` prefix that neither
    contains nor lies under the other endpoint's.
    """
    seen: list[_Declared] = []
    taken = frozenset(d.host for d in _declared(p))  # the hint must not offer one of these
    for declared in _declared(p):
        first = next(
            (
                d
                for d in seen
                if d.host == declared.host
                and prefixes_overlap(d.endpoint.path, declared.endpoint.path)
            ),
            None,
        )
        seen.append(declared)
        if first is None:
            continue
        endpoint = declared.endpoint
        yield error(
            "endpoint-host-duplicate",
            f"endpoint '{endpoint.name}' routes host '{endpoint.host}' path '{endpoint.path}', "
            f"which endpoint '{first.endpoint.name}' of team '{first.team.name}' (namespace "
            f"'{first.ns.name}') already routes at '{first.endpoint.path}'",
            endpoint.origin.at("host"),
            f"use a host of its own, e.g. "
            f"'{suggested_host(declared.team, endpoint, declared.ns, taken)}', or a path prefix "
            f"that does not overlap '{first.endpoint.path}'",
            (("first declared here", first.endpoint.origin.at("host")),),
        )


@rule("endpoint-host-domain", scope="team")
def hosts_in_team_domains(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint's host lies in one of its team's declared DNS domains.

    The platform Gateway admits a team's routes only on listeners for the team's own domains
    (`*.<domain>`, and the domain itself), so a host outside them would never be served; and a
    team that could name any host could claim a name that another team, or the company, owns.
    The team's `spec.domains` are the names it owns, checked once against every other team's
    (rule `team-domain-overlap`); each host must be one of them or lie below one, label-wise
    (`xllm.example.com` is not below `llm.example.com`).

    To satisfy it: set the endpoint's `endpoints[].host` to a name under one of the team's
    `spec.domains` (e.g. `<endpoint>.<domain>`), or add the domain the host lies in to the
    team's `spec.domains` if the team owns it.
    """
    for declared in _declared(p):
        team, endpoint = declared.team, declared.endpoint
        if any(under(declared.host, domain) for domain in team.domains):
            continue
        owned = ", ".join(team.domains) or "none declared"
        yield error(
            "endpoint-host-domain",
            f"host '{endpoint.host}' of endpoint '{endpoint.name}' is outside team "
            f"'{team.name}''s domains ({owned})",
            endpoint.origin.at("host"),
            f"use a host under the team's domains, e.g. "
            f"'{suggested_host(team, endpoint, declared.ns)}'"
            if team.domains
            else "declare the domain the host lies in under spec.domains",
        )


@rule("team-domain-overlap")
def domains_disjoint(p: Platform) -> Iterator[Diagnostic]:
    """No team's domain equals or lies inside another team's.

    A domain gives a team every host below it at the platform Gateway. A domain inside
    another team's (`chat.llm.example.com` inside `llm.example.com`) would let two teams claim
    the same hosts, and the Gateway admit both teams' routes on them. Reported on the domain
    the change being checked adds (a parent domain claimed over others' is reported on its
    claimer's line), with the other as a note; without change information, on the inner
    domain (for two equal domains, on the later team by name). A team may hold several
    disjoint domains.

    To satisfy it: remove the domain from the team's `spec.domains`, or replace it with one
    that neither equals nor lies below another team's domain (e.g. `<team>.<parent domain>`).
    If the finding is on a domain a team has long held and the other team's outer domain is
    the new one, remove that outer domain from the other team's file (the note shows where).
    """
    for inner, outer in _overlaps(p):
        (team, index), (owner, at) = inner, outer
        domain, parent = team.domains[index], owner.domains[at]
        inner_at = team.origin.at("spec", "domains", index)
        outer_at = owner.origin.at("spec", "domains", at)
        same = parent.lower() == domain.lower()
        claimed = p.is_changed(owner.origin, ("spec", "domains", at))
        if claimed and not p.is_changed(team.origin, ("spec", "domains", index)):
            what = "the same as" if same else "a parent of"
            yield error(
                "team-domain-overlap",
                f"domain '{parent}' of team '{owner.name}' is {what} team '{team.name}''s "
                f"domain '{domain}'",
                outer_at,
                f"remove it from spec.domains, or use a domain outside '{domain}'",
                notes=((f"team '{team.name}' holds '{domain}' here", inner_at),),
            )
            continue
        yield error(
            "team-domain-overlap",
            f"domain '{domain}' of team '{team.name}' is "
            f"{'the same as' if same else 'inside'} team '{owner.name}''s domain '{parent}'",
            inner_at,
            f"remove it from spec.domains, or use a domain outside '{parent}'; if '{parent}' "
            f"is the domain being added, remove '{parent}' from spec.domains of "
            f"{owner.origin.file} instead",
            notes=((f"team '{owner.name}' holds '{parent}' here", outer_at),),
        )


def _overlaps(p: Platform) -> Iterator[tuple[tuple[Team, int], tuple[Team, int]]]:
    """Each pair ((team, index of the inner domain), (other team, index of its domain that
    contains it)); of two equal domains, the earlier team by name holds the outer one."""
    for name in sorted(p.teams):
        team = p.teams[name]
        for index, domain in enumerate(team.domains):
            found = _containing(p, team, domain)
            if found is not None:
                yield (team, index), found


def _containing(p: Platform, team: Team, domain: str) -> tuple[Team, int] | None:
    """Another team's domain that contains `domain` (an equal one only from an earlier team)."""
    for name in sorted(p.teams):
        other = p.teams[name]
        if other.name == team.name:
            continue
        for at, outer in enumerate(other.domains):
            if not under(domain, outer):
                continue
            if outer.lower().rstrip(".") != domain.lower().rstrip(".") or other.name < team.name:
                return other, at
    return None


@rule("endpoint-host-reserved", scope="team")
def hosts_not_reserved(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint's host is not one of the platform's own names.

    The platform's components serve their UIs and APIs at names users learn to trust:
    `argocd.<domain>`, `grafana.<domain>`, `prometheus.<domain>`, `alertmanager.<domain>`,
    `login.<domain>`. A team endpoint at such a name, under a domain the team owns, would look
    like the platform's and could collect the credentials users type into it; and names in
    the cluster's or private DNS (`*.svc`, `*.cluster.local`, `localhost`, `*.local`,
    `*.internal`) resolve elsewhere for everyone but the gateway. Reserved like the platform's
    namespaces, on every cluster whether or not the component runs there: a host whose first
    label is argocd, argo-cd, argo, workflows, grafana, prometheus, alertmanager, thanos,
    opencost, kueue, vault, dex, auth, login, sso, oauth, keycloak, dashboard, gateway,
    kubernetes or registry, and any host under localhost, local, svc, cluster.local or
    internal (the table in renderer/model/reserved.py).

    To satisfy it: rename the endpoint's `endpoints[].host` so that its first label names the
    model or the service (e.g. `<endpoint>.<domain>`), not a platform component.
    """
    for declared in _declared(p):
        owner = reserved_host(declared.host)
        if owner is None:
            continue
        endpoint = declared.endpoint
        yield error(
            "endpoint-host-reserved",
            f"host '{endpoint.host}' of endpoint '{endpoint.name}' is reserved for {owner}",
            endpoint.origin.at("host"),
            f"use a host that names the model, e.g. "
            f"'{suggested_host(declared.team, endpoint, declared.ns)}'",
        )
