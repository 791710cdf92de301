"""A drawing of a platform in the guide's six layers, and its two writers: Mermaid for Markdown
and a hand-laid-out SVG.

A `Drawing` is plain data: layers top to bottom, each a row of boxes (a title and lines of
detail), and edges between boxes. It knows nothing of the model (`renderer.layers.platform_drawing`
builds it); the writers know nothing of Kubernetes. Every text in a drawing may come from an
input file, so both writers treat all of it as hostile:

- Mermaid: node ids are generated (`c0l3b1`), never taken from text; every label is a quoted
  string whose characters outside a small safe set are written as Mermaid entity codes
  (`#quot;`, `#35;`, `#60;` ...), so no quote can end the string, no `]`, `|` or `-->` can
  reshape the chart, no backtick can start a Markdown string and no `%%{init}%%` directive can
  reconfigure the renderer (Mermaid looks for directives anywhere in the text).
- SVG: text is XML-escaped and control characters are made visible (`findings.inert`), so a
  description with `<`, `&`, `"` or `]]>` stays text; lines are wrapped to the box's width with a
  conservative width estimate for DejaVu Sans (its advance widths, plus a margin), and what
  cannot fit ends in an ellipsis.

docs/diagram.md says what each layer shows and where it comes from.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from renderer.findings.diagnostics import inert


@dataclass(frozen=True, slots=True)
class Box:
    """One thing in a layer: a title and lines of detail. `key` names it for edges only; it is
    never written out."""

    title: str
    lines: tuple[str, ...] = ()
    key: str = ""


@dataclass(frozen=True, slots=True)
class Layer:
    """One of the six bands: its title, a caption under it, and its boxes in order."""

    title: str
    caption: str
    boxes: tuple[Box, ...]


@dataclass(frozen=True, slots=True)
class Edge:
    """A line from one box to another (by `Box.key`), e.g. a pool to a team with quota on it."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Drawing:
    """One cluster's picture: a title, a subtitle and its layers, top to bottom."""

    title: str
    subtitle: str
    layers: tuple[Layer, ...]
    edges: tuple[Edge, ...] = ()


def _one_line(text: str) -> str:
    return inert(" ".join(text.split()))


# --- Mermaid ------------------------------------------------------------------------------------

_MERMAID_SAFE: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:/()+-_=@!?'*·→…"
)
"""Characters a quoted Mermaid label may hold as they are; every other one becomes an entity."""

_MERMAID_NAMED: Final = {'"': "#quot;", "&": "#amp;", "<": "#lt;", ">": "#gt;"}


def mermaid_text(text: str) -> str:
    """Text as the inside of a quoted Mermaid label: one line, inert, every character outside
    `_MERMAID_SAFE` written as an entity code (`#quot;`, `#35;`), which Mermaid decodes for
    display only. The result holds no quote, bracket, pipe, backtick, `#` (but its own
    entities'), `%`, `{`, `<` or `>`."""
    out = []
    for char in _one_line(text):
        if char in _MERMAID_SAFE:
            out.append(char)
        else:
            out.append(_MERMAID_NAMED.get(char) or f"#{ord(char)};")
    return "".join(out)


def _mermaid_label(title: str, lines: Sequence[str]) -> str:
    parts = [f"<b>{mermaid_text(title)}</b>", *(mermaid_text(line) for line in lines)]
    return '"' + "<br/>".join(parts) + '"'


