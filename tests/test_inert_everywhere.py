"""Every text from an input file is inert wherever gpuplane writes it out: Markdown (the diff
comment, the cluster README, plan's Markdown, the acceptance report), every line the shipped
workflow prints (GitHub Actions obeys `::command::` at the start of a line after leading
whitespace and `##[command]` anywhere in it: actions/runner `ActionCommand.TryParseV2` and
`TryParse`), SARIF and JUnit, Argo CD RBAC CSV lines, kustomize listings and rendered YAML.

The Markdown is read back with markdown-it-py (CommonMark plus GFM tables), the YAML with
PyYAML and ruamel, the JUnit with xml.etree, the CSV with a reader as strict as Go's
encoding/csv that Argo CD uses: what the world parses, not strings we expect.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml
from click.testing import CliRunner
from markdown_it import MarkdownIt
from ruamel.yaml import YAML

from renderer.cli import main
from renderer.cli.reporters import junit, sarif
from renderer.findings.diagnostics import Diagnostic, Location, inert, inert_lines
from renderer.layers.gitops.argocd import csv_field, policy_line
from renderer.output import markdown_escape
from renderer.output.canonical import CDumper, PythonDumper, dump
from tests.conftest import REPO, copy_inputs

HOSTILE = (
    "\x1b[31mred\x1b]0;title\x07",
    "carriage\rreturn",
    "line\n::error file=teams/vision.yaml,line=1::pwned",
    "   ::set-output name=x::y",
    "\u00a0::add-mask::hidden-value",
    "::stop-commands::tok",
    "note ##[error]legacy command ##[set-output name=a;]b",
    "bidi \u202eevil\u202c",
    "zero\u200bwidth",
    "[click](https://evil.example) ![x](https://evil.example/t.png)",
    "# Heading",
    "```\nfenced\n```",
    "<img src=x onerror=alert(1)> <details><summary>s</summary>",
    "</details></table>",
    "@org/team and @octocat ping, #12 and GH-12 refs, www.evil.example",
    "*emphasis* _under_ ~~strike~~ $math$",
    "a | b | c",
    "- list\n1. ordered\n> quote",
    "a, b",
    'say "hi", then',
    "x\x01y\x0bz\x1f",
    "key: value",
    "# comment",
    "&anchor *alias",
    "!!python/object/apply:os.system ['id']",
    '{{ .Values.secret }} {{- include "x" . }}',
    "y",
    "1e3",
    "---",
    "\x85nel\u2028ls\u2029ps\ufeffbom",
)
"""What a hostile team lead can type into a free-text field; the schema accepts any string in
descriptions and contacts (schemas/team.schema.json, queue.schema.json)."""

_MENTION = re.compile(r"(?<![\w&])@\w|(?<!&)#\d|://|www\.|gh-\d", re.IGNORECASE)


def runner_commands(text: str) -> list[str]:
    """The lines of `text` that a GitHub Actions runner would process as commands."""
    found = []
    for line in re.split(r"\r\n|\r|\n", text):
        if line.lstrip().startswith("::") or "##[" in line:
            found.append(line)
    return found


# --- Markdown ---------------------------------------------------------------------------------


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _walk(tokens: Iterable[Any]) -> Iterable[Any]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


LIVE_TOKENS = {"link_open", "image", "html_inline", "html_block", "heading_open", "fence"}
LIVE_TOKENS |= {"code_block", "blockquote_open", "bullet_list_open", "ordered_list_open", "hr"}
LIVE_TOKENS |= {"em_open", "strong_open", "s_open"}


def readme_lists(source: str) -> int:
    """How many bullet lists a document has: the cluster README has one of its own."""
    return [t.type for t in _walk(_md().parse(source))].count("bullet_list_open")


def readme_fences(source: str) -> list[str]:
    """The info string of each fenced block: the cluster README has one of its own, the
    platform's Mermaid diagram, which a description must not close or add to."""
    return [t.info.strip() for t in _walk(_md().parse(source)) if t.type == "fence"]


