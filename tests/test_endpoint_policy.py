"""The endpoint rules (renderer/policy/endpoints.py), each triggered by a one-line change to the
example, found on the line that needs the change, and gone once its hint is applied.

The numbers are the example's, worked out by hand: teams/llm.yaml's chat is vLLM on l40s-infer
(time-sliced, 4 replicas per GPU: the quota counts slices), 1 slice per replica, 2..8
replicas, against llm's nominal 32 there; teams/recsys.yaml's ranker is Triton on l40s-infer,
4..12, against recsys's nominal 24; teams/llm-eval.yaml's candidate is SGLang on l4-serve,
2..3, against llm-eval's nominal 4.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import edit_once


def _validate(gpuplane, root: Path) -> dict[str, Any]:
    result = gpuplane("-C", str(root), "validate", "--format", "json")
    report = json.loads(result.output)
    assert result.exit_code == (1 if report["summary"]["errors"] else 0), result.output
    return report


def _found(report: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [d for d in report["findings"] if d["rule"] == rule]


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _one(gpuplane, root: Path, rule: str) -> dict[str, Any]:
    found = _found(_validate(gpuplane, root), rule)
    assert len(found) == 1, found
    return found[0]


def _backticked(hint: str) -> str:
    """The first `...` of a hint: the YAML it tells the user to write."""
    match = re.search(r"`([^`]+)`", hint)
    assert match, hint
    return match.group(1)


CHAT_REPLICAS = "          replicas: {min: 2, max: 8}\n"
RANKER_REPLICAS = "          replicas: {min: 4, max: 12}\n"


def test_the_example_fits_at_its_maximum(gpuplane, platform: Path) -> None:
    report = _validate(gpuplane, platform)
    assert not [d for d in report["findings"] if d["rule"].startswith("endpoint-")]


def test_quota_over_nominal_names_the_numbers_and_the_largest_max(gpuplane, platform) -> None:
    team = platform / "teams" / "llm.yaml"
    # 31 replicas + 1 surge = 32 slices: exactly llm's nominal on l40s-infer
    edit_once(team, CHAT_REPLICAS, "          replicas: {min: 2, max: 31}\n")
    assert not _found(_validate(gpuplane, platform), "endpoint-quota")
    edit_once(team, "max: 31}", "max: 40}")
    found = _one(gpuplane, platform, "endpoint-quota")
    assert (found["file"], found["line"]) == ("teams/llm.yaml", _line_of(team, "max: 40}"))
    assert "(40 + 1 surge) x 1 = 41" in found["message"]
    assert "over the team's nominal quota of 32" in found["message"]
    assert "`replicas.max` to 31" in found["hint"]
    edit_once(team, "max: 40}", "max: 31}")  # the hint, applied
    assert not _found(_validate(gpuplane, platform), "endpoint-quota")


def test_quota_is_summed_over_the_teams_endpoints_on_the_pool(gpuplane, platform) -> None:
    """Two endpoints of llm on l40s-infer: (8 + 1) x 1 for chat and (m + 1) x 2 for a second
    with 2 slices a replica; 32 - 9 = 23 slices left, so m + 1 <= 11: m = 10 fits, 11 not."""
    team = platform / "teams" / "llm.yaml"
    second = (
        "        - name: chat-large\n"
        "          server: vllm\n"
        "          model: llama-3.1-70b-instruct\n"
        "          pool: l40s-infer\n"
        "          gpus: 2\n"
        "          host: large.llm.example.com\n"
        "          replicas: {min: 1, max: 11}\n"
        "          slo: {p95: 900ms}\n"
    )
    edit_once(team, "    - {name: llm-notebooks,", second + "    - {name: llm-notebooks,")
    found = _found(_validate(gpuplane, platform), "endpoint-quota")
    assert {d["line"] for d in found} == {
        _line_of(team, "max: 8}"),
        _line_of(team, "max: 11}"),
    }
    large = next(d for d in found if d["line"] == _line_of(team, "max: 11}"))
    assert "(11 + 1 surge) x 2 = 24" in large["message"]
    assert "other endpoints there (9) that is 33" in large["message"]
    assert "`replicas.max` to 10" in large["hint"]
    chat = next(d for d in found if d["line"] == _line_of(team, "max: 8}"))
    assert "`replicas.max` to 7" in chat["hint"]  # 32 - 24 = 8 slices: 7 + 1
    edit_once(team, "max: 11}", "max: 10}")
    assert not _found(_validate(gpuplane, platform), "endpoint-quota")


def test_borrowing_does_not_count(gpuplane, platform) -> None:
    """recsys may borrow 24 more slices of l40s-infer, but only its nominal 24 counts:
    ranker at 23 + 1 = 24 fits, at 24 + 1 = 25 does not."""
    team = platform / "teams" / "recsys.yaml"
    edit_once(team, RANKER_REPLICAS, "          replicas: {min: 4, max: 23}\n")
    assert not _found(_validate(gpuplane, platform), "endpoint-quota")
    edit_once(team, "max: 23}", "max: 24}")
    found = _one(gpuplane, platform, "endpoint-quota")
    assert "of 24" in found["message"] and "`replicas.max` to 23" in found["hint"]


def test_max_below_min(gpuplane, platform) -> None:
    team = platform / "teams" / "llm.yaml"
    edit_once(team, CHAT_REPLICAS, "          replicas: {min: 2, max: 1}\n")
    found = _one(gpuplane, platform, "endpoint-replicas")
    assert found["line"] == _line_of(team, "max: 1}")
    edit_once(
        team, "          replicas: {min: 2, max: 1}", "          " + _backticked(found["hint"])
    )
    assert not _found(_validate(gpuplane, platform), "endpoint-replicas")


def test_endpoints_only_in_inference_namespaces(gpuplane, platform) -> None:
    team = platform / "teams" / "llm-eval.yaml"
    serve = "      cluster: staging-west\n      purpose: inference\n"
    edit_once(team, serve, serve.replace("inference", "batch"))
    found = _one(gpuplane, platform, "endpoint-purpose")
    assert found["line"] == _line_of(team, "endpoints:")
    assert "purpose: inference" in found["hint"]


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (
            "pool: l40s-infer\n          host: chat",
            "pool: l40s-infr\n          host: chat",
            "exist",
        ),
        (
            "pool: l40s-infer\n          host: chat",
            "pool: h100-train\n          host: chat",
            "not an",
        ),
        (
            "pool: l40s-infer\n          host: chat",
            "pool: l4-serve\n          host: chat",
            "cluster",
        ),
    ],
)
def test_the_pool_is_an_inference_pool_of_the_cluster(gpuplane, platform, old, new, says) -> None:
    team = platform / "teams" / "llm.yaml"
    edit_once(team, old, new)
    found = _one(gpuplane, platform, "endpoint-pool")
    assert found["line"] == _line_of(team, new.split("\n")[0])
    assert says in found["message"]
    assert found["hint"].endswith("set `pool:` to one of l40s-infer"), found["hint"]
    edit_once(team, new, old)
    assert not _found(_validate(gpuplane, platform), "endpoint-pool")


def test_a_pool_the_team_has_no_quota_on(gpuplane, platform) -> None:
    """llm-eval has quota on l4-serve only among staging-west's inference pools."""
    team = platform / "teams" / "llm-eval.yaml"
    edit_once(team, "    - {pool: l4-serve, nominal: 4, borrowingLimit: 4, lendingLimit: 2}\n", "")
    found = _found(_validate(gpuplane, platform), "endpoint-pool")
    assert [d["line"] for d in found] == [_line_of(team, "pool: l4-serve")]
    assert "no quota on pool 'l4-serve'" in found[0]["message"]


