"""What a team may do on one cluster, compared as a whole before and after, not namespace by
namespace.

A pull request can rename, add or move a team's namespaces in the same edit that widens its
groups, image registries, egress or caps; a comparison of the namespaces kept by name would see
only the names change. So a team's reach on a cluster is compared across all its namespaces
there (docs/diff.md): a team with no namespace on the cluster before (a new team, or one new
there) gains all of it, each group, registry and egress rule its own high finding; and a
widening in a change that also renames or moves the team's namespaces is high, whatever it would
be alone. Each finding points at the line of the head's team file it is about (`Finding.at`),
the one the change touched where there is a choice.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from renderer.commands.diff.findings import Finding, Risk
from renderer.findings.diagnostics import PathKey
from renderer.model.caps import CAP_KEYS, CapKey, namespace_shares, quota_text, team_caps, text
from renderer.model.identifiers import escaped
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import Cluster, Namespace, Platform, Team

ROLES = ("none", "view", "edit", "admin")
"""A group's strongest namespace role, weakest first: the ClusterRoles of viewers, members, owners."""

ROLE_FIELDS = ("", "viewers", "members", "owners")
"""The team file's list that grants each role of `ROLES`."""

_ROLE_RISK = {1: Risk.LOW, 2: Risk.MEDIUM, 3: Risk.HIGH}
POD_SECURITY_RANK = {"privileged": 0, "baseline": 1, "restricted": 2}


def effective_pod_security(ns: Namespace) -> str:
    return ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]


def roles(team: Team) -> dict[str, int]:
    """Each group's strongest role (an index of `ROLES`)."""
    ranks: dict[str, int] = {}
    for rank, groups in ((1, team.viewers), (2, team.members), (3, team.owners)):
        for group in groups:
            ranks[group] = max(ranks.get(group, 0), rank)
    return ranks


@dataclass(frozen=True, slots=True)
class Renames:
    """The namespaces a team gives up and the ones it gains in the same change (on any
    cluster): its namespaces renamed, or moved to another cluster."""

    gone: tuple[str, ...]
    new: tuple[str, ...]

    def note(self) -> str:
        return f" (behind renamed namespaces: {', '.join(self.gone)} → {', '.join(self.new)})"


def renames(before: Team | None, after: Team | None) -> Renames | None:
    """None unless the team gives up a namespace and gains another in the same change."""
    if before is None or after is None:
        return None
    old = {(ns.cluster, ns.name) for ns in before.namespaces}
    new = {(ns.cluster, ns.name) for ns in after.namespaces}
    gone, came = sorted(old - new), sorted(new - old)
    if not gone or not came:
        return None
    one_cluster = len({cluster for cluster, _ in (*gone, *came)}) == 1

    def shown(keys: Sequence[tuple[str, str]]) -> tuple[str, ...]:
        return tuple(name if one_cluster else f"{cluster}/{name}" for cluster, name in keys)

    return Renames(shown(gone), shown(came))


