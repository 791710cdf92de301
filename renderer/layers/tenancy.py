"""Tenancy: a namespace per team and purpose, with its RBAC, quota, defaults and network policy.

Design: docs/security.md#the-tenancy-layer-namespaces-roles-quotas-and-network-policy
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from renderer.layers.security import secrets
from renderer.layers.serving.gateway import GATEWAY_NAMESPACE, proxy_pod_labels
from renderer.model.capacity import (
    DRA_DEVICE_CLASS,
    DRA_MIG_DEVICE_CLASS,
    DRA_QUOTA_SUFFIX,
    SHARING_MODES,
    how_to_request,
    maximum_holding,
    pool_offers,
    usable_quotas,
)
from renderer.model.caps import namespace_shares, quota_text
from renderer.model.choices import TIME_SHARED
from renderer.model.names import DEFAULT_POD_SECURITY, PROMETHEUS_NAMESPACE, VOLCANO_ADDON
from renderer.model.operators import (
    APPWRAPPER_ADDON,
    JOBSET_ADDON,
    KUBERAY_ADDON,
    LWS_ADDON,
    MPI_OPERATOR_ADDON,
    TRAINER_ADDON,
    TRAINING_OPERATOR_ADDON,
    serves_here,
)
from renderer.model.platform import Cluster, EgressRule, Namespace, Team
from renderer.model.queue_plans import cluster_queue_name
from renderer.model.serving import ENDPOINT_LABEL, SERVERS
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest, metadata

LAYER = "tenancy"

ROLE_FOR = (
    ("owners", "gpuplane-team-owner"),
    ("members", "gpuplane-team-member"),
    ("viewers", "gpuplane-team-viewer"),
)
"""IdP group lists and gpuplane's ClusterRole each is bound to, inside the namespace only."""

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
_VERB_ORDER = (*READ, *WRITE)

Grant = tuple[str, tuple[str, ...], tuple[str, ...]]
"""API group, resources, verbs."""

BUILT_IN_WORKLOADS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("apps", ("deployments", "deployments/scale", "replicasets", "replicasets/scale")),
    ("apps", ("statefulsets", "statefulsets/scale")),
    ("autoscaling", ("horizontalpodautoscalers",)),
    ("batch", ("cronjobs", "jobs")),
)
"""The workload kinds of Kubernetes itself a member creates, on every cluster."""

OPERATOR_WORKLOADS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (JOBSET_ADDON, "jobset.x-k8s.io", ("jobsets",)),
    (KUBERAY_ADDON, "ray.io", ("rayclusters", "rayjobs", "rayservices")),
    (TRAINER_ADDON, "trainer.kubeflow.org", ("trainjobs",)),
    (LWS_ADDON, "leaderworkerset.x-k8s.io", ("leaderworkersets",)),
    (APPWRAPPER_ADDON, "workload.codeflare.dev", ("appwrappers",)),
    (VOLCANO_ADDON, "batch.volcano.sh", ("jobs",)),
    (
        TRAINING_OPERATOR_ADDON,
        "kubeflow.org",
        ("jaxjobs", "mpijobs", "paddlejobs", "pytorchjobs", "tfjobs", "xgboostjobs"),
    ),
    (MPI_OPERATOR_ADDON, "kubeflow.org", ("mpijobs",)),
)
"""The workload kinds of the operators (`renderer.model.operators`), each granted only on a
cluster that serves its add-on's kinds (`operators.serves_here`): a rule for a kind the cluster
does not serve would let a team write it the day someone installs the CRD by hand, past
everything gpuplane checks for it. The kinds each operator's controller acts on for a team and
Kueue admits (its integration, `renderer.model.integrations`), or Volcano schedules: a Volcano
Job names its Volcano queue itself (`spec.queue`), which RBAC cannot hold to the team's own
queue; admission does (`gpuplane-gpu-queue`). An AppWrapper's controller creates the objects it
wraps with its own rights, but AppWrapper v1.2.1's webhook first asks the API server whether the
member may create each of them in the namespace (`userRBACAdmissionCheck`, on by default:
`SubjectAccessReview` per component) and refuses other namespaces and nested AppWrappers; Kueue
admits the AppWrapper with its pod sets, which the webhook infers for Pods, Deployments,
StatefulSets, Jobs, JobSets, PyTorchJobs, RayClusters and RayJobs and takes as declared for any
other kind (a wrapped TrainJob or LeaderWorkerSet is counted as its AppWrapper says; the
namespace's ResourceQuota still caps its GPUs).

Left out on purpose (docs/security.md#the-tenancy-layer-namespaces-roles-quotas-and-network-policy):
KubeRay's RayCronJob, whose controller KubeRay 1.7.0 runs only behind its alpha `RayCronJob`
feature gate (off in the chart gpuplane installs), so it would do nothing; Kubeflow Trainer's
TrainingRuntime, a pod template of the team's own that Trainer turns into a JobSet no admission
policy holds to a TTL (the JobSet of a TrainJob is the controller's) and that Kueue reads again
after Trainer has taken its copy; ClusterTrainingRuntimes are cluster-scoped, the platform's."""

