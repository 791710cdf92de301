"""Each policy rule, triggered by a realistic one-line change to the example platform.

Every registered rule must appear here at least once: a rule no test can trigger is a defect.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import renderer.policy.check  # noqa: F401  (registers every rule in POLICY)
from renderer.findings.rules import all_rules
from renderer.policy.rule import POLICY

# (rule, file, text to replace, replacement): one realistic mistake each.
CASES = [
    (
        "operator-missing",
        "clusters/staging-west.yaml",
        "    kuberay:\n      version: 1.7.0                 # the RayJob templates\n",
        "",
    ),
    (
        "operator-unused",
        "clusters/staging-west.yaml",
        "    opencost:\n",
        "    lws: {version: 0.10.0}\n    opencost:\n",
    ),
    (
        # both define the CRD mpijobs.kubeflow.org (kubeflow/trainer v1.9.4, mpi-operator v0.8.0)
        "operator-conflict",
        "clusters/staging-west.yaml",
        "    opencost:\n",
        "    trainingOperator: {version: v1.9.4}\n    mpiOperator: {version: v0.8.0}\n    opencost:\n",
    ),
    # the endpoint rules, with their hints applied: tests/test_endpoint_policy.py
    (
        "endpoint-purpose",
        "teams/llm-eval.yaml",
        "staging-west\n      purpose: inference",
        "staging-west\n      purpose: batch",
    ),
    (
        "endpoint-pool",
        "teams/llm.yaml",
        "pool: l40s-infer\n          host",
        "pool: h100-train\n          host",
    ),
    ("endpoint-replicas", "teams/llm.yaml", "{min: 2, max: 8}", "{min: 2, max: 1}"),
    (
        "endpoint-name-duplicate",
        "teams/llm.yaml",
        "    - {name: llm-notebooks,",
        "        - {name: chat, server: vllm, model: m, pool: l40s-infer, host: c.llm.example.com,"
        " replicas: {min: 1, max: 1}, slo: {p95: 1s}}\n    - {name: llm-notebooks,",
    ),
    ("endpoint-signal", "teams/llm-eval.yaml", "target: 0.8}", "target: 80}"),
    ("endpoint-quota", "teams/llm.yaml", "{min: 2, max: 8}", "{min: 2, max: 40}"),
    (
        "endpoint-shared-gpus",
        "teams/llm.yaml",
        "pool: l40s-infer\n          host",
        "pool: l40s-infer\n          gpus: 2\n          host",
    ),
    ("endpoint-single-replica", "teams/recsys.yaml", "{min: 4, max: 12}", "{min: 1, max: 12}"),
    ("unknown-reference", "teams/vision.yaml", "queue: prod\n", "queue: prd\n"),
    ("endpoint-slo-bucket", "teams/llm.yaml", "slo: {p95: 500ms}", "slo: {p95: 450ms}"),
    ("endpoint-slo-metric", "teams/recsys.yaml", "p95: 100ms}", "p95: 100ms, metric: ttft}"),
    ("unknown-reference", "pools/l4-serve.yaml", "cluster: staging-west", "cluster: staging-wst"),
    (
        "queue-pool-elsewhere",
        "queues/prod.yaml",
        "pools: [h100-train, l40s-infer, a100-mig]",
        "pools: [h100-train, l40s-infer, a100-mig, l4-serve]",
    ),
    (
        "pool-not-in-queue",
        "teams/llm-eval.yaml",
        "{pool: l4-serve, nominal: 4, borrowingLimit: 4, lendingLimit: 2}",
        "{pool: l40s-infer, nominal: 4}",
    ),
    (
        "duplicate-quota",
        "teams/llm-eval.yaml",
        "{pool: l4-serve, nominal: 4, borrowingLimit: 4, lendingLimit: 2}",
        "{pool: h200-tune, nominal: 1}",
    ),
    ("namespace-conflict", "teams/speech.yaml", "name: speech-serve,", "name: vision-serve,"),
    ("reserved-namespace", "teams/vision.yaml", "name: vision-notebooks,", "name: kube-gpu,"),
    ("reserved-namespace", "teams/vision.yaml", "name: vision-notebooks,", "name: argocd,"),
    # staging-west is an EKS cluster: Fargate's log router reads its configuration there
    ("reserved-namespace", "teams/search.yaml", "name: search-serve,", "name: aws-observability,"),
    ("sentinel-value", "teams/vision.yaml", "costCenter: CC-1042", "costCenter: platform"),
    # speech is charged to CC-1061: the letter O for the zero reads the same
    ("team-name-confusable", "teams/vision.yaml", "costCenter: CC-1042", "costCenter: CC-1O61"),
    (
        "rbac-group-identifier",
        "teams/vision.yaml",
        "viewers: [ml-platform-support]",
        'viewers: ["ml-platform-supp\\u043ert"]',  # a Cyrillic o
    ),
    (
        "rbac-group-confusable",
        "teams/vision.yaml",
        "viewers: [ml-platform-support]",
        "viewers: [rnl-platform-support]",  # rn for m, next to the other teams' viewers
    ),
    (
        "namespace-outside-queue-cluster",
        "teams/vision.yaml",
        "name: vision-notebooks, cluster: prod-east,",
        "name: vision-notebooks, cluster: staging-west,",
    ),
    (
        "rbac-group-characters",
        "teams/vision.yaml",
        "viewers: [ml-platform-support]",
        'viewers: ["ml-platform,support"]',
    ),
    (
        "rbac-group-characters",
        "teams/vision.yaml",
        "viewers: [ml-platform-support]",
        "viewers: ['ml\"platform']",  # Argo CD's RBAC lines cannot carry a quote
    ),
    # a namespace no list reserves, and not visibly the team's: an ingress controller's
    (
        "namespace-team-prefix",
        "teams/vision.yaml",
        "name: vision-notebooks,",
        "name: ingress-public,",
    ),
    (
        "rbac-reserved-group",
        "teams/vision.yaml",
        "viewers: [ml-platform-support]",
        'viewers: ["system:authenticated"]',
    ),
    (
        "quota-exceeds-pool",
        "teams/llm-eval.yaml",
        "{pool: h200-tune, nominal: 4,",
        "{pool: h200-tune, nominal: 9,",
    ),
    (
        "guaranteed-exceeds-capacity",
        "teams/llm-eval.yaml",
        "{pool: h200-tune, nominal: 4, borrowingLimit: 16, lendingLimit: 2}",
        "{pool: h200-tune, nominal: 8, borrowingLimit: 16, lendingLimit: 0}",
    ),
    (
        "lending-exceeds-nominal",
        "teams/llm-eval.yaml",
        "nominal: 4, borrowingLimit: 4, lendingLimit: 2}",
        "nominal: 4, borrowingLimit: 4, lendingLimit: 5}",
    ),
    (
        "borrowing-exceeds-pool",
        "teams/llm-eval.yaml",
        "nominal: 4, borrowingLimit: 4, lendingLimit: 2}",
        "nominal: 4, borrowingLimit: 40, lendingLimit: 2}",
    ),
    (
        "quota-needs-namespace",
        "teams/llm-eval.yaml",
        "cluster: staging-west, purpose: training}\n    - name: llm-eval-serve\n      cluster: staging-west\n",
        "cluster: prod-east, purpose: training}\n    - name: llm-eval-serve\n      cluster: prod-east\n",
    ),
    (
        "training-inference-separation",
        "teams/llm-eval.yaml",
        "    - {name: llm-eval-train, cluster: staging-west, purpose: training}\n",
        "",
    ),
    ("unknown-accelerator", "pools/l4-serve.yaml", "accelerator: l4", "accelerator: l4-24gb"),
    ("mig-layout-invalid", "pools/a100-mig.yaml", "      2g.20gb: 1\n", "      2g.20gb: 2\n"),
    (
        "quota-profile",
        "teams/vision.yaml",
        "{pool: a100-mig, profile: 3g.40gb,",
        "{pool: a100-mig,",
    ),
    (
        "quota-profile",
        "teams/vision.yaml",
        "{pool: h100-train, nominal: 8,",
        "{pool: h100-train, profile: 1g.10gb, nominal: 8,",
    ),
    (
        "sharing-breaks-training",
        "pools/l40s-infer.yaml",
        "workload: online-inference",
        "workload: distributed-training",
    ),
    (
        "dra-needs-kubernetes-1.34",
        "pools/h100-train.yaml",
        "exposure: device-plugin",
        "exposure: dra",
    ),
    ("acceptance-thresholds", "pools/h100-train.yaml", "    checkpointWriteGBps: 4\n", ""),
    ("acceptance-thresholds", "pools/l4-serve.yaml", "    inferenceP95Ms: 400\n", ""),
    ("cost-currency", "pools/l4-serve.yaml", "currency: USD", "currency: EUR"),
    ("queue-priorities", "queues/staging.yaml", "      value: 500\n", "      value: 100\n"),
    ("queue-priorities", "queues/staging.yaml", "      default: true\n", ""),
    ("unknown-priority", "teams/llm-eval.yaml", "priority: release-candidate", "priority: release"),
    (
        "mixing-priority",
        "queues/staging.yaml",
        "oversubscription: 1.5",
        "oversubscription: 1.5\n  mixing: {inferencePriority: standard}",
    ),
    (
        "observability-missing",
        "clusters/prod-east.yaml",
        "    prometheusStack:\n      version: 79.6.1\n      enabled: true\n",
        "    prometheusStack:\n      enabled: false\n",
    ),
    (
        "addon-version-unpinned",
        "clusters/prod-east.yaml",
        "    kueue:\n      version: v0.19.2\n",
        "    kueue: {}\n",
    ),
    (
        "addon-version-unpinned",
        "clusters/prod-east.yaml",
        "    argoWorkflows:\n      version: 2.0.4 ",
        "    argoWorkflows:\n      enabled: true ",
    ),
    (
        "argo-workflows-addon-missing",
        "clusters/staging-west.yaml",
        "    argoWorkflows:\n      version: 2.0.4 ",
        "    # argoWorkflows:\n    #   version: 2.0.4 ",
    ),
    (
        "scheduler-addon-missing",
        "clusters/staging-west.yaml",
        "scheduler: kueue",
        "scheduler: volcano",
    ),
    ("pool-host-capacity", "pools/l4-serve.yaml", "    cpus: 48\n", ""),
    (
        "pool-in-several-queues",
        "queues/staging.yaml",
        "pools: [h200-tune, l4-serve]",
        "pools: [h200-tune, l4-serve, h100-train]",
    ),
    (
        "queue-preemption",
        "queues/prod.yaml",
        "    reclaimWithinCohort: Any ",
        "    reclaimWithinCohort: Never\n    borrowWithinCohort: LowerPriority\n   ",
    ),
    (
        "queue-settings-differ",
        "queues/prod.yaml",
        "    reclaimWithinCohort: Any ",
        "    borrowWithinCohort: LowerPriority\n    reclaimWithinCohort: Any ",
    ),
    (
        "topology-levels",
        "pools/h100-train.yaml",
        "      - topology.gpuplane.dev/rack\n      - kubernetes.io/hostname\n",
        "      - kubernetes.io/hostname\n      - topology.gpuplane.dev/rack\n",
    ),
    (
        "pool-labels-limit",
        "pools/h200-tune.yaml",
        "  labels:\n",
        "  labels:\n    a.example.com/one: x\n    a.example.com/two: x\n    a.example.com/three: x\n",
    ),
    ("driver-version-required", "pools/l4-serve.yaml", '    driver: "570.124.06"\n', ""),
    (
        "driver-version-mismatch",
        "pools/a100-mig.yaml",
        'driver: "570.124.06"',
        'driver: "570.86.15"',
    ),
    (
        "acceptance-image-differs",
        "pools/h100-train.yaml",
        "  acceptance:\n",
        '  acceptance:\n    nodeImage: {os: ubuntu-24.04, kernel: "6.8", driver: "570.124.06", cuda: "12.8", runtime: containerd-1.7}\n',
    ),
    (
        "mig-strategy-conflict",
        "pools/l40s-infer.yaml",
        "sharing: time-slicing\n  timeSlicing:",
        "sharing: mps\n  mps:",
    ),
    ("sharing-needs-nvidia", "pools/l40s-infer.yaml", "accelerator: l40s", "accelerator: mi300x"),
    (
        "dra-unsupported",
        "pools/l40s-infer.yaml",
        "exposure: device-plugin",
        "exposure: dra",
    ),
    (
        "pool-label-domain",
        "pools/h200-tune.yaml",
        "  labels:\n",
        "  labels:\n    node.kubernetes.io/instance-kind: gpu\n",
    ),
    (
        "argocd-project",
        "clusters/staging-west.yaml",
        "project: platform-staging",
        "project: platform",
    ),
    (
        "rdma-on-tcp-fabric",
        "pools/l4-serve.yaml",
        "    gbpsPerNic: 40\n",
        "    gbpsPerNic: 40\n    rdma: {resource: vpc.amazonaws.com/efa, perNode: 1}\n",
    ),
    (
        "multi-node-without-rdma",
        "pools/h100-train.yaml",
        "    rdma:\n      resource: rdma/rdma_shared_device_a\n      perNode: 1\n",
        "",
    ),
    (
        "pod-security-loosened",
        "teams/llm-eval.yaml",
        "      cluster: staging-west\n      purpose: inference\n",
        "      cluster: staging-west\n      purpose: inference\n      podSecurity: baseline\n",
    ),
    (
        "secret-literal",
        "teams/llm.yaml",
        "contact: llm-infra@example.com",
        "contact: llm-infra@example.com AKIAIOSFODNN7EXAMPLE",
    ),
    ("retention-bounds", "teams/llm.yaml", "finishedJobs: 48h", "finishedJobs: 365d"),
    (
        "secret-store-operator",
        "clusters/prod-east.yaml",
        "    externalSecrets:\n      version: 2.9.0",
        "    # externalSecrets:\n    #   version: 2.9.0",
    ),
    # Kueue v0.19.2 manages RayServices from KubeRay v1.3.0 (its "Run RayServices" page)
    (
        "operator-version-incompatible",
        "clusters/staging-west.yaml",
        "      version: 1.7.0                 # the RayJob templates",
        "      version: 1.2.0                 # the RayJob templates",
    ),
    ("egress-too-wide", "teams/llm.yaml", "- cidr: 10.20.0.0/16", "- cidr: 0.0.0.0/0"),
    (
        "egress-special-address",
        "teams/llm.yaml",
        "- cidr: 10.20.0.0/16",
        "- cidr: 169.254.169.254/32",
    ),
    ("egress-host-bits", "teams/llm.yaml", "- cidr: 10.20.0.0/16", "- cidr: 10.20.0.1/16"),
    (
        "egress-too-many-rules",
        "teams/llm.yaml",
        "  egress:\n",
        "  egress:\n"
        + "".join(f"    - {{cidr: 10.50.{n}.0/24, ports: [443]}}\n" for n in range(33)),
    ),
    ("egress-duplicate", "teams/llm.yaml", "- cidr: 10.30.4.0/24", "- cidr: 10.20.4.0/24"),
    (
        "image-prefix-boundary",
        "teams/llm.yaml",
        "- registry.example.com/llm/",
        "- registry.example.com/llm",
    ),
    (
        "image-prefix-invalid",
        "teams/llm.yaml",
        "- registry.example.com/base/",
        "- registry.example.com/Base/",
    ),
    ("image-prefix-public-root", "teams/llm.yaml", "- registry.example.com/base/", "- docker.io/"),
    # a second namespace of a purpose the team has: a second ResourceQuota, nothing more
    (
        "namespace-purpose-repeated",
        "teams/vision.yaml",
        "{name: vision-notebooks, cluster: prod-east, purpose: notebooks}",
        "{name: vision-notebooks, cluster: prod-east, purpose: training}",
    ),
    # shares of the team's caps that add up to more than the team's 512 CPUs
    (
        "namespace-caps-exceed-team",
        "teams/vision.yaml",
        "{name: vision-notebooks, cluster: prod-east, purpose: notebooks}",
        '{name: vision-notebooks, cluster: prod-east, purpose: notebooks, resources: {cpu: "600"}}',
    ),
    # prod-east's pools hold 4 x 224 + 6 x 128 + 2 x 256 = 2,176 CPUs at their largest
    ("cap-exceeds-cluster", "teams/vision.yaml", 'cpu: "512"', 'cpu: "100000000"'),
    ("cap-exceeds-cluster", "teams/vision.yaml", "memory: 4Ti", "memory: 4Ei"),
    # a team named like the queue whose Cohort its own would sit under: a new team file,
    # tests/red_team/test_reach.py
    (
        "image-prefix-not-allowed",
        "teams/llm.yaml",
        "- registry.example.com/base/",
        "- ghcr.io/someone-else/",
    ),
    ("egress-not-allowed", "teams/llm.yaml", "- cidr: 10.20.0.0/16", "- cidr: 8.8.8.0/24"),
    # a production image from a registry gpuplane.yaml does not allow: tests/test_suite_production_image.py
    (
        "production-image-not-allowed",
        "pools/h100-train.yaml",
        "productionImage: registry.example.com/base/pytorch-train:2026.11",
        "productionImage: quay.io/someone/pytorch:1",
    ),
    # WorkloadPriorityClass `prod-<priority>`: 5 + 59 characters, one more than a label value
    ("derived-name-too-long", "queues/prod.yaml", "- name: preemptible", "- name: " + "p" * 59),
    # 2^53+1 CPUs on each of 4 nodes: a ClusterQueue's CPU quota of two nodes is past an int64
    ("pool-amount-out-of-range", "pools/h100-train.yaml", "cpus: 224", "cpus: 9007199254740993"),
]


WARNINGS = {
    "endpoint-single-replica",
    "queue-settings-differ",
    "acceptance-image-differs",
    "pool-unused",
    "multi-node-without-rdma",
    "operator-unused",
}


def test_every_policy_rule_has_a_case() -> None:
    # quota-caps-missing needs a team and its cluster both without a cap: tests/test_guardrail_rules.py
    tested_elsewhere = {
        "pool-unused",
        "reserved-queue-name",
        "quota-caps-missing",
        "cohort-name-taken",
        # the host rules, each with its hint applied: tests/test_endpoint_hosts.py
        "endpoint-host-duplicate",
        "endpoint-host-domain",
        "endpoint-host-reserved",
        "team-domain-overlap",
        # growth against a base commit, in git repositories: tests/test_capacity_gate.py
        "capacity-evidence",
        "evidence-place",
        # a team scaffolded by `new`, its hint applied: tests/test_team_images.py
        "team-images-missing",
    }
    assert {rule.id for rule in POLICY} == {case[0] for case in CASES} | tested_elsewhere


def test_every_rule_explains_itself(gpuplane) -> None:
    for doc in all_rules():
        result = gpuplane("explain", doc.id)
        assert result.exit_code == 0
        assert result.output.startswith(f"{doc.id} ({doc.stage})")
        assert len(doc.text.split()) >= 8, f"{doc.id} explains too little"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rule", "file", "old", "new"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES]
)
def test_rule_fires(rule: str, file: str, old: str, new: str, platform: Path, gpuplane) -> None:
    path = platform / file
    text = path.read_text()
    assert old in text, f"the example changed: {old!r} is no longer in {file}"
    path.write_text(text.replace(old, new, 1))
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    import json

    report = json.loads(result.output)
    fired = [d for d in report["findings"] if d["rule"] == rule]
    assert fired, result.output
    assert all(d["line"] > 0 and d["hint"] for d in fired), fired
    assert result.exit_code == (1 if report["summary"]["errors"] else 0)
    severities = {d["level"] for d in fired}
    assert severities == ({"warning"} if rule in WARNINGS else {"error"})


def test_gpu_scraping_is_required_on_production_only(platform: Path, gpuplane) -> None:
    old = "      serviceMonitor: true\n"
    off = "      serviceMonitor: false\n"
    for name in ("prod-east", "staging-west"):
        path = platform / "clusters" / f"{name}.yaml"
        text = path.read_text()
        assert text.count(old) == 1, "the example changed: one serviceMonitor, the exporter's"
        path.write_text(text.replace(old, off))
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 1, result.output
    assert (
        "error[observability-missing] cluster 'prod-east' does not scrape the DCGM exporter"
        in result.output
    )
    assert "cluster 'staging-west'" not in result.output


def test_unused_pool_is_a_warning_only(platform: Path, gpuplane) -> None:
    spare = (
        (platform / "pools" / "l4-serve.yaml")
        .read_text()
        .replace("name: l4-serve", "name: l4-spare")
    )
    (platform / "pools" / "l4-spare.yaml").write_text(spare)
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 0
    assert (
        "pools/l4-spare.yaml:6:9: warning[pool-unused] pool 'l4-spare' is in no queue"
        in result.output
    )


def test_the_example_platform_is_clean(gpuplane) -> None:
    from tests.conftest import REPO

    result = gpuplane("-C", str(REPO), "validate")
    assert result.exit_code == 0
    assert result.output.startswith("ok: 16 input files")


def test_volcano_reserved_queue_names(platform: Path, gpuplane) -> None:
    cluster = platform / "clusters" / "staging-west.yaml"
    cluster.write_text(cluster.read_text().replace("scheduler: kueue", "scheduler: volcano"))
    staging = (platform / "queues" / "staging.yaml").read_text()
    (platform / "queues" / "root.yaml").write_text(staging.replace("name: staging", "name: root"))
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 1
    assert (
        "queues/root.yaml:6:9: error[reserved-queue-name] queue 'root' would replace Volcano's own 'root' queue"
        in result.output
    )


def test_mig_is_refused_on_a_distributed_training_pool(platform: Path, gpuplane) -> None:
    """NVIDIA's MIG user guide: MIG instances have no GPU-to-GPU peer-to-peer (NVLink or PCIe)
    and a CUDA process sees a single instance, so multi-node all-reduce cannot run on them."""
    pool = platform / "pools/a100-mig.yaml"
    pool.write_text(
        pool.read_text().replace("workload: notebooks", "workload: distributed-training")
    )
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 1
    assert "error[sharing-breaks-training] pool 'a100-mig' shares GPUs with mig" in result.output
    assert "no peer-to-peer path" in result.output


@pytest.mark.parametrize("layout", ["{1g.10gb: 1, 7g.80gb: 1}", "{3g.71gb: 2, 1g.10gb: 1}"])
def test_a_broken_mig_layout_is_reported_alone_not_as_quota_overcommit(
    platform: Path, gpuplane, layout: str
) -> None:
    """A layout the GPU Operator would refuse implies no capacity: counting quotas against it
    sent teams to wrong fixes ("raise spec.nodes", "set borrowingLimit to at most 4")."""
    pool = platform / "pools/a100-mig.yaml"
    text = pool.read_text()
    start = text.index("    layout:\n")
    end = text.index("\n  exposure:", start)
    pool.write_text(text[:start] + f"    layout: {layout}" + text[end:])
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    assert result.exit_code == 1
    rules = {d["rule"] for d in json.loads(result.output)["findings"]}
    assert "mig-layout-invalid" in rules
    assert not rules & {
        "quota-exceeds-pool",
        "guaranteed-exceeds-capacity",
        "borrowing-exceeds-pool",
    }
