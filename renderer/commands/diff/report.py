"""`gpuplane diff --base REF`: what a change means, not which lines moved.

Both revisions are rendered (`renderer.pipeline.render_platform`): their models are compared for
meaning (GPU quota and the `plan` figures that follow from it, teams, namespaces, RBAC subjects,
network egress, pools, queues, schedulers) and their rendered trees (`renderer.output.writer.build_tree`)
for objects added, changed and deleted per cluster and layer. Every finding carries a risk (high,
medium, low; see docs/diff.md for the rules and why). `diff_platforms` returns immutable data; the
renderers turn it into Markdown for one sticky pull-request comment, JSON for tools, or text.
`checkout_base` materialises the base revision's input files with git. Nothing here prints.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from renderer.commands.plan import build_plan
from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.inputs.schema import KIND_FOLDERS, REPOSITORY_FILE
from renderer.model.capacity import how_to_request, pool_offers
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import Cluster, EgressRule, Namespace, Platform, Pool, Queue, Team
from renderer.output.canonical import sorted_keys
from renderer.output.validation import OutputValidator
from renderer.output.writer import build_tree
from renderer.pipeline import render_platform

VERSION = 1
"""The `version` of the JSON document; bumped when a key is renamed or its meaning changes."""

MARKER = "<!-- gpuplane-diff -->"
"""First line of the Markdown: lets a CI job find and update its one sticky comment."""

MAX_CHARS = 60000
"""Default size limit of the Markdown (GitHub refuses comments over 65,536 characters)."""

HEAD_LABEL = "working tree"


class Risk(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


RISKS = (Risk.HIGH, Risk.MEDIUM, Risk.LOW)

TITLES: dict[str, str] = {
    "repository-changed": "repository settings changed",
    "cluster-added": "cluster added",
    "cluster-removed": "cluster removed",
    "scheduler-changed": "scheduler changed",
    "group-prefix-changed": "RBAC group prefix changed",
    "platform-owners-widened": "platform owners added",
    "platform-owners-narrowed": "platform owners removed",
    "cluster-changed": "cluster settings changed",
    "pool-added": "pool added",
    "pool-removed": "pool removed",
    "pool-resized": "pool resized",
    "pool-sharing-changed": "GPU sharing or exposure changed",
    "pool-changed": "pool settings changed",
    "queue-added": "queue added",
    "queue-removed": "queue removed",
    "queue-policy-changed": "queue policy changed",
    "queue-changed": "queue description changed",
    "team-added": "team added",
    "team-removed": "team removed",
    "namespace-removed": "namespace removed",
    "namespace-moved": "namespace moved to this team",
    "namespace-added": "namespace added",
    "namespace-changed": "namespace changed",
    "rbac-widened": "RBAC widened",
    "rbac-narrowed": "RBAC narrowed",
    "egress-opened": "egress opened",
    "egress-closed": "egress closed",
    "images-widened": "image registries added",
    "images-narrowed": "image registries removed",
    "team-queue-changed": "queue or priority changed",
    "team-changed": "team settings changed",
    "gpu-quota": "GPU quota changed",
    "gpu-affected": "GPU reach changed",
    "objects": "rendered objects",
}
"""Every finding code, in the order findings of one group are listed, with its title."""

DETAILS_LABELS = {
    "namespace-removed": "what Argo CD prunes",
    "team-removed": "what Argo CD prunes",
    "team-added": "image registries",
}
"""The summary line of a finding's collapsed details, by code ("what changed" otherwise)."""

_CODE_ORDER = {code: index for index, code in enumerate(TITLES)}
_QUOTA_CODES = frozenset({"gpu-quota", "gpu-affected"})

ROLES = ("none", "view", "edit", "admin")
"""A group's strongest namespace role, weakest first: the ClusterRoles of viewers, members, owners."""

_ROLE_RISK = {1: Risk.LOW, 2: Risk.MEDIUM, 3: Risk.HIGH}
_POD_SECURITY_RANK = {"privileged": 0, "baseline": 1, "restricted": 2}
_NOT_RENDERED_FILES = frozenset({"kustomization.yaml", "README.md"})
"""Files of the rendered tree that are not objects: listings for kustomize, the cluster README."""


# --- the data -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuotaFigures:
    """One team quota entry on one side, and what `plan` makes of it (None: not computed, because
    that side does not validate)."""

    resource: str
    unit: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    guaranteed: int | None
    maximum: int | None
    reachable: int | None


@dataclass(frozen=True, slots=True)
class QuotaChange:
    """A team's quota on one pool (and MIG profile) before and after; None where absent."""

    pool: str
    profile: str | None
    before: QuotaFigures | None
    after: QuotaFigures | None

    @property
    def resource(self) -> str:
        side = self.after or self.before
        return side.resource if side is not None else ""


@dataclass(frozen=True, slots=True)
class PoolFigures:
    capacity: int
    capacity_max: int
    nominal: int
    guaranteed: int
    lendable: int


@dataclass(frozen=True, slots=True)
class PoolTotals:
    """The sums of a pool resource's quotas before and after (plan's pool rows)."""

    cluster: str
    pool: str
    resource: str
    before: PoolFigures | None
    after: PoolFigures | None


