"""Images only from the team's registries: a ValidatingAdmissionPolicy per team.

Every container, init container and ephemeral container of a pod in the team's namespaces (and
of the pod templates of the workload kinds in `admission.POD_TEMPLATE_KINDS`) must name an image
that starts with one of the team's `images` prefixes. Ephemeral containers arrive through the
`pods/ephemeralcontainers` subresource (`kubectl debug`), which the policy matches too.

A prefix ends at a boundary: one that ends in `/` is matched as written; one that does not
(`registry.example.com/vision`) matches only that repository itself, followed by `/`, `:` or `@`,
so `registry.example.com/vision-evil/x` and `registry.example.com.evil.io/` never pass. Each
prefix is a CEL string literal built by `admission.cel_string`, so a quote or backslash in it
cannot end the literal. A team that declares no `images` gets the policy with no prefix: no
image is allowed in its namespaces until it lists its registries (the schema does not require
the field; an unset list allowing every image would be the opposite of what it says).
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.security.admission import (
    POD,
    all_containers,
    cel_string,
    every_pod_spec,
    pod_specs_variable,
    pod_template_kinds,
    policy_pair,
    resource_rules,
    spec_changed_condition,
    validating_policy,
)
from renderer.model.platform import Team
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest

BOUNDARIES = ("/", ":", "@")


def policy_name(team: Team) -> str:
    return f"gpuplane-images-{team.name}"


def prefix_test(prefix: str, image: str = "c.image") -> str:
    """CEL: `image` starts with `prefix` at a registry or path boundary."""
    if prefix.endswith("/"):
        return f"{image}.startsWith({cel_string(prefix)})"
    tests = [f"{image} == {cel_string(prefix)}"]
    tests += [f"{image}.startsWith({cel_string(prefix + b)})" for b in BOUNDARIES]
    return "(" + " || ".join(tests) + ")"


def image_allowed(prefixes: tuple[str, ...]) -> str:
    """CEL over a container `c`: its image comes from one of the prefixes (false for none)."""
    if not prefixes:
        return "false"
    return " || ".join(prefix_test(p) for p in prefixes)


def render(view: ClusterView) -> Iterator[Manifest]:
    for tenant in view.tenants:
        yield from _team_policy(view, tenant)


def _team_policy(view: ClusterView, tenant: Tenant) -> list[Manifest]:
    team = tenant.team
    kinds = pod_template_kinds(view)
    if team.images:
        listed = ", ".join(team.images)
        message = (
            f"team {team.name} may run images only from {listed}: use an image from one of them, "
            "or add its registry to spec.images of the team file"
        )
    else:
        message = (
            f"team {team.name} declares no image registries: list the prefixes its images come "
            "from in spec.images of the team file"
        )
    check = every_pod_spec(all_containers("s", image_allowed(team.images)))
    policy = validating_policy(
        policy_name(team),
        resource_rules(kinds, extra={POD.group: ("pods/ephemeralcontainers",)}),
        [{"expression": check, "message": message, "reason": "Forbidden"}],
        variables=[pod_specs_variable(kinds)],
        match_conditions=[spec_changed_condition()],
        team=team.name,
        cost_center=team.cost_center,
    )
    source = team.origin.at("spec", "images") if team.images else team.origin.location
    return policy_pair(policy, [ns.name for ns in tenant.namespaces], source)
