"""Policy on what a team may claim in a cluster: namespaces, RBAC groups and Pod Security.

These rules guard the boundary between teams and the cluster's own components.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, PathKey
from renderer.model.identifiers import escaped
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.platform import Cluster, Platform, Team
from renderer.model.reserved import (
    COMPONENT_NAMESPACES,
    KUBERNETES,
    KUBERNETES_NAMESPACES,
    Reservation,
    looks,
    prefix_owner,
    reservations,
    sentinel_owner,
)
from renderer.policy.rule import error, rule


def _reservation(
    p: Platform, cluster_name: str, name: str, known: dict[str, dict[str, Reservation]]
) -> Reservation | None:
    """Why `name` is reserved on the cluster; on a cluster no file declares (its own finding),
    the names reserved on every cluster still count. `known`: each cluster's reservations,
    made once."""
    cluster = p.clusters.get(cluster_name)
    if cluster is not None:
        if cluster_name not in known:
            known[cluster_name] = reservations(p, cluster)
        found = known[cluster_name].get(name)
    elif name in KUBERNETES_NAMESPACES:
        found = Reservation(KUBERNETES)
    else:
        component = COMPONENT_NAMESPACES.get(name)
        found = Reservation(component) if component else None
    if found is None:
        prefixed = prefix_owner(cluster.provider if cluster else None, name)
        found = Reservation(prefixed) if prefixed else None
    return found


@rule("reserved-namespace", scope="team")
def namespaces_not_reserved(p: Platform) -> Iterator[Diagnostic]:
    """Teams may not claim a namespace the platform's own components use on that cluster.

    A team namespace gets the team's RoleBindings (its owners become `admin`), its quota, its
    labels and default-deny NetworkPolicies. Over `argocd` that hands the team Argo CD's cluster
    credentials and repository secrets; over `gpu-operator` the privileged driver pods (root on
    every GPU node); over `kueue-system` it cuts Kueue's webhooks off, so no job is admitted
    anywhere; over the suites' namespace it lets the team write its own acceptance results.
    Reserved on every cluster: `default`, `kube-system`, `kube-public`, `kube-node-lease` and
    every other `kube-*` name; Argo CD's namespace (`argocd`,
    and gpuplane.yaml's `spec.argocdNamespace`); `gpu-operator`, `kueue-system`,
    `volcano-system`, `argo` (Argo Workflows), `monitoring`, `external-secrets`,
    `envoy-gateway-system` (the platform Gateway),
    `gpuplane-acceptance` and `gpuplane-acceptance-jobs`, whether or not the cluster runs that
    component today. Reserved on one cluster: its `spec.dns.namespace` and every name in its
    `spec.reservedNamespaces`, and the namespaces its managed provider (`spec.provider`) runs
    its own agents in: on EKS `amazon-guardduty`, `amazon-cloudwatch`, `aws-observability`,
    `amazon-network-flow-monitor`, `opentelemetry-operator-system` and every `amazon-*` and
    `aws-*` name; on GKE `gmp-system`, `gmp-public`, `config-management-system`,
    `config-management-monitoring` and every `gke-*` name; on AKS `aks-command`,
    `aks-istio-system`, `aks-istio-ingress`, `app-routing-system` and every `aks-*` name; on
    CoreWeave every `cw-*` name. Over one of those the team's owners would get admin next to
    the provider's agent (GuardDuty's runtime sensor, the Config Sync reconcilers that hold
    cluster-admin) and its default-deny policies would cut the agent off.

    To satisfy it: rename the namespace entry in the team's `spec.namespaces` to a name of the
    team's own, e.g. `<team>-<purpose>` (`vision-training`): any DNS-1123 label that is not
    one of the reserved names above and does not start with `kube-` (nor with the cluster's
    provider's prefix).
    """
    known: dict[str, dict[str, Reservation]] = {}
    for team in p.teams.values():
        for ns in team.namespaces:
            found = _reservation(p, ns.cluster, ns.name, known)
            if found is None:
                continue
            notes = () if found.declared is None else (("reserved here", found.declared),)
            yield error(
                "reserved-namespace",
                f"namespace '{ns.name}' is reserved for {found.component} on cluster '{ns.cluster}'",
                ns.origin.at("name"),
                f"use a team-owned name such as '{team.name}-{ns.purpose}'",
                notes,
            )


@rule("sentinel-value", scope="team")
def no_sentinel_values(p: Platform) -> Iterator[Diagnostic]:
    """A team's name and cost centre are never a value gpuplane writes itself for what no team
    owns.

    gpuplane's monitoring rules label every series of a namespace no team owns, every alert on a
    GPU no pod holds and the platform's own alerts with team `platform` and cost centre
    `platform`; the acceptance suites' Jobs are charged to cost centre `platform`. A team named
    `platform`, or a team with `costCenter: platform`, would add its GPU hours to the
    platform's and the platform's to its own in every dashboard and cost report, and receive
    (or hide) the platform's alerts. Refused as the team's `metadata.name`, and as its
    `spec.costCenter` in any case (`Platform` reads as the same in a report).

    To satisfy it: name the team after what it does in `metadata.name` (and the file), e.g.
    `ml-platform-tools`, and set `spec.costCenter` to the finance cost centre the team is
    charged to, e.g. `CC-1050`: any value but `platform`.
    """
    for team in p.teams.values():
        owner = sentinel_owner(team.name)
        if owner is not None:
            yield error(
                "sentinel-value",
                f"team name '{team.name}' is reserved for gpuplane: it is {owner}",
                team.origin.at("metadata", "name"),
                "name the team after what it does, e.g. 'ml-platform-tools'",
            )
        owner = sentinel_owner(team.cost_center)
        if owner is not None:
            yield error(
                "sentinel-value",
                f"costCenter '{team.cost_center}' of team '{team.name}' is reserved for "
                f"gpuplane: it is {owner}",
                team.origin.at("spec", "costCenter"),
                "set costCenter to the finance cost centre the team is charged to, e.g. 'CC-1050'",
            )


@rule("team-name-confusable")
def team_names_distinct(p: Platform) -> Iterator[Diagnostic]:
    """A team's name and cost centre do not look like another team's.

    The team name labels every object, series and alert of the team (`gpuplane.dev/team`,
    `team`), and the cost centre every line of the cost reports (`gpuplane.dev/cost-center`,
    `cost_center`). A team named `1lm` next to `llm`, or charged to `CC-1O42` next to
    `CC-1042`, reads as the other team in every dashboard, cost report and alert while its
    figures are its own. Compared as they read: the Unicode TR39 skeleton of the value without
    case (`1` and `l` alike, `0` and `O`, `rn` and `m`). Several teams charged to the same cost
    centre, written the same way, are fine. The error is on each value the change adds (without
    change information, on every look-alike after the first one in file order).

    To satisfy it: name the team (`metadata.name`, and its file) so that it does not read as
    another team's name, and set `spec.costCenter` to the cost centre written exactly as the
    other team writes it if it is the same one, else to one that reads differently.
    """
    fields: tuple[tuple[PathKey, str, str], ...] = (
        (("metadata", "name"), "name", "team name"),
        (("spec", "costCenter"), "cost_center", "costCenter"),
    )
    for field_path, attribute, what in fields:
        seen: dict[str, Team] = {}
        teams = sorted(p.teams.values(), key=lambda t: p.is_changed(t.origin, field_path))
        for team in teams:
            value: str = getattr(team, attribute)
            first = seen.setdefault(looks(value), team)
            kept: str = getattr(first, attribute)
            if kept == value:
                continue
            at = first.origin.at(*field_path)
            yield error(
                "team-name-confusable",
                f"{what} '{value}' of team '{team.name}' looks like {what} '{kept}' of team "
                f"'{first.name}' ({at.file}:{at.line})",
                team.origin.at(*field_path),
                f"rename the team (its metadata.name, file and namespaces) so that it does not "
                f"read as '{kept}'"
                if attribute == "name"
                else f"write '{kept}' if it is the same, else a value that reads differently",
                (("the value it looks like", at),),
            )


@rule("namespace-team-prefix", scope="team")
def namespaces_carry_the_team_name(p: Platform) -> Iterator[Diagnostic]:
    """A team's namespaces are named after the team: `<team>` or `<team>-<anything>`.

    The reserved list names the namespaces gpuplane and common infrastructure use, but a cluster
    runs more than any list knows (an ingress controller, a certificate manager, a vendor's
    agent). A team namespace declared over one of those would relabel it, bind the team's groups
    there and fence it in with default-deny network policies. Holding every team to its own
    name as a prefix keeps a team out of every namespace that is not visibly its own, and makes
    the owner of a namespace plain to every reviewer and operator.

    To satisfy it: rename the entry in the team's `spec.namespaces` to start with the team's
    `metadata.name` and a dash, e.g. `vision-train` for team `vision`; the name stays a
    DNS-1123 label of at most 63 characters.
    """
    for team in p.teams.values():
        for ns in team.namespaces:
            if ns.name != team.name and not ns.name.startswith(f"{team.name}-"):
                yield error(
                    "namespace-team-prefix",
                    f"namespace '{ns.name}' of team '{team.name}' is not named after the team",
                    ns.origin.at("name"),
                    f"name it '{team.name}-{ns.purpose}', or another '{team.name}-' name",
                )


@rule("namespace-outside-queue-cluster", scope="team")
def namespaces_on_queue_cluster(p: Platform) -> Iterator[Diagnostic]:
    """A team's namespaces are on its queue's cluster.

    The team's ClusterQueues, GPU quotas and LocalQueues are rendered on the cluster of the
    queue it names in `spec.queue`; that cluster's platform owners approved the team. A
    namespace on another cluster would still get the team's RoleBindings, quota and network
    policy there: a foothold on a cluster whose queue never admitted the team, with no GPU
    quota of its own to keep it in bounds.

    To satisfy it: set the namespace entry's `cluster` in the team's `spec.namespaces` to the
    cluster of the team's queue (the hint names it), or move the team to a queue of that
    cluster with `spec.queue`. A team that needs namespaces on two clusters is two team files,
    one per queue.
    """
    for team in p.teams.values():
        queue = p.queues.get(team.queue)
        if queue is None:
            continue
        for ns in team.namespaces:
            if ns.cluster != queue.cluster and ns.cluster in p.clusters:
                yield error(
                    "namespace-outside-queue-cluster",
                    f"namespace '{ns.name}' is on cluster '{ns.cluster}', but team '{team.name}' "
                    f"queues on '{queue.name}', which is on cluster '{queue.cluster}'",
                    ns.origin.at("cluster"),
                    f"set cluster: {queue.cluster}",
                    (("the queue's cluster", queue.origin.at("spec", "cluster")),),
                )


GROUP_FIELDS = ("owners", "members", "viewers")
SYSTEM_PREFIX = "system:"
INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories a group name may not hold: control and format characters (the bidi
overrides, zero-width spaces and joiners), surrogates, private-use and unassigned code points,
line and paragraph separators."""


def shown(text: str) -> str:
    """A group as every report shows it (`renderer.model.identifiers.escaped`): anything but
    printable ASCII written as an escape, so a finding shows what is really there (and carries
    no bidi override itself)."""
    return escaped(text)


def group_problem(group: str) -> str | None:
    """What makes `group` unusable as an IdP group name in RBAC and Argo CD, or None."""
    if group != group.strip():
        return "starts or ends with whitespace"
    for c in group:
        if c == ",":
            return "holds a comma, which splits Argo CD's RBAC policy lines"
        if c == '"':
            return "holds a double quote, which Argo CD's RBAC policy lines cannot carry"
        category = unicodedata.category(c)
        if category in INVISIBLE:
            name = unicodedata.name(c, "")
            what = f"U+{ord(c):04X}" + (f" {name}" if name else "")
            return f"holds the invisible or control character {what}"
        if category == "Zs" and c != " ":
            return f"holds U+{ord(c):04X} {unicodedata.name(c, 'SPACE')}, a space other than ' '"
    return None


def _team_groups(team: Team) -> Iterator[tuple[str, int, str]]:
    for field_name in GROUP_FIELDS:
        for index, group in enumerate(getattr(team, field_name)):
            yield field_name, index, group


def _prefixes(p: Platform, clusters: set[str]) -> list[tuple[str, str]]:
    """(prefix, cluster) for each known cluster: how its RoleBindings name a group."""
    return [
        (p.clusters[name].group_prefix, name) for name in sorted(clusters) if name in p.clusters
    ]


def _system(group: str, prefixes: list[tuple[str, str]]) -> str | None:
    """Why `group` names a Kubernetes system group: as written, or with a cluster's prefix."""
    if group.startswith(SYSTEM_PREFIX):
        return ""
    for prefix, cluster in prefixes:
        if prefix and (prefix + group).startswith(SYSTEM_PREFIX):
            return f" once cluster '{cluster}' prefixes it ('{shown(prefix + group)}')"
    return None


@rule("rbac-reserved-group", scope="team")
def groups_not_system(p: Platform) -> Iterator[Diagnostic]:
    """IdP groups may not be Kubernetes' own `system:` groups.

    Binding `system:authenticated` or `system:masters` would hand a namespace to every user of the
    cluster, or name a group that is already cluster-admin. Teams can only widen access to their
    own namespaces through their own IdP groups. A group is checked as written and as the
    cluster's RoleBindings name it, with `identity.groupPrefix` in front: prefix `sys` and group
    `tem:masters` make `system:masters` too.

    To satisfy it: replace the group in the team's `spec.owners`, `spec.members` or
    `spec.viewers` (or the cluster's `spec.platformOwners`) with a group of your identity
    provider, e.g. `ml-platform-support`, written without the cluster's `identity.groupPrefix`:
    gpuplane adds it. No group that starts with `system:`, with or without the prefix, is
    accepted.
    """
    for team in p.teams.values():
        prefixes = _prefixes(p, {ns.cluster for ns in team.namespaces})
        for field_name, index, group in _team_groups(team):
            why = _system(group, prefixes)
            if why is not None:
                yield error(
                    "rbac-reserved-group",
                    f"team '{team.name}' binds the Kubernetes system group '{shown(group)}'{why}",
                    team.origin.at("spec", field_name, index),
                    "name the team's own IdP group",
                )
    for cluster in p.clusters.values():
        for index, group in enumerate(cluster.platform_owners):
            why = _system(group, _prefixes(p, {cluster.name}))
            if why is not None:
                yield error(
                    "rbac-reserved-group",
                    f"platform owner '{shown(group)}' is a Kubernetes system group{why}",
                    cluster.origin.at("spec", "platformOwners", index),
                    "name the platform team's IdP group",
                )


@rule("rbac-group-characters", scope="team")
def group_names_plain(p: Platform) -> Iterator[Diagnostic]:
    """An IdP group name holds no comma, no double quote, no control or invisible character and
    no space other than a plain one, and neither starts nor ends with whitespace.

    Groups go into RoleBinding subjects and into Argo CD's RBAC, whose policy lines are
    comma-separated: `a,b` in a project role splits into a second field and changes what the
    line grants. Control characters break the lines they are written on; invisible and bidi
    characters (U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO WIDTH SPACE, U+00A0 NO-BREAK SPACE)
    make a name read in review as another group than the one bound, so a reviewer approves a
    binding they cannot see. A double quote would open a quoted field in those lines (Argo CD
    refuses such a group outright). Refused: `,`, `"`, Unicode categories Cc, Cf, Cs, Co, Cn, Zl and Zp,
    every space but U+0020, and leading or trailing whitespace.

    To satisfy it: write the group in the team's `spec.owners`, `spec.members` or `spec.viewers`
    (or the cluster's `spec.platformOwners`) exactly as the IdP's groups claim spells it, with
    letters, digits, plain spaces and punctuation other than `,` and `"`, e.g.
    `ml-platform-support`.
    An IdP group whose real name holds a comma needs a renamed group, or an alias, in the IdP.
    """
    for team in p.teams.values():
        for field_name, index, group in _team_groups(team):
            problem = group_problem(group)
            if problem is not None:
                yield error(
                    "rbac-group-characters",
                    f"team '{team.name}' group '{shown(group)}' {problem}",
                    team.origin.at("spec", field_name, index),
                    "write the group as the IdP names it, without commas or invisible characters",
                )
    for cluster in p.clusters.values():
        yield from _platform_owner_characters(cluster)


def _platform_owner_characters(cluster: Cluster) -> Iterator[Diagnostic]:
    for index, group in enumerate(cluster.platform_owners):
        problem = group_problem(group)
        if problem is not None:
            yield error(
                "rbac-group-characters",
                f"platform owner '{shown(group)}' {problem}",
                cluster.origin.at("spec", "platformOwners", index),
                "write the group as the IdP names it, without commas or invisible characters",
            )


@rule("pod-security-loosened", scope="team")
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
