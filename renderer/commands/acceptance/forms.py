"""The three forms of an acceptance report: text for a terminal, Markdown for a pull-request
comment or job summary, JSON for tools. They only render the judged data; nothing here prints.
"""

from __future__ import annotations

import json
from typing import Any, Final

from renderer.commands.acceptance.judge import FORMULAS
from renderer.commands.acceptance.readable import num, oneline
from renderer.commands.acceptance.results import (
    AcceptanceReport,
    Check,
    Cost,
    Device,
    LinkRow,
    NodeRow,
    NvlinkShare,
    Outlier,
    PoolAcceptance,
    Status,
    Verdict,
)
from renderer.findings.diagnostics import Severity, finding_lines, inert_lines
from renderer.output import markdown_escape

# --- cell text --------------------------------------------------------------------------------


def _money(value: float | None, currency: str) -> str:
    if value is None:
        return "n/a"
    text = f"{value:,.2f}" if value >= 1 else f"{value:.4g}"
    return f"{text} {currency}"


# a result file's value (a number or a yes/no), not a switch: positional like any value
def _value(value: float | bool | None, unit: str) -> str:  # noqa: FBT001
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = num(value)
    return f"{text} {unit}" if unit else text


def _measured(check: Check) -> str:
    if check.verdict is Verdict.MISSING:
        return "no result"
    if check.verdict is Verdict.NOT_REPORTED:
        return "not reported"
    if check.measured is None:
        return "failed"
    return _value(check.measured, check.unit)


def _threshold(check: Check) -> str:
    if check.comparison is None or check.threshold is None:
        return "-"
    if isinstance(check.threshold, bool):
        return "yes" if check.threshold else "no"
    symbol = {">=": "≥", "<=": "≤", "==": "="}[check.comparison]
    return f"{symbol} {_value(check.threshold, check.unit)}"


_TEXT_VERDICT: Final = {
    Verdict.PASS: "pass",
    Verdict.FAIL: "FAIL",
    Verdict.MISSING: "MISSING",
    Verdict.MEASURED: "measured only",
    Verdict.NOT_REPORTED: "not reported",
    Verdict.NOT_COMPARABLE: "NOT COMPARABLE",
}
_MD_VERDICT: Final = {
    Verdict.PASS: "✅ pass",
    Verdict.FAIL: "❌ **fail**",
    Verdict.MISSING: "❌ **missing**",
    Verdict.MEASURED: "📏 measured only",
    Verdict.NOT_REPORTED: "⚪ not reported",
    Verdict.NOT_COMPARABLE: "⚠️ **not comparable**",
}
_TEXT_STATUS: Final = {
    Status.PASSED: "passed",
    Status.FAILED: "FAILED",
    Status.NOT_COMPARABLE: "NOT COMPARABLE",
}
_MD_STATUS: Final = {
    Status.PASSED: ("✅", "passed"),
    Status.FAILED: ("❌", "failed"),
    Status.NOT_COMPARABLE: ("⚠️", "not comparable"),
}
NOT_COMPARABLE: Final = (
    "not accepted: results measured on the CPU, or on a device not shown to be the pool's "
    "accelerator, are not comparable to its thresholds (neither a pass nor a hardware failure); "
    "run the probes on the pool's nodes, as the rendered acceptance workflow does"
)


def _not_comparable(report: AcceptanceReport) -> bool:
    """Whether the report says why results measured elsewhere are not counted."""
    return bool(report.elsewhere or report.count(Verdict.NOT_COMPARABLE))


def _headline(report: AcceptanceReport) -> str:
    failed = report.count(Verdict.FAIL)
    missing = report.count(Verdict.MISSING)
    passed = report.count(Verdict.PASS)
    parts = [
        f"{len(report.pools)} pool{'s' if len(report.pools) != 1 else ''}",
        f"{passed} passed",
        f"{failed} failed",
        f"{missing} missing",
        f"{report.count(Verdict.MEASURED)} measured only",
    ]
    elsewhere = report.count(Verdict.NOT_COMPARABLE)
    if elsewhere:
        parts.append(f"{elsewhere} not comparable")
    if report.elsewhere:
        results = f"{report.elsewhere} result{'s' if report.elsewhere != 1 else ''}"
        parts.append(f"{results} not shown to be from the pool's accelerator")
    errors = sum(d.severity is Severity.ERROR for d in report.findings)
    if errors:
        parts.append(f"{errors} result file{'s' if errors != 1 else ''} not counted")
    return ", ".join(parts)


