"""Generate large synthetic gpuplane platforms for benchmarks.

Usage as a script (from the repository root)::

    python -m bench.generate OUT_DIR [--clusters N] [--pools-per-cluster N] [--teams N] [--seed N]
        [--shape few-large|many-small]

and as a module::

    from bench.generate import generate_platform
    counts = generate_platform(Path("out"), clusters=4, pools_per_cluster=8, teams=400)

The platform written is valid by construction: names are unique and DNS-1123, every reference
resolves, and the GPU quotas on each pool (per MIG profile for MIG pools) add up to at most the
pool's capacity, so the queues' ``oversubscription: 1.0`` holds. Output is deterministic: the same
arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from renderer.inputs.schema import API_VERSION, KIND_FOLDERS

Shape = Literal["few-large", "many-small"]
"""How the teams are cut. `few-large`: every team has a training, an inference and a notebooks
namespace. `many-small`: a team has a training namespace, and every other team an inference one
too, so the same number of objects comes from about 1.6 times as many team files (issue 35: a
fleet of many small teams costs more per object than one of few large teams)."""
SHAPES: tuple[Shape, ...] = get_args(Shape)

# kind -> folder under the platform root
KIND_DIRS: dict[str, str] = {kind: folder for folder, kind in sorted(KIND_FOLDERS.items())}

TRAINING_LEVELS = ["topology.gpuplane.dev/block", "kubernetes.io/hostname"]
TRAINING_ACCEPTANCE = {
    "allReduceBusBandwidthGBps": 300,
    "checkpointWriteGBps": 2,
    "restoreSeconds": 300,
}
INFERENCE_ACCEPTANCE = {"inferenceP95Ms": 250, "maxQueueWaitMinutes": 5}
MIG_LAYOUT = {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
HOSTS: dict[str, dict[str, Any]] = {
    # what one node can allocate to pods, as the example platform's pools declare it
    "h100-80gb": {"cpus": 224, "memory": "2Ti"},
    "l40s": {"cpus": 128, "memory": "512Gi"},
    "a100-80gb": {"cpus": 256, "memory": "2Ti"},
    "h200-141gb": {"cpus": 192, "memory": "2Ti"},
}


@dataclass(frozen=True)
class PoolKind:
    """One entry of the cycle of pool types placed on every cluster."""

    accelerator: str
    short: str  # used in pool names
    role: str  # used in pool names
    workload: str
    sharing: str
    gpus_per_node: int
    gpu_hour: float  # base rate; jittered per pool
    training: bool  # gets a topology block and training acceptance thresholds
    replicas: int = 0  # time-slicing replicas
    mig_layout: dict[str, int] | None = None


POOL_CYCLE: tuple[PoolKind, ...] = (
    PoolKind("h100-80gb", "h100", "train", "distributed-training", "full-gpu", 8, 2.85, True),
    PoolKind("l40s", "l40s", "infer", "online-inference", "time-slicing", 4, 0.95, False, 4),
    PoolKind("a100-80gb", "a100", "nb", "notebooks", "mig", 8, 1.60, False, mig_layout=MIG_LAYOUT),
    PoolKind("h200-141gb", "h200", "tune", "fine-tuning", "full-gpu", 8, 3.60, True),
)

DOMAINS = (
    "computer vision",
    "speech recognition",
    "recommendation",
    "language modelling",
    "search ranking",
    "fraud detection",
    "robotics",
    "drug discovery",
    "forecasting",
    "ads relevance",
)


# --------------------------------------------------------------------------- YAML emitting

LINE_WIDTH = 100
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/-]*")
_RESERVED = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n"})


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED:
            return value
        return json.dumps(value)
    raise TypeError(f"cannot emit {type(value).__name__} as a YAML scalar")


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def _flow(value: Any, budget: int) -> str | None:
    """Flow form of ``value`` if it is at most ``budget`` characters long, else None."""
    if _is_scalar(value):
        text = _scalar(value)
        return text if len(text) <= budget else None
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        items = list(value.items())
    else:
        return None
    parts: list[str] = []
    used = 2  # the brackets
    for item in items:
        if isinstance(value, dict):
            key = _scalar(item[0]) + ": "
            inner = _flow(item[1], budget - used - len(key))
            part = None if inner is None else key + inner
        else:
            part = _flow(item, budget - used)
        if part is None:
            return None
        used += len(part) + (2 if parts else 0)
        if used > budget:
            return None
        parts.append(part)
    body = ", ".join(parts)
    return "[" + body + "]" if isinstance(value, list) else "{" + body + "}"


def _emit(value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            key = _scalar(k)
            flow = _flow(v, LINE_WIDTH - indent - len(key) - 2)
            if flow is not None:
                out.append(f"{pad}{key}: {flow}")
            else:
                out.append(f"{pad}{key}:")
                _emit(v, indent + 2, out)
    elif isinstance(value, list):
        for item in value:
            flow = _flow(item, LINE_WIDTH - indent - 2)
            if flow is not None:
                out.append(f"{pad}- {flow}")
            else:
                # a block item: emit its body one level deeper and hang the first line on "- "
                body: list[str] = []
                _emit(item, indent + 2, body)
                body[0] = f"{pad}- {body[0][indent + 2 :]}"
                out.extend(body)
    else:
        out.append(pad + _scalar(value))


def to_yaml(obj: dict[str, Any]) -> str:
    """The document (with the schema modeline) of one gpuplane object."""
    kind = obj["kind"].lower()
    lines = [f"# yaml-language-server: $schema=../schemas/{kind}.schema.json"]
    _emit(obj, 0, lines)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the model


def _envelope(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}


def _cluster(i: int) -> dict[str, Any]:
    name = cluster_name(i)
    return _envelope(
        "Cluster",
        name,
        {
            "kubernetesVersion": "1.33" if i % 2 == 0 else "1.34",
            "environment": "production" if i == 0 else "staging",
            "provider": "on-prem",
            "scheduler": "kueue",
            "argocd": {"destination": "https://kubernetes.default.svc", "project": "platform"},
            "identity": {"groupPrefix": "oidc:"},
            "platformOwners": ["platform-admins"],
            "addons": {
                "gpuOperator": {"version": "v26.7.0", "driverManaged": True},
                "kueue": {"version": "v0.19.2"},
                "argoWorkflows": {"version": "2.0.4"},
                "dcgmExporter": {"version": "4.5.2-4.8.1", "serviceMonitor": True},
                "prometheusStack": {"version": "79.6.1", "enabled": True},
                # the operators of the training templates (JobSet 0.11 supports 1.33 and 1.34),
                # and OpenCost, which reads the pools' pricing file
                "jobset": {"version": "0.11.1"},
                "kuberay": {"version": "1.7.0"},
                "opencost": {"version": "2.5.17"},
            },
            "storage": {
                "sharedClass": "shared-fs",
                "scratchClass": "local-nvme",
                "objectStore": f"s3://{name}-ml",
                "objectStoreEgress": [{"cidr": f"10.{i % 200}.0.0/16", "ports": [443]}],
            },
        },
    )


def cluster_name(i: int) -> str:
    return f"c{i}"


def queue_name(i: int) -> str:
    return f"{cluster_name(i)}-queue"


def team_name(k: int, width: int) -> str:
    return f"team-{k:0{width}d}"


def _pool(cluster: str, name: str, kind: PoolKind, nodes: int, gpu_hour: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "cluster": cluster,
        "accelerator": kind.accelerator,
        "gpusPerNode": kind.gpus_per_node,
        "nodes": nodes,
    }
    if kind.training:
        spec["topology"] = {"form": "sxm", "interconnect": "nvswitch", "levels": TRAINING_LEVELS}
    spec["workload"] = kind.workload
    spec["sharing"] = kind.sharing
    if kind.mig_layout is not None:
        spec["mig"] = {"layout": dict(kind.mig_layout)}
    if kind.replicas:
        spec["timeSlicing"] = {"replicas": kind.replicas}
    spec["exposure"] = "device-plugin"
    spec["host"] = dict(HOSTS[kind.accelerator])
    spec["taints"] = [{"key": "gpuplane.dev/pool", "value": name, "effect": "NoSchedule"}]
    spec["cost"] = {"gpuHour": gpu_hour, "currency": "USD"}
    inference = kind.workload in ("online-inference", "batch-inference")
    spec["acceptance"] = dict(INFERENCE_ACCEPTANCE if inference else TRAINING_ACCEPTANCE)
    return _envelope("Pool", name, spec)


def pool_capacity(spec: dict[str, Any]) -> dict[str | None, int]:
    """Advertised units of a pool: {None: n} for whole/time-sliced GPUs, {profile: n} for MIG."""
    gpus = int(spec["nodes"]) * int(spec["gpusPerNode"])
    if spec["sharing"] == "mig":
        return {p: gpus * int(n) for p, n in spec["mig"]["layout"].items()}
    if spec["sharing"] == "time-slicing":
        return {None: gpus * int(spec["timeSlicing"]["replicas"])}
    return {None: gpus}


def _queue(i: int, pools: list[str]) -> dict[str, Any]:
    return _envelope(
        "Queue",
        queue_name(i),
        {
            "cluster": cluster_name(i),
            "pools": pools,
            "strategy": "BestEffortFIFO",
            "fairSharing": True,
            "preemption": {
                "withinTeam": "LowerPriority",
                "reclaimWithinCohort": "Any",
            },
            "gang": {"waitForPodsReady": True, "timeout": "10m"},
            "priorities": [
                {"name": "production", "value": 1000},
                {"name": "standard", "value": 100, "default": True},
                {"name": "preemptible", "value": 10},
            ],
            "oversubscription": 1.0,
        },
    )


def _namespaces(name: str, cluster: str, k: int, shape: Shape) -> list[dict[str, str]]:
    """A team's namespaces: three for `few-large`; one or two for `many-small`."""
    purposes = [("train", "training"), ("serve", "inference"), ("nb", "notebooks")]
    if shape == "many-small":
        purposes = purposes[: 1 + k % 2]
    return [{"name": f"{name}-{s}", "cluster": cluster, "purpose": p} for s, p in purposes]


