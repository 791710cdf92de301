"""The README's opening figures, measured the way a newcomer meets them, and written into it.

    python3 -m tools.measure [--note TEXT] [--skip-test]    # measure on a fresh clone (~10 min)
    python3 -m tools.measure --readme-only                  # README block from tools/measured.json

It clones this repository's HEAD into an empty temporary folder (nothing beside it: no
../shared, no $GPUPLANE_CRDS), then times the README's two commands there: `make render` (the
first run: the .venv is created, the engine installed, the example rendered) and `make test` (the
fast tier). It records the .venv's size and the whole checkout's after `make test`, the warnings
`make render` printed (gpuplane's findings, and any Python warning the install printed), the
test outcomes pytest reported, and how many tests each tier collects. The figures go to
tools/measured.json, and README.md's text between the `measured` markers is written from that
file alone; tests/test_readme_figures.py fails when either drifts from what it can check cheaply.

Timings depend on the machine and on what else runs on it: `--note` says so beside the numbers
(e.g. "while another test run shared the two cores").
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tools" / "measured.json"
README = REPO / "README.md"
START = "<!-- measured: written by `python3 -m tools.measure` from tools/measured.json -->"
END = "<!-- /measured -->"

FINDING_WARNING = re.compile(r"^\S+: warning\[[\w-]+\] ", re.MULTILINE)
PYTHON_WARNING = re.compile(r"\b\w+Warning\b")
OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)\b")
COLLECTED = re.compile(r"(\d+)(?:/(\d+))? tests? collected")


def quiet_env() -> dict[str, str]:
    """The environment of a newcomer's shell: none of gpuplane's or the test suite's knobs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUPLANE_", "PYTEST"))}
    env.pop("PYTHONPATH", None)
    env["NO_COLOR"] = "1"
    return env


def timed(command: list[str], cwd: Path) -> tuple[float, str, int]:
    """Seconds, what the command printed (stdout and stderr), and its exit code."""
    start = time.monotonic()
    done = subprocess.run(
        command, cwd=cwd, env=quiet_env(), capture_output=True, text=True, check=False
    )
    return time.monotonic() - start, done.stdout + done.stderr, done.returncode


def size_mb(path: Path) -> int:
    """The disk space under `path` in MiB, as `du -sh` prints it (what a newcomer checks)."""
    done = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return round(int(done.stdout.split()[0]) / 1024)


def outcomes(output: str) -> dict[str, int]:
    """pytest's last summary line, e.g. "4105 passed, 1082 skipped, 3 xfailed in 301.2s"."""
    line = next(
        (ln for ln in reversed(output.splitlines()) if OUTCOME.search(ln) and " in " in ln), ""
    )
    found: dict[str, int] = {}
    for count, word in OUTCOME.findall(line):
        found["error" if word.startswith("error") else word] = int(count)
    return found


def collected(clone: Path, marker: str) -> int:
    """How many tests `pytest -m MARKER` selects, without running them."""
    python = str(clone / ".venv" / "bin" / "python")
    _, out, _ = timed([python, "-m", "pytest", "--collect-only", "-q", "-m", marker], clone)
    match = COLLECTED.search(out)
    if not match:
        raise SystemExit(f"pytest --collect-only printed no count:\n{out[-2000:]}")
    return int(match.group(1))


