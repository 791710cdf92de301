"""The Prometheus HTTP API's JSON of the export query (`renderer.commands.cost.query`) as usage.

The response of `GET /api/v1/query` (Prometheus `web/api/v1/api.go`, `queryData`): `status`,
`data.resultType` and `data.result`, each series `{"metric": {labels}, "value": [t, "v"]}` with
the value a string as `strconv.FormatFloat` writes it (so `"NaN"`, `"+Inf"` and `"-Inf"` are
valid samples there, and refused here). A `matrix` (from `/api/v1/query_range`) is read by its
last sample: each sample of the export query is already the whole window ending at its
timestamp, so the last one is the window ending at the range's end. That holds only when every
series ends at the same time; otherwise the figures would cover different windows, and the file
is refused.

Findings name the series by its index and labels and point at the line and column where its
object opens: the file is parsed with the json module's pure-Python scanner, which lets each
object keep its offset.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable
from datetime import UTC, datetime
from json.decoder import JSONObject  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, Final

from renderer.commands.cost.rules import MAX_DEPTH, MAX_ROWS
from renderer.commands.cost.usage import GPU_TERMS, GpuHours, Usage, finding, number, read_text
from renderer.findings.diagnostics import Diagnostic, Location
from renderer.inputs.source import json_nests_deeper

TERM_LABEL: Final = "term"
RESULT_TYPES: Final = ("vector", "matrix")


class _Object(dict[str, Any]):
    """A JSON object that remembers the offset of its `{` in the text."""

    offset: int = 0


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    found = _Object()
    for key, value in pairs:
        if key in found:
            raise _Duplicate(f"duplicate key {key!r}")
        found[key] = value
    return found


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (Prometheus writes sample values as strings)")


def _decoder() -> json.JSONDecoder:
    decoder = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)
    plain: Callable[..., tuple[Any, int]] = JSONObject

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        found, end = plain(s_and_end, *args)
        found.offset = s_and_end[1] - 1
        return found, end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the export nests deeper than `limit` (renderer.inputs.source)."""
    return json_nests_deeper(text, limit)


def read_json(path: Path, display: str | None = None) -> Usage:
    """A saved `/api/v1/query` response of the export query as GPU-hours per team and pool."""
    display = display or str(path)
    text = read_text(path, display)
    if isinstance(text, Diagnostic):
        return Usage(findings=(text,), sources=(display,))
    top = Location(display, 1, 1)
    if too_deep(text):
        return _refused(display, f"JSON nested deeper than {MAX_DEPTH} levels", top)
    try:
        data = _decoder().decode(text)
    except json.JSONDecodeError as err:
        return _refused(
            display, f"invalid JSON: {err.msg}", Location(display, err.lineno, err.colno)
        )
    except (ValueError, RecursionError) as err:  # duplicates, NaN literals, huge integers
        return _refused(display, f"invalid JSON: {err}", top)
    return _response(data, text, display)


def _refused(display: str, message: str, at: Location, hint: str | None = None) -> Usage:
    return Usage(findings=(finding("cost-json", message, at, hint),), sources=(display,))


