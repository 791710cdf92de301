"""`gpuplane acceptance report`: acceptance results judged against each pool's thresholds.

The probes (`workflows/probes`) each write one JSON result (`schemas/results/`). This module
reads them defensively (they come from jobs on shared clusters, so a file may be truncated,
huge, hostile or from another version), matches each to its pool by `pool` (and `cluster`),
and compares every figure with the threshold the pool file declares:

| probe      | figure                       | passes when                                   |
|------------|------------------------------|-----------------------------------------------|
| allreduce  | peakBusbwGBps                | >= allReduceBusBandwidthGBps                  |
| checkpoint | writeGBps / restoreSeconds   | >= checkpointWriteGBps / <= restoreSeconds    |
| checkpoint | verified                     | is true (always required)                     |
| checkpoint | resumed                      | is true (always required)                     |
| storage    | readGBps                     | >= storageReadGBps                            |
| training   | samplesPerSecond             | >= trainingSamplesPerSecond                   |
| inference  | p95Ms / errors               | <= inferenceP95Ms / == 0 (always required)    |
| (any)      | environment queue wait       | <= maxQueueWaitMinutes, when a result has it  |

A result with `ok: false` fails; a threshold the pool declares with no result for it is
"missing" and fails; a figure without a threshold is "measured only". Beside the verdicts it
states the cost of useful work (training: per million samples; inference: per thousand
requests) with the formula written out, and the all-reduce bandwidth as a share of the
catalog's NVLink figure (indicative only). `build_report` returns immutable data; the three
renderers return strings. Nothing here prints.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from renderer.findings.diagnostics import (
    Diagnostic,
    Location,
    Severity,
    closest,
    finding_lines,
    sort_diagnostics,
)
from renderer.findings.rules import document_rule
from renderer.inputs import schema
from renderer.model.catalog import accelerator
from renderer.model.platform import Platform, Pool

VERSION: Final = 1
"""The `version` of the JSON report; bumped when a key is renamed or its meaning changes."""

SCHEMA_VERSION: Final = 1
"""The `schemaVersion` of the results this report understands."""

MAX_RESULT_BYTES: Final = 1024 * 1024
"""A result is a few kilobytes (an all-reduce sweep is the largest); one over 1 MiB is refused."""

MAX_DEPTH: Final = 32
"""No result nests deeper than a few levels; deeper JSON is refused before it is read."""

QUEUE_WAIT_KEY: Final = "gpuplane.dev/queue-wait-seconds"
"""The environment label the workflow adds: seconds the acceptance job waited in Kueue."""

GPUS_KEY: Final = "gpuplane.dev/gpus"
"""The environment label that states how many GPUs a result used (for its cost); optional."""

PROBES: Final = ("allreduce", "checkpoint", "storage", "staging", "training", "inference")

STEP_ORDER: Final = ("queue", "staging", "allreduce", "training", "checkpoint", "storage")
"""Steps in the order of the guide's acceptance test (1 queue, 2 data, 3 network, 4 training,
5 checkpoint), then the benchmarks."""

SCHEMA_DIR: Final = schema.SCHEMA_DIR / "results"
"""The probes' result schemas, shipped with the engine's (see docs/acceptance-report.md)."""

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
    "result-unreadable": f"""An acceptance result file cannot be read.

