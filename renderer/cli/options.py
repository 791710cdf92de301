"""The options several `gpuplane` commands share, and the one factory of every `--format`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from renderer.cli.reporters import REPORTERS

F = TypeVar("F", bound=Callable[..., Any])


def format_option(*choices: str, default: str, help: str) -> Callable[[F], F]:
    """`--format`, one of `choices` (listed in `--help` in this order), into the `fmt` parameter.
    Every command that has a `--format` takes it from here."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=default,
        show_default=True,
        help=help,
    )


FINDINGS_FORMAT = format_option(
    *sorted(REPORTERS),
    default="text",
    help="How findings are printed: for people (text), for tools (json), as GitHub annotations, "
    "as SARIF for code scanning, or as a JUnit XML report.",
)
"""The formats of the findings reporters (`renderer.cli.reporters.REPORTERS`)."""

TEXT_OR_JSON = format_option(
    "text", "json", default="text", help="Text for people, or JSON for tools."
)

TABLES_MARKDOWN_OR_JSON = format_option(
    "text",
    "markdown",
    "json",
    default="text",
    help="Tables for people, Markdown for a pull request or job summary, JSON for tools.",
)
"""The formats of a report of tables (`cost`, `simulate`)."""

CRDS = click.option(
    "--crds",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="CRD schemas for custom kinds: a folder, or a file as `kubectl get crd -o yaml` prints "
    "(repeatable; looked up before $GPUPLANE_CRDS, separated by ':', gpuplane.yaml's "
    "`schemas:` and the schema store).",
)

STRICT_SCHEMAS = click.option(
    "--strict-schemas",
    is_flag=True,
    help="Make a custom kind with no schema to check it an error, not a warning (for CI).",
)

UNCHECKED = click.option(
    "--unchecked",
    type=click.Choice(["summary", "list", "hide"]),
    default="summary",
    show_default=True,
    envvar="GPUPLANE_UNCHECKED",
    help="How the text report shows the custom kinds no CRD checked (warnings without "
    "--strict-schemas): one summary line, one finding per kind with its hint, or nothing. "
    "Errors and the tool formats always list every kind.",
)
