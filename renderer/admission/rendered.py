"""The cluster as the admission chain reads it: the objects gpuplane renders for it that decide
whether a request is admitted (Namespaces, RBAC, LimitRanges, ResourceQuotas, admission
policies, Kueue's queues, the DRA DeviceClasses and ResourceClaimTemplates Kueue reads),
rendered in memory by the same layers `render` writes them with."""

from __future__ import annotations

from renderer.admission.apiserver.gate import RenderedCluster
from renderer.layers import queueing, security, tenancy
from renderer.layers.gpu import dra
from renderer.model.platform import Cluster, Platform
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
    return RenderedCluster(cluster.name, cluster.kubernetes_version, objects, values)
