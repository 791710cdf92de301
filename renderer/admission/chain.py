"""The admission chain: every step a create request meets, in the API server's order, before
Kueue admits the workload (docs/fit.md, "The chain").

`run` hands the object from gate to gate: a gate that mutates hands on the mutated object; one
that refuses says why, in the words the user would see, and hands on the object as if its fix
were made (where that can be done mechanically), so the steps after it, Kueue's admission last,
still answer. `conclude` folds the chain into the workload's answer: any refusal makes it
`never` (the object, or its pods, can never be created as written), and the answer keeps what
Kueue would do once the refusals are fixed (`FitResult.kueue_verdict`).

The gates read the cluster as gpuplane renders it (`rendered.rendered_cluster`): the Namespaces
and their Pod Security labels, the RBAC objects, the admission policies, the LimitRanges and
ResourceQuotas, Kueue's objects. A policy and fit therefore cannot drift apart: what fit
evaluates is what Argo CD applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from renderer.admission.answer.result import NEVER, FitResult, worse
from renderer.admission.apiserver.gate import (
    Outcome,
    RenderedCluster,
    Request,
    Step,
    UserInfo,
)

Gate = Callable[[Request], Outcome]

ORDER: tuple[Step, ...] = (
    Step.DISCOVERY,
    Step.RBAC,
    Step.DECODE,
    Step.MUTATE,
    Step.VALIDATE,
    Step.POD_SECURITY,
    Step.POLICIES,
    Step.KUEUE_WEBHOOK,
    Step.RESOURCE_QUOTA,
)
"""The steps before Kueue, as kube-apiserver runs them for a create (k8s.io/apiserver
`pkg/endpoints/handlers/create.go`: the REST mapping happens in kubectl, authorization in the
filter chain, then decoding, mutating admission, the object's validation, validating
admission; Pod Security, ValidatingAdmissionPolicy, the validating webhooks and ResourceQuota
are validating admission plugins in that order, `pkg/kubeapiserver/options/plugins.go`)."""


@dataclass(frozen=True)
class ChainRun:
    """What the chain made of one object."""

    outcomes: tuple[Outcome, ...]
    obj: Mapping[str, Any]
    """The object as the last gate handed it on: mutated, and changed as the refusals' fixes
    say where fit could make them."""

    @property
    def refused(self) -> bool:
        return any(o.refused for o in self.outcomes)


def gates() -> tuple[tuple[Step, Gate], ...]:
    """The gates fit runs, in `ORDER`. Imported here, on first use, so that a command that never
    checks a job (render, plan) never loads them."""
    from renderer.admission.apiserver import (
        decode,
        discovery,
        kueue_webhooks,
        pod_security,
        policies,
        rbac,
    )

    found: dict[Step, Gate] = {
        Step.DISCOVERY: discovery.gate,
        Step.RBAC: rbac.gate,
        Step.DECODE: decode.gate,
        Step.MUTATE: _mutate,
        Step.POD_SECURITY: pod_security.gate,
        Step.POLICIES: policies.validate_gate,
        Step.KUEUE_WEBHOOK: kueue_webhooks.validate,
    }
    return tuple((step, found[step]) for step in ORDER if step in found)


def _mutate(request: Request) -> Outcome:
    """Mutating admission: the MutatingAdmissionPolicies, then Kueue's defaulting webhooks."""
    from renderer.admission.apiserver import kueue_webhooks, mutating

    return mutating.mutate_gate(request, after=(kueue_webhooks.hook,))


def run(
    obj: Mapping[str, Any],
    namespace: str,
    cluster: RenderedCluster,
    user: UserInfo,
    chosen: Sequence[tuple[Step, Gate]] | None = None,
    source: str = "STDIN",
) -> ChainRun:
    """Hand `obj` (created in `namespace` by `user`, from the file `source`) through every
    gate, in order."""
    current: Mapping[str, Any] = obj
    admitted: Mapping[str, Any] | None = None
    outcomes = []
    for step, gate in gates() if chosen is None else chosen:
        if admitted is None and _rank(step) > _rank(Step.MUTATE):
            admitted = current  # validating admission sees what mutation made of it
        request = Request(current, namespace, user, cluster, source=source, admitted=admitted)
        outcome = gate(request)
        outcomes.append(outcome)
        if outcome.obj is not None:
            current = outcome.obj
    return ChainRun(tuple(outcomes), current)


def _rank(step: Step) -> int:
    return ORDER.index(step) if step in ORDER else len(ORDER)


def conclude(result: FitResult, chain: ChainRun) -> FitResult:
    """The workload's answer with the chain before it: Kueue's answer (for the object as the
    chain handed it on) stays, and a refusal anywhere makes the whole answer `never`."""
    kueue = dataclasses.replace(result, chain=chain.outcomes, kueue_verdict=result.verdict)
    if not chain.refused:
        return kueue
    refusals = [(o, r) for o in chain.outcomes for r in o.refusals]
    steps = sorted({o.step.value for o, _ in refusals}, key=_step_rank)
    count = f"{len(refusals)} refusals" if len(refusals) > 1 else "refused"
    summary = (
        f"{count} before Kueue ({', '.join(steps)}); as if changed, Kueue: "
        f"{result.verdict}: {result.summary}"
    )
    verdict = result.verdict if worse(result.verdict, NEVER) else NEVER  # an error stays one
    return dataclasses.replace(kueue, verdict=verdict, summary=summary)


def _step_rank(value: str) -> int:
    return [s.value for s in ORDER].index(value) if value in [s.value for s in ORDER] else 99
