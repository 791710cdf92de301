"""What a change means for each team: namespaces pruned or moved, RBAC, images, egress, queue.

Teams are where most pull requests land and where a change can delete data or grant access, so
their rules (docs/diff.md) change on their own. A team is compared as a whole on each cluster
(`reach`), not namespace by namespace, so that renaming or moving namespaces hides nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from renderer.commands.diff.egress import egress
from renderer.commands.diff.field_changes import camel, changed_fields, field_lines, other_fields
from renderer.commands.diff.findings import Finding, Risk, plural
from renderer.commands.diff.objects import NOT_APPLIED_FOLDERS, NOT_RENDERED_FILES
from renderer.commands.diff.reach import (
    POD_SECURITY_RANK,
    OnCluster,
    Renames,
    effective_pod_security,
    images,
    namespace_added,
    quota_caps,
    rbac,
    renames,
)
from renderer.commands.diff.revision import Revision
from renderer.model.identifiers import escaped
from renderer.model.platform import EgressRule, Platform, Team
from renderer.model.reserved import namespace_owner

_Owners = Mapping[tuple[str, str], str]


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
    tree: Mapping[str, bytes], cluster: str, namespace: str, *, compared: bool
) -> tuple[str, ...]:
    if not compared:
        return (f"{namespace}: rendered objects not compared (the base does not render)",)
    return tuple(f"{cluster}/{path}" for path in _pruned(tree, cluster, namespace))


def _namespaces_text(names: Sequence[str]) -> str:
    return ("namespace " if len(names) == 1 else "namespaces ") + ", ".join(names)


def _objects_text(lines: Sequence[str], *, compared: bool) -> str:
    if not compared:
        return ""
    return f" with {plural(len(lines), 'rendered object')}"


def teams(base: Revision, head: Revision) -> Iterator[Finding]:
    owners_before = _namespace_owners(base.platform)
    owners_after = _namespace_owners(head.platform)
    compared = base.side.valid or base.files == 0
    for name in sorted(set(base.platform.teams) | set(head.platform.teams)):
        before = base.platform.teams.get(name)
        after = head.platform.teams.get(name)
        if after is None:
            assert before is not None
            yield from _team_removed(before, base, owners_after, compared=compared)
            continue
        renamed = renames(before, after)
        sides = (*(before.namespaces if before is not None else ()), *after.namespaces)
        for cluster in sorted({ns.cluster for ns in sides}):
            ctx = _on_cluster(cluster, before, after, base.platform, head.platform, renamed)
            yield from _removed_namespaces(ctx, base, owners_after, compared=compared)
            if ctx.new_ns:
                yield from _team_on_cluster(ctx, base.platform, owners_before)


def _on_cluster(
    cluster: str,
    before: Team | None,
    after: Team,
    base: Platform,
    head: Platform,
    renamed: Renames | None,
) -> OnCluster:
    return OnCluster(
        cluster=cluster,
        before=before,
        after=after,
        old_ns={ns.name: ns for ns in before.namespaces if ns.cluster == cluster} if before else {},
        new_ns={ns.name: ns for ns in after.namespaces if ns.cluster == cluster},
        base_cluster=base.clusters.get(cluster),
        head_cluster=head.clusters.get(cluster),
        head=head,
        renames=renamed,
    )


def _group_list(prefix: str, groups: Sequence[str]) -> str:
    return ", ".join(escaped(f"{prefix}{g}") for g in groups) or "-"


def _team_removed(
    team: Team, base: Revision, owners_after: _Owners, *, compared: bool
) -> Iterator[Finding]:
    for cluster in sorted({ns.cluster for ns in team.namespaces}):
        gone = [
            ns.name
            for ns in team.namespaces
            if ns.cluster == cluster and (cluster, ns.name) not in owners_after
        ]
        lines = [
            line for ns in gone for line in _prune_lines(base.tree, cluster, ns, compared=compared)
        ]
        yield Finding(
            Risk.HIGH,
            "team-removed",
            cluster,
            team.name,
            team.name,
            (
                f"Argo CD prunes {_namespaces_text(gone)}{_objects_text(lines, compared=compared)}, "
                f"{_PRUNE_NOTE.format(it='it' if len(gone) == 1 else 'them')}; its queues and GPU "
                "quota go with it"
                if gone
                else "its namespaces all move to other teams; its queues and GPU quota go"
            ),
            tuple(lines),
        )


def _removed_namespaces(
    ctx: OnCluster, base: Revision, owners_after: _Owners, *, compared: bool
) -> Iterator[Finding]:
    for ns_name in sorted(set(ctx.old_ns) - set(ctx.new_ns)):
        if (ctx.cluster, ns_name) in owners_after:
            continue  # moved to another team: reported there
        pruned = _prune_lines(base.tree, ctx.cluster, ns_name, compared=compared)
        yield Finding(
            Risk.HIGH,
            "namespace-removed",
            ctx.cluster,
            ctx.name,
            ns_name,
            f"Argo CD prunes namespace {ns_name}{_objects_text(pruned, compared=compared)}, "
            + _PRUNE_NOTE.format(it="it"),
            pruned,
            at=ctx.at(("spec", "namespaces")),
        )


def _team_on_cluster(ctx: OnCluster, base: Platform, owners_before: _Owners) -> Iterator[Finding]:
    """Everything about a team that has namespaces on the cluster after the change."""
    if ctx.arrives:
        yield _team_added(ctx)
    yield from _added_namespaces(ctx, owners_before)
    yield from _changed_namespaces(ctx)
    yield from rbac(ctx)
    yield from images(ctx)
    yield from quota_caps(ctx)
    old_rules: tuple[EgressRule, ...] = ()
    if ctx.before is not None and not ctx.arrives:
        old_rules = ctx.before.egress
    for f in egress(ctx.cluster, ctx.name, old_rules, ctx.after.egress, ctx.where):
        yield _egress_located(ctx, f)
    shared = _cost_center(ctx, base)
    if shared is not None:
        yield shared
    if ctx.before is not None:
        yield from _team_fields(ctx, ctx.before, cost_center_shown=shared is not None)


def _egress_located(ctx: OnCluster, f: Finding) -> Finding:
    """An egress finding on the head's rule for its network (on the rule the change touched,
    where several are), or on the team's `egress` list for one closed."""
    rules = [r.origin.path for r in ctx.after.egress if r.cidr == f.subject]
    opened = f.code == "egress-opened" and rules
    at = ctx.reach_at(*rules) if opened else ctx.at(("spec", "egress"))
    return replace(f, at=at)


