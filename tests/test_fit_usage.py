"""`gpuplane fit --usage FILE`: admission against the cluster's current usage.

The snapshots are built here from Kueue's own types (apis/kueue/v1beta2/workload_types.go
`Admission`/`PodSetAssignment`, clusterqueue_types.go `FlavorUsage`, apis/visibility/v1beta2
`PendingWorkloadsSummary`). The expected numbers follow Kueue v0.19.2's
pkg/cache/scheduler/resource_node.go, worked out from the example platform's team files
(nominalQuota, borrowingLimit, lendingLimit on l40s-infer), never from fit's output. Each team's
quota sits in its Cohort under the `prod` Cohort; on l40s-infer each team has one ClusterQueue,
with no quota or limit of its own, so its `available` is its team Cohort's, and the team Cohorts
form the flat cohort the formulas below describe (t: a team):

    localQuota(t)    = nominal - lendingLimit                    (quota the cohort never sees)
    cohort quota     = sum over the cohort of (nominal - localQuota)
    cohort usage     = sum over the cohort of max(0, usage - localQuota)
    available(cq)    = max(0, localQuota - usage)
                       + min(cohort quota - cohort usage,
                             (nominal - localQuota) - max(0, usage - localQuota) + borrowingLimit)

With fair sharing on (queues/prod.yaml), Kueue's `Preemptor.findCandidates` takes the Workloads
of every ClusterQueue that borrows (`cqIsBorrowing`: usage above its own nominal, 0 here), so the
other teams' Workloads are candidates whose eviction dominant resource shares decide
(`TargetClusterQueueOrdering`, pkg/scheduler/preemption/fairsharing/ordering.go): a team Cohort
that uses no more than its own quota does not borrow and is passed over whole, so where every
team is within its quota none of them is a target.

The job: 8 pods of one time-sliced GPU each (one per pod, as the device plugin requires) in
vision-serve, which queues in ClusterQueue vision-inference (the pool l40s-infer's quota lives
in the inference queue, docs/admission-model.md), at priority prod-standard.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from renderer.admission.answer.result import BORROWS, ERROR, FITS, WAITS, FitResult
from renderer.admission.answer.text import fit_json, fit_text
from renderer.admission.scheduler import kueue_usage as usage_module
from renderer.admission.scheduler.kueue_usage import read_snapshot
from renderer.commands.fit import check_fit
from renderer.model.platform import Platform
from renderer.model.queue_plans import cluster_queues
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import REPO

GPU = "nvidia.com/gpu"
POOL = "l40s-infer"
TEAMS = ("llm", "recsys", "speech", "vision")
"""The prod cohort's teams with quota on l40s-infer (teams/*.yaml)."""
JOB_GPUS = 8
STANDARD = 100  # prod-standard (queues/prod.yaml)

JOB = f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: probe
  namespace: vision-serve
  labels:
    kueue.x-k8s.io/priority-class: prod-standard
    gpuplane.dev/team: vision
    gpuplane.dev/cost-center: CC-1042
spec:
  parallelism: {JOB_GPUS}
  completions: {JOB_GPUS}
  ttlSecondsAfterFinished: 3600
  template:
    spec:
      restartPolicy: Never
      securityContext: {{runAsNonRoot: true, seccompProfile: {{type: RuntimeDefault}}}}
      containers:
        - name: main
          image: registry.example.com/vision/probe:1
          securityContext: {{allowPrivilegeEscalation: false, capabilities: {{drop: [ALL]}}}}
          resources:
            requests: {{cpu: "1", memory: 1Gi}}
            limits: {{nvidia.com/gpu: 1, memory: 1Gi}}
"""


@pytest.fixture(scope="module")
def example() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    return path


def limits(platform: Platform, team: str) -> tuple[int, int | None, int | None]:
    entry = next(q for q in platform.teams[team].gpus if q.pool == POOL)
    return entry.nominal, entry.borrowing_limit, entry.lending_limit


def local_quota(platform: Platform, team: str) -> int:
    nominal, _, lending = limits(platform, team)
    return 0 if lending is None else nominal - lending


def cohort_quota(platform: Platform) -> int:
    return sum(limits(platform, t)[0] - local_quota(platform, t) for t in TEAMS)


def available(platform: Platform, used: dict[str, int]) -> int:
    """Kueue's `available` for vision-inference, by hand (the module docstring)."""
    cohort_used = sum(max(0, used.get(t, 0) - local_quota(platform, t)) for t in TEAMS)
    nominal, borrowing, _ = limits(platform, "vision")
    local = local_quota(platform, "vision")
    mine = used.get("vision", 0)
    parent = cohort_quota(platform) - cohort_used
    if borrowing is not None:
        parent = min(parent, (nominal - local) - max(0, mine - local) + borrowing)
    return max(0, max(0, local - mine) + parent)


