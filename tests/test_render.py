"""Rendering end to end: golden trees, determinism, atomicity, --check, injection, real tools."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from renderer.output.writer import write_tree
from tests.conftest import (
    REPO,
    copy_inputs,
    glob_match,
    golden_patterns,
    kubectl_with_kustomize_v5,
    object_files,
    pinned,
    render_case,
    tree,
)

RENDER_CASES = Path(__file__).parent / "cases" / "render"
MINIMAL = RENDER_CASES / "minimal"


def test_minimal_platform_renders_the_reviewed_tree(
    tmp_path: Path, crds: Path, update_golden: bool
) -> None:
    render_case(MINIMAL, tmp_path, crds, update_golden=update_golden)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("lab/kustomization.yaml", "lab/kustomization.yaml", True),
        ("lab/queueing/*.yaml", "lab/queueing/cohort-ml.yaml", True),
        ("lab/queueing/*.yaml", "lab/queueing/ml-train/localqueue-default.yaml", False),
        (
            "lab/gpu/ml-*/resourceclaimtemplate-*.yaml",
            "lab/gpu/ml-serve/resourceclaimtemplate-x.yaml",
            True,
        ),
        (
            "lab/gpu/ml-*/resourceclaimtemplate-*.yaml",
            "lab/gpu/vision-train/resourceclaimtemplate-x.yaml",
            False,
        ),
        ("lab/gitops/**", "lab/gitops/argocd/appproject-default.yaml", True),
        ("lab/gitops/**", "lab/gitops", False),
        ("lab/**/namespace-*.yaml", "lab/namespace-a.yaml", True),
        ("lab/**/namespace-*.yaml", "lab/tenancy/ml-train/namespace-ml-train.yaml", True),
        ("lab/tenancy/*", "prod/tenancy/ml-train", False),
    ],
)
def test_golden_patterns_match_within_a_name_and_across_folders_only_with_two_stars(
    pattern: str, path: str, matches: bool
) -> None:
    assert glob_match(pattern, path) is matches


def test_a_golden_pattern_that_pins_nothing_fails() -> None:
    actual = {"lab/queueing/cohort-ml.yaml": b"a", "lab/tenancy/ml-train/x.yaml": b"b"}
    assert pinned(actual, ("lab/queueing/*.yaml",)) == {"lab/queueing/cohort-ml.yaml": b"a"}
    with pytest.raises(AssertionError, match=r"match no path: \['lab/gitops/\*\*'\]"):
        pinned(actual, ("lab/queueing/*.yaml", "lab/gitops/**"))


@pytest.mark.parametrize("case", sorted(p.name for p in RENDER_CASES.iterdir()))
def test_every_render_case_pins_only_what_its_patterns_name(case: str) -> None:
    """Each case's expected/ holds pinned paths only, and every pattern pins something there:
    a stray or stale golden file, or a pattern that pins nothing, is caught without rendering."""
    patterns = golden_patterns(RENDER_CASES / case)
    expected = tree(RENDER_CASES / case / "expected")
    assert pinned(expected, patterns) == expected


def test_minimal_platform_quota_arithmetic() -> None:
    """The reviewed numbers, derived here from the inputs rather than copied from the output."""
    train = yaml.safe_load(
        (MINIMAL / "expected/lab/tenancy/ml-train/resourcequota-gpuplane.yaml").read_text()
    )
    serve = yaml.safe_load(
        (MINIMAL / "expected/lab/tenancy/ml-serve/resourcequota-gpuplane.yaml").read_text()
    )
    # train pool: 2 nodes x 8 H100; the team may hold nominal 12 + borrowing 4 = 16, all of it.
    assert train["spec"]["hard"]["requests.nvidia.com/gpu"] == str(min(2 * 8, 12 + 4))
    # serve pool: 1 node x 4 L40S x 2 time-slicing replicas, renamed to gpu.shared; no borrowing
    # limit means Kueue lets the team borrow up to the whole pool.
    assert serve["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == str(1 * 4 * 2)
    # GPUs a namespace's purpose may not use are closed with an explicit 0
    assert train["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == "0"
    assert serve["spec"]["hard"]["requests.nvidia.com/gpu"] == "0"


def test_committed_rendered_tree_is_current(gpuplane, crds: Path) -> None:
    result = gpuplane("-C", str(REPO), "render", "--check", "--crds", str(crds))
    assert result.exit_code == 0, result.output


def test_output_is_identical_across_hash_seeds(tmp_path: Path, crds: Path) -> None:
    trees = []
    for seed in ("0", "1", "4242"):
        root = copy_inputs(REPO, tmp_path / f"seed-{seed}")
        env = {**os.environ, "PYTHONHASHSEED": seed, "GPUPLANE_CRDS": str(crds)}
        subprocess.run(
            [sys.executable, "-m", "renderer", "-C", str(root), "render"],
            check=True,
            env=env,
            capture_output=True,
        )
        trees.append(tree(root / "rendered"))
    assert trees[0] and trees[0] == trees[1] == trees[2]
    # and it is the committed tree
    assert trees[0] == tree(REPO / "rendered")


def test_failed_render_leaves_rendered_untouched(platform: Path, gpuplane, crds: Path) -> None:
    before = tree(platform / "rendered")
    vision = platform / "teams" / "vision.yaml"
    vision.write_text(vision.read_text().replace("queue: prod", "queue: nowhere"))
    result = gpuplane("-C", str(platform), "render", "--crds", str(crds))
    assert result.exit_code == 1
    assert "error[unknown-reference]" in result.output
    assert tree(platform / "rendered") == before


def test_a_crash_while_writing_leaves_rendered_untouched(
    platform: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = tree(platform / "rendered")
    files = {"a/x.yaml": b"x: 1\n", "b/y.yaml": b"y: 2\n"}
    calls = {"n": 0}
    real = Path.write_bytes

    def failing(self: Path, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing)
    with pytest.raises(OSError, match="disk full"):
        write_tree(platform / "rendered", files)
    monkeypatch.undo()
    assert tree(platform / "rendered") == before
    assert not [p for p in platform.iterdir() if p.name.startswith(".rendered")]


def test_removed_team_files_disappear(platform: Path, gpuplane, crds: Path) -> None:
    (platform / "teams" / "recsys.yaml").unlink()
    before = tree(platform / "rendered")
    assert any("/recsys-train/" in p for p in before)
    result = gpuplane("-C", str(platform), "render", "--crds", str(crds))
    assert result.exit_code == 0, result.output
    after = tree(platform / "rendered")
    assert not any("recsys" in p for p in after)
    # and the cluster kustomization no longer lists them
    listing = (platform / "rendered/prod-east/tenancy/kustomization.yaml").read_text()
    assert "recsys" not in listing


def test_render_check_lists_stale_files_and_writes_nothing(
    platform: Path, gpuplane, crds: Path
) -> None:
    rendered = platform / "rendered"
    (rendered / "prod-east/tenancy/vision-train/resourcequota-gpuplane.yaml").write_text("stale\n")
    (rendered / "prod-east/tenancy/vision-train/configmap-leftover.yaml").write_text("extra\n")
    (rendered / "prod-east/tenancy/vision-serve/limitrange-gpuplane-defaults.yaml").unlink()
    before = tree(rendered)
    result = gpuplane("-C", str(platform), "render", "--check", "--crds", str(crds))
    assert result.exit_code == 1
    # each stale file is a stale-output finding, missing, extra, then changed ones
    fix = "run `gpuplane render` and commit the result"
    missing = "rendered/prod-east/tenancy/vision-serve/limitrange-gpuplane-defaults.yaml"
    extra = "rendered/prod-east/tenancy/vision-train/configmap-leftover.yaml"
    changed = "rendered/prod-east/tenancy/vision-train/resourcequota-gpuplane.yaml"
    assert result.output.splitlines()[-4:] == [
        f"{missing}: error[stale-output] {missing} is missing; {fix}",
        f"{extra}: error[stale-output] {extra} is extra; {fix}",
        f"{changed}: error[stale-output] {changed} is changed; {fix}",
        "3 errors, 0 warnings in 16 input files",
    ]
    assert tree(rendered) == before
    assert gpuplane("-C", str(platform), "render", "--crds", str(crds)).exit_code == 0
    assert gpuplane("-C", str(platform), "render", "--check", "--crds", str(crds)).exit_code == 0


def test_injection_attempt_cannot_add_or_reshape_objects(
    platform: Path, gpuplane, crds: Path
) -> None:
    """A description holding a newline, '---' and a ClusterRoleBinding stays one string value."""
    clean = tree(platform / "rendered")
    vision = platform / "teams" / "vision.yaml"
    payload = (
        '"ok\\n---\\napiVersion: rbac.authorization.k8s.io/v1\\nkind: ClusterRoleBinding\\n'
        "metadata: {name: pwn}\\nroleRef: {kind: ClusterRole, name: cluster-admin}\\n"
        "subjects: [{kind: Group, name: 'system:authenticated'}]\\n\""
    )
    text = re.sub(
        r"(?m)^  description: .*$", lambda _: f"  description: {payload}", vision.read_text()
    )
    vision.write_text(text)
    assert gpuplane("-C", str(platform), "render", "--crds", str(crds)).exit_code == 0
    injected = tree(platform / "rendered")
    assert sorted(injected) == sorted(clean)
    changed = [p for p in injected if injected[p] != clean[p]]
    objects = [p for p in changed if p.endswith(".yaml")]
    assert set(changed) - set(objects) == {"prod-east/README.md"}
    namespaces = [p for p in objects if "/tenancy/" in p]
    assert sorted(namespaces) == [
        f"prod-east/tenancy/vision-{n}/namespace-vision-{n}.yaml"
        for n in ("notebooks", "serve", "train")
    ]
    # the team's Argo CD project carries the description too, as its spec.description
    project = "prod-east/gitops/argocd/appproject-team-vision-prod-east.yaml"
    assert set(objects) - set(namespaces) == {project}
    (project_body,) = list(yaml.safe_load_all(injected[project]))
    assert project_body["kind"] == "AppProject"
    assert project_body["spec"]["description"].startswith("ok\n---\napiVersion")
    assert "ClusterRoleBinding" not in yaml.safe_dump(
        {k: v for k, v in project_body["spec"].items() if k != "description"}
    )
    # in the generated README the description stays on one line of its own
    readme = injected["prod-east/README.md"].decode().splitlines()
    assert not [line for line in readme if line.startswith(("---", "apiVersion", "kind:"))]
    flattened = "ok --- apiVersion: rbac.authorization.k8s.io/v1 kind: ClusterRoleBinding"
    assert sum(flattened in line for line in readme) == 1
    for path in namespaces:
        documents = list(yaml.safe_load_all(injected[path]))
        assert len(documents) == 1
        body = documents[0]
        assert body["kind"] == "Namespace"
        assert body["metadata"]["annotations"]["gpuplane.dev/description"].startswith(
            "ok\n---\napiVersion"
        )
        assert "ClusterRoleBinding" not in yaml.safe_dump(
            {k: v for k, v in body.items() if k != "metadata"}
        )


SIG_CRD_GROUPS = {"gateway.networking.k8s.io", "inference.networking.k8s.io"}
"""`k8s.io` groups that Kubernetes SIG projects install as CRDs (Gateway API: "Gateway API is
a set of CRDs", kubernetes-sigs/gateway-api; its Inference Extension), unknown to
kubernetes-validate's built-in schemas."""


@pytest.mark.slow
def test_every_committed_object_passes_kubernetes_validate_itself() -> None:
    """A cross-check with kubernetes-validate's own (slow, uncached) entry point, independent of
    the engine's compiled validators. It knows built-in kinds only; custom kinds (Kueue's) are
    checked against their CRDs by the engine and tests/test_kueue.py."""
    checked = 0
    for path in object_files(REPO / "rendered"):
        body = yaml.safe_load(path.read_text())
        group = body["apiVersion"].rpartition("/")[0]
        if "." in group and not (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io")):
            continue  # a custom resource (kueue.x-k8s.io, monitoring.coreos.com, ...)
        if group in SIG_CRD_GROUPS:
            continue  # served by a SIG project's CRDs, not by kube-apiserver
        cluster = path.relative_to(REPO / "rendered").parts[0]
        version = yaml.safe_load((REPO / "clusters" / f"{cluster}.yaml").read_text())["spec"][
            "kubernetesVersion"
        ]
        kubernetes_validate.validate(body, version, strict=True)
        checked += 1
    assert checked > 100


@pytest.mark.slow
@pytest.mark.skipif(
    not kubectl_with_kustomize_v5(), reason="kubectl with kustomize v5 is not installed"
)
@pytest.mark.parametrize("cluster", sorted(p.stem for p in (REPO / "clusters").glob("*.yaml")))
def test_kubectl_kustomize_builds_each_cluster(cluster: str) -> None:
    result = subprocess.run(
        ["kubectl", "kustomize", str(REPO / "rendered" / cluster)],
        capture_output=True,
        text=True,
        check=True,
    )
    built = list(yaml.safe_load_all(result.stdout))
    on_disk = object_files(REPO / "rendered" / cluster)
    assert len(built) == len(on_disk)
    assert {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in built} == {
        (b["kind"], b["metadata"]["name"], b["metadata"].get("namespace"))
        for b in (yaml.safe_load(p.read_text()) for p in on_disk)
    }


def test_the_cluster_readme_tells_teams_each_pools_rdma_request() -> None:
    """Teams write their own multi-node jobs: the README names what each pod must add."""
    for cluster in ("prod-east", "staging-west"):
        readme = (REPO / "rendered" / cluster / "README.md").read_text()
        expected = []
        for path in sorted((REPO / "pools").glob("*.yaml")):
            spec = yaml.safe_load(path.read_text())["spec"]
            rdma = spec.get("fabric", {}).get("rdma")
            if spec["cluster"] == cluster and rdma:
                expected.append(f"`{rdma['resource']}: {rdma['perNode']}`")
                row = next(
                    line
                    for line in readme.splitlines()
                    if line.startswith(f"| {path.stem} | ") and "`" in line
                )
                assert expected[-1] in row and spec["fabric"]["type"] in row
        assert expected, f"{cluster} has no pool with an rdma block"
        assert readme.count("(a pod with part of a node: its share, rounded up)") == len(expected)
