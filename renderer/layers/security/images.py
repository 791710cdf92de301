"""Images only from the team's registries: a ValidatingAdmissionPolicy per team.

Every container, init container and ephemeral container of a pod in the team's namespaces (and
of the pod templates of the workload kinds in `admission.POD_TEMPLATE_KINDS`) must name an image
that one of the team's `images` prefixes allows. Ephemeral containers arrive through the
`pods/ephemeralcontainers` subresource (`kubectl debug`), which the policy matches too.

The policy compares names as the container runtime resolves them, through the regular
expressions `renderer.model.images.spellings` builds from the same parse the policy stage
uses: `nginx:1.27` is `docker.io/library/nginx:1.27`, `INDEX.DOCKER.IO:443/library/nginx` is
too; a prefix ending in `/` allows the repositories under it at a path boundary
(`registry.example.com/vision/` never allows `registry.example.com/vision-evil/x` or
`registry.example.com.evil.io/`); a prefix that pins a tag allows that tag only without a
digest, since the runtime pulls `name:tag@digest` by its digest and ignores the tag; a prefix
that pins a digest allows that digest with any tag. Each regular expression is a CEL string
literal built by `admission.cel_string`, so a quote or backslash cannot end it, and the length
is checked first (`MAX_REFERENCE`), so the CEL cost stays bounded. A team that declares no
`images` gets the policy with no prefix: no image is allowed in its namespaces until it lists
its registries (the schema does not require the field; an unset list allowing every image would
be the opposite of what it says).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from renderer.layers.security.policy_parts import (
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
from renderer.model.images import MAX_REFERENCE, Term, parse_prefix, spellings
from renderer.model.platform import Team
from renderer.model.view import ClusterView, Tenant
from renderer.output.manifest import Manifest


def policy_name(team: Team) -> str:
    return f"gpuplane-images-{team.name}"


def _term(term: Term, image: str) -> str:
    matched, excluded = term
    test = f"{image}.matches({cel_string(matched)})"
    if excluded is None:
        return test
    return f"({test} && !{image}.matches({cel_string(excluded)}))"


def image_allowed(prefixes: Sequence[str], image: str = "c.image") -> str:
    """CEL: `image` (a container's image, by default of the container `c`) is one that one of
    the prefixes allows (false for none, and for a prefix gpuplane cannot read, which the
    policy stage refuses before anything renders)."""
    terms: list[Term] = []
    for text in prefixes:
        prefix = parse_prefix(text)
        for term in spellings(prefix) if prefix is not None else ():
            if term not in terms:
                terms.append(term)
    if not terms:
        return "false"
    tests = " || ".join(_term(term, image) for term in terms)
    return f"(size({image}) <= {MAX_REFERENCE} && ({tests}))"


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
