"""`gpuplane fit`: job files against the example platform, every Kueue example, hostile files.

Expected numbers are derived here from the example platform's own inputs (teams/*.yaml,
pools/*.yaml), never copied from fit's output: a quota change in a team file moves both.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from renderer.admission.answer.result import BORROWS, ERROR, FITS, NEVER, FitResult
from renderer.admission.answer.text import fit_json, fit_text
from renderer.admission.workloads import readers
from renderer.admission.workloads.podsets import Unreadable, Workload
from renderer.admission.workloads.readers import workload_from
from renderer.commands.fit import check_file, check_fit
from renderer.inputs.source import load_file
from renderer.model.platform import Platform, Team
from renderer.pipeline import load_platform
from tests.conftest import REPO, copy_inputs, submits

CASES = Path(__file__).parent / "cases" / "fit"
HOSTILE = Path(__file__).parent / "cases" / "hostile"
KUEUE_EXAMPLES = REPO.parent / "shared" / "reference" / "kueue-examples"
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def example() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def fit(platform: Platform, name: str, **options: str) -> FitResult:
    result = check_fit(platform, CASES / f"{name}.yaml", **options)
    assert fit_text(result).endswith("\n")
    json.dumps(fit_json(result))
    return result


# --- the platform's numbers, from its inputs ------------------------------------------------------


def quota(team: Team, pool: str, profile: str | None = None) -> tuple[int, int | None, int | None]:
    entry = next(q for q in team.gpus if q.pool == pool and q.profile == profile)
    return entry.nominal, entry.borrowing_limit, entry.lending_limit


def lenders(
    platform: Platform, borrower: str, pool: str, profile: str | None = None
) -> dict[str, int]:
    """What every other team of the borrower's queue lends on a pool: its lending limit, or all
    its nominal quota when it sets none (Kueue's rule), by the team's Cohort holding the quota."""
    queue = platform.teams[borrower].queue
    out = {}
    for team in platform.teams.values():
        if team.name == borrower or team.queue != queue:
            continue
        for q in team.gpus:
            if q.pool == pool and q.profile == profile:
                lent = q.nominal if q.lending_limit is None else q.lending_limit
                if lent:
                    out[team.name] = lent
    return out


def maximum(platform: Platform, team: str, pool: str, profile: str | None = None) -> int:
    """Kueue's most a ClusterQueue may hold: nominal + what the cohort lends, capped by the
    borrowing limit."""
    nominal, borrowing, _ = quota(platform.teams[team], pool, profile)
    lent = sum(lenders(platform, team, pool, profile).values())
    return nominal + (lent if borrowing is None else min(borrowing, lent))


def gpu_quota(result: FitResult, flavor: str, resource: str = GPU) -> Any:
    return next(q for q in result.quotas if q.flavor == flavor and q.resource == resource)


# --- the cases ------------------------------------------------------------------------------------


def test_job_within_nominal_fits(example: Platform) -> None:
    result = fit(example, "job-within-nominal")
    nominal, _, _ = quota(example.teams["vision"], "h100-train")
    assert (result.verdict, result.admissible) == (FITS, True)
    assert (result.cluster, result.namespace, result.local_queue) == (
        "prod-east",
        "vision-train",
        "default",
    )
    assert (result.cluster_queue, result.cohort) == ("vision-training", "prod")
    assert [(ps.name, ps.count, ps.flavor, ps.borrows) for ps in result.pod_sets] == [
        ("main", 1, "h100-train", False)
    ]
    gpus = gpu_quota(result, "h100-train")
    assert gpus.requested == nominal == 8
    assert gpus.borrowed == 0
    standard = example.queues["prod"].priority("standard")
    assert standard is not None
    assert (result.priority, result.priority_value) == ("prod-standard", standard.value)
    assert result.priority_source == "label kueue.x-k8s.io/priority-class"
    assert not result.lenders


def _without_priority_label(example: Platform, tmp_path: Path) -> Path:
    job = (CASES / "job-within-nominal.yaml").read_text()
    kept = [line for line in job.splitlines() if "priority-class" not in line]
    assert len(kept) == len(job.splitlines()) - 1
    path = tmp_path / "job.yaml"
    path.write_text("\n".join(kept) + "\n")
    return path


def test_a_job_without_priority_is_refused_where_no_mutating_policy_is_served(
    example: Platform, tmp_path: Path
) -> None:
    """prod-east runs Kubernetes 1.33: the security layer's ValidatingAdmissionPolicy requires
    the label (MutatingAdmissionPolicy v1 is served from 1.36), so the API server refuses the
    Job before Kueue sees it. The refusal is the policies step's (docs/fit.md, "The chain"; it
    was fit's own message before the chain), and Kueue's answer goes on as if the Job named
    the team's priority."""
    result = check_fit(example, _without_priority_label(example, tmp_path))
    assert (result.verdict, result.admissible) == (NEVER, False)
    refusals = [r for o in result.chain for r in o.refusals]
    assert [r.source for r in refusals] == ["ValidatingAdmissionPolicy 'gpuplane-priority'"]
    (refusal,) = refusals
    assert refusal.message.startswith(
        'jobs.batch "resnet-8gpu" is forbidden: '
        "ValidatingAdmissionPolicy 'gpuplane-priority' with binding 'gpuplane-priority' denied"
    )
    assert "workloads of team vision must name their priority" in refusal.message
    assert "kueue.x-k8s.io/priority-class: prod-standard" in refusal.fix
    assert (result.kueue_verdict, result.priority) == (FITS, "prod-standard")
    assert result.priority_source is not None
    assert result.priority_source.startswith(
        "as if labelled kueue.x-k8s.io/priority-class: prod-standard"
    )


def test_a_job_without_priority_gets_the_teams_where_a_mutating_policy_is_served(
    tmp_path: Path,
) -> None:
    """On 1.36 a MutatingAdmissionPolicy sets the label to the team's priority on create: the
    chain's mutating step says so, and Kueue reads the label it set."""
    root = copy_inputs(REPO, tmp_path / "repo")
    cluster = root / "clusters/prod-east.yaml"
    text = cluster.read_text()
    assert 'kubernetesVersion: "1.33"' in text
    cluster.write_text(text.replace('kubernetesVersion: "1.33"', 'kubernetesVersion: "1.36"'))
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    platform = loaded.platform
    result = check_fit(platform, _without_priority_label(platform, tmp_path))
    standard = platform.queues["prod"].priority("standard")
    assert standard is not None
    assert result.verdict == FITS
    assert (result.priority, result.priority_value) == ("prod-standard", standard.value)
    assert result.priority_source == (
        "no priority label: MutatingAdmissionPolicy gpuplane-priority-vision sets "
        "kueue.x-k8s.io/priority-class: prod-standard (team vision's priority)"
    )
    changes = [c for o in result.chain for c in o.changes]
    assert (
        "MutatingAdmissionPolicy 'gpuplane-priority-vision' sets label "
        "kueue.x-k8s.io/priority-class: prod-standard"
    ) in changes


def test_job_that_must_borrow(example: Platform) -> None:
    result = fit(example, "job-borrows")
    nominal, borrowing, _ = quota(example.teams["vision"], "h100-train")
    assert (nominal, borrowing) == (8, 16)
    assert result.verdict == BORROWS and result.admissible
    gpus = gpu_quota(result, "h100-train")
    assert gpus.requested == 2 * 8
    assert gpus.borrowed == 16 - nominal
    assert gpus.maximum == maximum(example, "vision", "h100-train")
    expected = lenders(example, "vision", "h100-train")
    assert expected == {"llm": 8, "recsys": 2, "speech": 2}
    assert {lender.cohort: lender.lendable for lender in result.lenders} == expected
    assert "borrowing 8 nvidia.com/gpu on h100-train from cohort prod" in result.summary
    assert any("reclaimWithinCohort: Any" in p for p in result.preemption)


def test_job_over_nominal_plus_what_the_cohort_lends_never_fits(example: Platform) -> None:
    result = fit(example, "job-over-maximum")
    nominal, borrowing, _ = quota(example.teams["vision"], "h100-train")
    most = maximum(example, "vision", "h100-train")
    # the borrowing limit alone would allow 24; the cohort lends only 12 of it
    assert nominal + (borrowing or 0) == 24 and most == 20
    assert result.verdict == NEVER and not result.admissible
    # the pod set asks for TAS at level block (podset-preferred-topology); a100-mig is a TAS
    # flavor too (it shares ClusterQueues with h100-train, topology.with_topology_peers) but its
    # Topology has only kubernetes.io/hostname, so Kueue skips it before its quota
    # (checkPodSetAndFlavorMatchForTAS: TASFlavorSnapshot.HasLevel is false). The quota reason
    # is fitsResourceQuota's format string, amounts in Kueue's ResourceQuantity; Status.Message
    # sorts the reasons ("F" < "i") and joins them with ", "
    assert "topology.gpuplane.dev/block" not in example.pools["a100-mig"].topology_levels
    assert result.message == (
        'couldn\'t assign flavors to pod set main: Flavor "a100-mig" does not contain the '
        "requested level, insufficient quota for nvidia.com/gpu in flavor h100-train, "
        "previously considered podsets requests (0) + current podset request (24) > maximum "
        f"capacity ({most})"
    )
    assert any("lend at most 12" in r for r in result.reasons)
    # limits without requests: Kueue counts the LimitRange default, and fit says so
    assert any("LimitRange default request (1)" in n for n in result.notes)


def test_pod_larger_than_a_node_never_fits(example: Platform) -> None:
    """The quota would hold 16 GPUs, but h100-train is a topology-aware flavor: once quota
    holds the pod, Kueue's TAS places it on the pool's nodes itself and finds none with 16
    GPUs (`findTopologyAssignment`), so Kueue never admits it and says so in `notFitMessage`'s
    words; fit adds which resource is short."""
    result = fit(example, "pod-larger-than-node")
    pool = example.pools["h100-train"]
    assert result.verdict == NEVER
    assert maximum(example, "llm", "h100-train") >= 16  # the quota is not what stops it
    assert result.pod_sets[0].flavor is None and result.pod_sets[0].tried
    assert result.message_from == "Kueue"
    assert result.message == (
        "couldn't assign flavors to pod set main: topology \"block-rack-hostname\" doesn't "
        f"allow to fit any of 1 pod(s). Total nodes: {pool.nodes.max}; excluded: resource "
        f'"nvidia.com/gpu": {pool.nodes.max}'
    )
    assert (
        f"a pod of pod set main requests 16 nvidia.com/gpu, but a node of pool h100-train has "
        f"{pool.gpus_per_node}" in result.reasons
    )


def test_mig_slice_in_a_notebooks_namespace(example: Platform) -> None:
    result = fit(example, "notebook-mig")
    nominal, _, _ = quota(example.teams["vision"], "a100-mig", "1g.10gb")
    assert result.verdict == FITS
    assert (result.cluster_queue, result.purpose) == ("vision-notebooks", "notebooks")
    assert [(ps.name, ps.count, ps.flavor) for ps in result.pod_sets] == [("main", 2, "a100-mig")]
    mig = gpu_quota(result, "a100-mig", "nvidia.com/mig-1g.10gb")
    assert (mig.requested, mig.nominal) == (2, nominal)
    assert mig.maximum == maximum(example, "vision", "a100-mig", "1g.10gb")


def test_mig_profile_the_pool_does_not_have(example: Platform) -> None:
    result = fit(example, "mig-profile-missing")
    assert "7g.80gb" not in example.pools["a100-mig"].mig_layout
    assert result.verdict == NEVER
    assert result.message == (
        "couldn't assign flavors to pod set main: resource nvidia.com/mig-7g.80gb unavailable "
        "in ClusterQueue"
    )
    assert any("a100-mig (1g.10gb, 2g.20gb, 3g.40gb)" in r for r in result.reasons)


def test_time_sliced_inference_deployment(example: Platform) -> None:
    result = fit(example, "inference-deployment")
    nominal, _, _ = quota(example.teams["recsys"], "l40s-infer")
    assert example.pools["l40s-infer"].sharing == "time-slicing"
    assert result.verdict == FITS
    assert (result.cluster_queue, result.purpose) == ("recsys-inference", "inference")
    assert (result.replicas, result.admitted_replicas, result.replica_unit) == (4, 4, "pod")
    assert [(ps.name, ps.count, ps.flavor) for ps in result.pod_sets] == [("main", 1, "l40s-infer")]
    gpus = gpu_quota(result, "l40s-infer")
    assert gpus.requested == 4 <= nominal
    # the Deployment names recsys's team priority (below 1.36 the priority policy requires it)
    assert example.teams["recsys"].priority == "production"
    production = example.queues["prod"].priority("production")
    assert production is not None
    assert (result.priority, result.priority_value) == ("prod-production", production.value)
    assert result.priority_source == "label kueue.x-k8s.io/priority-class"
    assert any("time-slicing" in n for n in result.notes)


def test_jobset_with_several_replicated_jobs(example: Platform) -> None:
    result = fit(example, "jobset")
    nominal, _, _ = quota(example.teams["llm"], "h100-train")
    assert result.verdict == BORROWS
    assert [(ps.name, ps.count, ps.flavor, ps.borrows) for ps in result.pod_sets] == [
        ("driver", 1, "h100-train", False),
        ("workers", 2 * 2, "h100-train", False),  # replicas x parallelism
        ("evaluator", 1, "h100-train", True),  # the pod sets before it used the nominal 16
    ]
    gpus = gpu_quota(result, "h100-train")
    assert gpus.requested == 4 * 4 + 4
    assert gpus.borrowed == gpus.requested - nominal == 4
    assert gpus.maximum == maximum(example, "llm", "h100-train")


@pytest.fixture(scope="module")
def with_trainer(tmp_path_factory: pytest.TempPathFactory) -> Platform:
    """The example with search-train submitting TrainJobs: staging-west declares Kubeflow
    Trainer (its chart 2.3.0; JobSet, which it runs TrainJobs as, is there already)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("trainer"))
    submits(root, "search-train", ("TrainJob",), {"trainer": "2.3.0"})
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


def test_trainjob_where_trainer_is_not_installed(example: Platform) -> None:
    """staging-west declares no Kubeflow Trainer: kubectl finds no mapping for the TrainJob
    (`no matches for kind`), so it is never created, whatever Kueue would do with it."""
    assert "trainer" not in example.clusters["staging-west"].addons
    result = fit(example, "trainjob")
    assert result.verdict == NEVER
    ((outcome, refusal),) = result.refusals
    assert outcome.step.value == "discovery" and outcome.addon == "trainer"
    assert 'no matches for kind "TrainJob" in version "trainer.kubeflow.org/v1alpha1"' in (
        refusal.message
    )
    assert result.kueue_verdict == FITS  # as if the cluster declared it: test_trainjob


def test_trainjob(with_trainer: Platform) -> None:
    example = with_trainer
    result = fit(example, "trainjob")
    nominal, _, _ = quota(example.teams["search"], "h200-tune")
    assert result.verdict == FITS
    assert (result.cluster, result.cluster_queue) == ("staging-west", "search-training")
    assert [(ps.name, ps.count, ps.flavor) for ps in result.pod_sets] == [("node", 2, "h200-tune")]
    gpus = gpu_quota(result, "h200-tune")
    assert gpus.requested == 2 * 4 == nominal
    # search may borrow 24, but llm-eval lends only 2 on h200-tune
    assert gpus.maximum == maximum(example, "search", "h200-tune") == nominal + 2


def test_rayjob(example: Platform) -> None:
    result = fit(example, "rayjob")
    nominal, _, _ = quota(example.teams["speech"], "h100-train")
    # head and workers ask for TAS; KubeRay's default submitter template carries no annotation,
    # but every flavor of speech-training is topology-aware (a100-mig is h100-train's topology
    # peer), so the ClusterQueue is TAS-only (clusterqueue.go isTASOnly): TAS is implied for the
    # submitter (isTASImplied) and it takes h100-train, the first flavor, like the others
    assert result.verdict == FITS
    assert [(ps.name, ps.count, ps.flavor) for ps in result.pod_sets] == [
        ("head", 1, "h100-train"),
        ("gpu-workers", 2, "h100-train"),
        ("submitter", 1, "h100-train"),
    ]
    assert result.pod_sets[2].per_pod == {"cpu": Decimal("0.5"), "memory": 200 * 2**20}
    assert gpu_quota(result, "h100-train").requested == 2 * 2 == nominal


def test_namespace_without_a_queue(example: Platform) -> None:
    result = fit(example, "no-team-namespace")
    assert result.verdict == NEVER
    assert result.message == "LocalQueue default doesn't exist"
    assert "namespace default is not a team namespace" in result.reasons[0]


def test_localqueue_that_does_not_exist(example: Platform) -> None:
    result = fit(example, "unknown-localqueue")
    assert result.verdict == NEVER
    assert result.message == "LocalQueue research doesn't exist"
    assert result.cluster_queue is None


def test_inference_namespace_cannot_reach_a_training_flavor(example: Platform) -> None:
    result = fit(example, "inference-on-training-pool")
    assert example.pools["h100-train"].workload == "distributed-training"
    assert result.verdict == NEVER
    assert result.cluster_queue == "vision-inference"
    assert result.message == (
        "couldn't assign flavors to pod set main: flavor l40s-infer doesn't match node affinity"
    )
    assert any("pool h100-train, which serves training, batch" in r for r in result.reasons)
    assert result.admitted_replicas == 0


def test_unknown_priority_class(example: Platform) -> None:
    """A class not of the team's queue is refused by the priority policy at admission, before
    Kueue would look the class up (tests/test_priority_kinds.py evaluates the policy itself).
    The refusal is the policies step's; Kueue's answer goes on with the team's own priority,
    and says which class it replaced."""
    result = fit(example, "unknown-priority")
    assert result.verdict == NEVER
    (refusal,) = [r for o in result.chain for r in o.refusals]
    assert refusal.source == "ValidatingAdmissionPolicy 'gpuplane-priority'"
    assert (
        refusal.message.startswith('jobs.batch "urgent"')
        and "ValidatingAdmissionPolicy 'gpuplane-priority' with binding" in refusal.message
    )
    assert "prod-production, prod-standard, prod-preemptible" in refusal.message
    assert result.priority == "prod-standard"
    assert "prod-urgent" in (result.priority_source or "")


def test_partial_admission(example: Platform) -> None:
    result = fit(example, "partial-admission")
    most = maximum(example, "vision", "h100-train")
    assert 4 * 8 > most >= 2 * 8
    assert result.verdict == BORROWS
    (main,) = result.pod_sets
    assert (main.count, main.requested_count) == (most // 8, 4)
    assert "partial admission: pod set main runs 2 of 4 pods" in result.summary


def test_a_file_with_two_documents_gets_an_answer_for_each(example: Platform) -> None:
    """What `kubectl apply -f` creates: both Jobs (tests/test_fit_documents.py has the rest)."""
    name = "two-documents"
    path = CASES / f"{name}.yaml"
    result = check_file(example, path)
    assert [(w.kind, w.name) for w in result.workloads] == [("Job", "first"), ("Job", "second")]
    assert result.ignored == ()
    assert check_fit(example, path) == result.worst


def test_not_a_workload(example: Platform) -> None:
    result = fit(example, "not-a-workload")
    assert result.verdict == ERROR
    assert result.reasons[0] == "no workload in the file; it holds ConfigMap settings"


@pytest.mark.parametrize("name", sorted(p.name for p in HOSTILE.glob("*.yaml")))
def test_hostile_job_files_get_an_error_not_a_traceback(example: Platform, name: str) -> None:
    result = check_fit(example, HOSTILE / name)
    assert result.verdict == ERROR and not result.admissible
    assert result.reasons
    assert fit_text(result).endswith("\n")


def test_namespace_from_the_command_line(example: Platform, tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    text = (
        (CASES / "job-within-nominal.yaml").read_text().replace("  namespace: vision-train\n", "")
    )
    job.write_text(text)
    missing = check_fit(example, job)
    assert missing.verdict == ERROR and "no metadata.namespace" in missing.reasons[0]
    # in speech's namespace, the job takes team speech's labels and images (teams/speech.yaml),
    # or the policies refuse it before Kueue
    for vision, speech in [
        ("gpuplane.dev/team: vision", "gpuplane.dev/team: speech"),
        ("gpuplane.dev/cost-center: CC-1042", "gpuplane.dev/cost-center: CC-1061"),
        ("registry.example.com/vision/", "registry.example.com/speech/"),
    ]:
        assert vision in text
        text = text.replace(vision, speech)
    job.write_text(text)
    given_ns = check_fit(example, job, namespace="speech-train")
    assert (given_ns.verdict, given_ns.cluster_queue) == (BORROWS, "speech-training")


def test_a_namespace_on_two_clusters_needs_cluster(platform: Path) -> None:
    """Team `vision-train` on staging-west (the search team, renamed) may name a namespace
    after itself, `vision-train`: the name team vision uses on prod-east."""
    search = platform / "teams" / "search.yaml"
    text = search.read_text().replace("name: search\n", "name: vision-train\n", 1)
    text = text.replace("{name: search-", "{name: vision-train-")
    text = text.replace("{name: vision-train-train,", "{name: vision-train,")
    search.unlink()
    (platform / "teams" / "vision-train.yaml").write_text(text)
    loaded = load_platform(platform)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    job = CASES / "job-within-nominal.yaml"
    both = check_fit(loaded.platform, job)
    assert both.verdict == ERROR
    assert "clusters prod-east, staging-west: pass --cluster" in both.reasons[0]
    east = check_fit(loaded.platform, job, cluster="prod-east")
    assert (east.verdict, east.cluster_queue) == (FITS, "vision-training")
    west = check_fit(loaded.platform, job, cluster="staging-west")
    assert (west.cluster_queue, west.team) == ("vision-train-training", "vision-train")
    unknown = check_fit(loaded.platform, job, cluster="nowhere")
    assert unknown.verdict == ERROR and "cluster nowhere is not declared" in unknown.reasons[0]


def test_namespace_resource_quota_caps_what_kueue_admits(example: Platform, tmp_path: Path) -> None:
    """3 CPU-only pods of 180 cores: Kueue holds it (vision-training may reach 560 cores on
    h100-train), a node has 224, but vision-train's share of the team's 512 cores is less:
    vision-serve takes 96 and the other two namespaces split the rest."""
    vision = example.teams["vision"]
    assert vision.resources["cpu"] == "512"
    (serve,) = [ns for ns in vision.namespaces if ns.name == "vision-serve"]
    share = (512 - int(serve.resources["cpu"])) // 2
    job = tmp_path / "cpu.yaml"
    job.write_text(
        (CASES / "job-within-nominal.yaml")
        .read_text()
        .replace("parallelism: 1", "parallelism: 3")
        .replace("completions: 1", "completions: 3")
        .replace('requests: {cpu: "96", memory: 900Gi}', 'requests: {cpu: "180", memory: 64Gi}')
        .replace("limits: {nvidia.com/gpu: 8, memory: 900Gi}", "limits: {memory: 64Gi}")
    )
    result = check_fit(example, job)
    assert result.verdict == NEVER
    assert any(f"requests.cpu up to {share}" in r for r in result.reasons)


def test_deployment_larger_than_the_quota_admits_some_replicas(
    example: Platform, tmp_path: Path
) -> None:
    job = tmp_path / "serve.yaml"
    job.write_text(
        (CASES / "inference-deployment.yaml").read_text().replace("replicas: 4", "replicas: 60")
    )
    result = check_fit(example, job)
    most = maximum(example, "recsys", "l40s-infer")
    assert result.verdict == BORROWS
    assert (result.replicas, result.admitted_replicas) == (60, most)
    assert f"only {most} of 60 pods at once" in result.summary


# --- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code", "verdict"),
    [
        ("job-within-nominal", 0, FITS),
        ("job-borrows", 0, BORROWS),
        ("job-over-maximum", 1, NEVER),
        ("not-a-workload", 1, ERROR),
    ],
)
def test_cli_exit_codes_and_json(gpuplane, name: str, code: int, verdict: str) -> None:
    job = str(CASES / f"{name}.yaml")
    text = gpuplane("-C", str(REPO), "fit", job)
    assert text.exit_code == code
    assert text.output.endswith("\n")
    assert f": {verdict}: " in text.output.splitlines()[0]
    as_json = gpuplane("-C", str(REPO), "fit", job, "--format", "json")
    assert as_json.exit_code == code
    body = json.loads(as_json.output)
    assert body["verdict"] == verdict
    assert body["admissible"] is (code == 0)
    assert [w["verdict"] for w in body["workloads"]] == ([] if verdict == ERROR else [verdict])


def test_cli_json_numbers(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "fit", str(CASES / "job-borrows.yaml"), "--format", "json")
    (body,) = json.loads(result.output)["workloads"]
    (gpus,) = [q for q in body["quota"] if q["resource"] == GPU]
    assert gpus == {
        "flavor": "h100-train",
        "resource": GPU,
        "requested": 16,
        "nominal": 8,
        "borrowingLimit": 16,
        "maximum": 20,
        "cohortLendable": 12,
        "borrowed": 8,
    }
    assert body["podSets"][0]["perPod"] == {"cpu": "64", "memory": "512Gi", GPU: 8}
    assert body["clusterQueue"] == "vision-training"


def test_scratch_disk_is_not_counted_by_kueue(example: Platform) -> None:
    """Kueue's configuration excludes ephemeral-storage, so asking for scratch disk changes
    nothing: the same job as job-within-nominal still fits on h100-train."""
    result = fit(example, "job-with-scratch-disk")
    assert (result.verdict, result.admissible) == (FITS, True)
    assert (
        gpu_quota(result, "h100-train").requested == quota(example.teams["vision"], "h100-train")[0]
    )


def _without_rdma(platform: Platform, *names: str) -> Platform:
    """The platform with these pools' `fabric.rdma` removed: their cluster's Kueue no longer
    excludes the resource unless another of its pools declares it."""
    pools = {
        n: dataclasses.replace(p, rdma=None) if n in names else p for n, p in platform.pools.items()
    }
    return dataclasses.replace(platform, pools=pools)


def test_jobset_with_rdma_devices_fits_where_kueue_excludes_them(example: Platform) -> None:
    """Two whole-node pods, each with the pool's RDMA device: Kueue counts only the GPUs (the
    cluster's configuration excludes the pool's RDMA resource), so llm's nominal quota holds it."""
    rdma = example.pools["h100-train"].rdma
    assert rdma is not None
    per_node = example.pools["h100-train"].gpus_per_node
    nominal, _, _ = quota(example.teams["llm"], "h100-train")
    result = fit(example, "jobset-rdma")
    assert (result.verdict, result.cluster_queue) == (FITS, "llm-training")
    assert [(ps.name, ps.count, ps.flavor) for ps in result.pod_sets] == [
        ("leader", 1, "h100-train"),
        ("workers", 1, "h100-train"),
    ]
    assert all(rdma.resource not in ps.per_pod for ps in result.pod_sets)
    assert rdma.resource not in {q.resource for q in result.quotas}
    assert gpu_quota(result, "h100-train").requested == 2 * per_node == nominal
    assert any(f"1 {rdma.resource} per pod" in n and "does not count" in n for n in result.notes)


