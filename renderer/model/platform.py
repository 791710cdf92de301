"""The typed, immutable platform: what the input files mean, each object knowing where it came from.

Built only from documents that passed their schema, so the constructors here can trust shapes and
types; cross-object meaning is the policy's job. Nothing here imports a YAML, template or CLI
library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from renderer.findings.diagnostics import Location, PathKey, SourceMap
from renderer.model import catalog
from renderer.model.choices import (
    ACCEPTED_UNIT_KINDS,
    EGRESS_PROTOCOLS,
    ENVIRONMENTS,
    EXPOSURES,
    FABRICS,
    INTERCONNECTS,
    POD_SECURITY_LEVELS,
    PROVIDERS,
    PURPOSES,
    QUEUE_STRATEGIES,
    SCALING_SIGNALS,
    SCHEDULERS,
    SECRET_STORE_PROVIDERS,
    SERVER_KINDS,
    SHARINGS,
    SLO_METRICS,
    TAINT_EFFECTS,
    TIME_SHARED,
    TOPOLOGY_FORMS,
    VAULT_VERSIONS,
    WORKLOAD_KINDS,
    WORKLOADS,
    AcceptedUnit,
    EgressProtocol,
    Environment,
    Exposure,
    Fabric,
    Interconnect,
    PodSecurityLevel,
    Provider,
    Purpose,
    QueueStrategy,
    ScalingSignal,
    Scheduler,
    SecretStoreProvider,
    ServerKind,
    Sharing,
    SloMetric,
    TaintEffect,
    TopologyForm,
    VaultVersion,
    Workload,
    WorkloadKind,
    one_of,
    optional_one_of,
)
from renderer.model.evidence import BaseSizes, Evidence
from renderer.model.metrics import ALERT_DEFAULTS, DEFAULT_ACCEPTED_UNIT
from renderer.model.serving import DEFAULT_SIGNAL, DEFAULT_TARGET, SERVERS, seconds


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an object (or a part of one) was declared; `at` finds any field below it."""

    source: SourceMap
    path: PathKey = ()

    @property
    def file(self) -> str:
        return self.source.file

    @property
    def location(self) -> Location:
        return self.source.locate(self.path)

    def at(self, *fields: str | int) -> Location:
        return self.source.locate((*self.path, *fields))

    def key(self, *fields: str | int) -> Location:
        return self.source.locate_key((*self.path, *fields))

    def child(self, *fields: str | int) -> Origin:
        return Origin(self.source, (*self.path, *fields))


@dataclass(frozen=True, slots=True)
class EgressRule:
    cidr: str
    ports: tuple[int, ...]
    protocol: EgressProtocol
    description: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class Addon:
    """A platform add-on the cluster runs; `version` is the pinned chart or image version."""

    name: str
    version: str | None
    settings: Mapping[str, Any]
    origin: Origin


@dataclass(frozen=True, slots=True)
class SecretStore:
    """Where team secrets live (`spec.secretStore`): a Vault KV mount, and the Kubernetes auth
    role and path of each team, `{team}` standing for the team's name."""

    provider: SecretStoreProvider
    server: str
    mount_path: str
    version: VaultVersion
    auth_mount_path: str
    role: str
    path_template: str
    origin: Origin

    def role_of(self, team: str) -> str:
        return self.role.replace("{team}", team)

    def path_of(self, team: str) -> str:
        return self.path_template.replace("{team}", team)


@dataclass(frozen=True, slots=True)
class AcceptanceWindow:
    """`spec.acceptance.window` of a cluster: when the weekly suite takes each tested pool whole
    (a five-field UTC cron schedule) and for how many hours."""

    schedule: str
    hours: int


DEFAULT_EVIDENCE_MAX_AGE_DAYS = 30
"""A cluster's `spec.acceptance.evidenceMaxAgeDays` when it sets none."""


