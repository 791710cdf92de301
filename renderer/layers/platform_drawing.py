"""One cluster's declared platform as a drawing in the guide's six layers (PRODUCT.md §1):
control plane; queue layer; platform add-ons; GPU worker pools; workloads per team; network and
data path.

Not a render layer of its own (it writes no Kubernetes object): the cluster README embeds its
Mermaid form (`renderer.layers.readme`) and `gpuplane diagram` writes it as SVG or Mermaid. Every
fact comes from the model (`ClusterView`, the GPU catalog, `renderer.model.capacity`), so the
picture says what the manifests beside it do. docs/diagram.md says what each box shows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from renderer.layers.addon_notes import AddonNote, addon_notes
from renderer.layers.gitops.argocd import ADDON_WAVE, LAYER_WAVES, PROJECT_WAVE
from renderer.model import catalog
from renderer.model.capacity import SHARING_MODES, pool_offers, quota_offer
from renderer.model.choices import TIME_SHARED, Fabric, Interconnect, TopologyForm
from renderer.model.identifiers import escaped
from renderer.model.names import (
    DCGM_EXPORTER_ADDON,
    EXTERNAL_SECRETS_ADDON,
    GPU_OPERATOR_ADDON,
    KUEUE_ADDON,
    SCHEDULER_ADDON,
    VOLCANO_ADDON,
)
from renderer.model.platform import Pool, Queue, Team
from renderer.model.queue_plans import cluster_queues
from renderer.model.view import ClusterView
from renderer.model.words import plural
from renderer.output.drawing import Box, Drawing, Edge, Layer

LAYER_TITLES = (
    "Control plane",
    "Queue layer",
    "Platform add-ons",
    "GPU worker pools",
    "Workloads per team",
    "Network and data path",
)
"""The guide's six layers, top to bottom (PRODUCT.md §1)."""

FABRIC_TITLES: Mapping[Fabric, str] = {
    "infiniband": "InfiniBand",
    "roce": "RoCE",
    "ethernet": "Ethernet",
    "efa": "AWS EFA",
    "none": "No fabric",
}

FORM_TITLES: Mapping[TopologyForm, str] = {"sxm": "SXM", "pcie": "PCIe", "nvl": "NVL", "oam": "OAM"}

INTERCONNECT_TITLES: Mapping[Interconnect, str] = {
    "nvswitch": "NVSwitch",
    "nvlink": "NVLink",
    "pcie": "PCIe",
    "infinity-fabric": "Infinity Fabric",
}


def drawing(view: ClusterView) -> Drawing:
    """The cluster's six layers, each box a declared thing, edges from each pool to the teams
    with quota on it."""
    cluster = view.cluster
    subtitle = (
        f"{cluster.description} · " if cluster.description else ""
    ) + "declared in clusters/, pools/, queues/ and teams/; drawn by gpuplane"
    layers = (
        Layer(LAYER_TITLES[0], "the API server and GitOps", tuple(_control_plane(view))),
        Layer(
            LAYER_TITLES[1],
            "admission, fair share, quotas, preemption",
            tuple(_queue_layer(view)),
        ),
        Layer(LAYER_TITLES[2], "operators and exporters, pinned", tuple(_addons(view))),
        Layer(
            LAYER_TITLES[3],
            "accelerators, sharing and capacity",
            tuple(_pool_box(pool) for pool in view.pools),
        ),
        Layer(LAYER_TITLES[4], "namespaces per purpose and GPU quotas", tuple(_teams(view))),
        Layer(
            LAYER_TITLES[5],
            "fabric, storage, object store and egress",
            tuple(_network(view)),
        ),
    )
    edges = []
    pools = {pool.name for pool in view.pools}
    for tenant in view.tenants:
        for name in dict.fromkeys(q.pool for q in tenant.team.gpus if q.pool in pools):
            edges.append(Edge(f"pool:{name}", f"team:{tenant.team.name}"))
    return Drawing(f"{cluster.name}: the platform in six layers", subtitle, layers, tuple(edges))


# --- 1. control plane ---------------------------------------------------------------------------


def _waves() -> str:
    waves: dict[int, list[str]] = {PROJECT_WAVE: ["projects"], ADDON_WAVE: ["add-ons"]}
    for layer, wave in sorted(LAYER_WAVES.items(), key=lambda item: (item[1], item[0])):
        waves.setdefault(wave, []).append(layer)
    return " → ".join(", ".join(names) for _, names in sorted(waves.items()))


