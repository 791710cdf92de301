"""Each model server's own Prometheus metric names, as its source defines them, and what
gpuplane's recording rules make of them (`renderer.layers.observability.endpoint_rules`).

Read at the release each server's Deployment template runs (`renderer.model.serving.SERVERS`:
`release`, `read_at`), so that a recording rule never reads a name the pinned server no longer
exports (it would record nothing: an empty panel, an SLO alert that never fires):
- vLLM v0.34.0 (the PyPI wheel): `vllm/v1/metrics/loggers.py`, class `PrometheusStatLogger`,
  labels `model_name` and `engine` on every engine metric, and `vllm/v1/metrics/buckets.py`
  (the default bounds, one family per histogram). The inter-token histogram is
  `vllm:inter_token_latency_seconds` (the v0.10 line's `vllm:time_per_output_token_seconds` is
  gone); the KV cache gauge `vllm:kv_cache_usage_perc` (`vllm:gpu_cache_usage_perc` is gone).
  prometheus_client appends `_total` to a Counter's name on exposition (`vllm:prompt_tokens` is
  scraped as `vllm:prompt_tokens_total`). vLLM counts no failed request in its engine metrics
  (`vllm:request_success` counts finished ones by `finished_reason`); its API server mounts
  prometheus-fastapi-instrumentator (`vllm/entrypoints/serve/instrumentator/metrics.py`,
  `attach_router`: `Instrumentator(excluded_handlers=[...]).add()`, the defaults), whose
  `http_requests_total` (prometheus-fastapi-instrumentator 8.0.0, the wheel's lower bound,
  `metrics.default`) counts responses by `method`, `status` and `handler`, with the status
  grouped as `2xx`, `4xx`, `5xx` (`should_group_status_codes=True`, middleware.py): a `5xx` is
  the server failing a request. All on the serving port's /metrics, with no flag
  (`--disable-log-stats` off by default, vllm/engine/arg_utils.py).
- SGLang v0.5.23 (the PyPI wheel): `sglang/srt/observability/metrics_collector.py`, classes
  `SchedulerMetricsCollector` (gauges; labels `model_name`, `engine_type`, `tp_rank`, ...,
  recorded by TP rank 0 only without `--enable-metrics-for-all-schedulers`) and
  `TokenizerMetricsCollector` (counters, histograms; labels `model_name`, `engine_type`, and
  `is_streaming` on the token counters, the request counter, the TTFT and e2e histograms;
  default buckets when `--bucket-*` flags are not given). SGLang serves them on the serving
  port's /metrics only when started with `--enable-metrics` (`srt/entrypoints/http_server.py`,
  `add_prometheus_middleware`; `srt/arg_groups/fields/observability.py`, default False).
- Triton v2.71.0: triton-inference-server/core `src/metrics.cc` and
  `src/metric_model_reporter.{h,cc}`, and triton-inference-server/server
  `docs/user_guide/metrics.md` at v2.71.0. A v2.71.0 build takes core at branch r26.07
  (server `build.py`: container 26.07, default repo-tag rYY.MM). The stored core ends at
  main 73aad7c (2026-06-09), without r26.07: read there and at r26.06, which differ in no
  metric file, and checked against the server's metrics.md and qa/L0_metrics, identical at
  r26.06 (v2.70.0) and v2.71.0. prometheus-cpp adds no `_total`. Triton's only latency histogram is
  `nv_inference_first_response_histogram_ms` (milliseconds, default bounds 100, 500, 2000,
  5000; only with `--metrics-config=histogram_latencies=true`, a model's `model_metrics`
  may change the bounds): for a model that answers once (not decoupled) the first response is
  the whole request, so it measures request latency. Triton has no token counters, no
  time-to-first-token or inter-token histogram, no KV cache and no running-requests gauge:
  those stay absent for a Triton endpoint (the panel shows no series, never a made-up one).
  Its batch size is inferences per model execution (`nv_inference_count` over
  `nv_inference_exec_count`). All on the metrics port (8002) with no flag but the histogram's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from renderer.model.choices import ServerKind, SloMetric
from renderer.model.serving import SIGNAL_SERIES

VLLM_SOURCE = "vllm-project/vllm@v0.34.0 vllm/v1/metrics/loggers.py, buckets.py"
VLLM_HTTP_SOURCE = (
    "vllm-project/vllm@v0.34.0 vllm/entrypoints/serve/instrumentator/metrics.py (attach_router)"
)
SGLANG_SOURCE = "sgl-project/sglang@v0.5.23 python/sglang/srt/observability/metrics_collector.py"
TRITON_SOURCE = "triton-inference-server/core@r26.07 src/metrics.cc (server v2.71.0)"
TRITON_HISTOGRAM_SOURCE = (
    "triton-inference-server/core@r26.07 src/metric_model_reporter.h (server v2.71.0)"
)


@dataclass(frozen=True, slots=True)
class Histogram:
    """A latency histogram: `<name>_bucket{le=...}`, `<name>_count`, `<name>_sum`."""

    name: str
    buckets: tuple[float, ...]
    """The upper bounds, in the metric's own unit, as the source sets them."""
    source: str
    seconds_per_unit: float = 1.0
    """1 for a histogram of seconds, 0.001 for one of milliseconds."""

    def bounds_seconds(self) -> tuple[float, ...]:
        return tuple(round(b * self.seconds_per_unit, 9) for b in self.buckets)

    def bound_of(self, seconds: float) -> float | None:
        """The bucket bound (in the metric's unit) equal to `seconds`, if there is one."""
        for bound, secs in zip(self.buckets, self.bounds_seconds(), strict=True):
            if abs(secs - seconds) < 1e-9:
                return bound
        return None


