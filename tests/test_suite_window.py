"""The acceptance window (docs/acceptance-window.md): on a Kueue cluster with
`spec.acceptance.window`, the weekly run takes each tested pool whole, taints its nodes, evicts
what does not tolerate the taint, runs every step on every node through the pool's own
ClusterQueue, and gives the nodes back on every exit path.

Expectations come from the input files (read with PyYAML, not the engine), from Kubernetes'
rules (a toleration matches a taint: `Toleration.ToleratesTaint`, k8s.io/api core/v1
toleration.go; the Eviction API), from Kueue v0.19.2 (a ClusterQueue without a cohort lends and
borrows nothing; `podset-required-topology` puts the whole pod set in one domain) and from Argo
Workflows v4.0 (an exit handler runs whatever the Workflow's phase, past its deadline too:
workflow/controller/workflowpod.go, "ignore the workflow deadline for exit handler").
"""

from __future__ import annotations

import io
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.model.view import ClusterView
from renderer.pipeline import Rendered
from tests.conftest import REPO, render_clean
from workflows.suites import placement, program, settings
from workflows.suites.scripts import WINDOW

TAINT_KEY = "gpuplane.dev/acceptance-window"
LOSS_KEY = "gpuplane.dev/acceptance-node-loss"
RUN = "{{workflow.uid}}"
HOSTNAME = "kubernetes.io/hostname"


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


def cluster_file(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO / "clusters" / f"{name}.yaml").read_text())["spec"]
    return spec


def pool_file(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO / "pools" / f"{name}.yaml").read_text())["spec"]
    return spec


def objects(rendered: Rendered, cluster: str, kind: str) -> dict[str, dict[str, Any]]:
    return {m.name: dict(m.body) for m in rendered.manifests[cluster] if m.kind == kind}