def test_a_signal_the_server_does_not_offer(gpuplane, platform) -> None:
    team = platform / "teams" / "recsys.yaml"
    edit_once(
        team,
        "          slo: {p95: 100ms}              # whole request\n",
        "          slo: {p95: 100ms}\n          autoscaling: {signal: kv-cache, target: 0.8}\n",
    )
    found = _one(gpuplane, platform, "endpoint-signal")
    assert found["line"] == _line_of(team, "signal: kv-cache")
    assert found["hint"] == "set `signal:` to one of queue-depth"  # Triton's only one
    edit_once(team, "signal: kv-cache, target: 0.8", "signal: queue-depth, target: 4")
    assert not _found(_validate(gpuplane, platform), "endpoint-signal")


def test_a_kv_cache_target_above_one(gpuplane, platform) -> None:
    team = platform / "teams" / "llm-eval.yaml"
    edit_once(team, "target: 0.8}", "target: 80}")
    found = _one(gpuplane, platform, "endpoint-signal")
    assert found["line"] == _line_of(team, "target: 80}")
    edit_once(team, "target: 80}", "target: 0.8}")
    assert not _found(_validate(gpuplane, platform), "endpoint-signal")


def test_names_unique_in_a_namespace(gpuplane, platform) -> None:
    team = platform / "teams" / "llm.yaml"
    twin = (
        "        - name: chat\n"
        "          server: vllm\n"
        "          model: llama-3.1-8b-instruct\n"
        "          pool: l40s-infer\n"
        "          host: chat2.llm.example.com\n"
        "          replicas: {min: 1, max: 2}\n"
        "          slo: {p95: 500ms}\n"
    )
    edit_once(team, "    - {name: llm-notebooks,", twin + "    - {name: llm-notebooks,")
    found = _one(gpuplane, platform, "endpoint-name-duplicate")
    lines = [i for i, x in enumerate(team.read_text().splitlines(), 1) if "- name: chat" in x]
    assert found["line"] == lines[1]
    edit_once(
        team,
        "        - name: chat\n          server: vllm\n          model: llama-3.1-8b-instruct\n          pool: l40s-infer\n          host: chat2",
        "        - name: chat-2\n          server: vllm\n          model: llama-3.1-8b-instruct\n          pool: l40s-infer\n          host: chat2",
    )
    assert not _found(_validate(gpuplane, platform), "endpoint-name-duplicate")


