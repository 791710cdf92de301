"""Policy on production images: the images the acceptance suite runs its torch probes in.

A pool's `spec.productionImage` and a team namespace's `productionImage` run in the suite's
Jobs namespace (`gpuplane-acceptance-jobs`), which no team's image policy covers: only the
suite's service account creates pods there. So the repository's own allowlist is the only
check on them: each must be an image gpuplane.yaml's `spec.allowlists.images` allows, compared
as the container runtime resolves names (`renderer.model.images`), and a namespace's must also
be one its own team may run (the team's `spec.images`), so the suite never runs for a team an
image its namespaces would refuse.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from renderer.findings.diagnostics import Diagnostic
from renderer.model.images import parse_prefix
from renderer.model.platform import Platform
from renderer.policy.allowlists import SHOWN
from renderer.policy.rule import error, rule


def _allowed(prefixes: Sequence[str], image: str) -> bool:
    parsed = (parse_prefix(text) for text in prefixes)
    return any(prefix is not None and prefix.allows(image) for prefix in parsed)


def _named(items: Sequence[str]) -> str:
    shown = "; ".join(items[:SHOWN])
    more = len(items) - SHOWN
    return (shown or "nothing") + (f" and {more} more" if more > 0 else "")


@rule("production-image-not-allowed")
def production_image_allowed(p: Platform) -> Iterator[Diagnostic]:
    """A production image must be one the repository's image allowlist admits.

    The acceptance suite runs its torch probes inside each pool's `spec.productionImage`, and
    the weekly run inside each team namespace's own `productionImage`, in the Jobs namespace
    `gpuplane-acceptance-jobs`, where no team's image policy applies. An image from a registry
    nobody on the platform controls would run there with the pool's GPUs and the suite's
    object-store credentials. So every production image must be allowed by gpuplane.yaml's
    `spec.allowlists.images` (compared as the container runtime resolves names: `docker.io`,
    `index.docker.io` alike, paths at a `/` boundary), and a namespace's by its team's own
    `spec.images` too.

    To satisfy it: set `spec.productionImage` of the pool file (or `productionImage` of the
    team's namespace) to an image under one of gpuplane.yaml's `spec.allowlists.images` entries
    (with `registry.example.com/` allowed: `registry.example.com/base/pytorch-train:2026.11`)
    and, for a namespace, under one of its team's `spec.images` prefixes; or have the platform
    team add the registry path to the allowlist.
    """
    allowlist = list(p.repository.allowed_images) if p.repository is not None else []
    hint = (
        f"use an image under one of the registry paths gpuplane.yaml allows "
        f"(spec.allowlists.images): {_named(allowlist)}. Or have the platform team add its "
        "registry path there"
    )
    for name in sorted(p.pools):
        pool = p.pools[name]
        image = pool.production_image
        if image is not None and not _allowed(allowlist, image):
            yield error(
                "production-image-not-allowed",
                f"pool '{name}' names production image '{image}', which no entry of "
                "gpuplane.yaml's spec.allowlists.images allows",
                pool.origin.at("spec", "productionImage"),
                hint,
            )
    for name in sorted(p.teams):
        team = p.teams[name]
        for ns in team.namespaces:
            image = ns.production_image
            if image is None:
                continue
            if not _allowed(allowlist, image):
                yield error(
                    "production-image-not-allowed",
                    f"namespace '{ns.name}' of team '{name}' names production image '{image}', "
                    "which no entry of gpuplane.yaml's spec.allowlists.images allows",
                    ns.origin.at("productionImage"),
                    hint,
                )
            elif not _allowed(team.images, image):
                yield error(
                    "production-image-not-allowed",
                    f"namespace '{ns.name}' of team '{name}' names production image '{image}', "
                    f"which the team's own spec.images ({_named(list(team.images))}) does not "
                    "allow",
                    ns.origin.at("productionImage"),
                    f"use an image under one of team {name}'s spec.images prefixes, or add its "
                    "registry path there",
                )