@dataclass(frozen=True, slots=True)
class Cluster:
    name: str
    kubernetes_version: str
    environment: Environment
    provider: Provider
    scheduler: Scheduler
    argocd_destination: str
    argocd_project: str
    group_prefix: str
    platform_owners: tuple[str, ...]
    addons: Mapping[str, Addon]
    shared_class: str | None
    scratch_class: str | None
    object_store: str | None
    object_store_egress: tuple[EgressRule, ...]
    dns_namespace: str
    dns_pod_selector: Mapping[str, str]
    description: str
    origin: Origin
    secret_store: SecretStore | None = None
    reserved_namespaces: tuple[str, ...] = ()
    """`spec.reservedNamespaces`: more names no team may declare on the cluster."""
    team_default_resources: Mapping[str, str | int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """`spec.teamDefaults.resources`: the ResourceQuota caps of a team that sets none itself."""
    evidence_max_age_days: int = DEFAULT_EVIDENCE_MAX_AGE_DAYS
    """`spec.acceptance.evidenceMaxAgeDays`: evidence older than this lets no pool grow."""
    acceptance_window: AcceptanceWindow | None = None
    """`spec.acceptance.window`: when the suite may take whole pools; None: it only borrows."""

    @property
    def production(self) -> bool:
        return self.environment == "production"

    def runs(self, addon: str) -> bool:
        """Whether gpuplane installs the add-on here: declared, and not `enabled: false`."""
        declared = self.addons.get(addon)
        return declared is not None and declared.settings.get("enabled", True) is not False

    @property
    def minor(self) -> int:
        return int(self.kubernetes_version.split(".")[1])


@dataclass(frozen=True, slots=True)
class NodeCount:
    """Nodes in a pool: guarantees count `min`, borrowing may reach `max` (equal when fixed)."""

    min: int
    max: int


@dataclass(frozen=True, slots=True)
class GrowthException:
    """`spec.growthException`: a pool may grow without passing evidence until `until` (a
    YYYY-MM-DD day, UTC, inclusive), on `by`'s word, for `reason`."""

    by: str
    reason: str
    until: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: TaintEffect


@dataclass(frozen=True, slots=True)
class Rdma:
    """How pods get a pool's RDMA fabric: the extended resource its RDMA device plugin
    advertises, and how many of it a pod that takes a whole node requests (a pod with part of a
    node asks for its share, rounded up: `renderer.model.capacity.rdma_per_pod`)."""

    resource: str
    per_node: int
    origin: Origin


@dataclass(frozen=True, slots=True)
class Pool:
    name: str
    cluster: str
    accelerator: str
    gpus_per_node: int
    nodes: NodeCount
    topology_form: TopologyForm | None
    interconnect: Interconnect | None
    topology_levels: tuple[str, ...]
    fabric: Fabric
    rdma: Rdma | None
    workload: Workload
    sharing: Sharing
    mig_layout: Mapping[str, int]
    mig_layout_name: str | None  # `mig.layout: all-balanced`: resolved into mig_layout above
    replicas: int
    rename_by_default: bool
    exposure: Exposure
    taints: tuple[Taint, ...]
    node_labels: Mapping[str, str]
    host_cpus: int | None
    host_memory: str | None
    gpu_hour: float
    currency: str
    acceptance: Mapping[str, float]
    acceptance_image: Mapping[str, str]
    image: Mapping[str, str]
    description: str
    origin: Origin
    topology_peer: bool = False
    """Topology-aware because a ClusterQueue may list it beside a pool whose levels go above the
    node (`renderer.model.topology.with_topology_peers`), though its own levels do not."""
    alerts: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType(dict(ALERT_DEFAULTS))
    )
    """The pool's alert thresholds, `spec.alerts` over `ALERT_DEFAULTS` (a runbook only when the
    file gives one)."""
    fabric_nics: int | None = None
    """`spec.fabric.nics`: fabric NICs per node, when the file says (the diagram shows it)."""
    fabric_gbps_per_nic: float | None = None
    """`spec.fabric.gbpsPerNic`: each fabric NIC's line rate in Gbit/s, when the file says."""
    production_image: str | None = None
    """`spec.productionImage`: the image the pool's teams run, which the suite's torch probes run
    in and the capacity gate wants evidence from; None when the file names none."""
    growth_exception: GrowthException | None = None
    """`spec.growthException`: the pool may grow without passing evidence until its date."""

    @property
    def size(self) -> int:
        """The nodes the pool may have: `nodes`, or `nodes.max` when autoscaled. What the
        acceptance evidence must cover and what a capacity change grows."""
        return self.nodes.max


