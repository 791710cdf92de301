"""The recording rules and the SLO alert of the cluster's inference endpoints.

The endpoint's PodMonitor (serving layer, `monitors.py`) puts `team`, `namespace`, `endpoint`,
`pool` and `server` on every series scraped from its pods. One group per server kind the
cluster serves (`gpuplane.serving.<server>`) turns that server's own metric names
(`renderer.model.server_metrics`) into the same `gpuplane_endpoint:*` series, grouped by those
five labels: the autoscaler's signals (`SIGNAL_SERIES`), the panel's figures and the p95s. A
figure the server does not expose (Triton's tokens, say) gets no rule: its series is absent.

`gpuplane.serving.slo` records, per endpoint and window, the share of its requests over the
SLO's bound, counted from the server's histogram bucket at that bound (policy
`endpoint-slo-bucket` holds the bound to a bucket). The alert `EndpointSLOBurn` fires when both
windows of a pair burn the 5% error budget faster than the pair's rate (Google SRE workbook,
"Alerting on SLOs": 1h and 5m at 14.4 times, 6h and 30m at 6 times).
"""

from __future__ import annotations

from typing import Any

from renderer.layers.observability import info
from renderer.layers.observability.info import number
from renderer.model import server_metrics as sm
from renderer.model.choices import ServerKind
from renderer.model.serving import ENDPOINT_SERIES_LABELS
from renderer.model.view import ClusterView, Served

BY = ", ".join(ENDPOINT_SERIES_LABELS)
W = sm.P95_WINDOW


def _sel(series: sm.Series | sm.Histogram, kind: ServerKind, suffix: str = "", *extra: str) -> str:
    matchers = [f'server="{kind}"']
    if isinstance(series, sm.Series) and series.matchers:
        matchers.append(series.matchers)
    matchers.extend(extra)
    return f"{series.name}{suffix}{{{', '.join(matchers)}}}"


def _rate(series: sm.Series, kind: ServerKind) -> str:
    return f"sum by ({BY}) (rate({_sel(series, kind)}[{W}]))"


def _p95(histogram: sm.Histogram, kind: ServerKind) -> str:
    buckets = f"rate({_sel(histogram, kind, '_bucket')}[{W}])"
    expr = f"histogram_quantile(0.95, sum by ({BY}, le) ({buckets}))"
    if histogram.seconds_per_unit != 1.0:
        expr = f"{expr} * {number(histogram.seconds_per_unit)}"
    return expr


def _batch(metrics: sm.ServerMetrics) -> str | None:
    if metrics.running is not None:
        return f"avg by ({BY}) ({_sel(metrics.running, metrics.kind)})"
    if metrics.executions is not None:
        inferences, executions = metrics.executions
        return f"{_rate(inferences, metrics.kind)}\n/ ({_rate(executions, metrics.kind)} > 0)"
    return None


def server_rules(view: ClusterView, kind: ServerKind) -> list[dict[str, Any]]:
    """The `gpuplane_endpoint:*` series from one server kind's own metrics."""
    mx = sm.SERVER_METRICS[kind]

    def record(view: ClusterView, name: str, expr: str) -> dict[str, Any]:
        """A rule of this server's group: its static `server` label (the value its expression
        keeps anyway) tells it from the same series of another server's group."""
        return info.record(view, name, expr, server=kind)

    found = [
        record(view, sm.WAITING, f"sum by ({BY}) ({_sel(mx.waiting, kind)})"),
        record(view, sm.REQUESTS_RATE, _rate(mx.requests, kind)),
        record(view, sm.ERRORS_RATE, _rate(mx.errors, kind)),
        record(
            view,
            sm.ERROR_RATIO,
            f'{sm.ERRORS_RATE}{{server="{kind}"}}\n/ on ({BY}) '
            f'(({sm.ERRORS_RATE}{{server="{kind}"}} + {sm.REQUESTS_RATE}{{server="{kind}"}}) > 0)',
        ),
    ]
    if mx.kv_cache is not None:
        found.append(record(view, sm.KV_CACHE_SUM, f"sum by ({BY}) ({_sel(mx.kv_cache, kind)})"))
        found.append(record(view, sm.KV_CACHE_AVG, f"avg by ({BY}) ({_sel(mx.kv_cache, kind)})"))
    if mx.running is not None:
        found.append(record(view, sm.RUNNING, f"sum by ({BY}) ({_sel(mx.running, kind)})"))
    batch = _batch(mx)
    if batch is not None:
        found.append(record(view, sm.BATCH_SIZE, batch))
    for name, histogram in (
        (sm.TTFT_P95, mx.ttft),
        (sm.INTER_TOKEN_P95, mx.inter_token),
        (sm.LATENCY_P95, mx.latency),
    ):
        if histogram is not None:
            found.append(record(view, name, _p95(histogram, kind)))
    for name, series in (
        (sm.PROMPT_TOKENS_RATE, mx.prompt_tokens),
        (sm.GENERATION_TOKENS_RATE, mx.generation_tokens),
    ):
        if series is not None:
            found.append(record(view, name, _rate(series, kind)))
    return found