@dataclass(frozen=True, slots=True)
class OnCluster:
    """One team on one cluster, before and after the change. `before` is the base's team
    (None: the team is new); `old_ns` its namespaces on the cluster (empty: it had none there)."""

    cluster: str
    before: Team | None
    after: Team
    old_ns: Mapping[str, Namespace]
    new_ns: Mapping[str, Namespace]
    base_cluster: Cluster | None
    head_cluster: Cluster | None
    head: Platform
    renames: Renames | None

    @property
    def name(self) -> str:
        return self.after.name

    @property
    def arrives(self) -> bool:
        """The team had no namespace on this cluster before: all it may do here is new."""
        return not self.old_ns

    @property
    def where(self) -> str:
        return ", ".join(sorted(self.new_ns))

    @property
    def prefix_after(self) -> str:
        return self.head_cluster.group_prefix if self.head_cluster is not None else ""

    @property
    def prefix_before(self) -> str:
        cluster = self.base_cluster
        return cluster.group_prefix if cluster is not None else self.prefix_after

    def widening(self, risk: Risk, summary: str) -> tuple[Risk, str]:
        """The risk of something the team gains here: high when everything here is new to it,
        or when the change also renames or moves its namespaces (with a note saying so)."""
        if self.arrives or risk is Risk.HIGH:
            return Risk.HIGH, summary
        if self.renames is not None:
            return Risk.HIGH, summary + self.renames.note()
        return risk, summary

    def at(self, *candidates: PathKey) -> str:
        """`file:line` in the head's team file of the first candidate path the change touched,
        else of the first (the nearest value written above a path the file does not write)."""
        origin = self.after.origin
        chosen = next((c for c in candidates if self.head.is_changed(origin, c)), candidates[0])
        location = origin.at(*chosen)
        return f"{location.file}:{location.line}"

    def reach_at(self, *candidates: PathKey) -> str:
        """`at` for what the team may do here, which the namespaces new here bring along: on
        the candidate the change touched, else on a new namespace's line it touched."""
        new = [
            ns.origin.path for name, ns in sorted(self.new_ns.items()) if name not in self.old_ns
        ]
        return self.at(*candidates, *new)

    def finding(self, risk: Risk, code: str, subject: str, summary: str, at: str | None) -> Finding:
        return Finding(risk, code, self.cluster, self.name, subject, summary, at=at)


def rbac(ctx: OnCluster) -> Iterator[Finding]:
    """Each group whose strongest role on the team's namespaces here rises or falls."""
    old = roles(ctx.before) if ctx.before is not None and ctx.old_ns else {}
    new = roles(ctx.after)
    for group in sorted(set(old) | set(new)):
        was, now = old.get(group, 0), new.get(group, 0)
        if now > was:
            subject = escaped(f"{ctx.prefix_after}{group}")  # shown escaped, as everywhere
            risk, summary = ctx.widening(
                _ROLE_RISK[now], f"group {subject}: {ROLES[was]} → {ROLES[now]} on {ctx.where}"
            )
            field = ROLE_FIELDS[now]
            index = getattr(ctx.after, field).index(group)
            at = ctx.reach_at(("spec", field, index))
            yield ctx.finding(risk, "rbac-widened", subject, summary, at)
        elif now < was:
            subject = escaped(f"{ctx.prefix_before}{group}")  # shown escaped, as everywhere
            summary = f"group {subject}: {ROLES[was]} → {ROLES[now]} on {ctx.where}"
            at = ctx.at(("spec", ROLE_FIELDS[was]))
            yield ctx.finding(Risk.LOW, "rbac-narrowed", subject, summary, at)


def images(ctx: OnCluster) -> Iterator[Finding]:
    """Each registry added (an exemption from the image admission policy: high) or removed."""
    old = ctx.before.images if ctx.before is not None and ctx.old_ns else ()
    for index, image in enumerate(ctx.after.images):
        if image not in old and image not in ctx.after.images[:index]:
            summary = f"pods in {ctx.where} may now run images from {image}"
            at = ctx.reach_at(("spec", "images", index))
            yield ctx.finding(Risk.HIGH, "images-widened", image, summary, at)
    for image in dict.fromkeys(old):
        if image not in ctx.after.images:
            summary = f"images from {image} are no longer admitted in {ctx.where}"
            at = ctx.at(("spec", "images"))
            yield ctx.finding(Risk.LOW, "images-narrowed", image, summary, at)


def namespace_caps(team: Team, cluster: Cluster | None, namespace: str) -> dict[str, str]:
    """The ResourceQuota caps one namespace of the team gets, as the tenancy layer renders them:
    its share of the team's caps (`renderer.model.caps`)."""
    if cluster is None:
        return {}
    return quota_text(namespace_shares(cluster, team).get(namespace, {}))