def mermaid(*drawings: Drawing) -> str:
    """A Mermaid `flowchart TB` of the drawings: a `subgraph` per layer, stacked by invisible
    links (`~~~`), a node per box, an arrow per edge. Several drawings become one subgraph each,
    their layers nested inside. Ids are generated: `c<drawing>l<layer>b<box>`."""
    out = ["flowchart TB"]
    several = len(drawings) > 1
    for d, drawing in enumerate(drawings):
        indent = "  "
        if several:
            out.append(f'  subgraph c{d}["{mermaid_text(drawing.title)}"]')
            out.append("    direction TB")
            indent = "    "
        ids: dict[str, str] = {}
        for i, layer in enumerate(drawing.layers):
            layer_id = f"c{d}l{i}"
            title = mermaid_text(f"{i + 1} · {layer.title}")
            out.append(f'{indent}subgraph {layer_id}["{title}"]')
            out.append(f"{indent}  direction TB")
            for j, box in enumerate(layer.boxes):
                box_id = f"{layer_id}b{j}"
                if box.key:
                    ids.setdefault(box.key, box_id)
                out.append(f"{indent}  {box_id}[{_mermaid_label(box.title, box.lines)}]")
            if not layer.boxes:
                out.append(f'{indent}  {layer_id}b0["{mermaid_text("nothing declared")}"]')
            out.append(f"{indent}end")
        for i in range(len(drawing.layers) - 1):
            out.append(f"{indent}c{d}l{i} ~~~ c{d}l{i + 1}")
        for edge in drawing.edges:
            if edge.source in ids and edge.target in ids:
                out.append(f"{indent}{ids[edge.source]} --> {ids[edge.target]}")
        if several:
            out.append("  end")
    for d in range(len(drawings) - 1):
        out.append(f"  c{d} ~~~ c{d + 1}")
    return "\n".join(out) + "\n"


def mermaid_columns(drawing: Drawing) -> str:
    """A Mermaid `flowchart LR` of one small drawing, for a README: its layers side by side as
    columns inside one subgraph titled with the drawing's title and subtitle, a node per box,
    an arrow per edge. The columns are Mermaid's own ranks (no subgraph per column: Mermaid
    lays out a subgraph that edges leave on its own, and routes those edges behind the boxes),
    so edges between neighbouring columns run between them and through no box; the picture is
    as wide as its columns, however many boxes each holds. Ids are generated: `l<layer>b<box>`."""
    heading = mermaid_text(" · ".join(p for p in (drawing.title, drawing.subtitle) if p))
    out = ["flowchart LR", f'  subgraph all["{heading}"]', "    direction LR"]
    ids: dict[str, str] = {}
    for i, layer in enumerate(drawing.layers):
        for j, box in enumerate(layer.boxes):
            box_id = f"l{i}b{j}"
            if box.key:
                ids.setdefault(box.key, box_id)
            out.append(f"    {box_id}[{_mermaid_label(box.title, box.lines)}]")
    out.append("  end")
    for edge in drawing.edges:
        if edge.source in ids and edge.target in ids:
            out.append(f"  {ids[edge.source]} --> {ids[edge.target]}")
    return "\n".join(out) + "\n"


# --- text widths (DejaVu Sans) ------------------------------------------------------------------

_ASCII: Final = "".join(chr(c) for c in range(32, 127))

_REGULAR: Final = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698,
    770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732,
    684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635,
    634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
    525, 636, 337, 636, 838,
)  # fmt: skip
_BOLD: Final = (
    348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696,
    696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734,
    830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812,
    774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716,
    712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652,
    582, 712, 365, 712, 838,
)  # fmt: skip
"""Advance widths of DejaVu Sans and DejaVu Sans Bold (fonts-dejavu-core 2.37), in thousandths
of an em, for the printable ASCII characters in order (the fonts' hmtx table, as Pillow's
`ImageFont.getlength` measures it; tests/test_diagram.py checks the estimate against it)."""

_TIMES: Final = "\N{MULTIPLICATION SIGN}"

_WIDTHS: Final = {
    False: dict(zip(_ASCII, _REGULAR, strict=True)) | {_TIMES: 838, "·": 318, "→": 838, "…": 1000},
    True: dict(zip(_ASCII, _BOLD, strict=True)) | {_TIMES: 838, "·": 380, "→": 838, "…": 1000},
}
_UNKNOWN: Final = 1100
"""Any other character (another script, an emoji from a fallback font): wider than an em."""

_MARGIN: Final = 1.06
"""Kerning only narrows DejaVu Sans; the margin covers hinting and a sans-serif fallback."""


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """A conservative width in pixels of `text` set in DejaVu Sans at `size` pixels."""
    widths = _WIDTHS[bold]
    return sum(widths.get(c, _UNKNOWN) for c in text) * size / 1000 * _MARGIN


