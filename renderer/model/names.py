"""Names and defaults that more than one stage relies on.

Policy checks what layers render, and commands read both; a constant they share lives here, in
the model, so that no stage imports another only for a name.
"""

from __future__ import annotations

from decimal import Decimal

from renderer.model.choices import TIME_SHARED, PodSecurityLevel, Purpose, Scheduler
from renderer.model.platform import Pool

# --- add-ons: the keys of a cluster file's `addons` mapping ------------------------------------

GPU_OPERATOR_ADDON = "gpuOperator"
DCGM_EXPORTER_ADDON = "dcgmExporter"
KUEUE_ADDON = "kueue"
VOLCANO_ADDON = "volcano"
ARGO_WORKFLOWS_ADDON = "argoWorkflows"
PROMETHEUS_ADDON = "prometheusStack"
EXTERNAL_SECRETS_ADDON = "externalSecrets"
# The operators a cluster installs because its kinds, pools or other add-ons need them
# (`renderer.model.operators.OPERATORS` says what each serves and why).
JOBSET_ADDON = "jobset"
KUBERAY_ADDON = "kuberay"
TRAINER_ADDON = "trainer"
LWS_ADDON = "lws"
APPWRAPPER_ADDON = "appwrapper"
NETWORK_OPERATOR_ADDON = "networkOperator"
DRA_DRIVER_ADDON = "draDriver"
OPENCOST_ADDON = "opencost"
TRAINING_OPERATOR_ADDON = "trainingOperator"
MPI_OPERATOR_ADDON = "mpiOperator"
KEDA_ADDON = "keda"
ENVOY_GATEWAY_ADDON = "envoyGateway"
ENVOY_GATEWAY_NAMESPACE = "envoy-gateway-system"
"""Where Envoy Gateway's chart runs its controller, and where the controller runs the Envoy proxy
pods of every Gateway (its default: `GatewayNamespaceMode` off)."""
EXTERNAL_SECRETS_NAMESPACE = "external-secrets"
"""Where the External Secrets Operator's chart runs (its controller, webhook and cert controller)."""

SCHEDULER_ADDON: dict[Scheduler, str] = {"kueue": KUEUE_ADDON, "volcano": VOLCANO_ADDON}
"""The add-on that installs each `scheduler:` a cluster can declare."""

# --- which operator's CRDs check a custom kind (the schema store's folders) ---------------------

ARGO_CD_OPERATOR = "argocd"
"""Argo CD's CRDs: no cluster file pins Argo CD (it runs before gpuplane's Applications do)."""

SCHEMA_OPERATORS = {
    "kueue.x-k8s.io": KUEUE_ADDON,
    "nvidia.com": GPU_OPERATOR_ADDON,
    "scheduling.volcano.sh": VOLCANO_ADDON,
    "batch.volcano.sh": VOLCANO_ADDON,
    "bus.volcano.sh": VOLCANO_ADDON,
    "flow.volcano.sh": VOLCANO_ADDON,
    "topology.volcano.sh": VOLCANO_ADDON,
    "monitoring.coreos.com": PROMETHEUS_ADDON,
    "argoproj.io": ARGO_WORKFLOWS_ADDON,
    "external-secrets.io": EXTERNAL_SECRETS_ADDON,
    "jobset.x-k8s.io": JOBSET_ADDON,
    "ray.io": KUBERAY_ADDON,
    "trainer.kubeflow.org": TRAINER_ADDON,
    "leaderworkerset.x-k8s.io": LWS_ADDON,
    "workload.codeflare.dev": APPWRAPPER_ADDON,
    # the training operator v1's kinds; its MPIJob v1 and the MPI Operator's v2beta1 share the
    # CRD name mpijobs.kubeflow.org, and a cluster declares one of the two (operator-conflict)
    "kubeflow.org": TRAINING_OPERATOR_ADDON,
    "mellanox.com": NETWORK_OPERATOR_ADDON,
    "resource.nvidia.com": DRA_DRIVER_ADDON,
    "keda.sh": KEDA_ADDON,
    "gateway.networking.k8s.io": ENVOY_GATEWAY_ADDON,
    "gateway.envoyproxy.io": ENVOY_GATEWAY_ADDON,
}
"""The add-on whose release pins the CRDs of each API group (the groups of
`renderer.model.operators.OPERATORS`' kinds; OpenCost serves none)."""
ARGO_CD_KINDS = frozenset({"Application", "ApplicationSet", "AppProject"})

OPERATOR_TITLES = {
    KUEUE_ADDON: "Kueue",
    GPU_OPERATOR_ADDON: "GPU Operator",
    VOLCANO_ADDON: "Volcano",
    PROMETHEUS_ADDON: "kube-prometheus-stack",
    ARGO_WORKFLOWS_ADDON: "Argo Workflows chart",
    ARGO_CD_OPERATOR: "Argo CD",
    EXTERNAL_SECRETS_ADDON: "External Secrets Operator",
    JOBSET_ADDON: "JobSet",
    KUBERAY_ADDON: "KubeRay",
    TRAINER_ADDON: "Kubeflow Trainer",
    LWS_ADDON: "LeaderWorkerSet",
    APPWRAPPER_ADDON: "AppWrapper",
    TRAINING_OPERATOR_ADDON: "Kubeflow Training Operator",
    MPI_OPERATOR_ADDON: "MPI Operator",
    NETWORK_OPERATOR_ADDON: "NVIDIA Network Operator",
    DRA_DRIVER_ADDON: "NVIDIA DRA Driver for GPUs",
    OPENCOST_ADDON: "OpenCost",
    KEDA_ADDON: "KEDA",
    ENVOY_GATEWAY_ADDON: "Envoy Gateway",
}
"""How findings, `schemas list` and the platform drawing name each operator (the new operators'
titles are `OPERATORS`' own; a test holds them equal)."""


