"""`gpuplane diff` on a cluster's add-ons: an operator removed, no longer installed, re-installed,
upgraded or reconfigured, rated by what on the cluster needed it at the base.

What needs an operator is `renderer.model.operator_needs.cluster_needs` of the base revision (the
kinds a team namespace lists, the templates of training namespaces, a pool's RDMA resource or
DRA exposure, another add-on), said as the cluster README says it
(`renderer.model.operator_reasons`). The head cannot still need an operator it no longer
declares (rule `operator-missing` refuses such a head), so a removal that the head validates is
one whose users went in the same change: the workloads they left running, the kinds their teams
were submitting yesterday, are what the reviewer weighs.

What a change does on the cluster (docs/gitops.md, `renderer.model.integrations`):

- **removed** (`spec.addons.<key>` deleted): Argo CD prunes its Application; without a
  resources finalizer the controller and its CRDs stay, unmanaged and never upgraded, until
  someone deletes them, and deleting a CRD deletes every object of its kind. Kueue's
  configuration drops its integrations: Kueue stops admitting its kinds. High where something
  needed it at the base; medium for one of the platform's own add-ons; low otherwise.
- **no longer installed** (`enabled: false`): the cluster still serves its kinds, installed by
  someone else; Argo CD prunes the Application and the operator stays. Medium where something
  needs it (its version is now someone else's to keep), low otherwise.
- **installed over a running one** (`enabled: false` dropped): Argo CD applies the chart where
  another install may own the same objects or run a second controller. Medium.
- **version changed**: an upgrade (or downgrade, pin or unpin) of a controller that every
  object of its kinds goes through: CRD versions, webhooks and defaults change. Medium, with
  both versions and what uses it.
- **added**: low. **Other settings** (the GPU Operator's `driverManaged`, the DCGM exporter's
  `serviceMonitor`): medium, as any cluster setting.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.commands.diff.field_changes import changed_fields, field_lines
from renderer.commands.diff.findings import Finding, Risk
from renderer.model.integrations import enabled_frameworks
from renderer.model.operator_reasons import ordered, platform_addon, reasons, title
from renderer.model.operators import BY_ADDON
from renderer.model.platform import Addon, Cluster, Platform

UNPINNED = "unpinned"


def operators(base: Platform, head: Platform) -> Iterator[Finding]:
    """The add-on findings of every cluster on both sides (a cluster added or removed is a
    finding of its own, `cluster-added` or `cluster-removed`)."""
    for name in sorted(set(base.clusters) & set(head.clusters)):
        before, after = base.clusters[name], head.clusters[name]
        needs = reasons(base, before)
        for addon in ordered(set(before.addons) | set(after.addons)):
            yield from _addon(before, after, addon, needs.get(addon, ()))


def _version(addon: Addon) -> str:
    return addon.version or UNPINNED


def _at(cluster: Cluster, addon: Addon | None, *fields: str) -> str:
    """`file:line` in the head's cluster file: the add-on's field (its own line where the file
    does not write the field), or `spec.addons` when the add-on is gone."""
    where = cluster.origin.key("spec", "addons") if addon is None else addon.origin.at(*fields)
    return f"{where.file}:{where.line}"


def _needed(needs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"used by {need}" for need in needs)


def _addon(before: Cluster, after: Cluster, key: str, needs: tuple[str, ...]) -> Iterator[Finding]:
    old, new = before.addons.get(key), after.addons.get(key)
    name = title(key)
    cluster = after.name
    if old is None and new is not None:
        running = " (enabled: false: the cluster already runs it)" if not after.runs(key) else ""
        yield Finding(
            Risk.LOW,
            "operator-added",
            cluster,
            None,
            key,
            f"{name} {_version(new)} declared{running}",
            at=_at(after, new),
        )
        return
    if new is None:
        assert old is not None
        yield _removed(before, after, key, needs)
        return
    assert old is not None
    if before.runs(key) and not after.runs(key):
        yield _disabled(before, after, key, needs)
    elif after.runs(key) and not before.runs(key):
        yield Finding(
            Risk.MEDIUM,
            "operator-enabled",
            cluster,
            None,
            key,
            f"gpuplane now installs {name} {_version(new)} on a cluster that already ran it "
            "(enabled: false dropped): Argo CD applies its chart over the running install",
            _needed(needs),
            at=_at(after, new, "enabled"),
        )
    if old.version != new.version:
        # the version of an operator someone else installs is what the file says, not a change
        risk = Risk.MEDIUM if before.runs(key) and after.runs(key) else Risk.LOW
        yield Finding(
            risk,
            "operator-version-changed",
            cluster,
            None,
            key,
            f"{name} {_version(old)} → {_version(new)}",
            _needed(needs),
            at=_at(after, new, "version"),
        )
    settings = changed_fields(old, new, ("settings",))
    lines = tuple(line for line in field_lines(settings) if not line.startswith("settings.enabled"))
    if lines:
        yield Finding(
            Risk.MEDIUM,
            "operator-changed",
            cluster,
            None,
            key,
            f"{name}'s settings changed",
            tuple(line.replace("settings.", f"addons.{key}.", 1) for line in lines),
            at=_at(after, new),
        )


def _removed(before: Cluster, after: Cluster, key: str, needs: tuple[str, ...]) -> Finding:
    """The add-on no longer declared: high where something on the cluster needed it at the
    base, medium for the platform's own, low for an operator nothing needed."""
    name = title(key)
    details = []
    if before.runs(key):
        details.append(
            "Argo CD prunes its Application: the controller and its CRDs stay, unmanaged, until "
            "deleted, and deleting a CRD deletes every object of its kind"
        )
    operator = BY_ADDON.get(key)
    kept = set(enabled_frameworks(after)) if after.scheduler == "kueue" else set()
    dropped = [
        framework
        for framework in (operator.frameworks if operator is not None else ())
        if before.scheduler == "kueue"
        and framework in enabled_frameworks(before)
        and framework not in kept
    ]
    if dropped:
        details.append(f"Kueue stops admitting its kinds (integrations {', '.join(dropped)})")
    if needs:
        risk = Risk.HIGH
        summary = f"{name} removed; at the base it was needed by {'; '.join(needs)}"
    else:
        risk = Risk.MEDIUM if platform_addon(key) else Risk.LOW
        summary = f"{name} removed; nothing on the cluster needed it at the base"
    return Finding(
        risk,
        "operator-removed",
        after.name,
        None,
        key,
        summary,
        tuple(details),
        at=_at(after, None),
    )


def _disabled(before: Cluster, after: Cluster, key: str, needs: tuple[str, ...]) -> Finding:
    """`enabled: false`: the cluster still serves its kinds, installed by someone else."""
    name = title(key)
    summary = (
        f"{name} is no longer installed by gpuplane (enabled: false): the cluster still serves "
        "its kinds; Argo CD prunes its Application and the operator stays, its version now "
        "someone else's to keep"
    )
    return Finding(
        Risk.MEDIUM if needs else Risk.LOW,
        "operator-disabled",
        after.name,
        None,
        key,
        summary,
        _needed(needs),
        at=_at(after, after.addons[key], "enabled"),
    )