def test_the_same_jobset_never_fits_where_kueue_does_not_exclude_them(example: Platform) -> None:
    """Without `fabric.rdma` on prod-east's pools, Kueue's configuration does not exclude the
    resource and no ClusterQueue covers it: Kueue holds the JobSet for good."""
    resource = "rdma/rdma_shared_device_a"
    declaring = [n for n, p in example.pools.items() if p.rdma and p.rdma.resource == resource]
    assert sorted(declaring) == ["a100-mig", "h100-train"]
    result = fit(_without_rdma(example, *declaring), "jobset-rdma")
    assert (result.verdict, result.admissible) == (NEVER, False)
    # assignFlavors returns at the first pod set no flavor holds (atLeastOnePodsAssignmentFailed),
    # so Kueue's message names pod set leader only, and workers is not tried
    assert result.message == (
        f"couldn't assign flavors to pod set leader: resource {resource} unavailable in "
        "ClusterQueue"
    )
    assert [(ps.name, ps.tried) for ps in result.pod_sets] == [("leader", True), ("workers", False)]
    assert any("spec.fabric.rdma" in r and resource in r for r in result.reasons)
    # one pool still declaring it is enough: the exclusion is per cluster
    assert fit(_without_rdma(example, "a100-mig"), "jobset-rdma").verdict == FITS


