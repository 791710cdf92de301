"""The secret-literal rule searches a document string by string only when its strings joined
by line breaks match a pattern (`may_hold_secrets`). The shortcut must never drop a finding:
these tests compare it with the search of every string, on each pattern's own shapes placed as
values, keys and list items, beside the line breaks the join adds, and on documents pieced
together at random from such fragments."""

from __future__ import annotations

import random
from typing import Any

import pytest

from renderer.findings.diagnostics import Location, SourceMap
from renderer.policy import secrets

SHAPES = {
    "a private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow",
    "an AWS access key": "AKIAABCDEFGHIJKLMNOP",
    "a GitHub token": "ghp_" + "a1" * 18,
    "a GitHub fine-grained token": "github_pat_" + "A_" * 12,
    "a GitLab token": "glpat-" + "x-" * 11,
    "a Slack token": "xoxb-1234567890-abc",
    "a Slack webhook URL": "https://hooks.slack.com/services/T0001/B0002/abcdef",
    "a Google API key": "AIza" + "b" * 35,
    "a JSON Web Token": "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl",
    "a credential in a URL": "postgres://admin:hunter22@db:5432",
    "an assignment": "password=s3cr3tvalue",
}
"""One string of each kind the rule knows (`secrets.PATTERNS`, then `ASSIGNMENT`)."""

OTHER_SHAPES = {
    "an AWS access key": ["ASIAABCDEFGHIJKLMNOP"],
    "a GitHub token": [f"gh{kind}_" + "b2" * 16 for kind in "ousr"],
    "a Slack token": [f"xox{kind}-1234567890-abc" for kind in "aeoprs"],
}
"""The other forms an expression accepts where it names several (`AKIA|ASIA`, `gh[pousr]_`)."""

NOISE = ["", "team-a", "train", "token", ":", "= x", "password", "AKIA", "\n", "a b", "eyJ.", "@"]
"""Fragments that hold no secret alone, some of which may make one with a neighbour in the
join (a false alarm of the shortcut only sends the document to the full search)."""


def _every_string(data: Any) -> list[str]:
    """The rule's findings without the shortcut: each string searched on its own."""
    return [
        f"{'.'.join(map(str, path))}: {found}"
        for path, text, _ in secrets._strings(data)
        if (found := secrets.findings_in(text))
    ]


def _with_shortcut(data: Any) -> list[str]:
    source = SourceMap("teams/a.yaml", {(): Location("teams/a.yaml", 1, 1)}, {})
    found = list(secrets._check_document(data, source))
    return [d.message for d in found]


def test_every_pattern_has_a_shape_here() -> None:
    assert len(SHAPES) == len(secrets.PATTERNS) + 1
    for pattern in secrets.PATTERNS:
        assert pattern.regex.search(SHAPES[pattern.name]), pattern.name
    assert secrets.ASSIGNMENT.search(SHAPES["an assignment"])


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_secret_anywhere_in_a_document_is_found(name: str) -> None:
    shape = SHAPES[name]
    for data in (
        {"spec": {"description": shape}},
        {"spec": {"labels": {shape: "x"}}},
        {"spec": {"items": ["a", ["b", shape]]}},
        {"spec": {"description": f"\n{shape}\n"}},
        shape,
    ):
        assert secrets.may_hold_secrets(data), (name, data)
        assert _with_shortcut(data), (name, data)
        assert len(_with_shortcut(data)) == len(_every_string(data)) > 0


def test_the_shortcut_finds_what_the_search_of_every_string_finds() -> None:
    pieces = [*SHAPES.values(), *(o for others in OTHER_SHAPES.values() for o in others), *NOISE]
    chooser = random.Random(15)
    for _ in range(2_000):

        def value(depth: int) -> Any:
            roll = chooser.random()
            if depth > 2 or roll < 0.5:
                return chooser.choice(pieces) + chooser.choice(["", *NOISE])
            if roll < 0.75:
                return [value(depth + 1) for _ in range(chooser.randint(0, 3))]
            return {chooser.choice(pieces): value(depth + 1) for _ in range(chooser.randint(0, 3))}

        data = {"spec": value(0)}
        expected = _every_string(data)
        if not secrets.may_hold_secrets(data):
            assert expected == [], data
        assert len(_with_shortcut(data)) == len(expected), data


def test_a_document_without_secrets_is_not_searched_string_by_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched: list[str] = []

    def search(text: str) -> list[str]:
        searched.append(text)
        return []

    monkeypatch.setattr(secrets, "findings_in", search)
    data = {"metadata": {"name": "team-a"}, "spec": {"contact": "ml@example.com", "n": 3}}
    assert list(secrets._check_document(data, SourceMap("t.yaml", {}, {}))) == []
    assert searched == []


@pytest.mark.parametrize("pattern", secrets.PATTERNS, ids=lambda p: p.name)
def test_every_match_holds_what_the_pattern_needs(pattern: secrets.Pattern) -> None:
    """`needs` lists literals of the expression, one of which every match holds: the shape
    holds one, and with each taken out nothing matches any more."""
    literal = pattern.regex.pattern.replace("\\", "")
    assert all(text in literal for text in pattern.needs), pattern.needs
    for shape in (SHAPES[pattern.name], *OTHER_SHAPES.get(pattern.name, ())):
        assert pattern.regex.search(shape), shape
        assert any(text in shape for text in pattern.needs), shape
        assert secrets.may_hold_secrets({"spec": {"description": shape}}), shape
        stripped = shape
        for text in pattern.needs:
            stripped = stripped.replace(text, "")
        assert not pattern.regex.search(stripped)
