"""`gpuplane diff` rates a change by what it lets a team reach: a namespace a platform component
uses, a widened egress, a removed quota cap, a code-owners change and a new admission-policy
exemption (an image registry added, Pod Security loosened, a reserved namespace released) are
high risk. Each case is a real git repository of the example platform and one edit to it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.diff.reach import namespace_caps
from renderer.commands.diff.revision import render
from renderer.commands.diff.teams import teams
from renderer.output.validation import OutputValidator
from tests.conftest import REPO, commit_all, copy_inputs, edit_once

pytestmark = pytest.mark.slow  # one diff or render per attack: docs/testing.md

VISION = "teams/vision.yaml"


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, git_env: None) -> Path:
    root = copy_inputs(REPO, tmp_path_factory.mktemp("risk") / "repo")
    # the base reserves one more namespace, a vault the platform team runs for team vision
    edit_once(
        root / "clusters/prod-east.yaml",
        "  teamDefaults:\n",
        "  reservedNamespaces: [vision-vault]\n  teamDefaults:\n",
    )
    # and runs vision's training namespace under restricted instead of the default baseline
    edit_once(
        root / VISION,
        "cluster: prod-east, purpose: training}",
        "cluster: prod-east, purpose: training, podSecurity: restricted}",
    )
    return commit_all(root, "base")


def _findings(gpuplane: Callable[..., Any], repo: Path) -> list[dict[str, Any]]:
    result = gpuplane("-C", str(repo), "diff", "--base", "HEAD", "--format", "json")
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.output)["changes"]
    return found


def _one(found: list[dict[str, Any]], code: str, subject: str | None = None) -> dict[str, Any]:
    matches = [f for f in found if f["code"] == code and subject in (None, f["subject"])]
    assert len(matches) == 1, (code, subject, [(f["code"], f["subject"]) for f in found])
    return matches[0]


def test_a_new_egress_rule_even_a_narrow_one_is_high(repo: Path, gpuplane: Any) -> None:
    edit_once(
        repo / VISION,
        "      description: labelling service and dataset catalog\n",
        "      description: labelling service and dataset catalog\n"
        "    - cidr: 10.30.1.0/24\n      ports: [5432]\n      description: a database\n",
    )
    f = _one(_findings(gpuplane, repo), "egress-opened", "10.30.1.0/24")
    assert f["risk"] == "high" and "5432" in f["summary"]


def test_a_new_port_on_an_allowed_network_is_high(repo: Path, gpuplane: Any) -> None:
    edit_once(
        repo / VISION,
        "      ports: [443]\n      description: labelling",
        "      ports: [443, 8443]\n      description: labelling",
    )
    f = _one(_findings(gpuplane, repo), "egress-opened", "10.20.0.0/16")
    assert f["risk"] == "high" and "TCP 8443" in f["summary"].upper()


def test_a_narrowed_egress_is_low(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / VISION, "cidr: 10.20.0.0/16", "cidr: 10.20.0.0/24")
    found = _findings(gpuplane, repo)
    assert _one(found, "egress-closed")["risk"] == "low"
    assert not [f for f in found if f["code"] == "egress-opened"]  # /24 is inside the /16


def test_a_cap_removed_where_no_default_fills_it_is_high(repo: Path, gpuplane: Any) -> None:
    """vision drops its PVC count and the cluster drops its default in the same change: no
    ResourceQuota counts vision's PersistentVolumeClaims any more."""
    edit_once(repo / VISION, "    persistentVolumeClaims: 50\n", "")
    edit_once(repo / "clusters/prod-east.yaml", "      persistentVolumeClaims: 20\n", "")
    found = _findings(gpuplane, repo)
    f = _one([f for f in found if f["team"] == "vision"], "quota-cap-removed")
    assert f["risk"] == "high" and f["subject"] == "persistentVolumeClaims" and "50" in f["summary"]


