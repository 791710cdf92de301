"""No render step may grow faster than the platform: call counts, not timings.

The benchmark's platform generator (`bench.generate`) builds the same platform at three sizes
(the number of teams doubled twice, clusters and pools fixed). Every Python function of gpuplane
and of Hera is counted while each cluster is rendered (`sys.setprofile`, 'call' events). A step
that is linear in the teams is called about twice as often when they double; one that loops over
the teams for each team (like summing a cohort's lending once per ClusterQueue, as
`queue_plans.potential_available` used to) four times as often. The exponent is read between the
two larger sizes, so fixed start-up work does not hide growth.

Deterministic: the same generated platform gives the same counts on every machine.
"""

from __future__ import annotations

import math
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from bench.generate import generate_platform
from renderer.model import queue_plans
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform, render_cluster
from renderer.policy.check import check_policy
from tests.conftest import REPO, SHARED_CRDS

pytestmark = pytest.mark.slow

SIZES = (12, 24, 48)
"""Teams per platform: the exponent is measured between the last two."""
CLUSTERS = 2
POOLS_PER_CLUSTER = 4
MAX_EXPONENT = 1.2
"""Linear work doubles (exponent 1); a loop over teams inside a loop over teams quadruples (2)."""
MIN_CALLS = 200
"""Functions called fewer times at the largest size are start-up work, not a step's growth."""
COUNTED = (str(REPO / "renderer") + "/", str(REPO / "workflows") + "/", "/hera/")

KNOWN_SUPERLINEAR = {
    # Each team's priority ValidatingAdmissionPolicy matched on `admission.platform_account`,
    # whose CEL lists every team namespace's service-account prefix: one list of all teams in
    # each team's policy, so the security layer's output grew with the square of the teams on
    # a cluster. One policy per cluster lists them once now, and
    # test_the_priority_policies_grow_linearly holds these two to it.
    ("renderer/layers/security/policy_parts.py", "cel_string"),
    ("renderer/layers/security/policy_parts.py", "<genexpr>"),
}

Key = tuple[str, str]


def _short(path: str) -> str:
    return path.split(str(REPO) + "/", 1)[-1] if path.startswith(str(REPO)) else path


@cache
def calls(teams: int) -> tuple[Counter[Key], int]:
    """Calls per (file, function) while every cluster of the generated platform is rendered,
    and the number of objects rendered."""
    with tempfile.TemporaryDirectory(prefix="gpuplane-scaling-") as tmp:
        root = Path(tmp)
        generate_platform(root, clusters=CLUSTERS, pools_per_cluster=POOLS_PER_CLUSTER, teams=teams)
        platform = load_platform(root).platform
    assert not check_policy(platform), "the generated platform must be clean"
    counted: Counter[Key] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            if any(part in code.co_filename for part in COUNTED):
                counted[(_short(code.co_filename), code.co_name)] += 1

    objects = 0
    previous: Callable[..., Any] | None = sys.getprofile()
    sys.setprofile(profile)
    try:
        for name in sorted(platform.clusters):
            objects += len(render_cluster(ClusterView.of(platform, platform.clusters[name])))
    finally:
        sys.setprofile(previous)
    return counted, objects


@cache
def platform_calls(teams: int) -> Counter[Key]:
    """Calls while the whole pipeline (`render_platform`: layers, output validation with the
    CRDs, the transition rules' lookups of each object's committed old self) renders the
    generated platform over its own committed tree, as `render --check` does."""
    from renderer.output.transitions import committed_tree
    from renderer.output.validation import OutputValidator
    from renderer.output.writer import build_tree, write_tree
    from renderer.pipeline import render_platform

    counted: Counter[Key] = Counter()
    with tempfile.TemporaryDirectory(prefix="gpuplane-scaling-") as tmp:
        root = Path(tmp)
        generate_platform(root, clusters=CLUSTERS, pools_per_cluster=POOLS_PER_CLUSTER, teams=teams)
        validator = OutputValidator([SHARED_CRDS])
        first = render_platform(root, validator)
        assert not first.diagnostics, first.diagnostics[:3]
        write_tree(root / "rendered", build_tree(first.manifests))
        previous = committed_tree(root)
        assert previous, "the committed tree is read back"

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if event == "call":
                code = frame.f_code
                if any(part in code.co_filename for part in COUNTED):
                    counted[(_short(code.co_filename), code.co_name)] += 1

        before = sys.getprofile()
        sys.setprofile(profile)
        try:
            render_platform(root, validator, previous=previous)
        finally:
            sys.setprofile(before)
    return counted