def _control_plane(view: ClusterView) -> Iterator[Box]:
    cluster = view.cluster
    yield Box(
        cluster.name,
        (
            f"Kubernetes {cluster.kubernetes_version}",
            f"{cluster.environment} · provider {cluster.provider}",
            f"scheduler {cluster.scheduler}",
        ),
        key="cluster",
    )
    yield Box(
        "Argo CD",
        (
            f"project {cluster.argocd_project}",
            f"destination {cluster.argocd_destination}",
            f"sync waves: {_waves()}",
        ),
    )
    identity = [f"IdP groups as {cluster.group_prefix or '(no prefix)'}<group>"]
    if cluster.platform_owners:
        identity.append(f"platform owners: {', '.join(map(escaped, cluster.platform_owners))}")
    identity.append(
        f"{plural(len(view.tenants), 'team')}: owners, members, viewers bound per namespace"
    )
    yield Box("Identity and RBAC", tuple(identity))


# --- 2. queue layer -----------------------------------------------------------------------------


def _scheduler_box(view: ClusterView) -> Box:
    cluster = view.cluster
    addon = cluster.addons.get(SCHEDULER_ADDON.get(cluster.scheduler, KUEUE_ADDON))
    version = addon.version if addon is not None and addon.version else "version not pinned"
    if cluster.scheduler == VOLCANO_ADDON:
        return Box(
            f"Volcano {version}",
            (
                f"{plural(len(view.queues), 'parent queue')}, a queue per team",
                "gang scheduling (minAvailable)",
            ),
            key="scheduler",
        )
    plans = cluster_queues(view)
    namespaces = sum(len(t.namespaces) for t in view.tenants)
    return Box(
        f"Kueue {version}",
        (
            f"{plural(len(view.queues), 'cohort')}, "
            f"{plural(len(plans), 'ClusterQueue')} (team x purpose)",
            f"{plural(len(view.pools), 'ResourceFlavor')}, one per pool",
            f"{plural(namespaces, 'LocalQueue')} 'default', one per team namespace",
        ),
        key="scheduler",
    )


def _queue_box(queue: Queue, scheduler: str) -> Box:
    lines = [
        f"{queue.strategy}" + (", fair sharing" if queue.fair_sharing else ""),
        f"pools: {', '.join(queue.pools)}",
    ]
    if queue.preemption:
        lines.append(
            "preemption: " + ", ".join(f"{k} {v}" for k, v in sorted(queue.preemption.items()))
        )
    if queue.wait_for_pods_ready:
        lines.append(f"gang: waitForPodsReady, timeout {queue.gang_timeout or 'default'}")
    lines.append("priorities: " + ", ".join(f"{p.name} {p.value}" for p in queue.priorities))
    lines.append(f"oversubscription {queue.oversubscription:g}")
    if queue.wait_budget_minutes is not None:
        lines.append(f"wait budget {queue.wait_budget_minutes:g} min")
    kind = "queue" if scheduler == VOLCANO_ADDON else "cohort"
    return Box(f"{kind} {queue.name}", tuple(lines), key=f"queue:{queue.name}")


def _queue_layer(view: ClusterView) -> Iterator[Box]:
    yield _scheduler_box(view)
    for queue in view.queues:
        yield _queue_box(queue, view.cluster.scheduler)


# --- 3. add-ons ---------------------------------------------------------------------------------


def _addon_lines(note: AddonNote, view: ClusterView) -> list[str]:
    """The version, how it gets onto the cluster, what of its settings matters here, what it
    does and what needs it."""
    cluster = view.cluster
    addon = cluster.addons[note.addon]
    lines = [note.shown_version, _installed(note)]
    settings = addon.settings
    if note.addon == GPU_OPERATOR_ADDON and "driverManaged" in settings:
        lines.append(
            "installs the driver" if settings["driverManaged"] else "driver from the node image"
        )
    if note.addon == DCGM_EXPORTER_ADDON and settings.get("serviceMonitor"):
        lines.append("scraped through a ServiceMonitor")
    if note.addon == EXTERNAL_SECRETS_ADDON and cluster.secret_store is not None:
        lines.append(f"secrets from {cluster.secret_store.provider}")
    known = {"enabled", "driverManaged", "serviceMonitor"}
    for key, value in sorted(settings.items()):
        if key not in known and isinstance(value, str | int | float | bool):
            lines.append(f"{key}: {_scalar(value)}")
    if note.purpose:
        lines.append(note.purpose)
    if note.reasons:
        lines.append("needed by " + " · ".join(note.reasons))
    return lines


def _installed(note: AddonNote) -> str:
    """How the add-on gets onto the cluster, short enough for a box."""
    if note.how == "application":
        return f"Argo CD Application {note.application}"
    if note.how == "operand":
        return "deployed by the GPU Operator"
    if note.how == "by-hand":
        return "installed by hand (no gpuplane.yaml)"
    return "already running, not installed by gpuplane"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _addons(view: ClusterView) -> Iterator[Box]:
    """A box per add-on the cluster declares, in the README's order."""
    for note in addon_notes(view):
        yield Box(note.title, tuple(_addon_lines(note, view)), key=f"addon:{note.addon}")


