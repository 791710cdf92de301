"""The loader against real broken and hostile files: one precise finding each, exit 1, no write."""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.findings.diagnostics import Location, SourceMap
from renderer.inputs import source
from renderer.inputs.source import MAX_FILE_BYTES, load_bytes, load_file
from tests.conftest import tree

HOSTILE = Path(__file__).parent / "cases" / "hostile"

# Each expectation was checked by reading the file: the line and column are those of the
# offending token (1-based).
EXPECTED = {
    "bomb.yaml": [("yaml-alias-bomb", 11, 15)],
    "duplicate-key.yaml": [("yaml-duplicate-key", 8, 3)],
    "empty.yaml": [("yaml-empty", 0, 0)],
    "latin1.yaml": [("yaml-encoding", 6, 30)],
    "multi-doc.yaml": [("yaml-multiple-documents", 6, 1)],
    "python-tag.yaml": [("yaml-tag", 6, 16), ("yaml-tag", 7, 11)],
    "syntax.yaml": [("yaml-syntax", 7, 8)],
    "tabs.yaml": [("yaml-tab-indent", 6, 1)],
}


def test_every_hostile_file_has_an_expectation() -> None:
    assert sorted(p.name for p in HOSTILE.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_file_gets_precise_findings(name: str) -> None:
    result = load_file(HOSTILE / name, f"teams/{name}")
    assert result.document is None
    found = [(d.rule, d.at.line, d.at.col) for d in result.diagnostics]
    assert found == EXPECTED[name]
    assert all(d.at.file == f"teams/{name}" and d.hint for d in result.diagnostics)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_file_in_a_platform_fails_the_run_and_writes_nothing(
    name: str, platform: Path, gpuplane, crds: Path
) -> None:
    shutil.copy(HOSTILE / name, platform / "teams" / name)
    before = tree(platform / "rendered")
    result = gpuplane("-C", str(platform), "render", "--crds", str(crds))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    rule, line, col = EXPECTED[name][0]
    where = f"teams/{name}:{line}:{col}" if line else f"teams/{name}"
    assert f"{where}: error[{rule}]" in result.output
    # the rest of the platform is fine: no other file is blamed
    assert all(
        ln.startswith(f"teams/{name}") for ln in result.output.splitlines() if ": error[" in ln
    )
    assert tree(platform / "rendered") == before


def test_python_tag_is_never_constructed(tmp_path: Path) -> None:
    marker = Path("/tmp/gpuplane-pwned")
    marker.unlink(missing_ok=True)
    load_file(HOSTILE / "python-tag.yaml", "teams/python-tag.yaml")
    assert not marker.exists()


def test_billion_laughs_fails_small() -> None:
    """Nine levels of nine aliases is 9**9 (387 million) nodes once expanded."""
    tracemalloc.start()
    try:
        result = load_file(HOSTILE / "bomb.yaml", "teams/bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [d.rule for d in result.diagnostics] == ["yaml-alias-bomb"]
    assert peak < 5 * 1024 * 1024


def test_huge_file_is_refused_without_reading_past_the_limit(tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("w") as stream:
        stream.write("apiVersion: gpuplane.dev/v1alpha1\nkind: Team\nspec:\n  description: |\n")
        line = "    " + "x" * 95 + "\n"
        for _ in range(MAX_FILE_BYTES // len(line) + 10):
            stream.write(line)
    result = load_file(huge, "teams/huge.yaml")
    assert [d.rule for d in result.diagnostics] == ["yaml-too-large"]
    assert result.diagnostics[0].message == (
        f"file is {huge.stat().st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}"
    )


def test_deep_nesting_is_refused() -> None:
    result = load_bytes(b"a: " + b"[" * 10_000 + b"]" * 10_000 + b"\n", "teams/deep.yaml")
    assert [d.rule for d in result.diagnostics] == ["yaml-too-deep"]


def test_all_duplicate_keys_are_reported_at_once() -> None:
    result = load_bytes(b"a: 1\nb: 2\na: 3\nc: {x: 1, x: 2}\nb: 4\n", "t.yaml")
    assert [(d.rule, d.at.line) for d in result.diagnostics] == [
        ("yaml-duplicate-key", 3),
        ("yaml-duplicate-key", 4),
        ("yaml-duplicate-key", 5),
    ]
    assert result.diagnostics[0].notes[0][1].line == 1


def test_yaml_1_2_scalars() -> None:
    """No Norway problem; versions that look like numbers stay numbers (the schema then asks
    for quotes); timestamps stay strings."""
    data = load_bytes(
        b"a: NO\nb: yes\nc: 1.30\nd: 010\ne: 0x1F\nf: 2026-01-01\ng: ~\nh: true\n", "t.yaml"
    ).document
    assert data is not None
    assert data.data == {
        "a": "NO",
        "b": "yes",
        "c": 1.3,
        "d": 10,
        "e": 31,
        "f": "2026-01-01",
        "g": None,
        "h": True,
    }


def test_positions_of_keys_and_values() -> None:
    doc = load_bytes(b"spec:\n  gpus:\n    - {pool: a, nominal: 4}\n", "t.yaml").document
    assert doc is not None
    assert str(doc.locate(("spec", "gpus", 0, "nominal"))) == "t.yaml:3:26"
    assert str(doc.locate_key(("spec", "gpus"))) == "t.yaml:2:3"
    # a path below a scalar falls back to the nearest located ancestor
    assert str(doc.locate(("spec", "gpus", 0, "nominal", "x"))) == "t.yaml:3:26"


def test_merge_keys_and_small_aliases_are_fine() -> None:
    doc = load_bytes(b"base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "t.yaml").document
    assert doc is not None
    assert doc.data["other"] == {"y": 3, "x": 1}


def test_non_string_keys_and_infinities_are_refused() -> None:
    result = load_bytes(b"1: a\nb: .inf\n", "t.yaml")
    assert [(d.rule, d.at.line) for d in result.diagnostics] == [
        ("yaml-value", 1),
        ("yaml-value", 2),
    ]


def test_a_team_file_nested_thirty_thousand_deep_is_refused_not_a_crash(tmp_path: Path) -> None:
    """ruamel's C composer recurses once per level: 30,000 nested `[` (a 60 KB file) overflowed
    the C stack and killed the process with no output. The loader now counts the depth on the
    parser's events first, so the file gets the same `yaml-too-deep` finding as 65 levels."""
    import subprocess
    import sys

    path = tmp_path / "deep.yaml"
    path.write_text("spec: " + "[" * 30_000 + "]" * 30_000 + "\n")
    code = (
        "import sys\nfrom pathlib import Path\nfrom renderer.inputs.source import load_file\n"
        "r = load_file(Path(sys.argv[1]), 'teams/deep.yaml')\n"
        "print([(d.rule, d.at.line, d.at.col) for d in r.diagnostics])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    # the document's mapping, then 65 sequences: the 65th `[` is column 6 + 65
    assert done.stdout.strip() == "[('yaml-too-deep', 1, 71)]"


def test_positions_pickle_compactly_and_read_back_the_same(tmp_path: Path) -> None:
    """The render index keeps every input's positions pickled; read back, each value and key is
    where the file wrote it, and pickling again gives the same bytes without reading them."""
    import pickle

    path = tmp_path / "team.yaml"
    path.write_text(
        "metadata:\n  name: a\nspec:\n  namespaces:\n    - name: a-train\n      cluster: east\n"
    )
    loaded = load_file(path, "teams/team.yaml").document
    assert loaded is not None
    source = loaded.source
    again = pickle.loads(pickle.dumps(source))
    assert again == source
    assert again.locate(("spec", "namespaces", 0, "cluster")) == Location("teams/team.yaml", 6, 16)
    assert again.locate_key(("spec", "namespaces", 0, "cluster")) == Location(
        "teams/team.yaml", 6, 7
    )
    assert again.locate(("spec", "nowhere")) == Location("teams/team.yaml", 4, 3)
    unread = pickle.loads(pickle.dumps(source))
    assert pickle.dumps(unread) == pickle.dumps(source) == pickle.dumps(again)
    # a position in another file (none the loader makes, but a map may hold one) is kept
    mixed = SourceMap("a.yaml", {(): Location("b.yaml", 2, 3)}, {})
    assert pickle.loads(pickle.dumps(mixed)).locate(("x",)) == Location("b.yaml", 2, 3)
    # the loader's map holds (line, column) pairs until a position is asked for: it equals,
    # and pickles as, the same map made of Locations
    made = SourceMap("teams/team.yaml", dict(source.values), dict(source.keys))
    fresh = load_file(path, "teams/team.yaml").document
    assert fresh is not None and fresh.source == made
    assert pickle.dumps(fresh.source) == pickle.dumps(made) == pickle.dumps(source)


# --- the composer made once per process (renderer.inputs.source._Loader) ---------------------

_TRICKY_SCALARS = (
    *("yes", "No", "on", "OFF", "y", "true", "False", "null", "~", "", "0", "010", "0o10"),
    *("0x1F", "0b101", "1_000", "+1", ".5", "1e3", ".inf", "-.Inf", ".NaN", "12:30:45"),
    *("2024-01-01", "2024-01-01T10:00:00Z", "'yes'", "'0'", '"true"', "!!str 1", "!!int '3'"),
    "x" * 200,
)


def _shape(node: Any, seen: dict[int, int]) -> Any:
    """A node graph as comparable data: kind, tag, value, style, anchor and both marks of
    every node, an alias as the number of the node it repeats."""
    if id(node) in seen:
        return ("alias", seen[id(node)])
    seen[id(node)] = len(seen)
    marks = tuple((m.line, m.column, m.index) for m in (node.start_mark, node.end_mark))
    head = (type(node).__name__, str(node.tag), marks, getattr(node, "style", None), node.anchor)
    if isinstance(node.value, str):
        return (*head, node.value)
    if node.value and isinstance(node.value[0], tuple):
        return (*head, [(_shape(k, seen), _shape(v, seen)) for k, v in node.value])
    return (*head, [_shape(item, seen) for item in node.value])


def _composed(text: str, compose: Any) -> Any:
    try:
        return [_shape(node, {}) for node in compose(text)]
    except Exception as err:  # the same error, with the same words, from both
        return (type(err).__name__, str(err))


@pytest.mark.parametrize("scalar", _TRICKY_SCALARS)
def test_the_composer_gives_the_nodes_ruamels_safe_loader_gives(scalar: str) -> None:
    """`_documents` is `YAML(typ="safe", pure=False).compose_all` with the resolver's answers
    remembered: every scalar the YAML 1.1 and 1.2 resolvers read apart, as a value, a list item,
    a key and a whole document, twice (the second time from what was remembered), with a
    `%YAML 1.1` directive (the C parser resolves by YAML 1.2's rules all the same: `yes` stays
    a string) and with anchors and aliases."""
    texts = [
        f"k: {scalar}\n",
        f"- {scalar}\n- [{scalar}, {{a: {scalar}}}]\n",
        f"{scalar}: v\n" if scalar else "'': v\n",
        f"%YAML 1.1\n---\nk: {scalar}\n",
        f"a: &x {{k: {scalar}}}\nb: *x\n",
    ]
    for text in texts:
        for _ in range(2):
            ours = _composed(text, source._documents)
            assert ours == _composed(text, lambda t: source._yaml().compose_all(t))
    one = next(source._documents("%YAML 1.1\n---\nk: yes\n"))
    assert [str(v.tag) for _, v in one.value] == ["tag:yaml.org,2002:str"]


def test_the_parser_gives_ruamels_events_and_errors() -> None:
    def events(text: str, parse: Any) -> Any:
        try:
            return [
                (type(e).__name__, e.start_mark.line, getattr(e, "value", None))
                for e in parse(text)
            ]
        except Exception as err:  # the same error, with the same words, from both
            return (type(err).__name__, str(err))

    for text in ("a: [1, {b: c}]\n", "a: b: c\n", "a: 'unclosed\n", "- - - x\n"):
        assert events(text, source._events) == events(text, lambda t: source._yaml().parse(t))


# --- the nesting bound told from the lines ---------------------------------------------------------

_TREES = st.recursive(
    st.one_of(st.none(), st.integers(), st.sampled_from(["a", "b: c", "- d", "? e", "x:", "[f]"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["k", "l", "m-n", "o: p"]), inner, max_size=3),
    ),
    max_leaves=40,
)


def _event_depth(text: str) -> int:
    """The most collections the parser's events hold open at once (what `_nesting_problem`
    counts)."""
    depth = deepest = 0
    for event in source._events(text):
        name = type(event).__name__
        if name in ("MappingStartEvent", "SequenceStartEvent"):
            depth += 1
            deepest = max(deepest, depth)
        elif name in ("MappingEndEvent", "SequenceEndEvent"):
            depth -= 1
    return deepest


def _styles(data: Any) -> list[str]:
    """`data` as PyYAML and ruamel.yaml write it: block, block with flow leaves, and ruamel's
    indentless and offset sequences (`key:` then `- a` at the key's column; `- - a` compact)."""
    import io

    import yaml as pyyaml
    from ruamel.yaml import YAML

    texts = [
        pyyaml.safe_dump(data, default_flow_style=False),
        pyyaml.safe_dump(data, default_flow_style=None),
    ]
    for mapping, sequence, offset in ((2, 2, 0), (2, 4, 2), (4, 2, 0), (3, 3, 1)):
        writer = YAML(typ="safe", pure=True)
        writer.default_flow_style = False
        writer.indent(mapping=mapping, sequence=sequence, offset=offset)
        out = io.StringIO()
        writer.dump(data, out)
        texts.append(out.getvalue())
    return texts


@settings(max_examples=300, derandomize=True)
@given(_TREES)
def test_the_depth_bound_is_never_below_the_parsers_depth(data: Any) -> None:
    """`_depth_bound` lets a file skip the events pass only when its lines cannot nest beyond
    `MAX_DEPTH`: on trees written in every writer's style it is at least the depth the parser's
    events reach."""
    for text in _styles(data):
        bound = source._depth_bound(text)
        assert bound is not None and bound >= _event_depth(text), text


@pytest.mark.parametrize(
    "text",
    [
        "- - - - x\n",  # compact sequences: four on one line
        "a:\n- b:\n  - c:\n    - d\n",  # indentless sequences at their keys' columns
        "- a:\n    - b: [c, {d: [e]}]\n",  # flow inside block
        "? - a\n  - b\n: - c\n",  # a complex key that is a sequence
        "- -\n  - -\n    - x\n",  # an indicator ending its line
        "a: {b: {c: {d: [[[[e]]]]}}}\n",
        # the tight ones: a mapping and an indentless sequence at every column, each entry's
        # content on the next line one column in; and one line of compact entries
        "a:\n-\n b:\n -\n  c:\n  -\n   d:\n   -\n    e:\n    -\n     x\n",
        "- - - - - - - - - - - - x\n",
    ],
)
def test_the_depth_bound_on_hand_written_nesting(text: str) -> None:
    assert source._depth_bound(text) >= _event_depth(text)


def test_a_tab_or_a_carriage_return_leaves_the_bound_to_the_parser() -> None:
    assert source._depth_bound("a:\n\t- b\n") is None
    assert source._depth_bound("a:\r  b: c\r") is None