def _pool_title(pool: PoolAcceptance) -> str:
    return (
        f"{pool.cluster} / {pool.pool} ({pool.accelerator}, "
        f"{num(pool.gpu_hour)} {pool.currency} per GPU-hour)"
    )


def _nvlink_text(share: NvlinkShare, accelerator_key: str) -> str:
    if share.nvlink_gbps is None or share.share is None:
        return (
            f"all-reduce {num(share.busbw_gbps)} GB/s; the catalog has no NVLink figure for "
            f"{accelerator_key} (PCIe only)"
        )
    percent = f"{share.share:.0%}" if share.share >= 0.1 else f"{share.share:.2%}"
    return (
        f"all-reduce {num(share.busbw_gbps)} GB/s is {percent} of the catalog's "
        f"NVLink figure for {accelerator_key} ({num(share.nvlink_gbps)} GB/s per GPU, total "
        "bidirectional): indicative only"
    )


def _elsewhere(pool: PoolAcceptance) -> list[tuple[str, list[str]]]:
    """Each sentence about a device not shown to be the pool's accelerator, with the result
    files it is true of."""
    found: dict[str, list[str]] = {}
    for device in pool.devices:
        if not device.comparable:
            found.setdefault(device.message, []).append(device.result)
    return list(found.items())


def _noted(check: Check) -> bool:
    """Whether a check's note is shown under the table: a not comparable figure's is the
    device line above it, said once."""
    return bool(check.note) and check.verdict is not Verdict.NOT_COMPARABLE


def _cost_text(cost: Cost) -> str:
    return (
        f"{cost.step}: {_money(cost.value, cost.currency)} {cost.unit} = {cost.formula} "
        f"(GPUs {cost.gpus_source})"
    )


# --- text -------------------------------------------------------------------------------------


def _columns(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row))).rstrip()
        for row in rows
    ]


def report_text(report: AcceptanceReport) -> str:
    """For people at a terminal: findings, then per pool a table, its references and costs."""
    verdict = _TEXT_STATUS[report.status].upper()
    lines = [*finding_lines(report.findings, lambda text: oneline(text, 400))]
    if lines:
        lines.append("")
    lines += [f"acceptance {verdict}: {_headline(report)}"]
    if _not_comparable(report):
        lines.append(NOT_COMPARABLE)
    lines.append("")
    for pool in report.pools:
        lines.append(f"{_pool_title(pool)}: {_TEXT_STATUS[pool.status]}")
        lines += [
            f"  ! {message} ({', '.join(oneline(f, 120) for f in files)})"
            for message, files in _elsewhere(pool)
        ]
        rows = [["step", "check", "measured", "threshold", "verdict", "result"]]
        rows += [
            [
                c.step,
                c.label,
                _measured(c),
                _threshold(c),
                _TEXT_VERDICT[c.verdict],
                oneline(c.result or "-", 120),
            ]
            for c in pool.checks
        ]
        lines += _columns(rows)
        lines += [f"  ! {c.step} {c.label}: {c.note}" for c in pool.checks if _noted(c)]
        lines += [f"  reference: {_nvlink_text(n, pool.accelerator)}" for n in pool.nvlink]
        lines += [f"  cost: {_cost_text(c)}" for c in pool.costs]
        lines += _nodes_text(pool)
        lines.append("")
    lines += [f"{term}: {text}" for term, text in FORMULAS]
    return inert_lines("\n".join(lines)) + "\n"  # no line a CI runner obeys


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{num(value)} GB/s"


def _slowest(pool: PoolAcceptance) -> str | None:
    """The slowest node and link of the node check, by name."""
    parts = []
    measured = [n for n in pool.nodes if n.intra_busbw_gbps is not None]
    if measured:
        node = measured[0]
        parts.append(f"slowest node {node.node} ({_gbps(node.intra_busbw_gbps)} intra-node)")
    if pool.links:
        link = pool.links[0]
        parts.append(f"slowest link {link.subject} ({_gbps(link.busbw_gbps)})")
    return ", ".join(parts) or None


def _outlier_text(o: Outlier) -> str:
    return f"{o.subject} {o.figure} {num(o.value)} GB/s, median {num(o.median)} GB/s"


