"""Kueue (`kueue.x-k8s.io/v1beta2`) objects of one cluster, and the controller configuration
the queue policy needs.

Everything here is a rendering of `renderer.model.queue_plans.cluster_queues`: a Cohort per team,
under the Cohort of the team's Queue, holding the team's quota; a ClusterQueue per team and
namespace purpose in the team's Cohort, listing as flavors only the pools that serve the purpose, and a `default` LocalQueue in each of its namespaces (Kueue sends jobs
that name no queue there). ResourceFlavors carry the pool's node labels and tolerations from
`renderer.model.nodes`, and a Topology when the pool is topology-aware (`renderer.model.topology`:
its levels go above the node). The objects are valid
by construction against the CRDs' CEL rules, which the output validator does not evaluate.
The controller configuration maps each DRA pool's DeviceClass to the logical resource its
ClusterQueues cover (`resources.deviceClassMappings`) and keeps the pools' RDMA resources out of
quota (`resources.excludeResourcePrefixes`). See docs/kueue.md, docs/dra.md and docs/rdma.md.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from renderer.findings.diagnostics import Location
from renderer.model import quantity
from renderer.model.capacity import pool_offers
from renderer.model.integrations import DEFAULT_FRAMEWORKS, enabled_frameworks
from renderer.model.names import COST_CENTER_LABEL, PROMETHEUS_ADDON, SUITE_JOBS_NAMESPACE
from renderer.model.nodes import node_labels, tolerations
from renderer.model.platform import Pool, Queue
from renderer.model.queue_plans import (
    CPU,
    MEMORY,
    Amount,
    ClusterQueuePlan,
    FlavorPlan,
    TeamCohortPlan,
    amount_text,
    cluster_queues,
    covered_of,
    team_cohorts,
)
from renderer.model.topology import topology_aware
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import Manifest, Output, Values, metadata
from workflows.suites import jobs, placement

LAYER = "queueing"
API_VERSION = "kueue.x-k8s.io/v1beta2"
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
DEFAULT_LOCAL_QUEUE = "default"
"""The LocalQueue name Kueue's LocalQueue defaulting (GA since v0.17) fills in for jobs that
carry no `kueue.x-k8s.io/queue-name` label."""

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
TEAM_LABEL = "gpuplane.dev/team"
"""Set by the tenancy layer on every team Namespace."""
MANAGED_NAMESPACE_LABEL = COST_CENTER_LABEL
"""Kueue's managedJobsNamespaceSelector (`Exists`): on every team Namespace (a team's cost
centre) and on the suites' Jobs namespace (the platform's), on no other. Kueue v0.19's job
reconciler ignores a Job in any other namespace, queue-name label or not (its webhook would still
suspend it, for ever), and Argo's pods in `gpuplane-acceptance` stay out of Kueue's reach."""

CHART_MANAGER_SETTINGS: Mapping[str, Any] = MappingProxyType(
    {
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
    }
)
"""The settings of the Kueue chart's own `managerConfig.controllerManagerConfigYaml` (v0.19.2)
that gpuplane keeps as they are. The chart parses that string and uses it whole, so a
configuration that leaves one out does not get the chart's value but the manager's built-in
default: without `controller.groupKindConcurrency` every Kueue controller runs one worker
instead of the chart's five or ten. The chart adds `internalCertManagement` itself when the
string has none (`templates/manager/manager-config.yaml`), so it is not set here.
`tests/test_kueue_config.py` compares these with the pinned chart's values."""

FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
"""Kueue's recommended (and former default) preemption strategies for fair sharing."""

FAIR_SHARING_WEIGHT = 1
"""Every team competes for idle quota with the same weight; the model has no per-team weight."""

DEFAULT_GANG_TIMEOUT_SECONDS = 30 * 60
"""Kueue v0.19's own waitForPodsReady timeout, used for a queue that asks for gangs but no timeout."""

HOSTNAME_LABEL = "kubernetes.io/hostname"
"""A Topology may use it only as its lowest level (a CEL rule of the CRD)."""

