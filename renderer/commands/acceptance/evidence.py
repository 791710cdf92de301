"""`gpuplane acceptance record`: the judged report as one evidence file per pool,
`acceptance/<cluster>/<pool>.yaml` (schemas/evidence.schema.json, docs/acceptance-evidence.md).

The file is built from the same `AcceptanceReport` as `acceptance report`, so the two never
disagree; it adds what the capacity gate reads: when, on which nodes, in which image, with
which driver, CUDA, NCCL and torch. Same results and same clock, same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator

from renderer.commands.acceptance.device import DEVICE_PROBES
from renderer.commands.acceptance.judge import STEP_ORDER
from renderer.commands.acceptance.results import (
    AcceptanceReport,
    Check,
    PoolAcceptance,
    Result,
    Status,
    Verdict,
)
from renderer.inputs import schema
from renderer.model.evidence import evidence_path
from renderer.model.platform import Platform
from renderer.output.canonical import dump
from renderer.output.writer import write_file_atomically

API_VERSION: Final = "gpuplane.dev/v1alpha1"
KIND: Final = "AcceptanceEvidence"

DIGEST_KEY: Final = "gpuplane.dev/image-digest"
UNKNOWN: Final = "unknown"
CONFIGMAP_PREFIX: Final = "acceptance-evidence-"
"""The suite's report step applies each file as ConfigMap `acceptance-evidence-<pool>`."""

_FIGURE_VERDICT: Final = {
    Verdict.PASS: "pass",
    Verdict.FAIL: "fail",
    Verdict.MISSING: "fail",
    Verdict.MEASURED: "measured",
    Verdict.NOT_REPORTED: "measured",
    Verdict.NOT_COMPARABLE: "not-comparable",
}


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _span(results: Sequence[Result], now: datetime) -> tuple[str, str]:
    """The earliest start and the latest end (start + duration, rounded up to the second)."""
    if not results:
        return _stamp(now), _stamp(now)
    starts = [_parse(r.started_at) for r in results]
    ends = [
        _parse(r.started_at) + timedelta(seconds=math.ceil(r.duration_seconds)) for r in results
    ]
    return _stamp(min(starts)), _stamp(max(ends))


def _label(results: Sequence[Result], key: str, limit: int = 63) -> str:
    """The value the results agree on for a label, the torch probes' first (they run in the
    production image); differing values are all shown, so no comparison can match them."""
    for chosen in ([r for r in results if r.probe in DEVICE_PROBES], list(results)):
        values = sorted({v for r in chosen if (v := r.environment.get(key))})
        if values:
            return " / ".join(values)[:limit]
    return UNKNOWN


def _digest(results: Sequence[Result]) -> str:
    value = _label(results, DIGEST_KEY, 200)
    valid = value.startswith("sha256:") and len(value) == 71
    return value if valid and all(c in "0123456789abcdef" for c in value[7:]) else UNKNOWN


def _number(value: float | bool | None) -> float | bool | None:  # noqa: FBT001
    if value is None or isinstance(value, bool):
        return value
    number = float(f"{float(value):.6g}")
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _figure(check: Check) -> dict[str, Any]:
    found: dict[str, Any] = {"name": check.metric, "value": _number(check.measured)}
    threshold = check.threshold
    if threshold is not None and not isinstance(threshold, bool):
        found["threshold"] = _number(threshold)
        # `== 0` (no failed request, no fabric error) of a count that is never negative
        found["comparison"] = "<=" if check.comparison == "==" else check.comparison
    found["verdict"] = _FIGURE_VERDICT[check.verdict]
    return found


def _step_verdict(checks: Sequence[Check], *, elsewhere: bool) -> str:
    verdicts = {c.verdict for c in checks}
    if Verdict.FAIL in verdicts:
        return "fail"
    if Verdict.MISSING in verdicts:
        return "missing"
    if elsewhere or Verdict.NOT_COMPARABLE in verdicts:
        return "not-comparable"
    return "pass" if Verdict.PASS in verdicts else "measured"


