"""A scheduled kind's chain: the object the file creates and each run its controller creates
from it are two requests, by two users (a KubeRay RayCronJob: the team's member creates it,
KubeRay's operator each RayJob run)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from renderer.admission import chain as admission_chain
from renderer.admission.apiserver.gate import Outcome, RenderedCluster, Step, UserInfo

KUBERAY_OPERATOR = UserInfo(
    "system:serviceaccount:ray-system:kuberay-operator",
    ("system:serviceaccounts", "system:serviceaccounts:ray-system", "system:authenticated"),
)
"""Who creates a RayCronJob's runs: KubeRay's operator, as its service account (the chart's
`kuberay-operator`, with the groups the API server gives a service account). gpuplane does not
render where it is installed (`ray-system` stands for it): gpuplane's policies tell a team's
request from a controller's by the user alone (`gpuplane-common-labels` leaves out every service
account outside the team namespaces), so any such namespace gets the same answer."""

SUBMITTED_STEPS = (Step.DISCOVERY, Step.RBAC, Step.DECODE, Step.POLICIES)
"""The steps that judge a RayCronJob as the team's member creates it: its kind served, the
member's right to create it, its decoding, the admission policies bound to it (Pod Security
checks no custom kind at create, and no mutating policy or Kueue webhook matches it)."""
RUN_STEPS = (Step.MUTATE, Step.POD_SECURITY, Step.POLICIES)
"""The steps that judge each run KubeRay's operator creates: mutating admission (Kueue's
webhooks, the priority policy), Pod Security at its pods, the admission policies. Its RBAC is
the operator's chart's, which gpuplane does not render; its kind and fields are typed Go."""


def _in_template(outcome: Outcome) -> Outcome:
    """A run's outcome, its fixes pointing into the file: a run's `spec` is written as the
    RayCronJob's `spec.jobTemplate`."""
    refusals = tuple(
        dataclasses.replace(
            r, fix=f"{r.fix} (in spec.jobTemplate: a run's spec is the RayCronJob's)"
        )
        if "spec." in r.fix
        else r
        for r in outcome.refusals
    )
    return dataclasses.replace(outcome, refusals=refusals)


def scheduled_chain(
    submitted: Mapping[str, Any],
    run: Mapping[str, Any],
    namespace: str,
    rendered: RenderedCluster,
    user: UserInfo,
    display: str,
) -> admission_chain.ChainRun:
    """A RayCronJob's chain: the member creates the RayCronJob (`SUBMITTED_STEPS`), KubeRay's
    operator each run (`RUN_STEPS`, as `KUBERAY_OPERATOR`). A step both run says of the
    RayCronJob only what it did not just pass."""
    gates = admission_chain.gates()
    first = admission_chain.run(
        submitted,
        namespace,
        rendered,
        user,
        [(step, gate) for step, gate in gates if step in SUBMITTED_STEPS],
        display,
    )
    later = admission_chain.run(
        run,
        namespace,
        rendered,
        KUBERAY_OPERATOR,
        [(step, gate) for step, gate in gates if step in RUN_STEPS],
        display,
    )
    kept = tuple(
        o for o in first.outcomes if o.step not in RUN_STEPS or o.refused or o.changes or o.notes
    )
    return admission_chain.ChainRun((*kept, *map(_in_template, later.outcomes)), later.obj)