@dataclass(frozen=True, slots=True)
class Priority:
    name: str
    value: int
    default: bool
    description: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    cluster: str
    pools: tuple[str, ...]
    strategy: QueueStrategy
    fair_sharing: bool
    preemption: Mapping[str, str]
    wait_for_pods_ready: bool
    gang_timeout: str | None
    priorities: tuple[Priority, ...]
    oversubscription: float
    mixing_priority: str | None
    description: str
    origin: Origin
    wait_budget_minutes: float | None = None
    """`spec.waitBudgetMinutes`; None lets each team ClusterQueue take its pools' budget."""

    def priority(self, name: str) -> Priority | None:
        return next((p for p in self.priorities if p.name == name), None)

    @property
    def default_priority(self) -> Priority | None:
        return next((p for p in self.priorities if p.default), None)


@dataclass(frozen=True, slots=True)
class Slo:
    """An endpoint's objective: 95% of requests within `p95_seconds` (`slo`)."""

    metric: SloMetric
    p95_seconds: float
    text: str
    """The objective as the file spells it (`500ms`), for messages and alert texts."""
    origin: Origin


@dataclass(frozen=True, slots=True)
class Autoscaling:
    """The server's own signal the endpoint's autoscaler holds at `target` per replica."""

    signal: ScalingSignal
    target: float
    origin: Origin


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One model an inference namespace serves behind the platform Gateway (`endpoints[]`).
    Defaults are resolved here (the server's port, the SLO's metric, the autoscaling signal), so
    every stage reads the effective value."""

    name: str
    server: ServerKind
    model: str
    pool: str
    profile: str | None
    gpus: int
    port: int
    host: str
    path: str
    min_replicas: int
    max_replicas: int
    slo: Slo
    autoscaling: Autoscaling
    origin: Origin


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    cluster: str
    purpose: Purpose
    pod_security: PodSecurityLevel | None
    origin: Origin
    resources: Mapping[str, str | int] = field(default_factory=dict, hash=False)
    """This namespace's share of the team's caps (`resources`), where the file sets one."""
    kinds: tuple[WorkloadKind, ...] = ()
    """`kinds`: operator kinds the team submits here beyond its templates."""
    endpoints: tuple[Endpoint, ...] = ()
    """`endpoints`: the models this (inference) namespace serves behind the platform Gateway."""
    production_image: str | None = None
    """`productionImage`: this namespace's own production image, when it is not its pools'."""


@dataclass(frozen=True, slots=True)
class GpuQuota:
    """A team's quota on one pool (on a MIG pool: on one profile), in the pool's advertised units."""

    pool: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    profile: str | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class Team:
    name: str
    description: str
    owners: tuple[str, ...]
    members: tuple[str, ...]
    viewers: tuple[str, ...]
    codeowners: tuple[str, ...]
    cost_center: str
    contact: str
    queue: str
    priority: str | None
    namespaces: tuple[Namespace, ...]
    gpus: tuple[GpuQuota, ...]
    resources: Mapping[str, str | int]
    defaults: Mapping[str, str]
    images: tuple[str, ...]
    egress: tuple[EgressRule, ...]
    retention: Mapping[str, str]
    origin: Origin
    accepted_unit: AcceptedUnit = DEFAULT_ACCEPTED_UNIT
    """What one unit of the team's useful output is (`spec.acceptedUnit.kind`)."""
    accepted_per: int = 1
    """`gpuplane cost` reports the cost of this many units (`spec.acceptedUnit.per`)."""
    domains: tuple[str, ...] = ()
    """`spec.domains`: the DNS domains the team's endpoint hosts lie in."""


@dataclass(frozen=True, slots=True)
class AllowedEgress:
    """An entry of gpuplane.yaml's `spec.allowlists.egress`: a network team egress may lie in,
    the ports it may open there (empty: any) and its protocol (None: TCP or UDP)."""

    cidr: str
    ports: tuple[int, ...]
    protocol: EgressProtocol | None
    description: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class WaitGrowth:
    """gpuplane.yaml's `spec.simulate.p90WaitGrowth`: how much a change may make a team's
    simulated p90 wait grow before `gpuplane diff --trace` rates it high. It is over the bound
    when it grows by more than `seconds` and by more than `ratio` times the base's p90
    (docs/repository-settings.md)."""

    seconds: float = 600.0
    ratio: float = 0.25


