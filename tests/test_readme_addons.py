"""The cluster README's add-on table: every add-on the cluster file declares, its pinned version,
how it gets onto the cluster and why it is there (issue 30: "said where people look").

Expectations are read from the example's input files with PyYAML (which add-ons, versions, which
namespaces list which kinds, which pools carry an `rdma/` resource), and the README's claims
about Applications are checked against the Applications the gitops layer rendered into
`rendered/<cluster>/gitops/argocd/` (and the GPU Operator's values for the DCGM exporter). The
table is read back with markdown-it-py, as GitHub reads it (CommonMark plus GFM tables).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from renderer.layers import readme
from renderer.layers.addon_notes import AddonNote
from renderer.model.operator_reasons import grouped
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import ADDON_TITLES, REPO, copy_inputs, edit_once
from tests.test_inert_everywhere import HOSTILE, assert_inert_markdown

HEADING = "Add-ons and operators"
COLUMNS = ["add-on", "version", "installed as", "what it does", "why it is here"]

TITLES = ADDON_TITLES
"""What each project calls itself (its repository's README title), by add-on key."""

KIND_ADDON = {"TrainJob": "trainer", "LeaderWorkerSet": "lws", "RayJob": "kuberay"}
"""The add-on whose CRDs define each kind a namespace of the example lists under `kinds`:
TrainJob is Kubeflow Trainer's (trainer.kubeflow.org), LeaderWorkerSet the LWS project's."""

PLATFORM_OWN = {
    "gpuOperator",
    "dcgmExporter",
    "kueue",
    "argoWorkflows",
    "prometheusStack",
    "externalSecrets",
}


def _spec(cluster: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO / "clusters" / f"{cluster}.yaml").read_text())[
        "spec"
    ]
    return spec


def _yaml(folder: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((REPO / folder).glob("*.yaml"))]


def _cell_text(inline: Any) -> str:
    """A cell as a reader sees it: text and code spans, escapes undone."""
    return "".join(
        child.content for child in inline.children or [] if child.type in ("text", "code_inline")
    )