@dataclass(frozen=True, slots=True)
class _CapReach:
    """One cap of a team on a cluster: the team's (its file's, or the cluster's default), and
    each namespace's share of it."""

    total: Decimal
    each: Mapping[str, str]

    def shown(self, key: CapKey) -> str:
        return text(key, self.total)

    def shares(self) -> str:
        return ", ".join(f"{ns} {value}" for ns, value in sorted(self.each.items()))


def _cap_reach(
    team: Team, namespaces: Mapping[str, Namespace], cluster: Cluster | None, key: CapKey
) -> _CapReach | None:
    """None: the team has no such cap there (or no namespace there)."""
    if cluster is None or not namespaces:
        return None
    total = team_caps(cluster, team).get(key)
    if total is None:
        return None
    each = {ns: namespace_caps(team, cluster, ns).get(key, "?") for ns in namespaces}
    return _CapReach(total, each)


def quota_caps(ctx: OnCluster) -> Iterator[Finding]:
    """A cap that goes away is high risk (the namespaces may then take the whole cluster's CPU,
    memory or storage); one whose team total moves is a cap change: medium when it rises, low
    when it falls. The caps are the team's, split between its namespaces (renderer/model/
    caps.py), so a namespace added or renamed moves no cap; a share moved between namespaces is
    low."""
    if ctx.before is None or ctx.arrives:
        return
    for key in CAP_KEYS:
        old = _cap_reach(ctx.before, ctx.old_ns, ctx.base_cluster, key)
        if old is None:
            continue
        new = _cap_reach(ctx.after, ctx.new_ns, ctx.head_cluster, key)
        at = ctx.reach_at(("spec", "resources", key))
        if new is None:
            summary = (
                f"{key} is no longer capped in {ctx.where} (was {old.shown(key)} for the team): "
                "its pods may take all of the cluster's"
            )
            yield ctx.finding(Risk.HIGH, "quota-cap-removed", key, summary, at)
            continue
        if old.total == new.total and (old.each == new.each or set(old.each) != set(new.each)):
            continue  # the same team cap; namespaces added or renamed only split it anew
        source = "" if key in ctx.after.resources else " (the cluster's teamDefaults)"
        summary = f"{key} cap of the team on {ctx.cluster}: {old.shown(key)} → {new.shown(key)}"
        summary += f"{source} ({new.shares()})"
        if new.total > old.total:
            risk, summary = ctx.widening(Risk.MEDIUM, summary)
        else:
            risk = Risk.LOW
        yield ctx.finding(risk, "quota-cap-changed", key, summary, at)


def namespace_added(ctx: OnCluster, ns: Namespace) -> Finding:
    """A namespace new to the team here: low, unless it reaches what the team's namespaces here
    did not: a purpose it had none of (a ClusterQueue of its own, and that purpose's pools:
    medium) or a Pod Security level looser than any of its namespaces of that purpose had
    (an exemption from the admission policy it had: high)."""
    level = effective_pod_security(ns)
    summary = f"new {ns.purpose} namespace {ns.name} (Pod Security {level})"
    same = [effective_pod_security(o) for o in ctx.old_ns.values() if o.purpose == ns.purpose]
    risk = Risk.LOW
    if not same:
        risk, summary = ctx.widening(
            Risk.MEDIUM,
            f"{summary}: the team's first {ns.purpose} namespace on {ctx.cluster}, with a "
            f"ClusterQueue {ctx.name}-{ns.purpose} of its own and the pools of that purpose",
        )
    else:
        loosest = min(same, key=POD_SECURITY_RANK.__getitem__)
        if POD_SECURITY_RANK[level] < POD_SECURITY_RANK[loosest]:
            risk = Risk.HIGH
            summary += (
                f": looser than every {ns.purpose} namespace the team had on {ctx.cluster} "
                f"({loosest})"
            )
    at = ctx.at(ns.origin.path)
    return ctx.finding(risk, "namespace-added", ns.name, summary, at)
