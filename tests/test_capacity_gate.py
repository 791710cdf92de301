"""The capacity gate (rule capacity-evidence, docs/capacity-gate.md) and the evidence files it reads.

Each test builds a git repository in tmp_path from the example's inputs: a base commit, then a
change that grows a pool, with evidence files written by hand after schemas/evidence.schema.json
(shaped like a GPU run's record: an H100 pool's driver, its production image's digest, one
entry per node). `validate` runs as CI runs it; every hint is applied and validated again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, commit_all, copy_inputs, edit_once, git

pytestmark = pytest.mark.usefixtures("git_env")

TODAY = "2026-03-10"
IMAGE = "registry.example.com/ml/train:2026.03"
DIGEST = "sha256:" + "ab" * 32
POOL = "pools/h100-train.yaml"


def _nodes_line(root: Path, pool: str = POOL, text: str = "  nodes: ") -> int:
    lines = (root / pool).read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if line.startswith(text))


def _set_image(root: Path, image: str = IMAGE, pool: str = POOL) -> None:
    """Declare `image` as the pool's productionImage, in place of the one it declares."""
    path = root / pool
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith("  productionImage:")]
    path.write_text("".join(kept))
    edit_once(path, "  workload:", f"  productionImage: {image}\n  workload:")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example's inputs committed, h100-train declaring its production image."""
    monkeypatch.setenv("GPUPLANE_TODAY", TODAY)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    root = copy_inputs(REPO, tmp_path / "repo")
    _set_image(root)
    commit_all(root, "base")
    return root


def _evidence(**changes: Any) -> dict[str, Any]:
    """A passing record of h100-train's 4 nodes, in its production image, 5 days before TODAY."""
    spec: dict[str, Any] = {
        "cluster": "prod-east",
        "verdict": "pass",
        "run": "acceptance-h100-train-x7k2p",
        "startedAt": "2026-03-05T01:00:00Z",
        "finishedAt": "2026-03-05T03:12:40Z",
        "recordedAt": "2026-03-05T09:00:00Z",
        "accelerator": "h100-80gb",
        "device": "NVIDIA H100 80GB HBM3",
        "driver": "570.124.06",
        "cuda": "12.8",
        "nccl": "2.21.5",
        "torch": "2.6.0",
        "image": {"reference": IMAGE, "digest": DIGEST},
        "poolNodes": 4,
        "nodes": [
            {
                "name": f"gpu-node-{i}",
                "verdict": "pass",
                "figures": [{"name": "intraBusbwGBps", "value": 361.2}],
            }
            for i in range(4)
        ],
        "steps": [{"step": "nodes", "verdict": "pass"}, {"step": "allreduce", "verdict": "pass"}],
    }
    spec.update(changes)
    return {
        "apiVersion": "gpuplane.dev/v1alpha1",
        "kind": "AcceptanceEvidence",
        "metadata": {"name": "h100-train"},
        "spec": spec,
    }


def _write_evidence(root: Path, body: dict[str, Any], where: str = "prod-east/h100-train") -> Path:
    path = root / "acceptance" / f"{where}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=2))  # JSON is YAML
    return path


def _grow(root: Path, to: int = 8) -> None:
    edit_once(root / POOL, "  nodes: 4\n", f"  nodes: {to}\n")


def _findings(gpuplane, root: Path, rule: str = "capacity-evidence") -> list[dict[str, Any]]:
    result = gpuplane("-C", str(root), "validate", "--format", "json")
    body = json.loads(result.output)
    return [d for d in body["findings"] if d["rule"] == rule]


def test_growth_without_evidence_is_refused_on_the_size_line(repo: Path, gpuplane) -> None:
    _grow(repo)
    (finding,) = _findings(gpuplane, repo)
    assert finding["level"] == "error"
    assert (finding["file"], finding["line"]) == (POOL, _nodes_line(repo))
    assert "grows from 4 to 8 nodes on production cluster prod-east" in finding["message"]
    assert "acceptance/prod-east/h100-train.yaml does not exist" in finding["message"]
    assert "gpuplane acceptance record" in finding["hint"]
    assert gpuplane("-C", str(repo), "validate").exit_code == 1


