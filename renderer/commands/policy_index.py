"""The policy's findings kept between checks: all of them while no input changed, and after a
change to team files, those of every other team file.

A rule of scope `team` (`renderer.policy.rule.Scope`) finds in a team file what the file and
the files that are not team files say, and nothing of the other teams. So while no file that is
not a team file changed (`shared_key`), each unchanged team file's findings are the recorded
ones, and those of the changed ones (and every finding outside team files) are found again
from the platform with only the changed teams (`model.view.team_slice`). Rules of scope
`platform` run on the whole platform every time. tests/test_policy_scope.py holds every team
rule to its scope, and the incremental tests check that the report is the one a check without
the index gives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from renderer.findings.diagnostics import Diagnostic
from renderer.model import platform as model
from renderer.model.view import is_team_file, team_slice
from renderer.pipeline import Loaded
from renderer.policy.rule import Scope


class PolicyCheck(Protocol):
    """`renderer.policy.check.check_policy`: every rule's findings, or those of one scope."""

    def __call__(
        self, platform: model.Platform, scope: Scope | None = None
    ) -> list[Diagnostic]: ...


@dataclass(frozen=True, slots=True)
class TeamRecord:
    """The team rules' findings in each team file, as found from what `shared` hashes."""

    shared: bytes
    files: Mapping[str, tuple[bytes, tuple[Diagnostic, ...]]]
    """Each team file's key (`team_keys`) and the team rules' findings located in it."""


def changed_lines(platform: model.Platform, file: str) -> str:
    """The lines of `file` the change touched, as keys hash them."""
    if file not in platform.changed:
        return "-"
    lines = platform.changed[file]
    return "all" if lines is None else ",".join(map(str, sorted(lines)))


def policy_key(fingerprint: bytes, loaded: Loaded, *, teams: bool = True) -> bytes | None:
    """What the policy's findings are a function of: gpuplane (`fingerprint`), the path and
    bytes of every input file loaded (their SHA-256; the positions in findings are the bytes'),
    the objects whose files did not load (`broken`), the evidence files, and the lines the change
    touched in each file. Without `teams`, the team files are left out: what the team rules'
    findings outside a team's file depend on. None (never reused) when the platform holds the
    pools' sizes at a change's base, which git gives and no input file holds."""
    platform = loaded.platform
    if platform.base_sizes is not None:
        return None
    key = hashlib.sha256(fingerprint)
    key.update(f"\0policy\0{loaded.files}\0{teams}\0".encode())
    for file, digest in sorted(loaded.digests.items()):
        if teams or not is_team_file(file):
            key.update(f"\0file\0{file}\0{changed_lines(platform, file)}\0".encode())
            key.update(digest)
    for file in sorted(set(platform.changed) - set(loaded.digests)):
        key.update(f"\0changed\0{file}\0{changed_lines(platform, file)}\0".encode())
    for kind, name in sorted(platform.broken):
        key.update(f"\0broken\0{kind}\0{name}\0".encode())
    for folder, name in sorted(platform.evidence):
        key.update(f"\0evidence\0{folder}\0{name}\0".encode())
    return key.digest()


def team_keys(loaded: Loaded) -> dict[str, bytes]:
    """Each team file loaded, with what its team rules' findings are a function of besides the
    files that are not team files: its bytes and the lines the change touched in it."""
    platform = loaded.platform
    return {
        file: hashlib.sha256(digest + changed_lines(platform, file).encode()).digest()
        for file, digest in loaded.digests.items()
        if is_team_file(file)
    }


def scoped_findings(
    loaded: Loaded, check: PolicyCheck, fingerprint: bytes, record: TeamRecord | None
) -> tuple[list[Diagnostic], TeamRecord | None]:
    """Every rule's findings, the team rules' taken from `record` for each team file whose key
    is the recorded one (when the files that are not team files are as recorded); and the
    record of this platform's, for the next check."""
    platform = loaded.platform
    shared = policy_key(fingerprint, loaded, teams=False)
    keys = team_keys(loaded)
    if shared is None or record is None or record.shared != shared:
        found = check(platform, "team")
        stale = frozenset(keys)
        kept: dict[str, tuple[Diagnostic, ...]] = {}
    else:
        stale = frozenset(
            f for f, k in keys.items() if f not in record.files or record.files[f][0] != k
        )
        kept = {f: record.files[f][1] for f in keys if f not in stale}
        found = check(team_slice(platform, stale), "team")
    located: dict[str, list[Diagnostic]] = {f: [] for f in stale}
    for finding in found:
        if finding.at.file in located:
            located[finding.at.file].append(finding)
    every = [*check(platform, "platform"), *found, *(d for f in kept.values() for d in f)]
    if shared is None:
        return every, None
    files = {f: (keys[f], kept[f] if f in kept else tuple(located[f])) for f in sorted(keys)}
    return every, TeamRecord(shared, files)