def _team_added(ctx: OnCluster) -> Finding:
    """The team comes to the cluster (new, or new here); what it gains is listed apart."""
    team = ctx.after
    listing = ", ".join(
        f"{ns.name} ({ns.purpose}, Pod Security {effective_pod_security(ns)})"
        for _, ns in sorted(ctx.new_ns.items())
    )
    if ctx.before is None:
        description = f" “{team.description}”" if team.description else ""
        approvers = ", ".join(team.codeowners) or "the platform owners"
        lead = (
            f"new team{description}, queue {team.queue}, cost centre {team.cost_center}, "
            f"its file approved by {approvers}"
        )
    else:
        lead = f"team {team.name} comes to {ctx.cluster}, queue {team.queue}"
    return ctx.finding(
        Risk.MEDIUM,
        "team-added",
        team.name,
        f"{lead}: namespaces {listing}",
        ctx.reach_at(("metadata", "name")),
    )


def _added_namespaces(ctx: OnCluster, owners_before: _Owners) -> Iterator[Finding]:
    for ns_name in sorted(set(ctx.new_ns) - set(ctx.old_ns)):
        ns = ctx.new_ns[ns_name]
        old_owner = owners_before.get((ctx.cluster, ns_name))
        at = ctx.at(ns.origin.path)
        if old_owner is not None and old_owner != ctx.name:
            summary = (
                f"namespace {ns_name} moves from team {old_owner} to {ctx.name}: its data stays, "
                f"and admin goes to {_group_list(ctx.prefix_after, ctx.after.owners)}"
            )
            yield ctx.finding(Risk.HIGH, "namespace-moved", ns_name, summary, at)
            continue
        platform_ns = _platform_namespace(ctx, ns_name)
        if platform_ns is not None:
            yield platform_ns
        elif not ctx.arrives:  # a team new here lists its namespaces in team-added
            yield namespace_added(ctx, ns)