def windowed_pools(rendered: Rendered) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(cluster, pool, its window WorkflowTemplate) for every tested pool of a cluster whose
    file declares a window."""
    for cluster in sorted(rendered.manifests):
        if "window" not in cluster_file(cluster).get("acceptance", {}):
            continue
        templates = objects(rendered, cluster, "WorkflowTemplate")
        for name, body in sorted(templates.items()):
            if name.startswith("acceptance-window-"):
                yield cluster, name.removeprefix("acceptance-window-"), body


def template(body: dict[str, Any], name: str) -> dict[str, Any]:
    spec = body["spec"].get("workflowSpec", body["spec"])
    found: dict[str, Any] = next(t for t in spec["templates"] if t["name"] == name)
    return found


def job(body: dict[str, Any], step: str) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(template(body, f"{step}-job")["resource"]["manifest"])
    return found


def whole_node(pool: dict[str, Any], resource: str) -> int:
    """The devices of `resource` one node of the pool advertises, from its file: its GPUs, or
    its MIG instances of that profile (layout per GPU times GPUs); on a time-sliced pool one
    replica is the most a pod may ask (failRequestsGreaterThanOne)."""
    if pool["sharing"] == "mig":
        profile = resource.removeprefix("nvidia.com/mig-")
        return int(pool["gpusPerNode"] * pool["mig"]["layout"][profile])
    if pool["sharing"] in ("time-slicing", "mps"):
        return 1
    return int(pool["gpusPerNode"])


def test_only_prod_east_has_a_window_and_every_tested_pool_gets_a_template(
    example: Rendered,
) -> None:
    assert cluster_file("prod-east")["acceptance"]["window"] == {
        "schedule": "0 3 * * 6",
        "hours": 4,
    }
    found = {(c, p) for c, p, _ in windowed_pools(example)}
    assert found == {
        ("prod-east", "h100-train"),
        ("prod-east", "a100-mig"),
        ("prod-east", "l40s-infer"),
    }
    for cluster in ("staging-west",):
        names = objects(example, cluster, "WorkflowTemplate")
        assert not [n for n in names if n.startswith("acceptance-window-")]
        assert not [n for n in objects(example, cluster, "ClusterQueue") if "window" in n]


# --- the Jobs' shapes -----------------------------------------------------------------------------


def test_the_node_check_runs_one_whole_node_pod_on_every_node(example: Rendered) -> None:
    """`nodes`: Pool.size pods (the file's `nodes`, or `nodes.max`), each asking for every
    device of a node, one per node: a required anti-affinity on the hostname among the Job's
    own pods, or, where Kueue places the pods (a topology-aware flavor), a request no two of
    which fit one node's devices. Never `podset-required-topology: hostname`, which would put
    the whole pod set on one node."""
    for _, name, body in windowed_pools(example):
        pool = pool_file(name)
        nodes = pool["nodes"] if isinstance(pool["nodes"], int) else pool["nodes"]["max"]
        spec = job(body, "nodes")
        assert spec["spec"]["completions"] == spec["spec"]["parallelism"] == nodes, name
        pod = spec["spec"]["template"]["spec"]
        resources = pod["containers"][0]["resources"]
        (resource,) = [r for r in resources["limits"] if r.startswith("nvidia.com/")]
        per_pod = resources["limits"][resource]
        assert resources["requests"][resource] == per_pod
        assert per_pod == whole_node(pool, resource), name
        annotations = spec["spec"]["template"]["metadata"].get("annotations", {})
        assert "kueue.x-k8s.io/podset-required-topology" not in annotations
        affinity = pod.get("affinity", {}).get("podAntiAffinity", {})
        terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution", [])
        if terms:
            (term,) = terms
            assert term["topologyKey"] == HOSTNAME
            labels = spec["spec"]["template"]["metadata"]["labels"]
            selector = term["labelSelector"]["matchLabels"]
            assert selector.items() <= labels.items()  # it selects the Job's own pods
        else:
            # Kueue places them: two pods of this size never fit one node
            assert 2 * per_pod > whole_node(pool, resource) or pool["sharing"] == "full-gpu"
            assert per_pod == pool["gpusPerNode"] or pool["sharing"] == "mig", name
        command = json.loads(pod["containers"][0]["args"][0])["run"][0][1]
        if nodes > 1:
            assert f"--nnodes={nodes}" in command and "nodes" in command
        assert spec["spec"]["activeDeadlineSeconds"] <= 4 * 3600


def test_every_window_job_goes_through_the_pools_window_queue(example: Rendered) -> None:
    for cluster, name, body in windowed_pools(example):
        local_queues = objects(example, cluster, "LocalQueue")
        queue = f"gpuplane-window-{name}"
        assert local_queues[queue]["spec"]["clusterQueue"] == queue
        assert local_queues[queue]["metadata"]["namespace"] == settings.JOBS_NAMESPACE
        steps = [
            t["name"][: -len("-job")] for t in body["spec"]["templates"] if "-job" in t["name"]
        ]
        steps = [s for s in steps if s != "await"]
        assert {"nodes", "concurrent-storage", "object-store", "node-loss"} <= set(steps), name
        for step in steps:
            labels = job(body, step)["metadata"]["labels"]
            assert labels["kueue.x-k8s.io/queue-name"] == queue, (name, step)
            assert "kueue.x-k8s.io/priority-class" not in labels


def test_the_concurrent_storage_pods_are_on_nodes_of_their_own(example: Rendered) -> None:
    for _, name, body in windowed_pools(example):
        pool = pool_file(name)
        spec = job(body, "concurrent-storage")
        pods = spec["spec"]["completions"]
        assert pods == pool["nodes"], name  # the example's window pools have fixed sizes
        pod = spec["spec"]["template"]["spec"]
        command = json.loads(pod["containers"][0]["args"][0])["run"][0][1]
        assert command[command.index("workflows.probes") + 1] == "storage"
        assert "--workers" in command
        mounts = {m["name"] for m in pod["containers"][0]["volumeMounts"]}
        assert "workspace" in mounts
        affinity = pod.get("affinity", {}).get("podAntiAffinity")
        resource = next(r for r in pod["containers"][0]["resources"]["limits"] if "nvidia" in r)
        if affinity is None:  # Kueue places them: whole nodes
            assert pod["containers"][0]["resources"]["limits"][resource] == whole_node(
                pool, resource
            )


# --- the window's queue ---------------------------------------------------------------------------


def test_the_window_queue_holds_exactly_the_whole_pool(example: Rendered) -> None:
    """Nominal quota: every node's devices, cores and memory (the pool file's `host`), on the
    pool's flavor; no borrowing or lending limit, no cohort (Kueue: a ClusterQueue without a
    cohort neither lends nor borrows)."""
    for cluster, name, _ in windowed_pools(example):
        pool = pool_file(name)
        (queue,) = [
            body
            for qname, body in objects(example, cluster, "ClusterQueue").items()
            if qname == f"gpuplane-window-{name}"
        ]
        spec = queue["spec"]
        assert "cohortName" not in spec
        (group,) = spec["resourceGroups"]
        (flavor,) = group["flavors"]
        assert flavor["name"] == name
        quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
        assert all(set(r) == {"name", "nominalQuota"} for r in flavor["resources"])
        (resource,) = [r for r in quota if r.startswith("nvidia.com/")]
        if pool["sharing"] == "mig":
            per_node = whole_node(pool, resource)
        elif pool["sharing"] == "time-slicing":
            per_node = pool["gpusPerNode"] * pool["timeSlicing"]["replicas"]
        else:
            per_node = pool["gpusPerNode"]
        assert int(quota[resource]) == pool["nodes"] * per_node, name
        assert int(quota["cpu"]) == pool["nodes"] * pool["host"]["cpus"]
        assert binary_bytes(quota["memory"]) == pool["nodes"] * binary_bytes(pool["host"]["memory"])
        assert spec["namespaceSelector"]["matchExpressions"] == [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "In",
                "values": [settings.JOBS_NAMESPACE],
            }
        ]


def binary_bytes(text: str) -> Decimal:
    """A Kubernetes quantity with a binary suffix (Gi, Ti), in bytes."""
    for suffix, power in (("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)):
        if text.endswith(suffix):
            return Decimal(text.removesuffix(suffix)) * 2**power
    return Decimal(text)


def test_the_window_queue_counts_in_no_team_answer(example: Rendered) -> None:
    """The quota policy, fit and plan, the diagrams and README read the team queues' plans
    (`queue_plans.cluster_queues`): the window queue is none of them, and no rendered Cohort
    or team ClusterQueue names it."""
    from renderer.model.queue_plans import cluster_queues

    for cluster in example.manifests:
        view = ClusterView.of(example.platform, example.platform.clusters[cluster])
        assert not [p for p in cluster_queues(view) if p.name.startswith("gpuplane-window-")]
        for qname, body in objects(example, cluster, "ClusterQueue").items():
            if not qname.startswith("gpuplane-window-"):
                assert "gpuplane-window-" not in json.dumps(body), qname
        drawn = [m for m in example.manifests[cluster] if m.layer in ("readme",)]
        for m in drawn:
            assert "gpuplane-window-" not in json.dumps(m.body)


# --- taints and tolerations, as the scheduler matches them -----------------------------------------


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """Kubernetes' Toleration.ToleratesTaint (k8s.io/api core/v1 toleration.go): the effect
    when set must equal, the key when set must equal, then operator "" or Equal compares the
    value, Exists matches any; Lt and Gt compare integers (our values are none)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    operator = toleration.get("operator", "")
    if operator in ("", "Equal"):
        return bool(toleration.get("value", "") == taint.get("value", ""))
    return operator == "Exists"


