"""`gpuplane diff` says what a change to a team's endpoints or domains does on the cluster.

Each case is the example platform committed to git and one edit to a team file; the expected
risks and numbers are worked out here from what the change does (docs/serving*.md): a route that
stops answering, a Deployment left without its route, `(replicas.max + 1) x gpus` of the
team's nominal quota (maxSurge 1, each replica a Kueue Workload of its own), a disruption
budget of one replica blocking drains. Most cases compare the two platforms directly
(`renderer.commands.diff.endpoints`); the last one runs the CLI, for the three report forms.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.diff.endpoints import endpoints
from renderer.commands.diff.findings import Finding
from renderer.findings.diagnostics import has_errors
from renderer.inputs.changes import changed_lines
from renderer.pipeline import load_platform
from tests.conftest import copy_inputs, edit_once, git

LLM = "teams/llm.yaml"
CHAT = "llm-serve/chat"

NEW_ENDPOINT = """\
        - name: embed
          server: vllm
          model: e5-mistral-7b
          pool: l40s-infer
          host: embed.llm.example.com
          path: /v1/embeddings
          replicas: {min: 2, max: 4}
          slo: {p95: 500ms}
"""


def _found(committed: Path, repo: Path, *, valid: bool = True) -> list[Finding]:
    """The endpoint findings of the edit in `repo` (uncommitted) against `committed`."""
    head = load_platform(repo, changed=changed_lines(repo))
    if valid:
        assert not has_errors(head.diagnostics), [d.message for d in head.diagnostics]
    return list(endpoints(load_platform(committed).platform, head.platform))


def _one(found: list[Finding], code: str, subject: str | None = None) -> Finding:
    matches = [f for f in found if f.code == code and subject in (None, f.subject)]
    assert len(matches) == 1, (code, subject, [(f.code, f.subject) for f in found])
    return matches[0]


def _line(repo: Path, file: str, text: str) -> str:
    """`file:line` of the one line of `file` that contains `text`."""
    lines = (repo / file).read_text().splitlines()
    hits = [n for n, line in enumerate(lines, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return f"{file}:{hits[0]}"


def test_nothing_changed_finds_nothing(committed: Path, repo: Path) -> None:
    assert _found(committed, repo) == []


def test_an_endpoint_added_is_a_new_public_url_with_its_quota_at_max(
    committed: Path, repo: Path
) -> None:
    edit_once(repo / LLM, "    - {name: llm-notebooks", NEW_ENDPOINT + "    - {name: llm-notebooks")
    f = _one(_found(committed, repo), "endpoint-added")
    assert (f.risk.value, f.cluster, f.team, f.subject) == (
        "medium",
        "prod-east",
        "llm",
        "llm-serve/embed",
    )
    assert "http://embed.llm.example.com/v1/embeddings" in f.summary
    assert "pool l40s-infer" in f.summary
    # at 4 replicas and one surge replica of one slice each: 5 of llm's 32 slices
    assert "= 5 " in f.summary and "nominal 32" in f.summary
    assert f.at == _line(repo, LLM, "host: embed.llm.example.com")


def test_an_endpoint_removed_stops_answering_and_leaves_its_deployment(
    committed: Path, repo: Path
) -> None:
    text = (repo / LLM).read_text()
    start = text.index("      endpoints:\n")
    end = text.index("    - {name: llm-notebooks")
    (repo / LLM).write_text(text[:start] + text[end:])
    f = _one(_found(committed, repo), "endpoint-removed", CHAT)
    assert f.risk.value == "high"
    assert "http://chat.llm.example.com/v1 stops answering" in f.summary
    assert "Deployment chat" in f.summary and "no route, autoscaler or budget" in f.summary
    assert f.at is not None and f.at.startswith(f"{LLM}:")


def test_a_namespace_removed_with_its_endpoint_is_left_to_namespace_removed(
    committed: Path, repo: Path
) -> None:
    """Renamed, llm-serve is deleted by Argo CD, the Deployment the team applied in it with it
    (`namespace-removed` says so): nothing is left running; the endpoint in the new namespace
    is a new one."""
    edit_once(repo / LLM, "    - name: llm-serve\n", "    - name: llm-chat\n")
    found = _found(committed, repo)
    assert [(f.code, f.subject) for f in found] == [("endpoint-added", "llm-chat/chat")]


@pytest.mark.parametrize(
    ("old", "new", "before", "after", "line"),
    [
        (
            "host: chat.llm.example.com",
            "host: api.llm.example.com",
            "chat.llm.example.com/v1",
            "api.llm.example.com/v1",
            "host: api.llm.example.com",
        ),
        ("path: /v1", "path: /v2", "chat.llm.example.com/v1", "chat.llm.example.com/v2", "/v2"),
    ],
)
def test_a_host_or_path_changed_breaks_every_clients_url(
    committed: Path, repo: Path, old: str, new: str, before: str, after: str, line: str
) -> None:
    edit_once(repo / LLM, old, new)
    f = _one(_found(committed, repo), "endpoint-url-changed", CHAT)
    assert f.risk.value == "high"
    assert f"http://{before} → http://{after}" in f.summary and "stops answering" in f.summary
    assert f.at == _line(repo, LLM, line)


def test_a_server_changed_means_a_new_template(committed: Path, repo: Path) -> None:
    edit_once(repo / LLM, "server: vllm", "server: sglang")
    edit_once(repo / LLM, "p95: 500ms", "p95: 400ms")  # a bucket bound of SGLang's histogram
    found = _found(committed, repo)
    f = _one(found, "endpoint-server-changed", CHAT)
    assert f.risk.value == "medium" and "vllm → sglang" in f.summary
    # vLLM serves on 8000 by default, SGLang on 30000 (the file writes no port)
    assert "serving port 8000 → 30000" in f.summary
    assert "deployment-chat.yaml" in f.summary
    assert f.at == _line(repo, LLM, "server: sglang")
    assert [g.code for g in found] == ["endpoint-server-changed", "endpoint-slo-changed"]


def test_the_maximum_raised_is_rated_against_the_nominal(committed: Path, repo: Path) -> None:
    edit_once(repo / LLM, "replicas: {min: 2, max: 8}", "replicas: {min: 2, max: 12}")
    f = _one(_found(committed, repo), "endpoint-capacity-changed", CHAT)
    # (8 + 1) x 1 → (12 + 1) x 1 slices of llm's nominal 32 on l40s-infer (its only endpoint
    # there): 32 - 13 left for the team's other workloads
    assert f.risk.value == "medium"
    assert "replicas.max 8 → 12" in f.summary and "9 → 13" in f.summary
    assert "nominal 32 on l40s-infer" in f.summary and "leaving 19" in f.summary
    assert f.at == _line(repo, LLM, "max: 12")


def test_the_maximum_lowered_is_low(committed: Path, repo: Path) -> None:
    edit_once(repo / LLM, "replicas: {min: 2, max: 8}", "replicas: {min: 2, max: 4}")
    f = _one(_found(committed, repo), "endpoint-capacity-changed", CHAT)
    assert f.risk.value == "low" and "9 → 5" in f.summary


def test_more_gpus_per_replica_is_the_maximum_raised(committed: Path, repo: Path) -> None:
    """chat at 2 slices per replica holds (8 + 1) x 2 = 18 of llm's 32 slices, not 9 (the
    device plugin refuses 2 slices to one container: rule endpoint-shared-gpus refuses the
    head, and diff still rates what it asks for)."""
    edit_once(
        repo / LLM,
        "          pool: l40s-infer\n",
        "          pool: l40s-infer\n          gpus: 2\n",
    )
    f = _one(_found(committed, repo, valid=False), "endpoint-capacity-changed", CHAT)
    assert f.risk.value == "medium" and "9 → 18" in f.summary and "gpus 1 → 2" in f.summary
    assert f.at == _line(repo, LLM, "gpus: 2")


def test_the_minimum_lowered_to_one_blocks_drains(committed: Path, repo: Path) -> None:
    edit_once(repo / LLM, "replicas: {min: 2, max: 8}", "replicas: {min: 1, max: 8}")
    f = _one(_found(committed, repo), "endpoint-floor-changed", CHAT)
    assert f.risk.value == "medium" and "2 → 1" in f.summary and "drain" in f.summary


def test_the_minimum_raised_is_low(committed: Path, repo: Path) -> None:
    edit_once(repo / LLM, "replicas: {min: 2, max: 8}", "replicas: {min: 3, max: 8}")
    found = _found(committed, repo)
    f = _one(found, "endpoint-floor-changed", CHAT)
    assert f.risk.value == "low" and "2 → 3" in f.summary
    assert not [g for g in found if g.code == "endpoint-capacity-changed"]


def test_the_slo_and_the_autoscaling_target_are_low_with_both_values(
    committed: Path, repo: Path
) -> None:
    edit_once(repo / LLM, "slo: {p95: 500ms}", "slo: {p95: 1s}")
    edit_once(repo / LLM, "{signal: queue-depth, target: 4}", "{signal: kv-cache, target: 0.8}")
    found = _found(committed, repo)
    slo = _one(found, "endpoint-slo-changed", CHAT)
    assert slo.risk.value == "low" and "500ms" in slo.summary and "1s" in slo.summary
    scaling = _one(found, "endpoint-scaling-changed", CHAT)
    assert scaling.risk.value == "low"
    assert "queue-depth target 4 → kv-cache target 0.8" in scaling.summary
    assert scaling.at == _line(repo, LLM, "kv-cache")


def test_a_model_changed_is_a_new_template_clients_ask_for_by_name(
    committed: Path, repo: Path
) -> None:
    edit_once(repo / LLM, "model: llama-3.2-3b-instruct", "model: llama-3.1-8b-instruct")
    f = _one(_found(committed, repo), "endpoint-changed", CHAT)
    assert f.risk.value == "medium"
    assert "model llama-3.2-3b-instruct → llama-3.1-8b-instruct" in f.summary
    assert f.at == _line(repo, LLM, "model: llama-3.1-8b-instruct")


def test_an_endpoint_renamed_on_its_host_still_leaves_its_deployment(
    committed: Path, repo: Path
) -> None:
    """chat renamed chat-v2: the URL still answers (the new endpoint's route), but the
    Deployment `chat` the team applied is no endpoint's any more."""
    edit_once(repo / LLM, "- name: chat\n", "- name: chat-v2\n")
    found = _found(committed, repo)
    gone = _one(found, "endpoint-removed", CHAT)
    assert gone.risk.value == "high" and "now routed to endpoint llm-serve/chat-v2" in gone.summary
    assert "Deployment chat " in gone.summary
    assert _one(found, "endpoint-added", "llm-serve/chat-v2").risk.value == "medium"


# --- team domains -----------------------------------------------------------------------------


def test_a_domain_added_lets_the_team_route_any_host_under_it(committed: Path, repo: Path) -> None:
    edit_once(
        repo / LLM, "domains: [llm.example.com]", "domains: [llm.example.com, chat.example.net]"
    )
    found = _found(committed, repo)
    f = _one(found, "domain-added", "chat.example.net")
    assert f.risk.value == "medium" and f.cluster == "prod-east"
    assert f.at == _line(repo, LLM, "domains:")
    assert [g.code for g in found] == ["domain-added"]


@pytest.mark.parametrize("domain", ["example.com", "recsys.example.com", "ads.recsys.example.com"])
def test_a_domain_over_another_teams_is_high_even_where_policy_refuses_it(
    committed: Path, repo: Path, domain: str
) -> None:
    """recsys holds recsys.example.com: llm asking for it, for its parent or for a name
    inside it (the Gateway matches the most specific listener hostname first) asks for
    recsys's names (rule team-domain-overlap refuses the head; diff still says so)."""
    edit_once(repo / LLM, "domains: [llm.example.com]", f"domains: [llm.example.com, {domain}]")
    f = _one(_found(committed, repo, valid=False), "domain-added", domain)
    assert f.risk.value == "high" and "recsys.example.com (team recsys)" in f.summary


def test_a_domain_removed_is_high_where_hosts_lay_under_it(committed: Path, repo: Path) -> None:
    edit_once(repo / LLM, "domains: [llm.example.com]", "domains: [llm.example.org]")
    found = _found(committed, repo, valid=False)
    gone = _one(found, "domain-removed", "llm.example.com")
    assert gone.risk.value == "high" and "chat.llm.example.com" in gone.summary
    assert _one(found, "domain-added", "llm.example.org").risk.value == "medium"


def test_a_domain_removed_with_no_host_under_it_is_low(committed: Path, repo: Path) -> None:
    edit_once(
        repo / LLM, "domains: [llm.example.com]", "domains: [llm.example.com, llm.example.net]"
    )
    git(repo, "commit", "-qam", "a second domain")
    base = copy_inputs(repo, repo.parent / "base")
    edit_once(
        repo / LLM, "domains: [llm.example.com, llm.example.net]", "domains: [llm.example.com]"
    )
    f = _one(_found(base, repo), "domain-removed", "llm.example.net")
    assert f.risk.value == "low"


# --- the report forms -------------------------------------------------------------------------


@pytest.mark.slow  # a diff against a committed base in each of four forms
def test_the_report_says_it_in_every_form(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / LLM, "host: chat.llm.example.com", "host: api.llm.example.com")
    at = _line(repo, LLM, "host: api.llm.example.com")
    result = gpuplane("-C", str(repo), "diff", "--base", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.output
    found = [f for f in json.loads(result.output)["changes"] if f["code"].startswith("endpoint")]
    assert [(f["code"], f["risk"], f["subject"], f["at"]) for f in found] == [
        ("endpoint-url-changed", "high", CHAT, at)
    ]
    assert found[0]["title"] == "endpoint host or path changed"
    text = gpuplane("-C", str(repo), "diff", "--base", "HEAD", "--format", "text").output
    line = next(x for x in text.splitlines() if "endpoint host or path changed" in x)
    assert "HIGH" in line and f"({at})" in line
    markdown = gpuplane("-C", str(repo), "diff", "--base", "HEAD").output
    row = next(x for x in markdown.splitlines() if "api.llm.example.com" in x)
    assert row.startswith("|") and "endpoint host or path changed" in row and at in row


def test_a_domain_added_is_rated_once_not_as_a_team_setting(repo: Path, gpuplane: Any) -> None:
    edit_once(
        repo / LLM, "domains: [llm.example.com]", "domains: [llm.example.com, chat.example.net]"
    )
    result = gpuplane("-C", str(repo), "diff", "--base", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["changes"]
    assert [(f["code"], f["risk"], f["subject"]) for f in found if f["team"] == "llm"] == [
        ("domain-added", "medium", "chat.example.net")
    ]
