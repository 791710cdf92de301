"""A synthetic workload trace for `gpuplane simulate` on the example platform (the repository's
own inputs), seeded: the same arguments give the same bytes.

Usage (from the repository root)::

    python -m bench.trace OUT.csv [--workloads N] [--seed N] [--per-hour R]

Workloads arrive as a Poisson process, `--per-hour` of them an hour on average, spread evenly
over the example's six training namespaces (four on prod-east, two on staging-west), with jobs
of 1-8 GPUs (a few CPU-only), durations from a minute to four hours (log-uniform, mean
2,616 s), a tenth at the queue's preemptible priority. A job asks 3.83 GPUs for 2,616 s on
average, about 10,000 GPU-seconds. At the default 12 an hour, prod-east's four teams bring
80,000 GPU-seconds an hour to h100-train's 115,200 (70%), and staging-west's two 20,000 each
to the 8 (llm-eval) and 10 (search) GPUs of h200-tune each may hold at most (70% and 55%):
queues form and drain, teams borrow and preempt, and every path of the simulator is timed.
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

HEADER = "submit_s,namespace,name,pods,gpus_per_pod,cpu_per_pod,memory_per_pod,duration_s,priority"
NAMESPACES = (
    ("llm-train", "prod"),
    ("recsys-train", "prod"),
    ("speech-train", "prod"),
    ("vision-train", "prod"),
    ("search-train", "staging"),
    ("llm-eval-train", "staging"),
)
"""Training namespaces of the example platform and their queue (for the preemptible class),
drawn uniformly."""
SHAPES = ((1, 1), (1, 2), (1, 4), (1, 8), (2, 4), (1, 0))
"""(pods, GPUs per pod) a job asks for."""


def trace_lines(workloads: int, seed: int = 1, per_hour: float = 12.0) -> list[str]:
    rng = random.Random(seed)
    rate = per_hour / 3600
    clock = 0.0
    lines = [HEADER]
    for i in range(workloads):
        clock += rng.expovariate(rate)
        namespace, queue = NAMESPACES[rng.randrange(len(NAMESPACES))]
        pods, gpus = SHAPES[rng.randrange(len(SHAPES))]
        duration = round(math.exp(rng.uniform(math.log(60), math.log(4 * 3600))))
        priority = f"{queue}-preemptible" if rng.random() < 0.1 else ""
        cpu = max(1, gpus * 4)
        lines.append(
            f"{clock:.3f},{namespace},w{i},{pods},{gpus},{cpu},{cpu * 8}Gi,{duration},{priority}"
        )
    return lines


def write_trace(path: Path, workloads: int, seed: int = 1, per_hour: float = 12.0) -> Path:
    path.write_text("\n".join(trace_lines(workloads, seed, per_hour)) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-hour", type=float, default=12.0)
    args = parser.parse_args()
    write_trace(args.out, args.workloads, args.seed, args.per_hour)


if __name__ == "__main__":
    main()
