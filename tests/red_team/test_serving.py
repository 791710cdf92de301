"""Attacks on the serving layer by a hostile team lead: the vision team (no endpoint, no domain in
the example) declares endpoints and domains in its own file to take another team's traffic,
reach its pods, escape its quota, smuggle text into the outputs, or turn the platform's
per-endpoint objects against another team.

Each attack is refused by a finding on the attacker's file, or its render is evaluated as the
upstream components would: the Gateway and HTTPRoutes by Gateway API v1.6.1's matching
(listener hostnames, `allowedRoutes`, route precedence: apis/v1/gateway_types.go `Hostname`,
apis/v1/httproute_types.go `HTTPRouteRule`), the NetworkPolicies by tests/netpol.py (held to
Kubernetes' e2e truth tables in tests/test_serving_traffic.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from renderer.inputs.changes import changed_lines
from renderer.pipeline import Rendered, load_platform
from tests.conftest import REPO
from tests.netpol import Cluster, Pod, selects
from tests.red_team.diffing import commit_base
from tests.red_team.harness import Attempt, errors, refused_on

VISION = "teams/vision.yaml"
SERVE_LINE = (
    "    - {name: vision-serve, cluster: prod-east, purpose: inference, podSecurity: restricted,\n"
    '       resources: {cpu: "96", memory: 512Gi, storage: 2Ti}}\n'
)
NAME = "kubernetes.io/metadata.name"
ENDPOINT_LABEL = "gpuplane.dev/endpoint"

# The example's endpoints (teams/llm.yaml, recsys.yaml, llm-eval.yaml): host, path, namespace,
# Service, serving port. The victims of every hijack below.
VICTIMS = (
    ("prod-east", "chat.llm.example.com", "/v1", "llm-serve", "chat", 8000),
    ("prod-east", "ranker.recsys.example.com", "/", "recsys-serve", "ranker", 8000),
    (
        "staging-west",
        "candidate.llm-eval.staging.example.com",
        "/",
        "llm-eval-serve",
        "candidate",
        30000,
    ),
)


def _endpoint(name: str = "detect", **fields: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": name,
        "server": "vllm",
        "model": "detector",
        "pool": "l40s-infer",
        "host": f"{name}.vision.example.com",
        "replicas": {"min": 2, "max": 3},
        "slo": {"p95": "500ms"},
    }
    found.update(fields)
    return found


def _serve(attempt: Attempt, endpoints: list[dict[str, Any]], domains: list[str]) -> None:
    """vision-serve declares `endpoints`, and the team `domains`, one field a line."""
    lines = [
        "    - name: vision-serve",
        "      cluster: prod-east",
        "      purpose: inference",
        "      podSecurity: restricted",
        '      resources: {cpu: "96", memory: 512Gi, storage: 2Ti}',
        "      endpoints:",
    ]
    for endpoint in endpoints:
        first = True
        for key, value in endpoint.items():
            lines.append(f"        {'- ' if first else '  '}{key}: {_flow(value)}")
            first = False
    attempt.edit(VISION, SERVE_LINE, "\n".join(lines) + "\n")
    attempt.edit(VISION, "  gpus:\n", f"  domains: {json.dumps(domains)}\n  gpus:\n")


def _flow(value: Any) -> str:
    """A value as YAML on one line: plain where that reads back as the same string, JSON (which
    YAML reads) otherwise."""
    if isinstance(value, str) and re.fullmatch(
        r"[A-Za-z0-9][A-Za-z0-9/._-]*|/[A-Za-z0-9/._-]*", value
    ):
        return value
    return json.dumps(value)


def _line(attempt: Attempt, needle: str, file: str = VISION) -> int:
    lines = attempt.path(file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def _rendered(attempt: Attempt) -> Rendered:
    rendered = attempt.render()
    assert not errors(rendered.diagnostics), [str(d) for d in errors(rendered.diagnostics)]
    return rendered


def _bodies(rendered: Rendered, cluster: str, kind: str) -> list[dict[str, Any]]:
    return [m.body for m in rendered.manifests[cluster] if m.body["kind"] == kind]


def _all(rendered: Rendered, cluster: str) -> list[dict[str, Any]]:
    return [m.body for m in rendered.manifests[cluster]]


def _kind(bodies: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [body for body in bodies if body["kind"] == kind]


# --- a Gateway API evaluator ------------------------------------------------------------------


def _host_matches(pattern: str, host: str) -> bool:
    """Gateway API `Hostname`: exact, or `*.<suffix>` for any name of one or more labels more
    (`*.example.com` matches `a.b.example.com`, not `example.com`), case-insensitively."""
    pattern, host = pattern.lower(), host.lower()
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return pattern == host


def _specificity(pattern: str) -> tuple[int, int]:
    """The most specific listener wins: an exact name, then the longest wildcard."""
    return (0 if pattern.startswith("*.") else 1, len(pattern))


def _prefix_matches(prefix: str, path: str) -> bool:
    elements = [p for p in prefix.split("/") if p]
    return [p for p in path.split("/") if p][: len(elements)] == elements


@dataclass(frozen=True)
class Served:
    namespace: str
    service: str
    port: int


def route_for(bodies: list[dict[str, Any]], host: str, path: str) -> set[Served]:
    """Where the cluster's Gateway sends a request for `host` and `path`: the most specific
    listener matching the host, the routes it admits (namespace selector, route hostnames
    intersecting the listener's), then the longest matching PathPrefix. More than one answer is
    a tie Gateway API breaks by creation time: a hijack as much as a single wrong answer."""
    namespaces = {
        body["metadata"]["name"]: {
            **body["metadata"].get("labels", {}),
            NAME: body["metadata"]["name"],
        }
        for body in _kind(bodies, "Namespace")
    }
    (gateway,) = _kind(bodies, "Gateway")
    listeners = [
        entry for entry in gateway["spec"]["listeners"] if _host_matches(entry["hostname"], host)
    ]
    if not listeners:
        return set()
    best = max(_specificity(entry["hostname"]) for entry in listeners)
    chosen = [entry for entry in listeners if _specificity(entry["hostname"]) == best]
    candidates: list[tuple[int, Served]] = []
    for route in _kind(bodies, "HTTPRoute"):
        ns = route["metadata"]["namespace"]
        if not any(_admits(entry, namespaces.get(ns, {NAME: ns}), route) for entry in chosen):
            continue
        if not any(_host_matches(name, host) for name in route["spec"]["hostnames"]):
            continue
        for rule in route["spec"]["rules"]:
            for match in rule["matches"]:
                prefix = match["path"]["value"]
                if _prefix_matches(prefix, path):
                    for ref in rule["backendRefs"]:
                        candidates.append(
                            (len(prefix.rstrip("/")), Served(ns, ref["name"], ref["port"]))
                        )
    if not candidates:
        return set()
    longest = max(length for length, _ in candidates)
    return {served for length, served in candidates if length == longest}


def _admits(listener: dict[str, Any], ns_labels: dict[str, str], route: dict[str, Any]) -> bool:
    allowed = listener["allowedRoutes"]["namespaces"]
    assert allowed["from"] == "Selector", allowed
    if not selects(allowed["selector"], ns_labels):
        return False
    hostnames = route["spec"]["hostnames"]
    return any(
        _host_matches(listener["hostname"], name) or _host_matches(name, listener["hostname"])
        for name in hostnames
    )


def _victims_keep_their_traffic(rendered: Rendered) -> None:
    for cluster, host, path, ns, service, port in VICTIMS:
        for probe in (path, f"{path.rstrip('/')}/chat/completions", f"{path.rstrip('/')}/x/y"):
            assert route_for(_all(rendered, cluster), host, probe) == {Served(ns, service, port)}, (
                host,
                probe,
            )


# --- 1. traffic hijack ------------------------------------------------------------------------


def test_the_evaluator_routes_the_example_as_declared() -> None:
    """The evaluator itself, on the committed render: each example host and path reaches its
    own Service, and a host nobody declared reaches nothing: the
    evaluator can say no, so the attacks below can fail."""
    for cluster, host, path, ns, service, port in VICTIMS:
        folder = REPO / "rendered" / cluster / "serving"
        docs = [yaml.safe_load(p.read_text()) for p in folder.rglob("*.yaml")]
        docs += [
            yaml.safe_load(p.read_text())
            for p in (REPO / "rendered" / cluster / "tenancy").rglob("namespace-*.yaml")
        ]
        fake = [d for d in docs if d and "kind" in d]
        assert route_for(fake, host, path) == {Served(ns, service, port)}
        assert route_for(fake, f"x{host}", path) == set()
        assert route_for(fake, host.upper(), path) == {Served(ns, service, port)}
    assert not _host_matches("*.llm.example.com", "llm.example.com")
    assert _host_matches("*.example.com", "chat.llm.example.com")
    assert not _host_matches("*.llm.example.com", "xllm.example.com")
    assert _prefix_matches("/v1", "/v1/chat") and not _prefix_matches("/v1", "/v10")


@pytest.mark.parametrize(
    "host",
    [
        "chat.llm.example.com",  # the victim's own host
        "chat2.llm.example.com",  # a free name under the victim's domain
        "llm.example.com",  # the victim's apex
        "xllm.example.com",  # a suffix of the domain, not a name below it
        "ranker.recsys.example.com",
    ],
)
def test_a_host_outside_the_teams_own_domains_is_refused(attempt: Attempt, host: str) -> None:
    _serve(attempt, [_endpoint(host=host)], ["vision.example.com"])
    found = refused_on(attempt.findings(), VISION, "endpoint-host-domain")
    assert found.at.line == _line(attempt, f"host: {host}")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("host", "Chat.LLM.example.com"),  # case
        ("host", "chat.llm.example.com."),  # trailing dot
        ("host", "*.llm.example.com"),  # a wildcard: every name below the victim's domain
        ("domain", "LLM.example.com"),
        ("domain", "llm.example.com."),
        ("domain", "*.example.com"),
    ],
)
def test_a_spelling_of_anothers_name_is_refused(attempt: Attempt, field: str, value: str) -> None:
    """Gateway API compares hostnames case-insensitively and DNS ignores a trailing dot: each
    spelling would be the victim's name to the gateway and another to a string compare."""
    if field == "host":
        _serve(attempt, [_endpoint(host=value)], [value.lower().rstrip(".").lstrip("*.")])
    else:
        _serve(attempt, [_endpoint(host=f"detect.{value.lstrip('*.').rstrip('.')}")], [value])
    found = refused_on(attempt.findings(), VISION, "schema-invalid-value")
    assert "a DNS name" in found.message


def test_a_suffix_domain_that_is_not_a_subdomain_takes_nothing(attempt: Attempt) -> None:
    """`xllm.example.com` ends like `llm.example.com` but lies outside it: accepted, and the
    Gateway (listener `*.xllm.example.com`) sends none of llm's requests there."""
    _serve(attempt, [_endpoint(host="chat.xllm.example.com", path="/")], ["xllm.example.com"])
    rendered = _rendered(attempt)
    _victims_keep_their_traffic(rendered)
    assert route_for(_all(rendered, "prod-east"), "chat.xllm.example.com", "/v1") == {
        Served("vision-serve", "detect", 8000)
    }


@pytest.mark.parametrize(
    "domain", ["llm.example.com", "serving.llm.example.com", "example.com", "staging.example.com"]
)
def test_a_domain_over_or_inside_anothers_never_renders(attempt: Attempt, domain: str) -> None:
    """Equal, inside, or a parent of another team's domain: `team-domain-overlap` fails the
    pull request (for a parent, on the victims' lines: see the next test)."""
    _serve(attempt, [_endpoint(host=f"detect.{domain}")], [domain])
    found = errors(attempt.findings(), "team-domain-overlap")
    assert found and all("vision" in d.message for d in found)


def test_a_parent_domain_is_reported_on_the_attackers_file(attempt: Attempt) -> None:
    """As a pull request: the example committed, the claim of example.com the uncommitted
    change; the finding lands on the claimer's line, each victim's domain a note."""
    commit_base(attempt)
    _serve(attempt, [_endpoint(host="detect.example.com")], ["example.com"])
    found = load_platform(attempt.root, changed=changed_lines(attempt.root)).diagnostics
    refused_on(found, VISION, "team-domain-overlap")
    overlaps = errors(found, "team-domain-overlap")
    assert {d.at.file for d in overlaps} == {VISION}
    assert {at.file for d in overlaps for _, at in d.notes} >= {
        "teams/llm.yaml",
        "teams/recsys.yaml",
    }


def test_two_teams_racing_for_one_new_domain_fail_on_a_file_of_the_pull_request(
    attempt: Attempt,
) -> None:
    _serve(attempt, [_endpoint(host="detect.new.example.com")], ["new.example.com"])
    attempt.edit(
        "teams/speech.yaml",
        "  gpus:\n",
        "  domains: [new.example.com]\n  gpus:\n",
    )
    found = errors(attempt.findings(), "team-domain-overlap")
    assert found and {d.at.file for d in found} <= {VISION, "teams/speech.yaml"}


@pytest.mark.parametrize(
    ("first", "second"),
    [("/", "/v1"), ("/v1", "/v1/chat"), ("/v1", "/v1/"), ("/v1/", "/v1")],
)
def test_overlapping_prefixes_on_one_host_are_refused(
    attempt: Attempt, first: str, second: str
) -> None:
    host = "detect.vision.example.com"
    _serve(
        attempt,
        [_endpoint(host=host, path=first), _endpoint("other", host=host, path=second)],
        ["vision.example.com"],
    )
    found = refused_on(attempt.findings(), VISION, "endpoint-host-duplicate")
    assert found.at.line == _line(attempt, "name: other") + 4  # its host line


def test_disjoint_prefixes_on_one_host_each_keep_their_own(attempt: Attempt) -> None:
    host = "detect.vision.example.com"
    _serve(
        attempt,
        [_endpoint(host=host, path="/v1"), _endpoint("other", host=host, path="/v10")],
        ["vision.example.com"],
    )
    rendered = _rendered(attempt)
    _victims_keep_their_traffic(rendered)
    assert route_for(_all(rendered, "prod-east"), host, "/v1/x") == {
        Served("vision-serve", "detect", 8000)
    }
    assert route_for(_all(rendered, "prod-east"), host, "/v10/x") == {
        Served("vision-serve", "other", 8000)
    }


@pytest.mark.parametrize("path", ["/v1/..", "/v1/../", "/./v1", "/v1/./chat", "/..", "/v1/../v2"])
def test_a_path_with_dot_segments_is_refused_on_its_line(attempt: Attempt, path: str) -> None:
    """Gateway API v1.6.1's HTTPRoute CRD refuses a PathPrefix containing `/./` or `/../` or
    ending in `/.` or `/..` (x-kubernetes-validations on HTTPPathMatch): the route would fail
    Argo CD's sync of the whole serving folder, and Envoy normalizes `/v1/..` to `/`, a prefix
    that overlaps every other path on the host although its elements look disjoint."""
    _serve(attempt, [_endpoint(path=path)], ["vision.example.com"])
    found = refused_on(attempt.findings(), VISION, "schema-invalid-value")
    assert found.at.line == _line(attempt, f"path: {path}")


@pytest.mark.parametrize(
    "host",
    [
        "argocd.vision.example.com",
        "grafana.vision.example.com",
        "login.vision.example.com",
        "detect.svc.cluster.local",
        "kubernetes.default.svc",
    ],
)
def test_a_platform_name_is_refused(attempt: Attempt, host: str) -> None:
    domain = host.split(".", 1)[1]
    _serve(attempt, [_endpoint(host=host)], [domain])
    found = refused_on(attempt.findings(), VISION, "endpoint-host-reserved")
    assert found.at.line == _line(attempt, f"host: {host}")


def test_an_accepted_attacker_takes_no_request_for_another_host(attempt: Attempt) -> None:
    """Everything the schema and the rules let vision declare at once, on the paths that would
    win by precedence (`/`, and `/v1` as llm's): the victims keep every request."""
    _serve(
        attempt,
        [
            _endpoint("chat", host="chat.vision.example.com", path="/"),
            _endpoint("ranker", host="ranker.vision.example.com", path="/v1", server="triton"),
            _endpoint("llm", host="vision.example.com", path="/"),
        ],
        ["vision.example.com"],
    )
    rendered = _rendered(attempt)
    _victims_keep_their_traffic(rendered)
    assert route_for(_all(rendered, "prod-east"), "vision.example.com", "/") == {
        Served("vision-serve", "llm", 8000)
    }


def test_a_hand_written_route_for_anothers_host_attaches_nowhere(attempt: Attempt) -> None:
    """Teams cannot write HTTPRoutes (next class); were one written in vision-serve for llm's
    host, no listener of the Gateway would admit it: the ones matching llm's host admit llm's
    inference namespaces only."""
    _serve(attempt, [_endpoint()], ["vision.example.com"])
    rendered = _rendered(attempt)
    namespaces = {
        body["metadata"]["name"]: {**body["metadata"]["labels"], NAME: body["metadata"]["name"]}
        for body in _bodies(rendered, "prod-east", "Namespace")
    }
    (gateway,) = _bodies(rendered, "prod-east", "Gateway")
    forged = {"spec": {"hostnames": ["chat.llm.example.com"]}}
    for ns in ("vision-serve", "vision-train", "llm-train", "llm-notebooks", "recsys-serve"):
        assert not any(
            _admits(entry, namespaces[ns], forged) for entry in gateway["spec"]["listeners"]
        ), ns
    assert any(
        _admits(entry, namespaces["llm-serve"], forged) for entry in gateway["spec"]["listeners"]
    )


# --- 2. reach ---------------------------------------------------------------------------------


def _cluster(rendered: Rendered, extra: list[Pod]) -> Cluster:
    namespaces = {
        body["metadata"]["name"]: {**body["metadata"]["labels"], NAME: body["metadata"]["name"]}
        for body in _bodies(rendered, "prod-east", "Namespace")
    }
    for ns in ("envoy-gateway-system", "monitoring"):
        namespaces.setdefault(ns, {NAME: ns})
    policies = _bodies(rendered, "prod-east", "NetworkPolicy")
    return Cluster(namespaces, extra, policies)


def _pod(ns: str, name: str, labels: dict[str, str], index: int) -> Pod:
    return Pod(ns, name, labels, f"10.1.0.{index}", {"http": (8000, "TCP")})


PROXY = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
    "gateway.envoyproxy.io/owning-gateway-name": "gpuplane-inference",
    "gateway.envoyproxy.io/owning-gateway-namespace": "envoy-gateway-system",
}
PROMETHEUS = {
    "app.kubernetes.io/name": "prometheus",
    "operator.prometheus.io/name": "kube-prometheus-stack-prometheus",
}


