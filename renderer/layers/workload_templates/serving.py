"""The serving templates: a Deployment per declared endpoint, for its server kind (vLLM, SGLang
or Triton), and a vLLM-style OpenAI-compatible Deployment per pool for inference namespaces that
declare no endpoint. They change with the servers' flags and probes, not with the batch kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from renderer.layers.workload_templates.pieces import (
    PLACEHOLDER_TAG,
    SCRATCH_PATH,
    SHARED_PATH,
    Target,
    container_env,
    container_spec,
    gpu_resources,
    image_ref,
    memory_of,
    metadata,
    pod_spec,
    pod_template,
    queue_labels,
    volumes_and_mounts,
)
from renderer.model.choices import TIME_SHARED, ServerKind
from renderer.model.names import gpu_memory_utilization
from renderer.model.platform import Endpoint
from renderer.model.serving import (
    ENDPOINT_LABEL,
    HTTP_PORT_NAME,
    METRICS_PORT_NAME,
    RELEASE_ANNOTATION,
    ROLLOUT_SURGE,
    SERVERS,
    release_note,
)

VLLM_PORT = 8000


def deployment(target: Target) -> dict[str, Any]:
    """An OpenAI-compatible vLLM server on one GPU unit of the inference pool, ready when its
    /health answers; each pod is admitted by Kueue (pod integration) like a one-pod job."""
    name = target.name("vllm")
    resources, claims = gpu_resources(target, 1)
    volumes, mounts = volumes_and_mounts(target, memory_of(resources), read_only_data=True)
    shared = target.cluster.shared_class is not None
    model = f"{SHARED_PATH}/models/{PLACEHOLDER_TAG}" if shared else PLACEHOLDER_TAG
    probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10}
    container = container_spec(
        "vllm",
        image_ref(target.team, "vllm-openai"),
        resources,
        mounts,
        [*container_env(target), {"name": "HF_HOME", "value": f"{SCRATCH_PATH}/huggingface"}],
        command=["vllm", "serve"],
        args=[
            model,
            f"--served-model-name={PLACEHOLDER_TAG}",
            "--host=0.0.0.0",
            f"--port={VLLM_PORT}",
            "--tensor-parallel-size=1",
            f"--gpu-memory-utilization={gpu_memory_utilization(target.pool)}",
        ],
        ports=[{"name": "http", "containerPort": VLLM_PORT}],
        # loading a model takes minutes: startup allows 10, then liveness takes over
        startupProbe={**probe, "failureThreshold": 60},
        readinessProbe={**probe, "failureThreshold": 3},
        livenessProbe={**probe, "failureThreshold": 6},
    )
    selector = {"app.kubernetes.io/name": name}
    template = pod_template(
        target,
        "Deployment",
        "vllm",
        pod_spec(target, [container], volumes, claims, None),
        **selector,
        **queue_labels(target),
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(target, "Deployment", name),
        "spec": {"replicas": 1, "selector": {"matchLabels": selector}, "template": template},
    }


# --- a template per endpoint ---------------------------------------------------------------------
#
# The release each template follows is the server's one pinned release (model/serving.py
# `Server.release`, where its facts were read in `Server.read_at`); the Deployment names it and
# the upstream image of that release (RELEASE_ANNOTATION). Read at those releases:
#   vLLM v0.34.0     vllm/entrypoints/cli/serve.py, vllm/engine/arg_utils.py,
#                    vllm/entrypoints/serve/instrumentator/{health,metrics}.py,
#                    .../launchers/launcher.py
#   SGLang v0.5.23   sglang/launch_server.py, sglang/srt/arg_groups/fields/{model,serving,
#                    parallel,schedule,observability}.py, sglang/srt/entrypoints/http_server.py,
#                    sglang/srt/managers/tokenizer_manager.py (SignalHandler, sigterm_watchdog)
#   Triton v2.71.0   src/command_line_parser.{cc,h}, src/http_server.cc, src/main.cc
#                    (container 26.07, core r26.07: server build.py)
#
# What each must be told for the telemetry (model/server_metrics.py) to exist: vLLM serves its
# metrics on the serving port with no flag; SGLang only with --enable-metrics; Triton serves
# them on --metrics-port (8002, declared as the `metrics` port) but its latency histogram only
# with --metrics-config=histogram_latencies=true.

TRITON_HISTOGRAMS = "histogram_latencies=true"
"""Triton's `--metrics-config=<setting>=<value>` (src/command_line_parser.cc,
ParseMetricsConfigOption) that turns on nv_inference_first_response_histogram_ms."""

PRESTOP_SECONDS = 15
"""A terminating pod keeps serving this long before the server gets SIGTERM: the gateway and
kube-proxy stop sending it requests only once they see its endpoint go (seconds, not at once)."""
DRAIN_SECONDS = 120
"""Then the server finishes its in-flight requests for at most this long: vLLM's
`--shutdown-timeout` (default 0: abort them), Triton's `--exit-timeout-secs` (default 30);
SGLang drains on SIGTERM with no limit of its own (sigterm_watchdog)."""
GRACE_SECONDS = PRESTOP_SECONDS + DRAIN_SECONDS + 15
"""terminationGracePeriodSeconds: the preStop sleep, the drain, and time to exit."""
STARTUP_SECONDS = 1800
"""How long a replica may take to load its model before the kubelet restarts it: a 70B model
read from the shared filesystem takes many minutes, and liveness waits for the startup probe."""
PROGRESS_DEADLINE_SECONDS = STARTUP_SECONDS + 600
"""A rollout is reported failed (`Progressing=False`) only after a new replica could have
loaded: the default 600 s would call every large model's rollout failed."""
PROBE_PERIOD = 10