# --- 4. pools -----------------------------------------------------------------------------------


def _count(low: int, high: int) -> str:
    return f"{low}" if low == high else f"{low}-{high}"


def _counted(low: int, high: int, unit: str) -> str:
    """`1 node`, `2 nodes`, `1-2 nodes`: a range is plural."""
    return plural(low, unit) if low == high else f"{low}-{high} {unit}s"


def _sharing(pool: Pool) -> str:
    if pool.sharing == "mig":
        layout = ", ".join(f"{p} x{n}" for p, n in pool.mig_layout.items())
        named = f" ({pool.mig_layout_name})" if pool.mig_layout_name else ""
        return f"MIG per GPU{named}: {layout}"
    if pool.sharing in TIME_SHARED:
        return f"{pool.sharing}: {pool.replicas} replicas per GPU"
    return SHARING_MODES.get(pool.sharing, pool.sharing)


def fabric_title(fabric: Fabric) -> str:
    """The network box's title for a fabric: `InfiniBand fabric`, and `No fabric` (never
    "No fabric fabric")."""
    if fabric == "none":
        return FABRIC_TITLES["none"]
    return f"{FABRIC_TITLES.get(fabric, fabric)} fabric"


def fabric_text(pool: Pool) -> str:
    """A pool's fabric: `InfiniBand 8 x 400 Gb/s`, as much as its file says."""
    title = FABRIC_TITLES.get(pool.fabric, pool.fabric)
    if pool.fabric == "none":
        return title
    if pool.fabric_nics is not None and pool.fabric_gbps_per_nic is not None:
        return f"{title} {pool.fabric_nics} x {pool.fabric_gbps_per_nic:g} Gb/s"
    if pool.fabric_nics is not None:
        return f"{title}, {pool.fabric_nics} NICs"
    return title


def _pool_box(pool: Pool) -> Box:
    accelerator = catalog.accelerator(pool.accelerator)
    product = accelerator.product if accelerator is not None else pool.accelerator
    nodes, per = pool.nodes, pool.gpus_per_node
    lines = [
        product,
        f"{_counted(nodes.min, nodes.max, 'node')} x {plural(per, 'GPU')} = "
        f"{_counted(nodes.min * per, nodes.max * per, 'GPU')}",
        _sharing(pool),
    ]
    offers = pool_offers(pool)
    if offers:
        lines.append(
            "capacity: "
            + ", ".join(f"{_count(o.guaranteed, o.maximum)} {o.resource}" for o in offers)
        )
    exposure = "DRA" if pool.exposure == "dra" else "device plugin"
    lines.append(f"{pool.workload} · {exposure}")
    form = FORM_TITLES[pool.topology_form] if pool.topology_form else None
    interconnect = INTERCONNECT_TITLES[pool.interconnect] if pool.interconnect else None
    inside = " · ".join(dict.fromkeys(part for part in (form, interconnect) if part))
    lines.append(f"{inside + ' in a node, ' if inside else ''}{fabric_text(pool)} between")
    lines.append(f"{pool.gpu_hour:g} {pool.currency} per GPU-hour")
    return Box(pool.name, tuple(lines), key=f"pool:{pool.name}")


# --- 5. workloads -------------------------------------------------------------------------------


def _teams(view: ClusterView) -> Iterator[Box]:
    pools = {pool.name: pool for pool in view.pools}
    for tenant in view.tenants:
        team = tenant.team
        lines = [f"queue {team.queue}" + (f" · priority {team.priority}" if team.priority else "")]
        lines.extend(f"{ns.name}: {ns.purpose}" for ns in tenant.namespaces)
        for quota in team.gpus:
            pool = pools.get(quota.pool)
            if pool is None:
                continue
            offer = quota_offer(pool, quota)
            unit = offer.unit if offer is not None else "GPU"
            text = f"{quota.pool}: {plural(quota.nominal, unit)}"
            if quota.borrowing_limit:
                text += f", borrows up to {quota.borrowing_limit} more"
            lines.append(text)
        yield Box(team.name, tuple(lines), key=f"team:{team.name}")


# --- 6. network and data path -------------------------------------------------------------------


