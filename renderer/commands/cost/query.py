"""The PromQL that exports a window's usage for `gpuplane cost`, from the series contract
(`renderer.model.metrics`).

Three figures per cluster, team, cost centre and pool, each a series labelled `term`:

- `allocated_gpu_hours`: `POD_GPUS_ALLOCATED` summed over the window. A subquery
  `[WINDOW:5m]` samples it every `EXPORT_STEP_SECONDS`, so each sample is worth 300/3600 of an
  hour (Prometheus `promql/engine.go`, subqueries evaluate at multiples of their step);
- `used_gpu_hours`: `POD_GPUS_BUSY` the same way, for pods that were never Failed in the window
  (`unless on (cluster, namespace, pod)` the pods whose `POD_FAILED` was ever above 0);
- `failed_gpu_hours`: `POD_GPUS_ALLOCATED` of exactly those pods (`and on (...)`).

The three are joined with `or` after `label_replace(v, "term", "<name>", "", "")`, which sets
the label on every series (an empty regex matches the empty source label). Everything uses
PromQL of Prometheus 2.x (`promtool` 2.42 parses it). Pods without a team (no gpuplane
namespace) are left out: their GPU-hours are nobody's to pay.
"""

from __future__ import annotations

import re
from typing import Final

from renderer.commands.cost.usage import GPU_TERMS
from renderer.model.metrics import (
    CLUSTER,
    COST_CENTER,
    EXPORT_STEP_SECONDS,
    NAMESPACE,
    POD,
    POD_FAILED,
    POD_GPUS_ALLOCATED,
    POD_GPUS_BUSY,
    POOL,
    TEAM,
)

WINDOW: Final = re.compile(r"(?:[0-9]+(?:ms|[smhdwy]))+", re.ASCII)
"""A Prometheus duration (`model.ParseDuration`): units largest first, e.g. `30d` or `1w2d`."""

_UNITS: Final = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}


def window_problem(window: str) -> str | None:
    """Why `window` is not a duration the query can use, or None."""
    if not WINDOW.fullmatch(window):
        return f"{window!r} is not a Prometheus duration such as 30d, 1w or 720h"
    seconds = 0.0
    for count, unit in re.findall(r"([0-9]+)(ms|[smhdwy])", window):
        seconds += int(count) * (0.001 if unit == "ms" else _UNITS[unit])
    if seconds < EXPORT_STEP_SECONDS:
        return f"{window!r} is shorter than the export's {EXPORT_STEP_SECONDS // 60}-minute step"
    return None


def export_query(window: str) -> str:
    """The instant query whose result `gpuplane cost` reads, over the window ending at the
    query's evaluation time (see the module's docstring)."""
    by = f"{CLUSTER}, {TEAM}, {COST_CENTER}, {POOL}"
    on = f"{CLUSTER}, {NAMESPACE}, {POD}"
    step = f"{EXPORT_STEP_SECONDS // 60}m"
    hours = f" * {EXPORT_STEP_SECONDS} / 3600"
    allocated = f'sum_over_time({POD_GPUS_ALLOCATED}{{{TEAM}!=""}}[{window}:{step}])'
    busy = f'sum_over_time({POD_GPUS_BUSY}{{{TEAM}!=""}}[{window}:{step}])'
    failed = f"(max_over_time({POD_FAILED}[{window}:{step}]) > 0)"
    parts = (
        f"sum by ({by}) ({allocated})",
        f"sum by ({by}) ({busy} unless on ({on}) {failed})",
        f"sum by ({by}) ({allocated} and on ({on}) {failed})",
    )
    return "\nor\n".join(
        f'label_replace(\n  {part}{hours},\n  "term", "{term}", "", ""\n)'
        for part, term in zip(parts, GPU_TERMS, strict=True)
    )
