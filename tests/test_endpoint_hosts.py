"""Host rules (renderer/policy/hosts.py): each finding lands on the line that declares the host or
domain, and its hint, applied to the file, makes the platform pass that rule again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from renderer.model.reserved import reserved_host
from renderer.policy.hosts import prefixes_overlap, under
from tests.conftest import edit_once

RULES = (
    "endpoint-host-duplicate",
    "endpoint-host-domain",
    "team-domain-overlap",
    "endpoint-host-reserved",
)


def _findings(gpuplane, root: Path, rule: str) -> list[dict[str, Any]]:
    report = json.loads(gpuplane("-C", str(root), "validate", "--format", "json").output)
    return [d for d in report["findings"] if d["rule"] == rule]


def _line_of(path: Path, text: str, start: int = 0) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if i > start and text in line)


def _suggested(hint: str) -> str:
    found = re.search(r"e\.g\. '([^']+)'", hint)
    assert found, hint
    return found[1]


def test_the_example_platform_passes_every_host_rule(platform: Path, gpuplane) -> None:
    for rule in RULES:
        assert not _findings(gpuplane, platform, rule), rule


SECOND = """        - name: chat-next
          server: vllm
          model: llama-3.1-8b-instruct
          pool: l40s-infer
          host: {host}
          path: {path}
          replicas: {{min: 1, max: 1}}
          slo: {{p95: 500ms}}
"""
CHAT_END = "          autoscaling: {signal: queue-depth, target: 4}\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "clash"),
    [
        ("/v1", True),
        ("/", True),
        ("/v1/chat", True),
        ("/v1/", True),
        ("/v10", False),
        ("/v2", False),
    ],
)
def test_a_host_and_overlapping_path_declared_twice_is_refused_on_the_second(
    platform: Path, gpuplane, path: str, clash: bool
) -> None:
    team = platform / "teams" / "llm.yaml"
    edit_once(team, CHAT_END, CHAT_END + SECOND.format(host="chat.llm.example.com", path=path))
    found = _findings(gpuplane, platform, "endpoint-host-duplicate")
    if not clash:
        assert not found
        return
    (finding,) = found
    first = _line_of(team, "host: chat.llm.example.com")
    assert (finding["file"], finding["line"]) == (
        "teams/llm.yaml",
        _line_of(team, "host: chat.llm.example.com", first),
    )
    # the hint, applied
    host = _suggested(finding["hint"])
    second = f"host: chat.llm.example.com\n          path: {path}\n          replicas: {{min: 1"
    edit_once(team, second, second.replace("chat.llm.example.com", host))
    for rule in RULES:
        assert not _findings(gpuplane, platform, rule), rule


def test_a_host_outside_the_teams_domains_is_refused(platform: Path, gpuplane) -> None:
    team = platform / "teams" / "recsys.yaml"
    edit_once(team, "host: ranker.recsys.example.com", "host: ranker.xrecsys.example.com")
    (finding,) = _findings(gpuplane, platform, "endpoint-host-domain")
    assert (finding["file"], finding["line"]) == (
        "teams/recsys.yaml",
        _line_of(team, "host: ranker."),
    )
    edit_once(team, "host: ranker.xrecsys.example.com", f"host: {_suggested(finding['hint'])}")
    for rule in RULES:
        assert not _findings(gpuplane, platform, rule), rule


@pytest.mark.parametrize(
    "domain", ["llm.example.com", "serving.llm.example.com", "a.b.llm.example.com"]
)
def test_a_team_domain_equal_to_or_inside_anothers_is_refused(
    platform: Path, gpuplane, domain: str
) -> None:
    team = platform / "teams" / "recsys.yaml"
    edit_once(team, "domains: [recsys.example.com]", f"domains: [recsys.example.com, {domain}]")
    (finding,) = _findings(gpuplane, platform, "team-domain-overlap")
    assert (finding["file"], finding["line"]) == ("teams/recsys.yaml", _line_of(team, "domains:"))
    assert "llm.example.com" in finding["hint"]
    # the hint, applied: remove it
    edit_once(team, f"domains: [recsys.example.com, {domain}]", "domains: [recsys.example.com]")
    for rule in RULES:
        assert not _findings(gpuplane, platform, rule), rule


@pytest.mark.parametrize("host", ["grafana.recsys.example.com", "login.recsys.example.com"])
def test_a_platform_host_name_is_refused(platform: Path, gpuplane, host: str) -> None:
    team = platform / "teams" / "recsys.yaml"
    edit_once(team, "host: ranker.recsys.example.com", f"host: {host}")
    (finding,) = _findings(gpuplane, platform, "endpoint-host-reserved")
    assert finding["line"] == _line_of(team, f"host: {host}")
    edit_once(team, f"host: {host}", f"host: {_suggested(finding['hint'])}")
    for rule in RULES:
        assert not _findings(gpuplane, platform, rule), rule


def test_path_prefixes_overlap_by_whole_elements() -> None:
    # Gateway API HTTPPathMatch PathPrefix: "/abc" matches "/abc", "/abc/" and "/abc/def" but
    # not "/abcd" (gateway-api v1.6.1 apis/v1/httproute_types.go, PathMatchPathPrefix)
    assert prefixes_overlap("/abc", "/abc/def")
    assert prefixes_overlap("/", "/anything")
    assert prefixes_overlap("/abc/", "/abc")
    assert not prefixes_overlap("/abc", "/abcd")
    assert not prefixes_overlap("/v1/chat", "/v1/embed")


def test_hosts_lie_under_domains_label_wise() -> None:
    assert under("chat.llm.example.com", "llm.example.com")
    assert under("llm.example.com", "llm.example.com")
    assert not under("xllm.example.com", "llm.example.com")
    assert reserved_host("argocd.ml.example.com") is not None
    assert reserved_host("ranker.recsys.svc") is not None
    assert reserved_host("ranker.recsys.example.com") is None