def _steps(pool: PoolAcceptance, results: Sequence[Result]) -> list[dict[str, Any]]:
    """One entry per step judged, in the suite's order, with its figures."""
    order = [*STEP_ORDER, "inference"]
    names = sorted(
        {c.step for c in pool.checks},
        key=lambda s: (order.index(s) if s in order else len(order), s),
    )
    off = {d.result: d.message for d in pool.devices if not d.comparable}
    steps = []
    for name in names:
        checks = [c for c in pool.checks if c.step == name]
        files = {r.file for r in results if r.step == name}
        elsewhere = sorted(off[f] for f in files if f in off)
        entry: dict[str, Any] = {
            "step": name,
            "verdict": _step_verdict(checks, elsewhere=bool(elsewhere)),
        }
        notes = [c.note for c in checks if c.note and c.verdict is not Verdict.PASS]
        if entry["verdict"] != "pass" and (notes or elsewhere):
            entry["note"] = " ".join((elsewhere or notes)[0].split())[:1024]
        entry["figures"] = [_figure(c) for c in checks]
        steps.append(entry)
    return steps


def _nodes(pool: PoolAcceptance, results: Sequence[Result]) -> list[dict[str, Any]]:
    """Every node a result came from and every node the node check measured, by name."""
    checked = {row.node: row for row in pool.nodes}
    names = {r.environment["node"] for r in results if r.environment.get("node")} | set(checked)
    found = []
    for name in sorted(names):
        entry: dict[str, Any] = {"name": name, "verdict": "measured"}
        row = checked.get(name)
        if row is not None:
            entry["verdict"] = "fail" if row.verdict is Verdict.FAIL else "pass"
            entry["figures"] = [
                {"name": "healthy", "value": row.healthy},
                {"name": "intraBusbwGBps", "value": _number(row.intra_busbw_gbps)},
                {"name": "matmulTflops", "value": _number(row.matmul_tflops)},
            ]
        found.append(entry)
    return found


def _verdict(pool: PoolAcceptance) -> str:
    """pass only on figures shown to come from the pool's own accelerator."""
    if pool.status is Status.FAILED:
        return "fail"
    if pool.status is Status.NOT_COMPARABLE or not any(d.comparable for d in pool.devices):
        return "not-comparable"
    return "pass"


def _measured_on(pool: PoolAcceptance) -> tuple[str, str]:
    """The accelerator and device name the results were measured on."""
    comparable = sorted({d.name for d in pool.devices if d.comparable and d.name})
    if comparable:
        return pool.accelerator, comparable[0]
    if any(d.device == "cpu" for d in pool.devices):
        return "cpu", "cpu"
    names = sorted({d.name or d.device or UNKNOWN for d in pool.devices})
    return UNKNOWN, (names[0] if names else UNKNOWN)[:253]


def evidence(
    platform: Platform,
    pool: PoolAcceptance,
    results: Sequence[Result],
    *,
    now: datetime,
    run: str | None = None,
) -> dict[str, Any]:
    """The evidence document of one pool of the report."""
    declared = platform.pools[pool.pool]
    started, finished = _span(results, now)
    accelerator, device = _measured_on(pool)
    spec: dict[str, Any] = {"cluster": pool.cluster, "verdict": _verdict(pool)}
    if run:
        spec["run"] = run[:253]
    spec |= {
        "startedAt": started,
        "finishedAt": finished,
        "recordedAt": _stamp(now),
        "accelerator": accelerator,
        "device": device,
        **{key: _label(results, key) for key in ("driver", "cuda", "nccl", "torch")},
        "image": {"reference": _label(results, "image", 512), "digest": _digest(results)},
        "poolNodes": declared.size,
        "nodes": _nodes(pool, results),
        "outliers": [
            {
                "subject": o.subject,
                "figure": o.figure,
                "value": _number(o.value),
                "median": _number(o.median),
            }
            for o in sorted(
                pool.outliers, key=lambda o: (o.value / o.median if o.median else 0, o.subject)
            )
        ],
        "steps": _steps(pool, results),
    }
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": pool.pool}, "spec": spec}


