"""Values from result files as people read them: their strings made safe for one line, their
numbers with thousands separated. Loading, judging and every form show them, so this sits
below all three.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_INVISIBLE = re.compile(r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
"""Zero-width and bidirectional formatting characters (ZWSP, ZWJ, LRM/RLM, the embeddings,
overrides and isolates, the word joiner, BOM): they show nothing, yet can hide or reorder what a
reader sees, or split a word a check looks for."""


def oneline(value: str, limit: int = 200) -> str:
    """Text from a result file made safe for one line of a terminal: no control characters,
    zero-width or bidirectional formatting characters, whitespace collapsed, cut at `limit`
    characters."""
    text = " ".join(_CONTROL.sub(" ", _INVISIBLE.sub("", value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(value: str) -> str:
    return "'" + oneline(value, 80) + "'"


def num(value: float) -> str:
    """A figure as people read it: thousands separated, at most three decimals, no trailing 0."""
    if value == 0:
        return "0"
    size = abs(value)
    if size >= 1000:
        text = f"{value:,.1f}"
    elif size >= 0.01:
        text = f"{value:.3f}"
    else:
        return f"{value:.3g}"
    return text.rstrip("0").rstrip(".") if "." in text else text
