"""`gpuplane diagram`: the declared platform in the guide's six layers, as SVG and as Mermaid.

Expectations come from the example's input files (read here with PyYAML) and from the guide's
six layers (PRODUCT.md §1), not from the drawing itself. The Mermaid text is parsed by Mermaid's
own parser (tests/mermaid, `npm ci --prefix tests/mermaid`); the SVG is opened in headless
Chromium and the screenshot read back with Tesseract; text widths are checked against the real
DejaVu Sans metrics with Pillow.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.commands.diagram import build
from renderer.layers.platform_drawing import drawing, queue_drawings
from renderer.layers.readme import cluster_readme
from renderer.model.view import ClusterView
from renderer.output import drawing as writers
from renderer.output.drawing import Box, Drawing, Edge, Layer
from renderer.pipeline import load_platform
from tests.conftest import (
    ADDON_TITLES,
    REPO,
    REQUIRE_TOOLS,
    copy_inputs,
    ocr,
    require_tool,
    screenshot,
)

SIX = (
    "Control plane",
    "Queue layer",
    "Platform add-ons",
    "GPU worker pools",
    "Workloads per team",
    "Network and data path",
)
"""The guide's six layers, in its order (PRODUCT.md §1, first row)."""

PRODUCTS = {
    "h100-80gb": "H100",
    "a100-80gb": "A100",
    "l40s": "L40S",
    "h200-141gb": "H200",
    "l4": "L4",
}
"""What each example accelerator key is called (NVIDIA's product names)."""

"""What each add-on's project calls itself, by its key under `spec.addons`."""

KIND_TITLES = {"TrainJob": "Kubeflow Trainer", "LeaderWorkerSet": "LeaderWorkerSet"}
"""The project whose CRDs define each kind the example's namespaces list under `kinds`."""

HOSTILE = (
    'x"] --> y[<script>alert(1)</script>]]>& %%{init: {"securityLevel":"loose"}}%% `md` '
    "#quot; |z| click c0l0b0 call alert()\nend"
)

SVG = "{http://www.w3.org/2000/svg}"


def _yaml(folder: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((REPO / folder).glob("*.yaml"))]


def _views(root: Path = REPO) -> dict[str, ClusterView]:
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.name == "ERROR"]
    return {
        name: ClusterView.of(loaded.platform, cluster)
        for name, cluster in sorted(loaded.platform.clusters.items())
    }


def _box_text(box: Box) -> str:
    return " ".join((box.title, *box.lines))


