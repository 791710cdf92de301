"""The capacity gate: a pool grows only on passing, fresh, comparable evidence covering every node
(acceptance/<cluster>/<pool>.yaml), and where the evidence files sit (docs/capacity-gate.md).

What grows is read against each pool's size at the base of the change (`Platform.base_sizes`,
from git); the day is today in UTC, or `$GPUPLANE_TODAY` (YYYY-MM-DD) to reproduce a CI run.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass

from renderer.findings.diagnostics import Diagnostic, Location, Severity
from renderer.model.evidence import EVIDENCE_BROKEN, Evidence, evidence_path
from renderer.model.platform import Cluster, Platform, Pool
from renderer.model.words import plural
from renderer.policy.rule import did_you_mean, error, rule


def evidence_file(pool: Pool) -> str:
    return evidence_path(pool.cluster, pool.name)


@dataclass(frozen=True, slots=True)
class Growth:
    """How a pool's size moved since the base: `base` None for a pool the change adds."""

    pool: Pool
    base: int | None

    @property
    def grows(self) -> bool:
        return self.base is None or self.pool.size > self.base

    @property
    def needed(self) -> int:
        """The nodes the evidence must cover: the base size, at least one for a new pool."""
        return max(self.base or 0, 1)


def _size_line(pool: Pool) -> Location:
    """Where the finding lands: `spec.nodes`, or `spec.nodes.max` when autoscaled."""
    written = pool.origin.at("spec", "nodes", "max")
    return written if written.line > 0 else pool.origin.at("spec", "nodes")


def _age_problem(evidence: Evidence, cluster: Cluster, day: datetime.date) -> str | None:
    finished = datetime.date.fromisoformat(evidence.finished_at[:10])
    age = evidence.age_days(day)
    if age < 0:
        return f"finishedAt {evidence.finished_at} is after today ({day})"
    if age > cluster.evidence_max_age_days:
        return (
            f"it is {age} days old (finished {finished}); cluster {cluster.name} accepts "
            f"{cluster.evidence_max_age_days} (spec.acceptance.evidenceMaxAgeDays)"
        )
    return None


def _image_problems(pool: Pool, evidence: Evidence) -> Iterator[str]:
    wanted = pool.production_image
    if wanted is None:
        return
    if evidence.image_reference != wanted:
        yield f"it ran in image {evidence.image_reference}, not the productionImage {wanted}"
    if "@" in wanted:
        digest = wanted.rsplit("@", 1)[1]
        if evidence.image_digest != digest:
            yield f"it ran image digest {evidence.image_digest}, not the pinned {digest}"


def _driver_matches(declared: str, measured: str) -> bool:
    """`570` matches `570.124.06`; `570.124.06` only itself."""
    return measured == declared or measured.startswith(f"{declared}.")


def missing_pieces(
    platform: Platform, growth: Growth, cluster: Cluster, day: datetime.date
) -> list[str]:
    """Everything the pool's evidence lacks for the pool to grow, each in a few words."""
    pool = growth.pool
    found: list[str] = []
    if pool.production_image is None:
        found.append("the pool declares no spec.productionImage, so no evidence can be comparable")
    evidence = platform.evidence.get((pool.cluster, pool.name))
    if evidence is None:
        if (EVIDENCE_BROKEN, f"{pool.cluster}/{pool.name}") in platform.broken:
            found.append(f"{evidence_file(pool)} has errors (see its findings)")
        else:
            found.append(f"no acceptance evidence ({evidence_file(pool)} does not exist)")
        return found
    if evidence.verdict != "pass":
        found.append(f"its verdict is {evidence.verdict}, not pass")
    if (age := _age_problem(evidence, cluster, day)) is not None:
        found.append(age)
    if evidence.accelerator != pool.accelerator:
        found.append(f"it was measured on {evidence.accelerator}, not {pool.accelerator}")
    driver = pool.image.get("driver")
    if driver is not None and not _driver_matches(driver, evidence.driver):
        found.append(f"it ran on driver {evidence.driver}, not the pool's {driver}")
    found.extend(_image_problems(pool, evidence))
    if evidence.covered < growth.needed:
        found.append(
            f"it covers {evidence.covered} node(s) without a failure, the pool has "
            f"{growth.needed} before this change"
        )
    return found


def _hint(pool: Pool) -> str:
    return (
        f"run the acceptance suite on {pool.cluster}/{pool.name} in its productionImage, then "
        f"`gpuplane acceptance record RESULTS…` and commit {evidence_file(pool)}; or have the "
        "platform team declare spec.growthException {by, reason, until: YYYY-MM-DD}"
    )


def _growth_finding(
    growth: Growth, cluster: Cluster, missing: list[str], day: datetime.date
) -> Diagnostic:
    pool = growth.pool
    grows = (
        f"new pool {pool.name} ({plural(pool.size, 'node')})"
        if growth.base is None
        else f"pool {pool.name} grows from {growth.base} to {plural(pool.size, 'node')}"
    )
    message = f"{grows} on {cluster.environment} cluster {cluster.name}: " + "; ".join(missing)
    severity = Severity.ERROR if cluster.production else Severity.WARNING
    notes: tuple[tuple[str, Location], ...] = ()
    hint: str | None = _hint(pool)
    exception = pool.growth_exception
    if exception is not None and datetime.date.fromisoformat(exception.until) >= day:
        severity = Severity.WARNING
        message += (
            f" (allowed by growthException of {exception.by} until {exception.until}: "
            f"{exception.reason})"
        )
        hint = f"record passing evidence before {exception.until}, then remove the exception"
    elif exception is not None:
        notes = ((f"growthException expired on {exception.until}; ignored", exception.origin.at()),)
    return Diagnostic(
        "capacity-evidence", message, _size_line(pool), notes=notes, hint=hint, severity=severity
    )