@dataclass(frozen=True, slots=True)
class ObjectChanges:
    """Files of one cluster's layer (or values/nodes folder) added, changed and deleted, by path
    under `rendered/<cluster>/`."""

    layer: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """One change and its risk. `summary` and `details` are plain text that may quote input
    files verbatim; the renderers escape them."""

    risk: Risk
    code: str
    cluster: str | None
    """None: platform-wide (gpuplane.yaml)."""
    team: str | None
    """None: about the cluster itself (its pools, queues, settings, rendered objects)."""
    subject: str
    summary: str
    details: tuple[str, ...] = ()
    quota: QuotaChange | None = None
    objects: ObjectChanges | None = None

    @property
    def title(self) -> str:
        return TITLES.get(self.code, self.code)

    def sort_key(self) -> tuple[str, int, str, int, int, str]:
        """Platform-wide first; per cluster its own findings, then each team's, then objects."""
        group = 2 if self.code == "objects" else 1 if self.team is not None else 0
        return (
            self.cluster or "",
            group,
            self.team or "",
            RISKS.index(self.risk),
            _CODE_ORDER.get(self.code, len(_CODE_ORDER)),
            self.subject,
        )


@dataclass(frozen=True, slots=True)
class Side:
    """One revision: `label` is the ref (or "working tree"), `commit` what it resolved to."""

    label: str
    commit: str | None
    valid: bool
    errors: int
    warnings: int


@dataclass(frozen=True, slots=True)
class ClusterHeading:
    name: str
    environment: str
    scheduler: str
    status: str
    """"added", "removed" or "kept"."""


@dataclass(frozen=True, slots=True)
class DiffReport:
    base: Side
    head: Side
    clusters: tuple[ClusterHeading, ...]
    findings: tuple[Finding, ...]
    pools: tuple[PoolTotals, ...]
    objects_compared: bool
    """False when the base does not render, so its objects could not be compared."""
    head_diagnostics: tuple[Diagnostic, ...] = field(default=(), compare=False)
    head_files: int = field(default=0, compare=False)

    def count(self, risk: Risk) -> int:
        return sum(f.risk is risk for f in self.findings)

    @property
    def head_valid(self) -> bool:
        return self.head.valid


# --- checking out the base ----------------------------------------------------------------------


class BaseRefError(Exception):
    """The base revision cannot be read: not a git repository, an unknown or refused ref."""


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    if git is None:
        raise BaseRefError("git is not installed: `gpuplane diff` reads the base revision with it")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    return subprocess.run(
        [git, "-C", str(repo), *args], input=stdin, capture_output=True, env=env, check=False
    )


