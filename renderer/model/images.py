"""Image references as the container runtime resolves them, and the prefixes that allow them.

Design: docs/security.md#image-references-as-the-container-runtime-resolves-them
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MAX_REFERENCE = 1024
"""The longest image reference any prefix allows (a repository name is at most 255 characters,
a tag 128 and a sha512 digest 135: 520 in all). The admission policy checks the length before it
runs a regular expression, so the CEL cost of a request stays bounded."""

DOCKER_HUB = "docker.io"
_HUB_EXACT = ("docker.io", "index.docker.io")
"""The spellings of Docker Hub's host that distribution itself reads as `docker.io`, and that
give a single-part path its `library/`."""
_HUB_NAMES = ("docker.io", "index.docker.io", "registry-1.docker.io")
"""Every name of Docker Hub's registry: the two above and the host containerd fetches from."""
_LIBRARY = "library/"

# the grammar of distribution/reference regexp.go, in syntax RE2 and Python's re read alike
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_COMPONENT_NO_DOT = r"[a-z0-9]+(?:(?:_|__|-+)[a-z0-9]+)*"
_PATH = rf"{_COMPONENT}(?:/{_COMPONENT})*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"(?:sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})"
"""go-digest's algorithms (sha256, sha384, sha512) with their exact lengths in lower-case hex:
distribution's own pattern is looser, then `digest.Parse` refuses the rest."""
_IDENTIFIER = r"^[a-f0-9]{64}$"
"""A bare 64-hex string is an image id, never a name (`ParseNormalizedNamed`)."""

_REFERENCE = re.compile(rf"(?:({_DOMAIN})/)?({_PATH})(?::({_TAG}))?(?:@({_DIGEST}))?")
_ANY_SUFFIX = rf"(?::{_TAG})?(?:@{_DIGEST})?$"

PrefixKind = Literal["folder", "repository", "tag", "digest"]
"""What a prefix allows: `folder` every repository under a path ending in `/` (or a whole
registry); `repository` one repository and those under it (`.../trainer`, which the policy
refuses for lack of a boundary but the layer still reads safely); `tag` one tag of one
repository, pulled by that tag; `digest` one digest of one repository, with any tag or none."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """What the runtime pulls: registry host (compared form), repository path, and the tag or
    the digest it asks for (never both)."""

    host: str
    repository: str
    tag: str | None
    digest: str | None


@dataclass(frozen=True, slots=True)
class Prefix:
    """A team's `images` entry or an allowlist entry, read as the runtime would: the host in
    compared form, and `path` the folder (`""` or ending in `/`) or the repository."""

    host: str
    path: str
    kind: PrefixKind
    tag: str | None = None
    digest: str | None = None

    def allows(self, image: str) -> bool:
        """Whether a pod may run `image` under this prefix."""
        pulled = resolve(image)
        if pulled is None or pulled.host != self.host:
            return False
        repository = pulled.repository
        if self.kind == "folder":
            return repository.startswith(self.path)
        if self.kind == "repository":
            return repository == self.path or repository.startswith(self.path + "/")
        if repository != self.path:
            return False
        if self.kind == "tag":
            return pulled.digest is None and pulled.tag == self.tag
        return pulled.digest == self.digest

    def within(self, folder: Prefix) -> bool:
        """Whether every image this prefix allows lies in `folder` (a folder prefix)."""
        if self.host != folder.host:
            return False
        return self.path.startswith(folder.path)

    def __str__(self) -> str:
        text = f"{self.host}/{self.path}"
        if self.kind == "tag":
            return f"{text}:{self.tag}"
        return f"{text}@{self.digest}" if self.kind == "digest" else text


# --- reading a reference ------------------------------------------------------------------------


def _split_domain(name: str) -> tuple[str, str]:
    """distribution's `splitDockerDomain`, before `library/` is added: (domain, remainder)."""
    first, slash, rest = name.partition("/")
    if not slash:
        return DOCKER_HUB, name
    if first == "localhost" or any(c in first for c in ".:") or first.lower() != first:
        return (DOCKER_HUB if first == "index.docker.io" else first), rest
    return DOCKER_HUB, name


def _split_port(host: str) -> tuple[str, str | None]:
    """(name, port) of a `host[:port]`, an IPv6 name in brackets included."""
    if host.startswith("["):
        close = host.find("]")
        if close != -1 and host[close + 1 : close + 2] == ":":
            return host[: close + 1], host[close + 2 :]
        return host, None
    name, colon, port = host.partition(":")
    return name, (port if colon else None)


def compared_host(domain: str) -> str:
    """A registry host as gpuplane compares it: lower case, no `:443`, a port without leading
    zeros, and Docker Hub's names as `docker.io`."""
    name, port = _split_port(domain.lower())
    if port is not None and port.isdigit():
        port = None if int(port) == 443 else str(int(port))
    if name in _HUB_NAMES and port is None:
        name = DOCKER_HUB
    return name if port is None else f"{name}:{port}"


