"""The API server's audit Policy (`audit.k8s.io/v1`): who submitted which job, who read which
secret, who exec'd into which pod, which images were run, and every admin action.

It is a file the API server reads at start (`--audit-policy-file`), never an object to apply:
Argo CD syncs every layer folder as a directory of objects and would fail on it. So it is
written beside the objects, like the node bootstrap files, as
`rendered/<cluster>/api-server/audit-policy.yaml`, and no kustomization lists it.

Rendered only where the platform team runs the control plane (`provider: on-prem` or `other`):
EKS, GKE, AKS and CoreWeave's CKS run the API server themselves with an audit policy of their own
and take no custom one, so a file there would be a control that is never in force. There the
provider's own audit log setting is rendered instead (`renderer.layers.security.audit_logging`,
`api-server/audit-logging.yaml`); docs/audit-policy.md says where each file goes.

The rules are matched in order and the first match wins (the upstream policy checker); the
default is `None`, so the last rule is a catch-all at `Metadata`. Secret, ConfigMap and token
bodies are never logged: their rule comes before every rule that logs request bodies.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from renderer.model.choices import Provider
from renderer.model.view import ClusterView
from renderer.output.manifest import Output, Values

LAYER = "security"
FOLDER = "api-server"
FILE = "audit-policy"
API_VERSION = "audit.k8s.io/v1"

SELF_MANAGED: frozenset[Provider] = frozenset({"on-prem", "other"})
"""The providers whose API server flags the platform team sets (`Cluster.provider`)."""

WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ = ("get", "list", "watch")

Resources = Sequence[tuple[str, Sequence[str]]]
"""(API group, resources) pairs; "" is the core group."""

NOISE_URLS = ("/healthz*", "/livez*", "/readyz*", "/version", "/version/")
NOISE_RESOURCES: Resources = (
    ("", ("events",)),
    ("events.k8s.io", ("events",)),
    ("coordination.k8s.io", ("leases",)),
)
"""Health probes, events (already an audit of sorts, and the busiest writes) and the leader and
node leases every controller and kubelet renews every few seconds."""

NODE_READS: Resources = (("", ("nodes", "nodes/status", "pods", "pods/status", "endpoints")),)
"""What kubelets read about themselves and their pods, constantly."""

SECRET_RESOURCES: Resources = (
    ("", ("secrets", "configmaps", "serviceaccounts/token")),
    ("authentication.k8s.io", ("tokenreviews",)),
)
"""Bodies that hold credentials: Secrets, ConfigMaps (where credentials end up by mistake), the
tokens the TokenRequest API returns and the tokens a TokenReview carries. Logged at Metadata:
who, what, when, never the value."""

EXEC_RESOURCES: Resources = (("", ("pods/exec", "pods/attach", "pods/portforward")),)
"""A shell, a terminal or a tunnel into a running pod."""

JOB_RESOURCES: Resources = (
    ("", ("pods", "pods/ephemeralcontainers")),
    ("batch", ("jobs", "cronjobs")),
    ("apps", ("deployments", "statefulsets")),
    ("jobset.x-k8s.io", ("jobsets",)),
    ("trainer.kubeflow.org", ("trainjobs",)),
    ("ray.io", ("rayjobs", "rayclusters", "rayservices")),
    ("kueue.x-k8s.io", ("workloads",)),
    ("batch.volcano.sh", ("jobs",)),
    ("argoproj.io", ("workflows", "cronworkflows")),
)
"""Job submission and image use: the request body of a create or update names the images, the
queue, the priority and the GPUs asked for. Main resources only: the status subresources the
controllers write all day are left to the catch-all."""

ADMIN_RESOURCES: Resources = (
    ("", ("namespaces", "resourcequotas", "limitranges", "serviceaccounts", "nodes")),
    (
        "rbac.authorization.k8s.io",
        ("roles", "rolebindings", "clusterroles", "clusterrolebindings"),
    ),
    ("networking.k8s.io", ("networkpolicies",)),
    (
        "admissionregistration.k8s.io",
        (
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
        ),
    ),
    ("apiextensions.k8s.io", ("customresourcedefinitions",)),
    ("scheduling.k8s.io", ("priorityclasses",)),
    ("certificates.k8s.io", ("certificatesigningrequests", "certificatesigningrequests/approval")),
    (
        "kueue.x-k8s.io",
        (
            "clusterqueues",
            "localqueues",
            "cohorts",
            "resourceflavors",
            "workloadpriorityclasses",
            "admissionchecks",
            "topologies",
        ),
    ),
    ("external-secrets.io", ("secretstores", "clustersecretstores")),
)
"""Admin actions: who may do what (RBAC), the guardrails around a team (namespaces, quotas,
limits, network policy, admission policy, webhooks, queues), the API itself (CRDs), the nodes,
and where secrets come from. Request and response are logged, so the record shows the object
before the server's defaults and after."""


def _rule(
    level: str, resources: Resources, verbs: Sequence[str] = (), user_groups: Sequence[str] = ()
) -> dict[str, Any]:
    rule: dict[str, Any] = {"level": level}
    if user_groups:
        rule["userGroups"] = list(user_groups)
    if verbs:
        rule["verbs"] = list(verbs)
    rule["resources"] = [
        {"group": group, "resources": list(names)} if group else {"resources": list(names)}
        for group, names in resources
    ]
    return rule


def policy_rules() -> list[dict[str, Any]]:
    """The rules in the order the API server tries them (first match wins)."""
    return [
        {"level": "None", "nonResourceURLs": list(NOISE_URLS)},
        _rule("None", NOISE_RESOURCES),
        _rule("None", NODE_READS, READ, user_groups=("system:nodes",)),
        _rule("Metadata", SECRET_RESOURCES),
        _rule("Metadata", EXEC_RESOURCES),
        _rule("RequestResponse", ADMIN_RESOURCES, WRITE),
        _rule("Request", JOB_RESOURCES, WRITE),
        {"level": "Metadata"},
    ]


def audit_policy() -> dict[str, Any]:
    """The whole Policy document, the same for every self-managed cluster."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Policy",
        "metadata": {"name": "gpuplane"},
        "omitStages": ["RequestReceived"],
        "omitManagedFields": True,
        "rules": policy_rules(),
    }


def where_it_goes(provider: str) -> str:
    """A sentence for the file's header: what the platform team does with it."""
    return (
        f"Provider {provider}: pass it to kube-apiserver as --audit-policy-file, with "
        "--audit-log-path (or --audit-webhook-config-file) and the log rotation flags; with "
        "kubeadm, in ClusterConfiguration apiServer.extraArgs and extraVolumes "
        "(docs/audit-policy.md). Not applied to the cluster: no kustomization lists this file."
    )


def render(view: ClusterView) -> Iterator[Output]:
    """The audit Policy file, for clusters whose API server flags the platform team sets."""
    cluster = view.cluster
    if cluster.provider not in SELF_MANAGED:
        return
    yield Values(
        layer=LAYER,
        chart=FILE,
        body=audit_policy(),
        source=cluster.origin.at("spec", "provider"),
        folder=FOLDER,
        comment=where_it_goes(cluster.provider),
    )