def build_platform(
    *,
    clusters: int = 4,
    pools_per_cluster: int = 8,
    teams: int = 400,
    seed: int = 0,
    shape: Shape = "few-large",
) -> list[dict[str, Any]]:
    """The objects of a synthetic platform, in a deterministic order."""
    if clusters < 1 or pools_per_cluster < 1 or teams < 0:
        raise ValueError("need at least one cluster and one pool per cluster, and teams >= 0")
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []

    pool_specs: dict[str, dict[str, Any]] = {}
    cluster_pools: list[list[str]] = []
    for i in range(clusters):
        objects.append(_cluster(i))
        names: list[str] = []
        for j in range(pools_per_cluster):
            kind = POOL_CYCLE[j % len(POOL_CYCLE)]
            name = f"{cluster_name(i)}-{kind.short}-{kind.role}-{j // len(POOL_CYCLE)}"
            nodes = rng.randint(4, 32)
            gpu_hour = round(kind.gpu_hour * rng.uniform(0.9, 1.1), 2)
            pool = _pool(cluster_name(i), name, kind, nodes, gpu_hour)
            objects.append(pool)
            pool_specs[name] = pool["spec"]
            names.append(name)
        cluster_pools.append(names)
        objects.append(_queue(i, names))

    # Which team asks for quota on which (pool, profile); then divide each capacity evenly.
    width = max(4, len(str(max(teams - 1, 0))))
    wants: list[list[tuple[str, str | None]]] = []
    takers: dict[tuple[str, str | None], int] = {}
    for k in range(teams):
        pools = cluster_pools[k % clusters]
        if shape == "many-small" and k % 2 == 0:  # a training namespace alone: no serving pool
            pools = [p for p in pools if pool_specs[p]["workload"] != "online-inference"]
        chosen = sorted(rng.sample(pools, rng.randint(1, min(3, len(pools)))), key=pools.index)
        entries: list[tuple[str, str | None]] = []
        for pool_name in chosen:
            spec = pool_specs[pool_name]
            profile = (
                rng.choice(sorted(spec["mig"]["layout"])) if spec["sharing"] == "mig" else None
            )
            entries.append((pool_name, profile))
            takers[(pool_name, profile)] = takers.get((pool_name, profile), 0) + 1
        wants.append(entries)

    for k in range(teams):
        i = k % clusters
        name = team_name(k, width)
        cluster = cluster_name(i)
        gpus: list[dict[str, Any]] = []
        for pool_name, profile in wants[k]:
            capacity = pool_capacity(pool_specs[pool_name])[profile]
            share = capacity // takers[(pool_name, profile)]
            if share == 0:
                continue
            entry: dict[str, Any] = {"pool": pool_name}
            if profile is not None:
                entry["profile"] = profile
            entry["nominal"] = share
            entry["borrowingLimit"] = min(share, capacity - share)
            entry["lendingLimit"] = share // 2
            gpus.append(entry)
        spec = {
            "description": f"Synthetic {rng.choice(DOMAINS)} team {k}",
            "owners": [f"{name}-leads"],
            "members": [name],
            "viewers": [],
            "codeowners": [f"@example/{name}"],
            "costCenter": f"CC-{1000 + k}",
            "contact": f"#{name}",
            "queue": queue_name(i),
            "priority": "standard",
            "namespaces": _namespaces(name, cluster, k, shape),
            "gpus": gpus,
            "resources": {
                "cpu": "256",
                "memory": "2Ti",
                "storage": "10Ti",
                "persistentVolumeClaims": 50,
            },
            "defaults": {"cpu": "1", "memory": "4Gi"},
            # no images or egress: the platform has no gpuplane.yaml, so no allowlist allows any
            # (docs/repository-settings.md)
            "retention": {"finishedJobs": "24h", "checkpoints": "30d"},
        }
        objects.append(_envelope("Team", name, spec))
    return objects


