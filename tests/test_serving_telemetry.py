"""Telemetry of the inference endpoints: the PodMonitor that scrapes each server, the recording
rules that turn vLLM's, SGLang's and Triton's own metric names into gpuplane's series, the SLO
burn-rate alert (under promtool), the workload view's inference panels and the SLO policy.

Expected names, labels and bounds come from the servers' source at the releases the templates
pin (model/serving.py `Server.release`), read here, not from our rules:

- vLLM v0.34.0 (PyPI wheel): vllm/v1/metrics/loggers.py `PrometheusStatLogger` (labels
  `model_name`, `engine`; `vllm:request_success` adds `finished_reason`), vllm/v1/metrics/
  buckets.py (INTER_TOKEN_LATENCY_BUCKETS 0.01 ... 80.0), and vllm/entrypoints/serve/
  instrumentator/metrics.py: prometheus-fastapi-instrumentator's default `http_requests_total`
  {method, status, handler}, status grouped to `5xx` (8.0.0 middleware.py).
- SGLang v0.5.23 (PyPI wheel): sglang/srt/observability/metrics_collector.py (labels
  `model_name`, `engine_type` "unified" without disaggregation, scheduler gauges add `tp_rank`,
  `pp_rank`, `moe_ep_rank`; the TTFT histogram adds `is_streaming`).
- Triton v2.71.0: core src/metrics.cc, src/metric_model_reporter.{h,cc} (labels `model`,
  `version`), server docs/user_guide/metrics.md.

The raw series below are shaped as those servers expose them, with the labels the PodMonitor's
relabelings write. The burn-rate thresholds are the Google SRE
workbook's ("Alerting on SLOs", alert 5): 1h and 5m at 14.4 times the budget rate, 6h and 30m at
6 times, for a 95% objective a 5% budget.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers import observability
from renderer.layers.observability import dashboards, info
from renderer.layers.serving import monitors
from renderer.model import server_metrics as sm
from renderer.model.serving import ENDPOINT_LABEL, ENDPOINT_SERIES_LABELS, SERVERS, SIGNAL_SERIES
from renderer.model.view import ClusterView, Served
from renderer.output.manifest import Manifest
from renderer.pipeline import load_platform
from tests.conftest import REPO
from tests.test_observability_rules import fires, silent, unit_test, write_rules

pytestmark = pytest.mark.slow

# --- the servers' metric names ---------------------------------------------------------------


def test_the_slo_histograms_hold_the_examples_objectives() -> None:
    """vLLM's TTFT buckets have 0.5 s, SGLang's 1 s, Triton's first-response 100 ms (its
    default bounds 100, 500, 2000, 5000 ms in metric_model_reporter.h)."""
    assert sm.SERVER_METRICS["vllm"].histogram("ttft").bound_of(0.5) == 0.5  # type: ignore[union-attr]
    assert sm.SERVER_METRICS["sglang"].histogram("ttft").bound_of(1.0) == 1.0  # type: ignore[union-attr]
    triton = sm.SERVER_METRICS["triton"].histogram("latency")
    assert triton is not None and triton.bounds_seconds() == (0.1, 0.5, 2.0, 5.0)
    assert triton.bound_of(0.1) == 100.0
    assert sm.SERVER_METRICS["triton"].histogram("ttft") is None


@pytest.mark.parametrize(
    ("bound", "spellings", "not_matched"),
    [
        (0.5, ["0.5"], ["0.50", "5"]),
        (100.0, ["100", "100.0"], ["1000", "10"]),
        (1.0, ["1", "1.0"], ["10"]),
    ],
)
def test_the_le_matcher_takes_each_exporters_spelling(
    bound: float, spellings: list[str], not_matched: list[str]
) -> None:
    """prometheus_client writes `1.0`, prometheus-cpp `100`; PromQL regexes are anchored."""
    matcher = sm.le_matcher(bound)
    if "=~" in matcher:
        regex = matcher.split('"')[1].replace("\\\\", "\\")
        for text in spellings:
            assert re.fullmatch(regex, text)
        for text in not_matched:
            assert not re.fullmatch(regex, text)
    else:
        assert matcher == f'le="{spellings[0]}"'


def test_every_server_offers_its_slo_metrics_and_signals() -> None:
    for kind, server in SERVERS.items():
        metrics = sm.SERVER_METRICS[kind]
        for metric in server.slo_metrics:
            assert metrics.histogram(metric) is not None, (kind, metric)
        if "kv-cache" in server.signals:
            assert metrics.kv_cache is not None
        if "ttft" in server.signals:
            assert metrics.ttft is not None


# --- the PodMonitor ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def views() -> dict[str, ClusterView]:
    platform = load_platform(REPO).platform
    return {name: ClusterView.of(platform, c) for name, c in sorted(platform.clusters.items())}


def endpoints(views: dict[str, ClusterView]) -> dict[str, Served]:
    return {s.name: s for v in views.values() for s in v.endpoints()}


def relabel(target: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """Prometheus's relabeling of one target (`keep` and `replace`, the actions used), with
    its defaults: source labels joined by `;`, regex `(.*)` anchored, replacement `$1`."""
    labels = dict(target)
    for r in rules:
        value = ";".join(labels.get(s, "") for s in r.get("sourceLabels", []))
        match = re.fullmatch(r.get("regex", "(.*)"), value)
        if r["action"] == "keep":
            if match is None:
                return None
        elif r["action"] == "replace" and match is not None:
            labels[r["targetLabel"]] = match.expand(r.get("replacement", "$1").replace("$", "\\"))
    return {k: v for k, v in labels.items() if not k.startswith("__")}


def test_each_endpoint_has_a_podmonitor_on_its_pods_and_metrics_port(
    views: dict[str, ClusterView],
) -> None:
    """Triton serves metrics on 8002 (its --metrics-port default), vLLM and SGLang on their
    serving port: only that container port's target survives, and it carries every one of
    ENDPOINT_SERIES_LABELS with the endpoint's values."""
    found = endpoints(views)
    assert set(found) == {"chat", "ranker", "candidate"}
    ports = {"chat": (8000, 9999), "ranker": (8002, 8000), "candidate": (30000, 8000)}
    for name, served in found.items():
        body = monitors.pod_monitor(served)
        assert body["metadata"]["namespace"] == served.namespace.name
        assert body["spec"]["selector"] == {"matchLabels": {ENDPOINT_LABEL: name}}
        (entry,) = body["spec"]["podMetricsEndpoints"]
        assert entry["path"] == "/metrics"
        metrics_port, other_port = ports[name]
        meta = {"namespace": served.namespace.name, "pod": f"{name}-0", "job": "x"}
        kept = relabel({**meta, monitors.PORT_NUMBER_META: str(metrics_port)}, entry["relabelings"])
        assert (
            relabel({**meta, monitors.PORT_NUMBER_META: str(other_port)}, entry["relabelings"])
            is None
        )
        assert kept is not None
        assert {k: kept[k] for k in ENDPOINT_SERIES_LABELS} == {
            "team": served.team.name,
            "namespace": served.namespace.name,
            "endpoint": name,
            "pool": served.endpoint.pool,
            "server": served.endpoint.server,
        }