def assert_inert_markdown(source: str, *, own: Iterable[str] = ()) -> None:
    """No link, image, HTML, heading, fence, list, quote or emphasis beyond the `own` tokens
    the document itself uses; no mention, reference or autolink in text; no invisible or
    runner command."""
    tokens = list(_walk(_md().parse(source)))
    live = sorted({t.type for t in tokens} & (LIVE_TOKENS - set(own)))
    assert not live, (live, source)
    for token in tokens:
        if token.type == "text":
            assert not _MENTION.search(token.content), (token.content, source)
    assert not runner_commands(source), source
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u200b\u202e\u2028\u2029\x85]", source)


@pytest.mark.parametrize("value", HOSTILE)
def test_markdown_text_reads_as_written_and_as_nothing_else(value: str) -> None:
    line = markdown_escape.text(value)
    assert_inert_markdown(line)
    # one paragraph whose text, escapes and entities read back, is the value's words
    (para,) = [t for t in _md().parse(line) if t.type == "inline"]
    shown = "".join(t.content for t in _walk(para.children or []) if t.type == "text")
    assert shown.replace("\u200b", "") == inert(" ".join(value.split())).replace("\u200b", "")


@pytest.mark.parametrize("value", HOSTILE)
def test_a_table_cell_stays_one_cell(value: str) -> None:
    table = f"| a | b |\n|---|---|\n| {markdown_escape.cell(value)} | {markdown_escape.code(value, table=True)} |\n"
    tokens = list(_walk(_md().parse(table)))
    assert [t.type for t in tokens].count("td_open") == 2, table
    assert_inert_markdown(table, own=())


@pytest.mark.parametrize("value", HOSTILE)
def test_code_spans_cannot_be_closed_and_summaries_stay_text(value: str) -> None:
    span = markdown_escape.code(value)
    inline = [t for t in _walk(_md().parse(span)) if t.type not in ("paragraph_open", "inline")]
    assert [t.type for t in inline if t.type != "paragraph_close"] == ["code_inline"], span
    summary = f"<details><summary>{markdown_escape.html(value)}</summary>\n\n- x\n\n</details>\n"
    assert "<" not in markdown_escape.html(value) and not _MENTION.search(
        markdown_escape.html(value).replace("&#8203;", "\u200b")
    )
    assert not runner_commands(summary)


# --- workflow commands, SARIF, JUnit ------------------------------------------------------------


@pytest.mark.parametrize("value", HOSTILE)
def test_no_inert_text_is_a_runner_command_wherever_it_starts_a_line(value: str) -> None:
    for prefix in ("", "  ", "\t", "\u3000"):
        assert not runner_commands(prefix + inert(value))
    assert not runner_commands(inert_lines(f"head\n{value}\n  {value}"))


def test_junit_and_sarif_stay_parseable_with_hostile_values() -> None:
    found = [
        Diagnostic("r", f"message {v}", Location(f"teams/{v}.yaml", 1, 1), hint=v) for v in HOSTILE
    ]
    root = ElementTree.fromstring(junit(found, 1).encode())  # XML 1.0: no \x01 survives raw
    assert len(root.iter("testcase").__next__().attrib) >= 2
    assert len(list(root.iter("testcase"))) == len(HOSTILE)
    log = json.loads(sarif(found, 1))
    assert len(log["runs"][0]["results"]) == len(HOSTILE)
    assert "\x1b" not in json.dumps(log, ensure_ascii=False)


# --- Argo CD RBAC CSV ---------------------------------------------------------------------------


def _go_csv(line: str) -> list[str]:
    """A policy line read as Argo CD reads it: trimmed, then one CSV record, leading spaces of
    each field trimmed, a bare quote an error (Go's encoding/csv without LazyQuotes)."""
    rows = list(csv.reader(io.StringIO(line.strip()), skipinitialspace=True, strict=True))
    assert len(rows) == 1
    for field in rows[0]:
        assert '"' not in field, line
    return rows[0]


@pytest.mark.parametrize("value", (*HOSTILE, "oidc:team,admins", "a,b,c", "plain-group"))
def test_an_rbac_field_reads_back_as_itself_or_is_refused(value: str) -> None:
    try:
        line = policy_line("p", f"proj:x:{value}", "applications", "get", "x/*", "allow")
        group = csv_field(value)
    except ValueError:
        assert '"' in value or not value.isprintable() or value != value.strip()
        return
    assert "\n" not in line and "\r" not in line
    assert _go_csv(line) == ["p", f"proj:x:{value}", "applications", "get", "x/*", "allow"]
    # Argo CD writes a group into `g, <group>, proj:<project>:<role>` as it is
    assert _go_csv(f"g, {group}, proj:x:owners") == ["g", value, "proj:x:owners"]


