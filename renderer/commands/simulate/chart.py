"""The chart of `gpuplane simulate --chart FILE.svg`: how long each team waits, and when.

The simulated time is cut into equal buckets (about 40 of them, of a round length: 1 minute,
5, 10, 15, 30 minutes, 1, 2, 3, 6, 12 hours, days). Each team's series is the p90 (nearest
rank) of the waits that *began* in each bucket (a workload queued when submitted, or again when
evicted), drawn at the bucket's middle: the wait a team's workload queued at that time should
expect. A bucket where none of the team's waits began is a gap in its line. The x axis is the
simulated time in hours, the y axis the wait in seconds, minutes or hours (whichever reads best
for the longest wait drawn); the legend gives each team's p90 and max wait over the whole trace,
its admissions and its workloads never admitted.

At most `MAX_SERIES` lines are drawn: past that, the teams with the highest p90 wait keep their
own line and the rest are pooled into one line "others", which the chart says.

Laid out once (`layout`), written by hand as SVG (`svg`): deterministic bytes, every text from
an input escaped and made inert (`output.svg_chart.clean`), fonts `DejaVu Sans, sans-serif`, 830
pixels wide, the width of GitHub's content column, so nothing is scaled down where it is read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import quote

from renderer.commands.simulate.forms import duration
from renderer.commands.simulate.report import SimReport, TeamReport, waits
from renderer.output.drawing import wrap
from renderer.output.svg_chart import (
    INK,
    Text,
    clean,
    document,
    head,
    num,
    text_element,
    tick_step,
    xml,
)

WIDTH: Final = 830
GRID: Final = "#dddddd"
COLOURS: Final = ("#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#9c755f",
                  "#d37295")  # fmt: skip
"""Tableau's ten, less its two palest (yellow, light grey), for the teams in legend order."""
OTHERS_COLOUR: Final = "#666666"
SHAPES: Final = ("circle", "square", "diamond", "triangle")
"""Each series' marker, in turn, so that two lines do not differ by colour alone."""
MAX_SERIES: Final = 8
MAX_BUCKETS: Final = 40
BUCKETS_S: Final = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
PLOT_LEFT: Final = 70
PLOT_RIGHT: Final = WIDTH - 30
PLOT_TOP: Final = 130
PLOT_BOTTOM: Final = 430
LEGEND_TOP: Final = PLOT_BOTTOM + 78
LEGEND_ROW: Final = 24
NAME_WIDTH: Final = 220
STATS_X: Final = PLOT_LEFT + 36 + NAME_WIDTH + 14

Shape = Literal["circle", "square", "diamond", "triangle"]


@dataclass(frozen=True, slots=True)
class Line:
    """A straight stroke: a grid line, an axis, a legend swatch."""

    x1: float
    y1: float
    x2: float
    y2: float
    stroke: str
    width: float = 1


@dataclass(frozen=True, slots=True)
class Series:
    """One team's line (or the pooled others'): runs of adjacent buckets as (x hours, p90
    seconds), its legend's name and figures."""

    name: str
    stats: str
    colour: str
    shape: Shape
    runs: tuple[tuple[tuple[float, float], ...], ...]
    others: bool = False


@dataclass(frozen=True, slots=True)
class Axis:
    """Ticks from 0 to `top` in steps of `step`, each label the tick's value in `unit`s."""

    top: float
    step: float
    unit: float
    """The axis's data per unit shown (3600 for hours shown of seconds)."""
    words: str

    def ticks(self) -> list[float]:
        return [self.step * i for i in range(round(self.top / self.step) + 1)]


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    lines: tuple[Line, ...]
    texts: tuple[Text, ...]
    series: tuple[Series, ...]
    x: Axis
    y: Axis


def bucket_seconds(span_s: float) -> int:
    """The shortest round bucket that cuts `span_s` into at most `MAX_BUCKETS`."""
    for size in BUCKETS_S:
        if span_s <= size * MAX_BUCKETS:
            return size
    return 86400 * math.ceil(span_s / 86400 / MAX_BUCKETS)


def bucket_words(seconds: int) -> str:
    """`15-minute`, `1-hour`, `2-day`."""
    for unit, word in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds % unit == 0:
            return f"{seconds // unit}-{word}"
    return f"{seconds}-second"


