"""Reporters: findings as text for people, JSON for tools, annotations for GitHub Actions,
SARIF for code scanning and JUnit XML for CI systems that show test reports.

A command that checks hands its `Findings` to `emit`, which takes the reporter `--format` names
from the registry (`REPORTERS`) and prints what it returns. Only the text reporter colours, and
only when the CLI asks it to (`wants_color`): the formats for tools never carry escape codes.
`progress` writes too: a spinner on a terminal.
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Protocol, TextIO, TypeVar
from urllib.parse import quote
from xml.etree import ElementTree

import click

from renderer.cli.loading import load_every_rule
from renderer.commands.stale import StaleFile
from renderer.findings.diagnostics import (
    Diagnostic,
    Location,
    Severity,
    finding_lines,
    inert,
)
from renderer.findings.envelope import envelope
from renderer.findings.rules import all_rules

A = TypeVar("A")
"""A command's answer, as its forms take it."""


def summary(diagnostics: Sequence[Diagnostic], files: int) -> str:
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    warnings = len(diagnostics) - errors

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return (
        f"{plural(errors, 'error')}, {plural(warnings, 'warning')} in {plural(files, 'input file')}"
    )


def wants_color(environ: Mapping[str, str], *, flag: bool | None, is_terminal: bool) -> bool:
    """Whether text findings are coloured: `--color`/`--no-color` first, then `NO_COLOR` (any
    non-empty value turns colour off, as no-color.org asks), then whether stdout is a terminal,
    so a pipe, a file or a CI log never gets escape codes unless `--color` asks for them."""
    if flag is not None:
        return flag
    if environ.get("NO_COLOR"):
        return False
    return is_terminal


@contextmanager
def progress(
    status: str, stream: TextIO | None = None, *, plain: bool = False
) -> Iterator[Callable[[str], None]]:
    """A spinner and one status line on stderr while a step that takes seconds runs; yields the
    function that changes the line. Shown only when stderr is a terminal: in a pipe, a CI log or
    a test nothing is written, and stdout (what tools read) is never touched."""
    stream = stream if stream is not None else sys.stderr
    if not stream.isatty():
        yield lambda _status: None
        return
    from rich.console import Console

    with Console(file=stream, stderr=True, no_color=plain or None).status(status) as shown:
        yield shown.update


SEVERITY_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow"}


def text(diagnostics: Sequence[Diagnostic], files: int, *, color: bool = False) -> str:
    """The findings (`finding_lines`), then a one-line summary; with `color`, the same lines
    styled for a terminal (`coloured_lines`)."""
    lines = coloured_lines(diagnostics) if color else finding_lines(diagnostics)
    if diagnostics:
        line = summary(diagnostics, files)
        if color:
            errors = any(d.severity is Severity.ERROR for d in diagnostics)
            line = click.style(line, fg="red" if errors else "yellow", bold=True)
        lines.append(line)
    return "\n".join(lines)


def coloured_lines(diagnostics: Sequence[Diagnostic]) -> list[str]:
    """`finding_lines` with ANSI styles, so the eye finds each finding in a long list: the place
    bold, `error[rule]` red and `warning[rule]` yellow, notes dim and the hint's label cyan.
    Without its escape codes each line is exactly the plain one (tests/test_cli_face.py)."""
    lines = []
    for d in diagnostics:
        place = click.style(inert(str(d.at)), bold=True)
        kind = click.style(
            f"{d.severity.value}[{d.rule}]", fg=SEVERITY_COLOURS[d.severity], bold=True
        )
        lines.append(f"{place}: {kind} {d.message}")
        lines.extend(
            click.style(f"  note: {inert(str(where))}: {note}", dim=True) for note, where in d.notes
        )
        if d.hint:
            lines.append(f"  {click.style('hint:', fg='cyan')} {d.hint}")
    return lines


_INVISIBLE_JSON = re.compile(
    "[\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]"
)


def json_text(body: object, *, ensure_ascii: bool = True) -> str:
    """JSON for tools, indented, that prints safely: `##[` is written `##\\u005b` and every
    invisible character (bidi, zero-width, C1 controls) as its `\\u` escape, so every JSON
    reader gets the same strings while no line is one a GitHub Actions runner obeys (it reads
    `##[command]` anywhere in a line; no line of indented JSON starts with `::`) and nothing
    reorders what a terminal shows."""
    text = json.dumps(body, indent=2, ensure_ascii=ensure_ascii).replace("##[", "##\\u005b")
    return _INVISIBLE_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def as_json(diagnostics: Sequence[Diagnostic], files: int) -> str:
    return json_text(_json_body(diagnostics, files))


def _json_body(diagnostics: Sequence[Diagnostic], files: int) -> dict[str, object]:
    """The envelope (`renderer.findings.envelope`) of the command running now, with its findings
    and their summary."""
    return envelope(
        command_name(),
        {
            "summary": {
                "errors": sum(d.severity is Severity.ERROR for d in diagnostics),
                "warnings": sum(d.severity is Severity.WARNING for d in diagnostics),
                "files": files,
            }
        },
        diagnostics,
    )