def test_a_cap_the_cluster_default_takes_over_is_a_change_rated_by_direction(
    repo: Path, gpuplane: Any
) -> None:
    """vision drops cpu "512" (the prod-east default is "128": it falls) and memory 4Ti is
    raised to 8Ti."""
    edit_once(repo / VISION, '    cpu: "512"\n    memory: 4Ti\n', "    memory: 8Ti\n")
    found = [f for f in _findings(gpuplane, repo) if f["team"] == "vision"]
    cpu = _one(found, "quota-cap-changed", "cpu")
    assert (
        cpu["risk"] == "low" and "512 → 128" in cpu["summary"] and "teamDefaults" in cpu["summary"]
    )
    memory = _one(found, "quota-cap-changed", "memory")
    assert memory["risk"] == "medium" and "4Ti → 8Ti" in memory["summary"]
    assert not [f for f in found if f["code"] == "quota-cap-removed"]


def test_a_team_codeowners_change_is_high(repo: Path, gpuplane: Any) -> None:
    edit_once(
        repo / VISION, 'codeowners: ["@example/vision"]', 'codeowners: ["@example/vision-interns"]'
    )
    f = _one(_findings(gpuplane, repo), "codeowners-changed")
    assert f["risk"] == "high" and "@example/vision-interns" in f["summary"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("      - docker.io/library/ ", "      - docker.io/ "),  # every Docker Hub account
        ("      - cidr: 10.20.0.0/16\n", "      - cidr: 10.0.0.0/8\n"),
    ],
)
def test_a_wider_allowlist_is_high(repo: Path, gpuplane: Any, old: str, new: str) -> None:
    """gpuplane.yaml's allowlists bound every team's registries and egress: widening one
    widens what any team file may then ask for."""
    edit_once(repo / "gpuplane.yaml", old, new)
    assert _one(_findings(gpuplane, repo), "repository-changed")["risk"] == "high"


def test_the_repository_codeowners_change_is_high(repo: Path, gpuplane: Any) -> None:
    edit_once(
        repo / "gpuplane.yaml",
        'codeowners: ["@example/platform"]',
        'codeowners: ["@example/someone"]',
    )
    assert _one(_findings(gpuplane, repo), "repository-changed")["risk"] == "high"


def test_an_image_registry_added_is_an_exemption_and_high(repo: Path, gpuplane: Any) -> None:
    edit_once(
        repo / VISION,
        "    - registry.example.com/base/\n",
        "    - registry.example.com/base/\n    - docker.io/library/\n",
    )
    assert _one(_findings(gpuplane, repo), "images-widened")["risk"] == "high"


def test_pod_security_loosened_is_high(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / VISION, "purpose: training, podSecurity: restricted}", "purpose: training}")
    f = _one(_findings(gpuplane, repo), "namespace-changed", "vision-train")
    assert f["risk"] == "high" and "loosened" in f["summary"]


def test_a_reserved_namespace_released_is_high(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / "clusters/prod-east.yaml", "  reservedNamespaces: [vision-vault]\n", "")
    f = _one(_findings(gpuplane, repo), "reservation-removed", "vision-vault")
    assert f["risk"] == "high" and f["cluster"] == "prod-east"


@pytest.mark.slow
@pytest.mark.parametrize(
    "namespace", ["argocd", "gpu-operator", "kube-system", "vision-vault", "kube-x", "cert-manager"]
)
def test_a_namespace_a_platform_component_uses_is_high(
    repo: Path, committed: Path, namespace: str
) -> None:
    """The policy refuses the name (tenancy); diff rates it on its own, from
    renderer.model.reserved, should a change reach it: both revisions compared directly."""
    edit_once(
        repo / VISION,
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n"
        f"    - {{name: {namespace}, cluster: prod-east, purpose: batch}}\n",
    )
    validator = OutputValidator()
    base = render(committed, validator, "base", None)
    head = render(repo, validator, "head", None)
    assert "vision" in head.platform.teams
    found = [f for f in teams(base, head) if f.subject == namespace]
    assert [(f.code, f.risk.value) for f in found] == [("namespace-platform", "high")]


def _line(repo: Path, file: str, text: str) -> str:
    """`file:line` of the one line of `file` that holds `text`."""
    numbers = [
        n for n, line in enumerate((repo / file).read_text().splitlines(), 1) if text in line
    ]
    assert len(numbers) == 1, (text, numbers)
    return f"{file}:{numbers[0]}"


BATCH = "    - {name: vision-batch, cluster: prod-east, purpose: batch}\n"


def _add_batch(repo: Path) -> None:
    edit_once(
        repo / VISION,
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n",
        "    - {name: vision-notebooks, cluster: prod-east, purpose: notebooks}\n" + BATCH,
    )