def generate_platform(
    root: Path,
    *,
    clusters: int = 4,
    pools_per_cluster: int = 8,
    teams: int = 400,
    seed: int = 0,
    shape: Shape = "few-large",
) -> dict[str, int]:
    """Write a synthetic platform under ``root``; return the number of objects per kind.

    Refuses (``FileExistsError``) when a kind folder under ``root`` already holds ``*.yaml`` files
    that this generation would not overwrite: left behind, they would make the platform invalid.
    """
    root = Path(root)
    objects = build_platform(
        clusters=clusters, pools_per_cluster=pools_per_cluster, teams=teams, seed=seed, shape=shape
    )
    files = {
        root / KIND_DIRS[o["kind"]] / f"{o['metadata']['name']}.yaml": to_yaml(o) for o in objects
    }
    stale = sorted(
        p
        for folder in KIND_DIRS.values()
        if (root / folder).is_dir()
        for p in (root / folder).glob("*.yaml")
        if p not in files
    )
    if stale:
        raise FileExistsError(
            f"{root}: {len(stale)} existing file(s) would be left behind, e.g. {stale[0]}; "
            "generate into an empty directory"
        )
    for folder in KIND_DIRS.values():
        (root / folder).mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_bytes(text.encode("utf-8"))
    counts = dict.fromkeys(KIND_DIRS, 0)
    for o in objects:
        counts[o["kind"]] += 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generate",
        description="Generate a large synthetic gpuplane platform for benchmarks.",
    )
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--pools-per-cluster", type=int, default=8)
    parser.add_argument("--teams", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape", choices=SHAPES, default="few-large")
    args = parser.parse_args(argv)
    if args.clusters < 1 or args.pools_per_cluster < 1 or args.teams < 0:
        parser.error("--clusters and --pools-per-cluster must be >= 1, --teams >= 0")
    start = time.perf_counter()
    try:
        counts = generate_platform(
            args.out_dir,
            clusters=args.clusters,
            pools_per_cluster=args.pools_per_cluster,
            teams=args.teams,
            seed=args.seed,
            shape=args.shape,
        )
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    summary = ", ".join(f"{n} {kind.lower()}s" for kind, n in counts.items())
    print(f"generated {summary} in {args.out_dir} ({elapsed:.2f}s, seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