def _changed_namespaces(ctx: OnCluster) -> Iterator[Finding]:
    for ns_name in sorted(set(ctx.old_ns) & set(ctx.new_ns)):
        old, new = ctx.old_ns[ns_name], ctx.new_ns[ns_name]
        lines = []
        risk = Risk.LOW
        if old.purpose != new.purpose:
            lines.append(
                f"purpose {old.purpose} → {new.purpose}: its LocalQueue points at "
                f"{ctx.name}-{new.purpose} and it may use other pools"
            )
            risk = Risk.MEDIUM
        old_ps, new_ps = effective_pod_security(old), effective_pod_security(new)
        if old_ps != new_ps:
            looser = POD_SECURITY_RANK[new_ps] < POD_SECURITY_RANK[old_ps]
            lines.append(
                f"Pod Security {old_ps} → {new_ps}" + (" (loosened)" if looser else " (tightened)")
            )
            if looser:  # an exemption from the admission policy it had: high
                risk = Risk.HIGH
        if lines:
            at = ctx.at(new.origin.path)
            yield ctx.finding(risk, "namespace-changed", ns_name, "; ".join(lines), at)


def _platform_namespace(ctx: OnCluster, namespace: str) -> Finding | None:
    cluster = ctx.head_cluster
    component = namespace_owner(ctx.head, cluster, namespace) if cluster is not None else None
    if component is None:
        return None
    return ctx.finding(
        Risk.HIGH,
        "namespace-platform",
        namespace,
        f"namespace {namespace} is where {component} runs: the team's owners would get admin "
        "there, its quota, labels and default-deny NetworkPolicies would apply to "
        f"{component}",
        ctx.at(ctx.new_ns[namespace].origin.path),
    )


def _cost_center(ctx: OnCluster, base: Platform) -> Finding | None:
    """A cost centre the team moves onto (or, new, starts with) that another team uses, on
    either side: the team's GPU hours and spend are reported under it, as that team's."""
    now = ctx.after.cost_center
    was = ctx.before.cost_center if ctx.before is not None else None
    if was == now:
        return None
    others = sorted(
        {
            t.name
            for platform in (base, ctx.head)
            for t in platform.teams.values()
            if t.name != ctx.name and t.cost_center == now
        }
    )
    if not others:
        return None
    whose = ("team " if len(others) == 1 else "teams ") + ", ".join(others)
    change = f"cost centre {was} → {now}" if was is not None else f"cost centre {now}"
    summary = (
        f"{change}, which {whose} {'uses' if len(others) == 1 else 'use'}: the team's GPU hours "
        "and spend are labelled, reported and charged as theirs"
    )
    return ctx.finding(
        Risk.HIGH, "cost-center-shared", now, summary, ctx.at(("spec", "costCenter"))
    )


_HANDLED = (
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
    "domains",
)
"""Team fields compared on their own (`domains`: `renderer.commands.diff.endpoints`); the others are listed as settings."""

_WRITTEN_AT = {
    "accepted_unit": ("spec", "acceptedUnit", "kind"),
    "accepted_per": ("spec", "acceptedUnit", "per"),
}
"""Where the team file writes a setting whose path is not `spec.<camelCase name>`."""


def _team_fields(ctx: OnCluster, before: Team, *, cost_center_shown: bool) -> Iterator[Finding]:
    """Team-wide settings: who approves its file, its queue and priority, everything else."""
    after, name = ctx.after, ctx.name
    if before.codeowners != after.codeowners:
        yield ctx.finding(
            Risk.HIGH,
            "codeowners-changed",
            name,
            "who approves changes to the team's file: "
            f"{', '.join(before.codeowners) or 'the platform owners'} → "
            f"{', '.join(after.codeowners) or 'the platform owners'}",
            ctx.at(("spec", "codeowners")),
        )
    membership = changed_fields(before, after, ("queue", "priority"))
    if membership:
        yield ctx.finding(
            Risk.MEDIUM,
            "team-queue-changed",
            name,
            "; ".join(field_lines(membership))
            + ": the team's workloads are admitted and preempted under other rules",
            ctx.at(*(("spec", n) for n, _, _ in membership)),
        )
    handled = (*_HANDLED, "cost_center") if cost_center_shown else _HANDLED
    changes = changed_fields(before, after, other_fields(Team, handled))
    if changes:
        yield Finding(
            Risk.LOW,
            "team-changed",
            ctx.cluster,
            name,
            name,
            ", ".join(camel(n) for n, _, _ in changes) + " changed",
            field_lines(changes),
            at=ctx.at(*(_WRITTEN_AT.get(n, ("spec", camel(n))) for n, _, _ in changes)),
        )