# --- the drawing: the six layers with the example's facts ---------------------------------------


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_six_layers_show_the_example_platform(cluster: str) -> None:
    picture = drawing(_views()[cluster])
    assert tuple(layer.title for layer in picture.layers) == SIX
    control, queue, addons, pools, workloads, network = picture.layers
    spec = next(c for c in _yaml("clusters") if c["metadata"]["name"] == cluster)["spec"]

    assert any(f"Kubernetes {spec['kubernetesVersion']}" in _box_text(b) for b in control.boxes)
    assert any(spec["provider"] in _box_text(b) for b in control.boxes)
    assert any(b.title == "Argo CD" for b in control.boxes)

    queues = [q for q in _yaml("queues") if q["spec"]["cluster"] == cluster]
    assert queues
    for q in queues:
        box = next(b for b in queue.boxes if b.title == f"cohort {q['metadata']['name']}")
        assert q["spec"]["strategy"] in _box_text(box)
        assert all(pool in _box_text(box) for pool in q["spec"]["pools"])
    assert queue.boxes[0].title == f"Kueue {spec['addons']['kueue']['version']}"

    # one box per add-on the cluster file declares, with its name, version and how it is installed
    assert sorted(b.title for b in addons.boxes) == sorted(ADDON_TITLES[k] for k in spec["addons"])
    for key, settings in spec["addons"].items():
        box = next(b for b in addons.boxes if b.title == ADDON_TITLES[key])
        assert box.lines[0] == settings["version"]
        if key == "dcgmExporter":
            assert box.lines[1] == "deployed by the GPU Operator"
        else:  # the Application the gitops layer renders for it
            name = box.lines[1].removeprefix("Argo CD Application ")
            assert (
                REPO / "rendered" / cluster / "gitops/argocd" / f"application-{name}.yaml"
            ).is_file()
    # and what needs each operator: here, the kinds the cluster's namespaces list
    for team in _yaml("teams"):
        for ns in team["spec"]["namespaces"]:
            for kind in ns.get("kinds", []) if ns["cluster"] == cluster else []:
                box = next(b for b in addons.boxes if b.title == KIND_TITLES[kind])
                assert f"{kind} in namespace {ns['name']}" in box.lines[-1]

    declared = sorted(
        (p for p in _yaml("pools") if p["spec"]["cluster"] == cluster),
        key=lambda p: p["metadata"]["name"],
    )
    assert [b.title for b in pools.boxes] == [p["metadata"]["name"] for p in declared]
    for p, box in zip(declared, pools.boxes, strict=True):
        text = _box_text(box)
        s = p["spec"]
        nodes = s["nodes"]
        count = str(nodes) if isinstance(nodes, int) else f"{nodes['min']}-{nodes['max']}"
        assert f"{count} nodes x {s['gpusPerNode']} GPUs" in text
        assert PRODUCTS[s["accelerator"]] in text
        assert s["workload"] in text
        if s["sharing"] == "mig":
            assert all(f"{profile} x{n}" in text for profile, n in s["mig"]["layout"].items())
        if s["sharing"] == "time-slicing":
            assert f"{s['timeSlicing']['replicas']} replicas per GPU" in text

    teams = [
        t for t in _yaml("teams") if any(n["cluster"] == cluster for n in t["spec"]["namespaces"])
    ]
    assert [b.title for b in workloads.boxes] == sorted(t["metadata"]["name"] for t in teams)
    for team in teams:
        box = next(b for b in workloads.boxes if b.title == team["metadata"]["name"])
        for ns in team["spec"]["namespaces"]:
            assert f"{ns['name']}: {ns['purpose']}" in box.lines
        for quota in team["spec"]["gpus"]:
            assert any(
                line.startswith(f"{quota['pool']}: {quota['nominal']} ") for line in box.lines
            )
        # an edge from each pool the team holds quota on, to the team
        held = {q["pool"] for q in team["spec"]["gpus"]}
        into = {e.source for e in picture.edges if e.target == f"team:{team['metadata']['name']}"}
        assert into == {f"pool:{pool}" for pool in held}

    net = " ".join(_box_text(b) for b in network.boxes)
    storage = spec["storage"]
    for value in (storage["sharedClass"], storage["scratchClass"], storage["objectStore"]):
        assert value in net
    for p in declared:
        fabric = p["spec"]["fabric"]
        assert f"{p['metadata']['name']}: {fabric['nics']} x {fabric['gbpsPerNic']} Gb/s" in net


def test_an_operator_already_running_is_drawn_with_what_still_needs_it(tmp_path: Path) -> None:
    """`enabled: false`: the cluster runs it, installed by someone else; no Application."""
    copy = copy_inputs(REPO, tmp_path / "copy")
    cluster = copy / "clusters" / "prod-east.yaml"
    old = "    lws:\n      version: 0.10.0 "
    assert cluster.read_text().count(old) == 1
    cluster.write_text(
        cluster.read_text().replace(old, old.replace(":\n", ":\n      enabled: false\n"))
    )
    addons = drawing(_views(copy)["prod-east"]).layers[2]
    box = next(b for b in addons.boxes if b.title == "LeaderWorkerSet")
    assert box.lines[:2] == ("0.10.0", "already running, not installed by gpuplane")
    assert (
        box.lines[-1] == "needed by LeaderWorkerSet in namespace recsys-serve"
    )  # teams/recsys.yaml
    assert not any("Application" in line for line in box.lines)


# --- Mermaid ------------------------------------------------------------------------------------

LABEL_LINE = re.compile(r'^\s*(c\d+(?:l\d+(?:b\d+)?)?)\["([^"]*)"\]$')
"""A node or subgraph line: a generated id, then one quoted label with no quote inside."""


