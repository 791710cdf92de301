"""The schema store: what `gpuplane schemas import|pull|list` keep, and how a render uses it.

Upstream CRDs come from ../shared/crds (the operators' release files, unmodified); the tests that
need them skip where it is absent. The expectations are written from the CRDs and from the example
clusters' files (which add-on release each pins, on which line), not from gpuplane's output.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from renderer.cli import main
from renderer.output.crds import convert_crd_root, parsed_crds
from renderer.output.schema_store import STORE_DIR, SchemaStore, compact_schema
from renderer.output.validation import OutputValidator
from renderer.pipeline import render_platform
from tests.conftest import REPO, SHARED_CRDS, copy_inputs

needs_crds = pytest.mark.skipif(
    not SHARED_CRDS.is_dir(), reason="../shared/crds is not beside this checkout"
)
KUEUE = SHARED_CRDS / "kueue"

# The custom kinds the example platform renders, from its layers: Kueue's six (no AdmissionCheck),
# the ClusterPolicy the GPU Operator's values imply, DCGM's ServiceMonitor, the observability
# layer's PrometheusRules, the acceptance suites' three Argo Workflows kinds, and Argo CD's
# Application and AppProject, External Secrets' SecretStore, the Network Operator's policy,
# the templates' JobSet, RayJob and TrainJob, Trainer's ClusterTrainingRuntime, and the serving
# layer's Gateway API objects (Envoy Gateway's), KEDA ScaledObjects and PodMonitors.
EXAMPLE_CUSTOM_KINDS = {
    "kueue.x-k8s.io/v1beta2 ClusterQueue",
    "kueue.x-k8s.io/v1beta2 Cohort",
    "kueue.x-k8s.io/v1beta2 LocalQueue",
    "kueue.x-k8s.io/v1beta2 ResourceFlavor",
    "kueue.x-k8s.io/v1beta2 Topology",
    "kueue.x-k8s.io/v1beta2 WorkloadPriorityClass",
    "nvidia.com/v1 ClusterPolicy",
    "monitoring.coreos.com/v1 ServiceMonitor",
    "monitoring.coreos.com/v1 PrometheusRule",  # the observability layer's rules
    "argoproj.io/v1alpha1 WorkflowTemplate",
    "argoproj.io/v1alpha1 CronWorkflow",
    "argoproj.io/v1alpha1 Workflow",
    "argoproj.io/v1alpha1 Application",
    "argoproj.io/v1alpha1 AppProject",
    "external-secrets.io/v1 SecretStore",  # prod-east declares a secret store
    "mellanox.com/v1alpha1 NicClusterPolicy",  # prod-east's RDMA pools, the Network Operator
    # the workload templates, checked like applied objects, and Kubeflow Trainer's runtime
    "jobset.x-k8s.io/v1alpha2 JobSet",
    "ray.io/v1 RayJob",
    "trainer.kubeflow.org/v1alpha1 TrainJob",
    "trainer.kubeflow.org/v1alpha1 ClusterTrainingRuntime",
    "gateway.networking.k8s.io/v1 GatewayClass",
    "gateway.networking.k8s.io/v1 Gateway",
    "gateway.networking.k8s.io/v1 HTTPRoute",
    "keda.sh/v1alpha1 ScaledObject",
    "monitoring.coreos.com/v1 PodMonitor",
}


def run(root: Path, *args: str, stdin: bytes | None = None) -> Any:
    env = {"GPUPLANE_CRDS": "", "GPUPLANE_CACHE_DIR": ""}
    return CliRunner(env=env).invoke(main, ["-C", str(root), *args], input=stdin)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_inputs(REPO, tmp_path / "repo")


def line_of(path: Path, needle: str, after: str) -> tuple[int, int]:
    """1-based line and column of `needle`'s value on the first line holding it below `after`."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    for number, line in enumerate(lines[start:], start + 1):
        if needle in line:
            return number, line.index(needle) + len(needle) + 1
    raise AssertionError(f"{needle} not in {path}")


# -- a clone with nothing beside it ----------------------------------------------------------