MAX_RESOURCE_GROUPS = 16
MAX_COVERED_RESOURCES = 64
MAX_FLAVORS = 64
MAX_NODE_LABELS = 8
MAX_TOLERATIONS = 8
MAX_TOPOLOGY_LEVELS = 16
"""Limits of the v0.19.2 CRDs, for the tests; the schemas enforce the ones JSON Schema can say."""

_NAME_MAX = 253
_DURATION = re.compile(r"^([0-9]+)(s|m|h|d)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def render(view: ClusterView) -> Iterator[Output]:
    """Every Kueue object of one cluster (whose scheduler is kueue), in dependency order."""
    topologies = topology_names(view.pools)
    yield from _topologies(view.pools, topologies)
    for pool in view.pools:
        yield _resource_flavor(pool, topologies)
    for queue in view.queues:
        yield _manifest(
            {"kind": "Cohort", "metadata": metadata(queue.name, queue=queue.name), "spec": {}},
            queue.origin.location,
        )
        for prio in queue.priorities:
            yield _manifest(
                {
                    "kind": "WorkloadPriorityClass",
                    "metadata": metadata(f"{queue.name}-{prio.name}", queue=queue.name),
                    "value": prio.value,
                    "description": prio.description
                    or f"Queue '{queue.name}', priority '{prio.name}'.",
                },
                prio.origin.location,
            )
    plans = cluster_queues(view)
    fair_sharing = fair_sharing_enabled(view.queues)
    for team in team_cohorts(plans):
        yield _manifest(_team_cohort(team), team.team.origin.location)
    for plan in plans:
        yield _manifest(
            _cluster_queue(plan, fair_sharing=fair_sharing), plan.namespaces[0].origin.location
        )
    yield from suite_cluster_queues(view)
    yield from window_cluster_queues(view)
    for plan in plans:
        for ns in plan.namespaces:
            yield _manifest(
                {
                    "kind": "LocalQueue",
                    "metadata": metadata(
                        DEFAULT_LOCAL_QUEUE,
                        ns.name,
                        team=plan.team.name,
                        cost_center=plan.team.cost_center,
                        queue=plan.queue.name,
                        purpose=plan.purpose,
                    ),
                    "spec": {"clusterQueue": plan.name},
                },
                ns.origin.location,
            )
    yield Values(
        layer=LAYER,
        chart="kueue",
        body=helm_values(
            view.queues,
            view.pools,
            enabled_frameworks(view.cluster),
            scraped=view.cluster.runs(PROMETHEUS_ADDON),
        ),
        source=view.cluster.origin.location,
    )


def _manifest(body: dict[str, Any], source: Location) -> Manifest:
    return Manifest(LAYER, {"apiVersion": API_VERSION, **body}, source)


# --- topologies and flavors -------------------------------------------------------------------


def _segment(label: str) -> str:
    """The name part of a label key as a DNS label: `topology.k8s.aws/Rack_1` -> `rack-1`."""
    return re.sub(r"[^a-z0-9]+", "-", label.rpartition("/")[2].lower()).strip("-")


def _digest(levels: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(levels).encode()).hexdigest()[:8]


def topology_names(pools: Iterable[Pool]) -> dict[tuple[str, ...], str]:
    """A Topology name per distinct list of levels of the topology-aware pools: the levels'
    last segments joined (`block-rack-hostname`), with a digest of the whole list added where
    two lists on the cluster would read the same (or the name would be too long), so names
    never collide. A pool whose only level is the node gets no Topology (`topology_aware`)."""
    lists = sorted({p.topology_levels for p in pools if topology_aware(p)})
    readable = {levels: "-".join(_segment(level) for level in levels) for levels in lists}
    taken = Counter(readable.values())
    names = {}
    for levels, name in readable.items():
        if taken[name] > 1 or len(name) > _NAME_MAX - 9:
            name = f"{name[: _NAME_MAX - 9].rstrip('-')}-{_digest(levels)}"
        names[levels] = name
    return names


def _topologies(pools: tuple[Pool, ...], names: Mapping[tuple[str, ...], str]) -> Iterator[Output]:
    for levels, name in sorted(names.items(), key=lambda item: item[1]):
        first = next(p for p in pools if p.topology_levels == levels)
        yield _manifest(
            {
                "kind": "Topology",
                "metadata": metadata(name),
                "spec": {"levels": [{"nodeLabel": level} for level in levels]},
            },
            first.origin.at("spec", "topology", "levels"),
        )


def _resource_flavor(pool: Pool, topologies: Mapping[tuple[str, ...], str]) -> Manifest:
    """Kueue adds the node labels as a node selector, and the tolerations, to admitted pods.
    `topologyName` only on a topology-aware pool: a flavor with it is TAS-only, and Kueue then
    places the pods itself on the nodes it reads (`renderer.model.topology`)."""
    spec: dict[str, Any] = {"nodeLabels": node_labels(pool)}
    pool_tolerations = tolerations(pool)
    if pool_tolerations:
        spec["tolerations"] = pool_tolerations
    if topology_aware(pool):
        spec["topologyName"] = topologies[pool.topology_levels]
    return _manifest(
        {"kind": "ResourceFlavor", "metadata": metadata(pool.name, pool=pool.name), "spec": spec},
        pool.origin.location,
    )


# --- cluster queues ---------------------------------------------------------------------------


def fair_sharing_enabled(queues: Iterable[Queue]) -> bool:
    """Fair sharing is a setting of the whole Kueue installation: on when any queue asks."""
    return any(q.fair_sharing for q in queues)


def preemption(queue: Queue, *, fair_sharing: bool) -> dict[str, Any]:
    """The queue's preemption policy in Kueue's terms.

    `borrowWithinCohort` is left out where Kueue would ignore or refuse it: with fair sharing
    (the CRD: "May only be configured with Classical Preemption") and when reclaiming within the
    cohort is `Never` (CEL: reclaimWithinCohort=Never and borrowWithinCohort.policy!=Never).
    """
    reclaim = queue.preemption.get("reclaimWithinCohort", "Never")
    result: dict[str, Any] = {
        "withinClusterQueue": queue.preemption.get("withinTeam", "Never"),
        "reclaimWithinCohort": reclaim,
    }
    borrow = queue.preemption.get("borrowWithinCohort")
    if borrow is not None and not fair_sharing and (borrow == "Never" or reclaim != "Never"):
        result["borrowWithinCohort"] = {"policy": borrow}
    return result


def _quota(resource: str, amount: Amount | None) -> dict[str, Any]:
    """One resource of one flavor. A resource the flavor has no amount for (the pool does not
    offer it, or the team has no quota for it there) gets nothing and may borrow nothing."""
    entry: dict[str, Any] = {"name": resource}
    if amount is None:
        entry["nominalQuota"] = entry["borrowingLimit"] = amount_text(resource, Decimal(0))
        return entry
    entry["nominalQuota"] = amount_text(resource, amount.nominal)
    if amount.borrowing_limit is not None:
        entry["borrowingLimit"] = amount_text(resource, amount.borrowing_limit)
    if amount.lending_limit is not None:
        entry["lendingLimit"] = amount_text(resource, amount.lending_limit)
    return entry


def ordered_flavors(plan: ClusterQueuePlan | TeamCohortPlan) -> list[FlavorPlan]:
    """The pools of the queue's own purpose first, then those it shares with another purpose of
    the team, each by pool name: Kueue tries them in this order."""
    return sorted(plan.flavors, key=lambda f: (f.borrow_only, f.pool.name))


def resource_groups(plan: ClusterQueuePlan | TeamCohortPlan) -> list[dict[str, Any]]:
    """One group: every flavor lists every covered resource, in the covered order (CEL)."""
    if not plan.flavors:
        return []
    covered = covered_of(plan.flavors)
    return [
        {
            "coveredResources": list(covered),
            "flavors": [
                {
                    "name": flavor.pool.name,
                    "resources": [_quota(r, flavor.resources.get(r)) for r in covered],
                }
                for flavor in ordered_flavors(plan)
            ],
        }
    ]


def _team_cohort(team: TeamCohortPlan) -> dict[str, Any]:
    """The team's Cohort under its Queue's: the team's quota on each pool, which all of its
    ClusterQueues draw on together (Kueue v1beta2 hierarchical cohorts)."""
    queue = team.queue
    spec: dict[str, Any] = {"parentName": queue.name}
    if queue.fair_sharing:
        spec["fairSharing"] = {"weight": FAIR_SHARING_WEIGHT}
    groups = resource_groups(team)
    if groups:
        spec["resourceGroups"] = groups
    return {
        "kind": "Cohort",
        "metadata": metadata(
            team.name, team=team.team.name, cost_center=team.team.cost_center, queue=queue.name
        ),
        "spec": spec,
    }


def _cluster_queue(plan: ClusterQueuePlan, *, fair_sharing: bool) -> dict[str, Any]:
    queue = plan.queue
    spec: dict[str, Any] = {
        "cohortName": plan.cohort.name,
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": NAMESPACE_NAME_LABEL,
                    "operator": "In",
                    "values": sorted(ns.name for ns in plan.namespaces),
                }
            ]
        },
        "queueingStrategy": queue.strategy,
        "preemption": preemption(queue, fair_sharing=fair_sharing),
    }
    if queue.fair_sharing:
        spec["fairSharing"] = {"weight": FAIR_SHARING_WEIGHT}
    groups = resource_groups(plan)
    if groups:  # a plan without flavors: Kueue holds its workloads as "resource unavailable"
        spec["resourceGroups"] = groups
    return {
        "kind": "ClusterQueue",
        "metadata": metadata(
            plan.name,
            team=plan.team.name,
            cost_center=plan.team.cost_center,
            queue=queue.name,
            purpose=plan.purpose,
        ),
        "spec": spec,
    }


