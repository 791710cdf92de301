"""`gpuplane render`: every cluster rendered, checked and laid out as files, the clusters in
worker processes, each compared with its own folder of `rendered/`.

A cluster's objects depend on the platform and on nothing another cluster renders, so the
clusters are independent pieces of work: after the inputs are loaded and the policy has run
(once, here), each worker forks from this process with the platform, the output validator and
the committed tree already in memory, renders and checks its clusters, dumps their files and
compares them with `rendered/<cluster>/` on disk, and sends back only what the parent needs:
findings, counts, which files differ and, when the tree will be written, the files' bytes. The
parent merges the findings in cluster order (`pipeline.merge_findings`), so the output and the
report are the same bytes whatever the number of workers (tests/test_render_jobs.py).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from renderer.commands.render_context import RenderContext
from renderer.commands.render_index import ClusterRecord, RenderIndex
from renderer.commands.workers import can_fork, forked_map
from renderer.findings.diagnostics import Diagnostic, has_errors, sort_diagnostics
from renderer.layers import workflows as suites
from renderer.model import platform as model
from renderer.output import crds
from renderer.output.reuse import CheckMemo, made_of_files
from renderer.output.transitions import CommittedTree
from renderer.output.validation import OutputValidator
from renderer.output.writer import (
    Staleness,
    Stat,
    TreeListing,
    build_files,
    compare_listed,
    tree_stats,
)
from renderer.pipeline import (
    ClusterOutcome,
    InputCache,
    Loaded,
    check_cluster,
    cluster_readme_of,
    import_layers,
    input_files,
    load_checked,
    load_platform,
    merge_findings,
    prepare,
)
from renderer.policy.check import check_policy

__all__ = ["RenderedTree", "default_jobs", "render_tree", "restat"]


@dataclass(frozen=True, slots=True)
class RenderedTree:
    """What `render` and `render --check` need: the findings, the counts, how `rendered/`
    differs from what the inputs render, and (when asked for) every file's bytes."""

    platform: model.Platform
    inputs: int
    clusters: int
    objects: int
    files: Mapping[str, bytes | None] | None
    """Every file under `rendered/`, sorted; None when not asked for or not rendered. A file
    of a cluster taken from the index is None: it is on disk as it should be."""
    file_count: int
    staleness: Staleness | None
    """None when nothing was rendered (findings before the layers)."""
    diagnostics: list[Diagnostic]
    reused: tuple[str, ...] = ()
    """The clusters taken from the render index, not rendered again."""


@dataclass(frozen=True, slots=True)
class _ClusterFiles:
    outcome: ClusterOutcome
    """Without its objects, which stay in the worker."""
    objects: int
    files: dict[str, bytes | None] | None
    """None for a file known to be on disk as rendered."""
    file_count: int
    staleness: Staleness
    digests: dict[str, bytes]
    stats: dict[str, Stat | None]
    """The stat of each file that holds on disk what was rendered."""
    made_of: dict[str, bytes]
    """Each object file's `body_key` and source file (`ClusterRecord.files`)."""
    checks: bytes
    """The objects' checks, by body, pickled for the index (`CheckMemo.now`)."""
    suites: dict[bytes, bytes]
    """The suite objects the cluster's workflows layer used (`layers.workflows.USED`)."""


@dataclass(frozen=True, slots=True)
class _Work:
    platform: model.Platform
    validator: OutputValidator
    previous: CommittedTree | None
    target: Path
    keep_files: bool
    on_disk: Mapping[str, Mapping[str, Stat | None]]
    """Each file of `target` with its stat, by top folder (`_on_disk`)."""
    records: Mapping[str, ClusterRecord]
    """What each cluster rendered last time, for its objects that did not change."""
    contexts: Mapping[str, bytes]
    """`RenderIndex.contexts`: empty when the index is off (then nothing is reused)."""
    readme_here: bool = False
    """The cluster READMEs are written by this process, not the workers (`_readme_here`)."""


