"""Attacks on names: a team lead takes a namespace that is not theirs, or names an IdP group that
breaks the RBAC it is written into. Each ends in an error on the attacker's own file and line.

The lead may only edit `teams/<own-team>.yaml` or add a new team file. Where a setup step edits
a platform file (a cluster's DNS namespace, its reservedNamespaces), that is the platform team's
configuration the attack then runs against, not part of the attack.
"""

from __future__ import annotations

import pytest

from renderer.findings.diagnostics import Diagnostic
from renderer.pipeline import load_platform
from tests.red_team.harness import Attempt, errors, refused_on

LLM = "teams/llm.yaml"
NOTEBOOKS = "{name: llm-notebooks, cluster: prod-east, purpose: notebooks}"


def line_of(attempt: Attempt, file: str, needle: str) -> int:
    lines = attempt.path(file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def take(attempt: Attempt, name: str) -> int:
    """The one-line attack: llm's notebook namespace renamed; the line it is on."""
    attempt.edit(LLM, NOTEBOOKS, NOTEBOOKS.replace("llm-notebooks", name))
    return line_of(attempt, LLM, f"{{name: {name},")


def on_line(found: Diagnostic, line: int) -> None:
    assert found.at.line == line, str(found)


# --- the platform's namespaces -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("argocd", "Argo CD"),  # cluster credentials, repository secrets, RBAC config
        ("gpu-operator", "the GPU Operator"),  # privileged driver pods: root on every GPU node
        ("kueue-system", "Kueue"),  # its webhooks cut off: nothing admitted anywhere
        ("volcano-system", "Volcano"),  # not installed on prod-east: reserved all the same
        ("monitoring", "kube-prometheus-stack (monitoring)"),
        ("argo", "Argo Workflows"),
        ("gpuplane-acceptance", "the acceptance suites"),  # fake its own acceptance results
        ("gpuplane-acceptance-jobs", "the acceptance suites' Jobs"),
        ("external-secrets", "the External Secrets Operator"),
        ("default", "Kubernetes"),
        ("kube-system", "Kubernetes"),  # also prod-east's DNS namespace
        ("kube-flannel", "Kubernetes"),  # any kube-* name
    ],
)
def test_take_a_platform_namespace(attempt: Attempt, name: str, component: str) -> None:
    line = take(attempt, name)
    found = refused_on(attempt.findings(), LLM, "reserved-namespace")
    assert found.message == f"namespace '{name}' is reserved for {component} on cluster 'prod-east'"
    on_line(found, line)


def test_take_argocd_from_a_new_team_file(attempt: Attempt) -> None:
    text = attempt.path("teams/speech.yaml").read_text().replace("name: speech\n", "name: ops\n")
    text = text.replace("name: speech-", "name: ops-").replace(
        "name: ops-notebooks,", "name: argocd,"
    )
    attempt.write("teams/ops.yaml", text)
    found = refused_on(attempt.findings(), "teams/ops.yaml", "reserved-namespace")
    assert "'argocd' is reserved for Argo CD" in found.message
    on_line(found, line_of(attempt, "teams/ops.yaml", "{name: argocd,"))


def test_take_the_dns_namespace_the_cluster_names(attempt: Attempt) -> None:
    attempt.edit(
        "clusters/prod-east.yaml", "    namespace: kube-system\n", "    namespace: coredns\n"
    )
    line = take(attempt, "coredns")
    found = refused_on(attempt.findings(), LLM, "reserved-namespace")
    assert (
        found.message
        == "namespace 'coredns' is reserved for the cluster DNS on cluster 'prod-east'"
    )
    on_line(found, line)
    assert found.notes[0][1].file == "clusters/prod-east.yaml"


def test_take_a_reserved_namespaces_entry(attempt: Attempt) -> None:
    attempt.edit(
        "clusters/prod-east.yaml",
        "  dns:\n",
        "  reservedNamespaces: [license-server, llm-vault]\n  dns:\n",
    )
    line = take(attempt, "llm-vault")
    found = refused_on(attempt.findings(), LLM, "reserved-namespace")
    assert "'llm-vault' is reserved for the platform (spec.reservedNamespaces)" in found.message
    on_line(found, line)


def test_take_argo_cds_namespace_when_gpuplane_yaml_renames_it(attempt: Attempt) -> None:
    attempt.edit("gpuplane.yaml", "argocdNamespace: argocd", "argocdNamespace: gitops")
    line = take(attempt, "gitops")
    found = refused_on(attempt.findings(), LLM, "reserved-namespace")
    assert "'gitops' is reserved for Argo CD" in found.message
    on_line(found, line)
    assert found.notes[0][1].file == "gpuplane.yaml"


# --- other teams' namespaces, other clusters ---------------------------------------------------