def test_rdma_devices_of_a_pool_that_does_not_declare_them_are_pointed_out(
    example: Platform, tmp_path: Path
) -> None:
    """a100-mig without `fabric.rdma` while h100-train keeps it: Kueue still excludes the
    resource on prod-east and admits the job, but a100-mig's nodes may not advertise it."""
    job = tmp_path / "mig-rdma.yaml"
    job.write_text(
        (CASES / "notebook-mig.yaml")
        .read_text()
        .replace(
            "limits: {nvidia.com/mig-1g.10gb: 1, memory: 32Gi}",
            "limits: {nvidia.com/mig-1g.10gb: 1, memory: 32Gi, rdma/rdma_shared_device_a: 1}",
        )
    )
    result = check_fit(_without_rdma(example, "a100-mig"), job)
    assert result.verdict == FITS
    assert any(
        "pool a100-mig declares no RDMA resource" in n and "rdma/rdma_shared_device_a" in n
        for n in result.notes
    )
    declared = check_fit(example, job)
    assert declared.verdict == FITS
    assert not any("stay Pending" in n for n in declared.notes)


def test_two_shared_replicas_per_pod_never_run(example: Platform) -> None:
    """Time-sliced replicas are one per pod (failRequestsGreaterThanOne in the rendered device
    plugin config), so a pod asking for two can never run on l40s-infer."""
    assert example.pools["l40s-infer"].sharing == "time-slicing"
    result = fit(example, "shared-gpu-two-replicas")
    assert (result.verdict, result.admissible) == (NEVER, False)
    assert any("failRequestsGreaterThanOne" in reason for reason in result.reasons)


