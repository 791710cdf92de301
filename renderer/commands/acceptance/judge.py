"""Judging results against each pool's thresholds (docs/acceptance-report.md, "What is
checked"): a verdict per figure, the missing ones, the cost of useful work and the NVLink share,
each formula written out beside the code that computes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from renderer.commands.acceptance import nodes
from renderer.commands.acceptance.device import device_of, off_pool
from renderer.commands.acceptance.nodes import derived, node_tables
from renderer.commands.acceptance.readable import num, oneline, quote
from renderer.commands.acceptance.results import (
    GPUS_KEY,
    QUEUE_WAIT_KEY,
    AcceptanceReport,
    Check,
    Cost,
    Device,
    NvlinkShare,
    PoolAcceptance,
    Result,
    Verdict,
)
from renderer.findings.diagnostics import Diagnostic, Location, closest, sort_diagnostics
from renderer.findings.rules import document_rule
from renderer.model.catalog import accelerator
from renderer.model.platform import Platform, Pool

STEP_ORDER: Final = (
    "queue",
    "staging",
    "object-store",
    "allreduce",
    "nodes",
    "training",
    "checkpoint",
    "node-loss",
    "storage",
    "concurrent-storage",
)
"""Steps in the order of the guide's acceptance test (1 queue, 2 data, 3 network, 4 training,
5 checkpoint), each followed by the step that proves it further (data under load, every node,
restore after a node is lost), then the benchmarks."""

TRAINING_COST: Final = (
    "cost per million samples = gpuHour x GPUs / (samplesPerSecond x 3600) x 1,000,000"
)
INFERENCE_COST: Final = (
    "cost per thousand requests = gpuHour x GPUs / (requestsPerSecond x 3600) x 1,000, "
    "where requestsPerSecond = concurrency / (meanMs / 1000)"
)
NVLINK_SHARE: Final = (
    "NVLink share = peakBusbwGBps / the catalog's NVLink figure; the catalog figure is the "
    "per-GPU NVLink total bidirectional bandwidth in GB/s (the Infinity Fabric figure on AMD), "
    "while bus bandwidth counts one direction and crosses the node fabric between nodes, so the "
    "share is indicative only and never a verdict"
)
GPUS_RULE: Final = (
    f"the result's environment label {GPUS_KEY} when set, else the probe's worldSize (in its "
    "metrics or environment), "
    "else 1 (an assumption the report states beside the cost)"
)

FORMULAS: Final[tuple[tuple[str, str], ...]] = (
    ("trainingCost", TRAINING_COST),
    ("inferenceCost", INFERENCE_COST),
    ("gpus", GPUS_RULE),
    ("nvlinkShare", NVLINK_SHARE),
)

for _rule, _doc in {
    "result-unknown-pool": """An acceptance result names no pool, or a pool this repository does not declare.

Results are judged against the thresholds of the pool they ran on, so each result must name a
pool of `pools/`.

To satisfy it: run the probe with `--pool NAME`, NAME a pool's `metadata.name` (the acceptance
workflow passes it), or, for a typo or a pool renamed since the run, use the pool the hint
names. A result that names no pool can never be counted.""",
    "result-wrong-cluster": """An acceptance result names a cluster its pool does not belong to.

Every pool belongs to one cluster (`spec.cluster`). A result for pool A on cluster B was taken
elsewhere than the pool file describes (a copied results folder, a wrong `--cluster`), so it
proves nothing about the pool and is not counted.

To satisfy it: pass only the results of one cluster's run, and run the probe with `--cluster`
set to the pool's `spec.cluster` (the note points at it).""",
}.items():
    document_rule(_rule, "acceptance", _doc)


# --- judging ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Figure:
    step: str
    """The step the figure belongs to: the probe's name, or a labelled step (`Result.step`)."""
    metric: str
    """The result's metric, or a figure `renderer.commands.acceptance.nodes` derives."""
    label: str
    unit: str
    comparison: str | None
    threshold_key: str | None = None
    fixed: float | bool | None = None
    required: bool = True
    """Whether a pool's threshold for it is missing without a result of the step (False where
    another step's result already answers the threshold, as the all-reduce does the node
    check's pool bandwidth)."""


