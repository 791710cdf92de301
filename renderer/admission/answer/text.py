"""`gpuplane fit`'s answer written out: text for people, JSON for tools, both from one
`FitResult`, so they never disagree."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from renderer.admission.answer.result import (
    ERROR,
    HOST_RESOURCES,
    NEVER,
    WAITS,
    FileFit,
    FitResult,
    amount,
    resource_order,
)
from renderer.findings.diagnostics import inert

ASSUMPTION = "assumes an empty cluster: no other workload holds quota (see docs/fit.md)"
SNAPSHOT = "admitted against the usage of the --usage snapshot (see docs/fit.md)"


def _resources_text(values: Mapping[str, Decimal]) -> str:
    ordered = sorted(values, key=resource_order)
    return "{" + ", ".join(f"{r}: {amount(r, values[r])}" for r in ordered) + "}"


def fit_text(result: FitResult) -> str:
    """The answer for people; ends with a newline."""
    lines = [f"{result.file}: {result.verdict}: {result.summary}"]
    lines.extend(_workload_lines(result))
    lines.extend(_chain_lines(result))
    lines.extend(_queueing_lines(result))
    lines.extend(_reason_lines(result))
    lines.extend(_pod_set_lines(result))
    lines.extend(_quota_lines(result))
    lines.extend(_lender_lines(result))
    lines.extend(_tail_lines(result))
    return _inert_block(lines)


def _workload_lines(result: FitResult) -> list[str]:
    """The workload's kind and name, with where it goes: its cluster and team."""
    if not result.kind:
        return []
    where = f"{result.namespace}/" if result.namespace else ""
    head = f"  {result.kind} {where}{result.name}"
    if result.cluster:
        head += f" on cluster {result.cluster}"
    if result.team:
        head += f" (team {result.team}, {result.purpose} namespace)"
    return [head]


def _queueing_lines(result: FitResult) -> list[str]:
    """How Kueue takes the workload: its integration, queues and priority, and the message
    of the step that decided."""
    lines = []
    if result.integration:
        if not result.pod_sets:  # a RayJob on an existing cluster: Kueue skips it
            how = "it makes no Workload for this object"
        elif result.gang:
            how = "its pods are admitted together, as one Workload"
        else:
            how = "its pods are admitted one by one"
        lines.append(f"  Kueue integration {result.integration}: {how}")
    if result.cluster_queue:
        lines.append(
            f"  LocalQueue {result.local_queue} -> ClusterQueue {result.cluster_queue} "
            f"(cohort {result.cohort})"
        )
    if result.priority_source:
        name = result.priority or "(none)"
        source = result.priority_source
        origin = source if source.startswith("as if") else f"from {source}"
        lines.append(f"  priority {name} = {result.priority_value}, {origin}")
    if result.message:
        lines.append(f"  {result.message_from}: {result.message}")
    return lines


def _reason_lines(result: FitResult) -> list[str]:
    if not result.reasons:
        return []
    head = "why:" if result.verdict in (NEVER, ERROR, WAITS) else "reasons:"
    return [head, *(f"  - {r}" for r in result.reasons)]


def _pod_set_lines(result: FitResult) -> list[str]:
    """Each pod set with its count, its pod's resources and its flavor; then, for a job of
    replicas, how many of them can be admitted at once."""
    if not result.pod_sets:
        return []
    lines = ["pod sets:"]
    width = max(len(ps.name) for ps in result.pod_sets)
    for ps in result.pod_sets:
        count = (
            f"{ps.count}"
            if ps.count == ps.requested_count
            else f"{ps.count} of {ps.requested_count}"
        )
        if ps.flavor:
            target = f"-> {ps.flavor}" + (" (borrows)" if ps.borrows else "")
        else:
            target = "-> no flavor" if ps.tried else "-> not assigned"
        lines.append(f"  {ps.name:<{width}}  {count} x {_resources_text(ps.per_pod)} {target}")
    if result.replicas > 1:
        lines.append(_replicas_line(result))
    return lines


