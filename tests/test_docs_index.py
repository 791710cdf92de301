"""docs/index.md is the map of the docs: every page of docs/ is linked from it, every link in it
leads to a file or folder that exists, and every `Design: docs/<page>.md#<anchor>` that a module
docstring points at names a page and a heading that exist."""

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