def _table(text: str, heading: str = HEADING) -> list[dict[str, str]]:
    """The rows of the first table after `## heading`, by column header."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    start = next(
        i
        for i, t in enumerate(tokens)
        if t.type == "inline" and t.content == heading and tokens[i - 1].tag == "h2"
    )
    rows: list[list[str]] = []
    for token in tokens[start:]:
        if token.type == "table_close":
            break
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            rows[-1].append(_cell_text(token))
    header, *body = rows
    assert header == COLUMNS
    return [dict(zip(header, row, strict=True)) for row in body]


def _rows(cluster: str, root: Path = REPO, *, repository: bool = True) -> dict[str, dict[str, str]]:
    """The table of the cluster's README as `cluster_readme` writes it, by add-on key (without
    `repository`: as if no gpuplane.yaml said where Argo CD clones from)."""
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.name == "ERROR"], loaded.diagnostics
    platform = loaded.platform
    if not repository:
        platform = replace(platform, repository=None)
    text = readme.cluster_readme(ClusterView.of(platform, platform.clusters[cluster]))
    by_key = {}
    for row in _table(text):
        key = row["add-on"].rsplit("(", 1)[1].rstrip(")")
        by_key[key] = row
    return by_key


def _gang_namespaces(cluster: str) -> list[str]:
    """Training and batch namespaces on the cluster of teams with GPU quota on its pools: the
    namespaces that get the JobSet and RayJob templates (docs/workload-templates.md)."""
    pools = {p["metadata"]["name"] for p in _yaml("pools") if p["spec"]["cluster"] == cluster}
    names = []
    for team in _yaml("teams"):
        if not any(q["pool"] in pools for q in team["spec"].get("gpus", [])):
            continue
        for ns in team["spec"]["namespaces"]:
            if ns["cluster"] == cluster and ns["purpose"] in ("training", "batch"):
                names.append(ns["name"])
    return names


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_every_declared_addon_has_a_row_with_its_version(cluster: str) -> None:
    declared = _spec(cluster)["addons"]
    rows = _rows(cluster)
    assert set(rows) == set(declared)
    for key, settings in declared.items():
        row = rows[key]
        assert row["add-on"] == f"{TITLES[key]} ({key})"
        assert row["version"] == settings.get("version", "unpinned")
        assert row["what it does"], key
    # the GPU Operator first and the DCGM exporter it deploys beside it
    assert list(rows)[:2] == ["gpuOperator", "dcgmExporter"]


@pytest.mark.parametrize("cluster", ["prod-east", "staging-west"])
def test_the_readme_names_the_application_that_installs_each(cluster: str) -> None:
    """Each row names an Application the gitops layer rendered, with the chart, repository and
    version that Application installs; the DCGM exporter is the GPU Operator's."""
    applications = {}
    for path in sorted((REPO / "rendered" / cluster / "gitops" / "argocd").glob("application-*")):
        body = yaml.safe_load(path.read_text())
        applications[body["metadata"]["name"]] = body["spec"]
    rows = _rows(cluster)
    declared = _spec(cluster)["addons"]
    for key, row in rows.items():
        installed = row["installed as"]
        assert installed.count("Argo CD Application ") == 1, (key, installed)
        name = installed.split("Argo CD Application ")[1].split(":")[0].rstrip(")")
        assert name in applications, (key, name)
        source = applications[name]["sources"][0]
        if key == "dcgmExporter":
            assert installed.startswith("deployed by the GPU Operator")
            assert source["chart"] == "gpu-operator"
            values = yaml.safe_load(
                (REPO / "rendered" / cluster / "values" / "gpu-operator.yaml").read_text()
            )
            assert values["dcgmExporter"]["enabled"] is True
            continue
        assert f"chart {source['chart']} from {source['repoURL']}" in installed, key
        version = declared[key].get("version")
        assert source["targetRevision"] in (version, version.removeprefix("v")), key
    # and every add-on Application the gitops layer renders is in the table
    named = {
        r["installed as"].split("Argo CD Application ")[1].split(":")[0] for r in rows.values()
    }
    layers = {f"{cluster}-{layer}" for layer in ("root", "security", "tenancy", "gpu")}
    layers |= {
        f"{cluster}-{layer}"
        for layer in ("queueing", "observability", "workflows", "training", "serving")
    }
    assert set(applications) - layers <= {n.rstrip(")") for n in named}


def test_why_each_operator_is_there_is_what_needs_it() -> None:
    """prod-east: the kinds its namespaces list, the templates of its training namespaces, its
    pools' RDMA resource, Kubeflow Trainer on JobSet and OpenCost on the pricing file."""
    rows = _rows("prod-east")
    listed: dict[str, list[str]] = {}
    for team in _yaml("teams"):
        for ns in team["spec"]["namespaces"]:
            if ns["cluster"] == "prod-east":
                for kind in ns.get("kinds", []):
                    listed.setdefault(KIND_ADDON[kind], []).append(f"{kind} in namespace")
                    assert ns["name"] in rows[KIND_ADDON[kind]]["why it is here"]
    assert listed  # recsys-train lists TrainJob, recsys-serve LeaderWorkerSet
    assert rows["trainer"]["why it is here"] == "TrainJob in namespace recsys-train"
    assert rows["lws"]["why it is here"] == "LeaderWorkerSet in namespace recsys-serve"

    gang = _gang_namespaces("prod-east")
    assert len(gang) == 4
    jobset = rows["jobset"]["why it is here"]
    assert jobset.startswith(f"the JobSet template of namespaces {', '.join(gang)}")
    assert "Kubeflow Trainer" in jobset  # trainer runs its TrainJobs as JobSets
    assert rows["kuberay"]["why it is here"] == (
        f"the RayJob template of namespaces {', '.join(gang)}"
    )

    rdma = sorted(
        (p["metadata"]["name"], p["spec"]["fabric"]["rdma"]["resource"])
        for p in _yaml("pools")
        if p["spec"]["cluster"] == "prod-east" and "rdma" in p["spec"].get("fabric", {})
    )
    assert {resource for _, resource in rdma} == {"rdma/rdma_shared_device_a"}
    assert rows["networkOperator"]["why it is here"] == (
        f"pools {', '.join(name for name, _ in rdma)}: RDMA resource rdma/rdma_shared_device_a"
    )
    assert "pricing file" in rows["opencost"]["why it is here"]
    for key in PLATFORM_OWN:
        assert rows[key]["why it is here"].startswith("the platform itself"), key
    assert "OpenCost" in rows["prometheusStack"]["why it is here"]


