"""Load one input file into plain data that remembers where every node came from.

The loader is the first line of defence: the files arrive in pull requests from anyone, so it
refuses what a config file never needs (tags, alias bombs, several documents, tabs, huge files,
bytes that are not UTF-8) with one precise finding each, and never builds Python objects from tags.
It works on ruamel.yaml's node graph (compose), so aliases are never expanded while parsing and
every key and value keeps its line and column.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    Event,
    MappingEndEvent,
    MappingStartEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver

try:
    from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - ruamel.yaml without its C extension
    CParser = None

from renderer.findings.diagnostics import Diagnostic, Location, PathKey, SourceMap
from renderer.findings.rules import document_rule

MAX_FILE_BYTES = 1024 * 1024
"""An input file is a few kilobytes; one over a megabyte is a mistake or an attack."""

MAX_EXPANDED_NODES = 10_000
"""The most nodes a file may hold once its aliases are expanded (a billion-laughs file has 10**9)."""

MAX_DEPTH = 64
"""Deeper nesting than this is never a real config and would exhaust the parser's stack."""

_TAG = "tag:yaml.org,2002:"
_ALLOWED_SCALAR_TAGS = {f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null")}
_TIMESTAMP = f"{_TAG}timestamp"
_MERGE = f"{_TAG}merge"
_MAP = f"{_TAG}map"
_SEQ = f"{_TAG}seq"

for _rule, _doc in {
    "yaml-syntax": """The file is not valid YAML.

The parser's message says what it expected and where. Common causes: an unclosed quote or
bracket, a `key: value` line indented inconsistently, or a colon inside an unquoted value.

To satisfy it: fix the YAML at the line and column the finding names (the mistake is often on
the line before). Close the quote or bracket; indent every key of one mapping by the same number
of spaces; quote a value that holds `: ` or starts with `*`, `&`, `!`, `%` or `@`, e.g.
`description: "Note: staging only"`. A finding that says `cannot read file` is about the
file's permissions, not its text.""",
    "yaml-encoding": """Input files must be UTF-8 text.

A byte sequence that is not UTF-8 usually means the file was saved in another encoding (Latin-1,
UTF-16) or is not a text file at all.

To satisfy it: save the file as UTF-8 (a byte-order mark is accepted), in the editor or with
`iconv -f latin1 -t utf-8 pools/a.yaml > a.yaml && mv a.yaml pools/a.yaml`. The finding names the
line and column of the first byte that is not UTF-8.""",
    "yaml-tab-indent": """Indent with spaces, never tabs.

YAML forbids tabs in indentation, and editors disagree on how wide a tab is, so a tab makes the
structure ambiguous to a reviewer even where a parser would accept it.

To satisfy it: replace the tabs at the start of each line the findings name with spaces (the
example files indent by two per level), e.g. `expand -i -t 2 a.yaml > b.yaml && mv b.yaml a.yaml`.
Tabs after the indentation, inside values, are fine.""",
    "yaml-duplicate-key": """A mapping holds the same key twice.

YAML parsers keep one of the two values silently (usually the last), so the file says two
different things and a reviewer sees the one that is not used.

To satisfy it: keep one of the two keys (the note points at the first) and move into it what
the other held that you still need. Repeated `<<:` merge keys are not duplicates.""",
    "yaml-tag": """YAML tags (`!!python/object`, `!!binary`, `!custom` and friends) are refused.

Tags ask the loader to build arbitrary objects; gpuplane's inputs are plain maps, lists, strings,
numbers and booleans, so a tag is either a mistake or an attempt to run code at load time.

To satisfy it: remove the tag and write the value as a plain map, list, string, number or
boolean. Only YAML's standard scalar tags (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`,
`!!timestamp`) and `<<:` merge keys are accepted; `!!binary`, `!!set`, `!!omap`,
`!!python/...` and every local `!tag` are not.""",
    "yaml-alias-bomb": f"""Anchors and aliases may not expand a file beyond {MAX_EXPANDED_NODES:,} nodes.

Aliases let a tiny file describe an exponentially large document (the "billion laughs" attack).
gpuplane counts the expanded size without expanding it and refuses such files at once, so a
hostile pull request cannot exhaust CI's memory.

To satisfy it: write the repeated values out instead of aliases (`*name`) of anchors (`&name`)
that themselves hold aliases. An anchor reused a few times is fine: the limit counts the
nodes of the document once every alias is expanded.""",
    "yaml-too-deep": f"""Nesting deeper than {MAX_DEPTH} levels is refused.

No gpuplane object nests that deep; such a file would only exhaust the parser's stack.

To satisfy it: flatten the structure to what the object's schema describes; the deepest real
field is a handful of levels down (`spec.fabric.rdma.resource` of a pool). A file this deep was
usually generated by mistake.""",
    "yaml-too-large": f"""Input files may not exceed {MAX_FILE_BYTES // 1024} KiB.

A cluster, pool, team or queue file is a few kilobytes. A file past the limit is refused before
it is read, so a huge file cannot slow down or exhaust CI.

To satisfy it: remove what does not belong in the object (pasted command output, generated
data, long comment blocks), or split it: one team, pool, queue or cluster per file, each in
`<folder>/<name>.yaml`.""",
    "yaml-multiple-documents": """One object per file: a file may hold only one YAML document.

gpuplane names each object after its file (`teams/vision.yaml` holds the Team `vision`), which
keeps reviews and CODEOWNERS simple.

To satisfy it: move each document (each part after a `---` line) into a file of its own in
the folder of its kind, named after its `metadata.name`. One `---` at the top of a file is fine.""",
    "yaml-empty": """The file holds no object.

Every input file must contain one object with apiVersion, kind, metadata and spec; a file of
comments only is empty too.

To satisfy it: delete the file, or fill it in: `gpuplane new pool NAME` (or `cluster`, `team`,
`queue`) writes a starting point with every value still to fill in marked.""",
    "yaml-value": """A value that YAML parses but no object field can hold.

Infinite or NaN numbers, and keys that are not strings, have no meaning in gpuplane's inputs.

To satisfy it: write a finite number instead of `.inf` or `.nan`, and quote a mapping key that
YAML reads as something else than a string, e.g. `"1": ...` or `"true": ...`.""",
}.items():
    document_rule(_rule, "load", _doc)


@dataclass(frozen=True, slots=True)
class Document:
    """One loaded file: plain data plus where each value (and each mapping key) was written."""

    path: str
    data: Any
    source: SourceMap
    plain_text: Mapping[PathKey, str]
    """How non-string scalars were written (`1.30` reads as 1.3), for hints that quote them."""

    def locate(self, path: PathKey) -> Location:
        return self.source.locate(path)

    def locate_key(self, path: PathKey) -> Location:
        return self.source.locate_key(path)


@dataclass(frozen=True, slots=True)
class LoadResult:
    document: Document | None
    diagnostics: tuple[Diagnostic, ...]


def load_file(file: Path, display: str) -> LoadResult:
    """Read and check one input file; `display` is the repository-relative name used in reports."""
    raw = read_input(file, display)
    if isinstance(raw, LoadResult):
        return raw
    return load_bytes(raw, display)


def read_input(file: Path, display: str) -> bytes | LoadResult:
    """The file's bytes, or why not: unreadable, or over MAX_FILE_BYTES (never read past it).
    The size is asked for only of a file found too large: a stat of every file took 20 ms of
    loading 2,456 team files from the render index."""
    try:
        with open(file, "rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
            size = os.fstat(stream.fileno()).st_size if len(raw) > MAX_FILE_BYTES else 0
    except OSError as err:
        return _fail("yaml-syntax", f"cannot read file: {err.strerror}", Location(display), None)
    if len(raw) > MAX_FILE_BYTES:
        return _fail(
            "yaml-too-large",
            f"file is {max(size, len(raw)):,} bytes; the limit is {MAX_FILE_BYTES:,}",
            Location(display),
            "split it, or remove what does not belong in a gpuplane object",
        )
    return raw


def _decode(raw: bytes, display: str) -> str | LoadResult:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        return _fail(
            "yaml-encoding",
            f"byte 0x{raw[err.start]:02x} is not valid UTF-8",
            Location(display, line, col),
            "save the file as UTF-8",
        )
    return text.removeprefix("\ufeff")


def load_bytes(raw: bytes, display: str) -> LoadResult:
    """Check and load the bytes of one input file."""
    text = _decode(raw, display)
    if isinstance(text, LoadResult):
        return text
    tabs = list(_tab_indents(text, display))
    if tabs:
        return LoadResult(None, tuple(tabs))
    return _compose(text, display)


def _tab_indents(text: str, display: str) -> Iterator[Diagnostic]:
    for number, line in enumerate(text.split("\n"), start=1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent and line.strip():
            yield Diagnostic(
                "yaml-tab-indent",
                "tab character used for indentation",
                Location(display, number, indent.index("\t") + 1),
                hint="indent with spaces",
            )


def _yaml() -> YAML:
    """ruamel.yaml's safe loader on its C parser, without looking for plug-ins: by default
    each `YAML()` globs site-packages for them, a tenth of the time of loading a small file."""
    return YAML(typ="safe", pure=False, plug_ins=[])


_RESOLVED: dict[tuple[Any, Any, Any], Any] = {}
"""The tag each (node kind, scalar, implicit flags) resolves to, in this process."""
_RESOLVED_MAX = 200_000
_RESOLVED_LONGEST = 128
"""Only scalars this short are kept: every implicit tag's expression matches a short word or
number, and a hostile file's megabyte strings are not worth holding."""


class _Resolver(VersionedResolver):
    """`YAML(typ="safe")`'s resolver, remembering what it resolved. Resolving is a function of
    the node's kind, its text and its implicit flags: the version its rules are for is YAML 1.2
    for every document, since on the C parser `processing_version` finds no scanner and no
    version to read (a `%YAML 1.1` directive changes nothing; tests/test_loader.py). Asking it
    costs two caught AttributeErrors a node, a third of composing a small file."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        key = (kind, value, implicit)
        found = _RESOLVED.get(key)
        if found is None:
            found = super().resolve(kind, value, implicit)
            short = not isinstance(value, str) or len(value) <= _RESOLVED_LONGEST
            if short and len(_RESOLVED) < _RESOLVED_MAX:
                _RESOLVED[key] = found
        return found


if CParser is not None:

    class _Loader(CParser, _Resolver):  # type: ignore[misc]
        """What `YAML(typ="safe", pure=False).compose_all` and `.parse` build for each call (its
        `XLoader`: the C parser, which composes too, and the resolver), made once: building it,
        and the `YAML` object around it, was a fifth of loading a small file. The constructor
        `XLoader` also carries is never used by composing or parsing."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            self._parser = self._composer = self
            _Resolver.__init__(self, version=None, loadumper=self)


def _events(text: str) -> Iterator[Event]:
    """The parser's events of `text`, as `YAML(typ="safe", pure=False).parse` gives them."""
    if CParser is None:  # pragma: no cover - ruamel.yaml without its C extension
        yield from _yaml().parse(text)
        return
    parser = _Loader(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


def _documents(text: str) -> Iterator[Node]:
    """The composed node graph of each document of `text`, as `YAML(typ="safe",
    pure=False).compose_all` gives them."""
    if CParser is None:  # pragma: no cover - ruamel.yaml without its C extension
        yield from _yaml().compose_all(text)
        return
    composer = _Loader(text)
    try:
        while composer.check_node():
            yield composer.get_node()
    finally:
        composer.dispose()


def _depth_bound(text: str) -> int | None:
    """The most collections `text` can nest, told from its lines without parsing; None where
    the lines cannot tell (a tab, or a carriage return, which YAML also breaks lines at).

    A block collection nested in another starts further right, but for a sequence that is a
    mapping's value, which may start at its key's column: so the collections opened on earlier
    lines around a line's content are at most two per column up to its indentation. Each it
    opens further right sits in an entry whose indicator, and a space, come before it on the
    line (`- `, `? `, `: `). Flow collections hold no block ones, and each has its own `[` or
    `{`. A scalar or comment holding such characters only raises the bound."""
    if "\t" in text or "\r" in text:
        return None
    deepest = 0
    for line in text.split("\n"):
        content = line.lstrip(" ")
        if not content:
            continue
        opened = content.count("- ") + content.count("? ") + content.count(": ")
        deepest = max(deepest, 2 * (len(line) - len(content) + 1) + opened)
    return deepest + text.count("[") + text.count("{")


def _nesting_problem(text: str, display: str) -> Diagnostic | None:
    """Nesting deeper than MAX_DEPTH, found on the parser's events before any tree is built.

    The composer recurses once per level, in C for the fast parser: a 100 KB file of 30,000
    nested `[` overflows the C stack and kills the process (no exception to catch), so depth
    must be known before composing. The event parser keeps a stack of states, not a recursion.
    A syntax error here is left for the composer to report with its position. A file whose
    lines cannot nest that deep (`_depth_bound`, every input file written by hand) is not
    parsed for it."""
    bound = _depth_bound(text)
    if bound is not None and bound <= MAX_DEPTH + 1:
        return None
    depth = 0
    try:
        for event in _events(text):
            if isinstance(event, (MappingStartEvent, SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH + 1:  # the document's own collection is the builder's 0
                    mark = event.start_mark
                    return Diagnostic(
                        "yaml-too-deep",
                        f"nesting deeper than {MAX_DEPTH} levels",
                        Location(display, mark.line + 1, mark.column + 1),
                        hint="flatten the structure: no gpuplane input nests this deep",
                    )
            elif isinstance(event, (MappingEndEvent, SequenceEndEvent)):
                depth -= 1
    except (YAMLError, RecursionError):
        return None
    return None


def _compose(text: str, display: str) -> LoadResult:
    if (deep := _nesting_problem(text, display)) is not None:
        return LoadResult(None, (deep,))
    try:
        documents = _documents(text)
        first = next(documents, None)
        second = next(documents, None) if first is not None else None
    except (YAMLError, RecursionError) as err:
        return _parse_error(err, text, display)
    if first is None or _is_null(first):
        return _fail(
            "yaml-empty",
            "the file holds no object",
            Location(display),
            "add the object or delete the file",
        )
    if second is not None:
        where = _loc(display, second)
        return _fail(
            "yaml-multiple-documents",
            "a second YAML document starts here; one object per file",
            where,
            "move each document into a file of its own, named after its metadata.name",
        )
    builder = _Builder(display)
    problems = builder.check(first)
    if problems:
        return LoadResult(None, tuple(problems))
    data = builder.build(first, ())
    if builder.problems:
        return LoadResult(None, tuple(builder.problems))
    source = SourceMap.of_marks(display, builder.values, builder.keys)
    return LoadResult(Document(display, data, source, builder.plain_text), ())


def _parse_error(err: YAMLError | RecursionError, text: str, display: str) -> LoadResult:
    if isinstance(err, MarkedYAMLError) and (dedented := _dedented_key(err, text, display)):
        return LoadResult(None, (dedented,))
    if isinstance(err, MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = Location(display, mark.line + 1, mark.column + 1) if mark else Location(display)
        problem = err.problem or err.context or "invalid YAML"
        return _fail("yaml-syntax", str(problem), where, _syntax_hint(str(problem)))
    if isinstance(err, RecursionError):
        return _fail("yaml-too-deep", "nesting is too deep to parse", Location(display), None)
    return _fail("yaml-syntax", str(err).splitlines()[0], Location(display), None)


MAX_STREAM_DOCUMENTS = 200
"""The most YAML documents, empty ones included, that a multi-document file may hold. A file for
`kubectl apply -f` holds a handful; parsing the 260,000 empty documents that fit in a megabyte
takes seconds."""

MAX_STREAM_NODES = 100_000
"""The most nodes all documents of a multi-document file may hold together, aliases expanded
(one document of them may hold them all: a job file's ConfigMap of a few thousand keys is no
attack; `load_file`'s inputs keep MAX_EXPANDED_NODES per file)."""


@dataclass(frozen=True, slots=True)
class StreamResult:
    """The documents of a multi-document file that hold something, in file order (empty,
    `null` and comment-only documents are left out, as kubectl skips them), or why none."""

    documents: tuple[Document, ...]
    diagnostics: tuple[Diagnostic, ...]


def load_stream(file: Path, display: str) -> StreamResult:
    """Every document of a multi-document YAML file, the input of `kubectl apply -f` (a job file
    for `gpuplane fit`), with `load_file`'s protections: size, encoding, tags, alias bombs, depth,
    duplicate keys, plus a cap on the number of documents and on their nodes together. Tabs are
    left to the parser: it refuses them where they indent, and in a block scalar they are text."""
    raw = read_input(file, display)
    if isinstance(raw, LoadResult):
        return StreamResult((), raw.diagnostics)
    text = _decode(raw, display)
    if isinstance(text, LoadResult):
        return StreamResult((), text.diagnostics)
    if (deep := _nesting_problem(text, display)) is not None:
        return StreamResult((), (deep,))
    try:
        return _compose_stream(text, display)
    except (YAMLError, RecursionError) as err:
        return StreamResult((), _parse_error(err, text, display).diagnostics)


def _compose_stream(text: str, display: str) -> StreamResult:
    documents: list[Document] = []
    total = 0
    for count, node in enumerate(_documents(text), start=1):
        if count > MAX_STREAM_DOCUMENTS:
            return _stream_fail(
                "yaml-too-large",
                f"the file holds more than {MAX_STREAM_DOCUMENTS} YAML documents",
                _loc(display, node),
                "split it: a job file holds the job and the few objects it needs",
            )
        if node is None or _is_null(node):
            continue
        builder = _Builder(display, MAX_STREAM_NODES)  # one document may use the whole budget
        problems = builder.check(node)
        if problems:
            return StreamResult((), tuple(problems))
        total += builder.size
        if total > MAX_STREAM_NODES:
            return _stream_fail(
                "yaml-alias-bomb",
                f"the documents hold more than {MAX_STREAM_NODES:,} nodes together",
                _loc(display, node),
                "split the file, or write the repeated values out instead of aliases",
            )
        data = builder.build(node, ())
        if builder.problems:
            return StreamResult((), tuple(builder.problems))
        source = SourceMap.of_marks(display, builder.values, builder.keys)
        documents.append(Document(display, data, source, builder.plain_text))
    return StreamResult(tuple(documents), ())


def _stream_fail(rule: str, message: str, at: Location, hint: str) -> StreamResult:
    return StreamResult((), (Diagnostic(rule, message, at, hint=hint),))


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and _tag(node) == f"{_TAG}null"


_KEY_LINE = re.compile(r"( *)([^\s#:-][^:#]*):(\s|$)")


def _dedented_key(err: MarkedYAMLError, text: str, display: str) -> Diagnostic | None:
    """A key written less indented than the keys around it, where the parser stumbles later.

    `topology:` moved to column 1 inside `spec` parses as a new top-level key; its own children
    parse too, and the parser only fails at the next key back at spec's indentation, which the
    problem mark points at, lines below. The culprit is the last line between the context mark
    (the mapping the parser was in) and the problem mark at the context's indentation, when it
    is a key that interrupts keys indented as the problem's, and what follows it is nested as
    under such a key. Anything else keeps the parser's own position."""
    problem, context = err.problem_mark, err.context_mark
    lines = text.split("\n")
    if problem is not None and "mapping values are not allowed" in str(err.problem):
        return _dedented_scalar_key(lines, problem.line, display)
    if problem is None or context is None or "expected key" not in str(err.problem):
        return None
    deeper = problem.column
    if deeper <= context.column or problem.line >= len(lines):
        return None
    written = [
        (number, len(line) - len(line.lstrip(" ")), line)
        for number, line in enumerate(lines[context.line : problem.line], start=context.line)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    at_context = [i for i, (_, indent, _) in enumerate(written) if indent <= context.column]
    if not at_context or at_context[-1] == 0:
        return None
    last = at_context[-1]  # the key that closed the mapping the problem's key belongs to
    number, indent, line = written[last]
    key = _KEY_LINE.match(line)
    # it interrupts keys at the problem's indentation (the first line above it not nested
    # deeper is one of them), and what follows it is nested as it would be under such a key
    above = next((i for _, i, _ in reversed(written[:last]) if i <= deeper), None)
    if not key or indent != context.column or above != deeper:
        return None
    if not all(_nested_under(deeper, inner, text) for _, inner, text in written[last + 1 :]):
        return None
    return _dedented(key.group(2), number, indent, deeper, display)


def _dedented_scalar_key(lines: list[str], problem: int, display: str) -> Diagnostic | None:
    """`cluster: prod-east` moved to column 1 between keys indented by 2: the key after it
    reads as the rest of its plain value, and the scanner stumbles on that key's colon, one
    line late. The culprit is the line above the problem's, when it is a key indented less
    than both the problem's line and the key line above it, which are indented alike."""
    written = [
        (number, len(line) - len(line.lstrip(" ")), line)
        for number, line in enumerate(lines[: problem + 1])
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if len(written) < 3 or written[-1][0] != problem:
        return None
    (_, indent_above, above), (number, indent, line), (_, deeper, _) = written[-3:]
    key = _KEY_LINE.match(line)
    if not key or indent >= deeper or indent_above != deeper or not _KEY_LINE.match(above):
        return None
    return _dedented(key.group(2), number, indent, deeper, display)


def _dedented(name: str, number: int, indent: int, deeper: int, display: str) -> Diagnostic:
    return Diagnostic(
        "yaml-syntax",
        f"key '{name}' is indented by {indent}, less than the keys before and after it",
        Location(display, number + 1, indent + 1),
        hint=f"indent '{name}:' by {deeper} spaces, as the keys around it",
    )


def _nested_under(indent: int, inner: int, line: str) -> bool:
    """Whether `line`, indented by `inner`, reads as nested under a key indented by `indent`
    as the example files write it: two more spaces, or a list item at the key's own."""
    return inner >= indent + 2 or (inner == indent and line.lstrip().startswith("- "))


def _syntax_hint(problem: str) -> str:
    if "mapping values are not allowed" in problem:
        return "quote values that contain ': ', or fix the indentation of this line"
    if "found unexpected ':'" in problem:
        return "inside { } or [ ], quote values that contain ':' (URLs, for example)"
    if "found character" in problem and "that cannot start any token" in problem:
        return "quote the value"
    if "expected" in problem and any(c in problem for c in "]}"):
        return "close the bracket opened earlier, or put the item on one line"
    return "check the quotes, brackets and indentation at and just before this position"


def _tag(node: Node) -> str:
    """`str(node.tag)`, read from the node's `Tag` itself: the `tag` property and `Tag.__str__`
    on the way were a tenth of loading a file (ruamel.yaml 0.19: `Node.tag` is
    `None if self.ctag is None else str(self.ctag)`, and `Tag.__str__` is `f"{self.trval}"`)."""
    ctag = node.ctag
    return "None" if ctag is None else f"{ctag.trval}"


def _loc(display: str, node: Node) -> Location:
    return Location(display, node.start_mark.line + 1, node.start_mark.column + 1)


def _fail(rule: str, message: str, at: Location, hint: str | None) -> LoadResult:
    return LoadResult(None, (Diagnostic(rule, message, at, hint=hint),))


class _Builder:
    """Walks the node graph: checks it, then builds plain data and the position maps."""

    def __init__(self, display: str, max_nodes: int = MAX_EXPANDED_NODES) -> None:
        self.display = display
        self.max_nodes = max_nodes
        """The most nodes one document may hold, aliases expanded."""
        self.values: dict[PathKey, tuple[int, int]] = {}
        self.keys: dict[PathKey, tuple[int, int]] = {}
        """(line, column) of each value and key, by path: `SourceMap.of_marks`."""
        self.plain_text: dict[PathKey, str] = {}
        self.problems: list[Diagnostic] = []
        self.size = 0
        """The number of nodes `check` counted, aliases expanded."""

    def check(self, root: Node) -> list[Diagnostic]:
        """Tags, depth, duplicate keys and the expanded size, on the graph (aliases unexpanded)."""
        problems: list[Diagnostic] = []
        sizes: dict[int, int] = {}
        aliased = False

        def visit(node: Node, depth: int) -> int:
            nonlocal aliased
            if depth > MAX_DEPTH:
                raise _TooDeep(node)
            known = sizes.get(id(node))
            if known is not None:
                aliased = True  # a node reached a second time: an alias of an anchor
                return known
            tag = _tag(node)
            size = 1
            if isinstance(node, ScalarNode):
                if tag not in _ALLOWED_SCALAR_TAGS and tag not in (_TIMESTAMP, _MERGE):
                    problems.append(self._tag_problem(node, tag))
            elif isinstance(node, SequenceNode):
                if tag != _SEQ:
                    problems.append(self._tag_problem(node, tag))
                for item in node.value:
                    size += visit(item, depth + 1)
            elif isinstance(node, MappingNode):
                if tag != _MAP:
                    problems.append(self._tag_problem(node, tag))
                seen: dict[object, Node] = {}
                for key, value in node.value:
                    if isinstance(key, ScalarNode):
                        if key.value in seen and _tag(key) != _MERGE:
                            first = seen[key.value]
                            problems.append(
                                Diagnostic(
                                    "yaml-duplicate-key",
                                    f"duplicate key '{key.value}'",
                                    _loc(self.display, key),
                                    notes=(("first defined here", _loc(self.display, first)),),
                                    hint="remove one of the two",
                                )
                            )
                        seen.setdefault(key.value, key)
                    size += visit(key, depth + 1) + visit(value, depth + 1)
            sizes[id(node)] = size
            if size > self.max_nodes:
                raise _Bomb(node, size)
            return size

        try:
            self.size = visit(root, 0)
        except _TooDeep as deep:
            return [
                Diagnostic(
                    "yaml-too-deep",
                    f"nesting deeper than {MAX_DEPTH} levels",
                    _loc(self.display, deep.node),
                    hint="flatten the structure",
                )
            ]
        except _Bomb as bomb:
            if not aliased:  # as written, no alias: the document is simply that large
                return [
                    Diagnostic(
                        "yaml-too-large",
                        f"the document holds more than {self.max_nodes:,} nodes",
                        _loc(self.display, bomb.node),
                        hint="split it: an input holds a few hundred values, not thousands",
                    )
                ]
            return [
                Diagnostic(
                    "yaml-alias-bomb",
                    f"aliases expand this document beyond {self.max_nodes:,} nodes",
                    _loc(self.display, bomb.node),
                    hint="write the repeated values out instead of nesting aliases",
                )
            ]
        return problems

    def _tag_problem(self, node: Node, tag: str) -> Diagnostic:
        shown = "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag
        return Diagnostic(
            "yaml-tag",
            f"YAML tag '{shown}' is not allowed",
            _loc(self.display, node),
            hint="remove the tag; inputs hold only plain maps, lists, strings, numbers and booleans",
        )

    def build(self, node: Node, path: PathKey) -> Any:
        if path not in self.values:
            mark = node.start_mark
            self.values[path] = (mark.line + 1, mark.column + 1)
        if isinstance(node, MappingNode):
            return self._build_mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.build(item, (*path, index)) for index, item in enumerate(node.value)]
        value = self._scalar(node)
        if not isinstance(value, str):
            self.plain_text[path] = str(node.value)
        return value

    def _build_mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if _tag(key_node) == _MERGE:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if isinstance(source, MappingNode):
                        for name, value in self._build_mapping(source, path).items():
                            merged.setdefault(name, value)
                continue
            key = self._scalar(key_node) if isinstance(key_node, ScalarNode) else None
            if not isinstance(key, str):
                self.problems.append(
                    Diagnostic(
                        "yaml-value",
                        "mapping keys must be strings",
                        _loc(self.display, key_node),
                        hint="quote the key",
                    )
                )
                continue
            mark = key_node.start_mark
            self.keys[(*path, key)] = (mark.line + 1, mark.column + 1)
            result[key] = self.build(value_node, (*path, key))
        for name, value in merged.items():
            result.setdefault(name, value)
        return result

    def _scalar(self, node: Node) -> Any:
        value = _scalar_value(_tag(node), str(node.value))
        if isinstance(value, float) and not math.isfinite(value):
            self.problems.append(
                Diagnostic(
                    "yaml-value",
                    f"'{node.value}' is not a finite number",
                    _loc(self.display, node),
                    hint="use a finite number",
                )
            )
        return value


def _scalar_value(tag: str, text: str) -> Any:
    """The value of a plain scalar whose tag the YAML 1.2 resolver already chose."""
    if tag == f"{_TAG}null":
        return None
    if tag == f"{_TAG}bool":
        return text.lower() == "true"
    if tag == f"{_TAG}int":
        digits = text.replace("_", "")
        try:
            return int(digits, 0)
        except ValueError:
            return int(digits, 10)
    if tag == f"{_TAG}float":
        lowered = text.lower().replace("_", "")
        if lowered.lstrip("+-") in (".inf", ".nan"):
            sign = -1.0 if lowered.startswith("-") else 1.0
            return math.nan if "nan" in lowered else sign * math.inf
        return float(lowered)
    return text


class _TooDeep(Exception):
    def __init__(self, node: Node) -> None:
        self.node = node


class _Bomb(Exception):
    def __init__(self, node: Node, size: int) -> None:
        self.node = node
        self.size = size


def json_nests_deeper(text: str, limit: int) -> bool:
    """Whether a JSON text's brackets outside strings nest deeper than `limit`: checked before
    parsing, so a hostile file cannot exhaust the parser's stack (`gpuplane cost`'s Prometheus
    export, the probes' result files)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False
