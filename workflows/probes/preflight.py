"""`python -m workflows.probes preflight [--expect-gpu] [--torchrun] [--out FACTS]`: does the
image this runs in have what the torch probes need?

The suite runs the torch probes inside a pool's production image (docs/acceptance-image.md): an
init container copies this package into the pod and the image's own `python3` runs it. Before
any probe, the Job's runner runs this; when the image lacks something (a Python older than the
package's floor, no torch, a CPU-only torch, no GPU visible, no NCCL, no torchrun) it prints ONE
line naming the image and everything missing and exits 1, and the runner puts that line in
every result of the step, so it reaches the report. Otherwise it prints the image's facts on one
line (and writes them as JSON to `--out`) and exits 0.

Written to run on any Python 3 that can parse it: it imports only the standard library at
module level (torch inside a function), and `__main__` dispatches here before importing the
rest of the package, whose modules need MIN_PYTHON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys

MIN_PYTHON = (3, 11)
"""The oldest Python the probe package runs on: pyproject.toml's `requires-python` (the probes
use `datetime.UTC`, dataclasses' `kw_only` and `slots`, `zip(strict=)`)."""
DRIVER_FILE = "/proc/driver/nvidia/version"
NO_DRIVER = "none"
_VERSION = re.compile(r"(?<![\w.])(\d+\.\d+(?:\.\d+)?)(?![\w.])")


def driver_version(path: str = DRIVER_FILE) -> str:
    """The NVIDIA kernel driver's version from its `NVRM version:` line (`NVIDIA UNIX x86_64
    Kernel Module  570.124.06  ...`, or `... Open Kernel Module for x86_64  580.65.06 ...`);
    `none` when the file is absent or names no version (no NVIDIA driver on this node)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return NO_DRIVER
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            found = _VERSION.search(line)
            if found:
                return found.group(1)
    return NO_DRIVER


def _torch_facts(*, expect_gpu: bool) -> tuple[dict[str, str], list[str]]:
    """torch, CUDA and NCCL as the image has them, and what of them is missing."""
    facts: dict[str, str] = {}
    missing: list[str] = []
    try:
        import torch
        import torch.distributed as dist
    except Exception as exc:  # any import failure means the same: no usable torch
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return facts, [f"no importable torch ({reason})"]
    facts["torch"] = str(torch.__version__)
    facts["cuda"] = torch.version.cuda or NO_DRIVER
    if not expect_gpu:
        return facts, missing
    if torch.version.cuda is None:
        missing.append(f"torch {torch.__version__} is a CPU-only build (no CUDA)")
    elif not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        missing.append(f"no CUDA device visible to torch {torch.__version__}")
    nccl = getattr(torch.cuda, "nccl", None)
    if nccl is None or not dist.is_available() or not dist.is_nccl_available():
        missing.append("no NCCL in torch.distributed")
    elif torch.version.cuda is not None:
        try:
            version = nccl.version()
            facts["nccl"] = (
                ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
            )
        except Exception as exc:
            missing.append(f"NCCL does not load ({exc})")
    return facts, missing


def check(*, expect_gpu: bool, torchrun: bool) -> tuple[dict[str, str], list[str]]:
    """The image's facts, and what of what the probes need it lacks (empty: nothing)."""
    facts = {
        "python": ".".join(map(str, sys.version_info[:3])),
        "driver": driver_version(),
    }
    missing: list[str] = []
    if sys.version_info[:2] < MIN_PYTHON:
        floor = ".".join(map(str, MIN_PYTHON))
        missing.append(f"python {facts['python']} is older than {floor}")
        return facts, missing  # the probe package would not even import: nothing more to learn
    found, lacking = _torch_facts(expect_gpu=expect_gpu)
    facts.update(found)
    missing.extend(lacking)
    if torchrun and shutil.which("torchrun") is None:
        missing.append("no torchrun on PATH")
    if expect_gpu and facts["driver"] == NO_DRIVER:
        missing.append(f"no NVIDIA driver ({DRIVER_FILE} is absent)")
    return facts, missing


def image_name(given: str | None) -> str:
    return given or os.environ.get("GPUPLANE_IMAGE") or "this image"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workflows.probes preflight",
        description="Check that this image has what the torch probes need.",
    )
    parser.add_argument("--expect-gpu", action="store_true", help="CUDA, a GPU and NCCL too")
    parser.add_argument("--torchrun", action="store_true", help="torchrun on PATH too")
    parser.add_argument("--image", help="the image's name for the message ($GPUPLANE_IMAGE)")
    parser.add_argument("--out", metavar="PATH", help="write the image's facts here as JSON")
    args = parser.parse_args(argv)
    facts, missing = check(expect_gpu=args.expect_gpu, torchrun=args.torchrun)
    image = image_name(args.image)
    if missing:
        sys.stdout.write(f"preflight: image {image} cannot run the probes: {'; '.join(missing)}\n")
        sys.stdout.flush()
        return 1
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"image": image, **facts}, f, sort_keys=True)
    described = ", ".join(f"{key} {value}" for key, value in sorted(facts.items()))
    sys.stdout.write(f"preflight: image {image} has {described}\n")
    return 0
