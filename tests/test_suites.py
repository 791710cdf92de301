"""The acceptance and benchmark suites: what they compile to, and that nothing in them dangles.

Every rendered Argo object is validated against the Argo Workflows CRDs and checked with
`check_references`; the checker itself is tested on broken DAGs and on Argo's own examples. The
Jobs the suites submit are checked with `gpuplane fit`, their probe command lines with the probes'
own argument parser, and the scripts they run are run here, on real probes where that is cheap.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.workloads.readers import PRIORITY_LABEL, QUEUE_LABEL
from renderer.commands.fit import check_fit
from renderer.layers import workflows as layer
from renderer.model import metrics
from renderer.model.nodes import tolerations
from renderer.model.platform import NodeCount, Platform
from renderer.model.queue_plans import cluster_queues
from renderer.model.topology import topology_aware as pool_topology_aware
from renderer.model.view import ClusterView
from renderer.output.canonical import dump
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, load_platform
from tests.conftest import REPO, render_clean
from workflows.probes.cli import build_parser
from workflows.suites import (
    every_pool,
    jobs,
    placement,
    program,
    references,
    scripts,
    settings,
    workflow_templates,
)

CASES = Path(__file__).parent / "cases" / "render"
ADMISSIBLE = ("fits", "borrows", "waits")
"""Kueue's verdicts for a job it can admit (renderer.admission.answer.result)."""
ARGO_EXAMPLES = REPO.parent / "shared" / "reference" / "argo-examples"
ARGO_KINDS = ("WorkflowTemplate", "Workflow", "CronWorkflow")
SAMPLE = {
    "workflow.uid": "0b8f6a2e-5d6c-4f8e-9a57-3c2f0d1e4b6a",
    "workflow.name": "acceptance-postsync",
    "inputs.parameters.image": "registry.example.com/base/gpuplane-acceptance:v0.1.0",
    "inputs.parameters.server-image": "registry.example.com/base/vllm-openai:v0.8.5",
    "inputs.parameters.production-image": "registry.example.com/base/pytorch-train:2026.11",
    "inputs.parameters.image-namespace": "",
    "inputs.parameters.results-name": "acceptance-h100-train",
    "inputs.parameters.window-seconds": "600",
    "inputs.parameters.dataset": "s3://prod-east-ml/gpuplane-acceptance",
    "inputs.parameters.workspace": "h100-train-workspace-x7k2p",
}
"""What Argo would put in place of the `{{…}}` of a Job manifest."""


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


@pytest.fixture(scope="module")
def platform() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def views(platform: Platform) -> Iterator[ClusterView]:
    for name in sorted(platform.clusters):
        yield ClusterView.of(platform, platform.clusters[name])


def all_targets(platform: Platform) -> list[placement.Target]:
    return [t for view in views(platform) for t in placement.targets(view)]


def plan_namespace(platform: Platform, target: placement.Target) -> str:
    """A namespace of the team ClusterQueue the target's suite is sized by."""
    view = ClusterView.of(platform, target.cluster)
    (plan,) = [p for p in cluster_queues(view) if p.name == target.plan]
    return plan.namespaces[0].name


def suite_objects(rendered: Rendered, cluster: str) -> list[Manifest]:
    return [m for m in rendered.manifests[cluster] if m.layer == "workflows"]


def argo(rendered: Rendered, cluster: str, kind: str | None = None) -> dict[str, dict[str, Any]]:
    return {
        m.name: dict(m.body)
        for m in suite_objects(rendered, cluster)
        if m.kind in ARGO_KINDS and (kind is None or m.kind == kind)
    }


def template(body: dict[str, Any], name: str) -> dict[str, Any]:
    spec = body["spec"].get("workflowSpec", body["spec"])
    found: dict[str, Any] = next(t for t in spec["templates"] if t["name"] == name)
    return found


def tasks(body: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in template(body, name)["dag"]["tasks"]}


def substituted(text: str) -> str:
    for key, value in SAMPLE.items():
        text = text.replace("{{" + key + "}}", value)
    assert "{{" not in text, text
    return text


def gpu_container(pod: dict[str, Any]) -> dict[str, Any]:
    """The container that holds a Job pod's GPUs: the inference server (a native sidecar) where
    there is one, else the probe."""
    servers = [c for c in pod.get("initContainers", []) if c["name"] == "server"]
    found: dict[str, Any] = (servers or [c for c in pod["containers"] if c["name"] == "probe"])[0]
    return found


def job_of(body: dict[str, Any], step: str) -> dict[str, Any]:
    manifest = template(body, f"{step}-job")["resource"]["manifest"]
    job: dict[str, Any] = yaml.safe_load(substituted(manifest))
    return job


# --- every object: the CRDs, and no dangling reference ------------------------------------------


def test_every_suite_object_validates_against_the_crds_and_has_no_dangling_reference(
    example: Rendered,
) -> None:
    """`example` is rendered with the Argo Workflows CRDs and fails on any output-schema finding
    (a kind without a schema is one too), so every object here passed its CRD."""
    assert not example.diagnostics
    checked = 0
    for cluster in sorted(example.manifests):
        known = argo(example, cluster, "WorkflowTemplate")
        for manifest in suite_objects(example, cluster):
            if manifest.kind in ARGO_KINDS:
                assert references.check_references(manifest.body, known) == [], manifest.path
                checked += 1
    pools = sum(len(placement.targets(v)) for v in views(example.platform))
    windowed = sum(1 for v in views(example.platform) for t in placement.targets(v) if t.window)
    assert windowed == 3  # prod-east's pools
    # 2 templates per pool, the window's on a cluster with a window, hook, cron
    assert checked == 2 * pools + windowed + 2 * len(example.manifests)


def test_the_objects_the_workflows_create_pass_their_kubernetes_schemas(
    example: Rendered,
) -> None:
    """The Jobs, the workspace claim and the results ConfigMap live inside resource templates
    as text, where the output validator does not look: each is checked here, with Argo's
    placeholders filled in, against the strict schemas of the cluster's Kubernetes version."""
    validator = OutputValidator()
    checked = 0
    for target in all_targets(example.platform):
        version = target.cluster.kubernetes_version
        for name, body in argo(example, target.cluster.name, "WorkflowTemplate").items():
            if not name.endswith(f"-{target.name}"):
                continue
            for t in body["spec"]["templates"]:
                manifest = t.get("resource", {}).get("manifest")
                if manifest is None or t["resource"]["action"] == "get":
                    continue
                if manifest.strip() == "{{inputs.parameters.manifest}}":
                    # the evidence ConfigMap `acceptance record --configmap` writes: checked
                    # against the same schemas in tests/test_acceptance_record.py
                    continue
                text = manifest
                for p in t.get("inputs", {}).get("parameters", []):
                    key = "inputs.parameters." + p["name"]
                    if key not in SAMPLE:  # a result, in the ConfigMap
                        text = text.replace("{{" + key + "}}", '{"ok": true}')
                obj = yaml.safe_load(substituted(text))
                if "generateName" in obj["metadata"]:  # `kubectl create` names it
                    obj["metadata"]["name"] = obj["metadata"]["generateName"] + "x7k2p"
                problems = validator.validate(obj, version)
                assert not problems, (name, t["name"], problems)
                checked += 1
    assert checked > 40


def test_each_pool_a_team_queue_holds_gets_its_templates(example: Rendered) -> None:
    for view in views(example.platform):
        names = set(argo(example, view.cluster.name, "WorkflowTemplate"))
        pools = {t.name for t in placement.targets(view)}
        assert pools == {p.name for p in view.pools}  # every example pool has a team quota
        kinds = ["acceptance", "benchmark"]
        if view.cluster.acceptance_window is not None and view.cluster.scheduler == "kueue":
            kinds.append("acceptance-window")
        assert names == {f"{kind}-{p}" for p in pools for kind in kinds}


