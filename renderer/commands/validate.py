"""`validate --base`: besides the input checks, refuse a change the API server would refuse as
an update of what is committed in rendered/ at the base revision (docs/cel.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from renderer.findings.diagnostics import has_errors, sort_diagnostics

if TYPE_CHECKING:
    from renderer.output.validation import OutputValidator
    from renderer.pipeline import Loaded


def with_transitions(
    root: Path,
    loaded: Loaded,
    base: str | None,
    *,
    allow_recreate: bool,
    validator: Callable[[], OutputValidator],
) -> Loaded:
    """`loaded` with the transition findings against rendered/ at `base` added (none without a
    base, with input errors, or with nothing committed there); `allow_recreate` makes an
    immutable-field change a warning. The validator is made only when it is needed. Rendering
    is imported here, not above: `validate` without --base renders nothing."""
    if base is None or has_errors(loaded.diagnostics):
        return loaded
    from renderer.commands.transition_checks import check_transitions, recreate_allowed
    from renderer.output.transitions import committed_tree

    previous = committed_tree(root, base)
    if not previous:
        return loaded
    found = check_transitions(root, loaded.platform, validator(), previous)
    if allow_recreate:
        found = recreate_allowed(found)
    return replace(loaded, diagnostics=sort_diagnostics([*loaded.diagnostics, *found]))