def test_staging_west_needs_its_own_namespaces_only() -> None:
    rows = _rows("staging-west")
    gang = _gang_namespaces("staging-west")
    assert gang and not set(gang) & set(_gang_namespaces("prod-east"))
    assert (
        rows["jobset"]["why it is here"] == f"the JobSet template of namespaces {', '.join(gang)}"
    )
    assert "networkOperator" not in rows  # EKS brings its EFA device plugin


def test_enabled_false_unpinned_and_no_repository(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    edit_once(
        root / "clusters/prod-east.yaml",
        "    lws:\n      version: 0.10.0 ",
        "    lws:\n      enabled: false\n      version: 0.10.0 ",
    )
    edit_once(
        root / "clusters/staging-west.yaml",
        "    kuberay:\n      version: 1.7.0                 # the RayJob templates\n",
        "    kuberay: {}\n",
    )
    lws = _rows("prod-east", root)["lws"]
    assert lws["installed as"] == "already running, not installed by gpuplane (enabled: false)"
    assert lws["version"] == "0.10.0"
    assert lws["why it is here"] == "LeaderWorkerSet in namespace recsys-serve"  # still needed
    kuberay = _rows("staging-west", root)["kuberay"]
    assert kuberay["version"] == "unpinned"
    assert kuberay["installed as"].startswith("Argo CD Application staging-west-kuberay-operator")

    rows = _rows("prod-east", root, repository=False)  # no Application is rendered
    for key, row in rows.items():
        installed = row["installed as"]
        if key == "dcgmExporter":
            assert installed == "deployed by the GPU Operator (its dcgmExporter values)"
        elif key != "lws":
            assert installed.startswith("by hand, no Argo CD Application (no gpuplane.yaml): ")
    assert rows["jobset"]["installed as"] == (
        "by hand, no Argo CD Application (no gpuplane.yaml): chart jobset from "
        "registry.k8s.io/jobset/charts"
    )


def test_the_committed_readmes_are_the_rendered_ones() -> None:
    platform = load_platform(REPO).platform
    for name, cluster in platform.clusters.items():
        text = readme.cluster_readme(ClusterView.of(platform, cluster))
        assert (REPO / "rendered" / name / "README.md").read_text() == text


def test_hostile_text_in_the_table_stays_one_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a note holds (a need's text names input values), each row stays five cells of
    inert text."""
    platform = load_platform(REPO).platform
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    hostile = [
        AddonNote(
            addon=value,
            title=value,
            version=value,
            how="application",
            application=value,
            chart=None,
            purpose=value,
            reasons=(value, value),
            platform=False,
        )
        for value in HOSTILE
    ]
    monkeypatch.setattr(readme, "addon_notes", lambda _view: tuple(hostile))
    text = readme.cluster_readme(view)
    assert_inert_markdown(text, own=("heading_open", "bullet_list_open", "fence"))
    rows = _table(text)
    assert len(rows) == len(HOSTILE)


def test_needs_are_grouped_by_namespace_and_by_pool_in_order() -> None:
    assert grouped(
        [
            "the JobSet template of namespace a",
            "Kubeflow Trainer, which runs on it",
            "the JobSet template of namespace b",
            "TrainJob in namespace a",
            "the JobSet template of namespace a",
            "pool p's RDMA resource rdma/x",
            "pool q's RDMA resource rdma/x",
            "pool r's RDMA resource rdma/y",
            "pool p's devices through DRA",
        ]
    ) == (
        "the JobSet template of namespaces a, b",
        "Kubeflow Trainer, which runs on it",
        "TrainJob in namespace a",
        "pools p, q: RDMA resource rdma/x",
        "pool r's RDMA resource rdma/y",
        "pool p's devices through DRA",
    )