def _resolve(repo_root: Path, ref: str) -> tuple[Path, str, str]:
    """(the repository's top folder, the commit REF names, the path of repo_root inside it)."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n\r"):
        raise BaseRefError(f"refusing base ref {ref!r}: a ref must not be empty or start with '-'")
    top = _git(repo_root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaseRefError(
            f"{repo_root} is not in a git repository: --base needs the repository's history"
        )
    toplevel = Path(top.stdout.decode().strip())
    prefix = _git(repo_root, "rev-parse", "--show-prefix").stdout.decode().strip()
    found = _git(toplevel, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise BaseRefError(
            f"unknown revision '{ref}': no branch, tag or commit of this repository has that name "
            "(in CI, fetch the base branch first, e.g. `git fetch origin main` and "
            "`--base origin/main`)"
        )
    return toplevel, found.stdout.decode().strip(), prefix.rstrip("/")


def checkout_base(repo_root: Path, ref: str, into: Path) -> str:
    """Write the input files (the kind folders and gpuplane.yaml) of `repo_root` as they are at
    REF into the folder `into`, and return the commit REF resolved to.

    Blobs are read with `git ls-tree` and `git cat-file --batch` (no shell, no checkout, no
    change to the repository); a symbolic link is recreated as a link, which the loader reports
    as it does in a working tree. Raises BaseRefError for a bad ref or a folder outside git.
    """
    toplevel, commit, prefix = _resolve(repo_root, ref)
    tree = f"{commit}:{prefix}" if prefix else commit
    wanted = (*KIND_FOLDERS, REPOSITORY_FILE)
    listed = _git(toplevel, "ls-tree", "-r", "-z", "--full-name", tree, "--", *wanted)
    if listed.returncode != 0:
        if prefix:  # the folder did not exist at REF: an empty base, everything is new
            return commit
        raise BaseRefError(f"cannot list the files of '{ref}': {listed.stderr.decode().strip()}")
    entries: list[tuple[str, str, PurePosixPath]] = []
    for record in listed.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        path = PurePosixPath(raw_path.decode("utf-8", "surrogateescape"))
        if kind != "blob" or path.is_absolute() or ".." in path.parts:
            continue  # submodules, and nothing git would ever store
        entries.append((mode, sha, path))
    if not entries:
        return commit
    batch = _git(
        toplevel, "cat-file", "--batch", stdin="".join(f"{s}\n" for _, s, _ in entries).encode()
    )
    if batch.returncode != 0:
        raise BaseRefError(f"cannot read the files of '{ref}': {batch.stderr.decode().strip()}")
    data, offset = batch.stdout, 0
    for mode, _, path in entries:
        header_end = data.index(b"\n", offset)
        size = int(data[offset:header_end].split()[2])
        content = data[header_end + 1 : header_end + 1 + size]
        offset = header_end + 1 + size + 1
        target = into.joinpath(*path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(os.fsdecode(content), target)
        else:
            target.write_bytes(content)
    return commit


# --- comparing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Revision:
    platform: Platform
    tree: dict[str, bytes]
    model_ok: bool
    """policy passed (or the revision is empty), so `plan` can be built from it."""
    side: Side
    diagnostics: tuple[Diagnostic, ...]
    files: int


def _render(root: Path, validator: OutputValidator, label: str, commit: str | None) -> _Revision:
    rendered = render_platform(root, validator)
    empty = rendered.files == 0
    diagnostics = tuple(d for d in rendered.diagnostics if not (empty and d.rule == "no-inputs"))
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    model_ok = empty or bool(rendered.manifests) or errors == 0
    tree = build_tree(rendered.manifests, rendered.readmes, rendered.values)
    return _Revision(
        platform=rendered.platform,
        tree=tree,
        model_ok=model_ok,
        side=Side(label, commit, errors == 0, errors, len(diagnostics) - errors),
        diagnostics=diagnostics,
        files=rendered.files,
    )


def diff_platforms(
    base_root: Path,
    head_root: Path,
    validator: OutputValidator,
    *,
    base_ref: str = "base",
    base_commit: str | None = None,
    head_label: str = HEAD_LABEL,
) -> DiffReport:
    """Render both folders and report what the change from base to head means.

    When the head does not validate, the report has no findings and carries the head's
    diagnostics (`head_valid` is False). A base that does not validate is compared as far as its
    valid files go, without `plan` figures and without rendered objects.
    """
    head = _render(head_root, validator, head_label, None)
    if not head.side.valid:
        return DiffReport(
            base=Side(base_ref, base_commit, True, 0, 0),
            head=head.side,
            clusters=(),
            findings=(),
            pools=(),
            objects_compared=False,
            head_diagnostics=head.diagnostics,
            head_files=head.files,
        )
    base = _render(base_root, validator, base_ref, base_commit)
    findings: list[Finding] = []
    findings += _repository(base.platform, head.platform)
    findings += _clusters(base.platform, head.platform)
    findings += _pools(base.platform, head.platform)
    findings += _queues(base.platform, head.platform)
    findings += _teams(base, head)
    quota_findings, totals = _quotas(base, head)
    findings += quota_findings
    compared = base.side.valid or base.files == 0
    if compared:
        findings += _objects(base.tree, head.tree)
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
    )


# --- generic field comparison -----------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A model value as plain data, without source positions, for comparing and showing."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.name != "origin"}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def _changed_fields(
    before: object, after: object, only: Iterable[str]
) -> list[tuple[str, Any, Any]]:
    """(field, before, after) for each named field whose plain value differs."""
    out = []
    for name in only:
        old, new = _plain(getattr(before, name)), _plain(getattr(after, name))
        if old != new:
            out.append((name, old, new))
    return out


def _named(items: list[Any]) -> dict[str, Any] | None:
    """A list of named entries (priorities, add-ons) as a mapping by name, else None."""
    if not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    named = {i["name"]: {k: v for k, v in i.items() if k != "name"} for i in items}
    return named if len(named) == len(items) else None


def _value_lines(path: str, old: Any, new: Any) -> Iterator[str]:
    """`path: old → new` for each leaf that differs, through mappings and named lists."""
    if old == new:
        return
    if isinstance(old, list) and isinstance(new, list):
        old_named, new_named = _named(old), _named(new)
        if old_named is not None and new_named is not None and (old_named or new_named):
            old, new = old_named, new_named
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            yield from _value_lines(f"{path}.{_camel(key)}", old.get(key), new.get(key))
        return
    yield f"{path}: {_show(old)} → {_show(new)}"


def _field_lines(changes: Sequence[tuple[str, Any, Any]]) -> tuple[str, ...]:
    return tuple(
        line for name, old, new in changes for line in _value_lines(_camel(name), old, new)
    )


def _other_fields(kind: type, handled: Iterable[str]) -> tuple[str, ...]:
    skip = {"name", "origin", *handled}
    return tuple(f.name for f in fields(kind) if f.name not in skip)


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
    changes = _changed_fields(before, after, _other_fields(type(after), ()))
    if not changes:
        return []
    argo = {"repo_url", "target_revision", "argocd_namespace"}
    risk = Risk.MEDIUM if any(name in argo for name, _, _ in changes) else Risk.LOW
    return [
        Finding(
            risk,
            "repository-changed",
            None,
            None,
            REPOSITORY_FILE,
            ", ".join(_camel(n) for n, _, _ in changes) + " changed",
            _field_lines(changes),
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
            yield from _egress(name, None, (), after.object_store_egress, "every team namespace")
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
    added = sorted(set(after.platform_owners) - set(before.platform_owners))
    removed = sorted(set(before.platform_owners) - set(after.platform_owners))
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
    yield from _egress(
        name,
        None,
        before.object_store_egress,
        after.object_store_egress,
        "every team namespace (object store)",
    )
    handled = ("scheduler", "group_prefix", "platform_owners", "object_store_egress")
    changes = _changed_fields(before, after, _other_fields(Cluster, handled))
    if changes:
        only_text = all(n == "description" for n, _, _ in changes)
        yield Finding(
            Risk.LOW if only_text else Risk.MEDIUM,
            "cluster-changed",
            name,
            None,
            name,
            ", ".join(_camel(n) for n, _, _ in changes) + " changed",
            _field_lines(changes),
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
            )
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
        yield from _pool_changes(cluster, before, after)


def _pool_changes(cluster: str, before: Pool, after: Pool) -> Iterator[Finding]:
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
        yield Finding(
            Risk.MEDIUM if shrinks else Risk.LOW,
            "pool-resized",
            cluster,
            None,
            name,
            "; ".join(lines),
        )
    sharing = _changed_fields(before, after, _SHARING_FIELDS)
    if sharing:
        old_requests = sorted({how_to_request(o) for o in pool_offers(before)})
        new_requests = sorted({how_to_request(o) for o in pool_offers(after)})
        renamed = old_requests != new_requests
        summary = "; ".join(_field_lines(sharing))
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
    handled = ("cluster", "nodes", "gpus_per_node", *_SHARING_FIELDS)
    changes = _changed_fields(before, after, _other_fields(Pool, handled))
    if changes:
        yield Finding(
            Risk.LOW,
            "pool-changed",
            cluster,
            None,
            name,
            ", ".join(_camel(n) for n, _, _ in changes) + " changed",
            _field_lines(changes),
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
        policy = _changed_fields(before, after, _other_fields(Queue, ("cluster", "description")))
        if policy:
            yield Finding(
                Risk.MEDIUM,
                "queue-policy-changed",
                cluster,
                None,
                name,
                ", ".join(_camel(n) for n, _, _ in policy)
                + " changed: admission order and preemption of every team in the cohort",
                _field_lines(policy),
            )
        text = _changed_fields(before, after, ("description",))
        if text:
            yield Finding(
                Risk.LOW,
                "queue-changed",
                cluster,
                None,
                name,
                "description changed",
                _field_lines(text),
            )


# --- teams --------------------------------------------------------------------------------------


def _namespace_owners(platform: Platform) -> dict[tuple[str, str], str]:
    return {(ns.cluster, ns.name): t.name for t in platform.teams.values() for ns in t.namespaces}


NOT_APPLIED_FOLDERS = frozenset({"values", "nodes", "templates"})
"""Folders of files that no Argo CD Application applies (Helm values, node bootstraps, team
templates): deleting one prunes nothing."""


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
            and parts[3] not in _NOT_RENDERED_FILES
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
    return f" with {_plural(len(lines), 'rendered object')}"


def _roles(team: Team) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, groups in ((1, team.viewers), (2, team.members), (3, team.owners)):
        for group in groups:
            ranks[group] = max(ranks.get(group, 0), rank)
    return ranks


def _effective_pod_security(ns: Namespace) -> str:
    return ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]


def _teams(base: _Revision, head: _Revision) -> Iterator[Finding]:
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
        yield from _egress(
            cluster, team.name, (), team.egress, ", ".join(ns.name for ns in namespaces)
        )


def _team_removed(
    team: Team, base: _Revision, owners_after: Mapping[tuple[str, str], str], compared: bool
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
    base: _Revision,
    head: _Revision,
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
            if looser:
                risk = Risk.MEDIUM
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
        for image in added:
            yield Finding(
                Risk.MEDIUM,
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
    if new_ns:
        yield from _egress(cluster, name, before.egress, after.egress, ", ".join(sorted(new_ns)))
        membership = _changed_fields(before, after, ("queue", "priority"))
        if membership:
            yield Finding(
                Risk.MEDIUM,
                "team-queue-changed",
                cluster,
                name,
                name,
                "; ".join(_field_lines(membership))
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
        )
        changes = _changed_fields(before, after, _other_fields(Team, handled))
        if changes:
            yield Finding(
                Risk.LOW,
                "team-changed",
                cluster,
                name,
                name,
                ", ".join(_camel(n) for n, _, _ in changes) + " changed",
                _field_lines(changes),
            )


# --- egress -------------------------------------------------------------------------------------

_EgressKey = tuple[str, str, int]


def _egress_keys(rules: Iterable[EgressRule]) -> dict[_EgressKey, str]:
    """(cidr, protocol, port) -> the rule's description."""
    return {(r.cidr, r.protocol, p): r.description for r in rules for p in r.ports}


