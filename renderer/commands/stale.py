"""Stale output: a generated file that is not what the inputs render, as `render --check` finds
it. Each stale file is a `stale-output` finding; JSON lists them by file and state instead.

Light on purpose: the face imports it at start-up (`renderer.cli.reporters`), so that `explain`
and every report know the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from renderer.findings.diagnostics import Diagnostic, Location
from renderer.findings.rules import document_rule

if TYPE_CHECKING:
    from renderer.output.writer import Staleness

StaleState = Literal["missing", "extra", "changed"]


@dataclass(frozen=True)
class StaleFile:
    """A generated file (its path from the repository's root) and how it is stale."""

    file: str
    state: StaleState

    def finding(self) -> Diagnostic:
        return Diagnostic(
            "stale-output",
            f"{self.file} is {self.state}; run `gpuplane render` and commit the result",
            Location(self.file),
        )


def stale_files(
    output_dir: str, staleness: Staleness, codeowners: list[StaleFile]
) -> list[StaleFile]:
    """Every stale file of rendered/ (under `output_dir`): missing, extra, then changed ones,
    then `.github/CODEOWNERS` (`stale_codeowners`)."""
    return (
        [StaleFile(f"{output_dir}/{path}", "missing") for path in staleness.missing]
        + [StaleFile(f"{output_dir}/{path}", "extra") for path in staleness.extra]
        + [StaleFile(f"{output_dir}/{path}", "changed") for path in staleness.changed]
        + codeowners
    )


def stale_codeowners(root: Path, owners: str | None) -> list[StaleFile]:
    """`.github/CODEOWNERS` as `render --check` lists it: missing or changed, like a rendered
    file. Without repository settings gpuplane generates none and leaves any there alone."""
    from renderer.layers.gitops.codeowners import CODEOWNERS_PATH

    if owners is None:
        return []
    path = root / CODEOWNERS_PATH
    if not path.is_file():
        return [StaleFile(CODEOWNERS_PATH, "missing")]
    if path.read_bytes() != owners.encode("utf-8"):
        return [StaleFile(CODEOWNERS_PATH, "changed")]
    return []


document_rule(
    "stale-output",
    "output",
    """A generated file differs from what the inputs render.

`rendered/` and `.github/CODEOWNERS` are committed output, and `gpuplane render --check` (what CI
runs) renders the inputs again and compares: a file is missing, extra or changed when an input
was edited without rendering, the output was edited by hand, or another gpuplane version rendered
it.

To satisfy it: run `gpuplane render` (or `make render`) with the gpuplane version CI uses, and
commit `rendered/` and `.github/CODEOWNERS` together with the input change. Change the inputs,
never the rendered files: a hand edit is undone by the next render.""",
)