def _mermaid_structure(text: str) -> None:
    lines = text.splitlines()
    assert lines[0] == "flowchart TB"
    for line in lines[1:]:
        stripped = line.strip()
        if stripped in ("end", "direction TB"):
            continue
        if stripped.startswith("subgraph "):
            assert LABEL_LINE.match(stripped.removeprefix("subgraph ")), line
            continue
        if re.fullmatch(r"c\d+(l\d+(b\d+)?)? (~~~|-->) c\d+(l\d+(b\d+)?)?", stripped):
            continue
        match = LABEL_LINE.match(stripped)
        assert match, line
        label = match[2]
        assert not re.search(r"[`\[\]|%{}]", label), line
        assert re.sub(r"</?b>|<br/>", "", label).count("<") == 0, line
        assert ">" not in re.sub(r"</?b>|<br/>", "", label), line


def test_mermaid_is_a_flowchart_of_six_subgraphs() -> None:
    views = _views()
    text = writers.mermaid(drawing(views["prod-east"]))
    _mermaid_structure(text)
    subgraphs = re.findall(r'subgraph (c0l\d)\["\d · ([^"]+)"\]', text)
    assert [title for _, title in subgraphs] == list(SIX)
    # the layers stacked top to bottom by invisible links, in order
    assert re.findall(r"c0l(\d) ~~~ c0l(\d)", text) == [(str(i), str(i + 1)) for i in range(5)]
    both = writers.mermaid(*(drawing(v) for v in views.values()))
    _mermaid_structure(both)
    assert re.findall(r'^  subgraph (c\d)\["', both, re.M) == ["c0", "c1"]


def test_hostile_text_stays_text_in_mermaid() -> None:
    picture = Drawing(
        HOSTILE,
        HOSTILE,
        (Layer(HOSTILE, HOSTILE, (Box(HOSTILE, (HOSTILE,), key="a"), Box("b", (), key="b"))),),
        (Edge("a", "b"),),
    )
    text = writers.mermaid(picture)
    _mermaid_structure(text)
    assert "%%" not in text and "`" not in text and "<script" not in text
    # exactly the generated nodes, and the one edge
    assert re.findall(r"^\s*(c\d+l\d+b\d+)\[", text, re.M) == ["c0l0b0", "c0l0b1"]
    assert re.findall(r"-->", text) == ["-->"]


def _entity(match: re.Match[str]) -> str:
    code = match[1]
    return chr(int(code)) if code.isdigit() else html.unescape(f"&{code};")


def _decoded(label: str) -> str:
    """A label as Mermaid shows it: its entity codes decoded (the parser keeps them encoded as
    `ﬂ°°NN¶ß` and `ﬂ°name¶ß` until it draws), its line breaks as newlines, tags dropped."""
    text = re.sub(r"ﬂ°°?(\w+)¶ß", _entity, label)
    return re.sub(r"</?b>", "", re.sub(r"<br\s*/?>", "\n", text))


def _mermaid_parse(tmp_path: Path, texts: dict[str, str]) -> dict[str, Any]:
    node = require_tool("node", "nodejs")
    folder = Path(os.environ.get("GPUPLANE_MERMAID", REPO / "tests" / "mermaid"))
    if not (folder / "node_modules" / "mermaid").is_dir():
        message = f"Mermaid is not installed in {folder} (npm ci --prefix tests/mermaid)"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(message)
        pytest.skip(message)
    files = []
    for name, text in texts.items():
        path = tmp_path / f"{name}.mmd"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    done = subprocess.run(
        [node, str(folder / "parse.mjs"), *files],
        capture_output=True,
        text=True,
        check=True,
        cwd=folder,
    )
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return {Path(r["file"]).stem: r for r in results}