def test_a_lone_clone_renders_with_one_warning_per_unchecked_kind(repo: Path) -> None:
    result = run(repo, "render", "--format", "json")
    assert result.exit_code == 0, result.output
    findings = json.loads(result.output)["findings"]
    assert {f["level"] for f in findings} == {"warning"}
    assert {f["rule"] for f in findings} == {"schema-unchecked"}
    kinds = {" ".join(f["message"].split(":")[0].split()[:2]) for f in findings}
    assert kinds == EXAMPLE_CUSTOM_KINDS
    assert len(findings) == len(EXAMPLE_CUSTOM_KINDS)  # one per kind, not one per object
    queues = next(f for f in findings if "ClusterQueue" in f["message"])
    # 15 ClusterQueues: a team x purpose each, prod-east and staging-west (see plan)
    assert "objects on prod-east, staging-west" in queues["message"]
    assert "Kueue v0.19.2" in queues["message"]
    assert "gpuplane schemas import CRDS --release v0.19.2" in queues["hint"]
    # on the line that pins Kueue in the first cluster's file
    line, _ = line_of(repo / "clusters/prod-east.yaml", "version: ", "kueue:")
    assert (queues["file"], queues["line"]) == ("clusters/prod-east.yaml", line)
    assert (repo / "rendered").is_dir()


def test_strict_schemas_makes_the_unchecked_kinds_errors_and_writes_nothing(repo: Path) -> None:
    result = run(repo, "render", "--strict-schemas")
    assert result.exit_code == 1
    assert result.output.count("error[schema-unchecked]") == len(EXAMPLE_CUSTOM_KINDS)
    assert not (repo / "rendered").exists()


# -- import, round trips ---------------------------------------------------------------------


def kubectl_list(files: list[Path]) -> bytes:
    """What `kubectl get crd -o yaml` prints for these CRDs: a v1 List whose items carry what
    the API server adds (uid, resourceVersion, generation, managedFields, status)."""
    items = []
    for number, path in enumerate(files):
        for crd in yaml.safe_load_all(path.read_text()):
            crd["metadata"].update(
                {
                    "uid": f"00000000-0000-0000-0000-{number:012d}",
                    "resourceVersion": str(1000 + number),
                    "generation": 1,
                    "creationTimestamp": "2026-11-30T10:00:00Z",
                    "managedFields": [{"manager": "helm", "operation": "Update"}],
                    "labels": {"app.kubernetes.io/managed-by": "Helm"},
                }
            )
            crd["status"] = {
                "acceptedNames": crd["spec"]["names"],
                "conditions": [{"type": "Established", "status": "True"}],
                "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
            }
            items.append(crd)
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "items": items,
        "metadata": {"resourceVersion": ""},
    }
    return yaml.safe_dump(listing, sort_keys=False).encode()


def stored(root: Path) -> dict[str, dict[str, Any]]:
    return {
        str(p.relative_to(root / STORE_DIR)): json.loads(p.read_bytes())
        for p in sorted((root / STORE_DIR).rglob("*.json"))
    }


@needs_crds
def test_import_keeps_every_schema_rule_and_records_where_it_came_from(repo: Path) -> None:
    result = run(repo, "schemas", "import", str(SHARED_CRDS))
    assert result.exit_code == 0, result.output
    files = sorted(p for p in SHARED_CRDS.rglob("*.yaml"))
    store = stored(repo)
    assert len(store) == len(files)  # every upstream file holds one CRD
    for path in files:
        raw = path.read_bytes()
        (original,) = parsed_crds(path, raw)
        (entry,) = [d for d in store.values() if d["metadata"]["name"] == original.name]
        notes = entry["metadata"]["annotations"]
        assert notes["gpuplane.dev/source"] == str(path)
        assert notes["gpuplane.dev/source-sha256"] == hashlib.sha256(raw).hexdigest()
        spec = entry["spec"]
        assert (spec["group"], spec["names"]["kind"], spec["scope"]) == (
            original.group,
            original.kind,
            original.scope,
        )
        compact = {v["name"]: v for v in spec["versions"]}
        for version, schema in original.schemas.items():
            assert compact[version]["served"] == (version in original.served)
            # what the validator compiles is the same from the store as from the release file
            assert convert_crd_root(compact[version]["schema"]["openAPIV3Schema"]) == (
                convert_crd_root(schema)
            )
            assert "x-kubernetes-validations" not in json.dumps(schema) or (
                "x-kubernetes-validations" in json.dumps(compact[version])
            )
    total_in = sum(p.stat().st_size for p in files)
    total_out = sum(p.stat().st_size for p in (repo / STORE_DIR).rglob("*.json"))
    assert total_out < total_in / 3  # descriptions are most of a CRD


