"""Which device a result was measured on, and whether that is the pool's accelerator.

The torch probes (all-reduce, training, checkpoint) record the device they used in their
environment labels (`device`: `cpu` or `cuda:N`; on a GPU `gpu`: the name torch reports, such as
`NVIDIA H100 80GB HBM3`, with `MIG 1g.10gb` after it on a MIG slice); see
`workflows/probes/runtime.py`. A figure from the CPU (a laptop, a gloo all-reduce) or from
another GPU model says nothing about the pool's thresholds, so the report shows it as not
comparable rather than as a pass or a hardware failure. The probes that use no device (storage,
staging, inference against an endpoint) record none and are judged as they are.

A GPU name is placed in the catalog by its model (the part of the catalog key before `-`:
`h100` of `h100-80gb`, `l4`, `mi300x`) and, where the name states it, its memory (`80GB`), so an
A100 40GB is not taken for the pool's A100 80GB. A name without a known model cannot be placed:
the report says so and judges the figures as measured.
"""

from __future__ import annotations

import re
from typing import Final

from renderer.commands.acceptance.readable import oneline, quote
from renderer.commands.acceptance.results import Device, Result
from renderer.model.catalog import CATALOG, accelerator

DEVICE_LABEL: Final = "device"
GPU_LABEL: Final = "gpu"
"""The environment labels of `workflows.probes.runtime.torch_labels`."""

_WORD: Final = re.compile(r"[a-z0-9]+")
_MEMORY: Final = re.compile(r"([0-9]+)gb")


def _model(key: str) -> str:
    return key.split("-", 1)[0].lower()


MODELS: Final = frozenset(_model(key) for key in CATALOG)
"""The GPU models the catalog knows: `a100`, `h100`, `l40s`, `l4`, `mi300x`, ..."""


def same_accelerator(key: str, name: str) -> bool | None:
    """Whether the GPU torch calls `name` is the catalog's `key`: None when the name names no
    model the catalog knows (then nothing can be said)."""
    words = _WORD.findall(name.lower())
    if "mig" in words:  # "NVIDIA A100-SXM4-80GB MIG 1g.10gb": the slice's memory is not the GPU's
        words = words[: words.index("mig")]
    models = [w for w in words if w in MODELS]
    if not models:
        return None
    if models[0] != _model(key):
        return False
    entry = accelerator(key)
    sizes = {int(m[1]) for w in words if (m := _MEMORY.fullmatch(w))}
    return not (sizes and entry is not None and entry.memory_gb not in sizes)


def _recorded(result: Result) -> tuple[str, str | None] | None:
    """The device label of a result and the GPU's name, or None when it records no device."""
    device = result.environment.get(DEVICE_LABEL) or result.metrics.get(DEVICE_LABEL)
    if not isinstance(device, str) or not device:
        return None
    name = result.environment.get(GPU_LABEL)
    return oneline(device, 40), (oneline(name, 80) if name else None)


def device_of(pool_accelerator: str, result: Result) -> Device | None:
    """The device a result records, judged against the pool's accelerator; None when it records
    none, or a GPU without its name (older probes)."""
    recorded = _recorded(result)
    if recorded is None:
        return None
    device, name = recorded
    entry = accelerator(pool_accelerator)
    expected = f"the pool's {entry.product if entry else pool_accelerator} ({pool_accelerator})"
    thresholds = "figures are not comparable to its thresholds"
    if device.lower().startswith("cpu"):
        comparable: bool | None = False
        message = f"measured on the CPU, not on {expected}: {thresholds}"
    elif name is None:
        return None
    else:
        comparable = same_accelerator(pool_accelerator, name)
        if comparable is None:
            message = (
                f"measured on {quote(name)}, a GPU the catalog cannot place: not confirmed to be "
                f"{expected}; judged as measured"
            )
        elif comparable:
            message = f"measured on {quote(name)}, {expected}"
        else:
            message = f"measured on {quote(name)}, not on {expected}: {thresholds}"
    return Device(
        result=result.file,
        probe=result.probe,
        device=device,
        name=name,
        accelerator=pool_accelerator,
        comparable=comparable,
        message=message,
    )


def where(device: Device) -> str:
    """The device in a few words: `the CPU`, or the GPU's name."""
    return "the CPU" if device.name is None else quote(device.name)
