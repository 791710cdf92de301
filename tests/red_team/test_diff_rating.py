"""A hostile team lead's pull request that widens the team's reach must not pass review as a
small change: `diff` rates each of these high (docs/diff.md). The lead edits only
teams/llm.yaml or adds a team file; each attack validates, so review is the last guard."""

from __future__ import annotations

import pytest

from tests.red_team.diffing import commit_again, commit_base, diff_findings
from tests.red_team.harness import Attempt, errors

pytestmark = pytest.mark.slow  # one diff or render per attack: docs/testing.md

LLM = "teams/llm.yaml"


@pytest.fixture
def based(attempt: Attempt) -> Attempt:
    commit_base(attempt)
    return attempt


def _rated(attempt: Attempt, code: str) -> list[str]:
    assert errors(attempt.findings()) == [], "the attack validates: only review can stop it"
    return [f["risk"] for f in diff_findings(attempt) if f["code"] == code and f["team"] == "llm"]


def test_a_new_narrow_egress_rule(based: Attempt) -> None:
    based.edit(
        LLM,
        "      description: experiment tracking\n",
        "      description: experiment tracking\n"
        "    - cidr: 10.40.0.0/24\n      ports: [443]\n      description: partner uploads\n",
    )
    assert _rated(based, "egress-opened") == ["high"]


def test_a_new_port_on_an_allowed_network(based: Attempt) -> None:
    based.edit(
        LLM,
        "      ports: [443]\n      description: experiment",
        "      ports: [443, 8080]\n      description: experiment",
    )
    assert _rated(based, "egress-opened") == ["high"]


def test_a_wider_cidr_over_an_allowed_one(based: Attempt) -> None:
    based.edit(LLM, "cidr: 10.30.4.0/24", "cidr: 10.30.0.0/16")
    assert _rated(based, "egress-opened") == ["high"]


def test_an_image_registry_the_admission_policy_did_not_allow(based: Attempt) -> None:
    based.edit(
        LLM,
        "    - registry.example.com/llm/\n",
        "    - registry.example.com/llm/\n    - ghcr.io/example/\n",
    )
    assert _rated(based, "images-widened") == ["high"]


def test_the_codeowners_replaced_by_the_lead_alone(based: Attempt) -> None:
    based.edit(LLM, 'codeowners: ["@example/llm"]', 'codeowners: ["@llm-lead-personal"]')
    assert _rated(based, "codeowners-changed") == ["high"]


def test_restricted_dropped_from_a_training_namespace(based: Attempt) -> None:
    train = "    - name: llm-train\n      cluster: prod-east\n      purpose: training\n"
    based.edit(LLM, train, train + "      podSecurity: restricted\n")
    commit_again(based)
    based.edit(LLM, train + "      podSecurity: restricted\n", train)
    assert _rated(based, "namespace-changed") == ["high"]


def test_a_new_owner_group_gets_admin(based: Attempt) -> None:
    based.edit(LLM, "owners: [llm-leads]", "owners: [llm-leads, contractors]")
    assert _rated(based, "rbac-widened") == ["high"]


def test_a_raised_quota_cap_is_not_rated_low(based: Attempt) -> None:
    based.edit(LLM, "    storage: 100Ti\n", "    storage: 900Ti\n")
    assert _rated(based, "quota-cap-changed") == ["medium"]


def test_a_new_team_file_with_egress(based: Attempt) -> None:
    llm = based.path(LLM).read_text()
    shadow = llm.replace("name: llm\n", "name: shadow\n").replace("llm-", "shadow-")
    shadow = shadow.replace('["@example/llm"]', '["@example/shadow"]')
    gpus = shadow[shadow.index("  gpus:\n") : shadow.index("  resources:\n")]
    shadow = shadow.replace(gpus, "")
    # only the training namespace: llm's serving namespace (with its endpoint and domain, which
    # are llm's alone) and its notebooks go
    serving = shadow[shadow.index("    - name: shadow-serve\n") : shadow.index("  resources:\n")]
    shadow = shadow.replace(serving, "")
    based.write("teams/shadow.yaml", shadow)
    assert errors(based.findings()) == []
    found = [f for f in diff_findings(based) if f["team"] == "shadow"]
    assert {f["risk"] for f in found if f["code"] == "egress-opened"} == {"high"}