# --- the acceptance suites' queue ---------------------------------------------------------------


def suite_cluster_queues(view: ClusterView) -> Iterator[Manifest]:
    """Per cohort with a pool the suites test, the platform's ClusterQueue `<queue>-acceptance`:
    nominal quota 0 on each such pool, so it only borrows what the cohort's teams leave idle, up
    to what the largest of the suite's Jobs asks for (`jobs.demand`); it never preempts (the teams' queues may reclaim from it);
    with fair sharing its weight is 0, so it is always the last to borrow and the first to give
    back. Only the suites' Jobs namespace may use it (`namespaceSelector`), and no team queue
    selects that namespace. See docs/acceptance-suites.md."""
    by_queue: dict[str, list[placement.Target]] = {}
    for target in placement.targets(view):
        by_queue.setdefault(target.queue.name, []).append(target)
    for name, targets in sorted(by_queue.items()):
        queue = targets[0].queue
        flavors = {t.pool.name: jobs.demand(t) for t in targets}
        gpu = sorted({r for f in flavors.values() for r in f if r not in (CPU, MEMORY)})
        host = [r for r in (CPU, MEMORY) if any(r in f for f in flavors.values())]
        covered = [*host, *gpu]
        spec: dict[str, Any] = {
            "cohortName": name,
            "namespaceSelector": {
                "matchExpressions": [
                    {
                        "key": NAMESPACE_NAME_LABEL,
                        "operator": "In",
                        "values": [SUITE_JOBS_NAMESPACE],
                    }
                ]
            },
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": pool,
                            "resources": [
                                {
                                    "name": r,
                                    "nominalQuota": amount_text(r, Decimal(0)),
                                    "borrowingLimit": amount_text(r, amounts.get(r, Decimal(0))),
                                }
                                for r in covered
                            ],
                        }
                        for pool, amounts in sorted(flavors.items())
                    ],
                }
            ],
        }
        if queue.fair_sharing:
            spec["fairSharing"] = {"weight": 0}
        yield _manifest(
            {
                "kind": "ClusterQueue",
                "metadata": metadata(targets[0].cluster_queue, queue=name, suite="acceptance"),
                "spec": spec,
            },
            queue.origin.location,
        )


