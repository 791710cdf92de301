"""`gpuplane simulate --chart`: the SVG of each team's waits over simulated time is well-formed,
has one series per team with its points where a tiny trace's waits (worked by hand) put them on
monotone axes, keeps its labels apart and inside GitHub's column, the same bytes each time,
hostile names inert, at most eight series, and reads in a real browser (headless Chromium, read
back with Tesseract) at GitHub's width."""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from renderer.commands.simulate.chart import MAX_SERIES, WIDTH, svg
from renderer.commands.simulate.report import SimReport, TeamReport, Waits
from renderer.output.drawing import text_width
from tests.conftest import REPO, Result, copy_inputs, ocr, require_tool, screenshot

Run = Callable[..., Result]
SVG = "{http://www.w3.org/2000/svg}"
GITHUB_COLUMN = 830
"""The width of a Markdown body's content column on github.com (tests/test_diagram.py)."""
HEADER = "submit_s,namespace,name,pods,gpus_per_pod,cpu_per_pod,memory_per_pod,duration_s,priority"

# The example platform's h100-train Cohort (teams/*.yaml): llm nominal 16 (lending 8), vision
# 8 (lending 4), recsys and speech 4 each (lending 2). llm can hold 16 + 4 + 2 + 2 = 24 GPUs,
# vision 8 + 8 + 2 + 2 = 20. Within a team preemption is LowerPriority: equal priorities never
# preempt, and nothing here borrows from a team that asks for its quota back.
#   t=0     llm a: 3 x 8 = 24 GPUs for 1 h: admitted at once (wait 0), ends at 3600.
#   t=600   llm b: 16 more: 40 > 24, parked; at 3600 a ends, b (queued first) is admitted:
#           wait 3000 s; ends at 5400.
#   t=900   llm c: 8 more: parked; at 3600, in the cycle after b, 16 + 8 = 24 fits: wait 2700.
#   t=7200  vision d: 16 GPUs for 20 min: admitted at once (wait 0), ends at 8400.
#   t=7260  vision e: 8 more: 24 > 20, parked; admitted when d ends at 8400: wait 1140 s; ends
#           at 9000, the trace's last event: the span is 9000 s = 2.5 h.
# 9000 s is at most 40 buckets of 5 minutes (300 s) and more than 40 of 1 minute. By the bucket
# each wait began in: llm 0 -> [0], 2 -> [3000], 3 -> [2700]; vision 24 -> [0, 1140], whose
# nearest-rank p90 is the 2nd of 2: 1140. Each point sits at its bucket's middle.
TINY = f"""{HEADER}
0,llm-train,a,3,8,8,32Gi,3600,
600,llm-train,b,2,8,8,32Gi,1800,
900,llm-train,c,1,8,8,32Gi,600,
7200,vision-train,d,2,8,8,32Gi,1200,
7260,vision-train,e,1,8,8,32Gi,600,
"""
POINTS = {  # (hours, minutes) at each bucket's middle
    "llm": [(150 / 3600, 0.0), (750 / 3600, 50.0), (1050 / 3600, 45.0)],
    "vision": [(7350 / 3600, 19.0)],
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = copy_inputs(REPO, tmp_path_factory.mktemp("chart") / "repo")
    (folder / "tiny.csv").write_text(TINY, encoding="utf-8")
    return folder


def draw(gpuplane: Run, root: Path, path: Path, *args: str) -> bytes:
    done = gpuplane(
        "-C", str(root), "simulate", str(root / "tiny.csv"), "--chart", str(path), *args
    )
    assert done.exit_code == 0, done.output
    return path.read_bytes()


@pytest.fixture(scope="module")
def tiny(root: Path, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from click.testing import CliRunner

    from renderer.cli import main

    out = tmp_path_factory.mktemp("svg") / "waits.svg"
    args = ["-C", str(root), "simulate", str(root / "tiny.csv"), "--chart", str(out)]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return out.read_bytes()


def _texts(tree: ET.Element) -> list[ET.Element]:
    return list(tree.iter(f"{SVG}text"))


def _centre(marker: ET.Element) -> tuple[float, float]:
    """A marker's middle: a circle's centre, a polygon's bounding box's middle."""
    if marker.tag == f"{SVG}circle":
        return float(marker.get("cx", 0)), float(marker.get("cy", 0))
    corners = [tuple(map(float, p.split(","))) for p in (marker.get("points") or "").split()]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    return (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2


def _ticks(tree: ET.Element, anchor: str) -> list[tuple[float, float]]:
    """The numeric tick labels of one axis (y: anchored at their end, x: in their middle), as
    (value, pixel), in the order drawn."""
    found = []
    for t in _texts(tree):
        if t.get("text-anchor") == anchor and t.get("font-size") == "12":
            pixel = float(t.get("y" if anchor == "end" else "x", 0))
            found.append((float(t.text or ""), pixel))
    return found


def _scale(ticks: list[tuple[float, float]]) -> Callable[[float], float]:
    """The pixel of a value on an axis, from its first and last ticks."""
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    return lambda v: p0 + (v - v0) * (p1 - p0) / (v1 - v0)


def test_one_series_per_team_with_its_points_where_the_waits_put_them(tiny: bytes) -> None:
    tree = ET.fromstring(tiny)
    assert tree.tag == f"{SVG}svg"
    assert (tree.get("width"), tree.get("viewBox", "").split()[2]) == (str(WIDTH), str(WIDTH))
    assert WIDTH <= GITHUB_COLUMN  # shown at its own size there: no text is scaled down
    texts = [t.text or "" for t in _texts(tree)]
    assert "p90 wait (minutes)" in texts  # the longest wait drawn, 50 minutes
    assert "simulated time since the trace's start (hours), when each wait began" in texts
    # the legend, highest p90 first: llm's waits 0, 2700, 3000 s; vision's 0, 1140 s
    assert "p90 50m00s · max 50m00s · 3 admitted" in texts
    assert "p90 19m00s · max 19m00s · 2 admitted" in texts
    groups = [g for g in tree.iter(f"{SVG}g") if g.get("class") == "series"]
    assert [g.findtext(f"{SVG}title") for g in groups] == ["llm", "vision"]

    # the ticks climb evenly from 0: y 0..50 minutes upwards, x 0..2.5 hours rightwards
    ys, xs = _ticks(tree, "end"), _ticks(tree, "middle")
    assert [v for v, _ in ys] == [0, 10, 20, 30, 40, 50]
    assert [v for v, _ in xs] == [0, 0.5, 1, 1.5, 2, 2.5]
    for axis, sign in ((ys, -1), (xs, 1)):
        gaps = [sign * (b[1] - a[1]) for a, b in itertools.pairwise(axis)]
        assert all(g > 0 for g in gaps) and max(gaps) - min(gaps) < 0.02, axis
    x_at, y_at = _scale(xs), _scale([(v, p - 4) for v, p in ys])  # a label's baseline: 4 below

    for group in groups:
        team = group.findtext(f"{SVG}title") or ""
        marks = [_centre(m) for m in group if m.get("class") == "point"]
        wanted = [(x_at(h), y_at(m)) for h, m in POINTS[team]]
        assert len(marks) == len(wanted), team
        for (x, y), (wx, wy) in zip(marks, wanted, strict=True):
            assert (x, y) == (pytest.approx(wx, abs=0.02), pytest.approx(wy, abs=0.02)), team
    # llm's buckets 2 and 3 are joined; bucket 1 had no wait begin: a gap before it
    llm = groups[0]
    lines = [p.get("points", "").split() for p in llm.iter(f"{SVG}polyline")]
    assert [len(points) for points in lines] == [2]
    assert not list(groups[1].iter(f"{SVG}polyline"))  # one point: a marker, no line


def test_labels_are_readable_and_apart(tiny: bytes) -> None:
    """At least 11 px (drawn at GitHub's width, so that is what people see), inside the
    picture, and no two overlapping, by a width never below DejaVu Sans's own
    (tests/test_diagram.py checks that estimate against the font)."""
    tree = ET.fromstring(tiny)
    width, height = float(tree.get("width", 0)), float(tree.get("height", 0))
    boxes = []
    for t in _texts(tree):
        size = float(t.get("font-size", 0))
        assert size >= 11, t.text
        w = text_width(t.text or "", size, bold=t.get("font-weight") == "bold")
        x, y = float(t.get("x", 0)), float(t.get("y", 0))
        left = {"start": x, "middle": x - w / 2, "end": x - w}[t.get("text-anchor", "start")]
        box = (left, y - size, w, size * 1.25)  # ascent above the baseline, descent below
        assert box[0] >= 0 and box[0] + box[2] <= width and box[1] >= 0, t.text
        assert box[1] + box[3] <= height, t.text
        boxes.append((t.text, box))
    for i, (a, p) in enumerate(boxes):
        for b, q in boxes[i + 1 :]:
            apart = p[0] + p[2] <= q[0] or q[0] + q[2] <= p[0]
            assert apart or p[1] + p[3] <= q[1] or q[1] + q[3] <= p[1], (a, b)


def test_the_same_trace_gives_the_same_bytes(
    gpuplane: Run, root: Path, tiny: bytes, tmp_path: Path
) -> None:
    assert draw(gpuplane, root, tmp_path / "again.svg") == tiny
    assert draw(gpuplane, root, tmp_path / "json.svg", "--format", "json") == tiny


def _team(
    name: str, p90_s: int, samples: tuple[tuple[int, int], ...], never: int = 0
) -> TeamReport:
    wait = Waits(p90_s / 2, p90_s, p90_s, p90_s, len(samples))
    return TeamReport(name, len(samples) + never, wait, len(samples), never, (), 0, 0, samples)


def _report(*teams: TeamReport, trace: str = "trace.csv") -> SimReport:
    return SimReport(trace, sum(t.workloads for t in teams), 3600.0, teams, (), ())


def test_hostile_names_stay_text() -> None:
    script = "<script>alert(1)</script>"
    teams = (
        _team(script, 60, ((60_000, 60_000),)),
        _team('R&D "x" ]]> \x1b[2J', 30, ((30_000, 30_000),)),
    )
    data = svg(_report(*teams, trace="a&b<c>.csv"))
    tree = ET.fromstring(data)  # one well-formed document: nothing escaped its text node
    assert not [e for e in tree.iter() if e.tag.endswith("script")]
    assert b"<script" not in data and b"]]>" not in data and b"\x1b" not in data
    texts = [t.text or "" for t in _texts(tree)]
    assert script in texts and 'R&D "x" ]]> \\x1b[2J' in texts
    assert "simulate a&b<c>.csv: 2 workloads over 1h00m" in texts
    titles = [g.findtext(f"{SVG}title") for g in tree.iter(f"{SVG}g")]
    assert titles == [script, 'R&D "x" ]]> \\x1b[2J']


def test_many_teams_are_capped_with_the_rest_pooled_as_others() -> None:
    # twelve teams, team-00's p90 1 minute ... team-11's 12 minutes, one admission each
    teams = [
        _team(f"team-{i:02d}", 60 * (i + 1), ((600_000, 60_000 * (i + 1)),)) for i in range(12)
    ]
    tree = ET.fromstring(svg(_report(*teams)))
    groups = [g.findtext(f"{SVG}title") for g in tree.iter(f"{SVG}g")]
    assert len(groups) == MAX_SERIES == 8
    assert groups == [*(f"team-{i:02d}" for i in range(11, 4, -1)), "others (5 teams)"]
    texts = [t.text or "" for t in _texts(tree)]
    note = (
        "12 teams: the 7 with the highest p90 wait have their own line; the other 5 are pooled "
        'as "others".'
    )
    assert note in texts
    # the others' waits pooled: 1..5 minutes, nearest-rank p90 the 5th of 5
    assert "p90 5m00s · max 5m00s · 5 admitted" in texts


def test_a_team_never_admitted_is_in_the_legend_without_a_line() -> None:
    teams = (_team("idle", 0, (), never=3), _team("busy", 60, ((60_000, 60_000),)))
    tree = ET.fromstring(svg(_report(*teams)))
    texts = [t.text or "" for t in _texts(tree)]
    assert "no admission · 3 never admitted" in texts
    (idle,) = [g for g in tree.iter(f"{SVG}g") if g.findtext(f"{SVG}title") == "idle"]
    assert [m.get("class") for m in idle if m.get("class")] == ["key"]


def test_markdown_shows_the_chart_and_json_is_unchanged(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    trace = str(root / "tiny.csv")
    chart = tmp_path / "my waits (1).svg"
    plain = gpuplane("-C", str(root), "simulate", trace, "--format", "markdown")
    drawn = gpuplane(
        "-C", str(root), "simulate", trace, "--format", "markdown", "--chart", str(chart)
    )
    assert plain.exit_code == drawn.exit_code == 0
    title, rest = plain.output.split("\n\n", 1)
    image = f"![Waits per team over simulated time]({tmp_path.as_posix()}/my%20waits%20%281%29.svg)"
    assert drawn.output == f"{title}\n\n{image}\n\n{rest}"
    assert "![" not in plain.output
    done = gpuplane("-C", str(root), "simulate", trace, "--format", "json", "--chart", str(chart))
    keys = {key for team in json.loads(done.output)["teams"] for key in team}
    assert keys == {"name", "workloads", "wait", "admissions", "completed", "never",
                    "neverReasons", "preempted", "preempting"}  # fmt: skip


def test_a_chart_of_another_kind_is_a_usage_error(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    done = gpuplane(
        "-C", str(root), "simulate", str(root / "tiny.csv"), "--chart", str(tmp_path / "w.png")
    )
    assert done.exit_code == 2
    assert not (tmp_path / "w.png").exists()
    with_base = gpuplane(
        "-C", str(root), "simulate", str(root / "tiny.csv"), "--base", "HEAD",
        "--chart", str(tmp_path / "w.svg"),
    )  # fmt: skip
    assert with_base.exit_code == 2 and "leave out --base" in with_base.output
    assert not (tmp_path / "w.svg").exists()


_OCR_ALIKE = str.maketrans(dict.fromkeys("I1|\\!", "l"))
"""Letters Tesseract reads for one another in DejaVu Sans (tests/test_diagram.py)."""


def _key(text: str) -> str:
    return text.replace(" ", "").translate(_OCR_ALIKE).lower()


@pytest.mark.slow
def test_the_browser_shows_teams_and_axes_at_githubs_width(tiny: bytes, tmp_path: Path) -> None:
    chromium = require_tool("chromium", "chromium")
    tesseract = require_tool("tesseract", "tesseract-ocr")
    chart = tmp_path / "waits.svg"
    chart.write_bytes(tiny)
    height = int(re.search(rb'height="(\d+)"', tiny)[1])  # type: ignore[index]
    shot = screenshot(
        chromium,
        chart,
        tmp_path / "shot.png",
        f"{GITHUB_COLUMN},{height}",
        "--hide-scrollbars",
        "--force-device-scale-factor=2",
    )
    read = ocr(tesseract, shot, "--psm", "11")
    seen = _key(read)
    for wanted in (
        "Waits per team over simulated time",
        "llm",
        "vision",
        "p90 wait (minutes)",
        "simulated time since the trace's start (hours)",
        "p90 50m00s",
        "p90 19m00s",
    ):
        assert _key(wanted) in seen, (wanted, read)