def _replicas_line(result: FitResult) -> str:
    if result.admitted_replicas == result.replicas:
        fate = f"all {result.replicas} can be admitted at once"
    elif result.admitted_replicas == 0:
        fate = "none can be admitted"
    else:
        fate = f"only {result.admitted_replicas} can be admitted at once"
    unit = result.replica_unit
    return f"  each of the {result.replicas} {unit}s is a Workload of its own: {fate}"


def _quota_lines(result: FitResult) -> list[str]:
    """The ClusterQueue's quota per flavor and resource, as a table of aligned columns."""
    if not result.quotas:
        return []
    lines = [
        f"quota of ClusterQueue {result.cluster_queue} (the team's, shared by all its "
        "ClusterQueues), in an empty cluster:"
    ]
    rows = []
    for q in result.quotas:
        limit = (
            "no borrowing limit"
            if q.borrowing_limit is None
            else f"borrowing limit {amount(q.resource, q.borrowing_limit)}"
        )
        row = [
            q.flavor,
            q.resource,
            f"{amount(q.resource, q.requested)} of nominal {amount(q.resource, q.nominal)}",
            f"{limit}, at most {amount(q.resource, q.maximum)}",
        ]
        if q.borrowed > 0:
            row.append(f"borrows {amount(q.resource, q.borrowed)}")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        cells = [f"{row[i]:<{widths[i]}}" for i in range(3)] + list(row[3:])
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _lender_lines(result: FitResult) -> list[str]:
    """The other teams' Cohorts that lend: the accelerators when any lends, else all."""
    accelerators = [x for x in result.lenders if x.resource not in HOST_RESOURCES]
    shown = accelerators or list(result.lenders)
    if not shown:
        return []
    return ["lent by (the other teams' Cohorts):"] + [
        f"  Cohort {lender.cohort} (team {lender.team}) lends up to "
        f"{amount(lender.resource, lender.lendable)} {lender.resource} on {lender.flavor}"
        for lender in shown
    ]


def _tail_lines(result: FitResult) -> list[str]:
    """Preemption, the usage snapshot, notes, and what the answer assumes."""
    lines = []
    if result.preemption:
        lines.append("preemption, once the cluster is busy:")
        lines.extend(f"  - {p}" for p in result.preemption)
    if result.usage is not None:
        lines.extend(result.usage.lines())
    if result.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in result.notes)
    if result.quotas or any(ps.tried for ps in result.pod_sets):  # Kueue assigned flavors
        lines.append(ASSUMPTION if result.usage is None else SNAPSHOT)
    return lines


def _chain_lines(result: FitResult) -> list[str]:
    """The admission chain before Kueue: each refusal with the words the user would see and
    what to change, each mutation, each warning; the steps that passed on one line."""
    if not result.chain:
        return []
    lines = ["admission chain (the API server's order, then Kueue):"]
    passed = [o.step.value for o in result.chain if o.status == "passed" and not o.notes]
    for outcome in result.chain:
        step = outcome.step.value
        for refusal in outcome.refusals:
            where = " (the pods its controller creates)" if refusal.at_pods else ""
            lines.append(f"  {step}: refused by {refusal.source}{where}")
            lines.append(f"    {refusal.message}")
            lines.append(f"    fix: {refusal.fix}")
        done = "goes on as if changed: " if outcome.refused else ""
        lines.extend(f"  {step}: {done}{change}" for change in outcome.changes)
        lines.extend(f"  {step}: {note}" for note in outcome.notes)
    if passed:
        lines.append(f"  passed: {', '.join(passed)}")
    if result.kueue_verdict is not None and result.refusals:
        lines.append(f"  kueue, as if changed: {result.kueue_verdict} (below)")
    return lines


def _chain_json(result: FitResult) -> list[dict[str, Any]]:
    return [
        {
            "step": o.step.value,
            "status": o.status,
            "refusals": [
                {"source": r.source, "message": r.message, "fix": r.fix, "atPods": r.at_pods}
                for r in o.refusals
            ],
            "changes": list(o.changes),
            "warnings": list(o.notes),
        }
        for o in result.chain
    ]