@pytest.mark.slow
def test_mermaids_own_parser_reads_every_form_and_hostile_text_inert(tmp_path: Path) -> None:
    views = _views()
    hostile = Drawing(
        "t",
        "s",
        (
            Layer("one", "c", (Box(HOSTILE, (HOSTILE, "second"), key="a"),)),
            Layer("two", "c", (Box("b", (), key="b"),)),
        ),
        (Edge("a", "b"),),
    )
    texts = {name: writers.mermaid(drawing(view)) for name, view in views.items()}
    texts["all"] = writers.mermaid(*(drawing(v) for v in views.values()))
    texts["hostile"] = writers.mermaid(hostile)
    parsed = _mermaid_parse(tmp_path, texts)
    for name, result in parsed.items():
        assert result["ok"], (name, result.get("error"))
        assert result["type"] == "flowchart-v2"

    prod = parsed["prod-east"]
    titles = [s["title"] for s in prod["subgraphs"]]
    assert [re.sub(r"^\d · ", "", _decoded(t)) for t in titles] == list(SIX)
    labels = {v["id"]: _decoded(v["text"]) for v in prod["vertices"]}
    pools = sorted(
        p["metadata"]["name"] for p in _yaml("pools") if p["spec"]["cluster"] == "prod-east"
    )
    pool_layer = next(s for s in prod["subgraphs"] if s["title"].endswith("GPU worker pools"))
    assert sorted(labels[n].split("\n")[0] for n in pool_layer["nodes"]) == pools

    # with every cluster in one picture, each cluster's subgraph holds its own add-on layer:
    # one node per add-on its file declares
    every = parsed["all"]
    groups = {s["id"]: s for s in every["subgraphs"]}
    every_label = {v["id"]: _decoded(v["text"]) for v in every["vertices"]}
    for d, name in enumerate(views):
        assert f"c{d}l2" in groups[f"c{d}"]["nodes"]
        spec = next(c for c in _yaml("clusters") if c["metadata"]["name"] == name)["spec"]
        shown = [every_label[n].split("\n")[:2] for n in groups[f"c{d}l2"]["nodes"]]
        assert sorted(shown) == sorted(
            [ADDON_TITLES[key], settings["version"]] for key, settings in spec["addons"].items()
        )

    result = parsed["hostile"]
    ids = sorted(v["id"] for v in result["vertices"])
    assert ids == ["c0l0", "c0l0b0", "c0l1", "c0l1b0"]  # two boxes, two layers, nothing else
    visible = [e for e in result["edges"] if e["stroke"] != "invisible"]
    assert [(e["start"], e["end"]) for e in visible] == [("c0l0b0", "c0l1b0")]
    label = next(_decoded(v["text"]) for v in result["vertices"] if v["id"] == "c0l0b0")
    one_line = " ".join(HOSTILE.split())
    assert label == f"{one_line}\n{one_line}\nsecond"


# --- SVG ----------------------------------------------------------------------------------------


def _rects(root: ET.Element, cls: str) -> list[tuple[float, float, float, float]]:
    return [
        (
            float(r.get("x", 0)),
            float(r.get("y", 0)),
            float(r.get("width", 0)),
            float(r.get("height", 0)),
        )
        for r in root.iter(f"{SVG}rect")
        if r.get("class") == cls
    ]


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _measure() -> Callable[[str, float, bool], float]:
    image_font = pytest.importorskip("PIL.ImageFont")
    fonts: dict[tuple[bool, float], Any] = {}
    folder = Path("/usr/share/fonts/truetype/dejavu")
    if not (folder / "DejaVuSans.ttf").is_file():
        pytest.skip("DejaVu Sans is not installed (Debian package fonts-dejavu-core)")

    def width(text: str, size: float, bold: bool) -> float:
        key = (bold, size)
        if key not in fonts:
            name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
            fonts[key] = image_font.truetype(str(folder / name), size=int(size * 10))
        return float(fonts[key].getlength(text)) / 10

    return width


SIZES = {"bt": (14.0, True), "bl": (12.0, False), "lt": (16.0, True), "cap": (12.0, False)}