def window_cluster_queues(view: ClusterView) -> Iterator[Manifest]:
    """Where the cluster declares an acceptance window, per tested pool the ClusterQueue
    `gpuplane-window-<pool>`: in no cohort, so its quota is never lent and never borrowed,
    and it is no member of any team's tree (fit, plan, the quota sums and the diagrams read
    the team queues' plans, which it is not); its nominal quota is the whole pool (every device,
    and the hosts' cpu and memory where the pool declares them) on the pool's flavor. Its
    Jobs run only on nodes the window's `reserve` step has emptied and tainted for them; only
    the suites' Jobs namespace may use it. See docs/acceptance-window.md."""
    if view.cluster.acceptance_window is None or view.cluster.scheduler != "kueue":
        return
    for target in placement.targets(view):
        pool = target.pool
        whole = placement.reserved(target)
        amounts: dict[str, Decimal] = {target.offer.resource: Decimal(whole.available)}
        if pool.host_cpus is not None and pool.host_memory is not None:
            amounts[CPU] = Decimal(pool.host_cpus * pool.size)
            amounts[MEMORY] = quantity.parse(pool.host_memory) * pool.size
        covered = [r for r in (CPU, MEMORY) if r in amounts] + [target.offer.resource]
        spec: dict[str, Any] = {
            "namespaceSelector": {
                "matchExpressions": [
                    {
                        "key": NAMESPACE_NAME_LABEL,
                        "operator": "In",
                        "values": [SUITE_JOBS_NAMESPACE],
                    }
                ]
            },
            "queueingStrategy": "StrictFIFO",
            "preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": pool.name,
                            "resources": [
                                {"name": r, "nominalQuota": amount_text(r, amounts[r])}
                                for r in covered
                            ],
                        }
                    ],
                }
            ],
        }
        yield _manifest(
            {
                "kind": "ClusterQueue",
                "metadata": metadata(whole.cluster_queue, pool=pool.name, suite="acceptance"),
                "spec": spec,
            },
            pool.origin.location,
        )