def test_no_step_of_render_check_grows_faster_than_the_platform() -> None:
    """The same at the scale of the whole pipeline: finding each object's committed old self
    once scanned every committed file (a genexpr resumed objects x files times)."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    middle, large = platform_calls(SIZES[1]), platform_calls(SIZES[2])
    found = []
    for key, count in large.items():
        if count >= MIN_CALLS and key not in KNOWN_SUPERLINEAR:
            grown = exponent(max(middle[key], 1), count)
            if grown > MAX_EXPONENT:
                found.append(f"{key[0]}:{key[1]}: {middle[key]} -> {count} ({grown:.2f})")
    assert not found, "\n".join(sorted(found))


def exponent(small: int, large: int) -> float:
    return math.log(large / small) / math.log(SIZES[2] / SIZES[1])


def superlinear() -> dict[Key, tuple[int, int, float]]:
    middle, _ = calls(SIZES[1])
    large, _ = calls(SIZES[2])
    found = {}
    for key, count in large.items():
        if count < MIN_CALLS:
            continue
        grown = exponent(max(middle[key], 1), count)
        if grown > MAX_EXPONENT:
            found[key] = (middle[key], count, grown)
    return found


def test_the_platform_itself_grows_linearly() -> None:
    """The yardstick: objects rendered grow about as the teams do."""
    _, middle = calls(SIZES[1])
    _, large = calls(SIZES[2])
    assert 0.8 < exponent(middle, large) <= 1.05, (middle, large)


def test_no_render_step_grows_faster_than_the_platform() -> None:
    found = {k: v for k, v in superlinear().items() if k not in KNOWN_SUPERLINEAR}
    assert not found, "\n".join(
        f"{path}:{name}: {a} -> {b} calls when the teams double (exponent {e:.2f})"
        for (path, name), (a, b, e) in sorted(found.items())
    )


def test_potential_available_sums_each_cohort_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kueue's PotentialAvailable for every ClusterQueue of a cohort reads each member's limits a
    bounded number of times, however many ClusterQueues ask: the sum is kept per cohort."""
    platform_calls: Counter[str] = Counter()
    real = queue_plans.limits_of

    def counting(plan: queue_plans.ClusterQueuePlan, pool: str, resource: str) -> Any:
        platform_calls[plan.name] += 1
        return real(plan, pool, resource)

    monkeypatch.setattr(queue_plans, "limits_of", counting)
    with_teams: dict[int, int] = {}
    for teams in SIZES[1:]:
        with tempfile.TemporaryDirectory(prefix="gpuplane-scaling-") as tmp:
            generate_platform(
                Path(tmp), clusters=CLUSTERS, pools_per_cluster=POOLS_PER_CLUSTER, teams=teams
            )
            platform = load_platform(Path(tmp)).platform
        platform_calls.clear()
        for name in sorted(platform.clusters):
            view = ClusterView.of(platform, platform.clusters[name])
            plans = queue_plans.cluster_queues(view)
            by_cohort = queue_plans.cohorts(plans)
            for plan in plans:
                for flavor in plan.flavors:
                    for resource in flavor.resources:
                        queue_plans.potential_available(
                            plan, by_cohort[plan.queue.name], flavor.pool.name, resource
                        )
        assert platform_calls, "no ClusterQueue was asked"
        with_teams[teams] = max(platform_calls.values())
    # one read per (pool, resource) the plan is asked about, plus one per sum it joins
    assert with_teams[SIZES[2]] == with_teams[SIZES[1]], with_teams


def test_the_priority_policies_grow_linearly() -> None:
    """The security layer's CEL literals (`cel_string`, and the generator of `cel_list`) are
    written once per team namespace, team and class, not once per pair of teams: each team's
    priority policy used to list every team namespace (`admission.platform_account`); the
    cluster's one `gpuplane-priority` policy lists each once."""
    found = superlinear()
    assert not (KNOWN_SUPERLINEAR & found.keys()), {
        k: found[k] for k in KNOWN_SUPERLINEAR & found.keys()
    }