def test_pods_dressed_as_the_gateway_or_prometheus_reach_no_other_team(attempt: Attempt) -> None:
    """vision declares an endpoint named like llm's (`chat`) and labels its pods as Envoy's
    proxies, as Prometheus, and as llm's endpoint: none of them reaches llm's endpoint pods or
    llm's other pods on any port; the real proxy and Prometheus still do, on theirs only."""
    _serve(attempt, [_endpoint("chat", host="chat.vision.example.com")], ["vision.example.com"])
    rendered = _rendered(attempt)
    victim = _pod("llm-serve", "chat-0", {ENDPOINT_LABEL: "chat", "gpuplane.dev/team": "llm"}, 1)
    victim_other = _pod("llm-serve", "batch-0", {"gpuplane.dev/team": "llm"}, 2)
    attackers = [
        _pod("vision-serve", "fake-proxy", PROXY, 10),
        _pod("vision-serve", "fake-prometheus", PROMETHEUS, 11),
        _pod("vision-serve", "chat-0", {ENDPOINT_LABEL: "chat"}, 12),
        _pod("vision-train", "anything", {**PROXY, **PROMETHEUS, ENDPOINT_LABEL: "chat"}, 13),
    ]
    proxy = _pod("envoy-gateway-system", "envoy-0", PROXY, 20)
    prometheus = _pod("monitoring", "prometheus-0", PROMETHEUS, 21)
    vision_chat = attackers[2]
    cluster = _cluster(rendered, [victim, victim_other, *attackers, proxy, prometheus])
    ports = range(1, 65536, 997)
    for src in attackers:
        for dst in (victim, victim_other):
            assert not cluster.reachable_ports(src, dst, [*ports, 8000, 8002]), (src.name, dst.name)
    assert cluster.allows(proxy, victim, 8000) and cluster.allows(prometheus, victim, 8000)
    assert not cluster.reachable_ports(proxy, victim_other, [8000, *ports])
    # vision's own endpoint: the same two peers, and not llm's pods either
    assert cluster.allows(proxy, vision_chat, 8000)
    assert not cluster.allows(victim, vision_chat, 8000)