def resolve(reference: str) -> Resolved | None:
    """What the runtime pulls for `reference`, or None where the kubelet refuses the name."""
    if len(reference) > MAX_REFERENCE or re.fullmatch(_IDENTIFIER, reference):
        return None
    domain, remainder = _split_domain(reference)
    if remainder.split(":", 1)[0].lower() != remainder.split(":", 1)[0]:
        return None  # "repository name must be lowercase"
    if domain == DOCKER_HUB and "/" not in remainder:
        remainder = _LIBRARY + remainder
    match = _REFERENCE.fullmatch(f"{domain}/{remainder}")
    if match is None or match.group(1) != domain:
        return None
    _, path, tag, digest = match.groups()
    if digest is None and tag is None:
        tag = "latest"
    return Resolved(compared_host(domain), path, None if digest else tag, digest)


def parse_prefix(text: str) -> Prefix | None:
    """A prefix as written in a team file or gpuplane.yaml, or None when it is no registry
    path, repository, `repository:tag` or `repository@digest`."""
    if text.endswith("/"):
        domain, path = _split_domain(text)
        if not re.fullmatch(_DOMAIN, domain) or (path and not re.fullmatch(_PATH + "/", path)):
            return None
        return Prefix(compared_host(domain), path, "folder")
    if "@" in text and ":" in text.split("@", 1)[0].rsplit("/", 1)[-1]:
        return None  # a tag and a digest: the tag would mean nothing
    pulled = resolve(text)
    if pulled is None:
        return None
    if pulled.digest is not None:
        return Prefix(pulled.host, pulled.repository, "digest", digest=pulled.digest)
    if ":" in text.rsplit("/", 1)[-1]:
        return Prefix(pulled.host, pulled.repository, "tag", tag=pulled.tag)
    return Prefix(pulled.host, pulled.repository, "repository")


# --- every spelling, as regular expressions ------------------------------------------------------

Term = tuple[str, str | None]
"""A regular expression an image must match and, where there is one, one it must not."""


def _literal(text: str) -> str:
    """`text` matched as written: the characters of names, tags and digests that mean something
    in a regular expression are escaped (`.`, and an IPv6 host's brackets)."""
    return re.sub(r"([.\[\]])", r"\\\1", text)


def _any_case(text: str) -> str:
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else _literal(c) for c in text)


def _host_pattern(host: str) -> str:
    """Every way to write `host` (compared form) as a registry the runtime reaches."""
    name, port = _split_port(host)
    port_part = f":0*{port}" if port else "(?::0*443)?"
    names = _HUB_NAMES if name == DOCKER_HUB and not port else (name,)
    return "(?:" + "|".join(_any_case(n) for n in names) + ")" + port_part


_HUB_EXACT_PATTERN = "(?:" + "|".join(_literal(n) for n in _HUB_EXACT) + ")"


def _exact(host: str, repository: str, tail: str) -> list[Term]:
    """Terms for one repository followed by `tail` (its tag or digest part, anchored)."""
    terms: list[Term] = []
    if host != DOCKER_HUB:
        return [(f"^{_host_pattern(host)}/{_literal(repository)}{tail}", None)]
    if "/" not in repository:  # only Docker Hub spellings that add no library/ reach it
        single = f"^{_HUB_EXACT_PATTERN}/[^/]*$"
        return [(f"^{_host_pattern(host)}/{_literal(repository)}{tail}", single)]
    terms.append((f"^{_host_pattern(host)}/{_literal(repository)}{tail}", None))
    first, _, rest = repository.partition("/")
    if first + "/" == _LIBRARY and "/" not in rest:
        terms.append((f"^{_HUB_EXACT_PATTERN}/{_literal(rest)}{tail}", None))
        terms.append((f"^{_literal(rest)}{tail}", _IDENTIFIER))
    if "." not in first and first != "localhost":
        terms.append((f"^{_literal(repository)}{tail}", None))
    return terms


def _folder(host: str, path: str) -> list[Term]:
    """Terms for every repository under `path` (`""`: the whole registry)."""
    below = f"{_literal(path)}{_PATH}{_ANY_SUFFIX}"
    terms: list[Term] = [(f"^{_host_pattern(host)}/{below}", None)]
    if host != DOCKER_HUB:
        return terms
    if path in ("", _LIBRARY):
        if path:
            terms.append((f"^{_HUB_EXACT_PATTERN}/{_COMPONENT}{_ANY_SUFFIX}", None))
        terms.append((f"^{_COMPONENT}{_ANY_SUFFIX}", _IDENTIFIER))
    first = path.split("/", 1)[0]
    if not path:
        terms.append((f"^{_COMPONENT_NO_DOT}(?:/{_COMPONENT})+{_ANY_SUFFIX}", "^localhost/"))
    elif "." not in first and first != "localhost":
        terms.append((f"^{below}", None))
    return terms


def spellings(prefix: Prefix) -> list[Term]:
    """Regular expressions (RE2 syntax, which Python's re reads the same way) that an image
    reference matches exactly when `prefix.allows` it, the length bound aside."""
    if prefix.kind == "folder":
        return _folder(prefix.host, prefix.path)
    if prefix.kind == "repository":
        return _exact(prefix.host, prefix.path, _ANY_SUFFIX) + _folder(
            prefix.host, prefix.path + "/"
        )
    if prefix.kind == "tag":
        tag = _literal(prefix.tag or "")
        tail = "(?::latest)?$" if prefix.tag == "latest" else f":{tag}$"
        return _exact(prefix.host, prefix.path, tail)
    return _exact(prefix.host, prefix.path, f"(?::{_TAG})?@{prefix.digest}$")
