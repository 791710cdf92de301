"""The one Jinja2 environment for human-facing text (generated READMEs, scaffolds).

Kubernetes objects are built as data (docs/objects-as-data.md); templates are for text people
read. StrictUndefined, so a missing value is an error and never an empty string.
"""

from __future__ import annotations

from functools import cache

import jinja2


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("renderer.output", "jinja"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown and YAML, not HTML: callers escape what they insert
    )
