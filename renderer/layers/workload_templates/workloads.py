"""Team workload templates: starting points a team copies, so no one writes a pod spec from scratch.

Design: docs/workload-templates.md#how-the-templates-are-chosen-and-written
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from renderer.layers.workload_templates.batch import job, jobset, rayjob, trainjob
from renderer.layers.workload_templates.pieces import (
    NOTE,
    SHARED_CLAIM,
    SHARED_PATH,
    Target,
    common_labels,
)
from renderer.layers.workload_templates.serving import deployment, endpoint_deployment
from renderer.model import quantity
from renderer.model.capacity import Offer, how_to_request, maximum_holding, usable_quotas
from renderer.model.caps import namespace_shares
from renderer.model.nodes import PREFIX
from renderer.model.operator_needs import GANG_PURPOSES
from renderer.model.operators import TRAINER_ADDON, serves_here
from renderer.model.platform import Namespace, Pool, Team
from renderer.model.queue_plans import (
    ClusterQueuePlan,
    Cohort,
    cluster_queues,
    cohorts,
    potential_available,
)
from renderer.model.view import ClusterView
from renderer.output.manifest import Values

LAYER = "templates"
FOLDER = "templates"

SHARED_SIZE = Decimal(2**40)  # 1Ti, or half the team's storage quota when that is smaller


def render(view: ClusterView) -> Iterator[Values]:
    """The templates of every team namespace on one cluster."""
    for target, chart, build in _planned(view):
        yield _values(target, chart, build(target))


def files(view: ClusterView) -> Iterator[tuple[str, str]]:
    """The namespace and chart of each template `render` writes, in its order, without building
    any (the cluster README lists them: building them twice was a tenth of a cluster's time)."""
    for target, chart, _ in _planned(view):
        yield target.namespace.name, chart


_Build = Callable[[Target], dict[str, Any]]


def _planned(view: ClusterView) -> list[tuple[Target, str, _Build]]:
    """Each template of every team namespace on one cluster: its target, its chart and what
    builds its body; worked out once per view (`render` and the README's `files` both ask, and
    each target reads the cohort's PotentialAvailable). A target and its builder are immutable."""
    found: list[tuple[Target, str, _Build]] | None = view.derived.get("templates")
    if found is None:
        found = view.derived["templates"] = list(_plan(view))
    return found


def _plan(view: ClusterView) -> Iterator[tuple[Target, str, _Build]]:
    plans = cluster_queues(view)
    by_namespace = {ns.name: plan for plan in plans for ns in plan.namespaces}
    by_cohort = cohorts(plans)
    for tenant in view.tenants:
        for ns in tenant.namespaces:
            plan = by_namespace.get(ns.name)
            if plan is None:
                continue
            entries = _entries(view, by_cohort[plan.queue.name], plan, tenant.team, ns)
            targets = _targets(view, plan, tenant.team, ns, entries)
            if not targets:
                continue
            if view.cluster.shared_class is not None:
                yield targets[0], f"persistentvolumeclaim-{SHARED_CLAIM}", _shared_claim
            if ns.purpose == "inference" and ns.endpoints:
                for target in _endpoint_targets(view, plan, tenant.team, ns, entries):
                    yield target, target.chart("Deployment"), endpoint_deployment
                continue
            for target in targets:
                yield from _templates(target)


_Entries = dict[str, list[tuple[Pool, Offer, int]]]
"""Per pool the namespace may use, each resource it may request there with the most of it the
namespace's ClusterQueue can ever be admitted."""


def _entries(
    view: ClusterView,
    cohort: Cohort,
    plan: ClusterQueuePlan,
    team: Team,
    ns: Namespace,
) -> _Entries:
    flavors = {f.pool.name for f in plan.flavors}
    by_pool: dict[str, list[tuple[Pool, Offer, int]]] = {}
    holding: dict[str, int] = {}  # what the namespace ResourceQuota allows, per resource
    usable = list(usable_quotas(view.platform, team, ns))
    for _, quota, offer in usable:
        holding[offer.resource] = holding.get(offer.resource, 0) + maximum_holding(offer, quota)
    for pool, _, offer in usable:
        if pool.name not in flavors or pool.cluster != view.cluster.name:
            continue
        most = int(potential_available(plan, cohort, pool.name, offer.resource))
        most = min(most, offer.maximum, holding[offer.resource])
        entries = by_pool.setdefault(pool.name, [])
        if all(o.resource != offer.resource for _, o, _ in entries):
            entries.append((pool, offer, most))
    return by_pool


def _targets(
    view: ClusterView, plan: ClusterQueuePlan, team: Team, ns: Namespace, by_pool: _Entries
) -> list[Target]:
    """Per pool the namespace may use, the offer with the most room (first in the team file on
    a tie); pools where the ClusterQueue can never be admitted one unit are left out."""
    targets = []
    for name in sorted(by_pool):
        entries = by_pool[name]
        pool, offer, most = max(entries, key=lambda e: e[2])  # max keeps the first on a tie
        if most < 1:
            continue
        others = tuple(how_to_request(o) for _, o, _ in entries if o is not offer)
        targets.append(Target(view.cluster, team, ns, plan, pool, offer, most, others))
    return targets


def _endpoint_targets(
    view: ClusterView, plan: ClusterQueuePlan, team: Team, ns: Namespace, by_pool: _Entries
) -> Iterator[Target]:
    """Per endpoint of the namespace, its pool as the namespace can use it: on a MIG pool the
    offer of its profile, elsewhere the offer with the most room. An endpoint on a pool or
    profile the namespace cannot use gets no template: rule endpoint-pool reports it."""
    for endpoint in ns.endpoints:
        entries = [
            entry
            for entry in by_pool.get(endpoint.pool, [])
            if endpoint.profile is None or entry[1].profile == endpoint.profile
        ]
        if not entries:
            continue
        pool, offer, most = max(entries, key=lambda e: e[2])
        if most < 1:
            continue
        others = tuple(how_to_request(o) for _, o, _ in by_pool[pool.name] if o is not offer)
        yield Target(view.cluster, team, ns, plan, pool, offer, most, others, endpoint)


def _templates(target: Target) -> Iterator[tuple[Target, str, _Build]]:
    purpose = target.namespace.purpose
    if purpose == "inference":
        yield target, target.chart("Deployment"), deployment
        return
    yield target, target.chart("Job"), job
    if purpose not in GANG_PURPOSES or not target.kueue:
        return  # Volcano's gang job is the volcano-job-defaults ConfigMap
    if target.whole_gpus and target.most >= 2:
        yield target, target.chart("JobSet"), jobset
        if _trains(target):
            yield target, target.chart("TrainJob"), trainjob
    yield target, target.chart("RayJob"), rayjob


def _trains(target: Target) -> bool:
    """A TrainJob template: in training namespaces of clusters that serve Kubeflow Trainer's
    kinds (whose ClusterTrainingRuntime the training layer installs), on pools that take a
    JobSet, except DRA pools: a TrainJob's runtime patch cannot give its pods resourceClaims
    (Trainer v2.3 `PodSpecPatch`)."""
    return (
        target.namespace.purpose == "training"
        and serves_here(target.cluster, TRAINER_ADDON)
        and not target.dra
    )


def _values(target: Target, chart: str, body: dict[str, Any]) -> Values:
    return Values(
        layer=LAYER,
        chart=chart,
        body=_tree(body),
        source=target.namespace.origin.location,
        folder=f"{FOLDER}/{target.namespace.name}",
    )


def _tree(body: Any) -> Any:
    """A copy that shares no dict or list between two places, so the YAML has no anchors.
    Marshal's version 2 writes no references, so what it reads back shares nothing (a
    template's 150 nodes copy 2.5 times faster than walked); a body holding a type marshal does
    not write exactly (an enum, any subclass) is walked."""
    try:
        return marshal.loads(marshal.dumps(body, 2))
    except ValueError:
        return _walked(body)


def _walked(body: Any) -> Any:
    if isinstance(body, dict):
        return {key: _walked(value) for key, value in body.items()}
    if isinstance(body, list):
        return [_walked(value) for value in body]
    return body


def _shared_claim(target: Target) -> dict[str, Any]:
    """The shared volume the templates mount, on the cluster's shared class: 1Ti, or half the
    namespace's share of the team's storage cap when that is smaller. Created once per
    namespace by the team."""
    size = SHARED_SIZE
    storage = namespace_shares(target.cluster, target.team)[target.namespace.name].get("storage")
    if storage is not None:
        size = min(size, storage / 2)
    meta: dict[str, Any] = {
        "name": SHARED_CLAIM,
        "namespace": target.namespace.name,
        "labels": common_labels(target),
    }
    del meta["labels"][f"{PREFIX}pool"]
    meta["annotations"] = {
        NOTE: "The shared volume of this namespace's workload templates (datasets, models, "
        f"checkpoints), mounted at {SHARED_PATH}; create it once, before the first job "
        "(docs/workload-templates.md)."
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": target.cluster.shared_class,
            "resources": {"requests": {"storage": quantity.memory(size)}},
        },
    }
