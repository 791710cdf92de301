"""Policy on secrets: none in any input file, and a secret store only with the operator that
reads it.

These rules change with the token formats of the services teams use and with the secret
managers gpuplane renders stores for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from renderer.findings.diagnostics import Diagnostic, PathKey, SourceMap
from renderer.model.names import EXTERNAL_SECRETS_ADDON
from renderer.model.platform import Platform
from renderer.policy.operators import suggested_release
from renderer.policy.rule import error, rule


@dataclass(frozen=True, slots=True)
class Pattern:
    """A kind of secret, how it is written, and what the finding shows instead of it."""

    name: str
    regex: re.Pattern[str]
    shown: str
    needs: tuple[str, ...]
    """Text one of which every match holds: a cheap test before the expression's search."""


PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "a private key",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"),
        "-----BEGIN … PRIVATE KEY-----",
        ("PRIVATE KEY",),
    ),
    Pattern(
        "an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "AKIA…", ("AKIA", "ASIA")
    ),
    Pattern("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "ghp_…", ("gh",)),
    Pattern(
        "a GitHub fine-grained token",
        re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
        "github_pat_…",
        ("github_pat_",),
    ),
    Pattern("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), "glpat-…", ("glpat-",)),
    Pattern("a Slack token", re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"), "xox…-…", ("xox",)),
    Pattern(
        "a Slack webhook URL",
        re.compile(r"hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+"),
        "hooks.slack.com/services/…",
        ("hooks.slack.com/services/T",),
    ),
    Pattern("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), "AIza…", ("AIza",)),
    Pattern(
        "a JSON Web Token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        "eyJ….eyJ….…",
        ("eyJ",),
    ),
    Pattern(
        "a credential in a URL",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
        "scheme://user:…@",
        ("://",),
    ),
)
"""Token formats whose shape alone says they are credentials."""

ASSIGNMENT = re.compile(
    r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"client[_-]?secret|auth)\s*[:=]\s*[\"']?([^\s\"',;]{6,})"
)
"""`password=…`, `token: …` and the like written into free text."""

PLACEHOLDER = re.compile(r"^(<[^>]*>|\$\{[^}]*\}|\{\{.*\}\}|\*+|x+|\.+|changeme|redacted)$", re.I)
"""Values that stand for a secret without being one."""


def findings_in(text: str) -> list[str]:
    """What `text` holds, each in its redacted form: never the secret itself."""
    found = [f"{p.name} ({p.shown})" for p in PATTERNS if p.regex.search(text)]
    for match in ASSIGNMENT.finditer(text):
        if not PLACEHOLDER.match(match.group(2)):
            found.append(f"a literal {match.group(1).lower()} ({match.group(1)}=…)")
            break
    return found


def _strings(data: Any, path: PathKey = ()) -> Iterator[tuple[PathKey, str, bool]]:
    """Every string of a loaded document, mapping keys included: (path, text, is a key)."""
    if isinstance(data, str):
        yield path, data, False
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*path, key), key, True
            yield from _strings(value, (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _strings(item, (*path, index))


def _texts(data: Any, out: list[str]) -> list[str]:
    """Every string of a loaded document, mapping keys included, in `_strings`' order, without
    the paths `_strings` builds for a finding (they cost the pre-filter 2.5 times its walk)."""
    if isinstance(data, str):
        out.append(data)
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                out.append(key)
            _texts(value, out)
    elif isinstance(data, list):
        for item in data:
            _texts(item, out)
    return out


JOIN = "\n"
"""What `may_hold_secrets` puts between two strings: a character no pattern's match holds
around a string's edge, which `\b` sees as it sees the edge of a string."""


def may_hold_secrets(data: Any) -> bool:
    """Whether any pattern, or a `password=…` assignment, matches the document's strings joined
    by line breaks. A match inside one string is a match in the join: no pattern is anchored
    to a string's start or end, and `\b` sees a line break as it sees the edge of a string.
    So a document whose join matches nothing holds no finding, and only the rest (almost
    none) are searched string by string."""
    joined = JOIN.join(_texts(data, []))
    for pattern in PATTERNS:
        if any(text in joined for text in pattern.needs) and pattern.regex.search(joined):
            return True
    # no shortcut for the assignment: it ignores case, and Unicode folds U+017F into `s`
    return ASSIGNMENT.search(joined) is not None


def _check_document(data: Any, source: SourceMap) -> Iterator[Diagnostic]:
    if not may_hold_secrets(data):
        return
    for path, text, is_key in _strings(data):
        found = findings_in(text)
        if not found:
            continue
        field = ".".join(str(part) for part in path) or "the file"
        yield error(
            "secret-literal",
            f"{field} holds what looks like {', '.join(found)}; secrets never go into a "
            "repository file",
            source.locate_key(path) if is_key else source.locate(path),
            "remove it, revoke it (it is in the Git history now), and keep it in the cluster's "
            "secret store: workloads read it through an ExternalSecret",
        )


@rule("secret-literal", scope="team")
def no_secret_literals(p: Platform) -> Iterator[Diagnostic]:
    """No input file holds a secret: a password, token, API key or private key, in any field.

    Input files are reviewed in pull requests, copied into CI logs and rendered into objects and
    READMEs anyone with read access to the repository sees; a secret in one is leaked the moment
    it is pushed. Every string of every file is checked, descriptions, contacts and egress
    descriptions included, for the shapes of AWS access keys, GitHub, GitLab and Slack tokens,
    Google API keys, JSON Web Tokens, private key blocks, `user:password@` URLs and `password=…` or
    `token: …` written into text. The finding shows what kind of secret it found, never the
    secret.

    To satisfy it: delete the value from the field the finding names (a `description`, `contact`
    or any other string) and revoke it, since the Git history keeps it. Store it in the cluster's
    `spec.secretStore` (Vault) under the team's path and read it with an ExternalSecret. A
    placeholder such as `password=<from-vault>` or `token: ${TOKEN}` is accepted.
    """
    for file in sorted(p.documents):
        data, source = p.documents[file]
        yield from _check_document(data, source)


@rule("secret-store-operator")
def secret_store_has_operator(p: Platform) -> Iterator[Diagnostic]:
    """A cluster that declares a secret store also installs the External Secrets Operator.

    The rendered SecretStores are objects of the operator's CRDs: without
    `addons.externalSecrets` the security layer's sync fails on missing kinds, and teams are
    left with no way to read a secret but to write it into a Secret.

    To satisfy it: add `externalSecrets: {version: 2.9.0}` under `spec.addons` of the cluster file
    (the chart version of charts.external-secrets.io), or remove `spec.secretStore`.
    """
    for cluster in p.clusters.values():
        store = cluster.secret_store
        if store is not None and EXTERNAL_SECRETS_ADDON not in cluster.addons:
            yield error(
                "secret-store-operator",
                f"cluster '{cluster.name}' declares spec.secretStore but not "
                "spec.addons.externalSecrets",
                store.origin.key(),
                f"add `{EXTERNAL_SECRETS_ADDON}: {{version: "
                f"{suggested_release(cluster, EXTERNAL_SECRETS_ADDON)}}}` under spec.addons "
                "(the External Secrets Operator chart), or remove spec.secretStore",
            )