# --- YAML ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dumper", [PythonDumper, CDumper], ids=["python", "libyaml"])
def test_yaml_round_trips_every_hostile_string_as_a_string(dumper: Any) -> None:
    body = {"metadata": {"annotations": {v: v for v in HOSTILE}}, "items": list(HOSTILE)}
    text = dump(body, dumper)
    assert yaml.safe_load(text) == body
    assert YAML(typ="safe", pure=True).load(text) == body  # a YAML 1.2 reader too
    values = {"metadata": {"annotations": {f"k{i}": v for i, v in enumerate(HOSTILE)}}}
    assert dump(values, PythonDumper) == dump(values, CDumper)  # the same bytes either way


@pytest.mark.slow
def test_every_code_point_that_needs_escapes_is_double_quoted() -> None:
    """The quick whole-string check picks the same strings as asking of each character: a line
    break other than `\\n` (NEL, LS, PS), a byte order mark, or anything not printable but a
    tab, alone or inside other text; and such a string reads back as itself."""
    from renderer.output import canonical

    def by_character(value: str) -> bool:
        return any(
            c in canonical._BREAKS
            or (not c.isprintable() and c not in "\n\t")
            or ord(c) > 0xFFFF  # libyaml escapes these, PyYAML's Python emitter does not
            for c in value
        )

    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # lone surrogates cannot be encoded as UTF-8 in any output
        c = chr(code)
        for value in (c, f"a{c}b", f"line\n{c}\tx"):
            assert canonical._needs_escapes(value) == by_character(value), hex(code)
    for c in canonical._BREAKS:
        text = dump({"k": f"a{c}b"})
        assert text.startswith('k: "'), repr(text)
        assert yaml.safe_load(text) == {"k": f"a{c}b"}


# --- through the CLI ----------------------------------------------------------------------------

ATTACK = "\n".join(HOSTILE[:20])
"""One value carrying the attacks that matter for text outputs."""


def _within(values: tuple[str, ...], most: int) -> list[str]:
    """`values` joined by newlines into as few texts of at most `most` characters as they go."""
    texts = [""]
    for value in values:
        joined = f"{texts[-1]}\n{value}" if texts[-1] else value
        if len(joined) <= most:
            texts[-1] = joined
        else:
            texts.append(value)
    return texts


