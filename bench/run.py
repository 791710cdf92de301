"""`make bench`: the pipeline and the commands a user runs, timed at three platform sizes.

For each fleet shape (`--shapes`: few large teams of three namespaces, many small teams of one
or two; each with its own base number of teams, so that both render about the same objects) and
each size (the base times 1, 2 and 4; clusters and pools fixed) it generates a
platform (`bench.generate`), refuses to go on if gpuplane finds anything wrong with it (a
benchmark of a platform `gpuplane render` would refuse measures nothing), and then times:

- each pipeline stage in this process (load, schema, model, policy, layers, output validation,
  dump, write, compare);
- each command as a user runs it, in a fresh process, with its peak memory (`validate`; `render`
  into an empty tree; `render --check` cold, then warm; a one-team quota change re-checked,
  and `diff --base HEAD` of it);
- on the same objects, kubernetes-validate as shipped (on a sample: it takes ~15 ms an object)
  and `kubectl kustomize` over the largest cluster's tree, with the ratios to `render --check`.

It prints objects/s, the growth exponent between sizes (log of the time ratio over log of the
object ratio: 1 is linear) and the machine, per shape, then both shapes side by side at their
largest size; `--json PATH` writes every figure. Not a test: nothing here asserts a time; it fails
only when the platform has findings or a command does not do what it should.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import gc
import itertools
import json
import math
import os
import platform as host
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.table import Table

from bench.generate import SHAPES, Shape, generate_platform
from renderer.cli import tune_garbage_collection
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
REPO = Path(__file__).resolve().parents[1]
SHARED_CRDS = REPO.parent / "shared" / "crds"
STALE = 1
"""`render --check`'s exit status when the tree on disk is not what the inputs render."""
STALE_SAYS = b"error[stale-output]"
"""What `render --check` prints then; findings and a crash exit 1 too."""
KUBERNETES_VALIDATE = metadata.version("kubernetes-validate")


COMMAND_ENV = {k: v for k, v in os.environ.items() if k != "GPUPLANE_CRDS"}
"""The commands get the CRDs with --crds: a relative GPUPLANE_CRDS means nothing in the
generated platform's folder. `main` points GPUPLANE_CACHE_DIR at a fresh folder per size."""

