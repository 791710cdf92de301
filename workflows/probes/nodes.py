"""nodes: every node of the pool checked on its own, every link between nodes, then the whole pool.

In order, inside one torch.distributed world (one pod per node under torchrun, its local ranks on
its GPUs; or `--local-world-size N --simulate-nodes K` on a laptop, N gloo ranks over loopback
grouped into K fake nodes `local-0..K-1`):

1. health, per rank: a float32 matmul on the device checked against a float64 reference computed
   on the CPU from the same inputs (relative error at most MATMUL_TOLERANCE), a timed matmul
   (TFLOPS, 2n^3 per product), and an allocation of a fraction of the device's free memory,
   filled and read back;
2. per node, an all-reduce over that node's ranks (one process group per node);
3. across nodes, a ring of pairs (node i with node i+1 mod K) in rounds of disjoint pairs, so a
   node takes part in one link at a time: each pair an all-reduce over both nodes' ranks;
4. the whole-world all-reduce.

Every all-reduce is timed over `iterations` operations after `warmup` untimed ones, then checked:
each rank contributes rank + 1 and the sum over the group's ranks must come back on every rank.
Bus bandwidth follows nccl-tests (/work/shared/reference/nccl-tests/PERFORMANCE.md): algbw = S/t,
busbw = algbw x 2(n-1)/n for AllReduce, n the ranks of the group (0 with one rank). Outliers are
nodes (intra-node busbw) and links (link busbw) below `outlier_fraction` x the median of their
kind; they do not fail the probe (the report judges them). Fabric error counters
(/sys/class/infiniband/<device>/ports/<port>/counters/, the Linux sysfs ABI
Documentation/ABI/stable/sysfs-class-infiniband) are read on each node's first rank before the
node's all-reduce and after the world's; a counter that grew is reported per node, device and port.

Test-only fault injection: GPUPLANE_TEST_FAIL_HEALTH_RANKS="1,3" makes those global ranks perturb
their matmul result before it is checked, so their nodes come out unhealthy (never set it on a
pool).
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from .envelope import Outcome, ProbeFailure, measure
from .runtime import Backend, World, distributed, launched, run_local_world, torch_labels

ELEMENT_BYTES = 4
MATMUL_CHECK_SIZE = 256
"""The checked matmul is n x n with this n: small enough for a float64 reference on the CPU."""
MATMUL_TIMED_SIZE = {"cuda": 4096, "cpu": 256}
"""The timed matmul's n on each device type."""
MATMUL_TIMED_REPEATS = 5
MATMUL_TOLERANCE = 5e-3
"""Largest |C - C_ref| relative to max |C_ref|: float32 (even with TF32 enabled) stays well
below it, a wrong result (a faulty GPU, the injected fault) lands far above it."""
CPU_ALLOCATION_BYTES = 16 * 1024 * 1024
"""On the CPU the allocation check takes this much, not a fraction of the machine's memory."""
SYSFS_INFINIBAND = "/sys/class/infiniband"
SYSFS_ENV = "GPUPLANE_INFINIBAND_SYSFS"
"""Overrides SYSFS_INFINIBAND (tests point it at a fake tree)."""
FAULT_ENV = "GPUPLANE_TEST_FAIL_HEALTH_RANKS"
"""Test-only: comma-separated global ranks whose health check is made to fail."""
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
)
"""The PortCounters error counters of the sysfs ABI (data and packet counters are left out)."""


@dataclass(frozen=True, kw_only=True)
class NodesSettings:
    """How big and how often each all-reduce is, where the world comes from (the CLI's flags)."""

    max_bytes: int = 64 * 1024 * 1024
    """message size of every all-reduce, bytes"""
    iterations: int = 20
    warmup: int = 5
    outlier_fraction: float = 0.85
    """a node or link below this fraction of its kind's median is an outlier"""
    memory_fraction: float = 0.5
    """share of a GPU's free memory the health check allocates"""
    local_world_size: int | None = None
    """spawn this many ranks here instead of joining the job's world"""
    simulate_nodes: int | None = None
    """group the ranks into this many fake nodes (local-0..K-1) instead of by NODE_NAME"""
    backend: Backend = "auto"
    timeout_s: float = 300.0