def test_passing_evidence_lets_the_pool_grow(repo: Path, gpuplane) -> None:
    _grow(repo)
    _write_evidence(repo, _evidence())  # the hint, applied
    result = gpuplane("-C", str(repo), "validate")
    assert result.exit_code == 0, result.output
    assert result.output == "ok: 17 input files, no findings\n"


def test_every_missing_piece_is_in_one_message(repo: Path, gpuplane) -> None:
    _grow(repo)
    nodes = [{"name": f"gpu-node-{i}", "verdict": "pass"} for i in range(3)]
    nodes.append({"name": "gpu-node-3", "verdict": "fail"})
    _write_evidence(
        repo,
        _evidence(
            verdict="fail",
            finishedAt="2026-01-02T03:00:00Z",
            accelerator="cpu",
            driver="550.54.15",
            image={"reference": "docker.io/library/python:3.12-slim", "digest": "unknown"},
            nodes=nodes,
        ),
    )
    (finding,) = _findings(gpuplane, repo)
    message = finding["message"]
    assert "verdict is fail, not pass" in message
    assert "67 days old (finished 2026-01-02); cluster prod-east accepts 30" in message
    assert "measured on cpu, not h100-80gb" in message
    assert "driver 550.54.15, not the pool's 570.124.06" in message
    assert f"not the productionImage {IMAGE}" in message
    assert "covers 3 node(s) without a failure, the pool has 4 before this change" in message


