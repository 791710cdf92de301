"""What the hand-written SVG charts share (`gpuplane cost --chart`, `gpuplane simulate --chart`):
a text placed at its baseline, text made safe to draw, a round tick step, and the SVG
document's head, text elements and bytes.

Each chart lays itself out as plain data and writes it by hand, so that the bytes are the same
for the same input: numbers with at most two decimals, fonts `DejaVu Sans, sans-serif`, one
ink for every text, every text XML-escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from renderer.findings.diagnostics import inert

FONT: Final = "DejaVu Sans, sans-serif"
INK: Final = "#222222"

Anchor = Literal["start", "middle", "end"]


@dataclass(frozen=True, slots=True)
class Text:
    x: float
    y: float
    """The baseline."""
    text: str
    size: int
    anchor: Anchor = "start"
    bold: bool = False


_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """Text safe to draw: invisible characters as visible escapes (`inert`), and whatever XML
    1.0 cannot hold (lone surrogates, U+FFFE) as `?`."""
    return _NOT_XML.sub("?", inert(" ".join(text.split())))


def tick_step(top: float) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving at most about six ticks
    from 0 up to `top` (> 0)."""
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw))


def xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def num(value: float) -> str:
    """A coordinate with at most two decimals, no trailing zeros, never `-0`."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def head(width: int, height: int, title: str) -> list[str]:
    """The document's first lines: the `<svg>` element, its title and a white background."""
    return [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        f'font-family="{FONT}">',
        f"<title>{xml(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]


def text_element(t: Text) -> str:
    weight = ' font-weight="bold"' if t.bold else ""
    return (
        f'<text x="{num(t.x)}" y="{num(t.y)}" font-size="{t.size}" text-anchor="{t.anchor}"'
        f'{weight} fill="{INK}">{xml(t.text)}</text>'
    )


def document(lines: Sequence[str]) -> bytes:
    """The elements from `head` on, closed: UTF-8, one element a line, a final newline."""
    return ("\n".join([*lines, "</svg>"]) + "\n").encode("utf-8")
