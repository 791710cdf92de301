"""Policy on what a team file may ask for: egress, image prefixes and quota caps.

A team lead edits the team's own file and a reviewer approves it; these rules refuse the
requests that reach beyond the team's namespaces however harmless the line looks: egress to
the internet, to a cloud metadata service or to most of the private address space, image
prefixes that match other registries, and namespaces without CPU, memory or storage caps.
The cluster's own object store egress is held to the same network rules.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Sequence

from renderer.findings.diagnostics import Diagnostic
from renderer.model.platform import EgressRule, Platform, Team
from renderer.policy.rule import error, rule

# --- egress ------------------------------------------------------------------------------------

MIN_PREFIX = {4: 16, 6: 48}
"""The widest network a rule may name: an IPv4 /16 (65,536 addresses, a data centre's service
range) or an IPv6 /48 (one site). Anything wider spans a large part of the private address space,
where the cluster's own nodes, pods, API server and other tenants' services live."""

MAX_EGRESS_RULES = 32
"""The most egress rules one team (or one cluster's object store) declares: every rule is a
NetworkPolicy entry a reviewer must understand, and a few hundred of them are a list nobody reads
and a policy every node's CNI must program."""

MAX_PORTS_PER_RULE = 16
"""The most ports one rule opens: a rule that lists thousands of ports opens the host."""

_METADATA = (
    "the cloud metadata service (AWS, GCP, Azure, Oracle, OpenStack and DigitalOcean answer on "
    "169.254.169.254 with the node's credentials)"
)

SPECIAL_NETWORKS: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "the unspecified 'this network' block"),
    ("127.0.0.0/8", "loopback: the node or pod itself"),
    ("169.254.0.0/16", f"link-local, home of {_METADATA}"),
    ("100.100.100.200/32", "Alibaba Cloud's metadata service"),
    ("168.63.129.16/32", "Azure's WireServer, the host agent endpoint of every Azure VM"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved space and the broadcast address"),
    ("::/128", "the unspecified IPv6 address"),
    ("::1/128", "IPv6 loopback"),
    ("::ffff:0:0/96", "IPv4-mapped IPv6 addresses, which reach any IPv4 address"),
    ("64:ff9b::/96", "the NAT64 prefix (RFC 6052), whose addresses reach any IPv4 address"),
    ("fe80::/10", "IPv6 link-local"),
    ("fd00:ec2::254/128", "AWS's IPv6 metadata service"),
    ("fd00:ec2::23/128", "the EKS Pod Identity Agent's IPv6 address, which hands out credentials"),
    ("ff00::/8", "IPv6 multicast"),
)
"""Networks no egress rule may touch, with what lives there. They stay refused inside any
network gpuplane.yaml's `allowlists.egress` allows: the allowlist says where teams may go, and
never reopens a metadata service (docs/security.md)."""

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _egress_lists(p: Platform) -> Iterator[tuple[str, tuple[EgressRule, ...], str]]:
    """Each list of egress rules: who declares it, the rules, and the field's name."""
    for name in sorted(p.teams):
        yield f"team '{name}'", p.teams[name].egress, "spec.egress"
    for name in sorted(p.clusters):
        rules = p.clusters[name].object_store_egress
        yield f"cluster '{name}'", rules, "spec.storage.objectStoreEgress"


def _network(cidr: str) -> _Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def _too_wide(net: _Network) -> bool:
    return net.prefixlen < MIN_PREFIX[net.version]


def _special(net: _Network) -> tuple[_Network, str] | None:
    """The first special network `net` overlaps, with what lives there."""
    for cidr, what in SPECIAL_NETWORKS:
        special = ipaddress.ip_network(cidr)
        if special.version == net.version and net.overlaps(special):
            return special, what
    return None


def refused_elsewhere(cidr: str) -> bool:
    """Whether another egress rule already refuses `cidr` (unreadable, wider than allowed,
    special, or with host bits): rules that come after those say nothing more about it."""
    net = _network(cidr)
    return net is None or str(net) != cidr or _too_wide(net) or _special(net) is not None


