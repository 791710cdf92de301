"""gpuplane's YAML emitter writes exactly what PyYAML writes with the canonical settings, and
hands PyYAML whatever it cannot lay out itself. PyYAML (libyaml's emitter and the pure-Python
one) is the oracle: the expected text is never written by hand."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.output.canonical import _EMITTER, CDumper, PythonDumper, dump, emitted
from renderer.output.emitter import Emitter, Unsupported

TEXTS = [
    "plain",
    "",
    " leading space",
    "trailing space ",
    "two\nlines",
    "ends with a break\n",
    "ends with two\n\n",
    "\n",
    "\nstarts with a break",
    "  indented first line\nsecond",
    "blank\n\nline",
    "spaces only line\n   \nafter",
    "tab\tinside",
    "tab line\n\tindented",
    "key: value",
    "# comment",
    "- dash",
    "&anchor",
    "*alias",
    "!!python/object:os.system",
    "{{ .Values.x }}",
    "true",
    "null",
    "~",
    "123",
    "1e3",
    "0o17",
    "y",
    "=",
    "<<",
    "'single'",
    '"double"',
    "line\x85next",
    "line\u2028sep",
    "\ufeffbom",
    "bell\x07",
    "é ü 中文",
    "emoji 🚀",
    "emoji 🚀\nin a block",
    "---",
    "...",
    "a" * 200,
    "x" * 127 + ": y",
    "%directive",
    "@at",
    "`tick",
    "multi\n  indented\n    deeper\n",
]

NUMBERS: list[Any] = [0, -1, 10**20, 0.5, 1e17, -0.0, float("inf"), float("-inf"), 1.5e-7]


KEPT_BREAKS = {"ends with two\n\n", "\n"}
"""Block scalars with kept final breaks (`|+`): PyYAML ends the document with `...` when one
comes last, so gpuplane's emitter hands such bodies to PyYAML."""


def layouts(value: Any) -> list[Any]:
    """The value in every place a body can hold it (a fresh copy in each place: one object in
    two places is an anchor, tested below)."""
    v = lambda: copy.deepcopy(value)  # noqa: E731
    return [
        {"k": v()},
        {"a": {"b": {"c": v()}}},
        {"list": [v(), v()]},
        {"list": [{"k": v(), "other": v()}]},
        {"list": [[v(), [v()]]]},
        {"a": [{"b": [{"c": v()}]}], "after": v()},
    ]


def assert_same(body: dict[str, Any], direct: bool = True) -> None:
    """PyYAML's two emitters agree, and gpuplane's writes their bytes: itself (`direct`), or by
    handing the body to PyYAML."""
    expected = dump(body, CDumper)
    assert dump(body, PythonDumper) == expected
    assert dump(body) == expected, body
    emitter = Emitter(lambda v: dump(v, CDumper))
    if direct:
        assert emitter.dump(body) == expected, body
    else:
        with pytest.raises(Unsupported):
            emitter.dump(body)


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_every_string_in_every_place(text: str) -> None:
    for body in layouts(text):
        assert_same(body, direct=text not in KEPT_BREAKS)


def test_strings_as_keys() -> None:
    for text in TEXTS:
        if (
            text
            and "\n" not in text
            and len(text) < 128
            and not any(b in text for b in ("\x85", "\u2028", "\u2029"))
        ):
            assert_same({text: "v", "nested": {text: [text]}})


def test_numbers_booleans_null_and_empty_collections() -> None:
    for value in [*NUMBERS, True, False, None, {}, []]:
        for body in layouts(value):
            assert_same(body)
    assert_same({"mixed": [1, "1", True, "true", None, "null", 1.0, "1.0", {}, [], [[]], [{}]]})