def test_svg_is_well_formed_and_laid_out_without_overlap() -> None:
    measure = _measure()
    views = _views()
    for text in (
        writers.svg(drawing(views["prod-east"])),
        writers.svg(*(drawing(v) for v in views.values())),
    ):
        root = ET.fromstring(text.encode("utf-8"))
        assert root.tag == f"{SVG}svg"
        width, height = float(root.get("width", 0)), float(root.get("height", 0))
        assert root.get("viewBox") == f"0 0 {int(width)} {int(height)}"
        assert root.get("font-family") == "DejaVu Sans, sans-serif"
        boxes = _rects(root, "box")
        assert boxes
        for i, a in enumerate(boxes):
            assert a[0] >= 0 and a[1] >= 0 and a[0] + a[2] <= width and a[1] + a[3] <= height
            for b in boxes[i + 1 :]:
                assert not _overlap(a, b), (a, b)
        # every line of a box lies inside it, measured in the real font
        for element in root.iter(f"{SVG}text"):
            cls = element.get("class", "")
            if cls not in ("bt", "bl"):
                continue
            size, bold = SIZES[cls]
            x, y = float(element.get("x", 0)), float(element.get("y", 0))
            real = measure(element.text or "", size, bold)
            home = [b for b in boxes if b[0] <= x < b[0] + b[2] and b[1] <= y <= b[1] + b[3]]
            assert len(home) == 1, element.text
            box = home[0]
            assert x + real <= box[0] + box[2] - 4, (element.text, x + real, box)
            assert y + 4 <= box[1] + box[3], element.text


def test_the_width_estimate_is_never_below_dejavu_sans() -> None:
    measure = _measure()
    samples = [
        "".join(chr(c) for c in range(32, 127)),
        "WWWWWWWWWW mmmmmmmm",
        "iiiiiiiiii llll ....",
        "h100-train: 16 GPUs, borrows up to 16 more",
        "NVIDIA H100 SXM5 80GB · 4 nodes \N{MULTIPLICATION SIGN} 8 GPUs → 32",
    ]
    for text in samples:
        for bold in (False, True):
            assert writers.text_width(text, 12, bold=bold) >= measure(text, 12, bold)


def test_wrap_fits_and_cuts_what_cannot() -> None:
    measure = _measure()
    long_word = "https://" + "a" * 200 + ".example.com/path"
    lines = writers.wrap(f"destination {long_word} and more words here", 180, 12, limit=3)
    assert len(lines) == 3
    assert lines[-1].endswith("…")
    assert all(measure(line, 12, False) <= 180 for line in lines)


def test_hostile_text_stays_text_in_svg() -> None:
    picture = Drawing(
        HOSTILE, HOSTILE, (Layer(HOSTILE, HOSTILE, (Box(HOSTILE[:60], (HOSTILE,)),)),)
    )
    text = writers.svg(picture)
    root = ET.fromstring(text.encode("utf-8"))  # still one well-formed document
    assert [e.tag for e in root.iter() if e.tag.endswith("script")] == []
    assert "<script" not in text and "]]>" not in text
    lines = [e.text or "" for e in root.iter(f"{SVG}text") if e.get("class") == "bl"]
    one_line = " ".join(HOSTILE.split())
    joined = " ".join(lines)
    # the box's three lines hold the start of the text as written, character for character
    assert one_line.startswith(joined.rstrip("…").rstrip())
    assert '"] --> y[<script>' in joined


@pytest.mark.slow
def test_the_example_platform_in_a_real_browser(tmp_path: Path) -> None:
    chromium = require_tool("chromium", "chromium")
    tesseract = require_tool("tesseract", "tesseract-ocr")
    text = writers.svg(drawing(_views()["prod-east"]))
    height = int(re.search(r'height="(\d+)"', text)[1])  # type: ignore[index]
    svg_file = tmp_path / "prod-east.svg"
    svg_file.write_text(text, encoding="utf-8")
    png = tmp_path / "prod-east.png"
    screenshot(chromium, svg_file, png, f"{writers.WIDTH},{height}", "--hide-scrollbars")
    assert png.stat().st_size > 10_000
    seen = " ".join(ocr(tesseract, png).split())
    squashed = _ocr_key(seen)
    for title in SIX:
        assert _ocr_key(title) in squashed, (title, seen)
    for p in _yaml("pools"):
        if p["spec"]["cluster"] == "prod-east":
            assert _ocr_key(p["metadata"]["name"]) in squashed, (p["metadata"]["name"], seen)