@dataclass(frozen=True, slots=True)
class _Probes:
    live_path: str
    live_timeout: int
    """Seconds a liveness answer may take: SGLang's /health waits up to
    SGLANG_HEALTH_CHECK_TIMEOUT (20 s) for its one-token generation."""


_PROBES: Mapping[ServerKind, _Probes] = {
    # /health is the engine's check_health: cheap, answers while busy, 503 once the engine died
    "vllm": _Probes("/health", 5),
    # /health generates one token on an idle server and returns as soon as any output comes
    # back on a busy one; /ready would fail while the server is paused, and kill it
    "sglang": _Probes("/health", 25),
    # the HTTP server is live while the process runs, whatever the models do
    "triton": _Probes("/v2/health/live", 5),
}


def endpoint_deployment(target: Target) -> dict[str, Any]:
    """The Deployment of the target's endpoint: `gpus` units of its pool per replica,
    replicas.min replicas, the server's own command line, ready once the model is loaded, and
    a rolling update that never goes below the replicas it has (maxUnavailable 0, one surge
    replica: rule endpoint-quota counts it). Kueue's deployment integration admits each pod."""
    endpoint = target.endpoint
    assert endpoint is not None
    server = SERVERS[endpoint.server]
    resources, claims = gpu_resources(target, endpoint.gpus)
    volumes, mounts = volumes_and_mounts(target, memory_of(resources), read_only_data=True)
    env = container_env(target)
    if server.llm:  # vLLM and SGLang read weights and tokenizers through the Hugging Face hub
        env.append({"name": "HF_HOME", "value": f"{SCRATCH_PATH}/huggingface"})
    command, args = _command_line(target, endpoint)
    container = container_spec(
        endpoint.server,
        image_ref(target.team, server.image),
        resources,
        mounts,
        env,
        command=command,
        args=args,
        ports=_ports(endpoint),
        **_probes(server.ready_path, _PROBES[endpoint.server]),
        lifecycle={"preStop": {"sleep": {"seconds": PRESTOP_SECONDS}}},
    )
    selector = {ENDPOINT_LABEL: endpoint.name}
    spec = pod_spec(target, [container], volumes, claims, None)
    spec["terminationGracePeriodSeconds"] = GRACE_SECONDS
    template = pod_template(
        target,
        "Deployment",
        endpoint.server,
        spec,
        **{"app.kubernetes.io/name": endpoint.name},
        **selector,
        **queue_labels(target),
    )
    meta = metadata(target, "Deployment", endpoint.name)
    meta["labels"][ENDPOINT_LABEL] = endpoint.name
    meta["annotations"][RELEASE_ANNOTATION] = release_note(server)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": endpoint.min_replicas,
            "selector": {"matchLabels": selector},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": ROLLOUT_SURGE},
            },
            "progressDeadlineSeconds": PROGRESS_DEADLINE_SECONDS,
            "template": template,
        },
    }


