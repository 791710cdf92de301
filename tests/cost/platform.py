"""The platform `gpuplane cost`'s tests run on: the example platform's inputs, with the rates
and accepted units the worked examples are computed from written over the files' own, so the
arithmetic in the tests stays true whatever the example's pools charge."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import REPO, copy_inputs

RATES: Mapping[str, float] = {"h100-train": 2.85, "a100-mig": 1.60, "l40s-infer": 0.95}
"""GPU-hour rates of the worked example (USD): a100-mig is the MIG pool (1g.10gb = 1/7 GPU)."""

UNITS: Mapping[str, tuple[str, int]] = {
    "vision": ("completed-training-runs", 1),
    "llm": ("requests-served", 1_000_000),
    "speech": ("accepted-model-outputs", 1),
}

_RATE = re.compile(r"^(\s*gpuHour:\s*)[0-9.]+", re.M)
_CURRENCY = re.compile(r"^(\s*currency:\s*)\S+", re.M)
_UNIT = re.compile(r"^  acceptedUnit:\n(?:    .*\n)+", re.M)
_COST_CENTER = re.compile(r"^  costCenter: .*\n", re.M)


def cost_platform(target: Path, currency: Mapping[str, str] | None = None) -> Path:
    """A copy of the example's inputs at `target` with `RATES` and `UNITS` (and, per pool, the
    currency given)."""
    copy_inputs(REPO, target)
    for pool in sorted({*RATES, *(currency or {})}):
        path = target / "pools" / f"{pool}.yaml"
        text = path.read_text(encoding="utf-8")
        if pool in RATES:
            text, count = _RATE.subn(rf"\g<1>{RATES[pool]:.2f}", text)
            assert count == 1, path
        if currency and pool in currency:
            text, count = _CURRENCY.subn(rf"\g<1>{currency[pool]}", text)
            assert count == 1, path
        path.write_text(text, encoding="utf-8")
    for team, (kind, per) in UNITS.items():
        path = target / "teams" / f"{team}.yaml"
        text = _UNIT.sub("", path.read_text(encoding="utf-8"))
        block = f"  acceptedUnit:\n    kind: {kind}\n    per: {per}\n"
        text, count = _COST_CENTER.subn(lambda m, b=block: m.group() + b, text)
        assert count == 1, path
        path.write_text(text, encoding="utf-8")
    return target