def measure(note: str, *, skip_test: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gpuplane-measure-") as scratch:
        clone = Path(scratch) / "gpuplane"
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], check=True)
        assert not (clone.parent / "shared").exists()
        print(f"measuring on {clone} (nothing beside it)", file=sys.stderr)
        seconds, out, code = timed(["make", "render"], clone)
        if code != 0:
            raise SystemExit(f"make render failed:\n{out[-4000:]}")
        today = datetime.date.today().isoformat()
        data: dict[str, Any] = {
            "cpus": os.cpu_count(),
            "note": note,
            "render": {
                "date": today,
                "seconds": round(seconds),
                "venv_mb": size_mb(clone / ".venv"),
                "finding_warnings": len(FINDING_WARNING.findall(out)),
                "python_warnings": len(PYTHON_WARNING.findall(out)),
            },
        }
        print(f"make render: {data['render']}", file=sys.stderr)
        if skip_test:
            return data
        seconds, out, code = timed(["make", "test"], clone)
        if not outcomes(out).get("passed"):  # a failing test is a figure; no run at all is not
            raise SystemExit(f"make test ran no tests:\n{out[-4000:]}")
        for line in out.splitlines():  # a failure is a figure, and the reader wants its name
            if line.startswith(("FAILED ", "ERROR ")):
                print(line, file=sys.stderr)
        data["test"] = {
            "date": today,
            "seconds": round(seconds),
            "outcomes": outcomes(out),
            "checkout_mb": size_mb(clone),
            "collected": {"fast": collected(clone, "not slow"), "slow": collected(clone, "slow")},
        }
        print(f"make test: {data['test']}", file=sys.stderr)
        return data


def minutes(seconds: int) -> str:
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min {seconds % 60:02d} s"


def thousands(n: int) -> str:
    return f"{n:,}"


def readme_block(data: dict[str, Any]) -> str:
    """The README's figures, from tools/measured.json alone."""
    render = data["render"]
    warned = render["finding_warnings"]
    dates = sorted({data[part]["date"] for part in ("render", "test") if part in data})
    where = f"{data['cpus']}-core machine, {' and '.join(dates)}" + (
        f", {data['note']}" if data["note"] else ""
    )
    lines = [
        f"Both work on a fresh clone with nothing beside it. The first `make render` creates the "
        f"`.venv` with only what rendering needs ({minutes(render['seconds'])} and "
        f"{render['venv_mb']} MB) and prints {warned} warning{'' if warned == 1 else 's'}: "
        f'the custom kinds it has no CRD to check against, in one line (see "Custom '
        f'resources" below; `--unchecked list` lists them).'
    ]
    test = data.get("test")
    if test:
        done = test["outcomes"]
        rest = ", ".join(
            f"{thousands(done[k])} {k}" for k in ("xfailed", "xpassed", "failed") if done.get(k)
        )
        fast, slow = test["collected"]["fast"], test["collected"]["slow"]
        lines.append(
            f"`make test` adds the test tools, PyTorch for the probes, the cloud providers' API "
            f"models and network-config-analyzer (the checkout is then {test['checkout_mb']:,} "
            f"MB) and runs the fast tier, {thousands(fast)} tests, in "
            f"{minutes(test['seconds'])}: {thousands(done.get('passed', 0))} pass and "
            f"{thousands(done.get('skipped', 0))} skip (those need `../shared` or a program from "
            f'"Tools the tests drive")' + (f", {rest}" if rest else "") + ". "
            f"`make test-all` adds the {thousands(slow)} slow tests (what CI runs; "
            f"[docs/testing.md](docs/testing.md))."
        )
    lines.append(f"Measured by `python3 -m tools.measure` on this {where}.")
    text = textwrap.fill(" ".join(lines), width=99, break_long_words=False, break_on_hyphens=False)
    return "\n".join([START, text, END])


def write_readme(data: dict[str, Any]) -> None:
    text = README.read_text()
    start, end = text.index(START), text.index(END) + len(END)
    README.write_text(text[:start] + readme_block(data) + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--note", default="", help="what else ran on the machine, and the like")
    parser.add_argument("--skip-test", action="store_true", help="measure `make render` only")
    parser.add_argument(
        "--readme-only", action="store_true", help="rewrite README.md from tools/measured.json"
    )
    args = parser.parse_args(argv)
    if args.readme_only:
        data = json.loads(DATA.read_text())
    else:
        data = measure(args.note, skip_test=args.skip_test)
        if args.skip_test and DATA.is_file() and "test" in json.loads(DATA.read_text()):
            data["test"] = json.loads(DATA.read_text())["test"]  # keep the last test figures
        DATA.write_text(json.dumps(data, indent=2) + "\n")
    write_readme(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
