"""The file's other objects a workload needs, and whether the team member may create them.

`kubectl apply -f FILE` creates every object of the file, each in a request of its own, as the
same user. A workload whose pods claim devices from a ResourceClaimTemplate of the file needs
that template to exist: Kueue reads it when it makes the Workload
(`dra.GetResourceRequestsForResourceClaimTemplates`, Kueue v0.19.2 `pkg/dra/claims.go`), and a
template that does not exist leaves the Workload inadmissible (`failed to get claim spec for
ResourceClaimTemplate ...: ... not found`). A team member may not create ResourceClaimTemplates
(renderer/layers/tenancy.py grants no such resource): the API server refuses the template and
creates the workload. fit says so at the workload's RBAC step, then answers for Kueue as if an
administrator had created the template (docs/fit.md, "The chain").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from renderer.admission.apiserver import rbac
from renderer.admission.apiserver.gate import (
    Outcome,
    Refusal,
    RenderedCluster,
    Request,
    Step,
    UserInfo,
)
from renderer.admission.workloads import readers
from renderer.admission.workloads.podsets import Workload

CLAIM_TEMPLATE = ("resource.k8s.io", "ResourceClaimTemplate")


@dataclasses.dataclass(frozen=True)
class Needed:
    """An object of the file the workload needs, and what it is for, in words."""

    obj: Mapping[str, Any]
    name: str
    why: str


def claim_templates(
    data: Any, others: Sequence[Any], cluster: RenderedCluster, namespace: str
) -> list[Needed]:
    """The file's ResourceClaimTemplates the workload's pods claim devices from, in the order
    its pod sets name them; not one gpuplane renders in the namespace under the same name (that
    one is the template Kueue reads, as Argo CD keeps it)."""
    parsed = readers.workload_from(data, others)
    if not isinstance(parsed, Workload):
        return []
    rendered = _rendered_templates(cluster, namespace)
    found: dict[str, Needed] = {}
    for ps in parsed.pod_sets:
        for claim in ps.resource_claims:
            name = claim.template
            if not name or name in found or name in rendered:
                continue
            template = parsed.claim_templates.get(name)
            if isinstance(template, Mapping):
                why = (
                    f"pod set {ps.name} claims devices from ResourceClaimTemplate {name} of this "
                    "file, which the API server then does not create: Kueue finds no such "
                    f"template and never admits the {parsed.kind}"
                )
                found[name] = Needed(template, name, why)
    return list(found.values())


def refusals(
    needed: Sequence[Needed],
    namespace: str,
    user: UserInfo,
    cluster: RenderedCluster,
    source: str,
) -> list[tuple[Needed, Refusal]]:
    """The RBAC step's refusal of each needed object the user may not create, its fix saying
    what the workload loses and what to do instead."""
    found: list[tuple[Needed, Refusal]] = []
    rendered = sorted(_rendered_templates(cluster, namespace))
    instead = (
        f"; or claim one of the templates gpuplane renders in namespace {namespace}: "
        f"{', '.join(rendered)}"
        if rendered
        else ""
    )
    for each in needed:
        outcome = rbac.gate(Request(each.obj, namespace, user, cluster, source=source))
        for refusal in outcome.refusals:
            fix = f"{each.why}. {refusal.fix}{instead}"
            found.append((each, dataclasses.replace(refusal, fix=fix)))
    return found


def with_refusals(
    outcomes: Sequence[Outcome], found: Sequence[tuple[Needed, Refusal]]
) -> tuple[Outcome, ...]:
    """The chain's outcomes with the refusals `found` added to its RBAC step (which then
    refuses), and the change fit assumes to go on: an administrator creates the objects."""
    if not found:
        return tuple(outcomes)
    more = tuple(refusal for _, refusal in found)
    changes = tuple(
        dict.fromkeys(
            f"an administrator creates ResourceClaimTemplate {each.name} of the file"
            for each, _ in found
        )
    )
    merged = list(outcomes)
    at = next((i for i, o in enumerate(merged) if o.step == Step.RBAC), None)
    if at is None:
        first = 1 if merged and merged[0].step == Step.DISCOVERY else 0
        merged.insert(first, Outcome(Step.RBAC, "refused", more, changes))
    else:
        rbac_step = merged[at]
        merged[at] = dataclasses.replace(
            rbac_step,
            status="refused",
            refusals=(*rbac_step.refusals, *more),
            changes=(*rbac_step.changes, *changes),
        )
    return tuple(merged)


def _rendered_templates(cluster: RenderedCluster, namespace: str) -> set[str]:
    return set(cluster.in_namespace(CLAIM_TEMPLATE[1], CLAIM_TEMPLATE[0], namespace))