# --- controller configuration -----------------------------------------------------------------


def duration_seconds(text: str) -> int:
    """A gpuplane duration (`10m`, `1d`) in seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    return int(match.group(1)) * _SECONDS[match.group(2)]


def go_duration(seconds: int) -> str:
    """Seconds as Go's time.ParseDuration reads them, in the largest whole unit (no `d`)."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def gang_timeout(queues: Iterable[Queue]) -> int | None:
    """waitForPodsReady is one setting for the whole cluster: the shortest timeout among the
    queues that ask for gang admission (a queue without a timeout counts as Kueue's 30m), so
    no queue's half-started gangs hold GPUs longer than it allows. None when no queue asks."""
    asked = [
        duration_seconds(q.gang_timeout) if q.gang_timeout else DEFAULT_GANG_TIMEOUT_SECONDS
        for q in queues
        if q.wait_for_pods_ready
    ]
    return min(asked) if asked else None


EXCLUDED_RESOURCE_PREFIXES = ("ephemeral-storage",)
"""Resources Kueue never counts on any cluster: scratch disk is limited by the namespace
ResourceQuota and the kubelet, and a pod asking for it would otherwise be refused as
"unavailable in ClusterQueue", since no flavor covers it."""


def excluded_resource_prefixes(pools: Iterable[Pool] = ()) -> tuple[str, ...]:
    """`resources.excludeResourcePrefixes` of a cluster's Kueue: the fixed ones, plus each
    pool's RDMA resource (`fabric.rdma.resource`), sorted. Multi-node jobs request the RDMA
    devices beside their GPUs, and no ClusterQueue covers them (the device plugin, not a quota,
    bounds them), so without this Kueue would hold every such job as "resource … unavailable in
    ClusterQueue". Kueue drops a requested resource whose name starts with any of these
    (`strings.HasPrefix` in `pkg/workload`) before it assigns flavors; the full name is the
    narrowest prefix. See docs/rdma.md."""
    rdma = {pool.rdma.resource for pool in pools if pool.rdma is not None}
    return tuple(sorted({*EXCLUDED_RESOURCE_PREFIXES, *rdma}))


