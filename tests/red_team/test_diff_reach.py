"""A hostile team lead's pull request that widens a team's reach behind a change `diff` used to
compare namespace by namespace: a new team (or one split off, or deleted and added again under
another name), renamed namespaces, a team moved to another cluster, a cost centre taken from
another team. `diff` compares a team's whole reach on each cluster (docs/diff.md), so each
widening is a finding of its own, high, on the line of the attacker's file that grants it.

The lead edits only their own team file or adds one; each attack validates (review is the
last guard), except where a later rule may refuse it outright, which is as good."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import REPO
from tests.red_team.diffing import commit_again, commit_base, diff_findings
from tests.red_team.harness import Attempt, errors

pytestmark = pytest.mark.slow  # one diff or render per attack: docs/testing.md

LLM = "teams/llm.yaml"
VISION_REGISTRY = "registry.example.com/vision/"
"""Another team's images: a path of the platform's own registry, but not llm's."""


def _namespaces() -> str:
    """llm's `namespaces:` list as the example writes it (its serving namespace with the chat
    endpoint), read from the file so that a reworded example is followed."""
    text = (REPO / LLM).read_text()
    return text[text.index("  namespaces:\n") + len("  namespaces:\n") : text.index("  domains:")]


_NAMESPACES = _namespaces()


@pytest.fixture
def based(attempt: Attempt) -> Attempt:
    commit_base(attempt)
    return attempt


def _found(attempt: Attempt, team: str, code: str) -> list[dict[str, Any]]:
    assert errors(attempt.findings()) == [], "the attack validates: only review can stop it"
    return [f for f in diff_findings(attempt) if f["code"] == code and f["team"] == team]


def _one(attempt: Attempt, team: str, code: str, subject: str) -> dict[str, Any]:
    found = [f for f in _found(attempt, team, code) if f["subject"] == subject]
    assert len(found) == 1, found
    return found[0]


def _line(attempt: Attempt, file: str, text: str) -> str:
    """`file:line` of the one line of the attacker's file that holds `text`."""
    lines = attempt.path(file).read_text().splitlines()
    numbers = [n for n, line in enumerate(lines, 1) if text in line]
    assert len(numbers) == 1, (text, numbers)
    return f"{file}:{numbers[0]}"


def _rename_all(attempt: Attempt) -> None:
    """llm's three namespaces, renamed: the base's are pruned, the head's are all new."""
    attempt.edit(LLM, _NAMESPACES, _NAMESPACES.replace("name: llm-", "name: llm-v2-"))


def _add_registry(attempt: Attempt, file: str = LLM) -> None:
    attempt.edit(
        file,
        "    - registry.example.com/base/\n",
        f"    - registry.example.com/base/\n    - {VISION_REGISTRY}\n",
    )


def _new_team(attempt: Attempt, name: str = "shadow", cost_center: str = "CC-1999") -> str:
    """A team file of the lead's own, llm's made over: namespaces on prod-east, no GPU quota."""
    text = attempt.path(LLM).read_text()
    text = text.replace("name: llm-", f"name: {name}-").replace("name: llm\n", f"name: {name}\n")
    text = text.replace('["@example/llm"]', f'["@example/{name}"]')
    text = text.replace("costCenter: CC-1050", f"costCenter: {cost_center}")
    text = text.replace(text[text.index("  gpus:\n") : text.index("  resources:\n")], "")
    # and without llm's endpoint and domains, which are llm's alone (rules endpoint-host-*,
    # team-domain-overlap) and need the quota just removed
    text = text.replace(
        text[
            text.index("      # The production chat API") : text.index(
                f"    - {{name: {name}-notebooks"
            )
        ],
        "",
    )
    text = re.sub(r"(?m)^  domains: .*\n", "", text)
    file = f"teams/{name}.yaml"
    attempt.write(file, text)
    return file


# --- a new team: its registries, egress and groups, each high -----------------------------------


def test_a_new_teams_image_registries_are_each_high(based: Attempt) -> None:
    file = _new_team(based)
    _add_registry(based, file)
    found = _one(based, "shadow", "images-widened", VISION_REGISTRY)
    assert found["risk"] == "high"
    assert found["at"] == _line(based, file, VISION_REGISTRY)
    registries = _found(based, "shadow", "images-widened")
    assert len(registries) == 4 and {f["risk"] for f in registries} == {"high"}


