"""What gpuplane knows of each model server an endpoint may run (`endpoints[].server`), and the
names the serving layer, the autoscaler and the telemetry share.

One row per server: its default serving port, where it serves its metrics, the path that
answers only once the model is loaded, the image name the Deployment template pulls from the
team's registry, whether it speaks the OpenAI-compatible LLM protocol (an InferencePool fits),
the autoscaling signals it exposes and the latency its SLO can bound, and the one release
gpuplane follows: the Deployment template's command line and probes, and every metric name,
label and bucket bound in `renderer.model.server_metrics`, were read at that release (`read_at`).
Sources, per field, in docs/serving.md.

The recorded series are the contract between the observability layer's recording rules (which
compute them from each server's own metric names, with gpuplane's labels) and the consumers
(the autoscaler's queries, the panel, the SLO alert): each carries the labels in
ENDPOINT_SERIES_LABELS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType

from renderer.model.choices import ScalingSignal, ServerKind, SloMetric


@dataclass(frozen=True, slots=True)
class Server:
    kind: ServerKind
    title: str
    port: int
    """The default serving (HTTP) port."""
    metrics_port: int | None
    """Where Prometheus reads /metrics; None: the serving port."""
    metrics_path: str
    ready_path: str
    """Answers 200 only once the model is loaded and the server takes requests."""
    image: str
    """The image's name under the team's registry prefix."""
    llm: bool
    """An OpenAI-compatible LLM server: the Inference Extension's InferencePool fits it."""
    signals: tuple[ScalingSignal, ...]
    slo_metrics: tuple[SloMetric, ...]
    """The latencies an SLO may bound; the first is the default."""
    release: str
    """The server release the template and the telemetry follow (the project's own tag)."""
    upstream_image: str
    """The project's image of that release: what a team mirrors under its registry prefix."""
    read_at: str
    """Where the release's facts were read: the source tree at that release."""

    def metrics_port_of(self, port: int) -> int:
        """The metrics port of an endpoint serving on `port`."""
        return port if self.metrics_port is None else self.metrics_port


SERVERS: Mapping[ServerKind, Server] = MappingProxyType(
    {
        "vllm": Server(
            kind="vllm",
            title="vLLM",
            port=8000,
            metrics_port=None,
            metrics_path="/metrics",
            # vLLM v0.34.0: the server listens only once the engine is built (model loaded,
            # launchers/api_server/entry.py), then /health answers 200, 503 when the engine died
            # (serve/instrumentator/health.py)
            ready_path="/health",
            image="vllm-openai",
            llm=True,
            signals=("queue-depth", "kv-cache", "ttft"),
            slo_metrics=("ttft", "latency"),
            release="v0.34.0",
            # the project publishes vllm/vllm-openai:v<version> for each release
            upstream_image="docker.io/vllm/vllm-openai:v0.34.0",
            read_at="PyPI vllm==0.34.0 (wheel vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64)",
        ),
        "sglang": Server(
            kind="sglang",
            title="SGLang",
            port=30000,
            metrics_port=None,
            metrics_path="/metrics",
            # SGLang v0.5.23 http_server.py: /ready answers 200 once the server is Up (model
            # loaded, warm-up request done) and neither paused nor draining after SIGTERM;
            # /health runs a one-token generation on an idle server (a liveness check)
            ready_path="/ready",
            image="sglang",
            llm=True,
            signals=("queue-depth", "kv-cache", "ttft"),
            slo_metrics=("ttft", "latency"),
            release="v0.5.23",
            upstream_image="docker.io/lmsysorg/sglang:v0.5.23",
            read_at="PyPI sglang==0.5.23 (wheel sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64)",
        ),
        "triton": Server(
            kind="triton",
            title="Triton Inference Server",
            port=8000,
            metrics_port=8002,
            metrics_path="/metrics",
            # Triton v2.71.0: with --strict-readiness (default true) /v2/health/ready answers 200
            # only when every model loaded is ready (src/command_line_parser.cc)
            ready_path="/v2/health/ready",
            image="tritonserver",
            llm=False,
            signals=("queue-depth",),
            slo_metrics=("latency",),
            release="v2.71.0",
            # server build.py at v2.71.0: release_version 2.71.0 is triton_container_version
            # 26.07, and a release build takes core, common and backend at branch r26.07
            upstream_image="nvcr.io/nvidia/tritonserver:26.07-py3",
            read_at=(
                "triton-inference-server/server tag v2.71.0 (819ee37770df), "
                "triton-inference-server/core branch r26.07"
            ),
        ),
    }
)

RELEASE_ANNOTATION = "gpuplane.dev/server-release"
"""On an endpoint's Deployment template: the server release its command line, probes and
telemetry follow, and the upstream image of that release."""


def release_note(server: Server) -> str:
    """The value of RELEASE_ANNOTATION for `server`."""
    return f"{server.title} {server.release}: mirror {server.upstream_image} and use its tag"


HTTP_PORT_NAME = "http"
"""The name of the serving port on an endpoint's pods (the Service's targetPort)."""
METRICS_PORT_NAME = "metrics"
"""The name of the metrics port where it is not the serving port (Triton's 8002); vLLM and
SGLang serve /metrics on `http`."""


def metrics_port_name(server: Server) -> str:
    """The container port name a PodMonitor scrapes on the server's pods."""
    return HTTP_PORT_NAME if server.metrics_port is None else METRICS_PORT_NAME


ROLLOUT_SURGE = 1
"""Replicas a rolling update adds above the current count (the Deployment template's
`maxSurge`, with `maxUnavailable: 0`): a rollout at replicas.max runs max + 1 replicas for a
while, and the quota must hold them (rule endpoint-quota)."""

DEFAULT_SIGNAL: ScalingSignal = "queue-depth"
DEFAULT_TARGET = 4.0
"""Without `autoscaling`: hold the waiting requests at four per replica."""

ENDPOINT_LABEL = "gpuplane.dev/endpoint"
"""On an endpoint's pods, Service, route, PDB, autoscaler and PodMonitor: its name."""

ENDPOINT_SERIES_LABELS = ("team", "namespace", "endpoint", "pool", "server")
"""The labels every recorded endpoint series carries."""

SIGNAL_SERIES: Mapping[ScalingSignal, str] = MappingProxyType(
    {
        "queue-depth": "gpuplane_endpoint:requests_waiting:sum",
        "kv-cache": "gpuplane_endpoint:kv_cache_usage:sum",
        "ttft": "gpuplane_endpoint:time_to_first_token_seconds:p95",
    }
)
"""The recorded series each autoscaling signal reads: waiting requests summed over the
endpoint's pods, KV-cache use (0-1 per pod) summed over them, and the p95 time to first token
over the last five minutes."""

_UNITS = {"ms": Decimal("0.001"), "s": Decimal(1)}


def seconds(text: str) -> float:
    """`500ms` or `2s` (the schema's pattern) in seconds."""
    unit = "ms" if text.endswith("ms") else "s"
    return float(Decimal(text.removesuffix(unit)) * _UNITS[unit])