def test_evidence_as_old_as_the_limit_is_fresh_one_day_more_is_not(
    repo: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grow(repo)
    _write_evidence(repo, _evidence(finishedAt="2026-02-08T23:59:59Z"))  # 30 days before TODAY
    assert _findings(gpuplane, repo) == []
    monkeypatch.setenv("GPUPLANE_TODAY", "2026-03-11")
    (finding,) = _findings(gpuplane, repo)
    assert "31 days old" in finding["message"]


def test_a_pinned_digest_must_be_the_digest_that_ran(repo: Path, gpuplane) -> None:
    pinned = f"{IMAGE}@sha256:{'cd' * 32}"
    edit_once(repo / POOL, f"productionImage: {IMAGE}", f"productionImage: {pinned}")
    _grow(repo)
    _write_evidence(repo, _evidence(image={"reference": pinned, "digest": DIGEST}))
    (finding,) = _findings(gpuplane, repo)
    assert f"ran image digest {DIGEST}, not the pinned sha256:{'cd' * 32}" in finding["message"]
    _write_evidence(repo, _evidence(image={"reference": pinned, "digest": f"sha256:{'cd' * 32}"}))
    assert _findings(gpuplane, repo) == []


def test_a_pool_without_production_image_cannot_grow(repo: Path, gpuplane) -> None:
    edit_once(repo / POOL, f"  productionImage: {IMAGE}\n", "")
    _grow(repo)
    _write_evidence(repo, _evidence())
    (finding,) = _findings(gpuplane, repo)
    assert "declares no spec.productionImage" in finding["message"]
    _set_image(repo)  # the hint, applied
    assert _findings(gpuplane, repo) == []


def test_a_pool_that_does_not_grow_needs_no_fresh_evidence(repo: Path, gpuplane) -> None:
    _write_evidence(repo, _evidence(verdict="fail", finishedAt="2025-01-01T00:00:00Z"))
    edit_once(repo / POOL, "  nodes: 4\n", "  nodes: 3\n")  # shrinking is not growth
    assert _findings(gpuplane, repo) == []


def test_a_valid_exception_turns_the_error_into_a_warning(repo: Path, gpuplane) -> None:
    _grow(repo)
    edit_once(
        repo / POOL,
        "  workload:",
        "  growthException:\n    by: platform-team\n    reason: nodes burnt in by the vendor\n"
        "    until: 2026-03-10\n  workload:",
    )
    (finding,) = _findings(gpuplane, repo)
    assert finding["level"] == "warning"
    assert (
        "allowed by growthException of platform-team until 2026-03-10: "
        "nodes burnt in by the vendor" in finding["message"]
    )
    assert gpuplane("-C", str(repo), "validate").exit_code == 0


def test_an_expired_exception_is_ignored_with_a_note(repo: Path, gpuplane) -> None:
    _grow(repo)
    edit_once(
        repo / POOL,
        "  workload:",
        "  growthException:\n    by: platform-team\n    reason: burn-in\n"
        "    until: 2026-03-09\n  workload:",
    )
    (finding,) = _findings(gpuplane, repo)
    assert finding["level"] == "error"
    assert finding["notes"][0]["message"] == "growthException expired on 2026-03-09; ignored"


def test_an_exception_on_a_pool_that_does_not_grow_is_stale(repo: Path, gpuplane) -> None:
    edit_once(
        repo / POOL,
        "  workload:",
        "  growthException:\n    by: platform-team\n    reason: burn-in\n"
        "    until: 2026-04-01\n  workload:",
    )
    (finding,) = _findings(gpuplane, repo)
    assert finding["level"] == "warning"
    assert "is stale" in finding["message"]
    assert finding["line"] == _nodes_line(repo, text="  growthException:") + 1  # its first key


def test_growth_on_staging_is_a_warning_on_the_max_line(repo: Path, gpuplane) -> None:
    pool = "pools/h200-tune.yaml"
    edit_once(repo / pool, "    max: 4\n", "    max: 6\n")
    (finding,) = _findings(gpuplane, repo)
    assert finding["level"] == "warning"
    assert (finding["file"], finding["line"]) == (pool, _nodes_line(repo, pool, "    max: "))
    assert "grows from 4 to 6 nodes on staging cluster staging-west" in finding["message"]


def test_a_new_pool_needs_evidence_of_at_least_one_node(repo: Path, gpuplane) -> None:
    new = repo / "pools" / "h100-more.yaml"
    new.write_text((repo / POOL).read_text().replace("name: h100-train", "name: h100-more"))
    (finding,) = _findings(gpuplane, repo)
    assert finding["file"] == "pools/h100-more.yaml"
    assert "new pool h100-more (4 nodes)" in finding["message"]
    body = _evidence(nodes=[{"name": "gpu-node-9", "verdict": "pass"}])
    body["metadata"]["name"] = "h100-more"
    _write_evidence(repo, body, "prod-east/h100-more")
    assert _findings(gpuplane, repo) == []


def test_an_unknown_base_warns_that_the_gate_could_not_tell(
    repo: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_BASE_REF", "no-such-branch")
    found = _findings(gpuplane, repo)
    assert found and all(f["level"] == "warning" for f in found)
    assert any("could not tell whether pool h100-train grows" in f["message"] for f in found)
    _write_evidence(repo, _evidence())  # proven at its size: nothing to warn about
    assert not any("h100-train" in f["message"] for f in _findings(gpuplane, repo))


def test_a_base_branch_is_compared_from_the_merge_base(repo: Path, gpuplane) -> None:
    git(repo, "checkout", "-q", "-b", "grow")
    _grow(repo)
    git(repo, "commit", "-q", "-am", "grow")
    assert len(_findings(gpuplane, repo)) == 0  # HEAD is the base: nothing uncommitted
    result = gpuplane("-C", str(repo), "validate", "--base", "main", "--format", "json")
    found = [d for d in json.loads(result.output)["findings"] if d["rule"] == "capacity-evidence"]
    assert "grows from 4 to 8" in found[0]["message"]


def test_outside_git_there_is_no_change_to_gate(tmp_path: Path, gpuplane) -> None:
    root = copy_inputs(REPO, tmp_path / "plain")
    _grow(root)
    assert _findings(gpuplane, root) == []


def test_an_unreadable_today_is_an_error(
    repo: Path, gpuplane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPLANE_TODAY", "10/03/2026")
    (finding,) = _findings(gpuplane, repo)
    assert "is not a YYYY-MM-DD day" in finding["message"]


def test_evidence_schema_errors_point_at_the_line(repo: Path, gpuplane) -> None:
    body = _evidence(verdict="passed")
    path = _write_evidence(repo, body)
    result = gpuplane("-C", str(repo), "validate", "--format", "json")
    (finding,) = [
        d for d in json.loads(result.output)["findings"] if d["file"].startswith("acceptance/")
    ]
    line = path.read_text().splitlines().index('    "verdict": "passed",') + 1
    assert (finding["rule"], finding["line"]) == ("schema-invalid-value", line)
    _grow(repo)
    (gate,) = _findings(gpuplane, repo)
    assert "acceptance/prod-east/h100-train.yaml has errors" in gate["message"]


@pytest.mark.parametrize(
    ("where", "name", "expected"),
    [
        ("prod-eats/h100-train", "h100-train", "did you mean 'prod-east'?"),
        ("prod-east/h100-trian", "h100-trian", "did you mean 'h100-train'?"),
        ("staging-west/h100-train", "h100-train", "move the file to acceptance/prod-east/"),
    ],
)
def test_evidence_must_sit_under_its_cluster_and_pool(
    repo: Path, gpuplane, where: str, name: str, expected: str
) -> None:
    body = _evidence()
    body["metadata"]["name"] = name
    _write_evidence(repo, body, where)
    found = _findings(gpuplane, repo, "evidence-place")
    assert len(found) == 1 and expected in found[0]["hint"]
    (repo / "acceptance" / f"{where}.yaml").unlink()  # the hint, applied: in its place
    _write_evidence(repo, _evidence())
    assert _findings(gpuplane, repo, "evidence-place") == []


def test_a_file_beside_the_cluster_folders_is_a_stray(repo: Path, gpuplane) -> None:
    _write_evidence(repo, _evidence(), "h100-train")
    (finding,) = _findings(gpuplane, repo, "stray-file")
    assert finding["file"] == "acceptance/h100-train.yaml"
    assert "acceptance/<cluster>/<pool>.yaml" in finding["hint"]


def test_evidence_in_another_kinds_folder_is_the_wrong_kind(repo: Path, gpuplane) -> None:
    (repo / "pools" / "evidence.yaml").write_text(json.dumps(_evidence()))
    (finding,) = _findings(gpuplane, repo, "wrong-kind")
    assert finding["hint"] == "move the file to acceptance/prod-east/"
    (repo / "pools" / "evidence.yaml").unlink()  # the hint, applied
    _write_evidence(repo, _evidence())
    result = gpuplane("-C", str(repo), "validate")
    assert result.exit_code == 0, result.output


def test_base_sizes_reads_every_pool_file_of_the_base_commit(tmp_path: Path) -> None:
    """One `git cat-file --batch` answers for every pool file: a fixed size, an autoscaled
    max, a file that is no YAML and a folder named like a pool file, in one commit."""
    from renderer.inputs.changes import base_sizes

    root = tmp_path / "base"
    (root / "pools" / "folder.yaml").mkdir(parents=True)
    (root / "pools" / "folder.yaml" / "f").write_text("x\n")
    (root / "pools" / "fixed.yaml").write_text("spec: {nodes: 3}\n")
    (root / "pools" / "broken.yaml").write_text("spec: [\n")
    (root / "pools" / "scaled.yaml").write_text("spec: {nodes: {min: 1, max: 5}}\n")
    commit_all(root, "base")
    found = base_sizes(root)
    assert found is not None and found.unknown is None
    assert dict(found.sizes) == {"fixed": 3, "scaled": 5}
    assert found.unreadable == {"broken", "folder"}


def test_a_one_node_pool_reads_as_one_node() -> None:
    """English, not "(1 nodes)": the growth finding counts nodes with the right noun."""
    from renderer.model.words import plural

    assert [plural(n, "node") for n in (1, 2, 0)] == ["1 node", "2 nodes", "0 nodes"]
