"""Policy on endpoints: where an endpoint may run, how it scales, and that it fits its quota at
its maximum. docs/serving-autoscaling.md; the arithmetic is `renderer.model.serving_quota`'s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.model.capacity import serves, usable_quotas
from renderer.model.choices import Workload
from renderer.model.platform import Endpoint, Namespace, Platform, Pool, Team
from renderer.model.serving import SERVERS
from renderer.model.serving_quota import (
    SURGE,
    EndpointQuota,
    endpoint_quotas,
    largest_max,
    namespace_cap,
)
from renderer.model.view import served
from renderer.policy.rule import did_you_mean, error, rule

INFERENCE_WORKLOADS: frozenset[Workload] = frozenset({"online-inference", "batch-inference"})
"""The pool workloads an endpoint may run on: the pools built for serving."""


def _endpoints(p: Platform) -> Iterator[tuple[Team, Namespace, Endpoint]]:
    for s in served(p):
        yield s.team, s.namespace, s.endpoint


@rule("endpoint-purpose", scope="team")
def endpoints_in_inference_namespaces(p: Platform) -> Iterator[Diagnostic]:
    """Endpoints are declared only in inference namespaces.

    An inference namespace is the one whose Pod Security level (`restricted`), quota and
    ClusterQueue are made for serving, and the only one the serving pools admit; an endpoint
    in a training or notebooks namespace would be routed to pods that can never be scheduled
    on a serving pool.

    To satisfy it: move the `endpoints` list to a namespace of the team with `purpose:
    inference`, or declare one (`{name: <team>-serve, cluster: ..., purpose: inference}`).
    """
    for team in p.teams.values():
        for index, ns in enumerate(team.namespaces):
            if ns.endpoints and ns.purpose != "inference":
                serving = [n.name for n in team.namespaces if n.purpose == "inference"]
                where = (
                    f"namespace {', '.join(serving)}"
                    if serving
                    else "a new namespace with purpose: inference"
                )
                yield error(
                    "endpoint-purpose",
                    f"namespace '{ns.name}' has purpose {ns.purpose}: endpoints are served from "
                    "inference namespaces only",
                    team.origin.key("spec", "namespaces", index, "endpoints"),
                    f"move its endpoints to {where}",
                )


def _inference_pools(p: Platform, team: Team, ns: Namespace) -> list[str]:
    """The pools an endpoint of the namespace could run on: inference pools of its cluster
    that it may use and the team has quota on."""
    return sorted(
        {
            pool.name
            for pool, _, _ in usable_quotas(p, team, ns)
            if pool.workload in INFERENCE_WORKLOADS
        }
    )


def _pool_problem(p: Platform, team: Team, ns: Namespace, endpoint: Endpoint) -> str | None:
    """Why the endpoint may not run on its pool (None where it may), profile aside."""
    pool = p.pools.get(endpoint.pool)
    if pool is None:
        return f"pool '{endpoint.pool}' does not exist"
    if pool.cluster != ns.cluster:
        return f"pool '{pool.name}' is on cluster {pool.cluster}, namespace '{ns.name}' on {ns.cluster}"
    if pool.workload not in INFERENCE_WORKLOADS:
        return f"pool '{pool.name}' is a {pool.workload} pool, not an inference pool"
    if not serves(pool, ns, p.queues.get(team.queue)):
        return f"pool '{pool.name}' does not serve namespace '{ns.name}'"
    if not any(q.pool == pool.name for q in team.gpus):
        return f"team '{team.name}' has no quota on pool '{pool.name}'"
    return None


def _profile_problem(team: Team, pool: Pool, endpoint: Endpoint) -> tuple[str, str] | None:
    """The endpoint's profile against the pool (problem, hint); None where it is right."""
    profiles = sorted(q.profile for q in team.gpus if q.pool == pool.name and q.profile)
    if pool.sharing != "mig":
        if endpoint.profile is not None:
            return (
                f"pool '{pool.name}' is not a MIG pool: profile {endpoint.profile} names nothing",
                "remove `profile` from the endpoint",
            )
        return None
    if endpoint.profile in profiles:
        return None
    named = f"profile {endpoint.profile}" if endpoint.profile else "no profile"
    return (
        f"pool '{pool.name}' is a MIG pool and the endpoint names {named}, which team "
        f"'{team.name}' has no quota for",
        f"set `profile:` to one of the team's profiles there: {', '.join(profiles)}",
    )