def workload(
    name: str,
    team: str,
    gpus: int,
    priority: int,
    *,
    version: str = "v1beta2",
    reserved_at: str = "2025-01-01T00:00:00Z",
    conditions: list[dict[str, str]] | None = None,
    cluster_queue: str | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    """A Workload as `kubectl get workloads -o json` shows one admitted by Kueue."""
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace or f"{team}-serve", "uid": name},
        "spec": {
            "priority": priority,
            "queueName": "default",
            "podSets": [{"name": "main", "count": gpus, "template": {"spec": {}}}],
        },
        "status": {
            "conditions": conditions
            if conditions is not None
            else [
                {"type": "QuotaReserved", "status": "True", "lastTransitionTime": reserved_at},
                {"type": "Admitted", "status": "True", "lastTransitionTime": reserved_at},
            ],
            "admission": {
                "clusterQueue": cluster_queue or f"{team}-inference",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {GPU: POOL, "cpu": POOL, "memory": POOL},
                        "resourceUsage": {GPU: str(gpus)},
                        "count": gpus,
                    }
                ],
            },
        },
    }


def snapshot(tmp_path: Path, *items: dict[str, Any], name: str = "snapshot.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return path


def fit_now(platform: Platform, job: Path, *snapshots: Path) -> FitResult:
    result = check_fit(platform, job, usage=read_snapshot(snapshots))
    assert fit_text(result).endswith("\n")
    json.dumps(fit_json(result))
    return result


def everyone_at_nominal(platform: Platform, vision_priority: int) -> list[dict[str, Any]]:
    return [
        workload(
            f"{team}-svc",
            team,
            limits(platform, team)[0],
            1000 if team != "vision" else vision_priority,
        )
        for team in TEAMS
    ]


# --- admission now ---------------------------------------------------------------------------


def test_a_cluster_queue_at_quota_in_a_full_cohort_waits_with_kueues_message(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """Every team of the cohort uses its nominal quota: the cohort's unused quota is 0, so
    vision-inference's Available is 0 and the job's 8 GPUs are all "more needed"
    (flavorassigner.go fitsResourceQuota: `insufficient unused quota for %s in flavor %s, %s
    more needed`, val - available). The holder of vision-inference's quota has priority 1000,
    above the job's 100: withinClusterQueue LowerPriority gives no candidate, and no other
    ClusterQueue borrows, so nobody can be preempted: it waits."""
    used = {t: limits(example, t)[0] for t in TEAMS}
    assert available(example, used) == 0
    result = fit_now(example, job, snapshot(tmp_path, *everyone_at_nominal(example, 1000)))
    assert (result.verdict, result.admissible) == (WAITS, True)
    assert result.message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
        f"in flavor {POOL}, {JOB_GPUS} more needed"
    )
    assert result.usage is not None
    (gpus,) = [r for r in result.usage.resources if r.resource == GPU]
    assert (gpus.used, gpus.nominal, gpus.available, gpus.cohort_available) == (
        limits(example, "vision")[0],
        limits(example, "vision")[0],
        0,
        0,
    )
    # every other team's Workload is a fair-sharing candidate (its ClusterQueue has no nominal
    # quota of its own), none a target: every other team Cohort is within its quota, so the
    # fair-sharing ordering prunes it (ordering.go nextTarget: not borrowing, not on the
    # preemptor's path)
    assert {c.name: (c.reason, c.target) for c in result.usage.candidates} == {
        f"{t}-svc": ("InCohortFairSharing", False) for t in TEAMS if t != "vision"
    }
    assert result.usage.frees_enough is False
    body = fit_json(result)
    assert body["assumption"] == "snapshot"
    assert body["usage"]["clusterQueue"] == "vision-inference"


def test_a_lower_priority_workload_of_the_same_queue_is_named_for_preemption(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """vision-inference's quota is held by two Workloads of priority 10 (below the job's 100)
    and one of 1000. withinClusterQueue: LowerPriority makes the two candidates
    (common.SatisfiesPreemptionPolicy), ordered lower priority first, then the most recently
    admitted first (common.CandidatesOrdering); evicting the newer one frees 8 GPUs, enough, and
    fillBackWorkloads has nothing to put back. The 1000 one is no candidate."""
    nominal = limits(example, "vision")[0]
    assert nominal == 16  # 8 + 8 below, so that one eviction is enough
    others = [
        w
        for w in everyone_at_nominal(example, 1000)
        if not w["metadata"]["name"].startswith("vision")
    ]
    items = [
        *others,
        workload("older", "vision", 8, 10, reserved_at="2025-01-01T00:00:00Z"),
        workload("newer", "vision", 8, 10, reserved_at="2025-02-01T00:00:00Z"),
    ]
    result = fit_now(example, job, snapshot(tmp_path, *items))
    assert result.verdict == WAITS
    assert result.usage is not None
    candidates = {c.name: c for c in result.usage.candidates}
    assert {n for n, c in candidates.items() if c.reason == "InClusterQueue"} == {"older", "newer"}
    assert {n for n, c in candidates.items() if c.target} == {"newer"}
    assert candidates["newer"].target and not candidates["older"].target
    assert candidates["newer"].reason == "InClusterQueue"
    assert candidates["newer"].priority == 10
    assert candidates["newer"].holds == {f"{GPU} on {POOL}": 8}
    assert result.usage.frees_enough is True
    assert "would preempt 1 workload" in result.summary
    assert "vision-serve/newer" in fit_text(result)


def test_fair_sharing_reclaims_from_the_team_that_borrows_most(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """Fair sharing (queues/prod.yaml) decided by dominant resource shares
    (pkg/cache/scheduler/fair_sharing.go, pkg/scheduler/preemption/fairsharing): recsys and
    speech use their nominal quota, vision half of its own, and llm everything the cohort has
    left, its nominal plus 8 borrowed (two Workloads of priority 1000: 32 GPUs, then 8 admitted
    later). vision's 8 GPUs are within its team's quota but nothing is free now.

    From the root, the fair-sharing ordering passes over every team Cohort that does not borrow
    (recsys, speech) and keeps vision's (on the preemptor's path); llm's Cohort borrows
    (dominant share 8 * 1000 / 44 lendable), the highest, so its ClusterQueue llm-inference is
    the target. Its Workloads come newest first (`CandidatesOrdering`, one priority): evicting
    llm-extra leaves vision's Cohort at share 0, not above llm's after the eviction (rule S2-a
    LessThanOrEqualToFinalShare), and frees exactly 8: it is the one target, with the reason
    InCohortFairSharing. recsys' and speech's Workloads are candidates (their ClusterQueues hold
    no nominal quota of their own: `cqIsBorrowing`) that are not taken."""
    nominal = {t: limits(example, t)[0] for t in TEAMS}
    lendable = cohort_quota(example)
    llm_extra = 8
    assert (nominal["llm"], lendable) == (32, 44)  # llm's 8 extra use all the cohort has left
    used = {"recsys": nominal["recsys"], "speech": nominal["speech"], "vision": 8}
    used["llm"] = nominal["llm"] + llm_extra
    assert available(example, used) == 0
    items = [
        workload("recsys-svc", "recsys", used["recsys"], 1000),
        workload("speech-svc", "speech", used["speech"], 1000),
        workload("vision-svc", "vision", used["vision"], 1000),
        workload("llm-base", "llm", nominal["llm"], 1000, reserved_at="2025-01-01T00:00:00Z"),
        workload("llm-extra", "llm", llm_extra, 1000, reserved_at="2025-02-01T00:00:00Z"),
    ]
    result = fit_now(example, job, snapshot(tmp_path, *items))
    assert result.verdict == WAITS
    assert result.usage is not None
    chosen = {c.name: (c.reason, c.target) for c in result.usage.candidates}
    assert chosen == {
        "llm-extra": ("InCohortFairSharing", True),
        "llm-base": ("InCohortFairSharing", False),
        "recsys-svc": ("InCohortFairSharing", False),
        "speech-svc": ("InCohortFairSharing", False),
    }
    assert result.usage.frees_enough is True
    assert "would preempt 1 workload" in result.summary
    assert not any("does not compute" in line for line in result.usage.preemption)


def test_a_cluster_queue_gpuplane_does_not_render_is_part_of_kueues_tree(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """A ClusterQueue the snapshot shows in Cohort prod that gpuplane does not render
    (byo-inference, no quota of its own) borrows the 8 GPUs the teams leave idle, with a
    Workload of priority 10. Kueue's tree holds it beside the team Cohorts, under prod: it is
    the only node that borrows (dominant share 8 * 1000 / 44 lendable), so fair sharing targets
    it (vision's Cohort stays within its quota, share 0: rule S2-a) and evicting its Workload
    frees the 8 GPUs vision's job needs, within vision's quota."""
    nominal = {t: limits(example, t)[0] for t in TEAMS}
    used = {"llm": nominal["llm"], "recsys": nominal["recsys"], "speech": nominal["speech"]}
    used["vision"] = 8
    stored = sum(max(0, used[t] - local_quota(example, t)) for t in TEAMS)
    assert cohort_quota(example) - stored == 8  # what byo-inference borrows fills the cohort
    foreign = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "byo-inference"},
        "spec": {
            "cohortName": "prod",
            "resourceGroups": [
                {
                    "coveredResources": [GPU],
                    "flavors": [{"name": POOL, "resources": [{"name": GPU, "nominalQuota": 0}]}],
                }
            ],
        },
    }
    items = [
        *(workload(f"{t}-svc", t, used[t], 1000) for t in TEAMS),
        foreign,
        workload("byo", "byo", 8, 10, cluster_queue="byo-inference", namespace="byo"),
    ]
    result = fit_now(example, job, snapshot(tmp_path, *items))
    assert result.verdict == WAITS
    assert result.usage is not None
    assert {c.name: (c.reason, c.target) for c in result.usage.candidates if c.target} == {
        "byo": ("InCohortFairSharing", True)
    }
    assert result.usage.frees_enough is True
    assert any("byo-inference" in n and "not rendered by gpuplane" in n for n in result.usage.notes)


def test_what_the_cohort_lends_shrinks_as_a_lenders_own_usage_rises(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """vision-inference, recsys-inference and speech-inference use their nominal quota; llm's
    usage rises. The cohort's unused quota is what llm has not taken back of what it stores
    there (resource_node.go `available`): it lends less and less, and the job goes from
    borrowing to waiting at the point the hand formula says."""
    base = {t: limits(example, t)[0] for t in ("vision", "recsys", "speech")}
    seen = []
    for llm in (16, 24, 28, 32):
        used = {**base, "llm": llm}
        items = [workload(f"{t}-svc", t, n, 1000) for t, n in used.items()]
        result = fit_now(example, job, snapshot(tmp_path, *items, name=f"s{llm}.json"))
        free = available(example, used)
        assert result.usage is not None
        (gpus,) = [r for r in result.usage.resources if r.resource == GPU]
        assert gpus.available == free
        if free >= JOB_GPUS:
            assert result.verdict == BORROWS, (llm, free)
        else:
            assert result.verdict == WAITS, (llm, free)
            assert result.message is not None
            assert result.message.endswith(f"{JOB_GPUS - free} more needed")
        seen.append((free, result.verdict))
    frees = [f for f, _ in seen]
    assert frees == sorted(frees, reverse=True) and frees[0] > frees[-1]
    assert {v for _, v in seen} == {BORROWS, WAITS}


def test_the_borrowing_limit_caps_what_the_cohort_lends_now(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """vision-inference already borrows 14 GPUs beyond its nominal 16 (its borrowing limit is
    16); the rest of the cohort is idle, so the cohort has plenty unused, but what
    vision-inference may still take from it is capped: stored there (nominal - localQuota),
    minus what it uses there, plus the borrowing limit (resource_node.go `available`)."""
    nominal, borrowing, _ = limits(example, "vision")
    assert borrowing is not None
    used = {"vision": nominal + borrowing - 2}
    cohort_unused = cohort_quota(example) - (used["vision"] - local_quota(example, "vision"))
    free = available(example, used)
    assert free < JOB_GPUS < cohort_unused  # the cap, not the cohort, decides
    result = fit_now(
        example, job, snapshot(tmp_path, workload("big", "vision", used["vision"], 1000))
    )
    assert result.verdict == WAITS
    assert result.message is not None
    assert result.message.endswith(f"{JOB_GPUS - free} more needed")


def test_an_idle_queue_fits_now_within_nominal(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """Nothing of vision-inference is used: 8 of its 16 nominal GPUs fit without borrowing."""
    result = fit_now(example, job, snapshot(tmp_path, workload("x", "llm", 32, 1000)))
    assert result.verdict == FITS
    assert "admitted now within team vision's nominal quota" in result.summary


def test_a_v1beta1_snapshot_and_the_cluster_queues_status(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """v1beta1 Workloads carry the same `status.admission` fields; a v1beta1 ClusterQueue names
    its cohort in `spec.cohort` and its usage in `status.flavorsReservation`, which fit counts
    over its Workloads (the ClusterQueue's status is the scheduler cache's own sum)."""
    items = [
        workload(f"{t}-svc", t, limits(example, t)[0], 1000, version="v1beta1")
        for t in TEAMS
        if t != "vision"
    ]
    vision_cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "vision-inference"},
        "spec": {"cohort": "prod"},
        "status": {
            "flavorsReservation": [
                {"name": POOL, "resources": [{"name": GPU, "total": "16", "borrowed": "0"}]}
            ]
        },
    }
    result = fit_now(example, job, snapshot(tmp_path, *items, vision_cq))
    assert result.verdict == WAITS
    assert result.usage is not None
    assert result.usage.usage_from == "status.flavorsReservation"
    (gpus,) = [r for r in result.usage.resources if r.resource == GPU]
    assert gpus.used == 16


def test_the_visibility_apis_pending_workloads_ahead_of_the_job(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """A PendingWorkloadsSummary (pkg/visibility/storage/pending_workloads_cq.go) names no
    ClusterQueue; the namespace finds it. Kueue's queue orders by priority: the 1000 one is
    ahead of a job at 100, the 10 one behind it; vision-serve's neighbour llm-serve queues
    elsewhere. It holds no usage, so the job fits as on an idle cluster."""
    summary = {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
        "metadata": {"creationTimestamp": None},
        "items": [
            {"metadata": {"name": "urgent", "namespace": "vision-serve"}, "priority": 1000,
             "localQueueName": "default", "positionInClusterQueue": 0, "positionInLocalQueue": 0},
            {"metadata": {"name": "later", "namespace": "vision-serve"}, "priority": 10,
             "localQueueName": "default", "positionInClusterQueue": 1, "positionInLocalQueue": 1},
            {"metadata": {"name": "other", "namespace": "llm-serve"}, "priority": 1000,
             "localQueueName": "default", "positionInClusterQueue": 0, "positionInLocalQueue": 0},
        ],
    }  # fmt: skip
    path = tmp_path / "pending.json"
    path.write_text(json.dumps(summary))
    result = fit_now(example, job, path)
    assert result.verdict == FITS
    assert result.usage is not None
    assert [p.name for p in result.usage.queued_ahead] == ["urgent"]
    assert any("visibility API lists pending workloads only" in n for n in result.usage.notes)


def test_workloads_that_hold_no_quota_or_belong_elsewhere_are_not_counted(
    example: Platform, job: Path, tmp_path: Path
) -> None:
    """Only a Workload whose QuotaReserved condition is true and that is not Finished holds
    quota (workload.HasQuotaReservation, finish.IsFinished). A Workload of a ClusterQueue of
    the other cluster is reported and ignored."""
    staging = next(
        p.name for p in cluster_queues(ClusterView.of(example, example.clusters["staging-west"]))
    )
    reserved = {
        "type": "QuotaReserved",
        "status": "True",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }
    items = [
        *[w for w in everyone_at_nominal(example, 1000) if not w["metadata"]["name"].startswith("vision")],
        workload("pending", "vision", 16, 1000, conditions=[]),
        workload("done", "vision", 16, 1000, conditions=[reserved, {"type": "Finished", "status": "True"}]),
        workload("away", "search", 16, 1000, cluster_queue=staging),
    ]  # fmt: skip
    result = fit_now(example, job, snapshot(tmp_path, *items))
    assert result.verdict == FITS
    assert result.usage is not None
    assert result.usage.workloads == 0
    assert any(staging in n and "ignored" in n for n in result.usage.notes)


def test_without_usage_fit_keeps_the_empty_cluster_answer(example: Platform, job: Path) -> None:
    result = check_fit(example, job)
    assert result.usage is None
    assert fit_json(result)["assumption"] == "empty-cluster"
    assert fit_json(result)["usage"] is None


# --- hostile snapshots -------------------------------------------------------------------------


HOSTILE: dict[str, bytes] = {
    "not-json": b"apiVersion: v1\nkind: List\nitems: []\n",
    "binary": b"\xff\xfe\x00garbage",
    "deep": b"[" * 200_000 + b"]" * 200_000,
    "wrong-types": json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    **workload("w", "vision", 1, 1),
                    "status": {
                        "conditions": [{"type": "QuotaReserved", "status": "True"}],
                        "admission": {"clusterQueue": "vision-inference", "podSetAssignments": {}},
                    },
                }
            ],
        }
    ).encode(),
    "bad-quantity": json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    **workload("w", "vision", 1, 1),
                    "status": {
                        "conditions": [{"type": "QuotaReserved", "status": "True"}],
                        "admission": {
                            "clusterQueue": "vision-inference",
                            "podSetAssignments": [
                                {
                                    "name": "main",
                                    "flavors": {GPU: POOL},
                                    "resourceUsage": {GPU: "1e99999"},
                                }
                            ],
                        },
                    },
                }
            ],
        }
    ).encode(),
    "priority-not-int": json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [{**workload("w", "vision", 1, 1), "spec": {"priority": "high"}}],
        }
    ).encode(),
    "top-level-list": b"[1, 2, 3]",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_snapshot_is_an_error_not_a_traceback(
    example: Platform, job: Path, tmp_path: Path, name: str
) -> None:
    path = tmp_path / f"{name}.json"
    path.write_bytes(HOSTILE[name])
    snap = read_snapshot([path])
    assert not snap.readable
    result = check_fit(example, job, usage=snap)
    assert result.verdict == ERROR
    assert result.summary == "cannot read the usage snapshot"
    assert str(path.as_posix()) in result.reasons[0]
    fit_text(result)


