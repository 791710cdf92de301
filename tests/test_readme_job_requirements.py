"""The generated README's "What your jobs must carry", per team: a Job written from that table
alone (and the team's namespace table above it for where and what to request) is admitted by
`gpuplane fit`, the admission engine that runs the cluster's own admission policies; and one
without any single row of it is refused by the policy that row stands for.

The values are read from the README (the Markdown a team lead reads), never from the model: if
the section went wrong or quiet, the Job would be refused."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO

CLUSTERS = ("prod-east", "staging-west")


def _sections(cluster: str) -> dict[str, str]:
    """Each team's part of the cluster README, by team name."""
    text = (REPO / "rendered" / cluster / "README.md").read_text(encoding="utf-8")
    teams = text.split("\n## Teams\n", 1)[1]
    parts = re.split(r"(?m)^### (\S+)\n", teams)[1:]
    return dict(zip(parts[::2], parts[1::2], strict=True))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def _codes(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _job_from(section: str, *, leave_out: str = "") -> tuple[dict[str, Any], str]:
    """A Job built from the section's table alone, and the namespace it goes to."""
    carry = section.split("#### What your jobs must carry", 1)[1]
    labels: dict[str, str] = {}
    registries: list[str] = []
    ttl = None
    for line in carry.splitlines():
        if not line.startswith("| ") or line.startswith("| a job must carry"):
            continue
        what, here = _cells(line)
        if what.startswith("label "):
            labels[_codes(what)[0]] = _codes(here)[0]
        elif what == "images only from":
            registries = _codes(here)
        elif "ttlSecondsAfterFinished" in what:
            ttl = int(re.search(r"at most (\d+) seconds", here)[1])  # type: ignore[index]
    assert labels and registries and ttl is not None, carry
    # where to run and what to request: the team's table, its training namespace's first row
    rows = [
        _cells(line) for line in section.splitlines() if re.match(r"\| \S+ \| training \|", line)
    ]
    namespace, resource = rows[0][0], rows[0][5]
    if leave_out.startswith("label "):
        labels.pop(leave_out.removeprefix("label "))
    image = registries[0] if leave_out != "images" else "docker.io/library/"
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": f"{image}{'' if image.endswith('/') else '/'}trainer:1.0",
                        "resources": {"limits": {resource: 1}},
                    }
                ],
            }
        }
    }
    if leave_out != "ttl":
        spec["ttlSecondsAfterFinished"] = ttl
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "from-the-readme", "namespace": namespace, "labels": labels},
        "spec": spec,
    }
    return job, namespace


def _fit(gpuplane: Callable[..., Any], tmp_path: Path, job: dict[str, Any]) -> Any:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return gpuplane("-C", str(REPO), "fit", str(path))


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_job_written_from_the_readme_alone_is_admitted(
    gpuplane: Callable[..., Any], tmp_path: Path, cluster: str
) -> None:
    sections = _sections(cluster)
    assert sections
    for team, section in sections.items():
        job, _ = _job_from(section)
        result = _fit(gpuplane, tmp_path, job)
        assert result.exit_code == 0, (team, result.output)
        assert "refused by" not in result.output and "refusal" not in result.output, result.output


def test_each_row_is_one_the_policies_need(gpuplane: Callable[..., Any], tmp_path: Path) -> None:
    """Leave out any one row and `fit` refuses the Job, naming the policy that row stands for."""
    section = _sections("prod-east")["llm"]
    job, _ = _job_from(section)
    policies = {
        "label gpuplane.dev/team": "gpuplane-common-labels",
        "label gpuplane.dev/cost-center": "gpuplane-common-labels",
        "label kueue.x-k8s.io/priority-class": "gpuplane-priority",
        "images": "gpuplane-images-llm",
        "ttl": "gpuplane-ttl-jobs",
    }
    for row, policy in policies.items():
        without, _ = _job_from(section, leave_out=row)
        assert without != job
        result = _fit(gpuplane, tmp_path, without)
        assert result.exit_code == 1, (row, result.output)
        assert f"refused by ValidatingAdmissionPolicy '{policy}'" in result.output, row