def default_jobs() -> int:
    """One worker per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def render_tree(root: Path, target: Path, context: RenderContext) -> RenderedTree:
    """Load, check, render and validate the platform at `root`, and compare each cluster's files
    with `target` (`rendered/`), with `context`'s validator, caches and options: `keep_files`
    brings every file's bytes back, to write them; `jobs` worker processes (1 renders here, one
    cluster after the other); `on_cluster` is told each cluster's name when it is done. A
    cluster whose key and files are as the `index` recorded is taken from it
    (`render_index`), and the index is brought up to date here (the caller saves it).
    `listing`: `target` listed with its stats, started by the caller before it loads anything
    (else listed here)."""
    index = context.index if context.index is not None else RenderIndex.disabled()
    inputs = index.input_cache()
    inputs = inputs if inputs is not None else {}
    _load_in_workers(root, inputs, context.jobs, context.validator)
    loaded = load_platform(root, changed=context.changed, inputs=inputs, policy=False)
    diagnostics = list(loaded.diagnostics)
    if has_errors(diagnostics):
        return _nothing(loaded, [*diagnostics, *check_policy(loaded.platform)])
    validator, missing = prepare(root, loaded.platform, context.validator)
    if missing:
        return _nothing(loaded, [*diagnostics, *check_policy(loaded.platform), *missing])
    names = sorted(loaded.platform.clusters)
    keys = index.keys(root, loaded, context.previous) if index.path is not None else {}
    disk = _on_disk(target, context.previous, context.listing)
    work = _Work(
        loaded.platform,
        validator,
        context.previous,
        target,
        context.keep_files,
        disk,
        index.clusters,
        index.contexts,
    )
    reused = _reused(index, names, keys, target, disk)
    todo = [n for n in names if n not in reused]
    work = replace(work, readme_here=_readme_here(todo, context.jobs))
    # the clusters render in the workers while the policy runs here; an error drops them
    with _clusters_started(work, todo, context.jobs) as results:
        diagnostics.extend(index.policy_findings(loaded, check_policy))
        if has_errors(diagnostics):
            return _nothing(loaded, diagnostics)
        readmes = {n: cluster_readme_of(work.platform, n) for n in todo if work.readme_here}
        done = _gathered(results, reused, context.on_cluster)
    done = [_with_readme(work, r, readmes[r.outcome.name]) if readmes else r for r in done]
    outcomes = [*(r.outcome for r in done), *(r.outcome for r in reused.values())]
    diagnostics.extend(merge_findings(outcomes, validator))
    _record(index, names, keys, done)
    return RenderedTree(
        loaded.platform,
        loaded.files,
        len(names),
        sum(r.objects for r in done) + sum(r.objects for r in reused.values()),
        _files(done, reused) if context.keep_files else None,
        sum(r.file_count for r in done) + sum(len(r.files) for r in reused.values()),
        _staleness(done, disk, names),
        sort_diagnostics(diagnostics),
        tuple(sorted(reused)),
    )


def _nothing(loaded: Loaded, found: list[Diagnostic]) -> RenderedTree:
    """Nothing rendered: the findings (before the layers) and the inputs counted."""
    return RenderedTree(loaded.platform, loaded.files, 0, 0, None, 0, None, sort_diagnostics(found))


def _reused(
    index: RenderIndex,
    names: list[str],
    keys: Mapping[str, bytes],
    target: Path,
    disk: Mapping[str, Mapping[str, Stat | None]],
) -> dict[str, ClusterRecord]:
    """The clusters of `names` the index holds as they would render now, in order: their key
    (`keys`, each cluster the index may take) and their files on disk are as recorded."""
    reused: dict[str, ClusterRecord] = {}
    for name in names:
        below = disk.get(name, {})
        record = index.current(name, keys[name], target, below) if name in keys else None
        if record is not None:
            reused[name] = record
    return reused


def _gathered(
    results: Iterator[_ClusterFiles],
    reused: Mapping[str, ClusterRecord],
    on_cluster: Callable[[str], None] | None,
) -> list[_ClusterFiles]:
    """Every cluster's result in name order, once all are done; `on_cluster` is told the
    reused ones first, then each other as it is done."""
    done = []
    for name in reused:
        if on_cluster is not None:
            on_cluster(name)
    for result in results:
        if on_cluster is not None:
            on_cluster(result.outcome.name)
        done.append(result)
    done.sort(key=lambda r: r.outcome.name)
    return done


def _staleness(
    done: list[_ClusterFiles], disk: Mapping[str, Mapping[str, Stat | None]], names: list[str]
) -> Staleness:
    """How `rendered/` differs from the rendered clusters (a reused one is as it should be), a
    file beside the clusters' folders or in a removed cluster's being extra."""
    known = set(names)
    outside = [p for folder, below in disk.items() if folder not in known for p in below]
    return Staleness(
        missing=tuple(sorted(p for r in done for p in r.staleness.missing)),
        extra=tuple(sorted([*outside, *(p for r in done for p in r.staleness.extra)])),
        changed=tuple(sorted(p for r in done for p in r.staleness.changed)),
    )


def _files(
    done: list[_ClusterFiles], reused: Mapping[str, ClusterRecord]
) -> dict[str, bytes | None]:
    """Every file's bytes, sorted by path; None for a reused cluster's (on disk as it is)."""
    every: list[tuple[str, bytes | None]] = [
        (p, b) for r in done if r.files is not None for p, b in r.files.items()
    ]
    every.extend((p, None) for record in reused.values() for p in record.files)
    return dict(sorted(every))


def _record(
    index: RenderIndex, names: list[str], keys: Mapping[str, bytes], done: list[_ClusterFiles]
) -> None:
    """The index brought up to date: a removed cluster dropped, each rendered one that has a
    key recorded as rendered now."""
    index.clusters = {n: index.clusters[n] for n in names if n in index.clusters}
    for result in done:
        name = result.outcome.name
        if name in keys:
            index.clusters[name] = ClusterRecord(
                keys[name],
                result.outcome,
                result.objects,
                {
                    p: (d, result.stats.get(p), result.made_of.get(p))
                    for p, d in result.digests.items()
                },
                index.contexts[name],
                result.checks,
                result.suites,
                index.slices[name],
                index.previous[name],
            )


def _on_disk(
    target: Path, previous: CommittedTree | None, listing: TreeListing | None
) -> dict[str, dict[str, Stat | None]]:
    """Every file of `target` with its stat, by top folder ("" for a file beside them), from
    one walk: the committed tree's when it is this tree on disk (outside git), else
    `listing`'s when it lists `target`."""
    if previous is not None and previous.folder == target and previous.disk is not None:
        listed: Mapping[str, Stat | None] = previous.disk
    elif listing is not None and listing.folder == target:
        listed = listing.stats()
    else:
        listed = tree_stats(target)
    grouped: dict[str, dict[str, Stat | None]] = {}
    for path, stat in listed.items():
        folder, slash, _ = path.partition("/")
        grouped.setdefault(folder if slash else "", {})[path] = stat
    return grouped


