"""Image references as the runtime resolves them (`renderer.model.images`), and the regular
expressions the admission policy is built from, which must allow exactly what `Prefix.allows`
allows.

Expectations come from upstream, not from gpuplane: the cases of distribution/reference's own
tests (`normalize_test.go`: TestValidateReferenceName, TestValidateRemoteName,
TestParseRepositoryInfo, TestNormalizedSplitHostname, TestParseAnyReference), the example in
`ParseDockerRef`'s comment (a tagged and digested reference is pulled by its digest), and
containerd's hosts.go (Docker Hub is fetched from registry-1.docker.io; https on 443 unless the
host names a port). The regular expressions are run with google-re2, the RE2 that cel-python
uses for `matches`, as cel-go in the API server does.
"""

from __future__ import annotations

import itertools

import pytest
import re2
from celpy.adapter import json_to_cel
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.layers.security.images import image_allowed
from renderer.model.images import (
    MAX_REFERENCE,
    Prefix,
    compared_host,
    parse_prefix,
    resolve,
    spellings,
)
from tests.admission_cel import compile_expression

D1 = "sha256:" + "a" * 64
D2 = "sha256:" + "b" * 64
D512 = "sha512:" + "c" * 128

# --- distribution/reference's own cases (normalize_test.go) -------------------------------------

VALID = [
    "docker/docker",
    "library/debian",
    "debian",
    "docker.io/docker/docker",
    "docker.io/library/debian",
    "docker.io/debian",
    "index.docker.io/docker/docker",
    "index.docker.io/library/debian",
    "index.docker.io/debian",
    "127.0.0.1:5000/docker/docker",
    "127.0.0.1:5000/library/debian",
    "127.0.0.1:5000/debian",
    "192.168.0.1",
    "192.168.0.1:80",
    "192.168.0.1:8/debian",
    "192.168.0.2:25000/debian",
    "thisisthesongthatneverendsitgoesonandonandonthisisthesongthatnev",
    "[fc00::1]:5000/docker",
    "[fc00::1]:5000/docker/docker",
    "[fc00:1:2:3:4:5:6:7]:5000/library/debian",
    "docker.io/1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
    "Docker/docker",
    "DOCKER/docker",
    "docker-rules/docker",
    "docker---rules/docker",
    "doc/docker",
    "d/docker",
    "jess/t",
    "dock__er/docker",
]

INVALID = [
    "https://github.com/docker/docker",
    "docker/Docker",
    "-docker",
    "-docker/docker",
    "-docker.io/docker/docker",
    "docker///docker",
    "docker.io/docker/Docker",
    "docker.io/docker///docker",
    "[fc00::1]",
    "[fc00::1]:5000",
    "fc00::1:5000/debian",
    "[fe80::1%eth0]:5000/debian",
    "[2001:db8:3:4::192.0.2.33]:5000/debian",
    "1a3f5e7d9c1b3a5f7e9d1c3b5a7f9e1d3c5b7a9f1e3d5d7c9b1a3f5e7d9c1b3a",
    "docker-/docker",
    "-docker-/docker",
    "____/____",
    "_docker/_docker",
    "dock..er/docker",
    "dock_.er/docker",
    "dock-.er/docker",
    "docker/",
    # upstream also refuses a namespace over 255 characters (NameTotalLengthMax); gpuplane does
    # not count that limit: the kubelet refuses such a name before anything is pulled
]


@pytest.mark.parametrize("name", VALID)
def test_what_distribution_parses_resolves(name: str) -> None:
    assert resolve(name) is not None


@pytest.mark.parametrize("name", INVALID)
def test_what_distribution_refuses_resolves_to_nothing(name: str) -> None:
    assert resolve(name) is None