_OCR_ALIKE = str.maketrans(dict.fromkeys("i1|\\!", "l"))
"""Letters Tesseract reads for one another in DejaVu Sans: a lowercase l is drawn as a plain
bar, read as `I`, `1`, `|` or `\\` depending on where the line falls (`l40s-infer` comes back
as `I40s-infer` or `|40s-infer`)."""


def _ocr_key(text: str) -> str:
    """Text as compared with what Tesseract read: no spaces, lower case, look-alikes folded."""
    return text.replace(" ", "").lower().translate(_OCR_ALIKE)


# --- determinism, the command, the README ---------------------------------------------------------


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    copy = copy_inputs(REPO, tmp_path / "copy")
    first, second = _views(), _views(copy)
    for name in first:
        assert writers.svg(drawing(first[name])) == writers.svg(drawing(second[name]))
        assert writers.mermaid(drawing(first[name])) == writers.mermaid(drawing(second[name]))


def test_the_command_prints_or_writes_the_picture(
    gpuplane: Callable[..., Any], tmp_path: Path
) -> None:
    platform = load_platform(REPO).platform
    result = gpuplane("-C", str(REPO), "diagram", "--cluster", "prod-east", "--format", "mermaid")
    assert result.exit_code == 0
    assert result.output == build(platform, "prod-east", "mermaid").text
    out = tmp_path / "pictures" / "all.svg"
    result = gpuplane("-C", str(REPO), "diagram", "--output", str(out))
    assert result.exit_code == 0 and result.output == ""
    written = out.read_text(encoding="utf-8")
    ET.fromstring(written.encode("utf-8"))
    for name in platform.clusters:  # every cluster, a section each
        assert f"{name}: the platform in six layers" in written
    result = gpuplane("-C", str(REPO), "diagram", "--cluster", "prod-eats")
    assert result.exit_code == 2
    assert "Did you mean 'prod-east'?" in result.output


def test_the_command_refuses_an_invalid_platform(
    gpuplane: Callable[..., Any], tmp_path: Path
) -> None:
    copy = copy_inputs(REPO, tmp_path / "copy")
    pool = copy / "pools" / "h100-train.yaml"
    pool.write_text(pool.read_text().replace("gpusPerNode: 8", "gpusPerNode: eight"))
    result = gpuplane("-C", str(copy), "diagram")
    assert result.exit_code == 1
    assert "pools/h100-train.yaml" in result.output


def test_the_readme_embeds_a_mermaid_picture_per_queue(tmp_path: Path) -> None:
    copy = copy_inputs(REPO, tmp_path / "copy")
    hostile = "Lab ``` \n```mermaid\nflowchart LR; evil-->x"
    cluster = copy / "clusters" / "prod-east.yaml"
    old = "description: Production GPU cluster for training and online inference, east data center"
    assert old in cluster.read_text()
    cluster.write_text(cluster.read_text().replace(old, f"description: {json.dumps(hostile)}"))
    view = _views(copy)["prod-east"]
    readme = cluster_readme(view)
    blocks = re.findall(r"^```mermaid\n(.*?)^```$", readme, re.S | re.M)
    queues = sorted({t["spec"]["queue"] for t in _yaml("teams")} & {q.name for q in view.queues})
    assert len(blocks) == len(queues) == len(view.queues)
    assert blocks == [writers.mermaid_columns(d) for d in queue_drawings(view)]
    assert "## Pools and teams, per queue" in readme
    assert readme.count("```") == 2 * len(blocks)  # the description cannot open or close a fence
    # every team with quota on a pool of its queue is drawn beside that pool, its nominal shown
    for t in _yaml("teams"):
        for quota in t["spec"].get("gpus", []):
            pool = next(p for p in _yaml("pools") if p["metadata"]["name"] == quota["pool"])
            if pool["spec"]["cluster"] != "prod-east":
                continue
            assert re.search(rf"l0b\d+\[\"<b>pool {quota['pool']}</b>", blocks[0]), quota["pool"]
            name, nominal = t["metadata"]["name"], quota["nominal"]
            assert re.search(rf'<b>team {name}</b>(<br/>[^"]*)?<br/>{nominal} ', blocks[0])