def _truncate(text: str, width: float, size: float, *, bold: bool) -> str:
    if text_width(text, size, bold=bold) <= width:
        return text
    while text and text_width(text + "…", size, bold=bold) > width:
        text = text[:-1]
    return text.rstrip() + "…"


def _words(text: str, width: float, size: float, *, bold: bool) -> Iterator[str]:
    """The words of `text`, one too wide for a line of `width` cut into pieces that fit."""
    for word in text.split(" "):
        while text_width(word, size, bold=bold) > width and len(word) > 1:
            cut = len(word) - 1
            while cut > 1 and text_width(word[:cut], size, bold=bold) > width:
                cut -= 1
            yield word[:cut]
            word = word[cut:]
        yield word


def wrap(
    text: str,
    width: float,
    size: float,
    *,
    bold: bool = False,
    limit: int = 3,
    hang: float = 0,
) -> list[str]:
    """`text` broken at spaces into lines no wider than `width` (the lines after the first:
    `width - hang`, for a hanging indent), at most `limit` of them; a word too long for a line,
    or what is left over the limit, ends in an ellipsis."""
    lines: list[str] = []
    current = ""
    for word in _words(_one_line(text), width - hang, size, bold=bold):
        room = width if not lines else width - hang
        candidate = f"{current} {word}" if current else word
        if text_width(candidate, size, bold=bold) <= room or not current:
            current = candidate
            continue
        lines.append(current)
        current = word
    lines.append(current)
    if len(lines) > limit:
        lines = [*lines[: limit - 1], " ".join(lines[limit - 1 :])]
    return [
        _truncate(line, width if index == 0 else width - hang, size, bold=bold)
        for index, line in enumerate(lines)
    ]


# --- SVG ----------------------------------------------------------------------------------------

WIDTH: Final = 1280
"""The drawing's width in pixels; its height follows from the content."""

_MARGIN_X: Final = 24
_LABEL_W: Final = 200  # the band's title column
_PAD: Final = 14  # inside a band
_GAP: Final = 14  # between boxes
_BAND_GAP: Final = 34  # between bands: room for the edges
_BOX_PAD: Final = 10
_MIN_BOX_W: Final = 232
_TITLE_SIZE: Final = 14.0
_LINE_SIZE: Final = 12.0
_TITLE_LH: Final = 19
_LINE_LH: Final = 16
_MAX_BOX_LINES: Final = 14
_HANG: Final = 12  # the indent of a wrapped line's continuation

_BAND_COLOURS: Final = (
    ("#eef2ff", "#4f46e5"),  # control plane: indigo
    ("#ecfeff", "#0e7490"),  # queue layer: cyan
    ("#f0fdf4", "#15803d"),  # add-ons: green
    ("#fff7ed", "#c2410c"),  # pools: orange
    ("#fdf2f8", "#be185d"),  # workloads: pink
    ("#f8fafc", "#475569"),  # network and data: slate
)
"""(band fill, accent) per layer, in order; a seventh layer would start over."""


def _xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _num(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True, slots=True)
class _Placed:
    x: float
    y: float
    w: float
    h: float
    title: tuple[str, ...]
    lines: tuple[tuple[str, bool], ...]  # (text, continues the line above)
    row: int
    rows: int


def _box_lines(box: Box, inner: float) -> tuple[tuple[str, ...], tuple[tuple[str, bool], ...]]:
    """The box's title and lines wrapped to `inner` pixels; a line's continuations are set
    with a hanging indent (`_HANG`), so where one line of detail ends stays visible."""
    title = tuple(wrap(box.title, inner, _TITLE_SIZE, bold=True, limit=2))
    lines: list[tuple[str, bool]] = []
    for line in box.lines:
        parts = wrap(line, inner, _LINE_SIZE, limit=3, hang=_HANG)
        lines.extend((part, index > 0) for index, part in enumerate(parts))
    if len(lines) > _MAX_BOX_LINES:
        hidden = len(lines) - _MAX_BOX_LINES + 1
        lines = [*lines[: _MAX_BOX_LINES - 1], (f"… and {hidden} more lines", False)]
    return title, tuple(lines)