It is not a regular file, cannot be opened, is larger than {MAX_RESULT_BYTES // 1024} KiB, or is
not UTF-8 text. A probe writes a few kilobytes of UTF-8 JSON; anything else is a truncated
upload, the wrong file, or a hostile one. Run the probe again, or pass the right file.""",
    "result-syntax": f"""An acceptance result file is not valid JSON.

The file must hold exactly one JSON object, without duplicate keys, NaN or Infinity, nested no
deeper than {MAX_DEPTH} levels. A probe killed while writing leaves a truncated file; run it
again. The finding names the line and column where the parser stopped.""",
    "result-invalid": """An acceptance result does not match the result schema.

Every result carries the envelope of `schemas/results/result.schema.json` (schemaVersion 1,
probe, cluster, pool, startedAt, durationSeconds, ok, error, environment, metrics), and a
successful one the metrics its probe's schema describes. A result from another version of the
probes, or edited by hand, cannot be judged: the finding names the field and what is wrong.""",
    "result-unknown-pool": """An acceptance result names no pool, or a pool this repository does not declare.

Results are judged against the thresholds of the pool they ran on, so each result must name a
pool of `pools/`. Run the probe with `--pool NAME`, or check for a typo or a pool renamed since
the run; the hint names the closest known pool.""",
    "result-wrong-cluster": """An acceptance result names a cluster its pool does not belong to.

Every pool belongs to one cluster (`spec.cluster`). A result for pool A on cluster B was taken
elsewhere than the pool file describes (a copied results folder, a wrong `--cluster`), so it
proves nothing about the pool and is not counted.""",
}.items():
    document_rule(_rule, "acceptance", _doc)


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    MISSING = "missing"
    """The pool declares a threshold and no result measures it: fails."""
    MEASURED = "measured-only"
    """A figure without a threshold on this pool: shown, never judged."""
    NOT_REPORTED = "not-reported"
    """An optional figure (the queue wait) that no result carries: shown, never judged."""

    @property
    def failing(self) -> bool:
        return self in (Verdict.FAIL, Verdict.MISSING)


# --- the data ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    """One probe result that passed the envelope and metrics checks."""

    file: str
    probe: str
    cluster: str | None
    pool: str | None
    started_at: str
    duration_seconds: float
    ok: bool
    error: str | None
    environment: Mapping[str, str]
    metrics: Mapping[str, Any]
    complete: bool
    """Whether `metrics` holds every figure of the probe (always when ok; a failed probe may
    leave them all, or none)."""

    @property
    def queue_wait_seconds(self) -> float | None:
        value = self.environment.get(QUEUE_WAIT_KEY)
        return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class Check:
    """One figure of one pool: what was measured, against what, and the verdict."""

    step: str
    metric: str
    label: str
    unit: str
    measured: float | bool | None
    comparison: str | None
    """`>=`, `<=`, `==` or None (measured only, not reported)."""
    threshold: float | bool | None
    threshold_key: str | None
    """The pool's `spec.acceptance` key, or None for a requirement that always holds."""
    verdict: Verdict
    result: str | None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class NvlinkShare:
    """An all-reduce result's bus bandwidth against the catalog's NVLink figure: information."""

    result: str
    busbw_gbps: float
    nvlink_gbps: float | None
    share: float | None


@dataclass(frozen=True, slots=True)
class Cost:
    """The cost of useful work of one training or inference result, with its formula filled in."""

    step: str
    unit: str
    value: float | None
    currency: str
    gpus: float
    gpus_source: str
    formula: str
    result: str


@dataclass(frozen=True, slots=True)
class PoolAcceptance:
    cluster: str
    pool: str
    accelerator: str
    gpu_hour: float
    currency: str
    checks: tuple[Check, ...]
    nvlink: tuple[NvlinkShare, ...]
    costs: tuple[Cost, ...]
    results: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not any(c.verdict.failing for c in self.checks)


@dataclass(frozen=True, slots=True)
class AcceptanceReport:
    pools: tuple[PoolAcceptance, ...]
    findings: tuple[Diagnostic, ...]
    files: int

    @property
    def passed(self) -> bool:
        errors = any(d.severity is Severity.ERROR for d in self.findings)
        return bool(self.pools) and not errors and all(p.passed for p in self.pools)

    def count(self, verdict: Verdict) -> int:
        return sum(c.verdict is verdict for p in self.pools for c in p.checks)


# --- loading ----------------------------------------------------------------------------------


def result_files(paths: Iterable[Path]) -> list[tuple[Path, str]]:
    """Each path as given, a folder as every `*.json` below it (sorted, not following links to
    folders); with the names to show. A file reached twice is read once."""
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for path in paths:
        files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
        for file in files:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                found.append((file, str(file)))
    return found


def load_results(paths: Iterable[Path]) -> tuple[tuple[Result, ...], tuple[Diagnostic, ...]]:
    """Read every result file (folders: their `*.json`); one finding per file that is not a
    valid result, and the results that are, in the order given."""
    results: list[Result] = []
    findings: list[Diagnostic] = []
    for file, display in result_files(paths):
        loaded = _load_one(file, display)
        if isinstance(loaded, Result):
            results.append(loaded)
        else:
            findings.extend(loaded)
    return tuple(results), tuple(findings)


def _finding(rule: str, message: str, at: Location, hint: str | None = None) -> list[Diagnostic]:
    return [Diagnostic(rule, message, at, hint=hint)]


def _load_one(file: Path, display: str) -> Result | list[Diagnostic]:
    where = Location(display)
    try:
        if not file.is_file():
            return _finding("result-unreadable", "not a regular file", where)
        size = file.stat().st_size
        if size > MAX_RESULT_BYTES:
            return _finding(
                "result-unreadable",
                f"file is {size:,} bytes; the limit is {MAX_RESULT_BYTES:,}",
                where,
                "pass the probe's own result file",
            )
        with file.open("rb") as stream:
            raw = stream.read(MAX_RESULT_BYTES + 1)
    except OSError as err:
        return _finding("result-unreadable", f"cannot read file: {err.strerror}", where)
    if len(raw) > MAX_RESULT_BYTES:
        return _finding(
            "result-unreadable", f"file is larger than {MAX_RESULT_BYTES:,} bytes", where
        )
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        return _finding(
            "result-unreadable", f"byte 0x{raw[err.start]:02x} is not valid UTF-8", where
        )
    data = _parse(text, display)
    if isinstance(data, list):
        return data
    problems = _check(data)
    if problems:
        shown = "; ".join(problems[:5]) + (
            f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        return _finding(
            "result-invalid",
            f"not a valid acceptance result: {shown}",
            where,
            "results are written by `python -m workflows.probes PROBE`; see schemas/results/",
        )
    return Result(
        file=display,
        probe=data["probe"],
        cluster=data["cluster"],
        pool=data["pool"],
        started_at=data["startedAt"],
        duration_seconds=float(data["durationSeconds"]),
        ok=data["ok"],
        error=data["error"],
        environment=MappingProxyType(dict(sorted(data["environment"].items()))),
        metrics=MappingProxyType(dict(data["metrics"])),
        complete=not _metrics_problems(data["probe"], data["metrics"]),
    )


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Duplicate(f"duplicate key {key!r}")
        found[key] = value
    return found


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(text: str) -> bool:
    """Whether brackets outside strings nest deeper than MAX_DEPTH (checked before parsing, so a
    hostile file cannot exhaust the parser's stack)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _parse(text: str, display: str) -> Any:
    if _too_deep(text):
        return _finding(
            "result-syntax", f"JSON nested deeper than {MAX_DEPTH} levels", Location(display)
        )
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as err:
        return _finding(
            "result-syntax",
            f"invalid JSON: {err.msg}",
            Location(display, err.lineno, err.colno),
            "a truncated file usually means the probe was killed while writing; run it again",
        )
    except (ValueError, RecursionError) as err:  # duplicates, NaN, over-long integers
        return _finding("result-syntax", f"invalid JSON: {err}", Location(display))
    if not isinstance(data, dict):
        return _finding(
            "result-invalid",
            f"the file holds a JSON {_json_type(data)}, not one result object",
            Location(display),
            "one result per file",
        )
    return data


# --- validation -------------------------------------------------------------------------------

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", re.ASCII)
"""RFC 3339 in UTC with a trailing Z, as the probes write it (result.schema.json's pattern)."""

# per probe: the metrics a successful result carries, and their JSON types
_NUMBER = "number"
_INTEGER = "integer"
_STRING = "string"
_BOOLEAN = "boolean"
_ARRAY = "array"
_NUMBER_OR_NULL = "number or null"

METRICS: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        "allreduce": {
            "backend": _STRING,
            "worldSize": _INTEGER,
            "iterations": _INTEGER,
            "sizes": _ARRAY,
            "peakBusbwGBps": _NUMBER,
        },
        "checkpoint": {
            "bytes": _INTEGER,
            "writeSeconds": _NUMBER,
            "writeGBps": _NUMBER,
            "restoreSeconds": _NUMBER,
            "restoreGBps": _NUMBER,
            "verified": _BOOLEAN,
            "resumeSteps": _INTEGER,
            "resumed": _BOOLEAN,
            "resumeMaxLossDifference": _NUMBER_OR_NULL,
            "resumeSeconds": _NUMBER,
            "path": _STRING,
        },
        "storage": {
            "bytes": _INTEGER,
            "blockBytes": _INTEGER,
            "writeGBps": _NUMBER,
            "readGBps": _NUMBER,
            "fsync": _BOOLEAN,
            "path": _STRING,
        },
        "staging": {
            "bytes": _INTEGER,
            "files": _INTEGER,
            "seconds": _NUMBER,
            "GBps": _NUMBER,
            "source": _STRING,
        },
        "training": {
            "model": _STRING,
            "steps": _INTEGER,
            "windowSeconds": _NUMBER,
            "samplesPerSecond": _NUMBER,
            "batchSize": _INTEGER,
            "device": _STRING,
            "finalLoss": _NUMBER,
        },
        "inference": {
            "endpoint": _STRING,
            "model": _STRING,
            "requests": _INTEGER,
            "concurrency": _INTEGER,
            "errors": _INTEGER,
            "p50Ms": _NUMBER,
            "p95Ms": _NUMBER,
            "p99Ms": _NUMBER,
            "meanMs": _NUMBER,
        },
    }
)

_SIZE_FIELDS: Final = {
    "bytes": _INTEGER,
    "timeUs": _NUMBER,
    "algbwGBps": _NUMBER,
    "busbwGBps": _NUMBER,
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is(value: Any, wanted: str) -> bool:
    actual = _json_type(value)
    if wanted == _NUMBER_OR_NULL:
        return actual == "null" or _is(value, _NUMBER)
    if wanted == _NUMBER:
        return actual in (_NUMBER, _INTEGER)
    if wanted == _INTEGER and actual == _NUMBER:
        return float(value).is_integer()
    return actual == wanted


def _fields(data: Mapping[str, Any], fields: Mapping[str, str], at: str) -> Iterator[str]:
    """Each required field present with its type; numbers finite and not negative."""
    for name, wanted in fields.items():
        if name not in data:
            yield f"{at}{name} is missing"
        elif not _is(data[name], wanted):
            yield f"{at}{name} is {_json_type(data[name])}, not {wanted}"
        elif wanted in (_NUMBER, _INTEGER, _NUMBER_OR_NULL) and (data[name] or 0) < 0:
            yield f"{at}{name} is negative"


def _label_number(environment: Mapping[str, Any], key: str, positive: bool) -> Iterator[str]:
    value = environment.get(key)
    if not isinstance(value, str):
        return
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        kind = "a number above 0" if positive else "a number of seconds, 0 or more"
        yield f"environment[{key!r}] is {value[:40]!r}, not {kind}"


def _check_own(data: Mapping[str, Any]) -> list[str]:
    """The envelope and a successful result's metrics, as `schemas/results/` describe them."""
    problems: list[str] = []
    version = data.get("schemaVersion")
    if "schemaVersion" not in data:
        problems.append("schemaVersion is missing")
    elif _json_type(version) != _INTEGER or version != SCHEMA_VERSION:
        problems.append(f"schemaVersion is {json.dumps(version)[:20]}; this gpuplane reads 1")
    probe = data.get("probe")
    if not isinstance(probe, str) or probe not in PROBES:
        shown = json.dumps(probe)[:40] if "probe" in data else "missing"
        problems.append(f"probe is {shown}, not one of {', '.join(PROBES)}")
    for key in ("cluster", "pool", "error"):
        if key not in data:
            problems.append(f"{key} is missing")
        elif data[key] is not None and not isinstance(data[key], str):
            problems.append(f"{key} is {_json_type(data[key])}, not string or null")
    started = data.get("startedAt")
    if "startedAt" not in data:
        problems.append("startedAt is missing")
    elif not isinstance(started, str) or not _rfc3339(started):
        problems.append("startedAt is not an RFC 3339 date-time in UTC (…T…Z)")
    problems += _fields(data, {"durationSeconds": _NUMBER, "ok": _BOOLEAN}, "")
    environment = data.get("environment")
    if not isinstance(environment, dict):
        problems.append(
            "environment is missing" if environment is None else "environment is not an object"
        )
    else:
        bad = sorted(k for k, v in environment.items() if not isinstance(v, str))
        if bad:
            problems.append(f"environment[{bad[0][:40]!r}] is not a string")
        problems += _label_number(environment, QUEUE_WAIT_KEY, positive=False)
        problems += _label_number(environment, GPUS_KEY, positive=True)
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        problems.append("metrics is missing" if metrics is None else "metrics is not an object")
    elif data.get("ok") is True and isinstance(probe, str) and probe in METRICS:
        problems += _metrics_problems(probe, metrics)
    if data.get("ok") is False and not (isinstance(data.get("error"), str) and data["error"]):
        problems.append("a failed result (ok: false) must say why in error")
    return problems


RESUME_METRICS: Final = ("resumeSteps", "resumed", "resumeMaxLossDifference", "resumeSeconds")
"""The checkpoint figures of training resumed from the restore, which older probes did not write."""


def _metrics_problems(probe: str, metrics: Mapping[str, Any]) -> list[str]:
    problems = list(_fields(metrics, METRICS[probe], "metrics."))
    if probe == "checkpoint" and metrics and not any(k in metrics for k in RESUME_METRICS):
        problems = [p for p in problems if p.split()[0][len("metrics.") :] not in RESUME_METRICS]
        problems.append(
            "metrics has no resume figures (resumeSteps, resumed, ...): the checkpoint probe "
            "that wrote it did not resume training; run the checkpoint step again with the "
            "current probes"
        )
    if probe == "allreduce" and isinstance(metrics.get("sizes"), list):
        for index, size in enumerate(metrics["sizes"]):
            if not isinstance(size, dict):
                problems.append(f"metrics.sizes[{index}] is not an object")
            else:
                problems += _fields(size, _SIZE_FIELDS, f"metrics.sizes[{index}].")
    return problems


def _rfc3339(value: str) -> bool:
    if not _RFC3339.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


@cache
def _schema_validators() -> tuple[Draft202012Validator, Mapping[str, Draft202012Validator]]:
    """The probes' JSON Schemas as validators (envelope, per probe); they ship with the engine."""
    raws = {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(SCHEMA_DIR.glob("*.schema.json"))
    }
    resources = []
    for name, raw in raws.items():
        resource = Resource.from_contents(raw, default_specification=DRAFT202012)
        resources.append((name, resource))
        if isinstance(raw, dict) and isinstance(raw.get("$id"), str):
            resources.append((raw["$id"], resource))
    registry: Registry[Any] = Registry().with_resources(resources)

    def validator(raw: Any) -> Draft202012Validator:
        Draft202012Validator.check_schema(raw)
        return Draft202012Validator(raw, registry=registry, format_checker=None)

    probes = {
        probe: validator(raws[f"{probe}.schema.json"])
        for probe in PROBES
        if f"{probe}.schema.json" in raws
    }
    return validator(raws["result.schema.json"]), MappingProxyType(probes)


def _schema_problems(data: Mapping[str, Any]) -> list[str]:
    """What the probes' own schemas say about a result: the envelope, then `metrics` against
    the probe's schema."""
    envelope, probes = _schema_validators()
    problems = [_schema_message(e) for e in envelope.iter_errors(data)]
    probe = data.get("probe")
    if not problems and isinstance(probe, str) and probe in probes:
        metrics = data.get("metrics")
        problems += [_schema_message(e, "metrics") for e in probes[probe].iter_errors(metrics)]
    return sorted(set(problems))


def _schema_message(error: ValidationError, root: str = "") -> str:
    """`where: what`, from the most specific error (inside anyOf/oneOf, the best branch's)."""
    if error.context:
        error = best_match(error.context) or error
    where = ".".join(str(p) for p in (*([root] if root else []), *error.absolute_path))
    return f"{where or 'the result'}: {_oneline(error.message, 200)}"


def _check(data: Mapping[str, Any]) -> list[str]:
    """This module's own checks of the fields the report reads (clear messages for the usual
    mistakes), then, when they pass, the probes' schemas for everything else."""
    return _check_own(data) or _schema_problems(data)


# --- judging ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Figure:
    probe: str
    metric: str
    label: str
    unit: str
    comparison: str | None
    threshold_key: str | None = None
    fixed: float | bool | None = None


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
)
"""Every figure the report shows, in report order (the guide's steps, then the benchmarks)."""


def _passes(measured: float | bool, comparison: str, threshold: float | bool) -> bool:
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
        step=figure.probe,
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
    measured = result.metrics[figure.metric]
    if not isinstance(measured, bool):
        measured = float(measured)
    if comparison is None or threshold is None:
        return replace(row, measured=measured)
    if _passes(measured, comparison, threshold):
        return replace(row, measured=measured, verdict=Verdict.PASS)
    return replace(row, measured=measured, verdict=Verdict.FAIL, note=_why(figure, result))


def _why(figure: _Figure, result: Result) -> str | None:
    """What to do about a failed figure, where its number alone does not say."""
    if (figure.probe, figure.metric) != ("checkpoint", "resumed"):
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
        step=result.probe,
        metric="ok",
        label="probe run",
        unit="",
        measured=False,
        comparison="==",
        threshold=True,
        threshold_key=None,
        verdict=Verdict.FAIL,
        result=result.file,
        note=f"the probe failed: {_oneline(result.error or 'no reason given')}",
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
    """A threshold the pool declares for a probe that has no result here."""
    probes = {r.probe for r in results}
    return [
        Check(
            step=f.probe,
            metric=f.metric,
            label=f.label,
            unit=f.unit,
            measured=None,
            comparison=f.comparison,
            threshold=pool.acceptance[f.threshold_key],
            threshold_key=f.threshold_key,
            verdict=Verdict.MISSING,
            result=None,
            note=f"no {f.probe} result for this pool",
        )
        for f in FIGURES
        if f.threshold_key is not None
        and f.threshold_key in pool.acceptance
        and f.probe not in probes
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


def _cost(pool: Pool, result: Result) -> Cost | None:
    if not result.ok or result.probe not in ("training", "inference"):
        return None
    gpus, source = _gpus(result)
    rate = (
        f"{_num(pool.gpu_hour)} {pool.currency}/GPU-h x {_num(gpus)} GPU{'' if gpus == 1 else 's'}"
    )
    value: float | None
    if result.probe == "training":
        samples = float(result.metrics["samplesPerSecond"])
        value = pool.gpu_hour * gpus / (samples * 3600) * 1e6 if samples > 0 else None
        formula = f"{rate} / ({_num(samples)} samples/s x 3600 s/h) x 1,000,000"
        unit = "per million samples"
    else:
        concurrency = float(result.metrics["concurrency"])
        mean_ms = float(result.metrics["meanMs"])
        rps = concurrency / (mean_ms / 1000) if mean_ms > 0 else 0.0
        value = pool.gpu_hour * gpus / (rps * 3600) * 1000 if rps > 0 else None
        formula = (
            f"{rate} / ({_num(rps)} requests/s x 3600 s/h) x 1,000; requests/s = "
            f"{_num(concurrency)} concurrent / ({_num(mean_ms)} ms mean / 1000)"
        )
        unit = "per thousand requests"
    if value is None:
        formula += " (no throughput measured: no cost)"
    device = result.metrics.get("device")
    if isinstance(device, str) and device.lower().startswith("cpu"):
        source += "; measured on the CPU, not on the pool's accelerators"
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


def _nvlink(pool: Pool, result: Result) -> NvlinkShare | None:
    if not result.ok or result.probe != "allreduce":
        return None
    busbw = float(result.metrics["peakBusbwGBps"])
    entry = accelerator(pool.accelerator)
    nvlink = entry.nvlink_bandwidth_gbps if entry is not None else None
    share = busbw / nvlink if nvlink else None
    return NvlinkShare(result.file, busbw, nvlink, share)


def _order(check: Check) -> tuple[int, int, str]:
    steps = [*STEP_ORDER, "inference"]
    step = steps.index(check.step) if check.step in steps else len(steps)
    figures = [f.metric for f in FIGURES if f.probe == check.step]
    figure = figures.index(check.metric) if check.metric in figures else len(figures)
    return step, figure, check.result or ""


def _pool_acceptance(pool: Pool, results: Sequence[Result]) -> PoolAcceptance:
    checks = _queue_checks(pool, results)
    for result in results:
        for figure in FIGURES:
            if figure.probe == result.probe:
                check = _judge(figure, pool, result)
                if check is not None:
                    checks.append(check)
    checks += [_failed_run(r) for r in results if not r.ok]
    checks += _missing(pool, results)
    found_nvlink = [n for r in results if (n := _nvlink(pool, r)) is not None]
    found_costs = [c for r in results if (c := _cost(pool, r)) is not None]
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
            f"the {result.probe} result is for pool {_quote(result.pool)}, which pools/ does not declare",
            where,
            hint=f"did you mean '{near}'?"
            if near
            else f"known pools: {', '.join(sorted(platform.pools))}",
        )
    if result.cluster is not None and result.cluster != pool.cluster:
        return None, Diagnostic(
            "result-wrong-cluster",
            f"the {result.probe} result for pool '{pool.name}' ran on cluster "
            f"{_quote(result.cluster)}, but the pool belongs to '{pool.cluster}'; not counted",
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


# --- cell text --------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _oneline(value: str, limit: int = 200) -> str:
    """Text from a result file made safe for one line of a terminal: no control characters or
    bidirectional overrides, whitespace collapsed, cut at `limit` characters."""
    text = " ".join(_CONTROL.sub(" ", value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(value: str) -> str:
    return "'" + _oneline(value, 80) + "'"


def _num(value: float) -> str:
    """A figure as people read it: thousands separated, at most three decimals, no trailing 0."""
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1000:
        text = f"{value:,.1f}"
    elif size >= 0.01:
        text = f"{value:.3f}"
    else:
        return f"{value:.3g}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _money(value: float | None, currency: str) -> str:
    if value is None:
        return "n/a"
    text = f"{value:,.2f}" if value >= 1 else f"{value:.4g}"
    return f"{text} {currency}"


def _value(value: float | bool | None, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = _num(value)
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
}
_MD_VERDICT: Final = {
    Verdict.PASS: "✅ pass",
    Verdict.FAIL: "❌ **fail**",
    Verdict.MISSING: "❌ **missing**",
    Verdict.MEASURED: "📏 measured only",
    Verdict.NOT_REPORTED: "⚪ not reported",
}


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
    errors = sum(d.severity is Severity.ERROR for d in report.findings)
    if errors:
        parts.append(f"{errors} result file{'s' if errors != 1 else ''} not counted")
    return ", ".join(parts)


def _pool_title(pool: PoolAcceptance) -> str:
    return (
        f"{pool.cluster} / {pool.pool} ({pool.accelerator}, "
        f"{_num(pool.gpu_hour)} {pool.currency} per GPU-hour)"
    )


def _nvlink_text(share: NvlinkShare, accelerator_key: str) -> str:
    if share.nvlink_gbps is None or share.share is None:
        return (
            f"all-reduce {_num(share.busbw_gbps)} GB/s; the catalog has no NVLink figure for "
            f"{accelerator_key} (PCIe only)"
        )
    percent = f"{share.share:.0%}" if share.share >= 0.1 else f"{share.share:.2%}"
    return (
        f"all-reduce {_num(share.busbw_gbps)} GB/s is {percent} of the catalog's "
        f"NVLink figure for {accelerator_key} ({_num(share.nvlink_gbps)} GB/s per GPU, total "
        "bidirectional): indicative only"
    )


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
    verdict = "PASSED" if report.passed else "FAILED"
    lines = [*finding_lines(report.findings, lambda text: _oneline(text, 400))]
    if lines:
        lines.append("")
    lines += [f"acceptance {verdict}: {_headline(report)}", ""]
    for pool in report.pools:
        lines.append(f"{_pool_title(pool)}: {'passed' if pool.passed else 'FAILED'}")
        rows = [["step", "check", "measured", "threshold", "verdict", "result"]]
        rows += [
            [
                c.step,
                c.label,
                _measured(c),
                _threshold(c),
                _TEXT_VERDICT[c.verdict],
                _oneline(c.result or "-", 120),
            ]
            for c in pool.checks
        ]
        lines += _columns(rows)
        notes = [c for c in pool.checks if c.note]
        lines += [f"  ! {c.step} {c.label}: {c.note}" for c in notes]
        lines += [f"  reference: {_nvlink_text(n, pool.accelerator)}" for n in pool.nvlink]
        lines += [f"  cost: {_cost_text(c)}" for c in pool.costs]
        lines.append("")
    lines += [f"{term}: {text}" for term, text in FORMULAS]
    return "\n".join(lines) + "\n"


# --- Markdown ---------------------------------------------------------------------------------


def _cell(value: object) -> str:
    """Text that cannot break out of its Markdown table cell or line."""
    text = _oneline(str(value), 400)
    for char in "\\`*_[]|<>#~!":
        text = text.replace(char, "\\" + char)
    return text


def _code(value: str) -> str:
    """A file name as inline code that no backtick in it can close."""
    text = _oneline(value, 120).replace("`", "'")
    return f"`{text}`"


def report_markdown(report: AcceptanceReport) -> str:
    """GitHub-flavoured Markdown for a pull-request comment or a job summary."""
    mark = "✅" if report.passed else "❌"
    lines = [
        f"# {mark} Acceptance {'passed' if report.passed else 'failed'}",
        "",
        _cell(_headline(report)),
        "",
    ]
    if report.findings:
        lines += ["## Result files not counted", ""]
        for d in report.findings:
            hint = f" ({_cell(d.hint)})" if d.hint else ""
            lines.append(f"- {_code(str(d.at))}: **{d.rule}** {_cell(d.message)}{hint}")
        lines.append("")
    for pool in report.pools:
        lines += [
            f"## {'✅' if pool.passed else '❌'} {_cell(_pool_title(pool))}",
            "",
            "| step | check | measured | threshold | verdict | result |",
            "|---|---|---:|---:|---|---|",
        ]
        for c in pool.checks:
            result = _code(c.result) if c.result else "-"
            lines.append(
                f"| {c.step} | {_cell(c.label)} | {_cell(_measured(c))} | "
                f"{_cell(_threshold(c))} | {_MD_VERDICT[c.verdict]} | {result} |"
            )
        lines.append("")
        lines += [
            f"- **{c.step}** {_cell(c.label)}: {_cell(c.note)}" for c in pool.checks if c.note
        ]
        lines += [f"- reference: {_cell(_nvlink_text(n, pool.accelerator))}" for n in pool.nvlink]
        lines += [f"- cost of useful work: {_cell(_cost_text(c))}" for c in pool.costs]
        if lines[-1] != "":
            lines.append("")
    lines += ["<details><summary>Formulas</summary>", ""]
    lines += [f"- **{term}**: {_cell(text)}" for term, text in FORMULAS]
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


# --- JSON -------------------------------------------------------------------------------------


def _json_number(value: float | bool | None) -> float | bool | None:
    if value is None or isinstance(value, bool):
        return value
    return float(f"{float(value):.6g}")  # six significant digits: enough, and stable


def report_json(report: AcceptanceReport) -> str:
    """For tools: stable camelCase keys in sorted order, numbers as numbers."""
    pools = [
        {
            "cluster": p.cluster,
            "pool": p.pool,
            "accelerator": p.accelerator,
            "gpuHour": p.gpu_hour,
            "currency": p.currency,
            "passed": p.passed,
            "results": list(p.results),
            "checks": [
                {
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
                for c in p.checks
            ],
            "nvlinkShare": [
                {
                    "result": n.result,
                    "busbwGBps": _json_number(n.busbw_gbps),
                    "catalogNvlinkGBps": n.nvlink_gbps,
                    "share": None if n.share is None else round(n.share, 4),
                }
                for n in p.nvlink
            ],
            "costs": [
                {
                    "step": c.step,
                    "unit": c.unit,
                    "value": _json_number(c.value),
                    "currency": c.currency,
                    "gpus": _json_number(c.gpus),
                    "gpusSource": c.gpus_source,
                    "formula": c.formula,
                    "result": c.result,
                }
                for c in p.costs
            ],
        }
        for p in report.pools
    ]
    findings = [
        {
            "rule": d.rule,
            "severity": d.severity.value,
            "message": d.message,
            "file": d.at.file,
            "line": d.at.line,
            "column": d.at.col,
            "hint": d.hint,
        }
        for d in report.findings
    ]
    body = {
        "version": VERSION,
        "passed": report.passed,
        "summary": {
            "pools": len(report.pools),
            "files": report.files,
            **{_camel(v): report.count(v) for v in Verdict},
            "findings": len(report.findings),
        },
        "pools": pools,
        "findings": findings,
        "formulas": dict(FORMULAS),
    }
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _camel(verdict: Verdict) -> str:
    head, *rest = verdict.value.split("-")
    return head + "".join(part.title() for part in rest)