def _mermaid_in_chromium(tmp_path: Path, blocks: list[str], column: int) -> list[dict[str, Any]]:
    """Each Mermaid text drawn by Mermaid's own renderer in headless Chromium, in a column
    `column` px wide, measured by tests/mermaid/measure.js."""
    chromium = require_tool("chromium", "chromium")
    folder = Path(os.environ.get("GPUPLANE_MERMAID", REPO / "tests" / "mermaid"))
    script = folder / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not script.is_file():
        message = f"Mermaid is not installed in {folder} (npm ci --prefix tests/mermaid)"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(message)
        pytest.skip(message)
    sources = "".join(
        f'<pre class="src" style="display:none">{html.escape(b)}</pre>' for b in blocks
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><html><head><meta charset=utf-8><style>body{margin:0}</style></head>"
        f'<body>{sources}<pre id="result"></pre><script src="{script.as_uri()}"></script>'
        f"<script>const COLUMN = {column};</script>"
        f'<script src="{(REPO / "tests" / "mermaid" / "measure.js").as_uri()}"></script>'
        "</body></html>",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=60000",
            f"--window-size={column},2000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert found and found[1], done.stdout[-2000:]
    return list(json.loads(html.unescape(found[1])))


GITHUB_COLUMN = 830
"""The width in pixels of a README's content column on github.com at desktop width (the
repository page's Markdown body, about 830-880 px): a Mermaid picture is scaled down to it."""

READABLE_PX = 12
"""The smallest text, in screen pixels, that reads without zooming."""


def test_the_readme_pictures_read_at_githubs_width(tmp_path: Path) -> None:
    """The README's Mermaid, drawn by Mermaid itself in Chromium at GitHub's column width: no
    text under 12 px, and no edge drawn through a box other than its own ends (prod-east has
    four teams on three pools: the six-layer picture it replaced came out at 3 px, its edges
    behind the pool boxes)."""
    for name in ("prod-east", "staging-west"):
        readme = (REPO / "rendered" / name / "README.md").read_text(encoding="utf-8")
        blocks = re.findall(r"^```mermaid\n(.*?)^```$", readme, re.S | re.M)
        assert blocks, name
        measured = _mermaid_in_chromium(tmp_path / name, blocks, GITHUB_COLUMN)
        assert len(measured) == len(blocks)
        for block, seen in zip(blocks, measured, strict=True):
            assert "error" not in seen, seen
            assert seen["labels"] >= seen["nodes"] > 1, seen
            assert seen["edges"] == len(re.findall(r" --> ", block)) > 0, seen
            assert seen["minPx"] >= READABLE_PX, (name, seen["smallest"], seen["scale"])
            assert seen["crossings"] == [], (name, seen["crossings"])


# --- wording: counted nouns and the fabric's name ------------------------------------------------


def test_counts_and_fabrics_read_as_english(tmp_path: Path) -> None:
    """A cluster with one team and a pool without a fabric: its boxes say `1 team` and
    `No fabric`, never `1 teams` or `No fabric fabric` (the words of the issue that found them)."""
    copy = copy_inputs(REPO, tmp_path / "copy")
    (copy / "teams" / "llm-eval.yaml").unlink()
    pool = copy / "pools" / "l4-serve.yaml"
    text = pool.read_text()
    fabric = "  fabric:\n    type: ethernet\n    nics: 1\n    gbpsPerNic: 40\n"
    assert fabric in text
    pool.write_text(text.replace(fabric, "  fabric:\n    type: none\n"))
    view = _views(copy)["staging-west"]
    picture = drawing(view)
    words = [_box_text(box) for layer in picture.layers for box in layer.boxes]
    readme = cluster_readme(view)
    for text in (*words, readme):
        assert not re.search(r"\b1 (teams|nodes|GPUs|cohorts|LocalQueues|ClusterQueues)\b", text)
        assert "fabric fabric" not in text
    assert any(w.startswith("No fabric l4-serve") for w in words), words
    assert any("1 team: owners" in w for w in words), words
    assert any("1 cohort, 2 ClusterQueues" in w for w in words), words