def _inert_block(lines: list[str]) -> str:
    """The lines as one text, each made `inert` on its own before they are joined: a newline
    inside a value from the job file (a name, a label) prints as `\\n` and stays on its line,
    so it can never start a line of its own that reads as fit's answer or a runner command."""
    return "".join(inert(line) + "\n" for line in lines)


def _json_amount(resource: str, value: Decimal | None) -> str | int | None:
    return None if value is None else amount(resource, value)


def file_text(answer: FileFit) -> str:
    """The answer for a whole file: one block per workload (or the file's problem), then the
    objects fit skipped; ends with a newline."""
    blocks = [fit_text(result) for result in answer.results]
    if answer.ignored:
        listed = [f"  - {i.kind or '?'} {i.name}: {i.why}" for i in answer.ignored]
        blocks.append(_inert_block(["ignored (not workloads):", *listed]))
    return "\n".join(blocks)


def file_json(answer: FileFit) -> dict[str, Any]:
    """The answer for a whole file, for tools: the worst verdict, whether every workload can be
    admitted, one object per workload (`fit_json`'s), and the objects fit skipped. `summary`
    and `reasons` are the file's own when it has no workload to check."""
    worst = answer.worst
    return {
        "file": answer.file,
        "verdict": answer.verdict,
        "admissible": answer.admissible,
        "summary": worst.summary,
        "reasons": list(answer.problem.reasons) if answer.problem is not None else [],
        "workloads": [fit_json(result) for result in answer.workloads],
        "ignored": [{"kind": i.kind, "name": i.name, "why": i.why} for i in answer.ignored],
    }


def fit_json(result: FitResult) -> dict[str, Any]:
    """The answer for one workload, for tools: plain JSON types, quantities as Kubernetes
    writes them."""
    return {
        "file": result.file,
        "verdict": result.verdict,
        "admissible": result.admissible,
        "summary": result.summary,
        "assumption": "empty-cluster" if result.usage is None else "snapshot",
        "workload": {"kind": result.kind, "name": result.name, "namespace": result.namespace}
        if result.kind
        else None,
        "gang": result.gang,
        "integration": result.integration,
        "cluster": result.cluster,
        "team": result.team,
        "purpose": result.purpose,
        "localQueue": result.local_queue,
        "clusterQueue": result.cluster_queue,
        "cohort": result.cohort,
        "priority": {
            "name": result.priority,
            "value": result.priority_value,
            "source": result.priority_source,
        }
        if result.priority_source
        else None,
        "podSets": [
            {
                "name": ps.name,
                "count": ps.count,
                "requestedCount": ps.requested_count,
                "perPod": {r: amount(r, v) for r, v in ps.per_pod.items()},
                "flavor": ps.flavor,
                "borrows": ps.borrows,
                "tried": ps.tried,
                "reasons": list(ps.reasons),
            }
            for ps in result.pod_sets
        ],
        "replicas": {
            "requested": result.replicas,
            "admitted": result.admitted_replicas,
            "unit": result.replica_unit,
        },
        "quota": [
            {
                "flavor": q.flavor,
                "resource": q.resource,
                "requested": amount(q.resource, q.requested),
                "nominal": amount(q.resource, q.nominal),
                "borrowingLimit": _json_amount(q.resource, q.borrowing_limit),
                "maximum": amount(q.resource, q.maximum),
                "cohortLendable": amount(q.resource, q.cohort_lendable),
                "borrowed": amount(q.resource, q.borrowed),
            }
            for q in result.quotas
        ],
        "lenders": [
            {
                "cohort": lender.cohort,
                "team": lender.team,
                "flavor": lender.flavor,
                "resource": lender.resource,
                "lendable": amount(lender.resource, lender.lendable),
            }
            for lender in result.lenders
        ],
        "message": result.message,
        "messageFrom": result.message_from,
        "reasons": list(result.reasons),
        "preemption": list(result.preemption),
        "usage": None if result.usage is None else result.usage.to_json(),
        "notes": list(result.notes),
        "chain": _chain_json(result),
        "kueueVerdict": result.kueue_verdict,
    }


__all__ = ["file_json", "file_text", "fit_json", "fit_text"]
