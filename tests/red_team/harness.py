"""The red team's bench: a hostile team lead's edit to a copy of the example platform, and what
gpuplane makes of it.

A team lead may edit `teams/<own-team>.yaml` or add a new team file, nothing else. Each attack
either ends in an error located on the file the attacker touched, or renders nothing that widens
a team's reach (the attack's own test says which it asserts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.pipeline import Rendered, load_platform, render_platform
from tests.conftest import REPO, SHARED_CRDS, copy_inputs


def _yaml() -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


@dataclass
class Attempt:
    """One attack on a fresh copy of the example platform's inputs."""

    root: Path

    @classmethod
    def on_example(cls, folder: Path) -> Attempt:
        return cls(copy_inputs(REPO, folder))

    def path(self, relative: str) -> Path:
        return self.root / relative

    def edit(self, relative: str, old: str, new: str) -> None:
        """Replace one exact piece of text in a file (it must be there once)."""
        target = self.path(relative)
        text = target.read_text()
        assert text.count(old) == 1, f"{old!r} is in {relative} {text.count(old)} times"
        target.write_text(text.replace(old, new))

    def team(self, name: str) -> dict[str, Any]:
        """A team file as data, to change with `save_team`."""
        loaded: dict[str, Any] = _yaml().load(self.path(f"teams/{name}.yaml"))
        return loaded

    def save_team(self, name: str, data: dict[str, Any]) -> None:
        with self.path(f"teams/{name}.yaml").open("w") as handle:
            _yaml().dump(data, handle)

    def write(self, relative: str, text: str) -> None:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def findings(self) -> list[Diagnostic]:
        """What `gpuplane validate` finds: schema, model and policy."""
        return load_platform(self.root).diagnostics

    def render(self) -> Rendered:
        """What `gpuplane render` makes of it, checked against the upstream CRDs where they are
        beside the checkout (without them, custom kinds are only warned about: the attacks
        read the rendered objects, not their schema checks)."""
        from renderer.output.validation import OutputValidator

        sources = [SHARED_CRDS] if SHARED_CRDS.is_dir() else []
        return render_platform(self.root, OutputValidator(sources))


def errors(diagnostics: list[Diagnostic], rule: str | None = None) -> list[Diagnostic]:
    return [
        d for d in diagnostics if d.severity is Severity.ERROR and (rule is None or d.rule == rule)
    ]


def refused_on(diagnostics: list[Diagnostic], file: str, rule: str) -> Diagnostic:
    """The error `rule` raised on `file` (the attacker's); fails the test when there is none, or
    when the rule fired only on other files (a finding must land where the change was made)."""
    found = errors(diagnostics, rule)
    assert found, f"no {rule} error; found: " + "; ".join(str(d) for d in diagnostics)
    on_file = [d for d in found if d.at.file == file]
    assert on_file, f"{rule} was reported on {[d.at.file for d in found]}, not on {file}"
    return on_file[0]


def without_serving(team_file: str) -> str:
    """A team file's text without its endpoints and domains: what a copy of another team's file
    must leave behind, since hosts and domains belong to one team (rules endpoint-host-*,
    team-domain-overlap) and an endpoint needs the quota a copy usually drops."""
    kept: list[str] = []
    inside = False
    for line in team_file.splitlines(keepends=True):
        if line.startswith("      endpoints:"):
            inside = True
            continue
        if inside and line.startswith("        "):
            continue
        inside = False
        if not line.startswith("  domains:"):
            kept.append(line)
    return "".join(kept)