def test_compacting_drops_descriptions_but_not_a_property_called_description() -> None:
    schema = {
        "description": "an AppProject",
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "the project's description"},
            "items": {"type": "array", "items": {"type": "string", "description": "x"}},
        },
        "x-kubernetes-validations": [{"rule": "self.description != ''", "message": "m"}],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "items": {"type": "array", "items": {"type": "string"}},
        },
        "x-kubernetes-validations": [{"rule": "self.description != ''", "message": "m"}],
    }


@needs_crds
def test_kubectl_output_imports_to_the_same_store_as_the_release_files(tmp_path: Path) -> None:
    files = sorted(KUEUE.glob("*.yaml"))
    from_files = copy_inputs(REPO, tmp_path / "a")
    from_kubectl = copy_inputs(REPO, tmp_path / "b")
    assert run(from_files, "schemas", "import", *map(str, files)).exit_code == 0
    result = run(from_kubectl, "schemas", "import", "-", stdin=kubectl_list(files))
    assert result.exit_code == 0, result.output
    assert "Kueue v0.19.2: 7 CRDs" in result.output

    def without_provenance(store: dict[str, dict[str, Any]]) -> dict[str, Any]:
        for document in store.values():
            document["metadata"]["annotations"].pop("gpuplane.dev/source")
            document["metadata"]["annotations"].pop("gpuplane.dev/source-sha256")
        return store

    assert without_provenance(stored(from_files)) == without_provenance(stored(from_kubectl))
    assert sorted(stored(from_files)) == [
        f"kueue/v0.19.2/{p.stem.split('_')[1]}.{p.stem.split('_')[0]}.json" for p in files
    ]


@needs_crds
def test_importing_again_writes_nothing_and_the_bytes_are_stable(repo: Path) -> None:
    assert run(repo, "schemas", "import", str(KUEUE)).exit_code == 0
    before = {p: p.read_bytes() for p in (repo / STORE_DIR).rglob("*.json")}
    again = run(repo, "schemas", "import", str(KUEUE))
    assert again.exit_code == 0 and "nothing written" in again.output
    assert {p: p.read_bytes() for p in (repo / STORE_DIR).rglob("*.json")} == before


# -- a render checks each cluster against the release it pins ---------------------------------


@needs_crds
def test_a_store_filled_from_the_release_files_checks_everything(repo: Path) -> None:
    assert run(repo, "schemas", "import", str(SHARED_CRDS)).exit_code == 0
    result = run(repo, "render", "--strict-schemas")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    with_crds = render_platform(repo, OutputValidator([SHARED_CRDS]))
    from_store = render_platform(repo, OutputValidator())
    assert with_crds.diagnostics == from_store.diagnostics == []


