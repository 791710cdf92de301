"""Policy on a team's reach: what its file says it may hold is what it can hold, whatever the
number of namespaces it declares.

A team's GPU quota is its Kueue Cohort's (renderer/model/queue_plans.py) and its CPU, memory and
storage caps are split between its namespaces (renderer/model/caps.py); these rules keep the
inputs those two rest on sound: one namespace per purpose and cluster, namespace shares within
the team's caps, caps the cluster could give, and Cohort names no Queue takes.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from renderer.findings.diagnostics import Diagnostic, Location
from renderer.model import quantity
from renderer.model.caps import CAP_KEYS, CapKey, namespaces_on, team_caps, text
from renderer.model.platform import Cluster, Platform, Team
from renderer.model.queue_plans import team_cohort_name
from renderer.policy.rule import error, pools_by_cluster, rule


@rule("namespace-purpose-repeated", scope="team")
def one_namespace_per_purpose(p: Platform) -> Iterator[Diagnostic]:
    """A team has at most one namespace of each purpose on a cluster.

    All of a team's namespaces of one purpose queue in the same ClusterQueue and share the
    team's caps, so a second one adds no capacity: it only splits the team's CPU, memory and
    storage caps further and gives reviewers one more place to look. Declared as a way around
    the caps (each namespace used to get the team's whole ResourceQuota), it was a hole.

    To satisfy it: remove the second entry of that `purpose` and `cluster` from the team's
    `spec.namespaces`, or give it another purpose (training, inference, batch or notebooks);
    workloads of one purpose share one namespace.
    """
    for team in p.teams.values():
        first: dict[tuple[str, str], int] = {}
        for index, ns in enumerate(team.namespaces):
            key = (ns.cluster, ns.purpose)
            if key not in first:
                first[key] = index
                continue
            earlier = team.namespaces[first[key]]
            yield error(
                "namespace-purpose-repeated",
                f"team '{team.name}' already has a {ns.purpose} namespace on cluster "
                f"'{ns.cluster}', '{earlier.name}': '{ns.name}' would be a second",
                ns.origin.at("purpose"),
                f"remove spec.namespaces[{index}] or give it another purpose",
                notes=((f"'{earlier.name}' is declared here", earlier.origin.at("name")),),
            )


@rule("namespace-caps-exceed-team", scope="team")
def namespace_shares_within_team(p: Platform) -> Iterator[Diagnostic]:
    """The namespaces' `resources` shares add up to no more than the team's caps.

    A team's caps (`spec.resources`, or the cluster's `teamDefaults.resources`) are the team's
    on the cluster; each namespace's ResourceQuota gets the share its entry sets, and the others
    an even share of the rest. Shares above the team's would hand out more than the file
    promises, and a share of a cap the team does not have would cap nothing that the file says.

    To satisfy it: lower the `resources` of the team's `spec.namespaces` entries so that they
    add up to at most the team's `spec.resources` (the hint names the largest share and by how
    much to lower it), raise the team's cap, or remove a key the team has no cap for.
    """
    for team in p.teams.values():
        for cluster_name in sorted({ns.cluster for ns in team.namespaces}):
            cluster = p.clusters.get(cluster_name)
            if cluster is not None:
                yield from _shares_of(team, cluster)


def _shares_of(team: Team, cluster: Cluster) -> Iterator[Diagnostic]:
    caps = team_caps(cluster, team)
    for key in CAP_KEYS:
        setting = [
            (i, ns)
            for i, ns in enumerate(team.namespaces)
            if ns.cluster == cluster.name and key in ns.resources
        ]
        if not setting:
            continue
        if key not in caps:
            for index, ns in setting:
                yield error(
                    "namespace-caps-exceed-team",
                    f"namespace '{ns.name}' takes a share of {key}, but team '{team.name}' "
                    f"has no {key} cap on cluster '{cluster.name}' to share",
                    ns.origin.at("resources", key),
                    f"remove spec.namespaces[{index}].resources.{key}, or set spec.resources."
                    f"{key} for the whole team",
                )
            continue
        total = sum((quantity.parse(ns.resources[key]) for _, ns in setting), Decimal(0))
        if total <= caps[key]:
            continue
        # the hint lowers the largest share (the last of equals), the one that can give most
        index, largest = max(
            setting, key=lambda item: (quantity.parse(item[1].resources[key]), item[0])
        )
        over = total - caps[key]
        lower = (
            f"lower spec.namespaces[{index}].resources.{key} by {text(key, over)}"
            if quantity.parse(largest.resources[key]) >= over
            else f"lower the namespaces' resources.{key} by {text(key, over)} in all"
        )
        yield error(
            "namespace-caps-exceed-team",
            f"the namespaces of team '{team.name}' on cluster '{cluster.name}' take "
            f"{text(key, total)} {key} in all, more than the team's {text(key, caps[key])}",
            largest.origin.at("resources", key),
            f"{lower}, or raise spec.resources.{key}",
            notes=tuple(
                (f"'{ns.name}' takes {ns.resources[key]}", ns.origin.at("resources", key))
                for _, ns in setting
                if ns is not largest
            ),
        )


_HOST: dict[CapKey, str] = {"cpu": "CPUs", "memory": "memory"}


def cluster_hosts(p: Platform, cluster: str) -> dict[CapKey, Decimal]:
    """What the cluster's pools' nodes can allocate at their maximum size, per cap key; a key is
    left out where a pool does not declare its host figure (nothing is known then)."""
    pools = pools_by_cluster(p).get(cluster, [])
    found: dict[CapKey, Decimal] = {}
    if pools and all(pool.host_cpus is not None for pool in pools):
        found["cpu"] = sum(
            (Decimal(pool.host_cpus or 0) * pool.nodes.max for pool in pools), Decimal(0)
        )
    if pools and all(pool.host_memory is not None for pool in pools):
        found["memory"] = sum(
            (quantity.parse(pool.host_memory or 0) * pool.nodes.max for pool in pools), Decimal(0)
        )
    return found


@rule("cap-exceeds-cluster", scope="team")
def caps_within_cluster(p: Platform) -> Iterator[Diagnostic]:
    """No CPU or memory cap is above what the cluster's pools could ever give.

    A cap far beyond anything the cluster holds (`cpu: 100000000`, `memory: 100Ei`) caps
    nothing: it reads as a limit to a reviewer and is none. The cluster's figure is what its
    pools' nodes can allocate (`host.cpus` and `host.memory`) at their maximum node count.

    To satisfy it: lower the team's `spec.resources.cpu` or `.memory` (or the cluster's
    `spec.teamDefaults.resources`) to at most the cluster's figure the message gives; a team
    that needs the whole cluster can have exactly that.
    """
    for cluster in p.clusters.values():
        hosts = cluster_hosts(p, cluster.name)
        for key, most in hosts.items():
            default = cluster.team_default_resources.get(key)
            if default is not None and quantity.parse(default) > most:
                at = cluster.origin.at("spec", "teamDefaults", "resources", key)
                yield _too_big(key, most, cluster, "cluster default", at)
        for team in p.teams.values():
            yield from _team_too_big(team, cluster, hosts)


def _team_too_big(
    team: Team, cluster: Cluster, hosts: dict[CapKey, Decimal]
) -> Iterator[Diagnostic]:
    """The team's caps and its namespaces' shares on the cluster above the cluster's figures."""
    namespaces = namespaces_on(team, cluster.name)
    if not namespaces:
        return
    for key, most in hosts.items():
        value = team.resources.get(key)
        if value is not None and quantity.parse(value) > most:
            at = team.origin.at("spec", "resources", key)
            yield _too_big(key, most, cluster, f"team '{team.name}'", at)
        for ns in namespaces:
            share = ns.resources.get(key)
            if share is not None and quantity.parse(share) > most:
                at = ns.origin.at("resources", key)
                yield _too_big(key, most, cluster, f"namespace '{ns.name}'", at)


