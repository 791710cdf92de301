"""No team holds more on any pool than its file says and `plan --team` promises, in what Kueue
itself would enforce: the rendered Cohorts and ClusterQueues read as Kueue reads them
(tests/kueue_reach.py), every other team idle, the team's ClusterQueues admitting in every order.

The limits are read from the team files as YAML, not from gpuplane's model: nominal +
borrowingLimit (the pool's whole size when borrowing is unlimited) is the file's ceiling. Kueue
may give less (the other teams lend less than the borrowing limit): `plan --team`'s "reachable"
is that figure, and the reach found here must equal it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.commands.plan import build_plan
from renderer.pipeline import load_platform
from tests.conftest import REPO
from tests.kueue_reach import most_held, team_queues, tree
from tests.red_team.harness import Attempt

CLUSTERS = ("prod-east", "staging-west")


def _objects(folder: Path) -> list[dict[str, Any]]:
    return [
        body
        for path in sorted(folder.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for body in [yaml.safe_load(path.read_text())]
        if body["kind"] in ("Cohort", "ClusterQueue")
    ]


def _ceilings(root: Path) -> dict[tuple[str, str, str], int]:
    """(team, pool, resource) -> nominal + borrowingLimit from the team file (None: unlimited)."""
    found: dict[tuple[str, str, str], int] = {}
    for path in sorted((root / "teams").glob("*.yaml")):
        body = yaml.safe_load(path.read_text())
        team, spec = body["metadata"]["name"], body["spec"]
        for entry in spec.get("gpus", []):
            resource = (
                f"nvidia.com/mig-{entry['profile']}" if "profile" in entry else "nvidia.com/gpu"
            )
            if "borrowingLimit" in entry:
                limit = entry["nominal"] + entry["borrowingLimit"]
                found[(team, entry["pool"], resource)] = limit
    return found


def _reach(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    nodes = tree(objects)
    reach: dict[tuple[str, str, str], int] = {}
    for team, queues in team_queues(objects).items():
        frs = {fr for q in queues for fr in nodes[q].quotas if fr[1] not in ("cpu", "memory")}
        for pool, resource in sorted(frs):
            reach[(team, pool, resource)] = int(most_held(nodes, queues, (pool, resource)))
    return reach


def _planned(root: Path) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(team, pool, resource) -> plan's (reachable, maximum)."""
    report = build_plan(load_platform(root).platform)
    return {
        (row.team, row.pool, row.resource): (row.reachable, row.maximum)
        for cluster in report.clusters
        for row in cluster.teams
    }


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_no_team_reaches_past_its_file_or_its_plan_on_the_committed_platform(
    cluster: str,
) -> None:
    reach = _reach(_objects(REPO / "rendered" / cluster / "queueing"))
    ceilings = _ceilings(REPO)
    planned = _planned(REPO)
    assert reach
    for key, held in reach.items():
        if held == 0 and key not in planned:
            continue  # a resource the team has no quota for on that pool: nothing, as it should
        reachable, maximum = planned[key]
        assert held == reachable, (key, held, reachable)
        assert held <= maximum, (key, held, maximum)
        if key in ceilings:
            assert held <= ceilings[key], (key, held, ceilings[key])


def test_vision_holds_its_twenty_mig_slices_across_notebooks_and_training() -> None:
    """The hole the example had: vision's notebooks and training ClusterQueues both list
    a100-mig 1g.10gb; with the limits per ClusterQueue, Kueue admitted 22 where the file
    (nominal 12 + borrowingLimit 8) and plan say 20."""
    objects = _objects(REPO / "rendered" / "prod-east" / "queueing")
    queues = team_queues(objects)["vision"]
    assert {"vision-notebooks", "vision-training"} <= set(queues)
    nodes = tree(objects)
    assert most_held(nodes, queues, ("a100-mig", "nvidia.com/mig-1g.10gb")) == 12 + 8


def _rendered_queueing(attempt: Attempt, cluster: str) -> list[dict[str, Any]]:
    rendered = attempt.render()
    assert not [d for d in rendered.diagnostics if d.severity.value == "error"]
    return [
        m.body
        for m in rendered.manifests[cluster]
        if m.kind in ("Cohort", "ClusterQueue") and m.layer == "queueing"
    ]


VISION_NOTEBOOKS = "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n"
LLM_NOTEBOOKS = "    - {name: llm-notebooks, cluster: prod-east, purpose: notebooks}\n"
ATTACKS = {
    # a fourth purpose: its ClusterQueue lists every pool batch work may use
    "vision-adds-batch": (
        "vision",
        [
            (
                VISION_NOTEBOOKS,
                VISION_NOTEBOOKS + "    - {name: vision-batch, cluster: prod-east, "
                "purpose: batch}\n",
            )
        ],
    ),
    # ... and lends all it has (no lendingLimit), so that the Queue's Cohort holds more of it
    "vision-adds-batch-and-lends-all": (
        "vision",
        [
            (
                VISION_NOTEBOOKS,
                VISION_NOTEBOOKS + "    - {name: vision-batch, cluster: "
                "prod-east, purpose: batch}\n",
            ),
            (
                "{pool: a100-mig, profile: 1g.10gb, nominal: 12, borrowingLimit: 8, lendingLimit: 6}",
                "{pool: a100-mig, profile: 1g.10gb, nominal: 12, borrowingLimit: 8}",
            ),
        ],
    ),
    # llm already has training and notebooks on a100-mig with unlimited borrowing on 2g.20gb
    "llm-adds-batch": (
        "llm",
        [
            (
                LLM_NOTEBOOKS,
                LLM_NOTEBOOKS + "    - {name: llm-batch, cluster: prod-east, purpose: batch}\n",
            )
        ],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_more_purposes_never_widen_a_teams_reach(attack: str, tmp_path: Path) -> None:
    """A hostile team lead adds namespaces of other purposes to get more ClusterQueues, each
    of which used to borrow on its own: the team's reach stays what its file and plan say."""
    attempt = Attempt.on_example(tmp_path)
    team, edits = ATTACKS[attack]
    for old, new in edits:
        attempt.edit(f"teams/{team}.yaml", old, new)
    objects = _rendered_queueing(attempt, "prod-east")
    reach = _reach(objects)
    planned = _planned(attempt.root)
    ceilings = _ceilings(attempt.root)
    assert f"{team}-batch" in team_queues(objects)[team]
    for key, held in reach.items():
        if key[0] != team or (held == 0 and key not in planned):
            continue
        assert held <= planned[key][1], (key, held)
        assert held == planned[key][0], (key, held)
        if key in ceilings:
            assert held <= ceilings[key], (key, held)
