"""Attacks on the audit trail: a team lead moves the team's work to where nothing records it.

Control (8) was rendered only for clusters whose API server the platform team runs; on the
example's EKS cluster, staging-west, nothing was. A lead who wants exec sessions, secret reads and
job submissions to leave no trace puts the team's namespaces there, by editing only the team's
own file or adding one. Each attack ends with every cluster that hosts the attacker's namespaces
keeping an audit log: the audit Policy where the platform team runs the API server, the
provider's audit log setting turned on where the provider runs it (the checks of
tests/test_nine_controls.py, `assert_control_8`).
"""

from __future__ import annotations

from tests.red_team.harness import Attempt, errors
from tests.test_nine_controls import assert_control_8

SEARCH = "teams/search.yaml"
LLM_EVAL = "teams/llm-eval.yaml"


def hosts_of(attempt: Attempt, team: str) -> set[str]:
    """Render the attempt and check control 8 on every cluster that hosts a namespace of
    `team`; the clusters, so a test can say which it expected."""
    rendered = attempt.render()
    assert not errors(rendered.diagnostics), rendered.diagnostics
    clusters = {ns.cluster for ns in rendered.platform.teams[team].namespaces}
    for cluster in sorted(clusters):
        assert_control_8(rendered, cluster)
    return clusters


def test_a_notebook_namespace_on_the_managed_cluster(attempt: Attempt) -> None:
    """Notebooks are where members exec into pods: one on the EKS cluster."""
    attempt.edit(
        SEARCH,
        "    - {name: search-serve, cluster: staging-west, purpose: inference}\n",
        "    - {name: search-serve, cluster: staging-west, purpose: inference}\n"
        "    - {name: search-notebooks, cluster: staging-west, purpose: notebooks}\n",
    )
    assert hosts_of(attempt, "search") == {"staging-west"}


def test_a_new_team_that_lives_only_on_the_managed_cluster(attempt: Attempt) -> None:
    """A new team file on the staging queue, with no GPU quota: its secret reads and jobs all
    on EKS."""
    attempt.write(
        "teams/quiet.yaml",
        """apiVersion: gpuplane.dev/v1alpha1
kind: Team
metadata:
  name: quiet
spec:
  description: Experiments
  owners: [quiet-leads]
  members: [quiet]
  codeowners: ["@example/quiet"]
  costCenter: CC-1990
  contact: quiet@example.com
  queue: staging
  namespaces:
    - {name: quiet-train, cluster: staging-west, purpose: training}
  resources:
    cpu: "8"
    memory: 32Gi
    storage: 100Gi
  images:
    - registry.example.com/quiet/
""",
    )
    assert hosts_of(attempt, "quiet") == {"staging-west"}


def test_every_namespace_of_a_team_moved_to_new_names_on_the_managed_cluster(
    attempt: Attempt,
) -> None:
    """Fresh namespaces (nothing recorded about them yet) replacing the team's old ones."""
    attempt.edit(
        LLM_EVAL,
        "    - {name: llm-eval-train, cluster: staging-west, purpose: training}\n"
        "    - name: llm-eval-serve\n",
        "    - {name: llm-eval-x, cluster: staging-west, purpose: training}\n"
        "    - name: llm-eval-y\n",
    )
    assert hosts_of(attempt, "llm-eval") == {"staging-west"}
