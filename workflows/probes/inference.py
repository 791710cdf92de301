"""inference: request latency of an OpenAI-compatible endpoint, with the standard library only.

The probe sends `warmup` untimed requests, then `requests` POSTs to `/v1/completions` (or
`/v1/chat/completions` with `api="chat"`) from `concurrency` threads, each with a timeout. A
request succeeds when the server answers 200 with JSON that holds a non-empty `choices` list;
anything else (an HTTP error, a timeout, a refused connection, a malformed body) counts in
`errors`. Each request is timed from sending to the end of the response body, successes and
failures alike (a timed-out request counts at its timeout). Percentiles are nearest-rank: the
p-th percentile of n sorted latencies is the value at rank ceil(p/100 x n), so it is always one of
the measured values and p50 <= p95 <= p99. The result fails when the share of errors exceeds
`max_error_rate` (by default any error fails it).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from . import progress
from .envelope import Outcome, ProbeFailure, measure

Api = Literal["completions", "chat"]
APIS = {"completions": "/completions", "chat": "/chat/completions"}
API_KEY_VARIABLE = "GPUPLANE_INFERENCE_API_KEY"
READY_POLL_SECONDS = 2.0
"""How often a probe that waits for its server asks again, and how long each ask may take."""


def nearest_rank(values: Sequence[float], percentile: float) -> float:
    """The nearest-rank percentile of `values` (0 < percentile <= 100)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[rank - 1]


def endpoint_url(endpoint: str, api: str = "completions") -> str:
    """The full URL for a base URL such as http://host:8000 or http://host:8000/v1."""
    if api not in APIS:
        raise ValueError(f"api must be one of {', '.join(APIS)}")
    base = endpoint.rstrip("/")
    if base.endswith("/v1" + APIS[api]):
        return base
    if base.endswith("/v1"):
        return base + APIS[api]
    return base + "/v1" + APIS[api]


def models_url(endpoint: str) -> str:
    """GET /v1/models of the same server: every OpenAI-compatible server answers it, and vLLM
    only once the model is loaded, so it tells when the server is ready."""
    base = endpoint.rstrip("/")
    for suffix in ("/v1" + APIS["chat"], "/v1" + APIS["completions"], "/v1"):
        base = base.removesuffix(suffix)
    return base + "/v1/models"


def wait_until_ready(url: str, headers: Mapping[str, str], wait_s: float) -> float:
    """Poll `url` until it answers 200; the seconds that took. Raises ProbeFailure after
    `wait_s` (a server that is still loading refuses connections or answers 503)."""
    start = time.perf_counter()
    last = "no answer yet"
    while True:
        try:
            request = urllib.request.Request(url, headers=dict(headers), method="GET")
            with urllib.request.urlopen(request, timeout=READY_POLL_SECONDS) as response:
                response.read()
            return time.perf_counter() - start
        except urllib.error.HTTPError as exc:
            exc.close()
            last = f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        waited = time.perf_counter() - start
        if waited >= wait_s:
            raise ProbeFailure(
                f"the server did not answer GET {url} within {wait_s:g} s (last: {last})"
            )
        time.sleep(min(READY_POLL_SECONDS, max(0.0, wait_s - waited)))


def request_body(api: str, model: str, prompt: str, max_tokens: int) -> bytes:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0}
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return json.dumps(body).encode()


@dataclass(frozen=True, kw_only=True)
class InferenceSettings:
    """What an inference run sends, and how much of it (the CLI's flags)."""

    endpoint: str
    model: str
    requests: int = 100
    concurrency: int = 4
    timeout_s: float = 30.0
    """per request"""
    warmup: int = 2
    """untimed requests first"""
    api: Api = "completions"
    prompt: str = "Write one sentence about GPUs."
    max_tokens: int = 16
    max_error_rate: float = 0.0
    """share of failed requests tolerated"""
    wait_s: float = 0.0
    """how long to wait first for the server to answer GET /v1/models (0: do not wait)"""

    def check(self) -> None:
        """Raise ValueError for settings no run can use (before anything is measured)."""
        if (
            self.requests < 1
            or self.concurrency < 1
            or self.warmup < 0
            or self.timeout_s <= 0
            or self.max_tokens < 1
        ):
            raise ValueError("requests, concurrency, timeout and max_tokens must be positive")
        if self.wait_s < 0:
            raise ValueError("wait_s must be 0 or more")
        if not 0 <= self.max_error_rate <= 1:
            raise ValueError("max_error_rate must lie between 0 and 1")