def _nodes_text(pool: PoolAcceptance) -> list[str]:
    """The node check's per-node and per-link tables, slowest first, and its outliers."""
    if not pool.nodes and not pool.links:
        return []
    lines = [f"  nodes: {oneline(_slowest(pool) or 'no figures', 400)}"]
    rows = [["node", "ranks", "healthy", "intra-node busbw", "matmul", "verdict", "why"]]
    rows += [
        [
            oneline(n.node, 120),
            str(n.ranks),
            "yes" if n.healthy else "no",
            _gbps(n.intra_busbw_gbps),
            "-" if n.matmul_tflops is None else f"{num(n.matmul_tflops)} TFLOPS",
            _TEXT_VERDICT[n.verdict],
            oneline(n.why or "-", 200),
        ]
        for n in pool.nodes
    ]
    lines += _columns(rows, "    ")
    if pool.links:
        rows = [["link", "busbw", "verdict"]]
        rows += [
            [oneline(link.subject, 240), _gbps(link.busbw_gbps), _TEXT_VERDICT[link.verdict]]
            for link in pool.links
        ]
        lines += _columns(rows, "    ")
    lines += [f"  ! outlier: {oneline(_outlier_text(o), 400)}" for o in pool.outliers]
    return lines


# --- Markdown ---------------------------------------------------------------------------------


def _cell(value: object, *, table: bool = False) -> str:
    """Text of a result file in the Markdown, cut to one line of 400 characters and escaped by
    the one Markdown escaper (`renderer.output.markdown_escape`)."""
    return markdown_escape.text(oneline(str(value), 400), table=table)


def _code(value: str, *, table: bool = False) -> str:
    """A file name as inline code, inert."""
    return markdown_escape.code(oneline(value, 120), table=table)


def report_markdown(report: AcceptanceReport) -> str:
    """GitHub-flavoured Markdown for a pull-request comment or a job summary."""
    mark, status = _MD_STATUS[report.status]
    lines = [f"# {mark} Acceptance {status}", "", _cell(_headline(report)), ""]
    if _not_comparable(report):
        lines += [_cell(NOT_COMPARABLE[:1].upper() + NOT_COMPARABLE[1:]) + ".", ""]
    if report.findings:
        lines += ["## Result files not counted", ""]
        for d in report.findings:
            hint = f" ({_cell(d.hint)})" if d.hint else ""
            lines.append(f"- {_code(str(d.at))}: **{d.rule}** {_cell(d.message)}{hint}")
        lines.append("")
    for pool in report.pools:
        lines += [f"## {_MD_STATUS[pool.status][0]} {_cell(_pool_title(pool))}", ""]
        devices = [
            f"- ⚠️ {_cell(message)} ({', '.join(_code(f) for f in files)})"
            for message, files in _elsewhere(pool)
        ]
        lines += [*devices, ""] if devices else []
        lines += [
            "| step | check | measured | threshold | verdict | result |",
            "|---|---|---:|---:|---|---|",
        ]
        for c in pool.checks:
            result = _code(c.result, table=True) if c.result else "-"
            lines.append(
                f"| {_cell(c.step, table=True)} | {_cell(c.label, table=True)} | {_cell(_measured(c), table=True)} "
                f"| {_cell(_threshold(c), table=True)} | {_MD_VERDICT[c.verdict]} | {result} |"
            )
        lines.append("")
        lines += [
            f"- **{c.step}** {_cell(c.label)}: {_cell(c.note)}" for c in pool.checks if _noted(c)
        ]
        lines += [f"- reference: {_cell(_nvlink_text(n, pool.accelerator))}" for n in pool.nvlink]
        lines += [f"- cost of useful work: {_cell(_cost_text(c))}" for c in pool.costs]
        lines += _nodes_markdown(pool)
        if lines[-1] != "":
            lines.append("")
    lines += ["<details><summary>Formulas</summary>", ""]
    lines += [f"- **{term}**: {_cell(text)}" for term, text in FORMULAS]
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _nodes_markdown(pool: PoolAcceptance) -> list[str]:
    """The node check's tables: nodes, then links, slowest first; the outliers."""
    if not pool.nodes and not pool.links:
        return []
    lines = ["", f"**Nodes**: {_cell(_slowest(pool) or 'no figures')}", ""]
    lines += [
        "| node | ranks | healthy | intra-node busbw | matmul | verdict | why |",
        "|---|---:|---|---:|---:|---|---|",
    ]
    for n in pool.nodes:
        matmul = "-" if n.matmul_tflops is None else f"{num(n.matmul_tflops)} TFLOPS"
        lines.append(
            f"| {_cell(n.node, table=True)} | {n.ranks} | {'yes' if n.healthy else 'no'} "
            f"| {_gbps(n.intra_busbw_gbps)} | {matmul} | {_MD_VERDICT[n.verdict]} "
            f"| {_cell(n.why or '-', table=True)} |"
        )
    if pool.links:
        lines += ["", "| link | busbw | verdict |", "|---|---:|---|"]
        lines += [
            f"| {_cell(link.subject, table=True)} | {_gbps(link.busbw_gbps)} "
            f"| {_MD_VERDICT[link.verdict]} |"
            for link in pool.links
        ]
    outliers = [f"- outlier: {_cell(_outlier_text(o))}" for o in pool.outliers]
    return [*lines, *(["", *outliers] if outliers else []), ""]