def test_every_case_has_a_test() -> None:
    names = {p.stem for p in CASES.glob("*.yaml")}
    source = Path(__file__).read_text()
    assert len(names) >= 10
    assert all(f'"{name}"' in source for name in names), names


# --- every Kueue example -------------------------------------------------------------------------


def _example_files() -> list[Path]:
    if not KUEUE_EXAMPLES.is_dir():
        return []
    return sorted(p for p in KUEUE_EXAMPLES.rglob("*") if p.suffix in (".yaml", ".yml"))


def _documents(path: Path) -> Iterator[Any]:
    yield from (d for d in YAML(typ="safe").load_all(path.read_text()) if d is not None)


KUEUE_KINDS = {
    "ClusterQueue",
    "LocalQueue",
    "ResourceFlavor",
    "Cohort",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
    "ProvisioningRequestConfig",
    "Topology",
    "Configuration",
}


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: str(p.relative_to(KUEUE_EXAMPLES)))
def test_kueue_example_reads_cleanly(example: Platform, path: Path) -> None:
    try:
        documents = list(_documents(path))
    except YAMLError:
        # not YAML at all (a docs fragment): the hardened loader says so, and fit reports it
        assert load_file(path, path.name).diagnostics
        assert check_fit(example, path).verdict == ERROR
        return
    for document in documents:
        parsed = workload_from(document)
        if isinstance(parsed, Unreadable):
            assert parsed.reason
            if isinstance(document, dict) and document.get("kind") in KUEUE_KINDS:
                assert not parsed.workload, parsed.reason  # skipped: not a workload
            continue
        assert parsed.pod_sets
        for ps in parsed.pod_sets:
            assert ps.count >= 0 and ps.containers
            assert all(v >= 0 for v in ps.requests().values())
    result = check_fit(example, path)  # one file, one answer, never a traceback
    assert result.verdict in (FITS, BORROWS, NEVER, ERROR)
    assert fit_text(result).endswith("\n")
    json.dumps(fit_json(result))


