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
from renderer.model import quantity
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import Cluster, Namespace, Platform, Team

ROLES = ("none", "view", "edit", "admin")
"""A group's strongest namespace role, weakest first: the ClusterRoles of viewers, members, owners."""

ROLE_FIELDS = ("", "viewers", "members", "owners")
"""The team file's list that grants each role of `ROLES`."""

_ROLE_RISK = {1: Risk.LOW, 2: Risk.MEDIUM, 3: Risk.HIGH}
POD_SECURITY_RANK = {"privileged": 0, "baseline": 1, "restricted": 2}

CAPS = ("cpu", "memory", "storage", "persistentVolumeClaims")
"""The ResourceQuota caps of a team's namespaces (`spec.resources`)."""

_BINARY_CAPS = frozenset({"memory", "storage"})


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
            subject = f"{ctx.prefix_after}{group}"
            risk, summary = ctx.widening(
                _ROLE_RISK[now], f"group {subject}: {ROLES[was]} → {ROLES[now]} on {ctx.where}"
            )
            field = ROLE_FIELDS[now]
            index = getattr(ctx.after, field).index(group)
            at = ctx.reach_at(("spec", field, index))
            yield ctx.finding(risk, "rbac-widened", subject, summary, at)
        elif now < was:
            subject = f"{ctx.prefix_before}{group}"
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


def namespace_caps(team: Team, cluster: Cluster | None) -> dict[str, str | int]:
    """The ResourceQuota caps one namespace of the team gets, as the tenancy layer renders them:
    the team's, key by key the cluster's `teamDefaults` where the team sets none."""
    defaults = cluster.team_default_resources if cluster is not None else {}
    return {k: v for k in CAPS if (v := team.resources.get(k, defaults.get(k))) is not None}


@dataclass(frozen=True, slots=True)
class _CapReach:
    """One cap across a team's namespaces on a cluster: each namespace's, and their sum (None:
    a value that is not a quantity)."""

    each: Mapping[str, str]
    total: Decimal | None

    def shown(self, counted: bool = True) -> str:
        """The value each namespace has ("3 x 512" with `counted`), or each one's."""
        values = sorted(set(self.each.values()))
        if len(values) == 1:
            return f"{len(self.each)} x {values[0]}" if counted else values[0]
        return ", ".join(f"{ns} {value}" for ns, value in sorted(self.each.items()))

    def total_shown(self, key: str) -> str:
        if self.total is None:
            return "?"
        return quantity.go_string(self.total, key in _BINARY_CAPS)


def _cap_reach(
    team: Team, namespaces: Mapping[str, Namespace], cluster: Cluster | None, key: str
) -> _CapReach | None:
    """None: some namespace of the team has no such cap."""
    caps = namespace_caps(team, cluster)
    if key not in caps or not namespaces:
        return None
    each = {ns: str(caps[key]) for ns in namespaces}
    try:
        total: Decimal | None = sum((quantity.parse(v) for v in each.values()), Decimal(0))
    except (ValueError, ArithmeticError):
        total = None
    return _CapReach(each, total)


def quota_caps(ctx: OnCluster) -> Iterator[Finding]:
    """A cap that goes away is high risk (the namespaces may then take the whole cluster's CPU,
    memory or storage); one that moves, in a namespace or across the team's namespaces here
    (a namespace added gets a ResourceQuota of its own), is a cap change: medium when the
    team's total rises, low when it falls."""
    if ctx.before is None or ctx.arrives:
        return
    for key in CAPS:
        old = _cap_reach(ctx.before, ctx.old_ns, ctx.base_cluster, key)
        if old is None:
            continue
        new = _cap_reach(ctx.after, ctx.new_ns, ctx.head_cluster, key)
        at = ctx.reach_at(("spec", "resources", key))
        if new is None:
            summary = (
                f"{key} is no longer capped in {ctx.where} (was {old.shown(False)}): its pods "
                "may take all of the cluster's"
            )
            yield ctx.finding(Risk.HIGH, "quota-cap-removed", key, summary, at)
            continue
        if old.each == new.each:
            continue
        raised = old.total is None or new.total is None or new.total > old.total
        kept = set(old.each) & set(new.each)
        if not raised and all(old.each[ns] == new.each[ns] for ns in kept):
            continue  # the same caps, in fewer namespaces: said by their removal
        source = "" if key in ctx.after.resources else " (the cluster's teamDefaults)"
        if set(old.each) == set(new.each):
            summary = f"{key} cap in {ctx.where}: {old.shown(False)} → {new.shown(False)}{source}"
        else:
            summary = (
                f"{key} caps on {ctx.cluster}: {old.shown()} → {new.shown()}{source}, "
                f"{old.total_shown(key)} → {new.total_shown(key)} in all ({ctx.where})"
            )
        risk, summary = ctx.widening(Risk.MEDIUM, summary) if raised else (Risk.LOW, summary)
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