@rule("egress-too-wide", scope="team")
def egress_not_too_wide(p: Platform) -> Iterator[Diagnostic]:
    """An egress rule may not name the internet or a network wider than /16 (IPv6: /48).

    `0.0.0.0/0` lets the team's pods reach every address, the internet included: anything a pod
    reads can leave the cluster. Networks wider than an IPv4 /16 (65,536 addresses) or an IPv6
    /48 cover a large part of the private address space, where the cluster's nodes, API server
    and other teams' services live, so the rule stops being a statement of what the team needs.

    To satisfy it: in the team's `spec.egress` (or the cluster's
    `spec.storage.objectStoreEgress`), set `cidr` to the network of the service the pods reach,
    with a prefix length of /16 or longer (IPv6: /48 or longer), e.g. `10.20.0.0/16` or
    `10.20.4.0/24`; name several services in several rules.
    """
    for who, rules, field in _egress_lists(p):
        for index, egress in enumerate(rules):
            net = _network(egress.cidr)
            if net is None or not _too_wide(net):
                continue
            what = (
                "every address, the internet included"
                if net.prefixlen == 0
                else f"{net.num_addresses:,} addresses"
            )
            yield error(
                "egress-too-wide",
                f"{who} opens egress to {egress.cidr} ({what}); "
                f"the widest allowed is /{MIN_PREFIX[net.version]}",
                egress.origin.at("cidr"),
                f"name the service's own network in {field}[{index}].cidr, "
                f"/{MIN_PREFIX[net.version]} or narrower",
            )


@rule("egress-special-address", scope="team")
def egress_not_special(p: Platform) -> Iterator[Diagnostic]:
    """An egress rule may not reach link-local, metadata, loopback or multicast addresses.

    169.254.169.254 is the cloud metadata service: a pod that reaches it can read the node's
    cloud credentials and act as the node. The rest of 169.254.0.0/16 and fe80::/10 are
    link-local, loopback is the node or the pod itself, and multicast and reserved space are
    never a service a team needs. Alibaba Cloud (100.100.100.200), Azure's WireServer
    (168.63.129.16) and AWS's IPv6 metadata and EKS Pod Identity addresses (fd00:ec2::254,
    fd00:ec2::23) are refused the same way, and so are IPv6 forms that reach any IPv4 address
    (IPv4-mapped, NAT64). A network gpuplane.yaml's `spec.allowlists.egress` allows does not
    reopen any of them.

    To satisfy it: remove the rule from the team's `spec.egress` (or the cluster's
    `spec.storage.objectStoreEgress`), or set its `cidr` to a network outside 0.0.0.0/8,
    127.0.0.0/8, 169.254.0.0/16, 100.100.100.200, 168.63.129.16, 224.0.0.0/3, ::1, fe80::/10,
    fd00:ec2::254, fd00:ec2::23, ::ffff:0:0/96, 64:ff9b::/96 and ff00::/8. Workload identity
    (IRSA, EKS Pod Identity through its agent's own policy, GKE or Azure workload identity)
    gives pods cloud credentials without the metadata service.
    """
    for who, rules, field in _egress_lists(p):
        for index, egress in enumerate(rules):
            net = _network(egress.cidr)
            if net is None or _too_wide(net):
                continue  # egress-too-wide says what to do first
            found = _special(net)
            if found is not None:
                special, what = found
                yield error(
                    "egress-special-address",
                    f"{who} opens egress to {egress.cidr}, which reaches {special} ({what})",
                    egress.origin.at("cidr"),
                    f"remove {field}[{index}], or name a network outside {special}",
                )