EXCLUDED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("ray.io", "RayCronJob"),
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
    }
)
"""Kinds an operator serves that no team role grants (OPERATOR_WORKLOADS says why)."""


def workload_kinds(cluster: Cluster) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(API group, resources) of the workload kinds a member creates on the cluster: Kubernetes'
    own, and those of the operators whose kinds it serves."""
    return (
        *BUILT_IN_WORKLOADS,
        *(
            (group, resources)
            for addon, group, resources in OPERATOR_WORKLOADS
            if serves_here(cluster, addon)
        ),
    )


_VIEWER: tuple[Grant, ...] = (
    (
        "",
        (
            *("configmaps", "endpoints", "events", "limitranges", "namespaces"),
            *("persistentvolumeclaims", "pods", "pods/log", "pods/status", "podtemplates"),
            *("replicationcontrollers", "resourcequotas", "serviceaccounts", "services"),
        ),
        READ,
    ),
    ("apps", ("controllerrevisions",), READ),
    ("discovery.k8s.io", ("endpointslices",), READ),
    ("events.k8s.io", ("events",), READ),
    ("external-secrets.io", ("externalsecrets", "secretstores"), READ),
    ("gateway.networking.k8s.io", ("grpcroutes", "httproutes"), READ),
    ("kueue.x-k8s.io", ("localqueues", "workloads"), READ),
    ("metrics.k8s.io", ("pods",), ("get", "list")),
    ("networking.k8s.io", ("ingresses", "networkpolicies"), READ),
    ("policy", ("poddisruptionbudgets",), READ),
    ("rbac.authorization.k8s.io", ("rolebindings", "roles"), READ),
    ("visibility.kueue.x-k8s.io", ("localqueues/pendingworkloads",), ("get",)),
)
"""What every group of a team sees: its workloads and their logs, and the guardrails on it, but
not Secrets."""

_MEMBER: tuple[Grant, ...] = (
    ("", ("configmaps", "persistentvolumeclaims", "pods", "services"), WRITE),
    ("", ("pods/attach", "pods/exec", "pods/portforward"), ("get", "create")),
    ("", ("pods/ephemeralcontainers",), ("update", "patch")),
    ("", ("secrets",), READ),
)
"""What members do beyond viewing: run and change workloads (`workload_kinds`, written and
read)."""

_OWNER: tuple[Grant, ...] = (("", ("secrets",), WRITE),)
"""What owners do beyond members where Secrets do not come from the store."""

_FROM_STORE: tuple[Grant, ...] = (("external-secrets.io", ("externalsecrets",), WRITE),)
"""What members and owners write where Secrets come from the store: the requests for them."""


def team_role_grants(
    role: str, workloads: tuple[tuple[str, tuple[str, ...]], ...], *, from_store: bool = False
) -> tuple[Grant, ...]:
    """The grants of one team ClusterRole (a name of ROLE_FOR), with the cluster's `workloads`
    (`workload_kinds`), on a cluster whose Secrets come from the store or not."""
    grants: list[Grant] = [*_VIEWER, *((g, r, READ) for g, r in workloads)]
    if role in ("gpuplane-team-member", "gpuplane-team-owner"):
        grants += [*_MEMBER, *((g, r, WRITE) for g, r in workloads)]
        if from_store:
            grants += _FROM_STORE
    if role == "gpuplane-team-owner" and not from_store:
        grants += _OWNER
    return tuple(grants)


def _rules(grants: tuple[Grant, ...]) -> list[dict[str, Any]]:
    """The grants as RBAC rules: one per API group and verb set, resources sorted."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for group, resources, granted in grants:
        for resource in resources:
            verbs.setdefault((group, resource), set()).update(granted)
    rules: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), found in verbs.items():
        ordered = tuple(v for v in _VERB_ORDER if v in found)
        rules.setdefault((group, ordered), []).append(resource)
    return [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(ordered)}
        for (group, ordered), resources in sorted(rules.items())
    ]


def team_roles(view: ClusterView) -> Iterator[Manifest]:
    """gpuplane's team ClusterRoles, once per cluster; RoleBindings grant them per namespace."""
    for _, role in ROLE_FOR:
        yield Manifest(
            LAYER,
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(role),
                "rules": _rules(
                    team_role_grants(
                        role,
                        workload_kinds(view.cluster),
                        from_store=secrets.from_store(view.cluster),
                    )
                ),
            },
            view.cluster.origin.location,
        )