def run_nodes(
    settings: NodesSettings | None = None,
    *,
    cluster: str | None = None,
    pool: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Check every node and link; return the result envelope (complete on rank 0)."""
    settings = settings or NodesSettings()
    if settings.iterations < 1 or settings.warmup < 0 or settings.max_bytes < ELEMENT_BYTES:
        raise ValueError("iterations must be at least 1, warmup at least 0, max_bytes at least 4")
    if not 0 < settings.outlier_fraction <= 1 or not 0 < settings.memory_fraction < 1:
        raise ValueError("outlier_fraction must be in (0, 1] and memory_fraction in (0, 1)")
    if settings.simulate_nodes is not None and settings.simulate_nodes < 1:
        raise ValueError("simulate_nodes must be at least 1")
    local = settings.local_world_size
    if (
        local is not None
        and settings.simulate_nodes is not None
        and settings.simulate_nodes > local
    ):
        raise ValueError(f"cannot simulate {settings.simulate_nodes} nodes with {local} ranks")

    def body() -> Outcome:
        if local is None and launched():
            payload = rank_main(settings=settings)
        else:
            payload = run_local_world(rank_main, local or 2, {"settings": settings})
        return Outcome(payload["metrics"], payload["error"], payload["environment"])

    return measure("nodes", body, cluster=cluster, pool=pool, labels=labels)


def bus_factor(ranks: int) -> float:
    """nccl-tests' AllReduce correction from algorithm to bus bandwidth: 2(n-1)/n."""
    return 2 * (ranks - 1) / ranks


def busbw(nbytes: int, seconds: float, ranks: int) -> float:
    """Bus bandwidth in decimal GB/s of an all-reduce of `nbytes` over `ranks` ranks."""
    return nbytes / max(seconds, 1e-12) / 1e9 * bus_factor(ranks)


def ring_rounds(count: int) -> list[list[tuple[int, int]]]:
    """The ring's pairs (i, i+1 mod count) in rounds where no node is in two pairs at once.

    Two nodes make one pair, one node none. Greedy in ring order: an even ring takes two rounds,
    an odd one three (its last pair closes the ring against a node the first round used).
    """
    if count < 2:
        return []
    pairs = [(0, 1)] if count == 2 else [(i, (i + 1) % count) for i in range(count)]
    rounds: list[list[tuple[int, int]]] = []
    for pair in pairs:
        for taken in rounds:
            if not {node for p in taken for node in p} & set(pair):
                taken.append(pair)
                break
        else:
            rounds.append([pair])
    return rounds


def node_names(rank: int, size: int, simulate: int | None) -> str:
    """This rank's node: `local-<k>` when simulating (contiguous blocks of ranks), else NODE_NAME,
    else the hostname."""
    if simulate is not None:
        return f"local-{rank * simulate // size}"
    return os.environ.get("NODE_NAME") or socket.gethostname()


def outliers(
    figures: Mapping[str, float | None], figure: str, fraction: float
) -> tuple[float | None, list[dict[str, Any]]]:
    """The median of the figures that exist, and every subject below `fraction` x that median."""
    values = [value for value in figures.values() if value is not None]
    if not values:
        return None, []
    median = statistics.median(values)
    found = [
        {"subject": subject, "figure": figure, "value": value, "median": median}
        for subject, value in figures.items()
        if value is not None and value < fraction * median
    ]
    return median, found


# ------------------------------------------------------------------------------ one rank


def rank_main(*, settings: NodesSettings, init_method: str = "env://") -> dict[str, Any]:
    """One rank's part; rank 0 returns the complete metrics (the others return theirs too)."""
    with distributed(settings.backend, settings.timeout_s, init_method) as world:
        if settings.simulate_nodes is not None and settings.simulate_nodes > world.size:
            raise ProbeFailure(
                f"cannot simulate {settings.simulate_nodes} nodes with {world.size} ranks"
            )
        mine = node_names(world.rank, world.size, settings.simulate_nodes)
        names: list[Any] = [None] * world.size
        dist.all_gather_object(names, mine)
        nodes = list(dict.fromkeys(names))  # in order of first rank
        members = [[r for r, name in enumerate(names) if name == node] for node in nodes]
        # every rank creates every group, in the same order
        node_groups = [dist.new_group(ranks) for ranks in members]
        rounds = ring_rounds(len(nodes))
        link_groups = [
            [dist.new_group(sorted(members[a] + members[b])) for a, b in pairs] for pairs in rounds
        ]
        leader = world.rank == members[nodes.index(mine)][0]
        record: dict[str, Any] = {"rank": world.rank, "node": mine}
        record["health"] = health_check(world, settings.memory_fraction)
        before = read_counters(sysfs_root()) if leader else None
        index = nodes.index(mine)
        record["intra"] = _timed_allreduce(world, node_groups[index], members[index], settings)
        record["links"] = []
        for pairs, groups in zip(rounds, link_groups, strict=True):
            for (a, b), group in zip(pairs, groups, strict=True):
                if index in (a, b):
                    ranks = sorted(members[a] + members[b])
                    timed = _timed_allreduce(world, group, ranks, settings)
                    record["links"].append({"a": a, "b": b, **timed})
            _meet(world, None)  # one round after the other
        record["world"] = _timed_allreduce(world, None, list(range(world.size)), settings)
        if leader:
            after = read_counters(sysfs_root())
            record["fabric"] = {"available": before is not None and after is not None}
            record["fabric"]["errors"] = fabric_errors(before or {}, after or {})
        records: list[Any] = [None] * world.size
        dist.all_gather_object(records, record)
    payload = assemble(records, nodes, members, settings)
    payload["environment"] = torch_labels(world.device) | {
        "backend": world.backend,
        "worldSize": str(world.size),
        "nodeCount": str(len(nodes)),
        "dtype": "float32",
    }
    if world.device.type == "cuda":
        payload["environment"]["gpuplane.dev/gpus"] = str(world.size)
    return payload


def health_check(world: World, memory_fraction: float) -> dict[str, Any]:
    """This rank's matmul (checked and timed) and memory allocation; never raises."""
    try:
        generator = torch.Generator().manual_seed(1234 + world.rank)
        n = MATMUL_CHECK_SIZE
        a = torch.rand(n, n, generator=generator, dtype=torch.float64) * 2 - 1
        b = torch.rand(n, n, generator=generator, dtype=torch.float64) * 2 - 1
        reference = a @ b
        got = (a.float().to(world.device) @ b.float().to(world.device)).double().cpu()
        if world.rank in _faulty_ranks():
            got[0, 0] += 1.0  # test-only: a wrong result the check below must catch
        error = float((got - reference).abs().max() / reference.abs().max())
        if not error <= MATMUL_TOLERANCE:
            raise ProbeFailure(
                f"matmul on {world.device} is off by {error:.3g} relative to the CPU reference "
                f"(tolerance {MATMUL_TOLERANCE})"
            )
        tflops = _timed_matmul(world.device)
        _allocate(world.device, memory_fraction)
    except Exception as exc:  # a sick device is a finding, not a crash of the whole world
        return {"ok": False, "error": f"rank {world.rank}: {exc}", "tflops": 0.0}
    return {"ok": True, "error": None, "tflops": tflops}


def _faulty_ranks() -> set[int]:
    raw = os.environ.get(FAULT_ENV, "")
    return {int(part) for part in raw.split(",") if part.strip()}


def _timed_matmul(device: torch.device) -> float:
    n = MATMUL_TIMED_SIZE["cuda" if device.type == "cuda" else "cpu"]
    a = torch.rand(n, n, device=device)
    b = torch.rand(n, n, device=device)
    a @ b  # warm up (kernel selection, lazy initialisation)
    _sync(device)
    start = time.perf_counter()
    for _ in range(MATMUL_TIMED_REPEATS):
        a @ b
    _sync(device)
    seconds = (time.perf_counter() - start) / MATMUL_TIMED_REPEATS
    return 2 * n**3 / max(seconds, 1e-12) / 1e12


def _allocate(device: torch.device, fraction: float) -> None:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        nbytes = int(free * fraction)
    else:
        nbytes = CPU_ALLOCATION_BYTES
    block = torch.empty(nbytes, dtype=torch.uint8, device=device)
    block.fill_(0xA5)
    if not bool(torch.all(block[:: max(1, nbytes // 4096)] == 0xA5)):
        raise ProbeFailure(f"{nbytes} bytes allocated on {device} did not read back as written")
    del block
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _meet(world: World, group: Any) -> None:
    """A barrier that works the same on every backend: a one-element all-reduce, synchronised."""
    dist.all_reduce(torch.zeros(1, device=world.device), group=group)
    _sync(world.device)


def _timed_allreduce(
    world: World, group: Any, ranks: Sequence[int], settings: NodesSettings
) -> dict[str, Any]:
    """Seconds per all-reduce of `max_bytes` over `group` (None: the world), and its checked sum."""
    buffer = torch.zeros(settings.max_bytes // ELEMENT_BYTES, device=world.device)
    for _ in range(settings.warmup):
        dist.all_reduce(buffer, group=group)
    _meet(world, group)
    start = time.perf_counter()
    for _ in range(settings.iterations):
        dist.all_reduce(buffer, group=group)
    _sync(world.device)
    seconds = (time.perf_counter() - start) / settings.iterations
    buffer.fill_(world.rank + 1)
    dist.all_reduce(buffer, group=group)
    expected = sum(rank + 1 for rank in ranks)
    return {"seconds": seconds, "correct": bool(torch.all(buffer == expected))}


# ------------------------------------------------------------------------------ fabric counters


def sysfs_root() -> Path:
    return Path(os.environ.get(SYSFS_ENV) or SYSFS_INFINIBAND)


def read_counters(root: Path) -> dict[str, int] | None:
    """`device/port/counter` -> value for every error counter under `root`; None when `root` has
    no port counters at all (no RDMA device, or the folder is not mounted into the pod)."""
    if not root.is_dir():
        return None
    found: dict[str, int] = {}
    folders = sorted(root.glob("*/ports/*/counters"))
    for folder in folders:
        device, port = folder.parts[-4], folder.parts[-2]
        for counter in ERROR_COUNTERS:
            try:
                found[f"{device}/{port}/{counter}"] = int((folder / counter).read_text().strip())
            except (OSError, ValueError):
                continue  # a counter this device does not implement
    return found if folders else None


def fabric_errors(before: Mapping[str, int], after: Mapping[str, int]) -> list[dict[str, Any]]:
    """Every counter that grew between the two readings (node filled in by the caller)."""
    errors = []
    for key, value in sorted(after.items()):
        delta = value - before.get(key, value)
        if delta > 0:
            device, port, counter = key.split("/")
            errors.append({"device": device, "port": port, "counter": counter, "delta": delta})
    return errors


# ------------------------------------------------------------------------------ rank 0's figures


def assemble(
    records: Sequence[Mapping[str, Any]],
    nodes: Sequence[str],
    members: Sequence[Sequence[int]],
    settings: NodesSettings,
) -> dict[str, Any]:
    """The metrics and the error from every rank's record."""
    nbytes = settings.max_bytes // ELEMENT_BYTES * ELEMENT_BYTES
    problems: list[str] = []
    rows = []
    for node, ranks in zip(nodes, members, strict=True):
        mine = [records[r] for r in ranks]
        failed = [r["health"]["error"] for r in mine if not r["health"]["ok"]]
        if not all(r["intra"]["correct"] for r in mine):
            problems.append(f"the all-reduce within node {node} returned a wrong sum")
        seconds = statistics.fmean(r["intra"]["seconds"] for r in mine)
        rows.append(
            {
                "node": node,
                "ranks": len(ranks),
                "healthy": not failed,
                "error": "; ".join(failed) or None,
                "intraBusbwGBps": None if failed else busbw(nbytes, seconds, len(ranks)),
                "matmulTflops": min(r["health"]["tflops"] for r in mine),
            }
        )
        if failed:
            problems.append(f"node {node} is unhealthy ({failed[0]})")
    links = _links(records, nodes, members, nbytes, problems)
    world = [r["world"] for r in records]
    if not all(w["correct"] for w in world):
        problems.append("the whole-world all-reduce returned a wrong sum")
    intra_median, found = outliers(
        {row["node"]: row["intraBusbwGBps"] for row in rows},
        "intraBusbwGBps",
        settings.outlier_fraction,
    )
    link_median, link_found = outliers(
        {f"{link['a']}<->{link['b']}": link["busbwGBps"] for link in links},
        "linkBusbwGBps",
        settings.outlier_fraction,
    )
    metrics = {
        "nodeCount": len(nodes),
        "worldSize": len(records),
        "nodes": rows,
        "links": links,
        "poolBusbwGBps": busbw(nbytes, statistics.fmean(w["seconds"] for w in world), len(records)),
        "median": {"intraBusbwGBps": intra_median, "linkBusbwGBps": link_median},
        "outlierFraction": settings.outlier_fraction,
        "outliers": found + link_found,
        "fabric": _fabric(records, nodes, members),
    }
    return {"metrics": metrics, "error": "; ".join(problems) or None}


def _links(
    records: Sequence[Mapping[str, Any]],
    nodes: Sequence[str],
    members: Sequence[Sequence[int]],
    nbytes: int,
    problems: list[str],
) -> list[dict[str, Any]]:
    timed: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for record in records:
        for link in record["links"]:
            timed.setdefault((link["a"], link["b"]), []).append(link)
    links = []
    for (a, b), rows in sorted(timed.items()):
        if not all(row["correct"] for row in rows):
            problems.append(
                f"the all-reduce between {nodes[a]} and {nodes[b]} returned a wrong sum"
            )
        seconds = statistics.fmean(row["seconds"] for row in rows)
        ranks = len(members[a]) + len(members[b])
        links.append({"a": nodes[a], "b": nodes[b], "busbwGBps": busbw(nbytes, seconds, ranks)})
    return links


def _fabric(
    records: Sequence[Mapping[str, Any]], nodes: Sequence[str], members: Sequence[Sequence[int]]
) -> dict[str, Any]:
    leaders = [records[ranks[0]] for ranks in members]
    errors = [
        {"node": node} | error
        for node, leader in zip(nodes, leaders, strict=True)
        for error in leader["fabric"]["errors"]
    ]
    return {"available": all(r["fabric"]["available"] for r in leaders), "errors": errors}