def test_a_snapshot_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = snapshot(tmp_path, workload("w", "vision", 1, 1))
    monkeypatch.setattr(usage_module, "MAX_SNAPSHOT_BYTES", 100)
    snap = read_snapshot([path])
    assert not snap.readable
    assert "more than the 100" in snap.problems[0]


def test_wrong_types_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_bytes(HOSTILE["wrong-types"])
    (problem,) = read_snapshot([path]).problems
    assert (
        "items[0].status.admission.podSetAssignments: expected a list, found an object" in problem
    )


# --- the command ------------------------------------------------------------------------------


def test_cli_usage_waits_exits_0_and_writes_the_usage(
    gpuplane: Any, example: Platform, job: Path, tmp_path: Path
) -> None:
    """`waits` is admissible (docs/fit.md: a busy cluster does not fail a gate), so exit 0."""
    snap = snapshot(tmp_path, *everyone_at_nominal(example, 1000))
    text = gpuplane("-C", str(REPO), "fit", str(job), "--usage", str(snap))
    assert text.exit_code == 0, text.output
    assert ": waits: " in text.output.splitlines()[0]
    assert "insufficient unused quota" in text.output
    as_json = gpuplane("-C", str(REPO), "fit", str(job), "--usage", str(snap), "--format", "json")
    body = json.loads(as_json.output)
    (one,) = body["workloads"]
    assert one["verdict"] == WAITS and one["assumption"] == "snapshot"
    gpus = next(r for r in one["usage"]["resources"] if r["resource"] == GPU)
    assert gpus["available"] == 0 and gpus["requested"] == JOB_GPUS


def test_cli_hostile_usage_exits_1_without_a_traceback(
    gpuplane: Any, job: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(HOSTILE["deep"])
    result = gpuplane("-C", str(REPO), "fit", str(job), "--usage", str(bad))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "cannot read the usage snapshot" in result.output


def test_the_numbers_behind_the_tests_are_the_team_files(example: Platform) -> None:
    """The scenarios above need these facts of teams/*.yaml; a change there moves them."""
    assert cohort_quota(example) == sum(
        (q.lending_limit if q.lending_limit is not None else q.nominal)
        for t in TEAMS
        for q in example.teams[t].gpus
        if q.pool == POOL
    )
    assert Decimal(limits(example, "vision")[0]) >= JOB_GPUS