@dataclass(frozen=True, slots=True)
class Repository:
    """This repository's own settings: where Argo CD reads it, who owns the platform files,
    and what team files may ask for."""

    repo_url: str
    target_revision: str
    argocd_namespace: str
    codeowners: tuple[str, ...]
    origin: Origin
    schemas: tuple[str, ...] = ()
    """CRD folders or files, relative to the repository, for checking custom kinds."""
    allowed_images: tuple[str, ...] = ()
    """`spec.allowlists.images`: the registry paths team `images` prefixes must lie within
    (none: no team may list a prefix)."""
    allowed_egress: tuple[AllowedEgress, ...] = ()
    """`spec.allowlists.egress`: the networks team `egress` rules must lie within (none: no
    team may open egress)."""
    wait_growth: WaitGrowth = WaitGrowth()
    """`spec.simulate.p90WaitGrowth`: the bound on a team's simulated p90 wait growth."""


Changes = Mapping[str, frozenset[int] | None]
"""What a change touches: input file -> the 1-based lines it added or edited (None: all)."""


@dataclass(frozen=True, slots=True)
class Platform:
    """Every valid object, by name, plus the names of objects whose files failed to load.

    `broken` lets reference rules stay quiet about a name whose file already has a finding, so a
    single typo does not cascade into a dozen reports. `changed` holds the input files (as
    `Origin.file` names them) that the change being checked adds or edits, each with the lines
    it changed (None: the whole file, e.g. a new one), empty when unknown: a finding several
    files share is placed on the entry the change touched (`is_changed`).
    """

    clusters: Mapping[str, Cluster]
    pools: Mapping[str, Pool]
    teams: Mapping[str, Team]
    queues: Mapping[str, Queue]
    broken: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    repository: Repository | None = None
    changed: Changes = field(default_factory=lambda: MappingProxyType({}))
    documents: Mapping[str, tuple[Any, SourceMap]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Every input file that parsed, as loaded (file -> plain data and where each value was
    written), schema-valid or not: for rules that must see every string of every file
    (`secret-literal`)."""
    evidence: Mapping[tuple[str, str], Evidence] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """Each schema-valid evidence file, by (its folder: the cluster, its name: the pool)."""
    base_sizes: BaseSizes | None = None
    """Each pool's size at the base of the change (`renderer.inputs.changes.base_sizes`), for
    the capacity gate; None when nobody asked git (the folder is not a git work tree, or the
    platform was built without a change to check): then the gate has no change to judge."""

    def is_broken(self, kind: str, name: str) -> bool:
        return (kind, name) in self.broken

    def is_changed(self, origin: Origin, *fields: PathKey) -> bool:
        """Whether the change touches a line of what `origin` declares: of each field below it
        (`("spec", "nodes")`) that is written, or of the whole entry when no field is named.

        Line-precise, so rewording a description does not make a file's quotas "changed". A
        field the file does not write (one the change removed, say) has no line and does not
        count; when only the file is known to change (None: a new file), everything in it does.
        """
        if origin.file not in self.changed:
            return False
        lines = self.changed[origin.file]
        if lines is None:
            return True
        return any(_written_on(origin, f) & lines for f in (fields or ((),)))


def _written_on(origin: Origin, field_path: PathKey) -> frozenset[int]:
    """The lines on which the value at `field_path` below `origin`, or any key or value inside
    it, is written; empty when the file does not write it."""
    prefix = (*origin.path, *field_path)
    n = len(prefix)
    found = (*origin.source.values.items(), *origin.source.keys.items())
    return frozenset(at.line for path, at in found if path[:n] == prefix and at.line > 0)


# --- construction from schema-valid data ------------------------------------------------------


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(sorted((mapping or {}).items())))


def _egress(items: list[dict[str, Any]], origin: Origin) -> tuple[EgressRule, ...]:
    return tuple(
        EgressRule(
            cidr=item["cidr"],
            ports=tuple(item["ports"]),
            protocol=one_of(item.get("protocol", "TCP"), EGRESS_PROTOCOLS),
            description=item.get("description", ""),
            origin=origin.child(index),
        )
        for index, item in enumerate(items)
    )


def cluster_from(data: Mapping[str, Any], source: SourceMap) -> Cluster:
    spec = data["spec"]
    origin = Origin(source)
    argocd = spec.get("argocd", {})
    storage = spec.get("storage", {})
    dns = spec.get("dns", {})
    addons = {
        name: Addon(
            name=name,
            version=settings.get("version"),
            settings=_frozen({k: v for k, v in settings.items() if k != "version"}),
            origin=origin.child("spec", "addons", name),
        )
        for name, settings in sorted(spec.get("addons", {}).items())
    }
    return Cluster(
        name=data["metadata"]["name"],
        kubernetes_version=spec["kubernetesVersion"],
        environment=one_of(spec["environment"], ENVIRONMENTS),
        provider=one_of(spec["provider"], PROVIDERS),
        scheduler=one_of(spec.get("scheduler", "kueue"), SCHEDULERS),
        argocd_destination=argocd.get("destination", "https://kubernetes.default.svc"),
        argocd_project=argocd.get("project", "platform"),
        group_prefix=spec.get("identity", {}).get("groupPrefix", ""),
        platform_owners=tuple(spec.get("platformOwners", ())),
        addons=MappingProxyType(addons),
        shared_class=storage.get("sharedClass"),
        scratch_class=storage.get("scratchClass"),
        object_store=storage.get("objectStore"),
        object_store_egress=_egress(
            storage.get("objectStoreEgress", []),
            origin.child("spec", "storage", "objectStoreEgress"),
        ),
        dns_namespace=dns.get("namespace", "kube-system"),
        dns_pod_selector=_frozen(dns.get("podSelector", {"k8s-app": "kube-dns"})),
        description=spec.get("description", ""),
        origin=origin,
        secret_store=_secret_store(spec.get("secretStore"), origin.child("spec", "secretStore")),
        reserved_namespaces=tuple(spec.get("reservedNamespaces", ())),
        team_default_resources=_frozen(spec.get("teamDefaults", {}).get("resources", {})),
        evidence_max_age_days=spec.get("acceptance", {}).get(
            "evidenceMaxAgeDays", DEFAULT_EVIDENCE_MAX_AGE_DAYS
        ),
        acceptance_window=_window(spec.get("acceptance", {}).get("window")),
    )


def _window(window: Mapping[str, Any] | None) -> AcceptanceWindow | None:
    return None if window is None else AcceptanceWindow(window["schedule"], window["hours"])


def _secret_store(store: Mapping[str, Any] | None, origin: Origin) -> SecretStore | None:
    if store is None:
        return None
    vault = store["vault"]
    return SecretStore(
        provider=one_of(store["provider"], SECRET_STORE_PROVIDERS),
        server=vault["server"],
        mount_path=vault.get("mountPath", "secret"),
        version=one_of(vault.get("version", "v2"), VAULT_VERSIONS),
        auth_mount_path=vault.get("authMountPath", "kubernetes"),
        role=vault.get("role", "gpuplane-{team}"),
        path_template=vault.get("pathTemplate", "teams/{team}"),
        origin=origin,
    )


def pool_from(data: Mapping[str, Any], source: SourceMap) -> Pool:
    spec = data["spec"]
    nodes = spec["nodes"]
    count = (
        NodeCount(nodes, nodes) if isinstance(nodes, int) else NodeCount(nodes["min"], nodes["max"])
    )
    topology = spec.get("topology", {})
    sharing = one_of(spec["sharing"], SHARINGS)
    sharing_block = spec.get("timeSlicing" if sharing == "time-slicing" else "mps", {})
    cost = spec["cost"]
    fabric = spec.get("fabric", {})
    origin = Origin(source)
    rdma = fabric.get("rdma")
    mig_layout = spec.get("mig", {}).get("layout", {})
    return Pool(
        name=data["metadata"]["name"],
        cluster=spec["cluster"],
        accelerator=spec["accelerator"],
        gpus_per_node=spec["gpusPerNode"],
        nodes=count,
        topology_form=optional_one_of(topology.get("form"), TOPOLOGY_FORMS),
        interconnect=optional_one_of(topology.get("interconnect"), INTERCONNECTS),
        topology_levels=tuple(topology.get("levels", ())),
        fabric=one_of(fabric.get("type", "none"), FABRICS),
        rdma=None
        if rdma is None
        else Rdma(rdma["resource"], rdma["perNode"], origin.child("spec", "fabric", "rdma")),
        workload=one_of(spec["workload"], WORKLOADS),
        sharing=sharing,
        mig_layout=_frozen(catalog.resolve_mig_layout(spec["accelerator"], mig_layout)),
        mig_layout_name=mig_layout if isinstance(mig_layout, str) else None,
        replicas=sharing_block.get("replicas", 1) if sharing in TIME_SHARED else 1,
        rename_by_default=bool(sharing_block.get("renameByDefault", False)),
        exposure=one_of(spec.get("exposure", "device-plugin"), EXPOSURES),
        taints=tuple(
            Taint(t["key"], t.get("value", ""), one_of(t["effect"], TAINT_EFFECTS))
            for t in spec.get("taints", [])
        ),
        node_labels=_frozen(spec.get("labels", {})),
        host_cpus=spec.get("host", {}).get("cpus"),
        host_memory=spec.get("host", {}).get("memory"),
        gpu_hour=float(cost["gpuHour"]),
        currency=cost.get("currency", "USD"),
        acceptance=_frozen({k: v for k, v in spec["acceptance"].items() if k != "nodeImage"}),
        acceptance_image=_frozen(spec["acceptance"].get("nodeImage", {})),
        image=_frozen(spec.get("image", {})),
        description=spec.get("description", ""),
        origin=origin,
        alerts=_frozen({**ALERT_DEFAULTS, **spec.get("alerts", {})}),
        fabric_nics=fabric.get("nics"),
        fabric_gbps_per_nic=fabric.get("gbpsPerNic"),
        production_image=spec.get("productionImage"),
        growth_exception=_growth_exception(
            spec.get("growthException"), origin.child("spec", "growthException")
        ),
    )


def _growth_exception(data: Mapping[str, Any] | None, origin: Origin) -> GrowthException | None:
    if data is None:
        return None
    return GrowthException(data["by"], data["reason"], data["until"], origin)


def queue_from(data: Mapping[str, Any], source: SourceMap) -> Queue:
    spec = data["spec"]
    origin = Origin(source)
    gang = spec.get("gang", {})
    return Queue(
        name=data["metadata"]["name"],
        cluster=spec["cluster"],
        pools=tuple(spec["pools"]),
        strategy=one_of(spec.get("strategy", "BestEffortFIFO"), QUEUE_STRATEGIES),
        fair_sharing=bool(spec.get("fairSharing", False)),
        preemption=_frozen(spec.get("preemption", {})),
        wait_for_pods_ready=bool(gang.get("waitForPodsReady", False)),
        gang_timeout=gang.get("timeout"),
        priorities=tuple(
            Priority(
                name=p["name"],
                value=p["value"],
                default=bool(p.get("default", False)),
                description=p.get("description", ""),
                origin=origin.child("spec", "priorities", index),
            )
            for index, p in enumerate(spec["priorities"])
        ),
        oversubscription=float(spec.get("oversubscription", 1.0)),
        mixing_priority=spec.get("mixing", {}).get("inferencePriority"),
        description=spec.get("description", ""),
        origin=origin,
        wait_budget_minutes=spec.get("waitBudgetMinutes"),
    )


def team_from(data: Mapping[str, Any], source: SourceMap) -> Team:
    spec = data["spec"]
    origin = Origin(source)
    return Team(
        name=data["metadata"]["name"],
        description=spec.get("description", ""),
        owners=tuple(spec["owners"]),
        members=tuple(spec.get("members", ())),
        viewers=tuple(spec.get("viewers", ())),
        codeowners=tuple(spec.get("codeowners", ())),
        cost_center=spec["costCenter"],
        contact=spec.get("contact", ""),
        queue=spec["queue"],
        priority=spec.get("priority"),
        namespaces=tuple(
            Namespace(
                name=ns["name"],
                cluster=ns["cluster"],
                purpose=one_of(ns["purpose"], PURPOSES),
                pod_security=optional_one_of(ns.get("podSecurity"), POD_SECURITY_LEVELS),
                origin=origin.child("spec", "namespaces", index),
                resources=_frozen(ns.get("resources", {})),
                kinds=tuple(one_of(kind, WORKLOAD_KINDS) for kind in ns.get("kinds", ())),
                endpoints=tuple(
                    endpoint_from(item, origin.child("spec", "namespaces", index, "endpoints", at))
                    for at, item in enumerate(ns.get("endpoints", ()))
                ),
                production_image=ns.get("productionImage"),
            )
            for index, ns in enumerate(spec["namespaces"])
        ),
        gpus=tuple(
            GpuQuota(
                pool=q["pool"],
                nominal=q["nominal"],
                borrowing_limit=q.get("borrowingLimit"),
                lending_limit=q.get("lendingLimit"),
                profile=q.get("profile"),
                origin=origin.child("spec", "gpus", index),
            )
            for index, q in enumerate(spec.get("gpus", []))
        ),
        resources=_frozen(spec.get("resources", {})),
        defaults=_frozen(spec.get("defaults", {})),
        images=tuple(spec.get("images", ())),
        egress=_egress(spec.get("egress", []), origin.child("spec", "egress")),
        retention=_frozen(spec.get("retention", {})),
        origin=origin,
        accepted_unit=one_of(
            spec.get("acceptedUnit", {}).get("kind", DEFAULT_ACCEPTED_UNIT), ACCEPTED_UNIT_KINDS
        ),
        accepted_per=spec.get("acceptedUnit", {}).get("per", 1),
        domains=tuple(spec.get("domains", ())),
    )


def endpoint_from(data: Mapping[str, Any], origin: Origin) -> Endpoint:
    """An endpoint with its server's defaults filled in (model/serving.py)."""
    server = SERVERS[one_of(data["server"], SERVER_KINDS)]
    slo = data["slo"]
    scaling = data.get("autoscaling", {})
    return Endpoint(
        name=data["name"],
        server=server.kind,
        model=data["model"],
        pool=data["pool"],
        profile=data.get("profile"),
        gpus=data.get("gpus", 1),
        port=data.get("port", server.port),
        host=data["host"],
        path=data.get("path", "/"),
        min_replicas=data["replicas"]["min"],
        max_replicas=data["replicas"]["max"],
        slo=Slo(
            metric=one_of(slo.get("metric", server.slo_metrics[0]), SLO_METRICS),
            p95_seconds=seconds(slo["p95"]),
            text=slo["p95"],
            origin=origin.child("slo"),
        ),
        autoscaling=Autoscaling(
            signal=one_of(scaling.get("signal", DEFAULT_SIGNAL), SCALING_SIGNALS),
            target=float(scaling.get("target", DEFAULT_TARGET)),
            origin=origin.child("autoscaling") if scaling else origin,
        ),
        origin=origin,
    )


def repository_from(data: Mapping[str, Any], source: SourceMap) -> Repository:
    spec = data["spec"]
    origin = Origin(source)
    allowlists = spec.get("allowlists", {})
    egress_origin = origin.child("spec", "allowlists", "egress")
    return Repository(
        repo_url=spec["repoURL"],
        target_revision=spec.get("targetRevision", "main"),
        argocd_namespace=spec.get("argocdNamespace", "argocd"),
        codeowners=tuple(spec["codeowners"]),
        origin=origin,
        schemas=tuple(spec.get("schemas", ())),
        allowed_images=tuple(allowlists.get("images", ())),
        allowed_egress=tuple(
            AllowedEgress(
                cidr=item["cidr"],
                ports=tuple(item.get("ports", ())),
                protocol=optional_one_of(item.get("protocol"), EGRESS_PROTOCOLS),
                description=item.get("description", ""),
                origin=egress_origin.child(index),
            )
            for index, item in enumerate(allowlists.get("egress", []))
        ),
        wait_growth=_wait_growth(spec.get("simulate", {}).get("p90WaitGrowth", {})),
    )


def _wait_growth(data: Mapping[str, Any]) -> WaitGrowth:
    default = WaitGrowth()
    return WaitGrowth(
        seconds=float(data.get("seconds", default.seconds)),
        ratio=float(data.get("ratio", default.ratio)),
    )


BUILDERS = {
    "Cluster": cluster_from,
    "Pool": pool_from,
    "Queue": queue_from,
    "Team": team_from,
}
