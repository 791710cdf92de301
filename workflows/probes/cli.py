"""`python -m workflows.probes <probe> --out result.json [options]`: run one probe, write its result.

Exit status: 0 when the probe ran and its result is ok, 1 when it ran and failed (the result says
why, and the error is printed to stderr), 2 for a usage error (nothing runs, nothing is written).
Parsing is separate from running (`build_parser`, then `run`), and a probe's module is imported
only when it runs, so the probes without torch start without importing it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .envelope import parse_labels, write_result

UNITS = {"": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3, "gib": 1024**3}


def byte_size(text: str) -> int:
    """`4096`, `4K`, `64M`, `1G` (binary units, KiB/MiB/GiB spellings too) as a number of bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).lower() not in UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 4096, 64K, 16M or 1G")
    value = int(match.group(1)) * UNITS[match.group(2).lower()]
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive size")
    return value


def whole_number(text: str) -> int:
    """A whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def byte_sizes(text: str) -> list[int]:
    return [byte_size(part) for part in text.split(",") if part.strip()]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not positive")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workflows.probes",
        description="Run one acceptance probe and write its JSON result (schemas/results/).",
    )
    common = _common_flags()
    probes = parser.add_subparsers(dest="probe", required=True, metavar="PROBE")
    for name, (summary, add_flags) in PROBE_FLAGS.items():
        sub = probes.add_parser(name, parents=[common], help=summary, description=summary)
        # errors found after parsing print this probe's usage, not the top-level one
        sub.set_defaults(usage_error=sub.error)
        add_flags(sub)
    return parser


def _common_flags() -> argparse.ArgumentParser:
    """The flags every probe takes: where the result goes and what it is about."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", metavar="PATH", help="where to write the JSON result (required)")
    common.add_argument(
        "--cluster",
        default=os.environ.get("GPUPLANE_CLUSTER"),
        help="cluster name (default: $GPUPLANE_CLUSTER)",
    )
    common.add_argument(
        "--pool",
        default=os.environ.get("GPUPLANE_POOL"),
        help="pool name (default: $GPUPLANE_POOL)",
    )
    common.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment label for the result (repeatable)",
    )
    return common


def _allreduce_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-bytes", type=byte_size, default=byte_size("1K"))
    p.add_argument("--max-bytes", type=byte_size, default=byte_size("64M"))
    p.add_argument("--step-factor", type=positive_int, default=4)
    p.add_argument(
        "--sizes", type=byte_sizes, help="explicit sizes, comma-separated (overrides the sweep)"
    )
    p.add_argument("--iterations", type=positive_int, default=20, help="timed all-reduces per size")
    p.add_argument("--warmup", type=int, default=5, help="untimed all-reduces per size")
    p.add_argument(
        "--local-world-size",
        type=positive_int,
        help="spawn this many ranks here instead of joining the job's world",
    )
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    p.add_argument("--timeout-seconds", type=float, default=300.0)


