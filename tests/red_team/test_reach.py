"""Attacks on a team's reach through its own file: more namespaces for more caps, caps that cap
nothing, and a team name that takes the Queue's Cohort. Each is refused at the attacker's line,
or renders ResourceQuotas that together hold the team to its file, evaluated as the API server
would: what the team's namespaces may request in all is the sum of their `hard` limits.

GPU reach across purposes (more ClusterQueues, each borrowing on its own) is attacked in
tests/test_team_reach.py, on the rendered Kueue objects.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from renderer.model import quantity
from tests.red_team.harness import Attempt, errors, refused_on

VISION = "teams/vision.yaml"
NOTEBOOKS = "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n"
PROD_EAST_CPUS = 4 * 224 + 6 * 128 + 2 * 256
"""pools/h100-train.yaml, l40s-infer.yaml and a100-mig.yaml: nodes x host.cpus."""


def _line(attempt: Attempt, needle: str) -> int:
    lines = attempt.path(VISION).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def _extra(names: list[tuple[str, str]]) -> str:
    return "".join(
        f"    - {{name: {name}, cluster: prod-east, purpose: {purpose}}}\n"
        for name, purpose in names
    )


# --- namespaces multiply caps -----------------------------------------------------------------


@pytest.mark.parametrize(
    "added",
    [
        [("vision-train2", "training")],  # one more of a purpose the team has
        [(f"vision-nb{i}", "notebooks") for i in range(7)],  # eight notebooks namespaces
        [("vision-serve2", "inference"), ("vision-serve3", "inference")],
    ],
    ids=["second-training", "eight-notebooks", "three-inference"],
)
def test_a_second_namespace_of_a_purpose_is_refused(attempt: Attempt, added: list) -> None:
    attempt.edit(VISION, NOTEBOOKS, NOTEBOOKS + _extra(added))
    found = errors(attempt.findings(), "namespace-purpose-repeated")
    assert len(found) == len(added)
    for diagnostic, (name, _) in zip(found, added, strict=True):
        assert diagnostic.at.file == VISION
        assert diagnostic.at.line == _line(attempt, f"{{name: {name},")
        assert f"'{name}' would be a second" in diagnostic.message


def _team_requests(attempt: Attempt, team: str) -> dict[str, Decimal]:
    """What the team's namespaces may request in all: the sum of their ResourceQuotas."""
    rendered = attempt.render()
    assert not errors(rendered.diagnostics)
    total: dict[str, Decimal] = {}
    for manifest in rendered.manifests["prod-east"]:
        body = manifest.body
        if body["kind"] != "ResourceQuota":
            continue
        if body["metadata"]["labels"].get("gpuplane.dev/team") != team:
            continue
        for key in (
            "requests.cpu",
            "requests.memory",
            "requests.storage",
            "persistentvolumeclaims",
        ):
            total[key] = total.get(key, Decimal(0)) + quantity.parse(body["spec"]["hard"][key])
    return total


@pytest.mark.parametrize(
    "added",
    [
        [("vision-batch", "batch")],  # a fourth purpose: a fourth ResourceQuota
        [],  # the example's three namespaces as they are
    ],
    ids=["fourth-purpose", "as-declared"],
)
def test_the_teams_namespaces_together_never_request_more_than_its_caps(
    attempt: Attempt, added: list
) -> None:
    attempt.edit(VISION, NOTEBOOKS, NOTEBOOKS + _extra(added))
    total = _team_requests(attempt, "vision")
    # teams/vision.yaml: cpu "512", memory 4Ti, storage 20Ti, persistentVolumeClaims 50
    assert total["requests.cpu"] <= 512
    assert total["requests.memory"] <= quantity.parse("4Ti")
    assert total["requests.storage"] <= quantity.parse("20Ti")
    assert total["persistentvolumeclaims"] <= 50
    # an even split loses at most a rounding step per namespace
    assert total["requests.cpu"] > 512 - 3 - len(added)


