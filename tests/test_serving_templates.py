"""A Deployment template per declared endpoint, per server kind (issue 31, part 6).

Expectations come from the team files as written (read here with yaml, not through the model)
and from the servers' own source at the releases the templates pin:

- vLLM v0.34.0: `vllm serve <model_tag>` (vllm/entrypoints/cli/serve.py); --served-model-name,
  --tensor-parallel-size, --gpu-memory-utilization, --shutdown-timeout (vllm/engine/arg_utils.py;
  the timeout's default 0 aborts in-flight requests on SIGTERM, launchers/launcher.py); --host,
  --port, default 8000 (entrypoints/common/cli_args.py); /health answers 200 once the engine is
  up, 503 once it died (entrypoints/serve/instrumentator/health.py).
- SGLang v0.5.23: `python3 -m sglang.launch_server`; --model-path, --served-model-name, --host
  (default 127.0.0.1), --port (default 30000), --tp-size, --enable-metrics (default off),
  --mem-fraction-static (srt/arg_groups/fields/*.py, `_field_to_cli_name`); /ready answers 200
  only once the server is Up and not draining, /health runs a generation that may take up to
  SGLANG_HEALTH_CHECK_TIMEOUT = 20 s (srt/entrypoints/http_server.py).
- Triton v2.71.0 (src/command_line_parser.{cc,h}): --model-repository, --model-control-mode
  (explicit: only --load-model models load), --load-model, --http-port (8000), --metrics-port
  (8002), --allow-grpc, --exit-timeout-secs (default 30), --metrics-config=<setting>=<value>
  (ParseMetricsConfigOption; core src/metric_model_reporter.cc turns the latency histograms on
  only for `histogram_latencies` = `true`); /v2/health/ready, /v2/health/live
  (src/http_server.cc `server_regex_`). Server build.py at v2.71.0: release_version 2.71.0 is
  triton_container_version 26.07, so the image is nvcr.io/nvidia/tritonserver:26.07-py3.
- Kueue v0.19.2 pkg/controller/jobs/deployment/deployment_webhook.go: the webhook reads the
  queue name and WorkloadPriorityClass from the Deployment's own labels and copies them to the
  pod template, so each replica is queued.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.apiserver import pod_security
from renderer.admission.apiserver.podsecurity import api, registry
from renderer.commands.fit import check_fit
from renderer.layers.workload_templates import workloads
from renderer.model.names import PRIORITY_LABEL, QUEUE_LABEL
from renderer.model.platform import Platform
from renderer.model.serving import ENDPOINT_LABEL, RELEASE_ANNOTATION, ROLLOUT_SURGE, SERVERS
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import Values
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform
from tests.conftest import REPO, copy_inputs, edit_once

DEFAULT_PORT = {"vllm": 8000, "sglang": 30000, "triton": 8000}
READY_PATH = {"vllm": "/health", "sglang": "/ready", "triton": "/v2/health/ready"}
LIVE_PATH = {"vllm": "/health", "sglang": "/health", "triton": "/v2/health/live"}
SGLANG_HEALTH_CHECK_TIMEOUT = 20
TRITON_METRICS_PORT = 8002
FLAGS = {
    "vllm": {
        "--served-model-name",
        "--host",
        "--port",
        "--tensor-parallel-size",
        "--gpu-memory-utilization",
        "--shutdown-timeout",
    },
    "sglang": {
        "--model-path",
        "--served-model-name",
        "--host",
        "--port",
        "--tp-size",
        "--enable-metrics",
        "--mem-fraction-static",
    },
    "triton": {
        "--model-repository",
        "--model-control-mode",
        "--load-model",
        "--http-port",
        "--metrics-port",
        "--allow-grpc",
        "--exit-timeout-secs",
        "--metrics-config",
    },
}
"""Every flag of the pinned release a template may pass (see the module docstring)."""
COMMAND = {
    "vllm": ["vllm", "serve"],
    "sglang": ["python3", "-m", "sglang.launch_server"],
    "triton": ["tritonserver"],
}


def _declared(root: Path = REPO) -> list[tuple[str, str, dict[str, Any]]]:
    """(team, namespace, endpoint) as the team files write them."""
    found = []
    for path in sorted((root / "teams").glob("*.yaml")):
        team = yaml.safe_load(path.read_text())
        for ns in team["spec"]["namespaces"]:
            for endpoint in ns.get("endpoints", []):
                found.append((team["metadata"]["name"], ns["name"], endpoint))
    return found


def _render(
    root: Path, *, refused: str | None = None
) -> tuple[Platform, list[tuple[ClusterView, Values]]]:
    """The templates of the platform at `root`, which validates with no error but, where
    given, the one of rule `refused` (rendered anyway, to show what the cluster would do)."""
    loaded = load_platform(root)
    errors = [d for d in loaded.diagnostics if d.severity.value == "error"]
    assert [d.rule for d in errors] == ([refused] if refused else []), loaded.diagnostics
    platform = loaded.platform
    out = []
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        out.extend((view, item) for item in workloads.render(view))
    return platform, out


@pytest.fixture(scope="module")
def example() -> tuple[Platform, list[tuple[ClusterView, Values]]]:
    return _render(REPO)


def _templates(
    example: tuple[Platform, list[tuple[ClusterView, Values]]],
) -> Iterator[tuple[ClusterView, Values, dict[str, Any]]]:
    """Each declared endpoint's template, with the endpoint as written."""
    by_path = {item.path: (view, item) for view, item in example[1]}
    declared = _declared()
    assert {e["server"] for _, _, e in declared} == {"vllm", "sglang", "triton"}
    for _, namespace, endpoint in declared:
        view, item = by_path[f"templates/{namespace}/deployment-{endpoint['name']}.yaml"]
        yield view, item, endpoint