def test_podmonitors_are_rendered_where_prometheus_runs() -> None:
    rendered = sorted((REPO / "rendered").glob("*/serving/*/podmonitor-*.yaml"))
    names = [p.relative_to(REPO / "rendered").as_posix() for p in rendered]
    assert names == [
        "prod-east/serving/llm-serve/podmonitor-endpoint-chat.yaml",
        "prod-east/serving/recsys-serve/podmonitor-endpoint-ranker.yaml",
        "staging-west/serving/llm-eval-serve/podmonitor-endpoint-candidate.yaml",
    ]
    values = yaml.safe_load(
        (REPO / "rendered/prod-east/values/kube-prometheus-stack.yaml").read_text()
    )
    # the chart's podMonitorSelector/NamespaceSelector ({}) then select every PodMonitor
    assert values["prometheus"]["prometheusSpec"]["podMonitorSelectorNilUsesHelmValues"] is False


# --- the rules under promtool ------------------------------------------------------------------


def _rules(view: ClusterView) -> list[dict[str, Any]]:
    return [
        o.body
        for o in observability.render(view)
        if isinstance(o, Manifest) and o.kind == "PrometheusRule"
    ]


@pytest.fixture(scope="module")
def rule_files(
    views: dict[str, ClusterView], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[list[Path], list[str]]]:
    found = {}
    for name, view in views.items():
        objects = _rules(view)
        paths = write_rules(tmp_path_factory.mktemp(f"{name}-rules"), objects)
        found[name] = (paths, [g["name"] for b in objects for g in b["spec"]["groups"]])
    return found