def schedulable(pod: dict[str, Any], taints: list[dict[str, Any]]) -> bool:
    """TaintToleration: a pod fits a node when each NoSchedule and NoExecute taint is
    tolerated by one of its tolerations."""
    return all(
        any(tolerates(t, taint) for t in pod.get("tolerations", []))
        for taint in taints
        if taint["effect"] in ("NoSchedule", "NoExecute")
    )


def window_taint(template_env: dict[str, str], key: str) -> dict[str, Any]:
    """The taint the window's script puts on a node, from the template's environment: the key
    it is given, the run's uid as value, NoSchedule."""
    assert template_env["RUN"] == RUN
    return {"key": template_env[key], "value": template_env["RUN"], "effect": "NoSchedule"}


def env_of(body: dict[str, Any], name: str) -> dict[str, str]:
    return {e["name"]: e["value"] for e in template(body, name)["container"]["env"]}


def test_window_pods_tolerate_the_reservation_and_nothing_else_does(
    example: Rendered,
) -> None:
    """Every window Job's pods schedule on the pool's nodes once `reserve` tainted them (the
    pool's own taints too), none on the node `lose-node` took away; the same Jobs of the
    borrowing template, and every team workload template of the cluster, do not."""
    for cluster, name, body in windowed_pools(example):
        pool = pool_file(name)
        reserve = window_taint(env_of(body, "reserve"), "TAINT_KEY")
        loss = window_taint(env_of(body, "lose-node"), "NODE_LOSS_KEY")
        assert reserve["key"] == TAINT_KEY and loss["key"] == LOSS_KEY
        node = [*pool.get("taints", []), reserve]
        lost = [*node, loss]
        steps = [
            t["name"][: -len("-job")] for t in body["spec"]["templates"] if "-job" in t["name"]
        ]
        for step in (s for s in steps if s != "await"):
            pod = job(body, step)["spec"]["template"]["spec"]
            assert schedulable(pod, node), (name, step)
            assert not schedulable(pod, lost), (name, step)
            # only the nodes this run reserved: another run's taint keeps it off
            other = [*pool.get("taints", []), {**reserve, "value": "another-run-uid"}]
            assert not schedulable(pod, other), (name, step)
        borrowing = objects(example, cluster, "WorkflowTemplate")[f"acceptance-{name}"]
        pod = job(borrowing, "train")["spec"]["template"]["spec"]
        assert schedulable(pod, pool.get("taints", []))
        assert not schedulable(pod, node)
    # nothing else the platform renders names the taint: no team workload, template or
    # policy tolerates it, so every team pod stays off the reserved nodes
    for cluster in example.manifests:
        for manifest in example.manifests[cluster]:
            text = json.dumps(manifest.body)
            if TAINT_KEY in text:
                assert manifest.kind in ("WorkflowTemplate", "CronWorkflow"), manifest.path
                assert manifest.name.startswith("acceptance-window-"), manifest.path