def _too_big(key: CapKey, most: Decimal, cluster: Cluster, whose: str, at: Location) -> Diagnostic:
    return error(
        "cap-exceeds-cluster",
        f"the {whose} {key} cap is more than cluster '{cluster.name}' could ever give: its "
        f"pools' nodes hold {text(key, most)} of {_HOST[key]} at their maximum size",
        at,
        f"set it to at most {text(key, most)}",
    )


@rule("cohort-name-taken", scope="team")
def team_cohorts_named_apart(p: Platform) -> Iterator[Diagnostic]:
    """A team's name is not the name of a Queue on its cluster.

    Each team's quota is a Kueue Cohort (a Volcano queue) named after the team, under the Cohort
    of its Queue, which is named after the Queue; Cohorts and Volcano queues are
    cluster-scoped, so a team named like a Queue of its cluster would be one object with two
    meanings, and Kueue would read the team's Cohort as its own parent.

    To satisfy it: rename the team (its `metadata.name`, its file and its namespaces' prefix),
    or the Queue (its `metadata.name`, its file and the `spec.queue` of its teams).
    """
    queues = {(q.cluster, q.name): q for q in p.queues.values()}
    for team in p.teams.values():
        name = team_cohort_name(team.name)
        for cluster in sorted({ns.cluster for ns in team.namespaces}):
            queue = queues.get((cluster, name))
            if queue is None:
                continue
            yield error(
                "cohort-name-taken",
                f"team '{team.name}' would have the Cohort '{name}' on cluster '{cluster}', "
                f"which is queue '{queue.name}''s",
                team.origin.at("metadata", "name"),
                "rename the team, or the queue",
                notes=(
                    (f"queue '{queue.name}' is declared here", queue.origin.at("metadata", "name")),
                ),
            )