def _read(relative: str, index: int = 0) -> Workload:
    path = KUEUE_EXAMPLES / relative
    if not path.exists():
        pytest.skip("../shared/reference/kueue-examples is not beside this checkout")
    parsed = workload_from(list(_documents(path))[index])
    assert isinstance(parsed, Workload), parsed
    return parsed


def _shape(workload: Workload) -> list[tuple[str, int]]:
    return [(ps.name, ps.count) for ps in workload.pod_sets]


def test_kueue_examples_by_hand() -> None:
    job = _read("jobs/sample-job.yaml")
    assert _shape(job) == [("main", 3)]  # parallelism 3, completions 3
    assert job.queue_name == "user-queue"
    assert job.pod_sets[0].requests() == {"cpu": 1, "memory": 200 * 2**20}
    partial = _read("jobs/sample-job-partial-admission.yaml")
    assert (partial.pod_sets[0].count, partial.pod_sets[0].min_count) == (20, 5)
    jobset = _read("jobs/sample-jobset.yaml")
    assert _shape(jobset) == [("workers", 1), ("driver", 1)]
    assert jobset.pod_sets[1].requests()["cpu"] == 2
    assert _shape(_read("jobs/sample-pytorchjob.yaml")) == [("master", 1), ("worker", 1)]
    assert _shape(_read("jobs/sample-mpijob.yaml")) == [("launcher", 1), ("worker", 2)]
    assert _shape(_read("jobs/sample-tfjob.yaml")) == [("ps", 1), ("worker", 2)]
    ray = _read("jobs/ray-job-sample.yaml")
    assert _shape(ray) == [("head", 1), ("small-group", 1), ("submitter", 1)]
    assert _shape(_read("jobs/ray-cluster-sample.yaml")) == [("head", 1), ("small-group", 1)]
    cron = _read("jobs/sample-cronjob.yaml")
    assert (_shape(cron), cron.queue_name) == ([("main", 3)], "user-queue")
    deployment = _read("serving-workloads/sample-deployment.yaml")
    assert (_shape(deployment), deployment.replicas) == ([("main", 1)], 3)
    assert _shape(_read("serving-workloads/sample-statefulset.yaml")) == [("main", 3)]
    lws = _read("serving-workloads/sample-leaderworkerset.yaml")
    assert (_shape(lws), lws.replicas) == ([("leader", 1), ("worker", 2)], 2)
    sandbox = _read("pod-based-workloads/sample-sandbox.yaml")
    assert (_shape(sandbox), sandbox.queue_name) == ([("main", 1)], "user-queue")
    pods = [_read("pods-kueue/kueue-pod-group.yaml", i) for i in (0, 1)]
    assert all(_shape(p) == [("main", 1)] for p in pods)
    wrapped = _read("appwrapper/pytorch-sample.yaml")
    # Kueue's AppWrapper.PodSets (pkg/controller/jobs/appwrapper/appwrapper_controller.go) names
    # pod set i of all the components' pod sets fmt.Sprintf("%s-%v", j.Name, psIndex), lower-cased
    # by NewPodSetReference, counting awutils.Replicas (the PyTorchJob's Master, then Worker)
    assert _shape(wrapped) == [
        ("sample-appwrapper-pytorch-job-0", 1),
        ("sample-appwrapper-pytorch-job-1", 1),
    ]
    claims = _read("dra/sample-dra-rct-job.yaml", 1)
    (claim,) = claims.pod_sets[0].resource_claims
    assert (claim.name, claim.template, claim.claim) == ("gpu", "single-gpu", None)