def run_inference(
    settings: InferenceSettings,
    *,
    api_key: str | None = None,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Measure latency percentiles of `settings.requests` requests; return the result envelope.

    The API key, when needed, comes from `api_key` or GPUPLANE_INFERENCE_API_KEY and is sent as a
    bearer token; it is never written into the result. With `settings.wait_s`, the probe first
    waits up to that long for the server to answer GET /v1/models (a server started beside it is
    loading its model) and reports the wait as `readySeconds`; the result fails when it never
    answers.
    """
    settings.check()
    url = endpoint_url(settings.endpoint, settings.api)
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"endpoint {settings.endpoint!r} is not an http:// or https:// URL")
    data = request_body(settings.api, settings.model, settings.prompt, settings.max_tokens)
    headers = {"Content-Type": "application/json"}
    key = api_key or os.environ.get(API_KEY_VARIABLE)
    if key:
        headers["Authorization"] = f"Bearer {key}"

    def one(_: int) -> tuple[float, str | None]:
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=settings.timeout_s) as response:
                payload = response.read()
            problem = _check(payload)
        except urllib.error.HTTPError as exc:
            exc.close()
            problem = f"HTTP {exc.code} {exc.reason}"
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            problem = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        return (time.perf_counter() - start) * 1000, problem

    def body() -> Outcome:
        ready = None
        if settings.wait_s:
            with progress.phase("wait", f"for {settings.endpoint}, up to {settings.wait_s:g} s"):
                ready = wait_until_ready(models_url(settings.endpoint), headers, settings.wait_s)
        with ThreadPoolExecutor(
            max_workers=settings.concurrency, thread_name_prefix="probe-request"
        ) as executor:
            with progress.phase("warm-up", f"{settings.warmup} requests"):
                list(executor.map(one, range(settings.warmup)))
            with progress.phase("requests", f"{settings.requests}, {settings.concurrency} at once"):
                outcomes = list(executor.map(one, range(settings.requests)))
        return _outcome(settings, url, outcomes, ready)

    return measure("inference", body, cluster=cluster, pool=pool, labels=labels)


def _outcome(
    settings: InferenceSettings,
    url: str,
    outcomes: Sequence[tuple[float, str | None]],
    ready: float | None,
) -> Outcome:
    """The latency percentiles of the timed requests, failed when too many of them failed."""
    latencies = [ms for ms, _ in outcomes]
    problems = [problem for _, problem in outcomes if problem]
    metrics = {
        "endpoint": url,
        "model": settings.model,
        "requests": settings.requests,
        "concurrency": settings.concurrency,
        "errors": len(problems),
        "p50Ms": nearest_rank(latencies, 50),
        "p95Ms": nearest_rank(latencies, 95),
        "p99Ms": nearest_rank(latencies, 99),
        "meanMs": sum(latencies) / len(latencies),
    }
    if ready is not None:
        metrics["readySeconds"] = ready
    error = None
    if len(problems) > settings.max_error_rate * settings.requests:
        error = f"{len(problems)} of {settings.requests} requests failed (first: {problems[0]})"
    return Outcome(metrics, error, {"inferenceApi": settings.api})


def _check(payload: bytes) -> str | None:
    """None when a response body is an OpenAI-style completion, else what is wrong with it."""
    try:
        document = json.loads(payload)
    except ValueError:
        return "the response is not JSON"
    choices = document.get("choices") if isinstance(document, dict) else None
    if not isinstance(choices, list) or not choices:
        return "the response has no choices"
    return None