def _covered(key: _EgressKey, others: Iterable[_EgressKey]) -> bool:
    """Whether another rule with the same protocol and port already allows this network."""
    net = ipaddress.ip_network(key[0], strict=False)
    for cidr, protocol, port in others:
        if (protocol, port) != key[1:]:
            continue
        other = ipaddress.ip_network(cidr, strict=False)
        if other.version == net.version and net.subnet_of(other):  # type: ignore[arg-type]
            return True
    return False


def _width(cidr: str) -> str:
    net = ipaddress.ip_network(cidr, strict=False)
    if net.prefixlen == 0:
        return " (any address: the internet)"
    if net.prefixlen <= 8:
        return f" ({net.num_addresses:,} addresses)"
    return ""


def _egress(
    cluster: str,
    team: str | None,
    before: Iterable[EgressRule],
    after: Iterable[EgressRule],
    where: str,
) -> Iterator[Finding]:
    old, new = _egress_keys(before), _egress_keys(after)
    opened = [k for k in new if k not in old and not _covered(k, old)]
    closed = [k for k in old if k not in new and not _covered(k, new)]
    for keys, source, is_open in ((opened, new, True), (closed, old, False)):
        grouped: dict[tuple[str, str], list[int]] = {}
        for cidr, protocol, port in keys:
            grouped.setdefault((cidr, protocol), []).append(port)
        for (cidr, protocol), ports in sorted(grouped.items()):
            port_text = ", ".join(str(p) for p in sorted(ports))
            descriptions = sorted({source[(cidr, protocol, p)] for p in ports} - {""})
            why = f" ({'; '.join(descriptions)})" if descriptions else ""
            if is_open:
                wide = ipaddress.ip_network(cidr, strict=False).prefixlen <= 8
                yield Finding(
                    Risk.HIGH if wide else Risk.MEDIUM,
                    "egress-opened",
                    cluster,
                    team,
                    cidr,
                    f"pods in {where} may now reach {cidr}{_width(cidr)} on {protocol} "
                    f"{port_text}{why}",
                )
            else:
                yield Finding(
                    Risk.LOW,
                    "egress-closed",
                    cluster,
                    team,
                    cidr,
                    f"pods in {where} may no longer reach {cidr} on {protocol} {port_text}{why}",
                )


