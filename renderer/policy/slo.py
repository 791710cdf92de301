"""Policy on endpoints' SLOs: an objective the server's own metrics can count exactly.

The SLO alert (observability layer, `EndpointSLOBurn`) counts the requests within the objective
from the server's latency histogram: the bucket whose upper bound is the objective. So the
metric must be one the server has a histogram for, and the objective one of that histogram's
bounds (renderer/model/server_metrics.py, read from each server's source).
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import Platform
from renderer.model.server_metrics import SERVER_METRICS, spelt
from renderer.model.serving import SERVERS
from renderer.model.view import served
from renderer.policy.rule import error, rule


@rule("endpoint-slo-metric", scope="team")
def slo_metric_offered(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint's SLO bounds a latency its server measures.

    vLLM and SGLang measure the time to the first token and the whole request in histograms;
    Triton measures only the time to its (first) response, which for a model that answers once
    is the whole request, and has no notion of tokens. An SLO on a latency the server does not
    measure could never be counted, and its alert would never fire.

    To satisfy it: set the endpoint's `slo.metric` to one the server offers (vllm and sglang:
    `ttft` or `latency`; triton: `latency`), or leave it out for the server's default.
    """
    for s in served(p):
        endpoint = s.endpoint
        offered = SERVERS[endpoint.server].slo_metrics
        histogram = SERVER_METRICS[endpoint.server].histogram(endpoint.slo.metric)
        if endpoint.slo.metric in offered and histogram is not None:
            continue
        yield error(
            "endpoint-slo-metric",
            f"endpoint '{endpoint.name}' sets an SLO on {endpoint.slo.metric}, which "
            f"{SERVERS[endpoint.server].title} does not measure",
            endpoint.slo.origin.at("metric"),
            " or ".join(f"set `metric: {m}`" for m in offered),
        )


@rule("endpoint-slo-bucket", scope="team")
def slo_bound_is_a_bucket(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint's SLO objective is a bucket bound of its server's latency histogram.

    The burn-rate alert counts the requests within the objective from the histogram's bucket at
    that bound (`le`). Between two bounds no series counts the requests below the objective:
    interpolating would guess, and the alert would fire, or stay quiet, on a guess. The bounds
    are the server's defaults, from its source (vLLM's and SGLang's histograms in seconds,
    Triton's first-response histogram in milliseconds: 100, 500, 2000, 5000).

    To satisfy it: set the endpoint's `slo.p95` to one of the bounds the hint names (the
    nearest below and above the objective), for example `500ms` or `1s`.
    """
    for s in served(p):
        endpoint = s.endpoint
        histogram = SERVER_METRICS[endpoint.server].histogram(endpoint.slo.metric)
        if histogram is None or histogram.bound_of(endpoint.slo.p95_seconds) is not None:
            continue
        bounds = histogram.bounds_seconds()
        below = [b for b in bounds if b < endpoint.slo.p95_seconds]
        above = [b for b in bounds if b > endpoint.slo.p95_seconds]
        nearest = [spelt(b) for b in (below[-1:] + above[:1])]
        yield error(
            "endpoint-slo-bucket",
            f"endpoint '{endpoint.name}': {endpoint.slo.text} is no bucket bound of "
            f"{histogram.name}, so requests within it cannot be counted",
            endpoint.slo.origin.at("p95"),
            f"set `p95: {nearest[0]}`" + (f" or `p95: {nearest[1]}`" if len(nearest) > 1 else ""),
        )