def test_a_namespace_of_a_purpose_the_team_had_none_of_is_medium(repo: Path, gpuplane: Any) -> None:
    """A ClusterQueue of its own for the new purpose, and that purpose's pools: reviewed as a
    namespace's purpose change is."""
    _add_batch(repo)
    f = _one(_findings(gpuplane, repo), "namespace-added", "vision-batch")
    assert f["risk"] == "medium" and "ClusterQueue vision-batch" in f["summary"]
    assert f["at"] == _line(repo, VISION, "vision-batch")


def test_a_namespace_added_splits_the_teams_caps_and_raises_none(repo: Path, gpuplane: Any) -> None:
    """The team's caps are the team's (renderer/model/caps.py): a fourth namespace takes a
    share of the 512 CPUs, it adds none, so no cap changes; the namespace itself is the finding
    (a purpose the team had none of), on its line."""
    _add_batch(repo)
    found = [f for f in _findings(gpuplane, repo) if f["team"] == "vision"]
    assert not [f for f in found if f["code"].startswith("quota-cap")]
    added = [f for f in found if f["at"] == _line(repo, VISION, "vision-batch")]
    assert added and all(f["risk"] == "medium" for f in added)


def test_renamed_namespaces_alone_widen_nothing(repo: Path, gpuplane: Any) -> None:
    """The whole team is compared, so a rename is what it is: a namespace pruned and one added,
    the same purpose and Pod Security; no group, registry, cap or egress finding."""
    edit_once(repo / VISION, "{name: vision-notebooks,", "{name: vision-nb,")
    found = [f for f in _findings(gpuplane, repo) if f["team"] == "vision"]
    assert sorted((f["code"], f["subject"], f["risk"]) for f in found) == [
        ("namespace-added", "vision-nb", "low"),
        ("namespace-removed", "vision-notebooks", "high"),
    ]


def test_namespace_caps_are_the_rendered_resource_quotas(committed: Path) -> None:
    """`reach.namespace_caps` says what the tenancy layer renders into each team namespace's
    ResourceQuota; should the layer split the team's caps another way, this fails first."""
    validator = OutputValidator()
    rendered = render(committed, validator, "base", None)
    names = {
        "cpu": "requests.cpu",
        "memory": "requests.memory",
        "storage": "requests.storage",
        "persistentVolumeClaims": "persistentvolumeclaims",
    }
    seen = 0
    for team in rendered.platform.teams.values():
        for ns in team.namespaces:
            cluster = rendered.platform.clusters[ns.cluster]
            (quota,) = [
                m
                for m in rendered.manifests[ns.cluster]
                if m.kind == "ResourceQuota" and m.namespace == ns.name
            ]
            hard = quota.body["spec"]["hard"]
            caps = namespace_caps(team, cluster, ns.name)
            expected = {names[k]: v for k, v in caps.items()}
            assert {k: hard[k] for k in names.values() if k in hard} == expected, ns.name
            seen += 1
    assert seen >= 10


# --- operators ----------------------------------------------------------------------------------
# What needs each operator on prod-east, as the input files say it: teams/recsys.yaml lists
# `kinds: [TrainJob]` on recsys-train and `kinds: [LeaderWorkerSet]` on recsys-serve; the training
# namespaces of the teams with GPU quota there get the RayJob template.

PROD = "clusters/prod-east.yaml"
RECSYS = "teams/recsys.yaml"
TRAINER = "    trainer:\n      version: 2.3.0 "
LWS = "    lws:\n      version: 0.10.0 "
KUBERAY = "    kuberay:\n      version: 1.7.0 "


