"""`gpuplane cost --chart`: the SVG is well-formed, the same bytes each time, shows the title and
every team in a real browser (headless Chromium, read back with Tesseract), and keeps hostile
text inert; the PNG opens with Pillow at the layout's size with bars drawn where they belong."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from renderer.commands.cost.chart import BAR, COLOURS, PLOT_LEFT, ROW, TOP, WIDTH
from tests.conftest import REPO, Result, ocr, require_tool, screenshot
from tests.cost.platform import cost_platform

Run = Callable[..., Result]
WORKED = REPO / "tests" / "cost" / "worked.csv"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cost_platform(tmp_path_factory.mktemp("chart") / "repo")


def draw(gpuplane: Run, root: Path, path: Path, *args: str) -> bytes:
    done = gpuplane("-C", str(root), "cost", str(WORKED), "--chart", str(path), *args)
    assert done.exit_code == 0, done.output
    return path.read_bytes()


def test_the_svg_is_well_formed_and_deterministic(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    first = draw(gpuplane, root, tmp_path / "a.svg", "--window", "30d")
    assert draw(gpuplane, root, tmp_path / "b.svg", "--window", "30d") == first
    tree = ET.fromstring(first)
    texts = [t.text or "" for t in tree.iter(f"{SVG}text")]
    assert "Spend per team, window 30d" in texts
    assert {"vision", "llm"} <= set(texts)
    assert "USD 114.10 per completed training run" in texts
    assert "no accepted units" in texts
    assert set(COLOURS) == {
        "compute",
        "network",
        "storage",
        "support",
        "idle",
        "failed_runs",
        "operations",
    }
    legend = {"compute", "network", "storage", "support", "idle", "failed runs", "operations"}
    assert legend <= set(texts)
    assert b'font-family="DejaVu Sans, sans-serif"' in first
    # tests/test_cost.py's worked example: vision spent 456.40 (4 runs: 114.10 per run), llm
    # 897.50 (no accepted units); every bar is the team's total
    assert "USD 456.40 total" in texts and "USD 897.50 total" in texts


def test_hostile_window_text_is_inert_in_the_svg(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    window = '<script>alert(1)</script> & "\x1b[2J" \ud800'
    data = draw(gpuplane, root, tmp_path / "h.svg", "--window", window)
    tree = ET.fromstring(data)  # still well-formed: nothing escaped its text node
    assert not list(tree.iter(f"{SVG}script"))
    title = next(t.text for t in tree.iter(f"{SVG}text"))
    assert title is not None and "<script>alert(1)</script>" in title
    assert "\x1b" not in title and "\\x1b[2J" in title


@pytest.mark.slow
def test_the_browser_shows_title_and_teams(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    chromium = require_tool("chromium", "chromium")
    tesseract = require_tool("tesseract", "tesseract-ocr")
    svg = tmp_path / "chart.svg"
    draw(gpuplane, root, svg, "--window", "30d")
    shot = _screenshot(chromium, svg, tmp_path, "1200,800")
    assert shot.is_file()

    def read(image: Path) -> str:
        return _ocr(tesseract, image)

    assert "Spend per team, window 30d" in read(shot)
    from PIL import Image

    labels = tmp_path / "labels.png"  # the column of team names, left of the bars
    Image.open(shot).crop((0, TOP * 2, PLOT_LEFT * 2, (TOP + 2 * ROW) * 2)).save(labels)
    # DejaVu Sans Bold's `l` and `I` are the same stroke to Tesseract ("IIm" for "llm")
    words = read(labels).replace("I", "l").split()
    assert "vision" in words and "llm" in words, words


def _rows(tree: ET.Element) -> list[tuple[str, float, str]]:
    """Per bar, top to bottom: the team's name, the bar's length, and the text at its end."""
    texts = list(tree.iter(f"{SVG}text"))
    names = [t for t in texts if t.get("font-weight") == "bold" and t.get("text-anchor") == "end"]
    colours = set(COLOURS.values())
    found = []
    for name in sorted(names, key=lambda t: float(t.get("y", 0))):
        y = float(name.get("y", 0)) - 14  # the bar's top: 14 above the name's baseline
        parts = [
            r
            for r in tree.iter(f"{SVG}rect")
            if r.get("fill") in colours
            and float(r.get("y", 0)) == y
            and r.get("height") == str(BAR)
        ]
        end = max(float(r.get("x", 0)) + float(r.get("width", 0)) for r in parts)
        label = next(t.text or "" for t in texts if abs(float(t.get("x", 0)) - end - 8) < 0.02)
        found.append((name.text or "", sum(float(r.get("width", 0)) for r in parts), label))
    return found


def test_bars_are_total_spend_biggest_first_on_one_axis_in_money(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    """A team's cost per training run and another's per 1,000 requests are not one quantity:
    the bars are what each team spent (one unit, the currency), the longest the biggest
    spender's, first; each bar ends in its total, each team's cost per unit is written under
    its name with the unit. Here vision spends more than llm once it has 400 more GPU-hours."""
    usage = tmp_path / "usage.csv"
    text = WORKED.read_text(encoding="utf-8")
    assert "\nvision,h100-train,100,60,10,,,,,\n" in text
    usage.write_text(text.replace("vision,h100-train,100,60,10", "vision,h100-train,500,460,10"))
    out = tmp_path / "chart.svg"
    done = gpuplane("-C", str(root), "cost", str(usage), "--chart", str(out), "--format", "json")
    assert done.exit_code == 0, done.output
    totals = {t["team"]: t["total"] for t in json.loads(done.output)["teams"]}
    assert totals["vision"] > totals["llm"]
    tree = ET.fromstring(out.read_bytes())
    rows = _rows(tree)
    assert [name for name, _, _ in rows] == sorted(totals, key=lambda t: -totals[t])
    (first, first_len, first_label), (second, second_len, second_label) = rows
    assert first_len / second_len == pytest.approx(totals[first] / totals[second], rel=1e-3)
    assert first_label == f"USD {totals[first]:,.2f} total"
    assert second_label == f"USD {totals[second]:,.2f} total"
    texts = [t.text or "" for t in tree.iter(f"{SVG}text")]
    assert "USD spent in the window, per team" in texts  # the axis says its unit
    ticks = [t for t in texts if re.fullmatch(r"USD [\d,]+\.\d\d", t)]
    assert len(ticks) >= 3 and ticks[0] == "USD 0.00"


def test_tesseract_reads_the_totals_and_units(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    chromium = require_tool("chromium", "chromium")
    tesseract = require_tool("tesseract", "tesseract-ocr")
    svg = tmp_path / "chart.svg"
    draw(gpuplane, root, svg, "--window", "30d")
    shot = _screenshot(chromium, svg, tmp_path, f"{WIDTH},450")
    from PIL import Image

    def read(image: Path) -> str:
        return " ".join(_ocr(tesseract, image).split())

    words = read(shot)
    # each bar's total, cut out from the end of its bar (Tesseract skips text that touches a
    # coloured bar), as a person reads it there
    tree = ET.fromstring(svg.read_bytes())
    for text in tree.iter(f"{SVG}text"):
        if (text.text or "").endswith(" total"):
            x, y = float(text.get("x", 0)), float(text.get("y", 0))
            crop = tmp_path / f"total-{y:.0f}.png"
            Image.open(shot).crop(
                (int(x - 4) * 2, int(y - 20) * 2, WIDTH * 2, int(y + 8) * 2)
            ).save(crop)
            words += " " + read(crop)
    # the worked example's totals (tests/test_cost.py) and the units they are in
    for wanted in (
        "USD 897.50 total",
        "USD 456.40 total",
        "USD 114.10 per completed training run",
        "USD spent in the window, per team",
    ):
        assert wanted in words, (wanted, words)


def test_the_png_opens_with_bars_in_place(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    from PIL import Image

    data = draw(gpuplane, root, tmp_path / "chart.png", "--window", "30d")
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(tmp_path / "chart.png").convert("RGB")
    assert image.width == WIDTH
    assert image.height > TOP + 2 * ROW  # two teams, then axis and legend
    compute = tuple(int(COLOURS["compute"][i : i + 2], 16) for i in (1, 3, 5))
    # the first segment of every bar is compute, starting at the plot's left edge
    for row in range(2):
        y = TOP + ROW * row + (ROW - BAR) // 2 + BAR // 2
        assert image.getpixel((PLOT_LEFT + 5, y)) == compute
    blank = Image.new("RGB", image.size, "#ffffff")
    assert image.tobytes() != blank.tobytes()


def test_a_chart_of_another_kind_is_a_usage_error(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    done = gpuplane("-C", str(root), "cost", str(WORKED), "--chart", str(tmp_path / "c.jpg"))
    assert done.exit_code == 2
    assert not (tmp_path / "c.jpg").exists()


def _screenshot(chromium: str, svg: Path, tmp_path: Path, size: str) -> Path:
    """Chromium's headless screenshot of the SVG at `size` (width,height) CSS pixels, at twice
    the pixels: Tesseract reads 12px text."""
    return screenshot(chromium, svg, tmp_path / "shot.png", size, "--force-device-scale-factor=2")


def _ocr(tesseract: str, image: Path) -> str:
    """What Tesseract reads in the image, in sparse-text mode (labels scattered over a chart)."""
    return ocr(tesseract, image, "--psm", "11")