@rule("capacity-evidence")
def capacity_evidence(p: Platform) -> Iterator[Diagnostic]:
    """A pool may grow (more nodes, a higher nodes.max, a new pool) only on passing acceptance
    evidence: acceptance/<cluster>/<pool>.yaml with verdict pass, finished within the cluster's
    evidenceMaxAgeDays, measured on the pool's accelerator, driver (spec.image.driver when
    declared) and productionImage (its digest when the reference pins one), covering every node
    the pool had before the change. On production clusters growth without it is an error; on
    staging and development clusters a warning. When git cannot tell the base, a warning.

    Buying capacity before proving data movement, checkpoints and the fabric on the pool is the
    costliest mistake on a GPU platform: forty nodes added to a pool whose four were never
    tested, or were tested in another image, inherit every fault nobody measured. The gate
    reads only growth: a pool that stays its size is never refused for old evidence.

    To satisfy it: run the acceptance suite on the pool in its productionImage and record the
    results with `gpuplane acceptance record RESULTS…`, committing acceptance/<cluster>/<pool>.yaml
    in the same pull request; declare `spec.productionImage` on a pool that has none. To grow
    before the evidence passes, the platform team declares `spec.growthException` with `by`,
    `reason` and `until: YYYY-MM-DD` (UTC, inclusive): the error becomes a warning naming them;
    an expired exception is ignored, and one on a pool that does not grow is reported as stale.
    `$GPUPLANE_TODAY=YYYY-MM-DD` judges as on that day (docs/capacity-gate.md)."""
    if p.base_sizes is None:
        return
    day = p.base_sizes.today
    if isinstance(day, str):
        yield error(
            "capacity-evidence",
            day,
            Location("."),
            hint="set GPUPLANE_TODAY to a day such as 2026-01-31, or unset it",
        )
        return
    for pool in p.pools.values():
        cluster = p.clusters.get(pool.cluster)
        if cluster is None:
            continue
        if not p.base_sizes.knows(pool.name):
            yield from _unknown_base(p, pool, cluster, day)
            continue
        growth = Growth(pool, p.base_sizes.base_of(pool.name))
        if not growth.grows:
            yield from _stale_exception(pool)
            continue
        missing = missing_pieces(p, growth, cluster, day)
        if missing:
            yield _growth_finding(growth, cluster, missing, day)


def _unknown_base(
    p: Platform, pool: Pool, cluster: Cluster, day: datetime.date
) -> Iterator[Diagnostic]:
    """Git could not tell the pool's size at the base: a warning when its evidence would not
    let it grow at its current size (a pool proven at that size could grow anyway)."""
    assert p.base_sizes is not None
    missing = missing_pieces(p, Growth(pool, pool.size), cluster, day)
    if not missing:
        return
    why = p.base_sizes.unknown or "its file at the base is not a readable pool"
    yield Diagnostic(
        "capacity-evidence",
        f"could not tell whether pool {pool.name} grows ({why}); if it does, it lacks: "
        + "; ".join(missing),
        _size_line(pool),
        hint="fetch the base branch with its history (actions/checkout fetch-depth: 0), or "
        + _hint(pool),
        severity=Severity.WARNING,
    )


def _stale_exception(pool: Pool) -> Iterator[Diagnostic]:
    exception = pool.growth_exception
    if exception is None:
        return
    yield Diagnostic(
        "capacity-evidence",
        f"pool {pool.name} does not grow in this change; its growthException "
        f"({exception.by}, until {exception.until}) is stale",
        exception.origin.at(),
        hint="remove spec.growthException: an exception is declared with the growth it allows",
        severity=Severity.WARNING,
    )


@rule("evidence-place")
def evidence_place(p: Platform) -> Iterator[Diagnostic]:
    """An evidence file must sit at acceptance/<cluster>/<pool>.yaml: its folder a declared
    cluster, its name a pool of that cluster, and its spec.cluster the folder's name.

    The capacity gate finds a pool's evidence by its path; a file in the wrong folder, or named
    after a pool that does not exist there, proves nothing and would let a reviewer believe a
    pool was tested.

    To satisfy it: move the file to acceptance/<spec.cluster>/<pool>.yaml where the pool's
    `spec.cluster` names that cluster, or delete evidence of a pool or cluster that was removed
    (record it again with `gpuplane acceptance record` rather than editing it by hand)."""
    for (folder, name), evidence in sorted(p.evidence.items()):
        if folder not in p.clusters:
            yield error(
                "evidence-place",
                f"acceptance/{folder}/ is not a declared cluster",
                Location(evidence.file),
                hint=did_you_mean(folder, p.clusters)
                or "move the file under acceptance/<cluster>/, or delete it",
            )
            continue
        pool = p.pools.get(name)
        if pool is not None and pool.cluster != folder:
            yield error(
                "evidence-place",
                f"pool {name} belongs to cluster {pool.cluster}, not {folder}",
                evidence.at("metadata", "name"),
                hint=f"move the file to acceptance/{pool.cluster}/{name}.yaml",
            )
        elif pool is None:
            ours = [n for n, q in p.pools.items() if q.cluster == folder]
            yield error(
                "evidence-place",
                f"'{name}' is not a pool of cluster {folder}",
                evidence.at("metadata", "name"),
                hint=did_you_mean(name, ours)
                or "delete the evidence of a pool that no longer exists",
            )
        elif evidence.cluster != folder:
            yield error(
                "evidence-place",
                f"spec.cluster is '{evidence.cluster}' but the file sits in acceptance/{folder}/",
                evidence.at("spec", "cluster"),
                hint=f"record the evidence again for cluster {folder}",
            )