GIT_ENV = {
    **COMMAND_ENV,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
"""git for the benchmark's own commit: no configuration of the machine's, a fixed author."""


class BenchError(Exception):
    """The benchmark cannot measure what it claims to: the reason is printed, exit 1."""


def timed(function: Callable[[], T]) -> tuple[T, float]:
    """The result and the seconds it took. What the benchmark holds (earlier stages' objects,
    other sizes' platforms) is frozen first, out of the collector's way: otherwise a stage pays
    for full collections over the benchmark's own heap, which grows with the sizes already
    measured and made short stages look super-linear."""
    gc.collect()
    gc.freeze()
    try:
        start = time.perf_counter()
        result = function()
        return result, time.perf_counter() - start
    finally:
        gc.unfreeze()


SHORT_STAGE_RUNS = 7
"""A stage that takes well under a second (schema, model) is run this many times in each
measurement and its median kept: once, a 40 ms stage swings by half with one garbage
collection, which alone moved its growth exponent between sizes from 1.07 to 1.49."""


def timed_short(function: Callable[[], T]) -> tuple[T, float]:
    """`timed`, as the median of `SHORT_STAGE_RUNS` runs (the result is the last run's)."""
    times = []
    result = None
    for _ in range(SHORT_STAGE_RUNS):
        result, seconds = timed(function)
        times.append(seconds)
    assert result is not None
    return result, statistics.median(times)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return host.processor() or "unknown CPU"


DEFAULT_TEAMS: dict[Shape, int] = {"few-large": 340, "many-small": 600}
"""Teams at 1x per shape, so that both shapes render about the same objects at every size:
at 1x few-large's 340 teams render 13,552 objects and many-small's 600 teams 13,506; at 4x
52,288 and 52,126 (8 clusters x 5 pools)."""

COLD_CHECK = "gpuplane render --check --no-index (cold)"
ONE_TEAM = "gpuplane render --check, index, one team changed"


@dataclass
class Size:
    """One generated platform and what was measured on it."""

    factor: int
    teams: int
    shape: Shape = "few-large"
    files: int = 0
    objects: int = 0
    tree_files: int = 0
    stages: dict[str, tuple[int, str, float]] = field(default_factory=dict)
    """stage -> (items, unit, seconds)"""
    commands: dict[str, tuple[float, int]] = field(default_factory=dict)
    """command -> (median wall seconds, peak resident KiB)"""
    others: dict[str, tuple[int, float]] = field(default_factory=dict)
    """other tool -> (objects it handled, seconds)"""


# --- the platform --------------------------------------------------------------------------------


def refuse_findings(root: Path) -> model.Platform:
    """The generated platform; any finding, error or warning, makes it unfit to time."""
    loaded = load_platform(root)
    found = loaded.diagnostics
    if found:
        listed = "\n".join(f"  {d.at.file}:{d.at.line}: {d.rule}: {d.message}" for d in found[:5])
        raise BenchError(
            f"the generated platform has {len(found)} finding(s); gpuplane would refuse it, "
            f"so timing it measures nothing:\n{listed}"
        )
    return loaded.platform


MOVABLE_NOMINAL = 4
"""The least nominal quota of the entry the one-team change moves: room for the steps of
`--repeat` runs and the memory run, each to a value not checked before."""


def _movable_entry(root: Path) -> tuple[Path, str, re.Match[str]]:
    """The first team (by file name) with a quota entry whose lending limit can move without
    opening or closing its pool to the cohort: a nominal of `MOVABLE_NOMINAL` or more and a
    lending limit of 1 or more. Opening a pool that lent nothing (0 to 1) changes what every
    team of the cohort may borrow, which is not the one-team change this times; many-small's
    first teams hold one or two GPUs a pool."""
    for path in sorted((root / "teams").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for found in re.finditer(r"nominal: (\d+)[^\n}]*lendingLimit: (\d+)", text):
            if int(found.group(1)) >= MOVABLE_NOMINAL and int(found.group(2)) >= 1:
                return path, text, found
    raise BenchError(
        f"no team has a lendingLimit of 1 or more beside a nominal of {MOVABLE_NOMINAL} or more"
    )


def one_team_change(root: Path, step: int = 1) -> tuple[Path, bytes]:
    """Change one team's lending limit (a quota change that reaches its ClusterQueue; the
    entry `_movable_entry` finds) to the `step`-th value nearest above it that its nominal
    quota allows, so that each step is a platform this run has not checked before (a check
    repeated on the same change would find its new objects' checks kept in the index);
    returns the file and its old bytes, to put back."""
    path, text, found = _movable_entry(root)
    old = path.read_bytes()
    nominal, lending = int(found.group(1)), int(found.group(2))
    values = sorted(
        (v for v in range(1, nominal + 1) if v != lending),
        key=lambda v: (v < lending, abs(v - lending)),
    )
    if step > len(values):
        raise BenchError(
            f"{path.name}: fewer than {step} other lending limits fit nominal {nominal}"
        )
    start, end = found.span(2)
    path.write_text(f"{text[:start]}{values[step - 1]}{text[end:]}", encoding="utf-8")
    return path, old


def fresh_change(
    root: Path, command: list[str], expect: int
) -> Callable[[bool], tuple[float, int]]:
    """A run for `measured` that first moves the one-team change a step further (each run
    checks a change never checked before), and puts the file back after it."""
    steps = itertools.count(1)

    def run(memory: bool) -> tuple[float, int]:
        path, old = one_team_change(root, next(steps))
        try:
            return run_command(command, root, expect, memory=memory)
        finally:
            path.write_bytes(old)

    return run


# --- in-process stages ---------------------------------------------------------------------------


def stages(
    root: Path, platform: model.Platform, crds: Path, size: Size
) -> dict[str, tuple[Manifest, ...]]:
    """Time each stage; `platform` is the one `refuse_findings` loaded from `root`."""
    paths = [
        (folder, path) for folder in KIND_FOLDERS for path in sorted((root / folder).glob("*.yaml"))
    ]
    size.files = files = len(paths)

    def load_all() -> list[tuple[str, Document]]:
        loaded = []
        for folder, path in paths:
            document = load_file(path, f"{folder}/{path.name}").document
            assert document is not None
            loaded.append((folder, document))
        return loaded

    documents, t_load = timed(load_all)
    problems, t_schema = timed_short(
        lambda: [p for f, d in documents for p in check_document(d, f)]
    )
    if problems:
        raise BenchError(f"schema findings: {problems[:3]}")
    _, t_model = timed_short(
        lambda: [model.BUILDERS[KIND_FOLDERS[f]](d.data, d.source) for f, d in documents]
    )
    _, t_policy = timed(lambda: check_policy(platform))

    rendered, t_layers = timed(lambda: rendered_objects(platform))
    size.objects = objects = sum(len(m) for m in rendered.values())
    validator = OutputValidator([crds])

    def validate_all() -> int:
        found = 0
        for name, manifests in rendered.items():
            version = platform.clusters[name].kubernetes_version
            found += sum(len(validator.validate(m.body, version)) for m in manifests)
        return found

    invalid, t_validate = timed(validate_all)
    if invalid:
        raise BenchError(f"{invalid} rendered object(s) fail output validation")
    tree, t_dump = timed(lambda: build_tree(rendered))
    size.tree_files = len(tree)
    out = root.parent / f"{root.name}-inproc-rendered"
    if hasattr(os, "sync"):  # each write starts with nothing of the last one still flushing
        os.sync()
    _, t_write = timed(lambda: write_tree(out, tree))
    if hasattr(os, "sync"):  # a check reads a tree written long before, not one still flushing
        os.sync()
    stale, t_compare = timed(lambda: compare(out, tree))
    shutil.rmtree(out)
    if not stale.clean:
        raise BenchError("the tree just written compares stale")
    in_memory = memory_folder()
    t_memory = None
    if in_memory is not None:
        with tempfile.TemporaryDirectory(prefix="gpuplane-write-", dir=in_memory) as folder:
            _, t_memory = timed(lambda: write_tree(Path(folder) / "rendered", tree))
    size.stages = {
        "load (YAML, positions, hostile-input checks)": (files, "files", t_load),
        "schema (JSON Schema, Draft 2020-12)": (files, "files", t_schema),
        "model": (files, "files", t_model),
        "policy (all rules)": (files, "files", t_policy),
        "layers (render objects)": (objects, "objects", t_layers),
        "validate output (strict built-ins, CRDs)": (objects, "objects", t_validate),
        "dump (canonical YAML + kustomizations)": (len(tree), "files", t_dump),
        "write (atomic swap into an empty folder)": (len(tree), "files", t_write),
        "compare with the tree on disk (--check)": (len(tree), "files", t_compare),
    }
    if t_memory is not None:
        size.stages[WRITE_IN_MEMORY] = (len(tree), "files", t_memory)
    return rendered


WRITE_IN_MEMORY = "write (the same, into memory: tmpfs)"
"""The write stage without the disk: on the benchmark's VM, creating a file on its ext4 disk
costs about 200 us, and how that cost moves with the tree between runs (exponents 0.79-1.21)
is the disk's; the same writes into a tmpfs folder time gpuplane's own work."""


def memory_folder() -> Path | None:
    """A tmpfs folder this process may write into (/dev/shm on Linux), else None."""
    folder = Path("/dev/shm")
    if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK):
        return folder
    return None


def median_stages(
    root: Path, platform: model.Platform, crds: Path, size: Size, repeat: int
) -> dict[str, tuple[Manifest, ...]]:
    """`stages` run `repeat` times; each stage's time is its median (one run of a stage that
    takes a tenth of a second swings by half on a shared VM)."""
    runs = []
    rendered: dict[str, tuple[Manifest, ...]] = {}
    for _ in range(repeat):
        rendered = stages(root, platform, crds, size)
        runs.append(dict(size.stages))
    size.stages = {
        stage: (items, unit, statistics.median(run[stage][2] for run in runs))
        for stage, (items, unit, _) in runs[0].items()
    }
    return rendered


def stages_in_child(root: Path, crds: Path, size: Size, repeat: int) -> None:
    """`median_stages` of the platform at `root`, in a fresh process (after one warm-up pass
    there, so that imports and first-use caches are not the platform's cost): in this one, a
    stage at a larger size ran with the heap and the allocator left by every size and stage
    before it, which made 30 ms stages look super-linear (1.14 between 2x and 4x, 1.03 alone)."""
    with tempfile.TemporaryDirectory(prefix="gpuplane-stages-") as tmp:
        out = Path(tmp) / "stages.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.run",
                "--stages-of",
                str(root),
                "--stages-out",
                str(out),
                "--crds",
                str(crds),
                "--repeat",
                str(repeat),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not out.is_file():
            raise BenchError(f"timing the stages of {root.name}: {done.stdout}{done.stderr}")
        found = json.loads(out.read_text())
    size.files, size.objects, size.tree_files = found["files"], found["objects"], found["tree"]
    size.stages = {k: (v[0], v[1], v[2]) for k, v in found["stages"].items()}


def _stages_here(root: Path, crds: Path, repeat: int, out: Path) -> int:
    """What `stages_in_child` runs in the child."""
    platform = refuse_findings(root)
    stages(root, platform, crds, Size(0, 0))
    size = Size(0, 0)
    median_stages(root, platform, crds, size, repeat)
    found = {
        "files": size.files,
        "objects": size.objects,
        "tree": size.tree_files,
        "stages": size.stages,
    }
    out.write_text(json.dumps(found))
    return 0


def rendered_objects(platform: model.Platform) -> dict[str, tuple[Manifest, ...]]:
    """Every cluster's objects, for the other tools."""
    return {
        name: tuple(
            m
            for m in render_cluster(ClusterView.of(platform, platform.clusters[name]))
            if isinstance(m, Manifest)
        )
        for name in sorted(platform.clusters)
    }


# --- commands in fresh processes -----------------------------------------------------------------


def _children(pid: int) -> list[int]:
    """`pid` and every process below it, from /proc (Linux)."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(parents.get(current, ()))
    return found


def _proportional_kib(pid: int) -> int:
    """The process's proportional set size: its private pages plus its share of the pages it
    shares (a forked worker's pages it has not written are counted once across the tree)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeMemory:
    """The peak, over the life of a command, of the memory all its processes hold together
    (the sum of their PSS, sampled every 20 ms): with worker processes, the peak of any one
    process (os.wait4's ru_maxrss) would leave the others out."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            total = sum(_proportional_kib(p) for p in _children(self.pid))
            self.peak_kib = max(self.peak_kib, total)
            self._stop.wait(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_kib


def run_command(
    argv: Sequence[str], cwd: Path, expect: int, *, memory: bool = True
) -> tuple[float, int]:
    """Wall seconds and the peak memory in KiB of one command: its processes' summed PSS,
    sampled (0 with `memory` False: nothing watches the run). Not os.wait4's ru_maxrss: on
    Linux a forked child starts with its parent's high-water mark, so every command would
    report at least what this benchmark holds."""
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(argv), cwd=cwd, env=COMMAND_ENV, stdout=output, stderr=subprocess.STDOUT
        )
        watch = memory and Path("/proc/self/smaps_rollup").exists()
        sampler = TreeMemory(process.pid) if watch else None
        _, status, _ = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        peak = sampler.stop() if sampler is not None else 0
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        said = output.read()
        # exit 1 is also what findings and a crash give: a stale check must say it is stale
        if process.returncode != expect or (expect == STALE and STALE_SAYS not in said):
            tail = said.decode(errors="replace")[-2000:]
            raise BenchError(
                f"{' '.join(argv)} exited {process.returncode}, expected {expect}:\n{tail}"
            )
    return seconds, peak


def measured(run: Callable[[bool], tuple[float, int]], repeat: int) -> tuple[float, int]:
    """The median seconds of `repeat` runs that nothing watches, and the peak memory of one
    more run, sampled. On two cores the sampler competes with the command: reading every
    process's PSS every 20 ms took 1.5 s of CPU during a 6.5 s check and made it 0.85 s
    slower (2026-12-05)."""
    seconds = statistics.median(run(False)[0] for _ in range(repeat))
    return seconds, run(True)[1]


def median_run(argv: Sequence[str], cwd: Path, expect: int, repeat: int) -> tuple[float, int]:
    return measured(lambda memory: run_command(argv, cwd, expect, memory=memory), repeat)


def commands(root: Path, crds: Path, size: Size, repeat: int) -> None:
    """Each command in a fresh process. `render --check --no-index` is what CI runs on a clean
    clone (no render index); the index's rows are what a person re-checking after a change
    gets (`GPUPLANE_CACHE_DIR` is a fresh folder per size, so nothing carries over)."""
    gpuplane = [sys.executable, "-m", "renderer", "-C", str(root)]
    render = [*gpuplane, "render", "--crds", str(crds), "--strict-schemas"]
    full = [*render, "--check", "--no-index"]
    found = size.commands
    found["gpuplane validate"] = median_run([*gpuplane, "validate"], root, 0, repeat)

    def from_empty(memory: bool) -> tuple[float, int]:
        shutil.rmtree(root / "rendered", ignore_errors=True)
        return run_command([*render, "--no-index"], root, 0, memory=memory)

    found["gpuplane render (into an empty tree)"] = measured(from_empty, repeat)
    cold = run_command(full, root, 0, memory=False)[0]  # the first check after the render
    found["gpuplane render --check --no-index (cold)"] = (cold, run_command(full, root, 0)[1])
    found["gpuplane render --check --no-index (warm)"] = median_run(full, root, 0, repeat)
    run_command([*render, "--check"], root, 0)  # fills the render index
    found["gpuplane render --check, index, nothing changed"] = median_run(
        [*render, "--check"], root, 0, repeat
    )
    found["gpuplane render --check --no-index, one team changed"] = measured(
        fresh_change(root, full, STALE), repeat
    )
    found["gpuplane render --check, index, one team changed"] = measured(
        fresh_change(root, [*render, "--check"], STALE), repeat
    )
    diff = [*gpuplane, "diff", "--base", "HEAD", "--crds", str(crds), "--strict-schemas"]
    in_git(root, render, diff, found, repeat)


def in_git(
    root: Path,
    render: list[str],
    diff: list[str],
    found: dict[str, tuple[float, int]],
    repeat: int,
) -> None:
    """The same checks where a pull request runs them: in a git repository whose HEAD holds
    the rendered tree (the committed tree is read with git, each cluster's folder is known by
    its tree id, and the change is found with `git diff`); and `diff --base HEAD` of a
    one-team change, with the index the checks left (made before the change, as a person's
    is after their last render) and without."""
    git = shutil.which("git")
    if git is None:
        return
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "platform"]):
        subprocess.run([git, *step], cwd=root, check=True, stdout=subprocess.DEVNULL, env=GIT_ENV)
    full = [*render, "--check", "--no-index"]
    found["in git: gpuplane render --check --no-index"] = median_run(full, root, 0, repeat)
    run_command([*render, "--check"], root, 0)  # fills the render index
    found["in git: gpuplane render --check, index, one team changed"] = measured(
        fresh_change(root, [*render, "--check"], STALE), repeat
    )
    found["in git: gpuplane diff --base HEAD --no-index, one team changed"] = measured(
        fresh_change(root, [*diff, "--no-index"], 0), repeat
    )
    found["in git: gpuplane diff --base HEAD, index, one team changed"] = measured(
        fresh_change(root, diff, 0), repeat
    )


# --- the same objects through other tools --------------------------------------------------------


def kubernetes_validate_rate(
    rendered: dict[str, tuple[Manifest, ...]], versions: dict[str, str], sample: int
) -> tuple[int, float]:
    """kubernetes-validate as shipped (`validate(obj, version, strict=True)`) on an even sample
    of the objects; a kind it has no schema for costs its lookup too."""
    import kubernetes_validate

    every = [(m, versions[c]) for c, ms in rendered.items() for m in ms]
    step = max(1, len(every) // sample)
    chosen = every[::step][:sample]
    start = time.perf_counter()
    for manifest, version in chosen:
        with contextlib.suppress(
            kubernetes_validate.SchemaNotFoundError, kubernetes_validate.ValidationError
        ):
            kubernetes_validate.validate(manifest.body, f"{version}.0", strict=True)
    return len(chosen), time.perf_counter() - start


def kustomize(root: Path, rendered: dict[str, tuple[Manifest, ...]]) -> tuple[int, float] | None:
    """`kubectl kustomize` of the cluster with the most objects (it grows faster than linearly
    with a tree's size, and over every cluster of the 4x platform it takes a quarter of an
    hour): that cluster's objects, and the seconds."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    cluster = max(sorted(rendered), key=lambda c: len(rendered[c]))
    start = time.perf_counter()
    subprocess.run(
        [kubectl, "kustomize", str(root / "rendered" / cluster)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return len(rendered[cluster]), time.perf_counter() - start


# --- the report ----------------------------------------------------------------------------------


def growth(a_items: int, a_seconds: float, b_items: int, b_seconds: float) -> float | None:
    """log(t2 / t1) / log(n2 / n1): 1 is linear; None where it means nothing."""
    if min(a_items, b_items, a_seconds, b_seconds) <= 0 or a_items == b_items:
        return None
    return math.log(b_seconds / a_seconds) / math.log(b_items / a_items)


def exponent(a_items: int, a_seconds: float, b_items: int, b_seconds: float) -> str:
    found = growth(a_items, a_seconds, b_items, b_seconds)
    return "-" if found is None else f"{found:.2f}"


def _growth_table(
    sizes: Sequence[Size], names: Iterable[str], seconds: Callable[[Size, str], float]
) -> dict[str, dict[str, float | None]]:
    """name -> "1x-2x" -> its exponent over the objects rendered, between consecutive sizes."""
    pairs = list(itertools.pairwise(sizes))
    return {
        name: {
            f"{a.factor}x-{b.factor}x": growth(
                a.objects, seconds(a, name), b.objects, seconds(b, name)
            )
            for a, b in pairs
        }
        for name in names
    }


def stage_growth(sizes: Sequence[Size]) -> dict[str, dict[str, float | None]]:
    """stage -> "1x-2x" -> its exponent over the objects rendered, between consecutive sizes."""
    return _growth_table(sizes, sizes[-1].stages, lambda size, stage: size.stages[stage][2])


def command_growth(sizes: Sequence[Size]) -> dict[str, dict[str, float | None]]:
    """command -> "1x-2x" -> its exponent over the objects rendered."""
    return _growth_table(sizes, sizes[-1].commands, lambda size, command: size.commands[command][0])


@dataclass(frozen=True)
class Summary:
    """One shape at its largest size, as the two-shape table at the end shows it."""

    shape: Shape
    factor: int
    teams: int
    input_files: int
    objects: int
    cold_check: float | None
    one_team: float | None
    peak_kib: int
    peak_command: str | None
    stage_exponent: float | None
    stage: str | None


def summarize(shape: Shape, sizes: Sequence[Size]) -> Summary:
    """The largest size's input files, objects, cold `render --check --no-index`, one-team
    change with the index, the largest peak memory of any command, and the largest growth
    exponent of any stage between any two consecutive sizes."""
    largest = sizes[-1]
    peak_command = max(largest.commands, key=lambda c: largest.commands[c][1], default=None)
    exponents = [
        (value, stage)
        for stage, between in stage_growth(sizes).items()
        for value in between.values()
        if value is not None
    ]
    steepest = max(exponents, default=None)
    return Summary(
        shape=shape,
        factor=largest.factor,
        teams=largest.teams,
        input_files=largest.files,
        objects=largest.objects,
        cold_check=largest.commands[COLD_CHECK][0] if COLD_CHECK in largest.commands else None,
        one_team=largest.commands[ONE_TEAM][0] if ONE_TEAM in largest.commands else None,
        peak_kib=largest.commands[peak_command][1] if peak_command is not None else 0,
        peak_command=peak_command,
        stage_exponent=steepest[0] if steepest is not None else None,
        stage=steepest[1] if steepest is not None else None,
    )


def report(console: Console, shapes: dict[Shape, list[Size]], args: argparse.Namespace) -> None:
    """Each shape's tables, then the two shapes side by side at their largest size."""
    console.print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {host.python_version()}; "
        f"{args.clusters} clusters x {args.pools_per_cluster} pools; medians of {args.repeat}"
    )
    for shape, sizes in shapes.items():
        report_shape(console, shape, sizes)
    report_summary(console, [summarize(shape, sizes) for shape, sizes in shapes.items()])


def report_shape(console: Console, shape: Shape, sizes: list[Size]) -> None:
    largest = sizes[-1]
    console.print(f"\n{shape}:")
    for s in sizes:
        console.print(
            f"  {s.factor}x: {s.teams} teams, {s.files} input files -> {s.objects:,} objects in "
            f"{s.tree_files:,} files"
        )
    pairs = [f"{a.factor}x-{b.factor}x" for a, b in itertools.pairwise(sizes)]

    table = Table(title=f"{shape}: pipeline stages (one process, in memory)")
    table.add_column("stage")
    for s in sizes:
        table.add_column(f"{s.factor}x s", justify="right")
    table.add_column(f"{largest.factor}x items/s", justify="right")
    for pair in pairs:
        table.add_column(f"exp {pair}", justify="right")
    # over the objects rendered, the platform's size, as for the commands: input files count
    # the clusters, pools and queues too, which do not grow with the teams
    stage_exponents = stage_growth(sizes)
    for stage in largest.stages:
        items, unit, seconds = largest.stages[stage]
        table.add_row(
            stage,
            *(f"{s.stages[stage][2]:.3f}" for s in sizes),
            f"{items / seconds:,.0f} {unit}/s" if seconds > 0 else "-",
            *(shown(stage_exponents[stage][pair]) for pair in pairs),
        )
    console.print(table)

    table = Table(title=f"{shape}: commands (fresh process each; wall seconds, peak memory)")
    table.add_column("command")
    for s in sizes:
        table.add_column(f"{s.factor}x s", justify="right")
    table.add_column(f"{largest.factor}x objects/s", justify="right")
    table.add_column(f"{largest.factor}x peak MiB", justify="right")
    for pair in pairs:
        table.add_column(f"exp {pair}", justify="right")
    command_exponents = command_growth(sizes)
    for command in largest.commands:
        seconds, peak = largest.commands[command]
        table.add_row(
            command,
            *(f"{s.commands[command][0]:.2f}" for s in sizes),
            f"{largest.objects / seconds:,.0f}",
            f"{peak / 1024:,.0f}",
            *(shown(command_exponents[command][pair]) for pair in pairs),
        )
    console.print(table)
    report_others(console, shape, largest)


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def report_others(console: Console, shape: Shape, largest: Size) -> None:
    warm = largest.commands.get("gpuplane render --check --no-index (warm)")
    if not largest.others or warm is None:
        return
    ours = largest.objects / warm[0]
    table = Table(title=f"{shape}: the same objects through other tools ({largest.factor}x)")
    for column in ("tool", "objects", "seconds", "objects/s", "render --check is"):
        table.add_column(column, justify="left" if column == "tool" else "right")
    for tool, (objects, seconds) in largest.others.items():
        rate = objects / seconds if seconds > 0 else math.inf
        table.add_row(tool, f"{objects:,}", f"{seconds:.2f}", f"{rate:,.0f}", f"{ours / rate:.1f}x")
    console.print(table)


def short_stage(stage: str) -> str:
    """A stage's name without its explanation: "policy (all rules)" -> "policy"."""
    return stage.split(" (", 1)[0]


def report_summary(console: Console, summaries: list[Summary]) -> None:
    """Per shape at its largest size: what issue 35's goals are stated in."""
    table = Table(title="both shapes at their largest size (seconds: wall, median)")
    for column in (
        "shape",
        "size",
        "input files",
        "objects",
        "check --no-index, cold s",
        "one team changed, index s",
        "peak MiB",
        "largest stage exp",
    ):
        table.add_column(column, justify="left" if column == "shape" else "right")
    for s in summaries:
        table.add_row(
            s.shape,
            f"{s.factor}x ({s.teams:,} teams)",
            f"{s.input_files:,}",
            f"{s.objects:,}",
            "-" if s.cold_check is None else f"{s.cold_check:.2f}",
            "-" if s.one_team is None else f"{s.one_team:.2f}",
            f"{s.peak_kib / 1024:,.0f}",
            "-" if s.stage is None else f"{shown(s.stage_exponent)} ({short_stage(s.stage)})",
        )
    console.print(table)


def figures(shapes: dict[Shape, list[Size]], args: argparse.Namespace) -> dict[str, object]:
    """Every figure measured, for `--json`: per shape, each size's stages (items, unit,
    seconds), commands (seconds, peak KiB) and other tools, the exponents between consecutive
    sizes, and the summary row."""
    return {
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "python": host.python_version(),
        },
        "clusters": args.clusters,
        "pools_per_cluster": args.pools_per_cluster,
        "repeat": args.repeat,
        "shapes": {
            shape: {
                "teams_at_1x": sizes[0].teams // sizes[0].factor,
                "sizes": [size_figures(s) for s in sizes],
                "exponents": {
                    "stages": stage_growth(sizes),
                    "commands": command_growth(sizes),
                },
                "summary": {
                    key: value
                    for key, value in asdict(summarize(shape, sizes)).items()
                    if key != "shape"
                },
            }
            for shape, sizes in shapes.items()
        },
    }


def size_figures(size: Size) -> dict[str, object]:
    return {
        "factor": size.factor,
        "teams": size.teams,
        "input_files": size.files,
        "objects": size.objects,
        "tree_files": size.tree_files,
        "stages": {
            stage: {"items": items, "unit": unit, "seconds": seconds}
            for stage, (items, unit, seconds) in size.stages.items()
        },
        "commands": {
            command: {"seconds": seconds, "peak_kib": peak}
            for command, (seconds, peak) in size.commands.items()
        },
        "others": {
            tool: {"objects": objects, "seconds": seconds}
            for tool, (objects, seconds) in size.others.items()
        },
    }


def measure_size(size: Size, root: Path, crds: Path, args: argparse.Namespace) -> None:
    """Generate the platform of `size` at `root`, refuse it on any finding, and time its
    stages, its commands and the other tools on its objects."""
    generate_platform(
        root,
        clusters=args.clusters,
        pools_per_cluster=args.pools_per_cluster,
        teams=size.teams,
        shape=size.shape,
    )
    platform = refuse_findings(root)
    stages_in_child(root, crds, size, args.repeat)
    rendered = rendered_objects(platform)
    commands(root, crds, size, args.repeat)
    if args.without_tools:
        return
    versions = {c.name: c.kubernetes_version for c in platform.clusters.values()}
    size.others[f"kubernetes-validate {KUBERNETES_VALIDATE} (sample)"] = kubernetes_validate_rate(
        rendered, versions, args.kubernetes_validate_sample
    )
    found = kustomize(root, rendered)
    if found is not None:
        size.others["kubectl kustomize (largest cluster)"] = found


def measure(
    console: Console,
    teams: dict[Shape, int],
    factors: list[int],
    crds: Path,
    args: argparse.Namespace,
) -> dict[Shape, list[Size]]:
    """Every shape at every size, each in a folder of its own with a fresh render index."""
    shapes: dict[Shape, list[Size]] = {}
    with tempfile.TemporaryDirectory(prefix="gpuplane-bench-") as tmp:
        for shape, base in teams.items():
            sizes = shapes.setdefault(shape, [])
            for factor in factors:
                size = Size(factor, base * factor, shape)
                root = Path(tmp) / f"{shape}-x{factor}"
                COMMAND_ENV["GPUPLANE_CACHE_DIR"] = str(Path(tmp) / f"cache-{shape}-x{factor}")
                measure_size(size, root, crds, args)
                sizes.append(size)
                console.print(f"measured {shape} {factor}x: {size.objects:,} objects")
    return shapes


def shape_list(text: str) -> list[Shape]:
    """`--shapes`: a comma-separated list of the generator's shapes, each once."""
    chosen: list[Shape] = []
    for name in (part.strip() for part in text.split(",")):
        shape = next((s for s in SHAPES if s == name), None)
        if shape is None:
            raise argparse.ArgumentTypeError(
                f"unknown shape {name!r} (the shapes: {', '.join(SHAPES)})"
            )
        if shape not in chosen:
            chosen.append(shape)
    return chosen


def teams_per_shape(text: str | None, shapes: list[Shape]) -> dict[Shape, int]:
    """`--teams`: one number for every shape, or `shape=N,...` (a shape not named keeps its
    default); without it, `DEFAULT_TEAMS`."""
    teams = {shape: DEFAULT_TEAMS[shape] for shape in shapes}
    if text is None:
        return teams
    if text.strip().isdigit():
        return dict.fromkeys(shapes, int(text))
    for part in text.split(","):
        name, _, number = part.partition("=")
        if not number.strip().isdigit():
            raise argparse.ArgumentTypeError(f"--teams: {part!r} is not N or SHAPE=N")
        for shape in shape_list(name):
            if shape in teams:
                teams[shape] = int(number)
    return teams


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument(
        "--shapes",
        type=shape_list,
        default=list(SHAPES),
        help=f"fleet shapes to measure (default {','.join(SHAPES)})",
    )
    defaults = ", ".join(f"{shape} {n}" for shape, n in DEFAULT_TEAMS.items())
    parser.add_argument(
        "--teams",
        default=None,
        help=f"teams at 1x: N for every shape, or SHAPE=N,... (default {defaults})",
    )
    parser.add_argument("--clusters", type=int, default=8)
    parser.add_argument("--pools-per-cluster", type=int, default=5)
    parser.add_argument("--sizes", default="1,2,4", help="factors of --teams (default 1,2,4)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (median)")
    parser.add_argument(
        "--kubernetes-validate-sample",
        type=int,
        default=400,
        help="objects kubernetes-validate is timed on",
    )
    parser.add_argument(
        "--without-tools",
        action="store_true",
        help="leave out kubernetes-validate and kubectl kustomize (kustomize alone takes "
        "minutes at 4x)",
    )
    parser.add_argument("--crds", type=Path, default=None)
    parser.add_argument(
        "--json", type=Path, default=None, metavar="PATH", help="write every figure here"
    )
    parser.add_argument("--stages-of", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--stages-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.teams = teams_per_shape(args.teams, args.shapes)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    console = Console(width=150)
    from_env = [Path(p) for p in os.environ.get("GPUPLANE_CRDS", "").split(":") if p]
    crds = args.crds or next((p for p in from_env if p.is_dir()), None)
    crds = crds or (SHARED_CRDS if SHARED_CRDS.is_dir() else None)
    if crds is None or not crds.is_dir():
        console.print(
            "error: the benchmark needs the operators' CRDs to check custom kinds as render does: "
            "--crds PATH (or GPUPLANE_CRDS)"
        )
        return 1
    crds = crds.resolve()  # the commands run in the generated platform's folder
    # as an installed gpuplane has them: bytecode for its own modules (an editable install, or
    # PYTHONDONTWRITEBYTECODE, leaves them to be compiled again by every command)
    for package in ("renderer", "workflows"):
        compileall.compile_dir(REPO / package, quiet=1)
    tune_garbage_collection()  # the stages run under the collector settings the program has
    if args.stages_of is not None and args.stages_out is not None:
        try:
            return _stages_here(args.stages_of, crds, args.repeat, args.stages_out)
        except BenchError as error:
            console.print(f"error: {error}", markup=False)
            return 1
    factors = [int(f) for f in args.sizes.split(",")]
    try:
        shapes = measure(console, args.teams, factors, crds, args)
    except BenchError as error:
        console.print(f"error: {error}", markup=False)
        return 1
    report(console, shapes, args)
    if args.json is not None:
        args.json.write_text(json.dumps(figures(shapes, args), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