# --- quota and plan -----------------------------------------------------------------------------

_QuotaKey = tuple[str, str, str, str | None]
"""(cluster, team, pool, profile)"""


def _quota_figures(rev: _Revision) -> dict[_QuotaKey, QuotaFigures]:
    platform = rev.platform
    found: dict[_QuotaKey, QuotaFigures] = {}
    if rev.model_ok:
        for cluster in build_plan(platform).clusters:
            for t in cluster.teams:
                found[(cluster.name, t.team, t.pool, t.profile)] = QuotaFigures(
                    t.resource,
                    t.unit,
                    t.nominal,
                    t.borrowing_limit,
                    t.lending_limit,
                    t.guaranteed,
                    t.maximum,
                    t.reachable,
                )
        return found
    for team in platform.teams.values():
        for q in team.gpus:
            pool = platform.pools.get(q.pool)
            if pool is None:
                continue
            found[(pool.cluster, team.name, q.pool, q.profile)] = QuotaFigures(
                "", "", q.nominal, q.borrowing_limit, q.lending_limit, None, None, None
            )
    return found


def _pool_figures(rev: _Revision) -> dict[tuple[str, str, str], PoolFigures]:
    if not rev.model_ok:
        return {}
    return {
        (c.name, r.pool, r.resource): PoolFigures(
            r.capacity, r.capacity_max, r.nominal, r.guaranteed, r.lendable
        )
        for c in build_plan(rev.platform).clusters
        for r in c.pools
    }


_DERIVED = ("guaranteed", "maximum", "reachable")
_OWN = ("nominal", "borrowing_limit", "lending_limit")


def _loses(before: QuotaFigures | None, after: QuotaFigures | None) -> bool:
    """Whether the team is promised or can reach less than before on this entry."""
    if before is None:
        return False
    if after is None:
        return True
    for name in ("nominal", *_DERIVED):
        old, new = getattr(before, name), getattr(after, name)
        if old is not None and new is not None and new < old:
            return True
    return after.borrowing_limit is not None and (
        before.borrowing_limit is None or after.borrowing_limit < before.borrowing_limit
    )


def _quota_summary(change: QuotaChange) -> str:
    before, after = change.before, change.after
    where = change.pool + (f" {change.profile}" if change.profile else "")
    if before is None and after is not None:
        return f"new quota on {where}: nominal {after.nominal}"
    if after is None and before is not None:
        return f"quota on {where} removed (was nominal {before.nominal})"
    assert before is not None and after is not None
    parts = []
    for name in _OWN:  # None: no limit set
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            parts.append(f"{_camel(name)} {_limit(old)} → {_limit(new)}")
    for name in _DERIVED:  # None: not computed (that side does not validate)
        old, new = getattr(before, name), getattr(after, name)
        if old != new and old is not None and new is not None:
            parts.append(f"{name} {old} → {new}")
    return f"{where}: " + ", ".join(parts)


def _limit(value: int | None) -> str:
    return "unset" if value is None else str(value)


def _quotas(base: _Revision, head: _Revision) -> tuple[list[Finding], tuple[PoolTotals, ...]]:
    old, new = _quota_figures(base), _quota_figures(head)
    findings = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[0], k[1], k[2], k[3] or "")):
        cluster, team, pool, profile = key
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if before is not None and after is not None:
            own = any(getattr(before, n) != getattr(after, n) for n in _OWN)
            derived = any(
                getattr(before, n) is not None and getattr(before, n) != getattr(after, n)
                for n in _DERIVED
            )
            if not own and not derived:
                continue
            code = "gpu-quota" if own else "gpu-affected"
        else:
            code = "gpu-quota"
        change = QuotaChange(pool, profile, before, after)
        findings.append(
            Finding(
                Risk.MEDIUM if _loses(before, after) else Risk.LOW,
                code,
                cluster,
                team,
                f"{pool} {change.resource}".strip(),
                _quota_summary(change),
                quota=change,
            )
        )
    if not base.model_ok:
        return findings, ()
    old_pools, new_pools = _pool_figures(base), _pool_figures(head)
    totals = tuple(
        PoolTotals(*key, old_pools.get(key), new_pools.get(key))
        for key in sorted(set(old_pools) | set(new_pools))
        if old_pools.get(key) != new_pools.get(key)
    )
    return findings, totals


# --- rendered objects ---------------------------------------------------------------------------


def _objects(base: Mapping[str, bytes], head: Mapping[str, bytes]) -> Iterator[Finding]:
    grouped: dict[tuple[str, str], dict[str, list[str]]] = {}
    for path in sorted(set(base) | set(head)):
        parts = path.split("/")
        if parts[-1] in _NOT_RENDERED_FILES or len(parts) < 3:
            continue
        if path not in base:
            state = "added"
        elif path not in head:
            state = "deleted"
        elif base[path] != head[path]:
            state = "changed"
        else:
            continue
        slot = grouped.setdefault((parts[0], parts[1]), {"added": [], "changed": [], "deleted": []})
        slot[state].append("/".join(parts[1:]))
    for (cluster, layer), states in sorted(grouped.items()):
        change = ObjectChanges(
            layer, tuple(states["added"]), tuple(states["changed"]), tuple(states["deleted"])
        )
        counts = [f"{len(v)} {k}" for k, v in states.items() if v]
        applied = layer not in NOT_APPLIED_FOLDERS
        yield Finding(
            Risk.HIGH if change.deleted and applied else Risk.LOW,
            "objects",
            cluster,
            None,
            layer,
            f"{layer}: "
            + ", ".join(counts)
            + (" (Argo CD prunes the deleted ones)" if change.deleted and applied else "")
            + ("" if applied else " (files nothing applies)"),
            objects=change,
        )


