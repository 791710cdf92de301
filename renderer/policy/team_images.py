"""Policy on a team that can run no container: namespaces, but no image registries.

The security layer renders, for every team, a ValidatingAdmissionPolicy that lets a pod into the
team's namespaces only when each of its images lies under one of the team's `spec.images`
prefixes (`renderer.layers.security.images`). A team that lists none gets the policy with no
prefix, so the API server refuses every pod there; nothing in the platform says so until a user's
first `kubectl apply` meets "team ... declares no image registries". This rule says it at
`validate`, with the prefixes gpuplane.yaml allows as the hint.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.images import parse_prefix
from renderer.model.platform import Platform, Team
from renderer.policy.rule import rule


def suggested_prefix(p: Platform, team: str) -> str | None:
    """The prefix a team without images is told to write: the team's own folder under the
    first registry path gpuplane.yaml allows (`registry.example.com/vision/`), which lies
    within the allowlist by construction; None when the allowlist names no registry path."""
    allowed = p.repository.allowed_images if p.repository is not None else ()
    for text in allowed:
        if text.endswith("/") and parse_prefix(text) is not None:
            return f"{text}{team}/"
    return None


def runs_workloads(team: Team) -> bool:
    """The team asks for GPUs (an entry under `spec.gpus`) or serves a model (an endpoint):
    it means to run pods, so refusing all of them is a broken team, not a team being set up."""
    return bool(team.gpus) or any(ns.endpoints for ns in team.namespaces)


@rule("team-images-missing", scope="team")
def team_images_missing(p: Platform) -> Iterator[Diagnostic]:
    """A team with namespaces must list the image registries its pods come from (`spec.images`).

    Every team namespace gets a ValidatingAdmissionPolicy that admits a pod only when each of
    its images lies under one of the team's `spec.images` prefixes; with none listed it admits
    no pod at all, and the team learns it from the API server's refusal of its first job. The
    finding is an error when the team asks for GPUs (any `spec.gpus` entry) or serves an
    endpoint: such a team means to run pods, and none of them can start (`gpuplane fit` shows
    the same refusal). A team with neither is a warning: its namespaces may be being set up
    (RBAC, secrets) before its workloads come, but every pod is refused there too. A platform
    whose gpuplane.yaml allows no registry at all (or that has no gpuplane.yaml) gets no finding
    per team: no team could list one (rule image-prefix-not-allowed refuses every prefix), and
    the platform team chose that (docs/security.md).

    To satisfy it: add `images:` to the team file's `spec` with the registry paths its images
    come from, each within one of gpuplane.yaml's `spec.allowlists.images` entries (with
    `registry.example.com/` allowed: `images: [registry.example.com/vision/]`); the hint names
    the prefix to write.
    """
    if p.repository is None or not p.repository.allowed_images:
        return  # no team could list a registry: the platform's choice, not a team's slip
    for name in sorted(p.teams):
        team = p.teams[name]
        if team.images or not team.namespaces:
            continue
        prefix = suggested_prefix(p, name)
        hint = (
            f"add to spec of teams/{name}.yaml: images: [{prefix}] (a path within "
            "gpuplane.yaml's spec.allowlists.images; list each registry path the team's "
            "images come from)"
            if prefix is not None
            else "add to spec of the team file: images: [...], the registry paths the team's "
            "images come from, each within gpuplane.yaml's spec.allowlists.images"
        )
        yield Diagnostic(
            "team-images-missing",
            f"team '{name}' lists no image registries (spec.images): every pod in its "
            f"namespaces ({', '.join(ns.name for ns in team.namespaces)}) is refused",
            team.origin.key("spec", "namespaces"),
            hint=hint,
            severity=Severity.ERROR if runs_workloads(team) else Severity.WARNING,
        )