def test_shares_that_add_up_to_more_than_the_team_are_refused(attempt: Attempt) -> None:
    attempt.edit(
        VISION,
        NOTEBOOKS,
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks, resources: "
        "{cpu: '300', memory: 3Ti}}\n",
    )
    attempt.edit(
        VISION,
        "{name: vision-train, cluster: prod-east, purpose: training}",
        "{name: vision-train, cluster: prod-east, purpose: training, resources: "
        "{cpu: '300', memory: 2Ti}}",
    )
    found = refused_on(attempt.findings(), VISION, "namespace-caps-exceed-team")
    serve = 96  # teams/vision.yaml: vision-serve's own share
    assert f"take {300 + 300 + serve} cpu in all, more than the team's 512" in found.message
    over = 300 + 300 + serve - 512
    assert (
        found.hint
        == f"lower spec.namespaces[2].resources.cpu by {over}, or raise spec.resources.cpu"
    )


def test_a_share_of_a_cap_the_team_does_not_have_is_refused(attempt: Attempt) -> None:
    """persistentVolumeClaims has no default on prod-east once the team drops its own: a share
    of it would cap nothing the file says."""
    attempt.edit("clusters/prod-east.yaml", "      persistentVolumeClaims: 20\n", "")
    attempt.edit(VISION, "    persistentVolumeClaims: 50\n", "")
    attempt.edit(
        VISION,
        NOTEBOOKS,
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks, resources: "
        "{persistentVolumeClaims: 1000}}\n",
    )
    found = refused_on(attempt.findings(), VISION, "namespace-caps-exceed-team")
    assert "has no persistentVolumeClaims cap" in found.message


# --- caps that cap nothing --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('cpu: "512"', 'cpu: "100000000"', "cpu"),
        ('cpu: "512"', f'cpu: "{PROD_EAST_CPUS + 1}"', "cpu"),  # one above the cluster
        ("memory: 4Ti", "memory: 4Ei", "memory"),
        ("memory: 4Ti", "memory: 1Pi", "memory"),
    ],
)
def test_a_cap_beyond_the_cluster_is_refused_with_its_figure(
    attempt: Attempt, old: str, new: str, key: str
) -> None:
    attempt.edit(VISION, old, new)
    found = refused_on(attempt.findings(), VISION, "cap-exceeds-cluster")
    assert found.at.line == _line(attempt, new)
    if key == "cpu":
        assert f"hold {PROD_EAST_CPUS} of CPUs" in found.message
        assert found.hint == f"set it to at most {PROD_EAST_CPUS}"
    else:
        assert "of memory at their maximum size" in found.message


def test_the_whole_cluster_is_a_cap_a_team_may_have(attempt: Attempt) -> None:
    attempt.edit(VISION, 'cpu: "512"', f'cpu: "{PROD_EAST_CPUS}"')
    assert not errors(attempt.findings(), "cap-exceeds-cluster")


def test_applying_the_hint_clears_the_finding(attempt: Attempt) -> None:
    attempt.edit(VISION, 'cpu: "512"', 'cpu: "100000000"')
    found = refused_on(attempt.findings(), VISION, "cap-exceeds-cluster")
    figure = found.hint.removeprefix("set it to at most ") if found.hint else ""
    attempt.edit(VISION, 'cpu: "100000000"', f'cpu: "{figure}"')
    assert not errors(attempt.findings())


# --- names that belong to the queue -----------------------------------------------------------


@pytest.mark.parametrize("queue", ["prod"])
def test_a_team_named_like_its_queue_is_refused(attempt: Attempt, queue: str) -> None:
    """A new team file `teams/prod.yaml`: its Cohort would be the Queue's own."""
    text = attempt.path(VISION).read_text()
    text = text.replace("name: vision\n", f"name: {queue}\n").replace("vision-", f"{queue}-")
    attempt.write(f"teams/{queue}.yaml", text)
    found = refused_on(attempt.findings(), f"teams/{queue}.yaml", "cohort-name-taken")
    assert f"which is queue '{queue}''s" in found.message