def test_two_slices_of_a_time_shared_gpu_are_refused_on_the_gpus_line(gpuplane, platform) -> None:
    """l40s-infer is time-sliced: the device plugin refuses a container asking for two
    slices (failRequestsGreaterThanOne); the hint's `gpus: 1` clears it."""
    team = platform / "teams" / "llm.yaml"
    edit_once(
        team,
        "pool: l40s-infer\n          host",
        "pool: l40s-infer\n          gpus: 2\n          host",
    )
    found = _one(gpuplane, platform, "endpoint-shared-gpus")
    assert (found["file"], found["line"]) == ("teams/llm.yaml", _line_of(team, "gpus: 2"))
    assert "time-slicing" in found["message"]
    edit_once(team, "gpus: 2", _backticked(found["hint"]))
    assert not _found(_validate(gpuplane, platform), "endpoint-shared-gpus")


def test_a_single_replica_endpoint_is_warned_and_the_hint_clears_it(gpuplane, platform) -> None:
    """ranker at min 1: its PDB (minAvailable 1) would allow no eviction of a lone replica."""
    team = platform / "teams" / "recsys.yaml"
    edit_once(team, RANKER_REPLICAS, "          replicas: {min: 1, max: 12}\n")
    found = _one(gpuplane, platform, "endpoint-single-replica")
    assert found["level"] == "warning"
    assert (found["file"], found["line"]) == ("teams/recsys.yaml", _line_of(team, "{min: 1,"))
    assert _backticked(found["hint"]) == "replicas: {min: 2, max: 12}"
    edit_once(team, "replicas: {min: 1, max: 12}", _backticked(found["hint"]))
    report = _validate(gpuplane, platform)
    assert not [d for d in report["findings"] if d["rule"].startswith("endpoint-")]
