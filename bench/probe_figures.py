"""`python -m bench.probe_figures`: the probes' own figures on this machine, beside the catalog's.

Runs the training, checkpoint and all-reduce probes through their command line (as the suite
Jobs do), keeps each JSON result under `--out`, and prints one Markdown table: tokens/s and the
model FLOP/s they imply, checkpoint write and restore GB/s, all-reduce bus bandwidth, each next to
the catalog's peak for the accelerator found (BF16 TFLOPS, NVLink GB/s). It is how the README's
GPU figures are made on a machine with a GPU, in one short run; on a CPU (`--device cpu`, the
test) it runs the same probes small. Not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from renderer.model.catalog import CATALOG, Accelerator
from workflows.probes.models import ModelConfig, TinyTransformer


@dataclass(frozen=True)
class Profile:
    """How large each probe runs: a GPU is measured with a model and messages big enough to
    approach its peaks; a CPU only shows that the same path works."""

    model: ModelConfig
    batch_size: int
    seconds: float
    checkpoint_mb: int
    max_bytes: str
    bf16: bool


GPU = Profile(
    ModelConfig(vocab=32768, width=2048, layers=8, heads=16, seq_len=1024), 8, 60, 4096, "4G", True
)
CPU = Profile(ModelConfig(), 8, 2, 8, "1M", False)


def accelerator_of(device_name: str, memory_gb: float | None = None) -> Accelerator | None:
    """The catalog entry this device is (`NVIDIA H200` -> h200-141gb): the model in the name,
    then, where the catalog has that model in two memory sizes, the one nearest `memory_gb`."""
    words = set(re.split(r"[^a-z0-9]+", device_name.lower()))
    found = [a for a in CATALOG.values() if a.key.split("-")[0] in words]
    if len(found) > 1 and memory_gb is not None:
        found = [min(found, key=lambda a: abs(a.memory_gb - memory_gb))]
    return found[0] if len(found) == 1 else None


def parameters(config: ModelConfig) -> int:
    return sum(p.numel() for p in TinyTransformer(config).parameters())


def _probe(out: Path, probe: str, *args: str) -> dict[str, Any]:
    path = out / f"{probe}.json"
    subprocess.run(
        [sys.executable, "-m", "workflows.probes", probe, "--out", str(path), *args], check=True
    )
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


def measure(out: Path, device: str, profile: Profile, gpus: int) -> dict[str, dict[str, Any]]:
    """Run the probes; their results by probe name."""
    out.mkdir(parents=True, exist_ok=True)
    config = profile.model
    shape = (
        "--vocab",
        str(config.vocab),
        "--width",
        str(config.width),
        "--layers",
        str(config.layers),
    )
    shape += ("--heads", str(config.heads), "--seq-len", str(config.seq_len))
    results = {
        "training": _probe(
            out,
            "training",
            *shape,
            "--batch-size",
            str(profile.batch_size),
            "--seconds",
            str(profile.seconds),
            "--device",
            device,
            *(["--bf16"] if profile.bf16 else []),
        ),
        "checkpoint": _probe(
            out,
            "checkpoint",
            "--megabytes",
            str(profile.checkpoint_mb),
            "--device",
            device,
            "--path",
            str(out / "checkpoint"),
        ),
    }
    ranks = gpus if device == "cuda" else 2
    if ranks >= 2:  # one GPU has nobody to all-reduce with: bus bandwidth is 0 by definition
        results["allreduce"] = _probe(
            out, "allreduce", "--max-bytes", profile.max_bytes, "--local-world-size", str(ranks)
        )
    return results


def table(
    results: dict[str, dict[str, Any]],
    config: ModelConfig,
    device_name: str,
    gpus: int,
    found: Accelerator | None,
) -> str:
    """The Markdown table of the README: each figure with the catalog's peak beside it."""
    training = results["training"]["metrics"]
    tokens = float(training["samplesPerSecond"]) * config.seq_len
    flops = 6 * parameters(config) * tokens / 1e12  # forward and backward, per token
    peak_flops = f"{found.bf16_tflops:g} BF16 TFLOPS dense per GPU" if found else "—"
    checkpoint = results["checkpoint"]["metrics"]
    rows = [
        ("training tokens/s", f"{tokens:,.0f}", f"{config.name()}, batch {training['batchSize']}"),
        ("model TFLOPS (6 x params x tokens/s)", f"{flops:.3g}", peak_flops),
        (
            "checkpoint write GB/s",
            f"{checkpoint['writeGBps']:.2f}",
            f"{checkpoint['bytes'] / 1e9:.2f} GB, fsync",
        ),
        (
            "checkpoint restore GB/s",
            f"{checkpoint['restoreGBps']:.2f}",
            f"page cache dropped, verified {checkpoint['verified']}, resumed {checkpoint['resumed']}",
        ),
    ]
    if "allreduce" in results:
        allreduce = results["allreduce"]["metrics"]
        peak = (
            f"{found.nvlink_bandwidth_gbps:g} GB/s NVLink per GPU"
            if found and found.nvlink_bandwidth_gbps
            else "—"
        )
        rows.append(
            (
                "all-reduce peak bus bandwidth GB/s",
                f"{allreduce['peakBusbwGBps']:.1f}",
                f"{allreduce['backend']}, {allreduce['worldSize']} ranks; catalog {peak}",
            )
        )
    else:
        rows.append(
            ("all-reduce bus bandwidth", "not measured", "one GPU: no peer to all-reduce with")
        )
    head = f"{gpus} x {device_name}" if gpus else device_name
    head += f" (catalog `{found.key}`)" if found else ""
    lines = [f"Measured on {head}:", "", "| figure | measured | beside it |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.probe_figures", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON results")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    args = parser.parse_args(argv)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        gpus = torch.cuda.device_count()
        device_name = torch.cuda.get_device_name(0)
        memory_gb = torch.cuda.get_device_properties(0).total_memory / 1e9
        profile = GPU
    else:
        gpus, memory_gb, profile = 0, None, CPU
        device_name = (
            f"CPU ({os.cpu_count()} logical CPUs, {platform.processor() or platform.machine()})"
        )
    results = measure(args.out, device, profile, gpus)
    text = table(results, profile.model, device_name, gpus, accelerator_of(device_name, memory_gb))
    (args.out / "figures.md").write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