def a_release_without(field: str, tmp_path: Path) -> Path:
    """Kueue's ClusterQueue CRD as a made-up later release whose v1beta2 spec dropped `field`."""
    crd = yaml.safe_load((KUEUE / "kueue.x-k8s.io_clusterqueues.yaml").read_text())
    (v1beta2,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    spec = v1beta2["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del spec["properties"][field]
    path = tmp_path / "later" / "clusterqueues.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(crd))
    return path


@needs_crds
def test_a_version_bump_in_a_cluster_file_changes_which_schema_is_used(
    repo: Path, tmp_path: Path
) -> None:
    assert run(repo, "schemas", "import", str(SHARED_CRDS)).exit_code == 0
    later = a_release_without("namespaceSelector", tmp_path)
    assert run(repo, "schemas", "import", str(later), "--release", "v0.20.0").exit_code == 0
    # kueue/v0.20.0 holds only the ClusterQueue: the other Kueue kinds are unchecked there
    cluster_file = repo / "clusters/staging-west.yaml"
    assert run(repo, "render", "--check", "--strict-schemas").exit_code == 1  # no rendered/ yet
    clean = render_platform(repo, OutputValidator())
    assert clean.diagnostics == []

    cluster_file.write_text(
        cluster_file.read_text().replace("version: v0.19.2", "version: v0.20.0")
    )
    bumped = render_platform(repo, OutputValidator())
    schema_errors = [d for d in bumped.diagnostics if d.rule == "output-schema"]
    assert schema_errors, bumped.diagnostics
    assert all("(staging-west/" in d.message for d in schema_errors)  # prod-east still v0.19.2
    assert all("namespaceSelector" in d.message for d in schema_errors)
    assert all("ClusterQueue" in d.message for d in schema_errors)
    unchecked = {
        d.message.split(":")[0] for d in bumped.diagnostics if d.rule == "schema-unchecked"
    }
    assert unchecked == {
        f"kueue.x-k8s.io/v1beta2 {kind}"
        for kind in ("Cohort", "LocalQueue", "ResourceFlavor", "Topology", "WorkloadPriorityClass")
    }


@needs_crds
def test_a_pinned_release_the_store_lacks_is_reported_on_its_version_line(repo: Path) -> None:
    assert run(repo, "schemas", "import", str(SHARED_CRDS)).exit_code == 0
    cluster_file = repo / "clusters/staging-west.yaml"
    cluster_file.write_text(
        cluster_file.read_text().replace("version: v0.19.2", "version: v0.19.3")
    )
    result = run(repo, "render", "--format", "json")
    assert result.exit_code == 0, result.output
    (finding,) = json.loads(result.output)["findings"]
    line, col = line_of(cluster_file, "version: ", "kueue:")
    assert finding["rule"] == "schema-release-missing"
    assert (finding["file"], finding["line"], finding["column"]) == (
        "clusters/staging-west.yaml",
        line,
        col,
    )
    assert "Kueue v0.19.3" in finding["message"] and "only v0.19.2" in finding["message"]
    assert "--release v0.19.3" in finding["hint"]
    strict = run(repo, "render", "--strict-schemas")
    assert strict.exit_code == 1 and "error[schema-release-missing]" in strict.output
    listing = json.loads(run(repo, "schemas", "list", "--format", "json").output)
    assert listing["missing"] == [
        {"cluster": "staging-west", "operator": "kueue", "release": "v0.19.3"}
    ]


@needs_crds
def test_crds_on_the_command_line_come_before_the_store(repo: Path, tmp_path: Path) -> None:
    later = a_release_without("namespaceSelector", tmp_path)
    assert run(repo, "schemas", "import", str(later), "--release", "v0.19.2").exit_code == 0
    assert render_platform(repo, OutputValidator()).diagnostics  # the store's broken release
    assert render_platform(repo, OutputValidator([SHARED_CRDS])).diagnostics == []


@needs_crds
def test_gpuplane_yaml_schemas_list_is_read_relative_to_the_repository(repo: Path) -> None:
    (repo / "crds").mkdir()
    for folder in (
        "kueue",
        "gpu-operator",
        "argo-cd",
        "argo-workflows",
        "prometheus-operator",
        "external-secrets",
        "network-operator",
        "jobset",
        "kuberay",
        "kubeflow-trainer",
        "keda",
        "gateway-api",
    ):
        for path in (SHARED_CRDS / folder).glob("*.yaml"):
            (repo / "crds" / path.name).write_bytes(path.read_bytes())
    settings = repo / "gpuplane.yaml"
    settings.write_text(settings.read_text() + "  schemas: [crds]\n")
    result = run(repo, "render", "--strict-schemas")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("entry", ["/etc", "../outside", "crds/../../outside"])
def test_gpuplane_yaml_schemas_must_stay_inside_the_repository(repo: Path, entry: str) -> None:
    settings = repo / "gpuplane.yaml"
    settings.write_text(settings.read_text() + f"  schemas: [{json.dumps(entry)}]\n")
    result = run(repo, "validate")
    assert result.exit_code == 1
    assert "gpuplane.yaml:" in result.output and "schemas[0]" in result.output.replace("/0", "[0]")


def test_a_missing_schemas_folder_is_an_error_on_its_line(repo: Path) -> None:
    settings = repo / "gpuplane.yaml"
    settings.write_text(settings.read_text() + "  schemas:\n    - crds/missing\n")
    result = run(repo, "render")
    assert result.exit_code == 1
    line = len(settings.read_text().splitlines())
    assert f"gpuplane.yaml:{line}:" in result.output and "error[crd-load]" in result.output
    assert not (repo / "rendered").exists()


# -- pull, list, hostile input ---------------------------------------------------------------


def fake_kubectl(folder: Path, body: str) -> None:
    folder.mkdir(exist_ok=True)
    script = folder / "kubectl"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@needs_crds
def test_pull_reads_kubectl_and_keeps_only_the_operators_gpuplane_renders_for(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = tmp_path / "crds.yaml"
    listing.write_bytes(
        kubectl_list(
            sorted(KUEUE.glob("*.yaml")) + sorted((SHARED_CRDS / "kyverno").glob("*.yaml"))
        )
    )
    fake_kubectl(tmp_path / "bin", f'[ "$1 $2" = "--context prod" ] || exit 9\ncat {listing}\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = run(repo, "schemas", "pull", "--context", "prod", "--cluster", "prod-east")
    assert result.exit_code == 0, result.output
    assert "Kueue v0.19.2: 7 CRDs" in result.output
    assert "skipped 1 CRDs of other operators: clusterpolicies.kyverno.io" in result.output
    releases = SchemaStore(repo).releases()
    assert releases == {"kueue": ("v0.19.2",)}


def test_pull_says_what_kubectl_said_when_it_fails(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kubectl(tmp_path / "bin", "echo 'error: the server is unreachable' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = run(repo, "schemas", "pull")
    assert result.exit_code == 2
    assert "the server is unreachable" in result.output
    assert not (repo / STORE_DIR).exists()


@needs_crds
def test_list_shows_each_release_and_who_pins_it(repo: Path) -> None:
    assert run(repo, "schemas", "import", str(KUEUE), str(SHARED_CRDS / "argo-cd")).exit_code == 0
    text = run(repo, "schemas", "list").output
    assert "Kueue v0.19.2 (kueue), pinned by prod-east, staging-west: 7 kinds" in text
    assert "Argo CD unpinned (argocd), pinned by no cluster: 3 kinds" in text
    assert "missing: prod-east pins GPU Operator v26.7.0" in text


def test_list_of_an_empty_store(repo: Path) -> None:
    result = run(repo, "schemas", "list")
    assert result.exit_code == 0 and ".gpuplane/schemas: empty" in result.output


@pytest.mark.parametrize("release", ["../escape", ".hidden", "a/b", "with space", ""])
def test_a_release_that_is_not_a_folder_name_is_refused(
    repo: Path, tmp_path: Path, release: str
) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(MINIMAL_CRD)
    result = run(repo, "schemas", "import", str(crd), "--release", release)
    assert result.exit_code == 2, result.output
    assert not (repo / STORE_DIR).exists()


MINIMAL_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, description: a widget}}
"""


def test_an_alias_bomb_is_refused_before_anything_is_written(repo: Path, tmp_path: Path) -> None:
    levels = ["a0: &a0 {type: string}"]
    for n in range(1, 30):
        prev = f"*a{n - 1}"
        levels.append(
            f"a{n}: &a{n} {{type: object, properties: {{x: {prev}, y: {prev}, z: {prev}}}}}"
        )
    bomb = (
        "x-defs:\n"  # anchors first: 3**29 nodes once the aliases are followed
        + "".join(f"  {line}\n" for line in levels)
        + MINIMAL_CRD.replace("{type: object, description: a widget}", "*a29")
    )
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb)
    result = run(repo, "schemas", "import", str(path), "--release", "v1")
    assert result.exit_code == 2
    assert "alias bomb" in result.output and "bomb.yaml" in result.output
    assert not (repo / STORE_DIR).exists()


def test_a_file_with_no_crd_is_refused(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    result = run(repo, "schemas", "import", str(path))
    assert result.exit_code == 2 and "no CustomResourceDefinition found" in result.output


def test_a_crd_defined_twice_differently_is_refused(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(MINIMAL_CRD)
    (tmp_path / "two.yaml").write_text(MINIMAL_CRD.replace("served: true", "served: false"))
    result = run(repo, "schemas", "import", str(tmp_path / "one.yaml"), str(tmp_path / "two.yaml"))
    assert result.exit_code == 2 and "also defined, differently" in result.output
    assert not (repo / STORE_DIR).exists()


def test_an_operator_no_cluster_pins_goes_under_unpinned(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "crd.yaml").write_text(MINIMAL_CRD)
    result = run(repo, "schemas", "import", str(tmp_path / "crd.yaml"))
    assert result.exit_code == 0, result.output
    assert SchemaStore(repo).releases() == {"example.com": ("unpinned",)}
    (document,) = stored(repo).values()
    assert "description" not in json.dumps(document["spec"])


# -- what an adversarial review found ---------------------------------------------------------


def git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )


@needs_crds
@pytest.mark.parametrize("how", ["store", "schemas-list"])
def test_diff_renders_the_base_with_the_schemas_the_base_commits(repo: Path, how: str) -> None:
    if how == "store":
        assert run(repo, "schemas", "import", str(SHARED_CRDS)).exit_code == 0
    else:
        for path in SHARED_CRDS.rglob("*.yaml"):
            target = repo / "crds" / path.relative_to(SHARED_CRDS)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
        settings = repo / "gpuplane.yaml"
        settings.write_text(settings.read_text() + "  schemas: [crds]\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    team = repo / "teams/llm.yaml"
    team.write_text(team.read_text().replace("description:", "description: edited,", 1))
    result = run(repo, "diff", "--base", "main", "--strict-schemas", "--format", "json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["base"]["valid"] is True, body["base"]


def test_a_broken_crd_file_is_reported_even_when_only_the_implied_cluster_policy_needs_it(
    repo: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "clusterpolicies.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: clusterpolicies.nvidia.com}\n"
        "spec: {group: nvidia.com, names: {kind: ClusterPolicy, plural: clusterpolicies}}\n"
    )
    result = run(repo, "render", "--crds", str(broken), "--format", "json")
    assert result.exit_code == 1, result.output
    findings = json.loads(result.output)["findings"]
    load = [f for f in findings if f["rule"] == "crd-load"]
    assert len(load) == 1 and "no spec.versions" in load[0]["message"]
    assert not (repo / "rendered").exists()


@needs_crds
def test_a_corrupt_store_file_is_an_error_not_a_missing_kind(repo: Path) -> None:
    assert run(repo, "schemas", "import", str(KUEUE)).exit_code == 0
    (repo / STORE_DIR / "kueue/v0.19.2/cohorts.kueue.x-k8s.io.json").write_text('{"truncated')
    result = run(repo, "render")
    assert result.exit_code == 1
    assert "error[crd-load]" in result.output and "cohorts.kueue.x-k8s.io.json" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "body", ['{"spec": []}', '{"spec": {"versions": 5, "names": 3}}', "[1, 2]", "7"]
)
def test_list_reads_odd_store_files_without_a_traceback(repo: Path, body: str) -> None:
    folder = repo / STORE_DIR / "kueue" / "v0.19.2"
    folder.mkdir(parents=True)
    (folder / "odd.kueue.x-k8s.io.json").write_text(body)
    result = run(repo, "schemas", "list")
    assert result.exit_code == 0, result.output
    assert "Kueue v0.19.2" in result.output


def test_deeply_nested_json_is_a_finding_not_a_traceback(repo: Path, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    # it names a kind the render looks up, so the render parses it
    deep.write_text(
        '{"note": "kueue.x-k8s.io ClusterQueue", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    imported = run(repo, "schemas", "import", str(deep))
    assert imported.exit_code == 2 and "nested too deeply" in imported.output
    rendered = run(repo, "render", "--crds", str(deep))
    assert rendered.exit_code == 1 and "nested too deeply" in rendered.output
    assert "Traceback" not in rendered.output


def test_nan_is_not_json(repo: Path, tmp_path: Path) -> None:
    crd = tmp_path / "crd.json"
    document = yaml.safe_load(MINIMAL_CRD)
    document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["maximum"] = 1.5
    crd.write_text(json.dumps(document).replace("1.5", "NaN"))
    result = run(repo, "schemas", "import", str(crd))
    assert result.exit_code == 2 and "NaN is not JSON" in result.output


@needs_crds
def test_a_versioned_release_outranks_what_was_imported_unpinned(
    repo: Path, tmp_path: Path
) -> None:
    stale = yaml.safe_load((SHARED_CRDS / "argo-cd/appproject-crd.yaml").read_text())
    schema = stale["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["required"] = [*schema.get("required", []), "oldOnlyField"]
    (tmp_path / "stale.yaml").write_text(yaml.safe_dump(stale))
    assert run(repo, "schemas", "import", str(tmp_path / "stale.yaml")).exit_code == 0
    assert (
        run(
            repo,
            "schemas",
            "import",
            str(SHARED_CRDS),
            "--release",
            "v3.5.1",
            "--operator",
            "argocd",
        ).exit_code
        == 0
    )
    assert SchemaStore(repo).releases()["argocd"] == ("unpinned", "v3.5.1")
    findings = render_platform(repo, OutputValidator()).diagnostics
    assert not [d for d in findings if d.rule == "output-schema"], findings
    assert not [d for d in findings if "AppProject" in d.message or "Application" in d.message]


def test_release_order_reads_numbers() -> None:
    from renderer.output.schema_store import release_key

    releases = ["v10.0.0", "unpinned", "v9.1.0", "4.5.2-4.8.1", "v0.19.2", "v0.19.10"]
    assert sorted(releases, key=release_key) == [
        "unpinned",
        "v0.19.2",
        "v0.19.10",
        "4.5.2-4.8.1",
        "v9.1.0",
        "v10.0.0",
    ]


@needs_crds
@pytest.mark.parametrize(
    "bad",
    [
        MINIMAL_CRD.replace("group: example.com", "group: zz z.example").replace(
            "widgets.example.com", "widgets.zz z.example"
        ),
        MINIMAL_CRD.replace("name: widgets.example.com", "name: zz/evil"),
        MINIMAL_CRD.replace("name: widgets.example.com", "name: '12345'"),
    ],
)
def test_one_bad_crd_in_an_import_writes_nothing(repo: Path, tmp_path: Path, bad: str) -> None:
    (tmp_path / "bad.yaml").write_text(bad)
    result = run(repo, "schemas", "import", str(KUEUE), str(tmp_path / "bad.yaml"))
    assert result.exit_code == 2, result.output
    assert not (repo / STORE_DIR).exists()


@needs_crds
def test_the_store_follows_no_link_and_schemas_may_not_link_out(repo: Path, tmp_path: Path) -> None:
    outside = copy_inputs(REPO, tmp_path / "outside")
    assert run(outside, "schemas", "import", str(KUEUE)).exit_code == 0
    (repo / STORE_DIR / "kueue").mkdir(parents=True)
    (repo / STORE_DIR / "kueue" / "v0.19.2").symlink_to(outside / STORE_DIR / "kueue" / "v0.19.2")
    result = run(repo, "render", "--format", "json")
    unchecked = [f for f in json.loads(result.output)["findings"] if "ClusterQueue" in f["message"]]
    assert unchecked and unchecked[0]["rule"] == "schema-unchecked"  # the link is not read

    (repo / "crds").mkdir()
    (repo / "crds" / "queues.yaml").symlink_to(KUEUE / "kueue.x-k8s.io_clusterqueues.yaml")
    settings = repo / "gpuplane.yaml"
    settings.write_text(settings.read_text() + "  schemas: [crds]\n")
    linked = run(repo, "render")
    assert linked.exit_code == 1 and "links out of it" in linked.output


@needs_crds
def test_importing_the_same_bytes_from_another_path_writes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    assert run(repo, "schemas", "import", str(KUEUE)).exit_code == 0
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in KUEUE.glob("*.yaml"):
        (copy / path.name).write_bytes(path.read_bytes())
    again = run(repo, "schemas", "import", str(copy))
    assert again.exit_code == 0 and "nothing written" in again.output
