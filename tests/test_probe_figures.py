"""bench/probe_figures.py, the script that makes the README's GPU figures: it finds the catalog
entry of the device it runs on, and its table says what the probes' results say (run here on the
CPU, small, with the same probes and the same code path as on a GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import probe_figures
from renderer.model.catalog import CATALOG
from workflows.probes.models import TinyTransformer


@pytest.mark.parametrize(
    ("device", "memory", "key"),
    [
        ("NVIDIA H200", 150.0, "h200-141gb"),
        ("NVIDIA H100 80GB HBM3", 85.0, "h100-80gb"),
        ("NVIDIA H100 NVL", 100.0, "h100-94gb"),
        ("NVIDIA A100-SXM4-40GB", 42.0, "a100-40gb"),
        ("NVIDIA L4", 24.0, "l4"),
        ("NVIDIA L40S", 48.0, "l40s"),
        ("AMD Instinct MI300X", 206.0, "mi300x"),
    ],
)
def test_the_device_is_found_in_the_catalog(device: str, memory: float, key: str) -> None:
    assert probe_figures.accelerator_of(device, memory) is CATALOG[key]


def test_an_unknown_or_ambiguous_device_has_no_catalog_figures() -> None:
    assert probe_figures.accelerator_of("NVIDIA RTX 4090", 24.0) is None
    assert probe_figures.accelerator_of("NVIDIA H100") is None  # two H100s, no memory to tell


@pytest.mark.slow
def test_the_table_is_what_the_results_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert probe_figures.main(["--out", str(tmp_path), "--device", "cpu"]) == 0
    printed = capsys.readouterr().out
    assert (tmp_path / "figures.md").read_text() in printed
    rows = {
        cells[0]: cells[1:]
        for line in printed.splitlines()
        if line.startswith("| ") and not line.startswith("| figure")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    results = {
        p: json.loads((tmp_path / f"{p}.json").read_text())
        for p in ("training", "checkpoint", "allreduce")
    }
    assert all(r["ok"] for r in results.values())
    config = probe_figures.CPU.model
    tokens = results["training"]["metrics"]["samplesPerSecond"] * config.seq_len
    assert rows["training tokens/s"][0] == f"{tokens:,.0f}"
    params = sum(p.numel() for p in TinyTransformer(config).parameters())
    assert rows["model TFLOPS (6 x params x tokens/s)"][0] == f"{6 * params * tokens / 1e12:.3g}"
    assert (
        rows["checkpoint write GB/s"][0] == f"{results['checkpoint']['metrics']['writeGBps']:.2f}"
    )
    assert (
        rows["checkpoint restore GB/s"][0]
        == f"{results['checkpoint']['metrics']['restoreGBps']:.2f}"
    )
    assert "resumed True" in rows["checkpoint restore GB/s"][1]
    peak = results["allreduce"]["metrics"]["peakBusbwGBps"]
    assert rows["all-reduce peak bus bandwidth GB/s"][0] == f"{peak:.1f}"
    assert "gloo, 2 ranks" in rows["all-reduce peak bus bandwidth GB/s"][1]