@rule("endpoint-pool", scope="team")
def endpoint_pools_usable(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint's pool exists, is on its namespace's cluster, is an inference pool the
    namespace may use, and the team has quota there (on a MIG pool, for the endpoint's profile).

    The endpoint's replicas are pods of the namespace, admitted by Kueue against the team's
    quota on the pool: on another cluster's pool, a training pool, or a pool the team has no
    quota on, they would stay Pending forever; on a MIG pool they request one profile's
    instances, which only a quota for that profile admits.

    To satisfy it: set the endpoint's `pool` to an online- or batch-inference pool of the
    namespace's cluster on which the team has a `gpus` quota (the hint names them), and on a
    MIG pool its `profile` to one of the team's profiles there; or add the quota to the
    team's `gpus`.
    """
    for team, ns, endpoint in _endpoints(p):
        if ns.purpose != "inference":
            continue  # endpoint-purpose's: moved to an inference namespace, the pool may do
        problem = _pool_problem(p, team, ns, endpoint)
        if problem is not None:
            choices = _inference_pools(p, team, ns)
            guess = did_you_mean(endpoint.pool, choices)
            hint = (
                f"set `pool:` to one of {', '.join(choices)}"
                if choices
                else f"add a quota on an inference pool of cluster {ns.cluster} to spec.gpus"
            )
            yield error(
                "endpoint-pool",
                f"endpoint '{endpoint.name}': {problem}",
                endpoint.origin.at("pool"),
                f"{guess} {hint}" if guess else hint,
            )
            continue
        pool = p.pools[endpoint.pool]
        profile = _profile_problem(team, pool, endpoint)
        if profile is not None:
            at = endpoint.origin.at("profile") if endpoint.profile else endpoint.origin.at("pool")
            yield error(
                "endpoint-pool", f"endpoint '{endpoint.name}': {profile[0]}", at, profile[1]
            )


@rule("endpoint-replicas", scope="team")
def endpoint_replicas_ordered(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint's `replicas.max` is at least its `replicas.min`.

    The autoscaler scales between the two (KEDA refuses a ScaledObject whose maximum is below
    its minimum), and the quota check sizes the endpoint at its maximum: a maximum below the
    minimum would understate what it holds.

    To satisfy it: raise `replicas.max` to at least `replicas.min` (equal: a fixed size, no
    autoscaler), or lower `replicas.min`.
    """
    for _, _, endpoint in _endpoints(p):
        if endpoint.max_replicas < endpoint.min_replicas:
            yield error(
                "endpoint-replicas",
                f"endpoint '{endpoint.name}': replicas.max {endpoint.max_replicas} is below "
                f"replicas.min {endpoint.min_replicas}",
                endpoint.origin.at("replicas", "max"),
                f"set max to at least {endpoint.min_replicas}: `replicas: "
                f"{{min: {endpoint.min_replicas}, max: {endpoint.min_replicas}}}`",
            )


@rule("endpoint-name-duplicate", scope="team")
def endpoint_names_unique(p: Platform) -> Iterator[Diagnostic]:
    """Endpoint names are unique in their namespace.

    The endpoint's Deployment, Service, route, PodDisruptionBudget, autoscaler and PodMonitor
    are named after it in its namespace: two endpoints of one name would overwrite each other's
    objects.

    To satisfy it: rename one of the two endpoints (`name`), or remove the duplicate.
    """
    for ns in (ns for team in p.teams.values() for ns in team.namespaces):
        seen: dict[str, Endpoint] = {}
        for endpoint in ns.endpoints:
            first = seen.setdefault(endpoint.name, endpoint)
            if first is not endpoint:
                yield error(
                    "endpoint-name-duplicate",
                    f"endpoint '{endpoint.name}' is declared twice in namespace '{ns.name}'",
                    endpoint.origin.at("name"),
                    f"rename it: `name: {endpoint.name}-2`, say",
                    notes=(("first declared here", first.origin.at("name")),),
                )


@rule("endpoint-signal", scope="team")
def endpoint_signal_offered(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint autoscales on a signal its server exposes, and a KV-cache target is a
    fraction (at most 1).

    The autoscaler reads the signal from the server's own metrics (recorded per endpoint by
    the observability layer): Triton exposes no KV cache and no time to first token, so an
    autoscaler on them would read nothing. The KV cache's use is 0 to 1 per replica: a target
    above 1 is never reached, and the endpoint would never scale up.

    To satisfy it: set `autoscaling.signal` to one the server offers (vllm and sglang:
    queue-depth, kv-cache, ttft; triton: queue-depth), and a kv-cache `target` between 0 and 1
    (0.8: scale out when the caches are 80% full).
    """
    for _, _, endpoint in _endpoints(p):
        scaling = endpoint.autoscaling
        offered = SERVERS[endpoint.server].signals
        if scaling.signal not in offered:
            yield error(
                "endpoint-signal",
                f"endpoint '{endpoint.name}': {SERVERS[endpoint.server].title} exposes no "
                f"{scaling.signal} signal",
                scaling.origin.at("signal"),
                f"set `signal:` to one of {', '.join(offered)}",
            )
        elif scaling.signal == "kv-cache" and scaling.target > 1:
            yield error(
                "endpoint-signal",
                f"endpoint '{endpoint.name}': a kv-cache target is a fraction of the cache, "
                f"{scaling.target:g} is above 1",
                scaling.origin.at("target"),
                "set `target:` between 0 and 1, for example 0.8",
            )


@rule("endpoint-shared-gpus", scope="team")
def endpoint_gpus_on_shared_pools(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint on a shared pool (time-slicing, MPS or MIG) asks for one unit per replica.

    On time-slicing and MPS pools the GPU Operator's device plugin runs with
    `failRequestsGreaterThanOne` (layers/gpu/sharing.py): a container asking for two shared
    replicas is refused at admission to the node, since two slices of one GPU are not twice the
    GPU. On a MIG pool, vLLM's and SGLang's tensor parallelism runs NCCL between the devices,
    which MIG instances do not support; a bigger model needs a bigger profile, not two small
    ones. The Deployment template would be rendered, admitted by Kueue, and never run.

    To satisfy it: set `gpus: 1` (and a model that fits one slice or instance), choose a larger
    MIG `profile`, or serve the endpoint from a full-GPU pool.
    """
    for _, _, endpoint in _endpoints(p):
        pool = p.pools.get(endpoint.pool)
        if pool is None or endpoint.gpus <= 1 or pool.sharing == "full-gpu":
            continue
        why = (
            "MIG instances do not run tensor parallelism across each other"
            if pool.sharing == "mig"
            else f"its device plugin refuses more than one {pool.sharing} replica per container"
        )
        alternative = "a larger `profile`" if pool.sharing == "mig" else "a full-GPU inference pool"
        yield error(
            "endpoint-shared-gpus",
            f"endpoint '{endpoint.name}' asks for {endpoint.gpus} units per replica of pool "
            f"'{pool.name}' ({pool.sharing}): {why}",
            endpoint.origin.at("gpus"),
            f"set `gpus: 1`, or serve it with {alternative}",
        )


@rule("endpoint-single-replica", scope="team")
def endpoint_survives_a_drain(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint keeps at least two replicas, or says it accepts a drain that waits.

    Its PodDisruptionBudget holds `replicas.min` replicas available: with `min: 1` and one
    replica, no eviction is ever allowed, so `kubectl drain` of its node (a driver upgrade, a
    node image roll) waits until someone restarts the endpoint by hand. A warning: a staging
    endpoint may accept that.

    To satisfy it: set `replicas.min` to 2 (and `replicas.max` to at least 2), so one replica
    serves while the other moves; the quota must hold the extra replica (rule endpoint-quota).
    """
    for _, _, endpoint in _endpoints(p):
        if endpoint.min_replicas == 1:
            yield Diagnostic(
                "endpoint-single-replica",
                f"endpoint '{endpoint.name}' keeps replicas.min 1: its PodDisruptionBudget "
                "allows no eviction of that replica, so a drain of its node waits for a manual "
                "restart",
                endpoint.origin.at("replicas", "min"),
                hint=(f"set `replicas: {{min: 2, max: {max(2, endpoint.max_replicas)}}}`"),
                severity=Severity.WARNING,
            )


@rule("endpoint-quota", scope="team")
def endpoints_fit_their_quota(p: Platform) -> Iterator[Diagnostic]:
    """An endpoint fits its team's quota at its maximum: `(replicas.max + 1) x gpus` (one
    surge replica for a rolling update), summed over the team's endpoints on the same pool
    (and MIG profile), fits the team's nominal quota there, and the namespace's share fits
    its ResourceQuota's GPU cap.

    Kueue admits each replica's pod as a Workload of its own; an autoscaler that scales past
    the quota leaves the extra replicas Pending exactly at peak traffic, and a rolling update
    at the maximum then cannot start its surge pod and stalls. Borrowed quota does not count:
    Kueue reclaims it, preempting the replicas, as soon as the lending team needs it.

    To satisfy it: lower `replicas.max` of the endpoint (the hint gives the largest that fits
    beside the team's other endpoints), lower its `gpus`, or raise the team's `nominal` on
    the pool in `spec.gpus`.
    """
    groups: dict[tuple[str, str, str], list[EndpointQuota]] = defaultdict(list)
    for found in endpoint_quotas(p):
        if found.endpoint.max_replicas >= found.endpoint.min_replicas:
            groups[found.key].append(found)
    for members in groups.values():
        total = sum(m.at_max for m in members)
        nominal = members[0].quota.nominal
        if total > nominal:
            for member in members:
                yield _over(member, total, nominal, "the team's nominal quota")
            continue
        by_ns: dict[str, list[EndpointQuota]] = defaultdict(list)
        for member in members:
            by_ns[member.namespace.name].append(member)
        for in_ns in by_ns.values():
            first = in_ns[0]
            cap = namespace_cap(p, first.team, first.namespace, first.offer.resource)
            used = sum(m.at_max for m in in_ns)
            if used > cap:
                for member in in_ns:
                    yield _over(member, used, cap, f"namespace {first.namespace.name}'s GPU cap")


def _over(member: EndpointQuota, total: int, limit: int, what: str) -> Diagnostic:
    endpoint = member.endpoint
    others = total - member.at_max
    fits = largest_max(endpoint, limit - others)
    unit = member.offer.unit
    profile = f" ({member.offer.profile})" if member.offer.profile else ""
    message = (
        f"endpoint '{endpoint.name}' at replicas.max {endpoint.max_replicas} holds "
        f"({endpoint.max_replicas} + {SURGE} surge) x {endpoint.gpus} = {member.at_max} "
        f"{unit}s of pool {member.pool.name}{profile}; with the team's other endpoints there "
        f"({others}) that is {total}, over {what} of {limit}"
    )
    if fits >= endpoint.min_replicas:
        hint = f"set `replicas.max` to {fits} (the largest that fits), or raise the quota"
    else:
        hint = (
            f"even replicas.min {endpoint.min_replicas} does not fit: lower `gpus` or the other "
            f"endpoints' maximum, or raise the team's nominal on {member.pool.name} to "
            f"{others + (endpoint.min_replicas + SURGE) * endpoint.gpus}"
        )
    return error(
        "endpoint-quota",
        message,
        endpoint.origin.at("replicas", "max"),
        hint,
        notes=(("the team's quota there", member.quota.origin.location),),
    )
