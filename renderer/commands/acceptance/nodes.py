"""The node check judged (docs/acceptance-report.md, "Every node"): the figures the report
derives from a `nodes` result, and its per-node and per-link tables with the outliers.

Medians are recomputed here from the result's own figures, never taken from the probe's
`median`, so a result cannot vouch for itself: a node or link is an outlier when its bus
bandwidth is below `nodeOutlierFraction` x the median of the same figure over the pool (the
pool's fraction when it declares one, which is then judged; else the probe's, shown only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any, Final

from renderer.commands.acceptance.readable import num, oneline, quote
from renderer.commands.acceptance.results import LinkRow, NodeRow, Outlier, Result, Verdict
from renderer.model.platform import Pool

INTRA: Final = "intraBusbwGBps"
LINK: Final = "linkBusbwGBps"
"""The figures outliers are judged on (the names the probe's `outliers` use)."""


def _nodes(result: Result) -> list[Mapping[str, Any]]:
    found = result.metrics.get("nodes")
    return [n for n in found if isinstance(n, dict)] if isinstance(found, list) else []


def _links(result: Result) -> list[Mapping[str, Any]]:
    found = result.metrics.get("links")
    return [link for link in found if isinstance(link, dict)] if isinstance(found, list) else []


def _intra(node: Mapping[str, Any]) -> float | None:
    value = node.get(INTRA)
    return None if value is None else float(value)


def _fabric_errors(result: Result) -> list[Mapping[str, Any]]:
    fabric = result.metrics.get("fabric")
    if not isinstance(fabric, dict) or not fabric.get("available"):
        return []
    return [e for e in fabric.get("errors", []) if isinstance(e, dict) and e.get("delta", 0) > 0]


def _median_or_none(values: Sequence[float]) -> float | None:
    return float(median(values)) if values else None


def medians(result: Result) -> tuple[float | None, float | None]:
    """The median intra-node and link bus bandwidth over the result's own figures (nodes
    without an intra-node figure, those of one rank, left out)."""
    intra = [v for n in _nodes(result) if (v := _intra(n)) is not None]
    links = [float(link["busbwGBps"]) for link in _links(result)]
    return _median_or_none(intra), _median_or_none(links)


def _shares(result: Result) -> list[tuple[float, Outlier]]:
    """Every node's and link's figure as a share of its median, with the outlier it would be."""
    intra_median, link_median = medians(result)
    found: list[tuple[float, Outlier]] = []
    if intra_median:
        for node in _nodes(result):
            value = _intra(node)
            if value is not None:
                outlier = Outlier(str(node["node"]), INTRA, value, intra_median, result.file)
                found.append((value / intra_median, outlier))
    if link_median:
        for link in _links(result):
            value = float(link["busbwGBps"])
            subject = f"{link['a']}<->{link['b']}"
            found.append(
                (value / link_median, Outlier(subject, LINK, value, link_median, result.file))
            )
    return sorted(found, key=lambda share: (share[0], share[1].subject, share[1].figure))


def fraction(pool: Pool, result: Result) -> tuple[float, bool]:
    """The outlier fraction, and whether it is the pool's (judged) rather than the probe's."""
    declared = pool.acceptance.get("nodeOutlierFraction")
    if declared is not None:
        return float(declared), True
    return float(result.metrics.get("outlierFraction") or 0), False


def outliers(pool: Pool, result: Result) -> list[Outlier]:
    """Nodes and links below the fraction of their median, slowest share first."""
    below, _ = fraction(pool, result)
    return [outlier for share, outlier in _shares(result) if share < below]


def derived(result: Result, metric: str) -> float | bool | None:
    """A figure of the report that the result holds or that follows from its figures; None
    when the result has nothing to show for it (no intra-node figure with one rank a node, no
    fabric counters on the nodes, no links with one node)."""
    if result.probe == "checkpoint" and metric == "restoredElsewhere":
        return bool(result.metrics["restoreNode"] != result.metrics["writerNode"])
    if result.probe != "nodes":
        value = result.metrics[metric]
        return value if isinstance(value, bool) else float(value)
    if metric == "healthyNodes":
        return all(node.get("healthy") is True for node in _nodes(result))
    if metric == "slowestIntraBusbwGBps":
        values = [v for n in _nodes(result) if (v := _intra(n)) is not None]
        return min(values) if values else None
    if metric == "lowestShareOfMedian":
        shares = _shares(result)
        return shares[0][0] if shares else None
    if metric == "fabricErrors":
        fabric = result.metrics.get("fabric")
        if not isinstance(fabric, dict) or not fabric.get("available"):
            return None
        return float(sum(float(e["delta"]) for e in _fabric_errors(result)))
    return float(result.metrics[metric])


def why(pool: Pool, result: Result, metric: str) -> str | None:
    """Which nodes or links failed a node-check figure, by name."""
    if metric == "healthyNodes":
        sick = [n for n in _nodes(result) if n.get("healthy") is not True]
        return "unhealthy: " + "; ".join(
            f"{quote(str(n['node']))} ({oneline(str(n.get('error') or 'no reason given'), 200)})"
            for n in sick[:10]
        )
    if metric == "slowestIntraBusbwGBps":
        floor = float(pool.acceptance.get("intraNodeBusBandwidthGBps", 0))
        slow = sorted(
            (v, str(n["node"]))
            for n in _nodes(result)
            if (v := _intra(n)) is not None and v < floor
        )
        return "below the threshold: " + ", ".join(
            f"{quote(n)} {num(v)} GB/s" for v, n in slow[:10]
        )
    if metric == "lowestShareOfMedian":
        found = outliers(pool, result)
        return "outliers: " + ", ".join(
            f"{quote(o.subject)} {num(o.value)} GB/s (median {num(o.median)})" for o in found[:10]
        )
    if metric == "fabricErrors":
        return "errors: " + ", ".join(
            f"{quote(str(e['node']))} {quote(str(e['device']))} port {quote(str(e['port']))} "
            f"{quote(str(e['counter']))} +{num(float(e['delta']))}"
            for e in _fabric_errors(result)[:10]
        )
    return None


def _node_row(pool: Pool, result: Result, node: Mapping[str, Any], below: set[str]) -> NodeRow:
    name = str(node["node"])
    value = _intra(node)
    floor = pool.acceptance.get("intraNodeBusBandwidthGBps")
    problems = []
    if node.get("healthy") is not True:
        problems.append(f"unhealthy: {oneline(str(node.get('error') or 'no reason given'), 200)}")
    if floor is not None and value is not None and value < floor:
        problems.append(f"intra-node bus bandwidth {num(value)} GB/s below {num(floor)}")
    if name in below:
        problems.append("below the pool's outlier fraction of the median")
    errors = [e for e in _fabric_errors(result) if e.get("node") == name]
    if errors:
        problems.append(f"{len(errors)} fabric error counter(s) increased")
    ranks = node.get("ranks")
    return NodeRow(
        node=name,
        ranks=len(ranks) if isinstance(ranks, list) else int(ranks or 0),
        healthy=node.get("healthy") is True,
        error=node.get("error"),
        intra_busbw_gbps=value,
        matmul_tflops=None if node.get("matmulTflops") is None else float(node["matmulTflops"]),
        verdict=Verdict.FAIL if problems else Verdict.PASS,
        result=result.file,
        why="; ".join(problems) or None,
    )


def node_tables(
    pool: Pool, results: Sequence[Result]
) -> tuple[tuple[NodeRow, ...], tuple[LinkRow, ...], tuple[Outlier, ...]]:
    """The node check's nodes (slowest intra-node first) and links (slowest first), judged, and
    the outliers (slowest share first) of every `nodes` result of the pool."""
    rows: list[NodeRow] = []
    links: list[LinkRow] = []
    found: list[Outlier] = []
    for result in (r for r in results if r.probe == "nodes" and r.complete):
        below = outliers(pool, result)
        _, judged = fraction(pool, result)
        slow = {o.subject for o in below} if judged else set()
        found += below
        rows += [_node_row(pool, result, node, slow) for node in _nodes(result)]
        for link in _links(result):
            row = LinkRow(
                str(link["a"]),
                str(link["b"]),
                float(link["busbwGBps"]),
                Verdict.MEASURED,
                result.file,
            )
            verdict = (
                Verdict.FAIL
                if row.subject in slow
                else Verdict.PASS
                if judged
                else Verdict.MEASURED
            )
            links.append(LinkRow(row.a, row.b, row.busbw_gbps, verdict, row.result))
    rows.sort(key=lambda n: (n.intra_busbw_gbps is None, n.intra_busbw_gbps or 0.0, n.node))
    links.sort(key=lambda link: (link.busbw_gbps, link.subject))
    return tuple(rows), tuple(links), tuple(found)