FIGURES: Final[tuple[_Figure, ...]] = (
    _Figure("staging", "GBps", "dataset and weights staging", "GB/s", None),
    _Figure(
        "allreduce",
        "peakBusbwGBps",
        "all-reduce bus bandwidth (peak)",
        "GB/s",
        ">=",
        "allReduceBusBandwidthGBps",
    ),
    _Figure(
        "training",
        "samplesPerSecond",
        "training throughput",
        "samples/s",
        ">=",
        "trainingSamplesPerSecond",
    ),
    _Figure("checkpoint", "writeGBps", "checkpoint write", "GB/s", ">=", "checkpointWriteGBps"),
    _Figure("checkpoint", "restoreSeconds", "checkpoint restore", "s", "<=", "restoreSeconds"),
    _Figure("checkpoint", "verified", "restored checkpoint verified", "", "==", fixed=True),
    _Figure("checkpoint", "resumed", "training resumed from the restore", "", "==", fixed=True),
    _Figure("storage", "readGBps", "storage read", "GB/s", ">=", "storageReadGBps"),
    _Figure("storage", "writeGBps", "storage write", "GB/s", None),
    _Figure("inference", "p95Ms", "inference latency p95", "ms", "<=", "inferenceP95Ms"),
    _Figure("inference", "errors", "inference errors (failed requests)", "", "==", fixed=0),
    _Figure("nodes", "healthyNodes", "every node healthy (matmul, memory)", "", "==", fixed=True),
    _Figure(
        "nodes",
        "slowestIntraBusbwGBps",
        "intra-node bus bandwidth (slowest node)",
        "GB/s",
        ">=",
        "intraNodeBusBandwidthGBps",
    ),
    _Figure(
        "nodes",
        "lowestShareOfMedian",
        "slowest node or link, share of the pool's median",
        "",
        ">=",
        "nodeOutlierFraction",
    ),
    _Figure(
        "nodes",
        "poolBusbwGBps",
        "whole-pool all-reduce bus bandwidth",
        "GB/s",
        ">=",
        "allReduceBusBandwidthGBps",
        required=False,
    ),
    _Figure("nodes", "fabricErrors", "fabric error counters (increase)", "", "==", fixed=0),
    _Figure(
        "concurrent-storage",
        "aggregateReadGBps",
        "storage read, readers and writers at once (all workers)",
        "GB/s",
        ">=",
        "concurrentStorageReadGBps",
    ),
    _Figure(
        "concurrent-storage",
        "aggregateWriteGBps",
        "storage write, readers and writers at once (all workers)",
        "GB/s",
        ">=",
        "concurrentStorageWriteGBps",
    ),
    _Figure(
        "object-store",
        "aggregateGBps",
        "object store, concurrent downloads (all workers)",
        "GB/s",
        ">=",
        "objectStoreGBps",
    ),
    _Figure(
        "node-loss",
        "sinceWriteSeconds",
        "restore after a node is lost (from the writer's finish)",
        "s",
        "<=",
        "nodeLossRestoreSeconds",
    ),
    _Figure("node-loss", "restoredElsewhere", "restored on another node", "", "==", fixed=True),
    _Figure("node-loss", "verified", "restored checkpoint verified", "", "==", fixed=True),
    _Figure("node-loss", "resumed", "training resumed from the restore", "", "==", fixed=True),
)
"""Every figure the report shows, in report order (the guide's steps, then the benchmarks)."""


# a result file's value (a number or a yes/no), not a switch: positional like any value
def _passes(measured: float | bool, comparison: str, threshold: float | bool) -> bool:  # noqa: FBT001
    if comparison == ">=":
        return float(measured) >= float(threshold)
    if comparison == "<=":
        return float(measured) <= float(threshold)
    return isinstance(measured, bool) == isinstance(threshold, bool) and measured == threshold