def labels_of(served: Served, pod: str, **extra: str) -> dict[str, str]:
    """A scraped series' labels: the operator's target labels and the PodMonitor's."""
    return {
        "job": f"{served.namespace.name}/endpoint-{served.name}",
        "instance": f"10.1.0.{pod[-1]}:8000",
        "pod": pod,
        "container": "server",
        **{k: v for k, v in monitors.series_labels(served).items()},
        **extra,
    }


def sel(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def out(served: Served) -> dict[str, str]:
    return {"cluster": served.namespace.cluster, **monitors.series_labels(served)}


def rounded(series: str, labels: dict[str, str], value: float, at: str = "10m") -> dict[str, Any]:
    """`series` at `at` equals `value` to a thousandth (rates and quantiles are floats)."""
    plain = "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
    return {
        "expr": f"round({series}, 0.001)",
        "eval_time": at,
        "exp_samples": [{"labels": plain, "value": value}],
    }


def histogram(
    name: str, labels: dict[str, str], per_minute: dict[str, int]
) -> list[tuple[str, str]]:
    """Cumulative buckets growing by `per_minute[le]` each minute for seven hours."""
    return [
        (sel(f"{name}_bucket", {**labels, "le": le}), f"0+{n}x420") for le, n in per_minute.items()
    ] + [(sel(f"{name}_count", labels), f"0+{per_minute['+Inf']}x420")]


def test_signal_series_come_from_vllms_own_metrics(
    views: dict[str, ClusterView],
    rule_files: dict[str, tuple[list[Path], list[str]]],
    tmp_path: Path,
) -> None:
    """Two vLLM pods of `chat`: 3 and 5 waiting, KV cache 0.5 and 0.7; TTFT 90 of 100 requests
    a minute within 0.25 s, all within 0.5 s: p95 = 0.25 + (95-90)/10 * 0.25 = 0.375 s."""
    chat = endpoints(views)["chat"]
    paths, order = rule_files["prod-east"]
    model = {"model_name": "llama-3.1-8b-instruct", "engine": "0"}
    series: list[tuple[str, str]] = []
    for pod, waiting, cache in (("chat-0", 3, 0.5), ("chat-1", 5, 0.7)):
        labels = labels_of(chat, pod, **model)
        series += [
            (sel("vllm:num_requests_waiting", labels), f"{waiting}x20"),
            (sel("vllm:kv_cache_usage_perc", labels), f"{cache}x20"),
            (sel("vllm:num_requests_running", labels), "16x20"),
            (sel("vllm:request_success_total", {**labels, "finished_reason": "stop"}), "0+57x20"),
            (sel("vllm:prompt_tokens_total", labels), "0+6000x20"),
            (sel("vllm:generation_tokens_total", labels), "0+3000x20"),
            (
                sel(
                    "http_requests_total",
                    {
                        **labels,
                        "handler": "/v1/chat/completions",
                        "method": "POST",
                        "status": "2xx",
                    },
                ),
                "0+57x20",
            ),
            (
                sel(
                    "http_requests_total",
                    {
                        **labels,
                        "handler": "/v1/chat/completions",
                        "method": "POST",
                        "status": "5xx",
                    },
                ),
                "0+3x20",
            ),
        ]
        series += histogram(
            "vllm:time_to_first_token_seconds",
            labels,
            {"0.25": 90, "0.5": 100, "0.75": 100, "+Inf": 100},
        )
        # v0.34.0's inter-token histogram (buckets.py INTER_TOKEN_LATENCY_BUCKETS): 100 tokens
        # a minute within 0.025 s, none within 0.01 s
        series += histogram(
            "vllm:inter_token_latency_seconds",
            labels,
            {"0.01": 0, "0.025": 100, "0.05": 100, "+Inf": 100},
        )
    want = out(chat)
    exprs = [
        rounded(SIGNAL_SERIES["queue-depth"], want, 8),
        rounded(SIGNAL_SERIES["kv-cache"], want, 1.2),
        rounded(SIGNAL_SERIES["ttft"], want, 0.375),
        rounded(sm.BATCH_SIZE, want, 16),
        # 3 failed (5xx) of 60 a minute per pod
        rounded(sm.ERROR_RATIO, want, 0.05),
        # 2 pods x 3000 generated tokens a minute = 100 tokens/s
        rounded(sm.GENERATION_TOKENS_RATE, want, 100),
        # all between 0.01 and 0.025 s: p95 = 0.01 + 0.95 * 0.015 = 0.02425
        rounded(sm.INTER_TOKEN_P95, want, 0.024),
    ]
    unit_test(tmp_path, paths, order, series, exprs=exprs)


def test_signal_series_come_from_sglangs_own_metrics(
    views: dict[str, ClusterView],
    rule_files: dict[str, tuple[list[Path], list[str]]],
    tmp_path: Path,
) -> None:
    """SGLang's `num_queue_reqs` and `token_usage` (the KV cache's share used)."""
    candidate = endpoints(views)["candidate"]
    paths, order = rule_files["staging-west"]
    model = {"model_name": "llm-release-candidate", "engine_type": "unified"}
    labels = labels_of(candidate, "candidate-0", **model)
    ranks = {"tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}
    series = [
        (sel("sglang:num_queue_reqs", {**labels, **ranks}), "6x20"),
        (sel("sglang:token_usage", {**labels, **ranks}), "0.85x20"),
        *histogram(
            "sglang:time_to_first_token_seconds",
            {**labels, "is_streaming": "true"},
            {"0.8": 0, "1.0": 60, "2.0": 60, "+Inf": 60},
        ),
    ]
    want = out(candidate)
    # all 60 a minute between 0.8 and 1.0: p95 = 0.8 + 0.95 * 0.2 = 0.99
    exprs = [
        rounded(SIGNAL_SERIES["queue-depth"], want, 6),
        rounded(SIGNAL_SERIES["kv-cache"], want, 0.85),
        rounded(SIGNAL_SERIES["ttft"], want, 0.99),
    ]
    unit_test(tmp_path, paths, order, series, exprs=exprs)


def _runbook(view: ClusterView, served: Served) -> str:
    pool = next(p for p in view.pools if p.name == served.endpoint.pool)
    return f"{info.pool_runbook(view, pool)}#endpointsloburn"


def _burn_labels(view: ClusterView, served: Served) -> dict[str, str]:
    return {
        **out(served),
        "severity": "critical",
        "slo": served.endpoint.slo.text,
        "runbook": _runbook(view, served),
    }


def _chat_ttft(chat: Served, within_per_minute: int) -> list[tuple[str, str]]:
    labels = labels_of(chat, "chat-0", model_name="llama-3.1-8b-instruct", engine="0")
    return histogram(
        "vllm:time_to_first_token_seconds",
        labels,
        {"0.25": 0, "0.5": within_per_minute, "0.75": 100, "+Inf": 100},
    )


@pytest.mark.parametrize(
    ("within", "at", "burn"),
    [
        (0, "10m", 20.0),  # every request over 500ms: 100% / 5% = 20x, the 1h/5m pair
        (60, "7h", 8.0),  # 40% over: 8x, over 6 (6h/30m) and under 14.4 (1h/5m)
    ],
)
def test_the_slo_alert_fires_on_a_burn(
    views: dict[str, ClusterView],
    rule_files: dict[str, tuple[list[Path], list[str]]],
    tmp_path: Path,
    within: int,
    at: str,
    burn: float,
) -> None:
    view = views["prod-east"]
    chat = endpoints(views)["chat"]
    paths, order = rule_files["prod-east"]
    labels = _burn_labels(view, chat)
    summary = (
        f"Endpoint llm-serve/chat of team llm (pool l40s-infer) burns its SLO budget "
        f"{burn:.1f} times too fast"
    )
    expected = fires("EndpointSLOBurn", at, (labels, {"summary": summary}))
    expected["exp_alerts"][0]["exp_annotations"]["description"] = (
        "Endpoint chat (vllm, namespace llm-serve, team llm, pool l40s-infer) misses its "
        "objective, 95% of requests within 500ms (ttft): its error budget of 5% burns "
        f"{burn:.1f} times faster than the objective allows (1h and 5m over 14.4 times, or 6h "
        "and 30m over 6 times)."
    )
    unit_test(tmp_path, paths, order, _chat_ttft(chat, within), alerts=[expected])


@pytest.mark.parametrize(
    "within",
    [98, 75],  # 2% over (0.4x): healthy; 25% over (5x): a slow burn under 6x
)
def test_the_slo_alert_stays_quiet_below_its_burn_rates(
    views: dict[str, ClusterView],
    rule_files: dict[str, tuple[list[Path], list[str]]],
    tmp_path: Path,
    within: int,
) -> None:
    chat = endpoints(views)["chat"]
    paths, order = rule_files["prod-east"]
    alerts = [silent("EndpointSLOBurn", t) for t in ("10m", "1h", "7h")]
    unit_test(tmp_path, paths, order, _chat_ttft(chat, within), alerts=alerts)


def test_the_triton_slo_counts_its_millisecond_bucket(
    views: dict[str, ClusterView],
    rule_files: dict[str, tuple[list[Path], list[str]]],
    tmp_path: Path,
) -> None:
    """Triton writes `le="100"` (prometheus-cpp); ranker's objective is 100ms. All 60 requests
    a minute take between 100 and 500 ms: the alert fires, at 20 times the budget."""
    view = views["prod-east"]
    ranker = endpoints(views)["ranker"]
    paths, order = rule_files["prod-east"]
    labels = labels_of(ranker, "ranker-0", model="feed-ranker", version="1")
    series = [
        *histogram(
            "nv_inference_first_response_histogram_ms",
            labels,
            {"100": 0, "500": 60, "2000": 60, "5000": 60, "+Inf": 60},
        ),
        (sel("nv_inference_pending_request_count", labels), "7x30"),
        (sel("nv_inference_count", labels), "0+480x30"),
        (sel("nv_inference_exec_count", labels), "0+60x30"),
    ]
    summary = (
        "Endpoint recsys-serve/ranker of team recsys (pool l40s-infer) burns its SLO budget "
        "20.0 times too fast"
    )
    alert = fires("EndpointSLOBurn", "10m", (_burn_labels(view, ranker), {"summary": summary}))
    alert["exp_alerts"][0]["exp_annotations"]["description"] = (
        "Endpoint ranker (triton, namespace recsys-serve, team recsys, pool l40s-infer) misses "
        "its objective, 95% of requests within 100ms (latency): its error budget of 5% burns "
        "20.0 times faster than the objective allows (1h and 5m over 14.4 times, or 6h and 30m "
        "over 6 times)."
    )
    want = out(ranker)
    exprs = [
        rounded(SIGNAL_SERIES["queue-depth"], want, 7),
        # 480 inferences in 60 executions a minute: batches of 8
        rounded(sm.BATCH_SIZE, want, 8),
        # 95th of 60 between 100 and 500 ms: 0.1 + 0.95 * 0.4 = 0.48 s
        rounded(sm.LATENCY_P95, want, 0.48),
        # no tokens, no KV cache: absent, not zero
        {"expr": f'{sm.KV_CACHE_AVG}{{server="triton"}}', "eval_time": "10m", "exp_samples": []},
        {
            "expr": f'{sm.GENERATION_TOKENS_RATE}{{server="triton"}}',
            "eval_time": "10m",
            "exp_samples": [],
        },
    ]
    unit_test(tmp_path, paths, order, series, alerts=[alert], exprs=exprs)


# --- the panel -----------------------------------------------------------------------------------


def test_the_workload_view_has_an_inference_row_per_figure(views: dict[str, ClusterView]) -> None:
    boards = [
        json.loads(next(iter(o.body["data"].values())))
        for o in dashboards.render(views["prod-east"])
        if isinstance(o, Manifest) and o.kind == "ConfigMap"
    ]
    workload = next(b for b in boards if "workload" in b["uid"])
    names = [v["name"] for v in workload["templating"]["list"]]
    assert {"team", "namespace", "endpoint"} <= set(names)
    panels = workload["panels"]
    row = next(i for i, p in enumerate(panels) if p.get("title") == "Inference endpoints")
    exprs = [t["expr"] for p in panels[row + 1 :] for t in p.get("targets", [])]
    for series in (
        sm.TTFT_P95,
        sm.INTER_TOKEN_P95,
        sm.PROMPT_TOKENS_RATE,
        sm.GENERATION_TOKENS_RATE,
        sm.REQUESTS_RATE,
        sm.ERRORS_RATE,
        sm.KV_CACHE_AVG,
        sm.WAITING,
        sm.BATCH_SIZE,
    ):
        matching = [e for e in exprs if e.startswith(series + "{")]
        assert matching, series
        assert all('endpoint=~"$endpoint"' in e and 'team=~"$team"' in e for e in matching)


# --- the SLO policy, its hints applied --------------------------------------------------------


def _validate(gpuplane, platform: Path) -> list[dict[str, Any]]:
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    return json.loads(result.output)["findings"]


@pytest.mark.parametrize(
    ("file", "old", "new", "rule", "hint", "fixed"),
    [
        (
            "teams/llm.yaml",
            "slo: {p95: 500ms}",
            "slo: {p95: 450ms}",
            "endpoint-slo-bucket",
            "set `p95: 250ms` or `p95: 500ms`",
            "slo: {p95: 250ms}",
        ),
        (
            "teams/recsys.yaml",
            "slo: {p95: 100ms}",
            "slo: {p95: 150ms}",
            "endpoint-slo-bucket",
            "set `p95: 100ms` or `p95: 500ms`",
            "slo: {p95: 500ms}",
        ),
        (
            "teams/recsys.yaml",
            "slo: {p95: 100ms}",
            "slo: {p95: 100ms, metric: ttft}",
            "endpoint-slo-metric",
            "set `metric: latency`",
            "slo: {p95: 100ms, metric: latency}",
        ),
    ],
)
def test_an_slo_the_server_cannot_count_is_refused_on_its_line(
    platform: Path, gpuplane, file: str, old: str, new: str, rule: str, hint: str, fixed: str
) -> None:
    path = platform / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    line = text[: text.index(old)].count("\n") + 1
    fired = [d for d in _validate(gpuplane, platform) if d["rule"] == rule]
    assert len(fired) == 1, fired
    assert fired[0]["line"] == line and fired[0]["level"] == "error"
    assert fired[0]["hint"] == hint
    path.write_text(text.replace(old, fixed, 1))
    assert not [d for d in _validate(gpuplane, platform) if d["rule"].startswith("endpoint-slo")]


# --- what each template makes its server export --------------------------------------------------

ALWAYS = ""
HISTOGRAM = ("_bucket", "_count", "_sum")
VLLM_EXPORTS = {
    # vLLM v0.34.0 vllm/v1/metrics/loggers.py: PrometheusStatLogger runs unless
    # --disable-log-stats (default False, vllm/engine/arg_utils.py); /metrics is mounted on the
    # API server's own port (entrypoints/serve/instrumentator/metrics.py attach_router)
    **dict.fromkeys(
        [
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:kv_cache_usage_perc",
            "vllm:prompt_tokens_total",
            "vllm:generation_tokens_total",
            "vllm:request_success_total",
            "http_requests_total",  # prometheus-fastapi-instrumentator, Instrumentator().add()
        ],
        ALWAYS,
    ),
    **{
        f"{family}{suffix}": ALWAYS
        for family in (
            "vllm:time_to_first_token_seconds",
            "vllm:inter_token_latency_seconds",
            "vllm:request_time_per_output_token_seconds",
            "vllm:e2e_request_latency_seconds",
        )
        for suffix in HISTOGRAM
    },
}
SGLANG_EXPORTS = {
    # SGLang v0.5.23 srt/observability/metrics_collector.py, served only with --enable-metrics
    # (srt/entrypoints/http_server.py: add_prometheus_middleware under enable_metrics)
    **dict.fromkeys(
        [
            "sglang:num_running_reqs",
            "sglang:num_queue_reqs",
            "sglang:token_usage",
            "sglang:prompt_tokens_total",
            "sglang:generation_tokens_total",
            "sglang:num_requests_total",
            "sglang:num_aborted_requests_total",
        ],
        "--enable-metrics",
    ),
    **{
        f"{family}{suffix}": "--enable-metrics"
        for family in (
            "sglang:time_to_first_token_seconds",
            "sglang:inter_token_latency_seconds",
            "sglang:e2e_request_latency_seconds",
        )
        for suffix in HISTOGRAM
    },
}
TRITON_EXPORTS = {
    # Triton v2.71.0 core src/metrics.cc: on with --allow-metrics (default true) on
    # --metrics-port; the latency histogram only with histogram_latencies=true
    # (src/metric_model_reporter.cc), passed as --metrics-config=<setting>=<value>
    # (server src/command_line_parser.cc ParseMetricsConfigOption)
    **dict.fromkeys(
        [
            "nv_inference_request_success",
            "nv_inference_request_failure",
            "nv_inference_count",
            "nv_inference_exec_count",
            "nv_inference_pending_request_count",
        ],
        ALWAYS,
    ),
    **{
        f"nv_inference_first_response_histogram_ms{suffix}": (
            "--metrics-config=histogram_latencies=true"
        )
        for suffix in HISTOGRAM
    },
}
EXPORTS: dict[str, dict[str, str]] = {
    "vllm": VLLM_EXPORTS,
    "sglang": SGLANG_EXPORTS,
    "triton": TRITON_EXPORTS,
}
"""Per server, each metric its pinned release exports and the flag it needs ('' none)."""
SILENCING = {"vllm": "--disable-log-stats", "sglang": "", "triton": "--allow-metrics=false"}
"""A flag that would turn the server's metrics off."""

_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}")


def raw_metrics(rules: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(server, metric) of every server-own series the serving groups' rules select."""
    found = set()
    for body in rules:
        for group in body["spec"]["groups"]:
            if not group["name"].startswith("gpuplane.serving."):
                continue
            for rule in group["rules"]:
                for name, matchers in _SELECTOR.findall(rule["expr"]):
                    if name.startswith("gpuplane_"):
                        continue
                    server = re.search(r'server="(\w+)"', matchers)
                    assert server is not None, (name, rule["expr"])
                    found.add((server[1], name))
    return found


def _endpoint_args(view: ClusterView) -> dict[str, list[str]]:
    """Each endpoint's Deployment template arguments, by endpoint name."""
    from renderer.layers.workload_templates import workloads

    found = {}
    for item in workloads.render(view):
        body = item.body
        if body.get("kind") != "Deployment" or ENDPOINT_LABEL not in body["metadata"]["labels"]:
            continue
        (container,) = body["spec"]["template"]["spec"]["containers"]
        found[body["metadata"]["labels"][ENDPOINT_LABEL]] = container.get("args", [])
    return found


def test_every_metric_the_rules_read_is_one_the_template_makes_its_server_export(
    views: dict[str, ClusterView],
) -> None:
    seen = set()
    for view in views.values():
        args = _endpoint_args(view)
        read = raw_metrics(_rules(view))
        for served in view.endpoints():
            kind = served.endpoint.server
            flags = args[served.name]
            for server, metric in sorted(read):
                if server != kind:
                    continue
                assert metric in EXPORTS[kind], f"{kind} {SERVERS[kind].release} has no {metric}"
                need = EXPORTS[kind][metric]
                assert need == ALWAYS or need in flags, (served.name, metric, need)
                seen.add(kind)
            assert not SILENCING[kind] or SILENCING[kind] not in flags
    assert seen == {"vllm", "sglang", "triton"}


def test_a_renamed_metric_would_be_caught() -> None:
    """The check above fails on the v0.10 line's names the rules once read."""
    rule = {"expr": 'rate(vllm:time_per_output_token_seconds_bucket{server="vllm"}[5m])'}
    group = {"name": "gpuplane.serving.vllm", "rules": [rule]}
    read = raw_metrics([{"spec": {"groups": [group]}}])
    assert read == {("vllm", "vllm:time_per_output_token_seconds_bucket")}
    assert "vllm:time_per_output_token_seconds_bucket" not in EXPORTS["vllm"]


def test_the_server_metrics_table_names_only_what_the_release_exports() -> None:
    for kind, mx in sm.SERVER_METRICS.items():
        names: list[str] = []
        for series in (
            mx.prompt_tokens,
            mx.generation_tokens,
            mx.requests,
            mx.errors,
            mx.kv_cache,
            mx.waiting,
            mx.running,
            *(mx.executions or ()),
        ):
            if series is not None:
                names.append(series.name)
        for hist in (mx.ttft, mx.inter_token, mx.latency):
            if hist is not None:
                names.extend(f"{hist.name}{suffix}" for suffix in HISTOGRAM)
        assert set(names) <= set(EXPORTS[kind]), (kind, set(names) - set(EXPORTS[kind]))


def test_histogram_bounds_are_the_pinned_releases_defaults() -> None:
    """vllm/v1/metrics/buckets.py at v0.34.0; SGLang's TokenizerMetricsCollector defaults at
    v0.5.23; Triton's metric_model_reporter.h."""
    vllm, sglang = sm.SERVER_METRICS["vllm"], sm.SERVER_METRICS["sglang"]
    assert vllm.inter_token is not None and vllm.inter_token.buckets == (
        *(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0),
        *(2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0),
    )
    assert vllm.ttft is not None and vllm.ttft.buckets == (
        *(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0),
        *(2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0),
    )
    assert vllm.latency is not None and vllm.latency.buckets == (
        *(0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0),
        *(40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0),
    )
    base = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
    assert sglang.ttft is not None and sglang.ttft.buckets == base
    assert sglang.latency is not None and sglang.latency.buckets == (
        *base,
        *(600, 1200, 1800, 2400),
    )
    assert sglang.inter_token is not None and sglang.inter_token.buckets == (
        *(0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040),
        *(0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0),
    )


# --- the PodMonitor's relabelings after the operator's -------------------------------------------


def operator_relabelings(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Prometheus Operator v0.86.2's own relabelings of a PodMonitor endpoint without a port
    (pkg/prometheus/promcfg.go generatePodMonitorConfig), in its order, before the endpoint's:
    the running-pod filter, a `keep` per selector label, then namespace, container, pod, job."""
    selector = body["spec"]["selector"]["matchLabels"]
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    found: list[dict[str, Any]] = [
        {
            "action": "drop",
            "sourceLabels": ["__meta_kubernetes_pod_phase"],
            "regex": "(Failed|Succeeded)",
        },
    ]
    for label, value in selector.items():
        meta = "__meta_kubernetes_pod_label_" + re.sub(r"[^A-Za-z0-9_]", "_", label)
        found.append({"action": "keep", "sourceLabels": [meta], "regex": value})
    for source, target in (
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_pod_container_name", "container"),
        ("__meta_kubernetes_pod_name", "pod"),
    ):
        found.append({"action": "replace", "sourceLabels": [source], "targetLabel": target})
    found.append({"action": "replace", "targetLabel": "job", "replacement": f"{namespace}/{name}"})
    return found


def test_the_monitors_relabelings_run_after_the_operators_and_still_see_the_port(
    views: dict[str, ClusterView],
) -> None:
    for served in endpoints(views).values():
        body = monitors.pod_monitor(served)
        (entry,) = body["spec"]["podMetricsEndpoints"]
        port = SERVERS[served.endpoint.server].metrics_port_of(served.endpoint.port)
        target = {
            "__meta_kubernetes_namespace": served.namespace.name,
            "__meta_kubernetes_pod_name": f"{served.name}-0",
            "__meta_kubernetes_pod_container_name": served.endpoint.server,
            "__meta_kubernetes_pod_phase": "Running",
            "__meta_kubernetes_pod_label_gpuplane_dev_endpoint": served.name,
            monitors.PORT_NUMBER_META: str(port),
        }
        rules = operator_relabelings(body) + entry["relabelings"]
        kept = relabel_all(target, rules)
        assert kept is not None, served.name
        assert kept["namespace"] == served.namespace.name
        assert kept["job"] == f"{served.namespace.name}/{body['metadata']['name']}"
        assert {k: kept[k] for k in ENDPOINT_SERIES_LABELS} == monitors.series_labels(served)
        other = {**target, monitors.PORT_NUMBER_META: str(port + 1)}
        assert relabel_all(other, rules) is None


def relabel_all(target: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """`relabel` with `drop` too."""
    kept: list[dict[str, Any]] = []
    for r in rules:
        if r["action"] == "drop":
            value = ";".join(target.get(s, "") for s in r["sourceLabels"])
            if re.fullmatch(r["regex"], value):
                return None
            continue
        kept.append(r)
    return relabel(target, kept)