def test_pod_by_pod_kinds_are_explained() -> None:
    path = KUEUE_EXAMPLES / "pod-based-workloads" / "workflow-single-queue.yaml"
    if not path.exists():
        pytest.skip("../shared/reference/kueue-examples is not beside this checkout")
    parsed = workload_from(next(_documents(path)))
    assert isinstance(parsed, Unreadable) and parsed.workload
    assert "one at a time" in parsed.reason


# --- pod requests ------------------------------------------------------------------------------


def _pod(spec: dict[str, Any]) -> Workload:
    parsed = workload_from(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    )
    assert isinstance(parsed, Workload), parsed
    return parsed


def test_requests_follow_kubernetes_for_init_containers_and_sidecars() -> None:
    pod = _pod(
        {
            "initContainers": [
                {"name": "log", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "fetch", "resources": {"requests": {"cpu": "6", "memory": "1Gi"}}},
            ],
            "containers": [
                {
                    "name": "a",
                    "resources": {"requests": {"cpu": "2"}, "limits": {"nvidia.com/gpu": 1}},
                },
                {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}},
            ],
            "overhead": {"cpu": "250m"},
        }
    )
    # containers 2 + 1 (limit as request) + sidecar 1 = 4; init fetch 6 + sidecar 1 = 7
    assert pod.pod_sets[0].requests() == {
        "cpu": Decimal("7.25"),
        "memory": 2 * 2**30,
        "nvidia.com/gpu": 1,
    }
    # a Pod's limits become its requests (the API server's SetDefaults_Pod) before the
    # LimitRange fills what is still missing: a and the sidecar 1Gi each, b its 2Gi limit
    defaults = {"cpu": Decimal(1), "memory": Decimal(2**30)}
    assert pod.pod_sets[0].requests(defaults)["memory"] == 4 * 2**30


