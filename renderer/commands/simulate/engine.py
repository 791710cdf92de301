"""The simulator's clock and Kueue's scheduling cycles, on the admission engine's own objects.

One `Simulator` per cluster: its ClusterQueues, Cohorts and flavors as Kueue's scheduler holds
them (`scheduler.snapshot`), one quota tree (`model.quota_tree`) whose usage the admissions and
finishes change, and for every decision the engine `fit` runs: the flavor assigner
(`scheduler.kueue_assigner.FlavorAssigner`, Kueue's `assignFlavors`) and the preemptor
(`scheduler.preemptor.classical`, `scheduler.fairsharing.fair_preemptions`: `GetTargets`).

Time is an integer of milliseconds and never slept. Events at one instant are taken together
(finishes first, then evictions that complete, then submissions in trace order); then Kueue's
scheduler runs cycles until one changes nothing (`Scheduler.schedule`, pkg/scheduler/scheduler.go):

1. the head of each ClusterQueue's queue (priority, then the time it was queued: Kueue's
   `queueOrderingFunc`), a parked (inadmissible) workload left out;
2. each head nominated: its flavors assigned against the usage at the cycle's start;
3. the entries in Kueue's order (`entryOrdering`: lower borrowing first, then higher priority,
   then earlier created), each admitted where it still fits; one in Preempt mode evicts its
   targets (`IssuePreemptions`) and is not admitted in that cycle: it holds its place at the
   head of its queue (Kueue's sticky preemptor) until the targets' pods have ended, `evict_ms`
   later, when their quota is released and they are requeued; an entry that fits no more after
   an earlier one of the cycle, or whose targets another entry of the cycle took, stays at its
   head;
4. an entry that can neither: under BestEffortFIFO it is parked until quota is released in
   its tree (a finish or an eviction: Kueue's `QueueInadmissibleWorkloads`); under StrictFIFO it
   stays the head and blocks its ClusterQueue.

A workload still pending when the trace is over and nothing runs is never admitted; its reason
is Kueue's message from its last nomination (`Assignment.Message`).
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import MappingProxyType
from typing import Literal, TypeVar

from renderer.admission.scheduler import fairsharing, preemptor
from renderer.admission.scheduler.assignment import Assignment
from renderer.admission.scheduler.kueue_assigner import FlavorAssigner, PodSetRequest, Setting
from renderer.admission.scheduler.preemptor import Incoming, Target, parse_time
from renderer.admission.scheduler.snapshot import (
    AdmittedWorkload,
    ClusterQueue,
    KueueSnapshot,
    PodSetUsage,
    QuotaTree,
)
from renderer.model.quota_tree import FlavorResource, QuotaNode, put_back, stamps

ZERO = Decimal(0)
_UNREAD = datetime.max.replace(tzinfo=UTC)
"""Stands for an admission time `parse_time` cannot read."""
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
"""The simulated clock's zero, for the timestamps the preemptor orders Workloads by."""

FINISH, EVICTED, SUBMIT = 0, 1, 2
"""Event kinds, in the order events of one instant are taken."""

EVICT_MS = 30_000
"""How long an evicted Workload holds its quota: its pods' termination. Kueue releases the quota
when the job's pods are gone (jobframework's reconciler unsets the QuotaReserved condition once
the stopped job is no longer active); a pod gets `terminationGracePeriodSeconds`, 30 s unless
its spec says otherwise, before it is killed."""