def schema_operator(group: str, kind: str) -> str:
    """The schema store's operator for a custom kind: the add-on that installs its CRDs, Argo CD,
    or, for any other operator, its API group."""
    if group == "argoproj.io" and kind in ARGO_CD_KINDS:
        return ARGO_CD_OPERATOR
    return SCHEMA_OPERATORS.get(group, group)


# --- where the platform's components run (GPU Operator: `renderer.model.nvidia.NAMESPACE`) -----
# The layers install and address each component here, and `renderer.model.reserved` keeps every
# one of them out of a team's reach: one constant each, read by both.

ARGO_CD_NAMESPACE = "argocd"
"""Argo CD's namespace when gpuplane.yaml names none (`spec.argocdNamespace`)."""
KUEUE_NAMESPACE = "kueue-system"
VOLCANO_NAMESPACE = "volcano-system"
ARGO_WORKFLOWS_NAMESPACE = "argo"
"""The argo-workflows chart's controller (the suites' Workflows run in SUITE_NAMESPACE)."""
PROMETHEUS_NAMESPACE = "monitoring"
"""kube-prometheus-stack's namespace."""
KEDA_NAMESPACE = "keda"
"""KEDA's operator, metrics API server and admission webhooks (the chart's documented namespace)."""
SUITE_NAMESPACE = "gpuplane-acceptance"
"""The acceptance and benchmark suites' Workflows, their service account and results."""


# --- tenancy ------------------------------------------------------------------------------------

DEFAULT_POD_SECURITY: dict[Purpose, PodSecurityLevel] = {
    "training": "baseline",
    "notebooks": "baseline",
    "inference": "restricted",
    "batch": "restricted",
}
"""The Pod Security level each purpose enforces; a namespace may only make it stricter."""

# --- the acceptance suites' probe Jobs -----------------------------------------------------------

SUITE_JOBS_NAMESPACE = "gpuplane-acceptance-jobs"
"""Where the suites' probe Jobs run, admitted by Kueue through the platform's own ClusterQueue:
a platform namespace no team group is bound in (docs/acceptance-suites.md)."""
SUITE_COST_CENTER = "platform"
"""The cost centre of the suite Jobs' namespace and of the Jobs themselves."""
COST_CENTER_LABEL = "gpuplane.dev/cost-center"
"""On every team namespace and on the suite Jobs' namespace: Kueue's managedJobsNamespaceSelector."""


def suite_cluster_queue_name(queue: str) -> str:
    """The platform ClusterQueue of a cohort (a gpuplane Queue) the suites' Jobs borrow through,
    and its LocalQueue in SUITE_JOBS_NAMESPACE. A team's are `<team>-<purpose>`, whose purpose is
    never `acceptance`, so no team's ClusterQueue can take the name."""
    return f"{queue}-acceptance"


WINDOW_QUEUE_PREFIX = "gpuplane-window-"


def window_cluster_queue_name(pool: str) -> str:
    """The standalone ClusterQueue (no cohort) that admits a pool's suite Jobs during the
    cluster's acceptance window, and its LocalQueue in SUITE_JOBS_NAMESPACE: its quota is the
    whole pool, never lent, and counted in no team's sums (docs/acceptance-window.md). A team's
    ClusterQueues are `<team>-<purpose>`, and `window-<pool>` is no purpose."""
    return f"{WINDOW_QUEUE_PREFIX}{pool}"


WINDOW_TAINT_KEY = "gpuplane.dev/acceptance-window"
"""The NoSchedule taint the window's `reserve` step puts on a pool's nodes (value: the run's
Workflow uid); only the window's suite Jobs tolerate it."""
NODE_LOSS_TAINT_KEY = "gpuplane.dev/acceptance-node-loss"
"""The NoSchedule taint the `node-loss` step puts on the node it takes away (tolerated by
nothing of the suite's), so the Job's replacement pod lands on another node."""


# --- clean-up -----------------------------------------------------------------------------------

DEFAULT_FINISHED_JOBS = "7d"
"""How long a finished Job is kept when the team's `retention.finishedJobs` says nothing: the
templates set it as `ttlSecondsAfterFinished`, the security layer's admission policy caps it."""
MAX_FINISHED_JOBS = "30d"
"""The longest `retention.finishedJobs` a team may ask for (policy rule `retention-bounds`)."""

# --- Kueue's labels on a workload -------------------------------------------------------------

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"

# --- serving ------------------------------------------------------------------------------------

GPU_MEMORY_UTILIZATION = Decimal("0.90")
"""The share of a GPU's memory a vLLM server takes up front on a GPU of its own."""


def gpu_memory_utilization(pool: Pool) -> str:
    """vLLM takes this fraction of the GPU's memory up front: on time-shared GPUs, where
    `replicas` pods share one GPU's memory with no isolation, each may take its share only."""
    share = GPU_MEMORY_UTILIZATION
    if pool.sharing in TIME_SHARED and pool.replicas > 1:
        share = GPU_MEMORY_UTILIZATION / pool.replicas
    return str(share.quantize(Decimal("0.01")))


BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
"""The capabilities the Pod Security Standards' baseline level lets a container add (the
"Capabilities" control of the baseline profile); anything else, `CAP_`-prefixed spellings
included, is refused there (k8s.io/pod-security-admission policy/check_capabilities_baseline.go
`capabilities_allowed_1_0`). The security layer's host policy and fit's Pod Security step read
it."""
