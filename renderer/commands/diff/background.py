"""The base revision's share of `gpuplane diff`, in a forked worker while this process renders
the head: its policy, and the clusters whose slice the change altered (the others render the
same as the head's, which lends them its outcomes). The worker sends back findings and files,
never objects: the base's objects are compared as files, and only the head's meet the
committed tree's transition rules.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from renderer.commands.diff.revision import Revision, cluster_files, revision_of
from renderer.commands.workers import can_fork, forked_map
from renderer.findings.diagnostics import Diagnostic, has_errors, sort_diagnostics
from renderer.output.manifest import Manifest, Values
from renderer.output.reuse import CheckMemo, body_key, made_of_files
from renderer.output.validation import OutputValidator
from renderer.output.writer import build_files
from renderer.pipeline import (
    ClusterOutcome,
    Loaded,
    Rendered,
    check_cluster,
    prepare,
    rendered_from,
)
from renderer.policy.check import check_policy

MemoOf = Callable[[Path, Loaded, str], CheckMemo | None]


@dataclass(frozen=True, slots=True)
class BasePart:
    """What the worker found of the base: the policy's findings; why its CRD sources cannot
    be used; and, when it got to the layers, each cluster it rendered (without objects) with
    its files."""

    policy: list[Diagnostic]
    missing: list[Diagnostic]
    rendered: bool
    outcomes: dict[str, ClusterOutcome]
    files: dict[str, dict[str, bytes]]
    made_of: dict[str, dict[str, bytes]]
    """Each file's `made_of_files` entry, by cluster: the head's file made of the same is the
    same bytes, and is not dumped again (`head_tree`)."""


def base_part(
    root: Path,
    validator: OutputValidator,
    loaded: Loaded,
    lent: frozenset[str],
    memo_of: MemoOf | None,
) -> BasePart:
    """The base's policy and every cluster not in `lent` (those the head lends), as
    `render_platform` would render them: nothing when the inputs or the policy have errors or
    a CRD source cannot be used."""
    policy = check_policy(loaded.platform)
    if has_errors([*loaded.diagnostics, *policy]):
        return BasePart(policy, [], False, {}, {}, {})
    validator, missing = prepare(root, loaded.platform, validator)
    if missing:
        return BasePart(policy, missing, False, {}, {}, {})
    outcomes: dict[str, ClusterOutcome] = {}
    files: dict[str, dict[str, bytes]] = {}
    made: dict[str, dict[str, bytes]] = {}
    for name in sorted(loaded.platform.clusters):
        if name in lent:
            continue
        memo = memo_of(root, loaded, name) if memo_of is not None else None
        outcome = check_cluster(loaded.platform, name, validator, None, memo)
        files[name] = cluster_files(name, outcome.manifests, outcome.values, outcome.readme)
        made[name] = _made_of(name, outcome.manifests, outcome.values, outcome.keys)
        outcomes[name] = replace(outcome, manifests=(), values=(), keys=(), value_keys=())
    return BasePart(policy, [], True, outcomes, files, made)


def _made_of(
    name: str,
    manifests: tuple[Manifest, ...],
    values: tuple[Values, ...],
    keys: tuple[bytes | None, ...] = (),
) -> dict[str, bytes]:
    """`made_of_files` of one cluster, its objects' keys worked out when not given."""
    if len(keys) != len(manifests):
        keys = tuple(body_key(m.body) for m in manifests)
    return made_of_files(name, manifests, keys, values)


def head_tree(
    rendered: Rendered,
    part: BasePart,
    left_out: frozenset[str],
    keys: Mapping[str, tuple[bytes | None, ...]],
) -> dict[str, bytes]:
    """The head's files of every cluster not `left_out`: a file made of what the base's file
    of the same path is made of is the base's bytes, the others are dumped. `keys`: each
    cluster's objects' `body_key`s where its check worked them out (`ClusterOutcome.keys`)."""
    tree: dict[str, bytes] = {}
    for name in sorted(rendered.manifests.keys() - left_out):
        manifests, values = rendered.manifests[name], rendered.values.get(name, ())
        base_made, base_files = part.made_of.get(name, {}), part.files.get(name, {})
        made = _made_of(name, manifests, values, keys.get(name, ()))
        same = {path for path, of in made.items() if base_made.get(path) == of}
        readme = rendered.readmes.get(name)
        built = build_files(
            {name: manifests}, {name: readme} if readme is not None else {}, {name: values}, same
        )
        tree.update((p, base_files[p] if b is None else b) for p, b in built.items())
    return dict(sorted(tree.items()))


def base_revision(
    part: BasePart,
    loaded: Loaded,
    lent: Mapping[str, ClusterOutcome],
    validator: OutputValidator,
    label: str,
    commit: str | None,
    *,
    taken: frozenset[str],
) -> Revision:
    """The base's `Revision` from the worker's part and the outcomes the head lent, as
    `revision.render` would have made it. The clusters lent are the same on both sides: their
    files are left out of its tree, as out of the head's (`revision_of`'s `untreed`)."""
    loaded = replace(loaded, diagnostics=sort_diagnostics([*loaded.diagnostics, *part.policy]))
    if not part.rendered:
        found = loaded.diagnostics if not part.missing else [*loaded.diagnostics, *part.missing]
        rendered = Rendered(loaded.platform, {}, {}, {}, loaded.files, found)
    else:
        outcomes = [
            part.outcomes[name] if name in part.outcomes else lent[name]
            for name in sorted(loaded.platform.clusters)
        ]
        rendered = rendered_from(loaded, outcomes, validator)
    untreed = frozenset(lent)
    return revision_of(rendered, label, commit, taken=taken, untreed=untreed, files_of=part.files)


@contextlib.contextmanager
def in_background(job: Callable[[], BasePart], *, fork: bool) -> Iterator[Callable[[], BasePart]]:
    """`job` started in a forked worker (with `fork`, where the platform can fork), else run
    here when first asked for; yields how to get its result, which raises what the job raised,
    or WorkerStopped when the worker died without one (never a wait that does not end).
    Leaving the block stops the worker. The worker starts with `job` (the platforms, the
    validator) in its memory, and only the result is pickled, back."""
    if not fork or not can_fork():
        yield job
        return
    taken: _Taken | None = None
    try:
        with forked_map(lambda _: job(), [None], 1, describe=lambda _: "the base revision") as done:
            taken = _Taken(done)
            yield taken.result
    finally:
        if taken is not None:  # the worker is stopped: the reader has its result or its end
            taken.join(READER_GRACE)


READER_GRACE = 10.0
"""Seconds to wait, once the worker is stopped, for the thread that read its pipe to end."""


class _Taken:
    """The worker's one result, taken from its pipe by a thread as soon as it is sent (the
    worker waits to send it until it is read): the worker then ends, and the memory of the
    base it rendered (a third of `diff`'s peak at 4x) goes back while this process is still
    rendering the head. `result()` waits for it and raises what taking it raised."""

    def __init__(self, results: Iterator[BasePart]) -> None:
        self._results = results
        self._value: list[BasePart] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._take, name="base-result", daemon=True)
        self._thread.start()

    def _take(self) -> None:
        try:
            self._value.append(next(self._results))
        except BaseException as error:  # raised again by `result`
            self._error = error

    def result(self) -> BasePart:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value[0]

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