def _place_layer(layer: Layer, top: float) -> tuple[list[_Placed], float]:
    """The layer's boxes on a grid of equal columns, rows as tall as their tallest box; returns
    them and the band's height."""
    left = _MARGIN_X + _LABEL_W + _PAD
    avail = WIDTH - _MARGIN_X - _PAD - left
    count = max(len(layer.boxes), 1)
    most = max(1, int((avail + _GAP) // (_MIN_BOX_W + _GAP)))
    rows = math.ceil(count / most)
    cols = math.ceil(count / rows)
    box_w = (avail - _GAP * (cols - 1)) / cols
    inner = box_w - 2 * _BOX_PAD
    laid = [_box_lines(box, inner) for box in layer.boxes]
    placed: list[_Placed] = []
    y = top + _PAD
    for row in range(rows):
        members = laid[row * cols : (row + 1) * cols]
        height = max(
            (2 * _BOX_PAD + len(t) * _TITLE_LH + len(ls) * _LINE_LH + 4 for t, ls in members),
            default=40,
        )
        for col, (title, lines) in enumerate(members):
            x = left + col * (box_w + _GAP)
            placed.append(_Placed(x, y, box_w, height, title, lines, row, rows))
        y += height + _GAP
    label_lines = 2 + len(wrap(layer.caption, _LABEL_W - 28, _LINE_SIZE, limit=4))
    band_h = max(y - _GAP + _PAD - top, 26 + label_lines * _LINE_LH)
    return placed, band_h


def _svg_drawing(drawing: Drawing, top: float) -> tuple[list[str], float]:
    out: list[str] = []
    title = _truncate(_one_line(drawing.title), WIDTH - 2 * _MARGIN_X, 22, bold=True)
    subtitle = wrap(drawing.subtitle, WIDTH - 2 * _MARGIN_X, 13, limit=2)
    out.append(f'<text x="{_MARGIN_X}" y="{_num(top + 26)}" class="h1">{_xml(title)}</text>')
    y = top + 46
    for line in subtitle:
        out.append(f'<text x="{_MARGIN_X}" y="{_num(y)}" class="sub">{_xml(line)}</text>')
        y += 17
    y += 12
    where: dict[str, tuple[int, _Placed]] = {}
    for index, layer in enumerate(drawing.layers):
        fill, accent = _BAND_COLOURS[index % len(_BAND_COLOURS)]
        placed, band_h = _place_layer(layer, y)
        out.append(f'<g class="layer" id="layer-{index + 1}">')
        out.append(
            f'<rect x="{_MARGIN_X}" y="{_num(y)}" width="{WIDTH - 2 * _MARGIN_X}" '
            f'height="{_num(band_h)}" rx="10" fill="{fill}" stroke="{accent}" '
            'stroke-opacity="0.35"/>'
        )
        out.append(
            f'<rect x="{_MARGIN_X}" y="{_num(y)}" width="6" height="{_num(band_h)}" rx="3" '
            f'fill="{accent}"/>'
        )
        label_x = _MARGIN_X + 20
        out.append(
            f'<text x="{label_x}" y="{_num(y + 24)}" class="num" fill="{accent}">'
            f"LAYER {index + 1}</text>"
        )
        ty = y + 44
        for line in wrap(layer.title, _LABEL_W - 28, 16, bold=True, limit=2):
            out.append(f'<text x="{label_x}" y="{_num(ty)}" class="lt">{_xml(line)}</text>')
            ty += 20
        for line in wrap(layer.caption, _LABEL_W - 28, _LINE_SIZE, limit=4):
            out.append(f'<text x="{label_x}" y="{_num(ty)}" class="cap">{_xml(line)}</text>')
            ty += _LINE_LH
        for box, spot in zip(layer.boxes, placed, strict=True):
            if box.key:
                where.setdefault(box.key, (index, spot))
            out.extend(_svg_box(spot, accent))
        if not layer.boxes:
            x = _MARGIN_X + _LABEL_W + _PAD
            out.append(f'<text x="{x}" y="{_num(y + 34)}" class="cap">nothing declared</text>')
        out.append("</g>")
        y += band_h + _BAND_GAP
    out.extend(_svg_edges(drawing.edges, where))
    return out, y - _BAND_GAP


def _svg_box(spot: _Placed, accent: str) -> list[str]:
    out = [
        f'<rect x="{_num(spot.x)}" y="{_num(spot.y)}" width="{_num(spot.w)}" '
        f'height="{_num(spot.h)}" rx="6" class="box" stroke="{accent}"/>'
    ]
    x = spot.x + _BOX_PAD
    y = spot.y + _BOX_PAD + 14
    for line in spot.title:
        out.append(f'<text x="{_num(x)}" y="{_num(y)}" class="bt">{_xml(line)}</text>')
        y += _TITLE_LH
    y += 2
    for line, continued in spot.lines:
        at = x + _HANG if continued else x
        out.append(f'<text x="{_num(at)}" y="{_num(y)}" class="bl">{_xml(line)}</text>')
        y += _LINE_LH
    return out


def _svg_edges(edges: Sequence[Edge], where: dict[str, tuple[int, _Placed]]) -> list[str]:
    """Edges between boxes that face each other across the gap of two neighbouring bands (the
    last row of one, the first of the next); any other edge is left to the boxes' text."""
    out = []
    for edge in edges:
        if edge.source not in where or edge.target not in where:
            continue
        (a_layer, a), (b_layer, b) = where[edge.source], where[edge.target]
        if b_layer != a_layer + 1 or a.row != a.rows - 1 or b.row != 0:
            continue
        x1, y1 = a.x + a.w / 2, a.y + a.h
        x2, y2 = b.x + b.w / 2, b.y
        mid = (y1 + y2) / 2
        out.append(
            f'<path d="M{_num(x1)} {_num(y1)} C{_num(x1)} {_num(mid)} {_num(x2)} {_num(mid)} '
            f'{_num(x2)} {_num(y2)}" class="edge"/>'
        )
        out.append(f'<circle cx="{_num(x2)}" cy="{_num(y2)}" r="2.5" class="end"/>')
    if out:
        return ['<g class="edges">', *out, "</g>"]
    return []


_STYLE: Final = (
    "text{font-family:'DejaVu Sans',sans-serif;fill:#0f172a}"
    ".h1{font-size:22px;font-weight:bold}"
    ".sub{font-size:13px;fill:#475569}"
    ".num{font-size:11px;font-weight:bold;letter-spacing:0}"
    ".lt{font-size:16px;font-weight:bold}"
    ".cap{font-size:12px;fill:#475569}"
    ".bt{font-size:14px;font-weight:bold}"
    ".bl{font-size:12px;fill:#334155}"
    ".box{fill:#ffffff;stroke-width:1.2}"
    ".edge{fill:none;stroke:#64748b;stroke-width:1.3;stroke-opacity:0.7}"
    ".end{fill:#64748b}"
)


def svg(*drawings: Drawing) -> str:
    """The drawings as one SVG document, one section per drawing, top to bottom: each layer a
    band with its title on the left and its boxes on a grid; edges between facing boxes of
    neighbouring bands. Deterministic: the same drawings give the same bytes."""
    body: list[str] = []
    y = 0.0
    for index, drawing in enumerate(drawings):
        if index:
            y += 28
            body.append(
                f'<line x1="{_MARGIN_X}" y1="{_num(y - 14)}" x2="{WIDTH - _MARGIN_X}" '
                f'y2="{_num(y - 14)}" stroke="#cbd5e1" stroke-width="2"/>'
            )
        part, y = _svg_drawing(drawing, y + 8)
        body.extend(part)
    height = math.ceil(y + _MARGIN_X)
    titles = ", ".join(_one_line(d.title) for d in drawings)
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, sans-serif" role="img">',
        f"<title>{_xml(titles)}</title>",
        f"<style>{_STYLE}</style>",
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
    ]
    return "\n".join([*head, *body, "</svg>"]) + "\n"