def _endpoint_matchers(served: Served) -> tuple[str, str]:
    return (f'namespace="{served.namespace.name}"', f'endpoint="{served.name}"')


def slo_histogram(served: Served) -> tuple[sm.Histogram, float] | None:
    """The histogram an endpoint's SLO is counted from and its bucket at the SLO's bound; None
    where there is none (policy `endpoint-slo-metric` and `endpoint-slo-bucket` say so)."""
    endpoint = served.endpoint
    histogram = sm.SERVER_METRICS[endpoint.server].histogram(endpoint.slo.metric)
    if histogram is None:
        return None
    bound = histogram.bound_of(endpoint.slo.p95_seconds)
    return None if bound is None else (histogram, bound)


def slo_misses(view: ClusterView, served: Served, window: str) -> dict[str, Any] | None:
    found = slo_histogram(served)
    if found is None:
        return None
    histogram, bound = found
    kind = served.endpoint.server
    matchers = _endpoint_matchers(served)
    within = f"rate({_sel(histogram, kind, '_bucket', *matchers, sm.le_matcher(bound))}[{window}])"
    every = f"rate({_sel(histogram, kind, '_count', *matchers)}[{window}])"
    expr = f"1 - (\n  sum by ({BY}) ({within})\n/\n  (sum by ({BY}) ({every}) > 0)\n)"
    # static labels as the expression's: one rule per endpoint, told apart (promtool's lint)
    return info.record(
        view, sm.slo_misses(window), expr, namespace=served.namespace.name, endpoint=served.name
    )


def slo_rules(view: ClusterView) -> list[dict[str, Any]]:
    found = []
    for served in view.endpoints():
        for window in sm.SLO_WINDOWS:
            rule = slo_misses(view, served, window)
            if rule is not None:
                found.append(rule)
    return found


def groups(view: ClusterView) -> list[dict[str, Any]]:
    """The serving groups of `gpuplane-recording`; none where the cluster serves no endpoint."""
    kinds = sorted({s.endpoint.server for s in view.endpoints()})
    found = [{"name": f"gpuplane.serving.{k}", "rules": server_rules(view, k)} for k in kinds]
    slo = slo_rules(view)
    if slo:
        found.append({"name": "gpuplane.serving.slo", "rules": slo})
    return found


def burn_expr(served: Served) -> str | None:
    """Both windows of a pair over the pair's burn rate; the value: the long window's rate."""
    if slo_histogram(served) is None:
        return None
    budget = number(round(1 - sm.SLO_OBJECTIVE, 9))
    matchers = ", ".join((f'team="{served.team.name}"', *_endpoint_matchers(served)))
    pairs = []
    for long, short, rate in sm.BURN_RULES:
        threshold = number(rate)
        pairs.append(
            f"(\n  {sm.slo_misses(long)}{{{matchers}}} / {budget} > {threshold}\n"
            f"and\n  {sm.slo_misses(short)}{{{matchers}}} / {budget} > {threshold}\n)"
        )
    return "\nor\n".join(pairs)
