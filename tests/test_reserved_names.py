"""Names a team may never take: the platform's namespaces, other teams' namespaces, namespaces
off its queue's cluster, IdP group names that break RBAC, and rendered objects that would take
one another's identity.

The reserved names come from where the components really install: Kueue's manifests and chart
install into `kueue-system`, NVIDIA's GPU Operator docs into `gpu-operator`, Volcano's into
`volcano-system`, Argo Workflows' quick start into `argo`, Argo CD's into `argocd`, External
Secrets' into `external-secrets`; and, checked on the output below, every namespace a rendered
object lives in or an Application deploys to.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import pytest

from renderer.findings.diagnostics import Location
from renderer.findings.rules import explain
from renderer.model.reserved import COMPONENT_NAMESPACES, namespace_owner, platform_namespaces
from renderer.model.view import ClusterView
from renderer.output.identity import clashes_across, identity, identity_clashes
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform, render_cluster, render_platform
from tests.conftest import REPO
from tests.red_team.harness import Attempt, errors, refused_on

UPSTREAM_NAMESPACES = {
    "argocd": "Argo CD",
    "gpu-operator": "the GPU Operator",
    "kueue-system": "Kueue",
    "volcano-system": "Volcano",
    "argo": "Argo Workflows",
    "external-secrets": "the External Secrets Operator",
    "monitoring": "kube-prometheus-stack (monitoring)",
    "default": "Kubernetes",
    "kube-system": "Kubernetes",
    "kube-public": "Kubernetes",
    "kube-node-lease": "Kubernetes",
}


def line_of(root: Path, file: str, needle: str) -> int:
    lines = (root / file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


# --- platform_namespaces ------------------------------------------------------------------------


def test_every_upstream_component_namespace_is_reserved_on_every_cluster() -> None:
    platform = load_platform(REPO).platform
    for cluster in platform.clusters.values():
        reserved = platform_namespaces(platform, cluster)
        for name, component in UPSTREAM_NAMESPACES.items():
            assert reserved.get(name) == component, (cluster.name, name)
        assert "gpuplane-acceptance" in reserved
        assert namespace_owner(platform, cluster, "kube-anything") == "Kubernetes"
        assert namespace_owner(platform, cluster, "llm-train") is None
        assert not set(reserved) & {ns.name for t in platform.teams.values() for ns in t.namespaces}


def test_every_namespace_the_platform_renders_into_is_reserved(validator: OutputValidator) -> None:
    """Whatever a layer renders outside the team namespaces, into a namespace or as an Argo CD
    destination, is a name no team can take: a new component namespace that is not reserved
    fails here."""
    rendered = render_platform(REPO, validator)
    assert not errors(rendered.diagnostics)
    platform = rendered.platform
    for name, manifests in rendered.manifests.items():
        cluster = platform.clusters[name]
        teams = {ns.name for t in platform.teams.values() for ns in t.namespaces}
        used: set[str] = set()
        for m in manifests:
            if m.namespace is not None:
                used.add(m.namespace)
            destination = m.body.get("spec", {}).get("destination", {})
            if m.kind == "Application" and destination.get("namespace"):
                used.add(destination["namespace"])
        platform_used = used - teams
        assert platform_used, name
        assert {"argocd", "gpu-operator", "gpuplane-acceptance"} <= platform_used
        unreserved = {ns for ns in platform_used if namespace_owner(platform, cluster, ns) is None}
        assert not unreserved, (name, unreserved)


def test_reserved_namespaces_field_dns_and_argocd_namespace_extend_the_list(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "clusters/prod-east.yaml",
        "  dns:\n    namespace: kube-system\n",
        "  reservedNamespaces: [license-server, llm-vault]\n  dns:\n    namespace: coredns\n",
    )
    attempt.edit("gpuplane.yaml", "argocdNamespace: argocd", "argocdNamespace: gitops")
    platform = load_platform(attempt.root).platform
    prod, staging = platform.clusters["prod-east"], platform.clusters["staging-west"]
    assert prod.reserved_namespaces == ("license-server", "llm-vault")
    east = platform_namespaces(platform, prod)
    assert east["license-server"] == east["llm-vault"] == "the platform (spec.reservedNamespaces)"
    assert east["cert-manager"] == "cluster infrastructure (cert-manager)"  # on every cluster
    assert east["coredns"] == "the cluster DNS"
    assert east["gitops"] == east["argocd"] == "Argo CD"
    west = platform_namespaces(platform, staging)
    assert "llm-vault" not in west and "coredns" not in west  # the cluster's own, not every one's
    assert west["gitops"] == "Argo CD"


def test_reserved_namespaces_must_be_names(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "clusters/prod-east.yaml",
        "  dns:\n",
        "  reservedNamespaces: [Vault_NS]\n  dns:\n",
    )
    (found,) = [d for d in errors(attempt.findings()) if d.at.file == "clusters/prod-east.yaml"]
    assert found.rule.startswith("schema-")
    assert "Vault_NS" in found.message
    assert found.at.line == line_of(attempt.root, "clusters/prod-east.yaml", "reservedNamespaces")


# --- reserved-namespace -------------------------------------------------------------------------


def test_a_reserved_name_is_refused_on_the_team_line_with_the_reservation_noted(
    tmp_path: Path,
) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "clusters/prod-east.yaml", "  dns:\n", "  reservedNamespaces: [llm-vault]\n  dns:\n"
    )
    attempt.edit("teams/llm.yaml", "{name: llm-notebooks,", "{name: llm-vault,")
    found = refused_on(attempt.findings(), "teams/llm.yaml", "reserved-namespace")
    assert found.message == (
        "namespace 'llm-vault' is reserved for the platform (spec.reservedNamespaces) on cluster "
        "'prod-east'"
    )
    line = line_of(attempt.root, "teams/llm.yaml", "{name: llm-vault,")
    text = (attempt.root / "teams/llm.yaml").read_text().splitlines()[line - 1]
    assert (found.at.line, found.at.col) == (line, text.index("llm-vault") + 1)
    ((note, where),) = found.notes
    assert note == "reserved here"
    assert where.file == "clusters/prod-east.yaml"
    assert where.line == line_of(attempt.root, "clusters/prod-east.yaml", "reservedNamespaces")
    assert found.hint == "use a team-owned name such as 'llm-notebooks'"


def test_a_name_reserved_on_one_cluster_is_free_on_another(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "clusters/prod-east.yaml", "  dns:\n", "  reservedNamespaces: [search-vault]\n  dns:\n"
    )
    attempt.edit("teams/search.yaml", "{name: search-serve,", "{name: search-vault,")
    assert not errors(attempt.findings(), "reserved-namespace")


def test_explain_names_every_reserved_component_namespace() -> None:
    doc = explain("reserved-namespace")
    assert doc is not None
    text = " ".join(f"{doc.summary} {doc.why} {doc.fix}".split())
    names = (*UPSTREAM_NAMESPACES, *COMPONENT_NAMESPACES, "kube-*", "spec.dns.namespace")
    for name in (*names, "spec.argocdNamespace", "spec.reservedNamespaces"):
        assert f"`{name}`" in text, name


# --- namespace-conflict: the finding lands on the file that takes the name -------------------


def test_an_edited_file_taking_another_teams_namespace_is_told(tmp_path: Path) -> None:
    """llm.yaml sorts before vision.yaml: without change information the later claimant in file
    order, vision, would be told; the change is llm's, so llm's line is."""
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit("teams/llm.yaml", "{name: llm-notebooks,", "{name: vision-notebooks,")
    line = line_of(attempt.root, "teams/llm.yaml", "{name: vision-notebooks,")
    unknown = errors(attempt.findings(), "namespace-conflict")
    assert [d.at.file for d in unknown] == ["teams/vision.yaml"]
    known = load_platform(attempt.root, changed={"teams/llm.yaml": frozenset({line})})
    (found,) = errors(known.diagnostics, "namespace-conflict")
    assert (found.at.file, found.at.line) == ("teams/llm.yaml", line)
    assert "already declared by team 'vision'" in found.message
    assert found.notes[0][1].file == "teams/vision.yaml"


def test_a_new_file_taking_another_teams_namespace_is_told(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    text = (attempt.root / "teams/speech.yaml").read_text()
    text = text.replace("name: speech\n", "name: aaa\n").replace("name: speech-", "name: aaa-")
    attempt.write("teams/aaa.yaml", text.replace("name: aaa-train,", "name: llm-train,"))
    known = load_platform(attempt.root, changed={"teams/aaa.yaml": None})
    found = refused_on(known.diagnostics, "teams/aaa.yaml", "namespace-conflict")
    assert "namespace 'llm-train' on cluster 'prod-east' is already declared by team 'llm'" in (
        found.message
    )
    assert [d.at.file for d in errors(known.diagnostics, "namespace-conflict")] == [
        "teams/aaa.yaml"
    ]


# --- namespace-outside-queue-cluster ------------------------------------------------------------


def test_a_namespace_off_the_queues_cluster_is_refused(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "teams/llm.yaml",
        "{name: llm-notebooks, cluster: prod-east,",
        "{name: llm-notebooks, cluster: staging-west,",
    )
    found = refused_on(attempt.findings(), "teams/llm.yaml", "namespace-outside-queue-cluster")
    assert found.message == (
        "namespace 'llm-notebooks' is on cluster 'staging-west', but team 'llm' queues on "
        "'prod', which is on cluster 'prod-east'"
    )
    assert found.at.line == line_of(attempt.root, "teams/llm.yaml", "cluster: staging-west")
    assert found.hint == "set cluster: prod-east"
    assert found.notes[0][1].file == "queues/prod.yaml"


def test_every_example_namespace_is_on_its_queues_cluster() -> None:
    platform = load_platform(REPO).platform
    for team in platform.teams.values():
        queue = platform.queues[team.queue]
        assert {ns.cluster for ns in team.namespaces} == {queue.cluster}, team.name


# --- IdP group names ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("group", "problem"),
    [
        ("llm,admins", "holds a comma"),
        ("llm\u202eslaed", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("llm\u200bleads", "U+200B ZERO WIDTH SPACE"),
        ("llm\tleads", "U+0009"),
        ("llm\u00a0leads", "U+00A0 NO-BREAK SPACE"),
        ("llm\u2028leads", "U+2028 LINE SEPARATOR"),
        ("\u200bllm-leads", "U+200B"),
    ],
)
@pytest.mark.parametrize("field", ["owners", "members", "viewers"])
def test_a_group_name_that_breaks_rbac_is_refused(
    tmp_path: Path, group: str, problem: str, field: str
) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    data = attempt.team("llm")
    data["spec"][field].append(group)
    attempt.save_team("llm", data)
    found = refused_on(attempt.findings(), "teams/llm.yaml", "rbac-group-characters")
    assert problem in found.message
    assert group not in found.message or group.isprintable()  # shown escaped
    index = len(data["spec"][field]) - 1
    platform = load_platform(attempt.root).platform
    assert found.at == platform.teams["llm"].origin.at("spec", field, index)


def test_a_platform_owner_with_a_comma_is_refused(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "clusters/prod-east.yaml", "platformOwners: [platform-admins]", 'platformOwners: ["a,b"]'
    )
    found = refused_on(attempt.findings(), "clusters/prod-east.yaml", "rbac-group-characters")
    assert found.message == (
        "platform owner 'a,b' holds a comma, which splits Argo CD's RBAC policy lines"
    )


def test_plain_spaces_and_punctuation_are_fine(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit(
        "teams/llm.yaml",
        "viewers: [ml-platform-support, finops]",
        'viewers: [ml-platform-support, finops, "ML Platform Support", "cn=llm;ou=groups", '
        '"llm:readers"]',
    )
    assert not errors(attempt.findings())


def test_system_group_after_the_clusters_prefix_is_refused(tmp_path: Path) -> None:
    attempt = Attempt.on_example(tmp_path / "repo")
    attempt.edit("clusters/prod-east.yaml", 'groupPrefix: "oidc:"', 'groupPrefix: "sys"')
    attempt.edit(
        "teams/llm.yaml",
        "members: [llm-research, llm-serving]",
        'members: [llm-research, llm-serving, "tem:masters"]',
    )
    found = refused_on(attempt.findings(), "teams/llm.yaml", "rbac-reserved-group")
    assert found.message == (
        "team 'llm' binds the Kubernetes system group 'tem:masters' once cluster 'prod-east' "
        "prefixes it ('system:masters')"
    )
    # the same group on a cluster with another prefix is an ordinary IdP group
    attempt.edit("teams/search.yaml", "members: [", 'members: ["tem:masters", ')
    assert [d.at.file for d in errors(attempt.findings(), "rbac-reserved-group")] == [
        "teams/llm.yaml"
    ]


# --- identity clashes on the rendered output ----------------------------------------------------


def _object(
    api_version: str, kind: str, name: str, namespace: str | None = None
) -> dict[str, object]:
    meta: dict[str, object] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def test_identity_is_group_kind_namespace_name() -> None:
    assert identity(_object("v1", "ConfigMap", "a", "ns")).group == ""
    assert identity(_object("apps/v1", "Deployment", "a", "ns")).group == "apps"
    assert identity(_object("kueue.x-k8s.io/v1beta2", "LocalQueue", "a", "ns")).namespace == "ns"
    # a cluster-scoped kind's namespace is ignored by the API server: not part of its identity
    assert identity(_object("v1", "Namespace", "a", "x")) == identity(
        _object("v1", "Namespace", "a")
    )
    assert identity(_object("scheduling.k8s.io/v1", "PriorityClass", "p", "x")).namespace is None
    # same kind and name, another group: another object
    assert identity(_object("argoproj.io/v1alpha1", "Workflow", "w", "n")) != identity(
        _object("example.com/v1", "Workflow", "w", "n")
    )


def test_same_identity_in_two_layers_is_a_clash_on_the_later_one() -> None:
    first = Manifest("tenancy", _object("v1", "Namespace", "x"), Location("teams/a.yaml", 3, 5))
    later = Manifest(
        "workflows", _object("v1", "Namespace", "x"), Location("clusters/c.yaml", 1, 1)
    )
    other = Manifest("gpu", _object("v1", "ConfigMap", "x", "x"), Location("pools/p.yaml", 1, 1))
    same_path = Manifest("tenancy", _object("v1", "Namespace", "x"), Location("teams/b.yaml", 1, 1))
    (found,) = identity_clashes([first, other, later, same_path], "cluster 'c'")
    assert found.rule == "output-identity-clash"
    assert found.at == later.source
    assert found.notes[0][1] == first.source
    assert (
        "Namespace 'x' (core) on cluster 'c' is already rendered from teams/a.yaml" in found.message
    )


def test_a_team_namespace_named_like_the_suites_would_clash_without_the_policy() -> None:
    """The policy refuses it (reserved-namespace); were the rule gone, the rendered output still
    would not let the team's Namespace and the suites' one pass as two objects."""
    loaded = load_platform(REPO)
    team = loaded.platform.teams["llm"]
    namespaces = tuple(
        dataclasses.replace(ns, name="gpuplane-acceptance") if ns.purpose == "notebooks" else ns
        for ns in team.namespaces
    )
    teams = dict(loaded.platform.teams)
    teams["llm"] = dataclasses.replace(team, namespaces=namespaces)
    platform = dataclasses.replace(loaded.platform, teams=MappingProxyType(teams))
    cluster = platform.clusters["prod-east"]
    outputs = render_cluster(ClusterView.of(platform, cluster))
    manifests = [o for o in outputs if isinstance(o, Manifest)]
    found = identity_clashes(manifests, "cluster 'prod-east'")
    namespaces_clash = [d for d in found if "Namespace 'gpuplane-acceptance' (core)" in d.message]
    assert namespaces_clash, [d.message for d in found]
    assert namespaces_clash[0].notes[0][1].file == "teams/llm.yaml"
    # and the example as it is renders no clash at all
    clean = [
        o
        for o in render_cluster(ClusterView.of(loaded.platform, cluster))
        if isinstance(o, Manifest)
    ]
    assert identity_clashes(clean, "cluster 'prod-east'") == []


def _two_clusters_one_project_name(root: Path) -> Attempt:
    """staging-west renamed `east`, and its team search renamed `llm-prod`: team `llm` on
    `prod-east` and team `llm-prod` on `east` both get AppProject `team-llm-prod-east`."""
    attempt = Attempt.on_example(root)
    for folder in ("clusters", "pools", "queues", "teams"):
        for path in (attempt.root / folder).glob("*.yaml"):
            path.write_text(path.read_text().replace("staging-west", "east"))
    (attempt.root / "clusters/staging-west.yaml").rename(attempt.root / "clusters/east.yaml")
    search = attempt.root / "teams/search.yaml"
    text = search.read_text().replace("name: search\n", "name: llm-prod\n")
    search.write_text(text.replace("name: search-", "name: llm-prod-"))
    search.rename(attempt.root / "teams/llm-prod.yaml")
    return attempt


def test_argo_cd_objects_of_two_clusters_clash_in_argo_cds_namespace(tmp_path: Path) -> None:
    attempt = _two_clusters_one_project_name(tmp_path / "repo")
    loaded = load_platform(attempt.root)
    assert not errors(loaded.diagnostics)
    rendered = {
        name: tuple(
            o
            for o in render_cluster(ClusterView.of(loaded.platform, cluster))
            if isinstance(o, Manifest)
        )
        for name, cluster in loaded.platform.clusters.items()
    }
    for name, manifests in rendered.items():  # each cluster alone is fine
        assert identity_clashes(manifests, name) == []
    (found,) = clashes_across(rendered, "gitops", "Argo CD's cluster")
    assert "AppProject 'argocd/team-llm-prod-east' (argoproj.io)" in found.message
    assert found.at.file == "teams/llm.yaml"  # prod-east sorts after east: applied later
    assert found.notes[0][1].file == "teams/llm-prod.yaml"


def test_render_reports_the_cross_cluster_clash(tmp_path: Path, validator: OutputValidator) -> None:
    attempt = _two_clusters_one_project_name(tmp_path / "repo")
    rendered = render_platform(attempt.root, validator)
    found = errors(rendered.diagnostics, "output-identity-clash")
    assert [d.at.file for d in found] == ["teams/llm.yaml"], [str(d) for d in rendered.diagnostics]


def test_the_rule_is_documented() -> None:
    doc = explain("output-identity-clash")
    assert doc is not None and doc.stage == "output"
    assert "`spec.namespaces[].name`" in doc.fix
