"""What the capacity gate reads besides the platform: each pool's acceptance evidence
(acceptance/<cluster>/<pool>.yaml, schemas/evidence.schema.json) and each pool's size at the
base of the change (git), so that `validate` can tell growth from a pool that stays as it is.

Built only from schema-valid documents; whether an evidence file is good enough to let a pool
grow is the policy's question (`renderer.policy.capacity`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from renderer.findings.diagnostics import Location, SourceMap
from renderer.model.choices import (
    EVIDENCE_VERDICTS,
    NODE_VERDICTS,
    EvidenceVerdict,
    NodeVerdict,
    one_of,
)

EVIDENCE_FOLDER = "acceptance"
"""The folder of the evidence files: acceptance/<cluster>/<pool>.yaml."""


def evidence_path(cluster: str, pool: str) -> str:
    """Where a pool's evidence lives, below the repository root."""
    return f"{EVIDENCE_FOLDER}/{cluster}/{pool}.yaml"


EVIDENCE_BROKEN = "AcceptanceEvidence"
"""`Platform.broken`'s kind for an evidence file with errors; its name is `<cluster>/<pool>`."""


@dataclass(frozen=True, slots=True)
class EvidenceNode:
    name: str
    verdict: NodeVerdict


@dataclass(frozen=True, slots=True)
class Evidence:
    """One evidence file: what one acceptance run proved about one pool."""

    pool: str
    """The file's name without `.yaml` (its metadata.name, the pool)."""
    folder: str
    """The folder it sits in under acceptance/: the cluster it claims."""
    cluster: str
    """`spec.cluster`."""
    verdict: EvidenceVerdict
    finished_at: str
    """`spec.finishedAt` as written (RFC 3339, UTC): freshness counts from its day."""
    accelerator: str
    driver: str
    image_reference: str
    image_digest: str
    """`sha256:<hex>`, or `unknown` for results run by hand."""
    pool_nodes: int
    nodes: tuple[EvidenceNode, ...]
    source: SourceMap

    @property
    def file(self) -> str:
        return self.source.file

    def at(self, *fields: str | int) -> Location:
        return self.source.locate(fields)

    def age_days(self, day: datetime.date) -> int:
        """Whole UTC days from the day the run finished to `day` (negative: after it)."""
        return (day - datetime.date.fromisoformat(self.finished_at[:10])).days

    @property
    def covered(self) -> int:
        """Distinct nodes the run came from with no failed verdict: what it proves."""
        failed = {n.name for n in self.nodes if n.verdict == "fail"}
        return len({n.name for n in self.nodes} - failed)


def evidence_from(data: Mapping[str, Any], source: SourceMap, folder: str) -> Evidence:
    spec = data["spec"]
    return Evidence(
        pool=data["metadata"]["name"],
        folder=folder,
        cluster=spec["cluster"],
        verdict=one_of(spec["verdict"], EVIDENCE_VERDICTS),
        finished_at=spec["finishedAt"],
        accelerator=spec["accelerator"],
        driver=spec["driver"],
        image_reference=spec["image"]["reference"],
        image_digest=spec["image"]["digest"],
        pool_nodes=spec["poolNodes"],
        nodes=tuple(
            EvidenceNode(n["name"], one_of(n["verdict"], NODE_VERDICTS)) for n in spec["nodes"]
        ),
        source=source,
    )


@dataclass(frozen=True, slots=True)
class BaseSizes:
    """What the capacity gate reads from outside the files: each pool's size (`nodes`, or `nodes.max`) at the base of the change being checked: the
    pool files at the commit `renderer.inputs.changes` compares with. A pool not listed (and
    not unreadable) is new in the change."""

    sizes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    unknown: str | None = None
    """Why git could not tell the base (no such base in this clone, git failing); None when known."""
    unreadable: frozenset[str] = frozenset()
    """Pools whose file at the base could not be read as a pool: their base is unknown."""
    today: datetime.date | str = datetime.date.min
    """The day (UTC) the gate judges freshness and exceptions on (`$GPUPLANE_TODAY`, else the
    clock: `renderer.inputs.changes.gate_today`), or why `$GPUPLANE_TODAY` is not a day."""

    def base_of(self, pool: str) -> int | None:
        """The pool's size at the base; None when the change adds it."""
        return self.sizes.get(pool)

    def knows(self, pool: str) -> bool:
        return self.unknown is None and pool not in self.unreadable
