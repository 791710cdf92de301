"""What a change means for each team: namespaces pruned or moved, RBAC, images, egress, queue.

Teams are where most pull requests land and where a change can delete data or grant access, so
their rules (docs/diff.md) change on their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from renderer.commands.diff.egress import egress
from renderer.commands.diff.field_changes import camel, changed_fields, field_lines, other_fields
from renderer.commands.diff.findings import Finding, Risk, plural
from renderer.commands.diff.objects import NOT_APPLIED_FOLDERS, NOT_RENDERED_FILES
from renderer.commands.diff.revision import Revision
from renderer.model import quantity
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import Cluster, Namespace, Platform, Team
from renderer.model.reserved import namespace_owner

ROLES = ("none", "view", "edit", "admin")
"""A group's strongest namespace role, weakest first: the ClusterRoles of viewers, members, owners."""

_ROLE_RISK = {1: Risk.LOW, 2: Risk.MEDIUM, 3: Risk.HIGH}
_POD_SECURITY_RANK = {"privileged": 0, "baseline": 1, "restricted": 2}


def _namespace_owners(platform: Platform) -> dict[tuple[str, str], str]:
    return {(ns.cluster, ns.name): t.name for t in platform.teams.values() for ns in t.namespaces}


def _pruned(tree: Mapping[str, bytes], cluster: str, namespace: str) -> tuple[str, ...]:
    """The applied files of one namespace: `<cluster>/<layer>/<namespace>/<file>` (not the team
    templates, which nothing applies)."""
    found = []
    for path in tree:
        parts = path.split("/")
        if (
            len(parts) == 4
            and parts[0] == cluster
            and parts[1] not in NOT_APPLIED_FOLDERS
            and parts[2] == namespace
            and parts[3] not in NOT_RENDERED_FILES
        ):
            found.append("/".join(parts[1:]))
    return tuple(sorted(found))


_PRUNE_NOTE = (
    "and everything else in {it}: workloads, PersistentVolumeClaims and their data, Secrets"
)


def _prune_lines(
    tree: Mapping[str, bytes], compared: bool, cluster: str, namespace: str
) -> tuple[str, ...]:
    if not compared:
        return (f"{namespace}: rendered objects not compared (the base does not render)",)
    return tuple(f"{cluster}/{path}" for path in _pruned(tree, cluster, namespace))


def _namespaces_text(names: Sequence[str]) -> str:
    return ("namespace " if len(names) == 1 else "namespaces ") + ", ".join(names)


def _objects_text(lines: Sequence[str], compared: bool) -> str:
    if not compared:
        return ""
    return f" with {plural(len(lines), 'rendered object')}"


def _roles(team: Team) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, groups in ((1, team.viewers), (2, team.members), (3, team.owners)):
        for group in groups:
            ranks[group] = max(ranks.get(group, 0), rank)
    return ranks


def _effective_pod_security(ns: Namespace) -> str:
    return ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]


def teams(base: Revision, head: Revision) -> Iterator[Finding]:
    owners_before = _namespace_owners(base.platform)
    owners_after = _namespace_owners(head.platform)
    compared = base.side.valid or base.files == 0
    for name in sorted(set(base.platform.teams) | set(head.platform.teams)):
        before = base.platform.teams.get(name)
        after = head.platform.teams.get(name)
        if before is None and after is not None:
            yield from _team_added(after, head.platform)
            continue
        if after is None and before is not None:
            yield from _team_removed(before, base, owners_after, compared)
            continue
        assert before is not None and after is not None
        clusters = sorted({ns.cluster for ns in (*before.namespaces, *after.namespaces)})
        for cluster in clusters:
            yield from _team_on_cluster(
                cluster, before, after, base, head, owners_before, owners_after, compared
            )


def _group_list(prefix: str, groups: Sequence[str]) -> str:
    return ", ".join(f"{prefix}{g}" for g in groups) or "-"


def _team_added(team: Team, platform: Platform) -> Iterator[Finding]:
    for cluster in sorted({ns.cluster for ns in team.namespaces}):
        prefix = platform.clusters[cluster].group_prefix if cluster in platform.clusters else ""
        namespaces = [ns for ns in team.namespaces if ns.cluster == cluster]
        listing = ", ".join(f"{ns.name} ({ns.purpose})" for ns in namespaces)
        description = f" “{team.description}”" if team.description else ""
        yield Finding(
            Risk.MEDIUM,
            "team-added",
            cluster,
            team.name,
            team.name,
            f"new team{description}, queue {team.queue}: namespaces {listing}; "
            f"admin {_group_list(prefix, team.owners)}, edit {_group_list(prefix, team.members)}, "
            f"view {_group_list(prefix, team.viewers)}",
            tuple(f"image registry: {image}" for image in team.images),
        )
        if cluster in platform.clusters:
            for ns in namespaces:
                yield from _platform_namespace(platform, platform.clusters[cluster], team, ns.name)
        yield from egress(
            cluster, team.name, (), team.egress, ", ".join(ns.name for ns in namespaces)
        )