# --- JSON ---------------------------------------------------------------------------------------


def _figures_json(value: QuotaFigures | PoolFigures | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {_camel(f.name): getattr(value, f.name) for f in fields(value)}


def _side_json(side: Side) -> dict[str, Any]:
    return {
        "label": side.label,
        "commit": side.commit,
        "valid": side.valid,
        "errors": side.errors,
        "warnings": side.warnings,
    }


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "risk": f.risk.value,
        "code": f.code,
        "title": f.title,
        "cluster": f.cluster,
        "team": f.team,
        "subject": f.subject,
        "summary": f.summary,
        "details": list(f.details),
        "quota": None
        if f.quota is None
        else {
            "pool": f.quota.pool,
            "profile": f.quota.profile,
            "before": _figures_json(f.quota.before),
            "after": _figures_json(f.quota.after),
        },
        "objects": None
        if f.objects is None
        else {
            "layer": f.objects.layer,
            "added": list(f.objects.added),
            "changed": list(f.objects.changed),
            "deleted": list(f.objects.deleted),
        },
    }


def diff_json(report: DiffReport) -> dict[str, Any]:
    """The report as JSON-ready data: camelCase keys in sorted order, findings in report order."""
    body = {
        "version": VERSION,
        "base": _side_json(report.base),
        "head": _side_json(report.head),
        "summary": {risk.value: report.count(risk) for risk in RISKS},
        "objectsCompared": report.objects_compared,
        "clusters": [
            {
                "name": c.name,
                "environment": c.environment,
                "scheduler": c.scheduler,
                "status": c.status,
            }
            for c in report.clusters
        ],
        "findings": [_finding_json(f) for f in report.findings],
        "pools": [
            {
                "cluster": p.cluster,
                "pool": p.pool,
                "resource": p.resource,
                "before": _figures_json(p.before),
                "after": _figures_json(p.after),
            }
            for p in report.pools
        ],
    }
    result: dict[str, Any] = sorted_keys(body)
    return result


def _figures_from(kind: type[Any], data: Mapping[str, Any] | None) -> Any:
    if data is None:
        return None
    return kind(**{f.name: data[_camel(f.name)] for f in fields(kind)})


def report_from_json(data: Mapping[str, Any]) -> DiffReport:
    """The report back from `diff_json`'s data (a CI job may render Markdown from a JSON file)."""
    if data.get("version") != VERSION:
        raise ValueError(f"unsupported diff document version {data.get('version')!r}")

    def side(d: Mapping[str, Any]) -> Side:
        return Side(d["label"], d["commit"], d["valid"], d["errors"], d["warnings"])

    findings = []
    for f in data["findings"]:
        quota = f["quota"]
        objects = f["objects"]
        findings.append(
            Finding(
                Risk(f["risk"]),
                f["code"],
                f["cluster"],
                f["team"],
                f["subject"],
                f["summary"],
                tuple(f["details"]),
                None
                if quota is None
                else QuotaChange(
                    quota["pool"],
                    quota["profile"],
                    _figures_from(QuotaFigures, quota["before"]),
                    _figures_from(QuotaFigures, quota["after"]),
                ),
                None
                if objects is None
                else ObjectChanges(
                    objects["layer"],
                    tuple(objects["added"]),
                    tuple(objects["changed"]),
                    tuple(objects["deleted"]),
                ),
            )
        )
    return DiffReport(
        base=side(data["base"]),
        head=side(data["head"]),
        clusters=tuple(
            ClusterHeading(c["name"], c["environment"], c["scheduler"], c["status"])
            for c in data["clusters"]
        ),
        findings=tuple(findings),
        pools=tuple(
            PoolTotals(
                p["cluster"],
                p["pool"],
                p["resource"],
                _figures_from(PoolFigures, p["before"]),
                _figures_from(PoolFigures, p["after"]),
            )
            for p in data["pools"]
        ),
        objects_compared=data["objectsCompared"],
    )


# --- Markdown -----------------------------------------------------------------------------------

_BADGE = {Risk.HIGH: "🔴 high", Risk.MEDIUM: "🟠 medium", Risk.LOW: "⚪ low"}


def _text(value: object) -> str:
    """Input text that cannot break out of its table cell or line, add HTML, or @-mention."""
    text = " ".join(str(value).split())
    return (
        text.replace("\\", "\\\\")
        .replace("&", "&amp;")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("`", "\\`")
        .replace("@", "@&#8203;")
    )


def _code(value: object) -> str:
    """A name as inline code in a table cell; escaped plain text when it holds a backtick."""
    text = " ".join(str(value).split())
    if "`" in text or not text:
        return _text(text)
    return "`" + text.replace("|", "\\|") + "`"


def _html(value: object) -> str:
    """Text inside an HTML element (a <summary>): Markdown is not read there."""
    text = " ".join(str(value).split())
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _verdict(report: DiffReport) -> str:
    high, medium, low = (report.count(r) for r in RISKS)
    lead = f"**{_plural(high, 'high-risk change')}**" if high else "**No high-risk changes**"
    return f"{lead} · {medium} medium · {low} low"


def _side_text(side: Side) -> str:
    commit = f" ({_code(side.commit[:12])})" if side.commit else ""
    return f"{_code(side.label)}{commit}"


def _table(
    header: Sequence[str], align: Sequence[bool], rows: Iterable[Sequence[str]]
) -> list[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if right else "---" for right in align) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _details(summary: str, items: Iterable[str]) -> list[str]:
    return [f"<details><summary>{_html(summary)}</summary>", "", *items, "", "</details>", ""]