def _drop_line(path: Path, start: str) -> None:
    """Remove the add-on `start` opens: its key line and its version line."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith(start.split("\n")[0] + "\n"))
    assert lines[first + 1].startswith(start.split("\n")[1]), lines[first + 1]
    path.write_text("".join(lines[:first] + lines[first + 2 :]))


def test_an_operator_removed_whose_kinds_a_team_used_is_high(repo: Path, gpuplane: Any) -> None:
    """Kubeflow Trainer goes with recsys-train's `kinds: [TrainJob]` in the same change (the head
    validates: nothing needs it any more); at the base recsys-train listed TrainJob."""
    _drop_line(repo / PROD, TRAINER)
    edit_once(repo / RECSYS, "purpose: training, kinds: [TrainJob]}", "purpose: training}")
    found = _findings(gpuplane, repo)
    f = _one(found, "operator-removed", "trainer")
    assert f["risk"] == "high" and f["cluster"] == "prod-east"
    assert "TrainJob in namespace recsys-train" in f["summary"]
    assert any("trainer.kubeflow.org/trainjob" in line for line in f["details"])
    assert f["at"] == _line(repo, PROD, "  addons:")
    # the add-ons are no longer a cluster setting of their own
    assert not [g for g in found if g["code"] == "cluster-changed"]


def test_an_operator_left_running_elsewhere_is_medium_and_names_its_users(
    repo: Path, gpuplane: Any
) -> None:
    """`enabled: false`: the cluster still serves LeaderWorkerSets, someone else installs it."""
    edit_once(repo / PROD, LWS, LWS.replace(":\n", ":\n      enabled: false\n", 1))
    f = _one(_findings(gpuplane, repo), "operator-disabled", "lws")
    assert f["risk"] == "medium"
    assert f["details"] == ["used by LeaderWorkerSet in namespace recsys-serve"]
    assert f["at"] == _line(repo, PROD, "enabled: false")


def test_an_operator_upgrade_is_medium_with_both_versions(repo: Path, gpuplane: Any) -> None:
    edit_once(repo / PROD, KUBERAY, KUBERAY.replace("1.7.0", "1.8.0"))
    f = _one(_findings(gpuplane, repo), "operator-version-changed", "kuberay")
    assert f["risk"] == "medium" and f["summary"] == "KubeRay 1.7.0 → 1.8.0"
    assert f["details"] == [
        "used by the RayJob template of namespaces llm-train, recsys-train, speech-train, "
        "vision-train"
    ]
    assert f["at"] == _line(repo, PROD, "version: 1.8.0")


def _operator_findings(base: Path, head: Path) -> list[tuple[str, str, str]]:
    """(add-on key, code, risk) of the two folders' platforms compared directly, sorted."""
    from renderer.commands.diff.operators import operators
    from renderer.pipeline import load_platform

    found = operators(load_platform(base).platform, load_platform(head).platform)
    return sorted((f.subject, f.code, f.risk.value) for f in found)


def test_each_operator_change_is_rated_by_what_needed_it(tmp_path: Path) -> None:
    """Removing what nothing needs is low (an operator) or medium (the platform's own); a
    removal whose users remain needed is high; adding is low, re-installing over a running
    one medium; an unpinned operator pinned is a version change."""
    base = copy_inputs(REPO, tmp_path / "base")
    staging = base / "clusters/staging-west.yaml"
    # the base runs AppWrapper, which nothing on staging-west needs, and LWS, already running
    edit_once(
        staging,
        "    opencost:\n",
        "    appwrapper:\n      version: v1.2.1\n    lws:\n      enabled: false\n    opencost:\n",
    )
    edit_once(staging, "    kuberay:\n      version: 1.7.0 ", "    kuberay:\n      enabled: true ")
    head = copy_inputs(base, tmp_path / "head")
    head_staging = head / "clusters/staging-west.yaml"
    edit_once(head_staging, "    appwrapper:\n      version: v1.2.1\n", "")
    edit_once(head_staging, "    lws:\n      enabled: false\n", "    lws:\n      version: 0.10.0\n")
    edit_once(head_staging, "      enabled: true ", "      version: 1.7.0 ")
    _drop_line(head_staging, "    argoWorkflows:\n      version: 2.0.4")
    edit_once(
        head_staging, "    opencost:\n", "    draDriver:\n      version: 25.12.0\n    opencost:\n"
    )
    _drop_line(head / PROD, "    jobset:\n      version: 0.11.1")
    assert _operator_findings(base, head) == [
        ("appwrapper", "operator-removed", "low"),
        ("argoWorkflows", "operator-removed", "medium"),
        ("draDriver", "operator-added", "low"),
        ("jobset", "operator-removed", "high"),  # the JobSet templates of prod-east's teams
        ("kuberay", "operator-version-changed", "medium"),
        ("lws", "operator-enabled", "medium"),
        # the version of one someone else ran is what the file said: pinned, low
        ("lws", "operator-version-changed", "low"),
    ]