def command_name() -> str:
    """The command running now as its JSON's envelope names it: `validate`, `acceptance
    report` (the words after `gpuplane`); `gpuplane` outside a command."""
    ctx = click.get_current_context(silent=True)
    words: list[str] = []
    while ctx is not None and ctx.parent is not None:
        words.insert(0, ctx.command.name or "")
        ctx = ctx.parent
    return " ".join(words) or "gpuplane"


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


SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
INFORMATION_URI = "https://gpuplane.dev/"


def _tool_version() -> str:
    # imported here: importlib.metadata (with the email package it reads metadata with) was
    # 47 ms of every command's start, for the SARIF report alone
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpuplane")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout never installed
        return "0.0.0"


def _sarif_location(at: Location, text: str | None = None, ident: int | None = None) -> Any:
    """A SARIF location: the repository-relative file as a URI under %SRCROOT%, and the line and
    column only where the finding has them (SARIF counts both from 1)."""
    physical: dict[str, Any] = {
        # a file name that is not UTF-8 reaches here with surrogate escapes: quote its bytes
        "artifactLocation": {
            "uri": quote(at.file.encode("utf-8", "surrogateescape"), safe="/"),
            "uriBaseId": "%SRCROOT%",
        }
    }
    if at.line >= 1:
        physical["region"] = {"startLine": at.line}
        if at.col >= 1:
            physical["region"]["startColumn"] = at.col
    location: dict[str, Any] = {"physicalLocation": physical}
    if ident is not None:
        location["id"] = ident
    if text is not None:
        location["message"] = {"text": text}
    return location


