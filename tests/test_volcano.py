"""Volcano: the same teams, pools and queues as hierarchical Queues and gang defaults.

The golden case is tests/cases/render/minimal with `scheduler: volcano` and host figures on the
pools; the arithmetic test derives its numbers from those inputs, not from the output.
"""

from __future__ import annotations

import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.model import quantity
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import render_platform
from tests.conftest import (
    copy_inputs,
    kubectl_with_kustomize_v5,
    object_files,
    render_case,
    render_inputs,
)

CASE = Path(__file__).parent / "cases" / "render" / "volcano"
EXPECTED = CASE / "expected" / "lab"
QUEUE_API = "scheduling.volcano.sh/v1beta1"


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _switch_to_volcano(cluster_file: Path) -> None:
    """`scheduler: kueue` and the kueue add-on become `scheduler: volcano` and its add-on."""
    text = cluster_file.read_text()
    text, schedulers = re.subn(r"(?m)^  scheduler: kueue$", "  scheduler: volcano", text)
    text, addons = re.subn(
        r"(?m)^    kueue:\n      version: \S+$", "    volcano:\n      version: v1.15.1", text
    )
    assert schedulers == 1 and addons == 1, "the cluster file no longer looks as expected"
    # Volcano's gang job is its own: no JobSet or RayJob templates, so no operator for them
    # (operator-unused would say so)
    text, operators = re.subn(r"(?m)^    (jobset|kuberay):\n      version: .*\n", "", text)
    assert operators == 2, "the cluster file no longer looks as expected"
    cluster_file.write_text(text)


def test_volcano_case_renders_the_reviewed_tree(
    tmp_path: Path, crds: Path, update_golden: bool
) -> None:
    render_case(CASE, tmp_path, crds, update_golden=update_golden)


def test_volcano_queue_arithmetic() -> None:
    """deserved, guarantee and capability derived here from the input files."""
    train_pool = _load(CASE / "pools/train.yaml")["spec"]
    serve_pool = _load(CASE / "pools/serve.yaml")["spec"]
    team = _load(CASE / "teams/ml.yaml")["spec"]
    train_quota = next(q for q in team["gpus"] if q["pool"] == "train")
    serve_quota = next(q for q in team["gpus"] if q["pool"] == "serve")

    # train: whole H100s; a GPU is 1/gpusPerNode of a node, and CPU and memory follow that share
    train_gpus = train_pool["gpusPerNode"] * train_pool["nodes"]
    train_cpus = train_pool["host"]["cpus"]
    train_memory = quantity.parse(train_pool["host"]["memory"])

    def train_share(gpus: int) -> Decimal:
        return Decimal(gpus) / train_pool["gpusPerNode"]

    nominal, borrowing, lending = (
        train_quota["nominal"],
        train_quota["borrowingLimit"],
        train_quota["lendingLimit"],
    )
    # the team's queue holds its quota on both pools, under the gpuplane Queue's
    team_queue = _load(EXPECTED / "queueing/queue-ml.yaml")["spec"]
    assert team_queue["parent"] == "main"
    training = _load(EXPECTED / "queueing/queue-ml-training.yaml")["spec"]
    inference = _load(EXPECTED / "queueing/queue-ml-inference.yaml")["spec"]
    # the leaves hold nothing of their own (their jobs use the team's) and are closed to the
    # other purpose's pool resource
    assert training["parent"] == inference["parent"] == "ml"
    assert "deserved" not in training and "guarantee" not in training
    assert training["capability"] == {"nvidia.com/gpu.shared": 0}
    assert "deserved" not in inference and "guarantee" not in inference
    assert inference["capability"] == {"nvidia.com/gpu": 0}
    serve_share = Decimal(serve_quota["nominal"]) / (
        serve_pool["gpusPerNode"] * serve_pool["timeSlicing"]["replicas"]
    )
    serve_cpus = Decimal(serve_pool["host"]["cpus"])
    serve_memory = quantity.parse(serve_pool["host"]["memory"])
    assert team_queue["deserved"] == {
        "cpu": quantity.cpu(train_cpus * train_share(nominal) + serve_cpus * serve_share),
        "memory": quantity.memory(train_memory * train_share(nominal) + serve_memory * serve_share),
        "nvidia.com/gpu": nominal,
        "nvidia.com/gpu.shared": serve_quota["nominal"],
    }
    kept = nominal - lending  # serve has no lendingLimit: all of it may be lent
    assert team_queue["guarantee"]["resource"] == {
        "cpu": quantity.cpu(train_cpus * train_share(nominal) - train_cpus * train_share(lending)),
        "memory": quantity.memory(
            train_memory * train_share(nominal) - train_memory * train_share(lending)
        ),
        "nvidia.com/gpu": kept,
    }
    # serve's borrowing is unlimited, so cpu, memory and its resource are left to the parent
    # (Volcano counts them per name, not per pool); the train pool's GPUs are capped
    most = min(nominal + borrowing, train_gpus)
    assert team_queue["capability"] == {"nvidia.com/gpu": most}

    # the gpuplane Queue's parent queue: its pools' capability, its team's sums
    serve_units = (
        serve_pool["gpusPerNode"] * serve_pool["timeSlicing"]["replicas"] * serve_pool["nodes"]
    )
    parent = _load(EXPECTED / "queueing/queue-main.yaml")["spec"]
    assert parent["parent"] == "root"
    assert parent["capability"] == {
        "cpu": quantity.cpu(train_cpus * train_pool["nodes"] + serve_cpus * serve_pool["nodes"]),
        "memory": quantity.memory(
            train_memory * train_pool["nodes"] + serve_memory * serve_pool["nodes"]
        ),
        "nvidia.com/gpu": train_gpus,
        "nvidia.com/gpu.shared": serve_units,
    }
    # the parent's deserved and guarantee are its teams' sums (Volcano checks they cover them)
    team_queue = _load(EXPECTED / "queueing/queue-ml.yaml")["spec"]
    assert parent["deserved"]["nvidia.com/gpu"] == train_quota["nominal"]
    assert parent["deserved"]["nvidia.com/gpu.shared"] == serve_quota["nominal"]
    assert parent["guarantee"] == team_queue["guarantee"]
    assert parent["deserved"] == team_queue["deserved"]

    # no preemption in the queue file: Kueue's reclaimWithinCohort defaults to Never
    for name in ("ml", "ml-training", "ml-inference"):
        assert _load(EXPECTED / f"queueing/queue-{name}.yaml")["spec"]["reclaimable"] is False


