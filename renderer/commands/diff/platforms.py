"""`gpuplane diff --base REF`: what a change means, not which lines moved.

Both revisions are rendered (`renderer.commands.diff.revision`): their models are compared for
meaning (GPU quota and the `plan` figures that follow from it, teams, namespaces, RBAC subjects,
network egress, pools, queues, schedulers) and their rendered trees (`renderer.output.writer.build_tree`)
for objects added, changed and deleted per cluster and layer. Every finding carries a risk (high,
medium, low; see docs/diff.md for the rules and why). `diff_platforms` orchestrates and returns
immutable data (`findings`), which `markdown`, `json_form` and `text` turn into a sticky
pull-request comment, JSON for tools, or text. This module also compares what belongs to no team:
repository settings, clusters, pools and queues. Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from renderer.commands.diff.background import (
    base_part,
    base_revision,
    head_tree,
    in_background,
)
from renderer.commands.diff.egress import egress
from renderer.commands.diff.endpoints import endpoints
from renderer.commands.diff.evidence import growth_exceptions, pool_evidence
from renderer.commands.diff.field_changes import camel, changed_fields, field_lines, other_fields
from renderer.commands.diff.findings import ClusterHeading, DiffReport, Finding, Risk, Side
from renderer.commands.diff.immutable import immutable_fields
from renderer.commands.diff.objects import objects
from renderer.commands.diff.operators import operators
from renderer.commands.diff.quotas import quotas
from renderer.commands.diff.revision import BothSides, Revision, render, revision_of
from renderer.commands.diff.teams import teams
from renderer.commands.diff.waits import simulated_waits
from renderer.commands.render_context import RenderContext
from renderer.commands.render_index import RenderIndex, outcome_keys
from renderer.findings.diagnostics import has_errors
from renderer.inputs.schema import REPOSITORY_FILE
from renderer.inputs.trace import Trace
from renderer.model.capacity import how_to_request, pool_offers
from renderer.model.identifiers import escaped
from renderer.model.platform import Cluster, Platform, Pool, Queue
from renderer.output.transitions import CommittedTree, committed_tree
from renderer.pipeline import (
    InputCache,
    Loaded,
    SharedOutcomes,
    load_platform,
    render_platform,
    with_policy,
)

HEAD_LABEL = "working tree"


@dataclass(frozen=True, slots=True)
class DiffBase:
    """The base revision as `diff` reads it: the folder its input files are written into, the
    ref the user named (its side's label), the commit it resolved to, and how to wait until
    the folder holds the files (written in a thread while the head loads)."""

    root: Path
    ref: str = "base"
    commit: str | None = None
    ready: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True)
class _BothLoaded:
    """Both sides loaded (without their policy), and what they share before they render:
    `same`, the clusters whose slice and schemas are the same on both sides (they render the
    same: once), with the head's keys; `taken`, those taken from the render index (`_taken`);
    `committed`, `rendered/` at the base commit."""

    head: Loaded
    base: Loaded
    shared: SharedOutcomes
    head_keys: Mapping[str, bytes]
    same: frozenset[str]
    taken: frozenset[str]
    committed: CommittedTree


def diff_platforms(
    base: DiffBase,
    head_root: Path,
    context: RenderContext,
    *,
    head_label: str = HEAD_LABEL,
    on_cluster: Callable[[str, str], None] | None = None,
    trace: Trace | None = None,
) -> DiffReport:
    """Render both folders and report what the change from base to head means.

    When the head does not validate, the report has no findings and carries the head's
    diagnostics (`head_valid` is False). A base that does not validate is compared as far as its
    valid files go, without `plan` figures and without rendered objects. From `context`: its
    validator; `changed`, the input files the change adds or edits, with their changed lines
    (None when unknown), so the head's findings that several files share land on the entry the
    change touched; `index`, the head repository's render index (`gpuplane render` made it):
    the files it loaded, and the clusters the change does not reach (`_taken`), which are then
    not rendered at all; `jobs`, more than 1 renders the base in a worker process
    (`background`) while this one renders the head (the report is the same either way). The
    committed tree the transition rules read is `rendered/` at `base.commit`, not the context's
    `previous`; its `on_cluster`, `listing` and `keep_files` are not read: `on_cluster` here is
    told the side's label and each cluster's name before it is rendered (the CLI's progress
    display). `trace`: replayed on both sides, the report's "Simulated waits" (`waits`).
    """
    both = _load(base, head_root, context)
    if context.jobs > 1 and both.committed:
        sides = _in_parallel(base, head_root, context, both, head_label, on_cluster)
    else:
        sides = _one_after_other(base, head_root, context, both, head_label, on_cluster)
    head, base_side, refused = sides
    if base_side is None:
        return DiffReport(
            base=Side(base.ref, base.commit, True, 0, 0),
            head=head.side,
            clusters=(),
            findings=(),
            pools=(),
            objects_compared=False,
            head_diagnostics=head.diagnostics,
            head_files=head.files,
        )
    return _report(base_side, head, refused, both.same, trace)


def _load(base: DiffBase, head_root: Path, context: RenderContext) -> _BothLoaded:
    """Both sides loaded, most files once (the same bytes on both sides) or taken from the
    index, and which clusters render the same on both sides."""
    index = context.index
    # a cluster whose slice and schemas are the same on both sides renders the same: once
    shared = SharedOutcomes(
        lambda root, loaded: outcome_keys(
            root, loaded, strict_schemas=context.validator.strict_schemas
        ),
        memo_of=index.memo_for if index is not None else None,
    )
    recorded = index.input_cache() if index is not None else None
    inputs: InputCache = recorded if recorded is not None else {}
    committed = committed_tree(head_root, base.commit) if base.commit else CommittedTree({}, "")
    head_loaded = load_platform(head_root, changed=context.changed, inputs=inputs, policy=False)
    if base.ready is not None:
        base.ready()
    base_loaded = load_platform(base.root, inputs=inputs, policy=False)
    head_keys: Mapping[str, bytes] = {}
    same: frozenset[str] = frozenset()
    taken: frozenset[str] = frozenset()
    if not has_errors(head_loaded.diagnostics):
        head_keys = shared.keys(head_root, head_loaded)
        base_keys = shared.keys(base.root, base_loaded)
        same = frozenset(n for n, k in head_keys.items() if base_keys.get(n) == k)
        if index is not None and committed:
            taken = _taken(index, head_root, head_loaded, committed, same, head_keys, shared)
    return _BothLoaded(head_loaded, base_loaded, shared, head_keys, same, taken, committed)


_Sides = tuple[Revision, Revision | None, list[Finding]]
"""The head, the base (None when the head does not validate: nothing is compared) and the
updates the committed tree's transition rules refuse."""


def _in_parallel(
    base: DiffBase,
    head_root: Path,
    context: RenderContext,
    both: _BothLoaded,
    head_label: str,
    on_cluster: Callable[[str, str], None] | None,
) -> _Sides:
    """The base rendered in a worker while this process renders the head: the clusters the same
    on both sides are the head's to render, and their files, the same on both sides, are
    compared with nothing."""
    validator, shared, same = context.validator, both.shared, both.same
    job = partial(base_part, base.root, validator, both.base, same, shared.memo_of)
    with in_background(job, fork=True) as base_result:
        rendered = render_platform(
            head_root,
            validator,
            on_cluster=_told(on_cluster, head_label),
            shared=shared,
            loaded=with_policy(both.head),
        )
        # the tree once the base's files are here: a file made of the same is not dumped
        every = frozenset(rendered.manifests)
        head = revision_of(rendered, head_label, None, taken=both.taken, untreed=every)
        if not head.side.valid:
            return head, None, []
        refused = list(immutable_fields(head_root, head, validator, both.committed))
        part = base_result()
    kept = {n: shared.outcomes[k].keys for n, k in both.head_keys.items() if k in shared.outcomes}
    head = replace(head, tree=head_tree(rendered, part, same | both.taken, kept))
    if on_cluster is not None:
        for name in sorted(both.base.platform.clusters):
            on_cluster(base.ref, name)
    lent = {name: shared.outcomes[both.head_keys[name]] for name in same}
    base_side = base_revision(
        part, both.base, lent, validator, base.ref, base.commit, taken=both.taken
    )
    return head, base_side, refused


def _one_after_other(
    base: DiffBase,
    head_root: Path,
    context: RenderContext,
    both: _BothLoaded,
    head_label: str,
    on_cluster: Callable[[str, str], None] | None,
) -> _Sides:
    """The head rendered, then the base, in this process; a cluster the same on both sides
    once, and its files laid out once."""
    sides = BothSides(both.shared, {}, both.taken)
    head = render(
        head_root,
        context.validator,
        head_label,
        None,
        on_cluster=_told(on_cluster, head_label),
        loaded=with_policy(both.head),
        sides=sides,
    )
    if not head.side.valid:
        return head, None, []
    base_side = render(
        base.root,
        context.validator,
        base.ref,
        base.commit,
        on_cluster=_told(on_cluster, base.ref),
        loaded=with_policy(both.base),
        sides=sides,
    )
    committed = both.committed
    previous = committed if committed else CommittedTree(base_side.tree, base_side.side.label)
    refused = list(immutable_fields(head_root, head, context.validator, previous))
    return head, base_side, refused


def _report(
    base: Revision,
    head: Revision,
    refused: list[Finding],
    same: frozenset[str],
    trace: Trace | None = None,
) -> DiffReport:
    """What the change means, the head and the base rendered: the findings of every topic,
    by risk, the clusters' headings and the pools' GPU totals."""
    findings: list[Finding] = []
    findings += _repository(base.platform, head.platform)
    findings += _clusters(base.platform, head.platform)
    findings += operators(base.platform, head.platform)
    findings += _pools(base.platform, head.platform)
    findings += _queues(base.platform, head.platform)
    findings += teams(base, head)
    findings += endpoints(base.platform, head.platform)
    quota_findings, totals = quotas(base, head, same)
    findings += quota_findings
    waits = None
    if trace is not None:
        simulated, waits = simulated_waits(base, head, trace)
        findings += simulated
    compared = base.side.valid or base.files == 0
    if compared:
        findings += objects(base.tree, head.tree)
        findings += refused
    names = sorted(set(base.platform.clusters) | set(head.platform.clusters))
    headings = []
    for name in names:
        cluster = head.platform.clusters.get(name) or base.platform.clusters[name]
        status = (
            "added"
            if name not in base.platform.clusters
            else "removed"
            if name not in head.platform.clusters
            else "kept"
        )
        headings.append(ClusterHeading(name, cluster.environment, cluster.scheduler, status))
    return DiffReport(
        base=base.side,
        head=head.side,
        clusters=tuple(headings),
        findings=tuple(sorted(findings, key=Finding.sort_key)),
        pools=totals,
        objects_compared=compared,
        head_diagnostics=head.diagnostics,
        head_files=head.files,
        waits=waits,
    )


def _taken(
    index: RenderIndex,
    head_root: Path,
    head_loaded: Loaded,
    committed: CommittedTree,
    same: frozenset[str],
    head_keys: Mapping[str, bytes],
    shared: SharedOutcomes,
) -> frozenset[str]:
    """The clusters taken from the render index instead of rendered, their outcomes put in
    `shared` for both sides: each that the change does not reach (its slice is the same on both
    sides), that the index recorded from the head's slice, checked against the folder the base
    commit has in `rendered/` (the same tree id), and in which no transition rule found anything
    (`RenderIndex.outcomes_for`). Rendering it would give the same findings, the same files on
    both sides (no object changes) and, against that same folder, no refused update."""
    taken = []
    for name, (outcome, previous) in index.outcomes_for(head_root, head_loaded).items():
        if name in same and previous == committed.fingerprint(name):
            shared.outcomes[head_keys[name]] = outcome
            taken.append(name)
    return frozenset(taken)


def _told(on_cluster: Callable[[str, str], None] | None, side: str) -> Callable[[str], None] | None:
    """`on_cluster` for one side: told that side's label with each cluster's name."""
    if on_cluster is None:
        return None
    return lambda name: on_cluster(side, name)


# --- platform-wide and cluster ----------------------------------------------------------------


def _repository(base: Platform, head: Platform) -> list[Finding]:
    before, after = base.repository, head.repository
    if before is None or after is None:
        if before is after:
            return []
        what = "added" if before is None else "removed"
        return [
            Finding(
                Risk.MEDIUM,
                "repository-changed",
                None,
                None,
                REPOSITORY_FILE,
                f"{REPOSITORY_FILE} {what}: the Argo CD source and CODEOWNERS change",
            )
        ]
    changes = changed_fields(before, after, other_fields(type(after), ()))
    if not changes:
        return []
    argo = {"repo_url", "target_revision", "argocd_namespace"}
    names = {name for name, _, _ in changes}
    # who approves changes (CODEOWNERS) and where Argo CD reads from decide every later change;
    # the allowlists decide which registries and networks every team may ask for
    high = {"codeowners", "allowed_images", "allowed_egress"}
    risk = Risk.HIGH if names & high else Risk.MEDIUM if names & argo else Risk.LOW
    return [
        Finding(
            risk,
            "repository-changed",
            None,
            None,
            REPOSITORY_FILE,
            ", ".join(camel(n) for n, _, _ in changes) + " changed",
            field_lines(changes),
        )
    ]


def _clusters(base: Platform, head: Platform) -> Iterator[Finding]:
    for name in sorted(set(base.clusters) | set(head.clusters)):
        before, after = base.clusters.get(name), head.clusters.get(name)
        if before is None and after is not None:
            yield Finding(
                Risk.MEDIUM,
                "cluster-added",
                name,
                None,
                name,
                f"new {after.environment} cluster on {after.provider}, Kubernetes "
                f"{after.kubernetes_version}, scheduler {after.scheduler}",
            )
            yield from egress(name, None, (), after.object_store_egress, "every team namespace")
            continue
        if after is None and before is not None:
            yield Finding(
                Risk.HIGH,
                "cluster-removed",
                name,
                None,
                name,
                "every object gpuplane rendered for this cluster is deleted by Argo CD",
            )
            continue
        assert before is not None and after is not None
        yield from _cluster_changes(before, after)


def _cluster_changes(before: Cluster, after: Cluster) -> Iterator[Finding]:
    name = after.name
    if before.scheduler != after.scheduler:
        yield Finding(
            Risk.HIGH,
            "scheduler-changed",
            name,
            None,
            name,
            f"{before.scheduler} → {after.scheduler}: every queue object is replaced, and "
            "workloads waiting in the old scheduler's queues are not carried over",
        )
    if before.group_prefix != after.group_prefix:
        yield Finding(
            Risk.HIGH,
            "group-prefix-changed",
            name,
            None,
            name,
            f"'{before.group_prefix}' → '{after.group_prefix}': every RoleBinding subject is "
            "renamed; groups the API server does not send with the new prefix lose access, "
            "others may gain it",
        )
    added = sorted(map(escaped, set(after.platform_owners) - set(before.platform_owners)))
    removed = sorted(map(escaped, set(before.platform_owners) - set(after.platform_owners)))
    for group in added:
        yield Finding(
            Risk.HIGH,
            "platform-owners-widened",
            name,
            None,
            group,
            f"group {after.group_prefix}{group} becomes a platform owner (the platform objects "
            "and their Argo CD project)",
        )
    for group in removed:
        yield Finding(
            Risk.LOW,
            "platform-owners-narrowed",
            name,
            None,
            group,
            f"group {before.group_prefix}{group} is no longer a platform owner",
        )
    for namespace in sorted(set(before.reserved_namespaces) - set(after.reserved_namespaces)):
        yield Finding(
            Risk.HIGH,
            "reservation-removed",
            name,
            None,
            namespace,
            f"namespace {namespace} is no longer reserved for the platform: a team may now "
            "declare it, and get admin over whatever runs there",
        )
    yield from egress(
        name,
        None,
        before.object_store_egress,
        after.object_store_egress,
        "every team namespace (object store)",
    )
    handled = ("scheduler", "group_prefix", "platform_owners", "object_store_egress", "addons")
    # reserved_namespaces: released ones above; added ones and teamDefaults stay settings here;
    # addons: `renderer.commands.diff.operators`, rated by what needs each
    changes = changed_fields(before, after, other_fields(Cluster, handled))
    if changes:
        only_text = all(n == "description" for n, _, _ in changes)
        yield Finding(
            Risk.LOW if only_text else Risk.MEDIUM,
            "cluster-changed",
            name,
            None,
            name,
            ", ".join(camel(n) for n, _, _ in changes) + " changed",
            field_lines(changes),
        )


# --- pools and queues ---------------------------------------------------------------------------


def _by_cluster(objects: Mapping[str, Pool] | Mapping[str, Queue]) -> dict[tuple[str, str], Any]:
    return {(o.cluster, o.name): o for o in objects.values()}


def _capacity_lines(pool: Pool) -> dict[str, tuple[int, int]]:
    return {o.resource: (o.guaranteed, o.maximum) for o in pool_offers(pool)}


def _span(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


_SHARING_FIELDS = (
    "accelerator",
    "sharing",
    "mig_layout",
    "replicas",
    "rename_by_default",
    "exposure",
)


def _pools(base: Platform, head: Platform) -> Iterator[Finding]:
    before_all, after_all = _by_cluster(base.pools), _by_cluster(head.pools)
    for key in sorted(set(before_all) | set(after_all)):
        cluster, name = key
        before: Pool | None = before_all.get(key)
        after: Pool | None = after_all.get(key)
        if before is None and after is not None:
            offers = (
                ", ".join(f"{o.guaranteed} {o.resource}" for o in pool_offers(after))
                or "no known resources"
            )
            yield Finding(
                Risk.LOW,
                "pool-added",
                cluster,
                None,
                name,
                f"new {after.workload} pool of {_span(after.nodes.min, after.nodes.max)} x "
                f"{after.gpus_per_node} {after.accelerator} ({after.sharing}): {offers}",
                ((evidence := pool_evidence(head, after, None)).line(),),
                evidence=evidence,
            )
            yield from growth_exceptions(cluster, None, after)
            continue
        if after is None and before is not None:
            yield Finding(
                Risk.HIGH,
                "pool-removed",
                cluster,
                None,
                name,
                f"{_span(before.nodes.min, before.nodes.max)} x {before.gpus_per_node} "
                f"{before.accelerator} leave the platform: its flavor, node labels and "
                "configs are deleted; workloads on it are no longer admitted",
            )
            continue
        assert before is not None and after is not None
        yield from _pool_changes(cluster, before, after, head)
        yield from growth_exceptions(cluster, before, after)


def _pool_changes(cluster: str, before: Pool, after: Pool, head: Platform) -> Iterator[Finding]:
    name = after.name
    if before.nodes != after.nodes or before.gpus_per_node != after.gpus_per_node:
        old, new = _capacity_lines(before), _capacity_lines(after)
        shrinks = any(
            new.get(r, (0, 0))[0] < old[r][0] or new.get(r, (0, 0))[1] < old[r][1] for r in old
        )
        lines = [
            f"nodes {_span(before.nodes.min, before.nodes.max)} → "
            f"{_span(after.nodes.min, after.nodes.max)}, "
            f"{before.gpus_per_node} → {after.gpus_per_node} GPUs per node"
            if before.gpus_per_node != after.gpus_per_node
            else f"nodes {_span(before.nodes.min, before.nodes.max)} → "
            f"{_span(after.nodes.min, after.nodes.max)}"
        ]
        for resource in sorted(set(old) | set(new)):
            o, n = old.get(resource, (0, 0)), new.get(resource, (0, 0))
            if o != n:
                lines.append(f"{resource} {_span(*o)} → {_span(*n)}")
        evidence = pool_evidence(head, after, before.size)
        yield Finding(
            Risk.MEDIUM if shrinks else Risk.LOW,
            "pool-resized",
            cluster,
            None,
            name,
            "; ".join(lines),
            (evidence.line(),),
            evidence=evidence,
        )
    sharing = changed_fields(before, after, _SHARING_FIELDS)
    if sharing:
        old_requests = sorted({how_to_request(o) for o in pool_offers(before)})
        new_requests = sorted({how_to_request(o) for o in pool_offers(after)})
        renamed = old_requests != new_requests
        summary = "; ".join(field_lines(sharing))
        if renamed:
            summary += (
                f"; teams now request {', '.join(new_requests) or 'nothing'} instead of "
                f"{', '.join(old_requests) or 'nothing'}: existing workloads no longer fit"
            )
        yield Finding(
            Risk.HIGH if renamed else Risk.MEDIUM,
            "pool-sharing-changed",
            cluster,
            None,
            name,
            summary,
        )
    handled = ("cluster", "nodes", "gpus_per_node", "growth_exception", *_SHARING_FIELDS)
    changes = changed_fields(before, after, other_fields(Pool, handled))
    if changes:
        yield Finding(
            Risk.LOW,
            "pool-changed",
            cluster,
            None,
            name,
            ", ".join(camel(n) for n, _, _ in changes) + " changed",
            field_lines(changes),
        )


def _queues(base: Platform, head: Platform) -> Iterator[Finding]:
    before_all, after_all = _by_cluster(base.queues), _by_cluster(head.queues)
    for key in sorted(set(before_all) | set(after_all)):
        cluster, name = key
        before: Queue | None = before_all.get(key)
        after: Queue | None = after_all.get(key)
        if before is None and after is not None:
            yield Finding(
                Risk.LOW,
                "queue-added",
                cluster,
                None,
                name,
                f"new queue (cohort) over pools {', '.join(after.pools)}, priorities "
                + ", ".join(f"{p.name}={p.value}" for p in after.priorities),
            )
            continue
        if after is None and before is not None:
            yield Finding(
                Risk.MEDIUM,
                "queue-removed",
                cluster,
                None,
                name,
                "its cohort and priority classes are deleted",
            )
            continue
        assert before is not None and after is not None
        policy = changed_fields(before, after, other_fields(Queue, ("cluster", "description")))
        if policy:
            yield Finding(
                Risk.MEDIUM,
                "queue-policy-changed",
                cluster,
                None,
                name,
                ", ".join(camel(n) for n, _, _ in policy)
                + " changed: admission order and preemption of every team in the cohort",
                field_lines(policy),
            )
        text = changed_fields(before, after, ("description",))
        if text:
            yield Finding(
                Risk.LOW,
                "queue-changed",
                cluster,
                None,
                name,
                "description changed",
                field_lines(text),
            )