def evidence_documents(
    platform: Platform,
    report: AcceptanceReport,
    results: Iterable[Result],
    *,
    now: datetime,
    run: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Each reported pool's evidence, by its path below the root (acceptance/<cluster>/<pool>.yaml)."""
    by_file = {r.file: r for r in results}
    found = {}
    for pool in report.pools:
        mine = [by_file[f] for f in pool.results if f in by_file]
        found[evidence_path(pool.cluster, pool.pool)] = evidence(
            platform, pool, mine, now=now, run=run
        )
    return found


def evidence_text(document: Mapping[str, Any]) -> str:
    """The file: a header that says it is generated and how to regenerate it, then the YAML."""
    pool = document["metadata"]["name"]
    header = (
        "# yaml-language-server: $schema=../../schemas/evidence.schema.json\n"
        "# Generated by `gpuplane acceptance record` from an acceptance run's results: do not\n"
        "# edit. Regenerate it from the run's results (or the suite's ConfigMap\n"
        f"# {CONFIGMAP_PREFIX}{pool}) with:\n"
        f"#   gpuplane acceptance record RESULTS... --pool {pool}\n"
        "# See docs/acceptance-evidence.md.\n"
    )
    return header + dump(document)


@cache
def _validator() -> Draft202012Validator:
    raw = json.loads((schema.SCHEMA_DIR / "evidence.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(raw)
    return Draft202012Validator(raw)


def evidence_problems(document: Mapping[str, Any]) -> list[str]:
    """What schemas/evidence.schema.json says is wrong with a document (nothing, normally)."""
    return sorted(
        f"{'.'.join(str(p) for p in e.absolute_path) or 'the document'}: {e.message}"
        for e in _validator().iter_errors(document)
    )


def configmap(
    document: Mapping[str, Any], namespace: str, image_namespace: str = ""
) -> dict[str, Any]:
    """The ConfigMap the suite's report step applies: the file under the key `<pool>.yaml`. A
    run in a team namespace's own production image (`image_namespace`) gets its own ConfigMap,
    `-<namespace>` after the pool's name, so it never replaces the pool's evidence."""
    pool = document["metadata"]["name"]
    labels = {
        "gpuplane.dev/cluster": document["spec"]["cluster"],
        "gpuplane.dev/pool": pool,
        "gpuplane.dev/verdict": document["spec"]["verdict"],
    }
    name = f"{CONFIGMAP_PREFIX}{pool}"
    if image_namespace:
        name = f"{name}-{image_namespace}"
        labels["gpuplane.dev/image-namespace"] = image_namespace
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
        },
        "data": {f"{pool}.yaml": evidence_text(document)},
    }


def configmaps(
    documents: Iterable[Mapping[str, Any]], namespace: str, image_namespace: str = ""
) -> dict[str, Any]:
    """One ConfigMap, or a v1 List of them for several pools."""
    found = [configmap(d, namespace, image_namespace) for d in documents]
    if len(found) == 1:
        return found[0]
    return {"apiVersion": "v1", "kind": "List", "items": found}


def recorded_at(environment: Mapping[str, str]) -> datetime:
    """Now, or SOURCE_DATE_EPOCH (reproducible-builds.org) when set: the clock of a record."""
    epoch = environment.get("SOURCE_DATE_EPOCH", "")
    if epoch.isascii() and epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC)
    return datetime.now(UTC)


def write_evidence(root: Path, texts: Mapping[str, str]) -> list[str]:
    """Write each file (path below `root` -> text) atomically: a temporary file renamed over
    the old one. Returns the paths whose bytes changed."""
    return [
        path
        for path, text in sorted(texts.items())
        if write_file_atomically(root / path, text.encode("utf-8"))
    ]