def _arrow(before: object, after: object, absent: str = "-") -> str:
    old = absent if before is _ABSENT else _limit_cell(before)
    new = absent if after is _ABSENT else _limit_cell(after)
    return new if old == new else f"{old} → {new}"


_ABSENT = object()


def _limit_cell(value: object) -> str:
    return "?" if value is None else str(value)


def _quota_cell(change: QuotaChange, name: str) -> str:
    before = _ABSENT if change.before is None else getattr(change.before, name)
    after = _ABSENT if change.after is None else getattr(change.after, name)
    if name == "borrowing_limit":
        before = "unlimited" if before is None else before
        after = "unlimited" if after is None else after
    elif name == "lending_limit":
        before = "unset" if before is None else before
        after = "unset" if after is None else after
    return _arrow(before, after)


QUOTA_LEGEND = (
    "Counts in the pool's unit (GPUs, MIG instances or time-slicing replicas), before → after. "
    "guaranteed = nominal - lendingLimit (all of nominal when unset); maximum = nominal + "
    "borrowingLimit, capped by the pool; reachable = what Kueue can admit for the team on an "
    "empty cluster, given what the cohort lends. *affected*: the team's own quota is unchanged; "
    "another team's quota or the pool moved its figures."
)


def _quota_lines(findings: Sequence[Finding]) -> list[str]:
    rows = []
    for f in findings:
        assert f.quota is not None
        team = _text(f.team or "") + (" *(affected)*" if f.code == "gpu-affected" else "")
        pool = _text(f.quota.pool) + (f" {_code(f.quota.profile)}" if f.quota.profile else "")
        rows.append(
            [
                team,
                pool,
                _code(f.quota.resource) if f.quota.resource else "?",
                *(_quota_cell(f.quota, n) for n in (*_OWN, *_DERIVED)),
                _BADGE[f.risk],
            ]
        )
    header = (
        "team",
        "pool",
        "resource",
        "nominal",
        "borrowing limit",
        "lending limit",
        "guaranteed",
        "maximum",
        "reachable",
        "risk",
    )
    align = (False, False, False, True, True, True, True, True, True, False)
    return ["#### GPU quota", "", *_table(header, align, rows), "", QUOTA_LEGEND, ""]


def _pool_total_lines(totals: Sequence[PoolTotals]) -> list[str]:
    rows = []
    for t in totals:
        cells = []
        for name in ("capacity", "nominal", "guaranteed", "lendable"):
            before = _ABSENT if t.before is None else getattr(t.before, name)
            after = _ABSENT if t.after is None else getattr(t.after, name)
            cells.append(_arrow(before, after))
        before_free = _ABSENT if t.before is None else t.before.capacity - t.before.nominal
        after_free = _ABSENT if t.after is None else t.after.capacity - t.after.nominal
        cells.append(_arrow(before_free, after_free))
        rows.append([_text(t.pool), _code(t.resource), *cells])
    header = ("pool", "resource", "capacity", "nominal", "guaranteed", "lendable", "free")
    align = (False, False, True, True, True, True, True)
    return ["Pool totals:", "", *_table(header, align, rows), ""]


def _finding_lines(findings: Sequence[Finding]) -> list[str]:
    rows = [[_BADGE[f.risk], _text(f.title), _text(f.summary)] for f in findings]
    lines = [*_table(("risk", "change", "what"), (False, False, False), rows), ""]
    for f in findings:
        if f.details:
            label = DETAILS_LABELS.get(f.code, "what changed")
            lines += _details(
                f"{f.subject}: {label} ({len(f.details)})",
                [f"- {_text(d)}" for d in f.details],
            )
    return lines


def _object_lines(findings: Sequence[Finding]) -> list[str]:
    rows = []
    files: list[str] = []
    for f in findings:
        assert f.objects is not None
        o = f.objects
        rows.append(
            [
                _code(o.layer),
                str(len(o.added)),
                str(len(o.changed)),
                str(len(o.deleted)),
                _BADGE[f.risk],
            ]
        )
        files += [f"- deleted {_code(p)}" for p in o.deleted]
        files += [f"- changed {_code(p)}" for p in o.changed]
        files += [f"- added {_code(p)}" for p in o.added]
    header = ("layer", "added", "changed", "deleted", "risk")
    lines = ["#### Rendered objects", ""]
    lines += _table(header, (False, True, True, True, False), rows)
    lines.append("")
    lines += _details(f"{_plural(len(files), 'file')}", files)
    return lines


def _cluster_title(heading: ClusterHeading | None, name: str) -> str:
    if heading is None:
        return f"### {_code(name)}"
    status = {"added": " · new", "removed": " · removed"}.get(heading.status, "")
    return f"### {_code(name)} ({_text(heading.environment)}, {_text(heading.scheduler)}){status}"