def fraction(text: str) -> float:
    """A number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, 1]")
    return value


def _nodes_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-bytes", type=byte_size, default=byte_size("64M"), help="size of every all-reduce"
    )
    p.add_argument("--iterations", type=positive_int, default=20, help="timed all-reduces each")
    p.add_argument("--warmup", type=whole_number, default=5, help="untimed all-reduces each")
    p.add_argument(
        "--outlier-fraction",
        type=fraction,
        default=0.85,
        help="a node or link below this share of its kind's median is an outlier (default 0.85)",
    )
    p.add_argument(
        "--memory-fraction",
        type=fraction,
        default=0.5,
        help="share of each GPU's free memory the health check allocates (default 0.5)",
    )
    p.add_argument(
        "--local-world-size",
        type=positive_int,
        help="spawn this many ranks here instead of joining the job's world",
    )
    p.add_argument(
        "--simulate-nodes",
        type=positive_int,
        metavar="K",
        help="group the ranks into K fake nodes local-0..K-1 (a laptop or a test)",
    )
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    p.add_argument("--timeout-seconds", type=float, default=300.0)


def _checkpoint_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", help="folder for the checkpoint (default: a temporary folder)")
    p.add_argument(
        "--megabytes", type=float, default=512.0, help="approximate checkpoint size in MB"
    )
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument(
        "--phase",
        choices=("both", "write", "restore"),
        default="both",
        help="write here and restore in another pod: write (no --out), then restore",
    )
    p.add_argument("--keep", action="store_true", help="keep the checkpoint file")
    p.add_argument(
        "--resume-steps",
        type=whole_number,
        metavar="N",
        help="training steps to resume from the restored state and compare with the writer's "
        "(default: 3; give both phases the same number; 0: no resume)",
    )


def _storage_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", help="folder on the volume under test (default: a temporary folder)")
    p.add_argument("--bytes", dest="total_bytes", type=byte_size, default=byte_size("1G"))
    p.add_argument("--block-bytes", type=byte_size, default=byte_size("4M"))
    p.add_argument("--direct", action="store_true", help="use O_DIRECT (bypass the page cache)")
    p.add_argument("--keep", action="store_true", help="keep the test file")
    p.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="N concurrent workers (per rank under torchrun), half writing new files while half "
        "read files written beforehand; aggregate = bytes / wall time of the concurrent phase",
    )


def _staging_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", required=True, help="a local path, file:// or s3:// URL")
    p.add_argument(
        "--dest", help="folder to copy into, kept (default: a temporary folder, removed)"
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        metavar="N",
        help="N concurrent downloads (threads); aggregateGBps = bytes / wall time (default 1)",
    )


def _training_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=30.0, help="length of the timed window")
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--batch-size", type=positive_int, default=32, help="per rank")
    p.add_argument("--vocab", type=positive_int, default=256)
    p.add_argument("--width", type=positive_int, default=128)
    p.add_argument("--layers", type=positive_int, default=2)
    p.add_argument("--heads", type=positive_int, default=4)
    p.add_argument("--seq-len", type=positive_int, default=64)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast")
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--local-world-size", type=positive_int, help="spawn this many DDP ranks here")
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    p.add_argument("--timeout-seconds", type=float, default=300.0)


def _inference_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", required=True, help="base URL, e.g. http://model.team-serve:8000")
    p.add_argument("--model", required=True, help="the model name the server expects")
    p.add_argument("--requests", type=positive_int, default=100)
    p.add_argument("--concurrency", type=positive_int, default=4)
    p.add_argument("--timeout-seconds", type=float, default=30.0, help="per request")
    p.add_argument("--warmup", type=int, default=2, help="untimed requests first")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--prompt", default="Write one sentence about GPUs.")
    p.add_argument("--max-tokens", type=positive_int, default=16)
    p.add_argument(
        "--max-error-rate", type=float, default=0.0, help="share of failed requests tolerated"
    )
    p.add_argument(
        "--wait-seconds",
        type=float,
        default=0.0,
        help="first wait this long for the server to answer GET /v1/models (0: do not wait)",
    )


PROBE_FLAGS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "allreduce": ("all-reduce bus bandwidth over a size sweep", _allreduce_flags),
    "checkpoint": ("checkpoint write and restore", _checkpoint_flags),
    "storage": ("sequential write and read throughput", _storage_flags),
    "staging": ("time to pull a dataset sample and weights", _staging_flags),
    "training": ("training throughput over a fixed window", _training_flags),
    "inference": ("latency of an OpenAI-compatible endpoint", _inference_flags),
    "nodes": ("every node's health and all-reduce, every link, then the pool", _nodes_flags),
}
"""Each probe's summary and flags, in the order the help lists them."""


