"""Policy on what a team may claim in a cluster: namespaces, RBAC groups and Pod Security.

These rules guard the boundary between teams and the cluster's own components.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import Platform
from renderer.policy.rule import error, rule

RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


@rule("reserved-namespace")
def namespaces_not_reserved(p: Platform) -> Iterator[Diagnostic]:
    """Teams may not claim Kubernetes' own namespaces (`default`, `kube-*`).

    Quotas, network policies and RoleBindings rendered into them would break the cluster's system
    components or hand a team control over them.

    To satisfy it: rename the namespace entry in the team's `spec.namespaces` to a name of the
    team's own, e.g. `<team>-<purpose>` (`vision-training`). `default`, `kube-system`,
    `kube-public`, `kube-node-lease` and every other `kube-*` name are refused.
    """
    for team in p.teams.values():
        for ns in team.namespaces:
            if ns.name in RESERVED_NAMESPACES or ns.name.startswith("kube-"):
                yield error(
                    "reserved-namespace",
                    f"namespace '{ns.name}' is reserved for Kubernetes itself",
                    ns.origin.at("name"),
                    f"use a team-owned name such as '{team.name}-{ns.purpose}'",
                )


@rule("rbac-reserved-group")
def groups_not_system(p: Platform) -> Iterator[Diagnostic]:
    """IdP groups may not be Kubernetes' own `system:` groups.

    Binding `system:authenticated` or `system:masters` would hand a namespace to every user of the
    cluster, or name a group that is already cluster-admin. Teams can only widen access to their
    own namespaces through their own IdP groups.

    To satisfy it: replace the group in the team's `spec.owners`, `spec.members` or
    `spec.viewers` (or the cluster's `spec.platformOwners`) with a group of your identity
    provider, e.g. `ml-platform-support`, written without the cluster's `identity.groupPrefix`:
    gpuplane adds it. No group that starts with `system:` is accepted.
    """
    for team in p.teams.values():
        for field_name, groups in (
            ("owners", team.owners),
            ("members", team.members),
            ("viewers", team.viewers),
        ):
            for index, group in enumerate(groups):
                if group.startswith("system:"):
                    yield error(
                        "rbac-reserved-group",
                        f"team '{team.name}' binds the Kubernetes system group '{group}'",
                        team.origin.at("spec", field_name, index),
                        "name the team's own IdP group",
                    )
    for cluster in p.clusters.values():
        for index, group in enumerate(cluster.platform_owners):
            if group.startswith("system:"):
                yield error(
                    "rbac-reserved-group",
                    f"platform owner '{group}' is a Kubernetes system group",
                    cluster.origin.at("spec", "platformOwners", index),
                    "name the platform team's IdP group",
                )


@rule("pod-security-loosened")
def pod_security_only_stricter(p: Platform) -> Iterator[Diagnostic]:
    """A namespace's `podSecurity` may only make its purpose's level stricter.

    Inference and batch namespaces enforce `restricted`; training and notebook namespaces enforce
    `baseline` (and audit and warn at `restricted`). Lowering inference to baseline would let
    serving pods run with extra privileges next to production traffic.

    To satisfy it: remove `podSecurity` from the namespace entry in the team file, or set it to
    its purpose's level or a stricter one: `restricted` for inference and batch namespaces,
    `baseline` or `restricted` for training and notebooks. Pods that need baseline privileges
    belong in a training or notebook namespace.
    """
    rank = {"baseline": 0, "restricted": 1}
    for team in p.teams.values():
        for ns in team.namespaces:
            default = DEFAULT_POD_SECURITY[ns.purpose]
            if ns.pod_security is not None and rank[ns.pod_security] < rank[default]:
                yield error(
                    "pod-security-loosened",
                    f"namespace '{ns.name}' ({ns.purpose}) lowers Pod Security from {default} to {ns.pod_security}",
                    ns.origin.at("podSecurity"),
                    f"remove podSecurity, or set it to {default}",
                )
