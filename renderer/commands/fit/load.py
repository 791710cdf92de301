"""`gpuplane fit`'s way in: read one job file and hand its Workload to the checker.

A file fit cannot read gets an answer too, never a traceback: what is wrong with it, and where."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, ScalarNode

from renderer.commands.fit import readers
from renderer.commands.fit.checker import Checker
from renderer.commands.fit.podsets import Unreadable
from renderer.commands.fit.result import ERROR, FitResult
from renderer.inputs.source import MAX_FILE_BYTES, load_file
from renderer.model.platform import Platform


def check_fit(
    platform: Platform,
    path: Path,
    *,
    namespace: str | None = None,
    cluster: str | None = None,
) -> FitResult:
    """Would Kueue admit the job in `path`, and where; never raises on a bad job file."""
    display = _display(path)
    loaded = load_file(path, display)
    if loaded.document is None:
        return _load_error(display, path, loaded.diagnostics)
    parsed = readers.workload_from(loaded.document.data)
    if isinstance(parsed, Unreadable):
        where = loaded.document.locate(parsed.path) if parsed.path else None
        prefix = f"{where}: " if where is not None and where.line > 0 else ""
        summary = (
            f"{parsed.kind} is not a workload fit can check"
            if not parsed.workload
            else f"cannot read the {parsed.kind.split(' ')[-1] or 'job'}"
        )
        return FitResult(display, ERROR, summary, reasons=(f"{prefix}{parsed.reason}",))
    return Checker(platform, display, parsed).run(namespace, cluster)


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def _load_error(display: str, path: Path, diagnostics: Sequence[Any]) -> FitResult:
    reasons = []
    for d in diagnostics:
        text = f"{d.at}: {d.message}"
        if d.rule == "yaml-multiple-documents":
            kinds = _document_kinds(path)
            if kinds:
                listed = ", ".join(k or "?" for k in kinds)
                text = (
                    f"{d.at}: the file holds {len(kinds)} YAML documents ({listed}); fit checks "
                    "one workload per file"
                )
        reasons.append(text)
    hints = [d.hint for d in diagnostics if d.hint]
    if any(d.rule == "yaml-multiple-documents" for d in diagnostics):
        hints = [
            "put the job in a file of its own (the queues already exist: gpuplane renders them)"
        ]
    return FitResult(
        display,
        ERROR,
        "cannot read the job file",
        reasons=tuple(reasons),
        notes=tuple(f"hint: {h}" for h in hints),
    )


def _document_kinds(path: Path) -> list[str]:
    """The `kind` of each document of a multi-document file, without building any object."""
    try:
        text = path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8")
        kinds = []
        for node in YAML(typ="safe").compose_all(text):
            if node is None or (isinstance(node, ScalarNode) and node.value in ("", "~", "null")):
                continue
            kind = ""
            if isinstance(node, MappingNode):
                for key, value in node.value:
                    if isinstance(key, ScalarNode) and key.value == "kind":
                        kind = str(value.value) if isinstance(value, ScalarNode) else ""
            kinds.append(kind)
        return kinds
    except Exception:  # the loader already said what is wrong; this only adds detail
        return []


__all__ = ["check_fit"]