@dataclass(frozen=True, slots=True)
class World:
    """A cluster's Kueue as the scheduler holds it: the objects, each Topology's levels, whether
    the Kueue Configuration turns fair sharing on, and how long an eviction takes."""

    snapshot: KueueSnapshot
    topologies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fair_sharing: bool = False
    evict_ms: int = EVICT_MS
    """Milliseconds from a preemption to its target's quota released (`EVICT_MS`)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One workload of the trace: one pod set of `pods` pods, admitted all together."""

    index: int
    namespace: str
    name: str
    cluster_queue: str
    priority: int
    submit: int
    """Milliseconds from the trace's start."""
    duration: int
    pods: int
    per_pod: Mapping[str, Decimal]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    key: str = field(init=False, repr=False, compare=False)
    """`namespace/name`, made once."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")


Fate = Literal["completed", "never", "running"]
_T = TypeVar("_T")


@dataclass(slots=True)
class Outcome:
    """What happened to one job."""

    job: Job
    waits: list[int] = field(default_factory=list)
    """Per admission, milliseconds from being queued (submitted, or requeued once an eviction
    completed: Kueue's `QueuedWaitTime`) to admitted."""
    admitted: list[int] = field(default_factory=list)
    """Per admission, in the order of `waits`: the instant (milliseconds) it was admitted."""
    preempted: int = 0
    """Times it was evicted by another workload's preemption."""
    preempted_by: list[tuple[str, str]] = field(default_factory=list)
    """Per eviction, the preemptor's key and Kueue's reason (`InClusterQueue`,
    `InCohortReclamation`, `InCohortFairSharing`, `InCohortReclaimWhileBorrowing`)."""
    preempting: int = 0
    """Workloads its own preemptions evicted."""
    completed_at: int | None = None
    said: str = ""
    """A message of the simulator's own (no such ClusterQueue, a preemption loop), ahead of
    the parking's."""
    parked_as: _Nomination | None = None
    """Its group's nomination at its last parking (`_Memo.group`): it was nominated so."""

    @property
    def message(self) -> str:
        """Kueue's message from its last nomination that did not admit it."""
        if self.said or self.parked_as is None:
            return self.said
        return self.parked_as.message or "couldn't find preemption targets"

    @message.setter
    def message(self, text: str) -> None:
        self.said = text

    @property
    def reason(self) -> str:
        """That nomination's no-fit reason (UnadmittedWorkloadsObservability), where Kueue
        gives one."""
        return "" if self.parked_as is None else self.parked_as.assignment.no_fit_reason


@dataclass(slots=True)
class _Pending:
    job: Job
    queued: int
    """When it was queued: the start of its wait."""
    outcome: Outcome
    group: object = None
    """`_Memo.group` of its job: all its nomination reads besides the tree."""
    gone: bool = False
    """Admitted (taken out of its queue for good)."""
    nominated: tuple[_Nomination, Incoming] | None = None
    """The fast path's last nomination of it and the preemptor's view of it."""
    rank: tuple[int, int, int] = field(init=False)
    """Kueue's queue order: priority, then the queue-order timestamp (the creation time, also
    after a preemption: `GetQueueOrderTimestamp` with PrioritySortingWithinCohort on), then
    the trace's order."""

    def __post_init__(self) -> None:
        self.rank = (-self.job.priority, self.job.submit, self.job.index)

    def order(self) -> tuple[int, int, int]:
        return self.rank


_RANK = operator.attrgetter("rank")
_FIRST = operator.itemgetter(0)


@dataclass(slots=True)
class _Queue:
    """One ClusterQueue's pending workloads: `line[start:]` the queued ones in Kueue's order
    (`_Pending.rank`; the head first), `parked` the inadmissible ones, in the order parked."""

    line: list[_Pending] = field(default_factory=list)
    start: int = 0
    parked: list[_Pending] = field(default_factory=list)

    def queued(self) -> int:
        return len(self.line) - self.start

    def add(self, pending: _Pending) -> None:
        bisect.insort_right(self.line, pending, lo=self.start, key=_RANK)

    def advance(self, count: int) -> list[_Pending]:
        """The first `count` queued, parked together."""
        run = self.line[self.start : self.start + count]
        self.start += count
        self.compact()
        self.parked.extend(run)
        return run

    def compact(self) -> None:
        if self.start >= 1024 and 2 * self.start >= len(self.line):
            del self.line[: self.start]
            self.start = 0

    def take(self, pending: _Pending) -> None:
        """Out of the line (admitted, or parked on its own)."""
        line = self.line
        if line[self.start] is pending:
            self.start += 1
            self.compact()
            return
        at = bisect.bisect_left(line, pending.rank, lo=self.start, key=_RANK)
        del line[at]

    def requeue(self) -> None:
        """Every parked workload queued again at once (`QueueInadmissibleWorkloads`)."""
        line = self.line[self.start :]
        line.extend(self.parked)
        line.sort(key=_RANK)
        self.line = line
        self.start = 0
        self.parked = []


@dataclass(slots=True)
class _Running:
    job: Job
    admitted: AdmittedWorkload
    started: int
    generation: int
    evicting: bool = False
    released: int = 0
    """While evicting: when its pods have ended and its quota is released."""
    sig: int = 0
    """What the preemptor reads of its Workload besides the eviction, admission time and uid,
    as a number (`_Memo.running`): the same for Workloads alike in it."""
    reserved: float | None = None
    """Its admission time as the preemptor orders candidates by it (None: not readable)."""
    load: int = 0
    """Its ClusterQueue and usage, as a number: all a fair-sharing search reads of it once
    it is a candidate and in the candidates' order (`Simulator.fair_key`)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """A usage of the cluster: per (flavor, resource), what is used and what is borrowed."""

    usage: Mapping[FlavorResource, Decimal]
    borrowed: Mapping[FlavorResource, Decimal]


@dataclass(frozen=True, slots=True)
class Run:
    """A finished simulation: each job's outcome (in trace order), the usage over time, when
    the last event happened, and each Cohort's share at every change.

    The usage over time is summed as it comes: `held`, each usage the cluster was in before
    `since` and for how many milliseconds in all (in the order first left), and `last`, the
    usage from `since` on (None where nothing was sampled)."""

    outcomes: tuple[Outcome, ...]
    held: tuple[tuple[Sample, int], ...]
    last: Sample | None
    since: int
    end: int
    peak: Mapping[FlavorResource, Decimal]
    shares: Mapping[str, float]
    """Per Cohort under a parent, the time-weighted mean of its DominantResourceShare."""

    @property
    def samples(self) -> tuple[Sample, ...]:
        """Each usage the cluster was in, once."""
        found = tuple(sample for sample, _ in self.held)
        return found if self.last is None or self.last in found else (*found, self.last)


class Live(preemptor.Working):
    """The preemptor's working copy, kept by the simulator instead of built from a snapshot:
    the tree with the usage now and the Workloads running in each ClusterQueue."""

    def __init__(self, snapshot: KueueSnapshot, tree: QuotaTree) -> None:
        self.snapshot = snapshot
        self.tree = tree
        self.static = {}
        self.running: dict[str, dict[str, AdmittedWorkload]] = {
            name: {} for name in snapshot.cluster_queues
        }

    def workloads(self, cluster_queue: str) -> list[AdmittedWorkload]:
        return list(self.running.get(cluster_queue, {}).values())


@dataclass(frozen=True, slots=True)
class _Nomination:
    """A flavor assignment and what a cycle reads of it: its representative mode, Kueue's
    message, the usage it adds (amounts that are not zero) and the (flavor, resource) pairs it
    needs preemption for (`flavorResourcesNeedPreemption`)."""

    assignment: Assignment
    mode: str
    message: str
    usage: Mapping[FlavorResource, Decimal]
    needs: frozenset[FlavorResource]

    @classmethod
    def of(cls, assignment: Assignment) -> _Nomination:
        needs = frozenset(
            (assigned.flavor, resource)
            for ps in assignment.pod_sets
            for resource, assigned in ps.flavors.items()
            if assigned.mode == "Preempt"
        )
        usage = MappingProxyType({fr: v for fr, v in assignment.usage.items() if v != 0})
        return cls(assignment, assignment.representative_mode, assignment.message(), usage, needs)


@dataclass(slots=True)
class _Entry:
    pending: _Pending
    cq: ClusterQueue
    known: _Nomination
    targets: list[Target]
    incoming: Incoming


@dataclass(slots=True)
class _Cycle:
    """What one scheduling cycle has done so far: the Workloads its preemptors target
    (Kueue's `preemptedWorkloads`) and the usage its preemptors reserved (`cq.AddUsage`)."""

    preempted: dict[str, AdmittedWorkload] = field(default_factory=dict)
    reserved: list[tuple[QuotaNode, dict[FlavorResource, Decimal]]] = field(default_factory=list)
    parked: list[str] = field(default_factory=list)
    """The ClusterQueues whose heads it parked."""
    version: int = -1
    """`Simulator.version` at its start: the running Workloads its nominations read."""


class Simulator:
    """Kueue's scheduler on one cluster, over a trace of jobs (docs/simulate.md)."""

    def __init__(self, world: World, jobs: Sequence[Job], *, fast: bool = True) -> None:
        self.world = world
        self.jobs = tuple(jobs)
        self.fast = fast
        self.memo = _Memo(world.snapshot)
        snapshot = world.snapshot
        self.tree = snapshot.tree(with_usage=False)
        self.live = Live(snapshot, self.tree)
        self.settings: dict[str, Setting] = {}
        for name, cq in sorted(snapshot.cluster_queues.items()):
            node = self.tree.cluster_queue(name)
            if node is not None:
                self.settings[name] = Setting(
                    cq, node, snapshot.flavors, world.topologies, world.fair_sharing
                )
        self.queues: dict[str, _Queue] = {n: _Queue() for n in self.settings}
        self.sticky: dict[str, str] = {}
        """Per BestEffortFIFO ClusterQueue, the workload whose preemptions are pending (Kueue's
        `preemptorWorkload`): it stays ahead of the rest of its queue while it is queued."""
        self.sticky_parked: set[str] = set()
        """The ClusterQueues whose sticky preemptor is parked (until their next requeue)."""
        self.pending: dict[str, _Pending] = {}
        self.running: dict[str, _Running] = {}
        self.outcomes = {job.key: Outcome(job) for job in self.jobs}
        self.events: list[tuple[int, int, int, str, int]] = []
        self.generation = itertools.count()
        self.held: dict[object, tuple[Sample, int]] = {}
        """Per usage met before `since` (`Sample` by its amounts), it and the milliseconds
        it was held."""
        self.last: tuple[object, Sample] | None = None
        self.since = 0
        self.peak: dict[FlavorResource, Decimal] = {}
        self.share_time: dict[str, float] = {}
        self.now = 0
        self.requests: dict[str, tuple[PodSetRequest, ...]] = {}
        self.version = 0
        """Bumped by every change of the running Workloads (an admission, an eviction issued
        or completed, a finish). At a cycle's start the tree's usage is theirs (what a cycle's
        preemptors reserve is given back at its end), so the engine's nominations are the
        same while it is."""
        self.submitted = 0
        self.seen: dict[object, int] = {}
        """Since the last submission or the last finish after it, whichever is later: each
        state the cluster was in, and when (`looping`)."""
        self.sampled = -1
        self.accounted: tuple[int, list[tuple[str, float]]] = (-1, [])

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> Run:
        for job in self.jobs:
            heapq.heappush(self.events, (job.submit, SUBMIT, job.index, job.key, -1))
        last_sample = 0
        while self.events:
            if self.submitted == len(self.jobs) and self.looping():
                break
            self.now = self.events[0][0]
            self.account(last_sample)
            last_sample = self.now
            self.step()
        return Run(
            outcomes=tuple(self.outcomes[j.key] for j in self.jobs),
            held=tuple(self.held.values()),
            last=None if self.last is None else self.last[1],
            since=self.since,
            end=self.now,
            peak=MappingProxyType(dict(self.peak)),
            shares=MappingProxyType(
                {k: v / self.now if self.now else 0.0 for k, v in sorted(self.share_time.items())}
            ),
        )

    def step(self) -> None:
        """The events of the instant `now` (finishes, evictions completed, submissions), then
        the scheduler's cycles at it."""
        while self.events and self.events[0][0] == self.now:
            _, kind, _, key, generation = heapq.heappop(self.events)
            if kind == FINISH:
                self.finish(key, generation)
            elif kind == EVICTED:
                self.evicted(key, generation)
            else:
                self.submitted += 1
                self.enqueue(self.outcomes[key].job, self.now)
        self.schedule()
        self.sample()

    def looping(self) -> bool:
        """Whether the cluster is back in a state it was in since the last submission, with
        every running workload as far from its end: then it repeats for ever. Kueue can
        loop so (Kueue#13662, PrioritizePreemptorWorkloads is off by default): a preemptor
        waits for its targets' pods to end, they are requeued, and, going first in the cycle
        (no borrowing), are admitted again before it; it preempts them again. The workloads
        caught in it never complete; the simulation ends there.

        The states are kept since the last finish only (`finish` forgets them): once every job
        is submitted, a workload is running or waiting from its submission to its finish, so
        a finish takes it out of every later state, never to come back, and no state before
        it is met again. Between two finishes the workloads running or waiting are the same
        ones, those not running are waiting: a state is the running ones (each as far from
        its end, being evicted or not) and which of the waiting ones are parked."""
        running = frozenset(
            (key, r.started - self.now, r.evicting) for key, r in self.running.items()
        )
        parked = frozenset(p.job.key for queue in self.queues.values() for p in queue.parked)
        state = (running, parked, tuple(sorted(self.sticky.items())))
        if state in self.seen:
            message = (
                "preempted in a loop: Kueue admits it and the workloads it preempts in turn, "
                "for ever (Kueue#13662)"
            )
            waiting = (k for k, p in self.pending.items() if not p.gone)
            for key in (*self.running, *waiting):
                outcome = self.outcomes[key]
                if outcome.preempted or outcome.preempting:
                    outcome.message = message
            return True
        self.seen[state] = self.now
        return False

    def enqueue(self, job: Job, queued: int) -> None:
        if job.cluster_queue not in self.queues:
            self.outcomes[job.key].message = f"ClusterQueue {job.cluster_queue} doesn't exist"
            return
        pending = _Pending(job, queued, self.outcomes[job.key], self.memo.group(job))
        self.pending[job.key] = pending
        self.queues[job.cluster_queue].add(pending)

    def queued_sticky(self, name: str) -> _Pending | None:
        """The ClusterQueue's sticky preemptor, where it is queued (not parked, not admitted)."""
        sticky = self.sticky.get(name)
        if sticky is None or name in self.sticky_parked:
            return None
        pending = self.pending.get(sticky)
        return None if pending is None or pending.gone else pending

    def head(self, name: str) -> _Pending | None:
        """The head of the ClusterQueue's queue: its sticky preemptor while that is queued,
        else the first in Kueue's order."""
        sticky = self.queued_sticky(name)
        if sticky is not None:
            return sticky
        queue = self.queues[name]
        return queue.line[queue.start] if queue.start < len(queue.line) else None

    def finish(self, key: str, generation: int) -> None:
        running = self.running.get(key)
        if running is None or running.generation != generation or running.evicting:
            return  # evicted since (or being evicted: its pods are stopping); stale
        self.release(running)
        self.outcomes[key].completed_at = self.now
        self.memo.shapes.pop(key, None)
        self.memo.groups.pop(key, None)
        self.pending.pop(key, None)
        self.requests.pop(key, None)
        self.seen.clear()

    def evicted(self, key: str, generation: int) -> None:
        """An eviction completes: the pods are gone, the quota is released, and the workload
        is pending again (its Requeued condition set now, where its next wait starts)."""
        running = self.running.get(key)
        if running is None or running.generation != generation:
            return
        self.release(running)
        self.enqueue(running.job, self.now)

    def release(self, running: _Running) -> None:
        job = running.job
        del self.running[job.key]
        self.version += 1
        node = self.settings[job.cluster_queue].node
        for fr, value in running.admitted.usage.items():
            node.remove_usage(fr, value)
        del self.live.running[job.cluster_queue][job.key]
        self.unpark(node.root())

    def unpark(self, root: QuotaNode) -> None:
        """Kueue's `QueueInadmissibleWorkloads`: quota came free in this tree."""
        for name, queue in self.queues.items():
            if queue.parked and self.settings[name].node.root() is root:
                queue.requeue()
                self.sticky_parked.discard(name)

    # --- Kueue's cycles ------------------------------------------------------------------------

    def schedule(self) -> None:
        """Cycles until one admits, evicts or parks nothing (at most a bound of them)."""
        parked: list[str] | None = None
        cycles = 4 * len(self.jobs) + 100
        while cycles > 0:
            cycles -= 1
            if parked is not None:
                runs = self.park_runs(parked, cycles + 1)
                if runs:
                    cycles -= runs - 1
                    continue
                parked = self.park_heads(parked)
                if parked is not None:
                    if not parked:
                        return
                    continue
            entries = []
            for name in self.queues:
                pending = self.head(name)
                if pending is not None:
                    entries.append(self.nominate(name, pending))
            if not entries:
                return
            entries.sort(
                key=lambda e: (e.known.assignment.borrowing, *e.pending.order()),
            )
            version = self.version
            cycle = _Cycle(version=version)
            changed = False
            for entry in entries:
                changed = self.process(entry, cycle) or changed
            for node, usage in cycle.reserved:
                for fr, value in usage.items():
                    node.remove_usage(fr, value)
            if not changed:
                return
            if self.fast and self.version == version:
                parked = cycle.parked

    def park_runs(self, names: Sequence[str], limit: int) -> int:
        """Several cycles after one that only parked the heads of `names` at once (the fast
        path's), where each of them has a run of queued workloads at its head whose groups all
        parked since the running Workloads last changed (`park_heads`: each cycle parks the
        next of each run, and nothing else): the shortest run's length of cycles (at most
        `limit`), each ClusterQueue's run parked as a slice, each workload with its group's
        nomination and none of its own. 0 where some ClusterQueue has no such run (a head to
        nominate, a sticky preemptor, StrictFIFO): `park_heads` takes the next cycle."""
        parks = self.memo.at(self.version).parks
        live: list[_Queue] = []
        for name in names:
            queue = self.queues[name]
            if queue.start >= len(queue.line):
                continue
            if queue.line[queue.start].group not in parks:
                return 0  # a head to nominate
            if self.settings[name].cq.queueing_strategy == "StrictFIFO":
                return 0
            if self.queued_sticky(name) is not None:
                return 0
            live.append(queue)
        if not live:
            return 0
        runs = _shortest_run(sorted(live, key=_Queue.queued), parks, limit)
        if not runs:
            return 0
        for queue in live:
            for pending in queue.advance(runs):
                pending.outcome.parked_as = parks[pending.group]
        return runs

    def park_heads(self, names: Sequence[str]) -> list[str] | None:
        """The next cycle after one that only parked the heads of `names` (the fast path's): it
        differs from that one only in those ClusterQueues' new heads. A parked entry changes
        nothing of the cycle's for the entries after it (no usage reserved, no target), so
        where each new head is parked too, or under StrictFIFO stays and blocks, the others'
        entries do as they did: the cycle parks the new heads and nothing else, and only they
        are nominated. Their ClusterQueues, or None where a new head may admit or preempt
        (then the whole cycle runs).

        A new head of the same group as one parked since the running Workloads last changed
        (`_Memo.group`: its ClusterQueue, shape, priority, and creation time where a policy
        reads it) is not nominated again: its nomination is that one's, and it parks too."""
        parks = self.memo.at(self.version).parks
        heads: list[tuple[_Pending, _Nomination, ClusterQueue]] = []
        for name in names:
            pending = self.head(name)
            if pending is None:
                continue
            known = parks.get(self.memo.group(pending.job))
            if known is None:
                entry = self.nominate(name, pending)
                known = entry.known
                if known.mode != "NoFit" and (known.mode != "Preempt" or entry.targets):
                    return None
            heads.append((pending, known, self.settings[name].cq))
        return [cq.name for pending, known, cq in heads if self.park(pending, known, cq)]

    def nominate(self, name: str, pending: _Pending) -> _Entry:
        """Kueue's `nominate`: the flavor assignment and, in Preempt mode, the preemption
        targets, against the usage at the cycle's start."""
        setting = self.settings[name]
        job = pending.job
        if not self.fast:
            known = _Nomination.of(FlavorAssigner(setting, self.request(pending)).assign())
            incoming = self.incoming(name, known, job)
            targets = self.targets(incoming, job) if known.mode == "Preempt" else []
            return _Entry(pending, setting.cq, known, targets, incoming)
        memo = self.memo.at(self.version)
        shape = self.memo.shape(job)
        found = memo.assigned.get((name, shape))
        if found is None:
            path = (name, shape, self.memo.path_usage(setting.node))
            found = self.memo.paths.get(path)
            if found is None:
                found = _Nomination.of(FlavorAssigner(setting, self.request(pending)).assign())
                self.memo.keep(self.memo.paths, path, found)
            memo.assigned[(name, shape)] = found
        if pending.nominated is not None and pending.nominated[0] is found:
            incoming = pending.nominated[1]
        else:
            incoming = self.incoming(name, found, job)
            pending.nominated = (found, incoming)
        targets = self.targets(incoming, job) if found.mode == "Preempt" else []
        if found.mode == "NoFit" or (found.mode == "Preempt" and not targets):
            memo.parks[self.memo.group(job)] = found
        return _Entry(pending, setting.cq, found, targets, incoming)

    def request(self, pending: _Pending) -> tuple[PodSetRequest, ...]:
        requests = self.requests.get(pending.job.key)
        if requests is None:
            job = pending.job
            requests = (
                PodSetRequest(
                    "main",
                    job.pods,
                    job.per_pod,
                    node_selector=job.node_selector,
                ),
            )
            self.requests[job.key] = requests
        return requests

    def process(self, entry: _Entry, cycle: _Cycle) -> bool:
        """One entry of the cycle (Kueue's `processEntry`); whether it changed anything."""
        mode = entry.known.mode
        if mode == "NoFit" or (mode == "Preempt" and not entry.targets):
            if self.park(entry.pending, entry.known, entry.cq):
                cycle.parked.append(entry.cq.name)
                return True
            return False
        if any(t.workload.key in cycle.preempted for t in entry.targets):
            return False  # overlapping targets with an earlier entry: skipped, stays the head
        if not self.fits(entry, cycle):
            return False  # no longer fits after an earlier entry: skipped, stays the head
        if mode == "Fit":
            self.admit(entry)
            return True
        for target in entry.targets:
            cycle.preempted[target.workload.key] = target.workload
        node = self.settings[entry.cq.name].node
        for fr, value in entry.incoming.usage.items():
            node.add_usage(fr, value)
        cycle.reserved.append((node, dict(entry.incoming.usage)))
        job = entry.pending.job
        if entry.cq.queueing_strategy == "BestEffortFIFO":
            self.sticky[entry.cq.name] = job.key
            self.sticky_parked.discard(entry.cq.name)
        issued = [self.evict(target, job) for target in entry.targets]
        return any(issued)

    def fits(self, entry: _Entry, cycle: _Cycle) -> bool:
        """Kueue's `fits`: the entry's usage fits its ClusterQueue with the Workloads this
        cycle's preemptors target and its own targets taken out."""
        if self.fast and entry.targets and not cycle.preempted and self.version == cycle.version:
            # A preemptor first to change the cycle (no admission, no other preemptor before
            # it): the tree is as its search read it, and the search took targets until the
            # usage fit, then put back only those it fits without (`fill_back`): it fits.
            return True
        node = self.settings[entry.cq.name].node
        gone = dict(cycle.preempted)
        for target in entry.targets:
            gone[target.workload.key] = target.workload
        if not gone:
            return preemptor.workload_fits(node, entry.incoming.usage, borrow=True)
        stamped = stamps(self.tree.values())
        for workload in gone.values():
            self.live.remove(workload)
        try:
            return preemptor.workload_fits(node, entry.incoming.usage, borrow=True)
        finally:
            for workload in gone.values():
                self.live.add(workload)
            put_back(stamped)

    def park(self, pending: _Pending, known: _Nomination, cq: ClusterQueue) -> bool:
        """An entry that can neither be admitted nor preempt: parked (inadmissible) under
        BestEffortFIFO; whether it was."""
        self.outcomes[pending.job.key].parked_as = known
        if cq.queueing_strategy == "StrictFIFO":
            return False  # the head stays, and blocks the ClusterQueue
        queue = self.queues[cq.name]
        queue.take(pending)
        queue.parked.append(pending)
        if self.sticky.get(cq.name) == pending.job.key:
            self.sticky_parked.add(cq.name)
        return True

    def incoming(self, name: str, known: _Nomination, job: Job) -> Incoming:
        return Incoming(
            cluster_queue=name,
            usage=known.usage,
            needs=known.needs,
            priority=job.priority,
            created=_stamp(job.submit),
            name=job.name,
            namespace=job.namespace,
        )

    def targets(self, incoming: Incoming, job: Job) -> list[Target]:
        """The preemptor's targets; on the fast path, a search is not run again for a workload
        of the same ClusterQueue, shape and priority (and creation time, where a policy
        compares it) until the running Workloads change: the same inputs, the same answer."""
        key: tuple[object, ...] = ()
        state: tuple[object, ...] | None = None
        if self.fast:
            memo = self.memo.at(self.version)
            key = (incoming.cluster_queue, self.memo.shape(job), job.priority)
            if self.memo.by_creation:
                key += (job.submit,)
            known = memo.targets.get(key)
            if known is not None:
                return known
            root = self.settings[incoming.cluster_queue].node.root()
            state = self.tree_state(root)
            if state is not None:
                listing = memo.listings[id(root)]
                chosen = self.memo.searches.get((key, state))
                if chosen is not None:
                    found = [
                        Target(self.running[listing[q][i]].admitted, reason)
                        for q, i, reason in chosen
                    ]
                    memo.targets[key] = found
                    return found
        clock = EPOCH + timedelta(milliseconds=self.now)
        fair: tuple[tuple[object, ...], list[AdmittedWorkload]] | None = None
        if self.world.fair_sharing:
            if state is not None:
                fair = self.fair_key(incoming, state)
                if fair is not None:
                    placed = self.memo.fair.get(fair[0])
                    if placed is not None:
                        found = [Target(fair[1][i], reason) for i, reason in placed]
                        self.memo.at(self.version).targets[key] = found
                        self.memo.keep(self.memo.searches, (key, state), _places(found, listing))
                        return found
            found = fairsharing.fair_preemptions(
                self.live,
                incoming,
                preemptor.DEFAULT_STRATEGIES,
                clock,
                None if fair is None else fair[1],
            )
        else:
            found = preemptor.classical(self.live, incoming, clock)
        if self.fast:
            self.memo.at(self.version).targets[key] = found
            if state is not None:
                self.memo.keep(self.memo.searches, (key, state), _places(found, listing))
            if fair is not None:
                place = {id(w): i for i, w in enumerate(fair[1])}
                placed = tuple((place[id(t.workload)], t.reason) for t in found)
                self.memo.keep(self.memo.fair, fair[0], placed)
        return found

    def fair_key(
        self, incoming: Incoming, state: tuple[object, ...]
    ) -> tuple[tuple[object, ...], list[AdmittedWorkload]] | None:
        """All a fair-sharing search reads (`fairsharing.fair_preemptions`), and its candidates
        in their order; None where two candidates tie in that order. The search reads the
        tree's usage (in `state`), the request's usage and the (flavor, resource) pairs it
        needs preemption for, and its candidates (`find_candidates`: the priority and creation
        time enter there only) in `CandidatesOrdering` (a ClusterQueue's first candidate is
        compared with another's only by that order) with, of each, its ClusterQueue and usage
        (`_Running.load`): a running Workload that is no candidate enters by its usage alone,
        and a candidate's priority, admission time and name by its place in the order."""
        candidates = fairsharing.find_candidates(self.live, incoming)
        own = incoming.cluster_queue
        ordered = []
        for workload in candidates:
            running = self.running[workload.key]
            order = (
                not workload.evicted,
                workload.cluster_queue == own,
                workload.priority,
                -running.reserved,  # type: ignore[operator]  # readable: `state` is not None
                workload.uid,
            )
            ordered.append((order, running.load, workload))
        ordered.sort(key=_FIRST)
        for before, after in itertools.pairwise(ordered):
            if before[0] == after[0]:
                return None
        key = (
            own,
            frozenset(incoming.usage.items()),
            incoming.needs,
            state[0],
            tuple(load for _, load, _ in ordered),
        )
        return key, [workload for _, _, workload in ordered]

    def tree_state(self, root: QuotaNode) -> tuple[object, ...] | None:
        """All a preemption search in `root`'s tree reads besides the request: each node's
        usage, and per ClusterQueue its running Workloads in the order the working copy lists
        them, each as what the preemptor reads of it (`_Running.sig`: not its name or uid),
        whether it is being evicted, and its place in the order of the candidates' sort key's
        last two terms (admission time, then uid: the sort compares them only), as the rank of
        its admission time among the tree's and its rank among those admitted at that time;
        None where an admission time is unreadable (then the instant enters the order). The
        Workloads' keys in that listing are kept beside it (`_Answers.listings`): a search's
        targets are kept as places in it. Kept per change of the running Workloads."""
        memo = self.memo.at(self.version)
        if id(root) in memo.states:
            return memo.states[id(root)]
        nodes = self.memo.walks.get(id(root))
        if nodes is None:
            nodes = self.memo.walks[id(root)] = tuple(root.walk())
        usage = tuple(self.memo.usage_key(node) for node in nodes)
        queues: list[list[tuple[int, bool, float, str]]] = []
        listing: list[tuple[str, ...]] = []
        for node in nodes:
            if node.kind != "ClusterQueue":
                continue
            queue = []
            for key, admitted in self.live.running.get(node.name, {}).items():
                running = self.running[key]
                if running.reserved is None:
                    memo.states[id(root)] = None
                    return None
                queue.append((running.sig, admitted.evicted, running.reserved, admitted.uid))
            queues.append(queue)
            listing.append(tuple(self.live.running.get(node.name, {})))
        rank: dict[tuple[float, str], tuple[int, int]] = {}
        dense, previous, within = -1, None, 0
        for t, uid in sorted({(t, uid) for q in queues for _, _, t, uid in q}):
            if t != previous:
                dense, previous, within = dense + 1, t, 0
            else:
                within += 1
            rank[(t, uid)] = (dense, within)
        state = (
            usage,
            tuple(tuple((sig, ev, *rank[(t, uid)]) for sig, ev, t, uid in q) for q in queues),
        )
        memo.states[id(root)] = state
        memo.listings[id(root)] = tuple(listing)
        return state

    def admit(self, entry: _Entry) -> None:
        job = entry.pending.job
        self.queues[entry.cq.name].take(entry.pending)
        entry.pending.gone = True
        node = self.settings[entry.cq.name].node
        usage = entry.incoming.usage
        self.version += 1
        for fr, value in usage.items():
            node.add_usage(fr, value)
        pod_sets = entry.known.assignment.pod_sets
        flavors = {r: a.flavor for ps in pod_sets for r, a in ps.flavors.items()}
        admitted = AdmittedWorkload(
            name=job.name,
            namespace=job.namespace,
            cluster_queue=job.cluster_queue,
            priority=job.priority,
            pod_sets=(
                PodSetUsage(
                    "main",
                    job.pods,
                    MappingProxyType(flavors),
                    MappingProxyType({r: v for (_, r), v in usage.items()}),
                ),
            ),
            uid=f"{job.index:012d}",
            created=_stamp(job.submit),
            reserved_at=_stamp(self.now),
        )
        generation = next(self.generation)
        self.running[job.key] = self.memo.running(job, admitted, self.now, generation)
        self.live.running[job.cluster_queue][job.key] = admitted
        self.outcomes[job.key].waits.append(self.now - entry.pending.queued)
        self.outcomes[job.key].admitted.append(self.now)
        heapq.heappush(
            self.events, (self.now + job.duration, FINISH, job.index, job.key, generation)
        )

    def evict(self, target: Target, by: Job) -> bool:
        """`IssuePreemptions` for one target: a Workload already being evicted is left as it
        is; another is marked evicted (the preemptor orders those first) and keeps its quota
        until its pods have ended, `evict_ms` from now."""
        key = target.workload.key
        running = self.running.get(key)
        if running is None or running.evicting:
            return False
        running.evicting = True
        running.released = self.now + self.world.evict_ms
        running.admitted = dataclasses.replace(running.admitted, evicted=True)
        self.live.running[running.job.cluster_queue][key] = running.admitted
        self.version += 1
        self.outcomes[key].preempted += 1
        self.outcomes[key].preempted_by.append((by.key, target.reason))
        self.outcomes[by.key].preempting += 1
        heapq.heappush(
            self.events,
            (
                running.released,
                EVICTED,
                running.job.index,
                key,
                running.generation,
            ),
        )
        return True

    # --- accounting ----------------------------------------------------------------------------

    def sample(self) -> None:
        """The usage now, where it changed since the last sample (a sample holds until the
        next one, so one equal to the last adds nothing)."""
        if self.fast and self.sampled == self.version:
            return
        self.sampled = self.version
        usage: dict[FlavorResource, Decimal] = {}
        borrowed: dict[FlavorResource, Decimal] = {}
        for name in self.settings:
            for fr, value in self.settings[name].node.usage.items():
                if value:
                    usage[fr] = usage.get(fr, ZERO) + value
        for root in self.tree.roots():
            for child in root.children:
                for fr, value in child.usage.items():
                    over = value - child.subtree.get(fr, ZERO)
                    if over > 0:
                        borrowed[fr] = borrowed.get(fr, ZERO) + over
        for fr, value in usage.items():
            if value > self.peak.get(fr, ZERO):
                self.peak[fr] = value
        self.hold_usage(usage, borrowed)

    def hold_usage(
        self, usage: dict[FlavorResource, Decimal], borrowed: dict[FlavorResource, Decimal]
    ) -> None:
        """The usage from now on: the one before is summed into `held` where it differs."""
        key = (frozenset(usage.items()), frozenset(borrowed.items()))
        if self.last is not None:
            if self.last[0] == key:
                return
            before = self.held.get(self.last[0])
            held = self.now - self.since + (0 if before is None else before[1])
            self.held[self.last[0]] = (self.last[1], held)
        known = self.held.get(key)
        sample = (
            known[0]
            if known is not None
            else Sample(MappingProxyType(usage), MappingProxyType(borrowed))
        )
        self.last = (key, sample)
        self.since = self.now

    def account(self, since: int) -> None:
        """Each Cohort's share over [since, now): the time-weighted DominantResourceShare."""
        span = self.now - since
        if span <= 0:
            return
        if not self.fast or self.accounted[0] != self.version:
            self.accounted = (self.version, self.shares())
        for name, weighted in self.accounted[1]:
            self.share_time[name] = self.share_time.get(name, 0.0) + weighted * span

    def shares(self) -> list[tuple[str, float]]:
        """Each Cohort under a parent and its weighted DominantResourceShare now (finite)."""
        out = []
        shares = fairsharing.Shares(self.live)
        for node in self.tree.values():
            if node.kind != "Cohort" or node.parent is None:
                continue
            weighted = shares.of(node).weighted()
            if weighted != float("inf"):
                out.append((node.name, weighted))
        return out


def _shortest_run(queues: Sequence[_Queue], parks: Mapping[object, object], limit: int) -> int:
    """The fewest workloads at the head of any of `queues` whose groups are all in `parks`, at
    most `limit`: each queue looked at up to a bound that grows fourfold while every run
    reaches it, so no queue is walked far past the shortest run."""
    bound = min(8, limit)
    while True:
        runs = bound
        for queue in queues:
            line, at = queue.line, queue.start
            end = min(len(line), at + runs)
            while at < end and line[at].group in parks:
                at += 1
            runs = at - queue.start
            if not runs:
                return 0
        if runs < bound or bound == limit:
            return runs
        bound = min(4 * bound, limit)


def _places(
    targets: Sequence[Target], listing: Sequence[Sequence[str]]
) -> tuple[tuple[int, int, str], ...]:
    """Each target's place in `Simulator.tree_state`'s listing (its ClusterQueue's, its own in
    it) and reason."""
    where = {key: (q, i) for q, keys in enumerate(listing) for i, key in enumerate(keys)}
    return tuple((*where[t.workload.key], t.reason) for t in targets)


def _stamp(ms: int) -> str:
    return (EPOCH + timedelta(milliseconds=ms)).isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class _Answers:
    assigned: dict[tuple[str, object], _Nomination] = field(default_factory=dict)
    targets: dict[tuple[object, ...], list[Target]] = field(default_factory=dict)
    states: dict[int, tuple[object, ...] | None] = field(default_factory=dict)
    listings: dict[int, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    """Per root whose state is kept, the running Workloads' keys per ClusterQueue in the order
    of `Simulator.tree_state`."""
    parks: dict[object, _Nomination] = field(default_factory=dict)
    """Per group (`_Memo.group`), the nomination of one of it that could neither be admitted
    nor preempt: every one of the group is nominated so while the running Workloads are the
    same."""


KEPT = 5_000
"""The most answers `_Memo` keeps across changes of each kind; past it they are dropped (an
answer not kept is computed again: the bound is for memory, never for the result)."""


class _Memo:
    """The fast path's answers while the running Workloads are the same (`Simulator.version`):
    each flavor assignment per (ClusterQueue, request shape), and each preemption search's
    targets. At a cycle's start the engine's decisions are functions of the tree's usage, the
    running Workloads (their priorities, evictions and admission times) and the request, and
    the usage is that of the running Workloads: while they are the same, an answer is the one
    the engine would give again (tests/test_simulate_fast.py runs both paths and compares
    every wait). The instant does not enter: the preemptor reads it only for a Workload with
    no admission time, and every running one has one."""

    def __init__(self, snapshot: KueueSnapshot) -> None:
        self.when = -1
        self.answers = _Answers()
        self.shapes: dict[str, object] = {}
        self.groups: dict[str, object] = {}
        self.numbers: dict[tuple[object, ...], int] = {}
        """Each group met (`group`) and its number."""
        policies = {
            policy
            for cq in snapshot.cluster_queues.values()
            for policy in (cq.preemption.within_cluster_queue, cq.preemption.reclaim_within_cohort)
        }
        self.by_creation = "LowerOrNewerEqualPriority" in policies
        """Whether a preemption policy compares creation times (`satisfies`)."""
        self.paths: dict[tuple[object, ...], _Nomination] = {}
        """Flavor assignments per (ClusterQueue, shape, usage of the ClusterQueue's path)."""
        self.searches: dict[tuple[object, ...], tuple[tuple[int, int, str], ...]] = {}
        """Preemption targets (place in the state's listing, reason) per (search key,
        `Simulator.tree_state`)."""
        self.usages: dict[int, tuple[int, frozenset[tuple[FlavorResource, Decimal]]]] = {}
        self.signs: dict[tuple[object, ...], int] = {}
        """Each `_Running.sig` met, by what the preemptor reads of a Workload."""
        self.loads: dict[tuple[str, frozenset[tuple[FlavorResource, Decimal]]], int] = {}
        """Each (ClusterQueue, usage) a running Workload held, and its number (`_Running.load`)."""
        self.fair: dict[tuple[object, ...], tuple[tuple[int, str], ...]] = {}
        """Fair-sharing preemption targets (place in the candidates' order, reason) per
        `Simulator.fair_key`."""
        self.walks: dict[int, tuple[QuotaNode, ...]] = {}
        """Each root's tree in `QuotaNode.walk` order (the tree's shape never changes)."""

    def at(self, version: int) -> _Answers:
        if self.when != version:
            self.when = version
            self.answers = _Answers()
        return self.answers

    def keep(
        self, answers: dict[tuple[object, ...], _T], key: tuple[object, ...], value: _T
    ) -> None:
        if len(answers) >= KEPT:
            answers.clear()
        answers[key] = value

    def usage_key(self, node: QuotaNode) -> frozenset[tuple[FlavorResource, Decimal]]:
        """The node's usage (amounts that are not zero), kept while it does not change."""
        known = self.usages.get(id(node))
        if known is None or known[0] != node.changes:
            known = (node.changes, frozenset((fr, v) for fr, v in node.usage.items() if v))
            self.usages[id(node)] = known
        return known[1]

    def path_usage(self, node: QuotaNode) -> tuple[object, ...]:
        """The usage of the node and each node above it: all the flavor assigner reads of the
        tree besides the quotas (`available`, `lowest_subtree_that_fits`)."""
        out = [self.usage_key(node)]
        out.extend(self.usage_key(above) for above in node.path_to_root())
        return tuple(out)

    def running(
        self, job: Job, admitted: AdmittedWorkload, started: int, generation: int
    ) -> _Running:
        """A running job, with what the preemptor reads of its Workload besides the eviction,
        admission time and uid as a number (`_Running.sig`): its ClusterQueue, priority, pod
        sets (flavors and usage), and its creation time where a policy compares it (`satisfies`);
        every Workload alike in those has the same number."""
        pod_sets = tuple(
            (ps.name, ps.count, tuple(sorted(ps.flavors.items())), tuple(sorted(ps.usage.items())))
            for ps in admitted.pod_sets
        )
        created = admitted.created if self.by_creation else ""
        sign = (admitted.cluster_queue, admitted.priority, created, pod_sets)
        sig = self.signs.setdefault(sign, len(self.signs))
        stamp = parse_time(admitted.reserved_at, _UNREAD)
        reserved = None if stamp is _UNREAD else stamp.timestamp()
        load = (admitted.cluster_queue, frozenset(admitted.usage.items()))
        number = self.loads.setdefault(load, len(self.loads))
        return _Running(job, admitted, started, generation, sig=sig, reserved=reserved, load=number)

    def group(self, job: Job) -> object:
        """All a nomination reads of a job besides the tree: its ClusterQueue and shape (the
        flavor assignment), priority, and creation time where a policy compares it (the
        preemption search). Two jobs of a group are nominated alike at one state. A number
        per group (`numbers`): a parking run looks each of its workloads' up."""
        found = self.groups.get(job.key)
        if found is None:
            submit = job.submit if self.by_creation else 0
            group = (job.cluster_queue, self.shape(job), job.priority, submit)
            found = self.groups[job.key] = self.numbers.setdefault(group, len(self.numbers))
        return found

    def shape(self, job: Job) -> object:
        """What the flavor assigner sees of a job: its pods, per-pod requests, node selector."""
        found = self.shapes.get(job.key)
        if found is None:
            found = self.shapes[job.key] = (
                job.pods,
                tuple(sorted(job.per_pod.items())),
                tuple(sorted(job.node_selector.items())),
            )
        return found


def simulate(world: World, jobs: Iterable[Job], *, fast: bool = True) -> Run:
    """The run of `jobs`; `fast` False: every decision computed afresh (the reference the fast
    path is tested against)."""
    return Simulator(world, list(jobs), fast=fast).run()


def hold(sim: Simulator, job: Job, admitted: AdmittedWorkload) -> None:
    """`admitted` (the Workload of `job`) holds its quota from now on, as if the simulator had
    admitted it (`simulate.state.start` seeds a simulator with a cluster's running Workloads);
    it finishes after `job.duration` milliseconds, never where that is negative."""
    for fr, value in admitted.usage.items():
        if value:
            sim.settings[job.cluster_queue].node.add_usage(fr, value)
    sim.version += 1
    generation = next(sim.generation)
    sim.running[job.key] = sim.memo.running(job, admitted, sim.now, generation)
    sim.live.running[job.cluster_queue][job.key] = admitted
    sim.outcomes.setdefault(job.key, Outcome(job))
    if job.duration >= 0:
        heapq.heappush(sim.events, (sim.now + job.duration, FINISH, job.index, job.key, generation))


def nomination(sim: Simulator, job: Job) -> Assignment:
    """The flavor assignment a cycle now nominates `job` with, as the head of its ClusterQueue."""
    return sim.nominate(job.cluster_queue, _Pending(job, sim.now, Outcome(job))).known.assignment
