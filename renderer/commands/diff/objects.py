"""The rendered trees of both revisions compared file by file, per cluster and layer.

This is what Argo CD will apply and prune; the model comparisons say why, this says what.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from renderer.commands.diff.findings import Finding, ObjectChanges, Risk

NOT_RENDERED_FILES = frozenset({"kustomization.yaml", "README.md"})
"""Files of the rendered tree that are not objects: listings for kustomize, the cluster README."""

NOT_APPLIED_FOLDERS = frozenset({"values", "nodes", "templates"})
"""Folders of files that no Argo CD Application applies (Helm values, node bootstraps, team
templates): deleting one prunes nothing."""


def objects(base: Mapping[str, bytes], head: Mapping[str, bytes]) -> Iterator[Finding]:
    grouped: dict[tuple[str, str], dict[str, list[str]]] = {}
    for path in sorted(set(base) | set(head)):
        parts = path.split("/")
        if parts[-1] in NOT_RENDERED_FILES or len(parts) < 3:
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