def restat(index: RenderIndex, target: Path) -> None:
    """After `rendered/` was written: each recorded file's stat as it is now (a written file is
    a new inode; a kept one was linked into the new tree, which changes its ctime)."""
    index.restat(target)


@contextlib.contextmanager
def _clusters_started(
    work: _Work, names: list[str], jobs: int
) -> Iterator[Iterator[_ClusterFiles]]:
    """Each cluster's result, as it is done: with one job rendered here when asked for, else
    started now in forked workers (even for one cluster: this process goes on with the policy
    meanwhile), the clusters with the most teams first so that no worker is left with a large
    one at the end; leaving the block stops them."""
    if jobs <= 1 or not names or not can_fork():
        yield (_render_one(work, name) for name in names)
        return
    weight = dict.fromkeys(names, 0)
    for team in work.platform.teams.values():
        for namespace in team.namespaces:
            if namespace.cluster in weight:
                weight[namespace.cluster] += 1
    ordered = sorted(names, key=lambda n: (-weight[n], n))
    job = functools.partial(_render_one, work)
    with forked_map(
        job, ordered, jobs, describe=lambda n: f"cluster {n}", advice=LESS_MEMORY
    ) as results:
        yield results


LESS_MEMORY = "--jobs 1 needs less"
"""What a user whose worker was killed (for memory, most likely) can do."""


PARALLEL_LOAD_FROM = 200
"""Fewer input files to load than this are loaded in this process: forking costs more."""