def _judge(figure: _Figure, pool: Pool, result: Result) -> Check | None:
    """One figure of one result; None when the result has no figure to show for it (a failed
    probe that left its metrics empty, where no threshold asks for the figure)."""
    threshold: float | bool | None = figure.fixed
    if figure.threshold_key is not None:
        threshold = pool.acceptance.get(figure.threshold_key)
    comparison = figure.comparison if threshold is not None else None
    row = Check(
        step=figure.step,
        metric=figure.metric,
        label=figure.label,
        unit=figure.unit,
        measured=None,
        comparison=comparison,
        threshold=threshold,
        threshold_key=figure.threshold_key if threshold is not None else None,
        verdict=Verdict.MEASURED,
        result=result.file,
    )
    if not result.complete:
        if threshold is None or figure.fixed is not None:
            return None
        return replace(row, verdict=Verdict.FAIL)
    measured = derived(result, figure.metric)
    if measured is None:
        if figure.fixed is not None or threshold is None:
            return replace(row, verdict=Verdict.NOT_REPORTED, note=_unmeasured(figure))
        return replace(row, verdict=Verdict.FAIL, note=_unmeasured(figure))
    if comparison is None or threshold is None:
        return replace(row, measured=measured)
    if _passes(measured, comparison, threshold):
        return replace(row, measured=measured, verdict=Verdict.PASS)
    note = nodes.why(pool, result, figure.metric) if result.probe == "nodes" else None
    return replace(row, measured=measured, verdict=Verdict.FAIL, note=note or _why(figure, result))


def _unmeasured(figure: _Figure) -> str:
    """Why a node-check figure has no value."""
    if figure.metric == "fabricErrors":
        return "no fabric error counters on these nodes (/sys/class/infiniband absent)"
    if figure.metric == "slowestIntraBusbwGBps":
        return "no intra-node all-reduce: every node ran one rank"
    return "no node or link figure to compare with a median"


def _why(figure: _Figure, result: Result) -> str | None:
    """What to do about a failed figure, where its number alone does not say."""
    if figure.metric == "restoredElsewhere":
        return (
            f"the checkpoint was restored on {quote(str(result.metrics['restoreNode']))}, the "
            "node that wrote it: nothing shows a restore after losing the writer's node; drain "
            "the writer's node before the restore (the suite's node-loss step does)"
        )
    if figure.metric != "resumed":
        return None
    metrics = result.metrics
    if metrics["resumeSteps"] == 0:
        return (
            "the probe resumed no training (--resume-steps 0), so nothing shows that training "
            "continues from the restored state; run the restore with --resume-steps above 0, as "
            "the rendered acceptance step 5 does"
        )
    if not metrics["verified"]:
        return "nothing is resumed from a restore that did not verify; fix the restore first"
    largest = metrics["resumeMaxLossDifference"]
    shown = "a loss that is not finite" if largest is None else f"losses off by up to {largest:.3g}"
    return (
        f"{metrics['resumeSteps']} training steps from the restored state gave {shown} against "
        "the writer's same steps: the checkpoint does not hold the whole training state (a "
        "restore of the weights without the optimizer state or step count fails this way), or "
        "the restoring pod computes differently (compare the image, torch and device labels of "
        "both phases); the probe's error names the step"
    )


def _failed_run(result: Result) -> Check:
    """The row of a result with `ok: false`: it fails whatever its figures say."""
    return Check(
        step=result.step,
        metric="ok",
        label="probe run",
        unit="",
        measured=False,
        comparison="==",
        threshold=True,
        threshold_key=None,
        verdict=Verdict.FAIL,
        result=result.file,
        note=f"the probe failed: {oneline(result.error or 'no reason given')}",
    )


def _queue_checks(pool: Pool, results: Sequence[Result]) -> list[Check]:
    """The longest queue wait any result of the pool carries, against maxQueueWaitMinutes."""
    threshold = pool.acceptance.get("maxQueueWaitMinutes")
    waits = sorted(
        ((r.queue_wait_seconds, r.file) for r in results if r.queue_wait_seconds is not None),
        key=lambda wait: (-wait[0], wait[1]),
    )
    row = Check(
        step="queue",
        metric="queueWaitMinutes",
        label="queue wait (Kueue)",
        unit="min",
        measured=None,
        comparison="<=" if threshold is not None else None,
        threshold=threshold,
        threshold_key="maxQueueWaitMinutes" if threshold is not None else None,
        verdict=Verdict.NOT_REPORTED,
        result=None,
    )
    if not waits:
        if threshold is None:
            return []
        return [replace(row, note=f"no result carries the environment label {QUEUE_WAIT_KEY}")]
    seconds, file = waits[0]
    minutes = seconds / 60
    differ = len({wait for wait, _ in waits}) > 1
    note = f"the longest of the {len(waits)} waits the results carry" if differ else None
    if threshold is None:
        return [replace(row, measured=minutes, verdict=Verdict.MEASURED, result=file, note=note)]
    verdict = Verdict.PASS if minutes <= threshold else Verdict.FAIL
    return [replace(row, measured=minutes, verdict=verdict, result=file, note=note)]


