"""A reader of Go composite literals and builder chains, for transcribing Kueue's table tests.

`tools/port_kueue_flavorassigner.py` uses it to turn the case tables of Kueue's
`flavorassigner_test.go` into YAML facts. It parses the subset of Go those tables are written
in (literals, selectors, calls, composite literals, `&`/`*`, `...`, a product of two numbers)
into a small tree; the porting tool gives the tree its meaning. It evaluates nothing itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<raw>`[^`]*`)
  | (?P<string>"(?:\\.|[^"\\])*")
  | (?P<number>\d[\d_]*(?:\.\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\.\.|:=|[{}()\[\],:.&*=+\-/;<>!|])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass
class Tok:
    kind: str
    text: str
    pos: int


def tokens(source: str) -> list[Tok]:
    out = []
    pos = 0
    while pos < len(source):
        match = TOKEN.match(source, pos)
        if match is None:
            raise SyntaxError(f"cannot read Go at offset {pos}: {source[pos : pos + 40]!r}")
        kind = match.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append(Tok(kind, match.group(), pos))
        pos = match.end()
    return out


@dataclass
class Name:
    """An identifier, possibly qualified (`corev1.ResourceCPU`)."""

    text: str


@dataclass
class Lit:
    value: Any


@dataclass
class Call:
    func: Any
    args: list[Any]
    spread: bool = False


@dataclass
class Select:
    target: Any
    name: str


@dataclass
class Composite:
    """`Type{...}`; `type` is None for an elided type (`{Name: "x"}` in a map of structs)."""

    type: str | None
    elements: list[tuple[Any, Any]] = field(default_factory=list)
    """(key, value); key None for a positional element."""


@dataclass
class Index:
    target: Any
    key: Any


@dataclass
class Unary:
    op: str
    operand: Any


@dataclass
class Binary:
    op: str
    left: Any
    right: Any


class Parser:
    def __init__(self, toks: list[Tok], start: int = 0) -> None:
        self.toks = toks
        self.i = start

    def peek(self, offset: int = 0) -> Tok:
        return self.toks[self.i + offset]

    def take(self, text: str | None = None) -> Tok:
        tok = self.toks[self.i]
        if text is not None and tok.text != text:
            raise SyntaxError(f"expected {text!r} at {tok.pos}, found {tok.text!r}")
        self.i += 1
        return tok

    # types -----------------------------------------------------------------------------

    def type_text(self) -> str:
        """A type as text: `[]kueue.PodSet`, `map[a.B]c.D`, `*kueue.Topology`, `kueue.X`."""
        tok = self.peek()
        if tok.text == "[":
            self.take("[")
            self.take("]")
            return "[]" + self.type_text()
        if tok.text == "*":
            self.take("*")
            return "*" + self.type_text()
        if tok.text == "map":
            self.take("map")
            self.take("[")
            key = self.type_text()
            self.take("]")
            return f"map[{key}]" + self.type_text()
        if tok.text == "struct":
            raise SyntaxError("anonymous struct types are not read")
        name = self.take().text
        while self.peek().text == "." and self.peek(1).kind == "name":
            self.take(".")
            name += "." + self.take().text
        return name

    # expressions -----------------------------------------------------------------------

    def expr(self) -> Any:
        left = self.unary()
        while self.peek().text in ("*", "+", "-") and self.peek(1).text not in (")", ","):
            op = self.take().text
            left = Binary(op, left, self.unary())
        return left

    def unary(self) -> Any:
        tok = self.peek()
        if tok.text in ("&", "*", "-"):
            self.take()
            return Unary(tok.text, self.unary())
        return self.postfix(self.primary())

    def primary(self) -> Any:
        tok = self.peek()
        if tok.kind == "string":
            self.take()
            return Lit(bytes(tok.text[1:-1], "utf-8").decode("unicode_escape"))
        if tok.kind == "raw":
            self.take()
            return Lit(tok.text[1:-1])
        if tok.kind == "number":
            self.take()
            text = tok.text.replace("_", "")
            return Lit(float(text) if "." in text else int(text))
        if tok.text == "(":
            self.take("(")
            inner = self.expr()
            self.take(")")
            return inner
        if tok.text == "{":
            return self.composite(None)
        if tok.text in ("[", "map"):
            kind = self.type_text()
            return self.composite(kind)
        if tok.kind == "name":
            self.take()
            return Name(tok.text)
        raise SyntaxError(f"unexpected {tok.text!r} at {tok.pos}")

    def postfix(self, node: Any) -> Any:
        while True:
            tok = self.peek()
            if tok.text == "." and self.peek(1).kind == "name":
                self.take(".")
                node = Select(node, self.take().text)
            elif tok.text == "(":
                node = self.call(node)
            elif tok.text == "{" and _is_type(node):
                node = self.composite(_type_name(node))
            elif tok.text == "[" and isinstance(node, Name):
                self.take("[")
                key = self.expr()
                self.take("]")
                node = Index(node, key)
            else:
                return node

    def call(self, func: Any) -> Call:
        self.take("(")
        args = []
        spread = False
        while self.peek().text != ")":
            if _is_new(func) and not args:
                args.append(Name(self.type_text()))
            else:
                args.append(self.expr())
            if self.peek().text == "...":
                self.take("...")
                spread = True
            if self.peek().text == ",":
                self.take(",")
        self.take(")")
        return Call(func, args, spread)

    def composite(self, kind: str | None) -> Composite:
        self.take("{")
        node = Composite(kind)
        while self.peek().text != "}":
            first = self.expr()
            if self.peek().text == ":":
                self.take(":")
                node.elements.append((first, self.expr()))
            else:
                node.elements.append((None, first))
            if self.peek().text == ",":
                self.take(",")
        self.take("}")
        return node


LOCAL_TYPES = {"rfMap", "granularMode", "simulationResultForFlavor"}
"""Unexported type names the tables write composite literals of."""


def _is_new(func: Any) -> bool:
    return isinstance(func, Name) and func.text == "new"


def _is_type(node: Any) -> bool:
    """A composite literal follows a type name: an exported name or a qualified one."""
    if isinstance(node, Name):
        return node.text[:1].isupper() or node.text in LOCAL_TYPES
    if isinstance(node, Select):
        return isinstance(node.target, Name) and node.name[:1].isupper()
    return False


def _type_name(node: Any) -> str:
    if isinstance(node, Name):
        return node.text
    assert isinstance(node, Select) and isinstance(node.target, Name)
    return f"{node.target.text}.{node.name}"


def parse_at(source: str, offset: int) -> Any:
    """The expression starting at `offset` of `source`."""
    toks = tokens(source[offset:])
    return Parser(toks).expr()


def find_block(source: str, pattern: str, start: int = 0) -> int:
    """The offset where `pattern` (a regex) first matches at or after `start`."""
    found = re.compile(pattern, re.MULTILINE).search(source, start)
    if found is None:
        raise LookupError(pattern)
    return found.end()


def case_table(source: str, func: str, variable: str = "cases") -> Composite:
    """The composite literal `<variable> := map[string]struct{...}{...}` in `func Test<func>`:
    its struct type is skipped, its elements are the cases."""
    begin = find_block(source, rf"^func {func}\(")
    at = find_block(source, rf"\b{variable} := map\[string\]struct ", begin)
    depth = 0
    i = at
    while True:  # skip the anonymous struct type's braces
        if source[i] == "{":
            depth += 1
        elif source[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    node = Parser(tokens(source[i + 1 :])).composite("map[string]case")
    return node


def assignment(source: str, func: str, variable: str) -> Any:
    """The expression of `<variable> := <expr>` inside `func <func>` (for a function literal
    `func() T { return <expr> }`, the expression it returns)."""
    begin = find_block(source, rf"^func {func}\(")
    at = find_block(source, rf"\b{variable} := ", begin)
    if source.startswith("func(", at):
        at = find_block(source, r"\breturn ", at)
    return parse_at(source, at)


def returned(source: str, func: str) -> Any:
    """The expression that the top-level `func <func>()` returns."""
    begin = find_block(source, rf"^func {func}\(")
    return parse_at(source, find_block(source, r"\breturn ", begin))
