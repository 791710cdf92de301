"""docs/index.md is the map of the docs: every page of docs/ is linked from it, every link in it
leads to a file or folder that exists, and every `Design: docs/<page>.md#<anchor>` that a module
docstring points at names a page and a heading that exist. Every page of docs/ (and the top
README and CONTRIBUTING) links only to files that exist, and every repository path it quotes in
backticks (`renderer/cli/app.py`, `schemas/results/`) exists in a clone: a reader follows them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

LINK = re.compile(r"\]\(([^)\s]+)\)")
"""A Markdown link's target: `[text](target)`."""

DESIGN = re.compile(r"Design: (docs/[\w.-]+\.md)(?:#([\w-]+))?")
"""A module docstring's pointer at the page that holds its design."""


def links(page: Path) -> list[str]:
    """The local link targets of a Markdown page, without their `#anchor`."""
    targets = LINK.findall(page.read_text(encoding="utf-8"))
    return [t.partition("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and t[0] != "#"]


def broken_links(index: Path) -> list[str]:
    """The links of `index` that lead to no file or folder."""
    return [t for t in links(index) if not (index.parent / t).exists()]


CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
"""An inline code span: `text` (a fenced block is removed before the search)."""

FENCE = re.compile(r"(?ms)^```.*?^```")

MACHINE_ROOTS = ("/work/", "/home/", "/Users/", "/root/")
"""Absolute paths on somebody's machine: a clone has none of them."""


def quoted_paths(page: Path, root: Path) -> list[str]:
    """The repository paths `page` quotes in backticks: spans that are one path (no spaces, no
    placeholder such as `<probe>` or `*`) whose first segment is an entry at the top of `root`
    (`renderer/...`, `docs/...`, `Makefile`), with a `:line` suffix dropped; and absolute paths
    on a person's machine (`/work/...`), which a clone never has."""
    top = {entry.name for entry in root.iterdir() if not entry.name.startswith(".")}
    found = []
    for span in CODE_SPAN.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        text = span.strip()
        if text.startswith(MACHINE_ROOTS):
            found.append(text)
            continue
        if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?(:\d+(:\d+)?)?", text):
            continue
        path = text.split(":")[0]
        if "/" in path and path.split("/")[0] in top:
            found.append(path)
    return found


def made_by_make(root: Path) -> set[str]:
    """The paths the Makefile builds (`NCA := build/nca`): a clone has them once `make test`
    has run, not before, so a page may quote them."""
    makefile = root / "Makefile"
    text = makefile.read_text(encoding="utf-8") if makefile.is_file() else ""
    return set(re.findall(r"^[A-Z_]+ := ((?:build|\.venv)/[\w./-]+)$", text, flags=re.MULTILINE))


def missing_paths(page: Path, root: Path) -> list[str]:
    """The paths `page` quotes in backticks (`quoted_paths`) that do not exist under `root`
    and that the Makefile does not build."""
    built = made_by_make(root)
    return [
        p
        for p in quoted_paths(page, root)
        if p.startswith("/")
        or not ((root / p).exists() or any(p == b or p.startswith(f"{b}/") for b in built))
    ]


def read_pages(root: Path) -> list[Path]:
    """The pages a new user reads: docs/*.md, the top README and CONTRIBUTING."""
    return [*sorted((root / "docs").glob("*.md")), root / "README.md", root / "CONTRIBUTING.md"]


def unlinked_pages(docs: Path) -> list[str]:
    """The pages of `docs` that `docs/index.md` does not link."""
    index = docs / "index.md"
    linked = {(docs / t).resolve() for t in links(index)}
    pages = sorted(p for p in docs.glob("*.md") if p != index)
    return [p.name for p in pages if p.resolve() not in linked]


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return {anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)}


def broken_design_pointers(root: Path) -> list[str]:
    """`module: pointer` for each `Design:` pointer of a module docstring under renderer/ and
    workflows/ whose page or heading does not exist."""
    broken = []
    for folder in ("renderer", "workflows"):
        for path in sorted((root / folder).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            for page, heading in DESIGN.findall(doc):
                target = root / page
                if not target.is_file() or (heading and heading not in anchors(target)):
                    broken.append(f"{path.relative_to(root)}: {page}#{heading}")
    return broken


def test_every_page_of_docs_is_linked_from_the_index() -> None:
    assert unlinked_pages(REPO / "docs") == []


def test_every_link_of_the_index_leads_somewhere() -> None:
    assert len(links(REPO / "docs" / "index.md")) > 100, "the link search is broken"
    assert broken_links(REPO / "docs" / "index.md") == []


def test_every_link_of_every_page_leads_somewhere() -> None:
    pages = read_pages(REPO)
    assert sum(len(links(page)) for page in pages) > 150, "the link search is broken"
    broken = {page.name: broken_links(page) for page in pages}
    assert {name: b for name, b in broken.items() if b} == {}


def test_every_path_a_page_quotes_exists() -> None:
    """`docs/probes.md` pointed at `/work/shared/reference/...`, which no clone has."""
    pages = read_pages(REPO)
    assert sum(len(quoted_paths(page, REPO)) for page in pages) > 200, "the path search is broken"
    missing = {page.name: missing_paths(page, REPO) for page in pages}
    assert {name: m for name, m in missing.items() if m} == {}


def test_the_readme_links_the_index_near_the_top() -> None:
    top = (REPO / "README.md").read_text(encoding="utf-8").splitlines()[:20]
    assert any("docs/index.md" in line for line in top)


def test_every_design_pointer_names_a_page_and_heading_that_exist() -> None:
    assert broken_design_pointers(REPO) == []


# --- the checks themselves, on made-up trees ------------------------------------------------------


def _docs(tmp_path: Path, index: str, *pages: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(index, encoding="utf-8")
    for name in pages:
        (docs / name).write_text(f"# {name}\n\n## A heading, with `code`\n", encoding="utf-8")
    return docs


def test_a_page_added_without_a_link_is_found(tmp_path: Path) -> None:
    docs = _docs(tmp_path, "[a](a.md) and [web](https://example.com)\n", "a.md", "b.md")
    assert unlinked_pages(docs) == ["b.md"]


def test_a_link_to_nothing_is_found(tmp_path: Path) -> None:
    docs = _docs(tmp_path, "[a](a.md#a-heading) [gone](gone.md) [up](../nothing/x.py)\n", "a.md")
    assert broken_links(docs / "index.md") == ["gone.md", "../nothing/x.py"]


def test_a_design_pointer_to_a_missing_page_or_heading_is_found(tmp_path: Path) -> None:
    _docs(tmp_path, "", "a.md")
    module = tmp_path / "renderer" / "m.py"
    module.parent.mkdir()
    module.write_text(
        '"""Summary.\n\nDesign: docs/a.md#a-heading-with-code\nDesign: docs/a.md#nope\n'
        'Design: docs/gone.md\n"""\n',
        encoding="utf-8",
    )
    (tmp_path / "workflows").mkdir()
    assert broken_design_pointers(tmp_path) == [
        "renderer/m.py: docs/a.md#nope",
        "renderer/m.py: docs/gone.md#",
    ]


def test_a_quoted_path_to_nothing_is_found(tmp_path: Path) -> None:
    docs = _docs(tmp_path, "", "a.md")
    (tmp_path / "renderer").mkdir()
    (tmp_path / "renderer" / "x.py").write_text("", encoding="utf-8")
    page = docs / "b.md"
    page.write_text(
        "`renderer/x.py:12` `renderer/gone.py` `docs/a.md` `workflows/<probe>.py` `a b/c`\n"
        "`/work/shared/ref.md` `/proc/driver/nvidia/version` `gpuplane.dev/pool`\n"
        "```\n`renderer/in-a-fence.py`\n```\n",
        encoding="utf-8",
    )
    assert quoted_paths(page, tmp_path) == [
        "renderer/x.py",
        "renderer/gone.py",
        "docs/a.md",
        "/work/shared/ref.md",
    ]
    assert missing_paths(page, tmp_path) == ["renderer/gone.py", "/work/shared/ref.md"]


def test_a_path_the_makefile_builds_may_be_quoted_before_it_is_built(tmp_path: Path) -> None:
    """`build/nca` exists once `make test` has built it; a checkout whose `build/` holds only
    something else (a wheel's build, say) has none yet."""
    docs = _docs(tmp_path, "[a](a.md)\n", "a.md")
    (tmp_path / "build").mkdir()
    (docs / "a.md").write_text("Run `build/nca/bin/nca`, then read `build/other`.\n")
    (tmp_path / "Makefile").write_text("NCA := build/nca\n$(NCA)/bin/nca: x\n")
    assert missing_paths(docs / "a.md", tmp_path) == ["build/other"]