def _missing(pool: Pool, results: Sequence[Result]) -> list[Check]:
    """A threshold the pool declares for a step that has no result here."""
    steps = {r.step for r in results}
    return [
        Check(
            step=f.step,
            metric=f.metric,
            label=f.label,
            unit=f.unit,
            measured=None,
            comparison=f.comparison,
            threshold=pool.acceptance[f.threshold_key],
            threshold_key=f.threshold_key,
            verdict=Verdict.MISSING,
            result=None,
            note=f"no {f.step} result for this pool",
        )
        for f in FIGURES
        if f.threshold_key is not None
        and f.threshold_key in pool.acceptance
        and f.required
        and f.step not in steps
    ]


def _gpus(result: Result) -> tuple[float, str]:
    label = result.environment.get(GPUS_KEY)
    if label is not None:
        return float(label), f"from the environment label {GPUS_KEY}"
    world = result.metrics.get("worldSize")
    if isinstance(world, int) and not isinstance(world, bool) and world > 0:
        return float(world), "assumed: the probe's worldSize"
    label = result.environment.get("worldSize", "")
    if label.isascii() and label.isdigit() and int(label) > 0:
        return float(label), "assumed: the probe's worldSize (environment)"
    return 1.0, "assumed: 1, as the result states no GPU count"


def _cost(pool: Pool, result: Result, device: Device | None) -> Cost | None:
    if not result.ok or result.probe not in ("training", "inference"):
        return None
    gpus, source = _gpus(result)
    rate = f"{num(pool.gpu_hour)} {pool.currency}/GPU-h x {num(gpus)} GPU{'' if gpus == 1 else 's'}"
    value: float | None
    if result.probe == "training":
        samples = float(result.metrics["samplesPerSecond"])
        value = pool.gpu_hour * gpus / (samples * 3600) * 1e6 if samples > 0 else None
        formula = f"{rate} / ({num(samples)} samples/s x 3600 s/h) x 1,000,000"
        unit = "per million samples"
    else:
        concurrency = float(result.metrics["concurrency"])
        mean_ms = float(result.metrics["meanMs"])
        rps = concurrency / (mean_ms / 1000) if mean_ms > 0 else 0.0
        value = pool.gpu_hour * gpus / (rps * 3600) * 1000 if rps > 0 else None
        formula = (
            f"{rate} / ({num(rps)} requests/s x 3600 s/h) x 1,000; requests/s = "
            f"{num(concurrency)} concurrent / ({num(mean_ms)} ms mean / 1000)"
        )
        unit = "per thousand requests"
    if value is None:
        formula += " (no throughput measured: no cost)"
    if device is not None and not device.comparable:
        source += f"; {off_pool(device)}"
    return Cost(
        step=result.probe,
        unit=unit,
        value=value,
        currency=pool.currency,
        gpus=gpus,
        gpus_source=source,
        formula=formula,
        result=result.file,
    )


def _nvlink(pool: Pool, result: Result, device: Device | None) -> NvlinkShare | None:
    """The share of an all-reduce's bus bandwidth in the NVLink figure; none for one not shown
    to be measured on the pool's accelerator (a CPU all-reduce over gloo says nothing of it)."""
    if not result.ok or result.probe != "allreduce":
        return None
    if device is not None and not device.comparable:
        return None
    busbw = float(result.metrics["peakBusbwGBps"])
    entry = accelerator(pool.accelerator)
    nvlink = entry.nvlink_bandwidth_gbps if entry is not None else None
    share = busbw / nvlink if nvlink else None
    return NvlinkShare(result.file, busbw, nvlink, share)


def _order(check: Check) -> tuple[int, int, str]:
    steps = [*STEP_ORDER, "inference"]
    step = steps.index(check.step) if check.step in steps else len(steps)
    figures = [f.metric for f in FIGURES if f.step == check.step]
    figure = figures.index(check.metric) if check.metric in figures else len(figures)
    return step, figure, check.result or ""