@dataclass(frozen=True, slots=True)
class Series:
    """A counter or gauge, with the label matchers that pick the samples meant."""

    name: str
    source: str
    matchers: str = ""
    """Extra matchers inside the braces (`status=~"5.."`), or none."""


@dataclass(frozen=True, slots=True)
class ServerMetrics:
    """What one server exposes for each figure the panel shows; None: it has no such metric."""

    kind: ServerKind
    ttft: Histogram | None
    inter_token: Histogram | None
    latency: Histogram | None
    prompt_tokens: Series | None
    generation_tokens: Series | None
    requests: Series
    """Requests the server completed (counter)."""
    errors: Series
    """Requests the server failed (counter)."""
    kv_cache: Series | None
    """KV-cache use of one pod, 0 to 1 (gauge)."""
    waiting: Series
    """Requests queued, not yet running, in one pod (gauge)."""
    running: Series | None
    """Requests in the running batch of one pod (gauge): the batch size."""
    executions: tuple[Series, Series] | None = None
    """Without a running gauge: (inferences, model executions), whose rates' ratio is the
    average batch size."""

    def histogram(self, metric: SloMetric) -> Histogram | None:
        """The histogram an SLO on `metric` is counted from."""
        return self.ttft if metric == "ttft" else self.latency


_VLLM_LATENCY_BUCKETS = (
    *(0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0),
    *(40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0),
)
_SGLANG_TIME_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0)

SERVER_METRICS: Mapping[ServerKind, ServerMetrics] = MappingProxyType(
    {
        "vllm": ServerMetrics(
            kind="vllm",
            ttft=Histogram(
                "vllm:time_to_first_token_seconds",
                (
                    *(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0),
                    *(2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0),
                ),
                VLLM_SOURCE,
            ),
            inter_token=Histogram(
                "vllm:inter_token_latency_seconds",
                (
                    *(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0),
                    *(2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0),
                ),
                VLLM_SOURCE,
            ),
            latency=Histogram(
                "vllm:e2e_request_latency_seconds", _VLLM_LATENCY_BUCKETS, VLLM_SOURCE
            ),
            prompt_tokens=Series("vllm:prompt_tokens_total", VLLM_SOURCE),
            generation_tokens=Series("vllm:generation_tokens_total", VLLM_SOURCE),
            requests=Series("vllm:request_success_total", VLLM_SOURCE),
            errors=Series("http_requests_total", VLLM_HTTP_SOURCE, 'status="5xx"'),
            kv_cache=Series("vllm:kv_cache_usage_perc", VLLM_SOURCE),
            waiting=Series("vllm:num_requests_waiting", VLLM_SOURCE),
            running=Series("vllm:num_requests_running", VLLM_SOURCE),
        ),
        "sglang": ServerMetrics(
            kind="sglang",
            ttft=Histogram(
                "sglang:time_to_first_token_seconds",
                (*_SGLANG_TIME_BUCKETS, 80.0, 100.0, 200.0, 400.0),
                SGLANG_SOURCE,
            ),
            inter_token=Histogram(
                "sglang:inter_token_latency_seconds",
                (
                    *(0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035),
                    *(0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0),
                ),
                SGLANG_SOURCE,
            ),
            latency=Histogram(
                "sglang:e2e_request_latency_seconds",
                (*_SGLANG_TIME_BUCKETS, 80.0, 100.0, 200.0, 400.0, 600.0, 1200.0, 1800.0, 2400.0),
                SGLANG_SOURCE,
            ),
            prompt_tokens=Series("sglang:prompt_tokens_total", SGLANG_SOURCE),
            generation_tokens=Series("sglang:generation_tokens_total", SGLANG_SOURCE),
            requests=Series("sglang:num_requests_total", SGLANG_SOURCE),
            errors=Series("sglang:num_aborted_requests_total", SGLANG_SOURCE),
            kv_cache=Series("sglang:token_usage", SGLANG_SOURCE),
            waiting=Series("sglang:num_queue_reqs", SGLANG_SOURCE),
            running=Series("sglang:num_running_reqs", SGLANG_SOURCE),
        ),
        "triton": ServerMetrics(
            kind="triton",
            ttft=None,
            inter_token=None,
            latency=Histogram(
                "nv_inference_first_response_histogram_ms",
                (100.0, 500.0, 2000.0, 5000.0),
                TRITON_HISTOGRAM_SOURCE,
                seconds_per_unit=0.001,
            ),
            prompt_tokens=None,
            generation_tokens=None,
            requests=Series("nv_inference_request_success", TRITON_SOURCE),
            errors=Series("nv_inference_request_failure", TRITON_SOURCE),
            kv_cache=None,
            waiting=Series("nv_inference_pending_request_count", TRITON_SOURCE),
            running=None,
            executions=(
                Series("nv_inference_count", TRITON_SOURCE),
                Series("nv_inference_exec_count", TRITON_SOURCE),
            ),
        ),
    }
)


