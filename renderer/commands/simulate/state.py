"""The simulator started from a state instead of an empty cluster: Kueue's objects as a snapshot
holds them and the Workloads already holding quota (docs/simulate.md, "Checked against Kueue").

`simulate` builds its `World` from the platform (`setup.clusters`) and starts with nothing
running. `start` takes any `KueueSnapshot` (a platform's, a cluster's objects read by
`scheduler.snapshot.read_objects`, or the objects of one of Kueue's own test cases) and the
admitted Workloads, and returns a `Simulator` whose quota tree and preemptor's working copy
(`Live`) already hold them, as Kueue's cache would after a restart: each is a running job of one
pod set that finishes after its `remaining` milliseconds (never, where none is given), and that
a preemption evicts and requeues like any other (`engine.hold`). `engine.nomination` is the
flavor assignment the scheduling cycle would nominate a pending job with now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from renderer.admission.scheduler.snapshot import AdmittedWorkload
from renderer.commands.simulate.engine import Job, Simulator, World, hold


class StateError(ValueError):
    """A running Workload the simulator cannot hold (it models one pod set a workload)."""


def running_job(workload: AdmittedWorkload, index: int, remaining: int | None) -> Job:
    """The job of an admitted Workload of one pod set: its pods, each pod's share of the pod
    set's usage, `remaining` milliseconds to run (None: it does not finish)."""
    if len(workload.pod_sets) != 1:
        raise StateError(
            f"Workload {workload.key} has {len(workload.pod_sets)} pod sets; "
            "the simulator models one pod set a workload"
        )
    pod_set = workload.pod_sets[0]
    pods = max(pod_set.count, 1)
    return Job(
        index=index,
        namespace=workload.namespace,
        name=workload.name,
        cluster_queue=workload.cluster_queue,
        priority=workload.priority,
        submit=0,
        duration=remaining if remaining is not None else -1,
        pods=pods,
        per_pod=MappingProxyType({r: v / pods for r, v in pod_set.usage.items()}),
    )


def start(
    world: World,
    running: Sequence[AdmittedWorkload],
    jobs: Sequence[Job] = (),
    remaining: Mapping[str, int] | None = None,
) -> Simulator:
    """A simulator at time 0 with `running` holding quota (their usage on the tree, each in its
    ClusterQueue's working copy) and `jobs` to submit; `remaining` gives, per Workload key, the
    milliseconds it still runs. `Simulator.run()` then replays `jobs` (its `Run` has their
    outcomes; a seeded Workload's, its evictions, is in `Simulator.outcomes`). Raises
    StateError for a Workload of several pod sets or of a ClusterQueue the snapshot lacks."""
    left = remaining or {}
    seeded = [running_job(w, len(jobs) + i, left.get(w.key)) for i, w in enumerate(running)]
    sim = Simulator(world, jobs)
    for workload, job in zip(running, seeded, strict=True):
        if workload.cluster_queue not in sim.settings:
            raise StateError(
                f"Workload {workload.key}: ClusterQueue {workload.cluster_queue} does not exist"
            )
        hold(sim, job, workload)
    return sim