@pytest.mark.parametrize(
    "spec",
    [
        {"containers": "nope"},
        {"containers": []},
        {"containers": [{"name": "a", "resources": {"requests": {"cpu": "lots"}}}]},
        {"containers": [{"name": "a", "resources": {"limits": {"cpu": True}}}]},
        {"containers": [{"name": "a"}], "tolerations": [3]},
    ],
)
def test_broken_pod_specs_are_unreadable(spec: dict[str, Any]) -> None:
    parsed = workload_from(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    )
    assert isinstance(parsed, Unreadable) and parsed.workload


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 10)
    | st.text(max_size=4)
    | st.sampled_from(["1", "500m", "2Gi", "Always"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "spec",
                    "template",
                    "containers",
                    "initContainers",
                    "resources",
                    "requests",
                    "limits",
                    "cpu",
                    "replicas",
                    "parallelism",
                    "completions",
                    "replicatedJobs",
                    "name",
                    "groupName",
                    "headGroupSpec",
                    "workerGroupSpecs",
                    "rayClusterSpec",
                    "trainer",
                    "numNodes",
                    "resourcesPerNode",
                    "pytorchReplicaSpecs",
                    "Worker",
                    "Master",
                    "jobTemplate",
                    "leaderWorkerTemplate",
                    "workerTemplate",
                    "size",
                    "components",
                    "driver",
                    "executor",
                    "nodeSelector",
                    "tolerations",
                    "affinity",
                    "metadata",
                    "labels",
                    "podTemplate",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@pytest.mark.slow  # 300 hypothesis examples, as test_properties
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(readers.READERS)), body=_json)
def test_workload_from_never_raises(kind: tuple[str, str], body: Any) -> None:
    group, name = kind
    document = body if isinstance(body, dict) else {"spec": body}
    document = {**document, "apiVersion": f"{group}/v1" if group else "v1", "kind": name}
    parsed = workload_from(document)
    assert isinstance(parsed, Workload | Unreadable)