def _elsewhere(check: Check, device: Device | None) -> Check:
    """A figure not shown to be measured on the pool's accelerator, against one of the pool's
    thresholds: not comparable, neither a pass nor a failure. Fixed requirements (a verified
    restore, no failed request) and a failed run hold on any device and are judged as they are;
    the pool is not accepted on such a result either way (`PoolAcceptance.status`)."""
    if device is None or device.comparable or check.threshold_key is None:
        return check
    if check.measured is None or check.verdict not in (Verdict.PASS, Verdict.FAIL):
        return check
    return replace(check, verdict=Verdict.NOT_COMPARABLE, note=f"{off_pool(device)}: not judged")


def _pool_acceptance(pool: Pool, results: Sequence[Result]) -> PoolAcceptance:
    checks = _queue_checks(pool, results)
    devices = {r.file: device_of(pool, r) for r in results}
    for result in results:
        for figure in FIGURES:
            if figure.step == result.step:
                check = _judge(figure, pool, result)
                if check is not None:
                    checks.append(_elsewhere(check, devices[result.file]))
    checks += [_failed_run(r) for r in results if not r.ok]
    checks += _missing(pool, results)
    found_nvlink = [n for r in results if (n := _nvlink(pool, r, devices[r.file])) is not None]
    found_costs = [c for r in results if (c := _cost(pool, r, devices[r.file])) is not None]
    node_rows, links, outliers = node_tables(pool, results)
    return PoolAcceptance(
        cluster=pool.cluster,
        pool=pool.name,
        accelerator=pool.accelerator,
        gpu_hour=pool.gpu_hour,
        currency=pool.currency,
        checks=tuple(sorted(checks, key=_order)),
        nvlink=tuple(sorted(found_nvlink, key=lambda n: n.result)),
        costs=tuple(sorted(found_costs, key=lambda c: c.result)),
        results=tuple(sorted(r.file for r in results)),
        devices=tuple(sorted((d for d in devices.values() if d), key=lambda d: d.result)),
        nodes=node_rows,
        links=links,
        outliers=outliers,
    )


def _match(platform: Platform, result: Result) -> tuple[Pool | None, Diagnostic | None]:
    where = Location(result.file)
    if result.pool is None:
        return None, Diagnostic(
            "result-unknown-pool",
            f"the {result.probe} result names no pool, so no threshold applies",
            where,
            hint="run the probe with --pool NAME (the workflow passes it)",
        )
    pool = platform.pools.get(result.pool)
    if pool is None:
        near = closest(result.pool, platform.pools)
        return None, Diagnostic(
            "result-unknown-pool",
            f"the {result.probe} result is for pool {quote(result.pool)}, which pools/ does not declare",
            where,
            hint=f"did you mean '{near}'?"
            if near
            else f"known pools: {', '.join(sorted(platform.pools))}",
        )
    if result.cluster is not None and result.cluster != pool.cluster:
        return None, Diagnostic(
            "result-wrong-cluster",
            f"the {result.probe} result for pool '{pool.name}' ran on cluster "
            f"{quote(result.cluster)}, but the pool belongs to '{pool.cluster}'; not counted",
            where,
            notes=((f"pool '{pool.name}' is declared here", pool.origin.at("spec", "cluster")),),
            hint="pass the results of one cluster's run, or fix --cluster of the probe",
        )
    return pool, None


def build_report(
    platform: Platform,
    results: Iterable[Result],
    findings: Iterable[Diagnostic] = (),
    pools: Iterable[str] = (),
) -> AcceptanceReport:
    """Judge results against their pools. Every pool with a result is reported, and each pool
    named in `pools` even without one (then every threshold it declares is missing)."""
    wanted = sorted(set(pools))
    unknown = [p for p in wanted if p not in platform.pools]
    if unknown:
        raise ValueError(f"unknown pool(s): {', '.join(unknown)}")
    notes = list(findings)
    by_pool: dict[str, list[Result]] = {name: [] for name in wanted}
    files = len({d.at.file for d in notes})
    for result in results:
        files += 1
        pool, problem = _match(platform, result)
        if problem is not None:
            notes.append(problem)
        if pool is None:
            continue
        by_pool.setdefault(pool.name, []).append(result)
    reports = [_pool_acceptance(platform.pools[name], found) for name, found in by_pool.items()]
    return AcceptanceReport(
        pools=tuple(sorted(reports, key=lambda p: (p.cluster, p.pool))),
        findings=tuple(sort_diagnostics(notes)),
        files=files,
    )
