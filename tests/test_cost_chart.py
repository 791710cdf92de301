"""`gpuplane cost --chart`: the SVG is well-formed, the same bytes each time, shows the title and
every team in a real browser (headless Chromium, read back with Tesseract), and keeps hostile
text inert; the PNG opens with Pillow at the layout's size with bars drawn where they belong."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from renderer.commands.cost.chart import BAR, COLOURS, PLOT_LEFT, ROW, TOP, WIDTH
from tests.conftest import REPO, Result, require_tool
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
    assert "Effective cost per accepted unit, window 30d" in texts
    assert {"vision", "llm"} <= set(texts)
    assert "per completed training run" in texts
    assert "no accepted units: total shown" in texts
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
    # vision's bar: 456.40 / 4 runs = 114.10 per run; llm's: its total 897.50
    assert "USD 114.10" in texts and "USD 897.50 total" in texts


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
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,800",
            "--force-device-scale-factor=2",  # twice the pixels: Tesseract reads 12px text
            svg.as_uri(),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert shot.is_file()

    def read(image: Path) -> str:
        return subprocess.run(
            [tesseract, str(image), "-", "--psm", "11"],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout

    assert "Effective cost per accepted unit, window 30d" in read(shot)
    from PIL import Image

    labels = tmp_path / "labels.png"  # the column of team names, left of the bars
    Image.open(shot).crop((0, TOP * 2, PLOT_LEFT * 2, (TOP + 2 * ROW) * 2)).save(labels)
    # DejaVu Sans Bold's `l` and `I` are the same stroke to Tesseract ("IIm" for "llm")
    words = read(labels).replace("I", "l").split()
    assert "vision" in words and "llm" in words, words


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
