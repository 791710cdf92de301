"""`python -m bench.simulate`: `gpuplane simulate`'s speed on a seeded synthetic trace
(bench/trace.py) on the example platform, at several sizes.

Each size runs in a fresh process (so its peak memory is its own): the trace is generated,
the platform loaded, and `simulate_trace` timed in CPU seconds (the machine is shared: wall
time is noise). It prints workloads/s, the seconds per size, the peak resident memory, the
cost per event (a submission, an admission's finish or an eviction: what the simulator's
clock takes), and the growth exponent between sizes (log of the time ratio over log of the
size ratio: 1 is linear). `--json PATH` writes every figure. Not a test: nothing asserts a
time.

The issue's sizes are 25,000, 50,000 and 100,000 (`--sizes 25000,50000,100000`); the default
is smaller, as the simulator does not reach them in minutes yet: on the shared 2-core machine
500, 1,000 and 2,000 workloads take 2.8, 5.0 and 9.6 CPU seconds, 5,000 about 33 and 10,000
about 90, with a peak of 114 MiB at 5,000 (docs/simulate.md#speed has the figures measured and
where the time goes). `make bench` runs
the default sizes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.trace import write_trace

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = (500, 1000, 2000)


def measure(workloads: int, seed: int) -> dict[str, float]:
    """One size, in this process: the figures of one run."""
    from renderer.commands.simulate import simulate_trace
    from renderer.pipeline import load_platform

    platform = load_platform(REPO).platform
    with tempfile.TemporaryDirectory() as tmp:
        path = write_trace(Path(tmp) / "trace.csv", workloads, seed)
        start = time.process_time()
        report = simulate_trace(platform, path)
        seconds = time.process_time() - start
    if isinstance(report, list):
        raise SystemExit(f"the synthetic trace has findings: {report[0].message}")
    admissions = sum(t.wait.admissions for t in report.teams)
    evictions = sum(t.preempted for t in report.teams)
    events = workloads + admissions + evictions
    return {
        "workloads": workloads,
        "cpuSeconds": round(seconds, 3),
        "workloadsPerSecond": round(workloads / seconds, 1),
        "events": events,
        "evictions": evictions,
        "microsecondsPerEvent": round(seconds / events * 1e6, 1),
        "peakMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def growth(rows: list[dict[str, float]], key: str) -> list[float | None]:
    out: list[float | None] = [None]
    for before, after in itertools.pairwise(rows):
        ratio = after[key] / before[key] if before[key] else 0
        size = after["workloads"] / before["workloads"]
        out.append(round(math.log(ratio) / math.log(size), 2) if ratio > 0 else None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, dest="json_path")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a size, in a child
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.seed)))
        return
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        child = subprocess.run(
            [sys.executable, "-m", "bench.simulate", "--one", str(size), "--seed", str(args.seed)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(child.stdout))
    exponents = growth(rows, "cpuSeconds")
    print("workloads  CPU s  workloads/s   events  evictions  us/event  peak MiB  growth")
    for row, exponent in zip(rows, exponents, strict=True):
        print(
            f"{row['workloads']:>9,}  {row['cpuSeconds']:>5.1f}  {row['workloadsPerSecond']:>11,.0f}"
            f"  {row['events']:>7,}  {row['evictions']:>9,}  {row['microsecondsPerEvent']:>8,.0f}"
            f"  {row['peakMiB']:>8.0f}  {'' if exponent is None else exponent:>6}"
        )
    if args.json_path is not None:
        figures = {"sizes": rows, "growth": exponents, "seed": args.seed}
        args.json_path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
