"""Policy on clean-up: how long a team may keep what its finished work leaves behind.

These rules change with the retention the platform can enforce (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic
from renderer.model.names import MAX_FINISHED_JOBS
from renderer.model.platform import Platform
from renderer.policy.rule import error, rule

_DURATION = re.compile(r"^([0-9]+)(s|m|h|d)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(text: str) -> int:
    """A schema-valid gpuplane duration (`48h`) in seconds."""
    match = _DURATION.match(text)
    assert match is not None, text  # the team schema's duration pattern
    return int(match.group(1)) * _SECONDS[match.group(2)]


@rule("retention-bounds", scope="team")
def finished_jobs_bounded(p: Platform) -> Iterator[Diagnostic]:
    """A team keeps finished Jobs for at least a minute and at most 30 days.

    `retention.finishedJobs` becomes the `ttlSecondsAfterFinished` the security layer's
    admission policy allows at most on the team's Jobs, JobSets and RayJobs. A finished Job keeps
    its pods, their logs and the volumes they hold; a year of them is storage, etcd objects and
    stale GPU claims the platform pays for, and `0s` would delete a failed Job before anyone
    reads why it failed.

    To satisfy it: set `spec.retention.finishedJobs` of the team file to a duration from `1m` to
    `30d`, e.g. `finishedJobs: 48h`, or remove it for the default of 7 days. Keep results that
    must live longer in the object store, not in finished Jobs.
    """
    limit = seconds(MAX_FINISHED_JOBS)
    for team in p.teams.values():
        value = team.retention.get("finishedJobs")
        if value is None:
            continue
        if not 60 <= seconds(str(value)) <= limit:
            yield error(
                "retention-bounds",
                f"team '{team.name}' keeps finished jobs for {value}; the platform allows 1m "
                f"to {MAX_FINISHED_JOBS}",
                team.origin.at("spec", "retention", "finishedJobs"),
                f"set finishedJobs to at most {MAX_FINISHED_JOBS}, e.g. 48h",
            )
