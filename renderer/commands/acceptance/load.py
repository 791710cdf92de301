"""Reading acceptance result files defensively: they come from jobs on shared clusters, so a
file may be truncated, huge, hostile or from another version. Each file is a `Result` or one
finding that says why it cannot be counted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from renderer.commands.acceptance.readable import oneline
from renderer.commands.acceptance.results import (
    GPUS_KEY,
    LABELLED_STEPS,
    QUEUE_WAIT_KEY,
    STEP_KEY,
    Result,
)
from renderer.findings.diagnostics import Diagnostic, Location
from renderer.findings.rules import document_rule
from renderer.inputs import schema
from renderer.inputs.source import json_nests_deeper

SCHEMA_VERSION: Final = 1
"""The `schemaVersion` of the results this report understands."""

MAX_RESULT_BYTES: Final = 1024 * 1024
"""A result is a few kilobytes (an all-reduce sweep is the largest); one over 1 MiB is refused."""

MAX_DEPTH: Final = 32
"""No result nests deeper than a few levels; deeper JSON is refused before it is read."""

PROBES: Final = (
    "allreduce",
    "checkpoint",
    "storage",
    "staging",
    "training",
    "inference",
    "nodes",
)

SCHEMA_DIR: Final = schema.SCHEMA_DIR / "results"
"""The probes' result schemas, shipped with the engine's (see docs/acceptance-report.md)."""

for _rule, _doc in {
    "result-unreadable": f"""An acceptance result file cannot be read.

It is not a regular file, cannot be opened, is larger than {MAX_RESULT_BYTES // 1024} KiB, or is
not UTF-8 text. A probe writes a few kilobytes of UTF-8 JSON; anything else is a truncated
upload, the wrong file, or a hostile one.

To satisfy it: pass the JSON files the probes wrote (`gpuplane acceptance report results/`
reads every `*.json` below a folder), or run the probe again if its file was cut short.""",
    "result-syntax": f"""An acceptance result file is not valid JSON.

The file must hold exactly one JSON object, without duplicate keys, NaN or Infinity, nested no
deeper than {MAX_DEPTH} levels. A probe killed while writing leaves a truncated file.

To satisfy it: run the probe again for a complete file. In a file edited by hand, fix the JSON
at the line and column where the parser stopped (a trailing comma, a missing quote or brace);
`python -m json.tool FILE` shows the same place.""",
    "result-invalid": """An acceptance result does not match the result schema.

Every result carries the envelope of `schemas/results/result.schema.json` (schemaVersion 1,
probe, cluster, pool, startedAt, durationSeconds, ok, error, environment, metrics), and a
successful one the metrics its probe's schema describes. A result from another version of the
probes, or edited by hand, cannot be judged.

To satisfy it: run the probe of this gpuplane version again rather than editing the result;
the finding names the field and what is wrong with it. The schemas are in `schemas/results/`.""",
}.items():
    document_rule(_rule, "acceptance", _doc)


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
        complete=not _metrics_problems(
            data["probe"], data["metrics"], _step_label(data["environment"])
        ),
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


def _parse(text: str, display: str) -> Any:
    if json_nests_deeper(text, MAX_DEPTH):
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
_OBJECT = "object"
_STRING_OR_NULL = "string or null"

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
        "nodes": {
            "nodeCount": _INTEGER,
            "worldSize": _INTEGER,
            "nodes": _ARRAY,
            "links": _ARRAY,
            "poolBusbwGBps": _NUMBER,
            "outlierFraction": _NUMBER,
            "fabric": _OBJECT,
        },
    }
)

STEP_METRICS: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        "concurrent-storage": {
            "workers": _INTEGER,
            "aggregateReadGBps": _NUMBER,
            "aggregateWriteGBps": _NUMBER,
            "slowestReadGBps": _NUMBER,
            "slowestWriteGBps": _NUMBER,
        },
        "object-store": {"workers": _INTEGER, "aggregateGBps": _NUMBER},
        "node-loss": {
            "sinceWriteSeconds": _NUMBER,
            "writerNode": _STRING,
            "restoreNode": _STRING,
        },
    }
)
"""The figures a labelled step (`gpuplane.dev/step`) judges beyond its probe's own: the probes
write them with `--workers` and on a restore (docs/probes.md)."""

_NODE_FIELDS: Final = {
    "node": _STRING,
    "healthy": _BOOLEAN,
    "error": _STRING_OR_NULL,
    "intraBusbwGBps": _NUMBER_OR_NULL,
    "matmulTflops": _NUMBER,
}
_LINK_FIELDS: Final = {"a": _STRING, "b": _STRING, "busbwGBps": _NUMBER}
_FABRIC_ERROR_FIELDS: Final = {
    "node": _STRING,
    "device": _STRING,
    "port": _STRING,
    "counter": _STRING,
    "delta": _NUMBER,
}

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
    if wanted == _STRING_OR_NULL:
        return actual in ("null", _STRING)
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


def _label_number(environment: Mapping[str, Any], key: str, *, positive: bool) -> Iterator[str]:
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
        problems += _metrics_problems(probe, metrics, _step_label(environment))
    if data.get("ok") is False and not (isinstance(data.get("error"), str) and data["error"]):
        problems.append("a failed result (ok: false) must say why in error")
    return problems


RESUME_METRICS: Final = ("resumeSteps", "resumed", "resumeMaxLossDifference", "resumeSeconds")
"""The checkpoint figures of training resumed from the restore, which older probes did not write."""


def _step_label(environment: Any) -> str | None:
    """The labelled step a result was run as, when its label names one of its probe's."""
    label = environment.get(STEP_KEY) if isinstance(environment, dict) else None
    return label if isinstance(label, str) and label in LABELLED_STEPS else None


def _items(metrics: Mapping[str, Any], key: str, fields: Mapping[str, str]) -> Iterator[str]:
    """Each object of the array `metrics[key]` with its fields."""
    found = metrics.get(key)
    if not isinstance(found, list):
        return
    for index, item in enumerate(found):
        if not isinstance(item, dict):
            yield f"metrics.{key}[{index}] is not an object"
        else:
            yield from _fields(item, fields, f"metrics.{key}[{index}].")


def _nodes_problems(metrics: Mapping[str, Any]) -> list[str]:
    """The node check's per-node, per-link and fabric figures the report reads."""
    problems = [*_items(metrics, "nodes", _NODE_FIELDS), *_items(metrics, "links", _LINK_FIELDS)]
    fabric = metrics.get("fabric")
    if isinstance(fabric, dict):
        problems += _fields(fabric, {"available": _BOOLEAN, "errors": _ARRAY}, "metrics.fabric.")
        problems += _items(fabric, "errors", _FABRIC_ERROR_FIELDS)
    return [p.replace("metrics.errors", "metrics.fabric.errors") for p in problems]


def _metrics_problems(probe: str, metrics: Mapping[str, Any], step: str | None = None) -> list[str]:
    problems = list(_fields(metrics, METRICS[probe], "metrics."))
    if step is not None and LABELLED_STEPS[step] == probe and metrics:
        problems += [
            f"{p} (the {step} step's figure)"
            for p in _fields(metrics, STEP_METRICS[step], "metrics.")
        ]
    if probe == "nodes":
        problems += _nodes_problems(metrics)
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
    return f"{where or 'the result'}: {oneline(error.message, 200)}"


def _check(data: Mapping[str, Any]) -> list[str]:
    """This module's own checks of the fields the report reads (clear messages for the usual
    mistakes), then, when they pass, the probes' schemas for everything else."""
    return _check_own(data) or _schema_problems(data)