TOLERATION_CASES = [
    ({"key": TAINT_KEY, "operator": "Equal", "value": "u1", "effect": "NoSchedule"}, True),
    ({"key": TAINT_KEY, "operator": "Equal", "value": "u2", "effect": "NoSchedule"}, False),
    ({"key": TAINT_KEY, "value": "u1"}, True),  # empty operator is Equal, empty effect all
    ({"key": TAINT_KEY, "operator": "Exists"}, True),
    ({"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}, False),
    ({"operator": "Exists"}, True),  # empty key with Exists: every taint
    ({"key": "other", "operator": "Exists"}, False),
    ({"key": TAINT_KEY, "operator": "Gt", "value": "1"}, False),
]


@pytest.mark.parametrize(("toleration", "expected"), TOLERATION_CASES)
def test_the_window_script_matches_tolerations_as_kubernetes_does(
    toleration: dict[str, Any], expected: bool
) -> None:
    taint = {"key": TAINT_KEY, "value": "u1", "effect": "NoSchedule"}
    assert tolerates(toleration, taint) is expected
    namespace: dict[str, Any] = {}
    source = WINDOW[WINDOW.index("def tolerates") : WINDOW.index("def in_the_way")]
    exec(source, namespace)
    assert namespace["tolerates"]({"spec": {"tolerations": [toleration]}}, taint) is expected


# --- the window script against a fake API server ---------------------------------------------------


class FakeApi:
    """Nodes and pods as the API server holds them; evictions as the Eviction API answers
    (429 while a PodDisruptionBudget forbids it, then the pod goes)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: list[dict[str, Any]] = []
        self.blocked: dict[str, int] = {}
        self.evicted: list[str] = []
        self.version = 0

    def node(self, name: str, pool: str, taints: list[dict[str, Any]]) -> None:
        self.version += 1
        self.nodes[name] = {
            "metadata": {
                "name": name,
                "labels": {"gpuplane.dev/pool": pool},
                "resourceVersion": str(self.version),
            },
            "spec": {"taints": list(taints)},
        }

    def pod(self, name: str, node: str, **extra: Any) -> None:
        meta = {"name": name, "namespace": extra.pop("namespace", "team-a")}
        meta.update(extra.pop("meta", {}))
        spec = {"nodeName": node, "tolerations": extra.pop("tolerations", [])}
        self.pods.append({"metadata": meta, "spec": spec, "status": {"phase": "Running"}})

    def answer(self, method: str, url: str, body: Any) -> tuple[int, Any]:
        parsed = urllib.parse.urlparse(url)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        path = parsed.path
        if method == "GET" and path == "/api/v1/nodes":
            key, value = query["labelSelector"].split("=")
            found = [n for n in self.nodes.values() if n["metadata"]["labels"].get(key) == value]
            return 200, {"items": found}
        if path.startswith("/api/v1/nodes/"):
            node = self.nodes[urllib.parse.unquote(path.rsplit("/", 1)[1])]
            if method == "GET":
                return 200, json.loads(json.dumps(node))
            assert method == "PATCH"
            if body["metadata"]["resourceVersion"] != node["metadata"]["resourceVersion"]:
                return 409, {}
            node["spec"]["taints"] = body["spec"]["taints"]
            self.version += 1
            node["metadata"]["resourceVersion"] = str(self.version)
            return 200, node
        if method == "GET" and path.endswith("/pods"):
            items = self.pods
            if "fieldSelector" in query:
                where = query["fieldSelector"].removeprefix("spec.nodeName=")
                items = [p for p in items if p["spec"]["nodeName"] == where]
            if "labelSelector" in query:
                key, value = query["labelSelector"].split("=")
                items = [p for p in items if p["metadata"].get("labels", {}).get(key) == value]
            return 200, {"items": items}
        if method == "POST" and path.endswith("/eviction"):
            name = body["metadata"]["name"]
            if self.blocked.get(name, 0) > 0:
                self.blocked[name] -= 1
                return 429, {}
            self.pods = [p for p in self.pods if p["metadata"]["name"] != name]
            self.evicted.append(name)
            return 201, {}
        raise AssertionError((method, url))


class Response(io.BytesIO):
    status = 200


def run_window(api: FakeApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> None:
    (tmp_path / "token").write_text("t")
    monkeypatch.setattr(ssl, "create_default_context", lambda **_: None)
    monkeypatch.setattr(time, "sleep", lambda _: None)

    def urlopen(request: urllib.request.Request, **_: Any) -> Response:
        body = json.loads(request.data) if request.data else None
        status, answer = api.answer(request.get_method(), request.full_url, body)
        if status >= 400:
            raise urllib.error.HTTPError(request.full_url, status, "no", None, None)  # type: ignore[arg-type]
        response = Response(json.dumps(answer).encode())
        response.status = status
        return response

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    values = {
        "KUBERNETES_SERVICE_HOST": "api",
        "KUBERNETES_SERVICE_PORT": "443",
        "ACCOUNT_DIR": f"{tmp_path}/",
        "SELECTOR": "gpuplane.dev/pool=h100-train",
        "TAINT_KEY": TAINT_KEY,
        "NODE_LOSS_KEY": LOSS_KEY,
        "RUN": "run-1",
        "WAIT_SECONDS": "600",
        "JOBS_NAMESPACE": settings.JOBS_NAMESPACE,
        **env,
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    exec(WINDOW, {"__name__": "__main__"})


def test_reserve_taints_the_pool_and_evicts_what_does_not_tolerate_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pool_taint = {"key": "gpuplane.dev/pool", "value": "h100-train", "effect": "NoSchedule"}
    api = FakeApi()
    api.node("n1", "h100-train", [pool_taint])
    api.node("n2", "h100-train", [])
    api.node("other", "l4", [])
    api.pod("team-train", "n1")
    api.pod("guarded", "n2")
    api.blocked["guarded"] = 2  # a PodDisruptionBudget refuses twice, then allows
    api.pod("plugin", "n1", meta={"ownerReferences": [{"kind": "DaemonSet", "name": "dp"}]})
    api.pod("static", "n2", meta={"annotations": {"kubernetes.io/config.mirror": "x"}})
    api.pod("everything", "n1", tolerations=[{"operator": "Exists"}])
    api.pod("elsewhere", "other")
    run_window(api, monkeypatch, tmp_path, ACTION="reserve")
    reserved = {"key": TAINT_KEY, "value": "run-1", "effect": "NoSchedule"}
    assert api.nodes["n1"]["spec"]["taints"] == [pool_taint, reserved]
    assert api.nodes["n2"]["spec"]["taints"] == [reserved]
    assert api.nodes["other"]["spec"]["taints"] == []
    assert sorted(api.evicted) == ["guarded", "team-train"]
    left = {p["metadata"]["name"] for p in api.pods}
    assert left == {"plugin", "static", "everything", "elsewhere"}

    # release, whatever happened: both keys gone (any value), the pool's own taint kept
    api.nodes["n2"]["spec"]["taints"].append(
        {"key": LOSS_KEY, "value": "old", "effect": "NoSchedule"}
    )
    run_window(api, monkeypatch, tmp_path, ACTION="release")
    assert api.nodes["n1"]["spec"]["taints"] == [pool_taint]
    assert api.nodes["n2"]["spec"]["taints"] == []


def test_reserve_fails_when_the_pool_is_not_free_in_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    api = FakeApi()
    api.node("n1", "h100-train", [])
    api.pod("guarded", "n1")
    api.blocked["guarded"] = 10**6
    with pytest.raises(SystemExit, match="not free in time"):
        run_window(api, monkeypatch, tmp_path, ACTION="reserve", WAIT_SECONDS="0")
    # the taint stays until the exit handler's release
    assert api.nodes["n1"]["spec"]["taints"][0]["key"] == TAINT_KEY


def test_lose_node_takes_the_writers_node_away(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    api = FakeApi()
    api.node("n1", "h100-train", [])
    api.node("n2", "h100-train", [])
    api.pod(
        "writer",
        "n1",
        namespace=settings.JOBS_NAMESPACE,
        meta={"labels": {"batch.kubernetes.io/job-name": "h100-train-node-loss-x"}},
        tolerations=[{"key": TAINT_KEY, "operator": "Equal", "value": "run-1"}],
    )
    run_window(api, monkeypatch, tmp_path, ACTION="lose-node", JOB="h100-train-node-loss-x")
    assert api.nodes["n1"]["spec"]["taints"] == [
        {"key": LOSS_KEY, "value": "run-1", "effect": "NoSchedule"}
    ]
    assert api.nodes["n2"]["spec"]["taints"] == []
    assert api.evicted == ["writer"]


# --- the schedule, the deadlines and the exit handler -------------------------------------------


def test_the_cron_runs_the_window_templates_at_the_clusters_schedule(example: Rendered) -> None:
    for cluster in sorted(example.manifests):
        window = cluster_file(cluster).get("acceptance", {}).get("window")
        body = objects(example, cluster, "CronWorkflow")["acceptance-weekly"]
        cron = body["spec"]
        spec = cron["workflowSpec"]
        if window is None:
            assert cron["schedules"] == [settings.CRON_SCHEDULE]
            assert spec["activeDeadlineSeconds"] == settings.DEADLINE_SECONDS
            continue
        assert cron["schedules"] == [window["schedule"]] and cron["timezone"] == "UTC"
        assert cron["concurrencyPolicy"] == "Forbid"
        # the run stops before the window ends, leaving the release its time
        release = settings.RELEASE_SECONDS
        assert spec["activeDeadlineSeconds"] == window["hours"] * 3600 - release
        run = {t["name"]: t for t in template(body, "acceptance")["dag"]["tasks"]}
        assert {t["templateRef"]["name"] for t in run.values()} == {
            f"acceptance-window-{p}" for _, p, _ in windowed_pools(example)
        }
        assert spec["onExit"] == "cleanup"
        for task in template(body, "cleanup")["dag"]["tasks"]:
            assert task["templateRef"]["template"] == "exit"
            assert "depends" not in task and "when" not in task


def test_the_release_runs_on_every_exit_path(example: Rendered) -> None:
    """Argo runs the exit handler whether the Workflow succeeded, failed, errored or passed its
    deadline; inside it `release` depends on nothing (not on `cleanup`), is retried, and has a
    deadline of its own within the time kept for it. `reserve` runs before anything else."""
    for _, name, body in windowed_pools(example):
        assert body["spec"]["onExit"] == "exit"
        tasks = {t["name"]: t for t in template(body, "exit")["dag"]["tasks"]}
        assert set(tasks) == {"cleanup", "release"}
        for task in tasks.values():
            assert "depends" not in task and "when" not in task
        release = template(body, "release")
        assert release["retryStrategy"]["limit"] == 2
        assert release["activeDeadlineSeconds"] <= settings.RELEASE_SECONDS
        assert {e["name"]: e["value"] for e in release["container"]["env"]}["ACTION"] == "release"
        main = {t["name"]: t for t in template(body, "acceptance")["dag"]["tasks"]}
        assert "depends" not in main["reserve"]
        for task_name in main:
            if task_name == "reserve":
                continue
            assert reaches(main, task_name, "reserve"), (name, task_name)


def reaches(tasks: dict[str, dict[str, Any]], start: str, goal: str) -> bool:
    """Whether `start` runs only after `goal`, through its `depends` (every name it names)."""
    seen, todo = set(), [start]
    while todo:
        current = todo.pop()
        depends = tasks[current].get("depends", "")
        names = {
            word.split(".")[0]
            for word in depends.replace("(", " ").replace(")", " ").split()
            if word not in ("&&", "||")
        }
        if goal in names:
            return True
        todo.extend(n for n in names - seen if n in tasks)
        seen |= names
    return False


def test_the_window_steps_fit_the_window(example: Rendered) -> None:
    """Reserve, every wait on a Job, export and report fit in the run's deadline."""
    for cluster, name, body in windowed_pools(example):
        view = ClusterView.of(example.platform, example.platform.clusters[cluster])
        (target,) = [placement.reserved(t) for t in placement.targets(view) if t.name == name]
        waits = [
            t["activeDeadlineSeconds"]
            for t in body["spec"]["templates"]
            if t["name"].endswith("-job") or t["name"] == "lose-node"
        ]
        deadline = body["spec"]["activeDeadlineSeconds"]
        assert deadline == target.deadline_seconds
        assert settings.RESERVE_SECONDS + sum(waits) <= deadline, (name, waits)
        assert all(w >= settings.WINDOW_STEP_MIN_SECONDS for w in waits)
        steps = program.acceptance_steps(target)
        assert [s.name for s in steps if s.interruption == "node"] == ["node-loss"]