REPOSITORY_INFO = [
    # (familiar, full, ambiguous or "", domain, remote name): TestParseRepositoryInfo
    ("fooo/bar", "docker.io/fooo/bar", "index.docker.io/fooo/bar", "docker.io", "fooo/bar"),
    ("ubuntu", "docker.io/library/ubuntu", "library/ubuntu", "docker.io", "library/ubuntu"),
    ("nonlibrary/ubuntu", "docker.io/nonlibrary/ubuntu", "", "docker.io", "nonlibrary/ubuntu"),
    ("other/library", "docker.io/other/library", "", "docker.io", "other/library"),
    (
        "127.0.0.1:8000/private/moonbase",
        "127.0.0.1:8000/private/moonbase",
        "",
        "127.0.0.1:8000",
        "private/moonbase",
    ),
    (
        "127.0.0.1:8000/privatebase",
        "127.0.0.1:8000/privatebase",
        "",
        "127.0.0.1:8000",
        "privatebase",
    ),
    (
        "example.com/private/moonbase",
        "example.com/private/moonbase",
        "",
        "example.com",
        "private/moonbase",
    ),
    (
        "example.com:8000/privatebasee",
        "example.com:8000/privatebasee",
        "",
        "example.com:8000",
        "privatebasee",
    ),
    (
        "ubuntu-12.04-base",
        "docker.io/library/ubuntu-12.04-base",
        "index.docker.io/library/ubuntu-12.04-base",
        "docker.io",
        "library/ubuntu-12.04-base",
    ),
    ("foo", "docker.io/library/foo", "docker.io/foo", "docker.io", "library/foo"),
    ("library/foo/bar", "docker.io/library/foo/bar", "", "docker.io", "library/foo/bar"),
    ("store/foo/bar", "docker.io/store/foo/bar", "", "docker.io", "store/foo/bar"),
    ("Foo/bar", "Foo/bar", "", "Foo", "bar"),
    ("FOO/bar", "FOO/bar", "", "FOO", "bar"),
    # TestNormalizedSplitHostname
    ("test.com/foo", "test.com/foo", "", "test.com", "foo"),
    ("test_com/foo", "docker.io/test_com/foo", "", "docker.io", "test_com/foo"),
    ("test-com:8080/foo", "test-com:8080/foo", "", "test-com:8080", "foo"),
    ("xn--n3h.com:18080/foo", "xn--n3h.com:18080/foo", "", "xn--n3h.com:18080", "foo"),
]


@pytest.mark.parametrize(("familiar", "full", "ambiguous", "domain", "remote"), REPOSITORY_INFO)
def test_every_spelling_upstream_equates_resolves_alike(
    familiar: str, full: str, ambiguous: str, domain: str, remote: str
) -> None:
    for name in filter(None, (familiar, full, ambiguous)):
        pulled = resolve(name)
        assert pulled is not None, name
        # gpuplane compares hosts case-blind (DNS is): upstream keeps "Foo" as written
        assert (pulled.host, pulled.repository) == (compared_host(domain), remote), name
        assert pulled.tag == "latest" and pulled.digest is None  # TagNameOnly


def test_a_tagged_and_digested_reference_is_pulled_by_its_digest() -> None:
    # ParseDockerRef's own example, which containerd's CRI PullImage applies to every image
    digest = "sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"
    pulled = resolve(f"docker.io/library/busybox:latest@{digest}")
    assert pulled is not None
    assert (pulled.repository, pulled.tag, pulled.digest) == ("library/busybox", None, digest)


@pytest.mark.parametrize(
    ("name", "host", "repository", "tag"),
    [
        ("redis", "docker.io", "library/redis", "latest"),
        ("redis:latest", "docker.io", "library/redis", "latest"),
        ("dmcgowan/myapp", "docker.io", "dmcgowan/myapp", "latest"),
        ("docker.io/mcgowan/myapp:latest", "docker.io", "mcgowan/myapp", "latest"),
        # containerd fetches docker.io from registry-1.docker.io (hosts.go), so that host is
        # Docker Hub too; only docker.io and index.docker.io get library/ (normalize.go)
        ("registry-1.docker.io/library/redis", "docker.io", "library/redis", "latest"),
        ("registry-1.docker.io/redis", "docker.io", "redis", "latest"),
        ("Docker.io/redis", "docker.io", "redis", "latest"),
        ("docker.io:443/redis", "docker.io", "redis", "latest"),
        # https's default port is 443; a port's leading zeros name the same port
        ("registry.example.com:443/a/b:1", "registry.example.com", "a/b", "1"),
        ("REGISTRY.Example.COM:0443/a/b:1", "registry.example.com", "a/b", "1"),
        ("registry.example.com:8443/a/b:1", "registry.example.com:8443", "a/b", "1"),
    ],
)
def test_hosts_are_compared_as_the_runtime_reaches_them(
    name: str, host: str, repository: str, tag: str
) -> None:
    pulled = resolve(name)
    assert pulled is not None
    assert (pulled.host, pulled.repository, pulled.tag) == (host, repository, tag)