def _allreduce(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    sizes = args.sizes or module.size_sweep(args.min_bytes, args.max_bytes, args.step_factor)
    settings = module.AllreduceSettings(
        sizes=sizes,
        iterations=args.iterations,
        warmup=args.warmup,
        local_world_size=args.local_world_size,
        backend=args.backend,
        timeout_s=args.timeout_seconds,
    )
    return module.run_allreduce(settings, **common)  # type: ignore[no-any-return]


def _checkpoint(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    settings = module.CheckpointSettings(
        path=args.path,
        megabytes=args.megabytes,
        device=args.device,
        phase=args.phase,
        keep=args.keep,
        # unset: the probe's own RESUME_STEPS (this module does not import torch)
        **({} if args.resume_steps is None else {"resume_steps": args.resume_steps}),
    )
    return module.run_checkpoint(settings, **common)  # type: ignore[no-any-return]


def _storage(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    settings = module.StorageSettings(
        path=args.path,
        total_bytes=args.total_bytes,
        block_bytes=args.block_bytes,
        direct=args.direct,
        keep=args.keep,
        workers=args.workers,
    )
    return module.run_storage(settings, **common)  # type: ignore[no-any-return]


def _staging(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    return module.run_staging(  # type: ignore[no-any-return]
        source=args.source, dest=args.dest, workers=args.workers, **common
    )


def _training(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    from .models import ModelConfig

    config = ModelConfig(
        vocab=args.vocab,
        width=args.width,
        layers=args.layers,
        heads=args.heads,
        seq_len=args.seq_len,
    )
    if config.width % config.heads:
        raise ValueError(f"--width {config.width} must be a multiple of --heads {config.heads}")
    settings = module.TrainingSettings(
        seconds=args.seconds,
        warmup_steps=args.warmup_steps,
        batch_size=args.batch_size,
        config=config,
        device=args.device,
        bf16=args.bf16,
        learning_rate=args.learning_rate,
        seed=args.seed,
        local_world_size=args.local_world_size,
        backend=args.backend,
        timeout_s=args.timeout_seconds,
    )
    return module.run_training(settings, **common)  # type: ignore[no-any-return]


def _inference(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    settings = module.InferenceSettings(
        endpoint=args.endpoint,
        model=args.model,
        requests=args.requests,
        concurrency=args.concurrency,
        timeout_s=args.timeout_seconds,
        warmup=args.warmup,
        api=args.api,
        prompt=args.prompt,
        max_tokens=args.max_tokens,
        max_error_rate=args.max_error_rate,
        wait_s=args.wait_seconds,
    )
    return module.run_inference(settings, **common)  # type: ignore[no-any-return]


def _nodes(module: Any, args: argparse.Namespace, common: dict[str, Any]) -> dict[str, Any]:
    settings = module.NodesSettings(
        max_bytes=args.max_bytes,
        iterations=args.iterations,
        warmup=args.warmup,
        outlier_fraction=args.outlier_fraction,
        memory_fraction=args.memory_fraction,
        local_world_size=args.local_world_size,
        simulate_nodes=args.simulate_nodes,
        backend=args.backend,
        timeout_s=args.timeout_seconds,
    )
    return module.run_nodes(settings, **common)  # type: ignore[no-any-return]


RUNNERS: dict[str, Callable[[Any, argparse.Namespace, dict[str, Any]], dict[str, Any]]] = {
    "allreduce": _allreduce,
    "checkpoint": _checkpoint,
    "storage": _storage,
    "staging": _staging,
    "training": _training,
    "inference": _inference,
    "nodes": _nodes,
}


def summary(result: dict[str, Any]) -> str:
    """One line about a result, for the pod's log."""
    m = result["metrics"]
    if not m:
        return str(result["probe"])
    lines = {
        "allreduce": lambda: (
            f"peak bus bandwidth {m['peakBusbwGBps']:.3f} GB/s ({m['backend']}, {m['worldSize']} ranks)"
        ),
        "checkpoint": lambda: (
            f"{m['bytes'] / 1e6:.1f} MB written at {m['writeGBps']:.3f} GB/s, restored in {m['restoreSeconds']:.3f} s, verified={str(m['verified']).lower()}, resumed={str(m['resumed']).lower()} ({m['resumeSteps']} steps)"
        ),
        "storage": lambda: (
            f"write {m['writeGBps']:.3f} GB/s, read {m['readGBps']:.3f} GB/s over {m['bytes'] / 1e6:.1f} MB"
            + (f" per worker, {m['workers']} workers at once" if "workers" in m else "")
        ),
        "staging": lambda: (
            f"{m['files']} files, {m['bytes'] / 1e6:.1f} MB in {m['seconds']:.3f} s ({m['GBps']:.3f} GB/s)"
        ),
        "training": lambda: (
            f"{m['samplesPerSecond']:.1f} samples/s over {m['windowSeconds']:.1f} s, final loss {m['finalLoss']:.4f}"
        ),
        "inference": lambda: (
            f"p50 {m['p50Ms']:.1f} ms, p95 {m['p95Ms']:.1f} ms, p99 {m['p99Ms']:.1f} ms, {m['errors']} errors of {m['requests']}"
        ),
        "nodes": lambda: (
            f"{m['nodeCount']} nodes, {m['worldSize']} ranks, {sum(not n['healthy'] for n in m['nodes'])} unhealthy, {len(m['outliers'])} outliers, pool bus bandwidth {m['poolBusbwGBps']:.3f} GB/s"
        ),
    }
    return f"{result['probe']}: {lines[result['probe']]()}"


def writes_result(args: argparse.Namespace) -> bool:
    """Only rank 0 of a job-launched world writes; a checkpoint's write phase writes no result."""
    if args.probe == "checkpoint" and args.phase == "write":
        return False
    distributed = args.probe in ("allreduce", "training", "nodes") and args.local_world_size is None
    distributed = distributed or (args.probe == "storage" and args.workers is not None)
    return not (distributed and os.environ.get("WORLD_SIZE") and os.environ.get("RANK", "0") != "0")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    write_phase = args.probe == "checkpoint" and args.phase == "write"
    if write_phase and args.out:
        args.usage_error("--phase write writes no result (the restore phase does); drop --out")
    if not write_phase and not args.out:
        args.usage_error("the following arguments are required: --out")
    try:
        common = {"cluster": args.cluster, "pool": args.pool, "labels": parse_labels(args.label)}
        module = importlib.import_module(f".{args.probe}", __package__)
        result = RUNNERS[args.probe](module, args, common)
    except ValueError as exc:  # the run_* functions check their arguments before measuring
        args.usage_error(str(exc))
    writer = writes_result(args)
    if writer:
        write_result(result, args.out)
    if result["ok"]:
        if writer:  # one line per run in the logs, not one per rank
            print(f"{summary(result)} -> {args.out}")
        elif args.probe == "checkpoint":
            print(f"checkpoint written under {args.path} for the restore phase")
        return 0
    print(f"{result['probe']} failed: {result['error']}", file=sys.stderr)
    return 1