def test_a_new_teams_owner_group_is_high(based: Attempt) -> None:
    file = _new_team(based)
    based.edit(file, "owners: [llm-leads]", "owners: [llm-leads, contractors]")
    found = _one(based, "shadow", "rbac-widened", "oidc:contractors")
    assert found["risk"] == "high" and "none → admin" in found["summary"]
    assert found["at"] == _line(based, file, "contractors")


def test_a_new_teams_member_and_viewer_groups_are_high(based: Attempt) -> None:
    _new_team(based)
    for group, role in (("llm-research", "edit"), ("finops", "view")):
        found = _one(based, "shadow", "rbac-widened", f"oidc:{group}")
        assert found["risk"] == "high" and f"none → {role}" in found["summary"]


def test_a_team_deleted_and_added_again_under_another_name_with_more_reach(
    based: Attempt,
) -> None:
    """llm's file goes; team `llmx`, the same with one more registry, comes: the registry is
    not a detail of 'team added'."""
    file = _new_team(based, "llmx", cost_center="CC-1050")
    based.path(LLM).unlink()
    _add_registry(based, file)
    assert _one(based, "llmx", "images-widened", VISION_REGISTRY)["risk"] == "high"
    assert _one(based, "llmx", "rbac-widened", "oidc:llm-leads")["risk"] == "high"


def test_a_team_split_into_two_files_the_new_one_wider(based: Attempt) -> None:
    """llm hands its notebooks to a new team of the lead's, whose owners are contractors."""
    file = _new_team(based, "llm-nb")
    based.edit(LLM, "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n", "")
    text = based.path(file).read_text()
    for line in _NAMESPACES.replace("name: llm-", "name: llm-nb-").splitlines(keepends=True):
        if "notebooks" not in line:
            text = text.replace(line, "")
    based.write(file, text.replace("owners: [llm-leads]", "owners: [contractors]"))
    _add_registry(based, file)
    assert _one(based, "llm-nb", "images-widened", VISION_REGISTRY)["risk"] == "high"
    assert _one(based, "llm-nb", "rbac-widened", "oidc:contractors")["risk"] == "high"


# --- a widening behind renamed or moved namespaces ---------------------------------------------


def test_renamed_namespaces_hide_no_new_registry(based: Attempt) -> None:
    _rename_all(based)
    _add_registry(based)
    found = _one(based, "llm", "images-widened", VISION_REGISTRY)
    assert found["risk"] == "high" and found["at"] == _line(based, LLM, VISION_REGISTRY)


def test_renamed_namespaces_hide_no_new_owner(based: Attempt) -> None:
    _rename_all(based)
    based.edit(LLM, "owners: [llm-leads]", "owners: [llm-leads, contractors]")
    found = _one(based, "llm", "rbac-widened", "oidc:contractors")
    assert found["risk"] == "high" and found["at"] == _line(based, LLM, "contractors")


def test_renamed_namespaces_make_a_viewer_turned_member_high(based: Attempt) -> None:
    """Edit for a group is medium alone; behind renamed namespaces it is high, and says why."""
    _rename_all(based)
    based.edit(
        LLM, "members: [llm-research, llm-serving]", "members: [llm-research, llm-serving, finops]"
    )
    found = _one(based, "llm", "rbac-widened", "oidc:finops")
    assert found["risk"] == "high" and "view → edit" in found["summary"]
    assert "renamed namespaces: llm-notebooks, llm-serve, llm-train →" in found["summary"]


def test_renamed_namespaces_hide_no_raised_cap(based: Attempt) -> None:
    _rename_all(based)
    based.edit(LLM, "    persistentVolumeClaims: 100\n", "    persistentVolumeClaims: 5000\n")
    found = _one(based, "llm", "quota-cap-changed", "persistentVolumeClaims")
    assert found["risk"] == "high" and "100 → 5000" in found["summary"]
    assert found["at"] == _line(based, LLM, "persistentVolumeClaims: 5000")