def _rendered_objects(root: Path, crds: Path) -> tuple[dict[str, tuple[Manifest, ...]], Any]:
    validator = OutputValidator([crds])
    result = render_platform(root, validator)
    assert result.diagnostics == []
    return dict(result.manifests), validator


def test_every_volcano_object_validates_including_the_job_template(
    tmp_path: Path, crds: Path
) -> None:
    root = copy_inputs(CASE, tmp_path / "repo")
    manifests, validator = _rendered_objects(root, crds)
    objects = manifests["lab"]
    kinds = {(m.body["apiVersion"], m.kind) for m in objects if m.layer == "queueing"}
    assert kinds == {(QUEUE_API, "Queue"), ("v1", "ConfigMap")}
    templates = [m for m in objects if m.kind == "ConfigMap" and m.layer == "queueing"]
    assert {m.namespace for m in templates} == {"ml-train", "ml-serve"}
    for manifest in templates:
        job = json.loads(manifest.body["data"]["job.json"])
        assert validator.validate(job, "1.34") == []
        spec = job["spec"]
        assert spec["schedulerName"] == "volcano"
        assert spec["queue"] == manifest.body["data"]["queue"]
        assert spec["minAvailable"] == sum(t["replicas"] for t in spec["tasks"])
        assert {p["action"] for p in spec["policies"]} == {"RestartJob"}
    queues = {m.name: m.body["spec"] for m in objects if m.kind == "Queue"}
    train = next(m for m in templates if m.namespace == "ml-train")
    assert train.body["data"]["queue"] == "ml-training" and "ml-training" in queues


def _amounts(spec: dict[str, Any]) -> dict[str, dict[str, Decimal]]:
    sections = {
        "deserved": spec.get("deserved"),
        "guarantee": spec.get("guarantee", {}).get("resource"),
        "capability": spec.get("capability"),
    }
    return {
        key: {r: quantity.parse(v) for r, v in (section or {}).items()}
        for key, section in sections.items()
    }


def _check_hierarchy(objects: tuple[Manifest, ...]) -> int:
    """What Volcano's queue webhook and capacity plugin require of a hierarchy: guarantee <=
    deserved <= capability in each queue, a child's capability within its parent's, and the
    children's deserved and guarantee summing within the parent's. Returns the queues checked."""
    specs = {m.name: m.body["spec"] for m in objects if m.kind == "Queue"}
    amounts = {name: _amounts(spec) for name, spec in specs.items()}
    zero = Decimal(0)
    for name, mine in amounts.items():
        for resource, value in mine["guarantee"].items():
            assert value <= mine["deserved"].get(resource, zero), (name, resource)
        for resource, value in mine["deserved"].items():
            assert value <= mine["capability"].get(resource, value), (name, resource)
        parent = specs[name]["parent"]
        if parent != "root":
            above = amounts[parent]["capability"]
            for resource, value in mine["capability"].items():
                assert value <= above.get(resource, value), (name, resource)
        children = [amounts[c] for c, spec in specs.items() if spec["parent"] == name]
        for key in ("deserved", "guarantee"):
            for resource in {r for child in children for r in child[key]}:
                total = sum((child[key].get(resource, zero) for child in children), zero)
                assert total <= mine[key].get(resource, zero), (name, key, resource)
    return len(specs)