DEFAULT_CONTAINER = {"cpu": "1", "memory": "2Gi"}
"""The requests a container that asks for none gets (the LimitRange's `defaultRequest`), so it
counts against the namespace's ResourceQuota instead of being refused by it. There is no default
limit: a LimitRange `default` fills in the limit of a container that set only a request, so one
asking for more memory than the default would get a limit below its request, which the API
server refuses for a Pod and Kueue for a job (`workload.ValidateResources`, "requests must not
exceed its limits", after `handlePodLimitRange`)."""


def render(view: ClusterView) -> Iterator[Manifest]:
    """Every tenancy object of one cluster."""
    yield from team_roles(view)
    for queue in view.queues:
        for prio in queue.priorities:
            yield Manifest(
                LAYER,
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": metadata(f"{queue.name}-{prio.name}", queue=queue.name),
                    "value": prio.value,
                    "globalDefault": False,
                    "preemptionPolicy": "PreemptLowerPriority",
                    "description": prio.description
                    or f"Queue '{queue.name}', priority '{prio.name}'.",
                },
                queue.origin.location,
            )
    for tenant in view.tenants:
        for namespace in tenant.namespaces:
            yield from _namespace_objects(view, tenant, namespace)


def _namespace_objects(view: ClusterView, tenant: Tenant, ns: Namespace) -> Iterator[Manifest]:
    team = tenant.team
    source = ns.origin.location
    common = {"team": team.name, "cost_center": team.cost_center}

    def manifest(kind: str, api_version: str, name: str, body: dict[str, Any]) -> Manifest:
        return Manifest(
            LAYER,
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": metadata(name, ns.name, **common),
                **body,
            },
            source,
        )

    yield Manifest(LAYER, _namespace(view, team, ns), source)
    for field_name, role in ROLE_FOR:
        groups = getattr(team, field_name)
        if groups:
            yield manifest(
                "RoleBinding",
                "rbac.authorization.k8s.io/v1",
                role,
                {
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": role,
                    },
                    "subjects": [
                        {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "Group",
                            "name": view.cluster.group_prefix + g,
                        }
                        for g in groups
                    ],
                },
            )
    yield manifest("ResourceQuota", "v1", "gpuplane", {"spec": {"hard": _quota(view, team, ns)}})
    defaults = {**DEFAULT_CONTAINER, **team.defaults}
    yield manifest(
        "LimitRange",
        "v1",
        "gpuplane-defaults",
        {
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "defaultRequest": {"cpu": defaults["cpu"], "memory": defaults["memory"]},
                    }
                ]
            }
        },
    )
    yield from (
        manifest("NetworkPolicy", "networking.k8s.io/v1", name, {"spec": spec})
        for name, spec in (*_network_policies(view, team), *endpoint_policies(ns))
    )
    yield from secrets.namespace_objects(view, team, ns, LAYER)


def _namespace(view: ClusterView, team: Team, ns: Namespace) -> dict[str, Any]:
    enforce = ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]
    version = f"v{view.cluster.kubernetes_version}"
    meta = metadata(ns.name, team=team.name, cost_center=team.cost_center, purpose=ns.purpose)
    meta["labels"].update(
        {
            "pod-security.kubernetes.io/enforce": enforce,
            "pod-security.kubernetes.io/enforce-version": version,
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/audit-version": version,
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": version,
        }
    )
    annotations = {"gpuplane.dev/gpu-sharing": _sharing_note(view, team, ns)}
    if view.cluster.scheduler == "volcano":
        # Volcano's counterpart of Kueue's `default` LocalQueue: the queue of this namespace's purpose
        annotations["scheduling.volcano.sh/queue-name"] = cluster_queue_name(team.name, ns.purpose)
    if team.description:
        annotations["gpuplane.dev/description"] = team.description
    if team.contact:
        annotations["gpuplane.dev/contact"] = team.contact
    meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def _sharing_note(view: ClusterView, team: Team, ns: Namespace) -> str:
    """What a pod in this namespace gets on each pool it can use, for the people who read it."""
    resources: dict[str, list[str]] = {}
    notes: dict[str, str] = {}
    for pool, _, offer in usable_quotas(view.platform, team, ns):
        resources.setdefault(pool.name, []).append(how_to_request(offer))
        shared = f", {pool.replicas} replicas per GPU" if pool.sharing in TIME_SHARED else ""
        notes[pool.name] = f"{SHARING_MODES[pool.sharing]} of {pool.accelerator}{shared}"
    parts = [
        f"{name}: {notes[name]} (request {' or '.join(sorted(set(resources[name])))})"
        for name in sorted(notes)
    ]
    return "; ".join(parts) or "no GPUs"


