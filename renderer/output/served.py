"""Is every rendered kind served on its cluster? The backstop of the policy's `operator-missing`.

The policy predicts from the inputs what needs which operator; this check reads what was
actually rendered: every object the layers wrote and every workload template, as the API server
of that cluster would be asked for it. A custom kind is served when the cluster declares the
add-on whose CRDs define it (`renderer.model.operators`) and that release serves the object's
apiVersion; Argo CD's own kinds are served where Argo CD runs. Kubernetes' own kinds are checked
against the cluster version's schemas by the output validator (`output-schema`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from renderer.findings.diagnostics import Diagnostic, Location
from renderer.findings.rules import document_rule
from renderer.model.names import ARGO_CD_KINDS
from renderer.model.operators import served_versions, serves_here, serving
from renderer.model.platform import Cluster
from renderer.output.kubernetes_schemas import is_builtin_group

RULE = "kind-unserved"

document_rule(
    RULE,
    "output",
    """A rendered object or workload template is of a kind its cluster does not serve.

Applied, the object would fail with "no matches for kind" (Argo CD's sync of its layer fails;
a team copying the template gets the error on its first job). `operator-missing` catches the
needs it can see in the inputs; this check reads every object and template actually rendered,
so a need no rule predicted still cannot reach a cluster: the operator whose CRDs define the
kind must be declared in the cluster file, and its release must serve the object's apiVersion.

To satisfy it: declare the add-on the finding names under `spec.addons` of the cluster file
(for example `jobset: {version: 0.12.0}`), or `enabled: false` where the cluster already runs
it; where the release does not serve the apiVersion, pin a release that does.""",
)


def unserved(
    cluster: Cluster, objects: Iterable[tuple[str, Any, Location]]
) -> Iterator[Diagnostic]:
    """A finding per (kind, apiVersion, source line) that the cluster does not serve; objects
    are (what, body, source), `what` naming the object in the message."""
    seen: set[tuple[str, str, Location]] = set()
    for what, body, source in objects:
        api_version = str(body.get("apiVersion", ""))
        kind = str(body.get("kind", ""))
        group, _, version = api_version.rpartition("/")
        if (
            not group
            or is_builtin_group(group)
            or (group == "argoproj.io" and kind in ARGO_CD_KINDS)
        ):
            continue
        key = (api_version, kind, source)
        if key in seen:
            continue
        seen.add(key)
        problem = _problem(cluster, group, version, kind)
        if problem is not None:
            message, hint = problem
            yield Diagnostic(
                RULE,
                f"{what} ({api_version} {kind}) on cluster '{cluster.name}': {message}",
                source,
                notes=(
                    (
                        "the cluster's add-ons are declared here",
                        cluster.origin.key("spec", "addons"),
                    ),
                ),
                hint=hint,
            )


def _problem(cluster: Cluster, group: str, version: str, kind: str) -> tuple[str, str] | None:
    operator = serving(group, kind, version)
    if operator is None:
        return (
            "no add-on gpuplane installs serves this kind",
            "install its operator outside gpuplane and import its CRDs, or stop rendering it",
        )
    if not serves_here(cluster, operator.addon):
        return (
            f"{operator.title} serves it, and the cluster does not install it",
            f"declare `{operator.addon}: {{version: {operator.release}}}` under spec.addons",
        )
    versions = served_versions(operator, group, kind)
    if version not in versions:
        return (
            f"{operator.title} {operator.release} serves {kind} as {', '.join(versions)} only",
            f"write {group}/{versions[0]}",
        )
    return None
