"""The cluster as the admission chain reads it: the objects gpuplane renders for it that decide
whether a request is admitted (Namespaces, RBAC, LimitRanges, ResourceQuotas, admission
policies, Kueue's queues, the DRA DeviceClasses and ResourceClaimTemplates Kueue reads),
rendered in memory by the same layers `render` writes them with."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from renderer.admission.apiserver.gate import RenderedCluster
from renderer.layers import queueing, security, tenancy
from renderer.layers.gpu import dra
from renderer.model.operators import BY_ADDON, installed
from renderer.model.platform import Addon, Cluster, Platform
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Values

LAYERS = (security.render, tenancy.render, queueing.render, dra.render)
"""The layers whose objects take part in admission, in the order Argo CD applies them (of the
GPU layer, only its DRA objects: Kueue reads a pod's ResourceClaimTemplates)."""


def rendered_cluster(platform: Platform, cluster: Cluster) -> RenderedCluster:
    """`cluster`'s admission objects, rendered now (tens of milliseconds for the example)."""
    view = ClusterView.of(platform, cluster)
    outputs = [output for render in LAYERS for output in render(view)]
    objects = tuple(o.body for o in outputs if isinstance(o, Manifest))
    values = {o.chart: o.body for o in outputs if isinstance(o, Values) and o.folder == "values"}
    addons = frozenset(operator.addon for operator in installed(cluster))
    return RenderedCluster(cluster.name, cluster.kubernetes_version, objects, values, addons)


def as_if_declared(platform: Platform, cluster: Cluster, addon: str) -> Platform:
    """The platform with `cluster` declaring one more add-on, at the release gpuplane suggests:
    what fit answers for, after its discovery step refused a kind no add-on of the cluster
    serves, so that Kueue's answer is the one the job gets once the platform team declares it
    (the add-on's Kueue integration enabled, the policies covering its kinds)."""
    declared = Addon(
        addon,
        BY_ADDON[addon].release,
        MappingProxyType({}),
        cluster.origin.child("spec", "addons", addon),
    )
    changed = dataclasses.replace(
        cluster, addons=MappingProxyType({**cluster.addons, addon: declared})
    )
    clusters = MappingProxyType({**platform.clusters, cluster.name: changed})
    return dataclasses.replace(platform, clusters=clusters)
