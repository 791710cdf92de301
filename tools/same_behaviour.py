"""Old against new: run every command on every case with the engine at BASE and with the working
tree, and list each run whose exit code, stdout, stderr or written files differ.

    .venv/bin/python tools/same_behaviour.py BASE [--only SUBSTRING] [--jobs N] [--warm]

A refactor that claims "no behaviour change" proves it here (CONTRIBUTING.md). BASE is checked
out once into a detached worktree beside the repository; both sides run `python -m renderer`
from the same interpreter, the old one with its tree first on PYTHONPATH, in the same scratch
folder (a fresh copy of the case for each run), so paths in the output are the same bytes. The old side's results are kept (in the temporary
folder, per BASE, arguments and scratch folder), so a second comparison runs the new side only;
`--warm` fills that store ahead.

The matrix: every platform folder (the example, tests/cases/render/*, tests/cases/errors/*) under
validate, render, render --check, plan and diagram in every format; explain of every rule; new of
every kind; fit of every job in tests/cases/fit, tests/fit_chain and, beside ../shared, the
upstream corpus; diff and validate --base on a quota change; cost; acceptance report; every
command's --help.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CACHE = Path(tempfile.gettempdir()) / "gpuplane-same-cache"
INPUTS = (
    "clusters",
    "pools",
    "queues",
    "teams",
    "gpuplane.yaml",
    ".gpuplane",
    ".github",
    "schemas",
    "images",
)


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    platform: Path | None  # copied into the scratch folder, which is the working directory
    git: bool = False  # make the copy a repository, then change one quota (diff, --base)


def platforms() -> Iterator[tuple[str, Path]]:
    yield "example", REPO
    for group in ("render", "errors"):
        for case in sorted((REPO / "tests" / "cases" / group).iterdir()):
            if case.is_dir():
                yield f"{group}/{case.name}", case


def help_cases() -> Iterator[Case]:
    commands = [
        (),
        ("validate",),
        ("render",),
        ("plan",),
        ("diff",),
        ("fit",),
        ("explain",),
        ("new",),
        ("diagram",),
        ("cost",),
        ("completion",),
        ("acceptance",),
        ("acceptance", "report"),
        ("schemas",),
        ("schemas", "import"),
        ("schemas", "pull"),
        ("schemas", "list"),
    ]
    for command in commands:
        yield Case(f"help {' '.join(command)}", (*command, "--help"), None)


def platform_cases() -> Iterator[Case]:
    formats = ("text", "json", "github", "sarif", "junit")
    for name, folder in platforms():
        for fmt in formats:
            yield Case(f"{name}: validate {fmt}", ("validate", "--format", fmt), folder)
            yield Case(
                f"{name}: render --check {fmt}", ("render", "--check", "--format", fmt), folder
            )
        yield Case(f"{name}: render", ("render",), folder)
        yield Case(f"{name}: render json", ("render", "--format", "json"), folder)
        for fmt in ("text", "json", "markdown"):
            yield Case(f"{name}: plan {fmt}", ("plan", "--format", fmt), folder)
        for fmt in ("svg", "mermaid"):
            yield Case(f"{name}: diagram {fmt}", ("diagram", "--format", fmt), folder)


def fit_jobs() -> Iterator[Path]:
    yield from sorted((REPO / "tests" / "cases" / "fit").glob("*.yaml"))
    yield from sorted((REPO / "tests" / "fit_chain").glob("*.yaml"))
    for corpus in ("workloads", "workloads-2"):
        folder = SHARED / "reference" / corpus
        if folder.is_dir():
            yield from sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml"))


def fit_cases() -> Iterator[Case]:
    for job in fit_jobs():
        label = job.relative_to(job.parents[1])
        for fmt in ("text", "json"):
            yield Case(f"fit {label} {fmt}", ("fit", str(job), "--format", fmt), REPO)
    yield Case(
        "fit namespace",
        ("fit", str(REPO / "tests/cases/fit/jobset.yaml"), "--namespace", "nope"),
        REPO,
    )


def other_cases() -> Iterator[Case]:
    yield Case("explain --list", ("explain", "--list"), None)
    rules = subprocess.run(
        [sys.executable, "-m", "renderer", "explain", "--list"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    ).stdout
    for line in rules.splitlines():
        rule = line.split(" ", 1)[0].strip()
        if rule and not rule.startswith(("-", "#")) and rule.replace("-", "").isalnum():
            yield Case(f"explain {rule}", ("explain", rule), None)
    yield Case("explain nope", ("explain", "no-such-rule"), None)
    for kind in ("team", "pool", "queue", "cluster"):
        yield Case(f"new {kind}", ("new", kind, "newcomer"), REPO)
        yield Case(f"new {kind} bad", ("new", kind, "Bad_Name"), REPO)
    for fmt in ("text", "markdown", "json"):
        yield Case(f"diff {fmt}", ("diff", "--base", "HEAD", "--format", fmt), REPO, git=True)
        yield Case(
            f"cost {fmt}", ("cost", str(REPO / "tests/cost/worked.csv"), "--format", fmt), REPO
        )
    yield Case("validate --base", ("validate", "--base", "HEAD"), REPO, git=True)
    yield Case(
        "validate --base json", ("validate", "--base", "HEAD", "--format", "json"), REPO, git=True
    )
    yield Case("cost --query", ("cost", "--query", "30d"), REPO)
    yield Case("schemas list", ("schemas", "list"), REPO)
    yield Case("schemas list json", ("schemas", "list", "--format", "json"), REPO)
    for case in sorted((REPO / "tests" / "cases" / "acceptance").iterdir()):
        results = sorted(str(p) for p in case.rglob("*.json"))
        if results:
            for fmt in ("text", "markdown", "json"):
                yield Case(
                    f"acceptance {case.name} {fmt}",
                    ("acceptance", "report", *results, "--format", fmt),
                    REPO,
                )
    yield Case("no command", ("nope",), None)
    yield Case("bad option", ("render", "--nope"), REPO)
    for hostile in sorted((REPO / "tests" / "cases" / "hostile").glob("*.yaml")):
        yield Case(f"fit hostile {hostile.name}", ("fit", str(hostile)), REPO)


def all_cases() -> list[Case]:
    return [*help_cases(), *platform_cases(), *fit_cases(), *other_cases()]


def prepare(case: Case, scratch: Path) -> None:
    if case.platform is None:
        return
    for name in (*INPUTS, "rendered"):
        source = case.platform / name
        if source.is_dir():
            shutil.copytree(source, scratch / name, symlinks=True)
        elif source.is_file():
            shutil.copy2(source, scratch / name)
    if case.git:
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
        subprocess.run([*git, "init", "-q"], cwd=scratch, check=True)
        subprocess.run([*git, "add", "-A"], cwd=scratch, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "base"], cwd=scratch, check=True)
        team = sorted((scratch / "teams").glob("*.yaml"))[0]
        text = team.read_text(encoding="utf-8")
        team.write_text(text.replace("nominal: ", "nominal: 1", 1), encoding="utf-8")


def snapshot(folder: Path) -> dict[str, str]:
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(folder).parts:
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run(case: Case, tree: Path, scratch: Path) -> tuple[int, str, str, dict[str, str]]:
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    prepare(case, scratch)
    env = {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1", "COLUMNS": "100"}
    if not (SHARED / "crds").is_dir():
        env.pop("GPUPLANE_CRDS", None)
    done = subprocess.run(
        [sys.executable, "-m", "renderer", *case.argv],
        capture_output=True,
        cwd=scratch,
        env=env,
        check=False,
        timeout=600,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode(), snapshot(scratch)


Result = tuple[int, str, str, dict[str, str]]


def remembered(case: Case, old: Path, scratch: Path) -> Result:
    """The old side's result: the same BASE, arguments and scratch folder give the same run,
    so it is kept in CACHE and read back on the next comparison against that BASE."""
    key = hashlib.sha256(repr((str(old), case, str(scratch))).encode()).hexdigest()[:24]
    stored = CACHE / old.name / f"{key}.json"
    if stored.exists():
        rc, out, err, files = json.loads(stored.read_text(encoding="utf-8"))
        return rc, out, err, files
    result = run(case, old, scratch)
    stored.parent.mkdir(parents=True, exist_ok=True)
    stored.write_text(json.dumps(result), encoding="utf-8")
    return result


def compare(case: Case, old: Path, new: Path | None, scratch: Path) -> str | None:
    a = remembered(case, old, scratch)
    if new is None:  # --warm: the old side only
        return None
    b = run(case, new, scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    if a == b:
        return None
    parts = []
    for what, x, y in zip(("exit code", "stdout", "stderr", "files"), a, b, strict=True):
        if x != y:
            if what == "files":
                changed = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
                parts.append(f"files differ: {changed[:5]}")
            elif isinstance(x, str):
                diff = difflib.unified_diff(
                    x.splitlines(), y.splitlines(), "old", "new", lineterm="", n=1
                )
                parts.append(f"{what}:\n" + "\n".join(list(diff)[:20]))
            else:
                parts.append(f"{what}: {x} -> {y}")
    return f"DIFFERS {case.name} ({' '.join(case.argv)})\n" + "\n".join(parts)


def old_tree(base: str) -> Path:
    sha = subprocess.run(
        ["git", "rev-parse", "--short", base], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout.strip()
    where = Path(tempfile.gettempdir()) / f"gpuplane-old-{sha}"
    if not where.exists():
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(where), sha], cwd=REPO, check=True
        )
    return where


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("--only", default="")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--warm", action="store_true", help="Run and keep the old side only.")
    args = parser.parse_args()
    old = old_tree(args.base)
    cases = [c for c in all_cases() if args.only in c.name]
    # one scratch folder per checkout and case, the same on both sides and on every run
    root = (
        Path(tempfile.gettempdir())
        / "gpuplane-same"
        / hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
    )

    def one(case: Case) -> str | None:
        folder = hashlib.sha256(case.name.encode()).hexdigest()[:16]
        return compare(case, old, None if args.warm else REPO, root / f"case-{folder}")

    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, cases))
    differing = [r for r in results if r]
    for report in differing:
        print(report, end="\n\n")
    print(
        f"same behaviour: {len(cases) - len(differing)}/{len(cases)} runs identical (base {args.base})"
    )
    shutil.rmtree(root, ignore_errors=True)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