def _network(view: ClusterView) -> Iterator[Box]:
    cluster = view.cluster
    fabrics: dict[Fabric, list[str]] = {}
    for pool in view.pools:
        detail = fabric_text(pool).removeprefix(FABRIC_TITLES.get(pool.fabric, pool.fabric))
        detail = detail.strip(" ,") or "declared"
        if pool.rdma is not None:
            detail += f", RDMA {pool.rdma.resource} x{pool.rdma.per_node} per node"
        elif pool.fabric in ("ethernet", "none"):
            detail += ", NCCL over TCP"
        fabrics.setdefault(pool.fabric, []).append(f"{pool.name}: {detail}")
    for fabric, lines in sorted(fabrics.items()):
        yield Box(fabric_title(fabric), tuple(lines))
    storage = [
        f"shared: {cluster.shared_class or 'not declared'} (datasets, checkpoints)",
        f"scratch: {cluster.scratch_class or 'not declared'}",
    ]
    yield Box("Storage classes", tuple(storage))
    store = [cluster.object_store or "not declared"]
    store.extend(
        f"via {rule.cidr} port {', '.join(map(str, rule.ports))}"
        + (f" ({rule.description})" if rule.description else "")
        for rule in cluster.object_store_egress
    )
    yield Box("Object store", tuple(store))
    egress = [
        "default deny, same namespace allowed",
        f"DNS: {cluster.dns_namespace} "
        + ",".join(f"{k}={v}" for k, v in cluster.dns_pod_selector.items()),
    ]
    for tenant in view.tenants:
        if tenant.team.egress:
            rules = ", ".join(
                f"{rule.cidr}:{','.join(map(str, rule.ports))}" for rule in tenant.team.egress
            )
            egress.append(f"{tenant.team.name}: {rules}")
    yield Box("Egress", tuple(egress))


# --- the README's pictures: one per queue -------------------------------------------------------


def queue_drawings(view: ClusterView) -> tuple[Drawing, ...]:
    """One small picture per queue for the generated README: the queue's pools in one column
    and, beside each pool, a box per team with quota on it (what it holds there), an edge from
    the pool to each of its boxes.

    The six-layer drawing is too wide for a README (GitHub scales a Mermaid picture to its
    column, about 830 px, and the add-on layer alone is a row of fourteen boxes). Here each
    column keeps its width whatever the number of teams, short lines keep the text at least
    12 px there, and the edges form a tree (each box has one pool), so Mermaid's layout draws
    none through a box: an edge from every pool to every team, as the six-layer drawing has,
    runs behind the other pools' boxes (tests/test_diagram.py measures both in Chromium)."""
    pools = {pool.name: pool for pool in view.pools}
    kind = "queue" if view.cluster.scheduler == VOLCANO_ADDON else "cohort"
    pictures = []
    for queue in view.queues:
        shown = [pools[name] for name in queue.pools if name in pools]
        members = [t.team for t in view.tenants if t.team.queue == queue.name]
        holdings = [
            _holding_box(team, pool)
            for pool in shown
            for team in members
            if any(q.pool == pool.name for q in team.gpus)
        ]
        edges = tuple(Edge(f"pool:{box.key.split(':')[2]}", box.key) for box in holdings)
        idle = [team.name for team in members if not any(q.pool in queue.pools for q in team.gpus)]
        strategy = queue.strategy + (", fair sharing" if queue.fair_sharing else "")
        layers: tuple[Layer, ...] = (
            Layer("pools", "", tuple(_short_pool_box(pool) for pool in shown)),
            Layer("teams", "", tuple(holdings)),
        )
        if idle:
            layers += (Layer("no GPU quota", "", (Box("no GPU quota", tuple(idle)),)),)
        pictures.append(Drawing(f"{kind} {queue.name}", strategy, layers, edges))
    return tuple(pictures)


def _short_sharing(pool: Pool) -> str:
    if pool.sharing == "mig":
        return "MIG " + ", ".join(f"{p} x{n}" for p, n in pool.mig_layout.items())
    if pool.sharing in TIME_SHARED:
        return f"{pool.sharing}, {pool.replicas} per GPU"
    return SHARING_MODES.get(pool.sharing, pool.sharing)


def _short_pool_box(pool: Pool) -> Box:
    accelerator = catalog.accelerator(pool.accelerator)
    product = accelerator.product if accelerator is not None else pool.accelerator
    nodes = pool.nodes
    lines = (
        product,
        f"{_counted(nodes.min, nodes.max, 'node')} x {plural(pool.gpus_per_node, 'GPU')}",
        _short_sharing(pool),
    )
    return Box(f"pool {pool.name}", lines, key=f"pool:{pool.name}")


def _holding_box(team: Team, pool: Pool) -> Box:
    """What a team holds on one pool: a line per quota entry, `(+n)` what it may borrow."""
    lines = []
    for quota in team.gpus:
        if quota.pool != pool.name:
            continue
        offer = quota_offer(pool, quota)
        if offer is not None and offer.profile:
            text = f"{quota.nominal} x {offer.profile}"
        else:
            text = plural(quota.nominal, "replica" if pool.sharing in TIME_SHARED else "GPU")
        if quota.borrowing_limit:
            text += f" (+{quota.borrowing_limit})"
        lines.append(text)
    return Box(f"team {team.name}", tuple(lines), key=f"holds:{team.name}:{pool.name}")
