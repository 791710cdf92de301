"""Attacks on Kubernetes' own limits: a team lead writes what passes every schema gpuplane had, and
renders an object the API server refuses, a name Kueue silently drops, an amount the scheduler
and Kueue read as another, or a crash of `render` and `diff` (issue 27: "Output the API server
would refuse" and "Two tracebacks").

Each attack edits only the attacker's team file (or adds one) and ends in an error on that file
and line at `validate`; the crashes also end in findings, not a traceback, at `render` and
`diff`. The limits themselves are Kubernetes', cited where they are enforced
(renderer/output/api_limits.py, renderer/model/quantity.py, docs/api-limits.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.red_team.diffing import cli, commit_base
from tests.red_team.harness import Attempt, errors, refused_on

LLM = "teams/llm.yaml"


def line_of(attempt: Attempt, file: str, needle: str, after: str = "") -> int:
    """The first line with `needle`, below the first line with `after`."""
    lines = attempt.path(file).read_text().splitlines()
    start = next(n for n, line in enumerate(lines, 1) if after in line)
    return next(n for n, line in enumerate(lines, 1) if n >= start and needle in line)


def _set(attempt: Attempt, *path: str, value: Any) -> None:
    team = attempt.team("llm")
    node = team
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    attempt.save_team("llm", team)


# --- oversized free text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "text"),
    [
        # the issue's own: 270,000 characters in one namespace annotation, over the 262,144 bytes
        # Kubernetes allows for all of an object's annotations (objectmeta.go)
        pytest.param("contact", "x" * 270_000, id="contact-270k"),
        # 70,000 characters, but 280,000 bytes: the limit counts bytes (Go's len)
        pytest.param("contact", "\U0001f4de" * 70_000, id="contact-4-byte-characters"),
        # 256 characters: Argo CD's AppProject takes at most 255 in spec.description
        pytest.param("description", "d" * 256, id="description-over-the-appproject-limit"),
        pytest.param("description", "d" * 300_000, id="description-300k"),
    ],
)
def test_oversized_team_text(attempt: Attempt, field: str, text: str) -> None:
    written = {
        "contact": "contact: llm-infra@example.com",
        "description": "description: Pre-training and post-training of language models, and "
        "the production LLM APIs",
    }[field]
    attempt.edit(LLM, written, f"{field}: {text}")
    found = refused_on(attempt.findings(), LLM, "schema-invalid-value")
    assert found.message.startswith(f"spec.{field} is {len(text)} characters long"), found
    assert found.at.line == line_of(attempt, LLM, f"  {field}:")
    assert len(str(found)) < 400, "the message must not carry the text it refuses"


def test_an_oversized_egress_description(attempt: Attempt) -> None:
    team = attempt.team("llm")
    team["spec"]["egress"][0]["description"] = "e" * 100_000
    attempt.save_team("llm", team)
    found = refused_on(attempt.findings(), LLM, "schema-invalid-value")
    assert found.message.startswith("spec.egress[0].description is 100000 characters long")


# --- names that overflow only once gpuplane adds to them ------------------------------------------


def _new_team(attempt: Attempt, name: str, namespaces: list[tuple[str, str]]) -> str:
    """A new team file named `name`, made from speech's, with the namespaces (name, purpose) on
    prod-east and no GPU quota (nothing else in it can be refused); its path."""
    team = attempt.team("speech")
    team["metadata"]["name"] = name
    team["spec"]["namespaces"] = [
        {"name": ns, "cluster": "prod-east", "purpose": purpose} for ns, purpose in namespaces
    ]
    del team["spec"]["gpus"]
    attempt.save_team(name, team)
    return f"teams/{name}.yaml"


@pytest.mark.parametrize(
    ("length", "purpose", "over"),
    [
        # 55 + "-notebooks": 65 characters
        pytest.param(55, "notebooks", 2, id="notebooks-queue-of-a-55-character-team"),
        # the longest team name a namespace allows, and its training queue: 72 characters
        pytest.param(63, "training", 9, id="training-queue-of-a-63-character-team"),
        # 54 + "-inference" is 64: one over; its "-training" queue (63) fits
        pytest.param(54, "inference", 1, id="one-character-over"),
    ],
)
def test_a_cluster_queue_name_longer_than_a_label(
    attempt: Attempt, length: int, purpose: str, over: int
) -> None:
    """Kueue labels the pods it admits with their ClusterQueue only when the name is a label
    value (pkg/constants ClusterQueueLabel): a long team name drops the label from its pods."""
    name = ("attacker-" + "x" * 63)[:length]
    namespaces = [(name, purpose)] if length == 63 else [(f"{name}-a", purpose)]
    if length == 54:
        namespaces.append((f"{name}-b", "training"))
    file = _new_team(attempt, name, namespaces)
    found = refused_on(attempt.findings(), file, "derived-name-too-long")
    queue = f"{name}-{purpose}"
    assert found.message.startswith(
        f"ClusterQueue name '{queue}' is {len(queue)} characters, {over} more than the 63"
    ), found
    assert found.at.line == line_of(attempt, file, f"purpose: {purpose}")
    assert found.hint == (
        f"shorten the team's name (metadata.name, and the file's) '{name}' to at most "
        f"{length - over} characters"
    )
    assert len(errors(attempt.findings(), "derived-name-too-long")) == 1  # not the training one


# --- amounts Kubernetes and Kueue read as another ------------------------------------------------

QUANTITY_ATTACKS = [
    # 10 exa-cores as every container's default: 16 GPUs' worth overflow the int64 millicores
    # the scheduler and Kueue count
    pytest.param(("defaults", "cpu"), "10E", "is more than Kubernetes", id="10-exa-cores"),
    # 2^63 bytes: one past the largest int64, the largest amount Kueue counts
    pytest.param(("resources", "memory"), "9223372036854775808", "is more than", id="2^63-bytes"),
    # 8Ei is 2^63: ParseQuantity silently caps a binary amount at 2^63-1
    pytest.param(("resources", "memory"), "8Ei", "is more than", id="8Ei-capped-silently"),
    # a tenth of a nano-core: read as 1m by the scheduler (MilliValue rounds up)
    pytest.param(("defaults", "cpu"), "0.0000000001m", "is finer than a millicore", id="1e-10m"),
    # `1m` of memory is a thousandth of a byte, not a mebibyte: the API server warns it is invalid
    pytest.param(("defaults", "memory"), "1m", "is a fraction of a byte", id="milli-bytes"),
    pytest.param(("resources", "storage"), "0.5", "is a fraction of a byte", id="half-a-byte"),
]


@pytest.mark.parametrize(("path", "value", "words"), QUANTITY_ATTACKS)
def test_an_amount_kubernetes_reads_as_another(
    attempt: Attempt, path: tuple[str, str], value: str, words: str
) -> None:
    _set(attempt, "spec", *path, value=value)
    found = refused_on(attempt.findings(), LLM, "quantity-out-of-range")
    assert found.message.startswith(f"spec.{'.'.join(path)} '{value}' {words}"), found
    assert found.at.line == line_of(attempt, LLM, f"    {path[1]}: ", after=f"  {path[0]}:")
    assert found.hint


@pytest.mark.parametrize(
    ("path", "value", "written"),
    [
        # JSON Schema's `integer` took 16.0 and 1e3: the model then held floats where counts
        # belong, and the rendered quota said 16.0
        pytest.param(("gpus", 0, "nominal"), 16.0, "16.0", id="nominal-16.0"),
        pytest.param(("resources", "persistentVolumeClaims"), 1e3, "1000.0", id="pvcs-1e3"),
        # a NetworkPolicy port is an int32: 443.0 would fail the sync
        pytest.param(("egress", 0, "ports", 0), 443.0, "443.0", id="egress-port-443.0"),
    ],
)
def test_an_integer_written_as_a_decimal(
    attempt: Attempt, path: tuple[Any, ...], value: float, written: str
) -> None:
    _set(attempt, "spec", *path, value=value)
    found = refused_on(attempt.findings(), LLM, "schema-wrong-type")
    assert "must be an integer, got number" in found.message, found
    assert found.hint is not None and "without the decimal point" in found.hint


# --- the two tracebacks ----------------------------------------------------------------------------

TRACEBACKS = [
    pytest.param(("defaults", "cpu"), id="defaults.cpu"),
    pytest.param(("defaults", "memory"), id="defaults.memory"),
    pytest.param(("resources", "storage"), id="resources.storage"),
]


@pytest.mark.parametrize("path", TRACEBACKS)
def test_10_to_the_24_is_refused_by_validate_render_and_diff(
    attempt: Attempt, path: tuple[str, str]
) -> None:
    """The issue's own: 10^24 passed `validate`, then `render` and `diff` crashed in the
    templates layer. Now each command ends in the finding, on the line, with exit code 1."""
    commit_base(attempt)
    _set(attempt, "spec", *path, value="1" + "0" * 24)
    line = line_of(attempt, LLM, f"    {path[1]}: ", after=f"  {path[0]}:")
    expected = f"{LLM}:{line}:"
    for command in (("validate",), ("render",), ("diff", "--base", "HEAD")):
        code, output = cli(attempt, *command)
        assert "Traceback" not in output, (command, output)
        assert code == 1, (command, output)
        assert expected in output and "quantity-out-of-range" in output, (command, output)


# --- objects larger than the API server stores -----------------------------------------------------


@pytest.mark.parametrize(
    ("field", "entries", "words"),
    [
        # one prefix of 900,000 characters: the images ValidatingAdmissionPolicy quotes it
        # twice, 1.8 MB, past the 1.5 MiB etcd stores
        pytest.param(
            "images",
            ["registry.example.com/" + "a" * 900_000 + "/"],
            "is 9000",
            id="a-900k-image-prefix",
        ),
        # 4,000 prefixes of 200 characters: 1.6 MB of policy
        pytest.param(
            "images",
            [f"registry.example.com/{n:04}{'i' * 180}/" for n in range(4000)],
            "has 4000 entries",
            id="4000-image-prefixes",
        ),
        # 300 prefixes of 3,000 characters: 1.8 MB of policy
        pytest.param(
            "images",
            [f"registry.example.com/{n:03}{'j' * 3000}/" for n in range(300)],
            "has 300 entries",
            id="300-long-image-prefixes",
        ),
    ],
)
def test_a_list_that_renders_an_object_too_large_to_store(
    attempt: Attempt, field: str, entries: list[str], words: str
) -> None:
    _set(attempt, "spec", field, value=entries)
    assert attempt.path(LLM).stat().st_size < 1 << 20  # under the input file limit
    found = refused_on(attempt.findings(), LLM, "schema-invalid-value")
    assert found.message.startswith(f"spec.{field}") and words in found.message, found
    assert len(str(found)) < 400, "the message must not carry what it refuses"
