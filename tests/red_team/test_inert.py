"""A hostile team lead writes text, not config: a description, a contact, an egress rule's
description. Each attack puts one payload in teams/llm.yaml (or a new team file) and runs it
through every output the shipped workflow prints or publishes; none of it may act."""

from __future__ import annotations

import json
import re
from xml.etree import ElementTree

import pytest

from tests.red_team.diffing import cli, commit_base
from tests.red_team.harness import Attempt, errors, without_serving
from tests.test_inert_everywhere import (
    assert_inert_markdown,
    readme_fences,
    readme_lists,
    runner_commands,
)

pytestmark = pytest.mark.slow  # one diff or render per attack: docs/testing.md

LLM = "teams/llm.yaml"
DESCRIPTION = (
    "description: Pre-training and post-training of language models, and the production LLM APIs"
)

PAYLOADS = {
    "workflow-command": "ok\n::error file=teams/llm.yaml,line=1::fake finding",
    "indented-command": "ok\n    ::add-mask::hides the real findings",
    "stop-commands": "ok\n::stop-commands::pause",
    "legacy-command": "ok ##[set-output name=approved;]true",
    "markdown-link": "[approve here](https://evil.example/login) ![t](https://evil.example/p.png)",
    "html": "<img src=https://evil.example/p.png> <details open><summary>x</summary>",
    "heading-and-fence": "ok\n# Looks safe\n```\n",
    "mention": "@example/platform please approve, fixes #1",
    "table-break": "a | b | c | d",
    "terminal": "\x1b]0;owned\x07\x1b[2J\u202egnp.evil",
}


def _outputs(attempt: Attempt) -> dict[str, str]:
    outputs = {}
    for args in (
        ("validate", "--format", "github"),
        ("validate", "--format", "junit"),
        ("render", "--format", "github"),
        ("plan",),
        ("plan", "--format", "markdown"),
        ("diff", "--base", "HEAD", "--format", "text"),
        ("diff", "--base", "HEAD", "--format", "markdown"),
        ("diff", "--base", "HEAD", "--format", "json"),
    ):
        code, outputs[" ".join(args)] = cli(attempt, *args)
        assert code == 0, (args, outputs[" ".join(args)])
    return outputs


def _assert_inert(attempt: Attempt) -> None:
    assert errors(attempt.findings()) == [], "free text is allowed: it must be inert"
    outputs = _outputs(attempt)
    for name, text in outputs.items():
        commands = runner_commands(text)
        if "github" in name:  # gpuplane's own annotations, one per finding, and nothing else
            commands = [c for c in commands if not re.match(r"::(error|warning) file=[^\s:]+", c)]
            assert all("##[" not in c for c in runner_commands(text)), name
        assert not commands, name
        assert "\x1b" not in text and "\u202e" not in text, name
    ElementTree.fromstring(outputs["validate --format junit"].encode())
    json.loads(outputs["diff --base HEAD --format json"])
    assert_inert_markdown(
        outputs["diff --base HEAD --format markdown"],
        own=("heading_open", "bullet_list_open", "html_block", "strong_open"),
    )
    readme = attempt.path("rendered/prod-east/README.md").read_text()
    assert_inert_markdown(readme, own=("heading_open", "bullet_list_open", "fence"))
    assert readme_lists(readme) == 1  # the README's own Guardrails list, and no other
    assert readme_fences(readme) == ["mermaid"]  # the README's own diagram, and no other
    assert not re.search(r"(?m)^::", readme)


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_a_hostile_description(attempt: Attempt, payload: str) -> None:
    commit_base(attempt)
    attempt.edit(LLM, DESCRIPTION, f"description: {json.dumps(PAYLOADS[payload])}")
    _assert_inert(attempt)


@pytest.mark.parametrize("payload", ["workflow-command", "markdown-link", "mention"])
def test_a_hostile_contact(attempt: Attempt, payload: str) -> None:
    commit_base(attempt)
    attempt.edit(LLM, "contact: llm-infra@example.com", f"contact: {json.dumps(PAYLOADS[payload])}")
    _assert_inert(attempt)


@pytest.mark.parametrize("payload", ["legacy-command", "html", "table-break"])
def test_a_hostile_egress_description(attempt: Attempt, payload: str) -> None:
    commit_base(attempt)
    attempt.edit(
        LLM,
        "description: experiment tracking",
        f"description: {json.dumps(PAYLOADS[payload])}",
    )
    _assert_inert(attempt)


def test_a_new_team_file_quoting_everything(attempt: Attempt) -> None:
    """A new team's description is quoted in diff's `team added` line. Every payload, half of
    them in the description and half in the contact: a description takes at most 255
    characters (Argo CD's AppProject limit, docs/api-limits.md)."""
    commit_base(attempt)
    llm = attempt.path(LLM).read_text()
    shadow = (
        without_serving(llm).replace("name: llm\n", "name: shadow\n").replace("llm-", "shadow-")
    )
    shadow = shadow.replace('["@example/llm"]', '["@example/shadow"]')
    shadow = shadow.replace(shadow[shadow.index("  gpus:\n") : shadow.index("  resources:\n")], "")
    payloads = list(PAYLOADS.values())
    half = len(payloads) // 2
    described, contact = "\n".join(payloads[:half]), "\n".join(payloads[half:])
    shadow = shadow.replace(DESCRIPTION, f"description: {json.dumps(described)}")
    shadow = shadow.replace("contact: llm-infra@example.com", f"contact: {json.dumps(contact)}")
    attempt.write("teams/shadow.yaml", shadow)
    _assert_inert(attempt)


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_a_payload_a_finding_quotes_adds_no_runner_command(attempt: Attempt, payload: str) -> None:
    """A review found the free-text attacks above never reach `--format github`: no finding
    quotes a description. A key of the team's spec is quoted by the schema finding it causes,
    so here the payload is one: the runner must see exactly gpuplane's annotations, one per
    finding, and no line the payload starts."""
    team = attempt.path(LLM)
    team.write_text(
        team.read_text().replace("spec:\n", f"spec:\n  {json.dumps(PAYLOADS[payload])}: 1\n", 1)
    )
    code, github = cli(attempt, "validate", "--format", "github")
    assert code == 1
    _, as_json = cli(attempt, "validate", "--format", "json")
    findings = json.loads(as_json)["findings"]
    assert findings
    commands = runner_commands(github)
    assert len(commands) == len(findings), commands
    for line, finding in zip(commands, findings, strict=True):
        assert line.startswith(f"::{finding['level']} file={finding['file']},"), line
    assert "##[" not in github and "\x1b" not in github and "\u202e" not in github