def _container(item: Values) -> dict[str, Any]:
    (container,) = item.body["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _flags(args: list[str]) -> dict[str, str]:
    """`--name=value` (or a bare `--name`) of an argument list; positional ones under ''."""
    flags: dict[str, str] = {}
    for arg in args:
        name, _, value = arg.partition("=")
        flags[name if arg.startswith("--") else ""] = value if arg.startswith("--") else arg
    return flags


# --- one template per endpoint --------------------------------------------------------------------


def test_each_endpoint_gets_one_deployment_and_its_namespace_no_generic_one(example: Any) -> None:
    templates = list(_templates(example))
    assert len(templates) == len(_declared())
    serving = {ns for _, ns, _ in _declared()}
    for _, item in example[1]:
        namespace = item.body["metadata"]["namespace"]
        if namespace in serving and item.body["kind"] == "Deployment":
            names = {e["name"] for _, ns, e in _declared() if ns == namespace}
            assert item.body["metadata"]["name"] in names, item.path


def test_named_labelled_and_queued_like_the_endpoint(example: Any) -> None:
    teams = {ns: team for team, ns, _ in _declared()}
    for _, item, endpoint in _templates(example):
        body = item.body
        namespace = body["metadata"]["namespace"]
        assert body["metadata"]["name"] == endpoint["name"]
        labels = body["metadata"]["labels"]
        pods = body["spec"]["template"]["metadata"]["labels"]
        for found in (labels, pods):
            assert found[ENDPOINT_LABEL] == endpoint["name"]
            assert found["gpuplane.dev/team"] == teams[namespace]
            assert found["gpuplane.dev/pool"] == endpoint["pool"]
            assert found["gpuplane.dev/purpose"] == "inference"
        # Kueue's deployment webhook reads these from the Deployment itself
        assert labels[QUEUE_LABEL] == "default"
        assert labels[PRIORITY_LABEL] and pods[PRIORITY_LABEL] == labels[PRIORITY_LABEL]
        assert body["spec"]["selector"] == {"matchLabels": {ENDPOINT_LABEL: endpoint["name"]}}
        assert body["spec"]["replicas"] == endpoint["replicas"]["min"]


def test_each_replica_requests_the_endpoints_gpus_on_its_pool(example: Any) -> None:
    for view, item, endpoint in _templates(example):
        spec = item.body["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"gpuplane.dev/pool": endpoint["pool"]}
        requests = _container(item)["resources"]["requests"]
        # both example pools advertise nvidia.com/gpu (l40s-infer: renameByDefault false)
        assert requests["nvidia.com/gpu"] == endpoint.get("gpus", 1)
        assert view.platform.pools[endpoint["pool"]].cluster == view.cluster.name


# --- the server's own command line ----------------------------------------------------------------


def test_command_lines_follow_each_servers_cli(example: Any) -> None:
    for view, item, endpoint in _templates(example):
        server, model = endpoint["server"], endpoint["model"]
        container = _container(item)
        assert container["command"] == COMMAND[server]
        flags = _flags(container["args"])
        assert set(flags) - {""} <= FLAGS[server], flags
        port = str(endpoint.get("port", DEFAULT_PORT[server]))
        gpus = str(endpoint.get("gpus", 1))
        models = "/data/models"  # both example clusters have a shared class, mounted at /data
        assert view.cluster.shared_class is not None
        if server == "vllm":
            assert flags[""] == f"{models}/{model}"  # vllm serve's positional model_tag
            assert flags["--served-model-name"] == model
            assert flags["--tensor-parallel-size"] == gpus
            assert (flags["--host"], flags["--port"]) == ("0.0.0.0", port)
            assert int(flags["--shutdown-timeout"]) > 0  # 0 aborts in-flight requests
        elif server == "sglang":
            assert flags["--model-path"] == f"{models}/{model}"
            assert flags["--served-model-name"] == model
            assert flags["--tp-size"] == gpus
            assert (flags["--host"], flags["--port"]) == ("0.0.0.0", port)
            assert "--enable-metrics" in flags  # else SGLang serves no /metrics
        else:
            assert flags["--model-repository"] == models
            assert flags["--model-control-mode"] == "explicit"
            assert flags["--load-model"] == model
            assert flags["--http-port"] == port
            assert flags["--metrics-port"] == str(TRITON_METRICS_PORT)
            assert int(flags["--exit-timeout-secs"]) > 0
            # without it Triton exports no nv_inference_first_response_histogram_ms: no SLO data
            assert flags["--metrics-config"] == "histogram_latencies=true"


RELEASES = {
    "vllm": ("v0.34.0", "docker.io/vllm/vllm-openai:v0.34.0"),
    "sglang": ("v0.5.23", "docker.io/lmsysorg/sglang:v0.5.23"),
    "triton": ("v2.71.0", "nvcr.io/nvidia/tritonserver:26.07-py3"),
}
"""The release each template's flags were read at (module docstring) and its upstream image."""


def test_each_template_names_the_release_it_follows(example: Any) -> None:
    for _, item, endpoint in _templates(example):
        release, image = RELEASES[endpoint["server"]]
        note = item.body["metadata"]["annotations"][RELEASE_ANNOTATION]
        assert f" {release}: " in note and image in note
        server = SERVERS[endpoint["server"]]
        assert (server.release, server.upstream_image) == (release, image)


def test_ports_are_named_for_the_service_and_the_monitor(example: Any) -> None:
    for _, item, endpoint in _templates(example):
        server = endpoint["server"]
        ports = {p["name"]: p["containerPort"] for p in _container(item)["ports"]}
        expected = {"http": endpoint.get("port", DEFAULT_PORT[server])}
        if server == "triton":
            expected["metrics"] = TRITON_METRICS_PORT
        assert ports == expected


def test_sglang_takes_only_its_share_of_a_time_shared_gpu(tmp_path: Path) -> None:
    """On l40s-infer (four pods per GPU) an SGLang replica takes a quarter of 0.9 of the GPU's
    memory; on whole GPUs SGLang's own default stands."""
    root = copy_inputs(REPO, tmp_path / "repo")
    edit_once(root / "teams/llm.yaml", "server: vllm", "server: sglang")
    # a bound of SGLang's TTFT histogram (rule endpoint-slo-bucket): 500ms is vLLM's only
    edit_once(root / "teams/llm.yaml", "slo: {p95: 500ms}", "slo: {p95: 400ms}")
    _, rendered = _render(root)
    flags = {
        item.body["metadata"]["name"]: _flags(_container(item)["args"])
        for _, item in rendered
        if item.body["metadata"].get("labels", {}).get(ENDPOINT_LABEL)
    }
    assert flags["chat"]["--mem-fraction-static"] == "0.22"  # 0.9 / 4 = 0.225, never rounded up
    assert "--mem-fraction-static" not in flags["candidate"]  # l4-serve: whole GPUs


# --- readiness, liveness, rollout and drain -------------------------------------------------------


def test_ready_only_once_the_model_is_loaded_and_live_while_busy(example: Any) -> None:
    for _, item, endpoint in _templates(example):
        server = endpoint["server"]
        container = _container(item)
        startup, ready, live = (
            container[k] for k in ("startupProbe", "readinessProbe", "livenessProbe")
        )
        assert startup["httpGet"] == {"path": READY_PATH[server], "port": "http"}
        assert ready["httpGet"] == {"path": READY_PATH[server], "port": "http"}
        assert live["httpGet"] == {"path": LIVE_PATH[server], "port": "http"}
        # a large model loads for many minutes: liveness waits for startup, which allows 20+
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 20 * 60
        # a busy server is restarted only after a minute without any answer
        assert live["periodSeconds"] * live["failureThreshold"] >= 60
        if server == "sglang":
            assert live["timeoutSeconds"] > SGLANG_HEALTH_CHECK_TIMEOUT
        deadline = item.body["spec"]["progressDeadlineSeconds"]
        assert deadline > startup["periodSeconds"] * startup["failureThreshold"]


def test_a_rollout_never_goes_below_the_replicas_it_has(example: Any) -> None:
    """The Deployment controller keeps at least replicas - maxUnavailable pods available and
    runs at most replicas + maxSurge (k8s.io/kubernetes pkg/controller/deployment/util
    `MaxUnavailable`, `MaxSurge`): with maxUnavailable 0 a rollout at replicas.min never goes
    below it, and the surge replica is the one rule endpoint-quota counts."""
    for _, item, endpoint in _templates(example):
        strategy = item.body["spec"]["strategy"]
        assert strategy["type"] == "RollingUpdate"
        assert strategy["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": ROLLOUT_SURGE}
        least = endpoint["replicas"]["min"] - strategy["rollingUpdate"]["maxUnavailable"]
        assert least >= endpoint["replicas"]["min"]


def test_a_stopping_replica_drains_before_it_is_killed(example: Any) -> None:
    for _, item, endpoint in _templates(example):
        spec = item.body["spec"]["template"]["spec"]
        container = _container(item)
        flags = _flags(container["args"])
        drain = {"vllm": "--shutdown-timeout", "triton": "--exit-timeout-secs"}.get(
            endpoint["server"]
        )
        pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        assert pre_stop >= 5  # the gateway stops routing to it first
        budget = pre_stop + (int(flags[drain]) if drain else 120)
        assert spec["terminationGracePeriodSeconds"] > budget


# --- accepted by the platform's own checks --------------------------------------------------------


def test_schema_valid_at_the_clusters_version(example: Any, validator: OutputValidator) -> None:
    for view, item, _ in _templates(example):
        assert validator.validate(item.body, view.cluster.kubernetes_version) == []


def test_pods_pass_pod_security_restricted(example: Any) -> None:
    for view, item, _ in _templates(example):
        (template,), _ = pod_security.templates(item.body)
        version = api.parse_version(f"v{view.cluster.kubernetes_version}")[0]
        lv = api.LevelVersion(api.Level("restricted"), version)
        meta = item.body["spec"]["template"]["metadata"]
        spec = pod_security.defaulted(item.body["spec"]["template"]["spec"], is_pod=False)
        result = registry.evaluate(lv, meta, spec)
        assert result.allowed, (item.path, result.forbidden_detail(), template)


def test_fit_admits_every_endpoint_template_at_replicas_max(example: Any, tmp_path: Path) -> None:
    """The whole chain: the API server's gates (Pod Security at the namespace's level, the
    platform's ValidatingAdmissionPolicies), then Kueue, each replica a Workload of its own,
    as many as the autoscaler may reach (`fit` sizes an endpoint's Deployment at its
    replicas.max: renderer/admission/endpoints.py)."""
    platform = example[0]
    for view, item, endpoint in _templates(example):
        path = tmp_path / view.cluster.name / item.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(item.body))
        result = check_fit(platform, path)
        assert result.admissible and not result.refusals, result
        assert result.kueue_verdict in ("fits", "borrows"), result
        assert result.replicas == endpoint["replicas"]["max"]
        assert result.admitted_replicas == result.replicas


def test_more_than_one_gpu_on_a_time_sliced_pool_is_refused(tmp_path: Path) -> None:
    """A time-sliced replica is one process's share of a GPU, and the device plugin refuses a
    container that asks for more than one (failRequestsGreaterThanOne, which the gpu layer
    sets): `fit` says so for the template, and tensor parallelism over two shares of maybe
    one GPU would gain nothing anyway."""
    root = copy_inputs(REPO, tmp_path / "repo")
    edit_once(
        root / "teams/llm.yaml", "pool: l40s-infer\n", "pool: l40s-infer\n          gpus: 2\n"
    )
    # the policy refuses it first, on the gpus line (rule endpoint-shared-gpus) ...
    platform, rendered = _render(root, refused="endpoint-shared-gpus")
    (item,) = [i for _, i in rendered if i.path == "templates/llm-serve/deployment-chat.yaml"]
    assert _flags(_container(item)["args"])["--tensor-parallel-size"] == "2"
    # ... and the cluster would too: the device plugin refuses the template's pods
    path = tmp_path / "prod-east" / item.path
    path.parent.mkdir(parents=True)
    path.write_text(dump(item.body))
    result = check_fit(platform, path)
    assert not result.admissible
    assert "failRequestsGreaterThanOne" in str(result), result


def test_a_mig_endpoint_requests_its_profile(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    pool = root / "pools/a100-mig.yaml"
    edit_once(pool, "workload: notebooks", "workload: online-inference")
    edit_once(pool, "storageReadGBps: 2", "storageReadGBps: 2\n    inferenceP95Ms: 250")
    edit_once(
        root / "teams/llm.yaml",
        "pool: l40s-infer\n",
        "pool: a100-mig\n          profile: 3g.40gb\n",
    )
    # llm's nominal on 3g.40gb is 8: (7 + 1 surge) x 1 fits it (rule endpoint-quota)
    edit_once(root / "teams/llm.yaml", "{min: 2, max: 8}", "{min: 2, max: 7}")
    _, rendered = _render(root)
    (item,) = [i for _, i in rendered if i.path == "templates/llm-serve/deployment-chat.yaml"]
    requests = _container(item)["resources"]["requests"]
    gpus = {k: v for k, v in requests.items() if k not in ("cpu", "memory")}
    assert gpus == {"nvidia.com/mig-3g.40gb": 1}  # the device plugin's mixed-strategy name