def test_take_another_teams_namespace_by_editing_the_own_file(attempt: Attempt) -> None:
    """What CI sees: the change information names the edited line (llm.yaml sorts before
    vision.yaml, so without it the finding would sit on the later file, vision's)."""
    line = take(attempt, "vision-notebooks")
    diagnostics = load_platform(attempt.root, changed={LLM: frozenset({line})}).diagnostics
    (found,) = errors(diagnostics, "namespace-conflict")
    assert found.at.file == LLM
    on_line(found, line)
    assert "already declared by team 'vision'" in found.message


@pytest.mark.parametrize("newcomer", ["aaa", "zzz"])
def test_take_another_teams_namespace_from_a_new_file(attempt: Attempt, newcomer: str) -> None:
    text = attempt.path("teams/speech.yaml").read_text()
    text = text.replace("name: speech\n", f"name: {newcomer}\n")
    text = text.replace("name: speech-", f"name: {newcomer}-")
    text = text.replace(f"name: {newcomer}-train,", "name: llm-train,")
    file = f"teams/{newcomer}.yaml"
    attempt.write(file, text)
    diagnostics = load_platform(attempt.root, changed={file: None}).diagnostics
    (found,) = errors(diagnostics, "namespace-conflict")
    assert found.at.file == file
    on_line(found, line_of(attempt, file, "{name: llm-train,"))
    if newcomer == "zzz":  # and later in file order, told without change information too
        (unknown,) = errors(attempt.findings(), "namespace-conflict")
        assert unknown.at.file == file


def test_put_a_namespace_on_a_cluster_the_teams_queue_is_not_on(attempt: Attempt) -> None:
    attempt.edit(LLM, NOTEBOOKS, NOTEBOOKS.replace("prod-east", "staging-west"))
    found = refused_on(attempt.findings(), LLM, "namespace-outside-queue-cluster")
    on_line(found, line_of(attempt, LLM, "cluster: staging-west"))


# --- IdP group names ---------------------------------------------------------------------------

OWNERS = "owners: [llm-leads]"


@pytest.mark.parametrize(
    ("written", "rule", "says"),
    [
        ('"llm,admins"', "rbac-group-characters", "comma"),
        ('"llm\\nleads"', "schema-invalid-value", "on one line"),
        ('"llm\\u202esnimda"', "rbac-group-characters", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ('"llm\\u200bleads"', "rbac-group-characters", "U+200B ZERO WIDTH SPACE"),
        ('"llm\\u00a0leads"', "rbac-group-characters", "U+00A0 NO-BREAK SPACE"),
        ('"system:masters"', "rbac-reserved-group", "system group 'system:masters'"),
        ('" system:masters"', "schema-invalid-value", "without leading or trailing spaces"),
    ],
)
def test_name_a_group_that_breaks_rbac(
    attempt: Attempt, written: str, rule: str, says: str
) -> None:
    attempt.edit(LLM, OWNERS, f"owners: [llm-leads, {written}]")
    found = refused_on(attempt.findings(), LLM, rule)
    assert says in found.message
    on_line(found, line_of(attempt, LLM, "owners: ["))
    assert "\u202e" not in found.message and "\u200b" not in found.message


def test_name_a_group_the_clusters_prefix_turns_into_a_system_group(attempt: Attempt) -> None:
    attempt.edit("clusters/prod-east.yaml", 'groupPrefix: "oidc:"', 'groupPrefix: "sys"')
    attempt.edit(LLM, OWNERS, 'owners: [llm-leads, "tem:masters"]')
    found = refused_on(attempt.findings(), LLM, "rbac-reserved-group")
    assert "'system:masters'" in found.message


# --- found by a review: names no list knows, and a quote that crashed render ----------------


@pytest.mark.parametrize(
    "name", ["ingress-nginx", "cert-manager", "vault", "gpuplane-system", "team-shared"]
)
def test_take_an_infrastructure_namespace_gpuplane_does_not_install(
    attempt: Attempt, name: str
) -> None:
    """An ingress controller's or a certificate manager's namespace: relabelled, the team's
    groups bound there, its traffic cut by default-deny. Refused by a list of common
    infrastructure namespaces or, for any other name, by the team-name prefix."""
    attempt.edit(
        "teams/vision.yaml",
        "name: vision-notebooks,",
        f"name: {name},",
    )
    found = [
        d
        for d in errors(attempt.findings())
        if d.rule in ("reserved-namespace", "namespace-team-prefix")
    ]
    assert found and all(d.at.file == "teams/vision.yaml" for d in found), found


def test_a_group_with_a_double_quote_is_a_finding_not_a_crash(attempt: Attempt) -> None:
    attempt.edit("teams/vision.yaml", "owners: [vision-leads]", "owners: ['vision\"leads']")
    found = refused_on(attempt.findings(), "teams/vision.yaml", "rbac-group-characters")
    assert "double quote" in found.message