@rule("egress-host-bits", scope="team")
def egress_is_a_network(p: Platform) -> Iterator[Diagnostic]:
    """An egress CIDR must be a network address: no bits set after the prefix length.

    `10.0.0.1/8` reads like one host but means all of 10.0.0.0/8 to Kubernetes, which masks the
    address with the prefix. Whoever wrote it meant either the host (`10.0.0.1/32`) or the
    network (`10.0.0.0/8`); the reviewer cannot tell which, and the wider reading is the one that
    gets applied.

    To satisfy it: in the team's `spec.egress` (or the cluster's
    `spec.storage.objectStoreEgress`, or gpuplane.yaml's `spec.allowlists.egress`), write `cidr`
    as the network it means, e.g. `10.0.0.0/8` for `10.0.0.1/8`, or the single host with /32
    (IPv6: /128).
    """
    allowed = p.repository.allowed_egress if p.repository is not None else ()
    entries = [
        *(
            (who, index, egress.cidr, egress.origin, field)
            for who, rules, field in _egress_lists(p)
            for index, egress in enumerate(rules)
        ),
        *(
            ("gpuplane.yaml", index, entry.cidr, entry.origin, "spec.allowlists.egress")
            for index, entry in enumerate(allowed)
        ),
    ]
    for who, index, cidr, origin, field in entries:
        net = _network(cidr)
        if net is None or str(net) == cidr:
            continue
        host = f"{cidr.split('/')[0]}/{net.max_prefixlen}"
        yield error(
            "egress-host-bits",
            f"{who} writes egress {cidr}, which has host bits set: it means the "
            f"network {net} ({net.num_addresses:,} addresses)",
            origin.at("cidr"),
            f"write {field}[{index}].cidr as {net} for the network, or {host} for the host",
        )


@rule("egress-too-many-rules", scope="team")
def egress_bounded(p: Platform) -> Iterator[Diagnostic]:
    """A team declares at most 32 egress rules, each with at most 16 ports.

    Every rule becomes a NetworkPolicy entry that each node's CNI programs and that a reviewer
    must be able to read; hundreds of rules, or a rule that lists thousands of ports, hide one
    wide opening among many narrow ones and open the host in all but name.

    To satisfy it: merge rules of the team's `spec.egress` (or the cluster's
    `spec.storage.objectStoreEgress`) down to 32 or fewer, each listing 16 `ports` or fewer:
    neighbouring services usually share a network, and a service rarely needs more than a few
    ports.
    """
    for who, rules, field in _egress_lists(p):
        if len(rules) > MAX_EGRESS_RULES:
            yield error(
                "egress-too-many-rules",
                f"{who} declares {len(rules)} egress rules; at most {MAX_EGRESS_RULES} are allowed",
                rules[MAX_EGRESS_RULES].origin.location,
                f"merge the rules of {field} into {MAX_EGRESS_RULES} or fewer",
            )
        for index, egress in enumerate(rules):
            if len(egress.ports) > MAX_PORTS_PER_RULE:
                yield error(
                    "egress-too-many-rules",
                    f"{who}'s egress rule {egress.cidr} opens {len(egress.ports)} ports; "
                    f"at most {MAX_PORTS_PER_RULE} are allowed",
                    egress.origin.at("ports"),
                    f"list only the ports the service listens on in {field}[{index}].ports",
                )


@rule("egress-duplicate", scope="team")
def egress_not_duplicated(p: Platform) -> Iterator[Diagnostic]:
    """An egress rule may not repeat what an earlier rule already allows.

    A rule whose network lies inside an earlier rule's network, with the same protocol and no
    port the earlier one lacks, changes nothing but makes the list longer to review, and a later
    edit to one of the two leaves the other quietly in force.

    To satisfy it: remove the repeated rule from the team's `spec.egress` (or the cluster's
    `spec.storage.objectStoreEgress`), or merge its `ports` and `description` into the earlier
    rule that covers it.
    """
    for who, rules, field in _egress_lists(p):
        nets = [_network(r.cidr) for r in rules]
        for later, egress in enumerate(rules):
            net = nets[later]
            if net is None:
                continue
            for earlier in range(later):
                other, first = nets[earlier], rules[earlier]
                if (
                    other is not None
                    and other.version == net.version
                    and first.protocol == egress.protocol
                    and net.subnet_of(other)  # type: ignore[arg-type]
                    and set(egress.ports) <= set(first.ports)
                ):
                    yield error(
                        "egress-duplicate",
                        f"{who}'s egress rule {egress.cidr} {egress.protocol} "
                        f"{_ports(egress.ports)} is already allowed by rule {earlier} "
                        f"({first.cidr} {first.protocol} {_ports(first.ports)})",
                        egress.origin.location,
                        f"remove {field}[{later}]",
                    )
                    break


