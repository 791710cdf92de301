"""What `render` and `diff` render with besides the folders: one object for the output validator
and the caches and options the commands thread through their steps.

It lives here, not in `pipeline.py`, because it carries the render index, a command's cache
(`render_index`) that the pipeline may not import; the pipeline's `render_platform` takes the
few of these it reads as its own arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass

from renderer.commands.render_index import RenderIndex
from renderer.model.platform import Changes
from renderer.output.transitions import CommittedTree
from renderer.output.validation import OutputValidator
from renderer.output.writer import TreeListing

__all__ = ["RenderContext"]


@dataclass(frozen=True, slots=True)
class RenderContext:
    """The output validator, and the caches and options of one `render` or `diff` run (each
    option by keyword)."""

    validator: OutputValidator
    _: KW_ONLY
    index: RenderIndex | None = None
    """What each cluster rendered last time (`render_index`); None renders everything. `render`
    brings it up to date (its caller saves it); `diff` only reads it."""
    changed: Changes | None = None
    """The input files the change adds or edits, with their changed lines (None when unknown),
    so that findings several files share land on the entry the change touched (`diff`: the
    head's)."""
    previous: CommittedTree | None = None
    """The objects committed in `rendered/` that these would replace, for the CRDs' transition
    rules; None checks no transition (`render`; `diff` reads the base commit's)."""
    listing: TreeListing | None = None
    """`rendered/` listed with its stats, started before anything was loaded (else listed when
    needed)."""
    on_cluster: Callable[[str], None] | None = None
    """Told each cluster's name when it is done (the CLI's progress display; `render`). `diff`
    tells its own, with each side's label (`diff_platforms`)."""
    jobs: int = 1
    """Worker processes: 1 renders in this process, one cluster after the other."""
    keep_files: bool = True
    """Bring every rendered file's bytes back, to write them (`render`)."""
