"""A usage export as one `Usage`: the file given (the Prometheus API's JSON or the CSV, told
apart by their first character) and, with `--terms`, a CSV of team rows beside it."""

from __future__ import annotations

from pathlib import Path

from renderer.commands.cost.prometheus import read_json
from renderer.commands.cost.usage import Usage, finding, read_csv


def looks_like_json(path: Path) -> bool:
    """Whether the file starts (after a BOM and whitespace) as JSON does: a CSV starts with its
    header's `team` or a `#` comment, never with `{` or `[`."""
    try:
        with path.open("rb") as stream:
            head = stream.read(4096)
    except OSError:
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] in (b"{", b"[")


def read_usage(usage: Path, terms: Path | None = None) -> Usage:
    """Everything the files say, with every finding of both."""
    first = read_json(usage) if looks_like_json(usage) else read_csv(usage)
    if terms is None:
        return first
    extra = read_csv(terms)
    stray = tuple(
        finding(
            "cost-csv-row",
            "a --terms file gives team rows only: GPU-hours come from the usage export",
            row.at,
            "leave the pool cell empty, and the GPU-hours to the usage export",
        )
        for row in extra.hours
    )
    return Usage(
        first.hours,
        first.terms + extra.terms,
        first.findings + extra.findings + stray,
        first.ending,
        first.sources + extra.sources,
    )