def test_queue_hierarchy_satisfies_volcano_admission(
    tmp_path: Path, platform: Path, crds: Path
) -> None:
    root = copy_inputs(CASE, tmp_path / "case")
    manifests, _ = _rendered_objects(root, crds)
    # main, the team ml, ml-training, ml-inference and the acceptance suites' queue under main
    assert _check_hierarchy(manifests["lab"]) == 5
    # the example staging queue is oversubscribed (1.5x): still admissible
    _switch_to_volcano(platform / "clusters" / "staging-west.yaml")
    manifests, _ = _rendered_objects(platform, crds)
    # staging, 2 teams, their 4 purpose queues, 1 acceptance
    assert _check_hierarchy(manifests["staging-west"]) == 8


def test_same_team_and_pool_files_render_under_both_schedulers(platform: Path, crds: Path) -> None:
    kueue, _ = _rendered_objects(platform, crds)
    _switch_to_volcano(platform / "clusters" / "staging-west.yaml")
    volcano, _ = _rendered_objects(platform, crds)

    staging = volcano["staging-west"]
    queues = {m.name: m.body["spec"] for m in staging if m.kind == "Queue"}
    assert queues["staging"]["parent"] == "root"
    for team in ("llm-eval", "search"):
        for purpose in ("training", "inference"):
            child = queues[f"{team}-{purpose}"]
            assert child["parent"] == team and queues[team]["parent"] == "staging"
            # the staging queue sets reclaimWithinCohort: Any
            assert child["reclaimable"] is True
    assert not [m for m in staging if m.body["apiVersion"].startswith("kueue.x-k8s.io/")]
    # the scheduler changes the queue layer, plus one tenancy annotation: each namespace names
    # its Volcano queue (Kueue's counterpart is the `default` LocalQueue); prod-east is untouched
    volcano_tenancy = [m.body for m in staging if m.layer == "tenancy"]
    kueue_tenancy = [m.body for m in kueue["staging-west"] if m.layer == "tenancy"]
    assert len(volcano_tenancy) == len(kueue_tenancy)
    for with_volcano, with_kueue in zip(volcano_tenancy, kueue_tenancy, strict=True):
        if with_volcano["kind"] == "ClusterRole":
            # the team roles grant the kinds the cluster serves: Volcano's Job instead of the
            # JobSet and Ray kinds whose operators the Volcano cluster no longer runs
            def groups(role: Any) -> set[str]:
                return {g for rule in role["rules"] for g in rule.get("apiGroups", [])}

            def rest(role: Any) -> Any:
                moved = {"batch.volcano.sh", "jobset.x-k8s.io", "ray.io"}
                return [r for r in role["rules"] if not moved & set(r.get("apiGroups", []))]

            assert rest(with_volcano) == rest(with_kueue)
            if "ray.io" in groups(with_kueue):
                assert "batch.volcano.sh" in groups(with_volcano)
                assert not {"ray.io", "jobset.x-k8s.io"} & groups(with_volcano)
            continue
        if with_volcano["kind"] != "Namespace":
            assert with_volcano == with_kueue
            continue
        annotations = dict(with_volcano["metadata"]["annotations"])
        named = annotations.pop("scheduling.volcano.sh/queue-name")
        purpose = with_volcano["metadata"]["labels"]["gpuplane.dev/purpose"]
        assert named == f"{with_volcano['metadata']['labels']['gpuplane.dev/team']}-{purpose}"
        assert annotations == with_kueue["metadata"]["annotations"]
        assert with_volcano["metadata"]["labels"] == with_kueue["metadata"]["labels"]
    assert [m.body for m in volcano["prod-east"]] == [m.body for m in kueue["prod-east"]]
    assert not [m for m in volcano["prod-east"] if m.body["apiVersion"] == QUEUE_API]


@pytest.mark.skipif(
    not kubectl_with_kustomize_v5(), reason="kubectl with kustomize v5 is not installed"
)
def test_kubectl_kustomize_builds_the_rendered_tree(tmp_path: Path, crds: Path) -> None:
    lab = render_inputs(CASE, tmp_path / "repo", crds) / "lab"
    result = subprocess.run(
        ["kubectl", "kustomize", str(lab)], capture_output=True, text=True, check=True
    )
    built = list(yaml.safe_load_all(result.stdout))
    on_disk = [_load(p) for p in object_files(lab)]
    assert len(built) == len(on_disk)
    key = lambda d: (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace"))  # noqa: E731
    assert sorted(map(key, built)) == sorted(map(key, on_disk))
    assert {("Queue", "main", None), ("Queue", "ml-training", None)} <= set(map(key, built))