def _runs(samples: Sequence[tuple[int, int]], bucket_s: int) -> list[list[tuple[float, float]]]:
    """Per run of adjacent buckets with a wait that began in them: (the bucket's middle in
    hours, the p90 of those waits in seconds)."""
    by_bucket: dict[int, list[int]] = {}
    for admitted, wait in samples:
        by_bucket.setdefault((admitted - wait) // (bucket_s * 1000), []).append(wait)
    runs: list[list[tuple[float, float]]] = []
    last = None
    for index in sorted(by_bucket):
        point = ((index + 0.5) * bucket_s / 3600, waits(by_bucket[index]).p90)
        if last is not None and index == last + 1:
            runs[-1].append(point)
        else:
            runs.append([point])
        last = index
    return runs


def _stats(p90: float, most: float, admissions: int, never: int) -> str:
    if not admissions:
        return f"no admission · {never} never admitted"
    text = f"p90 {duration(p90)} · max {duration(most)} · {admissions} admitted"
    return text + (f" · {never} never admitted" if never else "")


def ranked(teams: Sequence[TeamReport]) -> tuple[list[TeamReport], list[TeamReport]]:
    """The teams drawn on their own line, highest p90 wait first (then most never admitted,
    then by name), and those pooled as "others" once there are more than `MAX_SERIES`."""
    order = sorted(teams, key=lambda t: (-t.wait.p90, -t.never, t.name))
    if len(order) <= MAX_SERIES:
        return order, []
    return order[: MAX_SERIES - 1], order[MAX_SERIES - 1 :]


def series(report: SimReport, bucket_s: int) -> list[Series]:
    own, pooled = ranked(report.teams)
    out = []
    for i, team in enumerate(own):
        w = team.wait
        out.append(
            Series(
                team.name,
                _stats(w.p90, w.max, w.admissions, team.never),
                COLOURS[i % len(COLOURS)],
                SHAPES[i % len(SHAPES)],
                tuple(tuple(run) for run in _runs(team.samples, bucket_s)),
            )
        )
    if pooled:
        samples = sorted(s for t in pooled for s in t.samples)
        w = waits([wait for _, wait in samples])
        out.append(
            Series(
                f"others ({len(pooled)} teams)",
                _stats(w.p90, w.max, w.admissions, sum(t.never for t in pooled)),
                OTHERS_COLOUR,
                SHAPES[len(own) % len(SHAPES)],
                tuple(tuple(run) for run in _runs(samples, bucket_s)),
                others=True,
            )
        )
    return out


def _axis(top: float, unit: float, words: str) -> Axis:
    """An axis from 0 past `top` (data units), its ticks round in `unit`s."""
    shown = top / unit if top > 0 else 1.0
    step = tick_step(shown)
    return Axis(step * math.ceil(shown / step - 1e-9) * unit, step * unit, unit, words)


def wait_axis(longest_s: float) -> Axis:
    """Seconds up to two minutes, minutes up to two hours, hours past that."""
    if longest_s < 120:
        return _axis(longest_s, 1, "seconds")
    if longest_s < 7200:
        return _axis(longest_s, 60, "minutes")
    return _axis(longest_s, 3600, "hours")


def _label(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


def _frame(x: Axis, y: Axis) -> tuple[list[Line], list[Text]]:
    """Grid, axes, tick labels and the two axis titles."""
    lines, texts = [], []
    for tick in y.ticks():
        at = PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * tick / y.top
        lines.append(Line(PLOT_LEFT, at, PLOT_RIGHT, at, GRID))
        texts.append(Text(PLOT_LEFT - 8, at + 4, _label(tick / y.unit), 12, "end"))
    for tick in x.ticks():
        at = PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * tick / x.top
        lines.append(Line(at, PLOT_BOTTOM, at, PLOT_BOTTOM + 5, INK))
        texts.append(Text(at, PLOT_BOTTOM + 20, _label(tick / x.unit), 12, "middle"))
    lines.append(Line(PLOT_LEFT, PLOT_TOP, PLOT_LEFT, PLOT_BOTTOM, INK))
    lines.append(Line(PLOT_LEFT, PLOT_BOTTOM, PLOT_RIGHT, PLOT_BOTTOM, INK))
    texts.append(Text(PLOT_LEFT - 8, PLOT_TOP - 14, f"p90 wait ({y.words})", 13, bold=True))
    title = "simulated time since the trace's start (hours), when each wait began"
    texts.append(Text((PLOT_LEFT + PLOT_RIGHT) / 2, PLOT_BOTTOM + 44, title, 13, "middle"))
    return lines, texts


def _legend(drawn: Sequence[Series], top: float) -> tuple[list[Line], list[Text]]:
    lines, texts = [], []
    for i, s in enumerate(drawn):
        y = top + LEGEND_ROW * i
        lines.append(Line(PLOT_LEFT, y - 5, PLOT_LEFT + 26, y - 5, s.colour, 2.5))
        texts.append(Text(PLOT_LEFT + 36, y, wrap(clean(s.name), NAME_WIDTH, 13, bold=True, limit=1)[0],
                          13, bold=True))  # fmt: skip
        texts.append(Text(STATS_X, y, s.stats, 13))
    return lines, texts


def layout(report: SimReport) -> Chart:
    bucket_s = bucket_seconds(report.span_s)
    drawn = series(report, bucket_s)
    longest = max((p[1] for s in drawn for run in s.runs for p in run), default=0.0)
    end = max(
        report.span_s, max((p[0] for s in drawn for r in s.runs for p in r), default=0) * 3600
    )
    x = _axis(end, 3600, "hours")
    y = wait_axis(longest)
    heading = (
        f"simulate {report.trace}: {report.workloads} workloads over {duration(report.span_s)}"
    )
    texts = [
        Text(24, 32, "Waits per team over simulated time", 20, bold=True),
        Text(24, 56, wrap(clean(heading), WIDTH - 48, 13, limit=1)[0], 13),
        Text(24, 76, f"Each point: the p90 wait (nearest rank) of a team's waits that began in "
             f"that {bucket_words(bucket_s)} bucket;", 13),
        Text(24, 94, "a gap: no wait began then. Legend: over the whole trace.", 13),
    ]  # fmt: skip
    lines, frame = _frame(x, y)
    texts.extend(frame)
    more, legend = _legend(drawn, LEGEND_TOP)
    lines.extend(more)
    texts.extend(legend)
    bottom = LEGEND_TOP + LEGEND_ROW * max(len(drawn), 1)
    own, pooled = ranked(report.teams)
    if pooled:
        note = (f"{len(report.teams)} teams: the {len(own)} with the highest p90 wait have "
                f"their own line; the other {len(pooled)} are pooled as \"others\".")  # fmt: skip
        texts.append(Text(PLOT_LEFT, bottom + 4, note, 13))
        bottom += LEGEND_ROW
    if not drawn:
        texts.append(Text(PLOT_LEFT, LEGEND_TOP, "No workloads in the trace.", 13))
    return Chart(WIDTH, int(bottom + 8), tuple(lines), tuple(texts), tuple(drawn), x, y)


def place(chart: Chart, hours: float, seconds: float) -> tuple[float, float]:
    """Where (`hours`, `seconds`) is drawn: the pixel of a series' point."""
    x = PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * hours * 3600 / chart.x.top
    y = PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * seconds / chart.y.top
    return x, y


def _marker(shape: Shape, x: float, y: float, colour: str, cls: str) -> str:
    """A marker centred on (x, y): the middle of its bounding box."""
    if shape == "circle":
        return f'<circle class="{cls}" cx="{num(x)}" cy="{num(y)}" r="4" fill="{colour}"/>'
    corners = {
        "square": ((-3.5, -3.5), (3.5, -3.5), (3.5, 3.5), (-3.5, 3.5)),
        "diamond": ((0, -5), (5, 0), (0, 5), (-5, 0)),
        "triangle": ((0, -4.5), (4.5, 4.5), (-4.5, 4.5)),
    }[shape]
    points = " ".join(f"{num(x + dx)},{num(y + dy)}" for dx, dy in corners)
    return f'<polygon class="{cls}" points="{points}" fill="{colour}"/>'


def _series_svg(chart: Chart, s: Series, legend_y: float) -> list[str]:
    dash = ' stroke-dasharray="6 3"' if s.others else ""
    out = ['<g class="series" fill="none">', f"<title>{xml(clean(s.name))}</title>"]
    for run in s.runs:
        at = [place(chart, h, w) for h, w in run]
        if len(at) > 1:
            points = " ".join(f"{num(x)},{num(y)}" for x, y in at)
            out.append(
                f'<polyline points="{points}" stroke="{s.colour}" stroke-width="2"'
                f' stroke-linejoin="round"{dash}/>'
            )
        out.extend(_marker(s.shape, x, y, s.colour, "point") for x, y in at)
    out.append(_marker(s.shape, PLOT_LEFT + 13, legend_y - 5, s.colour, "key"))
    out.append("</g>")
    return out


def svg(report: SimReport) -> bytes:
    chart = layout(report)
    out = head(chart.width, chart.height, chart.texts[0].text)
    out.extend(
        f'<line x1="{num(ln.x1)}" y1="{num(ln.y1)}" x2="{num(ln.x2)}" y2="{num(ln.y2)}" '
        f'stroke="{ln.stroke}" stroke-width="{num(ln.width)}"/>'
        for ln in chart.lines
    )
    for i, s in enumerate(chart.series):
        out.extend(_series_svg(chart, s, LEGEND_TOP + LEGEND_ROW * i))
    out.extend(text_element(t) for t in chart.texts)
    return document(out)


def with_chart(markdown: str, path: str) -> str:
    """The Markdown report with the chart's image under its title: `path` as given on the
    command line, so a relative one resolves where the Markdown is saved beside the SVG."""
    image = f"![Waits per team over simulated time]({quote(path, safe='/', errors='replace')})"
    title, _, rest = markdown.partition("\n\n")
    return f"{title}\n\n{image}\n\n{rest}"