def _ports(ports: Sequence[int]) -> str:
    return ", ".join(str(port) for port in ports)


# --- image prefixes ----------------------------------------------------------------------------

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
"""One path component of a repository name (the OCI distribution spec's grammar)."""
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")
_WILDCARDS = frozenset("*?[]{}")

PUBLIC_REGISTRIES = frozenset(
    {
        "docker.io",
        "index.docker.io",
        "registry-1.docker.io",
        "registry.hub.docker.com",
        "ghcr.io",
        "quay.io",
        "gcr.io",
        "public.ecr.aws",
        "registry.gitlab.com",
        "nvcr.io",
    }
)
"""Registries where anyone can publish under a name of their own: their root is no boundary."""


def _public(host: str) -> bool:
    name = host.split(":")[0]
    return name in PUBLIC_REGISTRIES or name.endswith((".gcr.io", "docker.pkg.dev"))


def image_problem(prefix: str) -> tuple[str, str, str] | None:
    """(rule, what is wrong, the fix) for one image prefix, or None when it is sound."""
    host, slash, path = prefix.partition("/")
    if not slash:
        return (
            "image-prefix-boundary",
            f"is a bare host: it also matches hosts that start with it, such as {prefix}.evil.io/",
            f"{prefix}/",
        )
    if any(char in _WILDCARDS for char in prefix):
        fixed = prefix.split("*")[0].rstrip("?[]{}")
        boundary = fixed if fixed.endswith("/") else fixed.rsplit("/", 1)[0] + "/"
        return (
            "image-prefix-invalid",
            "has a wildcard: prefixes are compared literally, never as patterns",
            boundary,
        )
    if "@" in path:
        repository, _, digest = path.partition("@")
        if _components_ok(repository) and _DIGEST.fullmatch(digest):
            return None
        return (
            "image-prefix-invalid",
            "is not a repository@sha256:<64 hex digits> reference",
            f"{host}/{repository.lower()}@sha256:<digest>",
        )
    last = path.rsplit("/", 1)[-1]
    if path and not path.endswith("/") and ":" in last:
        repository, _, tag = path.rpartition(":")
        if _components_ok(repository) and _TAG.fullmatch(tag):
            return None
        return ("image-prefix-invalid", "is not a repository:tag reference", f"{host}/")
    if path and not path.endswith("/"):
        return (
            "image-prefix-boundary",
            "does not end at a path boundary: it also matches repositories that start with it, "
            f"such as {prefix}-evil/",
            f"{prefix}/",
        )
    if path and not _components_ok(path[:-1]):
        return (
            "image-prefix-invalid",
            "is not a repository path: each part is lower-case letters and digits, joined by "
            "'.', '_', '__' or '-'",
            f"{host}/{path.lower()}",
        )
    if not path and _public(host):
        return (
            "image-prefix-public-root",
            "is the root of a public registry, where anyone can publish an image",
            f"{prefix}<organization>/",
        )
    return None


def _components_ok(repository: str) -> bool:
    return bool(repository) and all(_COMPONENT.fullmatch(c) for c in repository.split("/"))


def _image_findings(p: Platform, rule_id: str) -> Iterator[Diagnostic]:
    for name in sorted(p.teams):
        team = p.teams[name]
        for index, prefix in enumerate(team.images):
            problem = image_problem(prefix)
            if problem is None or problem[0] != rule_id:
                continue
            _, what, fixed = problem
            yield error(
                rule_id,
                f"team '{name}' allows images from '{prefix}', which {what}",
                team.origin.at("spec", "images", index),
                f"write it as '{fixed}'",
            )