def test_a_pool_no_team_has_quota_on_gets_no_suite(platform: Platform) -> None:
    teams = {name: copy.copy(team) for name, team in platform.teams.items() if name != "search"}
    without = Platform(platform.clusters, platform.pools, teams, platform.queues)
    view = ClusterView.of(without, without.clusters["staging-west"])
    # search and llm-eval share staging-west; only llm-eval is left, with quota on both pools
    assert {t.name for t in placement.targets(view)} == {"h200-tune", "l4-serve"}
    lonely = Platform(platform.clusters, platform.pools, {}, platform.queues)
    # no suite, no Manifest: only the chart values of the Argo Workflows the cluster declares
    outputs = list(layer.render(ClusterView.of(lonely, lonely.clusters["staging-west"])))
    assert [(type(o).__name__, o.path) for o in outputs] == [
        ("Values", "values/argo-workflows.yaml")
    ]


def test_the_layer_refuses_to_render_a_dangling_reference(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    monkeypatch.setattr(references, "check_references", lambda *_: ["task x: depends on 'y'"])
    with pytest.raises(layer.DanglingReference, match="depends on 'y'"):
        list(layer.render(view))


# --- the acceptance DAG -------------------------------------------------------------------------


def test_the_acceptance_dag_is_the_guides_seven_steps_in_order(example: Rendered) -> None:
    steps = [name for name, _ in settings.GUIDE_STEPS]
    for cluster in sorted(example.manifests):
        for target in placement.targets(
            ClusterView.of(example.platform, example.platform.clusters[cluster])
        ):
            body = argo(example, cluster)[f"acceptance-{target.name}"]
            assert body["spec"]["entrypoint"] == "acceptance"
            dag = tasks(body, "acceptance")
            expected = [s for s in steps if s != "allreduce" or target.pool.nodes.max > 1]
            # the node check and the data path under load after step 5 (the object store where
            # the cluster has one), then export and report
            data_path = ["nodes", "concurrent-storage"]
            if target.cluster.object_store:
                data_path.append("object-store")
            expected[-2:-2] = data_path
            assert list(dag) == ["workspace", *expected]
            # each step waits for the one before it, and only for it: a chain
            previous = "workspace"
            for step in expected:
                assert dag[step]["depends"] == previous, (target.name, step)
                assert dag[step]["template"] == step
                previous = step


def test_step_three_exactly_for_pools_of_more_than_one_node(example: Rendered) -> None:
    seen = set()
    for target in all_targets(example.platform):
        body = argo(example, target.cluster.name)[f"acceptance-{target.name}"]
        multi = target.pool.nodes.max > 1
        assert ("allreduce" in tasks(body, "acceptance")) is multi
        if multi:
            job = job_of(body, "allreduce")
            pods = job["spec"]["completions"]
            assert pods >= 2, target.name
            spec = job["spec"]["template"]["spec"]
            assert spec["subdomain"] == program.headless_service(target)
            command = json.loads(spec["containers"][0]["args"][0])["run"][0][1]
            assert command[0] == "torchrun" and f"--nnodes={pods}" in command
        seen.add(multi)
    assert seen == {True}  # every example pool has several nodes; the single-node case:


def test_a_single_node_pool_has_no_communication_step() -> None:
    loaded = load_platform(CASES / "minimal")
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    pools = dict(loaded.platform.pools)
    pools["train"] = dataclasses.replace(pools["train"], nodes=NodeCount(1, 1))
    single = dataclasses.replace(loaded.platform, pools=pools)
    view = ClusterView.of(single, single.clusters["lab"])
    bodies = {m.name: dict(m.body) for m in layer.render(view) if isinstance(m, Manifest)}
    body = bodies["acceptance-train"]
    dag = tasks(body, "acceptance")
    assert "allreduce" not in dag and dag["train"]["depends"] == "stage"
    assert "allreduce-job" not in {t["name"] for t in body["spec"]["templates"]}


def lowest_priority(target: placement.Target) -> str:
    """The cohort's lowest WorkloadPriorityClass, from the queue's file."""
    spec = yaml.safe_load((REPO / "queues" / f"{target.queue.name}.yaml").read_text())["spec"]
    lowest = min(spec["priorities"], key=lambda p: p["value"])
    return f"{target.queue.name}-{lowest['name']}"


def platform_queue(rendered: Rendered, target: placement.Target) -> dict[str, Any]:
    (found,) = [
        m.body
        for m in rendered.manifests[target.cluster.name]
        if m.kind == "ClusterQueue" and m.name == f"{target.queue.name}-acceptance"
    ]
    return dict(found)


def test_the_jobs_ask_for_the_pools_gpus_through_the_platforms_local_queue(
    example: Rendered, tmp_path: Path
) -> None:
    """Every Job runs in the suite's Jobs namespace through the LocalQueue of its cohort's
    platform ClusterQueue, at the cohort's lowest priority, asks for no more than that queue may
    borrow, and has a shape a team's queue could be admitted too (`gpuplane fit`, on the same Job
    in the team namespace)."""
    checked = 0
    for target in all_targets(example.platform):
        body = argo(example, target.cluster.name)[f"acceptance-{target.name}"]
        queue = platform_queue(example, target)
        (group,) = queue["spec"]["resourceGroups"]
        (flavor,) = [f for f in group["flavors"] if f["name"] == target.name]
        limit = {r["name"]: r["borrowingLimit"] for r in flavor["resources"]}
        assert all(r["nominalQuota"] in (0, "0") for r in flavor["resources"])
        for step in program.acceptance_steps(target):
            job = job_of(body, step.name)
            assert job["metadata"]["namespace"] == "gpuplane-acceptance-jobs"
            labels = job["metadata"]["labels"]
            assert labels[QUEUE_LABEL] == f"{target.queue.name}-acceptance"
            assert labels[PRIORITY_LABEL] == lowest_priority(target)
            pod = job["spec"]["template"]["spec"]
            assert pod["tolerations"] == tolerations(target.pool)
            assert pod["nodeSelector"] == {"gpuplane.dev/pool": target.name}
            gpu = gpu_container(pod)
            assert gpu["resources"]["limits"][target.offer.resource] == step.shape.per_pod
            assert gpu["resources"]["requests"][target.offer.resource] == step.shape.per_pod
            assert job["spec"]["completions"] == step.shape.pods
            assert step.shape.pods * step.shape.per_pod <= limit[target.offer.resource]
            assert job["spec"]["ttlSecondsAfterFinished"] == settings.JOB_TTL_SECONDS
            (probe,) = pod["containers"]
            assert probe["envFrom"] == [
                {"secretRef": {"name": "gpuplane-object-store", "optional": True}}
            ]
            # a team's queue could hold the same Job, as `gpuplane fit`'s Kueue step says (the
            # team's own policies refuse the platform's suite image and labels there)
            job["metadata"]["namespace"] = plan_namespace(example.platform, target)
            job["metadata"]["labels"][QUEUE_LABEL] = "default"
            path = tmp_path / f"{target.name}-{step.name}.yaml"
            path.write_text(yaml.safe_dump(job))
            result = check_fit(example.platform, path)
            assert result.kueue_verdict in ADMISSIBLE, (target.name, step.name, result.summary)
            assert result.cluster_queue == target.plan
            checked += 1
    assert checked >= 20


def _pool_file(name: str) -> dict[str, Any]:
    """A pool's spec as its file says, read with PyYAML rather than the engine."""
    spec: dict[str, Any] = yaml.safe_load((REPO / "pools" / f"{name}.yaml").read_text())["spec"]
    return spec


def test_multi_pod_and_distributed_jobs_get_the_pools_rdma_devices(
    example: Rendered, tmp_path: Path
) -> None:
    """Every pod of a step with several pods or a distributed probe, on a pool whose file
    declares `fabric.rdma`, requests the RDMA resource (requests equal to limits) in its share of
    a node, rounded up; the other steps and pools request none, no capability is added, and
    every Job still passes `gpuplane fit` (Kueue excludes the resource)."""
    seen: dict[str, set[int]] = {}
    for target in all_targets(example.platform):
        fabric = _pool_file(target.name).get("fabric", {})
        rdma = fabric.get("rdma")
        bodies = argo(example, target.cluster.name)
        for kind, steps in (
            ("acceptance", program.acceptance_steps(target)),
            ("benchmark", program.benchmark_steps(target)),
        ):
            for step in steps:
                job = job_of(bodies[f"{kind}-{target.name}"], step.name)
                pod = job["spec"]["template"]["spec"]
                containers = [*pod.get("initContainers", []), *pod["containers"]]
                for container in containers:
                    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
                    assert "add" not in container["securityContext"]["capabilities"]
                gpu = gpu_container(pod)["resources"]
                asked = {r for part in ("requests", "limits") for r in gpu.get(part, {})}
                talks = step.shape.pods > 1 or any(
                    p.distributed for p in (*step.probes, *step.after)
                )
                if rdma is None or not talks:
                    assert not asked - {"cpu", "memory", target.offer.resource}, (
                        target.name,
                        step.name,
                    )
                    continue
                per_node = rdma["perNode"]
                if _pool_file(target.name)["sharing"] == "full-gpu" and not target.dra:
                    gpus = _pool_file(target.name)["gpusPerNode"]
                    expected = -(-per_node * step.shape.per_pod // gpus)  # ceil
                else:  # one device per pod: a small share of a node
                    expected = 1 if per_node == 1 else None
                amount = gpu["requests"][rdma["resource"]]
                assert gpu["limits"][rdma["resource"]] == amount, (target.name, step.name)
                assert 1 <= amount <= per_node
                if expected is not None:
                    assert amount == max(1, min(per_node, expected)), (target.name, step.name)
                seen.setdefault(rdma["resource"], set()).add(amount)
                job["metadata"]["namespace"] = plan_namespace(example.platform, target)
                job["metadata"]["labels"][QUEUE_LABEL] = "default"
                path = tmp_path / f"{target.name}-{kind}-{step.name}.yaml"
                path.write_text(yaml.safe_dump(job))
                result = check_fit(example.platform, path)
                assert result.kueue_verdict in ADMISSIBLE, (target.name, step.name, result.summary)
                assert rdma["resource"] not in {q.resource for q in result.quotas}
    # h200-tune (16 EFA interfaces, 8 GPUs): the platform queue borrows less than a node there,
    # so its pods take their share (the formula above), in more than one size; the InfiniBand
    # pools' shared device: 1 per pod
    assert seen["rdma/rdma_shared_device_a"] == {1}
    assert len(seen["vpc.amazonaws.com/efa"]) > 1


def test_pools_without_rdma_request_none(platform: Platform) -> None:
    """The same pools with `fabric.rdma` removed: no Job of theirs requests an RDMA resource."""
    pools = {n: dataclasses.replace(p, rdma=None) for n, p in platform.pools.items()}
    bare = dataclasses.replace(platform, pools=pools)
    resources = {p.rdma.resource for p in platform.pools.values() if p.rdma is not None}
    assert resources
    for target in all_targets(bare):
        for step in (*program.acceptance_steps(target), *program.benchmark_steps(target)):
            text = dump(jobs.job_manifest(target, step))
            assert not any(r in text for r in resources), (target.name, step.name)


def test_the_training_jobs_take_what_the_platform_queue_can_borrow(example: Rendered) -> None:
    """h100-train: llm's ClusterQueue may hold 24 GPUs (its own nominal quota, less what it
    lends, plus what the cohort lends), but the platform's queue has no quota of its own and
    borrows only what the teams lend: 16 here, as the team files say; the training Job takes them
    as 2 whole nodes."""
    (target,) = [t for t in all_targets(example.platform) if t.name == "h100-train"]
    assert target.plan == "llm-training"
    quotas = {
        name: next(q for q in t.gpus if q.pool == "h100-train")
        for name, t in example.platform.teams.items()
        if any(q.pool == "h100-train" for q in t.gpus)
    }
    llm = quotas["llm"]
    assert llm.lending_limit is not None
    lent = sum(q.nominal if q.lending_limit is None else q.lending_limit for q in quotas.values())
    guaranteed = llm.nominal - llm.lending_limit
    team = min(llm.nominal + (llm.borrowing_limit or 0), guaranteed + lent)
    assert team == 24
    assert target.available == min(team, lent) == 16
    shape = program.training_shape(target)
    assert shape == program.Shape(16 // 8, 8)


def test_the_model_a_server_serves_is_staged_by_an_earlier_job(platform: Platform) -> None:
    """The server is a native sidecar: the pod's main container starts only once it serves, so
    the weights it serves must come from a Job before, never from the same pod."""
    servers = 0
    for target in all_targets(platform):
        for steps in (program.acceptance_steps(target), program.benchmark_steps(target)):
            for index, step in enumerate(steps):
                if not step.server:
                    continue
                servers += 1
                assert not any(p.probe == "staging" for p in step.probes), step.name
                staged = [
                    p
                    for before in steps[:index]
                    for p in before.probes
                    if p.probe == "staging" and before.workspace
                ]
                assert staged and step.workspace, (target.name, step.name)
                assert f"{settings.WORKSPACE}/data" in staged[-1].options
    assert servers >= 2  # acceptance and benchmark of an inference pool


def test_the_probe_not_the_server_waits_for_the_model(example: Rendered) -> None:
    """A sidecar whose startupProbe fails is only restarted and keeps the pod un-Ready, so Kueue's
    waitForPodsReady would evict and requeue the Job forever: the server has no probes, the pod
    is Ready at once, and the inference probe waits for it and fails once if it never answers.
    A server step runs only when the staging before it finished."""
    parser = build_parser()
    checked = 0
    for target in all_targets(example.platform):
        if not target.inference:
            continue
        objects = argo(example, target.cluster.name)
        for suite, step, staged in (
            ("acceptance", "train", "stage"),
            ("benchmark", "inference", "stage"),
        ):
            body = objects[f"{suite}-{target.name}"]
            job = job_of(body, step)
            (server,) = job["spec"]["template"]["spec"]["initContainers"]
            assert server["restartPolicy"] == "Always"
            assert not {"startupProbe", "readinessProbe", "livenessProbe"} & set(server)
            plan = json.loads(job["spec"]["template"]["spec"]["containers"][0]["args"][0])
            ((_, command, _),) = plan["run"]
            args = parser.parse_args(
                [*command[command.index("workflows.probes") + 1 :], "--out", "r.json"]
            )
            assert args.wait_seconds == settings.SERVER_START_SECONDS
            main = tasks(body, body["spec"]["entrypoint"])
            assert "when" not in main[step]  # v4.0.x waits forever on a skipped task's outputs
            passed = {p["name"]: p["value"] for p in main[step]["arguments"]["parameters"]}
            assert passed["staged"] == "{{tasks." + staged + ".outputs.parameters.finished}}"
            inner = tasks(body, step)
            assert inner["job"]["when"] == "'{{inputs.parameters.staged}}' != ''"
            assert "Skipped" not in inner["logs"]["depends"]  # no Job, no log: `done` ends it
            checked += 1
    assert checked >= 4


def test_a_failed_job_does_not_stop_the_suite(example: Rendered) -> None:
    """The log is read however the Job ended, by labels known before the Job exists (a failed
    Job records no outputs, not even its name); the step's DAG has one leaf, `done`, which runs
    once the log task ended or was left out, so Argo judges the DAG by it and the DAG succeeds;
    every part it outputs has a default. So export and report still run and name the failure
    (the report's exit code fails the Workflow)."""
    checked = 0
    for target in all_targets(example.platform):
        for suite in ("acceptance", "benchmark"):
            body = argo(example, target.cluster.name)[f"{suite}-{target.name}"]
            steps = (
                program.acceptance_steps(target)
                if suite == "acceptance"
                else program.benchmark_steps(target)
            )
            for step in steps:
                dag = tasks(body, step.name)
                leaves = set(dag) - {
                    d
                    for t in dag.values()
                    for d in re.findall(r"([\w-]+)\.\w+", t.get("depends", ""))
                }
                assert leaves == {"done"}, (step.name, leaves)
                ended = "{0}.Succeeded || {0}.Failed || {0}.Errored"
                assert dag["done"]["depends"] == (
                    f"({ended.format('logs')} || logs.Omitted)"
                    f" && ({ended.format('image')} || image.Omitted)"
                    f" && ({ended.format('drop')} || drop.Omitted)"
                )
                # the image the pod ran is read whenever its log is
                assert dag["image"]["depends"] == dag["logs"]["depends"], step.name
                assert dag["image"]["arguments"] == dag["logs"]["arguments"], step.name
                for result in ("job.Failed", "job.Errored"):
                    assert result in dag["logs"]["depends"], step.name
                    # a Job that did not finish is deleted, after its log is read
                    assert result in dag["drop"]["depends"], step.name
                assert dag["drop"]["depends"].endswith(f"&& ({ended.format('logs')})")
                assert dag["drop"]["arguments"] == dag["logs"]["arguments"]
                assert dag["logs"]["arguments"]["parameters"] == [
                    {"name": "step", "value": step.name},
                    {"name": "image-namespace", "value": "{{inputs.parameters.image-namespace}}"},
                ]
                assert not any("continueOn" in t for t in dag.values())
                if not step.after:  # `finished` is read from it: only once the Job wrote it
                    condition = template(body, f"{step.name}-job")["resource"]["successCondition"]
                    assert condition == (
                        f"status.succeeded > {step.shape.pods - 1},status.completionTime"
                    )
                outputs = template(body, step.name)["outputs"]["parameters"]
                assert [p["name"] for p in outputs] == list(workflow_templates.STEP_PARTS)
                assert all(p["valueFrom"]["default"] == "" for p in outputs)
                checked += 1
            assert template(body, "done") == {"name": "done", "suspend": {"duration": "0"}}
            drop = template(body, "drop")["container"]["args"]
            assert drop[:2] == ["delete", "job"] and "--ignore-not-found" in drop
            assert "retryStrategy" in template(body, "drop")  # deleting twice is harmless
            logs_selector = next(
                a
                for a in template(body, "logs")["container"]["args"]
                if a.startswith("--selector=")
            )
            (drop_selector,) = [a for a in drop if a.startswith("--selector=")]
            assert logs_selector == drop_selector + ",batch.kubernetes.io/job-completion-index=0"
            selector = next(
                a
                for a in template(body, "logs")["container"]["args"]
                if a.startswith("--selector=")
            )
            job = job_of(body, steps[0].name)
            pod_labels = job["spec"]["template"]["metadata"]["labels"]
            for pair in selector.removeprefix("--selector=").split(","):
                key, _, value = pair.partition("=")
                if key == "batch.kubernetes.io/job-completion-index":
                    assert value == "0" and job["spec"]["completionMode"] == "Indexed"
                elif key == settings.STEP_LABEL:
                    assert value == "{{inputs.parameters.step}}"
                else:  # the labels of the Job's pods, whatever the step
                    assert substituted(value) == substituted(pod_labels[key]), key
    assert checked > 20


def test_a_job_that_never_runs_fails_its_step_in_time_for_the_report(example: Rendered) -> None:
    """Each wait on a Job has its own deadline, and every wait of the longest suite together
    leaves the Workflow an hour for export and report: a Job Kueue never admits fails one step,
    it does not spend the Workflow's deadline."""
    longest = 0
    for target in all_targets(example.platform):
        for suite in ("acceptance", "benchmark"):
            body = argo(example, target.cluster.name)[f"{suite}-{target.name}"]
            waits = [
                t
                for t in body["spec"]["templates"]
                if t["name"].endswith("-job") or t["name"] == "await-job"
            ]
            assert {t["activeDeadlineSeconds"] for t in waits} == {settings.STEP_DEADLINE_SECONDS}
            # the Jobs stop with the Workflow, whatever Argo does
            for t in waits:
                if "manifest" in t["resource"] and t["name"] != "await-job":
                    job = yaml.safe_load(t["resource"]["manifest"])
                    assert job["spec"]["activeDeadlineSeconds"] == settings.DEADLINE_SECONDS
            steps = (
                program.acceptance_steps(target)
                if suite == "acceptance"
                else program.benchmark_steps(target)
            )
            longest = max(longest, sum(2 if s.after else 1 for s in steps))
            assert body["spec"]["activeDeadlineSeconds"] == settings.DEADLINE_SECONDS
    assert longest * settings.STEP_DEADLINE_SECONDS + 3600 <= settings.DEADLINE_SECONDS


def test_argo_refuses_continue_on_beside_depends() -> None:
    body = broken()
    dag = next(t for t in body["spec"]["templates"] if "dag" in t)
    dag["dag"]["tasks"][-1]["continueOn"] = {"failed": True}
    assert any(
        "continueOn in a DAG that uses depends" in p for p in references.check_references(body, {})
    )


def test_pods_smaller_than_a_node_spread_unless_kueue_places_them(platform: Platform) -> None:
    """The communication step must cross nodes: pods smaller than a node carry a required
    anti-affinity, except on a topology-aware Kueue flavor, where Kueue pins each pod to the node
    it chose and the anti-affinity would keep the packed pods Pending forever."""
    seen = {True: 0, False: 0}
    for target in all_targets(platform):
        for aware in (True, False):
            if aware and not pool_topology_aware(target.pool):
                continue  # neither its levels nor a ClusterQueue beside one make it so
            pool = (
                target.pool
                if aware
                else dataclasses.replace(target.pool, topology_levels=(), topology_peer=False)
            )
            variant = dataclasses.replace(target, pool=pool)
            assert jobs.topology_aware(variant) is aware
            for step in program.acceptance_steps(variant):
                if step.shape.pods < 2 or step.shape.per_pod >= variant.offer.per_node:
                    continue
                spec = jobs.job_manifest(variant, step)["spec"]["template"]["spec"]
                assert ("affinity" in spec) is not aware, (target.name, step.name)
                seen[aware] += 1
    assert seen[True] and seen[False]


def test_step_five_deletes_the_pod_then_waits_for_its_replacement(example: Rendered) -> None:
    for target in all_targets(example.platform):
        body = argo(example, target.cluster.name)[f"acceptance-{target.name}"]
        dag = tasks(body, "checkpoint")
        assert [dag[t].get("depends") for t in ("job", "interrupt", "restore", "logs")] == [
            None,
            "job.Succeeded",
            "interrupt.Succeeded",
            "job.Failed || job.Errored || interrupt.Failed || interrupt.Errored"
            " || restore.Succeeded || restore.Failed || restore.Errored",
        ]
        create = template(body, "checkpoint-job")["resource"]
        assert create["successCondition"] == "status.ready > 0"  # the checkpoint is written
        assert "retryStrategy" not in template(body, "interrupt")  # would delete the replacement
        assert template(body, "logs")["retryStrategy"] == {"limit": 2}
        interrupt = template(body, "interrupt")["container"]
        assert interrupt["command"] == ["kubectl"] and interrupt["args"][:2] == ["delete", "pod"]
        assert (
            interrupt["image"] == f"registry.k8s.io/kubectl:v{target.cluster.kubernetes_version}.0"
        )
        job = job_of(body, "checkpoint")
        assert job["spec"]["backoffLimit"] == 1  # one replacement pod
        plan = json.loads(job["spec"]["template"]["spec"]["containers"][0]["args"][0])
        assert [p[0] for p in plan["run"]] == ["checkpoint-write"]
        assert [p[0] for p in plan["after"]] == ["checkpoint"]
        await_job = template(body, "await-job")["resource"]
        assert (
            await_job["action"] == "get"
            and await_job["successCondition"] == "status.succeeded > 0,status.completionTime"
        )


def test_step_five_and_the_benchmark_resume_training_after_the_restore(example: Rendered) -> None:
    """Both checkpoint phases get the same --resume-steps (the writer records that many steps,
    the restorer repeats them), in the Job the Workflow really creates."""
    assert settings.RESUME_STEPS > 0  # the report fails a checkpoint that resumed nothing
    parser = build_parser()
    for target in all_targets(example.platform):
        objects = argo(example, target.cluster.name)
        for suite in ("acceptance", "benchmark"):
            job = job_of(objects[f"{suite}-{target.name}"], "checkpoint")
            plan = json.loads(job["spec"]["template"]["spec"]["containers"][0]["args"][0])
            phases = []
            for _, command, writes in plan["run"] + plan.get("after", []):
                at = command.index("--resume-steps")
                assert command[at + 1] == str(settings.RESUME_STEPS)
                probe_args = command[command.index("workflows.probes") + 1 :]
                args = parser.parse_args([*probe_args, *(["--out", "r.json"] if writes else [])])
                assert args.resume_steps == settings.RESUME_STEPS
                phases.append(args.phase)
            assert phases == (["write", "restore"] if suite == "acceptance" else ["both"])


def test_the_inference_server_leaves_room_for_the_pods_sharing_its_gpu(example: Rendered) -> None:
    """vLLM preallocates its memory share up front: on a time-shared GPU every replica's server
    together must fit in one GPU's memory, as in the team's own vLLM template."""
    shared = whole = 0
    for target in all_targets(example.platform):
        if not target.inference:
            continue
        job = job_of(argo(example, target.cluster.name)[f"acceptance-{target.name}"], "train")
        (server,) = job["spec"]["template"]["spec"]["initContainers"]
        args = server["args"]
        share = float(args[args.index("--gpu-memory-utilization") + 1])
        pool = target.pool
        if pool.sharing in ("time-slicing", "mps") and pool.replicas > 1:
            assert share * pool.replicas <= 0.9 + 1e-9
            assert share * pool.replicas > 0.8  # and no less than it can use
            shared += 1
        else:
            assert share == 0.9
            whole += 1
    assert shared and whole  # the example has both kinds of inference pool


def test_results_flow_from_the_jobs_to_the_report(example: Rendered) -> None:
    for target in all_targets(example.platform):
        body = argo(example, target.cluster.name)[f"acceptance-{target.name}"]
        steps = program.acceptance_steps(target)
        keys = [k for s in steps for k in s.keys]
        judged = [k for s in steps for k in s.judged]
        label = template(body, "label")
        probes = {p.probe for s in steps for p in s.results}
        gauges = [g.parameter for g in settings.SUITE_GAUGES if g.probe in probes]
        assert [p["name"] for p in label["outputs"]["parameters"]] == [
            "results-name",
            *keys,
            *gauges,
        ]
        # named by export: `acceptance-<pool>`, with `-<namespace>` on a namespace image's run
        env = {e["name"]: e["value"] for e in label["container"]["env"]}
        assert env["RESULTS"] == f"acceptance-{target.name}"
        assert env["IMAGE_NAMESPACE"] == "{{inputs.parameters.image-namespace}}"
        manifest = template(body, "publish")["resource"]["manifest"]
        configmap = yaml.safe_load(substituted_results(manifest, keys))
        assert yaml.safe_load(manifest)["metadata"]["name"] == "{{inputs.parameters.results-name}}"
        assert sorted(configmap["data"]) == sorted(f"{k}.json" for k in keys)
        labels = configmap["metadata"]["labels"]
        for key in ("accelerator", "fabric", "queue", "cluster-queue", "gpu-hour", "currency"):
            assert f"gpuplane.dev/{key}" in labels
        report = template(body, "report-judge")
        assert report["container"]["command"][-2:] == ["acceptance", "report"]
        assert report["container"]["args"] == [
            "--pool",
            target.name,
            *(f"/results/{k}.json" for k in judged),
        ]
        artifacts = {a["name"]: a for a in report["inputs"]["artifacts"]}
        assert artifacts["platform"]["git"]["repo"] == example.platform.repository.repo_url  # type: ignore[union-attr]
        expected = {"training"} if not target.inference else {"inference"}
        assert expected <= set(judged) and "submit" not in judged
        assert {"staging", "storage", "checkpoint"} <= set(judged)


def test_the_report_step_applies_the_evidence_whatever_the_verdict(
    example: Rendered, gpuplane: Any, tmp_path: Path
) -> None:
    """record -> evidence (the ConfigMap, applied) -> judge; record's own command line, run on
    results of a failing run, writes the file and the ConfigMap and exits 0."""
    (target,) = [t for t in all_targets(example.platform) if t.name == "h100-train"]
    body = argo(example, target.cluster.name)[f"acceptance-{target.name}"]
    dag = {t["name"]: t for t in template(body, "report")["dag"]["tasks"]}
    assert (dag["evidence"]["depends"], dag["judge"]["depends"]) == ("record", "evidence")
    (manifest,) = dag["evidence"]["arguments"]["parameters"]
    assert manifest["value"] == "{{tasks.record.outputs.parameters.manifest}}"
    evidence = template(body, "report-evidence")["resource"]
    assert (evidence["action"], evidence["manifest"]) == (
        "apply",
        "{{inputs.parameters.manifest}}",
    )
    record = template(body, "report-record")
    (output,) = record["outputs"]["parameters"]
    command = record["container"]["command"]
    assert command[:3] == ["gpuplane", "-C", "/platform"]
    args = record["container"]["args"]
    assert args[args.index("--configmap") + 1] == output["valueFrom"]["path"]
    assert args[args.index("--namespace") + 1] == settings.NAMESPACE
    # run it: the results of a run whose all-reduce failed, at the paths the artifacts give
    cases = REPO / "tests" / "cases" / "acceptance"
    results = tmp_path / "results"
    for artifact in record["inputs"]["artifacts"]:
        if "raw" in artifact:
            name = Path(artifact["path"]).name
            source = cases / "gpu-run" / "h100-train" / name
            if name == "allreduce.json":
                source = cases / "failing" / "h100-train" / name
            (results / name).parent.mkdir(exist_ok=True)
            (results / name).write_text(source.read_text())
    local = {
        "/platform": str(REPO),
        "{{workflow.name}}": "run-1",
        "/results/": f"{results}/",
        "/tmp/": f"{tmp_path}/",
    }

    def here(arg: str) -> str:
        """The container's path or reference as it is on this machine (one replacement), on
        the pool's own run (no namespace image)."""
        arg = arg.replace("{{inputs.parameters.image-namespace}}", "")
        for old, new in local.items():
            if arg.startswith(old):
                return new + arg[len(old) :]
        return arg

    done = gpuplane(*(here(a) for a in command[1:]), *(here(a) for a in args))
    assert done.exit_code == 0, done.output
    configmap = json.loads(Path(here(output["valueFrom"]["path"])).read_text())
    assert configmap["metadata"]["name"] == f"acceptance-evidence-{target.name}"
    assert configmap["metadata"]["namespace"] == settings.NAMESPACE
    (text,) = configmap["data"].values()
    recorded = yaml.safe_load(text)
    assert recorded["spec"]["verdict"] == "fail"
    assert recorded["spec"]["run"] == "run-1"
    written = Path(here(args[args.index("--out") + 1]), "acceptance", target.cluster.name)
    assert (written / f"{target.name}.yaml").read_text() == text


def substituted_results(manifest: str, keys: list[str]) -> str:
    text = manifest.replace("{{workflow.name}}", "run-1")
    text = text.replace("{{inputs.parameters.results-name}}", "acceptance-h100-train")
    for key in keys:
        text = text.replace("{{inputs.parameters." + key + "}}", json.dumps({"probe": key}))
    assert "{{" not in text
    return text


def test_the_probe_command_lines_parse_with_the_probes_own_parser(example: Rendered) -> None:
    parser = build_parser()
    parsed = 0
    for target in all_targets(example.platform):
        for steps in (program.acceptance_steps(target), program.benchmark_steps(target)):
            for step in steps:
                job = yaml.safe_load(substituted(yaml.safe_dump(jobs.job_manifest(target, step))))
                plan = json.loads(job["spec"]["template"]["spec"]["containers"][0]["args"][0])
                for key, command, writes in plan["run"] + plan.get("after", []):
                    probe_args = command[command.index("workflows.probes") + 1 :]
                    if writes:
                        probe_args += ["--out", f"/tmp/{key}.json"]
                    args = parser.parse_args(probe_args)
                    assert (args.cluster, args.pool) == (target.cluster.name, target.name)
                    parsed += 1
    assert parsed > 40


def test_images_are_pinned(example: Rendered) -> None:
    for cluster in example.manifests:
        for body in argo(example, cluster).values():
            spec = body["spec"].get("workflowSpec", body["spec"])
            for parameter in spec.get("arguments", {}).get("parameters", []):
                if parameter["name"].endswith("image"):
                    assert ":" in parameter["value"] and not parameter["value"].endswith(":latest")
            for tmpl in spec["templates"]:
                if "container" not in tmpl:
                    continue
                image = tmpl["container"]["image"]
                # the window's node steps: the platform's own suite image, at its version
                assert (
                    image.startswith("{{inputs.parameters.")
                    or image.startswith("registry.k8s.io/kubectl:v1.")
                    or image == settings.SUITE_IMAGE
                ), image


# --- the hook and the cron ----------------------------------------------------------------------


def test_the_hook_and_the_cron_run_every_pools_acceptance(example: Rendered) -> None:
    for view in views(example.platform):
        cluster = view.cluster.name
        objects = argo(example, cluster)
        hook = objects[every_pool.HOOK_NAME]
        assert hook["kind"] == "Workflow"
        assert hook["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
        assert (
            hook["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"]
            == "BeforeHookCreation"
        )
        cron = objects[every_pool.CRON_NAME]
        assert cron["kind"] == "CronWorkflow"
        assert cron["spec"]["concurrencyPolicy"] == "Forbid"
        window = view.cluster.acceptance_window
        if window is None:
            assert cron["spec"]["schedules"] == [settings.CRON_SCHEDULE]
        pools = {t.name for t in placement.targets(view)}
        for run in (hook, cron):
            for name in ("acceptance", "cleanup"):
                refs = {
                    task["templateRef"]["name"]: task["templateRef"]["template"]
                    for task in tasks(run, name).values()
                }
                if run is cron and window is not None:  # tests/test_suite_window.py
                    exit_or_run = "exit" if name == "cleanup" else name
                    assert refs == {f"acceptance-window-{p}": exit_or_run for p in pools}
                    continue
                assert refs == {f"acceptance-{p}": name for p in pools}
                for wt, tmpl in refs.items():
                    assert tmpl in {t["name"] for t in objects[wt]["spec"]["templates"]}
            spec = run["spec"].get("workflowSpec", run["spec"])
            assert spec["onExit"] == "cleanup"
            assert spec["serviceAccountName"] == settings.SERVICE_ACCOUNT
        window = {p["name"]: p["value"] for p in hook["spec"]["arguments"]["parameters"]}
        assert window["window-seconds"] == str(settings.HOOK_WINDOW_SECONDS)


def test_the_suites_can_do_what_they_need_in_the_jobs_namespace(example: Rendered) -> None:
    """The Role in `gpuplane-acceptance-jobs` lets the suite's ServiceAccount run its Jobs;
    it has no Role or binding in any other namespace than its two, and the multi-node pools'
    headless Services and the DRA pools' claim templates are in the Jobs namespace too."""
    for target in all_targets(example.platform):
        objects = {
            (m.kind, m.namespace, m.name): m.body
            for m in suite_objects(example, target.cluster.name)
        }
        role = objects[("Role", settings.JOBS_NAMESPACE, settings.SERVICE_ACCOUNT)]
        verbs = {
            (g, r): set(rule["verbs"])
            for rule in role["rules"]
            for g in rule["apiGroups"]
            for r in rule["resources"]
        }
        assert {"create", "get", "delete"} <= verbs[("batch", "jobs")]
        assert "delete" in verbs[("", "pods")] and "get" in verbs[("", "pods/log")]
        binding = objects[("RoleBinding", settings.JOBS_NAMESPACE, settings.SERVICE_ACCOUNT)]
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": settings.SERVICE_ACCOUNT,
                "namespace": settings.NAMESPACE,
            }
        ]
        namespaces = {
            m.namespace
            for m in example.manifests[target.cluster.name]
            if m.kind in ("Role", "RoleBinding")
            and any(s.get("name") == settings.SERVICE_ACCOUNT for s in m.body.get("subjects", []))
        }
        assert namespaces <= {settings.NAMESPACE, settings.JOBS_NAMESPACE}
        if program.needs_service(target):
            service = objects[
                ("Service", settings.JOBS_NAMESPACE, program.headless_service(target))
            ]
            assert service["spec"]["clusterIP"] == "None"
            assert service["spec"]["selector"] == {settings.POOL_LABEL: target.name}


def test_dra_jobs_name_claim_templates_of_the_jobs_namespace() -> None:
    """The team's ResourceClaimTemplates live in the team's namespaces: the suite renders its
    own in the Jobs namespace, in its layer (synced with that namespace), for every template a
    Job names."""
    platform = load_platform(CASES / "dra").platform
    checked = 0
    for name in sorted(platform.clusters):
        view = ClusterView.of(platform, platform.clusters[name])
        rendered = [m for m in layer.render(view) if isinstance(m, Manifest)]
        claims = {m.name for m in rendered if m.kind == "ResourceClaimTemplate"}
        assert all(
            m.namespace == settings.JOBS_NAMESPACE and m.layer == "workflows"
            for m in rendered
            if m.kind == "ResourceClaimTemplate"
        )
        for target in placement.targets(view):
            if not target.dra:
                continue
            for step in (*program.acceptance_steps(target), *program.benchmark_steps(target)):
                pod = jobs.job_manifest(target, step)["spec"]["template"]["spec"]
                for claim in pod["resourceClaims"]:
                    assert claim["resourceClaimTemplateName"] in claims, (target.name, step.name)
                    checked += 1
    assert checked


def test_no_object_shares_a_part_with_another(example: Rendered) -> None:
    """Shared dicts would come out as YAML anchors (`&id001`), in the files and in the Job
    manifests embedded in them; kubectl and Argo read those, people do not."""
    for cluster in example.manifests:
        for manifest in suite_objects(example, cluster):
            text = dump(manifest.body)
            assert "&id" not in text and "*id" not in text, manifest.path


def test_rendering_the_suites_is_deterministic(platform: Platform) -> None:
    view = ClusterView.of(platform, platform.clusters["prod-east"])
    first = [dict(m.body) for m in layer.render(view) if isinstance(m, Manifest)]
    second = [dict(m.body) for m in layer.render(view) if isinstance(m, Manifest)]
    assert first == second


# --- the scripts the suites run -----------------------------------------------------------------


def fake_probe(tmp_path: Path, name: str, body: str) -> list[str]:
    script = tmp_path / f"{name}.py"
    script.write_text(
        "import json, sys\n"
        "out = sys.argv[sys.argv.index('--out') + 1] if '--out' in sys.argv else None\n" + body
    )
    return [sys.executable, str(script)]


def run_runner(plan: dict[str, Any], state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", scripts.RUNNER, json.dumps(plan)],
        env={**os.environ, "STATE": str(state), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def results(stdout: str) -> dict[str, Any]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith(settings.RESULT_PREFIX + " "):
            _, key, text = line.split(" ", 2)
            found[key] = json.loads(text)
    return found


def test_the_runner_prints_each_result_on_one_line(tmp_path: Path) -> None:
    good = fake_probe(
        tmp_path, "good", "json.dump({'probe': 'storage', 'ok': True}, open(out, 'w'))\n"
    )
    bad = fake_probe(tmp_path, "bad", "print('noise'); sys.exit(1)\n")
    done = run_runner({"run": [["storage", good, True], ["staging", bad, True]]}, tmp_path / "s")
    assert done.returncode == 1
    assert results(done.stdout) == {"storage": {"probe": "storage", "ok": True}}


@pytest.mark.slow
def test_the_runner_restores_in_the_replacement_pod(tmp_path: Path) -> None:
    """Step 5 on real probes: checkpoint's write phase in the first pod, which then waits to be
    deleted; its replacement restores what it wrote, resumes training from it and prints the
    result."""
    state = tmp_path / "state"
    path = str(tmp_path / "checkpoint")
    probe = [
        sys.executable,
        "-m",
        "workflows.probes",
        "checkpoint",
        "--path",
        path,
        "--megabytes",
        "1",
        "--device",
        "cpu",
        "--resume-steps",
        "2",
    ]
    plan = {
        "run": [["checkpoint-write", [*probe, "--phase", "write"], False]],
        "after": [["checkpoint", [*probe, "--phase", "restore"], True]],
    }
    first = run_runner(plan, state, INTERRUPT_WAIT_SECONDS="0", PYTHONPATH=str(REPO))
    assert first.returncode == 1 and "nothing was restored" in first.stderr
    assert (state / "interrupt-me.json").exists()  # what the readiness probe waits for
    second = run_runner(plan, state, INTERRUPT_WAIT_SECONDS="0", PYTHONPATH=str(REPO))
    assert second.returncode == 0, second.stderr
    restored = results(second.stdout)["checkpoint"]
    assert restored["ok"] and restored["metrics"]["verified"] is True
    assert restored["metrics"]["resumed"] is True and restored["metrics"]["resumeSteps"] == 2


def test_export_adds_the_queue_wait_and_fills_in_missing_results(tmp_path: Path) -> None:
    result = {"schemaVersion": 1, "probe": "training", "ok": True, "environment": {"a": "b"}}
    log = "noise\n" + f"{settings.RESULT_PREFIX} training {json.dumps(result)}\n"
    steps = [
        {"step": "train", "results": [["training", "training"]]},
        {"step": "stage", "results": [["staging", "staging"]]},
    ]
    env = {
        "OUT": str(tmp_path / "out"),
        "CLUSTER": "lab",
        "POOL": "train",
        "STEPS": json.dumps(steps),
        "TRAIN_LOG": log,
        "TRAIN_CREATED": "2026-01-01T10:00:00Z",
        "TRAIN_STARTED": "2026-01-01T10:03:20Z",
        "TRAIN_FINISHED": "2026-01-01T10:13:20Z",
        "STAGE_LOG": "the job died",
    }
    done = subprocess.run(
        [sys.executable, "-c", scripts.EXPORT],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    training = json.loads((tmp_path / "out" / "training.json").read_text())
    assert training["environment"] == {
        "a": "b",
        settings.QUEUE_WAIT_LABEL: "200",
        "gpuplane.dev/job-seconds": "600",
    }
    staging = json.loads((tmp_path / "out" / "staging.json").read_text())
    assert staging["ok"] is False and staging["probe"] == "staging" and staging["pool"] == "train"
    assert "printed no result" in staging["error"]


def _export(tmp_path: Path, results: dict[str, dict[str, Any]]) -> Path:
    """EXPORT run on one `checkpoint` step whose log holds `results` (key -> result)."""
    log = "".join(f"{settings.RESULT_PREFIX} {k} {json.dumps(r)}\n" for k, r in results.items())
    steps = [{"step": "checkpoint", "results": [[k, "checkpoint"] for k in results]}]
    env = {
        "OUT": str(tmp_path / "out"),
        "CLUSTER": "lab",
        "POOL": "train",
        "STEPS": json.dumps(steps),
        "CHECKPOINT_LOG": log,
    }
    done = subprocess.run(
        [sys.executable, "-c", scripts.EXPORT],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "out"


def test_export_writes_the_checkpoint_figures_the_suites_gauges_publish(tmp_path: Path) -> None:
    """The checkpoint probe's writeGBps and restoreSeconds (workflows/probes/checkpoint.py
    `_outcome`) each land in the file the label template's output parameter reads, as a number
    Go's strconv.ParseFloat reads (Argo parses a gauge's value so)."""
    result = {
        "schemaVersion": 1,
        "probe": "checkpoint",
        "ok": True,
        "metrics": {"writeGBps": 2.5, "restoreSeconds": 41, "verified": True},
    }
    out = _export(tmp_path, {"checkpoint": result})
    assert (out / "checkpoint-write-gbps").read_text() == "2.5"
    assert (out / "checkpoint-restore-seconds").read_text() == "41.0"


@pytest.mark.parametrize(
    "measured",
    [{}, {"writeGBps": None, "restoreSeconds": "fast"}, {"writeGBps": True}],
)
def test_export_writes_no_figure_a_probe_did_not_measure(
    tmp_path: Path, measured: dict[str, Any]
) -> None:
    """No file, so the output parameter falls back to '' and the gauge's `when` keeps the last
    measured value rather than publishing a wrong one."""
    result = {"schemaVersion": 1, "probe": "checkpoint", "ok": False, "metrics": measured}
    out = _export(tmp_path, {"checkpoint": result})
    assert (out / "checkpoint.json").exists()
    assert not (out / "checkpoint-write-gbps").exists()
    assert not (out / "checkpoint-restore-seconds").exists()


def test_every_suite_publishes_the_checkpoint_gauges_its_alerts_read(example: Rendered) -> None:
    """Each suite's label template sets `argo_workflows_<metric>` gauges (Argo's prefix) labelled
    with the cluster, the pool and the suite, from output parameters it declares with a default;
    the observability layer's alerts read exactly those series."""
    wanted = {metrics.CHECKPOINT_WRITE_GBPS_METRIC, metrics.CHECKPOINT_RESTORE_SECONDS_METRIC}
    seen = 0
    for cluster in sorted(example.manifests):
        rules = [
            m.body
            for m in example.manifests[cluster]
            if m.kind == "PrometheusRule" and m.body["metadata"]["name"] == "gpuplane-alerts"
        ]
        exprs = [r["expr"] for rule in rules for g in rule["spec"]["groups"] for r in g["rules"]]
        for name in wanted:
            assert sum(metrics.ARGO_METRIC_PREFIX + name in e for e in exprs) == 1
        for body in argo(example, cluster, "WorkflowTemplate").values():
            pool = body["metadata"]["labels"]["gpuplane.dev/pool"]
            suite = body["metadata"]["labels"]["gpuplane.dev/suite"].removesuffix("s")
            (label,) = [t for t in body["spec"]["templates"] if t["name"] == "label"]
            outputs = {p["name"]: p for p in label["outputs"]["parameters"]}
            gauges = label["metrics"]["prometheus"]
            assert {g["name"] for g in gauges} == wanted
            for gauge in gauges:
                labels = {x["key"]: x["value"] for x in gauge["labels"]}
                assert labels == {"cluster": cluster, "pool": pool, "suite": suite}
                parameter = re.fullmatch(
                    r"\{\{outputs\.parameters\.([a-z-]+)\}\}", gauge["gauge"]["value"]
                )
                assert parameter is not None
                assert outputs[parameter[1]]["valueFrom"]["default"] == ""
                assert "{{status}} == Succeeded" in gauge["when"]
                seen += 1
    templates = sum(len(argo(example, c, "WorkflowTemplate")) for c in example.manifests)
    assert seen == 2 * templates


def test_the_scripts_hold_nothing_argo_would_substitute() -> None:
    for script in (scripts.RUNNER, scripts.EXPORT):
        assert "{{" not in script and "}}" not in script
        compile(script, "<script>", "exec")


# --- the reference checker ----------------------------------------------------------------------


def broken(**changes: Any) -> dict[str, Any]:
    """A small valid WorkflowTemplate, then `changes` applied to its DAG's task `b`."""
    body: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTemplate",
        "metadata": {"name": "t"},
        "spec": {
            "entrypoint": "main",
            "arguments": {"parameters": [{"name": "image", "value": "x:1"}]},
            "templates": [
                {
                    "name": "main",
                    "dag": {
                        "tasks": [
                            {"name": "a", "template": "make"},
                            {
                                "name": "b",
                                "template": "use",
                                "depends": "a",
                                "arguments": {
                                    "parameters": [
                                        {"name": "v", "value": "{{tasks.a.outputs.parameters.out}}"}
                                    ]
                                },
                            },
                        ]
                    },
                },
                {
                    "name": "make",
                    "container": {"image": "{{workflow.parameters.image}}"},
                    "outputs": {"parameters": [{"name": "out", "valueFrom": {"path": "/o"}}]},
                },
                {
                    "name": "use",
                    "inputs": {"parameters": [{"name": "v"}]},
                    "container": {"image": "x:1", "args": ["{{inputs.parameters.v}}"]},
                },
            ],
        },
    }
    body["spec"]["templates"][0]["dag"]["tasks"][1].update(changes)
    return body


def test_a_valid_dag_has_no_problem() -> None:
    assert references.check_references(broken()) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"depends": "a && missing"}, "depends on 'missing', no task of this DAG"),
        ({"depends": None, "dependencies": ["ghost"]}, "depends on 'ghost'"),
        ({"depends": "a.Finished"}, "'Finished' is not a task result"),
        ({"template": "nope"}, "template 'nope' does not exist"),
        (
            {"template": None, "templateRef": {"name": "elsewhere", "template": "x"}},
            "WorkflowTemplate 'elsewhere', which is not among those checked with it",
        ),
        (
            {"template": None, "templateRef": {"name": "t", "template": "absent"}},
            "template 'absent', not in WorkflowTemplate 't'",
        ),
        ({"arguments": {"parameters": [{"name": "w", "value": "1"}]}}, "passes parameter 'w'"),
        ({"arguments": {}}, "leaves input 'v' of template use without a value"),
        (
            {"arguments": {"parameters": [{"name": "v", "value": "{{inputs.parameters.nope}}"}]}},
            "{{inputs.parameters.nope}} names no input parameter",
        ),
        (
            {"arguments": {"parameters": [{"name": "v", "value": "{{workflow.parameters.nope}}"}]}},
            "{{workflow.parameters.nope}} names no workflow parameter",
        ),
        (
            {
                "arguments": {
                    "parameters": [{"name": "v", "value": "{{tasks.a.outputs.parameters.no}}"}]
                }
            },
            "names no output parameter of its template",
        ),
        (
            {
                "depends": None,
                "arguments": {
                    "parameters": [{"name": "v", "value": "{{tasks.a.outputs.parameters.out}}"}]
                },
            },
            "names no task this one depends on",
        ),
        (
            {"arguments": {"parameters": [{"name": "v", "value": "{{workflow.nonsense}}"}]}},
            "is not an Argo workflow variable",
        ),
        ({"arguments": {"parameters": [{"name": "v", "value": "{{item}}"}]}}, "no withItems"),
    ],
)
def test_broken_references_are_found(changes: dict[str, Any], message: str) -> None:
    body = broken(**changes)
    task = body["spec"]["templates"][0]["dag"]["tasks"][1]
    for key in [k for k, v in task.items() if v is None]:
        del task[key]
    known = {"t": body} if "templateRef" in task else None
    problems = references.check_references(body, known)
    assert any(message in p for p in problems), problems


def test_a_templates_metrics_may_read_its_own_outputs_and_status_only() -> None:
    body = broken()
    make = body["spec"]["templates"][1]
    gauge = {"name": "g", "help": "h", "gauge": {"value": "{{outputs.parameters.out}}"}}
    make["metrics"] = {"prometheus": [{**gauge, "when": "{{status}} == Succeeded"}]}
    assert references.check_references(body) == []
    gauge["gauge"] = {"value": "{{outputs.parameters.nope}}"}
    make["metrics"] = {"prometheus": [gauge, {**gauge, "name": "h", "when": "{{retried}}"}]}
    problems = references.check_references(body)
    assert any("{{outputs.parameters.nope}} names no output parameter" in p for p in problems)
    assert any("{{retried}} is not a reference this check knows" in p for p in problems)


def test_a_dependency_cycle_and_a_missing_entrypoint_are_found() -> None:
    body = broken()
    body["spec"]["templates"][0]["dag"]["tasks"][0]["depends"] = "b"
    body["spec"]["entrypoint"] = "start"
    body["spec"]["onExit"] = "gone"
    problems = references.check_references(body)
    assert any("form a cycle" in p for p in problems)
    assert any("entrypoint 'start' is not a template" in p for p in problems)
    assert any("onExit 'gone' is not a template" in p for p in problems)


def test_a_workflow_must_give_its_entrypoint_its_inputs() -> None:
    body = broken()
    body["kind"] = "Workflow"
    body["spec"]["entrypoint"] = "use"
    assert any("entrypoint input 'v' gets no value" in p for p in references.check_references(body))


def test_hera_builds_dangling_references_without_a_word() -> None:
    """Why the check exists: Hera compiles a task naming a template that is not there."""
    from hera.workflows import DAG, Task, WorkflowTemplate

    with WorkflowTemplate(name="w", entrypoint="main") as wt, DAG(name="main"):
        Task(name="a", template="not-defined")
        Task(name="b", template="not-defined", depends="c")
    problems = references.check_references(wt.to_dict())
    assert len(problems) == 3, problems


def test_argos_own_examples_pass_the_checker() -> None:
    """Stricter than Argo in one way: an argument no input of the called template takes is
    reported (Argo ignores it); two upstream examples pass one."""
    if not ARGO_EXAMPLES.is_dir():
        pytest.skip("../shared/reference is not beside this checkout")
    documents = [
        (path.relative_to(ARGO_EXAMPLES).as_posix(), doc)
        for path in sorted(ARGO_EXAMPLES.rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    known = {
        d["metadata"]["name"]: d
        for _, d in documents
        if d["kind"] in ("WorkflowTemplate", "ClusterWorkflowTemplate")
    }
    found = {
        name: problems
        for name, doc in documents
        if (problems := references.check_references(doc, known))
    }
    assert set(found) == {
        "workflow-template/steps.yaml",
        "cluster-workflow-template/mixed-cluster-namespaced-wftmpl-steps.yaml",
    }
    assert all("passes parameter 'message'" in p for ps in found.values() for p in ps)
    assert len(documents) > 20


def test_volcano_clusters_submit_to_volcano() -> None:
    loaded = load_platform(CASES / "volcano")
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    view = ClusterView.of(loaded.platform, loaded.platform.clusters["lab"])
    bodies = [dict(m.body) for m in layer.render(view) if m.kind == "WorkflowTemplate"]
    assert bodies
    for body in bodies:
        if not body["metadata"]["name"].startswith("acceptance-"):
            continue
        job = job_of(body, "submit")
        assert QUEUE_LABEL not in job["metadata"]["labels"]
        pod = job["spec"]["template"]
        assert pod["spec"]["schedulerName"] == "volcano"
        annotations = pod["metadata"]["annotations"]
        assert annotations["scheduling.volcano.sh/queue-name"] == "main-acceptance"
        assert job["metadata"]["namespace"] == settings.JOBS_NAMESPACE


def test_every_argo_object_cleans_up_after_itself(example: Rendered) -> None:
    """Argo deletes what a run leaves: every Workflow, CronWorkflow (its workflowSpec) and
    WorkflowTemplate carries a ttlStrategy and a podGC (the controller's workflowDefaults say
    the same, for Workflows submitted by hand); a failed run outlives a successful one; the
    CronWorkflow keeps a bounded history; every probe Job expires on its own."""
    expected_ttl = {
        "secondsAfterCompletion": settings.WORKFLOW_TTL_SECONDS,
        "secondsAfterSuccess": settings.WORKFLOW_SUCCESS_TTL_SECONDS,
        "secondsAfterFailure": settings.WORKFLOW_TTL_SECONDS,
    }
    expected_gc = {"strategy": "OnWorkflowSuccess", "deleteDelayDuration": settings.POD_GC_DELAY}
    assert expected_ttl["secondsAfterSuccess"] < expected_ttl["secondsAfterFailure"]
    kinds: set[str] = set()
    for cluster in sorted(example.manifests):
        for body in argo(example, cluster).values():
            spec = body["spec"].get("workflowSpec", body["spec"])
            assert spec["ttlStrategy"] == expected_ttl, body["metadata"]["name"]
            assert spec["podGC"] == expected_gc, body["metadata"]["name"]
            kinds.add(body["kind"])
            if body["kind"] == "CronWorkflow":
                assert body["spec"]["successfulJobsHistoryLimit"] == settings.HISTORY_LIMIT
                assert body["spec"]["failedJobsHistoryLimit"] == settings.HISTORY_LIMIT
            if body["kind"] == "WorkflowTemplate":
                for t in body["spec"]["templates"]:
                    manifest = t.get("resource", {}).get("manifest", "")
                    if "kind: Job" in manifest and t["resource"]["action"] == "create":
                        job = yaml.safe_load(manifest)
                        assert job["spec"]["ttlSecondsAfterFinished"] == settings.JOB_TTL_SECONDS
    assert kinds == set(ARGO_KINDS)


def test_the_chart_defaults_clean_up_like_the_rendered_objects(platform: Platform) -> None:
    from renderer.layers.gitops import argo_workflows

    spec = argo_workflows.helm_values(platform.clusters["prod-east"], settings.NAMESPACE)
    defaults = spec["controller"]["workflowDefaults"]["spec"]
    assert defaults["ttlStrategy"]["secondsAfterSuccess"] == settings.WORKFLOW_SUCCESS_TTL_SECONDS
    assert defaults["ttlStrategy"]["secondsAfterFailure"] == settings.WORKFLOW_TTL_SECONDS
    assert defaults["podGC"] == {
        "strategy": "OnWorkflowSuccess",
        "deleteDelayDuration": settings.POD_GC_DELAY,
    }
