"""Reporters: findings as text for people, JSON for tools, annotations for GitHub Actions.

Reporters return strings; the CLI prints them. Chosen from a registry by `--format`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from renderer.diagnostics import Diagnostic, Severity


def summary(diagnostics: Sequence[Diagnostic], files: int) -> str:
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    warnings = len(diagnostics) - errors

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return (
        f"{plural(errors, 'error')}, {plural(warnings, 'warning')} in {plural(files, 'input file')}"
    )


def text(diagnostics: Sequence[Diagnostic], files: int) -> str:
    """`file:line:col: error[rule] message`, then notes and a hint, one finding after another."""
    lines = []
    for d in diagnostics:
        lines.append(f"{d.at}: {d.severity.value}[{d.rule}] {d.message}")
        lines.extend(f"  note: {where}: {note}" for note, where in d.notes)
        if d.hint:
            lines.append(f"  hint: {d.hint}")
    if diagnostics:
        lines.append(summary(diagnostics, files))
    return "\n".join(lines)


def as_json(diagnostics: Sequence[Diagnostic], files: int) -> str:
    body = {
        "diagnostics": [
            {
                "rule": d.rule,
                "severity": d.severity.value,
                "message": d.message,
                "file": d.at.file,
                "line": d.at.line,
                "column": d.at.col,
                "notes": [
                    {"message": n, "file": w.file, "line": w.line, "column": w.col}
                    for n, w in d.notes
                ],
                "hint": d.hint,
            }
            for d in diagnostics
        ],
        "summary": {
            "errors": sum(d.severity is Severity.ERROR for d in diagnostics),
            "warnings": sum(d.severity is Severity.WARNING for d in diagnostics),
            "files": files,
        },
    }
    return json.dumps(body, indent=2, sort_keys=False)


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(diagnostics: Sequence[Diagnostic], files: int) -> str:
    """GitHub Actions workflow commands: one annotation on the source line per finding."""
    lines = []
    for d in diagnostics:
        props = [f"file={_escape_property(d.at.file)}"]
        if d.at.line:
            props += [f"line={d.at.line}", f"col={d.at.col}"]
        props.append(f"title={_escape_property(d.rule)}")
        body = d.message
        body += "".join(f"\nnote: {w}: {n}" for n, w in d.notes)
        if d.hint:
            body += f"\nhint: {d.hint}"
        lines.append(f"::{d.severity.value} {','.join(props)}::{_escape_data(body)}")
    if diagnostics:
        lines.append(summary(diagnostics, files))
    return "\n".join(lines)


REPORTERS: dict[str, Callable[[Sequence[Diagnostic], int], str]] = {
    "text": text,
    "json": as_json,
    "github": github,
}