def _at(text: str, display: str, value: Any) -> Location:
    offset = getattr(value, "offset", 0)
    line = text.count("\n", 0, offset) + 1
    return Location(display, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


def _response(data: Any, text: str, display: str) -> Usage:
    top = Location(display, 1, 1)
    if not isinstance(data, dict):
        return _refused(display, "not a JSON object", top)
    status = data.get("status")
    if status == "error":
        why = f"{data.get('errorType', '')}: {data.get('error', '')}"
        return _refused(
            display,
            f"the query failed: {why[:300]}",
            top,
            "run the query again; `promtool query instant URL QUERY` shows the same error",
        )
    body = data.get("data")
    if status != "success" or not isinstance(body, dict):
        return _refused(
            display,
            "not a Prometheus API response: no status 'success' with a data object",
            top,
            "save what /api/v1/query returns (docs/cost.md)",
        )
    kind = body.get("resultType")
    result = body.get("result")
    if kind not in RESULT_TYPES or not isinstance(result, list):
        shown = kind if isinstance(kind, str) else type(kind).__name__
        return _refused(
            display,
            f"result type {shown[:40]!r}: the export query answers a vector",
            _at(text, display, body),
            "run the query as an instant query (/api/v1/query)",
        )
    if len(result) > MAX_ROWS:
        return Usage(
            findings=(finding("cost-unreadable", f"more than {MAX_ROWS:,} series", top),),
            sources=(display,),
        )
    return _series(result, matrix=kind == "matrix", text=text, display=display)


def _labels(metric: dict[str, Any]) -> str:
    shown = []
    for name in (TERM_LABEL, "team", "pool"):
        value = metric.get(name)
        if isinstance(value, str):
            shown.append(f"{name}={json.dumps(value[:60])}")
    return "{" + ", ".join(shown) + "}"


def _series(result: list[Any], *, matrix: bool, text: str, display: str) -> Usage:
    findings: list[Diagnostic] = []
    figures: dict[tuple[str, str, str], dict[str, float]] = {}
    first: dict[tuple[str, str, str], tuple[Location, str]] = {}
    seen: dict[tuple[str, str, str], Location] = {}
    ends: dict[float, tuple[Location, str]] = {}
    for index, series in enumerate(result):
        at = _at(text, display, series)
        metric = series.get("metric") if isinstance(series, dict) else None
        if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
            findings.append(
                finding("cost-json", f"series {index} has no metric object of string labels", at)
            )
            continue
        name = f"series {index} {_labels(metric)}"
        term, team, pool = (metric.get(k, "") for k in (TERM_LABEL, "team", "pool"))
        if term not in GPU_TERMS:
            findings.append(
                finding(
                    "cost-json",
                    f"{name}: label term is {term[:60]!r}, not one of {', '.join(GPU_TERMS)}",
                    at,
                    "export with the query `gpuplane cost --query WINDOW` prints",
                )
            )
            continue
        if not team or not pool:
            findings.append(finding("cost-json", f"{name}: no team or no pool label", at))
            continue
        sample = _sample(series, matrix=matrix)
        if isinstance(sample, str):
            findings.append(finding("cost-json", f"{name}: {sample}", at))
            continue
        stamp, raw = sample
        value = number(raw, f"{name}: value", at)
        if isinstance(value, Diagnostic):
            findings.append(value)
            continue
        key = (team, pool, term)
        if key in seen:
            findings.append(
                Diagnostic(
                    "cost-duplicate",
                    f"{name}: a second series for team {team!r}, pool {pool!r}, term {term}",
                    at,
                    notes=(("the first series", seen[key]),),
                )
            )
            continue
        seen[key] = at
        ends.setdefault(stamp, (at, name))
        pair = (team, pool, metric.get("cluster", ""))
        figures.setdefault(pair, {})[term] = value
        first.setdefault(pair, (at, name))
    if matrix and len(ends) > 1:
        (t1, (_, n1)), (t2, (a2, n2)) = sorted(ends.items())[:2]
        findings.append(
            finding(
                "cost-json",
                f"{n2} ends at {_rfc3339(t2)}, {n1} at {_rfc3339(t1)}: the last samples "
                "cover different windows",
                a2,
                "run the export as an instant query at the window's end",
            )
        )
    hours = tuple(
        GpuHours(
            team,
            pool,
            got.get(GPU_TERMS[0], 0.0),
            got.get(GPU_TERMS[1], 0.0),
            got.get(GPU_TERMS[2], 0.0),
            first[(team, pool, cluster)][0],
            first[(team, pool, cluster)][1],
            cluster or None,
        )
        for (team, pool, cluster), got in figures.items()
    )
    ending = _rfc3339(max(ends)) if ends else None
    return Usage(hours, (), tuple(findings), ending, (display,))


def _sample(series: dict[str, Any], *, matrix: bool) -> tuple[float, str] | str:
    """The series' (timestamp, value string), or what is wrong with it."""
    if matrix:
        values = series.get("values")
        if not isinstance(values, list) or not values:
            return "no values (a matrix series needs at least one sample)"
        pair = values[-1]
    else:
        pair = series.get("value")
        if pair is None and "histogram" in series:
            return "a native histogram sample, not a figure"
    if (
        not isinstance(pair, list)
        or len(pair) != 2
        or not isinstance(pair[0], int | float)
        or isinstance(pair[0], bool)
        or not isinstance(pair[1], str)
    ):
        return 'its sample is not [timestamp, "value"]'
    return float(pair[0]), pair[1]


def _rfc3339(stamp: float) -> str:
    try:
        moment = datetime.fromtimestamp(stamp, UTC)
    except (OverflowError, OSError, ValueError):
        return f"{stamp:g}"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
