"""`gpuplane diff` on what a team serves: its endpoints and the DNS domains their hosts lie in.

An endpoint (`endpoints[]` of an inference namespace, docs/serving.md) is a public URL at the
platform Gateway, a quota held at its maximum and a Deployment template the team applies itself;
a team's `spec.domains` are the names the Gateway lets its routes claim. What each change does
on the cluster, and so its risk (docs/diff.md):

- **added**: a new public host and path (medium), with the pool and what the endpoint holds of
  the team's quota at its maximum, `(replicas.max + 1) x gpus` (`model/serving_quota.py`);
- **removed**: the host stops answering (its HTTPRoute, Service, autoscaler, disruption budget
  and PodMonitor are pruned), while the Deployment the team applied keeps running, its GPUs
  held, with no route, autoscaler or budget: high;
- **host or path changed**: every client's URL changes and the old one stops answering: high;
- **server changed**: other probes, flags and metrics; the team must apply the new template:
  medium (as for its model, pool, profile or port: what the template says changes);
- **replicas.max or gpus**: rated against the team's nominal quota on the pool, which the
  endpoints at their maximum must fit (`endpoint-quota`): medium raised, low lowered;
  **replicas.min**: lowered to 1 its disruption budget blocks every drain of its node
  (medium); otherwise low;
- **SLO, autoscaling signal or target**: low, with both values;
- **a domain added**: medium, the team may route any host under it; high when it equals or is
  a parent of a domain another team held in the base (whether or not policy refuses it, the
  diff shows what the change asks for); **removed**: high where the team's endpoints' hosts
  lay under it, low otherwise.

A namespace removed is `namespace-removed` (its endpoints go with it: not repeated here).
Every finding points at the head's line the change touched (`Finding.at`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from renderer.commands.diff.findings import Finding, Risk, plural
from renderer.findings.diagnostics import PathKey
from renderer.model import view
from renderer.model.platform import Endpoint, Namespace, Platform, Team
from renderer.model.serving_quota import EndpointQuota, endpoint_quota
from renderer.policy.hosts import under

_Key = tuple[str, str, str]
"""(cluster, namespace, endpoint)"""

TEMPLATE_FIELDS = ("model", "pool", "profile", "port")
"""Fields besides the server whose change the Deployment template carries (the team applies
it again): the model the server loads and names, the pool's node selector and resource, the
serving port the Service and the NetworkPolicy point at."""


@dataclass(frozen=True, slots=True)
class _Served:
    """One endpoint with its team and namespace, on one side."""

    platform: Platform
    team: Team
    namespace: Namespace
    endpoint: Endpoint

    @property
    def url(self) -> str:
        return f"{self.endpoint.host}{self.endpoint.path}"

    @property
    def quota(self) -> EndpointQuota | None:
        return endpoint_quota(self.platform, self.team, self.namespace, self.endpoint)

    def at(self, *fields: str) -> str:
        """`file:line` of the first of the endpoint's `fields` the change touched, else of the
        first (the endpoint's own line when none is named)."""
        candidates: list[PathKey] = [(*self.endpoint.origin.path, f) for f in fields]
        return _at(self.platform, self.team, *candidates, self.endpoint.origin.path)

    def finding(self, risk: Risk, code: str, summary: str, at: str | None) -> Finding:
        subject = f"{self.namespace.name}/{self.endpoint.name}"
        return Finding(risk, code, self.namespace.cluster, self.team.name, subject, summary, at=at)


def _at(head: Platform, team: Team, *candidates: PathKey) -> str:
    """`file:line` in the head's team file of the first candidate the change touched, else of
    the first."""
    origin = team.origin
    chosen = next((c for c in candidates if head.is_changed(origin, c)), candidates[0])
    location = origin.at(*chosen)
    return f"{location.file}:{location.line}"


def _served(platform: Platform) -> dict[_Key, _Served]:
    return {
        (s.namespace.cluster, s.namespace.name, s.name): _Served(
            platform, s.team, s.namespace, s.endpoint
        )
        for s in view.served(platform)
    }


def _namespaces(platform: Platform) -> set[tuple[str, str]]:
    return {(ns.cluster, ns.name) for t in platform.teams.values() for ns in t.namespaces}


def endpoints(base: Platform, head: Platform) -> Iterator[Finding]:
    """Each endpoint added, removed or changed (by cluster, namespace and name: a namespace
    moved to another team keeps its endpoints), then each team domain added or removed."""
    old, new = _served(base), _served(head)
    kept_namespaces = _namespaces(head)
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if before is None and after is not None:
            yield _added(after)
        elif after is None and before is not None:
            if key[:2] in kept_namespaces:  # a namespace removed is namespace-removed
                yield _removed(before, new.values(), head)
        elif before is not None and after is not None:
            yield from _changed(before, after)
    yield from domains(base, head)


# --- one endpoint ---------------------------------------------------------------------------


def _holding(served: _Served) -> str:
    """What the endpoint holds of its team's quota at its maximum, said against the nominal."""
    quota = served.quota
    if quota is None:
        return f"no quota of team {served.team.name} on pool {served.endpoint.pool}"
    ep = served.endpoint
    return (
        f"at its maximum (replicas.max {ep.max_replicas} + 1) x {ep.gpus} = "
        f"{plural(quota.at_max, quota.offer.unit)} of the team's nominal {quota.quota.nominal} "
        f"on {quota.pool.name}"
    )


def _added(served: _Served) -> Finding:
    ep = served.endpoint
    summary = (
        f"new public endpoint http://{served.url} at the platform Gateway: {ep.server} serving "
        f"{ep.model} on pool {ep.pool}, {ep.min_replicas}..{ep.max_replicas} replicas of "
        f"{ep.gpus}; {_holding(served)}"
    )
    return served.finding(Risk.MEDIUM, "endpoint-added", summary, served.at("host"))


def _removed(before: _Served, now: Iterable[_Served], head: Platform) -> Finding:
    """The route and everything the platform rendered for it are pruned; the Deployment the
    team applied is not the platform's to prune."""
    ep = before.endpoint
    heirs = [
        s for s in now if s.endpoint.host.lower() == ep.host.lower() and s.endpoint.path == ep.path
    ]
    answered = (
        f"http://{before.url} is now routed to endpoint {heirs[0].namespace.name}/"
        f"{heirs[0].endpoint.name}"
        if heirs
        else f"http://{before.url} stops answering"
    )
    summary = (
        f"{answered}: Argo CD prunes the endpoint's HTTPRoute, Service, autoscaler, "
        f"PodDisruptionBudget and PodMonitor; the Deployment {ep.name} the team applied in "
        f"{before.namespace.name} keeps running, with no route, autoscaler or budget, holding "
        "its GPUs until the team deletes it"
    )
    team = head.teams.get(before.team.name)
    at = None
    if team is not None:
        ns = next((n for n in team.namespaces if n.name == before.namespace.name), None)
        path: PathKey = (*ns.origin.path, "endpoints") if ns is not None else ("spec",)
        at = _at(head, team, path, ns.origin.path if ns is not None else ("spec",))
    return before.finding(Risk.HIGH, "endpoint-removed", summary, at)


def _changed(before: _Served, after: _Served) -> Iterator[Finding]:
    old, new = before.endpoint, after.endpoint
    if (old.host.lower(), old.path) != (new.host.lower(), new.path):
        summary = (
            f"http://{before.url} → http://{after.url}: every client's URL changes, and the "
            "old one stops answering at the Gateway"
        )
        yield after.finding(Risk.HIGH, "endpoint-url-changed", summary, after.at("host", "path"))
    if old.server != new.server:
        port = f", serving port {old.port} → {new.port}" if old.port != new.port else ""
        summary = (
            f"server {old.server} → {new.server}{port}: other probes, flags, metrics and "
            f"signals; the team must apply the new template deployment-{new.name}.yaml, with "
            f"the {new.server} image"
        )
        yield after.finding(Risk.MEDIUM, "endpoint-server-changed", summary, after.at("server"))
    yield from _template(before, after)
    yield from _capacity(before, after)
    yield from _floor(before, after)
    yield from _objective(before, after)


def _template(before: _Served, after: _Served) -> Iterator[Finding]:
    """The model, pool, profile or port: the template the team applied says them."""
    old, new = before.endpoint, after.endpoint
    # a server's own port comes with it: said in endpoint-server-changed
    fields = TEMPLATE_FIELDS if old.server == new.server else TEMPLATE_FIELDS[:-1]
    changes = [
        (name, getattr(old, name), getattr(new, name))
        for name in fields
        if getattr(old, name) != getattr(new, name)
    ]
    if not changes:
        return
    lines = "; ".join(f"{name} {old} → {new}" for name, old, new in changes)
    summary = f"{lines}: the team must apply the new template deployment-{new.name}.yaml" + (
        " (clients ask for the model by name)" if changes[0][0] == "model" else ""
    )
    at = after.at(*(name for name, _, _ in changes))
    yield after.finding(Risk.MEDIUM, "endpoint-changed", summary, at)


def _capacity(before: _Served, after: _Served) -> Iterator[Finding]:
    """`replicas.max` or `gpus`: what the endpoint holds at its maximum, against the nominal."""
    old, new = before.endpoint, after.endpoint
    if (old.max_replicas, old.gpus) == (new.max_replicas, new.gpus):
        return
    was, now = before.quota, after.quota
    held_was = (old.max_replicas + 1) * old.gpus if was is None else was.at_max
    held_now = (new.max_replicas + 1) * new.gpus if now is None else now.at_max
    parts = [
        f"{label} {a} → {b}"
        for label, a, b in (
            ("replicas.max", old.max_replicas, new.max_replicas),
            ("gpus", old.gpus, new.gpus),
        )
        if a != b
    ]
    unit = now.offer.unit if now is not None else "unit"
    nominal = f" of the team's nominal {now.quota.nominal} on {now.pool.name}" if now else ""
    summary = (
        f"{', '.join(parts)}: at its maximum (replicas.max + 1) x gpus = {held_was} → "
        f"{plural(held_now, unit)}{nominal}{_headroom(after)}"
    )
    risk = Risk.MEDIUM if held_now > held_was else Risk.LOW
    at = after.at(*(("replicas", "gpus") if old.max_replicas != new.max_replicas else ("gpus",)))
    yield after.finding(risk, "endpoint-capacity-changed", summary, at)


def _headroom(served: _Served) -> str:
    """What every endpoint of the team on the pool holds at its maximum, and what that leaves
    of the nominal quota for the team's other workloads there."""
    quota = served.quota
    if quota is None:
        return ""
    total = sum(
        q.at_max
        for s in _served(served.platform).values()
        if s.team.name == served.team.name
        for q in (s.quota,)
        if q is not None and q.key == quota.key
    )
    left = quota.quota.nominal - total
    return f" (all the team's endpoints there: {total}, leaving {left} for its other workloads)"


def _floor(before: _Served, after: _Served) -> Iterator[Finding]:
    """`replicas.min`: the floor of every rollout, the budget's `minAvailable`."""
    old, new = before.endpoint.min_replicas, after.endpoint.min_replicas
    if old == new:
        return
    summary = f"replicas.min {old} → {new}"
    risk = Risk.LOW
    if new == 1:
        risk = Risk.MEDIUM
        summary += (
            ": its PodDisruptionBudget (minAvailable 1) allows no eviction of a single replica, "
            "so a drain of its node waits until the team moves it"
        )
    elif new > old:
        summary += ": the replicas it keeps, and the GPUs they hold, even with no traffic"
    else:
        summary += ": fewer replicas kept through rollouts, drains and quiet hours"
    yield after.finding(risk, "endpoint-floor-changed", summary, after.at("replicas"))


def _objective(before: _Served, after: _Served) -> Iterator[Finding]:
    """The SLO (the burn-rate alert's bound) and the autoscaler's signal and target."""
    old, new = before.endpoint, after.endpoint
    if (old.slo.metric, old.slo.p95_seconds) != (new.slo.metric, new.slo.p95_seconds):
        summary = (
            f"SLO p95 {old.slo.metric} {old.slo.text} → {new.slo.metric} {new.slo.text}: the "
            "burn-rate alert counts requests against the new bound"
        )
        yield after.finding(Risk.LOW, "endpoint-slo-changed", summary, after.at("slo"))
    was, now = old.autoscaling, new.autoscaling
    if (was.signal, was.target) != (now.signal, now.target):
        summary = (
            f"autoscaling {was.signal} target {was.target:g} → {now.signal} target "
            f"{now.target:g}: the autoscaler adds and removes replicas on the new signal"
        )
        yield after.finding(Risk.LOW, "endpoint-scaling-changed", summary, after.at("autoscaling"))


# --- team domains ---------------------------------------------------------------------------


def _normal(domain: str) -> str:
    return domain.lower().rstrip(".")


def domains(base: Platform, head: Platform) -> Iterator[Finding]:
    """Each domain a team adds or removes, on each cluster where the team has namespaces."""
    held = {t.name: {_normal(d) for d in t.domains} for t in base.teams.values()}
    for name in sorted(head.teams):
        team = head.teams[name]
        old = held.get(name, set())
        for index, domain in enumerate(team.domains):
            if _normal(domain) not in old:
                yield from _domain_added(team, index, domain, held, head)
        before = base.teams.get(name)
        if before is not None:
            now = {_normal(d) for d in team.domains}
            for domain in before.domains:
                if _normal(domain) not in now:
                    yield from _domain_removed(before, team, domain, head)


def _clusters(team: Team) -> list[str]:
    """Where the team's routes would use a domain: its inference namespaces' clusters, else
    every cluster it has namespaces on."""
    serving = {ns.cluster for ns in team.namespaces if ns.purpose == "inference"}
    return sorted(serving or {ns.cluster for ns in team.namespaces})


def _domain_added(
    team: Team, index: int, domain: str, held: Mapping[str, set[str]], head: Platform
) -> Iterator[Finding]:
    others = [(d, owner) for owner, owned in held.items() if owner != team.name for d in owned]
    over = sorted(f"{d} (team {owner})" for d, owner in others if under(d, domain))
    inside = sorted(
        f"{d} (team {owner})" for d, owner in others if under(domain, d) and d != domain
    )
    summary = f"team {team.name} may route any host under {domain} at the platform Gateway"
    risk = Risk.HIGH if over or inside else Risk.MEDIUM
    if over:
        summary += f", which holds {', '.join(over)} in the base: the team asks for its names"
    elif inside:
        # listeners distinct by hostname match the most specific first (Gateway API v1.6.1,
        # Gateway `spec.listeners`): the new one takes those hosts
        summary += f", inside {', '.join(inside)} in the base: the team asks for its names"
    at = _at(head, team, ("spec", "domains", index), ("spec", "domains"))
    for cluster in _clusters(team):
        yield Finding(risk, "domain-added", cluster, team.name, domain, summary, at=at)


def _domain_removed(before: Team, after: Team, domain: str, head: Platform) -> Iterator[Finding]:
    hosts = sorted(
        {ep.host for ns in before.namespaces for ep in ns.endpoints if under(ep.host, domain)}
    )
    if hosts:
        risk = Risk.HIGH
        summary = (
            f"{domain} is no longer the team's: the Gateway drops its listener, and "
            f"{', '.join(hosts)} lay under it"
        )
    else:
        risk = Risk.LOW
        summary = f"{domain} is no longer the team's (no endpoint's host lay under it)"
    at = _at(head, after, ("spec", "domains"), ("spec",))
    for cluster in _clusters(before):
        yield Finding(risk, "domain-removed", cluster, after.name, domain, summary, at=at)