@pytest.mark.parametrize(
    "name",
    [
        "registry.example.com./vision/x",  # a trailing dot is no domain component
        "registry.example.com/vision/X",  # repository names are lower case
        "registry.example.com/vision/x@sha256:" + "A" * 64,  # go-digest wants lower-case hex
        "registry.example.com/vision/x@md5:" + "a" * 32,  # an algorithm go-digest lacks
        "registry.example.com/vision/x:-bad",  # a tag starts with a word character
        "registry.example.com/vision/x:" + "t" * 129,  # a tag is at most 128 characters
        "registry.example.com/" + "x" * MAX_REFERENCE,
    ],
)
def test_names_the_kubelet_refuses_resolve_to_nothing(name: str) -> None:
    assert resolve(name) is None


# --- prefixes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("registry.example.com/vision/", Prefix("registry.example.com", "vision/", "folder")),
        ("registry.example.com:443/", Prefix("registry.example.com", "", "folder")),
        ("index.docker.io/library/", Prefix("docker.io", "library/", "folder")),
        ("registry-1.docker.io/library/", Prefix("docker.io", "library/", "folder")),
        ("docker.io/nginx:1.27", Prefix("docker.io", "library/nginx", "tag", tag="1.27")),
        ("registry-1.docker.io/nginx:1", Prefix("docker.io", "nginx", "tag", tag="1")),
        (
            "registry.example.com/llm/t@" + D1,
            Prefix("registry.example.com", "llm/t", "digest", digest=D1),
        ),
        ("registry.example.com/llm", Prefix("registry.example.com", "llm", "repository")),
    ],
)
def test_prefixes_are_read_as_the_runtime_reads_names(text: str, expected: Prefix) -> None:
    assert parse_prefix(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "registry.example.com/llm/t:1@" + D1,
        "registry.example.com/Vision/",
        "registry.example.com//",
    ],
)
def test_what_is_no_prefix_is_refused(text: str) -> None:
    assert parse_prefix(text) is None


# --- the regular expressions allow exactly what the parse allows ---------------------------------

PREFIXES = [
    "registry.example.com/vision/",
    "registry.example.com/",
    "registry.example.com:8443/team/",
    "localhost:5000/",
    "docker.io/library/",
    "docker.io/",
    "docker.io/pytorch/",
    "index.docker.io/library/",
    "ghcr.io/example/",
    "registry.example.com/llm/trainer:1.4",
    "registry.example.com/llm/trainer:latest",
    "registry.example.com/llm/trainer@" + D1,
    "docker.io/nginx:1.27",
    "docker.io/library/nginx@" + D1,
    "registry-1.docker.io/nginx:1",
    "registry.example.com/llm",
]

HOSTS = [
    "",
    "registry.example.com",
    "REGISTRY.example.COM",
    "registry.example.com:443",
    "registry.example.com:0443",
    "registry.example.com:8443",
    "registry.example.com.",
    "registry.example.com.evil.io",
    "registry-example.com",
    "localhost:5000",
    "LOCALHOST:5000",
    "localhost",
    "docker.io",
    "Docker.IO",
    "docker.io:443",
    "index.docker.io",
    "registry-1.docker.io",
    "ghcr.io",
]

