"""`gpuplane fit`'s way in: read a job file as `kubectl apply -f` would, and answer for each
workload in it (`documents`).

A file fit cannot read gets an answer too, never a traceback: what is wrong with it, and where."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from renderer.admission.answer.result import ERROR, FileFit, FitResult
from renderer.admission.documents import FileChecker
from renderer.admission.scheduler.kueue_usage import Snapshot
from renderer.findings.diagnostics import Diagnostic
from renderer.inputs.source import load_stream
from renderer.model.platform import Platform


def check_file(
    platform: Platform,
    path: Path,
    *,
    namespace: str | None = None,
    cluster: str | None = None,
    usage: Snapshot | None = None,
) -> FileFit:
    """Would Kueue admit each workload in `path`, and where; never raises on a bad job file.
    `usage`: the cluster's usage now (`fit --usage`); None for an empty cluster."""
    display = _display(path)
    loaded = load_stream(path, display)
    if loaded.diagnostics:
        return FileFit(display, (), (), _load_error(display, loaded.diagnostics))
    return FileChecker(platform, display, namespace, cluster, usage).check(loaded.documents)


def check_fit(
    platform: Platform,
    path: Path,
    *,
    namespace: str | None = None,
    cluster: str | None = None,
    usage: Snapshot | None = None,
) -> FitResult:
    """The file's answer in one FitResult: its workload's, or the worst of its workloads'
    (`FileFit.worst`). For a file of one workload; `check_file` answers for every one."""
    return check_file(platform, path, namespace=namespace, cluster=cluster, usage=usage).worst


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def _load_error(display: str, diagnostics: Sequence[Diagnostic]) -> FitResult:
    return FitResult(
        display,
        ERROR,
        "cannot read the job file",
        reasons=tuple(f"{d.at}: {d.message}" for d in diagnostics),
        notes=tuple(f"hint: {d.hint}" for d in diagnostics if d.hint),
    )


__all__ = ["check_file", "check_fit"]