def _team_removed(
    team: Team, base: Revision, owners_after: Mapping[tuple[str, str], str], compared: bool
) -> Iterator[Finding]:
    for cluster in sorted({ns.cluster for ns in team.namespaces}):
        gone = [
            ns.name
            for ns in team.namespaces
            if ns.cluster == cluster and (cluster, ns.name) not in owners_after
        ]
        lines = [line for ns in gone for line in _prune_lines(base.tree, compared, cluster, ns)]
        yield Finding(
            Risk.HIGH,
            "team-removed",
            cluster,
            team.name,
            team.name,
            (
                f"Argo CD prunes {_namespaces_text(gone)}{_objects_text(lines, compared)}, "
                f"{_PRUNE_NOTE.format(it='it' if len(gone) == 1 else 'them')}; its queues and GPU "
                "quota go with it"
                if gone
                else "its namespaces all move to other teams; its queues and GPU quota go"
            ),
            tuple(lines),
        )


def _team_on_cluster(
    cluster: str,
    before: Team,
    after: Team,
    base: Revision,
    head: Revision,
    owners_before: Mapping[tuple[str, str], str],
    owners_after: Mapping[tuple[str, str], str],
    compared: bool,
) -> Iterator[Finding]:
    name = after.name
    old_ns = {ns.name: ns for ns in before.namespaces if ns.cluster == cluster}
    new_ns = {ns.name: ns for ns in after.namespaces if ns.cluster == cluster}
    head_cluster = head.platform.clusters.get(cluster)
    base_cluster = base.platform.clusters.get(cluster)
    prefix_after = head_cluster.group_prefix if head_cluster is not None else ""
    prefix_before = base_cluster.group_prefix if base_cluster is not None else prefix_after
    for ns_name in sorted(set(old_ns) - set(new_ns)):
        new_owner = owners_after.get((cluster, ns_name))
        if new_owner is not None:
            continue  # moved to another team: reported there
        pruned = _prune_lines(base.tree, compared, cluster, ns_name)
        yield Finding(
            Risk.HIGH,
            "namespace-removed",
            cluster,
            name,
            ns_name,
            f"Argo CD prunes namespace {ns_name}{_objects_text(pruned, compared)}, "
            + _PRUNE_NOTE.format(it="it"),
            pruned,
        )
    for ns_name in sorted(set(new_ns) - set(old_ns)):
        ns = new_ns[ns_name]
        old_owner = owners_before.get((cluster, ns_name))
        if old_owner is not None:
            yield Finding(
                Risk.HIGH,
                "namespace-moved",
                cluster,
                name,
                ns_name,
                f"namespace {ns_name} moves from team {old_owner} to {name}: its data stays, and "
                f"admin goes to {_group_list(prefix_after, after.owners)}",
            )
        elif head_cluster is not None and namespace_owner(head.platform, head_cluster, ns_name):
            yield from _platform_namespace(head.platform, head_cluster, after, ns_name)
        else:
            yield Finding(
                Risk.LOW,
                "namespace-added",
                cluster,
                name,
                ns_name,
                f"new {ns.purpose} namespace {ns_name} (Pod Security "
                f"{_effective_pod_security(ns)})",
            )
    for ns_name in sorted(set(old_ns) & set(new_ns)):
        old, new = old_ns[ns_name], new_ns[ns_name]
        lines = []
        risk = Risk.LOW
        if old.purpose != new.purpose:
            lines.append(
                f"purpose {old.purpose} → {new.purpose}: its LocalQueue points at "
                f"{name}-{new.purpose} and it may use other pools"
            )
            risk = Risk.MEDIUM
        old_ps, new_ps = _effective_pod_security(old), _effective_pod_security(new)
        if old_ps != new_ps:
            looser = _POD_SECURITY_RANK[new_ps] < _POD_SECURITY_RANK[old_ps]
            lines.append(
                f"Pod Security {old_ps} → {new_ps}" + (" (loosened)" if looser else " (tightened)")
            )
            if looser:  # an exemption from the admission policy it had: high
                risk = Risk.HIGH
        if lines:
            yield Finding(risk, "namespace-changed", cluster, name, ns_name, "; ".join(lines))
    kept = sorted(set(old_ns) & set(new_ns))
    where = ", ".join(kept)
    if kept:
        old_roles, new_roles = _roles(before), _roles(after)
        for group in sorted(set(old_roles) | set(new_roles)):
            was, now = old_roles.get(group, 0), new_roles.get(group, 0)
            if now > was:
                yield Finding(
                    _ROLE_RISK[now],
                    "rbac-widened",
                    cluster,
                    name,
                    f"{prefix_after}{group}",
                    f"group {prefix_after}{group}: {ROLES[was]} → {ROLES[now]} on {where}",
                )
            elif now < was:
                yield Finding(
                    Risk.LOW,
                    "rbac-narrowed",
                    cluster,
                    name,
                    f"{prefix_before}{group}",
                    f"group {prefix_before}{group}: {ROLES[was]} → {ROLES[now]} on {where}",
                )
        added = [i for i in after.images if i not in before.images]
        removed = [i for i in before.images if i not in after.images]
        for image in added:  # an exemption from the image admission policy
            yield Finding(
                Risk.HIGH,
                "images-widened",
                cluster,
                name,
                image,
                f"pods in {where} may now run images from {image}",
            )
        for image in removed:
            yield Finding(
                Risk.LOW,
                "images-narrowed",
                cluster,
                name,
                image,
                f"images from {image} are no longer admitted in {where}",
            )
    if kept:
        yield from _quota_caps(cluster, name, before, after, base_cluster, head_cluster, where)
    if before.codeowners != after.codeowners and new_ns:
        yield Finding(
            Risk.HIGH,
            "codeowners-changed",
            cluster,
            name,
            name,
            "who approves changes to the team's file: "
            f"{', '.join(before.codeowners) or 'the platform owners'} → "
            f"{', '.join(after.codeowners) or 'the platform owners'}",
        )
    if new_ns:
        yield from egress(cluster, name, before.egress, after.egress, ", ".join(sorted(new_ns)))
        membership = changed_fields(before, after, ("queue", "priority"))
        if membership:
            yield Finding(
                Risk.MEDIUM,
                "team-queue-changed",
                cluster,
                name,
                name,
                "; ".join(field_lines(membership))
                + ": the team's workloads are admitted and preempted under other rules",
            )
        handled = (
            "owners",
            "members",
            "viewers",
            "queue",
            "priority",
            "namespaces",
            "gpus",
            "images",
            "egress",
            "resources",
            "codeowners",
        )
        changes = changed_fields(before, after, other_fields(Team, handled))
        if changes:
            yield Finding(
                Risk.LOW,
                "team-changed",
                cluster,
                name,
                name,
                ", ".join(camel(n) for n, _, _ in changes) + " changed",
                field_lines(changes),
            )


