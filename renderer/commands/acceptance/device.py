"""Which device a result was measured on, and whether it is shown to be the pool's accelerator.

The torch probes (all-reduce, training, checkpoint) record the device they used in their
environment labels (`device`: `cpu` or `cuda:N`; on a GPU `gpu`: the name torch reports, such as
`NVIDIA H100 80GB HBM3`, with `MIG 1g.10gb` after it on a MIG slice); see
`workflows/probes/runtime.py`. A figure says something about the pool's thresholds only when it
was measured on the pool's accelerator, so a pool is accepted only on results shown to come
from it: one measured on the CPU (a laptop, a gloo all-reduce), on another GPU, on a GPU the
result does not name, or a torch probe's result that records no device at all, is not
comparable. The probes that use no device (storage, staging, inference against an endpoint)
record none and are judged as they are.

A GPU name is the pool's accelerator when it names the catalog key's model (the part before
`-`: `h100` of `h100-80gb`, `l4`, `mi300x`) and no other model the catalog knows, and, where the
name states them, its memory (`80GB`; an A100 40GB is not the pool's A100 80GB) and its form
factor (`PCIe`, `SXM4`, `NVL`, `OAM`) match: the form against the pool's `topology.form`, else
against the forms the catalog lists for the key. Names often leave the form out (an H100 SXM5
reports `NVIDIA H100 80GB HBM3`, an H200 SXM `NVIDIA H200`), so a name without one is no
mismatch.
"""

from __future__ import annotations

import re
from typing import Final

from renderer.commands.acceptance.readable import oneline, quote
from renderer.commands.acceptance.results import Device, Result
from renderer.model.catalog import CATALOG, accelerator
from renderer.model.platform import Pool

DEVICE_LABEL: Final = "device"
GPU_LABEL: Final = "gpu"
"""The environment labels of `workflows.probes.runtime.torch_labels`."""

DEVICE_PROBES: Final = frozenset({"allreduce", "checkpoint", "nodes", "training"})
"""The probes that run on a torch device and record it (the others use none)."""

FORM_NAMES: Final = {"sxm": "SXM", "pcie": "PCIe", "nvl": "NVL", "oam": "OAM"}
"""A pool's `topology.form` values as GPU names write them."""

_WORD: Final = re.compile(r"[a-z0-9]+")
_MEMORY: Final = re.compile(r"([0-9]+)gb")
_FORM: Final = re.compile(r"(sxm|nvl)[0-9]*|pcie|oam")  # SXM4, SXM5, NVL, NVL72, PCIe, OAM


def _model(key: str) -> str:
    return key.split("-", 1)[0].lower()


MODELS: Final = frozenset(_model(key) for key in CATALOG)
"""The GPU models the catalog knows: `a100`, `h100`, `l40s`, `l4`, `mi300x`, ..."""


def _label(key: str) -> str:
    """The model as the catalog's product name writes it: `H100`, `L40S`, `MI300X`."""
    model, entry = _model(key), accelerator(key)
    words = re.split(r"[^A-Za-z0-9]+", entry.product) if entry is not None else []
    return next((w for w in words if w.lower() == model), model.upper())


def _forms(words: list[str]) -> list[str]:
    stated = {m[1] or m[0] for w in words if (m := _FORM.fullmatch(w))}
    return sorted(stated)


def _either(forms: tuple[str, ...] | list[str]) -> str:
    return " or ".join(FORM_NAMES.get(f, f) for f in forms)


def mismatch(key: str, name: str, form: str | None = None) -> str | None:
    """Why the GPU torch calls `name` is not the catalog's `key` in a pool of form factor
    `form` (its `topology.form`; None: the forms the catalog lists for the key), in words;
    None when the name shows it is."""
    words = _WORD.findall(name.lower())
    if "mig" in words:  # "NVIDIA A100-SXM4-80GB MIG 1g.10gb": the slice's memory is not the GPU's
        words = words[: words.index("mig")]
    model, label, entry = _model(key), _label(key), accelerator(key)
    shown = quote(name)
    if model not in words or any(w in MODELS and w != model for w in words):
        return f"{shown} is not the pool's {label}"
    sizes = sorted({int(m[1]) for w in words if (m := _MEMORY.fullmatch(w))})
    if entry is not None and sizes and entry.memory_gb not in sizes:
        stated = "/".join(f"{size}GB" for size in sizes)
        return f"{shown} says {stated}, the pool's {label} has {entry.memory_gb}GB"
    expected = (form,) if form else (entry.forms if entry is not None else ())
    wrong = [f for f in _forms(words) if f not in expected]
    if expected and wrong:
        source = "its topology.form" if form else f"the catalog's {key}"
        return (
            f"{shown} says {_either(wrong)}, the pool's {label} is {_either(expected)} ({source})"
        )
    return None


def same_accelerator(key: str, name: str, form: str | None = None) -> bool:
    """Whether the GPU torch calls `name` is shown to be the catalog's `key` (see `mismatch`)."""
    return mismatch(key, name, form) is None


def _text(value: object, limit: int) -> str | None:
    text = oneline(value, limit) if isinstance(value, str) else ""
    return text or None


def device_of(pool: Pool, result: Result) -> Device | None:
    """The device a result records, judged against the pool's accelerator; None for a probe
    that uses no device and records none."""
    label = _text(result.environment.get(DEVICE_LABEL) or result.metrics.get(DEVICE_LABEL), 40)
    name = _text(result.environment.get(GPU_LABEL), 80)
    if label is None and result.probe not in DEVICE_PROBES:
        return None
    key = pool.accelerator
    entry = accelerator(key)
    expected = f"the pool's {entry.product if entry else key} ({key})"
    thresholds = "figures are not comparable to its thresholds"
    comparable = False
    if label is None:
        name = None
        message = (
            f"the result records no device (no {DEVICE_LABEL!r} label), so it cannot be shown "
            f"to be measured on {expected}; {thresholds}"
        )
    elif label.lower().startswith("cpu"):
        name = None
        message = f"measured on the CPU, not on {expected}: {thresholds}"
    elif name is None:
        message = (
            f"measured on {quote(label)}, but the GPU is not named in the result (no "
            f"{GPU_LABEL!r} label), so it cannot be shown to be {expected}; {thresholds}"
        )
    elif (why := mismatch(key, name, pool.topology_form)) is not None:
        message = f"measured on {quote(name)}, not on {expected}: {why}; {thresholds}"
    else:
        comparable = True
        message = f"measured on {quote(name)}, {expected}"
    return Device(
        result=result.file,
        probe=result.probe,
        device=label,
        name=name,
        accelerator=key,
        comparable=comparable,
        message=message,
    )


def where(device: Device) -> str:
    """The device in a few words: `the CPU`, the GPU's name, or what is not known of it."""
    if device.device is None:
        return "a device the result does not record"
    if device.device.lower().startswith("cpu"):
        return "the CPU"
    return f"an unnamed GPU ({quote(device.device)})" if device.name is None else quote(device.name)


def off_pool(device: Device) -> str:
    """Where a figure not comparable to the pool's thresholds was measured: `measured on the
    CPU, not on the pool's h100-80gb`."""
    known = device.device is not None and (device.name is not None or where(device) == "the CPU")
    relation = "not on" if known else "not shown to be"
    return f"measured on {where(device)}, {relation} the pool's {device.accelerator}"
