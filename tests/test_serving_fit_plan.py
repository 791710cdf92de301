"""`fit` and `plan` answer for each endpoint at its maximum (renderer/admission/endpoints.py,
commands/plan.py's EndpointRow), with numbers worked out by hand from the example:

- chat (teams/llm.yaml): 2..8 replicas of 1 slice on l40s-infer; llm's nominal there 32.
  At max 8 pods, 8 slices; with the rolling update's surge (8 + 1) x 1 = 9 of 32.
- ranker (teams/recsys.yaml): 4..12 of 1 slice on l40s-infer; recsys's nominal 24:
  (12 + 1) x 1 = 13 of 24.
- candidate (teams/llm-eval.yaml): 2..3 of 1 L4 on l4-serve; llm-eval's nominal 4:
  (3 + 1) x 1 = 4 of 4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO

TEMPLATE = REPO / "rendered" / "prod-east" / "templates" / "llm-serve" / "deployment-chat.yaml"
ENDPOINT_LABEL = "gpuplane.dev/endpoint"  # docs: the label on an endpoint's pods


def _deployment(tmp_path: Path, *, endpoint: str | None, replicas: int = 1) -> Path:
    """chat's vLLM template, as a team ships it for `endpoint`, or, without one, as a plain
    Deployment of no endpoint (its endpoint label removed)."""
    body: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text())
    body["spec"]["replicas"] = replicas
    for labels in (body["metadata"]["labels"], body["spec"]["template"]["metadata"]["labels"]):
        labels.pop(ENDPOINT_LABEL, None)
        if endpoint is not None:
            labels[ENDPOINT_LABEL] = endpoint
    body["metadata"]["name"] = endpoint or "plain"
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def test_fit_answers_for_the_endpoint_at_its_maximum(tmp_path: Path, gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "fit", str(_deployment(tmp_path, endpoint="chat")))
    assert result.exit_code == 0, result.output
    assert result.output.split(":")[1].strip().startswith("fits")
    assert "each of the 8 pods is a Workload of its own: all 8 can be admitted at once" in (
        result.output
    )
    assert "nvidia.com/gpu  8 of nominal 32" in result.output
    assert "answered for endpoint chat at its maximum: replicas.max 8 pods" in result.output


def test_fit_of_a_deployment_that_is_no_endpoint_counts_its_replicas(
    tmp_path: Path, gpuplane
) -> None:
    path = _deployment(tmp_path, endpoint=None, replicas=3)
    result = gpuplane("-C", str(REPO), "fit", str(path))
    assert "all 3 can be admitted at once" in result.output
    assert "at its maximum" not in result.output


def test_fit_refuses_an_endpoint_whose_maximum_outgrows_the_quota(
    tmp_path: Path, platform: Path, gpuplane
) -> None:
    """chat at max 70: 70 slices, over what llm can ever hold on l40s-infer (nominal 32 plus
    borrowing 32, capped by the pool's 60 slices at its largest)."""
    team = platform / "teams" / "llm.yaml"
    team.write_text(team.read_text().replace("{min: 2, max: 8}", "{min: 2, max: 70}"))
    result = gpuplane("-C", str(platform), "fit", str(_deployment(tmp_path, endpoint="chat")))
    assert result.exit_code != 0
    assert "replicas.max 70" in result.output


def _plan_endpoints(gpuplane) -> dict[str, dict[str, Any]]:
    result = gpuplane("-C", str(REPO), "plan", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    return {e["endpoint"]: e for c in report["clusters"] for e in c["endpoints"]}


def test_plan_json_shows_each_endpoint_at_its_maximum(gpuplane) -> None:
    rows = _plan_endpoints(gpuplane)
    got = {name: (r["pool"], r["atMax"], r["teamAtMax"], r["nominal"]) for name, r in rows.items()}
    assert got == {
        "chat": ("l40s-infer", 9, 9, 32),
        "ranker": ("l40s-infer", 13, 13, 24),
        "candidate": ("l4-serve", 4, 4, 4),
    }
    assert rows["chat"]["replicas"] == {"min": 2, "max": 8}
    assert all(r["fits"] and r["surge"] == 1 for r in rows.values())


def test_plan_text_and_markdown_show_the_arithmetic(gpuplane) -> None:
    text = gpuplane("-C", str(REPO), "plan", "--wide").output
    markdown = gpuplane("-C", str(REPO), "plan", "--format", "markdown").output
    for out in (text, markdown):
        assert "(8 + 1) x 1 = 9" in out and "9 of 32" in out
        assert "(12 + 1) x 1 = 13" in out and "13 of 24" in out
        assert "(3 + 1) x 1 = 4" in out and "4 of 4" in out
    assert "### Endpoints at their maximum" in markdown


def test_plan_focus_on_a_team_keeps_its_endpoints_only(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--team", "recsys", "--format", "json")
    report = json.loads(result.output)
    names = [e["endpoint"] for c in report["clusters"] for e in c["endpoints"]]
    assert names == ["ranker"]