ATTACK_PARTS = _within(HOSTILE[:20], 254)
"""The same attacks in pieces a team's text fields take: a description or contact of at most
254 characters (docs/api-limits.md); together they carry all of ATTACK."""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _set(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (old, path)
    path.write_text(text.replace(old, new))


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example platform in a git repository, then a commit's worth of hostile free text in
    a team's description, contact and egress description and a queue priority's description."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("HOME", str(tmp_path))
    root = copy_inputs(REPO, tmp_path / "repo")
    _git(root, "-c", "init.defaultBranch=main", "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    team = root / "teams/vision.yaml"
    described, contact, egress = (json.dumps(part) for part in ATTACK_PARTS)
    _set(
        team,
        "description: Computer vision research and the image-understanding services built on it",
        f"description: {described}",
    )
    _set(team, 'contact: "#vision-infra"', f"contact: {contact}")
    _set(team, "description: labelling service and dataset catalog", f"description: {egress}")
    _set(
        root / "queues/prod.yaml",
        "description: Ordinary training runs and experiments",
        f"description: {json.dumps(ATTACK)}",
    )
    return root


def _run(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner(env={"GPUPLANE_CRDS": ""}).invoke(main, ["-C", str(root), *args])
    return result.exit_code, result.output


@pytest.mark.slow
def test_hostile_free_text_is_accepted_and_inert_in_every_output(hostile: Path) -> None:
    outputs: dict[str, str] = {}
    code, outputs["validate"] = _run(hostile, "validate")
    assert code == 0, outputs["validate"]  # free text is allowed: it must be inert, not refused
    for fmt in ("github", "json", "sarif", "junit"):
        outputs[f"validate {fmt}"] = _run(hostile, "validate", "--format", fmt)[1]
    ElementTree.fromstring(outputs["validate junit"].encode())
    code, outputs["render"] = _run(hostile, "render")
    assert code == 0, outputs["render"]
    for args in (("plan",), ("plan", "--format", "markdown"), ("plan", "--format", "json")):
        code, outputs[" ".join(args)] = _run(hostile, *args)
        assert code == 0, outputs[" ".join(args)]
    for fmt in ("text", "markdown", "json"):
        code, outputs[f"diff {fmt}"] = _run(hostile, "diff", "--base", "HEAD", "--format", fmt)
        assert code == 0, outputs[f"diff {fmt}"]
    # what the shipped workflow prints to the log: no line a runner obeys, nothing invisible
    for name, text in outputs.items():
        assert not runner_commands(text), name
        if "json" not in name and "sarif" not in name:
            assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text, name
    # the diff comment shows the hostile text (escaped) and is inert Markdown
    diff_md = outputs["diff markdown"]
    assert "click" in diff_md and "evil" in diff_md
    assert_inert_markdown(
        diff_md, own=("heading_open", "bullet_list_open", "html_block", "strong_open")
    )
    assert "<img" not in diff_md and "@octocat" not in diff_md
    assert diff_md.count("<details>") == diff_md.count("</details>")
    # JSON keeps the exact text for tools
    details = json.dumps(json.loads(outputs["diff json"]), ensure_ascii=False)
    assert "\\u001b" in details or "\x1b" in details
    _check_rendered(hostile)


def _check_rendered(root: Path) -> None:
    rendered = root / "rendered"
    readmes = sorted(rendered.glob("*/README.md"))
    assert readmes
    prod = (rendered / "prod-east/README.md").read_text()
    assert "click" in prod  # the description is shown
    for readme in readmes:  # every cluster's: their guardrail notes differ by provider
        own = readme.read_text()
        assert_inert_markdown(own, own=("heading_open", "bullet_list_open", "fence"))
        assert readme_lists(own) == 1  # the README's own Guardrails list, and no other
        assert readme_fences(own) == ["mermaid"]  # the README's own diagram, and no other
    for readme in readmes:
        text = readme.read_text()
        for table in re.findall(r"(?m)^(\|.*\|)$", text):
            assert len(re.findall(r"(?<!\\)(?:\\\\)*\|", table)) >= 2
    seen = False
    for path in sorted(rendered.rglob("*.yaml")):
        text = path.read_text()
        docs = list(yaml.safe_load_all(text))
        assert docs == list(YAML(typ="safe", pure=True).load_all(text)), path
        seen = seen or any(ATTACK in _strings(d) for d in docs)
    assert seen, "the hostile description reaches a rendered object verbatim (an annotation)"


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_kustomization_listings_hold_only_file_names(hostile: Path) -> None:
    assert _run(hostile, "render")[0] == 0
    for path in sorted((hostile / "rendered").rglob("kustomization.yaml")):
        body = yaml.safe_load(path.read_text())
        for entry in body.get("resources", []):
            assert isinstance(entry, str) and "\n" not in entry and ATTACK not in entry
            assert (path.parent / entry).exists(), (path, entry)


def test_charts_do_not_template_the_values_we_write() -> None:
    """Helm does not execute `{{ }}` in a values file unless a chart passes the value through
    `tpl`; the charts' read paths (shared/charts/*/reads.txt) name `tpl` only as the
    kube-prometheus-stack's `alertmanager.tplConfig` switch, which gpuplane never sets."""
    charts = REPO.parent / "shared" / "charts"
    if not charts.is_dir():
        pytest.skip("../shared/charts is not beside this checkout")
    tpl = sorted(
        line.strip()
        for reads in charts.glob("*/reads.txt")
        for line in reads.read_text().splitlines()
        if re.search(r"(^|\.)tpl", line)
    )
    assert tpl == ["alertmanager.tplConfig"]
    for values in sorted((REPO / "rendered").rglob("values/*.yaml")):
        assert "alertmanager" not in (yaml.safe_load(values.read_text()) or {}), values