PATHS = [
    "vision/train",
    "vision",
    "vision-evil/x",
    "visionx/y",
    "vision/sub/deep",
    "team/x",
    "llm/trainer",
    "llm/trainer/sub",
    "llm",
    "llmx",
    "library/nginx",
    "library/nginx/sub",
    "nginx",
    "library-evil/x",
    "pytorch/pytorch",
    "example/cli",
    "example-evil/cli",
    "localhost/x",
    "Vision/x",
    "a" * 64,
]

TAILS = [
    "",
    ":1.4",
    ":1.27",
    ":1",
    ":latest",
    ":Latest",
    f":1.4@{D1}",
    f"@{D1}",
    f"@{D2}",
    f":1.27@{D512}",
    ":-x",
]


def _corpus() -> list[str]:
    names = [f"{host}/{path}" if host else path for host, path in itertools.product(HOSTS, PATHS)]
    return [name + tail for name, tail in itertools.product(names, TAILS)]


CORPUS = _corpus()


def _by_spellings(prefix: Prefix, image: str) -> bool:
    if len(image) > MAX_REFERENCE:
        return False
    return any(
        re2.search(matched, image) is not None
        and (excluded is None or re2.search(excluded, image) is None)
        for matched, excluded in spellings(prefix)
    )


@pytest.mark.slow
@pytest.mark.parametrize("text", PREFIXES)
def test_the_expressions_allow_exactly_what_the_prefix_allows(text: str) -> None:
    prefix = parse_prefix(text)
    assert prefix is not None
    differ = [i for i in CORPUS if _by_spellings(prefix, i) != prefix.allows(i)]
    assert differ == [], differ[:10]
    assert any(prefix.allows(i) for i in CORPUS), "the corpus tests nothing this prefix allows"


NAME_CHARACTERS = st.sampled_from([*"abcdeioxy019.-_/:@", "docker.io/", "library/", "sha256:"])


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(PREFIXES),
    st.lists(NAME_CHARACTERS, max_size=12).map("".join),
    st.sampled_from(["", "registry.example.com/", "docker.io/", "ghcr.io/example/", "library/"]),
    st.sampled_from(TAILS),
)
def test_fuzzed_names_get_the_same_answer_both_ways(
    text: str, middle: str, start: str, tail: str
) -> None:
    prefix = parse_prefix(text)
    assert prefix is not None
    image = start + middle + tail
    assert _by_spellings(prefix, image) == prefix.allows(image), image


def test_the_rendered_cel_gives_the_same_answers_as_the_parse() -> None:
    # the expression the security layer renders, evaluated by cel-python as the API server would
    check = compile_expression(image_allowed(PREFIXES[:4], "i"))
    parsed = [parse_prefix(p) for p in PREFIXES[:4]]
    for image in CORPUS[::7]:
        expected = any(p is not None and p.allows(image) for p in parsed)
        assert bool(check.evaluate({"i": json_to_cel(image)})) is expected, image


def test_a_long_name_is_refused_before_any_expression_runs() -> None:
    check = compile_expression(image_allowed(["registry.example.com/"], "i"))
    long = "registry.example.com/" + "a" * MAX_REFERENCE
    assert not check.evaluate({"i": json_to_cel(long)})
    assert check.evaluate({"i": json_to_cel("registry.example.com/a")})


# --- a prefix within an allowlist entry allows nothing the entry does not ----------------------

FOLDERS = [
    "registry.example.com/",
    "registry.example.com/vision/",
    "docker.io/library/",
    "ghcr.io/example/",
]


@pytest.mark.parametrize(("text", "folder_text"), list(itertools.product(PREFIXES, FOLDERS)))
def test_within_means_every_image_it_allows_the_folder_allows(text: str, folder_text: str) -> None:
    prefix, folder = parse_prefix(text), parse_prefix(folder_text)
    assert prefix is not None and folder is not None
    if prefix.within(folder):
        assert [i for i in CORPUS if prefix.allows(i) and not folder.allows(i)] == []
    else:
        assert [i for i in CORPUS if prefix.allows(i) and not folder.allows(i)] or not any(
            prefix.allows(i) for i in CORPUS
        ), "refused though the corpus shows nothing outside"