def _full_markdown(report: DiffReport) -> list[str]:
    lines = [MARKER]
    if not report.findings:
        lines += [
            f"**No changes**: the {_text(report.head.label)} renders the same platform as "
            f"{_side_text(report.base)}.",
            "",
        ]
        return lines
    lines += [_verdict(report), ""]
    lines.append(
        f"`gpuplane diff`: the {_text(report.head.label)} against {_side_text(report.base)}, "
        "grouped by cluster and team."
    )
    lines.append("")
    if not report.base.valid:
        lines += [
            f"> ⚠️ The base does not validate ({_plural(report.base.errors, 'error')}): files "
            "that fail there count as added, and rendered objects are not compared.",
            "",
        ]
    rows = []
    for risk in RISKS:
        kinds: dict[str, int] = {}
        for f in report.findings:
            if f.risk is risk:
                kinds[f.title] = kinds.get(f.title, 0) + 1
        what = ", ".join(
            f"{title} x{n}" if n > 1 else title
            for title, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        rows.append([_BADGE[risk], str(report.count(risk)), _text(what) or "-"])
    lines += _table(("risk", "changes", "what"), (False, True, False), rows)
    lines.append("")
    headings = {c.name: c for c in report.clusters}
    groups: dict[str | None, list[Finding]] = {}
    for f in report.findings:
        groups.setdefault(f.cluster, []).append(f)
    if None in groups:
        lines += ["### Platform-wide", "", *_finding_lines(groups.pop(None))]
    for cluster in sorted(c for c in groups if c is not None):
        found = groups[cluster]
        lines += [_cluster_title(headings.get(cluster), cluster), ""]
        own = [f for f in found if f.team is None and f.code != "objects"]
        if own:
            lines += _finding_lines(own)
        quota = [f for f in found if f.code in _QUOTA_CODES]
        if quota:
            lines += _quota_lines(sorted(quota, key=lambda f: (f.team or "", f.subject)))
        totals = [t for t in report.pools if t.cluster == cluster]
        if totals:
            lines += _pool_total_lines(totals)
        teams = sorted({f.team for f in found if f.team is not None and f.code not in _QUOTA_CODES})
        for team in teams:
            lines += [f"#### Team {_code(team)}", ""]
            lines += _finding_lines(
                [f for f in found if f.team == team and f.code not in _QUOTA_CODES]
            )
        objects = [f for f in found if f.code == "objects"]
        if objects:
            lines += _object_lines(objects)
    if not report.objects_compared:
        lines += ["_Rendered objects were not compared: the base does not render._", ""]
    return lines


def diff_markdown(report: DiffReport, *, max_chars: int = MAX_CHARS) -> str:
    """GitHub-flavoured Markdown for one sticky pull-request comment, at most `max_chars` long.

    The first line is a hidden marker (MARKER) for the CI job that updates the comment. When the
    report is longer, it is cut at a line boundary outside any table header, every `<details>`
    left open is closed, and a note says how many lines were left out.
    """
    text = "\n".join(_full_markdown(report)).rstrip("\n") + "\n"
    if len(text) <= max_chars:
        return text
    return _truncate(text.rstrip("\n").split("\n"), max_chars, report.base.label)


def _truncate(lines: list[str], max_chars: int, ref: str) -> str:
    depth = 0
    depths = [0]  # open <details> after lines[:k]
    for line in lines:
        if line.startswith("<details>"):
            depth += 1
        elif line == "</details>":
            depth -= 1
        depths.append(depth)
    keep = 2  # the marker and the verdict, always
    used = len(lines[0]) + 1 + len(lines[1]) + 1
    best = keep
    for k in range(keep, len(lines) + 1):
        if k > keep:
            used += len(lines[k - 1]) + 1
        omitted = len(lines) - k
        note = _note(omitted, ref)
        closing = len("\n</details>\n") * depths[k]
        if used + closing + len(note) + 2 > max_chars:
            break
        if _cuttable(lines, k):
            best = k
    kept = lines[:best]
    while kept and kept[-1] == "":
        kept.pop()
    out = kept + ["", "</details>"] * depths[best]
    text = "\n".join(out) + "\n\n" + _note(len(lines) - best, ref) + "\n"
    return text


def _cuttable(lines: Sequence[str], k: int) -> bool:
    """Whether the Markdown may end after lines[:k]: never between a table's header and its
    delimiter row, never after a table without rows, a heading or a line introducing a block."""
    if k == len(lines):
        return True
    if lines[k].startswith("|-"):
        return False
    previous = next((line for line in reversed(lines[:k]) if line), "")
    return not (previous.startswith(("#", "|-", "<details>")) or previous.endswith(":"))


def _note(omitted: int, ref: str) -> str:
    return (
        f"**… {_plural(omitted, 'more line')} truncated**; run `gpuplane diff --base "
        f"{ref if '`' not in ref else 'REF'}` locally for the full report."
    )


# --- text ---------------------------------------------------------------------------------------


def diff_text(report: DiffReport) -> str:
    """For people at a terminal: one line per finding, grouped by cluster and team."""
    if not report.findings:
        return f"no changes: the {report.head.label} renders the same platform as {report.base.label}\n"
    high, medium, low = (report.count(r) for r in RISKS)
    commit = f" ({report.base.commit[:12]})" if report.base.commit else ""
    lines = [
        f"{report.head.label} against {report.base.label}{commit}: "
        f"{high} high, {medium} medium, {low} low"
    ]
    if not report.base.valid:
        lines.append(
            f"note: the base does not validate ({_plural(report.base.errors, 'error')}); "
            "rendered objects not compared"
        )
    current: tuple[str | None, str | None, bool] | None = None
    for f in report.findings:
        group = (f.cluster, f.team, f.code == "objects")
        if group != current:
            current = group
            where = f.cluster or "platform-wide"
            if f.team:
                where += f" / team {f.team}"
            elif f.code == "objects":
                where += " / rendered objects"
            lines += ["", where]
        lines.append(f"  {f.risk.value.upper():<6} {f.title}: {' '.join(f.summary.split())}")
        if f.objects is not None:
            lines += [f"           deleted {p}" for p in f.objects.deleted]
        lines += [f"           {' '.join(d.split())}" for d in f.details]
    return "\n".join(lines) + "\n"