def _load_in_workers(root: Path, inputs: InputCache, jobs: int, validator: OutputValidator) -> None:
    """Load the input files `inputs` holds under no version yet in `jobs` worker processes, each a
    share, into `inputs` (pickled, as the cache keeps them); `load_platform` then reads them
    from there, in order, and reports as if it had loaded them itself. The workers then parse
    the CRD files given on the command line that the disk cache does not hold (seconds of YAML
    on a clean machine, as CI's), the largest first; meanwhile this process imports the layers,
    which each cluster worker would otherwise do first, and then takes their CRDs. A CRD file
    parsed ahead is only remembered (`OutputValidator.parse_ahead`): which files a render
    parses, and so which broken one it reports, stays the lookups' choice."""
    # by name, without reading: a file the cache holds other bytes of is load_platform's to load
    known = {display for display, _ in inputs}
    todo = [f for f in input_files(root) if f[1] not in known]
    workers = min(jobs, len(todo) // (PARALLEL_LOAD_FROM // 2))
    if workers <= 1 or not can_fork():
        return
    slow = validator.slow_crds()
    raw_of = dict(slow)
    items: list[_LoadItem] = [*(todo[i::workers] for i in range(workers)), *slow]
    with forked_map(_load_item, items, workers, describe=_item_name, advice=LESS_MEMORY) as loading:
        import_layers()
        if not slow:
            validator.parse_ahead()
        for loaded in loading:
            if isinstance(loaded, dict):
                inputs.update(loaded)
            elif loaded[1] is not None:  # a broken file is left to the lookup that meets it
                crds.adopt(loaded[0], raw_of[loaded[0]], loaded[1])
    if slow:
        validator.parse_ahead()  # those from the disk cache; the workers' are parsed


_LoadItem = list[tuple[Path, str, str]] | tuple[Path, bytes]
"""A share of the input files, or a CRD file and its bytes."""


def _item_name(item: _LoadItem) -> str:
    if isinstance(item, tuple):
        return f"parsing CRD file {item[0]}"
    return f"loading {len(item)} input files from {item[0][1]}"


def _load_item(
    item: _LoadItem,
) -> dict[tuple[str, bytes], bytes] | tuple[Path, tuple[crds.Crd, ...] | None]:
    if isinstance(item, tuple):
        return item[0], crds.parsed_ahead(*item)
    return _load_share(item)


def _load_share(share: list[tuple[Path, str, str]]) -> dict[tuple[str, bytes], bytes]:
    loaded: dict[tuple[str, bytes], bytes] = {}
    for entry, display, folder in share:
        load_checked(entry, display, folder, loaded)
    return loaded


def _readme_here(todo: list[str], jobs: int) -> bool:
    """Whether this process writes the READMEs of the clusters to render: when fewer than the
    workers, it would otherwise wait on them once the policy is done (a one-team change: the
    README is a tenth of the changed cluster's worker)."""
    return 0 < len(todo) < jobs and jobs > 1 and can_fork()


def _with_readme(work: _Work, result: _ClusterFiles, text: str) -> _ClusterFiles:
    """A worker's result with the cluster README this process wrote, compared with the one on
    disk and recorded as the worker records its files."""
    name = result.outcome.name
    path = f"{name}/README.md"
    data = text.encode("utf-8")
    listed = work.on_disk.get(name, {})
    compared = compare_listed(
        work.target, {path: listed[path]} if path in listed else {}, {path: data}
    )
    staleness = Staleness(
        missing=tuple(sorted({*result.staleness.missing, *compared.missing})),
        extra=result.staleness.extra,
        changed=tuple(sorted({*result.staleness.changed, *compared.changed})),
    )
    recorded = work.contexts.get(name) is not None
    differs = bool(compared.missing or compared.changed)
    return replace(
        result,
        outcome=replace(result.outcome, readme=text),
        files=None if result.files is None else {**result.files, path: data},
        file_count=result.file_count + 1,
        staleness=staleness,
        digests={**result.digests, path: hashlib.sha256(data).digest()} if recorded else {},
        stats={**result.stats, path: None if differs else listed.get(path)} if recorded else {},
    )


def _render_one(work: _Work, name: str) -> _ClusterFiles:
    """Render and check one cluster, and compare its files with `rendered/<name>/`. With the
    index, an object whose body did not change since the last render keeps its check, and its
    file, when the file on disk is still the one recorded, is neither dumped nor read."""
    context = work.contexts.get(name)
    record = work.records.get(name)
    memo = None
    if context is not None:
        checks = record.checks if record is not None and record.context == context else b""
        memo = CheckMemo(pickle.loads(checks) if checks else {})
        suites.COMPILED.update(record.suites if record is not None else {})
    suites.USED.clear()
    outcome = check_cluster(
        work.platform, name, work.validator, work.previous, memo, readme=not work.readme_here
    )
    listed = work.on_disk.get(name, {})
    if work.readme_here:  # compared and recorded by the caller (`_with_readme`)
        listed = {p: s for p, s in listed.items() if p != f"{name}/README.md"}
    made_of = (
        made_of_files(name, outcome.manifests, outcome.keys, outcome.values, outcome.value_keys)
        if memo is not None
        else {}
    )
    recorded = record.files if record is not None else {}
    unchanged = set()
    for path, made in made_of.items():
        entry = recorded.get(path)
        stat = entry[1] if entry is not None and entry[2] == made else None
        if stat is not None and listed.get(path) == stat:
            unchanged.add(path)
    readmes = {} if work.readme_here else {name: outcome.readme}
    files = build_files({name: outcome.manifests}, readmes, {name: outcome.values}, unchanged)
    staleness = compare_listed(work.target, listed, files)
    differ = {*staleness.missing, *staleness.changed}
    # what the index records of each file: nothing to record without it
    digests = (
        {p: recorded[p][0] if b is None else hashlib.sha256(b).digest() for p, b in files.items()}
        if memo is not None
        else {}
    )
    stats = {p: None if p in differ else listed.get(p) for p in files} if memo is not None else {}
    return _ClusterFiles(
        replace(outcome, manifests=(), values=(), keys=(), value_keys=()),
        len(outcome.manifests),
        files if work.keep_files else None,
        len(files),
        staleness,
        digests,
        stats,
        made_of,
        pickle.dumps(memo.now, protocol=pickle.HIGHEST_PROTOCOL) if memo is not None else b"",
        dict(suites.USED) if memo is not None else {},
    )