# --- 3. quota evasion -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "endpoints",
    [
        # teams/vision.yaml: 16 slices of l40s-infer nominal (+16 borrowable)
        [_endpoint(replicas={"min": 2, "max": 16})],  # max + surge: 17
        [_endpoint(replicas={"min": 16, "max": 16})],  # no autoscaler, still a surge replica
        [
            _endpoint(replicas={"min": 2, "max": 7}),
            _endpoint("b", host="b.vision.example.com", replicas={"min": 2, "max": 7}),
        ],  # 8 + 8 fit alone, 16 + ... : two endpoints, 16 in all; a third tips it
        [_endpoint(replicas={"min": 2, "max": 31})],  # fits nominal + borrowing only
    ],
    ids=["max", "fixed", "split", "borrowing"],
)
def test_endpoints_above_the_nominal_quota_are_refused(
    attempt: Attempt, endpoints: list[dict[str, Any]]
) -> None:
    if len(endpoints) == 2:
        endpoints.append(_endpoint("c", host="c.vision.example.com", replicas={"min": 1, "max": 1}))
    _serve(attempt, endpoints, ["vision.example.com"])
    found = refused_on(attempt.findings(), VISION, "endpoint-quota")
    assert "l40s-infer" in found.message


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"gpus": 4, "replicas": {"min": 1, "max": 2}}, "endpoint-shared-gpus"),  # time-sliced
        ({"pool": "h100-train"}, "endpoint-pool"),  # a training pool
        ({"pool": "a100-mig", "profile": "3g.40gb"}, "endpoint-pool"),  # a notebooks pool
        ({"pool": "l4-serve"}, "endpoint-pool"),  # another cluster's pool
        ({"replicas": {"min": 4, "max": 2}}, "endpoint-replicas"),
    ],
)
def test_a_replica_shape_around_the_quota_is_refused(
    attempt: Attempt, fields: dict[str, Any], rule: str
) -> None:
    _serve(attempt, [_endpoint(**fields)], ["vision.example.com"])
    refused_on(attempt.findings(), VISION, rule)