def _probes(ready_path: str, probes: _Probes) -> dict[str, Any]:
    """Startup on the ready path (up to STARTUP_SECONDS), then readiness there (out of the
    Service within 15 s of failing) and liveness on the live path (restarted only after a
    minute without an answer)."""
    ready = {"httpGet": {"path": ready_path, "port": HTTP_PORT_NAME}, "periodSeconds": 5}
    return {
        "startupProbe": {
            **ready,
            "periodSeconds": PROBE_PERIOD,
            "failureThreshold": STARTUP_SECONDS // PROBE_PERIOD,
        },
        "readinessProbe": {**ready, "timeoutSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {
            "httpGet": {"path": probes.live_path, "port": HTTP_PORT_NAME},
            "periodSeconds": 20,
            "timeoutSeconds": probes.live_timeout,
            "failureThreshold": 3,
        },
    }


def _ports(endpoint: Endpoint) -> list[dict[str, Any]]:
    server = SERVERS[endpoint.server]
    ports = [{"name": HTTP_PORT_NAME, "containerPort": endpoint.port}]
    if server.metrics_port is not None:
        ports.append({"name": METRICS_PORT_NAME, "containerPort": server.metrics_port})
    return ports


def _command_line(target: Target, endpoint: Endpoint) -> tuple[list[str], list[str]]:
    """The server's command and arguments, from its own CLI at the pinned release."""
    shared = target.cluster.shared_class is not None
    models = f"{SHARED_PATH}/models" if shared else f"{SCRATCH_PATH}/models"
    if endpoint.server == "triton":
        return ["tritonserver"], [
            f"--model-repository={models}",
            "--model-control-mode=explicit",  # only the --load-model models, at start-up
            f"--load-model={endpoint.model}",
            f"--http-port={endpoint.port}",
            f"--metrics-port={SERVERS['triton'].metrics_port}",
            # the latency histogram the SLO and the p95 count from is off by default
            # (core src/metric_model_reporter.cc: only histogram_latencies=true turns it on)
            f"--metrics-config={TRITON_HISTOGRAMS}",
            "--allow-grpc=false",  # the route is HTTP; its 8001 would be one more open port
            f"--exit-timeout-secs={DRAIN_SECONDS}",
        ]
    # the weights: the shared filesystem's models/<model>, else a Hugging Face id to set
    weights = f"{models}/{endpoint.model}" if shared else endpoint.model
    if endpoint.server == "sglang":
        args = [
            f"--model-path={weights}",
            f"--served-model-name={endpoint.model}",
            "--host=0.0.0.0",  # SGLang's default is 127.0.0.1: no probe or client reaches it
            f"--port={endpoint.port}",
            f"--tp-size={endpoint.gpus}",
            "--enable-metrics",  # off by default: /metrics is served only with it
        ]
        if target.pool.sharing in TIME_SHARED and target.pool.replicas > 1:
            args.append(f"--mem-fraction-static={gpu_memory_utilization(target.pool)}")
        return ["python3", "-m", "sglang.launch_server"], args
    return ["vllm", "serve"], [
        weights,
        f"--served-model-name={endpoint.model}",
        "--host=0.0.0.0",
        f"--port={endpoint.port}",
        f"--tensor-parallel-size={endpoint.gpus}",
        f"--gpu-memory-utilization={gpu_memory_utilization(target.pool)}",
        f"--shutdown-timeout={DRAIN_SECONDS}",  # drain in-flight requests on SIGTERM
    ]