# --- JSON -------------------------------------------------------------------------------------


# a result file's value (a number or a yes/no), not a switch: positional like any value
def _json_number(value: float | bool | None) -> float | bool | None:  # noqa: FBT001
    if value is None or isinstance(value, bool):
        return value
    return float(f"{float(value):.6g}")  # six significant digits: enough, and stable


def report_json(report: AcceptanceReport) -> dict[str, Any]:
    """For tools: stable camelCase keys in sorted order, numbers as numbers; the findings go in
    the envelope's `findings` (renderer.findings.envelope), which the CLI puts around this."""
    body = {
        "passed": report.passed,
        "status": report.status.value,
        "summary": {
            "pools": len(report.pools),
            "files": report.files,
            **{_camel(v): report.count(v) for v in Verdict},
            "findings": len(report.findings),
            "resultsNotComparable": report.elsewhere,
        },
        "pools": [_pool_json(p) for p in report.pools],
        "formulas": dict(FORMULAS),
    }
    result: dict[str, Any] = json.loads(json.dumps(body, sort_keys=True))
    return result


def _pool_json(p: PoolAcceptance) -> dict[str, Any]:
    return {
        "cluster": p.cluster,
        "pool": p.pool,
        "accelerator": p.accelerator,
        "gpuHour": p.gpu_hour,
        "currency": p.currency,
        "passed": p.passed,
        "status": p.status.value,
        "results": list(p.results),
        "devices": [_device_json(d) for d in p.devices],
        "checks": [_check_json(c) for c in p.checks],
        "nvlinkShare": [_nvlink_json(n) for n in p.nvlink],
        "costs": [_cost_json(c) for c in p.costs],
        "nodes": [_node_json(n) for n in p.nodes],
        "links": [_link_json(link) for link in p.links],
        "outliers": [_outlier_json(o) for o in p.outliers],
    }


def _node_json(n: NodeRow) -> dict[str, Any]:
    return {
        "node": n.node,
        "ranks": n.ranks,
        "healthy": n.healthy,
        "error": n.error,
        "intraBusbwGBps": _json_number(n.intra_busbw_gbps),
        "matmulTflops": _json_number(n.matmul_tflops),
        "verdict": n.verdict.value,
        "why": n.why,
        "result": n.result,
    }


def _link_json(link: LinkRow) -> dict[str, Any]:
    return {
        "a": link.a,
        "b": link.b,
        "busbwGBps": _json_number(link.busbw_gbps),
        "verdict": link.verdict.value,
        "result": link.result,
    }


def _outlier_json(o: Outlier) -> dict[str, Any]:
    return {
        "subject": o.subject,
        "figure": o.figure,
        "value": _json_number(o.value),
        "median": _json_number(o.median),
        "result": o.result,
    }


def _device_json(d: Device) -> dict[str, Any]:
    return {
        "result": d.result,
        "probe": d.probe,
        "device": d.device,
        "name": d.name,
        "accelerator": d.accelerator,
        "comparable": d.comparable,
        "message": d.message,
    }


def _check_json(c: Check) -> dict[str, Any]:
    return {
        "step": c.step,
        "metric": c.metric,
        "label": c.label,
        "unit": c.unit,
        "measured": _json_number(c.measured),
        "comparison": c.comparison,
        "threshold": _json_number(c.threshold),
        "thresholdKey": c.threshold_key,
        "verdict": c.verdict.value,
        "result": c.result,
        "note": c.note,
    }


def _nvlink_json(n: NvlinkShare) -> dict[str, Any]:
    return {
        "result": n.result,
        "busbwGBps": _json_number(n.busbw_gbps),
        "catalogNvlinkGBps": n.nvlink_gbps,
        "share": None if n.share is None else round(n.share, 4),
    }


def _cost_json(c: Cost) -> dict[str, Any]:
    return {
        "step": c.step,
        "unit": c.unit,
        "value": _json_number(c.value),
        "currency": c.currency,
        "gpus": _json_number(c.gpus),
        "gpusSource": c.gpus_source,
        "formula": c.formula,
        "result": c.result,
    }


def _camel(verdict: Verdict) -> str:
    head, *rest = verdict.value.split("-")
    return head + "".join(part.title() for part in rest)