def le_matcher(bound: float) -> str:
    """A matcher of the bucket `le="<bound>"` however the exporter spelt the number:
    prometheus_client writes `0.5` and `1.0`, prometheus-cpp `100`; Prometheus 3 rewrites
    classic-histogram `le` values to the float form on ingest, Prometheus 2 keeps them."""
    whole = float(bound).is_integer()
    text = str(int(bound)) if whole else repr(float(bound))
    if whole:
        return f'le=~"{text}(\\\\.0)?"'
    return f'le="{text}"'


def spelt(seconds: float) -> str:
    """A bound as an SLO's `p95` spells it (`100ms`, `1s`, `2.5s`)."""
    if seconds < 1:
        ms = round(seconds * 1000, 6)
        return f"{int(ms) if float(ms).is_integer() else ms}ms"
    return f"{int(seconds) if float(seconds).is_integer() else seconds}s"


# --- the recorded series: one name per figure, whatever the server --------------------------------

WAITING = SIGNAL_SERIES["queue-depth"]
KV_CACHE_SUM = SIGNAL_SERIES["kv-cache"]
TTFT_P95 = SIGNAL_SERIES["ttft"]
KV_CACHE_AVG = "gpuplane_endpoint:kv_cache_usage:avg"
"""KV-cache use averaged over the endpoint's pods (0 to 1): what the panel shows."""
INTER_TOKEN_P95 = "gpuplane_endpoint:inter_token_latency_seconds:p95"
LATENCY_P95 = "gpuplane_endpoint:request_latency_seconds:p95"
PROMPT_TOKENS_RATE = "gpuplane_endpoint:prompt_tokens:rate5m"
GENERATION_TOKENS_RATE = "gpuplane_endpoint:generation_tokens:rate5m"
REQUESTS_RATE = "gpuplane_endpoint:requests:rate5m"
ERRORS_RATE = "gpuplane_endpoint:request_errors:rate5m"
ERROR_RATIO = "gpuplane_endpoint:request_errors:ratio_rate5m"
"""Failed over all (completed and failed) requests in the last five minutes."""
RUNNING = "gpuplane_endpoint:requests_running:sum"
BATCH_SIZE = "gpuplane_endpoint:batch_size:avg"
"""Requests per running batch, averaged over the endpoint's pods (Triton: inferences per model
execution)."""
P95_WINDOW = "5m"
"""The window of the p95 series and the rates (SIGNAL_SERIES: "over the last five minutes")."""

SLO_OBJECTIVE = 0.95
"""An endpoint's SLO: 95% of requests within its `p95`; the error budget is the other 5%."""
SLO_WINDOWS = ("5m", "30m", "1h", "6h")
"""The windows of the multiwindow, multi-burn-rate alert (Google SRE workbook, "Alerting on
SLOs", alert 5): 1h with 5m at 14.4 times the budget rate, 6h with 30m at 6 times."""
BURN_RULES = (("1h", "5m", 14.4), ("6h", "30m", 6.0))
"""(long window, short window, burn rate): both windows must burn faster than the rate."""


def slo_misses(window: str) -> str:
    """The recorded share of an endpoint's requests over its SLO's bound in `window`."""
    return f"gpuplane_endpoint:slo_misses:ratio_rate{window}"