def test_an_endpoint_in_a_namespace_of_another_purpose_is_refused(attempt: Attempt) -> None:
    attempt.edit(
        VISION,
        "    - {name: vision-train, cluster: prod-east, purpose: training}\n",
        "    - name: vision-train\n      cluster: prod-east\n      purpose: training\n"
        "      endpoints:\n        - "
        + "\n          ".join(f"{k}: {_flow(v)}" for k, v in _endpoint().items())
        + "\n",
    )
    attempt.edit(VISION, "  gpus:\n", "  domains: [vision.example.com]\n  gpus:\n")
    refused_on(attempt.findings(), VISION, "endpoint-purpose")


# --- 4. inert text ----------------------------------------------------------------------------

PAYLOADS = (
    "{{ .Values }}",
    "x\ny",
    'a"b',
    "a b",
    "$(id)",
    "a/../b",
    "a{b}",
    "a|b",
    "#x",
    "a\u202eb",
)


@pytest.mark.slow
@pytest.mark.parametrize("field", ["name", "model", "host", "path", "p95", "server", "signal"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_text_in_an_endpoint_field_is_refused_by_the_schema(
    attempt: Attempt, field: str, payload: str
) -> None:
    """Every endpoint field that reaches an argument, a PromQL selector, an alert annotation (a
    Go template), dashboard JSON or YAML is held to a pattern or an enum that admits none of
    these: each payload is refused on the attacker's file, before anything renders."""
    endpoint = _endpoint()
    if field == "p95":
        endpoint["slo"] = {"p95": payload}
    elif field == "signal":
        endpoint["autoscaling"] = {"signal": payload, "target": 1}
    elif field == "path":
        endpoint["path"] = f"/{payload}"
    else:
        endpoint[field] = payload
    _serve(attempt, [endpoint], ["vision.example.com"])
    found = [d for d in errors(attempt.findings()) if d.rule.startswith("schema")]
    assert found and all(d.at.file == VISION for d in found), [str(d) for d in found]


@pytest.mark.parametrize("target", [".nan", ".inf", "-.inf", "1e400", "0", "-1", '"4"'])
def test_an_autoscaling_target_that_is_not_a_number_is_refused(
    attempt: Attempt, target: str
) -> None:
    """KEDA parses `threshold` with strconv.ParseFloat, which takes NaN and Inf: a target that
    is not a finite positive number would hold the autoscaler at min or max whatever the load."""
    endpoint = _endpoint()
    _serve(attempt, [endpoint], ["vision.example.com"])
    attempt.edit(
        VISION,
        '          slo: {"p95": "500ms"}\n',
        '          slo: {"p95": "500ms"}\n'
        f"          autoscaling: {{signal: queue-depth, target: {target}}}\n",
    )
    found = errors(attempt.findings())
    assert found and all(d.at.file == VISION for d in found), [str(d) for d in found]


# --- 5. escalation through the platform's objects ---------------------------------------------

TEAM_ROLES = ("gpuplane-team-owner", "gpuplane-team-member")
PLATFORM_OBJECTS = {
    ("", "endpoints"),
    ("discovery.k8s.io", "endpointslices"),
    ("gateway.networking.k8s.io", "httproutes"),
    ("gateway.networking.k8s.io", "grpcroutes"),
    ("gateway.networking.k8s.io", "gateways"),
    ("gateway.networking.k8s.io", "referencegrants"),
    ("gateway.networking.k8s.io", "backendtlspolicies"),
    ("gateway.envoyproxy.io", "backends"),
    ("gateway.envoyproxy.io", "securitypolicies"),
    ("gateway.envoyproxy.io", "envoyextensionpolicies"),
    ("networking.k8s.io", "networkpolicies"),
    ("networking.k8s.io", "ingresses"),
    ("policy", "poddisruptionbudgets"),
    ("keda.sh", "scaledobjects"),
    ("keda.sh", "triggerauthentications"),
    ("monitoring.coreos.com", "podmonitors"),
    ("monitoring.coreos.com", "servicemonitors"),
    ("monitoring.coreos.com", "prometheusrules"),
    ("inference.networking.k8s.io", "inferencepools"),
}
"""What would move the platform's traffic, reach, budgets, scaling or metrics for another team:
an EndpointSlice (or Endpoints, which the mirroring controller copies into one) pointing a
team's Service at another team's pod IPs, which the proxies may reach on the serving port; a
route, a ReferenceGrant or an Envoy Backend; a PodMonitor relabelling its series as another
team's; a ScaledObject or PDB of its own on another label."""
WRITE = {"create", "update", "patch", "delete", "deletecollection", "*"}


def test_team_roles_write_none_of_the_platforms_serving_objects() -> None:
    """Read the rendered team ClusterRoles as the API server's RBAC would: any rule whose
    groups and resources cover one of the objects, with a write verb, is a grant."""
    folder = REPO / "rendered" / "prod-east" / "tenancy"
    checked = 0
    for role in TEAM_ROLES:
        body = yaml.safe_load((folder / f"clusterrole-{role}.yaml").read_text())
        for rule in body["rules"]:
            if not WRITE & set(rule.get("verbs", [])):
                continue
            for group, resource in PLATFORM_OBJECTS:
                covered = (
                    group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", [])
                ) and (resource in rule.get("resources", []) or "*" in rule.get("resources", []))
                assert not covered, (role, group, resource, rule)
            checked += 1
    assert checked > 5  # the roles do write something: pods, services, deployments ...