def test_a_restricted_namespace_renamed_to_the_purposes_looser_default(based: Attempt) -> None:
    """The platform hardened llm-train to restricted; the lead renames it and drops the level,
    so the new namespace gets training's baseline."""
    train = "    - name: llm-train\n      cluster: prod-east\n      purpose: training\n"
    restricted = train + "      podSecurity: restricted\n"
    based.edit(LLM, train, restricted)
    commit_again(based)
    based.edit(LLM, restricted, train.replace("llm-train", "llm-pretrain"))
    found = _one(based, "llm", "namespace-added", "llm-pretrain")
    assert found["risk"] == "high" and "looser" in found["summary"]
    assert found["at"] == _line(based, LLM, "llm-pretrain")


def test_a_team_moved_to_another_cluster_brings_its_reach_as_new(based: Attempt) -> None:
    """llm-eval leaves staging-west for prod-east: on prod-east its groups, registries and
    egress are new, each high, not one 'namespace added' per namespace."""
    file = "teams/llm-eval.yaml"
    text = based.path(file).read_text()
    text = text.replace("cluster: staging-west", "cluster: prod-east").replace(
        "queue: staging", "queue: prod"
    )
    text = text.replace("priority: release-candidate", "priority: standard")
    text = text.replace(
        "    - {pool: h200-tune, nominal: 4, borrowingLimit: 16, lendingLimit: 2}\n", ""
    )
    text = text.replace("{pool: l4-serve,", "{pool: l40s-infer,")
    text = text.replace("pool: l4-serve\n", "pool: l40s-infer\n")  # its endpoint moves too
    based.write(file, text)
    found = [
        f for f in diff_findings(based) if f["team"] == "llm-eval" and f["cluster"] == "prod-east"
    ]
    assert errors(based.findings()) == []
    rated = {(f["code"], f["subject"]): f["risk"] for f in found}
    assert rated[("rbac-widened", "oidc:llm-leads")] == "high"
    assert rated[("images-widened", "registry.example.com/llm/")] == "high"
    assert {r for (code, _), r in rated.items() if code == "egress-opened"} == {"high"}
    assert not [f for f in found if f["code"] == "namespace-added"]


# --- a cost centre another team uses ----------------------------------------------------------


@pytest.mark.parametrize(("cost_center", "owner"), [("CC-1042", "vision"), ("CC-1088", "search")])
def test_a_cost_centre_moved_onto_another_teams(
    based: Attempt, cost_center: str, owner: str
) -> None:
    """vision's is on llm's cluster, search's on another one: finance reads the label either way."""
    based.edit(LLM, "costCenter: CC-1050", f"costCenter: {cost_center}")
    found = _one(based, "llm", "cost-center-shared", cost_center)
    assert found["risk"] == "high" and f"team {owner} uses" in found["summary"]
    assert found["at"] == _line(based, LLM, "costCenter")


def test_a_new_team_with_another_teams_cost_centre(based: Attempt) -> None:
    _new_team(based, cost_center="CC-1077")
    found = _one(based, "shadow", "cost-center-shared", "CC-1077")
    assert found["risk"] == "high" and "team recsys uses" in found["summary"]


# --- what a namespace added brings --------------------------------------------------------------


def test_a_namespace_of_a_new_purpose_is_not_low(based: Attempt) -> None:
    """A batch namespace gives llm a ClusterQueue of its own for batch (issue 27: each purpose's
    ClusterQueue borrowed on its own): a medium change, not a low 'namespace added'."""
    based.edit(
        LLM,
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n"
        "    - {name: llm-batch, cluster: prod-east, purpose: batch}\n",
    )
    found = _one(based, "llm", "namespace-added", "llm-batch")
    assert found["risk"] == "medium" and "first batch namespace" in found["summary"]


def test_a_second_namespace_of_a_purpose_is_refused_or_its_caps_are_not_low(
    based: Attempt,
) -> None:
    """Each namespace gets a ResourceQuota of its own: a second notebooks namespace is more CPU,
    memory and storage for the team. Either `validate` refuses it on the lead's file, or `diff`
    shows the team's caps rising."""
    based.edit(
        LLM,
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n"
        "    - {name: llm-scratch, cluster: prod-east, purpose: notebooks}\n",
    )
    refused = errors(based.findings())
    if refused:
        assert {d.at.file for d in refused} == {LLM}, refused
        return
    caps = [f for f in diff_findings(based) if f["code"] == "quota-cap-changed"]
    assert {f["subject"] for f in caps} >= {"cpu", "memory", "storage"}
    assert "low" not in {f["risk"] for f in caps}