@pytest.mark.parametrize(
    "body",
    [
        {"k" * 128: "a key PyYAML writes as an explicit ? key"},
        {"two\nlines": "a multi-line key"},
        {"nel\x85key": "a key with a line break PyYAML counts"},
        {"": "an empty key"},
        {1: "a key that is not a string"},
        {"t": ("a", "tuple")},
        {"k": "x" * 100_001},
        {},
    ],
    ids=["long-key", "multiline-key", "nel-key", "empty-key", "int-key", "tuple", "huge", "empty"],
)
def test_what_it_cannot_lay_out_goes_to_pyyaml(body: dict[Any, Any]) -> None:
    with pytest.raises(Unsupported):
        Emitter(lambda v: dump(v, CDumper)).dump(body)
    try:
        expected = dump(body, CDumper)
    except yaml.representer.RepresenterError:
        with pytest.raises(yaml.representer.RepresenterError):
            dump(body)
        return
    assert dump(body) == expected


def test_a_collection_reached_twice_is_an_anchor_as_pyyaml_writes_it() -> None:
    shared = ["a", "b"]
    body = {"one": shared, "two": shared}
    expected = dump(body, CDumper)
    assert "&id001" in expected
    assert dump(body) == expected
    with pytest.raises(Unsupported):
        _EMITTER.dump(body)


def test_caches_start_again_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    from renderer.output import emitter

    monkeypatch.setattr(emitter, "CACHE_ENTRIES", 3)
    fresh = Emitter(lambda v: dump(v, CDumper))
    body = {f"k{i}": f"value {i}\nline" if i % 2 else f"v{i}" for i in range(10)}
    assert fresh.dump(body) == dump(body, CDumper)
    assert len(fresh._inline) + len(fresh._blocks) <= 3


def _candidates() -> list[str]:
    """Strings made of what `written_as_is` looks at: every one- and two-character string of
    its alphabet and a few others, every case of the words YAML readers take for booleans and
    null, and names as the layers make them."""
    import itertools
    import random

    alphabet = "abyYnNeE0129_./-:# '"
    found = {"".join(p) for n in (1, 2) for p in itertools.product(alphabet, repeat=n)}
    # three characters of every printable ASCII one after a letter: what `: `, ` #`, a last
    # space or colon and every indicator do inside and at the end
    printable = "".join(chr(c) for c in range(0x20, 0x7F))
    found.update(f"a{x}{y}" for x in printable for y in printable)
    found.update(f"a{x}{y}b" for x in printable for y in " :#-?")
    for word in ("yes", "no", "true", "false", "on", "off", "null", "y", "n", "inf", "nan"):
        for cases in itertools.product(*((c.lower(), c.upper()) for c in word)):
            found.add("".join(cases))
            found.add("." + "".join(cases))
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-"
    chance = random.Random(15)
    for _ in range(3000):
        found.add("".join(chance.choice(letters) for _ in range(chance.randint(1, 40))))
    text = letters + " :#'\"{}[],?!&*|>%@`=~\\"
    for _ in range(3000):
        found.add(chance.choice("aZ") + "".join(chance.choice(text) for _ in range(40)))
    found.update(["team-0001-train", "kueue.x-k8s.io/v1beta2", "nvidia.com/gpu", "e1", "E9"])
    return sorted(found)


def test_strings_written_as_is_are_what_pyyaml_writes_as_is() -> None:
    from renderer.output.canonical import written_as_is

    candidates = _candidates()
    as_is = [text for text in candidates if written_as_is(text)]
    for text in as_is:
        for dumper in (CDumper, PythonDumper):
            assert dump({"k": text}, dumper) == f"k: {text}\n", (text, dumper)
            assert dump({text: [text]}, dumper) == f"{text}:\n- {text}\n", (text, dumper)
    # it takes most names, and none of the words another reader would take for something else
    assert len(as_is) > len(candidates) / 2
    assert not {"y", "N", "yes", "No", "TRUE", "fAlSe", "On", "oFF", "null", "NULL"} & set(as_is)
    assert {"team-0001-train", "kueue.x-k8s.io/v1beta2", "e1", "nvidia.com/gpu"} <= set(as_is)
    # and sentences, references and templates as the layers write them
    for text in ("oidc:team-0001", "registry.example.invalid/t/train:replace-me", "a {{ x }} b"):
        assert written_as_is(text), text
    for text in ("a: b", "a #b", "a ", "a:", "no", "ON"):
        assert not written_as_is(text), text


