"""Every program a test skips without is in conftest's TOOLS, and README.md names each with its
package and the command that installs it: a newcomer's skips are never a surprise."""

from __future__ import annotations

import re

from tests.conftest import REPO, TOOLS

README = (REPO / "README.md").read_text()
TESTS = sorted((REPO / "tests").glob("*.py"))


def tools_section() -> str:
    start = README.index("### Tools the tests drive")
    return README[start : README.index("\n## ", start)]


def test_every_required_tool_is_registered() -> None:
    asked = {
        (name, package)
        for path in TESTS
        for name, package in re.findall(
            r'require_tool\(\s*"([^"]+)",\s*"([^"]+)"\s*\)', path.read_text()
        )
    }
    assert asked, "no require_tool calls found: the pattern no longer matches"
    assert {name for name, _ in asked} <= set(TOOLS)
    assert all(TOOLS[name].package == package for name, package in asked)


def test_the_readme_names_every_tool_its_package_and_the_install_command() -> None:
    section = tools_section()
    rows = {row.split("|")[1].strip(): row for row in section.splitlines() if row.startswith("| `")}
    install = next(line for line in section.splitlines() if "apt-get install" in line)
    for name, tool in TOOLS.items():
        row = next((r for key, r in rows.items() if f"`{name}`" in key), None)
        assert row is not None, f"README's tools table has no row for {name}"
        assert f"`{tool.package}`" in row, (name, tool.package)
        if tool.package != "kubectl":  # Debian's kubectl is too old: its row says where from
            assert f" {tool.package}" in install, (name, tool.package)


def test_make_test_installs_mermaids_parser_where_npm_is_here() -> None:
    makefile = (REPO / "Makefile").read_text()
    lines = makefile.splitlines()
    test_target = next(line for line in lines if line.startswith("test:"))
    # `make test` builds `test-tools`, whose one sub-make installs the three side by side
    assert test_target.startswith("test: test-tools ")
    tools = lines[lines.index("test-tools:") + 1]
    assert "-j3" in tools and "$(MERMAID)" in tools and "$(VENV)/.dev" in tools, tools
    assert "npm ci --prefix tests/mermaid" in makefile