def device_class_mappings(pools: Iterable[Pool]) -> list[dict[str, Any]]:
    """Kueue's DRA mappings: each DRA pool's DeviceClass counted as the pool's logical resource
    (the name its ClusterQueues cover), by resource name. Kueue v0.19 counts the devices a
    ResourceClaimTemplate requests from a mapped class (feature gate `KueueDRAIntegration`, beta
    and on by default since v0.18); a class may appear in one mapping only."""
    mappings = {
        offer.resource: offer.device_class
        for pool in pools
        for offer in pool_offers(pool)
        if offer.device_class is not None
    }
    return [
        {"name": resource, "deviceClassNames": [device_class]}
        for resource, device_class in sorted(mappings.items())
    ]


def manager_config(
    queues: tuple[Queue, ...],
    pools: tuple[Pool, ...] = (),
    frameworks: Sequence[str] = DEFAULT_FRAMEWORKS,
    *,
    scraped: bool = False,
) -> dict[str, Any]:
    """The Kueue `Configuration`: the chart's own settings (`CHART_MANAGER_SETTINGS`), the
    integrations the cluster enables (`renderer.model.integrations`), and what the queues and the
    cluster's DRA and RDMA pools need; Kueue defaults everything else.

    `scraped`: the cluster's Prometheus scrapes Kueue, and the observability layer's quota panels
    and rules read the per-flavor quota series that Kueue exports only with
    `metrics.enableClusterQueueResources` (`kueue_cluster_queue_resource_usage`,
    `..._nominal_quota`: pkg/metrics/metrics.go, reported only when the setting is on)."""
    resources: dict[str, Any] = {"excludeResourcePrefixes": list(excluded_resource_prefixes(pools))}
    mappings = device_class_mappings(pools)
    if mappings:
        resources["deviceClassMappings"] = mappings
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        **copy.deepcopy(dict(CHART_MANAGER_SETTINGS)),
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": MANAGED_NAMESPACE_LABEL, "operator": "Exists"}]
        },
        "integrations": {"frameworks": list(frameworks)},
        "resources": resources,
    }
    if scraped:
        config["metrics"] = {**config["metrics"], "enableClusterQueueResources": True}
    timeout = gang_timeout(queues)
    if timeout is not None:
        config["waitForPodsReady"] = {"timeout": go_duration(timeout), "blockAdmission": False}
    if fair_sharing_enabled(queues):
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_STRATEGIES)}
    return config


def helm_values(
    queues: tuple[Queue, ...],
    pools: tuple[Pool, ...] = (),
    frameworks: Sequence[str] = DEFAULT_FRAMEWORKS,
    *,
    scraped: bool = False,
) -> dict[str, Any]:
    """Values for the Kueue chart: its `managerConfig.controllerManagerConfigYaml` is a string
    the chart parses (`fromYaml`) into the manager ConfigMap. Where the cluster runs
    kube-prometheus-stack (`scraped`), `enablePrometheus` makes the chart create its
    ServiceMonitor (`templates/prometheus/monitor.yaml`: the manager's HTTPS metrics port, read
    with the Prometheus service account's token, which kube-prometheus-stack's ClusterRole allows
    to `get /metrics`)."""
    config = manager_config(queues, pools, frameworks, scraped=scraped)
    values: dict[str, Any] = {"managerConfig": {"controllerManagerConfigYaml": dump(config)}}
    if scraped:
        values["enablePrometheus"] = True
    return values