def test_the_emitter_takes_a_string_written_as_is_without_asking_pyyaml() -> None:
    asked: list[Any] = []

    def dump_scalar(value: Any) -> str:
        asked.append(value["k"])
        return dump(value, CDumper)

    emitter = Emitter(dump_scalar, as_is=lambda text: text.startswith("name"))
    body = {"name": "name-a", "list": ["name-b", "other"], "n": "nam"}
    assert emitter.dump(body) == dump(body, CDumper)
    # keys and values alike: only what as_is refused went to PyYAML, each once
    assert asked == ["list", "other", "n", "nam"]


@pytest.mark.parametrize(
    "body",
    [
        {"a": 0.0, "b": -0.0},  # one cache entry for both zeros wrote the first one twice
        {"b": -0.0, "a": 0.0, "c": [0.0, -0.0]},
        {"é" * 63 + "a": 1},  # 127 bytes: a plain key
        {"é" * 64: 1},  # 128 bytes
        {"é" * 65: 1},  # 130 bytes: libyaml writes `? key`, counting bytes, not characters
        {"中" * 43: "v"},
        {"a\r": 1},  # libyaml counts a carriage return as a line break: `? "a\r"`
        {"x": {"a\rb": [1]}},
    ],
    ids=[
        "zeros",
        "zeros-reversed",
        "127-bytes",
        "128-bytes",
        "130-bytes",
        "cjk",
        "cr",
        "cr-nested",
    ],
)
def test_what_libyaml_decides_by_bytes_and_breaks(body: dict[str, Any]) -> None:
    """Found by review: the emitter wrote these unlike libyaml (PyYAML's default dumper here),
    whose bytes are the canonical ones. Its own emitter disagrees with libyaml on some of them,
    so only libyaml is the oracle."""
    expected = dump(body, CDumper)
    assert dump(body) == expected
    try:
        written = Emitter(lambda v: dump(v, CDumper)).dump(body)
    except Unsupported:
        return  # handed to PyYAML, which the line above checked
    assert written == expected


def _typed(value: Any) -> Any:
    """The value with each leaf's type beside it (and a float's sign and NaN told apart), so
    that equal values of other types (1 and 1.0 and True, 0.0 and -0.0) compare unequal."""
    if type(value) is dict:
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if type(value) is list:
        return ("list", [_typed(v) for v in value])
    if type(value) is float:
        return ("float", "nan" if value != value else repr(value))
    return (type(value).__name__, value)


def assert_read_back(body: dict[str, Any]) -> None:
    """What `emitted` lays out, PyYAML's safe loader (what reads a committed file's old self)
    reads back as the body itself, each value of its type, in order."""
    text = emitted(body)
    if text is None:
        return
    assert _typed(yaml.load(text, Loader=yaml.CSafeLoader)) == _typed(body), text


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_what_the_emitter_writes_reads_back_as_the_body(text: str) -> None:
    assert (emitted({"k": text}) is None) == (text in KEPT_BREAKS)
    for body in layouts(text):
        assert_read_back(body)
    for value in [*NUMBERS, float("nan"), True, False, None, {}, []]:
        for body in layouts(value):
            assert_read_back(body)


_LEAF = st.one_of(
    st.text(max_size=12),
    st.sampled_from(TEXTS),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
)


@settings(max_examples=600, derandomize=True)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.recursive(
            _LEAF,
            lambda inner: st.one_of(
                st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
            ),
            max_leaves=12,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_json_body_the_emitter_writes_reads_back_as_itself(body: dict[str, Any]) -> None:
    """The property `CommittedTree` relies on to take a committed file that holds exactly the
    bytes a render writes as the body, unparsed (`writer.plain_manifest_file`): any text, in
    keys and values, any number."""
    assert_read_back(body)
