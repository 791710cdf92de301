"""What output validation could not check, said once per kind instead of once per object.

gpuplane ships no upstream CRDs, so a fresh clone has no schema for Kueue's or Argo's kinds. A
render still goes on (a newcomer is not blocked), but every custom kind it could not check is a
finding: a warning by default, an error with `--strict-schemas` (what this repository's CI runs).
A cluster that pins a release the schema store lacks, while it holds others of that operator, gets
its finding on the `version:` line that pins it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from renderer.findings.diagnostics import Diagnostic, Location, Severity
from renderer.findings.rules import document_rule
from renderer.output.validation import Unchecked

document_rule(
    "schema-unchecked",
    "output",
    """Rendered objects of a custom kind were not checked: no schema for it was found.

gpuplane validates every custom object against its operator's CRD, looked up in `--crds`,
$GPUPLANE_CRDS, the `schemas:` list of gpuplane.yaml, then the schema store (`.gpuplane/schemas/`,
for the release the cluster pins). gpuplane ships no upstream CRDs, so until they are imported the
objects go out unchecked; this is a warning so that a first render is not blocked, and an error
with `--strict-schemas`, which CI should use.

To satisfy it: import the operator's CRDs for the pinned release and commit them,
`gpuplane schemas import CRD-FILES-OR-FOLDER --release VERSION` (release files, or the output of
`kubectl get crd -o yaml`), or `gpuplane schemas pull` from a cluster that runs it; or pass them for
one run with `--crds DIR`. `gpuplane schemas list` shows what the store holds.""",
)
document_rule(
    "schema-release-missing",
    "output",
    """A cluster pins an operator release the schema store has no CRDs for.

The store keeps CRDs per release, and each cluster's objects are checked against the release its
cluster file pins: a ClusterQueue on a cluster pinning Kueue v0.19.2 against v0.19.2's CRD. When
the pinned release is missing but others are there, checking against another release could pass
fields the running operator rejects (or refuse ones it accepts), so the objects are not checked.

To satisfy it: import that release's CRDs, `gpuplane schemas import CRDS --release VERSION` (or
`gpuplane schemas pull` from a cluster that runs it), or pin a release the store holds
(`gpuplane schemas list`).""",
)


@dataclass(frozen=True, slots=True)
class UncheckedObject:
    """One rendered object no schema checked, on which cluster, from which input."""

    cluster: str
    unchecked: Unchecked
    source: Location


def _release(u: Unchecked) -> str:
    return f"{u.pin.title} {u.pin.release}" if u.pin.release else u.pin.title


def _counted(items: dict[str, int]) -> str:
    return ", ".join(f"{kind} ({n})" for kind, n in sorted(items.items()))


def coverage_findings(objects: Sequence[UncheckedObject], *, strict: bool) -> list[Diagnostic]:
    """One finding per unchecked kind and release, or per cluster pinning a missing release."""
    severity = Severity.ERROR if strict else Severity.WARNING
    missing_release: dict[tuple[str, str], list[UncheckedObject]] = {}
    by_kind: dict[tuple[str, str | None, str, str], list[UncheckedObject]] = {}
    for item in objects:
        u = item.unchecked
        if u.pin.release and u.available and u.pin.release not in u.available:
            missing_release.setdefault((item.cluster, u.pin.operator), []).append(item)
        else:
            by_kind.setdefault((u.pin.operator, u.pin.release, u.api_version, u.kind), []).append(
                item
            )
    found: list[Diagnostic] = []
    for (cluster, _), items in sorted(missing_release.items()):
        u = items[0].unchecked
        kinds: dict[str, int] = {}
        for item in items:
            kinds[item.unchecked.kind] = kinds.get(item.unchecked.kind, 0) + 1
        found.append(
            Diagnostic(
                "schema-release-missing",
                f"cluster '{cluster}' pins {_release(u)}, and the schema store holds only "
                f"{', '.join(u.available)} of it: {len(items)} objects are not checked "
                f"({_counted(kinds)})",
                u.pin.where or items[0].source,
                severity=severity,
                hint=f"import its CRDs: `gpuplane schemas import CRDS --release {u.pin.release}` "
                "(or `gpuplane schemas pull` from a cluster running it), or pin a release the "
                "store holds",
            )
        )
    for (_, release, api_version, kind), items in sorted(
        by_kind.items(), key=lambda entry: (entry[0][0], entry[0][1] or "", *entry[0][2:])
    ):
        u = items[0].unchecked
        clusters = sorted({item.cluster for item in items})
        where = "none in --crds, $GPUPLANE_CRDS, gpuplane.yaml's schemas: or the schema store"
        if u.pin.release and u.pin.release in u.available:
            where = f"the schema store's {_release(u)} has no CRD for it"
        objects_text = "1 object" if len(items) == 1 else f"{len(items)} objects"
        release_flag = f" --release {release}" if release else ""
        found.append(
            Diagnostic(
                "schema-unchecked",
                f"{api_version} {kind}: {objects_text} on {', '.join(clusters)} not "
                f"schema-checked, no CRD of {_release(u)} ({where})",
                next((i.unchecked.pin.where for i in items if i.unchecked.pin.where), None)
                or items[0].source,
                severity=severity,
                hint=f"import {u.pin.title}'s CRDs: `gpuplane schemas import CRDS{release_flag}` "
                "(release files or `kubectl get crd -o yaml` output), or `gpuplane schemas pull` "
                "from a cluster running it; `--crds DIR` for one run",
            )
        )
    return found


UncheckedView = Literal["summary", "list", "hide"]
"""How `render` shows the schema-unchecked warnings in text: one summary line (the default),
every kind with its hint, or none (the count stays in JSON, SARIF and the other tool formats)."""

_UNCHECKED = re.compile(r"^\S+ \S+: (\d+) objects? on .*? no CRD of (.+?) \(")


def unchecked_shown(diagnostics: Sequence[Diagnostic], view: UncheckedView) -> list[Diagnostic]:
    """The findings with the schema-unchecked *warnings* collapsed into one (`summary`), kept
    (`list`) or left out (`hide`). Errors (`--strict-schemas`) are always listed one by one: a
    failing run says exactly which kinds failed it."""
    if view == "list":
        return list(diagnostics)
    unchecked = [
        d for d in diagnostics if d.rule == "schema-unchecked" and d.severity is Severity.WARNING
    ]
    rest = [d for d in diagnostics if not any(d is u for u in unchecked)]
    if view == "hide" or not unchecked:
        return rest
    objects = 0
    releases: set[str] = set()
    for d in unchecked:
        match = _UNCHECKED.match(d.message)
        if match:
            objects += int(match.group(1))
            releases.add(match.group(2))
    kinds = "1 custom kind" if len(unchecked) == 1 else f"{len(unchecked)} custom kinds"
    summary = Diagnostic(
        "schema-unchecked",
        f"{kinds} ({objects} objects) not schema-checked: no CRDs of "
        f"{', '.join(sorted(releases, key=str.lower))}",
        Location(unchecked[0].at.file),
        severity=Severity.WARNING,
        hint="`--unchecked list` (or GPUPLANE_UNCHECKED=list) lists each kind and where its "
        "release is pinned, `--unchecked hide` leaves this line out; to check them, import the "
        "CRDs (`gpuplane explain schema-unchecked`), and `--strict-schemas` in CI makes them errors",
    )
    first = next(i for i, d in enumerate(diagnostics) if d is unchecked[0])
    return [*rest[:first], summary, *rest[first:]]