def _quota(view: ClusterView, team: Team, ns: Namespace) -> dict[str, str]:
    """GPU keys for every resource the cluster advertises (0 where the team has no quota), so
    GPUs are reachable only through the queue; the rest the namespace's share of the team's
    caps (the team's resources, key by key the cluster's `teamDefaults.resources` where the
    team leaves one out; `renderer.model.caps`)."""
    gpus: dict[str, int] = {
        offer.quota_key: 0 for pool in view.pools for offer in pool_offers(pool)
    }
    if any(pool.exposure == "dra" for pool in view.pools):
        # the NVIDIA DRA driver's own classes: closed, so a claim cannot go around the pools'
        for device_class in (DRA_DEVICE_CLASS, DRA_MIG_DEVICE_CLASS):
            gpus.setdefault(f"{device_class}{DRA_QUOTA_SUFFIX}", 0)
    for _, quota, offer in usable_quotas(view.platform, team, ns):
        gpus[offer.quota_key] += maximum_holding(offer, quota)
    hard = {key: str(value) for key, value in sorted(gpus.items())}
    names = {
        "cpu": "requests.cpu",
        "memory": "requests.memory",
        "storage": "requests.storage",
        "persistentVolumeClaims": "persistentvolumeclaims",
    }
    shares: dict[str, str] = dict(quota_text(namespace_shares(view.cluster, team).get(ns.name, {})))
    for field_name, key in names.items():
        if field_name in shares:
            hard[key] = shares[field_name]
    return hard


def _egress_rule(rule: EgressRule) -> dict[str, Any]:
    return {
        "to": [{"ipBlock": {"cidr": rule.cidr}}],
        "ports": [{"protocol": rule.protocol, "port": port} for port in rule.ports],
    }


def _network_policies(view: ClusterView, team: Team) -> Iterator[tuple[str, dict[str, Any]]]:
    cluster = view.cluster
    yield "default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    yield (
        "allow-dns",
        {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {
                                    "kubernetes.io/metadata.name": cluster.dns_namespace
                                }
                            },
                            "podSelector": {"matchLabels": dict(cluster.dns_pod_selector)},
                        }
                    ],
                    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                }
            ],
        },
    )
    yield (
        "allow-same-namespace",
        {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
            "egress": [{"to": [{"podSelector": {}}]}],
        },
    )
    if cluster.object_store_egress:
        yield (
            "allow-object-store",
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [_egress_rule(r) for r in cluster.object_store_egress],
            },
        )
    if team.egress:
        yield (
            "allow-declared-egress",
            {
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [_egress_rule(r) for r in team.egress],
            },
        )


NAMESPACE_NAME = "kubernetes.io/metadata.name"
"""The label the API server puts on every namespace, its name (immutable, Kubernetes >= 1.22)."""

PROMETHEUS_POD_LABELS: dict[str, str] = {
    "app.kubernetes.io/name": "prometheus",
    "operator.prometheus.io/name": "kube-prometheus-stack-prometheus",
}
"""The Prometheus pods of the kube-prometheus-stack release gpuplane installs: the Prometheus
Operator (v0.86.2, the chart's appVersion) labels each pod of a Prometheus `app.kubernetes.io/name:
prometheus` and `operator.prometheus.io/name: <its name>` (pkg/prometheus/server/operator.go
`makeSelectorLabels`); chart 79.6.1 names its Prometheus `<fullname>-prometheus`
(`_helpers.tpl` `kube-prometheus-stack.prometheus.crname`, `cleanPrometheusOperatorObjectNames`
false), its fullname the release `kube-prometheus-stack`."""


def endpoint_policies(ns: Namespace) -> Iterator[tuple[str, dict[str, Any]]]:
    """Per endpoint of the namespace: its pods (`ENDPOINT_LABEL`) take the serving port from the
    platform Gateway's Envoy proxies only, and the metrics port from Prometheus only; every other
    peer outside the namespace stays denied (`default-deny`). Added to the namespace's others, so
    the namespace's own pods still reach the endpoint (`allow-same-namespace`)."""
    for endpoint in ns.endpoints:
        metrics = SERVERS[endpoint.server].metrics_port_of(endpoint.port)
        yield (
            f"allow-endpoint-{endpoint.name}",
            {
                "podSelector": {"matchLabels": {ENDPOINT_LABEL: endpoint.name}},
                "policyTypes": ["Ingress"],
                "ingress": [
                    _from(GATEWAY_NAMESPACE, proxy_pod_labels(), endpoint.port),
                    _from(PROMETHEUS_NAMESPACE, PROMETHEUS_POD_LABELS, metrics),
                ],
            },
        )


def _from(namespace: str, pod_labels: dict[str, str], port: int) -> dict[str, Any]:
    return {
        "from": [
            {
                "namespaceSelector": {"matchLabels": {NAMESPACE_NAME: namespace}},
                "podSelector": {"matchLabels": dict(pod_labels)},
            }
        ],
        "ports": [{"protocol": "TCP", "port": port}],
    }