def _platform_namespace(
    platform: Platform, cluster: Cluster, team: Team, namespace: str
) -> Iterator[Finding]:
    component = namespace_owner(platform, cluster, namespace)
    if component is None:
        return
    yield Finding(
        Risk.HIGH,
        "namespace-platform",
        cluster.name,
        team.name,
        namespace,
        f"namespace {namespace} is where {component} runs: the team's owners would get admin "
        "there, its quota, labels and default-deny NetworkPolicies would apply to "
        f"{component}",
    )


CAPS = ("cpu", "memory", "storage", "persistentVolumeClaims")
"""The ResourceQuota caps of a team's namespaces (`spec.resources`)."""


def _caps(team: Team, cluster: Cluster | None) -> dict[str, str | int]:
    """The caps a team's namespaces get: its own, else the cluster's `teamDefaults`."""
    defaults = cluster.team_default_resources if cluster is not None else {}
    return {k: v for k in CAPS if (v := team.resources.get(k, defaults.get(k))) is not None}


def _quota_caps(
    cluster: str,
    name: str,
    before: Team,
    after: Team,
    base_cluster: Cluster | None,
    head_cluster: Cluster | None,
    where: str,
) -> Iterator[Finding]:
    """A cap that goes away is high risk (the namespaces may then take the whole cluster's CPU,
    memory or storage); one the cluster's default now sets, or that moves, is a cap change:
    medium when it rises, low when it falls."""
    old, new = _caps(before, base_cluster), _caps(after, head_cluster)
    for key in CAPS:
        if key not in old:
            continue
        if key not in new:
            yield Finding(
                Risk.HIGH,
                "quota-cap-removed",
                cluster,
                name,
                key,
                f"{key} is no longer capped in {where} (was {old[key]}): its pods may take all "
                "of the cluster's",
            )
            continue
        if str(old[key]) == str(new[key]):
            continue
        try:
            raised = quantity.parse(new[key]) > quantity.parse(old[key])
        except (ValueError, ArithmeticError):
            raised = True
        source = "" if key in after.resources else " (the cluster's teamDefaults)"
        yield Finding(
            Risk.MEDIUM if raised else Risk.LOW,
            "quota-cap-changed",
            cluster,
            name,
            key,
            f"{key} cap in {where}: {old[key]} → {new[key]}{source}",
        )