def sarif(diagnostics: Sequence[Diagnostic], files: int) -> str:
    """A SARIF 2.1.0 log for GitHub code scanning (`upload-sarif`) and other SARIF viewers.

    One run; the driver lists every rule of the registry with its `explain` text as help, and
    each result points at its rule by id and index. Notes become related locations (and stay in
    the message text, which is what most viewers show); the hint ends the message.
    """
    rules = [
        {
            "id": doc.id,
            "shortDescription": {"text": doc.summary},
            "fullDescription": {"text": doc.text},
            "help": {"text": doc.text},
            "properties": {"tags": ["gpuplane", doc.stage]},
        }
        for doc in all_rules()
    ]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    for d in diagnostics:  # a finding whose rule is not documented still gets a descriptor
        if d.rule not in index:
            index[d.rule] = len(rules)
            rules.append({"id": d.rule, "shortDescription": {"text": d.rule}})
    results = []
    for d in diagnostics:
        text = d.message
        text += "".join(f"\nnote: {where}: {note}" for note, where in d.notes)
        if d.hint:
            text += f"\nhint: {d.hint}"
        result: dict[str, Any] = {
            "ruleId": d.rule,
            "ruleIndex": index[d.rule],
            "level": "error" if d.severity is Severity.ERROR else "warning",
            "message": {"text": text},
            "locations": [_sarif_location(d.at)],
        }
        if d.notes:
            result["relatedLocations"] = [
                _sarif_location(where, note, i) for i, (note, where) in enumerate(d.notes, 1)
            ]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpuplane",
                        "version": _tool_version(),
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
                "properties": {"inputFiles": files},
            }
        ],
    }
    return json_text(log)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(value: str) -> str:
    """Text XML 1.0 can hold: characters it forbids (YAML lets a value carry some) become U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)


def junit(diagnostics: Sequence[Diagnostic], files: int) -> str:
    """JUnit XML, for CI systems that show test reports (GitLab, Jenkins, Azure Pipelines).

    One test case per finding, named by rule and place: errors are failures, warnings pass with
    their text as output. A clean run is one passing case, so the report is never empty.
    """
    errors = sum(d.severity is Severity.ERROR for d in diagnostics)
    suite = ElementTree.Element(
        "testsuite",
        name="gpuplane",
        tests=str(max(len(diagnostics), 1)),
        failures=str(errors),
        errors="0",
        skipped="0",
    )
    for d in diagnostics:
        case = ElementTree.SubElement(
            suite, "testcase", classname=_xml(d.at.file), name=_xml(f"{d.rule} at {d.at}")
        )
        body = _xml(text([d], files).rsplit("\n", 1)[0])  # the finding, without the summary
        if d.severity is Severity.ERROR:
            failure = ElementTree.SubElement(case, "failure", type=d.rule, message=_xml(d.message))
            failure.text = body
        else:
            ElementTree.SubElement(case, "system-out").text = body
    if not diagnostics:
        ElementTree.SubElement(
            suite, "testcase", classname="gpuplane", name=f"{files} input files, no findings"
        )
    root = ElementTree.Element("testsuites", name="gpuplane")
    root.append(suite)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, "unicode")


@dataclass(frozen=True)
class Findings:
    """What a command that checks hands its reporter: the findings and the number of input files
    they were found in, and what some commands add to them."""

    diagnostics: Sequence[Diagnostic]
    files: int
    stale: Sequence[StaleFile] | None = None
    """`render --check`: the generated files that are not what the inputs render (each one a
    `stale-output` finding; JSON lists them under `stale` instead)."""
    written: int | None = None
    """`render`: how many files rendered/ holds (JSON's `written`)."""
    said: str | None = None
    """A closing line for people (what `render` did): text and GitHub print it after the
    findings."""
    all_clear: str | None = None
    """What text prints when there is no finding at all (`validate`)."""

    def every_finding(self) -> list[Diagnostic]:
        """The findings, then a `stale-output` finding per stale file."""
        return [*self.diagnostics, *(stale.finding() for stale in self.stale or ())]


class Reporter(Protocol):
    def __call__(self, findings: Findings, *, color: bool) -> str: ...


def _lines(*parts: str | None) -> str:
    return "\n".join(part for part in parts if part)


def seen_from(diagnostics: Sequence[Diagnostic], prefix: str) -> list[Diagnostic]:
    """The findings with each file named from where the user stands: `prefix` is the
    repository's root from there (`..` in teams/), so `file:line:col` opens from the terminal.
    Only text does this: JSON, SARIF, JUnit and GitHub annotations keep repository-relative
    paths, which is what code scanning and the Actions runner resolve (docs/output.md)."""
    if prefix in ("", "."):
        return list(diagnostics)

    def moved(at: Location) -> Location:
        return replace(at, file=posixpath.normpath(posixpath.join(prefix, at.file)))

    return [
        replace(d, at=moved(d.at), notes=tuple((n, moved(w)) for n, w in d.notes))
        for d in diagnostics
    ]


def shown_from() -> str:
    """The repository's root as the user reaches it from their folder (`main` decided)."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return str(obj.get("shown_from", ".")) if obj else "."


def _text_report(findings: Findings, *, color: bool) -> str:
    every = seen_from(findings.every_finding(), shown_from())
    clear = None if every else findings.all_clear
    return _lines(text(every, findings.files, color=color), findings.said, clear)


def _json_report(findings: Findings, *, color: bool) -> str:
    body = _json_body(findings.diagnostics, findings.files)
    if findings.stale is not None:
        body["stale"] = [{"file": stale.file, "state": stale.state} for stale in findings.stale]
    if findings.written is not None:
        body["written"] = findings.written
    return json_text(body)


def _github_report(findings: Findings, *, color: bool) -> str:
    return _lines(github(findings.every_finding(), findings.files), findings.said)


def _sarif_report(findings: Findings, *, color: bool) -> str:
    load_every_rule()  # the log's driver lists every rule, not only the imported ones
    return sarif(findings.every_finding(), findings.files)


def _junit_report(findings: Findings, *, color: bool) -> str:
    return junit(findings.every_finding(), findings.files)


REPORTERS: dict[str, Reporter] = {
    "text": _text_report,
    "json": _json_report,
    "github": _github_report,
    "sarif": _sarif_report,
    "junit": _junit_report,
}
"""The reporter of each findings `--format`."""


def emit(findings: Findings, fmt: str) -> None:
    """Print the findings as `fmt` asks; text is coloured when `main` decided so."""
    colour = fmt == "text" and wants_colour()
    output = REPORTERS[fmt](findings, color=colour)
    if output:
        click.echo(output, color=colour)


def findings_format(fmt: str) -> str:
    """The findings' format for a command's answer format: JSON stays JSON, every other answer
    form (text, Markdown) gets findings as text."""
    return "json" if fmt == "json" else "text"


def json_form(
    body_of: Callable[[A], Mapping[str, Any]],
    findings: Sequence[Diagnostic] | Callable[[A], Sequence[Diagnostic]] = (),
    *,
    ensure_ascii: bool = True,
) -> Callable[[A], str]:
    """The JSON form of a command's answer: the one envelope (`renderer.findings.envelope`:
    `schemaVersion`, `command`, `findings`) around the fields `body_of` makes, written as every
    gpuplane JSON is (`json_text`), with the last newline. `findings`: what the command found
    on the way (warnings of the inputs), or how to take them from the answer."""

    def form(answer: A) -> str:
        found = findings(answer) if callable(findings) else findings
        document = envelope(command_name(), body_of(answer), found)
        return json_text(document, ensure_ascii=ensure_ascii) + "\n"

    return form


def show_answer(answer: A, fmt: str, forms: Mapping[str, Callable[[A], str]]) -> None:
    """Print a command's answer in the form `--format` asks, from the command's registry of forms:
    each returns the whole text, its last newline included."""
    click.echo(forms[fmt](answer), nl=False)


def wants_colour() -> bool:
    """What `main` decided about colour (`wants_color`), for the command running now."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return bool(obj and obj.get("color"))
