"""`make bench`: render and validate a large synthetic platform, timing each pipeline stage.

Prints objects (or input files) per second for every stage, with the machine and the sizes, so
the README's figures can be reproduced. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import platform as host
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.table import Table

from bench.generate import generate_platform
from renderer.inputs.schema import KIND_FOLDERS, check_document
from renderer.inputs.source import Document, load_file
from renderer.model import platform as model
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.output.writer import build_tree, compare, write_tree
from renderer.pipeline import load_platform, render_cluster
from renderer.policy.check import check_policy

T = TypeVar("T")
SHARED_CRDS = Path(__file__).resolve().parents[2] / "shared" / "crds"


def timed(function: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return host.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--pools-per-cluster", type=int, default=8)
    parser.add_argument("--teams", type=int, default=400)
    parser.add_argument("--crds", type=Path, default=SHARED_CRDS if SHARED_CRDS.is_dir() else None)
    args = parser.parse_args()
    console = Console(width=110)

    with tempfile.TemporaryDirectory(prefix="gpuplane-bench-") as tmp:
        root = Path(tmp)
        counts = generate_platform(
            root, clusters=args.clusters, pools_per_cluster=args.pools_per_cluster, teams=args.teams
        )
        paths = [
            (folder, path)
            for folder in KIND_FOLDERS
            for path in sorted((root / folder).glob("*.yaml"))
        ]
        files = len(paths)

        def load_all() -> list[tuple[str, Document]]:
            loaded = []
            for folder, path in paths:
                document = load_file(path, f"{folder}/{path.name}").document
                assert document is not None
                loaded.append((folder, document))
            return loaded

        documents, t_load = timed(load_all)
        problems, t_schema = timed(lambda: [p for f, d in documents for p in check_document(d, f)])
        assert not problems, problems[:3]
        _, t_model = timed(
            lambda: [model.BUILDERS[KIND_FOLDERS[f]](d.data, d.source) for f, d in documents]
        )
        loaded, t_pipeline = timed(lambda: load_platform(root))
        platform = loaded.platform
        _, t_policy = timed(lambda: check_policy(platform))

        def render_all() -> dict[str, tuple[Manifest, ...]]:
            return {
                name: tuple(
                    m
                    for m in render_cluster(ClusterView.of(platform, platform.clusters[name]))
                    if isinstance(m, Manifest)
                )
                for name in sorted(platform.clusters)
            }

        rendered, t_layers = timed(render_all)
        objects = sum(len(m) for m in rendered.values())
        validator, t_crds = timed(lambda: OutputValidator([args.crds] if args.crds else []))

        def validate_all() -> int:
            found = 0
            for name, manifests in rendered.items():
                version = platform.clusters[name].kubernetes_version
                found += sum(len(validator.validate(m.body, version)) for m in manifests)
            return found

        invalid, t_validate = timed(validate_all)
        assert invalid == 0
        tree, t_dump = timed(lambda: build_tree(rendered))
        _, t_write = timed(lambda: write_tree(root / "rendered", tree))
        stale, t_compare = timed(lambda: compare(root / "rendered", tree))
        assert stale.clean

    table = Table(title="gpuplane pipeline, stage by stage")
    for column in ("stage", "items", "seconds", "items/s"):
        table.add_column(column, justify="left" if column == "stage" else "right")

    def row(stage: str, items: int, seconds: float, unit: str) -> None:
        rate = f"{items / seconds:,.0f} {unit}/s" if seconds > 0 else "-"
        table.add_row(stage, f"{items:,} {unit}", f"{seconds:.3f}", rate)

    row("load (YAML, positions, hostile-input checks)", files, t_load, "files")
    row("schema (JSON Schema, Draft 2020-12)", files, t_schema, "files")
    row("model", files, t_model, "files")
    row("policy (all rules)", files, t_policy, "files")
    row("layers (render objects)", objects, t_layers, "objects")
    row("CRD sources (read; parsed on demand)", 1, t_crds, "folders")
    row("validate output (strict built-ins, CRDs)", objects, t_validate, "objects")
    row("dump (canonical YAML + kustomizations)", len(tree), t_dump, "files")
    row("write (atomic swap into an empty folder)", len(tree), t_write, "files")
    row("compare with the tree on disk (--check)", len(tree), t_compare, "files")
    rendered_in_memory = t_pipeline + t_layers + t_crds + t_validate + t_dump
    row("= gpuplane validate", files, t_pipeline, "files")
    row(
        "= gpuplane render --check (tree current)",
        objects,
        rendered_in_memory + t_compare,
        "objects",
    )
    row("= gpuplane render (first write)", objects, rendered_in_memory + t_write, "objects")
    console.print(
        f"platform: {counts['Cluster']} clusters, {counts['Pool']} pools, {counts['Queue']} queues, "
        f"{counts['Team']} teams ({files} input files) -> {objects:,} objects in {len(tree):,} files"
    )
    console.print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {host.python_version()}, one process"
    )
    console.print(table)


if __name__ == "__main__":
    main()
