"""Counted nouns in text for people: `1 team`, `2 teams`, `1 GPU`, `0 GPUs`.

One helper, so no sentence reads "1 teams"; the generated README's template uses it as the
`plural` filter (`{{ count | plural("team") }}`).
"""

from __future__ import annotations


def plural(count: int, unit: str, units: str | None = None) -> str:
    """`count` and `unit`, the unit made plural (`units`, or `unit` + "s") unless `count` is
    exactly one: `plural(1, "team")` is `1 team`, `plural(3, "replica")` is `3 replicas`."""
    return f"{count} {unit}" if count == 1 else f"{count} {units or unit + 's'}"