@rule("image-prefix-boundary", scope="team")
def image_prefix_at_boundary(p: Platform) -> Iterator[Diagnostic]:
    """An image prefix must end at a registry or path boundary: with `/`, a tag or a digest.

    Images are allowed by comparing the start of the reference, so `registry.example.com` also
    allows `registry.example.com.evil.io/miner`, and `registry.example.com/llm` allows
    `registry.example.com/llm-evil/miner`: repositories someone else controls.

    To satisfy it: end each entry of the team's `spec.images` with `/`
    (`registry.example.com/llm/`), or write one full image reference with its tag
    (`registry.example.com/llm/trainer:1.4`) or digest (`...@sha256:<64 hex digits>`).
    """
    yield from _image_findings(p, "image-prefix-boundary")


@rule("image-prefix-invalid", scope="team")
def image_prefix_is_literal(p: Platform) -> Iterator[Diagnostic]:
    """An image prefix must be a literal registry path: no wildcards, no upper case.

    Prefixes are compared as text, so `registry.example.com/*/` matches only a repository
    literally named `*`, and a path with upper-case letters matches no image at all (repository
    names are lower case). Either way the line does not say what the admission policy enforces.

    To satisfy it: write each entry of the team's `spec.images` as a registry host, `/`, and
    repository path parts of lower-case letters and digits joined by `.`, `_`, `__` or `-`,
    ending in `/` (`registry.example.com/vision/`), or as a full `repository:tag` or
    `repository@sha256:<digest>` reference.
    """
    yield from _image_findings(p, "image-prefix-invalid")


@rule("image-prefix-public-root", scope="team")
def image_prefix_not_public_root(p: Platform) -> Iterator[Diagnostic]:
    """An image prefix on a public registry must name an organization, not the registry's root.

    On Docker Hub, GitHub's, Quay's, Google's, GitLab's, NVIDIA's or AWS's public registry
    anyone can publish under a name of their own, so `docker.io/` or `ghcr.io/` allows every
    image on the internet. Docker Hub images are usually written without their host (`nginx`);
    the admission policy compares what the pod writes, so pods name them in full
    (`docker.io/library/nginx:1.27`).

    To satisfy it: in the team's `spec.images`, name the organization whose images the team
    runs (`ghcr.io/example-org/`, `docker.io/pytorch/`), or, better, a path of the team's own
    mirror (`registry.example.com/mirror/docker.io/pytorch/`).
    """
    yield from _image_findings(p, "image-prefix-public-root")


# --- quota caps --------------------------------------------------------------------------------

CAPPED = ("cpu", "memory", "storage")
"""The `resources` keys every team namespace's ResourceQuota must carry."""


def _team_clusters(p: Platform, team: Team) -> list[str]:
    return sorted({ns.cluster for ns in team.namespaces if ns.cluster in p.clusters})


@rule("quota-caps-missing", scope="team")
def quota_caps_present(p: Platform) -> Iterator[Diagnostic]:
    """Every team namespace's ResourceQuota carries CPU, memory and storage caps.

    GPUs are capped by the queue, but a namespace without a CPU or memory cap lets one team's
    jobs take every node's CPU and memory, GPU nodes included, and one without a storage cap
    lets it claim the shared file system. A cap comes from the team's `spec.resources` or, key by
    key, from the cluster's `spec.teamDefaults.resources`, so removing `resources:` from a team
    file falls back to the cluster's caps instead of dropping them.

    To satisfy it: set `cpu`, `memory` and `storage` under the team's `spec.resources`
    (e.g. `cpu: "256"`, `memory: 2Ti`, `storage: 10Ti`), or give the cluster defaults for them
    under `spec.teamDefaults.resources` in the cluster file.
    """
    for name in sorted(p.teams):
        team = p.teams[name]
        for cluster_name in _team_clusters(p, team):
            defaults = p.clusters[cluster_name].team_default_resources
            missing = [k for k in CAPPED if k not in team.resources and k not in defaults]
            if not missing:
                continue
            keys = ", ".join(missing)
            yield error(
                "quota-caps-missing",
                f"team '{name}' has no {keys} cap on cluster '{cluster_name}', and the cluster "
                "sets no default for it",
                team.origin.key("spec", "resources"),
                "set " + ", ".join(f"spec.resources.{k}" for k in missing) + " in the team file",
            )
