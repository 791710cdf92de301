"""The cost chart: one stacked horizontal bar per team of what it spent in the window, split
into the guide's seven terms, biggest spender first, its total at the end of its bar and its
cost per accepted unit under its name, with a legend and an axis in the currency.

All bars share one axis only because they share one unit (money spent): the costs per unit are
in different units (USD per training run, USD per 1,000 requests), so they are written beside
each team as figures with their units, never drawn as lengths against one another.

The chart is laid out once as rectangles and texts (`layout`), then written by hand as SVG
(`svg`: deterministic bytes, every text escaped, fonts `DejaVu Sans, sans-serif`) or drawn
with Pillow as PNG (`png`), so both forms show the same picture.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Final

from renderer.commands.cost.forms import money
from renderer.commands.cost.model import TERM_WORDS, TERMS, CostReport
from renderer.output.svg_chart import (
    INK,
    Text,
    clean,
    document,
    head,
    num,
    text_element,
    tick_step,
)

WIDTH: Final = 1100
COLOURS: Final = {
    "compute": "#4e79a7",
    "network": "#59a14f",
    "storage": "#9c755f",
    "support": "#b07aa1",
    "idle": "#f28e2b",
    "failed_runs": "#e15759",
    "operations": "#76b7b2",
}
GRID: Final = "#cccccc"
PLOT_LEFT: Final = 300
PLOT_RIGHT: Final = WIDTH - 170  # room for the total at the end of the longest bar
TOP: Final = 100
ROW: Final = 60
BAR: Final = 30


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    rects: tuple[Rect, ...]
    texts: tuple[Text, ...]


def bars(report: CostReport) -> list[tuple[str, str, dict[str, float]]]:
    """Per team, biggest total first (by name on a tie): its name, its cost per accepted unit
    in words with its unit, and each term's spend in the currency."""
    found = []
    c = report.currency
    for team in sorted(report.teams, key=lambda t: (-t.total, t.team)):
        if team.per_unit is None:
            what = "no accepted units"
        else:
            what = f"{c} {money(team.per_unit)} {team.unit_words()}"
        found.append((team.team, what, {t: team.terms[t] for t in TERMS}))
    return found


def layout(report: CostReport) -> Chart:
    rows = bars(report)
    c = report.currency
    window = f"window {report.window}" if report.window else "window not stated"
    texts = [
        Text(40, 42, clean(f"Spend per team, {window}"), 24, bold=True),
        Text(
            40,
            72,
            clean(
                f"{c} spent, split into the guide's seven terms; under each team, its cost "
                "per accepted unit"
            ),
            16,
        ),
    ]
    rects: list[Rect] = []
    top = max((sum(v.values()) for _, _, v in rows), default=0.0)
    step = tick_step(top) if top > 0 else 1.0
    axis_max = max(step * math.ceil(top / step - 1e-9), step)
    span = PLOT_RIGHT - PLOT_LEFT
    bottom = TOP + ROW * len(rows)
    ticks = round(axis_max / step)
    for i in range(ticks + 1):
        x = PLOT_LEFT + span * i / ticks
        rects.append(Rect(x, TOP - 8, 1, bottom - TOP + 8, GRID))
        texts.append(Text(x, bottom + 24, clean(f"{c} {money(step * i)}"), 13, "middle"))
    axis = f"{c} spent in the window, per team"
    texts.append(Text((PLOT_LEFT + PLOT_RIGHT) / 2, bottom + 50, clean(axis), 14, "middle"))
    for n, (team, what, values) in enumerate(rows):
        y = TOP + ROW * n + (ROW - BAR) / 2
        texts.append(Text(PLOT_LEFT - 14, y + 14, clean(team), 18, "end", bold=True))
        texts.append(Text(PLOT_LEFT - 14, y + 32, clean(what), 12, "end"))
        x = float(PLOT_LEFT)
        for term in TERMS:
            width = span * values[term] / axis_max
            if width > 0:
                rects.append(Rect(x, y, width, BAR, COLOURS[term]))
                x += width
        total = f"{c} {money(sum(values.values()))} total"
        texts.append(Text(x + 8, y + 21, clean(total), 14))
    legend_y = bottom + 84
    for i, term in enumerate(TERMS):
        lx = 40 + 148 * i
        rects.append(Rect(lx, legend_y - 13, 16, 16, COLOURS[term]))
        texts.append(Text(lx + 22, legend_y, TERM_WORDS[term], 14))
    return Chart(WIDTH, int(legend_y + 30), tuple(rects), tuple(texts))


def svg(report: CostReport) -> bytes:
    chart = layout(report)
    out = head(chart.width, chart.height, chart.texts[0].text)
    out.extend(
        f'<rect x="{num(r.x)}" y="{num(r.y)}" width="{num(r.w)}" height="{num(r.h)}" fill="{r.fill}"/>'
        for r in chart.rects
    )
    out.extend(text_element(t) for t in chart.texts)
    return document(out)


_PIL_ANCHOR: Final = {"start": "ls", "middle": "ms", "end": "rs"}


def png(report: CostReport) -> bytes:
    """The same chart drawn with Pillow (DejaVu Sans where installed, Pillow's own font else)."""
    from PIL import Image, ImageDraw, ImageFont

    chart = layout(report)
    image = Image.new("RGB", (chart.width, chart.height), "#ffffff")
    draw = ImageDraw.Draw(image)
    fonts: dict[tuple[int, bool], ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}

    def font(size: int, *, bold: bool) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
        if (size, bold) not in fonts:
            name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
            try:
                fonts[size, bold] = ImageFont.truetype(name, size)
            except OSError:
                fonts[size, bold] = ImageFont.load_default(size)
        return fonts[size, bold]

    for r in chart.rects:
        draw.rectangle((r.x, r.y, r.x + max(r.w, 1) - 1, r.y + r.h - 1), fill=r.fill)
    for t in chart.texts:
        draw.text(
            (t.x, t.y),
            t.text,
            fill=INK,
            font=font(t.size, bold=t.bold),
            anchor=_PIL_ANCHOR[t.anchor],
        )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()
