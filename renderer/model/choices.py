"""The enumerated values of the input files, one `Literal` type per field.

Each alias spells out its field's `enum` in schemas/*.json (tests/test_choices.py walks the schemas
and fails when the two differ), so a comparison with a misspelt value (`pool.sharing == "mgi"`) is
a non-overlapping comparison that mypy --strict refuses. The model narrows a schema-valid string
with `one_of`, which checks membership rather than trusting a cast.
"""

from __future__ import annotations

from typing import Final, Literal, TypeVar, get_args

# --- cluster files ------------------------------------------------------------------------------

Environment = Literal["production", "staging", "development"]
Provider = Literal["on-prem", "eks", "gke", "aks", "coreweave", "other"]
Scheduler = Literal["kueue", "volcano"]
SecretStoreProvider = Literal["vault"]
VaultVersion = Literal["v1", "v2"]
EgressProtocol = Literal["TCP", "UDP"]
"""An egress rule's protocol: a cluster's object store, a team's egress, gpuplane.yaml's allowlist."""

# --- pool files ---------------------------------------------------------------------------------

TopologyForm = Literal["sxm", "pcie", "oam", "nvl"]
Interconnect = Literal["nvswitch", "nvlink", "pcie", "infinity-fabric"]
Fabric = Literal["infiniband", "roce", "ethernet", "efa", "none"]
Workload = Literal[
    "distributed-training", "fine-tuning", "online-inference", "batch-inference", "notebooks"
]
Sharing = Literal["full-gpu", "mig", "time-slicing", "mps"]
Exposure = Literal["device-plugin", "dra"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

# --- queue files --------------------------------------------------------------------------------

QueueStrategy = Literal["BestEffortFIFO", "StrictFIFO"]

# --- team files ---------------------------------------------------------------------------------

Purpose = Literal["training", "inference", "batch", "notebooks"]
WorkloadKind = Literal[
    "JobSet",
    "RayJob",
    "RayCluster",
    "RayService",
    "TrainJob",
    "LeaderWorkerSet",
    "AppWrapper",
    "PyTorchJob",
    "TFJob",
    "XGBoostJob",
    "PaddleJob",
    "JAXJob",
    "MPIJob",
]
"""An operator kind a team namespace says it submits (`kinds`): each needs its operator."""
PodSecurityLevel = Literal["baseline", "restricted"]
"""The Pod Security levels a namespace may enforce (`privileged` is never offered)."""
AcceptedUnit = Literal["completed-training-runs", "accepted-model-outputs", "requests-served"]
ServerKind = Literal["vllm", "sglang", "triton"]
"""The model server behind an endpoint (`endpoints[].server`)."""
SloMetric = Literal["ttft", "latency"]
"""What an endpoint's SLO bounds: time to first token, or the whole request."""
ScalingSignal = Literal["queue-depth", "kv-cache", "ttft"]
"""The server's own signal an endpoint's autoscaler follows."""

# --- acceptance evidence files -------------------------------------------------------------------

EvidenceVerdict = Literal["pass", "fail", "not-comparable"]
"""What one acceptance run proved about a pool (`spec.verdict` of acceptance/<cluster>/<pool>.yaml)."""
NodeVerdict = Literal["pass", "fail", "measured"]
"""One node's verdict in an evidence file (`spec.nodes[].verdict`)."""

# --- every value of each, in the schema's order -------------------------------------------------

ENVIRONMENTS: Final[tuple[Environment, ...]] = get_args(Environment)
PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)
SCHEDULERS: Final[tuple[Scheduler, ...]] = get_args(Scheduler)
SECRET_STORE_PROVIDERS: Final[tuple[SecretStoreProvider, ...]] = get_args(SecretStoreProvider)
VAULT_VERSIONS: Final[tuple[VaultVersion, ...]] = get_args(VaultVersion)
EGRESS_PROTOCOLS: Final[tuple[EgressProtocol, ...]] = get_args(EgressProtocol)
TOPOLOGY_FORMS: Final[tuple[TopologyForm, ...]] = get_args(TopologyForm)
INTERCONNECTS: Final[tuple[Interconnect, ...]] = get_args(Interconnect)
FABRICS: Final[tuple[Fabric, ...]] = get_args(Fabric)
WORKLOADS: Final[tuple[Workload, ...]] = get_args(Workload)
SHARINGS: Final[tuple[Sharing, ...]] = get_args(Sharing)
EXPOSURES: Final[tuple[Exposure, ...]] = get_args(Exposure)
TAINT_EFFECTS: Final[tuple[TaintEffect, ...]] = get_args(TaintEffect)
QUEUE_STRATEGIES: Final[tuple[QueueStrategy, ...]] = get_args(QueueStrategy)
PURPOSES: Final[tuple[Purpose, ...]] = get_args(Purpose)
WORKLOAD_KINDS: Final[tuple[WorkloadKind, ...]] = get_args(WorkloadKind)
POD_SECURITY_LEVELS: Final[tuple[PodSecurityLevel, ...]] = get_args(PodSecurityLevel)
ACCEPTED_UNIT_KINDS: Final[tuple[AcceptedUnit, ...]] = get_args(AcceptedUnit)
SERVER_KINDS: Final[tuple[ServerKind, ...]] = get_args(ServerKind)
SLO_METRICS: Final[tuple[SloMetric, ...]] = get_args(SloMetric)
SCALING_SIGNALS: Final[tuple[ScalingSignal, ...]] = get_args(ScalingSignal)
EVIDENCE_VERDICTS: Final[tuple[EvidenceVerdict, ...]] = get_args(EvidenceVerdict)
NODE_VERDICTS: Final[tuple[NodeVerdict, ...]] = get_args(NodeVerdict)

# --- subsets several stages test for ------------------------------------------------------------

TIME_SHARED: Final[tuple[Sharing, ...]] = ("time-slicing", "mps")
"""The sharing modes that hand one GPU to `replicas` pods at once, with no memory isolation."""

INFERENCE_WORKLOADS: Final[tuple[Workload, ...]] = ("online-inference", "batch-inference")

# --- narrowing a schema-valid string -------------------------------------------------------------

Choice = TypeVar("Choice", bound=str)


def one_of(value: object, allowed: tuple[Choice, ...]) -> Choice:
    """`value` as one of `allowed`. The schema already refused anything else, so a miss here is a
    schema and model that disagree (tests/test_choices.py keeps them equal): a bug, not input."""
    for choice in allowed:
        if value == choice:
            return choice
    raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")


def optional_one_of(value: object, allowed: tuple[Choice, ...]) -> Choice | None:
    """`one_of` for a field the file may leave out."""
    return None if value is None else one_of(value, allowed)
