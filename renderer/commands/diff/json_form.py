"""The report as a JSON document for tools, and back: a CI job keeps the JSON and renders from it.

The document's keys are a published format (`version`), so they change here, deliberately.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from fractions import Fraction
from typing import Any

from renderer.commands.diff.field_changes import camel
from renderer.commands.diff.findings import (
    RISKS,
    ClusterHeading,
    DiffReport,
    Finding,
    ObjectChanges,
    PoolEvidence,
    PoolFigures,
    PoolTotals,
    QuotaChange,
    QuotaFigures,
    Risk,
    Side,
    SimulatedWaits,
)
from renderer.commands.simulate.compare_forms import comparison_from_json, comparison_json
from renderer.findings.envelope import check_envelope
from renderer.model.platform import WaitGrowth
from renderer.output.canonical import sorted_keys


def _figures_json(value: QuotaFigures | PoolFigures | PoolEvidence | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {camel(f.name): _number(getattr(value, f.name)) for f in fields(value)}


def _number(value: Any) -> Any:
    """A figure as JSON: a Fraction (`gpuShare`, GPUs per unit) as its exact text, `"1/4"`."""
    return str(value) if isinstance(value, Fraction) else value


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
        "at": f.at,
        "evidence": _figures_json(f.evidence),
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
        "changes": [_finding_json(f) for f in report.findings],
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
    if report.waits is not None:  # only with --trace: the JSON without it is as it was
        body["simulatedWaits"] = _waits_json(report.waits)
    result: dict[str, Any] = sorted_keys(body)
    return result


def _waits_json(waits: SimulatedWaits) -> dict[str, Any]:
    return {
        "bound": {"seconds": waits.bound.seconds, "ratio": waits.bound.ratio},
        "note": waits.note,
        "comparison": None if waits.comparison is None else comparison_json(waits.comparison),
    }


def _waits_from(data: Mapping[str, Any] | None) -> SimulatedWaits | None:
    if data is None:
        return None
    bound = data["bound"]
    comparison = data["comparison"]
    return SimulatedWaits(
        WaitGrowth(bound["seconds"], bound["ratio"]),
        None if comparison is None else comparison_from_json(comparison),
        data["note"],
    )


def _figures_from(kind: type[Any], data: Mapping[str, Any] | None) -> Any:
    if data is None:
        return None
    given = {f.name: data[camel(f.name)] for f in fields(kind) if camel(f.name) in data}
    if isinstance(given.get("gpu_share"), str):  # `_number`'s text; absent in older JSON
        given["gpu_share"] = Fraction(given["gpu_share"])
    return kind(**given)


def report_from_json(data: Mapping[str, Any]) -> DiffReport:
    """The report back from `diff_json`'s data (a CI job may render Markdown from a JSON file)."""
    check_envelope(data, "diff")

    def side(d: Mapping[str, Any]) -> Side:
        return Side(d["label"], d["commit"], d["valid"], d["errors"], d["warnings"])

    findings = []
    for f in data["changes"]:
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
                f.get("at"),
                _figures_from(PoolEvidence, f.get("evidence")),
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
        waits=_waits_from(data.get("simulatedWaits")),
    )
